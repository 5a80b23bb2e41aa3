//! The generic parser of a PMU's `format/` files (`config:0-31`,
//! `config1:18`, `config:0-7,32-35`) and the writing of field values into
//! the `perf_event_attr` config words.

use std::fmt;

use crate::common::excerpt::excerpt;

/// Which `perf_event_attr` config word a format field lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ConfigWord {
    /// `config`.
    Config,
    /// `config1`.
    Config1,
    /// `config2`.
    Config2,
    /// `config3`.
    Config3,
}

impl ConfigWord {
    /// Every word, in `perf_event_attr` order.
    pub const ALL: [ConfigWord; 4] = [
        ConfigWord::Config,
        ConfigWord::Config1,
        ConfigWord::Config2,
        ConfigWord::Config3,
    ];

    /// The word's name as sysfs and perf spell it.
    pub fn name(self) -> &'static str {
        match self {
            ConfigWord::Config => "config",
            ConfigWord::Config1 => "config1",
            ConfigWord::Config2 => "config2",
            ConfigWord::Config3 => "config3",
        }
    }

    /// The word called `name`, if any.
    pub fn from_name(name: &str) -> Option<ConfigWord> {
        ConfigWord::ALL.into_iter().find(|w| w.name() == name)
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The event-selecting part of a `perf_event_attr`: its PMU type and config words.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventAttr {
    /// `type`, the PMU's dynamic type number.
    pub perf_type: u32,
    /// `config`, `config1`, `config2`, `config3`.
    pub words: [u64; 4],
}

impl EventAttr {
    /// The value of one config word.
    pub fn word(&self, word: ConfigWord) -> u64 {
        self.words[word.index()]
    }

    /// Sets one whole config word.
    pub fn set_word(&mut self, word: ConfigWord, value: u64) {
        self.words[word.index()] = value;
    }
}

/// One format field: a name and the bits it occupies in one config word.
/// The value's bits fill the field's bits from the lowest up, whatever
/// order the file lists its ranges in, as perf's `pmu_format_value` does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Field name (the file name under `format/`).
    pub name: String,
    /// The config word it lives in.
    pub word: ConfigWord,
    /// Inclusive bit ranges `(low, high)`, lowest first.
    pub ranges: Vec<(u8, u8)>,
}

/// Why a format file or a field value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    /// The file's text is not `configN:lo-hi[,lo-hi...]`.
    #[error("expected configN:LOW-HIGH[,LOW-HIGH...] with bits 0-63, found {}", excerpt(.0))]
    Syntax(String),
    /// A value does not fit the field's bits.
    #[error("value {value:#x} is too wide for {name} ({bits} bits, at most {max:#x})")]
    TooWide {
        /// Field name.
        name: String,
        /// The value given.
        value: u64,
        /// Field width.
        bits: u32,
        /// Largest value that fits.
        max: u64,
    },
}

impl Field {
    /// Parses the text of `format/<name>`.
    pub fn parse(name: &str, text: &str) -> Result<Field, FormatError> {
        let text = text.trim();
        let syntax = || FormatError::Syntax(text.to_string());
        let (word, ranges) = text.split_once(':').ok_or_else(syntax)?;
        let word = ConfigWord::from_name(word.trim()).ok_or_else(syntax)?;
        let mut parsed = Vec::new();
        let mut used = 0u64;
        for range in ranges.split(',') {
            let (lo, hi) = match range.trim().split_once('-') {
                Some((lo, hi)) => (lo.trim(), hi.trim()),
                None => (range.trim(), range.trim()),
            };
            let lo: u8 = lo.parse().map_err(|_| syntax())?;
            let hi: u8 = hi.parse().map_err(|_| syntax())?;
            if lo > hi || hi > 63 {
                return Err(syntax());
            }
            let bits = span_mask(lo, hi);
            if used & bits != 0 {
                return Err(syntax());
            }
            used |= bits;
            parsed.push((lo, hi));
        }
        parsed.sort_unstable();
        Ok(Field {
            name: name.to_string(),
            word,
            ranges: parsed,
        })
    }

    /// The number of value bits the field holds.
    pub fn bits(&self) -> u32 {
        self.ranges
            .iter()
            .map(|&(lo, hi)| (hi - lo + 1) as u32)
            .sum()
    }

    /// The largest value the field holds.
    pub fn max_value(&self) -> u64 {
        match self.bits() {
            64 => u64::MAX,
            bits => (1u64 << bits) - 1,
        }
    }

    /// Writes `value` into the field's bits of `attr`, replacing what was
    /// there. A value wider than the field is refused.
    pub fn insert(&self, attr: &mut EventAttr, value: u64) -> Result<(), FormatError> {
        if value > self.max_value() {
            return Err(FormatError::TooWide {
                name: self.name.clone(),
                value,
                bits: self.bits(),
                max: self.max_value(),
            });
        }
        let mut word = attr.word(self.word);
        let mut rest = value;
        for &(lo, hi) in &self.ranges {
            let width = (hi - lo + 1) as u32;
            let part = if width == 64 {
                rest
            } else {
                rest & ((1u64 << width) - 1)
            };
            word = (word & !span_mask(lo, hi)) | (part << lo);
            rest = rest.checked_shr(width).unwrap_or(0);
        }
        attr.set_word(self.word, word);
        Ok(())
    }

    /// Reads the field's value back out of `attr`.
    pub fn extract(&self, attr: &EventAttr) -> u64 {
        let word = attr.word(self.word);
        let mut value = 0u64;
        let mut shift = 0u32;
        for &(lo, hi) in &self.ranges {
            let part = (word & span_mask(lo, hi)) >> lo;
            value |= part.checked_shl(shift).unwrap_or(0);
            shift += (hi - lo + 1) as u32;
        }
        value
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:", self.word.name())?;
        for (i, &(lo, hi)) in self.ranges.iter().enumerate() {
            let sep = if i > 0 { "," } else { "" };
            if lo == hi {
                write!(f, "{sep}{lo}")?;
            } else {
                write!(f, "{sep}{lo}-{hi}")?;
            }
        }
        Ok(())
    }
}

/// Bits `lo..=hi` set.
fn span_mask(lo: u8, hi: u8) -> u64 {
    let top = if hi == 63 {
        u64::MAX
    } else {
        (1u64 << (hi + 1)) - 1
    };
    top & !((1u64 << lo) - 1)
}

/// A PMU's format: every field from its `format/` directory, sorted by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Format {
    /// The fields.
    pub fields: Vec<Field>,
}

impl Format {
    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The names a term may use on this PMU: the fields, then the raw config words.
    pub fn term_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.fields.iter().map(|f| f.name.clone()).collect();
        names.extend(ConfigWord::ALL.iter().map(|w| w.name().to_string()));
        names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_cxl_format_files() {
        let mask = Field::parse("mask", "config:0-31\n").unwrap();
        assert_eq!(
            (mask.word, mask.ranges.clone(), mask.bits()),
            (ConfigWord::Config, vec![(0, 31)], 32)
        );
        let edge = Field::parse("edge", "config1:17\n").unwrap();
        assert_eq!(
            (edge.word, edge.ranges.clone(), edge.bits()),
            (ConfigWord::Config1, vec![(17, 17)], 1)
        );
        let vid = Field::parse("vid", "config:48-63").unwrap();
        assert_eq!(vid.max_value(), 0xffff);
        assert_eq!(vid.to_string(), "config:48-63");
        assert_eq!(
            Field::parse("x", "config2:0-63").unwrap().max_value(),
            u64::MAX
        );
    }

    #[test]
    fn refuses_malformed_formats() {
        for bad in [
            "",
            "config",
            "config:",
            "config:8-4",
            "config:0-64",
            "conf:1",
            "config:a-b",
            "config:0-7,4-9",
        ] {
            assert!(Field::parse("x", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn multi_range_fields_spread_value_bits_low_range_first() {
        // AMD-style event select: low 8 bits in 0-7, next 4 bits in 32-35.
        let f = Field::parse("event", "config:0-7,32-35").unwrap();
        assert_eq!(f.bits(), 12);
        let mut attr = EventAttr::default();
        f.insert(&mut attr, 0xabc).unwrap();
        assert_eq!(attr.word(ConfigWord::Config), 0x0000_000a_0000_00bc);
        assert_eq!(f.extract(&attr), 0xabc);
        assert!(matches!(
            f.insert(&mut attr, 0x1000),
            Err(FormatError::TooWide { bits: 12, .. })
        ));
    }

    #[test]
    fn ranges_listed_high_first_still_take_the_low_value_bits_low() {
        // perf (pmu_format_value) walks the field's bits upwards: the
        // value's low byte lands in bits 48-55 here, not in 56-63.
        let f = Field::parse("vid", "config:56-63,48-55").unwrap();
        let mut attr = EventAttr::default();
        f.insert(&mut attr, 0x1234).unwrap();
        assert_eq!(attr.word(ConfigWord::Config), 0x1234_0000_0000_0000);
        assert_eq!(f.extract(&attr), 0x1234);
        assert_eq!(f.to_string(), "config:48-55,56-63");
        let split = Field::parse("event", "config:32-35,0-7").unwrap();
        let mut attr = EventAttr::default();
        split.insert(&mut attr, 0xabc).unwrap();
        assert_eq!(attr.word(ConfigWord::Config), 0x0000_000a_0000_00bc);
    }

    #[test]
    fn insert_replaces_only_the_fields_bits() {
        let gid = Field::parse("gid", "config:32-47").unwrap();
        let mut attr = EventAttr {
            perf_type: 0,
            words: [0x1e98_0010_0000_0008, 0, 0, 0],
        };
        gid.insert(&mut attr, 0x12).unwrap();
        assert_eq!(attr.words[0], 0x1e98_0012_0000_0008);
        let err = gid.insert(&mut attr, 0x1_0000).unwrap_err().to_string();
        assert!(err.contains("too wide for gid (16 bits"), "{err}");
    }
}
