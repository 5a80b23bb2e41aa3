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
//!   standard output; a recording sent to a standard output that was closed
//!   is refused ([`standard_output_was_closed`]);
//! * SIGPIPE is ignored, so a closed output pipe is a `BrokenPipe` error,
//!   which the programs treat as a quiet end ([`crate::common::signals`]);
//! * SIGXFSZ is ignored until the stop signals' handlers replace that
//!   ([`crate::common::signals`]), so a write past the file size limit
//!   (`ulimit -f`) before then, a recording's header, is an `EFBIG` error
//!   the programs report, not a kill (and a core dump) without a word;
//! * a set-user-ID or set-group-ID install is refused before anything else
//!   ([`crate::common::privilege::refuse_set_id`]);
//! * a panic unwinds (vcpustat restores kernel state as it does) and ends the
//!   process with status 101;
//! * buffered standard output is flushed at the end.
//!
//! The arguments are the ones the C runtime hands `main`, taken as they are
//! on every C library (Rust's own capture of them without its start is
//! glibc's only). An argument that is not UTF-8 keeps its bytes as a
//! kernel name does ([`crate::common::osname`]): a device name or a path
//! that is not UTF-8 names its own device or file, and a command cxlstat
//! starts gets its arguments as given, where `std::env::args` would panic.
//!
//! What differs: a stack overflow still stops at the kernel's guard gap,
//! but as a plain SIGSEGV without Rust's message, and a panic's message
//! names the thread `<unnamed>`, not `main`. And an allocation that fails
//! ends the run in one line with status 4 ([`crate::common::alloc`]), not
//! with Rust's abort.

use std::ffi::{CStr, c_char, c_int};
use std::io;
use std::panic;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::common::cli::report_error;
use crate::common::completion;
use crate::common::osname;
use crate::common::privilege;

/// The exit status of a run that panicked, as Rust's own start gives it.
pub const PANIC_STATUS: i32 = 101;

/// What [`run`] needs to know of a program.
pub struct Program {
    /// The name its messages start with.
    pub name: &'static str,
    /// Its command-line definition, for shell completion.
    pub command: fn() -> clap::Command,
    /// The program: its arguments (its own name first) in, its exit status out.
    pub main: fn(Vec<String>) -> i32,
}

/// Prepares the process as described in the module documentation, answers
/// a shell's completion request or runs `program` with the arguments, and
/// exits with its status.
///
/// # Safety
///
/// `argv` holds `argc` pointers to NUL-terminated strings, as the C
/// runtime passes them to `main`.
pub unsafe fn run(program: &Program, argc: c_int, argv: *const *const c_char) -> ! {
    if let Err(err) = open_closed_standard_descriptors() {
        // When descriptor 2 is the one left closed, this line is lost:
        // Rust's standard error ignores a closed descriptor.
        std::process::exit(report_error(
            program.name,
            format_args!("cannot open /dev/null for a closed standard descriptor: {err}"),
            1,
        ));
    }
    // SAFETY: setting a signal's disposition to SIG_IGN has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    if privilege::is_secure()
        && let Err(message) = privilege::refuse_set_id()
    {
        std::process::exit(report_error(program.name, message, 1));
    }
    let status = panic::catch_unwind(|| {
        completion::answer_if_asked(program.command);
        // SAFETY: passed on from the caller.
        (program.main)(unsafe { arguments(argc, argv) })
    })
    .unwrap_or(PANIC_STATUS);
    // `exit` flushes Rust's standard output before the process ends.
    std::process::exit(status)
}

/// The arguments as strings, each byte that is not UTF-8 carried as
/// [`osname::from_bytes`] carries it.
///
/// # Safety
///
/// As for [`run`].
unsafe fn arguments(argc: c_int, argv: *const *const c_char) -> Vec<String> {
    let count = usize::try_from(argc).unwrap_or(0);
    (0..count)
        .map(|position| {
            // SAFETY: the caller's promise: `argc` valid pointers.
            let arg = unsafe { CStr::from_ptr(*argv.add(position)) };
            osname::from_bytes(arg.to_bytes()).into_owned()
        })
        .collect()
}

/// Set when the program started with descriptor 1 closed (`>&-`), which
/// [`open_closed_standard_descriptors`] then opened on `/dev/null`.
static STANDARD_OUTPUT_CLOSED_AT_START: AtomicBool = AtomicBool::new(false);

/// Whether the program started with standard output closed: from then on
/// it is `/dev/null`, so a recording sent there (`--record -`) would be
/// lost without a word, and is refused instead
/// ([`crate::common::user_file::create`]).
pub fn standard_output_was_closed() -> bool {
    STANDARD_OUTPUT_CLOSED_AT_START.load(Ordering::Relaxed)
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
        if fd == libc::STDOUT_FILENO {
            STANDARD_OUTPUT_CLOSED_AT_START.store(true, Ordering::Relaxed);
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

/// Defines a program's C `main`, which calls [`run`] with `$program`, a
/// constant [`Program`], and its allocator, which ends the run in one line
/// naming the program when memory runs out
/// ([`ExitWhenExhausted`](crate::common::alloc::ExitWhenExhausted)). The
/// binary must be `#![no_main]`.
#[macro_export]
macro_rules! program_main {
    ($program:expr) => {
        #[global_allocator]
        static ALLOCATOR: $crate::common::alloc::ExitWhenExhausted =
            $crate::common::alloc::ExitWhenExhausted::named($program.name);

        #[unsafe(no_mangle)]
        extern "C" fn main(
            argc: ::std::ffi::c_int,
            argv: *const *const ::std::ffi::c_char,
        ) -> ::std::ffi::c_int {
            // SAFETY: argc and argv are what the C runtime passed to main.
            unsafe { $crate::common::entry::run(&$program, argc, argv) }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;

    /// [`super::arguments`] over `args`, passed as the C runtime passes
    /// them.
    fn arguments(args: &[&[u8]]) -> Vec<String> {
        let owned: Vec<CString> = args.iter().map(|a| CString::new(*a).unwrap()).collect();
        let mut argv: Vec<*const c_char> = owned.iter().map(|a| a.as_ptr()).collect();
        argv.push(std::ptr::null());
        let argc = c_int::try_from(owned.len()).unwrap();
        // SAFETY: argc pointers to the NUL-terminated strings of `owned`.
        unsafe { super::arguments(argc, argv.as_ptr()) }
    }

    #[test]
    fn arguments_are_taken_in_order() {
        assert_eq!(
            arguments(&[b"iostat-rs", b"-x", b"1", "sd\u{e9}".as_bytes()]),
            ["iostat-rs", "-x", "1", "sd\u{e9}"]
        );
        assert_eq!(arguments(&[]), Vec::<String>::new());
    }

    #[test]
    fn an_argument_that_is_not_utf8_keeps_its_bytes() {
        let args = arguments(&[b"cxlstat", b"-e", b"a\xff\x1b[2J"]);
        assert_eq!(args[2], "a\u{10ffff}\x1b[2J");
        assert_eq!(&*osname::to_bytes(&args[2]), b"a\xff\x1b[2J");
    }
}
