//! `iostat-rs`: report CPU and block device I/O statistics like sysstat's iostat.

fn main() {
    hwstat::common::completion::answer_if_asked(hwstat::iostat::cli::command);
    let status = hwstat::iostat::app::main_with_args(std::env::args().collect());
    std::process::exit(status);
}
