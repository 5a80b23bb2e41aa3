//! Every kernel file a run opens, lists or probes is named in the FILES
//! section of its program's man page: the list an administrator reads
//! before running the tool as root. The account of each run is strace's,
//! not the program's own (its recordings hold only what goes through its
//! file source), and the runs take the usual paths of each tool: iostat-rs
//! on this machine's devices (with `--latency` in a mount namespace with
//! tracefs), vcpustat and `vcpustat trace record` on the simulated pseries
//! kernel, cxlstat on the fixture PMUs.

use crate::namespace;
use crate::nobody_perf::MOUNT_TRACEFS;
use crate::scratch::scratch;
use crate::simkernel::{self, Kernel};
use crate::skip;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Stdio};

const IOSTAT: &str = env!("CARGO_BIN_EXE_iostat-rs");
const VCPUSTAT: &str = env!("CARGO_BIN_EXE_vcpustat");
const CXLSTAT: &str = env!("CARGO_BIN_EXE_cxlstat");

/// What the runs below need, or why they cannot run here.
fn unavailable() -> Option<String> {
    if Command::new("strace").arg("-V").output().is_err() {
        return Some("`strace` is not installed (Debian: apt-get install strace)".into());
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("needs root (mount namespaces, FUSE, tracefs)".into());
    }
    namespace::unavailable().or_else(simkernel::unavailable)
}

/// strace's options before the traced program: every call naming a file,
/// and directory listings, of every thread, with whole strings, into
/// `log`. Not `-z` (successful calls only): strace 6.1 then drops the
/// second line of a call it logged in two ([`paths_in_log`] leaves the
/// failed ones out).
fn strace_options(log: &Path) -> Vec<String> {
    [
        "-f",
        "-qq",
        "-s",
        "65536",
        "-e",
        "trace=%file,getdents64",
        "-o",
    ]
    .map(String::from)
    .into_iter()
    .chain([log.display().to_string(), "--".into()])
    .collect()
}

/// strace in front of `program args`.
fn strace(log: &Path, program: &str, args: &[&str]) -> Command {
    let mut command = Command::new("strace");
    command.args(strace_options(log)).arg(program).args(args);
    command
}

/// A traced run: the paths of its log, as [`paths_in_log`] gives them,
/// and what the program (and strace) wrote on standard error.
struct Traced {
    paths: BTreeSet<String>,
    stderr: String,
}

/// Runs `command` (strace in front of a program).
fn traced(mut command: Command, log: &Path) -> Traced {
    let out = command.stdin(Stdio::null()).output().expect("strace runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let log_text = std::fs::read_to_string(log)
        .unwrap_or_else(|e| panic!("{}: {e}; strace: {stderr}", log.display()));
    assert!(!log_text.is_empty(), "strace logged nothing: {stderr}");
    Traced {
        paths: paths_in_log(&log_text),
        stderr,
    }
}

/// The absolute paths that an strace log's calls name, as the program
/// wrote them (symbolic links not resolved): a path argument, joined to
/// its directory descriptor's path for the `*at` calls, and the directory
/// a `getdents64` lists. Programs started by `execve` and failed calls
/// are left out.
fn paths_in_log(log: &str) -> BTreeSet<String> {
    let mut descriptors: BTreeMap<String, String> = BTreeMap::new();
    let mut paths = BTreeSet::new();
    // With -f, a call interrupted by another thread's is logged in two
    // lines, `PID name(args <unfinished ...>` and later `PID <... name
    // resumed>args) = result`: the first parts, by PID.
    let mut unfinished: BTreeMap<&str, &str> = BTreeMap::new();
    for line in log.lines() {
        // `PID  name(args) = result`, the PID there with -f.
        let call = line.trim_start_matches(|c: char| c.is_ascii_digit());
        let pid = &line[..line.len() - call.len()];
        let call = call.trim_start();
        if let Some(begun) = call.strip_suffix(" <unfinished ...>") {
            unfinished.insert(pid, begun);
            continue;
        }
        let joined;
        let call = match call
            .strip_prefix("<... ")
            .and_then(|c| c.split_once(" resumed>"))
        {
            Some((_, end)) => match unfinished.remove(pid) {
                Some(begun) => {
                    joined = format!("{begun}{end}");
                    joined.as_str()
                }
                None => continue,
            },
            None => call,
        };
        let Some((name, rest)) = call.split_once('(') else {
            continue;
        };
        // strace pads a short call's result to a column: `f(x)     = 0`.
        let Some((args, result)) = rest
            .rsplit_once(" = ")
            .and_then(|(args, result)| Some((args.trim_end().strip_suffix(')')?, result)))
        else {
            continue;
        };
        // A failed call used no file.
        if name == "execve" || result.starts_with('-') {
            continue;
        }
        let first_arg = args.split(',').next().unwrap_or("");
        if name == "getdents64" {
            if let Some(dir) = descriptors.get(first_arg) {
                paths.insert(dir.clone());
            }
            continue;
        }
        let Some(named) = quoted(args) else {
            continue;
        };
        let path = if named.starts_with('/') {
            named
        } else if let Some(dir) = descriptors.get(first_arg) {
            if named.is_empty() {
                dir.clone()
            } else {
                format!("{dir}/{named}")
            }
        } else {
            // Relative to the working directory: not a kernel file.
            continue;
        };
        if name.starts_with("open") || name == "creat" {
            let fd = result.split(' ').next().unwrap_or("");
            descriptors.insert(fd.to_string(), path.clone());
        }
        paths.insert(path);
    }
    paths
}

/// The first double-quoted string of `args`, its escapes undone.
fn quoted(args: &str) -> Option<String> {
    let start = args.find('"')? + 1;
    let mut out = String::new();
    let mut chars = args[start..].chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => out.push(chars.next()?),
            c => out.push(c),
        }
    }
    None
}

/// The kernel files a run used: under `root` (a --sysroot), the paths
/// below it with the root taken off; without one, those under /proc,
/// /sys, /dev, /run and /boot. The process's own /proc/self and /dev/null
/// are not the kernel's state.
fn kernel_files(run: &Traced, root: Option<&Path>) -> BTreeSet<String> {
    run.paths
        .iter()
        .filter_map(|path| match root {
            Some(root) => path
                .strip_prefix(&root.display().to_string())
                .filter(|rest| rest.starts_with('/'))
                .map(str::to_string),
            None => Some(path.clone()),
        })
        .filter(|path| {
            ["/proc/", "/sys/", "/dev/", "/run/", "/boot/"]
                .iter()
                .any(|top| path.starts_with(top))
        })
        .filter(|path| !path.starts_with("/proc/self/") && path != "/dev/null")
        .collect()
}

/// The paths the FILES section of `man/PAGE` names, as patterns: `*`,
/// `N`, `X`, `Y`, `MAJOR:MINOR`, `RELEASE` and `DEVICE` stand for any part
/// of a name.
fn files_section(page: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("man").join(page);
    let man = std::fs::read_to_string(&path).unwrap();
    let section = man
        .split(".SH \"FILES\"")
        .nth(1)
        .unwrap_or_else(|| panic!("{}: no FILES section", path.display()));
    let section = section.split("\n.SH ").next().unwrap();
    section
        .lines()
        .filter_map(|line| line.strip_prefix("\\fB")?.strip_suffix("\\fR"))
        .flat_map(|names| {
            names
                .replace("\\-", "-")
                .split([' ', ',', '(', ')'])
                .filter(|word| word.starts_with('/'))
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Whether one name of a path matches one name of a FILES pattern.
fn name_matches(pattern: &str, name: &str) -> bool {
    let glob = ["MAJOR:MINOR", "RELEASE", "DEVICE", "N", "X", "Y"]
        .iter()
        .fold(pattern.to_string(), |p, placeholder| {
            p.replace(placeholder, "*")
        });
    let mut parts = glob.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let mut parts: Vec<&str> = parts.collect();
    let Some(last) = parts.pop() else {
        return rest.is_empty();
    };
    for part in parts {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

/// Whether `pattern` names `path`: the path is the pattern's file or
/// directory or lies below it, or is the directory listed to find the
/// files a pattern's last name stands for.
fn covers(pattern: &str, path: &str) -> bool {
    let pattern: Vec<&str> = pattern.split('/').collect();
    let path: Vec<&str> = path.split('/').collect();
    let prefix_matches = |n: usize| {
        pattern[..n]
            .iter()
            .zip(&path[..n])
            .all(|(p, name)| name_matches(p, name))
    };
    if path.len() >= pattern.len() {
        return prefix_matches(pattern.len());
    }
    let last = pattern[pattern.len() - 1];
    path.len() + 1 == pattern.len() && last != name_glob_free(last) && prefix_matches(path.len())
}

/// `name` with its placeholders and `*` taken out.
fn name_glob_free(name: &str) -> String {
    name.replace(['*', 'N', 'X', 'Y'], "")
}

/// Fails naming every file of `run` that no pattern of `page` covers.
fn assert_named(page: &str, what: &str, run: &Traced, files: &BTreeSet<String>) {
    let patterns = files_section(page);
    let missing: Vec<&String> = files
        .iter()
        .filter(|file| !patterns.iter().any(|p| covers(p, file)))
        .collect();
    assert!(
        missing.is_empty(),
        "`{what}` used {missing:?}, which the FILES section of man/{page} does not name \
         ({patterns:?}); its standard error:\n{}",
        run.stderr
    );
}

#[test]
fn the_helpers_read_strace_logs_and_patterns_as_meant() {
    let log = "\
123  openat(AT_FDCWD, \"/sys/block\", O_RDONLY|O_CLOEXEC|O_DIRECTORY) = 3
123  getdents64(3, 0x55 /* 4 entries */, 32768) = 112
123  openat(3, \"sda/stat\", O_RDONLY) = 4
123  newfstatat(4, \"\", {st_mode=S_IFREG}, AT_EMPTY_PATH) = 0
124  statx(AT_FDCWD, \"/dev/a\\\"b\", AT_STATX_SYNC_AS_STAT, STATX_ALL, {}) = 0
124  readlink(\"relative\", \"x\", 4095) = 1
124  execve(\"/usr/bin/sleep\", [\"sleep\"], 0x7ff /* 3 vars */) = 0
";
    let paths: Vec<String> = paths_in_log(log).into_iter().collect();
    assert_eq!(
        paths,
        ["/dev/a\"b", "/sys/block", "/sys/block/sda/stat"].map(String::from)
    );
    // With -f, a call another thread interrupts is split in two lines; a
    // short call's result is padded; a failed call used no file.
    let split = "\
7  openat(AT_FDCWD, \"/sys/block\", O_RDONLY|O_DIRECTORY <unfinished ...>
8  openat(AT_FDCWD, \"/sys/absent\", O_RDONLY <unfinished ...>
9  access(\"/sys/a\", R_OK)          = 0
8  <... openat resumed>)             = -1 ENOENT (No such file or directory)
7  <... openat resumed>)             = 5
7  openat(5, \"vda/stat\", O_RDONLY) = 6
";
    let paths: Vec<String> = paths_in_log(split).into_iter().collect();
    assert_eq!(
        paths,
        ["/sys/a", "/sys/block", "/sys/block/vda/stat"].map(String::from)
    );
    assert!(covers("/sys/block/*", "/sys/block"));
    assert!(covers("/sys/block/*", "/sys/block/sda/stat"));
    assert!(covers(
        "/sys/kernel/debug/powerpc/dtl/cpu-N",
        "/sys/kernel/debug/powerpc/dtl/cpu-12"
    ));
    assert!(covers(
        "/sys/dev/block/MAJOR:MINOR",
        "/sys/dev/block/8:0/mq"
    ));
    assert!(covers("/boot/config-RELEASE", "/boot/config-6.6.0"));
    assert!(covers(
        "/sys/bus/cxl/devices/pmu_memX.Y",
        "/sys/bus/cxl/devices/pmu_mem1.0"
    ));
    assert!(covers(
        "/sys/devices/pci*",
        "/sys/devices/pci0000:34/0000:34:00.0/numa_node"
    ));
    assert!(!covers(
        "/sys/bus/cxl/devices/pmu_memX.Y",
        "/sys/bus/cxl/devices/pmu_mem1"
    ));
    assert!(!covers("/sys/block/*", "/sys/bus"));
    assert!(!covers("/proc/stat", "/proc"));
    assert!(!covers("/proc/stat", "/proc/stats"));
    assert!(!covers(
        "/sys/bus/cxl/devices/memX",
        "/sys/bus/cxl/devices/port1"
    ));
}

#[test]
fn iostat_rs_names_every_kernel_file_it_reads() {
    const TEST: &str = "iostat_rs_names_every_kernel_file_it_reads";
    if !skip::runs_unless(TEST, unavailable()) {
        return;
    }
    let dir = scratch("files-iostat");
    let log = dir.join("strace.log");
    let disk = std::fs::read_dir("/sys/block")
        .unwrap()
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .min()
        .expect("a block device");
    let mut runs: Vec<Vec<&str>> = vec![
        vec!["-x", "0.1", "2"],
        vec!["-x", "-p", "ALL", "0.1", "2"],
        vec!["-N", "-x", "0.1", "2"],
        vec!["-d", "-p", &disk, "0.1", "2"],
        vec!["-h", "-c", "0.1", "2"],
    ];
    if Path::new("/dev/disk/by-id").is_dir() {
        runs.push(vec!["-x", "-j", "ID", "0.1", "2"]);
    }
    for args in &runs {
        let run = traced(strace(&log, IOSTAT, args), &log);
        let files = kernel_files(&run, None);
        let what = format!("iostat-rs {}", args.join(" "));
        assert_named("iostat-rs.1", &what, &run, &files);
    }
    let mut under_tracefs = strace_options(&log);
    under_tracefs.push(IOSTAT.into());
    under_tracefs.extend(["--latency", "-x", "0.1", "2"].map(String::from));
    let run = traced(
        namespace::command(MOUNT_TRACEFS, "strace", &under_tracefs),
        &log,
    );
    let files = kernel_files(&run, None);
    assert!(
        files.iter().any(|f| f.ends_with("block_rq_issue/format")),
        "the --latency run read no tracepoint: {files:?}\n{}",
        run.stderr
    );
    assert_named("iostat-rs.1", "iostat-rs --latency -x 0.1 2", &run, &files);
}

/// Two vCPUs with a DTL on debugfs, lparcfg and cpuinfo: what `vcpustat`
/// and `trace record` read on a shared-processor partition.
fn pseries() -> Kernel {
    let mut kernel = Kernel::new(&[(0, [0; 8]), (1, [0; 8])]).with_debugfs(true, 85, &[0, 1]);
    kernel.lparcfg = Some("lparcfg 1.9\npartition_id=3\nshared_processor_mode=1\n".into());
    kernel.cpuinfo = Some("processor\t: 0\n\ntimebase\t: 512000000\nplatform\t: pSeries\n".into());
    kernel
}

#[test]
fn vcpustat_names_every_kernel_file_it_reads_and_writes() {
    const TEST: &str = "vcpustat_names_every_kernel_file_it_reads_and_writes";
    if !skip::runs_unless(TEST, unavailable()) {
        return;
    }
    let Some(sim) = simkernel::mount("files", pseries()) else {
        return;
    };
    let dir = scratch("files-vcpustat");
    let log = dir.join("strace.log");
    let root = sim.root.to_str().unwrap();
    let recording = dir.join("lpar.dtl");
    let args = [
        "trace",
        "record",
        "--sysroot",
        root,
        "--duration",
        "50ms",
        "-w",
        recording.to_str().unwrap(),
    ];
    let run = traced(strace(&log, VCPUSTAT, &args), &log);
    let files = kernel_files(&run, Some(&sim.root));
    assert!(
        files.contains("/sys/kernel/debug/powerpc/dtl/cpu-1"),
        "the recording opened no ring: {files:?}\n{}",
        run.stderr
    );
    assert_named(
        "vcpustat-trace-record.1",
        "vcpustat trace record",
        &run,
        &files,
    );
    // The simulation, as the kernel, keeps the statistics off while a ring
    // is open, and FUSE closes it after vcpustat has ended.
    sim.await_rings_closed();

    let args = ["--sysroot", root, "--enable", "--freq", "100", "0.1", "2"];
    let run = traced(strace(&log, VCPUSTAT, &args), &log);
    let files = kernel_files(&run, Some(&sim.root));
    assert!(
        files.contains("/proc/powerpc/vcpudispatch_stats_freq"),
        "the run did not set the frequency: {files:?}\n{}",
        run.stderr
    );
    assert_named("vcpustat.1", "vcpustat --enable --freq 100", &run, &files);
}

#[test]
fn cxlstat_names_every_kernel_file_it_reads() {
    const TEST: &str = "cxlstat_names_every_kernel_file_it_reads";
    if !skip::runs_unless(TEST, unavailable()) {
        return;
    }
    let dir = scratch("files-cxlstat");
    let log = dir.join("strace.log");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cxl/two-memdevs");
    let root_arg = root.to_str().unwrap();
    let raw = "cxl_pmu_mem1.0/vid=0x10,gid=0x5,mask=0x3/";
    for args in [
        vec!["--list"],
        vec!["-e", "clock_ticks,d2h_req_rdshared", "-a", "0.1", "1"],
        vec!["-e", raw, "-a", "0.1", "1"],
    ] {
        let with_root: Vec<&str> = ["--sysroot", root_arg]
            .into_iter()
            .chain(args.clone())
            .collect();
        let run = traced(strace(&log, CXLSTAT, &with_root), &log);
        let files = kernel_files(&run, Some(&root));
        assert!(
            files.iter().any(|f| f.ends_with("/format/vid")),
            "cxlstat {args:?} read no PMU format: {files:?}\n{}",
            run.stderr
        );
        let what = format!("cxlstat {}", args.join(" "));
        assert_named("cxlstat.1", &what, &run, &files);
    }
}
