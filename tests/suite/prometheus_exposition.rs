//! The Prometheus expositions of iostat-rs (`-o prometheus`, `--textfile`):
//! node_exporter's names, labels, types and base units with values worked
//! out by hand from the fixture files, HELP/TYPE once per exposition, no
//! client-side timestamps, and a textfile replaced atomically.

use std::path::Path;
use std::process::{Command, Output};

use crate::scratch::Scratch;

/// One CPU, two disks (`sda` whole, `sda1` its partition) and a loop device
/// in the 17-statistic format, and an old kernel's 11-statistic `sdb`,
/// removed when the test ends.
fn tree(test: &str) -> Scratch {
    let root = crate::scratch::scratch(&format!("expo-{test}"));
    for dir in ["proc", "sys/block/sda", "sys/block/sdb", "run/udev/data"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    std::fs::write(
        root.join("proc/stat"),
        "cpu  250 7 50 800 50 3 4 6 20 2\ncpu0 250 7 50 800 50 3 4 6 20 2\nintr 1\n",
    )
    .unwrap();
    std::fs::write(root.join("proc/uptime"), "100.00 90.00\n").unwrap();
    std::fs::write(
        root.join("proc/diskstats"),
        "   8       0 sda 10 2 80 1500 4 1 16 2500 3 4200 9000 6 7 64 11 5 12\n\
            8       1 sda1 1 0 8 1 0 0 0 0 0 1 1 0 0 0 0 0 0\n\
            8      16 sdb 1 2 3 4 5 6 7 8 9 10 11\n",
    )
    .unwrap();
    std::fs::write(
        root.join("run/udev/data/b8:0"),
        "S:disk/by-id/ata-X\nE:ID_MODEL=Model_X\nE:ID_SERIAL_SHORT=S123\nE:ID_REVISION=1.0\n",
    )
    .unwrap();
    root
}

fn iostat(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iostat-rs"))
        .arg("--sysroot")
        .arg(root)
        .args(args)
        .output()
        .unwrap()
}

fn text(out: Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn disk_counters_under_node_exporters_names_in_base_units() {
    let root = tree("disk");
    let text = text(iostat(&root, &["-d", "-o", "prometheus"]));
    // sda: 17 statistics; sectors * 512 = bytes, ms / 1000 = seconds,
    // discarded sectors stay sectors (as node_exporter 1.5.0 exports them).
    for line in [
        "node_disk_reads_completed_total{device=\"sda\"} 10",
        "node_disk_reads_merged_total{device=\"sda\"} 2",
        "node_disk_read_bytes_total{device=\"sda\"} 40960",
        "node_disk_read_time_seconds_total{device=\"sda\"} 1.5",
        "node_disk_writes_completed_total{device=\"sda\"} 4",
        "node_disk_writes_merged_total{device=\"sda\"} 1",
        "node_disk_written_bytes_total{device=\"sda\"} 8192",
        "node_disk_write_time_seconds_total{device=\"sda\"} 2.5",
        "node_disk_io_now{device=\"sda\"} 3",
        "node_disk_io_time_seconds_total{device=\"sda\"} 4.2",
        "node_disk_io_time_weighted_seconds_total{device=\"sda\"} 9",
        "node_disk_discards_completed_total{device=\"sda\"} 6",
        "node_disk_discards_merged_total{device=\"sda\"} 7",
        "node_disk_discarded_sectors_total{device=\"sda\"} 64",
        "node_disk_discard_time_seconds_total{device=\"sda\"} 0.011",
        "node_disk_flush_requests_total{device=\"sda\"} 5",
        "node_disk_flush_requests_time_seconds_total{device=\"sda\"} 0.012",
        "node_disk_info{device=\"sda\",major=\"8\",minor=\"0\",model=\"Model_X\",serial=\"S123\",revision=\"1.0\"} 1",
        "node_disk_info{device=\"sdb\",major=\"8\",minor=\"16\"} 1",
        "node_disk_io_time_weighted_seconds_total{device=\"sdb\"} 0.011",
    ] {
        assert!(
            text.contains(&format!("{line}\n")),
            "missing {line} in\n{text}"
        );
    }
    // An 11-statistic line has no discard or flush series; the partition is
    // not a whole device; one exposition has each family once, typed.
    assert!(!text.contains("node_disk_discards_completed_total{device=\"sdb\"}"));
    assert!(!text.contains("sda1"), "{text}");
    assert_eq!(text.matches("# TYPE node_disk_io_now gauge\n").count(), 1);
    assert_eq!(
        text.matches("# TYPE node_disk_read_bytes_total counter\n")
            .count(),
        1
    );
    assert_eq!(text.matches("# TYPE node_disk_info gauge\n").count(), 1);
    // -p ALL adds the partition; a named device is exported alone.
    let all = self::text(iostat(&root, &["-d", "-p", "ALL", "-o", "prometheus"]));
    assert!(all.contains("node_disk_reads_completed_total{device=\"sda1\"} 1\n"));
    let named = self::text(iostat(&root, &["-d", "sdb", "-o", "prometheus"]));
    assert!(!named.contains("device=\"sda\""), "{named}");
}

#[test]
fn cpu_counters_under_node_exporters_names() {
    let root = tree("cpu");
    let text = text(iostat(&root, &["-c", "-o", "prometheus"]));
    // Ticks / USER_HZ (100); node_exporter's user and nice include guest time.
    for (mode, seconds) in [
        ("user", "2.5"),
        ("nice", "0.07"),
        ("system", "0.5"),
        ("idle", "8"),
        ("iowait", "0.5"),
        ("irq", "0.03"),
        ("softirq", "0.04"),
        ("steal", "0.06"),
    ] {
        let line = format!("node_cpu_seconds_total{{cpu=\"0\",mode=\"{mode}\"}} {seconds}\n");
        assert!(text.contains(&line), "missing {line} in\n{text}");
    }
    assert!(text.contains("node_cpu_guest_seconds_total{cpu=\"0\",mode=\"user\"} 0.2\n"));
    assert!(text.contains("node_cpu_guest_seconds_total{cpu=\"0\",mode=\"nice\"} 0.02\n"));
    assert!(!text.contains("node_disk"), "{text}");
}

/// The sample lines of an exposition: `name{labels} value`, two fields
/// exactly (a third would be a client-side timestamp).
fn assert_no_timestamps(exposition: &str) {
    for line in exposition
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let after_labels = line.rsplit_once('}').map_or(line, |(_, rest)| rest);
        assert_eq!(
            after_labels.split_whitespace().count(),
            if line.contains('}') { 1 } else { 2 },
            "{line}"
        );
    }
}

#[test]
fn stdout_has_one_complete_exposition_per_report() {
    let root = tree("stdout");
    let text = text(iostat(&root, &["-o", "prometheus", "0.01", "3"]));
    let expositions: Vec<&str> = text.split("\n\n").filter(|e| !e.is_empty()).collect();
    assert_eq!(expositions.len(), 3, "{text}");
    for e in &expositions {
        assert_eq!(e.matches("# HELP node_disk_io_now ").count(), 1, "{e}");
        assert_eq!(
            e.matches("# TYPE node_cpu_seconds_total counter").count(),
            1
        );
        assert_no_timestamps(e);
    }
}

/// Runs a program on a recording of tests/fixtures/charts and splits its
/// standard output into expositions.
fn replayed_expositions(program: &str, recording: &str, args: &[&str]) -> Vec<String> {
    let rec = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/charts")
        .join(recording);
    let out = Command::new(program)
        .arg("--replay")
        .arg(rec)
        .args(args)
        .output()
        .unwrap();
    text(out)
        .split("\n\n")
        .filter(|e| !e.is_empty())
        .map(str::to_string)
        .collect()
}

/// The values of the sample `series` (`name{labels}`) in each exposition.
fn values(expositions: &[String], series: &str) -> Vec<f64> {
    expositions
        .iter()
        .map(|e| {
            e.lines()
                .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
                .unwrap_or_else(|| panic!("no {series} in\n{e}"))
                .parse()
                .unwrap()
        })
        .collect()
}

#[test]
fn with_y_and_in_vcpustat_the_first_sample_has_no_exposition_as_it_has_no_report() {
    // The recording's sda has done 18, 38 and 60 reads at its frames 1 to
    // 3, which -y reports (frame 0 only starts the run).
    let iostat = env!("CARGO_BIN_EXE_iostat-rs");
    let e = replayed_expositions(
        iostat,
        "iostat.rec",
        &["-x", "-y", "-o", "prometheus", "1", "3"],
    );
    let reads = values(&e, "node_disk_reads_completed_total{device=\"sda\"}");
    assert_eq!(reads, [18.0, 38.0, 60.0]);
    // vcpustat's first report comes one interval after the start: its
    // first exposition holds the first interval's 100 dispatches of cpu0.
    let vcpustat = env!("CARGO_BIN_EXE_vcpustat");
    let e = replayed_expositions(vcpustat, "vcpustat.rec", &["-o", "prometheus", "1", "3"]);
    let cpu0 = values(&e, "vcpustat_dispatches_total{cpu=\"0\"}");
    assert_eq!(cpu0, [100.0, 200.0, 300.0]);
}

#[test]
fn cpu_seconds_never_go_back_though_the_kernels_iowait_does() {
    // In the recording, cpu0's iowait is 30 ticks at frame 2 and 15 at
    // frame 3, as a kernel's can be; node_exporter keeps 0.3 s.
    let iostat = env!("CARGO_BIN_EXE_iostat-rs");
    let e = replayed_expositions(iostat, "iostat.rec", &["-o", "prometheus", "1", "4"]);
    let iowait = values(&e, "node_cpu_seconds_total{cpu=\"0\",mode=\"iowait\"}");
    assert_eq!(iowait, [0.0, 0.15, 0.3, 0.3]);
    // No counter of any exposition of the whole recording goes back.
    let e = replayed_expositions(iostat, "iostat.rec", &["-x", "-o", "prometheus", "1"]);
    let counters = |e: &str| -> Vec<(String, f64)> {
        let typed: Vec<&str> = e
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE ")?.strip_suffix(" counter"))
            .collect();
        e.lines()
            .filter(|l| !l.starts_with('#'))
            .filter(|l| typed.iter().any(|t| l.starts_with(&format!("{t}{{"))))
            .map(|l| {
                let (series, value) = l.rsplit_once(' ').unwrap();
                (series.to_string(), value.parse().unwrap())
            })
            .collect()
    };
    for pair in e.windows(2) {
        let (before, after) = (counters(&pair[0]), counters(&pair[1]));
        assert!(!after.is_empty());
        for (series, value) in &after {
            if let Some((_, old)) = before.iter().find(|(s, _)| s == series) {
                assert!(value >= old, "{series} went from {old} to {value}");
            }
        }
    }
}

#[test]
fn textfile_is_replaced_whole_and_nothing_goes_to_stdout() {
    let root = tree("textfile");
    let dir = root.join("textfile");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("iostat.prom");
    let out = iostat(
        &root,
        &["--textfile", path.to_str().unwrap(), "-x", "0.01", "2"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty());
    let file = std::fs::read_to_string(&path).unwrap();
    // node_exporter's uname collector has it: twice would fail its scrapes.
    assert!(!file.contains("node_uname_info"), "{file}");
    assert_eq!(
        file.matches("# TYPE node_disk_io_now gauge\n").count(),
        1,
        "{file}"
    );
    assert!(file.contains("node_disk_reads_completed_total{device=\"sda\"} 10\n"));
    assert_no_timestamps(&file);
    // Only the file itself is left in the directory (no temporary).
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("iostat.prom")]);
    // A directory that does not exist: one line naming the option, status 1.
    let out = iostat(&root, &["--textfile", "/nonexistent-hwstat/x.prom"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--textfile /nonexistent-hwstat/x.prom"),
        "{err}"
    );
    // Another machine format with it is refused.
    let out = iostat(&root, &["--textfile", path.to_str().unwrap(), "-o", "csv"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_device_or_cpu_the_files_repeat_is_one_series() {
    // No kernel repeats a line, but a garbled or hostile tree may; a second
    // series with the same labels makes the exposition invalid (Prometheus
    // refuses the scrape), so the first line counts, as in the reports.
    let root = tree("repeated");
    let diskstats = std::fs::read_to_string(root.join("proc/diskstats")).unwrap();
    std::fs::write(
        root.join("proc/diskstats"),
        format!(
            "{diskstats}   8       0 sda 99 2 80 1500 4 1 16 2500 3 4200 9000 6 7 64 11 5 12\n"
        ),
    )
    .unwrap();
    std::fs::write(
        root.join("proc/stat"),
        "cpu  250 7 50 800 50 3 4 6 20 2\ncpu0 250 7 50 800 50 3 4 6 20 2\n\
         cpu0 999 7 50 800 50 3 4 6 20 2\nintr 1\n",
    )
    .unwrap();
    let text = text(iostat(&root, &["-o", "prometheus"]));
    let reads: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("node_disk_reads_completed_total{device=\"sda\"}"))
        .collect();
    assert_eq!(
        reads,
        ["node_disk_reads_completed_total{device=\"sda\"} 10"]
    );
    let user: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("node_cpu_seconds_total{cpu=\"0\",mode=\"user\"}"))
        .collect();
    assert_eq!(
        user,
        ["node_cpu_seconds_total{cpu=\"0\",mode=\"user\"} 2.5"]
    );
}

/// As node_exporter's default `device-exclude` does, a RAM disk, a loop
/// device, a floppy and partitions named like `sda1` are left out unless
/// asked for, with `ALL` (whole devices) or by name; what node_exporter
/// keeps is there: `zram0`, `dm-0`, and partitions its pattern does not
/// name (`loop3p1`, `mmcblk0p1`), whole devices or not.
#[test]
fn devices_node_exporter_leaves_out_need_all_or_their_names() {
    let root = tree("excluded");
    let mut diskstats = std::fs::read_to_string(root.join("proc/diskstats")).unwrap();
    // Each device, and whether it is whole (listed in /sys/block).
    let devices = [
        ("ram0", true),
        ("loop3", true),
        ("loop3p1", false),
        ("fd0", true),
        ("zram0", true),
        ("dm-0", true),
        ("mmcblk0", true),
        ("mmcblk0p1", false),
    ];
    for (minor, (name, whole)) in devices.iter().enumerate() {
        if *whole {
            std::fs::create_dir_all(root.join("sys/block").join(name)).unwrap();
        }
        diskstats.push_str(&format!(
            " 7 {minor} {name} 1 0 8 1 0 0 0 0 0 1 1 0 0 0 0 0 0\n"
        ));
    }
    std::fs::write(root.join("proc/diskstats"), diskstats).unwrap();
    let devices = |args: &[&str]| -> Vec<String> {
        let out = text(iostat(
            &root,
            &[&["-d", "-o", "prometheus"][..], args].concat(),
        ));
        out.lines()
            .filter_map(|l| l.strip_prefix("node_disk_reads_completed_total{device=\""))
            .map(|l| l.split('"').next().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        devices(&[]),
        [
            "sda",
            "sdb",
            "loop3p1",
            "zram0",
            "dm-0",
            "mmcblk0",
            "mmcblk0p1"
        ]
    );
    assert_eq!(
        devices(&["ALL"]),
        [
            "sda",
            "sdb",
            "ram0",
            "loop3",
            "loop3p1",
            "fd0",
            "zram0",
            "dm-0",
            "mmcblk0",
            "mmcblk0p1"
        ]
    );
    assert_eq!(devices(&["loop3", "sda"]), ["sda", "loop3"]);
}

/// `-o prometheus` (and `--listen`) carry `node_uname_info` as
/// node_exporter's uname collector exports it, without `domainname`:
/// dashboards made for node_exporter list their instances from it.
#[test]
fn expositions_name_the_system_as_node_exporters_uname_collector() {
    let root = tree("uname");
    let text = text(iostat(&root, &["-d", "-o", "prometheus"]));
    let kernel = |file: &str| {
        let text = std::fs::read_to_string(format!("/proc/sys/kernel/{file}")).unwrap();
        text.trim_end_matches('\n').to_string()
    };
    let machine = Command::new("uname").arg("-m").output().unwrap().stdout;
    let line = format!(
        "node_uname_info{{machine=\"{}\",nodename=\"{}\",release=\"{}\",sysname=\"{}\",\
         version=\"{}\"}} 1\n",
        String::from_utf8(machine).unwrap().trim_end(),
        kernel("hostname"),
        kernel("osrelease"),
        kernel("ostype"),
        kernel("version")
    );
    assert!(text.contains(&line), "{line} in {text}");
    assert!(text.contains("# TYPE node_uname_info gauge\n"), "{text}");
}

/// A udev file that could not be read for want of a file descriptor
/// (EMFILE, or ENFILE: the system's table, which every local user fills)
/// fails the exposition, as it fails a `--listen` scrape: `node_disk_info`
/// without its labels would be another series, for a device whose udev
/// data is there (node_exporter drops them without a word). A recorded run
/// that met it replays so, as it ran.
#[test]
fn udev_data_out_of_descriptors_fails_the_exposition() {
    let root = tree("udev-starved");
    let rec = root.join("run.ndjson");
    let healthy = text(iostat(
        &root,
        &["-d", "-o", "prometheus", "--record", rec.to_str().unwrap()],
    ));
    assert!(healthy.contains("model=\"Model_X\""), "{healthy}");
    let recorded = std::fs::read_to_string(&rec).unwrap();
    for key in ["list /run/udev/data", "read /run/udev/data/b8:0"] {
        let mut starved = 0;
        let lines: Vec<String> = recorded
            .lines()
            .map(|line| {
                let mut frame: serde_json::Value = serde_json::from_str(line).unwrap();
                if let Some(entry) = frame["entries"].get_mut(key) {
                    *entry = serde_json::json!({"errno": 24});
                    starved += 1;
                }
                frame.to_string()
            })
            .collect();
        assert_eq!(starved, 1, "{key} in {recorded}");
        let replay = root.join("starved.ndjson");
        std::fs::write(&replay, lines.join("\n") + "\n").unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_iostat-rs"))
            .args([
                "--replay",
                replay.to_str().unwrap(),
                "-d",
                "-o",
                "prometheus",
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{key}: {err}");
        assert!(out.stdout.is_empty(), "{key}");
        let path = key.split_once(' ').unwrap().1;
        assert_eq!(err.lines().count(), 1, "{key}: {err}");
        assert!(
            err.contains(path) && err.contains("Too many open files"),
            "{key}: {err}"
        );
    }
}

/// A textfile that cannot be written (a full file system) does not end the
/// run: the previous exposition stays, one line says so, each report tries
/// again, and one more line says when one is written again. A run whose
/// last write failed ends with that error, status 1, as a run of one
/// report does at once. The first failure ended the run, and node_exporter
/// served the last exposition for ever.
#[test]
fn a_textfile_on_a_full_file_system_is_tried_again() {
    let test = "a_textfile_on_a_full_file_system_is_tried_again";
    if let Some(why) = crate::namespace::unavailable() {
        crate::skip::skip(test, &format!("{why}; it mounts a small tmpfs"));
        return;
    }
    let root = tree("full");
    std::fs::create_dir_all(root.join("full")).unwrap();
    // In the namespace: a 64 KiB tmpfs, filled in the middle of a run and
    // emptied again; then filled for good before a run ends.
    let script = r#"
        cd "$1" || exit 9
        "$0" --sysroot . -d --textfile full/x.prom 0.05 40 2>err1 & pid=$!
        sleep 0.5; cat /dev/zero > full/fill 2>/dev/null; sleep 0.5; rm full/fill
        wait $pid; echo "first $?"
        "$0" --sysroot . -d --textfile full/x.prom 0.05 20 2>err2 & pid=$!
        sleep 0.3; cat /dev/zero > full/fill 2>/dev/null
        wait $pid; echo "second $?"
        "$0" --sysroot . -d --textfile full/x.prom 2>err3; echo "third $?"
        ls -a full
    "#;
    let full = root.join("full");
    let full = full.to_str().unwrap();
    assert!(!full.contains('\''));
    let out = crate::namespace::command(
        &format!("mount -t tmpfs -o size=64k hwstat-full '{full}'"),
        "sh",
        &[
            "-c",
            script,
            env!("CARGO_BIN_EXE_iostat-rs"),
            root.to_str().unwrap(),
        ],
    )
    .output()
    .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = said.lines().collect();
    let err = |n| std::fs::read_to_string(root.join(format!("err{n}"))).unwrap();
    let failed = "iostat-rs: cannot write output: --textfile full/x.prom: No space left on device \
                  (os error 28)";
    assert_eq!(lines[0], "first 0", "{said}{}", err(1));
    assert_eq!(
        err(1),
        format!(
            "{failed}: the previous exposition stays; tried again at each report\n\
             iostat-rs: --textfile full/x.prom: written again\n"
        )
    );
    assert_eq!(lines[1], "second 1", "{said}{}", err(2));
    assert_eq!(
        err(2),
        format!("{failed}: the previous exposition stays; tried again at each report\n{failed}\n")
    );
    // One report only: nothing to try again, the error at once.
    assert_eq!(lines[2], "third 1", "{said}{}", err(3));
    assert_eq!(err(3), format!("{failed}\n"));
    // The exposition and the filler, no temporary file left.
    assert_eq!(lines[3..], [".", "..", "fill", "x.prom"], "{said}");
}
