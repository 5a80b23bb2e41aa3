//! What the tests' FUSE file systems (`simkernel`, `slowdisk`, `samplefs`)
//! share: mounting on a fresh directory that goes away with the mount, and
//! describing a node, and answering a directory listing.

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use fuser::{Config, FileAttr, FileType, Filesystem, INodeNo, MountOption, ReplyDirectory};

/// A file system mounted by this process; unmounted, and its mount point
/// removed, when dropped.
pub struct Mount {
    /// The mount point.
    pub root: PathBuf,
    session: Option<fuser::BackgroundSession>,
}

impl Drop for Mount {
    fn drop(&mut self) {
        if let Some(session) = self.session.take() {
            let _ = session.umount_and_join();
        }
        let _ = std::fs::remove_dir(&self.root);
    }
}

/// Mounts `fs` on `root` (created), served by `threads` threads, with these
/// mount options besides the file system's name `fsname`.
pub fn mount<F: Filesystem + Send + Sync + 'static>(
    fs: F,
    root: &Path,
    fsname: &str,
    options: &[MountOption],
    threads: usize,
) -> Mount {
    let _ = std::fs::create_dir_all(root);
    let mut config = Config::default();
    config
        .mount_options
        .push(MountOption::FSName(fsname.to_string()));
    config.mount_options.extend_from_slice(options);
    if threads > 1 {
        config.n_threads = Some(threads);
        config.clone_fd = true;
    }
    let session = fuser::spawn_mount(fs, root, &config)
        .unwrap_or_else(|e| panic!("cannot mount {fsname} on {}: {e}", root.display()));
    Mount {
        root: root.to_path_buf(),
        session: Some(session),
    }
}

/// Answers a listing of directory `ino` (whose parent is `parent`) from
/// `offset` on: `.`, `..`, then `children` (inode, type, name).
pub fn list_directory(
    mut reply: ReplyDirectory,
    offset: u64,
    ino: u64,
    parent: u64,
    children: impl IntoIterator<Item = (u64, FileType, String)>,
) {
    let entries = [
        (ino, FileType::Directory, ".".to_string()),
        (parent, FileType::Directory, "..".to_string()),
    ]
    .into_iter()
    .chain(children);
    for (i, (e_ino, kind, name)) in entries.enumerate().skip(offset as usize) {
        if reply.add(INodeNo(e_ino), (i + 1) as u64, kind, &name) {
            break;
        }
    }
    reply.ok();
}

/// The attributes of root's node `ino`: a directory (`nlink` 2) or a
/// regular file of `size` bytes, with permissions `perm`, dated the epoch.
pub fn attr(ino: u64, dir: bool, perm: u16, size: u64) -> FileAttr {
    FileAttr {
        ino: INodeNo(ino),
        size,
        blocks: size.div_ceil(512),
        atime: UNIX_EPOCH,
        mtime: UNIX_EPOCH,
        ctime: UNIX_EPOCH,
        crtime: UNIX_EPOCH,
        kind: if dir {
            FileType::Directory
        } else {
            FileType::RegularFile
        },
        perm,
        nlink: if dir { 2 } else { 1 },
        uid: 0,
        gid: 0,
        rdev: 0,
        flags: 0,
        blksize: 4096,
    }
}
