//! End-to-end checks of iostat-rs over a fake `--sysroot`: a recording
//! replayed with the options it was recorded with reproduces the live output
//! byte for byte; sysstat's error messages and statuses; quiet broken pipes.

use crate::pipes::{self, Collected};
use crate::procstate::KillOnDrop;
use crate::procstate::wait_with_timeout;
use crate::scratch::Scratch;

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_iostat-rs");

fn diskstats(step: u64) -> String {
    let s = step;
    format!(
        "   8       0 sda {} 10 {} 500 {} 20 {} 700 0 {} {} 0 0 0 0 {} 3\n\
            8       1 sda1 {} 0 {} 100 {} 0 {} 90 0 {} {} 0 0 0 0 0 0\n\
          259       0 nvme0n1 {} 4 {} 50 {} 2 {} 60 1 {} {} 7 1 800 4 0 0\n",
        1000 + 17 * s,
        80000 + 900 * s,
        300 + 5 * s,
        9000 + 333 * s,
        1200 + 9 * s,
        2000 + 31 * s,
        2 * s,
        500 + 3 * s,
        4000 + 64 * s,
        10 + s,
        88 + s,
        300 + 2 * s,
        400 + 4 * s,
        42 + 11 * s,
        11000 + 888 * s,
        77 + 3 * s,
        1024 + 4096 * s,
        90 + 5 * s,
        130 + 7 * s,
    )
}

/// A fake kernel tree at its first sample (step 0), removed when the test
/// ends, also when it fails.
fn fixture(name: &str) -> Scratch {
    let dir = crate::scratch::scratch(&format!("rr-{name}"));
    for d in [
        "proc",
        "sys/block/sda/sda1",
        "sys/block/nvme0n1",
        "sys/devices/system/cpu/cpu0",
        "sys/devices/system/cpu/cpu1",
        "dev/disk/by-id",
    ] {
        fs::create_dir_all(dir.join(d)).unwrap();
    }
    write_sample(&dir, 0);
    dir
}

/// The fake tree `name` ([`fixture`]), its root as `--sysroot` takes it,
/// and the path of a recording in it: the prologue of most tests here.
/// The tree lives as long as the first of the three.
fn recorded_fixture(name: &str) -> (Scratch, String, String) {
    let dir = fixture(name);
    let root = dir.to_str().unwrap().to_string();
    let rec = dir.join("r.rec").to_str().unwrap().to_string();
    (dir, root, rec)
}

/// Rewrites a file in place without truncating it first, so a concurrent
/// reader never sees it empty (counters only grow, so it never shrinks).
fn put(path: PathBuf, text: impl AsRef<[u8]>) {
    use std::io::Write;
    let text = text.as_ref();
    let mut f = fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(false)
        .open(path)
        .unwrap();
    f.write_all(text).unwrap();
    f.set_len(text.len() as u64).unwrap();
}

fn write_sample(dir: &Path, step: u64) {
    let ds = diskstats(step);
    put(dir.join("proc/diskstats"), &ds);
    put(
        dir.join("proc/uptime"),
        format!("{}.{:02} 100.00\n", 5000 + step / 100, step % 100),
    );
    put(
        dir.join("proc/stat"),
        format!(
            "cpu  {} 20 {} {} 40 5 6 0 0 0\ncpu0 1 1 1 1\ncpu1 1 1 1 1\n",
            1000 + 7 * step,
            500 + 3 * step,
            90000 + 50 * step
        ),
    );
    for (line, path) in ds.lines().zip(["sda", "sda/sda1", "nvme0n1"]) {
        let stats: Vec<&str> = line.split_whitespace().skip(3).collect();
        put(
            dir.join("sys/block").join(path).join("stat"),
            stats.join(" ") + "\n",
        );
    }
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env_clear()
        .env("TZ", "UTC")
        .env("LC_ALL", "C")
        .output()
        .unwrap()
}

#[test]
fn replay_reproduces_the_live_output_byte_for_byte() {
    let dir = fixture("live");
    let root = dir.to_str().unwrap().to_string();
    let option_sets: [&[&str]; 7] = [
        &["-x"],
        &["-p", "ALL"],
        &["-o", "JSON", "-x", "-t"],
        &["-xs", "-p", "sda"],
        &["-d", "ALL", "-z", "-m"],
        &["-o", "ndjson"],
        &["-y", "-g", "all", "sda", "nvme0n1", "-H"],
    ];
    // Rewrite the counters in place while the live runs sample them.
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let stop = Arc::clone(&stop);
        let dir = dir.to_path_buf();
        std::thread::spawn(move || {
            let mut step = 1;
            while !stop.load(Ordering::Relaxed) {
                write_sample(&dir, step);
                step += 1;
                std::thread::sleep(Duration::from_millis(7));
            }
        })
    };
    for (n, opts) in option_sets.iter().enumerate() {
        let rec = dir.join(format!("run{n}.rec"));
        let rec_s = rec.to_str().unwrap().to_string();
        let mut live_args = vec!["--sysroot", &root, "--record", &rec_s];
        live_args.extend_from_slice(opts);
        live_args.extend_from_slice(&["0.05", "4"]);
        let live = run(&live_args);
        assert_eq!(
            live.status.code(),
            Some(0),
            "{opts:?}: {}",
            String::from_utf8_lossy(&live.stderr)
        );
        let mut replay_args = vec!["--replay", &rec_s];
        replay_args.extend_from_slice(opts);
        replay_args.extend_from_slice(&["0.05", "4"]);
        let replay = run(&replay_args);
        assert_eq!(replay.status.code(), Some(0));
        assert!(!live.stdout.is_empty());
        assert_eq!(
            String::from_utf8_lossy(&live.stdout),
            String::from_utf8_lossy(&replay.stdout),
            "options {opts:?}"
        );
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
}

#[test]
fn an_exhausted_replay_ends_like_sigint_with_json_closed() {
    let (_dir, root, rec) = recorded_fixture("exhaust");
    let (root, rec) = (root.as_str(), rec.as_str());
    let live = run(&[
        "--sysroot",
        root,
        "--record",
        rec,
        "-o",
        "JSON",
        "0.01",
        "2",
    ]);
    assert_eq!(live.status.code(), Some(0));
    let replay = run(&["--replay", rec, "-o", "JSON", "1"]);
    assert_eq!(replay.status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&replay.stdout).unwrap();
    let stats = &doc["sysstat"]["hosts"][0]["statistics"];
    assert_eq!(stats.as_array().unwrap().len(), 2);
    assert_eq!(stats[0]["disk"][0]["disk_device"], "nvme0n1");
}

/// A replay shows other views of what was recorded (formats, units, every
/// partition of the devices read), but options that read what the recorded
/// run never read (a named device: sysfs, where the run read
/// /proc/diskstats; -N's /proc/devices; -j's links) fail with one line
/// naming the file and the input, instead of reports without those devices,
/// and write nothing first.
#[test]
fn a_replay_refuses_options_that_read_what_was_not_recorded() {
    let (_dir, root, rec) = recorded_fixture("other-view");
    let (root, rec) = (root.as_str(), rec.as_str());
    let live = run(&["--sysroot", root, "--record", rec, "-x", "0.01", "2"]);
    assert_eq!(live.status.code(), Some(0));
    for view in [
        &["-x", "-p", "ALL"][..],
        &["-d", "-m", "-o", "JSON"],
        &["-xs", "-z"],
    ] {
        let replay = run(&[&["--replay", rec][..], view].concat());
        assert_eq!(replay.status.code(), Some(0), "{view:?}");
        assert!(replay.stderr.is_empty(), "{view:?}");
    }
    for (view, input) in [
        (&["-x", "sda"][..], "devnum /dev/sda"),
        (&["-d", "-g", "G", "sda", "nvme0n1"], "devnum /dev/sda"),
        (&["-x", "-N"], "read /proc/devices"),
        (&["-x", "-j", "ID"], "isdir /dev/disk/by-id"),
    ] {
        let replay = run(&[&["--replay", rec][..], view, &["-o", "JSON"]].concat());
        let err = String::from_utf8_lossy(&replay.stderr);
        assert_eq!(replay.status.code(), Some(1), "{view:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{view:?}: {err}");
        assert!(
            err.starts_with(&format!("iostat-rs: {rec} does not hold `{input}`"))
                && err.contains("the recorded run (`iostat-rs -x 0.01 2`) did not read it"),
            "{view:?}: {err}"
        );
        // Refused before the first report: no JSON document was begun.
        assert!(replay.stdout.is_empty(), "{view:?}");
    }
    // Nor --latency, whose histograms the recorded run did not take.
    let replay = run(&["--replay", rec, "--latency", "-x", "-o", "JSON"]);
    let err = String::from_utf8_lossy(&replay.stderr);
    assert_eq!(replay.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("the recording has no latency histograms"),
        "{err}"
    );
    let shown = String::from_utf8_lossy(&replay.stdout);
    assert!(shown.is_empty(), "{shown}");
    // Recorded with a named device, a replay of every device needs the
    // /proc/diskstats that run never read.
    let named = run(&["--sysroot", root, "--record", rec, "-x", "sda", "0.01", "2"]);
    assert_eq!(named.status.code(), Some(0));
    let replay = run(&["--replay", rec, "-x"]);
    let err = String::from_utf8_lossy(&replay.stderr);
    assert_eq!(replay.status.code(), Some(1), "{err}");
    assert!(err.contains("does not hold `list /sys/block`"), "{err}");
    assert!(run(&["--replay", rec, "-xk", "sda"]).status.success());
    // The exposition of the same device reads /proc/diskstats, as
    // node_exporter does: refused in the same words.
    let replay = run(&["--replay", rec, "-x", "-o", "prometheus", "sda"]);
    let err = String::from_utf8_lossy(&replay.stderr);
    assert_eq!(replay.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with(&format!(
            "iostat-rs: {rec} does not hold `read /proc/diskstats`, which these options read"
        )),
        "{err}"
    );
    // The CPU report alone reads no device (sysstat reads them all for
    // nothing it shows): it replays from this recording, which never
    // listed /sys/block, and its own recording holds no device.
    let cpu = run(&["--replay", rec, "-c", "0.01", "2"]);
    let err = String::from_utf8_lossy(&cpu.stderr);
    assert_eq!(cpu.status.code(), Some(0), "{err}");
    let shown = String::from_utf8_lossy(&cpu.stdout);
    assert_eq!(shown.matches("avg-cpu:").count(), 2, "{shown}");
    let cpu_only = run(&["--sysroot", root, "--record", rec, "-c", "0.01", "2"]);
    assert_eq!(cpu_only.status.code(), Some(0));
    let recorded = fs::read_to_string(rec).unwrap();
    for device_input in ["/sys/block", "/proc/diskstats", "/dev/"] {
        assert!(
            !recorded.contains(device_input),
            "{device_input} in\n{recorded}"
        );
    }
}

/// The device rows of an `-x` text report, in order.
fn device_rows(report: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(report)
        .lines()
        .skip_while(|l| !l.starts_with("Device"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_whitespace().next().unwrap_or_default().to_string())
        .collect()
}

/// `-p ALL` reads `/proc/diskstats` alone, as sysstat does; recording, it
/// lists `/sys/block` too, so that its recording replays as the views of
/// every whole device: `-x` shows the disks of that listing, not their
/// partitions, where it failed for want of the listing.
#[test]
fn a_recording_of_every_partition_replays_as_every_device() {
    let (_dir, root, rec) = recorded_fixture("every-partition");
    let (root, rec) = (root.as_str(), rec.as_str());
    let live = run(&[
        "--sysroot",
        root,
        "--record",
        rec,
        "-x",
        "-p",
        "ALL",
        "0.01",
        "2",
    ]);
    assert_eq!(live.status.code(), Some(0));
    assert_eq!(device_rows(&live.stdout), ["sda", "sda1", "nvme0n1"]);
    let every_device = run(&["--replay", rec, "-x", "0.01", "2"]);
    let err = String::from_utf8_lossy(&every_device.stderr);
    assert_eq!(every_device.status.code(), Some(0), "{err}");
    assert!(err.is_empty(), "{err}");
    assert_eq!(device_rows(&every_device.stdout), ["nvme0n1", "sda"]);
    for view in [&["-d", "0.01", "2"][..], &[]] {
        let replay = run(&[&["--replay", rec][..], view].concat());
        assert_eq!(replay.status.code(), Some(0), "{view:?}");
        assert!(replay.stderr.is_empty(), "{view:?}");
    }
}

/// A replay refused for an input its recording lacks writes nothing to
/// standard output (no banner, no JSON document without a report), in
/// every format: a file it went to is not a report cut short. A run
/// that cannot read its kernel files still writes the banner before its
/// error, as sysstat does.
#[test]
fn a_refused_replay_writes_nothing_before_its_error() {
    let old = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/recordings/0ebb936/iostat-rs.rec"
    );
    for format in [&[][..], &["-o", "JSON"], &["-o", "csv"], &["-o", "ndjson"]] {
        let replay = run(&[&["--replay", old, "-x"][..], format].concat());
        let err = String::from_utf8_lossy(&replay.stderr);
        assert_eq!(replay.status.code(), Some(1), "{format:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{format:?}: {err}");
        assert!(
            err.contains("does not hold `list /sys/block`"),
            "{format:?}: {err}"
        );
        assert_eq!(String::from_utf8_lossy(&replay.stdout), "", "{format:?}");
    }
    let (dir, root, rec) = recorded_fixture("banner-first");
    fs::remove_file(dir.join("proc/stat")).unwrap();
    let out = run(&["--sysroot", &root, "--record", &rec, "-x"]);
    assert_eq!(out.status.code(), Some(2));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.starts_with("Linux ") && shown.ends_with("(2 CPU)\n\n"),
        "{shown}"
    );
    // Its replay is not refused: it fails as the run did, banner first.
    let replay = run(&["--replay", &rec, "-x"]);
    assert_eq!(replay.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&replay.stdout), shown);
}

/// The same with `-f DIR` and `+f DIR`: the views of every whole device
/// read `DIR/block`'s listing and each listed device's `stat` there (not
/// `/proc/diskstats`), which a `-p ALL` recording holds too.
#[test]
fn a_recording_of_every_partition_in_an_alternate_directory_replays_as_every_device() {
    let dir = fixture("every-partition-alt");
    let root = dir.to_str().unwrap();
    fs::create_dir_all(dir.join("alt")).unwrap();
    fs::copy(dir.join("proc/diskstats"), dir.join("alt/diskstats")).unwrap();
    for disk in ["sda", "nvme0n1"] {
        fs::create_dir_all(dir.join("alt/block").join(disk)).unwrap();
        let stat = dir.join("sys/block").join(disk).join("stat");
        fs::copy(stat, dir.join("alt/block").join(disk).join("stat")).unwrap();
    }
    for alt in ["-f", "+f"] {
        let rec = dir.join(format!("r{alt}.rec"));
        let rec = rec.to_str().unwrap();
        let live = run(&[
            "--sysroot",
            root,
            "--record",
            rec,
            alt,
            "/alt",
            "-x",
            "-p",
            "ALL",
            "0.01",
            "2",
        ]);
        let err = String::from_utf8_lossy(&live.stderr);
        assert_eq!(live.status.code(), Some(0), "{alt}: {err}");
        for view in [&["-x", "0.01", "2"][..], &["-d", "0.01", "2"], &[]] {
            let replay = run(&[&["--replay", rec, alt, "/alt"][..], view].concat());
            let err = String::from_utf8_lossy(&replay.stderr);
            assert_eq!(replay.status.code(), Some(0), "{alt} {view:?}: {err}");
            assert!(err.is_empty(), "{alt} {view:?}: {err}");
        }
    }
}

#[test]
fn missing_proc_files_give_the_c_messages_and_status_2() {
    let dir = fixture("missing");
    let root = dir.to_str().unwrap();
    fs::remove_file(dir.join("proc/stat")).unwrap();
    let out = run(&["--sysroot", root]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Cannot open /proc/stat: No such file or directory\n"
    );
    write_sample(&dir, 0);
    fs::write(dir.join("proc/uptime"), "garbage\n").unwrap();
    let out = run(&["--sysroot", root, "-d"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Cannot read /proc/uptime\n"
    );
}

#[test]
fn garbled_and_vanishing_devices_do_not_panic() {
    let dir = fixture("garbled");
    let root = dir.to_str().unwrap();
    fs::write(
        dir.join("proc/diskstats"),
        "   8 0 sda 1 2 x\nnonsense\n\n 259 0 nvme0n1 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21\n",
    )
    .unwrap();
    fs::write(dir.join("sys/block/sda/stat"), "1 2 3\n").unwrap();
    let out = run(&["--sysroot", root, "-x", "-p", "ALL"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("nvme0n1"), "{text}");
    assert!(!text.contains("sda "), "{text}");
    fs::remove_dir_all(dir.join("sys/block/nvme0n1")).unwrap();
    let out = run(&["--sysroot", root, "-x", "ALL"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stderr.is_empty());
}

#[test]
fn a_closed_pipe_ends_quietly() {
    let dir = fixture("pipe");
    let root = dir.to_str().unwrap();
    let mut child = KillOnDrop(
        Command::new(BIN)
            .args(["--sysroot", root, "-x", "0.01"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // Some output, then the reader goes away, like `| head -c 16`.
    let stdout = fs::File::from(std::os::fd::OwnedFd::from(child.stdout.take().unwrap()));
    pipes::wait_for_output(&stdout, Duration::from_secs(20));
    drop(stdout);
    let status = wait_with_timeout(&mut child, Duration::from_secs(20), "iostat-rs");
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(0));
    assert_eq!(err, "");
}

/// A program started with its standard descriptors closed must not let a
/// file it opens take their place: the report would be written into the
/// recording. Rust's own start guards against this; iostat-rs starts without
/// it (src/common/entry.rs) and must do the same.
#[test]
fn closed_standard_descriptors_do_not_receive_the_recording() {
    use std::os::unix::process::CommandExt;
    let dir = fixture("closed-fds");
    let root = dir.to_str().unwrap();
    let rec = dir.join("run.rec");
    let mut live = Command::new(BIN);
    live.args([
        "--sysroot",
        root,
        "--record",
        rec.to_str().unwrap(),
        "-x",
        "0.01",
        "2",
    ]);
    // SAFETY: close is async-signal-safe, as a pre_exec closure requires.
    unsafe {
        live.pre_exec(|| {
            for fd in 0..=2 {
                libc::close(fd);
            }
            Ok(())
        });
    }
    assert_eq!(live.status().unwrap().code(), Some(0));
    let recording = fs::read_to_string(&rec).unwrap();
    assert!(
        recording.starts_with("{\"format\":\"hwstat-recording\"") && !recording.contains("avg-cpu"),
        "the report went into the recording:\n{recording}"
    );
    let replay = run(&["--replay", rec.to_str().unwrap(), "-x", "0.01", "2"]);
    assert_eq!(
        replay.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&replay.stderr)
    );
    assert!(String::from_utf8_lossy(&replay.stdout).contains("avg-cpu"));
}

#[test]
fn usage_errors_print_usage_and_exit_1() {
    for args in [
        &["2", "0"][..],
        &["-H"],
        &["--dec=7"],
        &["-k", "-G"],
        &["1", "2", "3"],
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).starts_with("Usage: "));
    }
    // A count that reads as an interval: a line says why, then the usage.
    let out = run(&["-c", "1", "0.5"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    let (reason, usage) = err.split_once('\n').unwrap();
    assert_eq!(
        reason,
        "iostat-rs: the count 0.5 must be written in digits, a number of reports (a word that \
         reads as an interval is one, not a device name)"
    );
    assert!(usage.starts_with("Usage: "), "{err}");
    let dir = fixture("invalid-j");
    let out = run(&["--sysroot", dir.to_str().unwrap(), "-j", "FOO"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Invalid type of persistent device name\n"
    );
    let out = run(&["--sysroot", "/nonexistent-root"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "iostat-rs: --sysroot /nonexistent-root: no such directory\n"
    );
}

#[test]
fn sigint_and_sigterm_end_the_run_with_the_json_document_closed() {
    let dir = fixture("signals");
    let root = dir.to_str().unwrap();
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let mut child = KillOnDrop(
            Command::new(BIN)
                .args(["--sysroot", root, "-o", "JSON", "-x", "0.05"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        );
        let mut stdout = Collected::new(child.stdout.take().unwrap());
        // Wait for the first report, then interrupt.
        stdout.wait_for("the first report", Duration::from_secs(20), |seen| {
            String::from_utf8_lossy(seen).contains("\"disk\"")
        });
        // SAFETY: signalling the child we started.
        assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
        let status = wait_with_timeout(&mut child, Duration::from_secs(20), "iostat-rs");
        let seen = stdout.until_end("iostat-rs", Duration::from_secs(20));
        assert_eq!(status.code(), Some(0), "signal {signal}");
        let doc: serde_json::Value = serde_json::from_slice(&seen)
            .unwrap_or_else(|e| panic!("signal {signal}: {e}: {}", String::from_utf8_lossy(&seen)));
        assert!(
            !doc["sysstat"]["hosts"][0]["statistics"]
                .as_array()
                .unwrap()
                .is_empty()
        );
    }
}

/// Intervals that are not whole seconds are timed by the monotonic clock:
/// `/proc/uptime` counts hundredths, so a 13 ms interval read as 10 or
/// 20 ms and its rates came out a third off. A live run on the running
/// kernel records each clock reading (a frame's `elapsed_ns`), and its
/// replay takes them; whole seconds keep uptime, as sysstat.
#[test]
fn fractional_intervals_are_timed_by_the_clock_and_whole_seconds_by_uptime() {
    let dir = crate::scratch::scratch("rr-clock");
    // Live: the clock is recorded for 0.05 s, not for whole seconds.
    // A --sysroot tree's /proc/uptime is its counters' clock, unless the
    // tree's /proc is procfs (`--sysroot /host` in a container).
    let tree = fixture("clock-tree");
    let fractional = dir.join("fractional.rec");
    let procfs = dir.join("procfs.rec");
    let files = dir.join("files.rec");
    let whole = dir.join("whole.rec");
    for (rec, root, interval, clocked) in [
        (&fractional, None, "0.05", true),
        (&procfs, Some(Path::new("/")), "0.05", true),
        (&files, Some(tree.as_ref()), "0.05", false),
        (&whole, None, "1", false),
    ] {
        let root = root.map(|r: &Path| r.to_str().unwrap());
        let sysroot = root.map_or(vec![], |r| vec!["--sysroot", r]);
        let args = [
            &sysroot[..],
            &["--record", rec.to_str().unwrap(), "-d", interval, "2"],
        ];
        let out = run(&args.concat());
        assert!(out.status.success(), "{out:?}");
        let text = fs::read_to_string(rec).unwrap();
        let frames: Vec<serde_json::Value> = text
            .lines()
            .skip(1)
            .map(|l| serde_json::from_str(l).unwrap())
            .filter(|f: &serde_json::Value| f.get("index").is_some())
            .collect();
        assert_eq!(frames.len(), 2, "{text}");
        for frame in &frames {
            let elapsed = frame.get("elapsed_ns").and_then(|e| e.as_u64());
            assert_eq!(
                elapsed.is_some_and(|ns| ns > 0),
                clocked,
                "{interval}: {frame}"
            );
        }
    }

    // Replayed: 208 reads in each 13 ms, which uptime reads as 1
    // hundredth (100.00, 100.01, 100.02).
    let header = serde_json::json!({
        "format": "hwstat-recording", "version": 1, "tool": "iostat-rs",
        "args": ["-d", "0.013", "3"],
        "uname": {"sysname": "Linux", "nodename": "clock", "release": "6.18.0",
                  "version": "#1", "machine": "x86_64"},
        "start_unix_ns": 1_767_258_000_000_000_000u64,
    });
    let mut text = format!("{header}\n");
    for i in 0..3u64 {
        let reads = 208 * i;
        let mut entries = serde_json::json!({
            "read /proc/diskstats": {"text": format!(
                "8 0 sda {reads} 0 {} 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n", 8 * reads)},
            "read /proc/stat": {"text": format!("cpu  {i} 0 0 {i} 0 0 0 0 0 0\ncpu0 {i} 0 0 {i} 0 0 0 0 0 0\n")},
            "read /proc/uptime": {"text": format!("100.0{i} 0.00\n")},
            "list /sys/block": {"list": ["sda"]},
        });
        if i == 0 {
            entries["list /sys/devices/system/cpu"] = serde_json::json!({"list": ["cpu0"]});
        }
        let frame = serde_json::json!({
            "index": i,
            "time_unix_ns": 1_767_258_000_000_000_000u64 + i * 13_000_000,
            "elapsed_ns": 1_000_000_000 + i * 13_000_000,
            "entries": entries,
        });
        text.push_str(&format!("{frame}\n"));
    }
    let forged = dir.join("forged.rec");
    fs::write(&forged, text).unwrap();
    let tps = |interval: &str| -> Vec<String> {
        let out = run(&[
            "--replay",
            forged.to_str().unwrap(),
            "-d",
            "-y",
            interval,
            "2",
        ]);
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("sda"))
            .map(|l| l.split_whitespace().nth(1).unwrap().to_string())
            .collect()
    };
    assert_eq!(tps("0.013"), ["16000.00", "16000.00"]);
    // Replayed as whole seconds: uptime's hundredths, as sysstat.
    assert_eq!(tps("1"), ["20800.00", "20800.00"]);
}

/// `--replay -` reads standard input, as `--record -` writes standard
/// output: from a redirected file and from a pipe, the replay is the one
/// of the file's own path.
#[test]
fn a_replay_of_dash_reads_standard_input() {
    let dir = fixture("dash");
    let rec = dir.join("run.rec");
    let live = run(&[
        "--sysroot",
        dir.to_str().unwrap(),
        "--record",
        rec.to_str().unwrap(),
        "-x",
        "0.05",
        "3",
    ]);
    assert!(live.status.success(), "{live:?}");
    let args = ["--replay", "-", "-x", "0.05", "3"];
    let from_file = run(&["--replay", rec.to_str().unwrap(), "-x", "0.05", "3"]);
    assert!(from_file.status.success(), "{from_file:?}");
    let redirected = Command::new(BIN)
        .args(args)
        .env_clear()
        .env("TZ", "UTC")
        .env("LC_ALL", "C")
        .stdin(fs::File::open(&rec).unwrap())
        .output()
        .unwrap();
    assert!(redirected.status.success(), "{redirected:?}");
    assert_eq!(redirected.stdout, from_file.stdout);
    let mut piped = Command::new(BIN)
        .args(args)
        .env_clear()
        .env("TZ", "UTC")
        .env("LC_ALL", "C")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = piped.stdin.take().unwrap();
    let text = fs::read(&rec).unwrap();
    let feeder = std::thread::spawn(move || {
        let _ = std::io::Write::write_all(&mut input, &text);
    });
    let out = piped.wait_with_output().unwrap();
    feeder.join().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, from_file.stdout);
    // What standard input is decides: the recording it is may not be
    // written over, and a device is refused, saying it is standard input.
    let run_on = |stdin: fs::File, extra: &[&str]| {
        Command::new(BIN)
            .args(["--replay", "-", "-x"])
            .args(extra)
            .args(["0.05", "3"])
            .stdin(stdin)
            .output()
            .unwrap()
    };
    let out = run_on(
        fs::File::open(&rec).unwrap(),
        &["--svg", rec.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "iostat-rs: --svg {}: the file --replay reads: writing it would destroy it\n",
            rec.display()
        )
    );
    assert!(fs::read_to_string(&rec).unwrap().starts_with('{'));
    let out = run_on(fs::File::open("/dev/null").unwrap(), &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "iostat-rs: cannot read recording -: standard input is a character device, expected a \
         file or a pipe\n"
    );
}
