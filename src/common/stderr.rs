//! Standard error, written so that it cannot end a run.

use std::cell::RefCell;
use std::fmt::{self, Write as _};
use std::io::{self, Write};

thread_local! {
    /// A copy of what [`print()`] writes while [`transcript`] runs.
    static TRANSCRIPT: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Writes `text` to standard error as `eprint!` does, except that it drops
/// the text when standard error cannot take it (a reader that went away,
/// `2>/dev/full`), where `eprint!` panics: a warning must not end a run
/// that would succeed, nor an error turn its exit status into a panic's.
pub fn print(text: fmt::Arguments) {
    TRANSCRIPT.with_borrow_mut(|kept| {
        if let Some(kept) = kept {
            let _ = kept.write_fmt(text);
        }
    });
    let _ = io::stderr().lock().write_fmt(text);
}

/// Runs `report` and gives back its result with what it printed through
/// [`print()`] meanwhile, byte for byte (on this thread): the error lines
/// of a refused run, which its recording keeps for a replay to print
/// ([`crate::common::cli::end_failed`]).
pub fn transcript<T>(report: impl FnOnce() -> T) -> (T, String) {
    TRANSCRIPT.set(Some(String::new()));
    let result = report();
    (result, TRANSCRIPT.take().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transcript_keeps_what_was_printed_and_only_that() {
        print(format_args!("before\n"));
        let (status, kept) = transcript(|| {
            print(format_args!("tool: {}\n", "one"));
            print(format_args!("two\n"));
            7
        });
        print(format_args!("after\n"));
        assert_eq!((status, kept.as_str()), (7, "tool: one\ntwo\n"));
        let ((), after) = transcript(|| {});
        assert_eq!(after, "");
    }
}
