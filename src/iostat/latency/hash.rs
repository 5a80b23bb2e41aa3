//! The tracker's hash for its in-flight and per-device tables: one folded
//! 64×64→128-bit multiply per integer written, keyed by a per-process
//! random seed. The keys are a `dev_t` and a sector, written once for each
//! block tracepoint event; std's SipHash-1-3 was over half of the
//! tracker's time per request (`cargo bench --bench latency_tracker`:
//! 88 ns per request with it, see BENCHMARKS.md). The seed comes from
//! std's own random keys, so a local user who chooses the sectors of their
//! I/O cannot aim at one bucket without knowing it; and the in-flight table
//! only ever holds the requests in flight.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

/// Odd constants from the digits of π, spreading the seed and the input
/// across the product.
const MUL_A: u64 = 0x243f_6a88_85a3_08d3;
const MUL_B: u64 = 0x1319_8a2e_0370_7344 | 1;

/// Builds [`FoldHasher`]s with one random seed.
#[derive(Debug, Clone, Copy)]
pub struct FoldHash {
    seed: u64,
}

impl Default for FoldHash {
    fn default() -> FoldHash {
        FoldHash {
            seed: RandomState::new().hash_one(0x6877_7374_6174u64),
        }
    }
}

impl BuildHasher for FoldHash {
    type Hasher = FoldHasher;

    fn build_hasher(&self) -> FoldHasher {
        FoldHasher { state: self.seed }
    }
}

/// The hasher of [`FoldHash`].
#[derive(Debug, Clone, Copy)]
pub struct FoldHasher {
    state: u64,
}

fn fold_multiply(a: u64, b: u64) -> u64 {
    let full = u128::from(a) * u128::from(b);
    (full as u64) ^ ((full >> 64) as u64)
}

impl Hasher for FoldHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.state = fold_multiply(self.state ^ n, MUL_A);
    }

    fn finish(&self) -> u64 {
        fold_multiply(self.state, MUL_B)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn hash(b: &FoldHash, key: (u32, u64)) -> u64 {
        b.hash_one(key)
    }

    #[test]
    fn sectors_of_one_device_spread_over_low_and_high_bits() {
        let b = FoldHash { seed: 1 };
        // 4 KiB-aligned sectors, what random 4 KiB I/O gives: every hash
        // distinct, and both the low bits (the bucket) and the top 7 bits
        // (hashbrown's tag) take many values.
        let hashes: Vec<u64> = (0..4096u64).map(|i| hash(&b, (7 << 20, i * 8))).collect();
        assert_eq!(hashes.iter().collect::<HashSet<_>>().len(), 4096);
        let low: HashSet<u64> = hashes.iter().map(|h| h & 0xff).collect();
        let top: HashSet<u64> = hashes.iter().map(|h| h >> 57).collect();
        assert!(low.len() > 200, "{} of 256 low bytes", low.len());
        assert!(top.len() > 100, "{} of 128 tags", top.len());
    }

    #[test]
    fn the_seed_changes_every_hash() {
        let (a, b) = (FoldHash { seed: 1 }, FoldHash { seed: 2 });
        let same = (0..1000u64)
            .filter(|&i| hash(&a, (8 << 20, i)) == hash(&b, (8 << 20, i)))
            .count();
        assert_eq!(same, 0);
        assert_ne!(FoldHash::default().seed, FoldHash::default().seed);
    }
}
