//! Links the stack unwinder that Rust's standard library calls (libgcc's
//! `_Unwind_*`) from gcc's static `libgcc_eh.a` instead of the shared
//! `libgcc_s.so.1`.
//!
//! Why: loading `libgcc_s.so.1` runs its CPU-feature constructor
//! (`__cpu_indicator_init`, a series of `cpuid` instructions, each a trap
//! to the hypervisor in a VM) and maps one more library. Measured on the
//! 2-core Firecracker VM (BENCHMARKS.md, "Start-up"): 0.13 ms of the
//! ~1 ms an `iostat-rs -x` run costs, more than the program's own code.
//! gcc ships `libgcc_eh.a` with the compiler itself (no static C library
//! is needed, on Debian as on Fedora), and the unwinder behaves the same:
//! panics still unwind (vcpustat relies on it) and backtraces still print.
//! Only glibc targets get this; elsewhere the standard library's own
//! choice stands.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        // `-bundle`: passed to the final link, ahead of the standard
        // library's `-lgcc_s`, which `--as-needed` then leaves out.
        println!("cargo:rustc-link-lib=static:-bundle=gcc_eh");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
