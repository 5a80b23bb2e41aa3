//! Interval and count arguments, and the schedule of samples they define.

use std::time::{Duration, Instant};

use super::escape::quoted;

/// Parses an interval: whole or fractional seconds (`2`, `0.25`) or a
/// humantime duration (`250ms`, `1m 30s`), with blanks around it and a
/// leading `+` allowed, as a count takes them ([`parse_count`]).
///
/// Negative, non-finite and unparsable values are refused with a message that
/// says what was expected, and so is a positive one shorter than 1 ns
/// (`0.0000000001`), which would otherwise become an interval of 0 (one
/// report, [`nonzero_interval`]).
pub fn parse_interval(text: &str) -> Result<Duration, String> {
    let trimmed = text.trim();
    let trimmed = trimmed.strip_prefix('+').unwrap_or(trimmed);
    if !trimmed.is_empty()
        && trimmed.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && let Ok(secs) = trimmed.parse::<f64>()
    {
        return match Duration::try_from_secs_f64(secs) {
            Ok(d) if d.is_zero() && secs > 0.0 => Err(format!(
                "interval {} is shorter than 1 ns: expected 0 or at least 0.000000001",
                quoted(text)
            )),
            Ok(d) => Ok(d),
            Err(_) => Err(format!("interval {} is out of range", quoted(text))),
        };
    }
    humantime::parse_duration(trimmed).map_err(|_| {
        format!(
            "invalid interval {}: expected seconds (2, 0.5) or a duration (250ms, 1m)",
            quoted(text)
        )
    })
}

/// [`parse_interval`] for a period that cannot be zero (a poll period):
/// 0 is refused by the parser, as a usage error.
pub fn parse_positive_interval(text: &str) -> Result<Duration, String> {
    match parse_interval(text)? {
        d if d.is_zero() => Err(format!("{}: must be greater than 0", quoted(text))),
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

/// A decimal `u64` (blanks around it and a leading `+` allowed, as C's
/// `atoi` and `strtoul` allow them), or a message naming `what` was
/// expected.
fn parse_whole(text: &str, what: &str) -> Result<u64, String> {
    text.trim().parse::<u64>().map_err(|err| match err.kind() {
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

/// When a loop's samples (or polls) are due: one step apart, counted from
/// the instant the previous one was due, so that a sample taken a little
/// late never makes the later ones drift.
#[derive(Debug, Clone, Copy)]
pub struct Grid {
    /// The instant the next sample is due.
    due: Instant,
    step: Duration,
}

impl Grid {
    /// The grid of `step` whose first sample is taken at `start` (a zero
    /// `step`, which no interval argument gives, counts as 1 ns).
    pub fn new(start: Instant, step: Duration) -> Grid {
        let step = step.max(Duration::from_nanos(1));
        Grid {
            due: instant_after(start, step),
            step,
        }
    }

    /// The instant the next sample is due.
    pub fn due(&self) -> Instant {
        self.due
    }

    /// Takes note that the sample due at [`Grid::due`] starts at `now`, and
    /// moves on to the next one: a step after the instant this one was
    /// due, or, when `now` is a whole step or more past that instant (the
    /// process was stopped, or an earlier sample took longer than a step),
    /// a step after `now`. The report of this sample then covers the stall
    /// and the next one a whole step, as with sysstat's `alarm(2)`; taking
    /// the samples missed back to back gave reports microseconds apart.
    pub fn start_sample(&mut self, now: Instant) {
        let next = instant_after(self.due, self.step);
        self.due = if now >= next {
            instant_after(now, self.step)
        } else {
            next
        };
    }
}

/// When samples are due: one interval apart (a [`Grid`]), so a slow sample
/// never makes the later ones drift.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    /// Time between samples; `None` takes a single sample.
    pub interval: Option<Duration>,
    /// Number of samples; `None` runs until stopped.
    pub count: Option<u64>,
    /// Whether the first sample only starts the run, without a report of
    /// its own (the baseline of the first interval's, or `-y`): a replay
    /// that holds no other sample then has nothing to report.
    pub first_starts_only: bool,
}

impl Schedule {
    /// A schedule of one sample.
    pub fn once() -> Schedule {
        Schedule {
            interval: None,
            count: Some(1),
            first_starts_only: false,
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
    fn an_interval_takes_blanks_and_a_plus_as_a_count_does() {
        for text in ["2", " 2", "2 ", "+2", " +2 "] {
            assert_eq!(parse_interval(text), Ok(Duration::from_secs(2)), "{text:?}");
            assert_eq!(parse_count(text), Ok(2), "{text:?}");
        }
        assert_eq!(parse_interval("+250ms"), Ok(Duration::from_millis(250)));
        assert!(parse_interval("++2").is_err());
        // Below a nanosecond is not 0.
        assert_eq!(
            parse_interval("0.0000000001"),
            Err(
                "interval \"0.0000000001\" is shorter than 1 ns: expected 0 or at least \
                 0.000000001"
                    .to_string()
            )
        );
        assert_eq!(parse_interval("0.000000001"), Ok(Duration::from_nanos(1)));
        assert_eq!(parse_interval("0.0000"), Ok(Duration::ZERO));
        assert!(parse_interval("-2").is_err());
    }

    #[test]
    fn counts_and_milliseconds_are_whole_numbers_said_so() {
        assert_eq!(parse_count("3"), Ok(3));
        assert_eq!(parse_count("0"), Ok(0));
        assert_eq!(parse_count(" +3 "), Ok(3), "as atoi takes it");
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
            first_starts_only: false,
        };
        let t0 = Instant::now();
        let mut grid = s.grid(t0).unwrap();
        let ms = |n| t0 + Duration::from_millis(n);
        assert_eq!(grid.due(), ms(250));
        // Woken on time, or late by less than a step: the next one a step
        // after the instant this one was due.
        grid.start_sample(ms(251));
        assert_eq!(grid.due(), ms(500));
        grid.start_sample(ms(740));
        assert_eq!(grid.due(), ms(750));
        assert!(s.wants(2));
        assert!(!s.wants(3));
        assert!(Schedule::once().wants(0));
        assert!(!Schedule::once().wants(1));
        assert!(Schedule::once().grid(t0).is_none());
    }

    /// A run stopped (SIGSTOP, Ctrl-Z) or a sample slower than a step: the
    /// next sample is due a whole step after the late one starts, never a
    /// moment after it.
    #[test]
    fn a_sample_a_step_late_or_more_starts_the_steps_afresh() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut grid = Grid::new(t0, Duration::from_millis(200));
        // Stopped from 201 ms to 1,510 ms: the sample of 200 ms starts then.
        grid.start_sample(ms(1_510));
        assert_eq!(grid.due(), ms(1_710));
        grid.start_sample(ms(1_711));
        assert_eq!(grid.due(), ms(1_910));
        // Exactly a step late counts as late.
        grid.start_sample(ms(2_110));
        assert_eq!(grid.due(), ms(2_310));
        // Samples of 250 ms from 2,110 ms on: each one is due before the
        // one before it ends, so they follow each other, 250 ms apart.
        for (start, due) in [(2_360, 2_510), (2_610, 2_710), (2_860, 2_910)] {
            grid.start_sample(ms(start));
            assert_eq!(grid.due(), ms(due));
        }
        // A zero step (no interval argument gives one) still moves on.
        let mut zero = Grid::new(t0, Duration::ZERO);
        assert_eq!(zero.due(), t0 + Duration::from_nanos(1));
        zero.start_sample(t0 + Duration::from_nanos(1));
        assert_eq!(zero.due(), t0 + Duration::from_nanos(2));
    }

    #[test]
    fn huge_intervals_saturate_instead_of_overflowing() {
        let huge = parse_interval("9999999999999999999").unwrap();
        let s = Schedule {
            interval: Some(huge),
            count: Some(2),
            first_starts_only: false,
        };
        let t0 = Instant::now();
        let mut grid = s.grid(t0).unwrap();
        let first = grid.due();
        assert!(first > t0 + Duration::from_secs(100 * 365 * 86_400));
        grid.start_sample(first);
        assert!(grid.due() >= first);
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
