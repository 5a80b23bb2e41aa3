//! One run: options in, reports out. Opens the source, reads each sample
//! (uptime, CPU, devices) on the core's interval loop and hands it to the
//! renderer; maps every failure to sysstat's message and exit status.
//!
//! The paths most runs never take (errors, `--help`, `-V`, `--listen`,
//! expositions) are `#[inline(never)]`: inlined into `main_with_args` or
//! `run`, whose code every run executes, they would keep their pages
//! resident in every run (build.rs, "Hot code first").

use std::io::{self, BufWriter, IsTerminal, Write};
use std::time::Duration;

use crate::common::chart;
use crate::common::cli::{
    end_failed, is_output_failure, is_reader_gone, output_error_status, report_error,
};
use crate::common::entry::Program;
use crate::common::escape;
use crate::common::expo::{Target, run_expositions};
use crate::common::interval::Schedule;
use crate::common::privilege;
use crate::common::run::run_samples;
use crate::common::serve::{self, ScrapeError};
use crate::common::signals::StopSignal;
use crate::common::source::Source;
use crate::common::stderr;
use crate::common::stdout::StoppableStdout;
use crate::common::temp_file::check_chosen_outputs;

use super::cli::{
    Action, AltMode, DeviceKind, Env, ListArg, Options, OutputFormat, command, parse_args,
    usage_text,
};
use super::devices::DeviceList;
use super::error::{IostatError, strerror};
use super::expose::Exporter;
use super::hotplug::CpuLines;
use super::latency::Latency;
use super::latency::coverage::Notes;
use super::latency::prometheus::LatencyExposition;
use super::model::{clock_interval_cs, cpu_percent, interval_cs};
use super::named_dirs;
use super::parse::{CpuTicks, parse_proc_stat_cpu, parse_uptime, proc_stat_cpu_count};
use super::render_json::JsonRenderer;
use super::render_machine::MachineRenderer;
use super::render_svg::SvgCharts;
use super::render_text::TextRenderer;
use super::report::{Banner, Renderer, Sample, banner_date};

const TOOL: &str = "iostat-rs";

/// iostat-rs, as its binary starts it ([`crate::common::entry`]).
pub const PROGRAM: Program = Program {
    name: TOOL,
    command: super::cli::command,
    main: main_with_args,
};

/// Runs iostat-rs with `args` (program name first) and returns the exit status.
pub fn main_with_args(args: Vec<String>) -> i32 {
    let progname = args.first().cloned().unwrap_or_else(|| TOOL.to_string());
    let rest = args.get(1..).unwrap_or(&[]);
    let opts = match parse_args(rest, Env::from_process()) {
        Ok(o) => o,
        Err(e) => return report(&progname, named_dirs_first(e)),
    };
    match opts.action {
        Action::Help => return print_help(),
        Action::Version => {
            // sysstat's scan checked each -f DIR and -j TYPE before it met -V.
            let is_dir = named_dirs::is_dir_under(opts.source.sysroot.as_deref());
            if let Some(e) = named_dirs::first_missing(&opts.named_dirs, is_dir) {
                return report(&progname, e);
            }
            return print_version(&opts.env);
        }
        Action::Run => {}
    }
    if let Some(conflict) = source_conflict(&opts)
        .or_else(|| unit_conflict(&opts))
        .or_else(|| latency_conflict(&opts))
        .or_else(|| alt_dir_conflict(&opts))
        .or_else(|| textfile_conflict(&opts))
        .or_else(|| chart_option_conflict(&opts))
    {
        return report_error(TOOL, conflict, 2);
    }
    // Refused before any file is opened: a recording is created (or an
    // old one replaced) when the source opens.
    let listen = match listen_address(&opts) {
        Ok(listen) => listen,
        Err(message) => return report_error(TOOL, message, 2),
    };
    if let Err(msg) = check_chosen_outputs(
        opts.svg.as_deref(),
        opts.expo.textfile.as_deref(),
        opts.source.record.as_deref(),
        &opts.source.inputs(),
    ) {
        return report(&progname, IostatError::Source(msg));
    }
    // Raised privileges serve the setup alone: not dumpable before it
    // begins, no capability left in this thread once it is done.
    let secure = privilege::is_secure();
    if secure && let Err(e) = privilege::forbid_tracing() {
        let why = format!("cannot make the process non-dumpable: {e}");
        return report(&progname, IostatError::Source(why));
    }
    // Bound first: a port in use fails before anything is measured.
    let listener = match listen.map(serve::bind).transpose() {
        Ok(listener) => listener,
        Err(e) => return report(&progname, IostatError::Source(e.to_string())),
    };
    let mut source = match opts.source.open(TOOL, rest) {
        Ok(s) => s,
        Err(e) => return e.report(TOOL),
    };
    // A run that cannot measure is refused before its first sample, as any
    // other: its recording keeps the error and status for a replay to give
    // again (`end_failed`), as --record's help says.
    let latency = match start_latency(&opts) {
        Ok(latency) => latency,
        Err(e) => return end_failed(TOOL, source.as_mut(), || report(&progname, e)),
    };
    if secure && let Err(e) = privilege::drop_capabilities() {
        let why = format!("cannot drop capabilities: {e}");
        return report(&progname, IostatError::Source(why));
    }
    let result = if let (Some(addr), Some(listener)) = (listen, listener) {
        serve_metrics(&opts, addr, listener, source.as_mut(), latency)
    } else if opts.format == OutputFormat::Prometheus || opts.expo.textfile.is_some() {
        expositions(&opts, source.as_mut(), latency)
    } else {
        run(&opts, source.as_mut(), latency)
    };
    match result {
        Ok(()) => 0,
        // A run refused before its first sample: its recording keeps the
        // error for a replay to give again.
        Err(e) => end_failed(TOOL, source.as_mut(), || report(&progname, e)),
    }
}

/// `--replay` with an option it cannot honour: the same refusal, pointer to
/// `--help` and status (2) as vcpustat and cxlstat, whose parser (clap)
/// says it this way.
fn source_conflict(opts: &Options) -> Option<String> {
    let source = &opts.source;
    source.replay.as_ref()?;
    let other = if source.record.is_some() {
        "--record <FILE>"
    } else if source.sysroot.is_some() {
        "--sysroot <DIR>"
    } else {
        return None;
    };
    Some(format!(
        "the argument '--replay <FILE>' cannot be used with '{other}' (see '{TOOL} --help')"
    ))
}

/// The machine formats write base units (bytes, seconds, ratios): a size or
/// `--human` option would be silently ignored there, so it is refused.
fn unit_conflict(opts: &Options) -> Option<String> {
    let format = match opts.format {
        OutputFormat::Csv => "csv",
        OutputFormat::Ndjson => "ndjson",
        OutputFormat::Prometheus => "prometheus",
        OutputFormat::Text | OutputFormat::SysstatJson => return None,
    };
    let option = match (opts.unit_option, opts.human) {
        (Some(letter), _) => format!("-{letter}"),
        // `-h` is `--human --pretty`: either may have been given.
        (None, true) => "-h or --human".to_string(),
        (None, false) => return None,
    };
    Some(format!(
        "{option} cannot be used with -o {format}: it writes bytes, seconds and ratios \
         (base units); size options apply to the text and JSON reports"
    ))
}

/// `--latency` adds columns to the `-x` device report of the live kernel
/// (or of a recording of it), or histograms to the Prometheus expositions:
/// anything else would drop them silently.
fn latency_conflict(opts: &Options) -> Option<String> {
    if !opts.latency {
        return None;
    }
    if !exposes(opts) && (!opts.extended || opts.short) {
        return Some(
            "--latency needs -x (without -s): it adds columns to the extended report".into(),
        );
    }
    if opts.source.sysroot.is_some() {
        return Some(
            "--latency cannot be used with --sysroot: the tracepoints are the running kernel's"
                .into(),
        );
    }
    None
}

/// `-f DIR` or `+f DIR` with expositions, which read the system's
/// `/proc/diskstats` as node_exporter does: the alternate directory would
/// be silently ignored, and the system's disks exported in its place.
fn alt_dir_conflict(opts: &Options) -> Option<String> {
    let option = match opts.alt_dir.as_ref()?.mode {
        AltMode::Only => "-f",
        AltMode::Also => "+f",
    };
    let exposition = if opts.listen.is_some() {
        "--listen"
    } else if opts.expo.textfile.is_some() {
        "--textfile"
    } else if opts.format == OutputFormat::Prometheus {
        "-o prometheus"
    } else {
        return None;
    };
    Some(format!(
        "{option} cannot be used with {exposition}: the expositions read the system's \
         /proc/diskstats, as node_exporter does"
    ))
}

/// Whether the output is Prometheus expositions (`-o prometheus`,
/// `--textfile`, `--listen`) rather than reports.
fn exposes(opts: &Options) -> bool {
    opts.format == OutputFormat::Prometheus || opts.expo.textfile.is_some() || opts.listen.is_some()
}

/// `--latency`: the measurement started (of the running kernel, or read
/// from the recording `--replay` names); `None` without it.
fn start_latency(opts: &Options) -> Result<Option<Latency>, IostatError> {
    if !opts.latency {
        return Ok(None);
    }
    let live = opts.source.replay.is_none();
    Latency::start(live, shows_partitions(opts))
        .map(Some)
        .map_err(IostatError::Latency)
}

/// The exporter for `opts`, with the histograms of `latency` if measured.
fn exporter(opts: &Options, latency: Option<Latency>) -> Exporter {
    let exporter = Exporter::new(opts);
    match latency {
        Some(latency) => exporter.with_latency(LatencyExposition::new(latency)),
        None => exporter,
    }
}

/// `-p` in any form: partitions are reported, so `--latency` attributes
/// requests to them too.
fn shows_partitions(opts: &Options) -> bool {
    opts.everything
        || opts.list.iter().any(|a| {
            matches!(
                a,
                ListArg::Device {
                    kind: DeviceKind::WithPartitions,
                    ..
                }
            )
        })
}

/// `--textfile` with another `-o` format, which its expositions would
/// silently replace ([`ExpoArgs::textfile_conflict`]). Every run comes
/// here; the shared check, which is not among the code every run executes
/// (build.rs, "Hot code first"), is called only when `--textfile` is given.
///
/// [`ExpoArgs::textfile_conflict`]: crate::common::cli::ExpoArgs::textfile_conflict
fn textfile_conflict(opts: &Options) -> Option<String> {
    opts.expo.textfile.as_ref()?;
    opts.expo.textfile_conflict(report_output(opts.format))
}

/// The option asking for `format`'s reports, as the conflicts of
/// `--textfile` and `--listen` name it (`-o JSON`): `None` for text and
/// prometheus. iostat-rs's own formats, as
/// [`report_output`](crate::common::cli::report_output) names the others'.
fn report_output(format: OutputFormat) -> Option<&'static str> {
    match format {
        OutputFormat::Text | OutputFormat::Prometheus => None,
        OutputFormat::Csv => Some("-o csv"),
        OutputFormat::Ndjson => Some("-o ndjson"),
        OutputFormat::SysstatJson => Some("-o JSON"),
    }
}

/// `--svg-top` or `--svg-sort` without `--svg`: they choose what the charts
/// draw, so without charts they would be silently ignored; a `--svg-sort`
/// that is no column of the charts; and `--svg` with
/// expositions, which take the place of the reports the charts draw
/// (`--listen` with `--svg` is refused with the other `--listen` conflicts).
fn chart_option_conflict(opts: &Options) -> Option<String> {
    if opts.svg.is_some() {
        let exposing = opts.format == OutputFormat::Prometheus || opts.expo.textfile.is_some();
        if exposing {
            return Some(chart::SVG_WITH_EXPOSITIONS.to_string());
        }
        if !opts.show_disk {
            let option = match (opts.svg_top, &opts.svg_sort) {
                (Some(_), _) => "--svg-top",
                (None, Some(_)) => "--svg-sort",
                (None, None) => return None,
            };
            return Some(format!(
                "{option} chooses the devices the charts draw, and the CPU report (-c) \
                 charts none"
            ));
        }
        return super::render_svg::check_sort(opts).err();
    }
    let option = if opts.svg_top.is_some() {
        "--svg-top"
    } else if opts.svg_sort.is_some() {
        "--svg-sort"
    } else {
        return None;
    };
    Some(format!(
        "{option} needs --svg FILE: it chooses the devices the charts draw"
    ))
}

/// A usage error met after `-f DIR` or `-j TYPE` as sysstat reports it: it
/// checks their directories where it meets them, so the first missing one
/// is the error.
#[inline(never)]
fn named_dirs_first(err: IostatError) -> IostatError {
    match err {
        IostatError::UsageAfterNamedDirs { dirs, sysroot } => {
            named_dirs::first_missing(&dirs, named_dirs::is_dir_under(sysroot.as_deref()))
                .unwrap_or(IostatError::Usage)
        }
        e => e,
    }
}

/// Prints `err` as sysstat would and returns the exit status.
#[inline(never)]
fn report(progname: &str, err: IostatError) -> i32 {
    match &err {
        IostatError::Usage | IostatError::UsageAfterNamedDirs { .. } => {
            stderr::print(format_args!("{}", usage_text(progname)))
        }
        IostatError::CountNotWhole(_) => stderr::print(format_args!(
            "{TOOL}: {}\n{}",
            escape::text(&err.to_string()),
            usage_text(progname)
        )),
        IostatError::Output(e) => return output_error_status(TOOL, e),
        // Escaped as every message quoting a name is (a device, a file).
        e if e.is_sysstat_message() => {
            stderr::print(format_args!("{}\n", escape::text(&e.to_string())))
        }
        e => stderr::print(format_args!("{TOOL}: {}\n", escape::text(&e.to_string()))),
    }
    err.exit_status()
}

/// `--help`: the long help, from the command-line definition.
#[inline(never)]
fn print_help() -> i32 {
    let help = command().render_long_help().to_string();
    match io::stdout().write_all(help.as_bytes()) {
        Ok(()) => 0,
        Err(e) => output_error_status(TOOL, &e),
    }
}

/// `-V`: the environment variables iostat reads, then the version. The
/// version line names iostat-rs, not sysstat.
#[inline(never)]
fn print_version(env: &Env) -> i32 {
    let mut text = String::new();
    for (name, value) in [
        ("POSIXLY_CORRECT", &env.posixly_correct),
        ("S_COLORS", &env.s_colors),
        ("S_COLORS_SGR", &env.s_colors_sgr),
        ("S_TIME_FORMAT", &env.s_time_format),
    ] {
        // Escaped as names are (sysstat prints them raw): a value holding
        // an escape sequence would act on the terminal.
        if let Some(v) = value {
            text.push_str(&format!("{name}={}\n", crate::common::escape::text(v)));
        }
    }
    text.push_str(&format!(
        "{TOOL} version {}\n(sysstat-compatible iostat in Rust; not sysstat)\n",
        env!("CARGO_PKG_VERSION")
    ));
    match io::stdout().write_all(text.as_bytes()) {
        Ok(()) => 0,
        Err(e) => output_error_status(TOOL, &e),
    }
}

/// sysstat's CPU count: `cpuN` entries of `/sys/devices/system/cpu` (online
/// and offline), else the highest `cpuN` of `/proc/stat` plus one.
fn cpu_count(src: &dyn Source) -> u32 {
    let listed = src
        .list_dir("/sys/devices/system/cpu")
        .map(|names| {
            names
                .iter()
                .filter(|n| {
                    n.strip_prefix("cpu")
                        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                })
                .count() as u32
        })
        .unwrap_or(0);
    if listed > 0 {
        return listed;
    }
    src.read("/proc/stat")
        .map(|t| proc_stat_cpu_count(&t))
        .unwrap_or(0)
}

/// Whether the output takes [`Sample::cpu_shares`]: the machine formats
/// and `--svg` (sysstat's text and JSON take [`Sample::cpu`]).
fn takes_cpu_shares(opts: &Options) -> bool {
    matches!(opts.format, OutputFormat::Csv | OutputFormat::Ndjson) || opts.svg.is_some()
}

fn renderer_for(opts: &Options) -> Box<dyn Renderer> {
    match opts.format {
        OutputFormat::Text => Box::new(TextRenderer::new(opts, io::stdout().is_terminal())),
        OutputFormat::SysstatJson => Box::new(JsonRenderer::new(opts)),
        f => Box::new(MachineRenderer::new(f, opts)),
    }
}

/// `-f DIR` and `-j TYPE`: the directories they name must exist (sysstat's
/// usage error, and its message for a type without `/dev/disk/by-TYPE`),
/// checked in command-line order as sysstat checks them.
// Out of line and cold: the main job names neither (build.rs, "Hot code
// first").
#[cold]
#[inline(never)]
fn check_named_dirs(opts: &Options, src: &dyn Source) -> Result<(), IostatError> {
    match named_dirs::first_missing(&opts.named_dirs, |path| src.is_dir(path)) {
        Some(e) => {
            answered(src)?;
            Err(e)
        }
        None => Ok(()),
    }
}

/// Fails when a replay was asked for what its recording does not hold
/// ([`Source::check_answered`]).
#[inline]
fn answered(src: &dyn Source) -> Result<(), IostatError> {
    src.check_answered().map_err(unanswered)
}

/// The error of [`answered`], out of the way of the code every run executes.
#[cold]
#[inline(never)]
fn unanswered(e: std::io::Error) -> IostatError {
    IostatError::Source(e.to_string())
}

/// The state carried from one sample to the next.
struct Carry {
    uptime: [u64; 2],
    /// The monotonic clock at each sample, when reports are timed by it
    /// ([`timed_by_clock`]).
    clock: [Option<Duration>; 2],
    cpu: [CpuTicks; 2],
    /// The `cpuN` lines, for the formats that take [`Sample::cpu_shares`].
    cpu_lines: Option<CpuLines>,
    curr: usize,
    buf: Vec<u8>,
    /// `--latency`: the samples the kernel lost in the last interval, the
    /// first report's included ([`Sample::lost_before`]).
    lost_before: u64,
}

fn run(opts: &Options, src: &mut dyn Source, latency: Option<Latency>) -> Result<(), IostatError> {
    if !opts.named_dirs.is_empty() {
        check_named_dirs(opts, src)?;
    }
    for hot in ["/proc/uptime", "/proc/stat", "/proc/diskstats"] {
        src.keep_open(hot);
    }
    let uname = src.uname().map_err(|err| IostatError::Read {
        path: "uname".into(),
        err,
    })?;
    // The clock is read once per sample; the banner's reading is sample 0's,
    // so a replay sees exactly the times the live run used.
    let start_time = src.now();
    let banner = Banner {
        uname,
        date: banner_date(opts, start_time),
        cpus: cpu_count(src),
    };
    let mut charts = SvgCharts::new(opts, &banner, src.is_live()).map_err(IostatError::Chart)?;
    let mut notes = latency.as_ref().map(|_| Notes::default());
    let mut devices = DeviceList::new(opts, src);
    answered(src)?;
    let mut renderer = renderer_for(opts);
    let stop = StopSignal::install()?;
    src.set_stop(&stop);
    let mut out = BufWriter::new(StoppableStdout::new(&stop));
    let schedule = Schedule {
        interval: opts.interval,
        count: opts.count.map(|c| c + u64::from(opts.skip_first)),
        first_starts_only: opts.skip_first,
    };
    // Written with the first sample, once its inputs are read (below).
    let mut begun = false;
    let by_clock = timed_by_clock(opts, src);
    let mut carry = Carry {
        uptime: [0; 2],
        clock: [None; 2],
        cpu: [CpuTicks::default(); 2],
        cpu_lines: takes_cpu_shares(opts).then(CpuLines::default),
        curr: 0,
        buf: Vec::with_capacity(4096),
        lost_before: 0,
    };
    let result = run_samples(&schedule, src, &stop, None, |src, index| {
        let curr = carry.curr;
        let taken = (|| {
            // Zero in a replay of a recording without it: timed by uptime.
            carry.clock[curr] = by_clock.then(|| src.elapsed()).filter(|t| !t.is_zero());
            carry.uptime[curr] = read_uptime(src, &mut carry.buf)?;
            carry.cpu[curr] = read_cpu(src, &mut carry.buf)?;
            let cpu = cpu_percent(&carry.cpu[curr ^ 1], &carry.cpu[curr]);
            let cpu_shares = match &mut carry.cpu_lines {
                Some(lines) => lines.shares(&carry.buf, cpu),
                None => cpu,
            };
            // The CPU report alone (`-c`) reads no device. sysstat reads
            // them all the same, for nothing it shows (on a machine of
            // 10,000 devices, their lines or `stat` files at every
            // interval), and a replay of a recording of any other view can
            // then serve it.
            if opts.show_disk {
                if let Some(l) = &latency {
                    l.counters_read_next();
                }
                devices.read_sample(src, curr);
                devices.compute_groups(curr);
            }
            let interval = match &latency {
                Some(l) => Some(l.sample(src).map_err(IostatError::Latency)?),
                None => None,
            };
            Ok::<_, IostatError>((cpu, cpu_shares, interval))
        })();
        let checked = match taken {
            Ok(taken) => answered(src).map(|()| taken).map_err(|e| (e, true)),
            // Also when it failed for an input its recording lacks
            // (--latency's histograms, refused before `answered`).
            Err(e) => Err((e, src.check_answered().is_err())),
        };
        // The banner (JSON: the document's head) goes with the first
        // sample, once its inputs are read: a replay whose recording lacks
        // one of them (or a run out of file descriptors) fails with
        // nothing written, where a file it went to kept a banner and,
        // in JSON, a document without a report. A run that cannot read
        // its kernel files writes it first, as sysstat does.
        if !begun && !matches!(checked, Err((_, true))) {
            begun = true;
            renderer.begin(&mut out, &banner)?;
        }
        let (cpu, cpu_shares, measured) = checked.map_err(|(e, _)| e)?;
        // The first report's rates cover the time since boot, which no
        // histogram does: the ones drained for it hold only the moments
        // since the start, and are not shown; the samples the kernel lost
        // in them still withhold the next report's depths.
        let lost = measured.as_ref().map_or(0, |l| l.lost);
        let interval = measured.filter(|_| index > 0);
        let time = if index == 0 { start_time } else { src.now() };
        let sample = Sample {
            time,
            index,
            // The first report's, since boot, is uptime's.
            itv: clock_interval_cs(carry.clock[curr ^ 1], carry.clock[curr])
                .filter(|_| index > 0)
                .unwrap_or_else(|| interval_cs(carry.uptime[curr ^ 1], carry.uptime[curr])),
            cpu,
            cpu_shares,
            devices: &devices,
            curr,
            latency: interval.as_ref(),
            lost_before: std::mem::replace(&mut carry.lost_before, lost),
        };
        if let Some(notes) = &mut notes {
            notes.interval(&sample);
        }
        let skipped = index == 0 && opts.skip_first;
        renderer.sample(&mut out, &sample, skipped)?;
        if let Some(charts) = &mut charts {
            // The report reaches the reader before the slower chart does.
            out.flush()?;
            charts
                .sample(&sample, skipped)
                .map_err(IostatError::Chart)?;
        }
        carry.curr ^= 1;
        Ok::<(), IostatError>(())
    });
    // Close the document on every end, errors included, unless output broke
    // or nothing was begun.
    let closed = match &result {
        Err(IostatError::Output(e)) if is_output_failure(e) => Ok(()),
        _ if !begun => Ok(()),
        _ => renderer.end(&mut out),
    };
    // The charts end with every run, an error's included (a replay writes
    // them only here); when the reader went away, the run is otherwise
    // done, and what they could not do is what there is to say.
    let charted = match &charts {
        Some(charts) => charts.finish().map_err(IostatError::Chart),
        None => Ok(()),
    };
    if matches!(&result, Err(IostatError::Output(e)) if is_reader_gone(e)) {
        return charted.and(result.map(drop));
    }
    result?;
    closed?;
    // What is left of the output, which dropping `out` would write and
    // forget the failure of (a stop while the reader takes nothing).
    out.flush()?;
    charted
}

/// `--listen`: the address, checked, and what it cannot be used with.
fn listen_address(opts: &Options) -> Result<Option<std::net::SocketAddr>, String> {
    match &opts.listen {
        None => Ok(None),
        Some(text) => checked_listen_address(text, opts).map(Some),
    }
}

/// The address `--listen` names, unless it is malformed or conflicts with
/// another option. Out of line, as serving is a mode of its own.
#[cold]
#[inline(never)]
fn checked_listen_address(text: &str, opts: &Options) -> Result<std::net::SocketAddr, String> {
    let addr = crate::common::cli::parse_listen_address(text)
        .map_err(|why| format!("--listen {text}: {why}"))?;
    let expo = crate::common::cli::ExpoArgs {
        listen: Some(addr),
        ..opts.expo.clone()
    };
    match expo.listen_conflict(
        &opts.source,
        opts.interval.is_some(),
        opts.svg.is_some(),
        report_output(opts.format),
    ) {
        Some(conflict) => Err(conflict),
        None => Ok(addr),
    }
}

/// `--listen`: serves the exposition on `listener`, bound to `addr`, read
/// at each scrape, until stopped.
#[inline(never)]
fn serve_metrics(
    opts: &Options,
    addr: std::net::SocketAddr,
    listener: std::net::TcpListener,
    src: &mut dyn Source,
    latency: Option<Latency>,
) -> Result<(), IostatError> {
    let stop = StopSignal::install()?;
    let mut exporter = exporter(opts, latency).with_uname();
    // Opened once, read again at each scrape (as the interval loop does).
    for hot in ["/proc/stat", "/proc/diskstats"] {
        src.keep_open(hot);
    }
    let src: &dyn Source = src;
    serve::serve(listener, TOOL, &["read"], &stop, &mut |e| {
        exporter.collect(src, e).map_err(|err| ScrapeError {
            cause: "read",
            message: err.to_string(),
        })
    })
    .map_err(|e| IostatError::Source(format!("--listen {addr}: {e}")))
}

/// `-o prometheus` and `--textfile`: one exposition of the cumulative
/// counters per interval (one in all without an interval).
#[inline(never)]
fn expositions(
    opts: &Options,
    src: &mut dyn Source,
    latency: Option<Latency>,
) -> Result<(), IostatError> {
    let mut exporter = exporter(opts, latency);
    let target = match &opts.expo.textfile {
        Some(path) => Target::Textfile(path.clone()),
        None => {
            exporter = exporter.with_uname();
            Target::Stdout
        }
    };
    let stop = StopSignal::install()?;
    src.set_stop(&stop);
    // -y: as for the text, the count is of reports after the first sample.
    let schedule = Schedule {
        interval: opts.interval,
        count: opts.count.map(|c| c + u64::from(opts.skip_first)),
        first_starts_only: opts.skip_first,
    };
    let mut out = BufWriter::new(StoppableStdout::new(&stop));
    run_expositions(TOOL, &schedule, src, &stop, &target, &mut out, |src, e| {
        // A replay without what the exposition reads fails as a report's does.
        exporter
            .collect(src, e)
            .map_err(|err| src.check_answered().map_or_else(unanswered, |()| err))
    })?;
    Ok(())
}

/// Whether reports are timed by the monotonic clock rather than by
/// `/proc/uptime`: when the interval is not a whole number of seconds.
/// sysstat takes none such, and `/proc/uptime` counts hundredths, too
/// coarse for them (a 13 ms interval reads as 10 or 20 ms: rates a third
/// off, `%util` over 100). Whole seconds keep uptime, as sysstat, for
/// its output to the byte. Live, only on the running kernel: a
/// `--sysroot` tree's `/proc/uptime` is the clock of its counters, unless
/// it is procfs (`--sysroot /host`, the host's `/proc` mounted in a
/// container). A replay takes the clock readings its recording holds (a
/// live run records each one it takes), else uptime.
fn timed_by_clock(opts: &Options, src: &dyn Source) -> bool {
    let fractional = opts.interval.is_some_and(|i| i.subsec_nanos() != 0);
    fractional && (!src.is_live() || opts.source.sysroot.as_deref().is_none_or(runs_procfs))
}

/// Whether the tree at `root` has the running kernel's `/proc`.
#[cold]
#[inline(never)]
fn runs_procfs(root: &std::path::Path) -> bool {
    crate::common::root::Root::new(root).is_procfs("/proc/uptime")
}

fn read_uptime(src: &dyn Source, buf: &mut Vec<u8>) -> Result<u64, IostatError> {
    src.read_into("/proc/uptime", buf)
        .ok()
        .and_then(|()| parse_uptime(buf))
        .ok_or(IostatError::CannotReadUptime)
}

fn read_cpu(src: &dyn Source, buf: &mut Vec<u8>) -> Result<CpuTicks, IostatError> {
    src.read_into("/proc/stat", buf)
        .map_err(|e| IostatError::CannotOpenStat(strerror(&e)))?;
    Ok(parse_proc_stat_cpu(buf).unwrap_or_default())
}
