//! Output writers shared by every tool: one file per format behind one small
//! trait, over one description of the columns.
//!
//! A tool describes its columns once in a [`Schema`] and turns each sample
//! into a [`Frame`] of already computed [`Row`]s. A [`FrameWriter`] only turns
//! frames into bytes; it does no arithmetic and never decides where bytes go.
//! Tools whose text must match a reference tool byte for byte (iostat-rs's
//! sysstat layout) keep their own text renderer and use these writers for the
//! machine-readable formats.

mod csv;
mod json;
mod text;

use std::borrow::Cow;
use std::io::{self, Write};
use std::time::SystemTime;

pub use csv::CsvWriter;
pub use json::{JsonWriter, NdjsonWriter};
pub use text::TextWriter;

/// One output column, described once for every format.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// Key in JSON and CSV.
    pub key: Cow<'static, str>,
    /// Header in text output.
    pub header: Cow<'static, str>,
    /// One line on what the column means (help text).
    pub help: Cow<'static, str>,
    /// Text width, right-aligned.
    pub width: usize,
    /// Decimal places for floating-point values.
    pub precision: usize,
    /// A share from 0 to 1 that text shows as a percentage (see
    /// [`Column::ratio`]).
    pub percent_in_text: bool,
}

impl Column {
    /// A column of measured values (floating point) with borrowed static strings.
    pub const fn gauge(
        key: &'static str,
        header: &'static str,
        help: &'static str,
        width: usize,
        precision: usize,
    ) -> Column {
        Column::of(key, header, help, width, precision, false)
    }

    /// A column of shares, named `…_ratio`: every tool's machine formats
    /// write a share from 0 to 1 (four decimals), as Prometheus names and
    /// scales them; text shows it as a percentage (two decimals) under a
    /// header that says `%`.
    pub const fn ratio(
        key: &'static str,
        header: &'static str,
        help: &'static str,
        width: usize,
    ) -> Column {
        Column::of(key, header, help, width, 4, true)
    }

    /// A column of counts (integers) with borrowed static strings.
    pub const fn counter(
        key: &'static str,
        header: &'static str,
        help: &'static str,
        width: usize,
    ) -> Column {
        Column::of(key, header, help, width, 0, false)
    }

    const fn of(
        key: &'static str,
        header: &'static str,
        help: &'static str,
        width: usize,
        precision: usize,
        percent_in_text: bool,
    ) -> Column {
        Column {
            key: Cow::Borrowed(key),
            header: Cow::Borrowed(header),
            help: Cow::Borrowed(help),
            width,
            precision,
            percent_in_text,
        }
    }
}

/// What a tool's rows look like: the identifying labels, then the columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Schema {
    /// Tool name, written into JSON documents.
    pub tool: &'static str,
    /// Label names, e.g. `["device"]` or `["pmu", "event"]`, with text widths.
    pub labels: Vec<(&'static str, usize)>,
    /// The value columns.
    pub columns: Vec<Column>,
}

/// One computed value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A floating-point value, printed with the column's precision.
    Float(f64),
    /// An integer count.
    Int(u64),
    /// Free text.
    Text(String),
    /// No value (nothing to divide by, not counted): `-` in text, `null` in
    /// JSON, empty in CSV.
    Missing,
}

/// One row: label values in schema order, then column values in schema order.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Label values.
    pub labels: Vec<String>,
    /// Column values.
    pub values: Vec<Value>,
}

/// One sample's output.
#[derive(Debug, Clone, Copy)]
pub struct Frame<'a> {
    /// Wall-clock time of the sample.
    pub time: SystemTime,
    /// Sample number, from 0.
    pub index: u64,
    /// The rows.
    pub rows: &'a [Row],
    /// Remarks about this sample (a counter reset, a device that vanished).
    pub notes: &'a [String],
}

/// Turns frames into bytes.
pub trait FrameWriter {
    /// Writes what comes before the first frame.
    fn begin(&mut self, out: &mut dyn Write) -> io::Result<()>;
    /// Writes one frame.
    fn frame(&mut self, out: &mut dyn Write, frame: &Frame) -> io::Result<()>;
    /// Writes what closes the document; called on every normal end,
    /// interrupted runs included.
    fn end(&mut self, out: &mut dyn Write) -> io::Result<()>;
}

/// The machine-readable and generic formats every tool offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned columns for people.
    Text,
    /// One JSON document, closed even when interrupted.
    Json,
    /// One JSON object per sample and line.
    Ndjson,
    /// Comma-separated values with a header line.
    Csv,
    /// Prometheus text exposition (format 0.0.4) of the cumulative counters.
    // Not a frame format: each tool writes expositions of its cumulative
    // counters (`common::expo`) instead of choosing a frame writer.
    Prometheus,
}

/// Builds the writer for `format`. `separator` applies to CSV.
///
/// # Panics
///
/// For [`Format::Prometheus`], which the tools route to their expositions
/// of cumulative counters before choosing a frame writer.
pub fn writer_for(format: Format, schema: Schema, separator: &str) -> Box<dyn FrameWriter> {
    match format {
        Format::Text => Box::new(TextWriter::new(schema)),
        Format::Json => Box::new(JsonWriter::new(schema)),
        Format::Ndjson => Box::new(NdjsonWriter::new(schema)),
        Format::Csv => Box::new(CsvWriter::new(schema, separator)),
        Format::Prometheus => unreachable!("Prometheus output is an exposition, not frames"),
    }
}

/// Formats a time as RFC 3339 UTC with milliseconds.
pub fn rfc3339(time: SystemTime) -> String {
    humantime::format_rfc3339_millis(time).to_string()
}

#[cfg(test)]
pub(crate) mod fixture {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    pub fn schema() -> Schema {
        Schema {
            tool: "demo",
            labels: vec![("device", 6)],
            columns: vec![
                Column::gauge("reads_per_second", "r/s", "Reads per second.", 8, 2),
                Column::counter("reads", "reads", "Reads \"completed\".", 6),
            ],
        }
    }

    pub fn rows() -> Vec<Row> {
        vec![
            Row {
                labels: vec!["sda".into()],
                values: vec![Value::Float(1.5), Value::Int(42)],
            },
            Row {
                labels: vec!["a,b\"c".into()],
                values: vec![Value::Missing, Value::Int(0)],
            },
        ]
    }

    pub fn render(mut writer: Box<dyn FrameWriter>, frames: usize) -> String {
        let rows = rows();
        let notes = vec!["sdb vanished".to_string()];
        let mut out = Vec::new();
        writer.begin(&mut out).unwrap();
        for index in 0..frames {
            let frame = Frame {
                time: UNIX_EPOCH + Duration::from_millis(1_591_016_000_000 + index as u64 * 1000),
                index: index as u64,
                rows: &rows,
                notes: &notes,
            };
            writer.frame(&mut out, &frame).unwrap();
        }
        writer.end(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }
}
