//! Names in the order people count them: `cxl_pmu_mem2.0` before
//! `cxl_pmu_mem10.0`, `nvme2n1` before `nvme10n1`.

/// Orders names as people count: runs of digits by their value
/// (`cxl_pmu_mem2.0` before `cxl_pmu_mem10.0`), the rest byte by byte.
/// Names equal in value but not in text (`mem01`, `mem1`) are ordered by
/// their text, so the order is total.
pub fn natural_order(a: &str, b: &str) -> std::cmp::Ordering {
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    while let (Some(&p), Some(&q)) = (x.first(), y.first()) {
        let order = if p.is_ascii_digit() && q.is_ascii_digit() {
            let (m, rest_x) = split_digits(x);
            let (n, rest_y) = split_digits(y);
            (x, y) = (rest_x, rest_y);
            // Without leading zeros, a longer run is a larger number.
            let (m, n) = (trim_zeros(m), trim_zeros(n));
            m.len().cmp(&n.len()).then_with(|| m.cmp(n))
        } else {
            (x, y) = (&x[1..], &y[1..]);
            p.cmp(&q)
        };
        if order.is_ne() {
            return order;
        }
    }
    x.len().cmp(&y.len()).then_with(|| a.cmp(b))
}

/// The leading run of ASCII digits of `text`, and the rest.
fn split_digits(text: &[u8]) -> (&[u8], &[u8]) {
    let end = text
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(text.len());
    text.split_at(end)
}

/// `digits` without its leading zeros.
fn trim_zeros(digits: &[u8]) -> &[u8] {
    let start = digits
        .iter()
        .position(|&b| b != b'0')
        .unwrap_or(digits.len());
    &digits[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_ordered_by_the_numbers_in_them() {
        let mut names = [
            "cxl_pmu_mem10.0",
            "cxl_pmu_mem2.1",
            "cxl_pmu_mem2.0",
            "cxl_pmu_mem1.10",
            "cxl_pmu_mem1.9",
            "cxl_pmu_mem01.9",
            "cxl_pmu_mem",
            "cxl_pmu_memx",
        ];
        names.sort_by(|a, b| natural_order(a, b));
        assert_eq!(
            names,
            [
                "cxl_pmu_mem",
                "cxl_pmu_mem01.9",
                "cxl_pmu_mem1.9",
                "cxl_pmu_mem1.10",
                "cxl_pmu_mem2.0",
                "cxl_pmu_mem2.1",
                "cxl_pmu_mem10.0",
                "cxl_pmu_memx",
            ]
        );
        // Digits of any length, beyond u64, compare by value.
        let long = format!("cxl_pmu_mem{}", "9".repeat(40));
        assert!(natural_order("cxl_pmu_mem1", &long).is_lt());
        assert!(natural_order(&long, &format!("cxl_pmu_mem1{}", "0".repeat(40))).is_lt());
    }
}
