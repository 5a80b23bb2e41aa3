//! The machine-readable extensions `-o csv` and `-o ndjson` (`-o prometheus`
//! exports the kernel's cumulative counters instead: [`super::expose`]):
//! the extended statistics of every displayed device and the CPU report, in
//! base units (bytes, seconds, ratios 0–1), through the core's writers.
//! Names follow node_exporter where one exists (`reads_completed`,
//! `read_bytes`); `io_time_milliseconds` keeps the kernel's unit, as its
//! 32-bit count wraps in milliseconds.
//!
//! One table: every row has every column of the reports selected (`-c`,
//! `-d`, both by default). The CPU report is the row whose `device` is empty
//! with the device columns missing; the
//! device rows have the CPU columns missing.

use std::io::{self, Write};

use crate::common::output::{Column, Format, Frame, FrameWriter, Row, Schema, Value, writer_for};

use super::cli::{Options, OutputFormat};
use super::latency::tracker::{DeviceHistograms, OPS};
use super::latency::{LatencyStats, Losses, OP_NAMES, buckets_text};
use super::model::ext_stats;
use super::report::{Banner, Renderer, Sample};

/// The CPU report's columns: shares of CPU time in the interval, 0–1.
fn cpu_columns() -> Vec<Column> {
    let g = |key, header, help| Column::ratio(key, header, help, 8);
    vec![
        g(
            "cpu_user_ratio",
            "%user",
            "Share of CPU time at user level (%user / 100).",
        ),
        g(
            "cpu_nice_ratio",
            "%nice",
            "Share of CPU time at user level with a positive nice value.",
        ),
        g(
            "cpu_system_ratio",
            "%system",
            "Share of CPU time in the kernel.",
        ),
        g(
            "cpu_iowait_ratio",
            "%iowait",
            "Share of CPU time idle with an I/O request outstanding.",
        ),
        g(
            "cpu_steal_ratio",
            "%steal",
            "Share of CPU time stolen by the hypervisor.",
        ),
        g(
            "cpu_idle_ratio",
            "%idle",
            "Share of CPU time idle with no I/O request outstanding.",
        ),
    ]
}

/// The operations `--latency` reports, as the column keys spell them.
const LATENCY_OPS: [&str; 4] = ["read", "write", "discard", "flush"];

/// `--latency`'s columns, after the device columns: per operation p50,
/// p99 and max in seconds, the queue depth p50 and max, then the full
/// histograms as text (`LOW-HIGH:COUNT` buckets, bounds inclusive, in ns;
/// for the depth, depths weighted by ns; not in Prometheus, which has no
/// text values), then what the histograms miss: the samples the kernel
/// lost, the device's completions that never arrived and the completions
/// of no known request (added last: the columns before keep their places).
fn latency_columns(histograms: bool) -> Vec<Column> {
    let mut columns = Vec::new();
    let owned = |key: String, header: String, help: String, precision| {
        let mut c = Column::gauge("", "", "", 12, precision);
        c.key = key.into();
        c.header = header.into();
        c.help = help.into();
        c
    };
    for (op, short) in LATENCY_OPS.iter().zip(OP_NAMES) {
        for q in ["p50", "p99", "max"] {
            columns.push(owned(
                format!("{op}_latency_{q}_seconds"),
                format!("{short}_{q}"),
                format!("{op} latency {q}, issue to completion (block tracepoints)."),
                6,
            ));
        }
    }
    columns.push(Column::gauge(
        "queue_depth_p50",
        "qd_p50",
        "Median of the requests in flight (issued, not completed), weighted by time.",
        6,
        0,
    ));
    columns.push(Column::gauge(
        "queue_depth_max",
        "qd_max",
        "Most requests in flight at once.",
        6,
        0,
    ));
    for (op, short) in LATENCY_OPS.iter().zip(OP_NAMES).filter(|_| histograms) {
        columns.push(owned(
            format!("{op}_latency_histogram_ns"),
            format!("{short}_hist"),
            format!("{op} latency histogram: LOW-HIGH:COUNT buckets in ns."),
            0,
        ));
    }
    if histograms {
        columns.push(owned(
            "queue_depth_histogram_ns".into(),
            "qd_hist".into(),
            "Queue depth histogram: DEPTHS:NANOSECONDS spent at them.".into(),
            0,
        ));
    }
    columns.push(Column::counter(
        "latency_lost_samples",
        "lost",
        "Tracepoint samples the kernel reported dropped in the interval (the histograms of this \
         interval or of the one before are short by as many).",
        8,
    ));
    columns.push(Column::counter(
        "latency_undelivered_completions",
        "undelivered",
        "The device's requests found in the interval to have completed with no completion event \
         reaching iostat-rs (the histograms miss them).",
        8,
    ));
    columns.push(Column::counter(
        "latency_unmatched_completions",
        "unmatched",
        "The device's completions in the interval left untimed: their issue was not seen, or a \
         lost completion at their sector left it unknown whose they were.",
        8,
    ));
    columns
}

/// The values of [`latency_columns`] for one row: the figures of its
/// `stats`, the buckets of its histograms.
fn latency_values(
    measured: Option<(&DeviceHistograms, &LatencyStats)>,
    losses: Losses,
    histograms: bool,
    out: &mut Vec<Value>,
) {
    let Some((h, stats)) = measured else {
        let n = latency_columns(histograms).len();
        out.extend(std::iter::repeat_n(Value::Missing, n));
        return;
    };
    // Withheld figures have no value; an operation without requests has
    // 0, as in the text and -o JSON reports and as its `_await_seconds`
    // column beside it (sysstat's r_await without reads).
    match stats.ops {
        None => out.extend(std::iter::repeat_n(Value::Missing, 3 * OPS)),
        Some(ops) => {
            for op in ops {
                let seconds = op.unwrap_or_default().map(|ms| Value::Float(ms / 1000.0));
                out.extend(seconds);
            }
        }
    }
    match stats.depth {
        Some([p50, max]) => out.extend([Value::Int(p50), Value::Int(max)]),
        None => out.extend([Value::Missing, Value::Missing]),
    }
    for hist in h.latency.iter().chain([&h.depth]).filter(|_| histograms) {
        out.push(Value::Text(buckets_text(hist)));
    }
    out.extend([losses.lost, losses.undelivered, losses.unmatched].map(Value::Int));
}

/// The columns of the reports selected, described once for every machine
/// format: the device columns if `devices` (and `--latency`'s if
/// `latency`, with the histograms if it holds true), then the CPU columns
/// if `cpu`.
pub fn schema(cpu: bool, devices: bool, latency: Option<bool>) -> Schema {
    let mut columns = if devices {
        device_columns()
    } else {
        Vec::new()
    };
    if let Some(histograms) = latency.filter(|_| devices) {
        columns.extend(latency_columns(histograms));
    }
    if cpu {
        columns.extend(cpu_columns());
    }
    Schema {
        tool: "iostat-rs",
        labels: vec![("device", 16)],
        columns,
    }
}

/// The device report's columns.
fn device_columns() -> Vec<Column> {
    let g = Column::gauge;
    let c = Column::counter;
    vec![
        g(
            "reads_completed_per_second",
            "r/s",
            "Reads completed per second.",
            9,
            2,
        ),
        g(
            "writes_completed_per_second",
            "w/s",
            "Writes completed per second.",
            9,
            2,
        ),
        g(
            "discards_completed_per_second",
            "d/s",
            "Discards completed per second.",
            9,
            2,
        ),
        g(
            "flush_requests_per_second",
            "f/s",
            "Flush requests completed per second.",
            9,
            2,
        ),
        g(
            "read_bytes_per_second",
            "rB/s",
            "Bytes read per second.",
            12,
            0,
        ),
        g(
            "written_bytes_per_second",
            "wB/s",
            "Bytes written per second.",
            12,
            0,
        ),
        g(
            "discarded_bytes_per_second",
            "dB/s",
            "Bytes discarded per second.",
            12,
            0,
        ),
        g(
            "reads_merged_per_second",
            "rrqm/s",
            "Read requests merged per second.",
            9,
            2,
        ),
        g(
            "writes_merged_per_second",
            "wrqm/s",
            "Write requests merged per second.",
            9,
            2,
        ),
        g(
            "discards_merged_per_second",
            "drqm/s",
            "Discard requests merged per second.",
            9,
            2,
        ),
        g(
            "read_await_seconds",
            "r_await",
            "Average time of a read, queueing included.",
            9,
            6,
        ),
        g(
            "write_await_seconds",
            "w_await",
            "Average time of a write, queueing included.",
            9,
            6,
        ),
        g(
            "discard_await_seconds",
            "d_await",
            "Average time of a discard.",
            9,
            6,
        ),
        g(
            "flush_await_seconds",
            "f_await",
            "Average time of a flush.",
            9,
            6,
        ),
        g(
            "read_request_bytes",
            "rareq-sz",
            "Average size of a read request.",
            10,
            0,
        ),
        g(
            "write_request_bytes",
            "wareq-sz",
            "Average size of a write request.",
            10,
            0,
        ),
        g(
            "discard_request_bytes",
            "dareq-sz",
            "Average size of a discard request.",
            10,
            0,
        ),
        g(
            "queue_length",
            "aqu-sz",
            "Average number of requests queued or in service.",
            8,
            2,
        ),
        Column::ratio(
            "utilization_ratio",
            "%util",
            "Fraction of time the device had I/O in flight (not saturation on SSD/NVMe).",
            8,
        ),
        c(
            "reads_completed",
            "reads",
            "Reads completed since boot.",
            12,
        ),
        c(
            "writes_completed",
            "writes",
            "Writes completed since boot.",
            12,
        ),
        c("read_bytes", "rbytes", "Bytes read since boot.", 16),
        c("written_bytes", "wbytes", "Bytes written since boot.", 16),
        c(
            "io_time_milliseconds",
            "io_ms",
            "Milliseconds with I/O in flight since boot (32-bit, wraps).",
            12,
        ),
    ]
}

/// A renderer over one of the core's writers.
pub struct MachineRenderer {
    writer: Box<dyn FrameWriter>,
    rows: Vec<Row>,
    /// How many CPU columns each row has (0: no CPU report).
    cpu_width: usize,
    /// How many device columns each row has (0: no device report).
    device_width: usize,
    /// `--latency`'s columns follow the device columns (with the
    /// histograms when true).
    latency: Option<bool>,
}

impl MachineRenderer {
    /// The renderer for CSV or NDJSON (other formats are not its own),
    /// with the reports `opts` selects.
    // Out of line: only some runs take this path; inlined, it would sit among
    // the code every run executes (build.rs, "Hot code first").
    #[inline(never)]
    pub fn new(format: OutputFormat, opts: &Options) -> MachineRenderer {
        let f = match format {
            OutputFormat::Csv => Format::Csv,
            _ => Format::Ndjson,
        };
        let (cpu, devices) = (opts.show_cpu, opts.show_disk);
        let width =
            |shown: bool, columns: fn() -> Vec<Column>| if shown { columns().len() } else { 0 };
        // CSV and NDJSON carry the histograms too, as text.
        let latency = (devices && opts.latency).then_some(true);
        MachineRenderer {
            writer: writer_for(f, schema(cpu, devices, latency), ","),
            rows: Vec::new(),
            cpu_width: width(cpu, cpu_columns),
            device_width: width(devices, device_columns)
                + latency.map_or(0, |h| latency_columns(h).len()),
            latency,
        }
    }
}

impl Renderer for MachineRenderer {
    fn begin(&mut self, out: &mut dyn Write, _banner: &Banner) -> io::Result<()> {
        self.writer.begin(out)
    }

    fn sample(&mut self, out: &mut dyn Write, s: &Sample, skipped: bool) -> io::Result<()> {
        if skipped {
            return Ok(());
        }
        self.rows.clear();
        for row in s.devices.rows(s.curr).filter(|_| self.device_width > 0) {
            let x = ext_stats(row.prev, row.cur, s.itv, row.devices);
            let bytes = |sectors_per_s: f64| Value::Float(sectors_per_s * 512.0);
            let secs = |ms: f64| Value::Float(ms / 1000.0);
            let req = |kb: f64| Value::Float(kb * 1024.0);
            self.rows.push(Row {
                labels: vec![row.name.to_string()],
                values: vec![
                    Value::Float(x.ios[0]),
                    Value::Float(x.ios[1]),
                    Value::Float(x.ios[2]),
                    Value::Float(x.fl_ios),
                    bytes(x.sectors[0]),
                    bytes(x.sectors[1]),
                    bytes(x.sectors[2]),
                    Value::Float(x.merges[0]),
                    Value::Float(x.merges[1]),
                    Value::Float(x.merges[2]),
                    secs(x.await_ms[0]),
                    secs(x.await_ms[1]),
                    secs(x.await_ms[2]),
                    secs(x.fl_await),
                    req(x.req_kb[0]),
                    req(x.req_kb[1]),
                    req(x.req_kb[2]),
                    Value::Float(x.aqu_sz),
                    Value::Float(x.util / 100.0),
                    Value::Int(row.cur.rd_ios),
                    Value::Int(row.cur.wr_ios),
                    Value::Int(row.cur.rd_sectors.saturating_mul(512)),
                    Value::Int(row.cur.wr_sectors.saturating_mul(512)),
                    Value::Int(u64::from(row.cur.tot_ticks)),
                ],
            });
            let values = &mut self.rows.last_mut().expect("pushed above").values;
            if let Some(histograms) = self.latency {
                let measured = s.histograms(&row).zip(s.latency_stats(&row));
                let measured = measured.as_ref().map(|(h, stats)| (&**h, stats));
                latency_values(measured, s.latency_losses(&row), histograms, values);
            }
            values.extend(std::iter::repeat_n(Value::Missing, self.cpu_width));
        }
        if self.cpu_width > 0 {
            let c = &s.cpu_shares;
            let mut values = vec![Value::Missing; self.device_width];
            values.extend(
                [c.user, c.nice, c.system, c.iowait, c.steal, c.idle]
                    .map(|percent| Value::Float(percent / 100.0)),
            );
            self.rows.push(Row {
                labels: vec![String::new()],
                values,
            });
        }
        let frame = Frame {
            time: s.time,
            index: s.index,
            rows: &self.rows,
            notes: &[],
        };
        self.writer.frame(out, &frame)
    }

    fn end(&mut self, out: &mut dyn Write) -> io::Result<()> {
        self.writer.end(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the histograms miss ends `--latency`'s columns, each value
    /// under its own key, with or without the histograms as text; a row
    /// nothing measured has none of them.
    #[test]
    fn losses_end_the_latency_columns_under_their_keys() {
        let h = DeviceHistograms::default();
        let stats = LatencyStats::of(&h);
        let losses = Losses {
            lost: 5,
            unmatched: 2,
            undelivered: 3,
        };
        for histograms in [false, true] {
            let keys: Vec<String> = latency_columns(histograms)
                .iter()
                .map(|c| c.key.to_string())
                .collect();
            let mut values = Vec::new();
            latency_values(Some((&h, &stats)), losses, histograms, &mut values);
            assert_eq!(values.len(), keys.len());
            let named: Vec<(&str, &Value)> = keys.iter().map(String::as_str).zip(&values).collect();
            assert_eq!(
                named[named.len() - 3..],
                [
                    ("latency_lost_samples", &Value::Int(5)),
                    ("latency_undelivered_completions", &Value::Int(3)),
                    ("latency_unmatched_completions", &Value::Int(2)),
                ]
            );
            let mut none = Vec::new();
            latency_values(None, losses, histograms, &mut none);
            assert_eq!(none, vec![Value::Missing; keys.len()]);
        }
    }

    /// An operation without requests is 0, as in the text report and as
    /// its `_await_seconds` beside it; withheld figures have no value, so
    /// that the two are told apart.
    #[test]
    fn no_requests_is_zero_and_withheld_is_no_value() {
        let mut h = DeviceHistograms::default();
        h.latency[0].add(2_000_000, 1);
        let none = Losses::default();
        let ops_of = |stats: &LatencyStats| {
            let mut values = Vec::new();
            latency_values(Some((&h, stats)), none, false, &mut values);
            values.truncate(3 * OPS);
            values
        };
        let measured = ops_of(&LatencyStats::of(&h));
        assert!(
            matches!(measured[0], Value::Float(p50) if p50 > 0.0),
            "{measured:?}"
        );
        assert_eq!(measured[3..], vec![Value::Float(0.0); 3 * OPS - 3]);
        assert_eq!(
            ops_of(&LatencyStats::WITHHELD),
            vec![Value::Missing; 3 * OPS]
        );
    }
}
