//! Terms (`name=value`, `name`) as they appear in `events/` files and in
//! event specifications, and the parser of `events/` file text.

use crate::common::excerpt::excerpt_arg;
use crate::common::osname;

/// One term: `name=value`, or a bare `name` (an event name, or a flag meaning 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    /// The term name.
    pub name: String,
    /// The value, when one was given.
    pub value: Option<u64>,
}

/// Parses a number as perf does: `0x` hexadecimal, otherwise decimal.
pub fn parse_number(text: &str) -> Option<u64> {
    let text = text.trim();
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) if !hex.is_empty() => u64::from_str_radix(hex, 16).ok(),
        Some(_) => None,
        None if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) => text.parse().ok(),
        None => None,
    }
}

/// Parses one comma-separated term list (`config=0x1,threshold=1`, `edge`).
///
/// Names are letters, digits, `_`, `-` and `.`; a value is a number.
pub fn parse_terms(text: &str) -> Result<Vec<Term>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("empty term list".to_string());
    }
    text.split(',').map(parse_term).collect()
}

/// Parses one term.
pub fn parse_term(text: &str) -> Result<Term, String> {
    let text = text.trim();
    let (name, value) = match text.split_once('=') {
        Some((name, value)) => {
            let number = parse_number(value).ok_or_else(|| {
                format!(
                    "{}: expected a number after '=' (decimal or 0x hex)",
                    excerpt_arg(text)
                )
            })?;
            (name.trim(), Some(number))
        }
        None => (text, None),
    };
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
    {
        return Err(format!(
            "{}: expected NAME or NAME=VALUE",
            excerpt_arg(text)
        ));
    }
    Ok(Term {
        name: name.to_string(),
        value,
    })
}

/// Parses the text of an `events/<name>` file: terms with values
/// (`config=0x1e98000000000001` for cxl_pmu; `event=0x3c,umask=1` elsewhere),
/// or bare flags, which mean 1 there as in perf (`event=0x3c,edge`).
///
/// Each character of the file is itself: the errors quote a character of
/// [`osname`]'s reserved block as its UTF-8 bytes, where the same
/// character in an argument carries one byte.
pub fn parse_event_file(text: &str) -> Result<Vec<Term>, String> {
    if text.trim().is_empty() {
        return Err("expected terms such as config=0x1e98000000000001, found an empty file".into());
    }
    parse_terms(&osname::from_bytes(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_hex_with_0x_and_decimal_otherwise() {
        assert_eq!(parse_number("0x1e98"), Some(0x1e98));
        assert_eq!(parse_number("10"), Some(10));
        assert_eq!(parse_number("0x"), None);
        assert_eq!(parse_number("-1"), None);
        assert_eq!(parse_number("1e3"), None);
        assert_eq!(parse_number("0x1_0000_0000_0000_0000"), None);
    }

    #[test]
    fn event_files_hold_terms_and_flags() {
        let terms = parse_event_file("config=0x1e98000000000001\n").unwrap();
        assert_eq!(
            terms,
            vec![Term {
                name: "config".into(),
                value: Some(0x1e98_0000_0000_0001)
            }]
        );
        let terms = parse_event_file("event=0x3c,umask=1").unwrap();
        assert_eq!(terms.len(), 2);
        let flag = parse_event_file("config=0x5,edge").unwrap();
        assert_eq!(flag[1].value, None, "a bare flag, which applies as 1");
        assert!(parse_event_file("").is_err());
        assert!(parse_event_file("config=zz").is_err());
    }

    #[test]
    fn an_event_file_is_quoted_as_its_bytes() {
        // U+10FFFF in a file is four bytes; in an argument (a -e
        // specification) the same character carries the byte 0xff.
        let err = parse_event_file("config=\u{10ffff}").unwrap_err();
        assert!(err.starts_with(r#""config=\xf4\x8f\xbf\xbf": "#), "{err}");
        let err = parse_terms("config=\u{10ffff}").unwrap_err();
        assert!(err.starts_with(r#""config=\xff": "#), "{err}");
    }

    #[test]
    fn term_lists_take_flags_and_refuse_junk() {
        let terms = parse_terms("vid=0x19e5,gid=0,mask=0xff,edge").unwrap();
        assert_eq!(
            terms[0],
            Term {
                name: "vid".into(),
                value: Some(0x19e5)
            }
        );
        assert_eq!(
            terms[3],
            Term {
                name: "edge".into(),
                value: None
            }
        );
        assert!(parse_terms("a=1,,b=2").is_err());
        assert!(parse_terms("a b=1").is_err());
    }
}
