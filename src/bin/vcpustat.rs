//! `vcpustat`: POWER shared-processor LPAR dispatch statistics.

fn main() {
    std::process::exit(hwstat::vcpustat::app::main());
}
