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
//! written while the reader takes some of it every [`GRACE_AFTER_STOP`],
//! for [`MOST_AFTER_STOP`] at most; past that, writes fail with
//! [`StoppedWhileWriting`], which the run reports as an output error
//! ([`AfterStop`]).

use std::fmt;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::time::{Duration, Instant};

use super::signals::{StopSignal, poll_millis};

/// What a write returns when the wait for the reader after a stop signal
/// ended: the signal, and whether the reader was still reading (too
/// slowly: [`MOST_AFTER_STOP`] had passed).
#[derive(Debug)]
pub struct StoppedWhileWriting(pub i32, pub bool);

impl fmt::Display for StoppedWhileWriting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let StoppedWhileWriting(signal, reading) = *self;
        if reading {
            write!(
                f,
                "stopped by signal {signal} while the output was read too slowly to end \
                 within {} s",
                MOST_AFTER_STOP.as_secs()
            )
        } else {
            write!(
                f,
                "stopped by signal {signal} while the output was not read"
            )
        }
    }
}

impl std::error::Error for StoppedWhileWriting {}

/// How long, after a stop signal, the rest of the output waits for a
/// reader that takes none of it.
pub const GRACE_AFTER_STOP: Duration = Duration::from_secs(1);

/// How long, after a stop signal, the rest of the output waits for a
/// reader in all, however much it takes: a slow one (a serial console)
/// would otherwise keep a stopped run going for minutes, past a service
/// manager's patience and its SIGKILL, before vcpustat could switch back
/// what it switched on.
pub const MOST_AFTER_STOP: Duration = Duration::from_secs(10);

/// Where one output of a stopped run stands in its wait for the reader.
/// The wait ends when the reader has taken nothing for
/// [`GRACE_AFTER_STOP`], or [`MOST_AFTER_STOP`] after the first wait of
/// any output of the run ([`StopSignal::output_deadline`]); another
/// signal (a second Ctrl-C, or the same one twice, as `timeout` sends it
/// to the program and then to its process group) does not end it.
#[derive(Debug, Default)]
pub struct AfterStop {
    /// When the wait ends unless the reader takes more; set at the first
    /// wait after a stop signal.
    give_up_at: Option<Instant>,
}

/// File descriptor 1, written so that a stop signal ends a blocked write.
/// Wrap it in a `BufWriter`: each `write` costs a `poll` and a `write`.
pub struct StoppableStdout<'a> {
    stop: &'a StopSignal,
    /// The most one `write` may carry: what a pipe or socket is sure to
    /// accept once it polls writable; unlimited for regular files.
    chunk: usize,
    /// How long the output still waits after a stop signal.
    after_stop: AfterStop,
}

impl<'a> StoppableStdout<'a> {
    /// Standard output, interrupted by `stop`.
    pub fn new(stop: &'a StopSignal) -> StoppableStdout<'a> {
        StoppableStdout {
            stop,
            chunk: chunk_for(libc::STDOUT_FILENO),
            after_stop: AfterStop::default(),
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
/// as the reader needs; after one, it ends as [`AfterStop`] says, with
/// [`StoppedWhileWriting`].
fn wait_for_room(stop: &StopSignal, fd: BorrowedFd, after: &mut AfterStop) -> io::Result<()> {
    if stop.caught().is_none() && stop.wait_writable(fd) {
        return Ok(());
    }
    let last_call = stop.output_deadline(MOST_AFTER_STOP);
    let give_up_at = *after
        .give_up_at
        .get_or_insert(Instant::now() + GRACE_AFTER_STOP);
    loop {
        let now = Instant::now();
        let left = give_up_at.min(last_call).saturating_duration_since(now);
        let mut pollfd = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLOUT,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        let ready = unsafe { libc::poll(&mut pollfd, 1, poll_millis(left)) };
        if ready > 0 {
            return Ok(());
        }
        let interrupted =
            ready < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted;
        if !interrupted || left.is_zero() {
            let signal = stop.caught().unwrap_or(0);
            let too_slow = last_call <= give_up_at;
            return Err(io::Error::other(StoppedWhileWriting(signal, too_slow)));
        }
    }
}

/// One `write(2)` of at most `chunk` bytes of `buf` to `fd`, once `fd`
/// takes data or, after a stop signal, failing with [`StoppedWhileWriting`]
/// once the wait [`AfterStop`] allows is over: what [`StoppableStdout`]
/// does for standard output, for any descriptor.
pub fn write_stoppably(
    stop: &StopSignal,
    fd: BorrowedFd,
    buf: &[u8],
    chunk: usize,
    after: &mut AfterStop,
) -> io::Result<usize> {
    loop {
        wait_for_room(stop, fd, after)?;
        let len = buf.len().min(chunk);
        // SAFETY: `len` bytes of `buf` are readable.
        let n = unsafe { libc::write(fd.as_raw_fd(), buf.as_ptr().cast(), len) };
        if n >= 0 {
            // The reader took this: it has not stopped reading, and the
            // rest waits for it as long again (within MOST_AFTER_STOP).
            if n > 0 && after.give_up_at.is_some() {
                after.give_up_at = Some(Instant::now() + GRACE_AFTER_STOP);
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
        write_stoppably(self.stop, fd, buf, self.chunk, &mut self.after_stop)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
