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
//!   writes what it changed, and again while it decides what to undo;
//! * byte 1 is held shared by every run that reports (an interval run or
//!   `--listen`) for its whole length: the run that can take it exclusively
//!   is the only one left;
//! * the file's text says what runs switched ([`Shared`]), to be undone by
//!   the last of them to end.
//!
//! A record no reporting run holds any more was left by runs that ended
//! without undoing (killed): it is dropped with a note, and what it held
//! stays as it is, as the run that was killed left it.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
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

/// What vcpustat runs changed that the last of them to end undoes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Shared {
    /// A run switched the statistics on for itself: they go off at the end.
    pub switched_on: bool,
    /// `(before, ours)`: the frequency before the first `--temporary`
    /// change, and the one vcpustat set last.
    pub freq: Option<(i32, i32)>,
}

impl Shared {
    /// The record as the file holds it: one line per change, none when
    /// there is nothing to undo.
    pub fn to_text(self) -> String {
        let mut text = String::new();
        if self.switched_on {
            text.push_str("switched-on\n");
        }
        if let Some((before, ours)) = self.freq {
            text.push_str(&format!("freq {before} {ours}\n"));
        }
        text
    }

    /// Parses [`Shared::to_text`]'s lines; `None` for anything else (a
    /// record cut by a crash in the middle of its write).
    pub fn parse(text: &str) -> Option<Shared> {
        let mut shared = Shared::default();
        for line in text.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words[..] {
                ["switched-on"] => shared.switched_on = true,
                ["freq", before, ours] => {
                    shared.freq = Some((before.parse().ok()?, ours.parse().ok()?));
                }
                _ => return None,
            }
        }
        Some(shared)
    }
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
    /// The record as read under the mutex.
    shared: Shared,
}

/// How a run leaves: whether it was the last to report, and the record of
/// what the runs changed, emptied in the file when it was the last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Leaving {
    /// No other reporting run holds the statistics.
    pub last: bool,
    /// What the runs changed, with this run's share merged in.
    pub shared: Shared,
}

impl Session {
    /// Opens `root`'s lock file and takes the mutex, waiting up to `wait`;
    /// a `member` (a run that reports) also takes its shared byte. `None`
    /// when `root` has no `run` directory (a copy of /proc, a test tree):
    /// there is no other run to meet. The second value is a note when a
    /// record was left by runs that no longer exist.
    pub fn enter(
        root: &Path,
        member: bool,
        wait: Duration,
    ) -> io::Result<Option<(Session, Option<String>)>> {
        if !root.join("run").is_dir() {
            return Ok(None);
        }
        let path = root.join(LOCK_PATH);
        let file = open_lock_file(&path)?;
        lock_waiting(&file, MUTEX_BYTE, wait)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        let alone = set_lock(&file, MEMBER_BYTE, libc::F_WRLCK)?;
        if member {
            // Granted: the other runs hold the byte shared at most, as
            // only a run holding the mutex takes it exclusively.
            if !set_lock(&file, MEMBER_BYTE, libc::F_RDLCK)? {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    format!("{}: the runs' lock is held exclusively", path.display()),
                ));
            }
        } else if alone {
            set_lock(&file, MEMBER_BYTE, libc::F_UNLCK)?;
        }
        let mut session = Session {
            file,
            path,
            member,
            shared: Shared::default(),
        };
        let read = session.read_record()?;
        let note = match read {
            Some(shared) if !alone => {
                session.shared = shared;
                None
            }
            Some(shared) if shared == Shared::default() => None,
            left => {
                session.write_record(Shared::default())?;
                Some(abandoned(left, &session.path))
            }
        };
        Ok(Some((session, note)))
    }

    /// What the runs changed, as read when this run entered.
    pub fn shared(&self) -> Shared {
        self.shared
    }

    /// Writes `shared`, what the runs changed with this run's changes, and
    /// lets the other runs in.
    pub fn publish(&mut self, shared: Shared) -> io::Result<()> {
        self.write_record(shared)?;
        self.shared = shared;
        set_lock(&self.file, MUTEX_BYTE, libc::F_UNLCK).map(drop)
    }

    /// Takes the mutex again (waiting up to `wait`) to end this run: the
    /// record is read again, `merge` applies this run's share to it, and
    /// the result is written back, or emptied when this run is the last
    /// reporting run (its caller then undoes what it holds; a command that
    /// does not report is never the last). The other runs wait until the
    /// session is dropped, so the undo writes come before.
    pub fn leave(
        &mut self,
        wait: Duration,
        merge: impl FnOnce(Shared) -> Shared,
    ) -> io::Result<Leaving> {
        lock_waiting(&self.file, MUTEX_BYTE, wait)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", self.path.display())))?;
        let last = self.member && set_lock(&self.file, MEMBER_BYTE, libc::F_WRLCK)?;
        let shared = merge(self.read_record()?.unwrap_or_default());
        self.write_record(if last { Shared::default() } else { shared })?;
        Ok(Leaving { last, shared })
    }

    /// The record in the file; `None` when it is not one.
    fn read_record(&mut self) -> io::Result<Option<Shared>> {
        let mut text = String::new();
        self.file.seek(SeekFrom::Start(0))?;
        // A few lines; more is not a record.
        (&self.file).take(4096).read_to_string(&mut text).ok();
        Ok(Shared::parse(&text))
    }

    /// Replaces the record with `shared`.
    fn write_record(&mut self, shared: Shared) -> io::Result<()> {
        self.file.set_len(0)?;
        self.file.seek(SeekFrom::Start(0))?;
        self.file
            .write_all(shared.to_text().as_bytes())
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", self.path.display())))
    }
}

/// The note for a record no run holds: what the runs killed before they
/// ended left as it is.
fn abandoned(left: Option<Shared>, path: &Path) -> String {
    let what = match left {
        None => return format!("{}: not a record of vcpustat runs: emptied", path.display()),
        Some(Shared {
            switched_on: true,
            freq: Some((before, ours)),
        }) => format!(
            "the dispatch statistics on and the frequency at {ours} per second (it was {before})"
        ),
        Some(Shared {
            switched_on: true, ..
        }) => "the dispatch statistics on".to_string(),
        Some(Shared {
            freq: Some((before, ours)),
            ..
        }) => format!("the frequency at {ours} per second (it was {before})"),
        Some(_) => "nothing".to_string(),
    };
    format!(
        "a vcpustat run ended without undoing its changes (killed?): it left {what}; \
         vcpustat leaves that as it is (see vcpustat --status)"
    )
}

/// Opens (creating, mode 0600) the lock file at `path`, refusing a link
/// or anything but a regular file (a FIFO would block the open).
fn open_lock_file(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: not a regular file", path.display()),
        ));
    }
    Ok(file)
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
/// stopped while it held the lock cannot hang every other.
fn lock_waiting(file: &File, byte: i64, wait: Duration) -> io::Result<()> {
    let start = Instant::now();
    while !set_lock(file, byte, libc::F_WRLCK)? {
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

    fn root(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("vcpustat-session-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("run")).unwrap();
        dir
    }

    fn enter(root: &Path, member: bool) -> (Session, Option<String>) {
        Session::enter(root, member, Duration::from_millis(50))
            .unwrap()
            .expect("a run directory")
    }

    #[test]
    fn the_record_reads_back_and_anything_else_is_not_one() {
        for shared in [
            Shared::default(),
            Shared {
                switched_on: true,
                freq: None,
            },
            Shared {
                switched_on: true,
                freq: Some((50, -3)),
            },
        ] {
            assert_eq!(Shared::parse(&shared.to_text()), Some(shared));
        }
        assert_eq!(Shared::parse("switched-on\nfreq 50\n"), None);
        assert_eq!(Shared::parse("switched-\n"), None);
        assert_eq!(Shared::parse("freq 50 x\n"), None);
    }

    #[test]
    fn no_run_directory_no_session() {
        let dir = root("no-run");
        std::fs::remove_dir(dir.join("run")).unwrap();
        assert!(
            Session::enter(&dir, true, Duration::ZERO)
                .unwrap()
                .is_none()
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_last_reporting_run_to_leave_gets_the_record() {
        let dir = root("last");
        let (mut a, note) = enter(&dir, true);
        assert_eq!(note, None);
        let on = Shared {
            switched_on: true,
            freq: None,
        };
        a.publish(on).unwrap();
        let (mut b, note) = enter(&dir, true);
        assert_eq!((note, b.shared()), (None, on));
        b.publish(b.shared()).unwrap();
        // A command that does not report is never the one holding the runs.
        let (mut c, _) = enter(&dir, false);
        c.publish(c.shared()).unwrap();
        assert_eq!(
            c.leave(Duration::ZERO, |s| s).unwrap(),
            Leaving {
                last: false,
                shared: on
            }
        );
        drop(c);
        // The record stays for b, and b, the last, gets it and empties it.
        let first = a.leave(Duration::ZERO, |s| s).unwrap();
        assert_eq!(
            first,
            Leaving {
                last: false,
                shared: on
            }
        );
        drop(a);
        let second = b.leave(Duration::ZERO, |s| s).unwrap();
        assert_eq!(
            second,
            Leaving {
                last: true,
                shared: on
            }
        );
        drop(b);
        assert_eq!(std::fs::read_to_string(dir.join(LOCK_PATH)).unwrap(), "");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_run_waits_for_the_mutex_only_so_long() {
        let dir = root("mutex");
        let (_a, _) = enter(&dir, true);
        let err = Session::enter(&dir, true, Duration::from_millis(20)).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(
            err.to_string()
                .contains("vcpustat.lock: another vcpustat has held it")
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_record_no_run_holds_is_dropped_with_a_note() {
        let dir = root("abandoned");
        let (mut a, _) = enter(&dir, true);
        a.publish(Shared {
            switched_on: true,
            freq: Some((50, 100)),
        })
        .unwrap();
        // Killed: the kernel drops the locks with the file.
        drop(a);
        let (b, note) = enter(&dir, true);
        assert_eq!(b.shared(), Shared::default());
        assert_eq!(
            note.as_deref(),
            Some(
                "a vcpustat run ended without undoing its changes (killed?): it left the \
                 dispatch statistics on and the frequency at 100 per second (it was 50); \
                 vcpustat leaves that as it is (see vcpustat --status)"
            )
        );
        drop(b);
        std::fs::write(dir.join(LOCK_PATH), "switched-on\nfre").unwrap();
        let (_c, note) = enter(&dir, false);
        assert!(
            note.unwrap()
                .ends_with("vcpustat.lock: not a record of vcpustat runs: emptied")
        );
        assert_eq!(std::fs::read_to_string(dir.join(LOCK_PATH)).unwrap(), "");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_link_or_a_fifo_is_not_opened_as_the_lock() {
        let dir = root("hostile");
        std::os::unix::fs::symlink("/etc/passwd", dir.join(LOCK_PATH)).unwrap();
        assert!(Session::enter(&dir, true, Duration::ZERO).is_err());
        std::fs::remove_file(dir.join(LOCK_PATH)).unwrap();
        let fifo = std::ffi::CString::new(dir.join(LOCK_PATH).to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let err = Session::enter(&dir, true, Duration::ZERO).unwrap_err();
        assert!(err.to_string().ends_with("not a regular file"), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
