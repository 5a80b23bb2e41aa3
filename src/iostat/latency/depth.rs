//! One device's queue depth over time, held back until it can be trusted.
//!
//! A request whose completion never reaches iostat-rs stays counted in
//! flight until [`super::tracker::Tracker::trim_in_flight`] finds it gone,
//! a drain or two later: in bursts of hundreds on a busy disk
//! (BENCHMARKS.md, "Lost completions on a busy disk"). Added to the
//! histogram at once, the depth of that time would keep them, and a
//! report's `qd_max` with it. So the depth since the last comparison with
//! the kernel's count stays a list of steps ([`DepthLine::settle`] adds
//! what came before the comparison to the histogram), and a request found
//! lost is taken out of the steps from its issue on
//! ([`DepthLine::unhold`]). The time a lost request was really in flight
//! (its completion is what is missing) is then counted one lower: a
//! fraction of a millisecond, against the drain or two it held the depth
//! up.

use super::histogram::Histogram;

/// The depth of one device from some time on.
#[derive(Debug, Clone, Default)]
pub struct DepthLine {
    /// Requests in flight now.
    pub inflight: u64,
    /// Since when `inflight` holds.
    since: u64,
    /// The depth from each start time on, oldest first, until the next
    /// step's start, the last until `since`: not in the histogram yet.
    steps: Vec<(u64, u64)>,
}

impl DepthLine {
    /// A line at depth 0 from `start` on.
    pub fn new(start: u64) -> DepthLine {
        DepthLine {
            inflight: 0,
            since: start,
            steps: Vec::new(),
        }
    }

    /// Moves the line to `now` and changes the depth by `delta`.
    pub fn step(&mut self, now: u64, delta: i64) {
        if now > self.since {
            if self.steps.last().is_none_or(|&(_, d)| d != self.inflight) {
                self.steps.push((self.since, self.inflight));
            }
            self.since = now;
        }
        self.inflight = self.inflight.saturating_add_signed(delta);
    }

    /// Whether nothing is in flight and no depth is left to settle.
    pub fn is_idle(&self) -> bool {
        self.inflight == 0 && self.steps.is_empty()
    }

    /// Adds the depth before `horizon` to `hist`.
    pub fn settle(&mut self, horizon: u64, hist: &mut Histogram) {
        let mut done = 0;
        for i in 0..self.steps.len() {
            let (start, depth) = self.steps[i];
            if start >= horizon {
                break;
            }
            let end = self.steps.get(i + 1).map_or(self.since, |s| s.0);
            hist.add(depth, end.min(horizon) - start);
            if end > horizon {
                self.steps[i].0 = horizon;
                break;
            }
            done += 1;
        }
        self.steps.drain(..done);
    }

    /// Takes requests issued at `issued` (in order) out of the depth not
    /// yet in the histogram, from their issue on: requests whose
    /// completion was lost, already out of `inflight`.
    pub fn unhold(&mut self, issued: &[u64]) {
        if issued.is_empty() || self.steps.is_empty() {
            return;
        }
        let mut out = Vec::with_capacity(self.steps.len() + issued.len());
        let mut before = 0;
        for i in 0..self.steps.len() {
            let (start, depth) = self.steps[i];
            let end = self.steps.get(i + 1).map_or(self.since, |s| s.0);
            while before < issued.len() && issued[before] <= start {
                before += 1;
            }
            out.push((start, depth.saturating_sub(before as u64)));
            while before < issued.len() && issued[before] < end {
                let at = issued[before];
                while before < issued.len() && issued[before] == at {
                    before += 1;
                }
                out.push((at, depth.saturating_sub(before as u64)));
            }
        }
        self.steps = out;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram(line: &mut DepthLine, horizon: u64) -> Vec<(usize, u64)> {
        let mut h = Histogram::default();
        line.settle(horizon, &mut h);
        h.buckets().collect()
    }

    #[test]
    fn the_depth_reaches_the_histogram_up_to_the_horizon() {
        let mut line = DepthLine::new(0);
        line.step(10, 1);
        line.step(20, 1);
        line.step(30, -1);
        line.step(40, -1);
        // 0 for 10, 1 for 10, 2 for 10, 1 until 35.
        assert_eq!(histogram(&mut line, 35), [(0, 10), (1, 15), (2, 10)]);
        // The rest: 1 from 35 to 40, then 0 until `since`.
        line.step(50, 0);
        assert_eq!(histogram(&mut line, 100), [(0, 10), (1, 5)]);
        assert_eq!(histogram(&mut line, 100), []);
    }

    #[test]
    fn a_lost_request_leaves_the_depth_from_its_issue_on() {
        let mut line = DepthLine::new(0);
        line.step(10, 1); // the lost one
        line.step(20, 1);
        line.step(30, -1);
        line.step(40, 1);
        // Found lost at 50: out of `inflight`, then out of the steps.
        line.step(50, -1);
        line.unhold(&[10]);
        assert_eq!(line.inflight, 1);
        // 0 for 20, 1 for 10, 0 for 10, 1 for 10.
        assert_eq!(histogram(&mut line, 50), [(0, 30), (1, 20)]);
    }

    #[test]
    fn a_request_lost_before_the_steps_lowers_them_all() {
        let mut line = DepthLine::new(0);
        line.step(10, 1); // the lost one
        line.step(20, 1);
        assert_eq!(histogram(&mut line, 15), [(0, 10), (1, 5)]);
        line.step(30, -1);
        line.step(40, -1);
        line.unhold(&[10]);
        line.step(40, 0);
        // From 15: 1 (was 1) to 20 is now 0, 2 to 30 is now 1, then 0.
        assert_eq!(histogram(&mut line, 40), [(0, 15), (1, 10)]);
    }

    #[test]
    fn requests_issued_at_one_time_leave_together() {
        let mut line = DepthLine::new(0);
        line.step(10, 3);
        line.step(20, 1);
        line.step(30, -2);
        line.unhold(&[10, 10]);
        // 0 for 10, 3 then 1 for 10, 4 then 2 for 10.
        assert_eq!(histogram(&mut line, 30), [(0, 10), (1, 10), (2, 10)]);
        assert_eq!(line.inflight, 2, "unhold leaves `inflight` alone");
    }
}
