//! `lparcfg`: `shared_processor_mode=`, key lookups, and the partition
//! identity read through a source (with the input as both lparcfg paths'
//! content in turn, and the partition name after a NUL).
#![no_main]

use hwstat::vcpustat::kernel::{missing_files, shared_processor_mode};
use hwstat::vcpustat::trace::identity::{LPARCFG, PARTITION_NAME, lparcfg_value, partition};
use hwstat_fuzz::{parts, replay_of_reads};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let p = parts(data, 2);
    if let Ok(text) = std::str::from_utf8(p[0]) {
        let _ = shared_processor_mode(text);
        let _ = lparcfg_value(text, "partition_id");
        let _ = lparcfg_value(text, "serial_number");
    }
    for path in LPARCFG {
        let src = replay_of_reads(&[vec![(path, p[0]), (PARTITION_NAME, p[1])]]);
        let _ = partition(&src);
        let _ = missing_files(&src);
    }
});
