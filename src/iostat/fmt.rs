//! Fast `printf("%*.*f")` for the common case, identical to Rust's (and
//! glibc's) correctly rounded formatting.
//!
//! Rust's float formatting is exact but costs ~100 ns a value, which is most
//! of a report's time at 10,000 devices. Values in `[0, 1e9)` with at most
//! two decimals are scaled to an integer here: in `f64` arithmetic, or in
//! integer arithmetic on the value's binary form when the scaled value lies
//! too close to a rounding tie for `f64` to decide. Only other values
//! (negative, huge, not finite, more decimals) go to the standard
//! formatter, which the tests also use as the oracle.

use std::fmt::Write as _;

/// Appends `value` formatted like `{value:width$.decimals$}`.
pub fn push_fixed(out: &mut String, value: f64, width: usize, decimals: usize) {
    if let Some(scaled) = exact_scaled(value, decimals) {
        push_scaled(out, scaled, width, decimals);
    } else {
        let _ = write!(out, "{value:width$.decimals$}");
    }
}

/// `value * 10^decimals` rounded half to even on the exact binary value,
/// as Rust and glibc's `printf` round, for `value` in `[0, 1e9)` and 0 to
/// 2 decimals.
fn exact_scaled(value: f64, decimals: usize) -> Option<u64> {
    if !(0.0..1e9).contains(&value) || decimals > 2 || value.is_sign_negative() {
        return None;
    }
    let factor = [1.0, 10.0, 100.0][decimals];
    let x = value * factor;
    // x is in [0, 1e11): truncation is the floor.
    let n = x as u64;
    let frac = x - n as f64;
    // The product is off by at most 2^-16 for x < 2^37: near a tie, the
    // binary value decides.
    if (frac - 0.5).abs() < 1.0 / 8192.0 {
        return Some(rounded_exactly(value, decimals));
    }
    Some(if frac > 0.5 { n + 1 } else { n })
}

/// `value * 10^decimals` rounded half to even, in integer arithmetic on
/// the value's binary form, for `value` in `[0, 1e9)` and 0 to 2 decimals.
///
/// Near ties only: the float path above is faster. These values used to go
/// to the standard formatter; a report of 1,000 devices meets some, and its
/// code and tables (grisu, dragon) then joined the pages every such run
/// keeps resident.
fn rounded_exactly(value: f64, decimals: usize) -> u64 {
    // value = mantissa * 2^-shift exactly; below 1e9 (< 2^30) with a
    // 53-bit mantissa, shift is at least 23.
    let bits = value.to_bits();
    let biased_exponent = (bits >> 52) as u32 & 0x7ff;
    let fraction = bits & ((1 << 52) - 1);
    let (mantissa, shift) = if biased_exponent == 0 {
        (fraction, 1074)
    } else {
        (fraction | 1 << 52, 1075 - biased_exponent)
    };
    // Below 2^60: mantissa < 2^53, times at most 100.
    let scaled = u128::from(mantissa * [1, 10, 100][decimals]);
    if shift >= 128 {
        // value * 10^decimals < 2^60 * 2^-128, far below one half.
        return 0;
    }
    let whole = scaled >> shift;
    let rest = scaled - (whole << shift);
    let half = 1u128 << (shift - 1);
    let rounded = match rest.cmp(&half) {
        std::cmp::Ordering::Less => whole,
        std::cmp::Ordering::Greater => whole + 1,
        std::cmp::Ordering::Equal => whole + (whole & 1),
    };
    // Below 1e11.
    rounded as u64
}

/// Writes `scaled / 10^decimals` with `decimals` (0 to 2) decimals,
/// right-aligned in `width`: at 10,000 devices this runs 200,000 times a
/// report.
///
/// The field is built right to left in a stack buffer of spaces, two
/// digits a step, and appended in one copy. Through `itoa` and a `push`
/// for each space, the point and each decimal, a value took 193
/// instructions (callgrind) against 146, and a 10,000-device report 5 %
/// more time.
fn push_scaled(out: &mut String, scaled: u64, width: usize, decimals: usize) {
    // scaled < 1e11: 11 digits and the point at most; then the padding.
    const FIELD: usize = 32;
    // Two digits of n < 100, by constant divisors: no table to keep
    // among the read-only data every report reads.
    let pair = |n: u64| {
        let n = n as u8;
        [b'0' + n / 10, b'0' + n % 10]
    };
    let mut field = [b' '; FIELD];
    // Constant divisors: a `div` by a variable was an eighth of the time.
    let (mut whole, mut pos) = match decimals {
        0 => (scaled, FIELD),
        1 => {
            field[FIELD - 2] = b'.';
            field[FIELD - 1] = b'0' + (scaled % 10) as u8;
            (scaled / 10, FIELD - 2)
        }
        _ => {
            field[FIELD - 3] = b'.';
            field[FIELD - 2..].copy_from_slice(&pair(scaled % 100));
            (scaled / 100, FIELD - 3)
        }
    };
    while whole >= 100 {
        pos -= 2;
        field[pos..pos + 2].copy_from_slice(&pair(whole % 100));
        whole /= 100;
    }
    if whole >= 10 {
        pos -= 2;
        field[pos..pos + 2].copy_from_slice(&pair(whole));
    } else {
        pos -= 1;
        field[pos] = b'0' + whole as u8;
    }
    let pad = width.saturating_sub(FIELD - pos);
    let within = pad.min(pos);
    out.extend(std::iter::repeat_n(' ', pad - within));
    pos -= within;
    let text = &field[pos..];
    debug_assert!(text.is_ascii());
    // SAFETY: `text` is ASCII (spaces, digits `b'0' + d` with d < 10, a
    // point), so `out` stays valid UTF-8.
    // `str::from_utf8` would have checked it at 100 instructions a field,
    // more than all the rest.
    unsafe { out.as_mut_vec() }.extend_from_slice(text);
}

/// Appends `text` left-aligned in `width` bytes, as C's `%-13s` pads it: a
/// name with characters of more than one byte takes that many fewer
/// spaces, so every column after it starts at the byte sysstat's does.
pub fn push_left(out: &mut String, text: &str, width: usize) {
    out.push_str(text);
    if text.len() < width {
        out.extend(std::iter::repeat_n(' ', width - text.len()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(v: f64, w: usize, d: usize) {
        let mut ours = String::new();
        push_fixed(&mut ours, v, w, d);
        assert_eq!(
            ours,
            format!("{v:w$.d$}"),
            "value {v:e} width {w} decimals {d}"
        );
    }

    #[test]
    fn left_alignment_counts_bytes_as_printf_does() {
        let mut s = String::new();
        push_left(&mut s, "sda", 13);
        push_left(&mut s, "é", 3);
        push_left(&mut s, "a-very-long-device-name", 13);
        // printf("%-13s%-3s%-13s"): "é" is two bytes, so one space follows.
        assert_eq!(s, "sda          é a-very-long-device-name");
    }

    #[test]
    fn matches_the_standard_formatter() {
        for v in [
            0.0,
            -0.0,
            0.005,
            0.015,
            0.125,
            0.375,
            2.5,
            0.285,
            1.005,
            99.995,
            999_999_999.99,
            1e9,
            1e12,
            18446744073709551616.0,
            -1.25,
            0.1,
            0.29,
            56.0,
            f64::NAN,
            f64::INFINITY,
        ] {
            for d in 0..=2 {
                for w in [0, 4, 7, 9, 12, 45] {
                    check(v, w, d);
                }
            }
        }
        // Exact ties of each number of decimals, halves of odd 1/8, 1/4
        // and 1/2 steps: rounded to even. Some up to 1e9, some subnormal.
        for j in (0..20_000u64).chain(3_999_990_000..4_000_000_000) {
            let odd = (2 * j + 1) as f64;
            check(odd / 8.0, 8, 2);
            check(odd / 4.0, 8, 1);
            check(odd / 2.0, 8, 0);
        }
        for v in [
            5e-324,
            f64::MIN_POSITIVE,
            0.004_999_999_999_999_999,
            0.005_000_000_000_000_001,
        ] {
            for d in 0..=2 {
                check(v, 0, d);
            }
        }
        // A deterministic spread of values, many near ties.
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = match x % 4 {
                0 => (x >> 11) as f64 / (1u64 << 53) as f64 * 1000.0,
                1 => (x % 100_000) as f64 / 1000.0 + 0.005,
                2 => (x % 1_000_000) as f64 / 8.0,
                _ => f64::from_bits(x).abs() % 1e10,
            };
            check(v, 8, (x % 3) as usize);
        }
    }
}
