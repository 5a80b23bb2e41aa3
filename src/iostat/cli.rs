//! The command line: sysstat's order-dependent, left-to-right grammar,
//! scanned into a typed [`Options`], plus a clap [`command`] describing the
//! same options for `--help`, man pages and shell completions.

use std::ops::ControlFlow;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::time::Duration;

use crate::common::chart::SVG_HELP;
use crate::common::cli::{
    ExpoArgs, LISTEN_HELP, RECORD_HELP, RECORD_LONG_HELP, REPLAY_HELP, REPLAY_LONG_HELP,
    SYSROOT_HELP, SourceArgs, TEXTFILE_HELP, path_arg,
};
use crate::common::interval::{looks_like_interval, parse_interval};
use crate::common::locale::Locale;
use crate::common::osname;
use crate::common::output::Format;

use super::error::IostatError;
use super::named_dirs::NamedDir;

/// sysstat's `MAX_NAME_LEN`: names are cut to this length minus one. 256
/// since sysstat 12.7.9 (commit e50bfeec, "Set MAX_NAME_LEN constant to
/// 256 instead of 128"); 12.6.1 cut at 127 bytes.
pub const MAX_NAME_LEN: usize = 256;

/// What the run does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Take samples and report.
    Run,
    /// Print the environment and version (`-V`, or `--version`: an extension).
    Version,
    /// Print the long help (`--help`, an extension).
    Help,
}

/// Unit of sizes and byte rates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// 512-byte sectors (`POSIXLY_CORRECT` without -k/-m/-G).
    Sectors,
    /// Kilobytes (default, `-k`).
    Kilobytes,
    /// Megabytes (`-m`).
    Megabytes,
    /// Gigabytes (`-G`).
    Gigabytes,
}

impl Unit {
    /// sysstat's `fctr`: sectors per unit.
    pub fn sectors_per_unit(self) -> u64 {
        match self {
            Unit::Sectors => 1,
            Unit::Kilobytes => 2,
            Unit::Megabytes => 2048,
            Unit::Gigabytes => 2 * 1024 * 1024,
        }
    }

    /// The unit's name in headers (`kB`, `MB`, `GB`, `sec`/`Blk`).
    pub fn label(self, basic: bool) -> &'static str {
        match self {
            Unit::Sectors if basic => "Blk",
            Unit::Sectors => "sec",
            Unit::Kilobytes => "kB",
            Unit::Megabytes => "MB",
            Unit::Gigabytes => "GB",
        }
    }
}

/// The `-t`/`-U` timestamp line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timestamp {
    /// No timestamp.
    None,
    /// Local time (`%x %X`, or ISO 8601 with `S_TIME_FORMAT=ISO`).
    Local,
    /// Seconds since the epoch (`-U`).
    Epoch,
}

/// The output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// sysstat's text layout.
    Text,
    /// sysstat's JSON document (`-o JSON`).
    SysstatJson,
    /// CSV (`-o csv`, extension).
    Csv,
    /// One JSON object per sample (`-o ndjson`, extension).
    Ndjson,
    /// Prometheus text exposition (`-o prometheus`, extension).
    Prometheus,
}

/// How `-f`/`+f` use the alternate directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AltMode {
    /// `-f DIR`: only DIR.
    Only,
    /// `+f DIR`: the system's files, then DIR.
    Also,
}

/// An alternate statistics directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AltDir {
    /// The directory (a kernel path: inside `--sysroot` if given).
    pub path: String,
    /// Only or also.
    pub mode: AltMode,
}

/// When colours are used (`S_COLORS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorMode {
    /// `never`
    Never,
    /// `always`
    Always,
    /// unset or `auto`: only on a terminal.
    Auto,
}

/// How a device named on the command line is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceKind {
    /// A device or partition.
    Single,
    /// A device and all its partitions (`-p dev`).
    WithPartitions,
}

/// One device-list argument, in command-line order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListArg {
    /// A device as typed, with the name translations active where it appeared.
    Device {
        /// The name as typed.
        name: String,
        /// Single device or device with partitions.
        kind: DeviceKind,
        /// `-j TYPE` given before it: the name is a persistent name.
        persistent: Option<String>,
        /// `-N` given before it: the name may be a device-mapper name.
        mapper: bool,
    },
    /// `-g NAME`: the devices after it (until the next `-g`) form a group.
    Group(String),
    /// `-p ALL` (or `-p` alone) was given here: sysstat sorts the devices
    /// named before it, and appends those that come after.
    Everything,
}

/// The environment variables iostat reads.
#[derive(Debug, Clone, Default)]
pub struct Env {
    /// `POSIXLY_CORRECT` (its presence counts).
    pub posixly_correct: Option<String>,
    /// `S_COLORS`
    pub s_colors: Option<String>,
    /// `S_COLORS_SGR`
    pub s_colors_sgr: Option<String>,
    /// `S_TIME_FORMAT`
    pub s_time_format: Option<String>,
    /// `LC_ALL`, `LC_TIME`, `LC_NUMERIC`, `LANG`: the dates of `%x` and
    /// `%X` and the decimal point of the text report, as sysstat takes
    /// them (`-o JSON` keeps a `.`, as sysstat does).
    pub locale: Locale,
}

impl Env {
    /// Reads the variables from the process environment.
    pub fn from_process() -> Env {
        let get = |k: &str| std::env::var_os(k).map(|v| v.to_string_lossy().into_owned());
        Env {
            posixly_correct: get("POSIXLY_CORRECT"),
            s_colors: get("S_COLORS"),
            s_colors_sgr: get("S_COLORS_SGR"),
            s_time_format: get("S_TIME_FORMAT"),
            locale: Locale::from_environment(),
        }
    }
}

/// Every option of a run, typed, built before any sampling.
#[derive(Debug, Clone)]
pub struct Options {
    /// Run, version or help.
    pub action: Action,
    /// Show the CPU report.
    pub show_cpu: bool,
    /// Show the device report.
    pub show_disk: bool,
    /// `-x`
    pub extended: bool,
    /// `-s`
    pub short: bool,
    /// Size unit.
    pub unit: Unit,
    /// `--pretty` (also set by `-h` and `-j`).
    pub pretty: bool,
    /// `--compact`
    pub compact: bool,
    /// `--latency` (an extension): latency percentiles and queue depth
    /// from the block tracepoints, with `-x`.
    pub latency: bool,
    /// `--human` (also set by `-h`).
    pub human: bool,
    /// The size option given (`-k`, `-m`, `-G`), if any.
    pub unit_option: Option<char>,
    /// `--dec=N`
    pub decimals: Option<usize>,
    /// `-t` / `-U`
    pub timestamp: Timestamp,
    /// `S_TIME_FORMAT=ISO`
    pub iso_time: bool,
    /// `-y` (only with an interval)
    pub skip_first: bool,
    /// `-z`
    pub omit_inactive: bool,
    /// `-H`
    pub groups_only: bool,
    /// `-N`
    pub mapper_names: bool,
    /// `-j TYPE` (lower-cased)
    pub persistent: Option<String>,
    /// `-f`/`+f`
    pub alt_dir: Option<AltDir>,
    /// The directories `-f` and each `-j` need, in command-line order (up
    /// to a `-V`, where sysstat's scan ends).
    pub named_dirs: Vec<NamedDir>,
    /// `-p` or `-p ALL`: every line of diskstats, partitions included.
    pub everything: bool,
    /// All whole devices of /sys/block (no list, or `ALL`).
    pub all_devices: bool,
    /// Show devices that never did I/O (a list or `ALL` was given).
    pub unfiltered: bool,
    /// `-g` was used.
    pub groups_defined: bool,
    /// Devices and groups, in command-line order.
    pub list: Vec<ListArg>,
    /// Interval; `None` for a single report since boot.
    pub interval: Option<Duration>,
    /// Number of reports; `None` runs until stopped.
    pub count: Option<u64>,
    /// Output format.
    pub format: OutputFormat,
    /// Colours.
    pub colors: ColorMode,
    /// Where samples come from.
    pub source: SourceArgs,
    /// `--svg FILE`: charts of the run, rewritten after each report.
    pub svg: Option<PathBuf>,
    /// `--svg-top N`: devices drawn alone in the charts.
    pub svg_top: Option<usize>,
    /// `--svg-sort COLUMN`: the column that ranks devices for `--svg-top`.
    pub svg_sort: Option<String>,
    /// Where Prometheus expositions go besides standard output.
    pub expo: ExpoArgs,
    /// `--listen ADDR:PORT` as typed (checked when the run starts).
    pub listen: Option<String>,
    /// The environment.
    pub env: Env,
}

/// sysstat's test for a number (`strspn(arg, DIGITS) == strlen(arg)`): only
/// digits, so the empty word is a number too.
fn all_digits(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_digit())
}

/// The value `atol(3)` gives a word of digits: 0 for the empty word, and
/// `LONG_MAX` for one past it, as glibc saturates.
fn atol(digits: &str) -> u64 {
    if digits.is_empty() {
        return 0;
    }
    digits
        .parse::<u64>()
        .map_or(i64::MAX as u64, |n| n.min(i64::MAX as u64))
}

/// Scans the arguments (without the program name) left to right, as sysstat
/// does. Errors are usage errors, except where noted; one met after `-f DIR`
/// or `-j TYPE` is [`IostatError::UsageAfterNamedDirs`], as sysstat checks
/// those directories where it meets them.
pub fn parse_args(args: &[String], env: Env) -> Result<Options, IostatError> {
    let mut o = Options {
        action: Action::Run,
        show_cpu: false,
        show_disk: false,
        extended: false,
        short: false,
        unit: Unit::Kilobytes,
        pretty: false,
        compact: false,
        latency: false,
        human: false,
        unit_option: None,
        decimals: None,
        timestamp: Timestamp::None,
        iso_time: env.s_time_format.as_deref() == Some("ISO"),
        skip_first: false,
        omit_inactive: false,
        groups_only: false,
        mapper_names: false,
        persistent: None,
        alt_dir: None,
        named_dirs: Vec::new(),
        everything: false,
        all_devices: false,
        unfiltered: false,
        groups_defined: false,
        list: Vec::new(),
        interval: None,
        count: None,
        format: OutputFormat::Text,
        colors: match env.s_colors.as_deref() {
            Some("never") => ColorMode::Never,
            Some("always") => ColorMode::Always,
            _ => ColorMode::Auto,
        },
        source: SourceArgs::default(),
        svg: None,
        svg_top: None,
        svg_sort: None,
        expo: ExpoArgs::default(),
        listen: None,
        env,
    };
    match scan(&mut o, args) {
        Ok(()) => Ok(o),
        // sysstat checks `-f DIR` and `-j TYPE` where it meets them, so
        // their checks come before a later usage error; the caller makes them.
        Err(IostatError::Usage) if !o.named_dirs.is_empty() => {
            Err(IostatError::UsageAfterNamedDirs {
                dirs: std::mem::take(&mut o.named_dirs),
                sysroot: o.source.sysroot.take(),
            })
        }
        Err(e) => Err(e),
    }
}

/// The scan of [`parse_args`], into `o` (the defaults and the environment).
fn scan(o: &mut Options, args: &[String]) -> Result<(), IostatError> {
    let usage = || IostatError::Usage;
    let mut unit: Option<Unit> = None;
    let mut numbers = 0;
    let mut i = 0;
    let add_device = |o: &mut Options, name: &str, kind: DeviceKind| {
        o.list.push(ListArg::Device {
            name: name.to_string(),
            kind,
            persistent: o.persistent.clone(),
            mapper: o.mapper_names,
        });
    };
    while i < args.len() {
        let arg = args[i].as_str();
        let next = args.get(i + 1).map(String::as_str);
        // Long options may carry their value after '='.
        let (key, inline) = match arg.split_once('=') {
            Some((k, v)) if k.starts_with("--") => (k, Some(v)),
            _ => (arg, None),
        };
        let take_value = |i: &mut usize| -> Result<String, IostatError> {
            if let Some(v) = inline {
                *i += 1;
                return Ok(v.to_string());
            }
            let v = next.ok_or(IostatError::Usage)?;
            *i += 2;
            Ok(v.to_string())
        };
        // The value of an option iostat-rs adds, which names `what`: not
        // missing, and not the next option (`--record -d 1` would record to
        // `./-d` and lose `-d`); `-` alone is standard input or output.
        let take_own_value = |i: &mut usize, what: &str| -> Result<String, IostatError> {
            let value = match inline {
                Some(v) => Some(v),
                None => next,
            };
            match value {
                None => Err(IostatError::OptionValue(format!(
                    "{key} needs a value: {what}"
                ))),
                Some(v) if inline.is_none() && v.starts_with('-') && v != "-" => {
                    let names_a_file = ["a FILE", "a DIR", "a PATH"].contains(&what);
                    Err(IostatError::OptionValue(
                        crate::common::cli::option_for_a_value(key, v, key, what, names_a_file),
                    ))
                }
                Some(v) => {
                    *i += if inline.is_some() { 1 } else { 2 };
                    Ok(v.to_string())
                }
            }
        };
        match key {
            "-p" => {
                match next {
                    Some(list)
                        if !all_digits(list)
                            && !list.starts_with('-')
                            && !looks_like_interval(list) =>
                    {
                        for dev in list.split(',').filter(|d| !d.is_empty()) {
                            if dev == "ALL" {
                                everything(o);
                            } else {
                                add_device(o, dev, DeviceKind::WithPartitions);
                            }
                        }
                        o.unfiltered = true;
                        i += 2;
                    }
                    _ => {
                        everything(o);
                        i += 1;
                    }
                }
                continue;
            }
            "-g" => {
                let name = take_value(&mut i)?;
                // sysstat's `" %-.*s"` with MAX_NAME_LEN - 2: bytes, not characters.
                let cut = osname::truncate_bytes(&name, MAX_NAME_LEN - 2);
                o.list.push(ListArg::Group(format!(" {cut}")));
                o.groups_defined = true;
                continue;
            }
            "--human" if inline.is_none() => o.human = true,
            "--pretty" if inline.is_none() => o.pretty = true,
            "--compact" if inline.is_none() => o.compact = true,
            "--latency" if inline.is_none() => o.latency = true,
            "--help" if inline.is_none() => {
                o.action = Action::Help;
                return Ok(());
            }
            // An extension, as `-V` (sysstat's iostat prints its usage).
            "--version" if inline.is_none() => {
                o.action = Action::Version;
                return Ok(());
            }
            "--dec" => {
                let v = inline.ok_or_else(usage)?;
                if v.len() != 1 || !all_digits(v) || v > "2" {
                    return Err(usage());
                }
                o.decimals = Some(usize::from(v.as_bytes()[0] - b'0'));
            }
            "-f" | "+f" => {
                if o.alt_dir.is_some() {
                    return Err(usage());
                }
                let dir = absolute(&take_value(&mut i)?);
                o.named_dirs.push(NamedDir::Alt(dir.clone()));
                o.alt_dir = Some(AltDir {
                    path: dir,
                    mode: if key == "-f" {
                        AltMode::Only
                    } else {
                        AltMode::Also
                    },
                });
                continue;
            }
            "-j" => {
                let t = take_value(&mut i)?;
                // sysstat's buffer for TYPE: MAX_FILE_LEN (512) bytes.
                if t.len() >= 511 {
                    return Err(usage());
                }
                let kind = t.to_ascii_lowercase();
                o.named_dirs.push(NamedDir::Persistent(kind.clone()));
                o.persistent = Some(kind);
                o.pretty = true;
                continue;
            }
            // `--output`, its long name in vcpustat and cxlstat, is an
            // extension, as `--version` is.
            "-o" | "--output" => {
                let f = take_value(&mut i)?;
                // sysstat spells it JSON; every tool here takes any case,
                // and text, the default, by name as vcpustat and cxlstat do.
                o.format = match f.to_ascii_lowercase().as_str() {
                    "text" => OutputFormat::Text,
                    "json" => OutputFormat::SysstatJson,
                    "csv" => OutputFormat::Csv,
                    "ndjson" => OutputFormat::Ndjson,
                    "prometheus" => OutputFormat::Prometheus,
                    _ => return Err(usage()),
                };
                continue;
            }
            "--sysroot" => {
                o.source.sysroot = Some(os_path(&take_own_value(&mut i, "a DIR")?));
                continue;
            }
            "--record" => {
                o.source.record = Some(os_path(&take_own_value(&mut i, "a FILE")?));
                continue;
            }
            "--replay" => {
                o.source.replay = Some(os_path(&take_own_value(&mut i, "a FILE")?));
                continue;
            }
            "--svg" => {
                o.svg = Some(os_path(&take_own_value(&mut i, "a FILE")?));
                continue;
            }
            "--svg-top" => {
                let what = "a number of devices, 1 or more";
                let n = take_own_value(&mut i, what)?;
                let top = n.parse().ok().filter(|&top: &usize| top > 0);
                o.svg_top = Some(top.ok_or_else(|| {
                    IostatError::OptionValue(format!("--svg-top {n}: expected {what}"))
                })?);
                continue;
            }
            "--svg-sort" => {
                o.svg_sort = Some(take_own_value(&mut i, "a COLUMN")?);
                continue;
            }
            "--textfile" => {
                o.expo.textfile = Some(os_path(&take_own_value(&mut i, "a PATH")?));
                continue;
            }
            "--listen" => {
                o.listen = Some(take_own_value(&mut i, "an ADDRESS:PORT")?);
                continue;
            }
            _ if arg.starts_with('-') => {
                if scan_letters(o, &arg[1..], &mut unit)?.is_break() {
                    return Ok(());
                }
            }
            _ if !all_digits(arg) && !looks_like_interval(arg) => {
                o.unfiltered = true;
                if arg == "ALL" {
                    o.all_devices = true;
                } else {
                    add_device(o, arg, DeviceKind::Single);
                }
            }
            _ => {
                numbers += 1;
                scan_number(o, arg, numbers)?;
            }
        }
        i += 1;
    }
    apply_defaults(o, unit)
}

/// A group of single-letter options (`-xk` gives `xk`), into `o`; a size
/// letter into `unit`. Breaks at `-V`, which ends the scan.
fn scan_letters(
    o: &mut Options,
    letters: &str,
    unit: &mut Option<Unit>,
) -> Result<ControlFlow<()>, IostatError> {
    for letter in letters.chars() {
        match letter {
            'c' => o.show_cpu = true,
            'd' => o.show_disk = true,
            'H' => o.groups_only = true,
            'h' => {
                o.pretty = true;
                o.human = true;
            }
            'k' | 'm' | 'G' => {
                // Only another size option conflicts: `-k -k` is fine.
                if o.unit_option.is_some_and(|given| given != letter) {
                    return Err(IostatError::Usage);
                }
                o.unit_option = Some(letter);
                *unit = Some(match letter {
                    'k' => Unit::Kilobytes,
                    'm' => Unit::Megabytes,
                    _ => Unit::Gigabytes,
                });
            }
            'N' => o.mapper_names = true,
            'p' => everything(o),
            's' => o.short = true,
            't' => {
                if o.timestamp == Timestamp::None {
                    o.timestamp = Timestamp::Local;
                }
            }
            'U' => o.timestamp = Timestamp::Epoch,
            'x' => o.extended = true,
            'y' => o.skip_first = true,
            'z' => o.omit_inactive = true,
            'V' => {
                o.action = Action::Version;
                return Ok(ControlFlow::Break(()));
            }
            _ => return Err(IostatError::Usage),
        }
    }
    Ok(ControlFlow::Continue(()))
}

/// The `nth` number of the command line (from 1), `arg`: the interval,
/// then the count.
fn scan_number(o: &mut Options, arg: &str, nth: u32) -> Result<(), IostatError> {
    match nth {
        1 => {
            // Whole seconds past what a Duration holds, and the empty
            // word, as atol(3) reads them.
            let d = match parse_interval(arg) {
                Ok(d) => d,
                Err(_) if all_digits(arg) => Duration::from_secs(atol(arg)),
                Err(_) => return Err(IostatError::Usage),
            };
            o.interval = Some(d);
            o.count = None;
        }
        2 => {
            if !all_digits(arg) {
                // Not a device name: the scan took it for an interval.
                return Err(IostatError::CountNotWhole(arg.to_string()));
            }
            let n = atol(arg);
            if n < 1 || o.interval.is_none_or(|d| d.is_zero()) {
                return Err(IostatError::Usage);
            }
            o.count = Some(n);
        }
        _ => return Err(IostatError::Usage),
    }
    Ok(())
}

/// What the options imply once all are read, as sysstat settles them
/// after its scan: an interval of 0 is none (one report), no `-c` or `-d`
/// is both, `-x`, `-p` and device names show the devices, and the unit
/// (`POSIXLY_CORRECT`: sectors) when no size option was given.
fn apply_defaults(o: &mut Options, unit: Option<Unit>) -> Result<(), IostatError> {
    if o.interval.is_some_and(|d| d.is_zero()) {
        o.interval = None;
    }
    if o.interval.is_none() {
        o.count = Some(1);
        o.skip_first = false;
    }
    if !o.show_cpu && !o.show_disk {
        o.show_cpu = true;
        o.show_disk = true;
    }
    if o.everything || o.extended || o.unfiltered {
        o.show_disk = true;
    }
    if !o.unfiltered {
        o.all_devices = true;
    }
    if o.groups_only && !o.groups_defined {
        return Err(IostatError::Usage);
    }
    o.unit = match unit {
        Some(u) => u,
        None if o.env.posixly_correct.is_some() => Unit::Sectors,
        None => Unit::Kilobytes,
    };
    Ok(())
}

/// `-p ALL`: every line of `/proc/diskstats`, from this point of the list on.
fn everything(o: &mut Options) {
    if !o.everything {
        o.everything = true;
        o.list.push(ListArg::Everything);
    }
}

/// An argument as the path it names ([`path_arg`]).
fn os_path(text: &str) -> PathBuf {
    let Ok(path) = path_arg(text);
    path
}

/// `dir` made absolute from the current directory; the empty word stays
/// empty (sysstat's `stat("")` fails: no directory).
fn absolute(dir: &str) -> String {
    if dir.is_empty() || dir.starts_with('/') {
        return dir.to_string();
    }
    match std::env::current_dir() {
        // Joined as the bytes given: `dir` carries those that are not UTF-8.
        Ok(cwd) => {
            let joined = cwd.join(osname::to_os_string(dir));
            osname::from_bytes(joined.as_os_str().as_bytes()).into_owned()
        }
        Err(_) => dir.to_string(),
    }
}

/// sysstat's usage text (plus one line for the extensions), for stderr.
pub fn usage_text(progname: &str) -> String {
    format!(
        "Usage: {progname} [ options ] [ <interval> [ <count> ] ]\n\
Options are:\n\
[ -c ] [ -d ] [ -h ] [ -k | -m | -G ] [ -N ] [ -s ] [ -t ] [ -U ] [ -V ] [ -x ] [ -y ] [ -z ]\n\
[ {{ -f | +f }} <directory> ] [ -j {{ ID | LABEL | PATH | UUID | ... }} ]\n\
[ --compact ] [ --dec={{ 0 | 1 | 2 }} ] [ --human ] [ --pretty ] [ -o JSON ]\n\
[ [ -H ] -g <group_name> ] [ -p [ <device> [,...] | ALL ] ]\n\
[ <device> [...] | ALL ]\n\
Extensions: [ -o {{ text | ndjson | csv | prometheus }} ] [ --sysroot <dir> | --replay <file> ] [ --record <file> ] [ --latency ]\n\
[ --svg <file> [ --svg-top <n> ] [ --svg-sort <column> ] ] [ --textfile <file> | --listen <addr:port> ] [ --help ] [ --version ]\n"
    )
}

/// The notes at the end of `--help`.
const AFTER_HELP: &str = "-N and -j apply to the device names that follow them, -f and +f to every \
                          device; -g NAME groups the devices that follow it.";

/// The block devices present now and `ALL`, for shell completion.
fn block_devices() -> Vec<clap_complete::CompletionCandidate> {
    let mut devices = crate::common::completion::directory_candidates("/sys/block", "");
    devices.push(clap_complete::CompletionCandidate::new("ALL"));
    devices
}

/// `--svg-sort`'s values: the charted columns of the reports.
fn svg_sort_columns() -> Vec<clap_complete::CompletionCandidate> {
    super::render_svg::sort_columns()
        .into_iter()
        .map(|(name, title)| clap_complete::CompletionCandidate::new(name).help(Some(title.into())))
        .collect()
}

/// `-o`'s values with the descriptions vcpustat and cxlstat give them (the
/// shared [`Format`]'s), `json` spelled `JSON` as sysstat spells it.
fn output_formats() -> Vec<clap::builder::PossibleValue> {
    use clap::ValueEnum;
    Format::value_variants()
        .iter()
        .filter_map(ValueEnum::to_possible_value)
        .map(|value| match value.get_name() {
            "json" => clap::builder::PossibleValue::new("JSON")
                .help(value.get_help().cloned().unwrap_or_default()),
            _ => value,
        })
        .collect()
}

/// The same options as a clap [`clap::Command`], for `--help`, man pages and
/// shell completions. The scanner above, not clap, parses the command line:
/// sysstat's grammar is order-dependent.
pub fn command() -> clap::Command {
    use clap::{Arg, ArgAction, Command};
    let flag = |id: &'static str, short: char, help: &'static str| {
        Arg::new(id)
            .short(short)
            .help(help)
            .action(ArgAction::SetTrue)
    };
    let long_flag = |id: &'static str, help: &'static str| {
        Arg::new(id).long(id).help(help).action(ArgAction::SetTrue)
    };
    Command::new("iostat-rs")
        .about("Report CPU and block device I/O statistics, as sysstat's iostat does")
        .long_about(
            "Report CPU and block device I/O statistics. Output is byte for byte the \
             output of sysstat's iostat (12.7/12.8); intervals may be fractional or \
             durations (0.5, 250ms); recordings can be written and replayed.",
        )
        .disable_help_flag(true)
        .disable_version_flag(true)
        .override_usage("iostat-rs [ options ] [ <device> [...] | ALL ] [ <interval> [ <count> ] ]")
        .after_help(AFTER_HELP)
        .after_long_help(crate::common::manual::long_help(
            AFTER_HELP,
            super::manual::SECTIONS,
        ))
        .arg(flag("cpu", 'c', "Display the CPU utilization report"))
        .arg(flag("device", 'd', "Display the device utilization report"))
        .arg(flag(
            "group-only",
            'H',
            "With -g, display each group's total instead of its devices",
        ))
        .arg(flag("human-pretty", 'h', "Same as --human --pretty"))
        .arg(flag("kilobytes", 'k', "Display statistics in kilobytes"))
        .arg(flag("megabytes", 'm', "Display statistics in megabytes"))
        .arg(flag("gigabytes", 'G', "Display statistics in gigabytes"))
        .arg(flag(
            "mapper",
            'N',
            "Display registered device-mapper names",
        ))
        .arg(
            Arg::new("partitions")
                .short('p')
                .value_name("DEVICE[,...]|ALL")
                .num_args(0..=1)
                .help("Display devices and their partitions: of every device with no argument, those never used too with ALL"),
        )
        .arg(flag("short", 's', "Display a short (narrower) report"))
        .arg(flag("time", 't', "Print the time of each report"))
        .arg(flag(
            "epoch",
            'U',
            "Print the time of each report in seconds since the epoch",
        ))
        .arg(
            flag(
                "version",
                'V',
                "Print the version and the environment, then exit",
            )
            .long("version"),
        )
        .arg(flag("extended", 'x', "Display extended statistics"))
        .arg(flag(
            "skip-first",
            'y',
            "Omit the first report (statistics since boot)",
        ))
        .arg(flag(
            "omit-idle",
            'z',
            "Omit devices with no activity during the interval",
        ))
        .arg(
            Arg::new("alt-dir")
                .short('f')
                .value_name("DIR")
                .value_hint(clap::ValueHint::DirPath)
                .help(
                    "Read the statistics of every device from DIR (DIR/diskstats, \
                     DIR/block/*/stat) instead of /proc and /sys; +f DIR reads both, \
                     DIR for the devices the system lacks",
                ),
        )
        .arg(
            Arg::new("persistent")
                .short('j')
                .value_name("TYPE")
                .value_parser(["ID", "LABEL", "PATH", "UUID", "PARTUUID"])
                .hide_possible_values(true)
                .ignore_case(true)
                .help(
                    "Display persistent device names of this type: ID, LABEL, PATH, UUID, \
                     PARTUUID or any other /dev/disk/by-<type> (implies --pretty)",
                ),
        )
        .arg(
            Arg::new("group")
                .short('g')
                .value_name("NAME")
                .action(ArgAction::Append)
                .help("Group the devices that follow and display their totals"),
        )
        .arg(
            Arg::new("output")
                .short('o')
                .long("output")
                .value_name("FORMAT")
                .value_parser(output_formats())
                .ignore_case(true)
                .help(
                    "Output format: sysstat's JSON, or (extensions) text, the default, ndjson, \
                     csv, prometheus",
                ),
        )
        .arg(long_flag(
            "human",
            "Print sizes with units (k, M, G) and percentages with %",
        ))
        .arg(long_flag(
            "pretty",
            "Put the device name at the end of the line",
        ))
        .arg(long_flag("compact", "Do not split the --pretty -x report"))
        .arg(long_flag(
            "latency",
            "With -x: latency p50/p99/max (ms) per operation and queue depth p50/max, \
             measured from the block tracepoints (root or CAP_PERFMON); with -o prometheus, \
             --textfile or --listen: the same as cumulative Prometheus histograms",
        ))
        .arg(
            Arg::new("dec")
                .long("dec")
                .value_name("0|1|2")
                .value_parser(["0", "1", "2"])
                .require_equals(true)
                .help("Number of decimal places"),
        )
        .arg(
            Arg::new("sysroot")
                .long("sysroot")
                .value_name("DIR")
                .value_hint(clap::ValueHint::DirPath)
                .help(SYSROOT_HELP),
        )
        .arg(
            Arg::new("record")
                .long("record")
                .value_name("FILE")
                .value_hint(clap::ValueHint::FilePath)
                .help(RECORD_HELP)
                .long_help(RECORD_LONG_HELP),
        )
        .arg(
            Arg::new("replay")
                .long("replay")
                .value_name("FILE")
                .value_hint(clap::ValueHint::FilePath)
                .help(REPLAY_HELP)
                .long_help(REPLAY_LONG_HELP),
        )
        .arg(
            Arg::new("svg")
                .long("svg")
                .value_name("FILE")
                .value_hint(clap::ValueHint::FilePath)
                .help(SVG_HELP),
        )
        .arg(
            Arg::new("svg-top")
                .long("svg-top")
                .value_name("N")
                .help("Devices drawn alone in the charts; the others as one envelope (default 10)"),
        )
        .arg(
            Arg::new("svg-sort")
                .long("svg-sort")
                .value_name("COLUMN")
                .add(clap_complete::ArgValueCandidates::new(svg_sort_columns))
                .help("Charted column whose peak ranks the devices for --svg-top (default %util, or tps without -x)"),
        )
        .arg(
            Arg::new("textfile")
                .long("textfile")
                .value_name("PATH")
                .value_hint(clap::ValueHint::FilePath)
                .help(TEXTFILE_HELP),
        )
        .arg(
            Arg::new("listen")
                .long("listen")
                .value_name("ADDR:PORT")
                .help(LISTEN_HELP),
        )
        .arg(long_flag("help", "Print this help"))
        .arg(
            Arg::new("args")
                .value_name("DEVICE|ALL|INTERVAL|COUNT")
                .num_args(0..)
                .add(clap_complete::ArgValueCandidates::new(block_devices))
                .help("Devices (or ALL), then the interval (2, 0.5, 250ms) and the count"),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The long options the scanner accepts, written out by hand: the test
    /// below checks them against the scanner and against clap's command.
    const LONG_OPTIONS: &[&str] = &[
        "--human",
        "--pretty",
        "--compact",
        "--latency",
        "--dec",
        "--output",
        "--sysroot",
        "--record",
        "--replay",
        "--svg",
        "--svg-top",
        "--svg-sort",
        "--textfile",
        "--listen",
        "--help",
        "--version",
    ];

    fn parse(args: &[&str]) -> Result<Options, IostatError> {
        let v: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        parse_args(&v, Env::default())
    }

    fn is_usage(r: Result<Options, IostatError>) -> bool {
        matches!(r, Err(IostatError::Usage))
    }

    #[test]
    fn usage_errors_as_in_the_c_tool() {
        assert!(is_usage(parse(&["2", "0"])));
        assert!(is_usage(parse(&["-2", "1"])));
        assert!(is_usage(parse(&["2", "-1"])));
        assert!(is_usage(parse(&["-H"])));
        assert!(is_usage(parse(&["--dec=A"])));
        assert!(is_usage(parse(&["--dec=3"])));
        assert!(is_usage(parse(&["-k", "-m"])));
        assert!(is_usage(parse(&["0", "3"])));
        assert!(is_usage(parse(&["1", "2", "3"])));
        assert!(is_usage(parse(&["-o", "XML"])));
        assert!(is_usage(parse(&["-g"])));
        // A usage error after -f DIR, once DIR is checked (sysstat checks it first).
        assert!(matches!(
            parse(&["-f", "/a", "+f", "/b"]),
            Err(IostatError::UsageAfterNamedDirs { dirs, .. }) if dirs == [NamedDir::Alt("/a".into())]
        ));
    }

    #[test]
    fn version_and_help_as_long_options() {
        assert_eq!(parse(&["--version"]).unwrap().action, Action::Version);
        assert_eq!(
            parse(&["-x", "--version", "1"]).unwrap().action,
            Action::Version
        );
        assert_eq!(parse(&["-V"]).unwrap().action, Action::Version);
        assert_eq!(parse(&["--help"]).unwrap().action, Action::Help);
        assert!(is_usage(parse(&["--version=1"])));
        assert!(is_usage(parse(&["--versio"])));
    }

    #[test]
    fn p_takes_the_next_word_only_when_it_is_a_list() {
        let o = parse(&["-p", "sda,sdb", "1"]).unwrap();
        assert!(!o.everything && o.unfiltered);
        assert_eq!(o.list.len(), 2);
        let o = parse(&["-p", "1", "2"]).unwrap();
        assert!(o.everything);
        assert_eq!(o.count, Some(2));
        let o = parse(&["-p", "-x"]).unwrap();
        assert!(o.everything && o.extended && o.all_devices);
        let o = parse(&["-p", "ALL"]).unwrap();
        assert!(o.everything && o.unfiltered);
    }

    #[test]
    fn defaults_and_forced_disk_report() {
        let o = parse(&[]).unwrap();
        assert!(o.show_cpu && o.show_disk && o.all_devices && !o.unfiltered);
        assert_eq!((o.interval, o.count), (None, Some(1)));
        let o = parse(&["-x", "-c"]).unwrap();
        assert!(o.show_cpu && o.show_disk);
        let o = parse(&["-c"]).unwrap();
        assert!(!o.show_disk);
        let o = parse_args(
            &["-d".to_string()],
            Env {
                posixly_correct: Some(String::new()),
                ..Env::default()
            },
        )
        .unwrap();
        assert_eq!(o.unit, Unit::Sectors);
    }

    #[test]
    fn intervals_may_be_fractional_and_count_must_be_whole() {
        let o = parse(&["-d", "0.5", "3"]).unwrap();
        assert_eq!(o.interval, Some(Duration::from_millis(500)));
        assert_eq!(o.count, Some(3));
        assert!(o.list.is_empty());
        let o = parse(&["250ms"]).unwrap();
        assert_eq!(o.interval, Some(Duration::from_millis(250)));
        assert_eq!(o.count, None);
        for count in ["2.5", "250ms"] {
            match parse(&["1", count]) {
                Err(IostatError::CountNotWhole(word)) => assert_eq!(word, count),
                other => panic!("{count}: {:?}", other.map(|o| o.count)),
            }
        }
        assert!(is_usage(parse(&["1", "2", "3"])));
        let o = parse(&["1", "99999999999999999999"]).unwrap();
        assert_eq!(o.count, Some(i64::MAX as u64));
        // atol(3) saturates an interval as well (sysstat 12.6.1 runs
        // `iostat -c 18446744073709551616 1`).
        let o = parse(&["99999999999999999999"]).unwrap();
        assert_eq!(o.interval, Some(Duration::from_secs(i64::MAX as u64)));
        let o = parse(&["-y", "0"]).unwrap();
        assert!(!o.skip_first);
    }

    #[test]
    fn an_empty_word_is_the_number_0_as_in_sysstat() {
        // strspn("", DIGITS) == strlen(""): a number, and atol("") is 0.
        let o = parse(&["-d", ""]).unwrap();
        assert_eq!((o.interval, o.count), (None, Some(1)));
        assert!(o.list.is_empty() && o.all_devices);
        assert!(is_usage(parse(&["-d", "5", ""])));
        assert!(is_usage(parse(&["-d", "", ""])));
        // Not a -p list either: the same as -p alone.
        let empty = parse(&["-p", "", "-d"]).unwrap();
        let alone = parse(&["-p", "-d"]).unwrap();
        assert_eq!(format!("{:?}", empty.list), format!("{:?}", alone.list));
    }

    /// The options iostat-rs adds never take the next option as their
    /// value, and say in one line what they expected.
    #[test]
    fn added_options_refuse_a_missing_or_optionlike_value_in_one_line() {
        let refused = |args: &[&str]| match parse(args) {
            Err(e @ IostatError::OptionValue(_)) => {
                assert_eq!(e.exit_status(), 2);
                e.to_string()
            }
            other => panic!("{args:?}: {:?}", other.map(|_| ())),
        };
        assert_eq!(
            refused(&["--record", "-d", "1", "1"]),
            "--record -d: expected a FILE, found an option (a name that starts with - is \
             written ./-d or --record=-d)"
        );
        assert_eq!(
            refused(&["-x", "--textfile"]),
            "--textfile needs a value: a PATH"
        );
        assert_eq!(
            refused(&["--svg-top", "x"]),
            "--svg-top x: expected a number of devices, 1 or more"
        );
        assert_eq!(
            refused(&["--svg-top=0"]),
            "--svg-top 0: expected a number of devices, 1 or more"
        );
        assert_eq!(
            refused(&["--listen", "-c"]),
            "--listen -c: expected an ADDRESS:PORT, found an option (a value that starts with - \
             is written --listen=-c)"
        );
        // `-` alone is standard output; `=` takes any name as it is.
        let o = parse(&["--record", "-", "-d"]).unwrap();
        assert_eq!(o.source.record.as_deref(), Some(std::path::Path::new("-")));
        assert!(o.show_disk);
        let o = parse(&["--svg=-x.svg", "-d"]).unwrap();
        assert_eq!(o.svg.as_deref(), Some(std::path::Path::new("-x.svg")));
        assert_eq!(parse(&["--svg-top", "3"]).unwrap().svg_top, Some(3));
    }

    #[test]
    fn a_size_option_conflicts_only_with_the_other_sizes() {
        assert_eq!(parse(&["-k", "-k"]).unwrap().unit, Unit::Kilobytes);
        assert_eq!(parse(&["-kk"]).unwrap().unit, Unit::Kilobytes);
        assert_eq!(parse(&["-m", "-m"]).unwrap().unit, Unit::Megabytes);
        assert!(is_usage(parse(&["-mG"])));
    }

    #[test]
    fn a_usage_error_after_f_or_j_leaves_their_directories_to_be_checked_first() {
        let after = |args: &[&str]| match parse(args) {
            Err(IostatError::UsageAfterNamedDirs { dirs, .. }) => Some(dirs),
            _ => None,
        };
        let kind = |k: &str| NamedDir::Persistent(k.into());
        assert_eq!(after(&["-m", "-j", "FOO", "-k"]), Some(vec![kind("foo")]));
        assert_eq!(after(&["-j", "id", "-H"]), Some(vec![kind("id")]));
        assert_eq!(
            after(&["-j", "x", "-f", "/d", "-j", "y", "-Q"]),
            Some(vec![kind("x"), NamedDir::Alt("/d".into()), kind("y")])
        );
        assert!(is_usage(parse(&["-m", "-k", "-j", "FOO"])));
    }

    #[test]
    fn the_directories_are_kept_in_order_up_to_v() {
        let o = parse(&["-j", "ID", "-f", "", "-V", "-j", "x"]).unwrap();
        assert_eq!(o.action, Action::Version);
        assert_eq!(
            o.named_dirs,
            vec![
                NamedDir::Persistent("id".into()),
                NamedDir::Alt(String::new())
            ]
        );
    }

    #[test]
    fn a_persistent_type_too_long_for_sysstat_is_a_usage_error() {
        assert!(is_usage(parse(&["-j", &"a".repeat(511)])));
        assert!(parse(&["-j", &"a".repeat(510)]).is_ok());
    }

    #[test]
    fn order_dependent_names_and_groups() {
        let o = parse(&["sda", "-j", "ID", "x", "-g", "g1", "sdb"]).unwrap();
        assert!(o.pretty);
        match (&o.list[0], &o.list[1], &o.list[2]) {
            (
                ListArg::Device {
                    persistent: None, ..
                },
                ListArg::Device {
                    persistent: Some(t),
                    ..
                },
                ListArg::Group(g),
            ) => {
                assert_eq!(t, "id");
                assert_eq!(g, " g1");
            }
            other => panic!("{other:?}"),
        }
        assert!(o.groups_defined);
    }

    #[test]
    fn clap_command_describes_exactly_the_scanned_options() {
        let cmd = command();
        cmd.clone().debug_assert();
        let shorts: String = cmd.get_arguments().filter_map(|a| a.get_short()).collect();
        for letter in ('a'..='z').chain('A'..='Z') {
            let takes_value = "fjgo".contains(letter);
            let scanner_accepts = if takes_value {
                let arg = format!("-{letter}");
                let value = if letter == 'o' { "JSON" } else { "x" };
                parse(&[&arg, value]).is_ok()
            } else {
                parse(&[&format!("-{letter}")]).is_ok() || letter == 'H'
            };
            assert_eq!(
                scanner_accepts,
                shorts.contains(letter),
                "option -{letter}: scanner and clap disagree"
            );
        }
        let mut longs: Vec<&str> = cmd.get_arguments().filter_map(|a| a.get_long()).collect();
        longs.sort();
        let mut ours: Vec<&str> = LONG_OPTIONS.iter().map(|l| &l[2..]).collect();
        ours.sort();
        assert_eq!(longs, ours);
        for long in LONG_OPTIONS {
            let args: Vec<&str> = match *long {
                "--dec" => vec!["--dec=1"],
                "--sysroot" | "--record" | "--replay" | "--svg" | "--svg-sort" | "--textfile" => {
                    vec![long, "/x"]
                }
                "--svg-top" => vec![long, "3"],
                "--listen" => vec![long, "127.0.0.1:9101"],
                "--output" => vec![long, "csv"],
                other => vec![other],
            };
            assert!(parse(&args).is_ok(), "{long} refused by the scanner");
        }
        assert!(parse(&["+f", "/x"]).is_ok());
        let f_help = cmd
            .get_arguments()
            .find(|a| a.get_short() == Some('f'))
            .and_then(|a| a.get_help())
            .map(|h| h.to_string())
            .unwrap();
        assert!(f_help.contains("+f"));
        assert!(is_usage(parse(&["--bogus"])));
    }
}
