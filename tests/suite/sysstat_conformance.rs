//! Conformance with sysstat's own iostat test data.
//!
//! Runs every row of `$SYSSTAT_TESTS/cases.tsv` (default
//! `../shared/sysstat-tests` next to the package) through iostat-rs's public
//! mechanisms: this harness converts sysstat's fixture roots into a recording
//! (the documented format of `src/common/record.rs`) and runs
//! `iostat-rs --replay FILE ARGS...`, comparing stdout byte for byte with
//! `expected/<file>`. sysstat's simulation conventions live here, never in
//! the product:
//!
//! * frame k is `root<N+k>` until the next root is missing (then the replay
//!   is exhausted, which iostat-rs treats like SIGINT, as sysstat's tests do);
//! * every regular file is a `read`, every `_list` file the `list` of its
//!   directory (`.` and `..` dropped; directories without one are listed
//!   for real), the flattened symbolic links (files holding `../target`) are
//!   `link`s whose targets' files are also readable through the link, `dev/`
//!   text files `maj min` are `devnum`s, `dev/mapper/virtualhd` is 253:2,
//!   `realpath` returns names unchanged, directories are `isdir`;
//! * uname Linux/SYSSTAT.TEST/1.2.3-TEST/x86_64, frame k at
//!   1591016000 + k·interval seconds;
//! * `tests/root/...` in arguments is the recording's `/...`; `--getenv` is
//!   dropped; the row's environment is the whole environment.
//!
//! A case may be skipped only when `docs/sysstat-compat.md` lists it as a
//! deliberate deviation. Adding a row and an expected file adds a case.

use crate::scratch::scratch;
use crate::skip;

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hwstat::common::record::{End, EndLine, Entry, FORMAT_NAME, FORMAT_VERSION, Frame, Header};
use hwstat::common::source::Uname;

const START_UNIX: u64 = 1_591_016_000;

struct Case {
    id: String,
    root: String,
    env: Vec<(String, String)>,
    args: Vec<String>,
    expected: String,
    kind: String,
}

/// The directory of sysstat's test data: `Ok` when it holds `cases.tsv`,
/// `Err` with the directory looked at otherwise.
fn cases_dir() -> Result<PathBuf, PathBuf> {
    let dir = match std::env::var_os("SYSSTAT_TESTS") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/sysstat-tests"),
    };
    if dir.join("cases.tsv").is_file() {
        Ok(dir)
    } else {
        Err(dir)
    }
}

fn read_cases(dir: &Path) -> Vec<Case> {
    let text = fs::read_to_string(dir.join("cases.tsv")).expect("cases.tsv is readable");
    let mut cases = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if n == 0 && line.starts_with("id\t") || line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        assert!(f.len() >= 6, "cases.tsv line {}: expected 6 fields", n + 1);
        let env = f[2]
            .split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        cases.push(Case {
            id: f[0].to_string(),
            root: f[1].to_string(),
            env,
            args: f[3].split_whitespace().map(str::to_string).collect(),
            expected: f[4].to_string(),
            kind: f[5].trim().to_string(),
        });
    }
    cases
}

/// Why a case deviates.
#[derive(Clone, PartialEq, Eq)]
enum Deviation {
    /// The fixture's `/proc/diskstats` contradicts its `/sys/block/*/stat`
    /// (no kernel does that). The harness still runs the case with
    /// `/proc/diskstats` withheld, so that iostat-rs reads the sysfs files,
    /// and requires the expected output: the deviation is proven, not skipped.
    Fixture(String),
    /// sysstat's behaviour is a bug iostat-rs does not reproduce: skipped.
    SysstatBug(String),
}

/// Case ids listed as deliberate deviations: rows `| <id> | fixture or
/// sysstat-bug | reason |` of the table under the `## Deviations` heading of
/// docs/sysstat-compat.md.
fn deviations() -> HashMap<String, Deviation> {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/sysstat-compat.md");
    let text = fs::read_to_string(&doc).unwrap_or_default();
    let mut out = HashMap::new();
    let mut inside = false;
    for line in text.lines() {
        if line.starts_with("## ") {
            inside = line.trim() == "## Deviations";
            continue;
        }
        if !inside || !line.starts_with('|') {
            continue;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() >= 4 {
            let id = cells[1].trim_matches('`');
            let reason = cells[3].to_string();
            if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) || reason.is_empty() {
                continue;
            }
            match cells[2] {
                "fixture" => out.insert(id.to_string(), Deviation::Fixture(reason)),
                "sysstat-bug" => out.insert(id.to_string(), Deviation::SysstatBug(reason)),
                _ => None,
            };
        }
    }
    out
}

/// Text that is a flattened symbolic link: one line, no newline, a relative
/// or absolute path.
fn as_link(data: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(data).ok()?;
    (!text.is_empty()
        && !text.contains(['\n', '\0'])
        && (text.starts_with("../") || text.starts_with('/'))
        && !text.contains(' '))
    .then(|| text.to_string())
}

fn as_devnum(path: &str, data: &[u8]) -> Option<(u32, u32)> {
    if !path.starts_with("/dev/") {
        return None;
    }
    let text = std::str::from_utf8(data).ok()?;
    let mut it = text.split_whitespace();
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    it.next().is_none().then_some((major, minor))
}

fn file_entry(data: &[u8]) -> Entry {
    match std::str::from_utf8(data) {
        Ok(t) => Entry::Text(t.to_string()),
        Err(_) => Entry::Hex(data.iter().map(|b| format!("{b:02x}")).collect()),
    }
}

/// Normalises `a/b/../c` (no file system access).
fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Every operation a fixture root answers, keyed as in a recording.
fn root_entries(root: &Path) -> BTreeMap<String, Entry> {
    let mut entries = BTreeMap::new();
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    // Symbolic links, real ones and flattened ones alike: (path, target).
    let mut links: Vec<(String, String)> = Vec::new();
    let mut stack = vec![(root.to_path_buf(), "/".to_string())];
    while let Some((dir, kpath)) = stack.pop() {
        entries.insert(format!("isdir {kpath}"), Entry::IsDir(true));
        let mut names: Vec<String> = Vec::new();
        let mut listed: Option<Vec<String>> = None;
        for item in fs::read_dir(&dir).expect("fixture directory is readable") {
            let item = item.unwrap();
            let name = item.file_name().to_string_lossy().into_owned();
            let child = if kpath == "/" {
                format!("/{name}")
            } else {
                format!("{kpath}/{name}")
            };
            let ft = item.file_type().unwrap();
            if name == "_list" {
                let text = fs::read_to_string(item.path()).unwrap_or_default();
                listed = Some(
                    text.lines()
                        .filter(|l| !l.is_empty() && *l != "." && *l != "..")
                        .map(str::to_string)
                        .collect(),
                );
                continue;
            }
            names.push(name.clone());
            if ft.is_dir() {
                stack.push((item.path(), child));
            } else if ft.is_symlink() {
                let target = fs::read_link(item.path()).unwrap();
                links.push((child, target.to_string_lossy().into_owned()));
            } else if ft.is_file() {
                files.push((child, fs::read(item.path()).unwrap_or_default()));
            }
        }
        names.sort();
        entries.insert(
            format!("list {kpath}"),
            Entry::List(listed.unwrap_or(names)),
        );
    }
    let dirs: Vec<String> = entries
        .keys()
        .filter_map(|k| k.strip_prefix("isdir ").map(str::to_string))
        .collect();
    let file_map: HashMap<String, Vec<u8>> = files.iter().cloned().collect();
    for (path, data) in &files {
        if let Some(dev) = as_devnum(path, data) {
            entries.insert(format!("devnum {path}"), Entry::Device(dev.0, dev.1));
        }
        match as_link(data) {
            Some(target) => links.push((path.clone(), target)),
            None => {
                entries.insert(format!("read {path}"), file_entry(data));
            }
        }
    }
    for (path, target) in &links {
        entries.insert(format!("link {path}"), Entry::Link(target.clone()));
        let parent = path.rsplit_once('/').map(|(p, _)| p).unwrap_or("");
        let resolved = normalize(&format!("{parent}/{target}"));
        if dirs.contains(&resolved) {
            entries.insert(format!("isdir {path}"), Entry::IsDir(true));
            let prefix = format!("{resolved}/");
            for (other, content) in &file_map {
                if let Some(rel) = other.strip_prefix(&prefix) {
                    entries.insert(format!("read {path}/{rel}"), file_entry(content));
                }
            }
        }
    }
    entries.insert("devnum /dev/mapper/virtualhd".into(), Entry::Device(253, 2));
    entries
}

struct Roots {
    dir: PathBuf,
    cache: HashMap<String, BTreeMap<String, Entry>>,
    /// Serialised frames by what makes them differ (see [`frames_json`]).
    frames: HashMap<String, Vec<u8>>,
}

impl Roots {
    fn entries(&mut self, name: &str) -> &BTreeMap<String, Entry> {
        let dir = self.dir.join(name);
        self.cache
            .entry(name.to_string())
            .or_insert_with(|| root_entries(&dir))
    }

    /// root1 → [root1, root2, ...] until one is missing.
    fn sequence(&self, first: &str) -> Vec<String> {
        let (stem, num) =
            first.split_at(first.trim_end_matches(|c: char| c.is_ascii_digit()).len());
        let mut n: u32 = num.parse().expect("root names end in a number");
        let mut out = Vec::new();
        while self.dir.join(format!("{stem}{n}")).is_dir() {
            out.push(format!("{stem}{n}"));
            n += 1;
        }
        out
    }
}

/// Maps sysstat's test-mode argument conventions to iostat-rs's.
fn product_args(args: &[String]) -> Vec<String> {
    args.iter()
        .filter(|a| *a != "--getenv")
        .map(|a| match a.strip_prefix("tests/root/") {
            Some(rest) => format!("/{rest}"),
            None => a.clone(),
        })
        .collect()
}

fn interval_secs(args: &[String]) -> u64 {
    args.iter()
        .find(|a| a.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|a| a.parse().ok())
        .unwrap_or(0)
}

fn write_recording(
    roots: &mut Roots,
    case: &Case,
    args: &[String],
    file: &Path,
    withhold: Option<&str>,
) {
    let interval = interval_secs(args);
    let names = if interval == 0 {
        vec![case.root.clone()]
    } else {
        roots.sequence(&case.root)
    };
    assert!(
        !names.is_empty(),
        "{}: no fixture root {}",
        case.id,
        case.root
    );
    let header = Header {
        format: FORMAT_NAME.into(),
        version: FORMAT_VERSION,
        tool: "iostat-rs".into(),
        args: args.to_vec(),
        uname: Uname {
            sysname: "Linux".into(),
            nodename: "SYSSTAT.TEST".into(),
            release: "1.2.3-TEST".into(),
            version: String::new(),
            machine: "x86_64".into(),
        },
        start_unix_ns: START_UNIX * 1_000_000_000,
        whole_tree: true,
    };
    // Buffered: serde_json writes a value in many small pieces, each a
    // system call on a bare file.
    let mut out = std::io::BufWriter::new(fs::File::create(file).unwrap());
    serde_json::to_writer(&mut out, &header).unwrap();
    out.write_all(b"\n").unwrap();
    let slash_args: Vec<&String> = args.iter().filter(|a| a.starts_with('/')).collect();
    let key = format!("{names:?} {interval} {withhold:?} {slash_args:?}");
    if !roots.frames.contains_key(&key) {
        let frames = frames_json(roots, &names, interval, withhold, &slash_args);
        roots.frames.insert(key.clone(), frames);
    }
    out.write_all(&roots.frames[&key]).unwrap();
    out.flush().unwrap();
}

/// The frames of a recording of the roots `names`, one JSON line each.
/// Cases with the same roots, interval, withheld file and path arguments
/// share them: serialising them again for each case was most of this
/// test's CPU time in the debug build.
fn frames_json(
    roots: &mut Roots,
    names: &[String],
    interval: u64,
    withhold: Option<&str>,
    slash_args: &[&String],
) -> Vec<u8> {
    let mut out = Vec::new();
    // A replay looks a key missing from frame k up in earlier frames; a
    // fixture root is a whole file system, so what it lacks is absent.
    let mut seen: Vec<String> = Vec::new();
    for (k, name) in names.iter().enumerate() {
        let mut entries = roots.entries(name).clone();
        for key in &seen {
            if !entries.contains_key(key) {
                let absent = if key.starts_with("isdir ") {
                    Entry::IsDir(false)
                } else {
                    Entry::Errno(2)
                };
                entries.insert(key.clone(), absent);
            }
        }
        seen = entries.keys().cloned().collect();
        if let Some(key) = withhold {
            entries.insert(key.to_string(), Entry::Errno(2));
        }
        for a in slash_args {
            entries.insert(format!("realpath {a}"), Entry::Path(a.to_string()));
        }
        let frame = Frame {
            index: k as u64,
            time_unix_ns: Some((START_UNIX + k as u64 * interval) * 1_000_000_000),
            elapsed_ns: Some(k as u64 * interval * 1_000_000_000),
            entries,
        };
        serde_json::to_writer(&mut out, &frame).unwrap();
        out.push(b'\n');
    }
    // The end line this version's header promises (docs/recording.md).
    let end = EndLine {
        end: End {
            frames: names.len() as u64,
            refused: None,
        },
    };
    serde_json::to_writer(&mut out, &end).unwrap();
    out.push(b'\n');
    out
}

struct Outcome {
    status: Option<i32>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

fn run(case: &Case, recording: &Path, args: &[String]) -> Outcome {
    let mut child = Command::new(env!("CARGO_BIN_EXE_iostat-rs"))
        .env_clear()
        .envs(case.env.iter().map(|(k, v)| (k, v)))
        .arg("--replay")
        .arg(recording)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("iostat-rs starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || read_all(stdout));
    let err_reader = std::thread::spawn(move || read_all(stderr));
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Outcome {
        status,
        stdout: out_reader.join().unwrap(),
        stderr: err_reader.join().unwrap(),
    }
}

fn read_all(mut r: impl std::io::Read) -> Vec<u8> {
    let mut v = Vec::new();
    let _ = r.read_to_end(&mut v);
    v
}

/// `-V`: the environment lines must match exactly; sysstat's version banner
/// (two lines from `sysstat version`) is replaced by iostat-rs's own, checked
/// by pattern.
fn version_matches(expected: &str, got: &str) -> Result<(), String> {
    let exp_env: Vec<&str> = expected
        .lines()
        .take_while(|l| !l.starts_with("sysstat version"))
        .collect();
    let got_lines: Vec<&str> = got.lines().collect();
    let split = got_lines
        .iter()
        .position(|l| l.starts_with("iostat-rs version "))
        .ok_or("no `iostat-rs version` line")?;
    if got_lines[..split] != exp_env[..] {
        return Err(format!(
            "environment lines differ: expected {exp_env:?}, got {:?}",
            &got_lines[..split]
        ));
    }
    let version = got_lines[split].trim_start_matches("iostat-rs version ");
    let ok = version.split('.').count() == 3
        && version
            .split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    if !ok {
        return Err(format!("bad version line {:?}", got_lines[split]));
    }
    Ok(())
}

fn first_difference(expected: &[u8], got: &[u8]) -> String {
    let e = String::from_utf8_lossy(expected);
    let g = String::from_utf8_lossy(got);
    for (n, (a, b)) in e.lines().zip(g.lines()).enumerate() {
        if a != b {
            return format!("line {}:\n  expected: {a:?}\n  got:      {b:?}", n + 1);
        }
    }
    format!(
        "lengths differ: expected {} lines, got {} lines",
        e.lines().count(),
        g.lines().count()
    )
}

fn check(case: &Case, dir: &Path, out: &Outcome) -> Result<(), String> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    match case.kind.as_str() {
        "golden" => {
            let expected = fs::read(dir.join("expected").join(&case.expected))
                .map_err(|e| format!("expected/{}: {e}", case.expected))?;
            let exp_text = String::from_utf8_lossy(&expected);
            if exp_text.lines().any(|l| l.starts_with("sysstat version")) {
                return version_matches(&exp_text, &stdout);
            }
            if out.status != Some(0) {
                return Err(format!("exit status {:?}, stderr: {stderr}", out.status));
            }
            if out.stdout != expected {
                return Err(first_difference(&expected, &out.stdout));
            }
            Ok(())
        }
        "usage-error" => {
            if out.status.is_some_and(|s| s != 0)
                && (stderr.contains("Usage:") || stdout.contains("Usage:"))
            {
                Ok(())
            } else {
                Err(format!(
                    "expected a usage error, got {:?}: {stderr}",
                    out.status
                ))
            }
        }
        "invalid-error" => {
            if stderr.contains("Invalid") || stdout.contains("Invalid") {
                Ok(())
            } else {
                Err(format!(
                    "expected an `Invalid` message, got {:?}: {stderr}",
                    out.status
                ))
            }
        }
        "json-valid" => {
            if out.status != Some(0) {
                return Err(format!("exit status {:?}: {stderr}", out.status));
            }
            serde_json::from_slice::<serde_json::Value>(&out.stdout)
                .map(|_| ())
                .map_err(|e| format!("invalid JSON: {e}"))
        }
        "version" => {
            if out.status == Some(0) && stdout.lines().any(|l| l.starts_with("iostat-rs version "))
            {
                Ok(())
            } else {
                Err(format!("no version banner, status {:?}", out.status))
            }
        }
        other => Err(format!("unknown kind {other:?}")),
    }
}

/// The test data directory, or `None` after saying why the test cannot run.
fn cases_dir_or_skip(test: &str) -> Option<PathBuf> {
    match cases_dir() {
        Ok(dir) => Some(dir),
        Err(looked_at) => {
            skip::skip(
                test,
                &format!(
                    "no sysstat test data (cases.tsv) in {}; set SYSSTAT_TESTS=DIR (README: \"sysstat's test data\")",
                    looked_at.display()
                ),
            );
            None
        }
    }
}

/// Runs every case of the test data in `dir`; panics with the summary if
/// any fails.
/// What one case came to.
enum Verdict {
    Passed,
    Deviated(String),
    Failed(String),
}

/// Runs one case: its recording written under `work`, iostat-rs replaying it.
fn judge(
    case: &Case,
    dir: &Path,
    roots: &mut Roots,
    work: &Path,
    deviations: &HashMap<String, Deviation>,
) -> Verdict {
    let mut withhold = None;
    match deviations.get(&case.id) {
        Some(Deviation::SysstatBug(reason)) => {
            return Verdict::Deviated(format!(
                "DEVIATION {} (sysstat bug, skipped): {reason}\n",
                case.id
            ));
        }
        Some(Deviation::Fixture(_)) => withhold = Some("read /proc/diskstats"),
        None => {}
    }
    let args = product_args(&case.args);
    let file = work.join(format!("{}.rec", case.id));
    write_recording(roots, case, &args, &file, withhold);
    let out = run(case, &file, &args);
    match check(case, dir, &out) {
        Ok(()) if withhold.is_some() => Verdict::Deviated(format!(
            "DEVIATION {} (fixture data no kernel produces): passes with /proc/diskstats withheld\n",
            case.id
        )),
        Ok(()) => Verdict::Passed,
        Err(why) => Verdict::Failed(format!(
            "FAIL {} [{}] iostat {}: {why}\n",
            case.id,
            case.kind,
            case.args.join(" ")
        )),
    }
}

/// Cases judged at once: each mostly waits for the iostat-rs it started.
const WORKERS: usize = 4;

fn conformance(dir: &Path, label: &str) {
    let cases = read_cases(dir);
    let deviations = deviations();
    let work = scratch(&format!("conformance-{}", label.replace(' ', "-")));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut verdicts: Vec<(usize, Verdict)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..WORKERS)
            .map(|_| {
                scope.spawn(|| {
                    let mut roots = Roots {
                        dir: dir.to_path_buf(),
                        cache: HashMap::new(),
                        frames: HashMap::new(),
                    };
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(case) = cases.get(i) else {
                            return mine;
                        };
                        mine.push((i, judge(case, dir, &mut roots, &work, &deviations)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    verdicts.sort_by_key(|&(i, _)| i);
    let (mut passed, mut failed, mut deviated) = (0, 0, 0);
    let mut report = String::new();
    for (_, verdict) in verdicts {
        match verdict {
            Verdict::Passed => passed += 1,
            Verdict::Deviated(line) => {
                deviated += 1;
                report.push_str(&line);
            }
            Verdict::Failed(line) => {
                failed += 1;
                report.push_str(&line);
            }
        }
    }
    eprint!("{report}");
    let summary = format!(
        "sysstat conformance ({label}): {passed} passed, {failed} failed, {deviated} deviations ({} cases from {})",
        cases.len(),
        dir.display()
    );
    eprintln!("{summary}");
    assert_eq!(failed, 0, "{summary}");
}

#[test]
fn sysstat_conformance() {
    if let Some(dir) = cases_dir_or_skip("sysstat_conformance") {
        conformance(&dir, "as given");
    }
}

/// Copies the tree at `from` to `to`, turning every flattened link (a file
/// holding `../target`) into a real symbolic link; returns how many.
fn copy_with_real_symlinks(from: &Path, to: &Path) -> usize {
    fs::create_dir_all(to).unwrap();
    let mut made = 0;
    for item in fs::read_dir(from).unwrap() {
        let item = item.unwrap();
        let (source, dest) = (item.path(), to.join(item.file_name()));
        let ft = item.file_type().unwrap();
        if ft.is_dir() {
            made += copy_with_real_symlinks(&source, &dest);
        } else if ft.is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(&source).unwrap(), &dest).unwrap();
            made += 1;
        } else {
            let data = fs::read(&source).unwrap();
            match as_link(&data) {
                Some(target) => {
                    std::os::unix::fs::symlink(target, &dest).unwrap();
                    made += 1;
                }
                None => fs::write(&dest, data).unwrap(),
            }
        }
    }
    made
}

/// sysstat's own repository (and a plain `git clone` of it) has real
/// symbolic links where the shared copy has flattened ones: both pass.
#[test]
fn sysstat_conformance_with_real_symlinks() {
    let Some(dir) = cases_dir_or_skip("sysstat_conformance_with_real_symlinks") else {
        return;
    };
    let copy = scratch("conformance-links");
    let links = copy_with_real_symlinks(&dir, &copy);
    assert!(links > 10, "only {links} links in {}", dir.display());
    conformance(&copy, "real symbolic links");
}

/// A small tree written in each form gives the same recording entries.
#[test]
fn both_link_forms_give_the_same_recording() {
    let base = scratch("link-forms");
    let build = |name: &str, link: &dyn Fn(&str, &Path)| {
        let root = base.join(name);
        fs::create_dir_all(root.join("sys/block/sda")).unwrap();
        fs::create_dir_all(root.join("sys/dev/block")).unwrap();
        fs::create_dir_all(root.join("dev/mapper")).unwrap();
        fs::write(root.join("sys/block/sda/stat"), "1 2 3 4 5 6 7 8 9 10 11\n").unwrap();
        fs::write(root.join("sys/block/sda/dev"), "8:0\n").unwrap();
        fs::write(root.join("dev/sda"), "8 0").unwrap();
        fs::write(root.join("dev/dm-2"), "253 2").unwrap();
        link("../../block/sda", &root.join("sys/dev/block/8:0"));
        link("../dm-2", &root.join("dev/mapper/virtualhd"));
        link("/dev/sda", &root.join("dev/root"));
        root_entries(&root)
    };
    let real = build("real", &|target, at| {
        std::os::unix::fs::symlink(target, at).unwrap()
    });
    let flat = build("flat", &|target, at| fs::write(at, target).unwrap());
    assert_eq!(real, flat);
    // What both must answer: the link itself, and the linked directory's files.
    assert_eq!(
        real.get("link /sys/dev/block/8:0"),
        Some(&Entry::Link("../../block/sda".into()))
    );
    assert_eq!(
        real.get("read /sys/dev/block/8:0/stat"),
        Some(&Entry::Text("1 2 3 4 5 6 7 8 9 10 11\n".into()))
    );
    assert_eq!(
        real.get("isdir /sys/dev/block/8:0"),
        Some(&Entry::IsDir(true))
    );
    assert_eq!(real.get("devnum /dev/sda"), Some(&Entry::Device(8, 0)));
}
