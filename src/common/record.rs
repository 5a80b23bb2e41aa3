//! Recordings: the raw kernel inputs of a run, written by `--record FILE` and
//! rendered again by `--replay FILE`.
//!
//! The format is specified in `docs/recording.md`, included here:
//!
#![doc = include_str!("../../docs/recording.md")]

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::source::Uname;

#[cfg(test)]
mod end_tests;
mod load;
mod replay;
mod writer;

pub use replay::{Replay, ReplayError, replay_error};
pub use writer::{Recorder, RecordingError, recording_error};

/// The value of the header's `format` field.
pub const FORMAT_NAME: &str = "hwstat-recording";
/// The format version this build writes: a recording of this version
/// promises an [`EndLine`] after its last frame.
pub const FORMAT_VERSION: u32 = 2;
/// The version written before the end line, still read: a file of it has
/// no end line, and its end is not checked.
pub const FORMAT_VERSION_1: u32 = 1;

/// The first line of a recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Always [`FORMAT_NAME`].
    pub format: String,
    /// Always [`FORMAT_VERSION`] for files this build writes; a reader
    /// also reads [`FORMAT_VERSION_1`].
    pub version: u32,
    /// The tool that recorded (`iostat-rs`, `vcpustat`, `cxlstat`).
    pub tool: String,
    /// The command line it was recorded with (without the program name).
    #[serde(default)]
    pub args: Vec<String>,
    /// The host identity.
    pub uname: Uname,
    /// Wall-clock start of the run, in nanoseconds since the Unix epoch.
    pub start_unix_ns: u64,
    /// Made from a whole tree of files (a test harness's fixtures), not by
    /// a run: an input the recording lacks does not exist there, and a
    /// replay answers it as absent (`ENOENT`) instead of refusing it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub whole_tree: bool,
}

impl Header {
    /// Whether a recording with this header ends with an [`EndLine`]
    /// when its writer ended it (from version 2): one without it was cut.
    pub fn promises_end(&self) -> bool {
        self.version >= FORMAT_VERSION
    }
}

/// The last line of a recording whose writer ended it (format version 2):
/// `{"end":{"frames":N}}`. A reader of version 1 refuses the header's
/// version before it could take this line for a damaged frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndLine {
    /// What the end says.
    pub end: End,
}

/// What an [`EndLine`] says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct End {
    /// How many frames the writer wrote before it: a reader that holds
    /// another number lost or gained one.
    pub frames: u64,
    /// Set when the run was refused before its first sample (then no
    /// frame comes before the end line): what it printed and its status,
    /// which a replay gives again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<Refused>,
}

/// A run refused before its first sample, as its recording's end line
/// keeps it: `{"status":1,"stderr":"vcpustat: ...\n"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refused {
    /// Its exit status, 1 to 255.
    pub status: i32,
    /// What it printed on standard error as it ended (its error line, or
    /// lines; empty for a run stopped by a signal before it began).
    pub stderr: String,
}

/// For serde: `whole_tree` is written only when true.
fn is_false(b: &bool) -> bool {
    !b
}

/// One recorded operation result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Entry {
    /// File contents that are valid UTF-8.
    Text(String),
    /// Other file contents, as lower-case hexadecimal.
    Hex(String),
    /// Directory entry names.
    List(Vec<String>),
    /// A symbolic link's target.
    Link(String),
    /// A device node's (major, minor).
    Device(u32, u32),
    /// A canonical path.
    Path(String),
    /// Whether a path is a directory.
    IsDir(bool),
    /// Numbers read from outside the file system.
    Values(Vec<u64>),
    /// The operation failed with this `errno`.
    Errno(i32),
}

/// One sample's worth of recorded operations.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Frame {
    /// Sample number, from 0.
    pub index: u64,
    /// Wall clock of the sample, in nanoseconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_unix_ns: Option<u64>,
    /// Monotonic time since the start of the run, in nanoseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_ns: Option<u64>,
    /// The operations, keyed by `"<op> <argument>"`.
    pub entries: BTreeMap<String, Entry>,
}

impl Entry {
    /// The entry's kind as the format spells it (`text`, `hex`, `list`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Entry::Text(_) => "text",
            Entry::Hex(_) => "hex",
            Entry::List(_) => "list",
            Entry::Link(_) => "link",
            Entry::Device(..) => "device",
            Entry::Path(_) => "path",
            Entry::IsDir(_) => "is_dir",
            Entry::Values(_) => "values",
            Entry::Errno(_) => "errno",
        }
    }
}

/// Decodes the lower- or upper-case hexadecimal of an [`Entry::Hex`];
/// `None` when it is not an even number of hexadecimal digits.
fn parse_hex(hex: &str) -> Option<Vec<u8>> {
    let digit = |b: u8| char::from(b).to_digit(16).map(|d| d as u8);
    let bytes = hex.as_bytes();
    if !bytes.len().is_multiple_of(2) {
        return None;
    }
    bytes
        .chunks_exact(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::scratch::Scratch;
    use crate::common::source::{RootFs, Source};
    use std::path::{Path, PathBuf};

    /// A fresh `hwstat-NAME-PID` directory in the temporary directory,
    /// with an empty `root/proc` for a source to read; removed when the
    /// test ends, also when it fails.
    pub(super) fn scratch(name: &str) -> Scratch {
        let dir = crate::common::scratch::scratch(name);
        std::fs::create_dir_all(dir.join("root/proc")).unwrap();
        dir
    }

    #[test]
    fn a_recording_replays_what_was_read_frame_by_frame() {
        let dir = scratch("rec");
        std::fs::write(dir.join("root/proc/uptime"), "1.00 1.00\n").unwrap();
        let file = dir.join("run.rec");
        let live = RootFs::new(dir.join("root"));
        let mut rec = Recorder::create(&file, Box::new(live), "test", &["-x".into()]).unwrap();
        assert_eq!(rec.read_string("/proc/uptime").unwrap(), "1.00 1.00\n");
        assert!(rec.read("/proc/absent").is_err());
        rec.now();
        assert!(rec.next_sample().unwrap());
        std::fs::write(dir.join("root/proc/uptime"), [0xffu8, 0x00]).unwrap();
        assert_eq!(rec.read("/proc/uptime").unwrap(), vec![0xff, 0x00]);
        let got = rec.values("perf:x", &mut || Ok(vec![7, 8])).unwrap();
        assert_eq!(got, vec![7, 8]);
        rec.finish().unwrap();

        let mut replay = Replay::open(&file, "test").unwrap();
        assert_eq!(replay.header().args, vec!["-x"]);
        assert!(replay.cut().is_none());
        assert_eq!(replay.read_string("/proc/uptime").unwrap(), "1.00 1.00\n");
        let err = replay.read("/proc/absent").unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
        assert!(replay.values("perf:x", &mut || unreachable!()).is_err());
        assert!(replay.next_sample().unwrap());
        assert_eq!(replay.read("/proc/uptime").unwrap(), vec![0xff, 0x00]);
        assert_eq!(
            replay.values("perf:x", &mut || unreachable!()).unwrap(),
            vec![7, 8]
        );
        // Frame 1 did not list /proc/absent again: frame 0's answer stands.
        assert!(replay.read("/proc/absent").is_err());
        assert!(!replay.next_sample().unwrap());
        assert!(replay.write_file("/proc/uptime", b"1\n").is_err());
    }

    #[test]
    fn finishing_twice_writes_the_last_frame_once() {
        let dir = scratch("fin2");
        let file = dir.join("run.rec");
        let live = RootFs::new(dir.join("root"));
        let mut rec = Recorder::create(&file, Box::new(live), "test", &[]).unwrap();
        rec.values("perf:x", &mut || Ok(vec![1])).unwrap();
        assert!(rec.next_sample().unwrap());
        rec.values("perf:x", &mut || Ok(vec![2])).unwrap();
        rec.finish().unwrap();
        rec.finish().unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "a header, two frames and the end line");
        assert_eq!(lines[3], r#"{"end":{"frames":2}}"#);
        let mut replay = Replay::open(&file, "test").unwrap();
        assert!(replay.next_sample().unwrap());
        assert!(!replay.next_sample().unwrap());
    }

    #[test]
    fn a_run_refused_before_its_first_sample_keeps_its_error_instead() {
        let dir = scratch("refuse");
        let live = || Box::new(RootFs::new(dir.join("root")));
        let lines = |file: &Path| -> Vec<String> {
            let text = std::fs::read_to_string(file).unwrap();
            text.lines().skip(1).map(String::from).collect()
        };
        // Refused after reading part of its first sample: the end line
        // alone, with what it printed and its status, none of the reads.
        let file = dir.join("refused.rec");
        let mut rec = Recorder::create(&file, live(), "test", &[]).unwrap();
        assert!(rec.read("/proc/absent").is_err());
        rec.refuse("test: no \"x\"\nsecond line\n", 127).unwrap();
        rec.refuse("again\n", 1).unwrap();
        rec.finish().unwrap();
        assert_eq!(
            lines(&file),
            [
                r#"{"end":{"frames":0,"refused":{"status":127,"stderr":"test: no \"x\"\nsecond line\n"}}}"#
            ]
        );
        // Failed once a frame was written, or after the samples were
        // finished: an end as any, which a replay replays.
        let file = dir.join("later.rec");
        let mut rec = Recorder::create(&file, live(), "test", &[]).unwrap();
        rec.values("perf:x", &mut || Ok(vec![1])).unwrap();
        assert!(rec.next_sample().unwrap());
        rec.refuse("test: failed\n", 1).unwrap();
        assert_eq!(lines(&file)[1], r#"{"end":{"frames":1}}"#);
        let file = dir.join("finished.rec");
        let mut rec = Recorder::create(&file, live(), "test", &[]).unwrap();
        rec.values("perf:x", &mut || Ok(vec![1])).unwrap();
        rec.finish().unwrap();
        rec.refuse("test: chart failed\n", 1).unwrap();
        assert_eq!(lines(&file)[1], r#"{"end":{"frames":1}}"#);
        // Status 0 is no refusal: the run ended in order.
        let file = dir.join("zero.rec");
        let mut rec = Recorder::create(&file, live(), "test", &[]).unwrap();
        rec.values("perf:x", &mut || Ok(vec![1])).unwrap();
        rec.refuse("", 0).unwrap();
        assert_eq!(lines(&file)[1], r#"{"end":{"frames":1}}"#);
    }

    #[test]
    fn each_frame_is_in_the_file_as_soon_as_its_sample_ends() {
        let dir = scratch("eager");
        let file = dir.join("run.rec");
        let live = RootFs::new(dir.join("root"));
        let mut rec = Recorder::create(&file, Box::new(live), "test", &[]).unwrap();
        let lines = || std::fs::read_to_string(&file).unwrap().lines().count();
        assert_eq!(lines(), 1, "the header is written at once");
        rec.values("perf:x", &mut || Ok(vec![1])).unwrap();
        assert!(rec.next_sample().unwrap());
        assert_eq!(lines(), 2, "frame 0 is written when sample 1 begins");
        // Stopped before sample 1 read anything: no empty frame is added,
        // and the end line counts the one frame written.
        rec.finish().unwrap();
        assert_eq!(lines(), 3);
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.ends_with("}\n{\"end\":{\"frames\":1}}\n"), "{text}");
        let replay = Replay::open(&file, "test").unwrap();
        assert!(replay.cut().is_none());
    }

    #[test]
    fn values_into_is_recorded_and_replayed_like_values() {
        let dir = scratch("recinto");
        let file = dir.join("run.rec");
        let live = RootFs::new(dir.join("root"));
        let mut rec = Recorder::create(&file, Box::new(live), "test", &[]).unwrap();
        let mut buf = vec![99];
        rec.values_into("perf:y", &mut buf, &mut |b: &mut Vec<u64>| {
            b.extend_from_slice(&[4, 5, 6]);
            Ok(())
        })
        .unwrap();
        assert_eq!(buf, [4, 5, 6]);
        rec.finish().unwrap();

        let replay = Replay::open(&file, "test").unwrap();
        let mut out = vec![1, 2];
        replay
            .values_into("perf:y", &mut out, &mut |_: &mut Vec<u64>| unreachable!())
            .unwrap();
        assert_eq!(out, [4, 5, 6]);
        assert!(
            replay
                .values_into("perf:z", &mut out, &mut |_: &mut Vec<u64>| unreachable!())
                .is_err()
        );
    }

    /// A recording of `frames` frames, each reading `/proc/uptime` as
    /// `N.00` and a 64 kB `/proc/pad` (more than a reader buffers), written
    /// in text to `dir/name`.
    fn uptime_recording(dir: &Path, name: &str, frames: usize) -> PathBuf {
        let file = dir.join(name);
        let pad = "x".repeat(64 << 10);
        let mut text = format!("{HEADER}\n");
        for i in 0..frames {
            text += &format!(
                "{{\"index\":{i},\"entries\":{{\"read /proc/uptime\":{{\"text\":\"{i}.00\"}},\
                 \"read /proc/pad\":{{\"text\":\"{pad}\"}}}}}}\n"
            );
        }
        std::fs::write(&file, text).unwrap();
        file
    }

    /// The `/proc/uptime` of each frame left in `replay`, the current one first.
    fn uptimes_replayed(replay: &mut Replay) -> Vec<String> {
        let mut seen = vec![replay.read_string("/proc/uptime").unwrap()];
        while replay.next_sample().unwrap() {
            seen.push(replay.read_string("/proc/uptime").unwrap());
        }
        seen
    }

    #[test]
    fn a_recording_file_is_replayed_as_it_was_when_checked() {
        let dir = scratch("streamed");
        // Frames appended after the check are not replayed.
        let file = uptime_recording(&dir, "grows.rec", 3);
        let mut replay = Replay::open(&file, "test").unwrap();
        let more = uptime_recording(&dir, "more.rec", 5);
        std::fs::copy(&more, &file).unwrap();
        assert_eq!(uptimes_replayed(&mut replay), ["0.00", "1.00", "2.00"]);
        // A file cut during the replay is an error naming it, not an end.
        let file = uptime_recording(&dir, "cut.rec", 3);
        let mut replay = Replay::open(&file, "test").unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        let two_lines = text
            .lines()
            .take(2)
            .map(|l| format!("{l}\n"))
            .collect::<String>();
        std::fs::write(&file, two_lines).unwrap();
        let err = replay.next_sample().unwrap_err().to_string();
        assert!(err.starts_with(&format!("{}:", file.display())), "{err}");
        assert!(
            err.contains(": the file holds 1 of the 3 frames it held when it was checked"),
            "{err}"
        );
    }

    #[test]
    fn a_fifo_recording_is_replayed_as_it_comes_and_checked_frame_by_frame() {
        let dir = scratch("fifostream");
        let text = std::fs::read_to_string(uptime_recording(&dir, "run.rec", 2)).unwrap();
        let lines: Vec<String> = text.lines().map(|l| format!("{l}\n")).collect();
        let fifo = dir.join("run.fifo");
        crate::common::user_file::mkfifo(&fifo);
        let (opened, told) = std::sync::mpsc::channel::<()>();
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                use std::io::Write;
                let mut out = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
                out.write_all((lines[0].clone() + &lines[1]).as_bytes())
                    .unwrap();
                // The replay serves the first frame before the rest is
                // written (or, reading to the end first, waits for it).
                let streamed = told
                    .recv_timeout(std::time::Duration::from_secs(10))
                    .is_ok();
                out.write_all(lines[2].as_bytes()).unwrap();
                out.write_all(b"{\"index\":2,\"entries\":{\"read /proc/uptime\":7}}\n")
                    .unwrap();
                streamed
            })
        };
        let mut replay = Replay::open(&fifo, "test").unwrap();
        assert_eq!(replay.read_string("/proc/uptime").unwrap(), "0.00");
        opened.send(()).unwrap();
        assert!(replay.next_sample().unwrap());
        assert_eq!(replay.read_string("/proc/uptime").unwrap(), "1.00");
        let err = replay.next_sample().unwrap_err().to_string();
        let at = format!("{}:4: frame 2: not a recording frame", fifo.display());
        assert!(err.starts_with(&at), "{err}");
        assert!(
            writer.join().unwrap(),
            "the whole FIFO was read before a frame was served"
        );
    }

    #[test]
    fn a_fifo_cut_short_is_told_at_its_end() {
        let dir = scratch("fifocut");
        let text = std::fs::read_to_string(uptime_recording(&dir, "run.rec", 3)).unwrap();
        let cut = &text[..text.len() - 10];
        let fifo = dir.join("run.fifo");
        crate::common::user_file::mkfifo(&fifo);
        let writer = {
            let (fifo, cut) = (fifo.clone(), cut.to_string());
            std::thread::spawn(move || std::fs::write(fifo, cut).unwrap())
        };
        let mut replay = Replay::open(&fifo, "test").unwrap();
        assert!(replay.cut().is_none(), "not known before the end");
        assert_eq!(uptimes_replayed(&mut replay), ["0.00", "1.00"]);
        writer.join().unwrap();
        let warning = replay.cut().expect("told at the end");
        assert!(
            warning.contains("the last frame (line 4) is incomplete"),
            "{warning}"
        );
        // Nothing but a header and a line cut short: no sample at all.
        let writer = {
            let (fifo, cut) = (fifo.clone(), text[..HEADER.len() + 20].to_string());
            std::thread::spawn(move || std::fs::write(fifo, cut).unwrap())
        };
        let err = Replay::open(&fifo, "test").err().unwrap().to_string();
        writer.join().unwrap();
        assert!(
            err.ends_with(":2: the recording holds no complete sample (line 2 is cut short)"),
            "{err}"
        );
    }

    /// A version-1 header, which promises no end line.
    pub(super) const HEADER: &str = r#"{"format":"hwstat-recording","version":1,"tool":"test","args":[],"uname":{"sysname":"Linux","nodename":"h","release":"6.1","version":"","machine":"x86_64"},"start_unix_ns":5}"#;

    fn open_text(dir: &Path, text: &str) -> Result<Replay, String> {
        let file = dir.join("t.rec");
        std::fs::write(&file, text).unwrap();
        Replay::open(&file, "test").map_err(|e| e.to_string())
    }

    #[test]
    fn bad_recordings_are_refused_with_the_file_and_line() {
        let dir = scratch("badrec");
        let frame = r#"{"index":0,"entries":{"read /proc/stat":{"text":"cpu 1\n"}}}"#;
        let cases = [
            ("", "t.rec:1: empty file"),
            (
                "{\"format\":\"other\"}\n",
                "t.rec:1: format is \"other\", expected",
            ),
            ("not json\n", "t.rec:1: not a recording header"),
            (
                &format!("{HEADER}\n"),
                "t.rec:2: the recording holds no sample",
            ),
            (
                &format!(
                    "{HEADER}\n{frame}\n{{\"index\":1,\"entries\":{{\"read /proc/stat\":{{\"list\":[]}}}}}}\n"
                ),
                "t.rec:3: frame 1: entry \"read /proc/stat\": expected text, hex or errno for operation read, found list",
            ),
            (
                &format!(
                    "{HEADER}\n{{\"index\":0,\"entries\":{{\"read /x\":{{\"hex\":\"zz\"}}}}}}\n"
                ),
                "t.rec:2: frame 0: entry \"read /x\": hex \"zz\" is not",
            ),
            (
                &format!("{HEADER}\n{{\"index\":0,\"entries\":{{\"read /x\":{{\"text\":5}}}}}}\n"),
                "t.rec:2: frame 0: not a recording frame: invalid type: integer `5`",
            ),
            (
                &format!(
                    "{HEADER}\n{{\"index\":0,\"entries\":{{\"read /x\":{{\"text\":\"\\udc80\"}}}}}}\n"
                ),
                "t.rec:2: frame 0: not a recording frame:",
            ),
            (
                &format!(
                    "{HEADER}\n{{\"index\":0,\"entries\":{{\"read /x\":{{\"text\":\"\u{1}\"}}}}}}\n"
                ),
                "t.rec:2: frame 0: not a recording frame:",
            ),
            (
                &format!(
                    "{HEADER}\n{frame}\n{{\"index\":1,\"entries\":{{\"read /x\":{{\"errno\":0}}}}}}\n{frame}\n"
                ),
                "t.rec:3: frame 1: entry \"read /x\": errno 0 is not an error number",
            ),
            (
                &format!(
                    "{HEADER}\n{{\"index\":0,\"entries\":{{\"reed /x\":{{\"text\":\"\"}}}}}}\n"
                ),
                "t.rec:2: frame 0: entry \"reed /x\": unknown operation",
            ),
            (
                &format!("{HEADER}\ngarbage\n{frame}\n"),
                "t.rec:2: frame 0: not a recording frame",
            ),
            // A frame repeated, moved or left out.
            (
                &format!("{HEADER}\n{frame}\n{frame}\n"),
                "t.rec:3: frame 1: index 0, expected 1: frames are numbered 0, 1, 2, ... in file \
                 order (a frame repeated, moved or left out)",
            ),
            (
                &format!(
                    "{HEADER}\n{}\n",
                    frame.replace("\"index\":0", "\"index\":1")
                ),
                "t.rec:2: frame 0: index 1, expected 0",
            ),
        ];
        for (text, want) in cases {
            // Byte 1 stands for a byte that is not UTF-8.
            let bytes: Vec<u8> = text
                .bytes()
                .map(|b| if b == 1 { 0xff } else { b })
                .collect();
            let file = dir.join("t.rec");
            std::fs::write(&file, &bytes).unwrap();
            let err = Replay::open(&file, "test").err().unwrap().to_string();
            assert!(err.contains(want), "want {want:?}, got {err:?}");
            assert!(err.starts_with(&file.display().to_string()), "{err}");
            assert_eq!(err.lines().count(), 1, "{err}");
        }
    }

    #[test]
    fn a_recording_of_another_tool_names_the_tool() {
        let dir = scratch("othertool");
        let frame = r#"{"index":0,"entries":{}}"#;
        let err = open_text(
            &dir,
            &format!("{}\n{frame}\n", HEADER.replace("\"test\"", "\"vcpustat\"")),
        )
        .err()
        .unwrap();
        assert!(
            err.ends_with("t.rec was recorded by vcpustat, not test"),
            "{err}"
        );
        let dtl = "{\"format\":\"vcpustat-dtl\",\"version\":1}\n\u{0}\u{1}";
        let err = open_text(&dir, dtl).err().unwrap();
        assert!(
            err.ends_with("t.rec was recorded by vcpustat trace record, not test"),
            "{err}"
        );
        let forged = HEADER.replace("\"test\"", "\"\\u001b[2Jx\"");
        let err = open_text(&dir, &format!("{forged}\n{frame}\n"))
            .err()
            .unwrap();
        assert!(
            err.ends_with("was recorded by \\x1b[2Jx, not test"),
            "{err}"
        );
    }

    /// Every frame of `frames` replayed: the answers to `keys`, per sample.
    fn answers(mut replay: Replay, keys: &[&str]) -> Vec<Vec<String>> {
        let mut all = Vec::new();
        loop {
            let mut sample: Vec<String> = keys
                .iter()
                .map(|k| format!("{:?}", replay.read(k).map_err(|e| e.raw_os_error())))
                .collect();
            sample.push(format!("{:?} {:?}", replay.now(), replay.elapsed()));
            all.push(sample);
            if !replay.next_sample().unwrap() {
                return all;
            }
        }
    }

    fn header() -> Header {
        serde_json::from_str(HEADER).unwrap()
    }

    #[test]
    fn frames_that_leave_out_unchanged_keys_replay_as_full_frames() {
        let keys = ["/a", "/b", "/c", "/gone"];
        let value = |k: &str, i: u64| match k {
            "/a" => Entry::Text(format!("a{i}")),
            "/b" => Entry::Text(format!("b{}", i / 3)),
            "/c" => Entry::Hex("00ff".into()),
            _ if i < 4 => Entry::Text("here".into()),
            _ => Entry::Errno(libc::ENOENT),
        };
        let full: Vec<Frame> = (0..10)
            .map(|i| Frame {
                index: i,
                time_unix_ns: (i % 4 != 1).then_some(1000 + i),
                elapsed_ns: Some(i * 7),
                entries: keys
                    .iter()
                    .map(|k| (format!("read {k}"), value(k, i)))
                    .collect(),
            })
            .collect();
        // The same samples, each key only in frames where it changed.
        let mut delta = full.clone();
        for i in (1..delta.len()).rev() {
            let earlier = &full[i - 1].entries;
            delta[i].entries.retain(|k, v| earlier.get(k) != Some(v));
        }
        assert!(delta[5].entries.len() < full[5].entries.len());
        let from_full = answers(Replay::from_parts(header(), full), &keys);
        let from_delta = answers(Replay::from_parts(header(), delta), &keys);
        assert_eq!(from_full.len(), 10);
        assert_eq!(from_full, from_delta);
        // A frame without a wall clock takes the latest earlier one.
        assert!(
            from_full[1][4].contains("tv_nsec: 1000 }"),
            "{:?}",
            from_full[1]
        );
        assert!(
            from_full[5][4].contains("tv_nsec: 1004 }"),
            "{:?}",
            from_full[5]
        );
        assert!(
            from_full[6][4].contains("tv_nsec: 1006 }"),
            "{:?}",
            from_full[6]
        );
    }

    #[test]
    fn an_input_the_recording_does_not_hold_fails_the_check_naming_it() {
        let frame = || Frame {
            entries: BTreeMap::from([
                ("read /x".to_string(), Entry::Text("v".into())),
                ("read /gone".to_string(), Entry::Errno(libc::ENOENT)),
                ("isdir /d".to_string(), Entry::IsDir(false)),
            ]),
            ..Frame::default()
        };
        let mut header = header();
        header.args = [
            "--sysroot",
            "/r",
            "--record=/f",
            "-x",
            "--record",
            "/g",
            "sda",
        ]
        .map(String::from)
        .to_vec();
        let replay = Replay::from_parts(header.clone(), vec![frame()]);
        // What was recorded, failures and absent directories included.
        assert!(replay.read("/x").is_ok());
        assert!(replay.read("/gone").is_err() && !replay.is_dir("/d"));
        assert!(replay.check_answered().is_ok());
        // The first input never recorded is named, with the options that
        // decided the recorded ones.
        assert!(!replay.is_dir("/sys/block/sdb"));
        assert!(replay.read("/other").is_err());
        let err = replay.check_answered().unwrap_err().to_string();
        assert_eq!(
            err,
            "the recording does not hold `isdir /sys/block/sdb`, which these options read: the \
             recorded run (`test -x sda`) did not read it; replay with options that read what it \
             read (the same devices, partitions and events)"
        );
        // Names from the recording (its options, device names it listed)
        // reach the message escaped: no control character gets through.
        let mut hostile = header.clone();
        hostile.args = vec!["-x\u{1b}[2J".into()];
        let replay = Replay::from_parts(hostile, vec![frame()]);
        assert!(replay.read("/sys/block/a\nb\u{1b}]0;t\u{7}/stat").is_err());
        let err = replay.check_answered().unwrap_err().to_string();
        assert!(!err.chars().any(char::is_control), "{err:?}");
        assert!(
            err.contains("`read /sys/block/a\\nb\\x1b]0;t\\x07/stat`"),
            "{err}"
        );
        assert!(err.contains("(`test -x\\x1b[2J`)"), "{err}");
        // A recording made from a whole tree of files: what it lacks is absent.
        header.whole_tree = true;
        let tree = Replay::from_parts(header, vec![frame()]);
        let err = tree.read("/other").unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
        assert!(!tree.is_dir("/sys/block/sdb"));
        assert!(tree.check_answered().is_ok());
    }

    #[test]
    fn a_last_line_cut_short_is_left_out_with_a_warning() {
        let dir = scratch("cut");
        let frames: Vec<String> = (0..3)
            .map(|i| format!(r#"{{"index":{i},"entries":{{"read /x":{{"text":"v{i}\n"}}}}}}"#))
            .collect();
        let whole = format!("{HEADER}\n{}\n", frames.join("\n"));
        let last_start = whole.len() - frames[2].len() - 1;
        for cut in [last_start + 1, last_start + 10, whole.len() - 2] {
            let replay = open_text(&dir, &whole[..cut]).unwrap();
            let warning = replay.cut().unwrap().to_string();
            assert!(
                warning.contains("t.rec: the last frame (line 4) is incomplete"),
                "{warning}"
            );
            let got = answers(replay, &["/x"]);
            assert_eq!(got.len(), 2, "cut at {cut}");
            assert_eq!(got[1][0], "Ok([118, 49, 10])");
        }
        // Zeros after a power loss are a cut; other damage at the end is not.
        let zeros = format!("{}\0\0\0", &whole[..last_start + 12]);
        assert!(open_text(&dir, &zeros).unwrap().cut().is_some());
        let damaged = format!("{}x}}", &whole[..last_start + 11]);
        let err = open_text(&dir, &damaged).err().unwrap();
        assert!(
            err.contains("t.rec:4: frame 2: not a recording frame"),
            "{err}"
        );
        // Cut just before the last newline, the frame is complete.
        let replay = open_text(&dir, &whole[..whole.len() - 1]).unwrap();
        assert!(replay.cut().is_none());
        assert_eq!(answers(replay, &["/x"]).len(), 3);
        // A cut line that is not the last one is damage, not a cut.
        let err = open_text(&dir, &format!("{HEADER}\n{{\"index\":0,\n{}\n", frames[1]))
            .err()
            .unwrap();
        assert!(
            err.contains("t.rec:2: frame 0: not a recording frame"),
            "{err}"
        );
        // Nothing complete at all.
        let err = open_text(&dir, &format!("{HEADER}\n{{\"index\":0,\"ent"))
            .err()
            .unwrap();
        assert!(
            err.contains("t.rec:2: the recording holds no complete sample (line 2 is cut short)"),
            "{err}"
        );
    }

    #[test]
    fn values_are_traced_to_the_frame_and_line_that_holds_them() {
        let dir = scratch("origin");
        let frames = [
            r#"{"index":0,"entries":{"values k":{"values":[1]},"read /x":{"text":"a"}}}"#,
            r#"{"index":1,"entries":{"read /x":{"text":"b"}}}"#,
            r#"{"index":2,"entries":{"values k":{"values":[2]}}}"#,
        ];
        // A blank line counts in the line numbers, not in the frame numbers.
        let text = format!("{HEADER}\n{}\n\n{}\n{}\n", frames[0], frames[1], frames[2]);
        let mut replay = open_text(&dir, &text).unwrap();
        let file = dir.join("t.rec").display().to_string();
        let origin = |replay: &Replay| replay.values_origin("k");
        assert_eq!(
            origin(&replay),
            Some(format!("{file}:2: frame 0: entry \"values k\""))
        );
        assert_eq!(replay.values_origin("other"), None);
        // Left out of frame 1: still frame 0's entry.
        assert!(replay.next_sample().unwrap());
        assert_eq!(
            origin(&replay),
            Some(format!("{file}:2: frame 0: entry \"values k\""))
        );
        assert!(replay.next_sample().unwrap());
        assert_eq!(
            origin(&replay),
            Some(format!("{file}:5: frame 2: entry \"values k\""))
        );
        // Frames built in memory have no lines.
        let built = Replay::from_parts(
            serde_json::from_str(HEADER).unwrap(),
            vec![serde_json::from_str(frames[0]).unwrap()],
        );
        assert_eq!(
            built.values_origin("k").as_deref(),
            Some("the recording: frame 0: entry \"values k\"")
        );
        // Live sources have no recording.
        assert_eq!(RootFs::new(&dir).values_origin("k"), None);
    }
}
