//! A Rust program that only sleeps through an interval run's length: the
//! private memory the standard library, its start-up and the loader cost a
//! program before it does any work (bench/iostat.sh, "private floor").

fn main() {
    std::thread::sleep(std::time::Duration::from_secs(3));
}
