//! `vcpustat`: POWER shared-processor LPAR dispatch statistics.

fn main() {
    hwstat::common::completion::answer_if_asked(hwstat::vcpustat::cli::command);
    std::process::exit(hwstat::vcpustat::app::main());
}
