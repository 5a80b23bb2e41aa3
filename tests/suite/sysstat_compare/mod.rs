//! Comparing iostat outputs: normalising dates and times, and running
//! Debian's `/usr/bin/iostat` on a fixture tree inside a private mount
//! namespace (tmpfs over `/proc`, `/sys/block` and
//! `/sys/devices/system/cpu`, and over `/sys/dev/block` and `/dev` when the
//! tree has them, filled from the tree).

use std::path::Path;
use std::process::Command;

/// Debian's sysstat iostat.
pub const SYSSTAT: &str = "/usr/bin/iostat";

/// Matches `text` against `shape`, where `9` stands for any ASCII digit.
pub fn shaped(text: &str, shape: &str) -> bool {
    text.len() == shape.len()
        && text.bytes().zip(shape.bytes()).all(|(t, s)| {
            if s == b'9' {
                t.is_ascii_digit()
            } else {
                t == s
            }
        })
}

/// Replaces the banner date, `-t` lines and JSON `date`/`timestamp` values by
/// placeholders; returns the text and the replaced values in order.
pub fn normalise(text: &str) -> (String, Vec<String>) {
    let mut out = String::with_capacity(text.len());
    let mut stamps = Vec::new();
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let body = line.trim_end_matches('\n');
        let nl = &line[body.len()..];
        if i == 0 && body.contains(" \t") {
            let parts: Vec<&str> = body.split(" \t").collect();
            if parts.len() == 3 && shaped(parts[1], "99/99/99") {
                stamps.push(parts[1].to_string());
                out.push_str(&format!("{} \t<DATE> \t{}{nl}", parts[0], parts[2]));
                continue;
            }
        }
        if shaped(body, "99/99/99 99:99:99") {
            stamps.push(body.to_string());
            out.push_str("<TIMESTAMP>");
            out.push_str(nl);
            continue;
        }
        let mut replaced = false;
        for (key, shape) in [
            ("\"date\": \"", "99/99/99"),
            ("\"timestamp\": \"", "99/99/99 99:99:99"),
        ] {
            if let Some(at) = body.find(key) {
                let start = at + key.len();
                let value = &body[start..(start + shape.len()).min(body.len())];
                if shaped(value, shape) {
                    stamps.push(value.to_string());
                    out.push_str(&body[..start]);
                    out.push_str("<STAMP>");
                    out.push_str(&body[start + shape.len()..]);
                    out.push_str(nl);
                    replaced = true;
                }
            }
        }
        if !replaced {
            out.push_str(line);
        }
    }
    (out, stamps)
}

/// Seconds since an arbitrary origin for `MM/DD/YY HH:MM:SS` (same century);
/// a date alone is its midnight.
pub fn seconds(stamp: &str) -> Option<i64> {
    let n = |s: &str| s.parse::<i64>().ok();
    let (date, time) = stamp.split_once(' ').unwrap_or((stamp, "00:00:00"));
    let d: Vec<i64> = date.split('/').filter_map(n).collect();
    let t: Vec<i64> = time.split(':').filter_map(n).collect();
    if d.len() != 3 || t.len() != 3 {
        return None;
    }
    let days = d[2] * 366 + d[0] * 31 + d[1];
    Some(days * 86400 + t[0] * 3600 + t[1] * 60 + t[2])
}

/// `time` in UTC on the scale of [`seconds`].
pub fn utc_seconds(time: std::time::SystemTime) -> i64 {
    let since = time
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let t = libc::time_t::try_from(since).unwrap_or(libc::time_t::MAX);
    // SAFETY: gmtime_r writes into the zeroed tm it is given.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    unsafe { libc::gmtime_r(&t, &mut tm) };
    let days =
        i64::from(tm.tm_year % 100) * 366 + i64::from(tm.tm_mon + 1) * 31 + i64::from(tm.tm_mday);
    days * 86400 + i64::from(tm.tm_hour) * 3600 + i64::from(tm.tm_min) * 60 + i64::from(tm.tm_sec)
}

/// What a program printed and how it ended.
#[derive(Debug, Clone)]
pub struct Run {
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// Exit status, or `None` when killed by a signal.
    pub code: Option<i32>,
}

impl From<std::process::Output> for Run {
    fn from(out: std::process::Output) -> Self {
        Run {
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            code: out.status.code(),
        }
    }
}

const TREE_SCRIPT: &str = r#"
set -e
T=$1; shift
mount -t tmpfs hwstat-proc /proc
if [ -d "$T/proc" ]; then cp -R "$T/proc/." /proc/; fi
mount -t tmpfs hwstat-block /sys/block
if [ -d "$T/sys/block" ]; then cp -R "$T/sys/block/." /sys/block/; fi
mount -t tmpfs hwstat-cpu /sys/devices/system/cpu
if [ -d "$T/sys/devices/system/cpu" ]; then cp -R "$T/sys/devices/system/cpu/." /sys/devices/system/cpu/; fi
if [ -d "$T/sys/dev/block" ]; then
  mount -t tmpfs hwstat-devblock /sys/dev/block
  cp -R "$T/sys/dev/block/." /sys/dev/block/
fi
if [ -d "$T/dev" ]; then mount -t tmpfs hwstat-dev /dev; cp -R "$T/dev/." /dev/; fi
exec /usr/bin/env "$@"
"#;

/// The pinned environment both programs run with.
pub fn pinned(cmd: &mut Command) -> &mut Command {
    cmd.env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .env("LC_ALL", "C")
        .env("TZ", "UTC")
        .env("S_COLORS", "never")
}

/// Runs Debian's iostat with `args` on the fixture tree `tree` (laid out
/// like `/`), in a private mount namespace. Needs root.
pub fn sysstat_on_tree(tree: &Path, args: &[&str]) -> Result<Run, String> {
    sysstat_on_tree_with_env(tree, &[], args)
}

/// [`sysstat_on_tree`] with `env` set on top of the pinned environment
/// (e.g. `S_COLORS=always`). `env(1)` sets them for iostat alone, not for
/// `unshare` and the shell before it: a preloaded libfaketime creates its
/// shared memory in the first process it loads in, and removes it only
/// when that process exits, which an `exec` never does.
pub fn sysstat_on_tree_with_env(
    tree: &Path,
    env: &[(&str, &str)],
    args: &[&str],
) -> Result<Run, String> {
    let out = pinned(
        Command::new("unshare")
            .args([
                "-m",
                "--propagation",
                "private",
                "sh",
                "-c",
                TREE_SCRIPT,
                "sh",
            ])
            .arg(tree)
            .args(env.iter().map(|(name, value)| format!("{name}={value}")))
            .arg(SYSSTAT)
            .args(args),
    )
    .output()
    .map_err(|e| format!("cannot run unshare: {e}"))?;
    Ok(Run::from(out))
}

/// Why Debian's iostat cannot be run in a namespace here, if it cannot.
pub fn namespace_unavailable() -> Option<String> {
    if unsafe { libc::geteuid() } != 0 {
        return Some("needs root for a private mount namespace: run the tests as root (e.g. sudo -E cargo test)".into());
    }
    if !Path::new(SYSSTAT).exists() {
        return Some(format!("{SYSSTAT} is missing (apt-get install sysstat)"));
    }
    crate::namespace::unavailable()
}
