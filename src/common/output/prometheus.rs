//! Prometheus text exposition format, version 0.0.4.

use std::io::{self, Write};
use std::time::UNIX_EPOCH;

use super::{Frame, FrameWriter, MetricKind, Schema, Value};

/// Writes one complete exposition per frame (`# HELP`, `# TYPE`, then one
/// sample per row with the frame's timestamp in milliseconds), followed by an
/// empty line. A label whose value is empty is left out (Prometheus treats it
/// as absent), and a sample without labels is written without braces. Metric names are `<prefix>_<column key>`, with characters
/// Prometheus does not allow replaced by `_`, and `_total` appended to
/// counters. Missing values are left out.
pub struct PrometheusWriter {
    schema: Schema,
    names: Vec<String>,
}

impl PrometheusWriter {
    /// A Prometheus writer for `schema`.
    pub fn new(schema: Schema) -> PrometheusWriter {
        let names = schema
            .columns
            .iter()
            .map(|c| {
                let mut name = metric_name(&format!("{}_{}", schema.metric_prefix, c.key));
                if c.kind == MetricKind::Counter && !name.ends_with("_total") {
                    name.push_str("_total");
                }
                name
            })
            .collect();
        PrometheusWriter { schema, names }
    }
}

/// Maps any text to a valid metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`).
pub fn metric_name(raw: &str) -> String {
    let mut name: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == ':' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert(0, '_');
    }
    name
}

/// Escapes a label value (backslash, double quote, line feed).
pub fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

impl FrameWriter for PrometheusWriter {
    fn begin(&mut self, _out: &mut dyn Write) -> io::Result<()> {
        Ok(())
    }

    fn frame(&mut self, out: &mut dyn Write, frame: &Frame) -> io::Result<()> {
        let millis = frame
            .time
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        for (i, column) in self.schema.columns.iter().enumerate() {
            let name = &self.names[i];
            let kind = match column.kind {
                MetricKind::Gauge => "gauge",
                MetricKind::Counter => "counter",
            };
            writeln!(out, "# HELP {name} {}", escape_help(&column.help))?;
            writeln!(out, "# TYPE {name} {kind}")?;
            for row in frame.rows {
                let value = match &row.values[i] {
                    Value::Float(v) if v.is_finite() => v.to_string(),
                    Value::Int(v) => v.to_string(),
                    _ => continue,
                };
                // Prometheus treats an empty label value as an absent label:
                // leave such labels out, and the braces when none is left.
                let labels: Vec<String> = self
                    .schema
                    .labels
                    .iter()
                    .zip(&row.labels)
                    .filter(|(_, v)| !v.is_empty())
                    .map(|((n, _), v)| format!("{n}=\"{}\"", escape_label(v)))
                    .collect();
                if labels.is_empty() {
                    writeln!(out, "{name} {value} {millis}")?;
                } else {
                    writeln!(out, "{name}{{{}}} {value} {millis}", labels.join(","))?;
                }
            }
        }
        writeln!(out)?;
        out.flush()
    }

    fn end(&mut self, out: &mut dyn Write) -> io::Result<()> {
        out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Column, Row, fixture};
    use super::*;

    #[test]
    fn exposition_has_help_type_escaped_labels_and_skips_missing() {
        let text = fixture::render(Box::new(PrometheusWriter::new(fixture::schema())), 1);
        assert_eq!(
            text,
            "# HELP demo_reads_per_second Reads per second.\n\
             # TYPE demo_reads_per_second gauge\n\
             demo_reads_per_second{device=\"sda\"} 1.5 1591016000000\n\
             # HELP demo_reads_total Reads \"completed\".\n\
             # TYPE demo_reads_total counter\n\
             demo_reads_total{device=\"sda\"} 42 1591016000000\n\
             demo_reads_total{device=\"a,b\\\"c\"} 0 1591016000000\n\n"
        );
        assert_eq!(metric_name("iostat_r/s"), "iostat_r_s");
    }

    #[test]
    fn empty_label_values_are_left_out_and_so_are_empty_braces() {
        let schema = Schema {
            tool: "demo",
            metric_prefix: "demo",
            labels: vec![("pmu", 4), ("event", 6)],
            columns: vec![Column::gauge("x", "x", "X.", 4, 0)],
        };
        let rows = [
            Row {
                labels: vec!["cpu".into(), "".into()],
                values: vec![Value::Int(1)],
            },
            Row {
                labels: vec!["".into(), "".into()],
                values: vec![Value::Int(2)],
            },
        ];
        let frame = Frame {
            time: UNIX_EPOCH + std::time::Duration::from_millis(5),
            index: 0,
            rows: &rows,
            notes: &[],
        };
        let mut out = Vec::new();
        PrometheusWriter::new(schema)
            .frame(&mut out, &frame)
            .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "# HELP demo_x X.\n# TYPE demo_x gauge\ndemo_x{pmu=\"cpu\"} 1 5\ndemo_x 2 5\n\n"
        );
        assert_eq!(metric_name("9x"), "_9x");
    }
}
