//! Where kernel files come from: the live system under a root directory, a
//! recording being written, or a recording being replayed.
//!
//! Every reader in the project takes a `&dyn Source` and asks for absolute
//! kernel paths (`/proc/diskstats`, `/sys/block`). It never joins a root
//! itself and never checks whether it is replaying: that is what makes
//! `--sysroot`, `--record` and `--replay` work the same way for every tool.

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};

use super::osname;
use super::root::{Access, Root};
use super::signals::StopSignal;

/// The host identity a banner needs (the fields of `uname(2)`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Uname {
    /// Operating system name, e.g. `Linux`.
    pub sysname: String,
    /// Host name.
    pub nodename: String,
    /// Kernel release, e.g. `6.18.44`.
    pub release: String,
    /// Kernel version string (build date and number).
    #[serde(default)]
    pub version: String,
    /// Hardware name, e.g. `x86_64` or `ppc64le`.
    pub machine: String,
}

impl Uname {
    /// Reads the running kernel's identity with `uname(2)`.
    pub fn live() -> io::Result<Uname> {
        // SAFETY: `utsname` is plain data; uname fills it with NUL-terminated strings.
        let mut raw: libc::utsname = unsafe { std::mem::zeroed() };
        if unsafe { libc::uname(&mut raw) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let field = |chars: &[libc::c_char]| {
            let bytes: Vec<u8> = chars
                .iter()
                .take_while(|&&c| c != 0)
                .map(|&c| c as u8)
                .collect();
            osname::from_bytes(&bytes).into_owned()
        };
        Ok(Uname {
            sysname: field(&raw.sysname),
            nodename: field(&raw.nodename),
            release: field(&raw.release),
            version: field(&raw.version),
            machine: field(&raw.machine),
        })
    }
}

/// A provider of kernel files and of the clock that timestamps samples.
///
/// Paths are absolute kernel paths. A run is a sequence of samples; the
/// interval loop calls [`Source::next_sample`] between them, which lets a
/// recording close one frame and a replay move to the next.
pub trait Source {
    /// Reads the whole file at `path` into `buf`, which is cleared first.
    fn read_into(&self, path: &str, buf: &mut Vec<u8>) -> io::Result<()>;
    /// Lists the entry names of a directory (without `.` and `..`), in the
    /// order the directory returns them.
    fn list_dir(&self, path: &str) -> io::Result<Vec<String>>;
    /// Returns the target of a symbolic link, as stored in the link.
    fn read_link(&self, path: &str) -> io::Result<String>;
    /// Returns the (major, minor) device number of a device node.
    fn device_number(&self, path: &str) -> io::Result<(u32, u32)>;
    /// Resolves links and `..` like `realpath(3)`, giving an absolute kernel path.
    fn canonicalize(&self, path: &str) -> io::Result<String>;
    /// Tells whether `path` exists and is a directory.
    fn is_dir(&self, path: &str) -> bool;
    /// As [`Source::is_dir`], but with the error that made the answer
    /// `false`, for a recording to keep: a lookup that failed for want of a
    /// descriptor (`EMFILE`) is not an absent directory, and a replay of it
    /// must fail as the run did. The default has no error to give.
    fn try_is_dir(&self, path: &str) -> io::Result<bool> {
        Ok(self.is_dir(path))
    }
    /// Writes `data` to an existing file with exactly one `write(2)`.
    ///
    /// Replays refuse writes with `ErrorKind::ReadOnlyFilesystem`.
    fn write_file(&self, path: &str, data: &[u8]) -> io::Result<()>;
    /// Writes `data` to `path`, a kernel file that takes a write as a
    /// command rather than as its contents (vcpudispatch_stats: `1`
    /// switches on, reads give counters): as [`Source::write_file`], but
    /// refused on a regular file of a disk file system (a copy of `/proc`
    /// in a `--sysroot` tree), which would keep the command for good.
    fn write_command(&self, path: &str, data: &[u8]) -> io::Result<()>;
    /// Gets a list of numbers from outside the file system (for example perf
    /// counters) under a stable `key`. The live source calls `read`; a
    /// recording stores the result; a replay returns the stored one.
    fn values(
        &self,
        key: &str,
        read: &mut dyn FnMut() -> io::Result<Vec<u64>>,
    ) -> io::Result<Vec<u64>>;
    /// Like [`Source::values`], but fills the caller's `buf` so that a live
    /// hot path reads counters without allocating. `read` fills the buffer it
    /// is given (cleared first). The default goes through [`Source::values`],
    /// so recordings and replays behave exactly as there.
    fn values_into(
        &self,
        key: &str,
        buf: &mut Vec<u64>,
        read: &mut dyn FnMut(&mut Vec<u64>) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut fill = || {
            let mut values = Vec::new();
            read(&mut values)?;
            Ok(values)
        };
        let values = self.values(key, &mut fill)?;
        buf.clear();
        buf.extend_from_slice(&values);
        Ok(())
    }
    /// The host identity.
    fn uname(&self) -> io::Result<Uname>;
    /// The wall-clock time of the current sample.
    fn now(&self) -> SystemTime;
    /// Monotonic time since the source was opened.
    fn elapsed(&self) -> Duration;
    /// Moves to the next sample. Returns `false` when a replay has no more.
    fn next_sample(&mut self) -> io::Result<bool>;
    /// True when samples must be paced by real sleeping (live sources).
    fn is_live(&self) -> bool;
    /// Ends the run: a recording writes its last frame. Call it on every exit path.
    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// Ends a run that failed with `status` (not 0) after printing
    /// `stderr` on standard error: a recording of a run that took no
    /// sample yet keeps them in its end line instead of a frame, for a
    /// replay to give again; any other run ends as [`Source::finish`]
    /// ends it (what the recorded samples make of the failure is for a
    /// replay to find again).
    fn refuse(&mut self, _stderr: &str, _status: i32) -> io::Result<()> {
        self.finish()
    }

    /// Whether every input asked for so far could be answered. A replay
    /// fails, naming the file and the first input its recording does not
    /// hold: one the recorded run never read, as options naming other
    /// devices or events read, which a report would otherwise show as
    /// absent. Tools call it after taking a sample and before reporting
    /// it. Live sources answer everything.
    fn check_answered(&self) -> io::Result<()> {
        Ok(())
    }

    /// Where a replay took the values it last gave for `key`, as messages
    /// about a damaged recording begin: `FILE:LINE: frame K: entry "values
    /// KEY"`. `None` for other sources, and for a key no frame up to the
    /// current one holds.
    fn values_origin(&self, _key: &str) -> Option<String> {
        None
    }

    /// The keys of the values ([`Source::values`]) a replay's recording
    /// holds, up to the current frame, each with its number of values, in
    /// no order; empty for the other sources.
    fn recorded_values(&self) -> Vec<(String, usize)> {
        Vec::new()
    }

    /// The command-line arguments of the run a replay's recording was made
    /// by (its header's, after the program's name); `None` for the other
    /// sources.
    fn recorded_args(&self) -> Option<&[String]> {
        None
    }

    /// Where a replay's current sample is, as messages about a damaged
    /// recording begin: `FILE:LINE: frame K`. `None` for other sources.
    fn sample_origin(&self) -> Option<String> {
        None
    }

    /// Asks that a file read at every sample stay open between reads (a
    /// hint: sources that have nothing to keep open ignore it).
    fn keep_open(&self, _path: &str) {}

    /// Hands over the run's stop flag once the tool has taken the stop
    /// signals over ([`StopSignal::install`]): from then on a write of the
    /// source's own (a recording's) that waits for a reader who stopped
    /// reading ends on a stop signal. Sources that write nothing of their
    /// own ignore it.
    fn set_stop(&mut self, _stop: &StopSignal) {}

    /// Calls `each` with every line of the file at `path`, without its
    /// newline (a last line without one included), using `buf` as scratch
    /// space. The default reads the whole file into `buf` (what a recording
    /// stores and a replay holds anyway); the live source reads it in pieces
    /// of [`LINE_CHUNK`] bytes, so a large file (a `/proc/diskstats` of
    /// 10,000 devices) never sits in memory whole. On an error, the lines
    /// before it have been passed on.
    fn for_each_line(
        &self,
        path: &str,
        buf: &mut Vec<u8>,
        each: &mut dyn FnMut(&[u8]),
    ) -> io::Result<()> {
        self.read_into(path, buf)?;
        split_lines(buf, each);
        Ok(())
    }

    /// Calls `each` with the entry names of a directory, as
    /// [`Source::list_dir`] lists them. The default goes through `list_dir`
    /// (so recordings and replays behave exactly as there); the live source
    /// reads the directory as it goes, without collecting the names.
    fn for_each_dir_entry(&self, path: &str, each: &mut dyn FnMut(&str)) -> io::Result<()> {
        for name in self.list_dir(path)? {
            each(&name);
        }
        Ok(())
    }

    /// Reads a whole file into a new buffer.
    fn read(&self, path: &str) -> io::Result<Vec<u8>> {
        let mut buf = Vec::new();
        self.read_into(path, &mut buf)?;
        Ok(buf)
    }

    /// Reads a whole file as UTF-8 text.
    fn read_string(&self, path: &str) -> io::Result<String> {
        String::from_utf8(self.read(path)?)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8 text"))
    }
}

/// How many bytes [`RootFs`] reads at a time in [`Source::for_each_line`]:
/// small, because every byte of it is resident for the whole run (measured:
/// 64 kB cost iostat-rs 56 kB of peak RSS at 10 devices and saved no CPU at
/// 10,000, where `/proc/diskstats` is 1.5 MB).
pub const LINE_CHUNK: usize = 8 * 1024;

/// The most bytes read from a kernel file under `/sys` (outside debugfs):
/// a sysfs attribute holds at most one page (4 KiB, 64 KiB on POWER).
pub const SYSFS_LIMIT: u64 = 1 << 20;

/// The most bytes read from any other kernel file: `/proc/diskstats` grows
/// with the devices (150 bytes each), so this allows some 400,000 of them.
pub const FILE_LIMIT: u64 = 64 << 20;

/// The most bytes a read of kernel path `path` takes before it fails: far
/// above what a kernel writes, so that only a file that is not the kernel's
/// (a huge file under `--sysroot`) reaches it.
pub fn size_limit(path: &str) -> u64 {
    if path.starts_with("/sys/") && !path.starts_with("/sys/kernel/debug/") {
        SYSFS_LIMIT
    } else {
        FILE_LIMIT
    }
}

/// A file larger than the limit of its kind (in bytes): not the kernel's.
#[derive(Debug)]
struct TooLarge(u64);

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "larger than {} KiB, more than any kernel file of its kind holds",
            self.0 >> 10
        )
    }
}

impl std::error::Error for TooLarge {}

/// The error for a file larger than `limit` bytes.
fn too_large(limit: u64) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, TooLarge(limit))
}

/// Whether `err` is [`too_large`]'s.
pub(crate) fn is_too_large(err: &io::Error) -> bool {
    err.get_ref().is_some_and(|e| e.is::<TooLarge>())
}

/// Passes every complete line of `text` to `each`; returns how many bytes
/// that consumed (the start of an unfinished last line). The first line's
/// newline is looked for from `scanned` on: the bytes before it are known
/// to hold none.
fn complete_lines(text: &[u8], scanned: usize, each: &mut dyn FnMut(&[u8])) -> usize {
    let mut start = 0;
    let mut from = scanned;
    while let Some(n) = text[from..].iter().position(|&b| b == b'\n') {
        each(&text[start..from + n]);
        start = from + n + 1;
        from = start;
    }
    start
}

/// Passes every line of `text` to `each`, a last line without a newline
/// included.
pub(crate) fn split_lines(text: &[u8], each: &mut dyn FnMut(&[u8])) {
    let done = complete_lines(text, 0, each);
    if done < text.len() {
        each(&text[done..]);
    }
}

/// Reads `file` from offset 0 in pieces of up to [`LINE_CHUNK`] bytes and
/// passes its lines to `each`; `buf` holds an unfinished line and the piece
/// read after it, within [`LINE_CHUNK`] bytes while that line is short. Each
/// byte is searched for a newline once, however long the line. Fails once
/// more than `limit` bytes were read.
fn read_lines(
    file: &File,
    limit: u64,
    buf: &mut Vec<u8>,
    each: &mut dyn FnMut(&[u8]),
) -> io::Result<()> {
    buf.clear();
    let mut offset = 0u64;
    loop {
        let filled = buf.len();
        // `filled` is an unfinished line carried over (without a newline).
        // A short one leaves room for half a piece or more in one piece's
        // bytes: read into that, so that the buffer never grows (growing
        // past its capacity doubles it, 16 kB for every file over 8). A line
        // longer than half a piece gets a whole piece after it.
        let room = if filled <= LINE_CHUNK / 2 {
            LINE_CHUNK - filled
        } else {
            LINE_CHUNK
        };
        let n = match pread_append(file, buf, room, offset) {
            Ok(n) => n,
            Err(e) => {
                buf.clear();
                return Err(e);
            }
        };
        if n == 0 {
            split_lines(buf, each);
            buf.clear();
            return Ok(());
        }
        offset += n as u64;
        if offset > limit {
            buf.clear();
            return Err(too_large(limit));
        }
        let done = complete_lines(buf, filled, each);
        buf.drain(..done);
    }
}

/// Reads up to `max` bytes of `file` at `offset` onto the end of `buf`
/// (growing its capacity as needed) and returns how many it read: 0 at the
/// end of the file. Retries a read a signal interrupted.
///
/// The bytes go straight into the spare capacity, which is not zeroed
/// first (as `read_to_end` does): a report touches only the memory the
/// kernel's data fills, not a whole piece twice per read.
fn pread_append(file: &File, buf: &mut Vec<u8>, max: usize, offset: u64) -> io::Result<usize> {
    buf.reserve(max);
    let filled = buf.len();
    let room = &mut buf.spare_capacity_mut()[..max];
    let offset = libc::off_t::try_from(offset)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file offset out of range"))?;
    loop {
        // SAFETY: pread writes at most `room.len()` bytes into `room`, spare
        // capacity of `buf` that stays allocated and unaliased during the
        // call; the descriptor is open for as long as `file` is borrowed.
        let n = unsafe {
            libc::pread(
                file.as_raw_fd(),
                room.as_mut_ptr().cast(),
                room.len(),
                offset,
            )
        };
        if n >= 0 {
            let n = n as usize;
            // SAFETY: pread initialised these `n` bytes just past `filled`.
            unsafe { buf.set_len(filled + n) };
            return Ok(n);
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Whether `err` is a failure for want of a file descriptor, `EMFILE` or
/// `ENFILE`, which says nothing about the file asked for.
pub fn is_out_of_descriptors(err: &io::Error) -> bool {
    matches!(err.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

/// The one line that says `path` could not be read for want of a
/// descriptor ([`is_out_of_descriptors`]), and what to do.
pub fn out_of_descriptors(path: &str, err: &io::Error) -> String {
    format!(
        "cannot read {}: {err}: {}",
        super::escape::text(path),
        descriptor_advice(err)
    )
}

/// What to do about `err`, a failure for want of a descriptor
/// ([`is_out_of_descriptors`]): the process's limit can be raised with
/// `ulimit -n`; a full system file table (ENFILE) is not helped by that.
pub fn descriptor_advice(err: &io::Error) -> &'static str {
    if err.raw_os_error() == Some(libc::ENFILE) {
        "the system's file table is full: close files, or raise fs.file-max"
    } else {
        "raise the open-file limit (`ulimit -n`)"
    }
}

/// The first kernel input that could not be read for a reason that a
/// report read as "absent", as sysstat reads a failed `open` or `fgets`,
/// would hide: a failure for want of a file descriptor, `EMFILE` (the
/// process's open-file limit, `ulimit -n`) or `ENFILE` (the system's file
/// table), which says nothing about the file, or a file read line by line
/// that is larger than any kernel file of its kind ([`size_limit`], under
/// `--sysroot`), of which only the lines before the limit would count. A
/// device or a name would vanish from a report that still looks whole.
/// The sources note such failures, and [`Source::check_answered`] fails on
/// them. A whole read past the limit is not noted: its caller gets the
/// error and none of the file, and says so as it says any other (cxlstat
/// leaves the PMU out with a warning naming the file).
#[derive(Debug, Default)]
pub struct UnreadInputs(std::cell::OnceCell<String>);

impl UnreadInputs {
    /// Passes `result` on, noting it first when it failed for want of a
    /// descriptor (the first such failure is kept).
    #[inline]
    pub fn note<T>(&self, path: &str, result: io::Result<T>) -> io::Result<T> {
        if let Err(err) = &result {
            self.note_error(path, err, false);
        }
        result
    }

    /// [`UnreadInputs::note`] for a read line by line (and its open), which
    /// also notes a file past the size limit: a read stopped there gave its
    /// caller the first lines, and an open refused for the file's size
    /// must not read as an absent file.
    #[inline]
    pub fn note_lines<T>(&self, path: &str, result: io::Result<T>) -> io::Result<T> {
        if let Err(err) = &result {
            self.note_error(path, err, true);
        }
        result
    }

    #[cold]
    #[inline(never)]
    fn note_error(&self, path: &str, err: &io::Error, by_line: bool) {
        if is_out_of_descriptors(err) {
            let _ = self.0.set(out_of_descriptors(path, err));
        } else if by_line && is_too_large(err) {
            let _ = self
                .0
                .set(format!("cannot read {}: {err}", super::escape::text(path)));
        }
    }

    /// Fails with the message of the first input noted, if any.
    pub fn check(&self) -> io::Result<()> {
        match self.0.get() {
            None => Ok(()),
            Some(message) => Err(io::Error::other(message.clone())),
        }
    }
}

/// The live system seen under a root directory (`/` normally, `--sysroot DIR`
/// for offline analysis and tests).
///
/// Every file is opened as [`Root`] opens it: never blocking, regular files
/// only, and never outside the root. Every read stops at [`size_limit`].
/// Hot-path files registered with [`RootFs::keep_open`] stay open on the
/// host's own root and are re-read from offset 0, which saves an
/// `open`/`close` pair per sample: the kernel rewrites its files in place.
pub struct RootFs {
    root: Root,
    opened: Instant,
    /// The files kept open, and each one's open file once read. A handful
    /// (iostat-rs keeps three), looked up at every read: a list compares
    /// fewer bytes than a hash map hashes, and brings no hashing code to
    /// the pages a run executes.
    kept: RefCell<Vec<(String, Option<File>)>>,
    /// The first input a report would hide as absent (see [`UnreadInputs`]).
    unread: UnreadInputs,
}

impl RootFs {
    /// Opens the system under `root`.
    pub fn new(root: impl Into<PathBuf>) -> RootFs {
        RootFs {
            root: Root::new(root),
            opened: Instant::now(),
            kept: RefCell::new(Vec::new()),
            unread: UnreadInputs::default(),
        }
    }

    /// Asks that `path` be kept open between reads, on the host's own
    /// root. Under a `--sysroot` tree it is opened afresh at each read: a
    /// file there may be replaced by a rename (`rsync`, any atomic
    /// writer), which a file kept open would never show, its first
    /// contents read again and again.
    pub fn keep_open(&self, path: &str) {
        if !self.root.is_host_root() {
            return;
        }
        let mut kept = self.kept.borrow_mut();
        if !kept.iter().any(|(p, _)| p == path) {
            kept.push((path.to_string(), None));
        }
    }

    /// Opens `path` for reading; a file whose inode reports more than
    /// [`size_limit`] bytes (only a file on disk can: the kernel's report 0
    /// or a page) fails at once, before any of it is read.
    fn open(&self, path: &str) -> io::Result<File> {
        let (file, size) = self.root.open_to_read(path)?;
        let limit = size_limit(path);
        if size > limit {
            return Err(too_large(limit));
        }
        Ok(file)
    }

    fn read_kept(&self, path: &str, buf: &mut Vec<u8>) -> Option<io::Result<()>> {
        let mut kept = self.kept.borrow_mut();
        let (_, slot) = kept.iter_mut().find(|(p, _)| p == path)?;
        if slot.is_none() {
            match self.open(path) {
                Ok(f) => *slot = Some(f),
                Err(e) => return Some(Err(e)),
            }
        }
        let file = slot.as_ref().expect("opened above");
        let result = pread_all(file, size_limit(path), buf);
        if result.is_err() {
            // The file may have gone away (device removed): reopen next time.
            *slot = None;
        }
        Some(result)
    }
}

/// Reads a whole file from offset 0 into `buf` (cleared first), failing
/// if it holds more than `limit` bytes.
///
/// Positioned reads, one per piece and one that finds the end: no `lseek`,
/// a system call fewer per sample than seeking and reading. Each read goes
/// into the buffer's spare capacity without zeroing it first, as
/// `read_to_end` does, so a large file (a `/proc/stat` of thousands of
/// CPUs) costs its size in memory, not the doubled capacity.
fn pread_all(file: &File, limit: u64, buf: &mut Vec<u8>) -> io::Result<()> {
    buf.clear();
    loop {
        // The room left, or once it is full a piece more (which doubles
        // the capacity).
        let room = match buf.capacity() - buf.len() {
            0 => PREAD_PIECE,
            spare => spare,
        };
        let n = match pread_append(file, buf, room, buf.len() as u64) {
            Ok(n) => n,
            Err(e) => {
                buf.clear();
                return Err(e);
            }
        };
        if n == 0 {
            return Ok(());
        }
        if buf.len() as u64 > limit {
            buf.clear();
            return Err(too_large(limit));
        }
    }
}

/// What [`pread_all`] adds to a buffer that has no room left (an empty one,
/// or one a file filled): the capacity then doubles, as `read_to_end`'s
/// does. Callers that keep their buffer between samples pass one with room
/// for the file (iostat-rs's holds 4 kB; `/proc/stat` of 2 CPUs is 1.2 kB).
const PREAD_PIECE: usize = 1024;

/// Reads `file` from where it stands to its end into `buf` (cleared
/// first), failing if it holds more than `limit` bytes.
fn read_capped(file: &File, limit: u64, buf: &mut Vec<u8>) -> io::Result<()> {
    buf.clear();
    let result = file.take(limit + 1).read_to_end(buf);
    if result.is_ok() && buf.len() as u64 > limit {
        buf.clear();
        return Err(too_large(limit));
    }
    result.map(|_| ())
}

impl Source for RootFs {
    fn read_into(&self, path: &str, buf: &mut Vec<u8>) -> io::Result<()> {
        if let Some(result) = self.read_kept(path, buf) {
            return self.unread.note(path, result);
        }
        // A freshly opened file is at offset 0 already: no seek, which
        // debugfs attribute files (dtl_event_mask) refuse with ESPIPE.
        let file = self.unread.note(path, self.open(path))?;
        read_capped(&file, size_limit(path), buf)
    }

    fn list_dir(&self, path: &str) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        let listed = self.root.for_each_entry(path, &mut |name| {
            names.push(osname::from_bytes(name.as_bytes()).into_owned())
        });
        self.unread.note(path, listed)?;
        Ok(names)
    }

    fn for_each_line(
        &self,
        path: &str,
        buf: &mut Vec<u8>,
        each: &mut dyn FnMut(&[u8]),
    ) -> io::Result<()> {
        let limit = size_limit(path);
        let mut kept = self.kept.borrow_mut();
        if let Some((_, slot)) = kept.iter_mut().find(|(p, _)| p == path) {
            if slot.is_none() {
                *slot = Some(self.unread.note_lines(path, self.open(path))?);
            }
            let file = slot.as_ref().expect("opened above");
            let result = read_lines(file, limit, buf, each);
            if result.is_err() {
                // The file may have gone away: reopen next time.
                *slot = None;
            }
            return self.unread.note_lines(path, result);
        }
        drop(kept);
        let file = self.unread.note_lines(path, self.open(path))?;
        self.unread
            .note_lines(path, read_lines(&file, limit, buf, each))
    }

    fn for_each_dir_entry(&self, path: &str, each: &mut dyn FnMut(&str)) -> io::Result<()> {
        let listed = self
            .root
            .for_each_entry(path, &mut |name| each(&osname::from_bytes(name.as_bytes())));
        self.unread.note(path, listed)
    }

    fn read_link(&self, path: &str) -> io::Result<String> {
        let target = self.unread.note(path, self.root.read_link(path))?;
        Ok(osname::from_bytes(target.as_os_str().as_bytes()).into_owned())
    }

    fn device_number(&self, path: &str) -> io::Result<(u32, u32)> {
        let rdev = self.unread.note(path, self.root.stat(path))?.st_rdev;
        Ok((libc::major(rdev), libc::minor(rdev)))
    }

    fn canonicalize(&self, path: &str) -> io::Result<String> {
        self.unread.note(path, self.root.canonicalize(path))
    }

    fn is_dir(&self, path: &str) -> bool {
        self.try_is_dir(path).unwrap_or(false)
    }

    fn try_is_dir(&self, path: &str) -> io::Result<bool> {
        self.unread
            .note(path, self.root.stat(path))
            .map(|st| st.st_mode & libc::S_IFMT == libc::S_IFDIR)
    }

    fn check_answered(&self) -> io::Result<()> {
        self.unread.check()
    }

    fn write_command(&self, path: &str, data: &[u8]) -> io::Result<()> {
        self.root.refuse_disk_file(path)?;
        self.write_file(path, data)
    }

    fn write_file(&self, path: &str, data: &[u8]) -> io::Result<()> {
        // O_TRUNC as the shell's `echo 1 > file`; kernel attribute files ignore it.
        let mut file = self.root.open_file(path, Access::Write)?;
        let written = file.write(data)?;
        if written != data.len() {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                format!("short write ({written} of {} bytes)", data.len()),
            ));
        }
        Ok(())
    }

    fn values(
        &self,
        _key: &str,
        read: &mut dyn FnMut() -> io::Result<Vec<u64>>,
    ) -> io::Result<Vec<u64>> {
        read()
    }

    fn values_into(
        &self,
        _key: &str,
        buf: &mut Vec<u64>,
        read: &mut dyn FnMut(&mut Vec<u64>) -> io::Result<()>,
    ) -> io::Result<()> {
        buf.clear();
        read(buf)
    }

    fn uname(&self) -> io::Result<Uname> {
        Uname::live()
    }

    fn now(&self) -> SystemTime {
        SystemTime::now()
    }

    fn elapsed(&self) -> Duration {
        self.opened.elapsed()
    }

    fn next_sample(&mut self) -> io::Result<bool> {
        Ok(true)
    }

    fn is_live(&self) -> bool {
        true
    }

    fn keep_open(&self, path: &str) {
        RootFs::keep_open(self, path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::scratch::{Scratch, scratch};
    use std::fs;

    /// A small tree of this thread's, removed when the test ends, also
    /// when it fails.
    fn tree() -> (Scratch, RootFs) {
        let dir = scratch(&format!("source-{:?}", std::thread::current().id()));
        fs::create_dir_all(dir.join("proc")).unwrap();
        fs::create_dir_all(dir.join("sys/block/sda")).unwrap();
        fs::write(dir.join("proc/uptime"), "12.34 5.67\n").unwrap();
        std::os::unix::fs::symlink("../sys/block/sda", dir.join("proc/link")).unwrap();
        let src = RootFs::new(&dir);
        (dir, src)
    }

    #[test]
    fn a_want_of_descriptors_names_what_helps() {
        let line = |errno| out_of_descriptors("/sys/block", &io::Error::from_raw_os_error(errno));
        assert_eq!(
            line(libc::EMFILE),
            "cannot read /sys/block: Too many open files (os error 24): \
             raise the open-file limit (`ulimit -n`)"
        );
        // `ulimit -n` does not help a full system file table.
        assert_eq!(
            line(libc::ENFILE),
            "cannot read /sys/block: Too many open files in system (os error 23): \
             the system's file table is full: close files, or raise fs.file-max"
        );
    }

    #[test]
    fn reads_lists_and_resolves_under_the_root() {
        let (_dir, src) = tree();
        assert_eq!(src.read_string("/proc/uptime").unwrap(), "12.34 5.67\n");
        assert_eq!(src.list_dir("/sys/block").unwrap(), vec!["sda"]);
        assert_eq!(src.read_link("/proc/link").unwrap(), "../sys/block/sda");
        assert_eq!(src.canonicalize("/proc/link").unwrap(), "/sys/block/sda");
        assert!(src.is_dir("/sys/block/sda"));
        assert!(!src.is_dir("/proc/uptime"));
        let err = src.read("/proc/missing").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }

    /// `path` under `dir` as the host's root names it.
    fn on_host(dir: &std::path::Path, path: &str) -> String {
        dir.join(path).to_string_lossy().into_owned()
    }

    #[test]
    fn kept_open_files_see_in_place_rewrites_and_large_contents() {
        let (dir, _) = tree();
        // Files are kept open on the host's own root only.
        let src = RootFs::new("/");
        let uptime = on_host(&dir, "proc/uptime");
        let through_trait: &dyn Source = &src;
        through_trait.keep_open(&uptime);
        through_trait.keep_open(&uptime);
        let kept: Vec<String> = src.kept.borrow().iter().map(|(p, _)| p.clone()).collect();
        assert_eq!(kept, [uptime.as_str()], "kept once");
        assert_eq!(src.read_string(&uptime).unwrap(), "12.34 5.67\n");
        let big = "x".repeat(100_000);
        fs::write(dir.join("proc/uptime"), &big).unwrap();
        assert_eq!(src.read_string(&uptime).unwrap(), big);
        fs::write(dir.join("proc/uptime"), "1.00 2.00\n").unwrap();
        assert_eq!(src.read_string(&uptime).unwrap(), "1.00 2.00\n");
    }

    #[test]
    fn a_sysroot_file_replaced_by_a_rename_is_read_anew() {
        let (dir, src) = tree();
        src.keep_open("/proc/uptime");
        assert!(src.kept.borrow().is_empty(), "nothing kept under a sysroot");
        assert_eq!(src.read_string("/proc/uptime").unwrap(), "12.34 5.67\n");
        fs::write(dir.join("uptime.new"), "1.00 2.00\n").unwrap();
        fs::rename(dir.join("uptime.new"), dir.join("proc/uptime")).unwrap();
        assert_eq!(src.read_string("/proc/uptime").unwrap(), "1.00 2.00\n");
    }

    fn lines_of(src: &dyn Source, path: &str) -> Vec<String> {
        let mut lines = Vec::new();
        let mut buf = Vec::new();
        src.for_each_line(path, &mut buf, &mut |l| {
            lines.push(String::from_utf8_lossy(l).into_owned())
        })
        .unwrap();
        lines
    }

    #[test]
    fn lines_are_read_in_chunks_across_piece_boundaries() {
        let (dir, src) = tree();
        // Lines of varied lengths so that pieces end mid-line, one line longer
        // than a piece, and a last line without a newline.
        let mut expected: Vec<String> = (0..20_000)
            .map(|i| format!("line {i} {}", "y".repeat(i % 37)))
            .collect();
        expected.insert(5_000, "z".repeat(LINE_CHUNK * 2 + 3));
        expected.push(String::new());
        expected.push("tail".into());
        let text = expected.join("\n");
        fs::write(dir.join("proc/diskstats"), &text).unwrap();
        assert_eq!(lines_of(&src, "/proc/diskstats"), expected);
        let host = RootFs::new("/");
        let diskstats = on_host(&dir, "proc/diskstats");
        host.keep_open(&diskstats);
        assert_eq!(lines_of(&host, &diskstats), expected);
        fs::write(dir.join("proc/diskstats"), "a\nb\n").unwrap();
        assert_eq!(lines_of(&host, &diskstats), ["a", "b"]);
        let mut buf = Vec::new();
        let err = src
            .for_each_line("/proc/missing", &mut buf, &mut |_| {})
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        // The trait's default (recordings, replays) splits the same way.
        let mut default_lines = Vec::new();
        split_lines(text.as_bytes(), &mut |l| {
            default_lines.push(String::from_utf8_lossy(l).into_owned())
        });
        assert_eq!(default_lines, expected);
        let mut names = Vec::new();
        src.for_each_dir_entry("/sys/block", &mut |n| names.push(n.to_string()))
            .unwrap();
        assert_eq!(names, src.list_dir("/sys/block").unwrap());
    }

    #[test]
    fn values_into_fills_the_callers_buffer_without_replacing_it() {
        let (_dir, src) = tree();
        let mut buf = Vec::with_capacity(8);
        let before = buf.as_ptr();
        src.values_into("perf:x", &mut buf, &mut |b: &mut Vec<u64>| {
            b.extend_from_slice(&[1, 2, 3]);
            Ok(())
        })
        .unwrap();
        assert_eq!(buf, [1, 2, 3]);
        assert_eq!(
            buf.as_ptr(),
            before,
            "the live source must reuse the buffer"
        );
    }

    #[test]
    fn write_file_needs_an_existing_file_and_writes_once() {
        let (dir, src) = tree();
        assert!(src.write_file("/proc/nope", b"1\n").is_err());
        src.write_file("/proc/uptime", b"1\n").unwrap();
        assert_eq!(fs::read(dir.join("proc/uptime")).unwrap(), b"1\n");
    }

    #[test]
    fn pread_all_reads_whole_files_of_every_size_wherever_the_offset_stands() {
        use std::io::Seek;
        let dir = scratch("pread");
        let path = dir.join("f");
        let mut buf = Vec::new();
        for len in [
            0,
            1,
            PREAD_PIECE - 1,
            PREAD_PIECE,
            PREAD_PIECE + 1,
            5000,
            100_000,
        ] {
            let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            fs::write(&path, &data).unwrap();
            let mut file = File::open(&path).unwrap();
            // Positioned reads: where the file offset stands does not matter.
            file.seek(io::SeekFrom::Start(len as u64 / 2)).unwrap();
            buf.extend_from_slice(b"stale");
            pread_all(&file, FILE_LIMIT, &mut buf).unwrap();
            assert!(buf == data, "{len} bytes read back as {}", buf.len());
        }
        fs::write(&path, [b'x'; 101]).unwrap();
        let file = File::open(&path).unwrap();
        assert!(pread_all(&file, 101, &mut buf).is_ok());
        let err = pread_all(&file, 100, &mut buf).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(buf.is_empty());
    }

    #[test]
    fn reads_stop_at_the_size_limit_and_say_so() {
        let (dir, src) = tree();
        let big = File::create(dir.join("proc/diskstats")).unwrap();
        big.set_len(FILE_LIMIT + 1).unwrap();
        let mut buf = Vec::new();
        let err = src.read_into("/proc/diskstats", &mut buf).unwrap_err();
        assert_eq!(
            err.to_string(),
            "larger than 65536 KiB, more than any kernel file of its kind holds"
        );
        assert!(src.check_answered().is_ok(), "a whole read is not noted");
        // Refused at its open, from the size its inode reports: nothing
        // read (it read 64 MiB first), and noted, as a line read past the
        // limit is, so that the report fails instead of missing devices.
        let mut lines = 0;
        let err = src
            .for_each_line("/proc/diskstats", &mut buf, &mut |_| lines += 1)
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert_eq!((lines, buf.capacity()), (0, 0));
        let noted = src.check_answered().unwrap_err().to_string();
        assert!(noted.contains("/proc/diskstats: larger than"), "{noted}");
        let host = RootFs::new("/");
        let diskstats = on_host(&dir, "proc/diskstats");
        host.keep_open(&diskstats);
        assert!(host.read_into(&diskstats, &mut buf).is_err());
        // Exactly the limit is a (huge) kernel file.
        big.set_len(FILE_LIMIT).unwrap();
        host.read_into(&diskstats, &mut buf).unwrap();
        assert_eq!(buf.len() as u64, FILE_LIMIT);
        // sysfs attributes are one page at most.
        fs::write(
            dir.join("sys/block/sda/stat"),
            vec![b'1'; SYSFS_LIMIT as usize + 1],
        )
        .unwrap();
        let err = src.read("/sys/block/sda/stat").unwrap_err();
        assert!(err.to_string().starts_with("larger than 1024 KiB"), "{err}");
    }

    #[test]
    fn a_link_to_dev_zero_is_refused_at_once() {
        let (dir, src) = tree();
        std::os::unix::fs::symlink("/dev/zero", dir.join("proc/stat")).unwrap();
        // Inside the root, /dev/zero does not exist.
        let err = src.read("/proc/stat").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        // On the host, it is a character device, not a kernel file.
        let host = RootFs::new("/");
        let path = dir.join("proc/stat").to_string_lossy().into_owned();
        let err = host.read(&path).unwrap_err();
        assert!(err.to_string().contains("character device"), "{err}");
        let mut buf = Vec::new();
        let err = host
            .for_each_line(&path, &mut buf, &mut |_| {})
            .unwrap_err();
        assert!(err.to_string().contains("character device"), "{err}");
    }

    /// Lines of `text` as `read_lines` splits them from a file.
    fn read_lines_of(dir: &std::path::Path, text: &[u8]) -> Vec<Vec<u8>> {
        let path = dir.join("proc/lines");
        fs::write(&path, text).unwrap();
        let mut lines = Vec::new();
        let mut buf = Vec::new();
        read_lines(&File::open(&path).unwrap(), u64::MAX, &mut buf, &mut |l| {
            lines.push(l.to_vec())
        })
        .unwrap();
        lines
    }

    #[test]
    fn short_lines_keep_the_buffer_at_one_piece() {
        let (dir, _src) = tree();
        // 10,000 diskstats-like lines: pieces end mid-line every time.
        let text: String = (0..10_000)
            .map(|i| format!(" 259 {i} nvme{i}n1 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n"))
            .collect();
        let path = dir.join("proc/lines");
        fs::write(&path, &text).unwrap();
        let mut buf = Vec::new();
        let mut lines = 0;
        read_lines(&File::open(&path).unwrap(), u64::MAX, &mut buf, &mut |_| {
            lines += 1
        })
        .unwrap();
        assert_eq!(lines, 10_000);
        assert_eq!(buf.capacity(), LINE_CHUNK);
    }

    #[test]
    fn lines_at_and_across_piece_boundaries_come_whole() {
        let (dir, _src) = tree();
        // Lines ending at, just before and just after piece boundaries, and
        // lines spanning many pieces.
        let mut text = Vec::new();
        let mut expected = Vec::new();
        for len in [
            0,
            1,
            LINE_CHUNK - 1,
            LINE_CHUNK,
            LINE_CHUNK + 1,
            5 * LINE_CHUNK + 7,
            3,
        ] {
            let line = vec![b'a' + (len % 26) as u8; len];
            text.extend_from_slice(&line);
            text.push(b'\n');
            expected.push(line);
        }
        text.extend_from_slice(b"no newline");
        expected.push(b"no newline".to_vec());
        assert_eq!(read_lines_of(&dir, &text), expected);
    }

    /// The search for a newline starts where the last one ended: the bytes
    /// before `scanned` (a carried line, known to hold none) are not looked
    /// at again.
    #[test]
    fn complete_lines_searches_only_the_new_bytes() {
        let mut lines = Vec::new();
        let done = complete_lines(b"a\nb\nc\nd", 3, &mut |l| lines.push(l.to_vec()));
        assert_eq!(lines, [b"a\nb".to_vec(), b"c".to_vec()]);
        assert_eq!(done, 6);
    }

    /// One 4 MB line costs about what the same bytes in 4 kB lines do.
    /// Searching a carried line again for each 8 kB piece read after it
    /// (quadratic) made the one line hundreds of times slower. A ratio of
    /// two timings of this code, not a time: it holds on a slow machine
    /// and under qemu-user (`.ci/cross`) alike.
    #[test]
    fn a_long_line_costs_what_short_lines_of_its_bytes_do() {
        let (dir, _src) = tree();
        let bytes = 4 << 20;
        let one_line = vec![b'x'; bytes];
        let mut short_lines = vec![b'x'; bytes];
        for end in short_lines.iter_mut().skip(4095).step_by(4096) {
            *end = b'\n';
        }
        // The fastest of three of each: a busy machine only slows a run.
        let fastest = |text: &[u8], lines: usize| {
            (0..3)
                .map(|_| {
                    let start = Instant::now();
                    assert_eq!(read_lines_of(&dir, text).len(), lines);
                    start.elapsed()
                })
                .min()
                .unwrap()
        };
        let long = fastest(&one_line, 1);
        let short = fastest(&short_lines, bytes / 4096);
        assert!(
            long < short * 10,
            "one line {long:?}, the same bytes in short lines {short:?}"
        );
    }
}
