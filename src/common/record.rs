//! Recordings: the raw kernel inputs of a run, written by `--record FILE` and
//! rendered again by `--replay FILE`.
//!
//! # Format (version 1)
//!
//! A recording is a text file of JSON lines (NDJSON), so a run that is killed
//! keeps every finished sample and the file can be inspected with `jq`.
//!
//! * Line 1, the header:
//!   `{"format":"hwstat-recording","version":1,"tool":"iostat-rs","args":[...],
//!   "uname":{"sysname":..,"nodename":..,"release":..,"version":..,"machine":..},
//!   "start_unix_ns":N}`.
//! * Every further line is one sample (a *frame*):
//!   `{"index":K,"time_unix_ns":N,"elapsed_ns":N,"entries":{KEY: ENTRY, ...}}`.
//!   `time_unix_ns` is the wall clock the tool used for the sample and
//!   `elapsed_ns` the monotonic time since the start; either may be absent.
//! * A `KEY` is an operation and its argument separated by one space:
//!   `read /proc/diskstats`, `list /sys/block`, `link /sys/dev/block/8:0`,
//!   `devnum /dev/sda`, `realpath /dev/disk/by-id/x`, `isdir /sys/block`,
//!   `values perf:cxl_pmu_mem0.0/clock_ticks`.
//! * An `ENTRY` is one of `{"text":"..."}` (UTF-8 file contents),
//!   `{"hex":"0a1b.."}` (other file contents), `{"list":["sda","sdb"]}`,
//!   `{"link":"../x"}`, `{"device":[8,0]}`, `{"path":"/dev/sda"}`,
//!   `{"is_dir":true}`, `{"values":[1,2,3]}` or `{"errno":2}` (the operation
//!   failed with that `errno`).
//!
//! A frame holds what the tool read while taking that sample; reads made
//! before the first sample (discovery, CPU count) belong to frame 0. On
//! replay, a key missing from frame K is looked up in frames K-1, K-2, ... 0,
//! so a writer may leave out entries that did not change, and a recording can
//! be written by hand or by a test harness from a directory of fixture files.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use std::{cell::RefCell, fmt::Write as _};

use serde::{Deserialize, Serialize};

use super::source::{Source, Uname};

/// The value of the header's `format` field.
pub const FORMAT_NAME: &str = "hwstat-recording";
/// The format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// The first line of a recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Always [`FORMAT_NAME`].
    pub format: String,
    /// Always [`FORMAT_VERSION`] for files this build writes.
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

fn unix_ns(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

fn errno_of(err: &io::Error) -> i32 {
    err.raw_os_error().unwrap_or(match err.kind() {
        io::ErrorKind::NotFound => libc::ENOENT,
        io::ErrorKind::PermissionDenied => libc::EACCES,
        io::ErrorKind::InvalidData | io::ErrorKind::InvalidInput => libc::EINVAL,
        _ => libc::EIO,
    })
}

fn bytes_entry(data: &[u8]) -> Entry {
    match std::str::from_utf8(data) {
        Ok(text) => Entry::Text(text.to_string()),
        Err(_) => {
            let mut hex = String::with_capacity(data.len() * 2);
            for b in data {
                let _ = write!(hex, "{b:02x}");
            }
            Entry::Hex(hex)
        }
    }
}

/// A [`Source`] that passes everything through to another source and writes
/// what was read to a recording file, one frame per sample.
pub struct Recorder {
    inner: Box<dyn Source>,
    out: RefCell<BufWriter<File>>,
    frame: RefCell<Frame>,
}

impl Recorder {
    /// Creates `path` and writes the header; fails before any sampling if the
    /// file cannot be created.
    pub fn create(
        path: &Path,
        inner: Box<dyn Source>,
        tool: &str,
        args: &[String],
    ) -> io::Result<Recorder> {
        let file = File::create(path)?;
        let header = Header {
            format: FORMAT_NAME.to_string(),
            version: FORMAT_VERSION,
            tool: tool.to_string(),
            args: args.to_vec(),
            uname: inner.uname()?,
            start_unix_ns: unix_ns(inner.now()),
        };
        let mut out = BufWriter::new(file);
        serde_json::to_writer(&mut out, &header)?;
        out.write_all(b"\n")?;
        Ok(Recorder {
            inner,
            out: RefCell::new(out),
            frame: RefCell::new(Frame::default()),
        })
    }

    fn note<T>(&self, key: String, result: &io::Result<T>, entry: impl FnOnce(&T) -> Entry) {
        let entry = match result {
            Ok(value) => entry(value),
            Err(err) => Entry::Errno(errno_of(err)),
        };
        self.frame.borrow_mut().entries.insert(key, entry);
    }

    fn flush_frame(&self) -> io::Result<()> {
        let mut out = self.out.borrow_mut();
        serde_json::to_writer(&mut *out, &*self.frame.borrow())?;
        out.write_all(b"\n")?;
        out.flush()
    }
}

impl Source for Recorder {
    fn read_into(&self, path: &str, buf: &mut Vec<u8>) -> io::Result<()> {
        let result = self.inner.read_into(path, buf);
        self.note(format!("read {path}"), &result, |_| bytes_entry(buf));
        result
    }

    fn list_dir(&self, path: &str) -> io::Result<Vec<String>> {
        let result = self.inner.list_dir(path);
        self.note(format!("list {path}"), &result, |v| Entry::List(v.clone()));
        result
    }

    fn read_link(&self, path: &str) -> io::Result<String> {
        let result = self.inner.read_link(path);
        self.note(format!("link {path}"), &result, |v| Entry::Link(v.clone()));
        result
    }

    fn device_number(&self, path: &str) -> io::Result<(u32, u32)> {
        let result = self.inner.device_number(path);
        self.note(format!("devnum {path}"), &result, |&(a, b)| {
            Entry::Device(a, b)
        });
        result
    }

    fn canonicalize(&self, path: &str) -> io::Result<String> {
        let result = self.inner.canonicalize(path);
        self.note(format!("realpath {path}"), &result, |v| {
            Entry::Path(v.clone())
        });
        result
    }

    fn is_dir(&self, path: &str) -> bool {
        let result = self.inner.is_dir(path);
        self.frame
            .borrow_mut()
            .entries
            .insert(format!("isdir {path}"), Entry::IsDir(result));
        result
    }

    fn write_file(&self, path: &str, data: &[u8]) -> io::Result<()> {
        self.inner.write_file(path, data)
    }

    fn values(
        &self,
        key: &str,
        read: &mut dyn FnMut() -> io::Result<Vec<u64>>,
    ) -> io::Result<Vec<u64>> {
        let result = self.inner.values(key, read);
        self.note(format!("values {key}"), &result, |v| {
            Entry::Values(v.clone())
        });
        result
    }

    fn uname(&self) -> io::Result<Uname> {
        self.inner.uname()
    }

    fn now(&self) -> SystemTime {
        let now = self.inner.now();
        self.frame
            .borrow_mut()
            .time_unix_ns
            .get_or_insert(unix_ns(now));
        now
    }

    fn elapsed(&self) -> Duration {
        let elapsed = self.inner.elapsed();
        self.frame
            .borrow_mut()
            .elapsed_ns
            .get_or_insert(elapsed.as_nanos() as u64);
        elapsed
    }

    fn next_sample(&mut self) -> io::Result<bool> {
        self.flush_frame()?;
        let index = self.frame.borrow().index + 1;
        *self.frame.borrow_mut() = Frame {
            index,
            ..Frame::default()
        };
        self.inner.next_sample()
    }

    fn is_live(&self) -> bool {
        self.inner.is_live()
    }

    fn keep_open(&self, path: &str) {
        self.inner.keep_open(path);
    }

    fn finish(&mut self) -> io::Result<()> {
        self.flush_frame()?;
        self.frame.borrow_mut().entries.clear();
        self.inner.finish()
    }
}

/// A [`Source`] that serves a recording, one frame per sample, without sleeping.
pub struct Replay {
    header: Header,
    frames: Vec<Frame>,
    current: usize,
}

/// Why a recording could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The recording's path.
        path: String,
        /// The underlying error.
        source: io::Error,
    },
    /// A line is not what the format expects.
    #[error("{path}:{line}: {what}")]
    Format {
        /// The recording's path.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What was wrong.
        what: String,
    },
}

impl Replay {
    /// Loads a recording written by [`Recorder`] or by hand in the same format.
    pub fn open(path: &Path) -> Result<Replay, ReplayError> {
        let shown = path.display().to_string();
        let io_err = |source| ReplayError::Io {
            path: shown.clone(),
            source,
        };
        let reader = BufReader::new(File::open(path).map_err(io_err)?);
        let mut lines = reader.lines().enumerate();
        let bad = |line: usize, what: String| ReplayError::Format {
            path: shown.clone(),
            line,
            what,
        };
        let (_, first) = lines
            .next()
            .ok_or_else(|| bad(1, "empty file, expected a recording header".into()))?;
        let first = first.map_err(io_err)?;
        let header: Header = serde_json::from_str(&first)
            .map_err(|e| bad(1, format!("not a recording header: {e}")))?;
        if header.format != FORMAT_NAME {
            return Err(bad(
                1,
                format!("format is {:?}, expected {FORMAT_NAME:?}", header.format),
            ));
        }
        if header.version != FORMAT_VERSION {
            return Err(bad(
                1,
                format!(
                    "recording format version {} is not supported (this build reads {FORMAT_VERSION})",
                    header.version
                ),
            ));
        }
        let mut frames = Vec::new();
        for (n, line) in lines {
            let line = line.map_err(io_err)?;
            if line.trim().is_empty() {
                continue;
            }
            let frame: Frame = serde_json::from_str(&line)
                .map_err(|e| bad(n + 1, format!("not a recording frame: {e}")))?;
            frames.push(frame);
        }
        if frames.is_empty() {
            return Err(bad(2, "the recording holds no sample".into()));
        }
        Ok(Replay {
            header,
            frames,
            current: 0,
        })
    }

    /// The recording's header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Builds a replay from frames in memory (for tests and converters).
    pub fn from_parts(header: Header, frames: Vec<Frame>) -> Replay {
        Replay {
            header,
            frames,
            current: 0,
        }
    }

    fn lookup(&self, key: &str) -> Option<&Entry> {
        self.frames[..=self.current]
            .iter()
            .rev()
            .find_map(|f| f.entries.get(key))
    }

    fn fetch(&self, op: &str, arg: &str) -> io::Result<&Entry> {
        match self.lookup(&format!("{op} {arg}")) {
            Some(Entry::Errno(errno)) => Err(io::Error::from_raw_os_error(*errno)),
            Some(entry) => Ok(entry),
            None => Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{arg}: not in the recording"),
            )),
        }
    }
}

fn wrong_kind(arg: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{arg}: recorded entry has the wrong kind"),
    )
}

fn parse_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

impl Source for Replay {
    fn read_into(&self, path: &str, buf: &mut Vec<u8>) -> io::Result<()> {
        buf.clear();
        match self.fetch("read", path)? {
            Entry::Text(text) => buf.extend_from_slice(text.as_bytes()),
            Entry::Hex(hex) => buf.extend(parse_hex(hex).ok_or_else(|| wrong_kind(path))?),
            _ => return Err(wrong_kind(path)),
        }
        Ok(())
    }

    fn list_dir(&self, path: &str) -> io::Result<Vec<String>> {
        match self.fetch("list", path)? {
            Entry::List(names) => Ok(names.clone()),
            _ => Err(wrong_kind(path)),
        }
    }

    fn read_link(&self, path: &str) -> io::Result<String> {
        match self.fetch("link", path)? {
            Entry::Link(target) => Ok(target.clone()),
            _ => Err(wrong_kind(path)),
        }
    }

    fn device_number(&self, path: &str) -> io::Result<(u32, u32)> {
        match self.fetch("devnum", path)? {
            Entry::Device(major, minor) => Ok((*major, *minor)),
            _ => Err(wrong_kind(path)),
        }
    }

    fn canonicalize(&self, path: &str) -> io::Result<String> {
        match self.fetch("realpath", path)? {
            Entry::Path(real) => Ok(real.clone()),
            _ => Err(wrong_kind(path)),
        }
    }

    fn is_dir(&self, path: &str) -> bool {
        matches!(self.fetch("isdir", path), Ok(Entry::IsDir(true)))
    }

    fn write_file(&self, path: &str, _data: &[u8]) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::ReadOnlyFilesystem,
            format!("{path}: a replay cannot write"),
        ))
    }

    fn values(
        &self,
        key: &str,
        _read: &mut dyn FnMut() -> io::Result<Vec<u64>>,
    ) -> io::Result<Vec<u64>> {
        match self.fetch("values", key)? {
            Entry::Values(values) => Ok(values.clone()),
            _ => Err(wrong_kind(key)),
        }
    }

    fn uname(&self) -> io::Result<Uname> {
        Ok(self.header.uname.clone())
    }

    fn now(&self) -> SystemTime {
        let ns = self.frames[..=self.current]
            .iter()
            .rev()
            .find_map(|f| f.time_unix_ns)
            .unwrap_or(self.header.start_unix_ns);
        UNIX_EPOCH + Duration::from_nanos(ns)
    }

    fn elapsed(&self) -> Duration {
        Duration::from_nanos(self.frames[self.current].elapsed_ns.unwrap_or(0))
    }

    fn next_sample(&mut self) -> io::Result<bool> {
        if self.current + 1 < self.frames.len() {
            self.current += 1;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    fn is_live(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::source::RootFs;

    #[test]
    fn a_recording_replays_what_was_read_frame_by_frame() {
        let dir = std::env::temp_dir().join(format!("hwstat-rec-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("root/proc")).unwrap();
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

        let mut replay = Replay::open(&file).unwrap();
        assert_eq!(replay.header().args, vec!["-x"]);
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
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn bad_recordings_are_refused_with_the_line() {
        let dir = std::env::temp_dir().join(format!("hwstat-badrec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("bad.rec");
        std::fs::write(&file, "{\"format\":\"other\"}\n").unwrap();
        let err = Replay::open(&file).err().unwrap().to_string();
        assert!(err.contains("bad.rec:1:"), "{err}");
        std::fs::write(&file, "").unwrap();
        assert!(Replay::open(&file).is_err());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
