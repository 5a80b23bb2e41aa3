//! End-to-end fault tests for `iostat-rs`: bad kernel files, files that are
//! missing or unreadable, devices coming and going, counters going
//! backwards, a closed output pipe, and stop signals during a JSON run.
//!
//! Every run must end without a panic (exit status not 101, no "panicked"
//! on stderr). Where sysstat has a behaviour for the fault, iostat-rs must
//! have the same: the test runs Debian's `/usr/bin/iostat` on the same
//! fixture tree in a private mount namespace and compares exit status,
//! the error message and (when sysstat succeeds) the output, dates
//! normalised. Two documented exceptions: a directory where a file is
//! expected may also give sysstat's open error (exit 2, one line naming the
//! file), and a fault confined to the sysfs `stat` file of a device that
//! `/proc/diskstats` lists must not reach iostat-rs at all (it takes those
//! counters from `/proc/diskstats`; a kernel always prints the same numbers
//! in both), so the output is compared with sysstat's on the healthy tree.
//! Where sysstat has no behaviour (a damaged recording), iostat-rs must print
//! one line naming the file and exit non-zero.
//!
//! "Unreadable" cannot be made with `chmod 000`, because root ignores file
//! modes. The tests use a directory where a file is expected (reading gives
//! EISDIR), and, through a recording, an `EACCES` result replayed for the
//! file (`{"errno":13}` in the frame), which is exactly what a non-root user
//! would meet.
//!
//! The sysstat comparison needs root and `unshare`; without them it is
//! skipped with a printed reason, unless `CI=true`.

use crate::fakekernel;
use crate::pipes::Collected;
use crate::procstate::{self, KillOnDrop};
use crate::scratch::{Scratch, scratch};
use crate::skip;
use crate::sysstat_compare;

use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use std::{env, fs, thread};

use fakekernel::{Scenario, Shape};
use sysstat_compare::{Run, namespace_unavailable, normalise, pinned, sysstat_on_tree};

fn binary() -> Option<PathBuf> {
    if let Ok(p) = env::var("IOSTAT_RS") {
        return Some(PathBuf::from(p));
    }
    option_env!("CARGO_BIN_EXE_iostat-rs").map(PathBuf::from)
}

/// The binary, or `None` after printing why not (a panic under CI=true).
fn binary_or_skip(test: &str) -> Option<PathBuf> {
    match binary() {
        Some(p) if p.exists() => Some(p),
        other => {
            let reason = match other {
                Some(p) => format!("{} does not exist", p.display()),
                None => "the iostat-rs binary is not part of this build".into(),
            };
            skip::skip(test, &reason);
            None
        }
    }
}

/// True when the sysstat comparison can run; prints why not otherwise.
fn can_compare(test: &str) -> bool {
    match namespace_unavailable() {
        None => true,
        Some(reason) => {
            skip::skip(&format!("{test} (comparison with sysstat)"), &reason);
            false
        }
    }
}

/// A test's own empty directory, removed when the test ends, passed or
/// failed.
fn temp_dir(name: &str) -> Scratch {
    scratch(&format!("faults-{name}"))
}

/// A scenario written to disk: `root` is the tree a run reads through
/// `--sysroot`; `dir` holds it and whatever the test writes beside it
/// (recordings), and is removed with them when the test ends.
struct Tree {
    dir: Scratch,
    root: PathBuf,
}

fn run_rs(bin: &Path, args: &[&str]) -> Run {
    let out = pinned(&mut Command::new(bin))
        .args(args)
        .output()
        .expect("run iostat-rs");
    Run::from(out)
}

fn assert_no_panic(what: &str, run: &Run) {
    assert!(
        run.code.is_some() && run.code != Some(101) && !run.stderr.contains("panicked"),
        "{what}: iostat-rs crashed (status {:?}):\n{}",
        run.code,
        run.stderr
    );
}

/// A non-zero exit with exactly one line on stderr that names `file`.
fn assert_one_line_error(what: &str, run: &Run, file: &str) {
    assert_no_panic(what, run);
    assert_ne!(
        run.code,
        Some(0),
        "{what}: expected a failure, got success:\n{}",
        run.stdout
    );
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "{what}: expected one error line, got {:?}",
        run.stderr
    );
    assert!(
        lines[0].contains(file),
        "{what}: the error {:?} does not name {file}",
        lines[0]
    );
}

/// A small healthy machine: 6 disks with partitions, 20-field diskstats.
fn healthy_tree(name: &str) -> (Tree, Scenario) {
    let sc = loop_seed(|seed| {
        let sc = Scenario::generate(
            seed,
            &Shape {
                disks: 6,
                max_parts: 2,
                samples: 2,
                backwards: false,
                hotplug: false,
                ticks_wrap: true,
            },
        );
        // Want partitions and at least two used disks.
        let used = sc.samples[0]
            .devices
            .iter()
            .filter(|d| d.parent.is_none() && d.counters.0[0] + d.counters.0[4] > 0)
            .count();
        (used >= 2 && sc.samples[0].devices.iter().any(|d| d.parent.is_some())).then_some(sc)
    });
    let dir = temp_dir(name);
    let root = dir.join("root");
    sc.write_root(0, &root).expect("write tree");
    (Tree { dir, root }, sc)
}

fn loop_seed(mut pick: impl FnMut(u64) -> Option<Scenario>) -> Scenario {
    (7..1000).find_map(&mut pick).expect("some seed fits")
}

/// A fault applied to a healthy tree.
struct Fault {
    name: &'static str,
    apply: fn(&Path, &Scenario),
    args: &'static [&'static str],
    /// Name the first five disks on the command line (sysstat and iostat-rs
    /// then both read `/sys/block/<dev>/stat` for them).
    named: bool,
    expect: Expect,
}

/// What iostat-rs must do with a fault.
#[derive(Clone, Copy)]
enum Expect {
    /// Exactly what sysstat does on the same tree.
    Sysstat,
    /// What sysstat does, or sysstat's own reaction to a file it cannot
    /// open (exit 2, one line naming the file). For a directory where a
    /// file is expected, where sysstat's silence is an accident of
    /// `fopen(3)` succeeding on a directory.
    SysstatOrOpenError(&'static str),
    /// What sysstat prints for the tree *without* the fault: iostat-rs takes
    /// the counters of `/sys/block` devices from `/proc/diskstats` (one read
    /// instead of one file per device; on a real kernel both carry the same
    /// numbers), so a fault confined to a sysfs `stat` file that a kernel
    /// cannot produce does not reach it (docs/sysstat-compat.md, "Counter source").
    Healthy,
}

fn first_disk(sc: &Scenario) -> String {
    sc.samples[0]
        .devices
        .iter()
        .find(|d| d.parent.is_none())
        .expect("a disk")
        .name
        .clone()
}

fn write(root: &Path, rel: &str, text: &[u8]) {
    let path = root.join(rel);
    let _ = fs::remove_file(&path);
    let _ = fs::remove_dir_all(&path);
    fs::write(path, text).expect("write fault");
}

/// Replaces line `n` (0-based) of a file.
fn edit_line(root: &Path, rel: &str, n: usize, line: &str) {
    let text = fs::read_to_string(root.join(rel)).expect("read");
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines[n] = line.to_string();
    write(root, rel, format!("{}\n", lines.join("\n")).as_bytes());
}

fn dir_instead_of_file(root: &Path, rel: &str) {
    let path = root.join(rel);
    let _ = fs::remove_file(&path);
    fs::create_dir_all(path).expect("mkdir");
}

/// Short, long, garbled, 4-field and empty `stat` files for five disks.
fn garble_five_sysfs_files(r: &Path, sc: &Scenario) {
    let disks: Vec<String> = sc.samples[0]
        .devices
        .iter()
        .filter(|d| d.parent.is_none())
        .map(|d| d.name.clone())
        .collect();
    write(
        r,
        &format!("sys/block/{}/stat", disks[0]),
        b"       1        2        3 garbage\n",
    );
    write(
        r,
        &format!("sys/block/{}/stat", disks[1]),
        b"1 2 3 4 5 6 7 8 0 10 11 12 13 14 15 16 17 18 19 20\n",
    );
    write(
        r,
        &format!("sys/block/{}/stat", disks[2]),
        b"1 2 3 4 5 6 7 8 0 10\n",
    );
    write(r, &format!("sys/block/{}/stat", disks[3]), b"5 6 7 8\n");
    write(r, &format!("sys/block/{}/stat", disks[4]), b"");
}

/// The first disk's counts at the edge of 64 bits: reads at 2^64 - 1 and
/// one write, whose sum wraps to 0. sysstat tests each count on its own
/// for "never used", so the disk is shown (iostat.c, the report loop and
/// `compute_device_groups_stats`).
fn counts_summing_to_zero(r: &Path, sc: &Scenario) {
    let disk = first_disk(sc);
    let counts = "18446744073709551615 0 0 0 1 0 0 0 0 0 0 0 0 0 0 0 0";
    let text = fs::read_to_string(r.join("proc/diskstats")).expect("read");
    let n = text
        .lines()
        .position(|l| l.split_whitespace().nth(2) == Some(disk.as_str()))
        .expect("the disk's line");
    let numbers: Vec<&str> = text.lines().nth(n).unwrap().split_whitespace().collect();
    edit_line(
        r,
        "proc/diskstats",
        n,
        &format!("{:>4} {:>7} {disk} {counts}", numbers[0], numbers[1]),
    );
    write(
        r,
        &format!("sys/block/{disk}/stat"),
        format!("{counts}\n").as_bytes(),
    );
}

const FAULTS: &[Fault] = &[
    Fault {
        name: "counts-summing-to-zero",
        apply: counts_summing_to_zero,
        args: &["-d"],
        named: false,
        expect: Expect::Sysstat,
    },
    Fault {
        name: "counts-summing-to-zero-x",
        apply: counts_summing_to_zero,
        args: &["-x"],
        named: false,
        expect: Expect::Sysstat,
    },
    Fault {
        name: "proc-stat-missing",
        apply: |r, _| fs::remove_file(r.join("proc/stat")).unwrap(),
        args: &["-x"],
        named: false,
        expect: Expect::Sysstat,
    },
    Fault {
        name: "proc-stat-is-a-directory",
        apply: |r, _| dir_instead_of_file(r, "proc/stat"),
        args: &["-x"],
        named: false,
        expect: Expect::SysstatOrOpenError("/proc/stat"),
    },
    Fault {
        name: "proc-stat-garbled",
        apply: |r, _| edit_line(r, "proc/stat", 0, "cpu  12 x 9 y"),
        args: &["-c"],
        named: false,
        expect: Expect::Sysstat,
    },
    Fault {
        name: "proc-stat-short-cpu-line",
        apply: |r, _| edit_line(r, "proc/stat", 0, "cpu  100 20 30"),
        args: &["-c"],
        named: false,
        expect: Expect::Sysstat,
    },
    Fault {
        name: "proc-stat-empty",
        apply: |r, _| write(r, "proc/stat", b""),
        args: &["-c"],
        named: false,
        expect: Expect::Sysstat,
    },
    Fault {
        // sscanf("%llu") takes a sign: -1 is 2^64-1 ticks of user time.
        name: "proc-stat-negative-and-signed-fields",
        apply: |r, _| edit_line(r, "proc/stat", 0, "cpu  -1 +20 30 400 -5 6 7 8 0 0"),
        args: &["-c"],
        named: false,
        expect: Expect::Sysstat,
    },
    Fault {
        name: "proc-stat-long-cpu-line",
        apply: |r, _| {
            edit_line(
                r,
                "proc/stat",
                0,
                "cpu  100 20 30 400 50 6 7 8 9 10 11 12 13 14 15",
            )
        },
        args: &["-c"],
        named: false,
        expect: Expect::Sysstat,
    },
    Fault {
        name: "uptime-long-line",
        apply: |r, _| {
            write(
                r,
                "proc/uptime",
                b"12345.67 2345.67 and some trailing words\n",
            )
        },
        args: &["-d"],
        named: false,
        expect: Expect::Sysstat,
    },
    Fault {
        name: "uptime-three-decimals",
        apply: |r, _| write(r, "proc/uptime", b"12345.678 2345.67\n"),
        args: &["-x"],
        named: false,
        expect: Expect::Sysstat,
    },
    Fault {
        name: "uptime-missing",
        apply: |r, _| fs::remove_file(r.join("proc/uptime")).unwrap(),
        args: &["-x"],
        named: false,
        expect: Expect::Sysstat,
    },
    Fault {
        name: "uptime-garbled",
        apply: |r, _| write(r, "proc/uptime", b"up a while\n"),
        args: &["-x"],
        named: false,
        expect: Expect::Sysstat,
    },
    Fault {
        name: "uptime-no-decimals",
        apply: |r, _| write(r, "proc/uptime", b"12345 6789\n"),
        args: &["-d"],
        named: false,
        expect: Expect::Sysstat,
    },
    Fault {
        name: "uptime-empty",
        apply: |r, _| write(r, "proc/uptime", b""),
        args: &["-d"],
        named: false,
        expect: Expect::Sysstat,
    },
    Fault {
        name: "uptime-is-a-directory",
        apply: |r, _| dir_instead_of_file(r, "proc/uptime"),
        args: &["-d"],
        named: false,
        expect: Expect::SysstatOrOpenError("/proc/uptime"),
    },
    Fault {
        name: "diskstats-missing",
        apply: |r, _| fs::remove_file(r.join("proc/diskstats")).unwrap(),
        args: &["-x", "-p", "ALL"],
        named: false,
        expect: Expect::Sysstat,
    },
    Fault {
        name: "diskstats-is-a-directory",
        apply: |r, _| dir_instead_of_file(r, "proc/diskstats"),
        args: &["-d", "-p", "ALL"],
        named: false,
        expect: Expect::SysstatOrOpenError("/proc/diskstats"),
    },
    Fault {
        name: "diskstats-short-long-garbled-lines",
        apply: |r, _| {
            edit_line(r, "proc/diskstats", 0, "   8       0 sda 1 2 3");
            edit_line(
                r,
                "proc/diskstats",
                1,
                "   8       1 sdzz1 1 2 3 4 5 6 7 8 0 10 11 12 13 14 15 16 17 18 19 20 21 22",
            );
            edit_line(r, "proc/diskstats", 2, "garbage line with words only");
        },
        args: &["-x", "-p", "ALL"],
        named: false,
        expect: Expect::Sysstat,
    },
    Fault {
        name: "diskstats-16-and-7-field-lines",
        apply: |r, _| {
            edit_line(
                r,
                "proc/diskstats",
                0,
                "   8       0 sdq 10 20 30 40 50 60 70 80 0 100 110 120 130",
            );
            edit_line(r, "proc/diskstats", 1, "   8       1 sdq1 5 6 7 8");
        },
        args: &["-d", "-p", "ALL"],
        named: false,
        expect: Expect::Sysstat,
    },
    Fault {
        name: "diskstats-binary-bytes-and-empty-lines",
        apply: |r, _| {
            let mut text = fs::read(r.join("proc/diskstats")).unwrap();
            text.extend_from_slice(
                b"\n\n   8  99 sdy 1 2 \xff\xfe 4 5 6 7 8 0 10 11\n\x00\x01\x02\n",
            );
            write(r, "proc/diskstats", &text);
        },
        args: &["-d", "-p", "ALL"],
        named: false,
        expect: Expect::Sysstat,
    },
    Fault {
        name: "diskstats-value-overflow",
        apply: |r, _| {
            edit_line(
                r,
                "proc/diskstats",
                0,
                "   8       0 sdo 99999999999999999999999 2 3 4 5 6 7 8 0 10 11",
            )
        },
        args: &["-d", "-p", "ALL"],
        named: false,
        expect: Expect::Sysstat,
    },
    Fault {
        name: "sysfs-stat-short-long-garbled",
        apply: garble_five_sysfs_files,
        args: &["-x", "ALL"],
        named: false,
        expect: Expect::Healthy,
    },
    Fault {
        name: "sysfs-stat-short-long-garbled-basic",
        apply: |r, sc| {
            let disk = first_disk(sc);
            write(
                r,
                &format!("sys/block/{disk}/stat"),
                b"       1        2        3 garbage\n",
            );
        },
        args: &["-d"],
        named: false,
        expect: Expect::Healthy,
    },
    Fault {
        name: "sysfs-stat-is-a-directory",
        apply: |r, sc| dir_instead_of_file(r, &format!("sys/block/{}/stat", first_disk(sc))),
        args: &["-x", "ALL"],
        named: false,
        expect: Expect::Healthy,
    },
    Fault {
        name: "sysfs-stat-missing",
        apply: |r, sc| {
            fs::remove_file(r.join(format!("sys/block/{}/stat", first_disk(sc)))).unwrap()
        },
        args: &["-d", "ALL"],
        named: false,
        expect: Expect::Healthy,
    },
    Fault {
        name: "sysfs-stray-file-in-block",
        apply: |r, _| write(r, "sys/block/not-a-device", b"hello\n"),
        args: &["-x", "ALL"],
        named: false,
        expect: Expect::Sysstat,
    },
    Fault {
        name: "sysfs-stat-3-fields-garbled-named",
        apply: |r, sc| {
            write(
                r,
                &format!("sys/block/{}/stat", first_disk(sc)),
                b"       1        2        3 garbage\n",
            )
        },
        args: &["-x"],
        named: true,
        expect: Expect::Sysstat,
    },
    Fault {
        name: "sysfs-stat-10-fields-named",
        apply: |r, sc| {
            write(
                r,
                &format!("sys/block/{}/stat", first_disk(sc)),
                b"1 2 3 4 5 6 7 8 0 10\n",
            )
        },
        args: &["-x"],
        named: true,
        expect: Expect::Sysstat,
    },
    Fault {
        name: "sysfs-stat-20-fields-named",
        apply: |r, sc| {
            write(
                r,
                &format!("sys/block/{}/stat", first_disk(sc)),
                b"1 2 3 4 5 6 7 8 0 10 11 12 13 14 15 16 17 18 19 20\n",
            )
        },
        args: &["-x"],
        named: true,
        expect: Expect::Sysstat,
    },
    Fault {
        name: "sysfs-stat-4-field-old-partition-format-named-x",
        apply: |r, sc| {
            write(
                r,
                &format!("sys/block/{}/stat", first_disk(sc)),
                b"5 6 7 8\n",
            )
        },
        args: &["-x"],
        named: true,
        expect: Expect::Sysstat,
    },
    Fault {
        name: "sysfs-stat-4-field-old-partition-format-named-d",
        apply: |r, sc| {
            write(
                r,
                &format!("sys/block/{}/stat", first_disk(sc)),
                b"5 6 7 8\n",
            )
        },
        args: &["-d"],
        named: true,
        expect: Expect::Sysstat,
    },
    Fault {
        name: "sysfs-stat-empty-named",
        apply: |r, sc| write(r, &format!("sys/block/{}/stat", first_disk(sc)), b""),
        args: &["-d"],
        named: true,
        expect: Expect::Sysstat,
    },
    Fault {
        name: "sysfs-stat-is-a-directory-named",
        apply: |r, sc| dir_instead_of_file(r, &format!("sys/block/{}/stat", first_disk(sc))),
        args: &["-d"],
        named: true,
        expect: Expect::SysstatOrOpenError("/sys/block/"),
    },
    Fault {
        name: "sysfs-stat-missing-named",
        apply: |r, sc| {
            fs::remove_file(r.join(format!("sys/block/{}/stat", first_disk(sc)))).unwrap()
        },
        args: &["-x"],
        named: true,
        expect: Expect::Sysstat,
    },
];

/// Every fault through `--sysroot`, compared with sysstat on the same tree.
/// The faults run at once: each mostly waits for its programs and their
/// mount namespaces.
#[test]
fn faulty_kernel_files_behave_like_the_c_iostat() {
    let Some(bin) = binary_or_skip("faults") else {
        return;
    };
    let compare = can_compare("faults");
    let failures: Vec<String> = thread::scope(|s| {
        let runs: Vec<_> = FAULTS
            .iter()
            .map(|fault| s.spawn(|| check_fault(&bin, compare, fault)))
            .collect();
        runs.into_iter()
            .filter_map(|run| run.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    assert!(
        failures.is_empty(),
        "faults differing from sysstat:\n{}",
        failures.join("\n\n")
    );
}

/// One fault through `--sysroot`: how it differs from sysstat, if it does
/// (compared only when `compare`); panics if iostat-rs panics.
fn check_fault(bin: &Path, compare: bool, fault: &Fault) -> Option<String> {
    let (tree, sc) = healthy_tree(fault.name);
    let root = &tree.root;
    (fault.apply)(root, &sc);
    let mut args: Vec<String> = fault.args.iter().map(|a| a.to_string()).collect();
    if fault.named {
        let disks = sc.samples[0].devices.iter().filter(|d| d.parent.is_none());
        args.extend(disks.take(5).map(|d| d.name.clone()));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut rs_args = vec!["--sysroot", root.to_str().expect("utf-8 temp path")];
    rs_args.extend_from_slice(&args);
    let rs = run_rs(bin, &rs_args);
    assert_no_panic(fault.name, &rs);
    let mut failure = None;
    if compare {
        let verdict = match fault.expect {
            Expect::Sysstat => same_behaviour(&sysstat_on_tree(root, &args).unwrap(), &rs),
            Expect::SysstatOrOpenError(file) => {
                let sys = sysstat_on_tree(root, &args).unwrap();
                same_behaviour(&sys, &rs).or_else(|e| {
                    let one_line = rs.stderr.lines().count() == 1;
                    if rs.code == Some(2) && one_line && rs.stderr.contains(file) {
                        Ok(())
                    } else {
                        Err(format!(
                            "{e}\n(nor the open error: exit 2, one line naming {file})"
                        ))
                    }
                })
            }
            Expect::Healthy => {
                let (healthy, _) = healthy_tree(&format!("{}-healthy", fault.name));
                let sys = sysstat_on_tree(&healthy.root, &args).unwrap();
                same_behaviour(&sys, &rs)
                    .map_err(|e| format!("(compared with sysstat on the healthy tree) {e}"))
            }
        };
        if let Err(e) = verdict {
            failure = Some(format!("{} (iostat {}): {e}", fault.name, args.join(" ")));
        }
    }
    failure
}

/// Same exit status; sysstat's error text inside iostat-rs's one error line;
/// and, when sysstat succeeds, the same output (dates normalised).
fn same_behaviour(sys: &Run, rs: &Run) -> Result<(), String> {
    if sys.code != rs.code {
        return Err(format!(
            "exit status: sysstat {:?}, iostat-rs {:?} (stderr {:?})",
            sys.code, rs.code, rs.stderr
        ));
    }
    let sys_err = sys.stderr.trim();
    if sys_err.is_empty() {
        if !rs.stderr.is_empty() {
            return Err(format!(
                "sysstat is silent, iostat-rs printed {:?}",
                rs.stderr
            ));
        }
    } else if rs.stderr.lines().count() != 1 || !rs.stderr.contains(sys_err) {
        return Err(format!(
            "sysstat says {sys_err:?}, iostat-rs {:?}",
            rs.stderr
        ));
    }
    if sys.code == Some(0) && normalise(&sys.stdout).0 != normalise(&rs.stdout).0 {
        return Err(format!(
            "output differs\n--- sysstat\n{}\n--- iostat-rs\n{}",
            sys.stdout, rs.stdout
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Recordings: read errors sysstat cannot meet as root, damaged recordings,
// and devices coming and going between samples.

/// Records one sample of `root` with iostat-rs; returns the recording's lines.
fn record(bin: &Path, root: &Path, dir: &Path, args: &[&str]) -> Vec<serde_json::Value> {
    let rec = dir.join(format!("rec-{}.ndjson", fs::read_dir(dir).unwrap().count()));
    let mut all = vec![
        "--sysroot",
        root.to_str().unwrap(),
        "--record",
        rec.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let run = run_rs(bin, &all);
    assert_eq!(run.code, Some(0), "recording failed: {}", run.stderr);
    fs::read_to_string(&rec)
        .expect("recording")
        .lines()
        .map(|l| serde_json::from_str(l).expect("recording line is JSON"))
        .collect()
}

fn write_recording(path: &Path, lines: &[serde_json::Value]) {
    let text: Vec<String> = lines.iter().map(|v| v.to_string()).collect();
    fs::write(path, text.join("\n") + "\n").expect("write recording");
}

/// Replaces every entry for `key` in every frame.
fn set_entry(lines: &mut [serde_json::Value], key: &str, entry: serde_json::Value) {
    let mut found = false;
    for frame in lines.iter_mut().skip(1) {
        if let Some(e) = frame["entries"].get_mut(key) {
            *e = entry.clone();
            found = true;
        }
    }
    assert!(found, "the recording never read {key}");
}

/// What iostat-rs must do with a replayed read fault: sysstat's behaviour
/// for the same failure of `fopen(3)`/`read(2)` (from its source: `/proc/stat`
/// and `/proc/uptime` are fatal, exit 2; an unreadable `/proc/diskstats` is
/// silently an empty device list; a device whose `stat` cannot be opened is
/// left out of the report).
enum ReplayExpect {
    /// Exit 2 with this message (after `iostat-rs: `) on one line.
    Fatal(&'static str),
    /// Exit 0, nothing on stderr, a device header and no device rows.
    NoDevices,
    /// Exit 0, nothing on stderr; this device is left out, the others shown.
    Omitted(String),
}

#[test]
fn unreadable_files_in_a_replay_behave_like_the_c_iostat() {
    let Some(bin) = binary_or_skip("faults") else {
        return;
    };
    let (tree, sc) = healthy_tree("replay-errors");
    let (root, dir) = (&tree.root, &*tree.dir);
    let disks: Vec<String> = sc.samples[0]
        .devices
        .iter()
        .filter(|d| d.parent.is_none())
        .map(|d| d.name.clone())
        .take(3)
        .collect();
    let named: Vec<&str> = ["-x"]
        .into_iter()
        .chain(disks.iter().map(String::as_str))
        .collect();
    let eacces = serde_json::json!({"errno": 13});
    let cases: Vec<(&str, Vec<&str>, String, serde_json::Value, ReplayExpect)> = vec![
        (
            "/proc/stat EACCES",
            vec!["-x"],
            "read /proc/stat".into(),
            eacces.clone(),
            ReplayExpect::Fatal("Cannot open /proc/stat: Permission denied"),
        ),
        (
            "/proc/uptime EACCES",
            vec!["-x"],
            "read /proc/uptime".into(),
            eacces.clone(),
            ReplayExpect::Fatal("Cannot read /proc/uptime"),
        ),
        (
            "/proc/diskstats EACCES",
            vec!["-x", "-p", "ALL"],
            "read /proc/diskstats".into(),
            eacces.clone(),
            ReplayExpect::NoDevices,
        ),
        (
            "/proc/diskstats EIO",
            vec!["-d", "-p", "ALL"],
            "read /proc/diskstats".into(),
            serde_json::json!({"errno": 5}),
            ReplayExpect::NoDevices,
        ),
        (
            "/proc/diskstats binary garbage",
            vec!["-x", "-p", "ALL"],
            "read /proc/diskstats".into(),
            serde_json::json!({"hex": "00ff10fe0a0a"}),
            ReplayExpect::NoDevices,
        ),
        (
            "named device's sysfs stat EACCES",
            named.clone(),
            format!("read /sys/block/{}/stat", disks[0]),
            eacces.clone(),
            ReplayExpect::Omitted(disks[0].clone()),
        ),
    ];
    for (what, args, key, entry, expect) in cases {
        let mut lines = record(&bin, root, dir, &args);
        set_entry(&mut lines, &key, entry);
        let rec = dir.join("edited.ndjson");
        write_recording(&rec, &lines);
        let mut all = vec!["--replay", rec.to_str().unwrap()];
        all.extend_from_slice(&args);
        let run = run_rs(&bin, &all);
        assert_no_panic(what, &run);
        match expect {
            ReplayExpect::Fatal(msg) => {
                assert_eq!(run.code, Some(2), "{what}: {}", run.stderr);
                assert!(
                    run.stderr.contains(msg),
                    "{what}: expected {msg:?}, got {:?}",
                    run.stderr
                );
                assert_eq!(run.stderr.lines().count(), 1, "{what}: {:?}", run.stderr);
            }
            ReplayExpect::NoDevices => {
                assert_eq!((run.code, run.stderr.as_str()), (Some(0), ""), "{what}");
                assert_eq!(
                    device_columns(&run.stdout),
                    vec![Vec::<String>::new()],
                    "{what}:\n{}",
                    run.stdout
                );
            }
            ReplayExpect::Omitted(name) => {
                assert_eq!((run.code, run.stderr.as_str()), (Some(0), ""), "{what}");
                let mut want: Vec<String> = disks.iter().filter(|d| **d != name).cloned().collect();
                want.sort();
                assert_eq!(
                    device_columns(&run.stdout),
                    vec![want],
                    "{what}:\n{}",
                    run.stdout
                );
            }
        }
    }
}

/// A healthy tree for the open-file-limit tests, the directory holding it,
/// and the three ways of reading its devices: `-x` (listing `/sys/block`),
/// `-x -p ALL` (`/proc/diskstats`) and `-x` with three disks named (each
/// looked up under `/sys/block`).
fn nofile_tree(name: &str) -> (Tree, Vec<Vec<String>>) {
    let (tree, sc) = healthy_tree(name);
    let named: Vec<String> = ["-x".to_string()]
        .into_iter()
        .chain(
            sc.samples[0]
                .devices
                .iter()
                .filter(|d| d.parent.is_none())
                .take(3)
                .map(|d| d.name.clone()),
        )
        .collect();
    let modes = vec![
        vec!["-x".to_string()],
        ["-x", "-p", "ALL"].map(String::from).to_vec(),
        named,
    ];
    (tree, modes)
}

/// `iostat-rs --sysroot ROOT ARGS 0.01 3` under `prlimit --nofile=LIMIT`.
fn run_under_nofile(bin: &Path, limit: u32, root: &Path, args: &[&str]) -> Run {
    let out = pinned(&mut Command::new("prlimit"))
        .arg(format!("--nofile={limit}"))
        .arg("--")
        .arg(bin)
        .args(["--sysroot", root.to_str().unwrap()])
        .args(args)
        .args(["0.01", "3"])
        .output()
        .expect("prlimit (util-linux) runs");
    Run::from(out)
}

/// Out of file descriptors (`ulimit -n`), a run fails with one line
/// saying so; it never reports without the devices it could not open.
/// Listing `/sys/block`, opening `/proc/diskstats` or a device's `stat`
/// file with EMFILE says nothing about the device, where sysstat, as a
/// failed `open` goes, leaves it out and exits 0 (iostat-rs did the same
/// at a limit of 6 to 8 descriptors, and with `--latency` at 14, below
/// which the run failed anyway). Every limit from the one at which the run
/// cannot start to one it does not reach, in each way of reading the
/// devices; and a recording of such a read refuses to replay, as the run
/// failed.
#[test]
fn out_of_descriptors_is_an_error_not_a_missing_device() {
    let Some(bin) = binary_or_skip("faults") else {
        return;
    };
    let (tree, modes) = nofile_tree("nofile");
    let (root, dir) = (&tree.root, &*tree.dir);
    for mode in &modes {
        let mode: Vec<&str> = mode.iter().map(String::as_str).collect();
        let healthy = run_rs(
            &bin,
            &[&["--sysroot", root.to_str().unwrap()], &mode[..]].concat(),
        );
        assert_eq!(healthy.code, Some(0), "{mode:?}: {}", healthy.stderr);
        let want = device_columns(&healthy.stdout).remove(0);
        assert!(!want.is_empty(), "{mode:?}:\n{}", healthy.stdout);
        let mut succeeded = false;
        for limit in 4..=16 {
            let run = run_under_nofile(&bin, limit, root, &mode);
            let what = format!("{mode:?} under a limit of {limit} descriptors");
            assert_no_panic(&what, &run);
            if run.code == Some(0) {
                assert_eq!(run.stderr, "", "{what}");
                assert_eq!(
                    device_columns(&run.stdout),
                    vec![want.clone(); 3],
                    "{what}: a report left devices out:\n{}",
                    run.stdout
                );
                succeeded = true;
            } else {
                assert_eq!(run.stderr.lines().count(), 1, "{what}: {:?}", run.stderr);
            }
        }
        assert!(succeeded, "{mode:?}: no limit up to 16 was enough");
    }
    // A recording that holds such a read (EMFILE for `/sys/block`).
    let mut lines = record(&bin, root, dir, &["-x"]);
    set_entry(
        &mut lines,
        "list /sys/block",
        serde_json::json!({"errno": 24}),
    );
    let rec = dir.join("starved.ndjson");
    write_recording(&rec, &lines);
    let run = run_rs(&bin, &["--replay", rec.to_str().unwrap(), "-x"]);
    assert_no_panic("replayed EMFILE", &run);
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    assert_eq!(
        run.stderr.lines().collect::<Vec<_>>(),
        [format!(
            "iostat-rs: {}: the recorded run could not read `list /sys/block`: Too many open \
             files (os error 24) (out of file descriptors); its reports cannot be replayed whole",
            rec.display()
        )]
    );
}

/// A run recorded out of file descriptors replays as it ran: a live run
/// that failed for want of a descriptor makes a recording whose replay
/// fails too, and never one that reports without the devices the run could
/// not look up (`/sys/block/NAME` for a device named on the command line
/// was kept as "not a directory", and its replay reported no device and
/// exited 0); a run that succeeded replays to the same reports.
#[test]
fn a_run_recorded_out_of_descriptors_replays_as_it_ran() {
    let Some(bin) = binary_or_skip("faults") else {
        return;
    };
    let (tree, modes) = nofile_tree("nofile-rec");
    let (root, dir) = (&tree.root, &*tree.dir);
    let mut failed = 0;
    for mode in &modes {
        let mode: Vec<&str> = mode.iter().map(String::as_str).collect();
        for limit in 4..=16 {
            let rec = dir.join(format!("nofile-{limit}.ndjson"));
            let _ = fs::remove_file(&rec);
            let live = run_under_nofile(
                &bin,
                limit,
                root,
                &[&["--record", rec.to_str().unwrap()], &mode[..]].concat(),
            );
            let what = format!("{mode:?} recorded under a limit of {limit} descriptors");
            assert_no_panic(&what, &live);
            if !rec.exists() {
                assert_ne!(live.code, Some(0), "{what}: no recording");
                continue;
            }
            let replay = run_rs(
                &bin,
                &[
                    &["--replay", rec.to_str().unwrap()],
                    &mode[..],
                    &["0.01", "3"],
                ]
                .concat(),
            );
            assert_no_panic(&format!("{what}, replayed"), &replay);
            if live.code == Some(0) {
                assert_eq!(
                    (replay.code, replay.stdout.as_str()),
                    (Some(0), live.stdout.as_str()),
                    "{what}: {}",
                    replay.stderr
                );
            } else {
                failed += 1;
                assert_ne!(
                    replay.code,
                    Some(0),
                    "{what}: the run failed ({}), its replay reported:\n{}",
                    live.stderr,
                    replay.stdout
                );
                assert_eq!(
                    replay.stderr.lines().count(),
                    1,
                    "{what}: {:?}",
                    replay.stderr
                );
            }
        }
    }
    assert!(failed > 0, "no limit was tight enough to fail a run");
}

#[test]
fn damaged_recordings_are_refused_with_one_line() {
    let Some(bin) = binary_or_skip("faults") else {
        return;
    };
    let dir = temp_dir("damaged");
    let rec = dir.join("bad.ndjson");
    let (source, _) = healthy_tree("damaged-src");
    let root = &source.root;
    let good = record(&bin, root, &dir, &["-x"]);
    let header = good[0].to_string();
    let damaged: Vec<(&str, String)> = vec![
        ("empty file", String::new()),
        ("not JSON", "this is not a recording\n".into()),
        ("header only, no frames", format!("{header}\n")),
        (
            "truncated frame",
            format!("{header}\n{{\"index\":0,\"entries\":{{\"read /proc/stat\":{{\"te"),
        ),
        (
            "wrong format name",
            header.replace("hwstat-recording", "something-else") + "\n",
        ),
        (
            "future version",
            header.replace("\"version\":1", "\"version\":99") + "\n",
        ),
    ];
    for (what, text) in damaged {
        fs::write(&rec, text).unwrap();
        let run = run_rs(&bin, &["--replay", rec.to_str().unwrap(), "-x"]);
        assert_one_line_error(what, &run, rec.to_str().unwrap());
    }
    let missing = dir.join("missing.ndjson");
    let run = run_rs(&bin, &["--replay", missing.to_str().unwrap(), "-x"]);
    assert_one_line_error("missing recording", &run, missing.to_str().unwrap());
}

/// Devices that appear and disappear between samples and counters that go
/// backwards, spliced into one recording from per-sample recordings: every
/// report lists exactly the devices of its sample (`ALL` shows unused ones
/// too), and nothing panics.
#[test]
fn devices_coming_and_going_and_counters_going_backwards() {
    let Some(bin) = binary_or_skip("faults") else {
        return;
    };
    let dir = temp_dir("hotplug");
    for (seed, args) in [
        (11u64, &["-x", "ALL"][..]),
        (12, &["-d", "-p", "ALL"][..]),
        (13, &["-xs", "ALL"][..]),
    ] {
        let sc = loop_seed(|s| {
            let sc = Scenario::generate(
                seed * 1000 + s,
                &Shape {
                    disks: 12,
                    max_parts: 2,
                    samples: 4,
                    backwards: true,
                    hotplug: true,
                    ticks_wrap: true,
                },
            );
            let names = |k: usize| {
                sc.samples[k]
                    .devices
                    .iter()
                    .map(|d| d.name.clone())
                    .collect::<Vec<_>>()
            };
            (names(0) != names(1) || names(1) != names(2) || names(2) != names(3)).then_some(sc)
        });
        let mut frames = Vec::new();
        let mut header = None;
        for k in 0..sc.samples.len() {
            let root = dir.join(format!("s{seed}-{k}"));
            sc.write_root(k, &root).unwrap();
            let mut lines = record(&bin, &root, &dir, args);
            header.get_or_insert(lines[0].clone());
            let mut frame = lines.remove(1);
            frame["index"] = serde_json::json!(k);
            frames.push(frame);
        }
        let mut lines = vec![header.unwrap()];
        lines.extend(frames);
        let rec = dir.join(format!("spliced-{seed}.ndjson"));
        write_recording(&rec, &lines);
        let mut all = vec!["--replay", rec.to_str().unwrap()];
        all.extend_from_slice(args);
        all.extend_from_slice(&["1", "4"]);
        let run = run_rs(&bin, &all);
        assert_no_panic("hotplug replay", &run);
        assert_eq!(run.code, Some(0), "hotplug replay: {}", run.stderr);
        let reports = device_columns(&run.stdout);
        assert_eq!(reports.len(), 4, "four reports expected:\n{}", run.stdout);
        for (k, shown) in reports.iter().enumerate() {
            let mut expected: Vec<String> = sc.samples[k]
                .devices
                .iter()
                .filter(|d| args.contains(&"-p") || d.parent.is_none())
                // `ALL` and `-p ALL` show unused devices too.
                .filter(|d| args.contains(&"ALL") || d.counters.0.iter().any(|&v| v != 0))
                .map(|d| d.name.clone())
                .collect();
            let mut shown = shown.clone();
            expected.sort();
            shown.sort();
            assert_eq!(
                shown,
                expected,
                "report {k} of iostat {}:\n{}",
                args.join(" "),
                run.stdout
            );
        }
    }
}

/// The device names of each report of a plain-text run.
fn device_columns(stdout: &str) -> Vec<Vec<String>> {
    let mut reports: Vec<Vec<String>> = Vec::new();
    let mut in_devices = false;
    for line in stdout.lines() {
        if line.starts_with("Device ") {
            reports.push(Vec::new());
            in_devices = true;
        } else if line.is_empty() {
            in_devices = false;
        } else if in_devices {
            reports
                .last_mut()
                .unwrap()
                .push(line.split(' ').next().unwrap().to_string());
        }
    }
    reports
}

// ---------------------------------------------------------------------------
// Output pipe closed, stop signals.

#[test]
fn closed_output_pipe_ends_quietly() {
    let Some(bin) = binary_or_skip("faults") else {
        return;
    };
    let (tree, _) = healthy_tree("pipe");
    let root = &tree.root;
    let mut child = KillOnDrop(
        pinned(&mut Command::new(&bin))
            .args(["--sysroot", root.to_str().unwrap(), "-x", "1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn"),
    );
    let mut stdout = child.stdout.take().unwrap();
    // Some output, within a limit: a run that printed nothing would
    // otherwise hold the read for ever.
    let mut ready = libc::pollfd {
        fd: stdout.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for an open descriptor.
    let polled = unsafe { libc::poll(&mut ready, 1, 20_000) };
    assert_eq!(polled, 1, "no output within 20 s");
    let mut first = [0u8; 64];
    assert!(stdout.read(&mut first).expect("some output") > 0);
    drop(stdout); // like `| head -c 64`
    let status = wait_with_timeout(&mut child, Duration::from_secs(5));
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = status
        .unwrap_or_else(|at| panic!("iostat-rs kept running after its reader went away: {at}"));
    assert!(
        stderr.is_empty(),
        "expected a quiet end, stderr: {stderr:?}"
    );
    assert_eq!(status.code(), Some(0), "status {status:?}");
}

/// Waits for `child` at most `limit`; past it, kills and reaps it and
/// says where it was then ([`procstate::describe`]).
fn wait_with_timeout(
    child: &mut std::process::Child,
    limit: Duration,
) -> Result<std::process::ExitStatus, String> {
    let end = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return Ok(status);
        }
        if Instant::now() > end {
            let at = procstate::describe(child.id());
            let _ = child.kill();
            let _ = child.wait();
            return Err(at);
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// A reader that stops reading must not keep iostat-rs from answering a stop
/// signal: it ends within a second instead of waiting for the reader, and
/// says the output was cut short. Every signal that would kill it by
/// default from outside ends it the same way (SIGQUIT, SIGUSR1, SIGALRM
/// and SIGXFSZ used to kill it on the spot).
#[test]
fn a_stop_signal_ends_a_run_blocked_on_a_full_pipe() {
    let Some(bin) = binary_or_skip("faults") else {
        return;
    };
    let (tree, _) = healthy_tree("stalled");
    let root = &tree.root;
    // One run per signal, all at once: each mostly waits.
    let signals = [
        libc::SIGINT,
        libc::SIGTERM,
        libc::SIGHUP,
        libc::SIGQUIT,
        libc::SIGUSR1,
        libc::SIGALRM,
        libc::SIGXFSZ,
    ];
    let runs: Vec<_> = signals
        .into_iter()
        .map(|signal| {
            let (unread, stdout) = crate::pipes::one_page_pipe();
            let mut command = Command::new(&bin);
            pinned(&mut command)
                .args(["--sysroot", root.to_str().unwrap(), "-x", "0.01"])
                .stdout(stdout)
                .stderr(Stdio::piped());
            // Started from a script in the background, the suite ignores
            // SIGQUIT, and without this its run never stopped.
            procstate::with_default_action(&mut command, &[signal]);
            let child = KillOnDrop(command.spawn().expect("spawn"));
            (signal, unread, child)
        })
        .collect();
    // Output in a run's pipe takes its one slot (see `pipes`): from then
    // on the run waits for room, its stop handlers long installed.
    for (_, unread, _) in &runs {
        crate::pipes::wait_for_output(unread, Duration::from_secs(20));
    }
    // A report is over 1 KB: some twenty intervals later, each run is
    // surely blocked on output the reader does not take (a signal in the
    // sleep after the first report, all of it written, ends it with 0).
    thread::sleep(Duration::from_millis(200));
    for (signal, _, child) in &runs {
        // SAFETY: plain kill(2) on our own child's pid.
        assert_eq!(unsafe { libc::kill(child.id() as i32, *signal) }, 0);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    for (signal, _unread, mut child) in runs {
        let status = wait_with_timeout(
            &mut child,
            deadline.saturating_duration_since(Instant::now()),
        );
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        let status = status.unwrap_or_else(|at| {
            panic!("signal {signal}: iostat-rs stayed blocked on its output: {at}")
        });
        // The output is cut short (a JSON document would be left open):
        // said, and a failure, as for a recording whose reader stalled.
        assert_eq!(
            status.code(),
            Some(1),
            "signal {signal}: {status:?}, {err:?}"
        );
        assert_eq!(
            err,
            format!(
                "iostat-rs: cannot write output: stopped by signal {signal} while the output \
                 was not read\n"
            )
        );
    }
}

/// After a stop signal the rest of the output waits for a reader that
/// still reads, however slowly (within 10 s), also after a second signal:
/// the JSON document is whole. The grace was one second in all, and a
/// second signal ended it at once: either left the document open, with
/// status 0 and nothing said.
#[test]
fn a_stopped_run_finishes_its_output_for_a_slow_reader() {
    let Some(bin) = binary_or_skip("faults") else {
        return;
    };
    // 300 disks: a report of some 100 KB, 25 pipe pages.
    let dir = temp_dir("slow-reader");
    let root = dir.join("root");
    fs::create_dir_all(root.join("proc")).unwrap();
    let mut diskstats = String::new();
    for n in 0..300 {
        let name = format!("d{n:03}");
        fs::create_dir_all(root.join("sys/block").join(&name)).unwrap();
        diskstats.push_str(&format!(
            "   8 {n} {name} 100 0 800 10 50 0 400 20 0 30 30 0 0 0 0 0 0\n"
        ));
    }
    write(&root, "proc/diskstats", diskstats.as_bytes());
    write(&root, "proc/uptime", b"1000.00 900.00\n");
    write(
        &root,
        "proc/stat",
        b"cpu  100 0 100 1000 10 0 0 0 0 0\ncpu0 100 0 100 1000 10 0 0 0 0 0\n",
    );
    for signals in [&[libc::SIGTERM][..], &[libc::SIGTERM, libc::SIGINT]] {
        let (mut unread, stdout) = crate::pipes::one_page_pipe();
        let mut command = Command::new(&bin);
        pinned(&mut command)
            .args([
                "--sysroot",
                root.to_str().unwrap(),
                "-x",
                "-o",
                "JSON",
                "0.05",
            ])
            .stdout(stdout)
            .stderr(Stdio::piped());
        procstate::with_default_action(&mut command, &[libc::SIGINT, libc::SIGTERM]);
        let mut child = KillOnDrop(command.spawn().expect("spawn"));
        drop(command);
        crate::pipes::wait_for_output(&unread, Duration::from_secs(20));
        for &signal in signals {
            // SAFETY: plain kill(2) on our own child's pid.
            assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
            thread::sleep(Duration::from_millis(100));
        }
        // A page every 50 ms: over a second for the report.
        let mut document = Vec::new();
        let mut page = [0u8; 4096];
        loop {
            let n = unread.read(&mut page).unwrap();
            if n == 0 {
                break;
            }
            document.extend_from_slice(&page[..n]);
            thread::sleep(Duration::from_millis(50));
        }
        let status = procstate::wait_with_timeout(&mut child, Duration::from_secs(20), "iostat-rs");
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert_eq!(status.code(), Some(0), "{signals:?}: {err}");
        assert_eq!(err, "");
        let json: serde_json::Value = serde_json::from_slice(&document)
            .unwrap_or_else(|e| panic!("{e} in {} bytes", document.len()));
        let disks = &json["sysstat"]["hosts"][0]["statistics"][0]["disk"];
        assert_eq!(disks.as_array().map(Vec::len), Some(300));
    }
}

#[test]
fn stop_signals_close_the_json_document() {
    let Some(bin) = binary_or_skip("faults") else {
        return;
    };
    let (tree, _) = healthy_tree("signals");
    let root = &tree.root;
    // One run per signal, both at once: each mostly waits.
    let mut runs: Vec<_> = [("SIGINT", libc::SIGINT), ("SIGTERM", libc::SIGTERM)]
        .into_iter()
        .map(|(name, signal)| {
            let mut child = KillOnDrop(
                pinned(&mut Command::new(&bin))
                    .args(["--sysroot", root.to_str().unwrap(), "-x", "-o", "JSON", "1"])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("spawn"),
            );
            let out = Collected::new(child.stdout.take().unwrap());
            (name, signal, child, out)
        })
        .collect();
    // Until reports 0 and 1 (due at 0 and 1 s) have begun, and the run
    // waits for the next: the signal comes in the middle of an interval.
    for (name, _, child, out) in &mut runs {
        out.wait_for(
            &format!("{name}: the second report"),
            Duration::from_secs(30),
            |seen| String::from_utf8_lossy(seen).matches("\"avg-cpu\"").count() >= 2,
        );
        procstate::await_polling(child.id());
    }
    for (_, signal, child, _) in &runs {
        // SAFETY: plain kill(2) on our own child's pid.
        assert_eq!(unsafe { libc::kill(child.id() as i32, *signal) }, 0);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    for (name, _, mut child, out) in runs {
        let status = wait_with_timeout(
            &mut child,
            deadline.saturating_duration_since(Instant::now()),
        );
        let out = String::from_utf8(out.until_end(name, Duration::from_secs(5))).unwrap();
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        let status = status.unwrap_or_else(|at| panic!("{name}: iostat-rs did not stop: {at}"));
        assert!(!err.contains("panicked"), "{name}: {err}");
        assert_eq!(
            status.code(),
            Some(0),
            "{name}: status {status:?}, stderr {err:?}"
        );
        let doc: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| {
            panic!("{name}: output is not one closed JSON document ({e}):\n{out}")
        });
        let stats = doc["sysstat"]["hosts"][0]["statistics"]
            .as_array()
            .expect("statistics array");
        assert!(
            stats.len() >= 2,
            "{name}: expected the reports before the signal:\n{out}"
        );
        assert!(
            stats.iter().all(|s| s["disk"].is_array()),
            "{name}: every report has its disks"
        );
    }
}

/// The signals `pid` ignores and catches (`SigIgn`, `SigCgt` of
/// `/proc/PID/status`), as bit masks (bit N-1 for signal N).
fn signal_masks(pid: u32) -> (u64, u64) {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let mask = |field| procstate::status_mask(&status, field).unwrap();
    (mask("SigIgn:"), mask("SigCgt:"))
}

/// A stop signal ignored at the start stays ignored (`nohup`'s SIGHUP), as
/// under sysstat, which does not catch it; SIGINT does not: sysstat catches
/// it whatever its state, and a script stops a run it started with `&`
/// (SIGINT ignored, without job control) with `kill -INT`, which still
/// closes the JSON document.
#[test]
fn a_stop_signal_ignored_at_the_start_stays_ignored_but_sigint() {
    use std::os::unix::process::CommandExt;
    let Some(bin) = binary_or_skip("faults") else {
        return;
    };
    let (tree, _) = healthy_tree("ignored-signals");
    let root = &tree.root;
    let mut command = Command::new(&bin);
    command
        .args(["--sysroot", root.to_str().unwrap(), "-o", "JSON", "0.1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    // SAFETY: signal(2) only, async-signal-safe, in the child before exec.
    unsafe {
        command.pre_exec(|| {
            for signal in [libc::SIGHUP, libc::SIGQUIT, libc::SIGTERM, libc::SIGINT] {
                libc::signal(signal, libc::SIG_IGN);
            }
            Ok(())
        })
    };
    let mut child = KillOnDrop(command.spawn().expect("spawn"));
    let out = Collected::new(child.stdout.take().unwrap());
    procstate::await_polling(child.id());
    let bit = |signal: i32| 1u64 << (signal - 1);
    let (ignoring, catching) = signal_masks(child.id());
    for signal in [libc::SIGHUP, libc::SIGQUIT, libc::SIGTERM] {
        assert_ne!(ignoring & bit(signal), 0, "signal {signal} not ignored");
    }
    for signal in [libc::SIGINT, libc::SIGUSR1, libc::SIGXFSZ] {
        assert_ne!(catching & bit(signal), 0, "signal {signal} not caught");
    }
    // SAFETY: plain kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGHUP) }, 0);
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let status = wait_with_timeout(&mut child, Duration::from_secs(10))
        .unwrap_or_else(|at| panic!("iostat-rs did not stop on SIGINT: {at}"));
    assert_eq!(status.code(), Some(0), "{status:?}");
    let out = out.until_end("iostat-rs", Duration::from_secs(5));
    serde_json::from_slice::<serde_json::Value>(&out)
        .unwrap_or_else(|e| panic!("not one closed JSON document ({e})"));
}

/// The descriptors `pid` holds: descriptor number and what it points to.
fn open_descriptors(pid: u32) -> Vec<(String, String)> {
    let mut open: Vec<(String, String)> = fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("the running iostat-rs's /proc/PID/fd")
        .filter_map(Result::ok)
        .filter_map(|e| {
            let target = fs::read_link(e.path()).ok()?;
            Some((
                e.file_name().to_string_lossy().into_owned(),
                target.display().to_string(),
            ))
        })
        .collect();
    open.sort();
    open
}

/// The descriptors this test process passes on to every program it starts
/// (those above 2 without close-on-exec), as `open_descriptors` lists
/// them: none of iostat-rs's own. A runner leaves them open for its
/// workload; under `perf record -a` they were an eventfd, a pipe and
/// `/dev/null`.
fn inherited_descriptors() -> Vec<(String, String)> {
    open_descriptors(std::process::id())
        .into_iter()
        .filter(|(fd, _)| {
            let Ok(fd) = fd.parse::<i32>() else {
                return false;
            };
            // SAFETY: F_GETFD only reads the flags of a descriptor number;
            // one closed since the listing gives -1.
            let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
            fd > 2 && flags >= 0 && flags & libc::FD_CLOEXEC == 0
        })
        .collect()
}

/// An interval run holds one descriptor for its stop signals (an eventfd,
/// where a socket pair and a copy of its writer took three) and no more as
/// it goes: the descriptors after the third report are those after the
/// ninth, none a socket or a pipe of its own. The run is stopped after
/// that (SIGINT, a normal end): with a count of 12 it could end before a
/// busy test read its tenth report, and a finished process holds none.
#[test]
fn an_interval_run_holds_one_descriptor_for_signals_and_leaks_none() {
    let Some(bin) = binary_or_skip("faults") else {
        return;
    };
    let (tree, _) = healthy_tree("descriptors");
    let root = &tree.root;
    let inherited = inherited_descriptors();
    let mut child = pinned(&mut Command::new(&bin))
        .args(["--sysroot", root.to_str().unwrap(), "-x", "0.05", "600"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut reports = 0;
    let mut snapshots = Vec::new();
    for line in std::io::BufRead::lines(stdout) {
        if line.expect("read the report").starts_with("avg-cpu:") {
            reports += 1;
            // The report before this one is complete, and the program
            // sleeps until the next: the state of a run between reports.
            if reports == 4 || reports == 10 {
                let mut own = open_descriptors(pid);
                own.retain(|fd| !inherited.contains(fd));
                snapshots.push(own);
            }
            if reports == 10 {
                // SAFETY: signalling our own child by its pid.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGINT) };
            }
        }
    }
    let status = wait_with_timeout(&mut child, Duration::from_secs(10))
        .unwrap_or_else(|at| panic!("the run did not end: {at}"));
    assert!(status.success(), "status {status:?}");
    assert_eq!(snapshots.len(), 2, "{reports} reports");
    assert_eq!(
        snapshots[0], snapshots[1],
        "descriptors opened as the run went on"
    );
    let eventfds = snapshots[0]
        .iter()
        .filter(|(_, t)| t == "anon_inode:[eventfd]")
        .count();
    assert_eq!(eventfds, 1, "{:?}", snapshots[0]);
    let sockets: Vec<_> = snapshots[0]
        .iter()
        .filter(|(_, t)| t.starts_with("socket:"))
        .collect();
    assert!(sockets.is_empty(), "sockets held: {sockets:?}");
}
