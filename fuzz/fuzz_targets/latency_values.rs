//! `--latency`'s histograms as a recording stores them (`values latency`):
//! the decoder, then the figures and texts every format prints, and the
//! round trip of what it accepted.
#![no_main]

use hwstat::iostat::latency::codec::Interval;
use hwstat::iostat::latency::{LatencyStats, Losses, buckets_json, buckets_text, json_object};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let values: Vec<u64> = data
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let Some(interval) = Interval::decode(&values) else {
        return;
    };
    assert_eq!(Interval::decode(&interval.encode()), Some(interval.clone()));
    for (devnum, h) in &interval.devices {
        let stats = LatencyStats::of(h);
        let losses = Losses {
            lost: interval.lost,
            unmatched: interval.unmatched_on(*devnum),
            undelivered: interval.undelivered_on(*devnum),
        };
        let _ = json_object(h, &stats, &losses);
        for hist in h.latency.iter().chain([&h.depth]) {
            let _ = buckets_text(hist);
            let _ = buckets_json(hist);
        }
    }
});
