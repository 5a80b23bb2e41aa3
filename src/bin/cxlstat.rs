//! `cxlstat`: count CXL PMU events. See `docs/cxlstat.md`.

fn main() {
    hwstat::common::completion::answer_if_asked(hwstat::cxlstat::cli::command);
    std::process::exit(hwstat::cxlstat::app::main());
}
