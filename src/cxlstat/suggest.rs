//! "Did you mean": the known names closest to a mistyped one.

/// Up to three names from `known` closest to `wanted` (edit distance at most
/// a third of the longer name, at least 2), or containing it, best first.
pub fn closest<'a>(wanted: &str, known: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut scored: Vec<(usize, &str)> = known
        .into_iter()
        .filter_map(|name| {
            let limit = (wanted.len().max(name.len()) / 3).max(2);
            let contains = wanted.len() >= 3 && (name.contains(wanted) || wanted.contains(name));
            // The distance is at least the difference in length (exactly
            // that when one name contains the other): past the limit it
            // is not computed, which for a name of megabytes (a forged
            // recording's -e) took minutes.
            let apart = wanted.len().abs_diff(name.len());
            let distance = if apart > limit {
                apart
            } else {
                edit_distance(wanted, name)
            };
            (distance <= limit || contains).then_some((distance, name))
        })
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    scored
        .into_iter()
        .take(3)
        .map(|(_, n)| n.to_string())
        .collect()
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
        assert!(closest("zzzzzzzz", known).is_empty());
        // Far longer: containing a known name, it is suggested, at the
        // distance of the difference in length.
        let long = format!("{}clock_ticks", "x".repeat(100));
        assert_eq!(closest(&long, known), vec!["clock_ticks"]);
        assert_eq!(edit_distance(&long, "clock_ticks"), 100);
    }
}
