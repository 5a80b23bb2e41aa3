//! A PMU's `events/` file and term lists (`config=0x1e98,threshold=1`):
//! the event-file parser, the term-list parser and perf's numbers.
#![no_main]

use hwstat::cxlstat::events::{parse_event_file, parse_number, parse_terms};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = parse_event_file(text);
    let _ = parse_terms(text);
    let _ = parse_number(text);
});
