//! The simulation agrees with the kernel: the pseries guest script
//! (`tests/pseries/vcpustat.sh`) runs here against the FUSE simulation of
//! the POWER procfs and DTL debugfs files, and its transcript must equal
//! the one a real pseries kernel gave (`tests/pseries/transcript.txt`).
//!
//! That transcript is the kernel's: `.ci/pseries` runs the same script in a
//! QEMU pseries guest on every CI run and fails when the kernel's transcript
//! differs from the file (`HWSTAT_BLESS=1 bash .ci/pseries` rewrites it from
//! the guest, never from the simulation). Both sides go through
//! `tests/pseries/normalise.sed`, which replaces only what legitimately
//! differs between two runs: wall-clock times.
//!
//! The simulation is set up as QEMU's pseries machine presents itself
//! (2 vCPUs, HZ 250, a 85-entry DTL, and under TCG no dispatch is ever
//! logged, so every counter stays 0).
//!
//! Needs root and /dev/fuse; skips with a reason elsewhere, fails under CI.

use crate::procstate::with_default_action;
// Shared with vcpustat_fuse.rs, which uses its scripted events.
use crate::simkernel;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use simkernel::{Kernel, mount};

/// The kernel QEMU's pseries machine boots: 2 vCPUs whose dispatch counters
/// never move (TCG logs no dispatch), HZ 250, debugfs with an 85-entry DTL.
fn qemu_pseries() -> Kernel {
    let mut k = Kernel::new(&[(0, [0; 8]), (1, [0; 8])]).with_debugfs(true, 85, &[0, 1]);
    k.hz = 250;
    k.lparcfg = Some(
        "lparcfg 1.9\nserial_number=\nsystem_type=IBM,\npartition_id=0\n\
         shared_processor_mode=1\npartition_active_processors=2\n"
            .into(),
    );
    k.cpuinfo = Some(
        "processor\t: 0\ncpu\t\t: POWER9 (architected), altivec supported\n\
         clock\t\t: 1000.000000MHz\nrevision\t: 2.2 (pvr 004e 1202)\n\n\
         processor\t: 1\ncpu\t\t: POWER9 (architected), altivec supported\n\
         clock\t\t: 1000.000000MHz\nrevision\t: 2.2 (pvr 004e 1202)\n\n\
         timebase\t: 512000000\nplatform\t: pSeries\nmodel\t\t: IBM pSeries (emulated by qemu)\n\
         machine\t\t: CHRP IBM pSeries (emulated by qemu)\nMMU\t\t: Radix\n"
            .into(),
    );
    k
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `transcript` through the shared normalisation (`sed -f normalise.sed`).
fn normalise(transcript: &str) -> String {
    let mut sed = Command::new("sed")
        .arg("-f")
        .arg(repo().join("tests/pseries/normalise.sed"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sed runs");
    let mut stdin = sed.stdin.take().unwrap();
    let input = transcript.to_string();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        stdin.write_all(input.as_bytes()).unwrap();
    });
    let out = sed.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

/// Runs the guest script against the simulation mounted on `root`.
fn run_script(root: &Path) -> String {
    let tmp = crate::scratch::scratch("pseries-sim");
    let bin = Path::new(env!("CARGO_BIN_EXE_vcpustat")).parent().unwrap();
    let path = std::env::join_paths(
        std::iter::once(PathBuf::from(bin))
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let mut script = Command::new("sh");
    script
        .process_group(0)
        .arg(repo().join("tests/pseries/vcpustat.sh"))
        .env("ROOT", root)
        .env("TMP", &tmp)
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // The script stops runs with SIGHUP, SIGTERM and SIGINT, as on the
    // guest, where init starts it; under `nohup` the runs would ignore
    // SIGHUP, and the script waited on them until the limit below.
    let signals = [libc::SIGHUP, libc::SIGINT, libc::SIGQUIT, libc::SIGTERM];
    let mut child = with_default_action(&mut script, &signals)
        .spawn()
        .expect("sh runs");
    let reader = {
        let mut stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut stdout, &mut s).unwrap();
            s
        })
    };
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(120) {
            // The script's background vcpustat keeps the pipe open: kill
            // the process group, then show how far the script came.
            // SAFETY: kill has no memory preconditions.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let out = reader.join().unwrap();
            panic!("the guest script did not finish in 120 s:\n{out}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = reader.join().unwrap();
    assert!(status.success(), "the guest script failed: {status}\n{out}");
    out.replace(&root.display().to_string(), "")
}

#[test]
fn the_guest_script_gives_the_real_kernels_transcript_on_the_simulation() {
    let Some(sim) = mount("pseries", qemu_pseries()) else {
        return;
    };
    let sim_transcript = normalise(&run_script(&sim.root));
    let kernel_transcript =
        std::fs::read_to_string(repo().join("tests/pseries/transcript.txt")).unwrap();
    if sim_transcript != kernel_transcript {
        let out = std::env::temp_dir().join("pseries-sim-transcript.txt");
        std::fs::write(&out, &sim_transcript).unwrap();
        panic!(
            "the simulation's transcript differs from the kernel's: \
             diff -u tests/pseries/transcript.txt {}",
            out.display()
        );
    }
}

/// The DTL files of the simulation under `root`.
fn ring(root: &Path, cpu: u32) -> PathBuf {
    root.join(format!("sys/kernel/debug/powerpc/dtl/cpu-{cpu}"))
}

/// lpar.c and dtl.c share `dtl_access_lock`: an open ring keeps the
/// statistics from being switched on, and statistics that are on keep every
/// ring from being opened; EBUSY both ways (found by the transcript: the
/// simulation let both happen).
#[test]
fn rings_and_the_statistics_exclude_each_other() {
    let Some(sim) = mount("pseries-lock", qemu_pseries()) else {
        return;
    };
    let stats = sim.root.join("proc/powerpc/vcpudispatch_stats");
    let errno = |r: std::io::Result<()>| r.unwrap_err().raw_os_error();
    let held = std::fs::File::open(ring(&sim.root, 0)).unwrap();
    assert_eq!(errno(std::fs::write(&stats, "1")), Some(libc::EBUSY));
    assert!(!sim.kernel().on);
    drop(held);
    sim.await_rings_closed();
    std::fs::write(&stats, "1").unwrap();
    for cpu in [0, 1] {
        assert_eq!(
            errno(std::fs::File::open(ring(&sim.root, cpu)).map(drop)),
            Some(libc::EBUSY)
        );
    }
    std::fs::write(&stats, "0").unwrap();
    std::fs::File::open(ring(&sim.root, 1)).unwrap();
}

/// `dtl_file_read` hands out whole 48-byte entries only: any other read
/// size is EINVAL, even with nothing logged (the simulation returned 0
/// bytes for every size).
#[test]
fn ring_reads_take_whole_entries() {
    use std::io::Read;
    let Some(sim) = mount("pseries-read", qemu_pseries()) else {
        return;
    };
    let mut f = std::fs::File::open(ring(&sim.root, 0)).unwrap();
    let mut buf = [0u8; 4800];
    for bad in [1, 47, 49, 4799] {
        let err = f.read(&mut buf[..bad]).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EINVAL), "read of {bad}");
    }
    for good in [48, 96, 4800] {
        assert_eq!(f.read(&mut buf[..good]).unwrap(), 0, "read of {good}");
    }
}
