//! Running iostat-rs `--latency` in a mount namespace with tracefs, and
//! as nobody with CAP_PERFMON alone (the perf fallback), which takes a
//! machine-wide lock on nobody's perf allowance. Shared by the suite's
//! `block_latency` and the `cpu_hotplug` test program.

use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::namespace;

const IOSTAT: &str = env!("CARGO_BIN_EXE_iostat-rs");

/// Mounts tracefs where it is not mounted (the mount namespace's copy).
pub const MOUNT_TRACEFS: &str =
    "{ mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing; }";

/// iostat-rs with `args`, as nobody with CAP_PERFMON under a locked-memory
/// limit of 0: the perf fallback (no CAP_BPF) on its small rings (512 KiB
/// a CPU). It runs in a mount namespace with tracefs as the machine has
/// it, mounted only where it is not: one instance serves every mount, so
/// a mount option would change it for the whole machine.
pub fn unprivileged_small_ring(args: &[&str]) -> Command {
    let mut with = vec![
        "--memlock=0:0",
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        // Read access to tracefs: its root is root's, mode 0700 by
        // default, its event files 0440 (Linux 6.x); an administrator
        // grants a group with the gid= and mode= mount options, which
        // would change the one tracefs instance for the whole machine, so
        // the run gets CAP_DAC_READ_SEARCH instead (it passes the search
        // and read checks).
        "--inh-caps=-all,+perfmon,+dac_read_search",
        "--ambient-caps=-all,+perfmon,+dac_read_search",
        IOSTAT,
    ];
    with.extend(args);
    namespace::command(MOUNT_TRACEFS, "prlimit", &with)
}

/// Held while a run of [`unprivileged_small_ring`] maps its perf rings,
/// by every test process on the machine: nobody's rings are charged to one
/// allowance, `kernel.perf_event_mlock_kb` times the CPUs (the small ring
/// is 516 KiB with its header page, so one run takes all of it), and under
/// a locked-memory limit of 0 a second run beside the first, in another
/// `cargo test` (another checkout's suite; `ONE_AT_A_TIME` serializes a
/// process's tests only), fails with `mmap of a perf ring buffer:
/// Operation not permitted`. Waits at most `limit`, then fails.
pub struct NobodysPerfAllowance {
    _locked: std::fs::File,
}

impl NobodysPerfAllowance {
    /// Waits for the allowance, at most `limit`.
    pub fn take(limit: Duration) -> NobodysPerfAllowance {
        // In /run, writable by root only (these tests run as root): not a
        // name in a sticky directory another user could plant.
        let path = "/run/hwstat-tests-nobodys-perf-allowance.lock";
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        let start = Instant::now();
        // SAFETY: flock on a descriptor we own.
        while unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let err = std::io::Error::last_os_error();
            assert_eq!(
                err.raw_os_error(),
                Some(libc::EWOULDBLOCK),
                "flock {path}: {err}"
            );
            assert!(
                start.elapsed() < limit,
                "{path}: another test process held nobody's perf allowance for {limit:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        NobodysPerfAllowance { _locked: file }
    }
}
