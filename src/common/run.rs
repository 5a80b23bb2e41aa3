//! The interval loop every tool runs its samples through.

use std::io;
use std::os::fd::BorrowedFd;
use std::time::Instant;

use super::interval::{Grid, Schedule};
use super::record::ReplayError;
use super::signals::StopSignal;
use super::source::Source;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// The schedule's count was reached (or the single sample was taken).
    Completed,
    /// A stop signal arrived; the sample in progress was finished first.
    Interrupted(i32),
    /// A replay ran out of recorded samples (treated like an interruption),
    /// after a report at least: one that runs out after a first sample
    /// that only starts the run is an error.
    Exhausted,
}

/// Takes samples on `schedule` until its count is reached, a stop signal
/// arrives or a replay runs out, calling `sample(source, index)` for each.
///
/// Live sources sleep until each sample is due (an interval after the last
/// was due; after a stall, an interval after the late sample,
/// [`Grid::start_sample`]), or until `wake_early` is readable (a command's
/// pidfd: cxlstat's last report ends when the command does, as perf stat's
/// does); replays do not sleep. The source is finished (a recording writes
/// its last frame) on every path out, errors included.
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
    sample: impl FnMut(&mut dyn Source, u64) -> Result<(), E>,
) -> Result<RunEnd, E> {
    sample_loop::<false, E>(schedule, source, stop, wake_early, sample)
}

/// [`run_samples`], except that a stop signal during an interval takes one
/// last sample, of the part of the interval until the signal, as `perf
/// stat -I` reports it (cxlstat); sysstat's iostat and powerpc-utils'
/// vcpustat end without it.
#[inline(never)]
pub fn run_samples_reporting_cut<E: From<io::Error>>(
    schedule: &Schedule,
    source: &mut dyn Source,
    stop: &StopSignal,
    wake_early: Option<BorrowedFd>,
    sample: impl FnMut(&mut dyn Source, u64) -> Result<(), E>,
) -> Result<RunEnd, E> {
    sample_loop::<true, E>(schedule, source, stop, wake_early, sample)
}

/// The loop of [`run_samples`] and, with `REPORT_CUT`,
/// [`run_samples_reporting_cut`]: a constant, so that the other tools'
/// loops compile to what they were without it (a run-time choice moved
/// iostat-rs's interval code into a fourth 64 kB window, measured by
/// `layout::`).
#[inline(always)]
fn sample_loop<const REPORT_CUT: bool, E: From<io::Error>>(
    schedule: &Schedule,
    source: &mut dyn Source,
    stop: &StopSignal,
    wake_early: Option<BorrowedFd>,
    mut sample: impl FnMut(&mut dyn Source, u64) -> Result<(), E>,
) -> Result<RunEnd, E> {
    let result = (|| -> Result<RunEnd, E> {
        let start = Instant::now();
        let mut grid = schedule.grid(start);
        let mut index = 0;
        // Set when a stop signal cut short an interval that is reported.
        let mut cut_by = None;
        loop {
            // The one call of `sample`, which is inlined here (see above).
            sample(source, index)?;
            if let Some(signal) = cut_by {
                return Ok(RunEnd::Interrupted(signal));
            }
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
                if index == 1 && schedule.first_starts_only {
                    return Err(only_sample(source).into());
                }
                return Ok(RunEnd::Exhausted);
            }
            if source.is_live() {
                let due = grid.as_ref().map_or(start, Grid::due);
                let slept = match wake_early {
                    Some(fd) => stop.sleep_until_or_readable(due, fd),
                    None => stop.sleep_until(due),
                };
                if !slept {
                    let signal = stop.caught().unwrap_or(libc::SIGINT);
                    if !REPORT_CUT {
                        return Ok(RunEnd::Interrupted(signal));
                    }
                    cut_by = Some(signal);
                }
                if let Some(grid) = grid.as_mut() {
                    grid.start_sample(Instant::now());
                }
            }
        }
    })();
    let finished = source.finish();
    let end = result?;
    finished?;
    Ok(end)
}

/// The error of a replay with an interval whose recording holds a single
/// sample, which only starts the run ([`Schedule::first_starts_only`]): it
/// would end without a report, as if it had printed all there was. A
/// [`ReplayError`], as the replay's others, for the tools to name the file.
#[cold]
#[inline(never)]
fn only_sample(source: &dyn Source) -> io::Error {
    let origin = source
        .sample_origin()
        .unwrap_or_else(|| "the recording".to_string());
    io::Error::new(
        io::ErrorKind::InvalidData,
        ReplayError::OnlySample { origin },
    )
}
