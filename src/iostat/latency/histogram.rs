//! Log-linear histograms: 16 equal sub-buckets per power of two, so every
//! bucket is at most 1/16 (6.25 %) of its lower bound wide, and values
//! below 32 are exact. Used for latencies in nanoseconds and for queue
//! depths weighted by the nanoseconds spent at each depth.

/// Sub-buckets per power of two, as a power of two.
const SUB_BITS: u32 = 4;
/// Sub-buckets per power of two.
const SUB: u64 = 1 << SUB_BITS;

/// The bucket index of `value`.
pub const fn bucket_of(value: u64) -> usize {
    if value < 2 * SUB {
        return value as usize;
    }
    let exp = 63 - value.leading_zeros();
    let sub = (value >> (exp - SUB_BITS)) & (SUB - 1);
    ((exp - SUB_BITS + 1) as u64 * SUB + sub) as usize
}

/// The last bucket, which holds `u64::MAX`.
pub const LAST_BUCKET: usize = bucket_of(u64::MAX);

/// The smallest value in bucket `index` (`u64::MAX` past [`LAST_BUCKET`]).
pub fn bucket_low(index: usize) -> u64 {
    if index > LAST_BUCKET {
        return u64::MAX;
    }
    let index = index as u64;
    if index < 2 * SUB {
        return index;
    }
    let exp = index / SUB + u64::from(SUB_BITS) - 1;
    (SUB + index % SUB) << (exp - u64::from(SUB_BITS))
}

/// The largest value in bucket `index`.
pub fn bucket_high(index: usize) -> u64 {
    if index >= LAST_BUCKET {
        return u64::MAX;
    }
    bucket_low(index + 1) - 1
}

/// Counts (or weights) per bucket, their total, the sum of the values
/// (each times its weight) and the largest value seen.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Histogram {
    counts: Vec<u64>,
    /// The sum of all counts.
    pub total: u64,
    /// The sum of every value times its weight (exact; saturates at 2^64,
    /// some 584 years of latency in one interval).
    pub sum: u64,
    /// The largest value added (exact).
    pub max: u64,
}

impl Histogram {
    /// Adds `weight` at `value`.
    pub fn add(&mut self, value: u64, weight: u64) {
        if weight == 0 {
            return;
        }
        let b = bucket_of(value);
        if self.counts.len() <= b {
            self.counts.resize(b + 1, 0);
        }
        self.counts[b] += weight;
        self.total += weight;
        self.sum = self.sum.saturating_add(value.saturating_mul(weight));
        self.max = self.max.max(value);
    }

    /// The non-empty buckets as `(index, count)`, in order.
    pub fn buckets(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|&(_, &c)| c > 0)
            .map(|(i, &c)| (i, c))
    }

    /// Rebuilds a histogram from its non-empty buckets, in increasing
    /// order, its sum and its max (a recording's), as
    /// [`Histogram::buckets`] gives them; `None` for anything else, which
    /// no histogram would have written: an empty, repeated or unknown
    /// bucket, a total past 2^64, a max outside the last bucket (0 without
    /// any), a sum outside what the buckets' bounds allow.
    pub fn from_parts(buckets: &[(usize, u64)], sum: u64, max: u64) -> Option<Histogram> {
        let mut h = Histogram::default();
        let (mut low, mut high) = (0u64, 0u64);
        for &(i, c) in buckets {
            if c == 0 || i < h.counts.len() || i > LAST_BUCKET {
                return None;
            }
            h.counts.resize(i + 1, 0);
            h.counts[i] = c;
            h.total = h.total.checked_add(c)?;
            // As `add` sums: saturating at 2^64.
            low = low.saturating_add(c.saturating_mul(bucket_low(i)));
            high = high.saturating_add(c.saturating_mul(bucket_high(i)));
        }
        let last = buckets.last().map_or(0, |&(i, _)| i);
        if bucket_of(max) != last || !(low..=high).contains(&sum) {
            return None;
        }
        h.sum = sum;
        h.max = max;
        Some(h)
    }

    /// The bucket holding the nearest-rank `q` quantile (0 < q ≤ 1): the
    /// first bucket where the running count reaches ⌈q × total⌉.
    pub fn quantile_bucket(&self, q: f64) -> Option<usize> {
        if self.total == 0 {
            return None;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        self.buckets().find_map(|(i, c)| {
            seen += c;
            (seen >= rank).then_some(i)
        })
    }

    /// The `q` quantile as an upper bound: its bucket's largest value, or
    /// the maximum when that is smaller (never below the true quantile;
    /// exact below 32, for queue depths).
    pub fn quantile_high(&self, q: f64) -> Option<u64> {
        self.quantile_bucket(q)
            .map(|i| bucket_high(i).min(self.max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_values_are_exact_and_buckets_are_contiguous() {
        for v in 0..32 {
            assert_eq!(bucket_of(v), v as usize);
        }
        // 32..=33 share a bucket (width 2), 2 ms lies in [1_966_080, 2_031_615].
        assert_eq!(bucket_of(32), bucket_of(33));
        assert_ne!(bucket_of(33), bucket_of(34));
        let b = bucket_of(2_000_000);
        assert_eq!((bucket_low(b), bucket_high(b)), (1_966_080, 2_031_615));
        assert_eq!(LAST_BUCKET, 975);
        assert_eq!(bucket_high(LAST_BUCKET), u64::MAX);
        assert_eq!(bucket_low(LAST_BUCKET), 31 << 59);
        for i in 0..LAST_BUCKET {
            assert_eq!(bucket_high(i) + 1, bucket_low(i + 1), "bucket {i}");
            assert_eq!(bucket_of(bucket_low(i)), i);
            assert_eq!(bucket_of(bucket_high(i)), i);
            let width = bucket_high(i) - bucket_low(i) + 1;
            assert!(width * 16 <= bucket_low(i).max(16), "bucket {i} too wide");
        }
    }

    #[test]
    fn nearest_rank_quantiles() {
        let mut h = Histogram::default();
        for _ in 0..90 {
            h.add(2_000_000, 1);
        }
        for _ in 0..10 {
            h.add(20_000_000, 1);
        }
        assert_eq!(h.total, 100);
        // rank 50 and rank 90 are 2 ms; rank 91 (q 0.91) and 99 are 20 ms.
        assert_eq!(h.quantile_high(0.5), Some(2_031_615));
        assert_eq!(h.quantile_high(0.9), Some(2_031_615));
        assert_eq!(h.quantile_high(0.99), Some(20_000_000), "capped at max");
        assert_eq!(Histogram::default().quantile_high(0.5), None);
        let parts: Vec<_> = h.buckets().collect();
        assert_eq!(h.sum, 90 * 2_000_000 + 10 * 20_000_000);
        assert_eq!(Histogram::from_parts(&parts, h.sum, h.max), Some(h));
        assert_eq!(Histogram::from_parts(&[(3, 0)], 0, 3), None, "empty bucket");
        assert_eq!(
            Histogram::from_parts(&[(3, 1), (3, 1)], 6, 3),
            None,
            "repeated"
        );
        assert_eq!(
            Histogram::from_parts(&[(4, 1), (3, 1)], 7, 4),
            None,
            "unsorted"
        );
        let huge = [(3, u64::MAX), (4, 1)];
        assert_eq!(
            Histogram::from_parts(&huge, u64::MAX, 4),
            None,
            "total past 2^64"
        );
        assert_eq!(Histogram::from_parts(&[], 0, 0), Some(Histogram::default()));
        assert_eq!(Histogram::from_parts(&[], 0, 7), None, "a max, no bucket");
        assert_eq!(Histogram::from_parts(&[], 7, 0), None, "a sum, no bucket");
        // 90 at 2 ms and 10 at 20 ms, forged.
        let parts = [(bucket_of(2_000_000), 90), (bucket_of(20_000_000), 10)];
        let sum = 90 * 2_000_000 + 10 * 20_000_000;
        assert!(Histogram::from_parts(&parts, sum, 20_000_000).is_some());
        assert_eq!(
            Histogram::from_parts(&parts, sum, 5),
            None,
            "max below the last bucket"
        );
        assert_eq!(
            Histogram::from_parts(&parts, sum, 40_000_000),
            None,
            "max above it"
        );
        // Bounds: 90 × 1,966,080 + 10 × 19,922,944 up to 90 × 2,031,615
        // + 10 × 20,971,519 (20 ms lies in (16 + 3) × 2^20 ..= 20 × 2^20 - 1).
        let (low, high) = (376_176_640, 392_560_540);
        for ok in [low, high] {
            assert!(Histogram::from_parts(&parts, ok, 20_000_000).is_some());
        }
        for bad in [0, low - 1, high + 1, u64::MAX] {
            assert_eq!(Histogram::from_parts(&parts, bad, 20_000_000), None);
        }
        // A sum that saturated at 2^64 (as `add` leaves it).
        let top = [(LAST_BUCKET, 2)];
        assert!(Histogram::from_parts(&top, u64::MAX, u64::MAX).is_some());
        assert_eq!(
            Histogram::from_parts(&[(LAST_BUCKET + 1, 1)], u64::MAX, u64::MAX),
            None,
            "past the last bucket"
        );
    }
}
