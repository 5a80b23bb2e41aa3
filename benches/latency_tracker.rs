//! Benchmark: the `--latency` tracker's cost per block request — one
//! `block_rq_issue` and one `block_rq_complete` matched, the queue-depth
//! clock moved twice (its steps added to a histogram at the next drain)
//! and the latency added to a histogram — with 32 requests in flight on
//! each of two devices at random sectors, as fio's 4 KiB random reads at
//! queue depth 32 give it. In CPU time
//! (CLOCK_PROCESS_CPUTIME_ID). This is the per-I/O work of iostat-rs's
//! latency thread besides reading the rings (bench/latency.sh measures
//! the whole program against fio).
//!
//! Run with `cargo bench --bench latency_tracker`.

mod support;

use std::collections::VecDeque;
use std::hint::black_box;
use std::time::Duration;
use support::cpu_time;

use hwstat::iostat::latency::tracker::{Op, Tracker, dev_of};

const REQUESTS: u64 = 4_000_000;
const DEPTH: usize = 32;
const ROUNDS: usize = 5;

/// A xorshift generator: the sectors only need to be scattered.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// Issues and completes `REQUESTS` requests; returns the CPU time.
fn one_round() -> Duration {
    let devs = [dev_of(7, 0), dev_of(7, 1)];
    let mut tracker = Tracker::new(0);
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut inflight: [VecDeque<u64>; 2] = Default::default();
    let mut now = 0u64;
    let start = cpu_time();
    for i in 0..REQUESTS {
        let d = (i % 2) as usize;
        now += 4_000;
        let sector = (next(&mut rng) % (1 << 21)) * 8;
        tracker.issue(now, devs[d], sector, 8, Op::Read);
        inflight[d].push_back(sector);
        if inflight[d].len() > DEPTH {
            let done = inflight[d].pop_front().unwrap_or_default();
            tracker.complete(now + 1_000, devs[d], done, 8);
        }
        // Every 100 ms of this clock a drain adds the depth so far to the
        // histograms (no disk compared: no request is ever lost here).
        if i % 25_000 == 0 {
            tracker.settle_unread(now);
        }
        if i % 1_000_000 == 0 {
            black_box(tracker.take(now + 2_000));
        }
    }
    black_box(tracker.take(now + 2_000));
    cpu_time() - start
}

fn main() {
    let mut best = Duration::MAX;
    for _ in 0..ROUNDS {
        best = best.min(one_round());
    }
    let per_request = best.as_nanos() as f64 / REQUESTS as f64;
    println!(
        "tracker: {per_request:.1} ns of CPU per request (issue + completion), \
         best of {ROUNDS} rounds of {REQUESTS} requests"
    );
}
