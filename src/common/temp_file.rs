//! Replacing a file atomically through a temporary file beside it, renamed
//! over the target: a reader sees the old file or the new one, never a
//! part (`--textfile`, `--svg`).
//!
//! The temporary is always created afresh (`O_CREAT | O_EXCL`, which also
//! refuses a symbolic link, dangling or not), never opened if it exists:
//! the tools run as root, and a link planted under the predictable name in
//! a directory others can write would otherwise make them write through it
//! to any file.
//!
//! The target itself must be a regular file or not exist yet: a rename
//! replaces whatever has the name, so `--svg /dev/null` or `--textfile
//! /dev/stdout` would otherwise replace the device node or the link with a
//! file.

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
    let temp = temporary_name(path)?;
    refuse_non_regular(path)?;
    let mut file = create_fresh(&temp, mode)?;
    let written = write(&mut file).and_then(|()| fs::rename(&temp, path));
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
    temporary_name(path)?;
    let dir = directory_of(path);
    let in_dir = |err: io::Error| io::Error::new(err.kind(), format!("{}: {err}", dir.display()));
    if !fs::metadata(dir).map_err(in_dir)?.is_dir() {
        return Err(in_dir(io::Error::from_raw_os_error(libc::ENOTDIR)));
    }
    refuse_non_regular(path)
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

/// Fails unless `path` is a regular file or does not exist. The link
/// itself is looked at, not what it points to: the rename would replace
/// the link.
fn refuse_non_regular(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(meta) if !meta.file_type().is_file() => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "a {}, expected a regular file or a new name (the file is replaced, not written into)",
                kind_of_mode(meta.mode())
            ),
        )),
        Err(err) if err.kind() != io::ErrorKind::NotFound => Err(err),
        _ => Ok(()),
    }
}

/// `.NAME.PID.tmp` beside `path`: hidden, and without the ending a reader
/// of the directory looks for (node_exporter's textfile collector reads
/// `*.prom`).
fn temporary_name(path: &Path) -> io::Result<PathBuf> {
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "expected a file name, not a directory",
        )
    })?;
    let mut temp = std::ffi::OsString::from(".");
    temp.push(name);
    temp.push(format!(".{}.tmp", std::process::id()));
    Ok(path.with_file_name(temp))
}

/// Creates `temp`, which must not exist. One left by an earlier process of
/// the same id (killed before its rename) is removed, without following
/// it if it is a link, and the creation tried once more.
fn create_fresh(temp: &Path, mode: u32) -> io::Result<File> {
    let create = || {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(temp)
    };
    match create() {
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
            fs::remove_file(temp)?;
            create()
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("hwstat-temp-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_link_planted_under_the_temporary_name_is_not_written_through() {
        let dir = scratch("planted");
        let victim = dir.join("victim");
        fs::write(&victim, b"precious").unwrap();
        let target = dir.join("c.svg");
        let planted = dir.join(format!(".c.svg.{}.tmp", std::process::id()));
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        replace_with(&target, 0o644, |f| f.write_all(b"<svg/>")).unwrap();
        assert_eq!(fs::read(&victim).unwrap(), b"precious");
        assert_eq!(fs::read(&target).unwrap(), b"<svg/>");
        assert!(
            !fs::symlink_metadata(&target)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert!(
            fs::symlink_metadata(&planted).is_err(),
            "the link was removed"
        );
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
