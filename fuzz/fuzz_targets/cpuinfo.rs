//! `/proc/cpuinfo`: the `timebase` line read through a source.
#![no_main]

use hwstat::vcpustat::trace::identity::timebase_hz;
use hwstat_fuzz::replay_of_reads;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let src = replay_of_reads(&[vec![("/proc/cpuinfo", data)]]);
    let _ = timebase_hz(&src);
});
