//! vcpustat trace: the Dispatch Trace Log turned into latency and a
//! physical-processor timeline.
//!
//! * [`entry`]: the 48-byte record, reason names, the meaning of `timebase`;
//! * [`ring`]: opening and reading the per-vCPU rings (live and simulated);
//! * [`record`] and [`recording`]: the recorder and its file format;
//! * [`safety`] and [`identity`]: kernel crash check, partition and clock;
//! * [`progress`]: the status line on a terminal;
//! * [`analysis`], [`stats`], [`topology`]: latency, reasons, migrations and
//!   the physical timeline of the method; [`overlaps`]: runs that overlap on
//!   a processor;
//! * [`report`]: the report's tables in each format, [`sections`] the
//!   summary tables and [`timeline`] the streamed timeline; [`cli`]: the
//!   command line, [`manual`] its manual sections; [`chart`]: the charts
//!   of `--svg`.
//!
//! The vcpustat binary embeds [`cli::TraceArgs`] as its `trace` subcommand
//! and calls [`cli::run_args`].

pub mod analysis;
pub mod chart;
pub mod cli;
pub mod entry;
pub mod error;
pub mod identity;
pub mod manual;
pub mod overlaps;
pub mod progress;
pub mod record;
pub mod recording;
pub mod report;
pub mod ring;
pub mod safety;
pub mod sections;
pub mod stats;
pub mod timeline;
pub mod topology;
