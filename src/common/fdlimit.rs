//! The open-file limit (`RLIMIT_NOFILE`): raised from the soft to the hard
//! limit when a tool needs more descriptors than the soft one allows, as
//! perf stat raises it when `perf_event_open` fails with EMFILE, and set
//! back for the commands the tool starts, so that they run with the limits
//! their user gave.
//!
//! Only the soft limit moves: raising it up to the hard limit needs no
//! privilege. The hard limit is the administrator's (perf, as root, also
//! adds 1,000 to it; the tools here do not).

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// The limit as it was before [`raise_to_hard`] raised it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Raised {
    /// The soft limit before.
    pub soft: u64,
    /// The hard limit, which the soft one is now.
    pub hard: u64,
}

/// The current soft and hard limits.
fn current() -> io::Result<libc::rlimit> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(limit)
}

/// The soft limit now; `None` when it cannot be read.
pub fn soft() -> Option<u64> {
    current().ok().map(|limit| limit.rlim_cur)
}

/// The hard limit now; `None` when it cannot be read.
pub fn hard() -> Option<u64> {
    current().ok().map(|limit| limit.rlim_max)
}

/// Raises the soft limit to the hard one. `Some` with the limits before
/// when it rose; `None` when it was at the hard limit already or could not
/// be changed, and nothing changed.
pub fn raise_to_hard() -> Option<Raised> {
    let limit = current().ok()?;
    if limit.rlim_cur >= limit.rlim_max {
        return None;
    }
    let raised = libc::rlimit {
        rlim_cur: limit.rlim_max,
        rlim_max: limit.rlim_max,
    };
    // SAFETY: setrlimit reads the struct we own.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
        return None;
    }
    Some(Raised {
        soft: limit.rlim_cur,
        hard: limit.rlim_max,
    })
}

/// Raises the soft limit to the hard one when it is below `needed`
/// descriptors ([`raise_to_hard`]).
pub fn raise_to_hard_below(needed: u64) -> Option<Raised> {
    if soft()? >= needed {
        return None;
    }
    raise_to_hard()
}

impl Raised {
    /// Gives `command` the soft limit from before, in the child, between
    /// `fork` and `exec`.
    pub fn restore_in(self, command: &mut Command) {
        let original = libc::rlimit {
            rlim_cur: self.soft,
            rlim_max: self.hard,
        };
        // SAFETY: the closure calls only setrlimit(2), async-signal-safe,
        // with a struct copied into it.
        unsafe {
            command.pre_exec(move || {
                if libc::setrlimit(libc::RLIMIT_NOFILE, &original) != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            })
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One test, in a child process of its own: the limit is the whole
    /// process's, so raising it here would change it for the other tests.
    #[test]
    fn the_soft_limit_rises_to_the_hard_one_and_a_child_gets_it_back() {
        let Ok(child) = std::env::var("HWSTAT_FDLIMIT_CHILD") else {
            let out = Command::new("prlimit")
                .args(["--nofile=64:4096", "--"])
                .arg(std::env::current_exe().unwrap())
                .args(["--exact", "common::fdlimit::tests::the_soft_limit_rises_to_the_hard_one_and_a_child_gets_it_back", "--nocapture"])
                .env("HWSTAT_FDLIMIT_CHILD", "1")
                .output();
            match out {
                // The filter must have found the test: a renamed one would
                // run nothing and succeed.
                Ok(out) => assert!(
                    out.status.success()
                        && String::from_utf8_lossy(&out.stdout).contains("1 passed"),
                    "{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ),
                Err(e) => panic!("prlimit (util-linux) cannot run: {e}"),
            }
            return;
        };
        assert_eq!(child, "1");
        let raised = raise_to_hard().expect("64 rises to 4096");
        assert_eq!(
            raised,
            Raised {
                soft: 64,
                hard: 4096
            }
        );
        let now = current().unwrap();
        assert_eq!((now.rlim_cur, now.rlim_max), (4096, 4096));
        // At the hard limit already: nothing to raise.
        assert_eq!(raise_to_hard(), None);
        assert_eq!(raise_to_hard_below(8192), None);
        assert_eq!(soft(), Some(4096));
        let mut shell = Command::new("sh");
        shell.args(["-c", "ulimit -Sn; ulimit -Hn"]);
        raised.restore_in(&mut shell);
        let out = shell.output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "64\n4096\n");
    }
}
