//! The `vcpustat trace record` file: a versioned header and the raw records.
//!
//! # Format (version 1)
//!
//! * Line 1 is a JSON object, the header and index:
//!   `{"format":"vcpustat-dtl","version":1,"host":{uname fields},
//!   "partition_id":N,"partition_name":"..","system_serial":"IBM,02..",
//!   "timebase_hz":512000000,
//!   "start_unix_ns":N,"duration_ns":N,"event_mask":7,"ring_entries":85,
//!   "cpus":[{"cpu":0,"offset":0,"entries":N,"reads":N,"possibly_lost_reads":N},..]}`
//!   followed by one `\n`. `event_mask` is absent when the recorder left
//!   `dtl_event_mask` as it was.
//! * Then, binary: every vCPU's records exactly as the kernel returned them
//!   (48-byte big-endian `struct dtl_entry`, in ring order). vCPU `i`'s
//!   records start `offset` bytes after the header line and are
//!   `entries * 48` bytes long; the blocks do not overlap and the file ends
//!   with the last block. The header is the small index of where each
//!   vCPU's data lives, so every vCPU is recorded in its own buffer and the
//!   reader can slice them without copying.
//! * `possibly_lost_reads` counts reads that returned a full ring (at least
//!   `ring_entries - 1` records): the kernel skips to the newest entries
//!   when a reader falls a ring behind, so such a read may follow a gap.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::entry::ENTRY_BYTES;
use crate::common::source::Uname;

/// The value of the header's `format` field.
pub const FORMAT_NAME: &str = "vcpustat-dtl";
/// The format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

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
    /// The `dtl_event_mask` the recorder set, if it set one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_mask: Option<u8>,
    /// Ring size in entries (`dtl_buf_entries`).
    pub ring_entries: u32,
    /// One index entry per recorded vCPU.
    pub cpus: Vec<CpuIndex>,
}

/// A loaded recording: its header and its data block.
#[derive(Debug, Clone)]
pub struct Recording {
    /// The header and index.
    pub header: Header,
    bytes: Vec<u8>,
    data_start: usize,
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
}

/// Writes `header` (whose `cpus` offsets and counts this fills in from
/// `blocks`) and the per-vCPU blocks to `path`.
pub fn write_recording(
    path: &Path,
    mut header: Header,
    blocks: &[(&[u8], u64, u64)],
) -> Result<Header, RecordingError> {
    let io_err = |source| RecordingError::Io {
        path: path.display().to_string(),
        source,
    };
    let mut offset = 0u64;
    for (index, (data, reads, lost)) in header.cpus.iter_mut().zip(blocks) {
        index.offset = offset;
        index.entries = (data.len() / ENTRY_BYTES) as u64;
        index.reads = *reads;
        index.possibly_lost_reads = *lost;
        offset += (index.entries as usize * ENTRY_BYTES) as u64;
    }
    let mut out = BufWriter::new(File::create(path).map_err(io_err)?);
    let line = serde_json::to_string(&header).expect("headers always serialize");
    out.write_all(line.as_bytes()).map_err(io_err)?;
    out.write_all(b"\n").map_err(io_err)?;
    for (data, _, _) in blocks {
        let whole = data.len() - data.len() % ENTRY_BYTES;
        out.write_all(&data[..whole]).map_err(io_err)?;
    }
    out.flush().map_err(io_err)?;
    Ok(header)
}

impl Recording {
    /// Loads a recording, checking the header and that every block lies
    /// inside the data.
    pub fn open(path: &Path) -> Result<Recording, RecordingError> {
        let shown = path.display().to_string();
        let mut bytes = Vec::new();
        File::open(path)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .map_err(|source| RecordingError::Io {
                path: shown.clone(),
                source,
            })?;
        Recording::from_bytes(&shown, bytes)
    }

    /// Parses a recording held in memory; `name` appears in errors.
    pub fn from_bytes(name: &str, bytes: Vec<u8>) -> Result<Recording, RecordingError> {
        let bad = |what: String| RecordingError::Format {
            path: name.to_string(),
            what,
        };
        let newline = bytes
            .iter()
            .position(|&b| b == b'\n')
            .ok_or_else(|| bad("no header line: not a vcpustat trace recording".into()))?;
        let header: Header = serde_json::from_slice(&bytes[..newline])
            .map_err(|e| bad(format!("not a vcpustat trace recording header: {e}")))?;
        if header.format != FORMAT_NAME {
            return Err(bad(format!(
                "format is {:?}, expected {FORMAT_NAME:?}",
                header.format
            )));
        }
        if header.version != FORMAT_VERSION {
            return Err(bad(format!(
                "recording version {} is not supported (this build reads {FORMAT_VERSION})",
                header.version
            )));
        }
        if header.timebase_hz == 0 {
            return Err(bad("timebase_hz is 0".into()));
        }
        let data_start = newline + 1;
        let len = (bytes.len() - data_start) as u64;
        let mut seen = std::collections::BTreeSet::new();
        for c in &header.cpus {
            let end = c
                .entries
                .checked_mul(ENTRY_BYTES as u64)
                .and_then(|n| n.checked_add(c.offset));
            if end.is_none_or(|end| end > len) {
                return Err(bad(format!(
                    "cpu {} claims {} entries at offset {} but the data holds {len} bytes (truncated file?)",
                    c.cpu, c.entries, c.offset
                )));
            }
            if !seen.insert(c.cpu) {
                return Err(bad(format!("cpu {} appears twice in the index", c.cpu)));
            }
        }
        Ok(Recording {
            header,
            bytes,
            data_start,
        })
    }

    /// The raw records of the vCPU at `index` in `header.cpus`.
    pub fn records(&self, index: usize) -> &[u8] {
        let c = &self.header.cpus[index];
        let start = self.data_start + c.offset as usize;
        &self.bytes[start..start + c.entries as usize * ENTRY_BYTES]
    }
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
    fn writes_an_index_and_reads_blocks_back() {
        let dir = std::env::temp_dir().join(format!("hwstat-dtlrec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.dtl");
        let a = vec![1u8; 96];
        let b = vec![2u8; 48];
        let written = write_recording(&path, header(), &[(&a, 3, 1), (&b, 1, 0)]).unwrap();
        assert_eq!(written.cpus[1].offset, 96);
        let rec = Recording::open(&path).unwrap();
        assert_eq!(rec.header.cpus[0].entries, 2);
        assert_eq!(rec.header.cpus[0].possibly_lost_reads, 1);
        assert_eq!(rec.records(0), &a[..]);
        assert_eq!(rec.records(1), &b[..]);
        // A truncated file names the vCPU whose block is cut.
        let mut bytes = std::fs::read(&path).unwrap();
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
        std::fs::remove_dir_all(dir).unwrap();
    }
}
