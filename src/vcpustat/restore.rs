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
    /// Put the drain frequency back.
    SetFreq(i32),
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

    /// The pending undo writes, oldest first.
    pub fn pending(&self) -> &[Undo] {
        &self.undo
    }

    /// Applies every undo write, newest first, going on after a failure.
    /// Returns the failures; the plan is empty afterwards.
    pub fn apply(&mut self, source: &dyn Source) -> Vec<VcpuError> {
        let mut failures = Vec::new();
        while let Some(undo) = self.undo.pop() {
            let result = match undo {
                Undo::SwitchOff => kernel::switch(source, false),
                Undo::SetFreq(freq) => kernel::set_freq(source, freq),
            };
            if let Err(err) = result {
                failures.push(err);
            }
        }
        failures
    }
}

/// Runs `body`, then applies `plan` whatever happened (an error or a panic
/// included). Returns the body's outcome (`Err` for a panic, whose message
/// the panic hook has already printed) and the undo writes that failed.
pub fn run_then_restore<T>(
    source: &mut dyn Source,
    plan: &mut RestorePlan,
    body: impl FnOnce(&mut dyn Source, &mut RestorePlan) -> T,
) -> (std::thread::Result<T>, Vec<VcpuError>) {
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| body(&mut *source, &mut *plan)));
    let failures = plan.apply(source);
    (outcome, failures)
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
        plan.push(Undo::SetFreq(50));
        plan.push(Undo::SwitchOff);
        let failures = plan.apply(&source);
        assert_eq!(failures.len(), 1);
        assert!(matches!(failures[0], VcpuError::Unsupported));
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
        let (outcome, failures) = run_then_restore(&mut source, &mut plan, |_, plan| {
            plan.push(Undo::SetFreq(50));
            panic!("a bug in the middle of a run");
        });
        assert!(outcome.is_err());
        assert!(failures.is_empty());
        assert_eq!(fs::read_to_string(&freq).unwrap(), "50\n");
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn forgetting_the_switch_keeps_the_frequency() {
        let mut plan = RestorePlan::new();
        plan.push(Undo::SetFreq(50));
        plan.push(Undo::SwitchOff);
        plan.forget_switch();
        assert_eq!(plan.pending(), &[Undo::SetFreq(50)]);
    }
}
