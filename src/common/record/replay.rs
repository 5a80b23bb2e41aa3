//! Replaying a recording: [`Replay`] serves one frame per sample.
//!
//! A frame may leave out what did not change since an earlier frame, so the
//! replay keeps the latest entry of every key and updates it as each frame
//! is applied: a sample costs the size of its own frame, whatever the
//! number of frames before it, and a recording file is read a frame at a
//! time ([`super::load`]).

use std::cell::OnceCell;
use std::collections::HashMap;
use std::io;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::load::{Cut, Frames, load};
use super::{Entry, Frame, Header, Refused, parse_hex};
use crate::common::escape::text;
use crate::common::excerpt::{clip, excerpt};
use crate::common::signals::StopSignal;
use crate::common::source::{Source, Uname, is_out_of_descriptors};
use crate::common::stderr;

/// Why a recording could not be replayed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The file could not be read (worded as a [`super::Recorder`]'s
    /// failures are: `cannot create recording PATH: ...`).
    #[error("cannot read recording {path}: {source}")]
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
    /// The recording is of a run refused before its first sample: a tool
    /// prints what that run printed and exits with its status
    /// ([`crate::common::cli::OpenError`]); this message is for others.
    #[error(
        "{path}: the recorded run was refused before its first sample, with status {}",
        refused.status
    )]
    Refused {
        /// The recording's path.
        path: String,
        /// What its end line keeps of the refusal.
        refused: Refused,
    },
    /// The recording holds a single sample, and the replay's interval
    /// makes the first sample only start the run
    /// ([`crate::common::interval::Schedule::first_starts_only`]): it has
    /// nothing to report.
    #[error(
        "{origin} is the recording's only sample, and a report of an interval takes two (the \
         first only starts the run): replay it without an interval to report that sample"
    )]
    OnlySample {
        /// Where the sample is: `FILE:LINE: frame 0`.
        origin: String,
    },
    /// The recording was made by another tool.
    #[error(
        "{path} was recorded by {}, not {tool}",
        crate::common::excerpt::clip(recorded, 40)
    )]
    OtherTool {
        /// The recording's path.
        path: String,
        /// The tool named in its header.
        recorded: String,
        /// The tool asked to replay it.
        tool: String,
    },
}

/// The [`ReplayError`] inside an I/O error that a [`Replay`] returned
/// (through [`Source::next_sample`]: a frame that cannot be read), if it
/// is one.
pub fn replay_error(err: &io::Error) -> Option<&ReplayError> {
    err.get_ref()?.downcast_ref()
}

/// A [`Source`] that serves a recording, one frame per sample, without sleeping.
pub struct Replay {
    header: Header,
    /// The frames after the current one.
    upcoming: Frames,
    /// Every key's entry in the latest frame that has it, up to the current
    /// one, with where that frame is ([`Origin`]).
    latest: HashMap<String, (Entry, Origin)>,
    /// How many frames have been applied (the current one is the last).
    applied: usize,
    /// Where the current frame is.
    current: Origin,
    /// The latest recorded wall clock, up to the current frame.
    time_unix_ns: u64,
    /// The current frame's monotonic time.
    elapsed_ns: u64,
    /// A warning about the file, for the user.
    cut: Option<String>,
    /// The file, as messages name it.
    path: String,
    /// The tool replaying it, as its messages begin.
    tool: String,
    /// The first input asked for that the recording does not hold.
    unanswered: OnceCell<String>,
    /// The first input asked for that the recorded run could not read for
    /// want of a file descriptor (`EMFILE`, `ENFILE`), or read line by line
    /// past its size limit (`EFBIG`), with that errno: the run failed.
    starved: OnceCell<(String, i32)>,
    /// The most inputs ([`MOST_INPUTS`]) the frames may name between them.
    most_inputs: usize,
}

/// The most distinct inputs a recording's frames may name between them. A
/// replay keeps the latest entry of each (a frame holds the inputs that
/// changed), so memory grows with them: 10 frames of 1.5 million inputs
/// that no run reads, 40 MB compressed, took 4.6 GB. A run reads a few per
/// device (one `/proc/diskstats` for all with `-p ALL`), so this serves
/// the sysfs statistics of 250,000 devices at four each; a replay of a
/// frame of 990,000 inputs peaked at 409 MB (release build), and 1.1
/// million are refused at 454 MB. A frame is refused once read: one
/// frame near the 64 MiB line limit (2.5 million inputs) peaked at 745 MB
/// before its refusal.
const MOST_INPUTS: usize = 1_000_000;

impl Replay {
    /// Loads the recording at `path` that `tool` made, checking every line
    /// first (of a FIFO, each as it comes: see `record::load`): a damaged
    /// line, a recording of another tool or of no sample is an error
    /// naming the file (and the line), as is an end line that miscounts
    /// the frames or a line after it. A last line cut short is left out,
    /// and a warning on stderr says so (of a FIFO, at its end), as
    /// [`Replay::cut`] does; so does a missing end line, where the header
    /// promised one ([`Header::promises_end`]).
    // Out of line: only some runs take this path; inlined, it would sit among
    // the code every run executes (build.rs, "Hot code first").
    #[inline(never)]
    pub fn open(path: &Path, tool: &str) -> Result<Replay, ReplayError> {
        let loaded = load(path, tool)?;
        let mut replay = Replay::with_frames(loaded.header, loaded.frames);
        replay.path = crate::common::escape::path(path);
        replay.tool = tool.to_string();
        replay.advance()?;
        if let Some(cut) = loaded.cut {
            replay.warn_cut(cut);
        }
        Ok(replay)
    }

    /// Says on stderr that the recording was cut (its last line left out,
    /// or its end line missing).
    fn warn_cut(&mut self, cut: Cut) {
        let warning = format!("warning: {}: {}", self.path, cut.describe());
        stderr::print(format_args!("{}: {}\n", self.tool, text(&warning)));
        self.cut = Some(warning);
    }

    /// The recording's header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// A one-line warning when the recording was cut (its last line
    /// incomplete and left out, or its end line missing), naming the file.
    pub fn cut(&self) -> Option<&str> {
        self.cut.as_deref()
    }

    /// Builds a replay from frames in memory (for tests and converters).
    pub fn from_parts(header: Header, frames: Vec<Frame>) -> Replay {
        let held: Vec<_> = frames.into_iter().map(|frame| (None, frame)).collect();
        let mut replay = Replay::with_frames(header, Frames::Held(held.into_iter()));
        if let Ok(Some(first)) = replay.upcoming.next() {
            // Frames made in memory (tests, converters): the first is taken
            // whatever the number of its inputs; the next are held to it.
            let _ = replay.apply(first);
        }
        replay
    }

    /// A replay of `frames`, none applied yet.
    fn with_frames(header: Header, frames: Frames) -> Replay {
        Replay {
            time_unix_ns: header.start_unix_ns,
            header,
            upcoming: frames,
            latest: HashMap::new(),
            applied: 0,
            current: Origin::default(),
            elapsed_ns: 0,
            cut: None,
            path: "the recording".to_string(),
            tool: String::new(),
            unanswered: OnceCell::new(),
            starved: OnceCell::new(),
            most_inputs: MOST_INPUTS,
        }
    }

    /// Applies the next frame; false when there is none.
    fn advance(&mut self) -> Result<bool, ReplayError> {
        match self.upcoming.next()? {
            Some(next) => {
                self.apply(next)?;
                Ok(true)
            }
            None => {
                if let Some(cut) = self.upcoming.cut()
                    && self.cut.is_none()
                {
                    self.warn_cut(cut);
                }
                Ok(false)
            }
        }
    }

    /// Applies `frame`, found at `line` of the file (if it came from one);
    /// an error where the frames name more inputs than [`MOST_INPUTS`].
    fn apply(&mut self, (line, frame): (Option<usize>, Frame)) -> Result<(), ReplayError> {
        let origin = Origin {
            frame: self.applied,
            line,
        };
        self.applied += 1;
        self.current = origin;
        self.latest.extend(
            frame
                .entries
                .into_iter()
                .map(|(key, entry)| (key, (entry, origin))),
        );
        if let Some(ns) = frame.time_unix_ns {
            self.time_unix_ns = ns;
        }
        self.elapsed_ns = frame.elapsed_ns.unwrap_or(0);
        if self.latest.len() > self.most_inputs {
            return Err(ReplayError::Format {
                path: self.path.clone(),
                line: line.unwrap_or(0),
                what: format!(
                    "frame {}: the frames name more than {} inputs between them (a run reads \
                     a few per device): not a recording these tools make",
                    origin.frame, self.most_inputs
                ),
            });
        }
        Ok(())
    }

    /// `FILE:LINE: frame K` for the frame at `origin`.
    fn frame_origin(&self, origin: Origin) -> String {
        let frame = origin.frame;
        match origin.line {
            Some(line) => format!("{}:{line}: frame {frame}", self.path),
            None => format!("{}: frame {frame}", self.path),
        }
    }

    fn fetch(&self, op: &str, arg: &str) -> io::Result<&Entry> {
        let key = format!("{op} {arg}");
        match self.latest.get(&key).map(|(entry, _)| entry) {
            Some(Entry::Errno(errno)) => {
                let err = io::Error::from_raw_os_error(*errno);
                if is_out_of_descriptors(&err) {
                    let _ = self.starved.set((key, *errno));
                }
                Err(err)
            }
            Some(entry) => Ok(entry),
            None if self.header.whole_tree => Err(io::Error::from_raw_os_error(libc::ENOENT)),
            None => {
                let _ = self.unanswered.set(key);
                Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("{arg}: not in the recording"),
                ))
            }
        }
    }
}

/// The options a recording was made with, without where it read from and
/// wrote to (`--sysroot DIR`, `--record FILE`): what decided its inputs.
fn recorded_view(args: &[String]) -> String {
    let mut shown: Vec<&str> = Vec::new();
    let mut skip_value = false;
    for arg in args {
        if std::mem::take(&mut skip_value) {
            continue;
        }
        match arg.as_str() {
            "--record" | "--sysroot" => skip_value = true,
            a if a.starts_with("--record=") || a.starts_with("--sysroot=") => {}
            a => shown.push(a),
        }
    }
    shown.join(" ")
}

fn wrong_kind(arg: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{arg}: recorded entry has the wrong kind"),
    )
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

    /// As the live source: a file the recorded run read line by line past
    /// its size limit fails the replay as it failed the run.
    fn for_each_line(
        &self,
        path: &str,
        buf: &mut Vec<u8>,
        each: &mut dyn FnMut(&[u8]),
    ) -> io::Result<()> {
        let read = self.read_into(path, buf);
        if let Err(err) = &read
            && err.raw_os_error() == Some(libc::EFBIG)
        {
            let _ = self.starved.set((format!("read {path}"), libc::EFBIG));
        }
        read?;
        crate::common::source::split_lines(buf, each);
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

    fn write_command(&self, path: &str, data: &[u8]) -> io::Result<()> {
        self.write_file(path, data)
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
        UNIX_EPOCH + Duration::from_nanos(self.time_unix_ns)
    }

    fn elapsed(&self) -> Duration {
        Duration::from_nanos(self.elapsed_ns)
    }

    fn next_sample(&mut self) -> io::Result<bool> {
        self.advance()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }

    fn check_answered(&self) -> io::Result<()> {
        if let Some((key, errno)) = self.starved.get() {
            // As the recorded run failed: what it could not read is not
            // absent, and a report without it would not be the run's.
            let why = match *errno {
                libc::EFBIG => "larger than any kernel file of its kind".to_string(),
                errno => format!(
                    "{} (out of file descriptors)",
                    io::Error::from_raw_os_error(errno)
                ),
            };
            return Err(io::Error::other(format!(
                "{}: the recorded run could not read `{}`: {why}; its reports cannot be \
                 replayed whole",
                text(&self.path),
                clip(key, 120),
            )));
        }
        let Some(key) = self.unanswered.get() else {
            return Ok(());
        };
        // clip escapes what the recording supplied (its options, the names
        // in the key), as every message quoting a recording does.
        let recorded = clip(&recorded_view(&self.header.args), 120);
        Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "{} does not hold `{}`, which these options read: the recorded run (`{} \
                 {recorded}`) did not read it; replay with options that read what it read (the \
                 same devices, partitions and events)",
                text(&self.path),
                clip(key, 120),
                clip(&self.header.tool, 40),
            ),
        ))
    }

    fn is_live(&self) -> bool {
        false
    }

    fn set_stop(&mut self, stop: &StopSignal) {
        self.upcoming.set_stop(stop);
    }

    fn values_origin(&self, key: &str) -> Option<String> {
        let key = format!("values {key}");
        let (_, origin) = self.latest.get(&key)?;
        Some(format!(
            "{}: entry {}",
            self.frame_origin(*origin),
            excerpt(&key)
        ))
    }

    fn sample_origin(&self) -> Option<String> {
        Some(self.frame_origin(self.current))
    }

    fn recorded_args(&self) -> Option<&[String]> {
        Some(&self.header.args)
    }

    fn recorded_values(&self) -> Vec<(String, usize)> {
        let values = |(key, (entry, _)): (&String, &(Entry, Origin))| {
            let key = key.strip_prefix("values ")?;
            match entry {
                Entry::Values(values) => Some((key.to_string(), values.len())),
                _ => None,
            }
        };
        self.latest.iter().filter_map(values).collect()
    }
}

/// Where a frame is: its number (from 0) and its line in the file, if it
/// came from one.
#[derive(Debug, Clone, Copy, Default)]
struct Origin {
    frame: usize,
    line: Option<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Frames that name more inputs between them than the replay keeps
    /// are refused as no recording of these tools, naming the frame.
    #[test]
    fn frames_naming_too_many_inputs_are_refused() {
        let frame = |keys: &[&str]| Frame {
            entries: keys
                .iter()
                .map(|k| (format!("read {k}"), Entry::Text("v".into())))
                .collect::<BTreeMap<_, _>>(),
            ..Frame::default()
        };
        let header: Header = serde_json::from_str(super::super::tests::HEADER).unwrap();
        let frames = vec![frame(&["/a", "/b"]), frame(&["/b", "/c"]), frame(&["/d"])];
        let mut replay = Replay::from_parts(header, frames);
        replay.most_inputs = 3;
        // The same input again is no new one.
        assert!(replay.next_sample().unwrap());
        let err = replay.next_sample().unwrap_err().to_string();
        assert_eq!(
            err,
            "the recording:0: frame 2: the frames name more than 3 inputs between them (a run \
             reads a few per device): not a recording these tools make"
        );
    }
}
