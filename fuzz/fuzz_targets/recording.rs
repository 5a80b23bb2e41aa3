//! `--replay FILE` (src/common/record.rs): the recording loader, then every
//! tool's read path over the replayed frames: iostat-rs with the recorded
//! arguments and its renderers, vcpustat's tracker, cxlstat's discovery,
//! resolution and counting (replayed counter values, matched by event), and
//! vcpustat trace's identity reads.
#![no_main]

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::OnceLock;

use hwstat::common::record::Replay;
use hwstat::common::source::Source;
use hwstat_fuzz::{drive_cxlstat, drive_identity, drive_iostat, drive_vcpustat};
use libfuzzer_sys::fuzz_target;

/// The loader reads files only: each input goes through one file per
/// process, unlinked as soon as it is made and named by its descriptor, so
/// no run (one killed by a crash included) leaves a file behind.
fn input_file() -> &'static (File, PathBuf) {
    static INPUT: OnceLock<(File, PathBuf)> = OnceLock::new();
    INPUT.get_or_init(|| {
        let path = std::env::temp_dir().join(format!("hwstat-fuzz-{}.rec", std::process::id()));
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .expect("the temporary directory is writable");
        std::fs::remove_file(&path).expect("the file just made can be removed");
        let by_descriptor = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        (file, by_descriptor)
    })
}

/// Loads `data` as a recording made by `tool` (a recording of another tool
/// is refused by the loader, as the programs refuse it).
fn load(data: &[u8], tool: &str) -> Option<Replay> {
    let (file, path) = input_file();
    // `&File` writes and seeks: the one file is shared by every input.
    let mut file: &File = file;
    file.set_len(0).expect("the input file can be emptied");
    file.seek(SeekFrom::Start(0))
        .expect("the input file can be rewound");
    file.write_all(data)
        .expect("the input file takes the input");
    Replay::open(path, tool).ok()
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
