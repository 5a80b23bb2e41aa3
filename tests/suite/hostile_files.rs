//! Kernel files that are not what the kernel writes, under `--sysroot`:
//! FIFOs (which blocked `open(2)` forever), huge files and links to
//! `/dev/zero` (which grew memory without end), and links that lead out of
//! the root (which writes followed). Every run must end promptly with a
//! one-line error naming the kernel file and leave the tree as it was.
//! Also the files `--svg` and `--textfile` replace: a device, FIFO, link or
//! directory under that name is refused, not replaced.

use crate::cxlstat_support;
use crate::pipes::Collected;
use crate::procstate::KillOnDrop;
use crate::procstate::wait_with_timeout;
use crate::scratch::Scratch;
use std::ffi::CString;
use std::fs;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// A fresh directory for one test, removed when the test ends, also
/// when it fails.
fn scratch(name: &str) -> Scratch {
    crate::scratch::scratch(&format!("hostile-{name}"))
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// Makes a FIFO at `path`, replacing what is there.
pub(crate) fn mkfifo(path: &Path) {
    let _ = fs::remove_file(path);
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// A reader of the FIFO at `path`, opened without waiting for a writer:
/// the programs write a recording only to a FIFO somebody reads.
pub(crate) fn fifo_reader(path: &Path) -> fs::File {
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .unwrap()
}

/// Runs `program args` for at most 10 s. A run still going then gets
/// SIGTERM, then SIGKILL, and the test fails: it hung.
fn run(program: &str, args: &[&str]) -> Output {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(10) {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            std::thread::sleep(Duration::from_secs(2));
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{program} {args:?} hung; stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

/// The run failed with one line on standard error that names `file` and
/// contains `what`.
fn assert_one_line_error(out: &Output, file: &str, what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "{err}{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(file) && err.contains(what),
        "{file} / {what}: {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

const IOSTAT: &str = env!("CARGO_BIN_EXE_iostat-rs");
/// A CXL sysfs fixture with two memory devices.
const CXL_TREE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/cxl/two-memdevs"
);
/// A small `vcpustat trace` recording.
const DTL_RECORDING: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/charts/lpar1.dtl"
);
const VCPUSTAT: &str = env!("CARGO_BIN_EXE_vcpustat");
/// A cxlstat run long enough that it can only end early by refusing its
/// options: one event, 30 s reports, over a minute-long command.
const CXLSTAT_LONG_RUN: &[&str] = &[
    "-e",
    "clock_ticks",
    "-a",
    "-I",
    "30000",
    "--",
    "sleep",
    "60",
];

/// A small healthy tree for iostat-rs: one disk.
pub(crate) fn iostat_tree(dir: &Path) -> PathBuf {
    let root = dir.join("root");
    write(
        &root,
        "proc/stat",
        "cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 100 0 100 800 0 0 0 0 0 0\n",
    );
    write(&root, "proc/uptime", "1000.00 900.00\n");
    write(
        &root,
        "proc/diskstats",
        "   8       0 sda 100 0 800 10 50 0 400 5 0 20 15 0 0 0 0 0 0\n",
    );
    write(
        &root,
        "sys/block/sda/stat",
        "100 0 800 10 50 0 400 5 0 20 15 0 0 0 0 0 0\n",
    );
    root
}

#[test]
fn the_iostat_tree_is_healthy() {
    let dir = scratch("iostat-healthy");
    let root = iostat_tree(&dir);
    let out = run(IOSTAT, &["--sysroot", root.to_str().unwrap(), "-d"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("sda"));
}

#[test]
fn iostat_refuses_fifos_at_once() {
    let dir = scratch("iostat-fifo");
    for (file, what) in [
        ("proc/stat", "not a regular file but a FIFO"),
        // sysstat's message, without a reason.
        ("proc/uptime", "Cannot read"),
    ] {
        let root = iostat_tree(&dir);
        mkfifo(&root.join(file));
        let out = run(
            IOSTAT,
            &["--sysroot", root.to_str().unwrap(), "-x", "1", "2"],
        );
        assert_one_line_error(&out, &format!("/{file}"), what);
        fs::remove_dir_all(&root).unwrap();
    }
    // Without a readable /proc/diskstats, iostat reads /sys/block as sysstat does.
    let root = iostat_tree(&dir);
    mkfifo(&root.join("proc/diskstats"));
    let out = run(
        IOSTAT,
        &["--sysroot", root.to_str().unwrap(), "-d", "0.1", "2"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text.lines().filter(|l| l.starts_with("sda")).count(),
        2,
        "{text}"
    );
}

#[test]
fn iostat_refuses_huge_files_and_dev_zero_at_once() {
    let dir = scratch("iostat-huge");
    let root = iostat_tree(&dir);
    let huge = fs::File::create(root.join("proc/stat")).unwrap();
    huge.set_len((64 << 20) + 1).unwrap();
    let out = run(IOSTAT, &["--sysroot", root.to_str().unwrap(), "-x"]);
    assert_one_line_error(&out, "/proc/stat", "larger than 65536 KiB");
    fs::remove_dir_all(&root).unwrap();
    // Read line by line, /proc/diskstats too: its lines before the limit
    // would have made a report without the devices after it.
    for args in [&["-d"][..], &["-d", "-p", "ALL"], &["-x", "-o", "JSON"]] {
        let root = iostat_tree(&dir);
        let huge = fs::File::create(root.join("proc/diskstats")).unwrap();
        huge.set_len((64 << 20) + 1).unwrap();
        let mut args = args.to_vec();
        let mut live = args.clone();
        live.extend(["--sysroot", root.to_str().unwrap()]);
        let out = run(IOSTAT, &live);
        assert_one_line_error(&out, "/proc/diskstats", "larger than 65536 KiB");
        // Recorded, the same (it reported from /sys/block, status 0), and
        // its replay fails as the run did.
        let rec = dir.join("huge.rec");
        live.extend(["--record", rec.to_str().unwrap()]);
        let out = run(IOSTAT, &live);
        assert_one_line_error(&out, "/proc/diskstats", "larger than 65536 KiB");
        args.extend(["--replay", rec.to_str().unwrap()]);
        let out = run(IOSTAT, &args);
        assert_one_line_error(
            &out,
            "`read /proc/diskstats`",
            "larger than any kernel file of its kind",
        );
        fs::remove_dir_all(&root).unwrap();
    }
    // A link to /dev/zero: inside the root, there is no such file.
    let root = iostat_tree(&dir);
    fs::remove_file(root.join("proc/stat")).unwrap();
    symlink("/dev/zero", root.join("proc/stat")).unwrap();
    let out = run(IOSTAT, &["--sysroot", root.to_str().unwrap(), "-x"]);
    assert_one_line_error(&out, "/proc/stat", "No such file");
}

const STATS: &str = "proc/powerpc/vcpudispatch_stats";
const FREQ: &str = "proc/powerpc/vcpudispatch_stats_freq";

/// A copy of the seed fixture (statistics on, frequency 50).
pub(crate) fn vcpustat_tree(dir: &Path) -> PathBuf {
    let root = dir.join("vs");
    let seed = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vcpustat/seed");
    for file in [STATS, FREQ] {
        write(&root, file, &fs::read_to_string(seed.join(file)).unwrap());
    }
    root
}

#[test]
fn vcpustat_refuses_fifos_at_once_and_leaves_the_control_files() {
    let dir = scratch("vcpustat-fifo");
    let root = vcpustat_tree(&dir);
    let freq_before = fs::read_to_string(root.join(FREQ)).unwrap();
    mkfifo(&root.join(STATS));
    let out = run(VCPUSTAT, &["--sysroot", root.to_str().unwrap(), "1", "2"]);
    assert_one_line_error(&out, &format!("/{STATS}"), "FIFO");
    assert_eq!(fs::read_to_string(root.join(FREQ)).unwrap(), freq_before);

    fs::remove_dir_all(&root).unwrap();
    let root = vcpustat_tree(&dir);
    let stats_before = fs::read_to_string(root.join(STATS)).unwrap();
    mkfifo(&root.join(FREQ));
    let out = run(
        VCPUSTAT,
        &["--sysroot", root.to_str().unwrap(), "--freq", "100"],
    );
    assert_one_line_error(&out, &format!("/{FREQ}"), "FIFO");
    assert_eq!(fs::read_to_string(root.join(STATS)).unwrap(), stats_before);
}

#[test]
fn vcpustat_writes_and_reads_never_leave_the_root() {
    let dir = scratch("vcpustat-escape");
    let outside = dir.join("outside");
    fs::write(&outside, "7\n").unwrap();
    // An absolute link and one that climbs out with `..`.
    for target in [outside.clone(), PathBuf::from("../../../outside")] {
        let root = vcpustat_tree(&dir);
        fs::remove_file(root.join(FREQ)).unwrap();
        symlink(&target, root.join(FREQ)).unwrap();
        let out = run(
            VCPUSTAT,
            &["--sysroot", root.to_str().unwrap(), "--freq", "100"],
        );
        // Inside the root the link leads nowhere: the frequency file is missing.
        assert_one_line_error(
            &out,
            "/proc/powerpc/vcpudispatch_stats_freq",
            "No such file or directory",
        );
        assert_eq!(fs::read_to_string(&outside).unwrap(), "7\n", "{target:?}");
        fs::remove_dir_all(&root).unwrap();
    }
    // A read through a link out of the root finds nothing either.
    let root = vcpustat_tree(&dir);
    fs::rename(root.join(STATS), dir.join("stats-outside")).unwrap();
    symlink(dir.join("stats-outside"), root.join(STATS)).unwrap();
    let out = run(VCPUSTAT, &["--sysroot", root.to_str().unwrap()]);
    assert_one_line_error(&out, &format!("/{STATS}"), "does not exist");
    assert!(out.stdout.is_empty());
}

const DTL: &str = "sys/kernel/debug/powerpc/dtl";

/// A partition with two vCPUs whose rings are empty regular files.
pub(crate) fn trace_tree(dir: &Path) -> PathBuf {
    let root = dir.join("root");
    write(&root, "proc/powerpc/lparcfg", "partition_id=1\n");
    write(&root, "proc/cpuinfo", "timebase\t: 512000000\n");
    write(&root, &format!("{DTL}/dtl_event_mask"), "0x07\n");
    write(&root, &format!("{DTL}/dtl_buf_entries"), "85\n");
    write(&root, &format!("{DTL}/cpu-0"), "");
    write(&root, &format!("{DTL}/cpu-1"), "");
    root
}

#[test]
fn trace_record_refuses_a_fifo_ring_at_once_and_restores_the_mask() {
    let dir = scratch("trace-fifo");
    let root = trace_tree(&dir);
    let output = dir.join("out.dtl");
    let args = [
        "trace",
        "record",
        "--sysroot",
        root.to_str().unwrap(),
        "--duration",
        "1s",
        "-w",
        output.to_str().unwrap(),
    ];
    let healthy = run(VCPUSTAT, &args);
    assert!(
        healthy.status.success(),
        "{}",
        String::from_utf8_lossy(&healthy.stderr)
    );
    mkfifo(&root.join(DTL).join("cpu-1"));
    let out = run(VCPUSTAT, &args);
    assert_one_line_error(&out, "cpu-1", "FIFO");
    assert_eq!(
        fs::read_to_string(root.join(DTL).join("dtl_event_mask")).unwrap(),
        "0x07\n"
    );
}

/// A `trace record` that cannot start (a ring refused) leaves the
/// recording its `-w` names as it was: it used to empty it on opening it,
/// then remove it as empty. A run that starts replaces all of it.
#[test]
fn a_trace_record_that_cannot_start_leaves_the_recording_there() {
    let dir = scratch("trace-kept");
    let root = trace_tree(&dir);
    let output = dir.join("lpar.dtl");
    let args = [
        "trace",
        "record",
        "--sysroot",
        root.to_str().unwrap(),
        "--duration",
        "0.2s",
        "-w",
        output.to_str().unwrap(),
    ];
    let old = fs::read(DTL_RECORDING).unwrap();
    fs::write(&output, &old).unwrap();
    let ring = root.join(DTL).join("cpu-1");
    mkfifo(&ring);
    assert_one_line_error(&run(VCPUSTAT, &args), "cpu-1", "FIFO");
    assert!(fs::read(&output).unwrap() == old, "the recording changed");
    fs::remove_file(&ring).unwrap();
    fs::write(&ring, "").unwrap();
    let out = run(VCPUSTAT, &args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Emptied first: shorter than the old one, and read as a whole.
    assert!(fs::metadata(&output).unwrap().len() < old.len() as u64);
    let report = run(VCPUSTAT, &["trace", "report", output.to_str().unwrap()]);
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
}

/// A `trace record` that fails once its output is open removes the empty
/// file it created, and nothing else: not, as it did as root, the
/// `/dev/stdout` link that `-w /dev/stdout >empty.dtl` wrote through, nor
/// `/dev/stderr` with `-w /dev/stderr 2>empty.dtl` (here in a mount
/// namespace's own `/dev`). Since `-w /dev/stdout` takes standard output
/// over (descriptor 1 then goes where standard error goes), only the
/// second still reaches the file through the link when the run fails.
#[test]
fn a_failed_trace_record_leaves_the_link_it_wrote_through() {
    let test = "a_failed_trace_record_leaves_the_link_it_wrote_through";
    if !as_root(test) || !crate::skip::runs_unless(test, crate::namespace::unavailable()) {
        return;
    }
    let dir = scratch("trace-stdout-link");
    let root = trace_tree(&dir);
    mkfifo(&root.join(DTL).join("cpu-1"));
    let empty = dir.join("empty.dtl");
    for (fd, redirect) in [(1, ">"), (2, "2>")] {
        fs::write(&empty, "").unwrap();
        let link = ["", "/dev/stdout", "/dev/stderr"][fd];
        let out = Command::new("unshare")
            .args(["-m", "--propagation", "private", "sh", "-c"])
            .arg(format!(
                r#"mount -t tmpfs none /dev && ln -s /proc/self/fd/{fd} {link} &&
                   "$0" trace record --sysroot "$1" --duration 0.2s -w {link} {redirect}"$2"
                   test -L {link} && echo kept"#
            ))
            .args([Path::new(VCPUSTAT), &root, &empty])
            .output()
            .unwrap();
        // With -w /dev/stderr, the error goes into the file.
        let err = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stderr),
            fs::read_to_string(&empty).unwrap()
        );
        assert!(
            err.contains("cpu-1") && err.contains("FIFO"),
            "{link}: {err}"
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "kept\n",
            "{link}: {err}"
        );
    }
}

/// The files `vcpustat trace` is given: a `-w` FIFO that no process reads
/// (whose blocking open a stop signal did not end) and a `--topology` that
/// never ends (which grew memory to 6 GB in 10 s).
#[test]
fn trace_output_and_topology_files_that_would_block_or_never_end_are_refused() {
    let dir = scratch("trace-files");
    let root = trace_tree(&dir);
    let fifo = dir.join("unread.dtl");
    mkfifo(&fifo);
    let fifo = fifo.to_str().unwrap();
    let out = run(
        VCPUSTAT,
        &["trace", "record", "--sysroot", root.to_str().unwrap()]
            .into_iter()
            .chain(["--duration", "1s", "-w", fifo])
            .collect::<Vec<_>>(),
    );
    assert_one_line_error(&out, fifo, "a FIFO that no process reads");
    assert_eq!(
        fs::read_to_string(root.join(DTL).join("dtl_event_mask")).unwrap(),
        "0x07\n"
    );
    let out = run(
        VCPUSTAT,
        &["trace", "report", DTL_RECORDING, "--topology", "/dev/zero"],
    );
    assert_one_line_error(&out, "/dev/zero", "a character device, expected a file");
    // A recording is read at random places: a FIFO without a writer is
    // refused at once, where open(2) used to wait for one forever.
    let out = run(VCPUSTAT, &["trace", "report", fifo]);
    assert_one_line_error(&out, fifo, "a FIFO, expected a regular file");
}

#[test]
fn sigterm_ends_cxlstat_and_the_command_it_waits_for() {
    if !cxlstat_support::perf_usable("sigterm_ends_cxlstat_and_the_command_it_waits_for") {
        return;
    }
    let dir = scratch("cxlstat-command");
    cxlstat_support::software_tree(&dir, &[("cxl_pmu_mem0.0", 0)]);
    for interval in [None, Some("0.1")] {
        let mut args = vec!["--sysroot", dir.to_str().unwrap(), "-e", "cpu_clock"];
        args.extend(interval);
        args.extend(["--", "sleep", "30"]);
        let mut child = KillOnDrop(
            Command::new(env!("CARGO_BIN_EXE_cxlstat"))
                .args(&args)
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let stdout = Collected::new(child.stdout.take().unwrap());
        // Counting, the command started, then some intervals' reports.
        crate::procstate::await_perf_events(child.id(), 1);
        crate::procstate::await_child(child.id());
        std::thread::sleep(Duration::from_millis(500));
        let start = Instant::now();
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        while child.try_wait().unwrap().is_none() && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let took = start.elapsed();
        let _ = child.kill();
        let status = child.wait().unwrap();
        assert!(took < Duration::from_secs(5), "{interval:?}: {took:?}");
        // The command's status, as a shell shows it: killed by SIGTERM.
        assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{interval:?}");
        let text = stdout.until_end("cxlstat", Duration::from_secs(10));
        let text = String::from_utf8_lossy(&text);
        assert!(text.contains("cxl_pmu_mem0.0"), "{interval:?}: {text}");
    }
}

/// Recordings named on the command line: a device that never ends
/// (`/dev/zero`, which grew iostat-rs to 3.6 GB in 10 s) and, for
/// `--record`, a FIFO with no reader (whose blocking `open(2)` a stop
/// signal did not end). A FIFO to replay is waited on, as `cat` waits
/// (the next test).
#[test]
fn recordings_that_are_devices_or_unread_fifos_end_at_once() {
    let dir = scratch("recordings");
    let cxlstat = env!("CARGO_BIN_EXE_cxlstat");
    for (program, args) in [
        (IOSTAT, &["-x"][..]),
        (VCPUSTAT, &[][..]),
        (cxlstat, &["-e", "clock_ticks"][..]),
    ] {
        let replay = [&["--replay", "/dev/zero"][..], args].concat();
        let out = run(program, &replay);
        assert_one_line_error(&out, "/dev/zero", "a character device, expected a file");
    }
    let fifo = dir.join("unread");
    mkfifo(&fifo);
    let fifo = fifo.to_str().unwrap();
    let out = run(IOSTAT, &["--record", fifo, "-x", "1", "1"]);
    assert_one_line_error(&out, fifo, "a FIFO that no process reads");
}

/// A replay of an endless line stops at 64 MiB with an error, instead of
/// holding all of it.
#[test]
fn a_recording_line_is_read_no_further_than_64_mib() {
    let dir = scratch("long-line");
    let path = dir.join("long.rec");
    fs::write(&path, vec![b'x'; (64 << 20) + 10]).unwrap();
    let path = path.to_str().unwrap();
    let out = run(IOSTAT, &["--replay", path, "-x"]);
    assert_one_line_error(&out, path, "a line longer than 64 MiB");
}

/// A replay read from a FIFO whose writer stalls waits (in `poll(2)` until
/// the writer comes and writes, then in `read(2)`): a stop signal then
/// ends the program at once, as nothing has been changed yet (vcpustat and
/// cxlstat installed their stop handlers first, which only raised a flag,
/// and went on waiting).
#[test]
fn a_stop_signal_ends_a_replay_waiting_on_a_stalled_pipe() {
    use std::os::unix::process::ExitStatusExt;
    let dir = scratch("stalled-replay");
    let cxlstat = env!("CARGO_BIN_EXE_cxlstat");
    for (n, (program, args)) in [
        (IOSTAT, &["-x"][..]),
        (VCPUSTAT, &[][..]),
        (cxlstat, &["-e", "clock_ticks"][..]),
    ]
    .into_iter()
    .enumerate()
    {
        let fifo = dir.join(format!("stalled{n}"));
        mkfifo(&fifo);
        let mut child = KillOnDrop(
            Command::new(program)
                .arg("--replay")
                .arg(&fifo)
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        // The writer end, held open and silent; then the program waits.
        let _writer = open_writer(&fifo, &mut child, program);
        crate::procstate::await_polling(child.id());
        assert!(
            child.try_wait().unwrap().is_none(),
            "{program}: ended early"
        );
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let status = wait_with_timeout(
            &mut child,
            Duration::from_secs(5),
            &format!("{program} waiting on a stalled pipe, after SIGTERM,"),
        );
        assert_eq!(
            status.signal(),
            Some(libc::SIGTERM),
            "{program}: {status:?}"
        );
    }
}

/// Opens FIFO `fifo` for writing once `child` (running `program`) has
/// opened it to read. Without `O_NONBLOCK`, open(2) would wait for a reader
/// for ever if the program ended first; with it, it fails (ENXIO) until
/// there is one. Fails if the program ends first or 20 s pass.
fn open_writer(fifo: &Path, child: &mut Child, program: &str) -> fs::File {
    let start = Instant::now();
    loop {
        match fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(fifo)
        {
            Ok(writer) => return writer,
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {}
            Err(e) => panic!("{program}: cannot open {} to write: {e}", fifo.display()),
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "{program} ended ({status}) without opening {}",
                fifo.display()
            );
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{program} did not open {} within 20 s",
            fifo.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// As many `-e` options as a command line holds are planned in time that
/// grows with their number: the threshold check filtered every event for
/// each option (in the debug build 8,000 took 4.9 s, growing with the
/// square of the number).
#[test]
fn cxlstat_plans_tens_of_thousands_of_events_without_stalling() {
    let dir = scratch("many-events");
    let printed = dir.join("dry-run.txt");
    let mut child = Command::new(env!("CARGO_BIN_EXE_cxlstat"))
        .args(["--sysroot", CXL_TREE, "--dry-run"])
        .args(std::iter::repeat_n(["-e", "clock_ticks"], 50_000).flatten())
        .stdin(Stdio::null())
        .stdout(fs::File::create(&printed).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // About 1.1 s of processor time in the debug build; by the square
    // (8,000 in 4.9 s), over three minutes before. Processor time, not wall
    // time: beside 32 busy loops on 2 cores the same 1.1 s took 36.5 s, and
    // failed a 30 s wall-clock limit. The wall limit is only for a run that
    // stalls without computing.
    let (status, used) = crate::procstate::wait_with_cpu_limit(
        &mut child,
        Duration::from_secs(10),
        Duration::from_secs(600),
        "cxlstat planning 50,000 events",
    );
    assert!(status.success(), "{status:?}");
    assert!(used < Duration::from_secs(10), "{used:?}");
    // Each event on both PMUs, a heading line each.
    let headings = fs::read_to_string(&printed)
        .unwrap()
        .lines()
        .filter(|l| l.ends_with("/clock_ticks/  (vid=0x1e98,gid=0x0,mask=0x1)"))
        .count();
    assert_eq!(headings, 100_000);
}

/// What `--svg` and `--textfile` must not replace, created in `dir`, with
/// the word the error gives for each: a FIFO, a link to a file, a dangling
/// link, a directory and, as root, a character device (the `/dev/null` of
/// `--svg /dev/null`). Their rename would put a regular file in its place.
fn non_regular_targets(dir: &Path, keep: &Path) -> Vec<(PathBuf, &'static str)> {
    let mut targets = vec![
        (dir.join("fifo"), "a FIFO"),
        (dir.join("link"), "a symbolic link"),
        (dir.join("dangling"), "a symbolic link"),
        (dir.join("directory"), "a directory"),
    ];
    mkfifo(&targets[0].0);
    symlink(keep, &targets[1].0).unwrap();
    symlink(dir.join("nothing"), &targets[2].0).unwrap();
    fs::create_dir(&targets[3].0).unwrap();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let device = dir.join("null");
        let c = CString::new(device.as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path; the numbers of /dev/null.
        let made = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
        assert_eq!(made, 0, "mknod {}", device.display());
        targets.push((device, "a character device"));
    } else {
        crate::skip::skip(
            "outputs_that_are_not_regular_files_are_refused_and_left_as_they_were (the device)",
            "mknod needs root: run the tests as root to check a character device too",
        );
    }
    targets
}

/// A tool's command line around an output option: what comes before the
/// option and its file, what comes after, and the options the tool has.
struct Around<'a> {
    program: &'a str,
    before: &'a [&'a str],
    after: &'a [&'a str],
    options: &'a [&'a str],
}

/// The file type of `path` itself (a link is not followed).
fn file_type(path: &Path) -> fs::FileType {
    fs::symlink_metadata(path).unwrap().file_type()
}

#[test]
fn outputs_that_are_not_regular_files_are_refused_and_left_as_they_were() {
    let dir = scratch("outputs");
    let iostat_root = iostat_tree(&dir);
    let vcpustat_root = vcpustat_tree(&dir);
    let stats_before = fs::read_to_string(vcpustat_root.join(STATS)).unwrap();
    let keep = dir.join("keep");
    fs::write(&keep, "precious").unwrap();
    let targets_dir = dir.join("targets");
    fs::create_dir(&targets_dir).unwrap();
    let mut targets = non_regular_targets(&targets_dir, &keep);
    let created = targets.len();
    let missing_dir = targets_dir.join("no-such-directory/out");
    targets.push((missing_dir, "no-such-directory: No such file or directory"));
    let types_before: Vec<_> = targets
        .iter()
        .map(|(path, _)| fs::symlink_metadata(path).ok().map(|m| m.file_type()))
        .collect();
    let (iostat_root, vcpustat_root) = (
        iostat_root.to_str().unwrap(),
        vcpustat_root.to_str().unwrap(),
    );
    // Each tool with what comes before and after the option, and the
    // options it has. Intervals of 30 s: a refusal that waited for the first
    // report would make `run` fail the test as hung after 10 s.
    let both: &[&str] = &["--svg", "--textfile"];
    let tools = [
        Around {
            program: IOSTAT,
            before: &["--sysroot", iostat_root],
            after: &["-x", "30", "2"],
            options: both,
        },
        Around {
            program: VCPUSTAT,
            before: &["--sysroot", vcpustat_root],
            after: &["30", "2"],
            options: both,
        },
        Around {
            program: VCPUSTAT,
            before: &["trace", "report"],
            after: &[DTL_RECORDING],
            options: &["--svg"],
        },
        Around {
            program: env!("CARGO_BIN_EXE_cxlstat"),
            before: &["--sysroot", CXL_TREE],
            after: CXLSTAT_LONG_RUN,
            options: both,
        },
    ];
    for (target, kind) in &targets {
        let path = target.to_str().unwrap();
        for tool in &tools {
            for option in tool.options {
                let args: Vec<&str> = (tool.before.iter().copied())
                    .chain([*option, path])
                    .chain(tool.after.iter().copied())
                    .collect();
                assert_one_line_error(&run(tool.program, &args), path, kind);
            }
        }
    }
    for ((target, _), before) in targets.iter().zip(types_before) {
        let now = fs::symlink_metadata(target).ok().map(|m| m.file_type());
        assert_eq!(now, before, "{}", target.display());
    }
    assert!(file_type(&targets_dir.join("link")).is_symlink());
    assert_eq!(fs::read_link(targets_dir.join("link")).unwrap(), keep);
    assert_eq!(fs::read_to_string(&keep).unwrap(), "precious");
    assert_eq!(
        fs::read_to_string(Path::new(vcpustat_root).join(STATS)).unwrap(),
        stats_before
    );
    assert_eq!(
        fs::read_dir(&targets_dir).unwrap().count(),
        created,
        "no temporary file is left"
    );
}

/// `--record FILE --svg FILE`: the chart would replace the recording at its
/// first rewrite. Every tool with both refuses it before the run, and
/// nothing is created.
#[test]
fn one_file_named_by_two_outputs_is_refused() {
    let dir = scratch("same-file");
    let iostat_root = iostat_tree(&dir);
    let vcpustat_root = vcpustat_tree(&dir);
    let file = dir.join("run.out");
    let same = dir.join(".").join("run.out");
    let (file, same) = (file.to_str().unwrap(), same.to_str().unwrap());
    let roots = [
        (IOSTAT, iostat_root.to_str().unwrap()),
        (VCPUSTAT, vcpustat_root.to_str().unwrap()),
        (env!("CARGO_BIN_EXE_cxlstat"), CXL_TREE),
    ];
    for (program, root) in roots {
        let run_args: &[&str] = if program == IOSTAT || program == VCPUSTAT {
            &["30", "2"]
        } else {
            CXLSTAT_LONG_RUN
        };
        let args: Vec<&str> = ["--sysroot", root, "--record", file, "--svg", same]
            .into_iter()
            .chain(run_args.iter().copied())
            .collect();
        let out = run(program, &args);
        assert_one_line_error(&out, file, "the same file as --svg's");
        assert!(!Path::new(file).exists(), "{args:?}");
    }
}

/// `--record` and `vcpustat trace record -w` write where they are told,
/// devices such as `/dev/null` included, but never over a block device (a
/// slip such as `--record /dev/sdb`, run as root): refused before a byte is
/// written. The device is a loop device over a scratch file of zeros.
#[test]
fn a_recording_is_never_written_over_a_block_device() {
    let test = "a_recording_is_never_written_over_a_block_device";
    // SAFETY: geteuid has no preconditions.
    let missing = if unsafe { libc::geteuid() } != 0 {
        Some("needs root to attach a loop device: run the tests as root".to_string())
    } else if !Path::new("/dev/loop-control").exists() {
        Some("needs loop devices (/dev/loop-control): modprobe loop".to_string())
    } else {
        None
    };
    if !crate::skip::runs_unless(test, missing) {
        return;
    }
    let dir = scratch("block-device");
    let backing = dir.join("disk.img");
    fs::write(&backing, vec![0u8; 1 << 20]).unwrap();
    let disk = crate::loopdev::Loop::attach_with(&backing, &[]);
    let device = format!("/dev/{}", disk.name);
    let iostat_root = iostat_tree(&dir);
    let vcpustat_root = vcpustat_tree(&dir);
    let trace_root = trace_tree(&dir);
    let refused = |program: &str, args: &[&str]| {
        let out = run(program, args);
        assert_one_line_error(&out, &device, "a block device, expected a file");
    };
    for (program, root) in [(IOSTAT, &iostat_root), (VCPUSTAT, &vcpustat_root)] {
        let root = root.to_str().unwrap();
        refused(program, &["--sysroot", root, "--record", &device, "1", "1"]);
    }
    let root = trace_root.to_str().unwrap();
    refused(
        VCPUSTAT,
        &[
            "trace",
            "record",
            "--sysroot",
            root,
            "--duration",
            "1s",
            "-w",
            &device,
        ],
    );
    drop(disk);
    assert!(
        fs::read(&backing).unwrap().iter().all(|&b| b == 0),
        "the disk was written"
    );
    assert_eq!(
        fs::read_to_string(trace_root.join(DTL).join("dtl_event_mask")).unwrap(),
        "0x07\n"
    );
}

#[test]
fn a_recording_is_not_written_through_a_planted_link() {
    // In a directory others can write (/tmp), a user could plant run.rec as
    // a link to a file only root may write; root's --record must not empty
    // it. Each tool, each kind of link: one line, and the file as it was.
    let dir = scratch("record-links");
    let iostat_root = iostat_tree(&dir);
    let vcpustat_root = vcpustat_tree(&dir);
    let victim = dir.join("victim");
    fs::write(&victim, "precious").unwrap();
    let soft = dir.join("soft.rec");
    symlink(&victim, &soft).unwrap();
    let hard = dir.join("hard.rec");
    fs::hard_link(&victim, &hard).unwrap();
    let (iostat_root, vcpustat_root) = (
        iostat_root.to_str().unwrap(),
        vcpustat_root.to_str().unwrap(),
    );
    for (link, what) in [
        (&soft, "a symbolic link to a file: name the file itself"),
        (&hard, "a file with 2 names (hard links)"),
    ] {
        let path = link.to_str().unwrap();
        let runs = [
            run(
                IOSTAT,
                &["--sysroot", iostat_root, "--record", path, "-x", "1", "1"],
            ),
            run(VCPUSTAT, &["--sysroot", vcpustat_root, "--record", path]),
            run(
                env!("CARGO_BIN_EXE_cxlstat"),
                &[
                    "--sysroot",
                    CXL_TREE,
                    "--record",
                    path,
                    "-e",
                    "clock_ticks",
                    "0.1",
                    "1",
                ],
            ),
        ];
        for out in &runs {
            assert_one_line_error(out, path, what);
        }
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
    }
}

/// Another user's uid for the files of [`a_recording_is_not_given_to_another_user_in_a_sticky_directory`].
const NOBODY: u32 = 65534;

/// Whether `test`, which makes files of another user, can run: as root;
/// else it is skipped with the reason (a failure under `CI=true`).
fn as_root(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    let missing = (unsafe { libc::geteuid() } != 0)
        .then(|| "needs root to make files of another user: run the tests as root".to_string());
    crate::skip::runs_unless(test, missing)
}

/// A directory under `dir` as /tmp is: sticky, and others can write it.
fn sticky_dir(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let shared = dir.join("shared");
    fs::create_dir(&shared).unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
    shared
}

/// A directory under `dir` as a group shares one: others can write it, and
/// it is not sticky, so anyone may also rename or remove what others made.
fn shared_dir(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let shared = dir.join("group");
    fs::create_dir(&shared).unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o777)).unwrap();
    shared
}

#[test]
fn a_recording_is_not_given_to_another_user_in_a_sticky_directory() {
    // In /tmp, a user could make run.rec first (a file or FIFO of theirs,
    // or a link to a directory of theirs on the way): root's --record would
    // then hand them what only root may read. Each is refused in one line
    // and nothing is written; root's own file there is written, mode 0600.
    if !as_root("a_recording_is_not_given_to_another_user_in_a_sticky_directory") {
        return;
    }
    use std::os::unix::fs::{PermissionsExt, chown, lchown};
    let dir = scratch("record-sticky");
    let iostat_root = iostat_tree(&dir);
    let vcpustat_root = vcpustat_tree(&dir);
    let shared = sticky_dir(&dir);
    let theirs = shared.join("theirs.rec");
    fs::write(&theirs, "theirs").unwrap();
    fs::set_permissions(&theirs, fs::Permissions::from_mode(0o666)).unwrap();
    chown(&theirs, Some(NOBODY), Some(NOBODY)).unwrap();
    let fifo = shared.join("fifo.rec");
    mkfifo(&fifo);
    chown(&fifo, Some(NOBODY), Some(NOBODY)).unwrap();
    // Their reader, so that the FIFO would take a recording.
    let mut reader = fifo_reader(&fifo);
    let their_dir = shared.join("dir");
    fs::create_dir(&their_dir).unwrap();
    chown(&their_dir, Some(NOBODY), Some(NOBODY)).unwrap();
    let dir_link = shared.join("link");
    symlink(&their_dir, &dir_link).unwrap();
    lchown(&dir_link, Some(NOBODY), Some(NOBODY)).unwrap();
    let (iostat_root, vcpustat_root) = (
        iostat_root.to_str().unwrap(),
        vcpustat_root.to_str().unwrap(),
    );
    let iostat = |path: &str| {
        run(
            IOSTAT,
            &["--sysroot", iostat_root, "--record", path, "-x", "1", "1"],
        )
    };
    let path = theirs.to_str().unwrap();
    let runs = [
        iostat(path),
        run(VCPUSTAT, &["--sysroot", vcpustat_root, "--record", path]),
        run(
            env!("CARGO_BIN_EXE_cxlstat"),
            &[
                "--sysroot",
                CXL_TREE,
                "--record",
                path,
                "-e",
                "clock_ticks",
                "0.1",
                "1",
            ],
        ),
    ];
    let what = "a regular file of user 65534 in a sticky directory others can write: not written";
    for out in &runs {
        assert_one_line_error(out, path, what);
    }
    assert_eq!(fs::read_to_string(&theirs).unwrap(), "theirs");
    let path = fifo.to_str().unwrap();
    assert_one_line_error(&iostat(path), path, "a FIFO of user 65534");
    let mut taken = Vec::new();
    let _ = reader.read_to_end(&mut taken);
    assert!(taken.is_empty(), "{} bytes went to their FIFO", taken.len());
    let through = dir_link.join("run.rec");
    let path = through.to_str().unwrap();
    let what = "a link owned by user 65534 in a sticky directory others can write: not followed";
    assert_one_line_error(&iostat(path), path, what);
    assert_eq!(fs::read_dir(&their_dir).unwrap().count(), 0);
    // Root's own file there, and a new one.
    let own = shared.join("own.rec");
    fs::write(&own, "old").unwrap();
    for path in [&own, &shared.join("new.rec")] {
        let out = iostat(path.to_str().unwrap());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(fs::read_to_string(path).unwrap().starts_with("{\"format\""));
    }
    let mode = fs::metadata(shared.join("new.rec"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn a_recording_is_not_written_into_another_users_file_in_any_directory() {
    // Outside sticky directories too: in a directory a group shares (here
    // 0777, not sticky) or one of their own, a user who made run.rec (or a
    // FIFO) first can read what root writes into it, whatever its mode.
    // Refused in one line, before anything is written or emptied; the
    // shell's own descriptor (`--record /dev/stdout >theirs`) is still
    // written, as the caller pointed it there.
    if !as_root("a_recording_is_not_written_into_another_users_file_in_any_directory") {
        return;
    }
    use std::os::unix::fs::{PermissionsExt, chown};
    let dir = scratch("record-theirs");
    let iostat_root = iostat_tree(&dir);
    let iostat_root = iostat_root.to_str().unwrap();
    let shared = shared_dir(&dir);
    let home = dir.join("home");
    fs::create_dir(&home).unwrap();
    chown(&home, Some(NOBODY), Some(NOBODY)).unwrap();
    let iostat = |path: &str| {
        run(
            IOSTAT,
            &["--sysroot", iostat_root, "--record", path, "-x", "1", "1"],
        )
    };
    for place in [&shared, &home] {
        let theirs = place.join("theirs.rec");
        fs::write(&theirs, "theirs").unwrap();
        fs::set_permissions(&theirs, fs::Permissions::from_mode(0o600)).unwrap();
        chown(&theirs, Some(NOBODY), Some(NOBODY)).unwrap();
        let path = theirs.to_str().unwrap();
        assert_one_line_error(
            &iostat(path),
            path,
            "a regular file of user 65534: not written",
        );
        assert_eq!(fs::read_to_string(&theirs).unwrap(), "theirs");
    }
    let fifo = shared.join("fifo.rec");
    mkfifo(&fifo);
    chown(&fifo, Some(NOBODY), Some(NOBODY)).unwrap();
    let mut reader = fifo_reader(&fifo);
    let path = fifo.to_str().unwrap();
    assert_one_line_error(&iostat(path), path, "a FIFO of user 65534: not written");
    let mut taken = Vec::new();
    let _ = reader.read_to_end(&mut taken);
    assert!(taken.is_empty(), "{} bytes went to their FIFO", taken.len());
    // Root's new file beside theirs: 0600, theirs no more.
    let new = shared.join("new.rec");
    let out = iostat(new.to_str().unwrap());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        fs::metadata(&new).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // The shell's descriptor on their file (standard error here, as
    // standard output takes the report).
    let theirs = fs::OpenOptions::new()
        .write(true)
        .open(shared.join("theirs.rec"))
        .unwrap();
    let out = Command::new(IOSTAT)
        .args(["--sysroot", iostat_root])
        .args(["--record", "/dev/stderr", "-x", "1", "1"])
        .stdout(Stdio::null())
        .stderr(theirs)
        .status()
        .unwrap();
    assert!(out.success());
    let written = fs::read_to_string(shared.join("theirs.rec")).unwrap();
    assert!(
        written.starts_with("{\"format\":\"hwstat-recording\""),
        "{written}"
    );
}

/// `mkfifo p; gzip <p >run.rec.gz & sudo vcpustat --record p`: root is
/// not to write into a FIFO another user made (in a sticky directory or
/// not: they may have made it where root meant to create its file), and
/// the refusal says what to do instead, `--record - | READER`, which
/// works: standard output carries the recording alone (the reports go to
/// standard error), read by that user's gzip, and it replays to the reports
/// the run printed. `vcpustat trace record -w -` too; `-w -` with
/// `--record -` is refused, the two would mix.
#[test]
fn a_users_fifo_is_refused_with_a_way_to_feed_its_reader_that_works() {
    if !as_root("a_users_fifo_is_refused_with_a_way_to_feed_its_reader_that_works") {
        return;
    }
    use std::os::unix::fs::chown;
    let dir = scratch("fifo-advice");
    let root = vcpustat_tree(&dir);
    let root = root.to_str().unwrap();
    let shared = shared_dir(&dir);
    let advice = "record to `-` (standard output) and pipe that to it";
    for place in [shared.clone(), sticky_dir(&dir)] {
        let fifo = place.join("p");
        mkfifo(&fifo);
        chown(&fifo, Some(NOBODY), Some(NOBODY)).unwrap();
        let mut reader = fifo_reader(&fifo);
        let path = fifo.to_str().unwrap();
        let out = run(VCPUSTAT, &["--sysroot", root, "--record", path, "0.1", "2"]);
        assert_one_line_error(&out, path, "a FIFO of user 65534");
        assert_one_line_error(&out, path, advice);
        let mut taken = Vec::new();
        let _ = reader.read_to_end(&mut taken);
        assert!(taken.is_empty(), "{} bytes went to their FIFO", taken.len());
    }
    // The advice: their gzip reads the recording from a pipe.
    let gzipped = shared.join("run.rec.gz");
    let mut vcpustat = Command::new(VCPUSTAT)
        .args(["--sysroot", root, "--record", "-", "0.1", "2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let gzip = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "sh",
            "-c",
        ])
        .arg(r#"exec gzip >"$0""#)
        .arg(&gzipped)
        .stdin(vcpustat.stdout.take().unwrap())
        .status()
        .unwrap();
    let recorded = vcpustat.wait_with_output().unwrap();
    let reports = String::from_utf8_lossy(&recorded.stderr).into_owned();
    assert!(recorded.status.success() && gzip.success(), "{reports}");
    assert!(reports.contains("cpu0 "), "{reports}");
    let unzipped = Command::new("zcat").arg(&gzipped).output().unwrap();
    assert!(unzipped.status.success());
    let recording = dir.join("run.rec");
    fs::write(&recording, &unzipped.stdout).unwrap();
    let replayed = run(
        VCPUSTAT,
        &["--replay", recording.to_str().unwrap(), "0.1", "2"],
    );
    assert!(replayed.status.success());
    assert_eq!(String::from_utf8_lossy(&replayed.stdout), reports);
    // vcpustat trace record -w -: the DTL recording on standard output.
    let trace_root = trace_tree(&dir.join("trace"));
    let trace_root = trace_root.to_str().unwrap();
    let record = [
        "trace",
        "record",
        "--sysroot",
        trace_root,
        "--duration",
        "0.2s",
    ];
    let dtl = dir.join("lpar.dtl");
    let out = Command::new(VCPUSTAT)
        .args(record)
        .args(["-w", "-"])
        .stdout(fs::File::create(&dtl).unwrap())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = run(VCPUSTAT, &["trace", "report", dtl.to_str().unwrap()]);
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    let both = run(
        VCPUSTAT,
        &[&record[..], &["-w", "-", "--record", "/dev/stdout"]].concat(),
    );
    assert_eq!(both.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&both.stderr),
        "vcpustat: -w and --record cannot both write to standard output: the two \
         recordings would mix; name a file for one\n"
    );
    assert!(both.stdout.is_empty());
}

/// `--record -` sends the reports to standard error: when that is the
/// same file as standard output (`>run.rec 2>&1`, `2>&1 | gzip`), they
/// would mix into the recording, which no replay then reads. Refused
/// before anything is written, the reason on that same file; `/dev/null`
/// for both, which nobody reads, is accepted.
#[test]
fn a_recording_on_standard_output_is_refused_where_standard_error_goes_too() {
    let dir = scratch("stdout-stderr");
    let root = iostat_tree(&dir);
    let args = [
        "--sysroot",
        root.to_str().unwrap(),
        "--record",
        "-",
        "0.1",
        "2",
    ];
    let refused = "iostat-rs: cannot create recording -: standard output and standard \
                   error are the same";
    let run_with = |stdout: Stdio, stderr: Stdio| {
        Command::new(IOSTAT)
            .args(args)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .status()
            .unwrap()
    };
    // >run.rec 2>&1
    let file = dir.join("run.rec");
    let out = fs::File::create(&file).unwrap();
    let status = run_with(out.try_clone().unwrap().into(), out.into());
    let written = fs::read_to_string(&file).unwrap();
    assert_eq!(status.code(), Some(1), "{written}");
    assert!(
        written.starts_with(&format!("{refused} regular file: the reports would mix")),
        "{written}"
    );
    assert_eq!(written.lines().count(), 1, "{written}");
    // 2>&1 | READER: one pipe for both.
    let (mut reader, writer) = std::io::pipe().unwrap();
    let status = run_with(writer.try_clone().unwrap().into(), writer.into());
    let mut piped = String::new();
    reader.read_to_string(&mut piped).unwrap();
    assert_eq!(status.code(), Some(1), "{piped}");
    assert!(piped.starts_with(&format!("{refused} FIFO")), "{piped}");
    // Both thrown away: nothing mixes where nobody reads.
    let status = run_with(Stdio::null(), Stdio::null());
    assert!(status.success());
}

/// `--svg -` and `--textfile -` are refused, where `--record -` is
/// standard output: they used to create a file named `-` in the working
/// directory, unasked.
#[test]
fn a_chart_or_textfile_named_dash_is_refused() {
    let dir = scratch("dash");
    let root = iostat_tree(&dir);
    for option in ["--svg", "--textfile"] {
        let out = Command::new(IOSTAT)
            .args(["--sysroot", root.to_str().unwrap(), option, "-", "0.1", "2"])
            .current_dir(&dir)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_one_line_error(
            &out,
            &format!("{option} -: "),
            "`-` is no standard output here",
        );
        assert!(out.stdout.is_empty());
        assert!(!dir.join("-").exists(), "{option} - made a file");
    }
}

#[test]
fn no_output_goes_through_a_planted_link_behind_roots_own() {
    // In /tmp, root's own link (mine -> x/out) may lead through a link
    // another user planted (x -> a directory of root's): the kernel's
    // fs.protected_symlinks refuses x even behind root's link, and so must
    // --svg, --textfile, --record and trace record -w, which check it
    // themselves when the sysctl is off. Each is refused in one line naming
    // x, and nothing is written. (The race of a directory swapped for a
    // link between a check and the open cannot be tested reliably: the
    // directory is walked name by name, which leaves it no window.)
    if !as_root("no_output_goes_through_a_planted_link_behind_roots_own") {
        return;
    }
    use std::os::unix::fs::lchown;
    let dir = scratch("links-behind-links");
    let iostat_root = iostat_tree(&dir);
    let trace_root = trace_tree(&dir.join("trace"));
    let shared = sticky_dir(&dir);
    let private = dir.join("private");
    fs::create_dir_all(private.join("out")).unwrap();
    let planted = shared.join("x");
    symlink(&private, &planted).unwrap();
    lchown(&planted, Some(NOBODY), Some(NOBODY)).unwrap();
    // Root's links to it: by whole path, and from their own directory.
    symlink(planted.join("out"), shared.join("mine")).unwrap();
    symlink("x/out", shared.join("relative")).unwrap();
    let what = format!(
        "{}: a link owned by user 65534 in a sticky directory others can write: not followed",
        planted.display()
    );
    let (iostat_root, trace_root) = (iostat_root.to_str().unwrap(), trace_root.to_str().unwrap());
    for link in ["mine", "relative"] {
        for (option, name) in [
            ("--svg", "c.svg"),
            ("--textfile", "x.prom"),
            ("--record", "run.rec"),
        ] {
            let path = shared.join(link).join(name);
            let path = path.to_str().unwrap();
            let out = run(
                IOSTAT,
                &["--sysroot", iostat_root, option, path, "-x", "1", "1"],
            );
            assert_one_line_error(&out, path, &what);
        }
    }
    let path = shared.join("mine/trace.dtl");
    let path = path.to_str().unwrap();
    let args = [
        "trace",
        "record",
        "--sysroot",
        trace_root,
        "--duration",
        "1s",
        "-w",
        path,
    ];
    assert_one_line_error(&run(VCPUSTAT, &args), path, &what);
    assert_eq!(fs::read_dir(private.join("out")).unwrap().count(), 0);
    // Nor is --record's own name followed through x when it is root's
    // link (mine.rec -> x/out/fifo): a FIFO there, which a reader waits
    // on, gets nothing.
    let fifo = private.join("out/fifo");
    mkfifo(&fifo);
    let mut reader = fifo_reader(&fifo);
    let link = shared.join("mine.rec");
    symlink("x/out/fifo", &link).unwrap();
    let path = link.to_str().unwrap();
    let out = run(
        IOSTAT,
        &["--sysroot", iostat_root, "--record", path, "-x", "1", "1"],
    );
    assert_one_line_error(&out, path, &what);
    let mut taken = Vec::new();
    let _ = reader.read_to_end(&mut taken);
    assert!(taken.is_empty(), "{} bytes went through x", taken.len());
}

#[test]
fn no_output_may_name_the_recording_a_run_reads() {
    // `--replay F --svg F` replaced the recording with the chart. The check
    // comes before the recording is read, so any file shows it.
    let dir = scratch("replay-outputs");
    let recording = dir.join("run.rec");
    fs::write(&recording, "a recording\n").unwrap();
    let path = recording.to_str().unwrap();
    let same = dir.join(".").join("run.rec");
    let same = same.to_str().unwrap();
    for program in [IOSTAT, VCPUSTAT, env!("CARGO_BIN_EXE_cxlstat")] {
        for option in ["--svg", "--textfile"] {
            let mut args = vec!["--replay", path, option, same];
            if program.ends_with("cxlstat") {
                args.extend(["-e", "clock_ticks"]);
            }
            args.extend(["1", "2"]);
            let out = run(program, &args);
            assert_one_line_error(
                &out,
                same,
                "the file --replay reads: writing it would destroy it",
            );
        }
    }
    let out = run(VCPUSTAT, &["trace", "report", "--svg", same, path]);
    assert_one_line_error(&out, same, "the file trace report reads");
    assert_eq!(fs::read_to_string(&recording).unwrap(), "a recording\n");
}

/// Sends SIGTERM to `child` and returns its status and standard error,
/// failing the test (naming `program`) unless it ended within 4 s: the
/// grace period a stop signal gives a stalled write.
fn end_with_sigterm(child: &mut Child, program: &str) -> (ExitStatus, String) {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let stopped = Instant::now();
    let status = wait_with_timeout(child, Duration::from_secs(5), program);
    let mut err = Vec::new();
    child.stderr.take().unwrap().read_to_end(&mut err).unwrap();
    let err = String::from_utf8_lossy(&err).into_owned();
    assert!(
        stopped.elapsed() < Duration::from_secs(4),
        "{program}: {:?} after SIGTERM: {err}",
        stopped.elapsed()
    );
    (status, err)
}

/// A `--record` FIFO whose reader keeps it open and stops reading (a
/// stalled `gzip`): once the pipe is full, a stop signal still ends the
/// run within the grace period, with the recording's error, a closed JSON
/// document, and vcpustat's frequency put back. The write used to block
/// until SIGKILL, which left the frequency changed. Each tool hands its
/// stop flag to the recording on its own path: iostat-rs's reports and its
/// expositions (`-o prometheus`), vcpustat, cxlstat.
#[test]
fn a_recording_fifo_nobody_reads_does_not_keep_a_stop_signal_out() {
    let dir = scratch("record-fifo");
    let root = vcpustat_tree(&dir);
    let freq_before = fs::read_to_string(root.join(FREQ)).unwrap();
    let sysroot = root.to_str().unwrap().to_string();
    // cxlstat counts on a software PMU, which perf must let it open.
    let cxl_root = dir.join("cxl");
    cxlstat_support::software_tree(&cxl_root, &[("cxl_pmu_mem0.0", 0)]);
    let cxl_sysroot = cxl_root.to_str().unwrap().to_string();
    // Each run, and whether its standard output is one JSON document.
    let mut runs: Vec<(&str, Vec<&str>, bool)> = vec![
        (IOSTAT, vec!["-x", "-o", "JSON"], true),
        (IOSTAT, vec!["-o", "prometheus"], false),
        (
            VCPUSTAT,
            vec![
                "--sysroot",
                &sysroot,
                "--freq",
                "100",
                "--temporary",
                "-o",
                "json",
            ],
            true,
        ),
    ];
    if cxlstat_support::perf_usable("a_recording_fifo_nobody_reads_does_not_keep_a_stop_signal_out")
    {
        runs.push((
            env!("CARGO_BIN_EXE_cxlstat"),
            vec!["--sysroot", &cxl_sysroot, "-e", "cpu_clock", "-o", "json"],
            true,
        ));
    }
    for (program, args, json) in runs {
        let fifo = dir.join("rec.fifo");
        mkfifo(&fifo);
        // The reader: open, never read. O_RDWR opens a FIFO without a writer.
        let reader = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&fifo)
            .unwrap();
        // Standard output to a file: a pipe the test did not read would fill too.
        let stdout = dir.join("stdout");
        let mut child = KillOnDrop(
            Command::new(program)
                .args(&args)
                .args(["--record", fifo.to_str().unwrap(), "0.001"])
                .stdout(fs::File::create(&stdout).unwrap())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        );
        // Until the pipe is full (what it holds stops growing, though a
        // frame comes every millisecond): the recorder then waits on it.
        let queued = || {
            let mut bytes: libc::c_int = 0;
            // SAFETY: FIONREAD writes one int, on a descriptor we own.
            unsafe { libc::ioctl(reader.as_raw_fd(), libc::FIONREAD, &mut bytes) };
            bytes
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        let (mut last, mut steady) = (0, 0);
        while steady < 3 {
            assert!(
                Instant::now() < deadline,
                "{program}: the FIFO never filled"
            );
            std::thread::sleep(Duration::from_millis(100));
            let now = queued();
            steady = if now > 0 && now == last {
                steady + 1
            } else {
                0
            };
            last = now;
        }
        let (status, err) = end_with_sigterm(&mut child, program);
        assert_eq!(status.code(), Some(1), "{program}: {err}");
        assert!(
            err.contains("cannot write recording") && err.contains("stopped by signal 15"),
            "{program}: {err}"
        );
        if json {
            let doc: Result<serde_json::Value, _> =
                serde_json::from_slice(&fs::read(&stdout).unwrap());
            assert!(doc.is_ok(), "{program}: the JSON document is not closed");
        }
        // What reached the FIFO ends without an end line: a write that
        // failed ends the recording as cut, not as a run that ended.
        let mut queued_bytes = vec![0u8; queued() as usize];
        (&reader).read_exact(&mut queued_bytes).unwrap();
        let recorded = String::from_utf8_lossy(&queued_bytes);
        assert!(
            recorded.starts_with("{\"format\":\"hwstat-recording\"")
                && !recorded.contains("{\"end\":"),
            "{program}: {} bytes: {recorded:.200}",
            recorded.len()
        );
        drop(reader);
    }
    assert_eq!(fs::read_to_string(root.join(FREQ)).unwrap(), freq_before);
}

/// `vcpustat trace record --record FIFO`, the reader stalled: the recording
/// of kernel files holds its header until the trace ends, then one frame,
/// which waits on the full pipe. A stop signal still ends the run within the
/// grace period, with the recording's error and `dtl_event_mask` restored:
/// the trace recorder hands its stop flag to the recording as the interval
/// tools do (without it, the last write waited until SIGKILL).
#[test]
fn trace_record_ends_on_a_stop_signal_with_its_recording_fifo_full() {
    let dir = scratch("trace-record-fifo");
    let root = trace_tree(&dir);
    let mask = root.join(DTL).join("dtl_event_mask");
    let fifo = dir.join("kernel-files.fifo");
    mkfifo(&fifo);
    // The reader: open, never read. O_RDWR opens a FIFO without a writer,
    // O_NONBLOCK lets the test fill it.
    let reader = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    let output = dir.join("out.dtl");
    let mut child = KillOnDrop(
        Command::new(VCPUSTAT)
            .args(["trace", "record", "--sysroot", root.to_str().unwrap()])
            .args(["--events", "cede", "-w", output.to_str().unwrap()])
            .args(["--record", fifo.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // Recording: the stop handler is in place and the rings are open.
    crate::procstate::await_handler(child.id(), libc::SIGTERM);
    let last_ring = root.join(DTL).join("cpu-1");
    crate::procstate::await_open_file(child.id(), &last_ring.canonicalize().unwrap());
    // Fill what room the header left in the pipe.
    let room = [0u8; 4096];
    while (&reader).write(&room).is_ok() {}
    let (status, err) = end_with_sigterm(&mut child, "vcpustat trace record");
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains("kernel-file recording") && err.contains("stopped by signal 15"),
        "{err}"
    );
    assert_eq!(fs::read_to_string(&mask).unwrap(), "0x07\n");
    drop(reader);
}

/// A `--sysroot` tree of plain files (a copy of `/proc`, as the project's
/// own fixtures are) is not switched on or off: written, the statistics
/// file would hold `1` or `0` for good where it held `off` or counters, and
/// every later run on the tree would fail. Reports and `--status` go on.
#[test]
fn vcpustat_does_not_switch_a_copy_of_proc_on_disk() {
    let dir = scratch("vcpustat-copy");
    let root = dir.join("off");
    let off = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vcpustat/off");
    for file in [STATS, FREQ] {
        write(&root, file, &fs::read_to_string(off.join(file)).unwrap());
    }
    let sysroot = root.to_str().unwrap();
    for args in [&["1", "1"][..], &["--enable"][..]] {
        let out = run(VCPUSTAT, &[&["--sysroot", sysroot][..], args].concat());
        assert_one_line_error(
            &out,
            &format!("/{STATS}"),
            "not the kernel's: nothing written",
        );
        assert_eq!(
            fs::read_to_string(root.join(STATS)).unwrap(),
            "off\n",
            "{args:?}"
        );
    }
    let out = run(VCPUSTAT, &["--sysroot", sysroot, "--status"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A link planted where a recording goes, to a device other than those
/// that discard what they get, is refused before the device is opened:
/// opening alone arms a watchdog, and a tape rewinds on close.
#[test]
fn a_link_to_a_device_is_refused_before_the_device_is_opened() {
    const TEST: &str = "a_link_to_a_device_is_refused_before_the_device_is_opened";
    let strace_missing = Command::new("strace")
        .arg("-V")
        .output()
        .is_err()
        .then(|| "`strace` is not installed (Debian: apt-get install strace)".to_string());
    if !crate::skip::runs_unless(TEST, strace_missing) {
        return;
    }
    let dir = scratch("device-link");
    let link = dir.join("run.rec");
    symlink("/dev/urandom", &link).unwrap();
    let log = dir.join("strace.log");
    let out = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=open,openat,openat2", "-o"])
        .arg(&log)
        .arg(IOSTAT)
        .arg("--record")
        .arg(&link)
        .args(["-d", "0.1", "1"])
        .output()
        .unwrap();
    assert_one_line_error(&out, "run.rec", "a character device (1:9), expected a file");
    let opens = fs::read_to_string(&log).unwrap();
    let opened: Vec<&str> = opens
        .lines()
        .filter(|l| l.contains("urandom") && l.contains("O_WRONLY"))
        .collect();
    assert!(opened.is_empty(), "{opened:?}");
}
