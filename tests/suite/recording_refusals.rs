//! Runs refused before their first sample, through the real programs: the
//! recording keeps what the run printed and its status, in its end line
//! alone, and every replay of it (from the file, a FIFO, with other
//! options) prints the same and exits with the same status, in the three
//! tools; so do recordings written to a FIFO or to standard output, and
//! nothing is removed. Recordings of no sample that earlier versions left
//! (a header alone) are refused with one line that says what they are.

use std::fs;
use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::process::Command;

use crate::hostile_files::{fifo_reader, mkfifo, trace_tree, vcpustat_tree};
use crate::recordings::{CXLSTAT, IOSTAT, VCPUSTAT, fixture, iostat_tree, run, scratch, text};

/// A run's exit status, standard output and standard error.
type Ended = (Option<i32>, String, String);

fn ended(out: &std::process::Output) -> Ended {
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

/// A refusal: the tool, its program, the options of the recorded run
/// (after `--sysroot` and `--record`), and of two replays of it.
struct Case {
    tool: &'static str,
    bin: &'static str,
    sysroot: String,
    args: Vec<&'static str>,
    views: [Vec<&'static str>; 2],
}

fn cases(dir: &Path) -> Vec<Case> {
    let io = dir.join("io");
    iostat_tree(&io, 0);
    let io = io.to_str().unwrap().to_string();
    // A kernel without the dispatch statistics: vcpustat refuses it.
    let bare = dir.join("bare");
    fs::create_dir_all(bare.join("proc")).unwrap();
    let bare = bare.to_str().unwrap().to_string();
    let cxl = fixture("cxl/qemu-two-cpmus");
    vec![
        Case {
            tool: "iostat-rs",
            bin: IOSTAT,
            sysroot: io.clone(),
            args: vec!["-x", "-j", "nosuchtype", "0.01", "2"],
            views: [
                vec!["-x", "-j", "nosuchtype", "1"],
                vec!["-d", "-o", "JSON"],
            ],
        },
        // Its refusal is sysstat's usage text, of several lines.
        Case {
            tool: "iostat-rs",
            bin: IOSTAT,
            sysroot: io,
            args: vec!["-x", "-f", "/nonexistent-dir", "0.01", "2"],
            views: [vec![], vec!["-o", "csv", "1"]],
        },
        Case {
            tool: "vcpustat",
            bin: VCPUSTAT,
            sysroot: bare,
            args: vec!["0.01", "2"],
            views: [vec!["0.01", "2"], vec!["-o", "json"]],
        },
        Case {
            tool: "cxlstat",
            bin: CXLSTAT,
            sysroot: cxl.clone(),
            args: vec!["-e", "nosuchevent", "0.01", "2"],
            views: [vec!["-e", "nosuchevent", "1"], vec!["--list"]],
        },
        // A command that cannot run: status 127, as a shell's.
        Case {
            tool: "cxlstat",
            bin: CXLSTAT,
            sysroot: cxl,
            args: vec!["-e", "clock_ticks", "--", "/nonexistent/command"],
            views: [vec![], vec!["-o", "json", "1"]],
        },
    ]
}

/// Runs `case` recording to `target`, with standard output to `stdout`
/// (or collected when `None`): how it ended.
fn record(case: &Case, target: &Path, stdout: Option<&Path>) -> Ended {
    let mut command = Command::new(case.bin);
    command
        .args(["--sysroot", &case.sysroot, "--record"])
        .arg(target)
        .args(&case.args)
        .env_clear()
        .env("TZ", "UTC")
        .env("LC_ALL", "C");
    if let Some(path) = stdout {
        command.stdout(fs::File::create(path).unwrap());
    }
    ended(&command.output().unwrap())
}

/// Replays `rec` with `view`, from the file, then through a FIFO: how
/// each ended.
fn replays(bin: &str, rec: &Path, view: &[&str]) -> [Ended; 2] {
    let from_file = ended(&run(
        bin,
        &[&["--replay", rec.to_str().unwrap()][..], view].concat(),
    ));
    let fifo = rec.with_extension("fifo");
    let _ = fs::remove_file(&fifo);
    mkfifo(&fifo);
    let writer = {
        let (fifo, data) = (fifo.clone(), fs::read(rec).unwrap());
        std::thread::spawn(move || fs::write(fifo, data).unwrap())
    };
    let from_fifo = ended(&run(
        bin,
        &[&["--replay", fifo.to_str().unwrap()][..], view].concat(),
    ));
    writer.join().unwrap();
    fs::remove_file(&fifo).unwrap();
    [from_file, from_fifo]
}

/// The end line of a recording refused with `status` after printing
/// `stderr`, as docs/recording.md spells it.
fn refused_end_line(status: i32, stderr: &str) -> String {
    let stderr = serde_json::to_string(stderr).unwrap();
    format!("{{\"end\":{{\"frames\":0,\"refused\":{{\"status\":{status},\"stderr\":{stderr}}}}}}}")
}

/// Checks that `recording` is a version-2 header of `tool` and the end
/// line of the refusal `live`, then that every replay ends as `live`.
fn check_refusal(case: &Case, recording: &Path, live: &Ended) {
    let what = format!("{} {:?}", case.tool, case.args);
    let lines: Vec<String> = fs::read_to_string(recording)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(lines.len(), 2, "{what}: {lines:?}");
    let header = format!(
        r#"{{"format":"hwstat-recording","version":2,"tool":"{}","#,
        case.tool
    );
    assert!(lines[0].starts_with(&header), "{what}: {}", lines[0]);
    let status = live.0.unwrap();
    assert_eq!(lines[1], refused_end_line(status, &live.2), "{what}");
    for view in &case.views {
        for replayed in replays(case.bin, recording, view) {
            assert_eq!(&replayed, live, "{what}, replayed with {view:?}");
        }
    }
}

#[test]
fn a_run_refused_before_its_first_sample_replays_as_it_ended() {
    let dir = scratch("refused");
    for case in cases(&dir) {
        let what = format!("{} {:?}", case.tool, case.args);
        let rec = dir.join(format!("{}.rec", case.tool));
        // Over an older file of the user's: it is replaced, not removed.
        fs::write(&rec, "previous\n").unwrap();
        let live = record(&case, &rec, None);
        assert_ne!(live.0, Some(0), "{what}: {live:?}");
        assert_eq!(live.1, "", "{what}");
        assert!(
            live.2.ends_with('\n') && live.2.len() > 1,
            "{what}: {live:?}"
        );
        check_refusal(&case, &rec, &live);
        fs::remove_file(&rec).unwrap();
    }
}

#[test]
fn a_refusal_recorded_to_a_fifo_or_standard_output_replays_the_same() {
    let dir = scratch("refused-pipes");
    for case in cases(&dir) {
        let what = format!("{} {:?}", case.tool, case.args);
        // To standard output, which a file takes.
        let kept = dir.join("stdout.rec");
        let live = record(&case, Path::new("/dev/stdout"), Some(&kept));
        assert_ne!(live.0, Some(0), "{what}: {live:?}");
        check_refusal(&case, &kept, &live);
        // To a FIFO, whose reader is there first (the programs refuse a
        // FIFO nobody reads): the FIFO stays.
        let fifo = dir.join("target.fifo");
        mkfifo(&fifo);
        let mut reader = fifo_reader(&fifo);
        let live = record(&case, &fifo, None);
        assert_ne!(live.0, Some(0), "{what}: {live:?}");
        // The run has ended: what it wrote is all in the pipe.
        let mut data = Vec::new();
        reader.read_to_end(&mut data).unwrap();
        let copied = dir.join("fifo.rec");
        fs::write(&copied, data).unwrap();
        assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo(), "{what}");
        check_refusal(&case, &copied, &live);
        for file in [&kept, &fifo, &copied] {
            fs::remove_file(file).unwrap();
        }
    }
}

/// The header of the `tool` recording an earlier version wrote, of
/// version 1 (tests/fixtures/recordings/0ebb936).
fn version_1_header(tool: &str) -> String {
    let old = fixture(&format!("recordings/0ebb936/{tool}.rec"));
    let text = fs::read_to_string(old).unwrap();
    let header = text.lines().next().unwrap().to_string();
    assert!(header.contains(r#""version":1,"#), "{header}");
    header
}

#[test]
fn a_recording_of_no_sample_from_an_earlier_version_is_refused_with_one_line() {
    let dir = scratch("no-sample");
    for (tool, bin) in [
        ("iostat-rs", IOSTAT),
        ("vcpustat", VCPUSTAT),
        ("cxlstat", CXLSTAT),
    ] {
        let v1 = version_1_header(tool);
        let v2 = v1.replace(r#""version":1,"#, r#""version":2,"#);
        let rec = dir.join(format!("{tool}.rec"));
        for (text, why) in [
            // What version 1 left of a refused run.
            (
                format!("{v1}\n"),
                "the recording holds no sample: its run ended before its first sample \
                 (refused, stopped or killed), and a recording of version 1 does not say why",
            ),
            // What version 2 left of one before it kept the refusal, and
            // of a run killed before its first sample.
            (
                format!("{v2}\n"),
                "the recording holds no sample and no end line: its run was killed (or out \
                 of space) before its first sample, or refused there by an earlier version, \
                 which did not record why",
            ),
        ] {
            fs::write(&rec, text).unwrap();
            let want = |file: &Path| {
                (
                    Some(1),
                    String::new(),
                    format!("{tool}: {}:2: {why}\n", file.display()),
                )
            };
            let [from_file, from_fifo] = replays(bin, &rec, &[]);
            assert_eq!(from_file, want(&rec));
            assert_eq!(from_fifo, want(&rec.with_extension("fifo")));
        }
    }
}

/// A recording to standard output (`-`, `/dev/stdout`) when the program
/// started with it closed (`>&-`): descriptor 1 is `/dev/null` by the time
/// the recording opens (the programs' start opens it there), so the
/// recording would go nowhere while the run ended with status 0. Refused
/// before anything runs, with one line that says why, in each tool and in
/// `vcpustat trace record -w -`; the same runs with standard output open
/// are recorded.
#[test]
fn a_recording_to_a_closed_standard_output_is_refused_not_lost() {
    let dir = scratch("closed-stdout");
    let io = dir.join("io");
    iostat_tree(&io, 0);
    let io = io.to_str().unwrap();
    let vs = vcpustat_tree(&dir);
    let vs = vs.to_str().unwrap();
    let trace = trace_tree(&dir.join("trace"));
    let trace = trace.to_str().unwrap();
    let runs: [(&str, Vec<&str>); 5] = [
        (IOSTAT, vec!["--sysroot", io, "--record", "-", "0.01", "2"]),
        (
            IOSTAT,
            vec![
                "--sysroot",
                io,
                "--record",
                "/dev/stdout",
                "-x",
                "0.01",
                "2",
            ],
        ),
        (
            VCPUSTAT,
            vec!["--sysroot", vs, "--record", "-", "0.01", "2"],
        ),
        (
            VCPUSTAT,
            vec!["--sysroot", vs, "--record", "/dev/fd/1", "0.01", "2"],
        ),
        (
            VCPUSTAT,
            vec![
                "trace",
                "record",
                "--sysroot",
                trace,
                "--duration",
                "0.1s",
                "-w",
                "-",
            ],
        ),
    ];
    for (bin, args) in &runs {
        let open = run(bin, args);
        assert!(
            open.status.success() && !open.stdout.is_empty(),
            "{bin} {args:?} with standard output open: {:?} {}",
            open.status,
            text(&open.stderr)
        );
        // The shell closes descriptor 1, then runs the program in its place.
        let closed = Command::new("sh")
            .arg("-c")
            .arg(r#"exec "$@" >&-"#)
            .arg("sh")
            .arg(bin)
            .args(args)
            .env_clear()
            .env("TZ", "UTC")
            .env("LC_ALL", "C")
            .output()
            .unwrap();
        let stderr = text(&closed.stderr);
        let program = Path::new(bin).file_name().unwrap().to_str().unwrap();
        assert_eq!(closed.status.code(), Some(1), "{bin} {args:?}: {stderr}");
        assert!(
            stderr.starts_with(&format!("{program}: "))
                && stderr.contains("standard output was closed when the program started")
                && stderr.ends_with("point standard output at a file or a pipe\n")
                && stderr.lines().count() == 1,
            "{bin} {args:?}: {stderr}"
        );
    }
}
