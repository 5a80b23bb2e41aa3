//! Swimlanes decimated to pixel columns: per lane and column, the owner
//! that held the lane longest there (approximately: a column keeps the
//! owner with the longest single stretch so far, and adds up an owner's
//! consecutive stretches). Memory is lanes × columns, whatever the number
//! of spans; a column nobody held stays empty, so gaps show.

use super::palette::{self, Colour};

#[derive(Debug, Clone, Copy)]
struct Cell {
    owner: u32,
    covered: f64,
}

const NOBODY: u32 = u32::MAX;

/// Lanes over a time window, each column showing one owner or none.
#[derive(Debug, Clone)]
pub struct Lanes {
    start: f64,
    end: f64,
    names: Vec<String>,
    owners: Vec<String>,
    cells: Vec<Vec<Cell>>,
}

impl Lanes {
    /// Empty lanes named `names` over `start..end` (milliseconds), in
    /// `columns` columns, with the owners that may hold them.
    pub fn new(
        start: f64,
        end: f64,
        columns: usize,
        names: Vec<String>,
        owners: Vec<String>,
    ) -> Lanes {
        let columns = columns.max(1);
        let empty = Cell {
            owner: NOBODY,
            covered: 0.0,
        };
        Lanes {
            start,
            end: if end > start { end } else { start + 1.0 },
            cells: vec![vec![empty; columns]; names.len()],
            names,
            owners,
        }
    }

    fn width(&self) -> f64 {
        (self.end - self.start) / self.cells.first().map_or(1, Vec::len) as f64
    }

    /// Records that `owner` held `lane` from `from` to `to`.
    pub fn add(&mut self, lane: usize, from: f64, to: f64, owner: usize) {
        let width = self.width();
        let (from, to) = (from.max(self.start), to.min(self.end));
        let Some(row) = self.cells.get_mut(lane) else {
            return;
        };
        if to < from {
            return;
        }
        let last = row.len() - 1;
        let first_col = (((from - self.start) / width) as usize).min(last);
        let last_col = (((to - self.start) / width) as usize).min(last);
        for (c, cell) in row
            .iter_mut()
            .enumerate()
            .take(last_col + 1)
            .skip(first_col)
        {
            let c0 = self.start + c as f64 * width;
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

    /// The lane names.
    pub fn lane_names(&self) -> &[String] {
        &self.names
    }

    /// The owner names and their colours.
    pub fn owners(&self) -> Vec<(String, Colour)> {
        self.owners
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), palette::series(i)))
            .collect()
    }

    /// The window, `(start, end)`.
    pub fn window(&self) -> (f64, f64) {
        (self.start, self.end)
    }

    /// Lane `lane` as runs `(from, to, owner)` of neighbouring columns with
    /// one owner; empty columns make no run.
    pub fn runs(&self, lane: usize) -> Vec<(f64, f64, usize)> {
        let width = self.width();
        let mut runs: Vec<(f64, f64, usize)> = Vec::new();
        let Some(row) = self.cells.get(lane) else {
            return runs;
        };
        let mut prev = NOBODY;
        for (c, cell) in row.iter().enumerate() {
            let x0 = self.start + c as f64 * width;
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

    #[test]
    fn runs_merge_columns_of_one_owner_and_keep_gaps() {
        let mut l = Lanes::new(
            0.0,
            10.0,
            10,
            vec!["p0".into()],
            vec!["a".into(), "b".into()],
        );
        l.add(0, 0.0, 3.0, 0);
        l.add(0, 5.0, 7.0, 1);
        l.add(0, 7.0, 8.0, 1);
        assert_eq!(l.runs(0), vec![(0.0, 3.0, 0), (5.0, 8.0, 1)]);
    }

    #[test]
    fn a_column_shows_its_longest_holder_and_spans_outside_are_cut() {
        let mut l = Lanes::new(
            0.0,
            10.0,
            2,
            vec!["p0".into()],
            vec!["a".into(), "b".into()],
        );
        l.add(0, -5.0, 1.0, 0);
        l.add(0, 1.0, 4.0, 1);
        l.add(0, 6.0, 60.0, 0);
        assert_eq!(l.runs(0), vec![(0.0, 5.0, 1), (5.0, 10.0, 0)]);
        l.add(7, 0.0, 1.0, 0); // no such lane: ignored
    }
}
