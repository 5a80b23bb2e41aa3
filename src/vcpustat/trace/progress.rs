//! Progress on standard error during long work, only when it is a terminal.
//!
//! One status line, rewritten in place (`\r` and erase-line) at most five
//! times a second and erased when the work is done, so that the final output
//! and any error message start on a clean line. When standard error is not a
//! terminal (a pipe, a file, a test), nothing at all is written.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// The shortest time between two updates of the line.
const EVERY: Duration = Duration::from_millis(200);

/// A status line on standard error.
#[derive(Debug)]
pub struct Progress {
    enabled: bool,
    last: Option<Instant>,
    shown: bool,
}

impl Progress {
    /// Progress that shows only when standard error is a terminal.
    pub fn on_stderr() -> Progress {
        Progress {
            enabled: std::io::stderr().is_terminal(),
            last: None,
            shown: false,
        }
    }

    /// Progress that never shows.
    pub fn hidden() -> Progress {
        Progress {
            enabled: false,
            last: None,
            shown: false,
        }
    }

    /// Shows the line `text` makes, unless it was updated less than 200 ms
    /// ago (`text` is then not called).
    pub fn show(&mut self, text: impl FnOnce() -> String) {
        if !self.enabled || self.last.is_some_and(|t| t.elapsed() < EVERY) {
            return;
        }
        self.last = Some(Instant::now());
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[K{}", text());
        let _ = err.flush();
        self.shown = true;
    }

    /// Erases the line, if it was shown.
    pub fn clear(&mut self) {
        if self.shown {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
            self.shown = false;
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.clear();
    }
}
