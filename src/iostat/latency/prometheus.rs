//! `--latency` in the Prometheus expositions (`-o prometheus`,
//! `--textfile`, `--listen`): per device, the request latency of each
//! operation and the time-weighted queue depth as Prometheus histograms,
//! cumulative since iostat-rs started (each exposition adds what was
//! measured since the previous one), so `rate()` and
//! `histogram_quantile()` apply as to any histogram.
//!
//! The buckets end one below each power of two (latency: 2^10 − 1 ns, about
//! 1 µs, to 2^35 − 1 ns, about 34 s; depth: 0, 1, 3, … 4095), which is where
//! the tracker's log-linear buckets end too: every count is exact, not
//! interpolated. The depth histogram's observations are weighted by time:
//! a bucket counts the seconds spent at that depth or below, `_count` the
//! seconds measured, `_sum` the integral of the depth (request-seconds).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::common::expo::{Exposition, Family, Kind};
use crate::common::source::Source;

use super::Latency;
use super::codec::Interval;
use super::histogram::{Histogram, bucket_high};
use super::tracker::{DeviceHistograms, OPS};

/// The latency histogram family.
pub const LATENCY_FAMILY: Family = Family {
    name: "iostat_rs_disk_request_latency_seconds",
    kind: Kind::Histogram,
    help: "Time from issue to completion of block requests (block_rq_issue to \
           block_rq_complete), by operation, since iostat-rs started.",
};

/// The queue depth histogram family.
pub const DEPTH_FAMILY: Family = Family {
    name: "iostat_rs_disk_queue_depth",
    kind: Kind::Histogram,
    help: "Requests in flight weighted by time since iostat-rs started: a bucket \
           holds the seconds spent at that depth or below, _count the seconds \
           measured, _sum the integral of the depth (request-seconds).",
};

/// Samples the kernel dropped.
const LOST_FAMILY: Family = Family {
    name: "iostat_rs_latency_lost_samples_total",
    kind: Kind::Counter,
    help: "Block tracepoint samples the kernel dropped (a ring buffer was full); \
           the histograms miss their requests.",
};

/// Completions without a known issue, per device.
const UNMATCHED_FAMILY: Family = Family {
    name: "iostat_rs_latency_unmatched_completions_total",
    kind: Kind::Counter,
    help: "Block request completions left untimed since iostat-rs started: their \
           issue was not seen (issued before iostat-rs started, or its sample \
           lost), or a lost completion at their sector left it unknown whose \
           they were.",
};

/// Completions that never arrived, per device.
const UNDELIVERED_FAMILY: Family = Family {
    name: "iostat_rs_latency_undelivered_completions_total",
    kind: Kind::Counter,
    help: "Block requests whose completion never reached iostat-rs, forgotten once \
           the kernel no longer counted them in flight (after 30 s where it does \
           not count them), since iostat-rs started; the latency histograms miss \
           them.",
};

/// The `op` label of each [`super::tracker::Op`].
const OP_LABELS: [&str; OPS] = ["read", "write", "discard", "flush"];

/// Upper bounds of the latency buckets, in ns: 2^10 − 1 to 2^35 − 1.
fn latency_bounds() -> Vec<u64> {
    (10..=35).map(|k| (1u64 << k) - 1).collect()
}

/// Upper bounds of the depth buckets: 2^0 − 1 to 2^12 − 1.
fn depth_bounds() -> Vec<u64> {
    (0..=12).map(|k| (1u64 << k) - 1).collect()
}

/// One histogram summed over the run, at fixed bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Cumulative {
    /// Per bound: the weight of the values at or below it.
    at_or_below: Vec<u64>,
    /// The weight of every value.
    count: u64,
    /// Every value times its weight (u128: a run's sum of latencies can
    /// pass 2^64 ns).
    sum: u128,
}

impl Cumulative {
    fn new(bounds: &[u64]) -> Cumulative {
        Cumulative {
            at_or_below: vec![0; bounds.len()],
            count: 0,
            sum: 0,
        }
    }

    /// Adds an interval's histogram. Each log-linear bucket lies wholly at
    /// or below a bound when its largest value does, and every bound is
    /// some bucket's largest value, so the counts are exact.
    fn add(&mut self, h: &Histogram, bounds: &[u64]) {
        for (index, weight) in h.buckets() {
            let first = bounds.partition_point(|&b| b < bucket_high(index));
            for slot in &mut self.at_or_below[first..] {
                *slot = slot.saturating_add(weight);
            }
        }
        self.count = self.count.saturating_add(h.total);
        self.sum = self.sum.saturating_add(u128::from(h.sum));
    }

    /// Adds `weight` at the value 0 (a device idle for `weight` ns).
    fn add_zero(&mut self, weight: u64) {
        for slot in &mut self.at_or_below {
            *slot = slot.saturating_add(weight);
        }
        self.count = self.count.saturating_add(weight);
    }

    /// Writes it as one histogram in the exposition's units: values
    /// (bounds) divided by `unit`, weights (counts) by `weight_unit`.
    /// Dividing integers keeps each printed number the shortest exact
    /// decimal (4095 ns is 0.000004095 s, not 4095 × 1e-9).
    fn write(
        &self,
        e: &mut Exposition,
        labels: &[(&str, &str)],
        bounds: &[u64],
        unit: f64,
        weight_unit: f64,
    ) {
        let buckets: Vec<(f64, f64)> = bounds
            .iter()
            .zip(&self.at_or_below)
            .map(|(&b, &n)| (b as f64 / unit, n as f64 / weight_unit))
            .collect();
        e.histogram(
            labels,
            &buckets,
            self.sum as f64 / (unit * weight_unit),
            self.count as f64 / weight_unit,
        );
    }
}

/// One device's histograms over the run.
#[derive(Debug, Clone, PartialEq, Eq)]
struct DeviceTotals {
    /// The device whose totals these are: numbers another device takes
    /// (partitions deleted and added again in another order) start again
    /// from zero under it, rather than carry the other's.
    name: String,
    latency: [Cumulative; OPS],
    depth: Cumulative,
    unmatched: u64,
    undelivered: u64,
}

/// The measurement and its totals since the start.
pub struct LatencyExposition {
    latency: Latency,
    latency_bounds: Vec<u64>,
    depth_bounds: Vec<u64>,
    totals: BTreeMap<(u32, u32), DeviceTotals>,
    lost: u64,
    /// The source's clock at the last collection, when it has one (a
    /// recording made before it was kept has none).
    collected_at: Option<Duration>,
}

impl LatencyExposition {
    /// Sums what `latency` measures.
    pub fn new(latency: Latency) -> LatencyExposition {
        LatencyExposition {
            latency,
            latency_bounds: latency_bounds(),
            depth_bounds: depth_bounds(),
            totals: BTreeMap::new(),
            lost: 0,
            collected_at: None,
        }
    }

    /// Adds the interval measured since the last call and writes the
    /// families for `devices` (name and `(major, minor)`, as the disk
    /// families list them: a device exported has its series from the
    /// first exposition on, empty until it does I/O). The totals of a
    /// device no longer listed are dropped, so a device that comes back
    /// starts again from zero (a counter reset to Prometheus).
    pub fn collect(
        &mut self,
        src: &dyn Source,
        devices: &[(&str, (u32, u32))],
        e: &mut Exposition,
    ) -> Result<(), String> {
        let interval = self.latency.sample(src)?;
        // A device without histograms was idle the whole interval: at
        // depth 0 for as long (the first interval, whose start the clock
        // did not see, aside). Left out, `_count` stopped while a device
        // was idle, and the depth it gave was the depth while busy: 1.5
        // for a disk at 0.5 over its 6 s.
        let now = Some(src.elapsed()).filter(|t| !t.is_zero());
        let idle = now
            .zip(self.collected_at)
            .and_then(|(now, then)| now.checked_sub(then))
            .map(|d| d.as_nanos() as u64);
        self.collected_at = now;
        self.add(&interval, devices, idle);
        self.write(devices, e);
        Ok(())
    }

    /// Adds `interval` to the totals of `devices`; a device without
    /// histograms in it spent `idle` ns at depth 0, when known.
    fn add(&mut self, interval: &Interval, devices: &[(&str, (u32, u32))], idle: Option<u64>) {
        self.lost = self.lost.saturating_add(interval.lost);
        let listed: BTreeSet<(u32, u32)> = devices.iter().map(|&(_, devnum)| devnum).collect();
        self.totals.retain(|devnum, _| listed.contains(devnum));
        for &(name, devnum) in devices {
            let fresh = || DeviceTotals {
                name: name.to_string(),
                latency: std::array::from_fn(|_| Cumulative::new(&self.latency_bounds)),
                depth: Cumulative::new(&self.depth_bounds),
                unmatched: 0,
                undelivered: 0,
            };
            let totals = self.totals.entry(devnum).or_insert_with(fresh);
            if totals.name != name {
                *totals = fresh();
            }
            match (interval.device(devnum), idle) {
                (Some(h), _) => add_device(totals, h, &self.latency_bounds, &self.depth_bounds),
                (None, Some(idle)) => totals.depth.add_zero(idle),
                (None, None) => {}
            }
            totals.unmatched = totals
                .unmatched
                .saturating_add(interval.unmatched_on(devnum));
            totals.undelivered = totals
                .undelivered
                .saturating_add(interval.undelivered_on(devnum));
        }
    }

    fn write(&self, devices: &[(&str, (u32, u32))], e: &mut Exposition) {
        e.family(&LATENCY_FAMILY);
        for &(name, devnum) in devices {
            let Some(t) = self.totals.get(&devnum) else {
                continue;
            };
            for (op, c) in OP_LABELS.iter().zip(&t.latency) {
                c.write(
                    e,
                    &[("device", name), ("op", op)],
                    &self.latency_bounds,
                    1e9,
                    1.0,
                );
            }
        }
        e.family(&DEPTH_FAMILY);
        for &(name, devnum) in devices {
            if let Some(t) = self.totals.get(&devnum) {
                t.depth
                    .write(e, &[("device", name)], &self.depth_bounds, 1.0, 1e9);
            }
        }
        e.family(&LOST_FAMILY);
        e.sample(&[], self.lost as f64);
        self.write_counter(e, &UNMATCHED_FAMILY, devices, |t| t.unmatched);
        self.write_counter(e, &UNDELIVERED_FAMILY, devices, |t| t.undelivered);
    }

    /// Writes `family`, a counter of each device's `count`.
    fn write_counter(
        &self,
        e: &mut Exposition,
        family: &Family,
        devices: &[(&str, (u32, u32))],
        count: impl Fn(&DeviceTotals) -> u64,
    ) {
        e.family(family);
        for &(name, devnum) in devices {
            if let Some(t) = self.totals.get(&devnum) {
                e.sample(&[("device", name)], count(t) as f64);
            }
        }
    }
}

fn add_device(
    t: &mut DeviceTotals,
    h: &DeviceHistograms,
    latency_bounds: &[u64],
    depth_bounds: &[u64],
) {
    for (c, hist) in t.latency.iter_mut().zip(&h.latency) {
        c.add(hist, latency_bounds);
    }
    t.depth.add(&h.depth, depth_bounds);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_end_where_log_linear_buckets_end() {
        for b in latency_bounds().into_iter().chain(depth_bounds()) {
            let index = super::super::histogram::bucket_of(b);
            assert_eq!(bucket_high(index), b, "bound {b}");
        }
        assert_eq!(latency_bounds().first(), Some(&1023));
        assert_eq!(latency_bounds().last(), Some(&34_359_738_367));
        assert_eq!(depth_bounds()[..4], [0, 1, 3, 7]);
    }

    #[test]
    fn counts_at_or_below_each_bound_and_exact_sums() {
        let bounds = latency_bounds();
        let mut h = Histogram::default();
        h.add(1023, 1); // at the first bound
        h.add(1024, 2); // just above it
        h.add(2_000_000, 3); // 2 ms: above 2^20 − 1, below 2^21 − 1
        h.add(40_000_000_000, 1); // past the last bound: only +Inf
        let mut c = Cumulative::new(&bounds);
        c.add(&h, &bounds);
        c.add(&h, &bounds);
        assert_eq!(c.at_or_below[0], 2);
        assert_eq!(c.at_or_below[1], 6, "2047");
        assert_eq!(c.at_or_below[10], 6, "2^20 - 1");
        assert_eq!(c.at_or_below[11], 12, "2^21 - 1");
        assert_eq!(*c.at_or_below.last().unwrap(), 12);
        assert_eq!(c.count, 14);
        assert_eq!(c.sum, 2 * (1023 + 2048 + 6_000_000 + 40_000_000_000u128));
    }

    /// A disk busy at depth 1 for 2 s of 6, idle the rest: the histogram
    /// holds the 6 s, 4 of them at depth 0, so `_sum / _count` is its mean
    /// depth over the run (1/3), not over the time it was busy (1). An
    /// interval whose length is not known adds nothing for an idle disk.
    #[test]
    fn idle_intervals_count_at_depth_zero() {
        const S: u64 = 1_000_000_000;
        let mut e = LatencyExposition::new(Latency { collector: None });
        let mut busy = DeviceHistograms::default();
        busy.depth.add(1, 2 * S);
        let busy = Interval {
            devices: vec![((7, 0), busy)],
            ..Interval::default()
        };
        let loop0 = [("loop0", (7, 0))];
        e.add(&Interval::default(), &loop0, None);
        e.add(&busy, &loop0, Some(2 * S));
        for _ in 0..4 {
            e.add(&Interval::default(), &loop0, Some(S));
        }
        let depth = &e.totals[&(7, 0)].depth;
        assert_eq!((depth.count, depth.sum), (6 * S, 2 * u128::from(S)));
        assert_eq!(depth.at_or_below[0], 4 * S, "at depth 0");
        assert_eq!(depth.at_or_below[1], 6 * S, "at depth 1 or below");
        let mut out = Exposition::new();
        e.write(&loop0, &mut out);
        let text = out.into_string();
        assert!(
            text.contains("iostat_rs_disk_queue_depth_bucket{device=\"loop0\",le=\"0\"} 4\n"),
            "{text}"
        );
        assert!(
            text.contains("iostat_rs_disk_queue_depth_count{device=\"loop0\"} 6\n"),
            "{text}"
        );
    }

    #[test]
    fn devices_gone_from_the_list_start_again_from_zero() {
        let mut e = LatencyExposition::new(Latency { collector: None });
        let mut h = DeviceHistograms::default();
        h.latency[0].add(5_000, 1);
        h.depth.add(1, 1_000_000_000);
        let interval = Interval {
            lost: 3,
            unmatched: 3,
            unmatched_by_device: Some(vec![((7, 0), 1), ((9, 0), 2)]),
            undelivered: vec![((7, 0), 2), ((9, 0), 5)],
            devices: vec![((7, 0), h)],
            cpus_late: 0,
        };
        let both = [("loop0", (7, 0)), ("sda", (8, 0))];
        e.add(&interval, &both, None);
        e.add(&interval, &both, None);
        assert_eq!(e.totals[&(7, 0)].latency[0].count, 2);
        assert_eq!(e.totals[&(8, 0)].latency[0].count, 0, "listed, idle");
        assert_eq!(e.lost, 6);
        assert_eq!(e.totals[&(7, 0)].unmatched, 2);
        assert_eq!(e.totals[&(8, 0)].unmatched, 0);
        assert_eq!(e.totals[&(7, 0)].undelivered, 4);
        assert_eq!(e.totals[&(8, 0)].undelivered, 0);
        assert!(!e.totals.contains_key(&(9, 0)), "not listed, not exported");
        e.add(&Interval::default(), &both[1..], None);
        e.add(&interval, &both, None);
        assert_eq!(e.totals[&(7, 0)].latency[0].count, 1, "back from zero");
        let mut out = Exposition::new();
        e.write(&both, &mut out);
        let text = out.into_string();
        assert!(text.contains(
            "iostat_rs_disk_request_latency_seconds_bucket{device=\"loop0\",op=\"read\",le=\"0.000008191\"} 1\n"
        ), "{text}");
        assert!(text.contains(
            "iostat_rs_disk_request_latency_seconds_sum{device=\"loop0\",op=\"read\"} 0.000005\n"
        ), "{text}");
        assert!(
            text.contains("iostat_rs_disk_queue_depth_bucket{device=\"loop0\",le=\"1\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("iostat_rs_disk_queue_depth_sum{device=\"loop0\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("iostat_rs_disk_queue_depth_count{device=\"sda\"} 0\n"),
            "{text}"
        );
        assert!(
            text.contains("iostat_rs_latency_lost_samples_total 9\n"),
            "{text}"
        );
        assert!(
            text.contains("iostat_rs_latency_undelivered_completions_total{device=\"loop0\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("iostat_rs_latency_unmatched_completions_total{device=\"loop0\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("iostat_rs_latency_unmatched_completions_total{device=\"sda\"} 0\n"),
            "{text}"
        );
        // Its numbers taken by another device (partitions added again in
        // another order): that one starts from zero, not from loop0's.
        let swapped = [("loop0p2", (7, 0)), ("sda", (8, 0))];
        e.add(&Interval::default(), &swapped, None);
        assert_eq!(e.totals[&(7, 0)].latency[0].count, 0, "loop0p2's own");
        assert_eq!(e.totals[&(7, 0)].unmatched, 0, "loop0p2's own");
    }
}
