//! The `vcpustat trace record` file: a versioned header, then the raw
//! records in per-vCPU blocks.
//!
//! # Format version 2 (written incrementally)
//!
//! * Line 1 is a JSON object, the header:
//!   `{"format":"vcpustat-dtl","version":2,"host":{uname fields},
//!   "partition_id":N,"partition_name":"..","system_serial":"IBM,02..",
//!   "timebase_hz":512000000,"start_unix_ns":N,"duration_ns":0,
//!   "event_mask":7,"ring_entries":85,"cpus":[{"cpu":0,...},..]}` and one
//!   `\n`. Only `cpu` of each `cpus` element is meaningful in version 2
//!   (the other fields are 0): the list gives the vCPUs, and a block names
//!   its vCPU by its position in the list. `event_mask` is the
//!   `dtl_event_mask` the rings logged with (the one `--events` set, else
//!   the one the kernel had); absent when it could not be read. The
//!   uname fields, `partition_name` and `system_serial` carry a byte that
//!   is not UTF-8 as [`osname`](crate::common::osname) does.
//! * Then blocks, each a 24-byte block header and its records:
//!   the 4 bytes `DTLB`, then five little-endian `u32`: the vCPU's position
//!   in `cpus`, the number of records, the reads that returned them, how
//!   many of those returned a full ring (`possibly_lost_reads`: the kernel
//!   skips to the newest entries when a reader falls a ring behind), and 0;
//!   then the records exactly as the kernel returned them (48-byte
//!   big-endian `struct dtl_entry`, in ring order). One vCPU's blocks are in
//!   its time order; blocks of different vCPUs interleave. The recorder
//!   writes the blocks of every vCPU with new records at least once a
//!   second, so a killed run leaves all but its last second on disk.
//! * The end marker closes a complete recording: the 4 bytes `DTLE`, a
//!   little-endian `u32` 0, the duration in nanoseconds as a little-endian
//!   `u64`, and 8 zero bytes (24 bytes in all).
//!
//! A file without the end marker (the recorder was killed, or the disk
//! filled) is read up to its last whole record, and [`Recording::cut`]
//! says so. A block that claims more records than the file holds
//! while a block header or the end marker starts among them has a damaged
//! count, not a cut: the file is refused.
//!
//! # Format version 1 (read only)
//!
//! The header's `cpus` elements carry `offset`, `entries`, `reads` and
//! `possibly_lost_reads`, and the blocks follow the header line back to back
//! without block headers: vCPU `i`'s records start `offset` bytes after the
//! header line. It was written in one go at the end of a recording.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::entry::ENTRY_BYTES;
use crate::common::source::Uname;
use crate::common::user_file::open_regular;

/// The value of the header's `format` field.
pub const FORMAT_NAME: &str = "vcpustat-dtl";
/// The format version this build writes.
pub const FORMAT_VERSION: u32 = 2;
/// The block-less version written before 2, still read.
pub const FORMAT_VERSION_1: u32 = 1;
/// Bytes of a block header and of the end marker.
pub const BLOCK_HEADER_BYTES: usize = 24;
const BLOCK_MAGIC: &[u8; 4] = b"DTLB";
const END_MAGIC: &[u8; 4] = b"DTLE";
/// The longest header line accepted (about 100 bytes per vCPU: 1M vCPUs).
const MAX_HEADER_BYTES: usize = 128 << 20;

/// Where one vCPU's records are, and how reading them went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuIndex {
    /// The vCPU number (`N` of `cpu-N`).
    pub cpu: u32,
    /// Byte offset of the first record after the header line.
    pub offset: u64,
    /// Number of 48-byte records.
    pub entries: u64,
    /// Number of reads that returned records.
    pub reads: u64,
    /// Number of reads that returned a full ring and may have lost records.
    pub possibly_lost_reads: u64,
}

/// The header line of a recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Always [`FORMAT_NAME`].
    pub format: String,
    /// Always [`FORMAT_VERSION`] for files this build writes.
    pub version: u32,
    /// The host the partition runs as.
    pub host: Uname,
    /// `partition_id=` of lparcfg: the partition on the machine.
    pub partition_id: u32,
    /// The partition's name, when the device tree gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition_name: Option<String>,
    /// The machine's serial number (`serial_number=` of lparcfg), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_serial: Option<String>,
    /// Time-base frequency (`timebase` of /proc/cpuinfo), ticks per second.
    pub timebase_hz: u64,
    /// Wall-clock start of the recording, nanoseconds since the Unix epoch.
    pub start_unix_ns: u64,
    /// How long the recording ran, in nanoseconds.
    pub duration_ns: u64,
    /// The `dtl_event_mask` the rings logged with, when it is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_mask: Option<u8>,
    /// Ring size in entries (`dtl_buf_entries`).
    pub ring_entries: u32,
    /// One index entry per recorded vCPU.
    pub cpus: Vec<CpuIndex>,
}

/// One vCPU's block: where its records are in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// Absolute byte offset of the first record.
    pub offset: u64,
    /// Number of records.
    pub entries: u64,
}

/// Where a recording's bytes come from: a file read with `pread`, or memory.
#[derive(Debug)]
enum Data {
    File(File),
    Memory(Vec<u8>),
}

impl Data {
    fn len(&self) -> io::Result<u64> {
        match self {
            Data::File(f) => Ok(f.metadata()?.len()),
            Data::Memory(m) => Ok(m.len() as u64),
        }
    }

    /// Fills as much of `buf` as the data holds from `offset`; returns the count.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        match self {
            Data::File(f) => {
                let mut done = 0;
                while done < buf.len() {
                    match f.read_at(&mut buf[done..], offset + done as u64) {
                        Ok(0) => break,
                        Ok(n) => done += n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(done)
            }
            Data::Memory(m) => {
                let start = usize::try_from(offset).unwrap_or(usize::MAX).min(m.len());
                let n = buf.len().min(m.len() - start);
                buf[..n].copy_from_slice(&m[start..start + n]);
                Ok(n)
            }
        }
    }
}

/// An opened recording: its header (whose `cpus` carry the totals of every
/// block), the index of its blocks, and its data, read on demand.
#[derive(Debug)]
pub struct Recording {
    /// The header, with per-vCPU totals and the duration filled in.
    pub header: Header,
    blocks: Vec<Vec<Block>>,
    data: Data,
    cut: Option<String>,
}

/// Why a recording could not be written or loaded.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The recording's path.
        path: String,
        /// The underlying error.
        source: io::Error,
    },
    /// The contents are not a recording this build reads.
    #[error("{path}: {what}")]
    Format {
        /// The recording's path.
        path: String,
        /// What was wrong.
        what: String,
    },
    /// The file is a recording of a statistics run (`vcpustat --record`),
    /// which that tool replays.
    #[error(
        "{path} was recorded by {tool}, not vcpustat trace record: replay it with {tool} \
         --replay {path}"
    )]
    OtherTool {
        /// The recording's path.
        path: String,
        /// The tool its header names, escaped.
        tool: String,
    },
    /// The file is the kernel-file recording of a `trace record` run
    /// (`--record`), not its trace (`-w`).
    #[error(
        "{path} holds the kernel files vcpustat trace record read (its --record), not a \
         Dispatch Trace Log: report on the file it wrote with -w"
    )]
    KernelFiles {
        /// The recording's path.
        path: String,
    },
}

/// Writes a version-2 recording block by block.
pub struct RecordingWriter<W: Write> {
    out: W,
    cpus: usize,
    scratch: Vec<u8>,
}

impl<W: Write> RecordingWriter<W> {
    /// Writes the header line (`header.version` is set to
    /// [`FORMAT_VERSION`], the counts in `cpus` to 0) and flushes it: a
    /// recorder killed before its first block leaves a recording that is
    /// cut, not an empty file that is no recording at all.
    pub fn new(mut out: W, mut header: Header) -> io::Result<RecordingWriter<W>> {
        header.format = FORMAT_NAME.to_string();
        header.version = FORMAT_VERSION;
        header.duration_ns = 0;
        for c in &mut header.cpus {
            (c.offset, c.entries, c.reads, c.possibly_lost_reads) = (0, 0, 0, 0);
        }
        let mut line = serde_json::to_vec(&header).expect("headers always serialize");
        line.push(b'\n');
        out.write_all(&line)?;
        out.flush()?;
        Ok(RecordingWriter {
            out,
            cpus: header.cpus.len(),
            scratch: Vec::new(),
        })
    }

    /// Writes one block of the vCPU at `index` of the header's `cpus`:
    /// `records` (whole 48-byte records), read in `reads` reads of which
    /// `lost` returned a full ring.
    pub fn block(&mut self, index: usize, records: &[u8], reads: u32, lost: u32) -> io::Result<()> {
        assert!(index < self.cpus && records.len().is_multiple_of(ENTRY_BYTES));
        // Blocks stay well under 4 GiB: the recorder writes one per second.
        let entries = u32::try_from(records.len() / ENTRY_BYTES)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "block too large"))?;
        self.scratch.clear();
        self.scratch.extend_from_slice(BLOCK_MAGIC);
        for v in [index as u32, entries, reads, lost, 0] {
            self.scratch.extend_from_slice(&v.to_le_bytes());
        }
        self.scratch.extend_from_slice(records);
        self.out.write_all(&self.scratch)
    }

    /// Hands what was written to the operating system.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Writes the end marker with the duration and flushes.
    pub fn finish(mut self, duration_ns: u64) -> io::Result<W> {
        let mut end = Vec::with_capacity(BLOCK_HEADER_BYTES);
        end.extend_from_slice(END_MAGIC);
        end.extend_from_slice(&0u32.to_le_bytes());
        end.extend_from_slice(&duration_ns.to_le_bytes());
        end.extend_from_slice(&[0u8; 8]);
        self.out.write_all(&end)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Writes a whole recording at once: `header` and one block per vCPU
/// (`(records, reads, possibly_lost_reads)` in the order of `header.cpus`).
pub fn write_recording(
    path: &Path,
    header: Header,
    blocks: &[(&[u8], u64, u64)],
) -> Result<(), RecordingError> {
    let io_err = |source| RecordingError::Io {
        path: crate::common::escape::path(path),
        source,
    };
    let duration_ns = header.duration_ns;
    let file = io::BufWriter::new(File::create(path).map_err(io_err)?);
    let mut w = RecordingWriter::new(file, header).map_err(io_err)?;
    for (index, (data, reads, lost)) in blocks.iter().enumerate() {
        let whole = data.len() - data.len() % ENTRY_BYTES;
        let clamp = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        w.block(index, &data[..whole], clamp(*reads), clamp(*lost))
            .map_err(io_err)?;
    }
    w.finish(duration_ns).map_err(io_err)?;
    Ok(())
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

impl Recording {
    /// Opens a recording: reads the header and the block index, not the
    /// records. It is read at random places, so it must be a regular file
    /// (a FIFO is refused at once rather than waited on).
    pub fn open(path: &Path) -> Result<Recording, RecordingError> {
        let shown = crate::common::escape::path(path);
        let file = open_regular(path).map_err(|source| RecordingError::Io {
            path: shown.clone(),
            source,
        })?;
        Recording::from_data(&shown, Data::File(file))
    }

    /// Parses a recording held in memory; `name` appears in errors.
    pub fn from_bytes(name: &str, bytes: Vec<u8>) -> Result<Recording, RecordingError> {
        Recording::from_data(name, Data::Memory(bytes))
    }

    fn from_data(name: &str, data: Data) -> Result<Recording, RecordingError> {
        let bad = |what: String| RecordingError::Format {
            path: name.to_string(),
            what,
        };
        let io_err = |source| RecordingError::Io {
            path: name.to_string(),
            source,
        };
        let len = data.len().map_err(io_err)?;
        let (line, data_start) = read_header_line(&data, len).map_err(|e| match e {
            HeaderError::Io(e) => io_err(e),
            HeaderError::Format(what) => bad(what),
        })?;
        if let Some(tool) = statistics_tool(&line) {
            let path = name.to_string();
            return Err(if tool == super::cli::KERNEL_FILES_TOOL {
                RecordingError::KernelFiles { path }
            } else {
                RecordingError::OtherTool { path, tool }
            });
        }
        let mut header: Header = serde_json::from_slice(&line)
            .map_err(|e| bad(format!("not a vcpustat trace recording header: {e}")))?;
        if header.format != FORMAT_NAME {
            return Err(bad(format!(
                "format is {:?}, expected {FORMAT_NAME:?}",
                header.format
            )));
        }
        if header.timebase_hz == 0 {
            return Err(bad("timebase_hz is 0".into()));
        }
        let mut seen = std::collections::BTreeSet::new();
        for c in &header.cpus {
            if !seen.insert(c.cpu) {
                return Err(bad(format!("cpu {} appears twice in the index", c.cpu)));
            }
        }
        let (blocks, cut) = match header.version {
            FORMAT_VERSION_1 => (index_v1(&header, data_start, len).map_err(bad)?, None),
            FORMAT_VERSION => {
                index_v2(&mut header, &data, data_start, len).map_err(|e| match e {
                    HeaderError::Io(e) => io_err(e),
                    HeaderError::Format(what) => bad(what),
                })?
            }
            v => {
                return Err(bad(format!(
                    "recording version {v} is not supported (this build reads 1 and 2)"
                )));
            }
        };
        Ok(Recording {
            header,
            blocks,
            data,
            cut,
        })
    }

    /// Why the recording is incomplete (no end marker), if it is.
    pub fn cut(&self) -> Option<&str> {
        self.cut.as_deref()
    }

    /// The blocks of the vCPU at `index` of `header.cpus`, in time order.
    pub fn blocks(&self, index: usize) -> &[Block] {
        &self.blocks[index]
    }

    /// Reads whole records at `offset` into `buf` (a multiple of 48 bytes
    /// long); fails if the data ends early.
    pub fn read_records(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let n = self.data.read_at(buf, offset)?;
        if n < buf.len() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the recording was shortened while being read",
            ));
        }
        Ok(())
    }

    /// All the records of the vCPU at `index`, in memory (for tests and
    /// small recordings; the report streams them instead).
    pub fn records(&self, index: usize) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        for b in self.blocks(index) {
            let start = out.len();
            out.resize(start + b.entries as usize * ENTRY_BYTES, 0);
            self.read_records(b.offset, &mut out[start..])?;
        }
        Ok(out)
    }
}

enum HeaderError {
    Io(io::Error),
    Format(String),
}

/// The tool named by `line` when it is the header of a statistics
/// recording (iostat-rs, vcpustat or cxlstat `--record`), escaped for a
/// message; `None` for any other line.
fn statistics_tool(line: &[u8]) -> Option<String> {
    /// The fields that tell a statistics recording's header.
    #[derive(Deserialize)]
    struct Probe {
        format: String,
        tool: String,
    }
    let probe: Probe = serde_json::from_slice(line).ok()?;
    (probe.format == crate::common::record::FORMAT_NAME)
        .then(|| crate::common::excerpt::clip(&probe.tool, 40))
}

/// Reads the header line; returns it (without its newline) and the offset
/// after its newline.
fn read_header_line(data: &Data, len: u64) -> Result<(Vec<u8>, u64), HeaderError> {
    let mut line = Vec::new();
    let mut piece = vec![0u8; 64 * 1024];
    let newline = loop {
        let n = data
            .read_at(&mut piece, line.len() as u64)
            .map_err(HeaderError::Io)?;
        if let Some(i) = piece[..n].iter().position(|&b| b == b'\n') {
            line.extend_from_slice(&piece[..i]);
            break line.len();
        }
        line.extend_from_slice(&piece[..n]);
        if n == 0 || line.len() as u64 >= len {
            return Err(HeaderError::Format(
                "no header line: not a vcpustat trace recording".into(),
            ));
        }
        if line.len() > MAX_HEADER_BYTES {
            return Err(HeaderError::Format(format!(
                "header line longer than {MAX_HEADER_BYTES} bytes: not a vcpustat trace recording"
            )));
        }
    };
    Ok((line, newline as u64 + 1))
}

/// The blocks of a version-1 file: one per vCPU, from the header.
fn index_v1(header: &Header, data_start: u64, len: u64) -> Result<Vec<Vec<Block>>, String> {
    let data_len = len - data_start;
    header
        .cpus
        .iter()
        .map(|c| {
            let end = c
                .entries
                .checked_mul(ENTRY_BYTES as u64)
                .and_then(|n| n.checked_add(c.offset));
            if end.is_none_or(|end| end > data_len) {
                return Err(format!(
                    "cpu {} claims {} entries at offset {} but the data holds {data_len} bytes (truncated file?)",
                    c.cpu, c.entries, c.offset
                ));
            }
            Ok(vec![Block {
                offset: data_start + c.offset,
                entries: c.entries,
            }])
        })
        .collect()
}

/// Scans the block headers of a version-2 file, adding each block's counts
/// to the header's totals; returns the blocks and, for a file without end
/// marker, why it is incomplete. The header's counts must be 0, as written:
/// the blocks hold them, and a count from elsewhere would be reported as
/// recorded (and could overflow the totals).
fn index_v2(
    header: &mut Header,
    data: &Data,
    data_start: u64,
    len: u64,
) -> Result<(Vec<Vec<Block>>, Option<String>), HeaderError> {
    for c in &header.cpus {
        for (field, value) in [
            ("entries", c.entries),
            ("reads", c.reads),
            ("possibly_lost_reads", c.possibly_lost_reads),
        ] {
            if value != 0 {
                return Err(HeaderError::Format(format!(
                    "cpu {}: {field} is {value} in the header, where version 2 has 0 \
                     (the blocks carry the counts)",
                    c.cpu
                )));
            }
        }
    }
    let mut blocks = vec![Vec::new(); header.cpus.len()];
    let mut at = data_start;
    let mut head = [0u8; BLOCK_HEADER_BYTES];
    let cut = loop {
        let n = data.read_at(&mut head, at).map_err(HeaderError::Io)?;
        // A file still being written (`trace report` of a running
        // recording) may hold more than `len` by now: what lies past the
        // length taken at the start is not read, as if not yet written.
        if n < BLOCK_HEADER_BYTES || at + BLOCK_HEADER_BYTES as u64 > len {
            break Some(format!(
                "no end marker at byte {at}: the recording was cut (the recorder was killed, \
                 ran out of space, or stopped at an error)"
            ));
        }
        if &head[..4] == END_MAGIC {
            header.duration_ns = u64::from_le_bytes(head[8..16].try_into().expect("8 bytes"));
            if at + BLOCK_HEADER_BYTES as u64 != len {
                return Err(HeaderError::Format(format!(
                    "{} bytes after the end marker at byte {at}",
                    len - at - BLOCK_HEADER_BYTES as u64
                )));
            }
            break None;
        }
        if &head[..4] != BLOCK_MAGIC {
            return Err(HeaderError::Format(format!(
                "byte {at}: expected a block (DTLB) or the end marker (DTLE)"
            )));
        }
        let index = le32(&head, 4) as usize;
        let Some(cpu) = header.cpus.get_mut(index) else {
            return Err(HeaderError::Format(format!(
                "byte {at}: block of vCPU position {index}, but the header lists {} vCPUs",
                blocks.len()
            )));
        };
        let claimed = u64::from(le32(&head, 8));
        let offset = at + BLOCK_HEADER_BYTES as u64;
        let present = (len - offset) / ENTRY_BYTES as u64;
        let entries = claimed.min(present);
        // Sums past u64::MAX (reads of more than 2^32 blocks) are refused
        // rather than wrapped.
        for (field, total, add) in [
            ("entries", &mut cpu.entries, entries),
            ("reads", &mut cpu.reads, u64::from(le32(&head, 12))),
            (
                "possibly_lost_reads",
                &mut cpu.possibly_lost_reads,
                u64::from(le32(&head, 16)),
            ),
        ] {
            *total = total.checked_add(add).ok_or_else(|| {
                HeaderError::Format(format!(
                    "cpu {}: {field} overflows a 64-bit count at the block at byte {at}",
                    cpu.cpu
                ))
            })?;
        }
        if entries < claimed
            && let Some(k) =
                marker_among_records(data, offset, present, len).map_err(HeaderError::Io)?
        {
            return Err(HeaderError::Format(format!(
                "the block at byte {at} (cpu {}) claims {claimed} records, but a block header \
                 or the end marker starts after {k} of them, at byte {}: its count is damaged",
                cpu.cpu,
                offset + k * ENTRY_BYTES as u64
            )));
        }
        if entries > 0 {
            blocks[index].push(Block { offset, entries });
        }
        if entries < claimed {
            break Some(format!(
                "the block at byte {at} is cut after {entries} of {claimed} records \
                 (the recorder was killed, ran out of space, or stopped at an error)"
            ));
        }
        at = offset + claimed * ENTRY_BYTES as u64;
    };
    Ok((blocks, cut))
}

/// In a block whose records start at `offset` and claim to run past the
/// end of the file, `len` (`present` whole records there), the number of the
/// first record boundary where a block header (`DTLB`) or the end marker
/// (`DTLE`) starts, if any; the bytes after the last whole record count
/// too. A recorder killed while writing leaves records up to the end of
/// the file; a count that is too large runs on into the next block
/// instead. A record never starts with those bytes: its first two are the
/// dispatch and preempt reasons, small numbers, not 68 (`D`) and 84 (`T`).
fn marker_among_records(
    data: &Data,
    offset: u64,
    present: u64,
    len: u64,
) -> io::Result<Option<u64>> {
    const CHUNK_RECORDS: u64 = 4096;
    let mut chunk = vec![0u8; CHUNK_RECORDS as usize * ENTRY_BYTES];
    let mut first = 0;
    while first <= present {
        let at = offset + first * ENTRY_BYTES as u64;
        let n = data.read_at(&mut chunk, at)?;
        // Not past the length the file had when it was opened (a running
        // recording grows meanwhile).
        let n = n.min(usize::try_from(len.saturating_sub(at)).unwrap_or(usize::MAX));
        let found = chunk[..n]
            .chunks(ENTRY_BYTES)
            .position(|r| r.len() >= 4 && (&r[..4] == BLOCK_MAGIC || &r[..4] == END_MAGIC));
        if let Some(k) = found {
            return Ok(Some(first + k as u64));
        }
        first += CHUNK_RECORDS;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header {
            format: FORMAT_NAME.into(),
            version: FORMAT_VERSION,
            host: Uname {
                sysname: "Linux".into(),
                nodename: "lpar1".into(),
                release: "6.12.0".into(),
                version: String::new(),
                machine: "ppc64le".into(),
            },
            partition_id: 3,
            partition_name: None,
            system_serial: None,
            timebase_hz: 512_000_000,
            start_unix_ns: 1,
            duration_ns: 2,
            event_mask: Some(7),
            ring_entries: 85,
            cpus: vec![
                CpuIndex {
                    cpu: 0,
                    offset: 0,
                    entries: 0,
                    reads: 0,
                    possibly_lost_reads: 0,
                },
                CpuIndex {
                    cpu: 4,
                    offset: 0,
                    entries: 0,
                    reads: 0,
                    possibly_lost_reads: 0,
                },
            ],
        }
    }

    #[test]
    fn blocks_of_a_vcpu_are_joined_in_order_and_counts_summed() {
        let a1 = vec![1u8; 96];
        let b1 = vec![2u8; 48];
        let a2 = vec![3u8; 48];
        let mut w = RecordingWriter::new(Vec::new(), header()).unwrap();
        w.block(0, &a1, 2, 1).unwrap();
        w.block(1, &b1, 1, 0).unwrap();
        w.block(0, &a2, 1, 0).unwrap();
        let bytes = w.finish(77).unwrap();
        let rec = Recording::from_bytes("a.dtl", bytes.clone()).unwrap();
        assert_eq!(rec.cut(), None);
        assert_eq!(rec.header.version, 2);
        assert_eq!(rec.header.duration_ns, 77);
        let c0 = &rec.header.cpus[0];
        assert_eq!((c0.entries, c0.reads, c0.possibly_lost_reads), (3, 3, 1));
        assert_eq!(rec.records(0).unwrap(), [a1, a2].concat());
        assert_eq!(rec.records(1).unwrap(), b1);
        // Bytes after the end marker are corruption, not a cut.
        let mut longer = bytes.clone();
        longer.push(0);
        let err = Recording::from_bytes("l.dtl", longer)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("l.dtl: 1 bytes after the end marker"),
            "{err}"
        );
        let mut bad = bytes;
        let first_block = bad.iter().position(|&b| b == b'\n').unwrap() + 1;
        bad[first_block] = b'X';
        let err = Recording::from_bytes("b.dtl", bad).unwrap_err().to_string();
        assert!(err.contains("expected a block (DTLB)"), "{err}");
    }

    #[test]
    fn counts_in_a_version_2_header_are_refused_not_added() {
        let mut w = RecordingWriter::new(Vec::new(), header()).unwrap();
        w.block(0, &[1u8; 48], 1, 1).unwrap();
        let written = w.finish(5).unwrap();
        let header_end = written.iter().position(|&b| b == b'\n').unwrap();
        for (field, value) in [
            ("entries", u64::MAX),
            ("reads", u64::MAX),
            ("possibly_lost_reads", u64::MAX),
            ("reads", 1),
        ] {
            let line = String::from_utf8(written[..header_end].to_vec()).unwrap();
            let zero = format!("\"{field}\":0");
            assert!(line.contains(&zero), "{line}");
            let crafted = line.replacen(&zero, &format!("\"{field}\":{value}"), 1);
            let bytes = [crafted.as_bytes(), &written[header_end..]].concat();
            let err = Recording::from_bytes("c.dtl", bytes)
                .unwrap_err()
                .to_string();
            assert_eq!(
                err,
                format!(
                    "c.dtl: cpu 0: {field} is {value} in the header, where version 2 has 0 \
                     (the blocks carry the counts)"
                )
            );
        }
    }

    /// `trace report` of a recording still being written: the file holds
    /// more than the length taken when it was opened. Read as cut at that
    /// length, never past it (the length once underflowed: a panic in a
    /// debug build, a wrapped record count in a release one).
    #[test]
    fn a_recording_that_grows_while_it_is_indexed_is_read_up_to_its_length() {
        let mut w = RecordingWriter::new(Vec::new(), header()).unwrap();
        w.block(0, &[1u8; 96], 1, 0).unwrap();
        w.block(1, &[2u8; 144], 1, 0).unwrap();
        let whole = w.finish(5).unwrap();
        let data_start = whole.iter().position(|&b| b == b'\n').unwrap() as u64 + 1;
        let data = Data::Memory(whole.clone());
        for len in data_start..whole.len() as u64 {
            let mut header: Header =
                serde_json::from_slice(&whole[..data_start as usize - 1]).unwrap();
            let Ok((blocks, cut)) = index_v2(&mut header, &data, data_start, len) else {
                panic!("at length {len}: an error");
            };
            assert!(cut.is_some(), "at length {len}: not cut");
            for block in blocks.iter().flatten() {
                assert!(
                    block.offset + block.entries * ENTRY_BYTES as u64 <= len,
                    "at length {len}: {block:?} runs past it"
                );
            }
        }
    }

    #[test]
    fn a_cut_recording_is_read_up_to_its_last_whole_record() {
        let mut w = RecordingWriter::new(Vec::new(), header()).unwrap();
        w.block(0, &[1u8; 96], 1, 0).unwrap();
        w.block(1, &[2u8; 144], 1, 0).unwrap();
        let whole = w.finish(5).unwrap();
        let end = whole.len() - BLOCK_HEADER_BYTES;
        // Every cut point: never an error, never more than was written.
        for cut in whole.iter().position(|&b| b == b'\n').unwrap() + 1..end {
            let rec = Recording::from_bytes("k.dtl", whole[..cut].to_vec()).unwrap();
            let why = rec.cut().unwrap();
            assert!(why.contains("cut"), "{why}");
            let total: u64 = rec.header.cpus.iter().map(|c| c.entries).sum();
            assert!(total <= 5);
            assert_eq!(
                rec.records(1).unwrap().len() as u64,
                rec.header.cpus[1].entries * 48
            );
        }
        let rec = Recording::from_bytes("k.dtl", whole[..end - 50].to_vec()).unwrap();
        assert_eq!(rec.header.cpus[0].entries, 2);
        assert_eq!(rec.header.cpus[1].entries, 1);
        assert!(rec.cut().unwrap().contains("cut after 1 of 3 records"));
    }

    #[test]
    fn the_header_is_flushed_when_written() {
        /// A file as the recorder's buffered writer sees it.
        #[derive(Clone, Default)]
        struct Disk(std::rc::Rc<std::cell::RefCell<Vec<u8>>>);
        impl Write for Disk {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                self.0.borrow_mut().extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let disk = Disk::default();
        let _writer = RecordingWriter::new(io::BufWriter::new(disk.clone()), header()).unwrap();
        // Killed now: what is on disk reads as a recording cut before its
        // first block.
        let rec = Recording::from_bytes("k.dtl", disk.0.borrow().clone()).unwrap();
        assert!(rec.cut().unwrap().starts_with("no end marker"));
    }

    #[test]
    fn a_count_that_runs_into_the_next_block_is_damage_not_a_cut() {
        let mut w = RecordingWriter::new(Vec::new(), header()).unwrap();
        w.block(0, &[1u8; 96], 1, 0).unwrap();
        w.block(1, &[2u8; 144], 1, 0).unwrap();
        let whole = w.finish(5).unwrap();
        let first = whole.iter().position(|&b| b == b'\n').unwrap() + 1;
        let second = first + BLOCK_HEADER_BYTES + 96;
        // With and without the end marker, the first or the second block's
        // count forged: the next block's header or the end marker shows.
        for (block, marker) in [(first, second), (second, whole.len() - BLOCK_HEADER_BYTES)] {
            for end in [whole.len(), whole.len() - BLOCK_HEADER_BYTES] {
                if marker >= end {
                    continue;
                }
                let mut forged = whole[..end].to_vec();
                forged[block + 8..block + 12].copy_from_slice(&u32::MAX.to_le_bytes());
                let err = Recording::from_bytes("h.dtl", forged)
                    .unwrap_err()
                    .to_string();
                let cpu = if block == first { 0 } else { 4 };
                let after = (marker - block - BLOCK_HEADER_BYTES) / ENTRY_BYTES;
                assert_eq!(
                    err,
                    format!(
                        "h.dtl: the block at byte {block} (cpu {cpu}) claims 4294967295 \
                         records, but a block header or the end marker starts after {after} \
                         of them, at byte {marker}: its count is damaged"
                    )
                );
            }
        }
    }

    #[test]
    fn a_statistics_recording_names_its_tool_and_how_to_replay_it() {
        let statistics = |tool: &str| {
            format!(
                "{{\"format\":\"hwstat-recording\",\"version\":1,\"tool\":\"{tool}\",\
                 \"args\":[],\"start_unix_ns\":0}}\n{{\"index\":0,\"entries\":{{}}}}\n"
            )
            .into_bytes()
        };
        let err = Recording::from_bytes("s.rec", statistics("vcpustat"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "s.rec was recorded by vcpustat, not vcpustat trace record: replay it with \
             vcpustat --replay s.rec"
        );
        // The kernel files a trace recording read: its trace is elsewhere.
        let err = Recording::from_bytes("k.rec", statistics("vcpustat trace record"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "k.rec holds the kernel files vcpustat trace record read (its --record), not a \
             Dispatch Trace Log: report on the file it wrote with -w"
        );
        // The tool is the file's text: escaped.
        let err = Recording::from_bytes("s.rec", statistics("\\u001b[2J"))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("s.rec was recorded by \\x1b[2J, not"),
            "{err}"
        );
    }

    #[test]
    fn version_1_recordings_are_still_read() {
        let mut h = header();
        h.version = 1;
        h.cpus[0].entries = 2;
        h.cpus[0].possibly_lost_reads = 1;
        h.cpus[1].offset = 96;
        h.cpus[1].entries = 1;
        let mut bytes = serde_json::to_vec(&h).unwrap();
        bytes.push(b'\n');
        bytes.extend([1u8; 96]);
        bytes.extend([2u8; 48]);
        let rec = Recording::from_bytes("v1.dtl", bytes.clone()).unwrap();
        assert_eq!(rec.header.cpus[0].possibly_lost_reads, 1);
        assert_eq!(rec.records(0).unwrap(), vec![1u8; 96]);
        assert_eq!(rec.records(1).unwrap(), vec![2u8; 48]);
        assert_eq!(rec.cut(), None);
        // A truncated version-1 file names the vCPU whose block is cut.
        bytes.truncate(bytes.len() - 1);
        let err = Recording::from_bytes("t.dtl", bytes)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("t.dtl: cpu 4 claims 1 entries"), "{err}");
        let err = Recording::from_bytes("x", b"hello\n".to_vec())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("not a vcpustat trace recording header"),
            "{err}"
        );
        let err = Recording::from_bytes("x", b"no newline".to_vec())
            .unwrap_err()
            .to_string();
        assert!(err.contains("no header line"), "{err}");
    }
}
