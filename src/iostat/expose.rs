//! iostat-rs's Prometheus exposition: the kernel's cumulative counters at
//! the moment of the call, under node_exporter's names, labels, types and
//! units (its `diskstats` collector and `node_cpu_seconds_total`, as
//! node_exporter 1.5.0 exports them), so its dashboards, alerts and
//! `rate()` expressions work unchanged. No per-interval arithmetic:
//! Prometheus computes rates (see `contrib/prometheus/` and docs/prometheus.md).
//!
//! Devices: those named on the command line, else every line of
//! `/proc/diskstats` with `-p ALL`, else the lines node_exporter exports by
//! default (not `ram*`, `loop*`, `fd*` or partitions named like `sda1`; see
//! `node_exporter_leaves_out`), and with `ALL` every whole device
//! `/sys/block` lists too: a sum over devices counts what node_exporter's
//! does, and a loop device's I/O is not counted again with its file's disk. Devices that
//! never did I/O are included (a series must not come and go), groups
//! (`-g`) left to PromQL's `sum`. Lines in the pre-2.6.25 partition format
//! are left out.

use std::collections::HashSet;

use crate::common::expo::{Exposition, Family, Kind};
use crate::common::source::{Source, is_out_of_descriptors, out_of_descriptors};

use super::cli::{DeviceKind, ListArg, Options};
use super::error::{IostatError, strerror};
use super::latency::prometheus::LatencyExposition;
use super::parse::{DiskCounters, StatFormat, parse_diskstats_line};

const PROC_DISKSTATS: &str = "/proc/diskstats";
const PROC_STAT: &str = "/proc/stat";
const SYS_BLOCK: &str = "/sys/block";
const UDEV_DATA: &str = "/run/udev/data";

/// The kernel's `USER_HZ`: `/proc/stat` counts in hundredths of a second.
const USER_HZ: f64 = 100.0;

const fn counter(name: &'static str, help: &'static str) -> Family {
    Family {
        name,
        kind: Kind::Counter,
        help,
    }
}

/// The statistics of a `/proc/diskstats` line in the kernel's order, each
/// with its family and the factor to base units; node_exporter exports the
/// first `n` where the line has `n` statistics.
const DISK_FAMILIES: [Family; 17] = [
    counter(
        "node_disk_reads_completed_total",
        "The total number of reads completed successfully.",
    ),
    counter(
        "node_disk_reads_merged_total",
        "The total number of reads merged.",
    ),
    counter(
        "node_disk_read_bytes_total",
        "The total number of bytes read successfully.",
    ),
    counter(
        "node_disk_read_time_seconds_total",
        "The total number of seconds spent by all reads.",
    ),
    counter(
        "node_disk_writes_completed_total",
        "The total number of writes completed successfully.",
    ),
    counter(
        "node_disk_writes_merged_total",
        "The number of writes merged.",
    ),
    counter(
        "node_disk_written_bytes_total",
        "The total number of bytes written successfully.",
    ),
    counter(
        "node_disk_write_time_seconds_total",
        "This is the total number of seconds spent by all writes.",
    ),
    Family {
        name: "node_disk_io_now",
        kind: Kind::Gauge,
        help: "The number of I/Os currently in progress.",
    },
    counter(
        "node_disk_io_time_seconds_total",
        "Total seconds spent doing I/Os.",
    ),
    counter(
        "node_disk_io_time_weighted_seconds_total",
        "The weighted # of seconds spent doing I/Os.",
    ),
    counter(
        "node_disk_discards_completed_total",
        "The total number of discards completed successfully.",
    ),
    counter(
        "node_disk_discards_merged_total",
        "The total number of discards merged.",
    ),
    counter(
        "node_disk_discarded_sectors_total",
        "The total number of sectors discarded successfully.",
    ),
    counter(
        "node_disk_discard_time_seconds_total",
        "This is the total number of seconds spent by all discards.",
    ),
    counter(
        "node_disk_flush_requests_total",
        "The total number of flush requests completed successfully",
    ),
    counter(
        "node_disk_flush_requests_time_seconds_total",
        "This is the total number of seconds spent by all flush requests.",
    ),
];

const DISK_INFO: Family = Family {
    name: "node_disk_info",
    kind: Kind::Gauge,
    help: "Info of /sys/block/<block_device>.",
};

const UNAME_INFO: Family = Family {
    name: "node_uname_info",
    kind: Kind::Gauge,
    help: "Labeled system information as provided by the uname system call.",
};

const CPU_SECONDS: Family = counter(
    "node_cpu_seconds_total",
    "Seconds the CPUs spent in each mode.",
);

const CPU_GUEST: Family = counter(
    "node_cpu_guest_seconds_total",
    "Seconds the CPUs spent in guests (VMs) for each mode.",
);

/// `/proc/diskstats` statistics in base units: sectors of 512 bytes to
/// bytes, milliseconds to seconds; discarded sectors stay sectors, as
/// node_exporter exports them.
fn disk_values(c: &DiskCounters) -> [f64; 17] {
    let s = |ms: u32| f64::from(ms) / 1000.0;
    let b = |sectors: u64| sectors as f64 * 512.0;
    [
        c.rd_ios as f64,
        c.rd_merges as f64,
        b(c.rd_sectors),
        s(c.rd_ticks),
        c.wr_ios as f64,
        c.wr_merges as f64,
        b(c.wr_sectors),
        s(c.wr_ticks),
        f64::from(c.ios_pgr),
        s(c.tot_ticks),
        s(c.rq_ticks),
        c.dc_ios as f64,
        c.dc_merges as f64,
        c.dc_sectors as f64,
        s(c.dc_ticks),
        c.fl_ios as f64,
        s(c.fl_ticks),
    ]
}

/// Which devices are exported.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Select {
    /// Every line (`-p ALL`).
    Every,
    /// The lines node_exporter exports by default, and with `ALL` every
    /// whole device `/sys/block` lists too.
    Whole {
        /// Whether `ALL` was given.
        all: bool,
    },
    /// The devices named, each with its partitions (`-p DEV`) or alone.
    Named(Vec<(String, bool)>),
}

/// One device read from `/proc/diskstats`.
struct Disk {
    name: String,
    major: u32,
    minor: u32,
    stats: usize,
    values: [f64; 17],
}

/// How far a CPU's idle seconds may go back before the CPU is taken as
/// new (offline and back, a hotplug), as node_exporter's `jumpBackSeconds`.
const JUMP_BACK_SECONDS: f64 = 3.0;

/// The ten `/proc/stat` times of a CPU, in seconds and the file's order
/// (user, nice, system, idle, iowait, irq, softirq, steal, guest, guest_nice).
type CpuSeconds = [f64; 10];

/// What a CPU's counters are exposed as, given what was exposed last:
/// node_exporter's cache. No time goes back (a kernel's iowait can, and
/// `rate()` would read the drop as a reset), unless idle went back by
/// [`JUMP_BACK_SECONDS`] or more, which starts the CPU afresh.
fn monotonic(last: Option<&CpuSeconds>, now: CpuSeconds) -> CpuSeconds {
    match last {
        Some(last) if last[3] - now[3] < JUMP_BACK_SECONDS => {
            std::array::from_fn(|i| last[i].max(now[i]))
        }
        _ => now,
    }
}

/// Builds the exposition of the reports `opts` selects.
pub struct Exporter {
    select: Select,
    cpu: bool,
    disks: bool,
    latency: Option<LatencyExposition>,
    /// Whether `node_uname_info` is exported (see [`Exporter::with_uname`]).
    uname: bool,
    /// Each CPU's seconds as last exposed (see [`monotonic`]).
    cpu_seconds: Vec<(String, CpuSeconds)>,
    buf: Vec<u8>,
}

impl Exporter {
    /// The exporter for `opts` (`-c`, `-d`, the device list, `-p`).
    pub fn new(opts: &Options) -> Exporter {
        let named: Vec<(String, bool)> = opts
            .list
            .iter()
            .filter_map(|arg| match arg {
                ListArg::Device { name, kind, .. } => {
                    Some((name.clone(), *kind == DeviceKind::WithPartitions))
                }
                _ => None,
            })
            .collect();
        let select = if !named.is_empty() {
            Select::Named(named)
        } else if opts.everything {
            Select::Every
        } else {
            Select::Whole {
                all: opts.unfiltered,
            }
        };
        Exporter {
            select,
            cpu: opts.show_cpu,
            disks: opts.show_disk,
            latency: None,
            uname: false,
            cpu_seconds: Vec::new(),
            buf: Vec::with_capacity(4096),
        }
    }

    /// Adds the `--latency` histograms of the exported devices.
    pub fn with_latency(mut self, latency: LatencyExposition) -> Exporter {
        self.latency = Some(latency);
        self
    }

    /// Adds `node_uname_info`, as node_exporter's uname collector exports
    /// it (without `domainname`): dashboards made for node_exporter list
    /// their jobs and instances from it. Not for `--textfile`, whose series
    /// node_exporter exports beside its own uname collector's.
    pub fn with_uname(mut self) -> Exporter {
        self.uname = true;
        self
    }

    /// Reads the counters now and appends their families to `e`.
    pub fn collect(&mut self, src: &dyn Source, e: &mut Exposition) -> Result<(), IostatError> {
        if self.uname
            && let Ok(u) = src.uname()
        {
            e.family(&UNAME_INFO);
            let labels = [
                ("machine", u.machine.as_str()),
                ("nodename", &u.nodename),
                ("release", &u.release),
                ("sysname", &u.sysname),
                ("version", &u.version),
            ];
            e.sample(&labels, 1.0);
        }
        if self.cpu {
            self.collect_cpu(src, e)?;
        }
        if self.disks {
            self.collect_disks(src, e)?;
        }
        Ok(())
    }

    fn collect_cpu(&mut self, src: &dyn Source, e: &mut Exposition) -> Result<(), IostatError> {
        src.read_into(PROC_STAT, &mut self.buf)
            .map_err(|err| IostatError::CannotOpenStat(strerror(&err)))?;
        let cpus: Vec<(String, CpuSeconds)> = per_cpu_ticks(&self.buf)
            .into_iter()
            .map(|(cpu, ticks)| {
                let last = self.cpu_seconds.iter().find(|(c, _)| *c == cpu);
                let now = ticks.map(|t| t as f64 / USER_HZ);
                let shown = monotonic(last.map(|(_, s)| s), now);
                (cpu, shown)
            })
            .collect();
        e.family(&CPU_SECONDS);
        for (cpu, t) in &cpus {
            for (mode, i) in [
                ("idle", 3),
                ("iowait", 4),
                ("irq", 5),
                ("nice", 1),
                ("softirq", 6),
                ("steal", 7),
                ("system", 2),
                ("user", 0),
            ] {
                e.sample(&[("cpu", cpu), ("mode", mode)], t[i]);
            }
        }
        e.family(&CPU_GUEST);
        for (cpu, t) in &cpus {
            e.sample(&[("cpu", cpu), ("mode", "nice")], t[9]);
            e.sample(&[("cpu", cpu), ("mode", "user")], t[8]);
        }
        self.cpu_seconds = cpus;
        Ok(())
    }

    fn collect_disks(&mut self, src: &dyn Source, e: &mut Exposition) -> Result<(), IostatError> {
        let whole: Option<HashSet<String>> = match self.select {
            Select::Whole { all: true } => Some(
                src.list_dir(SYS_BLOCK)
                    .map_err(|err| IostatError::Source(format!("{SYS_BLOCK}: {err}")))?
                    .into_iter()
                    .map(|n| n.replace('!', "/"))
                    .collect(),
            ),
            _ => None,
        };
        let mut disks = Vec::new();
        // A name the file repeats (no kernel does) is one device, as in the
        // reports: its second series would make the exposition invalid.
        let mut seen = HashSet::new();
        src.for_each_line(PROC_DISKSTATS, &mut self.buf, &mut |line| {
            let Some(parsed) = parse_diskstats_line(line) else {
                return;
            };
            if parsed.format != StatFormat::Extended {
                return;
            }
            let chosen = match (&self.select, &whole) {
                (Select::Every, _) => true,
                (Select::Named(names), _) => names.iter().any(|(n, parts)| {
                    parsed.name == **n || (*parts && is_partition_of(&parsed.name, n))
                }),
                (Select::Whole { .. }, whole) => {
                    !node_exporter_leaves_out(&parsed.name)
                        || whole
                            .as_ref()
                            .is_some_and(|set| set.contains(parsed.name.as_ref()))
                }
            };
            if chosen && seen.insert(parsed.name.to_string()) {
                let fields = line
                    .split(u8::is_ascii_whitespace)
                    .filter(|f| !f.is_empty())
                    .count();
                disks.push(Disk {
                    name: parsed.name.to_string(),
                    major: parsed.major,
                    minor: parsed.minor,
                    stats: fields.saturating_sub(3),
                    values: disk_values(&parsed.counters),
                });
            }
        })
        .map_err(|err| IostatError::Read {
            path: PROC_DISKSTATS.into(),
            err,
        })?;
        write_disk_info(src, &disks, e)?;
        for (i, family) in DISK_FAMILIES.iter().enumerate() {
            if !disks.iter().any(|d| i < d.stats) {
                continue;
            }
            e.family(family);
            for d in disks.iter().filter(|d| i < d.stats) {
                e.sample(&[("device", &d.name)], d.values[i]);
            }
        }
        if let Some(latency) = &mut self.latency {
            let devices: Vec<(&str, (u32, u32))> = disks
                .iter()
                .map(|d| (d.name.as_str(), (d.major, d.minor)))
                .collect();
            latency
                .collect(src, &devices, e)
                .map_err(IostatError::Latency)?;
        }
        Ok(())
    }
}

/// Whether node_exporter 1.5.0's diskstats collector leaves `name` out by
/// default: whether it matches its `--collector.diskstats.device-exclude`
/// default, `^(ram|loop|fd|(h|s|v|xv)d[a-z]|nvme\d+n\d+p)\d+$` (RAM
/// disks, loop devices, floppies, and partitions by their names).
fn node_exporter_leaves_out(name: &str) -> bool {
    /// `text` is one or more ASCII digits.
    fn number(text: &str) -> bool {
        !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
    }
    /// `text` without its leading digits, if it has one or more.
    fn after_number(text: &str) -> Option<&str> {
        let rest = text.trim_start_matches(|c: char| c.is_ascii_digit());
        (rest.len() < text.len()).then_some(rest)
    }
    if let Some(rest) = ["ram", "loop", "fd"]
        .iter()
        .find_map(|p| name.strip_prefix(p))
    {
        return number(rest);
    }
    if let Some(rest) = ["hd", "sd", "vd", "xvd"]
        .iter()
        .find_map(|p| name.strip_prefix(p))
    {
        let mut chars = rest.chars();
        return chars.next().is_some_and(|c| c.is_ascii_lowercase()) && number(chars.as_str());
    }
    name.strip_prefix("nvme")
        .and_then(after_number)
        .and_then(|rest| rest.strip_prefix('n'))
        .and_then(after_number)
        .and_then(|rest| rest.strip_prefix('p'))
        .is_some_and(number)
}

/// Whether `name` is a partition of `disk` (`sda1` of `sda`, `nvme0n1p1`
/// of `nvme0n1`), by the kernel's naming rule.
fn is_partition_of(name: &str, disk: &str) -> bool {
    let Some(rest) = name.strip_prefix(disk) else {
        return false;
    };
    let digits = if disk.ends_with(|c: char| c.is_ascii_digit()) {
        rest.strip_prefix('p').unwrap_or("")
    } else {
        rest
    };
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// `node_disk_info`: one series per device with node_exporter's labels, the
/// udev properties taken from `/run/udev/data/b<major>:<minor>` when there
/// is one (empty, so absent, otherwise). A file that could not be read for
/// want of a descriptor fails the exposition instead: its labels say
/// nothing of the device, and a series that lost them would be a new one.
fn write_disk_info(
    src: &dyn Source,
    disks: &[Disk],
    e: &mut Exposition,
) -> Result<(), IostatError> {
    if disks.is_empty() {
        return Ok(());
    }
    let starved = |path: String, err| IostatError::Source(out_of_descriptors(&path, &err));
    let present: HashSet<String> = match src.list_dir(UDEV_DATA) {
        Ok(names) => names.into_iter().collect(),
        Err(err) if is_out_of_descriptors(&err) => return Err(starved(UDEV_DATA.into(), err)),
        Err(_) => HashSet::new(),
    };
    e.family(&DISK_INFO);
    let mut buf = Vec::new();
    for d in disks {
        let file = format!("b{}:{}", d.major, d.minor);
        let props = if present.contains(&file) {
            let path = format!("{UDEV_DATA}/{file}");
            match src.read_into(&path, &mut buf) {
                Ok(()) => UdevProps::parse(&buf),
                Err(err) if is_out_of_descriptors(&err) => return Err(starved(path, err)),
                Err(_) => UdevProps::default(),
            }
        } else {
            UdevProps::default()
        };
        let (major, minor) = (d.major.to_string(), d.minor.to_string());
        let mut labels = vec![
            ("device", d.name.as_str()),
            ("major", &major),
            ("minor", &minor),
        ];
        labels.extend(props.labels());
        e.sample(&labels, 1.0);
    }
    Ok(())
}

/// The udev properties node_disk_info carries.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct UdevProps {
    /// `ID_PATH`.
    pub path: String,
    /// `ID_WWN`.
    pub wwn: String,
    /// `ID_MODEL`.
    pub model: String,
    /// `ID_SERIAL_SHORT`.
    pub serial: String,
    /// `ID_REVISION`.
    pub revision: String,
}

impl UdevProps {
    /// The properties as node_disk_info's labels.
    pub fn labels(&self) -> [(&'static str, &str); 5] {
        [
            ("path", &self.path),
            ("wwn", &self.wwn),
            ("model", &self.model),
            ("serial", &self.serial),
            ("revision", &self.revision),
        ]
    }

    /// Reads the `E:NAME=VALUE` lines of a udev database file.
    pub fn parse(text: &[u8]) -> UdevProps {
        let mut p = UdevProps::default();
        // Bytes that are not UTF-8 kept as every name keeps them, shown
        // `\xNN` in the exposition (lossily, all were one U+FFFD).
        for line in crate::common::osname::from_bytes(text).lines() {
            let Some((key, value)) = line.strip_prefix("E:").and_then(|l| l.split_once('=')) else {
                continue;
            };
            let slot = match key {
                "ID_PATH" => &mut p.path,
                "ID_WWN" => &mut p.wwn,
                "ID_MODEL" => &mut p.model,
                "ID_SERIAL_SHORT" => &mut p.serial,
                "ID_REVISION" => &mut p.revision,
                _ => continue,
            };
            *slot = value.to_string();
        }
        p
    }
}

/// The `cpuN` lines of `/proc/stat`: the CPU number as text and its ten
/// tick counters (missing ones 0), in the file's order.
pub fn per_cpu_ticks(text: &[u8]) -> Vec<(String, [u64; 10])> {
    let mut cpus = Vec::new();
    for line in text.split(|&b| b == b'\n') {
        let Some(rest) = line.strip_prefix(b"cpu") else {
            continue;
        };
        let Ok(rest) = std::str::from_utf8(rest) else {
            continue;
        };
        let mut words = rest.split_ascii_whitespace();
        let Some(number) = words.next().filter(|n| n.parse::<u32>().is_ok()) else {
            continue;
        };
        if !rest.starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        // The kernel lists each CPU once, in ascending order: a repeated
        // one (a garbled file) is left out, as its series would repeat.
        let cpu: u32 = number.parse().unwrap_or(0);
        let repeated = cpus.last().is_some_and(|(last, _)| cpu <= *last)
            && cpus.iter().any(|(seen, _)| *seen == cpu);
        if repeated {
            continue;
        }
        let mut ticks = [0u64; 10];
        for (slot, word) in ticks.iter_mut().zip(words) {
            *slot = word.parse().unwrap_or(0);
        }
        cpus.push((cpu, ticks));
    }
    cpus.into_iter()
        .map(|(cpu, ticks)| (cpu.to_string(), ticks))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_seconds_never_go_back_unless_idle_went_back_three_seconds() {
        let at = |idle: f64, iowait: f64| {
            let mut s = [0.0; 10];
            s[0] = 1.0;
            s[3] = idle;
            s[4] = iowait;
            s
        };
        // The first reading is shown as it is.
        assert_eq!(monotonic(None, at(10.0, 0.3)), at(10.0, 0.3));
        // iowait 0.3 then 0.15 (the fixture's recording): 0.3 stays.
        assert_eq!(
            monotonic(Some(&at(10.0, 0.3)), at(12.0, 0.15)),
            at(12.0, 0.3)
        );
        // Idle back by less than 3 s: kept as well.
        assert_eq!(monotonic(Some(&at(10.0, 0.3)), at(7.5, 0.4)), at(10.0, 0.4));
        // Idle back by 3 s or more: a hotplugged CPU, shown afresh.
        assert_eq!(monotonic(Some(&at(10.0, 0.3)), at(7.0, 0.1)), at(7.0, 0.1));
    }

    #[test]
    fn devices_node_exporter_leaves_out_by_default() {
        for name in [
            "ram0",
            "loop7",
            "loop12",
            "fd0",
            "sda1",
            "hdb12",
            "vda3",
            "xvdf1",
            "nvme0n1p1",
            "nvme10n2p13",
        ] {
            assert!(node_exporter_leaves_out(name), "{name}");
        }
        for name in [
            "sda",
            "vda",
            "xvdf",
            "nvme0n1",
            "zram0",
            "dm-0",
            "md0",
            "sr0",
            "loop",
            "ram",
            "loopa",
            "sdaa1",
            "sdA1",
            "nvme0n1p",
            "nvmen1p1",
            "mmcblk0p1",
            "vd1",
        ] {
            assert!(!node_exporter_leaves_out(name), "{name}");
        }
    }

    #[test]
    fn partitions_by_the_kernel_naming_rule() {
        assert!(is_partition_of("sda1", "sda"));
        assert!(is_partition_of("nvme0n1p2", "nvme0n1"));
        assert!(!is_partition_of("nvme0n12", "nvme0n1"));
        assert!(!is_partition_of("sdab", "sda"));
        assert!(!is_partition_of("sda", "sda"));
    }

    #[test]
    fn per_cpu_lines_only() {
        let text = b"cpu  1 2 3 4 5 6 7 8 9 10\ncpu0 10 20 30\ncpu12 1 1 1 1 1 1 1 1 1 1\ncpux 1\nintr 5\n";
        let cpus = per_cpu_ticks(text);
        assert_eq!(
            cpus,
            vec![
                ("0".to_string(), [10, 20, 30, 0, 0, 0, 0, 0, 0, 0]),
                ("12".to_string(), [1; 10]),
            ]
        );
    }

    #[test]
    fn udev_properties() {
        let p = UdevProps::parse(
            b"S:disk/by-id/x\nE:ID_MODEL=QEMU_HARDDISK\nE:ID_SERIAL_SHORT=QM0001\nE:ID_PATH=pci-0000:00:01.1-ata-1\nE:OTHER=x\nE:ID_REVISION=2.5+\nE:ID_WWN=0x5000\n",
        );
        assert_eq!(
            p,
            UdevProps {
                path: "pci-0000:00:01.1-ata-1".into(),
                wwn: "0x5000".into(),
                model: "QEMU_HARDDISK".into(),
                serial: "QM0001".into(),
                revision: "2.5+".into(),
            }
        );
        // Bytes that are not UTF-8 kept, each its own (lossily, \xff and
        // \xfe were one U+FFFD).
        let model = |bytes: &[u8]| {
            let text = [b"E:ID_MODEL=M".as_slice(), bytes, b"\n"].concat();
            crate::common::osname::to_bytes(&UdevProps::parse(&text).model).into_owned()
        };
        assert_eq!(model(b"\xff"), b"M\xff");
        assert_eq!(model(b"\xfe"), b"M\xfe");
    }
}
