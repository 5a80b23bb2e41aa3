//! cxlstat's command line and the typed options built from it before any
//! counting starts.

use std::time::Duration;

use clap::{CommandFactory, Parser};
use clap_complete::{ArgValueCandidates, ArgValueCompleter, CompletionCandidate};

use crate::common::cli::{ExpoArgs, SourceArgs, report_output};
use crate::common::expo::Target;
use crate::common::interval::{
    Schedule, nonzero_interval, parse_count, parse_interval, parse_milliseconds,
};
use crate::common::output::Format;

use super::error::CxlError;

/// Count CXL PMU events (CXL memory devices' performance monitoring units).
#[derive(Debug, Parser)]
#[command(
    name = "cxlstat",
    version,
    // perf stat takes an option again (`-a -a`), the last value winning.
    args_override_self = true,
    about = "Discover CXL PMUs and count their named and raw vid/gid/mask events",
    after_long_help = crate::common::manual::help_text(super::manual::SECTIONS)
)]
pub struct Args {
    /// List the CXL PMUs: perf type, CPU, memory device, its PCI address, NUMA node and
    /// serial number, whether it filters by HDM decoder, number of events.
    #[arg(long, conflicts_with = "list_events", conflicts_with_all = COUNTING_ONLY)]
    pub list: bool,
    /// List the events of every CXL PMU (or of PMU), grouped by event group.
    #[arg(long, value_name = "PMU", num_args = 0..=1, default_missing_value = "",
          conflicts_with_all = COUNTING_ONLY, add = ArgValueCandidates::new(cxl_pmu_names))]
    pub list_events: Option<String>,
    /// Events to count: NAME, PMU/NAME/, PMU/term=value,.../ (name=NAME names it),
    /// vid=..,gid=..,mask=.., {a,b} groups; comma lists and repeated -e.
    #[arg(short = 'e', long = "event", value_name = "EVENTS",
          add = ArgValueCompleter::new(event_names))]
    pub events: Vec<String>,
    /// Count unqualified events only on these PMUs (comma list or repeated).
    #[arg(long = "pmu", value_name = "PMU", value_delimiter = ',',
          add = ArgValueCandidates::new(cxl_pmu_names))]
    pub pmus: Vec<String>,
    /// System-wide counting (always the case for CXL PMUs; accepted for perf compatibility).
    #[arg(short = 'a', long = "all-cpus")]
    pub all_cpus: bool,
    /// Refused: CXL PMUs cannot count per task.
    #[arg(short = 'p', long = "pid", value_name = "PID")]
    pub pid: Option<String>,
    /// Refused: CXL PMUs cannot count per thread.
    #[arg(short = 't', long = "tid", value_name = "TID")]
    pub tid: Option<String>,
    /// Print counts every MS milliseconds, as perf stat -I.
    #[arg(
        short = 'I',
        long = "interval-print",
        value_name = "MS",
        value_parser = parse_milliseconds,
        allow_negative_numbers = true,
        conflicts_with = "interval"
    )]
    pub interval_ms: Option<u64>,
    /// With -I: stop after COUNT reports (0: until stopped, as perf stat).
    #[arg(
        long = "interval-count",
        value_name = "COUNT",
        value_parser = parse_count,
        allow_negative_numbers = true
    )]
    pub interval_count: Option<u64>,
    /// Sum each event over all PMUs instead of one row per PMU and event
    /// (what perf stat does by default).
    #[arg(long)]
    pub aggregate: bool,
    /// One row per PMU and event (the default; accepted for perf compatibility).
    #[arg(long = "no-merge", conflicts_with = "aggregate")]
    pub no_merge: bool,
    /// Output format (csv: the common CSV of all hwstat tools, with a header,
    /// a timestamp and an index; -x gives perf stat's layout instead).
    #[arg(
        short = 'o',
        long = "output",
        value_enum,
        ignore_case = true,
        value_name = "FORMAT"
    )]
    pub output: Option<Format>,
    /// perf stat -x output with this separator: per line
    /// COUNT,UNIT,EVENT,RUN_NS,RUNNING%,, (perf's empty metric fields; with intervals, the time first).
    #[arg(
        short = 'x',
        long = "field-separator",
        value_name = "SEP",
        conflicts_with = "output"
    )]
    pub separator: Option<String>,
    /// Print each event's PMU, perf_event_attr fields and CPU without opening anything;
    /// the output options, interval and CMD are checked as a count would check them (CMD
    /// looked up in PATH), not used: no file is opened (whether --record, --svg or
    /// --textfile can be written is not tried), no command run.
    #[arg(long)]
    pub dry_run: bool,
    /// Report every INTERVAL (2, 0.5, 250ms)...
    #[arg(value_name = "INTERVAL", value_parser = parse_interval, allow_negative_numbers = true)]
    pub interval: Option<Duration>,
    /// ...COUNT times, 1 or more (without COUNT: until stopped).
    #[arg(value_name = "COUNT", value_parser = parse_count, requires = "interval", allow_negative_numbers = true)]
    pub count: Option<u64>,
    /// Where kernel files come from (--sysroot, --record, --replay).
    #[command(flatten)]
    pub source: SourceArgs,
    /// Charts of the event rates (--svg).
    #[command(flatten)]
    pub chart: crate::common::chart::SvgArgs,
    /// Where Prometheus expositions go.
    #[command(flatten)]
    pub expo: ExpoArgs,
    /// Command to run; counting is system-wide while it runs, and cxlstat exits with its status
    /// (127 if it is not found, 126 if it cannot be executed, as a shell).
    #[arg(last = true, value_name = "CMD", conflicts_with = "replay")]
    pub command: Vec<String>,
}

/// The options that shape counting, which `--list` and `--list-events`
/// refuse rather than ignore (their output formats are refused by
/// [`list_format`], with the reason).
const COUNTING_ONLY: [&str; 13] = [
    "events",
    "pmus",
    "interval_ms",
    "interval_count",
    "aggregate",
    "no_merge",
    "dry_run",
    "interval",
    "count",
    "command",
    "svg",
    "textfile",
    "listen",
];

/// The CXL PMUs present now, for shell completion.
fn cxl_pmu_names() -> Vec<CompletionCandidate> {
    crate::common::completion::directory_candidates(super::sysfs::EVENT_SOURCE_DIR, "cxl_pmu_")
}

/// The named events of the CXL PMUs present now, for shell completion of
/// the last event of `current`, a comma list (`-e clock_ticks,d2h<TAB>`):
/// each once, whatever the PMUs that have it.
fn event_names(current: &std::ffi::OsStr) -> Vec<CompletionCandidate> {
    use crate::common::completion::directory_candidates;
    let current = current.to_string_lossy();
    let (before, last) = match current.rfind(',') {
        Some(comma) => current.split_at(comma + 1),
        None => ("", current.as_ref()),
    };
    let mut names: Vec<String> = cxl_pmu_names()
        .iter()
        .flat_map(|pmu| {
            let pmu = pmu.get_value().to_string_lossy();
            let dir = format!("{}/{pmu}/events", super::sysfs::EVENT_SOURCE_DIR);
            directory_candidates(&dir, last)
        })
        .map(|event| event.get_value().to_string_lossy().into_owned())
        .collect();
    names.sort_by(|a, b| crate::common::natural::natural_order(a, b));
    names.dedup();
    names
        .into_iter()
        .map(|name| CompletionCandidate::new(format!("{before}{name}")))
        .collect()
}

/// The clap command, for man pages and completions.
pub fn command() -> clap::Command {
    Args::command()
}

/// When reports are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timing {
    /// Once, when stopped (Ctrl-C) or when the command ends.
    AtEnd,
    /// Every interval; `count` reports (or until stopped).
    Every {
        /// Time between reports.
        interval: Duration,
        /// Number of reports.
        count: Option<u64>,
    },
}

impl Timing {
    /// The sampling schedule: a baseline sample, then one per report.
    pub fn schedule(self) -> Option<Schedule> {
        match self {
            Timing::AtEnd => None,
            Timing::Every { interval, count } => Some(Schedule {
                interval: Some(interval),
                count: count.map(|c| c.saturating_add(1)),
                first_starts_only: true,
            }),
        }
    }
}

/// What to count and how to show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountOptions {
    /// The `-e` arguments; none in a replay that takes its recording's.
    pub events: Vec<String>,
    /// `--pmu` names.
    pub pmus: Vec<String>,
    /// When to report.
    pub timing: Timing,
    /// Sum over PMUs.
    pub aggregate: bool,
    /// How counts are written.
    pub output: CountFormat,
    /// Only print the attrs.
    pub dry_run: bool,
    /// `--listen`: serve the readings at each scrape instead of reporting.
    pub listen: Option<std::net::SocketAddr>,
    /// Command to run while counting.
    pub command: Vec<String>,
    /// `--svg FILE`: the rates as charts.
    pub svg: Option<std::path::PathBuf>,
}

/// How counts are written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CountFormat {
    /// Aligned text.
    Text,
    /// A core writer (json, ndjson, the common CSV).
    Core(Format),
    /// Prometheus expositions of the cumulative readings (`-o prometheus`,
    /// `--textfile`).
    Expo(Target),
    /// `perf stat -x SEP` lines with this separator.
    PerfCsv(String),
}

/// What cxlstat was asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// `--list`.
    List,
    /// `--list-events [PMU]`.
    ListEvents(Option<String>),
    /// Counting.
    Count(CountOptions),
}

/// Everything from the command line, checked.
#[derive(Debug, Clone)]
pub struct Options {
    /// Where kernel files come from.
    pub source: SourceArgs,
    /// What to do.
    pub action: Action,
}

impl Options {
    /// Checks the parsed arguments and builds the options.
    pub fn from_args(args: Args) -> Result<Options, CxlError> {
        if let Some(pid) = &args.pid {
            return Err(CxlError::PerTask(format!("-p {pid}")));
        }
        if let Some(tid) = &args.tid {
            return Err(CxlError::PerTask(format!("-t {tid}")));
        }
        let listing = if args.list {
            Some("--list")
        } else {
            args.list_events.as_ref().map(|_| "--list-events")
        };
        if let Some(listing) = listing {
            list_format(listing, args.output, args.separator.as_deref())?;
        }
        let action = if args.list {
            Action::List
        } else if let Some(pmu) = args.list_events {
            Action::ListEvents(Some(pmu).filter(|p| !p.is_empty()))
        } else {
            // A replay without -e counts what its recording did (the
            // recorded run's -e, `app::with_recorded_events`).
            if args.events.is_empty() && args.source.replay.is_none() {
                return Err(CxlError::Spec(
                    "nothing to do: give -e EVENTS (see --list-events), --list or --list-events"
                        .to_string(),
                ));
            }
            // perf stat takes --interval-count 0 as no count at all (it
            // keeps the count in a field where 0 means unset): reports
            // until stopped.
            let interval_count = args.interval_count.filter(|&n| n > 0);
            // perf refuses a count without -I only when the count is set;
            // a count of 0 without -I is accepted and means nothing.
            if let (Some(n), None) = (interval_count, args.interval_ms) {
                return Err(CxlError::Spec(format!(
                    "--interval-count {n}: expected -I MS with it (a count of reports \
                     printed every MS milliseconds)"
                )));
            }
            let timing = match (args.interval_ms, args.interval) {
                // 0 is no interval, as in sysstat and perf stat -I 0.
                (Some(0), _) => {
                    nonzero_interval(Some(Duration::ZERO), interval_count)
                        .map_err(CxlError::Spec)?;
                    Timing::AtEnd
                }
                // Any other number of milliseconds, as perf stat -I takes
                // (its manual: "minimum: 1ms").
                (Some(ms), _) => Timing::Every {
                    interval: Duration::from_millis(ms),
                    count: interval_count,
                },
                (None, Some(interval)) => {
                    match nonzero_interval(Some(interval), args.count).map_err(CxlError::Spec)? {
                        None => Timing::AtEnd,
                        Some(interval) => Timing::Every {
                            interval,
                            count: args.count,
                        },
                    }
                }
                (None, None) => Timing::AtEnd,
            };
            if matches!(timing, Timing::Every { count: Some(0), .. }) {
                return Err(CxlError::Spec(
                    "a count of 0 reports: expected at least 1".to_string(),
                ));
            }
            let output = match (&args.separator, args.output) {
                (Some(sep), _) if !usable_separator(sep) => {
                    return Err(CxlError::Spec(format!(
                        "-x {}: expected a non-empty field separator without letters, digits, \
                         spaces, '.', '<', '>', '\\' or control characters other than tab (the \
                         fields hold numbers, <not counted>, a space-padded time and \\xNN \
                         escapes, and a line ends at a newline)",
                        crate::common::excerpt::excerpt_arg(sep)
                    )));
                }
                (Some(sep), _) => CountFormat::PerfCsv(sep.clone()),
                (None, _) if args.expo.textfile.is_some() => CountFormat::Expo(Target::Textfile(
                    args.expo.textfile.clone().unwrap_or_default(),
                )),
                (None, Some(Format::Prometheus)) => CountFormat::Expo(Target::Stdout),
                (None, None | Some(Format::Text)) => CountFormat::Text,
                (None, Some(format)) => CountFormat::Core(format),
            };
            // perf's `-x SEP` lines are reports too.
            let other_output = match &args.separator {
                Some(_) => Some("-x"),
                None => args.output.and_then(report_output),
            };
            if let Some(conflict) = args.expo.textfile_conflict(other_output) {
                return Err(CxlError::Spec(conflict));
            }
            let interval = args.interval.is_some() || args.interval_ms.is_some();
            if let Some(conflict) = args.expo.listen_conflict(
                &args.source,
                interval,
                args.chart.svg.is_some(),
                other_output,
            ) {
                return Err(CxlError::Spec(conflict));
            }
            if args.expo.listen.is_some() && !args.command.is_empty() {
                return Err(CxlError::Spec(
                    "--listen cannot be used with a command: the server counts system-wide \
                     until stopped"
                        .to_string(),
                ));
            }
            Action::Count(CountOptions {
                listen: args.expo.listen,
                events: args.events,
                pmus: args.pmus,
                timing,
                aggregate: args.aggregate,
                output,
                dry_run: args.dry_run,
                command: args.command,
                svg: args.chart.svg,
            })
        };
        Ok(Options {
            source: args.source,
            action,
        })
    }
}

/// Refuses an output format for `--list` or `--list-events` (`listing`),
/// which print text tables only: asked for JSON or CSV, they would print a
/// table that a reader of that format cannot parse.
fn list_format(
    listing: &str,
    output: Option<Format>,
    separator: Option<&str>,
) -> Result<(), CxlError> {
    let asked = match (output, separator) {
        (None | Some(Format::Text), None) => return Ok(()),
        (_, Some(_)) => "-x".to_string(),
        (Some(format), None) => format!(
            "-o {}",
            clap::ValueEnum::to_possible_value(&format)
                .map_or_else(String::new, |v| v.get_name().to_string())
        ),
    };
    Err(CxlError::Spec(format!(
        "{listing} prints a text table only, not {asked}: output formats apply to counts (-e)"
    )))
}

/// True for a `-x` separator that cannot be mistaken for a field's own
/// characters: not empty, no letter, digit or `.` (counts, times and
/// percentages, `<not counted>`, `<not supported>`, the `\xNN` escapes of
/// a name), no space (the time is padded with spaces), `<`, `>` or `\`,
/// and no control character but tab (a newline would end the line).
/// perf 6.1 takes any separator, even an empty one.
fn usable_separator(sep: &str) -> bool {
    !sep.is_empty()
        && !sep.chars().any(|c| {
            c.is_alphanumeric()
                || matches!(c, '.' | ' ' | '<' | '>' | '\\')
                || (c.is_control() && c != '\t')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(args: &[&str]) -> Result<Options, String> {
        let args = Args::try_parse_from(std::iter::once("cxlstat").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        Options::from_args(args).map_err(|e| e.to_string())
    }

    fn count(args: &[&str]) -> CountOptions {
        match options(args).unwrap().action {
            Action::Count(c) => c,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn timing_comes_from_i_or_positional_interval_and_count() {
        assert_eq!(count(&["-e", "x"]).timing, Timing::AtEnd);
        assert_eq!(
            count(&["-e", "x", "-I", "250", "--interval-count", "3"]).timing,
            Timing::Every {
                interval: Duration::from_millis(250),
                count: Some(3)
            }
        );
        // perf stat 6.1 -I 100 --interval-count 0 reports until stopped.
        assert_eq!(
            count(&["-e", "x", "-I", "250", "--interval-count", "0"]).timing,
            Timing::Every {
                interval: Duration::from_millis(250),
                count: None
            }
        );
        assert_eq!(
            count(&["-e", "x", "-I", "0", "--interval-count", "0"]).timing,
            Timing::AtEnd
        );
        // perf stat 6.1 accepts --interval-count 0 alone, and refuses any
        // other count without -I.
        assert_eq!(
            count(&["-e", "x", "--interval-count", "0"]).timing,
            Timing::AtEnd
        );
        let refused = options(&["-e", "x", "--interval-count", "3"]).unwrap_err();
        assert!(
            refused.contains("--interval-count 3: expected -I"),
            "{refused}"
        );
        assert!(
            options(&["-e", "x", "2", "--interval-count", "3"]).is_err(),
            "a count for -I only"
        );
        assert!(
            options(&["-e", "x", "1", "0"]).is_err(),
            "a positional count is sysstat's"
        );
        assert_eq!(
            count(&["-e", "x", "0.5", "4"]).timing,
            Timing::Every {
                interval: Duration::from_millis(500),
                count: Some(4)
            }
        );
        assert_eq!(
            Timing::Every {
                interval: Duration::from_secs(1),
                count: Some(4)
            }
            .schedule()
            .unwrap()
            .count,
            Some(5)
        );
        // perf stat -I takes 1 ms and up; so do the other tools' intervals.
        assert_eq!(
            count(&["-e", "x", "-I", "1"]).timing,
            Timing::Every {
                interval: Duration::from_millis(1),
                count: None
            }
        );
        assert_eq!(
            count(&["-e", "x", "5ms", "2"]).timing,
            Timing::Every {
                interval: Duration::from_millis(5),
                count: Some(2)
            }
        );
        assert!(options(&["-e", "x", "-I", "100", "1"]).is_err());
        assert!(
            options(&["-e", "x", "soon"])
                .unwrap_err()
                .contains("invalid interval")
        );
    }

    #[test]
    fn formats_commands_and_refusals() {
        let c = count(&["-e", "a", "-e", "b", "-x", ";", "-a", "--", "sleep", "1"]);
        assert_eq!(c.output, CountFormat::PerfCsv(";".into()));
        assert_eq!(c.events, ["a", "b"]);
        assert_eq!(c.command, ["sleep", "1"]);
        assert_eq!(
            count(&["-e", "a", "-o", "json"]).output,
            CountFormat::Core(Format::Json)
        );
        assert_eq!(
            count(&["-e", "a", "-o", "csv"]).output,
            CountFormat::Core(Format::Csv)
        );
        assert_eq!(count(&["-e", "a"]).output, CountFormat::Text);
        // Each of these could split a field: the time is space-padded, a
        // count may be <not counted>, a name shows a separator as \xNN.
        for bad in [
            "", "\n", "0", ".", ";\r", " ", ", ", "o", "X", "é", "<", ">", "\\", "x",
        ] {
            let err = options(&["-e", "a", "-x", bad]).unwrap_err();
            assert!(
                err.contains("non-empty field separator without letters, digits, spaces"),
                "{bad:?}: {err}"
            );
        }
        for good in [",", ";", "\t", "::", "|", "-", "/"] {
            assert!(options(&["-e", "a", "-x", good]).is_ok(), "{good:?}");
        }
        let err = options(&["-e", "a", "-p", "1"]).unwrap_err();
        assert!(
            err.contains("-p 1 is not possible") && err.contains("system-wide"),
            "{err}"
        );
        assert!(options(&[]).unwrap_err().contains("nothing to do"));
        assert_eq!(
            options(&["--list-events"]).unwrap().action,
            Action::ListEvents(None)
        );
        assert_eq!(
            options(&["--list-events", "cxl_pmu_mem0.0"])
                .unwrap()
                .action,
            Action::ListEvents(Some("cxl_pmu_mem0.0".into()))
        );
    }

    #[test]
    fn listings_refuse_what_only_counting_uses() {
        for listing in ["--list", "--list-events"] {
            for extra in [
                &["-e", "clock_ticks"][..],
                &["--pmu", "cxl_pmu_mem0.0"],
                &["-I", "100"],
                &["--aggregate"],
                &["--no-merge"],
                &["--dry-run"],
                &["--svg", "c.svg"],
                &["--textfile", "c.prom"],
                &["--listen", "127.0.0.1:0"],
                &["--", "true"],
            ] {
                let args = [&[listing][..], extra].concat();
                let err = options(&args).err().unwrap_or_default();
                assert!(
                    err.contains(&format!("the argument '{listing}"))
                        && err.contains("cannot be used with"),
                    "{args:?}: {err}"
                );
            }
        }
        // An interval and count after --list (--list-events would take the
        // interval as its PMU).
        let err = options(&["--list", "1", "3"]).err().unwrap_or_default();
        assert!(err.contains("cannot be used with"), "{err}");
        // What every mode reads from: kept.
        assert!(options(&["--list", "--sysroot", "/"]).is_ok());
        assert!(options(&["--list", "-a"]).is_ok());
    }
}
