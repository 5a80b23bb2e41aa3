//! `vcpustat trace` end to end through its command line: the live recorder
//! over a fixture debugfs tree (`--sysroot`), the report, and bad input.

use std::path::{Path, PathBuf};

use hwstat::vcpustat::trace::recording::Recording;

fn tempdir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hwstat-trace-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
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
    assert_eq!(
        std::fs::read_to_string(r1.join("sys/kernel/debug/powerpc/dtl/dtl_event_mask")).unwrap(),
        "0x07\n"
    );
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
    assert_eq!(rec.header.event_mask, None);
    for format in ["text", "json", "csv"] {
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
    std::fs::remove_dir_all(dir).unwrap();
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
    let status = trace(&[
        "record",
        "--sysroot",
        root.to_str().unwrap(),
        "--events",
        "fault",
        "-w",
        out.to_str().unwrap(),
    ]);
    assert_eq!(status, 1);
    assert!(!out.exists());
    assert_eq!(
        std::fs::read_to_string(root.join("sys/kernel/debug/powerpc/dtl/dtl_event_mask")).unwrap(),
        "0x07\n"
    );
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
    assert_eq!(
        std::fs::read_to_string(dir.join("root4/sys/kernel/debug/powerpc/dtl/dtl_event_mask"))
            .unwrap(),
        "0x07\n"
    );
    assert_eq!(
        trace(&["record", "--replay", "r.rec", "-w", out.to_str().unwrap()]),
        1
    );
    assert_eq!(
        trace(&["record", "--poll", "0", "-w", out.to_str().unwrap()]),
        1
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_stop_signal_ends_an_open_ended_recording_cleanly() {
    let dir = tempdir("signal");
    let root = fixture(&dir, 5, &[3, 3]);
    let out = dir.join("sig.dtl");
    let started = std::time::Instant::now();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_vcpustat"))
        .args(["trace", "record", "--sysroot"])
        .arg(&root)
        .args(["--events", "preempt", "-w"])
        .arg(&out)
        .spawn()
        .expect("vcpustat runs");
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let status = child.wait().unwrap().code();
    assert_eq!(status, Some(0));
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    let rec = Recording::open(&out).unwrap();
    assert_eq!(rec.header.cpus.iter().map(|c| c.entries).sum::<u64>(), 6);
    assert_eq!(
        std::fs::read_to_string(root.join("sys/kernel/debug/powerpc/dtl/dtl_event_mask")).unwrap(),
        "0x07\n"
    );
    std::fs::remove_dir_all(dir).unwrap();
}
