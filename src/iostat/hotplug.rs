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
//! lines, each CPU compared with its line when last seen, a CPU never seen
//! before left out.

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
            self.summed(&lines)
        };
        self.listed = lines.iter().map(|(cpu, _)| cpu.clone()).collect();
        for (cpu, fields) in lines {
            self.last.insert(cpu, CpuTicks::from(fields));
        }
        shares
    }

    /// The shares of the listed CPUs seen before, each since it was last seen.
    fn summed(&self, lines: &[(String, [u64; 10])]) -> CpuPercent {
        let (mut prev, mut cur) = (CpuTicks::default(), CpuTicks::default());
        for (cpu, fields) in lines {
            if let Some(seen) = self.last.get(cpu) {
                add(&mut prev, seen);
                add(&mut cur, &CpuTicks::from(*fields));
            }
        }
        cpu_percent(&prev, &cur)
    }
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
