//! Series over time in a bounded number of buckets.
//!
//! Every series of a [`History`] shares one time axis. Samples go into the
//! last bucket; when `cap` buckets are full, neighbours merge pairwise and
//! each bucket then holds twice as many samples. A bucket keeps the min,
//! max and mean of each series, so a spike shorter than a pixel column
//! still shows (the min–max envelope) while memory stays at
//! `series × values × cap × 16` bytes however long the run. `cap` shrinks with the
//! number of series expected, and again as more appear (at least 64
//! buckets, at most 512: a chart 1280 px wide has about 1,000 pixel columns
//! of plot).
//!
//! A run whose devices come and go (names never repeated) would add a
//! series for each: [`History::fold`] merges the series the caller no
//! longer needs apart into one envelope, so that the series held stay
//! within the budget however many have come and gone.

use std::collections::{HashMap, HashSet};

/// What one bucket holds of one series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Mean value.
    pub mean: f64,
}

#[derive(Debug, Clone, Copy)]
struct Cell {
    min: f32,
    max: f32,
    sum: f32,
    n: u32,
}

const EMPTY: Cell = Cell {
    min: f32::INFINITY,
    max: f32::NEG_INFINITY,
    sum: 0.0,
    n: 0,
};

impl Cell {
    fn add(&mut self, v: f32) {
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.sum += v;
        self.n += 1;
    }

    fn merge(self, o: Cell) -> Cell {
        Cell {
            min: self.min.min(o.min),
            max: self.max.max(o.max),
            sum: self.sum + o.sum,
            n: self.n + o.n,
        }
    }

    fn span(self) -> Option<Span> {
        (self.n > 0).then(|| Span {
            min: f64::from(self.min),
            max: f64::from(self.max),
            mean: f64::from(self.sum) / f64::from(self.n),
        })
    }
}

/// The memory budget, in cells (16 bytes each): 64 MiB.
const BUDGET_CELLS: usize = 4 << 20;

/// The buckets `series` series of `width` values may keep: what the budget
/// allows, from 64 to 512, even (buckets merge pairwise).
fn cap_for(series: usize, width: usize) -> usize {
    (BUDGET_CELLS / (series.max(1) * width)).clamp(64, 512) & !1
}

/// The series of `width` values the budget holds at the fewest buckets
/// (64): past this many, [`History::over_budget`].
fn series_in_budget(width: usize) -> usize {
    BUDGET_CELLS / (64 * width)
}

/// `cells` (buckets of `w` cells) with neighbouring buckets merged.
fn halve_cells(cells: &[Cell], w: usize) -> Vec<Cell> {
    cells
        .chunks(2 * w)
        .flat_map(|pair| {
            (0..w).map(move |k| {
                let second = pair.get(w + k).copied().unwrap_or(EMPTY);
                pair[k].merge(second)
            })
        })
        .collect()
}

/// Named series sharing one bucketed time axis; each series holds `width`
/// values per sample (the metrics of one device, say), found by one name
/// lookup.
#[derive(Debug, Clone)]
pub struct History {
    cap: usize,
    width: usize,
    per_bucket: u64,
    in_last: u64,
    /// First and last sample time of each bucket.
    times: Vec<(f64, f64)>,
    names: Vec<String>,
    index: HashMap<String, usize>,
    /// Per series, bucket after bucket, `width` cells each.
    cells: Vec<Vec<Cell>>,
    /// Per series, `width` peaks.
    peaks: Vec<Vec<f64>>,
    /// Per series, the last sample it was looked up in.
    last_seen: Vec<u64>,
    /// Samples begun so far.
    samples: u64,
    /// The series [`History::fold`] merged, bucket after bucket, `width`
    /// cells each.
    folded: Vec<Cell>,
    /// Their names, less those that came back as series.
    folded_names: HashSet<String>,
    /// More series than this are [`History::over_budget`].
    fold_at: usize,
}

impl History {
    /// An empty history sized for about `series` series of one value.
    pub fn new(series: usize) -> History {
        History::wide(series, 1)
    }

    /// An empty history sized for about `series` series of `width` values.
    pub fn wide(series: usize, width: usize) -> History {
        let width = width.max(1);
        History {
            cap: cap_for(series, width),
            width,
            per_bucket: 1,
            in_last: 0,
            times: Vec::new(),
            names: Vec::new(),
            index: HashMap::new(),
            cells: Vec::new(),
            peaks: Vec::new(),
            last_seen: Vec::new(),
            samples: 0,
            folded: Vec::new(),
            folded_names: HashSet::new(),
            fold_at: series_in_budget(width),
        }
    }

    /// Starts a sample taken at `time` (x-axis units).
    pub fn begin_sample(&mut self, time: f64) {
        if self.times.is_empty() || self.in_last == self.per_bucket {
            if self.times.len() == self.cap {
                self.halve();
            }
            self.times.push((time, time));
            for c in self.cells.iter_mut().chain([&mut self.folded]) {
                c.extend(std::iter::repeat_n(EMPTY, self.width));
            }
            self.in_last = 0;
        }
        self.in_last += 1;
        self.samples += 1;
        if let Some(last) = self.times.last_mut() {
            last.1 = time;
        }
    }

    fn halve(&mut self) {
        self.times = self
            .times
            .chunks(2)
            .map(|p| (p[0].0, p[p.len() - 1].1))
            .collect();
        let w = self.width;
        for c in self.cells.iter_mut().chain([&mut self.folded]) {
            *c = halve_cells(c, w);
        }
        self.per_bucket *= 2;
    }

    /// The series named `name`, created (empty so far) if new; more series
    /// than expected lower the number of buckets to stay in the budget.
    pub fn series(&mut self, name: &str) -> usize {
        if let Some(&i) = self.index.get(name) {
            self.last_seen[i] = self.samples;
            return i;
        }
        self.folded_names.remove(name);
        let i = self.names.len();
        self.cap = self.cap.min(cap_for(i + 1, self.width));
        while self.times.len() > self.cap {
            self.halve();
            // The next sample starts a bucket of its own (the last may now
            // hold fewer samples than the others).
            self.in_last = self.per_bucket;
        }
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), i);
        self.cells.push(vec![EMPTY; self.times.len() * self.width]);
        self.peaks.push(vec![f64::NEG_INFINITY; self.width]);
        self.last_seen.push(self.samples);
        i
    }

    /// Whether more series are held than the budget has room for at 64
    /// buckets (or, after a [`History::fold`], twice as many as it kept):
    /// time to fold.
    pub fn over_budget(&self) -> bool {
        self.names.len() > self.fold_at
    }

    /// Merges into one envelope ([`History::merged_with_folded_at`]) every
    /// series that was not looked up in the current sample and that
    /// `keep` (given its index) does not keep. The series kept keep their
    /// order; their indexes change. A name folded that comes back starts a
    /// new series (its earlier values stay in the envelope).
    pub fn fold(&mut self, keep: impl Fn(usize) -> bool) {
        let mut kept = 0;
        for i in 0..self.names.len() {
            if self.last_seen[i] == self.samples || keep(i) {
                self.names.swap(kept, i);
                self.cells.swap(kept, i);
                self.peaks.swap(kept, i);
                self.last_seen.swap(kept, i);
                kept += 1;
            } else {
                for (f, c) in self.folded.iter_mut().zip(&self.cells[i]) {
                    *f = f.merge(*c);
                }
            }
        }
        self.folded_names.extend(self.names.drain(kept..));
        self.cells.truncate(kept);
        self.peaks.truncate(kept);
        self.last_seen.truncate(kept);
        self.index = self
            .names
            .iter()
            .enumerate()
            .map(|(i, name)| (name.clone(), i))
            .collect();
        self.fold_at = series_in_budget(self.width).max(2 * kept);
    }

    /// How many names [`History::fold`] merged (a name counted once
    /// however often folded, and no longer once it came back).
    pub fn folded_count(&self) -> usize {
        self.folded_names.len()
    }

    /// Adds `value` to series `series` in the current sample; non-finite
    /// values are left out.
    pub fn add(&mut self, series: usize, value: f64) {
        self.add_at(series, 0, value);
    }

    /// Adds `value` as the `k`th value of series `series` in the current
    /// sample; non-finite values are left out.
    pub fn add_at(&mut self, series: usize, k: usize, value: f64) {
        if !value.is_finite() || k >= self.width {
            return;
        }
        let Some(cells) = self.cells.get_mut(series) else {
            return;
        };
        let at = cells.len().wrapping_sub(self.width - k);
        if let Some(cell) = cells.get_mut(at) {
            cell.add(value as f32);
            let peak = &mut self.peaks[series][k];
            *peak = peak.max(value);
        }
    }

    /// The series names, in creation order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The largest `k`th value series `series` had, or `None`.
    pub fn peak_at(&self, series: usize, k: usize) -> Option<f64> {
        self.peaks
            .get(series)
            .and_then(|p| p.get(k))
            .copied()
            .filter(|p| p.is_finite())
    }

    /// The number of buckets.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.times.len()
    }

    /// The cells held, of every series.
    #[cfg(test)]
    fn cells(&self) -> usize {
        self.cells.iter().map(Vec::len).sum()
    }

    /// Each bucket's middle time and what series `series` held in it.
    pub fn points(&self, series: usize) -> Vec<(f64, Option<Span>)> {
        self.merged_at(&[series], 0)
    }

    /// Each bucket's middle time and what the `k`th values of `series`
    /// together held in it (min of the mins, max of the maxes, mean of
    /// every value).
    pub fn merged_at(&self, series: &[usize], k: usize) -> Vec<(f64, Option<Span>)> {
        self.merge(series, false, k)
    }

    /// [`History::merged_at`], the series folded included.
    pub fn merged_with_folded_at(&self, series: &[usize], k: usize) -> Vec<(f64, Option<Span>)> {
        self.merge(series, true, k)
    }

    /// What `series` (and, with `folded`, the series folded) held in each
    /// bucket as their `k`th values.
    fn merge(&self, series: &[usize], folded: bool, k: usize) -> Vec<(f64, Option<Span>)> {
        let w = self.width;
        let folded = folded.then_some(&self.folded);
        self.times
            .iter()
            .enumerate()
            .map(|(b, (t0, t1))| {
                let cell = series
                    .iter()
                    .filter_map(|&s| self.cells.get(s))
                    .chain(folded)
                    .filter_map(|c| c.get(b * w + k))
                    .fold(EMPTY, |acc, c| acc.merge(*c));
                ((t0 + t1) / 2.0, cell.span())
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(min: f64, max: f64, mean: f64) -> Option<Span> {
        Some(Span { min, max, mean })
    }

    #[test]
    fn full_buckets_merge_pairwise_and_keep_the_spike() {
        let mut h = History::new(BUDGET_CELLS); // the smallest cap: 64 buckets
        let s = h.series("sda");
        for i in 0..128 {
            h.begin_sample(f64::from(i));
            h.add(s, if i == 77 { 1000.0 } else { 1.0 });
        }
        assert_eq!(h.len(), 64);
        let points = h.points(s);
        assert_eq!(points[0], (0.5, span(1.0, 1.0, 1.0)));
        assert_eq!(points[38], (76.5, span(1.0, 1000.0, 500.5)));
        // Full again: 32 buckets of 4 samples, and a new one.
        h.begin_sample(128.0);
        h.add(s, 3.0);
        assert_eq!(h.len(), 33);
        assert_eq!(h.points(s)[19], (77.5, span(1.0, 1000.0, 250.75)));
        assert_eq!(h.points(s)[32], (128.0, span(3.0, 3.0, 3.0)));
        assert_eq!(h.peak_at(s, 0), Some(1000.0));
    }

    #[test]
    fn a_series_that_appears_late_has_gaps_before() {
        let mut h = History::new(2);
        let a = h.series("a");
        h.begin_sample(0.0);
        h.add(a, 1.0);
        h.begin_sample(1.0);
        let b = h.series("b");
        h.add(b, 2.0);
        h.add(a, f64::NAN);
        assert_eq!(h.points(b), vec![(0.0, None), (1.0, span(2.0, 2.0, 2.0))]);
        assert_eq!(h.points(a), vec![(0.0, span(1.0, 1.0, 1.0)), (1.0, None)]);
        assert_eq!(
            h.merged_at(&[a, b], 0),
            vec![(0.0, span(1.0, 1.0, 1.0)), (1.0, span(2.0, 2.0, 2.0))]
        );
    }

    #[test]
    fn series_beyond_those_expected_stay_in_the_budget() {
        // Sized for one series of 8 values (512 buckets), 300 samples in.
        let mut h = History::wide(1, 8);
        let first = h.series("sda");
        for i in 0..300 {
            h.begin_sample(f64::from(i));
            h.add_at(first, 0, 1.0);
        }
        // 4 Mi cells / (2,000 × 8) = 262 buckets: 300 merge into 150.
        for n in 1..2_000 {
            h.series(&format!("sd{n}"));
        }
        assert_eq!(h.len(), 150);
        assert!(h.cells() <= BUDGET_CELLS, "{} cells", h.cells());
        assert_eq!(h.points(first)[0], (0.5, span(1.0, 1.0, 1.0)));
        // Full at 262 buckets, not 512.
        for i in 300..524 {
            h.begin_sample(f64::from(i));
        }
        assert_eq!(h.len(), 262);
        h.begin_sample(524.0);
        assert_eq!(h.len(), 132);
    }

    #[test]
    fn wide_series_keep_each_value_apart_through_merges() {
        let mut h = History::wide(BUDGET_CELLS, 2); // 64 buckets
        let s = h.series("sda");
        for i in 0..129 {
            h.begin_sample(f64::from(i));
            h.add_at(s, 0, f64::from(i));
            h.add_at(s, 1, -f64::from(i));
        }
        h.add_at(s, 2, 1.0); // no third value: ignored
        assert_eq!(h.len(), 33);
        assert_eq!(h.merged_at(&[s], 0)[1], (5.5, span(4.0, 7.0, 5.5)));
        assert_eq!(h.merged_at(&[s], 1)[1], (5.5, span(-7.0, -4.0, -5.5)));
        assert_eq!(
            h.merged_at(&[s], 1)[32],
            (128.0, span(-128.0, -128.0, -128.0))
        );
        assert_eq!((h.peak_at(s, 0), h.peak_at(s, 1)), (Some(128.0), Some(0.0)));
    }

    /// Two samples of `n` devices each, none in both, into `h`: the first
    /// `sdN` (value N), the second `dmN` (value -N).
    fn two_disjoint_samples(h: &mut History, n: u32) {
        for (t, prefix, sign) in [(0.0, "sd", 1.0), (1.0, "dm", -1.0)] {
            h.begin_sample(t);
            for i in 0..n {
                let s = h.series(&format!("{prefix}{i}"));
                h.add_at(s, 1, sign * f64::from(i));
            }
        }
    }

    #[test]
    fn series_gone_fold_into_one_envelope_and_leave_the_budget() {
        let n = series_in_budget(8) as u32 / 2 + 1;
        let mut h = History::wide(1, 8);
        two_disjoint_samples(&mut h, n);
        let all: Vec<usize> = (0..h.names().len()).collect();
        let whole = h.merged_at(&all, 1);
        assert!(h.over_budget(), "{} series", h.names().len());
        // sd7 is kept (drawn alone, say); the other sdN were not in the
        // latest sample and fold.
        let sd7 = h.names().iter().position(|name| name == "sd7");
        h.fold(|i| Some(i) == sd7);
        assert_eq!(h.names().len(), n as usize + 1);
        assert_eq!(h.names()[0], "sd7");
        assert_eq!(h.folded_count(), n as usize - 1);
        assert!(!h.over_budget());
        let live: Vec<usize> = (0..h.names().len()).collect();
        let merged = h.merged_with_folded_at(&live, 1);
        assert_eq!(merged, whole, "the same envelope");
        let dm3 = h.series("dm3");
        assert_eq!(h.peak_at(dm3, 1), Some(-3.0));
        // A name folded that comes back is a series again, counted once.
        let sd0 = h.series("sd0");
        assert_eq!(h.folded_count(), n as usize - 2);
        assert_eq!(h.points(sd0)[..2], [(0.0, None), (1.0, None)]);
    }
}
