//! Prometheus text exposition (format 0.0.4) of cumulative counters, built
//! one metric family at a time: `# HELP` and `# TYPE` once per family, then
//! its samples, and no client-side timestamps. The same text is written on
//! standard output (one exposition per report), into a textfile for
//! node_exporter's textfile collector, and answered to a scrape.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::PathBuf;

use super::escape;
use super::interval::Schedule;
use super::run::{RunEnd, run_samples};
use super::signals::StopSignal;
use super::source::Source;
use super::textfile;

/// The type of a metric family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A cumulative count (its name ends in `_total`).
    Counter,
    /// A value that can go up and down.
    Gauge,
    /// Cumulative bucket counts with their sum and count (samples written
    /// with [`Exposition::histogram`]).
    Histogram,
}

/// One metric family's description.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Family {
    /// Metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`).
    pub name: &'static str,
    /// Counter, gauge or histogram.
    pub kind: Kind,
    /// The `# HELP` text.
    pub help: &'static str,
}

/// An exposition being written. Families must be started in turn: all the
/// samples of a family follow its [`Exposition::family`] call.
#[derive(Debug, Default)]
pub struct Exposition {
    text: String,
    name: &'static str,
}

impl Exposition {
    /// An empty exposition.
    pub fn new() -> Exposition {
        Exposition::default()
    }

    /// Starts family `f`: writes its `# HELP` and `# TYPE` lines.
    pub fn family(&mut self, f: &Family) {
        let kind = match f.kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        };
        let _ = writeln!(self.text, "# HELP {} {}", f.name, escape_help(f.help));
        let _ = writeln!(self.text, "# TYPE {} {kind}", f.name);
        self.name = f.name;
    }

    /// One sample of the current family. Labels whose value is empty are
    /// left out (Prometheus treats an empty label as an absent one).
    pub fn sample(&mut self, labels: &[(&str, &str)], value: f64) {
        self.push_sample("", labels, None, value);
    }

    /// One histogram of the current family (of [`Kind::Histogram`]): a
    /// `_bucket` sample per `(upper bound, observations at or below it)`
    /// in increasing order, the `+Inf` bucket (`count`), then `_sum` and
    /// `_count`.
    pub fn histogram(
        &mut self,
        labels: &[(&str, &str)],
        buckets: &[(f64, f64)],
        sum: f64,
        count: f64,
    ) {
        for &(le, cumulative) in buckets {
            self.push_sample("_bucket", labels, Some(le), cumulative);
        }
        self.push_sample("_bucket", labels, Some(f64::INFINITY), count);
        self.push_sample("_sum", labels, None, sum);
        self.push_sample("_count", labels, None, count);
    }

    fn push_sample(&mut self, suffix: &str, labels: &[(&str, &str)], le: Option<f64>, value: f64) {
        self.text.push_str(self.name);
        self.text.push_str(suffix);
        let mut first = true;
        for (name, v) in labels.iter().filter(|(_, v)| !v.is_empty()) {
            self.text.push(if first { '{' } else { ',' });
            first = false;
            self.text.push_str(name);
            self.text.push_str("=\"");
            escape_label_into(&mut self.text, v);
            self.text.push('"');
        }
        if let Some(le) = le {
            self.text.push_str(if first { "{le=\"" } else { ",le=\"" });
            first = false;
            push_value(&mut self.text, le);
            self.text.push('"');
        }
        if !first {
            self.text.push('}');
        }
        self.text.push(' ');
        push_value(&mut self.text, value);
        self.text.push('\n');
    }

    /// The exposition so far.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The finished text.
    pub fn into_string(self) -> String {
        self.text
    }
}

/// Where each exposition goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Standard output: one exposition per report, each followed by an
    /// empty line (an exposition is the text between two empty lines).
    Stdout,
    /// A file replaced atomically by each new exposition (`--textfile`).
    Textfile(PathBuf),
}

impl Target {
    /// Publishes one complete exposition.
    pub fn publish(&self, out: &mut dyn Write, text: &str) -> io::Result<()> {
        match self {
            Target::Stdout => {
                out.write_all(text.as_bytes())?;
                out.write_all(b"\n")?;
                out.flush()
            }
            Target::Textfile(path) => textfile::replace(path, text.as_bytes()).map_err(|err| {
                io::Error::new(
                    err.kind(),
                    format!("--textfile {}: {err}", crate::common::escape::path(path)),
                )
            }),
        }
    }
}

/// A run's expositions to its [`Target`], one per report. In a run of
/// several reports, a textfile that cannot be written for want of room (a
/// full file system or quota) does not end the run, as it
/// does not end a cron job's next run: the previous exposition stays, a
/// line on standard error says so once, and each report tries again
/// (another line says when one is written again). A write failed last
/// fails the run at its end ([`Publisher::finish`]). Any other failure (a
/// directory removed, a file system made read-only), and one of standard
/// output, ends the run at once, as for any report.
#[derive(Debug)]
pub struct Publisher {
    target: Target,
    tool: &'static str,
    /// Whether more reports follow the first: a failure may be tried again.
    again: bool,
    /// Whether an exposition was written.
    written: bool,
    /// The error of the last write, while the textfile's writes fail.
    failing: Option<io::Error>,
}

impl Publisher {
    /// Expositions of `tool` to `target`, of a run of more than one report
    /// when `again`.
    pub fn new(target: Target, tool: &'static str, again: bool) -> Publisher {
        Publisher {
            target,
            tool,
            again,
            written: false,
            failing: None,
        }
    }

    /// Publishes one exposition ([`Target::publish`]); a textfile's
    /// failure to be tried again is said and kept instead of returned.
    pub fn publish(&mut self, out: &mut dyn Write, text: &str) -> io::Result<()> {
        let published = self.target.publish(out, text);
        let Target::Textfile(path) = &self.target else {
            return published;
        };
        match published {
            Ok(()) => {
                if self.failing.take().is_some() {
                    super::cli::tell(
                        self.tool,
                        format_args!(
                            "--textfile {}: written again",
                            crate::common::escape::path(path)
                        ),
                    );
                }
                self.written = true;
            }
            Err(err) if self.again && is_for_want_of_room(&err) => {
                if self.failing.is_none() {
                    let left = if self.written {
                        "the previous exposition stays"
                    } else {
                        "no exposition written yet"
                    };
                    super::cli::tell(
                        self.tool,
                        format_args!(
                            "cannot write output: {err}: {left}; tried again at each report"
                        ),
                    );
                }
                self.failing = Some(err);
            }
            Err(err) => return Err(err),
        }
        Ok(())
    }

    /// Ends the run's expositions: the error of a textfile write that
    /// failed last, which left the previous exposition in place.
    pub fn finish(&mut self) -> io::Result<()> {
        self.failing.take().map_or(Ok(()), Err)
    }
}

/// Whether a write failed for want of room (`ENOSPC`, `EDQUOT`), which
/// may pass: not a directory removed or a file system made read-only.
/// (By kind: [`Target::publish`] names the file in a new error.)
fn is_for_want_of_room(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
    )
}

/// Writes one exposition per report to `target`: `collect` reads the
/// counters at each sample of `schedule` and appends its families. When
/// the schedule's first sample only starts the run (the tools' `-y`,
/// vcpustat's interval runs), it is collected, so that the collector sees
/// it, but not published. A textfile is written as [`Publisher`] writes
/// it.
pub fn run_expositions<E: From<io::Error>>(
    tool: &'static str,
    schedule: &Schedule,
    source: &mut dyn Source,
    stop: &StopSignal,
    target: &Target,
    out: &mut dyn Write,
    mut collect: impl FnMut(&mut dyn Source, &mut Exposition) -> Result<(), E>,
) -> Result<RunEnd, E> {
    let reports = schedule
        .count
        .map(|count| count.saturating_sub(u64::from(schedule.first_starts_only)));
    let again = schedule.interval.is_some() && reports.is_none_or(|reports| reports > 1);
    let mut publisher = Publisher::new(target.clone(), tool, again);
    let end = run_samples(schedule, source, stop, None, |source, index| {
        let mut e = Exposition::new();
        collect(source, &mut e)?;
        if !(schedule.first_starts_only && index == 0) {
            publisher.publish(out, e.as_str())?;
        }
        Ok::<(), E>(())
    })?;
    publisher.finish()?;
    Ok(end)
}

/// Writes a sample value as Prometheus reads it: integers without a
/// fraction, `NaN`, `+Inf` and `-Inf` spelled out.
fn push_value(out: &mut String, value: f64) {
    if value.is_nan() {
        out.push_str("NaN");
    } else if value.is_infinite() {
        out.push_str(if value > 0.0 { "+Inf" } else { "-Inf" });
    } else {
        let _ = write!(out, "{value}");
    }
}

/// A label value as the exposition format escapes it, after its control
/// characters and bytes that are not UTF-8 are shown as text output shows
/// them ([`escape::text`]): the format has no escape for them, and raw they
/// would act on a terminal the exposition is printed on. A backslash of
/// the value's own is shown as an escape too (`\x5c`), so that no value
/// reads as another's escaped: a device named `e\x1bx` and one named e,
/// ESC, x were one series twice, and Prometheus drops a duplicate.
fn escape_label_into(out: &mut String, value: &str) {
    let own_backslashes;
    let value = if value.contains('\\') {
        own_backslashes = value.replace('\\', "\\x5c");
        own_backslashes.as_str()
    } else {
        value
    };
    for c in escape::text(value).chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c => out.push(c),
        }
    }
}

fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_bytes_that_are_not_utf8_show_as_hex() {
        let name = crate::common::osname::from_bytes(b"x\xfe\\");
        let mut out = String::new();
        escape_label_into(&mut out, &name);
        assert_eq!(out, "x\\\\xfe\\\\x5c");
    }

    /// No two values escape alike: a control character and the text of
    /// its escape stay apart.
    #[test]
    fn label_escapes_tell_every_value_apart() {
        let escaped = |value: &str| {
            let mut out = String::new();
            escape_label_into(&mut out, value);
            out
        };
        assert_eq!(escaped("e\u{1b}x"), "e\\\\x1bx");
        assert_eq!(escaped("e\\x1bx"), "e\\\\x5cx1bx");
        assert_eq!(escaped("a\nb"), "a\\\\nb");
        assert_eq!(escaped("a\\nb"), "a\\\\x5cnb");
    }

    #[test]
    fn families_once_labels_escaped_empty_labels_left_out() {
        let mut e = Exposition::new();
        e.family(&Family {
            name: "x_reads_total",
            kind: Kind::Counter,
            help: "Reads\\done\nhere.",
        });
        e.sample(&[("device", "sda")], 42.0);
        e.sample(&[("device", "a\"b\\c\nd"), ("path", "")], 0.5);
        e.family(&Family {
            name: "x_up",
            kind: Kind::Gauge,
            help: "Up.",
        });
        e.sample(&[("path", "")], 1.0);
        e.sample(&[], f64::NAN);
        e.sample(&[], f64::INFINITY);
        assert_eq!(
            e.into_string(),
            "# HELP x_reads_total Reads\\\\done\\nhere.\n\
             # TYPE x_reads_total counter\n\
             x_reads_total{device=\"sda\"} 42\n\
             x_reads_total{device=\"a\\\"b\\\\x5cc\\\\nd\"} 0.5\n\
             # HELP x_up Up.\n\
             # TYPE x_up gauge\n\
             x_up 1\n\
             x_up NaN\n\
             x_up +Inf\n"
        );
    }

    #[test]
    fn histograms_have_buckets_inf_sum_and_count() {
        let mut e = Exposition::new();
        e.family(&Family {
            name: "h_seconds",
            kind: Kind::Histogram,
            help: "H.",
        });
        e.histogram(
            &[("device", "sda")],
            &[(0.001, 2.0), (0.25, 5.0)],
            0.75,
            6.0,
        );
        e.histogram(&[], &[(1.0, 0.0)], 0.0, 0.0);
        assert_eq!(
            e.into_string(),
            "# HELP h_seconds H.\n\
             # TYPE h_seconds histogram\n\
             h_seconds_bucket{device=\"sda\",le=\"0.001\"} 2\n\
             h_seconds_bucket{device=\"sda\",le=\"0.25\"} 5\n\
             h_seconds_bucket{device=\"sda\",le=\"+Inf\"} 6\n\
             h_seconds_sum{device=\"sda\"} 0.75\n\
             h_seconds_count{device=\"sda\"} 6\n\
             h_seconds_bucket{le=\"1\"} 0\n\
             h_seconds_bucket{le=\"+Inf\"} 0\n\
             h_seconds_sum 0\n\
             h_seconds_count 0\n"
        );
    }

    #[test]
    fn big_counters_keep_every_digit() {
        let mut e = Exposition::new();
        e.family(&Family {
            name: "c_total",
            kind: Kind::Counter,
            help: "C.",
        });
        e.sample(&[], 4_294_967_296.0 * 3.0);
        e.sample(&[], 1234.567);
        assert!(
            e.as_str()
                .ends_with("c_total 12884901888\nc_total 1234.567\n")
        );
    }
}
