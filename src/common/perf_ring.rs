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
    ///
    /// # Safety
    ///
    /// `fd` is a perf event's descriptor, whose ring the kernel writes only
    /// as [`Ring::drain`] expects (past data_head, up to data_tail), or a
    /// file nothing writes while a drain runs, nor truncates while the ring
    /// is mapped (a test's, written between drains).
    pub unsafe fn map(fd: BorrowedFd<'_>, data_pages: usize) -> io::Result<Ring> {
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
        let tail = self.word(DATA_TAIL).load(Ordering::Relaxed);
        let published = head.wrapping_sub(tail);
        // More than a ring ahead is never written by a correct kernel (it
        // stops at data_tail): the oldest bytes would be rewritten while
        // read, so none are read.
        if published <= self.data_len as u64 {
            let at = (tail & (self.data_len as u64 - 1)) as usize;
            let published = published as usize;
            let first = published.min(self.data_len - at);
            // SAFETY: the two pieces, `published` bytes from `at` wrapping
            // at the end, lie in the data area (one page after the
            // metadata page, `data_len` bytes). They hold the records up
            // to `head`, which the kernel wrote before its release store
            // of data_head that the acquire load above saw, and leaves
            // alone until data_tail moves past them, after the last use of
            // the slices below (the ring is a perf event's: map's
            // contract). The rest of the area, which the kernel is
            // writing, is never viewed as a slice.
            let (first, second) = unsafe {
                let data = self.base.add(self.page);
                (
                    std::slice::from_raw_parts(data.add(at), first),
                    std::slice::from_raw_parts(data, published - first),
                )
            };
            for_each_record(first, second, &mut self.scratch, each);
        }
        self.word(DATA_TAIL).store(head, Ordering::Release);
    }
}

/// Calls `each(type, body)` for every whole record in `first` followed by
/// `second` (the published part of the ring, split where it wraps); a
/// record across the split is copied into `scratch` first. Stops at a
/// record whose size is impossible.
fn for_each_record(
    first: &[u8],
    second: &[u8],
    scratch: &mut Vec<u8>,
    each: &mut dyn FnMut(u32, &[u8]),
) {
    let total = first.len() + second.len();
    let mut at = 0;
    while total - at >= 8 {
        let mut header = [0u8; 8];
        copy_joined(first, second, at, &mut header);
        let kind = u32::from_ne_bytes(header[0..4].try_into().expect("4 bytes"));
        let size = usize::from(u16::from_ne_bytes(header[6..8].try_into().expect("2")));
        if size < 8 || size > total - at {
            return; // never written by a correct kernel; stop rather than loop
        }
        let (body, len) = (at + 8, size - 8);
        if body + len <= first.len() {
            each(kind, &first[body..body + len]);
        } else if body >= first.len() {
            let from = body - first.len();
            each(kind, &second[from..from + len]);
        } else {
            scratch.resize(len, 0);
            copy_joined(first, second, body, scratch);
            each(kind, scratch);
        }
        at += size;
    }
}

/// Copies `out.len()` bytes from `at` of `first` followed by `second`.
fn copy_joined(first: &[u8], second: &[u8], at: usize, out: &mut [u8]) {
    let from_first = first.get(at..).unwrap_or(&[]);
    let n = out.len().min(from_first.len());
    out[..n].copy_from_slice(&from_first[..n]);
    let (from, rest) = (at.saturating_sub(first.len()), out.len() - n);
    out[n..].copy_from_slice(&second[from..from + rest]);
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
    use std::fs::File;
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileExt;

    /// A record as the kernel writes it: type, misc 0, size, then `body`.
    fn record(kind: u32, body: &[u8]) -> Vec<u8> {
        let mut bytes = kind.to_ne_bytes().to_vec();
        bytes.extend_from_slice(&0u16.to_ne_bytes());
        bytes.extend_from_slice(&u16::try_from(8 + body.len()).unwrap().to_ne_bytes());
        bytes.extend_from_slice(body);
        bytes
    }

    /// Three records: 12, 16 and 12 bytes.
    fn three_records() -> Vec<u8> {
        [
            record(RECORD_SAMPLE, &[1, 2, 3, 4]),
            record(RECORD_LOST, &[5, 6, 7, 8, 9, 10, 11, 12]),
            record(RECORD_SAMPLE, &[13, 14, 15, 16]),
        ]
        .concat()
    }

    /// What `each` was called with, in order.
    fn seen(each: impl FnOnce(&mut dyn FnMut(u32, &[u8]))) -> Vec<(u32, Vec<u8>)> {
        let mut seen = Vec::new();
        each(&mut |kind, body| seen.push((kind, body.to_vec())));
        seen
    }

    fn expected() -> Vec<(u32, Vec<u8>)> {
        vec![
            (9, vec![1, 2, 3, 4]),
            (2, vec![5, 6, 7, 8, 9, 10, 11, 12]),
            (9, vec![13, 14, 15, 16]),
        ]
    }

    #[test]
    fn records_split_anywhere_by_the_wrap_come_out_whole() {
        let bytes = three_records();
        for split in 0..=bytes.len() {
            let (first, second) = bytes.split_at(split);
            let mut scratch = Vec::new();
            let got = seen(|each| for_each_record(first, second, &mut scratch, each));
            assert_eq!(got, expected(), "split at {split}");
        }
    }

    #[test]
    fn an_impossible_size_stops_the_records() {
        let mut bytes = three_records();
        // The second record's size: 4, shorter than its header.
        bytes[12 + 6..12 + 8].copy_from_slice(&4u16.to_ne_bytes());
        let got = seen(|each| for_each_record(&bytes, &[], &mut Vec::new(), each));
        assert_eq!(got, [(9, vec![1, 2, 3, 4])]);
        // The last record cut short: its size runs past the bytes written.
        let bytes = three_records();
        let got = seen(|each| for_each_record(&bytes[..39], &[], &mut Vec::new(), each));
        assert_eq!(got, expected()[..2]);
    }

    /// A ring of one data page over a file, which the test writes as the
    /// kernel would: the records, then data_head.
    #[test]
    fn a_mapped_ring_yields_the_records_up_to_head_and_frees_them() {
        let page = page_size().unwrap();
        let path = std::env::temp_dir().join(format!("hwstat-ring-{}", std::process::id()));
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        file.set_len(2 * page as u64).unwrap();
        // SAFETY: the file is this test's alone, written between drains.
        let mut ring = unsafe { Ring::map(file.as_fd(), 1) }.unwrap();
        let word = |offset: usize| {
            let mut bytes = [0u8; 8];
            file.read_exact_at(&mut bytes, offset as u64).unwrap();
            u64::from_ne_bytes(bytes)
        };
        let set_word = |offset: usize, value: u64| {
            file.write_all_at(&value.to_ne_bytes(), offset as u64)
                .unwrap();
        };
        // The three records at ring position `from`, wrapping at the end.
        let write_records = |from: u64| {
            let bytes = three_records();
            for (i, byte) in bytes.iter().enumerate() {
                let at = page + (from as usize + i) % page;
                file.write_all_at(&[*byte], at as u64).unwrap();
            }
            from + bytes.len() as u64
        };
        // Three laps of the ring done; the first header straddles the end.
        let tail = 3 * page as u64 + page as u64 - 6;
        let head = write_records(tail);
        set_word(DATA_TAIL, tail);
        set_word(DATA_HEAD, head);
        assert_eq!(seen(|each| ring.drain(each)), expected());
        assert_eq!(word(DATA_TAIL), head);
        assert_eq!(seen(|each| ring.drain(each)), []);
        // A head more than a ring ahead: the records at the tail are not
        // read, and the tail catches up.
        write_records(head);
        set_word(DATA_HEAD, head + 2 * page as u64);
        assert_eq!(seen(|each| ring.drain(each)), []);
        assert_eq!(word(DATA_TAIL), head + 2 * page as u64);
    }
}
