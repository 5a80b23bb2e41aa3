//! `vcpustat trace report --topology FILE`: `0-7,64-71 chip=0 node=0` lines.
#![no_main]

use hwstat::vcpustat::trace::topology::Topology;
use hwstat_fuzz::cpu_list_fits;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let lists_fit = text.lines().all(|line| {
        let line = line.split('#').next().unwrap_or("");
        cpu_list_fits(line.split_whitespace().next().unwrap_or(""))
    });
    if !lists_fit {
        return;
    }
    if let Ok(topology) = Topology::parse("fuzz.topo", text) {
        let _ = topology.is_empty();
        for p in [0, 1, 63, 64, u16::MAX] {
            let _ = topology.place(p);
        }
    }
});
