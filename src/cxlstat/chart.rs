//! `--svg FILE`: event rates over time, one panel per PMU (with
//! `--aggregate`, one for the events summed over every PMU, and one for
//! each PMU or numbered name events were given with) and a line per
//! event, rewritten after each report.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::common::chart::file::ChartFile;
use crate::common::chart::history::History;
use crate::common::chart::{Chart, Line, Panel, PanelKind, TimeAxis, palette};

/// The charts of one counting run.
pub struct CxlCharts {
    file: ChartFile,
    title: String,
    /// Per PMU (in first-seen order), its events' rates.
    pmus: Vec<(String, History)>,
    /// The names of the PMUs found: a row's PMU that is none of them is a
    /// name as written, summed over the PMUs numbered after it.
    pmu_names: Vec<String>,
}

impl CxlCharts {
    /// Charts written to `path`, under `title`, after each report when
    /// `live`, else by [`CxlCharts::finish`]; `pmu_names` are the PMUs found.
    pub fn new(path: PathBuf, title: String, pmu_names: Vec<String>, live: bool) -> CxlCharts {
        CxlCharts {
            file: ChartFile::new(path, live),
            title,
            pmus: Vec::new(),
            pmu_names,
        }
    }

    /// Adds one report's rates `(pmu, event, rate)` taken at `time`, and,
    /// live, rewrites the file.
    pub fn sample<'a>(
        &mut self,
        time: SystemTime,
        rates: impl Iterator<Item = (&'a str, &'a str, Option<f64>)>,
    ) -> Result<(), String> {
        let t = time
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        for (_, h) in &mut self.pmus {
            h.begin_sample(t);
        }
        for (pmu, event, rate) in rates {
            let h = match self.pmus.iter().position(|(p, _)| p == pmu) {
                Some(i) => &mut self.pmus[i].1,
                None => {
                    let mut h = History::new(64);
                    h.begin_sample(t);
                    self.pmus.push((pmu.to_string(), h));
                    &mut self.pmus.last_mut().expect("pushed").1
                }
            };
            let series = h.series(event);
            if let Some(r) = rate {
                h.add(series, r);
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
        let panels = self
            .pmus
            .iter()
            .map(|(pmu, h)| Panel {
                title: match pmu.as_str() {
                    "all" => "every CXL PMU, summed (--aggregate)".to_string(),
                    found if self.pmu_names.iter().any(|n| n == found) => format!("PMU {pmu}"),
                    _ => format!("the PMUs numbered after {pmu}, summed (--aggregate)"),
                },
                y_label: "events per second".into(),
                kind: PanelKind::Lines {
                    axis: TimeAxis::Local,
                    lines: (0..h.names().len())
                        .map(|i| Line {
                            name: h.names()[i].clone(),
                            colour: palette::series(i),
                            points: h.points(i),
                        })
                        .collect(),
                },
            })
            .collect();
        Chart {
            title: self.title.clone(),
            panels,
        }
    }
}
