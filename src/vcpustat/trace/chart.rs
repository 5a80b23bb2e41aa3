//! `trace report --svg FILE`: what every physical processor did (a
//! swimlane per processor, each vCPU its colour, untraced time left
//! blank), dispatch latency per vCPU (p50–p90 box, whisker to p99, mark at
//! the maximum), and the dispatch and preempt reasons per vCPU as stacked
//! bars. One pass per vCPU gives the figures and the lanes; memory does not
//! grow with the number of records (the lanes keep one cell per pixel
//! column).

use std::collections::BTreeSet;
use std::path::Path;

use crate::common::chart::lanes::Lanes;
use crate::common::chart::{Chart, Panel, PanelKind, Percentiles, Stack, file, palette, render};

use super::analysis::{self, Machine, VcpuReport};
use super::entry::{dispatch_reason_name, preempt_reason_name};
use super::sections::ticks_to_us;
use super::topology::Topology;

/// Columns of a swimlane: about two pixels each at the chart's width.
const LANE_COLUMNS: usize = 480;

/// Draws the charts of `machine` into `path`, under `title`.
pub fn write_charts(
    path: &Path,
    machine: &Machine,
    topology: &Topology,
    title: &str,
) -> Result<(), String> {
    let hz = machine.timebase_hz;
    let names: Vec<String> = machine
        .vcpus
        .iter()
        .map(|v| format!("lpar{} cpu{}", v.key.partition, v.key.cpu))
        .collect();
    let (reports, lanes) = one_pass(machine, topology, names.clone())?;
    let boxes = reports
        .iter()
        .zip(&names)
        .filter_map(|(r, name)| {
            let d = r.latency?;
            let us = |t: u64| ticks_to_us(t as f64, hz);
            Some(Percentiles {
                name: name.clone(),
                p50: us(d.p50),
                p90: us(d.p90),
                p99: us(d.p99),
                max: us(d.max),
            })
        })
        .collect();
    let chart = Chart {
        title: title.to_string(),
        panels: vec![
            Panel {
                title: "physical processors: which vCPU ran when".into(),
                y_label: "physical processor".into(),
                kind: PanelKind::Swimlanes(lanes),
            },
            Panel {
                title: "dispatch latency per vCPU (ready until dispatched)".into(),
                y_label: "latency (µs)".into(),
                kind: PanelKind::Boxes(boxes),
            },
            reasons_panel(
                "dispatch reasons per vCPU",
                &reports,
                &names,
                |r| &r.dispatch_reasons,
                dispatch_reason_name,
            ),
            reasons_panel(
                "preempt reasons per vCPU",
                &reports,
                &names,
                |r| &r.preempt_reasons,
                preempt_reason_name,
            ),
        ],
    };
    file::write_atomic(path, render(&chart)?.as_bytes())
}

/// The per-vCPU figures, and the records as lanes of their processors in
/// milliseconds from the earliest record (a record runs from its dispatch
/// until its vCPU's next wait began), in one pass per vCPU.
fn one_pass(
    machine: &Machine,
    topology: &Topology,
    owners: Vec<String>,
) -> Result<(Vec<VcpuReport>, Lanes), String> {
    let hz = machine.timebase_hz.max(1) as f64;
    let mut origin = u64::MAX;
    for v in &machine.vcpus {
        if let Some(e) = v.stream(1).next_entry()? {
            origin = origin.min(e.dispatched_at());
        }
    }
    let ms = |t: u64| t.saturating_sub(origin) as f64 * 1e3 / hz;
    let mut lanes = Lanes::new(LANE_COLUMNS, 1e-3, owners);
    lanes.start_at(0.0);
    let mut lane_of = vec![usize::MAX; 1 << 16];
    let reports =
        analysis::vcpu_reports_visiting(machine, topology, &mut |_| {}, &mut |owner, e, next| {
            let start = e.dispatched_at();
            let ran = next
                .and_then(|n| n.wait_started_at().checked_sub(start))
                .unwrap_or(0);
            let slot = &mut lane_of[usize::from(e.processor_id)];
            if *slot == usize::MAX {
                *slot = lanes.add_lane(
                    format!("proc {}", e.processor_id),
                    u64::from(e.processor_id),
                );
            }
            lanes.add(*slot, ms(start), ms(start.saturating_add(ran)), owner);
        })?;
    lanes.sort_lanes();
    Ok((reports, lanes))
}

fn reasons_panel(
    title: &str,
    reports: &[VcpuReport],
    names: &[String],
    reasons: fn(&VcpuReport) -> &Vec<(u8, u64)>,
    name: fn(u8) -> String,
) -> Panel {
    let codes: BTreeSet<u8> = reports
        .iter()
        .flat_map(|r| reasons(r).iter().map(|c| c.0))
        .collect();
    let stacks = codes
        .iter()
        .enumerate()
        .map(|(k, &code)| Stack {
            name: format!("{code} {}", name(code)),
            colour: palette::series(k),
            values: reports
                .iter()
                .map(|r| {
                    reasons(r)
                        .iter()
                        .find(|c| c.0 == code)
                        .map_or(0.0, |c| c.1 as f64)
                })
                .collect(),
        })
        .collect();
    Panel {
        title: title.to_string(),
        y_label: "dispatches".into(),
        kind: PanelKind::StackedBars {
            categories: names.to_vec(),
            stacks,
        },
    }
}
