//! Without root: EACCES explains CAP_PERFMON, and `setcap cap_perfmon+ep`
//! on the binary is enough to count. With that capability the caller cannot
//! choose the kernel files or the files written (`--sysroot`, `--replay`,
//! `--record`, `--svg`, `--textfile` are refused), so the fixture PMUs are
//! bind-mounted over `/sys` in a private mount namespace instead; once
//! counting, the process has no capability left.
//! Needs root (to switch to `nobody`, to set the capability and to mount),
//! setpriv, setcap and unshare; skips with the reason otherwise, unless
//! CI=true.

use crate::cxlstat_support::{copy_executable, scratch, software_tree};
use crate::file_capabilities::{
    Measuring, as_nobody, as_nobody_in_namespace, capabilities, copy_with_capabilities, quoted,
    take_perf_descriptor_as_nobody,
};
use crate::skip;

use std::path::{Path, PathBuf};
use std::process::Command;

fn can_run(test: &str) -> bool {
    let missing: Vec<&str> = ["/usr/bin/setpriv", "/usr/sbin/setcap", "/usr/bin/unshare"]
        .into_iter()
        .filter(|p| !Path::new(p).exists())
        .collect();
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let paranoid: i64 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(2);
    let reason = if !root {
        Some("not root".to_string())
    } else if !missing.is_empty() {
        Some(format!("missing {}", missing.join(", ")))
    } else if paranoid <= 0 {
        Some(format!(
            "kernel.perf_event_paranoid is {paranoid}: unprivileged users may count"
        ))
    } else {
        None
    };
    skip::runs_unless(test, reason)
}

/// `binary args` as `nobody`, in a private mount namespace whose `/sys` is
/// `root/sys`.
fn as_nobody_over_fixture_sys(root: &Path, binary: &Path, args: &[&str]) -> Command {
    let setup = format!("mount --bind {} /sys", quoted(&root.join("sys")));
    as_nobody_in_namespace(&setup, &[], binary, args)
}

/// A copy of cxlstat with `cap_perfmon+ep`, in `root`.
fn binary_with_cap_perfmon(root: &Path) -> PathBuf {
    let binary = root.join("cxlstat");
    copy_with_capabilities(
        Path::new(env!("CARGO_BIN_EXE_cxlstat")),
        &binary,
        "cap_perfmon+ep",
    );
    binary
}

#[test]
fn eacces_explains_cap_perfmon_and_setcap_is_enough() {
    if !can_run("eacces_explains_cap_perfmon") {
        return;
    }
    let root = scratch("privileges");
    software_tree(&root, &[("cxl_pmu_mem0.0", 0)]);
    let plain = root.join("plain-cxlstat");
    copy_executable(Path::new(env!("CARGO_BIN_EXE_cxlstat")), &plain);
    let args = [
        "--sysroot",
        root.to_str().unwrap(),
        "-e",
        "cpu_clock",
        "0.05",
        "1",
    ];

    let denied = as_nobody(&plain, &args);
    assert_eq!(denied.status.code(), Some(1));
    let err = String::from_utf8_lossy(&denied.stderr);
    assert!(
        err.contains("EACCES")
            && err.contains("CAP_PERFMON")
            && err.contains("setcap cap_perfmon+ep"),
        "{err}"
    );

    // With the capability, the live /sys (the fixture, mounted over it).
    let binary = binary_with_cap_perfmon(&root);
    let allowed = as_nobody_over_fixture_sys(&root, &binary, &args[2..])
        .output()
        .unwrap();
    assert!(
        allowed.status.success(),
        "{}",
        String::from_utf8_lossy(&allowed.stderr)
    );
    let out = String::from_utf8_lossy(&allowed.stdout);
    assert!(
        out.lines()
            .any(|l| l.contains("cxl_pmu_mem0.0") && l.contains("100.00%")),
        "{out}"
    );
}

#[test]
fn with_file_capabilities_the_caller_cannot_choose_the_files() {
    if !can_run("with_file_capabilities_the_caller_cannot_choose_the_files") {
        return;
    }
    let root = scratch("privileges-refused");
    software_tree(&root, &[("cxl_pmu_mem0.0", 0)]);
    let binary = binary_with_cap_perfmon(&root);
    let tree = root.to_str().unwrap();
    let recording = format!("{tree}/r.rec");
    let chart = format!("{tree}/c.svg");
    let textfile = format!("{tree}/c.prom");
    for (option, value) in [
        ("--sysroot", tree),
        ("--replay", recording.as_str()),
        ("--record", recording.as_str()),
        ("--svg", chart.as_str()),
        ("--textfile", textfile.as_str()),
    ] {
        let run = as_nobody(&binary, &[option, value, "-e", "cpu_clock", "0.05", "1"]);
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(1), "{option}: {err}");
        assert!(
            err.starts_with(&format!(
                "cxlstat: {option}: refused while running with raised privileges"
            )) && err.lines().count() == 1,
            "{option}: {err}"
        );
        assert!(run.stdout.is_empty(), "{option}");
    }
    assert!(!Path::new(&recording).exists());
    assert!(!Path::new(&chart).exists());
    assert!(!Path::new(&textfile).exists());
}

#[test]
fn counting_runs_without_any_capability() {
    if !can_run("counting_runs_without_any_capability") {
        return;
    }
    let root = scratch("privileges-dropped");
    software_tree(&root, &[("cxl_pmu_mem0.0", 0)]);
    let binary = binary_with_cap_perfmon(&root);
    let mut run = Measuring::spawn(
        "cxlstat",
        as_nobody_over_fixture_sys(&root, &binary, &["-e", "cpu_clock", "0.1"]),
    );
    let pid = run.pid();
    // The second report: counting has been going on for an interval.
    let counting_lines = |seen: &[u8]| -> Vec<String> {
        // Whole lines only: the last may still be being written.
        let whole = &seen[..seen.iter().rposition(|&b| b == b'\n').map_or(0, |n| n + 1)];
        String::from_utf8_lossy(whole)
            .lines()
            .filter(|l| l.contains("cxl_pmu_mem0.0"))
            .map(str::to_string)
            .collect()
    };
    let counted =
        counting_lines(run.wait_for("the second report", |seen| counting_lines(seen).len() >= 2));
    let caps = capabilities(pid);
    let taken = take_perf_descriptor_as_nobody(pid);
    let (status, stderr) = run.stop(libc::SIGTERM);
    assert!(
        counted[..2].iter().all(|l| l.contains("100.00%")),
        "{counted:?}"
    );
    assert!(!caps.is_empty());
    assert!(
        caps.iter().all(|&(_, eff, prm)| eff == 0 && prm == 0),
        "(thread, CapEff, CapPrm): {caps:?}"
    );
    // Without capabilities, the process still keeps the caller out: its
    // counters were opened with CAP_PERFMON, which the caller lacks.
    assert_eq!(taken.raw_os_error(), Some(libc::EPERM), "{taken}");
    assert!(status.success(), "{stderr}");
}
