//! Standard output that a stop signal can interrupt.
//!
//! When whoever reads our output stops reading (a stalled pager, a full pipe
//! to a hung consumer), a plain `write` blocks for as long as they do, and the
//! kernel restarts it after each signal: a SIGTERM from a service manager
//! would then go unanswered until SIGKILL, and vcpustat could not switch the
//! dispatch statistics back off. [`StoppableStdout`] first waits until the
//! descriptor can take data, or a stop signal arrives, whichever is first;
//! then it writes no more than a pipe accepts without blocking. After a stop
//! signal the end of the output (a JSON document's close, totals) is still
//! written while the reader takes some of it every [`GRACE_AFTER_STOP`];
//! once it has taken nothing for that long, writes fail with
//! [`StoppedWhileWriting`], which the run reports as an output error.

use std::fmt;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::time::{Duration, Instant};

use super::signals::StopSignal;

/// What a write returns when a stop signal ended the wait for the reader.
#[derive(Debug)]
pub struct StoppedWhileWriting(pub i32);

impl fmt::Display for StoppedWhileWriting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "stopped by signal {} while the output was not read",
            self.0
        )
    }
}

impl std::error::Error for StoppedWhileWriting {}

/// How long, after a stop signal, the rest of the output waits for a
/// reader that takes none of it.
pub const GRACE_AFTER_STOP: Duration = Duration::from_secs(1);

/// File descriptor 1, written so that a stop signal ends a blocked write.
/// Wrap it in a `BufWriter`: each `write` costs a `poll` and a `write`.
pub struct StoppableStdout<'a> {
    stop: &'a StopSignal,
    /// The most one `write` may carry: what a pipe or socket is sure to
    /// accept once it polls writable; unlimited for regular files.
    chunk: usize,
    /// Set at the first write after a stop signal, and moved on by each
    /// write the reader takes: when to give up.
    give_up_at: Option<Instant>,
}

impl<'a> StoppableStdout<'a> {
    /// Standard output, interrupted by `stop`.
    pub fn new(stop: &'a StopSignal) -> StoppableStdout<'a> {
        StoppableStdout {
            stop,
            chunk: chunk_for(libc::STDOUT_FILENO),
            give_up_at: None,
        }
    }
}

/// `PIPE_BUF` for anything that can fill up (pipes, sockets, terminals); no
/// limit for regular files and block devices, which never wait for a reader.
pub fn chunk_for(fd: libc::c_int) -> usize {
    // SAFETY: fstat writes into a zeroed, properly sized struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } == 0 {
        let kind = st.st_mode & libc::S_IFMT;
        if kind == libc::S_IFREG || kind == libc::S_IFBLK {
            return usize::MAX;
        }
    }
    libc::PIPE_BUF
}

/// Waits until `fd` takes data. Before a stop signal that wait is as long
/// as the reader needs; after one, it ends at `give_up_at` (set at the
/// first wait after the signal, [`GRACE_AFTER_STOP`] on) with
/// [`StoppedWhileWriting`]. Another signal meanwhile (a second Ctrl-C)
/// does not cut it short: an interrupted `poll` is made again, for what is
/// left.
fn wait_for_room(
    stop: &StopSignal,
    fd: BorrowedFd,
    give_up_at: &mut Option<Instant>,
) -> io::Result<()> {
    if stop.caught().is_none() && stop.wait_writable(fd) {
        return Ok(());
    }
    let signal = stop.caught().unwrap_or(0);
    let give_up_at = *give_up_at.get_or_insert_with(|| Instant::now() + GRACE_AFTER_STOP);
    loop {
        let left = give_up_at.saturating_duration_since(Instant::now());
        let mut pollfd = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLOUT,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        let ready = unsafe { libc::poll(&mut pollfd, 1, left.as_millis() as i32) };
        if ready > 0 {
            return Ok(());
        }
        let interrupted =
            ready < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted;
        if !interrupted || left.is_zero() {
            return Err(io::Error::other(StoppedWhileWriting(signal)));
        }
    }
}

/// One `write(2)` of at most `chunk` bytes of `buf` to `fd`, once `fd`
/// takes data or, after a stop signal, failing with [`StoppedWhileWriting`]
/// once `give_up_at` has passed ([`GRACE_AFTER_STOP`] after the first wait
/// that follows the signal, or after the last write since): what
/// [`StoppableStdout`] does for standard output, for any descriptor.
pub fn write_stoppably(
    stop: &StopSignal,
    fd: BorrowedFd,
    buf: &[u8],
    chunk: usize,
    give_up_at: &mut Option<Instant>,
) -> io::Result<usize> {
    loop {
        wait_for_room(stop, fd, give_up_at)?;
        let len = buf.len().min(chunk);
        // SAFETY: `len` bytes of `buf` are readable.
        let n = unsafe { libc::write(fd.as_raw_fd(), buf.as_ptr().cast(), len) };
        if n >= 0 {
            // The reader took this: it has not stopped reading, and the
            // rest waits for it as long again.
            if n > 0 && give_up_at.is_some() {
                *give_up_at = Some(Instant::now() + GRACE_AFTER_STOP);
            }
            return Ok(n as usize);
        }
        let err = io::Error::last_os_error();
        match err.kind() {
            // Another writer filled the pipe first, or a signal came:
            // wait again (and notice the signal there).
            io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock => continue,
            _ => return Err(err),
        }
    }
}

impl Write for StoppableStdout<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // SAFETY: descriptor 1 stays open for the life of the process.
        let fd = unsafe { BorrowedFd::borrow_raw(libc::STDOUT_FILENO) };
        write_stoppably(self.stop, fd, buf, self.chunk, &mut self.give_up_at)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
