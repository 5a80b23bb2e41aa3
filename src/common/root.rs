//! Opening kernel files under a root directory without ever blocking and
//! without leaving the root.
//!
//! Kernel files in `/proc`, `/sys` and debugfs are regular files; a FIFO, a
//! device or a socket in their place (possible under `--sysroot`) could block
//! `open(2)` or `read(2)` forever or never end. So every file is opened with
//! `O_NONBLOCK | O_NOCTTY | O_CLOEXEC`, checked with `fstat(2)` to be a
//! regular file, and only then switched back to blocking I/O.
//!
//! Under a root other than `/`, every path is resolved with `openat2(2)` and
//! `RESOLVE_IN_ROOT`: a symbolic link (absolute or with `..`) is resolved as
//! if the root were `/`, so neither reads nor writes reach files outside it.

use std::cell::OnceCell;
use std::ffi::{CStr, CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::osname;

/// How a kernel file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// For reading.
    Read,
    /// For writing, truncated as the shell's `echo 1 > file` does.
    Write,
}

/// A root directory (`/`, or a `--sysroot` directory) that kernel paths are
/// resolved under.
pub struct Root {
    path: PathBuf,
    /// The root directory opened with `O_PATH` on first use (not for `/`).
    dir: OnceCell<OwnedFd>,
}

impl Root {
    /// The root at `path`; nothing is opened until a file is.
    pub fn new(path: impl Into<PathBuf>) -> Root {
        Root {
            path: path.into(),
            dir: OnceCell::new(),
        }
    }

    /// The root directory on the host.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// True for the host's own `/`, where paths need no confinement.
    pub fn is_host_root(&self) -> bool {
        self.path == Path::new("/")
    }

    /// Opens kernel path `path` for `access`: never blocks, and fails with
    /// a clear error unless it is a regular file.
    pub fn open_file(&self, path: &str, access: Access) -> io::Result<File> {
        self.open_regular(path, access).map(|(file, _)| file)
    }

    /// Opens kernel path `path` for reading as [`Root::open_file`] does,
    /// with the size its inode reports: 0 or a page for the kernel's own
    /// files, whatever they hold, and the true size of a file on disk (a
    /// `--sysroot` tree), which a caller can refuse before reading it.
    pub fn open_to_read(&self, path: &str) -> io::Result<(File, u64)> {
        self.open_regular(path, Access::Read)
    }

    /// [`Root::open_file`], with the size from the `fstat` that checks
    /// the file's type.
    fn open_regular(&self, path: &str, access: Access) -> io::Result<(File, u64)> {
        let flags = match access {
            Access::Read => libc::O_RDONLY,
            // Not O_TRUNC here: the file is checked first (below).
            Access::Write => libc::O_WRONLY,
        };
        let fd = match self.open_raw(path, flags | libc::O_NONBLOCK) {
            // A FIFO opened for writing without a reader.
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                return Err(not_regular(self.kind_of(path).unwrap_or("special file")));
            }
            other => other?,
        };
        let st = fstat(fd.as_raw_fd())?;
        match kind_of_mode(st.st_mode) {
            "regular file" => {}
            "directory" => return Err(io::Error::from_raw_os_error(libc::EISDIR)),
            other => return Err(not_regular(other)),
        }
        if access == Access::Write {
            // A hard link in a --sysroot tree to a file elsewhere on its
            // file system (any user can make one with fs.protected_hardlinks
            // off) would have root empty and overwrite that file, as a
            // planted symbolic link would without RESOLVE_IN_ROOT. A kernel
            // file has one name.
            if st.st_nlink > 1 {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "a file with {} names (hard links): not a kernel file, and writing it \
                         would change the others",
                        st.st_nlink
                    ),
                ));
            }
            // Emptied as the shell's `echo 1 > file` (O_TRUNC) does.
            // SAFETY: ftruncate on a descriptor this function owns.
            if unsafe { libc::ftruncate(fd.as_raw_fd(), 0) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        set_blocking(fd.as_raw_fd())?;
        Ok((File::from(fd), u64::try_from(st.st_size).unwrap_or(0)))
    }

    /// Fails when `path` is a regular file of a file system that keeps what
    /// is written (a copy of `/proc` in a `--sysroot` tree), where a file
    /// the kernel takes a write to as a command (`1` switches on) would be
    /// changed for good, and what a tool puts back (`0`) is not what it held
    /// (`off`). The kernel's file systems (proc, sysfs, debugfs, tracefs)
    /// and FUSE, where simulated kernels answer, pass; nothing is opened for
    /// writing, so nothing is truncated.
    pub fn refuse_disk_file(&self, path: &str) -> io::Result<()> {
        let fd = self.open_raw(path, libc::O_PATH)?;
        if kind_of_mode(fstat(fd.as_raw_fd())?.st_mode) != "regular file" {
            // Opening it says what it is.
            return Ok(());
        }
        let fs = fstatfs(fd.as_raw_fd())?;
        let kernel_or_fuse = [
            libc::PROC_SUPER_MAGIC,
            libc::SYSFS_MAGIC,
            libc::DEBUGFS_MAGIC,
            libc::TRACEFS_MAGIC,
            libc::FUSE_SUPER_MAGIC,
        ];
        if kernel_or_fuse.contains(&fs.f_type) {
            return Ok(());
        }
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a regular file on a disk file system, not the kernel's: nothing written (a copy \
             of /proc would be changed for good; a kernel file takes a write as a command)",
        ))
    }

    /// Whether `path` is a file of procfs: the running kernel's, also in a
    /// `--sysroot` tree (`/host` in a container, the host's `/proc`
    /// mounted in it). False when it cannot be looked at.
    pub fn is_procfs(&self, path: &str) -> bool {
        self.open_raw(path, libc::O_PATH)
            .and_then(|fd| fstatfs(fd.as_raw_fd()))
            .is_ok_and(|fs| fs.f_type == libc::PROC_SUPER_MAGIC)
    }

    /// Calls `each` with the entry names of directory `path` (without `.`
    /// and `..`), in the order the directory returns them.
    pub fn for_each_entry(&self, path: &str, each: &mut dyn FnMut(&OsStr)) -> io::Result<()> {
        let fd = self.open_raw(path, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NONBLOCK)?;
        read_directory(fd, each)
    }

    /// The target of symbolic link `path`, as stored in the link.
    pub fn read_link(&self, path: &str) -> io::Result<PathBuf> {
        link_target(&self.open_raw(path, libc::O_PATH | libc::O_NOFOLLOW)?)
    }

    /// `fstat(2)` of what `path` resolves to, without opening it for I/O.
    pub fn stat(&self, path: &str) -> io::Result<libc::stat> {
        let fd = self.open_raw(path, libc::O_PATH)?;
        fstat(fd.as_raw_fd())
    }

    /// Resolves `path` inside the root like `realpath(3)`, giving a kernel path.
    pub fn canonicalize(&self, path: &str) -> io::Result<String> {
        if self.is_host_root() {
            return Ok(name_of(&std::fs::canonicalize(osname::to_os_string(path))?));
        }
        let fd = self.open_raw(path, libc::O_PATH)?;
        let real = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))?;
        let root = std::fs::canonicalize(&self.path)?;
        let inside = real.strip_prefix(&root).map_err(|_| {
            io::Error::other(format!(
                "resolves outside {}",
                crate::common::escape::path(&self.path)
            ))
        })?;
        Ok(name_of(&Path::new("/").join(inside)))
    }

    /// Opens `path` with `flags` (plus `O_CLOEXEC`, and `O_NOCTTY` unless
    /// `O_PATH`, which `openat2` allows with no other flag), inside the root.
    fn open_raw(&self, path: &str, flags: i32) -> io::Result<OwnedFd> {
        let flags = match flags & libc::O_PATH {
            0 => flags | libc::O_CLOEXEC | libc::O_NOCTTY,
            _ => flags | libc::O_CLOEXEC,
        };
        if self.is_host_root() {
            let c = c_path(path)?;
            // SAFETY: a NUL-terminated path; the result is checked.
            return owned(unsafe { libc::open(c.as_ptr(), flags) });
        }
        let relative = path.trim_start_matches('/');
        let c = c_path(if relative.is_empty() { "." } else { relative })?;
        openat2_in_root(self.dir()?.as_raw_fd(), &c, flags as u64)
    }

    /// The root directory, opened once.
    fn dir(&self) -> io::Result<&OwnedFd> {
        if let Some(fd) = self.dir.get() {
            return Ok(fd);
        }
        let c = c_bytes(self.path.as_os_str().as_bytes())?;
        // SAFETY: a NUL-terminated path; the result is checked.
        let fd = owned(unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        })
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("{}: {e}", crate::common::escape::path(&self.path)),
            )
        })?;
        Ok(self.dir.get_or_init(|| fd))
    }

    /// What `path` is, for a message ("FIFO", "socket"...).
    fn kind_of(&self, path: &str) -> Option<&'static str> {
        let fd = self.open_raw(path, libc::O_PATH).ok()?;
        file_kind(&fd).ok()
    }
}

/// How many times a lookup that raced with a rename is tried again.
const RENAME_RACE_RETRIES: u32 = 64;

/// `openat2(dir, path, flags, RESOLVE_IN_ROOT)`.
///
/// The kernel answers EAGAIN when a rename or mount anywhere on the system
/// happened while it resolved a `..` step (it cannot then prove the step
/// stayed inside the root). sysfs links are made of `..`, so on a busy
/// machine that happens: the lookup is tried again, a bounded number of
/// times.
fn openat2_in_root(dir: RawFd, path: &CStr, flags: u64) -> io::Result<OwnedFd> {
    // SAFETY: `open_how` is plain data; all-zero is "no mode, no resolve flags".
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = flags;
    how.resolve = libc::RESOLVE_IN_ROOT;
    let mut tries = 0;
    loop {
        // SAFETY: valid descriptor, NUL-terminated path, and `how` with its size.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                dir,
                path.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        return match owned(fd as RawFd) {
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) && tries < RENAME_RACE_RETRIES => {
                tries += 1;
                continue;
            }
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                "renames elsewhere on the system kept racing with the lookup under --sysroot; try again",
            )),
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "--sysroot needs openat2(2) (Linux 5.6 or later) to keep every path inside the root",
            )),
            other => other,
        };
    }
}

/// `path` as the kernel takes it: the bytes [`osname`] carried, NUL-ended.
fn c_path(path: &str) -> io::Result<CString> {
    c_bytes(&osname::to_bytes(path))
}

fn c_bytes(path: &[u8]) -> io::Result<CString> {
    CString::new(path)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))
}

/// A path from the kernel as a string, invalid UTF-8 kept ([`osname`]).
fn name_of(path: &Path) -> String {
    osname::from_bytes(path.as_os_str().as_bytes()).into_owned()
}

/// Takes ownership of a descriptor a system call returned, or its error.
fn owned(fd: RawFd) -> io::Result<OwnedFd> {
    if fd < 0 {
        Err(io::Error::last_os_error())
    } else {
        // SAFETY: a fresh descriptor nobody else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }
}

/// The file system `fd` is on (`f_type` says which kind).
pub(crate) fn fstatfs(fd: RawFd) -> io::Result<libc::statfs> {
    // SAFETY: `statfs` is plain data filled by fstatfs on success.
    let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid descriptor and a writable `statfs`.
    if unsafe { libc::fstatfs(fd, &mut fs) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fs)
}

/// The status of open descriptor `fd`.
pub(crate) fn fstat(fd: RawFd) -> io::Result<libc::stat> {
    // SAFETY: `stat` is plain data filled by fstat on success.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid descriptor and a writable `stat`.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

/// The target of `link`, a symbolic link opened `O_PATH | O_NOFOLLOW`,
/// as stored in it: read from that descriptor, so it is the link that was
/// opened (and perhaps checked), not whatever has its name by now.
pub(crate) fn link_target(link: &OwnedFd) -> io::Result<PathBuf> {
    let mut target = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: an O_PATH descriptor with an empty name names the link
    // itself (Linux ≥ 2.6.39); at most `target.len()` bytes are written
    // into `target`.
    let len = unsafe {
        libc::readlinkat(
            link.as_raw_fd(),
            c"".as_ptr(),
            target.as_mut_ptr().cast(),
            target.len(),
        )
    };
    let len = usize::try_from(len).map_err(|_| io::Error::last_os_error())?;
    if len == target.len() {
        return Err(io::Error::from_raw_os_error(libc::ENAMETOOLONG));
    }
    target.truncate(len);
    Ok(PathBuf::from(OsStr::from_bytes(&target)))
}

/// The type of an open file, in words.
pub(crate) fn file_kind(fd: &impl AsRawFd) -> io::Result<&'static str> {
    Ok(kind_of_mode(fstat(fd.as_raw_fd())?.st_mode))
}

/// The file type in `st_mode`, in words.
pub(crate) fn kind_of_mode(mode: libc::mode_t) -> &'static str {
    match mode & libc::S_IFMT {
        libc::S_IFREG => "regular file",
        libc::S_IFDIR => "directory",
        libc::S_IFIFO => "FIFO",
        libc::S_IFCHR => "character device",
        libc::S_IFBLK => "block device",
        libc::S_IFSOCK => "socket",
        libc::S_IFLNK => "symbolic link",
        _ => "special file",
    }
}

fn not_regular(kind: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("not a regular file but a {kind}: not a kernel file"),
    )
}

/// Clears `O_NONBLOCK`: the open is done, reads and writes may wait for the kernel.
pub(crate) fn set_blocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a valid descriptor with integer arguments.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Reads the entries of an open directory with `getdents64(2)`, 4 kB at
/// a time.
///
/// Not `readdir(3)`: glibc's `opendir` allocates a 32 kB buffer for every
/// listing, and iostat lists `/sys/block` at every sample; at 1,000 devices
/// the kernel fills all of it, 28 kB more resident heap than this buffer on
/// the stack (BENCHMARKS.md, "Read-only data a run reads, first").
fn read_directory(fd: OwnedFd, each: &mut dyn FnMut(&OsStr)) -> io::Result<()> {
    // u64s: the kernel's records are 8-byte aligned.
    let mut buf = [0u64; 512];
    loop {
        // SAFETY: `fd` is an open directory; `buf` is writable for its size.
        let filled = unsafe {
            libc::syscall(
                libc::SYS_getdents64,
                fd.as_raw_fd(),
                buf.as_mut_ptr(),
                std::mem::size_of_val(&buf),
            )
        };
        let filled = match usize::try_from(filled) {
            Ok(0) => return Ok(()),
            Ok(n) => n.min(std::mem::size_of_val(&buf)),
            Err(_) => return Err(io::Error::last_os_error()),
        };
        // SAFETY: the first `filled` bytes of `buf` are initialised (the
        // whole array is) and u8 has no alignment.
        let records = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), filled) };
        dirent_names(records, &mut |name| {
            if name != b"." && name != b".." {
                each(OsStr::from_bytes(name));
            }
        })?;
    }
}

/// Calls `each` with the names in `records`, a buffer `getdents64(2)`
/// filled: each record is `d_ino` (8 bytes), `d_off` (8), `d_reclen` (2),
/// `d_type` (1) and the NUL-terminated name, padded to `d_reclen`.
fn dirent_names(records: &[u8], each: &mut dyn FnMut(&[u8])) -> io::Result<()> {
    const NAME_AT: usize = 19;
    let mut rest = records;
    while !rest.is_empty() {
        let reclen = match rest.get(16..18) {
            Some(len) => usize::from(u16::from_ne_bytes([len[0], len[1]])),
            None => 0,
        };
        let Some(record) = rest.get(NAME_AT..reclen) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("getdents64: a record of {reclen} bytes"),
            ));
        };
        let name_len = record.iter().position(|&b| b == 0).unwrap_or(record.len());
        each(&record[..name_len]);
        rest = &rest[reclen..];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::scratch::Scratch;
    use std::fs;
    use std::io::Read;

    /// A fresh directory for one test with an empty `root/proc`, removed
    /// when the test ends, also when it fails.
    fn scratch(name: &str) -> Scratch {
        let dir = crate::common::scratch::scratch(&format!("root-{name}"));
        fs::create_dir_all(dir.join("root/proc")).unwrap();
        dir
    }

    use crate::common::user_file::mkfifo;

    /// openat2 refuses a `..` step with EAGAIN when any rename happened on
    /// the system during the lookup; sysfs links are full of `..`, and a
    /// busy machine renames all the time.
    #[test]
    fn renames_elsewhere_do_not_fail_a_lookup_through_dot_dot() {
        let dir = scratch("rename-race");
        fs::create_dir_all(dir.join("root/sys/devices/pmu0")).unwrap();
        fs::create_dir_all(dir.join("root/sys/bus")).unwrap();
        fs::write(dir.join("root/sys/devices/pmu0/type"), "1\n").unwrap();
        std::os::unix::fs::symlink("../devices/pmu0", dir.join("root/sys/bus/pmu0")).unwrap();
        let renaming = dir.join("renames");
        fs::create_dir_all(&renaming).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let renamer = {
            let stop = std::sync::Arc::clone(&stop);
            std::thread::spawn(move || {
                let (a, b) = (renaming.join("a"), renaming.join("b"));
                fs::write(&a, "").unwrap();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    fs::rename(&a, &b).unwrap();
                    fs::rename(&b, &a).unwrap();
                }
            })
        };
        let root = Root::new(dir.join("root"));
        let failures = (0..20_000)
            .filter(|_| {
                root.open_file("/sys/bus/pmu0/../pmu0/type", Access::Read)
                    .is_err()
            })
            .count();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        renamer.join().unwrap();
        assert_eq!(failures, 0, "lookups failed while another thread renamed");
    }

    #[test]
    fn fifos_are_refused_at_once_for_reading_and_writing() {
        let dir = scratch("fifo");
        mkfifo(&dir.join("root/proc/stat"));
        for root in [Root::new(dir.join("root")), Root::new("/")] {
            let path = if root.is_host_root() {
                dir.join("root/proc/stat").to_string_lossy().into_owned()
            } else {
                "/proc/stat".to_string()
            };
            for access in [Access::Read, Access::Write] {
                let err = root.open_file(&path, access).unwrap_err();
                assert_eq!(
                    err.to_string(),
                    "not a regular file but a FIFO: not a kernel file",
                    "{access:?}"
                );
            }
        }
    }

    #[test]
    fn a_hard_link_is_never_written_and_the_file_it_shares_is_left() {
        let dir = scratch("hard-link");
        fs::write(dir.join("victim"), "precious\n").unwrap();
        fs::hard_link(dir.join("victim"), dir.join("root/proc/freq")).unwrap();
        fs::write(dir.join("root/proc/own"), "1000\n").unwrap();
        let root = Root::new(dir.join("root"));
        let err = root.open_file("/proc/freq", Access::Write).unwrap_err();
        assert_eq!(
            err.to_string(),
            "a file with 2 names (hard links): not a kernel file, and writing it would change \
             the others"
        );
        assert_eq!(
            fs::read_to_string(dir.join("victim")).unwrap(),
            "precious\n"
        );
        // Reading it is harmless; a file of one name is emptied and written.
        assert!(root.open_file("/proc/freq", Access::Read).is_ok());
        use std::io::Write;
        let mut own = root.open_file("/proc/own", Access::Write).unwrap();
        own.write_all(b"50\n").unwrap();
        assert_eq!(
            fs::read_to_string(dir.join("root/proc/own")).unwrap(),
            "50\n"
        );
    }

    #[test]
    fn devices_and_directories_are_not_kernel_files() {
        let root = Root::new("/");
        let err = root.open_file("/dev/zero", Access::Read).unwrap_err();
        assert!(err.to_string().contains("character device"), "{err}");
        let err = root.open_file("/proc", Access::Read).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EISDIR));
    }

    #[test]
    fn links_resolve_inside_the_root() {
        let dir = scratch("links");
        fs::write(dir.join("outside"), "secret\n").unwrap();
        fs::write(dir.join("root/proc/inside"), "kernel\n").unwrap();
        std::os::unix::fs::symlink(dir.join("outside"), dir.join("root/proc/abs")).unwrap();
        std::os::unix::fs::symlink("../../outside", dir.join("root/proc/rel")).unwrap();
        std::os::unix::fs::symlink("/proc/inside", dir.join("root/proc/ok")).unwrap();
        let root = Root::new(dir.join("root"));
        for link in ["/proc/abs", "/proc/rel"] {
            for access in [Access::Read, Access::Write] {
                let err = root.open_file(link, access).unwrap_err();
                assert_eq!(err.kind(), io::ErrorKind::NotFound, "{link} {access:?}");
            }
        }
        let mut text = String::new();
        root.open_file("/proc/ok", Access::Read)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "kernel\n");
        assert_eq!(root.canonicalize("/proc/ok").unwrap(), "/proc/inside");
        assert_eq!(
            root.read_link("/proc/ok").unwrap(),
            Path::new("/proc/inside")
        );
        assert_eq!(fs::read_to_string(dir.join("outside")).unwrap(), "secret\n");
        let mut names = Vec::new();
        root.for_each_entry("/proc", &mut |n| {
            names.push(n.to_string_lossy().into_owned())
        })
        .unwrap();
        names.sort();
        assert_eq!(names, ["abs", "inside", "ok", "rel"]);
    }

    /// One `getdents64` record of `name`, padded to 8 bytes.
    fn dirent(name: &[u8]) -> Vec<u8> {
        let reclen = (19 + name.len() + 1).next_multiple_of(8);
        let mut record = vec![0u8; reclen];
        record[..8].copy_from_slice(&7u64.to_ne_bytes());
        record[16..18].copy_from_slice(&(reclen as u16).to_ne_bytes());
        record[18] = libc::DT_DIR;
        record[19..19 + name.len()].copy_from_slice(name);
        record
    }

    fn names_of(records: &[u8]) -> io::Result<Vec<Vec<u8>>> {
        let mut names = Vec::new();
        dirent_names(records, &mut |n| names.push(n.to_vec()))?;
        Ok(names)
    }

    #[test]
    fn dirent_records_give_their_names() {
        let long = [b'x'; 255];
        let records = [
            dirent(b"."),
            dirent(b"sda"),
            dirent(b"nvme0n1"),
            dirent(&long),
        ]
        .concat();
        assert_eq!(
            names_of(&records).unwrap(),
            [
                b".".to_vec(),
                b"sda".to_vec(),
                b"nvme0n1".to_vec(),
                long.to_vec()
            ]
        );
        assert!(names_of(&[]).unwrap().is_empty());
    }

    #[test]
    fn a_record_that_does_not_fit_is_an_error_not_a_loop() {
        let whole = dirent(b"sda");
        // Cut short, a length of zero, a length past the buffer.
        let mut zero = whole.clone();
        zero[16..18].copy_from_slice(&0u16.to_ne_bytes());
        let mut past = whole.clone();
        past[16..18].copy_from_slice(&64u16.to_ne_bytes());
        for bad in [&whole[..10], &whole[..20], &zero[..], &past[..]] {
            let err = names_of(bad).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{bad:?}");
        }
    }

    #[test]
    fn a_directory_larger_than_the_buffer_is_listed_whole() {
        let dir = scratch("many");
        let block = dir.join("root/proc");
        // About 60 kB of records: fifteen reads of the 4 kB buffer.
        let mut expected: Vec<String> = (0..600)
            .map(|i| format!("device-{i:04}-{}", "n".repeat(80)))
            .collect();
        for name in &expected {
            fs::write(block.join(name), "").unwrap();
        }
        let root = Root::new(dir.join("root"));
        let mut names = Vec::new();
        root.for_each_entry("/proc", &mut |n| {
            names.push(n.to_string_lossy().into_owned())
        })
        .unwrap();
        names.sort();
        expected.sort();
        assert_eq!(names, expected);
    }
}
