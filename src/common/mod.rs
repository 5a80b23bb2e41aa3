//! The sampling core shared by iostat-rs, vcpustat and cxlstat.
//!
//! * [`source`]: where kernel files are read from (a root directory or a
//!   recording), behind one trait;
//! * [`record`]: the recording format, its writer and its replayer;
//! * [`interval`] and [`run`]: interval parsing and the drift-free loop;
//! * [`counter`]: counter deltas that know each field's width;
//! * [`signals`]: stop signals and interruptible sleeping;
//! * [`output`]: one writer per output format over one column description;
//! * [`clock`]: local-time formatting as the C tools do it;
//! * [`cli`]: command-line options shared by every tool.

pub mod cli;
pub mod clock;
pub mod counter;
pub mod interval;
pub mod output;
pub mod record;
pub mod run;
pub mod signals;
pub mod source;
