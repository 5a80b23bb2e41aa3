//! Whether an interval's histograms hold the requests the kernel counted:
//! the perf fallback can miss most completions (see README.md), and
//! percentiles of the few that arrived, with a depth held up by the
//! missing ones, would be printed as if they were true.
//!
//! The histograms are compared with the completions `/proc/diskstats`
//! counted over the same interval, for reads and discards only: `fsync`
//! adds to the kernel's writes a write of no data that the device never
//! executes (one per `fsync`, a flush instead where the disk has a
//! write-back cache, nothing on a partition), so no count of writes the
//! histogram must hold follows from the counters.

use std::collections::HashSet;

use crate::common::escape;
use crate::common::stderr;

use super::super::parse::DiskCounters;
use super::super::report::Sample;
use super::codec::Interval;
use super::collector::DRAIN_EVERY;
use super::tracker::{DeviceHistograms, Op};

/// The fewest completions the kernel must count in an interval before a
/// shortfall is judged: below it, the few requests in flight across the
/// interval's edges (the histograms hold the requests completed until the
/// report asked for them, just after it read the counters) weigh too much.
pub const MIN_COUNTED: u64 = 20;

/// An operation whose histogram holds under half of the completions the
/// kernel counted in the interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shortfall {
    /// The operation (a read or a discard).
    pub op: Op,
    /// Requests in the histogram.
    pub measured: u64,
    /// Completions `/proc/diskstats` counted.
    pub counted: u64,
}

/// The first of reads and discards whose histogram in `h` holds under half
/// of what the counters went from `prev` to `cur` (at least
/// [`MIN_COUNTED`]); `None` when both hold enough, or when a counter went
/// backwards (a device re-added: nothing to compare).
pub fn shortfall(
    h: &DeviceHistograms,
    prev: &DiskCounters,
    cur: &DiskCounters,
) -> Option<Shortfall> {
    [
        (Op::Read, prev.rd_ios, cur.rd_ios),
        (Op::Discard, prev.dc_ios, cur.dc_ios),
    ]
    .into_iter()
    .find_map(|(op, before, after)| {
        let counted = after.checked_sub(before)?;
        let measured = h.latency[op as usize].total;
        (counted >= MIN_COUNTED && measured.saturating_mul(2) < counted).then_some(Shortfall {
            op,
            measured,
            counted,
        })
    })
}

/// Whether a queue depth is held up too much to show by `forgotten`
/// requests, whose completions never arrived, among the `completed` the
/// kernel counted in an interval of `itv` hundredths of a second. A
/// request found lost leaves the depth from its issue on (`depth`), but
/// not what is in the histograms already: each comparison with the
/// kernel's count adds the depth up to its reading (a report's end comes
/// just after one: `collector`), so one that did not find a lost request
/// added that request's depth up to it. A comparison misses as many as
/// the kernel's count holds requests it cannot compare (issued within
/// 50 µs of the reading, or not seen issued yet: at one request at a
/// time on Linux 6.18, a quarter of the counts held a read not issued
/// 2 µs before them), so such a request is found a comparison or two
/// later (up to two drains, [`DRAIN_EVERY`] apart, after its issue), a
/// flush or a request of a disk without a count after up to 30 s
/// (`tracker::STALE`). Taking the first as the measure, the mean depth
/// may be up to `forgotten × 0.2 s / T` too high, and the maximum up to
/// `forgotten`. Withheld when that could exceed a quarter of a request and
/// the forgotten are over 1 % of the completions: the perf fallback loses
/// percents of them, the eBPF path a few a second under heavy I/O
/// (programs skipped when a completion interrupts one running on its CPU),
/// whose error in the depth stays of that few.
pub fn depth_held_up(forgotten: u64, completed: u64, itv: f64) -> bool {
    let hold_hundredths = 2 * DRAIN_EVERY.as_millis() as u64 / 10;
    forgotten.saturating_mul(hold_hundredths).saturating_mul(4) as f64 > itv
        && forgotten.saturating_mul(100) > completed
}

/// The completions `/proc/diskstats` counted from `prev` to `cur`, of
/// every operation (0 when a counter went back: a device re-added).
pub fn completed(prev: &DiskCounters, cur: &DiskCounters) -> u64 {
    [
        (prev.rd_ios, cur.rd_ios),
        (prev.wr_ios, cur.wr_ios),
        (prev.dc_ios, cur.dc_ios),
        (prev.fl_ios, cur.fl_ios),
    ]
    .iter()
    .map(|&(before, after)| after.saturating_sub(before))
    .fold(0, u64::saturating_add)
}

/// The notes on stderr about what the histograms miss: each interval whose
/// samples the kernel lost (those lost before the first report with the
/// first interval measured), and once per device a [`Shortfall`] or a
/// depth held up ([`depth_held_up`]).
#[derive(Debug, Default)]
pub struct Notes {
    /// Whether an interval measured was told about already.
    measuring: bool,
    /// The devices whose shortfall was told.
    told: HashSet<(u32, u32)>,
    /// The devices whose held-up depth was told.
    told_depth: HashSet<(u32, u32)>,
}

impl Notes {
    /// Tells what `s`'s histograms miss, if anything.
    // Out of line: only this mode runs it (build.rs, "Hot code first").
    #[inline(never)]
    pub fn interval(&mut self, s: &Sample) {
        let Some(interval) = s.latency else { return };
        if !std::mem::replace(&mut self.measuring, true) && s.lost_before > 0 {
            stderr::print(format_args!(
                "iostat-rs: --latency: the kernel lost {} samples (a ring was full) before the \
                 first report: the histograms of the first interval measured may miss their \
                 requests, and its queue depths are not shown\n",
                s.lost_before
            ));
        }
        if interval.lost > 0 {
            stderr::print(format_args!(
                "iostat-rs: --latency: the kernel lost {} samples (a ring was full): the \
                 histograms of this interval, or of the one before, miss their requests; \
                 the queue depths of this interval and of the next are not shown\n",
                interval.lost
            ));
        }
        for row in s.devices.rows(s.curr) {
            let Some(devnum) = row.devnum else {
                continue;
            };
            if let Some(forgotten) = s.depth_held_up(&row)
                && self.told_depth.insert(devnum)
            {
                stderr::print(format_args!(
                    "iostat-rs: --latency: {}: {forgotten} completions in an interval never \
                     arrived: its queue depth is not shown where they would hold it up\n",
                    escape::text(row.name)
                ));
            }
            let Some(short) = s.shortfall(&row) else {
                continue;
            };
            if self.told.insert(devnum) {
                stderr::print(format_args!(
                    "{}",
                    shortfall_note(&escape::text(row.name), &short, interval, s.lost_before)
                ));
            }
        }
    }
}

/// The note on a device's first [`Shortfall`] in `interval`, its name
/// already escaped. None at all is what a bio-based device gives
/// (device-mapper, md, zram: they pass their I/O on without the requests
/// the tracepoints follow), so the note says where to look instead,
/// unless CPUs came online in the interval, whose requests went untraced
/// until their rings were opened, or samples the kernel lost can account
/// for every request missing (each takes one at least): those lost in the
/// interval (a loop device under fio, beside a load average of 20, had
/// none of its 27 reads of an interval that lost 67,980) or in the one
/// before, `lost_before`, whose requests the counters may count in this
/// one (see [`Sample::latency_stats`]); then it says so.
fn shortfall_note(name: &str, short: &Shortfall, interval: &Interval, lost_before: u64) -> String {
    let what = if short.op == Op::Read {
        "reads"
    } else {
        "discards"
    };
    let (cpus_late, lost) = (interval.cpus_late, interval.lost);
    let missing = short.counted - short.measured;
    let mut why = Vec::new();
    if lost.saturating_add(lost_before) >= missing {
        why.push(match (lost, lost_before) {
            (lost, 0) => format!("the kernel lost {lost} samples in the interval"),
            (0, before) => format!("the kernel lost {before} samples in the interval before"),
            (lost, before) => format!(
                "the kernel lost {lost} samples in the interval and {before} in the one before"
            ),
        });
    }
    if cpus_late > 0 {
        why.push(format!(
            "{cpus_late} CPU{} came online in the interval, each traced only from when \
             iostat-rs saw it",
            if cpus_late == 1 { "" } else { "s" }
        ));
    }
    let reached = match short.measured {
        _ if !why.is_empty() => format!(
            "{} of the {} {what} the kernel completed in an interval reached the histograms \
             ({})",
            short.measured,
            short.counted,
            why.join("; ")
        ),
        0 => format!(
            "none of the {} {what} the kernel completed in an interval reached the \
             histograms (a bio-based device, such as device-mapper, md or zram, has no \
             requests to trace: its I/O is measured on the devices beneath)",
            short.counted
        ),
        measured => format!(
            "{measured} of the {} {what} the kernel completed in an interval reached the \
             histograms",
            short.counted
        ),
    };
    format!(
        "iostat-rs: --latency: {name}: {reached}: its latency percentiles and queue depth are \
         not shown where under half arrive\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reads(measured: u64) -> DeviceHistograms {
        let mut h = DeviceHistograms::default();
        h.latency[Op::Read as usize].add(1_000_000, measured);
        h
    }

    fn counters(rd_ios: u64, wr_ios: u64, dc_ios: u64) -> DiskCounters {
        DiskCounters {
            rd_ios,
            wr_ios,
            dc_ios,
            ..DiskCounters::default()
        }
    }

    #[test]
    fn under_half_of_enough_reads_is_short() {
        let prev = counters(1000, 0, 0);
        // The perf fallback's interval: 180 of 6942 reads.
        let cur = counters(1000 + 6942, 0, 0);
        let short = Shortfall {
            op: Op::Read,
            measured: 180,
            counted: 6942,
        };
        assert_eq!(shortfall(&reads(180), &prev, &cur), Some(short));
        assert_eq!(shortfall(&reads(3471), &prev, &cur), None, "exactly half");
        assert_eq!(
            shortfall(&reads(3470), &prev, &cur).map(|s| s.measured),
            Some(3470)
        );
        assert_eq!(shortfall(&reads(6950), &prev, &cur), None, "a few more");
        // 20 counted: 9 is under half; 19 counted is too few to judge.
        assert!(shortfall(&reads(9), &prev, &counters(1020, 0, 0)).is_some());
        assert_eq!(shortfall(&reads(10), &prev, &counters(1020, 0, 0)), None);
        assert_eq!(shortfall(&reads(0), &prev, &counters(1019, 0, 0)), None);
        // Going backwards (re-added): nothing to compare.
        assert_eq!(shortfall(&reads(0), &cur, &prev), None);
    }

    #[test]
    fn a_depth_is_held_up_by_completions_that_never_arrived() {
        // Each held one higher for up to 0.2 s: over a quarter of a
        // request on average in a 1 s interval from 2 on, if over 1 %.
        assert!(!depth_held_up(0, 100, 100.0));
        assert!(!depth_held_up(1, 100, 100.0));
        assert!(depth_held_up(2, 100, 100.0));
        assert!(!depth_held_up(12, 100, 1000.0), "12 in 10 s: 0.24");
        assert!(depth_held_up(13, 100, 1000.0));
        assert!(depth_held_up(1, 10, 50.0), "one in half a second: 0.4");
        // The eBPF path under heavy I/O: 3 of 3,000 in 0.3 s.
        assert!(!depth_held_up(3, 3000, 30.0));
        assert!(depth_held_up(31, 3000, 30.0));
        assert!(depth_held_up(u64::MAX, u64::MAX - 1, 1e18));
        let c = |rd, wr, dc, fl| DiskCounters {
            rd_ios: rd,
            wr_ios: wr,
            dc_ios: dc,
            fl_ios: fl,
            ..DiskCounters::default()
        };
        assert_eq!(completed(&c(1, 2, 3, 4), &c(11, 22, 33, 44)), 100);
        assert_eq!(completed(&c(5, 0, 0, 0), &c(1, 3, 0, 0)), 3, "re-added");
    }

    #[test]
    fn a_device_with_nothing_measured_is_said_to_be_perhaps_bio_based() {
        let short = |op, measured| Shortfall {
            op,
            measured,
            counted: 1086997,
        };
        assert_eq!(
            shortfall_note("zram0", &short(Op::Read, 0), &Interval::default(), 0),
            "iostat-rs: --latency: zram0: none of the 1086997 reads the kernel completed in an \
             interval reached the histograms (a bio-based device, such as device-mapper, md or \
             zram, has no requests to trace: its I/O is measured on the devices beneath): its \
             latency percentiles and queue depth are not shown where under half arrive\n"
        );
        assert_eq!(
            shortfall_note("loop0", &short(Op::Discard, 405), &Interval::default(), 0),
            "iostat-rs: --latency: loop0: 405 of the 1086997 discards the kernel completed in an \
             interval reached the histograms: its latency percentiles and queue depth are not \
             shown where under half arrive\n"
        );
    }

    /// A CPU untraced for part of the interval may be why: no bio-based
    /// device is blamed then.
    #[test]
    fn cpus_come_online_are_named_rather_than_a_bio_based_device() {
        let short = Shortfall {
            op: Op::Read,
            measured: 0,
            counted: 200,
        };
        let late = Interval {
            cpus_late: 1,
            ..Interval::default()
        };
        assert_eq!(
            shortfall_note("loop0", &short, &late, 0),
            "iostat-rs: --latency: loop0: 0 of the 200 reads the kernel completed in an interval \
             reached the histograms (1 CPU came online in the interval, each traced only from \
             when iostat-rs saw it): its latency percentiles and queue depth are not shown where \
             under half arrive\n"
        );
    }

    /// Samples the kernel lost may be why: no bio-based device is blamed
    /// then either, and a CPU come online is still named.
    #[test]
    fn lost_samples_are_named_rather_than_a_bio_based_device() {
        let short = Shortfall {
            op: Op::Read,
            measured: 0,
            counted: 27,
        };
        let lost = Interval {
            lost: 67980,
            cpus_late: 1,
            ..Interval::default()
        };
        assert_eq!(
            shortfall_note("loop2", &short, &lost, 0),
            "iostat-rs: --latency: loop2: 0 of the 27 reads the kernel completed in an interval \
             reached the histograms (the kernel lost 67980 samples in the interval; 1 CPU came \
             online in the interval, each traced only from when iostat-rs saw it): its latency \
             percentiles and queue depth are not shown where under half arrive\n"
        );
    }

    /// Samples lost in the interval before may be why too: a starved
    /// report takes its histograms late, and the requests of a loss told
    /// in one interval are then counted in the next.
    #[test]
    fn samples_lost_in_the_interval_before_are_named_rather_than_a_bio_based_device() {
        let short = Shortfall {
            op: Op::Read,
            measured: 0,
            counted: 41388,
        };
        assert_eq!(
            shortfall_note("loop2", &short, &Interval::default(), 83859),
            "iostat-rs: --latency: loop2: 0 of the 41388 reads the kernel completed in an \
             interval reached the histograms (the kernel lost 83859 samples in the interval \
             before): its latency percentiles and queue depth are not shown where under half \
             arrive\n"
        );
        // Lost in both: together they account for the requests missing.
        let some = Interval {
            lost: 20000,
            ..Interval::default()
        };
        assert_eq!(
            shortfall_note("loop2", &short, &some, 21388),
            "iostat-rs: --latency: loop2: 0 of the 41388 reads the kernel completed in an \
             interval reached the histograms (the kernel lost 20000 samples in the interval and \
             21388 in the one before): its latency percentiles and queue depth are not shown \
             where under half arrive\n"
        );
    }

    /// Fewer samples lost than requests missing cannot be why (each
    /// request missing lost one sample at least): a device of which none
    /// arrived is still said to be perhaps bio-based.
    #[test]
    fn a_loss_too_small_for_the_shortfall_is_not_named() {
        let short = Shortfall {
            op: Op::Read,
            measured: 0,
            counted: 1000,
        };
        let few = Interval {
            lost: 400,
            ..Interval::default()
        };
        let note = shortfall_note("dm-0", &short, &few, 599);
        assert!(note.contains("(a bio-based device, such as"), "{note}");
        assert!(!note.contains("lost"), "{note}");
        let short = Shortfall {
            measured: 10,
            ..short
        };
        // 990 missing: 989 lost cannot be why, 990 can.
        assert_eq!(
            shortfall_note("loop0", &short, &few, 589),
            "iostat-rs: --latency: loop0: 10 of the 1000 reads the kernel completed in an \
             interval reached the histograms: its latency percentiles and queue depth are not \
             shown where under half arrive\n"
        );
        assert_eq!(
            shortfall_note("loop0", &short, &few, 590),
            "iostat-rs: --latency: loop0: 10 of the 1000 reads the kernel completed in an \
             interval reached the histograms (the kernel lost 400 samples in the interval and \
             590 in the one before): its latency percentiles and queue depth are not shown where \
             under half arrive\n"
        );
    }

    #[test]
    fn writes_are_not_judged_and_discards_are() {
        let prev = counters(0, 0, 0);
        // fsync's empty writes: the kernel counts 100, the device saw none.
        assert_eq!(shortfall(&reads(0), &prev, &counters(0, 100, 0)), None);
        let short = shortfall(&reads(0), &prev, &counters(0, 0, 40));
        assert_eq!(
            short,
            Some(Shortfall {
                op: Op::Discard,
                measured: 0,
                counted: 40
            })
        );
        let mut h = reads(0);
        h.latency[Op::Discard as usize].add(5_000, 20);
        assert_eq!(shortfall(&h, &prev, &counters(0, 0, 40)), None);
    }
}
