//! contrib/prometheus/rules.yml checked and unit-tested by Prometheus's own
//! `promtool` against counter series whose rates were worked out by hand
//! (contrib/prometheus/rules_test.yml). Needs Debian's `prometheus` package.

use crate::skip;

use std::path::Path;
use std::process::Command;

#[test]
fn recording_rules_give_the_hand_computed_values() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/prometheus");
    let run = |args: &[&str]| {
        Command::new("promtool")
            .args(args)
            .current_dir(&dir)
            .output()
    };
    let checked = match run(&["check", "rules", "rules.yml"]) {
        Ok(out) => out,
        Err(e) => {
            skip::skip(
                "recording_rules",
                &format!("promtool: {e}; install Debian's prometheus package"),
            );
            return;
        }
    };
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stdout)
    );
    let tested = run(&["test", "rules", "rules_test.yml"]).unwrap();
    assert!(
        tested.status.success(),
        "{}{}",
        String::from_utf8_lossy(&tested.stdout),
        String::from_utf8_lossy(&tested.stderr)
    );
}
