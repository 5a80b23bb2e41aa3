//! `/proc/diskstats` and `/sys/block/*/stat`: the line parsers, then
//! iostat-rs's device list and renderers over two samples of the file (the
//! input's two NUL-separated parts), under a few option sets.
#![no_main]

use hwstat::iostat::parse::{line_name, parse_diskstats_line, parse_sysfs_stat};
use hwstat_fuzz::{drive_iostat, parts, replay_of_reads};
use libfuzzer_sys::fuzz_target;

const OPTION_SETS: [&[&str]; 3] = [&["-x"], &["-dx", "-p", "ALL", "-k"], &["-z", "-s", "-m"]];

fuzz_target!(|data: &[u8]| {
    for line in data.split(|&b| b == b'\n') {
        let _ = parse_diskstats_line(line);
        let _ = line_name(line);
    }
    let _ = parse_sysfs_stat(data);
    let p = parts(data, 2);
    let frames = [
        vec![
            ("/proc/diskstats", p[0]),
            ("/proc/uptime", b"100.00 50.00\n".as_slice()),
            ("/proc/stat", b"cpu  1 2 3 4 5 6 7 8 0 0\n".as_slice()),
        ],
        vec![
            ("/proc/diskstats", p[1]),
            ("/proc/uptime", b"101.00 51.00\n".as_slice()),
            ("/proc/stat", b"cpu  2 3 4 5 6 7 8 9 0 0\n".as_slice()),
        ],
    ];
    for options in OPTION_SETS {
        let args: Vec<String> = options.iter().map(|s| s.to_string()).collect();
        drive_iostat(&mut replay_of_reads(&frames), &args, 2);
    }
});
