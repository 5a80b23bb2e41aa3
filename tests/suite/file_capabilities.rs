//! A copy of a tool given file capabilities (`setcap`), run as nobody in a
//! private mount namespace and watched through `/proc` while it measures:
//! the harness of the `cxlstat_privileges` and `iostat_privileges`
//! subjects. Needs root, setcap, setpriv and unshare (the subjects check).

use crate::cxlstat_support::copy_executable;
use crate::namespace;
use crate::pipes::Collected;
use crate::procstate::{KillOnDrop, perf_descriptors, wait_with_timeout};

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, ExitStatus, Output, Stdio};
use std::time::Duration;

/// setpriv's options that make the rest of its command nobody's: user and
/// group 65534, no supplementary groups.
pub const AS_NOBODY: [&str; 3] = ["--reuid=65534", "--regid=65534", "--clear-groups"];

/// `binary args` as nobody, to its end.
pub fn as_nobody(binary: &Path, args: &[&str]) -> Output {
    Command::new("/usr/bin/setpriv")
        .args(AS_NOBODY)
        .arg(binary)
        .args(args)
        .output()
        .unwrap()
}

/// Copies `program` to `to` and gives the copy the file capabilities
/// `given` (setcap's words, e.g. `cap_perfmon+ep`).
pub fn copy_with_capabilities(program: &Path, to: &Path, given: &str) {
    copy_executable(program, to);
    let status = Command::new("/usr/sbin/setcap")
        .arg(given)
        .arg(to)
        .status()
        .unwrap();
    assert!(status.success(), "setcap {given} {}", to.display());
}

/// `path` quoted for the shell commands of [`as_nobody_in_namespace`].
pub fn quoted(path: &Path) -> String {
    let path = path.to_str().unwrap();
    assert!(!path.contains('\''), "{path}");
    format!("'{path}'")
}

/// `binary args` as nobody, under the resource limits `limits` (prlimit's
/// options, e.g. `--memlock=0:0`; none, no prlimit), in a private mount
/// namespace after the shell commands `setup`, which root runs there. The
/// process keeps its PID: unshare, sh, prlimit and setpriv each exec the
/// next.
pub fn as_nobody_in_namespace(
    setup: &str,
    limits: &[&str],
    binary: &Path,
    args: &[&str],
) -> Command {
    let nobody = ["setpriv"].iter().chain(&AS_NOBODY).map(OsStr::new);
    let chain: Vec<&OsStr> = limits
        .iter()
        .map(OsStr::new)
        .chain(nobody)
        .chain([binary.as_os_str()])
        .chain(args.iter().map(OsStr::new))
        .collect();
    match limits {
        [] => namespace::command(setup, chain[0], &chain[1..]),
        _ => namespace::command(setup, "prlimit", &chain),
    }
}

/// A measuring run started by [`Measuring::spawn`], its standard output
/// and standard error read as they come; killed if the test ends first.
pub struct Measuring {
    /// What the run is, for messages (`"cxlstat"`).
    what: &'static str,
    child: KillOnDrop,
    stdout: Collected,
    stderr: Option<Collected>,
}

impl Measuring {
    /// Starts `command`, named `what` in messages, its output piped.
    pub fn spawn(what: &'static str, mut command: Command) -> Measuring {
        let mut child = KillOnDrop(
            command
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        );
        let stdout = Collected::new(child.stdout.take().unwrap());
        let stderr = Some(Collected::new(child.stderr.take().unwrap()));
        Measuring {
            what,
            child,
            stdout,
            stderr,
        }
    }

    /// The run's process ID.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits at most 30 s until the standard output read so far satisfies
    /// `enough` and returns it; else stops the run and fails, naming
    /// `awaited` and giving what the run said on standard error.
    pub fn wait_for(&mut self, awaited: &str, enough: impl FnMut(&[u8]) -> bool) -> &[u8] {
        match self
            .stdout
            .try_wait_for(awaited, Duration::from_secs(30), enough)
        {
            Ok(seen) => seen,
            Err(why) => {
                let _ = self.child.kill();
                let _ = self.child.wait();
                let err = self.stderr.take().unwrap().until_end(
                    &format!("{}'s standard error", self.what),
                    Duration::from_secs(10),
                );
                panic!("{why}\nstderr: {}", String::from_utf8_lossy(&err));
            }
        }
    }

    /// Sends the run `signal` and waits at most 20 s for it to end: its
    /// exit status and standard error.
    pub fn stop(mut self, signal: i32) -> (ExitStatus, String) {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.pid() as i32, signal) };
        let status = wait_with_timeout(
            &mut self.child,
            Duration::from_secs(20),
            &format!("{} after signal {signal}", self.what),
        );
        let err = self.stderr.take().unwrap().until_end(
            &format!("{}'s standard error", self.what),
            Duration::from_secs(10),
        );
        (status, String::from_utf8_lossy(&err).into_owned())
    }
}

/// Each thread of `pid`, sorted: its name, `CapEff` and `CapPrm`.
pub fn capabilities(pid: u32) -> Vec<(String, u64, u64)> {
    let mut found = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let status = std::fs::read_to_string(task.unwrap().path().join("status")).unwrap();
        let field = |name: &str| {
            let line = status.lines().find(|l| l.starts_with(name)).unwrap();
            line.split_whitespace().nth(1).unwrap().to_string()
        };
        let set = |name: &str| u64::from_str_radix(&field(name), 16).unwrap();
        found.push((field("Name:"), set("CapEff:"), set("CapPrm:")));
    }
    found.sort();
    found
}

/// What `pidfd_getfd(2)` of a perf event descriptor of `pid` gives in a
/// process of `nobody`'s: an error, or `Other` when it took the descriptor
/// (which a process of `nobody`'s could then read and keep past the run).
pub fn take_perf_descriptor_as_nobody(pid: u32) -> std::io::Error {
    use std::os::unix::process::CommandExt;
    let counter = perf_descriptors(pid)
        .into_iter()
        .next()
        .expect("a perf event among the process's descriptors");
    let fd: i32 = counter
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let mut command = Command::new("/bin/true");
    command.uid(65534).gid(65534);
    // SAFETY: only system calls between fork and exec; an error is the
    // errno, which `spawn` returns.
    unsafe {
        command.pre_exec(move || {
            let pidfd = libc::syscall(libc::SYS_pidfd_open, pid as i32, 0);
            if pidfd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::syscall(libc::SYS_pidfd_getfd, pidfd as i32, fd, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    match command.status() {
        Ok(_) => std::io::Error::other(format!("nobody took perf descriptor {fd} of {pid}")),
        Err(err) => err,
    }
}
