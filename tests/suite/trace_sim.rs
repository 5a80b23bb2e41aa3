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

use hwstat::common::source::{RootFs, Source, Uname};
use hwstat::vcpustat::trace::analysis::{self, VcpuKey};
use hwstat::vcpustat::trace::error::TraceError;
use hwstat::vcpustat::trace::progress::Progress;
use hwstat::vcpustat::trace::record::{Event, RecordOptions, record_to, record_with};
use hwstat::vcpustat::trace::recording::Recording;
use hwstat::vcpustat::trace::report::{ReportFormat, ReportOptions, Table, write_report};
use hwstat::vcpustat::trace::ring::{DebugfsRings, DtlRing, DtlRings};
use hwstat::vcpustat::trace::topology::Topology;

use crate::scratch::Scratch;

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
    ready_at: u64,
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
            ready_at: s.ready_at,
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

/// What the report must reconstruct, from the schedule alone, in start
/// order (ties by vCPU): (processor, start, vCPU, virtual processing time,
/// delay before it on its processor) per record.
type Expected = (u16, u64, VcpuKey, Option<u64>, Option<u64>);

fn expected_timeline(model: &Model) -> Vec<Expected> {
    let mut last_of_vcpu: BTreeMap<VcpuKey, u64> = BTreeMap::new();
    for r in &model.runs {
        let e = last_of_vcpu.entry(r.vcpu).or_insert(0);
        *e = (*e).max(r.start);
    }
    let virtual_time = |r: &Run| (last_of_vcpu[&r.vcpu] != r.start).then_some(r.end - r.start);
    let mut runs = model.runs.clone();
    runs.sort_by_key(|r| (r.start, r.vcpu));
    let mut previous: BTreeMap<u16, Run> = BTreeMap::new();
    let mut out = Vec::new();
    for r in &runs {
        // The processor was busy with something untraced from the end of
        // its previous run (when that run's length is known) to this start.
        let delay = previous
            .insert(r.processor, *r)
            .and_then(|p| virtual_time(&p).map(|_| r.start - p.end));
        out.push((r.processor, r.start, r.vcpu, virtual_time(r), delay));
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

    fn reads_running_kernel(&self) -> bool {
        false
    }

    /// One process, one run at a time: nothing to meet.
    fn lock_event_mask(
        &self,
    ) -> Result<Option<hwstat::vcpustat::session::EventMaskLock>, TraceError> {
        Ok(None)
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

/// A fresh directory for one test, removed when the test ends, also
/// when it fails.
fn tempdir(name: &str) -> Scratch {
    crate::scratch::scratch(&format!("trace-{name}"))
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
    record_with(
        &options(output.clone(), None),
        &source,
        &rings,
        &mut pace,
        &mut Progress::hidden(),
    )
    .unwrap();
    Recording::open(&output).unwrap()
}

/// The report of `machine` as `trace report` writes it.
fn report(
    machine: &analysis::Machine,
    topology: &Topology,
    format: ReportFormat,
    timeline: bool,
    table: Option<Table>,
) -> Vec<u8> {
    let mut out = Vec::new();
    let options = ReportOptions {
        format,
        timeline,
        table,
    };
    write_report(
        &mut out,
        machine,
        topology,
        &options,
        0,
        &[],
        &mut Progress::hidden(),
    )
    .unwrap();
    out
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
    assert_eq!(
        machine.entries() as usize,
        model.runs.len(),
        "every dispatch of the model was recorded"
    );

    // The physical timeline, record for record.
    let mut got: Vec<Expected> = Vec::new();
    analysis::physical(
        &machine,
        &mut |r| {
            let key = machine.vcpus[r.vcpu as usize].key;
            got.push((r.processor, r.start, key, r.virtual_time, r.delay_before));
            Ok(())
        },
        &mut |_| {},
    )
    .unwrap();
    let want = expected_timeline(&model);
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g, w);
    }
    // The streamed CSV timeline: one header, then the same records.
    let csv = report(
        &machine,
        &Topology::default(),
        ReportFormat::Csv,
        true,
        Some(Table::Timeline),
    );
    let csv = String::from_utf8(csv).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "timestamp,index,processor,start_tb,start_us,partition,cpu,virtual_us,delay_before_us"
    );
    let mut rows = 0;
    for (line, w) in lines.zip(&want) {
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!(f.len(), 9, "{line}");
        assert_eq!(f[2].parse::<u16>().unwrap(), w.0);
        assert_eq!(f[3].parse::<u64>().unwrap(), w.1);
        assert_eq!(
            (f[5].parse().unwrap(), f[6].parse().unwrap()),
            (w.2.partition, w.2.cpu)
        );
        let delay = (!f[8].is_empty()).then(|| f[8].parse::<f64>().unwrap());
        assert_eq!(delay, w.4.map(|t| t as f64 / 512.0), "{line}");
        rows += 1;
    }
    assert_eq!(rows, want.len());

    // Dispatch latency (ready until dispatched) and idle wait (from the
    // end of the last run until ready: the sleep after a cede) per vCPU,
    // from the model's times.
    let topology = Topology::parse("topo", "16-17 chip=0 node=0\n40-41 chip=1 node=1\n").unwrap();
    let reports = analysis::vcpu_reports(&machine, &topology, &mut |_| {}).unwrap();
    assert_eq!(reports.len(), 8);
    for r in &reports {
        let recs = &model.records[&r.key];
        let waits: Vec<u64> = recs.iter().map(|d| d.at - d.ready_at).collect();
        let sleeps: Vec<u64> = recs.iter().map(|d| d.ready_at - d.wait_start).collect();
        let lat = r.latency.unwrap();
        assert_eq!(lat.count, waits.len() as u64);
        assert_eq!(lat.p50, nearest_rank(waits.clone(), 50), "{:?}", r.key);
        assert_eq!(lat.p90, nearest_rank(waits.clone(), 90), "{:?}", r.key);
        assert_eq!(lat.p99, nearest_rank(waits.clone(), 99), "{:?}", r.key);
        assert_eq!(lat.max, *waits.iter().max().unwrap());
        let mean = waits.iter().sum::<u64>() as f64 / waits.len() as f64;
        assert!((lat.mean - mean).abs() < 1e-6);
        let idle = r.idle_wait.unwrap();
        assert_eq!(idle.p50, nearest_rank(sleeps.clone(), 50), "{:?}", r.key);
        assert_eq!(idle.p99, nearest_rank(sleeps.clone(), 99), "{:?}", r.key);
        assert_eq!(idle.max, *sleeps.iter().max().unwrap());
        // A runnable vCPU waits at most a few time slices; a ceded one
        // sleeps up to 20,000 ticks, which is not dispatch latency.
        assert!(idle.max > lat.max, "{:?}: {idle:?} vs {lat:?}", r.key);
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

    // The JSON report carries the same numbers, in microseconds, exactly.
    let out = report(&machine, &topology, ReportFormat::Json, false, None);
    let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let lat = &doc["sections"]["latency"]["samples"][0]["rows"][0];
    assert_eq!(lat["partition"], "1");
    let waits: Vec<u64> = model.records[&VcpuKey {
        partition: 1,
        cpu: 0,
    }]
        .iter()
        .map(|d| d.at - d.ready_at)
        .collect();
    // 9 decimals of µs hold every 512 MHz tick exactly (1/512 = 0.001953125).
    let p99_us = nearest_rank(waits, 99) as f64 / 512.0;
    assert_eq!(lat["p99_us"].as_f64().unwrap(), p99_us);
    assert!(lat["idle_max_us"].as_f64().unwrap() > lat["max_us"].as_f64().unwrap());
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
    let out = report(
        &machine,
        &Topology::default(),
        ReportFormat::Text,
        false,
        None,
    );
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("note: partition 2 cpu 0:"), "{text}");
    assert!(text.contains("records may have been lost"), "{text}");
}

#[test]
fn the_event_mask_is_set_while_the_rings_open_and_restored_on_every_exit() {
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
    let summary = record_with(&opts, &source, &rings, &mut pace, &mut Progress::hidden()).unwrap();
    assert_eq!(summary.header.event_mask, Some(0x05));
    // The rings took the mask when they were opened: it was back before
    // the first poll.
    assert!(
        !seen.is_empty() && seen.iter().all(|m| m == "0x07\n"),
        "{seen:?}"
    );
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
        &mut Progress::hidden(),
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
}

/// The host as a kernel whose DTL reads crash (6.6.41 with hardened
/// usercopy), whatever kernel runs the tests.
struct AffectedHost(RootFs);

impl Source for AffectedHost {
    fn read_into(&self, path: &str, buf: &mut Vec<u8>) -> io::Result<()> {
        self.0.read_into(path, buf)
    }
    fn list_dir(&self, path: &str) -> io::Result<Vec<String>> {
        self.0.list_dir(path)
    }
    fn read_link(&self, path: &str) -> io::Result<String> {
        self.0.read_link(path)
    }
    fn device_number(&self, path: &str) -> io::Result<(u32, u32)> {
        self.0.device_number(path)
    }
    fn canonicalize(&self, path: &str) -> io::Result<String> {
        self.0.canonicalize(path)
    }
    fn is_dir(&self, path: &str) -> bool {
        self.0.is_dir(path)
    }
    fn write_file(&self, path: &str, data: &[u8]) -> io::Result<()> {
        self.0.write_file(path, data)
    }
    fn write_command(&self, path: &str, data: &[u8]) -> io::Result<()> {
        self.0.write_command(path, data)
    }
    fn values(
        &self,
        key: &str,
        read: &mut dyn FnMut() -> io::Result<Vec<u64>>,
    ) -> io::Result<Vec<u64>> {
        self.0.values(key, read)
    }
    fn uname(&self) -> io::Result<Uname> {
        Ok(Uname {
            sysname: "Linux".into(),
            nodename: "lpar".into(),
            release: "6.6.41-ppc64le".into(),
            version: String::new(),
            machine: "ppc64le".into(),
        })
    }
    fn now(&self) -> std::time::SystemTime {
        self.0.now()
    }
    fn elapsed(&self) -> Duration {
        self.0.elapsed()
    }
    fn next_sample(&mut self) -> io::Result<bool> {
        self.0.next_sample()
    }
    fn is_live(&self) -> bool {
        true
    }
}

#[test]
fn the_kernel_crash_check_guards_the_live_debugfs_only() {
    let dir = tempdir("safety");
    let root = sysroot(&dir, 4, 2);
    let source = AffectedHost(RootFs::new(&root));
    // Rings under a --sysroot directory are plain files: no kernel reads them.
    let out = dir.join("s.dtl");
    let summary = record_with(
        &options(out.clone(), None),
        &source,
        &DebugfsRings::new(&root),
        &mut || false,
        &mut Progress::hidden(),
    )
    .unwrap();
    assert_eq!(summary.header.cpus.len(), 2);
    // The running kernel's own rings on an affected kernel: refused.
    let err = record_with(
        &options(dir.join("live.dtl"), None),
        &source,
        &DebugfsRings::new("/"),
        &mut || false,
        &mut Progress::hidden(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with("refusing to read the DTL: kernel 6.6.41-ppc64le"),
        "{err}"
    );
    assert!(!dir.join("live.dtl").exists());
}

/// A disk that fills up after `room` bytes.
struct FillingDisk {
    written: Rc<RefCell<Vec<u8>>>,
    room: usize,
}

impl io::Write for FillingDisk {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut w = self.written.borrow_mut();
        let n = buf.len().min(self.room - w.len());
        if n == 0 {
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        }
        w.extend_from_slice(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_full_disk_ends_the_recording_with_the_mask_restored_and_the_file_readable() {
    let model = simulate(&PROCESSORS, &PARTITIONS, HORIZON, 11);
    let hv = Hypervisor::new(&model);
    let dir = tempdir("enospc");
    let root = sysroot(&dir, 1, 3);
    let mask_file = root.join("sys/kernel/debug/powerpc/dtl/dtl_event_mask");
    let written = Rc::new(RefCell::new(Vec::new()));
    let disk = FillingDisk {
        written: Rc::clone(&written),
        room: 5_000,
    };
    let rings = SimRings {
        hv: Rc::clone(&hv),
        partition: 1,
    };
    // Each poll advances the model by 100,000 ticks; a 2 s poll makes the
    // recorder write what it read after every poll.
    let mut opts = options(dir.join("unused.dtl"), Some(vec![Event::Preempt]));
    opts.poll = Duration::from_secs(2);
    let mut pace = || {
        let mut h = hv.borrow_mut();
        h.now += 100_000;
        h.now <= HORIZON
    };
    let err = record_to(
        &opts,
        &RootFs::new(&root),
        &rings,
        &mut pace,
        &mut Progress::hidden(),
        disk,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("No space left on device"), "{err}");
    assert!(err.contains("unused.dtl"), "{err}");
    assert_eq!(std::fs::read_to_string(&mask_file).unwrap(), "0x07\n");
    assert!(rings.open(0).is_ok(), "the rings were closed");
    // What reached the disk is a recording cut short, with whole records.
    let bytes = written.borrow().clone();
    assert_eq!(bytes.len(), 5_000);
    let rec = Recording::from_bytes("full.dtl", bytes).unwrap();
    assert!(rec.cut().is_some());
    let kept: u64 = rec.header.cpus.iter().map(|c| c.entries).sum();
    assert!(kept > 50, "{kept}");
    let recordings = [("full.dtl".to_string(), rec)];
    let machine = analysis::load(&recordings).unwrap();
    let reports = analysis::vcpu_reports(&machine, &Topology::default(), &mut |_| {}).unwrap();
    assert_eq!(reports.iter().map(|r| r.dispatches).sum::<u64>(), kept);
}
