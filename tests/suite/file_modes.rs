//! The mode of the files the tools create (`user_file::OWNER_ONLY`): every
//! recording and chart is its owner's alone (0600, as perf creates
//! `perf.data`), whatever the umask, since what a run read may be root's
//! alone; `--textfile` alone is for every reader (0644), as node_exporter's
//! collector runs as another user; and a file this user had there is never
//! given a wider mode.

use crate::cxlstat_support::software_tree;
use crate::hostile_files::{iostat_tree, trace_tree, vcpustat_tree};
use crate::scratch::scratch;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

const IOSTAT: &str = env!("CARGO_BIN_EXE_iostat-rs");
const VCPUSTAT: &str = env!("CARGO_BIN_EXE_vcpustat");
const CXLSTAT: &str = env!("CARGO_BIN_EXE_cxlstat");
const CHARTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/charts");

/// Runs `program args` under `umask`; panics with its stderr unless it
/// succeeds.
fn run_under(umask: libc::mode_t, program: &str, args: &[&str]) {
    let mut command = Command::new(program);
    command.args(args);
    // SAFETY: umask is async-signal-safe and cannot fail.
    unsafe {
        command.pre_exec(move || {
            libc::umask(umask);
            Ok(())
        });
    }
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o7777
}

#[test]
fn every_recording_and_chart_is_its_owners_alone_whatever_the_umask() {
    let dir = scratch("file-modes");
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let iostat_root = iostat_tree(&dir.join("iostat"));
    let vcpustat_root = vcpustat_tree(&dir.join("vcpustat"));
    let trace_root = trace_tree(&dir.join("trace"));
    let cxl_root = dir.join("cxl");
    software_tree(&cxl_root, &[("cxl_pmu_mem0.0", 0)]);
    let (iostat_root, vcpustat_root, trace_root, cxl_root) = (
        iostat_root.to_str().unwrap(),
        vcpustat_root.to_str().unwrap(),
        trace_root.to_str().unwrap(),
        cxl_root.to_str().unwrap(),
    );
    let (iostat_rec, iostat_svg) = (path("iostat.rec"), path("iostat.svg"));
    let (vcpustat_rec, vcpustat_svg) = (path("vcpustat.rec"), path("vcpustat.svg"));
    let (cxlstat_rec, cxlstat_svg) = (path("cxlstat.rec"), path("cxlstat.svg"));
    let (trace_dtl, trace_svg) = (path("trace.dtl"), path("trace.svg"));
    let cxlstat_replayed = format!("{CHARTS}/cxlstat.rec");
    let lpar = format!("{CHARTS}/lpar1.dtl");
    let runs: [(&str, Vec<&str>); 6] = [
        (
            IOSTAT,
            vec![
                "--sysroot",
                iostat_root,
                "--record",
                &iostat_rec,
                "--svg",
                &iostat_svg,
                "-x",
                "0.1",
                "2",
            ],
        ),
        (
            VCPUSTAT,
            vec![
                "--sysroot",
                vcpustat_root,
                "--record",
                &vcpustat_rec,
                "--svg",
                &vcpustat_svg,
                "0.1",
                "2",
            ],
        ),
        (
            CXLSTAT,
            vec![
                "--sysroot",
                cxl_root,
                "--record",
                &cxlstat_rec,
                "-e",
                "cpu_clock",
                "0.1",
                "1",
            ],
        ),
        (
            CXLSTAT,
            vec![
                "--replay",
                &cxlstat_replayed,
                "-e",
                "cpu_clock",
                "--svg",
                &cxlstat_svg,
                "0.1",
            ],
        ),
        (
            VCPUSTAT,
            vec![
                "trace",
                "record",
                "--sysroot",
                trace_root,
                "--duration",
                "0.2s",
                "-w",
                &trace_dtl,
            ],
        ),
        (
            VCPUSTAT,
            vec!["trace", "report", &lpar, "--svg", &trace_svg],
        ),
    ];
    for (program, args) in &runs {
        run_under(0, program, args);
    }
    for file in [
        &iostat_rec,
        &iostat_svg,
        &vcpustat_rec,
        &vcpustat_svg,
        &cxlstat_rec,
        &cxlstat_svg,
        &trace_dtl,
        &trace_svg,
    ] {
        assert_eq!(mode(Path::new(file)), 0o600, "{file}");
    }
    // Rewritten: a mode of this user's choice stays, wider or narrower.
    for (file, chosen) in [(&iostat_rec, 0o640), (&iostat_svg, 0o604)] {
        fs::set_permissions(file, fs::Permissions::from_mode(chosen)).unwrap();
    }
    run_under(0, IOSTAT, &runs[0].1);
    assert_eq!(mode(Path::new(&iostat_rec)), 0o640);
    assert_eq!(mode(Path::new(&iostat_svg)), 0o604);
}

#[test]
fn a_textfile_is_for_every_reader_unless_its_owner_narrowed_it() {
    let dir = scratch("file-modes-textfile");
    let root = iostat_tree(&dir);
    let textfile = dir.join("iostat.prom");
    let args = [
        "--sysroot",
        root.to_str().unwrap(),
        "--textfile",
        textfile.to_str().unwrap(),
    ];
    run_under(0o077, IOSTAT, &args);
    assert_eq!(mode(&textfile), 0o644);
    fs::set_permissions(&textfile, fs::Permissions::from_mode(0o640)).unwrap();
    run_under(0o022, IOSTAT, &args);
    assert_eq!(mode(&textfile), 0o640);
    assert!(
        fs::read_to_string(&textfile)
            .unwrap()
            .contains("node_disk_reads_completed_total")
    );
}
