//! `--svg FILE`: the run as charts, rewritten after every report. One
//! panel per metric of the chosen report (`-x`: r/s, w/s, rkB/s, wkB/s,
//! r_await, w_await, aqu-sz, %util; `-x -s` and the basic report their own
//! columns), a line per device; the CPU report as a stacked area. With
//! more devices than `--svg-top N`, the N with the highest peak of the
//! `--svg-sort` column (`%util`, or `tps` in the basic report) get a line
//! each and the rest one grey min–max envelope.

use std::path::PathBuf;
use std::time::UNIX_EPOCH;

use crate::common::chart::file::ChartFile;
use crate::common::chart::history::History;
use crate::common::chart::palette::{self, REST};
use crate::common::chart::{Chart, Line, Panel, PanelKind, TimeAxis};

use super::cli::{Options, Unit};
use super::devices::DeviceRow;
use super::model::{basic_stats, ext_short_stats, ext_stats};
use super::report::{Banner, Sample};

/// The device lines drawn when `--svg-top` is not given.
pub const DEFAULT_TOP: usize = 10;

/// The report whose columns are charted.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Report {
    Basic,
    Extended,
    ExtendedShort,
}

/// One charted column: its header (the name `--svg-sort` takes), the
/// panel's title and the y axis title.
struct Metric {
    name: String,
    title: String,
    unit: String,
}

fn metric(name: &str, title: &str, unit: &str) -> Metric {
    Metric {
        name: name.to_string(),
        title: format!("{name}: {title}"),
        unit: unit.to_string(),
    }
}

fn metrics(report: Report, unit: Unit) -> Vec<Metric> {
    let u = unit.label(report == Report::Basic);
    match report {
        Report::Extended => vec![
            metric("r/s", "reads completed per second", "reads/s"),
            metric("w/s", "writes completed per second", "writes/s"),
            metric(&format!("r{u}/s"), "read per second", &format!("{u}/s")),
            metric(&format!("w{u}/s"), "written per second", &format!("{u}/s")),
            metric("r_await", "mean time of a read, queueing included", "ms"),
            metric("w_await", "mean time of a write, queueing included", "ms"),
            metric("aqu-sz", "mean requests queued or in service", "requests"),
            metric("%util", "share of time with I/O in flight", "%"),
        ],
        Report::ExtendedShort => vec![
            metric("tps", "transfers per second", "transfers/s"),
            metric(
                &format!("{u}/s"),
                "read, written and discarded per second",
                &format!("{u}/s"),
            ),
            metric("rqm/s", "requests merged per second", "merges/s"),
            metric("await", "mean time of a request, queueing included", "ms"),
            metric("aqu-sz", "mean requests queued or in service", "requests"),
            metric("%util", "share of time with I/O in flight", "%"),
        ],
        Report::Basic => vec![
            metric("tps", "transfers per second", "transfers/s"),
            metric(&format!("{u}_read/s"), "read per second", &format!("{u}/s")),
            metric(
                &format!("{u}_wrtn/s"),
                "written per second",
                &format!("{u}/s"),
            ),
            metric(
                &format!("{u}_dscd/s"),
                "discarded per second",
                &format!("{u}/s"),
            ),
        ],
    }
}

/// The values of `metrics(report, unit)` for one device row.
fn values(report: Report, unit: Unit, row: &DeviceRow, itv: f64) -> Vec<f64> {
    let per_unit = unit.sectors_per_unit() as f64;
    match report {
        Report::Extended => {
            let x = ext_stats(row.prev, row.cur, itv, row.devices);
            vec![
                x.ios[0],
                x.ios[1],
                x.sectors[0] / per_unit,
                x.sectors[1] / per_unit,
                x.await_ms[0],
                x.await_ms[1],
                x.aqu_sz,
                x.util,
            ]
        }
        Report::ExtendedShort => {
            let x = ext_short_stats(row.prev, row.cur, itv, row.devices);
            vec![
                x.tps,
                x.sectors / per_unit,
                x.merges,
                x.await_ms,
                x.aqu_sz,
                x.util,
            ]
        }
        Report::Basic => {
            let x = basic_stats(row.prev, row.cur, itv);
            let mut v = vec![x.tps];
            v.extend(x.rates.map(|r| r / per_unit));
            v
        }
    }
}

const CPU_COLUMNS: [&str; 6] = ["%user", "%nice", "%system", "%iowait", "%steal", "%idle"];

/// The charts of one run, kept up to date in a file.
pub struct SvgCharts {
    file: ChartFile,
    title: String,
    report: Report,
    unit: Unit,
    metrics: Vec<Metric>,
    sort: usize,
    top: usize,
    devices: bool,
    since_boot_skipped: bool,
    /// Per device, a value per metric (created at the first sample, sized
    /// then).
    devices_history: Option<History>,
    cpu: Option<History>,
}

/// The report `opts` charts, its charted columns, and the one whose peak
/// ranks the devices (`--svg-sort`; `%util`, or the first column).
fn charted(opts: &Options) -> Result<(Report, Vec<Metric>, usize), String> {
    let report = match (opts.extended, opts.short) {
        (false, _) => Report::Basic,
        (true, false) => Report::Extended,
        (true, true) => Report::ExtendedShort,
    };
    let metrics = metrics(report, opts.unit);
    let sort = match &opts.svg_sort {
        None => metrics.iter().position(|m| m.name == "%util").unwrap_or(0),
        Some(name) => metrics
            .iter()
            .position(|m| &m.name == name)
            .ok_or_else(|| {
                let names: Vec<&str> = metrics.iter().map(|m| m.name.as_str()).collect();
                format!(
                    "--svg-sort {}: not a column the charts of this report draw ({})",
                    crate::common::escape::text(name),
                    names.join(", ")
                )
            })?,
    };
    Ok((report, metrics, sort))
}

/// Every column `--svg-sort` names in some report and unit (-k, -m, -G),
/// with its panel's title: what completion offers.
pub fn sort_columns() -> Vec<(String, String)> {
    let mut columns: Vec<(String, String)> = Vec::new();
    for report in [Report::Extended, Report::ExtendedShort, Report::Basic] {
        let units = [Unit::Kilobytes, Unit::Megabytes, Unit::Gigabytes];
        for m in units.into_iter().flat_map(|unit| metrics(report, unit)) {
            if !columns.iter().any(|(name, _)| *name == m.name) {
                let title = m.title.split_once(": ").map_or("", |(_, title)| title);
                let title = title.to_string();
                columns.push((m.name, title));
            }
        }
    }
    columns
}

/// Refuses a `--svg-sort` that names no column the charts of this report
/// draw, with a one-line message naming it and those columns: before any
/// file is opened, as a value the option cannot take.
#[cold]
#[inline(never)]
pub fn check_sort(opts: &Options) -> Result<(), String> {
    charted(opts).map(|_| ())
}

impl SvgCharts {
    /// The charts `opts` asks for, or `None` without `--svg`; an error for
    /// a `--svg-sort` that is not a column of the report.
    /// `live`: the file is rewritten after each report, else once by
    /// [`SvgCharts::finish`] (a replay).
    pub fn new(opts: &Options, banner: &Banner, live: bool) -> Result<Option<SvgCharts>, String> {
        match &opts.svg {
            None => Ok(None),
            Some(path) => Self::to_file(path.clone(), opts, banner, live).map(Some),
        }
    }

    /// The charts for `--svg PATH`. Kept out of line: most runs draw none,
    /// and its code would otherwise sit among the code every run executes.
    #[cold]
    #[inline(never)]
    fn to_file(
        path: PathBuf,
        opts: &Options,
        banner: &Banner,
        live: bool,
    ) -> Result<SvgCharts, String> {
        let (report, metrics, sort) = charted(opts)?;
        let u = &banner.uname;
        Ok(SvgCharts {
            file: ChartFile::new(path, live),
            title: format!(
                "iostat-rs on {} ({} {}), {}",
                u.nodename, u.sysname, u.release, banner.date
            ),
            report,
            unit: opts.unit,
            metrics,
            sort,
            top: opts.svg_top.unwrap_or(DEFAULT_TOP),
            devices: opts.show_disk,
            // A run of one report (no interval, or a count of 1) charts
            // that report, since boot: it is all there is.
            since_boot_skipped: opts.interval.is_some() && opts.count != Some(1),
            devices_history: None,
            cpu: opts.show_cpu.then(|| History::new(CPU_COLUMNS.len())),
        })
    }

    /// Adds a report to the charts and, live, rewrites the file. The first report
    /// (since boot) is left out when others follow it, and so is the one
    /// `-y` skips.
    // Out of line: only this mode runs it (build.rs, "Hot code first").
    #[inline(never)]
    pub fn sample(&mut self, s: &Sample, skipped: bool) -> Result<(), String> {
        if skipped || (s.index == 0 && self.since_boot_skipped) {
            return Ok(());
        }
        let time = s
            .time
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        if self.devices {
            let (report, unit, width) = (self.report, self.unit, self.metrics.len());
            let h = self
                .devices_history
                .get_or_insert_with(|| History::wide(s.devices.rows(s.curr).count(), width));
            h.begin_sample(time);
            for row in s.devices.rows(s.curr) {
                let series = h.series(row.name);
                for (k, v) in values(report, unit, &row, s.itv).into_iter().enumerate() {
                    h.add_at(series, k, v);
                }
            }
            self.fold_gone();
        }
        if let Some(cpu) = &mut self.cpu {
            cpu.begin_sample(time);
            let c = &s.cpu_shares;
            for (name, v) in CPU_COLUMNS
                .iter()
                .zip([c.user, c.nice, c.system, c.iowait, c.steal, c.idle])
            {
                let series = cpu.series(name);
                cpu.add(series, v);
            }
        }
        self.file.report(|| self.chart())
    }

    /// Writes the file at the end of a replay (a live run wrote it already).
    /// A run that charted no report (one report since boot, then the count
    /// or a stop signal) is an error: it wrote no file ([`ChartFile::finish`]).
    // Out of line: only this mode runs it (build.rs, "Hot code first").
    #[inline(never)]
    pub fn finish(&self) -> Result<(), String> {
        self.file.finish(|| self.chart())
    }

    /// The chart of what was sampled so far.
    fn chart(&self) -> Chart {
        let mut panels = Vec::new();
        if let Some(cpu) = &self.cpu {
            let lines = (0..cpu.names().len())
                .map(|i| Line {
                    name: cpu.names()[i].clone(),
                    colour: palette::series(i),
                    points: cpu.points(i),
                })
                .collect();
            panels.push(Panel {
                title: "avg-cpu: share of CPU time (mean per point)".into(),
                y_label: "% of CPU time".into(),
                kind: PanelKind::StackedArea {
                    axis: TimeAxis::Local,
                    lines,
                },
            });
        }
        let (shown, rest) = self.ranked();
        for (k, m) in self.metrics.iter().enumerate() {
            let Some(h) = &self.devices_history else {
                break;
            };
            let mut lines: Vec<Line> = shown
                .iter()
                .enumerate()
                .map(|(rank, &i)| Line {
                    name: h.names()[i].clone(),
                    colour: palette::series(rank),
                    points: h.merged_at(&[i], k),
                })
                .collect();
            let others = rest.len() + h.folded_count();
            if others > 0 {
                lines.push(Line {
                    name: match others {
                        1 => "1 other device (min-max)".into(),
                        n => format!("{n} other devices (min-max)"),
                    },
                    colour: REST,
                    points: h.merged_with_folded_at(&rest, k),
                });
            }
            panels.push(Panel {
                title: m.title.clone(),
                y_label: format!("{} ({})", m.name, m.unit),
                kind: PanelKind::Lines {
                    axis: TimeAxis::Local,
                    lines,
                },
            });
        }
        Chart {
            title: self.title.clone(),
            panels,
        }
    }

    /// Once the history holds more devices than its budget, folds those
    /// not in this report and not drawn alone into the envelope of the
    /// others: a device that comes and goes with a name never seen again
    /// (a `dm-N`, say) would otherwise keep its own series for ever (8 KiB
    /// and more each). The chart is the same: a folded device's peak
    /// stays as it was while the others' only rise and newer devices rank
    /// after it on a tie, so it would never have been drawn alone. Unless
    /// it comes back: then it starts a series of its own, its values
    /// before in the envelope.
    fn fold_gone(&mut self) {
        if !self
            .devices_history
            .as_ref()
            .is_some_and(History::over_budget)
        {
            return;
        }
        let (shown, _) = self.ranked();
        if let Some(h) = &mut self.devices_history {
            h.fold(|i| shown.contains(&i));
        }
    }

    /// The devices drawn alone (highest peak of the sort column first),
    /// and the others, as series indexes.
    fn ranked(&self) -> (Vec<usize>, Vec<usize>) {
        let Some(h) = &self.devices_history else {
            return (Vec::new(), Vec::new());
        };
        let mut order: Vec<usize> = (0..h.names().len()).collect();
        let peak = |i: usize| h.peak_at(i, self.sort).unwrap_or(f64::NEG_INFINITY);
        order.sort_by(|&a, &b| peak(b).total_cmp(&peak(a)).then(a.cmp(&b)));
        let rest = order.split_off(self.top.min(order.len()));
        (order, rest)
    }
}
