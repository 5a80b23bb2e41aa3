//! `cxlstat`: count CXL PMU events. See `docs/cxlstat.md`.
//!
//! No Rust `main`: see [`hwstat::common::entry`].
#![no_main]

hwstat::program_main!(hwstat::cxlstat::app::PROGRAM);
