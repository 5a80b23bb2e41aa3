//! The checked-in completion scripts (`completions/`) run in the real
//! shells (Debian's bash with bash-completion, zsh and fish) and offer the
//! values of enumerated options, and the block devices and CXL PMUs present
//! at completion time.
//!
//! bash: the script's function is called with `COMP_WORDS` as
//! bash-completion calls it. fish: `complete -C`, fish's own query. zsh: the
//! script's completer function runs with `words` and `CURRENT` set as the
//! completion system sets them; `_describe` (the completion system's
//! display function) is replaced by one that prints what it was given.
//! The sysfs directories are replaced by tmpfs mounts in a private mount
//! namespace (root), so the names offered are the ones the test created.

use crate::{namespace, skip};

use std::path::Path;
use std::process::Command;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `PATH` with the directory of the programs under test first.
fn path_with_programs() -> String {
    let programs = Path::new(env!("CARGO_BIN_EXE_iostat-rs")).parent().unwrap();
    format!(
        "{}:{}",
        programs.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Quotes `word` for a POSIX-like shell (bash, zsh and fish all accept
/// single quotes without escapes inside).
fn quoted(word: &str) -> String {
    assert!(!word.contains('\''));
    format!("'{word}'")
}

/// The shell script that completes `words` (the last one being completed)
/// with the checked-in script of `program` and prints one candidate a line.
fn completion_script(shell: &str, program: &str, words: &[&str]) -> (String, Vec<String>) {
    let function = program.replace('-', "_");
    // The checked-in script, quoted: the checkout's path may hold spaces.
    let script = |name: &str| quoted(&repo().join(name).to_string_lossy());
    let list = words
        .iter()
        .map(|w| quoted(w))
        .collect::<Vec<_>>()
        .join(" ");
    let last = words.len() - 1;
    let mut line = words.join(" ");
    if words[last].is_empty() {
        line.push(' ');
    }
    match shell {
        "bash" => (
            format!(
                "source /usr/share/bash-completion/bash_completion\n\
                 source {script}\n\
                 COMP_WORDS=({list}); COMP_CWORD={last}; COMP_LINE={line}; COMP_POINT=${{#COMP_LINE}}\n\
                 _clap_complete_{function} {program} {current} {previous}\n\
                 printf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
                script = script(&format!("completions/{program}.bash")),
                line = quoted(&line),
                current = quoted(words[last]),
                previous = quoted(words[last - 1]),
            ),
            vec!["bash".into(), "--norc".into(), "-c".into()],
        ),
        "zsh" => (
            format!(
                "compdef() {{ : }}\n\
                 _describe() {{ local name=${{@[-1]}}; [[ $name == / ]] && name=$4; print -rl -- \"${{(@P)name}}\" }}\n\
                 source {script}\n\
                 words=({list}); CURRENT={current}\n\
                 _clap_dynamic_completer_{function}\n",
                script = script(&format!("completions/_{program}")),
                current = last + 1,
            ),
            vec!["zsh".into(), "-f".into(), "-c".into()],
        ),
        "fish" => (
            format!(
                "source {script}\ncomplete -C {line}\n",
                script = script(&format!("completions/{program}.fish")),
                line = quoted(&line),
            ),
            vec!["fish".into(), "--no-config".into(), "-c".into()],
        ),
        other => panic!("no shell {other}"),
    }
}

/// Runs the completion of `words` in `shell`, inside `setup` (a shell
/// prefix such as a mount namespace) when given, and gives the candidates
/// (without fish's descriptions).
fn complete(setup: Option<&str>, shell: &str, program: &str, words: &[&str]) -> Vec<String> {
    let (script, mut argv) = completion_script(shell, program, words);
    argv.push(script);
    let mut command = match setup {
        Some(setup) => namespace::command(setup, &argv[0], &argv[1..]),
        None => {
            let mut c = Command::new(&argv[0]);
            c.args(&argv[1..]);
            c
        }
    };
    let out = command
        .env("PATH", path_with_programs())
        .env_remove("COMPLETE")
        .output()
        .unwrap_or_else(|e| panic!("{shell}: {e}"));
    assert!(
        out.status.success(),
        "{shell} {words:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split(['\t', ':']).next().unwrap().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

/// The shells present, or `None` after saying which is missing.
fn shells(test: &str) -> Option<[&'static str; 3]> {
    let missing: Vec<&str> = ["bash", "zsh", "fish"]
        .into_iter()
        .filter(|s| {
            Command::new(s)
                .args(["-c", "exit 0"])
                .status()
                .map_or(true, |st| !st.success())
        })
        .collect();
    let completion = Path::new("/usr/share/bash-completion/bash_completion").exists();
    if missing.is_empty() && completion {
        return Some(["bash", "zsh", "fish"]);
    }
    skip::skip(
        test,
        &format!(
            "shells missing: {missing:?}{}; apt-get install bash-completion zsh fish",
            if completion {
                ""
            } else {
                " and bash-completion"
            }
        ),
    );
    None
}

/// A mount-namespace prefix, or `None` after saying why there is none.
fn namespace_or_skip(test: &str) -> Option<()> {
    match namespace::unavailable() {
        None => Some(()),
        Some(why) => {
            skip::skip(test, &format!("{why}; it puts test devices in /sys"));
            None
        }
    }
}

#[test]
fn enumerated_values_complete_in_every_shell() {
    let Some(shells) = shells("enumerated_values_complete_in_every_shell") else {
        return;
    };
    for shell in shells {
        assert_eq!(
            complete(None, shell, "iostat-rs", &["iostat-rs", "-o", ""]),
            ["text", "JSON", "ndjson", "csv", "prometheus"],
            "{shell}"
        );
        assert_eq!(
            complete(None, shell, "iostat-rs", &["iostat-rs", "-x", "-j", ""]),
            ["ID", "LABEL", "PATH", "UUID", "PARTUUID"],
            "{shell}"
        );
        // The charted columns of the three reports, -x's first, in each
        // unit (-k, -m, -G).
        let columns = complete(None, shell, "iostat-rs", &["iostat-rs", "--svg-sort", ""]);
        assert_eq!(
            columns[..8],
            [
                "r/s", "w/s", "rkB/s", "wkB/s", "r_await", "w_await", "aqu-sz", "%util"
            ],
            "{shell}"
        );
        for column in ["rMB/s", "wGB/s", "tps", "await", "kB_read/s", "GB_dscd/s"] {
            assert!(
                columns.iter().any(|c| c == column),
                "{shell}: {column} in {columns:?}"
            );
        }
        assert_eq!(columns.len(), 27, "{shell}: {columns:?}");
        // --dec takes its value after `=` only, as sysstat: nothing for
        // `--dec 1` (a space), which iostat-rs refuses.
        let after_space = complete(None, shell, "iostat-rs", &["iostat-rs", "--dec", ""]);
        assert!(
            !after_space
                .iter()
                .any(|c| ["0", "1", "2"].contains(&c.as_str())),
            "{shell}: {after_space:?}"
        );
        assert_eq!(
            complete(None, shell, "iostat-rs", &["iostat-rs", "--dec="]),
            ["--dec=0", "--dec=1", "--dec=2"],
            "{shell}"
        );
        for option in ["-o", "--output"] {
            assert_eq!(
                complete(None, shell, "vcpustat", &["vcpustat", option, ""]),
                ["text", "json", "ndjson", "csv", "prometheus"],
                "{shell} {option}"
            );
            assert_eq!(
                complete(None, shell, "cxlstat", &["cxlstat", option, ""]),
                ["text", "json", "ndjson", "csv", "prometheus"],
                "{shell} {option}"
            );
        }
    }
}

#[test]
fn pmu_and_device_names_come_from_sysfs_at_completion_time() {
    let test = "pmu_and_device_names_come_from_sysfs_at_completion_time";
    let (Some(shells), Some(())) = (shells(test), namespace_or_skip(test)) else {
        return;
    };
    let setup = "mount -t tmpfs hwstat-pmus /sys/bus/event_source/devices \
                 && cd /sys/bus/event_source/devices \
                 && mkdir -p cxl_pmu_mem0.0/events cxl_pmu_mem1.0/events cpu/events \
                 && touch cxl_pmu_mem0.0/events/clock_ticks cxl_pmu_mem1.0/events/clock_ticks \
                          cxl_pmu_mem1.0/events/d2h_req_rdshared cpu/events/cycles \
                 && cd / \
                 && mount -t tmpfs hwstat-block /sys/block \
                 && mkdir /sys/block/sda /sys/block/nvme0n1";
    for shell in shells {
        assert_eq!(
            complete(Some(setup), shell, "cxlstat", &["cxlstat", "--pmu", ""]),
            ["cxl_pmu_mem0.0", "cxl_pmu_mem1.0"],
            "{shell}"
        );
        let listed = complete(
            Some(setup),
            shell,
            "cxlstat",
            &["cxlstat", "--list-events", "cxl"],
        );
        assert_eq!(listed, ["cxl_pmu_mem0.0", "cxl_pmu_mem1.0"], "{shell}");
        // Event names, once each, for the last of a comma list.
        let events = complete(Some(setup), shell, "cxlstat", &["cxlstat", "-e", ""]);
        assert_eq!(events, ["clock_ticks", "d2h_req_rdshared"], "{shell}");
        let events = complete(
            Some(setup),
            shell,
            "cxlstat",
            &["cxlstat", "-e", "clock_ticks,d2"],
        );
        assert_eq!(events, ["clock_ticks,d2h_req_rdshared"], "{shell}");
        let devices = complete(Some(setup), shell, "iostat-rs", &["iostat-rs", "-x", ""]);
        for expected in ["nvme0n1", "sda", "ALL"] {
            assert!(
                devices.contains(&expected.to_string()),
                "{shell}: {devices:?}"
            );
        }
    }
}

/// The programs' own answer and the checked-in scripts agree on the shell
/// protocol: every script calls its program back with COMPLETE=<shell>.
#[test]
fn each_script_calls_its_program_back() {
    for program in ["iostat-rs", "vcpustat", "cxlstat"] {
        for (shell, file) in hwstat::common::completion::script_files(program) {
            let text = std::fs::read_to_string(repo().join(&file)).unwrap();
            assert!(
                text.contains(&format!("COMPLETE=\"{shell}\""))
                    || text.contains(&format!("COMPLETE={shell}")),
                "{file}"
            );
            assert!(text.contains(program), "{file}");
        }
    }
}

/// The candidates, with their descriptions, a program gives fish for the
/// value of `-o` (its completion protocol, without a shell).
fn described_output_formats(program: &str, name: &str) -> Vec<String> {
    let out = Command::new(program)
        .args(["--", name, "-o", ""])
        .env("COMPLETE", "fish")
        .output()
        .unwrap();
    assert!(out.status.success(), "{name}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// `-o`'s values come with the same descriptions in the three tools:
/// iostat-rs offered its names alone (and `--help` listed them alone).
#[test]
fn output_formats_are_described_alike_in_the_three_tools() {
    let described = |json: &str| {
        vec![
            "text\tAligned columns for people".to_string(),
            format!("{json}\tOne JSON document, closed even when interrupted"),
            "ndjson\tOne JSON object per sample and line".to_string(),
            "csv\tComma-separated values with a header line".to_string(),
            "prometheus\tPrometheus text exposition (format 0.0.4) of the cumulative counters"
                .to_string(),
        ]
    };
    for (program, name, json) in [
        (env!("CARGO_BIN_EXE_iostat-rs"), "iostat-rs", "JSON"),
        (env!("CARGO_BIN_EXE_vcpustat"), "vcpustat", "json"),
        (env!("CARGO_BIN_EXE_cxlstat"), "cxlstat", "json"),
    ] {
        assert_eq!(
            described_output_formats(program, name),
            described(json),
            "{name}"
        );
    }
}

/// `COMPLETE` asks for completions only when it names a shell whose script
/// `completions/` holds (bash, fish, zsh): exported
/// with another value (for another program), it stopped every run with
/// clap_complete's "unknown shell" and status 2.
#[test]
fn a_complete_variable_that_names_no_shell_is_ignored() {
    let programs = [
        (env!("CARGO_BIN_EXE_iostat-rs"), "iostat-rs"),
        (env!("CARGO_BIN_EXE_vcpustat"), "vcpustat"),
        (env!("CARGO_BIN_EXE_cxlstat"), "cxlstat"),
    ];
    for (program, name) in programs {
        for value in ["1", "yes", "true", "elvish", "powershell"] {
            let out = Command::new(program)
                .arg("--version")
                .env("COMPLETE", value)
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "{name} COMPLETE={value}: {out:?}");
            assert!(stdout.starts_with(&format!("{name} ")), "{stdout}");
        }
    }
}

/// Paths complete in bash only where bash reads them as themselves: its
/// script inserts candidates unquoted, so a directory named `$(touch x)`
/// would run a command at Enter. zsh and fish quote what they insert and
/// get every path.
#[test]
fn bash_completes_only_paths_it_cannot_misread() {
    let Some(shells) = shells("bash_completes_only_paths_it_cannot_misread") else {
        return;
    };
    let dir = crate::scratch::scratch("completed-paths");
    let names = [
        "plain.rec",
        "$(touch pwned).rec",
        "a*b.rec",
        "two words.rec",
    ];
    for name in names {
        std::fs::write(dir.join(name), "").unwrap();
    }
    let prefix = format!("{}/", dir.display());
    let expected = |name: &str| format!("{prefix}{name}");
    for shell in shells {
        for (program, option) in [
            ("iostat-rs", "--record"),
            ("vcpustat", "--replay"),
            ("cxlstat", "--svg"),
        ] {
            let mut got = complete(None, shell, program, &[program, option, &prefix]);
            got.sort();
            let mut want: Vec<String> = match shell {
                "bash" => vec![expected("plain.rec")],
                _ => names.iter().map(|n| expected(n)).collect(),
            };
            want.sort();
            assert_eq!(got, want, "{shell} {program} {option}");
        }
    }
    assert!(!dir.join("pwned").exists());
}

/// With `--sysroot` on the command line, the names offered are those of
/// the tree the run will read: they came from the live system, which the
/// run then does not look at.
#[test]
fn names_come_from_the_typed_sysroot() {
    let Some(shells) = shells("names_come_from_the_typed_sysroot") else {
        return;
    };
    let tree = crate::scratch::scratch("completion-sysroot");
    let pmu = tree.join("sys/bus/event_source/devices/cxl_pmu_mem7.0/events");
    std::fs::create_dir_all(&pmu).unwrap();
    std::fs::write(pmu.join("tree_only_event"), "").unwrap();
    std::fs::create_dir_all(tree.join("sys/block/vdtree")).unwrap();
    let root = tree.to_str().unwrap();
    let with_equals = format!("--sysroot={root}");
    for shell in shells {
        for before in [vec!["--sysroot", root], vec![with_equals.as_str()]] {
            let line = |rest: &[&'static str]| -> Vec<String> {
                let program = [rest[0]];
                let words: Vec<&str> = [&program[..], &before[..], &rest[1..]].concat();
                complete(None, shell, rest[0], &words)
            };
            assert_eq!(
                line(&["cxlstat", "--pmu", ""]),
                ["cxl_pmu_mem7.0"],
                "{shell}"
            );
            assert_eq!(line(&["cxlstat", "-e", ""]), ["tree_only_event"], "{shell}");
            let mut devices = line(&["iostat-rs", "-x", ""]);
            devices.retain(|word| !word.starts_with('-'));
            assert_eq!(devices, ["vdtree", "ALL"], "{shell}");
        }
    }
}
