//! Counter reads go through the source: a recorded run replays to the same
//! numbers, and a PMU whose reads start failing (device removed) gets a note
//! while the others go on.

use crate::cxlstat_support;

use cxlstat_support::{cxlstat, perf_usable, scratch, software_tree, stderr, stdout, test_cpus};

#[test]
fn a_recording_replays_the_same_counts_and_a_vanished_pmu_gets_a_note() {
    if !perf_usable("replay") {
        return;
    }
    let root = scratch("replay");
    let cpus = test_cpus();
    let last = *cpus.last().unwrap();
    // Two PMUs (on CPU 0 and the last test CPU, possibly the same one).
    software_tree(&root, &[("cxl_pmu_mem0.0", 0), ("cxl_pmu_mem1.0", last)]);
    let rec = root.join("run.rec");
    let (root_s, rec_s) = (root.to_str().unwrap(), rec.to_str().unwrap());

    let live = cxlstat(&[
        "--sysroot",
        root_s,
        "--record",
        rec_s,
        "-e",
        "cpu_clock",
        "-x",
        ",",
        "0.1",
        "3",
    ]);
    assert!(live.status.success(), "{}", stderr(&live));
    let replayed = cxlstat(&["--replay", rec_s, "-e", "cpu_clock", "-x", ",", "0.1", "3"]);
    assert!(replayed.status.success(), "{}", stderr(&replayed));
    assert_eq!(stdout(&replayed), stdout(&live));
    assert_eq!(stdout(&live).lines().count(), 3 * 2);
    // Without a count, a replay runs until the recording ends: the same 3 reports.
    let exhausted = cxlstat(&["--replay", rec_s, "-e", "cpu_clock", "-x", ",", "-I", "100"]);
    assert!(exhausted.status.success(), "{}", stderr(&exhausted));
    assert_eq!(stdout(&exhausted), stdout(&live));
    // An event the run did not count: one line naming what the recording
    // lacks, not "<not counted>" rows, and nothing on standard output.
    let other = cxlstat(&[
        "--replay",
        rec_s,
        "-e",
        "context_switches",
        "-o",
        "json",
        "0.1",
        "3",
    ]);
    assert_eq!(other.status.code(), Some(1));
    let err = stderr(&other);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("does not hold `values perf:") && err.contains("/context_switches/@0x3`"),
        "{err}"
    );
    assert_eq!(stdout(&other), "");
    // --list from the same recording lists what the run discovered; from
    // one that lacks part of it (where the PMU's memory device is), it
    // fails instead of listing the PMU without it.
    let listed = cxlstat(&["--replay", rec_s, "--list"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    assert!(
        stdout(&listed).contains("| cxl_pmu_mem1.0 |"),
        "{}",
        stdout(&listed)
    );
    let recorded = std::fs::read_to_string(&rec).unwrap();
    let mut lines: Vec<String> = recorded.lines().map(String::from).collect();
    let mut frame: serde_json::Value = serde_json::from_str(&lines[1]).unwrap();
    let memdev = "realpath /sys/bus/cxl/devices/pmu_mem1.0";
    assert!(
        frame["entries"]
            .as_object_mut()
            .unwrap()
            .remove(memdev)
            .is_some()
    );
    lines[1] = frame.to_string();
    let lacking = root.join("lacking.rec");
    std::fs::write(&lacking, lines.join("\n") + "\n").unwrap();
    let listed = cxlstat(&["--replay", lacking.to_str().unwrap(), "--list"]);
    assert_eq!(listed.status.code(), Some(1));
    assert_eq!(stdout(&listed), "");
    let err = stderr(&listed);
    assert!(
        err.contains(&format!("does not hold `{memdev}`")) && err.lines().count() == 1,
        "{err}"
    );

    // Make cxl_pmu_mem1.0's reads fail from the third sample on (ENODEV).
    let recorded = std::fs::read_to_string(&rec).unwrap();
    let mut lines: Vec<String> = recorded.lines().map(String::from).collect();
    let mut frame: serde_json::Value = serde_json::from_str(&lines[3]).unwrap();
    let key = frame["entries"]
        .as_object()
        .unwrap()
        .keys()
        .find(|k| k.starts_with("values ") && k.contains("cxl_pmu_mem1.0"))
        .cloned()
        .expect("a values entry for cxl_pmu_mem1.0");
    frame["entries"][key.as_str()] = serde_json::json!({"errno": libc::ENODEV});
    lines[3] = frame.to_string();
    let broken = root.join("broken.rec");
    std::fs::write(&broken, lines.join("\n") + "\n").unwrap();

    let out = cxlstat(&[
        "--replay",
        broken.to_str().unwrap(),
        "-e",
        "cpu_clock",
        "0.1",
        "3",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("note: cxl_pmu_mem1.0: counter read failed")
            && err.contains("the others go on"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "the note is given once: {err}");
    let text = stdout(&out);
    let mem1: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("cxl_pmu_mem1.0"))
        .collect();
    assert_eq!(mem1.len(), 3);
    assert!(!mem1[0].contains("<not counted>"));
    assert!(
        mem1[1].contains("<not counted>") && mem1[2].contains("<not counted>"),
        "{text}"
    );
    let mem0: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("cxl_pmu_mem0.0"))
        .collect();
    assert!(mem0.iter().all(|l| !l.contains("<not counted>")), "{text}");
    // In expositions, the vanished PMU's series end (Prometheus marks them
    // stale) while the others go on.
    let out = cxlstat(&[
        "--replay",
        broken.to_str().unwrap(),
        "-e",
        "cpu_clock",
        "-o",
        "prometheus",
        "0.1",
        "3",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let expositions: Vec<&str> = text.split("\n\n").filter(|e| !e.is_empty()).collect();
    assert_eq!(expositions.len(), 3, "{text}");
    let counted = |pmu: &str| format!("cxlstat_event_counted_total{{pmu=\"{pmu}\",");
    for (i, e) in expositions.iter().enumerate() {
        assert!(e.contains(&counted("cxl_pmu_mem0.0")), "{e}");
        assert_eq!(e.contains(&counted("cxl_pmu_mem1.0")), i == 0, "{e}");
    }

    // Reads that still work but stop advancing, while the PMU's directory is
    // gone from sysfs, give the same note.
    let mut lines: Vec<String> = recorded.lines().map(String::from).collect();
    let frame2: serde_json::Value = serde_json::from_str(&lines[2]).unwrap();
    let mut frame3: serde_json::Value = serde_json::from_str(&lines[3]).unwrap();
    frame3["entries"][key.as_str()] = frame2["entries"][key.as_str()].clone();
    frame3["entries"]["isdir /sys/bus/event_source/devices/cxl_pmu_mem1.0"] =
        serde_json::json!({"is_dir": false});
    lines[3] = frame3.to_string();
    let stalled = root.join("stalled.rec");
    std::fs::write(&stalled, lines.join("\n") + "\n").unwrap();
    let out = cxlstat(&[
        "--replay",
        stalled.to_str().unwrap(),
        "-e",
        "cpu_clock",
        "0.1",
        "3",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("cxl_pmu_mem1.0 is gone from sysfs") && err.contains("the others go on"),
        "{err}"
    );
    let text = stdout(&out);
    let mem1: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("cxl_pmu_mem1.0"))
        .collect();
    assert!(
        !mem1[1].contains("<not counted>") || mem1[2].contains("<not counted>"),
        "{text}"
    );
    assert!(mem1[2].contains("<not counted>"), "{text}");
}

/// Sets a recorded frame's elapsed time and one PMU's counter words
/// (count, time enabled, time running).
fn set_frame(frame: &mut serde_json::Value, elapsed_ns: u64, pmu: &str, words: [u64; 3]) {
    frame["elapsed_ns"] = serde_json::json!(elapsed_ns);
    let key = frame["entries"]
        .as_object()
        .unwrap()
        .keys()
        .find(|k| k.starts_with("values ") && k.contains(pmu))
        .cloned()
        .unwrap_or_else(|| panic!("a values entry for {pmu}"));
    frame["entries"][key.as_str()] = serde_json::json!({ "values": words });
}

#[test]
fn perf_csv_lines_from_a_replay_with_known_counts() {
    if !perf_usable("perf_csv_replay") {
        return;
    }
    let root = scratch("perf_csv");
    let last = *test_cpus().last().unwrap();
    software_tree(&root, &[("cxl_pmu_mem0.0", 0), ("cxl_pmu_mem1.0", last)]);
    let rec = root.join("run.rec");
    let (root_s, rec_s) = (root.to_str().unwrap(), rec.to_str().unwrap());
    let live = cxlstat(&[
        "--sysroot",
        root_s,
        "--record",
        rec_s,
        "-e",
        "cpu_clock",
        "0.1",
        "2",
    ]);
    assert!(live.status.success(), "{}", stderr(&live));

    // Baseline, then two intervals of exactly 100 ms. mem0 runs half of the
    // first interval (1000 counted, scaled to 2000) and all of the second;
    // mem1 runs all of the first and never in the second.
    let recorded = std::fs::read_to_string(&rec).unwrap();
    let mut lines: Vec<String> = recorded.lines().map(String::from).collect();
    assert_eq!(lines.len(), 5, "header, three frames, end: {recorded}");
    assert_eq!(lines[4], r#"{"end":{"frames":3}}"#);
    let mem0 = [
        [0, 0, 0],
        [1000, 100_000_000, 50_000_000],
        [3000, 200_000_000, 150_000_000],
    ];
    let mem1 = [
        [0, 0, 0],
        [500, 100_000_000, 100_000_000],
        [500, 200_000_000, 100_000_000],
    ];
    // The baseline is read 7 ms after the start (discovery, opening): the
    // time column starts there, as perf stat's starts at enabling.
    for (i, line) in lines[1..4].iter_mut().enumerate() {
        let mut frame: serde_json::Value = serde_json::from_str(line).unwrap();
        let elapsed = 7_000_000 + i as u64 * 100_000_000;
        set_frame(&mut frame, elapsed, "cxl_pmu_mem0.0", mem0[i]);
        set_frame(&mut frame, elapsed, "cxl_pmu_mem1.0", mem1[i]);
        if i == 2 {
            // mem1's counter stalls: cxlstat looks whether its PMU is
            // still in sysfs, which the live run never had to ask.
            frame["entries"]["isdir /sys/bus/event_source/devices/cxl_pmu_mem1.0"] =
                serde_json::json!({ "is_dir": true });
        }
        *line = frame.to_string();
    }
    let known = root.join("known.rec");
    std::fs::write(&known, lines.join("\n") + "\n").unwrap();
    let known_s = known.to_str().unwrap();

    // Written from perf's rules: "%6lu.%09lu" time, the count (scaled by
    // enabled/running), an empty unit, the event as perf stat --no-merge
    // names an event given without its PMU (EVENT [PMU]), the run time in ns, the
    // integer percentage of the enabled time it ran as %.2f, then perf's
    // metric value and unit, empty without a clock event (stat-shadow.c).
    let out = cxlstat(&[
        "--replay",
        known_s,
        "-e",
        "cpu_clock",
        "-x",
        ",",
        "0.1",
        "2",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "a stalled counter of a PMU still present");
    assert_eq!(
        stdout(&out),
        "     0.100000000,2000,,cpu_clock [cxl_pmu_mem0.0],50000000,50.00,,\n\
         \x20    0.100000000,500,,cpu_clock [cxl_pmu_mem1.0],100000000,100.00,,\n\
         \x20    0.200000000,2000,,cpu_clock [cxl_pmu_mem0.0],100000000,100.00,,\n\
         \x20    0.200000000,<not counted>,,cpu_clock [cxl_pmu_mem1.0],0,0.00,,\n"
    );

    // --aggregate: one line per event; counts and times add up over PMUs.
    let out = cxlstat(&[
        "--replay",
        known_s,
        "-e",
        "cpu_clock",
        "--aggregate",
        "-x",
        ";",
        "-I",
        "100",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "     0.100000000;2500;;cpu_clock;150000000;75.00;;\n\
         \x20    0.200000000;2000;;cpu_clock;100000000;50.00;;\n"
    );
}

/// The key of the first unit of a one-PMU plan counting `labels`.
fn unit_key(labels: &str) -> String {
    format!("values perf:0:cxl_pmu_mem0.0/{labels}/")
}

/// A recording made by hand of cxlstat counting `labels` (one event, or a
/// `{...}` group) on one software-typed PMU: frame 0 holds what discovery
/// reads and every frame holds `words[i]`, the unit's read words. Frames
/// are 100 ms apart; frame K is line K + 2.
fn hand_recording(labels: &str, words: &[Vec<u64>]) -> String {
    let dir = "/sys/bus/event_source/devices";
    let pmu = format!("{dir}/cxl_pmu_mem0.0");
    let header = serde_json::json!({
        "format": "hwstat-recording", "version": 1, "tool": "cxlstat", "args": [],
        "uname": {"sysname": "Linux", "nodename": "h", "release": "6.8", "version": "#1",
                  "machine": "x86_64"},
        "start_unix_ns": 1_700_000_000_000_000_000u64,
    });
    let mut discovery = serde_json::json!({
        format!("list {dir}"): {"list": ["cxl_pmu_mem0.0"]},
        format!("list {pmu}/events"): {"list": ["context_switches", "cpu_clock"]},
        format!("list {pmu}/format"): {"list": ["mask", "gid", "vid"]},
        "read /proc/sys/kernel/perf_event_paranoid": {"errno": libc::ENOENT},
        format!("read {pmu}/cpumask"): {"text": "0\n"},
        format!("read {pmu}/type"): {"text": "1\n"},
        format!("read {pmu}/events/cpu_clock"): {"text": "config=0x0\n"},
        format!("read {pmu}/events/context_switches"): {"text": "config=0x3\n"},
        format!("read {pmu}/format/mask"): {"text": "config:0-31\n"},
        format!("read {pmu}/format/gid"): {"text": "config:32-47\n"},
        format!("read {pmu}/format/vid"): {"text": "config:48-63\n"},
        "realpath /sys/bus/cxl/devices/pmu_mem0.0": {"errno": libc::ENOENT},
    });
    let mut lines = vec![header.to_string()];
    for (index, words) in words.iter().enumerate() {
        let values = serde_json::json!({ "values": words });
        let entries = if index == 0 {
            discovery[unit_key(labels)] = values;
            discovery.clone()
        } else {
            serde_json::json!({ unit_key(labels): values })
        };
        let frame = serde_json::json!({
            "index": index,
            "elapsed_ns": index as u64 * 100_000_000,
            "entries": entries,
        });
        lines.push(frame.to_string());
    }
    lines.join("\n") + "\n"
}

#[test]
fn counts_or_times_that_go_back_in_a_recording_are_refused_with_its_line() {
    let root = scratch("went_back");
    const MS: u64 = 1_000_000;
    let single =
        |frames: &[[u64; 3]]| -> Vec<Vec<u64>> { frames.iter().map(|w| w.to_vec()).collect() };
    let good = single(&[
        [0, 0, 0],
        [1000, 100 * MS, 100 * MS],
        [3000, 200 * MS, 200 * MS],
    ]);
    // Each case: its name, the options, the frames, how many intervals are
    // reported before the damaged frame, and what the error says.
    let cases = [
        (
            "count",
            "cpu_clock",
            single(&[
                [0, 0, 0],
                [1000, 100 * MS, 100 * MS],
                [5, 200 * MS, 200 * MS],
            ]),
            1,
            "the count of cpu_clock went from 1000 to 5, expected at least 1000",
        ),
        (
            "enabled",
            "cpu_clock",
            single(&[
                [0, 0, 0],
                [1000, 100 * MS, 50 * MS],
                [3000, 20 * MS, 10 * MS],
            ]),
            1,
            "the time enabled of cpu_clock went from 100000000 ns to 20000000 ns, expected at \
             least 100000000 ns",
        ),
        (
            "running",
            "cpu_clock",
            single(&[
                [0, 0, 0],
                [1000, 100 * MS, 90 * MS],
                [3000, 200 * MS, 80 * MS],
            ]),
            1,
            "the time running of cpu_clock went from 90000000 ns to 80000000 ns",
        ),
        (
            "running_over_enabled",
            "cpu_clock",
            single(&[
                [0, 0, 0],
                [1000, 100 * MS, 100 * MS],
                [3000, 200 * MS, 300 * MS],
            ]),
            1,
            "the time running of cpu_clock (300000000 ns) is more than its time enabled \
             (200000000 ns), expected at most the time enabled",
        ),
        (
            // Two frames swapped: the third reads less than the second.
            "swapped",
            "cpu_clock",
            single(&[
                [0, 0, 0],
                [3000, 200 * MS, 200 * MS],
                [1000, 100 * MS, 100 * MS],
            ]),
            1,
            "the count of cpu_clock went from 3000 to 1000, expected at least 3000",
        ),
        (
            // A group's second member: nr, enabled, running, (value, id)...
            "group",
            "cpu_clock,context_switches",
            vec![
                vec![2, 0, 0, 0, 7, 0, 8],
                vec![2, 100 * MS, 100 * MS, 1000, 7, 40, 8],
                vec![2, 200 * MS, 200 * MS, 3000, 7, 39, 8],
            ],
            1,
            "the count of context_switches went from 40 to 39, expected at least 40",
        ),
    ];

    // The same recording undamaged replays: what the cases change is all
    // that is wrong with them.
    let path = root.join("good.rec");
    std::fs::write(&path, hand_recording("cpu_clock", &good)).unwrap();
    let args = ["-e", "cpu_clock", "-x", ",", "-I", "100"];
    let out = cxlstat(&[&["--replay", path.to_str().unwrap()][..], &args[..]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "     0.100000000,1000,,cpu_clock [cxl_pmu_mem0.0],100000000,100.00,,\n\
         \x20    0.200000000,2000,,cpu_clock [cxl_pmu_mem0.0],100000000,100.00,,\n"
    );

    for (name, labels, frames, reported, problem) in cases {
        let path = root.join(format!("{name}.rec"));
        std::fs::write(&path, hand_recording(labels, &frames)).unwrap();
        let path_s = path.to_str().unwrap();
        let event = if labels.contains(',') {
            format!("{{{labels}}}")
        } else {
            labels.to_string()
        };
        let out = cxlstat(&["--replay", path_s, "-e", &event, "-x", ",", "-I", "100"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{name}: one line: {err}");
        // The damaged frame is frame 2, on line 4.
        let origin = format!(
            "cxlstat: {path_s}:4: frame 2: entry \"{}\": ",
            unit_key(labels)
        );
        assert!(
            err.starts_with(&origin) && err.contains(problem),
            "{name}: {err}"
        );
        assert!(
            err.trim_end().ends_with("the recording is damaged"),
            "{name}: {err}"
        );
        // The intervals before it, and nothing wrapped around 2^64.
        let text = stdout(&out);
        let rows = labels.split(',').count() * reported;
        assert_eq!(text.lines().count(), rows, "{name}: {text}");
        for line in text.lines() {
            let count: u64 = line.split(',').nth(1).unwrap().parse().unwrap();
            assert!(count <= 10_000, "{name}: {text}");
        }
    }

    // A first reading that ran longer than it was enabled: nothing reported.
    let path = root.join("first.rec");
    let frames = single(&[[10, 5, 6], [1000, 100 * MS, 100 * MS]]);
    std::fs::write(&path, hand_recording("cpu_clock", &frames)).unwrap();
    let path_s = path.to_str().unwrap();
    let out = cxlstat(&[
        "--replay",
        path_s,
        "-e",
        "cpu_clock",
        "-o",
        "json",
        "-I",
        "100",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with(&format!("cxlstat: {path_s}:2: frame 0: entry \""))
            && err.contains(
                "the time running of cpu_clock (6 ns) is more than its time enabled (5 ns)"
            )
            && err.lines().count() == 1,
        "{err}"
    );
    // The first read fails the run before any output, as in iostat-rs:
    // no empty document.
    assert_eq!(stdout(&out), "");

    // An event the recording does not hold: one line, nothing on standard
    // output (no text header, no JSON document), in every format.
    let path = root.join("good.rec");
    for format in [
        &["-o", "text"][..],
        &["-o", "json"],
        &["-o", "csv"],
        &["-x", ","],
    ] {
        let out = cxlstat(
            &[
                &["--replay", path.to_str().unwrap(), "-e", "context_switches"][..],
                format,
                &["-I", "100"],
            ]
            .concat(),
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{format:?}: {err}");
        assert!(
            err.lines().count() == 1 && err.contains("does not hold"),
            "{format:?}: {err}"
        );
        assert_eq!(stdout(&out), "", "{format:?}");
    }
}

/// A unit the kernel refused to open is recorded as `[errno, member]`: a
/// replay shows it as `<not supported>` with the reason; an errno perf
/// stat would not show so, a member the unit lacks, or a refusal after the
/// unit was read are a damaged recording.
#[test]
fn a_recorded_refusal_replays_as_not_supported_and_a_forged_one_is_refused() {
    let root = scratch("refusal");
    const MS: u64 = 1_000_000;
    let path = root.join("refused.rec");
    let path_s = path.to_str().unwrap();
    let replay = |frames: &[Vec<u64>]| {
        std::fs::write(&path, hand_recording("cpu_clock", frames)).unwrap();
        cxlstat(&[
            "--replay",
            path_s,
            "-e",
            "cpu_clock",
            "-x",
            ",",
            "-I",
            "100",
        ])
    };
    let einval = libc::EINVAL as u64;
    let out = replay(&[vec![einval, 0], vec![einval, 0], vec![einval, 0]]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "     0.100000000,<not supported>,,cpu_clock [cxl_pmu_mem0.0],0,100.00,,\n\
         \x20    0.200000000,<not supported>,,cpu_clock [cxl_pmu_mem0.0],0,100.00,,\n"
    );
    assert_eq!(
        stderr(&out),
        "cxlstat: note: cannot open cxl_pmu_mem0.0/cpu_clock/ on CPU 0: the device does not \
         support vid=0x0,gid=0x0,mask=0x0 (EINVAL): no fixed counter with exactly this mask and \
         no configurable counter whose supported events cover it; see `cxlstat --list-events \
         cxl_pmu_mem0.0`; shown as <not supported>, the other events are counted\n"
    );
    let cases = [
        (
            "an errno that stops a run",
            vec![vec![libc::EACCES as u64, 0]],
            1,
            "[13, 0], expected an errno perf stat shows as <not supported>",
        ),
        (
            "no such member",
            vec![vec![einval, 1]],
            1,
            "[22, 1], expected an errno perf stat shows as <not supported> (EINVAL, \
             EOPNOTSUPP, ENOENT, ENODEV or ENXIO) and a member below 1",
        ),
        (
            "after a reading",
            vec![vec![0, 0, 0], vec![einval, 0]],
            2,
            "cpu_clock was read before, and is then recorded as refused to open",
        ),
    ];
    for (name, mut frames, frame, problem) in cases {
        frames.push(vec![1000, 300 * MS, 300 * MS]);
        let out = replay(&frames);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        let origin = format!(
            "cxlstat: {path_s}:{}: frame {}: entry \"{}\": ",
            frame + 1,
            frame - 1,
            unit_key("cpu_clock")
        );
        assert!(
            err.starts_with(&origin) && err.contains(problem),
            "{name}: {err}"
        );
        assert_eq!(stdout(&out), "", "{name}");
    }
}

/// Frames and values entries that no run writes are a damaged recording,
/// named with the file, line and frame: not a PMU that went away (status
/// 0), a time column that drops, or an input the recording lacks.
#[test]
fn forged_frames_and_read_lengths_are_a_damaged_recording() {
    let root = scratch("forged");
    const MS: u64 = 1_000_000;
    let good = vec![
        vec![0, 0, 0],
        vec![1000, 100 * MS, 100 * MS],
        vec![3000, 200 * MS, 200 * MS],
    ];
    let first_report = "     0.100000000,1000,,cpu_clock [cxl_pmu_mem0.0],100000000,100.00,,\n";
    let replay = |name: &str, event: &str, text: String| {
        let path = root.join(format!("{name}.rec"));
        std::fs::write(&path, text).unwrap();
        let out = cxlstat(&[
            "--replay",
            path.to_str().unwrap(),
            "-e",
            event,
            "-x",
            ",",
            "-I",
            "100",
        ]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{name}: one line: {err}");
        assert!(
            err.trim_end().ends_with("; the recording is damaged"),
            "{name}: {err}"
        );
        (path.to_str().unwrap().to_string(), err, stdout(&out))
    };

    // A values entry of a length no read gives: frame 2 (line 4).
    let group = "cpu_clock,context_switches";
    let cases = [
        (
            "no_words",
            "cpu_clock",
            vec![],
            "0 values for cpu_clock, expected 3",
        ),
        (
            "five_words",
            "cpu_clock",
            vec![3000, 200 * MS, 200 * MS, 7, 8],
            "5 values for cpu_clock, expected 3 (what its read gives) or 2 (a refused open: \
             errno, member)",
        ),
        (
            "group_members",
            group,
            vec![3, 200 * MS, 200 * MS, 3000, 7, 50, 8],
            "the read of the group cpu_clock,context_switches starts with 3 members, expected 2",
        ),
    ];
    for (name, labels, words, problem) in cases {
        let mut frames = if labels == group {
            vec![
                vec![2, 0, 0, 0, 7, 0, 8],
                vec![2, 100 * MS, 100 * MS, 1000, 7, 40, 8],
            ]
        } else {
            good[..2].to_vec()
        };
        frames.push(words);
        let event = if labels == group {
            format!("{{{labels}}}")
        } else {
            labels.to_string()
        };
        let (path, err, text) = replay(name, &event, hand_recording(labels, &frames));
        let origin = format!(
            "cxlstat: {path}:4: frame 2: entry \"{}\": {problem}",
            unit_key(labels)
        );
        assert!(err.starts_with(&origin), "{name}: {err}");
        assert_eq!(
            text.lines().count(),
            labels.split(',').count(),
            "{name}: the interval before it: {text}"
        );
    }

    // The monotonic time of frame 2 going back.
    let mut lines: Vec<String> = hand_recording("cpu_clock", &good)
        .lines()
        .map(String::from)
        .collect();
    let mut frame: serde_json::Value = serde_json::from_str(&lines[3]).unwrap();
    frame["elapsed_ns"] = serde_json::json!(5);
    lines[3] = frame.to_string();
    let (path, err, text) = replay("elapsed", "cpu_clock", lines.join("\n") + "\n");
    assert!(
        err.starts_with(&format!(
            "cxlstat: {path}:4: frame 2: elapsed_ns went from 100000000 to 5, expected at least \
             100000000"
        )),
        "{err}"
    );
    assert_eq!(text, first_report);

    // Frame 1 given twice: the copy (line 4) is refused before anything is
    // reported, as every damaged line is.
    let mut lines: Vec<String> = hand_recording("cpu_clock", &good)
        .lines()
        .map(String::from)
        .collect();
    lines.insert(3, lines[2].clone());
    let path = root.join("repeated.rec");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let path_s = path.to_str().unwrap();
    let out = cxlstat(&[
        "--replay",
        path_s,
        "-e",
        "cpu_clock",
        "-x",
        ",",
        "-I",
        "100",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "");
    assert_eq!(
        stderr(&out),
        format!(
            "cxlstat: {path_s}:4: frame 2: index 1, expected 2: frames are numbered 0, 1, 2, ... \
             in file order (a frame repeated, moved or left out)\n"
        )
    );

    // The same recording undamaged replays.
    let path = root.join("good.rec");
    std::fs::write(&path, hand_recording("cpu_clock", &good)).unwrap();
    let out = cxlstat(&[
        "--replay",
        path.to_str().unwrap(),
        "-e",
        "cpu_clock",
        "-x",
        ",",
        "-I",
        "100",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!(
            "{first_report}     0.200000000,2000,,cpu_clock [cxl_pmu_mem0.0],100000000,100.00,,\n"
        )
    );
}

/// A replay without interval options reports once, when its frames run
/// out, as a live run reports once when stopped: a recording of intervals
/// gives the whole run's total, from its first frame to its last, not its
/// first interval.
#[test]
fn a_replay_without_intervals_reports_the_whole_recorded_run() {
    let root = scratch("whole_run");
    const MS: u64 = 1_000_000;
    // A baseline and three intervals of 100 ms: 1000, 2000 and 3000 counted.
    let frames = vec![
        vec![0, 0, 0],
        vec![1000, 100 * MS, 100 * MS],
        vec![3000, 200 * MS, 200 * MS],
        vec![6000, 300 * MS, 300 * MS],
    ];
    let path = root.join("intervals.rec");
    std::fs::write(&path, hand_recording("cpu_clock", &frames)).unwrap();
    let path = path.to_str().unwrap();
    let out = cxlstat(&["--replay", path, "-e", "cpu_clock", "-x", ","]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "6000,,cpu_clock [cxl_pmu_mem0.0],300000000,100.00,,\n"
    );
    let out = cxlstat(&["--replay", path, "-e", "cpu_clock"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("\n       0.300000000 seconds time elapsed\n"),
        "{text}"
    );
    assert!(text.contains(" 6000 "), "{text}");
    // Every frame is still read: damage in a middle frame is found there.
    let mut damaged = frames.clone();
    damaged[2] = vec![3000, 200 * MS, 300 * MS];
    let bad = root.join("damaged.rec");
    std::fs::write(&bad, hand_recording("cpu_clock", &damaged)).unwrap();
    let bad = bad.to_str().unwrap();
    let out = cxlstat(&["--replay", bad, "-e", "cpu_clock", "-x", ","]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with(&format!("cxlstat: {bad}:4: frame 2: entry ")),
        "{}",
        stderr(&out)
    );
    assert_eq!(stdout(&out), "");
}

/// A replay given no `-e` counts what the recorded run counted (its
/// header's `-e`), where it said there was nothing to do; a recording of
/// no events, or whose arguments are not cxlstat's, says so in one line.
#[test]
fn a_replay_without_events_counts_the_recorded_ones() {
    let root = scratch("recorded_events");
    const MS: u64 = 1_000_000;
    let frames = vec![vec![0, 0, 0], vec![1000, 100 * MS, 100 * MS]];
    let made = hand_recording("cpu_clock", &frames);
    let with_args = |args: &str, file: &str| {
        let path = root.join(file);
        std::fs::write(&path, made.replacen(r#""args":[]"#, args, 1)).unwrap();
        path.to_str().unwrap().to_string()
    };
    let counted = with_args(r#""args":["-e","cpu_clock","0.1","1"]"#, "counted.rec");
    let out = cxlstat(&["--replay", &counted, "-x", ","]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "1000,,cpu_clock [cxl_pmu_mem0.0],100000000,100.00,,\n"
    );
    // Given, -e wins: the recorded unit of another event is not there.
    let out = cxlstat(&["--replay", &counted, "-e", "context_switches", "-x", ","]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    for (args, file, said) in [
        (
            r#""args":["--list"]"#,
            "listed.rec",
            "counted no events (-e); give -e EVENTS to show, or --list or --list-events",
        ),
        (
            r#""args":["--no-such-option","\u001b[2J"]"#,
            "forged.rec",
            "the recorded run's arguments are not cxlstat's: ",
        ),
    ] {
        let path = with_args(args, file);
        let out = cxlstat(&["--replay", &path]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("cxlstat: ") && err.contains(said), "{err}");
        assert!(!err.contains('\u{1b}'), "{err}");
        assert_eq!(stdout(&out), "");
    }
}

/// A forged header's argument longer than a command line's (the kernel's
/// 128 KiB an argument) ends soon in one short line: a `-e` of megabytes
/// took minutes and printed it whole. Its arguments asking for --help or
/// --version say why they are not a count's, not an empty reason.
#[test]
fn a_forged_recorded_event_or_help_gives_a_short_line_soon() {
    let root = scratch("recorded_events_forged");
    let made = hand_recording("cpu_clock", &[vec![0, 0, 0], vec![1000, 1, 1]]);
    let huge = "a".repeat(4 << 20);
    let nested = format!("{}cpu_clock{}", "{".repeat(200_000), "}".repeat(200_000));
    let longer = "an argument of 4194304 bytes, longer than a command line's (131071)";
    for (args, said) in [
        (serde_json::json!(["-e", huge]), longer),
        (
            serde_json::json!(["--pmu", huge, "-e", "cpu_clock"]),
            longer,
        ),
        (
            serde_json::json!(["-e", nested]),
            "an argument of 400009 bytes",
        ),
        (
            serde_json::json!(["--help"]),
            "not cxlstat's: they ask for ",
        ),
        (
            serde_json::json!(["--version"]),
            "not cxlstat's: they ask for ",
        ),
    ] {
        let path = root.join("forged.rec");
        let header = format!(r#""args":{args}"#);
        std::fs::write(&path, made.replacen(r#""args":[]"#, &header, 1)).unwrap();
        let started = std::time::Instant::now();
        let out = cxlstat(&["--replay", path.to_str().unwrap()]);
        let took = started.elapsed();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err:.300}");
        assert!(
            took < std::time::Duration::from_secs(10),
            "{took:?}: {err:.300}"
        );
        assert_eq!(err.lines().count(), 1, "{err:.300}");
        assert!(err.len() < 400, "{} bytes: {err:.300}", err.len());
        assert!(err.contains(said), "{err:.300}");
    }
}

/// A replay may count any of the recorded events, in any order: each unit
/// reads the recorded unit at its own position if that one counts the same
/// event in the same shape, else the first such not read yet.
#[test]
fn a_replay_counts_recorded_events_in_any_order() {
    if !perf_usable("replay_any_order") {
        return;
    }
    let root = scratch("replay_any_order");
    software_tree(&root, &[("cxl_pmu_mem0.0", 0)]);
    let root_s = root.to_str().unwrap();
    // Records `-e` each of `events` into `file` for `reports` reports of
    // `rows` rows each; the recording's path and the CSV rows printed.
    let record = |file: &str, events: &[&str], reports: usize, rows: usize| {
        let rec = root.join(file).to_str().unwrap().to_string();
        let mut args = vec!["--sysroot", root_s, "--record", &rec];
        for e in events {
            args.extend(["-e", e]);
        }
        let count = reports.to_string();
        args.extend(["-x", ",", "0.1", &count]);
        let live = cxlstat(&args);
        assert!(live.status.success(), "{}", stderr(&live));
        let text = stdout(&live);
        assert_eq!(text.lines().count(), reports * rows, "{text}");
        (rec, text)
    };
    let (rec, text) = record(
        "run.rec",
        &["cpu_clock", "context_switches", "cpu_clock"],
        3,
        3,
    );
    let rec_s = rec.as_str();
    let rows: Vec<&str> = text.lines().collect();
    // The rows the live run printed for the units at `positions`, per report.
    let picked = |positions: &[usize]| -> String {
        rows.chunks(3)
            .flat_map(|report| positions.iter().map(|&p| format!("{}\n", report[p])))
            .collect()
    };
    let replay = |events: &str| cxlstat(&["--replay", rec_s, "-e", events, "-x", ",", "0.1", "3"]);
    for (events, positions) in [
        ("context_switches", &[1][..]),
        ("context_switches,cpu_clock", &[1, 0]),
        ("cpu_clock,cpu_clock", &[0, 2]),
    ] {
        let out = replay(events);
        assert!(out.status.success(), "{events}: {}", stderr(&out));
        assert_eq!(stdout(&out), picked(positions), "{events}");
    }
    // A group and a single raw event of the same label (`mask=0,gid=0`):
    // each replays from its own recorded unit, whatever the order.
    let pmu = "cxl_pmu_mem0.0";
    let group = format!("{{{pmu}/mask=0/,{pmu}/gid=0/}}");
    let single = format!("{pmu}/mask=0,gid=0/");
    let (rec2, text) = record("shapes.rec", &[&group, &single], 2, 3);
    let rows: Vec<&str> = text.lines().collect();
    let alone = cxlstat(&["--replay", &rec2, "-e", &single, "-x", ",", "0.1", "2"]);
    assert!(alone.status.success(), "{}", stderr(&alone));
    let want: String = rows.chunks(3).map(|r| format!("{}\n", r[2])).collect();
    assert_eq!(stdout(&alone), want);
    // A `name=` hides the event it names: the same name over another
    // event is not the recorded one, whose values it would show as its own.
    let named = |event: &str| format!("{pmu}/{event},name=work/");
    let (rec3, text) = record("named.rec", &[&named("cpu_clock")], 2, 1);
    let replay_named = |event: &str| {
        cxlstat(&[
            "--replay",
            &rec3,
            "-e",
            &named(event),
            "-x",
            ",",
            "0.1",
            "2",
        ])
    };
    let same = replay_named("cpu_clock");
    assert!(same.status.success(), "{}", stderr(&same));
    assert_eq!(stdout(&same), text);
    let other = replay_named("context_switches");
    assert_eq!(other.status.code(), Some(1));
    assert!(
        stderr(&other).contains("does not hold `values perf:0:cxl_pmu_mem0.0/work/@0x3`"),
        "{}",
        stderr(&other)
    );
    // A third cpu_clock was never counted: the replay names what it lacks,
    // at the position after the recording's three units.
    let out = replay("cpu_clock,cpu_clock,cpu_clock");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("does not hold `values perf:3:cxl_pmu_mem0.0/cpu_clock/@0x0`"),
        "{}",
        stderr(&out)
    );
}
