//! Reading one sample's counters into the device list: `/proc/diskstats`
//! once for every device it lists, a device's sysfs `stat` file only for
//! devices it does not list (the module above explains the read path).

use crate::common::source::Source;

use super::super::cli::{AltMode, DeviceKind};
use super::super::lookup::{NameIndex, PositionHints};
use super::super::model::looks_readded;
use super::super::names::node_path;
use super::super::parse::{
    DiskCounters, StatFormat, diskstats_head, parse_dev_numbers, parse_diskstats_line,
    parse_sysfs_stat,
};
use super::{DeviceList, Entry, EntryKind, PROC_DISKSTATS, SYS_BLOCK, SYS_DEV_BLOCK};

impl DeviceList {
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
        // With `-p ALL` sysstat reads `/proc/diskstats` alone: a name that
        // is not a line of it (`/dev/mapper/vg0-swap` as a block node) has
        // no statistics. Otherwise it reads the devices named first (with
        // `-p dev`, their partitions too), then with `ALL` every device.
        if self.rules.everything {
            for file in sys_and_alt(PROC_DISKSTATS, "diskstats") {
                self.read_diskstats_file(src, &file, curr);
            }
            if self.rules.list_for_replay {
                for dir in sys_and_alt(SYS_BLOCK, "block") {
                    self.read_for_replay(src, &dir);
                }
            }
        } else {
            self.read_named(src, curr, alt.as_ref());
            if self.rules.all_devices {
                for dir in sys_and_alt(SYS_BLOCK, "block") {
                    self.read_block_dir(src, &dir, curr);
                }
            }
        }
        self.place_fresh();
        let prev = curr ^ 1;
        for (idx, e) in self.entries.iter().enumerate() {
            if e.exists
                && e.kind != EntryKind::Group
                && looks_readded(self.slots.get(prev, idx), self.slots.get(curr, idx))
            {
                self.slots.clear(prev, idx);
            }
        }
    }

    /// sysstat's `read_sysfs_dlist_stat`: the devices named on the command
    /// line not read yet this sample, from sysfs (`alt`: `-f`/`+f`).
    fn read_named(&mut self, src: &dyn Source, curr: usize, alt: Option<&(String, AltMode)>) {
        let pending: Vec<usize> = self
            .order
            .iter()
            .copied()
            .filter(|&i| {
                let e = &self.entries[i];
                e.from_cmdline && !e.exists && e.kind != EntryKind::Group
            })
            .collect();
        if pending.is_empty() {
            return;
        }
        let dirs: Vec<(String, String)> = match alt {
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

    fn save(&mut self, idx: usize, curr: usize, counters: DiskCounters) {
        *self.slots.get_mut(curr, idx) = counters;
        self.entries[idx].exists = true;
    }

    // Out of line: only some runs take this path; inlined, it would sit among
    // the code every run executes (build.rs, "Hot code first").
    #[inline(never)]
    fn read_diskstats_file(&mut self, src: &dyn Source, path: &str, curr: usize) {
        let mut buf = std::mem::take(&mut self.buf);
        // A read error ends the file: the lines before it count, as with fgets.
        let _ = src.for_each_line(path, &mut buf, &mut |line| {
            let Some(line) = parse_diskstats_line(line) else {
                return;
            };
            if line.format == StatFormat::OldPartition && self.rules.extended {
                return;
            }
            let idx = self.add(
                src,
                &line.name,
                Some((line.major, line.minor)),
                DeviceKind::Single,
            );
            self.save(idx, curr, line.counters);
        });
        self.buf = buf;
    }

    /// The entry of a name found at `pos` of a file read at every sample:
    /// where the name was last time, or a hash lookup.
    fn entry_at(
        hints: &PositionHints,
        entries: &[Entry],
        names: &str,
        index: &NameIndex,
        pos: usize,
        name: &str,
    ) -> Option<usize> {
        match hints.get(pos) {
            Some(idx) if entries.get(idx).is_some_and(|e| e.name.of(names) == name) => Some(idx),
            _ => index.get(name, |i| entries[i].name.of(names)),
        }
    }

    /// Reads `/proc/diskstats` once per sample (default and `ALL` modes),
    /// line by line: the counters of devices that have an entry (those of
    /// this sample's `/sys/block` listing among them) go straight into its
    /// current slot, marked staged.
    fn stage_diskstats(&mut self, src: &dyn Source, curr: usize) {
        let mut buf = std::mem::take(&mut self.buf);
        let mut pos = 0;
        // A read error ends the file: devices not staged fall back to sysfs.
        let _ = src.for_each_line(PROC_DISKSTATS, &mut buf, &mut |line| {
            let Some(head) = diskstats_head(line) else {
                return;
            };
            if let Some(idx) = Self::entry_at(
                &self.line_hints,
                &self.entries,
                &self.names,
                &self.index,
                pos,
                &head.name,
            ) {
                self.line_hints.set(pos, idx);
                // These counters stand for the device's sysfs `stat` file,
                // which sysstat keeps under `-x` even in the old 4-field format.
                if let Some(l) = head.parse() {
                    *self.slots.get_mut(curr, idx) = l.counters;
                    let e = &mut self.entries[idx];
                    e.staged = self.generation;
                    // The line's numbers, not the first seen: a partition
                    // deleted and added again comes back under a new one.
                    e.devnum = Some((l.major, l.minor));
                }
            }
            pos += 1;
        });
        self.buf = buf;
    }

    /// Reads the devices of a `/sys/block` listing: an entry for every name
    /// (placed once its counters are found), their counters from
    /// `/proc/diskstats` for `/sys/block` itself, from each `stat` file for
    /// the devices it lacks and for an alternate directory.
    fn read_block_dir(&mut self, src: &dyn Source, dir: &str, curr: usize) {
        let mut listed = std::mem::take(&mut self.listed);
        listed.clear();
        let mut pos = 0;
        let listing = src.for_each_dir_entry(dir, &mut |name| {
            let idx = match Self::entry_at(
                &self.dir_hints,
                &self.entries,
                &self.names,
                &self.index,
                pos,
                name,
            ) {
                Some(idx) => idx,
                None => self.find_or_make(name),
            };
            self.dir_hints.set(pos, idx);
            listed.extend(u32::try_from(idx));
            pos += 1;
        });
        if listing.is_err() {
            // sysstat's opendir failed: no device from this directory.
            listed.clear();
        }
        let use_diskstats = dir == SYS_BLOCK;
        if use_diskstats && !listed.is_empty() {
            self.stage_diskstats(src, curr);
        }
        for idx in listed.iter().map(|&idx| idx as usize) {
            if use_diskstats && self.entries[idx].staged == self.generation {
                self.entries[idx].exists = true;
                self.place(src, idx);
                continue;
            }
            let stat_path = format!("{dir}/{}/stat", self.name(idx));
            let counters = self.read_stat_file(src, &stat_path);
            let devnum = match counters {
                Some(_) if self.entries[idx].devnum.is_none() && self.rules.mapper => {
                    src.device_number(&node_path(self.name(idx))).ok()
                }
                _ => None,
            };
            if let Some(c) = counters {
                let e = &mut self.entries[idx];
                e.devnum = e.devnum.or(devnum);
                self.save(idx, curr, c);
                self.place(src, idx);
            }
        }
        self.listed = listed;
    }

    /// For a `-p ALL` recording alone (nothing is shown): what the views of
    /// every whole device read of `dir` besides `/proc/diskstats`
    /// ([`Self::read_block_dir`]), its listing and the `stat` file of each
    /// device listed that diskstats did not give (all of them in `-f` and
    /// `+f`'s directory). Unreadable, they are recorded as such, as a
    /// replay would meet them.
    #[inline(never)]
    fn read_for_replay(&mut self, src: &dyn Source, dir: &str) {
        let mut listed = Vec::new();
        let _ = src.for_each_dir_entry(dir, &mut |name| listed.push(name.to_string()));
        let from_diskstats = dir == SYS_BLOCK;
        for name in listed {
            let (entries, names) = (&self.entries, self.names.as_str());
            let given = from_diskstats
                && self
                    .index
                    .get(&name, |i| entries[i].name.of(names))
                    .is_some_and(|i| entries[i].exists);
            if !given {
                let _ = self.read_stat_file(src, &format!("{dir}/{name}/stat"));
            }
        }
    }

    /// Reads a sysfs `stat` file as sysstat does: `None` (device absent)
    /// only when the file cannot be opened; a file that opens but cannot be
    /// read (a directory) or parsed gives zeros.
    fn read_stat_file(&mut self, src: &dyn Source, path: &str) -> Option<DiskCounters> {
        let mut buf = std::mem::take(&mut self.buf);
        let parsed = match src.read_into(path, &mut buf) {
            Ok(()) => Some(parse_sysfs_stat(&buf)),
            Err(e) if failed_to_open(&e) => None,
            Err(_) => Some(DiskCounters::default()),
        };
        self.buf = buf;
        parsed
    }

    /// Reads a device named on the command line: a whole device from
    /// `<block>/<name>/stat` (plus its partitions with `-p dev`), a partition
    /// from `<dev/block>/<major>:<minor>/stat`. With `+f`, the system first.
    // Out of line: only some runs take this path; inlined, it would sit among
    // the code every run executes (build.rs, "Hot code first").
    #[inline(never)]
    fn read_listed(
        &mut self,
        src: &dyn Source,
        idx: usize,
        dirs: &[(String, String)],
        curr: usize,
    ) {
        let name = self.name(idx).to_owned();
        let kind = self.entries[idx].kind;
        for (block, dev_block) in dirs {
            // sysstat's `is_device` turns each `/` into `!` first: a path
            // given that did not resolve (`/vda`) names no whole device.
            let dev_dir = format!("{block}/{}", name.replace('/', "!"));
            if src.is_dir(&dev_dir) {
                let found = match self.read_stat_file(src, &format!("{dev_dir}/stat")) {
                    Some(c) => {
                        self.save(idx, curr, c);
                        true
                    }
                    None => false,
                };
                if kind == EntryKind::Device(DeviceKind::WithPartitions)
                    && let Ok(subs) = src.list_dir(&dev_dir)
                {
                    for sub in subs {
                        if let Some(c) = self.read_stat_file(src, &format!("{dev_dir}/{sub}/stat"))
                        {
                            let devnum = self.numbers_of(src, &sub);
                            let p = self.add(src, &sub, devnum, DeviceKind::Single);
                            self.save(p, curr, c);
                        }
                    }
                }
                if found {
                    return;
                }
            } else if let Some(numbers) = self.entries[idx].devnum {
                if self.read_by_numbers(src, dev_block, numbers, idx, curr) {
                    return;
                }
                // Gone under those numbers: a partition deleted and added
                // again has new ones.
                let now = self.numbers_of(src, &name);
                if let Some(now) = now.filter(|&now| now != numbers) {
                    self.entries[idx].devnum = Some(now);
                    if self.read_by_numbers(src, dev_block, now, idx, curr) {
                        return;
                    }
                }
            }
        }
    }

    /// The numbers of block device `name` now: its node's, or without a
    /// node (a container without devtmpfs) and with `--latency`, those of
    /// its sysfs `dev` file (`MAJOR:MINOR`). Without that file, a partition
    /// deleted and added again kept its first numbers, which no longer
    /// named it, and its requests were measured for none.
    pub(super) fn numbers_of(&mut self, src: &dyn Source, name: &str) -> Option<(u32, u32)> {
        let node = src.device_number(&node_path(name));
        if node.is_ok() || !self.rules.numbers_from_sysfs {
            return node.ok();
        }
        let mut buf = std::mem::take(&mut self.buf);
        let numbers = src
            .read_into(&format!("/sys/class/block/{name}/dev"), &mut buf)
            .ok()
            .and_then(|()| parse_dev_numbers(&buf));
        self.buf = buf;
        numbers
    }

    /// Reads entry `idx`'s counters into slot `curr` from
    /// `<dev_block>/<major>:<minor>/stat`; whether that file was read.
    fn read_by_numbers(
        &mut self,
        src: &dyn Source,
        dev_block: &str,
        (major, minor): (u32, u32),
        idx: usize,
        curr: usize,
    ) -> bool {
        let path = format!("{dev_block}/{major}:{minor}/stat");
        match self.read_stat_file(src, &path) {
            Some(c) => {
                self.save(idx, curr, c);
                true
            }
            None => false,
        }
    }
}

/// Tells whether a failed read of a kernel file failed at `open(2)` (sysstat
/// then treats the device as absent) rather than after it (sysstat's
/// `fopen` succeeded, its `fscanf` read nothing). An error that carries no
/// `errno` (an entry missing from a recording) counts as not opened.
fn failed_to_open(err: &std::io::Error) -> bool {
    match err.raw_os_error() {
        Some(errno) => matches!(
            errno,
            libc::ENOENT
                | libc::ENOTDIR
                | libc::EACCES
                | libc::EPERM
                | libc::ELOOP
                | libc::ENAMETOOLONG
                | libc::EMFILE
                | libc::ENFILE
                | libc::ENXIO
                | libc::ENODEV
                | libc::ENOMEM
        ),
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_open_errors_make_a_stat_file_absent() {
        let errno = std::io::Error::from_raw_os_error;
        assert!(failed_to_open(&errno(libc::ENOENT)));
        assert!(failed_to_open(&errno(libc::EACCES)));
        assert!(!failed_to_open(&errno(libc::EISDIR)));
        assert!(!failed_to_open(&errno(libc::EIO)));
        let missing = std::io::Error::new(std::io::ErrorKind::NotFound, "not recorded");
        assert!(failed_to_open(&missing));
    }
}
