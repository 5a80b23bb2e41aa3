//! The rows of a report from the device list: each group's sum of its
//! members, then the devices and groups shown, in order.

use super::super::model::looks_readded;
use super::super::parse::DiskCounters;
use super::{DeviceList, DeviceRow, EntryKind};

impl DeviceList {
    /// Sums each group's members into the group's slot `curr` (every
    /// sample, skipped ones included, as sysstat does). A member counts
    /// towards the `%util` divisor whenever it is present, and is summed
    /// only if it ever did I/O (unless devices were named); devices before
    /// the first group belong to none.
    pub fn compute_groups(&mut self, curr: usize) {
        if !self.has_groups {
            return;
        }
        let mut group: Option<usize> = None;
        let mut acc = DiskCounters::default();
        for pos in 0..=self.order.len() {
            let idx = self.order.get(pos).copied();
            match idx.map(|i| self.entries[i].kind) {
                Some(EntryKind::Device(_)) => {
                    let (Some(g), Some(idx)) = (group, idx) else {
                        continue;
                    };
                    if !self.entries[idx].exists {
                        continue;
                    }
                    let members = &mut self.entries[g].members;
                    *members = members.saturating_add(1);
                    let counters = self.slots.get(curr, idx);
                    if self.rules.unfiltered || counters.has_ios() {
                        acc.accumulate(counters);
                    }
                }
                // The next group, or the end: the group so far is complete.
                Some(EntryKind::Group) | None => {
                    if let Some(g) = group {
                        *self.slots.get_mut(curr, g) = acc;
                        // A group whose members vanished looks "re-added" too.
                        if looks_readded(self.slots.get(curr ^ 1, g), &acc) {
                            self.slots.clear(curr ^ 1, g);
                        }
                    }
                    group = idx;
                    acc = DiskCounters::default();
                }
            }
        }
    }

    /// The rows to display for the sample in slot `curr`, in order, after
    /// sysstat's filters (absent, never used, `-z`, `-H`). A group's row
    /// follows its members; it is filtered as a device is, and left out of
    /// the extended reports while no member was ever present.
    pub fn rows(&self, curr: usize) -> impl Iterator<Item = DeviceRow<'_>> + '_ {
        let mut group: Option<usize> = None;
        let mut pos = 0;
        std::iter::from_fn(move || {
            loop {
                let Some(&idx) = self.order.get(pos) else {
                    let last = group.take()?;
                    if let Some(row) = self.group_row(last, curr) {
                        return Some(row);
                    }
                    continue;
                };
                pos += 1;
                let row = match self.entries[idx].kind {
                    EntryKind::Group => group
                        .replace(idx)
                        .and_then(|done| self.group_row(done, curr)),
                    EntryKind::Device(_) => self.device_row(idx, curr, group.is_some()),
                };
                if row.is_some() {
                    return row;
                }
            }
        })
    }

    /// Device `idx`'s row, unless a filter hides it (`in_group`: under a
    /// `-g`, where `-H` hides it).
    fn device_row(&self, idx: usize, curr: usize, in_group: bool) -> Option<DeviceRow<'_>> {
        let e = &self.entries[idx];
        let (cur, old) = (self.slots.get(curr, idx), self.slots.get(curr ^ 1, idx));
        if !e.exists || (in_group && self.rules.groups_only) || self.hidden(cur, old) {
            return None;
        }
        Some(DeviceRow {
            name: self.display(idx),
            cur,
            prev: old,
            devices: 1,
            devnum: e.devnum,
        })
    }

    /// Group `idx`'s row, unless a filter hides it.
    fn group_row(&self, idx: usize, curr: usize) -> Option<DeviceRow<'_>> {
        let e = &self.entries[idx];
        let (cur, old) = (self.slots.get(curr, idx), self.slots.get(curr ^ 1, idx));
        if (self.rules.extended && e.members == 0) || self.hidden(cur, old) {
            return None;
        }
        Some(DeviceRow {
            name: self.display(idx),
            cur,
            prev: old,
            devices: e.members,
            devnum: None,
        })
    }

    /// sysstat's filters on counters: never used (unless devices were
    /// named), and no I/O in the interval (`-z`).
    fn hidden(&self, cur: &DiskCounters, old: &DiskCounters) -> bool {
        (!self.rules.unfiltered && !cur.has_ios())
            || (self.rules.omit_inactive
                && cur.rd_ios == old.rd_ios
                && cur.wr_ios == old.wr_ios
                && cur.dc_ios == old.dc_ios
                && cur.fl_ios == old.fl_ios)
    }

    /// The name shown for entry `idx`.
    fn display(&self, idx: usize) -> &str {
        self.displays
            .get(&idx)
            .map_or(self.entries[idx].name.of(&self.names), |d| d)
    }
}
