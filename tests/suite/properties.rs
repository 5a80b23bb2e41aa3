//! Property tests (issue 9, point 17): counter deltas and wraps, interval
//! schedules and the CPU-list parser, each checked over generated inputs
//! against a simple model written here (wide integer arithmetic, sets of
//! CPUs), not against the code under test.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use hwstat::common::counter::{Width, delta, went_backwards};
use hwstat::common::cpulist::CpuList;
use hwstat::common::interval::{Schedule, parse_interval};
use proptest::prelude::*;

/// 2^width, as a wide integer.
fn modulus(width: Width) -> i128 {
    match width {
        Width::Bits32 => 1 << 32,
        Width::Bits64 => 1 << 64,
    }
}

fn width() -> impl Strategy<Value = Width> {
    prop_oneof![Just(Width::Bits32), Just(Width::Bits64)]
}

proptest! {
    /// The delta is the counter's difference in exact arithmetic, reduced
    /// modulo 2^width (both readings first reduced, as the kernel's field
    /// would hold them).
    #[test]
    fn delta_is_the_difference_modulo_the_width(previous: u64, current: u64, width in width()) {
        let m = modulus(width);
        let model = (i128::from(current) % m - i128::from(previous) % m).rem_euclid(m);
        prop_assert_eq!(i128::from(delta(previous, current, width)), model);
    }

    /// A counter that advanced by `step` (less than one full turn) from any
    /// reading, wrapping past its maximum or not, gives `step` back.
    #[test]
    fn a_counter_that_wraps_once_gives_its_advance(
        start: u64,
        step: u64,
        width in width(),
    ) {
        let m = modulus(width);
        let step = i128::from(step) % m;
        let start = i128::from(start) % m;
        let wrapped = start + step >= m;
        let current = ((start + step) % m) as u64;
        prop_assert_eq!(i128::from(delta(start as u64, current, width)), step);
        // It reads as "went backwards" exactly when it wrapped.
        prop_assert_eq!(went_backwards(start as u64, current, width), wrapped);
    }

    /// Going backwards compares the readings in the counter's width: bits
    /// above the width (a C int printed sign-extended) do not count.
    #[test]
    fn went_backwards_ignores_bits_above_the_width(
        previous: u32,
        current: u32,
        high_p: u32,
        high_c: u32,
    ) {
        let p = (u64::from(high_p) << 32) | u64::from(previous);
        let c = (u64::from(high_c) << 32) | u64::from(current);
        prop_assert_eq!(went_backwards(p, c, Width::Bits32), current < previous);
        prop_assert_eq!(delta(p, c, Width::Bits32), u64::from(current.wrapping_sub(previous)));
    }
}

/// A schedule with an interval of up to a day and maybe a count.
fn schedule() -> impl Strategy<Value = Schedule> {
    (
        prop::option::of(0u64..86_400_000_000_000),
        prop::option::of(0u64..1_000),
    )
        .prop_map(|(ns, count)| Schedule {
            interval: ns.map(Duration::from_nanos),
            count,
            first_starts_only: false,
        })
}

proptest! {
    /// Samples that start on time, or late by less than an interval, are
    /// due exactly an interval apart, so the reports never drift. However
    /// late a sample starts, the next one is due after it starts and at
    /// most an interval after; one an interval late or more (a stopped run,
    /// a slow sample) starts the intervals afresh, the next one due a whole
    /// interval after it, instead of the samples missed coming back to
    /// back. Without an interval there is no grid.
    #[test]
    fn samples_are_due_an_interval_apart(
        s in schedule(),
        steps_late in prop::collection::vec((0u64..4, 0u64..1_000), 1..40),
    ) {
        let start = Instant::now();
        let Some(mut grid) = s.grid(start) else {
            prop_assert!(s.interval.is_none());
            return Ok(());
        };
        let step = s.interval.unwrap().max(Duration::from_nanos(1));
        for (whole, thousandths) in steps_late {
            // A sample starts some steps and thousandths of a step late.
            let due = grid.due();
            let late = step * whole as u32 + step * thousandths as u32 / 1_000;
            let now = due + late;
            grid.start_sample(now);
            let next = grid.due();
            prop_assert!(next > now, "{next:?} is not after the start {now:?}");
            prop_assert!(next - now <= step, "{:?} after the start", next - now);
            if late < step {
                prop_assert_eq!(next - due, step);
            } else {
                prop_assert_eq!(next - now, step);
            }
        }
    }

    /// A schedule takes its first `count` samples (one without an interval,
    /// all of them without a count) and none after: every index up to two
    /// past the count is checked.
    #[test]
    fn a_schedule_wants_the_samples_of_its_count(s in schedule()) {
        for index in 0..s.count.unwrap_or(50) + 2 {
            let model = match (s.interval, s.count) {
                (None, _) => index == 0,
                (Some(_), None) => true,
                (Some(_), Some(count)) => index < count,
            };
            prop_assert_eq!(s.wants(index), model, "index {}", index);
        }
    }

    /// Whole seconds, milliseconds written as a fraction of a second and
    /// humantime milliseconds all give the duration they spell.
    #[test]
    fn intervals_parse_to_what_they_spell(
        secs in prop_oneof![0u64..10, 0u64..1_000_000],
        millis in 0u64..1_000,
    ) {
        let exact = Duration::from_secs(secs) + Duration::from_millis(millis);
        prop_assert_eq!(parse_interval(&secs.to_string()), Ok(Duration::from_secs(secs)));
        prop_assert_eq!(parse_interval(&format!("{secs}.{millis:03}")), Ok(exact));
        prop_assert_eq!(
            parse_interval(&format!("{}ms", secs * 1000 + millis)),
            Ok(exact)
        );
        let negative = format!("-{secs}.{millis:03}");
        prop_assert!(parse_interval(&negative).is_err());
    }
}

/// Ranges `(first, length)` of CPUs below 10,000, as a CPU list could name them.
fn ranges() -> impl Strategy<Value = Vec<(u32, u32)>> {
    prop::collection::vec((0u32..10_000, 0u32..300), 1..12)
}

/// The kernel notation of `ranges`, with optional spaces around each part
/// and each dash (which the parser accepts).
fn render(ranges: &[(u32, u32)], spaced: bool) -> String {
    let pad = if spaced { " " } else { "" };
    ranges
        .iter()
        .map(|&(first, len)| match len {
            0 => format!("{pad}{first}{pad}"),
            _ => format!("{pad}{first}{pad}-{pad}{}{pad}", first + len),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The model: the set of every CPU of every range.
fn expand(ranges: &[(u32, u32)]) -> BTreeSet<u32> {
    ranges
        .iter()
        .flat_map(|&(first, len)| first..=first + len)
        .collect()
}

proptest! {
    /// A list of ranges and single CPUs, in any order, overlapping or not,
    /// parses to the set of their CPUs, ascending and without duplicates.
    #[test]
    fn a_cpu_list_is_the_union_of_its_ranges(ranges in ranges(), spaced: bool, probe in 0u32..10_400) {
        let text = render(&ranges, spaced);
        let list = CpuList::parse(&text).map_err(TestCaseError::fail)?;
        let model = expand(&ranges);
        let expected: Vec<u32> = model.iter().copied().collect();
        prop_assert_eq!(list.cpus(), expected.as_slice());
        prop_assert_eq!(list.contains(probe), model.contains(&probe));
    }

    /// Any set of CPUs written in compact kernel notation parses back to itself.
    #[test]
    fn a_set_written_as_a_list_parses_back(set in prop::collection::btree_set(0u32..5_000, 1..200)) {
        let mut runs: Vec<(u32, u32)> = Vec::new();
        for &cpu in &set {
            match runs.last_mut() {
                Some((first, len)) if *first + *len + 1 == cpu => *len += 1,
                _ => runs.push((cpu, 0)),
            }
        }
        let list = CpuList::parse(&render(&runs, false)).map_err(TestCaseError::fail)?;
        prop_assert_eq!(list.into_vec(), set.into_iter().collect::<Vec<_>>());
    }

    /// A backwards range, an empty part or a word anywhere in the list makes
    /// the whole list invalid, with a message naming what was expected.
    #[test]
    fn a_bad_part_anywhere_refuses_the_list(
        ranges in ranges(),
        at in any::<prop::sample::Index>(),
        bad in prop_oneof![
            (1u32..10_000, 1u32..100).prop_map(|(hi, d)| format!("{}-{}", hi, hi - d.min(hi))),
            Just(String::new()),
            Just("cpu3".to_string()),
            Just("-1".to_string()),
            Just("1-2-3".to_string()),
        ],
    ) {
        let mut parts: Vec<String> = ranges.iter().map(|r| render(&[*r], false)).collect();
        parts.insert(at.index(parts.len() + 1), bad.clone());
        let text = parts.join(",");
        let err = CpuList::parse(&text).expect_err(&text);
        prop_assert!(err.contains("expected CPU numbers"), "{}: {}", text, err);
    }
}
