//! Running with raised privileges: a set-user-ID binary or one with file
//! capabilities (`setcap cap_perfmon+ep cxlstat`, as cxlstat's README
//! advises). The caller is then not trusted with what the privileges reach:
//! options that let them choose the files behind what is opened are refused,
//! and capabilities are dropped once they have served.

use std::io;
use std::path::Path;

/// True when the kernel started this program with raised privileges
/// (`AT_SECURE`: set-user-ID, set-group-ID or file capabilities).
pub fn is_secure() -> bool {
    // SAFETY: getauxval has no preconditions.
    unsafe { libc::getauxval(libc::AT_SECURE) != 0 }
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
            "{}: refused while running with raised privileges (set-user-ID or file \
             capabilities): it {}; run it without them, as root, or without the option",
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
    /// `struct __user_cap_header_struct`.
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    /// `struct __user_cap_data_struct`.
    #[repr(C)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    /// `_LINUX_CAPABILITY_VERSION_3`: 64-bit sets in two `Data` words.
    const VERSION_3: u32 = 0x2008_0522;
    let mut header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let empty = [
        Data {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        },
        Data {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        },
    ];
    // SAFETY: a version-3 header (pid 0: this thread) and its two data words.
    let rc = unsafe { libc::syscall(libc::SYS_capset, &mut header, empty.as_ptr()) };
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
