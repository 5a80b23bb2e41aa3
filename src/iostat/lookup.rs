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

/// The FNV-1a hash of a name.
fn hash_name(name: &str) -> u64 {
    let mut hasher = Fnv::default();
    hasher.write(name.as_bytes());
    hasher.finish()
}

/// Positions in a table, found by the name at each position. A slot holds
/// only the position (4 bytes): the names stay in the table, read through
/// `name_at`. A `NameMap<Rc<str>, usize>` slot was 24 bytes, 330 kB more at
/// 10,000 devices (BENCHMARKS.md, "Hot code first").
#[derive(Debug, Default)]
pub struct NameIndex(hashbrown::HashTable<u32>);

impl NameIndex {
    /// The position of `name`; `name_at` gives the name at a position.
    pub fn get<'a>(&self, name: &str, name_at: impl Fn(usize) -> &'a str) -> Option<usize> {
        self.0
            .find(hash_name(name), |&pos| name_at(pos as usize) == name)
            .map(|&pos| pos as usize)
    }

    /// Records that `name`, not in the index yet, is at `position`.
    pub fn insert<'a>(&mut self, name: &str, position: usize, name_at: impl Fn(usize) -> &'a str) {
        // One entry per device name: 2^32 of them cannot be listed, let
        // alone held in memory.
        let position = u32::try_from(position).expect("fewer than 2^32 names");
        self.0.insert_unique(hash_name(name), position, |&pos| {
            hash_name(name_at(pos as usize))
        });
    }
}

/// Where each line or listed name was found last time: kernel files keep
/// their order, so most lookups are one string comparison, not a hash.
/// Positions are kept as `u32` (half the memory of `usize`: 40 kB at 10,000
/// devices), `u32::MAX` for none.
#[derive(Debug, Default)]
pub struct PositionHints(Vec<u32>);

impl PositionHints {
    /// What was found at `pos` last time.
    pub fn get(&self, pos: usize) -> Option<usize> {
        self.0
            .get(pos)
            .filter(|&&slot| slot != u32::MAX)
            .map(|&slot| slot as usize)
    }

    /// Remembers what was found at `pos` (a slot past `u32` is not kept).
    pub fn set(&mut self, pos: usize, slot: usize) {
        if pos >= self.0.len() {
            self.0.resize(pos + 1, u32::MAX);
        }
        self.0[pos] = u32::try_from(slot).unwrap_or(u32::MAX);
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
        assert_eq!(hints.get(1), None);
        hints.set(1, usize::MAX);
        assert_eq!(hints.get(1), None);
        let mut map: NameMap<Box<str>, u32> = NameMap::default();
        map.insert("sda".into(), 1);
        assert_eq!(map.get("sda"), Some(&1));
    }

    #[test]
    fn the_name_index_finds_every_name_across_growth() {
        let names: Vec<String> = (0..5000).map(|i| format!("nvme{i}n1")).collect();
        let mut index = NameIndex::default();
        for (pos, name) in names.iter().enumerate() {
            assert_eq!(index.get(name, |p| &names[p]), None);
            index.insert(name, pos, |p| &names[p]);
        }
        for (pos, name) in names.iter().enumerate() {
            assert_eq!(index.get(name, |p| &names[p]), Some(pos));
        }
        assert_eq!(index.get("nvme5000n1", |p| &names[p]), None);
        assert_eq!(index.get("", |p| &names[p]), None);
    }
}
