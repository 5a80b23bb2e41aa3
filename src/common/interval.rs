//! Interval and count arguments, and the schedule of samples they define.

use std::time::{Duration, Instant};

/// Parses an interval: whole or fractional seconds (`2`, `0.25`) or a
/// humantime duration (`250ms`, `1m 30s`).
///
/// Negative, non-finite and unparsable values are refused with a message that
/// says what was expected.
pub fn parse_interval(text: &str) -> Result<Duration, String> {
    let trimmed = text.trim();
    if !trimmed.is_empty()
        && trimmed.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && let Ok(secs) = trimmed.parse::<f64>()
    {
        return Duration::try_from_secs_f64(secs)
            .map_err(|_| format!("interval {text:?} is out of range"));
    }
    humantime::parse_duration(trimmed).map_err(|_| {
        format!("invalid interval {text:?}: expected seconds (2, 0.5) or a duration (250ms, 1m)")
    })
}

/// [`parse_interval`] for a period that cannot be zero (a poll period):
/// 0 is refused by the parser, as a usage error.
pub fn parse_positive_interval(text: &str) -> Result<Duration, String> {
    match parse_interval(text)? {
        d if d.is_zero() => Err(format!("{text:?}: must be greater than 0")),
        d => Ok(d),
    }
}

/// Parses a number of reports (`COUNT`, `--interval-count`) for clap: a
/// whole number, refused with a message that says so rather than Rust's
/// "invalid digit found in string".
pub fn parse_count(text: &str) -> Result<u64, String> {
    parse_whole(text, "a whole number of reports")
}

/// Parses a number of milliseconds (`cxlstat -I`) for clap, as
/// [`parse_count`] parses a count.
pub fn parse_milliseconds(text: &str) -> Result<u64, String> {
    parse_whole(text, "a whole number of milliseconds")
}

/// A decimal `u64`, or a message naming `what` was expected.
fn parse_whole(text: &str, what: &str) -> Result<u64, String> {
    text.parse::<u64>().map_err(|err| match err.kind() {
        std::num::IntErrorKind::PosOverflow => format!("expected {what} up to {}", u64::MAX),
        _ => format!("expected {what}"),
    })
}

/// Tells whether `text` looks like an interval rather than a name: digits with
/// at most one dot, or digits followed by a humantime unit (`250ms`).
pub fn looks_like_interval(text: &str) -> bool {
    text.starts_with(|c: char| c.is_ascii_digit()) && parse_interval(text).is_ok()
}

/// Applies sysstat's meaning of an interval of 0, the same in every tool:
/// `0` is as if no interval were given (`iostat 0` prints one report), and
/// a count after `0` is a usage error (`iostat 0 3`). Returns the interval
/// that remains, `None` for a zero or missing one.
pub fn nonzero_interval(
    interval: Option<Duration>,
    count: Option<u64>,
) -> Result<Option<Duration>, String> {
    match interval {
        Some(d) if d.is_zero() && count.is_some() => {
            Err("an interval of 0 takes one report: it cannot have a count".to_string())
        }
        Some(d) if d.is_zero() => Ok(None),
        other => Ok(other),
    }
}

/// The instant `after` past `start`, for `after` up to 2^62 s (146 billion
/// years); longer waits (an interval of 10^19 s, or a huge count of
/// intervals) end at that same deadline, which never comes: the run waits for
/// a stop signal. `Instant` holds about 2^63 s, so the sum does not overflow.
pub fn instant_after(start: Instant, after: Duration) -> Instant {
    const NEVER: Duration = Duration::from_secs(1 << 62);
    // Halving only matters on a clock already past 2^62 s.
    let mut step = after.min(NEVER);
    loop {
        if let Some(due) = start.checked_add(step) {
            return due;
        }
        step /= 2;
    }
}

/// Instants on a fixed grid, `start + k * step`: when a loop's samples (or
/// polls) are due, so that a late one never makes the later ones drift.
#[derive(Debug, Clone, Copy)]
pub struct Grid {
    /// The instant now waited for.
    due: Instant,
    step: Duration,
}

impl Grid {
    /// The grid of `step` whose first instant, already taken, is `start`
    /// (a zero `step`, which no interval argument gives, counts as 1 ns).
    pub fn new(start: Instant, step: Duration) -> Grid {
        Grid {
            due: start,
            step: step.max(Duration::from_nanos(1)),
        }
    }

    /// Moves on to the next instant to wait for, given the time `now`, and
    /// returns it: one step later, or, when that is past already (the
    /// process was stopped, or a sample took longer than a step), the first
    /// instant of the grid still ahead. The instants missed are skipped, as
    /// sysstat's `alarm(2)` skips them, instead of taken back to back,
    /// which gave reports of a few microseconds each, their rates as noisy.
    pub fn advance(&mut self, now: Instant) -> Instant {
        self.due = instant_after(self.due, self.step);
        if self.due <= now {
            self.due = self.first_after(now);
        }
        self.due
    }

    /// The first instant of the grid after `now`, which is at or past `due`.
    // Out of line: only a late run takes it (build.rs, "Hot code first").
    #[cold]
    #[inline(never)]
    fn first_after(&self, now: Instant) -> Instant {
        const NANOS: u128 = 1_000_000_000;
        let step = self.step.as_nanos();
        let behind = now.saturating_duration_since(self.due).as_nanos();
        let ahead = (behind / step + 1).saturating_mul(step);
        let secs = u64::try_from(ahead / NANOS).unwrap_or(u64::MAX);
        // The remainder is under a second: no carry into `secs`.
        instant_after(self.due, Duration::new(secs, (ahead % NANOS) as u32))
    }
}

/// When samples are due: sample `k` at `start + k * interval` (a [`Grid`]),
/// so a slow sample never makes the later ones drift.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    /// Time between samples; `None` takes a single sample.
    pub interval: Option<Duration>,
    /// Number of samples; `None` runs until stopped.
    pub count: Option<u64>,
}

impl Schedule {
    /// A schedule of one sample.
    pub fn once() -> Schedule {
        Schedule {
            interval: None,
            count: Some(1),
        }
    }

    /// The instants samples are due at, given the first sample's instant;
    /// `None` for a single sample.
    pub fn grid(&self, start: Instant) -> Option<Grid> {
        self.interval.map(|step| Grid::new(start, step))
    }

    /// Whether a sample with this index should be taken at all.
    pub fn wants(&self, index: u64) -> bool {
        match (self.interval, self.count) {
            (None, _) => index == 0,
            (Some(_), Some(count)) => index < count,
            (Some(_), None) => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_positive_interval_refuses_zero_in_every_spelling() {
        for zero in ["0", "0.0", "0ms", "0s"] {
            assert_eq!(
                parse_positive_interval(zero),
                Err(format!("{zero:?}: must be greater than 0"))
            );
        }
        assert_eq!(parse_positive_interval("1ms"), Ok(Duration::from_millis(1)));
    }

    #[test]
    fn counts_and_milliseconds_are_whole_numbers_said_so() {
        assert_eq!(parse_count("3"), Ok(3));
        assert_eq!(parse_count("0"), Ok(0));
        assert_eq!(parse_milliseconds("250"), Ok(250));
        for bad in ["abc", "", "1.5", "-1", "3x"] {
            assert_eq!(
                parse_count(bad),
                Err("expected a whole number of reports".to_string()),
                "{bad:?}"
            );
        }
        assert_eq!(
            parse_milliseconds("ten"),
            Err("expected a whole number of milliseconds".to_string())
        );
        assert_eq!(
            parse_count("18446744073709551616"),
            Err("expected a whole number of reports up to 18446744073709551615".to_string())
        );
    }

    #[test]
    fn intervals_accept_seconds_fractions_and_durations() {
        assert_eq!(parse_interval("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_interval("0.25"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_interval("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_interval("1m 30s"), Ok(Duration::from_secs(90)));
        assert!(parse_interval("-1").is_err());
        assert!(parse_interval("sda").is_err());
        assert!(parse_interval("1..2").is_err());
        assert!(looks_like_interval("0.5"));
        assert!(looks_like_interval("250ms"));
        assert!(!looks_like_interval("sda"));
        assert!(!looks_like_interval("ms"));
    }

    #[test]
    fn samples_are_due_on_a_fixed_grid() {
        let s = Schedule {
            interval: Some(Duration::from_millis(250)),
            count: Some(3),
        };
        let t0 = Instant::now();
        let mut grid = s.grid(t0).unwrap();
        let ms = |n| t0 + Duration::from_millis(n);
        // On time, or late by less than a step: the next instant.
        assert_eq!(grid.advance(ms(10)), ms(250));
        assert_eq!(grid.advance(ms(260)), ms(500));
        assert_eq!(grid.advance(ms(740)), ms(750));
        // Exactly at the next instant counts as past it.
        assert_eq!(grid.advance(ms(1000)), ms(1250));
        assert!(s.wants(2));
        assert!(!s.wants(3));
        assert!(Schedule::once().wants(0));
        assert!(!Schedule::once().wants(1));
        assert!(Schedule::once().grid(t0).is_none());
    }

    /// A run stopped (SIGSTOP, Ctrl-Z) through several instants, or a
    /// sample slower than the interval, skips the instants it missed: the
    /// next sample is the first one ahead, still on the grid.
    #[test]
    fn instants_missed_are_skipped_on_the_grid() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut grid = Grid::new(t0, Duration::from_millis(200));
        assert_eq!(grid.advance(ms(5)), ms(200));
        // Stopped from 201 ms to 1.5 s: the sample of 200 ms was taken at 1.5 s.
        assert_eq!(grid.advance(ms(1_500)), ms(1_600));
        assert_eq!(grid.advance(ms(1_601)), ms(1_800));
        // A sample of 250 ms.
        assert_eq!(grid.advance(ms(2_050)), ms(2_200));
        // A day stopped, at 1 ms steps: no loop over the steps missed.
        let mut fine = Grid::new(t0, Duration::from_millis(1));
        let day = Duration::from_secs(86_400);
        assert_eq!(fine.advance(t0 + day), t0 + day + Duration::from_millis(1));
        // A zero step (no interval argument gives one) still moves on.
        let mut zero = Grid::new(t0, Duration::ZERO);
        assert_eq!(zero.advance(t0), t0 + Duration::from_nanos(1));
        assert_eq!(zero.advance(t0), t0 + Duration::from_nanos(2));
        // Past 2^32 steps (where a u32 count of steps used to stop growing).
        let mut many = Grid::new(t0, Duration::from_nanos(1));
        let later = t0 + Duration::from_secs(10);
        assert_eq!(many.advance(later), later + Duration::from_nanos(1));
    }

    #[test]
    fn huge_intervals_saturate_instead_of_overflowing() {
        let huge = parse_interval("9999999999999999999").unwrap();
        let s = Schedule {
            interval: Some(huge),
            count: Some(2),
        };
        let t0 = Instant::now();
        let mut grid = s.grid(t0).unwrap();
        let first = grid.advance(t0);
        assert!(first > t0 + Duration::from_secs(100 * 365 * 86_400));
        assert!(grid.advance(first) >= first);
        assert!(instant_after(t0, Duration::MAX) >= first);
        assert_eq!(
            instant_after(t0, Duration::from_secs(3)),
            t0 + Duration::from_secs(3)
        );
    }

    #[test]
    fn an_interval_of_zero_means_none_and_takes_no_count() {
        let zero = Some(Duration::ZERO);
        assert_eq!(nonzero_interval(zero, None), Ok(None));
        assert!(
            nonzero_interval(zero, Some(3))
                .unwrap_err()
                .contains("cannot have a count")
        );
        let two = Some(Duration::from_secs(2));
        assert_eq!(nonzero_interval(two, Some(3)), Ok(two));
        assert_eq!(nonzero_interval(None, None), Ok(None));
    }
}
