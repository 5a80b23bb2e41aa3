//! Loop devices over the tests' files: attached with `losetup`, detached
//! when dropped, also when the test fails. Shared by the suite and the
//! `cpu_hotplug` test program.

use std::path::Path;
use std::process::Command;

/// A loop device over a file, detached on drop.
pub struct Loop {
    /// `loopN`.
    pub name: String,
    /// Its major and minor numbers.
    pub dev: (u32, u32),
}

impl Loop {
    /// `file` attached read-only.
    pub fn attach(file: &Path) -> Loop {
        Loop::attach_with(file, &["-r"])
    }

    /// `file` attached with losetup's `options` (besides `-f --show`).
    pub fn attach_with(file: &Path, options: &[&str]) -> Loop {
        let out = Command::new("losetup")
            .args(options)
            .args(["-f", "--show"])
            .arg(file)
            .output()
            .expect("losetup runs");
        assert!(
            out.status.success(),
            "losetup {options:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let name = path.trim_start_matches("/dev/").to_string();
        let dev = std::fs::read_to_string(format!("/sys/block/{name}/dev")).expect("dev");
        let (major, minor) = dev.trim().split_once(':').expect("M:m");
        Loop {
            dev: (major.parse().unwrap(), minor.parse().unwrap()),
            name,
        }
    }

    /// Its path, `/dev/loopN`.
    pub fn path(&self) -> String {
        format!("/dev/{}", self.name)
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.path()]).status();
    }
}
