//! Runs that overlap on one physical processor: a dispatch that starts
//! before the previous run there ended (a negative delay, and a traced
//! share above 100 % when they add up). One processor runs one vCPU at a
//! time, so the report says where it saw them and what they mean, rather
//! than showing `-` or an impossible share without a word.

use std::collections::BTreeMap;

/// At most this many processors are named in a note; the rest are counted.
const NAMED: usize = 8;

/// Per processor: the dispatches that overlap the previous run, and
/// whether its traced share is above 100 %.
#[derive(Debug, Default)]
pub struct Overlaps {
    by_processor: BTreeMap<u16, (u64, bool)>,
}

impl Overlaps {
    /// No overlap seen yet.
    pub fn new() -> Overlaps {
        Overlaps::default()
    }

    /// Counts `dispatches` overlapping runs on `processor`, whose traced
    /// share is above 100 % when `over_full`.
    pub fn add(&mut self, processor: u16, dispatches: u64, over_full: bool) {
        if dispatches == 0 && !over_full {
            return;
        }
        let entry = self.by_processor.entry(processor).or_default();
        entry.0 += dispatches;
        entry.1 |= over_full;
    }

    /// The note naming each processor with overlapping runs, or `None`.
    pub fn note(&self) -> Option<String> {
        if self.by_processor.is_empty() {
            return None;
        }
        let mut named: Vec<String> = self
            .by_processor
            .iter()
            .take(NAMED)
            .map(|(processor, &(dispatches, over_full))| {
                let plural = if dispatches == 1 { "" } else { "es" };
                let share = if over_full {
                    ", traced share above 100 %"
                } else {
                    ""
                };
                format!("processor {processor} ({dispatches} dispatch{plural}{share})")
            })
            .collect();
        let more = self.by_processor.len().saturating_sub(NAMED);
        if more > 0 {
            named.push(format!("{more} more processors"));
        }
        Some(format!(
            "runs overlap on {}: a dispatch started before the previous run on its processor \
             ended, which one processor cannot do; the recordings' time bases are offset (KVM \
             guests, partitions moved by Live Partition Mobility) or runs are too long (waits \
             not logged); those delays are negative and left out of the delay figures",
            named.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_overlap_no_note_and_each_processor_named_once() {
        let mut o = Overlaps::new();
        o.add(4, 0, false);
        assert_eq!(o.note(), None);
        o.add(16, 1, false);
        o.add(3, 2, false);
        o.add(16, 1, true);
        let note = o.note().unwrap();
        assert!(
            note.starts_with(
                "runs overlap on processor 3 (2 dispatches), processor 16 (2 dispatches, \
                 traced share above 100 %): "
            ),
            "{note}"
        );
        for p in 100..110 {
            o.add(p, 1, false);
        }
        assert!(
            o.note()
                .unwrap()
                .contains("processor 105 (1 dispatch), 4 more processors:")
        );
    }
}
