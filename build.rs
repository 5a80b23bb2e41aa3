//! Two link-time choices for the programs.
//!
//! **The unwinder from `libgcc_eh.a`.** The stack unwinder that Rust's
//! standard library calls (libgcc's `_Unwind_*`) is linked from gcc's
//! static `libgcc_eh.a` instead of the shared `libgcc_s.so.1`. Why: loading
//! `libgcc_s.so.1` runs its CPU-feature constructor (`__cpu_indicator_init`,
//! a series of `cpuid` instructions, each a trap to the hypervisor in a VM)
//! and maps one more library. Measured on the 2-core Firecracker VM
//! (BENCHMARKS.md, "Start-up"): 0.13 ms of the ~1 ms an `iostat-rs -x` run
//! costs, more than the program's own code. gcc ships `libgcc_eh.a` with the
//! compiler itself (no static C library is needed, on Debian as on Fedora),
//! and the unwinder behaves the same: panics still unwind (vcpustat relies
//! on it) and backtraces still print. Only glibc targets get this;
//! elsewhere the standard library's own choice stands.
//!
//! **Hot code first.** `link/hot-functions.txt` lists the functions usual
//! runs execute (written by `link/profile.sh`); the linker places them
//! together at the start of the text. The kernel maps text 64 kB around
//! each page a run touches, so with the hot code scattered through 2 MB of
//! text nearly all of it was resident in every run; placed together, a run
//! keeps about a fifth of it (BENCHMARKS.md, "Hot code first"). Only LLD
//! takes a symbol ordering file, so the option is given only when the
//! linker rustc uses for this target is LLD (Rust's default for
//! x86_64 GNU/Linux since 1.90); with another linker the build is the same
//! as before, in another order.

use std::env;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The list of hot functions, relative to the package.
const HOT_FUNCTIONS: &str = "link/hot-functions.txt";

fn main() {
    let os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let target_env = env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && target_env == "gnu" {
        // `-bundle`: passed to the final link, ahead of the standard
        // library's `-lgcc_s`, which `--as-needed` then leaves out.
        println!("cargo:rustc-link-lib=static:-bundle=gcc_eh");
    }
    if os == "linux" && links_with_lld() {
        let list =
            Path::new(&env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default()).join(HOT_FUNCTIONS);
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            list.display()
        );
        // Names the list has and a program does not (each program uses
        // part of the list; a dependency upgrade renames some) are skipped.
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
        // Tells tests/suite/layout.rs that the order was asked for.
        println!("cargo:rustc-env=HWSTAT_HOT_FUNCTIONS_FIRST=1");
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed={HOT_FUNCTIONS}");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
}

/// Whether rustc links this target's programs with LLD: asks rustc to link
/// an empty program with this build's flags and reads the link command it
/// prints. Any failure counts as "no".
fn links_with_lld() -> bool {
    let (Some(rustc), Some(out_dir), Ok(target)) = (
        env::var_os("RUSTC"),
        env::var_os("OUT_DIR"),
        env::var("TARGET"),
    ) else {
        return false;
    };
    let mut command = Command::new(rustc);
    command
        .args([
            "--target",
            &target,
            "--crate-type",
            "bin",
            "--crate-name",
            "lld_probe",
        ])
        .args(["--print", "link-args", "-o"])
        .arg(PathBuf::from(out_dir).join("lld_probe"))
        .arg("-");
    // The flags and linker this build uses (RUSTFLAGS, config, --config).
    if let Ok(flags) = env::var("CARGO_ENCODED_RUSTFLAGS") {
        command.args(flags.split('\x1f').filter(|flag| !flag.is_empty()));
    }
    if let Some(linker) = env::var_os("RUSTC_LINKER") {
        command.arg("-C").arg({
            let mut option = std::ffi::OsString::from("linker=");
            option.push(linker);
            option
        });
    }
    let Ok(mut child) = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
    else {
        return false;
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(b"fn main() {}\n");
    }
    match child.wait_with_output() {
        Ok(output) if output.status.success() => {
            let command_line = String::from_utf8_lossy(&output.stdout);
            command_line.contains("-fuse-ld=lld") || command_line.contains("ld.lld")
        }
        _ => false,
    }
}
