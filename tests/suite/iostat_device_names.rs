//! Device names side by side with Debian's iostat (sysstat 12.6.1), on a
//! tree laid out as a real machine's: block nodes in `/dev` (sysstat takes
//! a device's number from them), `/sys/dev/block` links, a cciss disk whose
//! kernel name holds a `/` (`cciss!c0d0` in sysfs), and udev's
//! `/dev/disk/by-label` links, whose names hold udev's own escapes
//! (`EFI\x20System\x20Partition`), characters of more than one byte and
//! one name longer than the 127 bytes sysstat 12.6.1 shows (12.7.9 shows
//! 255, all of it).
//!
//! The text reports must be byte for byte sysstat's (dates aside): the
//! backslashes of udev's names are printed as they are, and names are cut
//! in bytes. In `-o JSON` sysstat writes those backslashes raw, which is
//! not JSON; iostat-rs's document must parse and hold the names exactly.
//!
//! The sysstat comparison needs root and a private mount namespace; it
//! skips with the reason otherwise, unless CI=true.

use crate::skip;
use crate::sysstat_compare::{Run, namespace_unavailable, normalise, pinned, sysstat_on_tree};

use std::ffi::CString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

/// udev's name for a label with spaces: the backslashes are in the name.
const EFI: &str = r"EFI\x20System\x20Partition";
/// A label of 121 + 20 bytes; sysstat 12.6.1 shows its first 127, 121 + 3
/// "é", and 12.7.9 all of it (it cuts at 255).
fn long_label() -> String {
    format!("{}{}", "L".repeat(121), "é".repeat(10))
}

const COUNTERS: &str = "100 0 800 50 10 0 80 5 0 60 55 0 0 0 0 0 0";

/// (name, parent disk, major, minor)
const DEVICES: &[(&str, Option<&str>, u32, u32)] = &[
    ("vda", None, 253, 0),
    ("sda", None, 8, 0),
    ("sda1", Some("sda"), 8, 1),
    ("sdb", None, 8, 16),
    ("cciss/c0d0", None, 104, 0),
    ("cciss/c0d0p1", Some("cciss/c0d0"), 104, 1),
];

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn block_node(path: &Path, major: u32, minor: u32) {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid C string; mknod only creates the node.
    let rc = unsafe {
        libc::mknod(
            c.as_ptr(),
            libc::S_IFBLK | 0o600,
            libc::makedev(major, minor),
        )
    };
    assert_eq!(
        rc,
        0,
        "mknod {}: {}",
        path.display(),
        std::io::Error::last_os_error()
    );
}

/// The tree, under `name`; with block nodes in `/dev` when `nodes` (which
/// takes root).
fn tree(name: &str, nodes: bool) -> PathBuf {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("device_names_{name}"));
    let _ = fs::remove_dir_all(&root);
    write(&root, "proc/uptime", "1000.00 1900.00\n");
    write(
        &root,
        "proc/stat",
        "cpu  100 0 100 1800 0 0 0 0 0 0\ncpu0 50 0 50 900 0 0 0 0 0 0\ncpu1 50 0 50 900 0 0 0 0 0 0\n",
    );
    for cpu in ["cpu0", "cpu1"] {
        fs::create_dir_all(root.join("sys/devices/system/cpu").join(cpu)).unwrap();
    }
    let mut diskstats = String::new();
    fs::create_dir_all(root.join("sys/dev/block")).unwrap();
    fs::create_dir_all(root.join("dev/disk/by-label")).unwrap();
    for &(name, parent, major, minor) in DEVICES {
        diskstats.push_str(&format!("{major:4} {minor:7} {name} {COUNTERS}\n"));
        // sysfs spells the kernel's `/` in a name `!`.
        let entry = |name: &str| name.replace('/', "!");
        let sys = match parent {
            Some(disk) => format!("sys/block/{}/{}", entry(disk), entry(name)),
            None => format!("sys/block/{}", entry(name)),
        };
        write(&root, &format!("{sys}/stat"), &format!("{COUNTERS}\n"));
        write(&root, &format!("{sys}/dev"), &format!("{major}:{minor}\n"));
        let target = format!("../../{}", sys.trim_start_matches("sys/"));
        symlink(target, root.join(format!("sys/dev/block/{major}:{minor}"))).unwrap();
        if nodes {
            let node = root.join("dev").join(name);
            fs::create_dir_all(node.parent().unwrap()).unwrap();
            block_node(&node, major, minor);
        }
    }
    write(&root, "proc/diskstats", &diskstats);
    let labels = root.join("dev/disk/by-label");
    for (label, device) in [
        (EFI.to_string(), "sda1"),
        ("données".to_string(), "sda"),
        (long_label(), "sdb"),
        ("root".to_string(), "vda"),
    ] {
        symlink(format!("../../{device}"), labels.join(label)).unwrap();
    }
    root
}

fn iostat_rs(root: &Path, args: &[&str]) -> Run {
    let out = pinned(&mut Command::new(env!("CARGO_BIN_EXE_iostat-rs")))
        .arg("--sysroot")
        .arg(root)
        .args(args)
        .output()
        .expect("iostat-rs runs");
    Run::from(out)
}

#[test]
fn persistent_names_print_as_sysstat_prints_them() {
    if !skip::runs_unless(
        "iostat_persistent_names (comparison with sysstat)",
        namespace_unavailable(),
    ) {
        return;
    }
    let root = tree("sysstat", true);
    let cut = format!("{}{}", "L".repeat(121), "é".repeat(3));
    for args in [
        &["-j", "LABEL"][..],
        &["-j", "label", "-p", "ALL"],
        &["-x", "-j", "LABEL", "sda1"],
        &["-d", "-j", "LABEL", "sda1", "vda", "sdb"],
        &["-xs", "-j", "LABEL", "-p", "sda"],
        &["-d", "-j", "LABEL", "-g", "G", "sda1", "sdb"],
        &["-x", "-p", "ALL"],
        &["-d", "cciss!c0d0", "sda"],
        &["-d", "/dev/cciss/c0d0"],
        &["-x", "-p", "cciss!c0d0"],
    ] {
        let sys = sysstat_on_tree(&root, args).unwrap();
        let rs = iostat_rs(&root, args);
        assert_eq!(sys.code, Some(0), "sysstat {args:?}: {}", sys.stderr);
        assert_eq!(rs.code, Some(0), "iostat-rs {args:?}: {}", rs.stderr);
        // As 12.7.9 prints it: the long label whole.
        let expected = normalise(&sys.stdout).0.replace(&cut, &long_label());
        assert_eq!(normalise(&rs.stdout).0, expected, "iostat {args:?}");
    }
    // The test would pass on two programs that both ignore -j: make sure
    // the names are there.
    let all = iostat_rs(&root, &["-j", "LABEL", "-p", "ALL"]).stdout;
    for name in [EFI, "données", long_label().as_str(), "root"] {
        assert!(
            all.lines().any(|l| l.ends_with(&format!(" {name}"))),
            "{name} missing from:\n{all}"
        );
    }
}

#[test]
fn persistent_names_with_backslashes_are_exact_in_json() {
    let root = tree("json", false);
    let rs = iostat_rs(&root, &["-d", "-j", "LABEL", "-p", "ALL", "-o", "JSON"]);
    assert_eq!(rs.code, Some(0), "{}", rs.stderr);
    let doc: serde_json::Value = serde_json::from_str(&rs.stdout).expect("valid JSON");
    let disks = doc["sysstat"]["hosts"][0]["statistics"][0]["disk"]
        .as_array()
        .expect("disk array");
    let names: Vec<&str> = disks
        .iter()
        .map(|d| d["disk_device"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "root",
            "données",
            EFI,
            long_label().as_str(),
            "cciss/c0d0",
            "cciss/c0d0p1"
        ]
    );
}

#[test]
fn a_name_with_a_slash_names_its_device_as_it_is_shown() {
    // iostat shows the cciss disk as `cciss/c0d0`. sysstat takes only
    // `cciss!c0d0` or `/dev/cciss/c0d0` for it: given the name it shows, it
    // shows nothing, without a word. iostat-rs takes all three
    // (docs/sysstat-compat.md).
    let root = tree("slash", false);
    let report = |args: &[&str]| {
        let run = iostat_rs(&root, args);
        assert_eq!(run.code, Some(0), "{args:?}: {}", run.stderr);
        normalise(&run.stdout).0
    };
    let bang = report(&["-d", "cciss!c0d0"]);
    assert!(
        bang.lines().any(|l| l.starts_with("cciss/c0d0 ")),
        "no cciss/c0d0 row:\n{bang}"
    );
    assert_eq!(report(&["-d", "cciss/c0d0"]), bang);
    let partitions = report(&["-d", "-p", "cciss!c0d0"]);
    assert!(
        partitions.lines().any(|l| l.starts_with("cciss/c0d0p1 ")),
        "no cciss/c0d0p1 row:\n{partitions}"
    );
    assert_eq!(report(&["-d", "-p", "cciss/c0d0"]), partitions);
}

/// A path that does not resolve names no device, as sysstat's
/// `device_name()` keeps it as given: `/vda` and `//vda` are not
/// `/dev/vda` (iostat-rs showed vda's statistics under those names).
#[test]
fn a_path_that_does_not_resolve_names_no_device() {
    if !skip::runs_unless(
        "iostat_unresolved_paths (comparison with sysstat)",
        namespace_unavailable(),
    ) {
        return;
    }
    let root = tree("unresolved", true);
    for args in [
        &["-d", "/vda"][..],
        &["-d", "//vda"],
        &["-x", "-p", "/vda"],
        &["-d", "/vda", "/dev/vda"],
    ] {
        let sys = sysstat_on_tree(&root, args).unwrap();
        let rs = iostat_rs(&root, args);
        assert_eq!(sys.code, Some(0), "sysstat {args:?}: {}", sys.stderr);
        assert_eq!(rs.code, Some(0), "iostat-rs {args:?}: {}", rs.stderr);
        assert_eq!(
            normalise(&rs.stdout).0,
            normalise(&sys.stdout).0,
            "iostat {args:?}"
        );
    }
    // Both could show nothing at all: the path that resolves shows vda.
    let rows = iostat_rs(&root, &["-d", "/vda", "/dev/vda"]).stdout;
    let names: Vec<&str> = rows
        .lines()
        .skip(3)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(names, ["vda"], "{rows}");
}
