//! How a test that cannot run here says so.
//!
//! Under `CI=true` nothing may skip: the test fails with the reason. On a
//! developer's machine the test returns early after one line on the real
//! standard error (written past the test harness's capture, so it shows
//! without `--nocapture`), naming what is missing and how to provide it.

use std::io::Write;

/// True when running under CI, where every test must run.
pub fn in_ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// Reports that `test` cannot run because of `reason` (what is missing and
/// how to provide it): panics under CI, prints one `SKIPPED` line otherwise.
pub fn skip(test: &str, reason: &str) {
    assert!(!in_ci(), "{test} cannot run under CI=true: {reason}");
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {reason}");
}

/// Whether `test` can run: true when nothing is `missing`; otherwise
/// reports what is, as [`skip`] does, and returns false.
pub fn runs_unless(test: &str, missing: Option<String>) -> bool {
    match missing {
        None => true,
        Some(why) => {
            skip(test, &why);
            false
        }
    }
}
