//! From virtual records to per-vCPU latency and the physical timeline.
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

use std::collections::BTreeMap;

use super::entry::DtlEntry;
use super::recording::Recording;
use super::stats::{Distribution, summarize};
use super::topology::Topology;

/// A vCPU of the machine: its partition and its number there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VcpuKey {
    /// `partition_id` of the recording.
    pub partition: u32,
    /// vCPU number in the partition.
    pub cpu: u32,
}

/// One vCPU's records, in dispatch order.
#[derive(Debug, Clone)]
pub struct VcpuTrace {
    /// Which vCPU.
    pub key: VcpuKey,
    /// The decoded records, sorted by dispatch time.
    pub entries: Vec<DtlEntry>,
    /// Reads that returned a full ring (records may be missing).
    pub possibly_lost_reads: u64,
}

/// Every recorded vCPU of one machine.
#[derive(Debug, Clone)]
pub struct Machine {
    /// Time-base ticks per second, common to all recordings.
    pub timebase_hz: u64,
    /// The vCPUs, sorted by key.
    pub vcpus: Vec<VcpuTrace>,
}

/// Merges recordings (named for errors) into one machine view.
pub fn load(recordings: &[(String, Recording)]) -> Result<Machine, String> {
    let Some((_, first)) = recordings.first() else {
        return Err("no recording given".into());
    };
    let timebase_hz = first.header.timebase_hz;
    let mut seen: BTreeMap<VcpuKey, &str> = BTreeMap::new();
    let mut vcpus = Vec::new();
    for (name, rec) in recordings {
        if rec.header.timebase_hz != timebase_hz {
            return Err(format!(
                "{name}: time base {} Hz differs from {} Hz of {}: recordings must come from one machine",
                rec.header.timebase_hz, timebase_hz, recordings[0].0
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
            let mut entries: Vec<DtlEntry> = DtlEntry::decode_all(rec.records(index)).collect();
            if !entries.is_sorted_by_key(DtlEntry::dispatched_at) {
                entries.sort_by_key(DtlEntry::dispatched_at);
            }
            vcpus.push(VcpuTrace {
                key,
                entries,
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
    /// Dispatch latency (the three wait phases summed), in ticks.
    pub latency: Option<Distribution>,
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
    /// Reads that may have lost records.
    pub possibly_lost_reads: u64,
}

fn counted(counts: &[u64; 256]) -> Vec<(u8, u64)> {
    (0..=255u8)
        .filter(|&c| counts[usize::from(c)] > 0)
        .map(|c| (c, counts[usize::from(c)]))
        .collect()
}

/// Per-vCPU latency, reasons and migrations.
pub fn vcpu_reports(machine: &Machine, topology: &Topology) -> Vec<VcpuReport> {
    let mut waits = Vec::new();
    machine
        .vcpus
        .iter()
        .map(|v| {
            waits.clear();
            waits.extend(v.entries.iter().map(DtlEntry::wait_ticks));
            let mut dispatch = [0u64; 256];
            let mut preempt = [0u64; 256];
            let (mut processor_changes, mut chip_changes, mut node_changes) = (0, 0, 0);
            let mut placed = !topology.is_empty();
            for (i, e) in v.entries.iter().enumerate() {
                dispatch[usize::from(e.dispatch_reason)] += 1;
                preempt[usize::from(e.preempt_reason)] += 1;
                let Some(prev) = i.checked_sub(1).map(|p| &v.entries[p]) else {
                    continue;
                };
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
                    _ => placed = false,
                }
            }
            VcpuReport {
                key: v.key,
                dispatches: v.entries.len() as u64,
                latency: summarize(&mut waits),
                dispatch_reasons: counted(&dispatch),
                preempt_reasons: counted(&preempt),
                processor_changes,
                chip_changes: placed.then_some(chip_changes),
                node_changes: placed.then_some(node_changes),
                possibly_lost_reads: v.possibly_lost_reads,
            }
        })
        .collect()
}

/// One dispatch on a physical processor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhysRecord {
    /// The physical processor.
    pub processor: u16,
    /// When the vCPU started running (ticks).
    pub start: u64,
    /// The vCPU that ran.
    pub vcpu: VcpuKey,
    /// How long it ran before it next waited (ticks); unknown for a vCPU's last record.
    pub virtual_time: Option<u64>,
    /// Untraced time on the processor after it (ticks); unknown for a processor's last record.
    pub delay: Option<u64>,
}

/// The physical records, per processor in time order (processors ascending).
pub fn timeline(machine: &Machine) -> Vec<PhysRecord> {
    let mut slot = vec![u32::MAX; 1 << 16];
    let mut buckets: Vec<(u16, Vec<PhysRecord>)> = Vec::new();
    for v in &machine.vcpus {
        for (i, e) in v.entries.iter().enumerate() {
            let start = e.dispatched_at();
            let virtual_time = v
                .entries
                .get(i + 1)
                .and_then(|next| next.wait_started_at().checked_sub(start));
            let s = &mut slot[usize::from(e.processor_id)];
            if *s == u32::MAX {
                *s = buckets.len() as u32;
                buckets.push((e.processor_id, Vec::new()));
            }
            buckets[*s as usize].1.push(PhysRecord {
                processor: e.processor_id,
                start,
                vcpu: v.key,
                virtual_time,
                delay: None,
            });
        }
    }
    buckets.sort_unstable_by_key(|(p, _)| *p);
    let total = buckets.iter().map(|(_, b)| b.len()).sum();
    let mut out = Vec::with_capacity(total);
    for (_, mut bucket) in buckets {
        // Each bucket is a concatenation of per-vCPU runs already in time
        // order; the stable sort merges such runs cheaply.
        bucket.sort_by_key(|r| r.start);
        for j in 0..bucket.len() {
            let next = bucket.get(j + 1).map(|r| r.start);
            let r = &mut bucket[j];
            r.delay = match (next, r.virtual_time) {
                (Some(next), Some(vt)) => next.checked_sub(r.start).and_then(|d| d.checked_sub(vt)),
                _ => None,
            };
        }
        out.append(&mut bucket);
    }
    out
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
    /// Distribution of the delays (ticks).
    pub delay: Option<Distribution>,
    /// Per vCPU, by key.
    pub shares: Vec<Share>,
}

/// Summarises a timeline (as [`timeline`] returns it) per processor.
pub fn processor_summaries(records: &[PhysRecord]) -> Vec<ProcessorSummary> {
    let mut out = Vec::new();
    let mut delays = Vec::new();
    for group in records.chunk_by(|a, b| a.processor == b.processor) {
        let mut shares: BTreeMap<VcpuKey, Share> = BTreeMap::new();
        delays.clear();
        let first = group[0].start;
        let mut end = first;
        let mut run_ticks = 0;
        for r in group {
            let vt = r.virtual_time.unwrap_or(0);
            end = end.max(r.start + vt);
            run_ticks += vt;
            let share = shares.entry(r.vcpu).or_insert(Share {
                vcpu: r.vcpu,
                dispatches: 0,
                run_ticks: 0,
            });
            share.dispatches += 1;
            share.run_ticks += vt;
            delays.extend(r.delay);
        }
        out.push(ProcessorSummary {
            processor: group[0].processor,
            dispatches: group.len() as u64,
            window_ticks: end - first,
            run_ticks,
            delay: summarize(&mut delays),
            shares: shares.into_values().collect(),
        });
    }
    out
}
