//! Names from the kernel as Rust strings, without losing a byte.
//!
//! A directory entry, a `/proc/diskstats` device name or a link target is
//! whatever bytes the kernel or a `--sysroot` tree holds, not always UTF-8.
//! sysstat prints such a device like any other. Read with
//! `String::from_utf8_lossy`, two names that differ only in their invalid
//! bytes would become one (and the name could no longer open its own
//! `/sys/block/<name>/stat`); skipped, the device would vanish from the
//! report without a word.
//!
//! So each byte that is not part of valid UTF-8 is carried as one
//! character of a reserved block at the top of Unicode's last private-use
//! plane, U+10FF00 + byte. A name that already holds a character of that
//! block has its bytes carried the same way, so the mapping is one to one
//! and [`to_bytes`] gives back exactly the bytes [`from_bytes`] was given.
//! The names' printers (`escape`, the CSV, Prometheus and SVG writers) show
//! such a byte as `\xNN`.

use std::borrow::Cow;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::os::unix::ffi::OsStringExt;

/// The first character of the reserved block: byte `b` is `RAW_BASE + b`.
const RAW_BASE: u32 = 0x10_FF00;

/// Every character of the reserved block is encoded as UTF-8 starting with
/// this byte (as is every other character from U+100000 on): a name without
/// it needs no work either way.
const PLANE_16_LEAD: u8 = 0xF4;

/// The raw byte character `c` carries, if it is one.
pub fn raw_byte(c: char) -> Option<u8> {
    u32::from(c)
        .checked_sub(RAW_BASE)
        .and_then(|b| u8::try_from(b).ok())
}

/// Whether `text` holds a raw byte character.
pub fn holds_raw_bytes(text: &str) -> bool {
    text.as_bytes().contains(&PLANE_16_LEAD) && text.chars().any(|c| raw_byte(c).is_some())
}

/// `bytes` as a string; borrowed when it is UTF-8 without reserved
/// characters (every name the kernel makes).
pub fn from_bytes(bytes: &[u8]) -> Cow<'_, str> {
    if let Ok(text) = std::str::from_utf8(bytes)
        && !holds_raw_bytes(text)
    {
        return Cow::Borrowed(text);
    }
    let mut s = String::with_capacity(bytes.len() * 2);
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match raw_byte(c) {
                None => s.push(c),
                Some(_) => push_raw(&mut s, c.encode_utf8(&mut [0; 4]).as_bytes()),
            }
        }
        push_raw(&mut s, chunk.invalid());
    }
    Cow::Owned(s)
}

fn push_raw(s: &mut String, bytes: &[u8]) {
    for &b in bytes {
        s.push(
            char::from_u32(RAW_BASE + u32::from(b)).expect("U+10FF00..=U+10FFFF are characters"),
        );
    }
}

/// The bytes [`from_bytes`] made `text` from (UTF-8 for any other string).
pub fn to_bytes(text: &str) -> Cow<'_, [u8]> {
    if !holds_raw_bytes(text) {
        return Cow::Borrowed(text.as_bytes());
    }
    let mut bytes = Vec::with_capacity(text.len());
    for c in text.chars() {
        match raw_byte(c) {
            Some(b) => bytes.push(b),
            None => bytes.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
    Cow::Owned(bytes)
}

/// `text` cut to at most `max` bytes (see [`to_bytes`]), as C's `strncpy`
/// or `%.*s` cuts it: a character cut in two keeps its first bytes, as raw
/// bytes. Borrowed when `text` is short enough.
pub fn truncate_bytes(text: &str, max: usize) -> Cow<'_, str> {
    let bytes = to_bytes(text);
    if bytes.len() <= max {
        return Cow::Borrowed(text);
    }
    Cow::Owned(from_bytes(&bytes[..max]).into_owned())
}

/// `path` as a name ([`from_bytes`] of its bytes), for output whose
/// printers escape what they must themselves.
pub fn from_path(path: &std::path::Path) -> Cow<'_, str> {
    use std::os::unix::ffi::OsStrExt;
    from_bytes(path.as_os_str().as_bytes())
}

/// `text` as an operating-system path or name (see [`to_bytes`]).
pub fn to_os_string(text: &str) -> OsString {
    OsString::from_vec(to_bytes(text).into_owned())
}

/// `text` with each raw byte shown as `\xNN` (lower-case hex), for the
/// printers of formats that hold only text; borrowed when it has none.
pub fn show_raw_bytes(text: &str) -> Cow<'_, str> {
    if !holds_raw_bytes(text) {
        return Cow::Borrowed(text);
    }
    let mut s = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match raw_byte(c) {
            Some(b) => {
                let _ = write!(s, "\\x{b:02x}");
            }
            None => s.push(c),
        }
    }
    Cow::Owned(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_names_are_borrowed_unchanged() {
        for name in ["sda", "nvme0n1p1", "cciss!c0d0", "é✓", "", "\u{10fefd}"] {
            assert!(matches!(from_bytes(name.as_bytes()), Cow::Borrowed(n) if n == name));
            assert!(matches!(to_bytes(name), Cow::Borrowed(b) if b == name.as_bytes()));
        }
    }

    #[test]
    fn cuts_count_bytes_and_keep_half_a_character_as_a_raw_byte() {
        assert!(matches!(truncate_bytes("sda", 3), Cow::Borrowed("sda")));
        assert_eq!(truncate_bytes("sda1", 3), "sda");
        // "é" is c3 a9: cut after one byte, the c3 stays, as a raw byte.
        let cut = truncate_bytes("aé", 2);
        assert_eq!(to_bytes(&cut).as_ref(), b"a\xc3");
        assert_eq!(show_raw_bytes(&cut), "a\\xc3");
        // A raw byte counts one byte, not the four of its character.
        let raw = from_bytes(b"\xff\xfe\xfd");
        assert_eq!(to_bytes(&truncate_bytes(&raw, 2)).as_ref(), b"\xff\xfe");
    }

    #[test]
    fn invalid_bytes_become_one_character_each_and_come_back() {
        let name = from_bytes(b"x\xff\xfe");
        assert_eq!(name.chars().count(), 3);
        assert_eq!(name.chars().nth(1).and_then(raw_byte), Some(0xff));
        assert_eq!(to_bytes(&name).as_ref(), b"x\xff\xfe");
        assert_eq!(show_raw_bytes(&name), "x\\xff\\xfe");
    }

    #[test]
    fn distinct_byte_strings_stay_distinct_and_round_trip() {
        let reserved = "\u{10ff41}".as_bytes().to_vec();
        let inputs: Vec<Vec<u8>> = vec![
            b"a\xffb".to_vec(),
            b"a\xfeb".to_vec(),
            "a\u{fffd}b".as_bytes().to_vec(),
            reserved.clone(),
            [b"x".as_slice(), &reserved, b"\xc3"].concat(),
            b"\xf4\x8f\xbc".to_vec(),
            b"\xe2\x9c".to_vec(),
            "✓".as_bytes().to_vec(),
        ];
        let names: Vec<String> = inputs.iter().map(|b| from_bytes(b).into_owned()).collect();
        for (i, (input, name)) in inputs.iter().zip(&names).enumerate() {
            assert_eq!(to_bytes(name).as_ref(), input.as_slice(), "{input:?}");
            for other in &names[i + 1..] {
                assert_ne!(name, other);
            }
        }
        assert_eq!(show_raw_bytes(&names[3]), "\\xf4\\x8f\\xbd\\x81");
    }

    #[test]
    fn os_strings_carry_the_bytes() {
        assert_eq!(to_os_string(&from_bytes(b"d\x80")).into_vec(), b"d\x80");
    }
}
