//! The interval loop every tool runs its samples through.

use std::io;
use std::os::fd::BorrowedFd;
use std::time::Instant;

use super::interval::Schedule;
use super::signals::StopSignal;
use super::source::Source;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// The schedule's count was reached (or the single sample was taken).
    Completed,
    /// A stop signal arrived; the sample in progress was finished first.
    Interrupted(i32),
    /// A replay ran out of recorded samples (treated like an interruption).
    Exhausted,
}

/// Takes samples on `schedule` until its count is reached, a stop signal
/// arrives or a replay runs out, calling `sample(source, index)` for each.
///
/// Live sources sleep until each sample is due (`start + index * interval`),
/// or until `wake_early` is readable (a command's pidfd: cxlstat's last
/// report ends when the command does, as perf stat's does); replays do not
/// sleep. The source is finished (a recording writes its last
/// frame) on every path out, errors included.
// Out of line: each tool's loop (this function with its `sample` inlined)
// is then the only code of the run function an interval executes again,
// instead of one part of the start-up code around it, so the pages each
// report touches are few and together (link/profile.sh lists the loop's
// functions first; BENCHMARKS.md, session 16).
#[inline(never)]
pub fn run_samples<E: From<io::Error>>(
    schedule: &Schedule,
    source: &mut dyn Source,
    stop: &StopSignal,
    wake_early: Option<BorrowedFd>,
    mut sample: impl FnMut(&mut dyn Source, u64) -> Result<(), E>,
) -> Result<RunEnd, E> {
    let result = (|| -> Result<RunEnd, E> {
        let start = Instant::now();
        let mut index = 0;
        loop {
            sample(source, index)?;
            index += 1;
            if !schedule.wants(index) {
                return Ok(RunEnd::Completed);
            }
            if let Some(signal) = stop.caught() {
                return Ok(RunEnd::Interrupted(signal));
            }
            // Before sleeping: a recording writes the sample just taken now,
            // so a run killed in its sleep keeps it.
            if !source.next_sample()? {
                return Ok(RunEnd::Exhausted);
            }
            if source.is_live() {
                let due = schedule.due(start, index);
                let slept = match wake_early {
                    Some(fd) => stop.sleep_until_or_readable(due, fd),
                    None => stop.sleep_until(due),
                };
                if !slept {
                    return Ok(RunEnd::Interrupted(stop.caught().unwrap_or(libc::SIGINT)));
                }
            }
        }
    })();
    let finished = source.finish();
    let end = result?;
    finished?;
    Ok(end)
}
