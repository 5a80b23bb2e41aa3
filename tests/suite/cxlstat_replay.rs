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
    // lacks, not "<not counted>" rows, and the JSON document closed.
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
        err.contains("does not hold `values perf:") && err.contains("/context_switches/`"),
        "{err}"
    );
    let doc: serde_json::Value = serde_json::from_str(&stdout(&other)).expect("closed JSON");
    assert_eq!(doc["samples"].as_array().map(Vec::len), Some(0));
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
    assert_eq!(lines.len(), 4, "header and three frames: {recorded}");
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
    for (i, line) in lines.iter_mut().skip(1).enumerate() {
        let mut frame: serde_json::Value = serde_json::from_str(line).unwrap();
        let elapsed = i as u64 * 100_000_000;
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
