//! Benchmark of `vcpustat trace report`'s work: decoding recorded DTL
//! entries and analysing them (latency per vCPU, reasons, migrations, the
//! physical timeline and the per-processor summary).
//!
//! Run with `cargo run --release --example trace_bench [ENTRIES]`; it prints
//! entries per second for several runs (target: at least 10 million).

use std::time::Instant;

use hwstat::common::source::Uname;
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

/// One partition's recording with `per_vcpu` entries for each of its vCPUs.
fn recording(partition: u32, per_vcpu: u64, seed: &mut u64) -> Vec<u8> {
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
    let path = std::env::temp_dir().join(format!(
        "hwstat-trace-bench-{}-{partition}.dtl",
        std::process::id()
    ));
    let views: Vec<(&[u8], u64, u64)> = blocks.iter().map(|b| (b.as_slice(), 0, 0)).collect();
    write_recording(&path, header, &views).expect("write the bench recording");
    let bytes = std::fs::read(&path).expect("read it back");
    let _ = std::fs::remove_file(&path);
    bytes
}

fn main() {
    let entries: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(8_000_000);
    let per_vcpu = entries / u64::from(PARTITIONS * VCPUS);
    let total = per_vcpu * u64::from(PARTITIONS * VCPUS);
    let mut seed = 1;
    let files: Vec<Vec<u8>> = (1..=PARTITIONS)
        .map(|p| recording(p, per_vcpu, &mut seed))
        .collect();
    let topology =
        Topology::parse("bench", "0-31 chip=0 node=0\n32-63 chip=1 node=1\n").expect("topology");
    println!(
        "vcpustat trace report: {total} entries, {PARTITIONS} partitions x {VCPUS} vCPUs, {PROCESSORS} processors"
    );
    let mut rates = Vec::new();
    for run in 1..=5 {
        let inputs = files.clone();
        let start = Instant::now();
        let recordings: Vec<(String, Recording)> = inputs
            .into_iter()
            .enumerate()
            .map(|(i, bytes)| {
                let name = format!("p{i}.dtl");
                let rec = Recording::from_bytes(&name, bytes).expect("parse");
                (name, rec)
            })
            .collect();
        let machine = analysis::load(&recordings).expect("load");
        let reports = analysis::vcpu_reports(&machine, &topology);
        let records = analysis::timeline(&machine);
        let summaries = analysis::processor_summaries(&machine, &records);
        let elapsed = start.elapsed();
        assert_eq!(
            records.iter().map(|p| p.records.len() as u64).sum::<u64>(),
            total
        );
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
}
