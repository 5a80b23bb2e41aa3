//! Fast `printf("%*.*f")` for the common case, identical to Rust's (and
//! glibc's) correctly rounded formatting: iostat-rs's text reports and
//! every tool's machine formats (JSON, CSV, text through the core writers).
//!
//! Rust's float formatting is exact but costs ~100 ns a value, which is most
//! of a report's time at 10,000 devices; with four decimals (the machine
//! formats' ratios) its exact mode falls back for many values to its
//! bignum algorithm (Dragon4), a third of the time of a vCPU NDJSON frame.
//! Values with at most four decimals, from 0 to 1e11 once scaled, are
//! scaled to an integer here: in `f64` arithmetic, or in integer
//! arithmetic on the value's binary form when the scaled value lies too
//! close to a rounding tie for `f64` to decide. Only other values
//! (negative, huge, not finite, more decimals) go to the standard
//! formatter, which the tests also use as the oracle.

use std::fmt::Write as _;

/// `value` formatted like `{value:.decimals$}`.
pub fn fixed(value: f64, decimals: usize) -> String {
    let mut out = String::new();
    push_fixed(&mut out, value, 0, decimals);
    out
}

/// Appends `value` formatted like `{value:width$.decimals$}`.
pub fn push_fixed(out: &mut String, value: f64, width: usize, decimals: usize) {
    if let Some(scaled) = exact_scaled(value, decimals) {
        push_scaled(out, scaled, width, decimals);
    } else {
        let _ = write!(out, "{value:width$.decimals$}");
    }
}

/// `10^decimals`, for 0 to 4 decimals.
const FACTORS: [f64; 5] = [1.0, 10.0, 100.0, 1e3, 1e4];

/// `value * 10^decimals` rounded half to even on the exact binary value,
/// as Rust and glibc's `printf` round, for 0 to 4 decimals and `value`
/// from 0 to where the scaled value reaches 1e11 (rounded, it may be
/// 1e11).
fn exact_scaled(value: f64, decimals: usize) -> Option<u64> {
    let x = value * *FACTORS.get(decimals)?;
    if !(0.0..1e11).contains(&x) || value.is_sign_negative() {
        return None;
    }
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
/// the value's binary form, for 0 to 4 decimals and a scaled value below
/// 1e11.
///
/// Near ties only: the float path above is faster. These values used to go
/// to the standard formatter; a report of 1,000 devices meets some, and its
/// code and tables (grisu, dragon) then joined the pages every such run
/// keeps resident.
fn rounded_exactly(value: f64, decimals: usize) -> u64 {
    // value = mantissa * 2^-shift exactly; below 1e11 (< 2^37) with a
    // 53-bit mantissa, shift is at least 16.
    let bits = value.to_bits();
    let biased_exponent = (bits >> 52) as u32 & 0x7ff;
    let fraction = bits & ((1 << 52) - 1);
    let (mantissa, shift) = if biased_exponent == 0 {
        (fraction, 1074)
    } else {
        (fraction | 1 << 52, 1075 - biased_exponent)
    };
    // Below 2^67: mantissa < 2^53, times at most 10^4.
    let scaled = u128::from(mantissa) * [1, 10, 100, 1_000, 10_000][decimals];
    if shift >= 128 {
        // value * 10^decimals < 2^67 * 2^-128, far below one half.
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
    // At most 1e11.
    rounded as u64
}

/// Writes `scaled / 10^decimals` with `decimals` (0 to 4) decimals,
/// right-aligned in `width`: at 10,000 devices this runs 200,000 times a
/// report.
///
/// The field is built right to left in a stack buffer of spaces, two
/// digits a step, and appended in one copy. Through `itoa` and a `push`
/// for each space, the point and each decimal, a value took 193
/// instructions (callgrind) against 146, and a 10,000-device report 5 %
/// more time.
fn push_scaled(out: &mut String, scaled: u64, width: usize, decimals: usize) {
    // scaled <= 1e11: 12 digits and the point at most; then the padding.
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
        2 => {
            field[FIELD - 3] = b'.';
            field[FIELD - 2..].copy_from_slice(&pair(scaled % 100));
            (scaled / 100, FIELD - 3)
        }
        3 => {
            field[FIELD - 4] = b'.';
            let fraction = scaled % 1_000;
            field[FIELD - 3] = b'0' + (fraction / 100) as u8;
            field[FIELD - 2..].copy_from_slice(&pair(fraction % 100));
            (scaled / 1_000, FIELD - 4)
        }
        _ => {
            field[FIELD - 5] = b'.';
            let fraction = scaled % 10_000;
            field[FIELD - 4..FIELD - 2].copy_from_slice(&pair(fraction / 100));
            field[FIELD - 2..].copy_from_slice(&pair(fraction % 100));
            (scaled / 10_000, FIELD - 5)
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
            for d in 0..=5 {
                for w in [0, 4, 7, 9, 12, 45] {
                    check(v, w, d);
                }
            }
        }
        // Exact ties of each number of decimals, halves of its odd steps
        // (odd 1/32 for four decimals, ..., odd 1/2 for none): rounded to
        // even. The smallest, and those up to and just past where the
        // scaled value reaches 1e11.
        for (d, factor) in FACTORS.iter().enumerate() {
            let step = f64::from(2u32 << d);
            // (2j + 1) / step below 1e11 / factor.
            let top = ((1e11 / factor * step - 1.0) / 2.0) as u64;
            for j in (0..20_000u64).chain(top - 20_000..top + 20) {
                check((2 * j + 1) as f64 / step, 8, d);
            }
        }
        // Where the scaled value reaches 1e11, for each number of decimals.
        for (d, factor) in FACTORS.iter().enumerate() {
            let limit = 1e11 / factor;
            for v in [limit, limit.next_down(), limit.next_up()] {
                check(v, 0, d);
            }
        }
        for v in [
            5e-324,
            f64::MIN_POSITIVE,
            0.004_999_999_999_999_999,
            0.005_000_000_000_000_001,
        ] {
            for d in 0..=4 {
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
                2 if x % 8 == 2 => (x >> 11) as f64 / (1u64 << 53) as f64,
                2 => (x % 1_000_000) as f64 / 8.0,
                _ => f64::from_bits(x).abs() % 1e10,
            };
            check(v, 8, (x % 5) as usize);
        }
    }
}
