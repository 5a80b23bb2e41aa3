//! JSON: one document per run (`json`) or one object per sample (`ndjson`).

use std::fmt::Write as _;
use std::io::{self, Write};

use super::{Frame, FrameWriter, Schema, Value, rfc3339};
use crate::common::{escape, fixed};

/// Renders one frame as a JSON object:
/// `{"timestamp":..,"index":..,"rows":[{label..,column..}],"notes":[..]}`.
/// Keys follow schema order; missing and non-finite values are `null`.
/// Everything is appended to `s`, which the writer reuses from frame to
/// frame (no allocation per value, no fresh megabyte per frame): a frame of
/// thousands of rows stays cheap.
fn frame_object(schema: &Schema, frame: &Frame, s: &mut String) {
    s.clear();
    s.push_str("{\"timestamp\":");
    push_quoted(s, &rfc3339(frame.time));
    let _ = write!(s, ",\"index\":{},\"rows\":[", frame.index);
    // Keys are escaped once per frame, not once per row.
    let label_keys: Vec<String> = schema.labels.iter().map(|(name, _)| quote(name)).collect();
    let column_keys: Vec<String> = schema.columns.iter().map(|c| quote(&c.key)).collect();
    for (i, row) in frame.rows.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push('{');
        let mut first = true;
        for (key, value) in label_keys.iter().zip(&row.labels) {
            if !first {
                s.push(',');
            }
            first = false;
            s.push_str(key);
            s.push(':');
            push_quoted(s, value);
        }
        for ((key, column), value) in column_keys.iter().zip(&schema.columns).zip(&row.values) {
            if !first {
                s.push(',');
            }
            first = false;
            s.push_str(key);
            s.push(':');
            push_value(s, value, column.precision);
        }
        s.push('}');
    }
    s.push_str("],\"notes\":[");
    for (i, note) in frame.notes.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        push_quoted(s, note);
    }
    s.push_str("]}");
}

fn quote(text: &str) -> String {
    let mut s = String::with_capacity(text.len() + 2);
    push_quoted(&mut s, text);
    s
}

/// Appends `text` as a JSON string (see [`escape::push_json`]).
fn push_quoted(s: &mut String, text: &str) {
    s.push('"');
    escape::push_json(s, text);
    s.push('"');
}

/// Appends a decimal integer without the formatting machinery (the bulk of
/// a large frame is integers).
fn push_u64(s: &mut String, mut v: u64) {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for &d in &digits[start..] {
        s.push(d as char);
    }
}

fn push_value(s: &mut String, value: &Value, precision: usize) {
    match value {
        Value::Float(v) if v.is_finite() => fixed::push_fixed(s, *v, 0, precision),
        Value::Int(v) => push_u64(s, *v),
        Value::Text(t) => push_quoted(s, t),
        Value::Float(_) | Value::Missing => s.push_str("null"),
    }
}

/// One JSON document `{"tool":..,"samples":[..]}`, closed by `end`, which
/// the interval loop calls after an interruption too.
pub struct JsonWriter {
    schema: Schema,
    frames: u64,
    buf: String,
}

impl JsonWriter {
    /// A JSON writer for `schema`.
    pub fn new(schema: Schema) -> JsonWriter {
        JsonWriter {
            schema,
            frames: 0,
            buf: String::new(),
        }
    }
}

impl FrameWriter for JsonWriter {
    fn begin(&mut self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "{{\"tool\":{},\"samples\":[", quote(self.schema.tool))
    }

    fn frame(&mut self, out: &mut dyn Write, frame: &Frame) -> io::Result<()> {
        let sep = if self.frames > 0 { "," } else { "" };
        self.frames += 1;
        frame_object(&self.schema, frame, &mut self.buf);
        writeln!(out, "{sep}{}", self.buf)?;
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
    buf: String,
}

impl NdjsonWriter {
    /// An NDJSON writer for `schema`.
    pub fn new(schema: Schema) -> NdjsonWriter {
        NdjsonWriter {
            schema,
            buf: String::new(),
        }
    }
}

impl FrameWriter for NdjsonWriter {
    fn begin(&mut self, _out: &mut dyn Write) -> io::Result<()> {
        Ok(())
    }

    fn frame(&mut self, out: &mut dyn Write, frame: &Frame) -> io::Result<()> {
        frame_object(&self.schema, frame, &mut self.buf);
        writeln!(out, "{}", self.buf)?;
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
    fn integers_print_in_full() {
        for v in [0, 7, 10, 12_345, u64::MAX] {
            let mut s = String::new();
            push_u64(&mut s, v);
            assert_eq!(s, v.to_string());
        }
    }

    #[test]
    fn strings_are_escaped_like_serde_json() {
        for text in [
            "plain",
            "a\"b\\c",
            "tab\tnew\nline\r",
            "\u{1}\u{1f}\u{8}\u{c}",
            "é ✓",
            "",
        ] {
            assert_eq!(
                quote(text),
                serde_json::to_string(text).unwrap(),
                "{text:?}"
            );
        }
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
