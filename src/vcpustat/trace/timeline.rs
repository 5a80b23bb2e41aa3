//! The `timeline` table of `vcpustat trace report`: every physical record,
//! written row by row as the merge yields it (millions of rows, never held
//! whole), in the shapes of the core's writers: a text header and aligned
//! rows, one JSON document with one sample, a CSV header and rows. Times
//! are formatted in integers and padded by hand (`Micros`, `push_uint`):
//! through `fmt`, that was most of the time of a text timeline.

use std::io::{self, Write};

use super::analysis::{Machine, PhysRecord};
use super::overlaps::Overlaps;
use super::report::{MACHINE_PRECISION, ReportFormat};
use super::sections::schema;
use crate::common::escape;
use crate::common::output::{Column, Schema};

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
pub(super) struct TimelineWriter<'a> {
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

impl<'a> TimelineWriter<'a> {
    /// A writer of the timeline to `out` in `format`, its document and
    /// rows stamped `time` (RFC 3339).
    pub(super) fn new(out: &'a mut dyn Write, format: ReportFormat, time: String) -> Self {
        TimelineWriter {
            out,
            format,
            schema: timeline_schema(),
            time,
            origin: None,
            rows: 0,
            line: String::new(),
            overlaps: Overlaps::new(),
        }
    }

    /// Writes what comes before the rows: the text or CSV header, or the
    /// start of the JSON document.
    pub(super) fn begin(&mut self) -> io::Result<()> {
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

    /// Writes the row of record `r` of `machine` (time base `hz`).
    pub(super) fn row(&mut self, r: &PhysRecord, machine: &Machine, hz: u64) -> io::Result<()> {
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

    /// Writes what comes after the rows, with the note on overlaps.
    pub(super) fn end(&mut self) -> io::Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
