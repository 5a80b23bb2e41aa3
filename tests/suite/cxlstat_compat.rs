//! cxlstat where perf sets the rules: event names match in any case (perf
//! looks its PMU event aliases up with `strcasecmp`; format terms and PMU
//! names stay case-sensitive, `strcmp`), and a command after `--` that
//! cannot be started fails before anything is counted, with the exit
//! status a shell gives (127 not found, 126 not executable) and no
//! statistics.

use crate::cxlstat_support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use cxlstat_support::{
    cxlstat, perf_usable, scratch, software_tree, stderr, stdout, test_cpus, two_memdevs,
};
use hwstat::common::source::RootFs;
use hwstat::cxlstat::format::ConfigWord;
use hwstat::cxlstat::resolve::{resolve, select_pmus};
use hwstat::cxlstat::spec::parse_event_args;
use hwstat::cxlstat::sysfs::discover;

/// `(PMU, config)` of every event `spec` resolves to on the fixture tree,
/// or the error message.
fn configs(spec: &str) -> Result<Vec<(String, u64)>, String> {
    let pmus = discover(&RootFs::new(two_memdevs())).unwrap().pmus;
    let specs = parse_event_args(&[spec.to_string()]).map_err(|e| e.to_string())?;
    let plan =
        resolve(&pmus, &specs, &select_pmus(&pmus, &[]).unwrap()).map_err(|e| e.to_string())?;
    Ok(plan
        .events()
        .map(|e| (pmus[e.pmu].name.clone(), e.attr.word(ConfigWord::Config)))
        .collect())
}

#[test]
fn event_names_match_in_any_case_as_in_perf() {
    // h2d_req_snpcur: vid 0x1e98, gid 0x12, mask bit 3 (what perf 6.1 gives).
    let mem0 = |config| vec![("cxl_pmu_mem0.0".to_string(), config)];
    assert_eq!(
        configs("cxl_pmu_mem0.0/H2D_REQ_SNPCUR/"),
        Ok(mem0(0x1e98_0012_0000_0008))
    );
    assert_eq!(
        configs("cxl_pmu_mem0.0/h2d_req_snpcur/"),
        Ok(mem0(0x1e98_0012_0000_0008))
    );
    // Unqualified, on every PMU that offers it.
    let both = Ok(vec![
        ("cxl_pmu_mem0.0".to_string(), 0x1e98_0000_0000_0001),
        ("cxl_pmu_mem1.0".to_string(), 0x1e98_0000_0000_0001),
    ]);
    assert_eq!(configs("Clock_Ticks"), both);
    assert_eq!(configs("CLOCK_TICKS"), both);
    // With terms after it, which stay as written.
    assert_eq!(
        configs("cxl_pmu_mem0.0/Clock_Ticks,mask=0x2/"),
        Ok(mem0(0x1e98_0000_0000_0002))
    );
    // The catalogue knows it in any case too: not offered, not unknown.
    let err = configs("cxl_pmu_mem1.0/H2D_REQ_SNPCUR/").unwrap_err();
    assert!(
        err.contains("is a CXL event not offered by cxl_pmu_mem1.0"),
        "{err}"
    );
    // perf matches format terms and PMU names with strcmp: so does cxlstat.
    let err = configs("cxl_pmu_mem0.0/VID=0x1e98,gid=0,mask=1/").unwrap_err();
    assert!(err.starts_with("unknown term \"VID\""), "{err}");
    let err = configs("CXL_PMU_MEM0.0/clock_ticks/").unwrap_err();
    assert!(
        err.starts_with("unknown CXL PMU \"CXL_PMU_MEM0.0\""),
        "{err}"
    );
}

#[test]
fn a_command_that_cannot_start_fails_first_with_the_shell_status() {
    let dir = scratch("not-started");
    let plain = dir.join("plain");
    fs::write(&plain, "#!/bin/sh\n").unwrap();
    fs::set_permissions(&plain, fs::Permissions::from_mode(0o644)).unwrap();
    let plain = plain.to_str().unwrap().to_string();
    let directory = dir.to_str().unwrap().to_string();
    // The search path is one empty directory: with the inherited one, a
    // directory in it the user may not search (root's, kept by `sudo -E`
    // or `setpriv`) makes execvp fail with EACCES, as env(1) and perf do.
    let empty = dir.join("empty");
    fs::create_dir_all(&empty).unwrap();
    let fixture = two_memdevs();
    let fixture = fixture.to_str().unwrap();
    // The fixture's PMUs cannot be opened: the command is checked before
    // any counter is, so its error is the one reported.
    let cases: [(&str, i32, &str); 4] = [
        ("/nonexistent", 127, "No such file or directory"),
        ("no-such-command-anywhere", 127, "No such file or directory"),
        (&plain, 126, "Permission denied"),
        (&directory, 126, "Permission denied"),
    ];
    for (program, status, reason) in cases {
        for timing in [&[][..], &["-I", "100"], &["-o", "json"]] {
            let mut args = vec!["--sysroot", fixture, "-e", "clock_ticks"];
            args.extend_from_slice(timing);
            args.extend(["--", program, "arg"]);
            let out = Command::new(env!("CARGO_BIN_EXE_cxlstat"))
                .args(&args)
                .env("PATH", &empty)
                .output()
                .expect("cxlstat runs");
            assert_eq!(
                out.status.code(),
                Some(status),
                "{args:?}: {}",
                stderr(&out)
            );
            assert_eq!(stdout(&out), "", "{args:?}");
            let err = stderr(&out);
            assert!(
                err.starts_with(&format!("cxlstat: cannot run {program}: {reason}")),
                "{err}"
            );
            assert_eq!(err.lines().count(), 1, "{err}");
        }
    }
}

/// A file executable by its mode but of no format the kernel knows (a
/// script without `#!`) is run by `/bin/sh`, as `execvp` and perf stat
/// (which execs its workload with `execvp`) run it, and as a shell does.
#[test]
fn a_script_without_a_shebang_runs_through_sh_as_perf_runs_it() {
    if !perf_usable("a_script_without_a_shebang_runs_through_sh_as_perf_runs_it") {
        return;
    }
    let root = scratch("enoexec");
    let cpus = test_cpus();
    let name = format!("cxl_pmu_mem{}.0", cpus[0]);
    software_tree(&root, &[(name.as_str(), cpus[0])]);
    let written = root.join("script.text");
    fs::write(&written, "echo from sh; exit 4\n").unwrap();
    fs::set_permissions(&written, fs::Permissions::from_mode(0o755)).unwrap();
    let script = root.join("script");
    cxlstat_support::copy_executable(&written, &script);
    let root_arg = root.to_str().unwrap();
    let script = script.to_str().unwrap();
    for timing in [&[][..], &["-I", "100"], &["-o", "json"]] {
        let mut args = vec!["--sysroot", root_arg, "-e", "cpu_clock"];
        args.extend_from_slice(timing);
        args.extend(["--", script]);
        let out = cxlstat(&args);
        assert_eq!(out.status.code(), Some(4), "{args:?}: {}", stderr(&out));
        let text = stdout(&out);
        // Every 100 ms a report may come before the script's line: on a
        // loaded machine sh can take that long to start (seen once in a
        // suite run beside another build).
        let ran = match timing.first() {
            Some(&"-I") => text.lines().any(|line| line == "from sh"),
            _ => text.starts_with("from sh\n"),
        };
        assert!(ran, "{args:?}: {text}");
        assert!(text.contains("cpu_clock"), "{args:?}: {text}");
    }
    // A command that starts is counted and its status passed on.
    let out = cxlstat(&[
        "--sysroot",
        root_arg,
        "-e",
        "cpu_clock",
        "--",
        "sh",
        "-c",
        "exit 3",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stdout(&out).contains("cpu_clock"), "{}", stdout(&out));
}
