//! From snapshots to reports: per-interval deltas of the 8 counters, the
//! `all` row, the selection (`--cpus`, `--sort`, `--top`) and the notes about
//! anything unusual between two samples.

use std::time::Duration;

use crate::common::counter::{self, Width};

use super::counters::{CpuCounters, FIELDS, Snapshot, field};
use crate::common::cpulist::{CpuList, format_list};

/// Dispatch counts of one vCPU (or of all of them) over an interval, or
/// since the statistics were enabled. Values are 32-bit counts.
///
/// The kernel counts every dispatch in `total` and in at most one counter
/// of each group (`core chip socket cec`, `home adj far`), so neither group
/// can sum to more than `total`. When one does, a counter passed 2^32 more
/// often than `total` did (cumulative counts after a long run, or a garbled
/// file): the shares cannot be known and are not given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Dispatches {
    counts: [u64; FIELDS],
    /// A group sums to more than `total` here or in a vCPU summed into it.
    wrapped: bool,
}

/// Whether each group of `counts` sums to at most `total`.
fn groups_fit_total(counts: &[u64; FIELDS]) -> bool {
    let total = counts[field::TOTAL];
    let sum = |fields: &[usize]| fields.iter().map(|&i| counts[i]).sum::<u64>();
    sum(&[field::CORE, field::CHIP, field::SOCKET, field::CEC]) <= total
        && sum(&[field::HOME, field::ADJ, field::FAR]) <= total
}

impl Dispatches {
    /// Counts already reduced to 32 bits, in [`field`] order.
    pub fn new(counts: [u64; FIELDS]) -> Dispatches {
        Dispatches {
            counts,
            wrapped: !groups_fit_total(&counts),
        }
    }

    /// Cumulative counts as the kernel keeps them: C `int`s, taken modulo 2^32.
    pub fn cumulative(counts: &[u64; FIELDS]) -> Dispatches {
        Dispatches::new(counts.map(|v| v & Width::Bits32.max()))
    }

    /// The counts between two samples, modulo 2^32.
    pub fn delta(previous: &[u64; FIELDS], current: &[u64; FIELDS]) -> Dispatches {
        let mut out = [0u64; FIELDS];
        for (i, slot) in out.iter_mut().enumerate() {
            *slot = counter::delta(previous[i], current[i], Width::Bits32);
        }
        Dispatches::new(out)
    }

    /// Adds another vCPU's counts.
    pub fn add(&mut self, other: &Dispatches) {
        for (a, b) in self.counts.iter_mut().zip(other.counts) {
            *a += b;
        }
        self.wrapped |= other.wrapped;
    }

    /// The counters, in [`field`] order.
    pub fn counts(&self) -> &[u64; FIELDS] {
        &self.counts
    }

    /// Counter `index` (a [`field`] constant).
    pub fn count(&self, index: usize) -> u64 {
        self.counts[index]
    }

    /// Whether shares of `total` mean anything: false when a group of
    /// counters sums to more than `total` (see [`Dispatches`]).
    pub fn shares_known(&self) -> bool {
        !self.wrapped
    }

    /// Dispatches counted (`total`).
    pub fn total(&self) -> u64 {
        self.counts[field::TOTAL]
    }

    /// Dispatches no home-node distance could be attributed to:
    /// `total - (home + adj + far)`.
    pub fn unattributed(&self) -> u64 {
        let numa = self.counts[field::HOME] + self.counts[field::ADJ] + self.counts[field::FAR];
        self.total().saturating_sub(numa)
    }

    /// `100 * count / total`, or `None` without dispatches or when the
    /// shares are unknown; never outside 0–100.
    pub fn percent_of_total(&self, count: u64) -> Option<f64> {
        self.known_total(count)
            .map(|total| 100.0 * count as f64 / total as f64)
    }

    /// The total, when there were dispatches and `count`'s share of them
    /// is known.
    fn known_total(&self, count: u64) -> Option<u64> {
        match self.total() {
            0 => None,
            total if self.wrapped || count > total => None,
            total => Some(total),
        }
    }

    /// The share of counter `index` in percent, or `None` without dispatches.
    pub fn percent(&self, index: usize) -> Option<f64> {
        self.percent_of_total(self.counts[index])
    }

    /// The home-node hit ratio in percent: `100 * home / total`.
    pub fn home_pct(&self) -> Option<f64> {
        self.percent(field::HOME)
    }

    /// The home-node hit ratio, `home / total` (0 to 1), or `None` when
    /// [`Dispatches::home_pct`] is.
    pub fn home_ratio(&self) -> Option<f64> {
        let home = self.counts[field::HOME];
        self.known_total(home)
            .map(|total| home as f64 / total as f64)
    }
}

/// One vCPU's row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuRow {
    /// Logical CPU number.
    pub cpu: u32,
    /// Its dispatches.
    pub dispatches: Dispatches,
}

/// What to show and in which order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum SortKey {
    /// By CPU number.
    #[default]
    Cpu,
    /// Worst home-node hit ratio first.
    Home,
    /// Most dispatches first.
    Total,
    /// Highest share on an adjacent node first.
    Adj,
    /// Highest share on a far node first.
    Far,
}

/// The vCPUs a report shows.
#[derive(Debug, Clone, Copy, Default)]
pub struct Selection<'a> {
    /// Only these vCPUs (`--cpus`); all when `None`.
    pub cpus: Option<&'a CpuList>,
    /// Row order.
    pub sort: SortKey,
    /// At most this many rows (`--top`).
    pub top: Option<usize>,
    /// Interval reports show the counts since the statistics were enabled
    /// (`-r`) instead of the interval's, for the same vCPUs: those in both
    /// samples, as powerpc-utils shows them.
    pub cumulative: bool,
}

impl Selection<'_> {
    fn wants(&self, cpu: u32) -> bool {
        self.cpus.is_none_or(|list| list.contains(cpu))
    }
}

/// One report: rows in display order, the `all` row and notes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Report {
    /// vCPU rows, selected, sorted and cut to `--top`.
    pub rows: Vec<CpuRow>,
    /// The sum over every selected vCPU (before `--top`).
    pub all: Dispatches,
    /// Remarks about this interval.
    pub notes: Vec<String>,
    /// The counters were reset during the interval (someone else switched
    /// the statistics off and on again).
    pub reset: bool,
    /// Whether the report holds counts ([`Report::build`] made it): it has
    /// its `all` row, zeros too, also when no vCPU `--cpus` names is
    /// online. A report of notes alone has none.
    pub counted: bool,
}

impl Report {
    /// Builds a report from rows: selection, the `all` row, sorting, `--top`.
    pub fn build(mut rows: Vec<CpuRow>, selection: &Selection, mut notes: Vec<String>) -> Report {
        rows.retain(|row| selection.wants(row.cpu));
        let mut all = Dispatches::default();
        let mut wrapped = Vec::new();
        for row in &rows {
            all.add(&row.dispatches);
            if !row.dispatches.shares_known() {
                wrapped.push(format!("cpu{}", row.cpu));
            }
        }
        if !wrapped.is_empty() {
            notes.push(format!(
                "{}: counters sum to more than total (a 32-bit counter wrapped more often \
                 than total did): shares unknown",
                wrapped.join(", ")
            ));
        }
        sort_rows(&mut rows, selection.sort);
        if let Some(top) = selection.top {
            rows.truncate(top);
        }
        Report {
            rows,
            all,
            notes,
            reset: false,
            counted: true,
        }
    }
}

fn sort_rows(rows: &mut [CpuRow], key: SortKey) {
    // Each key is computed once per row. Percentages are non-negative, so
    // their bit patterns order like the values; rows without dispatches have
    // no ratio and go last for the ratio keys.
    let ratio = |pct: Option<f64>, highest_first: bool| match pct {
        None => (1, 0),
        Some(p) if highest_first => (0, u64::MAX - p.to_bits()),
        Some(p) => (0, p.to_bits()),
    };
    match key {
        SortKey::Cpu => rows.sort_by_key(|r| r.cpu),
        SortKey::Total => rows.sort_by_key(|r| (std::cmp::Reverse(r.dispatches.total()), r.cpu)),
        SortKey::Home => {
            rows.sort_by_cached_key(|r| (ratio(r.dispatches.home_pct(), false), r.cpu))
        }
        SortKey::Adj => {
            rows.sort_by_cached_key(|r| (ratio(r.dispatches.percent(field::ADJ), true), r.cpu))
        }
        SortKey::Far => {
            rows.sort_by_cached_key(|r| (ratio(r.dispatches.percent(field::FAR), true), r.cpu))
        }
    }
}

/// The cumulative report of one snapshot's CPU lines (`-r`, or no interval).
pub fn cumulative(cpus: &[CpuCounters], selection: &Selection) -> Report {
    let rows = cpus
        .iter()
        .map(|c| CpuRow {
            cpu: c.cpu,
            dispatches: Dispatches::cumulative(&c.counts),
        })
        .collect();
    Report::build(rows, selection, selected_but_offline(cpus, selection))
}

/// A note naming the vCPUs `--cpus` names that `cpus` does not hold, as
/// one CPU list: `--cpus 0-1023` on 4 vCPUs is one short note, not a
/// thousand.
fn selected_but_offline(cpus: &[CpuCounters], selection: &Selection) -> Vec<String> {
    let Some(list) = selection.cpus else {
        return Vec::new();
    };
    // In the kernel's ascending order, looked up as they are; lines out of
    // order (which the parser takes) in a sorted copy.
    let sorted;
    let cpus = if cpus.is_sorted_by_key(|c| c.cpu) {
        cpus
    } else {
        sorted = {
            let mut copy = cpus.to_vec();
            copy.sort_unstable_by_key(|c| c.cpu);
            copy
        };
        &sorted
    };
    let missing: Vec<u32> = list
        .cpus()
        .iter()
        .copied()
        .filter(|&cpu| cpus.binary_search_by_key(&cpu, |c| c.cpu).is_err())
        .collect();
    match missing[..] {
        [] => Vec::new(),
        [cpu] => vec![format!("cpu{cpu} (from --cpus) is not online")],
        _ => vec![format!(
            "cpus {} (from --cpus) are not online",
            format_list(&missing)
        )],
    }
}

/// What one sample gave in interval mode.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// A new starting point: nothing to report yet, maybe notes.
    Baseline(Vec<String>),
    /// The statistics are off.
    Off(Vec<String>),
    /// The interval's report.
    Report(Report),
}

/// Keeps the previous sample and turns each new one into a [`Step`].
#[derive(Debug, Default)]
pub struct Tracker {
    previous: Option<Vec<CpuCounters>>,
    /// When the previous sample was taken ([`Source::elapsed`]).
    ///
    /// [`Source::elapsed`]: crate::common::source::Source::elapsed
    previous_at: Duration,
    seen_off: bool,
}

/// The most dispatches a vCPU can have in a second.
///
/// A dispatch is the hypervisor giving a physical processor to the vCPU:
/// it saves the state of whatever ran there (another partition's vCPU or
/// its own idle loop), loads the vCPU's registers and MMU context, and the
/// vCPU runs until it cedes, confers or is preempted. That round trip
/// through the hypervisor takes at least a microsecond, so even a vCPU
/// that did nothing but get dispatched stays under a million a second;
/// real rates are hundreds to thousands a second (the hypervisor's
/// dispatch wheel turns every 10 ms). The bound is generous on purpose: it
/// only has to tell a wrap (a few dispatches past 2^32) from a reset seen
/// as one (billions of dispatches in one interval).
pub const MAX_DISPATCHES_PER_SECOND: u64 = 1_000_000;

/// The most dispatches [`MAX_DISPATCHES_PER_SECOND`] allows in `interval`.
fn max_dispatches(interval: Duration) -> u64 {
    let most = interval.as_nanos() * u128::from(MAX_DISPATCHES_PER_SECOND) / 1_000_000_000;
    u64::try_from(most).unwrap_or(u64::MAX)
}

/// True when a counter that went backwards was reset rather than wrapped,
/// `interval` being the time between the two samples when known.
///
/// A C `int` only wraps around 2^32 after it has gone negative (2^31 and up
/// in the 32-bit view), while a reset (the statistics re-enabled) zeroes
/// it: backwards from below 2^31 is a reset. Backwards from 2^31 or above
/// is a wrap only if the count it implies (2^32 - previous + current) could
/// have been dispatched in `interval` ([`MAX_DISPATCHES_PER_SECOND`]);
/// without an interval every such step is taken for a wrap.
pub fn was_reset(previous: u64, current: u64, interval: Option<Duration>) -> bool {
    if !counter::went_backwards(previous, current, Width::Bits32) {
        return false;
    }
    if (previous & Width::Bits32.max()) < 1 << 31 {
        return true;
    }
    interval.is_some_and(|interval| {
        counter::delta(previous, current, Width::Bits32) > max_dispatches(interval)
    })
}

/// The time from a sample taken at `before` to one taken at `now` (both
/// [`Source::elapsed`]); `None` when the clock did not advance, which two
/// real samples cannot do: a replay of a recording made without the
/// monotonic clock (by an older vcpustat) gives 0 for every sample.
///
/// [`Source::elapsed`]: crate::common::source::Source::elapsed
pub fn interval_between(before: Duration, now: Duration) -> Option<Duration> {
    now.checked_sub(before).filter(|d| !d.is_zero())
}

impl Tracker {
    /// A tracker with no previous sample.
    pub fn new() -> Tracker {
        Tracker::default()
    }

    /// Turns a snapshot taken at `at` (the source's [`elapsed`] time) into
    /// a step, keeping it for the next one.
    ///
    /// [`elapsed`]: crate::common::source::Source::elapsed
    pub fn step(&mut self, snapshot: Snapshot, at: Duration, selection: &Selection) -> Step {
        let interval = interval_between(std::mem::replace(&mut self.previous_at, at), at);
        let current = match snapshot {
            Snapshot::Off => {
                self.previous = None;
                self.seen_off = true;
                return Step::Off(vec![
                    "dispatch statistics are off (switched off by someone else?); \
                     reports resume when they are switched on again"
                        .to_string(),
                ]);
            }
            Snapshot::On(cpus) => cpus,
        };
        let Some(previous) = self.previous.replace(current) else {
            let mut notes = Vec::new();
            if std::mem::take(&mut self.seen_off) {
                notes.push(
                    "dispatch statistics are on again (their counters restarted): \
                     the next report covers the next interval"
                        .to_string(),
                );
            }
            let current = self.previous.as_deref().unwrap_or_default();
            notes.extend(selected_but_offline(current, selection));
            return Step::Baseline(notes);
        };
        let current = self.previous.as_deref().unwrap_or_default();
        Step::Report(interval_report(&previous, current, interval, selection))
    }
}

/// The report of the interval between two snapshots of CPU lines taken
/// `interval` apart (when known: see [`was_reset`]).
pub fn interval_report(
    previous: &[CpuCounters],
    current: &[CpuCounters],
    interval: Option<Duration>,
    selection: &Selection,
) -> Report {
    let mut notes = Vec::new();
    // Usually the same CPUs in the same order: pair them by position.
    let aligned = previous.len() == current.len()
        && previous.iter().zip(current).all(|(p, c)| p.cpu == c.cpu);
    let pairs: Vec<(&CpuCounters, Option<&CpuCounters>)> = current
        .iter()
        .enumerate()
        .map(|(i, cur)| {
            let prev = if aligned {
                Some(&previous[i])
            } else {
                find(previous, cur.cpu)
            };
            (cur, prev)
        })
        .collect();
    let reset = pairs.iter().any(|(cur, prev)| {
        prev.is_some_and(|prev| {
            prev.counts
                .iter()
                .zip(&cur.counts)
                .any(|(&p, &c)| was_reset(p, c, interval))
        })
    });
    if reset {
        notes.push(
            "counters were reset during this interval (the statistics were switched off \
             and on again): counts since the reset only"
                .to_string(),
        );
    }
    let mut rows = Vec::with_capacity(current.len());
    for (cur, prev) in pairs {
        match prev {
            Some(prev) => {
                let dispatches = if reset || selection.cumulative {
                    Dispatches::cumulative(&cur.counts)
                } else {
                    Dispatches::delta(&prev.counts, &cur.counts)
                };
                rows.push(CpuRow {
                    cpu: cur.cpu,
                    dispatches,
                });
            }
            None if selection.wants(cur.cpu) => notes.push(format!(
                "cpu{} came online: it is reported from the next interval",
                cur.cpu
            )),
            None => {}
        }
    }
    if !aligned {
        for prev in previous {
            if selection.wants(prev.cpu) && find(current, prev.cpu).is_none() {
                notes.push(format!("cpu{} went offline", prev.cpu));
            }
        }
    }
    let mut report = Report::build(rows, selection, notes);
    report.reset = reset;
    report
}

/// Finds a CPU in a list sorted by CPU number (the kernel's order), falling
/// back to a scan if the list is not sorted.
fn find(cpus: &[CpuCounters], cpu: u32) -> Option<&CpuCounters> {
    match cpus.binary_search_by_key(&cpu, |c| c.cpu) {
        Ok(i) => Some(&cpus[i]),
        Err(_) => cpus.iter().find(|c| c.cpu == cpu),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Option<Duration> = Some(Duration::from_secs(1));

    fn cpu(cpu: u32, counts: [u64; FIELDS]) -> CpuCounters {
        CpuCounters { cpu, counts }
    }

    #[test]
    fn the_seed_example_gives_99_7_percent_home() {
        let d = Dispatches::cumulative(&[6839, 4126, 2683, 30, 0, 6821, 18, 0]);
        let pct = d.home_pct().unwrap();
        assert!((pct - 99.736_803).abs() < 1e-5, "{pct}");
        assert_eq!(d.unattributed(), 0);
    }

    #[test]
    fn no_dispatches_means_no_ratio() {
        let d = Dispatches::default();
        assert_eq!(d.home_pct(), None);
        assert_eq!(d.percent(field::CORE), None);
    }

    #[test]
    fn deltas_are_taken_modulo_2_to_the_32() {
        // A C int that went negative prints sign-extended; it then wraps to 0.
        let prev = [
            18_446_744_073_709_551_610u64,
            0,
            0,
            0,
            0,
            18_446_744_073_709_551_610,
            0,
            0,
        ];
        let cur = [4, 0, 0, 0, 0, 2, 0, 0];
        let d = Dispatches::delta(&prev, &cur);
        assert_eq!(d.total(), 10);
        assert_eq!(d.count(field::HOME), 8);
        let report = interval_report(
            &[cpu(0, prev)],
            &[cpu(0, cur)],
            SECOND,
            &Selection::default(),
        );
        assert!(report.notes.is_empty(), "{:?}", report.notes);
    }

    #[test]
    fn a_group_above_total_has_no_shares_in_its_row_or_in_all() {
        // home is the C int -10000 (printed sign-extended), total 4096.
        let wrapped = [4096, 4000, 96, 0, 0, 18_446_744_073_709_541_616, 2000, 0];
        let d = Dispatches::cumulative(&wrapped);
        assert_eq!(d.count(field::HOME), (1 << 32) - 10_000);
        assert!(!d.shares_known());
        assert_eq!(d.home_pct(), None);
        assert_eq!(d.percent(field::CORE), None);
        let rows = vec![
            CpuRow {
                cpu: 0,
                dispatches: d,
            },
            CpuRow {
                cpu: 1,
                dispatches: Dispatches::cumulative(&[u64::from(u32::MAX), 0, 0, 0, 0, 0, 0, 0]),
            },
        ];
        let report = Report::build(rows, &Selection::default(), Vec::new());
        // The sums alone would fit (home < total), but cpu0's shares are unknown.
        let numa = [field::HOME, field::ADJ, field::FAR].map(|i| report.all.count(i));
        assert!(numa.iter().sum::<u64>() < report.all.total());
        assert_eq!(report.all.home_pct(), None);
        assert_eq!(report.rows[1].dispatches.home_pct(), Some(0.0));
        assert_eq!(report.notes.len(), 1);
        assert!(report.notes[0].starts_with("cpu0: counters sum to more than total"));
    }

    #[test]
    fn int_overflow_into_negative_is_not_a_reset() {
        let prev = [2_147_483_640, 0, 0, 0, 0, 2_147_483_640, 0, 0];
        let cur = [
            18_446_744_071_562_067_976u64,
            0,
            0,
            0,
            0,
            18_446_744_071_562_067_976,
            0,
            0,
        ];
        let report = interval_report(
            &[cpu(0, prev)],
            &[cpu(0, cur)],
            SECOND,
            &Selection::default(),
        );
        assert_eq!(report.rows[0].dispatches.total(), 16);
        assert!(report.notes.is_empty());
    }

    #[test]
    fn a_reset_counts_from_zero_and_says_so() {
        let prev = [1000, 0, 0, 0, 0, 900, 100, 0];
        let cur = [40, 0, 0, 0, 0, 30, 10, 0];
        let report = interval_report(
            &[cpu(0, prev)],
            &[cpu(0, cur)],
            SECOND,
            &Selection::default(),
        );
        assert_eq!(report.rows[0].dispatches.total(), 40);
        assert_eq!(report.rows[0].dispatches.home_pct(), Some(75.0));
        assert!(report.notes[0].contains("counters were reset"));
        assert!(report.reset);
    }

    #[test]
    fn all_is_the_ratio_of_sums_and_unattributed_shows() {
        let prev = [cpu(0, [0; 8]), cpu(1, [0; 8])];
        let cur = [
            cpu(0, [100, 0, 0, 0, 0, 100, 0, 0]),
            cpu(1, [10, 0, 0, 0, 0, 0, 5, 0]),
        ];
        let report = interval_report(&prev, &cur, SECOND, &Selection::default());
        // Mean of ratios would be 50 %; the ratio of sums is 100/110.
        let all = report.all.home_pct().unwrap();
        assert!((all - 100.0 * 100.0 / 110.0).abs() < 1e-9);
        assert_eq!(report.rows[1].dispatches.unattributed(), 5);
        assert_eq!(report.all.unattributed(), 5);
    }

    #[test]
    fn online_and_offline_cpus_are_noted() {
        let at_home = |n: u64| [n, n, 0, 0, 0, n, 0, 0];
        let prev = [cpu(0, at_home(1)), cpu(1, at_home(1))];
        let cur = [cpu(0, at_home(2)), cpu(2, at_home(5))];
        let report = interval_report(&prev, &cur, SECOND, &Selection::default());
        assert_eq!(report.rows.len(), 1);
        assert_eq!(
            report.notes,
            vec![
                "cpu2 came online: it is reported from the next interval".to_string(),
                "cpu1 went offline".to_string()
            ]
        );
    }

    #[test]
    fn selection_sorts_cuts_and_keeps_all_over_every_selected_cpu() {
        let prev: Vec<_> = (0..4).map(|c| cpu(c, [0; 8])).collect();
        let cur = vec![
            cpu(0, [10, 0, 0, 0, 0, 9, 1, 0]),
            cpu(1, [10, 0, 0, 0, 0, 5, 5, 0]),
            cpu(2, [0; 8]),
            cpu(3, [10, 0, 0, 0, 0, 7, 0, 3]),
        ];
        let list = CpuList::parse("0-2").unwrap();
        let sel = Selection {
            cpus: Some(&list),
            sort: SortKey::Home,
            top: Some(2),
            cumulative: false,
        };
        let report = interval_report(&prev, &cur, SECOND, &sel);
        let order: Vec<u32> = report.rows.iter().map(|r| r.cpu).collect();
        assert_eq!(order, vec![1, 0]);
        assert_eq!(report.all.total(), 20);
        let far = Selection {
            sort: SortKey::Far,
            ..Selection::default()
        };
        let order: Vec<u32> = interval_report(&prev, &cur, SECOND, &far)
            .rows
            .iter()
            .map(|r| r.cpu)
            .collect();
        assert_eq!(order, vec![3, 0, 1, 2]);
    }

    #[test]
    fn cpus_not_online_are_found_in_lines_out_of_order() {
        let cur: Vec<_> = [5, 2, 9, 1].into_iter().map(|c| cpu(c, [0; 8])).collect();
        let list = CpuList::parse("1,2,5,7,9").unwrap();
        let sel = Selection {
            cpus: Some(&list),
            ..Selection::default()
        };
        assert_eq!(
            cumulative(&cur, &sel).notes,
            ["cpu7 (from --cpus) is not online"]
        );
    }

    #[test]
    fn tracker_baselines_reports_and_survives_off() {
        let sel = Selection::default();
        let mut t = Tracker::new();
        let on = |n: u64| Snapshot::On(vec![cpu(0, [n, 0, 0, 0, 0, n, 0, 0])]);
        let s = Duration::from_secs;
        assert_eq!(t.step(on(10), s(1), &sel), Step::Baseline(vec![]));
        let Step::Report(r) = t.step(on(30), s(2), &sel) else {
            panic!("expected a report")
        };
        assert_eq!(r.rows[0].dispatches.total(), 20);
        assert!(matches!(t.step(Snapshot::Off, s(3), &sel), Step::Off(_)));
        let Step::Baseline(notes) = t.step(on(3), s(4), &sel) else {
            panic!("expected a baseline")
        };
        assert!(notes[0].contains("on again"));
    }

    #[test]
    fn a_reset_from_above_2_31_is_not_read_as_a_wrap() {
        // 3,000,000,000 is past 2^31; backwards to 40 would be a wrap of
        // 1,294,967,336 dispatches in one second: a reset.
        let prev = [3_000_000_000, 3_000_000_000, 0, 0, 0, 3_000_000_000, 0, 0];
        let cur = [40, 0, 0, 0, 0, 30, 10, 0];
        let report = interval_report(
            &[cpu(0, prev)],
            &[cpu(0, cur)],
            SECOND,
            &Selection::default(),
        );
        assert!(report.reset);
        assert_eq!(report.rows[0].dispatches.total(), 40);
        assert!(report.notes[0].contains("counters were reset"));
        // Without a known interval the old reading stays: a wrap.
        let report = interval_report(&[cpu(0, prev)], &[cpu(0, cur)], None, &Selection::default());
        assert!(!report.reset);
        assert_eq!(report.rows[0].dispatches.total(), 1_294_967_336);
    }

    #[test]
    fn a_wrap_is_accepted_up_to_a_million_dispatches_a_second() {
        let from = (1u64 << 32) - 1_000_000;
        assert!(!was_reset(from, 0, SECOND));
        assert!(was_reset(from, 1, SECOND));
        assert!(!was_reset(from, 1, Some(Duration::from_millis(1001))));
        assert!(was_reset(from, 0, Some(Duration::from_millis(999))));
    }

    #[test]
    fn the_tracker_times_its_samples_and_a_clock_that_stands_still_is_unknown() {
        let sel = Selection::default();
        let high = |n: u64| Snapshot::On(vec![cpu(0, [n, 0, 0, 0, 0, n, 0, 0])]);
        let s = Duration::from_secs;
        let mut t = Tracker::new();
        t.step(high(3_000_000_000), s(5), &sel);
        let Step::Report(r) = t.step(high(7), s(6), &sel) else {
            panic!("expected a report")
        };
        assert!(r.reset);
        assert_eq!(r.rows[0].dispatches.total(), 7);
        // A replay without monotonic time: every sample at 0.
        let mut t = Tracker::new();
        t.step(high(3_000_000_000), s(0), &sel);
        let Step::Report(r) = t.step(high(7), s(0), &sel) else {
            panic!("expected a report")
        };
        assert!(!r.reset);
    }
}
