//! Bad kernel files give one short line naming the file and the problem:
//! the contents are quoted as a short escaped prefix, never echoed whole.
//! So does a `--sysroot` that is not a directory, or none, in every tool,
//! and a `--help` or `--version` that cannot be written.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::scratch::{Scratch, scratch};

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            copy_tree(&entry.path(), &target);
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(entry.path()).unwrap(), &target).unwrap();
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A private copy of the two-CPMU CXL fixture, removed when the test ends.
fn cxl_tree(name: &str) -> Scratch {
    let dir = scratch(&format!("errlines-{name}"));
    copy_tree(
        Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/cxl/qemu-two-cpmus"
        )),
        &dir,
    );
    dir
}

const PMU: &str = "sys/bus/event_source/devices/cxl_pmu_mem0.0";

#[test]
fn bad_cxl_pmu_files_give_one_short_escaped_line() {
    let root = cxl_tree("cxl");
    let big = "x".repeat(10_000_000);
    let medium = "x".repeat(100_000);
    let medium_term = format!("config={}", "x".repeat(100_000 - 7));
    let cases: [(&str, &[u8], &str); 7] = [
        // Past the size a sysfs file can have, the read stops at the cap.
        (
            "events/h2d_req_snpdata",
            big.as_bytes(),
            "larger than 1024 KiB, more than any kernel file of its kind holds",
        ),
        // Under it, the contents are quoted short.
        (
            "events/h2d_req_snpdata",
            medium_term.as_bytes(),
            "...\" (100000 bytes): expected a number after '='",
        ),
        (
            "events/h2d_req_snpdata",
            b"",
            "expected terms such as config=0x1e98000000000001, found an empty file",
        ),
        (
            "events/h2d_req_snpdata",
            b"garbage\x1b]0;owned\x07",
            "\"garbage\\x1b]0;owned\\x07\": expected NAME or NAME=VALUE",
        ),
        (
            "format/edge",
            medium.as_bytes(),
            "expected configN:LOW-HIGH[,LOW-HIGH...] with bits 0-63, found \"xxxxx",
        ),
        (
            "type",
            b"ten\n",
            "expected a PMU type number, found \"ten\"",
        ),
        (
            "cpumask",
            b"\x1b[2J",
            "expected a CPU list such as 0 or 2-3, found \"\\x1b[2J\"",
        ),
    ];
    for (file, contents, want) in cases {
        let path = root.join(PMU).join(file);
        let saved = fs::read(&path).unwrap();
        fs::write(&path, contents).unwrap();
        let run = |args: &[&str]| {
            Command::new(env!("CARGO_BIN_EXE_cxlstat"))
                .args(["--sysroot", root.to_str().unwrap()])
                .args(args)
                .output()
                .unwrap()
        };
        // Not named, the PMU is left out with the reason as a warning.
        let listed = run(&["--list-events"]);
        let out = run(&["--list-events", "cxl_pmu_mem0.0"]);
        fs::write(&path, saved).unwrap();
        let warning = String::from_utf8_lossy(&listed.stderr);
        assert!(listed.status.success(), "{file}: {warning}");
        assert_eq!(warning.lines().count(), 1, "{file}: {warning}");
        assert!(
            warning.starts_with("cxlstat: warning: cxl_pmu_mem0.0 is left out: ")
                && warning.contains(want)
                && !warning.contains('\x1b'),
            "{file}: {warning:?}"
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{file}: {err}");
        assert_eq!(err.lines().count(), 1, "{file}: {err}");
        assert!(err.len() < 300, "{file}: {} bytes: {err:.300}", err.len());
        assert!(
            err.starts_with("cxlstat: ") && err.contains(&format!("/{PMU}/{file}: ")),
            "{file}: {err}"
        );
        assert!(err.contains(want), "{file}: want {want:?} in {err:?}");
        assert!(
            !err.contains('\x1b') && !err.contains('\x07'),
            "{file}: {err:?}"
        );
    }
}

/// A `--sysroot` typed wrong is named as the option, the same way in every
/// tool, not reported as a kernel without the feature; nothing is written
/// (`trace record -w` creates no file).
#[test]
fn a_sysroot_that_is_not_a_directory_is_named_by_every_tool() {
    let written = std::env::temp_dir().join(format!("hwstat-sysroot-{}.dtl", std::process::id()));
    for (root, problem) in [
        ("/nonexistent-root", "no such directory"),
        ("/etc/hostname", "not a directory"),
    ] {
        let runs: [(&str, Vec<&str>); 4] = [
            (env!("CARGO_BIN_EXE_iostat-rs"), vec!["-x", "1", "1"]),
            (env!("CARGO_BIN_EXE_vcpustat"), vec!["1", "1"]),
            (env!("CARGO_BIN_EXE_cxlstat"), vec!["--list"]),
            (
                env!("CARGO_BIN_EXE_vcpustat"),
                vec![
                    "trace",
                    "record",
                    "--duration",
                    "1s",
                    "-w",
                    written.to_str().unwrap(),
                ],
            ),
        ];
        for (program, args) in runs {
            let (before, after) = args.split_at(if args[0] == "trace" { 2 } else { 0 });
            let out = Command::new(program)
                .args(before)
                .args(["--sysroot", root])
                .args(after)
                .output()
                .unwrap();
            let name = Path::new(program).file_name().unwrap().to_str().unwrap();
            assert_eq!(out.status.code(), Some(1), "{name} {args:?}");
            assert_eq!(
                String::from_utf8_lossy(&out.stderr),
                format!("{name}: --sysroot {root}: {problem}\n"),
                "{args:?}"
            );
            assert!(out.stdout.is_empty());
        }
    }
    assert!(!written.exists());
}

/// An option followed by another where its value was expected is told
/// in the same words by the three tools, status 2, nothing run: clap said
/// of `--record -n` that no value was supplied, iostat-rs what it found.
#[test]
fn an_option_where_a_value_was_expected_is_told_alike() {
    let runs: [(&str, &[&str], &str); 9] = [
        (
            env!("CARGO_BIN_EXE_iostat-rs"),
            &["--record", "-d", "1", "1"],
            "--record -d: expected a FILE, found an option (a name that starts with - is \
             written ./-d or --record=-d)",
        ),
        (
            env!("CARGO_BIN_EXE_vcpustat"),
            &["--record", "-n", "1", "1"],
            "--record -n: expected a FILE, found an option (a name that starts with - is \
             written ./-n or --record=-n)",
        ),
        (
            env!("CARGO_BIN_EXE_vcpustat"),
            &["trace", "report", "--svg", "-o", "x.dtl"],
            "--svg -o: expected a FILE, found an option (a name that starts with - is \
             written ./-o or --svg=-o)",
        ),
        (
            env!("CARGO_BIN_EXE_cxlstat"),
            &["--record", "-a", "-e", "clock_ticks"],
            "--record -a: expected a FILE, found an option (a name that starts with - is \
             written ./-a or --record=-a)",
        ),
        (
            env!("CARGO_BIN_EXE_cxlstat"),
            &["-e", "-a", "1"],
            "-e -a: expected EVENTS, found an option (a value that starts with - is written \
             --event=-a)",
        ),
        // The second -e, which clap refused: it takes -1 as a value.
        (
            env!("CARGO_BIN_EXE_cxlstat"),
            &["-e", "-1", "-e", "-a"],
            "-e -a: expected EVENTS, found an option (a value that starts with - is written \
             --event=-a)",
        ),
        // An option none of the tool's, which clap names alone.
        (
            env!("CARGO_BIN_EXE_vcpustat"),
            &["--record", "-Q"],
            "--record -Q: expected a FILE, found an option (a name that starts with - is \
             written ./-Q or --record=-Q)",
        ),
        (
            env!("CARGO_BIN_EXE_vcpustat"),
            &["trace", "record", "-w", "-Q"],
            "-w -Q: expected a FILE, found an option (a name that starts with - is written \
             ./-Q or --write=-Q)",
        ),
        // After an option whose value may be left out, it is unknown.
        (
            env!("CARGO_BIN_EXE_cxlstat"),
            &["--list-events", "-Q"],
            "unexpected argument '-Q' found (see 'cxlstat --help')",
        ),
    ];
    for (program, args, message) in runs {
        let out = Command::new(program).args(args).output().unwrap();
        let name = Path::new(program).file_name().unwrap().to_str().unwrap();
        assert_eq!(out.status.code(), Some(2), "{name} {args:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!("{name}: {message}\n"),
            "{name} {args:?}"
        );
        assert!(out.stdout.is_empty(), "{name} {args:?}");
    }
}

/// `--help` and `--version` on a full disk (`>/dev/full`): one line saying
/// the output could not be written, and status 1, as for a report. The
/// tools whose command line clap parses ignored the failure and exited 0;
/// a reader that went away (a closed pipe) is still no error.
#[test]
fn help_and_version_that_cannot_be_written_fail() {
    use std::os::fd::{FromRawFd, OwnedFd};
    let iostat = env!("CARGO_BIN_EXE_iostat-rs");
    let vcpustat = env!("CARGO_BIN_EXE_vcpustat");
    let cxlstat = env!("CARGO_BIN_EXE_cxlstat");
    for (program, tool, args) in [
        (iostat, "iostat-rs", &["--help"][..]),
        (iostat, "iostat-rs", &["-V"][..]),
        (vcpustat, "vcpustat", &["--help"][..]),
        (vcpustat, "vcpustat", &["--version"][..]),
        (vcpustat, "vcpustat", &["trace", "report", "--help"][..]),
        (cxlstat, "cxlstat", &["--help"][..]),
        (cxlstat, "cxlstat", &["--version"][..]),
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = Command::new(program)
            .args(args)
            .stdout(full)
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!("{tool}: cannot write output: No space left on device (os error 28)\n"),
            "{tool} {args:?}"
        );
        assert_eq!(out.status.code(), Some(1), "{tool} {args:?}");
        // A pipe whose reader is gone before the first write.
        let mut fds = [0; 2];
        // SAFETY: pipe2 fills two descriptors, which we then own.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: descriptors pipe2 just opened, owned here only.
        let (reader, writer) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        drop(reader);
        let out = Command::new(program)
            .args(args)
            .stdout(writer)
            .output()
            .unwrap();
        assert_eq!(
            (out.status.code(), String::from_utf8_lossy(&out.stderr)),
            (Some(0), "".into()),
            "{tool} {args:?}"
        );
    }
}

/// Standard error on a full disk (`2>/dev/full`): messages are lost, not
/// the run. `eprintln!` panicked there, so every error ended with a
/// panic's status 101 and a warning ended a run that would succeed.
#[test]
fn a_standard_error_that_takes_nothing_changes_no_exit_status() {
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    let run = |program: &str, args: &[&str]| {
        Command::new(program)
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(full())
            .output()
            .unwrap()
    };
    let iostat = env!("CARGO_BIN_EXE_iostat-rs");
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/cxl/qemu-two-cpmus"
    );
    for (program, args, status) in [
        (iostat, &["-f", "/nonexistent-hwstat"][..], 1),
        (iostat, &["-Q"][..], 1),
        (
            env!("CARGO_BIN_EXE_cxlstat"),
            &["--sysroot", fixture, "-e", "nosuch"][..],
            1,
        ),
        (
            env!("CARGO_BIN_EXE_vcpustat"),
            &["--sysroot", "/nonexistent-hwstat"][..],
            1,
        ),
    ] {
        assert_eq!(
            run(program, args).status.code(),
            Some(status),
            "{program} {args:?}"
        );
    }
    // A warning (a recording whose last frame is cut) on the way to a
    // complete report.
    let dir = scratch("errlines-full");
    let rec = dir.join("cut.rec");
    let recorded = run(
        iostat,
        &["--record", rec.to_str().unwrap(), "-x", "0.01", "3"],
    );
    assert!(recorded.status.success());
    let bytes = fs::read(&rec).unwrap();
    fs::write(&rec, &bytes[..bytes.len() - 20]).unwrap();
    let out = run(
        iostat,
        &["--replay", rec.to_str().unwrap(), "-o", "JSON", "0.01"],
    );
    assert_eq!(out.status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(doc["sysstat"]["hosts"][0]["statistics"].is_array(), "{doc}");
}

/// A program started with a standard descriptor closed where `/dev/null`
/// cannot be opened (here a `/dev` without it, in a private mount
/// namespace) stops in one line that starts with its name, as every other
/// error line does, with status 1: the line had no name.
#[test]
fn no_dev_null_for_a_closed_descriptor_is_one_line_naming_the_program() {
    let test = "no_dev_null_for_a_closed_descriptor_is_one_line_naming_the_program";
    if !crate::skip::runs_unless(test, crate::namespace::unavailable()) {
        return;
    }
    for (name, program) in [
        ("iostat-rs", env!("CARGO_BIN_EXE_iostat-rs")),
        ("vcpustat", env!("CARGO_BIN_EXE_vcpustat")),
        ("cxlstat", env!("CARGO_BIN_EXE_cxlstat")),
    ] {
        let out = crate::namespace::command(
            "mount -t tmpfs hwstat-no-null /dev && exec 0<&-",
            program,
            &["--version"],
        )
        .output()
        .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!(
                "{name}: cannot open /dev/null for a closed standard descriptor: \
                 No such file or directory (os error 2)\n"
            )
        );
        assert_eq!(out.status.code(), Some(1), "{name}");
        assert!(out.stdout.is_empty(), "{name}");
    }
}
