//! Where the programs start: what Rust's own start does before `main`,
//! without the part that costs every run.
//!
//! Rust's start (`lang_start`) installs a handler that names a stack overflow
//! in its message. To find the main thread's stack it calls glibc's
//! `pthread_getattr_np`, which opens, reads and parses `/proc/self/maps`:
//! 30 µs of the 750 µs an `iostat-rs -x` report takes (BENCHMARKS.md, "The
//! program's start"). So the programs are built with `#![no_main]`, and their
//! C `main` ([`program_main!`](crate::program_main)) calls [`run`], which
//! keeps what the programs rely on from that start:
//!
//! * descriptors 0, 1 and 2 are open, on `/dev/null` if they were closed, so
//!   a file the program opens (a recording, a textfile) can never become its
//!   standard output;
//! * SIGPIPE is ignored, so a closed output pipe is a `BrokenPipe` error,
//!   which the programs treat as a quiet end ([`crate::common::signals`]);
//! * a panic unwinds (vcpustat restores kernel state as it does) and ends the
//!   process with status 101;
//! * buffered standard output is flushed at the end.
//!
//! What differs: a stack overflow still stops at the kernel's guard gap,
//! but as a plain SIGSEGV without Rust's message, and a panic's message
//! names the thread `<unnamed>`, not `main`.

use std::io;
use std::panic::{self, UnwindSafe};

/// The exit status of a run that panicked, as Rust's own start gives it.
pub const PANIC_STATUS: i32 = 101;

/// Prepares the process as described in the module documentation, runs
/// `main` and exits with its status.
pub fn run(main: impl FnOnce() -> i32 + UnwindSafe) -> ! {
    if let Err(err) = open_closed_standard_descriptors() {
        // When descriptor 2 is the one left closed, this line is lost:
        // Rust's standard error ignores a closed descriptor.
        eprintln!("cannot open /dev/null for a closed standard descriptor: {err}");
        std::process::exit(1);
    }
    // SAFETY: setting a signal's disposition to SIG_IGN has no preconditions.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let status = panic::catch_unwind(main).unwrap_or(PANIC_STATUS);
    // `exit` flushes Rust's standard output before the process ends.
    std::process::exit(status)
}

/// Opens `/dev/null` on each of descriptors 0, 1 and 2 that is closed.
fn open_closed_standard_descriptors() -> io::Result<()> {
    for fd in 0..=2 {
        // SAFETY: F_GETFD only reads the descriptor's flags.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } != -1 {
            continue;
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EBADF) {
            return Err(err);
        }
        // The lower descriptors are open by now, so `open` returns `fd`.
        // No O_CLOEXEC: like Rust's start, a child inherits the descriptor.
        // SAFETY: the path is a NUL-terminated constant.
        let null = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
        if null == -1 {
            return Err(io::Error::last_os_error());
        }
        if null != fd {
            // SAFETY: `null` was just opened here and is owned by nobody else.
            unsafe { libc::close(null) };
            return Err(io::Error::other(format!(
                "it opened as descriptor {null}, not {fd}"
            )));
        }
    }
    Ok(())
}

/// Defines a program's C `main`: answers a shell's completion request with
/// the clap command `$command` builds, else runs `$body` (an expression of
/// type `i32`, the exit status) through [`run`]. The binary must be
/// `#![no_main]`.
#[macro_export]
macro_rules! program_main {
    ($command:path, $body:expr) => {
        #[unsafe(no_mangle)]
        extern "C" fn main(
            _argc: ::std::ffi::c_int,
            _argv: *const *const ::std::ffi::c_char,
        ) -> ::std::ffi::c_int {
            $crate::common::entry::run(|| {
                $crate::common::completion::answer_if_asked($command);
                $body
            })
        }
    };
}
