//! Pure computation from two samples: every formula of sysstat's iostat, with
//! its operation order (so results are bit-identical), its clamps for
//! counters that went backwards and its wrap-around arithmetic.

use std::time::Duration;

use super::parse::{CpuTicks, DiskCounters};

/// `S_VALUE`: `(double)(cur - prev) / itv * 100`, divide first.
fn s_value(delta: u64, itv: f64) -> f64 {
    delta as f64 / itv * 100.0
}

/// A clamped 64-bit rate: 0 when the counter went backwards.
fn rate64(prev: u64, cur: u64, itv: f64) -> f64 {
    if cur < prev {
        0.0
    } else {
        s_value(cur - prev, itv)
    }
}

/// A clamped 32-bit rate.
fn rate32(prev: u32, cur: u32, itv: f64) -> f64 {
    if cur < prev {
        0.0
    } else {
        s_value(u64::from(cur - prev), itv)
    }
}

/// The interval in hundredths of a second between two uptimes (0 becomes
/// 1), as sysstat takes it: `/proc/uptime` counts in hundredths.
pub fn interval_cs(prev_uptime_cs: u64, cur_uptime_cs: u64) -> f64 {
    match cur_uptime_cs.wrapping_sub(prev_uptime_cs) {
        0 => 1.0,
        itv => itv as f64,
    }
}

/// The interval in hundredths of a second between two readings of the
/// monotonic clock, for intervals `/proc/uptime`'s hundredths cannot time
/// (a 13 ms interval reads as 10 or 20 ms there): `None` unless both
/// readings were taken and the clock moved forward.
pub fn clock_interval_cs(prev: Option<Duration>, cur: Option<Duration>) -> Option<f64> {
    let elapsed = cur?.checked_sub(prev?).filter(|d| !d.is_zero())?;
    Some(elapsed.as_nanos() as f64 / 1e7)
}

/// The `avg-cpu` percentages.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuPercent {
    /// %user
    pub user: f64,
    /// %nice
    pub nice: f64,
    /// %system (system + softirq + hardirq)
    pub system: f64,
    /// %iowait
    pub iowait: f64,
    /// %steal
    pub steal: f64,
    /// %idle
    pub idle: f64,
}

/// sysstat's `ll_sp_value`: 0 when the counter went backwards.
fn ll_sp_value(prev: u64, cur: u64, total: u64) -> f64 {
    if cur < prev {
        0.0
    } else {
        (cur - prev) as f64 / total as f64 * 100.0
    }
}

/// Computes the CPU percentages between two `cpu ` lines.
pub fn cpu_percent(prev: &CpuTicks, cur: &CpuTicks) -> CpuPercent {
    let total = match cur.total().wrapping_sub(prev.total()) {
        0 => 1,
        t => t,
    };
    let sys = |c: &CpuTicks| c.system.wrapping_add(c.softirq).wrapping_add(c.hardirq);
    CpuPercent {
        user: ll_sp_value(prev.user, cur.user, total),
        nice: ll_sp_value(prev.nice, cur.nice, total),
        system: ll_sp_value(sys(prev), sys(cur), total),
        iowait: ll_sp_value(prev.iowait, cur.iowait, total),
        steal: ll_sp_value(prev.steal, cur.steal, total),
        idle: ll_sp_value(prev.idle, cur.idle, total),
    }
}

/// The `-x` statistics of one device. Byte rates are in sectors per second
/// (the caller divides by the unit factor); request sizes are in kB.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ExtStats {
    /// r/s, w/s, d/s
    pub ios: [f64; 3],
    /// f/s
    pub fl_ios: f64,
    /// Sectors per second read, written, discarded.
    pub sectors: [f64; 3],
    /// rrqm/s, wrqm/s, drqm/s
    pub merges: [f64; 3],
    /// %rrqm, %wrqm, %drqm
    pub merge_pct: [f64; 3],
    /// r_await, w_await, d_await (ms)
    pub await_ms: [f64; 3],
    /// f_await (ms)
    pub fl_await: f64,
    /// rareq-sz, wareq-sz, dareq-sz (kB)
    pub req_kb: [f64; 3],
    /// aqu-sz
    pub aqu_sz: f64,
    /// %util
    pub util: f64,
}

/// The `-x -s` statistics of one device.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ExtShortStats {
    /// tps (reads, writes and discards; flushes excluded)
    pub tps: f64,
    /// Sectors per second (read + written + discarded).
    pub sectors: f64,
    /// rqm/s
    pub merges: f64,
    /// await (ms)
    pub await_ms: f64,
    /// areq-sz (kB)
    pub req_kb: f64,
    /// aqu-sz
    pub aqu_sz: f64,
    /// %util
    pub util: f64,
}

struct Triple {
    ios: [(u64, u64); 3],
    merges: [(u64, u64); 3],
    sectors: [(u64, u64); 3],
    ticks: [(u32, u32); 3],
}

fn triple(p: &DiskCounters, c: &DiskCounters) -> Triple {
    Triple {
        ios: [
            (p.rd_ios, c.rd_ios),
            (p.wr_ios, c.wr_ios),
            (p.dc_ios, c.dc_ios),
        ],
        merges: [
            (p.rd_merges, c.rd_merges),
            (p.wr_merges, c.wr_merges),
            (p.dc_merges, c.dc_merges),
        ],
        sectors: [
            (p.rd_sectors, c.rd_sectors),
            (p.wr_sectors, c.wr_sectors),
            (p.dc_sectors, c.dc_sectors),
        ],
        ticks: [
            (p.rd_ticks, c.rd_ticks),
            (p.wr_ticks, c.wr_ticks),
            (p.dc_ticks, c.dc_ticks),
        ],
    }
}

/// `%util` as sysstat prints it: busy ms over the interval, / 10, / the
/// number of devices it covers (1, or a group's member count).
fn util(p: &DiskCounters, c: &DiskCounters, itv: f64, devices: u32) -> f64 {
    rate32(p.tot_ticks, c.tot_ticks, itv) / 10.0 / f64::from(devices.max(1))
}

/// Computes the `-x` columns between two samples over `itv` hundredths of a
/// second. `devices` divides `%util` (1 for a device).
pub fn ext_stats(p: &DiskCounters, c: &DiskCounters, itv: f64, devices: u32) -> ExtStats {
    let t = triple(p, c);
    let mut s = ExtStats::default();
    for k in 0..3 {
        let (pi, ci) = t.ios[k];
        let (pm, cm) = t.merges[k];
        let (ps, cs) = t.sectors[k];
        let (pt, ct) = t.ticks[k];
        s.ios[k] = rate64(pi, ci, itv);
        s.sectors[k] = rate64(ps, cs, itv);
        s.merges[k] = rate64(pm, cm, itv);
        let dm = cm.wrapping_sub(pm);
        let di = ci.wrapping_sub(pi);
        let sum = dm.wrapping_add(di);
        s.merge_pct[k] = if sum != 0 {
            dm as f64 / sum as f64 * 100.0
        } else {
            0.0
        };
        if ci > pi {
            s.await_ms[k] = f64::from(ct.wrapping_sub(pt)) / di as f64;
            s.req_kb[k] = cs.wrapping_sub(ps) as f64 / di as f64 / 2.0;
        } else {
            s.req_kb[k] = 0.0 / 2.0;
        }
    }
    s.fl_ios = rate64(p.fl_ios, c.fl_ios, itv);
    if c.fl_ios > p.fl_ios {
        s.fl_await =
            f64::from(c.fl_ticks.wrapping_sub(p.fl_ticks)) / c.fl_ios.wrapping_sub(p.fl_ios) as f64;
    }
    s.aqu_sz = rate32(p.rq_ticks, c.rq_ticks, itv) / 1000.0;
    s.util = util(p, c, itv, devices);
    s
}

/// Computes the `-x -s` columns.
pub fn ext_short_stats(
    p: &DiskCounters,
    c: &DiskCounters,
    itv: f64,
    devices: u32,
) -> ExtShortStats {
    let t = triple(p, c);
    let sum3 = |v: &[(u64, u64); 3], cur: bool| {
        v.iter().fold(0u64, |acc, &(a, b)| {
            acc.wrapping_add(if cur { b } else { a })
        })
    };
    // As sysstat: tps and rqm/s are rates of the summed counters, kB/s the
    // sum of the three rates. The two round differently at the second
    // decimal now and then (merges 106294 + 199835 + 1906 in 4.16 s:
    // 74046.88 as one rate, 74046.87 as three).
    let (pn, cn) = (sum3(&t.ios, false), sum3(&t.ios, true));
    let tps = if cn < pn { 0.0 } else { s_value(cn - pn, itv) };
    let sectors = rate64(t.sectors[0].0, t.sectors[0].1, itv)
        + rate64(t.sectors[1].0, t.sectors[1].1, itv)
        + rate64(t.sectors[2].0, t.sectors[2].1, itv);
    let (pm, cm) = (sum3(&t.merges, false), sum3(&t.merges, true));
    let merges = if cm < pm { 0.0 } else { s_value(cm - pm, itv) };
    let (await_ms, req_kb) = if cn > pn {
        let dn = cn - pn;
        let ticks = t
            .ticks
            .iter()
            .fold(0u32, |acc, &(a, b)| acc.wrapping_add(b.wrapping_sub(a)));
        let secs = t
            .sectors
            .iter()
            .fold(0u64, |acc, &(a, b)| acc.wrapping_add(b.wrapping_sub(a)));
        (f64::from(ticks) / dn as f64, secs as f64 / dn as f64 / 2.0)
    } else {
        (0.0, 0.0 / 2.0)
    };
    ExtShortStats {
        tps,
        sectors,
        merges,
        await_ms,
        req_kb,
        aqu_sz: rate32(p.rq_ticks, c.rq_ticks, itv) / 1000.0,
        util: util(p, c, itv, devices),
    }
}

/// The basic (no `-x`) columns. Rates are in sectors per second; totals are
/// sector deltas. Nothing is clamped, as in sysstat.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BasicStats {
    /// tps (reads, writes and discards)
    pub tps: f64,
    /// Sectors per second read, written, discarded.
    pub rates: [f64; 3],
    /// Sectors read, written, discarded during the interval.
    pub totals: [u64; 3],
}

/// sysstat's delta for basic totals: u64 wrap, repaired to 32 bits when the
/// previous value fits in 32 bits (a counter that wrapped at 2^32).
fn total_delta(prev: u64, cur: u64) -> u64 {
    let d = cur.wrapping_sub(prev);
    if cur < prev && prev <= 0xffff_ffff {
        d & 0xffff_ffff
    } else {
        d
    }
}

/// Computes the basic columns.
pub fn basic_stats(p: &DiskCounters, c: &DiskCounters, itv: f64) -> BasicStats {
    let pn = p.rd_ios.wrapping_add(p.wr_ios).wrapping_add(p.dc_ios);
    let cn = c.rd_ios.wrapping_add(c.wr_ios).wrapping_add(c.dc_ios);
    let t = triple(p, c);
    let mut b = BasicStats {
        tps: s_value(cn.wrapping_sub(pn), itv),
        ..BasicStats::default()
    };
    for k in 0..3 {
        let (ps, cs) = t.sectors[k];
        b.rates[k] = s_value(cs.wrapping_sub(ps), itv);
        b.totals[k] = total_delta(ps, cs);
    }
    b
}

/// sysstat's "removed then re-added" test: the I/O count fell and every
/// sector counter either was 0 or fell too. Previous stats are then zeros.
pub fn looks_readded(p: &DiskCounters, c: &DiskCounters) -> bool {
    let sum = |d: &DiskCounters| {
        d.rd_ios
            .wrapping_add(d.wr_ios)
            .wrapping_add(d.dc_ios)
            .wrapping_add(d.fl_ios)
    };
    sum(c) < sum(p)
        && (p.rd_sectors == 0 || c.rd_sectors < p.rd_sectors)
        && (p.wr_sectors == 0 || c.wr_sectors < p.wr_sectors)
        && (p.dc_sectors == 0 || c.dc_sectors < p.dc_sectors)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sda_root1() -> DiskCounters {
        DiskCounters {
            rd_ios: 49601,
            rd_merges: 2822,
            rd_sectors: 3195498,
            rd_ticks: 623970,
            wr_ios: 12180,
            wr_merges: 9784,
            wr_sectors: 821088,
            wr_ticks: 117109,
            tot_ticks: 32862,
            rq_ticks: 714408,
            ..DiskCounters::default()
        }
    }

    #[test]
    fn first_report_matches_the_golden_x_values() {
        // sysstat's expected.iostat-x, sda line (uptime 7192.55 s).
        let s = ext_stats(&DiskCounters::default(), &sda_root1(), 719_255.0, 1);
        assert_eq!(format!("{:7.2}", s.ios[0]), "   6.90");
        assert_eq!(format!("{:9.2}", s.sectors[0] / 2.0), "   222.14");
        assert_eq!(format!("{:6.2}", s.merge_pct[0]), "  5.38");
        assert_eq!(format!("{:7.2}", s.await_ms[0]), "  12.58");
        assert_eq!(format!("{:8.2}", s.req_kb[0]), "   32.21");
        assert_eq!(format!("{:6.2}", s.merge_pct[1]), " 44.55");
        assert_eq!(format!("{:7.2}", s.aqu_sz), "   0.10");
        assert_eq!(format!("{:6.2}", s.util), "  0.46");
    }

    #[test]
    fn short_rqm_is_the_rate_of_the_summed_merges() {
        // Debian's iostat 12.6.1 -xs over these counters (uptime 4.16 s)
        // prints 74046.88; three rates summed give 74046.87.
        let c = DiskCounters {
            rd_merges: 106_294,
            wr_merges: 199_835,
            dc_merges: 1906,
            ..DiskCounters::default()
        };
        let s = ext_short_stats(&DiskCounters::default(), &c, 416.0, 1);
        assert_eq!(format!("{:.2}", s.merges), "74046.88");
        // Summed counters that went backwards give 0, as in sysstat.
        let s = ext_short_stats(&c, &DiskCounters::default(), 416.0, 1);
        assert_eq!(s.merges, 0.0);
    }

    #[test]
    fn backwards_counters_clamp_in_ext_but_not_in_basic() {
        let mut prev = sda_root1();
        prev.rd_ios += 100;
        prev.tot_ticks += 5;
        let s = ext_stats(&prev, &sda_root1(), 100.0, 1);
        assert_eq!(s.ios[0], 0.0);
        assert_eq!(s.await_ms[0], 0.0);
        assert_eq!(s.util, 0.0);
        let b = basic_stats(&prev, &sda_root1(), 100.0);
        assert_eq!(format!("{:.2}", b.tps), "18446744073709551616.00");
    }

    #[test]
    fn tick_fields_wrap_at_32_bits_and_totals_are_repaired() {
        let mut p = DiskCounters::default();
        let mut c = DiskCounters::default();
        p.rd_ios = 10;
        c.rd_ios = 12;
        p.rd_ticks = u32::MAX - 1;
        c.rd_ticks = 8;
        let s = ext_stats(&p, &c, 100.0, 1);
        assert_eq!(s.await_ms[0], 5.0);
        assert_eq!(total_delta(0xffff_fff0, 0x10), 0x20);
        assert_eq!(
            total_delta(0x1_0000_0000, 5),
            5u64.wrapping_sub(0x1_0000_0000)
        );
        // -xs await sums three u32 deltas in u32.
        p.wr_ios = 0;
        c.wr_ios = 2;
        p.wr_ticks = 0;
        c.wr_ticks = u32::MAX;
        let xs = ext_short_stats(&p, &c, 100.0, 1);
        // (10 + 0xffffffff) mod 2^32 = 9 ticks over 4 I/Os.
        assert_eq!(xs.await_ms, 9.0 / 4.0);
    }

    #[test]
    fn cpu_percentages_and_backwards_iowait() {
        let prev = CpuTicks {
            user: 96005,
            nice: 2578701,
            system: 53845,
            idle: 3617879,
            iowait: 60648,
            hardirq: 27891,
            softirq: 25853,
            ..CpuTicks::default()
        };
        let first = cpu_percent(&CpuTicks::default(), &prev);
        assert_eq!(format!("{:.2}", first.user), "1.49");
        assert_eq!(format!("{:.2}", first.system), "1.67");
        let mut cur = prev;
        cur.iowait -= 10;
        cur.idle += 90;
        let p = cpu_percent(&prev, &cur);
        assert_eq!(p.iowait, 0.0);
        // 90 idle ticks over a total of 80: sysstat does not cap.
        assert_eq!(p.idle, 112.5);
    }

    #[test]
    fn readded_heuristic() {
        let p = sda_root1();
        let mut c = DiskCounters {
            rd_ios: 3,
            rd_sectors: 10,
            wr_sectors: 10,
            ..DiskCounters::default()
        };
        assert!(looks_readded(&p, &c));
        c.wr_sectors = 900_000;
        assert!(!looks_readded(&p, &c));
        assert_eq!(interval_cs(5, 5), 1.0);
    }

    #[test]
    fn the_clock_times_what_uptime_cannot() {
        let ms = |n| Some(Duration::from_millis(n));
        assert_eq!(clock_interval_cs(ms(100), ms(113)), Some(1.3));
        assert_eq!(clock_interval_cs(None, ms(113)), None);
        assert_eq!(clock_interval_cs(ms(100), None), None);
        assert_eq!(clock_interval_cs(ms(100), ms(100)), None);
        assert_eq!(clock_interval_cs(ms(113), ms(100)), None);
        // 208 reads in 13 ms: 16,000 a second, where uptime's 1 or 2
        // hundredths made it 20,800 or 10,400.
        let p = DiskCounters::default();
        let c = DiskCounters {
            rd_ios: 208,
            ..DiskCounters::default()
        };
        let itv = clock_interval_cs(ms(100), ms(113)).unwrap();
        assert_eq!(basic_stats(&p, &c, itv).tps, 16_000.0);
        assert_eq!(basic_stats(&p, &c, interval_cs(0, 1)).tps, 20_800.0);
    }
}
