//! Waiting until a child process has reached a state, read from its
//! `/proc/<pid>` files, where a test used to sleep a fixed time and assume
//! it had (a loaded machine can outlast any such sleep); and a child that
//! is stopped when the test ends, however it ends.

use std::process::{Child, ExitStatus};
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

/// Waits until `pid` holds at least `events` perf events open: its count
/// has begun.
pub fn await_perf_events(pid: u32, events: usize) {
    await_state(&format!("process {pid}"), || {
        let open = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .map(|dir| {
                dir.filter_map(Result::ok)
                    .filter(|e| {
                        std::fs::read_link(e.path())
                            .is_ok_and(|l| l.as_os_str() == "anon_inode:[perf_event]")
                    })
                    .count()
            })
            .unwrap_or(0);
        if open >= events {
            Ok(())
        } else {
            Err(format!("{open} of {events} perf events open"))
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

/// Waits until `pid` has a handler for `signal` (bit `signal` of `SigCgt`
/// in `/proc/<pid>/status`): from then on the signal is its stop request,
/// no longer the kernel's default action.
pub fn await_handler(pid: u32, signal: i32) {
    await_state(&format!("process {pid}"), || {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .map_err(|e| format!("without /proc/{pid}/status ({e})"))?;
        let caught = status
            .lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
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

/// Waits for `child` at most `limit`; past it, kills and reaps it and fails
/// naming `what`.
pub fn wait_with_timeout(child: &mut Child, limit: Duration, what: &str) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
