//! iostat-rs `--latency` with file capabilities, run by nobody: `setcap
//! cap_bpf,cap_perfmon,cap_dac_read_search+ep` (the eBPF programs; tracefs
//! is root's, 0700, and a group the administrator grants read access
//! would change the one tracefs instance for the whole machine), or
//! without cap_bpf (sampled by perf). Once measuring, the main thread holds
//! no capability and the latency thread CAP_PERFMON alone, none of it
//! effective; nobody cannot take one of its perf descriptors
//! (`pidfd_getfd`: the process is not dumpable); and a CPU that comes
//! online is still traced, CAP_PERFMON raised around opening its events,
//! also after it went and came back. No CPU goes offline: the online list
//! is a file bind-mounted over `/sys/devices/system/cpu/online`, `0` at
//! the start, then `0-1`, `0` and `0-1` again.
//! Needs root (to switch to nobody, to set the capabilities and to
//! mount), setcap, setpriv, unshare, prlimit and a CPU 1 online; skips
//! with the reason otherwise, unless CI=true.

use crate::file_capabilities::{
    Measuring, as_nobody_in_namespace, capabilities, copy_with_capabilities, quoted,
    take_perf_descriptor_as_nobody,
};
use crate::nobody_perf::{MOUNT_TRACEFS, NobodysPerfAllowance};
use crate::procstate::{await_at_most_perf_events, await_perf_events, perf_descriptors};
use crate::scratch::scratch;
use crate::skip;

use std::path::Path;
use std::time::Duration;

/// `CAP_PERFMON`'s bit in `/proc/PID/status`.
const CAP_PERFMON: u64 = 1 << 38;

/// Why these tests cannot run here, or `None` when they can.
fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("needs root (setcap, setpriv, mount namespaces)".into());
    }
    let missing: Vec<&str> = [
        "/usr/sbin/setcap",
        "/usr/bin/setpriv",
        "/usr/bin/unshare",
        "/usr/bin/prlimit",
    ]
    .into_iter()
    .filter(|p| !Path::new(p).exists())
    .collect();
    if !missing.is_empty() {
        return Some(format!(
            "missing {} (apt-get install libcap2-bin util-linux)",
            missing.join(", ")
        ));
    }
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    if !online.trim().starts_with("0-") && !online.trim().starts_with("0,1") {
        return Some(format!(
            "CPU 1 is not online (online: {}): it is the CPU that comes online",
            online.trim()
        ));
    }
    crate::namespace::unavailable()
}

/// Runs a copy of iostat-rs given file capabilities `given` (setcap's
/// words) as nobody, as the module doc says; `per_cpu` is how many perf
/// events a CPU's ring takes: 1 forwarded by eBPF, 3 sampled by perf.
fn measures_with_little_privilege(test: &str, given: &str, per_cpu: usize) {
    if !skip::runs_unless(test, unavailable()) {
        return;
    }
    let dir = scratch(&format!("iostat-privileges-{per_cpu}"));
    let binary = dir.join("iostat-rs");
    copy_with_capabilities(Path::new(env!("CARGO_BIN_EXE_iostat-rs")), &binary, given);
    let online = dir.join("online");
    std::fs::write(&online, "0\n").unwrap();
    // Nobody's rings (512 KiB, under a locked-memory limit of 0) are
    // charged to one allowance, which other tests' runs share.
    let _allowance = NobodysPerfAllowance::take(Duration::from_secs(600));
    let setup = format!(
        "{MOUNT_TRACEFS} && mount --bind {} /sys/devices/system/cpu/online",
        quoted(&online)
    );
    let mut run = Measuring::spawn(
        "iostat-rs",
        as_nobody_in_namespace(
            &setup,
            &["--memlock=0:0"],
            &binary,
            &["-x", "--latency", "0.2"],
        ),
    );
    let pid = run.pid();
    let reports = |seen: &[u8]| String::from_utf8_lossy(seen).matches("Device ").count();
    run.wait_for("two reports", |seen| reports(seen) >= 2);
    let caps = capabilities(pid);
    let taken = take_perf_descriptor_as_nobody(pid);
    let before = perf_descriptors(pid).len();
    // CPU 1 comes online, goes (its ring retired, its slot in the eBPF map
    // emptied) and comes back.
    std::fs::write(&online, "0-1\n").unwrap();
    await_perf_events(pid, before + per_cpu);
    std::fs::write(&online, "0\n").unwrap();
    await_at_most_perf_events(pid, before);
    std::fs::write(&online, "0-1\n").unwrap();
    await_perf_events(pid, before + per_cpu);
    let seen = reports(run.wait_for("a report after CPU 1", |s| reports(s) >= 4));
    let (status, err) = run.stop(libc::SIGINT);
    assert!(status.success(), "{err}");
    assert!(seen >= 4);
    assert_eq!(
        caps,
        [
            ("iostat-rs".to_string(), 0, 0),
            ("latency".to_string(), 0, CAP_PERFMON)
        ],
        "(thread, CapEff, CapPrm)"
    );
    assert_eq!(taken.raw_os_error(), Some(libc::EPERM), "{taken}");
    assert!(!err.contains("cannot be traced"), "{err}");
    let sampled = err.contains("sampling the tracepoints with perf instead");
    assert_eq!(sampled, per_cpu == 3, "{err}");
}

#[test]
fn latency_with_file_capabilities_keeps_cap_perfmon_alone_and_follows_cpus() {
    measures_with_little_privilege(
        "latency_with_file_capabilities_keeps_cap_perfmon_alone_and_follows_cpus",
        "cap_bpf,cap_perfmon,cap_dac_read_search+ep",
        1,
    );
}

#[test]
fn sampled_with_file_capabilities_keeps_cap_perfmon_alone_and_follows_cpus() {
    measures_with_little_privilege(
        "sampled_with_file_capabilities_keeps_cap_perfmon_alone_and_follows_cpus",
        "cap_perfmon,cap_dac_read_search+ep",
        3,
    );
}
