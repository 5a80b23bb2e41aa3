//! man/ and completions/ are generated from the CLI definitions; this test
//! regenerates them and fails if the checked-in files differ.
//!
//! After changing a command line, run
//! `HWSTAT_BLESS=1 cargo test --test generated_docs` and commit the result.

use std::path::{Path, PathBuf};

use clap::Command;
use clap_complete::Shell;

/// Every binary and the function that builds its command line.
fn tools() -> Vec<Command> {
    vec![
        hwstat::iostat::cli::command(),
        hwstat::vcpustat::cli::command(),
        hwstat::cxlstat::cli::command(),
    ]
}

/// The man pages of a command and of each of its subcommands (`vcpustat-trace.1`).
fn man_pages(cmd: &Command, prefix: &str, pages: &mut Vec<(PathBuf, Vec<u8>)>) {
    let name = if prefix.is_empty() {
        cmd.get_name().to_string()
    } else {
        format!("{prefix}-{}", cmd.get_name())
    };
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .title(name.clone())
        .render(&mut page)
        .expect("rendering into memory cannot fail");
    pages.push((PathBuf::from(format!("man/{name}.1")), page));
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        man_pages(sub, &name, pages);
    }
}

fn generated() -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    for cmd in tools() {
        let mut cmd = cmd;
        cmd.build();
        man_pages(&cmd, "", &mut files);
        let name = cmd.get_name().to_string();
        for (shell, file) in [
            (Shell::Bash, format!("completions/{name}.bash")),
            (Shell::Zsh, format!("completions/_{name}")),
            (Shell::Fish, format!("completions/{name}.fish")),
        ] {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd, &name, &mut script);
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
        "out of date (run HWSTAT_BLESS=1 cargo test --test generated_docs): {stale:?}"
    );
}
