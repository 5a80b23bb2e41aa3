//! `--textfile PATH`: one complete exposition replaced atomically, as
//! node_exporter's textfile collector expects. The text is written to a
//! temporary file in the same directory (so the rename stays on one
//! filesystem), synced and renamed over `PATH`: a reader sees the previous
//! exposition or the new one, never a part. A new file is readable by every
//! user, the one exception to the tools' files for their owner alone
//! ([`super::user_file::OWNER_ONLY`]): it is published, as `--listen`
//! serves the same exposition to whoever connects.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use super::temp_file::{self, Readers};

/// Replaces `path` with `text` atomically, readable by every user (the
/// collector may run as another) unless this user's file there had a
/// narrower mode, which it keeps; synced. On an error the temporary file
/// is removed and `path` is left as it was.
pub fn replace(path: &Path, text: &[u8]) -> io::Result<()> {
    temp_file::replace_with(path, Readers::Everyone, |file: &mut File| {
        file.write_all(text)?;
        file.sync_all()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn replaces_whole_and_leaves_no_temporary() {
        let dir = crate::common::scratch::scratch("textfile");
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
    }

    #[test]
    fn a_narrower_mode_of_this_users_file_is_kept_not_widened() {
        let dir = crate::common::scratch::scratch("textfile-mode");
        let path = dir.join("x.prom");
        fs::write(&path, "old\n").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        replace(&path, b"a 1\n").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"a 1\n");
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
    }

    #[test]
    fn a_missing_directory_fails_and_leaves_nothing() {
        let path = Path::new("/nonexistent-hwstat-dir/x.prom");
        assert!(replace(path, b"a 1\n").is_err());
        assert!(replace(Path::new("/"), b"a 1\n").is_err());
    }
}
