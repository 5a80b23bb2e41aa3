//! `vcpustat trace report --topology FILE`: `0-7,64-71 chip=0 node=0` lines.
#![no_main]

use hwstat::vcpustat::trace::topology::Topology;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(topology) = Topology::parse("fuzz.topo", text) {
        let _ = topology.is_empty();
        for p in [0, 1, 63, 64, u16::MAX] {
            let _ = topology.place(p);
        }
    }
});
