//! `/proc/diskstats` and `/sys/block/*/stat`: the line parsers, then
//! iostat-rs's device list and renderers over two samples of the file (the
//! input's two NUL-separated parts), under a few option sets: `-p ALL`
//! reads every line; the others list `/sys/block` (here: every name of the
//! sample) and take those devices' lines.
#![no_main]

use hwstat::common::record::Entry;
use hwstat::iostat::parse::{diskstats_head, parse_diskstats_line, parse_sysfs_stat};
use hwstat_fuzz::{drive_iostat, parts, reads_entries, replay_of};
use libfuzzer_sys::fuzz_target;

const OPTION_SETS: [&[&str]; 3] = [&["-x"], &["-dx", "-p", "ALL", "-k"], &["-z", "-s", "-m"]];

fuzz_target!(|data: &[u8]| {
    for line in data.split(|&b| b == b'\n') {
        let _ = parse_diskstats_line(line);
        let _ = diskstats_head(line);
    }
    let _ = parse_sysfs_stat(data);
    let p = parts(data, 2);
    let samples = [
        (
            p[0],
            b"100.00 50.00\n".as_slice(),
            b"cpu  1 2 3 4 5 6 7 8 0 0\n".as_slice(),
        ),
        (
            p[1],
            b"101.00 51.00\n".as_slice(),
            b"cpu  2 3 4 5 6 7 8 9 0 0\n".as_slice(),
        ),
    ];
    let frames: Vec<_> = samples
        .iter()
        .map(|&(diskstats, uptime, stat)| {
            let mut entries = reads_entries(&[
                ("/proc/diskstats", diskstats),
                ("/proc/uptime", uptime),
                ("/proc/stat", stat),
            ]);
            let names = diskstats
                .split(|&b| b == b'\n')
                .filter_map(diskstats_head)
                .map(|h| h.name.to_string())
                .collect();
            entries.insert("list /sys/block".into(), Entry::List(names));
            entries
        })
        .collect();
    for options in OPTION_SETS {
        let args: Vec<String> = options.iter().map(|s| s.to_string()).collect();
        drive_iostat(&mut replay_of(frames.clone()), &args, 2);
    }
});
