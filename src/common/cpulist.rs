//! CPU lists as the kernel writes them (`0-3,8,10-11`): `cpumask` and
//! `online` files, topology files and `--cpus` arguments.
//!
//! Every CPU list of every tool is parsed here. Ranges are merged before any
//! CPU is listed, and no number may exceed [`MAX_CPU`], so a list costs at
//! most `MAX_CPU + 1` entries however long or repetitive its text is.

use super::escape::quoted;
use super::osname;

/// The largest CPU number a list may hold.
///
/// Logical CPUs are numbered below the kernel's `NR_CPUS`, at most 8192 in
/// every architecture's Kconfig; the Dispatch Trace Log numbers physical
/// processors with 16 bits. 65535 covers both, and keeps a list of every
/// CPU at 256 KiB.
pub const MAX_CPU: u32 = 65_535;

/// A set of CPU numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuList {
    cpus: Vec<u32>,
}

impl CpuList {
    /// Parses `0-3,8,10-11`. Fails with a message naming the list and the
    /// bad part: not a number, a range that runs backwards, or a CPU above
    /// [`MAX_CPU`].
    pub fn parse(text: &str) -> Result<CpuList, String> {
        let shown = quoted(&shorten(text));
        let bad = |part: &str| {
            format!(
                "invalid CPU list {shown} at {}: expected CPU numbers and ranges like 0-3,8",
                quoted(&shorten(part))
            )
        };
        let mut ranges: Vec<(u32, u32)> = Vec::new();
        for part in text.split(',') {
            let part = part.trim();
            let (first, last) = match part.split_once('-') {
                Some((a, b)) => (a.trim(), b.trim()),
                None => (part, part),
            };
            let number = |s: &str| -> Result<u32, String> {
                if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(bad(part));
                }
                match s.parse::<u32>() {
                    Ok(n) if n <= MAX_CPU => Ok(n),
                    _ => Err(format!(
                        "invalid CPU list {shown}: CPU {} is above the largest CPU number {MAX_CPU}",
                        shorten(s)
                    )),
                }
            };
            let (first, last) = (number(first)?, number(last)?);
            if last < first {
                return Err(bad(part));
            }
            ranges.push((first, last));
        }
        ranges.sort_unstable();
        let mut merged: Vec<(u32, u32)> = Vec::with_capacity(ranges.len());
        for (first, last) in ranges {
            match merged.last_mut() {
                Some(prev) if first <= prev.1.saturating_add(1) => prev.1 = prev.1.max(last),
                _ => merged.push((first, last)),
            }
        }
        let cpus = merged.into_iter().flat_map(|(a, b)| a..=b).collect();
        Ok(CpuList { cpus })
    }

    /// [`CpuList::parse`] of text read from a file, where each character is
    /// itself: its errors quote a character of [`osname`]'s reserved block
    /// as that character's UTF-8 bytes, not as the byte the same character
    /// carries in an argument or a name.
    pub fn parse_file_text(text: &str) -> Result<CpuList, String> {
        CpuList::parse(&osname::from_bytes(text.as_bytes()))
    }

    /// Whether `cpu` is in the list.
    pub fn contains(&self, cpu: u32) -> bool {
        self.cpus.binary_search(&cpu).is_ok()
    }

    /// The CPUs, ascending.
    pub fn cpus(&self) -> &[u32] {
        &self.cpus
    }

    /// The CPUs, ascending, as an owned vector.
    pub fn into_vec(self) -> Vec<u32> {
        self.cpus
    }
}

/// The running kernel's list of the CPUs that are online.
pub const ONLINE: &str = "/sys/devices/system/cpu/online";
/// The running kernel's list of the CPUs that may ever come online: the
/// numbers below its `nr_cpu_ids`.
pub const POSSIBLE: &str = "/sys/devices/system/cpu/possible";

/// The CPU list in the file at `path` of the running system (not of a
/// `--sysroot` tree); the reason, naming the file, when it cannot be read
/// or is not a CPU list.
pub fn read_list(path: &str) -> Result<CpuList, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    CpuList::parse(osname::from_bytes(&bytes).trim_end()).map_err(|e| format!("{path}: {e}"))
}

/// `cpus` (ascending) written as the kernel writes a list: runs of
/// consecutive CPUs as ranges (`4-1023`), the rest one by one
/// (`5,7,9-11`).
pub fn format_list(cpus: &[u32]) -> String {
    let mut text = String::new();
    let mut rest = cpus;
    while let Some(&first) = rest.first() {
        let mut run = 1;
        while run < rest.len() && rest[run - 1].checked_add(1) == Some(rest[run]) {
            run += 1;
        }
        let last = rest[run - 1];
        if !text.is_empty() {
            text.push(',');
        }
        if last == first {
            text.push_str(&first.to_string());
        } else {
            text.push_str(&format!("{first}-{last}"));
        }
        rest = &rest[run..];
    }
    text
}

/// `text` cut to a length an error message can show.
fn shorten(text: &str) -> String {
    const LIMIT: usize = 40;
    match text.char_indices().nth(LIMIT) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_string(),
    }
}

impl std::str::FromStr for CpuList {
    type Err = String;

    fn from_str(text: &str) -> Result<CpuList, String> {
        CpuList::parse(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_written_as_the_kernel_writes_them() {
        assert_eq!(format_list(&[]), "");
        assert_eq!(format_list(&[5]), "5");
        assert_eq!(format_list(&[5, 7, 9, 10, 11]), "5,7,9-11");
        let many: Vec<u32> = (4..=1023).chain([MAX_CPU]).collect();
        assert_eq!(format_list(&many), "4-1023,65535");
        assert_eq!(format_list(&[MAX_CPU - 1, MAX_CPU]), "65534-65535");
        assert_eq!(
            format_list(&[u32::MAX - 1, u32::MAX]),
            "4294967294-4294967295"
        );
        // What it writes reads back as the same CPUs.
        let sparse = [0, 2, 3, 4, 8, 65535];
        assert_eq!(
            CpuList::parse(&format_list(&sparse)).unwrap().cpus(),
            sparse
        );
    }

    #[test]
    fn parses_ranges_and_single_cpus() {
        let list = CpuList::parse("8,0-2, 10-11,1").unwrap();
        assert_eq!(list.cpus(), &[0, 1, 2, 8, 10, 11]);
        assert!(list.contains(10));
        assert!(!list.contains(3));
    }

    #[test]
    fn refuses_bad_lists() {
        for bad in ["", "a", "3-1", "1,,2", "-1", "+1", "1-+2", "0-1-2"] {
            let err = CpuList::parse(bad).unwrap_err();
            assert!(err.contains("expected CPU numbers"), "{bad}: {err}");
        }
    }

    #[test]
    fn a_file_shows_its_characters_and_an_argument_its_bytes() {
        // In a file, U+10FF41 is that character: its four bytes.
        let err = CpuList::parse_file_text("1,\u{10ff41}").unwrap_err();
        assert!(err.contains(r#"at "\xf4\x8f\xbd\x81""#), "{err}");
        // In an argument, the same character carries the byte 0x41.
        let err = CpuList::parse("1,\u{10ff41}").unwrap_err();
        assert!(err.contains(r#"at "\x41""#), "{err}");
        assert_eq!(CpuList::parse_file_text("0-2").unwrap().cpus(), [0, 1, 2]);
    }

    #[test]
    fn refuses_cpus_above_the_limit_naming_the_list() {
        for bad in ["0-65536", "65536", "0-99999999", "4294967296"] {
            let err = CpuList::parse(bad).unwrap_err();
            assert!(
                err.contains("above the largest CPU number 65535"),
                "{bad}: {err}"
            );
            assert!(err.contains(&format!("{bad:?}")), "{bad}: {err}");
        }
        assert_eq!(CpuList::parse("65535").unwrap().cpus(), &[65535]);
    }

    #[test]
    fn repeated_and_overlapping_ranges_are_merged_before_expanding() {
        // 10 KB of whole-range repeats: about 1,400 ranges of 65,536 CPUs.
        let text = vec!["0-65535"; 1400].join(",");
        let list = CpuList::parse(&text).unwrap();
        assert_eq!(list.cpus().len(), 65_536);
        assert_eq!(list.cpus()[65_535], 65_535);
        let list = CpuList::parse("5-9,0-3,4,8-12,20").unwrap();
        assert_eq!(list.cpus(), &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 20]);
    }

    #[test]
    fn long_lists_are_cut_in_errors() {
        let text = format!("{},x", vec!["1"; 5000].join(","));
        let err = CpuList::parse(&text).unwrap_err();
        assert!(err.len() < 200, "{err}");
    }
}
