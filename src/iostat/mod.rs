//! iostat-rs: sysstat's `iostat`, byte for byte, and beyond.
//!
//! * [`cli`]: the order-dependent command line into typed [`cli::Options`];
//! * [`parse`]: the kernel file parsers;
//! * [`devices`]: discovery, selection, order, groups, reading samples;
//! * [`heapsort`]: the sort of that order, small enough for the hot code;
//! * [`names`], [`lookup`]: device names, and name lookups on the hot path;
//! * [`named_dirs`]: the directories `-f` and `-j` need, checked in order;
//! * [`model`]: the formulas, from two samples;
//! * [`hotplug`]: the CPU shares of iostat-rs's own formats across CPU hotplug;
//! * [`fmt`]: fast fixed-width number formatting, identical to printf;
//! * [`latency`]: `--latency`, percentiles and queue depth from the block tracepoints;
//! * [`colors`]: sysstat's colours and which value gets which;
//! * [`report`], [`render_text`], [`render_json`], [`render_machine`]: output;
//! * [`render_svg`]: the charts of `--svg`;
//! * [`expose`]: the Prometheus exposition under node_exporter's names;
//! * [`app`]: one run, and the exit status.

pub mod app;
pub mod cli;
pub mod colors;
pub mod devices;
pub mod error;
pub mod expose;
pub mod fmt;
pub mod heapsort;
pub mod hotplug;
pub mod latency;
pub mod lookup;
pub mod manual;
pub mod model;
pub mod named_dirs;
pub mod names;
pub mod parse;
pub mod render_json;
pub mod render_machine;
pub mod render_svg;
pub mod render_text;
pub mod report;
