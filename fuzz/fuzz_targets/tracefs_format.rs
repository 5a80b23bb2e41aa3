//! A tracepoint's tracefs `format` file: every field the parser returns
//! was named on a `field:` line of the text, and reads as many bytes as
//! its size from a record (the input itself) long enough to hold it.
#![no_main]

use hwstat::common::tracefs::parse_format;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for (name, field) in parse_format(text) {
        assert!(text.contains(name.as_str()), "{name:?} not in the text");
        if let Some(bytes) = field.bytes(data) {
            assert_eq!(bytes.len(), field.size, "{name:?}");
        }
    }
});
