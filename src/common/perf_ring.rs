//! A perf event's sample ring buffer: the `mmap` of a sampling event's
//! descriptor (one metadata page, then a power-of-two number of data pages),
//! read from user space as `include/uapi/linux/perf_event.h` describes:
//! load `data_head` with acquire ordering, read the records up to it, then
//! store `data_tail` with release ordering to give the space back.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::atomic::{AtomicU64, Ordering};

/// `PERF_RECORD_LOST`: `{ u64 id; u64 lost; }` after the header.
pub const RECORD_LOST: u32 = 2;
/// `PERF_RECORD_SAMPLE`: the fields `sample_type` selected.
pub const RECORD_SAMPLE: u32 = 9;

/// Offset of `data_head` in `struct perf_event_mmap_page`.
const DATA_HEAD: usize = 1024;
/// Offset of `data_tail` in `struct perf_event_mmap_page`.
const DATA_TAIL: usize = 1032;

/// One mapped ring buffer; unmapped on drop.
pub struct Ring {
    base: *mut u8,
    map_len: usize,
    page: usize,
    data_len: usize,
    /// One record, copied out when it wraps around the end of the ring.
    scratch: Vec<u8>,
}

// SAFETY: the mapping is owned by the Ring alone; moving it to another
// thread moves that ownership (the kernel writes to it from any CPU anyway).
unsafe impl Send for Ring {}

/// The size of a memory page, the unit of a ring's length.
pub fn page_size() -> io::Result<usize> {
    // SAFETY: sysconf has no memory effects.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
        .map_err(|_| io::Error::other("no page size"))
}

impl Ring {
    /// Maps `fd`'s ring with `data_pages` data pages (a power of two).
    pub fn map(fd: BorrowedFd<'_>, data_pages: usize) -> io::Result<Ring> {
        assert!(data_pages.is_power_of_two(), "perf rings are 2^n pages");
        let page = page_size()?;
        let map_len = page * (1 + data_pages);
        // SAFETY: a fresh shared mapping of the descriptor; the kernel checks
        // the length and the descriptor.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Ring {
            base: base.cast(),
            map_len,
            page,
            data_len: page * data_pages,
            scratch: Vec::new(),
        })
    }

    fn word(&self, offset: usize) -> &AtomicU64 {
        // SAFETY: offset is DATA_HEAD or DATA_TAIL, 8-aligned words inside
        // the metadata page, which lives as long as self.
        unsafe { &*self.base.add(offset).cast::<AtomicU64>() }
    }

    /// Calls `each(type, body)` for every record written since the last
    /// call (`body`: the bytes after the 8-byte header), then frees them.
    pub fn drain(&mut self, each: &mut dyn FnMut(u32, &[u8])) {
        let head = self.word(DATA_HEAD).load(Ordering::Acquire);
        let mut tail = self.word(DATA_TAIL).load(Ordering::Relaxed);
        // SAFETY: the data area starts one page after the metadata page.
        let data = unsafe { std::slice::from_raw_parts(self.base.add(self.page), self.data_len) };
        let mask = self.data_len as u64 - 1;
        while tail < head {
            let at = (tail & mask) as usize;
            let mut header = [0u8; 8];
            copy_wrapped(data, at, &mut header);
            let kind = u32::from_ne_bytes(header[0..4].try_into().expect("4 bytes"));
            let size = usize::from(u16::from_ne_bytes(header[6..8].try_into().expect("2")));
            if size < 8 || size as u64 > head - tail {
                break; // never written by a correct kernel; stop rather than loop
            }
            let body = (at + 8) % self.data_len;
            if body + size - 8 <= self.data_len {
                each(kind, &data[body..body + size - 8]);
            } else {
                self.scratch.resize(size - 8, 0);
                copy_wrapped(data, body, &mut self.scratch);
                each(kind, &self.scratch);
            }
            tail += size as u64;
        }
        self.word(DATA_TAIL).store(head, Ordering::Release);
    }
}

/// Copies `out.len()` bytes of the ring `data` from `at`, wrapping at its end.
fn copy_wrapped(data: &[u8], at: usize, out: &mut [u8]) {
    let first = out.len().min(data.len() - at);
    out[..first].copy_from_slice(&data[at..at + first]);
    let rest = out.len() - first;
    out[first..].copy_from_slice(&data[..rest]);
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: the mapping made in map(), unmapped once.
        unsafe { libc::munmap(self.base.cast(), self.map_len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapped_copies_join_the_end_and_the_start() {
        let data = [1u8, 2, 3, 4, 5];
        let mut out = [0u8; 4];
        copy_wrapped(&data, 3, &mut out);
        assert_eq!(out, [4, 5, 1, 2]);
        copy_wrapped(&data, 0, &mut out);
        assert_eq!(out, [1, 2, 3, 4]);
    }
}
