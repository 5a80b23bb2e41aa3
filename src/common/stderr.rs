//! Standard error, written so that it cannot end a run.

use std::fmt;
use std::io::{self, Write};

/// Writes `text` to standard error as `eprint!` does, except that it drops
/// the text when standard error cannot take it (a reader that went away,
/// `2>/dev/full`), where `eprint!` panics: a warning must not end a run
/// that would succeed, nor an error turn its exit status into a panic's.
pub fn print(text: fmt::Arguments) {
    let _ = io::stderr().lock().write_fmt(text);
}
