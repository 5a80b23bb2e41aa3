//! `vcpustat trace report FILE`: the DTL recording loader
//! (src/vcpustat/trace/recording.rs), then the analysis and every report
//! section in every format, with and without the timeline.
#![no_main]

use hwstat::vcpustat::trace::analysis;
use hwstat::vcpustat::trace::recording::Recording;
use hwstat::vcpustat::trace::report::{ReportFormat, sections, write_sections};
use hwstat::vcpustat::trace::topology::Topology;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(recording) = Recording::from_bytes("fuzz.dtl", data.to_vec()) else {
        return;
    };
    for i in 0..recording.header.cpus.len() {
        let _ = recording.records(i);
    }
    let start = recording.header.start_unix_ns;
    let recordings = vec![("fuzz.dtl".to_string(), recording)];
    let Ok(machine) = analysis::load(&recordings) else {
        return;
    };
    let topology = Topology::parse("fuzz.topo", "0-7 chip=0 node=0\n8-15 chip=1 node=1\n")
        .expect("a valid topology");
    for timeline in [false, true] {
        let tables = sections(&machine, &topology, timeline);
        for format in [ReportFormat::Text, ReportFormat::Json, ReportFormat::Csv] {
            let mut out = Vec::new();
            write_sections(&mut out, &tables, format, start).expect("writing to memory");
            if format == ReportFormat::Json {
                serde_json::from_slice::<serde_json::Value>(&out).expect("valid JSON");
            }
        }
    }
});
