//! `--textfile PATH`: one complete exposition replaced atomically, as
//! node_exporter's textfile collector expects. The text is written to a
//! temporary file in the same directory (so the rename stays on one
//! filesystem), synced, made world-readable and renamed over `PATH`: a reader
//! sees the previous exposition or the new one, never a part.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The temporary file beside `path`: `.NAME.tmp.PID`, hidden and without
/// the `.prom` ending the textfile collector reads.
fn temporary(path: &Path) -> io::Result<PathBuf> {
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "expected a file name, not a directory",
        )
    })?;
    let mut tmp = std::ffi::OsString::from(".");
    tmp.push(name);
    tmp.push(format!(".tmp.{}", std::process::id()));
    Ok(path.with_file_name(tmp))
}

/// Replaces `path` with `text` atomically. On an error the temporary file is
/// removed and `path` is left as it was.
pub fn replace(path: &Path, text: &[u8]) -> io::Result<()> {
    let tmp = temporary(path)?;
    let written = write_synced(&tmp, text).and_then(|()| fs::rename(&tmp, path));
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

fn write_synced(tmp: &Path, text: &[u8]) -> io::Result<()> {
    let mut file: File = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(tmp)?;
    file.set_permissions(fs::Permissions::from_mode(0o644))?;
    file.write_all(text)?;
    file.sync_all()
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
