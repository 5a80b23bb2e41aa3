//! Private mount namespaces, for tests that put made-up kernel files or
//! programs over the real paths (`unshare -m` from util-linux, as root).

use std::ffi::OsStr;
use std::process::Command;

/// Why a private mount namespace cannot be made here, or `None` when it can.
pub fn unavailable() -> Option<String> {
    match Command::new("unshare")
        .args(["-m", "--propagation", "private", "true"])
        .status()
    {
        Ok(status) if status.success() => None,
        Ok(status) => Some(format!(
            "unshare -m failed ({status}): a private mount namespace needs root and util-linux"
        )),
        Err(e) => Some(format!(
            "cannot run unshare: {e} (apt-get install util-linux)"
        )),
    }
}

/// `program args` in a private mount namespace, after the shell commands
/// `setup` (which see the program as `$0` and its arguments as `$@`).
/// Nothing outside the namespace sees the mounts `setup` makes.
pub fn command(setup: &str, program: impl AsRef<OsStr>, args: &[impl AsRef<OsStr>]) -> Command {
    let mut command = Command::new("unshare");
    command
        .args(["-m", "--propagation", "private", "sh", "-c"])
        .arg(format!("{setup} && exec \"$0\" \"$@\""))
        .arg(program)
        .args(args);
    command
}
