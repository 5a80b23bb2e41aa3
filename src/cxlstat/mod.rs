//! cxlstat: CXL PMU discovery and counting.
//!
//! * [`sysfs`] finds the `cxl_pmu_*` PMUs and their memory devices;
//! * [`format`](mod@format) parses `format/` files and writes fields into config words;
//! * [`events`] parses terms and `events/` files, [`spec`] the `-e` grammar;
//! * [`catalogue`] holds the events the kernel names, for `--list-events`,
//!   and [`suggest`] the names closest to a mistyped one;
//! * [`resolve`] turns specifications into `perf_event_attr` values per PMU;
//! * [`counting`] opens and reads the counters through [`perf`](crate::common::perf) (the
//!   kernel's perf ABI for each architecture), [`stats`] turns readings
//!   into scaled per-interval values;
//! * [`expose`] writes the Prometheus exposition of the cumulative readings;
//! * [`render`] prints listings, dry runs and counts, [`chart`] draws
//!   the rates (`--svg`); [`manual`] is the manual beyond the options;
//! * [`cli`] holds the options, [`app`] runs them (a command's lifetime:
//!   `workload`), and [`error`] holds their errors, each a one-line message.

pub mod app;
pub mod catalogue;
pub mod chart;
pub mod cli;
pub mod counting;
pub mod error;
pub mod events;
pub mod expose;
pub mod format;
pub mod manual;
pub mod render;
pub mod resolve;
pub mod spec;
pub mod stats;
pub mod suggest;
pub mod sysfs;
mod workload;
