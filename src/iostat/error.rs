//! The ways a run can fail, each with sysstat's message and exit status.

use std::io;

use crate::common::signals::SignalSetupError;

/// An error that ends iostat-rs.
#[derive(Debug, thiserror::Error)]
pub enum IostatError {
    /// A malformed command line: sysstat prints its usage text, status 1.
    #[error("usage")]
    Usage,
    /// A count that is an interval but not a whole number (`1 0.5`), where
    /// sysstat, which has no such intervals, would take a device name: the
    /// usage text, after a line that says why.
    #[error(
        "the count {0} must be written in digits, a number of reports (a word that reads as \
         an interval is one, not a device name)"
    )]
    CountNotWhole(String),
    /// An option iostat-rs adds (`--record`, `--svg-top`...) without its
    /// value, or with one it cannot take: one line naming it, status 2, as
    /// vcpustat and cxlstat refuse theirs (sysstat's own options keep its
    /// usage text).
    #[error("{0}")]
    OptionValue(String),
    /// `-j TYPE` with no `/dev/disk/by-TYPE` directory.
    #[error("Invalid type of persistent device name")]
    InvalidPersistentType,
    /// A malformed command line after `-f DIR` or `-j TYPE` (the
    /// directories they need, in order): sysstat checks those first, so
    /// this is the error of the first missing one, else
    /// [`IostatError::Usage`].
    #[error("usage")]
    UsageAfterNamedDirs {
        /// The directories, in command-line order.
        dirs: Vec<super::named_dirs::NamedDir>,
        /// `--sysroot DIR`, when given before the error.
        sysroot: Option<std::path::PathBuf>,
    },
    /// `/proc/stat` cannot be opened (sysstat's message, status 2).
    #[error("Cannot open /proc/stat: {0}")]
    CannotOpenStat(String),
    /// `/proc/uptime` cannot be read or parsed (sysstat's message, status 2).
    #[error("Cannot read /proc/uptime")]
    CannotReadUptime,
    /// The source (sysroot, recording) could not be opened, or a replay's
    /// recording does not hold what the options read.
    #[error("{0}")]
    Source(String),
    /// Reading the source failed in a way that is not sysstat's business
    /// (for example a recording that ends in the middle).
    #[error("{path}: {err}")]
    Read {
        /// The kernel path.
        path: String,
        /// What went wrong.
        err: io::Error,
    },
    /// The charts (`--svg`) could not be made or written.
    #[error("{0}")]
    Chart(String),
    /// `--latency` cannot measure (tracefs, privilege, kernel) or replay.
    #[error("--latency: {0}")]
    Latency(String),
    /// The stop-signal handlers could not be set up.
    #[error("{0}")]
    Signals(#[from] SignalSetupError),
    /// Writing the report failed.
    #[error("cannot write output: {0}")]
    Output(#[from] io::Error),
}

impl IostatError {
    /// The exit status sysstat uses for this error.
    pub fn exit_status(&self) -> i32 {
        match self {
            IostatError::Usage
            | IostatError::UsageAfterNamedDirs { .. }
            | IostatError::CountNotWhole(_)
            | IostatError::InvalidPersistentType => 1,
            IostatError::CannotOpenStat(_)
            | IostatError::CannotReadUptime
            | IostatError::OptionValue(_) => 2,
            IostatError::Source(_)
            | IostatError::Read { .. }
            | IostatError::Chart(_)
            | IostatError::Latency(_)
            | IostatError::Signals(_)
            | IostatError::Output(_) => 1,
        }
    }

    /// Whether the message is sysstat's own, printed without a program prefix.
    pub fn is_sysstat_message(&self) -> bool {
        matches!(
            self,
            IostatError::InvalidPersistentType
                | IostatError::CannotOpenStat(_)
                | IostatError::CannotReadUptime
        )
    }
}

/// `strerror(3)` text of an I/O error, without Rust's " (os error N)" suffix.
pub fn strerror(err: &io::Error) -> String {
    let text = err.to_string();
    match text.find(" (os error ") {
        Some(cut) => text[..cut].to_string(),
        None => text,
    }
}
