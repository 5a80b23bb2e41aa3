//! sysstat's colours: the SGR sequences (`S_COLORS_SGR`) and which one a
//! value gets, exactly as sysstat's `init_colors`, `cprintf_f`,
//! `cprintf_xpc`, `cprintf_u64` and `cprintf_in` choose them.
//!
//! The renderer prints `<sgr> <number><reset>` for every value (the leading
//! space and the padding are inside the colour), `<sgr><name padded to
//! 13><reset>` for a device name, and `<sgr> <name><reset>` for a `--pretty`
//! name. This module only decides which sequence applies.

/// Which extreme ranges of a percentage get the warning and extreme colours
/// (sysstat's `xtrem` argument of `cprintf_xpc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extremes {
    /// `XHIGH`: extreme at ≥ 90, warning at ≥ 75 (`%util`, CPU busy columns).
    High,
    /// `XLOW`: extreme at ≤ 10, warning at ≤ 25, zero included (`%idle`).
    Low,
    /// `XLOW0`: as [`Extremes::Low`], but values that print as zero are left
    /// alone (`%rrqm`, `%wrqm`, `%drqm`).
    LowNonZero,
}

/// The SGR sequences of one run, when colours are on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Colors {
    /// Device names (`I=`, default `\e[32;22m`).
    pub name: String,
    /// Non-zero values (`N=`, default `\e[34;1m`).
    pub nonzero: String,
    /// Values that print as zero (`Z=`, default `\e[34;22m`).
    pub zero: String,
    /// Percentages in the warning range (`W=` or `M=`, default `\e[35;1m`).
    pub warn: String,
    /// Percentages in the extreme range (`X=` or `H=`, default `\e[31;1m`).
    pub extreme: String,
    /// The reset after every coloured item (`\e[0m`, not configurable).
    pub normal: &'static str,
}

const PERCENT_LIMIT_XHIGH: f64 = 90.0;
const PERCENT_LIMIT_HIGH: f64 = 75.0;
const PERCENT_LIMIT_LOW: f64 = 25.0;
const PERCENT_LIMIT_XLOW: f64 = 10.0;

impl Colors {
    /// sysstat's defaults, overridden by the entries of `S_COLORS_SGR`.
    ///
    /// Entries are separated by `:` (empty entries are skipped). An entry is
    /// used only if it is 3 to 18 bytes long, its second byte is `=` and the
    /// rest consists of digits and `;`; its first byte picks the colour
    /// (`I`, `N`, `Z`, `W`/`M`, `X`/`H`; other keys are sysstat's other
    /// tools' and are ignored). A later entry overrides an earlier one.
    // Out of line: only some runs take this path; inlined, it would sit among
    // the code every run executes (build.rs, "Hot code first").
    #[inline(never)]
    pub fn new(sgr: Option<&str>) -> Colors {
        let mut c = Colors {
            name: "\x1b[32;22m".into(),
            nonzero: "\x1b[34;1m".into(),
            zero: "\x1b[34;22m".into(),
            warn: "\x1b[35;1m".into(),
            extreme: "\x1b[31;1m".into(),
            normal: "\x1b[0m",
        };
        for item in sgr.unwrap_or("").split(':').filter(|i| !i.is_empty()) {
            let b = item.as_bytes();
            // sysstat 12.7.9's MIN_SGR_SEQ_LEN and MAX_SGR_SEQ_LEN (commit
            // d4a9ec2c: `I=38;2;192;128;255`, truecolour); 12.6.1 took 3 to 7.
            let well_formed = (3..=18).contains(&b.len())
                && b[1] == b'='
                && b[2..].iter().all(|&x| x == b';' || x.is_ascii_digit());
            if !well_formed {
                continue;
            }
            let seq = format!("\x1b[{}m", &item[2..]);
            match b[0] {
                b'M' | b'W' => c.warn = seq,
                b'X' | b'H' => c.extreme = seq,
                b'Z' => c.zero = seq,
                b'N' => c.nonzero = seq,
                b'I' => c.name = seq,
                _ => {}
            }
        }
        c
    }

    /// The colour of a `double` statistic (`cprintf_f` without a sign)
    /// printed with `decimals` decimals (after `--dec`). For a value shown
    /// with a unit letter (`--human`), `v` is the value before conversion
    /// and `decimals` still the column's own.
    pub fn float(&self, v: f64, decimals: usize) -> &str {
        let lim = zero_limit(decimals);
        let zero = if decimals > 0 {
            v < lim && v > -lim
        } else {
            (-0.5..=0.5).contains(&v)
        };
        if zero { &self.zero } else { &self.nonzero }
    }

    /// The colour of a percentage (`cprintf_xpc`) printed with `decimals`
    /// decimals (after `--dec` and the `--human` reduction).
    pub fn percent(&self, v: f64, decimals: usize, extremes: Extremes) -> &str {
        let lim = zero_limit(decimals);
        let shown = v >= lim;
        match extremes {
            Extremes::High if v >= PERCENT_LIMIT_XHIGH => return &self.extreme,
            Extremes::High if v >= PERCENT_LIMIT_HIGH => return &self.warn,
            Extremes::Low if v <= PERCENT_LIMIT_XLOW => return &self.extreme,
            Extremes::LowNonZero if v <= PERCENT_LIMIT_XLOW && shown => return &self.extreme,
            Extremes::Low if v <= PERCENT_LIMIT_LOW => return &self.warn,
            Extremes::LowNonZero if v <= PERCENT_LIMIT_LOW && shown => return &self.warn,
            _ => {}
        }
        let zero = if decimals > 0 { v < lim } else { v <= 0.5 };
        if zero { &self.zero } else { &self.nonzero }
    }

    /// The colour of an integer statistic (`cprintf_u64`).
    pub fn integer(&self, v: u64) -> &str {
        if v == 0 { &self.zero } else { &self.nonzero }
    }
}

/// Below this magnitude a value prints as zero (sysstat's `lim`: 0.05 with
/// one decimal, 0.005 otherwise).
fn zero_limit(decimals: usize) -> f64 {
    if decimals == 1 { 0.05 } else { 0.005 }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected sequences are written out by hand from sysstat's defaults
    // (common.h: C_LIGHT_GREEN, C_BOLD_BLUE, C_LIGHT_BLUE, C_BOLD_MAGENTA,
    // C_BOLD_RED, C_NORMAL).
    const GREEN: &str = "\x1b[32;22m";
    const BOLD_BLUE: &str = "\x1b[34;1m";
    const LIGHT_BLUE: &str = "\x1b[34;22m";
    const MAGENTA: &str = "\x1b[35;1m";
    const RED: &str = "\x1b[31;1m";

    #[test]
    fn defaults() {
        let c = Colors::new(None);
        assert_eq!(
            (
                c.name.as_str(),
                c.nonzero.as_str(),
                c.zero.as_str(),
                c.warn.as_str(),
                c.extreme.as_str(),
                c.normal
            ),
            (GREEN, BOLD_BLUE, LIGHT_BLUE, MAGENTA, RED, "\x1b[0m")
        );
    }

    #[test]
    fn sgr_entries_follow_init_colors() {
        let c = Colors::new(Some("I=1:N=2;3:Z=4:M=5:H=6"));
        assert_eq!(c.name, "\x1b[1m");
        assert_eq!(c.nonzero, "\x1b[2;3m");
        assert_eq!(c.zero, "\x1b[4m");
        assert_eq!(c.warn, "\x1b[5m");
        assert_eq!(c.extreme, "\x1b[6m");
        // W and X are the other names of M and H; the later entry wins.
        let c = Colors::new(Some("M=5:W=7:H=6:X=8"));
        assert_eq!(
            (c.warn.as_str(), c.extreme.as_str()),
            ("\x1b[7m", "\x1b[8m")
        );
    }

    #[test]
    fn malformed_sgr_entries_are_ignored_one_by_one() {
        let c = Colors::new(Some(
            // too short, too long (19 bytes), no '=', bad character, unknown
            // key, empty entries; then one good entry.
            "I=:N=38;2;100;100;1000:Z33:W=3a:C=33;22::Q=1:X=1;31",
        ));
        assert_eq!(c.name, GREEN);
        assert_eq!(c.nonzero, BOLD_BLUE);
        assert_eq!(c.zero, LIGHT_BLUE);
        assert_eq!(c.warn, MAGENTA);
        assert_eq!(c.extreme, "\x1b[1;31m");
        // 18 bytes (truecolour) is still accepted, as sysstat 12.7.9
        // does; a 2-character key is not.
        let c = Colors::new(Some("N=38;2;100;100;100:I=38;5;208:II=1"));
        assert_eq!(c.nonzero, "\x1b[38;2;100;100;100m");
        assert_eq!(c.name, "\x1b[38;5;208m");
    }

    #[test]
    fn float_zero_is_what_prints_as_zero() {
        let c = Colors::new(None);
        assert_eq!(c.float(0.0, 2), LIGHT_BLUE);
        assert_eq!(c.float(0.00499, 2), LIGHT_BLUE);
        assert_eq!(c.float(-0.00499, 2), LIGHT_BLUE);
        assert_eq!(c.float(0.005, 2), BOLD_BLUE);
        assert_eq!(c.float(-0.005, 2), BOLD_BLUE);
        assert_eq!(c.float(0.04, 1), LIGHT_BLUE);
        assert_eq!(c.float(0.05, 1), BOLD_BLUE);
        assert_eq!(c.float(0.5, 0), LIGHT_BLUE);
        assert_eq!(c.float(-0.5, 0), LIGHT_BLUE);
        assert_eq!(c.float(0.51, 0), BOLD_BLUE);
    }

    #[test]
    fn percent_thresholds() {
        let c = Colors::new(None);
        let h = Extremes::High;
        assert_eq!(c.percent(90.0, 2, h), RED);
        assert_eq!(c.percent(89.99, 2, h), MAGENTA);
        assert_eq!(c.percent(75.0, 2, h), MAGENTA);
        assert_eq!(c.percent(74.99, 2, h), BOLD_BLUE);
        assert_eq!(c.percent(0.004, 2, h), LIGHT_BLUE);
        // No lower bound on the zero test of percentages.
        assert_eq!(c.percent(-3.0, 2, h), LIGHT_BLUE);
        let l = Extremes::Low;
        assert_eq!(c.percent(0.0, 2, l), RED);
        assert_eq!(c.percent(10.0, 2, l), RED);
        assert_eq!(c.percent(10.01, 2, l), MAGENTA);
        assert_eq!(c.percent(25.0, 2, l), MAGENTA);
        assert_eq!(c.percent(25.01, 2, l), BOLD_BLUE);
        let l0 = Extremes::LowNonZero;
        assert_eq!(c.percent(0.0, 2, l0), LIGHT_BLUE);
        assert_eq!(c.percent(0.00499, 2, l0), LIGHT_BLUE);
        assert_eq!(c.percent(0.005, 2, l0), RED);
        assert_eq!(c.percent(10.0, 2, l0), RED);
        assert_eq!(c.percent(20.0, 2, l0), MAGENTA);
        assert_eq!(c.percent(100.0, 2, l0), BOLD_BLUE);
        // One decimal (--human or --dec=1): the limit is 0.05.
        assert_eq!(c.percent(0.04, 1, l0), LIGHT_BLUE);
        assert_eq!(c.percent(0.05, 1, l0), RED);
        assert_eq!(c.percent(0.04, 1, h), LIGHT_BLUE);
        // No decimals: zero up to 0.5 inclusive, but XLOW0 keeps 0.005.
        assert_eq!(c.percent(0.5, 0, h), LIGHT_BLUE);
        assert_eq!(c.percent(0.5, 0, l0), RED);
        assert_eq!(c.percent(0.004, 0, l0), LIGHT_BLUE);
    }

    #[test]
    fn integers() {
        let c = Colors::new(None);
        assert_eq!(c.integer(0), LIGHT_BLUE);
        assert_eq!(c.integer(1), BOLD_BLUE);
    }
}
