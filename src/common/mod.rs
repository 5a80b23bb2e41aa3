//! The sampling core shared by iostat-rs, vcpustat and cxlstat.
//!
//! * [`source`]: where kernel files are read from (a root directory or a
//!   recording), behind one trait;
//! * [`root`]: opening kernel files under a root: never blocking, regular
//!   files only, never outside the root;
//! * [`record`]: the recording format, its writer and its replayer;
//! * [`entry`]: the programs' start, before their own code runs, and
//!   [`alloc`], their allocator, which ends a run out of memory in one line;
//! * [`interval`] and [`run`]: interval parsing and the drift-free loop;
//! * [`counter`]: counter deltas that know each field's width;
//! * [`cpulist`]: CPU lists in the kernel's `0-3,8` notation;
//! * [`osname`]: names from the kernel as strings, invalid UTF-8 kept byte
//!   for byte; [`natural`]: names ordered by the numbers in them;
//! * [`escape`]: names from the kernel or a recording, safe to print;
//! * [`signals`]: stop signals and interruptible sleeping;
//! * [`fdlimit`]: the open-file limit, raised when descriptors run out;
//! * [`stdout`]: standard output that a stop signal can interrupt, and
//!   [`stderr`], standard error written so that it cannot end a run;
//! * [`output`]: one writer per output format over one column description;
//! * [`perf`]: the kernel's perf ABI (`perf_event_attr`, the system call,
//!   ioctls) on every architecture, and [`perf_ring`], a sampling event's
//!   ring buffer;
//! * [`tracefs`]: tracepoint ids and record layouts, from tracefs;
//! * [`expo`], [`textfile`]: Prometheus expositions of cumulative counters,
//!   on standard output or replaced atomically in a textfile;
//! * [`temp_file`]: replacing a file atomically, never through a planted link;
//! * [`serve`]: `--listen`, the expositions served to Prometheus at each scrape;
//! * [`clock`]: local-time formatting as the C tools do it;
//! * [`locale`]: the user's date, time and decimal-point conventions;
//! * [`excerpt`]: untrusted text quoted short and escaped in error messages;
//! * [`cli`]: command-line options shared by every tool; [`completion`]:
//!   shell completion, answered by the programs themselves; [`manual`]:
//!   the parts of a manual that clap does not describe;
//! * [`chart`]: SVG charts of a run or a recording (`--svg`);
//! * [`user_file`]: files named on the command line, opened without
//!   blocking and read a bounded line at a time;
//! * [`privilege`]: what a set-user-ID or `setcap` run refuses, and dropping
//!   capabilities.
//!
//! A tool reads kernel files only through a [`source::Source`], so the same
//! code runs on the live system, under `--sysroot` and from a recording:
//!
//! ```
//! use std::collections::BTreeMap;
//! use hwstat::common::record::{Entry, Frame, Header, Replay};
//! use hwstat::common::source::{Source, Uname};
//!
//! let uname = Uname {
//!     sysname: "Linux".into(),
//!     nodename: "host".into(),
//!     release: "6.18.0".into(),
//!     version: String::new(),
//!     machine: "x86_64".into(),
//! };
//! let header = Header {
//!     format: "hwstat-recording".into(),
//!     version: 1,
//!     tool: "example".into(),
//!     args: vec![],
//!     uname,
//!     start_unix_ns: 0,
//!     whole_tree: false,
//! };
//! let frame = |uptime: &str| Frame {
//!     entries: BTreeMap::from([("read /proc/uptime".to_string(), Entry::Text(uptime.into()))]),
//!     ..Frame::default()
//! };
//! let mut source = Replay::from_parts(header, vec![frame("10.00 1.00\n"), frame("11.00 1.50\n")]);
//! assert_eq!(source.read_string("/proc/uptime").unwrap(), "10.00 1.00\n");
//! assert!(source.next_sample().unwrap());
//! assert_eq!(source.read_string("/proc/uptime").unwrap(), "11.00 1.50\n");
//! assert!(!source.next_sample().unwrap(), "a replay ends after its last frame");
//! ```

pub mod alloc;
pub mod chart;
pub mod cli;
pub mod clock;
pub mod completion;
pub mod counter;
pub mod cpulist;
pub mod entry;
pub mod escape;
pub mod excerpt;
pub mod expo;
pub mod fdlimit;
pub mod fixed;
pub mod interval;
pub mod locale;
pub mod manual;
pub mod natural;
pub mod osname;
pub mod output;
pub mod perf;
pub mod perf_ring;
pub mod privilege;
pub mod record;
pub mod root;
pub mod run;
/// The unit tests' temporary directories: the suite's own helper, one
/// file for both.
#[cfg(test)]
#[path = "../../tests/suite/scratch.rs"]
pub(crate) mod scratch;
pub mod serve;
pub mod signals;
pub mod source;
pub mod stderr;
pub mod stdout;
pub mod temp_file;
pub mod textfile;
pub mod tracefs;
pub mod user_file;
