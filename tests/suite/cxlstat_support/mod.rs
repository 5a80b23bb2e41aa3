//! Shared helpers of the cxlstat integration tests: fixture paths, the
//! binary, and sysfs trees whose "CXL" PMUs are really the kernel's software
//! PMU (type 1), so real counting runs through perf_event_open anywhere.
#![allow(dead_code)]

use crate::skip;

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The checked-in fixture with two CXL memory devices.
pub fn two_memdevs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cxl/two-memdevs")
}

/// A golden output file.
pub fn golden(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/cxl/golden")
        .join(name);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Runs the cxlstat binary.
pub fn cxlstat(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cxlstat"))
        .args(args)
        .output()
        .expect("cxlstat runs")
}

/// Standard output as text.
pub fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("UTF-8 output")
}

/// Standard error as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("UTF-8 errors")
}

/// The cxl_pmu format files, as the driver writes them.
pub const CXL_FORMAT: [(&str, &str); 8] = [
    ("mask", "config:0-31"),
    ("gid", "config:32-47"),
    ("vid", "config:48-63"),
    ("threshold", "config1:0-15"),
    ("invert", "config1:16"),
    ("edge", "config1:17"),
    ("hdm_filter_en", "config1:18"),
    ("hdm", "config2:0-15"),
];

pub use crate::scratch::Scratch;

/// A fresh empty directory for one cxlstat test, removed when dropped.
pub fn scratch(name: &str) -> Scratch {
    crate::scratch::scratch(&format!("cxlstat-{name}"))
}

/// Builds a sysfs tree under `root` with one PMU per `(name, cpu)`, each of
/// type 1 (the software PMU) with the CXL format files and two events:
/// `cpu_clock` (config 0, PERF_COUNT_SW_CPU_CLOCK) and `context_switches`
/// (config 3, PERF_COUNT_SW_CONTEXT_SWITCHES).
pub fn software_tree(root: &Path, pmus: &[(&str, usize)]) {
    for (name, cpu) in pmus {
        let real = root.join(format!("sys/devices/virtual/{name}"));
        fs::create_dir_all(real.join("format")).unwrap();
        fs::create_dir_all(real.join("events")).unwrap();
        fs::write(real.join("type"), "1\n").unwrap();
        fs::write(real.join("cpumask"), format!("{cpu}\n")).unwrap();
        for (field, text) in CXL_FORMAT {
            fs::write(real.join("format").join(field), format!("{text}\n")).unwrap();
        }
        fs::write(real.join("events/cpu_clock"), "config=0x0\n").unwrap();
        fs::write(real.join("events/context_switches"), "config=0x3\n").unwrap();
        let bus = root.join("sys/bus/event_source/devices");
        fs::create_dir_all(&bus).unwrap();
        symlink(format!("../../../devices/virtual/{name}"), bus.join(name)).unwrap();
    }
}

/// The CPUs a software tree can use: 0, and 1 when the machine has it.
pub fn test_cpus() -> Vec<usize> {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    (0..n.min(2)).collect()
}

/// Whether system-wide perf counting works here. When it does not, a test
/// may skip (printing why) unless `CI=true`, where it must run and fail.
pub fn perf_usable(test: &str) -> bool {
    use hwstat::common::perf;
    // PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK.
    let mut attr = perf::PerfEventAttr::default();
    attr.type_ = 1;
    attr.size = perf::PERF_ATTR_SIZE;
    attr.flags = perf::FLAG_DISABLED;
    match perf::open(&attr, -1, 0, None, perf::FLAG_FD_CLOEXEC) {
        Ok(_) => true,
        Err(e) if matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM)) => {
            skip::skip(
                test,
                &format!(
                    "system-wide perf_event_open fails here ({e}); run as root or with CAP_PERFMON"
                ),
            );
            false
        }
        Err(_) => true,
    }
}

/// Copies `from` to `to` in a `cp` process, for a file a test then
/// executes. Written by this process, the file would be open for writing
/// for a moment, and a child another test thread forks in that moment
/// inherits the descriptor until it execs: executing the file then fails
/// with ETXTBSY (`setpriv` exited 126 with the suite on 8 threads beside
/// 8 busy loops).
pub fn copy_executable(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp runs");
    assert!(status.success(), "cp {} {}", from.display(), to.display());
}
