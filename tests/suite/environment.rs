//! The suite's environment, made the same for every developer before any
//! test runs.
//!
//! The tools read variables that change what they print, as sysstat does:
//! `S_COLORS` and `S_COLORS_SGR` (colours), `S_TIME_FORMAT` (ISO dates),
//! `POSIXLY_CORRECT` (sectors instead of kilobytes), and `LC_ALL`,
//! `LC_TIME` and `LC_NUMERIC` (dates and the decimal point, over `LANG`).
//! Set in the shell that runs `cargo test` (`S_COLORS=always` in a
//! profile, `LC_ALL` of a locale not installed), they reached every
//! program a test starts: with them, 11 tests failed that pass without.
//! They are removed from this process before `main`, so its children
//! inherit none; a test that checks one sets it on its own command. `LANG`
//! and `TZ` stay: the suite passed under `LANG=de_DE.UTF-8` and under
//! `TZ=Asia/Kolkata`.

use std::ffi::CStr;

/// The variables removed.
const REMOVED: [&CStr; 7] = [
    c"S_COLORS",
    c"S_COLORS_SGR",
    c"S_TIME_FORMAT",
    c"POSIXLY_CORRECT",
    c"LC_ALL",
    c"LC_TIME",
    c"LC_NUMERIC",
];

/// Removes [`REMOVED`] from the environment.
extern "C" fn remove_variables() {
    for name in REMOVED {
        // SAFETY: unsetenv of a NUL-terminated name, before `main`, while
        // this process has one thread and nothing else reads the
        // environment.
        unsafe { libc::unsetenv(name.as_ptr()) };
    }
}

/// Runs [`remove_variables`] before `main` (and so before libtest starts
/// any thread), as the C runtime runs every entry of `.init_array`.
#[used]
#[unsafe(link_section = ".init_array")]
static REMOVE_VARIABLES: extern "C" fn() = remove_variables;
