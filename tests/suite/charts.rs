//! `--svg` of every tool on the committed recordings of
//! `tests/fixtures/charts` (made by `bench/make_recordings.py`, `cargo run
//! --example chart_dtl` and a cxlstat run on software PMUs): each chart is
//! well-formed XML with the panels, axis titles and series counted here by
//! hand from how the recordings were made, names from the kernel are
//! escaped, and (in CI, or wherever `chromium` is installed) headless
//! Chromium renders each chart to a PNG of the size asked for, not blank,
//! showing every series' colour.

use crate::interval_limits::interrupt_after_first_sample;
use crate::scratch::Scratch;
use crate::skip;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/charts");

/// The first series colours, in order, and the grey of "the rest" (as
/// chosen in src/common/chart/palette.rs, written out here).
const SERIES: [[u8; 3]; 10] = [
    [0x1f, 0x77, 0xb4],
    [0xff, 0x7f, 0x0e],
    [0x2c, 0xa0, 0x2c],
    [0xd6, 0x27, 0x28],
    [0x94, 0x67, 0xbd],
    [0x8c, 0x56, 0x4b],
    [0xe3, 0x77, 0xc2],
    [0xbc, 0xbd, 0x22],
    [0x17, 0xbe, 0xcf],
    [0x00, 0x00, 0x00],
];
const REST: [u8; 3] = [0x7f, 0x7f, 0x7f];

fn fixture(name: &str) -> String {
    format!("{FIXTURES}/{name}")
}

/// A test's own empty directory, removed with what the test wrote in it
/// (charts and Chromium's profile and renders) when the test ends.
pub(crate) fn scratch(name: &str) -> Scratch {
    crate::scratch::scratch(&format!("charts-{name}"))
}

/// Runs `bin` with `args`; panics with its stderr unless it succeeds.
pub(crate) fn run(bin: &str, args: &[&str]) {
    let out = Command::new(bin).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{bin} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub(crate) const IOSTAT: &str = env!("CARGO_BIN_EXE_iostat-rs");
const VCPUSTAT: &str = env!("CARGO_BIN_EXE_vcpustat");
const CXLSTAT: &str = env!("CARGO_BIN_EXE_cxlstat");

/// A parsed chart: its size, and how often each text occurs.
pub(crate) struct Svg {
    width: u32,
    pub(crate) height: u32,
    pub(crate) texts: HashMap<String, usize>,
    /// Fill colours of rectangles (legend swatches, bars, cells).
    fills: Vec<String>,
    /// Stroke colours of polylines (series lines, axes).
    strokes: Vec<String>,
}

impl Svg {
    pub(crate) fn count(&self, text: &str) -> usize {
        self.texts.get(text).copied().unwrap_or(0)
    }
}

pub(crate) fn parse(path: &Path) -> Svg {
    let raw = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&raw)
        .unwrap_or_else(|e| panic!("{}: not well-formed XML: {e}", path.display()));
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(
        root.tag_name().namespace(),
        Some("http://www.w3.org/2000/svg")
    );
    let mut texts = HashMap::new();
    let (mut fills, mut strokes) = (Vec::new(), Vec::new());
    for node in root.descendants().filter(|n| n.is_element()) {
        let name = node.tag_name().name();
        assert!(
            !["script", "image", "foreignObject", "style", "use"].contains(&name),
            "{}: <{name}> makes the chart depend on more than itself",
            path.display()
        );
        for a in node.attributes() {
            assert!(
                !a.value().contains("url(") && a.name() != "href",
                "{}: external reference {}={}",
                path.display(),
                a.name(),
                a.value()
            );
        }
        if name == "text" {
            let family = node.attribute("font-family").unwrap_or_default();
            assert!(
                ["sans-serif", "serif", "monospace"].contains(&family),
                "font {family}"
            );
            let t = node.text().unwrap_or_default().trim().to_string();
            *texts.entry(t).or_insert(0) += 1;
        }
        if name == "rect"
            && let Some(f) = node.attribute("fill")
        {
            fills.push(f.to_ascii_lowercase());
        }
        if name == "polyline"
            && let Some(s) = node.attribute("stroke")
        {
            strokes.push(s.to_ascii_lowercase());
        }
    }
    let size = |a: &str| root.attribute(a).unwrap().parse::<u32>().unwrap();
    Svg {
        width: size("width"),
        height: size("height"),
        texts,
        fills,
        strokes,
    }
}

fn hex(c: [u8; 3]) -> String {
    format!("#{:02x}{:02x}{:02x}", c[0], c[1], c[2])
}

/// iostat-rs -x on the 14-device recording (30 one-second samples).
fn iostat_chart(dir: &Path, extra: &[&str]) -> PathBuf {
    let svg = dir.join("iostat.svg");
    let mut args = vec!["--replay", FIXTURES_IOSTAT, "--svg", svg.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.push("1");
    run(IOSTAT, &args);
    svg
}

const FIXTURES_IOSTAT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/charts/iostat.rec"
);

#[test]
fn iostat_extended_chart_has_a_panel_per_metric_and_the_top_ten_devices() {
    let dir = scratch("iostat-x");
    let svg = parse(&iostat_chart(&dir, &["-x"]));
    assert_eq!(svg.width, 1280);
    let panels = [
        (
            "avg-cpu: share of CPU time (mean per point)",
            "% of CPU time",
        ),
        ("r/s: reads completed per second", "r/s (reads/s)"),
        ("w/s: writes completed per second", "w/s (writes/s)"),
        ("rkB/s: read per second", "rkB/s (kB/s)"),
        ("wkB/s: written per second", "wkB/s (kB/s)"),
        (
            "r_await: mean time of a read, queueing included",
            "r_await (ms)",
        ),
        (
            "w_await: mean time of a write, queueing included",
            "w_await (ms)",
        ),
        (
            "aqu-sz: mean requests queued or in service",
            "aqu-sz (requests)",
        ),
        ("%util: share of time with I/O in flight", "%util (%)"),
    ];
    for (title, y) in panels {
        assert_eq!(svg.count(title), 1, "panel {title}");
        assert_eq!(svg.count(y), 1, "y axis title {y}");
    }
    assert_eq!(svg.count("local time (HH:MM:SS)"), 9);
    // The recording's %util grows with the device number (sd13 the
    // highest); the ten highest peaks are sd13 down to sd4, the other four
    // (sda, nvme0n1, the oddly named one, sd3) are summarised.
    for device in (4..=13).map(|i| format!("sd{i}")) {
        assert_eq!(
            svg.count(&device),
            8,
            "{device}: a legend entry per device panel"
        );
    }
    for alone in ["sda", "nvme0n1", "sd3"] {
        assert_eq!(svg.count(alone), 0, "{alone} is in the rest");
    }
    assert_eq!(svg.count("4 other devices (min-max)"), 8);
    for cpu in ["%user", "%nice", "%system", "%iowait", "%steal", "%idle"] {
        assert_eq!(svg.count(cpu), 1, "{cpu}");
    }
    // Every series of the device panels is drawn in its colour.
    for c in SERIES.iter().chain([&REST]) {
        assert!(svg.strokes.contains(&hex(*c)), "no line in {}", hex(*c));
    }
}

#[test]
fn iostat_top_and_sort_options_choose_the_devices_drawn() {
    let dir = scratch("iostat-sort");
    // nvme0n1's reads take 900 ms more from the 6th second on: the highest
    // r_await peak.
    let svg = parse(&iostat_chart(
        &dir,
        &["-d", "-x", "--svg-top", "1", "--svg-sort", "r_await"],
    ));
    assert_eq!(svg.count("nvme0n1"), 8);
    assert_eq!(svg.count("13 other devices (min-max)"), 8);
    assert_eq!(
        svg.count("avg-cpu: share of CPU time (mean per point)"),
        0,
        "-d: no CPU panel"
    );
    // The basic report: tps and three byte rates.
    let svg = parse(&iostat_chart(&dir, &["-d", "--svg-top", "20"]));
    for title in [
        "tps: transfers per second",
        "kB_read/s: read per second",
        "kB_wrtn/s: written per second",
        "kB_dscd/s: discarded per second",
    ] {
        assert_eq!(svg.count(title), 1, "{title}");
    }
    assert_eq!(svg.count("local time (HH:MM:SS)"), 4);
    assert_eq!(svg.count("sda"), 4);
}

/// The options that choose what the charts draw, without charts: refused
/// as a conflict (status 2), not silently ignored.
#[test]
fn iostat_chart_options_without_svg_are_refused() {
    for (option, value) in [("--svg-top", "3"), ("--svg-sort", "await")] {
        let out = Command::new(IOSTAT)
            .args(["--replay", FIXTURES_IOSTAT, "-x", option, value, "1"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{option}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!(
                "iostat-rs: {option} needs --svg FILE: it chooses the devices the charts draw\n"
            )
        );
        assert!(out.stdout.is_empty(), "{option}");
    }
}

#[test]
fn charts_beside_expositions_are_refused_not_dropped() {
    // -o prometheus and --textfile write expositions instead of the
    // reports iostat-rs and vcpustat draw: --svg was silently ignored.
    // (--listen refuses --svg with its own reason.)
    let dir = scratch("svg-expositions");
    let svg = dir.join("run.svg");
    let svg = svg.to_str().unwrap();
    let textfile = dir.join("run.prom");
    let textfile = textfile.to_str().unwrap();
    for (program, name) in [(IOSTAT, "iostat-rs"), (VCPUSTAT, "vcpustat")] {
        for exposition in [
            &["-o", "prometheus"][..],
            &["--textfile", textfile, "1", "1"],
        ] {
            let out = Command::new(program)
                .args(["--svg", svg])
                .args(exposition)
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(2), "{name} {exposition:?}");
            assert_eq!(
                String::from_utf8_lossy(&out.stderr),
                format!(
                    "{name}: --svg draws the reports, which -o prometheus and --textfile \
                     replace with expositions: draw the charts in a run of their own\n"
                ),
                "{exposition:?}"
            );
        }
    }
    assert!(!Path::new(svg).exists() && !Path::new(textfile).exists());
}

#[test]
fn iostat_refuses_a_sort_column_the_report_does_not_have() {
    let dir = scratch("iostat-bad-sort");
    let svg = dir.join("x.svg");
    let out = Command::new(IOSTAT)
        .args(["--replay", FIXTURES_IOSTAT, "--svg", svg.to_str().unwrap()])
        .args(["-x", "--svg-sort", "tps\u{1b}", "1"])
        .output()
        .unwrap();
    // A value the option cannot take: status 2, as the help says.
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err,
        "iostat-rs: --svg-sort tps\\x1b: not a column the charts of this report draw (r/s, w/s, \
         rkB/s, wkB/s, r_await, w_await, aqu-sz, %util)\n"
    );
    assert!(!svg.exists());
    // Refused before any file is made: a recording was made first.
    let rec = dir.join("run.rec");
    let out = Command::new(IOSTAT)
        .args([
            "--record",
            rec.to_str().unwrap(),
            "--svg",
            svg.to_str().unwrap(),
        ])
        .args(["--svg-sort", "%util", "1", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "iostat-rs: --svg-sort %util: not a column the charts of this report draw (tps, \
         kB_read/s, kB_wrtn/s, kB_dscd/s)\n"
    );
    assert!(!svg.exists() && !rec.exists());
    // The CPU report charts no device to choose.
    let out = Command::new(IOSTAT)
        .args([
            "-c",
            "--svg",
            svg.to_str().unwrap(),
            "--svg-sort",
            "tps",
            "1",
            "1",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "iostat-rs: --svg-sort chooses the devices the charts draw, and the CPU report (-c) \
         charts none\n"
    );
    assert!(!svg.exists());
}

#[test]
fn names_with_markup_and_control_characters_are_escaped() {
    let dir = scratch("hostile");
    let path = iostat_chart(&dir, &["-x", "--svg-top", "20"]);
    let raw = std::fs::read_to_string(&path).unwrap();
    // The device `<b>&"x` followed by byte 0x01: markup escaped by
    // plotters, the control byte (not allowed in XML) written as \x01.
    assert!(raw.contains("&lt;b&gt;&amp;&quot;x\\x01"));
    assert!(!raw.contains('\u{1}'));
    assert!(!raw.contains("<b>"));
    let svg = parse(&path);
    assert_eq!(svg.count("<b>&\"x\\x01"), 8);
    // The same for a PMU named cxl_pmu_<m&"\x01>.0 in cxlstat.
    let cxl = dir.join("cxl.svg");
    run(
        CXLSTAT,
        &[
            "--replay",
            &fixture("cxlstat.rec"),
            "-e",
            "cpu_clock",
            "--svg",
            cxl.to_str().unwrap(),
            "0.1",
        ],
    );
    let raw = std::fs::read_to_string(&cxl).unwrap();
    assert!(!raw.contains('\u{1}'));
    assert_eq!(parse(&cxl).count("PMU cxl_pmu_<m&\"\\x01>.0"), 1);
}

#[test]
fn an_svg_that_cannot_be_written_is_named_and_fails_the_run() {
    let out = Command::new(IOSTAT)
        .args([
            "--replay",
            FIXTURES_IOSTAT,
            "--svg",
            "/nonexistent/dir/x.svg",
            "-x",
            "1",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("iostat-rs: --svg /nonexistent/dir/x.svg: /nonexistent/dir: No such file"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1);
}

/// A chart file that passes the start-up checks (a new name in an existing
/// directory) but cannot be created when the charts are written: /proc
/// takes no new files, even from root.
const UNWRITABLE_SVG: &str = "/proc/hwstat-test-chart.svg";

#[test]
fn a_chart_that_fails_mid_run_is_named_alike_and_the_json_is_closed() {
    let vcpustat_rec = fixture("vcpustat.rec");
    let cxlstat_rec = fixture("cxlstat.rec");
    let dtl = fixture("lpar1.dtl");
    let runs: [(&str, &str, Vec<&str>); 5] = [
        (
            IOSTAT,
            "iostat-rs",
            vec!["--replay", FIXTURES_IOSTAT, "-x", "-o", "JSON", "1"],
        ),
        (
            VCPUSTAT,
            "vcpustat",
            vec!["--replay", &vcpustat_rec, "-o", "json", "1"],
        ),
        // No interval: one report of the counts, and its chart.
        (
            VCPUSTAT,
            "vcpustat",
            vec!["--replay", &vcpustat_rec, "-o", "json"],
        ),
        (
            CXLSTAT,
            "cxlstat",
            vec![
                "--replay",
                &cxlstat_rec,
                "-e",
                "cpu_clock",
                "-o",
                "json",
                "0.1",
            ],
        ),
        (
            VCPUSTAT,
            "vcpustat",
            vec!["trace", "report", "-o", "json", &dtl],
        ),
    ];
    for (bin, tool, mut args) in runs {
        args.extend(["--svg", UNWRITABLE_SVG]);
        let out = Command::new(bin).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{tool} {args:?}: {err}");
        assert_eq!(
            err,
            format!(
                "{tool}: cannot write output: --svg {UNWRITABLE_SVG}: No such file or directory \
                 (os error 2)\n"
            ),
            "{args:?}"
        );
        let doc: Result<serde_json::Value, _> = serde_json::from_slice(&out.stdout);
        assert!(
            doc.is_ok(),
            "{tool} {args:?}: the JSON document is not closed: {doc:?}"
        );
    }
}

#[test]
fn vcpustat_chart_has_the_heat_map_and_the_dispersion_bars() {
    let dir = scratch("vcpustat");
    let path = dir.join("v.svg");
    run(
        VCPUSTAT,
        &[
            "--replay",
            &fixture("vcpustat.rec"),
            "--svg",
            path.to_str().unwrap(),
            "1",
        ],
    );
    let svg = parse(&path);
    assert_eq!(
        svg.count("home-node dispatch ratio per vCPU and interval"),
        1
    );
    assert_eq!(svg.count("dispatch dispersion per vCPU, over the run"), 1);
    assert_eq!(svg.count("local time (HH:MM:SS)"), 1);
    assert_eq!(
        svg.count("vCPU"),
        2,
        "the heat map's y axis, the bars' x axis"
    );
    assert_eq!(svg.count("dispatches"), 1);
    // 8 vCPUs: a row label in the heat map and a bar label each.
    for cpu in 0..8 {
        assert_eq!(svg.count(&format!("cpu{cpu}")), 2, "cpu{cpu}");
    }
    assert_eq!(svg.count("cpu8"), 0);
    for part in [
        "core: same core as before",
        "chip: another core of the chip",
        "socket: another chip",
        "cec: past the next NUMA node",
    ] {
        assert_eq!(svg.count(part), 1, "{part}");
    }
    // vCPU 2 goes to other chips and beyond: all four parts are drawn.
    for c in &SERIES[..4] {
        assert!(
            svg.fills.iter().filter(|f| **f == hex(*c)).count() >= 2,
            "{}",
            hex(*c)
        );
    }
}

#[test]
fn trace_report_chart_has_swimlanes_latency_and_reasons() {
    let dir = scratch("trace");
    let path = dir.join("t.svg");
    let out = Command::new(VCPUSTAT)
        .args([
            "trace",
            "report",
            &fixture("lpar1.dtl"),
            &fixture("lpar2.dtl"),
        ])
        .args(["--svg", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("== latency =="),
        "the tables too"
    );
    let svg = parse(&path);
    for (title, count) in [
        ("physical processors: which vCPU ran when", 1),
        ("dispatch latency per vCPU (ready until dispatched)", 1),
        ("dispatch reasons per vCPU", 1),
        ("preempt reasons per vCPU", 1),
        ("physical processor", 1),
        ("time since the first record (ms)", 1),
        ("latency (µs)", 1),
        ("dispatches", 2),
        ("vCPU", 3),
    ] {
        assert_eq!(svg.count(title), count, "{title}");
    }
    // 2 partitions of 4 vCPUs on processors 0-5 (examples/chart_dtl.rs).
    for p in 0..6 {
        assert_eq!(svg.count(&format!("proc {p}")), 1, "lane {p}");
    }
    for lpar in 1..=2 {
        for cpu in 0..4 {
            // The swimlane legend, and the x axis of the three vCPU panels.
            assert_eq!(svg.count(&format!("lpar{lpar} cpu{cpu}")), 4);
        }
    }
    // Dispatch reasons 0-2 and preempt reasons 0-3 were recorded.
    for reason in ["0 external_interrupt", "2 H_PROD", "2 H_CEDE", "3 H_CONFER"] {
        assert_eq!(svg.count(reason), 1, "{reason}");
    }
    // A mark at each of the 8 vCPUs' maximum latency, as a line: a
    // zero-height rectangle showed nothing.
    let marks = svg.strokes.iter().filter(|s| **s == hex(SERIES[3]));
    assert_eq!(marks.count(), 8, "maximum marks");
    // Every vCPU's colour shows in the lanes (and its legend swatch).
    for c in &SERIES[..8] {
        assert!(
            svg.fills.iter().filter(|f| **f == hex(*c)).count() >= 2,
            "{}",
            hex(*c)
        );
    }
}

#[test]
fn cxlstat_chart_has_a_panel_per_pmu_or_one_when_aggregated() {
    let dir = scratch("cxlstat");
    let path = dir.join("c.svg");
    let rec = fixture("cxlstat.rec");
    let events = "cpu_clock,context_switches";
    run(
        CXLSTAT,
        &[
            "--replay",
            &rec,
            "-e",
            events,
            "--svg",
            path.to_str().unwrap(),
            "0.1",
        ],
    );
    let svg = parse(&path);
    for pmu in ["cxl_pmu_mem0.0", "cxl_pmu_mem1.0", "cxl_pmu_<m&\"\\x01>.0"] {
        assert_eq!(svg.count(&format!("PMU {pmu}")), 1, "{pmu}");
    }
    assert_eq!(svg.count("events per second"), 3);
    assert_eq!(svg.count("local time (HH:MM:SS)"), 3);
    assert_eq!(svg.count("cpu_clock"), 3);
    assert_eq!(svg.count("context_switches"), 3);
    run(
        CXLSTAT,
        &[
            "--replay",
            &rec,
            "-e",
            events,
            "--aggregate",
            "--svg",
            path.to_str().unwrap(),
            "0.1",
        ],
    );
    let svg = parse(&path);
    assert_eq!(svg.count("every CXL PMU, summed (--aggregate)"), 1);
    assert_eq!(svg.count("events per second"), 1);
    assert_eq!(svg.count("cpu_clock"), 1);
    // A PMU name cut before its number is summed over those PMUs: its
    // panel says so, where "PMU cxl_pmu_mem0." named no PMU.
    run(
        CXLSTAT,
        &[
            "--replay",
            &rec,
            "-e",
            "cxl_pmu_mem0./cpu_clock/,cxl_pmu_mem1.0/cpu_clock/",
            "--aggregate",
            "--svg",
            path.to_str().unwrap(),
            "0.1",
        ],
    );
    let svg = parse(&path);
    assert_eq!(
        svg.count("the PMUs numbered after cxl_pmu_mem0., summed (--aggregate)"),
        1
    );
    assert_eq!(svg.count("PMU cxl_pmu_mem1.0"), 1);
    assert_eq!(svg.count("PMU cxl_pmu_mem0."), 0);
}

/// Every chart of the test recordings, made in `dir`: (file, the series
/// colours it must show).
fn all_charts(dir: &Path) -> Vec<(PathBuf, Vec<[u8; 3]>)> {
    let iostat = iostat_chart(dir, &["-x"]);
    let vcpu = dir.join("vcpustat.svg");
    run(
        VCPUSTAT,
        &[
            "--replay",
            &fixture("vcpustat.rec"),
            "--svg",
            vcpu.to_str().unwrap(),
            "1",
        ],
    );
    let trace = dir.join("trace.svg");
    run(
        VCPUSTAT,
        &[
            "trace",
            "report",
            &fixture("lpar1.dtl"),
            &fixture("lpar2.dtl"),
            "--svg",
            trace.to_str().unwrap(),
        ],
    );
    let cxl = dir.join("cxlstat.svg");
    run(
        CXLSTAT,
        &[
            "--replay",
            &fixture("cxlstat.rec"),
            "-e",
            "cpu_clock,context_switches",
            "--svg",
            cxl.to_str().unwrap(),
            "0.1",
        ],
    );
    let mut iostat_colours = SERIES.to_vec();
    iostat_colours.push(REST);
    vec![
        (iostat, iostat_colours),
        (vcpu, SERIES[..4].to_vec()),
        (trace, SERIES[..8].to_vec()),
        (cxl, SERIES[..2].to_vec()),
    ]
}

fn chromium() -> Option<PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

/// Decodes a PNG into (width, height, RGB pixels).
fn decode(path: &Path) -> (u32, u32, Vec<[u8; 3]>) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    let pixels = buf[..info.buffer_size()]
        .chunks(channels)
        .map(|p| [p[0], p[1], p[2]])
        .collect();
    (info.width, info.height, pixels)
}

#[test]
fn chromium_renders_every_chart_with_every_series_colour() {
    let Some(browser) = chromium() else {
        skip::skip(
            "chromium_renders_every_chart_with_every_series_colour",
            "no chromium; install Debian's chromium package",
        );
        return;
    };
    let dir = scratch("chromium");
    for (svg, colours) in all_charts(&dir) {
        let height = parse(&svg).height;
        let png = svg.with_extension("png");
        let out = Command::new(&browser)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
            ])
            .arg("--force-device-scale-factor=1")
            .arg(format!("--user-data-dir={}", dir.join("profile").display()))
            .arg(format!("--screenshot={}", png.display()))
            .arg(format!("--window-size=1280,{height}"))
            .arg(format!("file://{}", svg.display()))
            .output()
            .unwrap();
        assert!(
            png.exists(),
            "{}: chromium made no PNG: {}",
            svg.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let (w, h, pixels) = decode(&png);
        assert_eq!((w, h), (1280, height), "{}", svg.display());
        let white = pixels.iter().filter(|p| **p == [255, 255, 255]).count();
        assert!(
            white < pixels.len() * 97 / 100 && white > pixels.len() / 10,
            "{}: {white} of {} pixels white",
            svg.display(),
            pixels.len()
        );
        for c in colours {
            // A legend swatch alone is 14 x 14 pixels.
            let n = pixels.iter().filter(|p| **p == c).count();
            assert!(
                n >= 100,
                "{}: colour {} on {n} pixels",
                svg.display(),
                hex(c)
            );
        }
    }
}

/// The README's pictures: program, arguments (run from the checkout, with
/// `LC_ALL=C TZ=UTC`), and the picture in docs/charts/ the command writes.
const PICTURES: [(&str, &str, &str); 4] = [
    (
        "iostat-rs",
        "--replay tests/fixtures/charts/iostat.rec -x --svg {} 1",
        "iostat-rs.svg",
    ),
    (
        "vcpustat",
        "--replay tests/fixtures/charts/vcpustat.rec --svg {} 1",
        "vcpustat.svg",
    ),
    (
        "vcpustat",
        "trace report tests/fixtures/charts/lpar1.dtl tests/fixtures/charts/lpar2.dtl --svg {}",
        "vcpustat-trace.svg",
    ),
    (
        "cxlstat",
        "--replay tests/fixtures/charts/cxlstat.rec -e cpu_clock,context_switches --svg {} 0.1",
        "cxlstat.svg",
    ),
];

/// Each picture in docs/charts/ is what the command printed next to it in
/// the README makes now (`HWSTAT_BLESS=1` rewrites them).
#[test]
fn the_readme_pictures_are_what_their_printed_commands_make() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let dir = scratch("pictures");
    let bless = std::env::var("HWSTAT_BLESS").as_deref() == Ok("1");
    for (program, args, picture) in PICTURES {
        let committed = format!("docs/charts/{picture}");
        let printed = format!(
            "LC_ALL=C TZ=UTC {program} {}",
            args.replace("{}", &committed)
        );
        assert!(
            readme.contains(&printed),
            "README.md does not show `{printed}`"
        );
        let made = dir.join(picture);
        let bin = match program {
            "iostat-rs" => IOSTAT,
            "vcpustat" => VCPUSTAT,
            _ => CXLSTAT,
        };
        let made_s = made.to_str().unwrap();
        let out = Command::new(bin)
            .current_dir(root)
            .env("TZ", "UTC")
            // The banner date in the subtitle is in the locale.
            .env("LC_ALL", "C")
            .args(args.split(' ').map(|a| if a == "{}" { made_s } else { a }))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{printed}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let new = std::fs::read(&made).unwrap();
        if bless {
            std::fs::write(root.join(&committed), &new).unwrap();
        } else {
            let old = std::fs::read(root.join(&committed)).unwrap_or_default();
            assert!(
                old == new,
                "{committed} differs from what `{printed}` makes (HWSTAT_BLESS=1 rewrites it)"
            );
        }
    }
}

/// A `--sysroot` tree with one device that did I/O and one CPU.
fn sysroot(dir: &Path) -> PathBuf {
    let root = dir.join("root");
    for d in ["proc", "sys/block/sda", "sys/devices/system/cpu/cpu0"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    let files = [
        (
            "proc/diskstats",
            "   8       0 sda 100 0 800 50 40 0 640 80 0 120 130 0 0 0 0 0 0\n",
        ),
        ("proc/uptime", "5000.00 100.00\n"),
        (
            "proc/stat",
            "cpu  100 0 40 400 5 0 0 0 0 0\ncpu0 100 0 40 400 5 0 0 0 0 0\n",
        ),
    ];
    for (path, text) in files {
        std::fs::write(root.join(path), text).unwrap();
    }
    root
}

/// The stderr of a run that charted no report and so wrote no chart, as
/// every tool words it.
fn no_chart(tool: &str, svg: &Path) -> String {
    format!(
        "{tool}: --svg {}: no chart written: the run ended before the end of its first \
         interval, where the charts start\n",
        svg.display()
    )
}

/// `fixture`'s header and first frame only, written to `dir`: a recording
/// of a run stopped before its first interval ended.
fn first_frame(dir: &Path, fixture_name: &str) -> PathBuf {
    let text = std::fs::read_to_string(fixture(fixture_name)).unwrap();
    let kept: String = text.split_inclusive('\n').take(2).collect();
    let path = dir.join(fixture_name);
    std::fs::write(&path, kept).unwrap();
    path
}

/// The stderr of a replay with an interval of `rec`, which holds one
/// sample, that only starts the run: no report at all, so no chart
/// either; the replay says the first.
fn only_sample(tool: &str, rec: &Path) -> String {
    format!(
        "{tool}: {}:2: frame 0 is the recording's only sample, and a report of an interval \
         takes two (the first only starts the run): replay it without an interval to report \
         that sample\n",
        rec.display()
    )
}

/// Runs `bin` with `args`, which chart no report, and checks the outcome:
/// status 1, the one line `said`, and no file (not an empty chart).
fn assert_no_chart_saying(bin: &str, args: &[&str], said: &str, svg: &Path) {
    let out = Command::new(bin).args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    assert_eq!(err, said, "{args:?}");
    assert!(!svg.exists(), "{args:?}");
}

/// Runs `bin` with `args` (an interval run), stops it with SIGINT while it
/// waits out its first interval, and returns its exit status and stderr.
fn stopped_in_first_interval(bin: &str, args: &[&str]) -> (ExitStatus, String) {
    let (status, _, err) = interrupt_after_first_sample(bin, args, false);
    (status, err)
}

/// A run stopped, or a recording ended, before the first interval did
/// charts nothing in any tool: the run used to end with status 0 and no
/// file (live), or an empty chart (vcpustat and cxlstat replays). Each
/// fails and says why (vcpustat's and cxlstat's replays with an interval,
/// that they have no report at all). iostat-rs's run of one report, since
/// boot, charts it, with or without an interval (`1 1` was refused while
/// no interval charted the same report).
#[test]
fn a_run_that_charts_no_report_fails_and_says_why() {
    let dir = scratch("one-report");
    let root = sysroot(&dir);
    let svg = dir.join("one.svg");
    let svg_s = svg.to_str().unwrap();
    let root_s = root.to_str().unwrap();
    let iostat_rec = first_frame(&dir, "iostat.rec");
    let vcpustat_rec = first_frame(&dir, "vcpustat.rec");
    let cxlstat_rec = first_frame(&dir, "cxlstat.rec");
    let replays: [(&str, String, Vec<&str>); 4] = [
        (
            IOSTAT,
            no_chart("iostat-rs", &svg),
            vec!["--replay", iostat_rec.to_str().unwrap(), "-x", "1"],
        ),
        (
            VCPUSTAT,
            only_sample("vcpustat", &vcpustat_rec),
            vec!["--replay", vcpustat_rec.to_str().unwrap(), "1"],
        ),
        (
            CXLSTAT,
            only_sample("cxlstat", &cxlstat_rec),
            vec![
                "--replay",
                cxlstat_rec.to_str().unwrap(),
                "-e",
                "cpu_clock",
                "0.1",
            ],
        ),
        // No interval: one report, of the recording's first frame to its last.
        (
            CXLSTAT,
            no_chart("cxlstat", &svg),
            vec!["--replay", cxlstat_rec.to_str().unwrap(), "-e", "cpu_clock"],
        ),
    ];
    for (bin, said, mut args) in replays {
        args.extend(["--svg", svg_s]);
        assert_no_chart_saying(bin, &args, &said, &svg);
    }
    // vcpustat live, stopped while it waits out its first interval.
    let seed = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/vcpustat/seed");
    let (status, err) =
        stopped_in_first_interval(VCPUSTAT, &["--sysroot", seed, "--svg", svg_s, "30", "2"]);
    assert_eq!(status.code(), Some(1), "{err}");
    assert_eq!(err, no_chart("vcpustat", &svg));
    assert!(!svg.exists());
    for one_report in [&[][..], &["0.1", "1"]] {
        let out = Command::new(IOSTAT)
            .args(["--sysroot", root_s, "-x", "--svg"])
            .arg(&svg)
            .args(one_report)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{one_report:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let chart = std::fs::read_to_string(&svg).unwrap();
        roxmltree::Document::parse(&chart).unwrap();
        std::fs::remove_file(&svg).unwrap();
    }
}

/// A reader of the output that goes away before the first report charted
/// ends the run, and the chart it asked for is not there: said, status 1,
/// as when a stop signal ends it then. It ended with 0 and nothing said.
#[test]
fn a_reader_gone_before_the_first_chart_is_said() {
    let dir = scratch("reader-gone");
    let root = sysroot(&dir);
    let svg = dir.join("gone.svg");
    let svg_s = svg.to_str().unwrap();
    let seed = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/vcpustat/seed");
    let cxlstat_rec = fixture("cxlstat.rec");
    let runs: [(&str, &str, Vec<&str>); 3] = [
        (
            IOSTAT,
            "iostat-rs",
            vec!["--sysroot", root.to_str().unwrap(), "-x", "0.1", "3"],
        ),
        (VCPUSTAT, "vcpustat", vec!["--sysroot", seed, "0.1", "3"]),
        (
            CXLSTAT,
            "cxlstat",
            vec!["--replay", &cxlstat_rec, "-e", "cpu_clock", "0.1"],
        ),
    ];
    for (bin, tool, mut args) in runs {
        args.extend(["--svg", svg_s]);
        // A pipe whose reader is gone: the first report fails to be written.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(bin)
            .args(&args)
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{tool}: {err}");
        assert_eq!(err, no_chart(tool, &svg), "{tool}");
        assert!(!svg.exists(), "{tool}");
    }
}

/// A replay of a run that ended on an input error charts the reports
/// before it, as the live run did after each: it ended with the run's
/// status and no chart, for it charts only at the end.
#[test]
fn a_replay_that_ends_on_an_input_error_still_charts() {
    let dir = scratch("replay-error");
    let mut lines: Vec<serde_json::Value> = std::fs::read_to_string(fixture("iostat.rec"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The fifth frame: /proc/stat gone, as `rm` makes it mid-run.
    lines[5]["entries"]["read /proc/stat"] = serde_json::json!({"errno": 2});
    let rec = dir.join("cut.rec");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&rec, text).unwrap();
    let svg = dir.join("replayed.svg");
    let out = Command::new(IOSTAT)
        .arg("--replay")
        .arg(&rec)
        .args(["-x", "1", "--svg"])
        .arg(&svg)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("/proc/stat"), "{err}");
    let chart = std::fs::read_to_string(&svg).unwrap();
    roxmltree::Document::parse(&chart).unwrap();
}

/// The renames onto names in a directory, counted by inotify, which queues
/// every one from [`Renames::watch`] on.
struct Renames(std::os::fd::OwnedFd);

impl Renames {
    fn watch(dir: &Path) -> Renames {
        use std::os::fd::FromRawFd;
        use std::os::unix::ffi::OsStrExt;
        // SAFETY: inotify_init1 has no preconditions.
        let fd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC | libc::IN_NONBLOCK) };
        assert!(
            fd >= 0,
            "inotify_init1: {}",
            std::io::Error::last_os_error()
        );
        // SAFETY: a fresh descriptor, owned from here on.
        let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
        let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
        // SAFETY: an inotify descriptor and a NUL-terminated path.
        let wd = unsafe {
            libc::inotify_add_watch(
                std::os::fd::AsRawFd::as_raw_fd(&fd),
                path.as_ptr(),
                // The temporary names moved from, each its own, keep
                // inotify from merging the moves onto the same name as
                // one event (it merges an event like the last unread).
                libc::IN_MOVED_FROM | libc::IN_MOVED_TO,
            )
        };
        assert!(
            wd >= 0,
            "inotify_add_watch: {}",
            std::io::Error::last_os_error()
        );
        Renames(fd)
    }

    /// How many renames onto `name` were queued (and not yet counted).
    fn onto(&self, name: &str) -> usize {
        use std::io::Read;
        let mut events = Vec::new();
        let mut file = std::fs::File::from(self.0.try_clone().unwrap());
        let mut chunk = [0u8; 4096];
        loop {
            match file.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => events.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("reading inotify events: {e}"),
            }
        }
        // struct inotify_event: wd, mask, cookie, len, then len bytes of
        // NUL-padded name.
        let (mut at, mut count) = (0, 0);
        let field = |at: usize| u32::from_ne_bytes(events[at..at + 4].try_into().unwrap());
        while at + 16 <= events.len() {
            let mask = field(at + 4);
            assert_eq!(mask & libc::IN_Q_OVERFLOW, 0, "inotify queue overflowed");
            let len = field(at + 12) as usize;
            let named = &events[at + 16..at + 16 + len];
            if mask & libc::IN_MOVED_TO != 0
                && named.split(|&b| b == 0).next() == Some(name.as_bytes())
            {
                count += 1;
            }
            at += 16 + len;
        }
        count
    }
}

/// Live, the chart is rewritten after every report, and a reader polling
/// the file meanwhile only ever finds a whole chart (temporary file and
/// rename), never a part of one.
#[test]
fn live_charts_are_rewritten_whole_after_each_report() {
    let dir = scratch("live");
    let root = sysroot(&dir);
    let svg = dir.join("live.svg");
    let renames = Renames::watch(&dir);
    let mut child = Command::new(IOSTAT)
        .args([
            "--sysroot",
            root.to_str().unwrap(),
            "-x",
            "--svg",
            svg.to_str().unwrap(),
        ])
        .args(["0.2", "8"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut versions: Vec<String> = Vec::new();
    loop {
        let done = child.try_wait().unwrap().is_some();
        if let Ok(text) = std::fs::read_to_string(&svg) {
            roxmltree::Document::parse(&text).expect("a whole chart at every moment");
            if versions.last() != Some(&text) {
                versions.push(text);
            }
        }
        if done {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    // 8 reports, the first (since boot) not charted: 7 versions, each put
    // in place by a rename, which inotify counts however long the polls
    // above are apart (8 tests at once beside busy loops: 3 seen).
    assert!(!versions.is_empty());
    assert_eq!(
        renames.onto("live.svg"),
        7,
        "{} versions seen",
        versions.len()
    );
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // vcpustat live on its fixture tree writes its chart too.
    let vsvg = dir.join("v.svg");
    run(
        VCPUSTAT,
        &[
            "--sysroot",
            &format!(
                "{}/tests/fixtures/vcpustat/seed",
                env!("CARGO_MANIFEST_DIR")
            ),
            "--svg",
            vsvg.to_str().unwrap(),
            "0.05",
            "2",
        ],
    );
    assert_eq!(
        parse(&vsvg).count("home-node dispatch ratio per vCPU and interval"),
        1
    );
}

/// cxlstat live on software PMUs writes its chart as the other tools do.
/// Stopped in its first interval, it reports the part of the interval
/// until the signal, as `perf stat -I` does (vcpustat and iostat-rs report
/// nothing then), and charts that report.
#[test]
fn cxlstat_live_charts_its_reports_a_cut_first_interval_included() {
    if !crate::cxlstat_support::perf_usable(
        "cxlstat_live_charts_its_reports_a_cut_first_interval_included",
    ) {
        return;
    }
    let dir = scratch("cxlstat-live");
    let root = dir.join("root");
    let cpu = crate::cxlstat_support::test_cpus()[0];
    crate::cxlstat_support::software_tree(&root, &[("cxl_pmu_mem0.0", cpu)]);
    let root = root.to_str().unwrap();
    let svg = dir.join("c.svg");
    let svg_s = svg.to_str().unwrap();
    let (status, err) = stopped_in_first_interval(
        CXLSTAT,
        &[
            "--sysroot",
            root,
            "-e",
            "cpu_clock",
            "--svg",
            svg_s,
            "30",
            "2",
        ],
    );
    assert_eq!(status.code(), Some(0), "{err}");
    let chart = parse(&svg);
    assert_eq!(chart.count("PMU cxl_pmu_mem0.0"), 1);
    std::fs::remove_file(&svg).unwrap();
    run(
        CXLSTAT,
        &[
            "--sysroot",
            root,
            "-e",
            "cpu_clock",
            "--svg",
            svg_s,
            "0.05",
            "2",
        ],
    );
    let chart = parse(&svg);
    assert_eq!(chart.count("PMU cxl_pmu_mem0.0"), 1);
    assert_eq!(chart.count("cpu_clock"), 1);
}
