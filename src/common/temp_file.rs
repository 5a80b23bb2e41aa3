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
//! root from opening it there. A target that is kept keeps its permissions.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::privilege;
use super::root::kind_of_mode;

/// Replaces `path` with what `write` writes into a new file created with
/// `mode` (less the umask). On an error the temporary file is removed and
/// `path` is left as it was.
pub fn replace_with(
    path: &Path,
    mode: u32,
    write: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    let kept = refuse_non_regular(path)?;
    let (temp, mut file) = create_fresh(path, mode)?;
    let written = kept
        .map_or(Ok(()), |meta| file.set_permissions(meta.permissions()))
        .and_then(|()| write(&mut file))
        .and_then(|()| fs::rename(&temp, path));
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written
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
    let outputs = [("--svg", svg), ("--textfile", textfile)];
    check_targets(&outputs, recording)?;
    let written = outputs.into_iter().chain([("--record", recording)]);
    for (option, path) in written.filter_map(|(o, p)| Some((o, p?))) {
        let Some(place) = place_of(path) else {
            continue;
        };
        if let Some((reader, _)) = inputs
            .iter()
            .find(|(_, i)| place_of(i) == Some(place.clone()))
        {
            return Err(format!(
                "{option} {}: the file {reader} reads: writing it would destroy it",
                path.display()
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
    let named =
        |option: &str, path: &Path, what: String| format!("{option} {}: {what}", path.display());
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
    file_name(path)?;
    let dir = directory_of(path);
    let in_dir = |err: io::Error| io::Error::new(err.kind(), format!("{}: {err}", dir.display()));
    if !fs::metadata(dir).map_err(in_dir)?.is_dir() {
        return Err(in_dir(io::Error::from_raw_os_error(libc::ENOTDIR)));
    }
    // The temporary is made there: a directory it cannot be made in (no
    // write permission, a read-only file system) is said before the run,
    // not at its first report.
    writable(dir).map_err(in_dir)?;
    refuse_non_regular(path).map(drop)
}

/// Whether this process may create files in `dir` (`faccessat` with the
/// effective ids, as creating them is checked).
fn writable(dir: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c_dir = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: a NUL-terminated path; faccessat only reads it.
    let status = unsafe {
        libc::faccessat(
            libc::AT_FDCWD,
            c_dir.as_ptr(),
            libc::W_OK | libc::X_OK,
            libc::AT_EACCESS,
        )
    };
    if status == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The directory `path` is in (`.` for a bare name).
fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
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

/// Fails unless `path` is a regular file or does not exist, and unless it
/// is one this process may replace ([`refuse_others_file`]); gives the
/// file's metadata when it exists. The link itself is looked at, not what
/// it points to: the rename would replace the link.
fn refuse_non_regular(path: &Path) -> io::Result<Option<fs::Metadata>> {
    match fs::symlink_metadata(path) {
        Ok(meta) if !meta.file_type().is_file() => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "a {}, expected a regular file or a new name (the file is replaced, not written into)",
                kind_of_mode(meta.mode())
            ),
        )),
        Ok(meta) => refuse_others_file(path, &meta).map(|()| Some(meta)),
        Err(err) if err.kind() != io::ErrorKind::NotFound => Err(err),
        Err(_) => Ok(None),
    }
}

/// Fails for a file of another user (`meta`) in a sticky directory that
/// others can write, unless the directory's owner owns it: the files
/// `fs.protected_regular` keeps root from opening with `O_CREAT` there, as
/// someone else's file, or a name they took first, replacing which would
/// destroy it.
fn refuse_others_file(path: &Path, meta: &fs::Metadata) -> io::Result<()> {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    if meta.uid() == euid {
        return Ok(());
    }
    let dir = fs::metadata(directory_of(path))?;
    let shared = dir.mode() & (libc::S_ISVTX | 0o022) > libc::S_ISVTX;
    if !shared || meta.uid() == dir.uid() {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "owned by user {} in a sticky directory others can write: not replaced (choose \
             another name, or have it removed first)",
            meta.uid()
        ),
    ))
}

/// The file name of `path`, which must have one.
fn file_name(path: &Path) -> io::Result<&std::ffi::OsStr> {
    path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "expected a file name, not a directory",
        )
    })
}

/// Creates a new temporary file beside `path`, `.NAME.PID.RANDOM.tmp`:
/// hidden, without the ending a reader of the directory looks for
/// (node_exporter's textfile collector reads `*.prom`), and not known in
/// advance. A name already taken (by anything: a file, a link, a directory
/// someone planted) is left alone and another one tried.
fn create_fresh(path: &Path, mode: u32) -> io::Result<(PathBuf, File)> {
    let name = file_name(path)?;
    let random = std::collections::hash_map::RandomState::new();
    let mut taken = None;
    for attempt in 0u32..16 {
        let mut temp = std::ffi::OsString::from(".");
        temp.push(name);
        temp.push(format!(
            ".{}.{:016x}.tmp",
            std::process::id(),
            std::hash::BuildHasher::hash_one(&random, attempt)
        ));
        let temp = path.with_file_name(temp);
        let created = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&temp);
        match created {
            Ok(file) => return Ok((temp, file)),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => taken = Some(err),
            Err(err) => return Err(err),
        }
    }
    Err(taken.unwrap_or_else(|| io::Error::from_raw_os_error(libc::EEXIST)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("hwstat-temp-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
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
    fn temporary_names_cannot_be_foreseen_and_nothing_planted_is_touched() {
        let dir = scratch("planted");
        let target = dir.join("c.svg");
        replace_with(&target, 0o644, |f| f.write_all(b"<svg/>")).unwrap();
        assert!(temporaries(&dir).is_empty(), "renamed away");
        // What an earlier run's temporary name was does not tell the next.
        let mut seen = std::collections::HashSet::new();
        for _ in 0..4 {
            replace_with(&target, 0o644, |f| {
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
        replace_with(&target, 0o644, |f| f.write_all(b"<svg>2</svg>")).unwrap();
        assert_eq!(fs::read(&victim).unwrap(), b"precious");
        assert_eq!(fs::read(&target).unwrap(), b"<svg>2</svg>");
        assert!(
            fs::symlink_metadata(&old_name)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert!(planted_dir.is_dir());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_kept_target_keeps_its_permissions() {
        let dir = scratch("mode");
        let target = dir.join("x.prom");
        fs::write(&target, b"old").unwrap();
        fs::set_permissions(&target, fs::Permissions::from_mode(0o600)).unwrap();
        replace_with(&target, 0o644, |f| f.write_all(b"new")).unwrap();
        assert_eq!(fs::metadata(&target).unwrap().mode() & 0o7777, 0o600);
        assert_eq!(fs::read(&target).unwrap(), b"new");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn another_users_file_in_a_sticky_shared_directory_is_not_replaced() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "needs root (to give a file to another user), which CI has"
            );
            return;
        }
        let dir = scratch("sticky");
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o1777)).unwrap();
        let theirs = dir.join("x.svg");
        fs::write(&theirs, b"theirs").unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        let err = replace_with(&theirs, 0o644, |f| f.write_all(b"<svg/>")).unwrap_err();
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
        replace_with(&theirs, 0o644, |f| f.write_all(b"<svg/>")).unwrap();
        assert_eq!(fs::read(&theirs).unwrap(), b"<svg/>");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_link_or_directory_under_the_name_is_refused_not_replaced() {
        let dir = scratch("non-regular");
        let victim = dir.join("victim");
        fs::write(&victim, b"precious").unwrap();
        let link = dir.join("x.prom");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let err = replace_with(&link, 0o644, |f| f.write_all(b"a 1\n")).unwrap_err();
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
        fs::remove_dir_all(&dir).unwrap();
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
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_write_leaves_the_target_and_no_temporary() {
        let dir = scratch("failed");
        let target = dir.join("x.prom");
        fs::write(&target, b"old").unwrap();
        let err = replace_with(&target, 0o644, |_| Err(io::Error::other("disk full")));
        assert_eq!(err.unwrap_err().to_string(), "disk full");
        assert_eq!(fs::read(&target).unwrap(), b"old");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
        fs::remove_dir_all(&dir).unwrap();
    }
}
