//! vcpustat's errors, each with the one-line explanation a user needs.

use std::fmt;
use std::io;

use crate::common::alloc::OUT_OF_MEMORY_STATUS;

use super::counters::{ParseError, STATS_PATH};

/// What vcpustat was doing with a kernel file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reading it.
    Read,
    /// Writing to it.
    Write,
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Access::Read => "read",
            Access::Write => "write to",
        })
    }
}

/// Everything that can stop vcpustat.
#[derive(Debug, thiserror::Error)]
pub enum VcpuError {
    /// A bad combination of options.
    #[error("{0}")]
    Usage(String),
    /// The files are missing and lparcfg says the processors are dedicated.
    #[error(
        "{STATS_PATH} does not exist: /proc/powerpc/lparcfg says shared_processor_mode=0, \
         so this LPAR has dedicated processors; dispatch statistics exist only on \
         shared-processor LPARs"
    )]
    Dedicated,
    /// The files are missing for another reason.
    #[error(
        "{STATS_PATH} does not exist: dispatch statistics need a pseries shared-processor \
         LPAR running Linux 5.3 or later built with CONFIG_PPC_SPLPAR"
    )]
    Unsupported,
    /// EACCES or EPERM.
    #[error(
        "cannot {access} {path}: {errno}: the dispatch statistics files are mode 0600, \
         owned by root; run vcpustat as root"
    )]
    NeedsRoot {
        /// Read or write.
        access: Access,
        /// The file.
        path: &'static str,
        /// `EACCES` or `EPERM`, spelled out.
        errno: String,
    },
    /// EBUSY when enabling.
    #[error(
        "cannot enable dispatch statistics: {STATS_PATH} answered EBUSY: the dispatch \
         trace log is in use by another consumer (a reader of \
         /sys/kernel/debug/powerpc/dtl/cpu-N or a perf vpa_dtl event); stop it and retry"
    )]
    Busy,
    /// The kernel could not switch the statistics on for want of its own
    /// resources (EINVAL, ENOMEM).
    #[error("cannot enable dispatch statistics: {STATS_PATH} answered {errno}: {why}")]
    EnableFailed {
        /// The errno, spelled out.
        errno: String,
        /// What the kernel could not do.
        why: &'static str,
    },
    /// EINVAL or ERANGE on the frequency file.
    #[error(
        "the kernel rejected --freq {freq} ({errno}): the frequency must be between 1 and \
         the kernel's HZ (often 100 or 250 on POWER)"
    )]
    FreqRejected {
        /// The frequency asked for.
        freq: i32,
        /// The errno, spelled out.
        errno: String,
    },
    /// EINVAL or ERANGE on the frequency file, putting back the frequency
    /// from before the run (the kernel's HZ changed, or someone else's
    /// value was out of its range).
    #[error(
        "the kernel refused the frequency from before the run, {before} per second: {errno}; \
         it stays at vcpustat's {ours} (set another with vcpustat --freq N)"
    )]
    FreqNotPutBack {
        /// The frequency before the run, refused.
        before: i32,
        /// The frequency vcpustat set, which stays.
        ours: i32,
        /// The errno, spelled out.
        errno: String,
    },
    /// Any other failure of a kernel file.
    #[error("cannot {access} {path}: {source}")]
    Io {
        /// Read or write.
        access: Access,
        /// The file.
        path: &'static str,
        /// The error.
        source: io::Error,
    },
    /// A kernel file with unexpected contents.
    #[error("{path}: {error}")]
    Parse {
        /// The file.
        path: &'static str,
        /// What was wrong.
        error: ParseError,
    },
    /// `--listen` could not bind or serve.
    #[error("{0}")]
    Listen(#[source] io::Error),
    /// The other vcpustat runs could not be met (another held their lock
    /// too long), or their record could not be written.
    #[error("cannot share the dispatch statistics with other vcpustat runs: {0}")]
    Session(#[source] io::Error),
    /// A replay cannot do what was asked.
    #[error("{0}")]
    Replay(String),
    /// The charts (`--svg`) could not be made or written.
    #[error("{0}")]
    Chart(String),
    /// Writing the report failed.
    #[error("cannot write output: {0}")]
    Output(#[source] io::Error),
    /// A stop signal (this one) came while the changes asked for were
    /// being made: the rest are not made, those made are undone, and the
    /// run ends quietly with 128 + the signal, as one stopped while it
    /// waited for another run.
    #[error("stopped by signal {0} before the changes asked for were made")]
    Stopped(i32),
    /// The memory limits leave too little for a run that changes the
    /// system to be sure of undoing it.
    #[error(
        "not enough memory for this run under the limits (ulimit -v, ulimit -d): before {what}, \
         vcpustat makes sure of {} MB free, as out of memory it could not undo that; nothing \
         was changed",
        .bytes.div_ceil(1 << 20)
    )]
    NoRoom {
        /// The change it would have made.
        what: &'static str,
        /// The room it asked for.
        bytes: usize,
    },
}

impl VcpuError {
    /// The exit status for this error: 2 for usage errors, 4 (out of
    /// memory, [`OUT_OF_MEMORY_STATUS`]) for too little room, 128 + N for
    /// a stop by signal N, 1 otherwise.
    pub fn exit_status(&self) -> i32 {
        match self {
            VcpuError::Usage(_) => 2,
            VcpuError::NoRoom { .. } => OUT_OF_MEMORY_STATUS,
            VcpuError::Stopped(signal) => 128 + signal,
            _ => 1,
        }
    }
}

impl From<io::Error> for VcpuError {
    /// I/O errors that reach the interval loop unannotated come from output.
    fn from(err: io::Error) -> VcpuError {
        VcpuError::Output(err)
    }
}

/// An errno spelled out, e.g. `permission denied (EACCES)`.
pub fn errno_text(err: &io::Error) -> String {
    let name = match err.raw_os_error() {
        Some(libc::EACCES) => "EACCES",
        Some(libc::EPERM) => "EPERM",
        Some(libc::EBUSY) => "EBUSY",
        Some(libc::EINVAL) => "EINVAL",
        Some(libc::ERANGE) => "ERANGE",
        Some(libc::ENOMEM) => "ENOMEM",
        Some(libc::ENOENT) => "ENOENT",
        Some(libc::EIO) => "EIO",
        _ => return err.to_string(),
    };
    let text = err.to_string();
    let text = text
        .split(" (os error")
        .next()
        .unwrap_or(&text)
        .to_lowercase();
    format!("{text} ({name})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errnos_are_spelled_out() {
        let err = io::Error::from_raw_os_error(libc::EACCES);
        assert_eq!(errno_text(&err), "permission denied (EACCES)");
        let other = io::Error::other("boom");
        assert_eq!(errno_text(&other), "boom");
    }
}
