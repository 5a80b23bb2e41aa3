//! Reading a recording file: the header, then every frame, each entry
//! checked against its operation, so that a damaged file is refused with
//! its line before anything is reported. A last line cut short (the run was
//! killed, the disk filled up) is left out and remembered, not refused, and
//! so is a missing end line (of version 2: killed between two lines); an
//! end line that miscounts the frames, or a line after it, is damage.
//!
//! A regular file is read twice: once to check it, then again frame by
//! frame as the replay goes, so a replay holds one frame at a time, not
//! the whole recording (a day at 1 s intervals is some 500 MB at 10
//! devices). A FIFO (`--replay <(zcat run.rec.gz)`) cannot be read twice:
//! it is read once, frame by frame, each frame checked as it comes, so a
//! damaged frame stops the replay there (after the reports before it) and
//! a last line cut short is known only at the end.

use std::fs::File;
use std::io::{self, BufReader, Seek, SeekFrom};
use std::os::fd::AsFd;
use std::path::Path;

use serde::Deserialize;

use super::replay::ReplayError;
use super::{
    EndLine, Entry, FORMAT_NAME, FORMAT_VERSION, FORMAT_VERSION_1, Frame, Header, Refused,
    parse_hex,
};
use crate::common::excerpt::{clip, excerpt};
use crate::common::signals::StopSignal;
use crate::common::user_file::{open_to_read, read_line_bounded};

/// The `format` of `vcpustat trace record` files, which `--replay` cannot read.
const DTL_FORMAT_NAME: &str = "vcpustat-dtl";

/// How much of a JSON parser's message an error shows (it may quote the
/// recording's text).
const MESSAGE_BYTES: usize = 160;

/// A recording opened and checked.
pub(super) struct Loaded {
    /// The first line.
    pub header: Header,
    /// Every complete frame, in file order.
    pub frames: Frames,
    /// How the file was cut, if it was (of a FIFO, known only at its
    /// end: [`Frames::cut`]).
    pub cut: Option<Cut>,
}

/// How a recording was cut (its writer killed, or out of space), and how
/// many complete frames it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Cut {
    /// What was cut.
    pub kind: CutKind,
    /// The complete frames before the cut.
    pub frames: usize,
}

/// Where a recording was cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CutKind {
    /// Its last line is incomplete (left out): a frame, or the end line.
    Line {
        /// The line's number.
        line: usize,
        /// Whether it began as an end line.
        end: bool,
    },
    /// It promised an end line ([`Header::promises_end`]) and has none
    /// after its last line.
    NoEnd {
        /// The number of its last line.
        line: usize,
    },
}

impl Cut {
    /// What a warning says about the cut, after the file's name.
    pub fn describe(&self) -> String {
        let what = match self.kind {
            CutKind::Line { line, end: false } => {
                format!("the last frame (line {line}) is incomplete")
            }
            CutKind::Line { line, end: true } => {
                format!("the end line (line {line}) is incomplete")
            }
            CutKind::NoEnd { line } => format!("no end line after line {line}"),
        };
        let frames = match self.frames {
            1 => "1 complete frame".to_string(),
            n => format!("{n} complete frames"),
        };
        format!("{what}: the recording was cut (killed, or out of space); replaying its {frames}")
    }
}

/// A frame and its line in the file (none for frames built in memory).
type Numbered = (Option<usize>, Frame);

/// The frames of a recording, in order, each with its line number in the
/// file (none for frames built in memory).
pub(super) enum Frames {
    /// Frames built in memory by a program.
    Held(std::vec::IntoIter<Numbered>),
    /// Frames read again from a checked regular file as they are asked
    /// for, no more than the check counted (a frame appended since is
    /// not replayed).
    Streamed {
        /// The file after its header.
        reader: FrameReader,
        /// How many of the frames checked are still to come.
        left: usize,
    },
    /// Frames read once from a FIFO as they are asked for, each checked
    /// as it comes.
    Piped {
        /// The FIFO after its header.
        reader: FrameReader,
        /// The first frame, read to know there is one.
        first: Option<Numbered>,
        /// How it was cut, once the end is reached.
        cut: Option<Cut>,
    },
}

impl Frames {
    /// From now on a FIFO's read that waits for its writer ends on a stop
    /// signal, and the frames with it (a regular file never waits).
    pub fn set_stop(&mut self, stop: &StopSignal) {
        if let Frames::Piped { reader, .. } = self {
            reader.reader.get_mut().stop = Some(stop.clone());
        }
    }

    /// How a FIFO was cut, once its end is reached.
    pub fn cut(&self) -> Option<Cut> {
        match self {
            Frames::Piped { cut, .. } => *cut,
            _ => None,
        }
    }

    /// The next frame and its line; `None` after the last. A streamed
    /// file that no longer reads as it did when checked (rewritten or cut
    /// during the replay) is an error naming the file.
    pub fn next(&mut self) -> Result<Option<Numbered>, ReplayError> {
        match self {
            Frames::Held(frames) => Ok(frames.next()),
            Frames::Piped { reader, first, cut } => {
                if let Some(first) = first.take() {
                    return Ok(Some(first));
                }
                if cut.is_some() {
                    return Ok(None);
                }
                match reader.next()? {
                    Read::Frame(line, frame) => Ok(Some((Some(line), frame))),
                    Read::Cut(kind) => {
                        *cut = Some(Cut {
                            kind,
                            frames: reader.frames,
                        });
                        Ok(None)
                    }
                    Read::End | Read::Stopped => Ok(None),
                }
            }
            Frames::Streamed { left: 0, .. } => Ok(None),
            Frames::Streamed { reader, left } => match reader.next()? {
                Read::Frame(line, frame) => {
                    *left -= 1;
                    Ok(Some((Some(line), frame)))
                }
                Read::Cut(_) | Read::End | Read::Stopped => Err(ReplayError::Format {
                    path: reader.path.clone(),
                    line: reader.number,
                    what: format!(
                        "the file holds {} of the {} frames it held when it was checked: it \
                         changed during the replay",
                        reader.frames,
                        reader.frames + *left
                    ),
                }),
            },
        }
    }
}

/// A recording's file as the frames are read from it: a FIFO's reads
/// wait for its writer, and end on a stop signal once one is set
/// ([`Frames::set_stop`]): a replay from a stalled `zcat` stops on Ctrl-C.
pub(super) struct Input {
    file: File,
    stop: Option<StopSignal>,
}

/// The error an [`Input`] read ends with on a stop signal.
#[derive(Debug, thiserror::Error)]
#[error("stopped while waiting for the recording")]
struct Stopped;

impl io::Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(stop) = &self.stop
            && !stop.wait_readable(self.file.as_fd())
        {
            return Err(io::Error::other(Stopped));
        }
        self.file.read(buf)
    }
}

/// The frames of a recording file, read one line at a time and checked.
pub(super) struct FrameReader {
    reader: BufReader<Input>,
    line: Vec<u8>,
    /// The number of the line read last (the header is line 1).
    number: usize,
    /// How many frames were read.
    frames: usize,
    /// Whether the file promises an end line ([`Header::promises_end`]).
    promises_end: bool,
    /// The number of the end line, once read.
    end_line: Option<usize>,
    /// What the end line says of a run refused before its first sample.
    refused: Option<Refused>,
    /// The file, as messages name it.
    path: String,
}

/// What the next line of a recording holds.
enum Read {
    /// A frame, checked, and its line number.
    Frame(usize, Frame),
    /// A last line cut short (the writer stopped in the middle of it), or
    /// no end line where the file promised one.
    Cut(CutKind),
    /// The end of the file (after its end line, if it promised one).
    End,
    /// A stop signal while a FIFO's read waited for its writer.
    Stopped,
}

impl FrameReader {
    /// Reads the frames of `reader`, which is past the header
    /// `header`.
    fn new(reader: BufReader<Input>, header: &Header, path: &str) -> FrameReader {
        FrameReader {
            reader,
            line: Vec::new(),
            number: 1,
            frames: 0,
            promises_end: header.promises_end(),
            end_line: None,
            refused: None,
            path: path.to_string(),
        }
    }

    fn bad(&self, what: String) -> ReplayError {
        ReplayError::Format {
            path: self.path.clone(),
            line: self.number,
            what,
        }
    }

    /// The next frame (blank lines are skipped), checked against its
    /// place in the file ([`check_frame`]); an end line is checked
    /// against the frames before it, and nothing may follow it.
    fn next(&mut self) -> Result<Read, ReplayError> {
        loop {
            let read = match read_line_bounded(&mut self.reader, &mut self.line) {
                Ok(read) => read,
                Err(e) if e.get_ref().is_some_and(|inner| inner.is::<Stopped>()) => {
                    return Ok(Read::Stopped);
                }
                Err(source) => {
                    return Err(ReplayError::Io {
                        path: self.path.clone(),
                        source,
                    });
                }
            };
            if read == 0 {
                if self.promises_end && self.end_line.is_none() {
                    return Ok(Read::Cut(CutKind::NoEnd { line: self.number }));
                }
                return Ok(Read::End);
            }
            self.number += 1;
            if self.line.trim_ascii().is_empty() {
                continue;
            }
            if let Some(end) = self.end_line {
                return Err(self.bad(format!(
                    "a line after the end line (line {end}), which closes the recording"
                )));
            }
            let complete = self.line.ends_with(b"\n");
            return match serde_json::from_slice::<Frame>(&self.line) {
                Ok(frame) => {
                    check_frame(&frame, self.frames)
                        .map_err(|what| self.bad(format!("frame {}: {what}", self.frames)))?;
                    self.frames += 1;
                    Ok(Read::Frame(self.number, frame))
                }
                // The last line, without its newline, ending too early (or
                // in the zeros a file system leaves after a power loss): the
                // writer stopped in the middle of it.
                Err(e) if !complete && (e.is_eof() || self.line.contains(&0)) => {
                    let end = self.line.trim_ascii_start().starts_with(b"{\"end\"");
                    Ok(Read::Cut(CutKind::Line {
                        line: self.number,
                        end,
                    }))
                }
                Err(e) => match self.end_of(&e)? {
                    true => {
                        self.end_line = Some(self.number);
                        continue;
                    }
                    false => Err(self.bad(format!(
                        "frame {}: not a recording frame: {}",
                        self.frames,
                        json_error(&e)
                    ))),
                },
            };
        }
    }

    /// Whether the line, which `err` says is not a frame, is an end line
    /// (of a file that promises one) whose count is the frames before it;
    /// one that records a refusal is kept ([`FrameReader::refused`]).
    fn end_of(&mut self, err: &serde_json::Error) -> Result<bool, ReplayError> {
        if !self.promises_end || err.is_eof() {
            return Ok(false);
        }
        let Ok(EndLine { end }) = serde_json::from_slice::<EndLine>(&self.line) else {
            return Ok(false);
        };
        if end.frames != self.frames as u64 {
            return Err(self.bad(format!(
                "the end line counts {} frames, the file holds {} before it (a frame lost or \
                 added)",
                end.frames, self.frames
            )));
        }
        if let Some(refused) = end.refused {
            if self.frames > 0 {
                return Err(self.bad(format!(
                    "the end line records a run refused before its first sample, after {} \
                     frames",
                    self.frames
                )));
            }
            if !is_refusal_status(refused.status, &refused.stderr) {
                return Err(self.bad(format!(
                    "the end line records a refused run's exit status as {}, expected one the \
                     tools end a refused run with (1, 2, 4, 126, 127, or 128 + a signal's \
                     number, with nothing printed)",
                    refused.status
                )));
            }
            self.refused = Some(refused);
        }
        Ok(true)
    }
}

/// Whether a run refused before its first sample can end with `status`
/// having printed `stderr`: an error (1), a usage error (2), too little
/// memory (4), a command cxlstat cannot run (126, 127), or a stop signal
/// N (128 + N), which prints nothing. Any other is a forged end line,
/// whose replay would pass for a crash (139) or a success.
fn is_refusal_status(status: i32, stderr: &str) -> bool {
    match status {
        1 | 2 | 4 | 126 | 127 => true,
        129..=192 => stderr.is_empty(),
        _ => false,
    }
}

/// Whether `line`, the header, is JSON its writer stopped writing in the
/// middle of (as a frame's is told, [`FrameReader::next`]): without its
/// newline, ending too early (or in the zeros a file system leaves after a
/// power loss).
fn is_cut_short(line: &[u8]) -> bool {
    !line.ends_with(b"\n")
        && (line.contains(&0)
            || serde_json::from_slice::<serde::de::IgnoredAny>(line).is_err_and(|e| e.is_eof()))
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
    let shown = crate::common::escape::path(path);
    let bad = |line: usize, what: String| ReplayError::Format {
        path: shown.clone(),
        line,
        what,
    };
    let io_err = |source| ReplayError::Io {
        path: shown.clone(),
        source,
    };
    let mut file = open_to_read(path).map_err(io_err)?;
    let regular = file.metadata().map_err(io_err)?.is_file();
    // Where the recording starts: 0, but for standard input (`-`) where
    // the shell left it.
    let start = if regular {
        file.stream_position().map_err(io_err)?
    } else {
        0
    };
    let mut reader = BufReader::new(Input { file, stop: None });
    let mut line = Vec::new();
    let header_bytes = read_line_bounded(&mut reader, &mut line).map_err(io_err)?;
    if header_bytes == 0 {
        return Err(bad(1, "empty file, expected a recording header".into()));
    }
    if is_cut_short(&line) {
        return Err(bad(
            1,
            "the header is incomplete: the recording was cut (killed, or out of space) before \
             its first sample"
                .into(),
        ));
    }
    let header = read_header(&line, tool).map_err(|what| match what {
        HeaderProblem::Format(what) => bad(1, what),
        HeaderProblem::OtherTool(recorded) => ReplayError::OtherTool {
            path: shown.clone(),
            recorded,
            tool: tool.to_string(),
        },
    })?;
    let mut checked = FrameReader::new(reader, &header, &shown);
    if !regular {
        return match checked.next()? {
            Read::Frame(number, frame) => Ok(Loaded {
                frames: Frames::Piped {
                    reader: checked,
                    first: Some((Some(number), frame)),
                    cut: None,
                },
                header,
                cut: None,
            }),
            Read::Cut(kind) => Err(no_sample(&shown, &header, Some(kind))),
            Read::End => Err(refused_or_no_sample(&shown, &header, checked.refused)),
            Read::Stopped => Err(no_sample(&shown, &header, Some(CutKind::NoEnd { line: 2 }))),
        };
    }
    let cut = loop {
        match checked.next()? {
            Read::Frame(..) => {}
            Read::Cut(kind) => {
                break Some(Cut {
                    kind,
                    frames: checked.frames,
                });
            }
            Read::End | Read::Stopped => break None,
        }
    };
    if checked.frames == 0 {
        return Err(match cut {
            Some(cut) => no_sample(&shown, &header, Some(cut.kind)),
            None => refused_or_no_sample(&shown, &header, checked.refused),
        });
    }
    let mut input = checked.reader.into_inner();
    input
        .file
        .seek(SeekFrom::Start(start + header_bytes as u64))
        .map_err(io_err)?;
    let frames = Frames::Streamed {
        left: checked.frames,
        reader: FrameReader::new(BufReader::new(input), &header, &shown),
    };
    Ok(Loaded {
        header,
        frames,
        cut,
    })
}

/// The error for a recording that ends, whole, without a frame: the
/// refusal its end line records, else why it holds no sample.
fn refused_or_no_sample(path: &str, header: &Header, refused: Option<Refused>) -> ReplayError {
    match refused {
        Some(refused) => ReplayError::Refused {
            path: path.to_string(),
            refused,
        },
        None => no_sample(path, header, None),
    }
}

/// The error for a recording without a complete frame: `cut` says where
/// a line was cut short; `None` is a file that ends after its header (or
/// after an end line that counts no frame and records no refusal). Each
/// says what its writer did, as far as the file tells.
fn no_sample(path: &str, header: &Header, cut: Option<CutKind>) -> ReplayError {
    let (line, what) = match cut {
        Some(CutKind::Line { line, end: false }) => (
            line,
            format!("the recording holds no complete sample (line {line} is cut short)"),
        ),
        Some(CutKind::Line { line, end: true }) => (
            line,
            format!(
                "the recording holds no sample, and its end line (line {line}) is cut short: \
                 its run ended before its first sample, and the disk filled up (or it was \
                 killed) as it wrote why"
            ),
        ),
        Some(CutKind::NoEnd { .. }) if header.promises_end() => (
            2,
            "the recording holds no sample and no end line: its run was killed (or out of \
             space) before its first sample, or refused there by an earlier version, which did \
             not record why"
                .to_string(),
        ),
        _ if !header.promises_end() => (
            2,
            "the recording holds no sample: its run ended before its first sample (refused, \
             stopped or killed), and a recording of version 1 does not say why"
                .to_string(),
        ),
        _ => (
            2,
            "the recording holds no sample: its end line counts none and records no refusal"
                .to_string(),
        ),
    };
    ReplayError::Format {
        path: path.to_string(),
        line,
        what,
    }
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
    if ![FORMAT_VERSION_1, FORMAT_VERSION].contains(&header.version) {
        return Err(HeaderProblem::Format(format!(
            "recording format version {} is not supported (this build reads \
             {FORMAT_VERSION_1} and {FORMAT_VERSION})",
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
