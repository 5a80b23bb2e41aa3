//! Steady state allocates nothing: a whole cxlstat run (the real options,
//! interval loop, counter reads and text output) with 23 intervals makes no
//! more allocations than one with 3. Counted with a global allocator that
//! counts on the test's thread only.

#[path = "suite/cxlstat_support/mod.rs"]
mod cxlstat_support;
// The suite's skip helpers; this program uses only `skip`.
#[allow(dead_code)]
#[path = "suite/skip.rs"]
mod skip;
// The suite's scratch directories, which cxlstat_support makes.
#[path = "suite/scratch.rs"]
mod scratch;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use clap::Parser;
use cxlstat_support::{perf_usable, scratch, software_tree};
use hwstat::common::signals::StopSignal;
use hwstat::cxlstat::app::run;
use hwstat::cxlstat::cli::{Args, Options};

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

// SAFETY: every call is forwarded to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made by a full run with `count` reports of 20 ms.
fn allocations_for(root: &str, count: &str) -> u64 {
    let args = [
        "cxlstat",
        "--sysroot",
        root,
        "-e",
        "cpu_clock,context_switches",
        "-e",
        "{cpu_clock,context_switches}",
        "0.02",
        count,
    ];
    let options = Options::from_args(Args::try_parse_from(args).unwrap()).unwrap();
    let raw: Vec<String> = args[1..].iter().map(|s| s.to_string()).collect();
    let mut sink = std::io::sink();
    let stop = StopSignal::install().unwrap();
    ALLOCATIONS.store(0, Ordering::Relaxed);
    COUNTING.with(|c| c.set(true));
    let status = run(&options, &raw, &mut sink, &stop);
    COUNTING.with(|c| c.set(false));
    assert_eq!(status.unwrap(), 0);
    ALLOCATIONS.load(Ordering::Relaxed)
}

#[test]
fn intervals_allocate_nothing_in_steady_state() {
    if !perf_usable("intervals_allocate_nothing") {
        return;
    }
    let root = scratch("alloc");
    software_tree(&root, &[("cxl_pmu_mem0.0", 0), ("cxl_pmu_mem1.0", 0)]);
    let root = root.to_str().unwrap();
    // Each run installs stop-signal handlers into signal-hook-registry's
    // process-wide registry, which may grow: the longer run goes first so
    // that such one-off growth can only make the shorter run look worse.
    let long = allocations_for(root, "23");
    let short = allocations_for(root, "3");
    assert!(
        short > 0,
        "the counting allocator must see setup allocations"
    );
    assert!(
        long <= short,
        "20 more intervals made {} more allocations ({long} vs {short})",
        long as i64 - short as i64
    );
}
