//! What the command after `--` sees, against what perf stat's workload
//! sees: signals at their default and no descriptor of cxlstat's own.
//! (Its open-file limit: cxlstat_counting; its capabilities:
//! cxlstat_privileges.)

use crate::cxlstat_support;

use cxlstat_support::{cxlstat, perf_usable, scratch, software_tree, stderr, stdout};

/// A tree with one PMU, on CPU 0.
fn tree(name: &str) -> cxlstat_support::Scratch {
    let root = scratch(name);
    software_tree(&root, &[("cxl_pmu_mem0.0", 0)]);
    root
}

/// The value of the `/proc/<pid>/status` line `field` (a signal mask) in
/// `text`.
fn mask(text: &str, field: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .unwrap_or_else(|| panic!("no {field} line in {text}"))
}

/// The command blocks no signal and ignores none of glibc's own (32 and
/// 33, which glibc's posix_spawn ignores in the child it starts, and
/// exec keeps ignored), as perf stat's workload, which perf forks and
/// execs; and it holds none of cxlstat's descriptors: the counters, the
/// recording, the stop signals' eventfd, the command's pidfd.
#[test]
fn the_command_starts_with_default_signals_and_no_descriptor_of_cxlstat() {
    if !perf_usable("the_command_starts_with_default_signals") {
        return;
    }
    let root = tree("workload_state");
    let recording = root.join("run.rec");
    // cxlstat itself is started by posix_spawn here (std's Command): it
    // has signals 32 and 33 ignored, which its command must not inherit.
    let out = cxlstat(&[
        "--sysroot",
        root.to_str().unwrap(),
        "-e",
        "cpu_clock,context_switches",
        "-I",
        "10000",
        "--record",
        recording.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "grep -E '^Sig(Blk|Ign):' /proc/self/status; echo fds; ls -l /proc/self/fd",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(mask(&text, "SigBlk:"), 0, "{text}");
    let glibc_own = 0b11 << 31;
    assert_eq!(mask(&text, "SigIgn:") & glibc_own, 0, "{text}");
    // What the command holds beside the descriptors it was given (cargo's
    // and the caller's may be among those): nothing of cxlstat's.
    let fds: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "fds")
        .skip(1)
        .take_while(|l| !l.starts_with('#'))
        .collect();
    assert!(fds.len() >= 4, "{text}");
    for cxlstat_own in ["perf_event", "eventfd", "pidfd", "run.rec"] {
        assert!(!fds.iter().any(|l| l.contains(cxlstat_own)), "{text}");
    }
}
