//! `--latency`: per device and interval, request latency percentiles per
//! operation and the time-weighted queue depth, from the block tracepoints.
//!
//! * [`histogram`]: log-linear histograms and nearest-rank quantiles;
//! * [`tracker`]: issue matched to completion, requeues, partial
//!   completions, partitions (pure), over `requests`, the requests in
//!   flight, and `depth`, each device's depth held back until the
//!   kernel's count confirms it;
//! * [`collector`]: the tracepoints measured live, into the tracker, and
//!   `uevent`, which tells it when to read the partition table again;
//! * `forward`: the eBPF programs that forward them (loaded by aya);
//! * [`coverage`]: whether the histograms hold the requests the kernel
//!   counted, and the notes on stderr when they do not;
//! * [`codec`]: an interval's histograms as the numbers a recording keeps;
//! * [`prometheus`]: the histograms summed over the run, as Prometheus
//!   histograms in the expositions.
//!
//! A live run measures; `--record` stores each interval's histograms under
//! [`RECORD_KEY`]; `--replay` reads them back, so the columns are the same.

pub mod codec;
pub mod collector;
pub mod coverage;
mod depth;
mod forward;
mod hash;
pub mod histogram;
pub mod prometheus;
mod requests;
pub mod tracker;
mod uevent;

use std::fmt::Write as _;
use std::io;

use crate::common::source::Source;

use codec::Interval;
use collector::Collector;
use histogram::{Histogram, bucket_high, bucket_low};
use tracker::{DeviceHistograms, OPS};

/// The key of the histograms in a recording's frames (`values latency`).
pub const RECORD_KEY: &str = "latency";

/// The operation prefixes, in [`tracker::Op`] order.
pub const OP_NAMES: [&str; OPS] = ["r", "w", "d", "f"];

/// Where the histograms come from: the kernel, or a recording.
pub struct Latency {
    collector: Option<Collector>,
}

impl Latency {
    /// Starts measuring the running kernel when `live` (partitions too
    /// with `-p`); a replay measures nothing and reads the recorded
    /// histograms.
    // Out of line: only this mode runs it (build.rs, "Hot code first").
    #[inline(never)]
    pub fn start(live: bool, partitions: bool) -> Result<Latency, String> {
        let collector = if live {
            let c = Collector::start(partitions)?;
            if let Some(why) = c.notice() {
                crate::common::stderr::print(format_args!(
                    "iostat-rs: --latency: {why}: sampling the tracepoints with perf instead, \
                     which misses completions in interrupts of an idle CPU on some kernels\n"
                ));
            }
            Some(c)
        } else {
            None
        };
        Ok(Latency { collector })
    }

    /// Tells the measurement that the report reads the kernel's counters
    /// now: the requests completed from here on are the next report's.
    /// Nothing in a replay.
    pub fn counters_read_next(&self) {
        if let Some(c) = &self.collector {
            c.counters_read_next();
        }
    }

    /// The histograms of the interval ending where
    /// [`Latency::counters_read_next`] marked (recorded on the way).
    // Out of line: only this mode runs it (build.rs, "Hot code first").
    #[inline(never)]
    pub fn sample(&self, src: &dyn Source) -> Result<Interval, String> {
        let mut read = || match &self.collector {
            Some(c) => {
                let interval = c.take().encode();
                if let Some(why) = c.refusal() {
                    crate::common::stderr::print(format_args!(
                        "iostat-rs: --latency: {why}; it is tried again every 0.1 s, and its \
                         requests are missing from the histograms until it is traced (this \
                         line is not repeated)\n"
                    ));
                }
                Ok(interval)
            }
            None => Err(io::Error::from(io::ErrorKind::NotFound)),
        };
        let values = src.values(RECORD_KEY, &mut read).map_err(|_| {
            "the recording has no latency histograms (it was recorded without --latency)"
                .to_string()
        })?;
        Interval::decode(&values).ok_or_else(|| {
            "the recording's latency histograms are damaged (not the layout --latency writes)"
                .to_string()
        })
    }
}

/// What the reports show of one device's histograms: `-` in the text
/// report and `null` in the machine formats where a figure is withheld
/// (`None`), since a withheld figure is unknown, not zero.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyStats {
    /// Per operation: p50, p99 and max latency in ms (`None`: no request,
    /// shown as 0.00 in text as sysstat shows an `r_await` without reads);
    /// `None` where the histograms fall short (`coverage::shortfall`).
    pub ops: Option<[Option<[f64; 3]>; OPS]>,
    /// Time-weighted queue depth p50 (an upper bound, as the latencies':
    /// the device was at or below it for at least half of the interval)
    /// and max, 0 for a device idle all along; `None` where withheld.
    pub depth: Option<[u64; 2]>,
}

impl LatencyStats {
    /// Nothing shown: the histograms fall short of the kernel's counts.
    pub const WITHHELD: LatencyStats = LatencyStats {
        ops: None,
        depth: None,
    };

    /// The figures of `h`. A device the tracker did not follow in the
    /// interval (an empty depth histogram) was idle all along: depth 0.
    pub fn of(h: &DeviceHistograms) -> LatencyStats {
        let ms = |ns: u64| ns as f64 / 1e6;
        let mut ops = [None; OPS];
        for (out, hist) in ops.iter_mut().zip(&h.latency) {
            *out = hist
                .quantile_high(0.5)
                .zip(hist.quantile_high(0.99))
                .map(|(p50, p99)| [ms(p50), ms(p99), ms(hist.max)]);
        }
        let depth = h
            .depth
            .quantile_high(0.5)
            .map_or([0, 0], |p50| [p50, h.depth.max]);
        LatencyStats {
            ops: Some(ops),
            depth: Some(depth),
        }
    }
}

/// What one device's histograms of an interval miss, as every
/// machine-readable format tells it (the Prometheus expositions sum them
/// since the start): the samples the kernel `lost`, of every device, and
/// the device's completions left `unmatched` and requests whose
/// completion never arrived (`undelivered`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Losses {
    /// Samples the kernel dropped in the interval ([`Interval::lost`]).
    pub lost: u64,
    /// The device's completions whose request is not known
    /// ([`Interval::unmatched_on`]).
    pub unmatched: u64,
    /// The device's completions that never arrived
    /// ([`Interval::undelivered_on`]).
    pub undelivered: u64,
}

/// A histogram's non-empty buckets as text, `LOW-HIGH:COUNT` separated by
/// spaces (the bounds inclusive, in the histogram's unit).
pub fn buckets_text(h: &Histogram) -> String {
    let mut out = String::new();
    for (i, c) in h.buckets() {
        if !out.is_empty() {
            out.push(' ');
        }
        let _ = write!(out, "{}-{}:{c}", bucket_low(i), bucket_high(i));
    }
    out
}

/// A histogram's non-empty buckets as a JSON array of `[low, high, count]`.
pub fn buckets_json(h: &Histogram) -> String {
    let mut out = String::from("[");
    for (n, (i, c)) in h.buckets().enumerate() {
        if n > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "[{}, {}, {c}]", bucket_low(i), bucket_high(i));
    }
    out.push(']');
    out
}

/// `-o JSON`'s `latency` object of one device: per operation `p50`, `p99`
/// and `max` in ms of `stats` (`%.2f`, 0.00 without requests, as the text
/// report; `null` where withheld) and `buckets_ns` of `h`; the queue
/// depth's `p50`, `max` (`null` where withheld) and `buckets` (depths and
/// the ns spent at them); then what the histograms miss (`losses`): the
/// samples the kernel `lost`, the device's requests whose completion never
/// arrived (`undelivered`) and its completions of no known request
/// (`unmatched`).
pub fn json_object(h: &DeviceHistograms, stats: &LatencyStats, losses: &Losses) -> String {
    let mut out = String::from("{");
    for (i, (name, hist)) in OP_NAMES.iter().zip(&h.latency).enumerate() {
        let _ = write!(out, "\"{name}\": {{");
        match stats.ops.map(|ops| ops[i].unwrap_or_default()) {
            Some([p50, p99, max]) => {
                let _ = write!(
                    out,
                    "\"p50\": {p50:.2}, \"p99\": {p99:.2}, \"max\": {max:.2}"
                );
            }
            None => out.push_str("\"p50\": null, \"p99\": null, \"max\": null"),
        }
        let _ = write!(out, ", \"buckets_ns\": {}}}, ", buckets_json(hist));
    }
    match stats.depth {
        Some([p50, max]) => {
            let _ = write!(out, "\"qd\": {{\"p50\": {p50}, \"max\": {max}");
        }
        None => out.push_str("\"qd\": {\"p50\": null, \"max\": null"),
    }
    let Losses {
        lost,
        unmatched,
        undelivered,
    } = losses;
    let _ = write!(
        out,
        ", \"buckets\": {}}}, \"lost\": {lost}, \"undelivered\": {undelivered}, \
         \"unmatched\": {unmatched}}}",
        buckets_json(&h.depth)
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_and_bucket_texts() {
        let mut h = DeviceHistograms::default();
        for _ in 0..99 {
            h.latency[0].add(2_000_000, 1);
        }
        h.latency[0].add(20_000_000, 1);
        h.depth.add(1, 5);
        h.depth.add(3, 1);
        let s = LatencyStats::of(&h);
        let ops = s.ops.unwrap();
        assert_eq!(ops[0], Some([2.031615, 2.031615, 20.0]));
        assert_eq!(ops[1], None);
        assert_eq!(s.depth, Some([1, 3]));
        assert_eq!(buckets_text(&h.depth), "1-1:5 3-3:1");
        assert_eq!(buckets_json(&h.depth), "[[1, 1, 5], [3, 3, 1]]");
        assert_eq!(buckets_json(&Histogram::default()), "[]");
        let losses = Losses {
            lost: 2,
            unmatched: 4,
            undelivered: 3,
        };
        let json: serde_json::Value = serde_json::from_str(&json_object(&h, &s, &losses)).unwrap();
        assert_eq!(json["r"]["p50"], 2.03);
        assert_eq!(json["r"]["max"], 20.0);
        assert_eq!(json["w"]["p99"], 0.0);
        assert_eq!(json["qd"]["buckets"][1][2], 1);
        assert_eq!(json["lost"], 2);
        assert_eq!(json["undelivered"], 3);
        assert_eq!(json["unmatched"], 4);
        // Idle all along: depth 0, latencies as without requests.
        let idle = LatencyStats::of(&DeviceHistograms::default());
        assert_eq!(idle.depth, Some([0, 0]));
        assert_eq!(idle.ops, Some([None; OPS]));
        // Withheld: unknown, not zero.
        let json = json_object(&h, &LatencyStats::WITHHELD, &Losses::default());
        let json: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert!(
            json["r"]["p50"].is_null() && json["d"]["max"].is_null(),
            "{json}"
        );
        assert!(
            json["qd"]["p50"].is_null() && json["qd"]["max"].is_null(),
            "{json}"
        );
        assert_eq!(json["qd"]["buckets"][1][2], 1);
    }

    #[test]
    fn qd_p50_is_a_depth_held_for_half_the_interval() {
        // docs/iostat-rs.md: "`qd_p50` is the depth the device was at (or
        // below) for half of the interval". A device at 65 the whole
        // second was at or below 64 for none of it.
        let mut h = DeviceHistograms::default();
        h.depth.add(65, 1_000_000_000);
        assert_eq!(LatencyStats::of(&h).depth, Some([65, 65]));
        // 0.6 s at 40 (bucket 40-41), 0.4 s at 70: the bucket's top.
        let mut h = DeviceHistograms::default();
        h.depth.add(40, 600_000_000);
        h.depth.add(70, 400_000_000);
        assert_eq!(LatencyStats::of(&h).depth, Some([41, 70]));
    }
}
