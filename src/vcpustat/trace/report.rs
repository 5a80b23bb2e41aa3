//! `vcpustat trace report`: the tables, through the core's output writers;
//! the timeline, which can hold millions of rows, is written row by row
//! as the merge yields it, in the shapes those writers give
//! ([`timeline`](super::timeline)); the other tables are
//! [`sections`](super::sections).
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

use super::analysis::{self, Machine, VcpuReport};
use super::progress::Progress;
use super::sections::{
    Section, latency_section, processors_section, reasons_section, shares_section,
};
use super::timeline::TimelineWriter;
use super::topology::Topology;
use crate::common::cpulist::format_list;
use crate::common::output::{Format, Frame, rfc3339, writer_for};

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
pub(super) const MACHINE_PRECISION: usize = 9;

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

/// The note for processors vCPUs moved between that the topology given
/// does not place: their vCPUs' `chipchg` and `nodechg` are `-`, which
/// would otherwise read as if no topology had been given.
fn unplaced_note(reports: &[VcpuReport]) -> Option<String> {
    let mut unplaced: Vec<u32> = reports
        .iter()
        .flat_map(|r| r.unplaced.iter().map(|&p| u32::from(p)))
        .collect();
    unplaced.sort_unstable();
    unplaced.dedup();
    (!unplaced.is_empty()).then(|| {
        format!(
            "--topology does not place processor{} {}, which vCPUs moved between: their \
             chipchg and nodechg are -",
            if unplaced.len() == 1 { "" } else { "s" },
            format_list(&unplaced)
        )
    })
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
                let reports = reports.as_deref().unwrap_or_default();
                let mut s = latency_section(reports, hz);
                s.notes.splice(0..0, notes.iter().cloned());
                s.notes.extend(unplaced_note(reports));
                s
            }
            Table::Reasons => reasons_section(reports.as_deref().unwrap_or_default()),
            Table::Processors => processors_section(summaries.as_deref().unwrap_or_default(), hz),
            Table::Shares => shares_section(summaries.as_deref().unwrap_or_default(), hz),
            Table::Timeline => {
                let mut w = TimelineWriter::new(&mut *out, format, rfc3339(time));
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
                // A recording that cannot be read on (shortened meanwhile)
                // ends the report with the rows written so far, the JSON
                // document closed, as an interval run's is.
                w.end()?;
                if let Err(e) = merged {
                    progress.clear();
                    if format == ReportFormat::Json {
                        writeln!(out, "}}}}")?;
                    }
                    return Err(ReportError::Input(e));
                }
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
    fn a_recording_shortened_during_the_timeline_leaves_the_json_closed() {
        let dir = crate::common::scratch::scratch("shortened");
        let path = dir.join("lpar1.dtl");
        let fixture = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/charts/lpar1.dtl"
        );
        std::fs::copy(fixture, &path).unwrap();
        let recording = super::super::recording::Recording::open(&path).unwrap();
        let recordings = vec![("lpar1.dtl".to_string(), recording)];
        let machine = analysis::load(&recordings).unwrap();
        // Shortened after it was opened: the merge reads the records as it
        // goes, and finds them gone.
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.set_len(file.metadata().unwrap().len() / 2).unwrap();
        let options = ReportOptions {
            format: ReportFormat::Json,
            timeline: true,
            table: Some(Table::Timeline),
        };
        let mut out = Vec::new();
        let result = write_report(
            &mut out,
            &machine,
            &Topology::default(),
            &options,
            0,
            &[],
            &mut Progress::hidden(),
        );
        let Err(ReportError::Input(e)) = result else {
            panic!("{result:?}");
        };
        assert!(
            e.contains("the recording was shortened while being read"),
            "{e}"
        );
        let doc: serde_json::Value = serde_json::from_slice(&out)
            .unwrap_or_else(|e| panic!("not closed: {e}: {}", String::from_utf8_lossy(&out)));
        assert!(doc["sections"]["timeline"].is_object(), "{doc}");
    }

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
}
