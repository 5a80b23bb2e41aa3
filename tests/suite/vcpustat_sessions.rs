//! Two vcpustat runs on one simulated kernel (`simkernel`): the runs meet
//! through the lock file in the root's `run` directory
//! (`vcpustat::session`), so that the last to end undoes what any of them
//! switched for itself, and a run killed before it could undo leaves its
//! changes as they are, with a note in the next run.
//!
//! These tests need root and /dev/fuse; they skip with a reason elsewhere,
//! and fail instead under `CI=true`.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use crate::procstate::{KillOnDrop, wait_with_timeout};
use crate::simkernel::{Mounted, mount};
use crate::vcpustat_fuse::{scenario, stats_writes, vcpustat};

/// A vcpustat run whose standard error is read line by line as it comes.
struct Run {
    child: KillOnDrop,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Run {
    fn start(sim: &Mounted, args: &[&str]) -> Run {
        let mut child = KillOnDrop(
            vcpustat(sim, args)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("vcpustat starts"),
        );
        let stderr = child.stderr.take().expect("a piped stderr");
        let (send, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = send.send(line);
            }
        });
        Run {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits (at most 20 s) for a line of standard error that is `line`.
    fn await_line(&mut self, line: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !self.seen.iter().any(|l| l == line) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(next) => self.seen.push(next),
                Err(_) => panic!("no line {line:?} on stderr; had {:?}", self.seen),
            }
        }
    }

    /// Stops the run with SIGINT and returns every line of its standard
    /// error.
    fn interrupt(mut self) -> Vec<String> {
        // SAFETY: kill has no memory preconditions.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        let status = wait_with_timeout(&mut self.child, Duration::from_secs(20), "vcpustat");
        assert!(status.success(), "{status}: {:?}", self.seen);
        // The reader thread ends with the pipe.
        self.seen.extend(self.lines.iter());
        self.seen
    }
}

/// The runs' record: its lines (without the newlines that pad it), each
/// `|`-ended, the number of a `switched-on` claim left out.
fn record(sim: &Mounted) -> String {
    std::fs::read_to_string(sim.run.0.join("vcpustat.lock"))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| match l.split_once(' ') {
            Some(("switched-on", claim)) if claim.parse::<u64>().is_ok() => "switched-on|".into(),
            _ => format!("{l}|"),
        })
        .collect()
}

/// Waits (at most 20 s) until the runs' record is `text` ([`record`]).
fn await_record(sim: &Mounted, text: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while record(sim) != text {
        assert!(
            Instant::now() < deadline,
            "the record never said {text:?}: {:?}",
            record(sim)
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

const SWITCHED_ON: &str = "vcpustat: switched the dispatch statistics on for this run; they are \
                           switched off again when it ends";
const JOINED: &str = "vcpustat: the dispatch statistics are on for another vcpustat run: the \
                      last run to end switches them off";

/// The run that switched the statistics on ends first: it leaves them on
/// for the run still reporting, and the second run, the last, switches
/// them off. `--temporary` frequencies go back to the value before the
/// first run, not to the one the second run found.
#[test]
fn the_last_of_two_runs_undoes_what_the_first_switched() {
    let Some(sim) = mount("two-runs", scenario()) else {
        return;
    };
    let mut first = Run::start(&sim, &["-n", "--freq", "20", "--temporary", "0.05"]);
    first.await_line(SWITCHED_ON);
    let mut second = Run::start(&sim, &["-n", "--freq", "40", "--temporary", "0.05"]);
    second.await_line(JOINED);
    let first = first.interrupt();
    assert!(
        first.contains(
            &"vcpustat: note: another vcpustat run still reports: the dispatch statistics stay \
              on until the last run ends; the frequency goes back to 50 per second when the last \
              run ends"
                .to_string()
        ),
        "{first:?}"
    );
    {
        let k = sim.kernel();
        assert!(k.on, "switched off under the second run");
        assert_eq!(k.freq, 40);
    }
    let second = second.interrupt();
    assert!(
        second.iter().all(|l| !l.contains("note:")),
        "the last run undoes without a note: {second:?}"
    );
    let k = sim.kernel();
    assert!(!k.on, "the last run left the statistics on");
    assert_eq!(k.freq, 50, "the frequency before the first run");
    drop(k);
    assert_eq!(
        stats_writes(&sim)
            .into_iter()
            .map(|(file, data, _)| (file, data))
            .collect::<Vec<_>>(),
        [
            ("freq", "20\n"),
            ("stats", "1\n"),
            ("freq", "40\n"),
            ("stats", "0\n"),
            ("freq", "50\n")
        ]
        .map(|(f, d)| (f, d.to_string()))
    );
    assert_eq!(record(&sim), "", "the record is emptied by the last run");
    // Each write came from a run holding the mutex: the undo writes too,
    // so a run starting meanwhile reads the state they leave.
    // The record is emptied after the undo writes: killed before them,
    // the last run would leave the record of what stays.
    let writes = &sim.kernel().writes;
    assert!(writes.iter().all(|w| w.runs_locked), "{writes:?}");
    let switch_off = writes.iter().find(|w| w.data == b"0\n").unwrap();
    assert_eq!(switch_off.runs_record.len(), 2, "{switch_off:?}");
    assert_eq!(switch_off.runs_record[1], "freq 50 40");
}

/// Starts a run, which switches the statistics on for itself, and kills
/// it (SIGKILL: no undo) once its record says so.
fn kill_a_run_that_switched_on(sim: &Mounted) {
    let mut killed = Run::start(sim, &["0.05"]);
    killed.await_line(SWITCHED_ON);
    await_record(sim, "switched-on|");
    killed.child.kill().unwrap();
    killed.child.wait().unwrap();
}

/// A run killed (SIGKILL: no undo) leaves the statistics on. The next run
/// cannot tell whether someone switched them on since, so it leaves them
/// on too, and says what the killed run left.
#[test]
fn a_killed_run_leaves_its_changes_and_the_next_run_says_so() {
    let Some(sim) = mount("killed-run", scenario()) else {
        return;
    };
    kill_a_run_that_switched_on(&sim);
    let out = vcpustat(&sim, &["-n", "0.05", "2"]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        crate::vcpustat_fuse::text(&out.stderr),
        "vcpustat: note: a vcpustat run ended without undoing its changes (killed, or an undo failed): it left \
         the dispatch statistics on; vcpustat leaves that as it is (vcpustat --disable puts that back)\n"
    );
    assert!(sim.kernel().on);
    assert_eq!(
        stats_writes(&sim).len(),
        1,
        "only the killed run's switch on"
    );
}

/// A killed run's changes undone by hand since are not said to be left:
/// `--status` said the statistics were off and, two lines on, that the
/// killed run had left them on, and the next run said so too.
#[test]
fn a_killed_runs_changes_undone_since_are_not_said_to_be_left() {
    let Some(sim) = mount("killed-then-undone", scenario()) else {
        return;
    };
    kill_a_run_that_switched_on(&sim);
    // Switched off by hand (echo 0 > /proc/powerpc/vcpudispatch_stats).
    sim.kernel().on = false;
    let status = vcpustat(&sim, &["--status"]).output().unwrap();
    assert!(status.status.success());
    assert_eq!(
        crate::vcpustat_fuse::text(&status.stdout),
        "dispatch statistics: off\nfrequency: 50 per second\n"
    );
    let out = vcpustat(&sim, &["-n", "0.05", "2"]).output().unwrap();
    assert!(out.status.success());
    let err = crate::vcpustat_fuse::text(&out.stderr);
    assert!(!err.contains("without undoing"), "{err}");
    assert_eq!(record(&sim), "", "the killed run's record is dropped");
}

/// What a user asks to last stays: `vcpustat --enable` while a run has the
/// statistics on for itself keeps them on after that run.
#[test]
fn a_lasting_enable_during_a_run_keeps_the_statistics_on() {
    let Some(sim) = mount("lasting-enable", scenario()) else {
        return;
    };
    let mut run = Run::start(&sim, &["0.05"]);
    run.await_line(SWITCHED_ON);
    let out = vcpustat(&sim, &["--enable"]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        crate::vcpustat_fuse::text(&out.stderr),
        "vcpustat: dispatch statistics are already on (counters kept)\n"
    );
    let lines = run.interrupt();
    assert!(
        lines.contains(
            &"vcpustat: note: the dispatch statistics are someone else's now (another vcpustat \
              asked for them to stay on, or another run saw them switched off and on): left on"
                .to_string()
        ),
        "{lines:?}"
    );
    assert!(sim.kernel().on);
    assert_eq!(stats_writes(&sim).len(), 1);
}

/// A lasting `vcpustat --disable` during a run that switched the statistics
/// on for itself: they stay off, and that run's note says so (it said "left
/// on" whatever the state).
#[test]
fn a_lasting_disable_during_a_run_is_noted_as_left_off() {
    let Some(sim) = mount("lasting-disable", scenario()) else {
        return;
    };
    // No sample comes before the stop: the run learns of the change only
    // from the record when it ends.
    let mut run = Run::start(&sim, &["5"]);
    run.await_line(SWITCHED_ON);
    let out = vcpustat(&sim, &["--disable"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        crate::vcpustat_fuse::text(&out.stderr)
    );
    assert!(!sim.kernel().on);
    let lines = run.interrupt();
    assert!(
        lines.contains(
            &"vcpustat: note: the dispatch statistics were switched off while vcpustat ran (by \
              another vcpustat, or a write to the file): left off"
                .to_string()
        ),
        "{lines:?}"
    );
    assert!(!sim.kernel().on);
    assert_eq!(
        stats_writes(&sim).len(),
        2,
        "on by the run, off by --disable"
    );
}

/// Another vcpustat stopped in the middle of its changes (here the test
/// holds the lock in its place) keeps a run from starting after 5 s, with
/// nothing changed: reading the state then could undo the other's work.
#[test]
fn a_run_stopped_mid_change_keeps_the_next_from_starting() {
    use std::os::unix::io::AsRawFd;
    let Some(sim) = mount("held-lock", scenario()) else {
        return;
    };
    let lock = std::fs::File::create(sim.run.0.join("vcpustat.lock")).unwrap();
    lock.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .unwrap();
    // SAFETY: flock is plain data; zeroed is valid (l_pid 0, as OFD locks want).
    let mut byte: libc::flock = unsafe { std::mem::zeroed() };
    byte.l_type = libc::F_WRLCK as libc::c_short;
    byte.l_whence = libc::SEEK_SET as libc::c_short;
    byte.l_len = 1;
    // SAFETY: a valid descriptor and flock.
    assert_eq!(
        unsafe { libc::fcntl(lock.as_raw_fd(), libc::F_OFD_SETLK, &byte) },
        0
    );
    let out = vcpustat(&sim, &["-n", "0.05", "1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        crate::vcpustat_fuse::text(&out.stderr),
        format!(
            "vcpustat: cannot share the dispatch statistics with other vcpustat runs: \
             {}/run/vcpustat.lock: another vcpustat has held it for over 5 s (stopped?)\n",
            sim.root.display()
        )
    );
    assert!(stats_writes(&sim).is_empty());
    assert!(!sim.kernel().on);

    // Ctrl-C while it waits ends the run at once (it waited out the 5 s
    // before), quietly and with nothing changed, but with status 130: the
    // run did not happen, and its recording holds no sample, only that
    // end, which its replay gives again (status 0 said otherwise).
    let dir = crate::scratch::scratch("vcpustat-held-lock");
    let recording = dir.join("held-lock.rec");
    let mut child = KillOnDrop(
        vcpustat(
            &sim,
            &["--record", recording.to_str().unwrap(), "-n", "0.05", "1"],
        )
        .stderr(Stdio::piped())
        .spawn()
        .unwrap(),
    );
    crate::procstate::await_handler(child.id(), libc::SIGINT);
    std::thread::sleep(Duration::from_millis(100));
    let asked = Instant::now();
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let status = wait_with_timeout(&mut child, Duration::from_secs(20), "vcpustat");
    let took = asked.elapsed();
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    let replay = std::process::Command::new(env!("CARGO_BIN_EXE_vcpustat"))
        .arg("--replay")
        .arg(&recording)
        .output()
        .unwrap();
    let recorded = std::fs::read_to_string(&recording).unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGINT), "{err}");
    assert_eq!(err, "");
    assert!(took < Duration::from_secs(2), "{took:?}");
    assert_eq!(
        recorded.lines().nth(1),
        Some(r#"{"end":{"frames":0,"refused":{"status":130,"stderr":""}}}"#)
    );
    assert_eq!(replay.status.code(), Some(128 + libc::SIGINT));
    assert_eq!((replay.stdout.len(), replay.stderr.len()), (0, 0));
    assert!(stats_writes(&sim).is_empty());
    assert!(!sim.kernel().on);
}

/// A lock file that is not one (a FIFO, which would block the open) is
/// never opened as the record: the run goes on alone, says so, and undoes
/// its own changes at its end.
#[test]
fn a_lock_file_that_is_a_fifo_is_passed_over_with_a_note() {
    let Some(sim) = mount("fifo-lock", scenario()) else {
        return;
    };
    let path = sim.run.0.join("vcpustat.lock");
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let out = vcpustat(&sim, &["-n", "0.05", "1"]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        crate::vcpustat_fuse::text(&out.stderr),
        format!(
            "vcpustat: note: cannot meet other vcpustat runs ({}/run/vcpustat.lock: not a \
             regular file): this run undoes its own changes at its end, whatever other runs \
             need\n{SWITCHED_ON}\n",
            sim.root.display()
        )
    );
    assert!(!sim.kernel().on);
    assert_eq!(stats_writes(&sim).len(), 2);
}

const HANDED_OVER: &str = "vcpustat: note: someone else switched off the dispatch statistics: \
                           vcpustat leaves the on/off state to them at exit";

/// A run that saw someone else switch the statistics off gives up its
/// claim, and only its own: a run that switched them on again since keeps
/// its claim and switches them off at its end.
#[test]
fn a_run_that_saw_a_switch_off_leaves_a_newer_claim_alone() {
    let Some(sim) = mount("newer-claim", scenario()) else {
        return;
    };
    // Prometheus runs tell a handover on stderr.
    let mut first = Run::start(&sim, &["-o", "prometheus", "0.05"]);
    first.await_line(SWITCHED_ON);
    await_record(&sim, "switched-on|");
    // The state read, the first sample and one more: a switch off now is
    // one the run sees happen.
    let deadline = Instant::now() + Duration::from_secs(20);
    while sim.kernel().reads < 3 {
        assert!(Instant::now() < deadline, "the first run did not read");
        std::thread::sleep(Duration::from_millis(5));
    }
    // Someone else's `echo 0`.
    sim.kernel().on = false;
    first.await_line(HANDED_OVER);
    // The claim goes at once: a run starting now must not find the
    // statistics on for the first run, nor --status say they go off.
    await_record(&sim, "");
    let mut second = Run::start(&sim, &["-o", "prometheus", "0.05"]);
    second.await_line(SWITCHED_ON);
    let first = first.interrupt();
    assert!(
        first.iter().all(|l| !l.contains("another vcpustat run")),
        "{first:?}"
    );
    assert!(sim.kernel().on, "switched off under the second run");
    let second = second.interrupt();
    assert!(second.iter().all(|l| !l.contains("note:")), "{second:?}");
    assert!(!sim.kernel().on, "the second run's claim was dropped");
    assert_eq!(
        stats_writes(&sim)
            .into_iter()
            .map(|(file, data, _)| (file, data))
            .collect::<Vec<_>>(),
        [("stats", "1\n"), ("stats", "1\n"), ("stats", "0\n")].map(|(f, d)| (f, d.to_string()))
    );
}

/// A frequency someone else set between two `--temporary` runs is the one
/// the last run puts back: the first run's value before is no longer what
/// the system had before the second.
#[test]
fn a_frequency_set_between_two_runs_is_the_one_put_back() {
    let Some(sim) = mount("freq-between", scenario()) else {
        return;
    };
    let mut first = Run::start(&sim, &["--freq", "20", "--temporary", "0.05"]);
    first.await_line(SWITCHED_ON);
    await_record(&sim, "switched-on|freq 50 20|");
    // Someone else's `echo 70 > vcpudispatch_stats_freq`.
    sim.kernel().freq = 70;
    let mut second = Run::start(&sim, &["--freq", "40", "--temporary", "0.05"]);
    second.await_line(JOINED);
    await_record(&sim, "switched-on|freq 70 40|");
    first.interrupt();
    second.interrupt();
    let k = sim.kernel();
    assert_eq!(k.freq, 70, "the value the second run found");
    assert!(!k.on);
}
