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

/// The nearest-rank percentile of sorted values: the value at rank
/// `ceil(q * n)` (1-based), so p50 of 1..=4 is 2 and p100 is the maximum.
pub fn nearest_rank(sorted: &[u64], q_percent: u32) -> u64 {
    let n = sorted.len() as u64;
    let rank = (u64::from(q_percent) * n).div_ceil(100).clamp(1, n);
    sorted[(rank - 1) as usize]
}

/// Summarises `values` (sorted in place). `None` when there are none.
pub fn summarize(values: &mut [u64]) -> Option<Distribution> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable();
    let sum: u128 = values.iter().map(|&v| u128::from(v)).sum();
    Some(Distribution {
        count: values.len() as u64,
        mean: sum as f64 / values.len() as f64,
        p50: nearest_rank(values, 50),
        p90: nearest_rank(values, 90),
        p99: nearest_rank(values, 99),
        max: values[values.len() - 1],
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
        assert_eq!(nearest_rank(&[7], 1), 7);
        assert!(summarize(&mut []).is_none());
    }
}
