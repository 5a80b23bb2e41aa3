//! Recordings under stress, through the real programs: frames that leave out
//! unchanged keys (same output as full frames, in linear time), a last line
//! cut short at any byte, a recorder killed with SIGKILL, full disks,
//! corrupt entries, recordings of another tool, and the option combinations
//! a replay cannot honour.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::scratch::Scratch;

pub(crate) const IOSTAT: &str = env!("CARGO_BIN_EXE_iostat-rs");
pub(crate) const VCPUSTAT: &str = env!("CARGO_BIN_EXE_vcpustat");
pub(crate) const CXLSTAT: &str = env!("CARGO_BIN_EXE_cxlstat");

/// A fresh directory for one test, removed when the test ends, also
/// when it fails.
pub(crate) fn scratch(name: &str) -> Scratch {
    crate::scratch::scratch(&format!("recordings-{name}"))
}

pub(crate) fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Writes a small kernel tree for iostat-rs at counter step `step`: sda
/// changes every step, nvme0n1 and `/proc/stat` every other step.
pub(crate) fn iostat_tree(root: &Path, step: u64) {
    for d in [
        "proc",
        "sys/block/sda",
        "sys/block/nvme0n1",
        "sys/devices/system/cpu/cpu0",
        "sys/devices/system/cpu/cpu1",
    ] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    let (s, h) = (step, step / 2);
    fs::write(
        root.join("proc/diskstats"),
        format!(
            "   8       0 sda {} 10 {} 500 {} 20 {} 700 0 {} {} 0 0 0 0 {} 3\n \
             259       0 nvme0n1 {} 4 {} 50 {} 2 {} 60 1 {} {} 7 1 800 4 0 0\n",
            1000 + 17 * s,
            80000 + 900 * s,
            300 + 5 * s,
            9000 + 333 * s,
            1200 + 9 * s,
            2000 + 31 * s,
            2 * s,
            10 + h,
            88 + 40 * h,
            300 + 2 * h,
            400 + 4 * h,
            42 + 11 * h,
            77 + 3 * h,
        ),
    )
    .unwrap();
    fs::write(
        root.join("proc/uptime"),
        format!("{}.{:02} 100.00\n", 5000 + s, 7 * s % 100),
    )
    .unwrap();
    fs::write(
        root.join("proc/stat"),
        format!(
            "cpu  {} 20 {} 90000 40 5 6 0 0 0\ncpu0 1 1 1 1\ncpu1 1 1 1 1\n",
            1000 + 70 * h,
            500 + 30 * h
        ),
    )
    .unwrap();
}

pub(crate) fn run(bin: &str, args: &[&str]) -> Output {
    Command::new(bin)
        .args(args)
        .env_clear()
        .env("TZ", "UTC")
        .env("LC_ALL", "C")
        .output()
        .unwrap()
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Records one iostat-rs sample of `root` and gives the recording's lines.
fn record_one(root: &Path, rec: &Path) -> Vec<String> {
    let out = run(
        IOSTAT,
        &[
            "--sysroot",
            root.to_str().unwrap(),
            "--record",
            rec.to_str().unwrap(),
            "-x",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    fs::read_to_string(rec)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

fn write_lines(path: &Path, lines: &[String]) {
    fs::write(path, lines.join("\n") + "\n").unwrap();
}

/// The end line of a recording of `frames` frames (docs/recording.md).
fn end_line(frames: usize) -> String {
    format!("{{\"end\":{{\"frames\":{frames}}}}}")
}

/// A recording of `samples` samples with every key in every frame (each
/// frame a one-sample recording of the tree at that step), and the same
/// samples with each frame keeping only the entries that changed.
fn full_and_delta(dir: &Path, samples: u64) -> (PathBuf, PathBuf) {
    let root = dir.join("root");
    let mut full = Vec::new();
    for step in 0..samples {
        iostat_tree(&root, step);
        let lines = record_one(&root, &dir.join("one.rec"));
        assert_eq!(lines[2], end_line(1));
        if full.is_empty() {
            full.push(lines[0].clone());
        }
        let mut frame: serde_json::Value = serde_json::from_str(&lines[1]).unwrap();
        frame["index"] = step.into();
        frame["time_unix_ns"] = (1_700_000_000_000_000_000u64 + step * 1_000_000_000).into();
        full.push(frame.to_string());
    }
    let frames: Vec<serde_json::Value> = full[1..]
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut delta = vec![full[0].clone()];
    let mut dropped = 0;
    for (i, frame) in frames.iter().enumerate() {
        let mut frame = frame.clone();
        if i > 0 {
            let before = frames[i - 1]["entries"].as_object().unwrap();
            let entries = frame["entries"].as_object_mut().unwrap();
            let size = entries.len();
            entries.retain(|k, v| before.get(k) != Some(v));
            dropped += size - entries.len();
        }
        delta.push(frame.to_string());
    }
    assert!(
        dropped > 10,
        "the delta recording leaves keys out ({dropped})"
    );
    let (full_path, delta_path) = (dir.join("full.rec"), dir.join("delta.rec"));
    full.push(end_line(frames.len()));
    delta.push(end_line(frames.len()));
    write_lines(&full_path, &full);
    write_lines(&delta_path, &delta);
    (full_path, delta_path)
}

#[test]
fn frames_without_unchanged_keys_replay_like_full_frames() {
    let dir = scratch("delta");
    let (full, delta) = full_and_delta(&dir, 6);
    for opts in [
        &["-x"][..],
        &["-p", "ALL", "-t"],
        &["-o", "JSON", "-c"],
        &["-d", "-z", "-m"],
        &["-o", "ndjson"],
    ] {
        let replay = |rec: &Path| {
            let mut args = vec!["--replay", rec.to_str().unwrap()];
            args.extend_from_slice(opts);
            args.push("1");
            let out = run(IOSTAT, &args);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{opts:?}: {}",
                text(&out.stderr)
            );
            assert!(out.stderr.is_empty(), "{opts:?}: {}", text(&out.stderr));
            text(&out.stdout)
        };
        let (a, b) = (replay(&full), replay(&delta));
        assert!(a.matches("sda").count() >= 5 || opts.contains(&"-c"), "{a}");
        assert_eq!(a, b, "options {opts:?}");
    }
}

/// Runs `cmd` and gives its exit status and CPU time (user + system);
/// kills it and fails when it runs longer than `wall`.
// `wait4` reaps the child (clippy only knows `Child::wait`): it is the call
// that gives the child's resource usage.
#[allow(clippy::zombie_processes)]
fn cpu_time(cmd: &mut Command, wall: Duration) -> (i32, Duration) {
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let start = Instant::now();
    let secs = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    loop {
        let mut status = 0;
        // SAFETY: plain data filled by wait4 for our own child.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let reaped = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if reaped == pid {
            return (status, secs(usage.ru_utime) + secs(usage.ru_stime));
        }
        if start.elapsed() > wall {
            // SAFETY: signalling and reaping the child started above.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            panic!("still running after {wall:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// 40,000 frames that each hold only `/proc/uptime` (every other key is in
/// frame 0 only): the replay used to scan back through the frames for
/// every key (quadratic: this took about 200 s of CPU in a debug build);
/// linear, it takes about a second.
#[test]
fn a_long_recording_of_small_frames_replays_in_linear_time() {
    let dir = scratch("linear");
    let root = dir.join("root");
    iostat_tree(&root, 0);
    let lines = record_one(&root, &dir.join("one.rec"));
    let mut big = String::with_capacity(3_000_000);
    big.push_str(&lines[0]);
    big.push('\n');
    big.push_str(&lines[1]);
    big.push('\n');
    const FRAMES: u64 = 40_000;
    for i in 1..FRAMES {
        big.push_str(&format!(
            "{{\"index\":{i},\"entries\":{{\"read /proc/uptime\":{{\"text\":\"{}.00 1.00\\n\"}}}}}}\n",
            5000 + i
        ));
    }
    big.push_str(&end_line(FRAMES as usize));
    big.push('\n');
    let rec = dir.join("big.rec");
    fs::write(&rec, &big).unwrap();
    let (status, cpu) = cpu_time(
        Command::new(IOSTAT).args(["--replay", rec.to_str().unwrap(), "-d", "1"]),
        Duration::from_secs(120),
    );
    assert_eq!(status, 0);
    assert!(
        cpu < Duration::from_secs(20),
        "{FRAMES} frames took {cpu:?} of CPU"
    );
    // Every frame was reported: the count of reports is the count of frames.
    let out = run(IOSTAT, &["--replay", rec.to_str().unwrap(), "-d", "1"]);
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).matches("\nsda ").count() as u64, FRAMES);
}

/// A real recording of 5 samples: its header, 5 frames and end line.
fn five_samples(dir: &Path) -> (PathBuf, Vec<String>) {
    let root = dir.join("root");
    iostat_tree(&root, 3);
    let rec = dir.join("five.rec");
    let out = run(
        IOSTAT,
        &[
            "--sysroot",
            root.to_str().unwrap(),
            "--record",
            rec.to_str().unwrap(),
            "-x",
            "0.01",
            "5",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines: Vec<String> = fs::read_to_string(&rec)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(lines.len(), 7);
    assert_eq!(lines[6], end_line(5));
    (rec, lines)
}

#[test]
fn a_last_line_cut_at_any_byte_replays_the_complete_frames_with_one_warning() {
    let dir = scratch("cut");
    let (_, lines) = five_samples(&dir);
    // As the file was while its last frame was being written.
    let whole = (lines[..6].join("\n") + "\n").into_bytes();
    let four = dir.join("four.rec");
    write_lines(&four, &[&lines[..5], &[end_line(4)]].concat());
    let expected = run(IOSTAT, &["--replay", four.to_str().unwrap(), "-x", "1"]);
    assert_eq!(expected.status.code(), Some(0));
    assert!(expected.stderr.is_empty());
    let last = lines[5].len();
    let start = whole.len() - last - 1;
    let cut = dir.join("cut.rec");
    let cut_s = cut.to_str().unwrap();
    for keep in [1, 2, 17, last / 2, last - 2, last - 1] {
        fs::write(&cut, &whole[..start + keep]).unwrap();
        let out = run(IOSTAT, &["--replay", cut_s, "-x", "1"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "cut after {keep}: {}",
            text(&out.stderr)
        );
        assert_eq!(
            text(&out.stdout),
            text(&expected.stdout),
            "cut after {keep}"
        );
        assert_eq!(
            text(&out.stderr),
            format!(
                "iostat-rs: warning: {cut_s}: the last frame (line 6) is incomplete: the \
                 recording was cut (killed, or out of space); replaying its 4 complete frames\n"
            ),
            "cut after {keep}"
        );
    }
    // Cut before its newline only, the last frame is whole; the end line
    // that should follow it is missing.
    fs::write(&cut, &whole[..whole.len() - 1]).unwrap();
    let out = run(IOSTAT, &["--replay", cut_s, "-x", "1"]);
    assert_eq!(
        text(&out.stderr),
        format!(
            "iostat-rs: warning: {cut_s}: no end line after line 6: the recording was cut \
             (killed, or out of space); replaying its 5 complete frames\n"
        )
    );
    assert_eq!(text(&out.stdout).matches("\nsda ").count(), 5);
    // Cut in the header: nothing to replay, one error line that says so.
    fs::write(&cut, &whole[..lines[0].len() / 2]).unwrap();
    let out = run(IOSTAT, &["--replay", cut_s, "-x"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        format!(
            "iostat-rs: {cut_s}:1: the header is incomplete: the recording was cut (killed, or \
             out of space) before its first sample\n"
        )
    );
}

#[test]
fn a_recorder_killed_with_sigkill_leaves_every_reported_sample() {
    let dir = scratch("sigkill");
    let root = dir.join("root");
    iostat_tree(&root, 1);
    let rec = dir.join("killed.rec");
    let mut child = Command::new(IOSTAT)
        .args([
            "--sysroot",
            root.to_str().unwrap(),
            "--record",
            rec.to_str().unwrap(),
        ])
        .args(["-d", "0.5"])
        .env_clear()
        .env("TZ", "UTC")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut chunk = [0u8; 4096];
    while text(&seen).matches("\nsda ").count() < 3 {
        let n = stdout.read(&mut chunk).unwrap();
        assert!(n > 0, "iostat-rs ended early");
        seen.extend_from_slice(&chunk[..n]);
    }
    // In the sleep after the third report.
    std::thread::sleep(Duration::from_millis(150));
    child.kill().unwrap();
    stdout.read_to_end(&mut seen).unwrap();
    child.wait().unwrap();
    // Killed between two frames, the file ends at a line boundary: its
    // missing end line tells it from a run that ended there.
    let out = run(IOSTAT, &["--replay", rec.to_str().unwrap(), "-d", "0.5"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stderr),
        format!(
            "iostat-rs: warning: {}: no end line after line 4: the recording was cut (killed, \
             or out of space); replaying its 3 complete frames\n",
            rec.display()
        )
    );
    assert_eq!(text(&out.stdout), text(&seen));
}

/// The last line's frame, its entry `key` replaced by `entry`.
fn with_entry(lines: &[String], key: &str, entry: &str) -> Vec<String> {
    let mut lines = lines.to_vec();
    let mut frame: serde_json::Value = serde_json::from_str(&lines[3]).unwrap();
    frame["entries"][key] = serde_json::from_str(entry).unwrap();
    lines[3] = frame.to_string();
    lines
}

#[test]
fn a_corrupt_entry_is_an_error_naming_the_file_and_line() {
    let dir = scratch("corrupt");
    let (_, lines) = five_samples(&dir);
    let rec = dir.join("corrupt.rec");
    let rec_s = rec.to_str().unwrap();
    let cases = [
        (
            r#"{"list":["sda"]}"#,
            "expected text, hex or errno for operation read, found list",
        ),
        (
            r#"{"hex":"0a0"}"#,
            "hex \"0a0\" is not an even number of hexadecimal digits",
        ),
        (
            r#"{"hex":"zz"}"#,
            "hex \"zz\" is not an even number of hexadecimal digits",
        ),
        (r#"{"errno":0}"#, "errno 0 is not an error number"),
    ];
    for (entry, what) in cases {
        write_lines(&rec, &with_entry(&lines, "read /proc/diskstats", entry));
        let out = run(IOSTAT, &["--replay", rec_s, "-x"]);
        assert_eq!(out.status.code(), Some(1), "{entry}: {}", text(&out.stdout));
        assert_eq!(
            text(&out.stderr),
            format!("iostat-rs: {rec_s}:4: frame 2: entry \"read /proc/diskstats\": {what}\n")
        );
        assert!(out.stdout.is_empty(), "{entry}: nothing is reported");
    }
    // A wrong JSON type, and bytes that are not UTF-8 in a text.
    let mut typed = lines.clone();
    typed[3] = typed[3].replacen("{\"text\":\"", "{\"text\":7,\"x\":\"", 1);
    let mut binary = (lines[..3].join("\n") + "\n").into_bytes();
    let mut frame_2 = lines[3].clone().into_bytes();
    let at = frame_2
        .windows(8)
        .position(|w| w == b"\"text\":\"")
        .unwrap();
    frame_2.insert(at + 8, 0xff);
    binary.extend_from_slice(&frame_2);
    binary.extend_from_slice((String::from("\n") + &lines[4..].join("\n") + "\n").as_bytes());
    for (what, bytes) in [
        ("wrong type", (typed.join("\n") + "\n").into_bytes()),
        ("not UTF-8", binary),
    ] {
        fs::write(&rec, bytes).unwrap();
        let out = run(IOSTAT, &["--replay", rec_s, "-x"]);
        assert_eq!(out.status.code(), Some(1), "{what}");
        let err = text(&out.stderr);
        assert!(
            err.starts_with(&format!("iostat-rs: {rec_s}:4: frame 2: ")),
            "{what}: {err}"
        );
        assert!(err.contains(": not a recording frame: "), "{what}: {err}");
        assert_eq!(err.lines().count(), 1, "{what}: {err}");
    }
}

/// A recording `--replay` cannot open is named as one, as `--record`'s is
/// (`cannot create recording PATH: ...`): the line said only
/// `/missing.rec: No such file or directory`, as if any file had failed.
#[test]
fn a_recording_that_cannot_be_read_is_named_as_a_recording() {
    let dir = scratch("unreadable");
    let missing = dir.join("missing.rec");
    for (tool, bin, extra) in [
        ("iostat-rs", IOSTAT, &[][..]),
        ("vcpustat", VCPUSTAT, &[][..]),
        ("cxlstat", CXLSTAT, &["--list"][..]),
    ] {
        for (path, why) in [
            (missing.as_path(), "No such file or directory (os error 2)"),
            (&dir, "a directory, expected a file"),
        ] {
            let mut args = vec!["--replay", path.to_str().unwrap()];
            args.extend_from_slice(extra);
            let out = run(bin, &args);
            assert_eq!(out.status.code(), Some(1), "{tool}");
            assert_eq!(
                text(&out.stderr),
                format!("{tool}: cannot read recording {}: {why}\n", path.display()),
            );
            assert!(out.stdout.is_empty(), "{tool}");
        }
    }
}

/// One recording per tool, from the fixture trees.
fn recordings_of_each_tool(dir: &Path) -> Vec<(&'static str, &'static str, PathBuf)> {
    let root = dir.join("root");
    iostat_tree(&root, 0);
    let mut made = Vec::new();
    for (name, bin, sysroot, extra) in [
        (
            "iostat-rs",
            IOSTAT,
            root.to_str().unwrap().to_string(),
            &[][..],
        ),
        ("vcpustat", VCPUSTAT, fixture("vcpustat/seed"), &[][..]),
        (
            "cxlstat",
            CXLSTAT,
            fixture("cxl/qemu-two-cpmus"),
            &["--list"][..],
        ),
    ] {
        let rec = dir.join(format!("{name}.rec"));
        let mut args = vec!["--sysroot", &sysroot, "--record", rec.to_str().unwrap()];
        args.extend_from_slice(extra);
        let out = run(bin, &args);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out.stderr));
        made.push((name, bin, rec));
    }
    made
}

#[test]
fn a_recording_of_another_tool_is_refused_with_the_tool_named() {
    let dir = scratch("othertool");
    let made = recordings_of_each_tool(&dir);
    let dtl = dir.join("trace.dtl");
    fs::write(
        &dtl,
        b"{\"format\":\"vcpustat-dtl\",\"version\":1,\"cpus\":[]}\n\x00\x01\x02",
    )
    .unwrap();
    for (tool, bin, _) in &made {
        let extra: &[&str] = if *tool == "cxlstat" { &["--list"] } else { &[] };
        for (recorded_by, _, rec) in &made {
            let mut args = vec!["--replay", rec.to_str().unwrap()];
            args.extend_from_slice(extra);
            let out = run(bin, &args);
            if recorded_by == tool {
                assert_eq!(out.status.code(), Some(0), "{tool}: {}", text(&out.stderr));
                continue;
            }
            assert_eq!(out.status.code(), Some(1), "{tool} on {recorded_by}");
            assert_eq!(
                text(&out.stderr),
                format!(
                    "{tool}: {} was recorded by {recorded_by}, not {tool}\n",
                    rec.display()
                ),
            );
            assert!(
                out.stdout.is_empty(),
                "{tool} on {recorded_by}: {}",
                text(&out.stdout)
            );
        }
        let mut args = vec!["--replay", dtl.to_str().unwrap()];
        args.extend_from_slice(extra);
        let out = run(bin, &args);
        assert_eq!(out.status.code(), Some(1));
        assert_eq!(
            text(&out.stderr),
            format!(
                "{tool}: {} was recorded by vcpustat trace record, not {tool}\n",
                dtl.display()
            ),
        );
    }
}

#[test]
fn a_replay_refuses_the_options_it_cannot_honour_with_status_2() {
    let dir = scratch("conflicts");
    let made = recordings_of_each_tool(&dir);
    let out_rec = dir.join("again.rec");
    let out_s = out_rec.to_str().unwrap();
    let root = dir.join("root");
    let root_s = root.to_str().unwrap();
    for (tool, bin, rec) in &made {
        let rec_s = rec.to_str().unwrap();
        let extra: &[&str] = if *tool == "cxlstat" { &["--list"] } else { &[] };
        for (other, value) in [("--record", out_s), ("--sysroot", root_s)] {
            let mut args = vec!["--replay", rec_s, other, value];
            args.extend_from_slice(extra);
            let out = run(bin, &args);
            assert_eq!(out.status.code(), Some(2), "{tool} --replay {other}");
            let err = text(&out.stderr);
            let placeholder = if other == "--record" {
                "<FILE>"
            } else {
                "<DIR>"
            };
            // One line, as clap words it in the three tools, pointing to
            // --help: iostat-rs, which words it by hand, left that out.
            assert_eq!(
                err,
                format!(
                    "{tool}: the argument '--replay <FILE>' cannot be used with \
                     '{other} {placeholder}' (see '{tool} --help')\n"
                ),
            );
            assert!(out.stdout.is_empty());
            assert!(!out_rec.exists(), "{tool} wrote a recording");
        }
    }
    // cxlstat would not run a command under a replay.
    let ran = dir.join("ran");
    let (_, _, cxl_rec) = &made[2];
    let out = run(
        CXLSTAT,
        &[
            "--replay",
            cxl_rec.to_str().unwrap(),
            "-e",
            "clock_ticks",
            "--",
            "touch",
            ran.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("'--replay <FILE>' cannot be used with '[CMD]...'"));
    assert!(!ran.exists());
}

/// Runs `bin` with `args`, recording to `rec` every 10 ms `count` times,
/// under a file size limit of `bytes`, with SIGXFSZ's action `on_xfsz`
/// (`SIG_IGN`: a write past the limit fails with EFBIG, as on a full disk;
/// `SIG_DFL`: the signal ends the process, without a core dump here).
fn under_file_size_limit(
    bin: &str,
    args: &[&str],
    rec: &Path,
    count: &str,
    bytes: libc::rlim_t,
    on_xfsz: libc::sighandler_t,
) -> Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(bin);
    cmd.args(args)
        .args(["--record", rec.to_str().unwrap(), "0.01", count])
        .env_clear()
        .env("TZ", "UTC")
        .env("LC_ALL", "C");
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            };
            let no_core = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &limit);
            libc::setrlimit(libc::RLIMIT_CORE, &no_core);
            libc::signal(libc::SIGXFSZ, on_xfsz);
            Ok(())
        });
    }
    cmd.output().unwrap()
}

/// The trees under `dir` the tools record from with `--sysroot`, to pass
/// as they are: iostat-rs's small tree, vcpustat's seed fixture, and one
/// software PMU that cxlstat can count (`cpu_clock`).
fn counting_sysroots(dir: &Path) -> [String; 3] {
    let root = dir.join("root");
    iostat_tree(&root, 0);
    let cxl_root = dir.join("cxl");
    crate::cxlstat_support::software_tree(&cxl_root, &[("cxl_pmu_mem0.0", 0)]);
    [root, PathBuf::from(fixture("vcpustat/seed")), cxl_root]
        .map(|p| p.to_str().unwrap().to_string())
}

#[test]
fn a_recording_that_cannot_be_written_is_named_not_standard_output() {
    let dir = scratch("full");
    let [root_s, vcpu, cxl_root] = counting_sysroots(&dir);
    let cxl = fixture("cxl/qemu-two-cpmus");
    for (tool, bin, sysroot, extra) in [
        ("iostat-rs", IOSTAT, &root_s, &[][..]),
        ("vcpustat", VCPUSTAT, &vcpu, &[][..]),
        ("cxlstat", CXLSTAT, &cxl, &["--list"][..]),
    ] {
        let mut args = vec!["--sysroot", sysroot.as_str(), "--record", "/dev/full"];
        args.extend_from_slice(extra);
        let out = run(bin, &args);
        assert_eq!(out.status.code(), Some(1), "{tool}");
        assert_eq!(
            text(&out.stderr),
            format!(
                "{tool}: cannot write recording /dev/full: No space left on device (os error 28)\n"
            ),
        );
        assert!(out.stdout.is_empty(), "{tool} fails before reporting");
        // A directory named as the recording: worded as --svg and
        // --textfile word it.
        let mut args = vec![
            "--sysroot",
            sysroot.as_str(),
            "--record",
            dir.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let out = run(bin, &args);
        assert_eq!(out.status.code(), Some(1), "{tool}");
        assert_eq!(
            text(&out.stderr),
            format!(
                "{tool}: cannot create recording {}: a directory, expected a regular file or a \
                 new name\n",
                dir.display()
            ),
        );
    }
    // The disk fills up mid-run (a file size limit: EFBIG): after the
    // header, on a frame. The JSON document begun on standard output is
    // still closed: only the recording failed.
    let mut runs = vec![
        (
            "iostat-rs",
            IOSTAT,
            vec!["--sysroot", &root_s, "-x", "-o", "JSON"],
        ),
        ("vcpustat", VCPUSTAT, vec!["--sysroot", &vcpu, "-o", "json"]),
    ];
    if crate::cxlstat_support::perf_usable(
        "a_recording_that_cannot_be_written_is_named_not_standard_output",
    ) {
        runs.push((
            "cxlstat",
            CXLSTAT,
            vec!["--sysroot", &cxl_root, "-e", "cpu_clock", "-o", "json"],
        ));
    }
    for (tool, bin, args) in runs {
        let rec = dir.join(format!("{tool}-limited.rec"));
        let out = under_file_size_limit(bin, &args, &rec, "1000", 2048, libc::SIG_IGN);
        assert_eq!(out.status.code(), Some(1), "{tool}");
        assert_eq!(
            text(&out.stderr),
            format!(
                "{tool}: cannot write recording {}: File too large (os error 27)\n",
                rec.display()
            )
        );
        let doc: Result<serde_json::Value, _> = serde_json::from_slice(&out.stdout);
        assert!(
            doc.is_ok(),
            "{tool}: the JSON document is not closed: {doc:?}"
        );
        // Nothing is written after the failed write: no end line.
        let written = fs::read(&rec).unwrap();
        assert!(
            !text(&written).contains("{\"end\":"),
            "{tool}: {}",
            text(&written)
        );
    }
    let rec = dir.join("iostat-rs-limited.rec");
    // What was written replays, the cut frame reported.
    let out = run(IOSTAT, &["--replay", rec.to_str().unwrap(), "-x", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("is incomplete"),
        "{}",
        text(&out.stderr)
    );
}

/// One tool's run recorded by [`recorded_json_runs`].
struct Recorded {
    tool: &'static str,
    bin: &'static str,
    /// The report's arguments (JSON output), for the replay too.
    args: Vec<&'static str>,
    /// The recording's lines.
    lines: Vec<String>,
}

/// Each tool's JSON run of four reports on [`counting_sysroots`],
/// recorded under `dir` (cxlstat's when `test` may count with perf).
fn recorded_json_runs(dir: &Path, test: &str) -> Vec<Recorded> {
    let [root_s, vcpu, cxl_root] = counting_sysroots(dir);
    let mut runs = vec![
        (
            "iostat-rs",
            IOSTAT,
            root_s,
            vec!["-x", "-o", "JSON", "0.01", "4"],
        ),
        ("vcpustat", VCPUSTAT, vcpu, vec!["-o", "json", "1", "4"]),
    ];
    if crate::cxlstat_support::perf_usable(test) {
        let args = vec![
            "-e",
            "cpu_clock",
            "-I",
            "10",
            "--interval-count",
            "4",
            "-o",
            "json",
        ];
        runs.push(("cxlstat", CXLSTAT, cxl_root, args));
    }
    runs.into_iter()
        .map(|(tool, bin, sysroot, args)| {
            let rec = dir.join(format!("{tool}.rec"));
            let mut recording = vec![
                "--sysroot",
                sysroot.as_str(),
                "--record",
                rec.to_str().unwrap(),
            ];
            recording.extend(&args);
            let out = run(bin, &recording);
            assert_eq!(out.status.code(), Some(0), "{tool}: {}", text(&out.stderr));
            let lines = fs::read_to_string(&rec)
                .unwrap()
                .lines()
                .map(String::from)
                .collect();
            Recorded {
                tool,
                bin,
                args,
                lines,
            }
        })
        .collect()
}

/// A recording read from a FIFO (`--replay <(zcat run.rec.gz)`) is read
/// once, a frame at a time, each checked as it comes: a damaged frame
/// stops the replay there with the FIFO's line, status 1, after the
/// reports of the frames before it, and a JSON document begun is closed
/// (it was called an output failure and left open). Each tool.
#[test]
fn a_frame_damaged_in_a_fifo_stops_the_replay_there() {
    let dir = scratch("fifo-damaged");
    for Recorded {
        tool,
        bin,
        args,
        mut lines,
    } in recorded_json_runs(&dir, "a_frame_damaged_in_a_fifo_stops_the_replay_there")
    {
        assert!(lines.len() >= 5, "{tool}: {} lines", lines.len());
        lines[3] = r#"{"index":2,"entries":{"x":1}}"#.to_string();
        let fifo = dir.join(format!("{tool}.fifo"));
        crate::hostile_files::mkfifo(&fifo);
        let writer = {
            let (fifo, text) = (fifo.clone(), lines.join("\n") + "\n");
            // The tool may stop reading at the damaged frame.
            std::thread::spawn(move || {
                use std::io::Write;
                let mut out = fs::OpenOptions::new().write(true).open(fifo).unwrap();
                let _ = out.write_all(text.as_bytes());
            })
        };
        let mut replay = vec!["--replay", fifo.to_str().unwrap()];
        replay.extend(&args);
        let out = run(bin, &replay);
        writer.join().unwrap();
        assert_eq!(out.status.code(), Some(1), "{tool}: {}", text(&out.stderr));
        let err = text(&out.stderr);
        assert!(
            err.starts_with(&format!(
                "{tool}: {}:4: frame 2: not a recording frame: ",
                fifo.display()
            )) && err.lines().count() == 1,
            "{tool}: {err}"
        );
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{tool}: the JSON document is not closed: {e}"));
        assert!(
            doc.to_string().len() > 100,
            "{tool}: the reports before it: {doc}"
        );
    }
}

/// A replay from a FIFO whose writer stalls (a `zcat` stopped, a slow
/// network copy) waits for it, and a stop signal ends that wait: the run
/// ends at once, after the reports of the frames that came, the JSON
/// document closed. (The read used to go on waiting for the writer.)
/// Each tool.
#[test]
fn a_stop_signal_ends_a_replay_waiting_for_a_stalled_fifo() {
    let dir = scratch("fifo-stalled");
    for Recorded {
        tool,
        bin,
        args,
        lines,
    } in recorded_json_runs(
        &dir,
        "a_stop_signal_ends_a_replay_waiting_for_a_stalled_fifo",
    ) {
        let fifo = dir.join(format!("{tool}.fifo"));
        crate::hostile_files::mkfifo(&fifo);
        // The header and two frames, then the writer stalls until told.
        let (done, stalled) = std::sync::mpsc::channel::<()>();
        let writer = {
            let (fifo, text) = (fifo.clone(), lines[..3].join("\n") + "\n");
            std::thread::spawn(move || {
                use std::io::Write;
                let mut out = fs::OpenOptions::new().write(true).open(fifo).unwrap();
                out.write_all(text.as_bytes()).unwrap();
                let _ = stalled.recv_timeout(Duration::from_secs(60));
            })
        };
        let mut replay = vec!["--replay", fifo.to_str().unwrap()];
        replay.extend(&args);
        let mut child = Command::new(bin)
            .args(&replay)
            .env_clear()
            .env("LC_ALL", "C")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reports of the frames that came are out: the replay waits.
        let mut stdout = child.stdout.take().unwrap();
        let mut seen = Vec::new();
        let mut chunk = [0u8; 4096];
        // A report's first key: iostat-rs's, then vcpustat's and cxlstat's.
        while !["\"avg-cpu\"", "\"timestamp\""]
            .iter()
            .any(|key| text(&seen).contains(key))
        {
            let n = stdout.read(&mut chunk).unwrap();
            assert!(n > 0, "{tool}: no report: {}", text(&seen));
            seen.extend_from_slice(&chunk[..n]);
        }
        std::thread::sleep(Duration::from_millis(200));
        // SAFETY: signalling our own child, not reaped yet, by its pid.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
        // Still waiting for the FIFO 5 s after SIGINT is the failure.
        let status = crate::procstate::wait_with_timeout(
            &mut child,
            Duration::from_secs(5),
            &format!("{tool} replaying a stalled FIFO after SIGINT"),
        );
        let _ = done.send(());
        writer.join().unwrap();
        stdout.read_to_end(&mut seen).unwrap();
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert!(err.is_empty(), "{tool}: {err}");
        assert!(
            status.success() || status.code().is_none(),
            "{tool}: {status:?}"
        );
        let doc: serde_json::Value = serde_json::from_slice(&seen).unwrap_or_else(|e| {
            panic!(
                "{tool}: the JSON document is not closed: {e}: {}",
                text(&seen)
            )
        });
        assert!(doc.to_string().len() > 100, "{tool}: {doc}");
    }
}

/// A recording whose header is past the file size limit (`ulimit -f`),
/// with SIGXFSZ at its default action: the write fails with EFBIG and the
/// tool says so, as it does on a full disk. The header is written before
/// the stop signals' handlers are installed, and SIGXFSZ used to kill the
/// tools there without a word (status 153 from a shell). What was written
/// of the header replays as a cut header, not as a file of another kind.
#[test]
fn a_recording_header_past_the_file_size_limit_is_an_error_not_a_kill() {
    let dir = scratch("fsize-header");
    let [root_s, vcpu, cxl_root] = counting_sysroots(&dir);
    let mut runs = vec![
        ("iostat-rs", IOSTAT, vec!["--sysroot", &root_s, "-x"]),
        ("vcpustat", VCPUSTAT, vec!["--sysroot", &vcpu]),
    ];
    if crate::cxlstat_support::perf_usable(
        "a_recording_header_past_the_file_size_limit_is_an_error_not_a_kill",
    ) {
        runs.push((
            "cxlstat",
            CXLSTAT,
            vec!["--sysroot", &cxl_root, "-e", "cpu_clock"],
        ));
    }
    for (tool, bin, args) in runs {
        let rec = dir.join(format!("{tool}-header.rec"));
        let out = under_file_size_limit(bin, &args, &rec, "2", 64, libc::SIG_DFL);
        assert_eq!(
            (out.status.code(), text(&out.stderr)),
            (
                Some(1),
                format!(
                    "{tool}: cannot write recording {}: File too large (os error 27)\n",
                    rec.display()
                )
            ),
            "{tool}: {:?}",
            out.status
        );
        assert!(out.stdout.is_empty(), "{tool} fails before reporting");
        // What it wrote, 64 bytes of the header, replays as a cut, not as
        // a file that is not a recording.
        assert_eq!(fs::metadata(&rec).unwrap().len(), 64, "{tool}");
        let replay = run(bin, &["--replay", rec.to_str().unwrap()]);
        assert_eq!(
            (replay.status.code(), text(&replay.stderr)),
            (
                Some(1),
                format!(
                    "{tool}: {}:1: the header is incomplete: the recording was cut (killed, or \
                     out of space) before its first sample\n",
                    rec.display()
                )
            ),
        );
    }
}

/// Replays `tests/fixtures/recordings/0ebb936/TOOL.rec` with `args`.
fn replay_0ebb936(bin: &str, tool: &str, args: &[&str]) -> String {
    let rec = fixture(&format!("recordings/0ebb936/{tool}.rec"));
    let out = run(bin, &[&["--replay", rec.as_str()][..], args].concat());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{tool} {args:?}: {}",
        text(&out.stderr)
    );
    // Version 1 had no end line: none is missed.
    assert!(out.stderr.is_empty(), "{tool}: {}", text(&out.stderr));
    text(&out.stdout)
}

/// Recordings kept for months are replayed by newer versions: these three
/// were made by the first version with all three tools (commit 0ebb936,
/// `cargo build --release`, TZ=UTC LC_ALL=C), over trees whose counters a
/// script advanced between samples (written in place, as [`iostat_tree`]'s
/// are read): `iostat-rs --sysroot T --record iostat-rs.rec -x -p ALL 0.1 3`
/// (sda, sda1, nvme0n1), `vcpustat --sysroot T --record vcpustat.rec 0.1 3`
/// (cpu0 and cpu1) and `cxlstat --sysroot T --record cxlstat.rec -e cpu_clock
/// 0.1 2` (one PMU of the software clock, as cxlstat_support's trees). The
/// expected figures are what that build printed from its own replay, but
/// for the changes made on purpose since: a share in the machine formats
/// is a 0-1 ratio named `_ratio` (0c5eca9), vcpustat numbers its
/// machine-format reports from 1 (87d8879), and cxlstat's time column
/// starts at the baseline (165a6a0) and a rate is the count over the time
/// its counter was enabled (ae418f8), worked out here from the recorded
/// values.
#[test]
fn recordings_made_by_the_first_version_replay_with_its_numbers() {
    let io = replay_0ebb936(IOSTAT, "iostat-rs", &["-x", "-p", "ALL", "0.1", "3"]);
    assert!(
        io.starts_with("Linux 6.18.44-fc-v1252 (vm) \t12/06/26 \t_x86_64_\t(2 CPU)\n"),
        "{io}"
    );
    assert_eq!(io.matches("avg-cpu:").count(), 3, "{io}");
    for line in [
        "           1.22    0.02    0.61    0.04    0.00   98.11\n",
        "          11.67    0.00    5.00    0.00    0.00   83.33\n",
        "sda              0.26      9.62     0.00   0.76    0.38    36.83    0.08      1.50     \
         0.00   4.88    1.79    19.22    0.00      0.00     0.00   0.00    0.00     0.00    \
         0.01    0.08    0.00   0.03\n",
        "nvme0n1          0.05      2.70     0.00   1.64    0.21    56.22    0.03      7.47     \
         0.00   1.50    0.46   285.31    0.00      0.08     0.00  12.50    0.57    57.14    \
         0.00    0.00    0.00   0.00\n",
        "sda1           300.00   3200.00     0.00   0.00    0.00    10.67  100.00     50.00     \
         0.00   0.00    0.00     0.50    0.00      0.00     0.00   0.00    0.00     0.00    \
         0.00    0.00    0.40  20.00\n",
        "nvme0n1       1100.00  44400.00     0.00   0.00    0.00    40.36  300.00 204800.00     \
         0.00   0.00    0.00   682.67    0.00      0.00     0.00   0.00    0.00     0.00    \
         0.00    0.00    0.70  50.00\n",
    ] {
        assert!(io.contains(line), "{line}in\n{io}");
    }
    // Another view of the same samples, sysstat's JSON.
    let json = replay_0ebb936(
        IOSTAT,
        "iostat-rs",
        &["-d", "-p", "ALL", "-o", "JSON", "0.1", "3"],
    );
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let stats = doc["sysstat"]["hosts"][0]["statistics"].as_array().unwrap();
    assert_eq!(stats.len(), 3);
    let disk = |report: usize, row: usize, key: &str| stats[report]["disk"][row][key].clone();
    assert_eq!(disk(0, 0, "disk_device"), "sda");
    assert_eq!(disk(0, 0, "kB_read"), 48100);
    assert_eq!(disk(0, 2, "kB_dscd"), 400);
    assert_eq!(disk(1, 2, "disk_device"), "nvme0n1");
    assert_eq!(disk(1, 2, "kB_wrtn"), 22528);
    assert_eq!(disk(1, 1, "tps"), 400.0);

    let vcpu = replay_0ebb936(VCPUSTAT, "vcpustat", &["0.1", "3"]);
    assert_eq!(vcpu.matches("\nall ").count(), 3, "{vcpu}");
    for line in [
        "cpu0           498 |  80.32  18.07   1.00   0.60 |  97.59   2.01   0.40 |   97.59\n",
        "all           1068 |  81.46  16.85   0.94   0.75 |  97.57   1.87   0.56 |   97.57\n",
    ] {
        assert!(vcpu.contains(line), "{line}in\n{vcpu}");
    }
    let csv = replay_0ebb936(VCPUSTAT, "vcpustat", &["-n", "-o", "csv", "0.1", "3"]);
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 1 + 3 * 3, "{csv}");
    assert!(rows[0].ends_with(",unattributed_disp,home_ratio"), "{csv}");
    assert!(
        rows[3].ends_with(",1,all,1066,870,180,10,6,1042,20,4,0,0.9775"),
        "{csv}"
    );
    assert!(
        rows[4].ends_with(",2,cpu0,499,400,90,5,4,486,10,3,0,0.9739"),
        "{csv}"
    );
    let total = replay_0ebb936(VCPUSTAT, "vcpustat", &[]);
    assert!(
        total.contains(
            "all          11060 |       6792       4200         58         10 |      10996         \
             56          8 |   99.42\n"
        ),
        "{total}"
    );

    // Frames 0-2 hold cpu_clock's count and time enabled (16900, 17878),
    // (100221947, 100222269), (200459261, 200459809) at elapsed_ns 294615,
    // 100504315 and 200742614: counts 100205047 and 100237314, times
    // 100204391 and 100237540 ns enabled, 0.100209700 and 0.200447999 s
    // after the baseline.
    let cxl = replay_0ebb936(CXLSTAT, "cxlstat", &["-e", "cpu_clock", "0.1", "2"]);
    let lines: Vec<Vec<&str>> = cxl
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines,
        [
            [
                "0.100209700",
                "cxl_pmu_mem0.0",
                "cpu_clock",
                "100205047",
                "1000006546.62",
                "100.00%"
            ],
            [
                "0.200447999",
                "cxl_pmu_mem0.0",
                "cpu_clock",
                "100237314",
                "999997745.36",
                "100.00%"
            ],
        ],
        "{cxl}"
    );
}
