//! vcpustat where powerpc-utils' vcpustat (1.3.13, `src/vcpustat.c`) and the
//! kernel (`arch/powerpc/platforms/pseries/lpar.c`) set the rules: when the
//! first report comes, how wrapped 32-bit counters read, `-n -r`, which file
//! is missing, an empty statistics file and the frequencies the kernel
//! refuses. Each test builds its own `--sysroot` tree.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const STATS: &str = "proc/powerpc/vcpudispatch_stats";
const FREQ: &str = "proc/powerpc/vcpudispatch_stats_freq";

/// A fresh tree under the test target directory with the given files.
fn tree(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("vcpustat_compat_{name}"));
    let _ = fs::remove_dir_all(&root);
    fs::create_dir_all(root.join("proc/powerpc")).unwrap();
    for (path, text) in files {
        fs::write(root.join(path), text).unwrap();
    }
    root
}

fn vcpustat(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vcpustat"))
        .arg("--sysroot")
        .arg(root)
        .args(args)
        .output()
        .expect("vcpustat runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Two vCPUs; cpu1: 2515 dispatches, 2509 at home.
const TWO_CPUS: &str = "cpu0 6839 4126 2683 30 0 6821 18 0\ncpu1 2515 1274 1229 12 0 2509 6 0\n";

#[test]
fn raw_interval_reports_come_one_interval_after_the_start() {
    // powerpc-utils reads, sleeps one interval, then prints: `-r 0.3 2`
    // prints its reports at 0.3 s and 0.6 s, never at 0 s.
    let root = tree("raw_timing", &[(STATS, TWO_CPUS), (FREQ, "50\n")]);
    let start = Instant::now();
    let out = vcpustat(&root, &["-r", "0.3", "2"]);
    let elapsed = start.elapsed();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().filter(|l| l.starts_with("all ")).count(), 2);
    assert!(
        elapsed >= Duration::from_millis(580),
        "two reports after {elapsed:?}: the first came without waiting an interval"
    );
}

#[test]
fn a_wrapped_cumulative_counter_never_gives_a_share_above_100() {
    // The issue's line: home is the C int -10000, printed sign-extended.
    let line = "cpu0 4096 4000 96 0 0 18446744073709541616 2000 0\n";
    let root = tree("wrapped", &[(STATS, line), (FREQ, "50\n")]);
    let out = vcpustat(&root, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let cpu0: Vec<&str> = stdout
        .lines()
        .find(|l| l.starts_with("cpu0 "))
        .unwrap()
        .split_whitespace()
        .collect();
    // The counts as the 32-bit counters they are (2^32 - 10000), no ratio.
    assert_eq!(
        cpu0,
        [
            "cpu0",
            "4096",
            "|",
            "4000",
            "96",
            "0",
            "0",
            "|",
            "4294957296",
            "2000",
            "0",
            "|",
            "-"
        ]
    );
    let all = stdout.lines().find(|l| l.starts_with("all ")).unwrap();
    assert!(all.ends_with("|       -"), "{all}");
    assert!(
        stdout.contains("note: cpu0: counters sum to more than total"),
        "{stdout}"
    );
    let json = vcpustat(&root, &["-o", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let rows = json["samples"][0]["rows"].as_array().unwrap();
    assert_eq!(rows[0]["numa_home_disp"], 4_294_957_296u64);
    assert_eq!(rows[0]["home_ratio"], serde_json::Value::Null);
    assert_eq!(rows[1]["cpu"], "all");
    assert_eq!(rows[1]["home_ratio"], serde_json::Value::Null);
    // The percent view of an interval run over such a counter: every
    // share is within 0-100 (here the counters do not move: no ratio).
    let out = vcpustat(&root, &["-r", "0.01", "1"]);
    let stdout = text(&out.stdout);
    assert!(
        stdout
            .lines()
            .find(|l| l.starts_with("cpu0 "))
            .unwrap()
            .ends_with("|       -")
    );
}

#[test]
fn numeric_with_raw_is_accepted_and_shows_the_cumulative_counts() {
    let root = tree("numeric_raw", &[(STATS, TWO_CPUS), (FREQ, "50\n")]);
    let out = vcpustat(&root, &["-n", "-r", "0.01", "1"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let cpu1: Vec<&str> = stdout
        .lines()
        .find(|l| l.starts_with("cpu1 "))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        cpu1,
        [
            "cpu1", "2515", "|", "1274", "1229", "12", "0", "|", "2509", "6", "0", "|", "99.76"
        ]
    );
}

#[test]
fn counters_a_newer_kernel_adds_after_the_eight_are_skipped() {
    // powerpc-utils' sscanf reads the first eight and ignores the rest, so
    // it keeps working if the kernel gains a counter: so must vcpustat.
    let lines = "cpu0 6839 4126 2683 30 0 6821 18 0 77\ncpu1 2515 1274 1229 12 0 2509 6 0 5 123456789012345678901234\n";
    let root = tree("newer_kernel", &[(STATS, lines), (FREQ, "50\n")]);
    let out = vcpustat(&root, &["-o", "csv"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let rows: Vec<&str> = stdout.lines().skip(1).collect();
    assert_eq!(rows.len(), 3, "two vCPUs and all: {stdout}");
    let expected_fields = [
        ",cpu0,6839,4126,2683,30,0,6821,18,0,",
        ",cpu1,2515,1274,1229,12,0,2509,6,0,",
    ];
    for (row, counts) in rows.iter().zip(expected_fields) {
        assert!(
            row.contains(counts),
            "row {row:?} lacks the counts {counts}"
        );
    }
    // A word that is no counter is still a garbled line.
    let root = tree(
        "newer_kernel_bad",
        &[(STATS, "cpu0 1 1 0 0 0 1 0 0 x\n"), (FREQ, "50\n")],
    );
    let out = vcpustat(&root, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("line 1: expected"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_missing_frequency_file_is_named() {
    let root = tree("no_freq", &[(STATS, TWO_CPUS)]);
    let out = vcpustat(&root, &["--status"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("vcpustat: cannot read /proc/powerpc/vcpudispatch_stats_freq: "),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    // The statistics file missing is still explained as before.
    let root = tree("no_stats", &[(FREQ, "50\n")]);
    let stderr = text(&vcpustat(&root, &["--status"]).stderr);
    assert!(
        stderr.starts_with("vcpustat: /proc/powerpc/vcpudispatch_stats does not exist: "),
        "{stderr}"
    );
}

/// Without the statistics file (another platform, a dedicated partition)
/// a run fails without leaving the lock file the runs meet in.
#[test]
fn no_lock_file_is_made_where_there_are_no_statistics() {
    let root = tree("no_stats_no_lock", &[(FREQ, "50\n")]);
    std::fs::create_dir(root.join("run")).unwrap();
    for args in [&["0.01", "1"][..], &["--freq", "60"], &["-e"]] {
        let out = vcpustat(&root, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            text(&out.stderr)
                .starts_with("vcpustat: /proc/powerpc/vcpudispatch_stats does not exist: "),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(!root.join("run/vcpustat.lock").exists(), "{args:?}");
    }
    // With the statistics, the runs meet there.
    fs::write(root.join(STATS), TWO_CPUS).unwrap();
    assert!(vcpustat(&root, &["0.01", "1"]).status.success());
    assert!(root.join("run/vcpustat.lock").exists());
}

#[test]
fn an_empty_statistics_file_is_an_error_not_on_without_cpus() {
    let root = tree("empty", &[(STATS, ""), (FREQ, "50\n")]);
    for args in [&["--status"][..], &[], &["-n", "0.01", "1"]] {
        let out = vcpustat(&root, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(text(&out.stdout), "", "{args:?}");
        assert_eq!(
            text(&out.stderr),
            "vcpustat: /proc/powerpc/vcpudispatch_stats: line 1: expected \"off\" or one \
             \"cpu<N>\" line per online CPU (the file is empty)\n",
            "{args:?}"
        );
    }
}

#[test]
fn a_count_that_is_not_whole_and_a_third_operand_are_named() {
    let root = tree("operands", &[(STATS, "off\n"), (FREQ, "50\n")]);
    for (args, message) in [
        (
            &["1", "abc"][..],
            "invalid value 'abc' for '[COUNT]': expected a whole number of reports",
        ),
        (
            &["1", "2", "3"],
            "unexpected argument '3': a report takes at most an INTERVAL and a COUNT",
        ),
        (
            &["--", "1", "2", "3"],
            "unexpected argument '3': a report takes at most an INTERVAL and a COUNT",
        ),
        // Negative numbers are refused as values, not as unknown options.
        (
            &["1", "2", "-3"],
            "unexpected argument '-3': a report takes at most an INTERVAL and a COUNT",
        ),
        (
            &["1", "-2"],
            "invalid value '-2' for '[COUNT]': expected a whole number of reports",
        ),
        (
            &["-1"],
            "invalid value '-1' for '[INTERVAL]': invalid interval \"-1\": expected seconds \
             (2, 0.5) or a duration (250ms, 1m)",
        ),
        // A word that is no number clap splits into short options, and
        // names the first: an unknown option, whether or not it begins
        // with a digit and whatever operands came before it.
        (&["-5x"], "unexpected argument '-5' found"),
        (&["1", "2", "-3x"], "unexpected argument '-3' found"),
        // A real subcommand after the operands keeps clap's message (the
        // --sysroot is the test's).
        (
            &["1", "2", "trace"],
            "the subcommand 'trace' cannot be used with: --sysroot <DIR> [INTERVAL] [COUNT]",
        ),
    ] {
        let out = vcpustat(&root, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(text(&out.stdout), "", "{args:?}");
        assert_eq!(
            text(&out.stderr),
            format!("vcpustat: {message} (see 'vcpustat --help')\n"),
            "{args:?}"
        );
    }
    assert_eq!(fs::read_to_string(root.join(STATS)).unwrap(), "off\n");
}

#[test]
fn frequencies_every_kernel_refuses_are_refused_before_anything_is_written() {
    // lpar.c: kstrtoint, then `freq < 1 || freq > HZ` is EINVAL; HZ is at
    // most 1000 (kernel/Kconfig.hz).
    let root = tree("freq", &[(STATS, "off\n"), (FREQ, "50\n")]);
    for value in ["-5", "0", "1001", "2147483648", "x"] {
        for args in [
            vec!["--freq", value],
            vec!["--freq", value, "--enable"],
            vec!["--freq", value, "1", "1"],
        ] {
            let out = vcpustat(&root, &args);
            assert_eq!(out.status.code(), Some(2), "{args:?}");
            let stderr = text(&out.stderr);
            assert_eq!(
                stderr,
                format!(
                    "vcpustat: invalid value '{value}' for '--freq <N>': expected a whole number \
                     of drains per second from 1 to 1000 (the kernel accepts 1 to its HZ, at \
                     most 1000) (see 'vcpustat --help')\n"
                ),
                "{args:?}"
            );
        }
    }
    assert_eq!(fs::read_to_string(root.join(FREQ)).unwrap(), "50\n");
    assert_eq!(fs::read_to_string(root.join(STATS)).unwrap(), "off\n");
    // The largest a kernel may accept is written.
    let out = vcpustat(&root, &["--freq", "1000"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(fs::read_to_string(root.join(FREQ)).unwrap(), "1000\n");
}

/// powerpc-utils' vcpustat reads its options with getopt_long, which takes
/// one given twice (`-n -n`, `-nn`); so does vcpustat.
#[test]
fn an_option_given_twice_is_taken_as_getopt_takes_it() {
    let root = tree("twice", &[(STATS, TWO_CPUS)]);
    let once = vcpustat(&root, &["-n"]);
    assert!(once.status.success(), "{}", text(&once.stderr));
    for args in [&["-n", "-n"][..], &["-nn"], &["-n", "-r", "-r", "-n"]] {
        let out = vcpustat(&root, args);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    }
    assert_eq!(text(&vcpustat(&root, &["-nn"]).stdout), text(&once.stdout));
}

/// `--top` outside 1 to 2^64 - 1 is refused in one line that says what
/// it takes, not with Rust's parse error ("number too large to fit in
/// target type").
#[test]
fn a_top_out_of_range_says_what_it_takes() {
    let root = tree("top", &[(STATS, TWO_CPUS)]);
    for value in ["0", "abc", "99999999999999999999", ""] {
        let out = vcpustat(&root, &["--top", value]);
        assert_eq!(out.status.code(), Some(2), "{value:?}");
        assert_eq!(
            text(&out.stderr),
            format!(
                "vcpustat: invalid value '{value}' for '--top <N>': expected a whole number of \
                 vCPUs from 1 to 18446744073709551615 (see 'vcpustat --help')\n"
            )
        );
    }
    let out = vcpustat(&root, &["--top", "1"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}
