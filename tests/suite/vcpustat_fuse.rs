//! vcpustat against a simulated kernel interface (a FUSE file system that
//! behaves like the POWER procfs files, see `simkernel`): printed ratios,
//! the restore rule on every way out, and every kernel error's message.
//!
//! These tests need root and /dev/fuse; they skip with a reason elsewhere,
//! and fail instead under `CI=true`.

use crate::out_of_memory::limit_address_space;
use crate::procstate::{KillOnDrop, wait_with_timeout, with_default_action};
use crate::{listening, simkernel};

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use simkernel::{Event, Kernel, Mounted, mount};

/// The scenario: per read, cpu0 100 dispatches 97 at home (97.00 %), cpu1
/// 200 with 150 home, 40 adjacent, 10 far (75.00 %), cpu2 none (`-`), cpu3
/// 50 with 40 home, 5 adjacent and 5 unattributed (80.00 %). All: 287 of
/// 350 at home (82.00 %).
pub(crate) fn scenario() -> Kernel {
    Kernel::new(&[
        (0, [100, 60, 40, 0, 0, 97, 3, 0]),
        (1, [200, 100, 80, 20, 0, 150, 40, 10]),
        (2, [0; 8]),
        (3, [50, 25, 25, 0, 0, 40, 5, 0]),
    ])
}

pub(crate) fn vcpustat(sim: &Mounted, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vcpustat"));
    cmd.arg("--sysroot").arg(&sim.root).args(args);
    cmd
}

fn run(sim: &Mounted, args: &[&str]) -> Output {
    vcpustat(sim, args).output().expect("vcpustat runs")
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The last column (`home%`) of every line starting with `label`.
fn home_column(stdout: &str, label: &str) -> Vec<String> {
    stdout
        .lines()
        .filter(|l| l.split_whitespace().next() == Some(label))
        .map(|l| l.split_whitespace().last().unwrap().to_string())
        .collect()
}

pub(crate) fn stats_writes(sim: &Mounted) -> Vec<(&'static str, String, Result<usize, i32>)> {
    sim.kernel()
        .writes
        .iter()
        .map(|w| (w.file, text(&w.data), w.result))
        .collect()
}

fn wait_for_reads(sim: &Mounted, reads: u64) {
    let start = Instant::now();
    while sim.kernel().reads < reads {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "vcpustat did not read"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn printed_ratios_equal_the_scenario_and_the_state_is_restored_at_count() {
    let Some(sim) = mount("ratios", scenario()) else {
        return;
    };
    let out = run(&sim, &["-n", "0.1", "3"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(home_column(&stdout, "cpu0"), vec!["97.00"; 3]);
    assert_eq!(home_column(&stdout, "cpu1"), vec!["75.00"; 3]);
    assert_eq!(home_column(&stdout, "cpu2"), vec!["-"; 3]);
    assert_eq!(home_column(&stdout, "cpu3"), vec!["80.00"; 3]);
    assert_eq!(home_column(&stdout, "all"), vec!["82.00"; 3]);
    // cpu3 has 5 unattributed dispatches per interval: the column appears.
    let cpu3: Vec<&str> = stdout.lines().filter(|l| l.starts_with("cpu3 ")).collect();
    let cells: Vec<&str> = cpu3[0].split_whitespace().collect();
    assert_eq!(
        cells,
        [
            "cpu3", "50", "|", "25", "25", "0", "0", "|", "40", "5", "0", "5", "|", "80.00"
        ]
    );
    assert!(stdout.contains("unatt"));
    assert_eq!(
        text(&out.stderr),
        "vcpustat: switched the dispatch statistics on for this run; they are switched off \
         again when it ends\n"
    );
    assert!(!sim.kernel().on, "the statistics must be off again");
    assert_eq!(
        stats_writes(&sim),
        vec![
            ("stats", "1\n".into(), Ok(2)),
            ("stats", "0\n".into(), Ok(2))
        ]
    );
}

#[test]
fn the_default_view_shows_shares_of_total() {
    let Some(sim) = mount("percent", scenario()) else {
        return;
    };
    let out = run(&sim, &["0.05", "1"]);
    let stdout = text(&out.stdout);
    let cpu1: Vec<&str> = stdout
        .lines()
        .find(|l| l.starts_with("cpu1 "))
        .unwrap()
        .split_whitespace()
        .collect();
    // core 100/200, chip 80/200, socket 20/200, cec 0 | home, adj, far | home%
    assert_eq!(
        cpu1,
        [
            "cpu1", "200", "|", "50.00", "40.00", "10.00", "0.00", "|", "75.00", "20.00", "5.00",
            "0.00", "|", "75.00"
        ]
    );
}

#[test]
fn json_reports_the_scenario_and_stays_valid_when_interrupted() {
    let Some(sim) = mount("json", scenario()) else {
        return;
    };
    let mut child = KillOnDrop(
        vcpustat(&sim, &["-o", "json", "0.1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    wait_for_reads(&sim, 4);
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = wait_with_timeout(&mut child, Duration::from_secs(20), "vcpustat");
    assert!(status.success());
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let doc: serde_json::Value = serde_json::from_str(&stdout).expect("a closed JSON document");
    let samples = doc["samples"].as_array().unwrap();
    assert!(samples.len() >= 2, "{stdout}");
    for sample in samples {
        let rows = sample["rows"].as_array().unwrap();
        let by = |cpu: &str| rows.iter().find(|r| r["cpu"] == cpu).unwrap().clone();
        assert_eq!(by("cpu0")["home_ratio"], 0.97);
        assert_eq!(by("cpu1")["numa_far_disp"], 10);
        assert!(by("cpu2")["home_ratio"].is_null());
        assert_eq!(by("cpu3")["unattributed_disp"], 5);
        assert_eq!(by("all")["home_ratio"], 0.82);
    }
    assert!(!sim.kernel().on);
}

#[test]
fn every_stop_signal_restores_the_state() {
    let Some(sim) = mount("signals", scenario()) else {
        return;
    };
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let reads = sim.kernel().reads;
        sim.kernel().writes.clear();
        let mut command = vcpustat(&sim, &["-n", "0.1"]);
        command.stdout(Stdio::piped()).stderr(Stdio::null());
        // Under `nohup`, the suite ignores SIGHUP, and so would vcpustat.
        let mut child = KillOnDrop(
            with_default_action(&mut command, &[signal])
                .spawn()
                .unwrap(),
        );
        // Off read, baseline, and one report.
        wait_for_reads(&sim, reads + 3);
        assert!(sim.kernel().on);
        unsafe { libc::kill(child.id() as i32, signal) };
        let status = wait_with_timeout(&mut child, Duration::from_secs(20), "vcpustat");
        assert!(status.success(), "signal {signal}: {status}");
        assert!(!sim.kernel().on, "signal {signal} left the statistics on");
        assert_eq!(
            stats_writes(&sim),
            vec![
                ("stats", "1\n".into(), Ok(2)),
                ("stats", "0\n".into(), Ok(2))
            ],
            "signal {signal}"
        );
    }
}

/// A reader that stops reading (a stalled pager, a hung consumer) must not
/// keep vcpustat from answering SIGTERM and switching the statistics off:
/// a service manager would otherwise end it with SIGKILL, state left on.
#[test]
fn a_stop_signal_ends_a_run_blocked_on_a_full_pipe_and_restores_the_state() {
    let Some(sim) = mount("stalled", scenario()) else {
        return;
    };
    let (_unread, stdout) = crate::pipes::one_page_pipe();
    let mut child = KillOnDrop(
        vcpustat(&sim, &["-n", "0.01"])
            .stdout(stdout)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // A report is some hundred bytes: the page is full within a few dozen
    // reports, after which the reads stop.
    wait_for_reads(&sim, 3);
    let mut last = sim.kernel().reads;
    let stalled_by = Instant::now() + Duration::from_secs(10);
    loop {
        std::thread::sleep(Duration::from_millis(200));
        let reads = sim.kernel().reads;
        if reads == last {
            break;
        }
        assert!(
            Instant::now() < stalled_by,
            "vcpustat never filled the pipe"
        );
        last = reads;
    }
    assert!(sim.kernel().on);
    let (status, stderr) = end_with_sigterm(&mut child);
    // The output is cut short: said, and status 1.
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.ends_with(
            "vcpustat: cannot write output: stopped by signal 15 while the output was not read\n"
        ),
        "{stderr}"
    );
    assert!(
        !sim.kernel().on,
        "SIGTERM while blocked left the statistics on"
    );
    assert_eq!(stats_writes(&sim).last().unwrap().1, "0\n");
}

/// Runs vcpustat with `args` on `sim`, sends it SIGTERM once it is in a
/// read or write of the frequency that the simulation holds up, then lets
/// that call go on, and gives the exit status and standard error: the
/// signal comes in the call however late this thread runs. A fixed delay
/// after the start signalled a run still starting on a loaded machine,
/// which SIGTERM's default action ended.
fn stopped_in_slow_freq_call(sim: &Mounted, args: &[&str]) -> (ExitStatus, String) {
    let before = sim.kernel().slow_freq_calls_begun;
    let child = vcpustat(sim, args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = KillOnDrop(child);
    let start = Instant::now();
    loop {
        let begun = sim.kernel().slow_freq_calls_begun;
        if begun > before {
            break;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("vcpustat {args:?} ended ({status}) before a slow frequency call");
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "vcpustat {args:?} made no slow frequency call in 20 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    sim.kernel().slow_freq_calls_released = before + 1;
    ended(&mut child)
}

/// Sends vcpustat's `child` SIGTERM, waits for it (20 s at most), and
/// gives its exit status and standard error.
fn end_with_sigterm(child: &mut KillOnDrop) -> (ExitStatus, String) {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    ended(child)
}

/// Waits for vcpustat's `child` to end (20 s at most) and gives its exit
/// status and standard error.
fn ended(child: &mut KillOnDrop) -> (ExitStatus, String) {
    let status = wait_with_timeout(child, Duration::from_secs(20), "vcpustat");
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (status, stderr)
}

/// A stop signal while a change is being made (the frequency write, slow
/// here) ends the run before the next one: the statistics are never
/// switched on (which zeroes their counters) only to be switched off, the
/// frequency is put back, and the run ends quietly with 128 + the signal,
/// as one stopped while it waits for another run.
#[test]
fn a_stop_during_the_frequency_write_makes_no_further_change() {
    let mut kernel = scenario();
    kernel.freq_write_takes = Duration::from_millis(600);
    let Some(sim) = mount("slow-freq", kernel) else {
        return;
    };
    // In the write.
    let (status, stderr) =
        stopped_in_slow_freq_call(&sim, &["--enable", "--freq", "80", "0.05", "1"]);
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{stderr}");
    assert!(
        stderr.ends_with(
            "vcpustat: stopped by signal 15 before the changes asked for were all made: those \
             made are undone\n"
        ),
        "{stderr}"
    );
    let state = |k: &Kernel| (k.freq, k.on);
    assert_eq!(state(&sim.kernel()), (50, false), "{stderr}");
    let writes = stats_writes(&sim);
    let files: Vec<&str> = writes.iter().map(|w| w.0).collect();
    assert_eq!(files, ["freq", "freq"], "{writes:?}\n{stderr}");
    // A frequency alone is all that was asked: set, it stays.
    let (status, stderr) = stopped_in_slow_freq_call(&sim, &["--freq", "70"]);
    assert!(status.success(), "{status}: {stderr}");
    assert_eq!(state(&sim.kernel()), (70, false));
    // In a run that was to report, with the statistics on already (no
    // switch to make): stopped all the same, the frequency put back. It
    // ended with 0, the frequency left at 90.
    let out = run(&sim, &["--enable"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (status, stderr) = stopped_in_slow_freq_call(&sim, &["--freq", "90", "0.05", "1"]);
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{stderr}");
    assert_eq!(state(&sim.kernel()), (70, true), "{stderr}");
}

/// A run stopped before it changed anything says so: stopped in the read
/// of the frequency, which it asked to be what it is already, it used to
/// say "those made are undone" of changes it never made.
#[test]
fn a_stop_before_any_change_says_nothing_was_changed() {
    let mut kernel = scenario();
    kernel.freq_read_takes = Duration::from_millis(600);
    let Some(sim) = mount("slow-freq-read", kernel) else {
        return;
    };
    let (status, stderr) = stopped_in_slow_freq_call(&sim, &["--freq", "50", "0.05", "1"]);
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{stderr}");
    assert!(
        stderr.ends_with("vcpustat: stopped by signal 15: nothing was changed\n"),
        "{stderr}"
    );
    let state = |k: &Kernel| (k.freq, k.on);
    assert_eq!(state(&sim.kernel()), (50, false), "{stderr}");
    assert_eq!(stats_writes(&sim), []);
}

#[test]
fn a_closed_output_pipe_restores_the_state() {
    let Some(sim) = mount("pipe", scenario()) else {
        return;
    };
    let mut child = KillOnDrop(
        vcpustat(&sim, &["-n", "0.05"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    {
        let mut reader = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap() > 0 && !line.starts_with("all") {
            line.clear();
        }
        // The reader goes away, like `vcpustat 1 | head`.
    }
    let status = wait_with_timeout(&mut child, Duration::from_secs(20), "vcpustat");
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(status.success(), "{status}: {stderr}");
    assert!(!stderr.contains("cannot write output"), "{stderr}");
    assert!(!sim.kernel().on);
    assert_eq!(stats_writes(&sim).last().unwrap().1, "0\n");
}

#[test]
fn an_error_mid_run_restores_the_state() {
    let Some(sim) = mount("error", scenario().at_read(4, Event::FailRead)) else {
        return;
    };
    let out = run(&sim, &["-n", "0.05", "10"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr
            .contains("vcpustat: cannot read /proc/powerpc/vcpudispatch_stats: Input/output error"),
        "{stderr}"
    );
    assert!(!sim.kernel().on);
}

/// A change with `--textfile` writes one exposition of the state it left
/// (it used to write none: the option was silently dropped); `--status`
/// cannot share standard output with `-o prometheus`.
#[test]
fn a_change_with_a_textfile_writes_the_state_it_left() {
    let Some(sim) = mount("textfile", scenario()) else {
        return;
    };
    let dir = crate::scratch::scratch("vcpustat-change");
    let file = dir.join("change.prom");
    let file_s = file.to_str().unwrap();
    let out = run(&sim, &["--enable", "--textfile", file_s]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    let exposition = std::fs::read_to_string(&file).expect("the textfile");
    assert!(
        exposition.contains("\nvcpustat_dispatch_statistics_enabled 1\n"),
        "{exposition}"
    );
    assert!(
        exposition.contains("vcpustat_dispatches_total{cpu=\"0\"}"),
        "{exposition}"
    );
    let out = run(&sim, &["--disable", "--textfile", file_s]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let exposition = std::fs::read_to_string(&file).expect("the textfile");
    assert!(
        exposition.contains("\nvcpustat_dispatch_statistics_enabled 0\n"),
        "{exposition}"
    );
    assert!(
        !exposition.contains("vcpustat_dispatches_total"),
        "{exposition}"
    );
    assert!(!sim.kernel().on);
    let out = run(&sim, &["--status", "-o", "prometheus"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--textfile FILE"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_change_with_a_machine_format_prints_the_counts_it_left() {
    let Some(sim) = mount("change-json", scenario()) else {
        return;
    };
    // Switched on (counters zeroed), then read once: one step each.
    let out = run(&sim, &["--enable", "-o", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    let rows = doc["samples"][0]["rows"].as_array().unwrap();
    let cpu1 = rows.iter().find(|r| r["cpu"] == "cpu1").unwrap();
    assert_eq!(cpu1["total_disp"], 200, "{doc}");
    assert!(sim.kernel().on);
    let out = run(&sim, &["--disable", "-o", "csv"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with("timestamp,"),
        "{}",
        text(&out.stdout)
    );
    assert!(
        text(&out.stderr).contains("note: dispatch statistics are off"),
        "{}",
        text(&out.stderr)
    );
    assert!(!sim.kernel().on);
    // --status is text, which would break the document: refused, as with
    // -o prometheus, before anything is changed.
    let writes = sim.kernel().writes.len();
    let out = run(&sim, &["--enable", "--status", "-o", "json"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    assert_eq!(sim.kernel().writes.len(), writes);
}

#[test]
fn explicit_changes_stay_unless_temporary() {
    let Some(sim) = mount("explicit", scenario()) else {
        return;
    };
    let out = run(&sim, &["--enable", "--freq", "80", "--status"]);
    assert!(out.status.success());
    assert_eq!(
        text(&out.stdout),
        "dispatch statistics: on\nfrequency: 80 per second\n"
    );
    assert_eq!(
        text(&out.stderr),
        "vcpustat: frequency set to 80 per second (was 50)\n\
         vcpustat: dispatch statistics switched on\n"
    );
    assert!(sim.kernel().on);
    assert_eq!(sim.kernel().freq, 80);

    let out = run(&sim, &["--enable"]);
    assert_eq!(
        text(&out.stderr),
        "vcpustat: dispatch statistics are already on (counters kept)\n"
    );
    let out = run(&sim, &["--disable"]);
    assert_eq!(
        text(&out.stderr),
        "vcpustat: dispatch statistics switched off\n"
    );
    assert!(!sim.kernel().on);

    sim.kernel().writes.clear();
    let out = run(
        &sim,
        &["--enable", "--freq", "20", "--temporary", "-n", "0.05", "1"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stderr),
        "vcpustat: frequency set to 20 per second (was 80) until the run ends\n\
         vcpustat: dispatch statistics switched on until the run ends\n"
    );
    assert!(!sim.kernel().on);
    assert_eq!(sim.kernel().freq, 80);
    assert_eq!(
        stats_writes(&sim),
        vec![
            ("freq", "20\n".into(), Ok(3)),
            ("stats", "1\n".into(), Ok(2)),
            ("stats", "0\n".into(), Ok(2)),
            ("freq", "80\n".into(), Ok(3)),
        ]
    );

    // --enable without --temporary stays on after an interval run.
    let out = run(&sim, &["--enable", "-n", "0.05", "1"]);
    assert!(out.status.success());
    assert!(sim.kernel().on);
}

#[test]
fn statistics_already_on_are_left_alone() {
    let mut kernel = scenario();
    kernel.on = true;
    let Some(sim) = mount("already-on", kernel) else {
        return;
    };
    let out = run(&sim, &["-n", "0.05", "2"]);
    assert!(out.status.success());
    assert_eq!(home_column(&text(&out.stdout), "all"), vec!["82.00"; 2]);
    assert!(sim.kernel().writes.is_empty());
    assert!(sim.kernel().on);
}

#[test]
fn einval_on_freq_is_explained() {
    let Some(sim) = mount("einval", scenario()) else {
        return;
    };
    let out = run(&sim, &["--freq", "500"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        "vcpustat: the kernel rejected --freq 500 (invalid argument (EINVAL)): the frequency \
         must be between 1 and the kernel's HZ (often 100 or 250 on POWER)\n"
    );
    assert_eq!(sim.kernel().freq, 50);
    assert_eq!(
        stats_writes(&sim),
        vec![("freq", "500\n".into(), Err(libc::EINVAL))]
    );
}

/// A frequency from before the run that the kernel refuses to take back
/// (HZ lower than it: only a simulated kernel can hold one) is said as
/// such, with what stays and how to change it; not as a --freq the user
/// never gave.
#[test]
fn a_frequency_the_kernel_refuses_to_take_back_is_said_as_such() {
    let mut kernel = scenario();
    kernel.freq = 200;
    let Some(sim) = mount("freq-back", kernel) else {
        return;
    };
    let out = run(&sim, &["--freq", "80", "--temporary", "0.05", "1"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.ends_with(
            "vcpustat: could not restore the dispatch statistics: the kernel refused the \
             frequency from before the run, 200 per second: invalid argument (EINVAL); it \
             stays at vcpustat's 80 (set another with vcpustat --freq N)\n"
        ),
        "{stderr}"
    );
    assert_eq!(sim.kernel().freq, 80);
}

#[test]
fn ebusy_on_enable_is_explained_and_earlier_changes_are_undone() {
    let mut kernel = scenario();
    kernel.busy = true;
    let Some(sim) = mount("ebusy", kernel) else {
        return;
    };
    let out = run(&sim, &["--freq", "80", "--temporary", "0.05", "1"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.ends_with(
            "vcpustat: cannot enable dispatch statistics: /proc/powerpc/vcpudispatch_stats \
             answered EBUSY: the dispatch trace log is in use by another consumer (a reader of \
             /sys/kernel/debug/powerpc/dtl/cpu-N or a perf vpa_dtl event); stop it and retry\n"
        ),
        "{stderr}"
    );
    assert!(!sim.kernel().on);
    assert_eq!(sim.kernel().freq, 50, "the temporary frequency is undone");
    assert_eq!(
        stats_writes(&sim),
        vec![
            ("freq", "80\n".into(), Ok(3)),
            ("stats", "1\n".into(), Err(libc::EBUSY)),
            ("freq", "50\n".into(), Ok(3)),
        ]
    );
}

/// The kernel's own failures to switch on (EINVAL: its CPU-hotplug work
/// for the DTL; ENOMEM: its associativity tables) are explained, as EBUSY
/// is, and the temporary frequency set before is put back.
#[test]
fn enable_failures_of_the_kernel_are_explained() {
    for (errno, name, why) in [
        (
            libc::EINVAL,
            "invalid argument (EINVAL)",
            "the kernel could not set up its CPU-hotplug work for the dispatch trace log \
             (dmesg: unable to setup workqueue for DTL processing)",
        ),
        (
            libc::ENOMEM,
            "cannot allocate memory (ENOMEM)",
            "the kernel could not allocate its CPU associativity tables; free memory and retry",
        ),
    ] {
        let mut kernel = scenario();
        kernel.enable_fails = Some(errno);
        let Some(sim) = mount(&format!("enable-{errno}"), kernel) else {
            return;
        };
        let out = run(&sim, &["--freq", "80", "--temporary", "0.05", "1"]);
        assert_eq!(out.status.code(), Some(1));
        let stderr = text(&out.stderr);
        let message = format!(
            "vcpustat: cannot enable dispatch statistics: /proc/powerpc/vcpudispatch_stats \
             answered {name}: {why}\n"
        );
        assert!(stderr.ends_with(&message), "{stderr}");
        assert!(!sim.kernel().on);
        assert_eq!(sim.kernel().freq, 50, "the temporary frequency is undone");
    }
}

#[test]
fn eacces_is_explained() {
    let mut kernel = scenario();
    kernel.deny = true;
    let Some(sim) = mount("eacces", kernel) else {
        return;
    };
    let out = run(&sim, &["1", "1"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        "vcpustat: cannot read /proc/powerpc/vcpudispatch_stats: permission denied (EACCES): \
         the dispatch statistics files are mode 0600, owned by root; run vcpustat as root\n"
    );
}

#[test]
fn missing_files_are_explained() {
    let mut kernel = scenario();
    kernel.files = false;
    kernel.lparcfg = Some("lparcfg 1.9\nshared_processor_mode=0\n".into());
    let Some(sim) = mount("dedicated", kernel) else {
        return;
    };
    let out = run(&sim, &["--status"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        "vcpustat: /proc/powerpc/vcpudispatch_stats does not exist: /proc/powerpc/lparcfg \
         says shared_processor_mode=0, so this LPAR has dedicated processors; dispatch \
         statistics exist only on shared-processor LPARs\n"
    );
    sim.kernel().lparcfg = None;
    let out = run(&sim, &["1"]);
    assert_eq!(
        text(&out.stderr),
        "vcpustat: /proc/powerpc/vcpudispatch_stats does not exist: dispatch statistics need \
         a pseries shared-processor LPAR running Linux 5.3 or later built with \
         CONFIG_PPC_SPLPAR\n"
    );
}

#[test]
fn someone_else_switching_off_is_noted_and_their_state_is_kept() {
    // Reads: 1 state (off), 2 baseline, 3 report, 4-5 off, 6 on again
    // (counters restarted), 7 report.
    let kernel = scenario()
        .at_read(4, Event::SwitchOff)
        .at_read(6, Event::Reenable);
    let Some(sim) = mount("switched-off", kernel) else {
        return;
    };
    let out = run(&sim, &["-n", "0.05", "5"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(home_column(&stdout, "all"), vec!["82.00"; 2]);
    assert!(stdout.contains(
        "note: dispatch statistics are off (switched off by someone else?); reports resume \
         when they are switched on again\n"
    ));
    assert!(stdout.contains(
        "note: someone else switched off the dispatch statistics: vcpustat leaves the on/off \
         state to them at exit\n"
    ));
    assert!(stdout.contains(
        "note: dispatch statistics are on again (their counters restarted): the next report \
         covers the next interval\n"
    ));
    assert!(
        sim.kernel().on,
        "vcpustat must not switch off someone else's session"
    );
    assert_eq!(stats_writes(&sim), vec![("stats", "1\n".into(), Ok(2))]);
}

/// The same handover in the Prometheus runs (`-o prometheus` and, through
/// the same code, `--textfile`), which used to switch the other session off
/// at exit without a word.
#[test]
fn someone_else_switching_off_is_their_state_in_prometheus_runs_too() {
    let kernel = scenario()
        .at_read(4, Event::SwitchOff)
        .at_read(6, Event::Reenable);
    let Some(sim) = mount("switched-off-prometheus", kernel) else {
        return;
    };
    let out = run(&sim, &["-o", "prometheus", "0.05", "5"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(
            "vcpustat: note: someone else switched off the dispatch statistics: vcpustat \
             leaves the on/off state to them at exit\n"
        ),
        "{}",
        text(&out.stderr)
    );
    assert!(
        sim.kernel().on,
        "vcpustat must not switch off someone else's session"
    );
    assert_eq!(stats_writes(&sim), vec![("stats", "1\n".into(), Ok(2))]);
}

/// A command that fails half-way leaves nothing changed: the frequency it
/// set goes back when switching the statistics on is refused (the trace
/// log in use), in a control command and in an interval run.
#[test]
fn a_refused_switch_puts_the_frequency_back() {
    for args in [
        &["--enable", "--freq", "100"][..],
        &["--freq", "100", "0.05", "2"],
    ] {
        let mut kernel = scenario();
        kernel.busy = true;
        let Some(sim) = mount("busy-freq", kernel) else {
            return;
        };
        let out = run(&sim, args);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{args:?}: {}",
            text(&out.stderr)
        );
        let k = sim.kernel();
        assert!(!k.on);
        assert_eq!(k.freq, 50, "{args:?}: the frequency before");
        let writes: Vec<(&str, String)> =
            k.writes.iter().map(|w| (w.file, text(&w.data))).collect();
        assert_eq!(
            writes,
            [("freq", "100\n"), ("stats", "1\n"), ("freq", "50\n")]
                .map(|(f, d)| (f, d.to_string())),
            "{args:?}"
        );
    }
}

/// A frequency someone else sets during a `--temporary` run is theirs:
/// vcpustat puts back only the value it wrote itself.
#[test]
fn a_frequency_set_by_someone_else_during_a_run_is_kept() {
    let kernel = scenario().at_read(4, Event::SetFreq(200));
    let Some(sim) = mount("their-freq", kernel) else {
        return;
    };
    let out = run(&sim, &["--freq", "100", "--temporary", "0.05", "4"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(
            "vcpustat: note: someone else set the frequency to 200 per second while vcpustat \
             ran: left as it is (vcpustat had set 100, it was 50)\n"
        ),
        "{}",
        text(&out.stderr)
    );
    let k = sim.kernel();
    assert_eq!(k.freq, 200);
    assert!(!k.on, "the statistics vcpustat switched on are off again");
    assert!(
        k.writes
            .iter()
            .all(|w| w.file != "freq" || w.data == b"100\n"),
        "one frequency write: {:?}",
        k.writes
    );
}

#[test]
fn resets_and_hotplug_are_noted_and_the_run_goes_on() {
    let mut kernel = scenario()
        .at_read(4, Event::Reenable)
        .at_read(5, Event::Offline(2))
        .at_read(6, Event::Online(2));
    kernel.on = true;
    let Some(sim) = mount("hotplug", kernel) else {
        return;
    };
    let out = run(&sim, &["-n", "0.05", "5"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    // One step since the reset equals one interval's step: same ratios.
    assert_eq!(home_column(&stdout, "cpu0"), vec!["97.00"; 5]);
    assert_eq!(home_column(&stdout, "all"), vec!["82.00"; 5]);
    assert!(stdout.contains(
        "note: counters were reset during this interval (the statistics were switched off and \
         on again): counts since the reset only\n"
    ));
    assert!(stdout.contains("note: cpu2 went offline\n"));
    assert!(stdout.contains("note: cpu2 came online: it is reported from the next interval\n"));
    assert_eq!(home_column(&stdout, "cpu2").len(), 3);
    assert!(sim.kernel().writes.is_empty());
}

#[test]
fn wrapping_int_counters_give_the_same_ratios() {
    let mut kernel = scenario();
    kernel.on = true;
    for (cpu, start) in [(0u32, i32::MAX - 150), (1, -250)] {
        let c = kernel.cpus.get_mut(&cpu).unwrap();
        c.counts = [start; 8];
    }
    let Some(sim) = mount("wrap", kernel) else {
        return;
    };
    let out = run(&sim, &["-n", "0.05", "4"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success());
    assert_eq!(home_column(&stdout, "cpu0"), vec!["97.00"; 4]);
    assert_eq!(home_column(&stdout, "cpu1"), vec!["75.00"; 4]);
    assert!(!stdout.contains("note:"), "{stdout}");
}

#[test]
fn a_reset_while_counters_are_past_2_31_is_a_reset_not_a_wrap() {
    // Every dispatch on the same core, at home: only counters past 2^31
    // move, and none below 2^31 going backwards reveals the reset.
    let step = [100, 100, 0, 0, 0, 100, 0, 0];
    let mut kernel = Kernel::new(&[(0, step), (1, step)]).at_read(3, Event::Reenable);
    kernel.on = true;
    // 3,000,000,000 as the C int it is: past 2^31, printed sign-extended.
    let high = 3_000_000_000u32 as i32;
    for cpu in kernel.cpus.values_mut() {
        cpu.counts = [high, high, 0, 0, 0, high, 0, 0];
    }
    let Some(sim) = mount("reset-high", kernel) else {
        return;
    };
    let out = run(&sim, &["-n", "0.05", "2"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    // The reset comes before read 3, after vcpustat's first two reads (the
    // state, then the run's start). Read as a wrap, the first report would
    // count 2^32 - 3,000,000,200 + 100 dispatches of cpu0 in 50 ms; since
    // the reset it had one step, 100, as in the next report.
    let totals: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("cpu0 "))
        .map(|l| l.split_whitespace().nth(1).unwrap())
        .collect();
    assert_eq!(totals, vec!["100", "100"], "{stdout}");
    assert!(
        stdout.contains("note: counters were reset during this interval"),
        "{stdout}"
    );
}

#[test]
fn the_simulated_kernel_parses_writes_like_lpar_c() {
    use simkernel::kstrtoint;
    assert_eq!(kstrtoint(b"1\n"), Ok(1));
    assert_eq!(kstrtoint(b"0x1"), Ok(1));
    assert_eq!(kstrtoint(b"01"), Ok(1));
    assert_eq!(kstrtoint(b"-1"), Ok(-1));
    assert_eq!(kstrtoint(b"1 "), Err(libc::EINVAL));
    assert_eq!(kstrtoint(b""), Err(libc::EINVAL));
    assert_eq!(kstrtoint(b"abc"), Err(libc::EINVAL));
    assert_eq!(kstrtoint(b"1\n\n"), Err(libc::EINVAL));
    assert_eq!(kstrtoint(b"99999999999"), Err(libc::ERANGE));
    let Some(sim) = mount("writes", scenario()) else {
        return;
    };
    let path = sim.root.join("proc/powerpc/vcpudispatch_stats");
    let freq = sim.root.join("proc/powerpc/vcpudispatch_stats_freq");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "off\n");
    let errno = |p: &std::path::Path, data: &str| {
        std::fs::write(p, data).err().and_then(|e| e.raw_os_error())
    };
    assert_eq!(errno(&path, "2\n"), Some(libc::EINVAL));
    assert_eq!(errno(&path, "0000000000000001"), Some(libc::EINVAL));
    assert_eq!(errno(&path, "0x1\n"), None);
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .starts_with("cpu0 100 60 40 0 0 97 3 0\n")
    );
    assert_eq!(errno(&freq, "0\n"), Some(libc::EINVAL));
    assert_eq!(errno(&freq, "101\n"), Some(libc::EINVAL));
    assert_eq!(errno(&freq, "100\n"), None);
    assert_eq!(std::fs::read_to_string(&freq).unwrap(), "100\n");
}

#[test]
fn a_recorded_run_replays_to_the_same_report() {
    let Some(sim) = mount("record", scenario()) else {
        return;
    };
    let dir = crate::scratch::scratch("vcpustat-record");
    let recording = dir.join("vcpustat.rec");
    let rec = recording.to_str().unwrap();
    let live = run(&sim, &["-n", "--record", rec, "0.05", "2"]);
    assert!(live.status.success(), "{}", text(&live.stderr));
    assert!(!sim.kernel().on);
    let replay = Command::new(env!("CARGO_BIN_EXE_vcpustat"))
        .args(["-n", "--replay", rec, "0.05", "2"])
        .output()
        .unwrap();
    assert!(replay.status.success(), "{}", text(&replay.stderr));
    assert_eq!(text(&replay.stdout), text(&live.stdout));
    assert_eq!(home_column(&text(&replay.stdout), "all"), vec!["82.00"; 2]);
    let refused = Command::new(env!("CARGO_BIN_EXE_vcpustat"))
        .args(["--enable", "--replay", rec])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
}

#[test]
fn a_failed_restore_is_reported_after_the_error() {
    // Read 3 (the first report) succeeds, then every open is refused.
    let Some(sim) = mount("restore-fails", scenario().at_read(3, Event::Deny)) else {
        return;
    };
    let out = run(&sim, &["-n", "0.05", "5"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines[1..],
        [
            "vcpustat: cannot read /proc/powerpc/vcpudispatch_stats: permission denied (EACCES): \
             the dispatch statistics files are mode 0600, owned by root; run vcpustat as root",
            "vcpustat: could not restore the dispatch statistics: cannot write to \
             /proc/powerpc/vcpudispatch_stats: permission denied (EACCES): the dispatch \
             statistics files are mode 0600, owned by root; run vcpustat as root",
        ]
    );
    assert!(sim.kernel().on, "the simulated kernel refused the restore");
}

#[test]
fn raw_view_shows_cumulative_counts_and_still_notes_resets() {
    let mut kernel = scenario().at_read(4, Event::Reenable);
    kernel.on = true;
    let Some(sim) = mount("raw", kernel) else {
        return;
    };
    let out = run(&sim, &["-r", "0.05", "3"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    // Read 2 only starts the run (powerpc-utils prints its first report one
    // interval later too). Reads 3, 4, 5: cumulative totals of cpu0 are
    // 3 steps, then 1 and 2 steps after the reset.
    let totals: Vec<String> = stdout
        .lines()
        .filter(|l| l.starts_with("cpu0 "))
        .map(|l| l.split_whitespace().nth(1).unwrap().to_string())
        .collect();
    assert_eq!(totals, ["300", "100", "200"]);
    assert_eq!(home_column(&stdout, "all"), vec!["82.00"; 3]);
    assert!(stdout.contains("note: counters were reset during this interval"));
}

#[test]
fn raw_view_shows_a_vcpu_that_came_online_from_the_next_report_as_its_note_says() {
    // powerpc-utils prints a vCPU only when both samples have it; so does -r.
    let mut kernel = scenario()
        .at_read(3, Event::Offline(2))
        .at_read(5, Event::Online(2));
    kernel.on = true;
    let Some(sim) = mount("raw-hotplug", kernel) else {
        return;
    };
    let out = run(&sim, &["-r", "0.05", "4"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    // Reports of reads 3 to 6: cpu0's cumulative totals.
    let totals: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("cpu0 "))
        .map(|l| l.split_whitespace().nth(1).unwrap())
        .collect();
    assert_eq!(totals, ["300", "400", "500", "600"]);
    assert!(stdout.contains("note: cpu2 went offline\n"));
    assert!(stdout.contains("note: cpu2 came online: it is reported from the next interval\n"));
    // Offline in the reports of reads 3 and 4, just back in 5: shown in 6 only.
    assert_eq!(home_column(&stdout, "cpu2").len(), 1, "{stdout}");
}

/// Starts `vcpustat --listen` on the port of 127.0.0.1 it says it took;
/// returns the child and the address. The child is killed when dropped: a
/// failed scrape or assertion must not leave it serving, nor holding the
/// simulated kernel's root open, which keeps the FUSE server (and so the
/// dropped mount, and the test) waiting for ever. Bind it after `sim`, so
/// that it is dropped first.
fn serve(sim: &Mounted) -> (KillOnDrop, std::net::SocketAddr) {
    let mut child = KillOnDrop(
        vcpustat(sim, &["--listen", listening::ANY_PORT])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let addr = listening::announced(&mut child, "vcpustat");
    (child, addr)
}

/// One scrape's value of `series`.
fn scrape(addr: std::net::SocketAddr, series: &str) -> f64 {
    use std::io::Write;
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    body.lines()
        .find_map(|l| l.strip_prefix(series).and_then(|v| v.strip_prefix(' ')))
        .unwrap_or_else(|| panic!("{series} in {body}"))
        .parse()
        .unwrap()
}

#[test]
fn listen_keeps_the_statistics_on_while_serving_and_restores_them_on_sigterm() {
    let Some(sim) = mount("listen", scenario()) else {
        return;
    };
    let (mut child, addr) = serve(&sim);
    // Each read of the simulated file adds cpu0's 100 dispatches.
    let first = scrape(addr, "vcpustat_dispatches_total{cpu=\"0\"}");
    assert!(sim.kernel().on, "switched on while serving");
    let second = scrape(addr, "vcpustat_dispatches_total{cpu=\"0\"}");
    assert_eq!(second - first, 100.0);
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert!(wait_with_timeout(&mut child, Duration::from_secs(20), "vcpustat").success());
    assert!(!sim.kernel().on, "SIGTERM left the statistics on");
    assert_eq!(
        stats_writes(&sim),
        vec![
            ("stats", "1\n".into(), Ok(2)),
            ("stats", "0\n".into(), Ok(2))
        ]
    );
}

#[test]
fn listen_exposes_64_bit_totals_across_the_kernels_32_bit_wrap() {
    let mut kernel = scenario();
    kernel.on = true;
    // cpu1 counts 200 per read from -450: start-up reads it once (-250),
    // the first scrape sees -50 (2^32 - 50), the second 150: the C int
    // passed 2^32 between them.
    kernel.cpus.get_mut(&1).unwrap().counts = [-450; 8];
    let Some(sim) = mount("listen-wrap", kernel) else {
        return;
    };
    let (mut child, addr) = serve(&sim);
    let series = "vcpustat_dispatches_total{cpu=\"1\"}";
    let values: Vec<f64> = (0..4).map(|_| scrape(addr, series)).collect();
    for pair in values.windows(2) {
        assert_eq!(pair[1] - pair[0], 200.0, "{values:?}");
    }
    assert_eq!(values[0], 4_294_967_246.0, "{values:?}");
    assert!(values[3] > 4_294_967_296.0, "{values:?}");
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert!(wait_with_timeout(&mut child, Duration::from_secs(20), "vcpustat").success());
    assert!(sim.kernel().on, "statistics found on are left on");
}

/// Under an address-space limit that lets vcpustat start but not grow by
/// what its reports take, a run never leaves the statistics switched on:
/// an allocation that fails ends a run at once (status 4, with no undo),
/// so vcpustat makes sure of room for its run before it changes anything.
/// Before it did, every limit from 9.0 to 9.8 MB here left them on.
#[test]
fn a_run_under_a_memory_limit_never_leaves_its_changes() {
    // 2,048 CPUs: the statistics, once on, are some 100 kB a read. The
    // room is 8 MiB over the 9 MB a run takes to start here: runs go
    // through from about 17.5 MB. The scan goes well past that, as a
    // machine whose runs start larger would find no limit enough.
    scan_memory_limits("memory-limit", 2048, &["-n", "0.01", "1"], 500);
}

/// The same with charts of 8,192 CPUs, which took some 2 kB a CPU (runs
/// ran out under 17.5 to 25 MB and left the statistics on when the room
/// was 8 MiB whatever the CPUs): the room counts the CPUs the kernel's
/// `possible` list names.
#[test]
fn charts_of_many_cpus_under_a_memory_limit_never_leave_changes() {
    let dir = crate::scratch::scratch("vcpustat-charts-memory-limit");
    let svg = dir.join("c.svg");
    let args = ["--svg", svg.to_str().unwrap(), "-n", "0.01", "2"];
    scan_memory_limits("charts-memory-limit", 8192, &args, 2_000);
}

/// Runs `vcpustat args` on a simulated kernel of `cpus` CPUs under
/// address-space limits from 8 MB up, `step_kb` apart, to 40 MB past the
/// room the CPUs need: none may leave the statistics on, some must be
/// refused for want of room and some must report.
fn scan_memory_limits(name: &str, cpus: u32, args: &[&str], step_kb: usize) {
    let steps: Vec<(u32, [i32; 8])> = (0..cpus)
        .map(|cpu| (cpu, [10, 5, 5, 0, 0, 9, 1, 0]))
        .collect();
    let Some(sim) = mount(name, Kernel::new(&steps)) else {
        return;
    };
    let room_kb = (u64::from(cpus) * 4).max(8 << 10);
    let (mut refused, mut reported) = (0, 0);
    for kb in (8_000..=room_kb + 40_000).step_by(step_kb) {
        let mut cmd = vcpustat(&sim, args);
        limit_address_space(&mut cmd, kb * 1000);
        let out = cmd.output().expect("vcpustat runs");
        let err = text(&out.stderr);
        assert!(
            !sim.kernel().on,
            "under {kb} kB: {:?} left the statistics on: {err}",
            out.status
        );
        if err.contains("not enough memory for this run") {
            assert_eq!(out.status.code(), Some(4), "under {kb} kB: {err}");
            assert_eq!(err.lines().count(), 1, "under {kb} kB: {err}");
            refused += 1;
        } else if out.status.success() {
            reported += 1;
        }
    }
    assert!(refused > 0, "no limit was tight enough");
    assert!(reported > 0, "no limit was enough");
    // Every write that switched them on was followed by the one that
    // switched them off again.
    let writes = stats_writes(&sim);
    let on = writes.iter().filter(|w| w.1 == "1\n").count();
    let off = writes.iter().filter(|w| w.1 == "0\n").count();
    assert_eq!((on, off), (reported, reported), "{writes:?}");
}
