//! A `/proc` whose `diskstats` takes a set time to read: a FUSE file
//! system holding `diskstats`, `stat` and `uptime`, to mount on a
//! `--sysroot` tree's `proc`, that counts the reads of `diskstats` from its
//! start (one a collection) and sleeps in each. Files are opened with
//! `FOPEN_DIRECT_IO`, so every read reaches it.

use crate::fuse::{self, Answer, Attr};

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const ROOT: u64 = fuse::ROOT_ID;
/// The files, by node number from 2.
const FILES: [&str; 3] = ["diskstats", "stat", "uptime"];

struct SlowProcFs {
    /// The files' contents, in the order of [`FILES`].
    contents: [String; 3],
    /// How long a read of `diskstats` from its start takes.
    delay: Duration,
    /// Reads of `diskstats` from its start so far.
    reads: Arc<AtomicU64>,
}

impl SlowProcFs {
    /// The content of node `ino`, if it is a file.
    fn content(&self, ino: u64) -> Option<&str> {
        let index = usize::try_from(ino.checked_sub(2)?).ok()?;
        self.contents.get(index).map(String::as_str)
    }

    fn attr(&self, ino: u64) -> Answer<Attr> {
        if ino == ROOT {
            return Ok(Attr {
                ino,
                dir: true,
                perm: 0o555,
                size: 0,
            });
        }
        let content = self.content(ino).ok_or(libc::ENOENT)?;
        Ok(Attr {
            ino,
            dir: false,
            perm: 0o444,
            size: content.len() as u64,
        })
    }
}

impl fuse::FileSystem for SlowProcFs {
    fn lookup(&self, _pid: u32, parent: u64, name: &[u8]) -> Answer<Attr> {
        let index = FILES.iter().position(|f| f.as_bytes() == name);
        match (parent, index) {
            (ROOT, Some(index)) => self.attr(index as u64 + 2),
            _ => Err(libc::ENOENT),
        }
    }

    fn getattr(&self, _pid: u32, ino: u64) -> Answer<Attr> {
        self.attr(ino)
    }

    fn open(&self, _pid: u32, _ino: u64) -> Answer<(u64, u32)> {
        Ok((1, fuse::FOPEN_DIRECT_IO))
    }

    fn read(&self, _pid: u32, ino: u64, _fh: u64, offset: u64, size: u32) -> Answer<Vec<u8>> {
        let content = self.content(ino).ok_or(libc::EISDIR)?;
        if ino == 2 && offset == 0 {
            self.reads.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(self.delay);
        }
        Ok(fuse::window(content.as_bytes(), offset, size))
    }

    fn readdir(&self, _pid: u32, ino: u64) -> Answer<Vec<fuse::DirEntry>> {
        if ino != ROOT {
            return Err(libc::ENOTDIR);
        }
        Ok((2..)
            .zip(FILES)
            .map(|(ino, name)| fuse::DirEntry {
                ino,
                dir: false,
                name: name.into(),
            })
            .collect())
    }
}

/// A mounted slow `/proc`; unmounted on drop.
pub struct SlowProc {
    _mount: fuse::Mount,
    reads: Arc<AtomicU64>,
}

impl SlowProc {
    /// Mounts on `proc` (created) a `/proc` of `diskstats`, a one-CPU
    /// `stat` and an `uptime`, whose `diskstats` takes `delay` to read.
    /// Needs FUSE ([`crate::simkernel::unavailable`]).
    pub fn mount(proc: &Path, diskstats: &str, delay: Duration) -> SlowProc {
        let reads = Arc::new(AtomicU64::new(0));
        let fs = SlowProcFs {
            contents: [
                diskstats.to_string(),
                "cpu  1 0 1 8 0 0 0 0 0 0\ncpu0 1 0 1 8 0 0 0 0 0 0\n".to_string(),
                "100.00 90.00\n".to_string(),
            ],
            delay,
            reads: Arc::clone(&reads),
        };
        // Several threads: a read that sleeps must not hold up the others.
        let mount = fuse::mount(fs, proc, "hwstat-slowproc", true, 2);
        SlowProc {
            _mount: mount,
            reads,
        }
    }

    /// Reads of `diskstats` from its start so far.
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::SeqCst)
    }
}
