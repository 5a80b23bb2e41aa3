//! The summary tables of `vcpustat trace report`, from the analysis's
//! results: `latency` and `reasons` per vCPU, `processors` and `shares`
//! per physical processor, each a [`Section`] for the core's writers.

use super::analysis::{ProcessorSummary, VcpuReport};
use super::entry::{dispatch_reason_name, preempt_reason_name};
use super::overlaps::Overlaps;
use super::stats::Distribution;
use crate::common::output::{Column, Row, Schema, Value};

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

/// Converts ticks to microseconds: at a time base of whole megahertz (the
/// usual 512) in one division by the ticks per microsecond, exact below
/// 2^53 ticks, so that 9 decimals print every tick exactly (multiplied by
/// 10^6 first, a delay of 20 minutes lost its last digits).
pub fn ticks_to_us(ticks: f64, timebase_hz: u64) -> f64 {
    ticks_in(ticks, timebase_hz, 1_000_000)
}

/// Converts ticks to milliseconds, in one rounding (as [`ticks_to_us`]).
fn ticks_to_ms(ticks: f64, timebase_hz: u64) -> f64 {
    ticks_in(ticks, timebase_hz, 1_000)
}

/// `ticks` in units of which a second holds `per_second`.
fn ticks_in(ticks: f64, timebase_hz: u64, per_second: u64) -> f64 {
    if timebase_hz.is_multiple_of(per_second) {
        ticks / (timebase_hz / per_second) as f64
    } else {
        ticks * per_second as f64 / timebase_hz as f64
    }
}

pub(super) fn schema(labels: Vec<(&'static str, usize)>, columns: Vec<Column>) -> Schema {
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
        Column::ratio(
            "traced_ratio",
            "traced%",
            "Share of the window spent running traced vCPUs.",
            7,
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
                Value::Float(ticks_to_ms(s.window_ticks as f64, hz)),
                ratio(s.run_ticks, s.window_ticks),
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

/// `part / whole`, for a [`Column::ratio`]; missing when `whole` is 0.
fn ratio(part: u64, whole: u64) -> Value {
    if whole == 0 {
        Value::Missing
    } else {
        Value::Float(part as f64 / whole as f64)
    }
}

/// The share of each processor's window per partition and vCPU.
pub fn shares_section(summaries: &[ProcessorSummary], hz: u64) -> Section {
    let mut rows = Vec::new();
    let row = |s: &ProcessorSummary, partition: u32, cpu: String, dispatches: u64, run: u64| Row {
        labels: vec![s.processor.to_string(), partition.to_string(), cpu],
        values: vec![
            Value::Int(dispatches),
            Value::Float(ticks_to_ms(run as f64, hz)),
            ratio(run, s.window_ticks),
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
                Column::ratio(
                    "share_ratio",
                    "share%",
                    "Its share of the processor's window.",
                    7,
                ),
            ],
        ),
        rows,
        notes: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_of_a_megahertz_time_base_are_exact_microseconds() {
        // 600,000,000,001 ticks at 512 MHz: 19 minutes and one tick.
        let us = |ticks: u64, hz: u64| format!("{:.9}", ticks_to_us(ticks as f64, hz));
        assert_eq!(us(600_000_000_001, 512_000_000), "1171875000.001953125");
        assert_eq!(us(1, 512_000_000), "0.001953125");
        assert_eq!(us((1 << 53) - 1, 512_000_000), "17592186044415.998046875");
        // Other time bases: one rounding.
        assert_eq!(us(3, 3), "1000000.000000000");
        assert_eq!(
            format!("{:.9}", ticks_to_ms(600_000_000_001.0, 512_000_000)),
            "1171875.000001953"
        );
    }
}
