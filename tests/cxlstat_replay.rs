//! Counter reads go through the source: a recorded run replays to the same
//! numbers, and a PMU whose reads start failing (device removed) gets a note
//! while the others go on.

mod cxlstat_support;

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
    assert_eq!(stdout(&live).lines().count(), 1 + 3 * 2);
    // Without a count, a replay runs until the recording ends: the same 3 reports.
    let exhausted = cxlstat(&["--replay", rec_s, "-e", "cpu_clock", "-x", ",", "-I", "100"]);
    assert!(exhausted.status.success(), "{}", stderr(&exhausted));
    assert_eq!(stdout(&exhausted), stdout(&live));

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
