//! The device list: discovery, command-line selection, sysstat's ordering,
//! groups, persistent (`-j`) and device-mapper (`-N`) names, and reading each
//! sample's counters.
//!
//! Read path: in the default and `ALL` modes the device *set* comes from the
//! listing of `/sys/block` (as sysstat does), but the *counters* of every
//! device come from one read of `/proc/diskstats`, kept open between samples;
//! the per-device sysfs `stat` file is read only for devices that
//! `/proc/diskstats` does not list. In steady state a sample allocates no
//! memory per device and makes no per-device system call.

use std::collections::HashMap;

use crate::common::source::Source;

use super::cli::{AltMode, DeviceKind, ListArg, MAX_NAME_LEN, Options};
use super::model::looks_readded;
use super::parse::{DiskCounters, StatFormat, diskstats_lines, parse_sysfs_stat};

const PROC_DISKSTATS: &str = "/proc/diskstats";
const SYS_BLOCK: &str = "/sys/block";
const SYS_DEV_BLOCK: &str = "/sys/dev/block";

/// What a list entry stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EntryKind {
    /// A device found by discovery or named on the command line.
    Device(DeviceKind),
    /// A `-g` group.
    Group,
}

/// One device or group and its two alternating sample slots.
#[derive(Debug, Clone)]
struct Entry {
    /// Stored name (`!` for `/`; groups start with a space).
    name: String,
    /// What is shown.
    display: String,
    kind: EntryKind,
    from_cmdline: bool,
    exists: bool,
    devnum: Option<(u32, u32)>,
    slots: [DiskCounters; 2],
    /// For groups: members summed in the current sample.
    members: u32,
}

/// A `/proc/diskstats` line remembered from the latest read.
#[derive(Debug, Clone, Copy)]
struct Cached {
    generation: u64,
    devnum: (u32, u32),
    counters: DiskCounters,
    format: StatFormat,
}

/// One row to display.
#[derive(Debug, Clone, Copy)]
pub struct DeviceRow<'a> {
    /// The name to display (persistent, mapper or kernel name; `/` restored).
    pub name: &'a str,
    /// The current sample's counters.
    pub cur: &'a DiskCounters,
    /// The previous sample's counters (zeros on the first report).
    pub prev: &'a DiskCounters,
    /// 1 for a device, the number of members summed for a group.
    pub devices: u32,
    /// True for a group row.
    pub is_group: bool,
}

/// The selection rules that apply while reading and displaying.
#[derive(Debug, Clone)]
struct Rules {
    everything: bool,
    all_devices: bool,
    unfiltered: bool,
    extended: bool,
    sorted: bool,
    omit_inactive: bool,
    groups_only: bool,
    alt: Option<(String, AltMode)>,
    persistent: Option<String>,
    mapper: bool,
}

/// The devices of a run and their counters.
pub struct DeviceList {
    entries: Vec<Entry>,
    order: Vec<usize>,
    index: HashMap<String, usize>,
    tail_group: bool,
    rules: Rules,
    cache: HashMap<Box<str>, Cached>,
    generation: u64,
    buf: Vec<u8>,
    dm_major: Option<u32>,
    persistent_names: Option<HashMap<String, String>>,
}

/// sysstat's `device_name()`: the real path of a name given as a path, with
/// `/dev/` stripped and `/` turned into `!`.
fn canonical_name(src: &dyn Source, raw: &str) -> String {
    let real = if raw.starts_with('/') {
        src.canonicalize(raw).unwrap_or_else(|_| raw.to_string())
    } else {
        raw.to_string()
    };
    let short = real.strip_prefix("/dev/").unwrap_or(&real);
    short.replace('/', "!")
}

fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn truncate_name(mut name: String) -> String {
    if name.len() > MAX_NAME_LEN - 1 {
        let mut cut = MAX_NAME_LEN - 1;
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        name.truncate(cut);
    }
    name
}

impl DeviceList {
    /// Builds the list from the command line: named devices and groups, in
    /// sysstat's order. Reads `/proc/devices` when `-N` is given.
    pub fn new(opts: &Options, src: &dyn Source) -> DeviceList {
        let rules = Rules {
            everything: opts.everything,
            all_devices: opts.all_devices,
            unfiltered: opts.unfiltered,
            extended: opts.extended,
            sorted: !opts.groups_defined && !opts.everything,
            omit_inactive: opts.omit_inactive,
            groups_only: opts.groups_only,
            alt: opts.alt_dir.as_ref().map(|a| (a.path.clone(), a.mode)),
            persistent: opts.persistent.clone(),
            mapper: opts.mapper_names,
        };
        let dm_major = if opts.mapper_names {
            src.read("/proc/devices").ok().and_then(|text| {
                String::from_utf8_lossy(&text)
                    .lines()
                    .find(|l| l.contains("device-mapper"))
                    .and_then(|l| l.split_whitespace().next()?.parse().ok())
            })
        } else {
            None
        };
        let mut list = DeviceList {
            entries: Vec::new(),
            order: Vec::new(),
            index: HashMap::new(),
            tail_group: false,
            rules,
            cache: HashMap::new(),
            generation: 0,
            buf: Vec::with_capacity(64 * 1024),
            dm_major,
            persistent_names: None,
        };
        let mut pending_group: Option<&str> = None;
        for arg in &opts.list {
            match arg {
                ListArg::Group(name) => {
                    if let Some(prev) = pending_group.replace(name) {
                        list.push_group(prev);
                    }
                }
                ListArg::Device {
                    name,
                    kind,
                    persistent,
                    mapper,
                } => {
                    let mut stored = canonical_name(src, name);
                    if *mapper && let Ok(target) = src.read_link(&format!("/dev/mapper/{stored}")) {
                        stored = basename(&target).to_string();
                    }
                    if let Some(kind_dir) = persistent
                        && let Ok(target) =
                            src.read_link(&format!("/dev/disk/by-{kind_dir}/{stored}"))
                    {
                        stored = basename(&target).to_string();
                    }
                    let stored = truncate_name(stored);
                    let devnum = src
                        .device_number(&format!("/dev/{}", stored.replace('!', "/")))
                        .ok();
                    let idx = list.add(src, &stored, devnum, *kind);
                    list.entries[idx].from_cmdline = true;
                }
            }
        }
        if let Some(last) = pending_group {
            list.push_group(last);
            list.tail_group = true;
        }
        list
    }

    fn push_group(&mut self, name: &str) {
        self.entries.push(Entry {
            name: name.to_string(),
            display: name.to_string(),
            kind: EntryKind::Group,
            from_cmdline: true,
            exists: true,
            devnum: None,
            slots: [DiskCounters::default(); 2],
            members: 0,
        });
        self.order.push(self.entries.len() - 1);
    }

    /// sysstat's `add_list_device`: finds `name` or inserts it (sorted by
    /// `strcmp` unless `-g` or `-p ALL`; otherwise appended before the last
    /// group). Marks it present in this sample.
    fn add(
        &mut self,
        src: &dyn Source,
        name: &str,
        devnum: Option<(u32, u32)>,
        kind: DeviceKind,
    ) -> usize {
        if let Some(&idx) = self.index.get(name) {
            let e = &mut self.entries[idx];
            if kind == DeviceKind::WithPartitions {
                e.kind = EntryKind::Device(kind);
            }
            if e.devnum.is_none() {
                e.devnum = devnum;
            }
            e.exists = true;
            return idx;
        }
        let display = self.display_name(src, name, devnum);
        let idx = self.entries.len();
        self.entries.push(Entry {
            name: name.to_string(),
            display,
            kind: EntryKind::Device(kind),
            from_cmdline: false,
            exists: true,
            devnum,
            slots: [DiskCounters::default(); 2],
            members: 0,
        });
        self.index.insert(name.to_string(), idx);
        if self.rules.sorted {
            let entries = &self.entries;
            let pos = self
                .order
                .partition_point(|&j| entries[j].name.as_str() < name);
            self.order.insert(pos, idx);
        } else if self.tail_group {
            let at = self.order.len() - 1;
            self.order.insert(at, idx);
        } else {
            self.order.push(idx);
        }
        idx
    }

    /// The name shown for a device: its persistent name (`-j`), its
    /// device-mapper name (`-N`), or its kernel name, with `!` back to `/`.
    fn display_name(&mut self, src: &dyn Source, name: &str, devnum: Option<(u32, u32)>) -> String {
        if let Some(kind) = self.rules.persistent.clone() {
            let found = self.persistent_name(src, &kind, name);
            if let Some(p) = found {
                return p;
            }
        } else if self.rules.mapper
            && let (Some(dm), Some((major, minor))) = (self.dm_major, devnum)
            && major == dm
            && let Some(mapped) = mapper_name(src, major, minor)
        {
            return mapped;
        }
        name.replace('!', "/")
    }

    fn persistent_name(&mut self, src: &dyn Source, kind: &str, name: &str) -> Option<String> {
        let map = self.persistent_names.get_or_insert_with(|| {
            let dir = format!("/dev/disk/by-{kind}");
            let mut links = src.list_dir(&dir).unwrap_or_default();
            links.sort();
            let mut map = HashMap::new();
            for link in links {
                if let Ok(target) = src.read_link(&format!("{dir}/{link}")) {
                    map.entry(basename(&target).to_string()).or_insert(link);
                }
            }
            map
        });
        map.get(name).cloned()
    }

    /// Reads one sample's counters into slot `curr`.
    pub fn read_sample(&mut self, src: &dyn Source, curr: usize) {
        self.generation += 1;
        for e in &mut self.entries {
            if e.kind != EntryKind::Group {
                e.exists = false;
            }
        }
        let alt = self.rules.alt.clone();
        let sys_and_alt = |sys: &str, alt_sub: &str| -> Vec<String> {
            match &alt {
                None => vec![sys.to_string()],
                Some((dir, AltMode::Only)) => vec![format!("{dir}/{alt_sub}")],
                Some((dir, AltMode::Also)) => vec![sys.to_string(), format!("{dir}/{alt_sub}")],
            }
        };
        if self.rules.everything {
            for file in sys_and_alt(PROC_DISKSTATS, "diskstats") {
                self.read_diskstats_file(src, &file, curr);
            }
        } else if self.rules.all_devices {
            for dir in sys_and_alt(SYS_BLOCK, "block") {
                self.read_block_dir(src, &dir, curr);
            }
        }
        let pending: Vec<usize> = self
            .order
            .iter()
            .copied()
            .filter(|&i| {
                let e = &self.entries[i];
                e.from_cmdline && !e.exists && e.kind != EntryKind::Group
            })
            .collect();
        if !pending.is_empty() {
            let dirs: Vec<(String, String)> = match &alt {
                None => vec![(SYS_BLOCK.into(), SYS_DEV_BLOCK.into())],
                Some((dir, AltMode::Only)) => {
                    vec![(format!("{dir}/block"), format!("{dir}/dev/block"))]
                }
                Some((dir, AltMode::Also)) => vec![
                    (SYS_BLOCK.into(), SYS_DEV_BLOCK.into()),
                    (format!("{dir}/block"), format!("{dir}/dev/block")),
                ],
            };
            for idx in pending {
                self.read_listed(src, idx, &dirs, curr);
            }
        }
        let prev = curr ^ 1;
        for e in &mut self.entries {
            if e.exists
                && e.kind != EntryKind::Group
                && looks_readded(&e.slots[prev], &e.slots[curr])
            {
                e.slots[prev] = DiskCounters::default();
            }
        }
    }

    fn save(&mut self, idx: usize, curr: usize, counters: DiskCounters) {
        let e = &mut self.entries[idx];
        e.slots[curr] = counters;
        e.exists = true;
    }

    fn read_diskstats_file(&mut self, src: &dyn Source, path: &str, curr: usize) {
        let mut buf = std::mem::take(&mut self.buf);
        if src.read_into(path, &mut buf).is_ok() {
            for line in diskstats_lines(&buf) {
                if line.format == StatFormat::OldPartition && self.rules.extended {
                    continue;
                }
                let idx = self.add(
                    src,
                    line.name,
                    Some((line.major, line.minor)),
                    DeviceKind::Single,
                );
                self.save(idx, curr, line.counters);
            }
        }
        self.buf = buf;
    }

    /// Refreshes the cache of `/proc/diskstats` lines (once per sample).
    fn refresh_cache(&mut self, src: &dyn Source) {
        let mut buf = std::mem::take(&mut self.buf);
        if src.read_into(PROC_DISKSTATS, &mut buf).is_ok() {
            for line in diskstats_lines(&buf) {
                let fresh = Cached {
                    generation: self.generation,
                    devnum: (line.major, line.minor),
                    counters: line.counters,
                    format: line.format,
                };
                match self.cache.get_mut(line.name) {
                    Some(slot) => *slot = fresh,
                    None => {
                        self.cache.insert(line.name.into(), fresh);
                    }
                }
            }
        }
        self.buf = buf;
    }

    fn read_block_dir(&mut self, src: &dyn Source, dir: &str, curr: usize) {
        let Ok(names) = src.list_dir(dir) else {
            return;
        };
        let use_cache = dir == SYS_BLOCK;
        if use_cache {
            self.refresh_cache(src);
        }
        for name in &names {
            let cached = if use_cache {
                self.cache
                    .get(name.as_str())
                    .filter(|c| c.generation == self.generation)
                    .copied()
            } else {
                None
            };
            let (counters, format, devnum) = match cached {
                Some(c) => (c.counters, c.format, Some(c.devnum)),
                None => match self.read_stat_file(src, &format!("{dir}/{name}/stat")) {
                    Some((c, f)) => (c, f, None),
                    None => continue,
                },
            };
            if format == StatFormat::OldPartition && self.rules.extended {
                continue;
            }
            let devnum = devnum.or_else(|| {
                self.rules
                    .mapper
                    .then(|| {
                        src.device_number(&format!("/dev/{}", name.replace('!', "/")))
                            .ok()
                    })
                    .flatten()
            });
            let idx = self.add(src, name, devnum, DeviceKind::Single);
            self.save(idx, curr, counters);
        }
    }

    fn read_stat_file(
        &mut self,
        src: &dyn Source,
        path: &str,
    ) -> Option<(DiskCounters, StatFormat)> {
        let mut buf = std::mem::take(&mut self.buf);
        let parsed = match src.read_into(path, &mut buf) {
            Ok(()) => parse_sysfs_stat(&buf),
            Err(_) => None,
        };
        self.buf = buf;
        parsed
    }

    /// Reads a device named on the command line: a whole device from
    /// `<block>/<name>/stat` (plus its partitions with `-p dev`), a partition
    /// from `<dev/block>/<major>:<minor>/stat`. With `+f`, the system first.
    fn read_listed(
        &mut self,
        src: &dyn Source,
        idx: usize,
        dirs: &[(String, String)],
        curr: usize,
    ) {
        let name = self.entries[idx].name.clone();
        let kind = self.entries[idx].kind;
        for (block, dev_block) in dirs {
            let dev_dir = format!("{block}/{name}");
            if src.is_dir(&dev_dir) {
                let found = match self.read_stat_file(src, &format!("{dev_dir}/stat")) {
                    Some((c, f)) if !(f == StatFormat::OldPartition && self.rules.extended) => {
                        self.save(idx, curr, c);
                        true
                    }
                    _ => false,
                };
                if kind == EntryKind::Device(DeviceKind::WithPartitions)
                    && let Ok(subs) = src.list_dir(&dev_dir)
                {
                    for sub in subs {
                        if let Some((c, f)) =
                            self.read_stat_file(src, &format!("{dev_dir}/{sub}/stat"))
                        {
                            if f == StatFormat::OldPartition && self.rules.extended {
                                continue;
                            }
                            let devnum = src
                                .device_number(&format!("/dev/{}", sub.replace('!', "/")))
                                .ok();
                            let p = self.add(src, &sub, devnum, DeviceKind::Single);
                            self.save(p, curr, c);
                        }
                    }
                }
                if found {
                    return;
                }
            } else if let Some((major, minor)) = self.entries[idx].devnum {
                let path = format!("{dev_block}/{major}:{minor}/stat");
                if let Some((c, f)) = self.read_stat_file(src, &path)
                    && !(f == StatFormat::OldPartition && self.rules.extended)
                {
                    self.save(idx, curr, c);
                    return;
                }
            }
        }
    }

    /// Sums group members into each group's slot `curr` (every sample,
    /// skipped ones included, as sysstat does).
    pub fn compute_groups(&mut self, curr: usize) {
        let mut acc = DiskCounters::default();
        let mut members = 0;
        for &idx in &self.order {
            let e = &mut self.entries[idx];
            match e.kind {
                EntryKind::Group => {
                    e.slots[curr] = acc;
                    e.members = members;
                    // A group whose members vanished looks "re-added" too.
                    if looks_readded(&e.slots[curr ^ 1], &acc) {
                        e.slots[curr ^ 1] = DiskCounters::default();
                    }
                    acc = DiskCounters::default();
                    members = 0;
                }
                EntryKind::Device(_) => {
                    if !e.exists || (!self.rules.unfiltered && e.slots[curr].all_ios() == 0) {
                        continue;
                    }
                    acc.accumulate(&e.slots[curr]);
                    members += 1;
                }
            }
        }
    }

    /// The rows to display for the sample in slot `curr`, in order, after
    /// sysstat's filters (absent, never used, `-z`, `-H`).
    pub fn rows(&self, curr: usize) -> impl Iterator<Item = DeviceRow<'_>> + '_ {
        let prev = curr ^ 1;
        self.order.iter().filter_map(move |&idx| {
            let e = &self.entries[idx];
            let (cur, old) = (&e.slots[curr], &e.slots[prev]);
            match e.kind {
                EntryKind::Group => Some(DeviceRow {
                    name: &e.display,
                    cur,
                    prev: old,
                    devices: e.members,
                    is_group: true,
                }),
                EntryKind::Device(_) => {
                    if !e.exists
                        || (!self.rules.unfiltered && cur.all_ios() == 0)
                        || self.rules.groups_only
                        || (self.rules.omit_inactive
                            && cur.rd_ios == old.rd_ios
                            && cur.wr_ios == old.wr_ios
                            && cur.dc_ios == old.dc_ios
                            && cur.fl_ios == old.fl_ios)
                    {
                        return None;
                    }
                    Some(DeviceRow {
                        name: &e.display,
                        cur,
                        prev: old,
                        devices: 1,
                        is_group: false,
                    })
                }
            }
        })
    }
}

/// The `/dev/mapper` entry whose device number is `major:minor`.
fn mapper_name(src: &dyn Source, major: u32, minor: u32) -> Option<String> {
    let names = src.list_dir("/dev/mapper").ok()?;
    names
        .into_iter()
        .filter(|n| !n.starts_with('.'))
        .find(|n| src.device_number(&format!("/dev/mapper/{n}")).ok() == Some((major, minor)))
}
