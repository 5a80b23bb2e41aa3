//! The kernel interface: reading the state, switching the statistics and
//! setting the drain frequency, all through a [`Source`], with each errno
//! turned into its explanation.

use std::io;

use crate::common::source::Source;

use super::counters::{self, FREQ_PATH, STATS_PATH, Snapshot};
use super::error::{Access, VcpuError, errno_text};

/// Where `lparcfg` lives (both names exist on pseries).
pub const LPARCFG_PATHS: [&str; 2] = ["/proc/powerpc/lparcfg", "/proc/ppc64/lparcfg"];

/// Reads and parses the statistics file into `buf`'s allocation.
pub fn read_snapshot(source: &dyn Source, buf: &mut Vec<u8>) -> Result<Snapshot, VcpuError> {
    source
        .read_into(STATS_PATH, buf)
        .map_err(|e| read_error(source, STATS_PATH, e))?;
    counters::parse(buf).map_err(|error| VcpuError::Parse {
        path: STATS_PATH,
        error,
    })
}

/// Reads the drain frequency.
pub fn read_freq(source: &dyn Source) -> Result<i32, VcpuError> {
    let text = source
        .read_string(FREQ_PATH)
        .map_err(|e| read_error(source, FREQ_PATH, e))?;
    // The kernel takes 1 to HZ only: any other value is not one it set, and
    // would be "put back" at the end of a run.
    text.trim()
        .parse()
        .ok()
        .filter(|&freq: &i32| freq >= 1)
        .ok_or(VcpuError::Parse {
            path: FREQ_PATH,
            error: counters::ParseError {
                line: 1,
                expected: "a decimal frequency of 1 or more",
            },
        })
}

/// Whether the statistics are on.
pub fn read_on(source: &dyn Source) -> Result<bool, VcpuError> {
    Ok(read_snapshot(source, &mut Vec::new())? != Snapshot::Off)
}

/// Switches the statistics on or off with one write of `"1\n"` or `"0\n"`.
/// Switching on resets every counter; writing the current state is a no-op.
/// A copy of the file on disk (a `--sysroot` tree of plain files) is not
/// written: it would then hold `0` where it held `off`.
pub fn switch(source: &dyn Source, on: bool) -> Result<(), VcpuError> {
    let data: &[u8] = if on { b"1\n" } else { b"0\n" };
    source
        .write_command(STATS_PATH, data)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::EBUSY) if on => VcpuError::Busy,
            // vcpudispatch_stats_write: "1" is valid, so these are the
            // kernel's own failures (arch/powerpc/platforms/pseries/lpar.c).
            Some(libc::EINVAL) if on => VcpuError::EnableFailed {
                errno: errno_text(&e),
                why: "the kernel could not set up its CPU-hotplug work for the dispatch trace \
                      log (dmesg: unable to setup workqueue for DTL processing)",
            },
            Some(libc::ENOMEM) if on => VcpuError::EnableFailed {
                errno: errno_text(&e),
                why: "the kernel could not allocate its CPU associativity tables; free \
                      memory and retry",
            },
            _ => write_error(source, STATS_PATH, e),
        })
}

/// Sets the drain frequency with one write of `"N\n"`.
pub fn set_freq(source: &dyn Source, freq: i32) -> Result<(), VcpuError> {
    source
        .write_file(FREQ_PATH, format!("{freq}\n").as_bytes())
        .map_err(|e| match e.raw_os_error() {
            Some(libc::EINVAL | libc::ERANGE) => VcpuError::FreqRejected {
                freq,
                errno: errno_text(&e),
            },
            _ => write_error(source, FREQ_PATH, e),
        })
}

fn read_error(source: &dyn Source, path: &'static str, err: io::Error) -> VcpuError {
    common_error(source, Access::Read, path, err)
}

fn write_error(source: &dyn Source, path: &'static str, err: io::Error) -> VcpuError {
    if err.kind() == io::ErrorKind::ReadOnlyFilesystem && !source.is_live() {
        return VcpuError::Replay(format!(
            "cannot write to {path}: a replay never changes the system"
        ));
    }
    common_error(source, Access::Write, path, err)
}

fn common_error(
    source: &dyn Source,
    access: Access,
    path: &'static str,
    err: io::Error,
) -> VcpuError {
    match err.raw_os_error() {
        Some(libc::EACCES | libc::EPERM) => VcpuError::NeedsRoot {
            access,
            path,
            errno: errno_text(&err),
        },
        // Only a missing statistics file says the kernel has none; any
        // other missing file is named as it is.
        _ if err.kind() == io::ErrorKind::NotFound && path == STATS_PATH => missing_files(source),
        _ => VcpuError::Io {
            access,
            path,
            source: err,
        },
    }
}

/// Explains why the statistics files are missing, from `lparcfg`.
pub fn missing_files(source: &dyn Source) -> VcpuError {
    for path in LPARCFG_PATHS {
        if let Ok(text) = source.read_string(path) {
            if shared_processor_mode(&text) == Some(false) {
                return VcpuError::Dedicated;
            }
            break;
        }
    }
    VcpuError::Unsupported
}

/// The `shared_processor_mode=` line of `lparcfg`, if present.
pub fn shared_processor_mode(lparcfg: &str) -> Option<bool> {
    lparcfg.lines().find_map(
        |line| match line.trim().strip_prefix("shared_processor_mode=")? {
            "0" => Some(false),
            "1" => Some(true),
            _ => None,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_shared_processor_mode() {
        let text = "lparcfg 1.9\npartition_id=3\nshared_processor_mode=0\n";
        assert_eq!(shared_processor_mode(text), Some(false));
        assert_eq!(
            shared_processor_mode("shared_processor_mode=1\n"),
            Some(true)
        );
        assert_eq!(shared_processor_mode("partition_id=3\n"), None);
    }
}
