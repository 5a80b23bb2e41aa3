//! What the command after `--` sees, against what perf stat's workload
//! sees: signals at their default, no descriptor of cxlstat's own, and a
//! terminal's Ctrl-C once. (Its open-file limit: cxlstat_counting; its
//! capabilities: cxlstat_privileges.)

use crate::cxlstat_support;

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::procstate::{
    KillOnDrop, await_asleep_again, await_child, await_delivered, await_exec, await_handler,
    await_polling, sleeps, wait_with_timeout,
};
use crate::skip;
use cxlstat_support::{cxlstat, perf_usable, scratch, software_tree, stderr, stdout};

/// A tree with one PMU, on CPU 0.
fn tree(name: &str) -> cxlstat_support::Scratch {
    let root = scratch(name);
    software_tree(&root, &[("cxl_pmu_mem0.0", 0)]);
    root
}

/// The command and its arguments reach `exec` as the bytes given, as perf
/// stat's do, also where they are not UTF-8: a program path and an
/// argument with byte 0xff; so does a `-x` separator, byte 0xfe here.
/// cxlstat used to refuse any such argument.
#[test]
fn the_command_gets_its_arguments_as_given() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    if !perf_usable("the_command_gets_its_arguments_as_given") {
        return;
    }
    let root = tree("workload_bytes");
    let shell = root.join(OsStr::from_bytes(b"sh\xff"));
    std::os::unix::fs::symlink("/bin/sh", &shell).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cxlstat"))
        .args(["--sysroot", root.to_str().unwrap(), "-e", "cpu_clock", "-x"])
        .arg(OsStr::from_bytes(b"\xfe"))
        .arg("--")
        .arg(&shell)
        .args(["-c", "printf %s \"$1\" | od -An -tx1", "sh"])
        .arg(OsStr::from_bytes(b"a\xff\xfe"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let mut lines = out.stdout.split(|&b| b == b'\n');
    let bytes = String::from_utf8_lossy(lines.next().unwrap_or_default()).into_owned();
    assert_eq!(
        bytes.split_whitespace().collect::<Vec<_>>(),
        ["61", "ff", "fe"],
        "{bytes}"
    );
    // perf's fields: COUNT, UNIT, EVENT, RUN_NS, RUNNING%, and two empty.
    let report = lines.next().unwrap_or_default();
    let fields: Vec<&[u8]> = report.split(|&b| b == 0xfe).collect();
    assert_eq!(fields.len(), 7, "{}", String::from_utf8_lossy(report));
    assert!(
        fields[2].starts_with(b"cpu_clock"),
        "{}",
        String::from_utf8_lossy(report)
    );
}

/// The value of the `/proc/<pid>/status` line `field` (a signal mask) in
/// `text`.
fn mask(text: &str, field: &str) -> u64 {
    crate::procstate::status_mask(text, field)
        .unwrap_or_else(|| panic!("no {field} line in {text}"))
}

/// The command blocks no signal and ignores none of glibc's own (32 and
/// 33, which glibc's posix_spawn ignores in the child it starts, and
/// exec keeps ignored), as perf stat's workload, which perf forks and
/// execs; and it holds none of cxlstat's descriptors: the counters, the
/// recording, the stop signals' eventfd, the command's pidfd.
#[test]
fn the_command_starts_with_default_signals_and_no_descriptor_of_cxlstat() {
    if !perf_usable("the_command_starts_with_default_signals") {
        return;
    }
    let root = tree("workload_state");
    let recording = root.join("run.rec");
    // cxlstat itself is started by posix_spawn here (std's Command): it
    // has signals 32 and 33 ignored, which its command must not inherit.
    let out = cxlstat(&[
        "--sysroot",
        root.to_str().unwrap(),
        "-e",
        "cpu_clock,context_switches",
        "-I",
        "10000",
        "--record",
        recording.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "grep -E '^Sig(Blk|Ign):' /proc/self/status; echo fds; ls -l /proc/self/fd",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(mask(&text, "SigBlk:"), 0, "{text}");
    let glibc_own = 0b11 << 31;
    assert_eq!(mask(&text, "SigIgn:") & glibc_own, 0, "{text}");
    // What the command holds beside the descriptors it was given (cargo's
    // and the caller's may be among those): nothing of cxlstat's.
    let fds: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "fds")
        .skip(1)
        .take_while(|l| !l.starts_with('#'))
        .collect();
    assert!(fds.len() >= 4, "{text}");
    for cxlstat_own in ["perf_event", "eventfd", "pidfd", "run.rec"] {
        assert!(!fds.iter().any(|l| l.contains(cxlstat_own)), "{text}");
    }
}

/// Builds `tests/fixtures/cxl/workload/count_sigints.c` into `dir`; `None`
/// (after saying why) without a C compiler.
fn sigint_counter(dir: &Path, test: &str) -> Option<PathBuf> {
    let source =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cxl/workload/count_sigints.c");
    let built = dir.join("count_sigints");
    match Command::new("cc")
        .arg("-o")
        .arg(&built)
        .arg(&source)
        .status()
    {
        Ok(status) if status.success() => Some(built),
        Ok(status) => panic!("cc {}: {status}", source.display()),
        Err(e) => {
            skip::skip(
                test,
                &format!("no C compiler (cc: {e}): apt-get install gcc"),
            );
            None
        }
    }
}

/// Ctrl-C on the terminal reaches the command once, as under perf stat: the
/// kernel sends it to the whole foreground process group, cxlstat and its
/// command, and cxlstat passes it on only to a command that left that
/// group (it passed the terminal's on always: the command got SIGINT
/// twice; passing it on never would leave a command that left the group
/// and cxlstat waiting). A `kill -INT` of cxlstat alone is passed on.
#[test]
fn a_terminals_ctrl_c_reaches_the_command_once() {
    const TEST: &str = "a_terminals_ctrl_c_reaches_the_command_once";
    if !perf_usable(TEST) {
        return;
    }
    let root = tree("workload_ctrl_c");
    let Some(counter) = sigint_counter(&root, TEST) else {
        return;
    };
    let end = [ctrl_c, end_counter];
    assert_eq!(sigints(&root, &counter, "stay", &end), "SIGINT x 1\n");
    assert_eq!(sigints(&root, &counter, "leave", &end), "SIGINT x 1\n");
    let end = [kill_int, end_counter];
    assert_eq!(sigints(&root, &counter, "stay", &end), "SIGINT x 1\n");
}

/// Every stop signal cxlstat should pass on is, once, also after one it
/// held back or passed on already: cxlstat waited once for a signal, then
/// only for the command, so that after a terminal's Ctrl-C the command
/// handled and outlived, `kill -TERM` of cxlstat left both waiting (the
/// command never got it), and a second `kill -INT` did not reach it.
#[test]
fn every_stop_signal_after_the_first_is_passed_on_once() {
    const TEST: &str = "every_stop_signal_after_the_first_is_passed_on_once";
    if !perf_usable(TEST) {
        return;
    }
    let root = tree("workload_signals");
    let Some(counter) = sigint_counter(&root, TEST) else {
        return;
    };
    let steps = [ctrl_c, term_cxlstat];
    assert_eq!(sigints(&root, &counter, "stay", &steps), "SIGINT x 1\n");
    let steps = [kill_int, kill_int, term_cxlstat];
    assert_eq!(sigints(&root, &counter, "stay", &steps), "SIGINT x 2\n");
}

/// Something done to a run of [`sigints`]: given cxlstat's pid, the
/// counter's and the terminal.
type Step = fn(u32, u32, &mut std::fs::File);

/// The terminal's interrupt character: SIGINT to the foreground group.
fn ctrl_c(_: u32, _: u32, terminal: &mut std::fs::File) {
    terminal.write_all(b"\x03").unwrap();
}

/// `kill -INT` of cxlstat alone.
fn kill_int(cxlstat: u32, _: u32, _: &mut std::fs::File) {
    // SAFETY: kill(2) of our own child.
    assert_eq!(unsafe { libc::kill(cxlstat as i32, libc::SIGINT) }, 0);
}

/// `kill -TERM` of cxlstat alone, which it passes on: the counter ends.
fn term_cxlstat(cxlstat: u32, _: u32, _: &mut std::fs::File) {
    // SAFETY: kill(2) of our own child.
    assert_eq!(unsafe { libc::kill(cxlstat as i32, libc::SIGTERM) }, 0);
}

/// SIGTERM to the counter alone: it ends.
fn end_counter(_: u32, counter: u32, _: &mut std::fs::File) {
    // SAFETY: kill(2) of cxlstat's child, which cxlstat has not reaped.
    assert_eq!(unsafe { libc::kill(counter as i32, libc::SIGTERM) }, 0);
}

/// How long the counter and cxlstat may take to end after the last step.
const END_LIMIT: Duration = Duration::from_secs(20);

/// Runs `cxlstat -- COUNTER GROUP` (`stay` in cxlstat's process group, or
/// `leave` it) in a session of its own on a pseudo-terminal and, once both
/// wait, takes `steps`, each once cxlstat has dealt with the one before
/// (passed its signal on or not) and waits again; the last must end the
/// counter, and both then end within [`END_LIMIT`]: what the counter
/// printed.
fn sigints(root: &Path, counter: &Path, group: &str, steps: &[Step]) -> String {
    let (master, slave) = crate::pipes::pseudo_terminal();
    let mut command = Command::new(env!("CARGO_BIN_EXE_cxlstat"));
    command
        .args(["--sysroot", root.to_str().unwrap(), "-e", "cpu_clock", "--"])
        .arg(counter)
        .arg(group)
        .stdin(Stdio::from(slave))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setsid(2) and ioctl(2), async-signal-safe, on standard input.
    unsafe {
        command.pre_exec(|| {
            // A session of its own whose controlling terminal is standard
            // input: cxlstat's process group is the terminal's foreground.
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    };
    let mut child = KillOnDrop(command.spawn().expect("cxlstat starts"));
    let pid = child.0.id();
    await_child(pid);
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap();
    let program = counter.canonicalize().unwrap();
    let counter: u32 = children.split_whitespace().next().unwrap().parse().unwrap();
    // Until it calls exec, cxlstat's child has cxlstat's handlers, SIGINT's
    // among them: a Ctrl-C just after that killed the counter before its
    // own handler came, and cxlstat ended with it (once in some 15 runs
    // of the suite, and in session 49's).
    await_exec(counter, &program);
    await_handler(counter, libc::SIGINT);
    await_polling(pid);
    // The terminal stays open: closing it would hang it up.
    let mut terminal = std::fs::File::from(master);
    let (last, before) = steps.split_last().expect("a last step");
    for step in before {
        // Once cxlstat sleeps again, it has passed the signal on or not;
        // once the counter has no SIGINT pending, it has counted one it
        // got, and the next step's cannot merge with it.
        let asleep = sleeps(pid);
        step(pid, counter, &mut terminal);
        await_asleep_again(pid, asleep);
        await_delivered(counter, libc::SIGINT);
    }
    let ended = Instant::now();
    last(pid, counter, &mut terminal);
    while child.0.try_wait().unwrap().is_none() {
        if ended.elapsed() > END_LIMIT {
            // SAFETY: kill(2) of cxlstat's child, which cxlstat, still
            // running, has not reaped: the counter would outlive the test.
            unsafe { libc::kill(counter as i32, libc::SIGKILL) };
            panic!("the counter and cxlstat did not end within {END_LIMIT:?} of the last step");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let status = child.0.wait().unwrap();
    // What both print, a few lines, fits in the pipes until cxlstat ends.
    let (mut text, mut errors) = (String::new(), String::new());
    child
        .0
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    child
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut errors)
        .unwrap();
    assert!(status.success(), "{status:?}: {text}{errors}");
    text.lines()
        .next()
        .map(|l| format!("{l}\n"))
        .unwrap_or_default()
}

/// A stop signal the kernel sends to cxlstat alone is passed on, as one a
/// process sends: only a terminal's Ctrl-C and `Ctrl-\` reach the whole
/// foreground group. Here an alarm set before exec (timers survive it, as
/// a CPU time limit's SIGXCPU does): the kernel's SIGALRM, `si_code`
/// SI_KERNEL, ends cxlstat's wait and the command with it, not 600 s later.
#[test]
fn a_kernel_signal_to_cxlstat_alone_is_passed_on() {
    const TEST: &str = "a_kernel_signal_to_cxlstat_alone_is_passed_on";
    if !perf_usable(TEST) {
        return;
    }
    let root = tree("workload_alarm");
    let mut command = Command::new(env!("CARGO_BIN_EXE_cxlstat"));
    command
        .args(["--sysroot", root.to_str().unwrap(), "-e", "cpu_clock"])
        .args(["--", "sleep", "600"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: alarm(2) only, async-signal-safe, in the child before exec.
    unsafe {
        command.pre_exec(|| {
            libc::alarm(2);
            Ok(())
        })
    };
    let mut child = KillOnDrop(command.spawn().expect("cxlstat starts"));
    let status = wait_with_timeout(&mut child.0, Duration::from_secs(120), "cxlstat");
    // The command's status, as a shell shows it: 128 + SIGALRM.
    assert_eq!(status.code(), Some(128 + libc::SIGALRM), "{status:?}");
}

/// A reader that goes away (`cxlstat -I 100 -- make | head -1`) ends the
/// output, not the command: cxlstat waits for it and returns its status,
/// where perf stat dies of SIGPIPE and leaves the command running with
/// its status lost. So does a reader gone before the one report of a run
/// without `-I`.
#[test]
fn a_reader_gone_leaves_the_command_its_end_and_its_status() {
    const TEST: &str = "a_reader_gone_leaves_the_command_its_end_and_its_status";
    if !perf_usable(TEST) {
        return;
    }
    let root = tree("workload_reader_gone");
    let finished = root.join("finished");
    let script = format!("sleep 1; : > {}; exit 5", finished.display());
    let run = |interval: &[&str], stdout: Stdio| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_cxlstat"));
        command
            .args(["--sysroot", root.to_str().unwrap(), "-e", "cpu_clock"])
            .args(interval)
            .args(["--", "sh", "-c", &script])
            .stdout(stdout)
            .stderr(Stdio::piped());
        KillOnDrop(command.spawn().expect("cxlstat starts"))
    };

    // The status and standard error of cxlstat, which must not end
    // before its command.
    let ended = |mut child: KillOnDrop, case: &str| {
        let status = wait_with_timeout(&mut child.0, Duration::from_secs(60), "cxlstat");
        assert!(
            finished.exists(),
            "{case}: cxlstat ended before its command did"
        );
        std::fs::remove_file(&finished).unwrap();
        let mut errors = String::new();
        let mut stderr = child.0.stderr.take().unwrap();
        stderr.read_to_string(&mut errors).unwrap();
        (status.code(), errors)
    };
    // The reader leaves after the first byte of the output.
    let read_one_byte = |mut child: KillOnDrop| {
        let mut reader = child.0.stdout.take().unwrap();
        reader.read_exact(&mut [0u8; 1]).expect("a first byte");
        child
    };

    let child = read_one_byte(run(&["-I", "100"], Stdio::piped()));
    assert_eq!(ended(child, "-I"), (Some(5), String::new()));
    // Without -I, and with charts, which go on to the command's end: a
    // reader gone before the first report took the chart's samples with
    // it ("no chart written") and made the status 1.
    let chart = root.join("run.svg");
    for args in [&[][..], &["-I", "100", "--svg", chart.to_str().unwrap()]] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let (status, errors) = ended(run(args, Stdio::from(writer)), &format!("{args:?}"));
        assert_eq!(status, Some(5), "{args:?}: {errors}");
    }
    assert!(std::fs::read_to_string(&chart).unwrap().contains("</svg>"));
    // A recording on standard output whose reader left fails the run,
    // once the command has ended: it is not left behind.
    let child = read_one_byte(run(&["--record", "-", "-I", "100"], Stdio::piped()));
    let (status, errors) = ended(child, "--record -");
    assert_eq!(status, Some(1), "{errors}");
    assert!(errors.contains("cannot write recording -"), "{errors}");
}
