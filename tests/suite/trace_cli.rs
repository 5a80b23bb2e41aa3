//! `vcpustat trace` end to end through its command line: the live recorder
//! over a fixture debugfs tree (`--sysroot`), the report, and bad input.

use crate::out_of_memory::limit_address_space;
use crate::procstate::KillOnDrop;
use crate::procstate::wait_with_timeout;
// Shared with vcpustat_fuse.rs, which uses its scripted events.
use crate::simkernel::{self, MaskWrite};

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hwstat::vcpustat::trace::recording::Recording;

use crate::scratch::{Scratch, scratch};

/// A fresh directory for one test, removed when the test ends, also
/// when it fails.
fn tempdir(name: &str) -> Scratch {
    scratch(&format!("trace-cli-{name}"))
}

/// Runs `vcpustat trace ARGS...` and returns its exit status.
fn trace(args: &[&str]) -> i32 {
    std::process::Command::new(env!("CARGO_BIN_EXE_vcpustat"))
        .arg("trace")
        .args(args)
        .status()
        .expect("vcpustat runs")
        .code()
        .expect("vcpustat exits by itself")
}

/// Runs `vcpustat trace ARGS...` with stdout and stderr captured.
fn trace_output(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vcpustat"))
        .arg("trace")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("vcpustat runs");
    (
        out.status.code().expect("vcpustat exits by itself"),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A 48-byte big-endian DTL record.
fn record(processor: u16, waits: [u32; 3], timebase: u64) -> [u8; 48] {
    let mut raw = [0u8; 48];
    raw[0] = 7;
    raw[1] = 4;
    raw[2..4].copy_from_slice(&processor.to_be_bytes());
    raw[4..8].copy_from_slice(&waits[0].to_be_bytes());
    raw[8..12].copy_from_slice(&waits[1].to_be_bytes());
    raw[12..16].copy_from_slice(&waits[2].to_be_bytes());
    raw[16..24].copy_from_slice(&timebase.to_be_bytes());
    raw
}

/// A partition's /proc and debugfs files; each cpu-N holds `n` records
/// (a regular file yields them once, then 0 like an idle ring).
fn fixture(dir: &Path, partition: u32, records_per_cpu: &[u64]) -> PathBuf {
    let root = dir.join(format!("root{partition}"));
    let dtl = root.join("sys/kernel/debug/powerpc/dtl");
    std::fs::create_dir_all(&dtl).unwrap();
    std::fs::create_dir_all(root.join("proc/powerpc")).unwrap();
    std::fs::write(
        root.join("proc/powerpc/lparcfg"),
        format!("partition_id={partition}\n"),
    )
    .unwrap();
    std::fs::write(root.join("proc/cpuinfo"), "timebase\t: 512000000\n").unwrap();
    std::fs::write(dtl.join("dtl_event_mask"), "0x07\n").unwrap();
    std::fs::write(dtl.join("dtl_buf_entries"), "85\n").unwrap();
    for (cpu, &n) in records_per_cpu.iter().enumerate() {
        let mut data = Vec::new();
        for i in 0..n {
            let t = 1_000_000 * u64::from(partition) + 10_000 * i + 100 * cpu as u64;
            data.extend_from_slice(&record((cpu as u16 + i as u16) % 4, [10, 2, 30], t));
        }
        std::fs::write(dtl.join(format!("cpu-{cpu}")), data).unwrap();
    }
    root
}

/// Fails unless the fixture's DTL event mask is back at the 0x07 it was made with.
fn assert_mask_restored(root: &Path) {
    let mask = root.join("sys/kernel/debug/powerpc/dtl/dtl_event_mask");
    assert_eq!(
        std::fs::read_to_string(&mask).unwrap(),
        "0x07\n",
        "{}",
        mask.display()
    );
}

#[test]
fn a_recording_without_cede_events_says_its_run_times_may_be_too_high() {
    let dir = tempdir("masked");
    let root = fixture(&dir, 1, &[5, 3]);
    // A name with an escape character: escaped in text, given back exactly
    // in JSON (it was escaped twice there for a while).
    let file = dir.join("pre\u{1b}empt.dtl");
    let (status, _, err) = trace_output(&[
        "record",
        "--sysroot",
        root.to_str().unwrap(),
        "--duration",
        "20ms",
        "--events",
        "preempt",
        "-w",
        file.to_str().unwrap(),
    ]);
    assert_eq!(status, 0, "{err}");
    assert_mask_restored(&root);
    let note = format!(
        "{}: recorded with dtl_event_mask 0x02, without cede events: unless the kernel logged \
         them anyway, a vCPU's next record need not be its next dispatch, so run times, shares \
         and traced% may be too high",
        file.display()
    );
    let (status, text, err) = trace_output(&["report", file.to_str().unwrap()]);
    assert_eq!(status, 0, "{err}");
    let shown = note.replace('\u{1b}', "\\x1b");
    assert!(text.contains(&format!("note: {shown}\n")), "{text}");
    let (status, json, err) = trace_output(&["report", "-o", "json", file.to_str().unwrap()]);
    assert_eq!(status, 0, "{err}");
    assert!(
        json.contains(&serde_json::to_string(&note).unwrap()),
        "{json}"
    );
    // Recorded with every event the kernel logs, no such note.
    let all = dir.join("all.dtl");
    let status = trace(&[
        "record",
        "--sysroot",
        root.to_str().unwrap(),
        "--duration",
        "20ms",
        "-w",
        all.to_str().unwrap(),
    ]);
    assert_eq!(status, 0);
    let (_, text, _) = trace_output(&["report", all.to_str().unwrap()]);
    assert!(!text.contains("dtl_event_mask"), "{text}");
}

#[test]
fn a_time_base_that_goes_back_gives_a_negative_start_in_the_timeline() {
    let dir = tempdir("backwards");
    let root = fixture(&dir, 1, &[]);
    let dtl = root.join("sys/kernel/debug/powerpc/dtl");
    // cpu0's second record starts before its first; all on processor 3,
    // without waits, at 512 ticks a microsecond.
    for (cpu, starts) in [(0, &[1000u64, 500, 2000][..]), (1, &[700, 800])] {
        let data: Vec<u8> = starts.iter().flat_map(|&t| record(3, [0; 3], t)).collect();
        std::fs::write(dtl.join(format!("cpu-{cpu}")), data).unwrap();
    }
    let file = dir.join("back.dtl");
    let status = trace(&[
        "record",
        "--sysroot",
        root.to_str().unwrap(),
        "--duration",
        "20ms",
        "-w",
        file.to_str().unwrap(),
    ]);
    assert_eq!(status, 0);
    let f = file.to_str().unwrap();
    let (status, text, err) = trace_output(&["report", "--table", "timeline", f]);
    assert_eq!(status, 0, "{err}");
    let starts: Vec<(&str, &str)> = text
        .lines()
        .filter(|l| l.starts_with("3 "))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[1], f[2])
        })
        .collect();
    assert_eq!(
        starts,
        [
            ("700", "0.000"),
            ("800", "0.195"),
            ("1000", "0.586"),
            ("500", "-0.391"),
            ("2000", "2.539")
        ],
        "{text}"
    );
    let (status, json, err) = trace_output(&["report", "-o", "json", "--table", "timeline", f]);
    assert_eq!(status, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let rows = &doc["sections"]["timeline"]["samples"][0]["rows"];
    assert_eq!(rows[3]["start_tb"], 500);
    assert_eq!(rows[3]["start_us"], -0.390625);
    assert_eq!(rows[3]["partition"], "1");
    assert_eq!(rows[3]["cpu"], "0");
    assert_eq!(rows[3]["processor"], "3");
}

#[test]
fn runs_that_overlap_on_a_processor_are_noted_with_their_negative_delay() {
    let dir = tempdir("overlap");
    const US: u64 = 512;
    // On processor 3: partition 1 cpu 0 runs from 100 µs until its next
    // record's wait starts at 150 µs; partition 2 cpu 0 runs 120..140 µs,
    // 30 µs before partition 1's run ended (as an offset time base shows).
    let mut files = Vec::new();
    for (partition, starts) in [(1, [(100, 0), (160, 10)]), (2, [(120, 0), (145, 5)])] {
        let root = fixture(&dir, partition, &[]);
        let data: Vec<u8> = starts
            .iter()
            .flat_map(|&(at, waited)| record(3, [(waited * US) as u32, 0, 0], at * US))
            .collect();
        std::fs::write(root.join("sys/kernel/debug/powerpc/dtl/cpu-0"), data).unwrap();
        let file = dir.join(format!("p{partition}.dtl"));
        let status = trace(&[
            "record",
            "--sysroot",
            root.to_str().unwrap(),
            "--duration",
            "20ms",
            "-w",
            file.to_str().unwrap(),
        ]);
        assert_eq!(status, 0);
        files.push(file.to_str().unwrap().to_string());
    }
    let note = "runs overlap on processor 3 (1 dispatch, traced share above 100 %): a dispatch \
                started before the previous run on its processor ended";
    let args = |extra: &[&str]| -> Vec<String> {
        let mut a = vec!["report".to_string()];
        a.extend(extra.iter().map(|s| s.to_string()));
        a.extend(files.iter().cloned());
        a
    };
    let run = |extra: &[&str]| {
        let a = args(extra);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let (status, out, err) = trace_output(&a);
        assert_eq!(status, 0, "{err}");
        out
    };
    // Runs of 50 and 20 µs in a window of 60 µs: 116.67 %.
    let text = run(&["--table", "processors"]);
    let row = text.lines().find(|l| l.starts_with("3 ")).unwrap();
    assert_eq!(row.split_whitespace().nth(3), Some("116.67"), "{text}");
    assert!(text.contains(&format!("note: {note}")), "{text}");
    let text = run(&["--table", "timeline"]);
    let delays: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("3 "))
        .map(|l| l.split_whitespace().last().unwrap())
        .collect();
    assert_eq!(delays, ["-", "-30.000", "5.000", "-"], "{text}");
    assert!(
        text.contains("note: runs overlap on processor 3 (1 dispatch): "),
        "{text}"
    );
    let json = run(&["-o", "json", "--table", "timeline"]);
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let sample = &doc["sections"]["timeline"]["samples"][0];
    assert_eq!(sample["rows"][1]["delay_before_us"], -30.0);
    let notes = sample["notes"].as_array().unwrap();
    assert_eq!(notes.len(), 1, "{json}");
    assert!(
        notes[0]
            .as_str()
            .unwrap()
            .starts_with("runs overlap on processor 3")
    );
}

#[test]
fn live_recorder_over_a_sysroot_then_a_merged_report() {
    let dir = tempdir("live");
    let r1 = fixture(&dir, 1, &[5, 3]);
    let r2 = fixture(&dir, 2, &[4, 0, 2]);
    let (f1, f2) = (dir.join("p1.dtl"), dir.join("p2.dtl"));
    let status = trace(&[
        "record",
        "--sysroot",
        r1.to_str().unwrap(),
        "--duration",
        "30ms",
        "--poll",
        "5ms",
        "--events",
        "cede,preempt",
        "-w",
        f1.to_str().unwrap(),
    ]);
    assert_eq!(status, 0);
    assert_mask_restored(&r1);
    let status = trace(&[
        "record",
        "--sysroot",
        r2.to_str().unwrap(),
        "--cpus",
        "0,2",
        "--duration",
        "20ms",
        "-w",
        f2.to_str().unwrap(),
    ]);
    assert_eq!(status, 0);
    let rec = Recording::open(&f1).unwrap();
    assert_eq!(rec.header.partition_id, 1);
    assert_eq!(rec.header.event_mask, Some(0x03));
    let counts: Vec<(u32, u64)> = rec.header.cpus.iter().map(|c| (c.cpu, c.entries)).collect();
    assert_eq!(counts, vec![(0, 5), (1, 3)]);
    let rec = Recording::open(&f2).unwrap();
    let counts: Vec<(u32, u64)> = rec.header.cpus.iter().map(|c| (c.cpu, c.entries)).collect();
    assert_eq!(counts, vec![(0, 4), (2, 2)]);
    // Without --events, the mask the kernel had (the fixture's 0x07).
    assert_eq!(rec.header.event_mask, Some(0x07));
    for format in ["text", "json"] {
        assert_eq!(
            trace(&[
                "report",
                "-o",
                format,
                f1.to_str().unwrap(),
                f2.to_str().unwrap()
            ]),
            0
        );
    }
    assert_eq!(trace(&["report", "--timeline", f1.to_str().unwrap()]), 0);
    // The same vCPUs twice are refused.
    assert_eq!(
        trace(&["report", f1.to_str().unwrap(), f1.to_str().unwrap()]),
        1
    );
}

#[test]
fn bad_input_fails_cleanly_and_leaves_the_system_as_it_was() {
    let dir = tempdir("bad");
    let not_a_recording = dir.join("x.dtl");
    std::fs::write(&not_a_recording, "hello\n").unwrap();
    assert_eq!(trace(&["report", not_a_recording.to_str().unwrap()]), 1);
    assert_eq!(
        trace(&["report", dir.join("missing.dtl").to_str().unwrap()]),
        1
    );
    let topo = dir.join("topo");
    std::fs::write(&topo, "0-3 chip=0\n").unwrap();
    assert_eq!(
        trace(&[
            "report",
            "--topology",
            topo.to_str().unwrap(),
            not_a_recording.to_str().unwrap()
        ]),
        1
    );

    // No partition identity: refused before any ring is opened; mask untouched.
    let root = fixture(&dir, 3, &[2]);
    std::fs::remove_file(root.join("proc/powerpc/lparcfg")).unwrap();
    let out = dir.join("none.dtl");
    let (status, _, err) = trace_output(&[
        "record",
        "--sysroot",
        root.to_str().unwrap(),
        "--events",
        "fault",
        "-w",
        out.to_str().unwrap(),
    ]);
    assert_eq!(status, 1);
    // The message names the path the manual names (and the older one),
    // each with its error.
    assert_eq!(
        err,
        "vcpustat: cannot read the partition identity (/proc/powerpc/lparcfg: No such file or \
         directory (os error 2); /proc/ppc64/lparcfg: No such file or directory (os error 2)); \
         trace needs a pseries LPAR\n"
    );
    assert!(!out.exists());
    assert_mask_restored(&root);
    // A vCPU without a ring: the error names it, the mask is restored.
    let status = trace(&[
        "record",
        "--sysroot",
        fixture(&dir, 4, &[1]).to_str().unwrap(),
        "--cpus",
        "0-1",
        "--events",
        "fault",
        "--duration",
        "10ms",
        "-w",
        out.to_str().unwrap(),
    ]);
    assert_eq!(status, 1);
    assert!(!out.exists());
    assert_mask_restored(&dir.join("root4"));
    // A usage error, refused by the parser like any other (status 2).
    assert_eq!(
        trace(&["record", "--poll", "0", "-w", out.to_str().unwrap()]),
        2
    );
}

/// `trace record --record FILE` keeps the kernel files it read in a
/// recording of its own: `vcpustat --replay` refuses it as another tool's
/// (it took its frames for a report run's and said the recorded machine
/// had no dispatch statistics), and `trace report` says where the trace is.
#[test]
fn the_kernel_files_of_a_trace_recording_are_not_replayed_as_a_report_run() {
    let dir = tempdir("kernel-files");
    let root = fixture(&dir, 1, &[2]);
    let (dtl, files) = (dir.join("p1.dtl"), dir.join("kernel.rec"));
    let status = trace(&[
        "record",
        "--sysroot",
        root.to_str().unwrap(),
        "--duration",
        "10ms",
        "-w",
        dtl.to_str().unwrap(),
        "--record",
        files.to_str().unwrap(),
    ]);
    assert_eq!(status, 0);
    let header = std::fs::read_to_string(&files).unwrap();
    assert!(
        header.starts_with(
            r#"{"format":"hwstat-recording","version":2,"tool":"vcpustat trace record","#
        ),
        "{header}"
    );
    let files_s = files.to_str().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_vcpustat"))
        .args(["--replay", files_s])
        .output()
        .unwrap();
    assert_eq!(
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned()
        ),
        (
            Some(1),
            format!("vcpustat: {files_s} was recorded by vcpustat trace record, not vcpustat\n")
        )
    );
    assert!(out.stdout.is_empty());
    assert_eq!(
        trace_output(&["report", files_s]),
        (
            1,
            String::new(),
            format!(
                "vcpustat: {files_s} holds the kernel files vcpustat trace record read (its \
                 --record), not a Dispatch Trace Log: report on the file it wrote with -w\n"
            )
        )
    );
    assert_eq!(trace(&["report", dtl.to_str().unwrap()]), 0);
}

#[test]
fn a_recording_of_plain_vcpustat_says_to_replay_it_with_vcpustat() {
    // The reverse of `vcpustat --replay` given a trace recording.
    for tool in ["vcpustat", "iostat", "cxlstat"] {
        let rec = format!(
            "{}/tests/fixtures/charts/{tool}.rec",
            env!("CARGO_MANIFEST_DIR")
        );
        let recorded_by = if tool == "iostat" { "iostat-rs" } else { tool };
        let (status, out, err) = trace_output(&["report", &rec]);
        assert_eq!(status, 1, "{tool}: {err}");
        assert_eq!(out, "", "{tool}");
        assert_eq!(
            err,
            format!(
                "vcpustat: {rec} was recorded by {recorded_by}, not vcpustat trace record: \
                 replay it with {recorded_by} --replay {rec}\n"
            )
        );
    }
}

#[test]
fn a_stop_signal_ends_an_open_ended_recording_cleanly() {
    let dir = tempdir("signal");
    let root = fixture(&dir, 5, &[3, 3]);
    let out = dir.join("sig.dtl");
    let mut child = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_vcpustat"))
            .args(["trace", "record", "--sysroot"])
            .arg(&root)
            .args(["--events", "preempt", "-w"])
            .arg(&out)
            .spawn()
            .expect("vcpustat runs"),
    );
    // The recorder opens its rings after installing its stop handlers:
    // from then on SIGTERM ends the recording instead of the process.
    let last_ring = root.join("sys/kernel/debug/powerpc/dtl/cpu-1");
    crate::procstate::await_open_file(child.id(), &last_ring.canonicalize().unwrap());
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let status = wait_with_timeout(
        &mut child,
        Duration::from_secs(20),
        "vcpustat after SIGTERM",
    );
    assert_eq!(status.code(), Some(0));
    let rec = Recording::open(&out).unwrap();
    assert_eq!(rec.header.cpus.iter().map(|c| c.entries).sum::<u64>(), 6);
    assert_mask_restored(&root);
}

#[test]
fn csv_is_one_table_chosen_with_table() {
    let dir = tempdir("csv");
    let root = fixture(&dir, 1, &[5, 3]);
    let f = dir.join("p.dtl");
    let fs = f.to_str().unwrap();
    let status = trace(&[
        "record",
        "--sysroot",
        root.to_str().unwrap(),
        "--duration",
        "10ms",
        "-w",
        fs,
    ]);
    assert_eq!(status, 0);
    // Several tables in one CSV: refused, naming the choices.
    let (status, out, err) = trace_output(&["report", "-o", "csv", fs]);
    assert_eq!(status, 2);
    assert!(out.is_empty());
    assert!(
        err.contains(
            "-o csv writes one table: choose it with --table \
             (latency, reasons, processors, shares, timeline)"
        ),
        "{err}"
    );
    let (status, _, err) = trace_output(&["report", "--timeline", "--table", "shares", fs]);
    assert_eq!(status, 2, "{err}");
    for (table, header_end) in [
        ("latency", ",possibly_lost_reads"),
        ("reasons", "kind,code,reason,count"),
        ("processors", ",delay_max_us"),
        ("shares", ",share_ratio"),
        ("timeline", ",delay_before_us"),
    ] {
        let (status, out, err) = trace_output(&["report", "-o", "csv", "--table", table, fs]);
        assert_eq!(status, 0, "{err}");
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].ends_with(header_end), "{table}: {}", lines[0]);
        let fields = lines[0].split(',').count();
        assert!(lines.len() > 1, "{table}");
        // One header, then rows of the same width; no blank line, no second header.
        for line in &lines[1..] {
            assert_eq!(line.split(',').count(), fields, "{table}: {line}");
            assert!(!line.starts_with("timestamp"), "{table}: {line}");
        }
    }
    // Every reason row carries its code.
    let (_, out, _) = trace_output(&["report", "-o", "csv", "--table", "reasons", fs]);
    assert!(out.contains(",1,0,dispatch,7,time_slice,5\n"), "{out}");
    assert!(out.contains(",1,1,preempt,4,time_slice,3\n"), "{out}");
}

#[test]
fn an_unwritable_output_fails_before_recording() {
    let dir = tempdir("unwritable");
    let root = fixture(&dir, 1, &[2]);
    let started = Instant::now();
    let (status, _, err) = trace_output(&[
        "record",
        "--sysroot",
        root.to_str().unwrap(),
        "--events",
        "cede",
        "--duration",
        "60",
        "-w",
        "/nonexistent/x.dtl",
    ]);
    assert_eq!(status, 1);
    // Well short of the minute it would record, on a loaded machine too.
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert!(
        err.contains("cannot write the recording /nonexistent/x.dtl: No such file or directory"),
        "{err}"
    );
    assert_mask_restored(&root);
    // A full disk: a clear error, the mask restored.
    let (status, _, err) = trace_output(&[
        "record",
        "--sysroot",
        root.to_str().unwrap(),
        "--events",
        "cede",
        "--duration",
        "50ms",
        "-w",
        "/dev/full",
    ]);
    assert_eq!(status, 1);
    assert!(err.contains("writing /dev/full"), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    assert_mask_restored(&root);
}

#[test]
fn a_killed_recording_is_reported_as_it_is() {
    let dir = tempdir("killed");
    let root = fixture(&dir, 6, &[4, 2]);
    let out = dir.join("killed.dtl");
    let mut child = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_vcpustat"))
            .args(["trace", "record", "--sysroot"])
            .arg(&root)
            .arg("-w")
            .arg(&out)
            .stderr(Stdio::null())
            .spawn()
            .expect("vcpustat runs"),
    );
    // The records are read at the first poll and written within a second
    // (allow for a loaded machine); the run goes on until it is killed.
    let started = Instant::now();
    let on_disk = |path: &Path| {
        Recording::open(path)
            .map(|r| r.header.cpus.iter().map(|c| c.entries).sum::<u64>())
            .unwrap_or(0)
    };
    while on_disk(&out) < 6 && started.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        on_disk(&out),
        6,
        "not on disk after {:?}",
        started.elapsed()
    );
    assert!(child.try_wait().unwrap().is_none(), "still recording");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let (status, text, err) = trace_output(&["report", out.to_str().unwrap()]);
    assert_eq!(status, 0, "{err}");
    assert!(err.contains("the recording was cut"), "{err}");
    assert!(err.contains("reporting the 6 records before it"), "{err}");
    assert!(text.contains("note: "), "{text}");
    let rec = Recording::open(&out).unwrap();
    let counts: Vec<(u32, u64)> = rec.header.cpus.iter().map(|c| (c.cpu, c.entries)).collect();
    assert_eq!(counts, vec![(0, 4), (1, 2)]);
}

#[test]
fn nothing_but_results_is_printed_when_stderr_is_not_a_terminal() {
    let dir = tempdir("quiet");
    let root = fixture(&dir, 1, &[3]);
    let f = dir.join("q.dtl");
    let (status, out, err) = trace_output(&[
        "record",
        "--sysroot",
        root.to_str().unwrap(),
        "--duration",
        "600ms",
        "-w",
        f.to_str().unwrap(),
    ]);
    assert_eq!(status, 0);
    assert!(out.is_empty());
    assert_eq!(
        err,
        format!(
            "vcpustat: recorded 3 DTL entries of 1 vCPU(s) of partition 1 into {}\n",
            f.display()
        )
    );
    let (status, _, err) = trace_output(&["report", "--timeline", f.to_str().unwrap()]);
    assert_eq!(status, 0);
    assert_eq!(err, "");
}

/// A FUSE kernel with lparcfg, cpuinfo and the debugfs DTL files, whose
/// attribute files refuse `lseek` like the real ones.
fn dtl_kernel(config_dtl: bool, buf_entries: u32) -> simkernel::Kernel {
    let mut k = simkernel::Kernel::new(&[(0, [1, 0, 0, 0, 1, 0, 0, 0])]).with_debugfs(
        config_dtl,
        buf_entries,
        &[0, 1],
    );
    k.lparcfg = Some("lparcfg 1.9\npartition_id=9\nshared_processor_mode=1\n".into());
    k.cpuinfo = Some("processor\t: 0\n\ntimebase\t: 512000000\n".into());
    k
}

#[test]
fn events_and_ring_size_work_on_unseekable_debugfs_files() {
    let Some(sim) = simkernel::mount("trace-events", dtl_kernel(true, 170)) else {
        return;
    };
    let dir = tempdir("events");
    let f = dir.join("e.dtl");
    let (status, _, err) = trace_output(&[
        "record",
        "--sysroot",
        sim.root.to_str().unwrap(),
        "--events",
        "cede,preempt",
        "--duration",
        "30ms",
        "-w",
        f.to_str().unwrap(),
    ]);
    assert_eq!(status, 0, "{err}");
    sim.await_rings_closed();
    {
        let k = sim.kernel();
        let dtl = k.debugfs.as_ref().unwrap();
        // Each ring took the mask set; the one found went back as soon as
        // both were open, not when they closed.
        assert_eq!(dtl.opened_with, [(0, 0x03), (1, 0x03)]);
        assert_eq!(
            dtl.mask_writes,
            [MaskWrite::new("0x03\n", 0), MaskWrite::new("0x07\n", 2)]
        );
        assert_eq!(dtl.event_mask, 0x07);
        assert!(dtl.open_rings.is_empty());
    }
    // dtl_buf_entries was really read (not the default of 85).
    let rec = Recording::open(&f).unwrap();
    assert_eq!(rec.header.ring_entries, 170);
    assert_eq!(rec.header.event_mask, Some(0x03));
}

/// `trace record --events` on `cpus` of the simulated kernel, for
/// `duration`, into `file`: the child, its standard error piped.
fn spawn_recording(
    root: &Path,
    events: &str,
    cpus: &str,
    duration: &str,
    file: &Path,
) -> KillOnDrop {
    let child = Command::new(env!("CARGO_BIN_EXE_vcpustat"))
        .args(["trace", "record", "--sysroot"])
        .arg(root)
        .args([
            "--events",
            events,
            "--cpus",
            cpus,
            "--duration",
            duration,
            "-w",
        ])
        .arg(file)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("vcpustat runs");
    KillOnDrop(child)
}

/// Waits for `child` (up to 30 s), with its standard error.
fn finish(child: &mut KillOnDrop) -> (std::process::ExitStatus, String) {
    let status = wait_with_timeout(child, Duration::from_secs(30), "vcpustat trace record");
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    (status, err)
}

/// Waits (up to 20 s) until `rings` rings of the simulated kernel are open
/// and the mask a recording set is back to `mask`. The rings being open is
/// not enough: the recording puts the mask back just after its last ring
/// opens, and a kill or another recording's start in between (one run in
/// fifty, unloaded) finds the recording's own mask still set.
fn await_open_rings_and_mask(sim: &simkernel::Mounted, rings: usize, mask: u8) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while sim
        .kernel()
        .debugfs
        .as_ref()
        .is_some_and(|d| d.open_rings.len() < rings || d.event_mask != mask)
    {
        assert!(
            Instant::now() < deadline,
            "the recording did not open {rings} ring(s) and put the mask back to {mask:#04x}: {:?}",
            sim.kernel()
                .debugfs
                .as_ref()
                .map(|d| (&d.open_rings, d.event_mask))
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A mask someone else sets while vcpustat opens its rings is theirs:
/// vcpustat puts back only the mask it set itself, as it does a frequency.
#[test]
fn a_mask_someone_else_set_while_the_rings_opened_is_left_as_it_is() {
    let mut kernel = dtl_kernel(true, 85);
    // Someone else's `echo 0x01 > dtl_event_mask`, just after cpu-0 opens.
    kernel.debugfs.as_mut().unwrap().theirs_at_next_open = Some(0x01);
    let Some(sim) = simkernel::mount("trace-their-mask", kernel) else {
        return;
    };
    let dir = tempdir("their-mask");
    let f = dir.join("m.dtl");
    let (status, err) = finish(&mut spawn_recording(
        &sim.root,
        "cede,preempt",
        "0",
        "50ms",
        &f,
    ));
    assert!(status.success(), "{err}");
    assert!(
        err.contains(
            "vcpustat: note: someone else set /sys/kernel/debug/powerpc/dtl/dtl_event_mask to \
             0x01 while vcpustat opened its rings: left as it is (vcpustat had set 0x03, it was \
             0x07)\n"
        ),
        "{err}"
    );
    sim.await_rings_closed();
    let k = sim.kernel();
    let dtl = k.debugfs.as_ref().unwrap();
    assert_eq!(dtl.event_mask, 0x01);
    assert_eq!(
        dtl.mask_writes,
        [MaskWrite::new("0x03\n", 0)],
        "no write after theirs"
    );
}

/// SIGKILL leaves no chance to clean up: once its rings are open, a
/// recording has nothing left to put back.
#[test]
fn a_recording_killed_once_its_rings_are_open_leaves_the_mask_as_it_was() {
    let Some(sim) = simkernel::mount("trace-killed", dtl_kernel(true, 85)) else {
        return;
    };
    let dir = tempdir("killed-rings");
    let mut child = spawn_recording(&sim.root, "preempt", "0-1", "30s", &dir.join("k.dtl"));
    await_open_rings_and_mask(&sim, 2, 0x07);
    child.kill().unwrap();
    child.wait().unwrap();
    sim.await_rings_closed();
    let k = sim.kernel();
    let dtl = k.debugfs.as_ref().unwrap();
    assert_eq!(dtl.opened_with, [(0, 0x02), (1, 0x02)]);
    assert_eq!(dtl.event_mask, 0x07);
}

/// Two recordings of other vCPUs at the same time, each with its own
/// events: each ring logs the events of its recording, the mask set later
/// during the first recording is left alone, and the mask ends as it was
/// (when each put back the mask at its end, the second put back the
/// first's).
#[test]
fn recordings_of_other_vcpus_at_the_same_time_leave_the_mask_as_it_was() {
    let Some(sim) = simkernel::mount("trace-two-recordings", dtl_kernel(true, 85)) else {
        return;
    };
    let dir = tempdir("two-recordings");
    let (first, second) = (dir.join("first.dtl"), dir.join("second.dtl"));
    let mut a = spawn_recording(&sim.root, "cede,preempt", "0", "3s", &first);
    await_open_rings_and_mask(&sim, 1, 0x07);
    let mut b = spawn_recording(&sim.root, "preempt", "1", "100ms", &second);
    let (status, err) = finish(&mut b);
    assert!(status.success(), "{err}");
    // The first still records; someone else's mask meanwhile stays theirs.
    // The second's ring closes once FUSE's RELEASE arrives, after it ended
    // (still open in 1 of some 20 runs of the suite).
    sim.kernel().debugfs.as_mut().unwrap().event_mask = 0x04;
    sim.await_open_rings(&[0]);
    let (status, err) = finish(&mut a);
    assert!(status.success(), "{err}");
    assert!(!err.contains("note"), "{err}");
    sim.await_rings_closed();
    let k = sim.kernel();
    let dtl = k.debugfs.as_ref().unwrap();
    assert_eq!(dtl.opened_with, [(0, 0x03), (1, 0x02)]);
    assert_eq!(
        dtl.mask_writes,
        [
            MaskWrite::new("0x03\n", 0),
            MaskWrite::new("0x07\n", 1),
            MaskWrite::new("0x02\n", 1),
            MaskWrite::new("0x07\n", 2),
        ]
    );
    assert_eq!(dtl.event_mask, 0x04);
    for (file, mask) in [(&first, 0x03), (&second, 0x02)] {
        assert_eq!(Recording::open(file).unwrap().header.event_mask, Some(mask));
    }
}

#[test]
fn a_kernel_without_config_dtl_is_told_from_an_unmounted_debugfs() {
    let Some(sim) = simkernel::mount("trace-nodtl", dtl_kernel(false, 85)) else {
        return;
    };
    let dir = tempdir("nodtl");
    let f = dir.join("n.dtl");
    let args = |root: &Path| {
        vec![
            "record".to_string(),
            "--sysroot".into(),
            root.display().to_string(),
            "--duration".into(),
            "10ms".into(),
            "-w".into(),
            f.display().to_string(),
        ]
    };
    let run = |root: &Path| {
        let a = args(root);
        trace_output(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let (status, _, err) = run(&sim.root);
    assert_eq!(status, 1);
    assert!(
        err.contains(
            "debugfs is mounted on /sys/kernel/debug: this kernel has no DTL support (CONFIG_DTL)"
        ),
        "{err}"
    );
    assert!(!f.exists());
    sim.kernel().debugfs = None;
    let (status, _, err) = run(&sim.root);
    assert_eq!(status, 1);
    assert!(
        err.contains(
            "/sys/kernel/debug: debugfs is not mounted (mount -t debugfs none /sys/kernel/debug)"
        ),
        "{err}"
    );
}

/// Runs `vcpustat trace ARGS...` with standard error on a pseudo-terminal;
/// returns the exit status and what the terminal received.
fn trace_on_a_terminal(args: &[&str]) -> (i32, String) {
    use std::io::Read;
    let (master, slave) = crate::pipes::pseudo_terminal();
    let mut child = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_vcpustat"))
            .arg("trace")
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::from(slave))
            .spawn()
            .expect("vcpustat runs"),
    );
    let status = wait_with_timeout(&mut child, Duration::from_secs(20), "vcpustat trace")
        .code()
        .unwrap();
    // The slave is closed in this process (moved into the child's stdio and
    // dropped by spawn): reading the master ends with EIO once drained.
    let mut terminal = std::fs::File::from(master);
    let mut seen = Vec::new();
    let mut piece = [0u8; 4096];
    while let Ok(n @ 1..) = terminal.read(&mut piece) {
        seen.extend_from_slice(&piece[..n]);
    }
    (status, String::from_utf8_lossy(&seen).into_owned())
}

#[test]
fn progress_shows_on_a_terminal_and_is_erased() {
    let dir = tempdir("tty");
    let root = fixture(&dir, 1, &[3, 2]);
    let f = dir.join("t.dtl");
    let (status, seen) = trace_on_a_terminal(&[
        "record",
        "--sysroot",
        root.to_str().unwrap(),
        "--duration",
        "300ms",
        "-w",
        f.to_str().unwrap(),
    ]);
    assert_eq!(status, 0, "{seen}");
    assert!(seen.contains("\r\x1b[Krecording 2 vCPU(s): "), "{seen:?}");
    // Erased before the summary line.
    assert!(
        seen.contains("\r\x1b[Kvcpustat: recorded 5 DTL entries"),
        "{seen:?}"
    );
    let (status, seen) = trace_on_a_terminal(&["report", f.to_str().unwrap()]);
    assert_eq!(status, 0, "{seen}");
    assert!(seen.contains("per-vCPU pass: "), "{seen:?}");
    assert!(seen.ends_with("\r\x1b[K"), "{seen:?}");
}

#[test]
fn trace_without_a_subcommand_says_one_is_required() {
    let (status, out, err) = trace_output(&[]);
    assert_eq!(status, 2);
    assert!(out.is_empty());
    assert_eq!(
        err,
        "vcpustat: 'vcpustat trace' requires a subcommand but one was not provided \
         [subcommands: record, report, help] (see 'vcpustat trace --help')\n"
    );
}

#[test]
fn usage_errors_of_a_trace_subcommand_point_to_its_help() {
    for (args, help) in [
        (&["record"][..], "vcpustat trace record --help"),
        (
            &["record", "-w", "x.dtl", "--cpus", "3-1"][..],
            "vcpustat trace record --help",
        ),
        (&["report"][..], "vcpustat trace report --help"),
        (
            &["report", "--table", "all", "x.dtl"][..],
            "vcpustat trace report --help",
        ),
        (&["bogus"][..], "vcpustat trace --help"),
    ] {
        let (status, _, err) = trace_output(args);
        assert_eq!(status, 2, "{args:?}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.ends_with(&format!(" (see '{help}')\n")),
            "{args:?}: {err}"
        );
    }
    // The report's own usage errors still point to vcpustat's help.
    let out = Command::new(env!("CARGO_BIN_EXE_vcpustat"))
        .args(["--cpus", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).ends_with(" (see 'vcpustat --help')\n"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn record_does_not_offer_replay() {
    let (status, help, _) = trace_output(&["record", "--help"]);
    assert_eq!(status, 0);
    assert!(help.contains("--sysroot <DIR>"), "{help}");
    assert!(help.contains("--record <FILE>"), "{help}");
    assert!(!help.contains("--replay"), "{help}");
    // Given anyway, it is an unknown option: a usage error, nothing written.
    let dir = tempdir("replay");
    let out = dir.join("x.dtl");
    let (status, _, err) =
        trace_output(&["record", "--replay", "r.rec", "-w", out.to_str().unwrap()]);
    assert_eq!(status, 2);
    assert_eq!(
        err,
        "vcpustat: unexpected argument '--replay' found (see 'vcpustat trace record --help')\n"
    );
    assert!(!out.exists());
}

#[test]
fn a_header_count_of_u64_max_is_refused_without_a_panic() {
    let dir = tempdir("overflow");
    let root = fixture(&dir, 1, &[2]);
    let good = dir.join("good.dtl");
    let status = trace(&[
        "record",
        "--sysroot",
        root.to_str().unwrap(),
        "--duration",
        "10ms",
        "-w",
        good.to_str().unwrap(),
    ]);
    assert_eq!(status, 0);
    let bytes = std::fs::read(&good).unwrap();
    let newline = bytes.iter().position(|&b| b == b'\n').unwrap();
    let line = std::str::from_utf8(&bytes[..newline]).unwrap();
    for field in ["entries", "reads", "possibly_lost_reads"] {
        let zero = format!("\"{field}\":0");
        assert!(line.contains(&zero), "{line}");
        let crafted = line.replacen(&zero, &format!("\"{field}\":18446744073709551615"), 1);
        let path = dir.join(format!("{field}.dtl"));
        std::fs::write(&path, [crafted.as_bytes(), &bytes[newline..]].concat()).unwrap();
        let (status, out, err) = trace_output(&["report", path.to_str().unwrap()]);
        assert_eq!(status, 1, "{field}: {err}");
        assert!(out.is_empty(), "{out}");
        assert_eq!(
            err,
            format!(
                "vcpustat: {}: cpu 0: {field} is 18446744073709551615 in the header, where \
                 version 2 has 0 (the blocks carry the counts)\n",
                path.display()
            )
        );
    }
}

/// Under an address-space limit too tight to be sure of opening the rings
/// and putting `dtl_event_mask` back, a recording does not set it: an
/// allocation that fails ends the run at once, before the mask's guard
/// could put it back. Every run leaves the mask as it was.
#[test]
fn a_recording_under_a_memory_limit_leaves_the_mask_as_it_was() {
    let Some(sim) = simkernel::mount("trace-memory-limit", dtl_kernel(true, 85)) else {
        return;
    };
    let dir = tempdir("memory-limit");
    let f = dir.join("m.dtl");
    let (mut refused, mut recorded) = (0, 0);
    // The room is 8 MiB over the 9 MB a run takes to start here: runs go
    // through from about 17.5 MB. The scan goes well past that, as a
    // machine whose runs start larger would find no limit enough.
    for kb in (8_000..=28_000).step_by(500) {
        let (out, err) = record_under_limit(&sim, &["--cpus", "0"], &f, kb);
        if err.contains("not enough memory for this recording") {
            assert_eq!(out.status.code(), Some(4), "under {kb} kB: {err}");
            assert_eq!(err.lines().count(), 1, "under {kb} kB: {err}");
            refused += 1;
        } else if out.status.success() {
            recorded += 1;
        }
    }
    assert!(refused > 0, "no limit was tight enough");
    assert!(recorded > 0, "no limit was enough");
}

/// The buffers a recording takes for its rings (a ring's worth per CPU,
/// 8 MB on a 2,048-CPU LPAR) are not part of the room it makes sure of
/// before it sets `dtl_event_mask`: taken while the mask was set, they ran
/// out under limits just above that room, and the mask stayed as set (a
/// 2,048-CPU simulation left it at 0x03 under 17.55 to 17.7 MB). Four
/// CPUs of the largest ring the recorder takes weigh 12 MB: no limit may
/// leave the mask changed.
#[test]
fn the_ring_buffers_are_taken_before_the_mask_is_set() {
    let mut kernel = dtl_kernel(true, 65_536);
    kernel.debugfs.as_mut().unwrap().cpus = vec![0, 1, 2, 3];
    let Some(sim) = simkernel::mount("trace-ring-buffers", kernel) else {
        return;
    };
    let dir = tempdir("ring-buffers");
    let f = dir.join("r.dtl");
    let (mut refused, mut recorded) = (0, 0);
    for kb in (12_000..=32_000).step_by(1_000) {
        let (out, _) = record_under_limit(&sim, &[], &f, kb);
        if out.status.code() == Some(4) {
            refused += 1;
        } else if out.status.success() {
            recorded += 1;
        }
    }
    assert!(refused > 0, "no limit was tight enough");
    assert!(recorded > 0, "no limit was enough");
}

/// `vcpustat trace record --events cede,preempt --duration 20ms` of the
/// simulated kernel `sim` into `file`, with `args`, under an address-space
/// limit of `kb` kB; its output and standard error. However it ended, the
/// mask must be the kernel's default (0x07) again.
fn record_under_limit(
    sim: &simkernel::Mounted,
    args: &[&str],
    file: &Path,
    kb: u64,
) -> (std::process::Output, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vcpustat"));
    cmd.args(["trace", "record", "--sysroot"])
        .arg(&sim.root)
        .args(["--events", "cede,preempt", "--duration", "20ms"])
        .args(args)
        .arg("-w")
        .arg(file);
    limit_address_space(&mut cmd, kb * 1000);
    let out = cmd.output().expect("vcpustat runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    sim.await_rings_closed();
    let mask = sim.kernel().debugfs.as_ref().unwrap().event_mask;
    assert_eq!(mask, 0x07, "under {kb} kB: {:?} {err}", out.status);
    (out, err)
}

/// A topology that leaves out processors the vCPUs moved between says so:
/// their chipchg and nodechg were `-` without a word, as if no topology
/// had been given. A repeated key is refused.
#[test]
fn a_topology_that_leaves_out_processors_says_which() {
    let dir = tempdir("topology");
    let recording = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/charts/lpar1.dtl"
    );
    let topo = dir.join("topo");
    let report = |text: &str| {
        std::fs::write(&topo, text).unwrap();
        trace_output(&[
            "report",
            "--table",
            "latency",
            "--topology",
            topo.to_str().unwrap(),
            recording,
        ])
    };
    // lpar1.dtl's vCPUs run on processors 0 to 5.
    let (status, out, _) = report("0-1 chip=0 node=0\n");
    assert_eq!(status, 0);
    assert!(
        out.contains(
            "\nnote: --topology does not place processors 2-5, which vCPUs moved between: their \
             chipchg and nodechg are -\n"
        ),
        "{out}"
    );
    let (status, out, _) = report("0-2 chip=0 node=0\n3-5 chip=1 node=1\n");
    assert_eq!(status, 0);
    assert!(!out.contains("note:"), "{out}");
    assert!(!out.contains("       -       -"), "{out}");
    let (status, _, err) = report("0-5 chip=0 chip=1 node=0\n");
    assert_eq!(status, 1);
    assert!(err.contains("chip= is given twice"), "{err}");
}

/// `trace report -` reads a recording redirected to standard input; a
/// pipe, which cannot be read at random places, is refused saying so.
#[test]
fn trace_report_of_dash_reads_a_file_on_standard_input() {
    let recording = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/charts/lpar1.dtl"
    );
    let report = |stdin: Stdio| {
        let out = Command::new(env!("CARGO_BIN_EXE_vcpustat"))
            .args(["trace", "report", "--table", "latency", "-"])
            .stdin(stdin)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (_, by_name, _) = trace_output(&["report", "--table", "latency", recording]);
    let (status, out, err) = report(Stdio::from(std::fs::File::open(recording).unwrap()));
    assert_eq!(status, Some(0), "{err}");
    assert_eq!(out, by_name);
    let (status, out, err) = report(Stdio::piped());
    assert_eq!(status, Some(1));
    assert_eq!(out, "");
    assert!(
        err.ends_with(
            "standard input is a FIFO, expected a regular file (it is read at random places): \
             name the file, or redirect it (< FILE)\n"
        ),
        "{err}"
    );
}

/// A fixture of one vCPU with a `run` directory under `dir`, its mask at
/// 0x07, and the event mask's lock taken as another vcpustat would hold it:
/// the root, the mask's path and the lock.
fn fixture_with_the_mask_locked(
    dir: &Path,
) -> (PathBuf, PathBuf, hwstat::vcpustat::session::EventMaskLock) {
    let root = fixture(dir, 1, &[2, 2]);
    std::fs::create_dir(root.join("run")).unwrap();
    let mask = root.join("sys/kernel/debug/powerpc/dtl/dtl_event_mask");
    let lock =
        hwstat::vcpustat::session::EventMaskLock::take(&root, Duration::from_secs(1), &|| false)
            .unwrap()
            .expect("the fixture has a run directory");
    (root, mask, lock)
}

/// `vcpustat trace record --events cede` of vCPU 1 under `root` for
/// `duration` into `file`, started, its standard error piped.
fn start_recording_cede(root: &Path, duration: &str, file: &Path) -> KillOnDrop {
    KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_vcpustat"))
            .args(["trace", "record", "--sysroot"])
            .arg(root)
            .args([
                "--cpus",
                "1",
                "--events",
                "cede",
                "--duration",
                duration,
                "-w",
            ])
            .arg(file)
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    )
}

/// A recording with `--events` waits while another vcpustat holds the
/// event mask's lock, then sets the mask, opens its rings and puts the mask
/// back: two such runs at once each took the other's mask for the one to
/// put back, and one left it changed.
#[test]
fn a_recording_waits_for_another_to_put_the_event_mask_back() {
    let dir = tempdir("mask-lock");
    let (root, mask, lock) = fixture_with_the_mask_locked(&dir);
    let file = dir.join("waited.dtl");
    let mut run = start_recording_cede(&root, "10ms", &file);
    // Held for well over the run's 10 ms: it has not set the mask, nor
    // ended.
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(std::fs::read_to_string(&mask).unwrap(), "0x07\n");
    assert!(run.try_wait().unwrap().is_none(), "ended under the lock");
    drop(lock);
    let status = wait_with_timeout(&mut run, Duration::from_secs(10), "the recording");
    let err = crate::procstate::stderr_text(&mut run);
    assert!(status.success(), "{err}");
    assert_mask_restored(&root);
    assert_eq!(
        Recording::open(&file).unwrap().header.event_mask,
        Some(0x01)
    );
}

/// A stop signal ends a recording's wait for another vcpustat to put the
/// event mask back: at once, with status 128 + N and no message, as an
/// interval run stopped while it meets the others, the mask untouched and
/// no recording left, nor an empty file there before removed. It used to
/// wait out the 5 s and end with an error.
#[test]
fn a_stop_ends_the_wait_for_the_event_mask() {
    let dir = tempdir("mask-lock-stop");
    let (root, mask, _lock) = fixture_with_the_mask_locked(&dir);
    let file = dir.join("stopped.dtl");
    let stopped_in_the_wait = |file: &Path| {
        let mut run = start_recording_cede(&root, "1s", file);
        std::thread::sleep(Duration::from_millis(300));
        assert!(run.try_wait().unwrap().is_none(), "ended under the lock");
        // SAFETY: signalling our own child by its pid.
        unsafe { libc::kill(run.id() as i32, libc::SIGINT) };
        let stopped = std::time::Instant::now();
        let status = wait_with_timeout(&mut run, Duration::from_secs(10), "the recording");
        let waited = stopped.elapsed();
        let err = crate::procstate::stderr_text(&mut run);
        assert_eq!(status.code(), Some(128 + libc::SIGINT), "{err}");
        assert_eq!(err, "");
        assert!(
            waited < Duration::from_secs(2),
            "ended {waited:?} after the signal"
        );
    };
    stopped_in_the_wait(&file);
    assert_eq!(std::fs::read_to_string(&mask).unwrap(), "0x07\n");
    assert!(!file.exists(), "a recording was left");
    // An empty file that was there before stays (it used to be removed).
    std::fs::write(&file, "").unwrap();
    stopped_in_the_wait(&file);
    assert_eq!(std::fs::read(&file).unwrap(), b"", "the file there before");
}
