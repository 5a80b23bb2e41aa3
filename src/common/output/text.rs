//! Aligned text columns: labels left-aligned, values right-aligned.

use std::io::{self, Write};

use super::{Column, Frame, FrameWriter, Schema, Value};
use crate::common::escape;
use crate::common::fixed::fixed;

/// Writes each frame as a header line, one line per row and the notes,
/// followed by an empty line. Missing values print as `-`.
pub struct TextWriter {
    schema: Schema,
}

impl TextWriter {
    /// A text writer for `schema`.
    pub fn new(schema: Schema) -> TextWriter {
        TextWriter { schema }
    }
}

/// Formats one value for text output with the column's precision; a
/// share as a percentage with two decimals.
fn format_value(value: &Value, column: &Column) -> String {
    match value {
        Value::Float(v) if column.percent_in_text => fixed(v * 100.0, 2),
        Value::Float(v) => fixed(*v, column.precision),
        Value::Int(v) => v.to_string(),
        Value::Text(t) => escape::text(t).into_owned(),
        Value::Missing => "-".to_string(),
    }
}

impl FrameWriter for TextWriter {
    fn begin(&mut self, _out: &mut dyn Write) -> io::Result<()> {
        Ok(())
    }

    fn frame(&mut self, out: &mut dyn Write, frame: &Frame) -> io::Result<()> {
        let mut line = String::new();
        for (name, width) in &self.schema.labels {
            line.push_str(&format!("{name:<width$} "));
        }
        for column in &self.schema.columns {
            line.push_str(&format!(" {:>w$}", column.header, w = column.width));
        }
        writeln!(out, "{}", line.trim_end())?;
        for row in frame.rows {
            let mut line = String::new();
            for (value, (_, width)) in row.labels.iter().zip(&self.schema.labels) {
                let value = escape::text(value);
                line.push_str(&format!("{value:<width$} "));
            }
            for (value, column) in row.values.iter().zip(&self.schema.columns) {
                let text = format_value(value, column);
                line.push_str(&format!(" {text:>w$}", w = column.width));
            }
            writeln!(out, "{}", line.trim_end())?;
        }
        for note in frame.notes {
            writeln!(out, "note: {}", escape::text(note))?;
        }
        writeln!(out)
    }

    fn end(&mut self, _out: &mut dyn Write) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture;
    use super::*;

    #[test]
    fn aligns_columns_and_shows_missing_as_dash() {
        let text = fixture::render(Box::new(TextWriter::new(fixture::schema())), 1);
        assert_eq!(
            text,
            "device       r/s  reads\n\
             sda         1.50     42\n\
             a,b\"c          -      0\n\
             note: sdb vanished\n\n"
        );
    }

    #[test]
    fn shares_show_as_percentages() {
        let column = Column::ratio("home_ratio", "home%", "Home share.", 7);
        assert_eq!(format_value(&Value::Float(0.9974), &column), "99.74");
        assert_eq!(format_value(&Value::Float(1.0), &column), "100.00");
        assert_eq!(format_value(&Value::Missing, &column), "-");
    }
}
