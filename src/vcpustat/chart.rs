//! `--svg FILE`: the home-node ratio as a heat map (vCPU × interval) and
//! the dispersion (`core chip socket cec`) as stacked bars per vCPU,
//! rewritten after each report.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::common::chart::file::ChartFile;
use crate::common::chart::history::History;
use crate::common::chart::{Chart, Panel, PanelKind, Stack, palette};

use super::counters::field;
use super::report::Report;

/// The dispersion fields, nearest first, with their legend names.
const DISPERSION: [(usize, &str); 4] = [
    (field::CORE, "core: same core as before"),
    (field::CHIP, "chip: another core of the chip"),
    (field::SOCKET, "socket: another chip"),
    (field::CEC, "cec: past the next NUMA node"),
];

/// The charts of one run.
pub struct VcpuCharts {
    file: ChartFile,
    title: String,
    /// Cumulative reports (`-r`) replace the dispersion; deltas add up.
    cumulative: bool,
    /// Home ratio (0–1) per vCPU (`cpuN`), over time.
    home: History,
    /// Per vCPU number, in order: dispatches per dispersion field.
    dispersion: Vec<(u32, [u64; 4])>,
}

impl VcpuCharts {
    /// Charts written to `path`, under `title`, after each report when
    /// `live`, else by [`VcpuCharts::finish`]; `cumulative` for `-r`.
    pub fn new(path: PathBuf, title: String, live: bool, cumulative: bool) -> VcpuCharts {
        VcpuCharts {
            file: ChartFile::new(path, live),
            title,
            cumulative,
            home: History::new(64),
            dispersion: Vec::new(),
        }
    }

    /// Adds a report taken at `time` and, live, rewrites the file.
    pub fn sample(&mut self, time: SystemTime, report: &Report) -> Result<(), String> {
        let t = time
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        self.home.begin_sample(t);
        for row in &report.rows {
            let series = self.home.series(&format!("cpu{}", row.cpu));
            if let Some(pct) = row.dispatches.home_pct() {
                self.home.add(series, pct / 100.0);
            }
            let counts = DISPERSION.map(|(f, _)| row.dispatches.count(f));
            // Kept in vCPU order, found by halving: a search from the
            // start was quadratic, 28 % of a run with 8,192 vCPUs.
            match self
                .dispersion
                .binary_search_by_key(&row.cpu, |(cpu, _)| *cpu)
            {
                Ok(i) if self.cumulative => self.dispersion[i].1 = counts,
                Ok(i) => {
                    let sum = &mut self.dispersion[i].1;
                    sum.iter_mut().zip(counts).for_each(|(s, c)| *s += c);
                }
                Err(i) => self.dispersion.insert(i, (row.cpu, counts)),
            }
        }
        self.file.report(|| self.chart())
    }

    /// Writes the file at the end of a replay (a live run wrote it already);
    /// an error when no report was charted ([`ChartFile::finish`]).
    pub fn finish(&self) -> Result<(), String> {
        self.file.finish(|| self.chart())
    }

    fn chart(&self) -> Chart {
        let mut order: Vec<usize> = (0..self.home.names().len()).collect();
        let number = |i: &usize| {
            self.home.names()[*i][3..]
                .parse::<u32>()
                .unwrap_or(u32::MAX)
        };
        order.sort_by_key(number);
        let times = self.home.points(0).iter().map(|p| p.0).collect();
        let heat = Panel {
            title: "home-node dispatch ratio per vCPU and interval".into(),
            y_label: "vCPU".into(),
            kind: PanelKind::HeatMap {
                times,
                rows: order
                    .iter()
                    .map(|&i| self.home.names()[i].clone())
                    .collect(),
                cells: order
                    .iter()
                    .map(|&i| {
                        self.home
                            .points(i)
                            .iter()
                            .map(|p| p.1.map(|s| s.mean))
                            .collect()
                    })
                    .collect(),
                scale: (
                    "no dispatch at home".into(),
                    "every dispatch at home".into(),
                ),
            },
        };
        let what = if self.cumulative {
            "since the statistics were switched on"
        } else {
            "over the run"
        };
        let bars = Panel {
            title: format!("dispatch dispersion per vCPU, {what}"),
            y_label: "dispatches".into(),
            kind: PanelKind::StackedBars {
                categories: self
                    .dispersion
                    .iter()
                    .map(|(cpu, _)| format!("cpu{cpu}"))
                    .collect(),
                stacks: DISPERSION
                    .iter()
                    .enumerate()
                    .map(|(k, (_, name))| Stack {
                        name: (*name).to_string(),
                        colour: palette::series(k),
                        values: self.dispersion.iter().map(|(_, c)| c[k] as f64).collect(),
                    })
                    .collect(),
            },
        };
        Chart {
            title: self.title.clone(),
            panels: vec![heat, bars],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vcpustat::report::{CpuRow, Dispatches};

    /// A report of `rows` in the order given: (vCPU, total, core, chip,
    /// socket, cec).
    fn report(rows: &[(u32, [u64; 5])]) -> Report {
        Report {
            rows: rows
                .iter()
                .map(|&(cpu, [total, core, chip, socket, cec])| CpuRow {
                    cpu,
                    dispatches: Dispatches::cumulative(&[total, core, chip, socket, cec, 0, 0, 0]),
                })
                .collect(),
            ..Report::default()
        }
    }

    /// The dispersion bars: their vCPUs, and the core and cec values.
    fn bars(charts: &VcpuCharts) -> (Vec<String>, Vec<f64>, Vec<f64>) {
        match &charts.chart().panels[1].kind {
            PanelKind::StackedBars { categories, stacks } => (
                categories.clone(),
                stacks[0].values.clone(),
                stacks[3].values.clone(),
            ),
            other => panic!("not the dispersion bars: {other:?}"),
        }
    }

    /// Rows come in the report's order (`--sort home`, `--top`), not the
    /// vCPUs', and another set of vCPUs in each report: the bars are in
    /// vCPU order and each sums its own vCPU's dispatches.
    fn sampled(cumulative: bool) -> (Vec<String>, Vec<f64>, Vec<f64>) {
        let mut charts = VcpuCharts::new("unwritten.svg".into(), String::new(), false, cumulative);
        let first = report(&[
            (5, [10, 4, 3, 2, 1]),
            (1, [20, 10, 5, 4, 1]),
            (3, [30, 20, 5, 3, 2]),
        ]);
        let second = report(&[(3, [7, 4, 1, 1, 1]), (2, [8, 5, 1, 1, 1])]);
        charts.sample(UNIX_EPOCH, &first).unwrap();
        charts.sample(UNIX_EPOCH, &second).unwrap();
        bars(&charts)
    }

    #[test]
    fn dispersion_bars_add_up_each_vcpu_in_vcpu_order() {
        let (vcpus, core, cec) = sampled(false);
        assert_eq!(vcpus, ["cpu1", "cpu2", "cpu3", "cpu5"]);
        assert_eq!(core, [10.0, 5.0, 24.0, 4.0]);
        assert_eq!(cec, [1.0, 1.0, 3.0, 1.0]);
    }

    #[test]
    fn cumulative_dispersion_bars_keep_each_vcpus_last_report() {
        let (vcpus, core, cec) = sampled(true);
        assert_eq!(vcpus, ["cpu1", "cpu2", "cpu3", "cpu5"]);
        assert_eq!(core, [10.0, 5.0, 4.0, 4.0]);
        assert_eq!(cec, [1.0, 1.0, 1.0, 1.0]);
    }
}
