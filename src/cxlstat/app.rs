//! Runs cxlstat: discovery, then listing, a dry run, or counting until
//! stopped, for a command's lifetime, or every interval.

use std::io::{self, Write};
use std::os::fd::AsFd;
use std::path::Path;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use clap::Parser;

use crate::common::cli::{
    OpenError, SourceArgs, USAGE_STATUS, end_failed, end_output_failed, is_negative_operand,
    is_output_failure, is_reader_gone, operand_too_many_status, output_error_status,
    parse_error_status, report_error, tell,
};
use crate::common::entry::Program;
use crate::common::interval::Schedule;
use crate::common::output::writer_for;
use crate::common::privilege::{drop_capabilities, forbid_tracing, is_secure};
use crate::common::run::run_samples_reporting_cut;
use crate::common::serve::{self, ScrapeError};
use crate::common::signals::StopSignal;
use crate::common::source::Source;
use crate::common::stdout::StoppableStdout;
use crate::common::temp_file::check_chosen_outputs;

use super::chart::CxlCharts;
use super::cli::{Action, Args, CountFormat, CountOptions, Options, Timing};
use super::counting::{Counters, refuses_only_the_event};
use super::error::CxlError;
use super::render::{self, CountOutput, CountView, Span};
use super::resolve::{driver_warnings, resolve, select_pmus};
use super::spec::parse_event_args;
use super::stats::Reading;
use super::sysfs::{self, EVENT_SOURCE_DIR, Pmu};
use super::workload::{NotStarted, Workload, exit_code, is_program, pidfd};

const TOOL: &str = "cxlstat";

/// cxlstat, as its binary starts it ([`crate::common::entry`]).
pub const PROGRAM: Program = Program {
    name: TOOL,
    command: super::cli::command,
    main,
};

/// The word after INTERVAL and COUNT (`cxlstat -e x 1 2 3`): an argument
/// clap did not expect that is no option (a command goes after `--`, so
/// every other word has a place), in `args`, the command line.
fn operand_too_many<'a>(err: &'a clap::Error, args: &[String]) -> Option<&'a str> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if err.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    match err.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(word))
            if !word.starts_with('-') || is_negative_operand(word, args) =>
        {
            Some(word)
        }
        _ => None,
    }
}

/// A program named where INTERVAL goes (`cxlstat -e x sleep 1`, as
/// `perf stat -e x sleep 1` takes it): the word, when `-- CMD` would run
/// it.
fn command_without_dashes(err: &clap::Error) -> Option<&str> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if err.kind() != ErrorKind::ValueValidation {
        return None;
    }
    match (
        err.get(ContextKind::InvalidArg),
        err.get(ContextKind::InvalidValue),
    ) {
        (Some(ContextValue::String(arg)), Some(ContextValue::String(word)))
            if arg == "[INTERVAL]" && is_program(word) =>
        {
            Some(word)
        }
        _ => None,
    }
}

/// The program: parses `raw` (the program's name first), runs, and gives
/// the exit status.
pub fn main(raw: Vec<String>) -> i32 {
    let args = match Args::try_parse_from(&raw) {
        Ok(args) => args,
        Err(e) => {
            if let Some(word) = command_without_dashes(&e) {
                return report_error(
                    TOOL,
                    format_args!(
                        "'{word}' is a command, not an INTERVAL: a command to count goes \
                         after -- (cxlstat -e EVENTS -- {word} ...)"
                    ),
                    USAGE_STATUS,
                );
            }
            return match operand_too_many(&e, &raw) {
                Some(word) => operand_too_many_status(TOOL, word),
                None => parse_error_status(TOOL, &e, &raw, &super::cli::command()),
            };
        }
    };
    let options = match Options::from_args(args) {
        Ok(o) => o,
        Err(e) => return report_error(TOOL, e, 2),
    };
    // The source before the stop handlers: a stop signal while a replay is
    // read (from a pipe whose writer stalls) ends the program as by
    // default, when nothing has been changed yet.
    let mut source = match open_source(&options, raw.get(1..).unwrap_or(&[])) {
        Ok(source) => source,
        Err(e) => return e.report(TOOL),
    };
    // From here a run that fails before its first sample leaves its error
    // in its recording, for a replay to give again (`end_failed`).
    // One stop flag: it ends the counting loop and a write that waits for
    // a reader who stopped reading.
    let stop = match StopSignal::install() {
        Ok(stop) => stop,
        Err(e) => return end_failed(TOOL, source.as_mut(), || report_error(TOOL, e, 1)),
    };
    let mut out = io::BufWriter::new(StoppableStdout::new(&stop));
    match run_with(&options, source.as_mut(), &mut out, &stop) {
        Ok(status) => match out.flush() {
            Ok(()) => status,
            // The command's status stands when only the reader went away.
            Err(e) if is_reader_gone(&e) => status,
            Err(e) => output_error_status(TOOL, &e),
        },
        Err(CxlError::Output(e)) => end_output_failed(TOOL, source.as_mut(), &e),
        Err(e) => {
            let _ = out.flush();
            end_failed(TOOL, source.as_mut(), || report_error(TOOL, e, 1))
        }
    }
}

/// Runs `options`, writing to `out`, until the end of the count or `stop`;
/// gives the exit status on success.
pub fn run(
    options: &Options,
    raw_args: &[String],
    out: &mut dyn Write,
    stop: &StopSignal,
) -> Result<i32, CxlError> {
    let mut source = open_source(options, raw_args).map_err(|e| CxlError::Setup(e.to_string()))?;
    let result = run_with(options, source.as_mut(), out, stop);
    if result.is_err() {
        // The error is the caller's to report: the recording just ends.
        let _ = source.finish();
    }
    result
}

/// Adds to a refusal of the event itself (EINVAL, ENOENT...) under
/// `--sysroot` where it comes from: the tree gave the PMU and its perf
/// type, while `perf_event_open` asks the running kernel, which may have no
/// PMU of that type (a fixture tree's `type` on a machine without CXL).
/// Other failures (permissions, open files) have nothing to do with it.
fn explain_sysroot(e: CxlError, source: &SourceArgs) -> CxlError {
    match (e, &source.sysroot) {
        (
            CxlError::Open {
                pmu,
                label,
                cpu,
                explanation,
                errno: Some(errno),
            },
            Some(root),
        ) if refuses_only_the_event(errno) => CxlError::Open {
            explanation: format!(
                "{explanation}; under --sysroot the PMU and its perf type come from {}, \
                 while the running kernel counts: it needs a PMU of that type of its own",
                crate::common::escape::path(root)
            ),
            pmu,
            label,
            cpu,
            errno: Some(errno),
        },
        (e, _) => e,
    }
}

/// Opens where the kernel files come from, after refusing what raised
/// privileges must not allow and outputs that would overwrite an input.
fn open_source(options: &Options, raw_args: &[String]) -> Result<Box<dyn Source>, OpenError> {
    if let Action::Count(count) = &options.action {
        let textfile = match &count.output {
            CountFormat::Expo(crate::common::expo::Target::Textfile(path)) => Some(path.as_path()),
            _ => None,
        };
        check_chosen_outputs(
            count.svg.as_deref(),
            textfile,
            options.source.record.as_deref(),
            &options.source.inputs(),
        )
        .map_err(OpenError::Message)?;
        if count.dry_run {
            return options.source.open_unrecorded(TOOL, raw_args);
        }
    }
    options.source.open(TOOL, raw_args)
}

/// Runs `options` on `source`, then finishes it (a recording's last frame)
/// when the run succeeds: a failure is the caller's to report, and to end
/// the recording with ([`end_failed`]). `stop` is installed: it also ends
/// a write to a recording nobody reads.
fn run_with(
    options: &Options,
    source: &mut dyn Source,
    out: &mut dyn Write,
    stop: &StopSignal,
) -> Result<i32, CxlError> {
    source.set_stop(stop);
    let status = match with_recorded_events(options, source) {
        Ok(Some(recorded)) => run_on(&recorded, source, out, stop),
        Ok(None) => run_on(options, source, out, stop),
        Err(e) => Err(e),
    }
    .map_err(|e| explain_sysroot(e, &options.source))?;
    // The interval loop has already finished it: a no-op then.
    source
        .finish()
        .map_err(|e| CxlError::Setup(e.to_string()))?;
    Ok(status)
}

/// The longest argument the kernel passes to a program: its
/// `MAX_ARG_STRLEN`, 32 pages of 4 KiB, less the NUL.
const LONGEST_ARG: usize = 32 * 4096 - 1;

/// A replay given no `-e` counts what its recording counted: `options`
/// with the recorded run's `-e`, and its `--pmu` unless some are given.
/// `None` when `options` have their events (or list).
fn with_recorded_events(
    options: &Options,
    source: &dyn Source,
) -> Result<Option<Options>, CxlError> {
    let Action::Count(count) = &options.action else {
        return Ok(None);
    };
    if !count.events.is_empty() {
        return Ok(None);
    }
    let replay = options.source.replay.as_deref().unwrap_or(Path::new("-"));
    let replay = crate::common::escape::path(replay);
    let recorded = source.recorded_args().unwrap_or_default();
    // No command line holds a longer argument: one in a header is forged,
    // and quoted whole in the messages about it.
    if let Some(long) = recorded.iter().find(|a| a.len() > LONGEST_ARG) {
        return Err(CxlError::Setup(format!(
            "{replay}: the recorded run's arguments are not cxlstat's: an argument of {} \
             bytes, longer than a command line's ({LONGEST_ARG})",
            long.len()
        )));
    }
    let program = std::iter::once(TOOL.to_string());
    let args = Args::try_parse_from(program.chain(recorded.iter().cloned())).map_err(|e| {
        use clap::error::ErrorKind;
        // What clap says of these kinds is empty.
        let why = match e.kind() {
            ErrorKind::DisplayHelp
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            | ErrorKind::DisplayVersion => "they ask for --help or --version".to_string(),
            kind => kind.to_string(),
        };
        CxlError::Setup(format!(
            "{replay}: the recorded run's arguments are not cxlstat's: {why}"
        ))
    })?;
    if args.events.is_empty() {
        return Err(CxlError::Spec(format!(
            "nothing to do: the run recorded in {replay} counted no events (-e); give -e \
             EVENTS to show, or --list or --list-events"
        )));
    }
    let mut count = count.clone();
    count.events = args.events;
    if count.pmus.is_empty() {
        count.pmus = args.pmus;
    }
    Ok(Some(Options {
        source: options.source.clone(),
        action: Action::Count(count),
    }))
}

fn run_on(
    options: &Options,
    source: &mut dyn Source,
    out: &mut dyn Write,
    stop: &StopSignal,
) -> Result<i32, CxlError> {
    let mut found = sysfs::discover(source)?;
    // A replay lacking part of sysfs would list PMUs without it, or none.
    source
        .check_answered()
        .map_err(|e| CxlError::Setup(e.to_string()))?;
    if found.pmus.is_empty() {
        return Err(match found.unreadable.into_iter().next() {
            Some((_, why)) => why,
            None => CxlError::NoCxlPmu {
                dir: EVENT_SOURCE_DIR.to_string(),
            },
        });
    }
    // A PMU named on the command line that is there but unreadable: why it
    // could not be read, rather than that it does not exist.
    let (names, spec_names) = named_pmus(&options.action);
    for name in names {
        if let Some(why) = found.take_reason(&name) {
            return Err(why);
        }
    }
    for name in spec_names {
        if let Some(why) = found.take_spec_reason(&name) {
            return Err(why);
        }
    }
    for (name, why) in &found.unreadable {
        tell(TOOL, format_args!("warning: {name} is left out: {why}"));
    }
    act(options, &found.pmus, source, out, stop)
}

/// The PMUs the command line names: those of `--list-events PMU` and
/// `--pmu PMU`, then those of the `PMU/.../` events, which may name several
/// ([`sysfs::numbered_after`]; none when the events do not parse: counting
/// then says why).
fn named_pmus(action: &Action) -> (Vec<String>, Vec<String>) {
    match action {
        Action::List | Action::ListEvents(None) => (Vec::new(), Vec::new()),
        Action::ListEvents(Some(name)) => (vec![name.clone()], Vec::new()),
        Action::Count(count) => {
            let groups = parse_event_args(&count.events).unwrap_or_default();
            let members = groups.into_iter().flat_map(|g| g.members);
            (count.pmus.clone(), members.filter_map(|m| m.pmu).collect())
        }
    }
}

/// Lists or counts on the PMUs found.
fn act(
    options: &Options,
    pmus: &[Pmu],
    source: &mut dyn Source,
    out: &mut dyn Write,
    stop: &StopSignal,
) -> Result<i32, CxlError> {
    match &options.action {
        Action::List => render::list_pmus(pmus, out)?,
        Action::ListEvents(which) => {
            let chosen: Vec<&Pmu> = match which {
                Some(name) => select_pmus(pmus, std::slice::from_ref(name))?
                    .into_iter()
                    .map(|i| &pmus[i])
                    .collect(),
                None => pmus.iter().collect(),
            };
            render::list_events(&chosen, out)?;
        }
        Action::Count(count) => return run_count(count, pmus, source, out, stop),
    }
    Ok(0)
}

fn paranoid(source: &dyn Source) -> Option<i64> {
    source
        .read_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Why a counting loop stopped before its count: the command it ran exited,
/// or an error.
enum Halt {
    /// The command being run exited.
    CommandDone(ExitStatus),
    /// A real error.
    Failed(CxlError),
}

impl From<io::Error> for Halt {
    fn from(e: io::Error) -> Halt {
        Halt::Failed(CxlError::Output(e))
    }
}

impl From<CxlError> for Halt {
    fn from(e: CxlError) -> Halt {
        Halt::Failed(e)
    }
}

/// The counters of a run, the readings of the previous sample and the view
/// that reports the difference.
struct Session {
    counters: Counters,
    view: CountView,
    charts: Option<CxlCharts>,
    notes: Vec<String>,
    previous: Vec<Reading>,
    /// The source's elapsed time at the baseline read, where the time
    /// column starts (as perf stat's starts when it enables the counters),
    /// at the previous report, and at the latest read.
    baseline_elapsed: Duration,
    last_elapsed: Duration,
    read_elapsed: Duration,
    /// A command runs (`--`): the reports go on without a reader, to the
    /// charts and the recording, until it ends ([`Session::report`]).
    outlives_reader: bool,
    /// The reader of the reports went away: they are no longer written.
    reader_gone: bool,
}

impl Session {
    /// Reads every counter, then reports: the first sample is the
    /// baseline; later ones report the change since the previous report.
    fn sample(
        &mut self,
        source: &mut dyn Source,
        index: u64,
        out: &mut dyn Write,
    ) -> Result<(), CxlError> {
        self.read(source)?;
        self.report(source, index, out)
    }

    /// Reads every counter and the source's elapsed time, without
    /// reporting. A replayed time below the previous read's is a damaged
    /// recording (a live clock is monotonic).
    fn read(&mut self, source: &dyn Source) -> Result<(), CxlError> {
        // Taken just before the reads, as perf stat takes its interval's
        // time: each counter is then read a like moment after its sample's
        // time, so a count matches the time between two samples even when
        // a read takes long (the first, moving the thread between CPUs).
        let elapsed = source.elapsed();
        self.counters.read(source, &mut self.notes)?;
        source
            .check_answered()
            .map_err(|e| CxlError::Setup(e.to_string()))?;
        if elapsed < self.read_elapsed
            && let Some(origin) = source.sample_origin()
        {
            return Err(CxlError::Damaged {
                origin,
                problem: format!(
                    "elapsed_ns went from {} to {}, expected at least {} (the monotonic time \
                     since the start never goes back)",
                    self.read_elapsed.as_nanos(),
                    elapsed.as_nanos(),
                    self.read_elapsed.as_nanos()
                ),
            });
        }
        self.read_elapsed = elapsed;
        Ok(())
    }

    /// Reports the latest read against the previous report's (index 0:
    /// takes it as the baseline).
    fn report(
        &mut self,
        source: &dyn Source,
        index: u64,
        out: &mut dyn Write,
    ) -> Result<(), CxlError> {
        let elapsed = self.read_elapsed;
        if index == 0 {
            // The first read tells which events the kernel refused.
            self.view.leave_out(self.counters.refused());
            self.previous.clear();
            self.previous.extend_from_slice(self.counters.readings());
            self.baseline_elapsed = elapsed;
        } else {
            let span = Span {
                previous: &self.previous,
                current: self.counters.readings(),
                elapsed: elapsed.saturating_sub(self.last_elapsed),
                since_start: elapsed.saturating_sub(self.baseline_elapsed),
                time: source.now(),
                index,
                notes: &self.notes,
                gone: self.counters.gone(),
            };
            // A reader gone ends the output, not a command's run: the
            // charts and the recording go on until the command ends, and
            // its status is the run's (`cxlstat -I 1000 -- make | head`
            // exited 0 at once, the command orphaned and its status lost;
            // perf stat dies of SIGPIPE there).
            let written = match self.reader_gone {
                true => Ok(()),
                false => self.view.report(out, &span),
            };
            match written {
                Err(e) if self.outlives_reader && is_reader_gone(&e) => self.reader_gone = true,
                written => written?,
            }
            if let Some(charts) = &mut self.charts {
                charts
                    .sample(span.time, self.view.rates(&span))
                    .map_err(CxlError::Chart)?;
            }
            self.previous.copy_from_slice(self.counters.readings());
            self.notes.clear();
        }
        self.last_elapsed = elapsed;
        Ok(())
    }
}

fn run_count(
    options: &CountOptions,
    pmus: &[Pmu],
    source: &mut dyn Source,
    out: &mut dyn Write,
    stop: &StopSignal,
) -> Result<i32, CxlError> {
    let specs = parse_event_args(&options.events).map_err(CxlError::Spec)?;
    let selected = select_pmus(pmus, &options.pmus)?;
    let plan = resolve(pmus, &specs, &selected)?;
    let exposed = options.listen.is_some() || matches!(options.output, CountFormat::Expo(_));
    if let Some(event) = plan.repeated_event().filter(|_| exposed) {
        let pmu = &pmus[event.pmu].name;
        return Err(CxlError::Spec(if event.named {
            format!(
                "the name {} is given to two events on {pmu}, and a Prometheus series must \
                 be unique: give each its own name=",
                event.label
            )
        } else {
            format!(
                "{} is given twice on its PMU, and a Prometheus series must be unique: \
                 drop one, or tell them apart with a name= term (PMU/...,name=NAME/)",
                event.perf_name(pmu)
            )
        }));
    }
    for warning in driver_warnings(&plan, pmus) {
        tell(TOOL, format_args!("warning: {warning}"));
    }
    let workload = (!options.command.is_empty()).then_some(Workload {
        command: &options.command,
    });
    if let Some(Err(not_started)) = workload.as_ref().map(Workload::check) {
        return Ok(end_failed(TOOL, source, || {
            report_error(TOOL, not_started.error, not_started.status)
        }));
    }
    if options.dry_run {
        render::dry_run(&plan, pmus, out)?;
        return Ok(0);
    }
    let intervals = options.timing != Timing::AtEnd;
    let output = match &options.output {
        CountFormat::Text => CountOutput::Text { intervals },
        CountFormat::Core(format) => {
            CountOutput::Frames(writer_for(*format, render::schema(), ","))
        }
        CountFormat::Expo(target) => CountOutput::Expo(crate::common::expo::Publisher::new(
            target.clone(),
            TOOL,
            intervals,
        )),
        CountFormat::PerfCsv(separator) => CountOutput::PerfCsv {
            separator: separator.clone(),
            intervals,
        },
    };
    // Bound first: a port in use fails before any counter is opened.
    let listener = match options.listen {
        Some(addr) => Some(serve::bind(addr).map_err(|e| CxlError::Setup(e.to_string()))?),
        None => None,
    };
    let mut counters = Counters::open(
        &plan,
        pmus,
        source.is_live(),
        &source.recorded_values(),
        paranoid(source),
    )?;
    counters.enable()?;
    // The events are open: raised privileges (CAP_PERFMON from setcap) serve
    // nothing else, and not the command run after `--`. A run by root itself
    // (or a test calling `run` in process) keeps its own capabilities.
    // Non-dumpable first: without capabilities the caller may otherwise
    // ptrace the process and take its counters (see `forbid_tracing`).
    if is_secure() {
        forbid_tracing()
            .map_err(|e| CxlError::Setup(format!("cannot make the process non-dumpable: {e}")))?;
        drop_capabilities()
            .map_err(|e| CxlError::Setup(format!("cannot drop capabilities: {e}")))?;
    }
    let mut session = Session {
        counters,
        // Expositions keep one series per PMU: sum by (event) aggregates.
        view: CountView::new(
            &plan,
            pmus,
            options.aggregate
                && options.listen.is_none()
                && !matches!(output, CountOutput::Expo(_)),
            output,
        ),
        charts: options.svg.clone().map(|path| {
            let host = source.uname().map(|u| u.nodename).unwrap_or_default();
            let title = format!("cxlstat on {host}: CXL PMU event rates");
            let names = pmus.iter().map(|p| p.name.clone()).collect();
            CxlCharts::new(path, title, names, source.is_live())
        }),
        notes: Vec::new(),
        previous: Vec::new(),
        baseline_elapsed: Duration::ZERO,
        last_elapsed: Duration::ZERO,
        read_elapsed: Duration::ZERO,
        outlives_reader: false,
        reader_gone: false,
    };
    if let Some(listener) = listener {
        serve_counts(&mut session, listener, source, stop)?;
        return Ok(0);
    }
    let counted = match options.timing.schedule() {
        None => count_until_end(&mut session, workload, source, stop, out),
        Some(schedule) => count_every(&mut session, workload, &schedule, source, stop, out),
    };
    let counted = match counted {
        Ok(counted) => counted,
        Err(e) => {
            // A document begun is closed whatever stopped the counting,
            // unless the output itself failed.
            if !matches!(&e, CxlError::Output(io) if is_output_failure(io)) {
                let _ = session.view.end(out);
            }
            // The charts end with every run, an error's included (a replay
            // writes them only here); when the reader went away, the run is
            // otherwise done, and what they could not do is what to say.
            let charted = finish_charts(&session);
            if matches!(&e, CxlError::Output(io) if is_reader_gone(io)) {
                charted?;
            }
            return Err(e);
        }
    };
    // Nothing of the statistics was written if the command did not start.
    let status = match counted {
        Ok(status) => status,
        Err(not_started) => {
            return Ok(end_failed(TOOL, source, || {
                report_error(TOOL, not_started.error, not_started.status)
            }));
        }
    };
    // The document is closed even when the charts cannot be written.
    let charted = finish_charts(&session);
    let ended = session.view.end(out);
    charted?;
    match ended {
        Err(e) if is_reader_gone(&e) => Ok(status),
        Err(e) => Err(CxlError::Output(e)),
        Ok(()) => Ok(status),
    }
}

/// Ends the session's charts, if any ([`CxlCharts::finish`]).
fn finish_charts(session: &Session) -> Result<(), CxlError> {
    match &session.charts {
        Some(charts) => charts.finish().map_err(CxlError::Chart),
        None => Ok(()),
    }
}

/// `--listen`: reads every counter at each scrape until stopped. A PMU
/// that goes away gets a note on standard error and its series end (go
/// stale in Prometheus) while the others are served; only a read that
/// fails outright (a replay's damage, which --listen cannot have) fails
/// the scrape.
fn serve_counts(
    session: &mut Session,
    listener: std::net::TcpListener,
    source: &mut dyn Source,
    stop: &StopSignal,
) -> Result<(), CxlError> {
    session.counters.read_locally();
    let source: &dyn Source = source;
    // A first read says which events the kernel refused, once; they have
    // no series.
    session.counters.read(source, &mut session.notes)?;
    session.view.leave_out(session.counters.refused());
    for note in session.notes.drain(..) {
        tell(TOOL, format_args!("note: {note}"));
    }
    serve::serve(listener, TOOL, &["read"], stop, &mut |e| {
        session.notes.clear();
        // Live reads: a damaged recording cannot be served (--listen refuses --replay).
        session
            .counters
            .read(source, &mut session.notes)
            .map_err(|e| ScrapeError {
                cause: "read",
                message: e.to_string(),
            })?;
        // A PMU that went away: one note, and its series end; the others
        // are still served.
        for note in session.notes.drain(..) {
            tell(TOOL, format_args!("note: {note}"));
        }
        session
            .view
            .expose(session.counters.readings(), session.counters.gone(), e);
        Ok(())
    })
    .map_err(|e| CxlError::Setup(e.to_string()))
}

/// Reads the baseline, then starts the command after `--` (live runs), as
/// perf stat enables its counters before it starts the workload: the
/// command's first moments are counted, and the time column spans all of
/// it. The output begins after that read, as iostat-rs's and vcpustat's
/// do: a run whose events cannot be read fails with nothing on standard
/// output. With a command, it begins once the command has started:
/// nothing of the statistics is written for one that cannot start.
fn start(
    session: &mut Session,
    workload: Option<&Workload>,
    source: &mut dyn Source,
    out: &mut dyn Write,
) -> Result<Result<Option<Child>, NotStarted>, CxlError> {
    let command = workload.filter(|_| source.is_live());
    session.sample(source, 0, out)?;
    let Some(w) = command else {
        session.view.begin(out)?;
        return Ok(Ok(None));
    };
    match w.spawn(session.counters.raised_nofile()) {
        Ok(child) => {
            session.view.begin(out)?;
            Ok(Ok(Some(child)))
        }
        Err(not_started) => Ok(Err(not_started)),
    }
}

/// Counts until a stop signal or the end of the command, then reports once.
/// The output begins only once the command has started.
fn count_until_end(
    session: &mut Session,
    workload: Option<Workload>,
    source: &mut dyn Source,
    stop: &StopSignal,
    out: &mut dyn Write,
) -> Result<Result<i32, NotStarted>, CxlError> {
    let live = source.is_live();
    let child = match start(session, workload.as_ref(), source, out)? {
        Ok(child) => child,
        Err(not_started) => return Ok(Err(not_started)),
    };
    session.outlives_reader = child.is_some();
    let mut status = 0;
    if live {
        match (&workload, child) {
            (Some(w), Some(mut child)) => status = w.wait(&mut child, stop)?,
            _ => {
                while stop.caught().is_none() {
                    stop.sleep_until(Instant::now() + Duration::from_secs(3600));
                }
            }
        }
    }
    if live {
        // A recording begins its next frame.
        source.next_sample()?;
        session.sample(source, 1, out)?;
    } else {
        // A replay runs until its frames run out, as a live run until it
        // is stopped: one report of the whole recording, from its first
        // frame to its last (a recording of intervals gives the run's
        // total). Every frame is read, as the recorded run read it: a PMU
        // that went away, or a damaged frame, is found where it happened.
        let mut read = false;
        while source.next_sample()? {
            session.read(source)?;
            read = true;
        }
        if read {
            session.report(source, 1, out)?;
        }
    }
    Ok(Ok(status))
}

/// Reports every interval through the shared loop until the count is
/// reached, a stop signal arrives or the command ends. The output begins
/// only once the command has started.
fn count_every(
    session: &mut Session,
    workload: Option<Workload>,
    schedule: &Schedule,
    source: &mut dyn Source,
    stop: &StopSignal,
    out: &mut dyn Write,
) -> Result<Result<i32, NotStarted>, CxlError> {
    let mut child = match start(session, workload.as_ref(), source, out)? {
        Ok(child) => child,
        Err(not_started) => return Ok(Err(not_started)),
    };
    session.outlives_reader = child.is_some();
    // Read where the counters live, after the command started so that it
    // keeps the CPUs it was given.
    session.counters.read_locally();
    // The last report ends when the command does, as perf stat's does,
    // not at the next interval.
    let ended = child.as_ref().and_then(pidfd);
    let result = run_samples_reporting_cut(
        schedule,
        source,
        stop,
        ended.as_ref().map(|fd| fd.as_fd()),
        |source, index| -> Result<(), Halt> {
            // The loop's first tick is the baseline, read already. A command
            // that has ended by then is not waited for here: its end wakes
            // the loop at once, whose next tick reports the part counted
            // (ending at the baseline, a quick command, or one on a loaded
            // machine, left the run without a single report).
            if index == 0 {
                return Ok(());
            }
            session.sample(source, index, out)?;
            if let (Some(child), Some(w)) = (child.as_mut(), &workload)
                && let Some(status) = child.try_wait().map_err(|e| w.error(e))?
            {
                return Err(Halt::CommandDone(status));
            }
            Ok(())
        },
    );
    let wait_for_command = |child: Option<&mut Child>| match (child, &workload) {
        (Some(c), Some(w)) => w.wait(c, stop).map(Ok),
        _ => Ok(Ok(0)),
    };
    match result {
        // Stopped before the command ended: wait for it, as perf does.
        Ok(_) => wait_for_command(child.as_mut()),
        Err(Halt::CommandDone(status)) => Ok(Ok(exit_code(status))),
        // Failed (a recording that cannot be written, `--record -` whose
        // reader left): the command is not left behind, orphaned; the
        // error is the run's once it has ended.
        Err(Halt::Failed(e)) => {
            // The failure is what the run reports, whatever the wait says.
            let _ = wait_for_command(child.as_mut());
            Err(e)
        }
    }
}
