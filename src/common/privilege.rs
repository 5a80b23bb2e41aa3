//! Running with raised privileges: a program with file capabilities
//! (`setcap cap_perfmon+ep cxlstat`, as cxlstat's README advises); a
//! set-user-ID or set-group-ID one is refused ([`refuse_set_id`]). The
//! caller is then not trusted with what the privileges reach:
//! options that let them choose the files behind what is opened are refused,
//! and capabilities are dropped once they have served, or kept by a thread
//! that needs a few later, out of its effective set but around those calls
//! ([`Kept`]; iostat-rs's latency thread, for CPUs that come online).

use std::io;
use std::path::Path;

/// True when the kernel started this program with raised privileges
/// (`AT_SECURE`: set-user-ID, set-group-ID or file capabilities).
/// Inlined: every run asks, and its code stays with the caller's.
#[inline]
pub fn is_secure() -> bool {
    // SAFETY: getauxval has no preconditions.
    unsafe { libc::getauxval(libc::AT_SECURE) != 0 }
}

/// Refuses a set-user-ID or set-group-ID run: one whose effective user or
/// group is not the caller's. Capabilities are dropped once they have
/// served, but the identity would stay: every file the program opened
/// (`trace report --topology /etc/shadow`, `-f DIR`) and the command
/// cxlstat starts after `--` would be the owner's (root's) for any user.
/// File capabilities (`setcap`) raise what the setup needs and leave the
/// caller's identity; root itself (the same real and effective user) is
/// not refused. Out of line: only a run with raised privileges calls it.
#[cold]
#[inline(never)]
pub fn refuse_set_id() -> Result<(), String> {
    let (mut ruid, mut euid, mut suid) = (0, 0, 0);
    let (mut rgid, mut egid, mut sgid) = (0, 0, 0);
    // SAFETY: each call writes the three IDs through valid pointers.
    let read = unsafe {
        libc::getresuid(&mut ruid, &mut euid, &mut suid) == 0
            && libc::getresgid(&mut rgid, &mut egid, &mut sgid) == 0
    };
    if !read {
        return Err(format!(
            "cannot read this process's user and group IDs: {}",
            io::Error::last_os_error()
        ));
    }
    if ruid == euid && rgid == egid {
        return Ok(());
    }
    Err(format!(
        "installed set-user-ID or set-group-ID (run by user {ruid}, group {rgid}, as user \
         {euid}, group {egid}): refused, as the files it opens and any command it starts \
         would be that user's and group's; remove those bits (chmod u-s,g-s) and give it \
         file capabilities instead (setcap, as its manual says)"
    ))
}

/// An option that a caller with fewer privileges than the program must not
/// be given, and why.
pub struct Guarded<'a> {
    /// The option as typed, e.g. `--sysroot`.
    pub option: &'a str,
    /// Whether it was given.
    pub given: bool,
    /// What it would let the caller do, e.g. "reads kernel files from a directory the caller chooses".
    pub why: &'a str,
}

/// Fails with one line naming the first given option of `options` when
/// `secure` (see [`is_secure`]).
pub fn refuse_when_secure(secure: bool, options: &[Guarded]) -> Result<(), String> {
    match options.iter().find(|g| secure && g.given) {
        Some(g) => Err(format!(
            "{}: refused while running with raised privileges (file capabilities): it {}; \
             run it without them, as root, or without the option",
            g.option, g.why
        )),
        None => Ok(()),
    }
}

/// Refuses, when the program runs with raised privileges, `--svg` and
/// `--textfile`, as `--record` is refused: each writes a file the caller
/// chooses (with a set-user-ID root install, as root).
pub fn refuse_chosen_outputs(svg: Option<&Path>, textfile: Option<&Path>) -> Result<(), String> {
    let why = "writes a file the caller chooses";
    refuse_when_secure(
        is_secure(),
        &[
            Guarded {
                option: "--svg",
                given: svg.is_some(),
                why,
            },
            Guarded {
                option: "--textfile",
                given: textfile.is_some(),
                why,
            },
        ],
    )
}

/// Makes the process non-dumpable (`PR_SET_DUMPABLE` 0): no core dump, and
/// no `ptrace(2)`, `pidfd_getfd(2)` or `/proc/PID/fd` access by the caller.
///
/// The kernel makes a set-user-ID process non-dumpable at `exec`, but not
/// one raised by file capabilities: those are kept from the caller only
/// while the process holds more capabilities than the caller
/// (`cap_ptrace_access_check`). Once [`drop_capabilities`] has run, the
/// caller could otherwise take the descriptors opened with them (system-wide
/// perf counters) into a process of their own, and keep them past the run.
/// Call it before dropping the capabilities, so that there is no moment
/// between the two. Dumpability is the process's, not a thread's, and a
/// program the process runs after this is dumpable again.
pub fn forbid_tracing() -> io::Result<()> {
    // SAFETY: PR_SET_DUMPABLE takes one integer argument.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Drops every capability (effective, permitted and inheritable, and so the
/// ambient ones) of the calling thread for the rest of the run. A process
/// without capabilities is left as it is.
pub fn drop_capabilities() -> io::Result<()> {
    set_capabilities(0, 0)
}

/// `CAP_IPC_LOCK`: locking memory, a perf ring beyond the locked-memory
/// limit among it.
pub const CAP_IPC_LOCK: u32 = 14;
/// `CAP_SYS_ADMIN`, which stands for [`CAP_PERFMON`] and [`CAP_BPF`] where
/// the kernel has neither (before Linux 5.8).
pub const CAP_SYS_ADMIN: u32 = 21;
/// `CAP_PERFMON`: system-wide perf events, tracepoints among them.
pub const CAP_PERFMON: u32 = 38;
/// `CAP_BPF`: loading eBPF programs and maps.
pub const CAP_BPF: u32 = 39;

/// The bit of capability `cap` in a set.
pub const fn bit(cap: u32) -> u64 {
    1 << cap
}

/// The capabilities a thread keeps for later calls, out of its effective
/// set (where the kernel looks) but around those calls ([`Kept::raised`]):
/// what the thread does otherwise, the caller could not make it do with
/// them. Capabilities belong to threads: another thread keeps its own.
#[derive(Debug)]
pub struct Kept {
    /// The permitted set: what [`Kept::raised`] makes effective.
    permitted: u64,
}

impl Kept {
    /// Keeps of the calling thread's permitted capabilities only those in
    /// `wanted` (bits, [`bit`]), none of them effective, and none
    /// inheritable or ambient: the others are gone for good.
    pub fn only(wanted: u64) -> io::Result<Kept> {
        let permitted = permitted_now()? & wanted;
        set_capabilities(0, permitted)?;
        Ok(Kept { permitted })
    }

    /// Whether capability `cap` is kept.
    pub fn holds(&self, cap: u32) -> bool {
        self.permitted & bit(cap) != 0
    }

    /// Keeps only those in `wanted` of the capabilities kept.
    pub fn narrow(&mut self, wanted: u64) -> io::Result<()> {
        self.permitted &= wanted;
        set_capabilities(0, self.permitted)
    }

    /// Runs `f` with the kept capabilities effective, then none again. An
    /// error when they cannot be raised (`f` is not run) or lowered.
    pub fn raised<T>(&self, f: impl FnOnce() -> T) -> io::Result<T> {
        if self.permitted == 0 {
            return Ok(f());
        }
        set_capabilities(self.permitted, self.permitted)?;
        let done = f();
        set_capabilities(0, self.permitted)?;
        Ok(done)
    }
}

/// `struct __user_cap_header_struct`.
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

/// `struct __user_cap_data_struct`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// `_LINUX_CAPABILITY_VERSION_3`: 64-bit sets in two [`CapData`] words.
const CAP_VERSION_3: u32 = 0x2008_0522;

/// The calling thread's permitted set.
fn permitted_now() -> io::Result<u64> {
    let mut header = CapHeader {
        version: CAP_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: a version-3 header (pid 0: this thread) and its two data words.
    let rc = unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(u64::from(data[0].permitted) | u64::from(data[1].permitted) << 32)
}

/// Sets the calling thread's `effective` and `permitted` sets (bits), and
/// an empty inheritable set (which empties the ambient one).
fn set_capabilities(effective: u64, permitted: u64) -> io::Result<()> {
    let mut header = CapHeader {
        version: CAP_VERSION_3,
        pid: 0,
    };
    let word = |set: u64, high: bool| (if high { set >> 32 } else { set }) as u32;
    let data = [false, true].map(|high| CapData {
        effective: word(effective, high),
        permitted: word(permitted, high),
        inheritable: 0,
    });
    // SAFETY: a version-3 header (pid 0: this thread) and its two data words.
    let rc = unsafe { libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(sysroot: bool, record: bool) -> [Guarded<'static>; 2] {
        [
            Guarded {
                option: "--sysroot",
                given: sysroot,
                why: "reads kernel files from a directory the caller chooses",
            },
            Guarded {
                option: "--record",
                given: record,
                why: "writes a file the caller chooses",
            },
        ]
    }

    #[test]
    fn only_given_options_are_refused_and_only_when_secure() {
        assert!(refuse_when_secure(false, &options(true, true)).is_ok());
        assert!(refuse_when_secure(true, &options(false, false)).is_ok());
        let err = refuse_when_secure(true, &options(false, true)).unwrap_err();
        assert!(
            err.starts_with("--record: refused while running with raised privileges")
                && err.contains("writes a file the caller chooses")
                && !err.contains('\n'),
            "{err}"
        );
        // A test run is not set-user-ID.
        assert!(!is_secure());
    }

    /// `CapEff` and `CapPrm` of the calling thread.
    fn sets() -> (u64, u64) {
        let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
        let set = |name: &str| {
            let line = status.lines().find(|l| l.starts_with(name)).unwrap();
            u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap()
        };
        (set("CapEff:"), set("CapPrm:"))
    }

    #[test]
    fn kept_capabilities_are_effective_only_while_raised() {
        std::thread::spawn(|| {
            let (_, before) = sets();
            let wanted = bit(CAP_PERFMON) | bit(CAP_IPC_LOCK);
            let mut kept = Kept::only(wanted).unwrap();
            assert_eq!(sets(), (0, before & wanted));
            assert_eq!(kept.holds(CAP_PERFMON), before & bit(CAP_PERFMON) != 0);
            assert!(!kept.holds(CAP_BPF));
            let inside = kept.raised(sets).unwrap();
            assert_eq!(inside, (before & wanted, before & wanted));
            assert_eq!(sets(), (0, before & wanted));
            kept.narrow(bit(CAP_PERFMON)).unwrap();
            assert_eq!(sets(), (0, before & bit(CAP_PERFMON)));
            assert!(!kept.holds(CAP_IPC_LOCK));
            // What was let go cannot be raised again.
            assert!(!Kept::only(wanted).unwrap().holds(CAP_IPC_LOCK));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn capabilities_are_gone_after_dropping_them() {
        let capabilities = || -> Vec<String> {
            std::fs::read_to_string("/proc/thread-self/status")
                .unwrap()
                .lines()
                .filter(|l| l.starts_with("CapEff:") || l.starts_with("CapPrm:"))
                .map(|l| l.split_whitespace().nth(1).unwrap().to_string())
                .collect()
        };
        // In a thread of its own: capabilities belong to threads.
        std::thread::spawn(move || {
            drop_capabilities().unwrap();
            assert_eq!(capabilities(), ["0000000000000000", "0000000000000000"]);
        })
        .join()
        .unwrap();
    }
}
