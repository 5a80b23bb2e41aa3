//! A heapsort for the one sort on iostat-rs's usual path: the devices a
//! sample finds, put in sysstat's `strcmp` order.
//!
//! Why not the standard library's `sort_unstable_by`: its quicksort with
//! its small-sort and pivot selection is 6.4 kB of code, all of which runs
//! when a sample finds many new devices (the first sample at 1,000
//! devices; at 10, only its start). Listed with the rest of the main job
//! at the start of the text (build.rs, "Hot code first"), it made that
//! block 1.3 kB larger than the three 64 kB fault-around windows a run
//! keeps: at 1,000 devices and more a `-x` run kept a fourth window, 64 kB
//! more resident memory (BENCHMARKS.md, session 20). This one is a few
//! hundred bytes, sorts in place without allocating, and makes about
//! n·log₂ n comparisons, as many as the quicksort. The standard library's
//! sort is its test oracle.

/// Sorts `items` so that no item is `less` than one before it. Not
/// stable: items that compare equal may change places.
pub fn sort_by<T: Copy>(items: &mut [T], less: impl Fn(T, T) -> bool) {
    let len = items.len();
    for root in (0..len / 2).rev() {
        sift_down(items, root, len, &less);
    }
    for end in (1..len).rev() {
        items.swap(0, end);
        sift_down(items, 0, end, &less);
    }
}

/// Moves `items[root]` down the heap `items[..end]` (a max-heap by `less`)
/// to where neither child is greater, the bottom-up way (Floyd's): down
/// the path of greater children to a leaf, one comparison a level, then
/// back up to the place of `items[root]`, usually a level or two. Half
/// the comparisons of comparing the root with both children at every
/// level, and comparing two names is most of a step.
fn sift_down<T: Copy>(items: &mut [T], root: usize, end: usize, less: &impl Fn(T, T) -> bool) {
    let mut leaf = root;
    while 2 * leaf + 2 < end {
        leaf = if less(items[2 * leaf + 1], items[2 * leaf + 2]) {
            2 * leaf + 2
        } else {
            2 * leaf + 1
        };
    }
    if 2 * leaf + 1 < end {
        leaf = 2 * leaf + 1;
    }
    let sinking = items[root];
    while leaf > root && less(items[leaf], sinking) {
        leaf = (leaf - 1) / 2;
    }
    // Each item on the path from the root to `leaf` moves up a level, and
    // the sinking one takes `leaf`.
    let mut carried = items[leaf];
    items[leaf] = sinking;
    while leaf > root {
        leaf = (leaf - 1) / 2;
        std::mem::swap(&mut carried, &mut items[leaf]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift64*), so failures repeat.
    fn numbers(seed: u64, len: usize, range: u64) -> Vec<u64> {
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x >> 12;
                x ^= x << 25;
                x ^= x >> 27;
                x.wrapping_mul(0x2545_f491_4f6c_dd1d) % range
            })
            .collect()
    }

    #[test]
    fn sorts_as_the_standard_library_does() {
        for len in (0..70).chain([255, 256, 257, 1000, 4099]) {
            for (seed, range) in [(1, 3), (2, 1000), (3, u64::MAX)] {
                let input = numbers(seed + len as u64, len, range);
                let mut ours = input.clone();
                sort_by(&mut ours, |a, b| a < b);
                let mut oracle = input.clone();
                oracle.sort_unstable();
                assert_eq!(
                    ours, oracle,
                    "len {len}, seed {seed}, range {range}: {input:?}"
                );
            }
        }
    }

    #[test]
    fn sorts_runs_already_in_order_and_reversed() {
        let ascending: Vec<u32> = (0..500).collect();
        let mut items = ascending.clone();
        sort_by(&mut items, |a, b| a < b);
        assert_eq!(items, ascending);
        items.reverse();
        sort_by(&mut items, |a, b| a < b);
        assert_eq!(items, ascending);
    }

    #[test]
    fn sorts_indices_by_the_names_they_point_to() {
        let names = [
            "sdb", "nvme0n1", "sda", "dm-0", "sda1", "nvme10n1", "nvme1n1",
        ];
        let mut order: Vec<usize> = (0..names.len()).collect();
        sort_by(&mut order, |a, b| names[a] < names[b]);
        let sorted: Vec<&str> = order.iter().map(|&i| names[i]).collect();
        assert_eq!(
            sorted,
            [
                "dm-0", "nvme0n1", "nvme10n1", "nvme1n1", "sda", "sda1", "sdb"
            ]
        );
    }
}
