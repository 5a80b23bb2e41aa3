//! Local-time formatting with the C library, so that `TZ` and the formats of
//! `strftime(3)` behave exactly as in the C tools we match.

use std::ffi::CString;
use std::time::{SystemTime, UNIX_EPOCH};

use super::osname;

unsafe extern "C" {
    /// Reads `TZ` (POSIX); the libc crate does not bind it.
    fn tzset();
}

/// Seconds since the Unix epoch (negative before it).
pub fn unix_seconds(time: SystemTime) -> i64 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    }
}

/// Formats `time` in the local time zone with a `strftime(3)` format, in the
/// C locale (this program never calls `setlocale`; [`super::locale`] gives
/// the user's). Returns `None` when the format cannot be applied.
///
/// A locale of another character set (`ja_JP.EUC-JP`) gives bytes that are
/// not UTF-8: each is kept as one of [`osname`]'s raw byte characters, which
/// text reports print as the byte itself (as sysstat prints the date) and
/// the machine formats as `\xNN`.
pub fn strftime_local(format: &str, time: SystemTime) -> Option<String> {
    format_local(format, time, |buf, fmt, tm| {
        // SAFETY: buf is writable for its length; fmt is NUL-terminated; tm
        // is filled.
        unsafe { libc::strftime(buf.as_mut_ptr().cast(), buf.len(), fmt.as_ptr(), tm) }
    })
}

/// [`strftime_local`] in `locale`, a live locale object from `newlocale(3)`.
pub(crate) fn strftime_local_in(
    format: &str,
    time: SystemTime,
    locale: libc::locale_t,
) -> Option<String> {
    format_local(format, time, |buf, fmt, tm| {
        // SAFETY: as in `strftime_local`, and the caller's locale is live.
        unsafe { libc::strftime_l(buf.as_mut_ptr().cast(), buf.len(), fmt.as_ptr(), tm, locale) }
    })
}

/// `time` broken down in the local time zone (`TZ`) and handed to
/// `strftime`, a `strftime(3)` call that fills the buffer and returns the
/// length it wrote.
fn format_local(
    format: &str,
    time: SystemTime,
    strftime: impl FnOnce(&mut [u8], &CString, &libc::tm) -> usize,
) -> Option<String> {
    let secs = unix_seconds(time) as libc::time_t;
    let fmt = CString::new(format).ok()?;
    // SAFETY: tzset has no preconditions; localtime_r fills a zeroed tm we own.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    unsafe {
        tzset();
        if libc::localtime_r(&secs, &mut tm).is_null() {
            return None;
        }
    }
    let mut buf = vec![0u8; 256];
    let n = strftime(&mut buf, &fmt, &tm);
    if n == 0 && !format.is_empty() {
        return None;
    }
    buf.truncate(n);
    Some(osname::from_bytes(&buf).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// In a child process given `TZ=UTC`: setting `TZ` here races with the
    /// other tests' threads, which read the environment (glibc's `tzset`
    /// and `newlocale`, a `Command`'s spawn) while `setenv` rewrites it.
    #[test]
    fn formats_like_strftime_in_utc() {
        if std::env::var_os("HWSTAT_CLOCK_CHILD").is_none() {
            let name = "common::clock::tests::formats_like_strftime_in_utc";
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", name, "--nocapture"])
                .env("HWSTAT_CLOCK_CHILD", "1")
                .env("TZ", "UTC")
                .output()
                .unwrap();
            // The filter must have found the test: a renamed one would run
            // nothing and succeed.
            assert!(
                out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed"),
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            return;
        }
        let t = UNIX_EPOCH + Duration::from_secs(1_591_016_000);
        assert_eq!(strftime_local("%x %X", t).unwrap(), "06/01/20 12:53:20");
        assert_eq!(
            strftime_local("%FT%T%z", t).unwrap(),
            "2020-06-01T12:53:20+0000"
        );
        assert_eq!(unix_seconds(t), 1_591_016_000);
    }
}
