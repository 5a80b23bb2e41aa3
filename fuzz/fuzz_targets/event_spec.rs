//! cxlstat's `-e` grammar (`{a,b}`, `PMU/terms/`, raw `vid=,gid=,mask=`),
//! then each parsed list resolved against the PMUs of the QEMU fixture.
#![no_main]

use std::sync::OnceLock;

use hwstat::common::source::RootFs;
use hwstat::cxlstat::sysfs::{Pmu, discover};
use hwstat::cxlstat::{resolve, spec};
use libfuzzer_sys::fuzz_target;

fn pmus() -> &'static [Pmu] {
    static PMUS: OnceLock<Vec<Pmu>> = OnceLock::new();
    PMUS.get_or_init(|| {
        let root = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/cxl/qemu-two-cpmus"
        );
        discover(&RootFs::new(root))
            .expect("the QEMU fixture has CXL PMUs")
            .pmus
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(groups) = spec::parse_event_list(text) else {
        return;
    };
    let pmus = pmus();
    let selected: Vec<usize> = (0..pmus.len()).collect();
    if let Ok(plan) = resolve::resolve(pmus, &groups, &selected) {
        let _ = resolve::driver_warnings(&plan, pmus);
        let _ = plan.repeated_event();
    }
});
