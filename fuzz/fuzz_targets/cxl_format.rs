//! A PMU's `format/` file (`config:0-7,32-35`): the parser, and for every
//! field it accepts, that writing a value and reading it back agree, that
//! the write touches exactly `bits()` bits, and that the field's text form
//! parses back to the same field. Input: NAME NUL TEXT NUL 8-byte value.
#![no_main]

use hwstat::cxlstat::format::{ConfigWord, EventAttr, Field};
use hwstat_fuzz::parts;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let p = parts(data, 3);
    let (Ok(name), Ok(text)) = (std::str::from_utf8(p[0]), std::str::from_utf8(p[1])) else {
        return;
    };
    let Ok(field) = Field::parse(name, text) else {
        return;
    };
    let mut raw = [0u8; 8];
    let n = p[2].len().min(8);
    raw[..n].copy_from_slice(&p[2][..n]);
    let value = u64::from_le_bytes(raw) & field.max_value();
    let mut zeros = EventAttr::default();
    let mut ones = EventAttr {
        perf_type: 0,
        words: [u64::MAX; 4],
    };
    field
        .insert(&mut zeros, value)
        .expect("a value within max_value fits");
    field
        .insert(&mut ones, value)
        .expect("a value within max_value fits");
    assert_eq!(field.extract(&zeros), value);
    assert_eq!(field.extract(&ones), value);
    let touched: u32 = ConfigWord::ALL
        .iter()
        .map(|&w| (zeros.word(w) ^ ones.word(w)).count_zeros())
        .sum();
    assert_eq!(touched, field.bits(), "{field}");
    if field.max_value() < u64::MAX {
        assert!(field.insert(&mut zeros, field.max_value() + 1).is_err());
    }
    assert_eq!(Field::parse(name, &field.to_string()).ok(), Some(field));
});
