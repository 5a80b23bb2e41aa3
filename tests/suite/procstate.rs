//! Waiting until a child process has reached a state, read from its
//! `/proc/<pid>` files, where a test used to sleep a fixed time and assume
//! it had (a loaded machine can outlast any such sleep).

use std::time::{Duration, Instant};

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
