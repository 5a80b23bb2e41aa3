//! Every tool takes its output format names in any case (`-o JSON`, `-o json`,
//! `-o Csv`) and `-o text` for the default, as one suite; help and output
//! keep each tool's spelling.

use std::path::Path;
use std::process::Command;

fn run(program: &str, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(program).args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn format_names_are_accepted_in_any_case_by_the_three_tools() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let vcpu_root = repo.join("tests/fixtures/vcpustat/seed");
    let vcpu_root = vcpu_root.to_str().unwrap();
    let io_root = crate::scratch::scratch("format-names");
    std::fs::create_dir_all(io_root.join("proc")).unwrap();
    std::fs::create_dir_all(io_root.join("sys/block/sda")).unwrap();
    std::fs::write(
        io_root.join("proc/stat"),
        "cpu  1 0 1 10 0 0 0 0 0 0\ncpu0 1 0 1 10 0 0 0 0 0 0\n",
    )
    .unwrap();
    std::fs::write(io_root.join("proc/uptime"), "100.00 90.00\n").unwrap();
    std::fs::write(
        io_root.join("proc/diskstats"),
        "   8       0 sda 10 0 80 5 0 0 0 0 0 5 5 0 0 0 0 0 0\n",
    )
    .unwrap();
    let io_root_text = io_root.to_str().unwrap().to_string();

    // (spelling, how iostat-rs's output starts, how vcpustat's starts)
    let cases = [
        ("JSON", "{\"sysstat\": {", "{\"tool\":\"vcpustat\""),
        ("json", "{\"sysstat\": {", "{\"tool\":\"vcpustat\""),
        ("Json", "{\"sysstat\": {", "{\"tool\":\"vcpustat\""),
        ("CSV", "timestamp,index,device,", "timestamp,index,cpu,"),
        ("csv", "timestamp,index,device,", "timestamp,index,cpu,"),
        ("Csv", "timestamp,index,device,", "timestamp,index,cpu,"),
    ];
    for (spelling, iostat_start, vcpustat_start) in cases {
        for (program, args, start) in [
            (
                env!("CARGO_BIN_EXE_iostat-rs"),
                ["--sysroot", io_root_text.as_str(), "-d", "-o", spelling].as_slice(),
                iostat_start,
            ),
            (
                env!("CARGO_BIN_EXE_vcpustat"),
                ["--sysroot", vcpu_root, "-o", spelling].as_slice(),
                vcpustat_start,
            ),
        ] {
            let (status, out) = run(program, args);
            assert_eq!(status, Some(0), "{program} -o {spelling}");
            assert!(out.starts_with(start), "{program} -o {spelling}: {out}");
        }
    }
    // `-o text` names the default in every tool: the output without -o
    // (iostat-rs refused it, as sysstat refuses every name but JSON).
    for (program, args) in [
        (
            env!("CARGO_BIN_EXE_iostat-rs"),
            ["--sysroot", io_root_text.as_str(), "-d"].as_slice(),
        ),
        (
            env!("CARGO_BIN_EXE_vcpustat"),
            ["--sysroot", vcpu_root].as_slice(),
        ),
    ] {
        let (status, default) = run(program, args);
        assert_eq!(status, Some(0), "{program}");
        for spelling in ["text", "TEXT"] {
            let (status, out) = run(program, &[args, &["-o", spelling]].concat());
            assert_eq!(status, Some(0), "{program} -o {spelling}");
            assert_eq!(out, default, "{program} -o {spelling}");
        }
    }
    // cxlstat checks the format before anything is opened: a wrong name is a
    // usage error (2), a right one in any case gets past the parser.
    for spelling in ["NDJSON", "ndjson", "Prometheus", "Text"] {
        let (status, _) = run(
            env!("CARGO_BIN_EXE_cxlstat"),
            &["--sysroot", "/nonexistent", "-o", spelling, "-e", "x"],
        );
        assert_ne!(status, Some(2), "cxlstat -o {spelling} is a usage error");
    }
    let (status, _) = run(env!("CARGO_BIN_EXE_cxlstat"), &["-o", "xml", "-e", "x"]);
    assert_eq!(status, Some(2));
}

/// A command line clap cannot parse is one line naming the argument, with
/// status 2 (iostat-rs prints sysstat's usage text instead, as sysstat).
#[test]
fn bad_command_lines_are_one_line_errors() {
    for (program, args) in [
        (env!("CARGO_BIN_EXE_vcpustat"), &["--freq", "-5"][..]),
        (env!("CARGO_BIN_EXE_vcpustat"), &["--bogus"][..]),
        (env!("CARGO_BIN_EXE_vcpustat"), &["trace", "report"][..]),
        (env!("CARGO_BIN_EXE_cxlstat"), &["-o", "xml", "-e", "x"][..]),
        (env!("CARGO_BIN_EXE_cxlstat"), &["--list", "-e", "x"][..]),
    ] {
        let out = Command::new(program).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("--help"), "{err}");
    }
    let err = Command::new(env!("CARGO_BIN_EXE_vcpustat"))
        .args(["--freq", "-5"])
        .output()
        .unwrap()
        .stderr;
    assert!(String::from_utf8(err).unwrap().contains("--freq"));
}

/// The same bad INTERVAL or COUNT is the same one-line message in vcpustat
/// and cxlstat, naming the operand and pointing to `--help`, with status 2:
/// cxlstat checked its INTERVAL after parsing, in a message that named
/// neither (`cxlstat: invalid interval "abc": expected ...`), and said of a
/// third operand only that it was unexpected.
#[test]
fn a_bad_interval_or_count_reads_the_same_in_vcpustat_and_cxlstat() {
    // (the operands, the one named)
    for (operands, bad) in [
        (&["abc"][..], "abc"),
        (&["1e3", "2"], "1e3"),
        (&["0.0000000001"], "0.0000000001"),
        (&["1", "abc"], "abc"),
        (&["1", "-2"], "-2"),
        (&["1", "2", "3"], "3"),
    ] {
        let vcpustat = Command::new(env!("CARGO_BIN_EXE_vcpustat"))
            .args(operands)
            .output()
            .unwrap();
        let cxlstat = Command::new(env!("CARGO_BIN_EXE_cxlstat"))
            .args(["-e", "x"])
            .args(operands)
            .output()
            .unwrap();
        let vcpustat_err = String::from_utf8(vcpustat.stderr).unwrap();
        let cxlstat_err = String::from_utf8(cxlstat.stderr).unwrap();
        assert_eq!(
            vcpustat.status.code(),
            Some(2),
            "{operands:?}: {vcpustat_err}"
        );
        assert_eq!(
            cxlstat.status.code(),
            Some(2),
            "{operands:?}: {cxlstat_err}"
        );
        assert_eq!(
            vcpustat_err.lines().count(),
            1,
            "{operands:?}: {vcpustat_err}"
        );
        assert!(
            vcpustat_err.contains(&format!("'{bad}'")),
            "{operands:?}: {vcpustat_err}"
        );
        assert_eq!(
            cxlstat_err,
            vcpustat_err.replace("vcpustat", "cxlstat"),
            "{operands:?}"
        );
    }
}

/// An argument that is not UTF-8 (a Linux argument may be any bytes) is
/// taken with its bytes, as sysstat and perf take it: a wrong one is the
/// usage error any wrong value is, naming it with the byte as `\xNN`. All
/// three used to panic in `std::env::args`, and then to refuse every such
/// argument, device names, paths and a command's arguments among them.
#[test]
fn an_argument_that_is_not_utf8_is_taken_with_its_bytes() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    for program in [
        env!("CARGO_BIN_EXE_vcpustat"),
        env!("CARGO_BIN_EXE_cxlstat"),
    ] {
        let out = Command::new(program)
            .arg("-o")
            .arg(OsStr::from_bytes(b"json\xff"))
            .output()
            .unwrap();
        let name = Path::new(program).file_name().unwrap().to_str().unwrap();
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(
            err.starts_with(&format!(
                "{name}: invalid value 'json\\xff' for '--output <FORMAT>'"
            )),
            "{err}"
        );
        assert!(out.stdout.is_empty(), "{name}");
    }
    // sysstat's iostat prints its usage for any wrong -o.
    let out = Command::new(env!("CARGO_BIN_EXE_iostat-rs"))
        .arg("-o")
        .arg(OsStr::from_bytes(b"json\xff"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .starts_with("Usage: ")
    );
    // A word that is an interval nowhere, quoted as such.
    let out = Command::new(env!("CARGO_BIN_EXE_vcpustat"))
        .arg(OsStr::from_bytes(b"1\xff"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("invalid interval \"1\\xff\": expected"),
        "{err}"
    );
    // A path, named with its byte (not U+FFFD).
    let out = Command::new(env!("CARGO_BIN_EXE_vcpustat"))
        .arg("--sysroot")
        .arg(OsStr::from_bytes(b"/nonexistent\xff"))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "vcpustat: --sysroot /nonexistent\\xff: no such directory\n"
    );
    // Every message naming a path so, not with U+FFFD.
    for program in [
        env!("CARGO_BIN_EXE_iostat-rs"),
        env!("CARGO_BIN_EXE_vcpustat"),
        env!("CARGO_BIN_EXE_cxlstat"),
    ] {
        let out = Command::new(program)
            .arg("--replay")
            .arg(OsStr::from_bytes(b"/nonexistent\xff"))
            .output()
            .unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains("/nonexistent\\xff: "), "{program}: {err}");
    }
}

/// iostat-rs's usage text (sysstat's, and one `Extensions:` line) offers
/// every `-o` name the parser takes besides sysstat's `JSON`, in the order
/// of `--help`: `-o text` was taken and listed in `--help`, but the usage
/// printed for a wrong `-o` still offered only csv, ndjson and prometheus.
#[test]
fn iostat_rs_usage_offers_every_output_format() {
    let out = Command::new(env!("CARGO_BIN_EXE_iostat-rs"))
        .args(["-o", "bogus"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let usage = String::from_utf8(out.stderr).unwrap();
    let offered: Vec<&str> = usage
        .lines()
        .find_map(|l| l.strip_prefix("Extensions: [ -o { "))
        .and_then(|rest| rest.split_once(" } ]"))
        .unwrap_or_else(|| panic!("no -o in the extensions: {usage}"))
        .0
        .split(" | ")
        .collect();
    let command = hwstat::iostat::cli::command();
    let taken: Vec<String> = command
        .get_arguments()
        .find(|a| a.get_short() == Some('o'))
        .unwrap()
        .get_possible_values()
        .iter()
        .map(|v| v.get_name().to_string())
        .filter(|name| name != "JSON")
        .collect();
    assert_eq!(offered, taken, "{usage}");
}

/// `-o FORMAT` has the long name `--output` in every tool (`--output csv`,
/// `--output=csv`): vcpustat and cxlstat had it, iostat-rs took only `-o`
/// and printed its usage text for `--output`.
#[test]
fn the_long_output_option_is_taken_by_the_three_tools() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let rec = |tool: &str| {
        let path = repo.join(format!("tests/fixtures/recordings/0ebb936/{tool}.rec"));
        path.to_str().unwrap().to_string()
    };
    // (program, replay and report options, how its CSV starts)
    let tools = [
        (
            env!("CARGO_BIN_EXE_iostat-rs"),
            vec![
                "--replay".to_string(),
                rec("iostat-rs"),
                "-x".into(),
                "-p".into(),
                "ALL".into(),
            ],
            "timestamp,index,device,reads_completed_per_second,",
        ),
        (
            env!("CARGO_BIN_EXE_vcpustat"),
            vec!["--replay".to_string(), rec("vcpustat")],
            "timestamp,index,cpu,total_disp,",
        ),
        (
            env!("CARGO_BIN_EXE_cxlstat"),
            vec![
                "--replay".to_string(),
                rec("cxlstat"),
                "-e".into(),
                "cpu_clock".into(),
            ],
            "timestamp,index,pmu,event,count,",
        ),
    ];
    for (program, options, start) in tools {
        let options: Vec<&str> = options.iter().map(String::as_str).collect();
        let with = |output: &[&str]| run(program, &[&options[..], output, &["0.1", "2"]].concat());
        let (status, short) = with(&["-o", "csv"]);
        assert_eq!(status, Some(0), "{program} -o csv");
        assert!(short.starts_with(start), "{program} -o csv: {short}");
        for long in [&["--output", "csv"][..], &["--output=csv"]] {
            assert_eq!(with(long), (Some(0), short.clone()), "{program} {long:?}");
        }
    }
}
