//! `cxlstat`: count CXL PMU events. See `docs/cxlstat.md`.

fn main() {
    std::process::exit(hwstat::cxlstat::app::main());
}
