//! The requests in flight, known by device and first sector. Several
//! requests can start at one sector at once (two readers of one file, a
//! queue depth of 16 over a few blocks): each key holds its requests oldest
//! first, and a completion ends the oldest, as a device serving one sector
//! in order does. Only the rare extra requests of a key take a second
//! table, so the usual case costs one hash lookup.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};

use super::hash::FoldHash;
use super::tracker::{Dev, Op};

/// A request's key: its device and first sector.
pub type Key = (Dev, u64);

/// One request in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InFlight {
    /// When it was issued (ns).
    pub issued: u64,
    /// Its length in sectors.
    pub sectors: u64,
    /// Its operation class.
    pub op: Op,
    /// The partition holding its first sector, if known.
    pub part: Option<Dev>,
}

/// Every request in flight, oldest first within a key.
#[derive(Debug, Default)]
pub struct Requests {
    /// The oldest request of each key.
    oldest: HashMap<Key, InFlight, FoldHash>,
    /// The other requests of a key, oldest first (never an empty queue).
    later: HashMap<Key, VecDeque<InFlight>, FoldHash>,
}

impl Requests {
    /// Holds `req` at `key`, after the requests issued before it.
    pub fn hold(&mut self, key: Key, req: InFlight) {
        let first = match self.oldest.entry(key) {
            Entry::Vacant(vacant) => {
                vacant.insert(req);
                return;
            }
            Entry::Occupied(occupied) => occupied.into_mut(),
        };
        let queue = self.later.entry(key).or_default();
        if req.issued < first.issued {
            queue.push_front(std::mem::replace(first, req));
        } else {
            let at = queue.partition_point(|r| r.issued <= req.issued);
            queue.insert(at, req);
        }
    }

    /// Ends and gives the oldest request at `key`.
    pub fn take_oldest(&mut self, key: Key) -> Option<InFlight> {
        let taken = self.oldest.remove(&key)?;
        // Usually no key has a second request: no second lookup then.
        if self.later.is_empty() {
            return Some(taken);
        }
        if let Some(queue) = self.later.get_mut(&key) {
            if let Some(next) = queue.pop_front() {
                self.oldest.insert(key, next);
            }
            if queue.is_empty() {
                self.later.remove(&key);
            }
        }
        Some(taken)
    }

    /// Ends and gives the request at `key` issued at `issued`.
    pub fn take_issued(&mut self, key: Key, issued: u64) -> Option<InFlight> {
        if self.oldest.get(&key)?.issued == issued {
            return self.take_oldest(key);
        }
        let queue = self.later.get_mut(&key)?;
        let at = queue.iter().position(|r| r.issued == issued)?;
        let taken = queue.remove(at);
        if queue.is_empty() {
            self.later.remove(&key);
        }
        taken
    }

    /// Whether a request is held at `key`.
    pub fn holds(&self, key: Key) -> bool {
        self.oldest.contains_key(&key)
    }

    /// How many requests are held at `key`.
    pub fn count(&self, key: Key) -> usize {
        if !self.holds(key) {
            return 0;
        }
        1 + self.later.get(&key).map_or(0, VecDeque::len)
    }

    /// Every request with its key, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (Key, &InFlight)> {
        let oldest = self.oldest.iter().map(|(&k, r)| (k, r));
        let later = self
            .later
            .iter()
            .flat_map(|(&k, q)| q.iter().map(move |r| (k, r)));
        oldest.chain(later)
    }

    /// Forgets every request.
    pub fn clear(&mut self) {
        self.oldest.clear();
        self.later.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: Key = (8 << 20, 64);

    fn req(issued: u64) -> InFlight {
        InFlight {
            issued,
            sectors: 8,
            op: Op::Read,
            part: None,
        }
    }

    #[test]
    fn requests_at_one_sector_end_oldest_first() {
        let mut r = Requests::default();
        r.hold(KEY, req(20));
        r.hold(KEY, req(10));
        r.hold(KEY, req(30));
        r.hold(KEY, req(25));
        r.hold((8 << 20, 72), req(5));
        assert_eq!(r.iter().count(), 5);
        let order: Vec<u64> = std::iter::from_fn(|| r.take_oldest(KEY))
            .map(|q| q.issued)
            .collect();
        assert_eq!(order, [10, 20, 25, 30]);
        assert_eq!(r.iter().count(), 1);
        assert!(r.later.is_empty(), "no empty queue left behind");
    }

    #[test]
    fn a_chosen_request_is_taken_out_of_order() {
        let mut r = Requests::default();
        for t in [10, 20, 30] {
            r.hold(KEY, req(t));
        }
        assert_eq!(r.take_issued(KEY, 20), Some(req(20)));
        assert_eq!(r.take_issued(KEY, 20), None);
        assert_eq!(r.take_issued(KEY, 10), Some(req(10)));
        assert_eq!(r.take_oldest(KEY), Some(req(30)));
        assert_eq!(r.take_oldest(KEY), None);
        assert!(r.oldest.is_empty() && r.later.is_empty());
    }
}
