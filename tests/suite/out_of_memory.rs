//! Out of memory, each program ends in one line naming itself and the limit,
//! with sysstat's status 4, not with Rust's abort (a SIGABRT and a core dump
//! after `memory allocation of N bytes failed`).
//!
//! The allocation that fails is made to: each program replays a recording of
//! its own whose first frame carries a 40 MB listing, under an address-space
//! limit of 24 MB, about twice what the programs take to start.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output};

use crate::scratch::scratch;

/// The address-space limit of the runs: above what a program takes to
/// start (11 to 12 MB), below the listing it is given.
const LIMIT_BYTES: u64 = 24_000_000;

/// An entry listing 3.2 million names, some 42 MB of JSON (a recording's
/// line limit is 64 MB). One name repeated: made name by name, in the
/// debug build, they took most of the test's 21 s.
fn padding_entry() -> String {
    let names = "\"n000000000\",".repeat(3_200_000);
    let names = names.strip_suffix(',').unwrap();
    let entry = format!("\"list /padding\":{{\"list\":[{names}]}},");
    assert!(entry.len() > 40_000_000 && entry.len() < 64 << 20);
    entry
}

/// `tests/fixtures/recordings/0ebb936/TOOL.rec` with `entry` added to its
/// first frame.
fn swollen_recording(tool: &str, entry: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/recordings/0ebb936/{tool}.rec",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = fs::read_to_string(path).unwrap();
    let entries = "\"entries\":{";
    let at = text.find(entries).expect("a frame with entries") + entries.len();
    format!("{}{entry}{}", &text[..at], &text[at..])
}

/// Gives the process `command` starts an address-space limit
/// (`ulimit -v`) of `bytes`, set in the child before it runs the program.
pub(crate) fn limit_address_space(command: &mut Command, bytes: u64) {
    let limit = libc::rlimit {
        rlim_cur: bytes,
        rlim_max: bytes,
    };
    // SAFETY: setrlimit is async-signal-safe and reads only `limit`, a copy.
    unsafe {
        command.pre_exec(move || {
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// `program --replay recording args` under an address-space limit of
/// [`LIMIT_BYTES`].
fn replay_under_the_limit(program: &str, recording: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(program);
    command.arg("--replay").arg(recording).args(args);
    limit_address_space(&mut command, LIMIT_BYTES);
    command.output().expect("the program starts")
}

#[test]
fn each_program_out_of_memory_ends_in_one_line_with_status_4() {
    let dir = scratch("out-of-memory");
    let padding = padding_entry();
    for (tool, program, args) in [
        (
            "iostat-rs",
            env!("CARGO_BIN_EXE_iostat-rs"),
            &["-x", "-p", "ALL"][..],
        ),
        ("vcpustat", env!("CARGO_BIN_EXE_vcpustat"), &[]),
        (
            "cxlstat",
            env!("CARGO_BIN_EXE_cxlstat"),
            &["-e", "cpu_clock"],
        ),
    ] {
        let recording = dir.join(format!("{tool}.rec"));
        fs::write(&recording, swollen_recording(tool, &padding)).unwrap();
        let out = replay_under_the_limit(program, &recording, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{tool}: {:?} {err}", out.status);
        let limit = format!(
            " bytes could not be allocated under an address-space limit (ulimit -v) of {} kB",
            LIMIT_BYTES / 1024
        );
        // A data-size limit the tests run under is named too.
        let (size, after) = err
            .strip_prefix(&format!("{tool}: out of memory: "))
            .and_then(|rest| rest.split_once(&limit))
            .unwrap_or_else(|| panic!("{tool}: {err:?}"));
        assert!(
            after == "\n" || after.starts_with(" and a data-size limit (ulimit -d) of "),
            "{tool}: {err:?}"
        );
        assert_eq!(err.lines().count(), 1, "{tool}: {err:?}");
        let size: u64 = size.parse().unwrap_or_else(|_| panic!("{tool}: {err:?}"));
        assert!(size > 0 && size < 1 << 30, "{tool}: {err:?}");
        // The same recording replays whole without the limit: the limit,
        // not the recording, ended the run.
        let whole = Command::new(program)
            .arg("--replay")
            .arg(&recording)
            .args(args)
            .output()
            .unwrap();
        assert!(
            whole.status.success(),
            "{tool}: {}",
            String::from_utf8_lossy(&whole.stderr)
        );
    }
}
