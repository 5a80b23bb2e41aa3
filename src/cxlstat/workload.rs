//! The command cxlstat counts for (`cxlstat -e EVENTS -- COMMAND`): found
//! as `execvp` finds it before any counter opens, started, waited for with
//! stop signals passed on, and its exit status as a shell shows it.
//!
//! It starts as perf stat's workload does, through `fork` and `exec`, in
//! the conditions cxlstat was given: the signals cxlstat handles are back
//! at their default (`exec` resets handlers), the open-file limit is the
//! one from before cxlstat raised it, and no descriptor of cxlstat's own
//! (all close-on-exec) reaches it.

use std::io;
use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use crate::common::fdlimit::Raised;
use crate::common::osname;
use crate::common::signals::StopSignal;

use super::error::CxlError;

/// The command given after `--`, and how it is started and waited for.
pub(super) struct Workload<'a> {
    /// The program and its arguments.
    pub(super) command: &'a [String],
}

/// A command that could not be started: the error, and the status a shell
/// gives (127 when it is not found, 126 when it cannot be executed).
pub(super) struct NotStarted {
    /// What went wrong, naming the program.
    pub(super) error: CxlError,
    /// The status a shell gives.
    pub(super) status: i32,
}

impl Workload<'_> {
    /// `e`, a failure of the command's start or wait, naming the program.
    pub(super) fn error(&self, e: io::Error) -> CxlError {
        CxlError::Command {
            program: self.command[0].clone(),
            reason: e.to_string(),
        }
    }

    fn not_started(&self, e: io::Error) -> NotStarted {
        let status = match e.raw_os_error() {
            Some(libc::ENOENT | libc::ENOTDIR) => 127,
            _ => 126,
        };
        NotStarted {
            error: self.error(e),
            status,
        }
    }

    /// Finds the program as `execvp` does (a path with `/` as given,
    /// otherwise the first executable `PATH` entry), before any counter is
    /// opened, so that a command that cannot start fails first.
    pub(super) fn check(&self) -> Result<(), NotStarted> {
        locate(&self.command[0]).map_err(|e| self.not_started(e))
    }

    /// Starts the command, with the open-file limit from before the
    /// counters' opening raised it (`raised`), if it did.
    pub(super) fn spawn(&self, raised: Option<Raised>) -> Result<Child, NotStarted> {
        // As the bytes given: an argument that is not UTF-8 carries them
        // ([`osname`]).
        let mut command = Command::new(osname::to_os_string(&self.command[0]));
        command.args(self.command[1..].iter().map(|a| osname::to_os_string(a)));
        reset_reserved_signals(&mut command);
        if let Some(raised) = raised {
            raised.restore_in(&mut command);
        }
        command.spawn().map_err(|e| self.not_started(e))
    }

    /// Waits for the command to end. Each stop signal sent to cxlstat alone
    /// (`kill`: SIGTERM, SIGHUP...; the kernel's SIGXCPU or SIGALRM) is
    /// passed on to the command, once, so that both end promptly; also one
    /// that comes after another the command outlived. One from the
    /// terminal is not, while the command is in cxlstat's process group: a
    /// terminal's Ctrl-C (or `Ctrl-\`) reaches the command by itself, as it
    /// reaches perf stat's, and once is what a command that handles it (a
    /// first Ctrl-C to finish, a second to abort) expects. A command that
    /// left the group (`setsid`, a shell's job control) gets it from
    /// cxlstat, or Ctrl-C would leave both waiting. Signals that come
    /// together, before cxlstat looks, are each passed on (lowest first).
    pub(super) fn wait(&self, child: &mut Child, stop: &StopSignal) -> Result<i32, CxlError> {
        let ended = pidfd(child);
        // Without a pidfd (before Linux 5.3, or under a seccomp filter that
        // refuses pidfd_open), cxlstat looks for the command's end every
        // `NO_PIDFD_TICK`: blocked in waitpid, which each signal's action
        // restarts (SA_RESTART), it could pass none on.
        let deadline = || ended.is_none().then(|| Instant::now() + NO_PIDFD_TICK);
        let mut seen = 0;
        loop {
            if let Some(status) = child.try_wait().map_err(|e| self.error(e))? {
                return Ok(exit_code(status));
            }
            if stop.sleep_until_next(deadline(), ended.as_ref().map(AsFd::as_fd), seen) {
                continue;
            }
            // The count first: a signal caught after it wakes the next
            // wait, whether or not it is among those taken here.
            seen = stop.latest().count();
            let pending = stop.take_pending();
            let to_the_group = pending.from_terminal().next().is_some();
            let left_the_group = to_the_group && !in_our_process_group(child);
            let terminal = pending.from_terminal().filter(|_| left_the_group);
            for signal in pending.sent().chain(terminal) {
                // SAFETY: signalling our own child, not yet reaped.
                unsafe { libc::kill(child.id() as i32, signal) };
            }
        }
    }
}

/// How often [`Workload::wait`] looks for the command's end without a
/// pidfd: its end is seen this much late at most.
const NO_PIDFD_TICK: Duration = Duration::from_millis(10);

/// Whether `child` (not yet reaped) is in cxlstat's process group, where
/// a signal the terminal sends to its foreground group reaches both.
fn in_our_process_group(child: &Child) -> bool {
    // SAFETY: getpgid(2) and getpgrp(2) only read process attributes.
    unsafe { libc::getpgid(child.id() as libc::pid_t) == libc::getpgrp() }
}

/// Gives the signals glibc reserves for itself (32 up to `SIGRTMIN`) their
/// default action in the command, as every other signal has unless its user
/// ignored it. glibc's `posix_spawn`, which std uses for a command without a
/// `pre_exec` step, ignores them in the child, and an ignored signal stays
/// ignored across `exec`: the command (and what it runs) would ignore
/// signals 32 and 33, which perf stat's workload does not.
fn reset_reserved_signals(command: &mut Command) {
    let reserved = 32..libc::SIGRTMIN();
    // SAFETY: the closure makes only rt_sigaction(2) system calls, which
    // are async-signal-safe, with a zeroed struct on its stack (SIG_DFL,
    // no flags, an empty mask: zero in every architecture's layout). A
    // raw call: glibc's sigaction refuses its reserved signals. Failures
    // (a kernel without them) change nothing and are ignored.
    unsafe {
        command.pre_exec(move || {
            let default = [0u64; 4];
            for signal in reserved.clone() {
                libc::syscall(
                    libc::SYS_rt_sigaction,
                    signal,
                    default.as_ptr(),
                    std::ptr::null_mut::<u64>(),
                    KERNEL_SIGSET_BYTES,
                );
            }
            Ok(())
        })
    };
}

/// The size of the kernel's signal set, which rt_sigaction(2) checks: 64
/// signals on every Linux architecture but MIPS.
const KERNEL_SIGSET_BYTES: usize = 8;

/// A pidfd of `child` (readable once it ends), or `None` on kernels
/// before 5.3, where the waits fall back to looking every
/// [`NO_PIDFD_TICK`] and to the interval.
pub(super) fn pidfd(child: &Child) -> Option<OwnedFd> {
    // SAFETY: pidfd_open(2) of our own child, not yet reaped.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, child.id(), 0) };
    // SAFETY: a fresh descriptor that nobody else owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Whether `word` names a program `-- CMD` would run: in `PATH`, or a
/// path to an executable file.
pub(super) fn is_program(word: &str) -> bool {
    locate(word).is_ok()
}

/// Whether `program` can be executed, with the errno `execvp` would give.
fn locate(program: &str) -> io::Result<()> {
    let program = PathBuf::from(osname::to_os_string(program));
    if program.as_os_str().as_bytes().contains(&b'/') {
        return executable(&program);
    }
    let enoent = || io::Error::from_raw_os_error(libc::ENOENT);
    if program.as_os_str().is_empty() {
        return Err(enoent());
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    let mut denied = None;
    for dir in std::env::split_paths(&path) {
        let dir = if dir.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            dir
        };
        match executable(&dir.join(&program)) {
            Ok(()) => return Ok(()),
            // execvp reports EACCES if some entry was found but not executable.
            Err(e) if e.raw_os_error() == Some(libc::EACCES) => denied = Some(e),
            Err(_) => {}
        }
    }
    Err(denied.unwrap_or_else(enoent))
}

/// `Ok` for a file this process may execute; the errno `execve` gives otherwise.
fn executable(path: &Path) -> io::Result<()> {
    if std::fs::metadata(path)?.is_dir() {
        return Err(io::Error::from_raw_os_error(libc::EACCES));
    }
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::ENOENT))?;
    // SAFETY: a NUL-terminated path; access() only reads it.
    if unsafe { libc::access(c_path.as_ptr(), libc::X_OK) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The exit status a shell would show for the command.
pub(super) fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}
