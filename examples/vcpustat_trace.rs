//! `vcpustat trace` on its own, until the vcpustat binary mounts it:
//! `cargo run --example vcpustat_trace -- report FILE...`.
//!
//! This is exactly what the binary does with its `trace` subcommand:
//! mount `hwstat::vcpustat::trace::command()` and pass its matches to
//! `hwstat::vcpustat::trace::run`, which returns the exit status.

fn main() {
    let matches = hwstat::vcpustat::trace::command().get_matches();
    std::process::exit(hwstat::vcpustat::trace::run(&matches));
}
