//! `--replay FILE` (src/common/record.rs): the recording loader, then every
//! tool's read path over the replayed frames: iostat-rs with the recorded
//! arguments and its renderers, vcpustat's tracker, cxlstat's discovery,
//! resolution and counting (replayed counter values, matched by event), and
//! vcpustat trace's identity reads.
#![no_main]

use hwstat::common::record::Replay;
use hwstat::common::source::Source;
use hwstat_fuzz::{drive_cxlstat, drive_identity, drive_iostat, drive_vcpustat};
use libfuzzer_sys::fuzz_target;

/// The loader reads files only: each input goes through one file per process.
fn input_path() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("hwstat-fuzz-{}.rec", std::process::id()))
}

/// Loads `data` as a recording made by `tool` (a recording of another tool
/// is refused by the loader, as the programs refuse it).
fn load(data: &[u8], tool: &str) -> Option<Replay> {
    let path = input_path();
    std::fs::write(&path, data).expect("the temporary directory is writable");
    Replay::open(&path, tool).ok()
}

fuzz_target!(|data: &[u8]| {
    if let Some(mut replay) = load(data, "iostat-rs") {
        let args = replay.header().args.clone();
        drive_iostat(&mut replay, &args, 64);
    }
    // Events of the QEMU fixture's PMUs (the seeds' recordings), twice the
    // same one and in another order than recorded: a replay finds each
    // unit's recorded values by the event it counts.
    for events in [
        "clock_ticks,{d2h_req_rdshared,vid=0x1e98,gid=0x10,mask=1}",
        "{d2h_req_rdshared,vid=0x1e98,gid=0x10,mask=1},clock_ticks,clock_ticks",
    ] {
        if let Some(mut replay) = load(data, "cxlstat") {
            drive_cxlstat(&mut replay, events, 64);
        }
    }
    if let Some(mut replay) = load(data, "vcpustat") {
        drive_identity(&replay);
        let _ = replay.uname();
        let _ = replay.now();
        let _ = replay.elapsed();
        drive_vcpustat(&mut replay, 64);
    }
});
