//! vcpustat on fixture trees (`--sysroot`): the seed document's example data
//! (cpu0 6839 dispatches, 6821 at home: 99.7 %), and the statistics off.

use std::process::{Command, Output};

use crate::scratch::scratch;

fn vcpustat(fixture: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vcpustat"))
        .arg("--sysroot")
        .arg(format!(
            "{}/tests/fixtures/vcpustat/{fixture}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .args(args)
        .output()
        .expect("vcpustat runs")
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn the_seed_example_is_99_7_percent_home() {
    let text = stdout(&vcpustat("seed", &[]));
    let cpu0 = text.lines().find(|l| l.starts_with("cpu0 ")).unwrap();
    assert_eq!(
        cpu0.split_whitespace().collect::<Vec<_>>(),
        [
            "cpu0", "6839", "|", "4126", "2683", "30", "0", "|", "6821", "18", "0", "|", "99.74"
        ]
    );
    // all: 40,328 dispatches of which 40,206 at home (summed with awk from the seed).
    let all = text.lines().find(|l| l.starts_with("all ")).unwrap();
    assert!(all.starts_with("all          40328 |"), "{all}");
    assert!(all.ends_with("|   99.70"), "{all}");
    assert_eq!(text.lines().filter(|l| l.starts_with("cpu")).count(), 17);
}

#[test]
fn the_seed_as_json_and_prometheus() {
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&vcpustat("seed", &["-o", "json"]))).unwrap();
    let rows = json["samples"][0]["rows"].as_array().unwrap();
    assert_eq!(rows[0]["cpu"], "cpu0");
    assert_eq!(rows[0]["home_ratio"], 0.9974);
    assert_eq!(rows[0]["numa_remote_disp"], 18);
    assert_eq!(rows[16]["cpu"], "all");
    assert_eq!(rows[16]["total_disp"], 40328);
    // cpu0's line: 6839 4126 2683 30 0 6821 18 0.
    let prom = stdout(&vcpustat("seed", &["-o", "prometheus", "--cpus", "0"]));
    for line in [
        "# TYPE vcpustat_dispatches_total counter\n",
        "vcpustat_dispatches_total{cpu=\"0\"} 6839\n",
        "# TYPE vcpustat_dispatches_by_numa_distance_total counter\n",
        "vcpustat_dispatches_by_numa_distance_total{cpu=\"0\",distance=\"home\"} 6821\n",
        "vcpustat_dispatches_by_numa_distance_total{cpu=\"0\",distance=\"adj\"} 18\n",
        "vcpustat_dispatches_by_scope_total{cpu=\"0\",scope=\"core\"} 4126\n",
        "vcpustat_dispatches_by_scope_total{cpu=\"0\",scope=\"chip\"} 2683\n",
        "vcpustat_dispatches_by_scope_total{cpu=\"0\",scope=\"socket\"} 30\n",
        "vcpustat_dispatch_statistics_enabled 1\n",
    ] {
        assert!(prom.contains(line), "{line} in {prom}");
    }
    assert!(!prom.contains("cpu=\"1\""), "{prom}");
}

/// The samples of `metric` in an exposition: (labels, value).
fn samples<'a>(prom: &'a str, metric: &str) -> Vec<(&'a str, f64)> {
    prom.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, rest) = l.split_once(' ')?;
            let (name, labels) = match series.split_once('{') {
                Some((name, labels)) => (name, labels.trim_end_matches('}')),
                None => (series, ""),
            };
            let value = rest.split(' ').next()?.parse().ok()?;
            (name == metric).then_some((labels, value))
        })
        .collect()
}

#[test]
fn prometheus_has_per_vcpu_counters_only_and_sums_match_the_seed() {
    // Sums over the seed's 16 vCPUs, computed with awk from the fixture:
    // total 40328, core 21485, chip 18611, socket 232, cec 0, home 40206,
    // adj 122, far 0. No aggregate series: sum() over cpu gives it.
    let prom = stdout(&vcpustat("seed", &["-o", "prometheus"]));
    assert!(!prom.contains("cpu=\"all\""), "{prom}");
    assert!(!prom.contains("vcpustat_all_"), "{prom}");
    let total = samples(&prom, "vcpustat_dispatches_total");
    assert_eq!(total.len(), 16);
    assert_eq!(total.iter().map(|(_, v)| v).sum::<f64>(), 40328.0);
    let sum_of = |metric: &str, label: &str| -> f64 {
        samples(&prom, metric)
            .iter()
            .filter(|(l, _)| l.ends_with(label))
            .map(|(_, v)| v)
            .sum()
    };
    let scope = "vcpustat_dispatches_by_scope_total";
    let node = "vcpustat_dispatches_by_numa_distance_total";
    assert_eq!(sum_of(scope, "scope=\"core\""), 21485.0);
    assert_eq!(sum_of(scope, "scope=\"chip\""), 18611.0);
    assert_eq!(sum_of(scope, "scope=\"socket\""), 232.0);
    assert_eq!(sum_of(scope, "scope=\"cec\""), 0.0);
    assert_eq!(sum_of(node, "distance=\"home\""), 40206.0);
    assert_eq!(sum_of(node, "distance=\"adj\""), 122.0);
    assert_eq!(sum_of(node, "distance=\"far\""), 0.0);
    // --top would make series come and go: refused with these outputs.
    let top = vcpustat("seed", &["-o", "prometheus", "--top", "3"]);
    assert_eq!(top.status.code(), Some(2));
    let err = String::from_utf8(top.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--top"), "{err}");
    // JSON keeps the clearly labelled all row.
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&vcpustat("seed", &["-o", "json", "--top", "3"]))).unwrap();
    let rows = json["samples"][0]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[3]["cpu"], "all");
    assert_eq!(rows[3]["numa_home_disp"], 40206);
}

#[test]
fn a_cpus_entry_that_is_not_online_is_a_note_of_the_report() {
    // The seed's vCPUs are cpu0 to cpu15.
    let text = stdout(&vcpustat("seed", &["--cpus", "0,99,100"]));
    assert!(
        text.ends_with("note: cpus 99-100 (from --cpus) are not online\n\n"),
        "{text}"
    );
    // However many: one note, the CPUs as a list.
    let text = stdout(&vcpustat("seed", &["--cpus", "0,14-1023,2000,2002"]));
    assert!(
        text.ends_with("note: cpus 16-1023,2000,2002 (from --cpus) are not online\n\n"),
        "{text}"
    );
    assert_eq!(text.matches("note:").count(), 1, "{text}");
    let json: serde_json::Value = serde_json::from_str(&stdout(&vcpustat(
        "seed",
        &["--cpus", "0,99", "-o", "json"],
    )))
    .unwrap();
    assert_eq!(
        json["samples"][0]["notes"],
        serde_json::json!(["cpu99 (from --cpus) is not online"])
    );
    // CSV has no column for notes: they go to standard error.
    let csv = vcpustat("seed", &["--cpus", "0,99", "-o", "csv"]);
    assert_eq!(
        String::from_utf8_lossy(&csv.stderr),
        "vcpustat: note: cpu99 (from --cpus) is not online\n"
    );
    assert!(!stdout(&csv).contains("cpu99"));
    let text = stdout(&vcpustat("seed", &["--cpus", "0-15"]));
    assert!(!text.contains("note:"), "{text}");
    // None online: the report still has its header and all row, of zeros
    // (an empty line alone before; a CSV header without rows).
    let text = stdout(&vcpustat("seed", &["--cpus", "99"]));
    assert!(
        text.contains(
            "\nall              0 |          0          0          0          0 |          0          0          0 |       -\n"
        ),
        "{text}"
    );
    let csv = stdout(&vcpustat("seed", &["--cpus", "99", "-o", "csv"]));
    assert!(
        csv.lines().nth(1).is_some_and(|l| l.contains(",all,0,")),
        "{csv}"
    );
}

#[test]
fn cpus_top_and_sort_choose_the_rows() {
    // Worst home ratios of the seed: cpu11 2260/2273 = 99.43 %, cpu10
    // 2187/2197 = 99.545 %, cpu14 2196/2206 = 99.547 %.
    let text = stdout(&vcpustat("seed", &["--top", "3"]));
    let cpus: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("cpu") && !l.starts_with("cpu "))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(cpus, ["cpu11", "cpu10", "cpu14"]);
    // all still covers every vCPU.
    assert!(text.contains("all          40328 |"));
    let text = stdout(&vcpustat("seed", &["--cpus", "0-1", "--sort", "total"]));
    let all = text.lines().find(|l| l.starts_with("all ")).unwrap();
    assert!(all.starts_with("all           9354 |"), "{all}");
}

#[test]
fn statistics_off_says_how_to_start_them() {
    let text = stdout(&vcpustat("off", &[]));
    assert_eq!(
        text,
        "note: dispatch statistics are off: give an interval (vcpustat 5) to switch them on \
         for a run, or --enable to switch them on\n\n"
    );
    let status = stdout(&vcpustat("off", &["--status"]));
    assert_eq!(
        status,
        "dispatch statistics: off\nfrequency: 50 per second\n"
    );
}

#[test]
fn bad_arguments_name_what_was_expected() {
    let out = vcpustat("seed", &["--cpus", "x"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("invalid CPU list \"x\""), "{err}");
    let out = vcpustat("seed", &["-d", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "vcpustat: --disable cannot be combined with an interval or --listen: reports need the \
         statistics on\n"
    );
    let out = vcpustat("seed", &["--freq", "0"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn help_explains_the_workflow_the_safety_rule_and_the_columns() {
    let help = stdout(&vcpustat("seed", &["--help"]));
    for needle in [
        "Examples:\n  vcpustat --status\n      show whether the statistics are on",
        "  vcpustat --freq 100 --temporary 5\n      the same for this run only",
        "Safety:",
        "unless --temporary is given",
        "home%   home-node hit ratio",
        "unatt",
        "socket",
        "cec",
        "[INTERVAL] [COUNT]",
        "In json, ndjson and csv it is the last row, with\ncpu `all`",
        "Prometheus output has no `all` series and no ratios",
    ] {
        assert!(help.contains(needle), "--help lacks {needle:?}");
    }
}

/// The first line of `vcpustat -t` on the seed tree in the C locale and
/// UTC, with `S_TIME_FORMAT` set to `time_format` or unset, every digit
/// shown as `9`.
fn first_line_shape_of_t(time_format: Option<&str>) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_vcpustat"));
    command
        .env("TZ", "UTC")
        .env("LC_ALL", "C")
        .env_remove("S_TIME_FORMAT")
        .arg("--sysroot")
        .arg(format!(
            "{}/tests/fixtures/vcpustat/seed",
            env!("CARGO_MANIFEST_DIR")
        ))
        .arg("-t");
    if let Some(value) = time_format {
        command.env("S_TIME_FORMAT", value);
    }
    let text = stdout(&command.output().unwrap());
    let first = text.lines().next().unwrap();
    first
        .chars()
        .map(|c| if c.is_ascii_digit() { '9' } else { c })
        .collect()
}

#[test]
fn t_prints_the_time_of_each_report() {
    assert_eq!(first_line_shape_of_t(None), "99/99/99 99:99:99");
    // As iostat -t: ISO 8601 only for S_TIME_FORMAT exactly ISO.
    assert_eq!(
        first_line_shape_of_t(Some("ISO")),
        "9999-99-99T99:99:99+9999"
    );
    assert_eq!(first_line_shape_of_t(Some("iso")), "99/99/99 99:99:99");
}

#[test]
fn a_malformed_file_is_named_with_its_line() {
    let root = scratch("vcpustat-bad");
    let dir = root.join("proc/powerpc");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("vcpudispatch_stats"),
        "cpu0 1 2 3 4 5 6 7 8\ncpu1 1 2 x\n",
    )
    .unwrap();
    std::fs::write(dir.join("vcpudispatch_stats_freq"), "50\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_vcpustat"))
        .arg("--sysroot")
        .arg(&root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "vcpustat: /proc/powerpc/vcpudispatch_stats: line 2: expected \"cpu<N>\" followed by 8 or \
         more unsigned counters\n"
    );
    std::fs::write(dir.join("vcpudispatch_stats"), "off\n").unwrap();
    let vcpustat = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_vcpustat"))
            .arg("--sysroot")
            .arg(&root)
            .args(args)
            .output()
            .unwrap()
    };
    // Not a number, or one the kernel cannot have (it takes 1 to HZ),
    // which a run would "put back".
    for freq in ["fast\n", "-5\n", "0\n"] {
        std::fs::write(dir.join("vcpudispatch_stats_freq"), freq).unwrap();
        let out = vcpustat(&["--status"]);
        assert_eq!(out.status.code(), Some(1), "{freq}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "vcpustat: /proc/powerpc/vcpudispatch_stats_freq: line 1: expected a decimal \
             frequency of 1 or more\n",
            "{freq}"
        );
    }
    // A report does not read the frequency, whose file the kernel may have
    // failed to create (powerpc-utils never reads it either).
    std::fs::remove_file(dir.join("vcpudispatch_stats_freq")).unwrap();
    let out = vcpustat(&[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

#[test]
fn help_describes_prometheus_output_for_users() {
    let help = stdout(&vcpustat("seed", &["--help"]));
    assert!(
        help.contains(
            "- prometheus: Prometheus text exposition (format 0.0.4) of the cumulative counters\n"
        ),
        "{help}"
    );
    // No implementation notes (module paths, frame writers) in the help.
    assert!(!help.contains("common::"), "{help}");
    assert!(!help.contains("frame format"), "{help}");
}

/// vcpustat replaying `tests/fixtures/charts/vcpustat.rec` (a run of
/// `vcpustat 1`: a baseline and reports every second) with `args`.
fn replay_charts_recording(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vcpustat"))
        .arg("--replay")
        .arg(format!(
            "{}/tests/fixtures/charts/vcpustat.rec",
            env!("CARGO_MANIFEST_DIR")
        ))
        .args(args)
        .output()
        .expect("vcpustat runs")
}

#[test]
fn machine_formats_number_reports_by_sample_as_the_other_tools_do() {
    // Sample 0 is the baseline, not reported: the reports are samples 1
    // and 2, as iostat-rs -y and cxlstat number theirs.
    let ndjson = stdout(&replay_charts_recording(&["-o", "ndjson", "1", "2"]));
    let indexes: Vec<serde_json::Value> = ndjson
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap()["index"].clone())
        .collect();
    assert_eq!(indexes, [1, 2], "{ndjson}");
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&replay_charts_recording(&["-o", "json", "1", "2"]))).unwrap();
    let samples = json["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 2, "{json}");
    assert_eq!(samples[0]["index"], 1);
    assert_eq!(samples[1]["index"], 2);
    // csv: the second column; 9 rows (8 vCPUs and all) per report.
    let csv = stdout(&replay_charts_recording(&["-o", "csv", "1", "2"]));
    let column: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|line| line.split(',').nth(1).unwrap())
        .collect();
    assert_eq!(column, [["1"; 9], ["2"; 9]].concat(), "{csv}");
}

#[test]
fn options_a_run_would_ignore_are_usage_errors_naming_them() {
    let dir = scratch("vcpustat-ignored");
    let svg = dir.join("s.svg");
    let svg = svg.to_str().unwrap();
    for (args, start) in [
        // A control run prints no report for these to shape.
        (
            &["--freq", "50", "-t"][..],
            "-t shapes reports, and --enable",
        ),
        (&["--status", "-t"], "-t shapes reports, and --enable"),
        (
            &["--status", "--svg", svg],
            "--svg draws reports, and --enable",
        ),
        (
            &["--enable", "--cpus", "0"],
            "--cpus chooses the vCPUs of reports",
        ),
        // --listen exports every selected vCPU, as -o prometheus does.
        (
            &["--listen", "127.0.0.1:0", "--top", "2"],
            "--top cannot be used with",
        ),
    ] {
        let out = vcpustat("seed", args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with(&format!("vcpustat: {start}")),
            "{args:?}: {err}"
        );
        assert_eq!(out.stdout, b"", "{args:?}");
    }
    assert!(!std::path::Path::new(svg).exists());
    // --status is not a report, but a run with an interval prints both.
    let out = vcpustat("seed", &["--status", "-t", "0.01", "1"]);
    let text = stdout(&out);
    assert!(text.starts_with("dispatch statistics: on\n"), "{text}");
}
