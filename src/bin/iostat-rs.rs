//! `iostat-rs`: report CPU and block device I/O statistics like sysstat's iostat.
//!
//! No Rust `main`: see [`hwstat::common::entry`].
#![no_main]

hwstat::program_main!(hwstat::iostat::app::PROGRAM);
