//! `vcpustat trace report FILE`: the DTL recording loader
//! (src/vcpustat/trace/recording.rs), then the analysis and every report
//! section in every format, with and without the timeline.
#![no_main]

use hwstat::vcpustat::trace::analysis;
use hwstat::vcpustat::trace::progress::Progress;
use hwstat::vcpustat::trace::recording::Recording;
use hwstat::vcpustat::trace::report::{ReportFormat, ReportOptions, Table, write_report};
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
    let choices = [
        (ReportFormat::Text, false, None),
        (ReportFormat::Text, true, None),
        (ReportFormat::Json, false, None),
        (ReportFormat::Json, true, None),
        (ReportFormat::Csv, false, Some(Table::Shares)),
        (ReportFormat::Csv, true, Some(Table::Timeline)),
    ];
    for (format, timeline, table) in choices {
        let options = ReportOptions {
            format,
            timeline,
            table,
        };
        let mut out = Vec::new();
        let written = write_report(
            &mut out,
            &machine,
            &topology,
            &options,
            start,
            &[],
            &mut Progress::hidden(),
        );
        if written.is_ok() && format == ReportFormat::Json {
            serde_json::from_slice::<serde_json::Value>(&out).expect("valid JSON");
        }
    }
});
