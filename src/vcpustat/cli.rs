//! The command line: clap definitions and the typed [`Options`] built from
//! them before anything is read or written.

use std::time::Duration;

use clap::{Args, CommandFactory, Parser, Subcommand};

use crate::common::cli::{ExpoArgs, SourceArgs, report_output};
use crate::common::interval::{Schedule, nonzero_interval, parse_count, parse_interval};
use crate::common::output::Format;

use super::error::VcpuError;
use super::render::View;
use super::report::SortKey;
use crate::common::cpulist::CpuList;

const ABOUT: &str = "POWER shared-processor LPAR dispatch statistics: control \
/proc/powerpc/vcpudispatch_stats and report per-interval home-node hit ratios";

/// The notes of `-h` (NOTES of the man page); the examples are a section of
/// the manual (`super::manual`), shown by `--help`.
const AFTER_HELP: &str = "\
Safety: vcpustat reads the state first. What it changes on its own to report
(switching the statistics on for an interval run) is undone on every way out:
count reached, Ctrl-C, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM,
SIGVTALRM, SIGPROF, SIGXCPU, SIGXFSZ, SIGIO, SIGPWR, a closed output pipe, an
error. Not SIGKILL, which cannot be caught, nor the real-time signals,
SIGSTKFLT or the fault signals (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT,
SIGTRAP, SIGSYS). What you ask for (--enable, --freq) stays,
unless --temporary is given; so does --disable.
Switching the statistics on resets every counter. The files are root-only.

Columns (dispatches in the interval; shares of total in the default view):
  total   dispatches counted (the first after enabling is not counted)
  core    on the same core as the previous dispatch
  chip    another core of the same chip
  socket  another chip in the same socket (multi-chip modules)
  cec     outside the socket (next NUMA boundary)
  home    on the vCPU's home node
  adj     on a node next to the home node
  far     on a node further away
  unatt   dispatches with no home distance (total - home - adj - far), shown
          when some occur
  home%   home-node hit ratio, home / total; `-` when there were no dispatches
The `all` row is the ratio of the summed counts over the selected vCPUs (with
--top, also those not shown). In json, ndjson and csv it is the last row, with
cpu `all`. Prometheus output has no `all` series and no ratios: summing the
per-vCPU counters over cpu gives them, without counting anything twice.";

/// The largest `HZ` a powerpc kernel can be built with (`kernel/Kconfig.hz`
/// offers 100, 250, 300 and 1000): the kernel refuses a frequency above its
/// HZ, so every kernel refuses one above this.
pub const MAX_HZ: i32 = 1000;

/// Parses `--freq`: only values some kernel accepts, so that nothing is
/// written for a value every kernel refuses.
/// Decimal, or hexadecimal after `0x` as the kernel also reads it
/// (`kstrtoint(buf, 0)`); a leading 0 is decimal here, which the kernel
/// would read as octal: vcpustat writes the value in decimal.
fn parse_freq(text: &str) -> Result<i32, String> {
    let value = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => i32::from_str_radix(hex, 16),
        None => text.parse::<i32>(),
    };
    match value {
        Ok(freq) if (1..=MAX_HZ).contains(&freq) => Ok(freq),
        _ => Err(format!(
            "expected a whole number of drains per second from 1 to {MAX_HZ} \
             (the kernel accepts 1 to its HZ, at most {MAX_HZ})"
        )),
    }
}

/// The first option given that a control run without an interval ignores,
/// with what it does (for the message that refuses it): the options that
/// shape only a report's text (`-n`, `-r`, `-t`) always; those that choose
/// or draw a report's vCPUs when the run prints no report (text without
/// `--textfile`: `--status` is not a report).
fn ignored_by_control(args: &ReportArgs) -> Option<(&'static str, &'static str)> {
    let no_report = args.format == Format::Text && args.expo.textfile.is_none();
    // Each option: whether it was given, its name, what it does, and
    // whether it shapes only the text.
    [
        (args.numeric, "-n", "shapes reports", true),
        (args.raw, "-r", "shapes reports", true),
        (args.timestamp, "-t", "shapes reports", true),
        (args.chart.svg.is_some(), "--svg", "draws reports", false),
        (
            args.cpus.is_some(),
            "--cpus",
            "chooses the vCPUs of reports",
            false,
        ),
        (
            args.sort.is_some(),
            "--sort",
            "orders the vCPUs of reports",
            false,
        ),
        (
            args.top.is_some(),
            "--top",
            "chooses the vCPUs of reports",
            false,
        ),
    ]
    .into_iter()
    .find(|&(given, _, _, text_only)| given && (text_only || no_report))
    .map(|(_, option, what, _)| (option, what))
}

/// `vcpustat [OPTIONS] [INTERVAL [COUNT]]`, or a subcommand.
#[derive(Debug, Parser)]
#[command(
    name = "vcpustat",
    version,
    // powerpc-utils' getopt_long takes an option again (`-n -n`), the last
    // value winning.
    args_override_self = true,
    about = ABOUT,
    after_help = AFTER_HELP,
    after_long_help = crate::common::manual::long_help(AFTER_HELP, super::manual::SECTIONS),
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub struct Cli {
    /// A subcommand instead of a report.
    #[command(subcommand)]
    pub command: Option<Tool>,
    /// The report and control options.
    #[command(flatten)]
    pub report: ReportArgs,
}

/// vcpustat's subcommands.
#[derive(Debug, Subcommand)]
pub enum Tool {
    /// Record the Dispatch Trace Log, or report dispatch latency and the
    /// physical-processor timeline from recordings.
    Trace(crate::vcpustat::trace::cli::TraceArgs),
}

/// Options of the report (no subcommand).
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Switch the statistics on (this resets the counters). Stays on at exit
    /// unless --temporary.
    #[arg(short, long, conflicts_with = "disable")]
    pub enable: bool,
    /// Switch the statistics off. Stays off at exit.
    #[arg(short, long)]
    pub disable: bool,
    /// Drain the dispatch trace log N times per second (1 to the kernel's HZ,
    /// which is at most 1000; the kernel default is 50), in decimal or 0x hex.
    #[arg(long, value_name = "N", value_parser = parse_freq, allow_negative_numbers = true)]
    pub freq: Option<i32>,
    /// Print whether the statistics are on and the current frequency, and
    /// what vcpustat runs reporting now will undo when the last ends.
    #[arg(long)]
    pub status: bool,
    /// Undo --enable and --freq too when the run ends (an interval run or
    /// --listen; --disable cannot report, so it has nothing to undo at).
    #[arg(long)]
    pub temporary: bool,
    /// Show counts instead of percentages (with -r too: cumulative counts
    /// are counts already).
    #[arg(short, long)]
    pub numeric: bool,
    /// Show cumulative counts since the statistics were enabled.
    #[arg(short, long)]
    pub raw: bool,
    /// Print the time of each report, as iostat -t: %x %X in the locale, or
    /// ISO 8601 when S_TIME_FORMAT=ISO.
    #[arg(short = 't')]
    pub timestamp: bool,
    /// Only these vCPUs, e.g. 0-7,16.
    #[arg(long, value_name = "LIST", value_parser = CpuList::parse)]
    pub cpus: Option<CpuList>,
    /// Order of the vCPU rows (home: worst home ratio first).
    #[arg(long, value_name = "KEY", value_enum)]
    pub sort: Option<SortKey>,
    /// Show only the first N vCPUs after sorting (sorts by home unless --sort).
    #[arg(long, value_name = "N", value_parser = parse_top)]
    pub top: Option<u64>,
    /// Output format.
    ///
    /// The `all` aggregate is the row with cpu `all` in json, ndjson and
    /// csv; prometheus has per-vCPU counters only, which sum to it.
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FORMAT",
        value_enum,
        ignore_case = true,
        default_value = "text"
    )]
    pub format: Format,
    /// Seconds between reports (2, 0.5) or a duration (250ms).
    #[arg(value_name = "INTERVAL", value_parser = parse_interval, allow_negative_numbers = true)]
    pub interval: Option<Duration>,
    /// Number of reports (default, or 0: until stopped, as powerpc-utils'
    /// vcpustat takes 0).
    #[arg(value_name = "COUNT", value_parser = parse_count, requires = "interval", allow_negative_numbers = true)]
    pub count: Option<u64>,
    /// Where the kernel files come from.
    #[command(flatten)]
    pub source: SourceArgs,
    /// Charts of the run (--svg).
    #[command(flatten)]
    pub chart: crate::common::chart::SvgArgs,
    /// Where Prometheus expositions go.
    #[command(flatten)]
    pub expo: ExpoArgs,
}

/// The clap command (for `--help`, man pages and completions).
pub fn command() -> clap::Command {
    Cli::command()
}

/// Switching the statistics on or off, as asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Switch {
    /// `--enable`.
    On,
    /// `--disable`.
    Off,
}

/// What kind of run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Only --enable/--disable/--freq/--status: change, maybe show, and exit.
    Control,
    /// No interval: the cumulative counts once.
    Once,
    /// `--listen`: serve the counters at each scrape until stopped.
    Serve(std::net::SocketAddr),
    /// Reports every interval.
    Interval {
        /// Time between reports.
        interval: Duration,
        /// Number of reports; `None` runs until stopped.
        count: Option<u64>,
    },
}

impl Mode {
    /// Whether the run reports over time (an interval run or `--listen`),
    /// and so needs the statistics on until it ends.
    pub fn reports(self) -> bool {
        matches!(self, Mode::Interval { .. } | Mode::Serve(_))
    }
}

/// Everything a run needs, checked.
#[derive(Debug, Clone)]
pub struct Options {
    /// `--enable` / `--disable`.
    pub switch: Option<Switch>,
    /// `--freq`.
    pub freq: Option<i32>,
    /// `--status`.
    pub status: bool,
    /// `--temporary`.
    pub temporary: bool,
    /// Text view.
    pub view: View,
    /// `-t`.
    pub timestamp: bool,
    /// `--cpus`.
    pub cpus: Option<CpuList>,
    /// Row order.
    pub sort: SortKey,
    /// `--top`.
    pub top: Option<usize>,
    /// Output format.
    pub format: Format,
    /// The kind of run.
    pub mode: Mode,
    /// Where kernel files come from.
    pub source: SourceArgs,
    /// `--svg FILE`: charts of the run.
    pub svg: Option<std::path::PathBuf>,
    /// Where Prometheus expositions go besides standard output.
    pub expo: ExpoArgs,
}

impl Options {
    /// Checks the combinations clap cannot express.
    pub fn from_args(args: ReportArgs) -> Result<Options, VcpuError> {
        let switch = match (args.enable, args.disable) {
            (true, _) => Some(Switch::On),
            (_, true) => Some(Switch::Off),
            _ => None,
        };
        let changes = switch.is_some() || args.freq.is_some();
        if changes && args.source.replay.is_some() {
            return Err(VcpuError::Usage(
                "--enable, --disable and --freq change the live system: they cannot be used \
                 with --replay"
                    .into(),
            ));
        }
        let interval = nonzero_interval(args.interval, args.count).map_err(VcpuError::Usage)?;
        if args.status && args.format == Format::Prometheus && args.expo.textfile.is_none() {
            return Err(VcpuError::Usage(
                "--status prints text, which would break the exposition of -o prometheus: \
                 write the exposition with --textfile FILE instead"
                    .into(),
            ));
        }
        let other_output = report_output(args.format);
        if let Some(output) = other_output.filter(|_| args.status) {
            return Err(VcpuError::Usage(format!(
                "--status prints text, which would break the output of {output}: run \
                 vcpustat --status on its own (a change with {output} prints the counts it \
                 left)"
            )));
        }
        if let Some(conflict) = args.expo.listen_conflict(
            &args.source,
            args.interval.is_some(),
            args.chart.svg.is_some(),
            other_output,
        ) {
            return Err(VcpuError::Usage(conflict));
        }
        let mode = match (interval, args.expo.listen) {
            (_, Some(addr)) => Mode::Serve(addr),
            (Some(interval), None) => Mode::Interval {
                interval,
                count: args.count.filter(|&n| n != 0),
            },
            (None, None) if changes || args.status => Mode::Control,
            (None, None) => Mode::Once,
        };
        if switch == Some(Switch::Off) && mode.reports() {
            return Err(VcpuError::Usage(
                "--disable cannot be combined with an interval or --listen: reports need the \
                 statistics on"
                    .into(),
            ));
        }
        if args.temporary && matches!(mode, Mode::Control | Mode::Once) {
            return Err(VcpuError::Usage(
                "--temporary undoes --enable and --freq when a run ends: give an interval or \
                 --listen"
                    .into(),
            ));
        }
        if mode == Mode::Control
            && let Some((option, what)) = ignored_by_control(&args)
        {
            return Err(VcpuError::Usage(format!(
                "{option} {what}, and --enable, --disable, --freq and --status without an \
                 interval print none: give an interval, or run vcpustat {option} on its own"
            )));
        }
        // Without an interval there is nothing to take a delta of. `-n -r`
        // is `-r`: cumulative counts are already numbers.
        let view = if args.raw || mode == Mode::Once {
            View::Raw
        } else if args.numeric {
            View::Numeric
        } else {
            View::Percent
        };
        let exposing = args.format == Format::Prometheus
            || args.expo.textfile.is_some()
            || args.expo.listen.is_some();
        if exposing && args.chart.svg.is_some() {
            return Err(VcpuError::Usage(
                crate::common::chart::SVG_WITH_EXPOSITIONS.into(),
            ));
        }
        if exposing && args.top.is_some() {
            return Err(VcpuError::Usage(
                "--top cannot be used with -o prometheus, --textfile or --listen: every \
                 selected vCPU is exported, so that no series comes and goes (use topk() in \
                 PromQL)"
                    .into(),
            ));
        }
        if let Some(conflict) = args.expo.textfile_conflict(other_output) {
            return Err(VcpuError::Usage(conflict));
        }
        let sort = match (args.sort, args.top) {
            (Some(key), _) => key,
            (None, Some(_)) => SortKey::Home,
            (None, None) => SortKey::Cpu,
        };
        Ok(Options {
            switch,
            freq: args.freq,
            status: args.status,
            temporary: args.temporary,
            view,
            timestamp: args.timestamp,
            cpus: args.cpus,
            sort,
            top: args.top.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            format: args.format,
            mode,
            source: args.source,
            svg: args.chart.svg,
            expo: args.expo,
        })
    }

    /// The sampling schedule of an interval run: one extra first sample,
    /// the baseline of the first delta; cumulative reports (`-r`) skip it
    /// too, so that every view reports first after one interval, as
    /// powerpc-utils does.
    pub fn schedule(&self) -> Schedule {
        match self.mode {
            Mode::Interval { interval, count } => Schedule {
                interval: Some(interval),
                count: count.map(|c| c.saturating_add(1)),
                first_starts_only: true,
            },
            Mode::Control | Mode::Once | Mode::Serve(_) => Schedule::once(),
        }
    }
}

/// `--top N`: a whole number of vCPUs from 1, refused with a message that
/// says so (clap's own names Rust's parse error: "invalid digit found in
/// string", "number too large to fit in target type").
fn parse_top(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "expected a whole number of vCPUs from 1 to {}",
            u64::MAX
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(args: &[&str]) -> Result<Options, String> {
        let cli = Cli::try_parse_from(std::iter::once("vcpustat").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        Options::from_args(cli.report).map_err(|e| e.to_string())
    }

    #[test]
    fn the_command_is_well_formed() {
        command().debug_assert();
    }

    /// The safety note's list of the signals that undo what vcpustat
    /// changed is a hand-written copy of [`STOP_SIGNALS`] (it calls SIGINT
    /// Ctrl-C): the two name the same signals in the same order, and the
    /// exceptions the note names are signals the list leaves out.
    ///
    /// [`STOP_SIGNALS`]: crate::common::signals::STOP_SIGNALS
    #[test]
    fn the_safety_note_names_exactly_the_stop_signals() {
        use crate::common::signals::STOP_SIGNALS;
        // The names the note gives, by hand.
        let names = [
            (libc::SIGINT, "Ctrl-C"),
            (libc::SIGTERM, "SIGTERM"),
            (libc::SIGHUP, "SIGHUP"),
            (libc::SIGQUIT, "SIGQUIT"),
            (libc::SIGUSR1, "SIGUSR1"),
            (libc::SIGUSR2, "SIGUSR2"),
            (libc::SIGALRM, "SIGALRM"),
            (libc::SIGVTALRM, "SIGVTALRM"),
            (libc::SIGPROF, "SIGPROF"),
            (libc::SIGXCPU, "SIGXCPU"),
            (libc::SIGXFSZ, "SIGXFSZ"),
            (libc::SIGIO, "SIGIO"),
            (libc::SIGPWR, "SIGPWR"),
            (libc::SIGKILL, "SIGKILL"),
            (libc::SIGSTKFLT, "SIGSTKFLT"),
            (libc::SIGSEGV, "SIGSEGV"),
            (libc::SIGBUS, "SIGBUS"),
            (libc::SIGILL, "SIGILL"),
            (libc::SIGFPE, "SIGFPE"),
            (libc::SIGABRT, "SIGABRT"),
            (libc::SIGTRAP, "SIGTRAP"),
            (libc::SIGSYS, "SIGSYS"),
        ];
        let name_of = |signal: i32| match names.iter().find(|(s, _)| *s == signal) {
            Some((_, name)) => *name,
            None => panic!("signal {signal} is not in this test's names"),
        };
        let signal_of = |name: &str| match names.iter().find(|(_, n)| *n == name) {
            Some((signal, _)) => *signal,
            None => panic!("{name} is not in this test's names"),
        };
        let note = AFTER_HELP.split_whitespace().collect::<Vec<_>>().join(" ");
        let listed: Vec<&str> = STOP_SIGNALS.iter().map(|&s| name_of(s)).collect();
        let list = format!(
            "every way out: count reached, {}, a closed output pipe, an error.",
            listed.join(", ")
        );
        assert!(note.contains(&list), "{note}\nlacks\n{list}");
        let (_, exceptions) = note.split_once(" an error. Not ").unwrap();
        let (exceptions, _) = exceptions.split_once(". What you ask for").unwrap();
        let excepted: Vec<i32> = exceptions
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|word| word.starts_with("SIG"))
            .map(signal_of)
            .collect();
        let expected = [
            libc::SIGKILL,
            libc::SIGSTKFLT,
            libc::SIGSEGV,
            libc::SIGBUS,
            libc::SIGILL,
            libc::SIGFPE,
            libc::SIGABRT,
            libc::SIGTRAP,
            libc::SIGSYS,
        ];
        assert_eq!(excepted, expected, "{exceptions}");
        assert!(exceptions.contains("the real-time signals"), "{exceptions}");
        for signal in excepted {
            assert!(!STOP_SIGNALS.contains(&signal), "{}", name_of(signal));
        }
        let real_time = libc::SIGRTMIN()..=libc::SIGRTMAX();
        assert!(!STOP_SIGNALS.iter().any(|s| real_time.contains(s)));
    }

    #[test]
    fn interval_and_count_accept_the_core_grammar() {
        let o = options(&["0.5", "3"]).unwrap();
        assert_eq!(
            o.mode,
            Mode::Interval {
                interval: Duration::from_millis(500),
                count: Some(3)
            }
        );
        assert_eq!(o.schedule().count, Some(4));
        let o = options(&["-r", "250ms"]).unwrap();
        assert_eq!(o.schedule().count, None);
        // -r reports first after one interval too, as powerpc-utils does.
        assert_eq!(
            options(&["-r", "1", "2"]).unwrap().schedule().count,
            Some(3)
        );
        assert_eq!(options(&[]).unwrap().mode, Mode::Once);
        assert_eq!(options(&["--status"]).unwrap().mode, Mode::Control);
        assert_eq!(
            options(&["--enable", "--freq", "100"]).unwrap().mode,
            Mode::Control
        );
        assert!(options(&["x"]).unwrap_err().contains("invalid interval"));
        // A count of 0 runs until stopped, as in powerpc-utils' vcpustat
        // (process_stats counts down only `if (count)`).
        assert_eq!(
            options(&["1", "0"]).unwrap().mode,
            Mode::Interval {
                interval: Duration::from_secs(1),
                count: None
            }
        );
    }

    #[test]
    fn combinations_are_checked() {
        assert!(options(&["-e", "-d"]).is_err());
        assert_eq!(options(&["-n", "-r", "1"]).unwrap().view, View::Raw);
        assert!(options(&["--freq", "-5"]).is_err());
        assert!(options(&["--freq=-5"]).is_err());
        assert!(options(&["--freq", "1001"]).is_err());
        assert_eq!(options(&["--freq", "1000"]).unwrap().freq, Some(1000));
        // 0x hex as the kernel reads it too; a leading 0 stays decimal.
        assert_eq!(options(&["--freq", "0x10"]).unwrap().freq, Some(16));
        assert_eq!(options(&["--freq", "010"]).unwrap().freq, Some(10));
        assert!(options(&["--freq", "0x3e9"]).is_err());
        // -n, -r and -t shape reports, which a control run does not print
        // (powerpc-utils: "-e|-d cannot be used with other options");
        // --status prints a state, not a report.
        for (args, option) in [
            (&["-e", "-n"][..], "-n"),
            (&["-d", "-r"], "-r"),
            (&["--freq", "100", "-n"], "-n"),
            (&["--status", "-r"], "-r"),
            (&["--freq", "50", "-t"], "-t"),
            (&["--status", "-t"], "-t"),
            (&["-e", "-t", "-o", "json"], "-t"),
        ] {
            let err = options(args).unwrap_err();
            assert!(
                err.starts_with(&format!("{option} shapes reports, and --enable")),
                "{args:?}: {err}"
            );
        }
        assert!(options(&["-e", "-n", "1"]).is_ok());
        assert!(options(&["--status", "-t", "1"]).is_ok());
        // What chooses the rows of a report is refused when the control run
        // prints none, and used when it prints one (-o json, --textfile).
        for (args, option) in [
            (&["--status", "--svg", "s.svg"][..], "--svg draws reports"),
            (&["-e", "--cpus", "0"], "--cpus chooses"),
            (&["--freq", "50", "--sort", "total"], "--sort orders"),
            (&["-d", "--top", "2"], "--top chooses"),
        ] {
            let err = options(args).unwrap_err();
            assert!(err.starts_with(option), "{args:?}: {err}");
        }
        for args in [
            &["-e", "--svg", "s.svg", "-o", "json"][..],
            &["-e", "--cpus", "0", "--textfile", "m.prom"],
            &["-e", "--cpus", "0", "-o", "csv", "--top", "1"],
        ] {
            assert!(options(args).is_ok(), "{args:?}");
        }
        // --listen exports every selected vCPU, as -o prometheus does.
        let err = options(&["--listen", "127.0.0.1:0", "--top", "3"]).unwrap_err();
        assert!(err.starts_with("--top cannot be used with"), "{err}");
        // --status is text: it would break a machine document, as it would
        // break an exposition.
        for format in ["json", "ndjson", "csv"] {
            let err = options(&["--status", "-o", format]).unwrap_err();
            assert!(
                err.contains("would break the output of -o"),
                "{format}: {err}"
            );
            assert!(options(&["-e", "-o", format]).is_ok());
        }
        let err = options(&["--temporary", "-e"]).unwrap_err();
        assert!(err.contains("give an interval or --listen"), "{err}");
        let serve = options(&["--temporary", "-e", "--listen", "127.0.0.1:0"]).unwrap();
        assert!(serve.temporary && matches!(serve.mode, Mode::Serve(_)));
        assert!(options(&["--freq", "0"]).is_err());
        let err = options(&["-d", "1"]).unwrap_err();
        assert!(
            err.contains("--disable cannot be combined with an interval"),
            "{err}"
        );
        let err = options(&["-e", "--replay", "x.rec"]).unwrap_err();
        assert!(err.contains("cannot be used with --replay"), "{err}");
        let err = options(&["--cpus", "1-x"]).unwrap_err();
        assert!(err.contains("expected CPU numbers"), "{err}");
    }

    #[test]
    fn a_subcommand_can_join_without_breaking_the_interval_grammar() {
        // The `trace` subcommand sits next to the report options.
        let with_trace = command();
        let m = with_trace
            .clone()
            .try_get_matches_from(["vcpustat", "-n", "1", "2"])
            .unwrap();
        assert_eq!(
            m.get_one::<Duration>("interval"),
            Some(&Duration::from_secs(1))
        );
        assert_eq!(m.get_one::<u64>("count"), Some(&2));
        let m = with_trace
            .clone()
            .try_get_matches_from(["vcpustat", "trace", "report", "x.dtl"])
            .unwrap();
        assert_eq!(m.subcommand_name(), Some("trace"));
        assert!(
            with_trace
                .try_get_matches_from(["vcpustat", "-n", "trace", "report", "x.dtl"])
                .is_err()
        );
    }

    #[test]
    fn top_sorts_by_home_unless_told_otherwise() {
        assert_eq!(options(&["--top", "5", "1"]).unwrap().sort, SortKey::Home);
        assert_eq!(
            options(&["--top", "5", "--sort", "total", "1"])
                .unwrap()
                .sort,
            SortKey::Total
        );
        assert_eq!(options(&["1"]).unwrap().sort, SortKey::Cpu);
    }
}
