//! Signals that end a run: the stop flag, and sleeping that a signal cuts short.
//!
//! SIGINT, SIGTERM, SIGHUP and the other signals of [`STOP_SIGNALS`]
//! (SIGQUIT, SIGUSR1, SIGALRM, SIGXFSZ...) do not kill the process: they
//! set a flag that the interval loop checks, so the current report is
//! finished, a JSON document is closed and anything a tool changed is
//! restored. The signals whose default action also ends a process but that
//! are not in that list end it as the kernel's default does: SIGKILL, which
//! cannot be caught; SIGSTKFLT and the real-time signals (SIGRTMIN to
//! SIGRTMAX); and the signals of a fault in the program itself (SIGSEGV,
//! SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS), after which it must
//! not go on.
//!
//! A stop signal ignored when the program starts stays ignored: `nohup`'s
//! SIGHUP, or another the parent chose to keep away, as sysstat and perf,
//! which do not catch them, leave them; so does a command cxlstat runs.
//! Except SIGINT, which sysstat and perf catch whatever its state: a shell
//! without job control (a script) starts `cmd &` with SIGINT and SIGQUIT
//! ignored, and scripts stop such runs with `kill -INT`.
//!
//! A closed output pipe is not a signal here: the programs
//! ignore SIGPIPE ([`crate::common::entry`]), so the write fails with
//! `BrokenPipe`, which the binaries treat as a quiet, normal end.

use std::fmt;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// The signals that end a run: those a terminal, a service manager or
/// `kill` sends to stop a program, and other named ones whose default
/// action would end it without its restores (a SIGXFSZ from `ulimit -f`
/// while recording, a stray SIGUSR1). Not SIGSTKFLT, the real-time signals
/// or the fault signals (see the module's documentation).
pub const STOP_SIGNALS: [i32; 13] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
    libc::SIGVTALRM,
    libc::SIGPROF,
    libc::SIGXCPU,
    libc::SIGXFSZ,
    libc::SIGIO,
    libc::SIGPWR,
];

/// Where the count of stop signals caught begins in [`StopSignal`]'s
/// word, above the latest one's number (64 at most).
const COUNT_SHIFT: u32 = 8;

/// The largest count: past it, the count starts again at 1, never 0.
const MAX_COUNT: usize = usize::MAX >> COUNT_SHIFT;

/// The stop-signal handlers could not be set up: no descriptor was left
/// for the wake-up counter (`ulimit -n`), or the kernel refused an action.
#[derive(Debug)]
pub struct SignalSetupError(io::Error);

impl fmt::Display for SignalSetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot install signal handlers: {}", self.0)
    }
}

impl std::error::Error for SignalSetupError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// A flag set by a stop signal, with a way to sleep until a deadline or until
/// a signal arrives, whichever is first. Clones share the flag.
#[derive(Clone)]
pub struct StopSignal {
    /// The latest stop signal's number, and the count of those caught so
    /// far above [`COUNT_SHIFT`]: one word, so that one look reads both as
    /// they were together; 0 before any.
    caught: Arc<AtomicUsize>,
    /// The stop signals caught and not yet taken ([`StopSignal::take_pending`]),
    /// a bit each: bit N for signal N sent to this process alone, bit
    /// 32 + N for a terminal's ([`Pending`]). Every stop signal is below 32.
    pending: Arc<AtomicU64>,
    /// An eventfd the signal actions add to and the waits poll: one
    /// descriptor, where a socket pair took two (three with the writer's
    /// copy the actions held), so that the tools also run under a tight
    /// `ulimit -n`. The actions hold it too: it stays open as long as they
    /// are registered.
    wake: Arc<OwnedFd>,
    /// When every output of a stopped run stops waiting for its reader at
    /// the latest ([`StopSignal::output_deadline`]).
    output_deadline: Arc<OnceLock<Instant>>,
}

/// Whether stop signal `signal` was ignored when the program started, and
/// stays so (see the module's documentation): not SIGINT, and not SIGXFSZ,
/// which the program's start ignores itself until here
/// ([`crate::common::entry`]).
fn kept_ignored(signal: i32) -> bool {
    signal != libc::SIGINT && signal != libc::SIGXFSZ && ignored(signal)
}

/// Whether `signal`'s action is to be ignored (`SIG_IGN`).
fn ignored(signal: i32) -> bool {
    current_action(signal).is_some_and(|action| action.sa_sigaction == libc::SIG_IGN)
}

/// `signal`'s action, if the kernel tells it.
fn current_action(signal: i32) -> Option<libc::sigaction> {
    // SAFETY: sigaction(2) with no new action only reads the current one
    // into a zeroed struct of ours.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        (libc::sigaction(signal, std::ptr::null(), &mut current) == 0).then_some(current)
    }
}

impl StopSignal {
    /// Installs handlers for [`STOP_SIGNALS`].
    pub fn install() -> Result<StopSignal, SignalSetupError> {
        let caught = Arc::new(AtomicUsize::new(0));
        let pending = Arc::new(AtomicU64::new(0));
        // SAFETY: eventfd(2) takes no pointers.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(SignalSetupError(io::Error::last_os_error()));
        }
        // SAFETY: a descriptor eventfd has just returned, owned by nothing else.
        let wake = Arc::new(unsafe { OwnedFd::from_raw_fd(fd) });
        // One action per signal that does both jobs of signal-hook's
        // `flag::register_usize` and `low_level::pipe::register`: each
        // registration copies signal-hook's whole table, and the 26 of the
        // two helpers for 13 signals left 12-16 kB more heap in every run.
        for signal in STOP_SIGNALS {
            if kept_ignored(signal) {
                continue;
            }
            let caught = Arc::clone(&caught);
            let pending = Arc::clone(&pending);
            let wake = Arc::clone(&wake);
            let action = move |info: &libc::siginfo_t| {
                // A loop only if another signal's action cut this one short
                // between its load and its store.
                let _ = caught.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |old| {
                    let count = (old >> COUNT_SHIFT) % MAX_COUNT + 1;
                    Some(count << COUNT_SHIFT | signal as usize)
                });
                let from_terminal = info.si_code == libc::SI_KERNEL
                    && matches!(signal, libc::SIGINT | libc::SIGQUIT);
                let bit = signal as u32 + if from_terminal { 32 } else { 0 };
                pending.fetch_or(1 << bit, Ordering::SeqCst);
                let one: u64 = 1;
                // SAFETY: write(2) of 8 bytes from a live local to an
                // eventfd the action owns (an Arc of it); non-blocking, and
                // the counter cannot come near its limit between drains.
                unsafe {
                    libc::write(
                        wake.as_raw_fd(),
                        (&raw const one).cast(),
                        std::mem::size_of::<u64>(),
                    )
                };
            };
            // SAFETY: the action is async-signal-safe: a read of the
            // siginfo the kernel gave, lock-free atomic updates and
            // write(2), without allocating or locking (signal-hook keeps
            // errno around it).
            unsafe { signal_hook_registry::register_sigaction(signal, action) }
                .map_err(SignalSetupError)?;
        }
        Ok(StopSignal {
            caught,
            pending,
            wake,
            output_deadline: Arc::new(OnceLock::new()),
        })
    }

    /// When the outputs of a stopped run (standard output, a recording)
    /// stop waiting for their readers at the latest: `after` the first of
    /// them began to wait, one deadline for them all
    /// ([`crate::common::stdout::AfterStop`]).
    pub fn output_deadline(&self, after: std::time::Duration) -> Instant {
        *self.output_deadline.get_or_init(|| Instant::now() + after)
    }

    /// The stop signal received, if any.
    pub fn caught(&self) -> Option<i32> {
        self.latest().signal()
    }

    /// The latest stop signal received, and how many came.
    pub fn latest(&self) -> Caught {
        Caught(self.caught.load(Ordering::SeqCst))
    }

    /// The stop signals caught since the last call, each once, whatever
    /// their order and however close together they came (the latest alone
    /// would hide one sent with a terminal's Ctrl-C).
    pub fn take_pending(&self) -> Pending {
        let bits = self.pending.swap(0, Ordering::SeqCst);
        Pending {
            sent: bits as u32,
            from_terminal: (bits >> 32) as u32,
        }
    }

    /// Sleeps until `deadline`. Returns `false` if a stop signal came first
    /// (or had already come).
    pub fn sleep_until(&self, deadline: Instant) -> bool {
        self.wait(Some(deadline), NO_DESCRIPTOR, 0)
    }

    /// Sleeps until `deadline`, or less if `fd` becomes readable first (a
    /// pidfd whose process ended). Returns `false` if a stop signal came
    /// first (or had already come).
    pub fn sleep_until_or_readable(&self, deadline: Instant, fd: BorrowedFd) -> bool {
        self.wait(Some(deadline), pollfd(fd, libc::POLLIN), 0)
    }

    /// Sleeps until `fd` is readable (for example a pidfd whose process
    /// ended). Returns `false` if a stop signal came first (or had already
    /// come).
    pub fn wait_readable(&self, fd: BorrowedFd) -> bool {
        self.wait(None, pollfd(fd, libc::POLLIN), 0)
    }

    /// Sleeps until `deadline` (if any) or until `fd` (if any) is readable,
    /// whichever comes first, for as long as no more than `seen` stop
    /// signals have come ([`Caught::count`] of one seen before, or 0).
    /// Returns `false` if one more came first (or had already come): a
    /// wait that goes on past a stop signal, and learns of each new one.
    pub fn sleep_until_next(
        &self,
        deadline: Option<Instant>,
        fd: Option<BorrowedFd>,
        seen: usize,
    ) -> bool {
        let other = fd.map_or(NO_DESCRIPTOR, |fd| pollfd(fd, libc::POLLIN));
        self.wait(deadline, other, seen)
    }

    /// Sleeps until `fd` can be written to without blocking (or is in
    /// error, which the write then reports). Returns `false` if a stop
    /// signal came first (or had already come).
    pub fn wait_writable(&self, fd: BorrowedFd) -> bool {
        self.wait(None, pollfd(fd, libc::POLLOUT), 0)
    }

    /// Waits until `deadline` (if any) or until `other` is ready, whichever
    /// comes first; `false` if a stop signal beyond the `seen` first came
    /// first (or had already come). `other` may be [`NO_DESCRIPTOR`],
    /// which `poll` skips.
    // Inlined into each waiting function: `sleep_until` runs every interval
    // and stays one function of the code a report touches (build.rs, "Hot
    // code first").
    #[inline(always)]
    fn wait(&self, deadline: Option<Instant>, other: libc::pollfd, seen: usize) -> bool {
        loop {
            if self.latest().count() != seen {
                return false;
            }
            let timeout = match deadline {
                None => -1,
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return true;
                    }
                    poll_millis(deadline - now)
                }
            };
            let mut fds = [self.wake_pollfd(), other];
            // SAFETY: two valid pollfds for the duration of the call.
            unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout) };
            self.drain_if_woken(fds[0].revents);
            if fds[1].revents != 0 {
                return true;
            }
        }
    }

    /// The wake-up counter's entry for `poll`.
    fn wake_pollfd(&self) -> libc::pollfd {
        pollfd(self.wake.as_fd(), libc::POLLIN)
    }

    /// Resets the wake-up counter once `poll` reported it readable
    /// (`revents`): one read takes an eventfd's whole count. A timeout or a
    /// ready output reads nothing: one system call fewer per wait. A count
    /// left behind by a signal that raced the wait makes the next `poll`
    /// return at once, and the flag is checked before every wait anyway.
    fn drain_if_woken(&self, revents: libc::c_short) {
        if revents == 0 {
            return;
        }
        let mut count = 0u64;
        // SAFETY: reading 8 bytes into a local from a non-blocking eventfd
        // we own.
        unsafe {
            libc::read(
                self.wake.as_raw_fd(),
                (&raw mut count).cast(),
                std::mem::size_of::<u64>(),
            )
        };
    }
}

/// One look at the latest stop signal ([`StopSignal::latest`]): which,
/// and how many had come by then, as they were together.
#[derive(Clone, Copy)]
pub struct Caught(usize);

impl Caught {
    /// The signal's number; `None` before any.
    pub fn signal(self) -> Option<i32> {
        match self.0 & ((1 << COUNT_SHIFT) - 1) {
            0 => None,
            signal => Some(signal as i32),
        }
    }

    /// How many stop signals had come, this one included: 0 before any,
    /// then growing by one with each (past the largest its word holds, 1 again).
    pub fn count(self) -> usize {
        self.0 >> COUNT_SHIFT
    }
}

/// The stop signals caught since the last look ([`StopSignal::take_pending`]),
/// by who sent them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pending {
    /// Bit N: signal N, sent to this process alone: by a process
    /// (kill(2)), or by the kernel (a CPU time limit's SIGXCPU, a timer's
    /// SIGALRM: timers and limits survive exec, a SIGIO).
    sent: u32,
    /// Bit N: signal N from a terminal, a Ctrl-C or `Ctrl-\` (SIGINT or
    /// SIGQUIT from the kernel, `si_code` `SI_KERNEL`), which comes to the
    /// terminal's whole foreground process group at once.
    from_terminal: u32,
}

impl Pending {
    /// The signals sent to this process alone, lowest first.
    pub fn sent(self) -> impl Iterator<Item = i32> {
        signals_in(self.sent)
    }

    /// The signals from a terminal, lowest first.
    pub fn from_terminal(self) -> impl Iterator<Item = i32> {
        signals_in(self.from_terminal)
    }
}

/// The signals whose bits `bits` holds, lowest first.
fn signals_in(bits: u32) -> impl Iterator<Item = i32> {
    (1..32).filter(move |signal| bits & (1 << signal) != 0)
}

/// A `poll` entry that `poll` skips (a negative descriptor): its
/// `revents` stays 0.
const NO_DESCRIPTOR: libc::pollfd = libc::pollfd {
    fd: -1,
    events: 0,
    revents: 0,
};

/// A `poll` entry waiting for `events` on `fd`.
fn pollfd(fd: BorrowedFd, events: libc::c_short) -> libc::pollfd {
    libc::pollfd {
        fd: fd.as_raw_fd(),
        events,
        revents: 0,
    }
}

/// `poll`'s timeout for `left`: milliseconds rounded up, so that a wait
/// never ends just before its deadline and spins. In 64 bits: `as_nanos`
/// is a u128, whose division is a call into the C runtime's `__udivti3`,
/// out of the code every report runs (build.rs, "Hot code first"); inlined
/// for the same reason, into `sleep_until`, which every interval runs.
#[inline(always)]
pub(crate) fn poll_millis(left: std::time::Duration) -> i32 {
    left.as_secs()
        .saturating_mul(1000)
        .saturating_add(u64::from(left.subsec_nanos().div_ceil(1_000_000)))
        .min(i32::MAX as u64) as i32
}

/// True when an I/O error means the reader of our output went away.
pub fn is_broken_pipe(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::BrokenPipe
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixStream;
    use std::time::Duration;

    /// The actions of [`STOP_SIGNALS`] as they were, set again when
    /// dropped: the test binary's other tests, and a `timeout` that
    /// sends SIGTERM to a hung one, find them as the binary started
    /// (signal-hook's handlers stay installed otherwise, and would catch
    /// SIGTERM for as long as the binary runs). signal-hook still counts
    /// its handlers as installed: a later [`StopSignal::install`] in this
    /// process would catch nothing, so no other test installs one.
    struct ActionsRestored(Vec<(i32, libc::sigaction)>);

    impl ActionsRestored {
        fn save() -> ActionsRestored {
            let saved = STOP_SIGNALS.map(|signal| (signal, current_action(signal).unwrap()));
            ActionsRestored(saved.to_vec())
        }
    }

    impl Drop for ActionsRestored {
        fn drop(&mut self) {
            for (signal, action) in &self.0 {
                // SAFETY: sets an action sigaction(2) gave for this signal.
                unsafe { libc::sigaction(*signal, action, std::ptr::null_mut()) };
            }
        }
    }

    /// One test: a signal raised in one would be caught by the other's handlers.
    #[test]
    fn a_signal_cuts_a_sleep_or_a_wait_short_and_is_remembered() {
        use std::io::Write;
        let _restored = ActionsRestored::save();
        let stop = StopSignal::install().unwrap();
        assert!(stop.sleep_until(Instant::now() + Duration::from_millis(20)));
        let (reader, mut writer) = UnixStream::pair().unwrap();
        let start = Instant::now();
        let writes = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            writer.write_all(b"x").unwrap();
            writer
        });
        assert!(stop.wait_readable(std::os::fd::AsFd::as_fd(&reader)));
        assert!(start.elapsed() >= Duration::from_millis(50));
        let _writer = writes.join().unwrap();
        // A readable descriptor ends a sleep early; an idle one lets it run
        // to its deadline.
        let start = Instant::now();
        let deadline = start + Duration::from_secs(30);
        assert!(stop.sleep_until_or_readable(deadline, reader.as_fd()));
        assert!(start.elapsed() < Duration::from_secs(10));
        let (idle, _idle_writer) = UnixStream::pair().unwrap();
        let deadline = Instant::now() + Duration::from_millis(50);
        assert!(stop.sleep_until_or_readable(deadline, idle.as_fd()));
        assert!(Instant::now() >= deadline);
        let start = Instant::now();
        let raiser = std::thread::spawn(|| {
            std::thread::sleep(Duration::from_millis(50));
            // SAFETY: raise(3) of a signal this process catches.
            assert_eq!(unsafe { libc::raise(libc::SIGHUP) }, 0);
        });
        assert!(!stop.sleep_until(Instant::now() + Duration::from_secs(30)));
        assert!(start.elapsed() < Duration::from_secs(10));
        assert_eq!(stop.caught(), Some(libc::SIGHUP));
        raiser.join().unwrap();
        // A fresh flag: a signal also cuts waiting for a descriptor short.
        let stop = StopSignal::install().unwrap();
        let (idle, _idle_writer) = UnixStream::pair().unwrap();
        let raiser = std::thread::spawn(|| {
            std::thread::sleep(Duration::from_millis(50));
            // SAFETY: raise(3) of a signal this process catches.
            assert_eq!(unsafe { libc::raise(libc::SIGTERM) }, 0);
        });
        assert!(!stop.wait_readable(std::os::fd::AsFd::as_fd(&idle)));
        assert_eq!(stop.caught(), Some(libc::SIGTERM));
        raiser.join().unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        assert!(!stop.sleep_until_or_readable(deadline, idle.as_fd()));
        // A wait past the signals seen goes on until the next one, which
        // it learns of, with who sent it.
        let seen = stop.latest().count();
        assert_eq!(seen, 1);
        let deadline = Instant::now() + Duration::from_millis(50);
        assert!(stop.sleep_until_next(Some(deadline), Some(idle.as_fd()), seen));
        assert!(Instant::now() >= deadline);
        let raiser = std::thread::spawn(|| {
            std::thread::sleep(Duration::from_millis(50));
            // SAFETY: raise(3) of a signal this process catches.
            assert_eq!(unsafe { libc::raise(libc::SIGINT) }, 0);
        });
        assert!(!stop.sleep_until_next(None, Some(idle.as_fd()), seen));
        raiser.join().unwrap();
        let latest = stop.latest();
        assert_eq!(latest.signal(), Some(libc::SIGINT));
        assert_eq!(latest.count(), 2);
        assert!(!stop.sleep_until_next(None, None, seen));
        assert!(stop.sleep_until_next(Some(Instant::now()), None, latest.count()));
        // Both were sent by this process (raise), not by a terminal; taken
        // once.
        let pending = stop.take_pending();
        let sent: Vec<i32> = pending.sent().collect();
        assert_eq!(sent, [libc::SIGINT, libc::SIGTERM]);
        assert_eq!(pending.from_terminal().count(), 0);
        assert_eq!(stop.take_pending().sent().count(), 0);
        // Signals that come together are each pending, whichever is the
        // latest: blocked, then let through at once, the kernel delivers
        // both before this thread looks.
        // SAFETY: sigset operations on a local set, and pthread_sigmask of
        // this thread alone; raise(3) of signals this process catches.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGHUP);
            libc::sigaddset(&mut set, libc::SIGUSR2);
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            assert_eq!(libc::raise(libc::SIGUSR2), 0);
            assert_eq!(libc::raise(libc::SIGHUP), 0);
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        }
        assert_eq!(stop.latest().count(), latest.count() + 2);
        let sent: Vec<i32> = stop.take_pending().sent().collect();
        assert_eq!(sent, [libc::SIGHUP, libc::SIGUSR2]);
    }

    #[test]
    fn every_stop_signal_has_a_bit_of_its_own() {
        assert!(STOP_SIGNALS.iter().all(|&s| (1..32).contains(&s)));
    }

    #[test]
    fn a_setup_failure_says_what_could_not_be_set_up_and_why() {
        let err = SignalSetupError(io::Error::from_raw_os_error(libc::EMFILE));
        assert_eq!(
            err.to_string(),
            "cannot install signal handlers: Too many open files (os error 24)"
        );
    }
}
