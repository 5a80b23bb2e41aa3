//! Writing a recording: [`Recorder`] passes a run's reads through and keeps
//! them, one frame per sample, flushed to the file as each sample ends.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{End, EndLine, Entry, FORMAT_NAME, FORMAT_VERSION, Frame, Header, Refused};
use crate::common::signals::StopSignal;
use crate::common::source::{Source, Uname};
use crate::common::stdout::{AfterStop, chunk_for, write_stoppably};
use crate::common::user_file;

/// A recording file could not be created or written: the message names the
/// file, so that a full disk is not mistaken for a broken standard output.
#[derive(Debug, thiserror::Error)]
#[error("cannot {action} recording {path}: {source}")]
pub struct RecordingError {
    /// `create` or `write`.
    action: &'static str,
    /// The recording's path.
    path: String,
    /// The underlying error.
    source: io::Error,
}

/// The [`RecordingError`] inside an I/O error that a [`Recorder`] returned
/// (through [`Source::next_sample`] or [`Source::finish`]), if it is one.
pub fn recording_error(err: &io::Error) -> Option<&RecordingError> {
    err.get_ref()?.downcast_ref()
}

/// Whether a failed write of the recording met `EPIPE`: its pipe's or
/// FIFO's reader went away.
fn reader_gone(err: &io::Error) -> bool {
    recording_error(err).is_some_and(|e| e.source.kind() == io::ErrorKind::BrokenPipe)
}

fn unix_ns(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// The errno a recording keeps for `err`: a file past its size limit is
/// `EFBIG`, for a replay to fail on as the run did.
fn errno_of(err: &io::Error) -> i32 {
    if crate::common::source::is_too_large(err) {
        return libc::EFBIG;
    }
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

/// The recording file, written so that a stop signal ends a write that
/// waits for a reader who stopped reading (a FIFO to a stalled `gzip`), as
/// [`crate::common::stdout::StoppableStdout`] does for standard output:
/// else SIGTERM would go unanswered until SIGKILL, and vcpustat could not
/// switch back what it switched on. The recording is created before the
/// run takes the stop signals over (a stop while the source opens ends the
/// program as by default); until the tool hands the flag over
/// ([`Source::set_stop`]), writes block as any do.
struct RecordingFile {
    file: File,
    /// The most one `write` may carry (see [`chunk_for`]).
    chunk: usize,
    /// The run's stop flag, once the tool has handed it over.
    stop: Option<StopSignal>,
    /// How long the recording still waits after a stop signal.
    after_stop: AfterStop,
}

impl RecordingFile {
    fn new(file: File) -> RecordingFile {
        let chunk = chunk_for(file.as_raw_fd());
        RecordingFile {
            file,
            chunk,
            stop: None,
            after_stop: AfterStop::default(),
        }
    }
}

impl Write for RecordingFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &self.stop {
            Some(stop) => write_stoppably(
                stop,
                self.file.as_fd(),
                buf,
                self.chunk,
                &mut self.after_stop,
            ),
            None => self.file.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// A [`Source`] that passes everything through to another source and writes
/// what was read to a recording file, one frame per sample.
///
/// A frame is written and flushed when its sample ends
/// ([`Source::next_sample`], which the interval loop calls before it
/// sleeps), so a run that is killed keeps every sample it reported.
/// [`Source::finish`] then writes the [`EndLine`], which tells a replay
/// that the run ended there rather than being cut.
pub struct Recorder {
    inner: Box<dyn Source>,
    path: String,
    out: RefCell<BufWriter<RecordingFile>>,
    frame: RefCell<Frame>,
    /// How many frames were written.
    written: u64,
    /// Set when a write to the file failed: nothing more is written (the
    /// file may end in part of a line), so it reads as cut, as it was.
    broken: bool,
    /// Set once finished: finishing again does nothing.
    finished: bool,
}

impl Recorder {
    /// Creates `path` and writes the header; fails before any sampling if the
    /// file cannot be created or written (a full disk, `/dev/full`).
    // Out of line: only some runs take this path; inlined, it would sit among
    // the code every run executes (build.rs, "Hot code first").
    #[inline(never)]
    pub fn create(
        path: &Path,
        inner: Box<dyn Source>,
        tool: &str,
        args: &[String],
    ) -> Result<Recorder, RecordingError> {
        let shown = crate::common::escape::path(path);
        let fail = |action, source| RecordingError {
            action,
            path: shown.clone(),
            source,
        };
        let file = user_file::create(path).map_err(|e| fail("create", e))?;
        let header = Header {
            format: FORMAT_NAME.to_string(),
            version: FORMAT_VERSION,
            tool: tool.to_string(),
            args: args.to_vec(),
            uname: inner.uname().map_err(|e| fail("create", e))?,
            start_unix_ns: unix_ns(inner.now()),
            whole_tree: false,
        };
        let mut out = BufWriter::new(RecordingFile::new(file));
        write_line(&mut out, &header).map_err(|e| fail("write", e))?;
        Ok(Recorder {
            inner,
            path: shown,
            out: RefCell::new(out),
            frame: RefCell::new(Frame::default()),
            written: 0,
            broken: false,
            finished: false,
        })
    }

    fn note<T>(&self, key: String, result: &io::Result<T>, entry: impl FnOnce(&T) -> Entry) {
        let entry = match result {
            Ok(value) => entry(value),
            Err(err) => Entry::Errno(errno_of(err)),
        };
        self.frame.borrow_mut().entries.insert(key, entry);
    }

    /// Writes the current frame as one line and flushes it to the file.
    fn flush_frame(&mut self) -> io::Result<()> {
        // Moved out and back (no copy): `write` borrows the recorder.
        let frame = std::mem::take(self.frame.get_mut());
        let written = self.write(&frame);
        *self.frame.get_mut() = frame;
        written?;
        self.written += 1;
        Ok(())
    }

    /// Writes `value` as one line and flushes it; after a failed write,
    /// fails again without writing.
    fn write(&mut self, value: &impl serde::Serialize) -> io::Result<()> {
        let fail = |path: &str, source| {
            io::Error::other(RecordingError {
                action: "write",
                path: path.to_string(),
                source,
            })
        };
        if self.broken {
            let source = io::Error::other("an earlier write failed");
            return Err(fail(&self.path, source));
        }
        write_line(self.out.get_mut(), value).map_err(|source| {
            self.broken = true;
            fail(&self.path, source)
        })
    }

    /// Writes the last frame (unless the run stopped before it read
    /// anything) and the end line, unless a write failed before.
    fn close(&mut self) -> io::Result<()> {
        if self.broken {
            return Ok(());
        }
        // A run stopped while it waited for its next sample has a frame
        // with nothing in it: the samples taken are all written already.
        let frame = self.frame.get_mut();
        let untouched = frame.index > 0
            && frame.entries.is_empty()
            && frame.time_unix_ns.is_none()
            && frame.elapsed_ns.is_none();
        if !untouched {
            self.flush_frame()?;
        }
        self.frame.get_mut().entries.clear();
        let end = EndLine {
            end: End {
                frames: self.written,
                refused: None,
            },
        };
        match self.write(&end) {
            // The reader of a pipe or FIFO went away once every frame was
            // written (a replay of as many samples stops at the last one):
            // no one is left to read the end line, and a pipe never told
            // whether its reader read what came before. Failing here made
            // the status of a run whose reader took every frame depend on
            // which of the two writes it won.
            Err(e) if reader_gone(&e) => Ok(()),
            written => written,
        }
    }

    /// Ends a run refused before its first frame was written: the end line
    /// alone, with what the run printed and its status (the reads of the
    /// sample it did not take are left out), unless a write failed before.
    fn close_refused(&mut self, refused: Refused) -> io::Result<()> {
        if self.broken {
            return Ok(());
        }
        self.frame.get_mut().entries.clear();
        let end = EndLine {
            end: End {
                frames: 0,
                refused: Some(refused),
            },
        };
        self.write(&end)
    }
}

/// Writes `value` as one JSON line and flushes it.
fn write_line(out: &mut impl Write, value: &impl serde::Serialize) -> io::Result<()> {
    serde_json::to_writer(&mut *out, value)?;
    out.write_all(b"\n")?;
    out.flush()
}

impl Source for Recorder {
    fn read_into(&self, path: &str, buf: &mut Vec<u8>) -> io::Result<()> {
        let result = self.inner.read_into(path, buf);
        self.note(format!("read {path}"), &result, |_| bytes_entry(buf));
        result
    }

    /// Read whole, as the default does, so that the recording holds the
    /// file's bytes as they are and its replay sees what the run saw; but
    /// a file past the size limit is read again line by line through the
    /// source, which fails the run on it as a run without `--record`
    /// fails (read whole, it was an error the run passed over).
    fn for_each_line(
        &self,
        path: &str,
        buf: &mut Vec<u8>,
        each: &mut dyn FnMut(&[u8]),
    ) -> io::Result<()> {
        let result = self.inner.read_into(path, buf);
        self.note(format!("read {path}"), &result, |_| bytes_entry(buf));
        match result {
            Ok(()) => {
                crate::common::source::split_lines(buf, each);
                Ok(())
            }
            Err(err) if crate::common::source::is_too_large(&err) => {
                self.inner.for_each_line(path, buf, each)
            }
            Err(err) => Err(err),
        }
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
        let result = self.inner.try_is_dir(path);
        // A lookup that found no descriptor is kept as its errno, which a
        // replay fails on as the run did ([`Source::check_answered`]);
        // any other failure is "not a directory", as it always was.
        let entry = match &result {
            Err(e) if crate::common::source::is_out_of_descriptors(e) => Entry::Errno(errno_of(e)),
            Ok(true) => Entry::IsDir(true),
            _ => Entry::IsDir(false),
        };
        self.frame
            .borrow_mut()
            .entries
            .insert(format!("isdir {path}"), entry);
        result.unwrap_or(false)
    }

    fn write_file(&self, path: &str, data: &[u8]) -> io::Result<()> {
        self.inner.write_file(path, data)
    }

    fn write_command(&self, path: &str, data: &[u8]) -> io::Result<()> {
        self.inner.write_command(path, data)
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

    fn check_answered(&self) -> io::Result<()> {
        self.inner.check_answered()
    }

    fn set_stop(&mut self, stop: &StopSignal) {
        self.out.get_mut().get_mut().stop = Some(stop.clone());
        self.inner.set_stop(stop);
    }

    /// Ends the recording: every orderly end of a run comes here (the
    /// count reached, a stop signal, an error the tool reports, standard
    /// output closed), and a run killed or crashed does not, so the end
    /// line tells them apart. After a failed write to the recording (a
    /// full disk) nothing is added: the file reads as cut.
    fn finish(&mut self) -> io::Result<()> {
        // The interval loop finishes the source and so may the tool on its
        // way out: the last frame and the end line are written once, even
        // when the first try failed.
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        let closed = self.close();
        let inner = self.inner.finish();
        closed.and(inner)
    }

    /// Ends a failed run: one that has written no frame yet (it failed
    /// before its first sample was done, so no frame is whole) gets an
    /// end line that keeps `stderr` and `status`, which a replay gives
    /// again instead of a frame it could not replay as the run ran it; any
    /// other ends as [`Source::finish`] ends it. After the run was
    /// finished (its samples taken), nothing changes.
    fn refuse(&mut self, stderr: &str, status: i32) -> io::Result<()> {
        if self.finished || self.written > 0 || status == 0 {
            return self.finish();
        }
        self.finished = true;
        let refused = Refused {
            status,
            stderr: stderr.to_string(),
        };
        let closed = self.close_refused(refused);
        let inner = self.inner.finish();
        closed.and(inner)
    }
}
