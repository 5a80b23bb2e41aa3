//! Hand-written parsers for the kernel files iostat reads: `/proc/diskstats`,
//! `/sys/block/<dev>/stat`, the `cpu ` line of `/proc/stat` and
//! `/proc/uptime`. They follow sysstat's `sscanf` rules (how many fields make
//! a valid line) and allocate nothing (but for a device name that is not
//! UTF-8, rare enough to be kept in a `String`).

use std::borrow::Cow;

use crate::common::osname;

/// The cumulative counters of one block device, in the C types sysstat keeps
/// them in: I/O, merge and sector counts are 64-bit, tick fields 32-bit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskCounters {
    /// Reads completed.
    pub rd_ios: u64,
    /// Reads merged.
    pub rd_merges: u64,
    /// Sectors read.
    pub rd_sectors: u64,
    /// Milliseconds spent reading.
    pub rd_ticks: u32,
    /// Writes completed.
    pub wr_ios: u64,
    /// Writes merged.
    pub wr_merges: u64,
    /// Sectors written.
    pub wr_sectors: u64,
    /// Milliseconds spent writing.
    pub wr_ticks: u32,
    /// I/Os in flight (a gauge, never displayed).
    pub ios_pgr: u32,
    /// Milliseconds the device was busy (`io_ticks`).
    pub tot_ticks: u32,
    /// Weighted milliseconds of queued I/O (`time_in_queue`).
    pub rq_ticks: u32,
    /// Discards completed.
    pub dc_ios: u64,
    /// Discards merged.
    pub dc_merges: u64,
    /// Sectors discarded.
    pub dc_sectors: u64,
    /// Milliseconds spent discarding.
    pub dc_ticks: u32,
    /// Flush requests completed.
    pub fl_ios: u64,
    /// Milliseconds spent flushing.
    pub fl_ticks: u32,
}

impl DiskCounters {
    /// sysstat's "ever used" test: any of the read, write, discard and flush
    /// counts is not zero, each tested on its own (a sum could wrap to 0).
    pub fn has_ios(&self) -> bool {
        self.rd_ios != 0 || self.wr_ios != 0 || self.dc_ios != 0 || self.fl_ios != 0
    }

    /// Adds another device's counters (for device groups), wrapping as C does.
    pub fn accumulate(&mut self, o: &DiskCounters) {
        self.rd_ios = self.rd_ios.wrapping_add(o.rd_ios);
        self.rd_merges = self.rd_merges.wrapping_add(o.rd_merges);
        self.rd_sectors = self.rd_sectors.wrapping_add(o.rd_sectors);
        self.rd_ticks = self.rd_ticks.wrapping_add(o.rd_ticks);
        self.wr_ios = self.wr_ios.wrapping_add(o.wr_ios);
        self.wr_merges = self.wr_merges.wrapping_add(o.wr_merges);
        self.wr_sectors = self.wr_sectors.wrapping_add(o.wr_sectors);
        self.wr_ticks = self.wr_ticks.wrapping_add(o.wr_ticks);
        self.ios_pgr = self.ios_pgr.wrapping_add(o.ios_pgr);
        self.tot_ticks = self.tot_ticks.wrapping_add(o.tot_ticks);
        self.rq_ticks = self.rq_ticks.wrapping_add(o.rq_ticks);
        self.dc_ios = self.dc_ios.wrapping_add(o.dc_ios);
        self.dc_merges = self.dc_merges.wrapping_add(o.dc_merges);
        self.dc_sectors = self.dc_sectors.wrapping_add(o.dc_sectors);
        self.dc_ticks = self.dc_ticks.wrapping_add(o.dc_ticks);
        self.fl_ios = self.fl_ios.wrapping_add(o.fl_ios);
        self.fl_ticks = self.fl_ticks.wrapping_add(o.fl_ticks);
    }
}

/// What a stat line holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatFormat {
    /// 11, 15 or 17 statistics (2.6.25+): everything `-x` needs.
    Extended,
    /// The pre-2.6.25 partition format: reads, read sectors, writes, written
    /// sectors. sysstat drops such devices from extended reports.
    OldPartition,
}

/// Scans up to `N` unsigned numbers separated by whitespace, as a run of
/// `sscanf("%lu")` conversions: stops at the first token that is not an
/// optional sign followed by a digit; a number too big for 64 bits saturates
/// as `strtoul` does, and a negative one wraps as `strtoul` negates it
/// (`-1` is 2^64-1). Returns how many numbers were read.
fn scan_numbers<const N: usize>(text: &[u8], out: &mut [u64; N]) -> usize {
    let mut pos = 0;
    let mut count = 0;
    while count < N {
        while pos < text.len() && text[pos].is_ascii_whitespace() {
            pos += 1;
        }
        let negative = text.get(pos) == Some(&b'-');
        let signed = negative || text.get(pos) == Some(&b'+');
        if !text
            .get(pos + usize::from(signed))
            .is_some_and(u8::is_ascii_digit)
        {
            break;
        }
        pos += usize::from(signed);
        let start = pos;
        // One pass finds the digits and sums them: up to 19 digits cannot
        // overflow, so there is no check per digit. (A second pass over the
        // digits was 5 % of the instructions of a 10,000-device report.)
        let mut sum = 0u64;
        while let Some(digit) = text
            .get(pos)
            .map(|b| b.wrapping_sub(b'0'))
            .filter(|d| *d <= 9)
        {
            sum = sum.wrapping_mul(10).wrapping_add(u64::from(digit));
            pos += 1;
        }
        let value = if pos - start <= 19 {
            Some(sum)
        } else {
            text[start..pos].iter().try_fold(0u64, |v, d| {
                v.checked_mul(10)?.checked_add(u64::from(d - b'0'))
            })
        };
        out[count] = match value {
            None => u64::MAX,
            Some(v) if negative => v.wrapping_neg(),
            Some(v) => v,
        };
        count += 1;
        // "12abc": sscanf stored 12; the next conversion fails on "abc".
        if pos < text.len() && !text[pos].is_ascii_whitespace() {
            break;
        }
    }
    count
}

/// Fills counters from the statistics fields in kernel order; `n` is how many
/// were present (at least 11).
fn counters_from_fields(f: &[u64; 17], n: usize) -> DiskCounters {
    let mut c = DiskCounters {
        rd_ios: f[0],
        rd_merges: f[1],
        rd_sectors: f[2],
        rd_ticks: f[3] as u32,
        wr_ios: f[4],
        wr_merges: f[5],
        wr_sectors: f[6],
        wr_ticks: f[7] as u32,
        ios_pgr: f[8] as u32,
        tot_ticks: f[9] as u32,
        rq_ticks: f[10] as u32,
        ..DiskCounters::default()
    };
    if n >= 15 {
        c.dc_ios = f[11];
        c.dc_merges = f[12];
        c.dc_sectors = f[13];
        c.dc_ticks = f[14] as u32;
    }
    if n >= 17 {
        c.fl_ios = f[15];
        c.fl_ticks = f[16] as u32;
    }
    c
}

fn old_partition(f: &[u64; 17]) -> DiskCounters {
    DiskCounters {
        rd_ios: f[0],
        rd_sectors: f[1],
        wr_ios: f[2],
        wr_sectors: f[3],
        ..DiskCounters::default()
    }
}

/// Parses a `/sys/block/<dev>/stat` file as sysstat's
/// `read_sysfs_file_stat_work` does once the file opened: at least 11
/// numbers (extended) or exactly 4 (old partition format) fill the counters;
/// any other content (short, garbled, empty) leaves them all zero. sysstat
/// keeps 4-field sysfs devices in extended reports, so the format does not
/// matter here.
pub fn parse_sysfs_stat(text: &[u8]) -> DiskCounters {
    let mut f = [0u64; 17];
    match scan_numbers(text, &mut f) {
        n if n >= 11 => counters_from_fields(&f, n),
        4 => old_partition(&f),
        _ => DiskCounters::default(),
    }
}

/// One usable line of `/proc/diskstats`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskstatsLine<'a> {
    /// Major device number.
    pub major: u32,
    /// Minor device number.
    pub minor: u32,
    /// Kernel name (`sda`, `nvme0n1p1`, `cciss/c0d0`), borrowed unless it
    /// holds bytes that are not UTF-8 ([`osname`]).
    pub name: Cow<'a, str>,
    /// The counters.
    pub counters: DiskCounters,
    /// Extended or old partition format.
    pub format: StatFormat,
}

/// The first three fields of a `/proc/diskstats` line, and the rest of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskstatsHead<'a> {
    /// Major device number.
    pub major: u32,
    /// Minor device number.
    pub minor: u32,
    /// Kernel name, as in [`DiskstatsLine`].
    pub name: Cow<'a, str>,
    /// The statistics, not yet parsed.
    rest: &'a [u8],
}

/// Reads the major and minor numbers (at most 10 digits each, within 32
/// bits) and the name of a `/proc/diskstats` line, leaving the statistics
/// unparsed: the default report parses them only for the names it lists.
pub fn diskstats_head(line: &[u8]) -> Option<DiskstatsHead<'_>> {
    let mut head = [0u64; 2];
    let mut pos = 0;
    for slot in head.iter_mut() {
        while pos < line.len() && line[pos].is_ascii_whitespace() {
            pos += 1;
        }
        let start = pos;
        while pos < line.len() && line[pos].is_ascii_digit() {
            pos += 1;
        }
        if start == pos || pos - start > 10 {
            return None;
        }
        // At most 10 ASCII digits: no overflow in a u64.
        *slot = line[start..pos]
            .iter()
            .fold(0, |n, &d| n * 10 + u64::from(d - b'0'));
    }
    while pos < line.len() && line[pos].is_ascii_whitespace() {
        pos += 1;
    }
    let start = pos;
    while pos < line.len() && !line[pos].is_ascii_whitespace() {
        pos += 1;
    }
    if start == pos {
        return None;
    }
    Some(DiskstatsHead {
        major: u32::try_from(head[0]).ok()?,
        minor: u32::try_from(head[1]).ok()?,
        name: osname::from_bytes(&line[start..pos]),
        rest: &line[pos..],
    })
}

impl<'a> DiskstatsHead<'a> {
    /// Parses the statistics the way sysstat's `sscanf` does: at least 11
    /// (14 fields in all; 18 add discards, 20 add flushes) or exactly 4 (7
    /// fields, the old partition format); `None` otherwise.
    pub fn parse(self) -> Option<DiskstatsLine<'a>> {
        let mut f = [0u64; 17];
        let (counters, format) = match scan_numbers(self.rest, &mut f) {
            n if n >= 11 => (counters_from_fields(&f, n), StatFormat::Extended),
            4 => (old_partition(&f), StatFormat::OldPartition),
            _ => return None,
        };
        Some(DiskstatsLine {
            major: self.major,
            minor: self.minor,
            name: self.name,
            counters,
            format,
        })
    }
}

/// Parses one `/proc/diskstats` line: [`diskstats_head`], then
/// [`DiskstatsHead::parse`]. Other lines are `None` and are skipped by the
/// caller.
pub fn parse_diskstats_line(line: &[u8]) -> Option<DiskstatsLine<'_>> {
    diskstats_head(line)?.parse()
}

/// The device numbers of a sysfs `dev` file (`MAJOR:MINOR` and a newline),
/// if it holds them.
pub fn parse_dev_numbers(text: &[u8]) -> Option<(u32, u32)> {
    let (major, minor) = std::str::from_utf8(text).ok()?.trim().split_once(':')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// Parses `/proc/uptime` into hundredths of a second the way sysstat does
/// (`"%lu.%lu"`, `sec * 100 + frac`, the fraction read as an integer).
pub fn parse_uptime(text: &[u8]) -> Option<u64> {
    let text = text.trim_ascii_start();
    let dot = text.iter().position(|&b| !b.is_ascii_digit())?;
    if dot == 0 || text[dot] != b'.' {
        return None;
    }
    let secs = digits_value(&text[..dot])?;
    let rest = &text[dot + 1..];
    let end = rest
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(rest.len());
    if end == 0 {
        return None;
    }
    let frac = digits_value(&rest[..end])?;
    Some(secs.wrapping_mul(100).wrapping_add(frac))
}

fn digits_value(d: &[u8]) -> Option<u64> {
    d.iter().try_fold(0u64, |acc, &b| {
        acc.checked_mul(10)?.checked_add(u64::from(b - b'0'))
    })
}

/// The aggregate CPU times of the `cpu ` line of `/proc/stat`, in ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTicks {
    /// User time (includes guest).
    pub user: u64,
    /// Niced user time (includes guest_nice).
    pub nice: u64,
    /// System time.
    pub system: u64,
    /// Idle time.
    pub idle: u64,
    /// I/O wait.
    pub iowait: u64,
    /// Hard interrupts.
    pub hardirq: u64,
    /// Soft interrupts.
    pub softirq: u64,
    /// Stolen time.
    pub steal: u64,
    /// Guest time.
    pub guest: u64,
    /// Niced guest time.
    pub guest_nice: u64,
}

impl From<[u64; 10]> for CpuTicks {
    /// The ten fields of a `cpu` line, in the kernel's order.
    fn from(f: [u64; 10]) -> CpuTicks {
        CpuTicks {
            user: f[0],
            nice: f[1],
            system: f[2],
            idle: f[3],
            iowait: f[4],
            hardirq: f[5],
            softirq: f[6],
            steal: f[7],
            guest: f[8],
            guest_nice: f[9],
        }
    }
}

impl CpuTicks {
    /// sysstat's total: everything except the guest fields, which user and
    /// nice already include.
    pub fn total(&self) -> u64 {
        self.user
            .wrapping_add(self.nice)
            .wrapping_add(self.system)
            .wrapping_add(self.idle)
            .wrapping_add(self.iowait)
            .wrapping_add(self.hardirq)
            .wrapping_add(self.steal)
            .wrapping_add(self.softirq)
    }
}

/// Finds the `cpu ` line of `/proc/stat` and reads up to ten fields; missing
/// fields are 0, as with sysstat. `None` when there is no such line.
pub fn parse_proc_stat_cpu(text: &[u8]) -> Option<CpuTicks> {
    let line = text
        .split(|&b| b == b'\n')
        .find(|l| l.starts_with(b"cpu "))?;
    let mut f = [0u64; 10];
    scan_numbers(&line[4..], &mut f);
    Some(CpuTicks::from(f))
}

/// The highest `cpuN` of `/proc/stat` plus one (sysstat's fallback CPU count).
/// A number that does not fit a `u32` CPU count is not a CPU and is ignored.
pub fn proc_stat_cpu_count(text: &[u8]) -> u32 {
    text.split(|&b| b == b'\n')
        .filter_map(|l| l.strip_prefix(b"cpu"))
        .filter_map(|rest| {
            let end = rest.iter().position(|b| !b.is_ascii_digit())?;
            if end == 0 {
                return None;
            }
            digits_value(&rest[..end])
                .and_then(|n| u32::try_from(n).ok())
                .and_then(|n| n.checked_add(1))
        })
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The usable lines of a `/proc/diskstats` text, as the device list
    /// reads them line by line.
    fn diskstats_lines(buf: &[u8]) -> impl Iterator<Item = DiskstatsLine<'_>> {
        buf.split(|&b| b == b'\n').filter_map(parse_diskstats_line)
    }

    const DISKSTATS: &str = "   8       0 sda 49601 2822 3195498 623970 12180 9784 821088 117109 0 32862 714408 0 0 0 0\n\
  65      32 sds 386 416 8554 100 727 820 8746 3902 0 762 7902 0 0 0\n\
 259       0 nvme0n1 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n\
   3       1 hda1 10 20 30 40\n\
 garbage line\n\
   8       1 sdz1 1 2 3\n";

    #[test]
    fn diskstats_matches_procfs_core() {
        let ours: Vec<_> = diskstats_lines(DISKSTATS.as_bytes()).collect();
        assert_eq!(ours.len(), 4);
        let oracle = "   8       0 sda 49601 2822 3195498 623970 12180 9784 821088 117109 0 32862 714408 0 0 0 0\n 259       0 nvme0n1 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n";
        use procfs_core::FromRead;
        let theirs = procfs_core::DiskStats::from_read(oracle.as_bytes()).unwrap();
        let ours: Vec<_> = diskstats_lines(oracle.as_bytes()).collect();
        for (o, t) in ours.iter().zip(theirs.0.iter()) {
            assert_eq!(o.name, t.name);
            assert_eq!(o.major as i32, t.major);
            assert_eq!(o.minor as i32, t.minor);
            assert_eq!(o.counters.rd_ios, t.reads);
            assert_eq!(o.counters.rd_merges, t.merged);
            assert_eq!(o.counters.rd_sectors, t.sectors_read);
            assert_eq!(u64::from(o.counters.rd_ticks), t.time_reading);
            assert_eq!(o.counters.wr_ios, t.writes);
            assert_eq!(o.counters.wr_sectors, t.sectors_written);
            assert_eq!(u64::from(o.counters.tot_ticks), t.time_in_progress);
            assert_eq!(u64::from(o.counters.rq_ticks), t.weighted_time_in_progress);
            assert_eq!(o.counters.dc_ios, t.discards.unwrap_or(0));
            assert_eq!(o.counters.fl_ios, t.flushes.unwrap_or(0));
            assert_eq!(u64::from(o.counters.fl_ticks), t.time_flushing.unwrap_or(0));
        }
    }

    #[test]
    fn field_counts_follow_the_sscanf_rules() {
        let l: Vec<_> = diskstats_lines(DISKSTATS.as_bytes()).collect();
        // 14 statistics: discard fields kept, flush absent.
        assert_eq!(l[1].name, "sds");
        assert_eq!(l[1].counters.dc_ios, 0);
        assert_eq!(l[2].counters.fl_ticks, 17);
        assert_eq!(l[3].format, StatFormat::OldPartition);
        assert_eq!(l[3].counters.wr_ios, 30);
        assert_eq!(l[3].counters.wr_sectors, 40);
        assert!(parse_diskstats_line(b"8 1 sdz1 1 2 3").is_none());
        assert!(parse_diskstats_line(b"").is_none());
        assert_eq!(
            diskstats_head(b"   8       1 sdz1 1 2 3").map(|h| h.name),
            Some(Cow::Borrowed("sdz1"))
        );
        // A name that is not UTF-8 is kept, byte for byte, not dropped.
        let odd = parse_diskstats_line(b" 8 2 x\xff\xfe 1 2 3 4 5 6 7 8 9 10 11").unwrap();
        assert_eq!(osname::to_bytes(&odd.name).as_ref(), b"x\xff\xfe");
        assert_eq!(odd.counters.rd_ios, 1);
        assert_eq!(diskstats_head(b"x 1 sdz1 1"), None);
        assert_eq!(diskstats_head(b"8 1"), None);
        assert!(parse_diskstats_line(b"x y z 1 2 3 4 5 6 7 8 9 10 11").is_none());
    }

    #[test]
    fn sysfs_stat_with_padding_truncation_and_garbage() {
        let c = parse_sysfs_stat(
            b"     386      416     8554 4294967396      727      820     8746     3902        0      762     7902\n",
        );
        assert_eq!(c.rd_ios, 386);
        assert_eq!(c.rd_ticks, 100, "u32 fields wrap like sscanf %u");
        assert_eq!(c.rq_ticks, 7902);
        let zeros = DiskCounters::default();
        assert_eq!(parse_sysfs_stat(b"1 2 3 4 5"), zeros);
        assert_eq!(parse_sysfs_stat(b"1 2 3 4 5 6 7 8 9 10"), zeros);
        assert_eq!(parse_sysfs_stat(b""), zeros);
        assert_eq!(parse_sysfs_stat(b"1 2 3 x4 5 6 7 8 9 10 11"), zeros);
        let old = parse_sysfs_stat(b"1 2 3 4");
        assert_eq!(
            (old.rd_ios, old.rd_sectors, old.wr_ios, old.wr_sectors),
            (1, 2, 3, 4)
        );
        let huge = parse_sysfs_stat(b"99999999999999999999999 0 0 0 0 0 0 0 0 0 0");
        assert_eq!(huge.rd_ios, u64::MAX);
    }

    #[test]
    fn uptime_is_centiseconds_with_integer_fraction() {
        assert_eq!(parse_uptime(b"7192.55 29212.05\n"), Some(719_255));
        assert_eq!(parse_uptime(b"123.4 1.0"), Some(12_304));
        assert_eq!(parse_uptime(b"abc"), None);
        assert_eq!(parse_uptime(b"12"), None);
        assert_eq!(parse_uptime(b""), None);
    }

    #[test]
    fn cpu_line_reads_ten_fields_and_tolerates_short_lines() {
        let text = b"cpu  96005 2578701 53845 3617879 60648 27891 25853 7 8 9\ncpu0 1 2 3 4\ncpu8 1 1 1 1\nintr 5\n";
        let c = parse_proc_stat_cpu(text).unwrap();
        assert_eq!(c.user, 96005);
        assert_eq!(c.idle, 3617879);
        assert_eq!(c.steal, 7);
        assert_eq!(c.guest_nice, 9);
        assert_eq!(proc_stat_cpu_count(text), 9);
        let short = parse_proc_stat_cpu(b"cpu  1 2 3 4\n").unwrap();
        assert_eq!(short.iowait, 0);
        assert!(parse_proc_stat_cpu(b"intr 1\n").is_none());
    }

    #[test]
    fn cpu_numbers_beyond_a_u32_count_are_ignored() {
        // Found by the proc_stat fuzz target: cpu4294967295 overflowed `n + 1`.
        assert_eq!(proc_stat_cpu_count(b"cpu3 1\ncpu4294967295 1\n"), 4);
        assert_eq!(proc_stat_cpu_count(b"cpu4294967296 1\ncpu1 1\n"), 2);
        assert_eq!(proc_stat_cpu_count(b"cpu4294967294 1\n"), u32::MAX);
    }

    #[test]
    fn signs_are_read_as_strtoul_reads_them() {
        let mut f = [0u64; 6];
        let text = b"-1 +20 -18446744073709551615 -99999999999999999999 99999999999999999999 7";
        assert_eq!(scan_numbers(text, &mut f), 6);
        assert_eq!(f, [u64::MAX, 20, 1, u64::MAX, u64::MAX, 7]);
        let mut f = [9u64; 3];
        assert_eq!(scan_numbers(b"1 - 2", &mut f), 1);
        assert_eq!(scan_numbers(b"1 -x", &mut f), 1);
        assert_eq!(scan_numbers(b"+-3", &mut f), 0);
    }
}
