//! The integration tests, as one test program.
//!
//! One program instead of one per file: each test program links the library,
//! the standard library and the test-only crates again, and with thirty of
//! them that linking was most of the time `cargo test` took on a
//! clean clone (BENCHMARKS.md). Three stay apart: `tests/cxlstat_alloc.rs`
//! installs its own global allocator, `tests/perf_abi.rs` is also built
//! and run for other architectures by `.ci/cross`, and `tests/cpu_hotplug.rs`
//! takes CPU 1 offline, which the suite's tests running beside it would
//! feel (cargo runs test programs one after another).
//!
//! Each module is one subject; run one with a filter on its name, e.g.
//! `cargo test --test suite vcpustat_fuse::`.
//!
//! libtest starts the tests in the order of their names, as many at once
//! as `RUST_TEST_THREADS` (16, `.cargo/config.toml`). `block_latency`'s
//! name puts its tests first on purpose: eleven of them drive I/O one at
//! a time (44 s in a row alone, the suite's longest chain, run at nice
//! -20 above the rest), so they must start at once, and the threads left
//! over run everything else beside them (BENCHMARKS.md, "The test
//! command", sessions 53 and 61).

// The environment every test starts from.
mod environment;

// Helpers shared by several subjects.
mod cxlstat_support;
mod fakekernel;
mod file_capabilities;
mod fuse;
mod listening;
mod loopdev;
mod namespace;
mod nobody_perf;
mod pipes;
mod procstate;
mod samplefs;
mod scratch;
mod simkernel;
mod skip;
mod slowdisk;
mod slowproc;
mod sysstat_compare;

mod automount;
mod block_latency;
mod charts;
mod charts_edge;
mod completions;
mod cxlstat_cli;
mod cxlstat_compat;
mod cxlstat_counting;
mod cxlstat_perf_parity;
mod cxlstat_privileges;
mod cxlstat_replay;
mod cxlstat_resolve;
mod cxlstat_workload;
mod differential_sysstat;
mod error_lines;
mod file_modes;
mod files_sections;
mod format_names;
mod generated_docs;
mod hardening;
mod hostile_files;
mod hostile_names;
mod interval_limits;
mod iostat_colors;
mod iostat_device_names;
mod iostat_faults;
mod iostat_machine_formats;
mod iostat_privileges;
mod iostat_record_replay;
mod iostat_usage_order;
mod layout;
mod listen_limits;
mod locales;
mod out_of_memory;
mod prometheus_exposition;
mod prometheus_listen;
mod prometheus_real;
mod prometheus_rules;
mod properties;
mod pseries_sim;
mod recording_ends;
mod recording_refusals;
mod recordings;
mod set_id;
mod sysstat_conformance;
mod trace_cli;
mod trace_sim;
mod vcpustat_compat;
mod vcpustat_fixture;
mod vcpustat_fuse;
mod vcpustat_sessions;
