//! iostat-rs's machine formats (`-o csv`, `ndjson`, `prometheus`) carry the
//! CPU report when it is selected, in one table, and refuse the size options
//! they would otherwise ignore; `-o JSON` stays JSON where sysstat's does not.

use std::path::Path;
use std::process::{Command, Output};

use crate::scratch::Scratch;

/// A one-CPU, one-disk tree: the CPU was 10 % user, 5 % system, 5 % iowait
/// and 80 % idle since boot (100 + 50 + 50 + 800 = 1000 ticks), removed
/// when the test ends.
fn tree(test: &str) -> Scratch {
    let root = crate::scratch::scratch(&format!("machine-{test}"));
    std::fs::create_dir_all(root.join("proc")).unwrap();
    std::fs::create_dir_all(root.join("sys/block/sda")).unwrap();
    std::fs::write(
        root.join("proc/stat"),
        "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 100 0 50 800 50 0 0 0 0 0\n",
    )
    .unwrap();
    std::fs::write(root.join("proc/uptime"), "100.00 90.00\n").unwrap();
    std::fs::write(
        root.join("proc/diskstats"),
        "   8       0 sda 10 0 80 5 0 0 0 0 0 5 5 0 0 0 0 0 0\n",
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

#[test]
fn csv_is_one_table_with_the_cpu_report_as_the_row_without_a_device() {
    let root = tree("csv");
    let out = iostat(&root, &["-o", "csv"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(lines.len(), 3, "{text}");
    let header = &lines[0];
    assert!(lines.iter().all(|l| l.len() == header.len()), "{text}");
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (sda, cpu) = (&lines[1], &lines[2]);
    assert_eq!(sda[column("device")], "sda");
    assert_eq!(sda[column("reads_completed")], "10");
    assert_eq!(sda[column("cpu_user_ratio")], "");
    assert_eq!(cpu[column("device")], "");
    assert_eq!(cpu[column("reads_completed")], "");
    assert_eq!(cpu[column("cpu_user_ratio")], "0.1000");
    assert_eq!(cpu[column("cpu_system_ratio")], "0.0500");
    assert_eq!(cpu[column("cpu_iowait_ratio")], "0.0500");
    assert_eq!(cpu[column("cpu_idle_ratio")], "0.8000");
    // -c alone: only the CPU columns.
    let out = iostat(&root, &["-c", "-o", "csv"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        text.lines().next().unwrap(),
        "timestamp,index,device,cpu_user_ratio,cpu_nice_ratio,cpu_system_ratio,\
         cpu_iowait_ratio,cpu_steal_ratio,cpu_idle_ratio"
    );
}

#[test]
fn prometheus_and_ndjson_carry_the_cpu_report() {
    let root = tree("prometheus");
    let out = iostat(&root, &["-c", "-o", "prometheus"]);
    let text = String::from_utf8(out.stdout).unwrap();
    // node_exporter's CPU counters: ticks of cpu0 / USER_HZ (100).
    for (mode, seconds) in [
        ("user", "1"),
        ("system", "0.5"),
        ("iowait", "0.5"),
        ("idle", "8"),
    ] {
        let line = format!("node_cpu_seconds_total{{cpu=\"0\",mode=\"{mode}\"}} {seconds}\n");
        assert!(text.contains(&line), "{line} in {text}");
    }
    assert!(!text.contains("device="), "{text}");
    let out = iostat(&root, &["-o", "ndjson"]);
    let line = String::from_utf8(out.stdout).unwrap();
    let doc: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(rows[0]["device"], "sda");
    assert_eq!(rows[0]["cpu_idle_ratio"], serde_json::Value::Null);
    assert_eq!(rows[1]["cpu_idle_ratio"], 0.8);
}

#[test]
fn size_options_are_refused_where_base_units_are_written() {
    let root = tree("units");
    for format in ["csv", "ndjson", "prometheus"] {
        for option in ["-k", "-m", "-G", "--human", "-h"] {
            let out = iostat(&root, &[option, "-o", format]);
            assert_eq!(out.status.code(), Some(2), "{option} -o {format}");
            let err = String::from_utf8(out.stderr).unwrap();
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(err.contains(&format!("-o {format}")), "{err}");
            assert!(out.stdout.is_empty());
        }
    }
    // sysstat's own formats keep applying them.
    for format in [&["-m"][..], &["-m", "-o", "JSON"]] {
        assert!(iostat(&root, format).status.success(), "{format:?}");
    }
}

#[test]
fn json_stays_valid_where_sysstat_leaves_a_comma_for_an_empty_group() {
    // `-x` leaves out a group none of whose devices was ever present. sysstat
    // 12.6.1 (and its development line) still writes the comma before it, so
    // `iostat -x -o JSON sda -g G` is not JSON; iostat-rs's output is.
    let root = tree("empty-group");
    // A named device's counters come from its sysfs `stat`, as in sysstat.
    std::fs::write(
        root.join("sys/block/sda/stat"),
        "10 0 80 5 0 0 0 0 0 5 5 0 0 0 0 0 0\n",
    )
    .unwrap();
    let out = iostat(&root, &["-x", "-o", "JSON", "sda", "-g", "G"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let disks = &json["sysstat"]["hosts"][0]["statistics"][0]["disk"];
    let names: Vec<&str> = disks
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["disk_device"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["sda"]);
}

/// `/proc/uptime` and the `cpu` lines of `/proc/stat` of a 2-CPU VM (Linux
/// 6.18, all busy) a second apart: both CPUs online, `cpu1` just put
/// offline, still offline, back online. The kernel's `cpu ` line counts the
/// offline CPU with other idle and iowait times than its own line showed.
const HOTPLUG: [(&str, &str); 4] = [
    (
        "41608.78 27934.29\n",
        "cpu  4421626 326369 643941 2793429 64398 0 36723 4118 0 0\n\
         cpu0 2070443 149184 305117 1579847 23777 0 12986 2045 0 0\n\
         cpu1 2351183 177185 338824 1213582 40621 0 23736 2073 0 0\n",
    ),
    (
        "41610.08 28201.94\n",
        "cpu  4421773 326369 643949 2820194 52502 0 36723 4118 0 0\n\
         cpu0 2070567 149184 305122 1579847 23777 0 12987 2045 0 0\n",
    ),
    (
        "41611.31 28201.94\n",
        "cpu  4421890 326369 643954 2820194 52502 0 36723 4118 0 0\n\
         cpu0 2070684 149184 305127 1579847 23777 0 12987 2045 0 0\n",
    ),
    (
        "41612.61 27934.33\n",
        "cpu  4422108 326369 643968 2793433 64398 0 36724 4119 0 0\n\
         cpu0 2070806 149184 305135 1579847 23777 0 12987 2045 0 0\n\
         cpu1 2351302 177185 338833 1213586 40621 0 23736 2073 0 0\n",
    ),
];

/// A recording of [`HOTPLUG`] for `--replay`, as `iostat-rs --record -c`
/// writes it.
fn hotplug_recording(path: &std::path::Path) {
    let header = serde_json::json!({
        "format": "hwstat-recording", "version": 1, "tool": "iostat-rs",
        "args": ["-c", "1", "4"],
        "uname": {"sysname": "Linux", "nodename": "vm", "release": "6.18.44",
                  "version": "#1", "machine": "x86_64"},
        "start_unix_ns": 1_796_534_104_000_000_000u64,
    });
    let mut lines = vec![header.to_string()];
    for (index, (uptime, stat)) in HOTPLUG.iter().enumerate() {
        let frame = serde_json::json!({
            "index": index,
            "time_unix_ns": 1_796_534_104_000_000_000u64 + index as u64 * 1_000_000_000,
            "entries": {
                "list /sys/devices/system/cpu": {"list": ["cpu0", "cpu1"]},
                "read /proc/uptime": {"text": uptime},
                "read /proc/stat": {"text": stat},
            },
        });
        lines.push(frame.to_string());
    }
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

#[test]
fn cpu_ratios_stay_shares_when_a_cpu_goes_offline_and_comes_back() {
    let dir = crate::scratch::scratch("machine-hotplug");
    let rec = dir.join("hotplug.rec");
    hotplug_recording(&rec);
    let replay = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_iostat-rs"))
            .arg("--replay")
            .arg(&rec)
            .args(args)
            .env("LC_ALL", "C")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    // The text report is sysstat's, from the `cpu ` line (iostat 12.6.1 and
    // 12.8.0 on these files): idle 178.15 %, then every share 0.00.
    let text = replay(&["-c", "1"]);
    for row in [
        "           0.98    0.00    0.05    0.00    0.00  178.15\n",
        "          95.90    0.00    4.10    0.00    0.00    0.00\n",
        "           0.00    0.00    0.00    0.00    0.00    0.00\n",
    ] {
        assert!(text.contains(row), "{row:?} missing from\n{text}");
    }
    // The ratios are the `all` row of sysstat's `mpstat -P ALL 1 3` on the
    // same files (%system there is %sys + %irq + %soft).
    let mpstat_all = [
        // %usr %nice %sys+%irq+%soft %iowait %steal %idle
        [95.38, 0.00, 3.85 + 0.77, 0.00, 0.00, 0.00],
        [95.90, 0.00, 4.10, 0.00, 0.00, 0.00],
        [91.98, 0.00, 6.49, 0.00, 0.00, 1.53],
    ];
    let csv = replay(&["-c", "-o", "csv", "1"]);
    let rows: Vec<Vec<f64>> = csv
        .lines()
        .skip(2)
        .map(|l| l.split(',').skip(3).map(|v| v.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), mpstat_all.len(), "{csv}");
    for (row, expected) in rows.iter().zip(mpstat_all) {
        for (ratio, percent) in row.iter().zip(expected) {
            assert!((ratio * 100.0 - percent).abs() < 0.011, "{csv}");
        }
    }
}
