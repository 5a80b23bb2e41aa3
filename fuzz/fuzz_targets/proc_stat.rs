//! `/proc/stat`: the `cpu ` line, the CPU count, and the CPU percentages
//! between two samples (the input's two NUL-separated parts).
#![no_main]

use hwstat::iostat::model::cpu_percent;
use hwstat::iostat::parse::{parse_proc_stat_cpu, proc_stat_cpu_count};
use hwstat_fuzz::parts;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let p = parts(data, 2);
    let _ = proc_stat_cpu_count(data);
    let a = parse_proc_stat_cpu(p[0]).unwrap_or_default();
    let b = parse_proc_stat_cpu(p[1]).unwrap_or_default();
    let _ = a.total();
    let _ = cpu_percent(&a, &b);
    let _ = cpu_percent(&b, &a);
});
