//! What every renderer receives: the banner once, then one [`Sample`] per
//! report; and the trait each output format implements.

use std::borrow::Cow;
use std::io::{self, Write};
use std::time::SystemTime;

use crate::common::clock::unix_seconds;
use crate::common::locale::Locale;
use crate::common::source::Uname;

use super::cli::{Options, Timestamp};
use super::devices::{DeviceList, DeviceRow};
use super::latency::codec::Interval;
use super::latency::coverage::{self, Shortfall};
use super::latency::tracker::DeviceHistograms;
use super::latency::{LatencyStats, Losses};
use super::model::CpuPercent;

/// The host identity and date printed once at the top.
#[derive(Debug, Clone)]
pub struct Banner {
    /// uname fields.
    pub uname: Uname,
    /// The start date (`%x`, or `%Y-%m-%d` with `S_TIME_FORMAT=ISO`).
    pub date: String,
    /// CPU count as sysstat counts it.
    pub cpus: u32,
}

/// One sample, ready to render.
pub struct Sample<'a> {
    /// Wall-clock time of the sample.
    pub time: SystemTime,
    /// Sample number from 0.
    pub index: u64,
    /// Interval in hundredths of a second.
    pub itv: f64,
    /// CPU percentages.
    pub cpu: CpuPercent,
    /// The CPU percentages of iostat-rs's own formats (CSV, NDJSON, SVG):
    /// `cpu`, except over an interval in which a CPU went offline or came
    /// online ([`super::hotplug`]).
    pub cpu_shares: CpuPercent,
    /// The devices.
    pub devices: &'a DeviceList,
    /// The slot holding this sample.
    pub curr: usize,
    /// `--latency`: the interval's histograms (`None` in the first report,
    /// whose period since boot nothing measured).
    pub latency: Option<&'a Interval>,
    /// `--latency`: the samples the kernel lost in the interval before,
    /// the first report's included, whose histograms are not shown (see
    /// [`Sample::latency_stats`]).
    pub lost_before: u64,
}

impl Sample<'_> {
    /// `--latency`: the histograms of `row` in this interval (empty ones
    /// for a device that did no I/O), or `None` without `--latency`, in the
    /// first report (since boot) and for a group: nothing measured them.
    pub fn histograms(&self, row: &DeviceRow) -> Option<Cow<'_, DeviceHistograms>> {
        let interval = self.latency?;
        let devnum = row.devnum?;
        Some(match interval.device(devnum) {
            Some(h) => Cow::Borrowed(h),
            None => Cow::Owned(DeviceHistograms::default()),
        })
    }

    /// `--latency`: whether `row`'s histograms hold under half of the
    /// reads or discards `/proc/diskstats` counted in the interval.
    pub fn shortfall(&self, row: &DeviceRow) -> Option<Shortfall> {
        coverage::shortfall(&*self.histograms(row)?, row.prev, row.cur)
    }

    /// `--latency`: the figures of `row` (see [`Sample::histograms`]); none
    /// ([`LatencyStats::WITHHELD`]) where its histograms fall short
    /// ([`Sample::shortfall`]): they would describe a few requests as if
    /// they were all; no depth where completions that never arrived held
    /// it up ([`coverage::depth_held_up`]), nor in an interval whose
    /// samples the kernel lost, or the one after it (the first report's
    /// too, whose histograms are not shown: the requests of a loss before
    /// it may be the first interval measured's): a lost completion holds
    /// its request in the depth up to the drain that learns of the loss
    /// (by then, when iostat-rs was starved of CPU, hundreds of requests
    /// for one really in flight), a lost issue leaves its request out, and
    /// the requests a loss concerns may be the next interval's.
    /// A report reads the kernel's counters before it takes the
    /// histograms, which a starved report did seconds later: one told
    /// 83,859 samples lost while its 11,147 reads counted were all in its
    /// histogram; the 41,388 reads missing were counted in the next
    /// interval (145,431 of its 186,819 in the histogram), whose depth,
    /// then shown, reached 406 for one request at a time.
    pub fn latency_stats(&self, row: &DeviceRow) -> Option<LatencyStats> {
        let h = self.histograms(row)?;
        let mut stats = match coverage::shortfall(&h, row.prev, row.cur) {
            Some(_) => LatencyStats::WITHHELD,
            None => LatencyStats::of(&h),
        };
        if self.depth_held_up(row).is_some()
            || self.lost_before > 0
            || self.latency.is_some_and(|l| l.lost > 0)
        {
            stats.depth = None;
        }
        Some(stats)
    }

    /// `--latency`: what `row`'s histograms miss in the interval: the
    /// samples the kernel lost (of every device), and `row`'s completions
    /// left unmatched and requests whose completion never arrived.
    pub fn latency_losses(&self, row: &DeviceRow) -> Losses {
        self.latency.map_or_else(Losses::default, |l| Losses {
            lost: l.lost,
            unmatched: row.devnum.map_or(0, |d| l.unmatched_on(d)),
            undelivered: row.devnum.map_or(0, |d| l.undelivered_on(d)),
        })
    }

    /// `--latency`: how many of `row`'s completions never arrived in the
    /// interval, when they held its queue depth up too much to show
    /// ([`coverage::depth_held_up`]).
    pub fn depth_held_up(&self, row: &DeviceRow) -> Option<u64> {
        let forgotten = self.latency?.undelivered_on(row.devnum?);
        let completed = coverage::completed(row.prev, row.cur);
        coverage::depth_held_up(forgotten, completed, self.itv).then_some(forgotten)
    }
}

/// An output format.
pub trait Renderer {
    /// Writes what comes before the first report.
    fn begin(&mut self, out: &mut dyn Write, banner: &Banner) -> io::Result<()>;
    /// Writes one report; `skipped` is the first report under `-y`.
    fn sample(&mut self, out: &mut dyn Write, sample: &Sample, skipped: bool) -> io::Result<()>;
    /// Closes the document (every end, interrupted runs included).
    fn end(&mut self, out: &mut dyn Write) -> io::Result<()>;
}

/// The banner date as sysstat prints it (`%x` in the user's locale).
pub fn banner_date(opts: &Options, time: SystemTime) -> String {
    let format = if opts.iso_time { "%Y-%m-%d" } else { "%x" };
    opts.env
        .locale
        .strftime(format, time)
        .unwrap_or_else(|| "?/?/?".to_string())
}

/// How each report's time is printed: not at all, `-t` (local time, ISO 8601
/// with `S_TIME_FORMAT=ISO`) or `-U` (seconds since the epoch).
#[derive(Debug, Clone)]
pub struct ReportTime {
    kind: Timestamp,
    iso: bool,
    /// `%x %X` in the user's locale, as sysstat prints them.
    locale: Locale,
}

impl ReportTime {
    /// The report time these options ask for.
    pub fn of(opts: &Options) -> ReportTime {
        ReportTime {
            kind: opts.timestamp,
            iso: opts.iso_time,
            locale: opts.env.locale.clone(),
        }
    }

    /// The `-t`/`-U` timestamp text, or `None` without them.
    pub fn text(&self, time: SystemTime) -> Option<String> {
        match self.kind {
            Timestamp::None => None,
            Timestamp::Epoch => Some(unix_seconds(time).to_string()),
            Timestamp::Local => Some(self.locale.report_time(time, self.iso)),
        }
    }
}
