//! Replacing a file atomically through a temporary file beside it, renamed
//! over the target: a reader sees the old file or the new one, never a
//! part (`--textfile`, `--svg`).
//!
//! The temporary is always created afresh (`O_CREAT | O_EXCL`, which also
//! refuses a symbolic link, dangling or not), never opened if it exists,
//! under a name with a random part, tried anew if taken, and nothing under
//! a taken name is ever removed: the tools run as root, and in a directory
//! others can write, a link planted under a predictable name would make
//! them write through it to any file, and a directory planted there would
//! end a live run.
//!
//! The target itself must be a regular file or not exist yet: a rename
//! replaces whatever has the name, so `--svg /dev/null` or `--textfile
//! /dev/stdout` would otherwise replace the device node or the link with a
//! file. In a sticky directory others can write (`/tmp`), a target another
//! user owns is not replaced, as the kernel's `fs.protected_regular` keeps
//! root from opening it there. A target this user owns keeps its
//! permissions (not a set-user-ID or set-group-ID bit); a new one is its
//! owner's alone, but an exposition for a collector ([`Readers`]).
//!
//! The directory is opened once for each replacement and every step names
//! files relative to it, so a directory renamed, or replaced by a link,
//! while a file is written cannot send the rest elsewhere. It is opened a
//! name at a time, and a link on the way to it, or on the way a link leads,
//! that another user owns in a sticky directory others can write is not
//! followed, as the kernel's `fs.protected_symlinks` would refuse (with it
//! off, a user of `/tmp` could send a root run's output into any
//! directory).

use std::ffi::{CStr, CString, OsStr, OsString};
use std::fs::{self, File};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use super::privilege;
use super::root::{fstat, fstatfs, kind_of_mode, link_target};
use super::user_file::{self, OWNER_ONLY};

/// Who may read a file [`replace_with`] creates (see
/// [`super::user_file::OWNER_ONLY`] for the rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readers {
    /// Its owner alone: mode [`super::user_file::OWNER_ONLY`] (less the
    /// umask), as every other file the tools create (`--svg`).
    Owner,
    /// Every user: mode 0644 whatever the umask, for an exposition that a
    /// collector running as another user reads (`--textfile`).
    Everyone,
}

/// Replaces `path` with what `write` writes into a new file, readable by
/// `readers`, or with the permissions of the file it replaces if this user
/// owns it (never wider). The temporary file is its owner's alone while it
/// is written. On an error the temporary file is removed and `path` is
/// left as it was.
pub fn replace_with(
    path: &Path,
    readers: Readers,
    write: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    let name = file_name(path)?;
    let dir = Directory::open(directory_of(path))?;
    let kept = dir.refuse_non_regular(name)?;
    let (temp, mut file) = dir.create_fresh(name, OWNER_ONLY)?;
    // The mode is given once the contents are whole: until then the
    // temporary is its owner's alone, whatever the file it becomes.
    let written = write(&mut file)
        .and_then(|()| give_mode(&file, kept, readers))
        .and_then(|()| dir.rename(&temp, name));
    if written.is_err() {
        dir.remove(&temp);
    }
    written
}

/// Gives the new `file` the permissions of the target it replaces, `kept`,
/// if this user owns it (a set-user-ID or set-group-ID bit, or another
/// user's choice, would otherwise pass to a file of root's); else those
/// `readers` get.
fn give_mode(file: &File, kept: Option<libc::stat>, readers: Readers) -> io::Result<()> {
    let mode = match kept.filter(|k| k.st_uid == euid()) {
        Some(kept) => kept.st_mode & 0o777,
        None if readers == Readers::Everyone => 0o644,
        // Created so.
        None => return Ok(()),
    };
    // SAFETY: fchmod on an open descriptor.
    cvt(unsafe { libc::fchmod(file.as_raw_fd(), mode) })
}

/// Checks, before a run, the files the caller chose for `--svg`,
/// `--textfile` and `--record`: refused with raised privileges
/// ([`privilege::refuse_chosen_outputs`]), then each file as
/// `check_targets` checks it, and none may be one of the `inputs` the run
/// reads (`--replay FILE`, a trace recording), which writing would destroy.
/// One call for every tool's start.
pub fn check_chosen_outputs(
    svg: Option<&Path>,
    textfile: Option<&Path>,
    recording: Option<&Path>,
    inputs: &[(&str, &Path)],
) -> Result<(), String> {
    if svg.is_none() && textfile.is_none() && recording.is_none() {
        return Ok(());
    }
    check_outputs(svg, textfile, recording, inputs)
}

/// [`check_chosen_outputs`] when there is an output to check: out of line,
/// as a usual run has none (its code stays out of the main job's pages).
#[cold]
#[inline(never)]
fn check_outputs(
    svg: Option<&Path>,
    textfile: Option<&Path>,
    recording: Option<&Path>,
    inputs: &[(&str, &Path)],
) -> Result<(), String> {
    privilege::refuse_chosen_outputs(svg, textfile)?;
    // Standard output is no file of a directory that the others could name.
    let recording = recording.filter(|path| !user_file::names_standard_output(path));
    let outputs = [("--svg", svg), ("--textfile", textfile)];
    check_targets(&outputs, recording)?;
    let written = outputs.into_iter().chain([("--record", recording)]);
    for (option, path) in written.filter_map(|(o, p)| Some((o, p?))) {
        let Some(place) = place_of(path) else {
            continue;
        };
        if let Some((reader, _)) = inputs.iter().find(|(_, i)| reads_place(i, path, &place)) {
            return Err(format!(
                "{option} {}: the file {reader} reads: writing it would destroy it",
                crate::common::escape::path(path)
            ));
        }
    }
    Ok(())
}

/// Checks each file an option such as `--svg` or `--textfile` will
/// replace: it has a file name, its directory exists, it is a regular file
/// or does not exist yet, and no other of these options, nor the
/// `recording` `--record` writes, names the same file (the one written
/// last would take the other's place). The error names the option and the
/// file.
fn check_targets(
    targets: &[(&str, Option<&Path>)],
    recording: Option<&Path>,
) -> Result<(), String> {
    let mut places: Vec<(&str, PathBuf)> = Vec::new();
    let named = |option: &str, path: &Path, what: String| {
        format!("{option} {}: {what}", crate::common::escape::path(path))
    };
    for (option, path) in targets {
        if let Some(path) = path {
            check_target(path).map_err(|err| named(option, path, err.to_string()))?;
        }
    }
    let all = targets.iter().copied().chain([("--record", recording)]);
    for (option, path) in all.filter_map(|(o, p)| Some((o, p?))) {
        let Some(place) = place_of(path) else {
            continue;
        };
        if let Some((other, _)) = places.iter().find(|(_, p)| *p == place) {
            let what = format!("the same file as {other}'s: one would replace the other");
            return Err(named(option, path, what));
        }
        places.push((option, place));
    }
    Ok(())
}

fn check_target(path: &Path) -> io::Result<()> {
    if path.as_os_str() == "-" {
        // What `--record -` means would be taken for this too.
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "`-` is no standard output here: the file is replaced, not written into \
             (./- names a file called -)",
        ));
    }
    let name = file_name(path)?;
    if name.len() > NAME_MAX {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "a file name of {} bytes, longer than the {NAME_MAX} a name may have",
                name.len()
            ),
        ));
    }
    let dir = directory_of(path);
    let in_dir = |err: io::Error| {
        io::Error::new(
            err.kind(),
            format!("{}: {err}", crate::common::escape::path(dir)),
        )
    };
    if !fs::metadata(dir).map_err(in_dir)?.is_dir() {
        return Err(in_dir(io::Error::from_raw_os_error(libc::ENOTDIR)));
    }
    // The temporary is made there: a directory it cannot be made in (no
    // write permission, a read-only file system) is said before the run,
    // not at its first report.
    writable(dir).map_err(in_dir)?;
    Directory::open(dir)?.refuse_non_regular(name).map(drop)
}

/// The longest file name Linux file systems take.
const NAME_MAX: usize = 255;

/// The bytes of a target's name its temporary's name keeps: with the rest
/// (`.`, `.PID.RANDOM.tmp`, at most 30 bytes) within [`NAME_MAX`].
const TEMP_NAME_KEEPS: usize = 200;

/// Whether this process may create files in `dir` (`faccessat` with the
/// effective ids, as creating them is checked).
fn writable(dir: &Path) -> io::Result<()> {
    let c_dir = c_path(dir.as_os_str())?;
    // SAFETY: a NUL-terminated path; faccessat only reads it.
    cvt(unsafe {
        libc::faccessat(
            libc::AT_FDCWD,
            c_dir.as_ptr(),
            libc::W_OK | libc::X_OK,
            libc::AT_EACCESS,
        )
    })
}

/// The directory `path` is in (`.` for a bare name).
pub(crate) fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// Whether input `input` reads the file output `output` (at `place`)
/// would write: the same place, or, for `-` (standard input), the same
/// file as the one standard input is (`--replay - --svg run.rec <run.rec`
/// would replace the recording being read).
fn reads_place(input: &Path, output: &Path, place: &Path) -> bool {
    if input.as_os_str() != "-" {
        return place_of(input).as_deref() == Some(place);
    }
    use std::os::unix::fs::MetadataExt;
    match (user_file::standard_input_metadata(), fs::metadata(output)) {
        (Ok(input), Ok(out)) => (input.dev(), input.ino()) == (out.dev(), out.ino()),
        _ => false,
    }
}

/// Where `path` is, with links resolved: the file's own canonical path if
/// it exists, else its directory's and its name; `None` when neither can
/// be found (an error other checks report).
fn place_of(path: &Path) -> Option<PathBuf> {
    fs::canonicalize(path).ok().or_else(|| {
        Some(
            fs::canonicalize(directory_of(path))
                .ok()?
                .join(path.file_name()?),
        )
    })
}

/// A directory opened for one replacement (`O_PATH`), or for the file
/// `--record` writes ([`super::user_file::create`]): the files in it are
/// named relative to it.
pub(crate) struct Directory {
    fd: OwnedFd,
    /// For messages.
    path: PathBuf,
}

impl Directory {
    /// Opens `dir` name by name ([`walk`]), unless a link on the way is
    /// one another user planted ([`refuse_planted_link`]).
    pub(crate) fn open(dir: &Path) -> io::Result<Directory> {
        Ok(Directory {
            fd: walk(dir)?,
            path: dir.to_owned(),
        })
    }

    /// The status of `name` in the directory (a link's own), or `None`
    /// when there is no such file.
    pub(crate) fn status_of(&self, name: &CStr) -> io::Result<Option<libc::stat>> {
        self.status_at(name, libc::AT_SYMLINK_NOFOLLOW)
    }

    /// The status of what `name` in the directory leads to (through a
    /// link, or procfs's links to open files), or `None` when nothing.
    pub(crate) fn status_through(&self, name: &CStr) -> io::Result<Option<libc::stat>> {
        self.status_at(name, 0)
    }

    /// `fstatat(2)` of `name` with `flags`; `None` when there is no such file.
    fn status_at(&self, name: &CStr, flags: i32) -> io::Result<Option<libc::stat>> {
        // SAFETY: an all-zero stat is a valid value to fill.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: a NUL-terminated name and a stat to fill.
        let status = unsafe { libc::fstatat(self.fd.as_raw_fd(), name.as_ptr(), &mut st, flags) };
        match cvt(status) {
            Ok(()) => Ok(Some(st)),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// Fails unless `name` is a regular file or does not exist, and unless
    /// it is one this process may replace ([`Directory::refuse_others_file`]);
    /// gives the file's status when it exists. The link itself is looked
    /// at, not what it points to: the rename would replace the link.
    fn refuse_non_regular(&self, name: &OsStr) -> io::Result<Option<libc::stat>> {
        let Some(st) = self.status_of(&c_path(name)?)? else {
            return Ok(None);
        };
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a {}, expected a regular file or a new name (the file is replaced, not written into)",
                    kind_of_mode(st.st_mode)
                ),
            ));
        }
        self.refuse_others_file(&st)?;
        Ok(Some(st))
    }

    /// Fails for a file of another user (`st`) in a sticky directory that
    /// others can write, unless the directory's owner owns it: the files
    /// `fs.protected_regular` keeps root from opening with `O_CREAT` there,
    /// as someone else's file, or a name they took first, replacing which
    /// would destroy it.
    fn refuse_others_file(&self, st: &libc::stat) -> io::Result<()> {
        match self.planted_by(st)? {
            None => Ok(()),
            Some(uid) => Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "owned by user {uid} in a sticky directory others can write: not replaced \
                     (choose another name, or have it removed first)"
                ),
            )),
        }
    }

    /// The owner of `st`, an entry of this directory, when that is another
    /// user than this one and the directory's owner, in a sticky directory
    /// others can write: someone who could have put it there to catch what
    /// this process writes, which the kernel's `fs.protected_regular`,
    /// `fs.protected_fifos` and `fs.protected_symlinks` keep root from
    /// opening or following there. `None` for an entry this process may use.
    pub(crate) fn planted_by(&self, st: &libc::stat) -> io::Result<Option<u32>> {
        if st.st_uid == euid() {
            return Ok(None);
        }
        let dir = self.status_of(c".")?.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("{}: gone", crate::common::escape::path(&self.path)),
            )
        })?;
        let shared = dir.st_mode & (libc::S_ISVTX | 0o022) > libc::S_ISVTX;
        Ok((shared && st.st_uid != dir.st_uid).then_some(st.st_uid))
    }

    /// Opens `name` in the directory with `flags` (`O_CLOEXEC` added),
    /// creating it with `mode` (less the umask) if `flags` say so.
    pub(crate) fn open_entry(&self, name: &CStr, flags: i32, mode: u32) -> io::Result<File> {
        // SAFETY: a NUL-terminated name; the descriptor is owned below.
        let fd = unsafe {
            libc::openat(
                self.fd.as_raw_fd(),
                name.as_ptr(),
                flags | libc::O_CLOEXEC,
                mode as libc::c_uint,
            )
        };
        cvt(fd)?;
        // SAFETY: a descriptor just opened, owned by nothing else.
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    /// Creates a new temporary file beside `name`, `.NAME.PID.RANDOM.tmp`
    /// (`NAME` cut to [`TEMP_NAME_KEEPS`] bytes): hidden, without the
    /// ending a reader of the directory looks for (node_exporter's textfile
    /// collector reads `*.prom`), and not known in advance. A name already
    /// taken (by anything: a file, a link, a directory someone planted) is
    /// left alone and another one tried.
    fn create_fresh(&self, name: &OsStr, mode: u32) -> io::Result<(CString, File)> {
        let kept = &name.as_bytes()[..name.len().min(TEMP_NAME_KEEPS)];
        let random = std::collections::hash_map::RandomState::new();
        let mut taken = None;
        for attempt in 0u32..16 {
            let mut temp = b".".to_vec();
            temp.extend_from_slice(kept);
            temp.extend_from_slice(
                format!(
                    ".{}.{:016x}.tmp",
                    std::process::id(),
                    std::hash::BuildHasher::hash_one(&random, attempt)
                )
                .as_bytes(),
            );
            let temp = c_path(OsStr::from_bytes(&temp))?;
            let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
            match self.open_entry(&temp, flags, mode) {
                Ok(file) => return Ok((temp, file)),
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => taken = Some(err),
                Err(err) => return Err(err),
            }
        }
        Err(taken.unwrap_or_else(|| io::Error::from_raw_os_error(libc::EEXIST)))
    }

    /// Opens `name` in the directory without following it (`O_PATH`),
    /// with its status: a link to check, then to [`Directory::follow`].
    pub(crate) fn open_place(&self, name: &CStr) -> io::Result<(OwnedFd, libc::stat)> {
        let place = open_path(self.fd.as_raw_fd(), name)?;
        let st = fstat(place.as_raw_fd())?;
        Ok((place, st))
    }

    /// Whether the directory is in procfs, whose links to open files
    /// (`/proc/PID/fd/N`: a pipe, a terminal) name no path to walk: only
    /// the kernel follows them, and only it makes them.
    pub(crate) fn in_procfs(&self) -> io::Result<bool> {
        Ok(fstatfs(self.fd.as_raw_fd())?.f_type == libc::PROC_SUPER_MAGIC)
    }

    /// Where `link`, a symbolic link in this directory opened by
    /// [`Directory::open_place`] and checked, leads: the directory its
    /// target names, walked as [`walk`] walks (from `/`, or from this
    /// directory), each link on the way checked, and the target's last
    /// name. `links` counts the links followed, [`MAX_LINKS`] at most. A
    /// target that names a directory (`dir/`, `..`) is `EISDIR`.
    pub(crate) fn follow(
        &self,
        link: &OwnedFd,
        links: &mut u32,
    ) -> io::Result<(Directory, CString)> {
        count_link(links)?;
        let target = link_target(link)?;
        let name = named_file(&target).ok_or_else(|| io::Error::from_raw_os_error(libc::EISDIR))?;
        let name = c_path(name)?;
        let parent = target.parent().unwrap_or(Path::new(""));
        let (at, walked) = if target.has_root() {
            (open_root()?, PathBuf::from("/"))
        } else {
            (open_path(self.fd.as_raw_fd(), c".")?, self.path.clone())
        };
        let path = walked.join(parent);
        let fd = walk_from(at, walked, parent, links)?;
        Ok((Directory { fd, path }, name))
    }

    /// Renames `temp` over `name`, both in this directory.
    fn rename(&self, temp: &CStr, name: &OsStr) -> io::Result<()> {
        let name = c_path(name)?;
        let dir = self.fd.as_raw_fd();
        // SAFETY: two NUL-terminated names relative to an open directory.
        cvt(unsafe { libc::renameat(dir, temp.as_ptr(), dir, name.as_ptr()) })
    }

    /// Removes the temporary `temp` (after a failed write).
    fn remove(&self, temp: &CStr) {
        // SAFETY: a NUL-terminated name relative to an open directory.
        unsafe { libc::unlinkat(self.fd.as_raw_fd(), temp.as_ptr(), 0) };
    }
}

/// The most symbolic links one walk follows: the kernel's `MAXSYMLINKS`.
const MAX_LINKS: u32 = 40;

/// Opens directory `dir` (`O_PATH`) as the kernel walks a path, one name
/// at a time, each opened relative to the directory before it without
/// following a link (`O_NOFOLLOW`): a symbolic link is checked
/// ([`refuse_planted_link`]) on its own descriptor, then read and its
/// target walked the same way, from `/` or from the link's directory. `..`
/// goes up from where the walk is (after a link, from the link's target,
/// as the kernel goes). Checking each link's path and then opening the
/// whole path let a user replace a directory of theirs on the way by a
/// link in between (`--svg` and `--textfile` open it at every report: many
/// tries), and the links behind a permitted link were followed unchecked;
/// here what is checked is what is followed. (That race cannot be tested
/// reliably; the tests check links behind links.)
fn walk(dir: &Path) -> io::Result<OwnedFd> {
    let (start, walked) = if dir.has_root() {
        (open_root()?, PathBuf::from("/"))
    } else {
        (open_path(libc::AT_FDCWD, c".")?, PathBuf::new())
    };
    walk_from(start, walked, dir, &mut 0)
}

/// The process's root directory, where the walk of an absolute path starts:
/// `/proc/self/root`, which is `/` (a chroot's own), and still the real one
/// under an emulator that gives the path `/` a directory of its own
/// (qemu-user's `-L` prefix, where the cross-built unit tests run: a walk
/// from there found none of `/tmp`); `/` itself without procfs.
fn open_root() -> io::Result<OwnedFd> {
    let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC;
    // SAFETY: NUL-terminated names; the descriptor returned is owned below.
    let mut fd = unsafe { libc::open(c"/proc/self/root".as_ptr(), flags) };
    if fd < 0 {
        // SAFETY: as above.
        fd = unsafe { libc::open(c"/".as_ptr(), flags) };
    }
    cvt(fd)?;
    // SAFETY: a descriptor just opened, owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// [`walk`] from directory `at` (named `walked` in messages), `links`
/// links having been followed already on the way there.
fn walk_from(
    mut at: OwnedFd,
    mut walked: PathBuf,
    dir: &Path,
    links: &mut u32,
) -> io::Result<OwnedFd> {
    let mut names = Vec::new();
    push_names(&mut names, dir);
    while let Some(name) = names.pop() {
        if name == "." {
            walked.push(name);
            continue;
        }
        let next = open_path(at.as_raw_fd(), &c_path(&name)?)?;
        let st = fstat(next.as_raw_fd())?;
        match st.st_mode & libc::S_IFMT {
            libc::S_IFDIR => {
                at = next;
                walked.push(name);
            }
            libc::S_IFLNK => {
                refuse_planted_link(&walked.join(&name), &st, &fstat(at.as_raw_fd())?)?;
                count_link(links)?;
                let target = link_target(&next)?;
                if target.has_root() {
                    at = open_root()?;
                    walked = PathBuf::from("/");
                }
                push_names(&mut names, &target);
            }
            _ => return Err(io::Error::from_raw_os_error(libc::ENOTDIR)),
        }
    }
    Ok(at)
}

/// Counts one more link followed on a walk: past [`MAX_LINKS`], `ELOOP`,
/// as the kernel fails.
fn count_link(links: &mut u32) -> io::Result<()> {
    *links += 1;
    if *links > MAX_LINKS {
        return Err(io::Error::from_raw_os_error(libc::ELOOP));
    }
    Ok(())
}

/// Puts the names of `path` on `names`, a stack (its first name last): a
/// leading `/` is where a walk starts, not a name.
fn push_names(names: &mut Vec<OsString>, path: &Path) {
    let parts = path.components().rev();
    let parts = parts.filter(|part| *part != Component::RootDir);
    names.extend(parts.map(|part| part.as_os_str().to_owned()));
}

/// Opens `name` in directory `at` as a place on a walk (`O_PATH`), not
/// following it if it is a link. It is asked for as a directory first
/// (`O_DIRECTORY`), which mounts an automount point there (an autofs
/// home, debugfs' `tracing`) as the kernel's own walk does, where `O_PATH`
/// alone stops at the mount point and the walk would go on in the empty
/// directory under it; a link fails that with `ENOTDIR` and is then opened
/// as itself.
fn open_path(at: libc::c_int, name: &CStr) -> io::Result<OwnedFd> {
    let flags = libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    match open_at(at, name, flags | libc::O_DIRECTORY) {
        Err(err) if err.raw_os_error() == Some(libc::ENOTDIR) => open_at(at, name, flags),
        opened => opened,
    }
}

/// `openat(at, name, flags)`.
fn open_at(at: libc::c_int, name: &CStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: a NUL-terminated name; the descriptor returned is owned below.
    let fd = unsafe { libc::openat(at, name.as_ptr(), flags) };
    cvt(fd)?;
    // SAFETY: a descriptor just opened, owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Fails when `link` (status `st`, in a directory of status `dir`) is a
/// link that `fs.protected_symlinks` would not let this user follow: in a
/// sticky directory others can write, owned by someone other than this
/// user and the directory's owner.
fn refuse_planted_link(link: &Path, st: &libc::stat, dir: &libc::stat) -> io::Result<()> {
    let shared = dir.st_mode & (libc::S_ISVTX | 0o002) == libc::S_ISVTX | 0o002;
    if !shared || st.st_uid == euid() || st.st_uid == dir.st_uid {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "{}: a link owned by user {} in a sticky directory others can write: not followed",
            crate::common::escape::path(link),
            st.st_uid
        ),
    ))
}

/// The effective user id.
pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// `name` as a C string (a NUL inside it is refused).
pub(crate) fn c_path(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// A system call's result as a `Result`.
fn cvt(status: libc::c_int) -> io::Result<()> {
    if status < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// The name of the file `path` names, as the kernel reads the path:
/// `None` when it ends in `/`, `/.`, `.` or `..`, which name a directory
/// (`Path::file_name` drops a trailing `.`: `run.rec/.` would name
/// `run.rec`, a file the kernel finds is not a directory), or is empty.
pub(crate) fn named_file(path: &Path) -> Option<&OsStr> {
    let bytes = path.as_os_str().as_bytes();
    if bytes.ends_with(b"/") || bytes.ends_with(b"/.") {
        return None;
    }
    path.file_name()
}

/// The file name of `path`, which must have one ([`named_file`]); an
/// empty path is no file, as the kernel says.
fn file_name(path: &Path) -> io::Result<&OsStr> {
    if path.as_os_str().is_empty() {
        return Err(io::Error::from_raw_os_error(libc::ENOENT));
    }
    named_file(path).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "expected a file name, not a directory",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::scratch::Scratch;
    use std::io::Write;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    /// A fresh directory for one test, removed when the test ends, also
    /// when it fails.
    fn scratch(name: &str) -> Scratch {
        crate::common::scratch::scratch(&format!("temp-{name}"))
    }

    /// Every name a temporary of this process could take, in `dir`.
    fn temporaries(dir: &Path) -> Vec<PathBuf> {
        let prefix = format!(".c.svg.{}.", std::process::id());
        let mut found: Vec<PathBuf> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(&prefix)
            })
            .collect();
        found.sort();
        found
    }

    #[test]
    fn the_temporary_is_its_owners_alone_while_it_is_written() {
        let dir = scratch("written");
        let target = dir.join("x.prom");
        let mode_of = |f: &File| f.metadata().unwrap().mode() & 0o7777;
        replace_with(&target, Readers::Everyone, |f| {
            assert_eq!(mode_of(f), 0o600);
            f.write_all(b"a 1\n")
        })
        .unwrap();
        assert_eq!(fs::metadata(&target).unwrap().mode() & 0o7777, 0o644);
        // Replacing a file of this user's, whose mode it takes in the end.
        fs::set_permissions(&target, fs::Permissions::from_mode(0o640)).unwrap();
        replace_with(&target, Readers::Owner, |f| {
            assert_eq!(mode_of(f), 0o600);
            f.write_all(b"a 2\n")
        })
        .unwrap();
        assert_eq!(fs::metadata(&target).unwrap().mode() & 0o7777, 0o640);
    }

    #[test]
    fn a_dash_is_refused_rather_than_made_a_file_of_that_name() {
        // `--record -` is standard output: `--svg -` would otherwise
        // quietly create ./- in the working directory.
        for option in ["--svg", "--textfile"] {
            let err = check_targets(&[(option, Some(Path::new("-")))], None).unwrap_err();
            assert_eq!(
                err,
                format!(
                    "{option} -: `-` is no standard output here: the file is replaced, not \
                     written into (./- names a file called -)"
                )
            );
        }
    }

    #[test]
    fn temporary_names_cannot_be_foreseen_and_nothing_planted_is_touched() {
        let dir = scratch("planted");
        let target = dir.join("c.svg");
        replace_with(&target, Readers::Everyone, |f| f.write_all(b"<svg/>")).unwrap();
        assert!(temporaries(&dir).is_empty(), "renamed away");
        // What an earlier run's temporary name was does not tell the next.
        let mut seen = std::collections::HashSet::new();
        for _ in 0..4 {
            replace_with(&target, Readers::Everyone, |f| {
                let name = temporaries(&dir).pop().expect("the temporary");
                assert!(seen.insert(name), "a name used twice");
                f.write_all(b"<svg/>")
            })
            .unwrap();
        }
        // The old fixed name (.c.svg.PID.tmp), planted as a link and as a
        // directory, is neither written through nor removed.
        let victim = dir.join("victim");
        fs::write(&victim, b"precious").unwrap();
        let old_name = dir.join(format!(".c.svg.{}.tmp", std::process::id()));
        std::os::unix::fs::symlink(&victim, &old_name).unwrap();
        let planted_dir = dir.join(format!(".c.svg.{}.0.tmp", std::process::id()));
        fs::create_dir(&planted_dir).unwrap();
        replace_with(&target, Readers::Everyone, |f| f.write_all(b"<svg>2</svg>")).unwrap();
        assert_eq!(fs::read(&victim).unwrap(), b"precious");
        assert_eq!(fs::read(&target).unwrap(), b"<svg>2</svg>");
        assert!(
            fs::symlink_metadata(&old_name)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert!(planted_dir.is_dir());
    }

    #[test]
    fn a_kept_target_keeps_its_permissions() {
        let dir = scratch("mode");
        let target = dir.join("x.prom");
        fs::write(&target, b"old").unwrap();
        fs::set_permissions(&target, fs::Permissions::from_mode(0o600)).unwrap();
        replace_with(&target, Readers::Everyone, |f| f.write_all(b"new")).unwrap();
        assert_eq!(fs::metadata(&target).unwrap().mode() & 0o7777, 0o600);
        assert_eq!(fs::read(&target).unwrap(), b"new");
    }

    #[test]
    fn another_users_file_in_a_sticky_shared_directory_is_not_replaced() {
        if !as_root("another_users_file_in_a_sticky_shared_directory_is_not_replaced") {
            return;
        }
        let dir = scratch("sticky");
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o1777)).unwrap();
        let theirs = dir.join("x.svg");
        fs::write(&theirs, b"theirs").unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        let err = replace_with(&theirs, Readers::Everyone, |f| f.write_all(b"<svg/>")).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("owned by user 65534 in a sticky directory others can write"),
            "{err}"
        );
        assert_eq!(fs::read(&theirs).unwrap(), b"theirs");
        let err = check_targets(&[("--svg", Some(&theirs))], None).unwrap_err();
        assert!(err.contains("not replaced"), "{err}");
        // Not sticky: the directory's writers may replace it anyway.
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
        replace_with(&theirs, Readers::Everyone, |f| f.write_all(b"<svg/>")).unwrap();
        assert_eq!(fs::read(&theirs).unwrap(), b"<svg/>");
    }

    #[test]
    fn a_link_or_directory_under_the_name_is_refused_not_replaced() {
        let dir = scratch("non-regular");
        let victim = dir.join("victim");
        fs::write(&victim, b"precious").unwrap();
        let link = dir.join("x.prom");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let err = replace_with(&link, Readers::Everyone, |f| f.write_all(b"a 1\n")).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("a symbolic link, expected a regular file")
        );
        assert_eq!(fs::read_link(&link).unwrap(), victim);
        assert_eq!(fs::read(&victim).unwrap(), b"precious");
        let err = check_targets(&[("--svg", None), ("--textfile", Some(&dir))], None).unwrap_err();
        assert_eq!(
            err,
            format!(
                "--textfile {}: a directory, expected a regular file or a new name \
                 (the file is replaced, not written into)",
                dir.display()
            )
        );
        let missing = dir.join("none/x.svg");
        let err = check_targets(&[("--svg", Some(&missing))], None).unwrap_err();
        assert!(
            err.ends_with("none: No such file or directory (os error 2)"),
            "{err}"
        );
        assert_eq!(
            check_targets(&[("--svg", Some(&dir.join("new.svg")))], None),
            Ok(())
        );
        assert_eq!(check_targets(&[("--svg", Some(&victim))], None), Ok(()));
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 2);
    }

    #[test]
    fn two_options_naming_one_file_are_refused() {
        let dir = scratch("same-file");
        let chart = dir.join("run.svg");
        let again = dir.join(".").join("run.svg");
        let err = check_targets(&[("--svg", Some(&chart))], Some(&again)).unwrap_err();
        assert_eq!(
            err,
            format!(
                "--record {}: the same file as --svg's: one would replace the other",
                again.display()
            )
        );
        let err = check_targets(
            &[("--svg", Some(&chart)), ("--textfile", Some(&again))],
            None,
        )
        .unwrap_err();
        assert!(err.starts_with("--textfile "), "{err}");
        fs::write(&chart, "<svg/>").unwrap();
        let link = dir.join("link.rec");
        std::os::unix::fs::symlink(&chart, &link).unwrap();
        let err = check_targets(&[("--svg", Some(&chart))], Some(&link)).unwrap_err();
        assert!(err.contains("the same file as --svg's"), "{err}");
        let other = dir.join("run.prom");
        assert_eq!(
            check_targets(
                &[("--svg", Some(&chart)), ("--textfile", Some(&other))],
                Some(&dir.join("run.rec"))
            ),
            Ok(())
        );
    }

    /// Whether the test may act for another user (root); outside CI a
    /// test that needs it passes after saying so.
    fn as_root(test: &str) -> bool {
        if euid() == 0 {
            return true;
        }
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{test}: needs root (to give a file to another user), which CI has"
        );
        // Written past libtest's capture, so the reason shows in the
        // summary of a plain `cargo test`.
        let _ = writeln!(
            std::io::stderr(),
            "{test}: skipped: needs root (to give a file to another user)"
        );
        false
    }

    #[test]
    fn a_directory_moved_during_the_write_still_gets_the_file() {
        let dir = scratch("moved");
        let sub = dir.join("sub");
        fs::create_dir(&sub).unwrap();
        let target = sub.join("x.prom");
        replace_with(&target, Readers::Everyone, |f| {
            // Someone moves the directory away and puts another in its place.
            fs::rename(&sub, dir.join("sub.old")).unwrap();
            fs::create_dir(&sub).unwrap();
            f.write_all(b"a 1\n")
        })
        .unwrap();
        assert_eq!(fs::read(dir.join("sub.old/x.prom")).unwrap(), b"a 1\n");
        assert_eq!(
            fs::read_dir(&sub).unwrap().count(),
            0,
            "nothing in the new one"
        );
        assert_eq!(fs::read_dir(dir.join("sub.old")).unwrap().count(), 1);
        // A failed write there leaves no temporary behind either.
        let failed = replace_with(&sub.join("y.prom"), Readers::Everyone, |_| {
            fs::rename(&sub, dir.join("sub.failed")).unwrap();
            Err(io::Error::other("disk full"))
        });
        assert!(failed.is_err());
        assert_eq!(fs::read_dir(dir.join("sub.failed")).unwrap().count(), 0);
    }

    #[test]
    fn names_up_to_the_longest_a_file_may_have_are_written() {
        let dir = scratch("long");
        let longest = dir.join("x".repeat(NAME_MAX));
        assert_eq!(check_targets(&[("--svg", Some(&longest))], None), Ok(()));
        replace_with(&longest, Readers::Everyone, |f| f.write_all(b"<svg/>")).unwrap();
        assert_eq!(fs::read(&longest).unwrap(), b"<svg/>");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
        let too_long = dir.join("x".repeat(NAME_MAX + 1));
        let err = check_targets(&[("--textfile", Some(&too_long))], None).unwrap_err();
        assert!(
            err.ends_with("a file name of 256 bytes, longer than the 255 a name may have"),
            "{err}"
        );
        // A trailing slash or `/.` names a directory, which is never
        // replaced: not the file before it.
        fs::write(dir.join("c.svg"), b"old").unwrap();
        for ending in ["/", "/."] {
            let slash = PathBuf::from(format!("{}/c.svg{ending}", dir.display()));
            let err = check_targets(&[("--svg", Some(&slash))], None).unwrap_err();
            assert!(
                err.ends_with("expected a file name, not a directory"),
                "{err}"
            );
            let err =
                replace_with(&slash, Readers::Everyone, |f| f.write_all(b"<svg/>")).unwrap_err();
            assert_eq!(err.to_string(), "expected a file name, not a directory");
        }
        assert_eq!(fs::read(dir.join("c.svg")).unwrap(), b"old");
        let err = check_targets(&[("--svg", Some(Path::new("")))], None).unwrap_err();
        assert_eq!(err, "--svg : No such file or directory (os error 2)");
    }

    #[test]
    fn set_id_bits_and_other_users_modes_are_not_kept() {
        let dir = scratch("set-id");
        let target = dir.join("c.svg");
        fs::write(&target, b"old").unwrap();
        fs::set_permissions(&target, fs::Permissions::from_mode(0o6755)).unwrap();
        replace_with(&target, Readers::Owner, |f| f.write_all(b"new")).unwrap();
        assert_eq!(fs::metadata(&target).unwrap().mode() & 0o7777, 0o755);
        if as_root("set_id_bits_and_other_users_modes_are_not_kept") {
            // Another user's file, in a directory that is not sticky: the
            // new file is root's, with the mode asked for.
            fs::set_permissions(&target, fs::Permissions::from_mode(0o6777)).unwrap();
            std::os::unix::fs::chown(&target, Some(65534), Some(65534)).unwrap();
            replace_with(&target, Readers::Owner, |f| f.write_all(b"newer")).unwrap();
            let meta = fs::metadata(&target).unwrap();
            assert_eq!((meta.uid(), meta.mode() & 0o7777), (0, 0o600));
        }
    }

    #[test]
    fn a_link_another_user_planted_in_a_sticky_directory_is_not_followed() {
        if !as_root("a_link_another_user_planted_in_a_sticky_directory_is_not_followed") {
            return;
        }
        let dir = scratch("planted-link");
        let shared = dir.join("tmp");
        fs::create_dir(&shared).unwrap();
        fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
        let private = dir.join("private");
        fs::create_dir(&private).unwrap();
        let link = shared.join("out");
        std::os::unix::fs::symlink(&private, &link).unwrap();
        std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
        let target = link.join("x.prom");
        let err = replace_with(&target, Readers::Everyone, |f| f.write_all(b"a 1\n")).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{}: a link owned by user 65534 in a sticky directory others can write: not \
                 followed",
                link.display()
            )
        );
        let err = check_targets(&[("--textfile", Some(&target))], None).unwrap_err();
        assert!(err.ends_with("not followed"), "{err}");
        // Nor through this user's own links to it, by whole path or from
        // the link's directory: the link behind is checked as well.
        for (name, to) in [("mine", link.clone()), ("relative", PathBuf::from("out/."))] {
            let mine = shared.join(name);
            std::os::unix::fs::symlink(&to, &mine).unwrap();
            let err = replace_with(&mine.join("x.prom"), Readers::Everyone, |f| {
                f.write_all(b"a 1\n")
            });
            let err = err.unwrap_err().to_string();
            assert!(
                err.starts_with(&format!("{}: a link owned by user 65534", link.display())),
                "{err}"
            );
        }
        assert_eq!(fs::read_dir(&private).unwrap().count(), 0);
        // This user's own link there is followed.
        std::os::unix::fs::lchown(&link, Some(0), Some(0)).unwrap();
        replace_with(&target, Readers::Everyone, |f| f.write_all(b"a 1\n")).unwrap();
        assert_eq!(fs::read(private.join("x.prom")).unwrap(), b"a 1\n");
    }

    /// The directory `Directory::open(path)` opens: the same file as the
    /// kernel finds at `expected`.
    fn opens(path: &Path, expected: &Path) {
        let dir = Directory::open(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
        let st = fstat(dir.fd.as_raw_fd()).unwrap();
        let meta = fs::metadata(expected).unwrap();
        assert_eq!(
            (st.st_dev, st.st_ino),
            (meta.dev(), meta.ino()),
            "{}",
            path.display()
        );
    }

    /// The error `Directory::open(path)` fails with, which the kernel's
    /// own walk (`open(O_PATH | O_DIRECTORY)`) gives too.
    fn fails(path: &Path, errno: i32) {
        use std::os::unix::fs::OpenOptionsExt;
        let err = Directory::open(path).err().map(|err| err.raw_os_error());
        assert_eq!(err, Some(Some(errno)), "{}", path.display());
        let kernel = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_DIRECTORY)
            .open(path);
        let kernel = kernel.err().map(|err| err.raw_os_error());
        assert_eq!(
            kernel,
            Some(Some(errno)),
            "the kernel on {}",
            path.display()
        );
    }

    #[test]
    fn a_directory_is_walked_to_as_the_kernel_walks_to_it() {
        use std::os::unix::fs::symlink;
        let dir = scratch("walk");
        let (a, b) = (dir.join("a"), dir.join("a/b"));
        fs::create_dir_all(&b).unwrap();
        fs::write(dir.join("file"), b"").unwrap();
        opens(&b, &b);
        opens(&b.join("../.."), &dir);
        // Links, relative to their directory or from /, and `..` after
        // one: from its target, as the kernel goes.
        symlink("a/b", dir.join("down")).unwrap();
        symlink(&a, dir.join("absolute")).unwrap();
        symlink("./../b/.", b.join("again")).unwrap();
        opens(&dir.join("down"), &b);
        opens(&dir.join("down/.."), &a);
        opens(&dir.join("absolute/b/again/again/.."), &a);
        // A relative path starts from the current directory.
        let cwd = std::env::current_dir().unwrap();
        let up: PathBuf = cwd.components().skip(1).map(|_| "..").collect();
        opens(&up.join(dir.strip_prefix("/").unwrap()).join("down"), &b);
        opens(Path::new("."), &cwd);
        // A file on the way, or at its end, or a link to one.
        symlink("file", dir.join("to-file")).unwrap();
        for path in ["file", "file/x", "to-file", "to-file/x"] {
            fails(&dir.join(path), libc::ENOTDIR);
        }
        symlink("none", dir.join("dangling")).unwrap();
        fails(&dir.join("dangling"), libc::ENOENT);
        // A loop, and a chain of one link more than the kernel follows.
        symlink("loop2", dir.join("loop1")).unwrap();
        symlink("loop1/.", dir.join("loop2")).unwrap();
        fails(&dir.join("loop1"), libc::ELOOP);
        for n in 0..=MAX_LINKS {
            let next = match n {
                MAX_LINKS => PathBuf::from("a"),
                _ => PathBuf::from(format!("chain{}", n + 1)),
            };
            symlink(next, dir.join(format!("chain{n}"))).unwrap();
        }
        opens(&dir.join("chain1"), &a);
        fails(&dir.join("chain0"), libc::ELOOP);
    }

    #[test]
    fn a_failed_write_leaves_the_target_and_no_temporary() {
        let dir = scratch("failed");
        let target = dir.join("x.prom");
        fs::write(&target, b"old").unwrap();
        let err = replace_with(&target, Readers::Everyone, |_| {
            Err(io::Error::other("disk full"))
        });
        assert_eq!(err.unwrap_err().to_string(), "disk full");
        assert_eq!(fs::read(&target).unwrap(), b"old");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
    }
}
