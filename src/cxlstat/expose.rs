//! cxlstat's Prometheus exposition: each event's cumulative reading since
//! it was opened, per PMU, with the times perf reports for multiplexing, so
//! that Prometheus computes rates and the scaling itself:
//! `rate(counted) * rate(enabled) / rate(running)` is the interval output's
//! scaled rate (see `contrib/prometheus/` and docs/prometheus.md).

use crate::common::expo::{Exposition, Family, Kind};

use super::stats::{Reading, scale};

const COUNTED: Family = Family {
    name: "cxlstat_event_counted_total",
    kind: Kind::Counter,
    help: "Events counted while the event was on a hardware counter (not scaled).",
};

const SCALED: Family = Family {
    name: "cxlstat_event_scaled_total",
    kind: Kind::Counter,
    help: "Events counted, scaled for multiplexing as perf stat does \
           (counted * enabled / running, rounded down); absent before the event ran.",
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

/// perf's scaled count of a cumulative reading: `count * enabled / running`
/// rounded down, the count itself when it ran all the time; `None` if it never ran.
fn scaled(r: Reading) -> Option<u64> {
    if r.running == 0 || r.enabled == 0 {
        return None;
    }
    if r.running >= r.enabled {
        return Some(r.count);
    }
    Some(scale(r.count, r.enabled, r.running))
}

/// Nanoseconds to seconds.
fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// The value of a family for one reading, if it has one.
type ValueOf = fn(Reading) -> Option<f64>;

/// Appends the families for `series`: (PMU, event, reading) each.
pub fn expose(series: &[(&str, &str, Reading)], e: &mut Exposition) {
    let families: [(&Family, ValueOf); 4] = [
        (&COUNTED, |r| Some(r.count as f64)),
        (&SCALED, |r| scaled(r).map(|v| v as f64)),
        (&ENABLED, |r| Some(seconds(r.enabled))),
        (&RUNNING, |r| Some(seconds(r.running))),
    ];
    for (family, value) in families {
        e.family(family);
        for &(pmu, event, reading) in series {
            if let Some(v) = value(reading) {
                e.sample(&[("pmu", pmu), ("event", event)], v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_with_times_and_perfs_scaling() {
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
            "cxlstat_event_scaled_total{pmu=\"cxl_pmu_mem0.0\",event=\"clock_ticks\"} 3000\n",
            "cxlstat_event_enabled_seconds_total{pmu=\"cxl_pmu_mem0.0\",event=\"clock_ticks\"} 3\n",
            "cxlstat_event_running_seconds_total{pmu=\"cxl_pmu_mem0.0\",event=\"clock_ticks\"} 1\n",
            "cxlstat_event_counted_total{pmu=\"p\",event=\"x\"} 0\n",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        assert!(
            !text.contains("cxlstat_event_scaled_total{pmu=\"p\""),
            "{text}"
        );
        // 2/3 running: 10 * 3 / 2 = 15.
        assert_eq!(
            scaled(Reading {
                count: 10,
                enabled: 3,
                running: 2
            }),
            Some(15)
        );
        // Rounded down as perf does: 7 * 10 / 4 = 17.5 -> 17.
        assert_eq!(
            scaled(Reading {
                count: 7,
                enabled: 10,
                running: 4
            }),
            Some(17)
        );
    }
}
