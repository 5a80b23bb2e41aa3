//! A disk of known latency: a FUSE file system holding one file, `disk`,
//! whose every read sleeps a scripted time before returning zeros (opened
//! with `FOPEN_DIRECT_IO`, so no page cache absorbs a read). A loop device
//! over it (`losetup`) turns that into a block device with a known latency
//! floor and a known tail.

use crate::fusemount;

use std::ffi::OsStr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use fuser::{
    Errno, FileAttr, FileHandle, Filesystem, FopenFlags, INodeNo, LockOwner, MountOption,
    OpenFlags, ReplyAttr, ReplyData, ReplyEntry, ReplyOpen, Request,
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
    if ino == ROOT {
        fusemount::attr(ino, true, 0o555, 0)
    } else {
        fusemount::attr(ino, false, 0o444, DISK_BYTES)
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
pub struct SlowDisk(fusemount::Mount);

impl SlowDisk {
    /// Mounts a slow disk with these delays on a fresh directory.
    pub fn mount(name: &str, delays: Delays) -> SlowDisk {
        let root =
            std::env::temp_dir().join(format!("hwstat-slowdisk-{}-{name}", std::process::id()));
        let fs = SlowFs {
            delays,
            reads: AtomicU64::new(0),
        };
        SlowDisk(fusemount::mount(
            fs,
            &root,
            "hwstat-slowdisk",
            &[MountOption::RO],
            1,
        ))
    }

    /// The file to put a loop device over.
    pub fn file(&self) -> PathBuf {
        self.0.root.join("disk")
    }
}
