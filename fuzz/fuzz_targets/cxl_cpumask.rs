//! A PMU's `cpumask` file: its first CPU, as cxlstat reads it.
#![no_main]

use hwstat::cxlstat::sysfs::first_cpu;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = first_cpu(text);
});
