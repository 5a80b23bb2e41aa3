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
    /// Per vCPU number: dispatches per dispersion field.
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
            match self.dispersion.iter_mut().find(|(cpu, _)| *cpu == row.cpu) {
                Some((_, sum)) if self.cumulative => *sum = counts,
                Some((_, sum)) => sum.iter_mut().zip(counts).for_each(|(s, c)| *s += c),
                None => self.dispersion.push((row.cpu, counts)),
            }
        }
        self.dispersion.sort_by_key(|(cpu, _)| *cpu);
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
