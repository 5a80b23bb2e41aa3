//! The smallest Rust program that does iostat's job at an interval: reads
//! /proc/diskstats every INTERVAL seconds, COUNT times, and prints each
//! device's reads and writes per second, using only the standard library.
//! bench/iostat.sh measures its private memory beside sysstat's and
//! iostat-rs's ("private floor").

use std::io::Write;
use std::time::Duration;

fn counters() -> Vec<(String, u64, u64)> {
    let text = std::fs::read_to_string("/proc/diskstats").unwrap_or_default();
    let field = |f: &[&str], i: usize| f.get(i).and_then(|v| v.parse().ok()).unwrap_or(0);
    text.lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .filter(|f| f.len() > 7)
        .map(|f| (f[2].to_string(), field(&f, 3), field(&f, 7)))
        .collect()
}

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| !a.starts_with('-'));
    let interval: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
    let count: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
    let mut out = std::io::stdout().lock();
    let mut before = Vec::new();
    for report in 0..count {
        let now = counters();
        for (i, (name, reads, writes)) in now.iter().enumerate() {
            let (r0, w0) = before
                .get(i)
                .map_or((0, 0), |(_, r, w): &(String, u64, u64)| (*r, *w));
            let per_s = |a: u64, b: u64| a.saturating_sub(b) / interval.max(1);
            let _ = writeln!(
                out,
                "{name:<12} {:>10} {:>10}",
                per_s(*reads, r0),
                per_s(*writes, w0)
            );
        }
        let _ = writeln!(out).and_then(|()| out.flush());
        before = now;
        if report + 1 < count {
            std::thread::sleep(Duration::from_secs(interval));
        }
    }
}
