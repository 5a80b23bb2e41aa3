//! Runs of vcpustat that share the dispatch statistics.
//!
//! The kernel has one on/off switch and one drain frequency for every
//! reader. A run that switches the statistics on for itself must not switch
//! them off under another vcpustat run still reporting (an exporter started
//! by a service manager, say), and a `--temporary` frequency must go back to
//! the value before the first such run, not to the one before the last.
//!
//! So the runs coordinate through one file, `ROOT/run/vcpustat.lock`, with
//! open-file-description locks (`F_OFD_SETLK`), which the kernel drops when
//! the last descriptor of the open file is closed, `kill -9` included:
//!
//! * byte 0 is a mutex, held while a run reads the state, changes it and
//!   writes what it changed, and again from its end's reading of the record
//!   until its undo writes are done;
//! * byte 1 is held shared by every run that reports (an interval run or
//!   `--listen`) for its whole length: the run that can take it exclusively
//!   is the only one left;
//! * the file's text says what runs switched ([`Shared`]), to be undone by
//!   the last of them to end.
//!
//! * byte 2 is held by a `trace record --events` run while it has
//!   `dtl_event_mask` set ([`EventMaskLock`]).
//!
//! A record no reporting run holds any more was left by runs that ended
//! without undoing (killed, or the last one's undo write failed): it is
//! dropped with a note, and what it held stays as it is, as those runs
//! left it.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::os::unix::io::{AsRawFd, FromRawFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The lock file, under the root the kernel files are read from.
pub const LOCK_PATH: &str = "run/vcpustat.lock";

/// How long a run waits for another to finish changing the statistics:
/// that takes a few writes, so a longer wait means a run stopped (`^Z`)
/// in the middle.
pub const MUTEX_WAIT: Duration = Duration::from_secs(5);

/// The lock byte of the mutex.
const MUTEX_BYTE: i64 = 0;
/// The lock byte every reporting run holds shared.
const MEMBER_BYTE: i64 = 1;
/// The lock byte a `trace record` run holds from reading `dtl_event_mask`
/// until it has put it back.
const EVENT_MASK_BYTE: i64 = 2;
/// The record's size: its lines, then newlines. One write of this size
/// replaces a record whole, so no run killed in the middle of a write
/// leaves half of one.
const RECORD_BYTES: usize = 128;

/// What vcpustat runs changed that the last of them to end undoes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Shared {
    /// The claim of the run that switched the statistics on for itself (a
    /// number of that switch's own, [`new_claim`]): they go off at the end.
    /// A run that saw someone else switch them since drops only the claim
    /// it knew, not a newer one.
    pub switched_on: Option<u64>,
    /// `(before, ours)`: the frequency before the first `--temporary`
    /// change, and the one vcpustat set last.
    pub freq: Option<(i32, i32)>,
}

impl Shared {
    /// The record as the file holds it: one line per change, none when
    /// there is nothing to undo.
    pub fn to_text(self) -> String {
        let mut text = String::new();
        if let Some(claim) = self.switched_on {
            text.push_str(&format!("switched-on {claim}\n"));
        }
        if let Some((before, ours)) = self.freq {
            text.push_str(&format!("freq {before} {ours}\n"));
        }
        text
    }

    /// Parses [`Shared::to_text`]'s lines (empty lines aside); `None` for
    /// anything else.
    pub fn parse(text: &str) -> Option<Shared> {
        let mut shared = Shared::default();
        for line in text.lines().filter(|l| !l.is_empty()) {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words[..] {
                ["switched-on", claim] => shared.switched_on = Some(claim.parse().ok()?),
                ["freq", before, ours] => {
                    shared.freq = Some((before.parse().ok()?, ours.parse().ok()?));
                }
                _ => return None,
            }
        }
        Some(shared)
    }

    /// The changes of `self` still in effect when the statistics are `on`
    /// and the frequency is `freq`: those of a killed run that nobody has
    /// undone since.
    pub fn in_effect(self, on: bool, freq: i32) -> Shared {
        Shared {
            switched_on: self.switched_on.filter(|_| on),
            freq: self.freq.filter(|&(_, ours)| ours == freq),
        }
    }
}

/// A record no reporting run held, which a run entering dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Abandoned {
    /// Not a record of vcpustat runs (the lock file's path): emptied.
    NotARecord(PathBuf),
    /// The changes of runs killed before they undid them.
    Left(Shared),
}

impl Abandoned {
    /// The note that says what was dropped. `now`, the statistics' state
    /// (on, frequency) when known, leaves out the changes undone since (by
    /// hand, say): with none left, there is nothing to say.
    pub fn note(&self, now: Option<(bool, i32)>) -> Option<String> {
        match self {
            Abandoned::NotARecord(path) => Some(format!(
                "{}: not a record of vcpustat runs: emptied",
                crate::common::escape::path(path)
            )),
            Abandoned::Left(shared) => {
                let left = now.map_or(*shared, |(on, freq)| shared.in_effect(on, freq));
                // The record is dropped: --status can no longer say how to
                // put it back, so the note does.
                (left != Shared::default()).then(|| {
                    format!(
                        "a vcpustat run ended without undoing its changes (killed, \
                         or an undo failed): it left \
                         {}; vcpustat leaves that as it is ({})",
                        left_as_it_is(left),
                        putting_back(left)
                    )
                })
            }
        }
    }
}

/// A number for a switch on, told apart from the others a machine makes:
/// the time in nanoseconds (the mutex keeps two runs from taking one at
/// the same instant).
pub fn new_claim() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
}

/// One run's place among the runs sharing the statistics: the open lock
/// file, holding the mutex between [`Session::enter`] and
/// [`Session::publish`] and from [`Session::leave`] on.
#[derive(Debug)]
pub struct Session {
    file: File,
    path: PathBuf,
    /// Holds the shared byte: a run that reports.
    member: bool,
    /// The record as read when this run entered.
    shared: Shared,
    /// This run was the last reporting run at its end: it undoes the
    /// record's changes, then empties it ([`Session::end_with`]).
    last: bool,
}

/// How a run leaves: whether it was the last to report, and the record of
/// what the runs changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Leaving {
    /// No other reporting run holds the statistics.
    pub last: bool,
    /// What the runs changed, with this run's share merged in.
    pub shared: Shared,
}

impl Session {
    /// Opens `root`'s lock file and takes the mutex, waiting up to `wait`
    /// unless `stopped` says the run was asked to stop meanwhile (an
    /// `Interrupted` error: nothing was changed); a `member` (a run that
    /// reports) also takes its shared byte. `None`
    /// when `root` has no `run` directory (a copy of /proc, a test tree):
    /// there is no other run to meet. The second value is the record runs
    /// that no longer exist left, which this run dropped.
    pub fn enter(
        root: &Path,
        member: bool,
        wait: Duration,
        stopped: &dyn Fn() -> bool,
    ) -> io::Result<Option<(Session, Option<Abandoned>)>> {
        let Some(file) = open_lock_file(&root.join("run"))? else {
            return Ok(None);
        };
        let mut session = Session {
            file,
            path: root.join(LOCK_PATH),
            member,
            shared: Shared::default(),
            last: false,
        };
        let in_path = |e| session.in_path(e);
        lock_waiting(&session.file, MUTEX_BYTE, wait, stopped).map_err(in_path)?;
        let alone = set_lock(&session.file, MEMBER_BYTE, libc::F_WRLCK).map_err(in_path)?;
        if member {
            // Granted: the other runs hold the byte shared at most, as
            // only a run holding the mutex takes it exclusively.
            if !set_lock(&session.file, MEMBER_BYTE, libc::F_RDLCK).map_err(in_path)? {
                return Err(in_path(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    "the runs' lock is held exclusively",
                )));
            }
        } else if alone {
            set_lock(&session.file, MEMBER_BYTE, libc::F_UNLCK).map_err(in_path)?;
        }
        let (shared, note) = match session.read_record()? {
            Some(shared) if !alone => (shared, None),
            Some(shared) if shared == Shared::default() => (shared, None),
            Some(left) => (Shared::default(), Some(Abandoned::Left(left))),
            None => (
                Shared::default(),
                Some(Abandoned::NotARecord(session.path.clone())),
            ),
        };
        // Written now, before anything is changed, at its full size: later
        // writes only replace its bytes, which a full file system allows.
        session.write_record(shared)?;
        session.shared = shared;
        Ok(Some((session, note)))
    }

    /// What the runs changed, as read when this run entered.
    pub fn shared(&self) -> Shared {
        self.shared
    }

    /// Whether this run reports, and so holds a share of the statistics.
    pub fn is_member(&self) -> bool {
        self.member
    }

    /// Writes `shared`, what the runs changed with this run's changes, and
    /// lets the other runs in.
    pub fn publish(&mut self, shared: Shared) -> io::Result<()> {
        self.write_record(shared)?;
        set_lock(&self.file, MUTEX_BYTE, libc::F_UNLCK).map(drop)
    }

    /// Drops `claim` from the record if it still holds it (someone else
    /// switched the statistics during the run), taking the mutex for it
    /// (waiting up to `wait`).
    pub fn drop_claim(&mut self, claim: u64, wait: Duration) -> io::Result<()> {
        lock_waiting(&self.file, MUTEX_BYTE, wait, &|| false).map_err(|e| self.in_path(e))?;
        let result = self.read_record().and_then(|record| match record {
            Some(mut shared) if shared.switched_on == Some(claim) => {
                shared.switched_on = None;
                self.write_record(shared)
            }
            _ => Ok(()),
        });
        set_lock(&self.file, MUTEX_BYTE, libc::F_UNLCK)?;
        result
    }

    /// Takes the mutex again (waiting up to `wait`) to end a reporting
    /// run: the record is read again and `merge` applies this run's share
    /// to it. Another run still reporting gets it written back; the last
    /// (its caller then undoes what it holds) empties it after its undo
    /// writes ([`Session::end_with`]), so that killed before them it leaves
    /// the record of what stays. The other runs wait until the session is
    /// dropped, so the undo writes come first.
    pub fn leave(
        &mut self,
        wait: Duration,
        merge: impl FnOnce(Shared) -> Shared,
    ) -> io::Result<Leaving> {
        lock_waiting(&self.file, MUTEX_BYTE, wait, &|| false).map_err(|e| self.in_path(e))?;
        let last = self.member
            && set_lock(&self.file, MEMBER_BYTE, libc::F_WRLCK).map_err(|e| self.in_path(e))?;
        let shared = merge(self.read_record()?.unwrap_or_default());
        if !last {
            self.write_record(shared)?;
        }
        self.last = last;
        Ok(Leaving { last, shared })
    }

    /// Whether this run left as the last reporting run.
    pub fn is_last(&self) -> bool {
        self.last
    }

    /// Leaves `left` as the record, after the last run's undo writes: what
    /// they failed to undo, none when all were done. Failing to write
    /// nothing, truncates it (an empty file is an empty record).
    pub fn end_with(&mut self, left: Shared) -> io::Result<()> {
        let written = self.write_record(left);
        if written.is_err() && left == Shared::default() {
            return self.file.set_len(0).map_err(|e| self.in_path(e));
        }
        written
    }

    /// `err`, naming the lock file.
    fn in_path(&self, err: io::Error) -> io::Error {
        io::Error::new(
            err.kind(),
            format!("{}: {err}", crate::common::escape::path(&self.path)),
        )
    }

    /// The record in the file; `None` when it is not one.
    fn read_record(&mut self) -> io::Result<Option<Shared>> {
        let mut bytes = Vec::new();
        // A record is RECORD_BYTES; a few more tell a longer file.
        self.file
            .seek(SeekFrom::Start(0))
            .and_then(|_| {
                (&self.file)
                    .take(4 * RECORD_BYTES as u64)
                    .read_to_end(&mut bytes)
            })
            .map_err(|e| self.in_path(e))?;
        if bytes.len() > RECORD_BYTES {
            return Ok(None);
        }
        Ok(std::str::from_utf8(&bytes).ok().and_then(Shared::parse))
    }

    /// Replaces the record with `shared`, in one write of [`RECORD_BYTES`].
    fn write_record(&mut self, shared: Shared) -> io::Result<()> {
        let mut bytes = shared.to_text().into_bytes();
        bytes.resize(RECORD_BYTES, b'\n');
        let in_path = |e| self.in_path(e);
        self.file.write_all_at(&bytes, 0).map_err(in_path)?;
        if self.file.metadata().map_err(in_path)?.len() > RECORD_BYTES as u64 {
            self.file.set_len(RECORD_BYTES as u64).map_err(in_path)?;
        }
        Ok(())
    }
}

/// Held by a `trace record` run from reading `dtl_event_mask` until it has
/// put it back, its rings open: the mask is one for every ring, and two
/// runs that set it at once each took the other's for the one to put back
/// (left changed), or opened rings with the other's events. Released when
/// dropped.
#[derive(Debug)]
pub struct EventMaskLock {
    _file: File,
}

impl EventMaskLock {
    /// Takes the lock in `root`'s lock file, waiting up to `wait` for
    /// another run to put the mask back (`TimedOut` past it), or until
    /// `stopped` says a stop signal came (`Interrupted`); `None` when
    /// `root` has no `run` directory (as [`Session::enter`]).
    pub fn take(
        root: &Path,
        wait: Duration,
        stopped: &dyn Fn() -> bool,
    ) -> io::Result<Option<EventMaskLock>> {
        let Some(file) = open_lock_file(&root.join("run"))? else {
            return Ok(None);
        };
        lock_waiting(&file, EVENT_MASK_BYTE, wait, stopped).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "{}: {e}",
                    crate::common::escape::path(&root.join(LOCK_PATH))
                ),
            )
        })?;
        Ok(Some(EventMaskLock { _file: file }))
    }
}

/// What the record under `root` says, for `--status`, read without
/// taking a lock: `None` without a record, or with an empty one. The
/// second value says whether a reporting run holds it (else it was left by
/// runs that were killed).
pub fn peek(root: &Path) -> Option<(Shared, bool)> {
    let path = root.join(LOCK_PATH);
    let file = open_at(None, &path, libc::O_RDONLY | libc::O_NONBLOCK, 0).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    (&file)
        .take(RECORD_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    let shared = Shared::parse(std::str::from_utf8(&bytes).ok()?)?;
    if bytes.len() > RECORD_BYTES || shared == Shared::default() {
        return None;
    }
    Some((shared, locked(&file, MEMBER_BYTE)))
}

/// The line `--status` adds for a record [`peek`] found, when the
/// statistics are `now` (on, frequency): none for a record of killed runs
/// whose changes have all been undone since.
pub fn status_line(shared: Shared, held: bool, (on, freq): (bool, i32)) -> Option<String> {
    if !held {
        let shared = shared.in_effect(on, freq);
        if shared == Shared::default() {
            return None;
        }
        return Some(format!(
            "vcpustat runs: one ended without undoing its changes (killed, \
             or an undo failed) and left {}; {}",
            left_as_it_is(shared),
            putting_back(shared)
        ));
    }
    let mut undo = Vec::new();
    if shared.switched_on.is_some() {
        undo.push("switches the dispatch statistics off".to_string());
    }
    if let Some((before, _)) = shared.freq {
        undo.push(format!("puts the frequency back to {before} per second"));
    }
    Some(format!(
        "vcpustat runs reporting now: the last to end {}",
        undo.join(" and ")
    ))
}

/// Whether another open file holds a lock on `byte` of `file`.
fn locked(file: &File, byte: i64) -> bool {
    // SAFETY: flock is plain data; zeroed is a valid value.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = libc::F_WRLCK as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = byte;
    lock.l_len = 1;
    // SAFETY: a valid descriptor and flock, which the call fills in.
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_GETLK, &mut lock) };
    rc == 0 && lock.l_type != libc::F_UNLCK as libc::c_short
}

/// What a record no run holds left: the changes the killed runs made (a
/// record that holds none is not one they left).
/// The commands that undo what `shared`, left by a killed run, holds:
/// `vcpustat --disable and vcpustat --freq 50 put that back`.
fn putting_back(shared: Shared) -> String {
    let mut fix = Vec::new();
    if shared.switched_on.is_some() {
        fix.push("vcpustat --disable".to_string());
    }
    if let Some((before, _)) = shared.freq {
        fix.push(format!("vcpustat --freq {before}"));
    }
    let verb = if fix.len() == 1 { "puts" } else { "put" };
    format!("{} {verb} that back", fix.join(" and "))
}

fn left_as_it_is(shared: Shared) -> String {
    let mut left = Vec::new();
    if shared.switched_on.is_some() {
        left.push("the dispatch statistics on".to_string());
    }
    if let Some((before, ours)) = shared.freq {
        left.push(format!(
            "the frequency at {ours} per second (it was {before})"
        ));
    }
    left.join(" and ")
}

/// Opens (creating it, mode 0600) the lock file in directory `run`; `None`
/// when there is no such directory (a link is not one). Only what no other
/// user could have made is taken: `run` a directory of this user's that no
/// one else may write to, and in it a regular file with one link, owned by
/// this user, with no permission for others (a link, a FIFO or another
/// user's file would let that user have vcpustat truncate a file, or hold
/// the locks and keep every run from starting or from ever being the last).
fn open_lock_file(run: &Path) -> io::Result<Option<File>> {
    let in_path = |what: &Path, e: io::Error| {
        io::Error::new(
            e.kind(),
            format!("{}: {e}", crate::common::escape::path(what)),
        )
    };
    let refuse = |what: &Path, why: &str| {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: {why}", crate::common::escape::path(what)),
        ))
    };
    let dir = match open_at(None, run, libc::O_RDONLY | libc::O_DIRECTORY, 0) {
        Ok(dir) => dir,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => return Ok(None),
        Err(e) => return Err(in_path(run, e)),
    };
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    let meta = dir.metadata().map_err(|e| in_path(run, e))?;
    if meta.uid() != euid || meta.mode() & 0o022 != 0 {
        return refuse(
            run,
            "a directory others may write to: not where vcpustat runs meet",
        );
    }
    let path = run.join("vcpustat.lock");
    let file = open_at(
        Some(&dir),
        Path::new("vcpustat.lock"),
        libc::O_RDWR | libc::O_CREAT,
        0o600,
    )
    .map_err(|e| in_path(&path, e))?;
    let meta = file.metadata().map_err(|e| in_path(&path, e))?;
    if !meta.is_file() {
        return refuse(&path, "not a regular file");
    }
    if meta.nlink() != 1 || meta.uid() != euid || meta.mode() & 0o077 != 0 {
        return refuse(
            &path,
            "not a file of vcpustat's own (another owner, mode or link)",
        );
    }
    Ok(Some(file))
}

/// `openat(dir, path, flags | O_NOFOLLOW | O_CLOEXEC, mode)`, from the
/// working directory without `dir`. `O_NOFOLLOW` refuses a link as the last
/// component; an `O_RDWR` open of a FIFO does not block on Linux, so one is
/// opened and then refused.
fn open_at(dir: Option<&File>, path: &Path, flags: i32, mode: libc::mode_t) -> io::Result<File> {
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in the path"))?;
    let dir_fd = dir.map_or(libc::AT_FDCWD, |d| d.as_raw_fd());
    // SAFETY: a valid C string and descriptor; the result is checked.
    let fd = unsafe {
        libc::openat(
            dir_fd,
            c_path.as_ptr(),
            flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            libc::c_uint::from(mode),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor just opened and owned by nothing else.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// Sets the open-file-description lock `kind` on byte `byte` of `file`
/// without waiting: `Ok(false)` when another open file holds a lock in the
/// way.
fn set_lock(file: &File, byte: i64, kind: i32) -> io::Result<bool> {
    // SAFETY: flock is plain data; zeroed is a valid value (l_pid must be 0
    // for OFD locks).
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = kind as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = byte;
    lock.l_len = 1;
    // SAFETY: a valid descriptor and a valid flock for the call.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &lock) } == 0 {
        return Ok(true);
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EAGAIN | libc::EACCES) => Ok(false),
        _ => Err(err),
    }
}

/// Takes the write lock on `byte`, trying every few milliseconds for up to
/// `wait`: a bounded wait rather than `F_OFD_SETLKW`, so that a run
/// stopped while it held the lock cannot hang every other. Gives up with
/// an `Interrupted` error as soon as `stopped` is true (a run's end passes
/// `|| false`: what it undoes must be done).
fn lock_waiting(
    file: &File,
    byte: i64,
    wait: Duration,
    stopped: &dyn Fn() -> bool,
) -> io::Result<()> {
    let start = Instant::now();
    while !set_lock(file, byte, libc::F_WRLCK)? {
        if stopped() {
            return Err(io::Error::new(
                io::ErrorKind::Interrupted,
                "stopped while another vcpustat held it",
            ));
        }
        if start.elapsed() >= wait {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "another vcpustat has held it for over {} s (stopped?)",
                    wait.as_secs_f64()
                ),
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::scratch::{Scratch, scratch};
    use std::os::unix::fs::PermissionsExt;

    fn root(name: &str) -> Scratch {
        let dir = scratch(&format!("vcpustat-session-{name}"));
        std::fs::create_dir_all(dir.join("run")).unwrap();
        std::fs::set_permissions(dir.join("run"), std::fs::Permissions::from_mode(0o755)).unwrap();
        dir
    }

    fn enter(root: &Path, member: bool) -> (Session, Option<Abandoned>) {
        Session::enter(root, member, Duration::from_millis(50), &|| false)
            .unwrap()
            .expect("a run directory")
    }

    fn record(root: &Path) -> Option<Shared> {
        Shared::parse(&std::fs::read_to_string(root.join(LOCK_PATH)).unwrap())
    }

    const ON: Shared = Shared {
        switched_on: Some(7),
        freq: None,
    };

    #[test]
    fn the_record_reads_back_and_anything_else_is_not_one() {
        for shared in [
            Shared::default(),
            ON,
            Shared {
                switched_on: Some(u64::MAX),
                freq: Some((i32::MIN, i32::MAX)),
            },
        ] {
            let mut text = shared.to_text();
            assert!(text.len() <= RECORD_BYTES, "{text}");
            assert_eq!(Shared::parse(&text), Some(shared));
            text.push_str("\n\n");
            assert_eq!(Shared::parse(&text), Some(shared), "padding");
        }
        assert_eq!(Shared::parse("switched-on\n"), None);
        assert_eq!(Shared::parse("switched-on 7\nfreq 50\n"), None);
        assert_eq!(Shared::parse("freq 50 x\n"), None);
    }

    #[test]
    fn no_run_directory_no_session() {
        let dir = root("no-run");
        std::fs::remove_dir(dir.join("run")).unwrap();
        assert!(
            Session::enter(&dir, true, Duration::ZERO, &|| false)
                .unwrap()
                .is_none()
        );
        std::fs::write(dir.join("run"), "").unwrap();
        assert!(
            Session::enter(&dir, true, Duration::ZERO, &|| false)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn the_last_reporting_run_to_leave_gets_the_record() {
        let dir = root("last");
        let (mut a, note) = enter(&dir, true);
        assert_eq!(note, None);
        a.publish(ON).unwrap();
        let (mut b, note) = enter(&dir, true);
        assert_eq!((note, b.shared()), (None, ON));
        b.publish(b.shared()).unwrap();
        // A command that does not report is never the one holding the runs.
        let (mut c, _) = enter(&dir, false);
        c.publish(c.shared()).unwrap();
        let leaving = c.leave(Duration::ZERO, |s| s).unwrap();
        assert_eq!(
            leaving,
            Leaving {
                last: false,
                shared: ON
            }
        );
        drop(c);
        // The record stays for b, and b, the last, gets it, and empties it
        // once its undo writes are done.
        let leaving = a.leave(Duration::ZERO, |s| s).unwrap();
        assert_eq!(
            leaving,
            Leaving {
                last: false,
                shared: ON
            }
        );
        drop(a);
        assert_eq!(record(&dir), Some(ON));
        let leaving = b.leave(Duration::ZERO, |s| s).unwrap();
        assert_eq!(
            leaving,
            Leaving {
                last: true,
                shared: ON
            }
        );
        assert!(b.is_last());
        assert_eq!(
            record(&dir),
            Some(ON),
            "kept until the undo writes are done"
        );
        b.end_with(Shared::default()).unwrap();
        drop(b);
        assert_eq!(record(&dir), Some(Shared::default()));
        assert_eq!(
            std::fs::metadata(dir.join(LOCK_PATH)).unwrap().len(),
            RECORD_BYTES as u64
        );
    }

    #[test]
    fn a_claim_is_dropped_only_while_the_record_holds_it() {
        let dir = root("claim");
        let (mut a, _) = enter(&dir, true);
        a.publish(ON).unwrap();
        a.drop_claim(8, Duration::ZERO).unwrap();
        assert_eq!(record(&dir), Some(ON), "another claim");
        a.drop_claim(7, Duration::ZERO).unwrap();
        assert_eq!(record(&dir), Some(Shared::default()));
        // The mutex is free again.
        let (_b, _) = enter(&dir, true);
    }

    #[test]
    fn a_run_waits_for_the_mutex_only_so_long() {
        let dir = root("mutex");
        let (_a, _) = enter(&dir, true);
        let err = Session::enter(&dir, true, Duration::from_millis(20), &|| false).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(
            err.to_string()
                .contains("vcpustat.lock: another vcpustat has held it")
        );
        // Asked to stop meanwhile: at once, however long it may wait.
        let started = Instant::now();
        let err = Session::enter(&dir, true, Duration::from_secs(60), &|| true).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::Interrupted);
        assert!(started.elapsed() < Duration::from_secs(30));
    }

    #[test]
    fn a_record_no_run_holds_is_dropped_with_a_note() {
        let dir = root("abandoned");
        let (mut a, _) = enter(&dir, true);
        a.publish(Shared {
            switched_on: Some(7),
            freq: Some((50, 100)),
        })
        .unwrap();
        // Killed: the kernel drops the locks with the file.
        drop(a);
        let (b, abandoned) = enter(&dir, true);
        assert_eq!(b.shared(), Shared::default());
        let abandoned = abandoned.unwrap();
        let left_both = "a vcpustat run ended without undoing its changes (killed, \
                         or an undo failed): it left \
                         the dispatch statistics on and the frequency at 100 per second (it \
                         was 50); vcpustat leaves that as it is (vcpustat --disable and \
                         vcpustat --freq 50 put that back)";
        // Without the state, or with both changes still in effect: both.
        assert_eq!(abandoned.note(None).as_deref(), Some(left_both));
        assert_eq!(
            abandoned.note(Some((true, 100))).as_deref(),
            Some(left_both)
        );
        // What was undone since (by hand) is not said to be left.
        assert_eq!(
            abandoned.note(Some((false, 100))).as_deref(),
            Some(
                "a vcpustat run ended without undoing its changes (killed, \
                 or an undo failed): it left the \
                 frequency at 100 per second (it was 50); vcpustat leaves that as it is \
                 (vcpustat --freq 50 puts that back)"
            )
        );
        assert!(abandoned.note(Some((true, 50))).unwrap().contains(
            "it left the dispatch statistics on; vcpustat leaves that as it is \
                     (vcpustat --disable puts that back)"
        ));
        assert_eq!(abandoned.note(Some((false, 50))), None);
        drop(b);
        // Longer than a record, then not UTF-8: not one.
        for bytes in [vec![b'\n'; 4 * RECORD_BYTES], vec![0xff; 8]] {
            std::fs::write(dir.join(LOCK_PATH), bytes).unwrap();
            let (_c, abandoned) = enter(&dir, false);
            let note = abandoned.unwrap().note(Some((false, 50))).unwrap();
            assert!(note.ends_with("vcpustat.lock: not a record of vcpustat runs: emptied"));
            assert_eq!(record(&dir), Some(Shared::default()));
        }
    }

    #[test]
    fn only_a_file_and_directory_of_vcpustat_own_are_used() {
        let dir = root("hostile");
        let lock = dir.join(LOCK_PATH);
        let refused = |dir: &Path| {
            Session::enter(dir, true, Duration::ZERO, &|| false)
                .unwrap_err()
                .to_string()
        };
        std::os::unix::fs::symlink("/etc/passwd", &lock).unwrap();
        assert!(refused(&dir).contains("vcpustat.lock"));
        std::fs::remove_file(&lock).unwrap();
        let fifo = std::ffi::CString::new(lock.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        assert!(refused(&dir).ends_with("vcpustat.lock: not a regular file"));
        std::fs::remove_file(&lock).unwrap();
        // A hard link to a file elsewhere (that vcpustat would truncate).
        let elsewhere = dir.join("elsewhere");
        std::fs::write(&elsewhere, "precious").unwrap();
        std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::hard_link(&elsewhere, &lock).unwrap();
        assert!(
            refused(&dir).ends_with("not a file of vcpustat's own (another owner, mode or link)")
        );
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "precious");
        std::fs::remove_file(&lock).unwrap();
        // A file others may read or write.
        std::fs::write(&lock, "").unwrap();
        std::fs::set_permissions(&lock, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(
            refused(&dir).ends_with("not a file of vcpustat's own (another owner, mode or link)")
        );
        std::fs::remove_file(&lock).unwrap();
        // A run directory others may write to, and one that is a link.
        std::fs::set_permissions(dir.join("run"), std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(
            refused(&dir)
                .ends_with("a directory others may write to: not where vcpustat runs meet")
        );
        std::fs::remove_dir(dir.join("run")).unwrap();
        std::os::unix::fs::symlink("/tmp", dir.join("run")).unwrap();
        assert!(
            Session::enter(&dir, true, Duration::ZERO, &|| false)
                .unwrap()
                .is_none(),
            "a link is not the run directory"
        );
    }

    #[test]
    fn status_tells_what_the_runs_will_undo_or_what_killed_runs_left() {
        let dir = root("status");
        assert!(peek(&dir).is_none(), "no record");
        let both = Shared {
            switched_on: Some(7),
            freq: Some((50, 40)),
        };
        let (mut a, _) = enter(&dir, true);
        a.publish(both).unwrap();
        let (shared, held) = peek(&dir).unwrap();
        assert_eq!((shared, held), (both, true));
        assert_eq!(
            status_line(shared, held, (true, 40)).unwrap(),
            "vcpustat runs reporting now: the last to end switches the dispatch statistics off \
             and puts the frequency back to 50 per second"
        );
        drop(a);
        let (shared, held) = peek(&dir).unwrap();
        assert!(!held, "the run is gone");
        assert_eq!(
            status_line(shared, held, (true, 40)).unwrap(),
            "vcpustat runs: one ended without undoing its changes (killed, \
             or an undo failed) and left the \
             dispatch statistics on and the frequency at 40 per second (it was 50); vcpustat \
             --disable and vcpustat --freq 50 put that back"
        );
        // Undone by hand since, in part, then whole: what is left, then nothing.
        assert_eq!(
            status_line(shared, held, (false, 40)).unwrap(),
            "vcpustat runs: one ended without undoing its changes (killed, \
             or an undo failed) and left the \
             frequency at 40 per second (it was 50); vcpustat --freq 50 puts that back"
        );
        assert_eq!(status_line(shared, held, (false, 50)), None);
        let (mut b, _) = enter(&dir, true);
        b.publish(Shared::default()).unwrap();
        assert!(peek(&dir).is_none(), "an empty record");
        drop(b);
    }
}
