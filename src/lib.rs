//! hwstat: `iostat-rs`, `vcpustat` and `cxlstat` over one sampling core.
//!
//! The [`common`] module is the core (sources, recordings, the interval
//! loop, counter deltas, signals and output writers); each tool has its own
//! module for parsing, computing and rendering, and a thin binary in
//! `src/bin/`.
#![deny(missing_docs)]

pub mod common;
pub mod cxlstat;
pub mod iostat;
pub mod vcpustat;
