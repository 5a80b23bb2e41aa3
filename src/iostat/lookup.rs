//! Name lookups on the per-sample path: a fast hash for short device names,
//! and hints that remember where each name was in a file read at every
//! sample.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// FNV-1a: device names are short, and SipHash costs more than the rest of
/// a lookup. (No untrusted input chooses the keys' hashes adversarially:
/// they are kernel device names.)
#[derive(Clone, Copy)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A hash map keyed by device names.
pub type NameMap<K, V> = HashMap<K, V, BuildHasherDefault<Fnv>>;

/// Where each line or listed name was found last time: kernel files keep
/// their order, so most lookups are one string comparison, not a hash.
#[derive(Debug, Default)]
pub struct PositionHints(Vec<usize>);

impl PositionHints {
    /// What was found at `pos` last time.
    pub fn get(&self, pos: usize) -> Option<usize> {
        self.0.get(pos).copied()
    }

    /// Remembers what was found at `pos`.
    pub fn set(&mut self, pos: usize, slot: usize) {
        if pos >= self.0.len() {
            self.0.resize(pos + 1, usize::MAX);
        }
        self.0[pos] = slot;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_is_fnv1a_and_hints_remember_positions() {
        let mut h = Fnv::default();
        h.write(b"a");
        assert_eq!(h.finish(), 0xaf63_dc4c_8601_ec8c);
        let mut hints = PositionHints::default();
        assert_eq!(hints.get(3), None);
        hints.set(3, 7);
        assert_eq!(hints.get(3), Some(7));
        assert_eq!(hints.get(1), Some(usize::MAX));
        let mut map: NameMap<Box<str>, u32> = NameMap::default();
        map.insert("sda".into(), 1);
        assert_eq!(map.get("sda"), Some(&1));
    }
}
