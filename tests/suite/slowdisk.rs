//! A disk of known latency: a FUSE file system holding one file, `disk`,
//! whose every read sleeps a scripted time before returning zeros (opened
//! with `FOPEN_DIRECT_IO`, so no page cache absorbs a read). A loop device
//! over it (`losetup`) turns that into a block device with a known latency
//! floor and a known tail.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, UNIX_EPOCH};

use fuser::{
    Config, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, INodeNo, LockOwner,
    MountOption, OpenFlags, ReplyAttr, ReplyData, ReplyEntry, ReplyOpen, Request,
};

/// The size of `disk`.
pub const DISK_BYTES: u64 = 64 << 20;

/// How long reads take: every `slow_every`-th read (1-based) sleeps `slow`,
/// the others `base`.
#[derive(Debug, Clone, Copy)]
pub struct Delays {
    /// The usual read time.
    pub base: Duration,
    /// The tail read time.
    pub slow: Duration,
    /// One read in this many is slow (0: none).
    pub slow_every: u64,
}

struct SlowFs {
    delays: Delays,
    reads: AtomicU64,
}

const ROOT: u64 = 1;
const DISK: u64 = 2;

fn attr(ino: u64) -> FileAttr {
    let dir = ino == ROOT;
    FileAttr {
        ino: INodeNo(ino),
        size: if dir { 0 } else { DISK_BYTES },
        blocks: if dir { 0 } else { DISK_BYTES / 512 },
        atime: UNIX_EPOCH,
        mtime: UNIX_EPOCH,
        ctime: UNIX_EPOCH,
        crtime: UNIX_EPOCH,
        kind: if dir {
            FileType::Directory
        } else {
            FileType::RegularFile
        },
        perm: if dir { 0o555 } else { 0o444 },
        nlink: if dir { 2 } else { 1 },
        uid: 0,
        gid: 0,
        rdev: 0,
        blksize: 4096,
        flags: 0,
    }
}

impl Filesystem for SlowFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        if u64::from(parent) == ROOT && name == "disk" {
            reply.entry(&Duration::from_secs(60), &attr(DISK), fuser::Generation(0));
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match u64::from(ino) {
            i @ (ROOT | DISK) => reply.attr(&Duration::from_secs(60), &attr(i)),
            _ => reply.error(Errno::ENOENT),
        }
    }

    fn open(&self, _req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        reply.opened(FileHandle(1), FopenFlags::FOPEN_DIRECT_IO);
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let n = self.reads.fetch_add(1, Ordering::SeqCst) + 1;
        let d = self.delays;
        let slow = d.slow_every > 0 && n.is_multiple_of(d.slow_every);
        std::thread::sleep(if slow { d.slow } else { d.base });
        let len = DISK_BYTES.saturating_sub(offset).min(u64::from(size));
        reply.data(&vec![0u8; len as usize]);
    }
}

/// A mounted slow disk; unmounted on drop.
pub struct SlowDisk {
    /// The mount point; the file is `root/disk`.
    pub root: PathBuf,
    session: Option<fuser::BackgroundSession>,
}

impl SlowDisk {
    /// Mounts a slow disk with these delays on a fresh directory.
    pub fn mount(name: &str, delays: Delays) -> SlowDisk {
        let root =
            std::env::temp_dir().join(format!("hwstat-slowdisk-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&root).expect("mount point");
        let fs = SlowFs {
            delays,
            reads: AtomicU64::new(0),
        };
        let mut config = Config::default();
        config.mount_options.extend([
            MountOption::FSName("hwstat-slowdisk".into()),
            MountOption::RO,
        ]);
        let session = fuser::spawn_mount(fs, &root, &config)
            .unwrap_or_else(|e| panic!("cannot mount the slow disk on {}: {e}", root.display()));
        SlowDisk {
            root,
            session: Some(session),
        }
    }

    /// The file to put a loop device over.
    pub fn file(&self) -> PathBuf {
        self.root.join("disk")
    }
}

impl Drop for SlowDisk {
    fn drop(&mut self) {
        if let Some(session) = self.session.take() {
            let _ = session.umount_and_join();
        }
        let _ = std::fs::remove_dir(&self.root);
    }
}
