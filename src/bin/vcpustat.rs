//! `vcpustat`: POWER shared-processor LPAR dispatch statistics.
//!
//! No Rust `main`: the program starts in [`hwstat::common::entry::run`],
//! whose documentation says why.
#![no_main]

use std::ffi::{c_char, c_int};

#[unsafe(no_mangle)]
extern "C" fn main(_argc: c_int, _argv: *const *const c_char) -> c_int {
    hwstat::common::entry::run(|| {
        hwstat::common::completion::answer_if_asked(hwstat::vcpustat::cli::command);
        hwstat::vcpustat::app::main()
    })
}
