//! Without root: EACCES explains CAP_PERFMON, and `setcap cap_perfmon+ep`
//! on the binary is enough to count. Needs root (to switch to `nobody` and
//! to set the capability), setpriv and setcap; skips with the reason
//! otherwise, unless CI=true.

mod cxlstat_support;

use std::path::Path;
use std::process::Command;

use cxlstat_support::{scratch, skip, software_tree};

fn can_run(test: &str) -> bool {
    let missing: Vec<&str> = ["/usr/bin/setpriv", "/usr/sbin/setcap"]
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
    match reason {
        None => true,
        Some(why) => {
            skip::skip(test, &why);
            false
        }
    }
}

fn as_nobody(binary: &Path, args: &[&str]) -> std::process::Output {
    Command::new("/usr/bin/setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .arg(binary)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn eacces_explains_cap_perfmon_and_setcap_is_enough() {
    if !can_run("eacces_explains_cap_perfmon") {
        return;
    }
    let root = scratch("privileges");
    software_tree(&root, &[("cxl_pmu_mem0.0", 0)]);
    let binary = root.join("cxlstat");
    std::fs::copy(env!("CARGO_BIN_EXE_cxlstat"), &binary).unwrap();
    let args = [
        "--sysroot",
        root.to_str().unwrap(),
        "-e",
        "cpu_clock",
        "0.05",
        "1",
    ];

    let denied = as_nobody(&binary, &args);
    assert_eq!(denied.status.code(), Some(1));
    let err = String::from_utf8_lossy(&denied.stderr);
    assert!(
        err.contains("EACCES")
            && err.contains("CAP_PERFMON")
            && err.contains("setcap cap_perfmon+ep"),
        "{err}"
    );

    let status = Command::new("/usr/sbin/setcap")
        .arg("cap_perfmon+ep")
        .arg(&binary)
        .status()
        .unwrap();
    assert!(status.success());
    let allowed = as_nobody(&binary, &args);
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
