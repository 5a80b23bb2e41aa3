//! `--replay FILE` (src/common/record.rs): the recording loader, then every
//! tool's read path over the replayed frames: iostat-rs with the recorded
//! arguments and its renderers, vcpustat's tracker, cxlstat's discovery and
//! resolution, and vcpustat trace's identity reads.
#![no_main]

use hwstat::common::record::Replay;
use hwstat::common::source::Source;
use hwstat_fuzz::{drive_cxlstat, drive_identity, drive_iostat, drive_vcpustat};
use libfuzzer_sys::fuzz_target;

/// The loader reads files only: each input goes through one file per process.
fn input_path() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("hwstat-fuzz-{}.rec", std::process::id()))
}

fn load(data: &[u8]) -> Option<Replay> {
    let path = input_path();
    std::fs::write(&path, data).expect("the temporary directory is writable");
    Replay::open(&path).ok()
}

fuzz_target!(|data: &[u8]| {
    let Some(replay) = load(data) else {
        return;
    };
    let args = replay.header().args.clone();
    let mut iostat = replay;
    drive_iostat(&mut iostat, &args, 64);
    let Some(mut again) = load(data) else {
        panic!("a recording that loaded once loads again");
    };
    drive_cxlstat(
        &again,
        "clock_ticks,{d2h_req_rdshared,vid=0x1e98,gid=0x10,mask=1}",
    );
    drive_identity(&again);
    let _ = again.uname();
    let _ = again.now();
    let _ = again.elapsed();
    drive_vcpustat(&mut again, 64);
});
