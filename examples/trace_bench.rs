//! Benchmark of `vcpustat trace report`'s work: reading recorded DTL
//! entries from files and analysing them (latency per vCPU, reasons,
//! migrations, and the merged physical timeline folded into the
//! per-processor summary).
//!
//! Run with `cargo run --release --example trace_bench [ENTRIES [DIR]]`; it
//! prints entries per second for several runs (target: at least 10
//! million). With DIR, the four recordings are written there and kept, for
//! timing `vcpustat trace report` itself on them.

use std::time::Instant;

use hwstat::common::source::Uname;
use std::path::{Path, PathBuf};

use hwstat::vcpustat::trace::analysis;
use hwstat::vcpustat::trace::recording::{
    CpuIndex, FORMAT_NAME, FORMAT_VERSION, Header, Recording, write_recording,
};
use hwstat::vcpustat::trace::topology::Topology;

const PARTITIONS: u32 = 4;
const VCPUS: u32 = 16;
const PROCESSORS: u64 = 64;

fn record(
    dispatch_reason: u8,
    preempt_reason: u8,
    processor: u16,
    waits: [u32; 3],
    timebase: u64,
) -> [u8; 48] {
    let mut raw = [0u8; 48];
    raw[0] = dispatch_reason;
    raw[1] = preempt_reason;
    raw[2..4].copy_from_slice(&processor.to_be_bytes());
    raw[4..8].copy_from_slice(&waits[0].to_be_bytes());
    raw[8..12].copy_from_slice(&waits[1].to_be_bytes());
    raw[12..16].copy_from_slice(&waits[2].to_be_bytes());
    raw[16..24].copy_from_slice(&timebase.to_be_bytes());
    raw
}

/// Writes one partition's recording with `per_vcpu` entries for each of
/// its vCPUs into `dir`; returns its path.
fn recording(dir: &Path, partition: u32, per_vcpu: u64, seed: &mut u64) -> PathBuf {
    let mut next = |bound: u64| {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (*seed >> 33) % bound
    };
    let mut blocks = Vec::new();
    for _ in 0..VCPUS {
        let mut data = Vec::with_capacity(per_vcpu as usize * 48);
        let mut t = next(10_000);
        for _ in 0..per_vcpu {
            let wait = [next(5_000) as u32, next(10) as u32, next(20_000) as u32];
            t += u64::from(wait[0] + wait[1] + wait[2]) + 1;
            let processor = (next(PROCESSORS)) as u16;
            data.extend_from_slice(&record(next(11) as u8, next(10) as u8, processor, wait, t));
            t += next(50_000);
        }
        blocks.push(data);
    }
    let header = Header {
        format: FORMAT_NAME.into(),
        version: FORMAT_VERSION,
        host: Uname {
            sysname: "Linux".into(),
            nodename: format!("lpar{partition}"),
            release: "6.12.0".into(),
            version: String::new(),
            machine: "ppc64le".into(),
        },
        partition_id: partition,
        partition_name: None,
        system_serial: None,
        timebase_hz: 512_000_000,
        start_unix_ns: 0,
        duration_ns: 0,
        event_mask: None,
        ring_entries: 85,
        cpus: (0..VCPUS)
            .map(|cpu| CpuIndex {
                cpu,
                offset: 0,
                entries: 0,
                reads: 0,
                possibly_lost_reads: 0,
            })
            .collect(),
    };
    let path = dir.join(format!("p{partition}.dtl"));
    let views: Vec<(&[u8], u64, u64)> = blocks.iter().map(|b| (b.as_slice(), 0, 0)).collect();
    write_recording(&path, header, &views).expect("write the bench recording");
    path
}

fn main() {
    let mut args = std::env::args().skip(1);
    let entries: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(8_000_000);
    let keep = args.next().map(PathBuf::from);
    let dir = keep.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("hwstat-trace-bench-{}", std::process::id()))
    });
    std::fs::create_dir_all(&dir).expect("bench directory");
    let per_vcpu = entries / u64::from(PARTITIONS * VCPUS);
    let total = per_vcpu * u64::from(PARTITIONS * VCPUS);
    let mut seed = 1;
    let files: Vec<PathBuf> = (1..=PARTITIONS)
        .map(|p| recording(&dir, p, per_vcpu, &mut seed))
        .collect();
    let topology =
        Topology::parse("bench", "0-31 chip=0 node=0\n32-63 chip=1 node=1\n").expect("topology");
    println!(
        "vcpustat trace report: {total} entries, {PARTITIONS} partitions x {VCPUS} vCPUs, {PROCESSORS} processors"
    );
    let mut rates = Vec::new();
    for run in 1..=5 {
        let start = Instant::now();
        let recordings: Vec<(String, Recording)> = files
            .iter()
            .map(|path| {
                let rec = Recording::open(path).expect("open");
                (path.display().to_string(), rec)
            })
            .collect();
        let machine = analysis::load(&recordings).expect("load");
        let reports = analysis::vcpu_reports(&machine, &topology, &mut |_| {}).expect("vCPU pass");
        let summaries = analysis::processor_summaries(&machine, &mut |_| {}).expect("merge");
        let elapsed = start.elapsed();
        assert_eq!(summaries.iter().map(|p| p.dispatches).sum::<u64>(), total);
        assert_eq!(reports.len() as u32, PARTITIONS * VCPUS);
        assert_eq!(summaries.len() as u64, PROCESSORS);
        let rate = total as f64 / elapsed.as_secs_f64();
        println!(
            "run {run}: {:.3} s, {:.1} M entries/s",
            elapsed.as_secs_f64(),
            rate / 1e6
        );
        rates.push(rate);
    }
    rates.sort_by(f64::total_cmp);
    println!(
        "median {:.1} M entries/s (target >= 10.0): {}",
        rates[rates.len() / 2] / 1e6,
        if rates[rates.len() / 2] >= 10e6 {
            "met"
        } else {
            "NOT met"
        }
    );
    if keep.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
