//! Files a user names on the command line (a recording to replay or to
//! write, a trace, a topology): opened without ever blocking, and read a
//! bounded line at a time.
//!
//! A FIFO without a process at its other end blocks `open(2)` until one
//! comes, and a stop signal does not end that wait once the tools' handlers
//! are installed (they only raise a flag); a device such as `/dev/zero`
//! never ends. So files are opened with `O_NONBLOCK` and then switched back
//! to blocking I/O, devices, sockets and directories are refused, and a
//! reader never holds more than one line of [`LINE_LIMIT`] bytes. A FIFO
//! to read from is waited on with `poll(2)` until its writer has written
//! or gone, as `cat` would wait; the tools read their recordings before
//! installing their stop handlers, so a stop signal ends that wait.

use std::ffi::CStr;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

use super::entry;
use super::root::{file_kind, fstat, kind_of_mode, set_blocking};
use super::temp_file::{Directory, c_path, directory_of, euid, named_file};

/// The mode of every file the tools create: readable and writable by its
/// owner alone, as perf creates `perf.data`. A recording (`--record`,
/// `vcpustat trace record`) or a chart (`--svg`) holds what the run read,
/// which may be root's alone (`/proc/powerpc/vcpudispatch_stats`, the
/// Dispatch Trace Log in debugfs, system-wide perf counts, the block
/// tracepoints of `--latency`): one rule for every file and tool, rather
/// than one per input that each new input must get right. `chmod` shares
/// one. The exception is `--textfile`, published for a collector running as
/// another user ([`super::temp_file::Readers::Everyone`]). A file that
/// exists is never given a wider mode.
pub const OWNER_ONLY: u32 = 0o600;

/// The longest line a recording reader accepts (a frame of a 10,000-device
/// machine is about 2 MB), and the largest text file [`read_text`] reads.
pub const LINE_LIMIT: usize = 64 << 20;

/// Opens `path` for reading: a regular file, or a FIFO or pipe (a
/// recording decompressed on the fly, `--replay <(zcat run.rec.gz)`).
/// `-` is standard input, as `--record -` is standard output
/// (`iostat-rs --record - 1 3 | iostat-rs --replay - 1 3`).
pub fn open_to_read(path: &Path) -> io::Result<File> {
    // Standard input is descriptor 0 itself, read from where it is (a file
    // half read by the shell goes on from there), not opened again through
    // `/dev/stdin`, which a socket, a chroot without `/proc` or the file's
    // offset would defeat.
    let stdin = path.as_os_str() == "-";
    let (file, kind) = if stdin {
        let file = duplicate_standard_input()?;
        let kind = file_kind(&file)?;
        (file, kind)
    } else {
        open_without_waiting(path)?
    };
    if !matches!(kind, "regular file" | "FIFO") {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            match stdin {
                true => format!("standard input is a {kind}, expected a file or a pipe"),
                false => format!("a {kind}, expected a file"),
            },
        ));
    }
    if kind == "FIFO" {
        wait_for_writer(&file)?;
    }
    // Opened without blocking (standard input is taken as it is).
    if !stdin {
        set_blocking(file.as_raw_fd())?;
    }
    Ok(file)
}

/// What standard input is (its device and inode name the file).
pub(crate) fn standard_input_metadata() -> io::Result<std::fs::Metadata> {
    duplicate_standard_input()?.metadata()
}

/// Descriptor 0, duplicated (closed on `exec`).
fn duplicate_standard_input() -> io::Result<File> {
    // SAFETY: duplicates descriptor 0; the result is checked.
    let fd = unsafe { libc::fcntl(0, libc::F_DUPFD_CLOEXEC, 3) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor just made, owned by nothing else.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// Opens `path` for reading at any offset: a regular file only. A FIFO, a
/// pipe or a device is refused at once, never waited on.
pub fn open_regular(path: &Path) -> io::Result<File> {
    if path.as_os_str() == "-" {
        let file = duplicate_standard_input()?;
        return match file_kind(&file)? {
            "regular file" => Ok(file),
            kind => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "standard input is a {kind}, expected a regular file (it is read at random \
                     places): name the file, or redirect it (< FILE)"
                ),
            )),
        };
    }
    let (file, kind) = open_without_waiting(path)?;
    if kind != "regular file" {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("a {kind}, expected a regular file (it is read at random places)"),
        ));
    }
    set_blocking(file.as_raw_fd())?;
    Ok(file)
}

/// Opens `path` with `O_NONBLOCK`, so that a FIFO without a writer does not
/// block `open(2)`, and tells what it is.
fn open_without_waiting(path: &Path) -> io::Result<(File, &'static str)> {
    let fd: OwnedFd = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
        .map_err(|err| match err.raw_os_error() {
            // What open(2) gives for a socket.
            Some(libc::ENXIO) if is_socket(std::fs::metadata(path)) => a_socket(),
            _ => err,
        })?
        .into();
    let kind = file_kind(&fd)?;
    Ok((File::from(fd), kind))
}

/// Waits until FIFO `file`, opened without blocking, has data or had a
/// writer that left: before any writer opened it, a read would see the end
/// at once (the writer may be starting after this program).
fn wait_for_writer(file: &File) -> io::Result<()> {
    let mut fd = libc::pollfd {
        fd: file.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        // SAFETY: one valid pollfd, no timeout.
        match unsafe { libc::poll(&mut fd, 1, -1) } {
            n if n > 0 => return Ok(()),
            _ => {
                let err = io::Error::last_os_error();
                if err.kind() != io::ErrorKind::Interrupted {
                    return Err(err);
                }
            }
        }
    }
}

/// Creates (or empties) `path` for writing. A FIFO must have a reader
/// already; of the devices, only those that discard what they get
/// (`/dev/null`, `/dev/zero`, `/dev/full`) are taken, any other is refused
/// before anything is written: the tools run as root, and
/// `--record /dev/sdb` would write over the disk, a link to `/dev/port`
/// planted by a user who can write the directory do worse.
///
/// A regular file is written only under its own name: a symbolic link to
/// one is refused, and so is a file with other names (hard links), since a
/// user who can write the directory could plant either to make root empty
/// any file. A link to a FIFO or a pipe is followed, so that a shell's
/// process substitution (`--record >(gzip >run.rec.gz)`, a `/dev/fd/N`
/// link) works. The checks are made on the opened file, before it is
/// emptied.
///
/// In a sticky directory others can write (`/tmp`), what another user put
/// under the name first (a file or a FIFO of theirs, or a link), or a link
/// another user planted on the way to the directory, or on the way a link
/// of this user's under the name leads, is refused, as the
/// kernel's `fs.protected_regular`, `fs.protected_fifos` and
/// `fs.protected_symlinks` refuse root there: the recording would
/// otherwise go to that user. The name is opened relative to the directory,
/// opened once, so a directory renamed meanwhile cannot send it elsewhere.
///
/// A new file is readable by its owner only ([`OWNER_ONLY`]): a recording
/// holds what root alone may read, such as
/// `/proc/powerpc/vcpudispatch_stats` (mode 0600) and the hypervisor's
/// Dispatch Trace Log. An existing file keeps its mode, and so another
/// user's file or FIFO is refused in any directory, not only in sticky
/// ones: its owner can read it whatever its mode (or holds it open from
/// before), so a group member who made `run.rec` first in a shared
/// directory would get root's recording.
///
/// `-`, or a name of standard output ([`names_standard_output`]), is
/// standard output taken over for the recording alone
/// (`--record - | gzip >run.rec.gz`). Descriptor 1 then goes where
/// standard error goes, so that what the program prints afterwards (its
/// reports) stays out of it.
pub fn create(path: &Path) -> io::Result<File> {
    let file = create_unemptied(path)?;
    if !names_standard_output(path) && file.metadata()?.is_file() {
        file.set_len(0)?;
    }
    Ok(file)
}

/// [`create`], but a regular file that exists is left as it is, for the
/// caller to empty once it has something to write: `vcpustat trace
/// record` opens its output first, so that an unwritable one fails at
/// once, and a run that then cannot start must not have destroyed the
/// recording it would have replaced.
pub fn create_unemptied(path: &Path) -> io::Result<File> {
    if names_standard_output(path) {
        return take_standard_output();
    }
    let (file, through_link) = open_to_write(path)?;
    let meta = file.metadata()?;
    let kind = meta.file_type();
    if kind.is_dir() {
        return Err(a_directory());
    }
    // Looked at before the open too (`open_to_write`): again here, on what
    // was opened.
    if !names_a_descriptor(path) {
        refuse_device(meta.mode(), meta.rdev())?;
    }
    if kind.is_file() && !names_a_descriptor(path) {
        if through_link {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a symbolic link to a file: name the file itself",
            ));
        }
        if meta.nlink() > 1 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a file with {} names (hard links): emptying it would empty the others",
                    meta.nlink()
                ),
            ));
        }
    }
    // The shell's own descriptors (`--record /dev/stdout >file`) are
    // where the caller pointed it, whoever owns the file.
    if (kind.is_file() || kind.is_fifo()) && !names_a_descriptor(path) && meta.uid() != euid() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "a {} of user {}: not written to, as its owner could read what this user \
                 records ({})",
                kind_of_mode(meta.mode()),
                meta.uid(),
                instead(meta.mode())
            ),
        ));
    }
    set_blocking(file.as_raw_fd())?;
    Ok(file)
}

/// Fails for a device but those that discard what they get
/// ([`discards_writes`]), of `mode` and `rdev`: written to, a block device
/// would have its disk overwritten, a character device do more than
/// record. Looked at before the open as well as after it: opening alone
/// arms a watchdog, rewinds a tape on close.
fn refuse_device(mode: u32, rdev: u64) -> io::Result<()> {
    match mode & libc::S_IFMT {
        libc::S_IFBLK => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a block device, expected a file: writing would overwrite the disk",
        )),
        libc::S_IFCHR if !discards_writes(rdev) => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "a character device ({}:{}), expected a file: writing to a device does more than \
                 record (only /dev/null, /dev/zero and /dev/full are taken; to send the \
                 recording elsewhere, record to - and redirect it)",
                libc::major(rdev),
                libc::minor(rdev)
            ),
        )),
        _ => Ok(()),
    }
}

/// Whether character device `rdev` throws away what is written to it:
/// `/dev/null`, `/dev/zero` and `/dev/full` (major 1, `drivers/char/mem.c`
/// on every architecture). Any other device has effects beyond the
/// recording (`/dev/port`, `/dev/mem`, a watchdog, a SCSI generic
/// device), or hands the recording to whoever owns it (a terminal of
/// another user's), and a user who can write a directory on the path can
/// link the name to one.
fn discards_writes(rdev: u64) -> bool {
    libc::major(rdev) == 1 && matches!(libc::minor(rdev), 3 | 5 | 7)
}

/// What to do instead of writing into another user's file of `mode`: for
/// a FIFO, whose owner means to read what comes through it, the way to
/// feed their reader without a file of theirs.
fn instead(mode: libc::mode_t) -> &'static str {
    if mode & libc::S_IFMT == libc::S_IFIFO {
        "to feed its reader, record to `-` (standard output) and pipe that to it"
    } else {
        "choose another name, or have it removed first"
    }
}

/// True for the kernel's links to this process's own descriptors
/// (`/dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N`), which no user can
/// plant: `--record /dev/stderr 2>run.rec` writes where the shell pointed.
fn names_a_descriptor(path: &Path) -> bool {
    descriptor_named(path).is_some()
}

/// The descriptor that `path` names if it is one of the kernel's links to
/// this process's own ([`names_a_descriptor`]).
fn descriptor_named(path: &Path) -> Option<u32> {
    let text = path.to_str()?;
    match text {
        "/dev/stdout" => return Some(1),
        "/dev/stderr" => return Some(2),
        _ => {}
    }
    ["/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/"]
        .iter()
        .find_map(|dir| {
            // As procfs spells them: digits, no leading zero.
            let number = text.strip_prefix(dir)?;
            let digits = number.bytes().all(|b| b.is_ascii_digit());
            (digits && (number == "0" || !number.starts_with('0'))).then(|| number.parse().ok())?
        })
}

/// Whether [`create`] takes `path` as standard output: `-`, as perf and
/// tcpdump take it, or a name of descriptor 1 (`/dev/stdout`, `/dev/fd/1`).
pub fn names_standard_output(path: &Path) -> bool {
    path.as_os_str() == "-" || descriptor_named(path) == Some(1)
}

/// Standard output, for a recording alone: a descriptor of its own
/// (closed on `exec`), where the caller's shell pointed it, written as it
/// is (not emptied: `>>` appends), but never a block device. Descriptor 1
/// then goes where standard error goes, so that what the program prints
/// afterwards (its reports, the output of the command cxlstat runs) does
/// not mix into the recording, which a replay could then not read.
fn take_standard_output() -> io::Result<File> {
    if entry::standard_output_was_closed() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "standard output was closed when the program started (`>&-`): the recording \
             would be lost; point standard output at a file or a pipe",
        ));
    }
    let named = |err: io::Error| io::Error::new(err.kind(), format!("standard output: {err}"));
    // SAFETY: F_DUPFD_CLOEXEC duplicates descriptor 1, or fails.
    let fd = unsafe { libc::fcntl(1, libc::F_DUPFD_CLOEXEC, 3) };
    if fd < 0 {
        return Err(named(io::Error::last_os_error()));
    }
    // SAFETY: a descriptor just made, owned by nothing else.
    let file = unsafe { File::from_raw_fd(fd) };
    let out = fstat(file.as_raw_fd())?;
    if kind_of_mode(out.st_mode) == "block device" {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "standard output is a block device: writing would overwrite the disk",
        ));
    }
    refuse_shared_with_standard_error(&out)?;
    // SAFETY: dup2 of two descriptors of this process.
    if unsafe { libc::dup2(2, 1) } < 0 {
        return Err(named(io::Error::last_os_error()));
    }
    Ok(file)
}

/// Refuses standard output, `out`, when standard error is the same file
/// (`>run.rec 2>&1`, `2>&1 | gzip`, both on one terminal): the reports
/// [`take_standard_output`] sends to standard error would mix into the
/// recording, which a replay could then not read. `/dev/null`, which
/// nobody reads, may take both.
fn refuse_shared_with_standard_error(out: &libc::stat) -> io::Result<()> {
    let err = fstat(2)?;
    let same = (out.st_dev, out.st_ino) == (err.st_dev, err.st_ino);
    let null = out.st_mode & libc::S_IFMT == libc::S_IFCHR && out.st_rdev == libc::makedev(1, 3);
    if same && !null {
        // SAFETY: isatty on a descriptor number; a closed one is no terminal.
        let kind = if unsafe { libc::isatty(2) } == 1 {
            "terminal"
        } else {
            kind_of_mode(out.st_mode)
        };
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "standard output and standard error are the same {kind}: the reports would \
                 mix into the recording (pipe standard output alone: ... | gzip >run.rec.gz)"
            ),
        ));
    }
    Ok(())
}

/// Opens `path` to write without emptying it, creating a regular file if
/// nothing has the name, and never creating one through a link; tells
/// whether a symbolic link was followed to what was opened. What another
/// user may have planted is refused ([`create`]), also behind a link of
/// this user's: each link is followed as the directory walk follows one
/// ([`Directory::follow`]), checked, but the kernel's own links to open
/// files (`/dev/stdout` ends at `/proc/self/fd/1`), which it alone follows.
fn open_to_write(path: &Path) -> io::Result<(File, bool)> {
    let mut name = match named_file(path) {
        Some(name) => c_path(name)?,
        None if path.as_os_str().is_empty() => {
            return Err(io::Error::from_raw_os_error(libc::ENOENT));
        }
        None => return Err(a_directory()),
    };
    let mut dir = Directory::open(directory_of(path))?;
    let mut links = 0;
    // A name that changes between the tries (a link put in the place of a
    // file, or the other way) is tried again from the start, a few times.
    let mut tries = 0;
    loop {
        let through_link = links > 0;
        // A device is refused before it is opened (a link's own status
        // passes: it is followed below, and its target looked at then).
        if let Some(st) = dir.status_of(&name)? {
            refuse_device(st.st_mode, st.st_rdev)?;
        }
        // Through a link, nothing is created: a link to nothing is refused.
        let create = if through_link { 0 } else { libc::O_CREAT };
        match open_entry(&dir, &name, create | libc::O_NOFOLLOW) {
            Ok(file) => {
                refuse_planted(&dir, &fstat(file.as_raw_fd())?)?;
                return Ok((file, through_link));
            }
            Err(err) if err.raw_os_error() == Some(libc::ELOOP) => {}
            // The kernel's own refusal there (another user's link, or with
            // `fs.protected_*` on, file or FIFO): said in the words of the other refusals.
            Err(err) if err.raw_os_error() == Some(libc::EACCES) => {
                if let Some(st) = dir.status_of(&name)? {
                    refuse_planted(&dir, &st)?;
                }
                return Err(err);
            }
            Err(err) if through_link && err.kind() == io::ErrorKind::NotFound => {
                return Err(link_to_nothing());
            }
            Err(err) => return Err(err),
        }
        let link = match dir.open_place(&name) {
            Ok((place, st)) if st.st_mode & libc::S_IFMT == libc::S_IFLNK => Some((place, st)),
            Ok(_) => None,
            Err(err) if err.kind() == io::ErrorKind::NotFound => None,
            Err(err) => return Err(err),
        };
        let Some((link, st)) = link else {
            tries += 1;
            if tries == 3 {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    "replaced again and again while it was opened: not written",
                ));
            }
            continue;
        };
        // A link of this user's or the directory owner's, which no one
        // else can replace in a sticky directory.
        refuse_planted(&dir, &st)?;
        if dir.in_procfs()? {
            // The kernel's links to open files: what they lead to, unless
            // they are this process's own (`/dev/stdout` where the shell
            // pointed it).
            if !names_a_descriptor(path)
                && let Some(target) = dir.status_through(&name)?
            {
                refuse_device(target.st_mode, target.st_rdev)?;
            }
            return match open_entry(&dir, &name, 0) {
                Ok(file) => Ok((file, true)),
                Err(err) if err.kind() == io::ErrorKind::NotFound => Err(link_to_nothing()),
                Err(err) => Err(err),
            };
        }
        (dir, name) = dir
            .follow(&link, &mut links)
            .map_err(|err| match err.raw_os_error() {
                Some(libc::EISDIR) => a_directory(),
                _ if err.kind() == io::ErrorKind::NotFound => link_to_nothing(),
                _ => err,
            })?;
    }
}

/// Opens `name` in `dir` to write, with `extra` flags; a FIFO without a
/// reader and a directory said in words.
fn open_entry(dir: &Directory, name: &CStr, extra: i32) -> io::Result<File> {
    let flags = libc::O_WRONLY | libc::O_NONBLOCK | libc::O_NOCTTY | extra;
    dir.open_entry(name, flags, OWNER_ONLY)
        .map_err(|err| match err.raw_os_error() {
            Some(libc::ENXIO) if matches!(dir.status_of(name), Ok(Some(st)) if st.st_mode & libc::S_IFMT == libc::S_IFSOCK) => {
                a_socket()
            }
            Some(libc::ENXIO) => io::Error::new(
                io::ErrorKind::NotConnected,
                "a FIFO that no process reads: start its reader first",
            ),
            Some(libc::EISDIR) => a_directory(),
            _ => err,
        })
}

/// Whether `meta` is a socket's.
fn is_socket(meta: io::Result<std::fs::Metadata>) -> bool {
    meta.is_ok_and(|m| m.file_type().is_socket())
}

/// The error for a socket, which open(2) refuses with ENXIO, the error of
/// a FIFO without a reader.
fn a_socket() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "a socket, expected a file or a FIFO (a socket cannot be opened)",
    )
}

/// A link followed to a name nothing has.
fn link_to_nothing() -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        "a symbolic link to nothing: name the file itself",
    )
}

/// Fails when `st`, what has the name in `dir`, is another user's in a
/// sticky directory others can write ([`Directory::planted_by`]).
fn refuse_planted(dir: &Directory, st: &libc::stat) -> io::Result<()> {
    match dir.planted_by(st)? {
        None => Ok(()),
        Some(uid) => Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "a {} of user {uid} in a sticky directory others can write: not written to \
                 ({})",
                kind_of_mode(st.st_mode),
                instead(st.st_mode)
            ),
        )),
    }
}

/// The error for a directory named as a file to write, worded as `--svg`
/// and `--textfile` word it.
fn a_directory() -> io::Error {
    io::Error::new(
        io::ErrorKind::IsADirectory,
        "a directory, expected a regular file or a new name",
    )
}

/// Reads the whole of text file `path` (a topology), opened as
/// [`open_to_read`] opens it; more than [`LINE_LIMIT`] bytes is an error.
pub fn read_text(path: &Path) -> io::Result<String> {
    let mut text = String::new();
    open_to_read(path)?
        .take(LINE_LIMIT as u64 + 1)
        .read_to_string(&mut text)?;
    if text.len() > LINE_LIMIT {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {} MiB", LINE_LIMIT >> 20),
        ));
    }
    Ok(text)
}

/// Reads the next line of `reader` into `line` (cleared first), newline
/// included; returns its length, 0 at the end. A line longer than
/// [`LINE_LIMIT`] is an error, read no further than that.
pub fn read_line_bounded(reader: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<usize> {
    line.clear();
    let n = reader
        .by_ref()
        .take(LINE_LIMIT as u64 + 1)
        .read_until(b'\n', line)?;
    if n > LINE_LIMIT {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a line longer than {} MiB", LINE_LIMIT >> 20),
        ));
    }
    Ok(n)
}

/// Makes a FIFO at `path` (mode 0600), for the tests of the readers that
/// take one.
#[cfg(test)]
pub(crate) fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::scratch::Scratch;
    use std::path::PathBuf;

    /// A fresh directory for one test, removed when the test ends, also
    /// when it fails.
    fn scratch(name: &str) -> Scratch {
        crate::common::scratch::scratch(&format!("user-{name}"))
    }

    /// Written to, a device other than those that discard what they get
    /// would do more than record; a link to one is refused as the device
    /// itself is.
    #[test]
    fn only_devices_that_discard_writes_are_written_to() {
        for discarding in ["/dev/null", "/dev/zero", "/dev/full"] {
            create(Path::new(discarding)).unwrap();
        }
        let dir = scratch("chardev");
        let link = dir.join("run.rec");
        std::os::unix::fs::symlink("/dev/urandom", &link).unwrap();
        for path in [Path::new("/dev/urandom"), &link] {
            let err = create(path).unwrap_err();
            assert!(
                err.to_string()
                    .starts_with("a character device (1:9), expected a file: "),
                "{}: {err}",
                path.display()
            );
        }
    }

    /// open(2) refuses a socket with ENXIO, as a FIFO without a reader:
    /// said as what it is, to write and to read.
    #[test]
    fn a_socket_is_named_as_such() {
        let dir = scratch("socket");
        let path = dir.join("s.rec");
        let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let want = "a socket, expected a file or a FIFO (a socket cannot be opened)";
        assert_eq!(create(&path).unwrap_err().to_string(), want);
        assert_eq!(open_to_read(&path).unwrap_err().to_string(), want);
    }

    #[test]
    fn devices_and_directories_are_refused_and_fifos_do_not_block() {
        let err = open_to_read(Path::new("/dev/zero")).unwrap_err();
        assert_eq!(err.to_string(), "a character device, expected a file");
        let err = open_to_read(Path::new("/")).unwrap_err();
        assert_eq!(err.to_string(), "a directory, expected a file");
        let err = read_text(Path::new("/dev/zero")).unwrap_err();
        assert_eq!(err.to_string(), "a character device, expected a file");
        let dir = scratch("fifo");
        let fifo = dir.join("ff");
        mkfifo(&fifo);
        // A writer that comes after the reader opened: its text is read,
        // not an end seen before it came.
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(100));
                std::fs::write(&fifo, "late\n").unwrap();
            })
        };
        let mut text = String::new();
        open_to_read(&fifo)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        writer.join().unwrap();
        assert_eq!(text, "late\n");
        // No reader: refused at once, not a wait.
        let err = create(&fifo).unwrap_err();
        assert_eq!(
            err.to_string(),
            "a FIFO that no process reads: start its reader first"
        );
    }

    #[test]
    fn only_a_regular_file_is_opened_to_be_read_at_random_places() {
        let dir = scratch("regular");
        let fifo = dir.join("ff");
        mkfifo(&fifo);
        for (path, kind) in [
            (fifo.as_path(), "a FIFO"),
            (Path::new("/dev/zero"), "a character device"),
            (Path::new("/"), "a directory"),
        ] {
            let err = open_regular(path).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("{kind}, expected a regular file (it is read at random places)")
            );
        }
        let file = dir.join("f");
        std::fs::write(&file, "x").unwrap();
        let mut text = String::new();
        open_regular(&file)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "x");
    }

    #[test]
    fn a_new_file_is_for_its_owner_only_and_an_existing_one_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch("mode");
        let fresh = dir.join("new.rec");
        create(&fresh).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&fresh), 0o600);
        let shared = dir.join("shared.rec");
        std::fs::write(&shared, "old").unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o644)).unwrap();
        create(&shared).unwrap();
        assert_eq!(mode(&shared), 0o644);
        assert_eq!(std::fs::metadata(&shared).unwrap().len(), 0);
    }

    #[test]
    fn a_path_naming_a_directory_is_refused_not_the_file_before_it() {
        let dir = scratch("dir-path");
        let file = dir.join("run.rec");
        std::fs::write(&file, "old").unwrap();
        for ending in ["/", "/."] {
            let path = PathBuf::from(format!("{}{ending}", file.display()));
            let err = create(&path).unwrap_err();
            assert_eq!(
                err.to_string(),
                "a directory, expected a regular file or a new name",
                "{}",
                path.display()
            );
        }
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "old");
        let err = create(Path::new("")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
    }

    #[test]
    fn links_planted_to_make_root_empty_a_file_are_refused() {
        let dir = scratch("links");
        let victim = dir.join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let soft = dir.join("soft.rec");
        std::os::unix::fs::symlink(&victim, &soft).unwrap();
        let err = create(&soft).unwrap_err();
        assert_eq!(
            err.to_string(),
            "a symbolic link to a file: name the file itself"
        );
        let hard = dir.join("hard.rec");
        std::fs::hard_link(&victim, &hard).unwrap();
        let err = create(&hard).unwrap_err();
        assert_eq!(
            err.to_string(),
            "a file with 2 names (hard links): emptying it would empty the others"
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        // A dangling link creates nothing where it points.
        let dangling = dir.join("dangling.rec");
        std::os::unix::fs::symlink(dir.join("elsewhere"), &dangling).unwrap();
        let err = create(&dangling).unwrap_err();
        assert_eq!(
            err.to_string(),
            "a symbolic link to nothing: name the file itself"
        );
        assert!(!dir.join("elsewhere").exists());
        // A link to a FIFO (as /dev/fd/N is, for `>(gzip)`) is followed.
        let fifo = dir.join("ff");
        mkfifo(&fifo);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
        };
        let to_fifo = dir.join("pipe.rec");
        std::os::unix::fs::symlink(&fifo, &to_fifo).unwrap();
        // The reader may not have opened yet: retry until it has.
        let mut file = loop {
            match create(&to_fifo) {
                Ok(file) => break file,
                Err(err) if err.kind() == io::ErrorKind::NotConnected => {
                    std::thread::sleep(std::time::Duration::from_millis(10))
                }
                Err(err) => panic!("{err}"),
            }
        };
        std::io::Write::write_all(&mut file, b"frame\n").unwrap();
        drop(file);
        assert_eq!(reader.join().unwrap(), "frame\n");
        // The kernel's links to this process's descriptors are not planted.
        assert!(names_a_descriptor(Path::new("/dev/stdout")));
        assert!(names_a_descriptor(Path::new("/dev/fd/63")));
        assert!(names_a_descriptor(Path::new("/proc/self/fd/1")));
        assert!(!names_a_descriptor(Path::new("/dev/fd/../shm/x")));
        assert!(!names_a_descriptor(Path::new("/dev/shm/x")));
        assert!(!names_a_descriptor(Path::new("/dev/fd/01")));
        assert!(!names_a_descriptor(Path::new("/dev/fd/")));
        // Standard output, which the recording takes over.
        for name in ["-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"] {
            assert!(names_standard_output(Path::new(name)), "{name}");
        }
        for name in [
            "./-",
            "--",
            "/dev/stderr",
            "/dev/fd/10",
            "/proc/1/fd/1",
            "stdout",
        ] {
            assert!(!names_standard_output(Path::new(name)), "{name}");
        }
    }

    #[test]
    fn a_line_over_the_limit_is_an_error_after_reading_no_more_than_it() {
        let mut endless = io::BufReader::new(io::repeat(b'x'));
        let mut line = Vec::new();
        let err = read_line_bounded(&mut endless, &mut line).unwrap_err();
        assert_eq!(err.to_string(), "a line longer than 64 MiB");
        assert_eq!(line.len(), LINE_LIMIT + 1);
        let mut two = io::Cursor::new(b"a\nbc".to_vec());
        assert_eq!(read_line_bounded(&mut two, &mut line).unwrap(), 2);
        assert_eq!(line, b"a\n");
        assert_eq!(read_line_bounded(&mut two, &mut line).unwrap(), 2);
        assert_eq!(line, b"bc");
        assert_eq!(read_line_bounded(&mut two, &mut line).unwrap(), 0);
    }
}
