//! From virtual records to per-vCPU latency and the physical timeline,
//! streaming: no pass holds the records of the recordings in memory.
//!
//! The timeline follows the method of the seed patent (CN101290594A): every
//! DTL record of a vCPU becomes one physical record on the processor it was
//! dispatched on, with
//!
//! * start = the dispatch time ([`DtlEntry::dispatched_at`]);
//! * virtual processing time = the wait start of the same vCPU's next record
//!   minus this start (how long it ran before it had to wait again);
//! * delay = the start of the next physical record on the same processor
//!   minus this start minus this virtual processing time (how long the
//!   processor did something not traced: another partition, or idle).
//!
//! The last record of a vCPU has no virtual processing time, and the last
//! record of a processor no delay. Recordings of several partitions of one
//! machine share the time base, so their records merge into one view.
//!
//! Two passes read the recordings:
//!
//! * [`vcpu_reports`] reads one vCPU at a time (latency, idle wait, reasons,
//!   migrations); it holds the wait values of one vCPU for its percentiles;
//! * [`physical`] is a k-way merge of every vCPU's records by start time,
//!   with a small read buffer per vCPU and a one-record lookahead; it keeps
//!   the last record of each processor, so each physical record it yields
//!   carries the delay of the previous record on its processor
//!   ([`PhysRecord::delay_before`]). Its memory is bounded by the number
//!   of vCPUs and processors, not of records.
//!   [`processor_summaries`] folds it into per-processor figures.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use super::entry::{DtlEntry, ENTRY_BYTES};
use super::recording::{Block, Recording};
use super::stats::{Distribution, summarize};
use super::topology::Topology;
use crate::common::escape;

/// A vCPU of the machine: its partition and its number there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VcpuKey {
    /// `partition_id` of the recording.
    pub partition: u32,
    /// vCPU number in the partition.
    pub cpu: u32,
}

/// One vCPU's records: where they are in which recording.
#[derive(Debug, Clone)]
pub struct VcpuTrace<'a> {
    /// Which vCPU.
    pub key: VcpuKey,
    name: &'a str,
    recording: &'a Recording,
    index: usize,
    entries: u64,
    /// Reads that returned a full ring (records may be missing).
    pub possibly_lost_reads: u64,
}

impl<'a> VcpuTrace<'a> {
    /// The number of records.
    pub fn len(&self) -> u64 {
        self.entries
    }

    /// Whether there is no record.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Reads the records in file order, `buffer_records` at a time.
    pub fn stream(&self, buffer_records: usize) -> EntryStream<'a> {
        EntryStream {
            name: self.name,
            recording: self.recording,
            blocks: self.recording.blocks(self.index),
            block: 0,
            taken: 0,
            buf: vec![0; buffer_records.min(self.entries as usize).max(1) * ENTRY_BYTES],
            at: 0,
            filled: 0,
        }
    }
}

/// A vCPU's records read in order through a buffer of fixed size.
pub struct EntryStream<'a> {
    name: &'a str,
    recording: &'a Recording,
    blocks: &'a [Block],
    block: usize,
    /// Records of `blocks[block]` already read into the buffer.
    taken: u64,
    buf: Vec<u8>,
    at: usize,
    filled: usize,
}

impl EntryStream<'_> {
    /// The next record, `None` after the last; an error names the recording.
    pub fn next_entry(&mut self) -> Result<Option<DtlEntry>, String> {
        if self.at == self.filled {
            loop {
                let Some(b) = self.blocks.get(self.block) else {
                    return Ok(None);
                };
                if self.taken == b.entries {
                    self.block += 1;
                    self.taken = 0;
                    continue;
                }
                let room = (self.buf.len() / ENTRY_BYTES) as u64;
                let n = (b.entries - self.taken).min(room) as usize;
                let offset = b.offset + self.taken * ENTRY_BYTES as u64;
                self.recording
                    .read_records(offset, &mut self.buf[..n * ENTRY_BYTES])
                    .map_err(|e| format!("{}: {e}", self.name))?;
                self.taken += n as u64;
                self.at = 0;
                self.filled = n * ENTRY_BYTES;
                break;
            }
        }
        let raw = &self.buf[self.at..self.at + ENTRY_BYTES];
        self.at += ENTRY_BYTES;
        Ok(Some(DtlEntry::decode(raw.try_into().expect("48 bytes"))))
    }
}

/// Every recorded vCPU of one machine.
#[derive(Debug, Clone)]
pub struct Machine<'a> {
    /// Time-base ticks per second, common to all recordings.
    pub timebase_hz: u64,
    /// The vCPUs, sorted by key.
    pub vcpus: Vec<VcpuTrace<'a>>,
}

impl Machine<'_> {
    /// The number of records of all vCPUs.
    pub fn entries(&self) -> u64 {
        self.vcpus.iter().map(|v| v.entries).sum()
    }
}

/// Merges recordings (named for errors) into one machine view.
pub fn load(recordings: &[(String, Recording)]) -> Result<Machine<'_>, String> {
    let Some((_, first)) = recordings.first() else {
        return Err("no recording given".into());
    };
    let timebase_hz = first.header.timebase_hz;
    let serial = recordings
        .iter()
        .find_map(|(name, r)| Some((name, r.header.system_serial.as_deref()?)));
    let mut seen: HashMap<VcpuKey, &str> = HashMap::new();
    let mut vcpus = Vec::new();
    for (name, rec) in recordings {
        if rec.header.timebase_hz != timebase_hz {
            return Err(format!(
                "{name}: time base {} Hz differs from {} Hz of {}: recordings must come from one machine",
                rec.header.timebase_hz, timebase_hz, recordings[0].0
            ));
        }
        if let (Some((first_name, first_serial)), Some(this)) =
            (serial, rec.header.system_serial.as_deref())
            && this != first_serial
        {
            return Err(format!(
                "{name}: machine serial number {} differs from {} of {first_name}: \
                 recordings must come from one machine",
                escape::text(this),
                escape::text(first_serial)
            ));
        }
        for (index, c) in rec.header.cpus.iter().enumerate() {
            let key = VcpuKey {
                partition: rec.header.partition_id,
                cpu: c.cpu,
            };
            if let Some(other) = seen.insert(key, name) {
                return Err(format!(
                    "{name}: partition {} cpu {} is also in {other}; give each vCPU once",
                    key.partition, key.cpu
                ));
            }
            vcpus.push(VcpuTrace {
                key,
                name,
                recording: rec,
                index,
                entries: c.entries,
                possibly_lost_reads: c.possibly_lost_reads,
            });
        }
    }
    vcpus.sort_by_key(|v| v.key);
    Ok(Machine { timebase_hz, vcpus })
}

/// What the report says about one vCPU.
#[derive(Debug, Clone, PartialEq)]
pub struct VcpuReport {
    /// Which vCPU.
    pub key: VcpuKey,
    /// Number of dispatches (records).
    pub dispatches: u64,
    /// Dispatch latency (ready to enqueue plus enqueue to dispatch: the
    /// time it was ready and waited for a processor), in ticks.
    pub latency: Option<Distribution>,
    /// Idle wait (waiting to ready: the time before it was ready again,
    /// sleep after a cede included), in ticks.
    pub idle_wait: Option<Distribution>,
    /// Dispatch reason codes and their counts, by code.
    pub dispatch_reasons: Vec<(u8, u64)>,
    /// Preempt reason codes and their counts, by code.
    pub preempt_reasons: Vec<(u8, u64)>,
    /// Dispatches on another physical processor than the previous one.
    pub processor_changes: u64,
    /// Dispatches on another chip (needs a topology).
    pub chip_changes: Option<u64>,
    /// Dispatches on another node (needs a topology).
    pub node_changes: Option<u64>,
    /// The processors this vCPU moved between that a topology given does
    /// not place, ascending: why its chip and node changes are `None`.
    pub unplaced: Vec<u16>,
    /// Reads that may have lost records.
    pub possibly_lost_reads: u64,
    /// Records that start before the previous record of the vCPU.
    pub out_of_order: u64,
}

fn counted(counts: &[u64; 256]) -> Vec<(u8, u64)> {
    (0..=255u8)
        .filter(|&c| counts[usize::from(c)] > 0)
        .map(|c| (c, counts[usize::from(c)]))
        .collect()
}

/// Records read at a time per vCPU in [`vcpu_reports`].
const VCPU_PASS_BUFFER: usize = 1024;

/// Per-vCPU latency, idle wait, reasons and migrations, one vCPU at a time.
/// `progress` is called with the number of records read so far.
pub fn vcpu_reports(
    machine: &Machine,
    topology: &Topology,
    progress: &mut dyn FnMut(u64),
) -> Result<Vec<VcpuReport>, String> {
    vcpu_reports_visiting(machine, topology, progress, &mut |_, _, _| {})
}

/// [`vcpu_reports`], also showing `visit` each record in the same pass:
/// `visit(vcpu, record, next)` with the vCPU's index in
/// [`Machine::vcpus`] and its next record (`None` for its last).
pub fn vcpu_reports_visiting(
    machine: &Machine,
    topology: &Topology,
    progress: &mut dyn FnMut(u64),
    visit: &mut dyn FnMut(usize, &DtlEntry, Option<&DtlEntry>),
) -> Result<Vec<VcpuReport>, String> {
    let mut latencies = Vec::new();
    let mut idle = Vec::new();
    let mut done = 0u64;
    let mut out = Vec::with_capacity(machine.vcpus.len());
    for (index, v) in machine.vcpus.iter().enumerate() {
        latencies.clear();
        idle.clear();
        let mut dispatch = [0u64; 256];
        let mut preempt = [0u64; 256];
        let (mut processor_changes, mut chip_changes, mut node_changes) = (0, 0, 0);
        let mut out_of_order = 0;
        let mut placed = !topology.is_empty();
        let mut unplaced = std::collections::BTreeSet::new();
        let mut previous: Option<DtlEntry> = None;
        let mut stream = v.stream(VCPU_PASS_BUFFER);
        while let Some(e) = stream.next_entry()? {
            latencies.push(e.dispatch_latency_ticks());
            idle.push(e.idle_wait_ticks());
            dispatch[usize::from(e.dispatch_reason)] += 1;
            preempt[usize::from(e.preempt_reason)] += 1;
            done += 1;
            if done.is_multiple_of(1 << 16) {
                progress(done);
            }
            if let Some(prev) = &previous {
                visit(index, prev, Some(&e));
            }
            let Some(prev) = previous.replace(e) else {
                continue;
            };
            out_of_order += u64::from(e.dispatched_at() < prev.dispatched_at());
            if prev.processor_id == e.processor_id {
                continue;
            }
            processor_changes += 1;
            match (
                topology.place(prev.processor_id),
                topology.place(e.processor_id),
            ) {
                (Some(a), Some(b)) => {
                    chip_changes += u64::from(a.chip != b.chip);
                    node_changes += u64::from(a.node != b.node);
                }
                (a, b) => {
                    placed = false;
                    if !topology.is_empty() {
                        let missing = [(a, prev.processor_id), (b, e.processor_id)];
                        unplaced.extend(missing.iter().filter(|m| m.0.is_none()).map(|m| m.1));
                    }
                }
            }
        }
        if let Some(last) = &previous {
            visit(index, last, None);
        }
        out.push(VcpuReport {
            key: v.key,
            dispatches: latencies.len() as u64,
            latency: summarize(&mut latencies),
            idle_wait: summarize(&mut idle),
            dispatch_reasons: counted(&dispatch),
            preempt_reasons: counted(&preempt),
            processor_changes,
            chip_changes: placed.then_some(chip_changes),
            node_changes: placed.then_some(node_changes),
            unplaced: unplaced.into_iter().collect(),
            possibly_lost_reads: v.possibly_lost_reads,
            out_of_order,
        });
    }
    progress(done);
    Ok(out)
}

/// One dispatch on a physical processor, as the merge yields it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhysRecord {
    /// The physical processor.
    pub processor: u16,
    /// When the vCPU started running (ticks).
    pub start: u64,
    /// The vCPU that ran: its index in [`Machine::vcpus`].
    pub vcpu: u32,
    /// How long it ran before it next waited (ticks); unknown for a vCPU's
    /// last record.
    pub virtual_time: Option<u64>,
    /// The delay of the previous record on the same processor: this start
    /// minus that start minus its virtual processing time (untraced time on
    /// the processor just before this dispatch). Unknown for a processor's
    /// first record and when the previous record's virtual time is unknown,
    /// and `None` when that would be negative ([`PhysRecord::overlap_before`]).
    pub delay_before: Option<u64>,
    /// How long before the end of the previous run on the same processor
    /// this dispatch started (ticks), when it did: a negative delay. One
    /// processor cannot run two vCPUs at once, so this says the recordings'
    /// time bases are offset (KVM guests, Live Partition Mobility) or the
    /// previous run is too long (its vCPU's waits were not all logged).
    pub overlap_before: Option<u64>,
}

/// One vCPU's place in the merge: its stream and a record of lookahead.
struct Cursor<'a> {
    stream: EntryStream<'a>,
    head: Option<DtlEntry>,
    next: Option<DtlEntry>,
}

/// The bytes of read buffer the merge shares among the vCPUs.
const MERGE_BUFFER_BYTES: usize = 16 << 20;

/// Records read at a time per vCPU in the merge: 16 MiB shared among the
/// vCPUs, between 2 and 1024 records each.
fn merge_buffer_records(vcpus: usize) -> usize {
    (MERGE_BUFFER_BYTES / ENTRY_BYTES / vcpus.max(1)).clamp(2, 1024)
}

/// The physical records of every processor, merged across vCPUs in start
/// order (ties by vCPU), passed to `visit`. `progress` is called with the
/// number of records merged so far.
pub fn physical(
    machine: &Machine,
    visit: &mut dyn FnMut(&PhysRecord) -> Result<(), String>,
    progress: &mut dyn FnMut(u64),
) -> Result<(), String> {
    let per_vcpu = merge_buffer_records(machine.vcpus.len());
    let mut cursors = Vec::with_capacity(machine.vcpus.len());
    let mut heap = BinaryHeap::with_capacity(machine.vcpus.len());
    for (i, v) in machine.vcpus.iter().enumerate() {
        let mut stream = v.stream(per_vcpu);
        let head = stream.next_entry()?;
        let next = if head.is_some() {
            stream.next_entry()?
        } else {
            None
        };
        if let Some(h) = head {
            heap.push(Reverse((h.dispatched_at(), i as u32)));
        }
        cursors.push(Cursor { stream, head, next });
    }
    // Per processor (indexed by its number: a lookup per record must be
    // cheap): the start and virtual time of its last record.
    let mut last: Vec<Option<(u64, Option<u64>)>> = vec![None; 1 << 16];
    let mut done = 0u64;
    while let Some(Reverse((start, vcpu))) = heap.pop() {
        let c = &mut cursors[vcpu as usize];
        let e = c.head.take().expect("a vCPU in the heap has a head");
        let virtual_time = c
            .next
            .as_ref()
            .and_then(|n| n.wait_started_at().checked_sub(start));
        c.head = c.next.take();
        if let Some(h) = &c.head {
            c.next = c.stream.next_entry()?;
            heap.push(Reverse((h.dispatched_at(), vcpu)));
        }
        // The merge yields starts in order: the previous run on the
        // processor started at or before this one.
        let previous_end = last[usize::from(e.processor_id)]
            .replace((start, virtual_time))
            .and_then(|(prev_start, prev_virtual)| prev_start.checked_add(prev_virtual?));
        let (delay_before, overlap_before) = match previous_end {
            Some(end) if start < end => (None, Some(end - start)),
            Some(end) => (Some(start - end), None),
            None => (None, None),
        };
        visit(&PhysRecord {
            processor: e.processor_id,
            start,
            vcpu,
            virtual_time,
            delay_before,
            overlap_before,
        })?;
        done += 1;
        if done.is_multiple_of(1 << 16) {
            progress(done);
        }
    }
    progress(done);
    Ok(())
}

/// One vCPU's use of one physical processor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Share {
    /// Which vCPU.
    pub vcpu: VcpuKey,
    /// Its dispatches on the processor.
    pub dispatches: u64,
    /// Its known virtual processing time there (ticks).
    pub run_ticks: u64,
}

/// What one physical processor did over the recording.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessorSummary {
    /// The processor.
    pub processor: u16,
    /// Traced dispatches on it.
    pub dispatches: u64,
    /// From its first traced start to the end of its last known run (ticks).
    pub window_ticks: u64,
    /// Known virtual processing time on it, all vCPUs (ticks).
    pub run_ticks: u64,
    /// Distribution of the delays (ticks), negative ones left out.
    pub delay: Option<Distribution>,
    /// Dispatches that started before the previous run on the processor
    /// ended (negative delays, [`PhysRecord::overlap_before`]).
    pub overlaps: u64,
    /// Per vCPU, by key.
    pub shares: Vec<Share>,
}

/// A processor's figures while the merge runs.
#[derive(Default)]
struct ProcessorAcc {
    dispatches: u64,
    first: u64,
    end: u64,
    run_ticks: u64,
    delays: Vec<u64>,
    overlaps: u64,
}

/// A hasher for the (processor, vCPU) keys of the shares, looked up once
/// per record: one multiplication instead of SipHash (the keys are not
/// chosen by an attacker who could force collisions: at worst a slower
/// report).
#[derive(Default)]
struct PairHasher(u64);

impl Hasher for PairHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0 ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 29)
    }
}

/// Summarises the merged physical records per processor. Memory: the
/// delays (8 bytes a record, for exact percentiles) and one share per
/// (processor, vCPU) pair that occurs.
pub fn processor_summaries(
    machine: &Machine,
    progress: &mut dyn FnMut(u64),
) -> Result<Vec<ProcessorSummary>, String> {
    // Processor number -> index in `accs`.
    let mut slot = vec![u32::MAX; 1 << 16];
    let mut accs: Vec<(u16, ProcessorAcc)> = Vec::new();
    let mut shares: HashMap<u64, (u64, u64), BuildHasherDefault<PairHasher>> = HashMap::default();
    physical(
        machine,
        &mut |r| {
            let vt = r.virtual_time.unwrap_or(0);
            let i = &mut slot[usize::from(r.processor)];
            if *i == u32::MAX {
                *i = accs.len() as u32;
                accs.push((
                    r.processor,
                    ProcessorAcc {
                        first: r.start,
                        end: r.start,
                        ..ProcessorAcc::default()
                    },
                ));
            }
            let p = &mut accs[*i as usize].1;
            p.dispatches += 1;
            p.end = p.end.max(r.start.saturating_add(vt));
            p.run_ticks = p.run_ticks.saturating_add(vt);
            p.delays.extend(r.delay_before);
            p.overlaps += u64::from(r.overlap_before.is_some());
            let s = shares
                .entry(u64::from(r.vcpu) << 16 | u64::from(r.processor))
                .or_default();
            s.0 += 1;
            s.1 = s.1.saturating_add(vt);
            Ok(())
        },
        progress,
    )?;
    let mut by_processor: BTreeMap<u16, Vec<Share>> = BTreeMap::new();
    for (pair, (dispatches, run_ticks)) in shares {
        let processor = pair as u16;
        by_processor.entry(processor).or_default().push(Share {
            vcpu: machine.vcpus[(pair >> 16) as usize].key,
            dispatches,
            run_ticks,
        });
    }
    let mut out: Vec<ProcessorSummary> = accs
        .into_iter()
        .map(|(processor, mut p)| {
            let mut shares = by_processor.remove(&processor).unwrap_or_default();
            shares.sort_by_key(|s| s.vcpu);
            ProcessorSummary {
                processor,
                dispatches: p.dispatches,
                window_ticks: p.end - p.first,
                run_ticks: p.run_ticks,
                delay: summarize(&mut p.delays),
                overlaps: p.overlaps,
                shares,
            }
        })
        .collect();
    out.sort_by_key(|s| s.processor);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::source::Uname;
    use crate::vcpustat::trace::recording::{CpuIndex, FORMAT_NAME, FORMAT_VERSION_1, Header};

    fn raw(processor: u16, waits: [u32; 3], timebase: u64) -> [u8; ENTRY_BYTES] {
        let mut r = [0u8; ENTRY_BYTES];
        r[0] = 7;
        r[1] = 200;
        r[2..4].copy_from_slice(&processor.to_be_bytes());
        r[4..8].copy_from_slice(&waits[0].to_be_bytes());
        r[8..12].copy_from_slice(&waits[1].to_be_bytes());
        r[12..16].copy_from_slice(&waits[2].to_be_bytes());
        r[16..24].copy_from_slice(&timebase.to_be_bytes());
        r
    }

    /// A version-1 recording (one block per vCPU) in memory.
    fn recording(partition: u32, cpus: &[&[[u8; ENTRY_BYTES]]]) -> Recording {
        let mut data: Vec<u8> = Vec::new();
        let mut index = Vec::new();
        for (cpu, records) in cpus.iter().enumerate() {
            index.push(CpuIndex {
                cpu: cpu as u32,
                offset: data.len() as u64,
                entries: records.len() as u64,
                reads: 1,
                possibly_lost_reads: 0,
            });
            data.extend(records.iter().flatten());
        }
        let header = Header {
            format: FORMAT_NAME.into(),
            version: FORMAT_VERSION_1,
            host: Uname {
                sysname: "Linux".into(),
                nodename: "n".into(),
                release: "6.12".into(),
                version: String::new(),
                machine: "ppc64le".into(),
            },
            partition_id: partition,
            partition_name: None,
            system_serial: None,
            timebase_hz: 1_000_000,
            start_unix_ns: 0,
            duration_ns: 0,
            event_mask: None,
            ring_entries: 85,
            cpus: index,
        };
        let mut bytes = serde_json::to_vec(&header).unwrap();
        bytes.push(b'\n');
        bytes.extend(data);
        Recording::from_bytes("t", bytes).unwrap()
    }

    fn merged(machine: &Machine) -> Vec<PhysRecord> {
        let mut out = Vec::new();
        physical(
            machine,
            &mut |r| {
                out.push(*r);
                Ok(())
            },
            &mut |_| {},
        )
        .unwrap();
        out
    }

    #[test]
    fn processors_a_topology_does_not_place_are_named() {
        // cpu 0 moves 3 -> 5 -> 70 -> 3; the topology places 0-7 only.
        let steps = [raw(3, [1, 0, 0], 100), raw(5, [1, 0, 0], 200)];
        let more = [raw(70, [1, 0, 0], 300), raw(3, [1, 0, 0], 400)];
        let p1 = recording(1, &[&[steps[0], steps[1], more[0], more[1]]]);
        let recs = [("a".to_string(), p1)];
        let machine = load(&recs).unwrap();
        let topology = Topology::parse("t", "0-7 chip=0 node=0\n").unwrap();
        let reports = vcpu_reports(&machine, &topology, &mut |_| {}).unwrap();
        assert_eq!(reports[0].processor_changes, 3);
        assert_eq!(reports[0].chip_changes, None);
        assert_eq!(reports[0].unplaced, [70]);
        // Placed whole: counted, none unplaced; without a topology, none
        // is said to be missing.
        let topology = Topology::parse("t", "0-7 chip=0 node=0\n64-71 chip=1 node=1\n").unwrap();
        let reports = vcpu_reports(&machine, &topology, &mut |_| {}).unwrap();
        assert_eq!(
            (reports[0].chip_changes, reports[0].node_changes),
            (Some(2), Some(2))
        );
        assert!(reports[0].unplaced.is_empty());
        let reports = vcpu_reports(&machine, &Topology::default(), &mut |_| {}).unwrap();
        assert!(reports[0].unplaced.is_empty());
    }

    #[test]
    fn a_hand_computed_timeline_of_two_partitions() {
        // Partition 1 cpu 0: waits 10 (idle 5, latency 4 + 1), runs 100..150
        // on processor 3, waits 20 (150..170, all latency), runs 170.. on
        // processor 3 again. Partition 2 cpu 0: runs 155..165 on processor
        // 3 (waited 5).
        let p1 = recording(1, &[&[raw(3, [4, 1, 5], 100), raw(3, [20, 0, 0], 170)]]);
        let p2 = recording(2, &[&[raw(3, [5, 0, 0], 155)]]);
        let recs = [("a".to_string(), p1), ("b".to_string(), p2)];
        let machine = load(&recs).unwrap();
        let t = merged(&machine);
        let starts: Vec<(u64, u32)> = t.iter().map(|r| (r.start, r.vcpu)).collect();
        assert_eq!(starts, vec![(100, 0), (155, 1), (170, 0)]);
        assert_eq!(t[0].virtual_time, Some(50));
        assert_eq!(t[0].delay_before, None); // the processor's first record
        assert_eq!(t[1].delay_before, Some(5)); // 155 - 100 - 50
        assert_eq!(t[1].virtual_time, None); // partition 2's last record
        assert_eq!(t[2].delay_before, None); // after a record of unknown length
        let reports = vcpu_reports(&machine, &Topology::default(), &mut |_| {}).unwrap();
        let lat = reports[0].latency.unwrap();
        assert_eq!((lat.count, lat.p50, lat.max), (2, 5, 20));
        let idle = reports[0].idle_wait.unwrap();
        assert_eq!((idle.count, idle.p50, idle.max), (2, 0, 5));
        assert_eq!(reports[0].preempt_reasons, vec![(200, 2)]);
        assert_eq!(reports[0].chip_changes, None);
        let s = processor_summaries(&machine, &mut |_| {}).unwrap();
        assert_eq!(
            (s[0].dispatches, s[0].window_ticks, s[0].run_ticks),
            (3, 70, 50)
        );
        assert_eq!(s[0].delay.unwrap().max, 5);
        // The same pass shows each record with its vCPU's next one.
        let mut seen = Vec::new();
        let again = vcpu_reports_visiting(
            &machine,
            &Topology::default(),
            &mut |_| {},
            &mut |v, e, n| {
                seen.push((v, e.dispatched_at(), n.map(|n| n.wait_started_at())));
            },
        )
        .unwrap();
        assert_eq!(again, reports);
        assert_eq!(
            seen,
            vec![(0, 100, Some(150)), (0, 170, None), (1, 155, None)]
        );
    }

    #[test]
    fn runs_that_overlap_on_a_processor_are_counted_not_hidden() {
        // Partition 1 cpu 0 runs 100..150 on processor 3 (its next record
        // waited 1 from 150); partition 2 cpu 0 runs 110..149 there: 40
        // ticks before partition 1's run ended, as an offset time base
        // would show it.
        let p1 = recording(1, &[&[raw(3, [0; 3], 100), raw(3, [1, 0, 0], 151)]]);
        let p2 = recording(2, &[&[raw(3, [0; 3], 110), raw(3, [1, 0, 0], 150)]]);
        let recs = [("a".to_string(), p1), ("b".to_string(), p2)];
        let machine = load(&recs).unwrap();
        let t = merged(&machine);
        let overlaps: Vec<(u64, Option<u64>, Option<u64>)> = t
            .iter()
            .map(|r| (r.start, r.delay_before, r.overlap_before))
            .collect();
        assert_eq!(
            overlaps,
            vec![
                (100, None, None),
                (110, None, Some(40)),
                (150, Some(1), None), // 150 - 110 - 39
                (151, None, None),    // after a record of unknown length
            ]
        );
        let s = processor_summaries(&machine, &mut |_| {}).unwrap();
        assert_eq!(s[0].overlaps, 1);
        // 50 + 39 ticks of runs in a window of 51: more than the processor had.
        assert_eq!((s[0].run_ticks, s[0].window_ticks), (89, 51));
        let delay = s[0].delay.unwrap();
        assert_eq!((delay.count, delay.max), (1, 1));
    }

    #[test]
    fn recordings_of_different_machines_or_clocks_are_refused() {
        let mut a = recording(1, &[&[raw(0, [0; 3], 10)]]);
        let mut b = recording(2, &[&[raw(0, [0; 3], 20)]]);
        a.header.system_serial = Some("IBM,02AAAAA".into());
        b.header.system_serial = Some("IBM,02BBBBB".into());
        let mut recs = vec![("a".to_string(), a), ("b".to_string(), b)];
        let err = load(&recs).unwrap_err();
        assert!(
            err.starts_with("b: machine serial number IBM,02BBBBB differs"),
            "{err}"
        );
        recs[1].1.header.system_serial = recs[0].1.header.system_serial.clone();
        recs[1].1.header.timebase_hz = 2;
        assert!(load(&recs).unwrap_err().contains("time base 2 Hz differs"));
        recs[1].1.header.timebase_hz = recs[0].1.header.timebase_hz;
        assert_eq!(load(&recs).unwrap().vcpus.len(), 2);
    }

    #[test]
    fn many_vcpus_on_few_processors_cost_entries_not_their_product() {
        // 65,536 vCPUs with one record each: the merge reads them through
        // buffers of 2 records and the summary has one share per vCPU.
        let records: Vec<[u8; ENTRY_BYTES]> = (0..65_536u64)
            .map(|i| raw((i % 4) as u16, [1, 1, 1], 1000 + i))
            .collect();
        let cpus: Vec<&[[u8; ENTRY_BYTES]]> = records.chunks(1).collect();
        let recs = [("w".to_string(), recording(1, &cpus))];
        let machine = load(&recs).unwrap();
        assert_eq!(merge_buffer_records(machine.vcpus.len()), 5);
        let s = processor_summaries(&machine, &mut |_| {}).unwrap();
        assert_eq!(s.len(), 4);
        assert_eq!(s.iter().map(|p| p.shares.len()).sum::<usize>(), 65_536);
        assert!(s.iter().all(|p| p.dispatches == 16_384));
    }

    #[test]
    fn garbage_records_never_panic() {
        let mut seed = 5u64;
        let mut records = Vec::new();
        for _ in 0..500 {
            let mut r = [0u8; ENTRY_BYTES];
            for b in r.iter_mut() {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                *b = (seed >> 56) as u8;
            }
            records.push(r);
        }
        records.push(raw(1, [u32::MAX; 3], u64::MAX));
        records.push(raw(1, [u32::MAX; 3], 0));
        let rec = recording(9, &[&records, &records[..10]]);
        let recs = [("g".to_string(), rec)];
        let machine = load(&recs).unwrap();
        assert_eq!(merged(&machine).len(), 512);
        let topo = Topology::parse("t", "0-65535 chip=0 node=0").unwrap();
        let reports = vcpu_reports(&machine, &topo, &mut |_| {}).unwrap();
        assert!(reports[0].out_of_order > 0);
        let summaries = processor_summaries(&machine, &mut |_| {}).unwrap();
        assert_eq!(reports.len(), 2);
        assert_eq!(summaries.iter().map(|s| s.dispatches).sum::<u64>(), 512);
    }
}
