//! Parsing `/proc/powerpc/vcpudispatch_stats`.
//!
//! The file is `off\n` while the statistics are disabled. Otherwise it has one
//! line per online CPU, in ascending order:
//! `cpu<N> <total> <same_cpu> <same_chip> <diff_chip> <far_chip> <numa_home>
//! <numa_remote> <numa_far>`. The kernel keeps the counters as C `int`s and
//! prints them with `seq_put_decimal_ull`, so a counter past 2^31 shows as a
//! sign-extended 64-bit number; values are kept as printed here and reduced
//! modulo 2^32 where they are compared.

use std::fmt;

use crate::common::cpulist::MAX_CPU;

/// Kernel path of the statistics file.
pub const STATS_PATH: &str = "/proc/powerpc/vcpudispatch_stats";
/// Kernel path of the drain frequency file.
pub const FREQ_PATH: &str = "/proc/powerpc/vcpudispatch_stats_freq";
/// Number of counters per CPU line.
pub const FIELDS: usize = 8;

/// Index of each counter in a CPU line, in the kernel's order.
pub mod field {
    /// `total_disp`: dispatches counted.
    pub const TOTAL: usize = 0;
    /// `same_cpu_disp`: on the same core as the previous dispatch (`core`).
    pub const CORE: usize = 1;
    /// `same_chip_disp`: another core of the same chip (`chip`).
    pub const CHIP: usize = 2;
    /// `diff_chip_disp`: another chip (`socket`).
    pub const SOCKET: usize = 3;
    /// `far_chip_disp`: beyond the next NUMA boundary (`cec`).
    pub const CEC: usize = 4;
    /// `numa_home_disp`: on the vCPU's home node (`home`).
    pub const HOME: usize = 5;
    /// `numa_remote_disp`: on a neighbouring node (`adj`).
    pub const ADJ: usize = 6;
    /// `numa_far_disp`: on a node further away (`far`).
    pub const FAR: usize = 7;
}

/// One CPU line: the CPU number and its 8 counters as printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuCounters {
    /// Logical CPU number.
    pub cpu: u32,
    /// The counters, in [`field`] order.
    pub counts: [u64; FIELDS],
}

/// What the statistics file said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Snapshot {
    /// The statistics are disabled (`off`).
    Off,
    /// The statistics are enabled: one entry per online CPU, ascending.
    On(Vec<CpuCounters>),
}

/// A line the parser could not understand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    /// What was expected.
    pub expected: &'static str,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: expected {}", self.line, self.expected)
    }
}

/// Parses the whole statistics file.
pub fn parse(text: &[u8]) -> Result<Snapshot, ParseError> {
    if text == b"off\n" || text == b"off" {
        return Ok(Snapshot::Off);
    }
    // While the statistics are on the kernel prints a line for every online
    // CPU, and there is always one: an empty file is not "on, no CPUs".
    if text.iter().all(u8::is_ascii_whitespace) {
        return Err(ParseError {
            line: 1,
            expected: "\"off\" or one \"cpu<N>\" line per online CPU (the file is empty)",
        });
    }
    let mut cpus = Vec::with_capacity(text.len() / 48 + 1);
    parse_into(text, &mut cpus)?;
    Ok(Snapshot::On(cpus))
}

/// Parses CPU lines into `cpus` (cleared first), reusing its allocation.
pub fn parse_into(text: &[u8], cpus: &mut Vec<CpuCounters>) -> Result<(), ParseError> {
    cpus.clear();
    // The kernel lists each online CPU once, in ascending order, where no
    // number can repeat; lines out of order (which the parser takes) are
    // looked up in a set of the numbers seen, made at the first of them:
    // looked up in the lines before, 65,536 took 8 s.
    let mut seen: Option<Vec<bool>> = None;
    for (index, line) in text.split(|&b| b == b'\n').enumerate() {
        if line.is_empty() {
            continue;
        }
        let counters = parse_line(line).map_err(|expected| ParseError {
            line: index + 1,
            expected,
        })?;
        let cpu = counters.cpu as usize;
        let repeated = if let Some(seen) = seen.as_mut() {
            std::mem::replace(&mut seen[cpu], true)
        } else if cpus.last().is_some_and(|last| counters.cpu <= last.cpu) {
            let mut numbers = vec![false; MAX_CPU as usize + 1];
            for earlier in cpus.iter() {
                numbers[earlier.cpu as usize] = true;
            }
            let repeated = std::mem::replace(&mut numbers[cpu], true);
            seen = Some(numbers);
            repeated
        } else {
            false
        };
        if repeated {
            return Err(ParseError {
                line: index + 1,
                expected: "each CPU once (this CPU's line came before)",
            });
        }
        cpus.push(counters);
    }
    Ok(())
}

fn parse_line(line: &[u8]) -> Result<CpuCounters, &'static str> {
    const SHAPE: &str = "\"cpu<N>\" followed by 8 or more unsigned counters";
    let rest = line.strip_prefix(b"cpu").ok_or(SHAPE)?;
    let mut pos = 0;
    let cpu = next_number(rest, &mut pos, false).ok_or(SHAPE)?;
    // The bound of `--cpus` (MAX_CPU), so that every vCPU the file can
    // name can be chosen; the kernel numbers them below NR_CPUS (8192 at
    // most).
    let cpu = u32::try_from(cpu)
        .ok()
        .filter(|&cpu| cpu <= MAX_CPU)
        .ok_or("a CPU number of at most 65535")?;
    let mut counts = [0u64; FIELDS];
    for slot in &mut counts {
        *slot = next_number(rest, &mut pos, true).ok_or(SHAPE)?;
        // A C int as `seq_put_decimal_ull` prints it: below 2^31, or a
        // negative one sign-extended (2^64 - 2^31 and up); below 2^32 from
        // a printer of unsigned ones. Anything between would be compared
        // modulo 2^32 as a count it is not.
        if (1 << 32..0xffff_ffff_8000_0000).contains(slot) {
            return Err(
                "counters as the kernel prints C ints: below 2^32, or negative \
                        ones sign-extended to 64 bits",
            );
        }
    }
    // Counters a newer kernel may add after the eight are skipped, as
    // powerpc-utils' `sscanf` skips them (and sysstat the fields
    // /proc/diskstats gained): the eight keep their meaning. Anything but
    // counters there is a garbled line.
    if !rest[pos..]
        .split(u8::is_ascii_whitespace)
        .all(|word| word.iter().all(u8::is_ascii_digit))
    {
        return Err(SHAPE);
    }
    Ok(CpuCounters { cpu, counts })
}

/// Reads the decimal number at `*pos` (after whitespace when `spaced`, which
/// is then required), moving `*pos` past it. `None` on anything else or on
/// overflow.
fn next_number(text: &[u8], pos: &mut usize, spaced: bool) -> Option<u64> {
    let start = *pos;
    while *pos < text.len() && text[*pos].is_ascii_whitespace() {
        *pos += 1;
    }
    if spaced == (*pos == start) {
        return None;
    }
    let digits = *pos;
    let mut value: u64 = 0;
    while let Some(&b) = text.get(*pos) {
        if !b.is_ascii_digit() {
            break;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
        *pos += 1;
    }
    if *pos == digits || text.get(*pos).is_some_and(|b| !b.is_ascii_whitespace()) {
        return None;
    }
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_is_its_own_state() {
        assert_eq!(parse(b"off\n"), Ok(Snapshot::Off));
    }

    #[test]
    fn parses_the_documented_example() {
        let snap =
            parse(b"cpu0 6839 4126 2683 30 0 6821 18 0\ncpu1 2515 1274 1229 12 0 2509 6 0\n")
                .unwrap();
        let Snapshot::On(cpus) = snap else {
            panic!("expected counters")
        };
        assert_eq!(cpus.len(), 2);
        assert_eq!(cpus[0].cpu, 0);
        assert_eq!(cpus[0].counts, [6839, 4126, 2683, 30, 0, 6821, 18, 0]);
        assert_eq!(cpus[1].cpu, 1);
        assert_eq!(cpus[1].counts[field::HOME], 2509);
    }

    #[test]
    fn keeps_sign_extended_values_and_gaps() {
        let text = b"cpu0 18446744071562067968 1 2 3 4 5 6 7\ncpu8 1 1 0 0 0 1 0 0\n";
        let Snapshot::On(cpus) = parse(text).unwrap() else {
            panic!("expected counters")
        };
        assert_eq!(cpus[0].counts[0], 18_446_744_071_562_067_968);
        assert_eq!(cpus[1].cpu, 8);
        // No C int prints between 2^32 and the sign-extended negatives: a
        // counter there was read as its value modulo 2^32.
        assert!(parse(b"cpu0 4294967295 1 0 0 0 1 0 0\n").is_ok());
        for value in ["4294967296", "4294967306", "18446744071562067967"] {
            let err = parse(format!("cpu0 {value} 1 0 0 0 1 0 0\n").as_bytes()).unwrap_err();
            assert!(
                err.expected.starts_with("counters as the kernel prints"),
                "{value}"
            );
        }
    }

    #[test]
    fn skips_counters_a_newer_kernel_adds() {
        let text = b"cpu0 1 2 3 4 5 6 7 8 9 99999999999999999999999\ncpu1 1 1 0 0 0 1 0 0\n";
        let Snapshot::On(cpus) = parse(text).unwrap() else {
            panic!("expected counters")
        };
        assert_eq!(cpus[0].counts, [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(cpus[1].counts, [1, 1, 0, 0, 0, 1, 0, 0]);
    }

    #[test]
    fn cpu_numbers_go_as_far_as_cpus_accepts() {
        use crate::common::cpulist::CpuList;
        let Snapshot::On(cpus) = parse(b"cpu65535 1 1 0 0 0 1 0 0\n").unwrap() else {
            panic!("expected counters")
        };
        assert!(CpuList::parse("65535").unwrap().contains(cpus[0].cpu));
        let err = parse(b"cpu0 1 1 0 0 0 1 0 0\ncpu65536 1 1 0 0 0 1 0 0\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "line 2: expected a CPU number of at most 65535"
        );
        assert!(CpuList::parse("65536").is_err());
    }

    #[test]
    fn names_the_bad_line() {
        let err = parse(b"cpu0 1 2 3 4 5 6 7 8\ncpu1 1 2 3\n").unwrap_err();
        assert_eq!(err.line, 2);
        assert!(parse(b"cpu0 1 2 3 4 5 6 7 -8\n").is_err());
        assert!(parse(b"cpu0 1 2 3 4 5 6 7 8 x\n").is_err());
        assert!(parse(b"cpu0 1 2 3 4 5 6 7 8 -9\n").is_err());
        assert!(parse(b"cpu0 1 2 3 4 5 6 7 99999999999999999999\n").is_err());
        assert!(parse(b"of\n").is_err());
        assert!(parse(b"").is_err());
        assert!(parse(b"\n").is_err());
    }

    #[test]
    fn a_cpu_listed_twice_is_refused() {
        // Two rows for cpu0 would count its dispatches twice in `all`.
        let err = parse(b"cpu0 10 5 5 0 0 10 0 0\ncpu0 20 10 10 0 0 20 0 0\n").unwrap_err();
        assert_eq!(err.line, 2);
        assert_eq!(err.expected, "each CPU once (this CPU's line came before)");
        let err = parse(b"cpu2 1 1 0 0 0 1 0 0\ncpu5 1 1 0 0 0 1 0 0\ncpu2 1 1 0 0 0 1 0 0\n");
        assert_eq!(err.unwrap_err().line, 3);
        // Out of order but each once: taken.
        assert!(parse(b"cpu5 1 1 0 0 0 1 0 0\ncpu2 1 1 0 0 0 1 0 0\n").is_ok());
        // A repeat after lines out of order, of a line before them or
        // after: found.
        let line = |cpu: u32| format!("cpu{cpu} 1 1 0 0 0 1 0 0\n");
        for (order, repeat_at) in [
            (&[5, 2, 9, 5][..], 4),
            (&[5, 2, 9, 2], 4),
            (&[5, 2, 9, 9], 4),
            (&[1, 2, 0, 3, 0], 5),
        ] {
            let text: String = order.iter().map(|&cpu| line(cpu)).collect();
            assert_eq!(
                parse(text.as_bytes()).unwrap_err().line,
                repeat_at,
                "{order:?}"
            );
        }
        // 65,536 CPUs from the highest down: each once (a repeat was looked
        // for in every line before, 8 s).
        let text: String = (0..=MAX_CPU).rev().map(line).collect();
        let Snapshot::On(cpus) = parse(text.as_bytes()).unwrap() else {
            panic!("on")
        };
        assert_eq!(cpus.len(), MAX_CPU as usize + 1);
    }
}
