//! A disk of known latency: a FUSE file system holding one file, `disk`,
//! whose every read sleeps a scripted time before returning zeros (opened
//! with `FOPEN_DIRECT_IO`, so no page cache absorbs a read). A loop device
//! over it (`losetup`) turns that into a block device with a known latency
//! floor and a known tail.

use crate::fuse::{self, Answer, Attr};

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

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

fn attr(ino: u64) -> Attr {
    if ino == ROOT {
        Attr {
            ino,
            dir: true,
            perm: 0o555,
            size: 0,
        }
    } else {
        Attr {
            ino,
            dir: false,
            perm: 0o444,
            size: DISK_BYTES,
        }
    }
}

impl fuse::FileSystem for SlowFs {
    fn ttl(&self) -> Duration {
        Duration::from_secs(60)
    }

    fn lookup(&self, _pid: u32, parent: u64, name: &[u8]) -> Answer<Attr> {
        if parent == ROOT && name == b"disk" {
            Ok(attr(DISK))
        } else {
            Err(libc::ENOENT)
        }
    }

    fn getattr(&self, _pid: u32, ino: u64) -> Answer<Attr> {
        match ino {
            ROOT | DISK => Ok(attr(ino)),
            _ => Err(libc::ENOENT),
        }
    }

    fn open(&self, _pid: u32, _ino: u64) -> Answer<(u64, u32)> {
        Ok((1, fuse::FOPEN_DIRECT_IO))
    }

    fn read(&self, _pid: u32, _ino: u64, _fh: u64, offset: u64, size: u32) -> Answer<Vec<u8>> {
        let n = self.reads.fetch_add(1, Ordering::SeqCst) + 1;
        let d = self.delays;
        let slow = d.slow_every > 0 && n.is_multiple_of(d.slow_every);
        std::thread::sleep(if slow { d.slow } else { d.base });
        let len = DISK_BYTES.saturating_sub(offset).min(u64::from(size));
        Ok(vec![0u8; len as usize])
    }

    fn readdir(&self, _pid: u32, ino: u64) -> Answer<Vec<fuse::DirEntry>> {
        match ino {
            ROOT => Ok(vec![fuse::DirEntry {
                ino: DISK,
                dir: false,
                name: "disk".into(),
            }]),
            _ => Err(libc::ENOTDIR),
        }
    }
}

/// A mounted slow disk; unmounted on drop.
pub struct SlowDisk(fuse::Mount);

impl SlowDisk {
    /// Mounts a slow disk with these delays on a fresh directory.
    pub fn mount(name: &str, delays: Delays) -> SlowDisk {
        let root =
            std::env::temp_dir().join(format!("hwstat-slowdisk-{}-{name}", std::process::id()));
        let fs = SlowFs {
            delays,
            reads: AtomicU64::new(0),
        };
        SlowDisk(fuse::mount(fs, &root, "hwstat-slowdisk", true, 1))
    }

    /// The file to put a loop device over.
    pub fn file(&self) -> PathBuf {
        self.0.root.join("disk")
    }
}
