//! `/proc/uptime`: hundredths of a second, and the interval between two
//! samples (the input's two NUL-separated parts).
#![no_main]

use hwstat::iostat::model::interval_cs;
use hwstat::iostat::parse::parse_uptime;
use hwstat_fuzz::parts;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let p = parts(data, 2);
    let a = parse_uptime(p[0]).unwrap_or(0);
    let b = parse_uptime(p[1]).unwrap_or(0);
    let _ = interval_cs(a, b);
    let _ = interval_cs(b, a);
});
