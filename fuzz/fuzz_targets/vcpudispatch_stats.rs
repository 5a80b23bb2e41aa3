//! `/proc/powerpc/vcpudispatch_stats` (and the `_freq` file): the parser,
//! then vcpustat's tracker and renderers over three samples (the input's
//! NUL-separated parts; the fourth is the frequency file).
#![no_main]

use hwstat::vcpustat::counters::{FREQ_PATH, STATS_PATH, parse};
use hwstat_fuzz::{drive_vcpustat, parts, replay_of_reads};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = parse(data);
    let p = parts(data, 4);
    let frames: Vec<_> = p[..3]
        .iter()
        .map(|stats| vec![(STATS_PATH, *stats), (FREQ_PATH, p[3])])
        .collect();
    drive_vcpustat(&mut replay_of_reads(&frames), 3);
});
