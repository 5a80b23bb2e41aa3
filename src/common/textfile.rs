//! `--textfile PATH`: one complete exposition replaced atomically, as
//! node_exporter's textfile collector expects. The text is written to a
//! temporary file in the same directory (so the rename stays on one
//! filesystem), synced, made world-readable and renamed over `PATH`: a reader
//! sees the previous exposition or the new one, never a part.

use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::temp_file;

/// Replaces `path` with `text` atomically, readable by every user (the
/// collector may run as another), and synced. On an error the temporary
/// file is removed and `path` is left as it was.
pub fn replace(path: &Path, text: &[u8]) -> io::Result<()> {
    temp_file::replace_with(path, 0o644, |file: &mut File| {
        file.set_permissions(fs::Permissions::from_mode(0o644))?;
        file.write_all(text)?;
        file.sync_all()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_whole_and_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("hwstat-textfile-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("x.prom");
        replace(&path, b"a 1\n").unwrap();
        replace(&path, b"b 2\n").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"b 2\n");
        let names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("x.prom")]);
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_directory_fails_and_leaves_nothing() {
        let path = Path::new("/nonexistent-hwstat-dir/x.prom");
        assert!(replace(path, b"a 1\n").is_err());
        assert!(replace(Path::new("/"), b"a 1\n").is_err());
    }
}
