//! Helpers shared by the fuzz targets: in-memory sources built from fuzz
//! input, the tools' read-parse-render paths driven over any source, and the
//! range cap for CPU lists.

use std::collections::BTreeMap;
use std::io;
use std::time::UNIX_EPOCH;

use hwstat::common::record::{Entry, FORMAT_NAME, FORMAT_VERSION, Frame, Header, Replay};
use hwstat::common::source::{Source, Uname};
use hwstat::cxlstat::{resolve, spec, sysfs};
use hwstat::iostat::cli::{Env, OutputFormat, parse_args};
use hwstat::iostat::devices::DeviceList;
use hwstat::iostat::model::{cpu_percent, interval_cs};
use hwstat::iostat::parse::{CpuTicks, parse_proc_stat_cpu, parse_uptime};
use hwstat::iostat::render_json::JsonRenderer;
use hwstat::iostat::render_machine::MachineRenderer;
use hwstat::iostat::render_text::TextRenderer;
use hwstat::iostat::report::{Banner, Renderer, Sample};
use hwstat::vcpustat::kernel;
use hwstat::vcpustat::render::{TextRenderer as VcpuText, View, machine_rows};
use hwstat::vcpustat::report::{Selection, SortKey, Step, Tracker};
use hwstat::vcpustat::trace::identity;

/// Splits fuzz input into at most `n` parts at NUL bytes (the seeds use
/// NUL to separate the files of one input); missing parts are empty.
pub fn parts(data: &[u8], n: usize) -> Vec<&[u8]> {
    let mut out: Vec<&[u8]> = data.splitn(n, |&b| b == 0).collect();
    out.resize(n, b"");
    out
}

/// A replay whose frames hold the given `read PATH` results (text or hex,
/// as the recorder would store the bytes).
pub fn replay_of_reads(frames: &[Vec<(&str, &[u8])>]) -> Replay {
    replay_of(frames.iter().map(|reads| reads_entries(reads)).collect())
}

/// The recorded entries of `read PATH` operations that returned `bytes`.
pub fn reads_entries(reads: &[(&str, &[u8])]) -> BTreeMap<String, Entry> {
    reads
        .iter()
        .map(|(path, bytes)| (format!("read {path}"), entry_of(bytes)))
        .collect()
}

/// A replay of the given frames' entries, one second apart.
pub fn replay_of(frames: Vec<BTreeMap<String, Entry>>) -> Replay {
    let frames = frames
        .into_iter()
        .enumerate()
        .map(|(index, entries)| Frame {
            index: index as u64,
            time_unix_ns: Some(index as u64 * 1_000_000_000),
            elapsed_ns: Some(index as u64 * 1_000_000_000),
            entries,
        })
        .collect();
    Replay::from_parts(header("fuzz", vec![]), frames)
}

fn entry_of(bytes: &[u8]) -> Entry {
    match std::str::from_utf8(bytes) {
        Ok(text) => Entry::Text(text.to_string()),
        Err(_) => Entry::Hex(bytes.iter().map(|b| format!("{b:02x}")).collect()),
    }
}

fn header(tool: &str, args: Vec<String>) -> Header {
    Header {
        format: FORMAT_NAME.into(),
        version: FORMAT_VERSION,
        tool: tool.into(),
        args,
        uname: Uname {
            sysname: "Linux".into(),
            nodename: "fuzz".into(),
            release: "6.18.0".into(),
            version: String::new(),
            machine: "x86_64".into(),
        },
        start_unix_ns: 0,
    }
}

/// The largest number of CPUs a CPU list may expand to in a fuzz input.
///
/// `CpuList::parse` expands every range before deduplicating, so a few
/// thousand `0-1048576` ranges allocate gigabytes (issue 9, point 2, being
/// fixed separately), and one such range alone takes about 0.4 s of CPU in
/// an instrumented build, over the 1 s timeout on a loaded machine. Until
/// then the targets skip lists that would expand to more than this (every
/// processor number a DTL topology allows); once fixed, the cap can go.
pub const CPU_LIST_CAP: u64 = 1 << 16;

/// Whether `text`, read as a CPU list, expands to at most [`CPU_LIST_CAP`]
/// CPUs (an estimate independent of the parser: unparsable parts count 1).
pub fn cpu_list_fits(text: &str) -> bool {
    let mut total = 0u64;
    for part in text.split(',') {
        let size = part
            .trim()
            .split_once('-')
            .and_then(|(a, b)| Some((a.trim().parse::<u64>().ok()?, b.trim().parse::<u64>().ok()?)))
            .map_or(1, |(a, b)| b.saturating_sub(a).saturating_add(1));
        total = total.saturating_add(size);
    }
    total <= CPU_LIST_CAP
}

/// Whether every file a CPU-list parser may see in `src` fits the cap: the
/// source's `cpumask` files (cxlstat reads them as CPU lists).
fn cpu_lists_fit(src: &dyn Source) -> bool {
    let Ok(names) = src.list_dir(sysfs::EVENT_SOURCE_DIR) else {
        return true;
    };
    names.iter().all(|name| {
        src.read_string(&format!("{}/{name}/cpumask", sysfs::EVENT_SOURCE_DIR))
            .map_or(true, |t| cpu_list_fits(&t))
    })
}

/// Runs iostat-rs's per-sample path over `src`: options from `args`, the
/// device list, every sample until the source ends, each rendered in text,
/// sysstat JSON and CSV into a sink. Nothing may panic, whatever `src` holds.
pub fn drive_iostat(src: &mut dyn Source, args: &[String], max_samples: usize) {
    let Ok(opts) = parse_args(args, Env::default()) else {
        return;
    };
    let mut renderers: Vec<Box<dyn Renderer>> = vec![
        Box::new(TextRenderer::new(&opts, false)),
        Box::new(JsonRenderer::new(&opts)),
        Box::new(MachineRenderer::new(OutputFormat::Csv)),
    ];
    let banner = Banner {
        uname: src.uname().unwrap_or_else(|_| header("", vec![]).uname),
        date: "01/01/70".into(),
        cpus: 1,
    };
    let mut out = io::sink();
    for r in &mut renderers {
        let _ = r.begin(&mut out, &banner);
    }
    let mut devices = DeviceList::new(&opts, src);
    let mut uptime = [0u64; 2];
    let mut cpu = [CpuTicks::default(); 2];
    let mut curr = 0;
    for index in 0..max_samples as u64 {
        uptime[curr] = src
            .read("/proc/uptime")
            .ok()
            .and_then(|t| parse_uptime(&t))
            .unwrap_or(0);
        cpu[curr] = src
            .read("/proc/stat")
            .ok()
            .and_then(|t| parse_proc_stat_cpu(&t))
            .unwrap_or_default();
        devices.read_sample(src, curr);
        devices.compute_groups(curr);
        let sample = Sample {
            time: UNIX_EPOCH,
            index,
            itv: interval_cs(uptime[curr ^ 1], uptime[curr]),
            cpu: cpu_percent(&cpu[curr ^ 1], &cpu[curr]),
            devices: &devices,
            curr,
        };
        for r in &mut renderers {
            let _ = r.sample(&mut out, &sample, false);
        }
        curr ^= 1;
        if !matches!(src.next_sample(), Ok(true)) {
            break;
        }
    }
    for r in &mut renderers {
        let _ = r.end(&mut out);
    }
}

/// Runs vcpustat's per-sample path over `src`: the state, every snapshot
/// through the tracker, each report rendered as text and machine rows.
pub fn drive_vcpustat(src: &mut dyn Source, max_samples: usize) {
    let _ = kernel::read_state(src);
    let selection = Selection {
        cpus: None,
        sort: SortKey::Home,
        top: None,
    };
    let text = VcpuText::new(View::Percent, false);
    let mut tracker = Tracker::new();
    let mut buf = Vec::new();
    let mut out = Vec::new();
    for _ in 0..max_samples {
        if let Ok(snapshot) = kernel::read_snapshot(src, &mut buf)
            && let Step::Report(report) = tracker.step(snapshot, &selection)
        {
            out.clear();
            text.render(&mut out, UNIX_EPOCH, &report);
            let _ = machine_rows(&report);
        }
        if !matches!(src.next_sample(), Ok(true)) {
            break;
        }
    }
}

/// Runs cxlstat's discovery over `src` and resolves `events` (an `-e`
/// argument) against what it found.
pub fn drive_cxlstat(src: &dyn Source, events: &str) {
    if !cpu_lists_fit(src) {
        return;
    }
    // cxlstat stops before resolving when it found no PMU (`resolve`
    // assumes at least one selected PMU).
    let Ok(pmus) = sysfs::discover(src) else {
        return;
    };
    if pmus.is_empty() {
        return;
    }
    let Ok(groups) = spec::parse_event_list(events) else {
        return;
    };
    let selected: Vec<usize> = (0..pmus.len()).collect();
    if let Ok(plan) = resolve::resolve(&pmus, &groups, &selected) {
        let _ = resolve::threshold_warnings(&plan, &pmus);
    }
}

/// Reads the partition identity and the time base through `src`, as
/// `vcpustat trace record` does.
pub fn drive_identity(src: &dyn Source) {
    let _ = identity::partition(src);
    let _ = identity::timebase_hz(src);
}
