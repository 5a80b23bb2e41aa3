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

/// Tells whether `text` looks like an interval rather than a name: digits with
/// at most one dot, or digits followed by a humantime unit (`250ms`).
pub fn looks_like_interval(text: &str) -> bool {
    text.starts_with(|c: char| c.is_ascii_digit()) && parse_interval(text).is_ok()
}

/// When samples are due: sample `k` at `start + k * interval`, so a slow
/// sample never makes the later ones drift.
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

    /// The instant sample `index` is due, given the first sample's instant.
    pub fn due(&self, start: Instant, index: u64) -> Instant {
        match self.interval {
            Some(step) => start + step.saturating_mul(index.min(u32::MAX as u64) as u32),
            None => start,
        }
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
        assert_eq!(s.due(t0, 4) - t0, Duration::from_secs(1));
        assert!(s.wants(2));
        assert!(!s.wants(3));
        assert!(Schedule::once().wants(0));
        assert!(!Schedule::once().wants(1));
    }
}
