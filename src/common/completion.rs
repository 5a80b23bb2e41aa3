//! Shell completion, answered by the programs themselves.
//!
//! A shell's completion script (in `completions/`, or printed by
//! `COMPLETE=bash iostat-rs`) calls the program back with `COMPLETE=<shell>`
//! and the words typed so far; the program answers from the same clap
//! definition that makes `--help` and the man page, so the three cannot
//! drift, and values known only at completion time (the CXL PMUs and block
//! devices present now, in the tree of a typed `--sysroot` when there is
//! one) complete as well.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use clap::ValueHint;
use clap_complete::engine::ValueCompleter;
use clap_complete::env::{Bash, EnvCompleter, Fish, Zsh};
use clap_complete::{ArgValueCandidates, ArgValueCompleter, CompletionCandidate, PathCompleter};

use crate::common::natural::natural_order;

/// The environment variable that asks a program for completions.
pub const VARIABLE: &str = "COMPLETE";

/// The values of [`VARIABLE`] that ask for completions: the shells whose
/// scripts `completions/` holds. clap_complete answers elvish and
/// powershell too, but nothing here registers them, and the help says any
/// other value is ignored.
const SHELLS: [&str; 3] = ["bash", "fish", "zsh"];

/// [`VARIABLE`]'s entry in each program's ENVIRONMENT section.
pub const ENVIRONMENT_ITEM: (&str, &str) = (
    VARIABLE,
    "bash, zsh or fish, as the completion scripts set it: the program prints the \
     completions of the command line that follows and exits, running nothing else. \
     Any other value (COMPLETE=1, exported for something else) is ignored",
);

/// Answers a completion request and exits when the shell made one (the
/// `COMPLETE` variable names a shell); returns at once otherwise. Call it
/// first in `main`, before anything is written to standard output.
pub fn answer_if_asked(command: fn() -> clap::Command) {
    // clap_complete reads the working directory before it looks at the
    // variable: look first, so an ordinary run pays nothing for completion.
    // Only a shell's name asks: clap_complete takes any other value but
    // `0` for a shell it does not know, and fails the run, so a variable
    // of so common a name, exported for another program, stopped every
    // run with status 2.
    if let Some(shell) =
        std::env::var_os(VARIABLE).filter(|value| SHELLS.iter().any(|shell| value == *shell))
    {
        complete(command, shell == "bash");
    }
}

/// Answers the shell and exits. Out of line, away from the code every run
/// executes.
#[cold]
#[inline(never)]
fn complete(command: fn() -> clap::Command, bash: bool) {
    let factory = move || {
        let command = with_values_after_equals(command());
        if bash {
            with_plain_paths(command)
        } else {
            command
        }
    };
    clap_complete::CompleteEnv::with_factory(factory)
        .var(VARIABLE)
        .complete();
}

/// `command` with each option whose value must follow `=` (iostat-rs's
/// `--dec=N`, as sysstat takes it) made a flag that still completes
/// `--dec=N`: clap_complete ignores `require_equals`, and offered values
/// after `--dec ` (a space), which the program then refuses.
fn with_values_after_equals(command: clap::Command) -> clap::Command {
    command
        .mut_args(|arg| {
            if !arg.is_require_equals_set() {
                return arg;
            }
            let values: Vec<(String, Option<clap::builder::StyledStr>)> = arg
                .get_possible_values()
                .iter()
                .map(|v| (v.get_name().to_string(), v.get_help().cloned()))
                .collect();
            let candidates = move || {
                values
                    .iter()
                    .map(|(name, help)| CompletionCandidate::new(name).help(help.clone()))
                    .collect::<Vec<_>>()
            };
            arg.require_equals(false)
                .num_args(0)
                .action(clap::ArgAction::SetTrue)
                .value_parser(clap::value_parser!(bool))
                .add(ArgValueCandidates::new(candidates))
        })
        .mut_subcommands(with_values_after_equals)
}

/// `command` with every path-valued option (and those of its subcommands)
/// completed by [`PlainPaths`] instead of clap_complete's own path
/// completion: what bash is given.
fn with_plain_paths(command: clap::Command) -> clap::Command {
    command
        .mut_args(|arg| {
            let paths = match arg.get_value_hint() {
                ValueHint::FilePath => PathCompleter::file(),
                ValueHint::DirPath => PathCompleter::dir(),
                ValueHint::AnyPath => PathCompleter::any(),
                _ => return arg,
            };
            arg.add(ArgValueCompleter::new(PlainPaths(paths)))
        })
        .mut_subcommands(with_plain_paths)
}

/// Paths as clap_complete completes them, less those bash could misread
/// ([`is_plain_path`]). bash's script (clap_complete's) takes the candidates
/// from an unquoted `$(...)`, which expands `*`, `?` and `[` in them, and
/// inserts them as they are, so a directory named `$(touch x)` in a path
/// being completed became a command run at Enter; zsh and fish quote what
/// they insert. The names come from whoever can write the directories
/// completed (`/tmp`), and a completion must never inject text into the
/// command line.
struct PlainPaths(PathCompleter);

impl ValueCompleter for PlainPaths {
    fn complete(&self, current: &OsStr) -> Vec<CompletionCandidate> {
        let mut candidates = self.0.complete(current);
        candidates.retain(|c| c.get_value().to_str().is_some_and(is_plain_path));
        candidates
    }
}

/// Whether bash reads `path`, unquoted, as itself: letters and digits (of
/// any script) and `/._-+,:@%=` only, after a leading `~/` or `~user/`,
/// which the user typed and bash expands as they meant it.
fn is_plain_path(path: &str) -> bool {
    let plain = |text: &str| {
        text.chars()
            .all(|c| c.is_alphanumeric() || "/._-+,:@%=".contains(c))
    };
    match path.strip_prefix('~') {
        Some(rest) => match rest.split_once('/') {
            Some((user, rest)) => plain(user) && plain(rest),
            None => false,
        },
        None => plain(path),
    }
}

/// The shells whose completion scripts are generated into `completions/`:
/// the shell, and the file name for program `name`.
pub fn script_files(name: &str) -> [(&'static str, String); 3] {
    [
        ("bash", format!("completions/{name}.bash")),
        ("zsh", format!("completions/_{name}")),
        ("fish", format!("completions/{name}.fish")),
    ]
}

/// The completion script of `shell` (`bash`, `zsh` or `fish`) for program
/// `name`, which the shell finds on `PATH`.
pub fn script(shell: &str, name: &str) -> std::io::Result<Vec<u8>> {
    let completer: &dyn EnvCompleter = match shell {
        "bash" => &Bash,
        "zsh" => &Zsh,
        "fish" => &Fish,
        other => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("no completion script for shell {other:?}"),
            ));
        }
    };
    let mut script = Vec::new();
    completer.write_registration(VARIABLE, name, name, name, &mut script)?;
    Ok(script)
}

/// The `--sysroot` of the command line being completed, so that the names
/// offered are those of the tree the run will read: the last one given
/// before the words end or `--` ends the options. `args` are the program's
/// own, as the scripts call it (`PROGRAM -- PROGRAM WORD... CURRENT`). A
/// leading `~/` is the home directory: the shells pass the words as typed.
fn typed_sysroot(args: impl Iterator<Item = OsString>) -> Option<PathBuf> {
    let mut words = args.skip_while(|word| word != "--").skip(2);
    let mut root = None;
    while let Some(word) = words.next() {
        if word == "--" {
            break;
        } else if word == "--sysroot" {
            root = words.next();
        } else if let Some(value) = word.to_str().and_then(|w| w.strip_prefix("--sysroot=")) {
            root = Some(value.into());
        }
    }
    let root = PathBuf::from(root?);
    match (root.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => Some(PathBuf::from(home).join(rest)),
        _ => Some(root),
    }
}

/// Candidates from the entries of a directory of the live system (`dir`,
/// absolute), or of the tree a typed `--sysroot` names, whose names start
/// with `prefix`, in [`natural_order`] as the listings show them (bash keeps
/// the order). Names a shell could misread (anything beyond letters,
/// digits and `._:-`) are left out: they come from the kernel, and a
/// completion must never inject text into the command line.
pub fn directory_candidates(dir: &str, prefix: &str) -> Vec<CompletionCandidate> {
    let dir = match typed_sysroot(std::env::args_os()) {
        Some(root) => root.join(dir.trim_start_matches('/')),
        None => PathBuf::from(dir),
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| {
            name.starts_with(prefix)
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b))
        })
        .collect();
    names.sort_by(|a, b| natural_order(a, b));
    names.into_iter().map(CompletionCandidate::new).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directory_candidates_keep_plain_names_only() {
        let dir = crate::common::scratch::scratch("completion");
        for name in [
            "cxl_pmu_mem10.0",
            "cxl_pmu_mem1.0",
            "cxl_pmu_mem2.0",
            "cpu",
            "cxl_pmu_$(x)",
            "cxl_pmu_a\nb",
        ] {
            std::fs::create_dir_all(dir.join(name)).unwrap();
        }
        let found: Vec<String> = directory_candidates(dir.to_str().unwrap(), "cxl_pmu_")
            .iter()
            .map(|c| c.get_value().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            found,
            ["cxl_pmu_mem1.0", "cxl_pmu_mem2.0", "cxl_pmu_mem10.0"]
        );
    }

    #[test]
    fn the_typed_sysroot_is_the_last_before_the_options_end() {
        let typed = |words: &[&str]| {
            typed_sysroot(words.iter().map(OsString::from)).map(|p| p.display().to_string())
        };
        let program = ["cxlstat", "--", "cxlstat"];
        let line = |rest: &[&'static str]| [&program[..], rest].concat();
        assert_eq!(typed(&line(&["-e", ""])), None);
        assert_eq!(
            typed(&line(&["--sysroot", "/t", "-e", ""])).as_deref(),
            Some("/t")
        );
        assert_eq!(
            typed(&line(&["--sysroot=/a", "--sysroot", "b", "-e", ""])).as_deref(),
            Some("b")
        );
        // After `--`, the words are the command's.
        assert_eq!(
            typed(&line(&["-e", "x", "--", "cmd", "--sysroot", "/t", ""])),
            None
        );
        // The program's own name is not a word of the line.
        assert_eq!(typed(&["--sysroot", "--", "--sysroot=/p", ""]), None);
        let home = std::env::var("HOME").unwrap_or_default();
        if !home.is_empty() {
            assert_eq!(
                typed(&line(&["--sysroot", "~/tree", ""])),
                Some(format!("{}/tree", home.trim_end_matches('/')))
            );
        }
        assert_eq!(
            typed(&line(&["--sysroot", "~other/tree", ""])).as_deref(),
            Some("~other/tree")
        );
    }

    #[test]
    fn plain_paths_are_those_bash_reads_as_themselves() {
        for plain in [
            "/tmp/run.rec",
            "dir/ärger-2.rec",
            "a+b,c:d@e%f=g_h.svg",
            "",
            "~/run.rec",
            "~root/run.rec",
        ] {
            assert!(is_plain_path(plain), "{plain}");
        }
        for misread in [
            "/tmp/$(touch x)/",
            "a*b",
            "a?b",
            "[ab]",
            "two words",
            "a;b",
            "a`b`",
            "~root",
            "~/$(x)",
            "a/~b",
            "#c",
            "a!b",
            "a'b",
            "a\"b",
            "a\\b",
            "a\nb",
            "a|b",
            "a&b",
            "a<b>",
            "a{b}",
        ] {
            assert!(!is_plain_path(misread), "{misread}");
        }
    }

    #[test]
    fn scripts_exist_for_the_three_shells_only() {
        for (shell, _) in script_files("iostat-rs") {
            let text = String::from_utf8(script(shell, "iostat-rs").unwrap()).unwrap();
            assert!(
                text.contains("iostat-rs") && text.contains(VARIABLE),
                "{shell}: {text}"
            );
        }
        assert!(script("tcsh", "iostat-rs").is_err());
    }
}
