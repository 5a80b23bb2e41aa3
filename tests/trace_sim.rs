//! vcpustat trace against a simulated hypervisor.
//!
//! A deterministic model time-slices the vCPUs of several partitions over a
//! few physical processors (cedes, sleeps, time-slice preemptions, a
//! dispatch overhead) and produces both the ground-truth schedule and the
//! DTL records the hypervisor writes for it. Simulated `cpu-N` rings with
//! the kernel's semantics (85 entries, reads of whole 48-byte records, 0
//! when nothing is new, EBUSY for a second opener, skipping to the newest
//! entries after an overflow) feed the same recorder the live path uses.
//! Every expected value below comes from the model.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

use hwstat::common::source::RootFs;
use hwstat::vcpustat::trace::analysis::{self, VcpuKey};
use hwstat::vcpustat::trace::record::{Event, RecordOptions, record_with};
use hwstat::vcpustat::trace::recording::Recording;
use hwstat::vcpustat::trace::report::{ReportFormat, sections, write_sections};
use hwstat::vcpustat::trace::ring::{DtlRing, DtlRings};
use hwstat::vcpustat::trace::topology::Topology;

const RING: u64 = 85;

/// A tiny deterministic generator (64-bit LCG, high bits).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % bound
    }
}

/// One run of a vCPU on a physical processor (ground truth).
#[derive(Debug, Clone, Copy)]
struct Run {
    processor: u16,
    start: u64,
    end: u64,
    vcpu: VcpuKey,
}

/// The hypervisor's record of one dispatch (before encoding).
#[derive(Debug, Clone, Copy)]
struct Dispatch {
    processor: u16,
    dispatch_reason: u8,
    preempt_reason: u8,
    waiting_to_ready: u32,
    ready_to_enqueue: u32,
    enqueue_to_dispatch: u32,
    at: u64,
    wait_start: u64,
}

impl Dispatch {
    /// The 48-byte big-endian record, laid out as struct dtl_entry.
    fn encode(&self) -> [u8; 48] {
        let mut raw = [0u8; 48];
        raw[0] = self.dispatch_reason;
        raw[1] = self.preempt_reason;
        raw[2..4].copy_from_slice(&self.processor.to_be_bytes());
        raw[4..8].copy_from_slice(&self.enqueue_to_dispatch.to_be_bytes());
        raw[8..12].copy_from_slice(&self.ready_to_enqueue.to_be_bytes());
        raw[12..16].copy_from_slice(&self.waiting_to_ready.to_be_bytes());
        raw[16..24].copy_from_slice(&self.at.to_be_bytes());
        raw[32..40].copy_from_slice(&0xc000_0000_0010_0000u64.to_be_bytes());
        raw
    }
}

struct VcpuState {
    key: VcpuKey,
    wait_start: u64,
    ready_at: u64,
    enqueue: u64,
    burst_left: u64,
    next_dispatch_reason: u8,
    next_preempt_reason: u8,
}

/// The model's output: the schedule and each vCPU's records.
struct Model {
    runs: Vec<Run>,
    records: BTreeMap<VcpuKey, Vec<Dispatch>>,
}

/// Time-slices `partitions` (id, vCPU count) over `processors`, until `horizon` ticks.
fn simulate(processors: &[u16], partitions: &[(u32, u32)], horizon: u64, seed: u64) -> Model {
    const SLICE: u64 = 5_000;
    const OVERHEAD: u64 = 40;
    const R2E: u64 = 7;
    let mut rng = Lcg(seed);
    let mut vcpus: Vec<VcpuState> = Vec::new();
    for &(partition, n) in partitions {
        for cpu in 0..n {
            let ready_at = rng.next(300);
            vcpus.push(VcpuState {
                key: VcpuKey { partition, cpu },
                wait_start: 0,
                ready_at,
                enqueue: ready_at + R2E,
                burst_left: 1 + rng.next(12_000),
                next_dispatch_reason: 0,
                next_preempt_reason: 0,
            });
        }
    }
    let mut free_at: Vec<u64> = vec![0; processors.len()];
    let mut runs = Vec::new();
    let mut records: BTreeMap<VcpuKey, Vec<Dispatch>> = BTreeMap::new();
    loop {
        let p = (0..processors.len())
            .min_by_key(|&i| (free_at[i], i))
            .unwrap();
        let t = free_at[p];
        if t > horizon {
            break;
        }
        // The earliest enqueued vCPU (ties by key).
        let v = (0..vcpus.len())
            .min_by_key(|&i| (vcpus[i].enqueue, vcpus[i].key))
            .unwrap();
        let at = t.max(vcpus[v].enqueue) + OVERHEAD;
        let s = &mut vcpus[v];
        let waiting_to_ready = s.ready_at - s.wait_start;
        let ready_to_enqueue = s.enqueue - s.ready_at;
        let enqueue_to_dispatch = at - s.enqueue;
        records.entry(s.key).or_default().push(Dispatch {
            processor: processors[p],
            dispatch_reason: s.next_dispatch_reason,
            preempt_reason: s.next_preempt_reason,
            waiting_to_ready: waiting_to_ready as u32,
            ready_to_enqueue: ready_to_enqueue as u32,
            enqueue_to_dispatch: enqueue_to_dispatch as u32,
            at,
            wait_start: s.wait_start,
        });
        let run = SLICE.min(s.burst_left);
        let end = at + run;
        runs.push(Run {
            processor: processors[p],
            start: at,
            end,
            vcpu: s.key,
        });
        s.wait_start = end;
        if run == s.burst_left {
            // Ceded: sleeps, then an interrupt or a prod makes it ready.
            let sleep = 100 + rng.next(20_000);
            s.ready_at = end + sleep;
            s.enqueue = s.ready_at + R2E;
            s.burst_left = 1 + rng.next(12_000);
            s.next_preempt_reason = 2; // H_CEDE
            s.next_dispatch_reason = if rng.next(2) == 0 { 0 } else { 2 }; // external_interrupt / H_PROD
        } else {
            s.burst_left -= run;
            s.ready_at = end;
            s.enqueue = end;
            s.next_preempt_reason = 4; // time_slice
            s.next_dispatch_reason = 7; // time_slice
        }
        free_at[p] = end;
    }
    Model { runs, records }
}

/// What the report must reconstruct, from the schedule alone.
/// (processor, start, vCPU, virtual processing time, delay) per record.
type Expected = (u16, u64, VcpuKey, Option<u64>, Option<u64>);

fn expected_timeline(model: &Model) -> Vec<Expected> {
    let mut last_of_vcpu: BTreeMap<VcpuKey, u64> = BTreeMap::new();
    for r in &model.runs {
        let e = last_of_vcpu.entry(r.vcpu).or_insert(0);
        *e = (*e).max(r.start);
    }
    let mut by_proc: BTreeMap<u16, Vec<Run>> = BTreeMap::new();
    for r in &model.runs {
        by_proc.entry(r.processor).or_default().push(*r);
    }
    let mut out = Vec::new();
    for (_, mut runs) in by_proc {
        runs.sort_by_key(|r| r.start);
        for (i, r) in runs.iter().enumerate() {
            let virtual_time = (last_of_vcpu[&r.vcpu] != r.start).then_some(r.end - r.start);
            let delay = match (runs.get(i + 1), virtual_time) {
                (Some(next), Some(_)) => Some(next.start - r.end),
                _ => None,
            };
            out.push((r.processor, r.start, r.vcpu, virtual_time, delay));
        }
    }
    out
}

fn nearest_rank(mut v: Vec<u64>, q: u64) -> u64 {
    v.sort();
    let rank = (q * v.len() as u64).div_ceil(100);
    v[rank.max(1) as usize - 1]
}

/// The simulated hypervisor: what it has written so far, and who has a ring open.
struct Hypervisor {
    records: BTreeMap<VcpuKey, Vec<[u8; 48]>>,
    times: BTreeMap<VcpuKey, Vec<u64>>,
    now: u64,
    open: HashSet<VcpuKey>,
}

impl Hypervisor {
    fn new(model: &Model) -> Rc<RefCell<Hypervisor>> {
        Rc::new(RefCell::new(Hypervisor {
            records: model
                .records
                .iter()
                .map(|(k, v)| (*k, v.iter().map(Dispatch::encode).collect()))
                .collect(),
            times: model
                .records
                .iter()
                .map(|(k, v)| (*k, v.iter().map(|d| d.at).collect()))
                .collect(),
            now: 0,
            open: HashSet::new(),
        }))
    }

    /// The ring's write index: records dispatched up to now.
    fn written(&self, key: VcpuKey) -> u64 {
        self.times[&key].partition_point(|&t| t <= self.now) as u64
    }
}

struct SimRing {
    hv: Rc<RefCell<Hypervisor>>,
    key: VcpuKey,
    last_idx: u64,
}

impl DtlRing for SimRing {
    /// dtl_file_read(): whole records only, skip ahead after an overflow.
    fn read_records(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if !buf.len().is_multiple_of(48) {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let hv = self.hv.borrow();
        let cur = hv.written(self.key);
        let mut last = self.last_idx;
        if last + RING <= cur {
            last = cur - RING + 1;
        }
        let n = ((buf.len() / 48) as u64).min(cur - last);
        let recs = &hv.records[&self.key];
        for i in 0..n {
            let at = (i * 48) as usize;
            buf[at..at + 48].copy_from_slice(&recs[(last + i) as usize]);
        }
        self.last_idx = last + n;
        Ok((n * 48) as usize)
    }
}

impl Drop for SimRing {
    fn drop(&mut self) {
        self.hv.borrow_mut().open.remove(&self.key);
    }
}

struct SimRings {
    hv: Rc<RefCell<Hypervisor>>,
    partition: u32,
}

impl DtlRings for SimRings {
    fn open(&self, cpu: u32) -> io::Result<Box<dyn DtlRing>> {
        let key = VcpuKey {
            partition: self.partition,
            cpu,
        };
        if !self.hv.borrow().times.contains_key(&key) {
            return Err(io::Error::from_raw_os_error(libc::ENOENT));
        }
        if !self.hv.borrow_mut().open.insert(key) {
            return Err(io::Error::from_raw_os_error(libc::EBUSY));
        }
        Ok(Box::new(SimRing {
            hv: Rc::clone(&self.hv),
            key,
            last_idx: 0,
        }))
    }
}

/// A sysroot with the partition's lparcfg, cpuinfo and DTL control files.
fn sysroot(dir: &Path, partition: u32, cpus: u32) -> PathBuf {
    let root = dir.join(format!("root-{partition}"));
    let dtl = root.join("sys/kernel/debug/powerpc/dtl");
    std::fs::create_dir_all(&dtl).unwrap();
    std::fs::create_dir_all(root.join("proc/powerpc")).unwrap();
    std::fs::write(
        root.join("proc/powerpc/lparcfg"),
        format!("lparcfg 1.9\nserial_number=IBM,0212345\npartition_id={partition}\nshared_processor_mode=1\n"),
    )
    .unwrap();
    std::fs::write(
        root.join("proc/cpuinfo"),
        "processor\t: 0\n\ntimebase\t: 512000000\n",
    )
    .unwrap();
    std::fs::write(dtl.join("dtl_event_mask"), "0x07\n").unwrap();
    std::fs::write(dtl.join("dtl_buf_entries"), "85\n").unwrap();
    for cpu in 0..cpus {
        std::fs::write(dtl.join(format!("cpu-{cpu}")), "").unwrap();
    }
    root
}

fn tempdir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hwstat-trace-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn options(output: PathBuf, events: Option<Vec<Event>>) -> RecordOptions {
    RecordOptions {
        cpus: None,
        duration: None,
        poll: Duration::from_millis(1),
        events,
        output,
        force: false,
    }
}

/// Records one partition, advancing the hypervisor by `step` ticks a poll.
fn record_partition(
    hv: &Rc<RefCell<Hypervisor>>,
    root: &Path,
    partition: u32,
    step: u64,
    horizon: u64,
    output: PathBuf,
) -> Recording {
    hv.borrow_mut().now = 0;
    let source = RootFs::new(root);
    let rings = SimRings {
        hv: Rc::clone(hv),
        partition,
    };
    let mut pace = || {
        let mut h = hv.borrow_mut();
        h.now += step;
        h.now <= horizon + step
    };
    record_with(&options(output.clone(), None), &source, &rings, &mut pace).unwrap();
    Recording::open(&output).unwrap()
}

const PROCESSORS: [u16; 4] = [16, 17, 40, 41];
const PARTITIONS: [(u32, u32); 3] = [(1, 3), (2, 2), (7, 3)];
const HORIZON: u64 = 3_000_000;

#[test]
fn the_merged_report_reconstructs_the_model_timeline_and_latency_exactly() {
    let model = simulate(&PROCESSORS, &PARTITIONS, HORIZON, 42);
    assert!(
        model.runs.len() > 1000,
        "the model should schedule plenty of dispatches"
    );
    let hv = Hypervisor::new(&model);
    let dir = tempdir("merge");
    let mut recordings = Vec::new();
    for &(partition, cpus) in &PARTITIONS {
        let root = sysroot(&dir, partition, cpus);
        let out = dir.join(format!("p{partition}.dtl"));
        // A fast reader: one poll every 2,000 ticks sees at most a few records.
        let rec = record_partition(&hv, &root, partition, 2_000, HORIZON, out.clone());
        assert_eq!(rec.header.partition_id, partition);
        assert_eq!(rec.header.timebase_hz, 512_000_000);
        assert_eq!(rec.header.system_serial.as_deref(), Some("IBM,0212345"));
        assert!(rec.header.cpus.iter().all(|c| c.possibly_lost_reads == 0));
        recordings.push((out.display().to_string(), rec));
    }
    let machine = analysis::load(&recordings).unwrap();
    let total: usize = machine.vcpus.iter().map(|v| v.len()).sum();
    assert_eq!(
        total,
        model.runs.len(),
        "every dispatch of the model was recorded"
    );

    // The physical timeline, record for record.
    let got: Vec<Expected> = analysis::timeline(&machine)
        .iter()
        .flat_map(|p| {
            p.records.iter().enumerate().map(|(i, r)| {
                let key = machine.vcpus[r.vcpu as usize].key;
                (p.processor, r.start, key, r.virtual_time(), p.delay(i))
            })
        })
        .collect();
    let want = expected_timeline(&model);
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g, w);
    }

    // Latency percentiles per vCPU, from the model's waits.
    let topology = Topology::parse("topo", "16-17 chip=0 node=0\n40-41 chip=1 node=1\n").unwrap();
    let reports = analysis::vcpu_reports(&machine, &topology);
    assert_eq!(reports.len(), 8);
    for r in &reports {
        let recs = &model.records[&r.key];
        let waits: Vec<u64> = recs.iter().map(|d| d.at - d.wait_start).collect();
        let lat = r.latency.unwrap();
        assert_eq!(lat.count, waits.len() as u64);
        assert_eq!(lat.p50, nearest_rank(waits.clone(), 50), "{:?}", r.key);
        assert_eq!(lat.p90, nearest_rank(waits.clone(), 90), "{:?}", r.key);
        assert_eq!(lat.p99, nearest_rank(waits.clone(), 99), "{:?}", r.key);
        assert_eq!(lat.max, *waits.iter().max().unwrap());
        let mean = waits.iter().sum::<u64>() as f64 / waits.len() as f64;
        assert!((lat.mean - mean).abs() < 1e-6);
        let moves = recs
            .windows(2)
            .filter(|w| w[0].processor != w[1].processor)
            .count() as u64;
        let chip = |p: u16| p >= 40;
        let chip_moves = recs
            .windows(2)
            .filter(|w| chip(w[0].processor) != chip(w[1].processor))
            .count() as u64;
        assert_eq!(r.processor_changes, moves);
        assert_eq!(r.chip_changes, Some(chip_moves));
        assert_eq!(r.node_changes, Some(chip_moves));
        let cedes = recs.iter().filter(|d| d.preempt_reason == 2).count() as u64;
        assert_eq!(
            r.preempt_reasons
                .iter()
                .find(|(c, _)| *c == 2)
                .map_or(0, |x| x.1),
            cedes
        );
    }

    // The JSON report carries the same numbers, in microseconds.
    let mut out = Vec::new();
    write_sections(
        &mut out,
        &sections(&machine, &topology, false),
        ReportFormat::Json,
        0,
    )
    .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let lat = &doc["sections"]["latency"]["samples"][0]["rows"][0];
    assert_eq!(lat["partition"], "1");
    let waits: Vec<u64> = model.records[&VcpuKey {
        partition: 1,
        cpu: 0,
    }]
        .iter()
        .map(|d| d.at - d.wait_start)
        .collect();
    let p99_us = nearest_rank(waits, 99) as f64 / 512.0;
    assert!((lat["p99_us"].as_f64().unwrap() - p99_us).abs() < 0.05 + 1e-9);
    let processors = doc["sections"]["processors"]["samples"][0]["rows"]
        .as_array()
        .unwrap();
    assert_eq!(processors.len(), PROCESSORS.len());
    let shares = doc["sections"]["shares"]["samples"][0]["rows"]
        .as_array()
        .unwrap();
    let runs_on_16 = model.runs.iter().filter(|r| r.processor == 16).count() as u64;
    let disp_16: u64 = shares
        .iter()
        .filter(|s| s["processor"] == "16" && s["cpu"] != "all")
        .map(|s| s["dispatches"].as_u64().unwrap())
        .sum();
    assert_eq!(disp_16, runs_on_16);
    let p2_on_16 = model
        .runs
        .iter()
        .filter(|r| r.processor == 16 && r.vcpu.partition == 2)
        .count() as u64;
    let all = shares
        .iter()
        .find(|s| s["processor"] == "16" && s["partition"] == "2" && s["cpu"] == "all")
        .unwrap();
    assert_eq!(all["dispatches"].as_u64().unwrap(), p2_on_16);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_slow_reader_is_reported_as_having_possibly_lost_entries() {
    let model = simulate(&PROCESSORS, &PARTITIONS, HORIZON, 7);
    let hv = Hypervisor::new(&model);
    let dir = tempdir("slow");
    let root = sysroot(&dir, 2, 2);
    // One poll per 1,000,000 ticks: far more than 85 dispatches in between.
    let rec = record_partition(&hv, &root, 2, 1_000_000, HORIZON, dir.join("slow.dtl"));
    let lost: u64 = rec.header.cpus.iter().map(|c| c.possibly_lost_reads).sum();
    assert!(lost > 0);
    let recorded: u64 = rec.header.cpus.iter().map(|c| c.entries).sum();
    let dispatched: usize = (0..2)
        .map(|cpu| model.records[&VcpuKey { partition: 2, cpu }].len())
        .sum();
    assert!(
        (recorded as usize) < dispatched,
        "the ring overflowed, so records are missing"
    );
    let name = "slow.dtl".to_string();
    let recordings = [(name, rec)];
    let machine = analysis::load(&recordings).unwrap();
    let mut out = Vec::new();
    write_sections(
        &mut out,
        &sections(&machine, &Topology::default(), false),
        ReportFormat::Text,
        0,
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("note: partition 2 cpu 0:"), "{text}");
    assert!(text.contains("records may have been lost"), "{text}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_event_mask_is_set_while_recording_and_restored_on_every_exit() {
    let model = simulate(&PROCESSORS, &PARTITIONS, 100_000, 3);
    let hv = Hypervisor::new(&model);
    let dir = tempdir("mask");
    let root = sysroot(&dir, 1, 3);
    let mask_file = root.join("sys/kernel/debug/powerpc/dtl/dtl_event_mask");
    let source = RootFs::new(&root);
    let rings = SimRings {
        hv: Rc::clone(&hv),
        partition: 1,
    };
    let mut seen = Vec::new();
    let mut pace = || {
        seen.push(std::fs::read_to_string(&mask_file).unwrap());
        hv.borrow_mut().now += 10_000;
        hv.borrow().now < 100_000
    };
    let out = dir.join("m.dtl");
    let opts = options(out.clone(), Some(vec![Event::Cede, Event::Fault]));
    let summary = record_with(&opts, &source, &rings, &mut pace).unwrap();
    assert_eq!(summary.header.event_mask, Some(0x05));
    assert!(seen.iter().all(|m| m == "0x05\n"), "{seen:?}");
    assert_eq!(std::fs::read_to_string(&mask_file).unwrap(), "0x07\n");
    // All rings were closed at the end: they can be opened again.
    assert!(rings.open(0).is_ok());

    // A vCPU that is busy (another reader has it): the error says why, the
    // mask is restored and no recording is left half-written.
    let _held = rings.open(2).unwrap();
    let out2 = dir.join("busy.dtl");
    let err = record_with(
        &options(out2.clone(), Some(vec![Event::Preempt])),
        &source,
        &rings,
        &mut || false,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("/sys/kernel/debug/powerpc/dtl/cpu-2: busy"),
        "{err}"
    );
    assert!(err.contains("vcpudispatch_stats"), "{err}");
    assert_eq!(std::fs::read_to_string(&mask_file).unwrap(), "0x07\n");
    assert!(!out2.exists());
    std::fs::remove_dir_all(dir).unwrap();
}
