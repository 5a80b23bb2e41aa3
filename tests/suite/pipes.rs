//! Pipes for tests of a reader that stops reading.

use std::fs::File;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::Stdio;

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
