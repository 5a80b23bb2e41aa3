//! Device names: sysstat's canonical form of a name given on the command
//! line, persistent names (`-j`) and device-mapper names (`-N`).

use std::borrow::Cow;
use std::collections::HashMap;

use crate::common::osname;
use crate::common::source::Source;

use super::cli::MAX_NAME_LEN;

/// sysstat's `device_name()`: the real path of a name given as a path, with
/// `/dev/` stripped and `/` turned into `!`; a path that does not resolve
/// is kept as given (and names no device: `/vda` is not `/dev/vda`).
pub fn canonical_name(src: &dyn Source, raw: &str) -> String {
    let real = if raw.starts_with('/') {
        match src.canonicalize(raw) {
            Ok(real) => real,
            Err(_) => return raw.to_string(),
        }
    } else {
        raw.to_string()
    };
    let short = real.strip_prefix("/dev/").unwrap_or(&real);
    short.replace('/', "!")
}

/// Where a stored device name's node is (sysstat's `get_major_minor_nr()`):
/// `/dev/NAME`, or the name itself when it is a path (one given that did
/// not resolve), with each `!` turned back into `/` (`cciss!c0d0` is
/// `/dev/cciss/c0d0`).
pub fn node_path(name: &str) -> String {
    let node = name.replace('!', "/");
    if node.starts_with('/') {
        node
    } else {
        format!("/dev/{node}")
    }
}

/// The last component of a path.
pub fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Cuts a name to sysstat's `MAX_NAME_LEN - 1` bytes (its `strncpy`): a
/// character cut in two keeps its first bytes, shown as `\xNN`.
pub fn truncate_name(name: String) -> String {
    match osname::truncate_bytes(&name, MAX_NAME_LEN - 1) {
        Cow::Borrowed(_) => name,
        Cow::Owned(cut) => cut,
    }
}

/// The kernel's name of block device `major:minor`: the last component of
/// the `/sys/dev/block/M:m` link (sysstat's `get_devname_from_sysfs()`).
pub fn kernel_name(src: &dyn Source, major: u32, minor: u32) -> Option<String> {
    let target = src
        .read_link(&format!("/sys/dev/block/{major}:{minor}"))
        .ok()?;
    Some(basename(&target).to_string())
}

/// The `/dev/mapper` entry whose device number is `major:minor`.
pub fn mapper_name(src: &dyn Source, major: u32, minor: u32) -> Option<String> {
    let names = src.list_dir("/dev/mapper").ok()?;
    names
        .into_iter()
        .filter(|n| !n.starts_with('.'))
        .find(|n| src.device_number(&format!("/dev/mapper/{n}")).ok() == Some((major, minor)))
}

/// The directory of the persistent names of type `kind` (`-j`).
pub fn persistent_dir(kind: &str) -> String {
    format!("/dev/disk/by-{kind}")
}

/// Persistent names of one type (`/dev/disk/by-<type>`), read once: for
/// each kernel name, the first link (in `strcmp` order) that points to it.
#[derive(Debug, Default)]
pub struct PersistentNames(Option<HashMap<String, String>>);

impl PersistentNames {
    /// The persistent name of kernel device `name`, if any.
    pub fn lookup(&mut self, src: &dyn Source, kind: &str, name: &str) -> Option<String> {
        let map = self.0.get_or_insert_with(|| {
            let dir = persistent_dir(kind);
            let mut links = src.list_dir(&dir).unwrap_or_default();
            links.sort();
            let mut map = HashMap::new();
            for link in links {
                if let Ok(target) = src.read_link(&format!("{dir}/{link}")) {
                    map.entry(basename(&target).to_string()).or_insert(link);
                }
            }
            map
        });
        map.get(name).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_cut_and_split_like_sysstat() {
        assert_eq!(basename("../../sda1"), "sda1");
        assert_eq!(basename("sda"), "sda");
        let long = "x".repeat(300);
        assert_eq!(truncate_name(long).len(), 255);
        assert_eq!(truncate_name("x".repeat(255)).len(), 255);
        // sysstat 12.7.9 keeps 255 bytes: 127 "é" and the first byte of the 128th.
        let multibyte = truncate_name("é".repeat(200));
        let mut kept = "é".repeat(127).into_bytes();
        kept.push(0xc3);
        assert_eq!(osname::to_bytes(&multibyte).as_ref(), kept.as_slice());
    }
}
