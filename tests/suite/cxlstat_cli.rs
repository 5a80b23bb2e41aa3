//! cxlstat against the two-memdev fixture: golden listings and dry runs,
//! and the errors that explain.

use crate::cxlstat_support;

use cxlstat_support::{cxlstat, golden, stderr, stdout, two_memdevs};

fn with_fixture(args: &[&str]) -> std::process::Output {
    let root = two_memdevs();
    let mut all = vec!["--sysroot", root.to_str().unwrap()];
    all.extend_from_slice(args);
    cxlstat(&all)
}

#[test]
fn list_matches_the_golden_output() {
    let out = with_fixture(&["--list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), golden("list.txt"));
    // The facts, independently of the layout.
    let text = stdout(&out);
    let mem0 = text.lines().find(|l| l.contains("cxl_pmu_mem0.0")).unwrap();
    for cell in [
        "| 14 ",
        "| 0 ",
        "mem0",
        "0000:35:00.0",
        "0x4d2a00001",
        "| yes ",
        "| 12 ",
    ] {
        assert!(mem0.contains(cell), "{cell:?} in {mem0}");
    }
    let mem1 = text.lines().find(|l| l.contains("cxl_pmu_mem1.0")).unwrap();
    for cell in ["| 15 ", "| 1 ", "mem1", "0000:b5:00.0", "| no ", "| 14 "] {
        assert!(mem1.contains(cell), "{cell:?} in {mem1}");
    }
    assert!(!text.contains("software"));
}

#[test]
fn list_events_groups_and_decodes() {
    let out = with_fixture(&["--list-events"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), golden("list-events.txt"));
    let one = stdout(&with_fixture(&["--list-events", "cxl_pmu_mem1.0"]));
    assert!(one.starts_with("cxl_pmu_mem1.0 (14 events):"));
    assert!(!one.contains("cxl_pmu_mem0.0"));
    let line = one
        .lines()
        .find(|l| l.contains("s2m_ndr_biconflictack"))
        .unwrap();
    assert!(
        line.contains("0x0024") && line.contains("0x00000010"),
        "{line}"
    );
    let bad = with_fixture(&["--list-events", "cxl_pmu_mem0.1"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(stderr(&bad).contains("did you mean") || stderr(&bad).contains("cxl_pmu_mem0.0"));
}

#[test]
fn dry_run_shows_attrs_like_perf_and_opens_nothing() {
    let out = with_fixture(&[
        "--dry-run",
        "-e",
        "clock_ticks",
        "-e",
        "cxl_pmu_mem0.0/d2h_req_rdshared,threshold=1,hdm_filter_en,hdm=0x3/",
        "-e",
        "vid=0x19e5,gid=0,mask=0xff",
        "-e",
        "{m2s_req_memrd,cxl_pmu_mem1.0/vid=0x1e98,gid=0x20,mask=0x7/}",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), golden("dry-run.txt"));
    let text = stdout(&out);
    // threshold=1 in bit 0 and hdm_filter_en in bit 18 of config1; hdm in config2.
    assert!(text.contains("config1                          0x40001\n"));
    assert!(text.contains("config2                          0x3\n"));
    assert!(text.contains("config                           0x19e50000000000ff\n"));
}

#[test]
fn unknown_names_terms_and_wide_values_explain_themselves() {
    let cases: [(&str, &str); 6] = [
        ("clock_tick", "did you mean: clock_ticks"),
        (
            "cxl_pmu_mem1.0/d2h_req_rdshared/",
            "offered by: cxl_pmu_mem0.0",
        ),
        (
            "cxl_pmu_mem1.0/clock_ticks,hdm=1/",
            "valid terms: edge, gid, invert, mask, threshold, vid",
        ),
        (
            "cxl_pmu_mem0.0/clock_ticks,threshold=0x10000/",
            "too wide for threshold (16 bits",
        ),
        ("vid=0x10000,gid=0,mask=1", "too wide for vid"),
        (
            "cxl_pmu_mem7.0/clock_ticks/",
            "CXL PMUs here: cxl_pmu_mem0.0, cxl_pmu_mem1.0",
        ),
    ];
    for (spec, want) in cases {
        let out = with_fixture(&["--dry-run", "-e", spec]);
        assert_eq!(out.status.code(), Some(1), "{spec}");
        let err = stderr(&out);
        assert!(
            err.starts_with("cxlstat: ") && err.contains(want),
            "{spec}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn no_cxl_pmu_says_what_is_needed() {
    let empty = cxlstat_support::scratch("nopmu");
    let out = cxlstat(&["--sysroot", empty.to_str().unwrap(), "--list"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("Linux 6.5") && err.contains("CONFIG_CXL_PMU") && err.contains("CPMU"),
        "{err}"
    );
}

#[test]
fn numbers_that_are_not_whole_say_what_was_expected() {
    for (args, what) in [
        (
            &["-I", "abc"][..],
            "'abc' for '--interval-print <MS>': expected a whole number of milliseconds",
        ),
        (
            &["-I", "100", "--interval-count", "x"],
            "'x' for '--interval-count <COUNT>': expected a whole number of reports",
        ),
        (
            &["1", "1.5"],
            "'1.5' for '[COUNT]': expected a whole number of reports",
        ),
        // A negative number is a value refused, not an unknown option.
        (
            &["-I", "-5"],
            "'-5' for '--interval-print <MS>': expected a whole number of milliseconds",
        ),
        (
            &["-I", "100", "--interval-count", "-1"],
            "'-1' for '--interval-count <COUNT>': expected a whole number of reports",
        ),
        (
            &["1", "-2"],
            "'-2' for '[COUNT]': expected a whole number of reports",
        ),
        (
            &["-0.5"],
            "'-0.5' for '[INTERVAL]': invalid interval \"-0.5\": expected seconds (2, 0.5) \
             or a duration (250ms, 1m)",
        ),
    ] {
        let mut args = args.to_vec();
        args.extend(["--dry-run", "-e", "clock_ticks"]);
        let out = with_fixture(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(
            stderr(&out),
            format!("cxlstat: invalid value {what} (see 'cxlstat --help')\n"),
            "{args:?}"
        );
    }
}

/// `--dry-run` checks what a count would check and writes nothing: the
/// file `--record` names is neither made nor replaced, and a command that
/// cannot start fails as the count fails, with a shell's status.
#[test]
fn a_dry_run_records_nothing_and_checks_the_command() {
    let dir = crate::scratch::scratch("cxl-dry-run");
    let rec = dir.join("run.rec");
    let rec_arg = rec.to_str().unwrap();
    let out = with_fixture(&["--dry-run", "-e", "clock_ticks", "--record", rec_arg]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!rec.exists(), "a dry run made {rec_arg}");
    std::fs::write(&rec, "an earlier recording\n").unwrap();
    let out = with_fixture(&["--dry-run", "-e", "clock_ticks", "--record", rec_arg]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&rec).unwrap(),
        "an earlier recording\n"
    );
    for (program, status, why) in [
        (
            "./no-such-program",
            127,
            "No such file or directory (os error 2)",
        ),
        ("/etc/passwd", 126, "Permission denied (os error 13)"),
    ] {
        for dry_run in [true, false] {
            let mut args = vec!["-e", "clock_ticks", "--", program];
            if dry_run {
                args.insert(0, "--dry-run");
            }
            let out = with_fixture(&args);
            assert_eq!(out.status.code(), Some(status), "{args:?}");
            assert_eq!(
                stderr(&out),
                format!("cxlstat: cannot run {program}: {why}\n"),
                "{args:?}"
            );
            assert_eq!(stdout(&out), "", "{args:?}");
        }
    }
}

/// A third operand, negative or not, is one too many, in vcpustat's words.
#[test]
fn a_third_operand_is_one_too_many() {
    for word in ["3", "-3"] {
        let args = ["1", "2", word, "--dry-run", "-e", "clock_ticks"];
        let out = with_fixture(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(
            stderr(&out),
            format!(
                "cxlstat: unexpected argument '{word}': a report takes at most an INTERVAL \
                 and a COUNT (see 'cxlstat --help')\n"
            ),
            "{args:?}"
        );
    }
}

/// A word that is no number but begins with `-` and a digit (`-5x`) is an
/// unknown option, as clap says, not an operand too many: clap splits it
/// into short options and names `-5`, which no argument is.
#[test]
fn an_unknown_option_that_begins_with_a_digit_is_no_operand() {
    for args in [&["-5x"][..], &["1", "-5x"], &["1", "2", "-5x"]] {
        let out = with_fixture(&[args, &["--dry-run", "-e", "clock_ticks"]].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(
            stderr(&out),
            "cxlstat: unexpected argument '-5' found (see 'cxlstat --help')\n",
            "{args:?}"
        );
    }
}

#[test]
fn per_task_counting_is_refused_with_the_reason() {
    let out = with_fixture(&["-e", "clock_ticks", "-p", "1"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("-p 1") && err.contains("system-wide") && err.contains("EOPNOTSUPP"),
        "{err}"
    );
    // perf's sampling terms are named as such, not as unknown terms.
    for term in ["period=1000", "freq=99"] {
        let spec = format!("cxl_pmu_mem0.0/clock_ticks,{term}/");
        let out = with_fixture(&["--dry-run", "-e", &spec]);
        assert_eq!(out.status.code(), Some(1));
        let err = stderr(&out);
        let name = term.split('=').next().unwrap();
        assert!(
            err.starts_with(&format!(
                "cxlstat: perf's sampling term {name}= is not possible"
            )) && err.contains("refuses sampling"),
            "{err}"
        );
    }
    // perf stat's aggregation and metric terms are refused with their reason.
    for (term, why) in [
        (
            "percore=1",
            "percore sums the hardware threads of each core",
        ),
        ("percore", "percore sums the hardware threads of each core"),
        (
            "metric-id=rd",
            "metric-id= names an event in a metric expression",
        ),
    ] {
        let spec = format!("cxl_pmu_mem0.0/clock_ticks,{term}/");
        let out = with_fixture(&["--dry-run", "-e", &spec]);
        assert_eq!(out.status.code(), Some(1), "{spec}");
        let err = stderr(&out);
        assert!(
            err.contains(why) && err.lines().count() == 1,
            "{spec}: {err}"
        );
    }
}

#[test]
fn a_broken_format_file_is_named() {
    let root = cxlstat_support::scratch("badformat");
    cxlstat_support::software_tree(&root, &[("cxl_pmu_mem0.0", 0)]);
    std::fs::write(
        root.join("sys/devices/virtual/cxl_pmu_mem0.0/format/mask"),
        "config:0-99\n",
    )
    .unwrap();
    let out = cxlstat(&["--sysroot", root.to_str().unwrap(), "--list"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("/sys/bus/event_source/devices/cxl_pmu_mem0.0/format/mask: expected configN:"),
        "{err}"
    );
}

#[test]
fn list_events_shows_a_too_wide_field_as_read_and_warns() {
    let root = cxlstat_support::scratch("toowide");
    cxlstat_support::software_tree(&root, &[("cxl_pmu_mem0.0", 0)]);
    let events = root.join("sys/devices/virtual/cxl_pmu_mem0.0/events");
    std::fs::write(events.join("cpu_clock"), "mask=0x1ffffffff\n").unwrap();
    std::fs::write(events.join("context_switches"), "gid=0x10000,config=0x3\n").unwrap();
    let root = root.to_str().unwrap();
    let out = cxlstat(&["--sysroot", root, "--list-events"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let row = |name: &str| {
        text.lines()
            .find(|l| l.contains(&format!("| {name} ")))
            .unwrap_or_else(|| panic!("{name} in {text}"))
            .to_string()
    };
    assert!(
        row("cpu_clock").contains("| 0x1ffffffff (too wide) "),
        "{text}"
    );
    let switches = row("context_switches");
    assert!(switches.contains("| 0x10000 (too wide) "), "{text}");
    assert!(switches.contains("| 0x00000003 "), "{text}");
    let err = stderr(&out);
    for (event, field, value) in [
        ("cpu_clock", "mask", "0x1ffffffff"),
        ("context_switches", "gid", "0x10000"),
    ] {
        let line = format!(
            "cxlstat: warning: /sys/bus/event_source/devices/cxl_pmu_mem0.0/events/{event}: \
             value {value} is too wide for {field}"
        );
        assert!(err.contains(&line), "{line} in {err}");
    }
    // Counting refuses the same value, naming the same file and field.
    let count = cxlstat(&["--sysroot", root, "--dry-run", "-e", "cpu_clock"]);
    assert_eq!(count.status.code(), Some(1));
    assert!(
        stderr(&count).contains(
            "events/cpu_clock: cxl_pmu_mem0.0/cpu_clock/: value 0x1ffffffff is too wide for mask"
        ),
        "{}",
        stderr(&count)
    );
}

#[test]
fn two_cpmus_on_one_memdev_and_vendor_raw_events() {
    let root =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cxl/qemu-two-cpmus");
    let root = root.to_str().unwrap();
    let list = stdout(&cxlstat(&["--sysroot", root, "--list"]));
    let rows: Vec<&str> = list
        .lines()
        .filter(|l| l.contains("cxl_pmu_mem0."))
        .collect();
    assert_eq!(rows.len(), 2, "{list}");
    // Both CPMUs belong to mem0 on 0000:0d:00.0, which has no NUMA node.
    assert!(
        rows.iter()
            .all(|r| r.contains("| mem0 ") && r.contains("0000:0d:00.0") && r.contains("| -    |")),
        "{list}"
    );

    let out = cxlstat(&[
        "--sysroot",
        root,
        "--dry-run",
        "--pmu",
        "cxl_pmu_mem0.1",
        "-e",
        "vid=0x19e5,gid=0,mask=0x3",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(text.matches("sys_perf_event_open").count(), 1, "{text}");
    assert!(text.contains("type                             11\n"));
    assert!(text.contains("config                           0x19e5000000000003\n"));

    // The perf list example of Documentation/admin-guide/perf/cxl.rst.
    let events = stdout(&cxlstat(&[
        "--sysroot",
        root,
        "--list-events",
        "cxl_pmu_mem0.0",
    ]));
    for name in [
        "clock_ticks",
        "d2h_req_rdshared",
        "h2d_req_snpcur",
        "h2d_req_snpdata",
        "h2d_req_snpinv",
    ] {
        assert!(events.contains(&format!("| {name} ")), "{name}: {events}");
    }
}

#[test]
fn a_threshold_above_255_is_warned_about_once() {
    let root = two_memdevs();
    let root = root.to_str().unwrap();
    // The format says config1:0-15, but the driver programs 8 bits.
    let out = cxlstat(&[
        "--sysroot",
        root,
        "--dry-run",
        "-e",
        "cxl_pmu_mem0.0/clock_ticks,threshold=300/",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "cxlstat: warning: cxl_pmu_mem0.0/clock_ticks,threshold=300/: threshold 300 is \
         above 255; the cxl_pmu driver programs only its low 8 bits, so the device uses 44\n"
    );
    assert!(stdout(&out).contains("config1                          0x12c"));

    // On every CXL PMU: still one line for the event.
    let out = cxlstat(&[
        "--sysroot",
        root,
        "--dry-run",
        "-e",
        "vid=0x1e98,gid=0,mask=1,threshold=0x100",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "cxlstat: warning: vid=0x1e98,gid=0,mask=1,threshold=0x100: threshold 256 is \
         above 255; the cxl_pmu driver programs only its low 8 bits, so the device uses 0\n"
    );
    assert_eq!(stdout(&out).matches("sys_perf_event_open").count(), 2);

    // 255 fits: no warning.
    let out = cxlstat(&[
        "--sysroot",
        root,
        "--dry-run",
        "-e",
        "vid=0x1e98,gid=0,mask=1,threshold=255",
        "-e",
        "cxl_pmu_mem1.0/clock_ticks,threshold=0xff/",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
}

#[test]
fn an_hdm_decoder_without_the_filter_enabled_is_warned_about() {
    let root = two_memdevs();
    let root = root.to_str().unwrap();
    // The driver writes "no filter" unless hdm_filter_en is set, and config2
    // is then ignored (drivers/perf/cxl_pmu.c, cxl_pmu_event_start).
    let out = cxlstat(&[
        "--sysroot",
        root,
        "--dry-run",
        "-e",
        "cxl_pmu_mem0.0/clock_ticks,hdm=3/",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "cxlstat: warning: cxl_pmu_mem0.0/clock_ticks,hdm=3/: hdm=0x3 without \
         hdm_filter_en; the cxl_pmu driver then programs no HDM filter and counts every \
         decoder's traffic\n"
    );
    let out = cxlstat(&[
        "--sysroot",
        root,
        "--dry-run",
        "-e",
        "cxl_pmu_mem0.0/clock_ticks,hdm=3,hdm_filter_en/",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
}

#[test]
fn an_event_given_twice_on_a_pmu_is_refused_only_where_it_would_be_one_series_twice() {
    let twice = "clock_ticks,cxl_pmu_mem0.0/clock_ticks/";
    // Rows may repeat an event, as in perf stat.
    let out = with_fixture(&["--dry-run", "-e", twice]);
    assert!(out.status.success(), "{}", stderr(&out));
    // A Prometheus series may not: the exposition would be invalid.
    for output in [["-o", "prometheus"], ["--listen", "127.0.0.1:0"]] {
        let out = with_fixture(&["--dry-run", "-e", twice, output[0], output[1]]);
        assert_eq!(out.status.code(), Some(1), "{output:?}");
        assert_eq!(
            stderr(&out),
            "cxlstat: cxl_pmu_mem0.0/clock_ticks/ is given twice on its PMU, and a \
             Prometheus series must be unique: drop one, or tell them apart with a name= \
             term (PMU/...,name=NAME/)\n"
        );
        assert!(stdout(&out).is_empty());
        // Named apart, both are counted.
        let apart = "clock_ticks,cxl_pmu_mem0.0/clock_ticks,name=ticks_again/";
        let out = with_fixture(&["--dry-run", "-e", apart, output[0], output[1]]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(stdout(&out).contains("\nticks_again  (vid=0x1e98,gid=0x0,mask=0x1)\n"));
        // Two events given one name: the name is what to change.
        let one_name = "cxl_pmu_mem0.0/clock_ticks,name=x/,cxl_pmu_mem0.0/vid=0x1e98,gid=0x8000,mask=0x1,name=x/";
        let out = with_fixture(&["--dry-run", "-e", one_name, output[0], output[1]]);
        assert_eq!(out.status.code(), Some(1), "{output:?}");
        assert_eq!(
            stderr(&out),
            "cxlstat: the name x is given to two events on cxl_pmu_mem0.0, and a Prometheus \
             series must be unique: give each its own name=\n"
        );
    }
}

/// A PMU whose sysfs files cannot be read or make no sense (a device being
/// removed) is left out with a warning saying why, and the others are
/// listed and counted, as perf does; named, it is an error with that
/// reason; when no PMU is left, the first reason is the error.
#[test]
fn an_unreadable_pmu_is_left_out_and_the_others_are_used() {
    let root = cxlstat_support::scratch("unreadable");
    cxlstat_support::software_tree(&root, &[("cxl_pmu_mem0.0", 0), ("cxl_pmu_mem1.0", 0)]);
    let sysroot = root.to_str().unwrap();
    let mem1 = root.join("sys/devices/virtual/cxl_pmu_mem1.0");
    std::fs::write(mem1.join("events/weird"), "config=0x3,period=?\n").unwrap();
    let warning = "cxlstat: warning: cxl_pmu_mem1.0 is left out: \
                   /sys/bus/event_source/devices/cxl_pmu_mem1.0/events/weird: \"period=?\": \
                   expected a number after '=' (decimal or 0x hex)\n";

    let out = cxlstat(&["--sysroot", sysroot, "--list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), warning);
    assert!(stdout(&out).contains("cxl_pmu_mem0.0"), "{}", stdout(&out));
    assert!(!stdout(&out).contains("cxl_pmu_mem1.0"), "{}", stdout(&out));

    let out = cxlstat(&["--sysroot", sysroot, "--dry-run", "-e", "cpu_clock"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), warning);
    assert!(stdout(&out).contains("cxl_pmu_mem0.0"), "{}", stdout(&out));

    // Named, it is an error with the reason, not "unknown PMU".
    for args in [
        &["--list-events", "cxl_pmu_mem1.0"][..],
        &["--dry-run", "-e", "cxl_pmu_mem1.0/cpu_clock/"][..],
        &["--dry-run", "--pmu", "cxl_pmu_mem1.0", "-e", "cpu_clock"][..],
        // A name that numbers it alone (cxl_pmu_mem1.0 after cxl_pmu_mem1.).
        &["--dry-run", "-e", "cxl_pmu_mem1./cpu_clock/"][..],
    ] {
        let out = cxlstat(&[&["--sysroot", sysroot][..], args].concat());
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = stderr(&out);
        assert!(
            err.ends_with(
                "cxlstat: /sys/bus/event_source/devices/cxl_pmu_mem1.0/events/weird: \
                 \"period=?\": expected a number after '=' (decimal or 0x hex)\n"
            ),
            "{args:?}: {err}"
        );
    }

    // None left: the first reason.
    std::fs::remove_file(root.join("sys/devices/virtual/cxl_pmu_mem0.0/cpumask")).unwrap();
    let out = cxlstat(&["--sysroot", sysroot, "--list"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "cxlstat: cannot read /sys/bus/event_source/devices/cxl_pmu_mem0.0/cpumask: No such \
         file or directory (os error 2)\n"
    );
    assert_eq!(stdout(&out), "");
}

/// A `-x` separator that can be part of a field (the space-padded time,
/// `<not counted>`, a name's `\xNN` escapes) is a usage error naming it;
/// perf 6.1 takes it and prints lines that split wrongly.
#[test]
fn an_ambiguous_field_separator_is_refused() {
    for sep in [" ", "o", "<", "\\"] {
        let out = with_fixture(&["-e", "clock_ticks", "-x", sep, "-I", "100"]);
        assert_eq!(out.status.code(), Some(2), "{sep:?}: {}", stderr(&out));
        assert_eq!(stdout(&out), "", "{sep:?}");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{sep:?}: {err}");
        assert!(
            err.starts_with(&format!(
                "cxlstat: -x \"{}\": expected a non-empty field separator",
                sep.escape_default()
            )),
            "{sep:?}: {err}"
        );
    }
}

/// `--list` and `--list-events` print text tables: asked for another
/// format, they refuse with a usage error instead of printing a table a
/// JSON or CSV reader would choke on.
#[test]
fn listings_refuse_other_output_formats() {
    for (listing, format) in [
        ("--list", &["-o", "json"][..]),
        ("--list", &["-o", "csv"]),
        ("--list-events", &["-o", "ndjson"]),
        ("--list-events", &["-o", "prometheus"]),
        ("--list-events", &["-x", ","]),
    ] {
        let out = with_fixture(&[&[listing][..], format].concat());
        let what = format!("{listing} {format:?}");
        assert_eq!(out.status.code(), Some(2), "{what}: {}", stderr(&out));
        assert_eq!(stdout(&out), "", "{what}");
        assert_eq!(
            stderr(&out),
            format!(
                "cxlstat: {listing} prints a text table only, not {}: output formats apply to \
                 counts (-e)\n",
                if format[0] == "-x" {
                    "-x".to_string()
                } else {
                    format.join(" ")
                }
            ),
            "{what}"
        );
    }
    let text = with_fixture(&["--list", "-o", "text"]);
    assert!(text.status.success(), "{}", stderr(&text));
    assert_eq!(stdout(&text), golden("list.txt"));
}

/// Under `--sysroot` the tree gives the PMU's perf type and the running
/// kernel is asked to count it: a type the kernel lacks is refused, and the
/// error says where the type came from rather than only that the PMU is
/// gone.
#[test]
fn a_sysroot_pmu_the_running_kernel_lacks_is_explained() {
    if !cxlstat_support::perf_usable("sysroot_type") {
        return;
    }
    let root = cxlstat_support::scratch("sysroot_type");
    cxlstat_support::software_tree(&root, &[("cxl_pmu_mem0.0", 0)]);
    // No kernel numbers its PMUs this high (dynamic types count up from 6).
    std::fs::write(
        root.join("sys/devices/virtual/cxl_pmu_mem0.0/type"),
        "2000000000\n",
    )
    .unwrap();
    let sysroot = root.to_str().unwrap();
    let out = cxlstat(&["--sysroot", sysroot, "-e", "cpu_clock", "-a", "0.1", "1"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("cxlstat: cannot open cxl_pmu_mem0.0/cpu_clock/ on CPU 0: ")
            && err.trim_end().ends_with(&format!(
                "under --sysroot the PMU and its perf type come from {sysroot}, while the \
                 running kernel counts: it needs a PMU of that type of its own"
            )),
        "{err}"
    );
    assert_eq!(stdout(&out), "");
}

/// perf stat takes an option given twice (`-a -a`, `-x , -x ';'`), the last
/// value winning; so does cxlstat. `-e` and `--pmu` still add up.
#[test]
fn an_option_given_twice_is_taken_as_perf_takes_it() {
    let once = with_fixture(&["-e", "clock_ticks", "-x", ";", "--dry-run"]);
    assert!(once.status.success(), "{}", stderr(&once));
    let twice = with_fixture(&[
        "-a",
        "-a",
        "--no-merge",
        "--no-merge",
        "-e",
        "clock_ticks",
        "-x",
        ",",
        "-x",
        ";",
        "--dry-run",
        "--dry-run",
    ]);
    assert!(twice.status.success(), "{}", stderr(&twice));
    assert_eq!(stdout(&twice), stdout(&once));
    let both = with_fixture(&["-e", "clock_ticks", "-e", "clock_ticks", "--dry-run"]);
    assert_eq!(
        stdout(&both).lines().count(),
        2 * stdout(&once).lines().count()
    );
}

/// A command given where INTERVAL goes, as `perf stat -e E sleep 1` takes
/// it, is told to go after `--`, with the usage status; a word that names
/// no program keeps the interval's message. Before, `sleep` was only "an
/// invalid interval".
#[test]
fn a_command_without_dashes_is_told_where_it_goes() {
    let out = with_fixture(&["-e", "clock_ticks", "sleep", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "cxlstat: 'sleep' is a command, not an INTERVAL: a command to count goes after -- \
         (cxlstat -e EVENTS -- sleep ...)\n"
    );
    let out = with_fixture(&["-e", "clock_ticks", "no-such-program-here"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("invalid interval \"no-such-program-here\""),
        "{}",
        stderr(&out)
    );
}
