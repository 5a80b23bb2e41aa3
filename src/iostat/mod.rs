//! iostat-rs: sysstat's `iostat`, byte for byte, and beyond.
//!
//! * [`cli`]: the order-dependent command line into typed [`cli::Options`];
//! * [`parse`]: the kernel file parsers;
//! * [`devices`]: discovery, selection, order, groups and names;
//! * [`model`]: the formulas, from two samples;
//! * [`fmt`]: fast fixed-width number formatting, identical to printf;
//! * [`report`], [`render_text`], [`render_json`], [`render_machine`]: output;
//! * [`app`]: one run, and the exit status.

pub mod app;
pub mod cli;
pub mod devices;
pub mod error;
pub mod fmt;
pub mod model;
pub mod parse;
pub mod render_json;
pub mod render_machine;
pub mod render_text;
pub mod report;
