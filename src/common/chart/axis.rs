//! The charts' numeric axis: a linear `f64` range whose ticks are the
//! multiples of 1, 2 or 5 × 10^k, the finest step that gives no more ticks
//! than plotters asks for.
//!
//! Why not plotters' own `f64` range: its tick computation calls the C
//! library's `log` and `pow`, the only reason the programs loaded
//! `libm.so.6`, and loading it is 8 % of the CPU time of a one-report
//! `iostat-rs -x` (BENCHMARKS.md, "Start-up"). Powers of ten are exact in
//! binary up to 10^22, so this axis builds them by multiplying.

use std::ops::Range;

use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};

/// Steps tried within each power of ten, finest first.
const MANTISSAS: [u64; 3] = [1, 2, 5];
/// The widest power-of-ten range searched either side of 10^0.
const MAX_EXPONENT: i32 = 22;

/// A linear axis from `start` to `end` (`start` < `end` is not required).
#[derive(Debug, Clone, Copy)]
pub struct Axis {
    start: f64,
    end: f64,
    /// Categories: that many, category i from i to i + 1, ticked in the middle.
    categories: Option<usize>,
}

impl Axis {
    /// The axis over `range`.
    pub fn new(range: Range<f64>) -> Axis {
        Axis {
            start: range.start,
            end: range.end,
            categories: None,
        }
    }

    /// An axis of `n` categories (at least one unit long), see
    /// [`category_points`].
    pub fn categories(n: usize) -> Axis {
        Axis {
            start: 0.0,
            end: n.max(1) as f64,
            categories: Some(n),
        }
    }
}

/// The ticks of `n` categories: the middle of every category, or of every
/// k-th (from the first) when more than `max` would not fit.
pub fn category_points(n: usize, max: usize) -> Vec<f64> {
    if max == 0 {
        return Vec::new();
    }
    let every = n.div_ceil(max).max(1);
    (0..n).step_by(every).map(|i| i as f64 + 0.5).collect()
}

/// 10^`exponent`, exactly where it can be: 10^k for k ≤ 22 is an exact
/// `f64`, and 10^−k is the correctly rounded quotient of 1 by it.
fn power_of_ten(exponent: i32) -> f64 {
    let mut power = 1.0;
    for _ in 0..exponent.unsigned_abs() {
        power *= 10.0;
    }
    if exponent < 0 { 1.0 / power } else { power }
}

/// One tick spacing: `mantissa` × 10^`exponent`.
#[derive(Debug, Clone, Copy)]
struct Step {
    mantissa: f64,
    exponent: i32,
    /// 10^|exponent|, exact.
    power: f64,
}

/// How far (in steps) an end may miss a tick by rounding and still get it.
const SLACK: f64 = 1e-9;

impl Step {
    fn new(mantissa: u64, exponent: i32) -> Step {
        Step {
            mantissa: mantissa as f64,
            exponent,
            power: power_of_ten(exponent.abs()),
        }
    }

    /// The tick `i` steps from zero: `i × mantissa` scaled by an exact
    /// power of ten, so 0.1 steps give 0.3, not 0.30000000000000004.
    fn tick(self, i: f64) -> f64 {
        if self.exponent < 0 {
            i * self.mantissa / self.power
        } else {
            i * self.mantissa * self.power
        }
    }

    /// How many steps from zero `x` is.
    fn steps(self, x: f64) -> f64 {
        if self.exponent < 0 {
            x * self.power / self.mantissa
        } else {
            x / (self.mantissa * self.power)
        }
    }
}

/// The finest 1-2-5 step that gives at most `max` ticks over `[low, high]`
/// (`low` ≤ `high`, finite, not equal), with its first and last tick as
/// counts of steps from zero.
fn choose(low: f64, high: f64, max: usize) -> Option<(Step, f64, f64)> {
    for exponent in -MAX_EXPONENT..=MAX_EXPONENT {
        for mantissa in MANTISSAS {
            let step = Step::new(mantissa, exponent);
            let first = (step.steps(low) - SLACK).ceil();
            let last = (step.steps(high) + SLACK).floor();
            if last - first + 1.0 <= max as f64 {
                return Some((step, first, last));
            }
        }
    }
    None
}

/// `(low, high)` in order, or `None` when they give one tick at most.
fn ordered(low: f64, high: f64, max: usize) -> Option<(f64, f64)> {
    let (low, high) = if low <= high {
        (low, high)
    } else {
        (high, low)
    };
    (max > 0 && low.is_finite() && high.is_finite() && low != high).then_some((low, high))
}

/// At most `max` ticks over `[low, high]` at the finest 1-2-5 step; the
/// low end alone when the range is empty or not finite.
pub fn key_points(low: f64, high: f64, max: usize) -> Vec<f64> {
    let Some((low, high)) = ordered(low, high, max) else {
        return if max == 0 {
            Vec::new()
        } else {
            vec![low.min(high)]
        };
    };
    let Some((step, first, last)) = choose(low, high, max) else {
        return vec![low, high];
    };
    let mut ticks = Vec::new();
    let mut i = first;
    while i <= last {
        // + 0.0: the tick at zero is 0, not the -0 that ceil(-SLACK)
        // gives, labelled "-0".
        ticks.push(step.tick(i) + 0.0);
        i += 1.0;
    }
    ticks
}

/// The distance between the ticks [`key_points`] gives for the same
/// arguments; `None` where it gives no evenly spaced ticks.
pub fn tick_step(low: f64, high: f64, max: usize) -> Option<f64> {
    let (low, high) = ordered(low, high, max)?;
    choose(low, high, max).map(|(step, _, _)| step.tick(1.0))
}

impl Ranged for Axis {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let span = self.end - self.start;
        let pixels = f64::from(limit.1 - limit.0);
        if span == 0.0 || !span.is_finite() {
            return limit.0 + (limit.1 - limit.0) / 2;
        }
        let fraction = (value - self.start) / span;
        let offset = (fraction * pixels).round();
        // Far outside the axis (a clipped line's end): pinned well beyond
        // the plot rather than overflowing.
        let bound = 4.0 * pixels.abs() + 1.0;
        limit.0 + offset.clamp(-bound, bound) as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        match self.categories {
            Some(n) => category_points(n, hint.max_num_points()),
            None => key_points(self.start, self.end, hint.max_num_points()),
        }
    }

    fn range(&self) -> Range<f64> {
        self.start..self.end
    }
}

/// The labels plotters falls back to; every chart passes its own formatter.
impl ValueFormatter<f64> for Axis {
    fn format(value: &f64) -> String {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn powers_of_ten_are_the_literals() {
        assert_eq!(power_of_ten(0), 1.0);
        assert_eq!(power_of_ten(3), 1e3);
        assert_eq!(power_of_ten(22), 1e22);
        assert_eq!(power_of_ten(-1), 0.1);
        assert_eq!(power_of_ten(-7), 1e-7);
    }

    #[test]
    fn the_finest_one_two_five_step_within_the_limit() {
        assert_eq!(key_points(0.0, 10.0, 6), [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(
            key_points(0.0, 10.0, 11),
            [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]
        );
        assert_eq!(key_points(0.0, 10.0, 5), [0.0, 5.0, 10.0]);
        assert_eq!(key_points(0.0, 1234.0, 6), [0.0, 500.0, 1000.0]);
        assert_eq!(key_points(3.0, 17.0, 4), [5.0, 10.0, 15.0]);
    }

    #[test]
    fn decimal_steps_are_the_decimal_literals() {
        assert_eq!(
            key_points(0.0, 0.35, 8),
            [0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35]
        );
        assert_eq!(key_points(0.0, 0.3, 4), [0.0, 0.1, 0.2, 0.3]);
        assert_eq!(
            key_points(-0.002, 0.002, 5),
            [-0.002, -0.001, 0.0, 0.001, 0.002]
        );
    }

    #[test]
    fn categories_are_ticked_in_the_middle_every_kth_past_the_room() {
        assert_eq!(category_points(3, 24), [0.5, 1.5, 2.5]);
        assert_eq!(category_points(7, 3), [0.5, 3.5, 6.5]);
        assert_eq!(category_points(6, 3), [0.5, 2.5, 4.5]);
        assert_eq!(category_points(50, 24).len(), 17);
        assert!(category_points(0, 24).is_empty());
        assert!(category_points(5, 0).is_empty());
        assert_eq!(Axis::categories(0).range(), 0.0..1.0);
    }

    #[test]
    fn the_tick_at_zero_is_positive_zero() {
        assert!(key_points(0.0, 10.0, 6)[0].is_sign_positive());
        assert!(key_points(-0.002, 0.002, 5)[2].is_sign_positive());
        assert!(key_points(-3.0, -1.0, 3)[2].is_sign_negative());
    }

    #[test]
    fn the_step_is_that_of_the_ticks() {
        assert_eq!(tick_step(0.0, 10.0, 6), Some(2.0));
        assert_eq!(tick_step(0.0, 0.35, 8), Some(0.05));
        assert_eq!(tick_step(10.0, 0.0, 3), Some(5.0));
        assert_eq!(tick_step(4.0, 4.0, 6), None);
        assert_eq!(tick_step(0.0, 1.0, 0), None);
    }

    #[test]
    fn reversed_empty_and_infinite_ranges() {
        assert_eq!(key_points(10.0, 0.0, 3), [0.0, 5.0, 10.0]);
        assert_eq!(key_points(4.0, 4.0, 6), [4.0]);
        assert_eq!(key_points(0.0, f64::INFINITY, 6), [0.0]);
        assert!(key_points(0.0, 1.0, 0).is_empty());
    }

    #[test]
    fn large_counts_and_epoch_seconds() {
        let ticks = key_points(1.7e9, 1.7e9 + 3600.0, 8);
        assert_eq!(ticks.first(), Some(&1_700_000_000.0));
        assert_eq!(ticks.last(), Some(&1_700_003_500.0));
        assert_eq!(ticks.len(), 8);
    }

    #[test]
    fn values_map_linearly_onto_the_pixels() {
        let axis = Axis::new(0.0..100.0);
        assert_eq!(axis.map(&0.0, (10, 210)), 10);
        assert_eq!(axis.map(&50.0, (10, 210)), 110);
        assert_eq!(axis.map(&100.0, (10, 210)), 210);
        assert_eq!(axis.map(&25.0, (210, 10)), 160);
        assert_eq!(axis.map(&1e300, (0, 100)), 401);
        assert_eq!(Axis::new(5.0..5.0).map(&5.0, (0, 100)), 50);
    }
}
