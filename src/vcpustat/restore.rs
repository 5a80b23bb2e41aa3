//! The restore plan: what vcpustat must undo before it exits.
//!
//! Every change vcpustat makes to the system is recorded here *after* the
//! write succeeded, together with the write that undoes it. `main` applies
//! the plan in one place on every way out (count reached, stop signal,
//! closed output pipe, error, panic). There is no `Drop` magic: the plan is
//! a list of writes (and the record it shares), so tests can look at it and
//! the order of exit steps is visible.
//!
//! Where other vcpustat runs share the statistics ([`Session`]), the plan
//! joins their record of what was changed for the runs: the last of them
//! to end undoes it all.

use std::panic::{self, AssertUnwindSafe};

use crate::common::cpulist::CpuList;
use crate::common::source::Source;

use super::error::VcpuError;
use super::kernel;
use super::session::{MUTEX_WAIT, Session, Shared, new_claim};

/// The memory a run that changes the system makes sure of first: an
/// allocation that fails ends the run at once, without its undo
/// ([`crate::common::alloc`]). On the simulated kernel a run's reports
/// took about 500 bytes per CPU (0.9 MB at 2,048 CPUs), and with `--svg`
/// up to some 2 kB (16 MB at 8,192 CPUs): twice that per CPU of the
/// system read (its `possible` list, else this machine's configured
/// CPUs), and 8 MiB at least.
pub fn room_for_a_run(source: &dyn Source) -> usize {
    room_for(cpus_of(source))
}

/// [`room_for_a_run`] on a system of `cpus` CPUs.
fn room_for(cpus: usize) -> usize {
    const AT_LEAST: usize = 8 << 20;
    const PER_CPU: usize = 4 << 10;
    AT_LEAST.max(cpus.saturating_mul(PER_CPU))
}

/// The CPUs the system read may have: its `possible` list, else the
/// configured CPUs of this machine.
fn cpus_of(source: &dyn Source) -> usize {
    let listed = source
        .read_string(POSSIBLE_CPUS)
        .ok()
        .and_then(|text| CpuList::parse(text.trim_end()).ok())
        .map(|list| list.cpus().len());
    // SAFETY: sysconf only reads a system setting.
    let configured = || unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    listed.unwrap_or_else(|| usize::try_from(configured()).unwrap_or(0))
}

/// The kernel's list of the CPUs that may ever be online.
const POSSIBLE_CPUS: &str = "/sys/devices/system/cpu/possible";

/// Makes sure of [`room_for_a_run`] before `what`, a change to the system.
pub fn make_sure_of_room(source: &dyn Source, what: &'static str) -> Result<(), VcpuError> {
    let bytes = room_for_a_run(source);
    if crate::common::alloc::has_room(bytes) {
        Ok(())
    } else {
        Err(VcpuError::NoRoom { what, bytes })
    }
}

/// One write that undoes a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Undo {
    /// Switch the statistics off again (we switched them on).
    SwitchOff,
    /// Put the drain frequency back to `before`, if it still is `ours`,
    /// the value vcpustat wrote: a value someone else wrote since is theirs.
    SetFreq {
        /// The frequency vcpustat set.
        ours: i32,
        /// The frequency before.
        before: i32,
    },
}

/// What applying a plan did besides the writes: the writes that failed, and
/// the changes left alone because someone else made another since.
#[derive(Debug, Default)]
pub struct Restored {
    /// Whether the run had changed anything (to undo, or to leave to the
    /// other runs).
    pub had_changes: bool,
    /// The undo writes that failed.
    pub failures: Vec<VcpuError>,
    /// Why an undo was not written.
    pub notes: Vec<String>,
}

/// What a run asked to last, which the runs' record then no longer undoes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lasting {
    /// `--enable` or `--disable` without `--temporary`.
    pub switch: bool,
    /// `--freq` without `--temporary`.
    pub freq: bool,
}

/// The undo writes still owed, oldest first, and the runs this run shares
/// the statistics with.
#[derive(Debug, Default)]
pub struct RestorePlan {
    undo: Vec<Undo>,
    /// The other runs' record, once [`RestorePlan::join`]ed.
    session: Option<Session>,
    /// The changes are in the record ([`RestorePlan::share`]).
    published: bool,
    /// The claim on the statistics' switch this run holds in the record
    /// (its own, or that of the run it found them on for).
    claim: Option<u64>,
    /// Someone else switched the statistics during the run: the on/off
    /// state is theirs, for every run that held the same claim.
    handed_over: bool,
}

impl RestorePlan {
    /// An empty plan.
    pub fn new() -> RestorePlan {
        RestorePlan::default()
    }

    /// Records a change that must be undone at exit.
    pub fn push(&mut self, undo: Undo) {
        self.undo.push(undo);
    }

    /// Forgets the on/off undo: someone else switched the statistics while we
    /// ran, so the on/off state is theirs now and we must not touch it, nor
    /// must the last of the runs we share it with: the record drops this
    /// run's claim at once (and again at its end, if that failed).
    pub fn forget_switch(&mut self) {
        self.handed_over |= self.undo.contains(&Undo::SwitchOff);
        self.undo.retain(|u| !matches!(u, Undo::SwitchOff));
        if let (Some(session), Some(claim), true) = (&mut self.session, self.claim, self.published)
        {
            // Best effort: the merge at the end does it as well.
            let _ = session.drop_claim(claim, MUTEX_WAIT);
        }
    }

    /// Meets the other vcpustat runs through `session`, entered before the
    /// state was read.
    pub fn join(&mut self, session: Session) {
        self.session = Some(session);
    }

    /// Writes this run's changes into the runs' record and lets the other
    /// runs in; then forgets the undo of what `lasting` asked for, which
    /// stays (kept until the record is written, so that a record that
    /// cannot be written leaves the system as it was), and ends the
    /// record's claims on it. A reporting run that finds the statistics on
    /// for another run takes a share of switching them off, and gets the
    /// note that says so. Without a session, only the forgetting.
    pub fn share(&mut self, lasting: Lasting) -> Result<Option<&'static str>, VcpuError> {
        let Some(session) = &mut self.session else {
            self.forget_lasting(lasting);
            return Ok(None);
        };
        let mut shared = session.shared();
        let switched = self.undo.contains(&Undo::SwitchOff) && !lasting.switch;
        if lasting.switch {
            shared.switched_on = None;
        } else if switched {
            shared.switched_on = Some(new_claim());
        }
        if lasting.freq {
            shared.freq = None;
        } else {
            for undo in &self.undo {
                if let Undo::SetFreq { ours, before } = *undo {
                    // The first run's value before, unless someone else set
                    // another since the last vcpustat did: that one is theirs.
                    let first = match shared.freq {
                        Some((first, last)) if last == before => first,
                        _ => before,
                    };
                    shared.freq = Some((first, ours));
                }
            }
        }
        let joins = !switched && session.is_member() && shared.switched_on.is_some();
        session.publish(shared).map_err(VcpuError::Session)?;
        self.published = true;
        self.forget_lasting(lasting);
        if switched || joins {
            self.claim = shared.switched_on;
        }
        if joins {
            self.undo.insert(0, Undo::SwitchOff);
            return Ok(Some(
                "the dispatch statistics are on for another vcpustat run: the last run to end \
                 switches them off",
            ));
        }
        Ok(None)
    }

    /// Forgets the undo writes of what `lasting` asked for: it stays.
    fn forget_lasting(&mut self, lasting: Lasting) {
        if lasting.switch {
            self.undo.retain(|u| !matches!(u, Undo::SwitchOff));
        }
        if lasting.freq {
            self.forget_freq();
        }
    }

    /// Forgets the frequency undo: the change is to stay (a command that
    /// did all it was asked, without --temporary).
    fn forget_freq(&mut self) {
        self.undo.retain(|u| !matches!(u, Undo::SetFreq { .. }));
    }

    /// The pending undo writes, oldest first.
    pub fn pending(&self) -> &[Undo] {
        &self.undo
    }

    /// Applies every undo write, newest first, going on after a failure;
    /// the plan is empty afterwards. A reporting run that shares the
    /// statistics leaves what it changed to the runs still reporting, and
    /// the last to end undoes what the record holds.
    pub fn apply(&mut self, source: &dyn Source) -> Restored {
        let mut restored = Restored {
            had_changes: !self.undo.is_empty(),
            ..Restored::default()
        };
        // Held until the writes are done: a run entering meanwhile waits
        // for them, and then reads the state they left.
        let mut session = self.session.take();
        if let Some(session) = session.as_mut().filter(|s| s.is_member())
            && self.published
        {
            let (handed_over, claim) = (self.handed_over, self.claim);
            let merge = |mut shared: Shared| {
                if handed_over && shared.switched_on == claim {
                    shared.switched_on = None;
                }
                shared
            };
            match session.leave(MUTEX_WAIT, merge) {
                Ok(leaving) if leaving.last => {
                    self.take_over(leaving.shared, source, &mut restored)
                }
                Ok(leaving) => self.leave_to_others(leaving.shared, &mut restored),
                Err(err) => {
                    self.undo.clear();
                    restored.notes.push(format!(
                        "cannot meet the other vcpustat runs at the end ({err}): what the \
                         runs switched is left as it is (see vcpustat --status)"
                    ));
                }
            }
        }
        // What the failed undo writes leave as it is.
        let mut left = Shared::default();
        while let Some(undo) = self.undo.pop() {
            let result = match undo {
                Undo::SwitchOff => kernel::switch(source, false),
                Undo::SetFreq { ours, before } => match kernel::read_freq(source) {
                    Ok(now) if now != ours => {
                        restored.notes.push(format!(
                            "someone else set the frequency to {now} per second while vcpustat \
                             ran: left as it is (vcpustat had set {ours}, it was {before})"
                        ));
                        Ok(())
                    }
                    _ => kernel::set_freq(source, before).map_err(|err| match err {
                        VcpuError::FreqRejected { errno, .. } => VcpuError::FreqNotPutBack {
                            before,
                            ours,
                            errno,
                        },
                        other => other,
                    }),
                },
            };
            if let Err(err) = result {
                match undo {
                    Undo::SwitchOff => {
                        left.switched_on = Some(self.claim.unwrap_or_else(new_claim))
                    }
                    Undo::SetFreq { ours, before } => left.freq = Some((before, ours)),
                }
                restored.failures.push(err);
            }
        }
        // The last run empties the record after its undo writes: killed
        // before them, it leaves the record that says what stays. What an
        // undo write failed to put back stays in it, for --status and the
        // next run to tell (emptied, no run would ever switch them off).
        if let Some(session) = session.as_mut().filter(|s| s.is_last())
            && let Err(err) = session.end_with(left)
        {
            restored.notes.push(format!(
                "cannot empty the record of the vcpustat runs ({err}): the next run will take \
                 what it held for left by a killed run"
            ));
        }
        drop(session);
        restored
    }

    /// The last run to end: the undo writes become the record's, `shared`.
    /// An undo of this run's that the record no longer holds was taken away
    /// by a lasting change another vcpustat asked for, or by a run that saw
    /// the statistics switched off (and on): each gets a note, which says
    /// whether the statistics are on or off now.
    fn take_over(&mut self, shared: Shared, source: &dyn Source, restored: &mut Restored) {
        let mine = std::mem::take(&mut self.undo);
        if let Some((before, ours)) = shared.freq {
            self.undo.push(Undo::SetFreq { ours, before });
        }
        if shared.switched_on.is_some() {
            self.undo.push(Undo::SwitchOff);
        }
        for undo in mine {
            match undo {
                Undo::SwitchOff if shared.switched_on.is_none() => restored
                    .notes
                    .push(switched_by_others(kernel::read_on(source)).into()),
                Undo::SetFreq { ours, .. } if shared.freq.is_none() => {
                    restored.notes.push(format!(
                        "another vcpustat asked for the frequency to stay as it set it: left as \
                         it is (vcpustat had set {ours} for this run)"
                    ))
                }
                _ => {}
            }
        }
    }

    /// Another run still reports: this run's undo writes are left in the
    /// record, `shared`, for the last run to end; the note says what
    /// stays until then.
    fn leave_to_others(&mut self, shared: Shared, restored: &mut Restored) {
        let mine = std::mem::take(&mut self.undo);
        let mut what = Vec::new();
        if shared.switched_on.is_some() && mine.contains(&Undo::SwitchOff) {
            what.push("the dispatch statistics stay on until the last run ends".to_string());
        }
        if let Some((before, _)) = shared.freq
            && mine.iter().any(|u| matches!(u, Undo::SetFreq { .. }))
        {
            what.push(format!(
                "the frequency goes back to {before} per second when the last run ends"
            ));
        }
        if !what.is_empty() {
            restored.notes.push(format!(
                "another vcpustat run still reports: {}",
                what.join("; ")
            ));
        }
    }
}

/// Runs `body`, then applies `plan` whatever happened (an error or a panic
/// included). Returns the body's outcome (`Err` for a panic, whose message
/// the panic hook has already printed) and what the restore did.
pub fn run_then_restore<T>(
    source: &mut dyn Source,
    plan: &mut RestorePlan,
    body: impl FnOnce(&mut dyn Source, &mut RestorePlan) -> T,
) -> (std::thread::Result<T>, Restored) {
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| body(&mut *source, &mut *plan)));
    let restored = plan.apply(source);
    (outcome, restored)
}

/// The note of a last run whose switch-off another took away, by what the
/// statistics are now (`on`, as read): kept on by a lasting `--enable` or by
/// a run that saw them switched off and on, or switched off by a lasting
/// `--disable` or a write to the file.
fn switched_by_others(on: Result<bool, VcpuError>) -> &'static str {
    match on {
        Ok(true) => {
            "the dispatch statistics are someone else's now (another vcpustat asked for them \
             to stay on, or another run saw them switched off and on): left on"
        }
        Ok(false) => {
            "the dispatch statistics were switched off while vcpustat ran (by another \
             vcpustat, or a write to the file): left off"
        }
        Err(_) => {
            "the dispatch statistics are someone else's now (another vcpustat asked for them \
             to stay as they are, or another run saw them switched off): left as they are"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::scratch::{Scratch, scratch};
    use crate::common::source::RootFs;
    use std::fs;

    /// The room grows with the CPUs of the system read, from a floor.
    #[test]
    fn the_room_counts_the_cpus_of_the_system_read() {
        assert_eq!(room_for(0), 8 << 20);
        assert_eq!(room_for(2048), 8 << 20);
        assert_eq!(room_for(8192), 32 << 20);
        assert_eq!(room_for(usize::MAX), usize::MAX);
        let dir = crate::common::scratch::scratch("vcpustat-room");
        fs::create_dir_all(dir.join("sys/devices/system/cpu")).unwrap();
        fs::write(dir.join("sys/devices/system/cpu/possible"), "0-8191\n").unwrap();
        assert_eq!(cpus_of(&RootFs::new(&dir)), 8192);
        fs::write(dir.join("sys/devices/system/cpu/possible"), "not a list\n").unwrap();
        // SAFETY: sysconf only reads a system setting.
        let configured = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
        assert_eq!(cpus_of(&RootFs::new(&dir)) as libc::c_long, configured);
    }

    #[test]
    fn applies_newest_first_and_keeps_going_after_a_failure() {
        let dir = crate::common::scratch::scratch("vcpustat-restore");
        fs::create_dir_all(dir.join("proc/powerpc")).unwrap();
        // Only the frequency file exists: switching off fails, the frequency is restored.
        fs::write(dir.join("proc/powerpc/vcpudispatch_stats_freq"), "100\n").unwrap();
        let source = RootFs::new(&dir);
        let mut plan = RestorePlan::new();
        plan.push(Undo::SetFreq {
            ours: 100,
            before: 50,
        });
        plan.push(Undo::SwitchOff);
        let restored = plan.apply(&source);
        assert_eq!(restored.failures.len(), 1);
        assert!(matches!(restored.failures[0], VcpuError::Unsupported));
        assert!(restored.notes.is_empty());
        assert_eq!(
            fs::read_to_string(dir.join("proc/powerpc/vcpudispatch_stats_freq")).unwrap(),
            "50\n"
        );
        assert!(plan.pending().is_empty());
    }

    #[test]
    fn a_panic_still_restores() {
        let dir = crate::common::scratch::scratch("vcpustat-panic");
        fs::create_dir_all(dir.join("proc/powerpc")).unwrap();
        // The frequency: a file on disk takes it as the kernel's does (the
        // statistics file on disk is not written, see kernel::switch).
        let freq = dir.join("proc/powerpc/vcpudispatch_stats_freq");
        fs::write(&freq, "100\n").unwrap();
        let mut source = RootFs::new(&dir);
        let mut plan = RestorePlan::new();
        let (outcome, restored) = run_then_restore(&mut source, &mut plan, |_, plan| {
            plan.push(Undo::SetFreq {
                ours: 100,
                before: 50,
            });
            panic!("a bug in the middle of a run");
        });
        assert!(outcome.is_err());
        assert!(restored.failures.is_empty());
        assert_eq!(fs::read_to_string(&freq).unwrap(), "50\n");
    }

    #[test]
    fn forgetting_the_switch_keeps_the_frequency_and_back() {
        let freq = Undo::SetFreq {
            ours: 100,
            before: 50,
        };
        let mut plan = RestorePlan::new();
        plan.push(freq);
        plan.push(Undo::SwitchOff);
        plan.forget_switch();
        assert_eq!(plan.pending(), &[freq]);
        plan.push(Undo::SwitchOff);
        plan.forget_freq();
        assert_eq!(plan.pending(), &[Undo::SwitchOff]);
    }

    #[test]
    fn a_frequency_someone_else_set_since_is_left_alone() {
        let dir = crate::common::scratch::scratch("vcpustat-theirs");
        fs::create_dir_all(dir.join("proc/powerpc")).unwrap();
        let freq = dir.join("proc/powerpc/vcpudispatch_stats_freq");
        // vcpustat set 100 (it was 50); another run set 200 since.
        fs::write(&freq, "200\n").unwrap();
        let source = RootFs::new(&dir);
        let mut plan = RestorePlan::new();
        plan.push(Undo::SetFreq {
            ours: 100,
            before: 50,
        });
        let restored = plan.apply(&source);
        assert!(restored.failures.is_empty());
        assert_eq!(fs::read_to_string(&freq).unwrap(), "200\n");
        assert_eq!(restored.notes.len(), 1);
        assert!(restored.notes[0].contains("someone else set the frequency to 200"));
    }

    /// A tree with a `run` directory for the runs' record, and the record.
    fn run_tree(name: &str) -> (Scratch, std::path::PathBuf) {
        let dir = scratch(&format!("vcpustat-share-{name}"));
        fs::create_dir_all(dir.join("run")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(dir.join("run"), fs::Permissions::from_mode(0o755)).unwrap();
        let record = dir.join(crate::vcpustat::session::LOCK_PATH);
        (dir, record)
    }

    fn read(record: &std::path::Path) -> Shared {
        Shared::parse(&fs::read_to_string(record).unwrap()).expect("a record")
    }

    fn joined(dir: &std::path::Path, member: bool) -> RestorePlan {
        let (session, note) = Session::enter(dir, member, MUTEX_WAIT, &|| false)
            .unwrap()
            .unwrap();
        assert_eq!(note, None);
        let mut plan = RestorePlan::new();
        plan.join(session);
        plan
    }

    #[test]
    fn what_the_last_run_fails_to_undo_stays_in_the_record() {
        let (dir, record) = run_tree("failed-undo");
        // The statistics file is missing: switching off fails. The
        // frequency goes back.
        fs::create_dir_all(dir.join("proc/powerpc")).unwrap();
        let freq = dir.join("proc/powerpc/vcpudispatch_stats_freq");
        fs::write(&freq, "20\n").unwrap();
        let mut run = joined(&dir, true);
        run.push(Undo::SetFreq {
            ours: 20,
            before: 50,
        });
        run.push(Undo::SwitchOff);
        run.share(Lasting::default()).unwrap();
        let claim = read(&record).switched_on;
        let restored = run.apply(&RootFs::new(&dir));
        assert_eq!(restored.failures.len(), 1);
        assert_eq!(fs::read_to_string(&freq).unwrap(), "50\n");
        assert_eq!(
            read(&record),
            Shared {
                switched_on: claim,
                freq: None
            }
        );
        // The next run finds it left, and says so.
        let (_, abandoned) = Session::enter(&dir, true, MUTEX_WAIT, &|| false)
            .unwrap()
            .unwrap();
        let left = Shared {
            switched_on: claim,
            freq: None,
        };
        assert_eq!(
            abandoned,
            Some(crate::vcpustat::session::Abandoned::Left(left))
        );
    }

    #[test]
    fn runs_share_their_undos_and_a_lasting_change_ends_the_claim() {
        let (dir, record) = run_tree("claims");
        // The first run switched on and set a temporary frequency.
        let mut first = joined(&dir, true);
        first.push(Undo::SetFreq {
            ours: 20,
            before: 50,
        });
        first.push(Undo::SwitchOff);
        assert_eq!(first.share(Lasting::default()).unwrap(), None);
        let claim = read(&record).switched_on;
        assert!(claim.is_some());
        assert_eq!(read(&record).freq, Some((50, 20)));
        // The second finds them on for the first: it takes a share of the
        // switch, and its frequency goes back to the first one's before.
        let mut second = joined(&dir, true);
        second.push(Undo::SetFreq {
            ours: 40,
            before: 20,
        });
        let note = second.share(Lasting::default()).unwrap();
        assert!(
            note.unwrap()
                .starts_with("the dispatch statistics are on for another")
        );
        assert!(second.pending().contains(&Undo::SwitchOff));
        assert_eq!(
            read(&record),
            Shared {
                switched_on: claim,
                freq: Some((50, 40))
            }
        );
        // A third from a value someone else set since: that one goes back.
        let mut third = joined(&dir, true);
        third.push(Undo::SetFreq {
            ours: 30,
            before: 45,
        });
        third.share(Lasting::default()).unwrap();
        assert_eq!(read(&record).freq, Some((45, 30)));
        // A lasting --freq (a command, not a run) ends the frequency's claim.
        let mut command = joined(&dir, false);
        let lasting = Lasting {
            switch: false,
            freq: true,
        };
        assert_eq!(command.share(lasting).unwrap(), None);
        assert_eq!(
            read(&record),
            Shared {
                switched_on: claim,
                freq: None
            }
        );
    }
}
