//! sysstat's JSON document (`-o JSON`), byte for byte: tabs, key order,
//! `%.2f` everywhere, the empty line a `-y` run leaves, and a document that
//! is closed however the run ends.

use std::fmt::Write as _;
use std::io::{self, Write};

use super::cli::{Options, Unit};
use super::latency::json_object;
use super::model::{basic_stats, ext_short_stats, ext_stats};
use super::report::{Banner, Renderer, ReportTime, Sample};
use crate::common::escape;

/// The `-o JSON` renderer.
pub struct JsonRenderer {
    show_cpu: bool,
    show_disk: bool,
    extended: bool,
    short: bool,
    /// `--latency`: each device of the extended report has a `latency` key.
    latency: bool,
    unit: Unit,
    time: ReportTime,
    /// A sample's closing `}` was written without its line end yet.
    open_sample: bool,
    buf: String,
}

impl JsonRenderer {
    /// A renderer for these options.
    // Out of line: only some runs take this path; inlined, it would sit among
    // the code every run executes (build.rs, "Hot code first").
    #[inline(never)]
    pub fn new(opts: &Options) -> JsonRenderer {
        JsonRenderer {
            show_cpu: opts.show_cpu,
            show_disk: opts.show_disk,
            extended: opts.extended,
            short: opts.short,
            latency: opts.latency,
            unit: opts.unit,
            time: ReportTime::of(opts),
            open_sample: false,
            buf: String::with_capacity(4096),
        }
    }

    fn disk(&mut self, out: &mut dyn Write, s: &Sample) -> io::Result<()> {
        let unit = self.unit;
        let fctr = unit.sectors_per_unit() as f64;
        let u = unit.label(false);
        self.buf.push_str("\t\t\t\t\t\"disk\": [\n");
        let mut first = true;
        for row in s.devices.rows(s.curr) {
            if self.buf.len() >= 32 * 1024 {
                out.write_all(self.buf.as_bytes())?;
                self.buf.clear();
            }
            if !first {
                self.buf.push_str(",\n");
            }
            first = false;
            let b = &mut self.buf;
            let _ = write!(
                b,
                "\t\t\t\t\t\t{{\"disk_device\": \"{}\", ",
                escape::json(row.name)
            );
            if !self.extended {
                let x = basic_stats(row.prev, row.cur, s.itv);
                let bu = unit.label(true);
                let per = unit.sectors_per_unit();
                let _ = write!(
                    b,
                    "\"tps\": {:.2}, \"{bu}_read/s\": {:.2}, \"{bu}_wrtn/s\": {:.2}, \"{bu}_dscd/s\": {:.2}, \"{bu}_read\": {}, \"{bu}_wrtn\": {}, \"{bu}_dscd\": {}}}",
                    x.tps,
                    x.rates[0] / fctr,
                    x.rates[1] / fctr,
                    x.rates[2] / fctr,
                    x.totals[0] / per,
                    x.totals[1] / per,
                    x.totals[2] / per
                );
            } else if self.short {
                let x = ext_short_stats(row.prev, row.cur, s.itv, row.devices);
                let _ = write!(
                    b,
                    "\"tps\": {:.2}, \"{u}/s\": {:.2}, \"rqm/s\": {:.2}, \"await\": {:.2}, \"areq-sz\": {:.2}, \"aqu-sz\": {:.2}, \"util\": {:.2}}}",
                    x.tps,
                    x.sectors / fctr,
                    x.merges,
                    x.await_ms,
                    x.req_kb,
                    x.aqu_sz,
                    x.util
                );
            } else {
                let x = ext_stats(row.prev, row.cur, s.itv, row.devices);
                let _ = write!(
                    b,
                    "\"r/s\": {:.2}, \"w/s\": {:.2}, \"d/s\": {:.2}, \"f/s\": {:.2}, \"r{u}/s\": {:.2}, \"w{u}/s\": {:.2}, \"d{u}/s\": {:.2}, \"rrqm/s\": {:.2}, \"wrqm/s\": {:.2}, \"drqm/s\": {:.2}, \"rrqm\": {:.2}, \"wrqm\": {:.2}, \"drqm\": {:.2}, \"r_await\": {:.2}, \"w_await\": {:.2}, \"d_await\": {:.2}, \"f_await\": {:.2}, \"rareq-sz\": {:.2}, \"wareq-sz\": {:.2}, \"dareq-sz\": {:.2}, \"aqu-sz\": {:.2}, \"util\": {:.2}}}",
                    x.ios[0],
                    x.ios[1],
                    x.ios[2],
                    x.fl_ios,
                    x.sectors[0] / fctr,
                    x.sectors[1] / fctr,
                    x.sectors[2] / fctr,
                    x.merges[0],
                    x.merges[1],
                    x.merges[2],
                    x.merge_pct[0],
                    x.merge_pct[1],
                    x.merge_pct[2],
                    x.await_ms[0],
                    x.await_ms[1],
                    x.await_ms[2],
                    x.fl_await,
                    x.req_kb[0],
                    x.req_kb[1],
                    x.req_kb[2],
                    x.aqu_sz,
                    x.util
                );
                if self.latency {
                    b.pop();
                    match s.histograms(&row).zip(s.latency_stats(&row)) {
                        Some((h, stats)) => {
                            let object = json_object(&h, &stats, &s.latency_losses(&row));
                            let _ = write!(b, ", \"latency\": {object}}}");
                        }
                        // The first report (since boot) and groups: nothing
                        // measured them.
                        None => b.push_str(", \"latency\": null}"),
                    }
                }
            }
        }
        self.buf.push_str("\n\t\t\t\t\t]\n");
        Ok(())
    }
}

impl Renderer for JsonRenderer {
    fn begin(&mut self, out: &mut dyn Write, banner: &Banner) -> io::Result<()> {
        let u = &banner.uname;
        write!(
            out,
            "{{\"sysstat\": {{\n\t\"hosts\": [\n\t\t{{\n\t\t\t\"nodename\": \"{}\",\n\t\t\t\"sysname\": \"{}\",\n\t\t\t\"release\": \"{}\",\n\t\t\t\"machine\": \"{}\",\n\t\t\t\"number-of-cpus\": {},\n\t\t\t\"date\": \"{}\",\n\t\t\t\"statistics\": [\n",
            escape::json(&u.nodename),
            escape::json(&u.sysname),
            escape::json(&u.release),
            escape::json(&u.machine),
            banner.cpus,
            escape::json(&banner.date)
        )?;
        out.flush()
    }

    fn sample(&mut self, out: &mut dyn Write, s: &Sample, skipped: bool) -> io::Result<()> {
        self.buf.clear();
        if skipped {
            self.buf.push('\n');
        } else {
            if self.open_sample {
                self.buf.push_str(",\n");
            }
            self.buf.push_str("\t\t\t\t{\n");
            if let Some(ts) = self.time.text(s.time) {
                let _ = writeln!(
                    self.buf,
                    "\t\t\t\t\t\"timestamp\": \"{}\",",
                    escape::json(&ts)
                );
            }
            if self.show_cpu {
                let c = s.cpu;
                let _ = write!(
                    self.buf,
                    "\t\t\t\t\t\"avg-cpu\":  {{\"user\": {:.2}, \"nice\": {:.2}, \"system\": {:.2}, \"iowait\": {:.2}, \"steal\": {:.2}, \"idle\": {:.2}}}",
                    c.user, c.nice, c.system, c.iowait, c.steal, c.idle
                );
                if self.show_disk {
                    self.buf.push(',');
                }
                self.buf.push('\n');
            }
            if self.show_disk {
                self.disk(out, s)?;
            }
            self.buf.push_str("\t\t\t\t}");
            self.open_sample = true;
        }
        out.write_all(self.buf.as_bytes())?;
        out.flush()
    }

    fn end(&mut self, out: &mut dyn Write) -> io::Result<()> {
        if self.open_sample {
            out.write_all(b"\n")?;
            self.open_sample = false;
        }
        out.write_all(b"\t\t\t]\n\t\t}\n\t]\n}}\n")?;
        out.flush()
    }
}
