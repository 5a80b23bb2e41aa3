//! The parts of a program's manual that clap does not describe: what the
//! columns mean, exit statuses, environment, files, examples.
//!
//! Each tool writes its [`Section`]s once; they are shown at the end of
//! `--help` ([`help_text`]) and become sections of the man page (the
//! generator in `tests/suite/generated_docs.rs`), so the two cannot drift.

/// One section of a manual.
#[derive(Debug, Clone, Copy)]
pub struct Section {
    /// The heading, in capitals as man pages have it (`EXIT STATUS`).
    pub title: &'static str,
    /// An optional paragraph before the items.
    pub text: &'static str,
    /// Terms and their explanations (a column and its meaning, a status and
    /// when it is given, an example command and what it does).
    pub items: &'static [(&'static str, &'static str)],
}

/// The mode of the files a run creates (the rule of
/// [`super::user_file::OWNER_ONLY`]), as the FILES sections begin it.
macro_rules! owner_only {
    ($what:literal, $kept:literal) => {
        concat!(
            "created readable and writable by their owner alone (mode 0600, as perf creates \
             perf.data), whatever the umask: a run may read what only root may read, and ",
            $what,
            " (chmod one to share it). A file that exists keeps its mode: ",
            $kept
        )
    };
}

/// What the FILES sections say of the files a run creates with `--record`
/// and `--svg`.
pub const OWNER_ONLY_FILES: &str = owner_only!(
    "they hold it",
    "a recording is written into it, and a chart replacing a file of this user's takes its mode"
);

/// What `vcpustat trace record`'s FILES section says of `-w` and `--record`.
pub const OWNER_ONLY_RECORDINGS: &str =
    owner_only!("they hold it", "a recording is written into it");

/// What `vcpustat trace report`'s FILES section says of `--svg`.
pub const OWNER_ONLY_CHARTS: &str = owner_only!(
    "the charts show it",
    "a chart replacing a file of this user's takes its mode"
);

/// The FILES item of `--textfile`, the one file created for every reader.
pub const TEXTFILE_ITEM: (&str, &str) = (
    "--textfile PATH",
    "created mode 0644 whatever the umask, for node_exporter's textfile collector, which \
     runs as another user: it is published, as --listen serves the same exposition to \
     whoever connects. A file of this user's there keeps its mode (0640 and a group the \
     collector is in narrow it)",
);

/// The sections as plain text for the end of `--help`: each heading with
/// its first letter capitalised, the paragraph, then each term on its own
/// line followed by its explanation indented below it.
pub fn help_text(sections: &[Section]) -> String {
    let mut out = String::new();
    for section in sections {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&heading(section.title));
        out.push_str(":\n");
        if !section.text.is_empty() {
            for line in wrap(section.text, 78) {
                out.push_str("  ");
                out.push_str(&line);
                out.push('\n');
            }
        }
        for (term, meaning) in section.items {
            out.push_str("  ");
            out.push_str(term);
            out.push('\n');
            for line in wrap(meaning, 74) {
                out.push_str("      ");
                out.push_str(&line);
                out.push('\n');
            }
        }
    }
    out
}

/// The end of `--help`: the short help's notes, then the sections.
pub fn long_help(after_help: &str, sections: &[Section]) -> String {
    format!("{after_help}\n\n{}", help_text(sections))
}

/// `EXIT STATUS` → `Exit status`.
fn heading(title: &str) -> String {
    let lower = title.to_lowercase();
    let mut chars = lower.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Splits `text` into lines of at most `width` characters at spaces (a
/// longer word stands alone).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_text_has_headings_terms_and_wrapped_explanations() {
        let sections = [
            Section {
                title: "EXIT STATUS",
                text: "",
                items: &[("0", "Success."), ("1", "An error.")],
            },
            Section {
                title: "ENVIRONMENT",
                text: "Read at start.",
                items: &[(
                    "S_COLORS",
                    "When to use colours: never, always, or auto for a terminal; \
                     the default is auto, and any other value is like auto too.",
                )],
            },
        ];
        assert_eq!(
            help_text(&sections),
            "Exit status:\n  0\n      Success.\n  1\n      An error.\n\n\
             Environment:\n  Read at start.\n  S_COLORS\n      \
             When to use colours: never, always, or auto for a terminal; the default is\n      \
             auto, and any other value is like auto too.\n"
        );
    }
}
