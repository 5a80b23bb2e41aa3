//! Waiting until a child process has reached a state, read from its
//! `/proc/<pid>` files, where a test used to sleep a fixed time and assume
//! it had (a loaded machine can outlast any such sleep); and a child that
//! is stopped when the test ends, however it ends.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

/// A child process killed and reaped when dropped: when its test ends, also
/// by a failed assertion, it neither runs on nor keeps what it holds (a
/// FUSE mount whose unmount waits for it, a port). Declared after what it
/// uses, it is dropped before it. A test that stops it itself (a signal,
/// then a wait with a limit) still can: killing a reaped child does nothing.
pub struct KillOnDrop(pub Child);

impl std::ops::Deref for KillOnDrop {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for KillOnDrop {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `command`'s process with the default action of `signals`,
/// whatever this test process has. A test process started in the
/// background by a shell without job control (`cargo test &` in a script)
/// ignores SIGINT and SIGQUIT, one under `nohup` SIGHUP, and a child
/// inherits that; the tools keep a stop signal ignored at their start
/// ignored (but SIGINT), as sysstat and perf do, so a test that stops a
/// run with one of those would wait for it in vain.
pub fn with_default_action<'a>(command: &'a mut Command, signals: &[i32]) -> &'a mut Command {
    let signals = signals.to_vec();
    // SAFETY: signal(2) only, async-signal-safe, in the child before exec;
    // the list was made before the fork and is only read.
    unsafe {
        command.pre_exec(move || {
            for &signal in &signals {
                libc::signal(signal, libc::SIG_DFL);
            }
            Ok(())
        })
    }
}

/// How long a child may take to get there.
const LIMIT: Duration = Duration::from_secs(20);

/// Polls `state` until it is `Ok`; panics with `what` and the last error's
/// description after [`LIMIT`].
fn await_state(what: &str, mut state: impl FnMut() -> Result<(), String>) {
    let start = Instant::now();
    loop {
        match state() {
            Ok(()) => return,
            Err(last) if start.elapsed() > LIMIT => panic!("{what}: still {last} after {LIMIT:?}"),
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// The perf event descriptors `pid` holds open, as `/proc/<pid>/fd`
/// paths; none once it has gone.
pub fn perf_descriptors(pid: u32) -> Vec<std::path::PathBuf> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    fds.filter_map(Result::ok)
        .map(|fd| fd.path())
        .filter(|fd| {
            std::fs::read_link(fd).is_ok_and(|l| l.as_os_str() == "anon_inode:[perf_event]")
        })
        .collect()
}

/// Waits until `pid` holds at least `events` perf events open: its count
/// has begun.
pub fn await_perf_events(pid: u32, events: usize) {
    await_state(&format!("process {pid}"), || {
        let open = perf_descriptors(pid).len();
        if open >= events {
            Ok(())
        } else {
            Err(format!("{open} of {events} perf events open"))
        }
    });
}

/// Waits until `pid` holds at most `events` perf events open: some it
/// had (a CPU's) are closed.
pub fn await_at_most_perf_events(pid: u32, events: usize) {
    await_state(&format!("process {pid}"), || {
        let open = perf_descriptors(pid).len();
        if open <= events {
            Ok(())
        } else {
            Err(format!("{open} perf events open, not {events}"))
        }
    });
}

/// Waits until `pid` has started a child process (a command it runs).
pub fn await_child(pid: u32) {
    await_state(&format!("process {pid}"), || {
        let children =
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        if children.trim().is_empty() {
            Err("without a child".into())
        } else {
            Ok(())
        }
    });
}

/// The `/proc/<pid>/stat` state letter of `pid`'s main thread.
fn state_letter(pid: u32) -> Result<char, String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map_err(|e| format!("without /proc/{pid}/stat ({e})"))?;
    // The state follows the command name, which is in parentheses and may
    // hold anything.
    let (_, after) = stat
        .rsplit_once(") ")
        .ok_or_else(|| format!("with an unreadable stat {stat:?}"))?;
    after
        .chars()
        .next()
        .ok_or_else(|| format!("with an unreadable stat {stat:?}"))
}

/// Where `pid` is, for a test's failure message: its state, each thread's,
/// its main thread's system call (`/proc/<pid>/syscall`) and kernel stack
/// (root only), its CPU time so far and its signal masks.
pub fn describe(pid: u32) -> String {
    let read = |file: &str| {
        std::fs::read_to_string(format!("/proc/{pid}/{file}"))
            .map_or_else(|e| format!("({e})"), |t| t.trim().to_string())
    };
    let threads: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|tasks| {
            tasks
                .filter_map(Result::ok)
                .map(|t| {
                    let tid = t.file_name().to_string_lossy().into_owned();
                    let state = read(&format!("task/{tid}/stat"))
                        .rsplit_once(") ")
                        .and_then(|(_, after)| after.chars().next())
                        .unwrap_or('?');
                    format!("{tid} {state}")
                })
                .collect()
        })
        .unwrap_or_default();
    let cpu_ticks = read("stat")
        .rsplit_once(") ")
        .and_then(|(_, after)| {
            // utime and stime: fields 14 and 15, the 12th and 13th after
            // the command name.
            let fields: Vec<&str> = after.split_whitespace().collect();
            Some(format!(
                "{} user, {} system",
                fields.get(11)?,
                fields.get(12)?
            ))
        })
        .unwrap_or_default();
    // Which signals it ignores, catches, blocks and has pending.
    let signals: Vec<String> = read("status")
        .lines()
        .filter(|l| {
            ["SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt"]
                .iter()
                .any(|f| l.starts_with(f))
        })
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    format!(
        "process {pid} in state {:?}, threads and states [{}], system call {:?}, CPU ticks {cpu_ticks}, \
         signals [{}], kernel stack:\n{}",
        state_letter(pid),
        threads.join(", "),
        read("syscall"),
        signals.join(", "),
        read("stack"),
    )
}

/// The signal mask `field` (`SigCgt:`, `SigIgn:`, `SigBlk:`) of a
/// `/proc/<pid>/status` text, bit N-1 for signal N.
pub fn status_mask(status: &str, field: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
}

/// Waits until `pid` runs `program` (`/proc/<pid>/exe`): a process a
/// program of ours forked is a copy of it until it calls exec, its signal
/// handlers included, so [`await_handler`] on a grandchild means nothing
/// before this.
pub fn await_exec(pid: u32, program: &std::path::Path) {
    await_state(&format!("process {pid}"), || {
        let exe = std::fs::read_link(format!("/proc/{pid}/exe"))
            .map_err(|e| format!("without /proc/{pid}/exe ({e})"))?;
        if exe == program {
            Ok(())
        } else {
            Err(format!("running {}", exe.display()))
        }
    });
}

/// Waits until `pid` has a handler for `signal` (bit `signal` of `SigCgt`
/// in `/proc/<pid>/status`): from then on the signal is its stop request,
/// no longer the kernel's default action. Of a process the test did not
/// start itself, only once it runs its own program ([`await_exec`]).
pub fn await_handler(pid: u32, signal: i32) {
    await_state(&format!("process {pid}"), || {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .map_err(|e| format!("without /proc/{pid}/status ({e})"))?;
        let caught = status_mask(&status, "SigCgt:")
            .ok_or_else(|| format!("without a SigCgt line in {status:?}"))?;
        if caught & (1 << (signal - 1)) != 0 {
            Ok(())
        } else {
            Err(format!(
                "without a handler for signal {signal} (SigCgt {caught:x})"
            ))
        }
    });
}

/// Waits until `signal` is pending for `pid` no more (neither in `SigPnd`
/// nor in `ShdPnd` of `/proc/<pid>/status`): sent before, it has been
/// delivered. Two sent before the first is delivered are one.
pub fn await_delivered(pid: u32, signal: i32) {
    await_state(&format!("process {pid}"), || {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .map_err(|e| format!("without /proc/{pid}/status ({e})"))?;
        let pending = ["SigPnd:", "ShdPnd:"]
            .iter()
            .map(|field| status_mask(&status, field).unwrap_or(0))
            .fold(0, |all, mask| all | mask);
        if pending & (1 << (signal - 1)) == 0 {
            Ok(())
        } else {
            Err(format!("with signal {signal} pending ({pending:x})"))
        }
    });
}

/// Waits until `pid` holds `path` open (a link in `/proc/<pid>/fd`).
pub fn await_open_file(pid: u32, path: &std::path::Path) {
    await_state(&format!("process {pid}"), || {
        let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .map_err(|e| format!("without /proc/{pid}/fd ({e})"))?;
        if fds
            .flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target == path))
        {
            Ok(())
        } else {
            Err(format!("without {} open", path.display()))
        }
    });
}

/// How many times `pid`'s main thread has gone to sleep so far
/// (`voluntary_ctxt_switches` in `/proc/<pid>/task/<pid>/status`), for
/// [`await_asleep_again`].
pub fn sleeps(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/status"))
        .unwrap_or_else(|e| panic!("/proc/{pid}/task/{pid}/status: {e}"));
    status
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no voluntary_ctxt_switches line in {status}"))
}

/// Waits until `pid`'s main thread, asleep `before` times ([`sleeps`]) when
/// something woke it (a signal), sleeps again in `poll(2)` or `wait4(2)`
/// (its wait channel a poll function or `do_wait`): it has dealt with what
/// woke it, and waits for what comes next.
pub fn await_asleep_again(pid: u32, before: u64) {
    await_state(&format!("process {pid}"), || {
        let state = state_letter(pid)?;
        let wchan = std::fs::read_to_string(format!("/proc/{pid}/wchan")).unwrap_or_default();
        let now = sleeps(pid);
        if now > before && state == 'S' && (wchan.contains("poll") || wchan == "do_wait") {
            Ok(())
        } else {
            Err(format!(
                "in state {state}, waiting in {wchan:?}, asleep {now} times (first {before})"
            ))
        }
    });
}

/// Waits until `pid`'s main thread sleeps in `poll(2)` (its kernel wait
/// channel, `/proc/<pid>/wchan`, is a poll function): the tools wait there
/// for the next interval, a stop signal or a file descriptor.
pub fn await_polling(pid: u32) {
    await_state(&format!("process {pid}"), || {
        let state = state_letter(pid)?;
        let wchan = std::fs::read_to_string(format!("/proc/{pid}/wchan")).unwrap_or_default();
        if state == 'S' && wchan.contains("poll") {
            Ok(())
        } else {
            Err(format!("in state {state}, waiting in {wchan:?}"))
        }
    });
}

/// What `child`, ended, wrote on its standard error (piped), as text.
pub fn stderr_text(child: &mut Child) -> String {
    let mut text = String::new();
    let mut stderr = child.stderr.take().expect("standard error piped");
    std::io::Read::read_to_string(&mut stderr, &mut text).unwrap();
    text
}

/// Waits for `child` at most `limit`; past it, kills and reaps it and fails
/// naming `what` and saying where it was ([`describe`]).
pub fn wait_with_timeout(child: &mut Child, limit: Duration, what: &str) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > limit {
            let at = describe(child.id());
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not end within {limit:?}: {at}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The processor time `pid` has used so far (user and system), from
/// `/proc/<pid>/stat`; `None` once it has gone.
fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command's parenthesised name: state is field 3, utime and
    // stime fields 14 and 15.
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Some(Duration::from_nanos(ticks * 1_000_000_000 / hz))
}

/// Waits for `child` until it has used `cpu_limit` of processor time, or
/// `wall_limit` has passed (a child that stalls without computing); past
/// either, kills and reaps it and fails naming `what`. Its status and the
/// processor time it used, from wait4(2). For a bound on how much work a
/// program does: the processor time a run takes does not grow with the
/// load beside it, where its wall time does (on 2 cores beside 32 busy
/// loops, a run of 1.1 s of processor time took 36.5 s).
pub fn wait_with_cpu_limit(
    child: &mut Child,
    cpu_limit: Duration,
    wall_limit: Duration,
    what: &str,
) -> (ExitStatus, Duration) {
    use std::os::unix::process::ExitStatusExt;
    let start = Instant::now();
    let pid = child.id();
    loop {
        let mut status = 0;
        // SAFETY: zeroed rusage is valid; wait4 on our own child's pid,
        // which std has not reaped (no wait or try_wait on it here).
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let reaped = unsafe { libc::wait4(pid as i32, &mut status, libc::WNOHANG, &mut usage) };
        assert!(reaped >= 0, "wait4: {}", std::io::Error::last_os_error());
        if reaped == pid as i32 {
            let time = |t: libc::timeval| {
                Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
            };
            return (
                ExitStatus::from_raw(status),
                time(usage.ru_utime) + time(usage.ru_stime),
            );
        }
        let used = cpu_time(pid).unwrap_or_default();
        if used > cpu_limit || start.elapsed() > wall_limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{what} did not end within {cpu_limit:?} of processor time and {wall_limit:?}: \
                 {used:?} used in {:?}",
                start.elapsed()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until the child `pid` has ended (a zombie, not yet reaped: the
/// caller reaps it after), then gives how long its threads waited for a
/// CPU while runnable (`run_delay`, the second field of
/// `/proc/<pid>/task/*/schedstat`): the time a loaded machine held it
/// back, which stretches the moments it meant to read something at. The
/// threads still listed are counted (cxlstat counts on one).
pub fn run_delay_at_end(pid: u32, limit: Duration) -> Duration {
    let start = Instant::now();
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, r)| r.split_whitespace().next());
        if state == Some("Z") {
            break;
        }
        assert!(
            start.elapsed() < limit,
            "{pid} did not end within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut waited = Duration::ZERO;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let text = std::fs::read_to_string(task.unwrap().path().join("schedstat")).unwrap();
        let ns: u64 = text.split_whitespace().nth(1).unwrap().parse().unwrap();
        waited += Duration::from_nanos(ns);
    }
    waited
}
