//! Swimlanes decimated to pixel columns: per lane and column, the owner
//! that held the lane longest there (approximately: a column keeps the
//! owner with the longest single stretch so far, and adds up an owner's
//! consecutive stretches). Memory is lanes × columns, whatever the number
//! of spans; a column nobody held stays empty, so gaps show.
//!
//! The window starts at the first span's start and doubles (neighbouring
//! columns merge) whenever a span ends past it, so spans can be added in
//! one pass without knowing the end in advance.

use super::palette::{self, Colour};

#[derive(Debug, Clone, Copy)]
struct Cell {
    owner: u32,
    covered: f64,
}

const NOBODY: u32 = u32::MAX;
const EMPTY: Cell = Cell {
    owner: NOBODY,
    covered: 0.0,
};

impl Cell {
    /// The cell of a column twice as wide.
    fn merge(self, o: Cell) -> Cell {
        match (self.owner == o.owner, self.covered >= o.covered) {
            (true, _) => Cell {
                owner: self.owner,
                covered: self.covered + o.covered,
            },
            (false, true) => self,
            (false, false) => o,
        }
    }
}

/// One lane: its name, the key it sorts by, its columns.
#[derive(Debug, Clone)]
struct Lane {
    name: String,
    key: u64,
    cells: Vec<Cell>,
}

/// Lanes over a time window, each column showing one owner or none.
#[derive(Debug, Clone)]
pub struct Lanes {
    columns: usize,
    /// Start and column width, from the first span on.
    window: Option<(f64, f64)>,
    min_width: f64,
    lanes: Vec<Lane>,
    owners: Vec<String>,
}

impl Lanes {
    /// No lanes yet, `columns` columns each at least `min_width` wide (x
    /// units), with the owners that may hold them.
    pub fn new(columns: usize, min_width: f64, owners: Vec<String>) -> Lanes {
        Lanes {
            columns: columns.max(2) & !1,
            window: None,
            min_width: if min_width > 0.0 { min_width } else { 1.0 },
            lanes: Vec::new(),
            owners,
        }
    }

    /// Starts the window at `start` (else the first span's start does);
    /// spans before it are cut there. Only before the first span.
    pub fn start_at(&mut self, start: f64) {
        self.window.get_or_insert((start, self.min_width));
    }

    /// Adds a lane named `name`, sorted by `key`; gives its number.
    pub fn add_lane(&mut self, name: String, key: u64) -> usize {
        self.lanes.push(Lane {
            name,
            key,
            cells: vec![EMPTY; self.columns],
        });
        self.lanes.len() - 1
    }

    /// Puts the lanes in the order of their keys (lane numbers change).
    pub fn sort_lanes(&mut self) {
        self.lanes.sort_by_key(|l| l.key);
    }

    fn widen(&mut self) {
        let half = self.columns / 2;
        for lane in &mut self.lanes {
            let merged: Vec<Cell> = lane.cells.chunks(2).map(|p| p[0].merge(p[1])).collect();
            lane.cells[..half].copy_from_slice(&merged);
            lane.cells[half..].fill(EMPTY);
        }
        if let Some((_, width)) = &mut self.window {
            *width *= 2.0;
        }
    }

    /// Records that `owner` held `lane` from `from` to `to` (spans before
    /// the first span's start are cut there).
    pub fn add(&mut self, lane: usize, from: f64, to: f64, owner: usize) {
        if lane >= self.lanes.len() || to < from || !from.is_finite() || !to.is_finite() {
            return;
        }
        let (start, _) = *self.window.get_or_insert((from, self.min_width));
        let from = from.max(start);
        let to = to.max(from);
        while to >= start + self.window.map_or(0.0, |w| w.1) * self.columns as f64 {
            self.widen();
        }
        let width = self.window.map_or(1.0, |w| w.1);
        let last = self.columns - 1;
        let first_col = (((from - start) / width) as usize).min(last);
        // A span ending on a column's edge does not reach into it.
        let end_col = if to > from {
            (((to - start) / width).ceil() as usize).saturating_sub(1)
        } else {
            first_col
        };
        let last_col = end_col.clamp(first_col, last);
        let row = &mut self.lanes[lane].cells;
        for (c, cell) in row
            .iter_mut()
            .enumerate()
            .take(last_col + 1)
            .skip(first_col)
        {
            let c0 = start + c as f64 * width;
            // A span of no length still marks its column.
            let overlap = (to.min(c0 + width) - from.max(c0)).max(width * 1e-6);
            if cell.owner == owner as u32 {
                cell.covered += overlap;
            } else if overlap > cell.covered {
                *cell = Cell {
                    owner: owner as u32,
                    covered: overlap,
                };
            }
        }
    }

    /// The lane names, in order.
    pub fn lane_names(&self) -> Vec<String> {
        self.lanes.iter().map(|l| l.name.clone()).collect()
    }

    /// The owner names and their colours.
    pub fn owners(&self) -> Vec<(String, Colour)> {
        self.owners
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), palette::series(i)))
            .collect()
    }

    /// The window: from the first span's start to the end of the last
    /// column anybody held (`(0, 1)` without spans).
    pub fn window(&self) -> (f64, f64) {
        let Some((start, width)) = self.window else {
            return (0.0, 1.0);
        };
        let used = self
            .lanes
            .iter()
            .filter_map(|l| l.cells.iter().rposition(|c| c.owner != NOBODY))
            .max()
            .unwrap_or(0);
        (start, start + width * (used + 1) as f64)
    }

    /// Lane `lane` as runs `(from, to, owner)` of neighbouring columns with
    /// one owner; empty columns make no run.
    pub fn runs(&self, lane: usize) -> Vec<(f64, f64, usize)> {
        let mut runs: Vec<(f64, f64, usize)> = Vec::new();
        let (Some((start, width)), Some(l)) = (self.window, self.lanes.get(lane)) else {
            return runs;
        };
        let mut prev = NOBODY;
        for (c, cell) in l.cells.iter().enumerate() {
            let x0 = start + c as f64 * width;
            match runs.last_mut() {
                Some(run) if cell.owner == prev && prev != NOBODY => run.1 = x0 + width,
                _ if cell.owner != NOBODY => runs.push((x0, x0 + width, cell.owner as usize)),
                _ => {}
            }
            prev = cell.owner;
        }
        runs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lanes() -> Lanes {
        let mut l = Lanes::new(10, 1.0, vec!["a".into(), "b".into()]);
        l.add_lane("p0".into(), 0);
        l
    }

    #[test]
    fn runs_merge_columns_of_one_owner_and_keep_gaps() {
        let mut l = lanes();
        l.add(0, 0.0, 3.0, 0);
        l.add(0, 5.0, 7.0, 1);
        l.add(0, 7.0, 7.5, 1);
        assert_eq!(l.runs(0), vec![(0.0, 3.0, 0), (5.0, 8.0, 1)]);
        assert_eq!(l.window(), (0.0, 8.0));
    }

    #[test]
    fn the_window_doubles_and_columns_merge_to_their_longest_holder() {
        let mut l = lanes();
        l.add(0, 0.0, 1.0, 0); // column 0
        l.add(0, 1.0, 1.2, 1); // column 1, briefly
        l.add(0, 4.0, 5.0, 1);
        l.add(0, 15.0, 16.0, 0); // past the first window of 10: width 2
        assert_eq!(
            l.runs(0),
            vec![(0.0, 2.0, 0), (4.0, 6.0, 1), (14.0, 16.0, 0)]
        );
        l.add(7, 0.0, 1.0, 0); // no such lane: ignored
        l.add(0, -5.0, 1.0, 1); // before the start: cut to it
        assert_eq!(l.runs(0)[0], (0.0, 2.0, 0));
    }

    #[test]
    fn a_window_started_early_keeps_spans_added_out_of_order() {
        let mut l = lanes();
        l.start_at(0.0);
        l.add(0, 6.0, 7.0, 1);
        l.add(0, 1.0, 2.0, 0);
        assert_eq!(l.runs(0), vec![(1.0, 2.0, 0), (6.0, 7.0, 1)]);
    }

    #[test]
    fn lanes_sort_by_key() {
        let mut l = Lanes::new(4, 1.0, vec!["a".into()]);
        l.add_lane("p9".into(), 9);
        l.add_lane("p2".into(), 2);
        l.sort_lanes();
        assert_eq!(l.lane_names(), ["p2", "p9"]);
    }
}
