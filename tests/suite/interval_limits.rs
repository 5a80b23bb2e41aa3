//! Command-line extremes of the three tools, run through the real binaries:
//! a huge interval (10^19 s) waits for a stop signal instead of overflowing
//! the schedule, an interval of 0 means what it means in sysstat (no
//! interval: one report; with a count, a usage error) in every tool, and a
//! CPU list of 10 KB of huge ranges is refused at once, naming the list,
//! instead of being expanded into gigabytes.

use crate::cxlstat_support;
use crate::procstate::{self, KillOnDrop, wait_with_timeout};

use std::fs;
use std::io::Read;
use std::path::Path;
use std::process::{Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

const HUGE: &str = "9999999999999999999";

/// A minimal --sysroot tree for iostat-rs: two CPUs, one disk.
fn iostat_tree(root: &Path) {
    fs::create_dir_all(root.join("proc")).unwrap();
    fs::create_dir_all(root.join("sys/block/vda")).unwrap();
    fs::write(root.join("proc/uptime"), "1000.00 1900.00\n").unwrap();
    fs::write(
        root.join("proc/stat"),
        "cpu  100 0 100 1800 0 0 0 0 0 0\ncpu0 50 0 50 900 0 0 0 0 0 0\n\
         cpu1 50 0 50 900 0 0 0 0 0 0\n",
    )
    .unwrap();
    fs::write(
        root.join("proc/diskstats"),
        " 253       0 vda 100 0 800 50 10 0 80 5 0 60 55 0 0 0 0 0 0\n",
    )
    .unwrap();
}

fn seed_tree() -> String {
    format!(
        "{}/tests/fixtures/vcpustat/seed",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// Starts `program`, waits for its first output (if it `prints_first`; the
/// first sample of the others is only a baseline) and until it waits out
/// its interval with its stop handlers installed, sends SIGINT and returns
/// its exit status and everything it wrote.
pub fn interrupt_after_first_sample(
    program: &str,
    args: &[&str],
    prints_first: bool,
) -> (ExitStatus, String, String) {
    let mut child = KillOnDrop(
        Command::new(program)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let (first, got_first) = mpsc::channel();
    let mut stdout = child.stdout.take().unwrap();
    let reader = thread::spawn(move || {
        let mut all = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 {
                break;
            }
            all.extend_from_slice(&buf[..n]);
            let _ = first.send(());
        }
        all
    });
    if prints_first {
        got_first
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("{program}: no first report within 30 s"));
    }
    // SIGINT is its stop request, and it waits past the first sample, where
    // the next due time is computed.
    procstate::await_handler(child.id(), libc::SIGINT);
    procstate::await_polling(child.id());
    // SAFETY: signalling the child we started, by its pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = wait_with_timeout(&mut child, Duration::from_secs(20), program);
    let out = reader.join().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (status, String::from_utf8_lossy(&out).into_owned(), err)
}

/// Runs `program` to its end (at most 20 s) and returns what it did.
fn run(program: &str, args: &[&str]) -> Output {
    let mut child = Command::new(program)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let reader = thread::spawn(move || {
        let mut all = Vec::new();
        out.read_to_end(&mut all).unwrap();
        all
    });
    let status = wait_with_timeout(&mut child, Duration::from_secs(20), program);
    let stdout = reader.join().unwrap();
    let mut stderr = Vec::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_end(&mut stderr)
        .unwrap();
    Output {
        status,
        stdout,
        stderr,
    }
}

fn assert_clean_stop(what: &str, (status, out, err): (ExitStatus, String, String)) {
    assert!(!err.contains("panicked"), "{what}: {err}");
    assert_eq!(status.code(), Some(0), "{what}: {status:?}\n{err}");
    assert!(!out.is_empty(), "{what}: no report\n{err}");
}

#[test]
fn iostat_rs_waits_out_a_huge_interval_until_stopped() {
    let dir = cxlstat_support::scratch("huge-iostat");
    iostat_tree(&dir);
    let root = dir.to_str().unwrap();
    for format in [&[][..], &["-o", "JSON"][..]] {
        let mut args = vec!["--sysroot", root, "-x"];
        args.extend_from_slice(format);
        args.extend_from_slice(&[HUGE, "2"]);
        let got = interrupt_after_first_sample(env!("CARGO_BIN_EXE_iostat-rs"), &args, true);
        assert_clean_stop(&format!("iostat-rs {format:?}"), got);
    }
}

/// Seconds since midnight of a CSV timestamp, `2026-12-05T06:38:34.302Z`.
fn csv_seconds(row: &str) -> f64 {
    let stamp = row.split(',').next().unwrap();
    let time = stamp.split('T').nth(1).unwrap().trim_end_matches('Z');
    time.split(':')
        .map(|part| part.parse::<f64>().unwrap())
        .fold(0.0, |total, part| total * 60.0 + part)
}

/// A run stopped (SIGSTOP, as Ctrl-Z does) across several intervals takes
/// one sample when it continues, which covers the stop, then the next a
/// whole interval later. It used to take the samples it had missed back to
/// back: reports a millisecond apart, whose rates, on a busy disk, were
/// those of a few requests over a millisecond. The stop ends 0.4 s into an
/// interval, where a run that kept to its first instants would take its
/// next sample only 0.1 s after the late one.
#[test]
fn a_run_stopped_for_several_intervals_skips_the_samples_it_missed() {
    let dir = cxlstat_support::scratch("stopped-iostat");
    iostat_tree(&dir);
    let mut child = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_iostat-rs"))
            .args(["--sysroot", dir.to_str().unwrap(), "-d", "-o", "csv"])
            .args(["0.5", "6"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut stdout = crate::pipes::Collected::new(child.stdout.take().unwrap());
    stdout.wait_for("the first report", Duration::from_secs(20), |seen| {
        seen.iter().filter(|&&b| b == b'\n').count() >= 2
    });
    // Stopped for more than four intervals, from 0.1 s after the first
    // sample to 0.4 s into the fifth interval.
    thread::sleep(Duration::from_millis(100));
    // SAFETY: signalling the child we started, by its pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGSTOP) };
    thread::sleep(Duration::from_millis(2_300));
    // SAFETY: as above.
    unsafe { libc::kill(child.id() as i32, libc::SIGCONT) };
    let status = wait_with_timeout(&mut child, Duration::from_secs(20), "iostat-rs");
    assert_eq!(status.code(), Some(0));
    let out = String::from_utf8(stdout.until_end("iostat-rs", Duration::from_secs(5))).unwrap();
    let times: Vec<f64> = out.lines().skip(1).map(csv_seconds).collect();
    assert_eq!(times.len(), 6, "{out}");
    // Each sample at least a quarter of an interval after the one before
    // (on time they are half a second apart), one more than two seconds
    // (the stop), and the one after that a whole interval.
    let gaps: Vec<f64> = times.windows(2).map(|t| t[1] - t[0]).collect();
    assert!(
        gaps.iter().all(|&gap| !(0.0..0.125).contains(&gap)),
        "seconds between samples: {gaps:?}\n{out}"
    );
    let stop = gaps.iter().position(|&gap| gap > 2.0);
    let after = stop.and_then(|at| gaps.get(at + 1));
    assert!(after.is_some_and(|&gap| gap >= 0.375), "{gaps:?}\n{out}");
}

#[test]
fn vcpustat_waits_out_a_huge_interval_until_stopped() {
    // `-r` prints its first report after one interval, as powerpc-utils
    // does: the first due time is computed at once, and nothing is printed.
    let (status, out, err) = interrupt_after_first_sample(
        env!("CARGO_BIN_EXE_vcpustat"),
        &["--sysroot", &seed_tree(), "-r", HUGE, "2"],
        false,
    );
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(status.code(), Some(0), "{status:?}\n{err}");
    assert!(out.is_empty(), "{out}");
}

#[test]
fn cxlstat_waits_out_a_huge_interval_until_stopped() {
    if !cxlstat_support::perf_usable("cxlstat_waits_out_a_huge_interval_until_stopped") {
        return;
    }
    let dir = cxlstat_support::scratch("huge-cxlstat");
    cxlstat_support::software_tree(&dir, &[("cxl_pmu_mem0.0", 0)]);
    let (status, _, err) = interrupt_after_first_sample(
        env!("CARGO_BIN_EXE_cxlstat"),
        &[
            "--sysroot",
            dir.to_str().unwrap(),
            "-e",
            "cpu_clock",
            HUGE,
            "2",
        ],
        false,
    );
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(status.code(), Some(0), "{status:?}\n{err}");
}

/// A pseries --sysroot with one empty DTL ring, enough for `trace record`.
fn dtl_tree(root: &Path) {
    fs::create_dir_all(root.join("proc/powerpc")).unwrap();
    fs::create_dir_all(root.join("sys/kernel/debug/powerpc/dtl")).unwrap();
    fs::write(root.join("proc/powerpc/lparcfg"), "partition_id=3\n").unwrap();
    fs::write(
        root.join("proc/cpuinfo"),
        "processor\t: 0\ntimebase\t: 512000000\n",
    )
    .unwrap();
    fs::write(root.join("sys/kernel/debug/powerpc/dtl/cpu-0"), "").unwrap();
}

#[test]
fn trace_record_takes_huge_durations_and_polls() {
    let dir = cxlstat_support::scratch("huge-trace");
    dtl_tree(&dir);
    let root = dir.to_str().unwrap();
    let file = dir.join("t.dtl");
    let file = file.to_str().unwrap();
    let (status, _, err) = interrupt_after_first_sample(
        env!("CARGO_BIN_EXE_vcpustat"),
        &[
            "trace",
            "record",
            "--sysroot",
            root,
            "--duration",
            HUGE,
            "-w",
            file,
        ],
        false,
    );
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(err.contains("recorded 0 DTL entries"), "{err}");
    fs::remove_file(file).unwrap();
    let start = Instant::now();
    let out = run(
        env!("CARGO_BIN_EXE_vcpustat"),
        &[
            "trace",
            "record",
            "--sysroot",
            root,
            "--poll",
            HUGE,
            "--duration",
            "0.5",
            "-w",
            file,
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(start.elapsed() < Duration::from_secs(10));
    assert!(Path::new(file).exists());
}

/// Interval 0 means no interval, as `iostat 0` in sysstat: one report, and a
/// usage error with a count (exit 1 for iostat-rs, sysstat's usage status;
/// 2 for vcpustat and cxlstat).
#[test]
fn an_interval_of_zero_is_one_report_in_every_tool() {
    let dir = cxlstat_support::scratch("zero");
    iostat_tree(&dir);
    let root = dir.to_str().unwrap();
    let one = run(
        env!("CARGO_BIN_EXE_iostat-rs"),
        &["--sysroot", root, "-d", "0"],
    );
    assert!(one.status.success());
    let once = run(env!("CARGO_BIN_EXE_iostat-rs"), &["--sysroot", root, "-d"]);
    assert_eq!(one.stdout, once.stdout);
    let bad = run(
        env!("CARGO_BIN_EXE_iostat-rs"),
        &["--sysroot", root, "0", "3"],
    );
    assert_eq!(bad.status.code(), Some(1), "sysstat's usage exit status");

    let seed = seed_tree();
    let zero = run(env!("CARGO_BIN_EXE_vcpustat"), &["--sysroot", &seed, "0"]);
    let none = run(env!("CARGO_BIN_EXE_vcpustat"), &["--sysroot", &seed]);
    assert!(
        zero.status.success(),
        "{}",
        String::from_utf8_lossy(&zero.stderr)
    );
    assert_eq!(zero.stdout, none.stdout, "vcpustat 0 is vcpustat");
    assert!(zero.stdout.len() < 10_000, "{} bytes", zero.stdout.len());
    let bad = run(
        env!("CARGO_BIN_EXE_vcpustat"),
        &["--sysroot", &seed, "0", "3"],
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("interval of 0"));

    let cxl = cxlstat_support::scratch("zero-cxl");
    cxlstat_support::software_tree(&cxl, &[("cxl_pmu_mem0.0", 0)]);
    let cxlroot = cxl.to_str().unwrap();
    for args in [&["0", "3"][..], &["-I", "0", "--interval-count", "3"][..]] {
        let mut all = vec!["--sysroot", cxlroot, "-e", "cpu_clock", "--dry-run"];
        all.extend_from_slice(args);
        let bad = run(env!("CARGO_BIN_EXE_cxlstat"), &all);
        assert_eq!(bad.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&bad.stderr).contains("interval of 0"),
            "{args:?}"
        );
    }
    for args in [&["0"][..], &["-I", "0"][..]] {
        let mut all = vec!["--sysroot", cxlroot, "-e", "cpu_clock", "--dry-run"];
        all.extend_from_slice(args);
        let ok = run(env!("CARGO_BIN_EXE_cxlstat"), &all);
        assert!(
            ok.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&ok.stderr)
        );
    }
}

/// An interval shorter than a nanosecond (`0.0000000001`) is not 0: the
/// tools took it for 0, so `vcpustat 0.0000000001 2` said "an interval of 0
/// takes one report" of an interval the user never gave as 0, and without a
/// count made one report instead of reporting at intervals. It is refused
/// as the out-of-range interval it is, naming it (iostat-rs, as sysstat,
/// takes a word that is no interval for a device name).
#[test]
fn an_interval_below_a_nanosecond_is_refused_not_taken_for_zero() {
    let seed = seed_tree();
    let cxl = cxlstat_support::scratch("sub-ns-cxl");
    cxlstat_support::software_tree(&cxl, &[("cxl_pmu_mem0.0", 0)]);
    let cxlroot = cxl.to_str().unwrap();
    let tiny = "0.0000000001";
    for count in [&[][..], &["2"][..]] {
        let mut vcpu = vec!["--sysroot", seed.as_str(), tiny];
        vcpu.extend_from_slice(count);
        let mut cxl = vec!["--sysroot", cxlroot, "-e", "cpu_clock", "--dry-run", tiny];
        cxl.extend_from_slice(count);
        for (program, args) in [
            (env!("CARGO_BIN_EXE_vcpustat"), vcpu),
            (env!("CARGO_BIN_EXE_cxlstat"), cxl),
        ] {
            let out = run(program, &args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{program} {args:?}: {err}");
            assert!(out.stdout.is_empty(), "{program} {args:?}");
            assert_eq!(err.lines().count(), 1, "{program} {args:?}: {err}");
            assert!(
                err.contains("interval \"0.0000000001\" is shorter than 1 ns"),
                "{program} {args:?}: {err}"
            );
        }
    }
}

/// 10 KB of `0-1048576` ranges: refused at once, naming the list.
#[test]
fn huge_cpu_lists_are_refused_without_expanding_them() {
    let list = vec!["0-1048576"; 1000].join(",");
    let start = Instant::now();
    let out = run(
        env!("CARGO_BIN_EXE_vcpustat"),
        &["--sysroot", &seed_tree(), "--cpus", &list],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("above the largest CPU number"), "{err}");

    let dir = cxlstat_support::scratch("cpulist");
    let topo = dir.join("huge.topo");
    fs::write(&topo, format!("{list} chip=0 node=0\n")).unwrap();
    let out = run(
        env!("CARGO_BIN_EXE_vcpustat"),
        &[
            "trace",
            "report",
            "--topology",
            topo.to_str().unwrap(),
            "none.dtl",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        !err.contains("panicked") && !err.contains("memory allocation"),
        "{err}"
    );

    cxlstat_support::software_tree(&dir, &[("cxl_pmu_mem0.0", 0)]);
    fs::write(
        dir.join("sys/devices/virtual/cxl_pmu_mem0.0/cpumask"),
        &list,
    )
    .unwrap();
    let out = run(
        env!("CARGO_BIN_EXE_cxlstat"),
        &[
            "--sysroot",
            dir.to_str().unwrap(),
            "-e",
            "cpu_clock",
            "--dry-run",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("cpumask"), "{err}");
    assert!(start.elapsed() < Duration::from_secs(20));
}
