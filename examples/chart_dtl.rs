//! Writes the small DTL recordings the chart tests and the README picture
//! use: 2 partitions of 4 vCPUs on 6 physical processors, 40 dispatches
//! per vCPU at 512 MHz, each vCPU moving to the next processor every 8
//! dispatches, partition 2 waiting longer for a processor than partition 1.
//!
//! `cargo run --example chart_dtl DIR` writes `DIR/lpar1.dtl` and
//! `DIR/lpar2.dtl`.

use std::path::PathBuf;

use hwstat::common::source::Uname;
use hwstat::vcpustat::trace::recording::{
    CpuIndex, FORMAT_NAME, FORMAT_VERSION, Header, write_recording,
};

const HZ: u64 = 512_000_000;
const US: u64 = HZ / 1_000_000;

fn entry(dispatch: u8, preempt: u8, processor: u16, waits: [u32; 3], timebase: u64) -> [u8; 48] {
    let mut raw = [0u8; 48];
    raw[0] = dispatch;
    raw[1] = preempt;
    raw[2..4].copy_from_slice(&processor.to_be_bytes());
    for (i, w) in waits.iter().enumerate() {
        raw[4 + 4 * i..8 + 4 * i].copy_from_slice(&w.to_be_bytes());
    }
    raw[16..24].copy_from_slice(&timebase.to_be_bytes());
    raw
}

fn main() {
    let dir = PathBuf::from(std::env::args().nth(1).expect("usage: chart_dtl DIR"));
    std::fs::create_dir_all(&dir).expect("the directory");
    for partition in 1..=2u32 {
        let mut blocks = Vec::new();
        for cpu in 0..4u32 {
            let mut data = Vec::new();
            let mut t = u64::from(cpu) * 300 * US + u64::from(partition) * 100 * US;
            for k in 0..40u32 {
                // Enqueue to dispatch, ready to enqueue, waiting to ready (µs).
                let latency = 50
                    + 40 * u64::from(cpu)
                    + 150 * u64::from(partition - 1)
                    + u64::from(k % 7) * 20;
                let waits = [latency * 3 / 4, latency / 4, 400].map(|us| (us * US) as u32);
                let processor = ((cpu + (partition - 1) * 3 + k / 8) % 6) as u16;
                t += waits.iter().map(|&w| u64::from(w)).sum::<u64>();
                data.extend_from_slice(&entry(
                    (k % 3) as u8,
                    ((k + cpu) % 4) as u8,
                    processor,
                    waits,
                    t,
                ));
                t += 800 * US; // runs 0.8 ms
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
            system_serial: Some("IBM,02DEMO".into()),
            timebase_hz: HZ,
            start_unix_ns: 1_767_258_000_000_000_000,
            duration_ns: 100_000_000,
            event_mask: Some(0x07),
            ring_entries: 85,
            cpus: (0..4)
                .map(|cpu| CpuIndex {
                    cpu,
                    offset: 0,
                    entries: 0,
                    reads: 0,
                    possibly_lost_reads: 0,
                })
                .collect(),
        };
        let views: Vec<(&[u8], u64, u64)> = blocks.iter().map(|b| (b.as_slice(), 0, 0)).collect();
        write_recording(&dir.join(format!("lpar{partition}.dtl")), header, &views).expect("write");
    }
}
