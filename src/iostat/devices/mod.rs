//! The device list: discovery, command-line selection, sysstat's ordering,
//! groups, persistent (`-j`) and device-mapper (`-N`) names (here); reading
//! each sample's counters (`read`); each group's sums and the rows a
//! report shows (`rows`).
//!
//! Read path: in the default and `ALL` modes the device *set* comes from the
//! listing of `/sys/block` (as sysstat does), but the *counters* of every
//! device come from one read of `/proc/diskstats`, kept open between samples;
//! the per-device sysfs `stat` file is read only for devices that
//! `/proc/diskstats` does not list. In steady state a sample makes no
//! per-device system call. Memory stays close to the device table itself:
//! the listing is walked as the directory is read and `/proc/diskstats` line
//! by line through a fixed-size piece (`Source::for_each_dir_entry`,
//! `Source::for_each_line`), so neither is ever held whole.

use crate::common::source::Source;

use super::cli::{AltMode, DeviceKind, ListArg, Options};
use super::heapsort;
use super::lookup::{NameIndex, NameMap, PositionHints};
use super::names::{
    PersistentNames, basename, canonical_name, kernel_name, mapper_name, persistent_dir,
    truncate_name,
};
use super::parse::DiskCounters;

mod read;
mod rows;

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

/// Where an entry's name is in [`DeviceList::names`].
#[derive(Debug, Clone, Copy)]
struct NameSpan {
    start: u32,
    len: u32,
}

impl NameSpan {
    /// The name in `names`.
    fn of(self, names: &str) -> &str {
        &names[self.start as usize..][..self.len as usize]
    }
}

/// One device or group; its counters are in [`Slots`].
#[derive(Debug, Clone)]
struct Entry {
    /// Stored name (`!` for `/`; groups start with a space).
    name: NameSpan,
    kind: EntryKind,
    from_cmdline: bool,
    exists: bool,
    devnum: Option<(u32, u32)>,
    /// For groups: sysstat's `%util` divisor, its members present in each
    /// sample, added up over every sample so far (sysstat never resets it).
    members: u32,
    /// The sample whose `/proc/diskstats` line was stored in the current slot.
    staged: u64,
    /// In the display order. An entry made for a `/sys/block` name is placed
    /// only once its counters are found (sysstat adds a device only then).
    placed: bool,
}

/// Every entry's counters in the two alternating sample slots, by entry
/// index. A slot holds counters only once a sample stored some: a
/// one-report run, which compares its sample with zeros, never holds the
/// second slot: 112 bytes a device, 1.1 MB of the 5 MB peak of a
/// 10,000-device report when each entry held both.
#[derive(Debug, Default)]
struct Slots {
    by_slot: [Vec<DiskCounters>; 2],
    zero: DiskCounters,
}

impl Slots {
    /// Entry `idx`'s counters in `slot`: zeros if none were stored.
    fn get(&self, slot: usize, idx: usize) -> &DiskCounters {
        self.by_slot[slot].get(idx).unwrap_or(&self.zero)
    }

    /// Entry `idx`'s counters in `slot`, to store into.
    fn get_mut(&mut self, slot: usize, idx: usize) -> &mut DiskCounters {
        let counters = &mut self.by_slot[slot];
        if counters.len() <= idx {
            counters.resize(idx + 1, DiskCounters::default());
        }
        &mut counters[idx]
    }

    /// Sets entry `idx`'s counters in `slot` back to zeros.
    fn clear(&mut self, slot: usize, idx: usize) {
        if let Some(counters) = self.by_slot[slot].get_mut(idx) {
            *counters = DiskCounters::default();
        }
    }
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
    /// 1 for a device; for a group, its members present in each sample,
    /// added up over every sample so far (sysstat's `%util` divisor).
    pub devices: u32,
    /// The device's (major, minor), when known (never for a group).
    pub devnum: Option<(u32, u32)>,
}

/// The selection rules that apply while reading and displaying.
#[derive(Debug, Clone)]
struct Rules {
    everything: bool,
    /// `-p ALL` while recording: each sample lists `/sys/block` (and `-f`
    /// or `+f`'s `block`) as well, with the `stat` files the views of every
    /// whole device read there, for nothing shown, so that the recording
    /// replays as those views (`-x`, `-d`, the default) too.
    list_for_replay: bool,
    all_devices: bool,
    unfiltered: bool,
    extended: bool,
    omit_inactive: bool,
    groups_only: bool,
    alt: Option<(String, AltMode)>,
    persistent: Option<String>,
    mapper: bool,
    /// `--latency`, whose histograms are matched to the devices by their
    /// numbers: without a node in `/dev`, those of sysfs's `dev` file
    /// ([`DeviceList::numbers_of`]). Other runs read no file more, so
    /// recordings made before that file was read still replay.
    numbers_from_sysfs: bool,
}

/// The devices of a run and their counters.
pub struct DeviceList {
    entries: Vec<Entry>,
    slots: Slots,
    order: Vec<usize>,
    /// Entries added during this sample, not yet placed in `order`.
    fresh: Vec<usize>,
    index: NameIndex,
    /// Every entry's name, one after another: no allocation per device
    /// (40 bytes a device less than an `Rc<str>` in each entry, 400 kB at
    /// 10,000 devices; BENCHMARKS.md, "Hot code first").
    names: String,
    /// What is shown for an entry, where it differs from its name (`-j`,
    /// `-N`, `/` restored): rare, so kept out of the entries.
    displays: NameMap<usize, Box<str>>,
    /// The name an entry not yet placed is placed by, where it is not its
    /// stored name: a device given by its device-mapper name under `-N`
    /// is stored as `dm-N`, but sysstat's `add_list_device` compares the
    /// name given.
    placed_by: NameMap<usize, Box<str>>,
    /// An entry was placed by a name other than its stored one: the list
    /// is no longer in `strcmp` order of the stored names.
    unsorted: bool,
    /// A group is in the list (see [`DeviceList::compute_groups`]).
    has_groups: bool,
    /// A group or `-p ALL` came before in the list: entries are appended
    /// from then on (after a group, they belong to the last one), no
    /// longer inserted in `strcmp` order.
    appending: bool,
    rules: Rules,
    /// The entries of the names a `/sys/block` listing gave, in its order
    /// (`u32`, as the name index keeps them).
    listed: Vec<u32>,
    line_hints: PositionHints,
    dir_hints: PositionHints,
    generation: u64,
    buf: Vec<u8>,
    dm_major: Option<u32>,
    persistent_names: PersistentNames,
}

impl DeviceList {
    /// Builds the list from the command line: named devices and groups, in
    /// sysstat's order. Reads `/proc/devices` when `-N` is given.
    pub fn new(opts: &Options, src: &dyn Source) -> DeviceList {
        let rules = Rules {
            everything: opts.everything,
            list_for_replay: opts.everything && opts.source.record.is_some(),
            all_devices: opts.all_devices,
            unfiltered: opts.unfiltered,
            extended: opts.extended,
            omit_inactive: opts.omit_inactive,
            groups_only: opts.groups_only,
            alt: opts.alt_dir.as_ref().map(|a| (a.path.clone(), a.mode)),
            persistent: opts.persistent.clone(),
            mapper: opts.mapper_names,
            numbers_from_sysfs: opts.latency,
        };
        let dm_major = if opts.mapper_names {
            device_mapper_major(src)
        } else {
            None
        };
        let mut list = DeviceList {
            entries: Vec::new(),
            slots: Slots::default(),
            order: Vec::new(),
            fresh: Vec::new(),
            index: NameIndex::default(),
            names: String::new(),
            displays: NameMap::default(),
            placed_by: NameMap::default(),
            unsorted: false,
            has_groups: false,
            appending: false,
            rules,
            listed: Vec::new(),
            line_hints: PositionHints::default(),
            dir_hints: PositionHints::default(),
            generation: 0,
            buf: Vec::with_capacity(4096),
            dm_major,
            persistent_names: PersistentNames::default(),
        };
        for arg in &opts.list {
            match arg {
                ListArg::Group(name) => list.add_group(name),
                ListArg::Everything => list.append_from_here(),
                ListArg::Device {
                    name,
                    kind,
                    persistent,
                    mapper,
                } => list.add_named(src, name, *kind, persistent.as_deref(), *mapper),
            }
        }
        list.place_fresh();
        list
    }

    /// Adds a device named on the command line, under the name its
    /// `/dev/mapper` or `/dev/disk/by-KIND` link leads to when asked.
    // Out of line: only runs that name devices take this path; inlined, it
    // would sit among the code every run executes (build.rs, "Hot code first").
    #[inline(never)]
    fn add_named(
        &mut self,
        src: &dyn Source,
        name: &str,
        kind: DeviceKind,
        persistent: Option<&str>,
        mapper: bool,
    ) {
        let mut stored = canonical_name(src, name);
        let mut given = None;
        if mapper && let Ok(target) = src.read_link(&format!("/dev/mapper/{stored}")) {
            given = Some(std::mem::replace(
                &mut stored,
                basename(&target).to_string(),
            ));
        }
        if let Some(kind_dir) = persistent
            && let Ok(target) = src.read_link(&format!("{}/{stored}", persistent_dir(kind_dir)))
        {
            stored = basename(&target).to_string();
        }
        let stored = truncate_name(stored);
        let listed = {
            let (entries, names) = (&self.entries, self.names.as_str());
            self.index
                .get(&stored, |i| entries[i].name.of(names))
                .is_some_and(|i| entries[i].placed)
        };
        let devnum = self.numbers_of(src, &stored);
        let idx = self.add(src, &stored, devnum, kind);
        self.entries[idx].from_cmdline = true;
        let Some(given) = given else {
            return;
        };
        if listed && !self.rules.everything {
            // sysstat looks the name given up among the stored (dm-N) names,
            // finds none, and lists the device once more: `-N dm-0 vg0-root`
            // and `-N vg0-root vg0-root` show it twice, with the same
            // statistics, and a group counts it twice. Not with `-p ALL`:
            // its reading of /proc/diskstats finds the first entry only, and
            // the second, never present, is not shown.
            self.place_fresh();
            self.fresh.push(idx);
            self.placed_by.insert(idx, given.into());
        } else if self.fresh.last() == Some(&idx) {
            // Placed just now (queued last): placed by the name given.
            self.placed_by.insert(idx, given.into());
        }
    }

    /// Places the entries added since the last call as `add_list_device`
    /// would have placed them one by one: in `strcmp` order until a group
    /// or `-p ALL` is in the list, else appended. While the
    /// list is sorted a merge does that; once an entry was placed by a name
    /// other than its stored one, they are inserted one by one.
    fn place_fresh(&mut self) {
        if self.fresh.is_empty() {
            return;
        }
        let mut fresh = std::mem::take(&mut self.fresh);
        self.unsorted |= !self.placed_by.is_empty();
        let (entries, names) = (&self.entries, self.names.as_str());
        let name = |idx: usize| entries[idx].name.of(names);
        if self.appending {
            self.order.extend_from_slice(&fresh);
        } else if self.unsorted {
            let placed_by = |idx: usize| self.placed_by.get(&idx).map_or(name(idx), |n| n);
            for &idx in &fresh {
                let at = self.order.iter().position(|&o| name(o) > placed_by(idx));
                self.order.insert(at.unwrap_or(self.order.len()), idx);
            }
        } else {
            heapsort::sort_by(&mut fresh, |a, b| name(a) < name(b));
            merge_sorted(&mut self.order, &fresh, name);
        }
        self.placed_by.clear();
        fresh.clear();
        self.fresh = fresh;
    }

    /// Adds a `-g` group (its name starts with a space) at the end of the
    /// list, after the devices named before it; a name already in the list
    /// is that group again, where it stands. The devices that follow a
    /// group in the list, up to the next group, are its members.
    fn add_group(&mut self, name: &str) {
        self.append_from_here();
        let known = self.entries.len();
        let idx = self.find_or_make(name);
        if idx < known {
            return;
        }
        let e = &mut self.entries[idx];
        e.kind = EntryKind::Group;
        e.from_cmdline = true;
        e.exists = true;
        e.placed = true;
        self.order.push(idx);
        self.has_groups = true;
    }

    /// A group or `-p ALL` is in the list here: what came before is placed,
    /// what comes after is appended.
    fn append_from_here(&mut self) {
        self.place_fresh();
        self.appending = true;
    }

    /// sysstat's `add_list_device`: finds `name` or inserts it (sorted by
    /// `strcmp` until a group is in the list and unless `-p ALL`; otherwise
    /// appended). Marks it present in this sample. A group's name finds
    /// the group, unchanged.
    fn add(
        &mut self,
        src: &dyn Source,
        name: &str,
        devnum: Option<(u32, u32)>,
        kind: DeviceKind,
    ) -> usize {
        let idx = self.find_or_make(name);
        let e = &mut self.entries[idx];
        if e.kind == EntryKind::Group {
            return idx;
        }
        if kind == DeviceKind::WithPartitions {
            e.kind = EntryKind::Device(kind);
        }
        // The numbers found now win: a partition deleted and added again
        // comes back under new ones.
        e.devnum = devnum.or(e.devnum);
        e.exists = true;
        self.place(src, idx);
        idx
    }

    /// The entry of `name`, made (not yet placed) when there is none.
    fn find_or_make(&mut self, name: &str) -> usize {
        let (entries, names) = (&self.entries, self.names.as_str());
        if let Some(idx) = self.index.get(name, |i| entries[i].name.of(names)) {
            return idx;
        }
        let idx = self.entries.len();
        let span = self.store_name(name);
        self.entries.push(Entry {
            name: span,
            kind: EntryKind::Device(DeviceKind::Single),
            from_cmdline: false,
            exists: false,
            devnum: None,
            members: 0,
            staged: 0,
            placed: false,
        });
        let (entries, names) = (&self.entries, self.names.as_str());
        self.index.insert(name, idx, |i| entries[i].name.of(names));
        idx
    }

    /// Appends `name` to [`Self::names`].
    fn store_name(&mut self, name: &str) -> NameSpan {
        // Names are at most a directory entry long, and there cannot be
        // enough of them to fill 4 GB.
        let span = NameSpan {
            start: u32::try_from(self.names.len()).expect("names under 4 GB"),
            len: u32::try_from(name.len()).expect("a name under 4 GB"),
        };
        self.names.push_str(name);
        span
    }

    /// The stored name of entry `idx`.
    fn name(&self, idx: usize) -> &str {
        self.entries[idx].name.of(&self.names)
    }

    /// Gives an entry not yet placed its display name and queues it for the
    /// display order.
    fn place(&mut self, src: &dyn Source, idx: usize) {
        if self.entries[idx].placed {
            return;
        }
        let entry = &self.entries[idx];
        if let Some(display) = self.display_name(src, entry.name, entry.devnum) {
            self.displays.insert(idx, display.into());
        }
        self.entries[idx].placed = true;
        self.fresh.push(idx);
    }

    /// The name shown for a device, when it is not its stored name: its
    /// persistent name (`-j`), else its device-mapper name (`-N`), cut to
    /// 255 bytes as sysstat cuts it, else its kernel name with `!` back to
    /// `/`.
    ///
    /// `None` for most devices, which costs no allocation: a one-report run
    /// places every device once, and two `String`s each were 3 % of its
    /// time at 10,000 devices.
    fn display_name(
        &mut self,
        src: &dyn Source,
        name: NameSpan,
        devnum: Option<(u32, u32)>,
    ) -> Option<String> {
        let name = name.of(&self.names);
        let persistent = match &self.rules.persistent {
            // A name given as a path that is not a link to the kernel's
            // name (`/dev/mapper/vg0-swap` as a block node): sysstat looks
            // the persistent name up by the device's number.
            Some(kind) => self.persistent_names.lookup(src, kind, name).or_else(|| {
                let (major, minor) = devnum.filter(|_| name.contains('!'))?;
                let kernel = kernel_name(src, major, minor)?;
                self.persistent_names.lookup(src, kind, &kernel)
            }),
            None => None,
        };
        let chosen = persistent.or_else(|| {
            devnum
                .filter(|&(major, _)| self.rules.mapper && Some(major) == self.dm_major)
                .and_then(|(major, minor)| mapper_name(src, major, minor))
        });
        let display = match chosen {
            // sysstat copies the name it shows into MAX_NAME_LEN bytes.
            Some(display) => truncate_name(display),
            None if name.contains('!') => name.replace('!', "/"),
            None => return None,
        };
        (display != name).then_some(display)
    }
}

/// Merges `fresh` into `order`, both sorted by `name`: each fresh entry
/// goes after the entries of `order` whose names are not greater, as a
/// merge of the two would place it. Found by binary search and moved in
/// place from the end: a sample that finds a few new devices costs a few
/// comparisons each, not one per device ever seen, and no new list (a
/// run whose devices come and go keeps every name: BENCHMARKS.md,
/// "Devices that come and go").
fn merge_sorted<'a>(order: &mut Vec<usize>, fresh: &[usize], name: impl Fn(usize) -> &'a str) {
    let mut end = order.len();
    order.resize(end + fresh.len(), 0);
    for (j, &idx) in fresh.iter().enumerate().rev() {
        let at = order[..end].partition_point(|&o| name(o) <= name(idx));
        order.copy_within(at..end, at + j + 1);
        order[at + j] = idx;
        end = at;
    }
}

/// The major number of device-mapper devices, from `/proc/devices` (`-N`).
#[inline(never)]
fn device_mapper_major(src: &dyn Source) -> Option<u32> {
    src.read("/proc/devices").ok().and_then(|text| {
        String::from_utf8_lossy(&text)
            .lines()
            .find(|l| l.contains("device-mapper"))
            .and_then(|l| l.split_whitespace().next()?.parse().ok())
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::common::record::{Entry, Frame, Header, Replay};
    use crate::common::source::Uname;
    use crate::iostat::cli::{Env, parse_args};

    /// A replay whose frames hold `/proc/diskstats`, the `/sys/block` list
    /// and each device's sysfs `stat` file (`dm-*` have major 253), plus
    /// `extra` in every frame.
    fn replay_with(samples: &[&[(&str, u64)]], extra: &[(&str, Entry)]) -> Replay {
        let frames = samples
            .iter()
            .map(|devs| {
                let mut entries: BTreeMap<String, Entry> = extra
                    .iter()
                    .map(|(key, entry)| (key.to_string(), entry.clone()))
                    .collect();
                let mut text = String::new();
                for (minor, (name, ios)) in devs.iter().enumerate() {
                    let major = if name.starts_with("dm-") { 253 } else { 8 };
                    let stat = format!("{ios} 0 {} 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n", ios * 8);
                    text.push_str(&format!("{major} {minor} {name} {stat}"));
                    entries.insert(format!("isdir /sys/block/{name}"), Entry::IsDir(true));
                    entries.insert(format!("read /sys/block/{name}/stat"), Entry::Text(stat));
                }
                entries.insert("read /proc/diskstats".into(), Entry::Text(text));
                entries.insert(
                    "list /sys/block".into(),
                    Entry::List(devs.iter().map(|(n, _)| n.to_string()).collect()),
                );
                entries
            })
            .collect();
        replay_of_frames(frames)
    }

    /// A replay of frames holding `entries` each, in turn.
    fn replay_of_frames(entries: Vec<BTreeMap<String, Entry>>) -> Replay {
        let frames = entries
            .into_iter()
            .enumerate()
            .map(|(k, entries)| Frame {
                index: k as u64,
                entries,
                ..Frame::default()
            })
            .collect();
        let header = Header {
            format: "hwstat-recording".into(),
            version: 1,
            tool: "test".into(),
            args: vec![],
            uname: Uname {
                sysname: "Linux".into(),
                nodename: "t".into(),
                release: "1".into(),
                version: String::new(),
                machine: "x86_64".into(),
            },
            start_unix_ns: 0,
            whole_tree: false,
        };
        Replay::from_parts(header, frames)
    }

    /// [`replay_with`] and nothing else.
    fn replay(samples: &[&[(&str, u64)]]) -> Replay {
        replay_with(samples, &[])
    }

    /// The rows of each sample in turn, groups computed, as (name, rd_ios,
    /// devices).
    fn reports(args: &[&str], samples: &[&[(&str, u64)]]) -> Vec<Vec<(String, u64, u32)>> {
        let mut src = replay(samples);
        let o = opts(args);
        let mut list = DeviceList::new(&o, &src);
        (0..samples.len())
            .map(|k| {
                if k > 0 {
                    src.next_sample().unwrap();
                }
                list.read_sample(&src, k % 2);
                list.compute_groups(k % 2);
                list.rows(k % 2)
                    .map(|r| (r.name.to_string(), r.cur.rd_ios, r.devices))
                    .collect()
            })
            .collect()
    }

    fn row(name: &str, ios: u64, devices: u32) -> (String, u64, u32) {
        (name.to_string(), ios, devices)
    }

    fn opts(args: &[&str]) -> Options {
        let v: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        parse_args(&v, Env::default()).unwrap()
    }

    fn shown(list: &DeviceList, curr: usize) -> Vec<(String, u64, u64)> {
        list.rows(curr)
            .map(|r| (r.name.to_string(), r.prev.rd_ios, r.cur.rd_ios))
            .collect()
    }

    #[test]
    fn default_mode_sorts_filters_unused_and_uses_two_alternating_slots() {
        let mut src = replay(&[
            &[("sdb", 5), ("sda", 1), ("loop0", 0)],
            &[("sda", 2)],
            &[("sdb", 9), ("sda", 3), ("sdc", 4)],
        ]);
        let o = opts(&[]);
        let mut list = DeviceList::new(&o, &src);
        list.read_sample(&src, 0);
        assert_eq!(
            shown(&list, 0),
            [("sda".into(), 0, 1), ("sdb".into(), 0, 5)]
        );
        // One sample holds one slot: a one-report run never the second.
        assert!(list.slots.by_slot[1].is_empty());
        src.next_sample().unwrap();
        list.read_sample(&src, 1);
        // sdb vanished: not shown.
        assert_eq!(shown(&list, 1), [("sda".into(), 1, 2)]);
        src.next_sample().unwrap();
        list.read_sample(&src, 0);
        // sdb is back: its other slot was never written (sysstat keeps two
        // slots and alternates), so it is compared with zeros; so is the
        // new sdc.
        assert_eq!(
            shown(&list, 0),
            [
                ("sda".into(), 2, 3),
                ("sdb".into(), 0, 9),
                ("sdc".into(), 0, 4)
            ]
        );
    }

    #[test]
    fn everything_mode_keeps_file_order_and_groups_sum_their_members() {
        let src = replay(&[&[("sdb", 5), ("sda", 1), ("sdz", 0)]]);
        let o = opts(&["-p", "ALL", "-g", "first", "sdz", "-g", "rest"]);
        let mut list = DeviceList::new(&o, &src);
        list.read_sample(&src, 0);
        list.compute_groups(0);
        let rows: Vec<(String, u64, u32)> = list
            .rows(0)
            .map(|r| (r.name.to_string(), r.cur.rd_ios, r.devices))
            .collect();
        assert_eq!(
            rows,
            [
                ("sdz".into(), 0, 1),
                (" first".into(), 0, 1),
                ("sdb".into(), 5, 1),
                ("sda".into(), 1, 1),
                (" rest".into(), 6, 2),
            ]
        );
    }

    #[test]
    fn list_position_decides_order_and_group_membership() {
        let sample: &[(&str, u64)] = &[("sda", 1), ("sdb", 2), ("sdc", 4), ("sdd", 8), ("sde", 16)];
        // Before any -g: strcmp order, no group. After it: appended, in the
        // last group of the list. A repeated device keeps its place, a
        // repeated group is the same group (sde follows H in the list).
        let args = [
            "-d", "sdc", "sdb", "-g", "G", "sdd", "sdb", "-g", "H", "sda", "-g", "G", "sde",
        ];
        assert_eq!(
            reports(&args, &[sample]),
            [[
                row("sdb", 2, 1),
                row("sdc", 4, 1),
                row("sdd", 8, 1),
                row(" G", 8, 1),
                row("sda", 1, 1),
                row("sde", 16, 1),
                row(" H", 17, 2),
            ]]
        );
        // -H hides group members only.
        assert_eq!(
            reports(&["-d", "-H", "sdb", "-g", "G", "sda"], &[sample]),
            [[row("sdb", 2, 1), row(" G", 1, 1)]]
        );
    }

    #[test]
    fn group_rows_are_filtered_as_devices_are() {
        // No device named: a group that never did I/O is not shown.
        let idle: &[(&str, u64)] = &[("sda", 5), ("sdb", 0)];
        assert_eq!(
            reports(&["-d", "-g", "E", "-g", "G"], &[idle]),
            [[row("sda", 5, 1), row(" G", 5, 2)]]
        );
        // -z: nor one without I/O in the interval.
        assert_eq!(
            reports(&["-dz", "-g", "G", "sda"], &[idle, idle]),
            [vec![row("sda", 5, 1), row(" G", 5, 1)], vec![]]
        );
        // A group no member of which was ever present: shown in the basic
        // report, left out of the extended ones.
        assert_eq!(
            reports(&["-d", "-g", "E", "nosuch"], &[idle]),
            [[row(" E", 0, 0)]]
        );
        assert_eq!(reports(&["-x", "-g", "E", "nosuch"], &[idle]), [[]]);
    }

    #[test]
    fn group_util_divisor_adds_up_present_members_over_the_samples() {
        // sdb never did I/O: not summed, not shown, but counted; sdc is
        // present in the first sample only.
        let first: &[(&str, u64)] = &[("sda", 1), ("sdb", 0), ("sdc", 2)];
        let second: &[(&str, u64)] = &[("sda", 3), ("sdb", 0)];
        assert_eq!(
            reports(&["-x", "-g", "G"], &[first, second, second]),
            [
                vec![row("sda", 1, 1), row("sdc", 2, 1), row(" G", 3, 3)],
                vec![row("sda", 3, 1), row(" G", 3, 5)],
                vec![row("sda", 3, 1), row(" G", 3, 7)],
            ]
        );
    }

    #[test]
    fn a_device_without_a_persistent_name_falls_back_to_its_mapper_name() {
        let src = replay_with(
            &[&[("dm-0", 1), ("sda", 2)]],
            &[
                (
                    "read /proc/devices",
                    Entry::Text("Block devices:\n  8 sd\n253 device-mapper\n".into()),
                ),
                ("devnum /dev/dm-0", Entry::Device(253, 0)),
                ("devnum /dev/sda", Entry::Device(8, 1)),
                ("list /dev/mapper", Entry::List(vec!["vg0-root".into()])),
                ("devnum /dev/mapper/vg0-root", Entry::Device(253, 0)),
                ("list /dev/disk/by-path", Entry::List(vec!["pci-0".into()])),
                (
                    "link /dev/disk/by-path/pci-0",
                    Entry::Link("../../sda".into()),
                ),
            ],
        );
        let o = opts(&["-d", "-N", "-j", "PATH", "dm-0", "sda"]);
        let mut list = DeviceList::new(&o, &src);
        list.read_sample(&src, 0);
        assert_eq!(
            shown(&list, 0),
            [("vg0-root".into(), 0, 1), ("pci-0".into(), 0, 2)]
        );
    }

    /// `/dev/mapper/vg0-swap` as a block node of dm-1 (no udev links), with
    /// a by-id name for dm-1.
    fn mapper_node() -> Replay {
        let link = |target: &str| Entry::Link(target.into());
        replay_with(
            &[&[("dm-0", 1), ("dm-1", 2)]],
            &[
                (
                    "realpath /dev/mapper/vg0-swap",
                    Entry::Path("/dev/mapper/vg0-swap".into()),
                ),
                ("devnum /dev/mapper/vg0-swap", Entry::Device(253, 1)),
                (
                    "read /sys/dev/block/253:1/stat",
                    Entry::Text("2 0 16 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n".into()),
                ),
                (
                    "link /sys/dev/block/253:1",
                    link("../../devices/virtual/block/dm-1"),
                ),
                (
                    "list /dev/disk/by-id",
                    Entry::List(vec!["dm-name-vg0-swap".into()]),
                ),
                ("link /dev/disk/by-id/dm-name-vg0-swap", link("../../dm-1")),
            ],
        )
    }

    #[test]
    fn a_device_named_by_a_path_has_the_persistent_name_of_its_number() {
        let src = mapper_node();
        let mut list = DeviceList::new(&opts(&["-d", "-j", "id", "/dev/mapper/vg0-swap"]), &src);
        list.read_sample(&src, 0);
        assert_eq!(shown(&list, 0), [("dm-name-vg0-swap".into(), 0, 2)]);
        // Without -j it keeps the name it was given.
        let mut list = DeviceList::new(&opts(&["-d", "/dev/mapper/vg0-swap"]), &src);
        list.read_sample(&src, 0);
        assert_eq!(shown(&list, 0), [("mapper/vg0-swap".into(), 0, 2)]);
    }

    #[test]
    fn with_p_all_a_name_not_in_diskstats_has_no_statistics() {
        let src = mapper_node();
        let mut list = DeviceList::new(&opts(&["-d", "-p", "ALL", "/dev/mapper/vg0-swap"]), &src);
        list.read_sample(&src, 0);
        assert_eq!(
            shown(&list, 0),
            [("dm-0".into(), 0, 1), ("dm-1".into(), 0, 2)]
        );
    }

    /// The names the first sample of `src` shows, in order, under `args`.
    fn names_shown(args: &[&str], src: &Replay) -> Vec<String> {
        let mut list = DeviceList::new(&opts(args), src);
        list.read_sample(src, 0);
        shown(&list, 0).into_iter().map(|r| r.0).collect()
    }

    #[test]
    fn a_device_given_by_its_mapper_name_is_placed_by_that_name() {
        let link = |target: &str| Entry::Link(target.into());
        let src = replay_with(
            &[&[("dm-0", 1), ("sda", 2)]],
            &[
                (
                    "read /proc/devices",
                    Entry::Text("Block devices:\n  8 sd\n253 device-mapper\n".into()),
                ),
                ("link /dev/mapper/vg0-root", link("../dm-0")),
                ("devnum /dev/dm-0", Entry::Device(253, 0)),
                ("list /dev/mapper", Entry::List(vec!["vg0-root".into()])),
                ("devnum /dev/mapper/vg0-root", Entry::Device(253, 0)),
            ],
        );
        // sysstat inserts vg0-root (stored as dm-0) by the name given, and
        // the next name by the stored ones: as if neither were sorted.
        for (args, expected) in [
            (["-d", "-N", "sda", "vg0-root"], ["sda", "vg0-root"]),
            (["-d", "-N", "vg0-root", "sda"], ["vg0-root", "sda"]),
        ] {
            assert_eq!(names_shown(&args, &src), expected, "{args:?}");
        }
        // A device-mapper name given when the device is listed already
        // (as dm-0, or by that name) lists it again, as sysstat does (found
        // side by side with 12.6.1 and its development line); dm-0 given
        // after vg0-root finds it.
        for (args, expected) in [
            (
                &["-d", "-N", "dm-0", "vg0-root"][..],
                &["vg0-root", "vg0-root"][..],
            ),
            (
                &["-d", "-N", "vg0-root", "vg0-root"],
                &["vg0-root", "vg0-root"],
            ),
            (&["-d", "-N", "vg0-root", "dm-0"], &["vg0-root"]),
            (
                &["-d", "-N", "dm-0", "sda", "vg0-root"],
                &["vg0-root", "sda", "vg0-root"],
            ),
            (
                &["-d", "-N", "-p", "ALL", "vg0-root", "vg0-root"],
                &["vg0-root", "sda"],
            ),
        ] {
            assert_eq!(names_shown(args, &src), expected, "{args:?}");
        }
    }

    #[test]
    fn devices_named_before_p_all_are_sorted_and_those_after_appended() {
        let src = replay(&[&[("sdc", 1), ("sdb", 2), ("sda", 3)]]);
        for (args, expected) in [
            (["-d", "sdb", "sda", "-p"], ["sda", "sdb", "sdc"]),
            (["-d", "-p", "ALL", "sdb"], ["sdb", "sdc", "sda"]),
        ] {
            assert_eq!(names_shown(&args, &src), expected, "{args:?}");
        }
    }

    #[test]
    fn with_all_a_device_named_by_p_still_shows_its_partitions() {
        let src = replay_with(
            &[&[("sda", 3), ("sdb", 4)]],
            &[
                (
                    "list /sys/block/sda",
                    Entry::List(vec!["sda1".into(), "stat".into()]),
                ),
                (
                    "read /sys/block/sda/sda1/stat",
                    Entry::Text("1 0 8 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n".into()),
                ),
                ("devnum /dev/sda1", Entry::Device(8, 9)),
            ],
        );
        let mut list = DeviceList::new(&opts(&["-d", "-p", "sda", "ALL"]), &src);
        list.read_sample(&src, 0);
        assert_eq!(
            shown(&list, 0),
            [
                ("sda".into(), 0, 3),
                ("sda1".into(), 0, 1),
                ("sdb".into(), 0, 4)
            ]
        );
    }

    #[test]
    fn fresh_entries_merge_after_the_names_not_greater() {
        let names = ["a", "c", "c", "e", "b", "c", "d", "f", "0"];
        let name = |i: usize| names[i];
        // A merge of the two lists, ties to the entries already in order.
        let merged = |order: &[usize], fresh: &[usize]| {
            let mut all = [order, fresh].concat();
            all.sort_by_key(|&i| name(i));
            all
        };
        for (order, fresh) in [
            (&[0, 1, 2, 3][..], &[8, 4, 5, 6, 7][..]),
            (&[], &[8, 0, 4]),
            (&[1, 3], &[]),
            (&[0, 3], &[2, 5]),
        ] {
            let mut got = order.to_vec();
            merge_sorted(&mut got, fresh, name);
            assert_eq!(got, merged(order, fresh), "{order:?} + {fresh:?}");
        }
    }

    /// A partition named on the command line, deleted and added again
    /// under new numbers, is read under those its node has then.
    #[test]
    fn a_named_partition_is_followed_to_its_new_numbers() {
        let stat = |ios: u64| Entry::Text(format!("{ios} 0 8 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"));
        let frame = |entries: &[(&str, Entry)]| -> BTreeMap<String, Entry> {
            entries
                .iter()
                .map(|(key, entry)| (key.to_string(), entry.clone()))
                .chain([("isdir /sys/block/sda1".to_string(), Entry::IsDir(false))])
                .collect()
        };
        let mut src = replay_of_frames(vec![
            frame(&[
                ("devnum /dev/sda1", Entry::Device(8, 1)),
                ("read /sys/dev/block/8:1/stat", stat(5)),
            ]),
            frame(&[
                ("read /sys/dev/block/8:1/stat", Entry::Errno(libc::ENOENT)),
                ("devnum /dev/sda1", Entry::Device(259, 3)),
                ("read /sys/dev/block/259:3/stat", stat(2)),
            ]),
        ]);
        let mut list = DeviceList::new(&opts(&["-d", "sda1"]), &src);
        list.read_sample(&src, 0);
        assert_eq!(shown(&list, 0), [("sda1".into(), 0, 5)]);
        src.next_sample().unwrap();
        list.read_sample(&src, 1);
        assert_eq!(shown(&list, 1), [("sda1".into(), 5, 2)]);
        assert_eq!(list.rows(1).next().unwrap().devnum, Some((259, 3)));
    }

    /// With `--latency`, `-p DISK` and no device nodes (a container without
    /// devtmpfs), a partition's numbers are sysfs's, also once it was
    /// deleted and added again under new ones; without `--latency`, no
    /// file more is read (the frames lack them: a read would fail).
    #[test]
    fn partitions_without_nodes_take_their_numbers_from_sysfs() {
        let frame = |minor: u32| -> BTreeMap<String, Entry> {
            [
                ("isdir /sys/block/sda", Entry::IsDir(true)),
                (
                    "read /sys/block/sda/stat",
                    Entry::Text("7 0 8 0 0 0 0 0 0 0 0\n".into()),
                ),
                (
                    "list /sys/block/sda",
                    Entry::List(vec!["sda1".into(), "stat".into()]),
                ),
                (
                    "read /sys/block/sda/sda1/stat",
                    Entry::Text("1 0 8 0 0 0 0 0 0 0 0\n".into()),
                ),
                ("read /sys/block/sda/stat/stat", Entry::Errno(libc::ENOTDIR)),
                ("devnum /dev/sda1", Entry::Errno(libc::ENOENT)),
                ("devnum /dev/sda", Entry::Errno(libc::ENOENT)),
                ("read /sys/class/block/sda/dev", Entry::Text("8:0\n".into())),
                (
                    "read /sys/class/block/sda1/dev",
                    Entry::Text(format!("259:{minor}\n")),
                ),
            ]
            .into_iter()
            .map(|(key, entry)| (key.to_string(), entry))
            .collect()
        };
        let numbers = |list: &DeviceList, curr: usize| -> Vec<_> {
            list.rows(curr).map(|row| row.devnum).collect()
        };
        let mut src = replay_of_frames(vec![frame(1), frame(7)]);
        let mut list = DeviceList::new(&opts(&["-x", "--latency", "-p", "sda"]), &src);
        list.read_sample(&src, 0);
        assert_eq!(numbers(&list, 0), [Some((8, 0)), Some((259, 1))]);
        src.next_sample().unwrap();
        list.read_sample(&src, 1);
        assert_eq!(numbers(&list, 1), [Some((8, 0)), Some((259, 7))]);
        src.check_answered().unwrap();
        let frames = vec![frame(1), frame(7)]
            .into_iter()
            .map(|mut f| {
                f.retain(|key, _| !key.ends_with("/dev"));
                f
            })
            .collect();
        let src = replay_of_frames(frames);
        let mut list = DeviceList::new(&opts(&["-x", "-p", "sda"]), &src);
        list.read_sample(&src, 0);
        assert_eq!(numbers(&list, 0), [None, None]);
        assert!(src.check_answered().is_ok(), "a file more was read");
    }

    #[test]
    fn counters_that_fall_to_a_fresh_device_are_compared_with_zeros() {
        let mut src = replay(&[&[("sda", 100)], &[("sda", 3)]]);
        let o = opts(&["-x"]);
        let mut list = DeviceList::new(&o, &src);
        list.read_sample(&src, 0);
        src.next_sample().unwrap();
        list.read_sample(&src, 1);
        assert_eq!(shown(&list, 1), [("sda".into(), 0, 3)]);
    }
}
