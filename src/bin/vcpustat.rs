//! `vcpustat`: POWER shared-processor LPAR dispatch statistics.
//!
//! No Rust `main`: see [`hwstat::common::entry`].
#![no_main]

hwstat::program_main!(hwstat::vcpustat::app::PROGRAM);
