//! Benchmark: one vcpustat interval of 4,096 vCPUs — parse the statistics
//! file, compute the deltas, the `all` row and the order, render the text
//! or add it to the charts — in CPU time (CLOCK_PROCESS_CPUTIME_ID).
//! Target: under 2 ms.
//!
//! Run with `cargo bench --bench vcpustat`.

mod support;

use std::hint::black_box;
use std::time::{Duration, UNIX_EPOCH};
use support::cpu_time;

use hwstat::common::output::{Format, Frame, writer_for};
use hwstat::vcpustat::chart::VcpuCharts;
use hwstat::vcpustat::counters::{self, CpuCounters, Snapshot};
use hwstat::vcpustat::render::{TextRenderer, View, machine_rows, schema};
use hwstat::vcpustat::report::{Report, Selection, SortKey, interval_report};

const CPUS: u32 = 4096;
const ITERATIONS: usize = 400;

/// A statistics file of `CPUS` lines with realistic magnitudes, `age`
/// intervals after enabling.
fn stats_file(age: u64) -> String {
    let mut out = String::with_capacity(CPUS as usize * 64);
    for cpu in 0..CPUS {
        let seed = u64::from(cpu) * 7919 % 1000;
        let total = 1_000_000 + seed * 1000 + age * (500 + seed);
        let home = total - total / (50 + seed % 50);
        let adj = (total - home) * 2 / 3;
        let far = total - home - adj - (seed % 3);
        let core = total / 2;
        let chip = total / 3;
        let socket = total / 10;
        let cec = total - core - chip - socket;
        out.push_str(&format!(
            "cpu{cpu} {total} {core} {chip} {socket} {cec} {home} {adj} {far}\n"
        ));
    }
    out
}

fn measure(name: &str, mut interval: impl FnMut() -> usize) {
    let mut samples = Vec::with_capacity(ITERATIONS);
    for _ in 0..20 {
        black_box(interval());
    }
    for _ in 0..ITERATIONS {
        let start = cpu_time();
        black_box(interval());
        samples.push(cpu_time() - start);
    }
    samples.sort();
    let median = samples[samples.len() / 2];
    let p95 = samples[samples.len() * 95 / 100];
    let mean = samples.iter().sum::<Duration>() / samples.len() as u32;
    println!(
        "{name:<44} median {:>6.3} ms  mean {:>6.3} ms  p95 {:>6.3} ms  (CPU, {ITERATIONS} runs, target < 2 ms)",
        median.as_secs_f64() * 1e3,
        mean.as_secs_f64() * 1e3,
        p95.as_secs_f64() * 1e3,
    );
}

/// Parses `text` into `current` and computes the interval's report from
/// `previous`: the path every measurement but the first starts with.
fn report_of(
    text: &[u8],
    previous: &[CpuCounters],
    current: &mut Vec<CpuCounters>,
    selection: &Selection,
) -> Report {
    counters::parse_into(text, current).unwrap();
    interval_report(previous, current, Some(Duration::from_secs(1)), selection)
}

fn main() {
    let previous_text = stats_file(10);
    let current_text = stats_file(11).into_bytes();
    let Snapshot::On(previous) = counters::parse(previous_text.as_bytes()).unwrap() else {
        panic!("the generated file is on")
    };
    let mut current = Vec::new();
    let mut out = Vec::new();
    measure("4096 vCPUs, parse only", || {
        counters::parse_into(&current_text, &mut current).unwrap();
        current.len()
    });
    let selection = Selection::default();
    measure("4096 vCPUs, parse + deltas + all row", || {
        report_of(&current_text, &previous, &mut current, &selection)
            .rows
            .len()
    });
    for (name, view, sort) in [
        (
            "4096 vCPUs, percent view, by cpu",
            View::Percent,
            SortKey::Cpu,
        ),
        (
            "4096 vCPUs, numeric view, by home ratio",
            View::Numeric,
            SortKey::Home,
        ),
    ] {
        let renderer = TextRenderer::new(view, None);
        let selection = Selection {
            sort,
            ..Selection::default()
        };
        measure(name, || {
            let report = report_of(&current_text, &previous, &mut current, &selection);
            out.clear();
            renderer.render(&mut out, UNIX_EPOCH, &report);
            out.len()
        });
    }
    // A replay's charts (`--svg`): each report added to them, drawn only
    // at the end, which is not measured here.
    let mut charts = VcpuCharts::new("unwritten.svg".into(), String::new(), false, false);
    measure("4096 vCPUs, added to the --svg charts", || {
        let report = report_of(&current_text, &previous, &mut current, &selection);
        charts.sample(UNIX_EPOCH, &report).unwrap();
        report.rows.len()
    });
    let mut json = writer_for(Format::Ndjson, schema(), ",");
    measure("4096 vCPUs, NDJSON through the core writer", || {
        let report = report_of(&current_text, &previous, &mut current, &selection);
        let rows = machine_rows(&report);
        out.clear();
        let frame = Frame {
            time: UNIX_EPOCH,
            index: 0,
            rows: &rows,
            notes: &report.notes,
        };
        json.frame(&mut out, &frame).unwrap();
        out.len()
    });
}
