//! The run: read the state, apply what was asked, report, and undo what
//! vcpustat changed on its own, on every way out.

use std::io::{self, BufWriter, Write};
use std::time::SystemTime;

use clap::Parser;

use crate::common::cli::{
    self as cli, end_failed, end_output_failed, operand_too_many_status,
    parse_error_status_with_help, report_error,
};
use crate::common::entry::Program;
use crate::common::expo::{Exposition, Target, run_expositions};
use crate::common::output::{Format, Frame, FrameWriter, Row, writer_for};
use crate::common::run::run_samples;
use crate::common::serve::{self, ScrapeError};
use crate::common::signals::StopSignal;
use crate::common::source::{RootFs, Source};
use crate::common::stdout::StoppableStdout;
use crate::common::temp_file::check_chosen_outputs;

use super::chart::VcpuCharts;
use super::cli::{Cli, Mode, Options, Switch, Tool};
use super::counters::Snapshot;
use super::error::VcpuError;
use super::expose::RunningTotals;
use super::kernel;
use super::render::{ReportTime, TextRenderer, View, machine_rows, schema};
use super::report::{self, Report, Selection, Step, Tracker};
use super::restore::{Lasting, RestorePlan, Undo, make_sure_of_room, run_then_restore};
use super::session::{self, MUTEX_WAIT, Session};

/// The program name in messages.
pub const TOOL: &str = "vcpustat";

/// vcpustat, as its binary starts it ([`crate::common::entry`]).
pub const PROGRAM: Program = Program {
    name: TOOL,
    command: super::cli::command,
    main,
};

/// Runs vcpustat with `args` (the program's name first) and returns the
/// exit status.
///
/// The restore plan is applied here, after the run, whatever the run's
/// outcome (a panic included), before the status is chosen.
pub fn main(args: Vec<String>) -> i32 {
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(err) => return usage_error_status(&args, &err),
    };
    // The command line after the program's name, kept in a recording.
    let argv = args.get(1..).unwrap_or(&[]);
    if let Some(tool) = cli.command {
        return match tool {
            Tool::Trace(trace) => crate::vcpustat::trace::cli::run_args(&trace, argv),
        };
    }
    let options = match Options::from_args(cli.report) {
        Ok(options) => options,
        Err(err) => return report_error(TOOL, &err, err.exit_status()),
    };
    if let Err(message) = check_chosen_outputs(
        options.svg.as_deref(),
        options.expo.textfile.as_deref(),
        options.source.record.as_deref(),
        &options.source.inputs(),
    ) {
        return report_error(TOOL, message, 1);
    }
    // The source before the stop handlers: a stop signal while a replay is
    // read (from a pipe whose writer stalls) ends the program as by
    // default, before anything is changed.
    let mut source = match options.source.open(TOOL, argv) {
        Ok(source) => source,
        Err(err) => return err.report(TOOL),
    };
    // From here a run that fails before its first sample leaves its error
    // in its recording, for a replay to give again (`end_failed`).
    let stop = match StopSignal::install() {
        Ok(stop) => stop,
        Err(err) => return end_failed(TOOL, source.as_mut(), || report_error(TOOL, err, 1)),
    };
    source.set_stop(&stop);
    let mut plan = RestorePlan::new();
    if source.is_live() {
        match meet_other_runs(&options, &mut plan, &stop) {
            Ok(Met::Going) => {}
            // Stopped before anything was read, changed or reported: a
            // quiet end, but not status 0, which says the run was done (a
            // stop during its first interval ends with 0, after a first
            // sample that it records and that, as in powerpc-utils, is not
            // reported; a --record file here holds none, a JSON document
            // was never begun). 128 + the signal, as a shell
            // reports a program the signal ended; a replay ends so too.
            Ok(Met::Stopped(signal)) => return end_failed(TOOL, source.as_mut(), || 128 + signal),
            Err(err) => {
                let status = err.exit_status();
                return end_failed(TOOL, source.as_mut(), || report_error(TOOL, err, status));
            }
        }
    }
    let (outcome, restored) = run_then_restore(source.as_mut(), &mut plan, |source, plan| {
        run(&options, source, &stop, plan)
    });
    for note in &restored.notes {
        tell(format_args!("note: {note}"));
    }
    let restore_failures = |mut status| {
        for failure in &restored.failures {
            status = report_error(
                TOOL,
                format_args!("could not restore the dispatch statistics: {failure}"),
                1,
            );
        }
        status
    };
    match outcome {
        Ok(Ok(())) => end_failed(TOOL, source.as_mut(), || restore_failures(0)),
        // Stopped while making its changes, undone since: said, but not
        // kept as the run's refusal, which a signal's status has none of.
        Ok(Err(VcpuError::Stopped(signal))) => {
            if restored.had_changes {
                tell(format_args!(
                    "stopped by signal {signal} before the changes asked for were all made: \
                     those made are undone"
                ));
            } else {
                tell(format_args!(
                    "stopped by signal {signal}: nothing was changed"
                ));
            }
            end_failed(TOOL, source.as_mut(), || restore_failures(128 + signal))
        }
        Ok(Err(VcpuError::Output(err))) => {
            let status = end_output_failed(TOOL, source.as_mut(), &err);
            restore_failures(status)
        }
        Ok(Err(err)) => end_failed(TOOL, source.as_mut(), || {
            restore_failures(report_error(TOOL, &err, err.exit_status()))
        }),
        // The panic hook has printed the message; the state is restored.
        // The recording ends as a crashed run's: without an end line.
        Err(_) => restore_failures(101),
    }
}

/// Ends a command line clap could not parse; an error in a subcommand's
/// arguments points to that subcommand's help (`see 'vcpustat trace record
/// --help'`), which lists its options, rather than to vcpustat's.
fn usage_error_status(args: &[String], err: &clap::Error) -> i32 {
    if let Some(word) = operand_too_many(args, err) {
        return operand_too_many_status(TOOL, &word);
    }
    let command = super::cli::command();
    parse_error_status_with_help(TOOL, &help_command(args), err, args, &command)
}

/// The word after INTERVAL and COUNT (`vcpustat 1 2 3`), which clap takes
/// for a subcommand that cannot follow them; no subcommand has that name,
/// so it is one operand too many, not a misplaced subcommand. A negative
/// number there (`vcpustat 1 2 -3`) clap takes for an unknown option.
/// `args` is the command line.
fn operand_too_many(args: &[String], err: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if err.kind() == ErrorKind::UnknownArgument {
        return match err.get(ContextKind::InvalidArg) {
            Some(ContextValue::String(word)) if cli::is_negative_operand(word, args) => {
                Some(word.clone())
            }
            _ => None,
        };
    }
    if err.kind() != ErrorKind::ArgumentConflict {
        return None;
    }
    match err.get(ContextKind::InvalidSubcommand) {
        Some(ContextValue::String(word))
            if !super::cli::command()
                .get_subcommands()
                .any(|sub| sub.get_name() == word) =>
        {
            Some(word.clone())
        }
        _ => None,
    }
}

/// The command whose help explains an error in `args`: `vcpustat`, or the
/// subcommand clap had reached (`vcpustat trace`, `vcpustat trace record`),
/// as clap parses `args` when it does not stop at errors.
fn help_command(args: &[String]) -> String {
    let mut name = TOOL.to_string();
    let Ok(matches) = super::cli::command()
        .ignore_errors(true)
        .try_get_matches_from(args)
    else {
        return name;
    };
    let mut at = &matches;
    while let Some((sub, sub_matches)) = at.subcommand() {
        name.push(' ');
        name.push_str(sub);
        at = sub_matches;
    }
    name
}

/// What came of meeting the other vcpustat runs.
enum Met {
    /// The run goes on (in their session, or alone).
    Going,
    /// A stop signal (this one) came while another run held the lock:
    /// nothing was read or changed.
    Stopped(i32),
}

/// Enters the session of the vcpustat runs sharing the statistics under
/// the root, before anything is read, when this run may change them or
/// reports (and may then be the last to end). Another run stopped in the
/// middle of its changes is an error: nothing is changed; a stop signal
/// while waiting for it ends the wait at once. A lock file that
/// cannot be opened for want of permission is passed over in silence (the
/// statistics files' own refusal follows and explains), for another reason
/// with a note: the run goes on without meeting the others.
fn meet_other_runs(
    options: &Options,
    plan: &mut RestorePlan,
    stop: &StopSignal,
) -> Result<Met, VcpuError> {
    let member = options.mode.reports();
    if !member && options.switch.is_none() && options.freq.is_none() {
        return Ok(Met::Going);
    }
    // Where there are no statistics (another platform, a dedicated
    // partition) there is nothing to share, and the run's error says why:
    // no lock file is left behind for it.
    let stats = root(options).join(super::counters::STATS_PATH.trim_start_matches('/'));
    if !stats.exists() {
        return Ok(Met::Going);
    }
    match Session::enter(root(options), member, MUTEX_WAIT, &|| {
        stop.caught().is_some()
    }) {
        Ok(Some((session, abandoned))) => {
            if let Some(note) = abandoned.and_then(|a| a.note(state_now(options))) {
                tell(format_args!("note: {note}"));
            }
            plan.join(session);
            Ok(Met::Going)
        }
        Ok(None) => Ok(Met::Going),
        Err(err) if err.kind() == io::ErrorKind::PermissionDenied => Ok(Met::Going),
        // Only the stop gives up the wait: an interruption without one
        // (none is expected) is the error it is, not a quiet end.
        Err(err) if err.kind() == io::ErrorKind::Interrupted => match stop.caught() {
            Some(signal) => Ok(Met::Stopped(signal)),
            None => Err(VcpuError::Session(err)),
        },
        Err(err) if err.kind() == io::ErrorKind::TimedOut => Err(VcpuError::Session(err)),
        Err(err) => {
            tell(format_args!(
                "note: cannot meet other vcpustat runs ({err}): this run undoes its own changes \
                 at its end, whatever other runs need"
            ));
            Ok(Met::Going)
        }
    }
}

/// Whether the statistics are on, and their frequency, as the kernel files
/// say now, read past any recording (as the lock file is): to tell which
/// changes of a killed run are still in effect. `None` when unreadable.
fn state_now(options: &Options) -> Option<(bool, i32)> {
    let files = RootFs::new(root(options));
    Some((
        kernel::read_on(&files).ok()?,
        kernel::read_freq(&files).ok()?,
    ))
}

/// The root the kernel files are read from: `--sysroot`, else `/`.
fn root(options: &Options) -> &std::path::Path {
    options.source.sysroot.as_deref().unwrap_or("/".as_ref())
}

/// Prints a control message on standard error ([`cli::tell`]).
fn tell(message: impl std::fmt::Display) {
    cli::tell(TOOL, message);
}

/// One run, recording in `plan` every change to undo at exit.
pub fn run(
    options: &Options,
    source: &mut dyn Source,
    stop: &StopSignal,
    plan: &mut RestorePlan,
) -> Result<(), VcpuError> {
    // Bound first: a port in use fails before anything is switched on.
    let listener = match options.mode {
        Mode::Serve(addr) => Some(serve::bind(addr).map_err(VcpuError::Listen)?),
        _ => None,
    };
    let on = apply_changes(options, source, plan, stop)?;
    // A stop while the changes asked for were made, in a run that was to
    // report: it ends as stopped in the middle of them (what was made is
    // undone), whether or not the statistics were on already; so does one
    // before the run's own switch on. A run with nothing to change goes
    // on to its first sample, which the stop then ends.
    let changes = options.freq.is_some() || options.switch.is_some() || !on;
    if options.mode.reports() && changes {
        not_stopped(stop)?;
    }
    if !on && options.mode.reports() {
        switch_on_for_run(options, source, plan)?;
    }
    // Everything asked is done: once the other runs' record says so, a
    // lasting change stays (until then its undo is kept, so that a record
    // that cannot be written leaves the system as it was).
    let lasting = Lasting {
        switch: options.switch.is_some() && !options.temporary,
        freq: options.freq.is_some() && !options.temporary,
    };
    if let Some(note) = plan.share(lasting)? {
        tell(note);
    }
    let mut out = BufWriter::new(StoppableStdout::new(stop));
    if options.status {
        let freq = kernel::read_freq(source)?;
        writeln!(
            out,
            "dispatch statistics: {}\nfrequency: {freq} per second",
            if on { "on" } else { "off" },
        )?;
        if let Some(line) = source
            .is_live()
            .then(|| session::peek(root(options)))
            .flatten()
            .and_then(|(shared, held)| session::status_line(shared, held, (on, freq)))
        {
            writeln!(out, "{line}")?;
        }
        out.flush()?;
    }
    let target = expo_target(options);
    match (options.mode, target) {
        // One exposition of the counts as they are (after a change, of the
        // state it left: a textfile then says at once whether they are on).
        (Mode::Control | Mode::Once, Some(target)) => {
            let mut totals = RunningTotals::new();
            let snapshot = kernel::read_snapshot(source, &mut Vec::new())?;
            totals.update(&snapshot, source.elapsed());
            let mut e = Exposition::new();
            totals.expose(options.cpus.as_ref(), &mut e);
            // The sample is taken: the recording ends with its frame, even
            // when the exposition cannot be written.
            let published = target.publish(&mut out, e.as_str());
            let finished = source.finish();
            published?;
            Ok(finished?)
        }
        (Mode::Control, None) if options.format == Format::Text => Ok(source.finish()?),
        // A change with a machine format prints the counts as it left them,
        // as -o prometheus prints an exposition of them: asked for a
        // document, the user gets one (--status, text, is refused there).
        (Mode::Control | Mode::Once, None) => once(options, source, &mut out),
        (Mode::Serve(_), _) => {
            let listener =
                listener.ok_or_else(|| VcpuError::Usage("--listen: no address".into()))?;
            serve_metrics(options, listener, source, stop, plan)
        }
        (Mode::Interval { .. }, target) => match target {
            Some(target) => {
                let mut totals = RunningTotals::new();
                let mut buf = Vec::new();
                // The first sample starts the run, as for the text
                // (`Schedule::first_starts_only`).
                run_expositions(
                    TOOL,
                    &options.schedule(),
                    source,
                    stop,
                    &target,
                    &mut out,
                    |source, e| {
                        let snapshot = kernel::read_snapshot(source, &mut buf)?;
                        add_to_totals(&mut totals, &snapshot, source.elapsed(), plan);
                        totals.expose(options.cpus.as_ref(), e);
                        Ok::<(), VcpuError>(())
                    },
                )?;
                Ok(())
            }
            None => intervals(options, source, stop, plan, &mut out),
        },
    }
}

/// Switches the statistics on for an interval run or a server, which need
/// them, to be switched off again at exit.
fn switch_on_for_run(
    options: &Options,
    source: &dyn Source,
    plan: &mut RestorePlan,
) -> Result<(), VcpuError> {
    if !source.is_live() {
        return Err(VcpuError::Replay(
            "the recording starts with the dispatch statistics off: nothing to report".into(),
        ));
    }
    make_sure_of_room(source, "it switches the statistics on")?;
    kernel::switch(source, true)?;
    plan.push(Undo::SwitchOff);
    tell(match options.mode {
        Mode::Serve(_) => {
            "switched the dispatch statistics on while serving; they are switched off again \
             when the server stops"
        }
        _ => {
            "switched the dispatch statistics on for this run; they are switched off again when it ends"
        }
    });
    Ok(())
}

/// `--listen`: the running totals, read at each scrape, until stopped; a
/// handover of the statistics seen at a scrape is noted as in a run.
fn serve_metrics(
    options: &Options,
    listener: std::net::TcpListener,
    source: &mut dyn Source,
    stop: &StopSignal,
    plan: &mut RestorePlan,
) -> Result<(), VcpuError> {
    let mut totals = RunningTotals::new();
    let mut buf = Vec::new();
    let source: &dyn Source = source;
    serve::serve(listener, TOOL, &["read", "parse"], stop, &mut |e| {
        match kernel::read_snapshot(source, &mut buf) {
            Ok(snapshot) => add_to_totals(&mut totals, &snapshot, source.elapsed(), plan),
            Err(err) => {
                let cause = match err {
                    VcpuError::Parse { .. } => "parse",
                    _ => "read",
                };
                return Err(ScrapeError {
                    cause,
                    message: err.to_string(),
                });
            }
        }
        totals.expose(options.cpus.as_ref(), e);
        Ok(())
    })
    .map_err(VcpuError::Listen)
}

/// Where expositions go: `--textfile`, or standard output with `-o
/// prometheus`; `None` for the other formats.
fn expo_target(options: &Options) -> Option<Target> {
    match (&options.expo.textfile, options.format) {
        (Some(path), _) => Some(Target::Textfile(path.clone())),
        (None, Format::Prometheus) => Some(Target::Stdout),
        (None, _) => None,
    }
}

/// Applies --freq, then --enable/--disable; returns whether the statistics
/// are on afterwards. If switching fails, the frequency is put back: a
/// command either does all it was asked or leaves the system as it was.
/// The frequency file is read only for --freq: a report does not need it,
/// and the kernel may have failed to create it beside the statistics file
/// (lpar.c creates the two apart).
fn apply_changes(
    options: &Options,
    source: &dyn Source,
    plan: &mut RestorePlan,
    stop: &StopSignal,
) -> Result<bool, VcpuError> {
    let was_on = kernel::read_on(source)?;
    let until = if options.temporary {
        " until the run ends"
    } else {
        ""
    };
    if let Some(freq) = options.freq {
        let before = kernel::read_freq(source)?;
        if freq == before {
            tell(format_args!("the frequency is already {freq} per second"));
        } else {
            make_sure_of_room(source, "it sets the frequency")?;
            kernel::set_freq(source, freq)?;
            // Undone if what follows fails, and with --temporary at exit.
            plan.push(Undo::SetFreq { ours: freq, before });
            tell(format_args!(
                "frequency set to {freq} per second (was {before}){until}"
            ));
        }
    }
    // A stop during a slow write, with a switch still to make: it is not
    // made (switching on zeroes the counters) only to be undone. A
    // frequency alone, set, is all a command asked: it stays (a run that
    // was to report stops in `run`).
    if options.switch.is_some() {
        not_stopped(stop)?;
    }
    switch(options, source, plan, was_on)
}

/// Fails with [`VcpuError::Stopped`] once a stop signal came.
fn not_stopped(stop: &StopSignal) -> Result<(), VcpuError> {
    match stop.caught() {
        Some(signal) => Err(VcpuError::Stopped(signal)),
        None => Ok(()),
    }
}

/// Applies --enable/--disable to statistics that were `was_on`; returns
/// whether they are on afterwards.
fn switch(
    options: &Options,
    source: &dyn Source,
    plan: &mut RestorePlan,
    was_on: bool,
) -> Result<bool, VcpuError> {
    let until = if options.temporary {
        " until the run ends"
    } else {
        ""
    };
    match (options.switch, was_on) {
        (Some(Switch::On), true) => {
            tell("dispatch statistics are already on (counters kept)");
            Ok(true)
        }
        (Some(Switch::Off), false) => {
            tell("dispatch statistics are already off");
            Ok(false)
        }
        (Some(Switch::On), false) => {
            make_sure_of_room(source, "it switches the statistics on")?;
            kernel::switch(source, true)?;
            // Undone if what follows fails, and with --temporary at exit.
            plan.push(Undo::SwitchOff);
            tell(format_args!("dispatch statistics switched on{until}"));
            Ok(true)
        }
        // Never temporary: --temporary needs a run that reports, which
        // --disable cannot be combined with (cli.rs).
        (Some(Switch::Off), true) => {
            kernel::switch(source, false)?;
            tell("dispatch statistics switched off");
            Ok(false)
        }
        (None, on) => Ok(on),
    }
}

fn selection(options: &Options) -> Selection<'_> {
    Selection {
        cpus: options.cpus.as_ref(),
        sort: options.sort,
        top: options.top,
        cumulative: options.view == View::Raw,
    }
}

/// The charts `--svg` asks for.
fn charts(options: &Options, source: &dyn Source) -> Option<VcpuCharts> {
    let path = options.svg.clone()?;
    let host = source.uname().map(|u| u.nodename).unwrap_or_default();
    let title = format!("vcpustat on {host}: where the hypervisor dispatched each vCPU");
    let cumulative = options.view == View::Raw;
    Some(VcpuCharts::new(path, title, source.is_live(), cumulative))
}

/// No interval: the cumulative counts once.
fn once(options: &Options, source: &mut dyn Source, out: &mut dyn Write) -> Result<(), VcpuError> {
    let mut output = Output::new(options);
    let report = match kernel::read_snapshot(source, &mut Vec::new())? {
        Snapshot::Off => Report {
            notes: vec![
                "dispatch statistics are off: give an interval (vcpustat 5) to switch them on \
                 for a run, or --enable to switch them on"
                    .into(),
            ],
            ..Report::default()
        },
        Snapshot::On(cpus) => report::cumulative(&cpus, &selection(options)),
    };
    output.begin(out)?;
    output.emit(out, source.now(), 0, &report)?;
    let charted = match &mut charts(options, source) {
        Some(charts) => charts
            .sample(source.now(), &report)
            .and_then(|()| charts.finish())
            .map_err(VcpuError::Chart),
        None => Ok(()),
    };
    // The document is closed, and a recording gets its frame, even when
    // the charts cannot be written, as after an interval run.
    let ended = output.end(out);
    let finished = source.finish();
    ended?;
    charted?;
    Ok(finished?)
}

/// Reports every interval until the count, a stop signal or an error.
fn intervals(
    options: &Options,
    source: &mut dyn Source,
    stop: &StopSignal,
    plan: &mut RestorePlan,
    out: &mut dyn Write,
) -> Result<(), VcpuError> {
    let selection = selection(options);
    let mut output = Output::new(options);
    let mut tracker = Tracker::new();
    let mut buf = Vec::new();
    let mut charts = charts(options, source);
    output.begin(out)?;
    let result = run_samples(&options.schedule(), source, stop, None, |source, index| {
        let snapshot = kernel::read_snapshot(source, &mut buf)?;
        let at = source.elapsed();
        source
            .check_answered()
            .map_err(|e| VcpuError::Replay(e.to_string()))?;
        let time = source.now();
        let mut handover = None;
        // `-r` reports show the cumulative counts (the selection says so);
        // the tracker still notices resets, the statistics going off and
        // CPUs coming and going. When the statistics are on again, `-r`
        // shows the new counts at once.
        let cumulative = match (options.view, &snapshot) {
            (View::Raw, Snapshot::On(cpus)) => Some(report::cumulative(cpus, &selection)),
            _ => None,
        };
        let with_notes = |report: Option<Report>, notes: Vec<String>| Report {
            notes,
            ..report.unwrap_or_default()
        };
        let mut report = match tracker.step(snapshot, at, &selection) {
            Step::Report(report) => {
                if report.reset {
                    handover = Some("switched off and on again");
                }
                report
            }
            Step::Off(notes) => {
                handover = Some("switched off");
                with_notes(None, notes)
            }
            // The first sample only starts the run, in every view: like
            // powerpc-utils, the first report comes one interval later
            // (right after vcpustat switched the statistics on, a cumulative
            // report would be all zeros).
            Step::Baseline(notes) if index == 0 => {
                if !notes.is_empty() {
                    tell(notes.join("; "));
                }
                return Ok(());
            }
            Step::Baseline(notes) if cumulative.is_some() => with_notes(cumulative, notes),
            Step::Baseline(notes) if notes.is_empty() => return Ok(()),
            Step::Baseline(notes) => with_notes(None, notes),
        };
        report
            .notes
            .extend(handover.and_then(|what| hand_over(plan, what)));
        // The sample's number, as iostat-rs and cxlstat number theirs: the
        // baseline, sample 0, is not reported, so the first report is 1.
        output.emit(out, time, index, &report)?;
        if let Some(charts) = &mut charts {
            charts.sample(time, &report).map_err(VcpuError::Chart)?;
        }
        Ok::<(), VcpuError>(())
    });
    // Closed on every end, errors included, unless the output itself
    // failed: a close written after a cut would end a half-written row.
    let ended = match &result {
        Err(VcpuError::Output(e)) if cli::is_output_failure(e) => Ok(()),
        _ => output.end(out).map_err(VcpuError::Output),
    };
    // The charts end with every run, an error's included (a replay writes
    // them only here); when the reader went away, the run is otherwise
    // done, and what they could not do is what there is to say.
    let charted = match &charts {
        Some(charts) => charts.finish().map_err(VcpuError::Chart),
        None => Ok(()),
    };
    if matches!(&result, Err(VcpuError::Output(e)) if cli::is_reader_gone(e)) {
        return charted.and(result.map(drop));
    }
    result?;
    ended?;
    charted
}

/// After someone else switched the statistics (`what`, as
/// [`RunningTotals::update`] says it) during a run that switched them on:
/// the on/off state is theirs now, so vcpustat drops its undo. The note
/// that says so; `None` when vcpustat had nothing to undo.
fn hand_over(plan: &mut RestorePlan, what: &str) -> Option<String> {
    if !plan.pending().contains(&Undo::SwitchOff) {
        return None;
    }
    plan.forget_switch();
    Some(format!(
        "someone else {what} the dispatch statistics: vcpustat leaves the on/off state to \
         them at exit"
    ))
}

/// Adds a sample taken at `at` to the Prometheus runs' `totals`; a
/// handover it shows is noted on standard error ([`hand_over`]).
fn add_to_totals(
    totals: &mut RunningTotals,
    snapshot: &Snapshot,
    at: std::time::Duration,
    plan: &mut RestorePlan,
) {
    let handover = totals.update(snapshot, at);
    if let Some(note) = handover.and_then(|what| hand_over(plan, what)) {
        tell(format_args!("note: {note}"));
    }
}

/// The chosen output: vcpustat's text, or one of the core's writers with the
/// function that turns a report into its rows.
enum Output {
    Text(TextRenderer, Vec<u8>),
    Machine(Box<dyn FrameWriter>, fn(&Report) -> Vec<Row>),
}

impl Output {
    fn new(options: &Options) -> Output {
        match options.format {
            Format::Text => Output::Text(
                TextRenderer::new(
                    options.view,
                    options.timestamp.then(ReportTime::from_environment),
                ),
                Vec::new(),
            ),
            format => Output::Machine(writer_for(format, schema(), ","), machine_rows),
        }
    }

    fn begin(&mut self, out: &mut dyn Write) -> io::Result<()> {
        match self {
            Output::Text(..) => Ok(()),
            Output::Machine(writer, _) => writer.begin(out),
        }
    }

    fn emit(
        &mut self,
        out: &mut dyn Write,
        time: SystemTime,
        index: u64,
        report: &Report,
    ) -> io::Result<()> {
        match self {
            Output::Text(renderer, buf) => {
                buf.clear();
                renderer.render(buf, time, report);
                out.write_all(buf)?;
            }
            Output::Machine(writer, rows_of) => {
                let rows = rows_of(report);
                let frame = Frame {
                    time,
                    index,
                    rows: &rows,
                    notes: &report.notes,
                };
                writer.frame(out, &frame)?;
            }
        }
        out.flush()
    }

    fn end(&mut self, out: &mut dyn Write) -> io::Result<()> {
        match self {
            Output::Text(..) => Ok(()),
            Output::Machine(writer, _) => writer.end(out),
        }?;
        out.flush()
    }
}
