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

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::entry::{DtlEntry, ENTRY_BYTES};
use super::recording::Recording;
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

/// One vCPU's records, in dispatch order, as raw 48-byte records (borrowed
/// from the recording when it is already in order, which is the rule).
#[derive(Debug, Clone)]
pub struct VcpuTrace<'a> {
    /// Which vCPU.
    pub key: VcpuKey,
    records: Cow<'a, [u8]>,
    /// Reads that returned a full ring (records may be missing).
    pub possibly_lost_reads: u64,
}

impl VcpuTrace<'_> {
    /// The decoded records, in dispatch order.
    pub fn entries(&self) -> impl Iterator<Item = DtlEntry> + '_ {
        DtlEntry::decode_all(&self.records)
    }

    /// The number of records.
    pub fn len(&self) -> usize {
        self.records.len() / ENTRY_BYTES
    }

    /// Whether there is no record.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
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

fn dispatch_time(raw: &[u8]) -> u64 {
    let mut tb = [0u8; 8];
    tb.copy_from_slice(&raw[16..24]);
    u64::from_be_bytes(tb)
}

/// The records in dispatch order: borrowed as they are when already sorted.
fn in_dispatch_order(raw: &[u8]) -> Cow<'_, [u8]> {
    let sorted = raw
        .chunks_exact(ENTRY_BYTES)
        .zip(raw.chunks_exact(ENTRY_BYTES).skip(1))
        .all(|(a, b)| dispatch_time(a) <= dispatch_time(b));
    if sorted {
        return Cow::Borrowed(raw);
    }
    let mut chunks: Vec<&[u8]> = raw.chunks_exact(ENTRY_BYTES).collect();
    chunks.sort_by_key(|c| dispatch_time(c));
    Cow::Owned(chunks.concat())
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
    let mut seen: BTreeMap<VcpuKey, &str> = BTreeMap::new();
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
                records: in_dispatch_order(rec.records(index)),
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
            let mut dispatch = [0u64; 256];
            let mut preempt = [0u64; 256];
            let (mut processor_changes, mut chip_changes, mut node_changes) = (0, 0, 0);
            let mut placed = !topology.is_empty();
            let mut previous: Option<u16> = None;
            for e in v.entries() {
                waits.push(e.wait_ticks());
                dispatch[usize::from(e.dispatch_reason)] += 1;
                preempt[usize::from(e.preempt_reason)] += 1;
                let Some(prev) = previous.replace(e.processor_id) else {
                    continue;
                };
                if prev == e.processor_id {
                    continue;
                }
                processor_changes += 1;
                match (topology.place(prev), topology.place(e.processor_id)) {
                    (Some(a), Some(b)) => {
                        chip_changes += u64::from(a.chip != b.chip);
                        node_changes += u64::from(a.node != b.node);
                    }
                    _ => placed = false,
                }
            }
            VcpuReport {
                key: v.key,
                dispatches: v.len() as u64,
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
    /// When the vCPU started running (ticks).
    pub start: u64,
    virtual_time: u64,
    /// The vCPU that ran: its index in [`Machine::vcpus`].
    pub vcpu: u32,
}

/// Marks an unknown time in [`PhysRecord`] (kept compact: the timeline of
/// millions of records is sorted in memory).
const UNKNOWN: u64 = u64::MAX;

impl PhysRecord {
    /// How long it ran before it next waited (ticks); unknown for a vCPU's last record.
    pub fn virtual_time(&self) -> Option<u64> {
        (self.virtual_time != UNKNOWN).then_some(self.virtual_time)
    }

    /// The delay before `next`, the following record on the same processor:
    /// its start minus this start minus this virtual processing time.
    fn delay_before(&self, next: &PhysRecord) -> Option<u64> {
        next.start
            .checked_sub(self.start)?
            .checked_sub(self.virtual_time()?)
    }
}

/// One physical processor's records, in time order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessorTimeline {
    /// The processor.
    pub processor: u16,
    /// Its records.
    pub records: Vec<PhysRecord>,
}

impl ProcessorTimeline {
    /// The delay time of record `index`: untraced time on the processor
    /// after it (ticks); unknown for the last record and when its virtual
    /// processing time is unknown.
    pub fn delay(&self, index: usize) -> Option<u64> {
        let next = self.records.get(index + 1)?;
        self.records[index].delay_before(next)
    }
}

/// The physical records per processor (ascending), each in time order.
pub fn timeline(machine: &Machine) -> Vec<ProcessorTimeline> {
    // Count per processor first, so every processor's records go into one
    // allocation of the right size.
    let mut count = vec![0usize; 1 << 16];
    for v in &machine.vcpus {
        for raw in v.records.chunks_exact(ENTRY_BYTES) {
            count[usize::from(u16::from_be_bytes([raw[2], raw[3]]))] += 1;
        }
    }
    let mut slot = vec![u32::MAX; 1 << 16];
    let mut out = Vec::new();
    for (processor, &n) in count.iter().enumerate() {
        if n > 0 {
            slot[processor] = out.len() as u32;
            out.push(ProcessorTimeline {
                processor: processor as u16,
                records: Vec::with_capacity(n),
            });
        }
    }
    for (index, v) in machine.vcpus.iter().enumerate() {
        let mut entries = v.entries().peekable();
        while let Some(e) = entries.next() {
            let start = e.dispatched_at();
            let virtual_time = entries
                .peek()
                .and_then(|next| next.wait_started_at().checked_sub(start))
                .unwrap_or(UNKNOWN);
            out[slot[usize::from(e.processor_id)] as usize]
                .records
                .push(PhysRecord {
                    start,
                    virtual_time,
                    vcpu: index as u32,
                });
        }
    }
    for p in &mut out {
        // The records are a concatenation of per-vCPU runs already in time
        // order; the stable sort merges such runs cheaply.
        p.records.sort_by_key(|r| r.start);
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

/// Summarises the timeline of `machine` (as [`timeline`] returns it) per processor.
pub fn processor_summaries(
    machine: &Machine,
    timeline: &[ProcessorTimeline],
) -> Vec<ProcessorSummary> {
    let mut out = Vec::new();
    let mut delays = Vec::new();
    let mut per_vcpu = vec![(0u64, 0u64); machine.vcpus.len()];
    for p in timeline.iter().filter(|p| !p.records.is_empty()) {
        let group = &p.records;
        per_vcpu.iter_mut().for_each(|s| *s = (0, 0));
        delays.clear();
        let first = group[0].start;
        let mut end = first;
        let mut run_ticks = 0;
        for r in group {
            let vt = r.virtual_time().unwrap_or(0);
            end = end.max(r.start.saturating_add(vt));
            run_ticks = vt.saturating_add(run_ticks);
            let s = &mut per_vcpu[r.vcpu as usize];
            s.0 += 1;
            s.1 = s.1.saturating_add(vt);
        }
        delays.extend(group.windows(2).filter_map(|w| w[0].delay_before(&w[1])));
        let shares = per_vcpu
            .iter()
            .enumerate()
            .filter(|(_, s)| s.0 > 0)
            .map(|(i, s)| Share {
                vcpu: machine.vcpus[i].key,
                dispatches: s.0,
                run_ticks: s.1,
            })
            .collect();
        out.push(ProcessorSummary {
            processor: p.processor,
            dispatches: group.len() as u64,
            window_ticks: end - first,
            run_ticks,
            delay: summarize(&mut delays),
            shares,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::source::Uname;
    use crate::vcpustat::trace::recording::{CpuIndex, FORMAT_NAME, FORMAT_VERSION, Header};

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
            version: FORMAT_VERSION,
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

    #[test]
    fn a_hand_computed_timeline_of_two_partitions() {
        // Partition 1 cpu 0: waits 10, runs 100..150 on processor 3, waits
        // 20 (150..170), runs 170.. on processor 3 again.
        // Partition 2 cpu 0: runs 155..165 on processor 3 (waited 5).
        let p1 = recording(1, &[&[raw(3, [4, 1, 5], 100), raw(3, [20, 0, 0], 170)]]);
        let p2 = recording(2, &[&[raw(3, [5, 0, 0], 155)]]);
        let recs = [("a".to_string(), p1), ("b".to_string(), p2)];
        let machine = load(&recs).unwrap();
        let t = timeline(&machine);
        assert_eq!(t.len(), 1);
        let p = &t[0];
        let starts: Vec<u64> = p.records.iter().map(|r| r.start).collect();
        assert_eq!(starts, vec![100, 155, 170]);
        assert_eq!(p.records[0].virtual_time(), Some(50));
        assert_eq!(p.delay(0), Some(5)); // 155 - 100 - 50
        assert_eq!(p.records[1].virtual_time(), None); // partition 2's last record
        assert_eq!(p.delay(1), None);
        assert_eq!(p.delay(2), None);
        let reports = vcpu_reports(&machine, &Topology::default());
        let lat = reports[0].latency.unwrap();
        assert_eq!((lat.count, lat.p50, lat.max), (2, 10, 20));
        assert_eq!(reports[0].preempt_reasons, vec![(200, 2)]);
        assert_eq!(reports[0].chip_changes, None);
        let s = processor_summaries(&machine, &t);
        assert_eq!(
            (s[0].dispatches, s[0].window_ticks, s[0].run_ticks),
            (3, 70, 50)
        );
    }

    #[test]
    fn recordings_of_different_machines_or_clocks_are_refused() {
        let mut a = recording(1, &[&[raw(0, [0; 3], 10)]]);
        let mut b = recording(2, &[&[raw(0, [0; 3], 20)]]);
        a.header.system_serial = Some("IBM,02AAAAA".into());
        b.header.system_serial = Some("IBM,02BBBBB".into());
        let recs = [("a".to_string(), a.clone()), ("b".to_string(), b.clone())];
        let err = load(&recs).unwrap_err();
        assert!(
            err.starts_with("b: machine serial number IBM,02BBBBB differs"),
            "{err}"
        );
        b.header.system_serial = a.header.system_serial.clone();
        b.header.timebase_hz = 2;
        let recs = [("a".to_string(), a.clone()), ("b".to_string(), b.clone())];
        assert!(load(&recs).unwrap_err().contains("time base 2 Hz differs"));
        b.header.timebase_hz = a.header.timebase_hz;
        let recs = [("a".to_string(), a), ("b".to_string(), b)];
        assert_eq!(load(&recs).unwrap().vcpus.len(), 2);
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
        let t = timeline(&machine);
        let topo = Topology::parse("t", "0-65535 chip=0 node=0").unwrap();
        let reports = vcpu_reports(&machine, &topo);
        let summaries = processor_summaries(&machine, &t);
        assert_eq!(reports.len(), 2);
        assert_eq!(summaries.iter().map(|s| s.dispatches).sum::<u64>(), 512);
        let mut out = Vec::new();
        let tables = crate::vcpustat::trace::report::sections(&machine, &topo, true);
        crate::vcpustat::trace::report::write_sections(
            &mut out,
            &tables,
            crate::vcpustat::trace::report::ReportFormat::Json,
            0,
        )
        .unwrap();
        assert!(serde_json::from_slice::<serde_json::Value>(&out).is_ok());
    }
}
