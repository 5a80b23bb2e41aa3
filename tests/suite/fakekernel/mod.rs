//! Synthetic kernel block-statistics files for the iostat-rs tests.
//!
//! A [`Scenario`] is a deterministic sequence of samples of a fake machine:
//! `/proc/uptime`, the `cpu` lines of `/proc/stat`, and the block devices'
//! counters, rendered exactly as the kernel prints them
//! (`/proc/diskstats` with 14, 18 or 20 columns, `/sys/block/<dev>/stat` and
//! `/sys/block/<dev>/<part>/stat` with the same counters, 11, 15 or 17
//! fields, `%8` wide). The files of one sample agree with each other as the
//! kernel's do. Randomness comes from a seeded xorshift generator, so a seed
//! names a case forever.
//!
//! The generator also knows, for every device and sample, which counters went
//! backwards (a decrease or a 32-bit wrap), which is where sysstat 12.6.1 and
//! current sysstat disagree under `-x`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::Path;

/// A small deterministic pseudo-random generator (xorshift64*).
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed` (any value, 0 included).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x2545_F491_4F6C_DD1D | 1)
    }

    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A value in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    /// A log-uniform value below 10^`digits` (many small, some huge).
    pub fn magnitude(&mut self, digits: u32) -> u64 {
        let d = self.range(0, digits as u64) as u32;
        if d == 0 {
            0
        } else {
            self.next() % 10u64.pow(d)
        }
    }
}

/// Which kernel generation's line format the files use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// 2.6.25 to 4.17: 14 diskstats columns, 11 stat fields.
    Base14,
    /// 4.18 to 5.4: plus discard, 18 columns, 15 fields.
    Discard18,
    /// 5.5 and later: plus flush, 20 columns, 17 fields.
    Flush20,
}

impl Format {
    /// The number of counters after the device name.
    pub fn fields(self) -> usize {
        match self {
            Format::Base14 => 11,
            Format::Discard18 => 15,
            Format::Flush20 => 17,
        }
    }
}

/// The 17 counters of one block device, in kernel order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters(pub [u64; 17]);

/// Indexes into [`Counters`], named after the kernel's iostats fields.
pub mod field {
    /// Reads completed.
    pub const RD_IOS: usize = 0;
    /// Reads merged.
    pub const RD_MERGES: usize = 1;
    /// Sectors read.
    pub const RD_SECTORS: usize = 2;
    /// Milliseconds reading (32-bit).
    pub const RD_TICKS: usize = 3;
    /// Writes completed.
    pub const WR_IOS: usize = 4;
    /// Writes merged.
    pub const WR_MERGES: usize = 5;
    /// Sectors written.
    pub const WR_SECTORS: usize = 6;
    /// Milliseconds writing (32-bit).
    pub const WR_TICKS: usize = 7;
    /// I/Os in flight (a gauge).
    pub const IN_FLIGHT: usize = 8;
    /// Milliseconds doing I/O (32-bit).
    pub const IO_TICKS: usize = 9;
    /// Weighted milliseconds doing I/O (32-bit).
    pub const RQ_TICKS: usize = 10;
    /// Discards completed.
    pub const DC_IOS: usize = 11;
    /// Discards merged.
    pub const DC_MERGES: usize = 12;
    /// Sectors discarded.
    pub const DC_SECTORS: usize = 13;
    /// Milliseconds discarding (32-bit).
    pub const DC_TICKS: usize = 14;
    /// Flushes completed.
    pub const FL_IOS: usize = 15;
    /// Milliseconds flushing (32-bit).
    pub const FL_TICKS: usize = 16;
    /// The 32-bit (`unsigned int`) fields.
    pub const TICKS: [usize; 7] = [
        RD_TICKS, WR_TICKS, IN_FLIGHT, IO_TICKS, RQ_TICKS, DC_TICKS, FL_TICKS,
    ];
}

impl Counters {
    /// The counters as a file of `format` shows them (absent fields are 0).
    pub fn masked(&self, format: Format) -> Counters {
        let mut c = *self;
        for v in c.0.iter_mut().skip(format.fields()) {
            *v = 0;
        }
        c
    }

    /// The `/sys/block/<dev>/stat` line: each value `%8` wide.
    pub fn sysfs_line(&self, format: Format) -> String {
        let mut s = String::with_capacity(9 * 17 + 1);
        for (i, v) in self.0.iter().take(format.fields()).enumerate() {
            if i > 0 {
                s.push(' ');
            }
            let _ = write!(s, "{v:8}");
        }
        s.push('\n');
        s
    }
}

/// One block device in one sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    /// Major number.
    pub major: u32,
    /// Minor number.
    pub minor: u32,
    /// Kernel name (`sda`, `sda1`, `nvme0n1p2`).
    pub name: String,
    /// The whole disk a partition belongs to.
    pub parent: Option<String>,
    /// The cumulative counters.
    pub counters: Counters,
}

/// `/sys/block` of one sample: per disk, its `stat` line, if the disk is
/// present, and its partitions' `stat` lines, by name.
pub type SysBlock = BTreeMap<String, (Option<String>, BTreeMap<String, String>)>;

/// One sample of the fake machine.
#[derive(Debug, Clone)]
pub struct Sample {
    /// `/proc/uptime` first field, in hundredths of a second.
    pub uptime_cs: u64,
    /// Aggregate `cpu` line: user nice system idle iowait irq softirq steal guest guest_nice.
    pub cpu: [u64; 10],
    /// Devices in `/proc/diskstats` order (each disk followed by its partitions).
    pub devices: Vec<Device>,
}

/// A generated run of samples.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The seed it was generated from.
    pub seed: u64,
    /// Line format of every block file.
    pub format: Format,
    /// Number of CPUs in `/proc/stat`.
    pub cpus: usize,
    /// The samples, in order.
    pub samples: Vec<Sample>,
}

/// What a generated scenario should contain.
#[derive(Debug, Clone)]
pub struct Shape {
    /// Number of whole disks.
    pub disks: usize,
    /// Maximum partitions per partitionable disk.
    pub max_parts: usize,
    /// Number of samples.
    pub samples: usize,
    /// Let some stable devices' counters go backwards (not a reset).
    pub backwards: bool,
    /// Let devices appear and disappear between samples.
    pub hotplug: bool,
    /// Start some tick counters just below 2^32, so that they wrap.
    pub ticks_wrap: bool,
}

struct Kind {
    prefix: &'static str,
    major: u32,
    partitions: bool,
}

const KINDS: [Kind; 7] = [
    Kind {
        prefix: "sd",
        major: 8,
        partitions: true,
    },
    Kind {
        prefix: "vd",
        major: 252,
        partitions: true,
    },
    Kind {
        prefix: "nvme",
        major: 259,
        partitions: true,
    },
    Kind {
        prefix: "dm-",
        major: 253,
        partitions: false,
    },
    Kind {
        prefix: "md",
        major: 9,
        partitions: false,
    },
    Kind {
        prefix: "loop",
        major: 7,
        partitions: false,
    },
    Kind {
        prefix: "xvd",
        major: 202,
        partitions: true,
    },
];

/// Letters for the n-th disk of a kind: a..z, aa..zz.
fn letters(n: usize) -> String {
    if n < 26 {
        ((b'a' + n as u8) as char).to_string()
    } else {
        format!(
            "{}{}",
            (b'a' + (n / 26 - 1) as u8) as char,
            (b'a' + (n % 26) as u8) as char
        )
    }
}

/// How a device's counters move between samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Activity {
    /// All zero, always ("never used").
    Unused,
    /// Non-zero but never changing (what `-z` hides).
    Idle,
    /// Busy.
    Busy,
}

struct Plan {
    device: Device,
    activity: Activity,
    discards: bool,
    /// First and one-past-last sample in which the device exists.
    present: (usize, usize),
}

impl Scenario {
    /// Generates a scenario for `seed`.
    pub fn generate(seed: u64, shape: &Shape) -> Scenario {
        let mut rng = Rng::new(seed);
        let format = match rng.range(0, 3) {
            0 => Format::Base14,
            1 => Format::Discard18,
            _ => Format::Flush20,
        };
        let cpus = rng.range(1, 8) as usize;
        let mut plans: Vec<Plan> = Vec::new();
        let mut per_kind = [0usize; KINDS.len()];
        for d in 0..shape.disks {
            let k = if d < 3 {
                d % 3
            } else {
                rng.range(0, KINDS.len() as u64 - 1) as usize
            };
            let kind = &KINDS[k];
            let n = per_kind[k];
            per_kind[k] += 1;
            let (name, minor, part_name): (String, u32, Box<dyn Fn(usize) -> String>) =
                match kind.prefix {
                    "nvme" => {
                        let base = format!("nvme{n}n1");
                        let b2 = base.clone();
                        (
                            base,
                            (n * 16) as u32,
                            Box::new(move |p| format!("{b2}p{p}")),
                        )
                    }
                    "dm-" | "md" | "loop" => (
                        format!("{}{n}", kind.prefix),
                        n as u32,
                        Box::new(|_| String::new()),
                    ),
                    _ => {
                        let base = format!("{}{}", kind.prefix, letters(n));
                        let b2 = base.clone();
                        (base, (n * 16) as u32, Box::new(move |p| format!("{b2}{p}")))
                    }
                };
            let activity = if kind.prefix == "loop" || rng.chance(10) {
                Activity::Unused
            } else if rng.chance(15) {
                Activity::Idle
            } else {
                Activity::Busy
            };
            let discards = rng.chance(40);
            let present = if shape.hotplug && d >= 3 && rng.chance(15) {
                if rng.chance(50) {
                    (
                        rng.range(1, shape.samples as u64 - 1) as usize,
                        shape.samples,
                    )
                } else {
                    (0, rng.range(1, shape.samples as u64 - 1) as usize)
                }
            } else {
                (0, shape.samples)
            };
            let nparts = if kind.partitions && activity != Activity::Unused {
                rng.range(0, shape.max_parts as u64) as usize
            } else {
                0
            };
            let disk = Device {
                major: kind.major,
                minor,
                name: name.clone(),
                parent: None,
                counters: initial(&mut rng, activity, discards, format, true, shape.ticks_wrap),
            };
            plans.push(Plan {
                device: disk,
                activity,
                discards,
                present,
            });
            for p in 1..=nparts {
                let pact = if activity == Activity::Busy && rng.chance(80) {
                    Activity::Busy
                } else {
                    Activity::Idle
                };
                let dev = Device {
                    major: kind.major,
                    minor: minor + p as u32,
                    name: part_name(p),
                    parent: Some(name.clone()),
                    counters: initial(&mut rng, pact, discards, format, false, shape.ticks_wrap),
                };
                plans.push(Plan {
                    device: dev,
                    activity: pact,
                    discards,
                    present,
                });
            }
        }

        // Devices chosen to go backwards once, at a sample after the first.
        let mut backwards_at: Vec<Option<usize>> = vec![None; plans.len()];
        if shape.backwards && shape.samples > 1 {
            for (i, p) in plans.iter().enumerate() {
                if p.activity == Activity::Busy && p.present == (0, shape.samples) && rng.chance(25)
                {
                    backwards_at[i] = Some(rng.range(1, shape.samples as u64 - 1) as usize);
                }
            }
        }

        let mut samples = Vec::with_capacity(shape.samples);
        let mut uptime_cs = rng.range(1000, 50_000_000);
        let mut cpu = [0u64; 10];
        for v in cpu.iter_mut().take(8) {
            *v = rng.magnitude(7);
        }
        for s in 0..shape.samples {
            if s > 0 {
                uptime_cs += rng.range(90, 110);
                advance_cpu(&mut rng, &mut cpu, cpus);
                for (i, p) in plans.iter_mut().enumerate() {
                    if p.activity == Activity::Busy {
                        step(
                            &mut rng,
                            &mut p.device.counters,
                            p.discards,
                            format,
                            p.device.parent.is_none(),
                        );
                    }
                    if backwards_at[i] == Some(s) {
                        go_backwards(&mut rng, &mut p.device.counters);
                    }
                }
            }
            let devices = plans
                .iter()
                .filter(|p| (p.present.0..p.present.1).contains(&s))
                .map(|p| {
                    let mut d = p.device.clone();
                    d.counters = d.counters.masked(format);
                    d
                })
                .collect();
            samples.push(Sample {
                uptime_cs,
                cpu,
                devices,
            });
        }
        Scenario {
            seed,
            format,
            cpus,
            samples,
        }
    }

    /// The `/proc/diskstats` text of sample `s`.
    pub fn diskstats(&self, s: usize) -> String {
        let mut out = String::new();
        for d in &self.samples[s].devices {
            let _ = write!(out, "{:4} {:7} {}", d.major, d.minor, d.name);
            for v in d.counters.0.iter().take(self.format.fields()) {
                let _ = write!(out, " {v}");
            }
            out.push('\n');
        }
        out
    }

    /// The `/proc/uptime` text of sample `s` (exactly two decimals).
    pub fn uptime(&self, s: usize) -> String {
        let up = self.samples[s].uptime_cs;
        let idle = up * self.cpus as u64 / 2;
        format!(
            "{}.{:02} {}.{:02}\n",
            up / 100,
            up % 100,
            idle / 100,
            idle % 100
        )
    }

    /// The `/proc/stat` text of sample `s`: the aggregate line is the sum of
    /// the per-CPU lines, as in the kernel.
    pub fn proc_stat(&self, s: usize) -> String {
        let total = &self.samples[s].cpu;
        let mut out = String::from("cpu ");
        for v in total {
            let _ = write!(out, " {v}");
        }
        out.push('\n');
        for c in 0..self.cpus {
            let _ = write!(out, "cpu{c}");
            for v in total {
                let share = v / self.cpus as u64
                    + if (c as u64) < v % self.cpus as u64 {
                        1
                    } else {
                        0
                    };
                let _ = write!(out, " {share}");
            }
            out.push('\n');
        }
        let up = self.samples[s].uptime_cs;
        let _ = write!(
            out,
            "intr {}\nctxt {}\nbtime 1591000000\nprocesses {}\nprocs_running 1\nprocs_blocked 0\nsoftirq 0\n",
            up * 3,
            up * 7,
            up / 10 + 1
        );
        out
    }

    /// Writes sample `s` as a system root under `root`: `proc/{diskstats,
    /// uptime,stat}`, `sys/block/<dev>[/<part>]/stat` and
    /// `sys/devices/system/cpu/cpuN/`. Existing files are rewritten in place
    /// and block directories of absent devices are removed.
    pub fn write_root(&self, s: usize, root: &Path) -> io::Result<()> {
        fs::create_dir_all(root.join("proc"))?;
        fs::write(root.join("proc/diskstats"), self.diskstats(s))?;
        fs::write(root.join("proc/uptime"), self.uptime(s))?;
        fs::write(root.join("proc/stat"), self.proc_stat(s))?;
        for c in 0..self.cpus {
            fs::create_dir_all(root.join(format!("sys/devices/system/cpu/cpu{c}")))?;
        }
        self.write_sys_block(s, &root.join("sys/block"))
    }

    /// `/sys/block` in sample `s`: per disk, its `stat` (none for the disk
    /// of a partition whose disk is itself absent) and its partitions'
    /// `stat`s.
    pub fn sys_block(&self, s: usize) -> SysBlock {
        let mut block = SysBlock::new();
        for d in &self.samples[s].devices {
            let stat = d.counters.sysfs_line(self.format);
            match &d.parent {
                None => block.entry(d.name.clone()).or_default().0 = Some(stat),
                Some(disk) => {
                    block
                        .entry(disk.clone())
                        .or_default()
                        .1
                        .insert(d.name.clone(), stat);
                }
            }
        }
        block
    }

    /// Makes directory `block` look like `/sys/block` in sample `s`
    /// ([`Scenario::sys_block`]): files rewritten in place, directories of
    /// absent devices removed.
    pub fn write_sys_block(&self, s: usize, block: &Path) -> io::Result<()> {
        fs::create_dir_all(block)?;
        let tree = self.sys_block(s);
        for entry in fs::read_dir(block)? {
            let entry = entry?;
            if !tree.contains_key(&*entry.file_name().to_string_lossy()) {
                fs::remove_dir_all(entry.path())?;
            }
        }
        for (disk, (stat, partitions)) in &tree {
            let dir = block.join(disk);
            fs::create_dir_all(&dir)?;
            if let Some(stat) = stat {
                fs::write(dir.join("stat"), stat)?;
            }
            for entry in fs::read_dir(&dir)? {
                let entry = entry?;
                if entry.path().is_dir()
                    && !partitions.contains_key(&*entry.file_name().to_string_lossy())
                {
                    fs::remove_dir_all(entry.path())?;
                }
            }
            for (partition, stat) in partitions {
                fs::create_dir_all(dir.join(partition))?;
                fs::write(dir.join(partition).join("stat"), stat)?;
            }
        }
        Ok(())
    }

    /// The device called `name` in sample `s`, if present.
    pub fn device(&self, s: usize, name: &str) -> Option<&Device> {
        self.samples[s].devices.iter().find(|d| d.name == name)
    }
}

fn initial(
    rng: &mut Rng,
    activity: Activity,
    discards: bool,
    format: Format,
    disk: bool,
    ticks_wrap: bool,
) -> Counters {
    use field::*;
    let mut c = Counters::default();
    if activity == Activity::Unused {
        return c;
    }
    let wide = if rng.chance(20) { 13 } else { 9 };
    for f in [RD_IOS, RD_MERGES, RD_SECTORS, WR_IOS, WR_MERGES, WR_SECTORS] {
        c.0[f] = rng.magnitude(wide);
    }
    if c.0[RD_IOS] + c.0[WR_IOS] == 0 {
        c.0[WR_IOS] = rng.range(1, 1000);
    }
    for f in [RD_TICKS, WR_TICKS, IO_TICKS, RQ_TICKS] {
        c.0[f] = rng.magnitude(9) & 0xffff_ffff;
    }
    // Some tick counters sit just below 2^32 so that they wrap during the run.
    if ticks_wrap && rng.chance(30) {
        for f in [RD_TICKS, WR_TICKS, IO_TICKS, RQ_TICKS, DC_TICKS, FL_TICKS] {
            if rng.chance(50) {
                c.0[f] = 0xffff_ffff - rng.range(0, 3000);
            }
        }
    }
    c.0[IN_FLIGHT] = rng.range(0, 3);
    if discards && format != Format::Base14 {
        c.0[DC_IOS] = rng.magnitude(7);
        c.0[DC_MERGES] = rng.magnitude(5);
        c.0[DC_SECTORS] = c.0[DC_IOS] * rng.range(8, 4096);
        c.0[DC_TICKS] = c.0[DC_TICKS].max(rng.magnitude(8));
    } else {
        c.0[DC_TICKS] = 0;
    }
    if disk && format == Format::Flush20 {
        c.0[FL_IOS] = rng.magnitude(7);
        c.0[FL_TICKS] = c.0[FL_TICKS].max(rng.magnitude(8));
    } else {
        c.0[FL_TICKS] = 0;
    }
    c
}

fn step(rng: &mut Rng, c: &mut Counters, discards: bool, format: Format, disk: bool) {
    use field::*;
    let add = |c: &mut Counters, f: usize, v: u64| {
        c.0[f] = if TICKS.contains(&f) {
            (c.0[f] + v) & 0xffff_ffff
        } else {
            c.0[f].wrapping_add(v)
        };
    };
    let rd = if rng.chance(20) { 0 } else { rng.magnitude(5) };
    let wr = if rng.chance(20) { 0 } else { rng.magnitude(5) };
    add(c, RD_IOS, rd);
    add(c, RD_MERGES, rd * rng.range(0, 3) / 2);
    add(c, RD_SECTORS, rd * rng.range(1, 2048));
    add(c, RD_TICKS, rd * rng.range(0, 20));
    add(c, WR_IOS, wr);
    add(c, WR_MERGES, wr * rng.range(0, 5) / 2);
    add(c, WR_SECTORS, wr * rng.range(1, 2048));
    add(c, WR_TICKS, wr * rng.range(0, 30));
    let mut dc = 0;
    if discards && format != Format::Base14 && rng.chance(60) {
        dc = rng.magnitude(4);
        add(c, DC_IOS, dc);
        add(c, DC_MERGES, dc / 3);
        add(c, DC_SECTORS, dc * rng.range(8, 65536));
        add(c, DC_TICKS, dc * rng.range(0, 9));
    }
    let mut fl = 0;
    if disk && format == Format::Flush20 && rng.chance(70) {
        fl = rng.magnitude(3);
        add(c, FL_IOS, fl);
        add(c, FL_TICKS, fl * rng.range(0, 4));
    }
    c.0[IN_FLIGHT] = rng.range(0, 8);
    if rd + wr + dc + fl > 0 {
        add(c, IO_TICKS, rng.range(0, 1100));
        add(c, RQ_TICKS, rng.range(0, 60_000));
    }
}

/// One counter of a stable device decreases a little (a driver bug, a
/// per-CPU sum read mid-update): not the "device removed and re-added" case.
fn go_backwards(rng: &mut Rng, c: &mut Counters) {
    use field::*;
    // Merges are left alone: the reference does not say whether `-xs` clamps
    // the merge sum or each term, and the two differ only then.
    let candidates = [
        RD_IOS, WR_IOS, RD_SECTORS, WR_SECTORS, IO_TICKS, RQ_TICKS, WR_TICKS,
    ];
    let f = candidates[rng.range(0, candidates.len() as u64 - 1) as usize];
    let by = rng.range(1, 50).min(c.0[f]);
    c.0[f] -= by;
}

fn advance_cpu(rng: &mut Rng, cpu: &mut [u64; 10], cpus: usize) {
    // About one second of jiffies per CPU, spread over the fields.
    let budget = 100 * cpus as u64;
    let mut left = budget;
    for f in [0usize, 1, 2, 4, 5, 6, 7] {
        let share = rng.range(0, left / 3);
        cpu[f] += share;
        left -= share;
    }
    cpu[3] += left;
    cpu[8] = cpu[8].max(cpu[0] / 10);
}
