//! SVG charts of a run or a recording, for every tool: one description of a
//! chart ([`Chart`] of [`Panel`]s), drawn by [`render`] with plotters' SVG
//! backend and written by a [`file::ChartFile`].
//!
//! * [`history`]: series over time in a bounded number of buckets (per
//!   bucket min, max and mean), so a live run of any length or a recording
//!   of any size keeps a fixed amount of memory and the chart has at most a
//!   few points per pixel column;
//! * [`lanes`]: swimlanes (who ran when) decimated to pixel columns;
//! * [`palette`]: the series colours;
//! * `axis`: the numeric axes and their ticks;
//! * [`file`](mod@file): when a run writes its chart file (after each
//!   report live, at the end of a replay, never empty), and the atomic
//!   writer (a browser reloading the file never sees half of it).
//!
//! Charts are self-contained SVG: no scripts, images or external fonts
//! (generic font families only), a white background for printing, and
//! every name from the kernel or a recording with its control characters
//! and Unicode noncharacters escaped (plotters escapes `<`, `&` and quotes).

use std::fmt::Write as _;

mod axis;
mod draw;
pub mod file;
pub mod history;
pub mod lanes;
pub mod palette;

pub use draw::render;

/// `--svg`'s help, the same in the three tools (iostat-rs builds its
/// command line by hand).
pub const SVG_HELP: &str =
    "Write the run as SVG charts to FILE, rewritten (atomically) after each report";

/// `--svg FILE`, for the tools whose command line clap parses.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SvgArgs {
    /// Write the run as SVG charts to FILE ([`SVG_HELP`]).
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath,
          value_parser = crate::common::cli::path_arg, help = SVG_HELP)]
    pub svg: Option<std::path::PathBuf>,
}

/// Why `--svg` is refused where a tool writes Prometheus expositions instead
/// of the reports its charts draw (iostat-rs and vcpustat; cxlstat draws
/// its counts beside an exposition).
pub const SVG_WITH_EXPOSITIONS: &str = "--svg draws the reports, which -o prometheus and \
     --textfile replace with expositions: draw the charts in a run of their own";

/// The width every chart is drawn at, in pixels.
pub const WIDTH: u32 = 1280;

/// A chart: a title and panels stacked top to bottom.
#[derive(Debug, Clone)]
pub struct Chart {
    /// The title at the top (tool, host, what is shown).
    pub title: String,
    /// The panels, in order.
    pub panels: Vec<Panel>,
}

/// One panel: a plot with its own axes and legend.
#[derive(Debug, Clone)]
pub struct Panel {
    /// The panel's caption.
    pub title: String,
    /// The y axis title, with its unit.
    pub y_label: String,
    /// What is drawn.
    pub kind: PanelKind,
}

/// The x axis of a plot over time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TimeAxis {
    /// Unix seconds, labelled in local time (`%H:%M:%S`) like the text reports.
    Local,
    /// Milliseconds from the start of a recording.
    ElapsedMs,
}

/// One named series of a line or area plot.
#[derive(Debug, Clone)]
pub struct Line {
    /// The name in the legend.
    pub name: String,
    /// Its colour.
    pub colour: palette::Colour,
    /// The points: per bucket min, max and mean (`None`: no value, a gap).
    pub points: Vec<(f64, Option<history::Span>)>,
}

/// A bar made of stacked parts.
#[derive(Debug, Clone)]
pub struct Stack {
    /// The name of the part in the legend.
    pub name: String,
    /// Its colour.
    pub colour: palette::Colour,
    /// Its value in each category.
    pub values: Vec<f64>,
}

/// One box of a percentile plot.
#[derive(Debug, Clone, PartialEq)]
pub struct Percentiles {
    /// The category (a vCPU).
    pub name: String,
    /// p50, p90, p99 and maximum, in the panel's unit.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest value.
    pub max: f64,
}

/// What a panel draws.
#[derive(Debug, Clone)]
pub enum PanelKind {
    /// A line per series over time; a bucket's min–max drawn as a vertical
    /// stroke, so spikes survive decimation.
    Lines {
        /// The x axis.
        axis: TimeAxis,
        /// The series, in legend order.
        lines: Vec<Line>,
    },
    /// Series means stacked over time (the first at the bottom).
    StackedArea {
        /// The x axis.
        axis: TimeAxis,
        /// The series, bottom first.
        lines: Vec<Line>,
    },
    /// A value 0–1 per row and time bucket, as a colour.
    HeatMap {
        /// The bucket times (x), one per column of `cells`.
        times: Vec<f64>,
        /// The row names (y).
        rows: Vec<String>,
        /// `cells[row][column]`, 0–1, `None` for no value.
        cells: Vec<Vec<Option<f64>>>,
        /// What 0 and 1 mean, for the colour scale.
        scale: (String, String),
    },
    /// Stacked bars per category.
    StackedBars {
        /// The categories (x).
        categories: Vec<String>,
        /// The stacked parts, bottom first.
        stacks: Vec<Stack>,
    },
    /// A lane per resource (a physical processor) showing who held it.
    Swimlanes(lanes::Lanes),
    /// A box per category: p50–p90 box, whisker to p99, mark at the maximum.
    Boxes(Vec<Percentiles>),
}

impl Panel {
    /// The panel's height in pixels.
    fn height(&self) -> u32 {
        match &self.kind {
            PanelKind::HeatMap { rows, .. } => (rows.len() as u32 * 14).clamp(260, 900) + 80,
            PanelKind::Swimlanes(l) => (l.lane_names().len() as u32 * 18).clamp(260, 900) + 80,
            _ => 320,
        }
    }
}

/// A name from the kernel, a recording or the command line, fit for a
/// label: control characters and noncharacters escaped (XML cannot hold
/// most of them, even as references), and cut to `max` characters with an
/// ellipsis in the middle: names that differ only at the end (a number)
/// stay apart.
pub fn label(name: &str, max: usize) -> String {
    let escaped = escape_nonchars(&crate::common::escape::text(name));
    let count = escaped.chars().count();
    if count <= max {
        return escaped;
    }
    let kept = max.saturating_sub(1);
    let head = kept / 2;
    let mut cut: String = escaped.chars().take(head).collect();
    cut.push('…');
    cut.extend(escaped.chars().skip(count - (kept - head)));
    cut
}

/// Whether `c` is a Unicode noncharacter: U+FDD0 to U+FDEF and the last two
/// code points of every plane. U+FFFE and U+FFFF are outside XML 1.0's
/// `Char`, so a document holding them does not parse; the others are
/// discouraged there.
fn noncharacter(c: char) -> bool {
    let c = u32::from(c);
    (0xfdd0..=0xfdef).contains(&c) || c & 0xfffe == 0xfffe
}

/// `text` with every noncharacter written as `\u{ffff}`, like
/// [`escape::text`](crate::common::escape::text) writes the controls.
fn escape_nonchars(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    for c in text.chars() {
        if noncharacter(c) {
            let _ = write!(s, "\\u{{{:x}}}", u32::from(c));
        } else {
            s.push(c);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_escape_controls_and_cut_long_names() {
        assert_eq!(label("sd\u{1b}[31m\u{7}a", 40), "sd\\x1b[31m\\x07a");
        assert_eq!(label("abcdef", 4), "a…ef");
        assert_eq!(label("abcdef", 1), "…");
        assert_eq!(label("<&\"", 4), "<&\"", "plotters escapes markup itself");
    }

    #[test]
    fn long_names_keep_their_tails() {
        assert_eq!(
            label("device-with-a-fairly-long-name-07", 30),
            "device-with-a-…ly-long-name-07"
        );
        assert_eq!(label("device-with-a-fairly-long-name-07", 33).len(), 33);
    }

    #[test]
    fn labels_escape_noncharacters() {
        assert_eq!(
            label("a\u{fffe}b\u{ffff}\u{fdd0}\u{1ffff}", 40),
            "a\\u{fffe}b\\u{ffff}\\u{fdd0}\\u{1ffff}"
        );
        assert_eq!(
            label("\u{fdcf}\u{fdf0}\u{fffd}", 40),
            "\u{fdcf}\u{fdf0}\u{fffd}"
        );
    }
}
