//! The restore plan: what vcpustat must undo before it exits.
//!
//! Every change vcpustat makes to the system is recorded here *after* the
//! write succeeded, together with the write that undoes it. `main` applies
//! the plan in one place on every way out (count reached, stop signal,
//! closed output pipe, error, panic). There is no `Drop` magic: the plan is
//! plain data, so tests can look at it and the order of exit steps is visible.

use std::panic::{self, AssertUnwindSafe};

use crate::common::source::Source;

use super::error::VcpuError;
use super::kernel;

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
    /// The undo writes that failed.
    pub failures: Vec<VcpuError>,
    /// Why an undo was not written.
    pub notes: Vec<String>,
}

/// The undo writes still owed, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RestorePlan {
    undo: Vec<Undo>,
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
    /// ran, so the on/off state is theirs now and we must not touch it.
    pub fn forget_switch(&mut self) {
        self.undo.retain(|u| !matches!(u, Undo::SwitchOff));
    }

    /// Forgets the frequency undo: the change is to stay (a command that
    /// did all it was asked, without --temporary).
    pub fn forget_freq(&mut self) {
        self.undo.retain(|u| !matches!(u, Undo::SetFreq { .. }));
    }

    /// The pending undo writes, oldest first.
    pub fn pending(&self) -> &[Undo] {
        &self.undo
    }

    /// Applies every undo write, newest first, going on after a failure;
    /// the plan is empty afterwards.
    pub fn apply(&mut self, source: &dyn Source) -> Restored {
        let mut restored = Restored::default();
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
                    _ => kernel::set_freq(source, before),
                },
            };
            if let Err(err) = result {
                restored.failures.push(err);
            }
        }
        restored
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::source::RootFs;
    use std::fs;

    #[test]
    fn applies_newest_first_and_keeps_going_after_a_failure() {
        let dir = std::env::temp_dir().join(format!("vcpustat-restore-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
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
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_panic_still_restores() {
        let dir = std::env::temp_dir().join(format!("vcpustat-panic-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
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
        fs::remove_dir_all(dir).unwrap();
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
        let dir = std::env::temp_dir().join(format!("vcpustat-theirs-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
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
        fs::remove_dir_all(dir).unwrap();
    }
}
