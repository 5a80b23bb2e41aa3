//! The directories `-f DIR`/`+f DIR` and `-j TYPE` name, checked in the
//! order they were given, as sysstat checks each where its scan of the
//! command line meets it: `-f /missing -V` is a usage error and
//! `-j bogus -V` an invalid type (the scan never reaches `-V`), and
//! `-j bogus -f /missing` says the type is invalid.

use std::path::Path;

use crate::common::osname;

use super::error::IostatError;
use super::names::persistent_dir;

/// A directory a command-line option needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NamedDir {
    /// `-f DIR` or `+f DIR`: DIR (absolute; empty when given empty).
    Alt(String),
    /// `-j TYPE` (lower-cased): `/dev/disk/by-TYPE`.
    Persistent(String),
}

impl NamedDir {
    /// The kernel path that must be a directory.
    pub fn path(&self) -> String {
        match self {
            NamedDir::Alt(dir) => dir.clone(),
            NamedDir::Persistent(kind) => persistent_dir(kind),
        }
    }

    /// sysstat's error when the directory is missing: its usage text for
    /// `-f`, `Invalid type of persistent device name` for `-j`.
    pub fn missing(&self) -> IostatError {
        match self {
            NamedDir::Alt(_) => IostatError::Usage,
            NamedDir::Persistent(_) => IostatError::InvalidPersistentType,
        }
    }
}

/// The error of the first of `dirs` that `is_dir` says is not a
/// directory (sysstat's `stat(2)` of the empty path fails: `-f ''` is
/// missing too), or `None` when all are there.
pub fn first_missing(dirs: &[NamedDir], is_dir: impl Fn(&str) -> bool) -> Option<IostatError> {
    dirs.iter()
        .find(|dir| {
            let path = dir.path();
            path.is_empty() || !is_dir(&path)
        })
        .map(NamedDir::missing)
}

/// Whether a kernel path is a directory on the file system (under
/// `sysroot` when one is given), for the checks made before any source
/// opens: after a usage error, and for `-V`.
pub fn is_dir_under(sysroot: Option<&Path>) -> impl Fn(&str) -> bool + '_ {
    // The bytes given: `path` carries those that are not UTF-8.
    move |path: &str| match sysroot {
        Some(root) => root
            .join(osname::to_os_string(path.trim_start_matches('/')))
            .is_dir(),
        None => Path::new(&osname::to_os_string(path)).is_dir(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(dirs: &[NamedDir], present: &[&str]) -> Option<String> {
        first_missing(dirs, |p| present.contains(&p)).map(|e| format!("{e:?}"))
    }

    #[test]
    fn the_first_missing_directory_in_command_line_order_decides() {
        let alt = NamedDir::Alt("/missing".into());
        let bogus = NamedDir::Persistent("bogus".into());
        let id = NamedDir::Persistent("id".into());
        let present = ["/dev/disk/by-id", "/alt"];
        assert_eq!(
            error_of(&[bogus.clone(), alt.clone()], &present).as_deref(),
            Some("InvalidPersistentType")
        );
        assert_eq!(
            error_of(&[alt.clone(), bogus.clone()], &present).as_deref(),
            Some("Usage")
        );
        // An earlier -j TYPE counts though a later one is valid.
        assert_eq!(
            error_of(&[bogus, id.clone()], &present).as_deref(),
            Some("InvalidPersistentType")
        );
        assert_eq!(
            error_of(&[id, NamedDir::Alt("/alt".into())], &present),
            None
        );
    }

    #[test]
    fn an_empty_directory_is_missing_whatever_is_dir_says() {
        assert_eq!(
            error_of(&[NamedDir::Alt(String::new())], &[""]).as_deref(),
            Some("Usage")
        );
    }
}
