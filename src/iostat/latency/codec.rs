//! One interval's histograms as the list of numbers a recording stores
//! (`Source::values`), and back: what makes `--replay` print the latency
//! columns the live run printed.
//!
//! Layout: `lost, unmatched, devices`, then per device `major, minor` and
//! five histograms (read, write, discard, flush latency, then queue depth),
//! each `max, sum, buckets` followed by `buckets` pairs `index, count`;
//! then `undelivered` devices, each `major, minor, count` (absent from
//! recordings made before it was counted, which read as none); then
//! `cpus_late`; last, the devices of `unmatched_by_device`, each `major,
//! minor, count`. Recordings made before the unmatched completions were
//! counted per device end after `cpus_late`, which they write only when
//! not 0 (absent, it reads as 0).

use super::histogram::{Histogram, LAST_BUCKET};
use super::tracker::{DeviceHistograms, OPS};

/// The deepest queue a recording may hold: each request in flight takes
/// the tracker some 50 bytes, so more than 2^32 - 1 (200 GiB of them)
/// would come from no real run.
pub const MAX_DEPTH: u64 = u32::MAX as u64;

/// One interval's measurements.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Interval {
    /// Samples the kernel dropped (ring buffer full): histograms are short.
    pub lost: u64,
    /// Completions whose issue was not seen, or is not known (a lost
    /// completion at their sector), of every device.
    pub unmatched: u64,
    /// The same per `(major, minor)` of a disk or a partition, in order;
    /// devices with none are left out. `None` in a recording made before
    /// they were counted per device (see [`Interval::unmatched_on`]).
    pub unmatched_by_device: Option<Counts>,
    /// Per `(major, minor)` of a disk or a partition, in order, the
    /// requests the kernel no longer counts in flight whose completion
    /// never reached iostat-rs (see
    /// [`super::tracker::Tracker::trim_in_flight`]): the histograms miss
    /// them. Devices with none are left out.
    pub undelivered: Counts,
    /// Per `(major, minor)`, in order.
    pub devices: Vec<((u32, u32), DeviceHistograms)>,
    /// The CPUs online but not traced for part of the interval (come
    /// online, or back, before their rings were opened): the histograms
    /// may miss requests of theirs.
    pub cpus_late: u64,
}

impl Interval {
    /// The histograms of `(major, minor)`, if it had any.
    pub fn device(&self, devnum: (u32, u32)) -> Option<&DeviceHistograms> {
        self.devices
            .binary_search_by_key(&devnum, |&(d, _)| d)
            .ok()
            .map(|i| &self.devices[i].1)
    }

    /// How many of `(major, minor)`'s completions never arrived.
    pub fn undelivered_on(&self, devnum: (u32, u32)) -> u64 {
        count_on(&self.undelivered, devnum)
    }

    /// How many of `(major, minor)`'s completions were unmatched; in a
    /// recording made before they were counted per device, those of every
    /// device, as its reports showed them.
    pub fn unmatched_on(&self, devnum: (u32, u32)) -> u64 {
        match &self.unmatched_by_device {
            Some(by_device) => count_on(by_device, devnum),
            None => self.unmatched,
        }
    }

    /// The numbers a recording stores.
    pub fn encode(&self) -> Vec<u64> {
        let mut out = vec![self.lost, self.unmatched, self.devices.len() as u64];
        for ((major, minor), h) in &self.devices {
            out.extend([u64::from(*major), u64::from(*minor)]);
            for hist in h.latency.iter().chain([&h.depth]) {
                let buckets: Vec<(usize, u64)> = hist.buckets().collect();
                out.extend([hist.max, hist.sum, buckets.len() as u64]);
                for (i, c) in buckets {
                    out.extend([i as u64, c]);
                }
            }
        }
        encode_counts(&self.undelivered, &mut out);
        match &self.unmatched_by_device {
            Some(by_device) => {
                out.push(self.cpus_late);
                encode_counts(by_device, &mut out);
            }
            // The layout of recordings made before.
            None if self.cpus_late > 0 => out.push(self.cpus_late),
            None => {}
        }
        out
    }

    /// Reads what [`Interval::encode`] wrote; `None` when the numbers are
    /// not such a list (a foreign or damaged recording), or hold what no
    /// tracker would have measured: an inconsistent histogram (see
    /// [`Histogram::from_parts`]) or a queue deeper than [`MAX_DEPTH`].
    pub fn decode(values: &[u64]) -> Option<Interval> {
        let mut it = values.iter().copied();
        let mut next = || it.next();
        let lost = next()?;
        let unmatched = next()?;
        let count = next()?;
        let mut devices = Vec::new();
        for _ in 0..count {
            let major = u32::try_from(next()?).ok()?;
            let minor = u32::try_from(next()?).ok()?;
            let mut hists: Vec<Histogram> = Vec::with_capacity(OPS + 1);
            for _ in 0..=OPS {
                let max = next()?;
                let sum = next()?;
                let n = next()?;
                let mut buckets = Vec::new();
                for _ in 0..n {
                    let i = next()?;
                    if i > LAST_BUCKET as u64 {
                        return None;
                    }
                    buckets.push((i as usize, next()?));
                }
                hists.push(Histogram::from_parts(&buckets, sum, max)?);
            }
            let depth = hists.pop().filter(|d| d.max <= MAX_DEPTH)?;
            let latency: [Histogram; OPS] = hists.try_into().ok()?;
            devices.push(((major, minor), DeviceHistograms { latency, depth }));
        }
        let undelivered = decode_counts(next().unwrap_or(0), &mut next, |_| true)?;
        let (cpus_late, unmatched_by_device) = match (next(), next()) {
            (None, _) => (0, None),
            // Before the per-device counts, written only when not 0: a 0
            // alone is no list `encode` writes.
            (Some(0), None) => return None,
            (Some(late), None) => (late, None),
            (Some(late), Some(count)) => {
                // Only devices with some, none above every device's.
                let valid = |n: u64| n > 0 && n <= unmatched;
                (late, Some(decode_counts(count, &mut next, valid)?))
            }
        };
        let in_order = increasing(&devices)
            && increasing(&undelivered)
            && unmatched_by_device.as_deref().is_none_or(increasing);
        if next().is_some() || !in_order {
            return None;
        }
        Some(Interval {
            lost,
            unmatched,
            unmatched_by_device,
            undelivered,
            devices,
            cpus_late,
        })
    }
}

/// A count per `(major, minor)`, in order, as an interval lists its
/// undelivered and unmatched completions.
pub type Counts = Vec<((u32, u32), u64)>;

/// `devnum`'s count in `counts`, 0 if not listed.
fn count_on(counts: &Counts, devnum: (u32, u32)) -> u64 {
    counts
        .binary_search_by_key(&devnum, |&(d, _)| d)
        .map_or(0, |i| counts[i].1)
}

/// Appends `counts` as a recording keeps them: their number, then
/// `major, minor, count` each.
fn encode_counts(counts: &Counts, out: &mut Vec<u64>) {
    out.push(counts.len() as u64);
    for &((major, minor), count) in counts {
        out.extend([u64::from(major), u64::from(minor), count]);
    }
}

/// Reads `len` counts as [`encode_counts`] wrote them from `next`; `None`
/// if the numbers end first, a device number is out of range, or a count
/// is not `valid`.
fn decode_counts(
    len: u64,
    next: &mut impl FnMut() -> Option<u64>,
    valid: impl Fn(u64) -> bool,
) -> Option<Counts> {
    let mut counts = Vec::new();
    for _ in 0..len {
        let major = u32::try_from(next()?).ok()?;
        let minor = u32::try_from(next()?).ok()?;
        counts.push(((major, minor), next().filter(|&n| valid(n))?));
    }
    Some(counts)
}

/// Whether each device of `list` comes after the one before it: in order,
/// none twice.
fn increasing<T>(list: &[((u32, u32), T)]) -> bool {
    list.windows(2).all(|w| w[0].0 < w[1].0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iostat::latency::histogram::bucket_of;

    #[test]
    fn unmatched_completions_per_device_follow_cpus_late() {
        let i = Interval {
            unmatched: 3,
            unmatched_by_device: Some(vec![((8, 0), 3), ((8, 1), 2)]),
            ..Interval::default()
        };
        let v = i.encode();
        assert_eq!(v, [0, 3, 0, 0, 0, 2, 8, 0, 3, 8, 1, 2]);
        assert_eq!(Interval::decode(&v), Some(i.clone()));
        let on = |devnum| i.unmatched_on(devnum);
        assert_eq!((on((8, 0)), on((8, 1)), on((9, 0))), (3, 2, 0));
        // None on any device: the list is still written, empty.
        let none = Interval {
            unmatched_by_device: Some(vec![]),
            ..Interval::default()
        };
        assert_eq!(none.encode(), [0, 0, 0, 0, 0, 0]);
        assert_eq!(Interval::decode(&none.encode()), Some(none));
        // Recorded before: each device is given every device's count, as
        // those recordings' reports showed it.
        let older = Interval::decode(&[0, 3, 0, 0]).expect("the older layout");
        assert_eq!(older.unmatched_by_device, None);
        assert_eq!(older.unmatched_on((9, 0)), 3);
        for (numbers, why) in [
            (&[0, 3, 0, 0, 0, 1, 8, 0, 0][..], "a device with none"),
            (&[0, 3, 0, 0, 0, 1, 8, 0, 4], "more than every device's"),
            (&[0, 3, 0, 0, 0, 2, 8, 1, 1, 8, 0, 1], "out of order"),
            (&[0, 3, 0, 0, 0, 2, 8, 0, 1, 8, 0, 1], "a device twice"),
            (&[0, 3, 0, 0, 0, 2, 8, 0, 3], "cut short"),
            (&[0, 3, 0, 0, 0, 1, 8, 0, 3, 7], "a number after the list"),
        ] {
            assert_eq!(Interval::decode(numbers), None, "{why}");
        }
    }

    #[test]
    fn round_trip_and_refusals() {
        let mut h = DeviceHistograms::default();
        h.latency[0].add(2_000_000, 3);
        h.latency[3].add(5, 1);
        h.depth.add(1, 10_000);
        // The layout before the unmatched completions were counted per
        // device (see unmatched_completions_per_device_follow_cpus_late).
        let i = Interval {
            lost: 4,
            unmatched: 1,
            unmatched_by_device: None,
            undelivered: vec![((7, 0), 6), ((8, 0), 1)],
            devices: vec![((7, 0), h.clone()), ((8, 0), DeviceHistograms::default())],
            cpus_late: 0,
        };
        let v = i.encode();
        assert_eq!(&v[..5], &[4, 1, 2, 7, 0]);
        assert_eq!(&v[v.len() - 7..], &[2, 7, 0, 6, 8, 0, 1]);
        assert_eq!(Interval::decode(&v), Some(i.clone()));
        assert_eq!(i.device((7, 0)), Some(&h));
        assert_eq!(i.device((9, 0)), None);
        assert_eq!((i.undelivered_on((8, 0)), i.undelivered_on((9, 0))), (1, 0));
        // Recorded before `undelivered` was counted: the same, with none.
        let older = Interval::decode(&v[..v.len() - 7]).expect("the older layout");
        assert_eq!(
            (older.undelivered, older.devices),
            (vec![], i.devices.clone())
        );
        for cut in [1, 2, 8] {
            assert_eq!(
                Interval::decode(&v[..v.len() - cut]),
                None,
                "cut short by {cut}"
            );
        }
        let mut swapped = v.clone();
        let at = v.len() - 6;
        swapped[at..].copy_from_slice(&[8, 0, 1, 7, 0, 6]);
        assert_eq!(Interval::decode(&swapped), None, "undelivered out of order");
        let mut extra = v.clone();
        extra.push(0);
        assert_eq!(Interval::decode(&extra), None, "trailing numbers");
        // CPUs come online: one number more, after `undelivered`.
        let late = Interval {
            cpus_late: 2,
            ..i.clone()
        };
        let mut with_late = v.clone();
        with_late.push(2);
        assert_eq!(late.encode(), with_late);
        assert_eq!(Interval::decode(&with_late), Some(late));
        with_late.push(1);
        assert_eq!(Interval::decode(&with_late), None, "after cpus_late");
        assert_eq!(Interval::decode(&[0, 0, u64::MAX]), None, "huge count");
        // A bucket with a zero count (found by the latency_values fuzz
        // target: it decoded, then encoded to something else).
        let mut zero = vec![0, 0, 1, 8, 0, 5, 0, 1, 5, 0];
        zero.extend([0u64; 12]);
        assert_eq!(Interval::decode(&zero), None);
        let mut twice = vec![0, 0, 2];
        for _ in 0..2 {
            twice.extend([7, 0]);
            twice.extend([0u64; 15]);
        }
        assert_eq!(Interval::decode(&twice), None, "a device twice");
        // A bucket past the last (found by the fuzz target: its bounds
        // overflowed a shift).
        let mut far = vec![0, 0, 1, 8, 0, u64::MAX, u64::MAX, 1, 976, 1];
        far.extend([0u64; 12]);
        assert_eq!(Interval::decode(&far), None);
        far[8] = 975;
        assert!(Interval::decode(&far).is_some());
        // Forged: 10 reads of 2 ms, but a max of 5 ns (read p50 0.00) ...
        let b = bucket_of(2_000_000) as u64;
        let mut reads = vec![0, 0, 1, 8, 0, 2_000_000, 20_000_000, 1, b, 10];
        reads.extend([0u64; 12]);
        assert!(Interval::decode(&reads).is_some());
        reads[5] = 5;
        assert_eq!(Interval::decode(&reads), None, "max outside its bucket");
        reads[5] = 2_000_000;
        reads[6] = 20;
        assert_eq!(Interval::decode(&reads), None, "sum of 10 reads of 2 ns");
        // ... or a depth in the last bucket (qd_p50 18446744073709551615).
        let mut deep = vec![0, 0, 1, 8, 0];
        deep.extend([0u64; 12]);
        deep.extend([u64::MAX, u64::MAX, 1, 975, 1, 0]);
        assert_eq!(Interval::decode(&deep), None, "a depth past 2^32");
        let at_most = [MAX_DEPTH, MAX_DEPTH, 1, bucket_of(MAX_DEPTH) as u64, 1, 0];
        deep.splice(17..23, at_most);
        assert!(Interval::decode(&deep).is_some(), "2^32 - 1 deep");
    }
}
