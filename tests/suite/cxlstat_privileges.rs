//! Without root: EACCES explains CAP_PERFMON, and `setcap cap_perfmon+ep`
//! on the binary is enough to count. With that capability the caller cannot
//! choose the kernel files or the files written (`--sysroot`, `--replay`,
//! `--record`, `--svg`, `--textfile` are refused), so the fixture PMUs are
//! bind-mounted over `/sys` in a private mount namespace instead; once
//! counting, the process has no capability left.
//! Needs root (to switch to `nobody`, to set the capability and to mount),
//! setpriv, setcap and unshare; skips with the reason otherwise, unless
//! CI=true.

use crate::cxlstat_support;
use crate::pipes::Collected;
use crate::procstate::KillOnDrop;
use crate::procstate::wait_with_timeout;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::skip;
use cxlstat_support::{copy_executable, scratch, software_tree};

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

const NOBODY: [&str; 3] = ["--reuid=nobody", "--regid=nogroup", "--clear-groups"];

fn as_nobody(binary: &Path, args: &[&str]) -> std::process::Output {
    Command::new("/usr/bin/setpriv")
        .args(NOBODY)
        .arg(binary)
        .args(args)
        .output()
        .unwrap()
}

/// `binary args` as `nobody`, in a private mount namespace whose `/sys` is
/// `root/sys`. The process keeps its PID through `unshare`, `sh` and
/// `setpriv` (each execs the next).
fn as_nobody_over_fixture_sys(root: &Path, binary: &Path, args: &[&str]) -> Command {
    let mut command = Command::new("/usr/bin/unshare");
    command
        .args(["-m", "--propagation", "private", "sh", "-c"])
        .arg(r#"mount --bind "$1/sys" /sys && shift && exec /usr/bin/setpriv "$@""#)
        .arg("sh")
        .arg(root)
        .args(NOBODY)
        .arg(binary)
        .args(args);
    command
}

/// A copy of cxlstat with `cap_perfmon+ep`, in `root`.
fn binary_with_cap_perfmon(root: &Path) -> std::path::PathBuf {
    let binary = root.join("cxlstat");
    copy_executable(Path::new(env!("CARGO_BIN_EXE_cxlstat")), &binary);
    let status = Command::new("/usr/sbin/setcap")
        .arg("cap_perfmon+ep")
        .arg(&binary)
        .status()
        .unwrap();
    assert!(status.success());
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

/// `CapEff` and `CapPrm` of every thread of `pid`.
fn capabilities(pid: u32) -> Vec<String> {
    let mut found = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let status = std::fs::read_to_string(task.unwrap().path().join("status")).unwrap();
        found.extend(
            status
                .lines()
                .filter(|l| l.starts_with("CapEff:") || l.starts_with("CapPrm:"))
                .map(str::to_string),
        );
    }
    found
}

#[test]
fn counting_runs_without_any_capability() {
    if !can_run("counting_runs_without_any_capability") {
        return;
    }
    let root = scratch("privileges-dropped");
    software_tree(&root, &[("cxl_pmu_mem0.0", 0)]);
    let binary = binary_with_cap_perfmon(&root);
    let mut child = KillOnDrop(
        as_nobody_over_fixture_sys(&root, &binary, &["-e", "cpu_clock", "0.1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let pid = child.id();
    let mut stdout = Collected::new(child.stdout.take().unwrap());
    let stderr = Collected::new(child.stderr.take().unwrap());
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
    let counted = match stdout.try_wait_for("the second report", Duration::from_secs(30), |seen| {
        counting_lines(seen).len() >= 2
    }) {
        Ok(seen) => counting_lines(seen),
        Err(why) => {
            // What cxlstat said, once it is stopped.
            let _ = child.kill();
            let _ = child.wait();
            let stderr = stderr.until_end("cxlstat's standard error", Duration::from_secs(10));
            panic!("{why}\nstderr: {}", String::from_utf8_lossy(&stderr));
        }
    };
    let caps = capabilities(pid);
    let taken = take_perf_descriptor_as_nobody(pid);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let status = wait_with_timeout(&mut child, Duration::from_secs(20), "cxlstat after SIGTERM");
    let stderr = stderr.until_end("cxlstat's standard error", Duration::from_secs(10));
    let stderr = String::from_utf8_lossy(&stderr);
    assert!(
        counted[..2].iter().all(|l| l.contains("100.00%")),
        "{counted:?}"
    );
    assert!(!caps.is_empty());
    for line in &caps {
        assert!(line.ends_with("\t0000000000000000"), "{caps:?}");
    }
    // Without capabilities, the process still keeps the caller out: its
    // counters were opened with CAP_PERFMON, which the caller lacks.
    assert_eq!(taken.raw_os_error(), Some(libc::EPERM), "{taken}");
    assert!(status.success(), "{stderr}");
}

/// What `pidfd_getfd(2)` of a perf event descriptor of `pid` gives in a
/// process of `nobody`'s: an error, or `Other` when it took the descriptor
/// (which a process of `nobody`'s could then read and keep past the run).
pub(crate) fn take_perf_descriptor_as_nobody(pid: u32) -> std::io::Error {
    use std::os::unix::process::CommandExt;
    let counter = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|fd| {
            std::fs::read_link(fd).is_ok_and(|to| to.to_string_lossy() == "anon_inode:[perf_event]")
        })
        .expect("a perf event among the process's descriptors");
    let fd: i32 = counter
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let mut command = Command::new("/bin/true");
    command.uid(65534).gid(65534);
    // SAFETY: only system calls between fork and exec; an error is the
    // errno, which `spawn` returns.
    unsafe {
        command.pre_exec(move || {
            let pidfd = libc::syscall(libc::SYS_pidfd_open, pid as i32, 0);
            if pidfd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::syscall(libc::SYS_pidfd_getfd, pidfd as i32, fd, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    match command.status() {
        Ok(_) => std::io::Error::other(format!("nobody took perf descriptor {fd} of {pid}")),
        Err(err) => err,
    }
}
