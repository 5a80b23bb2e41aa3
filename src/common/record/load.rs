//! Reading a recording file: the header, then every frame, each entry
//! checked against its operation, so that a damaged file is refused with
//! its line before anything is reported. A last line cut short (the run was
//! killed, the disk filled up) is left out and remembered, not refused.

use std::io::BufReader;
use std::path::Path;

use serde::Deserialize;

use super::replay::ReplayError;
use super::{Entry, FORMAT_NAME, FORMAT_VERSION, Frame, Header, parse_hex};
use crate::common::excerpt::{clip, excerpt};
use crate::common::user_file::{open_to_read, read_line_bounded};

/// The `format` of `vcpustat trace record` files, which `--replay` cannot read.
const DTL_FORMAT_NAME: &str = "vcpustat-dtl";

/// How much of a JSON parser's message an error shows (it may quote the
/// recording's text).
const MESSAGE_BYTES: usize = 160;

/// A recording read whole.
pub(super) struct Loaded {
    /// The first line.
    pub header: Header,
    /// Every complete frame, in file order.
    pub frames: Vec<Frame>,
    /// The line number of each frame, for messages.
    pub lines: Vec<usize>,
    /// The line number of a last line that was cut short and left out.
    pub cut_line: Option<usize>,
}

/// The first line, read loosely to say what kind of file this is before
/// asking for every header field.
#[derive(Deserialize)]
struct Probe {
    format: String,
    #[serde(default)]
    tool: Option<String>,
}

/// A JSON parser's error, short and escaped, with its column.
fn json_error(err: &serde_json::Error) -> String {
    let text = err.to_string();
    let position = format!(" at line {} column {}", err.line(), err.column());
    let message = text.strip_suffix(&position).unwrap_or(&text);
    format!("{} (column {})", clip(message, MESSAGE_BYTES), err.column())
}

/// Reads and checks the recording at `path`, made by `tool`.
pub(super) fn load(path: &Path, tool: &str) -> Result<Loaded, ReplayError> {
    let shown = path.display().to_string();
    let bad = |line: usize, what: String| ReplayError::Format {
        path: shown.clone(),
        line,
        what,
    };
    let io_err = |source| ReplayError::Io {
        path: shown.clone(),
        source,
    };
    let mut reader = BufReader::new(open_to_read(path).map_err(io_err)?);
    let mut line = Vec::new();
    if read_line_bounded(&mut reader, &mut line).map_err(io_err)? == 0 {
        return Err(bad(1, "empty file, expected a recording header".into()));
    }
    let header = read_header(&line, tool).map_err(|what| match what {
        HeaderProblem::Format(what) => bad(1, what),
        HeaderProblem::OtherTool(recorded) => ReplayError::OtherTool {
            path: shown.clone(),
            recorded,
            tool: tool.to_string(),
        },
    })?;
    let mut frames = Vec::new();
    let mut lines = Vec::new();
    let mut number = 1;
    let mut cut_line = None;
    loop {
        if read_line_bounded(&mut reader, &mut line).map_err(io_err)? == 0 {
            break;
        }
        number += 1;
        if line.trim_ascii().is_empty() {
            continue;
        }
        let complete = line.ends_with(b"\n");
        match serde_json::from_slice::<Frame>(&line) {
            Ok(frame) => {
                check_frame(&frame, frames.len())
                    .map_err(|what| bad(number, format!("frame {}: {what}", frames.len())))?;
                frames.push(frame);
                lines.push(number);
            }
            // The last line, without its newline, ending too early (or in
            // the zeros a file system leaves after a power loss): the writer
            // stopped in the middle of it.
            Err(e) if !complete && (e.is_eof() || line.contains(&0)) => cut_line = Some(number),
            Err(e) => {
                return Err(bad(
                    number,
                    format!(
                        "frame {}: not a recording frame: {}",
                        frames.len(),
                        json_error(&e)
                    ),
                ));
            }
        }
    }
    if frames.is_empty() {
        let what = match cut_line {
            Some(n) => format!("the recording holds no complete sample (line {n} is cut short)"),
            None => "the recording holds no sample".to_string(),
        };
        return Err(bad(cut_line.unwrap_or(2), what));
    }
    Ok(Loaded {
        header,
        frames,
        lines,
        cut_line,
    })
}

enum HeaderProblem {
    Format(String),
    OtherTool(String),
}

fn read_header(line: &[u8], tool: &str) -> Result<Header, HeaderProblem> {
    let probe: Probe = serde_json::from_slice(line).map_err(|e| {
        HeaderProblem::Format(format!("not a recording header: {}", json_error(&e)))
    })?;
    if probe.format == DTL_FORMAT_NAME {
        return Err(HeaderProblem::OtherTool("vcpustat trace record".into()));
    }
    if probe.format != FORMAT_NAME {
        return Err(HeaderProblem::Format(format!(
            "format is {}, expected \"{FORMAT_NAME}\"",
            excerpt(&probe.format)
        )));
    }
    if let Some(recorded) = probe.tool.filter(|t| t != tool) {
        return Err(HeaderProblem::OtherTool(recorded));
    }
    let header: Header = serde_json::from_slice(line).map_err(|e| {
        HeaderProblem::Format(format!("not a recording header: {}", json_error(&e)))
    })?;
    if header.version != FORMAT_VERSION {
        return Err(HeaderProblem::Format(format!(
            "recording format version {} is not supported (this build reads {FORMAT_VERSION})",
            header.version
        )));
    }
    Ok(header)
}

/// Checks that a frame, the `position`th of the file (from 0), has that
/// index, as the writer numbers them, and that every entry is what its
/// operation gives. A frame repeated, moved or left out would replay
/// samples the run never took (and make later frames' left-out entries
/// those of another sample).
fn check_frame(frame: &Frame, position: usize) -> Result<(), String> {
    if frame.index != position as u64 {
        return Err(format!(
            "index {}, expected {position}: frames are numbered 0, 1, 2, ... in file order \
             (a frame repeated, moved or left out)",
            frame.index
        ));
    }
    for (key, entry) in &frame.entries {
        check_entry(key, entry).map_err(|what| format!("entry {}: {what}", excerpt(key)))?;
    }
    Ok(())
}

/// The entry kinds each operation records (besides `errno`).
const OPERATIONS: [(&str, &[&str]); 7] = [
    ("read", &["text", "hex"]),
    ("list", &["list"]),
    ("link", &["link"]),
    ("devnum", &["device"]),
    ("realpath", &["path"]),
    ("isdir", &["is_dir"]),
    ("values", &["values"]),
];

fn check_entry(key: &str, entry: &Entry) -> Result<(), String> {
    let known = || {
        OPERATIONS
            .iter()
            .map(|(op, _)| *op)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some((op, _)) = key.split_once(' ').filter(|(_, arg)| !arg.is_empty()) else {
        return Err(format!(
            "expected a key \"OPERATION ARGUMENT\" ({})",
            known()
        ));
    };
    let Some((_, kinds)) = OPERATIONS.iter().find(|(name, _)| *name == op) else {
        return Err(format!("unknown operation, expected one of {}", known()));
    };
    match entry {
        Entry::Errno(errno) if !(1..4096).contains(errno) => {
            Err(format!("errno {errno} is not an error number"))
        }
        Entry::Hex(hex) if parse_hex(hex).is_none() => Err(format!(
            "hex {} is not an even number of hexadecimal digits",
            excerpt(hex)
        )),
        Entry::Errno(_) => Ok(()),
        other if kinds.contains(&other.kind()) => Ok(()),
        other => Err(format!(
            "expected {} or errno for operation {op}, found {}",
            kinds.join(", "),
            other.kind()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_must_fit_their_operation() {
        let ok = [
            ("read /proc/stat", Entry::Text("cpu 1\n".into())),
            ("read /proc/stat", Entry::Hex("00FFab".into())),
            ("read /proc/stat", Entry::Errno(13)),
            ("list /sys/block", Entry::List(vec![])),
            ("isdir /sys/block", Entry::IsDir(false)),
            ("values perf:x", Entry::Values(vec![1])),
            ("devnum /dev/sda", Entry::Device(8, 0)),
        ];
        for (key, entry) in ok {
            assert_eq!(check_entry(key, &entry), Ok(()), "{key}");
        }
        let bad = [
            (
                "read /proc/stat",
                Entry::List(vec![]),
                "expected text, hex or errno for operation read, found list",
            ),
            (
                "read /proc/stat",
                Entry::Hex("0g".into()),
                "hex \"0g\" is not",
            ),
            (
                "read /proc/stat",
                Entry::Hex("abc".into()),
                "hex \"abc\" is not",
            ),
            ("read /proc/stat", Entry::Errno(0), "errno 0 is not"),
            ("read /proc/stat", Entry::Errno(-2), "errno -2 is not"),
            (
                "values perf:x",
                Entry::Text("1".into()),
                "expected values or errno for operation values, found text",
            ),
            (
                "raed /proc/stat",
                Entry::Text("".into()),
                "unknown operation",
            ),
            ("read", Entry::Text("".into()), "expected a key"),
            ("read ", Entry::Text("".into()), "expected a key"),
        ];
        for (key, entry, want) in bad {
            let got = check_entry(key, &entry).unwrap_err();
            assert!(got.starts_with(want), "{key}: {got}");
        }
    }

    #[test]
    fn parser_messages_are_short_and_escaped() {
        let long = format!(
            "{{\"entries\":{{\"k\":{{\"\\u001b{}\":1}}}}}}",
            "x".repeat(100_000)
        );
        let err = serde_json::from_str::<Frame>(&long).unwrap_err();
        let shown = json_error(&err);
        assert!(shown.len() < 250, "{shown}");
        assert!(
            shown.contains("\\x1b") && !shown.contains('\x1b'),
            "{shown}"
        );
        assert!(
            shown.ends_with(&format!("(column {})", err.column())),
            "{shown}"
        );
    }
}
