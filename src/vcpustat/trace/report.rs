//! `vcpustat trace report`: the tables, through the core's output writers;
//! the timeline, which can hold millions of rows, is written row by row
//! as the merge yields it, in the shapes those writers give
//! (`TimelineWriter`).
//!
//! Tables, in order: `latency` (per vCPU: dispatch latency and idle wait),
//! `reasons` (per vCPU, kind and reason code), then either `processors` and
//! `shares` (the per-processor summary, the default; `shares` has one row
//! per vCPU and one per partition, with cpu `all`) or `timeline` (every
//! physical record, with `--timeline`). Text prints each table under a
//! title; JSON is one object `{"tool":"vcpustat trace","sections":{NAME:
//! document, ..}}` whose documents are those of the JSON writer; CSV prints
//! one table, chosen with `--table`, since a CSV file has one header.
//! `--table` selects one table in the other formats too.
//!
//! Text rounds times to 0.1 µs (0.001 µs in the timeline); JSON and CSV
//! carry them with 9 decimals, which at the usual 512 MHz time base is every
//! tick exactly (1 tick = 0.001953125 µs).
//!
//! The timeline is written while the records are merged, never held whole.

use std::io::{self, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::analysis::{self, Machine, PhysRecord, ProcessorSummary, VcpuReport};
use super::entry::{dispatch_reason_name, preempt_reason_name};
use super::overlaps::Overlaps;
use super::progress::Progress;
use super::stats::Distribution;
use super::topology::Topology;
use crate::common::escape;
use crate::common::output::{Column, Format, Frame, Row, Schema, Value, rfc3339, writer_for};

/// The formats `trace report` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    /// Titled, aligned tables.
    Text,
    /// One JSON document holding every section.
    Json,
    /// Comma-separated values of one table (--table).
    Csv,
}

/// The tables of a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Table {
    /// Per vCPU: dispatch latency, idle wait, migrations.
    Latency,
    /// Per vCPU, kind and reason code: counts.
    Reasons,
    /// Per physical processor: window, traced share, delays.
    Processors,
    /// Per processor and vCPU (and partition): dispatches and share.
    Shares,
    /// Every physical record in start order (implies --timeline).
    Timeline,
}

impl Table {
    /// The table's name in titles and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Table::Latency => "latency",
            Table::Reasons => "reasons",
            Table::Processors => "processors",
            Table::Shares => "shares",
            Table::Timeline => "timeline",
        }
    }
}

/// What `trace report` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportOptions {
    /// The format.
    pub format: ReportFormat,
    /// The timeline instead of the per-processor summary.
    pub timeline: bool,
    /// One table only.
    pub table: Option<Table>,
}

impl ReportOptions {
    /// The tables to write, in order; an error for a choice that cannot be
    /// honoured (several tables in one CSV, a summary table with
    /// `--timeline`).
    pub fn tables(&self) -> Result<Vec<Table>, String> {
        let all = if self.timeline {
            vec![Table::Latency, Table::Reasons, Table::Timeline]
        } else {
            vec![
                Table::Latency,
                Table::Reasons,
                Table::Processors,
                Table::Shares,
            ]
        };
        match self.table {
            Some(t @ (Table::Processors | Table::Shares)) if self.timeline => Err(format!(
                "--table {}: --timeline replaces the processors and shares tables",
                t.name()
            )),
            Some(t) => Ok(vec![t]),
            None if self.format == ReportFormat::Csv => Err(format!(
                "-o csv writes one table: choose it with --table ({})",
                self.table_choices().join(", ")
            )),
            None => Ok(all),
        }
    }

    /// The values of `--table` these options accept, named and ordered as
    /// `--help` lists them (from [`Table`]'s `ValueEnum`): every table but
    /// those `--timeline` replaces.
    pub fn table_choices(&self) -> Vec<String> {
        use clap::ValueEnum;
        Table::value_variants()
            .iter()
            .filter(|t| !(self.timeline && matches!(t, Table::Processors | Table::Shares)))
            .filter_map(|t| t.to_possible_value())
            .map(|v| v.get_name().to_string())
            .collect()
    }
}

/// Why a report could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A recording could not be read.
    #[error("{0}")]
    Input(String),
    /// Writing the output failed.
    #[error("{0}")]
    Output(#[from] io::Error),
}

/// Decimal places of times and shares in JSON and CSV.
const MACHINE_PRECISION: usize = 9;

/// One titled table.
pub struct Section {
    /// Key in JSON, title in text.
    pub name: &'static str,
    /// Its columns.
    pub schema: Schema,
    /// Its rows.
    pub rows: Vec<Row>,
    /// Remarks.
    pub notes: Vec<String>,
}

/// Converts ticks to microseconds.
pub fn ticks_to_us(ticks: f64, timebase_hz: u64) -> f64 {
    ticks * 1e6 / timebase_hz as f64
}

fn schema(labels: Vec<(&'static str, usize)>, columns: Vec<Column>) -> Schema {
    Schema {
        tool: "vcpustat trace",
        labels,
        columns,
    }
}

fn us(ticks: u64, hz: u64) -> Value {
    Value::Float(ticks_to_us(ticks as f64, hz))
}

fn dist_values(d: Option<&Distribution>, hz: u64) -> Vec<Value> {
    match d {
        Some(d) => vec![
            Value::Int(d.count),
            Value::Float(ticks_to_us(d.mean, hz)),
            us(d.p50, hz),
            us(d.p90, hz),
            us(d.p99, hz),
            us(d.max, hz),
        ],
        None => vec![
            Value::Int(0),
            Value::Missing,
            Value::Missing,
            Value::Missing,
            Value::Missing,
            Value::Missing,
        ],
    }
}

fn dist_columns_prefixed(key: &str, header: &str, what: &str) -> Vec<Column> {
    dist_columns()
        .into_iter()
        .map(|mut c| {
            c.key = format!("{key}{}", c.key).into();
            c.header = format!("{header}{}", c.header).into();
            c.help = format!("{what}: {}", c.help).into();
            c.width = c.width.max(c.header.len());
            c
        })
        .collect()
}

fn dist_columns() -> Vec<Column> {
    vec![
        Column::counter("count", "count", "Number of values.", 7),
        Column::gauge("mean_us", "mean_us", "Mean, microseconds.", 9, 1),
        Column::gauge(
            "p50_us",
            "p50_us",
            "50th percentile (nearest rank), microseconds.",
            9,
            1,
        ),
        Column::gauge(
            "p90_us",
            "p90_us",
            "90th percentile (nearest rank), microseconds.",
            9,
            1,
        ),
        Column::gauge(
            "p99_us",
            "p99_us",
            "99th percentile (nearest rank), microseconds.",
            9,
            1,
        ),
        Column::gauge("max_us", "max_us", "Largest value, microseconds.", 9, 1),
    ]
}

fn opt_int(v: Option<u64>) -> Value {
    v.map_or(Value::Missing, Value::Int)
}

/// The per-vCPU latency and migration table: dispatch latency (ready to
/// enqueue plus enqueue to dispatch), then idle wait (waiting to ready).
pub fn latency_section(reports: &[VcpuReport], hz: u64) -> Section {
    let mut columns = dist_columns_prefixed(
        "",
        "",
        "Dispatch latency (ready_to_enqueue + enqueue_to_dispatch: ready, waiting for a processor)",
    );
    columns.extend(
        dist_columns_prefixed(
            "idle_",
            "i_",
            "Idle wait (waiting_to_ready: not ready, e.g. ceded)",
        )
        .into_iter()
        .skip(1),
    );
    columns.extend([
        Column::counter(
            "processor_changes",
            "procchg",
            "Dispatches on another physical processor than the previous one.",
            7,
        ),
        Column::counter(
            "chip_changes",
            "chipchg",
            "Dispatches on another chip (needs --topology).",
            7,
        ),
        Column::counter(
            "node_changes",
            "nodechg",
            "Dispatches on another node (needs --topology).",
            7,
        ),
        Column::counter(
            "possibly_lost_reads",
            "lost?",
            "Reads that returned a full ring: records may be missing.",
            5,
        ),
    ]);
    let mut notes = Vec::new();
    let rows = reports
        .iter()
        .map(|r| {
            if r.possibly_lost_reads > 0 {
                notes.push(format!(
                    "partition {} cpu {}: {} read(s) returned a full ring; records may have been lost (poll faster)",
                    r.key.partition, r.key.cpu, r.possibly_lost_reads
                ));
            }
            if r.out_of_order > 0 {
                notes.push(format!(
                    "partition {} cpu {}: {} record(s) start before the record before them",
                    r.key.partition, r.key.cpu, r.out_of_order
                ));
            }
            let mut values = dist_values(r.latency.as_ref(), hz);
            values.extend(dist_values(r.idle_wait.as_ref(), hz).into_iter().skip(1));
            values.extend([
                Value::Int(r.processor_changes),
                opt_int(r.chip_changes),
                opt_int(r.node_changes),
                Value::Int(r.possibly_lost_reads),
            ]);
            Row {
                labels: vec![r.key.partition.to_string(), r.key.cpu.to_string()],
                values,
            }
        })
        .collect();
    Section {
        name: "latency",
        schema: schema(vec![("partition", 9), ("cpu", 4)], columns),
        rows,
        notes,
    }
}

/// The per-vCPU reason counts.
pub fn reasons_section(reports: &[VcpuReport]) -> Section {
    let mut rows = Vec::new();
    for r in reports {
        let labels = |kind: &str, code: u8, name: String| {
            vec![
                r.key.partition.to_string(),
                r.key.cpu.to_string(),
                kind.to_string(),
                code.to_string(),
                name,
            ]
        };
        for &(code, n) in &r.dispatch_reasons {
            rows.push(Row {
                labels: labels("dispatch", code, dispatch_reason_name(code)),
                values: vec![Value::Int(n)],
            });
        }
        for &(code, n) in &r.preempt_reasons {
            rows.push(Row {
                labels: labels("preempt", code, preempt_reason_name(code)),
                values: vec![Value::Int(n)],
            });
        }
    }
    Section {
        name: "reasons",
        schema: schema(
            vec![
                ("partition", 9),
                ("cpu", 4),
                ("kind", 8),
                ("code", 4),
                ("reason", 32),
            ],
            vec![Column::counter(
                "count",
                "count",
                "Records with this reason.",
                8,
            )],
        ),
        rows,
        notes: Vec::new(),
    }
}

/// The per-processor summary: window, traced share and delay distribution.
pub fn processors_section(summaries: &[ProcessorSummary], hz: u64) -> Section {
    let mut columns = vec![
        Column::counter(
            "dispatches",
            "disp",
            "Traced dispatches on the processor.",
            7,
        ),
        Column::gauge(
            "window_ms",
            "window_ms",
            "From the first traced start to the end of the last known run, ms.",
            10,
            3,
        ),
        Column::gauge(
            "traced_pct",
            "traced%",
            "Share of the window spent running traced vCPUs.",
            7,
            2,
        ),
    ];
    columns.extend(dist_columns().into_iter().map(|mut c| {
        c.key = format!("delay_{}", c.key).into();
        c.header = format!("d_{}", c.header).into();
        c.width = c.width.max(c.header.len());
        c
    }));
    let mut overlaps = Overlaps::new();
    let rows = summaries
        .iter()
        .map(|s| {
            overlaps.add(s.processor, s.overlaps, s.run_ticks > s.window_ticks);
            let mut values = vec![
                Value::Int(s.dispatches),
                Value::Float(ticks_to_us(s.window_ticks as f64, hz) / 1000.0),
                pct(s.run_ticks, s.window_ticks),
            ];
            values.extend(dist_values(s.delay.as_ref(), hz));
            Row {
                labels: vec![s.processor.to_string()],
                values,
            }
        })
        .collect();
    Section {
        name: "processors",
        schema: schema(vec![("processor", 9)], columns),
        rows,
        notes: overlaps.note().into_iter().collect(),
    }
}

fn pct(part: u64, whole: u64) -> Value {
    if whole == 0 {
        Value::Missing
    } else {
        Value::Float(100.0 * part as f64 / whole as f64)
    }
}

/// The share of each processor's window per partition and vCPU.
pub fn shares_section(summaries: &[ProcessorSummary], hz: u64) -> Section {
    let mut rows = Vec::new();
    let row = |s: &ProcessorSummary, partition: u32, cpu: String, dispatches: u64, run: u64| Row {
        labels: vec![s.processor.to_string(), partition.to_string(), cpu],
        values: vec![
            Value::Int(dispatches),
            Value::Float(ticks_to_us(run as f64, hz) / 1000.0),
            pct(run, s.window_ticks),
        ],
    };
    for s in summaries {
        // Shares come sorted by (partition, cpu): each partition's vCPUs,
        // then the partition's total as cpu "all".
        for group in s
            .shares
            .chunk_by(|a, b| a.vcpu.partition == b.vcpu.partition)
        {
            let partition = group[0].vcpu.partition;
            for sh in group {
                rows.push(row(
                    s,
                    partition,
                    sh.vcpu.cpu.to_string(),
                    sh.dispatches,
                    sh.run_ticks,
                ));
            }
            let dispatches = group.iter().map(|sh| sh.dispatches).sum();
            let run = group
                .iter()
                .fold(0u64, |acc, sh| acc.saturating_add(sh.run_ticks));
            rows.push(row(s, partition, "all".to_string(), dispatches, run));
        }
    }
    Section {
        name: "shares",
        schema: schema(
            vec![("processor", 9), ("partition", 9), ("cpu", 4)],
            vec![
                Column::counter(
                    "dispatches",
                    "disp",
                    "Dispatches of this vCPU (or, for cpu \"all\", partition) on the processor.",
                    7,
                ),
                Column::gauge(
                    "run_ms",
                    "run_ms",
                    "Its virtual processing time there, ms.",
                    10,
                    3,
                ),
                Column::gauge(
                    "share_pct",
                    "share%",
                    "Its share of the processor's window.",
                    7,
                    2,
                ),
            ],
        ),
        rows,
        notes: Vec::new(),
    }
}

/// The timeline's columns (after the `processor` label).
fn timeline_schema() -> Schema {
    schema(
        vec![("processor", 9)],
        vec![
            Column::counter(
                "start_tb",
                "start_tb",
                "Dispatch time, time-base ticks.",
                20,
            ),
            Column::gauge(
                "start_us",
                "start_us",
                "Dispatch time after the first record, microseconds.",
                14,
                3,
            ),
            Column::counter("partition", "partition", "Partition of the vCPU.", 9),
            Column::counter("cpu", "cpu", "vCPU number in the partition.", 4),
            Column::gauge(
                "virtual_us",
                "virtual_us",
                "Virtual processing time: how long the vCPU ran before it next waited, microseconds.",
                11,
                3,
            ),
            Column::gauge(
                "delay_before_us",
                "delay_before_us",
                "Untraced time on the processor before this dispatch: the delay of the \
                 processor's previous record, microseconds.",
                15,
                3,
            ),
        ],
    )
}

/// Writes the timeline while the merge yields it: the shapes of the
/// shared writers (text header and aligned rows, one JSON document with
/// one sample, CSV header and rows), row by row.
struct TimelineWriter<'a> {
    out: &'a mut dyn Write,
    format: ReportFormat,
    schema: Schema,
    time: String,
    origin: Option<u64>,
    rows: u64,
    line: String,
    /// Rows whose delay is negative, per processor.
    overlaps: Overlaps,
}

impl TimelineWriter<'_> {
    fn begin(&mut self) -> io::Result<()> {
        match self.format {
            ReportFormat::Text => {
                let mut line = format!("{:<9} ", self.schema.labels[0].0);
                for c in &self.schema.columns {
                    line.push_str(&format!(" {:>w$}", c.header, w = c.width));
                }
                writeln!(self.out, "{}", line.trim_end())
            }
            ReportFormat::Json => write!(
                self.out,
                "{{\"tool\":\"vcpustat trace\",\"samples\":[\n{{\"timestamp\":\"{}\",\"index\":0,\"rows\":[",
                self.time
            ),
            ReportFormat::Csv => {
                let keys: Vec<&str> = self.schema.columns.iter().map(|c| c.key.as_ref()).collect();
                writeln!(self.out, "timestamp,index,processor,{}", keys.join(","))
            }
        }
    }

    fn row(&mut self, r: &PhysRecord, machine: &Machine, hz: u64) -> io::Result<()> {
        let origin = *self.origin.get_or_insert(r.start);
        let key = machine.vcpus[r.vcpu as usize].key;
        let decimals = if self.format == ReportFormat::Text {
            3
        } else {
            MACHINE_PRECISION
        };
        let us = |t: u64| Micros::new(t, hz, decimals);
        // A vCPU whose time base went back (the latency table notes it)
        // starts before the first row: a negative offset, not 0.
        let before_origin = r.start < origin;
        let start_us = us(r.start.abs_diff(origin));
        let push_start = |l: &mut String| {
            if before_origin {
                l.push('-');
            }
            start_us.push(l);
        };
        let opt = |v: Option<u64>, missing: &'static str| v.map_or(Err(missing), |t| Ok(us(t)));
        if r.overlap_before.is_some() {
            self.overlaps.add(r.processor, 1, false);
        }
        // A negative delay (the overlaps note says what it means).
        let delay = |l: &mut String, missing: &'static str| match r.overlap_before {
            Some(overlap) => {
                l.push('-');
                us(overlap).push(l);
            }
            None => push_opt(l, opt(r.delay_before, missing)),
        };
        let line = &mut self.line;
        line.clear();
        match self.format {
            // The columns of `{:<9}  {:>20} {:>14} {:>9} {:>4} {:>11} {:>15}`,
            // padded by hand: through `fmt`, padding was most of the time
            // of a text timeline of millions of rows.
            ReportFormat::Text => {
                let mark = line.len();
                push_uint(line, r.processor.into(), 1);
                pad_to(line, mark, 9, Align::Left);
                line.push(' ');
                push_field(line, 20, |l| push_uint(l, r.start.into(), 1));
                push_field(line, 14, push_start);
                push_field(line, 9, |l| push_uint(l, key.partition.into(), 1));
                push_field(line, 4, |l| push_uint(l, key.cpu.into(), 1));
                push_field(line, 11, |l| push_opt(l, opt(r.virtual_time, "-")));
                push_field(line, 15, |l| delay(l, "-"));
                line.push('\n');
            }
            ReportFormat::Json => {
                if self.rows > 0 {
                    line.push(',');
                }
                line.push_str("{\"processor\":\"");
                push_uint(line, r.processor.into(), 1);
                line.push_str("\",\"start_tb\":");
                push_uint(line, r.start.into(), 1);
                line.push_str(",\"start_us\":");
                push_start(line);
                // Labels are strings, as in the other sections.
                line.push_str(",\"partition\":\"");
                push_uint(line, key.partition.into(), 1);
                line.push_str("\",\"cpu\":\"");
                push_uint(line, key.cpu.into(), 1);
                line.push_str("\",\"virtual_us\":");
                push_opt(line, opt(r.virtual_time, "null"));
                line.push_str(",\"delay_before_us\":");
                delay(line, "null");
                line.push('}');
            }
            ReportFormat::Csv => {
                line.push_str(&self.time);
                line.push_str(",0,");
                push_uint(line, r.processor.into(), 1);
                line.push(',');
                push_uint(line, r.start.into(), 1);
                line.push(',');
                push_start(line);
                line.push(',');
                push_uint(line, key.partition.into(), 1);
                line.push(',');
                push_uint(line, key.cpu.into(), 1);
                line.push(',');
                push_opt(line, opt(r.virtual_time, ""));
                line.push(',');
                delay(line, "");
                line.push('\n');
            }
        }
        self.rows += 1;
        self.out.write_all(line.as_bytes())
    }

    fn end(&mut self) -> io::Result<()> {
        let note = self.overlaps.note();
        match self.format {
            ReportFormat::Text => {
                if let Some(note) = note {
                    writeln!(self.out, "note: {}", escape::text(&note))?;
                }
                writeln!(self.out)
            }
            ReportFormat::Json => {
                let mut notes = String::new();
                if let Some(note) = note {
                    notes.push('"');
                    escape::push_json(&mut notes, &note);
                    notes.push('"');
                }
                writeln!(self.out, "],\"notes\":[{notes}]}}\n]}}")
            }
            // A table has no place for notes: standard error, as the
            // shared CSV writer does.
            ReportFormat::Csv => {
                if let Some(note) = note {
                    crate::common::cli::tell(self.schema.tool, format_args!("note: {note}"));
                }
                Ok(())
            }
        }
    }
}

/// Time-base ticks as microseconds with a fixed number of decimals,
/// computed in integers: exact (then rounded half up to the last decimal),
/// and much cheaper than formatting a float for each of millions of rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Micros {
    whole: u128,
    fraction: u128,
    decimals: usize,
}

impl Micros {
    fn new(ticks: u64, hz: u64, decimals: usize) -> Micros {
        let unit = 10u64.pow(decimals as u32);
        // ticks * 10^6 / hz µs, in units of 10^-decimals µs. When the time
        // base divides 10^(6 + decimals) (512 MHz does for 9 decimals) it is
        // one exact multiplication, in 64 bits while it fits.
        let per_tick = 1_000_000 * unit;
        if per_tick.is_multiple_of(hz)
            && let Some(scaled) = ticks.checked_mul(per_tick / hz)
        {
            return Micros {
                whole: u128::from(scaled / unit),
                fraction: u128::from(scaled % unit),
                decimals,
            };
        }
        let (unit, hz) = (u128::from(unit), u128::from(hz));
        // Rounded half up.
        let scaled = (u128::from(ticks) * u128::from(per_tick) * 2 + hz) / (2 * hz);
        Micros {
            whole: scaled / unit,
            fraction: scaled % unit,
            decimals,
        }
    }

    /// Appends the number to `line`, without padding.
    fn push(&self, line: &mut String) {
        push_uint(line, self.whole, 1);
        line.push('.');
        push_uint(line, self.fraction, self.decimals);
    }
}

/// Appends `v` in decimal with at least `digits` digits (zero-padded),
/// without the formatting machinery (millions of timeline rows).
fn push_uint(line: &mut String, v: u128, digits: usize) {
    let mut buf = [0u8; 40];
    let mut start = buf.len();
    // 64-bit divisions while the value fits (128-bit ones are library calls).
    let (mut high, mut low) = match u64::try_from(v) {
        Ok(small) => (0u128, small),
        Err(_) => (
            v / 10_000_000_000_000_000_000,
            (v % 10_000_000_000_000_000_000) as u64,
        ),
    };
    loop {
        start -= 1;
        buf[start] = b'0' + (low % 10) as u8;
        low /= 10;
        let written = buf.len() - start;
        if high > 0 && written.is_multiple_of(19) {
            low = (high % 10_000_000_000_000_000_000) as u64;
            high /= 10_000_000_000_000_000_000;
            continue;
        }
        if low == 0 && high == 0 && written >= digits {
            break;
        }
    }
    line.push_str(std::str::from_utf8(&buf[start..]).expect("ASCII digits"));
}

impl std::fmt::Display for Micros {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut text = String::with_capacity(48);
        self.push(&mut text);
        f.pad(&text)
    }
}

/// Appends a time, or the text that stands for an unknown one.
fn push_opt(line: &mut String, value: Result<Micros, &'static str>) {
    match value {
        Ok(us) => us.push(line),
        Err(missing) => line.push_str(missing),
    }
}

/// Where the text of a padded field goes.
#[derive(Clone, Copy)]
enum Align {
    Left,
    Right,
}

/// Pads what was pushed onto `line` since `mark` to `width` characters
/// (ASCII), spaces after it or before it; longer text is left whole, as
/// `format!`'s width does.
fn pad_to(line: &mut String, mark: usize, width: usize, align: Align) {
    const SPACES: &str = "                                        ";
    let missing = width.saturating_sub(line.len() - mark);
    let spaces = &SPACES[..missing.min(SPACES.len())];
    match align {
        Align::Left => line.push_str(spaces),
        Align::Right => line.insert_str(mark, spaces),
    }
}

/// A space, then `push`'s text right-aligned in `width` characters.
fn push_field(line: &mut String, width: usize, push: impl FnOnce(&mut String)) {
    line.push(' ');
    let mark = line.len();
    push(line);
    pad_to(line, mark, width, Align::Right);
}

/// Gives gauge columns the precision of the machine formats.
fn for_format(mut section: Section, format: ReportFormat) -> Section {
    if format != ReportFormat::Text {
        for c in &mut section.schema.columns {
            if c.precision > 0 {
                c.precision = MACHINE_PRECISION;
            }
        }
    }
    section
}

/// Writes the report of `machine`: the tables `options` selects, in
/// `options.format`; `notes` (e.g. cut recordings) go with the latency
/// table; `start_unix_ns` stamps the documents; `progress` shows how far
/// the passes over the records are.
pub fn write_report(
    out: &mut dyn Write,
    machine: &Machine,
    topology: &Topology,
    options: &ReportOptions,
    start_unix_ns: u64,
    notes: &[String],
    progress: &mut Progress,
) -> Result<(), ReportError> {
    let tables = options.tables().map_err(ReportError::Input)?;
    let hz = machine.timebase_hz;
    let format = options.format;
    let time = UNIX_EPOCH + Duration::from_nanos(start_unix_ns);
    let total = machine.entries().max(1);
    let reports = if tables
        .iter()
        .any(|t| matches!(t, Table::Latency | Table::Reasons))
    {
        Some(
            analysis::vcpu_reports(machine, topology, &mut |done| {
                progress.show(|| progress_line("per-vCPU pass", done, total));
            })
            .map_err(ReportError::Input)?,
        )
    } else {
        None
    };
    let summaries = if tables
        .iter()
        .any(|t| matches!(t, Table::Processors | Table::Shares))
    {
        Some(
            analysis::processor_summaries(machine, &mut |done| {
                progress.show(|| progress_line("physical pass", done, total));
            })
            .map_err(ReportError::Input)?,
        )
    } else {
        None
    };
    if format == ReportFormat::Json {
        write!(out, "{{\"tool\":\"vcpustat trace\",\"sections\":{{")?;
    }
    for (i, table) in tables.iter().enumerate() {
        match format {
            ReportFormat::Text => writeln!(out, "== {} ==", table.name())?,
            ReportFormat::Json => {
                write!(out, "{}\"{}\":", if i > 0 { "," } else { "" }, table.name())?
            }
            ReportFormat::Csv => {}
        }
        let section = match table {
            Table::Latency => {
                let mut s = latency_section(reports.as_deref().unwrap_or_default(), hz);
                s.notes.splice(0..0, notes.iter().cloned());
                s
            }
            Table::Reasons => reasons_section(reports.as_deref().unwrap_or_default()),
            Table::Processors => processors_section(summaries.as_deref().unwrap_or_default(), hz),
            Table::Shares => shares_section(summaries.as_deref().unwrap_or_default(), hz),
            Table::Timeline => {
                let mut w = TimelineWriter {
                    out: &mut *out,
                    format,
                    schema: timeline_schema(),
                    time: rfc3339(time),
                    origin: None,
                    rows: 0,
                    line: String::new(),
                    overlaps: Overlaps::new(),
                };
                w.begin()?;
                let mut failed = None;
                let merged = analysis::physical(
                    machine,
                    &mut |r| {
                        w.row(r, machine, hz).map_err(|e| {
                            let text = e.to_string();
                            failed = Some(e);
                            text
                        })
                    },
                    &mut |done| progress.show(|| progress_line("timeline", done, total)),
                );
                if let Some(e) = failed {
                    return Err(ReportError::Output(e));
                }
                merged.map_err(ReportError::Input)?;
                w.end()?;
                continue;
            }
        };
        write_one(out, &for_format(section, format), format, time)?;
    }
    progress.clear();
    if format == ReportFormat::Json {
        writeln!(out, "}}}}")?;
    }
    out.flush()?;
    Ok(())
}

fn progress_line(pass: &str, done: u64, total: u64) -> String {
    format!(
        "{pass}: {:.1} of {:.1} M records ({}%)",
        done as f64 / 1e6,
        total as f64 / 1e6,
        done * 100 / total
    )
}

fn write_one(
    out: &mut dyn Write,
    s: &Section,
    format: ReportFormat,
    time: SystemTime,
) -> io::Result<()> {
    let core_format = match format {
        ReportFormat::Text => Format::Text,
        ReportFormat::Json => Format::Json,
        ReportFormat::Csv => Format::Csv,
    };
    let mut writer = writer_for(core_format, s.schema.clone(), ",");
    writer.begin(out)?;
    writer.frame(
        out,
        &Frame {
            time,
            index: 0,
            rows: &s.rows,
            notes: &s.notes,
        },
    )?;
    writer.end(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_without_table_lists_every_table_the_option_accepts() {
        let options = |timeline| ReportOptions {
            format: ReportFormat::Csv,
            timeline,
            table: None,
        };
        assert_eq!(
            options(false).tables().unwrap_err(),
            "-o csv writes one table: choose it with --table \
             (latency, reasons, processors, shares, timeline)"
        );
        // --timeline replaces the processors and shares tables.
        assert_eq!(
            options(true).tables().unwrap_err(),
            "-o csv writes one table: choose it with --table (latency, reasons, timeline)"
        );
        // Every name listed is accepted by --table, and names the table
        // in titles and JSON.
        for name in options(false).table_choices() {
            let table = <Table as clap::ValueEnum>::from_str(&name, false).unwrap();
            assert_eq!(table.name(), name);
            let chosen = ReportOptions {
                table: Some(table),
                ..options(false)
            };
            assert_eq!(chosen.tables().unwrap(), vec![table]);
        }
    }

    #[test]
    fn micros_are_exact_fixed_point() {
        assert_eq!(Micros::new(1, 512_000_000, 9).to_string(), "0.001953125");
        assert_eq!(Micros::new(1, 512_000_000, 3).to_string(), "0.002");
        assert_eq!(Micros::new(512, 512_000_000, 3).to_string(), "1.000");
        assert_eq!(Micros::new(0, 512_000_000, 9).to_string(), "0.000000000");
        // 1/3 µs at 3 MHz, rounded to the last decimal.
        assert_eq!(Micros::new(1, 3_000_000, 9).to_string(), "0.333333333");
        assert_eq!(Micros::new(2, 3_000_000, 9).to_string(), "0.666666667");
        assert_eq!(
            Micros::new(u64::MAX, 1, 9).to_string(),
            format!("{}000000.000000000", u64::MAX)
        );
        assert_eq!(
            format!("{:>8}", Micros::new(512, 512_000_000, 3)),
            "   1.000"
        );
        // Hand padding is format!'s width: right, left, and never cut.
        let mut line = String::new();
        push_field(&mut line, 4, |l| push_opt(l, Err("-")));
        assert_eq!(line, format!(" {:>4}", "-"));
        push_field(&mut line, 3, |l| push_uint(l, 123_456, 1));
        assert_eq!(line, format!(" {:>4} {:>3}", "-", 123_456));
        let mut line = String::from("cpu");
        pad_to(&mut line, 0, 9, Align::Left);
        assert_eq!(line, format!("{:<9}", "cpu"));
        let mut line = String::new();
        Micros::new(1, 512_000_000, 9).push(&mut line);
        push_uint(&mut line, 0, 1);
        push_uint(&mut line, 7, 3);
        assert_eq!(line, "0.0019531250007");
        for v in [
            0u128,
            9,
            10,
            u128::from(u64::MAX),
            u128::from(u64::MAX) + 1,
            10u128.pow(19),
            10u128.pow(38),
            u128::MAX,
        ] {
            line.clear();
            push_uint(&mut line, v, 1);
            assert_eq!(line, v.to_string());
        }
    }
}
