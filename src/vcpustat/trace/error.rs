//! The errors of `vcpustat trace`.

use std::io;

use crate::common::signals::SignalSetupError;

use super::record::explain_open_error;

/// Why a trace command failed. Every message names the file or argument.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The kernel may crash when the DTL is read (`--force` overrides).
    #[error("refusing to read the DTL: {0}; use --force to read it anyway")]
    UnsafeKernel(String),
    /// A DTL or debugfs file could not be opened or written.
    #[error("{0}")]
    Open(String),
    /// Reading or writing failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The underlying error.
        source: io::Error,
    },
    /// The stop-signal handlers could not be set up.
    #[error("{0}")]
    Signals(#[from] SignalSetupError),
    /// Bad input: a recording, an argument, a kernel file's contents.
    #[error("{0}")]
    Input(String),
}

impl TraceError {
    /// An open/write failure of `path`, with the reason explained.
    pub fn open(path: &str, err: io::Error) -> TraceError {
        TraceError::Open(explain_open_error(path, &err))
    }

    /// An I/O failure while doing `what`.
    pub fn io(what: String, source: io::Error) -> TraceError {
        TraceError::Io { what, source }
    }
}
