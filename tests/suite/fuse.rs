//! The FUSE server under the tests' file systems (`simkernel`, `slowdisk`,
//! `samplefs`): mounts on a fresh directory that goes away with the mount,
//! and answers the kernel's requests on `/dev/fuse` in the kernel's own
//! protocol (`include/uapi/linux/fuse.h`, ABI 7.23 or later).
//!
//! Written here rather than taken from the `fuser` crate: the tests use
//! nine requests, and fuser's dependencies (nix, zerocopy, a second syn,
//! num_enum with a TOML parser) were about 36 s of the 207 s of CPU that
//! building the tests from a clean clone took (cargo --timings;
//! BENCHMARKS.md, "The test command", session 29). What fuser did that the
//! tests relied on is kept: the INIT flags (`FUSE_ASYNC_READ`,
//! `FUSE_BIG_WRITES`, `FUSE_MAX_PAGES`, so a read asks for up to 1 MiB),
//! `nosuid,nodev` mounts, a lazy unmount, and any number of threads.
//!
//! Mounting without `fusermount` needs root (`simkernel::unavailable`).

use std::ffi::CString;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// `FOPEN_DIRECT_IO`: every read and write of the opened file reaches the
/// file system; no page cache.
pub const FOPEN_DIRECT_IO: u32 = 1 << 0;
/// `FOPEN_NONSEEKABLE`: `lseek` on the opened file fails with ESPIPE.
pub const FOPEN_NONSEEKABLE: u32 = 1 << 2;

/// The root directory's node.
pub const ROOT_ID: u64 = 1;

/// An answer: the value, or the errno the caller gets.
pub type Answer<T> = Result<T, i32>;

/// A node as the tests describe it: a directory (`nlink` 2) or a regular
/// file of `size` bytes, with permissions `perm`, owned by root and dated
/// the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attr {
    /// The node number.
    pub ino: u64,
    /// A directory, or else a regular file.
    pub dir: bool,
    /// Permission bits.
    pub perm: u16,
    /// Size in bytes.
    pub size: u64,
}

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// The entry's node.
    pub ino: u64,
    /// A directory, or else a regular file.
    pub dir: bool,
    /// Its name.
    pub name: String,
}

/// A file system served by [`mount`]. `pid` is the requesting thread's id
/// as the kernel gives it. Requests not listed here are answered ENOSYS.
pub trait FileSystem: Send + Sync + 'static {
    /// How long the kernel may keep names and attributes (zero: it asks
    /// again every time).
    fn ttl(&self) -> Duration {
        Duration::ZERO
    }
    /// The child `name` of directory `parent`.
    fn lookup(&self, pid: u32, parent: u64, name: &[u8]) -> Answer<Attr>;
    /// The attributes of `ino`.
    fn getattr(&self, pid: u32, ino: u64) -> Answer<Attr>;
    /// A change of `ino`'s attributes (a truncating open sends one).
    fn setattr(&self, _pid: u32, _ino: u64) -> Answer<Attr> {
        Err(libc::ENOSYS)
    }
    /// Opens `ino`: the file handle and `FOPEN_*` flags.
    fn open(&self, pid: u32, ino: u64) -> Answer<(u64, u32)>;
    /// Up to `size` bytes of `ino` from `offset`.
    fn read(&self, pid: u32, ino: u64, fh: u64, offset: u64, size: u32) -> Answer<Vec<u8>>;
    /// One write(2) of `data` to `ino`: the bytes accepted.
    fn write(&self, _pid: u32, _ino: u64, _fh: u64, _data: &[u8]) -> Answer<u32> {
        Err(libc::ENOSYS)
    }
    /// The last close of file handle `fh` of `ino`.
    fn release(&self, _ino: u64, _fh: u64) {}
    /// The entries of directory `ino` besides `.` and `..`.
    fn readdir(&self, pid: u32, ino: u64) -> Answer<Vec<DirEntry>>;
}

/// The bytes of `content` a read of `size` bytes at `offset` gets (none
/// past the end).
pub fn window(content: &[u8], offset: u64, size: u32) -> Vec<u8> {
    let start = usize::try_from(offset)
        .unwrap_or(usize::MAX)
        .min(content.len());
    let end = start.saturating_add(size as usize).min(content.len());
    content[start..end].to_vec()
}

/// A file system mounted by this process; unmounted, and its mount point
/// removed, when dropped.
pub struct Mount {
    /// The mount point.
    pub root: PathBuf,
    servers: Vec<JoinHandle<()>>,
}

impl Drop for Mount {
    fn drop(&mut self) {
        if let Ok(path) = CString::new(self.root.as_os_str().as_bytes()) {
            // SAFETY: `path` is a valid C string. A lazy unmount, as
            // fusermount -uz: the connection ends, and the servers' reads
            // with it, once the last file opened on it is closed.
            unsafe { libc::umount2(path.as_ptr(), libc::MNT_DETACH) };
        }
        for server in self.servers.drain(..) {
            let _ = server.join();
        }
        let _ = std::fs::remove_dir(&self.root);
    }
}

/// Mounts `fs` on `root` (created) under the name `fsname`, read-only or
/// not, its requests answered by `threads` threads.
pub fn mount(
    fs: impl FileSystem,
    root: &Path,
    fsname: &str,
    read_only: bool,
    threads: usize,
) -> Mount {
    let fail = |what: &str, e: std::io::Error| -> ! {
        panic!("cannot mount {fsname} on {}: {what}: {e}", root.display())
    };
    let _ = std::fs::create_dir_all(root);
    let dev = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_CLOEXEC)
        .open("/dev/fuse")
        .unwrap_or_else(|e| fail("/dev/fuse", e));
    let root_mode = std::fs::metadata(root)
        .unwrap_or_else(|e| fail("the mount point", e))
        .mode();
    // SAFETY: getuid and getgid have no preconditions.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let data = format!(
        "fd={},rootmode={root_mode:o},user_id={uid},group_id={gid}",
        dev.as_raw_fd()
    );
    let mut flags = libc::MS_NOSUID | libc::MS_NODEV;
    if read_only {
        flags |= libc::MS_RDONLY;
    }
    let c = |s: &[u8]| CString::new(s).expect("no NUL in a mount argument");
    let (source, target, kind, data) = (
        c(fsname.as_bytes()),
        c(root.as_os_str().as_bytes()),
        c(b"fuse"),
        c(data.as_bytes()),
    );
    // SAFETY: every pointer is a valid C string that outlives the call.
    let rc = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            kind.as_ptr(),
            flags,
            data.as_ptr().cast(),
        )
    };
    if rc != 0 {
        fail("mount(2)", std::io::Error::last_os_error());
    }
    let dev = Arc::new(dev);
    let fs: Arc<dyn FileSystem> = Arc::new(fs);
    let servers = (0..threads.max(1))
        .map(|_| {
            let (dev, fs) = (Arc::clone(&dev), Arc::clone(&fs));
            std::thread::spawn(move || serve(&dev, &*fs))
        })
        .collect();
    Mount {
        root: root.to_path_buf(),
        servers,
    }
}

/// The largest write the kernel is told to send, and the reads it may ask
/// for (256 pages, the kernel's default `fuse_max_pages_limit`).
const MAX_WRITE: u32 = 1 << 20;
/// A request: the largest write and its headers.
const BUFFER_BYTES: usize = MAX_WRITE as usize + 4096;

/// Answers requests until the connection ends (ENODEV once unmounted).
fn serve(dev: &File, fs: &dyn FileSystem) {
    let mut buffer = vec![0u8; BUFFER_BYTES];
    loop {
        let n = match (&*dev).read(&mut buffer) {
            Ok(n) => n,
            // ENOENT: the request was interrupted before it was read.
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR | libc::ENOENT)) => continue,
            Err(_) => return,
        };
        let Some(request) = Request::parse(&buffer[..n]) else {
            continue;
        };
        // A file system that panics fails the request with EIO, and the
        // test with the panic's message, rather than leave its caller
        // waiting for an answer for ever.
        let body = std::panic::catch_unwind(AssertUnwindSafe(|| answer(fs, &request)))
            .unwrap_or(Some(Err(libc::EIO)));
        if let Some(body) = body {
            // An error here is a request the kernel gave up on (the caller
            // was interrupted); nothing is waiting for the answer.
            let _ = (&*dev).write(&reply(request.unique, body));
        }
    }
}

/// One request: `fuse_in_header` and its argument bytes.
struct Request<'a> {
    opcode: u32,
    unique: u64,
    nodeid: u64,
    pid: u32,
    args: &'a [u8],
}

impl<'a> Request<'a> {
    /// The 40-byte header, then the arguments.
    fn parse(bytes: &'a [u8]) -> Option<Request<'a>> {
        Some(Request {
            opcode: u32_at(bytes, 4)?,
            unique: u64_at(bytes, 8)?,
            nodeid: u64_at(bytes, 16)?,
            pid: u32_at(bytes, 32)?,
            args: bytes.get(40..)?,
        })
    }
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

// The opcodes answered (enum fuse_opcode).
const LOOKUP: u32 = 1;
const FORGET: u32 = 2;
const GETATTR: u32 = 3;
const SETATTR: u32 = 4;
const OPEN: u32 = 14;
const READ: u32 = 15;
const WRITE: u32 = 16;
const STATFS: u32 = 17;
const RELEASE: u32 = 18;
const FLUSH: u32 = 25;
const INIT: u32 = 26;
const OPENDIR: u32 = 27;
const READDIR: u32 = 28;
const RELEASEDIR: u32 = 29;
const INTERRUPT: u32 = 36;
const DESTROY: u32 = 38;
const BATCH_FORGET: u32 = 42;

// INIT flags (fuse_init_in.flags and fuse_init_out.flags).
const FUSE_ASYNC_READ: u32 = 1 << 0;
const FUSE_BIG_WRITES: u32 = 1 << 5;
const FUSE_MAX_PAGES: u32 = 1 << 22;

/// The answer to `request`, or none for those that take none.
fn answer(fs: &dyn FileSystem, r: &Request) -> Option<Answer<Vec<u8>>> {
    let (pid, ino, args) = (r.pid, r.nodeid, r.args);
    let body = match r.opcode {
        FORGET | BATCH_FORGET | INTERRUPT => return None,
        INIT => init(args),
        LOOKUP => {
            let name = args.split(|&b| b == 0).next().unwrap_or_default();
            fs.lookup(pid, ino, name).map(|a| entry_out(a, fs.ttl()))
        }
        GETATTR => fs.getattr(pid, ino).map(|a| attr_out(a, fs.ttl())),
        SETATTR => fs.setattr(pid, ino).map(|a| attr_out(a, fs.ttl())),
        OPEN => fs.open(pid, ino).map(|(fh, flags)| open_out(fh, flags)),
        OPENDIR => Ok(open_out(0, 0)),
        READ => match (u64_at(args, 0), u64_at(args, 8), u32_at(args, 16)) {
            (Some(fh), Some(offset), Some(size)) => fs.read(pid, ino, fh, offset, size),
            _ => Err(libc::EINVAL),
        },
        // fuse_write_in is 40 bytes, the data follows.
        WRITE => match (u64_at(args, 0), u32_at(args, 16), args.get(40..)) {
            (Some(fh), Some(size), Some(data)) if data.len() >= size as usize => fs
                .write(pid, ino, fh, &data[..size as usize])
                .map(|n| [n.to_ne_bytes(), [0; 4]].concat()),
            _ => Err(libc::EINVAL),
        },
        READDIR => match (u64_at(args, 8), u32_at(args, 16)) {
            (Some(offset), Some(size)) => fs
                .readdir(pid, ino)
                .map(|children| dirents(ino, children, offset, size)),
            _ => Err(libc::EINVAL),
        },
        RELEASE => {
            if let Some(fh) = u64_at(args, 0) {
                fs.release(ino, fh);
            }
            Ok(Vec::new())
        }
        FLUSH | RELEASEDIR | DESTROY => Ok(Vec::new()),
        STATFS => Ok(statfs_out()),
        _ => Err(libc::ENOSYS),
    };
    Some(body)
}

/// The reply to request `unique`: fuse_out_header, then the body.
fn reply(unique: u64, body: Answer<Vec<u8>>) -> Vec<u8> {
    let (error, body) = match body {
        Ok(body) => (0, body),
        Err(errno) => (-errno, Vec::new()),
    };
    // fuse_out_header: len, error, unique.
    let len = u32::try_from(16 + body.len()).expect("a reply under 4 GiB");
    let mut reply = Vec::with_capacity(16 + body.len());
    reply.extend_from_slice(&len.to_ne_bytes());
    reply.extend_from_slice(&error.to_ne_bytes());
    reply.extend_from_slice(&unique.to_ne_bytes());
    reply.extend_from_slice(&body);
    reply
}

/// fuse_init_out (64 bytes) for the kernel's fuse_init_in.
fn init(args: &[u8]) -> Answer<Vec<u8>> {
    let (Some(major), Some(minor), Some(readahead), Some(offered)) = (
        u32_at(args, 0),
        u32_at(args, 4),
        u32_at(args, 8),
        u32_at(args, 12),
    ) else {
        return Err(libc::EINVAL);
    };
    if major != 7 || minor < 23 {
        return Err(libc::EPROTO);
    }
    let flags = (FUSE_ASYNC_READ | FUSE_BIG_WRITES | FUSE_MAX_PAGES) & offered;
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(&7u32.to_ne_bytes());
    out.extend_from_slice(&minor.min(31).to_ne_bytes());
    out.extend_from_slice(&readahead.to_ne_bytes());
    out.extend_from_slice(&flags.to_ne_bytes());
    out.extend_from_slice(&16u16.to_ne_bytes()); // max_background
    out.extend_from_slice(&12u16.to_ne_bytes()); // congestion_threshold
    out.extend_from_slice(&MAX_WRITE.to_ne_bytes());
    out.extend_from_slice(&1u32.to_ne_bytes()); // time_gran: 1 ns
    out.extend_from_slice(&256u16.to_ne_bytes()); // max_pages
    out.resize(64, 0); // map_alignment, flags2, unused
    Ok(out)
}

/// fuse_attr (88 bytes).
fn attr(a: Attr) -> Vec<u8> {
    let kind = if a.dir { libc::S_IFDIR } else { libc::S_IFREG };
    let mut out = Vec::with_capacity(88);
    for v in [a.ino, a.size, a.size.div_ceil(512), 0, 0, 0] {
        out.extend_from_slice(&v.to_ne_bytes());
    }
    let nlink = if a.dir { 2 } else { 1 };
    // atimensec, mtimensec, ctimensec, mode, nlink, uid, gid, rdev,
    // blksize, flags.
    for v in [0, 0, 0, kind | u32::from(a.perm), nlink, 0, 0, 0, 4096, 0] {
        out.extend_from_slice(&v.to_ne_bytes());
    }
    out
}

/// A timeout as fuse_*_out give it: seconds, nanoseconds.
fn valid(ttl: Duration) -> (u64, u32) {
    (ttl.as_secs(), ttl.subsec_nanos())
}

/// fuse_entry_out (128 bytes), generation 0.
fn entry_out(a: Attr, ttl: Duration) -> Vec<u8> {
    let (secs, nanos) = valid(ttl);
    let mut out = Vec::with_capacity(128);
    for v in [a.ino, 0, secs, secs] {
        out.extend_from_slice(&v.to_ne_bytes());
    }
    out.extend_from_slice(&nanos.to_ne_bytes());
    out.extend_from_slice(&nanos.to_ne_bytes());
    out.extend_from_slice(&attr(a));
    out
}

/// fuse_attr_out (104 bytes).
fn attr_out(a: Attr, ttl: Duration) -> Vec<u8> {
    let (secs, nanos) = valid(ttl);
    let mut out = Vec::with_capacity(104);
    out.extend_from_slice(&secs.to_ne_bytes());
    out.extend_from_slice(&nanos.to_ne_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&attr(a));
    out
}

/// fuse_open_out (16 bytes).
fn open_out(fh: u64, flags: u32) -> Vec<u8> {
    [&fh.to_ne_bytes()[..], &flags.to_ne_bytes(), &[0; 4]].concat()
}

/// fuse_statfs_out: an empty file system of 512-byte blocks and names of
/// up to 255 bytes (80 bytes).
fn statfs_out() -> Vec<u8> {
    let mut out = vec![0u8; 80];
    out[40..44].copy_from_slice(&512u32.to_ne_bytes());
    out[44..48].copy_from_slice(&255u32.to_ne_bytes());
    out
}

/// The fuse_dirent records of directory `ino` from `offset` on that fit
/// in `size` bytes: `.`, `..` (the root: these file systems never ask for
/// it), then `children`. Each entry's offset is its position plus one.
fn dirents(ino: u64, children: Vec<DirEntry>, offset: u64, size: u32) -> Vec<u8> {
    let dots = [(ino, "."), (ROOT_ID, "..")].map(|(ino, name)| DirEntry {
        ino,
        dir: true,
        name: name.to_string(),
    });
    let mut out = Vec::new();
    let entries = dots.into_iter().chain(children).enumerate();
    for (i, e) in entries.skip(usize::try_from(offset).unwrap_or(usize::MAX)) {
        let name = e.name.as_bytes();
        let record = (24 + name.len()).next_multiple_of(8);
        if out.len() + record > size as usize {
            break;
        }
        let kind = if e.dir { libc::DT_DIR } else { libc::DT_REG };
        out.extend_from_slice(&e.ino.to_ne_bytes());
        out.extend_from_slice(&(i as u64 + 1).to_ne_bytes());
        out.extend_from_slice(&(name.len() as u32).to_ne_bytes());
        out.extend_from_slice(&u32::from(kind).to_ne_bytes());
        out.extend_from_slice(name);
        out.resize(out.len().next_multiple_of(8), 0);
    }
    out
}

/// A directory of `count` files `f0`, `f1`, … whose contents are their
/// names; reading `f0` panics.
struct Numbered {
    count: u64,
}

impl FileSystem for Numbered {
    fn lookup(&self, _pid: u32, parent: u64, name: &[u8]) -> Answer<Attr> {
        let n: u64 = std::str::from_utf8(name)
            .ok()
            .and_then(|s| s.strip_prefix('f')?.parse().ok())
            .filter(|&n| parent == ROOT_ID && n < self.count)
            .ok_or(libc::ENOENT)?;
        self.getattr(0, n + 2)
    }

    fn getattr(&self, _pid: u32, ino: u64) -> Answer<Attr> {
        match ino {
            ROOT_ID => Ok(Attr {
                ino,
                dir: true,
                perm: 0o555,
                size: 0,
            }),
            i if i >= 2 && i - 2 < self.count => Ok(Attr {
                ino,
                dir: false,
                perm: 0o644,
                size: format!("f{}", i - 2).len() as u64,
            }),
            _ => Err(libc::ENOENT),
        }
    }

    fn open(&self, _pid: u32, _ino: u64) -> Answer<(u64, u32)> {
        Ok((7, FOPEN_DIRECT_IO))
    }

    fn read(&self, _pid: u32, ino: u64, fh: u64, offset: u64, size: u32) -> Answer<Vec<u8>> {
        assert_eq!(fh, 7, "the handle open gave");
        assert_ne!(ino, 2, "f0's read panics (the test expects it)");
        let text = format!("f{}", ino - 2).into_bytes();
        Ok(window(&text, offset, size))
    }

    fn readdir(&self, _pid: u32, _ino: u64) -> Answer<Vec<DirEntry>> {
        Ok((0..self.count)
            .map(|n| DirEntry {
                ino: n + 2,
                dir: false,
                name: format!("f{n}"),
            })
            .collect())
    }
}

#[test]
fn listings_longer_than_a_reply_reads_and_panics_reach_the_caller() {
    if let Some(reason) = crate::simkernel::unavailable() {
        crate::skip::skip("fuse server", &reason);
        return;
    }
    let root = std::env::temp_dir().join(format!("hwstat-fuse-{}", std::process::id()));
    // 3,000 entries of 32 bytes: some 24 replies of a 4 kB page each.
    let mount = mount(Numbered { count: 3000 }, &root, "hwstat-fuse", true, 2);
    // At most one entry too many: a listing that repeats itself fails
    // here rather than going on for ever.
    let mut names: Vec<String> = std::fs::read_dir(&mount.root)
        .unwrap()
        .take(3001)
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort_by_key(|n| n[1..].parse::<u32>().unwrap());
    let expected: Vec<String> = (0..3000).map(|n| format!("f{n}")).collect();
    if let Some(i) = (0..names.len().max(3000)).find(|&i| names.get(i) != expected.get(i)) {
        panic!(
            "{} entries listed; the first difference at {i}: {:?} for {:?}",
            names.len(),
            names.get(i),
            expected.get(i)
        );
    }
    assert_eq!(
        std::fs::read_to_string(mount.root.join("f2999")).unwrap(),
        "f2999"
    );
    let panicked = std::fs::read(mount.root.join("f0")).unwrap_err();
    assert_eq!(panicked.raw_os_error(), Some(libc::EIO));
    assert_eq!(std::fs::read(mount.root.join("f1")).unwrap(), b"f1");
    let missing = std::fs::metadata(mount.root.join("f3000")).unwrap_err();
    assert_eq!(missing.raw_os_error(), Some(libc::ENOENT));
    let written = std::fs::write(mount.root.join("f1"), "x").unwrap_err();
    assert_eq!(written.raw_os_error(), Some(libc::EROFS));
    drop(mount);
    assert!(!root.exists(), "the mount point is removed with the mount");
}
