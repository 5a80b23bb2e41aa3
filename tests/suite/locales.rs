//! The locale, as sysstat takes it (its `init_nls`): the header date and
//! `-t` are `strftime`'s `%x` and `%X` in `LC_TIME`, and the text report's
//! decimal point is `LC_NUMERIC`'s; `-o JSON` keeps a `.`.
//!
//! Debian's iostat and iostat-rs run on one fixture tree at one frozen time
//! (libfaketime), in locales `localedef` compiles into a temporary
//! directory (`LOCPATH`; nothing of the system's changes): `en_US.UTF-8`
//! (`12/03/2026 10:57:53 PM`), `de_DE.UTF-8` (`03.12.2026`, `27,44`),
//! `ps_AF.UTF-8` (a decimal point of two bytes, U+066B, that `printf`
//! counts as one character of the width) and a locale that does not exist
//! (both fall back to C). The outputs must be identical, byte for byte.
//! vcpustat's `-t` is held to `date "+%x %X"` in the same locale.
//!
//! Needs root and a mount namespace (sysstat reads the tree there),
//! Debian's `locales` (`localedef` and its sources) and `faketime`; without
//! them the test is skipped with the reason, unless `CI=true`.

use crate::scratch::{Scratch, scratch};
use crate::skip;
use crate::sysstat_compare::{Run, namespace_unavailable, pinned, sysstat_on_tree_with_env};

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The locales compared, compiled from Debian's sources.
const LOCALES: [&str; 3] = ["en_US", "de_DE", "ps_AF"];

/// The frozen wall-clock time both programs see (UTC).
const FROZEN: &str = "2026-12-03 22:57:53";

/// libfaketime, which `faketime` preloads, wherever the architecture puts it.
fn libfaketime() -> Option<PathBuf> {
    fs::read_dir("/usr/lib")
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path().join("faketime/libfaketime.so.1"))
        .find(|p| p.exists())
}

/// What this test lacks here, if anything.
fn missing() -> Option<String> {
    if let Some(why) = namespace_unavailable() {
        return Some(why);
    }
    if !Path::new("/usr/share/i18n/locales/de_DE").exists() {
        return Some("the locale sources are missing (apt-get install locales)".into());
    }
    if libfaketime().is_none() {
        return Some("libfaketime is missing (apt-get install faketime)".into());
    }
    None
}

/// Compiles `name`.UTF-8 into `dir` with `localedef`.
fn compile_locale(dir: &Path, name: &str) {
    compile_locale_in(dir, name, "UTF-8");
}

/// Compiles `name`.`charset` into `dir` with `localedef`.
fn compile_locale_in(dir: &Path, name: &str, charset: &str) {
    let out = Command::new("localedef")
        .args(["-i", name, "-f", charset])
        .arg(dir.join(format!("{name}.{charset}")))
        .output()
        .expect("run localedef");
    assert!(out.status.success(), "localedef {name}: {out:?}");
}

/// A kernel tree: two CPUs, 1,234.56 s of uptime, a disk and its partition
/// whose rates have two significant decimals.
fn tree(root: &Path) {
    let write = |rel: &str, text: &str| {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    };
    write("proc/uptime", "1234.56 2000.00\n");
    write(
        "proc/stat",
        "cpu  2744 28 545 34 34 0 0 0 0 0\ncpu0 1372 14 272 17 17 0 0 0 0 0\ncpu1 1372 14 273 17 17 0 0 0 0 0\n",
    );
    for cpu in ["cpu0", "cpu1"] {
        fs::create_dir_all(root.join("sys/devices/system/cpu").join(cpu)).unwrap();
    }
    let sda =
        "64187 3641 4519354 137452 38402 10111 3001337 9876 0 61234 150000 77 0 40000 20 5012 3300";
    let sda1 = "5123 12 80044 1234 702 3 9001 77 0 2345 1400 0 0 0 0 0 0";
    write(
        "proc/diskstats",
        &format!("   8       0 sda {sda}\n   8       1 sda1 {sda1}\n"),
    );
    let sysfs = |fields: &str| -> String {
        let padded: String = fields.split(' ').map(|f| format!("{f:>8} ")).collect();
        format!("{}\n", padded.trim_end())
    };
    write("sys/block/sda/stat", &sysfs(sda));
    write("sys/block/sda/sda1/stat", &sysfs(sda1));
}

/// The environment of both programs on top of the pinned one: the locale,
/// where its files are, and the frozen clock.
fn locale_env<'a>(locales: &'a str, locale: &'a str, faketime: &'a str) -> [(&'a str, &'a str); 4] {
    [
        ("LOCPATH", locales),
        ("LC_ALL", locale),
        ("LD_PRELOAD", faketime),
        ("FAKETIME", FROZEN),
    ]
}

fn iostat_rs(root: &Path, env: &[(&str, &str)], args: &[&str]) -> Run {
    let out = pinned(&mut Command::new(env!("CARGO_BIN_EXE_iostat-rs")))
        .arg("--sysroot")
        .arg(root)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run iostat-rs");
    Run::from(out)
}

/// The test's directory and, in its `locales`, the `names` compiled; `None`
/// after saying why the test cannot run here.
fn prepare(test: &str, names: &[&str]) -> Option<(Scratch, PathBuf)> {
    if !skip::runs_unless(test, missing()) {
        return None;
    }
    let work = scratch(test);
    let locales = work.join("locales");
    fs::create_dir_all(&locales).unwrap();
    std::thread::scope(|s| {
        for name in names {
            let locales = &locales;
            s.spawn(move || compile_locale(locales, name));
        }
    });
    Some((work, locales))
}

#[test]
fn dates_and_decimal_points_follow_the_locale_as_in_sysstat() {
    let Some((work, locales)) = prepare("locales", &LOCALES) else {
        return;
    };
    let root = work.join("root");
    tree(&root);
    let faketime = libfaketime().unwrap();
    let (locales, faketime) = (locales.to_str().unwrap(), faketime.to_str().unwrap());
    let option_sets: [&[&str]; 7] = [
        &["-t", "-x"],
        &["-t", "-h"],
        &["-x", "-h", "-p", "ALL"],
        &["-x", "-s", "--dec=1"],
        &["-d", "--human", "-k"],
        &["-x", "--pretty", "-t"],
        &["-o", "JSON", "-t", "-x", "-p", "ALL"],
    ];
    let mut compared = 0;
    for locale in ["en_US.UTF-8", "de_DE.UTF-8", "ps_AF.UTF-8", "xx_YY.UTF-8"] {
        let env = locale_env(locales, locale, faketime);
        for args in option_sets {
            let sysstat = sysstat_on_tree_with_env(&root, &env, args).expect("run sysstat");
            let ours = iostat_rs(&root, &env, args);
            assert_eq!(
                sysstat.code,
                Some(0),
                "sysstat {locale} {args:?}: {}",
                sysstat.stderr
            );
            assert_eq!(
                ours.stdout, sysstat.stdout,
                "iostat-rs {args:?} in {locale} differs from sysstat"
            );
            compared += 1;
        }
    }
    // The locales were in force: en_US's date and de_DE's comma show.
    let env = locale_env(locales, "de_DE.UTF-8", faketime);
    let german = iostat_rs(&root, &env, &["-t", "-c"]).stdout;
    assert!(german.contains("03.12.2026 22:57:53\n"), "{german}");
    assert!(german.contains(','), "{german}");
    let env = locale_env(locales, "en_US.UTF-8", faketime);
    let american = iostat_rs(&root, &env, &["-t", "-c"]).stdout;
    assert!(american.contains("12/03/2026 10:57:53 PM\n"), "{american}");
    assert_eq!(compared, 28);
}

/// vcpustat's statistics, one vCPU, under `root`.
fn vcpustat_tree(root: &Path) {
    let stats = root.join("proc/powerpc");
    fs::create_dir_all(&stats).unwrap();
    fs::write(stats.join("vcpudispatch_stats"), "cpu0 10 5 3 1 1 8 1 1\n").unwrap();
    fs::write(stats.join("vcpudispatch_stats_freq"), "50\n").unwrap();
}

#[test]
fn vcpustat_prints_the_report_time_in_the_locale() {
    let Some((work, locales)) = prepare("locales-vcpustat", &["en_US"]) else {
        return;
    };
    vcpustat_tree(&work.join("root"));
    let faketime = libfaketime().unwrap();
    let env = locale_env(
        locales.to_str().unwrap(),
        "en_US.UTF-8",
        faketime.to_str().unwrap(),
    );
    let out = pinned(&mut Command::new(env!("CARGO_BIN_EXE_vcpustat")))
        .arg("--sysroot")
        .arg(work.join("root"))
        .arg("-t")
        .envs(env)
        .output()
        .expect("run vcpustat");
    let date = pinned(Command::new("date").arg("+%x %X"))
        .envs(env)
        .output()
        .expect("run date");
    let (ours, expected) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&date.stdout),
    );
    assert_eq!(expected, "12/03/2026 10:57:53 PM\n");
    assert_eq!(ours.lines().next(), expected.lines().next(), "{ours}");
}

/// A locale of another character set than UTF-8 (`ja_JP.EUC-JP`, whose `%x`
/// is `2026\xc7\xaf12\xb7\xee03\xc6\xfc`): sysstat prints the date in the
/// locale's bytes, which that user's terminal shows; iostat-rs printed
/// `?/?/?` in the header and an empty line for `-t`, and vcpustat an empty
/// line. Text gets the locale's bytes as sysstat does, byte for byte; JSON,
/// which must be UTF-8, shows each byte that is not UTF-8 as `\xNN`, as
/// it shows such a byte of a device name.
#[test]
fn dates_in_a_locale_that_is_not_utf_8_are_printed_as_sysstat_prints_them() {
    let test = "locales-euc-jp";
    if !skip::runs_unless(test, missing()) {
        return;
    }
    let work = scratch(test);
    let locales = work.join("locales");
    fs::create_dir_all(&locales).unwrap();
    compile_locale_in(&locales, "ja_JP", "EUC-JP");
    let root = work.join("root");
    tree(&root);
    vcpustat_tree(&root);
    let faketime = libfaketime().unwrap();
    let env = locale_env(
        locales.to_str().unwrap(),
        "ja_JP.EUC-JP",
        faketime.to_str().unwrap(),
    );
    let date = |format: &str| {
        let out = pinned(Command::new("date").arg(format))
            .envs(env)
            .output()
            .expect("run date");
        out.stdout
    };
    let (day, time) = (date("+%x"), date("+%x %X"));
    assert!(
        std::str::from_utf8(&day).is_err(),
        "the locale's date is not UTF-8: {day:?}"
    );
    let contains =
        |haystack: &[u8], needle: &[u8]| haystack.windows(needle.len()).any(|w| w == needle);
    let run = |program: &str, args: &[&str]| {
        pinned(&mut Command::new(program))
            .arg("--sysroot")
            .arg(&root)
            .args(args)
            .envs(env)
            .output()
            .expect("run the program")
    };
    let ours = run(env!("CARGO_BIN_EXE_iostat-rs"), &["-t", "-c"]);
    let banner = [b"\t".as_slice(), &day[..day.len() - 1], b" \t_"].concat();
    assert!(
        contains(&ours.stdout, &banner),
        "the header date: {}",
        String::from_utf8_lossy(&ours.stdout)
    );
    assert!(
        contains(&ours.stdout, &[b"\n".as_slice(), &time].concat()),
        "the -t line: {}",
        String::from_utf8_lossy(&ours.stdout)
    );
    if let Ok(sysstat) = sysstat_on_tree_with_env(&root, &env, &["-t", "-c"]) {
        assert_eq!(
            String::from_utf8_lossy(&ours.stdout),
            sysstat.stdout,
            "iostat-rs differs from sysstat"
        );
    }
    let json = run(env!("CARGO_BIN_EXE_iostat-rs"), &["-o", "JSON", "-t", "-c"]);
    let json = String::from_utf8(json.stdout).expect("JSON is UTF-8");
    // `\xc7\xaf` happens to be UTF-8 (U+01EF), the other bytes are not.
    assert!(
        json.contains("\"date\": \"2026\u{1ef}12\\\\xb7\\\\xee03\\\\xc6\\\\xfc\","),
        "{json}"
    );
    assert!(
        json.contains("\"timestamp\": \"2026\u{1ef}12\\\\xb7\\\\xee03\\\\xc6\\\\xfc 22\\\\xbb"),
        "{json}"
    );
    let vcpustat = run(env!("CARGO_BIN_EXE_vcpustat"), &["-t"]);
    assert!(
        vcpustat.stdout.starts_with(&time),
        "vcpustat -t: {}",
        String::from_utf8_lossy(&vcpustat.stdout)
    );
}
