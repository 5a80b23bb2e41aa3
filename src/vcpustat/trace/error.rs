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
    /// The memory limits leave too little to be sure of putting
    /// `dtl_event_mask` back once the rings are open.
    #[error(
        "not enough memory for this recording under the limits (ulimit -v, ulimit -d): \
         before it sets dtl_event_mask, vcpustat makes sure of {} MB free, as out of memory \
         it could not set the mask back; nothing was changed",
        .bytes.div_ceil(1 << 20)
    )]
    NoRoom {
        /// The room it asked for.
        bytes: usize,
    },
    /// A stop signal (its number) came while another vcpustat run held
    /// `dtl_event_mask`: no DTL entry was recorded, the mask was not
    /// changed, and the run ends with status 128 + N and no message, as an
    /// interval run stopped while it meets the others.
    #[error(
        "stopped by signal {0} while waiting for another vcpustat run to put dtl_event_mask back"
    )]
    Stopped(i32),
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

    /// The exit status: 4 (out of memory) for too little room, 128 + N for
    /// stop signal N, 1 otherwise.
    pub fn exit_status(&self) -> i32 {
        match self {
            TraceError::NoRoom { .. } => crate::common::alloc::OUT_OF_MEMORY_STATUS,
            TraceError::Stopped(signal) => 128 + signal,
            _ => 1,
        }
    }
}
