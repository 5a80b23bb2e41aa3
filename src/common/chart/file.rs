//! Writing a chart so that a reader (a browser reloading it) sees the old
//! file or the new one, never a part: a temporary file in the same
//! directory, renamed over the target.

use std::io::Write;
use std::path::Path;

use crate::common::temp_file;

/// Replaces `path` with `contents` atomically. The error names the option
/// and the file, in the words of the tools' other outputs ("cannot write
/// output: --textfile FILE: ...").
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), String> {
    temp_file::replace_with(path, 0o666, |file| file.write_all(contents))
        .map_err(|err| format!("cannot write output: --svg {}: {err}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

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
            err.starts_with("cannot write output: --svg /nonexistent-dir/x.svg: "),
            "{err}"
        );
    }
}
