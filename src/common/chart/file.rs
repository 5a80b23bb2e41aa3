//! A tool's chart file (`--svg FILE`) over a run: a live run rewrites it
//! after each report charted, so that a browser reloading it follows the
//! run; a replay writes it once, at the end; a run that charted no report
//! writes none, and says so. Each write replaces the file so that a reader
//! sees the old file or the new one, never a part: a temporary file in the
//! same directory, renamed over the target.

use std::cell::Cell;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::{Chart, render};
use crate::common::temp_file::{self, Readers};

/// Where a run's charts go, and whether they are written after each report
/// (a live run) or once at its end (a replay).
#[derive(Debug)]
pub struct ChartFile {
    path: PathBuf,
    live: bool,
    /// Whether a report was charted. Set through `&self`, so that the
    /// closure drawing the charts may borrow the struct holding this file.
    charted: Cell<bool>,
}

impl ChartFile {
    /// The charts of a run written to `path`: after each report when
    /// `live`, else once by [`ChartFile::finish`].
    pub fn new(path: PathBuf, live: bool) -> ChartFile {
        ChartFile {
            path,
            live,
            charted: Cell::new(false),
        }
    }

    /// Notes a report added to the charts that `draw` makes; live, draws
    /// them and replaces the file.
    pub fn report(&self, draw: impl FnOnce() -> Chart) -> Result<(), String> {
        self.charted.set(true);
        if self.live {
            self.write(&draw())
        } else {
            Ok(())
        }
    }

    /// Ends the run: a replay's charts drawn and written (a live run wrote
    /// them at its last report). A run that charted no report writes no
    /// file, an empty chart, and fails with a message saying why.
    pub fn finish(&self, draw: impl FnOnce() -> Chart) -> Result<(), String> {
        if !self.charted.get() {
            return Err(format!(
                "--svg {}: no chart written: the run ended before the end of its first \
                 interval, where the charts start",
                crate::common::escape::path(&self.path)
            ));
        }
        if self.live {
            Ok(())
        } else {
            self.write(&draw())
        }
    }

    fn write(&self, chart: &Chart) -> Result<(), String> {
        write_atomic(&self.path, render(chart)?.as_bytes())
    }
}

/// Replaces `path` with `contents` atomically, a new file readable by its
/// owner alone (a chart shows what the run read, which may be root's
/// alone). The error names the option and the file, in the words of the
/// tools' other outputs ("cannot write output: --textfile FILE: ...").
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), String> {
    temp_file::replace_with(path, Readers::Owner, |file| file.write_all(contents)).map_err(|err| {
        format!(
            "cannot write output: --svg {}: {err}",
            crate::common::escape::path(path)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::scratch::Scratch;
    use std::fs;

    /// A test's own empty directory, removed when the test ends, also
    /// when it fails.
    fn dir(name: &str) -> Scratch {
        crate::common::scratch::scratch(&format!("chart-{name}"))
    }

    fn titled(title: &str) -> Chart {
        Chart {
            title: title.into(),
            panels: Vec::new(),
        }
    }

    /// The chart's title, as the file holds it.
    fn title_in(path: &Path) -> String {
        let svg = fs::read_to_string(path).unwrap();
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let text = doc.descendants().find(|n| n.has_tag_name("text")).unwrap();
        text.text().unwrap().trim().to_string()
    }

    #[test]
    fn replaces_the_file_and_leaves_no_temporary_behind() {
        let dir = dir("atomic");
        let path = dir.join("a.svg");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
    }

    #[test]
    fn a_new_chart_is_for_its_owner_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = dir("mode");
        let path = dir.join("a.svg");
        write_atomic(&path, b"<svg/>").unwrap();
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn an_unwritable_place_is_named() {
        let err = write_atomic(Path::new("/nonexistent-dir/x.svg"), b"x").unwrap_err();
        assert!(
            err.starts_with("cannot write output: --svg /nonexistent-dir/x.svg: "),
            "{err}"
        );
    }

    #[test]
    fn a_live_run_rewrites_the_file_after_each_report() {
        let dir = dir("live");
        let path = dir.join("live.svg");
        let file = ChartFile::new(path.clone(), true);
        file.report(|| titled("first")).unwrap();
        assert_eq!(title_in(&path), "first");
        file.report(|| titled("second")).unwrap();
        assert_eq!(title_in(&path), "second");
        file.finish(|| panic!("a live run's file is written already"))
            .unwrap();
        assert_eq!(title_in(&path), "second");
    }

    #[test]
    fn a_replay_writes_the_file_once_at_the_end() {
        let dir = dir("replay");
        let path = dir.join("replay.svg");
        let file = ChartFile::new(path.clone(), false);
        file.report(|| panic!("a replay draws at its end only"))
            .unwrap();
        file.report(|| panic!("a replay draws at its end only"))
            .unwrap();
        assert!(!path.exists());
        file.finish(|| titled("the whole replay")).unwrap();
        assert_eq!(title_in(&path), "the whole replay");
    }

    #[test]
    fn a_run_that_charted_no_report_writes_nothing_and_says_why() {
        let dir = dir("none");
        let path = dir.join("none.svg");
        for live in [true, false] {
            let file = ChartFile::new(path.clone(), live);
            let err = file.finish(|| titled("nothing")).unwrap_err();
            assert_eq!(
                err,
                format!(
                    "--svg {}: no chart written: the run ended before the end of its first \
                     interval, where the charts start",
                    path.display()
                )
            );
            assert!(!path.exists(), "live: {live}");
        }
    }
}
