//! Comma (or other separator) separated values with one header line.

use std::io::{self, Write};

use super::{Frame, FrameWriter, Schema, Value, rfc3339};
use crate::common::cli::tell;
use crate::common::escape;
use crate::common::fixed::fixed;

/// Writes `timestamp,index,<labels>,<columns>` once, then one line per row.
/// Missing values are empty fields; a name shows its control characters and
/// bytes that are not UTF-8 escaped as text output does (CSV has no escape
/// of its own: raw, they would act on a terminal the file is printed on);
/// fields holding the separator or a quote are quoted as RFC 4180 says. A
/// table has no place for a frame's notes: they go to standard error, one
/// line each, as the text reports print theirs.
pub struct CsvWriter {
    schema: Schema,
    separator: String,
}

impl CsvWriter {
    /// A CSV writer for `schema` with the given separator (`,` by default).
    pub fn new(schema: Schema, separator: &str) -> CsvWriter {
        let separator = if separator.is_empty() { "," } else { separator };
        CsvWriter {
            schema,
            separator: separator.to_string(),
        }
    }

    fn field(&self, text: &str) -> String {
        let text = escape::text(text);
        if text.contains(&self.separator) || text.contains('"') {
            format!("\"{}\"", text.replace('"', "\"\""))
        } else {
            text.to_string()
        }
    }
}

impl FrameWriter for CsvWriter {
    fn begin(&mut self, out: &mut dyn Write) -> io::Result<()> {
        let mut fields = vec!["timestamp".to_string(), "index".to_string()];
        fields.extend(self.schema.labels.iter().map(|(n, _)| self.field(n)));
        fields.extend(self.schema.columns.iter().map(|c| self.field(&c.key)));
        writeln!(out, "{}", fields.join(&self.separator))
    }

    fn frame(&mut self, out: &mut dyn Write, frame: &Frame) -> io::Result<()> {
        let time = rfc3339(frame.time);
        for row in frame.rows {
            let mut fields = vec![time.clone(), frame.index.to_string()];
            fields.extend(row.labels.iter().map(|l| self.field(l)));
            for (value, column) in row.values.iter().zip(&self.schema.columns) {
                fields.push(match value {
                    Value::Float(v) if v.is_finite() => fixed(*v, column.precision),
                    Value::Int(v) => v.to_string(),
                    Value::Text(t) => self.field(t),
                    Value::Float(_) | Value::Missing => String::new(),
                });
            }
            writeln!(out, "{}", fields.join(&self.separator))?;
        }
        for note in frame.notes {
            tell(self.schema.tool, format_args!("note: {note}"));
        }
        out.flush()
    }

    fn end(&mut self, out: &mut dyn Write) -> io::Result<()> {
        out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture;
    use super::*;

    #[test]
    fn header_once_rows_quoted_missing_empty() {
        let text = fixture::render(Box::new(CsvWriter::new(fixture::schema(), ",")), 2);
        assert_eq!(
            text,
            "timestamp,index,device,reads_per_second,reads\n\
             2020-06-01T12:53:20.000Z,0,sda,1.50,42\n\
             2020-06-01T12:53:20.000Z,0,\"a,b\"\"c\",,0\n\
             2020-06-01T12:53:21.000Z,1,sda,1.50,42\n\
             2020-06-01T12:53:21.000Z,1,\"a,b\"\"c\",,0\n"
        );
    }

    #[test]
    fn other_separators_change_what_needs_quoting() {
        let text = fixture::render(Box::new(CsvWriter::new(fixture::schema(), ";")), 1);
        assert!(!text.contains(",\"a,b"));
        assert!(text.contains(";\"a,b\"\"c\";;0\n"));
    }

    #[test]
    fn names_show_control_characters_as_text_does() {
        let writer = CsvWriter::new(fixture::schema(), ",");
        assert_eq!(
            writer.field("a\x1b]0;x\x07\u{9b}"),
            "a\\x1b]0;x\\x07\\u{9b}"
        );
        // A line break is escaped, not quoted; a comma still is.
        assert_eq!(writer.field("new\nline,\"q\""), "\"new\\nline,\"\"q\"\"\"");
        assert_eq!(writer.field("EFI\\x20System"), "EFI\\x20System");
    }
}
