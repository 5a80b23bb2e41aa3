//! Coloured output (`S_COLORS=always`), byte for byte.
//!
//! Each test writes a small kernel tree, runs `iostat-rs --sysroot` on it and
//! compares everything after the banner line (which carries the live host
//! name and date) with text written out by hand from sysstat's source
//! (sysstat/sysstat common.c `cprintf_f`, `cprintf_xpc`, `cprintf_u64`,
//! `cprintf_unit`, `cprintf_in`, `init_colors`; iostat.c
//! `write_plain_cpu_stat`, `write_plain_ext_stat`, `write_plain_basic_stat`):
//!
//! * every value is `<sgr>` + `" %*.*f"` (or `" %*llu"`) + `\e[0m`: the
//!   leading space and the padding are inside the colour; with `--human` the
//!   unit letter or `%` follows the reset;
//! * a device name is `<I>` + `"%-13s"` + `\e[0m`, and with `--pretty`
//!   `<I>` + `" %s"` + `\e[0m` at the end of the line;
//! * rates, sizes, times: zero colour when `|v| < 0.005` (two decimals),
//!   otherwise the non-zero colour; totals: zero colour when the integer is 0;
//! * `%util` and the CPU busy columns: extreme at ≥ 90, warning at ≥ 75
//!   (XHIGH); `%idle`: extreme at ≤ 10, warning at ≤ 25, 0 included (XLOW);
//!   `%rrqm`/`%wrqm`/`%drqm`: the same low ranges, but values below 0.005 get
//!   the zero colour (XLOW0).
//!
//! `same_as_debian_iostat_outside_the_percentage_ranges` also runs Debian's
//! sysstat 12.6.1 on the same trees (root, mount namespace): its
//! `cprintf_f`/`cprintf_u64`/`cprintf_in`/`cprintf_unit` are current
//! sysstat's, only its percentage ranges differ (`cprintf_pc`), so with every
//! range colour set to the non-zero colour the outputs must be identical.
//!
//! The first report covers the time since boot: every rate is the counter
//! divided by the uptime (here 100.00 s, so `itv` = 10000 hundredths), every
//! CPU percentage the field divided by the sum of the `cpu` line's fields.

// Shared with tests/suite/differential_sysstat.rs and tests/suite/iostat_faults.rs.
use crate::scratch::Scratch;
use crate::skip;
use crate::sysstat_compare;

use std::fs;
use std::path::Path;
use std::process::Command;

const NAME: &str = "\x1b[32;22m";
const NONZERO: &str = "\x1b[34;1m";
const ZERO: &str = "\x1b[34;22m";
const WARN: &str = "\x1b[35;1m";
const EXTREME: &str = "\x1b[31;1m";
const RESET: &str = "\x1b[0m";

fn paint(sgr: &str, text: &str) -> String {
    format!("{sgr}{text}{RESET}")
}
fn n(text: &str) -> String {
    paint(NONZERO, text)
}
fn z(text: &str) -> String {
    paint(ZERO, text)
}
fn w(text: &str) -> String {
    paint(WARN, text)
}
fn x(text: &str) -> String {
    paint(EXTREME, text)
}
fn name(text: &str) -> String {
    paint(NAME, text)
}

/// Two disks: `sda` busy (95 % util, 5 % read merges, 20 % write merges),
/// `sdb` nearly idle (values at and just below the zero limit, 80 % util).
const DISKS: [(&str, &str); 2] = [
    (
        "sda",
        "950 50 2000 1900 800 200 16000 4000 0 95000 150000 0 0 0 0 0 0",
    ),
    ("sdb", "1 0 8 3 1 0 1 0 0 80000 400 0 0 0 0 0 0"),
];

/// A kernel tree: one CPU, 100.00 s of uptime, the `cpu` line `cpu`, and
/// `disks` in `/proc/diskstats` and `/sys/block/<dev>/stat` alike; removed
/// when the test ends.
fn tree(test: &str, cpu: &str, disks: &[(&str, &str)]) -> Scratch {
    let root = crate::scratch::scratch(&format!("colors-{test}"));
    let write = |rel: &str, text: &str| {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    };
    write("proc/uptime", "100.00 150.00\n");
    write("proc/stat", &format!("cpu  {cpu}\ncpu0 {cpu}\n"));
    fs::create_dir_all(root.join("sys/devices/system/cpu/cpu0")).unwrap();
    let mut diskstats = String::new();
    for (i, (dev, fields)) in disks.iter().enumerate() {
        diskstats += &format!("   8 {:7} {dev} {fields}\n", i * 16);
        let sysfs: String = fields.split(' ').map(|f| format!("{f:>8} ")).collect();
        write(
            &format!("sys/block/{dev}/stat"),
            &format!("{}\n", sysfs.trim_end()),
        );
    }
    write("proc/diskstats", &diskstats);
    root
}

/// The output after the banner line, with colours forced on.
fn run(root: &Path, sgr: Option<&str>, args: &[&str]) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_iostat-rs"));
    cmd.arg("--sysroot")
        .arg(root)
        .args(args)
        .env("S_COLORS", "always")
        .env("LC_ALL", "C")
        .env_remove("S_COLORS_SGR")
        .env_remove("POSIXLY_CORRECT")
        .env_remove("S_TIME_FORMAT");
    if let Some(sgr) = sgr {
        cmd.env("S_COLORS_SGR", sgr);
    }
    let out = cmd.output().expect("run iostat-rs");
    assert!(out.status.success(), "iostat-rs {args:?}: {:?}", out);
    let stdout = String::from_utf8(out.stdout).expect("UTF-8 output");
    let (_banner, body) = stdout.split_once('\n').expect("a banner line");
    body.to_owned()
}

const CPU_HEADER: &str = "avg-cpu:  %user   %nice %system %iowait  %steal   %idle\n";

/// user 9500, nice 0, system 100, idle 350, iowait 50 of 10000 jiffies.
const BUSY_CPU: &str = "9500 0 100 350 50 0 0 0 0 0";

fn busy_cpu_line() -> String {
    // %user 95.00 ≥ 90: extreme; %idle 3.50 ≤ 10: extreme.
    format!(
        "       {}{}{}{}{}{}\n\n",
        x("   95.00"),
        z("    0.00"),
        n("    1.00"),
        n("    0.50"),
        z("    0.00"),
        x("    3.50"),
    )
}

#[test]
fn extended_report() {
    let root = tree("x", BUSY_CPU, &DISKS);
    let sda = [
        name("sda          "),
        n("    9.50"),   // r/s 950/100
        n("     10.00"), // rkB/s 2000/100/2
        n("     0.50"),  // rrqm/s
        x("   5.00"),    // %rrqm 50/1000: XLOW0 extreme
        n("    2.00"),   // r_await 1900/950
        n("     1.05"),  // rareq-sz 2000/950/2
        n("    8.00"),
        n("     80.00"),
        n("     2.00"),
        w("  20.00"), // %wrqm 200/1000: XLOW0 warning
        n("    5.00"),
        n("    10.00"),
        z("    0.00"),
        z("      0.00"),
        z("     0.00"),
        z("   0.00"), // %drqm 0: XLOW0 leaves zero alone
        z("    0.00"),
        z("     0.00"),
        z("    0.00"),
        z("    0.00"),
        n("    1.50"), // aqu-sz 150000/100/1000
        x("  95.00"),  // %util 95000/100/10: XHIGH extreme
    ]
    .concat();
    let sdb = [
        name("sdb          "),
        n("    0.01"),
        n("      0.04"),
        z("     0.00"),
        z("   0.00"), // %rrqm 0/(0+1)
        n("    3.00"),
        n("     4.00"),
        n("    0.01"),
        n("      0.01"), // wkB/s 0.005: not below the limit
        z("     0.00"),
        z("   0.00"),
        z("    0.00"),
        n("     0.50"),
        z("    0.00"),
        z("      0.00"),
        z("     0.00"),
        z("   0.00"),
        z("    0.00"),
        z("     0.00"),
        z("    0.00"),
        z("    0.00"),
        z("    0.00"), // aqu-sz 0.004 prints as zero: zero colour
        w("  80.00"),  // %util 80: XHIGH warning
    ]
    .concat();
    let expected = format!(
        "\n{CPU_HEADER}{}Device            r/s     rkB/s   rrqm/s  %rrqm r_await rareq-sz     w/s     wkB/s   wrqm/s  %wrqm w_await wareq-sz     d/s     dkB/s   drqm/s  %drqm d_await dareq-sz     f/s f_await  aqu-sz  %util\n{sda}\n{sdb}\n\n\n",
        busy_cpu_line()
    );
    assert_eq!(run(&root, None, &["-x"]), expected);
}

#[test]
fn extended_short_report_with_a_group() {
    let root = tree("xs", BUSY_CPU, &DISKS[..1]);
    // tps 1750/100, kB/s 18000/100/2, rqm/s 250/100, await 5900/1750,
    // areq-sz 18000/1750/2, aqu-sz, %util.
    let values = [
        n("    17.50"),
        n("     90.00"),
        n("     2.50"),
        n("    3.37"),
        n("     5.14"),
        n("    1.50"),
        x("  95.00"),
    ]
    .concat();
    let expected = format!(
        "\nDevice             tps      kB/s    rqm/s   await  areq-sz  aqu-sz  %util\n{}{values}\n{}{values}\n\n\n",
        name("sda          "),
        // The group's name carries its leading space inside the colour.
        name(" total       "),
    );
    assert_eq!(
        run(&root, None, &["-d", "-x", "-s", "-g", "total", "sda"]),
        expected
    );
}

#[test]
fn basic_report() {
    let root = tree("basic", BUSY_CPU, &DISKS);
    let sda = [
        name("sda          "),
        n("    17.50"),
        n("        10.00"),
        n("        80.00"),
        z("         0.00"),
        n("       1000"),
        n("       8000"),
        z("          0"),
    ]
    .concat();
    let sdb = [
        name("sdb          "),
        n("     0.02"),
        n("         0.04"),
        n("         0.01"),
        z("         0.00"),
        n("          4"),
        // 1 sector is 0 kB: the integer is 0, so the zero colour.
        z("          0"),
        z("          0"),
    ]
    .concat();
    let expected = format!(
        "\n{CPU_HEADER}{}Device             tps    kB_read/s    kB_wrtn/s    kB_dscd/s    kB_read    kB_wrtn    kB_dscd\n{sda}\n{sdb}\n\n\n",
        busy_cpu_line()
    );
    assert_eq!(run(&root, None, &[]), expected);
}

#[test]
fn pretty_puts_the_coloured_name_last() {
    let root = tree("pretty", BUSY_CPU, &DISKS[..1]);
    let sda = [
        n("    17.50"),
        n("        10.00"),
        n("        80.00"),
        z("         0.00"),
        n("       1000"),
        n("       8000"),
        z("          0"),
        name(" sda"),
    ]
    .concat();
    let expected = format!(
        "\n      tps    kB_read/s    kB_wrtn/s    kB_dscd/s    kB_read    kB_wrtn    kB_dscd Device\n{sda}\n\n\n"
    );
    assert_eq!(run(&root, None, &["-d", "--pretty", "sda"]), expected);
}

#[test]
fn human_units_follow_the_reset() {
    let root = tree("human", BUSY_CPU, &DISKS[..1]);
    let sda = [
        name("sda          "),
        n("    9.50"),
        n("     10.0"), // 20 sectors/s = 10 kB/s, " %8.1f"
        "k".into(),
        n("     0.50"),
        x("   5.0"), // " %5.1f", one decimal: XLOW0 extreme
        "%".into(),
        n("    2.00"),
        n("     1.1"), // 1.05 kB, " %7.1f"
        "k".into(),
        n("    8.00"),
        n("     80.0"),
        "k".into(),
        n("     2.00"),
        w("  20.0"),
        "%".into(),
        n("    5.00"),
        n("    10.0"),
        "k".into(),
        z("    0.00"),
        z("      0.0"),
        "k".into(),
        z("     0.00"),
        z("   0.0"),
        "%".into(),
        z("    0.00"),
        z("     0.0"),
        "k".into(),
        z("    0.00"),
        z("    0.00"),
        n("    1.50"),
        x("  95.0"),
        "%".into(),
    ]
    .concat();
    let expected = format!(
        "\nDevice            r/s     rkB/s   rrqm/s  %rrqm r_await rareq-sz     w/s     wkB/s   wrqm/s  %wrqm w_await wareq-sz     d/s     dkB/s   drqm/s  %drqm d_await dareq-sz     f/s f_await  aqu-sz  %util\n{sda}\n\n\n"
    );
    assert_eq!(run(&root, None, &["-d", "-x", "--human", "sda"]), expected);
}

#[test]
fn cpu_report_ranges() {
    // user 80 %: XHIGH warning; idle 20 %: XLOW warning.
    let root = tree("cpu-warn", "8000 0 0 2000 0 0 0 0 0 0", &DISKS[..1]);
    let expected = format!(
        "\n{CPU_HEADER}       {}{}{}{}{}{}\n\n\n\n",
        w("   80.00"),
        z("    0.00"),
        z("    0.00"),
        z("    0.00"),
        z("    0.00"),
        w("   20.00"),
    );
    assert_eq!(run(&root, None, &["-c"]), expected);

    // idle 0 %: XLOW has no zero exception, so the extreme colour.
    let root = tree("cpu-idle0", "10000 0 0 0 0 0 0 0 0 0", &DISKS[..1]);
    let expected = format!(
        "\n{CPU_HEADER}       {}{}{}{}{}{}\n\n\n\n",
        x("  100.00"),
        z("    0.00"),
        z("    0.00"),
        z("    0.00"),
        z("    0.00"),
        x("    0.00"),
    );
    assert_eq!(run(&root, None, &["-c"]), expected);

    // --human: " %6.1f" then "%" after the reset.
    let root = tree("cpu-human", BUSY_CPU, &DISKS[..1]);
    let expected = format!(
        "\n{CPU_HEADER}       {}%{}%{}%{}%{}%{}%\n\n\n\n",
        x("   95.0"),
        z("    0.0"),
        n("    1.0"),
        n("    0.5"),
        z("    0.0"),
        x("    3.5"),
    );
    assert_eq!(run(&root, None, &["-c", "--human"]), expected);
}

#[test]
fn s_colors_sgr_overrides_and_ignores_bad_entries() {
    // "M=38;5;208;1;2;3;44" is 19 bytes (over sysstat 12.7.9's 18; 12.6.1
    // took 7): ignored, so W's code stays; "X=38;2;255;128;0" (16 bytes, a
    // truecolour red) is taken. "Q=7" is not a key iostat uses; "N=x" has
    // a bad character; both are ignored.
    let sgr = "I=1:N=2:Z=3:W=4:M=38;5;208;1;2;3;44:X=38;2;255;128;0:Q=7:N=x";
    let root = tree("sgr", "8000 0 0 2000 0 0 0 0 0 0", &DISKS[..1]);
    let p = |code: &str, text: &str| format!("\x1b[{code}m{text}{RESET}");
    let sda = [
        p("1", "sda          "),
        p("2", "    17.50"),
        p("2", "        10.00"),
        p("2", "        80.00"),
        p("3", "         0.00"),
        p("2", "       1000"),
        p("2", "       8000"),
        p("3", "          0"),
    ]
    .concat();
    let expected = format!(
        "\n{CPU_HEADER}       {}{}{}{}{}{}\n\nDevice             tps    kB_read/s    kB_wrtn/s    kB_dscd/s    kB_read    kB_wrtn    kB_dscd\n{sda}\n\n\n",
        p("4", "   80.00"),
        p("3", "    0.00"),
        p("3", "    0.00"),
        p("3", "    0.00"),
        p("3", "    0.00"),
        p("4", "   20.00"),
    );
    assert_eq!(run(&root, Some(sgr), &["sda"]), expected);

    // X= sets the extreme colour, truecolour too.
    let root = tree("sgr-x", BUSY_CPU, &DISKS[..1]);
    let out = run(&root, Some("X=38;2;255;128;0"), &["-c"]);
    assert!(
        out.contains(&format!("       {}", p("38;2;255;128;0", "   95.00"))),
        "{out:?}"
    );
}

#[test]
fn colours_stay_off_when_not_asked_for() {
    let root = tree("never", BUSY_CPU, &DISKS[..1]);
    let out = Command::new(env!("CARGO_BIN_EXE_iostat-rs"))
        .arg("--sysroot")
        .arg(&root)
        .args(["-x", "sda"])
        .env("S_COLORS", "never")
        .env("S_COLORS_SGR", "N=1")
        .output()
        .expect("run iostat-rs");
    assert!(out.status.success());
    assert!(!out.stdout.contains(&0x1b), "{:?}", out.stdout);
    // "auto" (and any other value) on a pipe: no colour either.
    let root = tree("auto", BUSY_CPU, &DISKS[..1]);
    let out = Command::new(env!("CARGO_BIN_EXE_iostat-rs"))
        .arg("--sysroot")
        .arg(&root)
        .args(["-x", "sda"])
        .env("S_COLORS", "auto")
        .output()
        .expect("run iostat-rs");
    assert!(out.status.success());
    assert!(!out.stdout.contains(&0x1b), "{:?}", out.stdout);
}

#[test]
fn same_as_debian_iostat_outside_the_percentage_ranges() {
    if let Some(reason) = sysstat_compare::namespace_unavailable() {
        skip::skip(
            "same_as_debian_iostat_outside_the_percentage_ranges",
            &reason,
        );
        return;
    }
    // 12.6.1 knows H and M, current sysstat W/M and X/H: all set to the
    // non-zero colour, a percentage is coloured like any other value, except
    // a %idle that prints as zero (XLOW: extreme) which these trees avoid.
    let sgr = "H=34;1:M=34;1:W=34;1:X=34;1";
    let cases: [&[&str]; 10] = [
        &["-x"],
        &[],
        &["-d", "-s"],
        &["-d", "--pretty", "sda"],
        &["-d", "-x", "-s", "-g", "total", "sda", "sdb"],
        &["-x", "--human"],
        &["-c", "--human"],
        &["-d", "--human", "--dec=0"],
        &["-x", "--dec=1"],
        &["-x", "--pretty"],
    ];
    for (i, args) in cases.iter().enumerate() {
        let root = tree(&format!("debian-{i}"), BUSY_CPU, &DISKS);
        let env = [("S_COLORS", "always"), ("S_COLORS_SGR", sgr)];
        let sysstat = sysstat_compare::sysstat_on_tree_with_env(&root, &env, args)
            .unwrap_or_else(|e| panic!("sysstat {args:?}: {e}"));
        assert_eq!(
            sysstat.code,
            Some(0),
            "sysstat {args:?}: {}",
            sysstat.stderr
        );
        let (_banner, expected) = sysstat.stdout.split_once('\n').expect("a banner line");
        assert!(
            expected.contains('\x1b'),
            "sysstat {args:?} printed no colour"
        );
        assert_eq!(run(&root, Some(sgr), args), expected, "iostat {args:?}");
    }
}
