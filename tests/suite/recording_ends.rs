//! How a recording ends, through the real programs: every orderly end (the
//! count reached, SIGINT, SIGTERM, standard output closed) writes the end
//! line with the number of frames; a file without it (cut exactly after a
//! whole frame, or after any) replays all its frames with one warning,
//! from a file as from a FIFO.

use std::fs;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::pipes::Collected;
use crate::procstate::{KillOnDrop, await_handler, wait_with_timeout};
use crate::recordings::{CXLSTAT, IOSTAT, VCPUSTAT, fixture, iostat_tree, run, scratch, text};

/// The lines of the recording at `rec`, checked to be of version 2 and to
/// end with the end line that counts its frames (written here, not by the
/// code under test); the number of frames.
fn ended_recording(rec: &Path) -> (Vec<String>, usize) {
    let lines: Vec<String> = fs::read_to_string(rec)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert!(
        lines[0].starts_with(r#"{"format":"hwstat-recording","version":2,"#),
        "{}",
        lines[0]
    );
    let frames = lines.len() - 2;
    assert!(frames > 0, "{lines:?}");
    for (k, line) in lines[1..=frames].iter().enumerate() {
        assert!(line.starts_with(&format!("{{\"index\":{k},")), "{line:.80}");
    }
    assert_eq!(
        lines[frames + 1],
        format!("{{\"end\":{{\"frames\":{frames}}}}}")
    );
    (lines, frames)
}

/// The warning `tool` gives for `file` cut after line `line` (no end
/// line), replaying `frames` frames.
fn no_end_warning(tool: &str, file: &Path, line: usize, frames: usize) -> String {
    let noun = if frames == 1 { "frame" } else { "frames" };
    format!(
        "{tool}: warning: {}: no end line after line {line}: the recording was cut (killed, or \
         out of space); replaying its {frames} complete {noun}\n",
        file.display()
    )
}

/// Replays `rec` with `bin` and `args` through a FIFO (`--replay <(cat
/// rec)`): its status, standard output and standard error.
fn replay_fifo(bin: &str, rec: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let fifo = rec.with_extension("fifo");
    let _ = fs::remove_file(&fifo);
    let made = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(made.as_ptr(), 0o600) }, 0);
    let writer = {
        let (fifo, data) = (fifo.clone(), fs::read(rec).unwrap());
        std::thread::spawn(move || fs::write(fifo, data).unwrap())
    };
    let out = run(
        bin,
        &[&["--replay", fifo.to_str().unwrap()][..], args].concat(),
    );
    writer.join().unwrap();
    fs::remove_file(&fifo).unwrap();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn a_recording_cut_at_a_line_boundary_is_told_from_one_that_ended() {
    let dir = scratch("ends");
    let root = dir.join("root");
    iostat_tree(&root, 0);
    let cxl = fixture("cxl/qemu-two-cpmus");
    let vcpu = fixture("vcpustat/seed");
    for (tool, bin, sysroot, record, view) in [
        (
            "iostat-rs",
            IOSTAT,
            root.to_str().unwrap(),
            &["-d", "0.01", "3"][..],
            &["-d", "1"][..],
        ),
        ("vcpustat", VCPUSTAT, &vcpu, &["0.01", "3"], &["1"]),
        ("cxlstat", CXLSTAT, &cxl, &["--list"], &["--list"]),
    ] {
        let rec = dir.join(format!("{tool}.rec"));
        let args = [
            &["--sysroot", sysroot, "--record", rec.to_str().unwrap()][..],
            record,
        ]
        .concat();
        let out = run(bin, &args);
        assert_eq!(out.status.code(), Some(0), "{tool}: {}", text(&out.stderr));
        // The count reached: the end line counts every frame.
        let (lines, frames) = ended_recording(&rec);
        let replay = |file: &Path| {
            let out = run(
                bin,
                &[&["--replay", file.to_str().unwrap()][..], view].concat(),
            );
            assert_eq!(out.status.code(), Some(0), "{tool}: {}", text(&out.stderr));
            (text(&out.stdout), text(&out.stderr))
        };
        let (whole, warned) = replay(&rec);
        assert_eq!(warned, "", "{tool}");
        assert_eq!(
            replay_fifo(bin, &rec, view),
            (Some(0), whole.clone(), String::new())
        );
        // Cut exactly after its last frame: the same reports, one warning.
        let cut = dir.join(format!("{tool}-cut.rec"));
        fs::write(&cut, lines[..=frames].join("\n") + "\n").unwrap();
        let warning = no_end_warning(tool, &cut, frames + 1, frames);
        assert_eq!(replay(&cut), (whole.clone(), warning.clone()), "{tool}");
        // Read once as it comes, told at the end, when the replay gets
        // there (`--list` reads the first frame only, and the rest of a
        // FIFO is not read: nothing is said of it).
        let fifo_warning = match view {
            ["--list"] => String::new(),
            _ => warning.replace(".rec:", ".fifo:"),
        };
        assert_eq!(
            replay_fifo(bin, &cut, view),
            (Some(0), whole.clone(), fifo_warning),
            "{tool}"
        );
        // Cut after its first frame: the warning first. vcpustat's, whose
        // first sample only starts an interval run, then has no report to
        // give, and says so (status 1, see
        // `a_one_sample_recording_replayed_with_an_interval_says_it_cannot_report_one`).
        if frames > 1 {
            fs::write(&cut, lines[..2].join("\n") + "\n").unwrap();
            let out = run(
                bin,
                &[&["--replay", cut.to_str().unwrap()][..], view].concat(),
            );
            let warned = text(&out.stderr);
            assert!(
                warned.starts_with(&no_end_warning(tool, &cut, 2, 1)),
                "{tool}: {warned}"
            );
            let reported = tool != "vcpustat";
            assert_eq!(out.status.code(), Some(i32::from(!reported)), "{tool}");
            assert_eq!(warned.lines().count(), if reported { 1 } else { 2 });
        }
    }
}

/// A run with no count (`args`), stopped by `stop` once it reported
/// `reports` times (`report` counts them in its output), recording to
/// `rec`: its exit status.
fn stopped_run(bin: &str, args: &[&str], rec: &Path, report: &str, stop: i32) -> Option<i32> {
    let mut child = KillOnDrop(
        Command::new(bin)
            .args(args)
            .args(["--record", rec.to_str().unwrap()])
            .env_clear()
            .env("TZ", "UTC")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut stdout = Collected::new(child.stdout.take().unwrap());
    stdout.wait_for("two reports", Duration::from_secs(20), |seen| {
        text(seen).matches(report).count() >= 2
    });
    await_handler(child.id(), stop);
    // SAFETY: signalling the child this test started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, stop) }, 0);
    let status = wait_with_timeout(&mut child, Duration::from_secs(20), bin);
    status.code()
}

#[test]
fn a_run_stopped_by_a_signal_or_its_reader_ends_its_recording() {
    let dir = scratch("stopped");
    let root = dir.join("root");
    iostat_tree(&root, 0);
    let root_s = root.to_str().unwrap();
    let vcpu = fixture("vcpustat/seed");
    for (bin, args, report, stop) in [
        (
            IOSTAT,
            &["--sysroot", root_s, "-d", "0.05"][..],
            "\nsda ",
            libc::SIGINT,
        ),
        (
            IOSTAT,
            &["--sysroot", root_s, "-d", "0.05"],
            "\nsda ",
            libc::SIGTERM,
        ),
        (
            VCPUSTAT,
            &["--sysroot", &vcpu, "0.05"],
            "\nall ",
            libc::SIGTERM,
        ),
    ] {
        let rec = dir.join("stopped.rec");
        let status = stopped_run(bin, args, &rec, report, stop);
        assert_eq!(status, Some(0), "{bin} {stop}");
        let (_, frames) = ended_recording(&rec);
        assert!(frames >= 2, "{bin} {stop}: {frames}");
        let out = run(bin, &["--replay", rec.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert_eq!(text(&out.stderr), "", "{bin} {stop}");
    }
    // The reader of standard output goes away: the run ends in order,
    // and so does its recording.
    let rec = dir.join("unread.rec");
    let mut child = KillOnDrop(
        Command::new(IOSTAT)
            .args(["--sysroot", root_s, "-d", "0.05", "--record"])
            .arg(&rec)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 64];
    assert!(stdout.read(&mut first).unwrap() > 0);
    drop(stdout);
    wait_with_timeout(&mut child, Duration::from_secs(20), "iostat-rs");
    let (_, frames) = ended_recording(&rec);
    assert!(frames >= 1);
}

/// The recording at `rec` made by `bin` with `args` (a `--record` run that
/// ends in order), cut to its header and first sample, ended as a run
/// stopped after that sample ends it.
fn one_sample_recording(bin: &str, args: &[&str], rec: &Path) {
    let out = run(bin, &[args, &["--record", rec.to_str().unwrap()]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (lines, _) = ended_recording(rec);
    let kept = [&lines[..2], &[r#"{"end":{"frames":1}}"#.to_string()]].concat();
    fs::write(rec, kept.join("\n") + "\n").unwrap();
}

/// A recording of one sample replayed with an interval, where the first
/// sample only starts the run (vcpustat's and cxlstat's interval runs,
/// iostat-rs `-y`), has no report to give: it used to end with nothing on
/// standard output (cxlstat its column header, iostat-rs its banner) and
/// status 0, as if that were all the run reported. One line names the
/// sample and says what to do instead, status 1; a JSON document begun is
/// closed. The same recording replays without an interval, and iostat-rs's
/// first report (since boot) is the sample's own.
#[test]
fn a_one_sample_recording_replayed_with_an_interval_says_it_cannot_report_one() {
    let dir = scratch("one-sample");
    let root = dir.join("root");
    iostat_tree(&root, 0);
    let root = root.to_str().unwrap();
    let vcpustat_root = fixture("vcpustat/seed");
    let cxl_root = dir.join("cxl");
    crate::cxlstat_support::software_tree(&cxl_root, &[("cxl_pmu_mem0.0", 0)]);
    let cxl_root = cxl_root.to_str().unwrap();
    let counting = crate::cxlstat_support::perf_usable(
        "a_one_sample_recording_replayed_with_an_interval_says_it_cannot_report_one",
    );
    let mut cases = vec![
        (VCPUSTAT, vec!["--sysroot", &vcpustat_root], vec!["1", "3"]),
        (IOSTAT, vec!["--sysroot", root], vec!["-y", "1", "3"]),
    ];
    if counting {
        cases.push((
            CXLSTAT,
            vec!["--sysroot", cxl_root, "-e", "cpu_clock", "0.05", "2"],
            vec!["-e", "cpu_clock", "1", "3"],
        ));
    }
    for (bin, record, replay) in cases {
        let tool = Path::new(bin).file_name().unwrap().to_str().unwrap();
        let rec = dir.join(format!("{tool}.rec"));
        one_sample_recording(bin, &record, &rec);
        let path = rec.to_str().unwrap();
        let refused = format!(
            "{tool}: {path}:2: frame 0 is the recording's only sample, and a report of an \
             interval takes two (the first only starts the run): replay it without an interval \
             to report that sample\n"
        );
        let out = run(bin, &[&["--replay", path][..], &replay].concat());
        assert_eq!(out.status.code(), Some(1), "{tool}: {}", text(&out.stderr));
        assert_eq!(text(&out.stderr), refused, "{tool}");
        let json = run(
            bin,
            &[&["--replay", path, "-o", "json"][..], &replay].concat(),
        );
        assert_eq!(
            json.status.code(),
            Some(1),
            "{tool}: {}",
            text(&json.stderr)
        );
        assert_eq!(text(&json.stderr), refused, "{tool}");
        let doc: Result<serde_json::Value, _> = serde_json::from_slice(&json.stdout);
        assert!(doc.is_ok(), "{tool}: {}", text(&json.stdout));
        // Without an interval: the sample's report.
        let interval = replay.len() - 2;
        let once = run(
            bin,
            &[&["--replay", path][..], &replay[..interval]].concat(),
        );
        assert_eq!(
            once.status.code(),
            Some(0),
            "{tool}: {}",
            text(&once.stderr)
        );
        assert!(!once.stdout.is_empty(), "{tool}");
    }
    // iostat-rs without -y: the first report is the sample's own.
    let rec = dir.join("iostat-rs.rec");
    let out = run(IOSTAT, &["--replay", rec.to_str().unwrap(), "1", "3"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("\nsda "),
        "{}",
        text(&out.stdout)
    );
}
