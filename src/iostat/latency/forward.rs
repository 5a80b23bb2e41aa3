//! The eBPF path of the [`collector`](super::collector): the program in
//! `bpf/block.bpf.c` (compiled into the `bpf/block.bpf.o` embedded here, so
//! a build needs no BPF compiler) runs on `block_rq_issue`,
//! `block_rq_complete` and `block_rq_requeue` and writes 32 bytes an event
//! into one BPF ring buffer. aya loads it: it creates the maps, sets the
//! field offsets tracefs gives (the program's read-only globals, which the
//! verifier then knows as constants), loads and attaches the programs.
//!
//! The program wakes the reader only when a quarter of the ring is full
//! (`BPF_RB_FORCE_WAKEUP`, else `BPF_RB_NO_WAKEUP`): one wake-up per event
//! costs more than the event (BENCHMARKS.md, the drain thread's watermark).
//! Events the full ring refuses are counted in the `LOST` map.

use std::error::Error;
use std::io;
use std::os::fd::{AsRawFd, RawFd};

use aya::maps::{Array, MapData, RingBuf};
use aya::programs::TracePoint;
use aya::{Ebpf, EbpfLoader};

use super::collector::{KINDS, Kind, Layout, Sample};
use super::tracker::{Dev, Op};

/// The compiled program (`bash src/iostat/latency/bpf/build.sh`).
static OBJECT: &[u8] = aya::include_bytes_aligned!("bpf/block.bpf.o");

/// The bytes of a tracepoint record the program copies to read the fields
/// from (`SPAN` in block.bpf.c).
const SPAN: usize = 48;
/// The size of a forwarded record ([`decode`]).
const RECORD_LEN: usize = 32;
/// Ring bytes per CPU (rounded up to a power of two in all).
const RING_PER_CPU: u32 = 4 << 20;
/// The largest ring: 256 MiB.
const RING_MAX: u32 = 1 << 28;

/// The loaded programs and the ring they write.
pub(super) struct Forwarder {
    ring: RingBuf<MapData>,
    lost: Array<MapData, u64>,
    lost_seen: u64,
    /// Owns the programs: they stay attached while it lives.
    _ebpf: Ebpf,
}

impl Forwarder {
    /// Loads and attaches the programs for events in `layouts`, with a ring
    /// sized for `cpus` CPUs. The reason, as one line, when that fails.
    pub(super) fn start(layouts: &[Layout], cpus: usize) -> Result<Forwarder, String> {
        let field_at = field_table(layouts)?;
        let ring_bytes = ring_bytes(cpus);
        let wake_at = u64::from(ring_bytes / 4);
        let mut ebpf = EbpfLoader::new()
            .override_global("FIELD_AT", &field_at, true)
            .override_global("WAKE_AT", &wake_at, true)
            .map_max_entries("EVENTS", ring_bytes)
            .load(OBJECT)
            .map_err(|e| describe("loading the eBPF object", &e))?;
        for (program, tracepoint) in [
            ("issue", "block_rq_issue"),
            ("complete", "block_rq_complete"),
            ("requeue", "block_rq_requeue"),
        ] {
            let what = format!("the eBPF program for {tracepoint}");
            let p: &mut TracePoint = ebpf
                .program_mut(program)
                .ok_or_else(|| format!("{what}: not in the object"))?
                .try_into()
                .map_err(|e| describe(&what, &e))?;
            p.load().map_err(|e| describe(&what, &e))?;
            p.attach("block", tracepoint)
                .map_err(|e| describe(&what, &e))?;
        }
        let mut map = |name: &str| {
            ebpf.take_map(name)
                .ok_or_else(|| format!("the eBPF object has no map {name}"))
        };
        let ring = RingBuf::try_from(map("EVENTS")?).map_err(|e| describe("EVENTS", &e))?;
        let lost = Array::try_from(map("LOST")?).map_err(|e| describe("LOST", &e))?;
        Ok(Forwarder {
            ring,
            lost,
            lost_seen: 0,
            _ebpf: ebpf,
        })
    }

    /// The descriptor to poll: readable when the program woke it.
    pub(super) fn fd(&self) -> RawFd {
        self.ring.as_raw_fd()
    }

    /// Moves every record in the ring to `out`; returns how many events
    /// the full ring refused since the last call.
    pub(super) fn drain(&mut self, out: &mut Vec<Sample>) -> u64 {
        while let Some(item) = self.ring.next() {
            out.extend(decode(&item));
        }
        let lost = self.lost.get(&0, 0).unwrap_or(self.lost_seen);
        let new = lost.saturating_sub(self.lost_seen);
        self.lost_seen = lost;
        new
    }
}

/// `FIELD_AT` of block.bpf.c: per kind, the offsets of dev, sector,
/// nr_sector and rwbs, each checked to be of the size the program reads,
/// aligned to it and within [`SPAN`].
fn field_table(layouts: &[Layout]) -> Result<[[u32; 4]; 3], String> {
    let mut table = [[0u32; 4]; 3];
    for l in layouts {
        let fields = [(l.dev, 4), (l.sector, 8), (l.nr_sector, 4), (l.rwbs, 2)];
        for (slot, (field, size)) in table[l.kind as usize].iter_mut().zip(fields) {
            let fits = field.size >= size
                && (size == 2 || (field.size == size && field.offset % size == 0))
                && field.offset + size <= SPAN;
            if !fits {
                return Err(format!(
                    "a block tracepoint field at offset {} ({} bytes) is not one the eBPF \
                     program can read",
                    field.offset, field.size
                ));
            }
            *slot = field.offset as u32;
        }
    }
    Ok(table)
}

/// The ring's size for `cpus` CPUs: [`RING_PER_CPU`] each, a power of two,
/// at most [`RING_MAX`].
fn ring_bytes(cpus: usize) -> u32 {
    let cpus = u32::try_from(cpus.max(1)).unwrap_or(u32::MAX);
    RING_PER_CPU
        .saturating_mul(cpus)
        .checked_next_power_of_two()
        .map_or(RING_MAX, |b| b.min(RING_MAX))
}

/// One line for `err` (its causes after colons) as met doing `what`;
/// a refusal for want of privilege names it.
fn describe(what: &str, err: &(dyn Error + 'static)) -> String {
    let mut causes = vec![err.to_string()];
    let mut denied = false;
    let mut next = Some(err);
    while let Some(cause) = next {
        if let Some(io) = cause.downcast_ref::<io::Error>() {
            denied |= matches!(io.raw_os_error(), Some(libc::EPERM) | Some(libc::EACCES));
        }
        let text = cause.to_string();
        if !causes.iter().any(|c| c.contains(&text)) {
            causes.push(text);
        }
        next = cause.source();
    }
    if denied {
        return format!("{what}: eBPF needs root, or CAP_BPF with CAP_PERFMON");
    }
    // The verifier's log, when there is one, ends with why it refused.
    let joined = causes.join(": ");
    let line = joined.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
    let first = joined.lines().next().unwrap_or("");
    if line == first {
        format!("{what}: {first}")
    } else {
        format!("{what}: {first} ({})", line.trim())
    }
}

/// Decodes a forwarded record (`struct record` of block.bpf.c): time
/// (u64), sector (u64), dev (u32), nr_sector (u32), the first two bytes of
/// `rwbs`, two zero bytes, and the [`Kind`] (u32).
pub(super) fn decode(record: &[u8]) -> Option<Sample> {
    let raw = record.get(..RECORD_LEN)?;
    let u64_at = |at: usize| raw[at..at + 8].try_into().ok().map(u64::from_ne_bytes);
    let u32_at = |at: usize| raw[at..at + 4].try_into().ok().map(u32::from_ne_bytes);
    let kind: Kind = *KINDS.get(u32_at(28)? as usize)?;
    Some(Sample {
        time: u64_at(0)?,
        kind,
        dev: u32_at(16)? as Dev,
        sector: u64_at(8)?,
        sectors: u64::from(u32_at(20)?),
        op: Op::from_rwbs(&raw[24..26]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::tracefs::Field;
    use crate::iostat::latency::tracker::{dev_numbers, dev_of};

    #[test]
    fn forwarded_records_decode() {
        let mut record = Vec::new();
        record.extend(987_654_321u64.to_ne_bytes());
        record.extend(2048u64.to_ne_bytes());
        record.extend(dev_of(254, 0).to_ne_bytes());
        record.extend(16u32.to_ne_bytes());
        record.extend(*b"FW\0\0");
        record.extend(1u32.to_ne_bytes());
        let s = decode(&record).expect("decodes");
        assert_eq!(s.time, 987_654_321);
        assert_eq!(s.kind, Kind::Complete);
        assert_eq!(dev_numbers(s.dev), (254, 0));
        assert_eq!((s.sector, s.sectors, s.op), (2048, 16, Some(Op::Write)));
        // One-letter rwbs ("R" then a NUL).
        record[24..26].copy_from_slice(b"R\0");
        assert_eq!(decode(&record).unwrap().op, Some(Op::Read));
        record[28..32].copy_from_slice(&7u32.to_ne_bytes());
        assert!(decode(&record).is_none(), "no such kind");
        assert!(decode(&record[..20]).is_none(), "cut short");
    }

    fn field(offset: usize, size: usize) -> Field {
        Field { offset, size }
    }

    /// block_rq_requeue's format on Linux 6.18.
    fn requeue() -> Layout {
        Layout {
            id: 2105,
            kind: Kind::Requeue,
            dev: field(8, 4),
            sector: field(16, 8),
            nr_sector: field(24, 4),
            rwbs: field(30, 10),
        }
    }

    #[test]
    fn the_program_reads_fields_of_its_sizes_within_the_span() {
        assert_eq!(field_table(&[requeue()]).unwrap()[2], [8, 16, 24, 30]);
        let mut wide = requeue();
        wide.dev = field(8, 8);
        assert!(field_table(&[wide]).is_err(), "a 64-bit dev_t");
        let mut misaligned = requeue();
        misaligned.sector = field(12, 8);
        assert!(field_table(&[misaligned]).is_err());
        let mut far = requeue();
        far.rwbs = field(47, 10);
        assert!(field_table(&[far]).is_err(), "beyond the copied span");
        let mut short = requeue();
        short.rwbs = field(30, 1);
        assert!(field_table(&[short]).is_err());
    }

    #[test]
    fn the_ring_grows_with_the_cpus_by_powers_of_two() {
        assert_eq!(ring_bytes(0), 4 << 20);
        assert_eq!(ring_bytes(2), 8 << 20);
        assert_eq!(ring_bytes(3), 16 << 20);
        assert_eq!(ring_bytes(4096), 1 << 28);
    }

    #[test]
    fn a_refusal_names_the_privileges() {
        // As aya reports a refused bpf(2): the call, caused by the errno.
        let refused = aya::sys::SyscallError {
            call: "bpf_map_create",
            io_error: io::Error::from_raw_os_error(libc::EPERM),
        };
        let line = describe("loading", &refused);
        assert!(line.contains("CAP_BPF with CAP_PERFMON"), "{line}");
        assert!(!line.contains('\n'));
        let other = aya::sys::SyscallError {
            call: "bpf_map_create",
            io_error: io::Error::from_raw_os_error(libc::EINVAL),
        };
        assert_eq!(
            describe("loading", &other),
            "loading: `bpf_map_create` failed: Invalid argument (os error 22)"
        );
    }
}
