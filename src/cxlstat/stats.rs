//! Counter readings and what an interval makes of them: deltas, scaling of
//! multiplexed counts as perf does (count × enabled / running), the running
//! percentage, and "not counted" for an event that never ran.

use crate::common::counter::{Width, delta};

/// One cumulative reading of an event: its count and times in nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reading {
    /// Event count.
    pub count: u64,
    /// Time the event was enabled.
    pub enabled: u64,
    /// Time the event was actually counting on the hardware.
    pub running: u64,
}

/// Words of a single event's `read()` (`value, time_enabled, time_running`).
pub const SINGLE_WORDS: usize = 3;

/// Words of a group's `read()` with `GROUP | ID | TIMES` for `members` events:
/// `nr, time_enabled, time_running`, then `value, id` per member.
pub fn group_words(members: usize) -> usize {
    3 + 2 * members
}

/// Parses a single event's read words.
pub fn parse_single(words: &[u64]) -> Option<Reading> {
    match *words {
        [count, enabled, running] => Some(Reading {
            count,
            enabled,
            running,
        }),
        _ => None,
    }
}

/// Parses a group's read words into `out` (one reading per member, in order).
/// Returns false when the layout does not match.
pub fn parse_group(words: &[u64], out: &mut [Reading]) -> bool {
    if words.len() != group_words(out.len()) || words[0] != out.len() as u64 {
        return false;
    }
    let (enabled, running) = (words[1], words[2]);
    for (reading, pair) in out.iter_mut().zip(words[3..].chunks_exact(2)) {
        *reading = Reading {
            count: pair[0],
            enabled,
            running,
        };
    }
    true
}

/// Checks that `current` can be a reading of an open counter that read
/// `previous` before (`None`: its first reading): the kernel's count, time
/// enabled and time running never go back, and a counter runs only while
/// it is enabled. Otherwise says what was wrong, naming `event`: such
/// readings come from an edited or damaged recording, never from a
/// kernel, and measured they would wrap around to 2^64.
pub fn check_step(previous: Option<Reading>, current: Reading, event: &str) -> Result<(), String> {
    if let Some(previous) = previous {
        let steps = [
            ("count", "", previous.count, current.count),
            ("time enabled", " ns", previous.enabled, current.enabled),
            ("time running", " ns", previous.running, current.running),
        ];
        for (what, unit, before, now) in steps {
            if now < before {
                return Err(format!(
                    "the {what} of {event} went from {before}{unit} to {now}{unit}, expected at \
                     least {before}{unit} (an open counter's count and times never go back)"
                ));
            }
        }
    }
    if current.running > current.enabled {
        return Err(format!(
            "the time running of {event} ({} ns) is more than its time enabled ({} ns), expected \
             at most the time enabled (a counter runs only while it is enabled)",
            current.running, current.enabled
        ));
    }
    Ok(())
}

/// One event over one interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measurement {
    /// The count scaled to the enabled time; `None` when the event never ran.
    pub count: Option<u64>,
    /// Fraction of the enabled time the event was running (0 to 1).
    pub running: Option<f64>,
    /// Events per second: the count over the time the counter was enabled
    /// between the readings, which the kernel reads with the count. Exact
    /// however late a loaded machine reads a counter after its sample's
    /// time (a count over 60 ms in a 50 ms interval is 60 ms of events).
    pub rate: Option<f64>,
}

/// What happened between two readings.
pub fn measure(previous: Reading, current: Reading) -> Measurement {
    let count = delta(previous.count, current.count, Width::Bits64);
    let enabled = delta(previous.enabled, current.enabled, Width::Bits64);
    let running = delta(previous.running, current.running, Width::Bits64);
    if running == 0 || enabled == 0 {
        return Measurement::NONE;
    }
    let scaled = if running >= enabled {
        count
    } else {
        scale(count, enabled, running)
    };
    Measurement {
        count: Some(scaled),
        running: Some((running as f64 / enabled as f64).min(1.0)),
        rate: Some(scaled as f64 * 1e9 / enabled as f64),
    }
}

impl Measurement {
    /// An event that never ran between the readings.
    const NONE: Measurement = Measurement {
        count: None,
        running: None,
        rate: None,
    };
}

/// perf stat's scaling of a multiplexed count, `count * enabled / running`
/// rounded down: perf (since its counts moved to libperf) truncates, so
/// 7 counted in 4 of 10 ns shows as 17, not 18 (checked against perf 6.1
/// by tests/suite/cxlstat_perf_parity.rs). Exact in 128 bits, where perf
/// goes through a double.
pub fn scale(count: u64, enabled: u64, running: u64) -> u64 {
    let wide = count as u128 * enabled as u128 / running.max(1) as u128;
    wide.min(u64::MAX as u128) as u64
}

/// The running and enabled times (ns) between two readings.
pub fn times(previous: Reading, current: Reading) -> (u64, u64) {
    (
        delta(previous.running, current.running, Width::Bits64),
        delta(previous.enabled, current.enabled, Width::Bits64),
    )
}

/// One event over several PMUs, from each PMU's (previous, current)
/// readings, as perf stat aggregates them: the counts, each scaled on its
/// own, add up, and the running fraction is the summed time running over
/// the summed time enabled, a PMU that never ran included (as `-x` prints
/// it); the rate is the sum of the PMUs' rates; `None` when none ran.
pub fn sum(parts: impl IntoIterator<Item = (Reading, Reading)>) -> Measurement {
    let (mut count, mut rate, mut ran) = (0u64, 0.0, false);
    let (mut running, mut enabled) = (0u64, 0u64);
    for (previous, current) in parts {
        let (run, ena) = times(previous, current);
        running = running.saturating_add(run);
        enabled = enabled.saturating_add(ena);
        let part = measure(previous, current);
        if let (Some(c), Some(r)) = (part.count, part.rate) {
            count = count.saturating_add(c);
            rate += r;
            ran = true;
        }
    }
    if !ran {
        return Measurement::NONE;
    }
    Measurement {
        count: Some(count),
        // A part that ran had time enabled: `enabled` is not 0.
        running: Some((running as f64 / enabled as f64).min(1.0)),
        rate: Some(rate),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(count: u64, enabled: u64, running: u64) -> Reading {
        Reading {
            count,
            enabled,
            running,
        }
    }

    #[test]
    fn full_time_counts_are_not_scaled() {
        let m = measure(r(100, 1_000, 1_000), r(600, 2_000, 2_000));
        assert_eq!(m.count, Some(500));
        assert_eq!(m.running, Some(1.0));
        // 500 events in the 1,000 ns the counter was enabled.
        assert_eq!(m.rate, Some(5e8));
    }

    #[test]
    fn multiplexed_counts_are_scaled_to_the_enabled_time() {
        // Ran a quarter of the interval and counted 250: perf shows 1000 (25.00%).
        let m = measure(r(0, 0, 0), r(250, 4_000, 1_000));
        assert_eq!(m.count, Some(1_000));
        assert_eq!(m.running, Some(0.25));
        assert_eq!(
            m.rate,
            Some(2.5e8),
            "the scaled count over the enabled time"
        );
        // Rounded down, as perf 6.1 prints them: 1 * 3 / 2 = 1.5 -> 1,
        // 7 * 10 / 4 = 17.5 -> 17.
        assert_eq!(measure(r(0, 0, 0), r(1, 3, 2)).count, Some(1));
        assert_eq!(measure(r(0, 0, 0), r(7, 10, 4)).count, Some(17));
        // Beyond 64 bits in the product, exact; saturated if the result is.
        assert_eq!(scale(u64::MAX / 2, 4, 2), u64::MAX - 1);
        assert_eq!(scale(u64::MAX, 3, 1), u64::MAX);
    }

    #[test]
    fn an_event_that_never_ran_is_not_counted() {
        let m = measure(r(5, 100, 0), r(5, 900, 0));
        assert_eq!(m, Measurement::NONE);
        assert_eq!(measure(r(0, 0, 0), r(0, 0, 0)), Measurement::NONE);
    }

    #[test]
    fn group_reads_share_times_and_check_their_layout() {
        let mut out = [Reading::default(); 2];
        assert!(parse_group(&[2, 50, 40, 7, 100, 9, 101], &mut out));
        assert_eq!(out, [r(7, 50, 40), r(9, 50, 40)]);
        assert!(!parse_group(&[3, 50, 40, 7, 100, 9, 101], &mut out));
        assert!(!parse_group(&[2, 50, 40, 7, 100], &mut out));
        assert_eq!(parse_single(&[1, 2, 3]), Some(r(1, 2, 3)));
        assert_eq!(parse_single(&[1, 2]), None);
    }

    #[test]
    fn readings_that_go_back_or_run_longer_than_enabled_are_refused() {
        let before = Some(r(100, 1_000, 800));
        assert_eq!(check_step(before, r(100, 1_000, 800), "e"), Ok(()));
        assert_eq!(check_step(before, r(150, 2_000, 800), "e"), Ok(()));
        assert_eq!(check_step(None, r(5, 10, 10), "e"), Ok(()));
        assert_eq!(
            check_step(before, r(5, 2_000, 1_800), "clock_ticks"),
            Err(
                "the count of clock_ticks went from 100 to 5, expected at least 100 (an open \
                 counter's count and times never go back)"
                    .to_string()
            )
        );
        let err = check_step(before, r(100, 999, 800), "e").unwrap_err();
        assert!(
            err.contains(
                "time enabled of e went from 1000 ns to 999 ns, expected at least 1000 ns"
            ),
            "{err}"
        );
        let err = check_step(before, r(100, 1_000, 799), "e").unwrap_err();
        assert!(
            err.contains("time running of e went from 800 ns to 799 ns"),
            "{err}"
        );
        // Checked on a first reading too, where nothing came before.
        let err = check_step(None, r(5, 10, 11), "e").unwrap_err();
        assert!(
            err.contains("time running of e (11 ns) is more than its time enabled (10 ns)"),
            "{err}"
        );
    }

    #[test]
    fn sums_add_scaled_counts_and_the_times_of_every_pmu() {
        let start = r(0, 0, 0);
        // 10 counted all of 100 ns; nothing in 100 ns of not running; 6
        // counted in 30 of 100 ns, scaled to 20. Running: 130 of 300 ns.
        let parts = [
            (start, r(10, 100, 100)),
            (start, r(0, 100, 0)),
            (start, r(6, 100, 30)),
        ];
        assert_eq!(
            sum(parts),
            Measurement {
                count: Some(30),
                running: Some(130.0 / 300.0),
                // 10 and 20 (scaled) events in 100 ns each.
                rate: Some(3e8),
            }
        );
        let idle = (start, r(0, 100, 0));
        assert_eq!(sum([idle, idle]), Measurement::NONE);
    }
}
