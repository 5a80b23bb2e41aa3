//! A simulated POWER kernel interface for the vcpustat tests: a FUSE file
//! system that behaves like `/proc/powerpc/vcpudispatch_stats`,
//! `vcpudispatch_stats_freq` and `lparcfg` (arch/powerpc/platforms/pseries/
//! lpar.c), mounted in the test process and used as the binary's `--sysroot`.
//!
//! * Reads give `off\n` until `1` is written, then one line per online CPU
//!   with 8 counters kept as C `int`s and printed sign-extended.
//! * Each read of the statistics file while they are on first advances every
//!   online CPU by its scenario step, so the delta between two consecutive
//!   reads is exactly one step and the home ratios are known in advance.
//!   Or, [`Kernel::paced`], the steps follow the clock: a read gives the
//!   steps due since the statistics were switched on, so a count is a known
//!   function of the moment of its read.
//! * Writes are parsed like the kernel: more than 15 bytes is EINVAL, then
//!   `kstrtoint(buf, 0)` (base prefixes, one trailing newline, ERANGE), 0/1
//!   only, a write of the current state is a successful no-op, enabling
//!   zeroes every counter; the frequency must be in 1..=HZ.
//! * On demand: EBUSY on enable (the DTL in use), EACCES on open (not root),
//!   EIO on a given read, and scripted events at a given read (someone
//!   switches the statistics off, or off and on again, or sets the
//!   frequency; a CPU goes offline or comes online).
//! * `/sys/devices/system/cpu/possible` lists the scenario's CPUs.
//! * Optionally ([`Kernel::with_debugfs`]) a debugfs under `/sys/kernel/debug`
//!   with `powerpc/dtl/` as `arch/powerpc/platforms/pseries/dtl.c` creates it:
//!   `dtl_event_mask` (x8 attribute: reads `0x%02x`, writes parsed like
//!   `kstrtoull(s, 0)`), `dtl_buf_entries` (u32, read-only) and `cpu-N`
//!   (one opener at a time, EBUSY for a second; reads of 0 bytes: nothing
//!   was dispatched, as under QEMU's TCG; a read size that is not a
//!   multiple of the 48-byte entry is EINVAL). The rings and
//!   `vcpudispatch_stats` share the kernel's `dtl_access_lock`: while a ring
//!   is open, enabling the statistics is EBUSY, and while they are on,
//!   opening a ring is EBUSY. Like the real debugfs files
//!   they are not seekable: `lseek` fails with ESPIPE. Without
//!   `CONFIG_DTL` ([`Dtl::config_dtl`] false) debugfs has `powerpc/` but no
//!   `dtl/`.

use crate::fuse::{self, Answer, Attr, DirEntry};
use crate::skip;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

/// Something that happens just before the N-th read of the statistics file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Someone writes 0.
    SwitchOff,
    /// Someone writes 0 then 1 (the counters restart from zero).
    Reenable,
    /// The CPU goes offline (keeps its counters, is no longer printed).
    Offline(u32),
    /// The CPU comes online.
    Online(u32),
    /// This read fails with EIO.
    FailRead,
    /// From now on, opening the statistics files fails with EACCES.
    Deny,
    /// Someone sets the frequency.
    SetFreq(i32),
}

/// One write that reached the simulated kernel and what it answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    /// `stats` or `freq`.
    pub file: &'static str,
    /// The bytes of the single write(2).
    pub data: Vec<u8>,
    /// Bytes accepted, or the errno.
    pub result: Result<usize, i32>,
    /// Whether a vcpustat run held the runs' mutex (byte 0 of
    /// `run/vcpustat.lock`, `vcpustat::session`) at the write.
    pub runs_locked: bool,
    /// The runs' record at the write: its lines without the padding.
    pub runs_record: Vec<String>,
}

/// The simulated kernel's state.
#[derive(Debug, Clone)]
pub struct Kernel {
    /// vcpudispatch_stats_on.
    pub on: bool,
    /// vcpudispatch_stats_freq.
    pub freq: i32,
    /// The kernel's HZ.
    pub hz: i32,
    /// Per possible CPU: counters (C ints), step per read, online.
    pub cpus: BTreeMap<u32, Cpu>,
    /// Whether the files exist (a shared-processor LPAR).
    pub files: bool,
    /// `lparcfg` contents, if the file exists.
    pub lparcfg: Option<String>,
    /// `/proc/cpuinfo` contents, if the file exists.
    pub cpuinfo: Option<String>,
    /// The DTL is held by another consumer: enabling fails with EBUSY.
    pub busy: bool,
    /// Enabling fails with this errno: EINVAL when the kernel cannot set
    /// up its CPU-hotplug work for the DTL, ENOMEM when it cannot
    /// allocate its associativity tables.
    pub enable_fails: Option<i32>,
    /// Opening the statistics files fails with EACCES.
    pub deny: bool,
    /// Events before the N-th read of the statistics file (1-based).
    pub events: BTreeMap<u64, Vec<Event>>,
    /// Reads of the statistics file so far.
    pub reads: u64,
    /// Every write, in order.
    pub writes: Vec<Write>,
    /// debugfs on `/sys/kernel/debug`, when mounted.
    pub debugfs: Option<Dtl>,
    /// Steps by the clock instead of by the reads, when set.
    pub pace: Option<Pace>,
    /// How long a write of the frequency takes (a hypervisor slow to
    /// answer), for a stop signal to come in the middle of it; at most,
    /// where the test lets it go sooner (`slow_freq_calls_released`).
    pub freq_write_takes: std::time::Duration,
    /// How long a read of the frequency takes, likewise.
    pub freq_read_takes: std::time::Duration,
    /// Reads and writes of the frequency begun that `freq_read_takes` or
    /// `freq_write_takes` hold up: a test signals a run once it is in one.
    pub slow_freq_calls_begun: u64,
    /// The test lets the slow calls up to this one (counted as in
    /// `slow_freq_calls_begun`) go on before their time is up.
    pub slow_freq_calls_released: u64,
}

/// Counters that advance with the wall clock: `steps_per_second` steps a
/// second since `since` (whole steps, rounded down).
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    /// When the statistics were switched on (the counters were zero).
    pub since: SystemTime,
    /// Steps added per second.
    pub steps_per_second: u32,
}

impl Pace {
    /// The whole steps due by now.
    fn steps_due(&self) -> i64 {
        let elapsed = SystemTime::now()
            .duration_since(self.since)
            .unwrap_or_default();
        (elapsed.as_secs_f64() * f64::from(self.steps_per_second)) as i64
    }
}

/// The debugfs side of the DTL.
#[derive(Debug, Clone)]
pub struct Dtl {
    /// Whether the kernel has `CONFIG_DTL` (the `dtl/` directory).
    pub config_dtl: bool,
    /// `dtl_event_mask`.
    pub event_mask: u8,
    /// `dtl_buf_entries`.
    pub buf_entries: u32,
    /// The vCPUs with a `cpu-N` ring.
    pub cpus: Vec<u32>,
    /// Rings held open now.
    pub open_rings: Vec<u32>,
    /// Every ring opened, with the mask it took (`dtl_start` reads
    /// `dtl_event_mask` then, and only then), in order.
    pub opened_with: Vec<(u32, u8)>,
    /// Every value written to `dtl_event_mask`, in order.
    pub mask_writes: Vec<MaskWrite>,
    /// Someone else's mask, written just after the next ring opens.
    pub theirs_at_next_open: Option<u8>,
}

/// One write to `dtl_event_mask`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaskWrite {
    /// What was written.
    pub data: Vec<u8>,
    /// How many rings were open then.
    pub rings_open: usize,
}

impl MaskWrite {
    /// A write of `data` with `rings_open` rings open.
    pub fn new(data: &str, rings_open: usize) -> MaskWrite {
        MaskWrite {
            data: data.as_bytes().to_vec(),
            rings_open,
        }
    }
}

/// One simulated CPU.
#[derive(Debug, Clone, Copy)]
pub struct Cpu {
    /// The 8 counters as the kernel keeps them.
    pub counts: [i32; 8],
    /// What one read adds.
    pub step: [i32; 8],
    /// Printed or not.
    pub online: bool,
}

impl Kernel {
    /// A shared-processor LPAR with these CPUs and steps, statistics off,
    /// frequency 50, HZ 100.
    pub fn new(steps: &[(u32, [i32; 8])]) -> Kernel {
        Kernel {
            on: false,
            freq: 50,
            hz: 100,
            cpus: steps
                .iter()
                .map(|&(cpu, step)| {
                    (
                        cpu,
                        Cpu {
                            counts: [0; 8],
                            step,
                            online: true,
                        },
                    )
                })
                .collect(),
            files: true,
            lparcfg: Some("lparcfg 1.9\nshared_processor_mode=1\n".into()),
            cpuinfo: None,
            busy: false,
            enable_fails: None,
            deny: false,
            freq_write_takes: std::time::Duration::ZERO,
            freq_read_takes: std::time::Duration::ZERO,
            slow_freq_calls_begun: 0,
            slow_freq_calls_released: 0,
            events: BTreeMap::new(),
            reads: 0,
            writes: Vec::new(),
            debugfs: None,
            pace: None,
        }
    }

    /// The statistics switched on now, their counters advancing by
    /// `steps_per_second` steps a second from zero instead of a step a read.
    pub fn paced(mut self, steps_per_second: u32) -> Kernel {
        self.on = true;
        self.pace = Some(Pace {
            since: SystemTime::now(),
            steps_per_second,
        });
        self
    }

    // vcpustat_fuse.rs shares this module and has no DTL.
    #[allow(dead_code)]
    /// Adds a mounted debugfs with the DTL files of these vCPUs (mask
    /// `0x07`, `buf_entries` rings), or, without `config_dtl`, without them.
    pub fn with_debugfs(mut self, config_dtl: bool, buf_entries: u32, cpus: &[u32]) -> Kernel {
        self.debugfs = Some(Dtl {
            config_dtl,
            event_mask: 0x07,
            buf_entries,
            cpus: cpus.to_vec(),
            open_rings: Vec::new(),
            opened_with: Vec::new(),
            mask_writes: Vec::new(),
            theirs_at_next_open: None,
        });
        self
    }

    /// Schedules an event before read `n` of the statistics file.
    pub fn at_read(mut self, n: u64, event: Event) -> Kernel {
        self.events.entry(n).or_default().push(event);
        self
    }

    fn enable(&mut self) {
        for cpu in self.cpus.values_mut() {
            cpu.counts = [0; 8];
        }
        if let Some(pace) = &mut self.pace {
            pace.since = SystemTime::now();
        }
        self.on = true;
    }

    /// The statistics file as the kernel prints it, after this read's events
    /// and one step; `Err(errno)` for a failing read.
    fn render_stats(&mut self) -> Result<Vec<u8>, i32> {
        self.reads += 1;
        for event in self.events.remove(&self.reads).unwrap_or_default() {
            match event {
                Event::SwitchOff => self.on = false,
                Event::Reenable => self.enable(),
                Event::Offline(c) => self.cpus.get_mut(&c).expect("cpu").online = false,
                Event::Online(c) => self.cpus.get_mut(&c).expect("cpu").online = true,
                Event::FailRead => return Err(libc::EIO),
                Event::Deny => self.deny = true,
                Event::SetFreq(freq) => self.freq = freq,
            }
        }
        if !self.on {
            return Ok(b"off\n".to_vec());
        }
        let steps_due = self.pace.map(|pace| pace.steps_due());
        let mut out = String::new();
        for (n, cpu) in &mut self.cpus {
            if !cpu.online {
                continue;
            }
            for (c, s) in cpu.counts.iter_mut().zip(cpu.step) {
                *c = match steps_due {
                    // An int in the kernel: the product wraps as it would.
                    Some(steps) => (i64::from(s) * steps) as i32,
                    None => c.wrapping_add(s),
                };
            }
            out.push_str(&format!("cpu{n}"));
            for c in cpu.counts {
                // seq_put_decimal_ull of an int: sign-extended.
                out.push_str(&format!(" {}", c as i64 as u64));
            }
            out.push('\n');
        }
        Ok(out.into_bytes())
    }

    /// vcpudispatch_stats_write.
    fn write_stats(&mut self, data: &[u8]) -> Result<usize, i32> {
        if data.len() > 15 {
            return Err(libc::EINVAL);
        }
        let cmd = kstrtoint(data)?;
        if !(0..=1).contains(&cmd) {
            return Err(libc::EINVAL);
        }
        if (cmd == 1) == self.on {
            return Ok(data.len());
        }
        if cmd == 1 {
            // dtl_worker_enable: down_write_trylock(&dtl_access_lock) fails
            // while a cpu-N ring is open (each holds it for reading).
            let ring_open = self
                .debugfs
                .as_ref()
                .is_some_and(|d| !d.open_rings.is_empty());
            if self.busy || ring_open {
                return Err(libc::EBUSY);
            }
            if let Some(errno) = self.enable_fails {
                return Err(errno);
            }
            self.enable();
        } else {
            self.on = false;
        }
        Ok(data.len())
    }

    /// vcpudispatch_stats_freq_write.
    fn write_freq(&mut self, data: &[u8]) -> Result<usize, i32> {
        if data.len() > 15 {
            return Err(libc::EINVAL);
        }
        let freq = kstrtoint(data)?;
        if freq < 1 || freq > self.hz {
            return Err(libc::EINVAL);
        }
        self.freq = freq;
        Ok(data.len())
    }
}

/// The kernel's `kstrtoint(s, 0, &v)`: optional sign, base from the prefix
/// (`0x` hex, `0` octal, else decimal), one trailing newline, nothing else;
/// EINVAL for malformed text, ERANGE outside `int`.
pub fn kstrtoint(data: &[u8]) -> Result<i32, i32> {
    let mut s = data;
    let negative = match s.first() {
        Some(b'-') => {
            s = &s[1..];
            true
        }
        Some(b'+') => {
            s = &s[1..];
            false
        }
        _ => false,
    };
    let (base, digits) =
        if s.len() > 2 && s[0] == b'0' && (s[1] | 0x20) == b'x' && s[2].is_ascii_hexdigit() {
            (16u64, &s[2..])
        } else if s.first() == Some(&b'0') {
            (8, s)
        } else {
            (10, s)
        };
    let mut value: u64 = 0;
    let mut count = 0;
    let mut overflow = false;
    let mut rest = digits;
    while let Some(&b) = rest.first() {
        let d = match b {
            b'0'..=b'9' => u64::from(b - b'0'),
            b'a'..=b'f' => u64::from(b - b'a' + 10),
            b'A'..=b'F' => u64::from(b - b'A' + 10),
            _ => break,
        };
        if d >= base {
            break;
        }
        match value.checked_mul(base).and_then(|v| v.checked_add(d)) {
            Some(v) => value = v,
            None => overflow = true,
        }
        count += 1;
        rest = &rest[1..];
    }
    if count == 0 {
        return Err(libc::EINVAL);
    }
    if rest.first() == Some(&b'\n') {
        rest = &rest[1..];
    }
    if !rest.is_empty() {
        return Err(libc::EINVAL);
    }
    if overflow {
        return Err(libc::ERANGE);
    }
    let signed = if negative {
        -(i128::from(value))
    } else {
        i128::from(value)
    };
    i32::try_from(signed).map_err(|_| libc::ERANGE)
}

const ROOT: u64 = 1;
const PROC: u64 = 2;
const POWERPC: u64 = 3;
const STATS: u64 = 4;
const FREQ: u64 = 5;
const LPARCFG: u64 = 6;
const CPUINFO: u64 = 14;
/// `run`, where a real directory is mounted (`Mounted::run`).
const RUN: u64 = 15;
const SYS: u64 = 7;
const SYS_KERNEL: u64 = 8;
const DEBUG: u64 = 9;
const DEBUG_POWERPC: u64 = 10;
const DTL_DIR: u64 = 11;
const EVENT_MASK: u64 = 12;
const BUF_ENTRIES: u64 = 13;
const SYS_DEVICES: u64 = 16;
const SYS_SYSTEM: u64 = 17;
const SYS_CPU: u64 = 18;
/// `/sys/devices/system/cpu/possible`: the scenario's CPUs.
const POSSIBLE: u64 = 19;
/// `sizeof(struct dtl_entry)`: a ring read must be a multiple of it.
const DTL_ENTRY_BYTES: usize = 48;
/// `cpu-N` is inode `RING_BASE + N`.
const RING_BASE: u64 = 1000;

fn is_dir(ino: u64) -> bool {
    matches!(
        ino,
        ROOT | PROC
            | POWERPC
            | RUN
            | SYS
            | SYS_KERNEL
            | DEBUG
            | DEBUG_POWERPC
            | DTL_DIR
            | SYS_DEVICES
            | SYS_SYSTEM
            | SYS_CPU
    )
}

/// `cpus`, ascending, as the kernel lists CPUs (`0-3,8\n`).
fn cpu_ranges(cpus: impl Iterator<Item = u32>) -> String {
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    for cpu in cpus {
        match ranges.last_mut() {
            Some((_, last)) if *last + 1 == cpu => *last = cpu,
            _ => ranges.push((cpu, cpu)),
        }
    }
    let text: Vec<String> = ranges
        .iter()
        .map(|&(first, last)| {
            if first == last {
                first.to_string()
            } else {
                format!("{first}-{last}")
            }
        })
        .collect();
    format!("{}\n", text.join(","))
}

/// The debugfs files: not seekable, as the kernel's.
fn is_debugfs_file(ino: u64) -> bool {
    matches!(ino, EVENT_MASK | BUF_ENTRIES) || ino >= RING_BASE
}

/// `kstrtoull(s, 0)` narrowed to `u8` as debugfs' x8 attribute does
/// (`simple_attr_write`: EINVAL for malformed text, the value truncated).
fn parse_x8(data: &[u8]) -> Result<u8, i32> {
    let text = std::str::from_utf8(data).map_err(|_| libc::EINVAL)?;
    let t = text.strip_suffix('\n').unwrap_or(text);
    let value = if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16)
    } else if t.len() > 1 && t.starts_with('0') {
        u64::from_str_radix(&t[1..], 8)
    } else {
        t.parse::<u64>()
    }
    .map_err(|_| libc::EINVAL)?;
    Ok(value as u8)
}

struct SimFs {
    kernel: Arc<Mutex<Kernel>>,
    /// The lock file vcpustat runs meet in, looked at on each write.
    runs_lock: PathBuf,
    /// Contents generated at the first read of each open file (seq_file).
    opened: Mutex<BTreeMap<u64, Vec<u8>>>,
    next_fh: Mutex<u64>,
}

fn attr(ino: u64) -> Attr {
    let dir = is_dir(ino);
    let perm = if dir {
        0o555
    } else if ino == LPARCFG || ino == CPUINFO || ino == POSSIBLE {
        0o444
    } else if ino == BUF_ENTRIES || ino >= RING_BASE {
        0o400
    } else {
        0o600
    };
    Attr {
        ino,
        dir,
        perm,
        size: 0,
    }
}

impl SimFs {
    fn kernel(&self) -> MutexGuard<'_, Kernel> {
        self.kernel.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Holds up a read or write of the frequency for as long as `takes` of
    /// the kernel says, counted in `slow_freq_calls_begun` when it does;
    /// the test may let it go sooner (`slow_freq_calls_released`).
    fn hold_freq_call(&self, takes: impl Fn(&Kernel) -> std::time::Duration) {
        let (takes, call) = {
            let mut k = self.kernel();
            let takes = takes(&k);
            if takes.is_zero() {
                return;
            }
            k.slow_freq_calls_begun += 1;
            (takes, k.slow_freq_calls_begun)
        };
        let start = std::time::Instant::now();
        while start.elapsed() < takes {
            let released = self.kernel().slow_freq_calls_released;
            if released >= call {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }

    fn exists(&self, ino: u64) -> bool {
        let k = self.kernel();
        match ino {
            ROOT | PROC | POWERPC | RUN => true,
            STATS | FREQ => k.files,
            LPARCFG => k.lparcfg.is_some(),
            CPUINFO => k.cpuinfo.is_some(),
            SYS | SYS_KERNEL | DEBUG => true,
            SYS_DEVICES | SYS_SYSTEM | SYS_CPU | POSSIBLE => true,
            DEBUG_POWERPC => k.debugfs.is_some(),
            DTL_DIR | EVENT_MASK | BUF_ENTRIES => k.debugfs.as_ref().is_some_and(|d| d.config_dtl),
            ring => k.debugfs.as_ref().is_some_and(|d| {
                d.config_dtl
                    && ring >= RING_BASE
                    && d.cpus.iter().any(|&c| u64::from(c) + RING_BASE == ring)
            }),
        }
    }

    /// The entries of directory `ino` that exist now.
    fn children(&self, ino: u64) -> Vec<DirEntry> {
        let entry = |ino: u64, dir: bool, name: &str| DirEntry {
            ino,
            dir,
            name: name.to_string(),
        };
        let dir = |i: u64, name: &str| entry(i, true, name);
        let file = |i: u64, name: &str| entry(i, false, name);
        let candidates = match ino {
            ROOT => vec![dir(PROC, "proc"), dir(RUN, "run"), dir(SYS, "sys")],
            PROC => vec![dir(POWERPC, "powerpc"), file(CPUINFO, "cpuinfo")],
            POWERPC => vec![
                file(STATS, "vcpudispatch_stats"),
                file(FREQ, "vcpudispatch_stats_freq"),
                file(LPARCFG, "lparcfg"),
            ],
            SYS => vec![dir(SYS_KERNEL, "kernel"), dir(SYS_DEVICES, "devices")],
            SYS_DEVICES => vec![dir(SYS_SYSTEM, "system")],
            SYS_SYSTEM => vec![dir(SYS_CPU, "cpu")],
            SYS_CPU => vec![file(POSSIBLE, "possible")],
            SYS_KERNEL => vec![dir(DEBUG, "debug")],
            DEBUG => vec![dir(DEBUG_POWERPC, "powerpc")],
            DEBUG_POWERPC => vec![dir(DTL_DIR, "dtl")],
            DTL_DIR => {
                let cpus = self
                    .kernel()
                    .debugfs
                    .as_ref()
                    .map(|d| d.cpus.clone())
                    .unwrap_or_default();
                let mut v = vec![
                    file(EVENT_MASK, "dtl_event_mask"),
                    file(BUF_ENTRIES, "dtl_buf_entries"),
                ];
                v.extend(
                    cpus.iter()
                        .map(|&c| file(RING_BASE + u64::from(c), &format!("cpu-{c}"))),
                );
                v
            }
            _ => Vec::new(),
        };
        candidates
            .into_iter()
            .filter(|e| self.exists(e.ino))
            .collect()
    }
}

impl fuse::FileSystem for SimFs {
    fn lookup(&self, _pid: u32, parent: u64, name: &[u8]) -> Answer<Attr> {
        self.children(parent)
            .into_iter()
            .find(|e| e.name.as_bytes() == name)
            .map(|e| attr(e.ino))
            .ok_or(libc::ENOENT)
    }

    fn getattr(&self, _pid: u32, ino: u64) -> Answer<Attr> {
        if self.exists(ino) {
            Ok(attr(ino))
        } else {
            Err(libc::ENOENT)
        }
    }

    fn setattr(&self, _pid: u32, ino: u64) -> Answer<Attr> {
        // procfs ignores O_TRUNC: accept the truncation and change nothing.
        Ok(attr(ino))
    }

    fn open(&self, _pid: u32, ino: u64) -> Answer<(u64, u32)> {
        if matches!(ino, STATS | FREQ) && self.kernel().deny {
            return Err(libc::EACCES);
        }
        let mut flags = fuse::FOPEN_DIRECT_IO;
        if is_debugfs_file(ino) {
            flags |= fuse::FOPEN_NONSEEKABLE;
        }
        if ino >= RING_BASE {
            let mut k = self.kernel();
            let stats_on = k.on;
            let dtl = k.debugfs.as_mut().ok_or(libc::ENOENT)?;
            let cpu = (ino - RING_BASE) as u32;
            // dtl_enable: one reader per ring, and none while
            // vcpudispatch_stats holds dtl_access_lock for writing.
            if dtl.open_rings.contains(&cpu) || stats_on {
                return Err(libc::EBUSY);
            }
            dtl.open_rings.push(cpu);
            dtl.opened_with.push((cpu, dtl.event_mask));
            if let Some(theirs) = dtl.theirs_at_next_open.take() {
                dtl.event_mask = theirs;
            }
        }
        let mut next = self.next_fh.lock().unwrap_or_else(|e| e.into_inner());
        *next += 1;
        Ok((*next, flags))
    }

    fn read(&self, _pid: u32, ino: u64, fh: u64, offset: u64, size: u32) -> Answer<Vec<u8>> {
        if ino == FREQ && offset == 0 {
            // Outside the locks, as a slow write.
            self.hold_freq_call(|k| k.freq_read_takes);
        }
        let mut opened = self.opened.lock().unwrap_or_else(|e| e.into_inner());
        if offset == 0 || !opened.contains_key(&fh) {
            let mut k = self.kernel();
            let content = match ino {
                STATS => k.render_stats()?,
                FREQ => format!("{}\n", k.freq).into_bytes(),
                LPARCFG => k.lparcfg.clone().unwrap_or_default().into_bytes(),
                CPUINFO => k.cpuinfo.clone().unwrap_or_default().into_bytes(),
                POSSIBLE => cpu_ranges(k.cpus.keys().copied()).into_bytes(),
                EVENT_MASK => k
                    .debugfs
                    .as_ref()
                    .map(|d| format!("0x{:02x}\n", d.event_mask).into_bytes())
                    .unwrap_or_default(),
                BUF_ENTRIES => k
                    .debugfs
                    .as_ref()
                    .map(|d| format!("{}\n", d.buf_entries).into_bytes())
                    .unwrap_or_default(),
                // dtl_file_read: whole entries only, and nothing is ever
                // logged here.
                ring if ring >= RING_BASE && !(size as usize).is_multiple_of(DTL_ENTRY_BYTES) => {
                    return Err(libc::EINVAL);
                }
                ring if ring >= RING_BASE => Vec::new(),
                _ => return Err(libc::EISDIR),
            };
            opened.insert(fh, content);
        }
        Ok(fuse::window(&opened[&fh], offset, size))
    }

    fn write(&self, _pid: u32, ino: u64, _fh: u64, data: &[u8]) -> Answer<u32> {
        if ino == FREQ {
            // Outside the lock: the test reads the state meanwhile.
            self.hold_freq_call(|k| k.freq_write_takes);
        }
        let mut k = self.kernel();
        let (file, result) = match ino {
            STATS => ("stats", k.write_stats(data)),
            FREQ => ("freq", k.write_freq(data)),
            EVENT_MASK => {
                let dtl = k.debugfs.as_mut().expect("the mask exists with debugfs");
                dtl.mask_writes.push(MaskWrite {
                    data: data.to_vec(),
                    rings_open: dtl.open_rings.len(),
                });
                let result = parse_x8(data).map(|mask| {
                    dtl.event_mask = mask;
                    data.len()
                });
                ("dtl_event_mask", result)
            }
            _ => ("other", Err(libc::EIO)),
        };
        let (runs_locked, runs_record) = runs_lock(&self.runs_lock);
        k.writes.push(Write {
            file,
            data: data.to_vec(),
            result,
            runs_locked,
            runs_record,
        });
        result.map(|n| n as u32)
    }

    fn release(&self, ino: u64, fh: u64) {
        self.opened
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&fh);
        if ino >= RING_BASE
            && let Some(dtl) = self.kernel().debugfs.as_mut()
        {
            dtl.open_rings.retain(|&c| u64::from(c) + RING_BASE != ino);
        }
    }

    fn readdir(&self, _pid: u32, ino: u64) -> Answer<Vec<DirEntry>> {
        Ok(self.children(ino))
    }
}

/// A mounted simulation; unmounted when dropped.
pub struct Mounted {
    /// The mount point, to pass as `--sysroot`.
    pub root: PathBuf,
    /// The simulated kernel, to script and inspect.
    pub kernel: Arc<Mutex<Kernel>>,
    _mount: fuse::Mount,
    /// The real directory mounted on the simulation's `run`, where vcpustat
    /// runs keep their shared record (`vcpustat::session`), as /run is a
    /// file system of its own beside /proc; removed after the unmount.
    pub run: RunDir,
}

/// A directory removed with its contents when dropped.
pub struct RunDir(pub PathBuf);

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Mounted {
    /// The kernel state (locked).
    pub fn kernel(&self) -> MutexGuard<'_, Kernel> {
        self.kernel.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits (at most 10 s) until no DTL ring is held open. `close(2)`
    /// returns before FUSE's RELEASE reaches the simulation (the kernel
    /// sends it in the background), so a ring just closed may still hold
    /// the lock it shares with the statistics (once in CI: EBUSY for a
    /// switch on right after the ring's file was dropped).
    pub fn await_rings_closed(&self) {
        self.await_open_rings(&[]);
    }

    /// Waits (at most 10 s) until the DTL rings held open are those of
    /// `cpus`, in the order they were opened: a recording that has ended
    /// may still hold its rings until FUSE's RELEASE arrives
    /// ([`Mounted::await_rings_closed`]).
    pub fn await_open_rings(&self, cpus: &[u32]) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let open = self
                .kernel()
                .debugfs
                .as_ref()
                .map_or_else(Vec::new, |d| d.open_rings.clone());
            if open == cpus {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "DTL rings {open:?} open 10 s after the others closed, not {cpus:?}"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

/// Whether an open file holds a lock on byte 0 of `path` (vcpustat's
/// mutex), as `F_OFD_GETLK` from a file of its own tells, and the lines
/// of the record `path` holds; false and none without a regular file there.
fn runs_lock(path: &Path) -> (bool, Vec<String>) {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::io::AsRawFd;
    // Not blocking on a FIFO a test put there.
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path);
    let Ok(mut file) = opened else {
        return (false, Vec::new());
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return (false, Vec::new());
    }
    // SAFETY: flock is plain data; zeroed is valid (l_pid 0, as OFD locks want).
    let mut byte: libc::flock = unsafe { std::mem::zeroed() };
    byte.l_type = libc::F_WRLCK as libc::c_short;
    byte.l_whence = libc::SEEK_SET as libc::c_short;
    byte.l_len = 1;
    // SAFETY: a valid descriptor and flock, which the call fills in.
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_GETLK, &mut byte) };
    let locked = rc == 0 && byte.l_type != libc::F_UNLCK as libc::c_short;
    let mut text = String::new();
    let _ = file.read_to_string(&mut text);
    let lines = text
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    (locked, lines)
}

/// Mounts directory `from` on `on` too (`mount --bind`); the simulation's
/// lazy unmount takes it away with the simulation.
fn bind(from: &Path, on: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes()).expect("no NUL in a path");
    let (from_c, on_c) = (c(from), c(on));
    // SAFETY: valid C strings that outlive the call; no type or data for a bind.
    let rc = unsafe {
        libc::mount(
            from_c.as_ptr(),
            on_c.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND,
            std::ptr::null(),
        )
    };
    assert_eq!(
        rc,
        0,
        "mount --bind {} {}: {}",
        from.display(),
        on.display(),
        std::io::Error::last_os_error()
    );
}

/// Why FUSE cannot run here, if it cannot.
pub fn unavailable() -> Option<String> {
    if !Path::new("/dev/fuse").exists() {
        return Some(
            "/dev/fuse does not exist (modprobe fuse; in a container, pass --device /dev/fuse)"
                .into(),
        );
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("mounting FUSE without fusermount needs root: run the tests as root".into());
    }
    None
}

/// Mounts `kernel` on a fresh directory. Under `CI=true` a missing FUSE is
/// a failure; elsewhere the caller skips with the printed reason.
pub fn mount(name: &str, kernel: Kernel) -> Option<Mounted> {
    if let Some(reason) = unavailable() {
        skip::skip(&format!("FUSE test {name}"), &reason);
        return None;
    }
    let root = std::env::temp_dir().join(format!("vcpustat-sim-{}-{name}", std::process::id()));
    let kernel = Arc::new(Mutex::new(kernel));
    let run = RunDir(
        std::env::temp_dir().join(format!("vcpustat-sim-run-{}-{name}", std::process::id())),
    );
    let fs = SimFs {
        kernel: Arc::clone(&kernel),
        runs_lock: run.0.join("vcpustat.lock"),
        opened: Mutex::new(BTreeMap::new()),
        next_fh: Mutex::new(0),
    };
    let mount = fuse::mount(fs, &root, "vcpustat-sim", false, 1);
    let _ = std::fs::remove_dir_all(&run.0);
    std::fs::create_dir(&run.0).expect("a directory for the simulation's run");
    // As /run: vcpustat meets other runs only where no one else may write.
    std::fs::set_permissions(&run.0, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("the run directory's mode");
    bind(&run.0, &root.join("run"));
    Some(Mounted {
        root,
        kernel,
        _mount: mount,
        run,
    })
}
