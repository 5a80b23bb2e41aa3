//! vcpustat's Prometheus exposition: the dispatch counters of every selected
//! vCPU as 64-bit running totals, the same names and types whether written
//! once, every interval or at each scrape; Prometheus computes the rates and
//! the home-node ratio (`contrib/prometheus/`, docs/prometheus.md).
//!
//! The kernel keeps each counter in a C `int`: it wraps at 2^32. A
//! [`RunningTotals`] adds each sample's change modulo 2^32 to a 64-bit
//! total, so a wrap between two samples (at most one: samples must come
//! more often than 2^32 dispatches) is not a reset for Prometheus. When the
//! statistics are switched off and on again the counters restart from zero;
//! then the totals restart too, which Prometheus sees as a counter reset.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::common::counter::{self, Width};
use crate::common::cpulist::CpuList;
use crate::common::expo::{Exposition, Family, Kind};

use super::counters::{FIELDS, Snapshot, field};
use super::report::{interval_between, was_reset};

const ENABLED: Family = Family {
    name: "vcpustat_dispatch_statistics_enabled",
    kind: Kind::Gauge,
    help: "1 when /proc/powerpc/vcpudispatch_stats is on, 0 when it is off.",
};

const DISPATCHES: Family = Family {
    name: "vcpustat_dispatches_total",
    kind: Kind::Counter,
    help: "Dispatches of the vCPU counted by the kernel since the statistics were \
           switched on (total_disp), as a 64-bit running total across 32-bit wraps.",
};

const BY_SCOPE: Family = Family {
    name: "vcpustat_dispatches_by_scope_total",
    kind: Kind::Counter,
    help: "Dispatches by where the vCPU ran relative to its previous dispatch: core \
           (same_cpu_disp), chip (same_chip_disp), socket (diff_chip_disp), cec \
           (far_chip_disp).",
};

const BY_NODE: Family = Family {
    name: "vcpustat_dispatches_by_numa_distance_total",
    kind: Kind::Counter,
    help: "Dispatches by NUMA distance from the vCPU's home node: home (numa_home_disp), \
           adj (numa_remote_disp), far (numa_far_disp).",
};

/// Label values of the scope and NUMA distance counters, with their field.
const SCOPES: [(&str, usize); 4] = [
    ("core", field::CORE),
    ("chip", field::CHIP),
    ("socket", field::SOCKET),
    ("cec", field::CEC),
];
const DISTANCES: [(&str, usize); 3] = [
    ("home", field::HOME),
    ("adj", field::ADJ),
    ("far", field::FAR),
];

/// One vCPU's last 32-bit readings and 64-bit totals.
#[derive(Debug, Clone, Copy)]
struct Totals {
    last: [u64; FIELDS],
    total: [u64; FIELDS],
}

/// 64-bit running totals of every vCPU's counters, across wraps.
#[derive(Debug, Default)]
pub struct RunningTotals {
    cpus: BTreeMap<u32, Totals>,
    on: bool,
    /// When the previous sample was taken ([`Source::elapsed`]).
    ///
    /// [`Source::elapsed`]: crate::common::source::Source::elapsed
    at: Duration,
}

impl RunningTotals {
    /// No sample yet.
    pub fn new() -> RunningTotals {
        RunningTotals::default()
    }

    /// Takes one sample of the statistics file, taken at `at` (the
    /// source's [`elapsed`] time: a counter going backwards is a wrap only
    /// if the time since the previous sample allows it, see [`was_reset`]).
    /// Says what happened to the statistics since the previous sample when
    /// someone switched them: `switched off`, or `switched off and on
    /// again` (a vCPU's counters restarted).
    ///
    /// [`elapsed`]: crate::common::source::Source::elapsed
    pub fn update(&mut self, snapshot: &Snapshot, at: Duration) -> Option<&'static str> {
        let interval = interval_between(std::mem::replace(&mut self.at, at), at);
        let cpus = match snapshot {
            Snapshot::Off => {
                let was_on = std::mem::replace(&mut self.on, false);
                self.cpus.clear();
                return was_on.then_some("switched off");
            }
            Snapshot::On(cpus) => cpus,
        };
        self.on = true;
        let mut reset = false;
        let mut seen = BTreeMap::new();
        for c in cpus {
            let now = c.counts.map(|v| v & Width::Bits32.max());
            let totals = match self.cpus.get(&c.cpu) {
                Some(t) if !(0..FIELDS).any(|i| was_reset(t.last[i], now[i], interval)) => {
                    let mut total = t.total;
                    for (i, slot) in total.iter_mut().enumerate() {
                        *slot = slot.wrapping_add(counter::delta(t.last[i], now[i], Width::Bits32));
                    }
                    Totals { last: now, total }
                }
                // New, or its counters restarted: start from what the kernel says.
                known => {
                    reset |= known.is_some();
                    Totals {
                        last: now,
                        total: now,
                    }
                }
            };
            seen.insert(c.cpu, totals);
        }
        self.cpus = seen;
        reset.then_some("switched off and on again")
    }

    /// Appends the families, for the vCPUs of `cpus` (all when `None`).
    pub fn expose(&self, cpus: Option<&CpuList>, e: &mut Exposition) {
        e.family(&ENABLED);
        e.sample(&[], if self.on { 1.0 } else { 0.0 });
        if !self.on {
            return;
        }
        let chosen: Vec<(String, &Totals)> = self
            .cpus
            .iter()
            .filter(|(cpu, _)| cpus.is_none_or(|list| list.contains(**cpu)))
            .map(|(cpu, t)| (cpu.to_string(), t))
            .collect();
        e.family(&DISPATCHES);
        for (cpu, t) in &chosen {
            e.sample(&[("cpu", cpu)], t.total[field::TOTAL] as f64);
        }
        e.family(&BY_SCOPE);
        for (cpu, t) in &chosen {
            for (scope, i) in SCOPES {
                e.sample(&[("cpu", cpu), ("scope", scope)], t.total[i] as f64);
            }
        }
        e.family(&BY_NODE);
        for (cpu, t) in &chosen {
            for (distance, i) in DISTANCES {
                e.sample(&[("cpu", cpu), ("distance", distance)], t.total[i] as f64);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vcpustat::counters::CpuCounters;

    fn on(cpu: u32, total: u64, home: u64) -> Snapshot {
        let mut counts = [0; FIELDS];
        counts[field::TOTAL] = total;
        counts[field::HOME] = home;
        Snapshot::On(vec![CpuCounters { cpu, counts }])
    }

    fn line(t: &RunningTotals, name: &str) -> String {
        let mut e = Exposition::new();
        t.expose(None, &mut e);
        e.into_string()
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_default()
            .to_string()
    }

    #[test]
    fn totals_survive_32_bit_wraps_and_restart_on_a_reset() {
        let mut t = RunningTotals::new();
        t.update(&on(3, 4_294_967_000, 10), Duration::from_secs(1));
        assert_eq!(
            line(&t, "vcpustat_dispatches_total"),
            "vcpustat_dispatches_total{cpu=\"3\"} 4294967000"
        );
        // Printed sign-extended past 2^31 and wrapped past 2^32: +596.
        t.update(&on(3, 300, 20), Duration::from_secs(2));
        assert_eq!(
            line(&t, "vcpustat_dispatches_total"),
            "vcpustat_dispatches_total{cpu=\"3\"} 4294967596"
        );
        // Switched off and on again (small values going backwards): restart.
        t.update(&on(3, 5, 1), Duration::from_secs(3));
        assert_eq!(
            line(&t, "vcpustat_dispatches_total"),
            "vcpustat_dispatches_total{cpu=\"3\"} 5"
        );
        t.update(&Snapshot::Off, Duration::from_secs(4));
        assert_eq!(
            line(&t, "vcpustat_dispatch_statistics_enabled"),
            "vcpustat_dispatch_statistics_enabled 0"
        );
        assert_eq!(line(&t, "vcpustat_dispatches_total"), "");
    }

    #[test]
    fn labels_per_scope_and_distance() {
        let mut t = RunningTotals::new();
        t.update(&on(0, 7, 6), Duration::from_secs(5));
        let mut e = Exposition::new();
        t.expose(None, &mut e);
        let text = e.into_string();
        assert!(text.contains(
            "vcpustat_dispatches_by_numa_distance_total{cpu=\"0\",distance=\"home\"} 6\n"
        ));
        assert!(text.contains("vcpustat_dispatches_by_scope_total{cpu=\"0\",scope=\"cec\"} 0\n"));
        assert_eq!(text.matches("# TYPE ").count(), 4);
    }

    #[test]
    fn a_reset_from_above_2_31_restarts_the_totals() {
        let mut t = RunningTotals::new();
        t.update(&on(0, 3_000_000_000, 0), Duration::from_secs(1));
        // A wrap would be 1,294,967,301 dispatches in a second: a reset.
        let what = t.update(&on(0, 5, 0), Duration::from_secs(2));
        assert_eq!(what, Some("switched off and on again"));
        assert_eq!(
            line(&t, "vcpustat_dispatches_total"),
            "vcpustat_dispatches_total{cpu=\"0\"} 5"
        );
    }
}
