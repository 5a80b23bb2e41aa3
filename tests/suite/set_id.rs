//! A set-user-ID or set-group-ID copy of each tool refuses to run as
//! another user or group than its caller's, before it reads anything: capabilities are dropped once
//! they have served, but a set-user-ID root program stayed root, so nobody
//! could have cxlstat start any command as root (`cxlstat -e EV -- sh`),
//! read the first line of `/etc/shadow` in vcpustat's error about
//! `--topology`, or point iostat-rs's `-f` at root's files. Root running
//! a copy of root's (the same real and effective user and group) is not
//! refused; running one of nobody's, it is. Needs
//! root and setpriv; skips with the reason otherwise, unless CI=true.

use crate::cxlstat_support::copy_executable;
use crate::file_capabilities::as_nobody;
use crate::scratch::scratch;
use crate::skip;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

const IOSTAT: &str = env!("CARGO_BIN_EXE_iostat-rs");
const VCPUSTAT: &str = env!("CARGO_BIN_EXE_vcpustat");
const CXLSTAT: &str = env!("CARGO_BIN_EXE_cxlstat");

/// Why the test cannot run here, or `None` when it can.
fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("needs root (a root-owned set-user-ID copy, setpriv)".into());
    }
    if !Path::new("/usr/bin/setpriv").exists() {
        return Some("setpriv is not installed (Debian: apt-get install util-linux)".into());
    }
    None
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn set_id_copies_refuse_to_run_for_another_user() {
    const TEST: &str = "set_id_copies_refuse_to_run_for_another_user";
    if !skip::runs_unless(TEST, unavailable()) {
        return;
    }
    let dir = scratch("set-id");
    // nobody reaches the copies, and the file cxlstat's command would make.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let ran = dir.join("ran");
    let ran_arg = ran.to_str().unwrap();
    let runs: [(&str, &str, &[&str]); 3] = [
        (IOSTAT, "iostat-rs", &["-d", "-f", "/root"]),
        (
            VCPUSTAT,
            "vcpustat",
            &["trace", "report", "--topology", "/etc/shadow", "/dev/null"],
        ),
        (
            CXLSTAT,
            "cxlstat",
            &["-e", "cpu_clock", "--", "touch", ran_arg],
        ),
    ];
    for (mode, ids) in [
        (0o4755, "user 65534, group 65534, as user 0, group 65534"),
        (0o2755, "user 65534, group 65534, as user 65534, group 0"),
    ] {
        for (built, name, args) in runs {
            let copy = dir.join(name);
            copy_executable(Path::new(built), &copy);
            // Mode last: a change of owner clears the set-ID bits.
            std::os::unix::fs::chown(&copy, Some(0), Some(0)).unwrap();
            std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(mode)).unwrap();
            let out = as_nobody(&copy, args);
            let what = format!("{name} {args:?}, mode {mode:o}");
            assert_eq!(out.status.code(), Some(1), "{what}: {}", text(&out.stderr));
            assert_eq!(text(&out.stderr), refusal(name, ids), "{what}");
            assert_eq!(text(&out.stdout), "", "{what}");
            assert!(!ran.exists(), "{what}: the command after -- ran");
            // Root's own run of the copy is not refused.
            let out = Command::new(&copy).arg("-V").output().unwrap();
            assert!(out.status.success(), "{what}, root: {}", text(&out.stderr));
        }
    }
    // Root running a set-user-ID copy of nobody's would run as nobody.
    let copy = dir.join("iostat-rs");
    std::os::unix::fs::chown(&copy, Some(65534), Some(0)).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o4755)).unwrap();
    let out = Command::new(&copy).arg("-V").output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stderr),
        refusal("iostat-rs", "user 0, group 0, as user 65534, group 0")
    );
}

/// The line a set-ID run of `name` is refused with.
fn refusal(name: &str, ids: &str) -> String {
    format!(
        "{name}: installed set-user-ID or set-group-ID (run by {ids}): refused, as the files \
         it opens and any command it starts would be that user's and group's; remove those \
         bits (chmod u-s,g-s) and give it file capabilities instead (setcap, as its manual \
         says)\n"
    )
}
