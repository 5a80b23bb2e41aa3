//! man/ and completions/ are generated from the CLI definitions and the
//! manual sections of each tool (`src/*/manual.rs`); this test regenerates
//! them and fails if the checked-in files differ, and checks every page with
//! `groff -ww -man -z` (no warning allowed).
//!
//! After changing a command line or a manual section, run
//! `HWSTAT_BLESS=1 cargo test --test suite generated_docs` and commit the result.

use crate::skip;

use std::path::{Path, PathBuf};
use std::process::Command as Process;

use clap::Command;
use hwstat::common::completion;
use hwstat::common::manual::Section;

/// The date in the pages' `.TH` line: the date of the last change to the
/// pages' content. Bump it when blessing changed pages.
const PAGES_DATE: &str = "2026-12-06";

/// Every binary, the function that builds its command line, and the manual
/// sections of its main page.
fn tools() -> Vec<(Command, &'static [Section])> {
    vec![
        (
            hwstat::iostat::cli::command(),
            hwstat::iostat::manual::SECTIONS,
        ),
        (
            hwstat::vcpustat::cli::command(),
            hwstat::vcpustat::manual::SECTIONS,
        ),
        (
            hwstat::cxlstat::cli::command(),
            hwstat::cxlstat::manual::SECTIONS,
        ),
    ]
}

/// The manual sections of a subcommand's page (`vcpustat-trace-record`).
fn subcommand_sections(page: &str) -> &'static [Section] {
    match page {
        "vcpustat-trace-record" => hwstat::vcpustat::trace::manual::RECORD,
        "vcpustat-trace-report" => hwstat::vcpustat::trace::manual::REPORT,
        _ => &[],
    }
}

/// Text escaped for roff: backslashes and hyphens, and a leading `.` or `'`
/// that would start a request.
fn roff_text(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    if escaped.starts_with(['.', '\'']) {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

/// Notes (a command's short after-help) as roff: a block of plain lines is a
/// filled paragraph; a block with indented lines (examples, column lists)
/// keeps its lines as they are.
fn roff_notes(text: &str) -> String {
    let mut out = String::from(".SH NOTES\n");
    for block in text.split("\n\n") {
        if block.lines().any(|l| l.starts_with(' ')) {
            out.push_str(".PP\n.nf\n");
            for line in block.lines() {
                out.push_str(&roff_text(line));
                out.push('\n');
            }
            out.push_str(".fi\n");
        } else {
            out.push_str(&format!(".PP\n{}\n", roff_text(&block.replace('\n', " "))));
        }
    }
    out
}

fn roff_sections(sections: &[Section]) -> String {
    let mut out = String::new();
    for section in sections {
        out.push_str(&format!(".SH \"{}\"\n", section.title));
        if !section.text.is_empty() {
            out.push_str(&format!(".PP\n{}\n", roff_text(section.text)));
        }
        for (term, meaning) in section.items {
            out.push_str(&format!(
                ".TP\n\\fB{}\\fR\n{}\n",
                roff_text(term),
                roff_text(meaning)
            ));
        }
    }
    out
}

/// clap_mangen writes a string-definition preamble before every piece it
/// renders; the page needs it once.
fn without_preamble(piece: Vec<u8>) -> String {
    let text = String::from_utf8(piece).expect("roff is UTF-8");
    text.lines()
        .filter(|l| !l.starts_with(".ie \\n(.g .ds Aq") && !l.starts_with(".el .ds Aq"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// The man page of `cmd` (named `name`), with `sections` after the options.
fn man_page(cmd: &Command, name: &str, sections: &[Section]) -> Vec<u8> {
    let man = clap_mangen::Man::new(without_help_subcommand(cmd))
        .title(name)
        .section("1")
        .date(PAGES_DATE)
        .source(format!("hwstat {}", env!("CARGO_PKG_VERSION")))
        .manual("User Commands");
    let render = |f: &dyn Fn(&clap_mangen::Man, &mut Vec<u8>) -> std::io::Result<()>| {
        let mut piece = Vec::new();
        f(&man, &mut piece).expect("rendering into memory cannot fail");
        piece
    };
    let mut page = String::from_utf8(render(&|m, w| m.render_title(w))).unwrap();
    page += &without_preamble(render(&|m, w| m.render_name_section(w)));
    // iostat-rs's is sysstat's usage line, which its command sets (clap
    // keeps an overridden usage to itself, and clap_mangen renders it).
    page += &if name == "iostat-rs" {
        without_preamble(render(&|m, w| m.render_synopsis_section(w)))
    } else {
        roff_synopsis(cmd)
    };
    page += &without_preamble(render(&|m, w| m.render_description_section(w)));
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        page += &without_preamble(render(&|m, w| m.render_options_section(w)));
    }
    if cmd.get_subcommands().any(|s| s.get_name() != "help") {
        page += &without_preamble(render(&|m, w| m.render_subcommands_section(w)));
    }
    if let Some(notes) = cmd.get_after_help() {
        page += &roff_notes(&notes.to_string());
    }
    page += &roff_sections(sections);
    page.into_bytes()
}

/// The SYNOPSIS of `cmd`: its options with the values they take, its
/// operands, and a line for each subcommand. clap_mangen's leaves the
/// values out (`[--freq]` for `--freq HZ`), shows an operand of several
/// values as one (`<FILE>` for `FILE...`) and the command after `--` as an
/// operand (`[CMD]`).
fn roff_synopsis(cmd: &Command) -> String {
    let name = cmd.get_bin_name().unwrap_or(cmd.get_name());
    let mut words = vec![format!("\\fB{}\\fR", roff_text(name))];
    // The options first, then the operands, as the help lists them.
    let (operands, options): (Vec<_>, Vec<_>) = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set())
        .partition(|a| a.is_positional());
    for arg in options.into_iter().chain(operands) {
        let values = arg.get_num_args().unwrap_or_default();
        let value = arg
            .get_value_names()
            .map(|names| names.join(" "))
            .unwrap_or_else(|| arg.get_id().to_string().to_uppercase());
        let value = format!("\\fI{}\\fR", roff_text(&value));
        let several = values.max_values() > 1;
        let word = if arg.is_positional() {
            let value = if several {
                format!("{value}...")
            } else {
                value
            };
            if arg.is_last_set() {
                format!("[\\fB\\-\\-\\fR\\ {value}]")
            } else if arg.is_required_set() {
                value
            } else {
                format!("[{value}]")
            }
        } else {
            let flag = match (arg.get_short(), arg.get_long()) {
                (Some(short), Some(long)) => format!(
                    "\\fB\\-{}\\fR|\\fB\\-\\-{}\\fR",
                    roff_text(&short.to_string()),
                    roff_text(long)
                ),
                (Some(short), None) => format!("\\fB\\-{}\\fR", roff_text(&short.to_string())),
                (None, Some(long)) => format!("\\fB\\-\\-{}\\fR", roff_text(long)),
                (None, None) => continue,
            };
            let with_value = if !values.takes_values() {
                flag
            } else if arg.is_require_equals_set() {
                format!("{flag}={value}")
            } else if values.min_values() == 0 {
                format!("{flag}\\ [{value}]")
            } else {
                format!("{flag}\\ {value}")
            };
            if arg.is_required_set() {
                with_value
            } else {
                format!("[{with_value}]")
            }
        };
        words.push(word);
    }
    // Not hyphenated, and an option kept with its value (`\\ `): split at
    // a line's end, they read as two.
    let mut out = format!(".SH SYNOPSIS\n.nh\n{}\n", words.join(" "));
    for sub in cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        let sub_name = sub.get_bin_name().unwrap_or(sub.get_name());
        out += &format!(".br\n\\fB{}\\fR ...\n", roff_text(sub_name));
    }
    out + ".hy\n"
}

/// `cmd` with clap's `help` subcommand hidden: a page lists only the
/// subcommands that have a page of their own (no `vcpustat-help(1)`).
fn without_help_subcommand(cmd: &Command) -> Command {
    let cmd = cmd.clone();
    if cmd.find_subcommand("help").is_some() {
        cmd.mut_subcommand("help", |help| help.hide(true))
    } else {
        cmd
    }
}

/// The man pages of a command and of each of its subcommands (`vcpustat-trace.1`).
fn man_pages(
    cmd: &Command,
    prefix: &str,
    sections: &[Section],
    pages: &mut Vec<(PathBuf, Vec<u8>)>,
) {
    let name = if prefix.is_empty() {
        cmd.get_name().to_string()
    } else {
        format!("{prefix}-{}", cmd.get_name())
    };
    pages.push((
        PathBuf::from(format!("man/{name}.1")),
        man_page(cmd, &name, sections),
    ));
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let sub_name = format!("{name}-{}", sub.get_name());
        man_pages(sub, &name, subcommand_sections(&sub_name), pages);
    }
}

/// Ends each subcommand's page (all of `pages`, a tool's, but the first,
/// the tool's own, whose SEE ALSO its manual sections give) with a SEE
/// ALSO naming the tool's other pages.
fn see_also_between(pages: &mut [(PathBuf, Vec<u8>)]) {
    let names: Vec<String> = pages
        .iter()
        .map(|(path, _)| path.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    for (i, (_, page)) in pages.iter_mut().enumerate().skip(1) {
        let others: Vec<String> = names
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, name)| format!("{}(1)", roff_text(name)))
            .collect();
        page.extend_from_slice(
            format!(".SH \"SEE ALSO\"\n.PP\n{}\n", others.join(", ")).as_bytes(),
        );
    }
}

fn generated() -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    for (mut cmd, sections) in tools() {
        cmd.build();
        let first = files.len();
        man_pages(&cmd, "", sections, &mut files);
        see_also_between(&mut files[first..]);
        let name = cmd.get_name().to_string();
        for (shell, file) in completion::script_files(&name) {
            let script = completion::script(shell, &name).expect("a supported shell");
            files.push((PathBuf::from(file), script));
        }
    }
    files
}

#[test]
fn man_pages_and_completions_match_the_cli_definitions() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bless = std::env::var_os("HWSTAT_BLESS").is_some();
    let mut stale = Vec::new();
    for (path, content) in generated() {
        let full = root.join(&path);
        if bless {
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(&full, &content).unwrap();
        } else if std::fs::read(&full).ok().as_deref() != Some(&content[..]) {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "out of date (run HWSTAT_BLESS=1 cargo test --test suite generated_docs): {stale:?}"
    );
}

/// Every command and subcommand of `command`, itself first.
fn with_subcommands(command: &Command) -> Vec<&Command> {
    let mut all = vec![command];
    for sub in command.get_subcommands() {
        all.extend(with_subcommands(sub));
    }
    all
}

/// The options the tools share are one option wherever they appear (the
/// three tools, `vcpustat trace record`): the same value name and the same
/// help in `--help`, the man pages and the completions. iostat-rs, whose
/// command line is built by hand, worded four of them differently.
/// (`vcpustat trace report --svg` draws recordings, not a run: another
/// option of the same name; `vcpustat trace record --record` keeps the
/// files read beside a trace that is no report, and says so.)
#[test]
fn shared_options_read_the_same_in_every_tool() {
    let commands: Vec<Command> = tools().into_iter().map(|(c, _)| c).collect();
    for long in ["sysroot", "record", "replay", "svg", "textfile", "listen"] {
        let mut seen: Vec<(String, String, String)> = Vec::new();
        for command in commands.iter().flat_map(with_subcommands) {
            if matches!(
                (command.get_name(), long),
                ("report", "svg") | ("record", "record")
            ) {
                continue;
            }
            let Some(arg) = command.get_arguments().find(|a| a.get_long() == Some(long)) else {
                continue;
            };
            let names: Vec<String> = arg
                .get_value_names()
                .unwrap_or_default()
                .iter()
                .map(ToString::to_string)
                .collect();
            let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
            seen.push((command.get_name().to_string(), names.join(" "), help));
        }
        assert!(seen.len() >= 2, "--{long}: in {seen:?}");
        for (name, value, help) in &seen[1..] {
            assert_eq!(
                (value, help),
                (&seen[0].1, &seen[0].2),
                "--{long} of {name} and of {}",
                seen[0].0
            );
        }
    }
}

/// Each EXIT STATUS gives the status of a recording `--replay` cannot read
/// (1 in the three tools): vcpustat's named only kernel files, and
/// cxlstat's files in general.
#[test]
fn every_exit_status_section_places_an_unreadable_recording() {
    for (command, sections) in tools() {
        let exit = sections
            .iter()
            .find(|s| s.title == "EXIT STATUS")
            .unwrap_or_else(|| panic!("{} has no EXIT STATUS", command.get_name()));
        let (_, one) = exit
            .items
            .iter()
            .find(|(status, _)| *status == "1")
            .unwrap();
        assert!(one.contains("recording"), "{}: {one}", command.get_name());
    }
}

/// Each tool with `--svg` draws its charts' time axis in local time
/// (`TZ` moves it), so its ENVIRONMENT names `TZ`: cxlstat's section,
/// added without it, named only PATH and the locale variables.
#[test]
fn every_environment_section_of_a_tool_with_charts_names_tz() {
    for (command, sections) in tools() {
        if !command.get_arguments().any(|a| a.get_long() == Some("svg")) {
            continue;
        }
        let environment = sections
            .iter()
            .find(|s| s.title == "ENVIRONMENT")
            .unwrap_or_else(|| panic!("{} has no ENVIRONMENT", command.get_name()));
        assert!(
            environment
                .items
                .iter()
                .any(|(names, _)| names.split(", ").any(|name| name == "TZ")),
            "{}: {:?}",
            command.get_name(),
            environment.items
        );
    }
}

/// Every page of a command that runs (not a group of subcommands, as
/// `vcpustat trace` is) says what its exit statuses mean: `vcpustat trace
/// record`'s and `report`'s pages had none, though they exit 0, 1, 2 or 4.
#[test]
fn every_page_of_a_command_that_runs_has_an_exit_status() {
    let pages = generated();
    for (path, page) in &pages {
        if path.extension().is_none_or(|e| e != "1") {
            continue;
        }
        let page = String::from_utf8_lossy(page);
        if path.ends_with("vcpustat-trace.1") {
            continue;
        }
        assert!(
            page.contains(".SH \"EXIT STATUS\""),
            "{} has no EXIT STATUS",
            path.display()
        );
    }
    assert!(
        pages
            .iter()
            .any(|(p, _)| p.ends_with("vcpustat-trace-record.1"))
    );
}

/// A subcommand's page leads to the other pages of its tool: `man
/// vcpustat-trace-record` had no SEE ALSO, so no way back to vcpustat(1).
#[test]
fn every_subcommand_page_names_the_other_pages_of_its_tool() {
    let pages = generated();
    for (page, see_also) in [
        (
            "man/vcpustat-trace.1",
            "vcpustat(1), vcpustat\\-trace\\-record(1), vcpustat\\-trace\\-report(1)",
        ),
        (
            "man/vcpustat-trace-record.1",
            "vcpustat(1), vcpustat\\-trace(1), vcpustat\\-trace\\-report(1)",
        ),
        (
            "man/vcpustat-trace-report.1",
            "vcpustat(1), vcpustat\\-trace(1), vcpustat\\-trace\\-record(1)",
        ),
    ] {
        let (_, text) = pages.iter().find(|(p, _)| p == Path::new(page)).unwrap();
        let text = String::from_utf8_lossy(text);
        assert!(
            text.ends_with(&format!(".SH \"SEE ALSO\"\n.PP\n{see_also}\n")),
            "{page}: {text}"
        );
    }
}

#[test]
fn every_page_a_man_page_names_as_a_subcommand_exists() {
    let pages = generated();
    let names: Vec<String> = pages
        .iter()
        .filter_map(|(p, _)| p.strip_prefix("man").ok())
        .map(|p| p.display().to_string())
        .collect();
    for (path, page) in pages.iter().filter(|(p, _)| p.starts_with("man")) {
        let page = String::from_utf8_lossy(page);
        let Some(subcommands) = page.split(".SH SUBCOMMANDS\n").nth(1) else {
            continue;
        };
        let section = subcommands.split(".SH ").next().unwrap();
        for line in section.lines().filter(|l| l.ends_with("(1)")) {
            let name = format!("{}.1", line.trim_end_matches("(1)").replace("\\-", "-"));
            assert!(
                names.contains(&name),
                "{}: names {line} but man/ has no {name}",
                path.display()
            );
        }
    }
}

#[test]
fn every_man_page_has_the_standard_sections_and_passes_groff_warnings() {
    let pages: Vec<(PathBuf, Vec<u8>)> = generated()
        .into_iter()
        .filter(|(p, _)| p.starts_with("man"))
        .collect();
    for main in ["man/iostat-rs.1", "man/vcpustat.1", "man/cxlstat.1"] {
        let (_, page) = pages.iter().find(|(p, _)| p == Path::new(main)).unwrap();
        let page = String::from_utf8_lossy(page);
        for section in [
            "NAME",
            "SYNOPSIS",
            "DESCRIPTION",
            "OPTIONS",
            "\"EXIT STATUS\"",
            "\"ENVIRONMENT\"",
            "\"FILES\"",
            "\"PRIVILEGE\"",
            "\"EXAMPLES\"",
            "\"SEE ALSO\"",
        ] {
            assert!(
                page.contains(&format!(".SH {section}\n")),
                "{main} has no {section}"
            );
        }
        assert!(
            page.contains(&format!(
                "{PAGES_DATE} \"hwstat {}\"",
                env!("CARGO_PKG_VERSION")
            )),
            "{main}: .TH has no date and version"
        );
    }
    let groff = Process::new("groff").arg("-v").output();
    if groff.is_err() {
        skip::skip(
            "every_man_page_passes_groff_warnings",
            "groff is missing: apt-get install groff-base",
        );
        return;
    }
    let dir = crate::scratch::scratch("man");
    for (path, page) in pages {
        let file = dir.join(path.file_name().unwrap());
        std::fs::write(&file, &page).unwrap();
        let out = Process::new("groff")
            .args(["-ww", "-man", "-z"])
            .arg(&file)
            .env("LC_ALL", "C.UTF-8")
            .output()
            .unwrap();
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "groff -ww -man -z {}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
