//! An output path through an automount point (an autofs home directory,
//! debugfs' `tracing`) reaches the file system mounted there: the output
//! directory is walked one name at a time, and each name must be opened
//! as the kernel's own walk opens it, which mounts what waits there.
//!
//! debugfs' `tracing` is the one automount point every kernel with tracing
//! has (this machine's has no autofs): tracefs is mounted on it when a
//! walk goes through. The test mounts debugfs in a mount namespace of its
//! own, so that nothing went through before, and runs itself again there.

use std::path::Path;

use crate::{namespace, skip};

/// Set in the run inside the mount namespace.
const INSIDE: &str = "HWSTAT_TEST_AUTOMOUNT_INSIDE";
const TEST: &str = "automount::an_output_walk_mounts_an_automount_point";
const TRACING: &str = "/sys/kernel/debug/tracing";

fn tracefs_mounted_on_tracing() -> bool {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    mounts
        .lines()
        .any(|l| l.split(' ').nth(4) == Some(TRACING) && l.contains(" - tracefs "))
}

#[test]
fn an_output_walk_mounts_an_automount_point() {
    if std::env::var_os(INSIDE).is_some() {
        return walk_through_tracing();
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        skip::skip(TEST, "needs root (a mount namespace, debugfs)");
        return;
    }
    let setup = "mount -t debugfs none /sys/kernel/debug";
    let out = namespace::command(
        setup,
        std::env::current_exe().unwrap(),
        &[TEST, "--exact", "--nocapture"],
    )
    .env(INSIDE, "1")
    .output()
    .unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("1 passed"),
        "the test did not run inside: {said}"
    );
}

/// Inside: nothing went through `tracing` yet; a file replaced in tracefs'
/// `instances` (which holds no files: the creation is refused) must reach
/// it, where a walk that stops at the mount point finds no `instances`.
fn walk_through_tracing() {
    assert!(Path::new("/sys/kernel/debug").is_dir());
    assert!(!tracefs_mounted_on_tracing(), "mounted before the walk");
    let target = Path::new(TRACING).join("instances/hwstat-test.prom");
    let err = hwstat::common::temp_file::replace_with(
        &target,
        hwstat::common::temp_file::Readers::Owner,
        |_| Ok(()),
    )
    .unwrap_err();
    assert!(
        tracefs_mounted_on_tracing(),
        "the walk mounted nothing: {err}"
    );
    assert_ne!(err.kind(), std::io::ErrorKind::NotFound, "{err}");
}
