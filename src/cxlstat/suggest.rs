//! "Did you mean": the known names closest to a mistyped one.

/// Up to three names from `known` closest to `wanted` (edit distance at most
/// a third of the longer name, at least 2), or containing it, best first.
/// Case is ignored, as it is when events are matched: `CLOCK_TICK` gets
/// `clock_ticks`.
pub fn closest<'a>(wanted: &str, known: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let wanted = wanted.to_ascii_lowercase();
    let mut scored: Vec<(usize, &str)> = known
        .into_iter()
        .filter_map(|name| Some((distance_within(&wanted, &name.to_ascii_lowercase())?, name)))
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    scored
        .into_iter()
        .take(3)
        .map(|(_, n)| n.to_string())
        .collect()
}

/// The edit distance of `wanted` and `name` when `name` is a suggestion
/// for `wanted` (see [`closest`]), else `None`. Computed only where it can
/// be within the limit: it is at least the names' difference in length,
/// and exactly that when one contains the other, so a long argument costs
/// a search for each name, not a table of its length by the name's.
fn distance_within(wanted: &str, name: &str) -> Option<usize> {
    let gap = wanted.len().abs_diff(name.len());
    if wanted.len() >= 3 && (name.contains(wanted) || wanted.contains(name)) {
        return Some(gap);
    }
    let limit = (wanted.len().max(name.len()) / 3).max(2);
    if gap > limit {
        return None;
    }
    Some(edit_distance(wanted, name)).filter(|&distance| distance <= limit)
}

/// Levenshtein distance over bytes.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, &ca) in a.iter().enumerate() {
        current[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitute = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitute.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_and_suggestions() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        let known = [
            "d2h_req_rdshared",
            "d2h_req_rdcurr",
            "clock_ticks",
            "h2d_req_snpcur",
        ];
        assert_eq!(closest("d2h_req_rdshard", known)[0], "d2h_req_rdshared");
        assert!(!closest("d2h_req_rdshard", known).contains(&"clock_ticks".to_string()));
        assert_eq!(closest("clock_tick", known), vec!["clock_ticks"]);
        assert_eq!(closest("CLOCK_TICK", known), vec!["clock_ticks"]);
        assert_eq!(closest("D2H_Req_RdShard", known)[0], "d2h_req_rdshared");
        assert!(closest("zzzzzzzz", known).is_empty());
        // Far longer: containing a known name, it is suggested, at the
        // distance of the difference in length.
        let long = format!("{}clock_ticks", "x".repeat(100));
        assert_eq!(closest(&long, known), vec!["clock_ticks"]);
        assert_eq!(edit_distance(&long, "clock_ticks"), 100);
    }

    /// A name made long by mistake (an -e of 200 kB, as the event_spec
    /// fuzz target found, at 4 kB, to take a second) is compared in
    /// linear time: the suggestion is the name it contains, by its
    /// difference in length, and far names cost no distance table (one
    /// per known name, of 200 kB by its length, took some 30 s).
    #[test]
    fn a_long_name_is_compared_in_linear_time() {
        let mut wanted = "x".repeat(200_000);
        wanted.push_str("clock_ticks");
        let known = crate::cxlstat::catalogue::EVENTS.iter().map(|e| e.name);
        assert_eq!(closest(&wanted, known), vec!["clock_ticks"]);
        assert_eq!(distance_within("ab", "clock_ticks"), None);
        assert_eq!(distance_within("clock", "clock_ticks"), Some(6));
    }
}
