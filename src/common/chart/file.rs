//! Writing a chart so that a reader (a browser reloading it) sees the old
//! file or the new one, never a part: a temporary file in the same
//! directory, renamed over the target.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Replaces `path` with `contents` atomically. The error names the file.
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), String> {
    let temp = temp_path(path);
    let result = (|| -> io::Result<()> {
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&temp)?;
        file.write_all(contents)?;
        fs::rename(&temp, path)
    })();
    result.map_err(|err| {
        let _ = fs::remove_file(&temp);
        format!("--svg {}: cannot write: {err}", path.display())
    })
}

/// `.NAME.PID.tmp` beside `path`.
fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "chart.svg".to_string());
    path.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temporary_behind() {
        let dir = std::env::temp_dir().join(format!("hwstat-chart-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.svg");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unwritable_place_is_named() {
        let err = write_atomic(Path::new("/nonexistent-dir/x.svg"), b"x").unwrap_err();
        assert!(
            err.starts_with("--svg /nonexistent-dir/x.svg: cannot write:"),
            "{err}"
        );
    }
}
