//! The programs' allocator: the C library's `malloc`, ending the run in one
//! line when memory runs out.
//!
//! Rust's own answer to a failed allocation is `memory allocation of N bytes
//! failed` and an abort: a SIGABRT, a core dump where they are kept, and no
//! name of the program or of the limit that was reached. Under an
//! address-space limit (`ulimit -v`), a data limit (`ulimit -d`) or strict
//! overcommit, any allocation may fail, and which one does depends on the
//! machine (its devices, its CPUs, what the kernel's BTF weighs). So every
//! allocation goes through [`ExitWhenExhausted`], which on failure writes
//! `<program>: out of memory: ...` with the limit in force and exits with
//! [`OUT_OF_MEMORY_STATUS`], sysstat's status when its `realloc` fails.
//!
//! Nothing is unwound and nothing more is written: a run out of memory
//! cannot be trusted to allocate its way out, and an allocator must not
//! unwind. So a program that changes the system asks first whether there
//! is room for the run ([`has_room`]): vcpustat, before it switches the
//! dispatch statistics or sets the DTL event mask.

use std::alloc::{GlobalAlloc, Layout, System};
use std::fmt::{self, Write};

/// The exit status of a run whose allocation failed, as sysstat's
/// `SREALLOC` gives it.
pub const OUT_OF_MEMORY_STATUS: i32 = 4;

/// The system allocator, which ends the run with a one-line message naming
/// `program` when an allocation fails. Each program declares it as its
/// `#[global_allocator]` ([`program_main!`](crate::program_main) does).
pub struct ExitWhenExhausted {
    program: &'static str,
}

impl ExitWhenExhausted {
    /// The allocator of the program whose messages start with `program`.
    pub const fn named(program: &'static str) -> ExitWhenExhausted {
        ExitWhenExhausted { program }
    }

    /// `pointer`, unless it is null: then the run ends.
    #[inline]
    fn or_exit(&self, pointer: *mut u8, size: usize) -> *mut u8 {
        if pointer.is_null() {
            self.exit_out_of_memory(size);
        }
        pointer
    }

    #[cold]
    fn exit_out_of_memory(&self, size: usize) -> ! {
        let mut line = StackLine::default();
        // A line longer than the buffer is cut; it is never longer here.
        let _ = write_message(&mut line, self.program, size, &Limits::current());
        // SAFETY: `line` holds `line.len` initialised bytes; `_exit` ends
        // the process without running code that could allocate.
        unsafe {
            libc::write(2, line.bytes.as_ptr().cast(), line.len);
            libc::_exit(OUT_OF_MEMORY_STATUS)
        }
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments and
// returns what it returned; a null pointer never comes back, as the run ends.
unsafe impl GlobalAlloc for ExitWhenExhausted {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's promise about `layout`, passed on.
        self.or_exit(unsafe { System.alloc(layout) }, layout.size())
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        self.or_exit(unsafe { System.alloc_zeroed(layout) }, layout.size())
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's promise that `ptr` came from this allocator,
        // which got it from `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `dealloc`, and the caller's promise about `new_size`.
        self.or_exit(unsafe { System.realloc(ptr, layout, new_size) }, new_size)
    }
}

/// Whether the process may allocate `bytes` more now: a private writable
/// mapping, which every limit an allocation meets counts (the address
/// space, the data size, the commit charge of strict overcommit), never
/// touched, so it takes no memory, and unmapped at once. A program asks
/// before a step it could not take back once out of memory. (Through
/// `mmap` rather than the allocator: a large block malloc frees raises its
/// threshold for mapping blocks of their own, and the heap later
/// allocations grow would not be given back.)
pub fn has_room(bytes: usize) -> bool {
    // `mmap` of no bytes fails (EINVAL): there is nothing to ask for.
    if bytes == 0 {
        return true;
    }
    // SAFETY: an anonymous mapping at an address the kernel picks; nothing
    // refers to it, and it is unmapped before returning.
    unsafe {
        let at = libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if at == libc::MAP_FAILED {
            return false;
        }
        libc::munmap(at, bytes);
    }
    true
}

/// The limits that make an allocation fail before memory is full, in
/// kilobytes as `ulimit` shows them; `None` where unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Limits {
    /// `RLIMIT_AS`, `ulimit -v`.
    address_space_kb: Option<u64>,
    /// `RLIMIT_DATA`, `ulimit -d`.
    data_kb: Option<u64>,
}

impl Limits {
    /// The soft limits of this process.
    fn current() -> Limits {
        Limits {
            address_space_kb: soft_limit_kb(libc::RLIMIT_AS),
            data_kb: soft_limit_kb(libc::RLIMIT_DATA),
        }
    }
}

/// The soft limit on `resource` in kilobytes, or `None` when it is
/// unlimited or cannot be read.
fn soft_limit_kb(resource: libc::__rlimit_resource_t) -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid rlimit for getrlimit to fill.
    if unsafe { libc::getrlimit(resource, &mut limit) } != 0
        || limit.rlim_cur == libc::RLIM_INFINITY
    {
        return None;
    }
    Some(limit.rlim_cur / 1024)
}

/// Writes the one-line message: the program, the size asked for, and each
/// limit in force.
fn write_message(out: &mut impl Write, program: &str, size: usize, limits: &Limits) -> fmt::Result {
    write!(
        out,
        "{program}: out of memory: {size} bytes could not be allocated"
    )?;
    // Both when both are set: which one the allocation met is not known.
    match (limits.address_space_kb, limits.data_kb) {
        (Some(kb), None) => write!(out, " under an address-space limit (ulimit -v) of {kb} kB")?,
        (None, Some(kb)) => write!(out, " under a data-size limit (ulimit -d) of {kb} kB")?,
        (Some(kb), Some(data_kb)) => write!(
            out,
            " under an address-space limit (ulimit -v) of {kb} kB \
             and a data-size limit (ulimit -d) of {data_kb} kB"
        )?,
        (None, None) => {}
    }
    out.write_char('\n')
}

/// A line formatted on the stack, as nothing may be allocated once memory
/// has run out.
struct StackLine {
    bytes: [u8; 256],
    len: usize,
}

impl Default for StackLine {
    fn default() -> StackLine {
        StackLine {
            bytes: [0; 256],
            len: 0,
        }
    }
}

impl Write for StackLine {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        let end = self.len + text.len();
        let target = self.bytes.get_mut(self.len..end).ok_or(fmt::Error)?;
        target.copy_from_slice(text.as_bytes());
        self.len = end;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(limits: Limits) -> String {
        let mut line = StackLine::default();
        write_message(&mut line, "iostat-rs", 556_192, &limits).unwrap();
        String::from_utf8(line.bytes[..line.len].to_vec()).unwrap()
    }

    #[test]
    fn the_message_names_the_program_the_size_and_the_limit_in_force() {
        let unlimited = Limits {
            address_space_kb: None,
            data_kb: None,
        };
        let both = Limits {
            address_space_kb: Some(21_484),
            data_kb: Some(8),
        };
        assert_eq!(
            message(unlimited),
            "iostat-rs: out of memory: 556192 bytes could not be allocated\n"
        );
        assert_eq!(
            message(Limits {
                data_kb: None,
                ..both
            }),
            "iostat-rs: out of memory: 556192 bytes could not be allocated \
             under an address-space limit (ulimit -v) of 21484 kB\n"
        );
        // Under both, the data-size limit may be the one met: a 33 MB
        // allocation under `--as=2000000000 --data=24000000` was said to
        // fail under the 1953125 kB of address space alone.
        assert_eq!(
            message(both),
            "iostat-rs: out of memory: 556192 bytes could not be allocated \
             under an address-space limit (ulimit -v) of 21484 kB \
             and a data-size limit (ulimit -d) of 8 kB\n"
        );
        assert_eq!(
            message(Limits {
                data_kb: Some(8),
                ..unlimited
            }),
            "iostat-rs: out of memory: 556192 bytes could not be allocated \
             under a data-size limit (ulimit -d) of 8 kB\n"
        );
    }

    #[test]
    fn the_longest_message_fits_the_buffer() {
        let mut line = StackLine::default();
        let most = Limits {
            address_space_kb: Some(u64::MAX / 1024),
            data_kb: Some(u64::MAX / 1024),
        };
        assert!(write_message(&mut line, "iostat-rs", usize::MAX, &most).is_ok());
        assert_eq!(line.bytes[line.len - 1], b'\n');
    }

    #[test]
    fn a_line_past_the_buffer_is_an_error_not_an_overrun() {
        let mut line = StackLine::default();
        assert!(line.write_str(&"x".repeat(200)).is_ok());
        assert!(line.write_str(&"x".repeat(57)).is_err());
        assert_eq!(line.len, 200);
    }
}
