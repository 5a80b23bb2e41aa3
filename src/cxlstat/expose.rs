//! cxlstat's Prometheus exposition: each event's cumulative reading since
//! it was opened, per PMU, with the times perf reports for multiplexing, so
//! that Prometheus computes rates and the scaling itself:
//! `rate(counted) * rate(enabled) / rate(running)` is the interval output's
//! scaled rate (see `contrib/prometheus/` and docs/prometheus.md).
//!
//! There is no scaled total: `count * enabled / running` of cumulative
//! readings is an estimate that goes down whenever the event runs more of
//! a later stretch than of the earlier ones, and a Prometheus counter that
//! goes down reads as a restart, which `rate()` turns into a burst of
//! events that never happened.

use crate::common::expo::{Exposition, Family, Kind};

use super::stats::Reading;

const COUNTED: Family = Family {
    name: "cxlstat_event_counted_total",
    kind: Kind::Counter,
    help: "Events counted while the event was on a hardware counter (not scaled).",
};

const ENABLED: Family = Family {
    name: "cxlstat_event_enabled_seconds_total",
    kind: Kind::Counter,
    help: "Time the event was enabled (perf time_enabled).",
};

const RUNNING: Family = Family {
    name: "cxlstat_event_running_seconds_total",
    kind: Kind::Counter,
    help: "Time the event was on a hardware counter (perf time_running).",
};

/// Nanoseconds to seconds.
fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// The value of a family for one reading.
type ValueOf = fn(Reading) -> f64;

/// Appends the families for `series`: (PMU, event, reading) each.
pub fn expose(series: &[(&str, &str, Reading)], e: &mut Exposition) {
    let families: [(&Family, ValueOf); 3] = [
        (&COUNTED, |r| r.count as f64),
        (&ENABLED, |r| seconds(r.enabled)),
        (&RUNNING, |r| seconds(r.running)),
    ];
    for (family, value) in families {
        e.family(family);
        for &(pmu, event, reading) in series {
            e.sample(&[("pmu", pmu), ("event", event)], value(reading));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_with_their_times_and_no_scaled_total() {
        let r = Reading {
            count: 1000,
            enabled: 3_000_000_000,
            running: 1_000_000_000,
        };
        let never = Reading {
            count: 0,
            enabled: 5,
            running: 0,
        };
        let mut e = Exposition::new();
        expose(
            &[("cxl_pmu_mem0.0", "clock_ticks", r), ("p", "x", never)],
            &mut e,
        );
        let text = e.into_string();
        for line in [
            "cxlstat_event_counted_total{pmu=\"cxl_pmu_mem0.0\",event=\"clock_ticks\"} 1000\n",
            "cxlstat_event_enabled_seconds_total{pmu=\"cxl_pmu_mem0.0\",event=\"clock_ticks\"} 3\n",
            "cxlstat_event_running_seconds_total{pmu=\"cxl_pmu_mem0.0\",event=\"clock_ticks\"} 1\n",
            "cxlstat_event_counted_total{pmu=\"p\",event=\"x\"} 0\n",
            "cxlstat_event_running_seconds_total{pmu=\"p\",event=\"x\"} 0\n",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        assert!(!text.contains("cxlstat_event_scaled"), "{text}");
    }
}
