//! The user's locale, for the two things sysstat's iostat takes from it:
//! how `strftime(3)`'s `%x` and `%X` print a date and a time (`LC_TIME`:
//! `12/03/2026 10:57:53 AM` in `en_US.UTF-8`, `03.12.2026 10:57:53` in
//! `de_DE.UTF-8`) and the decimal point of its numbers (`LC_NUMERIC`: `27,44`
//! in `de_DE.UTF-8`). sysstat's `init_nls` calls `setlocale(3)` for both;
//! this module reads the same categories with `newlocale(3)` instead, so that
//! no process-wide state changes, and keeps them in a value that is passed
//! where they are used.
//!
//! `LC_ALL`, then `LC_TIME` or `LC_NUMERIC`, then `LANG` decide, as for any C
//! program; a locale the C library cannot load leaves that category in the
//! C locale, as `setlocale` does.

use std::ffi::CStr;
use std::sync::Arc;
use std::time::SystemTime;

use super::clock;

/// A date and time locale loaded with `newlocale(3)`, freed when dropped.
#[derive(Debug)]
struct TimeLocale(libc::locale_t);

// SAFETY: a locale object is not changed after `newlocale` returns it, and
// POSIX lets any thread pass it to `strftime_l`; it is freed only on drop,
// when no other reference is left.
unsafe impl Send for TimeLocale {}
// SAFETY: as above: shared use only reads the object.
unsafe impl Sync for TimeLocale {}

impl Drop for TimeLocale {
    fn drop(&mut self) {
        // SAFETY: a locale newlocale returned, freed once.
        unsafe { libc::freelocale(self.0) };
    }
}

/// The user's date, time and number conventions, or the C locale's.
#[derive(Debug, Clone)]
pub struct Locale {
    /// `LC_TIME` as `newlocale` loaded it; `None` is the C locale (also
    /// when the environment's did not load).
    time: Option<Arc<TimeLocale>>,
    /// `LC_NUMERIC`'s decimal point: `.`, `,` or, in a few locales, a
    /// character of more than one byte.
    decimal_point: String,
}

impl Default for Locale {
    /// The C locale.
    fn default() -> Locale {
        Locale::c()
    }
}

impl Locale {
    /// The C locale: `06/01/20 12:53:20` and a `.` for the decimal point.
    pub fn c() -> Locale {
        Locale {
            time: None,
            decimal_point: ".".to_string(),
        }
    }

    /// The locale the environment selects (`LC_ALL`, `LC_TIME`,
    /// `LC_NUMERIC`, `LANG`), as `setlocale(category, "")` would load it.
    pub fn from_environment() -> Locale {
        // SAFETY: newlocale with a NUL-terminated name and no base locale;
        // a null result is an error, and leaves nothing to free.
        let time =
            unsafe { libc::newlocale(libc::LC_TIME_MASK, c"".as_ptr(), std::ptr::null_mut()) };
        let time = (!time.is_null()).then(|| Arc::new(TimeLocale(time)));
        Locale {
            time,
            decimal_point: environment_decimal_point().unwrap_or_else(|| ".".to_string()),
        }
    }

    /// The decimal point text numbers are printed with.
    pub fn decimal_point(&self) -> &str {
        &self.decimal_point
    }

    /// Formats `time` in the local time zone with a `strftime(3)` format in
    /// this locale. `None` when the format cannot be applied.
    pub fn strftime(&self, format: &str, time: SystemTime) -> Option<String> {
        match &self.time {
            None => clock::strftime_local(format, time),
            Some(locale) => clock::strftime_local_in(format, time, locale.0),
        }
    }

    /// A report's time as sysstat's `iostat -t` prints it: `%x %X` in this
    /// locale, or ISO 8601 (`%FT%T%z`) when `iso` (`S_TIME_FORMAT=ISO`);
    /// empty when the format cannot be applied.
    pub fn report_time(&self, time: SystemTime, iso: bool) -> String {
        let format = if iso { "%FT%T%z" } else { "%x %X" };
        self.strftime(format, time).unwrap_or_default()
    }

    /// Replaces the decimal point of the number that `text[start..]` holds
    /// (one that `format!("{:.2}")` or the fast formatter wrote, with a `.`)
    /// by this locale's. The field keeps its padding: `printf(3)` counts the
    /// point as one character of the width whatever its bytes.
    pub fn localise_number(&self, text: &mut String, start: usize) {
        if self.decimal_point == "." {
            return;
        }
        if let Some(at) = text[start..].find('.') {
            text.replace_range(start + at..start + at + 1, &self.decimal_point);
        }
    }
}

/// `LC_NUMERIC`'s decimal point in the environment's locale, if it loads.
fn environment_decimal_point() -> Option<String> {
    // SAFETY: as in `from_environment`.
    let numeric =
        unsafe { libc::newlocale(libc::LC_NUMERIC_MASK, c"".as_ptr(), std::ptr::null_mut()) };
    if numeric.is_null() {
        return None;
    }
    // SAFETY: nl_langinfo_l on a live locale returns a NUL-terminated
    // string that lives as long as the locale; it is copied before the
    // locale is freed, once.
    unsafe {
        let point = CStr::from_ptr(libc::nl_langinfo_l(libc::RADIXCHAR, numeric))
            .to_str()
            .ok()
            .filter(|p| !p.is_empty())
            .map(str::to_owned);
        libc::freelocale(numeric);
        point
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_c_locale_prints_numbers_as_they_are() {
        let c = Locale::c();
        let mut text = String::from("sda  1.50 vg.data 2.25");
        c.localise_number(&mut text, 0);
        assert_eq!(text, "sda  1.50 vg.data 2.25");
        assert_eq!(c.decimal_point(), ".");
    }

    #[test]
    fn another_point_replaces_only_the_number_after_start() {
        let mut comma = Locale::c();
        comma.decimal_point = ",".to_string();
        let mut text = String::from("vg.data");
        let start = text.len();
        text.push_str("    2.25");
        comma.localise_number(&mut text, start);
        assert_eq!(text, "vg.data    2,25");
        // A point of two bytes (ps_AF's U+066B) keeps the field's padding,
        // as glibc's printf keeps it (one character).
        let mut arabic = Locale::c();
        arabic.decimal_point = "\u{66b}".to_string();
        let mut text = String::from("    3.14");
        arabic.localise_number(&mut text, 0);
        assert_eq!(text, "    3\u{66b}14");
        // No point (no decimals): nothing to replace.
        let mut text = String::from("   7");
        arabic.localise_number(&mut text, 0);
        assert_eq!(text, "   7");
    }
}
