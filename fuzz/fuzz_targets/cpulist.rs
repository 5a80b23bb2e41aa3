//! CPU lists (`0-3,8`; `--cpus`, `cpumask`, `online`): the parser, checked
//! against a plain model: every CPU of the result is in some range of the
//! text, and the result is sorted without duplicates.
#![no_main]

use hwstat::common::cpulist::CpuList;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(list) = CpuList::parse(text) else {
        return;
    };
    let cpus = list.cpus();
    assert!(
        cpus.windows(2).all(|w| w[0] < w[1]),
        "sorted, no duplicates"
    );
    assert!(!cpus.is_empty(), "an accepted list names a CPU");
    let ranges: Vec<(u32, u32)> = text
        .split(',')
        .map(|part| match part.trim().split_once('-') {
            Some((a, b)) => (a.trim().parse().unwrap(), b.trim().parse().unwrap()),
            None => (part.trim().parse().unwrap(), part.trim().parse().unwrap()),
        })
        .collect();
    for &(a, b) in &ranges {
        assert!(list.contains(a) && list.contains(b), "{text:?}: {a}-{b}");
    }
    let expected: u64 = {
        let mut sorted = ranges.clone();
        sorted.sort_unstable();
        let mut total = 0u64;
        let mut covered_to: Option<u32> = None;
        for (a, b) in sorted {
            let from = match covered_to {
                Some(end) if end >= b => continue,
                Some(end) if end >= a => end + 1,
                _ => a,
            };
            total += u64::from(b - from) + 1;
            covered_to = Some(b);
        }
        total
    };
    assert_eq!(cpus.len() as u64, expected, "{text:?}");
});
