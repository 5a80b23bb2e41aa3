//! Pipes for tests of a reader that stops reading, a reader of a child's
//! output that waits for it with a limit, and pseudo-terminals.

use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::Stdio;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// A pipe holding at most one page: a program writing into it blocks as
/// soon as it has written 4 KiB nobody read. Returns the read end (keep it
/// open and do not read it) and the write end for a child's stdout.
pub fn one_page_pipe() -> (File, Stdio) {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors, which we then own.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    let (reader, writer) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: fcntl on a descriptor we own.
    let size = unsafe { libc::fcntl(fds[1], libc::F_SETPIPE_SZ, 4096) };
    assert!(size >= 4096, "F_SETPIPE_SZ failed");
    (File::from(reader), Stdio::from(writer))
}

/// Waits until the pipe read by `unread` holds output (at most `limit`,
/// then fails the test): its one slot is then taken, and a writer waiting
/// for room (`poll` says a pipe is writable only with a free slot) waits
/// until somebody reads.
pub fn wait_for_output(unread: &File, limit: Duration) {
    let start = Instant::now();
    loop {
        let mut queued: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int for a descriptor we own.
        assert_eq!(
            unsafe { libc::ioctl(unread.as_raw_fd(), libc::FIONREAD, &mut queued) },
            0
        );
        if queued > 0 {
            return;
        }
        assert!(start.elapsed() < limit, "no output after {limit:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// What a child writes into a pipe, read by a thread as it comes, so that a
/// test waits for some of it with a limit: a read of the pipe itself waits
/// for as long as the child neither writes nor ends. The thread ends with
/// the output (the child ended or was killed).
pub struct Collected {
    chunks: mpsc::Receiver<Vec<u8>>,
    seen: Vec<u8>,
    ended: bool,
}

impl Collected {
    /// Starts reading `from` (a child's `stdout` or `stderr`).
    pub fn new(mut from: impl Read + Send + 'static) -> Collected {
        let (sender, chunks) = mpsc::channel();
        std::thread::spawn(move || {
            let mut piece = [0u8; 4096];
            while let Ok(n @ 1..) = from.read(&mut piece) {
                if sender.send(piece[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        Collected {
            chunks,
            seen: Vec::new(),
            ended: false,
        }
    }

    /// Waits until the output read so far satisfies `enough`, and returns
    /// it; fails the test, naming `what`, if the output ends or `limit`
    /// passes first.
    pub fn wait_for(
        &mut self,
        what: &str,
        limit: Duration,
        enough: impl FnMut(&[u8]) -> bool,
    ) -> &[u8] {
        match self.try_wait_for(what, limit, enough) {
            Ok(seen) => seen,
            Err(why) => panic!("{why}"),
        }
    }

    /// [`Collected::wait_for`], returning why it failed instead of failing
    /// the test (which can then say more, such as what the child said on
    /// standard error).
    pub fn try_wait_for(
        &mut self,
        what: &str,
        limit: Duration,
        mut enough: impl FnMut(&[u8]) -> bool,
    ) -> Result<&[u8], String> {
        let deadline = Instant::now() + limit;
        while !enough(&self.seen) {
            let seen = || String::from_utf8_lossy(&self.seen).into_owned();
            if self.ended {
                return Err(format!("{what}: the output ended first: {}", seen()));
            }
            match self
                .chunks
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(chunk) => self.seen.extend_from_slice(&chunk),
                Err(RecvTimeoutError::Disconnected) => self.ended = true,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(format!("{what}: not within {limit:?}: {}", seen()));
                }
            }
        }
        Ok(&self.seen)
    }

    /// All of the output, once it has ended (at most `limit`, else the
    /// test fails naming `what`).
    pub fn until_end(mut self, what: &str, limit: Duration) -> Vec<u8> {
        let deadline = Instant::now() + limit;
        while !self.ended {
            match self
                .chunks
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(chunk) => self.seen.extend_from_slice(&chunk),
                Err(RecvTimeoutError::Disconnected) => self.ended = true,
                Err(RecvTimeoutError::Timeout) => panic!(
                    "{what}: the output did not end within {limit:?}: {}",
                    String::from_utf8_lossy(&self.seen)
                ),
            }
        }
        self.seen
    }
}

/// A pseudo-terminal: its master and its slave.
pub fn pseudo_terminal() -> (OwnedFd, OwnedFd) {
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty writes two descriptors into the given ints.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors are fresh and owned here.
    unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) }
}
