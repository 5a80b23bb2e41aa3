//! What only the Prometheus exposition reads: the per-CPU lines of
//! `/proc/stat` and a udev database file (the input's two NUL-separated
//! parts), then every value written as the labels and samples of an
//! exposition, which must stay one line per sample.
#![no_main]

use hwstat::common::expo::{Exposition, Family, Kind};
use hwstat::iostat::expose::{UdevProps, per_cpu_ticks};
use hwstat_fuzz::parts;
use libfuzzer_sys::fuzz_target;

const FAMILY: Family = Family {
    name: "fuzz_info",
    kind: Kind::Gauge,
    help: "Fuzz.",
};

fuzz_target!(|data: &[u8]| {
    let p = parts(data, 2);
    let cpus = per_cpu_ticks(p[0]);
    let props = UdevProps::parse(p[1]);
    let mut e = Exposition::new();
    e.family(&FAMILY);
    for (cpu, ticks) in &cpus {
        e.sample(&[("cpu", cpu)], ticks[0] as f64);
    }
    e.sample(&props.labels(), 1.0);
    let text = e.into_string();
    // HELP, TYPE, one line per CPU and one for the udev labels.
    assert_eq!(text.lines().count(), 3 + cpus.len(), "{text}");
});
