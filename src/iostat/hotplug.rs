//! The CPU shares of iostat-rs's own formats (CSV, NDJSON, SVG) over an
//! interval in which a CPU went offline or came online.
//!
//! The kernel's `cpu ` line of `/proc/stat` sums every possible CPU, an
//! offline one with its tick-based idle and iowait, which are not the
//! times its line showed while it was online: when `cpu1` goes offline the
//! sum's idle jumps (a 2-CPU VM: `%idle` 178.15) and its iowait drops, and
//! when it comes back they fall back (every share 0.00). sysstat's iostat
//! prints those shares, and so does iostat-rs's text and `-o JSON`; the
//! formats of iostat-rs's own, documented as ratios from 0 to 1, take the
//! shares as sysstat's mpstat takes its `all` row: the sum of the `cpuN`
//! lines, each CPU compared with its line when last seen (its idle and
//! iowait from zero if they went back, as mpstat takes them), a CPU never
//! seen before left out (the `cpu ` line's shares when every one is new).

use std::collections::BTreeMap;

use super::expose::per_cpu_ticks;
use super::model::{CpuPercent, cpu_percent};
use super::parse::CpuTicks;

/// The `cpuN` lines seen so far: each CPU's last line, and which CPUs the
/// last sample listed.
#[derive(Debug, Default)]
pub struct CpuLines {
    last: BTreeMap<String, CpuTicks>,
    listed: Vec<String>,
}

impl CpuLines {
    /// The shares of the interval ending with the `/proc/stat` text
    /// `stat`: `aggregate` (sysstat's, from the `cpu ` line) while the same
    /// CPUs are listed, else those of the sum of the `cpuN` lines.
    pub fn shares(&mut self, stat: &[u8], aggregate: CpuPercent) -> CpuPercent {
        let lines = per_cpu_ticks(stat);
        let same = lines.iter().map(|(cpu, _)| cpu).eq(self.listed.iter());
        let first = self.last.is_empty();
        let shares = if same || first {
            aggregate
        } else {
            self.summed(&lines).unwrap_or(aggregate)
        };
        self.listed = lines.iter().map(|(cpu, _)| cpu.clone()).collect();
        for (cpu, fields) in lines {
            self.last.insert(cpu, CpuTicks::from(fields));
        }
        shares
    }

    /// The shares of the listed CPUs seen before, each since it was last
    /// seen; `None` when none was (no sum to take).
    fn summed(&self, lines: &[(String, [u64; 10])]) -> Option<CpuPercent> {
        let (mut prev, mut cur) = (CpuTicks::default(), CpuTicks::default());
        let mut any = false;
        for (cpu, fields) in lines {
            if let Some(seen) = self.last.get(cpu) {
                let now = CpuTicks::from(*fields);
                add(&mut prev, &came_back(seen, &now));
                add(&mut cur, &now);
                any = true;
            }
        }
        any.then(|| cpu_percent(&prev, &cur))
    }
}

/// The line `seen` a CPU is compared with, now that it shows `now`, as
/// sysstat's `get_per_cpu_interval` (mpstat's `all` row) takes it: a CPU
/// back online may restart its idle and iowait from zero, so one that went
/// back counts from zero (an iowait that went back while idle did not, as
/// iowait turned idle: from where it is now). Summed as they were, the
/// lower idle made the sum's total go back, and every share 0.
fn came_back(seen: &CpuTicks, now: &CpuTicks) -> CpuTicks {
    /// Above it, a counter that went back is taken to have wrapped.
    const WRAPPED: u64 = u64::MAX - 0x7ffff;
    let mut seen = *seen;
    if now.iowait < seen.iowait && seen.iowait < WRAPPED {
        seen.iowait = if now.idle > seen.idle || seen.idle >= WRAPPED {
            now.iowait
        } else {
            0
        };
    }
    if now.idle < seen.idle && seen.idle < WRAPPED {
        seen.idle = 0;
    }
    seen
}

/// Adds `t` to `sum`, field by field.
fn add(sum: &mut CpuTicks, t: &CpuTicks) {
    sum.user = sum.user.wrapping_add(t.user);
    sum.nice = sum.nice.wrapping_add(t.nice);
    sum.system = sum.system.wrapping_add(t.system);
    sum.idle = sum.idle.wrapping_add(t.idle);
    sum.iowait = sum.iowait.wrapping_add(t.iowait);
    sum.hardirq = sum.hardirq.wrapping_add(t.hardirq);
    sum.softirq = sum.softirq.wrapping_add(t.softirq);
    sum.steal = sum.steal.wrapping_add(t.steal);
    sum.guest = sum.guest.wrapping_add(t.guest);
    sum.guest_nice = sum.guest_nice.wrapping_add(t.guest_nice);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum(c: &CpuPercent) -> f64 {
        c.user + c.nice + c.system + c.iowait + c.steal + c.idle
    }

    /// The shares the `cpu ` line gives, for the intervals without hotplug.
    const AGGREGATE: CpuPercent = CpuPercent {
        user: 1.0,
        nice: 2.0,
        system: 3.0,
        iowait: 4.0,
        steal: 5.0,
        idle: 85.0,
    };

    /// A CPU back online whose idle and iowait restarted from zero (as
    /// sysstat's `get_per_cpu_interval` says they did on some kernels):
    /// its previous ones count as zero, as in mpstat's `all` row, rather
    /// than sum to less than before and leave every share at 0.
    #[test]
    fn a_cpu_back_with_its_idle_restarted_still_gives_shares() {
        let mut lines = CpuLines::default();
        let stat = |lines: &[&str]| lines.join("\n").into_bytes();
        lines.shares(
            &stat(&[
                "cpu0 1000 0 100 5000 40 0 0 0 0 0",
                "cpu1 1000 0 100 900000 7000 0 0 0 0 0",
            ]),
            AGGREGATE,
        );
        lines.shares(&stat(&["cpu0 1080 0 110 5010 40 0 0 0 0 0"]), AGGREGATE);
        let back = lines.shares(
            &stat(&[
                "cpu0 1160 0 120 5020 40 0 0 0 0 0",
                "cpu1 1090 0 110 10 0 0 0 0 0 0",
            ]),
            AGGREGATE,
        );
        // cpu0: 80 user, 10 system, 10 idle; cpu1: 90 user, 10 system and
        // 10 idle since it came back.
        assert!((sum(&back) - 100.0).abs() < 1e-9, "{back:?}");
        assert!((back.user - 170.0 / 210.0 * 100.0).abs() < 1e-9, "{back:?}");
        assert!((back.idle - 20.0 / 210.0 * 100.0).abs() < 1e-9, "{back:?}");
    }

    /// When none of the CPUs listed was seen before (cpu0 went offline as
    /// cpu1 came online), there is no sum to take: the `cpu ` line's
    /// shares, not shares of nothing (every one 0).
    #[test]
    fn cpus_all_new_give_the_aggregate() {
        let mut lines = CpuLines::default();
        lines.shares(b"cpu0 1000 0 100 5000 40 0 0 0 0 0\n", AGGREGATE);
        let new = lines.shares(b"cpu1 1000 0 100 5000 40 0 0 0 0 0\n", AGGREGATE);
        assert_eq!(new, AGGREGATE);
    }
}
