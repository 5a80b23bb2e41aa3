//! The `vcpustat trace` command line and its entry point.
//!
//! The vcpustat binary embeds [`TraceArgs`] as its `trace` subcommand and
//! calls [`run_args`], which returns the exit status.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};

use super::analysis;
use super::chart::write_charts;
use super::error::TraceError;
use super::progress::Progress;
use super::record::{Event, RecordOptions, live_pace, record_with};
use super::recording::Recording;
use super::report::{ReportError, ReportFormat, ReportOptions, Table, write_report};
use super::ring::DebugfsRings;
use super::topology::Topology;
use crate::common::cli::{
    SYSROOT_HELP, SourceArgs, output_error_status, path_arg, report_error, tell,
};
use crate::common::cpulist::CpuList;
use crate::common::interval::{parse_interval, parse_positive_interval};
use crate::common::osname;
use crate::common::signals::StopSignal;
use crate::common::temp_file::check_chosen_outputs;
use crate::common::user_file::names_standard_output;

const TOOL: &str = "vcpustat";

/// The `tool` of the kernel-file recording `trace record --record` writes:
/// not `vcpustat`, whose `--replay` would take its frames for a report
/// run's and fail on what a report reads (the dispatch statistics), as if
/// the recorded machine lacked them; it refuses another tool's recording.
pub const KERNEL_FILES_TOOL: &str = "vcpustat trace record";

/// `vcpustat trace`: the Dispatch Trace Log.
///
/// A subcommand is required. clap's derive would also show the help when
/// none is given (`arg_required_else_help`), an error whose one-line form is
/// the command's description; without it, the error says that a subcommand
/// is required and lists them.
#[derive(Debug, Clone, Args)]
#[command(subcommand_required = true, arg_required_else_help = false)]
pub struct TraceArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: TraceCommand,
}

/// The trace subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum TraceCommand {
    /// Record the DTL of some vCPUs of this partition into a file.
    ///
    /// The file is written as it goes (at least once a second), so a run
    /// that is killed leaves a file `trace report` reads up to the cut.
    /// The kernel reads dtl_event_mask only when a ring is opened, so
    /// --events puts the mask back as soon as every ring is open.
    #[command(after_long_help = crate::common::manual::help_text(super::manual::RECORD))]
    Record(RecordArgs),
    /// Report dispatch latency and the physical-processor view of recordings.
    ///
    /// Dispatch latency is ready_to_enqueue + enqueue_to_dispatch (the time a
    /// vCPU was ready and waited for a processor, what the kernel counts as
    /// stolen time); idle wait is waiting_to_ready (the time before it was
    /// ready again, e.g. after it ceded). Percentiles are nearest-rank: pN is
    /// the value at rank ceil(N/100 x count) of the sorted values, always one
    /// of the measured values. Text rounds to 0.1 µs; JSON and CSV carry 9
    /// decimals of µs (every tick at a 512 MHz time base).
    #[command(after_long_help = crate::common::manual::help_text(super::manual::REPORT))]
    Report(ReportArgs),
}

/// Arguments of `trace record`.
#[derive(Debug, Clone, Args)]
pub struct RecordArgs {
    /// vCPUs to record, e.g. 0-3,8 (default: every cpu-N of the DTL).
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<CpuList>,
    /// How long to record (2, 0.5, 250ms, 1m); default until interrupted.
    #[arg(long, value_name = "D", value_parser = parse_interval)]
    pub duration: Option<Duration>,
    /// Time between two polls of each ring (85 records each).
    #[arg(long, value_name = "D", value_parser = parse_positive_interval, default_value = "10ms")]
    pub poll: Duration,
    /// Events to log (sets dtl_event_mask while the rings are opened, which
    /// is when the kernel reads it, then restores it unless someone else set
    /// another meanwhile).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_enum)]
    pub events: Option<Vec<Event>>,
    /// The recording to write (-: standard output).
    #[arg(short = 'w', long = "write", value_name = "FILE", value_parser = path_arg)]
    pub output: PathBuf,
    /// Read the DTL even on kernels known to crash when it is read.
    #[arg(long)]
    pub force: bool,
    /// Where kernel files come from.
    #[command(flatten)]
    pub source: LiveSourceArgs,
}

/// Where `trace record` reads the kernel files: [`SourceArgs`] without
/// `--replay`, which `trace record` does not offer (the DTL is a stream that
/// a replay cannot reproduce; `trace report` reads the recordings). The
/// options are the same as those of [`SourceArgs`] (a test compares them),
/// `--record`'s help saying what it keeps here.
#[derive(Debug, Clone, Default, Args)]
pub struct LiveSourceArgs {
    /// Every kernel file under DIR instead of / ([`SYSROOT_HELP`]).
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath, value_parser = path_arg,
          help = SYSROOT_HELP)]
    pub sysroot: Option<PathBuf>,
    /// Also keep the small kernel files read (lparcfg, cpuinfo, the event
    /// mask) in FILE, an hwstat recording to read with jq: the trace is
    /// -w's, and no replay takes it (-: standard output).
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath, value_parser = path_arg)]
    pub record: Option<PathBuf>,
}

impl LiveSourceArgs {
    /// The same source as [`SourceArgs`], which opens it.
    pub fn source_args(&self) -> SourceArgs {
        SourceArgs {
            sysroot: self.sysroot.clone(),
            record: self.record.clone(),
            replay: None,
        }
    }
}

/// Arguments of `trace report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Recordings, from one or several partitions of one machine.
    #[arg(value_name = "FILE", required = true, value_parser = path_arg)]
    pub files: Vec<PathBuf>,
    /// Output format.
    #[arg(
        short = 'o',
        long = "output",
        value_enum,
        ignore_case = true,
        default_value = "text"
    )]
    pub format: ReportFormat,
    /// List every physical record (in start order) instead of the
    /// per-processor summary.
    #[arg(long)]
    pub timeline: bool,
    /// Write only this table (required with -o csv: one table per file).
    #[arg(long, value_enum, value_name = "TABLE")]
    pub table: Option<Table>,
    /// Chip and node of each physical processor ("0-7 chip=0 node=0" lines).
    #[arg(long, value_name = "FILE", value_parser = path_arg)]
    pub topology: Option<PathBuf>,
    /// Write the recordings as SVG charts to FILE (processor swimlanes,
    /// latency, reasons), replacing it atomically.
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath, value_parser = path_arg)]
    pub svg: Option<PathBuf>,
}

impl RecordArgs {
    /// The refusal of `-w` and `--record` both on standard output, where
    /// the two recordings would mix.
    fn standard_output_twice(&self) -> Option<String> {
        let recorded = self
            .source
            .record
            .as_deref()
            .is_some_and(names_standard_output);
        (names_standard_output(&self.output) && recorded).then(|| {
            "-w and --record cannot both write to standard output: the two recordings \
             would mix; name a file for one"
                .to_string()
        })
    }

    /// The typed options of a recording.
    pub fn options(&self) -> Result<RecordOptions, TraceError> {
        Ok(RecordOptions {
            cpus: self.cpus.clone().map(CpuList::into_vec),
            duration: self.duration,
            poll: self.poll,
            events: self.events.clone(),
            output: self.output.clone(),
            force: self.force,
        })
    }
}

/// Runs parsed `trace` arguments; returns the exit status. `argv` is the
/// command line after the program's name, kept in a recording's header.
pub fn run_args(args: &TraceArgs, argv: &[String]) -> i32 {
    match &args.command {
        TraceCommand::Record(a) => {
            if let Some(conflict) = a.standard_output_twice() {
                return report_error(TOOL, conflict, 2);
            }
            match run_record(a, argv) {
                Ok(()) => 0,
                // As an interval run stopped while it meets the others: the
                // status says it, nothing was changed.
                Err(TraceError::Stopped(signal)) => 128 + signal,
                Err(e) => {
                    let status = e.exit_status();
                    report_error(TOOL, e, status)
                }
            }
        }
        TraceCommand::Report(a) => run_report(a),
    }
}

fn run_record(args: &RecordArgs, argv: &[String]) -> Result<(), TraceError> {
    let options = args.options()?;
    let mut source = args
        .source
        .source_args()
        .open(KERNEL_FILES_TOOL, argv)
        .map_err(|e| TraceError::Input(e.to_string()))?;
    let root = args
        .source
        .sysroot
        .clone()
        .unwrap_or_else(|| PathBuf::from("/"));
    let stop = StopSignal::install()?;
    let rings = DebugfsRings::new(root).stopped_by(&stop);
    source.set_stop(&stop);
    let mut pace = live_pace(&options, &stop);
    let mut progress = Progress::on_stderr();
    let result = record_with(&options, source.as_ref(), &rings, &mut pace, &mut progress);
    let finished = source.finish();
    let summary = result?;
    finished.map_err(|e| TraceError::io("finishing the kernel-file recording".into(), e))?;
    let total: u64 = summary.header.cpus.iter().map(|c| c.entries).sum();
    let lost: u64 = summary
        .header
        .cpus
        .iter()
        .map(|c| c.possibly_lost_reads)
        .sum();
    tell(
        TOOL,
        format_args!(
            "recorded {total} DTL entries of {} vCPU(s) of partition {} into {}",
            summary.header.cpus.len(),
            summary.header.partition_id,
            crate::common::escape::path(&options.output)
        ),
    );
    if lost > 0 {
        crate::common::stderr::print(format_args!(
            "{TOOL}: {lost} read(s) returned a full ring: entries may be missing (use a shorter \
             --poll)\n"
        ));
    }
    Ok(())
}

fn run_report(args: &ReportArgs) -> i32 {
    let options = ReportOptions {
        format: args.format,
        timeline: args.timeline || args.table == Some(Table::Timeline),
        table: args.table,
    };
    if let Err(e) = options.tables() {
        return report_error(TOOL, e, 2);
    }
    let inputs: Vec<(&str, &std::path::Path)> = args
        .files
        .iter()
        .map(|f| ("trace report", f.as_path()))
        .collect();
    if let Err(e) = check_chosen_outputs(args.svg.as_deref(), None, None, &inputs) {
        return report_error(TOOL, e, 1);
    }
    let topology = match &args.topology {
        // Its errors name the option, as a file named alone would not.
        Some(path) => match crate::common::user_file::read_text(path)
            .map_err(|e| format!("--topology {}: {e}", crate::common::escape::path(path)))
            .and_then(|t| {
                Topology::parse(
                    &format!("--topology {}", crate::common::escape::path(path)),
                    &t,
                )
            }) {
            Ok(t) => t,
            Err(e) => return report_error(TOOL, e, 1),
        },
        None => Topology::default(),
    };
    let mut recordings = Vec::new();
    let mut notes = Vec::new();
    for path in &args.files {
        match Recording::open(path) {
            Ok(r) => {
                if let Some(cut) = r.cut() {
                    let note = format!(
                        "{}: {cut}; reporting the {} records before it",
                        osname::from_path(path).into_owned(),
                        r.header.cpus.iter().map(|c| c.entries).sum::<u64>()
                    );
                    tell(TOOL, &note);
                    notes.push(note);
                }
                notes.extend(masked_events_note(path, r.header.event_mask));
                recordings.push((osname::from_path(path).into_owned(), r));
            }
            Err(e) => return report_error(TOOL, e, 1),
        }
    }
    let machine = match analysis::load(&recordings) {
        Ok(m) => m,
        Err(e) => return report_error(TOOL, e, 1),
    };
    let start = recordings
        .iter()
        .map(|(_, r)| r.header.start_unix_ns)
        .min()
        .unwrap_or(0);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(256 * 1024, stdout.lock());
    let mut progress = Progress::on_stderr();
    match write_report(
        &mut out,
        &machine,
        &topology,
        &options,
        start,
        &notes,
        &mut progress,
    ) {
        Ok(()) => match &args.svg {
            Some(path) => {
                let title = format!(
                    "vcpustat trace report: {}",
                    args.files
                        .iter()
                        .map(|f| osname::from_path(f))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                match write_charts(path, &machine, &topology, &title) {
                    Ok(()) => 0,
                    Err(e) => report_error(TOOL, e, 1),
                }
            }
            None => 0,
        },
        Err(ReportError::Input(e)) => report_error(TOOL, e, 1),
        Err(ReportError::Output(e)) => output_error_status(TOOL, &e),
    }
}

/// A note for a recording whose rings did not log cedes or preempts: the
/// run time of a record is measured to the vCPU's next record, which is
/// then not always its next dispatch, so run times, shares and traced%
/// can come out too high (above 100 %). Without page faults (`--events
/// cede,preempt`) nothing is missed unless the partition uses Active
/// Memory Sharing, so no note.
fn masked_events_note(path: &std::path::Path, mask: Option<u8>) -> Option<String> {
    let mask = mask?;
    // Named as --events names them.
    let missing: Vec<String> = [Event::Cede, Event::Preempt]
        .into_iter()
        .filter(|event| mask & event.mask_bit() == 0)
        .filter_map(|event| Some(event.to_possible_value()?.get_name().to_string()))
        .collect();
    if missing.is_empty() {
        return None;
    }
    Some(format!(
        "{}: recorded with dtl_event_mask 0x{mask:02x}, without {} events: unless the kernel \
         logged them anyway, a vCPU's next record need not be its next dispatch, so run times, \
         shares and traced% may be too high",
        osname::from_path(path),
        missing.join(" or ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Command, FromArgMatches};

    /// `vcpustat trace` as the binary mounts it.
    fn command() -> Command {
        TraceArgs::augment_args(Command::new("trace"))
    }

    #[test]
    fn a_recording_without_cedes_or_preempts_is_noted() {
        let path = std::path::Path::new("a.dtl");
        for full in [None, Some(0x07), Some(0x03)] {
            assert_eq!(masked_events_note(path, full), None, "{full:?}");
        }
        let note = masked_events_note(path, Some(0x02)).unwrap();
        assert!(
            note.starts_with("a.dtl: recorded with dtl_event_mask 0x02, without cede events:"),
            "{note}"
        );
        let note = masked_events_note(path, Some(0x04)).unwrap();
        assert!(
            note.contains("0x04, without cede or preempt events"),
            "{note}"
        );
    }

    #[test]
    fn record_takes_the_shared_source_options_but_replay() {
        let shared = SourceArgs::augment_args(Command::new("shared"));
        let record = LiveSourceArgs::augment_args(Command::new("record"));
        let ids = |c: &Command| {
            c.get_arguments()
                .map(|a| a.get_id().to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(&record), ["sysroot", "record"]);
        assert_eq!(ids(&shared), ["sysroot", "record", "replay"]);
        for arg in record.get_arguments() {
            let same = shared
                .get_arguments()
                .find(|a| a.get_id() == arg.get_id())
                .unwrap();
            assert_eq!(arg.get_long(), same.get_long());
            // --record says what it keeps here, where no report is made.
            if arg.get_id() != "record" {
                assert_eq!(
                    arg.get_help().map(ToString::to_string),
                    same.get_help().map(ToString::to_string)
                );
            }
            assert_eq!(arg.get_value_names(), same.get_value_names());
            assert_eq!(arg.get_value_hint(), same.get_value_hint());
        }
        let m = command()
            .try_get_matches_from([
                "trace",
                "record",
                "--sysroot",
                "/r",
                "--record",
                "k.rec",
                "-w",
                "x",
            ])
            .unwrap();
        let TraceCommand::Record(r) = TraceArgs::from_arg_matches(&m).unwrap().command else {
            panic!("not record")
        };
        let source = r.source.source_args();
        assert_eq!(source.sysroot.as_deref(), Some(std::path::Path::new("/r")));
        assert_eq!(
            source.record.as_deref(),
            Some(std::path::Path::new("k.rec"))
        );
        assert_eq!(source.replay, None);
        let err = command()
            .try_get_matches_from(["trace", "record", "--replay", "r.rec", "-w", "x"])
            .unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::UnknownArgument);
        let err = command().try_get_matches_from(["trace"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::MissingSubcommand);
    }

    #[test]
    fn the_command_is_consistent_and_parses_options() {
        command().debug_assert();
        let m = command()
            .try_get_matches_from([
                "trace",
                "record",
                "--cpus",
                "0-2",
                "--duration",
                "250ms",
                "--events",
                "cede,preempt",
                "-w",
                "x.dtl",
            ])
            .unwrap();
        let args = TraceArgs::from_arg_matches(&m).unwrap();
        let TraceCommand::Record(r) = args.command else {
            panic!("not record")
        };
        let o = r.options().unwrap();
        assert_eq!(o.cpus, Some(vec![0, 1, 2]));
        assert_eq!(o.duration, Some(Duration::from_millis(250)));
        assert_eq!(o.events, Some(vec![Event::Cede, Event::Preempt]));
        assert!(
            command()
                .try_get_matches_from(["trace", "record", "--cpus", "3-1", "-w", "x"])
                .is_err()
        );
        assert!(
            command()
                .try_get_matches_from(["trace", "record", "--events", "nap", "-w", "x"])
                .is_err()
        );
        assert!(command().try_get_matches_from(["trace", "report"]).is_err());
        let m = command()
            .try_get_matches_from(["trace", "report", "-o", "csv", "--table", "reasons", "a"])
            .unwrap();
        let TraceCommand::Report(r) = TraceArgs::from_arg_matches(&m).unwrap().command else {
            panic!("not report")
        };
        assert_eq!(r.table, Some(Table::Reasons));
    }
}
