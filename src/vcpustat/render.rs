//! Output: vcpustat's own aligned text (the powerpc-utils column names plus
//! `home%`), and the schema and rows the core's machine-readable writers use.

use std::io::Write as _;
use std::time::SystemTime;

use crate::common::locale::Locale;
use crate::common::osname;
use crate::common::output::{Column, Row, Schema, Value};

use super::counters::{FIELDS, field};
use super::report::{Dispatches, Report};

/// How counts are shown in text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// Per-interval shares of `total`, in percent (the default).
    Percent,
    /// Per-interval counts (`-n`).
    Numeric,
    /// Cumulative counts since the statistics were enabled (`-r`).
    Raw,
}

/// How `-t` prints the time of each report, as iostat -t does: ISO 8601
/// (`%FT%T%z`) when `S_TIME_FORMAT` is exactly `ISO`, else `%x %X` in the
/// user's locale.
#[derive(Debug, Clone)]
pub struct ReportTime {
    locale: Locale,
    iso: bool,
}

impl ReportTime {
    /// The times in `locale`, or in ISO 8601 when `iso`.
    pub fn new(locale: Locale, iso: bool) -> ReportTime {
        ReportTime { locale, iso }
    }

    /// The times as the environment asks for them (`S_TIME_FORMAT` and the
    /// locale variables).
    pub fn from_environment() -> ReportTime {
        let iso = std::env::var_os("S_TIME_FORMAT").is_some_and(|value| value == "ISO");
        ReportTime::new(Locale::from_environment(), iso)
    }

    /// `time` as text.
    fn text(&self, time: SystemTime) -> String {
        self.locale.report_time(time, self.iso)
    }
}

/// Renders reports as aligned text into a reused buffer.
#[derive(Debug, Clone)]
pub struct TextRenderer {
    view: View,
    /// `-t`: the sample time first.
    timestamp: Option<ReportTime>,
}

const CPU_WIDTH: usize = 7;
const TOTAL_WIDTH: usize = 10;
const HOME_PCT_WIDTH: usize = 7;

impl TextRenderer {
    /// A renderer for `view`; `timestamp` prints the sample time first
    /// (`-t`).
    pub fn new(view: View, timestamp: Option<ReportTime>) -> TextRenderer {
        TextRenderer { view, timestamp }
    }

    fn width(&self) -> usize {
        match self.view {
            View::Percent => 6,
            View::Numeric | View::Raw => 10,
        }
    }

    /// Appends one report (UTF-8 text) to `out`: optional time, two header lines, one line
    /// per vCPU, the `all` line, notes, and an empty line. A report without
    /// rows (statistics off, a new baseline) prints only its notes. The
    /// time is in the locale's bytes, as `date` prints it, also where they
    /// are not UTF-8.
    pub fn render(&self, out: &mut Vec<u8>, time: SystemTime, report: &Report) {
        if let Some(timestamp) = &self.timestamp {
            out.extend_from_slice(&osname::to_bytes(&timestamp.text(time)));
            out.push(b'\n');
        }
        let unattributed = report.all.unattributed() > 0;
        if has_all(report) {
            // Wide enough for the longest `cpuN` (up to 13 characters for
            // CPU numbers a forged file can give), so columns stay aligned.
            let cpu_width = report
                .rows
                .iter()
                .map(|row| "cpu".len() + decimal_digits(row.cpu))
                .fold(CPU_WIDTH, usize::max);
            self.header(out, cpu_width, unattributed);
            for row in &report.rows {
                let start = out.len();
                out.extend_from_slice("cpu".as_bytes());
                push_uint(out, u64::from(row.cpu), 0);
                for _ in out.len() - start..cpu_width {
                    out.push(b' ');
                }
                self.values(out, &row.dispatches, unattributed);
            }
            let _ = write!(out, "{:<cpu_width$}", "all");
            self.values(out, &report.all, unattributed);
        }
        for note in &report.notes {
            out.extend_from_slice("note: ".as_bytes());
            out.extend_from_slice(note.as_bytes());
            out.push(b'\n');
        }
        out.push(b'\n');
    }

    fn header(&self, out: &mut Vec<u8>, cpu_width: usize, unattributed: bool) {
        let w = self.width();
        let numa_columns = if unattributed { 4 } else { 3 };
        let dispatch_span = 4 * (w + 1) - 1;
        let numa_span = numa_columns * (w + 1) - 1;
        let _ = writeln!(
            out,
            "{:cpu_width$} {:TOTAL_WIDTH$} | {:^dispatch_span$} | {:^numa_span$} |",
            "", "", "== dispatch dispersions ==", "== numa dispersions ==",
        );
        let _ = write!(
            out,
            "{:<cpu_width$} {:>TOTAL_WIDTH$} | {:>w$} {:>w$} {:>w$} {:>w$} | {:>w$} {:>w$} {:>w$}",
            "cpu", "total", "core", "chip", "socket", "cec", "home", "adj", "far"
        );
        if unattributed {
            let _ = write!(out, " {:>w$}", "unatt");
        }
        let _ = writeln!(out, " | {:>HOME_PCT_WIDTH$}", "home%");
    }

    fn values(&self, out: &mut Vec<u8>, d: &Dispatches, unattributed: bool) {
        let w = self.width();
        // Without known shares every percentage shows `-`, as without dispatches.
        let share_total = if d.shares_known() { d.total() } else { 0 };
        out.push(b' ');
        push_uint(out, d.total(), TOTAL_WIDTH);
        out.extend_from_slice(" |".as_bytes());
        let cell = |out: &mut Vec<u8>, count: u64| {
            out.push(b' ');
            match self.view {
                View::Percent => push_percent(out, count, share_total, w),
                View::Numeric | View::Raw => push_uint(out, count, w),
            }
        };
        for i in [field::CORE, field::CHIP, field::SOCKET, field::CEC] {
            cell(out, d.count(i));
        }
        out.extend_from_slice(" |".as_bytes());
        for i in [field::HOME, field::ADJ, field::FAR] {
            cell(out, d.count(i));
        }
        if unattributed {
            cell(out, d.unattributed());
        }
        out.extend_from_slice(" | ".as_bytes());
        push_percent(out, d.count(field::HOME), share_total, HOME_PCT_WIDTH);
        out.push(b'\n');
    }
}

/// The number of decimal digits of `n`.
fn decimal_digits(n: u32) -> usize {
    n.checked_ilog10().map_or(1, |log| log as usize + 1)
}

/// Appends `value` right-aligned in `width` (without the formatting
/// machinery: this is the hot path of a 4,096-vCPU report).
pub fn push_uint(out: &mut Vec<u8>, value: u64, width: usize) {
    let mut digits = [0u8; 20];
    let mut len = 0;
    let mut rest = value;
    loop {
        digits[len] = b'0' + (rest % 10) as u8;
        len += 1;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    push_reversed(out, &digits[..len], width);
}

/// Appends ASCII `reversed` back to front, right-aligned in `width`, with
/// one copy (digits are at most 48 bytes, widths at most 16).
fn push_reversed(out: &mut Vec<u8>, reversed: &[u8], width: usize) {
    let mut bytes = [b' '; 64];
    let pad = width.saturating_sub(reversed.len()).min(16);
    for (slot, &b) in bytes[pad..].iter_mut().zip(reversed.iter().rev()) {
        *slot = b;
    }
    let len = pad + reversed.len().min(48);
    out.extend_from_slice(&bytes[..len]);
}

/// Appends `100 * count / total` with two decimals, right-aligned in
/// `width`, or `-` when `total` is 0 or smaller than `count` (a share is
/// never above 100 %). Integer arithmetic, rounding half to
/// even like `printf("%.2f")` on exact ties.
pub fn push_percent(out: &mut Vec<u8>, count: u64, total: u64, width: usize) {
    if total == 0 || count > total {
        let _ = write!(out, "{:>width$}", "-");
        return;
    }
    // 64-bit arithmetic whenever it cannot overflow (128-bit division is a
    // slow library call, and this runs 8 times per row).
    let hundredths = match count.checked_mul(10_000) {
        Some(scaled) if total <= u64::MAX / 2 => {
            round_half_even(scaled / total, scaled % total, total)
        }
        _ => {
            let scaled = u128::from(count) * 10_000;
            let wide = u128::from(total);
            let q = (scaled / wide) as u64;
            let r = scaled % wide;
            if r * 2 > wide || (r * 2 == wide && q % 2 == 1) {
                q + 1
            } else {
                q
            }
        }
    };
    let mut digits = [0u8; 48];
    let mut len = 0;
    let whole = hundredths / 100;
    let frac = (hundredths % 100) as u8;
    digits[len] = b'0' + frac % 10;
    digits[len + 1] = b'0' + frac / 10;
    digits[len + 2] = b'.';
    len += 3;
    let mut rest_whole = whole;
    loop {
        digits[len] = b'0' + (rest_whole % 10) as u8;
        len += 1;
        rest_whole /= 10;
        if rest_whole == 0 {
            break;
        }
    }
    push_reversed(out, &digits[..len], width);
}

/// `quotient` rounded by `rest / divisor`, ties to even.
fn round_half_even(quotient: u64, rest: u64, divisor: u64) -> u64 {
    if rest * 2 > divisor || (rest * 2 == divisor && quotient % 2 == 1) {
        quotient + 1
    } else {
        quotient
    }
}

/// Keys of the counters in machine-readable output (the kernel's names).
pub const COUNTER_KEYS: [(&str, &str, &str); FIELDS] = [
    ("total_disp", "total", "Dispatches counted."),
    (
        "same_cpu_disp",
        "core",
        "Dispatches on the same core as the previous one.",
    ),
    (
        "same_chip_disp",
        "chip",
        "Dispatches on another core of the same chip.",
    ),
    ("diff_chip_disp", "socket", "Dispatches on another chip."),
    (
        "far_chip_disp",
        "cec",
        "Dispatches beyond the next NUMA boundary (socket or drawer).",
    ),
    (
        "numa_home_disp",
        "home",
        "Dispatches on the vCPU's home node.",
    ),
    (
        "numa_remote_disp",
        "adj",
        "Dispatches on a node next to the home node.",
    ),
    (
        "numa_far_disp",
        "far",
        "Dispatches on a node further from the home node.",
    ),
];

/// The schema of JSON, NDJSON and CSV output: label `cpu` (`cpu0`, ..., `all`),
/// the 8 counts (per interval, or since the statistics were switched on
/// with `-r`), the unattributed dispatches and `home_ratio`.
pub fn schema() -> Schema {
    let count = |key: &'static str, header: &'static str, help: &'static str| {
        Column::counter(key, header, help, 10)
    };
    let mut columns: Vec<Column> = COUNTER_KEYS
        .iter()
        .map(|&(key, header, help)| count(key, header, help))
        .collect();
    columns.push(count(
        "unattributed_disp",
        "unatt",
        "Dispatches no home-node distance was counted for (total - home - adj - far).",
    ));
    columns.push(Column::ratio(
        "home_ratio",
        "home%",
        "Home-node hit ratio (home / total); absent without dispatches.",
        7,
    ));
    Schema {
        tool: "vcpustat",
        labels: vec![("cpu", CPU_WIDTH)],
        columns,
    }
}

/// The values of one row in [`schema`] order.
fn row_values(d: &Dispatches) -> Vec<Value> {
    let mut values = Vec::with_capacity(FIELDS + 2);
    values.extend(d.counts().iter().map(|&v| Value::Int(v)));
    values.push(Value::Int(d.unattributed()));
    values.push(d.home_ratio().map_or(Value::Missing, Value::Float));
    values
}

/// `cpu<N>`, without the formatting machinery (4,096 rows per report).
fn cpu_label(cpu: u32) -> String {
    let mut label = Vec::with_capacity(10);
    label.extend_from_slice(b"cpu");
    push_uint(&mut label, u64::from(cpu), 0);
    String::from_utf8(label).unwrap_or_default()
}

/// Whether a report has an `all` row (not when it only carries notes).
fn has_all(report: &Report) -> bool {
    report.counted || !report.rows.is_empty() || report.all.total() > 0
}

/// The rows of a report for the JSON, NDJSON and CSV writers, `all` last
/// (there the `all` row is one more record, clearly labelled `cpu: "all"`).
pub fn machine_rows(report: &Report) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::with_capacity(report.rows.len() + 1);
    for r in &report.rows {
        rows.push(Row {
            labels: vec![cpu_label(r.cpu)],
            values: row_values(&r.dispatches),
        });
    }
    if has_all(report) {
        rows.push(Row {
            labels: vec!["all".to_string()],
            values: row_values(&report.all),
        });
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vcpustat::report::CpuRow;
    use std::time::UNIX_EPOCH;

    fn seed_report() -> Report {
        let rows = vec![
            CpuRow {
                cpu: 0,
                dispatches: Dispatches::cumulative(&[6839, 4126, 2683, 30, 0, 6821, 18, 0]),
            },
            CpuRow {
                cpu: 1,
                dispatches: Dispatches::default(),
            },
        ];
        Report::build(rows, &Default::default(), vec!["cpu9 went offline".into()])
    }

    #[test]
    fn percentages_round_like_printf() {
        let mut s = Vec::new();
        push_percent(&mut s, 6821, 6839, 7);
        push_percent(&mut s, 1, 32, 6); // 3.125 -> 3.12 (tie to even)
        push_percent(&mut s, 3, 32, 6); // 9.375 -> 9.38
        push_percent(&mut s, 5, 5, 7);
        push_percent(&mut s, 0, 0, 3);
        push_percent(&mut s, u64::MAX / 4, u64::MAX / 2, 6); // the 128-bit path
        assert_eq!(
            String::from_utf8(s).unwrap(),
            "  99.74  3.12  9.38 100.00  - 50.00"
        );
        // A count above its total (a wrapped counter) has no share, not 125 %.
        let mut s = Vec::new();
        push_percent(&mut s, 5, 4, 6);
        assert_eq!(s, b"     -");
    }

    #[test]
    fn numeric_view_shows_counts_home_pct_and_dash() {
        let mut out = Vec::new();
        TextRenderer::new(View::Numeric, None).render(&mut out, UNIX_EPOCH, &seed_report());
        let out = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[1],
            "cpu          total |       core       chip     socket        cec |       home        adj        far |   home%"
        );
        assert_eq!(
            lines[2],
            "cpu0          6839 |       4126       2683         30          0 |       6821         18          0 |   99.74"
        );
        assert!(lines[3].starts_with("cpu1             0 |"));
        assert!(lines[3].ends_with("|       -"));
        assert!(lines[4].starts_with("all           6839 |"));
        assert_eq!(lines[5], "note: cpu9 went offline");
    }

    #[test]
    fn report_times_are_iso_8601_or_the_locales() {
        let time = UNIX_EPOCH + std::time::Duration::from_secs(1_591_016_000);
        // The digits depend on the time zone; the shape does not.
        let shape = |iso: bool| -> String {
            let text = ReportTime::new(Locale::c(), iso).text(time);
            text.chars()
                .map(|c| if c.is_ascii_digit() { '9' } else { c })
                .collect()
        };
        assert!(
            ["9999-99-99T99:99:99+9999", "9999-99-99T99:99:99-9999"]
                .contains(&shape(true).as_str()),
            "{}",
            shape(true)
        );
        assert_eq!(shape(false), "99/99/99 99:99:99");
    }

    #[test]
    fn percent_view_and_unattributed_column() {
        let rows = vec![CpuRow {
            cpu: 3,
            dispatches: Dispatches::new([200, 100, 100, 0, 0, 150, 10, 0]),
        }];
        let report = Report::build(rows, &Default::default(), vec![]);
        let mut out = Vec::new();
        TextRenderer::new(View::Percent, None).render(&mut out, UNIX_EPOCH, &report);
        let out = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert!(
            lines[1].contains("|   home    adj    far  unatt |"),
            "{}",
            lines[1]
        );
        assert_eq!(
            lines[2],
            "cpu3           200 |  50.00  50.00   0.00   0.00 |  75.00   5.00   0.00  20.00 |   75.00"
        );
    }

    #[test]
    fn a_long_cpu_name_widens_the_first_column_for_every_line() {
        let rows = vec![
            CpuRow {
                cpu: 7,
                dispatches: Dispatches::new([5, 5, 0, 0, 0, 5, 0, 0]),
            },
            CpuRow {
                cpu: 4_294_967_295,
                dispatches: Dispatches::new([5, 5, 0, 0, 0, 5, 0, 0]),
            },
        ];
        let report = Report::build(rows, &Default::default(), vec![]);
        let mut out = Vec::new();
        TextRenderer::new(View::Numeric, None).render(&mut out, UNIX_EPOCH, &report);
        let out = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = out.lines().take(5).collect();
        // "cpu4294967295" is 13 characters: every line's first `|` moves.
        for line in &lines {
            assert_eq!(line.find('|'), Some(13 + 1 + 10 + 1), "{out}");
        }
        assert!(lines[3].starts_with("cpu4294967295          5 |"), "{out}");
    }

    #[test]
    fn machine_rows_end_with_all_and_leave_missing_ratios_out() {
        let rows = machine_rows(&seed_report());
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[2].labels, vec!["all".to_string()]);
        assert_eq!(rows[1].values[9], Value::Missing);
        assert_eq!(rows[0].values[0], Value::Int(6839));
        assert_eq!(schema().columns.len(), rows[0].values.len());
    }
}
