//! sysstat's text layout, byte for byte: banner, `avg-cpu`, the basic,
//! `-x`, `-x -s` and `--pretty` device reports, `--human` units and colours.

use std::fmt::Write as _;
use std::io::{self, Write};

use super::cli::{ColorMode, Options, Unit};
use super::colors::{Colors, Extremes};
use super::devices::DeviceRow;
use super::fmt::push_left;
use super::latency::{LatencyStats, OP_NAMES};
use super::model::{basic_stats, ext_short_stats, ext_stats};
use super::report::{Banner, Renderer, ReportTime, Sample};
use crate::common::escape;
use crate::common::fixed::push_fixed;
use crate::common::locale::Locale;
use crate::common::osname;

/// The text renderer.
pub struct TextRenderer {
    show_cpu: bool,
    show_disk: bool,
    extended: bool,
    short: bool,
    unit: Unit,
    pretty: bool,
    split: bool,
    human: bool,
    decimals: Option<usize>,
    banner_blank: bool,
    colors: Option<Colors>,
    time: ReportTime,
    /// `--latency`: the extended report's latency columns.
    latency: bool,
    /// The user's locale when its decimal point is not a `.`, which
    /// sysstat's text report then prints (`27,44` in `de_DE`).
    other_point: Option<Locale>,
    /// The device report's header lines, one per part (four when `split`): they depend only on the options, so they are built once
    /// instead of being formatted again, some 25 strings, in every report.
    headers: Vec<String>,
    buf: String,
}

impl TextRenderer {
    /// A renderer for these options; `tty` tells whether stdout is a terminal.
    pub fn new(opts: &Options, tty: bool) -> TextRenderer {
        let colors_on = match opts.colors {
            ColorMode::Always => true,
            ColorMode::Never => false,
            ColorMode::Auto => tty,
        };
        let mut renderer = TextRenderer {
            show_cpu: opts.show_cpu,
            show_disk: opts.show_disk,
            extended: opts.extended,
            short: opts.short,
            unit: opts.unit,
            pretty: opts.pretty,
            split: opts.pretty && opts.extended && !opts.short && !opts.compact,
            human: opts.human,
            decimals: opts.decimals,
            banner_blank: !(opts.skip_first && opts.interval.is_some()),
            colors: colors_on.then(|| Colors::new(opts.env.s_colors_sgr.as_deref())),
            time: ReportTime::of(opts),
            latency: opts.latency,
            other_point: Some(opts.env.locale.clone()).filter(|l| l.decimal_point() != "."),
            headers: Vec::new(),
            buf: String::with_capacity(BUF_BYTES),
        };
        if renderer.show_disk {
            renderer.headers = renderer.device_headers();
        }
        renderer
    }

    /// The header lines of the device report these options print.
    fn device_headers(&self) -> Vec<String> {
        if !self.extended {
            vec![self.basic_header()]
        } else if self.short {
            vec![self.short_header()]
        } else {
            self.ext_parts()
                .iter()
                .map(|part| self.ext_header(part))
                .collect()
        }
    }

    /// The column groups of the `-x` report: all four on one line, or each
    /// under its own header when `split` (`--pretty -x` without `-s` or
    /// `--compact`).
    fn ext_parts(&self) -> &'static [&'static [usize]] {
        if self.split {
            &[&[0], &[1], &[2], &[3]]
        } else {
            &[&[0, 1, 2, 3]]
        }
    }

    fn decimals_for(&self, wd: usize) -> usize {
        match self.decimals {
            Some(d) if wd > 0 => d,
            _ => wd,
        }
    }

    /// Gives the number written from `start` on the locale's decimal point.
    fn localise(&mut self, start: usize) {
        if let Some(locale) = &self.other_point {
            locale.localise_number(&mut self.buf, start);
        }
    }

    /// `cprintf_f`: `" %*.*f"`.
    fn f(&mut self, width: usize, wd: usize, v: f64) {
        let d = self.decimals_for(wd);
        let start = self.buf.len();
        match &self.colors {
            Some(c) => {
                let sgr = c.float(v, d);
                let _ = write!(self.buf, "{sgr} {v:width$.d$}{}", c.normal);
            }
            None => {
                self.buf.push(' ');
                push_fixed(&mut self.buf, v, width, d);
            }
        }
        self.localise(start);
    }

    /// `cprintf_xpc`: a percentage, with `%` under `--human`.
    fn pct(&mut self, width: usize, wd: usize, v: f64, extremes: Extremes) {
        let mut wi = width;
        let mut d = self.decimals_for(wd);
        if self.human {
            wi = wi.max(4) - 1;
            if d > 1 {
                d -= 1;
            }
        }
        let suffix = if self.human { "%" } else { "" };
        let start = self.buf.len();
        match &self.colors {
            Some(c) => {
                let sgr = c.percent(v, d, extremes);
                let _ = write!(self.buf, "{sgr} {v:wi$.d$}{}{suffix}", c.normal);
            }
            None => {
                self.buf.push(' ');
                push_fixed(&mut self.buf, v, wi, d);
                self.buf.push_str(suffix);
            }
        }
        self.localise(start);
    }

    /// A size or byte rate: `value` in sectors; divided by the unit factor,
    /// or with `--human` printed with a unit letter (`cprintf_f` with
    /// `UNIT_SECTOR`).
    fn size(&mut self, width: usize, sectors: f64) {
        if self.human {
            let sgr = self
                .colors
                .as_ref()
                .map(|c| c.float(sectors, self.decimals_for(2)));
            self.human_unit(width, sectors / 2.0, sgr.map(str::to_owned));
        } else {
            self.f(width, 2, sectors / self.unit.sectors_per_unit() as f64);
        }
    }

    /// A size already in kB (request sizes; `UNIT_KILOBYTE` with `--human`).
    fn kb(&mut self, width: usize, kb: f64) {
        if self.human {
            let sgr = self
                .colors
                .as_ref()
                .map(|c| c.float(kb, self.decimals_for(2)));
            self.human_unit(width, kb, sgr.map(str::to_owned));
        } else {
            self.f(width, 2, kb);
        }
    }

    /// `cprintf_unit`: `kb` scaled to k, M, G..., one decimal (none with
    /// `--dec=0`), the unit letter after the colour reset. `sgr` is the
    /// colour the caller chose from the unconverted value.
    fn human_unit(&mut self, width: usize, mut kb: f64, sgr: Option<String>) {
        const UNITS: [&str; 8] = ["s", "B", "k", "M", "G", "T", "P", "?"];
        let mut unit = 2;
        while kb >= 1024.0 {
            kb /= 1024.0;
            unit += 1;
        }
        let unit = UNITS[unit.min(UNITS.len() - 1)];
        let d = if self.decimals == Some(0) { 0 } else { 1 };
        let wi = width.max(4) - 1;
        let start = self.buf.len();
        match (&self.colors, sgr) {
            (Some(c), Some(sgr)) => {
                let _ = write!(self.buf, "{sgr} {kb:wi$.d$}{}{unit}", c.normal);
            }
            _ => {
                let _ = write!(self.buf, " {kb:wi$.d$}{unit}");
            }
        }
        self.localise(start);
    }

    /// An integer total (`cprintf_u64`), in sectors before the unit factor.
    fn total(&mut self, width: usize, sectors: u64) {
        if self.human {
            let sgr = self.colors.as_ref().map(|c| c.integer(sectors).to_owned());
            self.human_unit(width, sectors as f64 / 2.0, sgr);
            return;
        }
        let v = sectors / self.unit.sectors_per_unit();
        match &self.colors {
            Some(c) => {
                let _ = write!(self.buf, "{} {v:width$}{}", c.integer(v), c.normal);
            }
            None => {
                let _ = write!(self.buf, " {v:width$}");
            }
        }
    }

    fn name_start(&mut self, name: &str) {
        if self.pretty {
            return;
        }
        let name = escape::text(name);
        let name = name.as_ref();
        match &self.colors {
            Some(c) => {
                self.buf.push_str(&c.name);
                push_left(&mut self.buf, name, 13);
                self.buf.push_str(c.normal);
            }
            None => push_left(&mut self.buf, name, 13),
        }
    }

    fn name_end(&mut self, name: &str) {
        if self.pretty {
            let name = escape::text(name);
            match &self.colors {
                Some(c) => {
                    let _ = write!(self.buf, "{} {name}{}", c.name, c.normal);
                }
                None => {
                    let _ = write!(self.buf, " {name}");
                }
            }
        }
        self.buf.push('\n');
    }

    /// A header line: `Device` and the right-aligned column labels.
    fn header(&self, cells: &[(&str, usize)]) -> String {
        let mut line = String::new();
        if !self.pretty {
            line.push_str("Device       ");
        }
        for (label, width) in cells {
            let _ = write!(line, "{label:>w$}", w = width + 1);
        }
        if self.pretty {
            line.push_str(" Device");
        }
        line.push('\n');
        line
    }

    fn cpu(&mut self, s: &Sample) {
        self.buf
            .push_str("avg-cpu:  %user   %nice %system %iowait  %steal   %idle\n       ");
        let c = s.cpu;
        self.pct(7, 2, c.user, Extremes::High);
        self.pct(7, 2, c.nice, Extremes::High);
        self.pct(7, 2, c.system, Extremes::High);
        self.pct(7, 2, c.iowait, Extremes::High);
        self.pct(7, 2, c.steal, Extremes::High);
        self.pct(7, 2, c.idle, Extremes::Low);
        self.buf.push_str("\n\n");
    }

    /// The header of the `-x -s` report.
    fn short_header(&self) -> String {
        let u = format!("{}/s", self.unit.label(false));
        self.header(&[
            ("tps", 8),
            (&u, 9),
            ("rqm/s", 8),
            ("await", 7),
            ("areq-sz", 8),
            ("aqu-sz", 7),
            ("%util", 6),
        ])
    }

    /// The header of the report without `-x`.
    fn basic_header(&self) -> String {
        let u = self.unit.label(true);
        if self.short {
            let (r, wd, rt, wdt) = (
                format!("{u}_read/s"),
                format!("{u}_w+d/s"),
                format!("{u}_read"),
                format!("{u}_w+d"),
            );
            self.header(&[("tps", 8), (&r, 12), (&wd, 12), (&rt, 10), (&wdt, 10)])
        } else {
            let l = [
                format!("{u}_read/s"),
                format!("{u}_wrtn/s"),
                format!("{u}_dscd/s"),
                format!("{u}_read"),
                format!("{u}_wrtn"),
                format!("{u}_dscd"),
            ];
            self.header(&[
                ("tps", 8),
                (&l[0], 12),
                (&l[1], 12),
                (&l[2], 12),
                (&l[3], 10),
                (&l[4], 10),
                (&l[5], 10),
            ])
        }
    }

    fn basic_row(&mut self, row: &DeviceRow, itv: f64) {
        let b = basic_stats(row.prev, row.cur, itv);
        self.name_start(row.name);
        self.f(8, 2, b.tps);
        if self.short {
            self.size(12, b.rates[0]);
            if self.human {
                self.size(12, b.rates[1] + b.rates[2]);
            } else {
                let f = self.unit.sectors_per_unit() as f64;
                self.f(12, 2, b.rates[1] / f + b.rates[2] / f);
            }
            self.total(10, b.totals[0]);
            self.total(10, b.totals[1].wrapping_add(b.totals[2]));
        } else {
            for r in b.rates {
                self.size(12, r);
            }
            for t in b.totals {
                self.total(10, t);
            }
        }
        self.name_end(row.name);
    }

    /// The header line of the `-x` column groups in `part`.
    fn ext_header(&self, part: &[usize]) -> String {
        let labels: Vec<(String, usize)> = part.iter().flat_map(|&p| self.ext_labels(p)).collect();
        let cells: Vec<(&str, usize)> = labels.iter().map(|(l, w)| (l.as_str(), *w)).collect();
        self.header(&cells)
    }

    /// The labels and widths of one `-x` column group.
    fn ext_labels(&self, part: usize) -> Vec<(String, usize)> {
        let u = self.unit.label(false);
        match part {
            0..=2 => {
                // Joined, not formatted: format templates go to the merged
                // strings, whose read parts must stay within the read-only
                // segment's first 64 kB (tests/suite/layout.rs).
                let p = ["r", "w", "d"][part];
                vec![
                    ([p, "/s"].concat(), 7),
                    ([p, u, "/s"].concat(), 9),
                    ([p, "rqm/s"].concat(), 8),
                    (["%", p, "rqm"].concat(), 6),
                    ([p, "_await"].concat(), 7),
                    ([p, "areq-sz"].concat(), 8),
                ]
            }
            _ => {
                let mut cells = vec![
                    ("f/s".into(), 7),
                    ("f_await".into(), 7),
                    ("aqu-sz".into(), 7),
                    ("%util".into(), 6),
                ];
                if self.latency {
                    for op in OP_NAMES {
                        for q in ["p50", "p99", "max"] {
                            cells.push((format!("{op}_{q}"), 7));
                        }
                    }
                    cells.push(("qd_p50".into(), 6));
                    cells.push(("qd_max".into(), 6));
                }
                cells
            }
        }
    }

    /// `--latency`'s columns: ms with two decimals, `0.00` where no request
    /// of the kind completed (as `-x` prints an await), depths as integers;
    /// `-` in every column where nothing was measured (`None`: the first
    /// report, since boot, and groups).
    // Out of line: only some runs take this path; inlined, it would sit among
    // the code every run executes (build.rs, "Hot code first").
    #[inline(never)]
    fn latency_cells(&mut self, l: Option<LatencyStats>) {
        let Some(l) = l else {
            for _ in 0..OP_NAMES.len() * 3 {
                self.buf.push_str("       -");
            }
            self.buf.push_str("      -      -");
            return;
        };
        match l.ops {
            Some(ops) => {
                for v in ops.into_iter().flat_map(Option::unwrap_or_default) {
                    self.f(7, 2, v);
                }
            }
            None => {
                for _ in 0..OP_NAMES.len() * 3 {
                    self.buf.push_str("       -");
                }
            }
        }
        match l.depth {
            Some([p50, max]) => {
                let _ = write!(self.buf, " {p50:6} {max:6}");
            }
            None => self.buf.push_str("      -      -"),
        }
    }

    fn ext_row_part(&mut self, s: &super::model::ExtStats, part: usize) {
        match part {
            0..=2 => {
                self.f(7, 2, s.ios[part]);
                self.size(9, s.sectors[part]);
                self.f(8, 2, s.merges[part]);
                self.pct(6, 2, s.merge_pct[part], Extremes::LowNonZero);
                self.f(7, 2, s.await_ms[part]);
                self.kb(8, s.req_kb[part]);
            }
            _ => {
                self.f(7, 2, s.fl_ios);
                self.f(7, 2, s.fl_await);
                self.f(7, 2, s.aqu_sz);
                self.pct(6, 2, s.util, Extremes::High);
            }
        }
    }

    fn disk_report(&mut self, out: &mut dyn Write, s: &Sample) -> io::Result<()> {
        if !self.extended {
            self.basic_report(out, s)
        } else if self.short {
            self.short_report(out, s)
        } else {
            self.extended_report(out, s)
        }
    }

    /// The device report without `-x`.
    // Each form of the report out of line: inlined into one function, the
    // forms a run does not print sat among the code every run executes
    // (build.rs, "Hot code first").
    #[inline(never)]
    fn basic_report(&mut self, out: &mut dyn Write, s: &Sample) -> io::Result<()> {
        self.buf.push_str(&self.headers[0]);
        for row in s.devices.rows(s.curr) {
            self.basic_row(&row, s.itv);
            self.spill(out)?;
        }
        Ok(())
    }

    /// The device report of `-x -s`.
    #[inline(never)]
    fn short_report(&mut self, out: &mut dyn Write, s: &Sample) -> io::Result<()> {
        self.buf.push_str(&self.headers[0]);
        for row in s.devices.rows(s.curr) {
            let x = ext_short_stats(row.prev, row.cur, s.itv, row.devices);
            self.name_start(row.name);
            self.f(8, 2, x.tps);
            self.size(9, x.sectors);
            self.f(8, 2, x.merges);
            self.f(7, 2, x.await_ms);
            self.kb(8, x.req_kb);
            self.f(7, 2, x.aqu_sz);
            self.pct(6, 2, x.util, Extremes::High);
            self.name_end(row.name);
            self.spill(out)?;
        }
        Ok(())
    }

    /// The device report of `-x`, in one part or split in four (`split`).
    #[inline(never)]
    fn extended_report(&mut self, out: &mut dyn Write, s: &Sample) -> io::Result<()> {
        let parts = self.ext_parts();
        for (n, &part) in parts.iter().enumerate() {
            self.buf.push_str(&self.headers[n]);
            for row in s.devices.rows(s.curr) {
                let x = ext_stats(row.prev, row.cur, s.itv, row.devices);
                self.name_start(row.name);
                for &p in part {
                    self.ext_row_part(&x, p);
                    if p == 3 && self.latency {
                        self.latency_cells(s.latency_stats(&row));
                    }
                }
                self.name_end(row.name);
                self.spill(out)?;
            }
            if n + 1 < parts.len() {
                self.buf.push('\n');
            }
        }
        Ok(())
    }

    /// Writes out what is buffered before the next line could make the
    /// buffer grow, so that a report of many devices never sits whole in
    /// memory, and a growing one does not leave a trail of freed buffers
    /// of twice the size each (32 kB resident at 100 devices).
    fn spill(&mut self, out: &mut dyn Write) -> io::Result<()> {
        if self.buf.len() + LINE_ROOM > self.buf.capacity() {
            out.write_all(self.buf.as_bytes())?;
            self.buf.clear();
        }
        Ok(())
    }
}

/// The report buffer's first allocation, which it keeps whatever the number
/// of devices (a 100-device `-x` report is 20 kB) unless a line is longer
/// than [`LINE_ROOM`].
const BUF_BYTES: usize = 4096;

/// Room kept free in the report buffer for the next device's line (an `-x`
/// line is under 300 bytes): [`TextRenderer::spill`] writes the buffer out
/// before it has less.
const LINE_ROOM: usize = 1024;

impl Renderer for TextRenderer {
    fn begin(&mut self, out: &mut dyn Write, banner: &Banner) -> io::Result<()> {
        let u = &banner.uname;
        // Built byte by byte, not through `write!`: a format template is a
        // merged string (`.rodata.str1.1`), which no hot list can place,
        // and this one, the only template a usual report read, lay just
        // before the end of the read-only window a run keeps resident
        // (BENCHMARKS.md, "The read-only window is on an edge"). Nor as
        // separate `write_all` pieces: LLVM merges a piece such as `b" "`
        // with the same constant of another crate, placed at the end of
        // the segment (link/dependency-rodata.txt). The few separator
        // bytes appended here are stored as immediates. The date in the
        // locale's bytes, as sysstat prints it, also where they are not
        // UTF-8 (clock::strftime_local).
        let mut line = Vec::with_capacity(128);
        line.extend_from_slice(escape::text(&u.sysname).as_bytes());
        line.push(b' ');
        line.extend_from_slice(escape::text(&u.release).as_bytes());
        line.extend_from_slice(b" (");
        line.extend_from_slice(escape::text(&u.nodename).as_bytes());
        line.extend_from_slice(b") \t");
        line.extend_from_slice(&osname::to_bytes(&banner.date));
        line.extend_from_slice(b" \t_");
        line.extend_from_slice(escape::text(&u.machine).as_bytes());
        line.extend_from_slice(b"_\t(");
        line.extend_from_slice(banner.cpus.to_string().as_bytes());
        line.extend_from_slice(b" CPU)\n");
        out.write_all(&line)?;
        if self.banner_blank {
            out.write_all(b"\n")?;
        }
        Ok(())
    }

    fn sample(&mut self, out: &mut dyn Write, s: &Sample, skipped: bool) -> io::Result<()> {
        self.buf.clear();
        if !skipped {
            if let Some(ts) = self.time.text(s.time) {
                if osname::holds_raw_bytes(&ts) {
                    // A locale of another character set: its bytes, as
                    // sysstat prints them, ahead of the UTF-8 report.
                    out.write_all(&osname::to_bytes(&ts))?;
                    out.write_all(b"\n")?;
                } else {
                    self.buf.push_str(&ts);
                    self.buf.push('\n');
                }
            }
            if self.show_cpu {
                self.cpu(s);
            }
            if self.show_disk {
                self.disk_report(out, s)?;
            }
            self.buf.push('\n');
        }
        self.buf.push('\n');
        out.write_all(self.buf.as_bytes())?;
        out.flush()
    }

    fn end(&mut self, out: &mut dyn Write) -> io::Result<()> {
        out.flush()
    }
}
