//! Command-line pieces every tool shares: where samples come from, and how a
//! run's result becomes an exit status.

use std::fmt::Display;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;

use super::output::Format;
use super::privilege::{self, Guarded};
use super::record::{Recorder, Refused, Replay, ReplayError, recording_error, replay_error};
use super::signals::is_broken_pipe;
use super::source::{RootFs, Source};

/// `--sysroot`'s help, the same in the three tools (iostat-rs builds its
/// command line by hand).
pub const SYSROOT_HELP: &str =
    "Use DIR instead of / for every kernel file, read or written (offline analysis, tests)";

/// `--record`'s help, the same in the three tools.
pub const RECORD_HELP: &str = "Write every kernel input read, with the sample times, to FILE \
     (-: standard output, the reports then going to standard error)";

/// `--record`'s long help (`--help`, the man pages), the same in the
/// three tools: what a recording holds of a run that ends before its
/// first sample.
pub const RECORD_LONG_HELP: &str = "Write every kernel input read, with the sample times, to \
    FILE (a new file is made readable by its owner only; a FIFO also serves, and - is \
    standard output, the reports then going to standard error). \
    Each sample is written as soon as it is taken, and a run that ends in order (its count, a \
    stop signal, an error) ends the file with an end line, so that --replay tells a recording \
    that was cut. A run refused before its first sample (an option, device type, event or \
    kernel interface it cannot use, a command that cannot run) records no sample but its \
    error and exit status: --replay FILE prints that error and exits with that status, \
    whatever its other options. Nothing is ever removed: a FILE that existed is replaced, \
    whatever the run's outcome. The format: docs/recording.md";

/// `--replay`'s help, the same in the three tools.
pub const REPLAY_HELP: &str =
    "Take the samples from a recording instead of the live system (- reads standard input)";

/// `--replay`'s long help (`--help`, the man pages), the same in the three
/// tools: what the interval and count of a replay mean.
pub const REPLAY_LONG_HELP: &str = "Take the samples from a recording instead of the live \
    system (- reads standard input). A replay never sleeps: each report takes the next recorded \
    sample, whatever INTERVAL says, and the times shown are the recorded ones; the interval \
    and count choose the view (reports of intervals, or one report as without them, and how \
    many), not the samples. The run ends when the samples do. docs/recording.md";

/// Where the kernel files come from and whether to record them.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SourceArgs {
    /// Every kernel file under DIR instead of / ([`SYSROOT_HELP`]).
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath, conflicts_with = "replay",
          value_parser = path_arg, help = SYSROOT_HELP)]
    pub sysroot: Option<PathBuf>,
    /// Write every kernel input read to FILE ([`RECORD_HELP`]).
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath, conflicts_with = "replay",
          value_parser = path_arg, help = RECORD_HELP, long_help = RECORD_LONG_HELP)]
    pub record: Option<PathBuf>,
    /// Take the samples from a recording ([`REPLAY_HELP`]).
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath, help = REPLAY_HELP,
          value_parser = path_arg, long_help = REPLAY_LONG_HELP)]
    pub replay: Option<PathBuf>,
}

/// An argument as the path it names: the bytes given, where an argument
/// that is not UTF-8 carries them ([`osname`](super::osname)), so that such
/// a path names its own file.
pub fn path_arg(text: &str) -> Result<PathBuf, std::convert::Infallible> {
    Ok(PathBuf::from(super::osname::to_os_string(text)))
}

/// `--listen`'s help, the same in the three tools (iostat-rs builds its
/// command line by hand).
pub const LISTEN_HELP: &str = "Serve Prometheus metrics at http://ADDR:PORT/metrics, read from \
    the kernel at each scrape (e.g. 127.0.0.1:9101; IPv6 in brackets; exactly that address is \
    bound; port 0: a free one, named on standard error with the rest of the address)";

/// `--textfile`'s help, the same in the three tools.
pub const TEXTFILE_HELP: &str = "Write one Prometheus exposition per interval to PATH, replaced \
    atomically (for node_exporter's textfile collector); nothing on standard output";

/// Where Prometheus expositions go besides standard output.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ExpoArgs {
    /// Write one Prometheus exposition per interval to PATH ([`TEXTFILE_HELP`]).
    #[arg(long, value_name = "PATH", value_hint = clap::ValueHint::FilePath, value_parser = path_arg,
          help = TEXTFILE_HELP)]
    pub textfile: Option<PathBuf>,
    /// Serve Prometheus metrics at `http://ADDR:PORT/metrics` ([`LISTEN_HELP`]).
    #[arg(long, value_name = "ADDR:PORT", value_parser = parse_listen_address,
          help = LISTEN_HELP)]
    pub listen: Option<SocketAddr>,
}

/// `--listen`'s address: an IP address and a port (no host name: exactly
/// that address is bound), with the same message in the three tools.
pub fn parse_listen_address(text: &str) -> Result<SocketAddr, String> {
    text.parse().map_err(|_| {
        "expected an IP address and a port, such as 127.0.0.1:9101 or [::1]:9101".to_string()
    })
}

/// The option asking for `format`'s reports, as [`ExpoArgs::listen_conflict`]
/// and [`ExpoArgs::textfile_conflict`] name it (`-o json`): `None` for text
/// (the default, which expositions replace) and prometheus.
pub fn report_output(format: Format) -> Option<&'static str> {
    match format {
        Format::Text | Format::Prometheus => None,
        Format::Json => Some("-o json"),
        Format::Ndjson => Some("-o ndjson"),
        Format::Csv => Some("-o csv"),
    }
}

impl ExpoArgs {
    /// What `--listen` cannot be combined with, as a one-line message with
    /// the reason: each scrape reads the live counters at that moment, so
    /// there is no interval, recording, replay, textfile, chart or other
    /// output format.
    /// `interval` says whether one was given, `svg` whether `--svg` was,
    /// `output` names another output asked for, as the command line gives
    /// it (`-o csv`, [`report_output`]; cxlstat's `-x`).
    pub fn listen_conflict(
        &self,
        source: &SourceArgs,
        interval: bool,
        svg: bool,
        output: Option<&str>,
    ) -> Option<String> {
        let addr = self.listen?;
        let (other, why) = if self.textfile.is_some() {
            (
                "--textfile".to_string(),
                "the server answers each scrape with the exposition the file would hold; \
                 use one of them",
            )
        } else if source.replay.is_some() {
            (
                "--replay".to_string(),
                "each scrape reads the live counters at that moment",
            )
        } else if source.record.is_some() {
            (
                "--record".to_string(),
                "scrapes are not recorded; record an interval run",
            )
        } else if interval {
            (
                "an interval".to_string(),
                "each scrape reads the live counters at that moment, at Prometheus's pace",
            )
        } else if svg {
            (
                "--svg".to_string(),
                "charts are drawn from interval reports, and a server makes none",
            )
        } else if let Some(output) = output {
            (
                output.to_string(),
                "the server answers each scrape with a Prometheus exposition, and writes no \
                 reports",
            )
        } else {
            return None;
        };
        Some(format!(
            "--listen {addr} cannot be used with {other}: {why}"
        ))
    }

    /// What `--textfile` cannot be combined with: another output (`output`,
    /// as [`ExpoArgs::listen_conflict`] takes it), which the expositions it
    /// writes would silently replace. A one-line message with the reason.
    pub fn textfile_conflict(&self, output: Option<&str>) -> Option<String> {
        self.textfile.as_ref()?;
        let output = output?;
        Some(format!(
            "--textfile cannot be used with {output}: it writes Prometheus expositions \
             instead of reports; use one of them"
        ))
    }
}

impl SourceArgs {
    /// Opens the source these arguments describe. `tool` and `args` go into a
    /// recording's header. Fails with a one-line message naming the file,
    /// or the option: when the program runs with raised privileges and an
    /// option would let the caller choose what it opens (see [`privilege`]),
    /// and when `--sysroot` is not a directory (or none at all); a
    /// replay of a run refused before its first sample fails as that run
    /// did ([`OpenError::Refused`]).
    pub fn open(&self, tool: &str, args: &[String]) -> Result<Box<dyn Source>, OpenError> {
        self.refuse_when_secure(privilege::is_secure())
            .map_err(OpenError::Message)?;
        if let Some(root) = &self.sysroot {
            let problem = match root.metadata() {
                Ok(meta) if meta.is_dir() => None,
                Ok(_) => Some("not a directory".to_string()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    Some("no such directory".to_string())
                }
                Err(e) => Some(format!("cannot be looked at: {e}")),
            };
            if let Some(problem) = problem {
                let message = format!("--sysroot {}: {problem}", super::escape::path(root));
                return Err(OpenError::Message(message));
            }
        }
        if let Some(path) = &self.replay {
            let replay = Replay::open(path, tool).map_err(|e| match e {
                ReplayError::Refused { refused, .. } => OpenError::Refused(refused),
                e => OpenError::Message(e.to_string()),
            })?;
            return Ok(Box::new(replay));
        }
        let live = RootFs::new(self.sysroot.clone().unwrap_or_else(|| PathBuf::from("/")));
        match &self.record {
            Some(path) => Recorder::create(path, Box::new(live), tool, args)
                .map(|r| Box::new(r) as Box<dyn Source>)
                .map_err(|e| OpenError::Message(e.to_string())),
            None => Ok(Box::new(live)),
        }
    }

    /// As [`SourceArgs::open`], for a run that only checks its command
    /// line (cxlstat's `--dry-run`): `--record` is refused where `open`
    /// refuses it, but nothing is recorded, and its file is left as it is.
    pub fn open_unrecorded(
        &self,
        tool: &str,
        args: &[String],
    ) -> Result<Box<dyn Source>, OpenError> {
        self.refuse_when_secure(privilege::is_secure())
            .map_err(OpenError::Message)?;
        let unrecorded = SourceArgs {
            record: None,
            ..self.clone()
        };
        unrecorded.open(tool, args)
    }

    /// The files a run reads that no output may name: the `--replay` recording.
    pub fn inputs(&self) -> Vec<(&'static str, &std::path::Path)> {
        self.replay
            .as_deref()
            .map(|path| ("--replay", path))
            .into_iter()
            .collect()
    }
}

/// Why [`SourceArgs::open`] failed.
#[derive(Debug)]
pub enum OpenError {
    /// One line naming the file or the option, which the tool prints
    /// after its name, with status 1.
    Message(String),
    /// `--replay` of a run refused before its first sample: the tool
    /// prints what that run printed and exits with its status.
    Refused(Refused),
}

impl OpenError {
    /// Prints the error as `tool` ends on it and gives the exit status: a
    /// refused run's recorded lines as they were printed (each escaped, as
    /// every line quoting a file is: the run's own lines are already, so
    /// only a forged recording's control characters change).
    #[cold]
    #[inline(never)]
    pub fn report(&self, tool: &str) -> i32 {
        match self {
            OpenError::Message(message) => report_error(tool, message, 1),
            OpenError::Refused(refused) => {
                for line in refused.stderr.split_inclusive('\n') {
                    let (text, newline) = match line.strip_suffix('\n') {
                        Some(text) => (text, "\n"),
                        None => (line, ""),
                    };
                    let text = super::escape::text(text);
                    super::stderr::print(format_args!("{text}{newline}"));
                }
                refused.status
            }
        }
    }
}

impl Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Message(message) => f.write_str(message),
            OpenError::Refused(refused) => write!(
                f,
                "the recorded run was refused before its first sample, with status {}: {}",
                refused.status,
                refused.stderr.trim_end()
            ),
        }
    }
}

/// Ends a run that failed after its source opened: `report` prints the
/// error (through [`super::stderr::print`]) and gives the exit status.
/// A recording of a run that has not taken its first sample keeps what
/// `report` printed and the status, for a replay to give again; any
/// other is finished ([`Source::refuse`]). A recording that cannot be
/// written then is said too, after the error (the status stays the
/// failure's).
// Out of line and cold: every run's start calls it on its way out of an
// error only (build.rs, "Hot code first").
#[cold]
#[inline(never)]
pub fn end_failed(tool: &str, source: &mut dyn Source, report: impl FnOnce() -> i32) -> i32 {
    let (status, printed) = super::stderr::transcript(report);
    let kept = source.refuse(&printed, status);
    ended(tool, status, kept)
}

/// Ends a run whose output failed (`err`, as [`output_error_status`]
/// reports it): the recording is finished as after any report, since a
/// replay's own output is another.
#[cold]
#[inline(never)]
pub fn end_output_failed(tool: &str, source: &mut dyn Source, err: &io::Error) -> i32 {
    let status = output_error_status(tool, err);
    let kept = source.finish();
    ended(tool, status, kept)
}

/// The exit status of a run that ended with `status`, its recording
/// ended with `kept`: a recording that could not be written is said,
/// and fails a run that succeeded.
fn ended(tool: &str, status: i32, kept: io::Result<()>) -> i32 {
    match kept {
        Ok(()) => status,
        Err(err) => {
            let failed = output_error_status(tool, &err);
            if status == 0 { failed } else { status }
        }
    }
}

impl SourceArgs {
    /// Refuses, when `secure`, every option that makes the program open
    /// files the caller chooses.
    fn refuse_when_secure(&self, secure: bool) -> Result<(), String> {
        privilege::refuse_when_secure(
            secure,
            &[
                Guarded {
                    option: "--sysroot",
                    given: self.sysroot.is_some(),
                    why: "takes kernel files, and what they make the program open, \
                          from a directory the caller chooses",
                },
                Guarded {
                    option: "--replay",
                    given: self.replay.is_some(),
                    why: "reads a file the caller chooses",
                },
                Guarded {
                    option: "--record",
                    given: self.record.is_some(),
                    why: "writes a file the caller chooses",
                },
            ],
        )
    }
}

/// The message for an option followed by another where its value was
/// expected (`--record -n`), as `typed`, then `value`: `expected` names
/// what it takes ("a FILE"), and how such a value is written is told
/// (`./-n` too for a file name, `long=-n`).
pub fn option_for_a_value(
    typed: &str,
    value: &str,
    long: &str,
    expected: &str,
    names_a_file: bool,
) -> String {
    let written = match names_a_file {
        true => format!("a name that starts with - is written ./{value} or {long}={value}"),
        false => format!("a value that starts with - is written {long}={value}"),
    };
    format!("{typed} {value}: expected {expected}, found an option ({written})")
}

/// An option followed by another where its value was expected, in the
/// words of [`option_for_a_value`]: clap says "a value is required for
/// '--record <FILE>' but none was supplied" (`--record -n`, where a value
/// was there, only one clap takes for the next option), or "unexpected
/// argument '-Q'" when that option is none of the tool's. `args` is the
/// command line, `command` the tool's.
fn option_taken_for_a_value(
    err: &clap::Error,
    args: &[String],
    command: &clap::Command,
) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let Some(ContextValue::String(shown)) = err.get(ContextKind::InvalidArg) else {
        return None;
    };
    let mut command = command.clone();
    command.build();
    let words = args.iter().take_while(|a| *a != "--").count();
    // The option, and the word after it that clap took for an option.
    let (arg, typed, value) = match err.kind() {
        ErrorKind::InvalidValue => {
            let long = shown.strip_prefix("--")?.split_once(' ')?.0;
            let arg = find_long(&command, long)?;
            // The first place where the command line, cut after the word
            // that follows the option, fails as the whole one did: clap
            // takes some words that begin with `-` as values (`-1`, where
            // a negative number may come), and the option may be given
            // more than once.
            let at = (2..words).find(|&i| {
                names(arg, &args[i - 1])
                    && args[i].starts_with('-')
                    && command
                        .clone()
                        .try_get_matches_from(&args[..=i])
                        .is_err_and(|e| {
                            e.kind() == ErrorKind::InvalidValue
                                && e.get(ContextKind::InvalidArg)
                                    == Some(&ContextValue::String(shown.clone()))
                        })
            })?;
            (arg, &args[at - 1], &args[at])
        }
        ErrorKind::UnknownArgument => {
            let at = (2..words).find(|&i| args[i] == *shown)?;
            let arg = find_typed(&command, &args[at - 1])?;
            (arg, &args[at - 1], &args[at])
        }
        _ => return None,
    };
    let long = format!("--{}", arg.get_long()?);
    let value_name = arg.get_value_names()?.first()?.to_string();
    let names_a_file = matches!(
        arg.get_value_hint(),
        clap::ValueHint::FilePath | clap::ValueHint::DirPath | clap::ValueHint::AnyPath
    );
    // "a FILE", as iostat-rs says; "EVENTS", "N", "LIST" alone.
    let expected = match names_a_file {
        true => format!("a {value_name}"),
        false => value_name,
    };
    Some(option_for_a_value(
        typed,
        value,
        &long,
        &expected,
        names_a_file,
    ))
}

/// Whether `word` is `arg` as typed: its long name or its short one.
fn names(arg: &clap::Arg, word: &str) -> bool {
    match word.strip_prefix("--") {
        Some(long) => arg.get_long() == Some(long),
        None => word
            .strip_prefix('-')
            .and_then(|short| short.parse::<char>().ok())
            .is_some_and(|short| arg.get_short() == Some(short)),
    }
}

/// The argument of `command` (or of a subcommand) that `word` names, if it
/// needs a value (`--list-events [PMU]` does not: an unknown option after
/// it is just that).
fn find_typed<'a>(command: &'a clap::Command, word: &str) -> Option<&'a clap::Arg> {
    command
        .get_arguments()
        .find(|a| names(a, word) && a.get_num_args().is_some_and(|n| n.min_values() > 0))
        .or_else(|| {
            command
                .get_subcommands()
                .find_map(|sub| find_typed(sub, word))
        })
}

/// The argument of `command` or of one of its subcommands whose long name
/// is `long`.
fn find_long<'a>(command: &'a clap::Command, long: &str) -> Option<&'a clap::Arg> {
    command
        .get_arguments()
        .find(|a| a.get_long() == Some(long))
        .or_else(|| {
            command
                .get_subcommands()
                .find_map(|sub| find_long(sub, long))
        })
}

/// Prints `tool: message` for an error and gives the exit status back (a
/// closed output pipe is [`output_error_status`]'s affair, before this).
///
/// Messages quote names from the kernel and the command line: the message
/// is printed with its control characters escaped, so it stays one line
/// and cannot drive the terminal.
pub fn report_error(tool: &str, message: impl Display, status: i32) -> i32 {
    // Not through tell(): see there.
    let message = message.to_string();
    let message = super::escape::text(&message);
    super::stderr::print(format_args!("{tool}: {message}\n"));
    status
}

/// Prints `tool: message` on standard error, a warning or a note as an
/// error is printed: escaped, since it may quote a name or a file (standard
/// output carries only reports, so a JSON document stays valid).
///
/// iostat-rs's code (this module's `SourceArgs::open`, `report_error`,
/// the `--listen` server) prints in place: calling this from there moved
/// the main job out of its 64 kB windows (`layout::`, 49 text pages
/// instead of 33) until `link/profile.sh` is run again.
pub fn tell(tool: &str, message: impl Display) {
    let message = message.to_string();
    let message = super::escape::text(&message);
    super::stderr::print(format_args!("{tool}: {message}\n"));
}

/// Maps an I/O error on standard output to an exit status: 0 for a reader
/// that went away (`iostat-rs -x 1 | head`), else an error message and 1,
/// also for a stop signal that came while the reader took nothing (the
/// output is cut short: a JSON document left open), as for a recording.
/// A recording that could not be written, or a replay's frame that could
/// not be read, is named as such (`file_error`).
pub fn output_error_status(tool: &str, err: &io::Error) -> i32 {
    if let Some(err) = file_error(err) {
        report_error(tool, err, 1)
    } else if is_reader_gone(err) {
        0
    } else {
        report_error(tool, format_args!("cannot write output: {err}"), 1)
    }
}

/// True when `err` says only that the reader of standard output went
/// away (a closed pipe): nothing more is written, but the run itself did
/// not fail.
pub fn is_reader_gone(err: &io::Error) -> bool {
    file_error(err).is_none() && is_broken_pipe(err)
}

/// True when `err` is standard output failing, after which nothing more
/// can be written to it. A recording that could not be written, or a
/// replay's frame that could not be read, reaches the tools as an I/O
/// error too (`file_error`), but the output is still whole: a JSON
/// document begun there is still closed.
pub fn is_output_failure(err: &io::Error) -> bool {
    file_error(err).is_none()
}

/// The error of a recording's file inside an I/O error a [`Recorder`] or
/// a [`Replay`] returned (through [`super::source::Source::next_sample`]
/// or `finish`), if it is one: its message names the file.
fn file_error(err: &io::Error) -> Option<&dyn std::error::Error> {
    match recording_error(err) {
        Some(err) => Some(err),
        None => replay_error(err).map(|err| err as &dyn std::error::Error),
    }
}

/// The exit status of a usage error in the tools whose command line clap
/// parses (vcpustat, cxlstat), as clap's own programs give it.
pub const USAGE_STATUS: i32 = 2;

/// Ends a command line that has a word after INTERVAL and COUNT (`vcpustat
/// 1 2 3`), with one message in the tools whose command line clap parses:
/// clap would name it as a misplaced subcommand (vcpustat) or say no more
/// than that it was unexpected (cxlstat).
pub fn operand_too_many_status(tool: &str, word: &str) -> i32 {
    report_error(
        tool,
        format_args!(
            "unexpected argument '{word}': a report takes at most an INTERVAL and a COUNT \
             (see '{tool} --help')"
        ),
        USAGE_STATUS,
    )
}

/// Whether `word`, which clap took for an unknown option, is a negative
/// number given as a word of its own in `args` (the program's name first),
/// before any `--` (`vcpustat 1 2 -3`): clap takes INTERVAL and COUNT
/// negative, to refuse them with their own message, but a third operand
/// for an option. Not when `word` is what clap names of a word it split
/// into short options (`-5` of `-5x`).
pub fn is_negative_operand(word: &str, args: &[String]) -> bool {
    let negative = word
        .strip_prefix('-')
        .is_some_and(|n| n.starts_with(|c: char| c.is_ascii_digit() || c == '.'));
    negative
        && args
            .iter()
            .skip(1)
            .take_while(|arg| *arg != "--")
            .any(|arg| arg == word)
}

/// Ends a command line clap could not parse: `--help` and `--version` print
/// as clap prints them (status 0; an output that fails them is
/// [`output_error_status`]'s, as for a report); an error is one line,
/// `tool: what is wrong (see 'tool --help')`, with [`USAGE_STATUS`]; an
/// option followed by another where its value was expected is told as
/// iostat-rs tells it ([`option_for_a_value`]). `args` is the command line
/// and `command` the tool's, which clap parsed.
pub fn parse_error_status(
    tool: &str,
    err: &clap::Error,
    args: &[String],
    command: &clap::Command,
) -> i32 {
    parse_error_status_with_help(tool, tool, err, args, command)
}

/// [`parse_error_status`] for an error in a subcommand's arguments: the
/// line points to `help_command --help` (`vcpustat trace record --help`),
/// which lists that subcommand's options.
pub fn parse_error_status_with_help(
    tool: &str,
    help_command: &str,
    err: &clap::Error,
    args: &[String],
    command: &clap::Command,
) -> i32 {
    if !err.use_stderr() {
        // Standard output is line-buffered: the flush writes a last line
        // that has no newline, so every failure shows here.
        return match err
            .print()
            .and_then(|()| io::Write::flush(&mut io::stdout()))
        {
            Ok(()) => 0,
            Err(e) => output_error_status(tool, &e),
        };
    }
    if let Some(message) = option_taken_for_a_value(err, args, command) {
        return report_error(tool, message, USAGE_STATUS);
    }
    // clap's first paragraph (the error and its details, such as the
    // possible values or the missing arguments), joined into one line.
    let rendered = err.render().to_string();
    let paragraph: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .skip_while(|l| l.is_empty())
        .take_while(|l| !l.is_empty())
        .collect();
    let joined = paragraph.join(" ");
    let what = joined.strip_prefix("error: ").unwrap_or(&joined);
    report_error(
        tool,
        format_args!("{what} (see '{help_command} --help')"),
        USAGE_STATUS,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_outputs_are_named_as_the_command_line_gives_them() {
        assert_eq!(report_output(Format::Text), None);
        assert_eq!(report_output(Format::Prometheus), None);
        assert_eq!(report_output(Format::Json), Some("-o json"));
        assert_eq!(report_output(Format::Ndjson), Some("-o ndjson"));
        assert_eq!(report_output(Format::Csv), Some("-o csv"));
    }

    #[test]
    fn a_textfile_refuses_another_output_and_only_then() {
        let textfile = ExpoArgs {
            textfile: Some("m.prom".into()),
            listen: None,
        };
        assert_eq!(
            textfile.textfile_conflict(Some("-x")).as_deref(),
            Some(
                "--textfile cannot be used with -x: it writes Prometheus expositions instead \
                 of reports; use one of them"
            )
        );
        assert_eq!(textfile.textfile_conflict(None), None);
        assert_eq!(ExpoArgs::default().textfile_conflict(Some("-o csv")), None);
    }

    #[test]
    fn listen_names_the_other_output_as_given() {
        let listen = ExpoArgs {
            textfile: None,
            listen: Some("127.0.0.1:1".parse().unwrap()),
        };
        let source = SourceArgs::default();
        assert_eq!(
            listen
                .listen_conflict(&source, false, false, Some("-x"))
                .as_deref(),
            Some(
                "--listen 127.0.0.1:1 cannot be used with -x: the server answers each scrape \
                 with a Prometheus exposition, and writes no reports"
            )
        );
        assert_eq!(listen.listen_conflict(&source, false, false, None), None);
    }

    #[test]
    fn raised_privileges_refuse_every_caller_chosen_path() {
        let none = SourceArgs::default();
        assert!(none.refuse_when_secure(true).is_ok());
        for (option, args) in [
            (
                "--sysroot",
                SourceArgs {
                    sysroot: Some("/tmp".into()),
                    ..SourceArgs::default()
                },
            ),
            (
                "--replay",
                SourceArgs {
                    replay: Some("r".into()),
                    ..SourceArgs::default()
                },
            ),
            (
                "--record",
                SourceArgs {
                    record: Some("r".into()),
                    ..SourceArgs::default()
                },
            ),
        ] {
            assert!(args.refuse_when_secure(false).is_ok());
            let err = args.refuse_when_secure(true).unwrap_err();
            assert!(err.starts_with(&format!("{option}: refused")), "{err}");
        }
    }

    #[test]
    fn a_refused_run_ends_its_recording_and_its_replay_prints_what_it_printed() {
        use crate::common::stderr::transcript;
        let dir = crate::common::scratch::scratch("cli-refused");
        let rec = dir.join("r.rec");
        let args = SourceArgs {
            sysroot: Some(dir.to_path_buf()),
            record: Some(rec.clone()),
            replay: None,
        };
        let mut source = args.open("test", &[]).unwrap();
        let status = end_failed("test", source.as_mut(), || {
            report_error("test", "no \u{1b}]0;t\u{7} here", 4)
        });
        assert_eq!(status, 4);
        let replayed = SourceArgs {
            replay: Some(rec),
            ..SourceArgs::default()
        };
        let err = replayed.open("test", &[]).err().unwrap();
        let (status, printed) = transcript(|| err.report("test"));
        assert_eq!(
            (status, printed.as_str()),
            (4, "test: no \\x1b]0;t\\x07 here\n")
        );
        // A forged recording's control characters are escaped as well.
        let forged = OpenError::Refused(Refused {
            status: 127,
            stderr: "a\u{1b}[2J\nb \\x20\n\u{9b}c".into(),
        });
        let (status, printed) = transcript(|| forged.report("test"));
        assert_eq!(
            (status, printed.as_str()),
            (127, "a\\x1b[2J\nb \\x20\n\\u{9b}c")
        );
    }
}
