//! Names that try to take over the terminal or break a document: device
//! names from `/proc/diskstats` and `/sys/block`, PMU and event names, a
//! memdev serial number, a recorded uname and a recorded machine serial
//! number holding `ESC ] 0;… BEL` (retitles a terminal), `ESC [2J` (clears
//! it), C1 and bidirectional controls, newlines (forge a row), quotes,
//! backslashes and separators.
//!
//! Every format of every tool is read back with a real parser: text must
//! hold no control character but newline and tab and show the name
//! escaped; JSON and NDJSON are parsed with serde_json and must give the
//! name back exactly; CSV is read with a strict RFC 4180 reader (same field
//! count on every record, the name shown as in text); Prometheus text is
//! checked line by line against the exposition format, label values
//! unescaped and compared with the name shown as in text. No format may
//! carry a control character (but newline, and tab in text) or a
//! bidirectional override raw: a terminal would act on it.

use crate::cxlstat_support;

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::{Command, Output};

/// A name `/proc/diskstats` can carry (no white space): a title change, a
/// screen clear, a C1 CSI, a right-to-left override, a quote, a backslash.
const DISK: &str = "ev\x1b]0;pwned\x07il\"\\x\x1b[2J\u{9b}2J\u{202e}";
/// A `/sys/block` directory name can hold a newline and a comma too.
const SYS_ONLY: &str = "new\nline,\"q\"";

fn run<A: AsRef<std::ffi::OsStr> + std::fmt::Debug>(
    program: &str,
    args: &[A],
    envs: &[(&str, &str)],
) -> Output {
    let out = Command::new(program)
        .args(args)
        .envs(envs.iter().copied())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{program} {args:?}: {err}");
    assert!(out.status.success(), "{program} {args:?}: {err}");
    out
}

/// Text for people: only newlines and tabs among the control characters
/// (C0, DEL, C1), no bidirectional overrides, and the names escaped.
fn check_text(what: &str, out: &[u8], names: &[&str]) -> String {
    let text = String::from_utf8(out.to_vec()).unwrap_or_else(|e| panic!("{what}: {e}"));
    // Colours are the tool's own escapes: drop the SGR sequences it writes.
    let plain = strip_sgr(&text);
    for c in plain.chars() {
        let allowed = c == '\n' || c == '\t' || !(c.is_control() || c == '\u{202e}');
        assert!(allowed, "{what}: raw {c:?} in\n{plain}");
    }
    for name in names {
        let shown = escaped(name);
        assert!(plain.contains(&shown), "{what}: {shown:?} not in\n{plain}");
    }
    plain
}

/// The escaped form the documentation promises (`\xNN` for C0 and DEL,
/// `\u{NN}` above, `\n`, `\t`, `\r`; a backslash as it is): written out here
/// independently.
fn escaped(name: &str) -> String {
    let mut s = String::new();
    for c in name.chars() {
        match c {
            '\n' => s.push_str("\\n"),
            '\t' => s.push_str("\\t"),
            '\r' => s.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                s.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if (0x80..0xa0).contains(&(c as u32)) || c == '\u{202e}' => {
                s.push_str(&format!("\\u{{{:x}}}", c as u32))
            }
            c => s.push(c),
        }
    }
    s
}

fn strip_sgr(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("\x1b[") {
        let tail = &rest[i + 2..];
        let end = tail.find(|c: char| !(c.is_ascii_digit() || c == ';'));
        match end {
            Some(e) if tail[e..].starts_with('m') => {
                out.push_str(&rest[..i]);
                rest = &tail[e + 1..];
            }
            _ => {
                out.push_str(&rest[..i + 2]);
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Every string value anywhere in a JSON document.
fn json_strings(v: &serde_json::Value, into: &mut BTreeSet<String>) {
    match v {
        serde_json::Value::String(s) => {
            into.insert(s.clone());
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| json_strings(x, into)),
        serde_json::Value::Object(o) => o.values().for_each(|x| json_strings(x, into)),
        _ => {}
    }
}

/// No raw control character (C0 but newline and tab, which sysstat's JSON
/// indents with, DEL, C1) or right-to-left override anywhere in a machine
/// format's output.
fn check_no_raw_controls(what: &str, out: &[u8]) {
    let text = std::str::from_utf8(out).unwrap_or_else(|e| panic!("{what}: {e}"));
    if let Some(c) = text
        .chars()
        .find(|&c| c != '\n' && c != '\t' && (c.is_control() || c == '\u{202e}'))
    {
        panic!("{what}: raw {c:?} in\n{text}");
    }
}

fn check_json(what: &str, out: &[u8], names: &[&str]) {
    check_no_raw_controls(what, out);
    let doc: serde_json::Value =
        serde_json::from_slice(out).unwrap_or_else(|e| panic!("{what}: invalid JSON: {e}"));
    let mut strings = BTreeSet::new();
    json_strings(&doc, &mut strings);
    for name in names {
        assert!(
            strings.contains(*name),
            "{what}: {name:?} not in {strings:?}"
        );
    }
}

fn check_ndjson(what: &str, out: &[u8], names: &[&str]) {
    check_no_raw_controls(what, out);
    let text = std::str::from_utf8(out).unwrap();
    let mut strings = BTreeSet::new();
    for line in text.lines() {
        let doc: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("{what}: invalid NDJSON line {line:?}: {e}"));
        json_strings(&doc, &mut strings);
    }
    for name in names {
        assert!(
            strings.contains(*name),
            "{what}: {name:?} not in {strings:?}"
        );
    }
}

/// A strict RFC 4180 reader: quoted fields may hold anything with `""` for
/// a quote; unquoted fields may hold no quote, CR or LF; records end in LF.
fn parse_csv(what: &str, text: &str) -> Vec<Vec<String>> {
    let mut records = Vec::new();
    let mut record = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        let mut field = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    Some('"') => break,
                    Some(c) => field.push(c),
                    None => panic!("{what}: unterminated quoted field"),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' || c == '\n' {
                    break;
                }
                assert!(c != '"' && c != '\r', "{what}: bare {c:?} in a field");
                field.push(c);
                chars.next();
            }
        }
        record.push(field);
        match chars.next() {
            Some(',') => continue,
            Some('\n') => {
                records.push(std::mem::take(&mut record));
                if chars.peek().is_none() {
                    break;
                }
            }
            None => panic!("{what}: last record without a line end"),
            Some(c) => panic!("{what}: {c:?} after a quoted field"),
        }
    }
    let width = records[0].len();
    for r in &records {
        assert_eq!(r.len(), width, "{what}: record {r:?}");
    }
    records
}

fn check_csv(what: &str, out: &[u8], names: &[&str]) {
    check_no_raw_controls(what, out);
    let records = parse_csv(what, std::str::from_utf8(out).unwrap());
    for name in names {
        let shown = escaped(name);
        assert!(
            records.iter().any(|r| r.contains(&shown)),
            "{what}: {shown:?} not a field of {records:?}"
        );
    }
}

fn metric_name_ok(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// Checks the Prometheus text exposition format (0.0.4) line by line and
/// returns every label value, unescaped.
fn parse_prometheus(what: &str, text: &str) -> BTreeSet<String> {
    let mut values = BTreeSet::new();
    for line in text.lines() {
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# ") {
            let mut words = rest.splitn(3, ' ');
            let kind = words.next().unwrap();
            let name = words.next().unwrap_or("");
            assert!(metric_name_ok(name), "{what}: {line:?}");
            if kind == "TYPE" {
                let t = words.next().unwrap_or("");
                assert!(
                    ["counter", "gauge", "untyped"].contains(&t),
                    "{what}: {line:?}"
                );
            } else {
                assert_eq!(kind, "HELP", "{what}: {line:?}");
            }
            continue;
        }
        let name_end = line
            .find(['{', ' '])
            .unwrap_or_else(|| panic!("{what}: {line:?}"));
        assert!(metric_name_ok(&line[..name_end]), "{what}: {line:?}");
        let mut rest = &line[name_end..];
        if let Some(labels) = rest.strip_prefix('{') {
            let mut chars = labels.char_indices();
            loop {
                let (start, _) = chars.next().unwrap_or_else(|| panic!("{what}: {line:?}"));
                let eq = labels[start..]
                    .find("=\"")
                    .unwrap_or_else(|| panic!("{what}: {line:?}"));
                let label = &labels[start..start + eq];
                assert!(
                    metric_name_ok(label) && !label.contains(':'),
                    "{what}: {line:?}"
                );
                for _ in 0..eq + 1 {
                    chars.next();
                }
                let mut value = String::new();
                loop {
                    match chars.next().map(|(_, c)| c) {
                        Some('\\') => match chars.next().map(|(_, c)| c) {
                            Some('\\') => value.push('\\'),
                            Some('"') => value.push('"'),
                            Some('n') => value.push('\n'),
                            other => panic!("{what}: bad escape {other:?} in {line:?}"),
                        },
                        Some('"') => break,
                        Some(c) => value.push(c),
                        None => panic!("{what}: unterminated label value in {line:?}"),
                    }
                }
                values.insert(value);
                match chars.next() {
                    Some((_, ',')) => continue,
                    Some((i, '}')) => {
                        rest = &labels[i + 1..];
                        break;
                    }
                    other => panic!("{what}: {other:?} after a label in {line:?}"),
                }
            }
        }
        let mut fields = rest.trim_start_matches(' ').split(' ');
        let value = fields.next().unwrap_or("");
        assert!(
            value.parse::<f64>().is_ok() || ["NaN", "+Inf", "-Inf"].contains(&value),
            "{what}: value {value:?} in {line:?}"
        );
        if let Some(ts) = fields.next() {
            assert!(
                ts.parse::<i64>().is_ok(),
                "{what}: timestamp {ts:?} in {line:?}"
            );
        }
        assert!(fields.next().is_none(), "{what}: {line:?}");
    }
    values
}

/// Checks an exposition: no raw control characters, every line parses,
/// and each of `names` (UTF-8 names as they are) is a label value, shown
/// as [`label_shown`] says.
fn check_prometheus(what: &str, out: &[u8], names: &[&str]) {
    let shown: Vec<String> = names.iter().map(|name| label_shown(name)).collect();
    check_exposition_labels(what, out, &shown);
}

/// A label value as an exposition shows name `name`: escaped as text
/// shows it, after a backslash of the name's own is made an escape too
/// (`\x5c`), so that no name's label reads as another's escaped one.
fn label_shown(name: &str) -> String {
    escaped(&name.replace('\\', "\\x5c"))
}

/// Checks an exposition as [`check_prometheus`] does, for label values
/// `shown` as they read once parsed.
fn check_exposition_labels(what: &str, out: &[u8], shown: &[String]) {
    check_no_raw_controls(what, out);
    let values = parse_prometheus(what, std::str::from_utf8(out).unwrap());
    for shown in shown {
        assert!(
            values.contains(shown),
            "{what}: {shown:?} not in {values:?}"
        );
    }
}

/// Runs one tool in every format and checks each.
fn every_format(program: &str, base: &[&str], names: &[&str], envs: &[(&str, &str)]) {
    let with = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        run(program, &args, envs).stdout
    };
    let what = |f: &str| format!("{program} {base:?} {f}");
    check_text(&what("text"), &with(&[]), names);
    check_json(&what("json"), &with(&["-o", "json"]), names);
    check_ndjson(&what("ndjson"), &with(&["-o", "ndjson"]), names);
    check_csv(&what("csv"), &with(&["-o", "csv"]), names);
    check_prometheus(&what("prometheus"), &with(&["-o", "prometheus"]), names);
}

const STAT_LINE: &str = "100 0 800 50 10 0 80 5 0 60 55 0 0 0 0 0 0";

/// A --sysroot tree whose disks are named `vda`, [`DISK`] and [`SYS_ONLY`].
fn iostat_tree(root: &Path) {
    fs::create_dir_all(root.join("proc")).unwrap();
    fs::write(root.join("proc/uptime"), "1000.00 1900.00\n").unwrap();
    fs::write(
        root.join("proc/stat"),
        "cpu  100 0 100 1800 0 0 0 0 0 0\ncpu0 100 0 100 1800 0 0 0 0 0 0\n",
    )
    .unwrap();
    fs::write(
        root.join("proc/diskstats"),
        format!(" 253 0 vda {STAT_LINE}\n 253 1 {DISK} {STAT_LINE}\n"),
    )
    .unwrap();
    for name in ["vda", DISK, SYS_ONLY] {
        let dir = root.join("sys/block").join(name);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("stat"), format!("{STAT_LINE}\n")).unwrap();
    }
}

fn iostat_every_format(base: &[&str], names: &[&str]) {
    let bin = env!("CARGO_BIN_EXE_iostat-rs");
    let with = |extra: &[&str], envs: &[(&str, &str)]| {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        run(bin, &args, envs).stdout
    };
    let what = |f: &str| format!("iostat-rs {base:?} {f}");
    for extra in [&[][..], &["-x"], &["-x", "-s"], &["--pretty", "-x"]] {
        check_text(&what(&format!("{extra:?}")), &with(extra, &[]), names);
    }
    // Every line of /proc/diskstats, where only DISK can be.
    check_text(&what("-p ALL"), &with(&["-p", "ALL"], &[]), &[DISK]);
    check_text(
        &what("colours"),
        &with(&["-x"], &[("S_COLORS", "always")]),
        names,
    );
    for extra in [
        &["-o", "JSON"][..],
        &["-o", "JSON", "-x"],
        &["-o", "JSON", "-x", "-s"],
    ] {
        check_json(&what(&format!("{extra:?}")), &with(extra, &[]), names);
    }
    check_csv(&what("csv"), &with(&["-o", "csv"], &[]), names);
    check_ndjson(&what("ndjson"), &with(&["-o", "ndjson"], &[]), names);
    // The exposition reads /proc/diskstats only, as node_exporter does: a
    // device found only in /sys/block has no node_disk_* series there.
    let in_diskstats: Vec<&str> = names.iter().copied().filter(|n| *n != SYS_ONLY).collect();
    check_prometheus(
        &what("prometheus"),
        &with(&["-o", "prometheus"], &[]),
        &in_diskstats,
    );
}

#[test]
fn iostat_rs_device_names_are_escaped_or_quoted_in_every_format() {
    let dir = cxlstat_support::scratch("hostile-iostat");
    iostat_tree(&dir);
    let root = dir.to_str().unwrap();
    iostat_every_format(&["--sysroot", root], &[DISK, SYS_ONLY]);
    // Named on the command line, the device is read from /sys/block.
    iostat_every_format(&["--sysroot", root, DISK, SYS_ONLY], &[DISK, SYS_ONLY]);
}

/// Device names that are not UTF-8 (a `--sysroot` tree, an alternate `-f`
/// directory, a recording) are reported as sysstat reports them, not
/// dropped: each such byte shown as `\xNN` in every format, two names that
/// differ only in those bytes as two devices, and a device found only in
/// `/sys/block` read from its own `stat` file.
#[test]
fn iostat_rs_reports_device_names_that_are_not_utf8() {
    let dir = cxlstat_support::scratch("non-utf8-iostat");
    iostat_tree(&dir);
    let raw = |name: &[u8]| std::ffi::OsStr::from_bytes(name).to_owned();
    fs::write(
        dir.join("proc/diskstats"),
        [
            format!(" 253 0 vda {STAT_LINE}\n").as_bytes(),
            format!(" 253 1 x\u{ff} {STAT_LINE}\n").as_bytes(),
            b" 253 2 x\xff ",
            format!("{STAT_LINE}\n").as_bytes(),
            b" 253 3 x\xfe ",
            format!("{STAT_LINE}\n").as_bytes(),
        ]
        .concat(),
    )
    .unwrap();
    for name in [&b"x\xff"[..], b"x\xfe", "x\u{ff}".as_bytes(), b"y\xe2\x9c"] {
        let dev = dir.join("sys/block").join(raw(name));
        fs::create_dir_all(&dev).unwrap();
        fs::write(dev.join("stat"), format!("{STAT_LINE}\n")).unwrap();
    }
    let root = dir.to_str().unwrap();
    let bin = env!("CARGO_BIN_EXE_iostat-rs");
    let shown = ["x\\xff", "x\\xfe", "x\u{ff}"];
    let sys_only = "y\\xe2\\x9c";
    for extra in [&["-x"][..], &["-d"], &["-x", "-p", "ALL"]] {
        let args = [&["--sysroot", root][..], extra].concat();
        let text = check_text(&format!("{extra:?}"), &run(bin, &args, &[]).stdout, &[]);
        let rows: Vec<&str> = text
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        for name in shown {
            assert_eq!(
                rows.iter().filter(|r| **r == name).count(),
                1,
                "{name} in\n{text}"
            );
        }
        let sys_only_rows = rows.iter().filter(|r| **r == sys_only).count();
        assert_eq!(
            sys_only_rows,
            usize::from(!extra.contains(&"ALL")),
            "{text}"
        );
    }
    let all = [&shown[..], &[sys_only]].concat();
    let with = |extra: &[&str]| run(bin, &[&["--sysroot", root][..], extra].concat(), &[]).stdout;
    check_json("json", &with(&["-o", "JSON", "-x"]), &all);
    check_ndjson("ndjson", &with(&["-o", "ndjson"]), &all);
    check_csv("csv", &with(&["-o", "csv"]), &all);
    // Bytes that are not UTF-8 show as \xNN, and are no backslash of the
    // name's own.
    let labels = shown.map(String::from);
    check_exposition_labels("prometheus", &with(&["-o", "prometheus"]), &labels);
}

/// A device and a path that are not UTF-8 on iostat-rs's command line
/// are taken with their bytes, as sysstat takes them: the device is
/// reported (as `\xNN`), the recording goes to the file of that name, and
/// its replay names the device the same way. Every such argument used to
/// be refused ("argument 2 is not valid UTF-8").
#[test]
fn iostat_rs_takes_device_names_and_paths_that_are_not_utf8() {
    let dir = cxlstat_support::scratch("non-utf8-arguments");
    iostat_tree(&dir);
    let raw = |name: &[u8]| std::ffi::OsStr::from_bytes(name).to_owned();
    let dev = dir.join("sys/block").join(raw(b"x\xff"));
    fs::create_dir_all(&dev).unwrap();
    fs::write(dev.join("stat"), format!("{STAT_LINE}\n")).unwrap();
    let recording = dir.join(raw(b"run\xfe.rec"));
    let iostat = |args: &[&std::ffi::OsStr]| {
        String::from_utf8(run(env!("CARGO_BIN_EXE_iostat-rs"), args, &[]).stdout).unwrap()
    };
    let device = raw(b"x\xff");
    let live = iostat(&[
        "--sysroot".as_ref(),
        dir.as_os_str(),
        "-d".as_ref(),
        "--record".as_ref(),
        recording.as_os_str(),
        &device,
    ]);
    let rows = |text: &str| -> Vec<String> {
        text.lines()
            .skip(3)
            .filter_map(|l| l.split_whitespace().next())
            .map(String::from)
            .collect()
    };
    assert_eq!(rows(&live), ["x\\xff"], "{live}");
    assert!(fs::metadata(&recording).unwrap().len() > 0);
    let replayed = iostat(&[
        "--replay".as_ref(),
        recording.as_os_str(),
        "-d".as_ref(),
        &device,
    ]);
    assert_eq!(rows(&replayed), ["x\\xff"], "{replayed}");
    // An alternate directory named relative to the current one, its name
    // not UTF-8: joined to it as the bytes given.
    let alt = dir.join(raw(b"alt\xff"));
    fs::create_dir_all(alt.join("block/vdb")).unwrap();
    fs::write(alt.join("block/vdb/stat"), format!("{STAT_LINE}\n")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_iostat-rs"))
        .current_dir(&dir)
        .args(["-d", "-f"])
        .arg(raw(b"alt\xff"))
        .arg("vdb")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(rows(&text), ["vdb"], "{text}");
}

/// The uname of a recording and the device names in its files can be any
/// text; a file that is not UTF-8 is recorded as hex and its bytes reach the
/// parsers as they are.
#[test]
fn iostat_rs_replays_hostile_unames_and_names() {
    let dir = cxlstat_support::scratch("hostile-replay");
    iostat_tree(&dir);
    let rec = dir.join("r.rec");
    let rec_s = rec.to_str().unwrap();
    run(
        env!("CARGO_BIN_EXE_iostat-rs"),
        &["--sysroot", dir.to_str().unwrap(), "--record", rec_s, "-x"],
        &[],
    );
    let text = fs::read_to_string(&rec).unwrap();
    let mut lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let node = "host\x1b]0;owned\x07\n\"q\"\\";
    let release = "6.1\x1b[2J\u{9b}";
    lines[0]["uname"]["nodename"] = node.into();
    lines[0]["uname"]["release"] = release.into();
    // A diskstats line whose name is not UTF-8 (0xff) next to the others.
    let diskstats = format!(" 253 0 vda {STAT_LINE}\n 253 1 {DISK} {STAT_LINE}\n 253 2 x");
    let mut hex: String = diskstats.bytes().map(|b| format!("{b:02x}")).collect();
    hex.push_str("ff");
    hex.extend(
        format!(" {STAT_LINE}\n")
            .bytes()
            .map(|b| format!("{b:02x}")),
    );
    let entries = lines[1]["entries"].as_object_mut().unwrap();
    entries.insert(
        "read /proc/diskstats".into(),
        serde_json::json!({ "hex": hex }),
    );
    let out: String = lines.iter().map(|l| format!("{l}\n")).collect();
    fs::write(&rec, out).unwrap();

    let bin = env!("CARGO_BIN_EXE_iostat-rs");
    let banner = run(bin, &["--replay", rec_s, "-x"], &[]).stdout;
    check_text("replay text", &banner, &[node, release, DISK]);
    let json = run(bin, &["--replay", rec_s, "-x", "-o", "JSON"], &[]).stdout;
    check_json("replay JSON", &json, &[node, release, DISK]);
    for format in ["csv", "ndjson", "prometheus"] {
        let out = run(bin, &["--replay", rec_s, "-x", "-o", format], &[]).stdout;
        match format {
            "csv" => check_csv(format, &out, &[DISK]),
            "ndjson" => check_ndjson(format, &out, &[DISK]),
            _ => check_prometheus(format, &out, &[DISK]),
        }
    }
}

/// vcpustat names no devices; what it prints from a recording with a
/// hostile uname must still be clean in every format.
#[test]
fn vcpustat_replays_a_hostile_uname_cleanly() {
    let dir = cxlstat_support::scratch("hostile-vcpustat");
    let rec = dir.join("v.rec");
    let rec_s = rec.to_str().unwrap();
    let seed = format!(
        "{}/tests/fixtures/vcpustat/seed",
        env!("CARGO_MANIFEST_DIR")
    );
    run(
        env!("CARGO_BIN_EXE_vcpustat"),
        &["--sysroot", &seed, "--record", rec_s, "-r"],
        &[],
    );
    let text = fs::read_to_string(&rec).unwrap();
    let mut lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    lines[0]["uname"]["nodename"] = "n\x1b]0;x\x07\n\"".into();
    let out: String = lines.iter().map(|l| format!("{l}\n")).collect();
    fs::write(&rec, out).unwrap();
    every_format(
        env!("CARGO_BIN_EXE_vcpustat"),
        &["--replay", rec_s, "-r"],
        &[],
        &[],
    );
}

/// A pseries --sysroot for `trace record` whose lparcfg names `serial`.
fn dtl_tree(root: &Path, serial: &str) {
    fs::create_dir_all(root.join("proc/powerpc")).unwrap();
    fs::create_dir_all(root.join("sys/kernel/debug/powerpc/dtl")).unwrap();
    fs::write(
        root.join("proc/powerpc/lparcfg"),
        format!("serial_number={serial}\npartition_id=3\n"),
    )
    .unwrap();
    fs::write(
        root.join("proc/cpuinfo"),
        "processor\t: 0\ntimebase\t: 512000000\n",
    )
    .unwrap();
    fs::write(root.join("sys/kernel/debug/powerpc/dtl/cpu-0"), "").unwrap();
}

#[test]
fn trace_report_escapes_recorded_serial_numbers() {
    let dir = cxlstat_support::scratch("hostile-serial");
    let serials = ["IBM,02\x1b]0;owned\x07", "IBM,03\x1b[2J\\"];
    let mut files = Vec::new();
    for (i, serial) in serials.iter().enumerate() {
        let root = dir.join(format!("lpar{i}"));
        dtl_tree(&root, serial);
        let file = dir.join(format!("lpar{i}.dtl"));
        run(
            env!("CARGO_BIN_EXE_vcpustat"),
            &[
                "trace",
                "record",
                "--sysroot",
                root.to_str().unwrap(),
                "--duration",
                "0.05",
                "-w",
                file.to_str().unwrap(),
            ],
            &[],
        );
        files.push(file.to_str().unwrap().to_string());
    }
    let out = Command::new(env!("CARGO_BIN_EXE_vcpustat"))
        .args(["trace", "report", &files[0], &files[1]])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = check_text("trace report error", &out.stderr, &serials);
    assert!(err.contains("differs"), "{err}");
}

/// PMU, event and memdev names that a fixture tree can hold.
const PMU: &str = "cxl_pmu_mem0.0\x1b]0;owned\x07\n\"q\",\\";
const EVENT: &str = "ev\x1b[2J\u{9b}\n\"il\"\\";
const SERIAL: &str = "0x1\x1b]0;x\x07\"\\";

/// A software-PMU tree whose PMU, event and memdev serial are hostile.
fn cxl_tree(root: &Path) {
    cxlstat_support::software_tree(root, &[(PMU, 0)]);
    let real = root.join("sys/devices/virtual").join(PMU);
    fs::write(real.join("events").join(EVENT), "config=0x0\n").unwrap();
    let bus_name = PMU.strip_prefix("cxl_").unwrap();
    let pci = root.join("sys/devices/pci0000:34/0000:35:00.0");
    fs::create_dir_all(pci.join(bus_name)).unwrap();
    fs::create_dir_all(pci.join("mem0")).unwrap();
    let cxl_bus = root.join("sys/bus/cxl/devices");
    fs::create_dir_all(&cxl_bus).unwrap();
    symlink(
        format!("../../../devices/pci0000:34/0000:35:00.0/{bus_name}"),
        cxl_bus.join(bus_name),
    )
    .unwrap();
    symlink(
        "../../../devices/pci0000:34/0000:35:00.0/mem0",
        cxl_bus.join("mem0"),
    )
    .unwrap();
    fs::write(pci.join("mem0/serial"), format!("{SERIAL}\n")).unwrap();
    assert!(
        Path::new(std::ffi::OsStr::from_bytes(PMU.as_bytes()))
            .components()
            .count()
            == 1
    );
}

#[test]
fn cxlstat_listings_escape_pmu_event_and_serial_names() {
    let dir = cxlstat_support::scratch("hostile-cxl-list");
    cxl_tree(&dir);
    let root = dir.to_str().unwrap();
    let bin = env!("CARGO_BIN_EXE_cxlstat");
    let list = run(bin, &["--sysroot", root, "--list"], &[]).stdout;
    check_text("--list", &list, &[PMU, SERIAL]);
    let events = run(bin, &["--sysroot", root, "--list-events"], &[]).stdout;
    check_text("--list-events", &events, &[PMU, EVENT]);
    let dry = run(
        bin,
        &["--sysroot", root, "--dry-run", "-e", "cpu_clock"],
        &[],
    )
    .stdout;
    check_text("--dry-run", &dry, &[PMU]);
}

/// A serial number file holds bytes, not always UTF-8 text: each byte that
/// is not UTF-8 is shown as `\xNN`, and a character that is UTF-8 as
/// itself, even one of the block that carries such bytes in names (here
/// U+10FF41, whose four bytes are shown, not the `\x41` it carries).
#[test]
fn cxlstat_lists_a_serial_number_that_is_not_utf8_as_its_bytes() {
    let dir = cxlstat_support::scratch("hostile-cxl-serial-bytes");
    cxl_tree(&dir);
    let serial = dir.join("sys/devices/pci0000:34/0000:35:00.0/mem0/serial");
    fs::write(&serial, b"0x\xff\xf4\x8f\xbd\x81\n").unwrap();
    let root = dir.to_str().unwrap();
    let list = run(
        env!("CARGO_BIN_EXE_cxlstat"),
        &["--sysroot", root, "--list"],
        &[],
    )
    .stdout;
    let list = String::from_utf8(list).unwrap();
    assert!(list.contains(r" 0x\xff\xf4\x8f\xbd\x81 "), "{list}");
}

/// Errors name PMUs, events and paths from sysfs: one line on stderr, with
/// the names' control characters escaped.
#[test]
fn cxlstat_errors_escape_the_names_they_quote() {
    let dir = cxlstat_support::scratch("hostile-cxl-errors");
    cxl_tree(&dir);
    let root = dir.to_str().unwrap();
    let bin = env!("CARGO_BIN_EXE_cxlstat");
    for args in [
        vec!["--sysroot", root, "-e", "no_such_event"],
        vec!["--sysroot", root, "-e", &format!("{PMU}/nope=1/")],
    ] {
        let out = Command::new(bin).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            !err.trim_end().chars().any(char::is_control),
            "{args:?}: {err:?}"
        );
    }
}

#[test]
fn cxlstat_counts_show_hostile_names_safely_in_every_format() {
    if !cxlstat_support::perf_usable("cxlstat_counts_show_hostile_names_safely_in_every_format") {
        return;
    }
    let dir = cxlstat_support::scratch("hostile-cxl-count");
    cxl_tree(&dir);
    let root = dir.to_str().unwrap();
    let bin = env!("CARGO_BIN_EXE_cxlstat");
    let base = ["--sysroot", root, "-e", "cpu_clock", "0.05", "1"];
    every_format(bin, &base, &[PMU], &[]);
    let perf = run(
        bin,
        &["--sysroot", root, "-e", "cpu_clock", "-x", ",", "0.05", "1"],
        &[],
    );
    // perf's layout: one line per row of 7 fields after the time, control
    // characters escaped and the separator in the name as \x2c, so that
    // the name adds no field.
    let text = check_text("-x ,", &perf.stdout, &[]);
    let shown = escaped(PMU).replace(',', "\\x2c");
    assert!(text.contains(&shown), "{shown:?} not in\n{text}");
    assert_eq!(text.lines().count(), 1, "{text}");
    assert_eq!(text.trim_end().split(',').count(), 8, "{text}");
}

/// The warning that a recording was cut names the file: escaped, like every
/// other message that quotes a name (a file name can hold a terminal's
/// escape sequence as well as a device name can).
#[test]
fn warnings_about_a_cut_recording_escape_its_file_name() {
    let dir = cxlstat_support::scratch("hostile-cut");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/charts");
    let name = "r\x1b]0;owned\x07\u{9b}x";
    for (fixture, program, args) in [
        (
            "iostat.rec",
            env!("CARGO_BIN_EXE_iostat-rs"),
            &["--replay", "FILE", "-x", "1"][..],
        ),
        (
            "lpar1.dtl",
            env!("CARGO_BIN_EXE_vcpustat"),
            &["trace", "report", "--table", "latency", "FILE"],
        ),
    ] {
        let bytes = fs::read(fixtures.join(fixture)).unwrap();
        let file = dir.join(format!("{name}.{fixture}"));
        // The last ten bytes lost, as by a run killed while writing.
        fs::write(&file, &bytes[..bytes.len() - 10]).unwrap();
        let args: Vec<&str> = args
            .iter()
            .map(|&a| {
                if a == "FILE" {
                    file.to_str().unwrap()
                } else {
                    a
                }
            })
            .collect();
        let out = Command::new(program).args(&args).output().unwrap();
        assert!(out.status.success(), "{fixture}: {out:?}");
        let err = check_text(fixture, &out.stderr, &[name]);
        assert!(err.contains("cut"), "{fixture}: {err}");
    }
}

/// `-V` shows the environment variables iostat reads, escaped as names
/// are: an escape sequence in `S_TIME_FORMAT` retitled the terminal.
#[test]
fn version_shows_environment_values_escaped() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_iostat-rs"))
        .arg("-V")
        .env("S_TIME_FORMAT", "\x1b]0;pwn\x07")
        .env("S_COLORS", "never\u{202e}")
        .env_remove("POSIXLY_CORRECT")
        .env_remove("S_COLORS_SGR")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("S_COLORS=never\\u{202e}\nS_TIME_FORMAT=\\x1b]0;pwn\\x07\n"),
        "{text}"
    );
}
