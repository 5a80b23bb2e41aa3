//! Command-line errors that depend on the order of the arguments, against
//! Debian's `/usr/bin/iostat`: sysstat checks the directory of `-f DIR`
//! and the type of `-j TYPE` where its scan meets them, so the first
//! failing check decides the message, even before a `-V` later on.
//!
//! Only the exit status, the first line of standard error and an empty
//! standard output are compared: sysstat 12.6.1's usage text lacks `-G`
//! and `-U`, and iostat-rs adds its `Extensions:` lines. The same
//! expectations are also checked without sysstat, so the test holds on a
//! machine without it.

use std::os::unix::process::CommandExt;
use std::process::Command;

use crate::skip;
use crate::sysstat_compare::SYSSTAT;

/// A directory no test creates, a type no `/dev/disk` has.
const MISSING: &str = "/nonexistent-hwstat-usage-order";
const BOGUS: &str = "bogus-hwstat-type";

/// Cases and the first line of standard error expected (status 1 for all).
fn cases() -> Vec<(Vec<String>, &'static str)> {
    let usage = "Usage: iostat [ options ] [ <interval> [ <count> ] ]";
    let invalid = "Invalid type of persistent device name";
    let long_type = "a".repeat(511);
    [
        (vec!["-f", MISSING, "-V"], usage),
        (vec!["-j", BOGUS, "-V"], invalid),
        (vec!["-j", BOGUS, "-f", MISSING], invalid),
        (vec!["-f", MISSING, "-j", BOGUS], usage),
        (vec!["-f", MISSING, "-j", BOGUS, "-Q"], usage),
        (vec!["-j", BOGUS, "-f", MISSING, "-Q"], invalid),
        (vec!["-d", "-f", ""], usage),
        (vec!["-d", "+f", "", "-V"], usage),
        (vec!["-j", long_type.as_str()], usage),
    ]
    .into_iter()
    .map(|(args, first)| (args.into_iter().map(String::from).collect(), first))
    .collect()
}

/// Status, first line of standard error, standard output, with `iostat`
/// as the program name.
fn run(program: &str, args: &[String]) -> (Option<i32>, String, String) {
    let out = Command::new(program)
        .arg0("iostat")
        .args(args)
        .current_dir("/")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    (
        out.status.code(),
        err.lines().next().unwrap_or("").to_string(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn directory_and_type_checks_come_in_command_line_order() {
    for (args, first) in cases() {
        let got = run(env!("CARGO_BIN_EXE_iostat-rs"), &args);
        assert_eq!(
            got,
            (Some(1), first.to_string(), String::new()),
            "iostat-rs {args:?}"
        );
    }
}

#[test]
fn directory_and_type_checks_match_sysstat() {
    let missing = (!std::path::Path::new(SYSSTAT).exists())
        .then(|| format!("{SYSSTAT} is missing (apt-get install sysstat)"));
    if !skip::runs_unless("directory_and_type_checks_match_sysstat", missing) {
        return;
    }
    for (args, _) in cases() {
        assert_eq!(
            run(env!("CARGO_BIN_EXE_iostat-rs"), &args),
            run(SYSSTAT, &args),
            "{args:?}"
        );
    }
}
