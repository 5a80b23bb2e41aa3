//! JSON: one document per run (`json`) or one object per sample (`ndjson`).

use std::io::{self, Write};

use super::{Frame, FrameWriter, Schema, Value, rfc3339};

/// Renders one frame as a JSON object:
/// `{"timestamp":..,"index":..,"rows":[{label..,column..}],"notes":[..]}`.
/// Keys follow schema order; missing and non-finite values are `null`.
fn frame_object(schema: &Schema, frame: &Frame) -> String {
    let mut s = String::with_capacity(64 + frame.rows.len() * 64);
    s.push_str("{\"timestamp\":");
    s.push_str(&quote(&rfc3339(frame.time)));
    s.push_str(&format!(",\"index\":{},\"rows\":[", frame.index));
    for (i, row) in frame.rows.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push('{');
        let mut first = true;
        for ((name, _), value) in schema.labels.iter().zip(&row.labels) {
            if !first {
                s.push(',');
            }
            first = false;
            s.push_str(&quote(name));
            s.push(':');
            s.push_str(&quote(value));
        }
        for (column, value) in schema.columns.iter().zip(&row.values) {
            if !first {
                s.push(',');
            }
            first = false;
            s.push_str(&quote(&column.key));
            s.push(':');
            s.push_str(&json_value(value, column.precision));
        }
        s.push('}');
    }
    s.push_str("],\"notes\":[");
    for (i, note) in frame.notes.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&quote(note));
    }
    s.push_str("]}");
    s
}

fn quote(text: &str) -> String {
    serde_json::to_string(text).expect("strings always serialize")
}

fn json_value(value: &Value, precision: usize) -> String {
    match value {
        Value::Float(v) if v.is_finite() => format!("{v:.precision$}"),
        Value::Int(v) => v.to_string(),
        Value::Text(t) => quote(t),
        Value::Float(_) | Value::Missing => "null".to_string(),
    }
}

/// One JSON document `{"tool":..,"samples":[..]}`, closed by `end`, which
/// the interval loop calls after an interruption too.
pub struct JsonWriter {
    schema: Schema,
    frames: u64,
}

impl JsonWriter {
    /// A JSON writer for `schema`.
    pub fn new(schema: Schema) -> JsonWriter {
        JsonWriter { schema, frames: 0 }
    }
}

impl FrameWriter for JsonWriter {
    fn begin(&mut self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "{{\"tool\":{},\"samples\":[", quote(self.schema.tool))
    }

    fn frame(&mut self, out: &mut dyn Write, frame: &Frame) -> io::Result<()> {
        let sep = if self.frames > 0 { "," } else { "" };
        self.frames += 1;
        writeln!(out, "{sep}{}", frame_object(&self.schema, frame))?;
        out.flush()
    }

    fn end(&mut self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "]}}")?;
        out.flush()
    }
}

/// One JSON object per line and sample; every line is a complete document,
/// so an interrupted stream is still valid line by line.
pub struct NdjsonWriter {
    schema: Schema,
}

impl NdjsonWriter {
    /// An NDJSON writer for `schema`.
    pub fn new(schema: Schema) -> NdjsonWriter {
        NdjsonWriter { schema }
    }
}

impl FrameWriter for NdjsonWriter {
    fn begin(&mut self, _out: &mut dyn Write) -> io::Result<()> {
        Ok(())
    }

    fn frame(&mut self, out: &mut dyn Write, frame: &Frame) -> io::Result<()> {
        writeln!(out, "{}", frame_object(&self.schema, frame))?;
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
    fn json_document_is_valid_and_keeps_schema_order() {
        let text = fixture::render(Box::new(JsonWriter::new(fixture::schema())), 2);
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["tool"], "demo");
        let samples = doc["samples"].as_array().unwrap();
        assert_eq!(samples.len(), 2);
        assert_eq!(samples[1]["timestamp"], "2020-06-01T12:53:21.000Z");
        assert_eq!(samples[0]["rows"][0]["reads_per_second"], 1.5);
        assert_eq!(samples[0]["rows"][1]["device"], "a,b\"c");
        assert!(samples[0]["rows"][1]["reads_per_second"].is_null());
        assert_eq!(samples[0]["notes"][0], "sdb vanished");
        assert!(text.contains("{\"device\":\"sda\",\"reads_per_second\":1.50,\"reads\":42}"));
    }

    #[test]
    fn empty_json_run_is_still_a_document() {
        let text = fixture::render(Box::new(JsonWriter::new(fixture::schema())), 0);
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(doc["samples"].as_array().unwrap().is_empty());
    }

    #[test]
    fn ndjson_is_one_document_per_line() {
        let text = fixture::render(Box::new(NdjsonWriter::new(fixture::schema())), 3);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        for (i, line) in lines.iter().enumerate() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["index"], i);
        }
    }
}
