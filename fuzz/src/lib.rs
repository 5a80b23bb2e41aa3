//! Helpers shared by the fuzz targets: in-memory sources built from fuzz
//! input, the tools' read-parse-render paths driven over any source, and the
//! range cap for CPU lists.

use std::collections::BTreeMap;
use std::time::{Duration, UNIX_EPOCH};

use hwstat::common::output::{Format, writer_for};
use hwstat::common::record::{Entry, FORMAT_NAME, FORMAT_VERSION, Frame, Header, Replay};
use hwstat::common::source::{Source, Uname};
use hwstat::cxlstat::counting::Counters;
use hwstat::cxlstat::render::{self as cxl_render, CountOutput, CountView, Span};
use hwstat::cxlstat::{resolve, spec, sysfs};
use hwstat::iostat::cli::{Env, OutputFormat, parse_args};
use hwstat::iostat::devices::DeviceList;
use hwstat::iostat::hotplug::CpuLines;
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
        whole_tree: false,
    }
}

/// Runs iostat-rs's per-sample path over `src`: options from `args`, the
/// device list, every sample until the source ends, each rendered in text,
/// sysstat JSON and CSV into a sink (CSV with the CPU shares of
/// src/iostat/hotplug.rs, as the program computes them for it). Nothing
/// may panic, whatever `src` holds.
pub fn drive_iostat(src: &mut dyn Source, args: &[String], max_samples: usize) {
    let Ok(opts) = parse_args(args, Env::default()) else {
        return;
    };
    let mut renderers: Vec<Box<dyn Renderer>> = vec![
        Box::new(TextRenderer::new(&opts, false)),
        Box::new(JsonRenderer::new(&opts)),
        Box::new(MachineRenderer::new(OutputFormat::Csv, &opts)),
    ];
    let banner = Banner {
        uname: src.uname().unwrap_or_else(|_| header("", vec![]).uname),
        date: "01/01/70".into(),
        cpus: 1,
    };
    // One output per renderer; the JSON one (index 1) must parse at the end,
    // whatever names the input holds.
    let mut outs: Vec<Vec<u8>> = vec![Vec::new(); renderers.len()];
    for (r, out) in renderers.iter_mut().zip(&mut outs) {
        let _ = r.begin(out, &banner);
    }
    let mut devices = DeviceList::new(&opts, src);
    let mut uptime = [0u64; 2];
    let mut cpu = [CpuTicks::default(); 2];
    let mut cpu_lines = CpuLines::default();
    let mut curr = 0;
    for index in 0..max_samples as u64 {
        uptime[curr] = src
            .read("/proc/uptime")
            .ok()
            .and_then(|t| parse_uptime(&t))
            .unwrap_or(0);
        let stat = src.read("/proc/stat").unwrap_or_default();
        cpu[curr] = parse_proc_stat_cpu(&stat).unwrap_or_default();
        let cpu_now = cpu_percent(&cpu[curr ^ 1], &cpu[curr]);
        let cpu_shares = cpu_lines.shares(&stat, cpu_now);
        devices.read_sample(src, curr);
        devices.compute_groups(curr);
        let sample = Sample {
            time: UNIX_EPOCH,
            index,
            itv: interval_cs(uptime[curr ^ 1], uptime[curr]),
            cpu: cpu_now,
            cpu_shares,
            devices: &devices,
            curr,
            latency: None,
            lost_before: 0,
        };
        for (r, out) in renderers.iter_mut().zip(&mut outs) {
            let _ = r.sample(out, &sample, false);
        }
        curr ^= 1;
        if !matches!(src.next_sample(), Ok(true)) {
            break;
        }
    }
    for (r, out) in renderers.iter_mut().zip(&mut outs) {
        let _ = r.end(out);
    }
    if let Err(e) = serde_json::from_slice::<serde_json::Value>(&outs[1]) {
        panic!("iostat-rs -o JSON is not valid JSON ({e})");
    }
}

/// Runs vcpustat's per-sample path over `src`: the state, every snapshot
/// through the tracker, each report rendered as text and machine rows.
pub fn drive_vcpustat(src: &mut dyn Source, max_samples: usize) {
    let _ = kernel::read_on(src);
    let _ = kernel::read_freq(src);
    let selection = Selection {
        cpus: None,
        sort: SortKey::Home,
        top: None,
        cumulative: false,
    };
    let text = VcpuText::new(View::Percent, None);
    let mut tracker = Tracker::new();
    let mut buf = Vec::new();
    let mut out = Vec::new();
    for _ in 0..max_samples {
        if let Ok(snapshot) = kernel::read_snapshot(src, &mut buf)
            && let Step::Report(report) = tracker.step(snapshot, src.elapsed(), &selection)
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

/// Runs cxlstat's discovery over `src`, resolves `events` (an `-e`
/// argument) against what it found, then counts as a replay does
/// (src/cxlstat/app.rs, `Session`): the counters keyed by the recording's
/// values (`ReplayKeys`), read at every frame, each report rendered as
/// text, JSON and `perf stat -x` lines. The JSON document must parse.
pub fn drive_cxlstat(src: &mut dyn Source, events: &str, max_samples: usize) {
    let Ok(sysfs::Discovery { pmus, .. }) = sysfs::discover(src) else {
        return;
    };
    let Ok(groups) = spec::parse_event_list(events) else {
        return;
    };
    let selected: Vec<usize> = (0..pmus.len()).collect();
    let Ok(plan) = resolve::resolve(&pmus, &groups, &selected) else {
        return;
    };
    let _ = resolve::driver_warnings(&plan, &pmus);
    let _ = plan.repeated_event();
    let recorded = src.recorded_values();
    let Ok(mut counters) = Counters::open(&plan, &pmus, false, &recorded, None) else {
        return;
    };
    let outputs = [
        CountOutput::Text { intervals: true },
        CountOutput::Frames(writer_for(Format::Json, cxl_render::schema(), ",")),
        CountOutput::PerfCsv {
            separator: ",".into(),
            intervals: true,
        },
    ];
    let mut views: Vec<CountView> = outputs
        .into_iter()
        .map(|output| CountView::new(&plan, &pmus, false, output))
        .collect();
    let mut outs: Vec<Vec<u8>> = vec![Vec::new(); views.len()];
    let mut notes = Vec::new();
    let mut previous = Vec::new();
    let (mut baseline, mut last) = (Duration::ZERO, Duration::ZERO);
    let mut begun = false;
    for index in 0..max_samples as u64 {
        let elapsed = src.elapsed();
        if counters.read(src, &mut notes).is_err() || src.check_answered().is_err() {
            break;
        }
        if index == 0 {
            for (view, out) in views.iter_mut().zip(&mut outs) {
                view.leave_out(counters.refused());
                let _ = view.begin(out);
            }
            begun = true;
            previous.extend_from_slice(counters.readings());
            baseline = elapsed;
        } else {
            let span = Span {
                previous: &previous,
                current: counters.readings(),
                elapsed: elapsed.saturating_sub(last),
                since_start: elapsed.saturating_sub(baseline),
                time: src.now(),
                index,
                notes: &notes,
                gone: counters.gone(),
            };
            for (view, out) in views.iter_mut().zip(&mut outs) {
                let _ = view.report(out, &span);
                let _ = view.rates(&span).count();
            }
            previous.copy_from_slice(counters.readings());
            notes.clear();
        }
        last = elapsed;
        if !matches!(src.next_sample(), Ok(true)) {
            break;
        }
    }
    if begun {
        for (view, out) in views.iter_mut().zip(&mut outs) {
            let _ = view.end(out);
        }
        if let Err(e) = serde_json::from_slice::<serde_json::Value>(&outs[1]) {
            panic!("cxlstat -o json is not valid JSON ({e})");
        }
    }
}

/// Reads the partition identity and the time base through `src`, as
/// `vcpustat trace record` does.
pub fn drive_identity(src: &dyn Source) {
    let _ = identity::partition(src);
    let _ = identity::timebase_hz(src);
}
