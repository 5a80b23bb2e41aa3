//! A test's own empty directory under the temporary directory, removed with
//! what the test wrote in it when the test ends. The library's unit tests
//! use this same file (`src/common/mod.rs` includes it).

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};

/// A fresh empty directory for one test, removed when dropped.
pub struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

/// So that a command takes it as an argument (`.arg(&dir)`).
impl AsRef<OsStr> for Scratch {
    fn as_ref(&self) -> &OsStr {
        self.0.as_os_str()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// `hwstat-NAME-PID` in the temporary directory, empty: `name` tells the
/// tests of one process apart.
pub fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("hwstat-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}
