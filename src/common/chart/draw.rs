//! Drawing a [`Chart`] with plotters' SVG backend: the title, then each
//! panel as a plot on the left and its legend on the right.

use std::time::{Duration, UNIX_EPOCH};

use plotters::coord::Shift;
use plotters::prelude::*;

use super::axis::{Axis, tick_step};
use super::history::Span;
use super::palette::{self, Colour};
use super::{Chart, Line, Panel, PanelKind, Percentiles, Stack, TimeAxis, WIDTH, label};
use crate::common::clock::strftime_local;

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type Failed = String;

const FONT: FontFamily<'static> = FontFamily::SansSerif;
const TITLE_HEIGHT: u32 = 50;
const LEGEND_WIDTH: u32 = 250;
/// Where the legend's first row starts, from the top of its panel.
const LEGEND_TOP: u32 = 40;
/// A legend entry's swatch, square, as high as its text.
const SWATCH: u32 = 14;
/// From one legend row to the next.
const LEGEND_ROW: u32 = SWATCH + 4;
/// Longest name drawn, in characters.
const NAME_CHARS: usize = 30;

fn failed<E: std::fmt::Debug>(err: E) -> Failed {
    format!("cannot draw the chart: {err:?}")
}

fn rgb(c: Colour) -> RGBColor {
    RGBColor(c.0, c.1, c.2)
}

/// Draws `chart` as an SVG document [`WIDTH`] pixels wide.
pub fn render(chart: &Chart) -> Result<String, Failed> {
    let height = TITLE_HEIGHT + chart.panels.iter().map(Panel::height).sum::<u32>();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(failed)?;
        let style = TextStyle::from((FONT, 24).into_font().style(FontStyle::Bold)).color(&BLACK);
        root.draw_text(&label(&chart.title, 90), &style, (16, 14))
            .map_err(failed)?;
        let (_, mut rest) = root.split_vertically(TITLE_HEIGHT);
        for panel in &chart.panels {
            let (area, below) = rest.split_vertically(panel.height());
            draw_panel(&area, panel)?;
            rest = below;
        }
        root.present().map_err(failed)?;
    }
    Ok(svg)
}

fn draw_panel(area: &Area, panel: &Panel) -> Result<(), Failed> {
    let (plot, legend) = area.split_horizontally(WIDTH - LEGEND_WIDTH);
    match &panel.kind {
        PanelKind::Lines { axis, lines } => {
            draw_lines(&plot, panel, *axis, lines, false)?;
            draw_legend(&legend, &entries(lines))
        }
        PanelKind::StackedArea { axis, lines } => {
            draw_lines(&plot, panel, *axis, lines, true)?;
            let mut e = entries(lines);
            e.reverse(); // the legend reads top to bottom like the stack
            draw_legend(&legend, &e)
        }
        PanelKind::HeatMap {
            times,
            rows,
            cells,
            scale,
        } => {
            draw_heat_map(&plot, panel, times, rows, cells)?;
            let steps: Vec<(String, Colour)> = [1.0, 0.75, 0.5, 0.25, 0.0]
                .iter()
                .map(|&v| {
                    let name = match v {
                        1.0 => format!("1 = {}", scale.1),
                        0.0 => format!("0 = {}", scale.0),
                        _ => format!("{v}"),
                    };
                    (name, palette::scale(v))
                })
                .collect();
            draw_legend(&legend, &steps)
        }
        PanelKind::StackedBars { categories, stacks } => {
            draw_bars(&plot, panel, categories, stacks)?;
            let mut e: Vec<_> = stacks.iter().map(|s| (s.name.clone(), s.colour)).collect();
            e.reverse();
            draw_legend(&legend, &e)
        }
        PanelKind::Swimlanes(lanes) => {
            draw_lanes(&plot, panel, lanes)?;
            draw_legend(&legend, &lanes.owners())
        }
        PanelKind::Boxes(boxes) => {
            draw_boxes(&plot, panel, boxes)?;
            draw_legend(
                &legend,
                &[
                    ("box: p50 to p90".into(), palette::series(0)),
                    ("whisker: p90 to p99".into(), palette::series(9)),
                    ("mark: maximum".into(), palette::series(3)),
                ],
            )
        }
    }
}

fn entries(lines: &[Line]) -> Vec<(String, Colour)> {
    lines.iter().map(|l| (l.name.clone(), l.colour)).collect()
}

/// The legend: a filled swatch and a name per entry, top to bottom, as
/// many as the panel's height holds, then "… N more".
fn draw_legend(area: &Area, entries: &[(String, Colour)]) -> Result<(), Failed> {
    let style = TextStyle::from((FONT, 14).into_font()).color(&BLACK);
    let rows =
        (area.dim_in_pixel().1.saturating_sub(LEGEND_TOP + SWATCH) / LEGEND_ROW + 1) as usize;
    let shown = if entries.len() > rows {
        rows - 1
    } else {
        entries.len()
    };
    let row = |i: usize| (LEGEND_TOP + LEGEND_ROW * i as u32) as i32;
    for (i, (name, colour)) in entries.iter().take(shown).enumerate() {
        let y = row(i);
        area.draw(&Rectangle::new(
            [(6, y), (6 + SWATCH as i32, y + SWATCH as i32)],
            rgb(*colour).filled(),
        ))
        .map_err(failed)?;
        area.draw_text(&label(name, NAME_CHARS), &style, (26, y))
            .map_err(failed)?;
    }
    if shown < entries.len() {
        let more = format!("… {} more", entries.len() - shown);
        area.draw_text(&more, &style, (26, row(shown)))
            .map_err(failed)?;
    }
    Ok(())
}

/// A tick of a time axis `step` apart from the next: local times get as
/// many decimals of a second as the step needs (up to milliseconds; none
/// without a step), elapsed milliseconds are numbers.
fn time_text(axis: TimeAxis, x: f64, step: Option<f64>) -> String {
    match axis {
        TimeAxis::Local => {
            // Whole milliseconds first: x is inexact, 0.3 s may be 0.2999….
            let ms = (x.max(0.0) * 1000.0).round() as u64;
            let t = UNIX_EPOCH + Duration::from_secs(ms / 1000);
            let text = strftime_local("%H:%M:%S", t).unwrap_or_default();
            let places = step.map_or(0, decimals).min(3);
            if places == 0 {
                text
            } else {
                let fraction = format!("{:03}", ms % 1000);
                format!("{text}.{}", &fraction[..places])
            }
        }
        TimeAxis::ElapsedMs => number_text(x, step),
    }
}

fn axis_title(axis: TimeAxis) -> &'static str {
    match axis {
        TimeAxis::Local => "local time (HH:MM:SS)",
        TimeAxis::ElapsedMs => "time since the first record (ms)",
    }
}

/// A tick label: SI prefixes past ten thousand, and as many decimals as
/// tell ticks `step` apart (two without a step), trailing zeros trimmed.
fn number_text(v: f64, step: Option<f64>) -> String {
    let a = v.abs();
    let (factor, suffix) = match a {
        _ if a >= 1e18 => (1e18, "E"),
        _ if a >= 1e15 => (1e15, "P"),
        _ if a >= 1e12 => (1e12, "T"),
        _ if a >= 1e9 => (1e9, "G"),
        _ if a >= 1e6 => (1e6, "M"),
        _ if a >= 1e4 => (1e3, "k"),
        _ => (1.0, ""),
    };
    let places = step.map_or(2, |s| decimals(s / factor));
    let text = format!("{:.places$}", v / factor);
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    format!("{text}{suffix}")
}

/// The fewest decimals that write every multiple of `step` (at most 12).
fn decimals(step: f64) -> usize {
    let mut x = step.abs();
    for places in 0..12 {
        if (x - x.round()).abs() < 1e-6 * x.max(1.0) {
            return places;
        }
        x *= 10.0;
    }
    12
}

fn x_range(lines: &[Line]) -> (f64, f64) {
    let xs = lines.iter().flat_map(|l| l.points.iter().map(|p| p.0));
    let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
        (lo.min(x), hi.max(x))
    });
    if lo.is_finite() && hi > lo {
        (lo, hi)
    } else if lo.is_finite() {
        (lo - 1.0, lo + 1.0)
    } else {
        (0.0, 1.0)
    }
}

fn y_top(max: f64) -> f64 {
    if max.is_finite() && max > 0.0 {
        max * 1.08
    } else {
        1.0
    }
}

/// The polylines of one series: a stroke from min to max per bucket, gaps
/// where a bucket has no value.
fn segments(points: &[(f64, Option<Span>)]) -> Vec<Vec<(f64, f64)>> {
    let mut out: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut current: Vec<(f64, f64)> = Vec::new();
    for &(x, span) in points {
        match span {
            None => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
            }
            Some(s) => {
                // Enter the stroke at the end nearer the previous point.
                let prev = current.last().map_or(s.mean, |p| p.1);
                let (a, b) = if (prev - s.min).abs() <= (prev - s.max).abs() {
                    (s.min, s.max)
                } else {
                    (s.max, s.min)
                };
                current.push((x, a));
                if b != a {
                    current.push((x, b));
                }
            }
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

fn draw_lines(
    area: &Area,
    panel: &Panel,
    axis: TimeAxis,
    lines: &[Line],
    stacked: bool,
) -> Result<(), Failed> {
    let (x0, x1) = x_range(lines);
    // Half the time a bucket stands for: the buckets' spacing, or the
    // whole axis for a lone bucket (one report), which would otherwise be
    // drawn with no width.
    let buckets = lines.iter().map(|l| l.points.len()).max().unwrap_or(0);
    let half = (x1 - x0) / (2 * buckets.saturating_sub(1).max(1)) as f64;
    let widen = |(x, y): (f64, f64)| vec![(x - half, y), (x + half, y)];
    // Stacked: cumulative means, bottom series first.
    let mut stacks: Vec<Vec<(f64, f64)>> = Vec::new();
    if stacked {
        let mut base: Vec<f64> = Vec::new();
        for line in lines {
            base.resize(line.points.len(), 0.0);
            let layer: Vec<(f64, f64)> = line
                .points
                .iter()
                .zip(base.iter_mut())
                .map(|(&(x, s), b)| {
                    *b += s.map_or(0.0, |s| s.mean);
                    (x, *b)
                })
                .collect();
            stacks.push(match layer[..] {
                [lone] => widen(lone),
                _ => layer,
            });
        }
    }
    let top = if stacked {
        stacks
            .last()
            .map_or(0.0, |l| l.iter().map(|p| p.1).fold(0.0, f64::max))
    } else {
        lines
            .iter()
            .flat_map(|l| l.points.iter().filter_map(|p| p.1.map(|s| s.max)))
            .fold(0.0, f64::max)
    };
    let mut chart = ChartBuilder::on(area)
        .caption(label(&panel.title, 80), (FONT, 18))
        .margin(10)
        .x_label_area_size(44)
        .y_label_area_size(72)
        .build_cartesian_2d(Axis::new(x0..x1), Axis::new(0.0..y_top(top)))
        .map_err(failed)?;
    let x_step = tick_step(x0, x1, 8);
    let y_step = tick_step(0.0, y_top(top), 6);
    chart
        .configure_mesh()
        .x_labels(8)
        .y_labels(6)
        .x_label_formatter(&|x| time_text(axis, *x, x_step))
        .y_label_formatter(&|y| number_text(*y, y_step))
        .x_desc(axis_title(axis))
        .y_desc(label(&panel.y_label, 60))
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 14))
        .light_line_style(RGBColor(0xee, 0xee, 0xee))
        .draw()
        .map_err(failed)?;
    if stacked {
        for (layer, line) in stacks.iter().zip(lines).rev() {
            chart
                .draw_series(AreaSeries::new(
                    layer.iter().copied(),
                    0.0,
                    rgb(line.colour).filled(),
                ))
                .map_err(failed)?;
        }
        return Ok(());
    }
    for line in lines {
        let style = rgb(line.colour).stroke_width(2);
        for segment in segments(&line.points) {
            let segment = match segment[..] {
                [lone] => widen(lone),
                _ => segment,
            };
            chart
                .draw_series(LineSeries::new(segment, style))
                .map_err(failed)?;
        }
    }
    Ok(())
}

/// The category name at `x` (a tick of [`Axis::categories`]).
fn category(names: &[String], x: f64) -> String {
    names
        .get(x.floor().max(0.0) as usize)
        .map(|n| label(n, 12))
        .unwrap_or_default()
}

fn draw_heat_map(
    area: &Area,
    panel: &Panel,
    times: &[f64],
    rows: &[String],
    cells: &[Vec<Option<f64>>],
) -> Result<(), Failed> {
    let columns = times.len().max(1);
    let mut chart = ChartBuilder::on(area)
        .caption(label(&panel.title, 80), (FONT, 18))
        .margin(10)
        .x_label_area_size(44)
        .y_label_area_size(90)
        .build_cartesian_2d(Axis::new(0.0..columns as f64), Axis::categories(rows.len()))
        .map_err(failed)?;
    // Columns a fraction of a second apart get the decimals that tell
    // their times apart.
    let step = times
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|&d| d > 0.0)
        .reduce(f64::min);
    let time_at = |x: f64| {
        times
            .get(x.floor() as usize)
            .map(|&t| time_text(TimeAxis::Local, t, step))
            .unwrap_or_default()
    };
    chart
        .configure_mesh()
        .disable_mesh()
        .x_labels(8)
        .y_labels(30)
        .x_label_formatter(&|x| time_at(*x))
        .y_label_formatter(&|y| category(rows, *y))
        .x_desc(axis_title(TimeAxis::Local))
        .y_desc(label(&panel.y_label, 60))
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 14))
        .draw()
        .map_err(failed)?;
    // One rectangle per run of equal colour in a row (values in 5 % steps).
    let mut rects = Vec::new();
    for (r, row) in cells.iter().enumerate() {
        let mut run: Option<(usize, u32)> = None;
        for c in 0..=row.len() {
            let step = row
                .get(c)
                .copied()
                .flatten()
                .map(|v| (v.clamp(0.0, 1.0) * 20.0).round() as u32);
            match (run, step) {
                (Some((_, s)), Some(t)) if s == t => continue,
                _ => {}
            }
            if let Some((start, s)) = run.take() {
                let colour = rgb(palette::scale(f64::from(s) / 20.0));
                rects.push(Rectangle::new(
                    [(start as f64, r as f64), (c as f64, r as f64 + 1.0)],
                    colour.filled(),
                ));
            }
            run = step.map(|s| (c, s));
        }
    }
    chart.draw_series(rects).map_err(failed)?;
    Ok(())
}

fn draw_bars(
    area: &Area,
    panel: &Panel,
    categories: &[String],
    stacks: &[Stack],
) -> Result<(), Failed> {
    let top = (0..categories.len())
        .map(|i| {
            stacks
                .iter()
                .map(|s| s.values.get(i).copied().unwrap_or(0.0))
                .sum::<f64>()
        })
        .fold(0.0, f64::max);
    let mut chart = vcpu_axes(area, panel, categories, top)?;
    let mut base = vec![0.0; categories.len()];
    for stack in stacks {
        let colour = rgb(stack.colour);
        let rects: Vec<_> = base
            .iter_mut()
            .enumerate()
            .filter_map(|(i, b)| {
                let v = stack.values.get(i).copied().unwrap_or(0.0);
                let from = *b;
                *b += v;
                (v > 0.0).then(|| {
                    Rectangle::new(
                        [(i as f64 + 0.1, from), (i as f64 + 0.9, from + v)],
                        colour.filled(),
                    )
                })
            })
            .collect();
        chart.draw_series(rects).map_err(failed)?;
    }
    Ok(())
}

fn draw_lanes(area: &Area, panel: &Panel, lanes: &super::lanes::Lanes) -> Result<(), Failed> {
    let (start, end) = lanes.window();
    let names = lanes.lane_names();
    let mut chart = ChartBuilder::on(area)
        .caption(label(&panel.title, 80), (FONT, 18))
        .margin(10)
        .x_label_area_size(44)
        .y_label_area_size(90)
        .build_cartesian_2d(Axis::new(start..end), Axis::categories(names.len()))
        .map_err(failed)?;
    let x_step = tick_step(start, end, 10);
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_labels(10)
        .y_labels(40)
        .x_label_formatter(&|x| number_text(*x, x_step))
        .y_label_formatter(&|y| category(&names, *y))
        .x_desc(axis_title(TimeAxis::ElapsedMs))
        .y_desc(label(&panel.y_label, 60))
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 14))
        .light_line_style(RGBColor(0xee, 0xee, 0xee))
        .draw()
        .map_err(failed)?;
    let owners = lanes.owners();
    for lane in 0..names.len() {
        let y = lane as f64;
        let rects: Vec<_> = lanes
            .runs(lane)
            .into_iter()
            .map(|(x0, x1, owner)| {
                Rectangle::new(
                    [(x0, y + 0.15), (x1, y + 0.85)],
                    rgb(owners[owner].1).filled(),
                )
            })
            .collect();
        chart.draw_series(rects).map_err(failed)?;
    }
    Ok(())
}

/// Axes with one category per vCPU along x (`names`) and values from 0 to
/// `top` up y, drawn with the panel's title and y label.
fn vcpu_axes<'a, 'b>(
    area: &'a Area<'b>,
    panel: &Panel,
    names: &[String],
    top: f64,
) -> Result<ChartContext<'a, SVGBackend<'b>, Cartesian2d<Axis, Axis>>, Failed> {
    let mut chart = ChartBuilder::on(area)
        .caption(label(&panel.title, 80), (FONT, 18))
        .margin(10)
        .x_label_area_size(44)
        .y_label_area_size(72)
        .build_cartesian_2d(Axis::categories(names.len()), Axis::new(0.0..y_top(top)))
        .map_err(failed)?;
    let y_step = tick_step(0.0, y_top(top), 6);
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(24)
        .y_labels(6)
        .x_label_formatter(&|x| category(names, *x))
        .y_label_formatter(&|y| number_text(*y, y_step))
        .x_desc("vCPU")
        .y_desc(label(&panel.y_label, 60))
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 14))
        .light_line_style(RGBColor(0xee, 0xee, 0xee))
        .draw()
        .map_err(failed)?;
    Ok(chart)
}

fn draw_boxes(area: &Area, panel: &Panel, boxes: &[Percentiles]) -> Result<(), Failed> {
    let top = boxes.iter().map(|b| b.max).fold(0.0, f64::max);
    let names: Vec<String> = boxes.iter().map(|b| b.name.clone()).collect();
    let mut chart = vcpu_axes(area, panel, &names, top)?;
    let (boxc, whisker, maxc) = (
        rgb(palette::series(0)),
        rgb(palette::series(9)),
        rgb(palette::series(3)),
    );
    for (i, b) in boxes.iter().enumerate() {
        let x = i as f64 + 0.5;
        chart
            .draw_series([
                PathElement::new(vec![(x, b.p90), (x, b.p99)], whisker.stroke_width(2)),
                PathElement::new(
                    vec![(x - 0.15, b.p99), (x + 0.15, b.p99)],
                    whisker.stroke_width(2),
                ),
            ])
            .map_err(failed)?;
        chart
            .draw_series([Rectangle::new(
                [(x - 0.3, b.p50), (x + 0.3, b.p90.max(b.p50))],
                boxc.filled(),
            )])
            .map_err(failed)?;
        // A line: a rectangle of no height is drawn as nothing.
        chart
            .draw_series([PathElement::new(
                vec![(x - 0.3, b.max), (x + 0.3, b.max)],
                maxc.stroke_width(3),
            )])
            .map_err(failed)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::axis::key_points;
    use super::*;

    #[test]
    fn numbers_get_short_ticks() {
        assert_eq!(number_text(0.0, None), "0");
        assert_eq!(number_text(12.5, None), "12.5");
        assert_eq!(number_text(2_500_000.0, None), "2.5M");
        assert_eq!(number_text(9_999.0, None), "9999");
        assert_eq!(number_text(10_000.0, None), "10k");
        assert_eq!(number_text(100.0, Some(50.0)), "100");
        assert_eq!(number_text(1_200_000.0, Some(200_000.0)), "1.2M");
        assert_eq!(number_text(1e17, Some(5e16)), "100P");
        assert_eq!(number_text(2.5e18, Some(5e17)), "2.5E");
        assert_eq!(number_text(-3e21, Some(1e21)), "-3000E");
    }

    /// The ticks of an axis, as labelled.
    fn tick_texts(low: f64, high: f64, max: usize) -> Vec<String> {
        let step = tick_step(low, high, max);
        key_points(low, high, max)
            .into_iter()
            .map(|v| number_text(v, step))
            .collect()
    }

    #[test]
    fn small_ticks_get_the_decimals_that_tell_them_apart() {
        // An aqu-sz axis read "0 0 0 0 0" (two decimals for every tick).
        assert_eq!(
            tick_texts(0.0, 0.0045, 6),
            ["0", "0.001", "0.002", "0.003", "0.004"]
        );
        assert_eq!(
            tick_texts(0.0, 1.08, 6),
            ["0", "0.2", "0.4", "0.6", "0.8", "1"]
        );
        assert_eq!(tick_texts(0.0, 0.000_27, 4), ["0", "0.0001", "0.0002"]);
        assert_eq!(tick_texts(0.0, 30_000.0, 4), ["0", "10k", "20k", "30k"]);
    }

    #[test]
    fn sub_second_local_times_show_the_step_in_full() {
        // 2026-01-01 09:00:00 UTC: second 00 in every whole-minute zone.
        let t0 = 1_767_258_000.0;
        let (low, high) = (t0 + 0.1, t0 + 0.3);
        let step = tick_step(low, high, 5);
        let seconds: Vec<String> = key_points(low, high, 5)
            .into_iter()
            .map(|x| {
                let text = time_text(TimeAxis::Local, x, step);
                text.rsplit(':').next().unwrap().to_owned()
            })
            .collect();
        assert_eq!(seconds, ["00.10", "00.15", "00.20", "00.25", "00.30"]);
        let whole = time_text(TimeAxis::Local, t0 + 2.0, Some(2.0));
        assert!(whole.ends_with(":02"), "{whole}");
        let whole = time_text(TimeAxis::Local, t0 + 0.9999, None);
        assert!(whole.ends_with(":01"), "{whole}");
    }

    /// How many of `names` are drawn as a text of their own in `svg`.
    fn shown(svg: &str, names: &[String]) -> usize {
        names
            .iter()
            .filter(|n| svg.contains(&format!(">\n{n}\n</text>")))
            .count()
    }

    #[test]
    fn many_categories_label_every_kth() {
        let names: Vec<String> = (0..50).map(|i| format!("cpu{i}")).collect();
        let panel = |kind| Panel {
            title: "t".into(),
            y_label: "y".into(),
            kind,
        };
        let chart = Chart {
            title: "many".into(),
            panels: vec![
                panel(PanelKind::StackedBars {
                    categories: names.clone(),
                    stacks: Vec::new(),
                }),
                panel(PanelKind::HeatMap {
                    times: vec![0.0, 1.0],
                    rows: names.clone(),
                    cells: Vec::new(),
                    scale: ("a".into(), "b".into()),
                }),
            ],
        };
        let svg = render(&chart).unwrap();
        // 24 labels along the bars, 30 up the heat map at most: every
        // third (50 / 24 rounded up) and every second category.
        assert_eq!(shown(&svg, &names[..1]), 1);
        let along: Vec<String> = names.iter().step_by(2).cloned().collect();
        assert_eq!(shown(&svg, &along), 25, "{svg}");
        assert!(svg.contains(">\ncpu3\n<") && !svg.contains(">\ncpu1\n<"));
    }

    #[test]
    fn buckets_become_strokes_and_gaps_split_lines() {
        let s = |min, max| {
            Some(Span {
                min,
                max,
                mean: (min + max) / 2.0,
            })
        };
        let points = [
            (0.0, s(1.0, 1.0)),
            (1.0, s(0.0, 5.0)),
            (2.0, None),
            (3.0, s(2.0, 2.0)),
        ];
        assert_eq!(
            segments(&points),
            vec![vec![(0.0, 1.0), (1.0, 0.0), (1.0, 5.0)], vec![(3.0, 2.0)]]
        );
    }
}
