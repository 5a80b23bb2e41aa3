//! Pipes for tests of a reader that stops reading.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::Stdio;
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
