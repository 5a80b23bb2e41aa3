//! What cxlstat prints: the PMU and event listings, dry runs, and counts
//! (text tables written without allocating, or frames for the core writers).

use std::io::{self, Write};
use std::time::{Duration, SystemTime};

use comfy_table::{Table, presets};

use crate::common::cli::tell;
use crate::common::escape;
use crate::common::expo::{Exposition, Publisher};
use crate::common::osname;
use crate::common::output::{Column, Frame, FrameWriter, Row, Schema, Value};

use super::catalogue::{self, CXL_VENDOR_ID};
use super::counting::{Refused, describe_attr};
use super::expose::expose;
use super::format::{ConfigWord, EventAttr, Format};
use super::resolve::Plan;
use super::stats::{Measurement, Reading, measure, sum, times};
use super::sysfs::{EVENT_SOURCE_DIR, Pmu, PmuEvent};

fn table(header: Vec<&str>) -> Table {
    let mut t = Table::new();
    t.load_style(presets::ASCII_MARKDOWN);
    t.set_header(header);
    t
}

/// A name from sysfs as a table cell shows it: control characters
/// escaped, and `|`, which would end the cell (a PMU named `a | 7 | 3`
/// would forge columns), written `\x7c` as `-x` writes its separator.
fn shown(name: &str) -> String {
    escape::text(name).replace('|', "\\x7c")
}

fn or_dash(value: Option<String>) -> String {
    value.map_or_else(|| "-".to_string(), |v| shown(&v))
}

/// `--list`: one line per CXL PMU.
pub fn list_pmus(pmus: &[Pmu], out: &mut dyn Write) -> io::Result<()> {
    let mut t = table(vec![
        "PMU",
        "type",
        "CPU",
        "memdev",
        "PCI address",
        "NUMA",
        "serial",
        "HDM filter",
        "events",
    ]);
    for pmu in pmus {
        let dev = pmu.memdev.clone().unwrap_or_default();
        t.add_row(vec![
            shown(&pmu.name),
            pmu.perf_type.to_string(),
            pmu.cpu.to_string(),
            or_dash(dev.name),
            or_dash(dev.pci_address),
            or_dash(dev.numa_node.map(|n| n.to_string())),
            or_dash(dev.serial),
            if pmu.has_hdm_filter() { "yes" } else { "no" }.to_string(),
            pmu.events.len().to_string(),
        ]);
    }
    writeln!(out, "{t}")
}

/// The vid, gid and mask an attr holds, read through the PMU's format.
fn decode(format: &Format, attr: &EventAttr) -> Option<(u64, u64, u64)> {
    let get = |name: &str| format.field(name).map(|f| f.extract(attr));
    Some((get("vid")?, get("gid")?, get("mask")?))
}

/// The name of the group an event belongs to.
fn group_of(vid: u64, gid: u64) -> String {
    match catalogue::group(gid as u16).filter(|_| vid == CXL_VENDOR_ID as u64 && gid <= 0xffff) {
        Some(g) => g.name.to_string(),
        None => format!("vendor {vid:#06x}"),
    }
}

/// The attr an event's `events/` file gives, with each format field whose
/// value is too wide for it and that value, as read. Counting the event is
/// refused for such a value, so each one is warned about on standard error.
fn event_attr<'a>(pmu: &'a Pmu, event: &PmuEvent) -> (EventAttr, Vec<(&'a str, u64)>) {
    let mut attr = EventAttr::default();
    let mut too_wide = Vec::new();
    // Whole words first, then the fields over them, as counting sets them.
    for words_pass in [true, false] {
        for term in &event.terms {
            let value = term.value.unwrap_or(1);
            match (
                ConfigWord::from_name(&term.name),
                pmu.format.field(&term.name),
            ) {
                (Some(word), _) if words_pass => attr.set_word(word, value),
                (None, Some(field)) if !words_pass => {
                    if let Err(e) = field.insert(&mut attr, value) {
                        tell(
                            "cxlstat",
                            format_args!(
                                "warning: {EVENT_SOURCE_DIR}/{}/events/{}: {e}; \
                                 counting the event is refused",
                                pmu.name, event.name
                            ),
                        );
                        too_wide.push((field.name.as_str(), value));
                    }
                }
                _ => {}
            }
        }
    }
    (attr, too_wide)
}

/// A listed field value, marked when it is too wide for its field.
fn cell(value: String, too_wide: bool) -> String {
    if too_wide {
        format!("{value} (too wide)")
    } else {
        value
    }
}

/// `--list-events`: the events of each PMU, grouped by CXL event group.
pub fn list_events(pmus: &[&Pmu], out: &mut dyn Write) -> io::Result<()> {
    for (i, pmu) in pmus.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        writeln!(
            out,
            "{} ({} events):",
            escape::text(&pmu.name),
            pmu.events.len()
        )?;
        let mut rows: Vec<(u64, u64, u64, &str, [bool; 3])> = Vec::new();
        for event in &pmu.events {
            let (attr, too_wide) = event_attr(pmu, event);
            let (mut vid, mut gid, mut mask) =
                decode(&pmu.format, &attr).unwrap_or((0, 0, attr.words[0]));
            let mut wide = [false; 3];
            for (field, value) in too_wide {
                match field {
                    "vid" => (vid, wide[0]) = (value, true),
                    "gid" => (gid, wide[1]) = (value, true),
                    "mask" => (mask, wide[2]) = (value, true),
                    _ => {}
                }
            }
            rows.push((vid, gid, mask, &event.name, wide));
        }
        rows.sort();
        let mut t = table(vec!["group", "event", "vid", "gid", "mask", "description"]);
        let mut legend: Vec<String> = Vec::new();
        let mut last_group = None;
        for (vid, gid, mask, name, wide) in rows {
            let group = if last_group == Some((vid, gid)) {
                String::new()
            } else {
                if let Some(g) =
                    catalogue::group(gid as u16).filter(|_| vid == CXL_VENDOR_ID as u64)
                {
                    legend.push(format!(
                        "  {:<12} gid {:#06x}: {}",
                        g.name, g.gid, g.description
                    ));
                }
                group_of(vid, gid)
            };
            last_group = Some((vid, gid));
            let description = catalogue::event(name)
                .filter(|e| e.gid as u64 == gid && e.mask as u64 == mask)
                .map(|e| e.description)
                .unwrap_or("-");
            t.add_row(vec![
                group,
                shown(name),
                cell(format!("{vid:#06x}"), wide[0]),
                cell(format!("{gid:#06x}"), wide[1]),
                cell(format!("{mask:#010x}"), wide[2]),
                description.to_string(),
            ]);
        }
        writeln!(out, "{t}")?;
        if !legend.is_empty() {
            writeln!(out, "Groups:\n{}", legend.join("\n"))?;
        }
    }
    Ok(())
}

/// A config word as perf prints it (`%#llx`: `0` for zero).
fn hex(value: u64) -> String {
    if value == 0 {
        "0".to_string()
    } else {
        format!("{value:#x}")
    }
}

/// `--dry-run`: every event's attr, as `perf stat -vv` shows it, and its CPU.
pub fn dry_run(plan: &Plan, pmus: &[Pmu], out: &mut dyn Write) -> io::Result<()> {
    const RULE: &str = "------------------------------------------------------------";
    for unit in &plan.units {
        let pmu = &pmus[unit.pmu];
        for (i, event) in unit.events.iter().enumerate() {
            let member = unit.grouped && i > 0;
            writeln!(
                out,
                "{}  ({})",
                escape::text(&event.perf_name(&pmu.name)),
                describe_attr(pmu, &event.attr)
            )?;
            writeln!(out, "{RULE}\nperf_event_attr:")?;
            writeln!(out, "  {:<32} {}", "type", event.attr.perf_type)?;
            for word in [ConfigWord::Config, ConfigWord::Config1, ConfigWord::Config2] {
                writeln!(out, "  {:<32} {}", word.name(), hex(event.attr.word(word)))?;
            }
            let config3 = event.attr.word(ConfigWord::Config3);
            if config3 != 0 {
                writeln!(out, "  {:<32} {}", "config3", hex(config3))?;
            }
            let read_format = if unit.grouped && !member {
                "TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING|ID|GROUP"
            } else {
                "TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING"
            };
            writeln!(out, "  {:<32} {read_format}", "read_format")?;
            if !member {
                writeln!(out, "  {:<32} 1", "disabled")?;
            }
            writeln!(out, "{RULE}")?;
            let group = if member {
                format!(
                    "leader {}",
                    escape::text(&unit.events[0].perf_name(&pmu.name))
                )
            } else {
                "-1".to_string()
            };
            writeln!(
                out,
                "sys_perf_event_open: pid -1  cpu {}  group_fd {group}  flags 0x8\n",
                pmu.cpu
            )?;
        }
    }
    Ok(())
}

/// One output row of a count: a PMU (or `all`) and an event, and the
/// reading slots it sums.
struct RowSpec {
    pmu: String,
    event: String,
    /// The event as perf stat names it in its `-x` lines (see
    /// [`CountView::new`]).
    perf_name: String,
    /// The specification the row counts.
    spec: usize,
    slots: Vec<usize>,
    /// Whether the kernel refused this event itself on a PMU (not only
    /// another member of its group).
    refused_itself: bool,
}

impl RowSpec {
    /// What stands for the count when there is none: `<not supported>`
    /// when the kernel refused every reading of the row and the event
    /// itself on some PMU, else `<not counted>` (a reading that did not
    /// run, or whose group the kernel refused for another member).
    fn missing(&self) -> &'static str {
        if self.slots.is_empty() && self.refused_itself {
            "<not supported>"
        } else {
            "<not counted>"
        }
    }
}

/// One report's inputs: two consecutive samples and when they were taken.
#[derive(Debug, Clone, Copy)]
pub struct Span<'a> {
    /// Readings of the previous sample.
    pub previous: &'a [Reading],
    /// Readings of this sample.
    pub current: &'a [Reading],
    /// Time between the two samples (for rates).
    pub elapsed: Duration,
    /// Time since the run started (the time column).
    pub since_start: Duration,
    /// Wall-clock time of this sample.
    pub time: SystemTime,
    /// Sample number.
    pub index: u64,
    /// Remarks about this sample.
    pub notes: &'a [String],
    /// Per reading, whether its PMU went away: it has no Prometheus series.
    pub gone: &'a [bool],
}

/// How counts are shown.
pub enum CountOutput {
    /// Aligned text; `intervals` adds the time column.
    Text {
        /// Whether rows carry the interval's time.
        intervals: bool,
    },
    /// A core writer (JSON, CSV...).
    Frames(Box<dyn FrameWriter>),
    /// Prometheus expositions of the cumulative readings, one per report.
    Expo(Publisher),
    /// `perf stat -x` lines.
    PerfCsv {
        /// The field separator.
        separator: String,
        /// Whether lines start with the interval's time.
        intervals: bool,
    },
}

/// The running percentage as `perf stat -x` prints it: 100 when the event
/// ran all the time it was enabled, else `100 * run / ena` in integer
/// arithmetic (so 33.3% prints as 33.00).
fn perf_running_percent(running: u64, enabled: u64) -> u64 {
    if running == enabled {
        return 100;
    }
    (100 * running as u128)
        .checked_div(enabled as u128)
        .map_or(100, |p| p.min(u64::MAX as u128) as u64)
}

/// One `perf stat -x SEP` line: `[TIME SEP] COUNT SEP UNIT SEP EVENT SEP
/// RUN_NS SEP RUNNING% SEP SEP`, with `missing` (`<not counted>`, `<not
/// supported>`) for an event without a count. CXL events have no unit, and
/// the two metric fields stay empty as perf leaves them: its `/sec` rate
/// needs a clock event beside (stat-shadow.c's `STAT_NSECS`), which no CXL
/// PMU has.
fn write_perf_csv_line(
    out: &mut dyn Write,
    sep: &[u8],
    time: Option<Duration>,
    event: &[u8],
    (count, missing): (Option<u64>, &str),
    (running, enabled): (u64, u64),
) -> io::Result<()> {
    if let Some(t) = time {
        write!(out, "{:6}.{:09}", t.as_secs(), t.subsec_nanos())?;
        out.write_all(sep)?;
    }
    match count {
        Some(c) => write!(out, "{c}")?,
        None => write!(out, "{missing}")?,
    }
    let percent = perf_running_percent(running, enabled);
    out.write_all(sep)?;
    out.write_all(sep)?;
    out.write_all(event)?;
    out.write_all(sep)?;
    write!(out, "{running}")?;
    out.write_all(sep)?;
    write!(out, "{percent}.00")?;
    out.write_all(sep)?;
    out.write_all(sep)?;
    out.write_all(b"\n")
}

/// `name` with each occurrence of the `-x` separator shown as `\xNN`
/// escapes of its bytes, as control characters are shown: perf writes a
/// name as it is, but a PMU or event name holding the separator would then
/// add fields to the line.
/// Bytes are compared: a separator given as a byte that is not UTF-8 may
/// be the second byte of a character in a name.
fn separator_escaped<'a>(name: &'a str, sep: &[u8]) -> std::borrow::Cow<'a, [u8]> {
    let bytes = name.as_bytes();
    if sep.is_empty() || !bytes.windows(sep.len()).any(|w| w == sep) {
        return std::borrow::Cow::Borrowed(bytes);
    }
    let escaped: Vec<u8> = sep
        .iter()
        .flat_map(|b| format!("\\x{b:02x}").into_bytes())
        .collect();
    let mut out = Vec::with_capacity(bytes.len() + escaped.len());
    let mut rest = bytes;
    while !rest.is_empty() {
        if rest.starts_with(sep) {
            out.extend_from_slice(&escaped);
            rest = &rest[sep.len()..];
        } else {
            out.push(rest[0]);
            rest = &rest[1..];
        }
    }
    std::borrow::Cow::Owned(out)
}

/// (PMU, event, reading) of every slot of `rows` whose PMU is not `gone`.
fn series<'a>(
    rows: &'a [RowSpec],
    current: &[Reading],
    gone: &[bool],
) -> Vec<(&'a str, &'a str, Reading)> {
    rows.iter()
        .flat_map(|r| {
            let live = r.slots.iter().filter(|&&s| !gone[s]);
            live.map(|&s| (&*r.pmu, &*r.event, current[s]))
        })
        .collect()
}

/// Turns readings into rows, per PMU and event or summed over PMUs.
pub struct CountView {
    rows: Vec<RowSpec>,
    frame_rows: Vec<Row>,
    output: CountOutput,
    pmu_width: usize,
    event_width: usize,
    /// [`CountView::begin`] wrote the document's start.
    begun: bool,
}

/// The columns of a count, for the core writers.
pub fn schema() -> Schema {
    Schema {
        tool: "cxlstat",
        labels: vec![("pmu", 16), ("event", 24)],
        columns: vec![
            Column::gauge(
                "count",
                "counts",
                "Events counted in the interval, scaled for multiplexing.",
                14,
                0,
            ),
            Column::gauge("rate_per_second", "rate/s", "Events per second.", 14, 2),
            Column::ratio(
                "running_ratio",
                "running%",
                "Share of the interval the event was on a counter.",
                8,
            ),
        ],
    }
}

impl CountView {
    /// Rows for `plan`: one per PMU and event, or one per specification
    /// with `aggregate`, summed over the PMUs it runs on (`all`; a
    /// specification that names its PMU keeps the name as written).
    ///
    /// Events are named in `-x` lines as perf stat names them: without
    /// `aggregate` as `perf stat --no-merge` does (`clock_ticks
    /// [cxl_pmu_mem0.0]`, or `cxl_pmu_mem0.0/clock_ticks/` when the PMU was
    /// named), with it as perf's default merge does (`clock_ticks`).
    pub fn new(plan: &Plan, pmus: &[Pmu], aggregate: bool, output: CountOutput) -> CountView {
        let mut rows: Vec<RowSpec> = Vec::new();
        for (slot, event) in plan.events().enumerate() {
            let pmu = &pmus[event.pmu].name;
            if !aggregate {
                rows.push(RowSpec {
                    pmu: pmu.clone(),
                    event: event.label.clone(),
                    perf_name: event.unmerged_name(pmu),
                    spec: event.spec,
                    slots: vec![slot],
                    refused_itself: false,
                });
            } else if let Some(row) = rows.iter_mut().find(|r| r.spec == event.spec) {
                row.slots.push(slot);
            } else {
                // A PMU as written: perf's merged name of an event on every
                // PMU numbered after it (`cxl_pmu_mem0./clock_ticks/`).
                let written = plan.spec_pmus.get(event.spec).cloned().flatten();
                let (pmu, perf_name) = if let Some(pmu) = written {
                    let perf_name = event.perf_name(&pmu);
                    (pmu, perf_name)
                } else {
                    ("all".to_string(), plan.spec_labels[event.spec].clone())
                };
                rows.push(RowSpec {
                    pmu,
                    event: plan.spec_labels[event.spec].clone(),
                    perf_name,
                    spec: event.spec,
                    slots: vec![slot],
                    refused_itself: false,
                });
            }
        }
        let frame_rows = rows
            .iter()
            .map(|r| Row {
                labels: vec![r.pmu.clone(), r.event.clone()],
                values: vec![Value::Missing, Value::Missing, Value::Missing],
            })
            .collect();
        CountView {
            pmu_width: rows
                .iter()
                .map(|r| escape::text(&r.pmu).len())
                .max()
                .unwrap_or(3)
                .max(3),
            event_width: (rows.iter().map(|r| escape::text(&r.event).len()))
                .max()
                .unwrap_or(5)
                .max(5),
            rows,
            frame_rows,
            output,
            begun: false,
        }
    }

    /// Leaves out the readings the kernel refused to open (`refused`, per
    /// reading, from [`super::counting::Counters::refused`]): a row left with none shows as
    /// `<not supported>`, as in perf stat (`<not counted>` when only
    /// another member of its group was refused), and has no Prometheus
    /// series.
    pub fn leave_out(&mut self, refused: &[Refused]) {
        for row in &mut self.rows {
            row.refused_itself |= row.slots.iter().any(|&s| refused[s] == Refused::Event);
            row.slots.retain(|&s| refused[s] == Refused::Not);
        }
    }

    /// Writes what comes before the first report.
    pub fn begin(&mut self, out: &mut dyn Write) -> io::Result<()> {
        self.begun = true;
        match &mut self.output {
            CountOutput::Frames(w) => w.begin(out),
            CountOutput::PerfCsv { .. } | CountOutput::Expo(_) => Ok(()),
            CountOutput::Text { intervals: true } => {
                writeln!(
                    out,
                    "#{:>15} {:<pw$} {:<ew$} {:>16} {:>16} {:>8}",
                    "time",
                    "pmu",
                    "event",
                    "counts",
                    "rate/s",
                    "running",
                    pw = self.pmu_width,
                    ew = self.event_width
                )
            }
            CountOutput::Text { intervals: false } => writeln!(
                out,
                "\n Performance counter stats for 'system wide' on CXL PMUs:\n"
            ),
        }
    }

    fn measurement(row: &RowSpec, previous: &[Reading], current: &[Reading]) -> Measurement {
        match row.slots.as_slice() {
            [one] => measure(previous[*one], current[*one]),
            many => sum(many.iter().map(|&s| (previous[s], current[s]))),
        }
    }

    /// Each row's PMU (`all` when aggregated), event and rate per second
    /// over `span` (`None`: not counted).
    pub fn rates<'a>(
        &'a self,
        span: &Span,
    ) -> impl Iterator<Item = (&'a str, &'a str, Option<f64>)> {
        let (previous, current) = (span.previous, span.current);
        self.rows.iter().map(move |row| {
            let m = Self::measurement(row, previous, current);
            (row.pmu.as_str(), row.event.as_str(), m.rate)
        })
    }

    /// Writes one report: the change from `span.previous` to `span.current`.
    pub fn report(&mut self, out: &mut dyn Write, span: &Span) -> io::Result<()> {
        match &mut self.output {
            CountOutput::Expo(publisher) => {
                let mut e = Exposition::new();
                expose(&series(&self.rows, span.current, span.gone), &mut e);
                tell_notes(span.notes);
                publisher.publish(out, e.as_str())
            }
            CountOutput::Frames(writer) => {
                fill_frame_rows(&self.rows, &mut self.frame_rows, span);
                let frame = Frame {
                    time: span.time,
                    index: span.index,
                    rows: &self.frame_rows,
                    notes: span.notes,
                };
                writer.frame(out, &frame)
            }
            CountOutput::PerfCsv {
                separator,
                intervals,
            } => write_perf_csv_report(out, &self.rows, span, separator, *intervals),
            CountOutput::Text { intervals } => {
                let widths = (self.pmu_width, self.event_width);
                write_text_report(out, &self.rows, span, widths, *intervals)
            }
        }
    }

    /// Appends the exposition of the cumulative readings `current`, one
    /// series per PMU and event (made with `aggregate` off), leaving out
    /// the readings of PMUs that are `gone`.
    pub fn expose(&self, current: &[Reading], gone: &[bool], e: &mut Exposition) {
        expose(&series(&self.rows, current, gone), e);
    }

    /// Writes what closes the output (a document only if it was begun).
    pub fn end(&mut self, out: &mut dyn Write) -> io::Result<()> {
        match &mut self.output {
            CountOutput::Frames(w) if self.begun => w.end(out),
            CountOutput::Expo(publisher) => publisher.finish().and_then(|()| out.flush()),
            CountOutput::Frames(_) | CountOutput::Text { .. } | CountOutput::PerfCsv { .. } => {
                out.flush()
            }
        }
    }
}

/// Count, rate per second and share of time running of each row over `span`,
/// into the rows of the core's writers.
fn fill_frame_rows(rows: &[RowSpec], frame_rows: &mut [Row], span: &Span) {
    for (spec, row) in rows.iter().zip(frame_rows.iter_mut()) {
        let m = CountView::measurement(spec, span.previous, span.current);
        row.values[0] = m.count.map_or(Value::Missing, Value::Int);
        row.values[1] = m.rate.map_or(Value::Missing, Value::Float);
        row.values[2] = m.running.map_or(Value::Missing, Value::Float);
    }
}

/// One report as `perf stat -x SEPARATOR` writes it (with `-I`: the
/// time first); the notes go to standard error.
fn write_perf_csv_report(
    out: &mut dyn Write,
    rows: &[RowSpec],
    span: &Span,
    separator: &str,
    intervals: bool,
) -> io::Result<()> {
    let (previous, current) = (span.previous, span.current);
    // The bytes given, where the argument was not UTF-8 ([`osname`]).
    let sep = osname::to_bytes(separator);
    for row in rows {
        let m = CountView::measurement(row, previous, current);
        let (running, enabled) = row.slots.iter().fold((0u64, 0u64), |(r, e), &s| {
            let (run, ena) = times(previous[s], current[s]);
            (r.saturating_add(run), e.saturating_add(ena))
        });
        write_perf_csv_line(
            out,
            &sep,
            intervals.then_some(span.since_start),
            &separator_escaped(&escape::text(&row.perf_name), &sep),
            (m.count, row.missing()),
            (running, enabled),
        )?;
    }
    tell_notes(span.notes);
    out.flush()
}

/// One report as aligned text, the PMU and event columns `widths` wide:
/// with `intervals` a line per row after the time, else perf stat's
/// summary with the time elapsed; the notes go to standard error.
fn write_text_report(
    out: &mut dyn Write,
    rows: &[RowSpec],
    span: &Span,
    (pmu_width, event_width): (usize, usize),
    intervals: bool,
) -> io::Result<()> {
    for row in rows {
        let m = CountView::measurement(row, span.previous, span.current);
        if intervals {
            // perf stat -I's `%6lu.%09lu`.
            let t = span.since_start;
            write!(out, "{:>6}.{:09} ", t.as_secs(), t.subsec_nanos())?;
        } else {
            write!(out, " ")?;
        }
        write!(
            out,
            "{:<pw$} {:<ew$} ",
            escape::text(&row.pmu),
            escape::text(&row.event),
            pw = pmu_width,
            ew = event_width
        )?;
        match (m.count, m.running) {
            (Some(count), Some(running)) => {
                write!(out, "{count:>16} ")?;
                match m.rate {
                    Some(r) => write!(out, "{r:>16.2} ")?,
                    None => write!(out, "{:>16} ", "-")?,
                }
                writeln!(out, "{:>7.2}%", running * 100.0)?;
            }
            _ => writeln!(out, "{:>16} {:>16} {:>8}", row.missing(), "-", "-")?,
        }
    }
    if !intervals {
        let seconds = span.elapsed.as_secs_f64();
        // perf stat's ` %17.9f`.
        writeln!(out, "\n {seconds:>17.9} seconds time elapsed\n")?;
    }
    tell_notes(span.notes);
    out.flush()
}

/// The notes of a report, on standard error.
fn tell_notes(notes: &[String]) {
    for note in notes {
        tell("cxlstat", format_args!("note: {note}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cxlstat::format::Format;
    use crate::cxlstat::resolve::{ResolvedEvent, Unit};

    fn pmu(name: &str) -> Pmu {
        Pmu {
            name: name.to_string(),
            perf_type: 20,
            cpu: 0,
            format: Format::default(),
            events: Vec::new(),
            memdev: None,
        }
    }

    /// A `|` in a name cannot add a cell to the table's row.
    #[test]
    fn a_bar_in_a_name_forges_no_cell() {
        let mut out = Vec::new();
        list_pmus(&[pmu("cxl_pmu_mem1.0 | 7 | 3\u{1b}")], &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let row = text.lines().nth(2).unwrap();
        assert!(
            row.starts_with("| cxl_pmu_mem1.0 \\x7c 7 \\x7c 3\\x1b | 20 "),
            "{text}"
        );
        let cells = |line: &str| line.matches('|').count();
        assert_eq!(cells(row), cells(text.lines().next().unwrap()), "{text}");
    }

    /// `-e ddr_act,cxl_pmu_mem0.0/clock_ticks/` on two PMUs.
    fn plan() -> Plan {
        let event = |pmu, spec: usize, label: &str| ResolvedEvent {
            pmu,
            label: label.to_string(),
            named: false,
            qualified: spec == 1,
            spec,
            attr: EventAttr::default(),
        };
        Plan {
            units: vec![
                Unit {
                    pmu: 0,
                    grouped: false,
                    events: vec![event(0, 0, "ddr_act")],
                },
                Unit {
                    pmu: 1,
                    grouped: false,
                    events: vec![event(1, 0, "ddr_act")],
                },
                Unit {
                    pmu: 0,
                    grouped: false,
                    events: vec![event(0, 1, "clock_ticks")],
                },
            ],
            spec_labels: vec!["ddr_act".into(), "clock_ticks".into()],
            spec_pmus: vec![None, Some("cxl_pmu_mem0.0".into())],
        }
    }

    fn render(aggregate: bool) -> String {
        render_as(aggregate, CountOutput::Text { intervals: true })
    }

    fn render_as(aggregate: bool, output: CountOutput) -> String {
        // ddr_act on mem0 ran a quarter of the time; on mem1 all of it;
        // clock_ticks never got a counter. Each enabled the 2 s.
        let current = [
            reading(250, 2 * SECOND, SECOND / 2),
            reading(300, 2 * SECOND, 2 * SECOND),
            reading(0, 2 * SECOND, 0),
        ];
        render_readings(aggregate, output, &current)
    }

    const SECOND: u64 = 1_000_000_000;

    fn reading(count: u64, enabled: u64, running: u64) -> Reading {
        Reading {
            count,
            enabled,
            running,
        }
    }

    /// One report of two seconds ending at `current`, from readings of 0.
    fn render_readings(aggregate: bool, output: CountOutput, current: &[Reading]) -> String {
        let pmus = [pmu("cxl_pmu_mem0.0"), pmu("cxl_pmu_mem1.0")];
        let mut view = CountView::new(&plan(), &pmus, aggregate, output);
        let previous = [reading(0, 0, 0); 3];
        let span = Span {
            previous: &previous,
            current,
            elapsed: Duration::from_secs(2),
            since_start: Duration::from_secs(2),
            time: SystemTime::UNIX_EPOCH,
            index: 1,
            notes: &[],
            gone: &[false; 3],
        };
        let mut out = Vec::new();
        view.report(&mut out, &span).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn text_rows_scale_show_running_share_and_not_counted() {
        let text = render(false);
        let rows: Vec<Vec<&str>> = text
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(
            rows[0],
            [
                "2.000000000",
                "cxl_pmu_mem0.0",
                "ddr_act",
                "1000",
                "500.00",
                "25.00%"
            ]
        );
        assert_eq!(
            rows[1],
            [
                "2.000000000",
                "cxl_pmu_mem1.0",
                "ddr_act",
                "300",
                "150.00",
                "100.00%"
            ]
        );
        assert_eq!(
            rows[2],
            [
                "2.000000000",
                "cxl_pmu_mem0.0",
                "clock_ticks",
                "<not",
                "counted>",
                "-",
                "-"
            ]
        );
    }

    #[test]
    fn a_rate_is_over_the_time_its_counter_was_enabled() {
        // A loaded machine read mem0's counter 0.5 s after the report's
        // time: its 250 events are of 2.5 s, not of the 2 s elapsed.
        let current = [
            reading(250, 5 * SECOND / 2, 5 * SECOND / 2),
            reading(300, 2 * SECOND, 2 * SECOND),
            reading(0, 2 * SECOND, 0),
        ];
        let text = render_readings(false, CountOutput::Text { intervals: true }, &current);
        let rates: Vec<&str> = text
            .lines()
            .take(2)
            .map(|l| l.split_whitespace().nth(4).unwrap())
            .collect();
        assert_eq!(rates, ["100.00", "150.00"]);
        // Summed, each PMU's own rate.
        let text = render_readings(true, CountOutput::Text { intervals: true }, &current);
        assert_eq!(
            text.lines().next().unwrap().split_whitespace().nth(4),
            Some("250.00")
        );
    }

    #[test]
    fn aggregate_sums_scaled_counts_over_pmus() {
        let text = render(true);
        let rows: Vec<Vec<&str>> = text
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(rows.len(), 2);
        assert_eq!(
            rows[0],
            ["2.000000000", "all", "ddr_act", "1300", "650.00", "62.50%"]
        );
        assert_eq!(rows[1][2..4], ["clock_ticks", "<not"]);
    }

    fn perf_csv(separator: &str, intervals: bool) -> CountOutput {
        CountOutput::PerfCsv {
            separator: separator.to_string(),
            intervals,
        }
    }

    #[test]
    fn a_name_holding_the_separator_cannot_add_fields() {
        let escaped = |name, sep| separator_escaped(name, sep).into_owned();
        assert_eq!(
            escaped("clock_ticks [cxl_pmu_mem0.0]", b","),
            b"clock_ticks [cxl_pmu_mem0.0]"
        );
        assert_eq!(escaped("a,999,,forged", b","), b"a\\x2c999\\x2c\\x2cforged");
        assert_eq!(escaped("a::b", b"::"), b"a\\x3a\\x3ab");
        // A separator given as a byte that is not UTF-8, found inside a
        // character of the name (\u{e9} is c3 a9).
        assert_eq!(escaped("m\u{e9}.0", b"\xa9"), b"m\xc3\\xa9.0");
    }

    #[test]
    fn perf_csv_lines_follow_perf_stat_x() {
        // perf stat -x, -I: "%6lu.%09lu" time, count, empty unit, event,
        // run time in ns, integer running percentage as %.2f, then
        // the two metric fields, empty without a clock event. Events are
        // named as perf stat --no-merge names them: EVENT [PMU] when given
        // without their PMU, PMU/EVENT/ when given with it.
        assert_eq!(
            render_as(false, perf_csv(",", true)),
            "     2.000000000,1000,,ddr_act [cxl_pmu_mem0.0],500000000,25.00,,\n\
             \x20    2.000000000,300,,ddr_act [cxl_pmu_mem1.0],2000000000,100.00,,\n\
             \x20    2.000000000,<not counted>,,cxl_pmu_mem0.0/clock_ticks/,0,0.00,,\n"
        );
        // Without intervals there is no time field; any separator.
        assert_eq!(
            render_as(false, perf_csv(";", false)),
            "1000;;ddr_act [cxl_pmu_mem0.0];500000000;25.00;;\n\
             300;;ddr_act [cxl_pmu_mem1.0];2000000000;100.00;;\n\
             <not counted>;;cxl_pmu_mem0.0/clock_ticks/;0;0.00;;\n"
        );
    }

    #[test]
    fn perf_csv_aggregate_sums_times_and_truncates_the_percentage() {
        // Run times add up (0.5 + 2 s of 4 s enabled): 62.5% prints as
        // 62.00, as perf's integer 100 * run / ena does. An event given
        // with its PMU keeps that name, as in perf's merged output.
        assert_eq!(
            render_as(true, perf_csv(",", false)),
            "1300,,ddr_act,2500000000,62.00,,\n\
             <not counted>,,cxl_pmu_mem0.0/clock_ticks/,0,0.00,,\n"
        );
    }

    #[test]
    fn perf_running_percent_is_integer_and_100_when_equal() {
        assert_eq!(perf_running_percent(0, 0), 100);
        assert_eq!(perf_running_percent(7, 7), 100);
        assert_eq!(perf_running_percent(1, 3), 33);
        assert_eq!(perf_running_percent(2, 3), 66);
        assert_eq!(perf_running_percent(0, 5), 0);
        assert_eq!(perf_running_percent(u64::MAX / 2, u64::MAX), 49);
    }
}
