//! Names from the kernel or a recording, made safe to print.
//!
//! Device, PMU and event names, serial numbers and uname fields are whatever
//! bytes a file or directory holds. Printed raw, `ESC ] 0;… BEL` retitles a
//! terminal, `ESC [2J` clears it, a newline forges a table row and a `"`
//! breaks a JSON document. Every renderer passes such names through here:
//!
//! * [`text`] for people: control characters become `\n`, `\t`, `\r` or
//!   `\xNN` (C0 and DEL) or `\u{NN}` (C1, the bidirectional-text
//!   controls, which can reorder what a terminal shows, and the line and
//!   paragraph separators), and a byte that is
//!   not UTF-8 becomes `\xNN` (80 to ff). Everything else, a backslash
//!   included, prints as it is: udev's names (`/dev/disk/by-label/EFI\x20System`)
//!   hold backslashes already, and sysstat prints them as they are, so a
//!   name shown is a name that can be typed back. The text form of a name
//!   that holds the characters `\x1b` and that of one holding an escape
//!   character are alike; JSON tells them apart;
//! * [`push_json`] for JSON strings (RFC 8259), valid for any text, which
//!   gives every name back exactly: control characters, C1 and the
//!   bidirectional controls included, are `\n`, `\t`... or `\uXXXX`
//!   escapes, so no JSON document carries one raw to a terminal.
//!
//! CSV and Prometheus label values have no escape for a control character
//! (CSV none at all, the exposition format only `\\`, `\"` and `\n`): their
//! writers show a name as [`text`] does, then quote or escape that, so a
//! CSV file or an exposition printed on a terminal cannot retitle it or
//! clear it either. A name that holds such a character is not given back
//! exactly there (the text `\x1b` and an escape character look alike), as
//! in text; JSON and NDJSON tell them apart. Bytes that are not UTF-8
//! reach here as [`osname`]'s raw byte characters; every
//! format shows each as the text `\xNN`, as [`text`] does.

use std::borrow::Cow;
use std::fmt::Write as _;

use super::osname::{self, holds_raw_bytes, show_raw_bytes};

/// Whether `c` must be escaped in text for a terminal: control
/// characters, the bidirectional controls, and the line and paragraph
/// separators (U+2028, U+2029), which JSON allows raw but which end a line
/// for many readers (Python's `splitlines`, JavaScript before ES2019).
fn unsafe_in_text(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200e}' | '\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// `text` (a name, or a message quoting names) with every control character
/// and every byte that is not UTF-8 escaped; borrowed when nothing needed
/// escaping (the usual case).
pub fn text(name: &str) -> Cow<'_, str> {
    // Bytes that are not UTF-8 first, as every other printer shows them.
    let shown = show_raw_bytes(name);
    if !shown.chars().any(unsafe_in_text) {
        return shown;
    }
    let mut s = String::with_capacity(shown.len() + 8);
    for c in shown.chars() {
        if !unsafe_in_text(c) {
            s.push(c);
            continue;
        }
        let _ = match c {
            '\n' => write!(s, "\\n"),
            '\t' => write!(s, "\\t"),
            '\r' => write!(s, "\\r"),
            c if u32::from(c) < 0x80 => write!(s, "\\x{:02x}", u32::from(c)),
            c => write!(s, "\\u{{{:x}}}", u32::from(c)),
        };
    }
    Cow::Owned(s)
}

/// Appends `text` as the inside of a JSON string: `"` and `\` escaped,
/// C0 controls as `\n`, `\t`, ... or `\u00XX`, DEL, C1 and the
/// bidirectional controls as `\uXXXX`, everything else as is (JSON is
/// UTF-8). serde_json reads back the same text; it writes DEL, C1 and the
/// bidirectional controls raw, which a terminal would act on.
pub fn push_json(s: &mut String, text: &str) {
    let text = show_raw_bytes(text);
    let text = text.as_ref();
    let mut plain = 0;
    for (i, c) in text.char_indices() {
        let escape = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            '\u{8}' => "\\b",
            '\u{c}' => "\\f",
            c if unsafe_in_text(c) => "",
            _ => continue,
        };
        s.push_str(&text[plain..i]);
        if escape.is_empty() {
            let _ = write!(s, "\\u{:04x}", u32::from(c));
        } else {
            s.push_str(escape);
        }
        plain = i + c.len_utf8();
    }
    s.push_str(&text[plain..]);
}

/// `text` as the inside of a JSON string (see [`push_json`]).
pub fn json(text: &str) -> Cow<'_, str> {
    if !text
        .chars()
        .any(|c| c == '"' || c == '\\' || unsafe_in_text(c))
        && !holds_raw_bytes(text)
    {
        return Cow::Borrowed(text);
    }
    let mut s = String::with_capacity(text.len() + 8);
    push_json(&mut s, text);
    Cow::Owned(s)
}

/// `text` in double quotes, escaped as Rust's `{:?}` escapes a string,
/// but with a byte that is not UTF-8, carried in an argument or a name
/// ([`osname`]), as `\xNN`: the quoting of the programs' messages.
pub fn quoted(text: &str) -> String {
    let mut s = String::with_capacity(text.len() + 2);
    s.push('"');
    for c in text.chars() {
        match osname::raw_byte(c) {
            Some(b) => {
                let _ = write!(s, "\\x{b:02x}");
            }
            None => s.extend(c.escape_debug()),
        }
    }
    s.push('"');
    s
}

/// `path` for a message: [`text`] of its bytes, so that a byte that is not
/// UTF-8 shows as `\xNN` (not as U+FFFD) and a control character cannot
/// act on the terminal.
pub fn path(path: &std::path::Path) -> String {
    text(&osname::from_path(path)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_is_debug_but_for_raw_bytes() {
        for plain in ["2", "a\"b\\c", "tab\there", "\u{1b}[2J", "é"] {
            assert_eq!(quoted(plain), format!("{plain:?}"));
        }
        let raw = osname::from_bytes(b"sd\xff\n");
        assert_eq!(quoted(&raw), "\"sd\\xff\\n\"");
        let path = std::path::PathBuf::from(osname::to_os_string(&raw));
        assert_eq!(super::path(&path), "sd\\xff\\n");
    }

    #[test]
    fn control_characters_are_escaped_for_terminals() {
        assert_eq!(text("sda"), "sda");
        assert!(matches!(text("nvme0n1 é✓"), Cow::Borrowed(_)));
        assert_eq!(text("a\x1b]0;pwned\x07b"), "a\\x1b]0;pwned\\x07b");
        assert_eq!(text("x\x1b[2J\ny\tz\r"), "x\\x1b[2J\\ny\\tz\\r");
        assert!(matches!(
            text("EFI\\x20System\\x20Partition"),
            Cow::Borrowed(_)
        ));
        assert_eq!(text("\0\x7f\u{9b}\u{202e}"), "\\x00\\x7f\\u{9b}\\u{202e}");
    }

    #[test]
    fn escaped_text_holds_no_control_characters() {
        for name in ["\n", "\x1b[2J", "a\u{9b}b", "\u{202e}gpj.exe", "\0", "\x7f"] {
            let shown = text(name);
            assert!(!shown.chars().any(char::is_control), "{shown:?}");
            assert!(!shown.chars().any(unsafe_in_text), "{shown:?}");
            assert_ne!(shown, name);
            // A message quoting escaped names is escaped again as a whole:
            // that must change nothing.
            assert_eq!(text(&shown), shown);
        }
    }

    #[test]
    fn bytes_that_are_not_utf8_show_as_hex_in_text_and_json() {
        let name = crate::common::osname::from_bytes(b"a\xff\\\xc3");
        assert_eq!(text(&name), "a\\xff\\\\xc3");
        let quoted = format!("\"{}\"", json(&name));
        assert_eq!(
            serde_json::from_str::<String>(&quoted).unwrap(),
            "a\\xff\\\\xc3"
        );
        // A character of the plane that is not a raw byte is left as it is.
        assert_eq!(json("\u{10fefd}"), "\u{10fefd}");
    }

    #[test]
    fn json_strings_are_escaped_like_serde_json() {
        for s in [
            "plain",
            "a\"b\\c",
            "tab\tnew\nline\r",
            "\u{1}\u{1f}\u{8}\u{c}\x1b",
            "é ✓",
            "",
        ] {
            let quoted = format!("\"{}\"", json(s));
            assert_eq!(quoted, serde_json::to_string(s).unwrap(), "{s:?}");
            assert_eq!(serde_json::from_str::<String>(&quoted).unwrap(), s);
        }
    }

    #[test]
    fn json_strings_carry_no_terminal_control_raw() {
        let name = "a\x7f\u{9b}2J\u{202e}b\u{2066}\u{2028}\u{2029}";
        let quoted = format!("\"{}\"", json(name));
        assert_eq!(quoted, r#""a\u007f\u009b2J\u202eb\u2066\u2028\u2029""#);
        assert_eq!(serde_json::from_str::<String>(&quoted).unwrap(), name);
    }
}
