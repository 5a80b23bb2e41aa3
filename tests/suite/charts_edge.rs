//! Charts of recordings made here, for the edges the committed fixtures do
//! not reach: names XML cannot hold, many devices, tiny values, short
//! steps. [`iostat_recording`] writes an iostat-rs recording in which
//! device k does k + 1 reads per second.

use crate::charts::{IOSTAT, parse, run, scratch};

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Writes an iostat-rs recording of `frames` samples `step` seconds apart,
/// on host `node`, of one CPU and the devices `names` (device k reads
/// k + 1 times per second, 2 ms each), and returns its path.
fn iostat_recording(dir: &Path, node: &str, frames: u64, step: f64, names: &[&str]) -> PathBuf {
    let t0: u64 = 1_767_258_000 * 1_000_000_000;
    let ns = (step * 1e9).round() as u64;
    let header = serde_json::json!({
        "format": "hwstat-recording", "version": 1, "tool": "iostat-rs", "args": ["-x", "1"],
        "uname": {"sysname": "Linux", "nodename": node, "release": "6.18.0",
                  "version": "#1", "machine": "x86_64"},
        "start_unix_ns": t0,
    });
    let mut text = format!("{header}\n");
    for i in 0..frames {
        let mut disk = String::new();
        for (k, name) in names.iter().enumerate() {
            let n = i * (k as u64 + 1);
            let _ = writeln!(
                disk,
                "8 {k} {name} {n} 0 {} {} {n} 0 {} {} 0 {i} {} 0 0 0 0 0 0",
                8 * n,
                2 * n,
                8 * n,
                2 * n,
                4 * n
            );
        }
        let c = 100 * i;
        let cpu = format!("{} 0 {} {} 0 0 0 0 0 0", c / 4, c / 10, c * 65 / 100);
        let mut entries = serde_json::json!({
            "read /proc/diskstats": {"text": disk},
            "read /proc/stat": {"text": format!("cpu  {cpu}\ncpu0 {cpu}\n")},
            "read /proc/uptime": {"text": format!("{:.2} 100.00\n", 5000.0 + i as f64 * step)},
            "list /sys/block": {"list": names},
        });
        if i == 0 {
            entries["list /sys/devices/system/cpu"] = serde_json::json!({"list": ["cpu0"]});
        }
        let frame = serde_json::json!({
            "index": i, "time_unix_ns": t0 + i * ns, "elapsed_ns": i * ns, "entries": entries,
        });
        let _ = writeln!(text, "{frame}");
    }
    let path = dir.join("made.rec");
    std::fs::write(&path, text).unwrap();
    path
}

/// `iostat-rs -x --svg` of `rec` with `extra` options; the chart's path.
fn chart(dir: &Path, rec: &Path, extra: &[&str]) -> PathBuf {
    let svg = dir.join("made.svg");
    let mut args = vec!["--replay", rec.to_str().unwrap(), "-x"];
    args.extend_from_slice(extra);
    args.extend(["--svg", svg.to_str().unwrap(), "1"]);
    run(IOSTAT, &args);
    svg
}

/// U+FFFE and U+FFFF are not XML characters, not even as references:
/// plotters passed them through and the chart did not parse.
#[test]
fn noncharacters_in_names_are_escaped() {
    let dir = scratch("edge-nonchar");
    let rec = iostat_recording(&dir, "h\u{fffe}", 3, 1.0, &["sd\u{ffff}a", "sdb"]);
    let svg = parse(&chart(&dir, &rec, &[]));
    assert_eq!(
        svg.count("sd\\u{ffff}a"),
        8,
        "a legend entry per device panel"
    );
    assert!(
        svg.texts
            .keys()
            .any(|t| t.starts_with("iostat-rs on h\\u{fffe} (")),
        "{:?}",
        svg.texts.keys()
    );
}

/// The texts right of the plots (the legends), by their top edge.
fn legend_texts(path: &Path) -> Vec<(u32, String)> {
    let raw = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&raw).unwrap();
    let mut texts: Vec<(u32, String)> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter(|n| n.attribute("x").unwrap().parse::<u32>().unwrap() > 1030)
        .map(|n| {
            let y = n.attribute("y").unwrap().parse().unwrap();
            (y, n.text().unwrap_or_default().trim().to_owned())
        })
        .collect();
    texts.sort();
    texts
}

/// A legend of 21 entries (20 devices and the rest) ran 24 rows of 18 px
/// down a 320 px panel, over the next panel's legend and past the chart.
#[test]
fn legends_stay_in_their_panel() {
    let dir = scratch("edge-legend");
    let names: Vec<String> = (0..25).map(|k| format!("sd{k}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let rec = iostat_recording(&dir, "h", 3, 1.0, &names);
    let path = chart(&dir, &rec, &["-d", "--svg-top", "20"]);
    let svg = parse(&path);
    // 8 device panels of 320 px below a 50 px title; a legend row is 18 px.
    assert_eq!(svg.height, 50 + 8 * 320);
    assert_eq!(svg.count("… 7 more"), 8, "14 of 21 entries shown");
    let texts = legend_texts(&path);
    for pair in texts.windows(2) {
        assert!(pair[1].0 - pair[0].0 >= 18, "overlapping: {pair:?}");
    }
    for (y, text) in &texts {
        let panel_end = 50 + ((y - 50) / 320 + 1) * 320;
        assert!(y + 14 <= panel_end, "{text} at {y} runs past {panel_end}");
    }
}

/// Names longer than a legend's 30 characters were cut at the end, so 12
/// devices that differ in their number all read the same.
#[test]
fn long_names_are_cut_in_the_middle() {
    let dir = scratch("edge-long");
    let names: Vec<String> = (0..12)
        .map(|k| format!("device-with-a-fairly-long-name-{k:02}"))
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let rec = iostat_recording(&dir, "h", 3, 1.0, &names);
    let svg = parse(&chart(&dir, &rec, &["-d", "--svg-top", "12"]));
    for k in 0..12 {
        let shown = format!("device-with-a-…ly-long-name-{k:02}");
        assert_eq!(svg.count(&shown), 8, "{shown}: a legend entry per panel");
    }
}

/// How wide the shapes `tag` of `fill` or `stroke` colour `colour` are
/// drawn, in pixels, from their points.
fn widths(path: &Path, tag: &str, colour: &str) -> Vec<u32> {
    let raw = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&raw).unwrap();
    doc.descendants()
        .filter(|n| n.has_tag_name(tag))
        .filter(|n| {
            [n.attribute("fill"), n.attribute("stroke")]
                .iter()
                .any(|c| c.is_some_and(|c| c.eq_ignore_ascii_case(colour)))
        })
        .map(|n| {
            let xs: Vec<u32> = n
                .attribute("points")
                .unwrap()
                .split_whitespace()
                .map(|p| p.split(',').next().unwrap().parse().unwrap())
                .collect();
            xs.iter().max().unwrap() - xs.iter().min().unwrap()
        })
        .collect()
}

/// A chart of one report had buckets of no width: the CPU panel's areas
/// were empty and each device a 2 px dot.
#[test]
fn a_single_report_is_drawn_across_the_plot() {
    let dir = scratch("edge-single");
    let rec = iostat_recording(&dir, "h", 2, 1.0, &["sda", "sdb"]);
    let path = chart(&dir, &rec, &[]);
    // The plots are 1280 - 250 (legend) - 72 (y labels) - 20 px wide.
    let user = widths(&path, "polygon", "#1f77b4");
    assert_eq!(user.len(), 1, "%user: one area");
    assert!(user[0] > 900, "%user drawn {} px wide", user[0]);
    let sdb = widths(&path, "polyline", "#ff7f0e");
    assert_eq!(sdb.len(), 8, "sdb: a line per panel");
    assert!(sdb.iter().all(|w| *w > 900), "sdb drawn {sdb:?} px wide");
}

/// One device summarised was "1 other devices".
#[test]
fn one_device_in_the_rest_is_singular() {
    let dir = scratch("edge-rest");
    let rec = iostat_recording(&dir, "h", 3, 1.0, &["sda", "sdb", "sdc"]);
    let svg = parse(&chart(&dir, &rec, &["--svg-top", "2"]));
    assert_eq!(svg.count("1 other device (min-max)"), 8, "one per panel");
    assert_eq!(svg.count("1 other devices (min-max)"), 0);
}

/// A chart in a directory the user cannot write is refused before the run,
/// with the directory named, not at its first report.
#[test]
fn a_directory_the_user_cannot_write_is_refused_at_the_start() {
    let setpriv = "/usr/bin/setpriv";
    if !crate::skip::runs_unless(
        "a_directory_the_user_cannot_write_is_refused_at_the_start",
        (!Path::new(setpriv).exists() || unsafe { libc::geteuid() } != 0).then(|| {
            "needs root and setpriv (util-linux) to run iostat-rs as another user".to_string()
        }),
    ) {
        return;
    }
    let dir = scratch("unwritable");
    let locked = dir.join("locked");
    std::fs::create_dir(&locked).unwrap();
    let svg = locked.join("x.svg");
    let out = std::process::Command::new(setpriv)
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", IOSTAT])
        .args(["-d", "--svg", svg.to_str().unwrap(), "1", "2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(out.stdout, b"", "nothing reported");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "iostat-rs: --svg {}: {}: Permission denied (os error 13)\n",
            svg.display(),
            locked.display()
        )
    );
}

/// The heat map's columns half a second apart are labelled with the half
/// seconds, not the same whole second twice.
#[test]
fn heat_map_columns_a_fraction_of_a_second_apart_are_told_apart() {
    let dir = scratch("edge-heat-half");
    let fixture = format!(
        "{}/tests/fixtures/charts/vcpustat.rec",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(fixture).unwrap();
    let mut lines = text.lines();
    let mut out = format!("{}\n", lines.next().unwrap());
    for (i, line) in lines.enumerate() {
        let mut frame: serde_json::Value = serde_json::from_str(line).unwrap();
        let half = 500_000_000 * i as u64;
        frame["time_unix_ns"] = (1_767_258_000_000_000_000 + half).into();
        frame["elapsed_ns"] = half.into();
        out.push_str(&format!("{frame}\n"));
    }
    let rec = dir.join("half.rec");
    std::fs::write(&rec, out).unwrap();
    let path = dir.join("half.svg");
    run(
        env!("CARGO_BIN_EXE_vcpustat"),
        &[
            "--replay",
            rec.to_str().unwrap(),
            "--svg",
            path.to_str().unwrap(),
            "0.5",
        ],
    );
    let svg = parse(&path);
    let times: Vec<&String> = svg
        .texts
        .keys()
        .filter(|t| t.len() >= 8 && t.as_bytes()[2] == b':' && t.as_bytes()[5] == b':')
        .collect();
    assert!(times.len() >= 3, "{times:?}");
    assert!(times.iter().any(|t| t.ends_with(".5")), "{times:?}");
    assert!(
        svg.texts
            .iter()
            .filter(|(t, _)| times.contains(t))
            .all(|(_, &n)| n == 1),
        "each time once: {times:?}"
    );
}
