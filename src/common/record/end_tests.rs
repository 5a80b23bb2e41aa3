//! The end line of version 2: what a recording that lacks it, miscounts
//! frames in it or goes on after it reads as, from a file and a FIFO.

use std::path::Path;

use super::Replay;
use super::tests::{HEADER as V1, scratch};

/// The header of version 2, which promises an end line.
fn v2() -> String {
    V1.replace("\"version\":1", "\"version\":2")
}

/// `frames` frames reading `/x` as `v0`, `v1`, ..., one line each.
fn frames(n: usize) -> String {
    (0..n)
        .map(|i| format!("{{\"index\":{i},\"entries\":{{\"read /x\":{{\"text\":\"v{i}\"}}}}}}\n"))
        .collect()
}

/// Opens `text` as `dir/t.rec` and replays every frame: the values of
/// `/x` and the warning, or the error of the open or of a later frame.
fn replay_text(dir: &Path, text: &str) -> Result<(Vec<String>, Option<String>), String> {
    let file = dir.join("t.rec");
    std::fs::write(&file, text).unwrap();
    let mut replay = Replay::open(&file, "test").map_err(|e| e.to_string())?;
    let mut seen = Vec::new();
    loop {
        seen.push(replay.read_string("/x").unwrap());
        use crate::common::source::Source;
        if !replay.next_sample().map_err(|e| e.to_string())? {
            return Ok((seen, replay.cut().map(str::to_string)));
        }
    }
}

#[test]
fn a_version_2_recording_without_its_end_line_was_cut() {
    let dir = scratch("noend");
    let ended = format!("{}\n{}{{\"end\":{{\"frames\":3}}}}\n", v2(), frames(3));
    let (seen, cut) = replay_text(&dir, &ended).unwrap();
    assert_eq!(seen, ["v0", "v1", "v2"]);
    assert_eq!(cut, None);
    // Cut exactly after a whole frame: every frame, and one warning.
    let unended = format!("{}\n{}", v2(), frames(3));
    let (seen, cut) = replay_text(&dir, &unended).unwrap();
    assert_eq!(seen, ["v0", "v1", "v2"]);
    let file = dir.join("t.rec").display().to_string();
    assert_eq!(
        cut.as_deref(),
        Some(&*format!(
            "warning: {file}: no end line after line 4: the recording was cut (killed, or \
                 out of space); replaying its 3 complete frames"
        ))
    );
    // Cut in the middle of the end line: the frames are whole.
    let half = &ended[..ended.len() - 8];
    let (seen, cut) = replay_text(&dir, half).unwrap();
    assert_eq!(seen.len(), 3);
    let cut = cut.unwrap();
    assert!(
        cut.contains(": the end line (line 5) is incomplete: the recording was cut (killed, or out of space); replaying its 3 complete frames"),
        "{cut}"
    );
    // Cut in a frame: that frame is left out, as in version 1.
    let (seen, cut) = replay_text(&dir, &unended[..unended.len() - 5]).unwrap();
    assert_eq!(seen, ["v0", "v1"]);
    assert!(
        cut.unwrap()
            .ends_with(": the last frame (line 4) is incomplete: the recording was cut (killed, or out of space); replaying its 2 complete frames")
    );
    // The end line without its newline is whole; a blank line after it is
    // nothing.
    let (_, cut) = replay_text(&dir, ended.trim_end()).unwrap();
    assert_eq!(cut, None);
    let (_, cut) = replay_text(&dir, &format!("{ended}\n \n")).unwrap();
    assert_eq!(cut, None);
}

#[test]
fn a_version_1_recording_has_no_end_line_to_miss() {
    let dir = scratch("v1");
    let (seen, cut) = replay_text(&dir, &format!("{V1}\n{}", frames(2))).unwrap();
    assert_eq!((seen.len(), cut), (2, None));
    // Nor may it have one: there it is not a frame.
    let err = replay_text(
        &dir,
        &format!("{V1}\n{}{{\"end\":{{\"frames\":2}}}}\n", frames(2)),
    )
    .unwrap_err();
    assert!(
        err.contains("t.rec:4: frame 2: not a recording frame: missing field `index`"),
        "{err}"
    );
}

#[test]
fn an_end_line_that_miscounts_or_is_not_last_is_damage() {
    let dir = scratch("enddamage");
    let h = v2();
    let f = frames(3);
    let cases = [
        (
            format!("{h}\n{f}{{\"end\":{{\"frames\":4}}}}\n"),
            "t.rec:5: the end line counts 4 frames, the file holds 3 before it (a frame lost or \
             added)",
        ),
        // The last frame lost: the indexes cannot tell, the count does.
        (
            format!("{h}\n{}{{\"end\":{{\"frames\":3}}}}\n", frames(2)),
            "t.rec:4: the end line counts 3 frames, the file holds 2 before it",
        ),
        (
            format!(
                "{h}\n{f}{{\"end\":{{\"frames\":3}}}}\n{}",
                frames(4).lines().nth(3).unwrap()
            ),
            "t.rec:6: a line after the end line (line 5), which closes the recording",
        ),
        (
            format!("{h}\n{f}{{\"end\":{{\"frames\":3}}}}\n{{\"end\":{{\"frames\":3}}}}\n"),
            "t.rec:6: a line after the end line (line 5)",
        ),
        // A cut line after the end is no cut: the writer had ended.
        (
            format!("{h}\n{f}{{\"end\":{{\"frames\":3}}}}\n{{\"ind"),
            "t.rec:6: a line after the end line (line 5)",
        ),
        (
            format!("{h}\n{f}{{\"end\":{{\"frames\":-1}}}}\n"),
            "t.rec:5: frame 3: not a recording frame: missing field `index`",
        ),
        (
            format!("{h}\n{f}{{\"end\":{{}}}}\n"),
            "t.rec:5: frame 3: not a recording frame",
        ),
        (
            format!("{h}\n{{\"end\":{{\"frames\":0}}}}\n"),
            "t.rec:2: the recording holds no sample",
        ),
        (
            format!("{h}\n{{\"end\":{{\"frames\":0}}}}\n{}", frames(1)),
            "t.rec:3: a line after the end line (line 2)",
        ),
        (
            format!("{}\n{f}", h.replace("\"version\":2", "\"version\":3")),
            "t.rec:1: recording format version 3 is not supported (this build reads 1 and 2)",
        ),
    ];
    for (text, want) in cases {
        let err = replay_text(&dir, &text).unwrap_err();
        assert!(err.contains(want), "want {want:?}, got {err:?}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

/// Replays `text` written to a FIFO: the values of `/x` served before the
/// replay ended, and its warning or error.
fn replay_fifo(dir: &Path, text: &str) -> (Vec<String>, Result<Option<String>, String>) {
    use crate::common::source::Source;
    let fifo = dir.join("t.fifo");
    let _ = std::fs::remove_file(&fifo);
    crate::common::user_file::mkfifo(&fifo);
    let writer = {
        let (fifo, text) = (fifo.clone(), text.to_string());
        std::thread::spawn(move || std::fs::write(fifo, text).unwrap())
    };
    let mut replay = Replay::open(&fifo, "test").unwrap();
    assert!(replay.cut().is_none(), "not known before the end");
    let mut seen = Vec::new();
    let end = loop {
        seen.push(replay.read_string("/x").unwrap());
        match replay.next_sample() {
            Ok(true) => {}
            Ok(false) => break Ok(replay.cut().map(str::to_string)),
            Err(e) => break Err(e.to_string()),
        }
    };
    writer.join().unwrap();
    (seen, end)
}

#[test]
fn a_fifo_is_told_cut_or_damaged_at_its_end() {
    let dir = scratch("endfifo");
    let (h, f) = (v2(), frames(2));
    let (seen, end) = replay_fifo(&dir, &format!("{h}\n{f}{{\"end\":{{\"frames\":2}}}}\n"));
    assert_eq!((seen.len(), end), (2, Ok(None)));
    let (seen, end) = replay_fifo(&dir, &format!("{h}\n{f}"));
    assert_eq!(seen, ["v0", "v1"]);
    let warning = end.unwrap().expect("a warning at the end");
    assert!(
        warning.ends_with(".fifo: no end line after line 3: the recording was cut (killed, or out of space); replaying its 2 complete frames"),
        "{warning}"
    );
    // Damage at the end stops the replay after the frames before it.
    let (seen, end) = replay_fifo(&dir, &format!("{h}\n{f}{{\"end\":{{\"frames\":1}}}}\n"));
    assert_eq!(seen.len(), 2);
    let err = end.unwrap_err();
    assert!(
        err.ends_with(".fifo:4: the end line counts 1 frames, the file holds 2 before it (a frame lost or added)"),
        "{err}"
    );
    let (_, end) = replay_fifo(&dir, &format!("{h}\n{f}{{\"end\":{{\"frames\":2}}}}\n{f}"));
    assert!(
        end.unwrap_err()
            .ends_with(".fifo:5: a line after the end line (line 4), which closes the recording")
    );
    // A version-1 FIFO has no end line to miss.
    let (seen, end) = replay_fifo(&dir, &format!("{V1}\n{f}"));
    assert_eq!((seen.len(), end), (2, Ok(None)));
}

/// The end line of a run refused before its first sample, as the writer
/// spells it.
fn refused_end(status: i32, stderr: &str) -> String {
    format!(
        "{{\"end\":{{\"frames\":0,\"refused\":{{\"status\":{status},\"stderr\":{}}}}}}}\n",
        serde_json::to_string(stderr).unwrap()
    )
}

#[test]
fn a_refused_run_is_given_again_from_a_file_and_a_fifo() {
    use super::{Refused, ReplayError};
    let dir = scratch("refused");
    let text = format!("{}\n{}", v2(), refused_end(127, "test: cannot run x\n"));
    let want = Refused {
        status: 127,
        stderr: "test: cannot run x\n".into(),
    };
    let file = dir.join("t.rec");
    std::fs::write(&file, &text).unwrap();
    match Replay::open(&file, "test") {
        Err(ReplayError::Refused { refused, path }) => {
            assert_eq!((refused, path), (want.clone(), file.display().to_string()));
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    let fifo = dir.join("t.fifo");
    crate::common::user_file::mkfifo(&fifo);
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(fifo, text).unwrap())
    };
    let opened = Replay::open(&fifo, "test");
    writer.join().unwrap();
    match opened {
        Err(ReplayError::Refused { refused, .. }) => assert_eq!(refused, want),
        other => panic!("{:?}", other.map(|_| ())),
    }
}

#[test]
fn a_refusal_after_frames_or_with_a_status_no_run_ends_with_is_damage() {
    let dir = scratch("refuseddamage");
    let h = v2();
    let after = refused_end(1, "x\n").replace("\"frames\":0", "\"frames\":2");
    let cases = [
        (
            format!("{h}\n{}{after}", frames(2)),
            "t.rec:4: the end line records a run refused before its first sample, after 2 frames",
        ),
        (
            format!("{h}\n{}", refused_end(0, "")),
            "t.rec:2: the end line records a refused run's exit status as 0, expected one the \
             tools end a refused run with (1, 2, 4, 126, 127, or 128 + a signal's number, with \
             nothing printed)",
        ),
        (
            format!("{h}\n{}", refused_end(256, "x\n")),
            "t.rec:2: the end line records a refused run's exit status as 256",
        ),
        // A crash no tool reports as a refusal, and a signal's status with
        // lines no signal prints.
        (
            format!("{h}\n{}", refused_end(3, "x\n")),
            "t.rec:2: the end line records a refused run's exit status as 3",
        ),
        (
            format!("{h}\n{}", refused_end(139, "Segmentation fault\n")),
            "t.rec:2: the end line records a refused run's exit status as 139",
        ),
        (
            format!("{h}\n{}{}", refused_end(1, "x\n"), frames(1)),
            "t.rec:3: a line after the end line (line 2)",
        ),
    ];
    for (text, want) in cases {
        let err = replay_text(&dir, &text).unwrap_err();
        assert!(err.contains(want), "want {want:?}, got {err:?}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

#[test]
fn a_recording_of_no_sample_says_what_its_writer_did() {
    let dir = scratch("nosample");
    let cases = [
        // What earlier versions left of a refused run: a header alone.
        (
            format!("{V1}\n"),
            "t.rec:2: the recording holds no sample: its run ended before its first sample \
             (refused, stopped or killed), and a recording of version 1 does not say why",
        ),
        (
            format!("{}\n", v2()),
            "t.rec:2: the recording holds no sample and no end line: its run was killed (or \
             out of space) before its first sample, or refused there by an earlier version, \
             which did not record why",
        ),
        (
            format!("{}\n{{\"end\":{{\"frames\":0}}}}\n", v2()),
            "t.rec:2: the recording holds no sample: its end line counts none and records no \
             refusal",
        ),
    ];
    for (text, want) in cases {
        let err = replay_text(&dir, &text).unwrap_err();
        assert!(err.ends_with(want), "want {want:?}, got {err:?}");
        assert_eq!(err.lines().count(), 1, "{err}");
        // The same from a FIFO, which is read once.
        let fifo = dir.join("t.fifo");
        let _ = std::fs::remove_file(&fifo);
        crate::common::user_file::mkfifo(&fifo);
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::write(fifo, text).unwrap())
        };
        let err = Replay::open(&fifo, "test").err().unwrap().to_string();
        writer.join().unwrap();
        assert!(err.ends_with(&want.replace("t.rec", "t.fifo")), "{err}");
    }
}

#[test]
fn a_recording_cut_in_its_header_or_in_a_refusal_says_so() {
    let dir = scratch("cutheader");
    let h = v2();
    let refused = refused_end(1, "test: refused\n");
    let cases = [
        (
            h[..60].to_string(),
            "t.rec:1: the header is incomplete: the recording was cut (killed, or out of space) \
             before its first sample",
        ),
        (
            format!("{}\0\0\0", &h[..60]),
            "t.rec:1: the header is incomplete",
        ),
        (
            format!("{h}\n{}", &refused[..30]),
            "t.rec:2: the recording holds no sample, and its end line (line 2) is cut short: \
             its run ended before its first sample, and the disk filled up (or it was killed) \
             as it wrote why",
        ),
        // Damage is not a cut: a header with a newline, or JSON that ends.
        (
            format!("{}\n", &h[..60]),
            "t.rec:1: not a recording header: control character",
        ),
        (
            "{\"format\":\"hwstat-recording\"} x".to_string(),
            "t.rec:1: not a recording header: trailing characters",
        ),
    ];
    for (text, want) in cases {
        let err = replay_text(&dir, &text).unwrap_err();
        assert!(err.contains(want), "want {want:?}, got {err:?}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

/// A recorder of `root` into `fifo` once its reader has opened it: a FIFO
/// that no process reads is refused (`ENXIO`), and this test's writer
/// thread can run before the reader's open (a hang under load, when the
/// refused writer's panic left the reader waiting for it). At most 10 s.
fn recorder_once_read(fifo: &Path, root: &Path) -> super::Recorder {
    use crate::common::source::RootFs;
    for _ in 0..2000 {
        let live = Box::new(RootFs::new(root.to_path_buf()));
        match super::Recorder::create(fifo, live, "test", &[]) {
            Err(e)
                if std::error::Error::source(&e)
                    .and_then(|source| source.downcast_ref::<std::io::Error>())
                    .is_some_and(|source| source.kind() == std::io::ErrorKind::NotConnected) =>
            {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            created => return created.unwrap(),
        }
    }
    panic!("{}: no reader opened it in 10 s", fifo.display());
}

/// A replay of as many samples as a FIFO's recording holds stops at its
/// last frame and closes the FIFO without reading the end line: the
/// writer, whose run took every sample and wrote every frame, then met
/// `EPIPE` on its end line alone, as often as the replay won the race
/// between that frame and the end line (2 runs in 100 of `iostat-rs
/// --record - -d 0.01 3 | iostat-rs --replay /dev/stdin -d 1 3`), and
/// failed (`cannot write recording -: Broken pipe`, status 1). Here the
/// reader goes away after the last frame, before the end line, every time.
#[test]
fn a_reader_gone_after_the_last_frame_does_not_fail_the_run() {
    use crate::common::source::Source;
    let dir = scratch("endgone");
    let fifo = dir.join("t.fifo");
    crate::common::user_file::mkfifo(&fifo);
    let (read_all, reader_gone) = std::sync::mpsc::channel::<()>();
    let writer = {
        let (fifo, root) = (fifo.clone(), dir.join("root"));
        std::thread::spawn(move || {
            let mut rec = recorder_once_read(&fifo, &root);
            for sample in 0..2 {
                rec.values("perf:x", &mut || Ok(vec![sample])).unwrap();
                assert!(rec.next_sample().unwrap());
            }
            reader_gone.recv().unwrap();
            rec.finish().map_err(|e| e.to_string())
        })
    };
    let mut replay = Replay::open(&fifo, "test").unwrap();
    assert!(replay.next_sample().unwrap());
    assert_eq!(
        replay.values("perf:x", &mut || unreachable!()).unwrap(),
        [1]
    );
    drop(replay);
    read_all.send(()).unwrap();
    assert_eq!(writer.join().unwrap(), Ok(()));
    // Gone before a frame was written, the run fails as before.
    std::fs::remove_file(&fifo).unwrap();
    crate::common::user_file::mkfifo(&fifo);
    let (opened, reader_gone) = std::sync::mpsc::channel::<()>();
    let writer = {
        let (fifo, root) = (fifo.clone(), dir.join("root"));
        std::thread::spawn(move || {
            let mut rec = recorder_once_read(&fifo, &root);
            rec.values("perf:x", &mut || Ok(vec![0])).unwrap();
            reader_gone.recv().unwrap();
            rec.next_sample().map_err(|e| e.to_string())
        })
    };
    let mut header = String::new();
    let mut file = std::io::BufReader::new(std::fs::File::open(&fifo).unwrap());
    std::io::BufRead::read_line(&mut file, &mut header).unwrap();
    drop(file);
    opened.send(()).unwrap();
    let err = writer.join().unwrap().unwrap_err();
    assert!(err.contains("t.fifo: Broken pipe"), "{err}");
}
