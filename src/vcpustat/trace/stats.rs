//! Distribution summaries: count, mean, nearest-rank percentiles, max.

/// A summary of a set of tick values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Distribution {
    /// Number of values.
    pub count: u64,
    /// Arithmetic mean.
    pub mean: f64,
    /// 50th percentile (nearest rank).
    pub p50: u64,
    /// 90th percentile (nearest rank).
    pub p90: u64,
    /// 99th percentile (nearest rank).
    pub p99: u64,
    /// Largest value.
    pub max: u64,
}

/// The 0-based index of the nearest-rank `q_percent` percentile of `n`
/// sorted values: rank `ceil(q * n)` (1-based), so p50 of 1..=4 is 2.
fn rank_index(n: usize, q_percent: u32) -> usize {
    let n = n as u64;
    ((u64::from(q_percent) * n).div_ceil(100).clamp(1, n) - 1) as usize
}

/// Summarises `values` (reordered in place: partitioned, not sorted, which
/// keeps this linear). `None` when there are none.
pub fn summarize(values: &mut [u64]) -> Option<Distribution> {
    if values.is_empty() {
        return None;
    }
    let n = values.len();
    let sum: u128 = values.iter().map(|&v| u128::from(v)).sum();
    let max = values.iter().copied().max().unwrap_or(0);
    // Select the highest rank first, then the lower ones in the shrinking
    // prefix that holds every value not above it.
    let (i99, i90, i50) = (rank_index(n, 99), rank_index(n, 90), rank_index(n, 50));
    let p99 = *values.select_nth_unstable(i99).1;
    let p90 = *values[..=i99].select_nth_unstable(i90).1;
    let p50 = *values[..=i90].select_nth_unstable(i50).1;
    Some(Distribution {
        count: n as u64,
        mean: sum as f64 / n as f64,
        p50,
        p90,
        p99,
        max,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut v: Vec<u64> = (1..=10).rev().collect();
        let d = summarize(&mut v).unwrap();
        assert_eq!((d.count, d.p50, d.p90, d.p99, d.max), (10, 5, 9, 10, 10));
        assert_eq!(d.mean, 5.5);
        assert_eq!(summarize(&mut [7]).unwrap().p50, 7);
        assert_eq!(summarize(&mut [4, 3, 2, 1]).unwrap().p50, 2);
        assert!(summarize(&mut []).is_none());
        // Selection gives the same answers as sorting, duplicates included.
        let mut seed = 9u64;
        let mut values: Vec<u64> = (0..1001)
            .map(|_| {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                (seed >> 40) % 97
            })
            .collect();
        let mut sorted = values.clone();
        sorted.sort_unstable();
        let d = summarize(&mut values).unwrap();
        assert_eq!(d.p50, sorted[500]);
        assert_eq!(d.p90, sorted[900]);
        assert_eq!(d.p99, sorted[990]);
        assert_eq!(d.max, sorted[1000]);
    }
}
