//! Quoting untrusted text (file contents, recorded names) in error messages:
//! a short prefix, with every byte that is not printable ASCII escaped, so
//! that a bad 10 MB kernel file or a forged recording gives one short line
//! that cannot move the cursor, retitle the terminal or forge a line.

use std::fmt::Write as _;

use super::osname;

/// How many bytes of the text an excerpt shows.
pub const EXCERPT_BYTES: usize = 80;

/// The text in double quotes, cut to [`EXCERPT_BYTES`] bytes: printable
/// ASCII as is, `"` and `\` behind a backslash, `\n`, `\t`, `\r`, and every
/// other byte as `\xNN`. A cut text ends in `...` and gives its length:
/// `"xxxx..." (10000000 bytes)`.
pub fn excerpt(text: impl AsRef<[u8]>) -> String {
    let text = text.as_ref();
    let shown = &text[..text.len().min(EXCERPT_BYTES)];
    let mut out = String::with_capacity(shown.len() + 2);
    out.push('"');
    escape_into(&mut out, shown, true);
    out.push('"');
    if shown.len() < text.len() {
        out.insert_str(out.len() - 1, "...");
        let _ = write!(out, " ({} bytes)", text.len());
    }
    out
}

/// [`excerpt`] of an argument or a name, which carries the bytes that are
/// not UTF-8 it was given ([`osname`]): shown as those bytes. (A file's
/// contents are quoted with [`excerpt`], as they are.)
pub fn excerpt_arg(text: &str) -> String {
    excerpt(osname::to_bytes(text))
}

/// A message that may carry untrusted text (a parser's error quoting its
/// input), cut to `max` bytes (`...` marks the cut) and escaped as
/// [`excerpt`] escapes, quotes left as they are; a byte that is not UTF-8
/// carried in a name ([`osname`]) shows as itself.
pub fn clip(message: &str, max: usize) -> String {
    let bytes = osname::to_bytes(message);
    let shown = &bytes[..bytes.len().min(max)];
    let mut out = String::with_capacity(shown.len() + 3);
    escape_into(&mut out, shown, false);
    if shown.len() < bytes.len() {
        out.push_str("...");
    }
    out
}

fn escape_into(out: &mut String, bytes: &[u8], quoted: bool) {
    for &b in bytes {
        match b {
            b'"' if quoted => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            b'\r' => out.push_str("\\r"),
            b' '..=b'~' => out.push(char::from(b)),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_argument_shows_its_bytes_and_a_file_its_text() {
        let arg = osname::from_bytes(b"a\xff");
        assert_eq!(excerpt_arg(&arg), "\"a\\xff\"");
        // A file's U+10FF31 is that character's bytes, not a byte 0x31.
        assert_eq!(excerpt("a\u{10ff31}"), "\"a\\xf4\\x8f\\xbc\\xb1\"");
    }

    #[test]
    fn short_text_is_quoted_whole_with_controls_escaped() {
        assert_eq!(excerpt("config=0x1"), "\"config=0x1\"");
        assert_eq!(
            excerpt("a\x1b]0;owned\x07\"b\\\n\u{e9}"),
            "\"a\\x1b]0;owned\\x07\\\"b\\\\\\n\\xc3\\xa9\""
        );
        assert_eq!(excerpt(b"\xff\x00"), "\"\\xff\\x00\"");
        assert_eq!(excerpt(""), "\"\"");
    }

    #[test]
    fn long_text_is_cut_to_a_prefix_with_its_length() {
        let big = "x".repeat(10_000_000);
        let shown = excerpt(&big);
        assert_eq!(shown, format!("\"{}...\" (10000000 bytes)", "x".repeat(80)));
        let exact = "y".repeat(EXCERPT_BYTES);
        assert_eq!(excerpt(&exact), format!("\"{exact}\""));
    }

    #[test]
    fn messages_are_clipped_and_escaped_but_keep_their_quotes() {
        assert_eq!(
            clip("unknown variant `a\x1bb`", 100),
            "unknown variant `a\\x1bb`"
        );
        assert_eq!(clip("\"abcdef\"", 4), "\"abc...");
    }
}
