//! vcpustat: POWER shared-processor dispatch statistics.
//!
//! * [`counters`]: the statistics file parsed into snapshots;
//! * [`report`]: per-interval deltas, the `all` row, selection and notes;
//! * [`render`]: aligned text and the machine-readable schema;
//! * [`chart`]: the charts of `--svg`;
//! * [`expose`]: the Prometheus exposition of 64-bit running totals;
//! * [`kernel`]: reading the state and writing the control files;
//! * [`restore`]: the plan of undo writes applied at exit;
//! * [`session`]: the record shared with other vcpustat runs;
//! * [`cli`] and [`app`]: the command line and the run;
//! * [`trace`]: the `vcpustat trace` subcommand (Dispatch Trace Log).

pub mod app;
pub mod chart;
pub mod cli;
pub mod counters;
pub mod error;
pub mod expose;
pub mod kernel;
pub mod manual;
pub mod render;
pub mod report;
pub mod restore;
pub mod session;
pub mod trace;
