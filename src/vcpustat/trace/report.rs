//! `vcpustat trace report`: the tables, through the core's output writers.
//!
//! Sections, in order: `latency` (per vCPU), `reasons` (per vCPU and
//! reason), then either `processors` and `shares` (the per-processor
//! summary, the default; `shares` has one row per vCPU and one per
//! partition, with cpu `all`) or `timeline` (every physical record). Text prints
//! each section under a title; JSON is one object
//! `{"tool":"vcpustat trace","sections":{NAME: document, ..}}` whose
//! documents are those of the JSON writer; CSV prints each section as its
//! own header and rows, sections separated by an empty line.

use std::io::{self, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::analysis::{Machine, ProcessorSummary, ProcessorTimeline, VcpuReport};
use super::entry::{dispatch_reason_name, preempt_reason_name};
use super::stats::Distribution;
use crate::common::output::{Column, Format, Frame, Row, Schema, Value, writer_for};

/// The formats `trace report` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    /// Titled, aligned tables.
    Text,
    /// One JSON document holding every section.
    Json,
    /// Comma-separated sections.
    Csv,
}

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
        metric_prefix: "vcpustat_trace",
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

/// The per-vCPU latency and migration table.
pub fn latency_section(reports: &[VcpuReport], hz: u64) -> Section {
    let mut columns = dist_columns();
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
            let mut values = dist_values(r.latency.as_ref(), hz);
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
        let labels = |kind: &str, name: String| {
            vec![
                r.key.partition.to_string(),
                r.key.cpu.to_string(),
                kind.to_string(),
                name,
            ]
        };
        for &(code, n) in &r.dispatch_reasons {
            rows.push(Row {
                labels: labels("dispatch", dispatch_reason_name(code)),
                values: vec![Value::Int(n)],
            });
        }
        for &(code, n) in &r.preempt_reasons {
            rows.push(Row {
                labels: labels("preempt", preempt_reason_name(code)),
                values: vec![Value::Int(n)],
            });
        }
    }
    Section {
        name: "reasons",
        schema: schema(
            vec![("partition", 9), ("cpu", 4), ("kind", 8), ("reason", 32)],
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
    let rows = summaries
        .iter()
        .map(|s| {
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
        notes: Vec::new(),
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

/// Every physical record, per processor in time order.
pub fn timeline_section(machine: &Machine, timeline: &[ProcessorTimeline], hz: u64) -> Section {
    let origin = timeline
        .iter()
        .filter_map(|p| p.records.first().map(|r| r.start))
        .min()
        .unwrap_or(0);
    let rows = timeline
        .iter()
        .flat_map(|p| p.records.iter().enumerate().map(move |(i, r)| (p, i, r)))
        .map(|(p, i, r)| Row {
            labels: vec![p.processor.to_string()],
            values: vec![
                Value::Int(r.start),
                Value::Float(ticks_to_us((r.start - origin) as f64, hz)),
                Value::Int(u64::from(machine.vcpus[r.vcpu as usize].key.partition)),
                Value::Int(u64::from(machine.vcpus[r.vcpu as usize].key.cpu)),
                r.virtual_time().map_or(Value::Missing, |t| us(t, hz)),
                p.delay(i).map_or(Value::Missing, |t| us(t, hz)),
            ],
        })
        .collect();
    Section {
        name: "timeline",
        schema: schema(
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
                    "Virtual processing time, microseconds.",
                    11,
                    3,
                ),
                Column::gauge(
                    "delay_us",
                    "delay_us",
                    "Untraced time on the processor after it, microseconds.",
                    11,
                    3,
                ),
            ],
        ),
        rows,
        notes: Vec::new(),
    }
}

/// Builds the sections of a report.
pub fn sections(
    machine: &Machine,
    topology: &super::topology::Topology,
    with_timeline: bool,
) -> Vec<Section> {
    let hz = machine.timebase_hz;
    let reports = super::analysis::vcpu_reports(machine, topology);
    let records = super::analysis::timeline(machine);
    let mut out = vec![latency_section(&reports, hz), reasons_section(&reports)];
    if with_timeline {
        out.push(timeline_section(machine, &records, hz));
    } else {
        let summaries = super::analysis::processor_summaries(machine, &records);
        out.push(processors_section(&summaries, hz));
        out.push(shares_section(&summaries, hz));
    }
    out
}

/// Writes the sections in `format`; `start_unix_ns` stamps the frames.
pub fn write_sections(
    out: &mut dyn Write,
    sections: &[Section],
    format: ReportFormat,
    start_unix_ns: u64,
) -> io::Result<()> {
    let time = UNIX_EPOCH + Duration::from_nanos(start_unix_ns);
    if format == ReportFormat::Json {
        write!(out, "{{\"tool\":\"vcpustat trace\",\"sections\":{{")?;
    }
    for (i, s) in sections.iter().enumerate() {
        match format {
            ReportFormat::Text => writeln!(out, "== {} ==", s.name)?,
            ReportFormat::Json => write!(out, "{}\"{}\":", if i > 0 { "," } else { "" }, s.name)?,
            ReportFormat::Csv if i > 0 => writeln!(out)?,
            ReportFormat::Csv => {}
        }
        let core_format = match format {
            ReportFormat::Text => Format::Text,
            ReportFormat::Json => Format::Json,
            ReportFormat::Csv => Format::Csv,
        };
        write_one(out, s, core_format, time)?;
    }
    if format == ReportFormat::Json {
        writeln!(out, "}}}}")?;
    }
    out.flush()
}

fn write_one(out: &mut dyn Write, s: &Section, format: Format, time: SystemTime) -> io::Result<()> {
    let mut writer = writer_for(format, s.schema.clone(), ",");
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
