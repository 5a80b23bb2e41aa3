//! Matching block requests' issue to their completion, per device: the
//! latency of each request (issue to completion, as bcc's biolatency
//! measures it) and the time spent at each queue depth (requests issued
//! and not yet completed). Pure: events in, histograms out.
//!
//! * A request is known by its device and first sector while in flight;
//!   requests at one sector at once end oldest first (`requests`). Such
//!   matches keep their latencies back until the sector holds nothing:
//!   each leaves a request in place, whose completion may be matched so
//!   in turn (`Chain`). Where the request such a match ended was in the
//!   kernel's count, the one left in its place may be found lost even if
//!   issued after the count (`Census`): a sector requested anew every few
//!   ms hands a lost request's place on, always to a request younger than
//!   the last count, and the one found lost in the end leaves the depth
//!   from the chain's first issue on. Which of the chain's requests lost
//!   its completion the events cannot tell: a completion before the
//!   reading that found the loss may be the request's it was matched to
//!   or the next one's, and is counted unmatched; one after it is the
//!   next one's (`Tracker::resolve_chain`).
//! * A partial completion (fewer sectors than issued) leaves the rest in
//!   flight from the next sector on; the latency is taken when the last
//!   part completes.
//! * A requeued request leaves the queue; its next issue starts anew.
//! * Merges happen before issue, so the issued request already covers
//!   the merged ones (one latency for all of them, as biolatency counts).
//! * A request without a sector (a flush) is issued at sector 0 but
//!   completes at the unset position, all ones: the issue and requeue
//!   events report `blk_rq_trace_sector()`, which hides it, the completion
//!   `blk_rq_pos()` (seen for every flush of a virtio-blk disk with a
//!   write-back cache, Linux 6.18). Flushes are held at that position
//!   (`key_of`), apart from data at sector 0 (a file system's
//!   superblock): a completion of data never ends a flush, nor a flush's
//!   a data request.
//! * blk-mq has one flush per hardware queue in flight at most: it issues
//!   a queue's next flush only once the last one completed
//!   (`blk_kick_flush`). A flush issued while a disk holds as many
//!   ([`Tracker::set_flush_slots`]) means the oldest one's completion was
//!   not delivered: it is forgotten then. Held on, it would take the next
//!   flush's completion, and that one the following one's, each flush
//!   timed from the issue of the one before, the depth one higher, for as
//!   long as flushes kept coming (it never grew old enough to expire).
//! * A completion without an issue (issued before tracing began, or its
//!   issue lost) is counted as unmatched and changes nothing else; one of
//!   no data at a set position is not even counted, and ends no request:
//!   `fsync`'s pre-flush write (`WS 0 + 0`) completes so without ever
//!   being issued, once per `fsync` (the block layer sends the device a
//!   flush instead, which may still be in flight).
//! * An issue whose completion never arrives (perf does not deliver every
//!   sample, see README.md) would hold the depth up for ever:
//!   [`Tracker::trim_in_flight`] forgets such requests once the kernel's
//!   own count of their direction (reads, or writes) says they are gone.
//!   The requests that left the queue since
//!   that count was read still count as in flight then
//!   ([`Tracker::count_from`]): without them, at a high rate, the count
//!   was compared with the few requests old enough to have been in it,
//!   and lost requests stayed held until they outnumbered the queue.
//! * With a partition table ([`Tracker::set_partitions`]), a request is
//!   also counted for the partition holding its first sector.

use std::collections::{HashMap, HashSet};

use super::depth::DepthLine;
use super::hash::FoldHash;
use super::histogram::Histogram;
use super::requests::{InFlight, Key, Requests};

/// A request no kernel count vouches for (a flush, or any request of a
/// disk without a count) held this long has been completed or timed out
/// (the block layer's default request timeout, `queue/io_timeout`, is
/// 30 s): its completion was not delivered. Nothing tells sooner (see
/// [`Tracker::trim_in_flight`]). Drivers without a timeout handler
/// (virtio-blk, loop) let a request run longer: its completion, if it
/// comes, is unmatched.
pub const STALE: u64 = 30_000_000_000;

/// The operation classes `-x` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Reads.
    Read = 0,
    /// Writes.
    Write = 1,
    /// Discards (and secure erases).
    Discard = 2,
    /// Flushes.
    Flush = 3,
}

/// Number of [`Op`]s.
pub const OPS: usize = 4;

impl Op {
    /// The class of a tracepoint's `rwbs` text (`blk_fill_rwbs`): an
    /// optional `F` (pre-flush), then the operation letter.
    pub fn from_rwbs(rwbs: &[u8]) -> Option<Op> {
        let letter = |b: u8| match b {
            b'R' => Some(Op::Read),
            b'W' => Some(Op::Write),
            b'D' => Some(Op::Discard),
            b'F' => Some(Op::Flush),
            _ => None,
        };
        match rwbs {
            // A pre-flush before an operation of no class followed.
            [b'F', b'N', ..] => None,
            [b'F', second, ..] if letter(*second).is_some() => letter(*second),
            [first, ..] => letter(*first),
            [] => None,
        }
    }

    /// Which of the kernel's in-flight counts ([`KernelCount`]) holds a
    /// request of this class: reads the first, writes and discards (the
    /// kernel counts every operation that changes the disk as a write) the
    /// second, flushes neither (they carry no I/O statistics).
    fn direction(self) -> Option<usize> {
        match self {
            Op::Read => Some(0),
            Op::Write | Op::Discard => Some(1),
            Op::Flush => None,
        }
    }
}

/// The kernel's count of a disk's requests in flight: reads, then writes
/// (`/sys/dev/block/M:m/inflight`).
pub type KernelCount = [u64; 2];

/// A kernel `dev_t` as the block tracepoints record it (major << 20 | minor).
pub type Dev = u32;

/// The `(major, minor)` of a kernel `dev_t`.
pub fn dev_numbers(dev: Dev) -> (u32, u32) {
    (dev >> 20, dev & 0xf_ffff)
}

/// The kernel `dev_t` of `(major, minor)`.
pub fn dev_of(major: u32, minor: u32) -> Dev {
    (major << 20) | (minor & 0xf_ffff)
}

/// One device's histograms for an interval.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceHistograms {
    /// Latency in ns, per [`Op`].
    pub latency: [Histogram; OPS],
    /// Nanoseconds spent at each queue depth.
    pub depth: Histogram,
}

#[derive(Debug, Clone)]
struct DeviceState {
    line: DepthLine,
    hist: DeviceHistograms,
    /// Latencies of requests completed after the horizon
    /// ([`Tracker::set_horizon`]): the next interval's.
    later: [Histogram; OPS],
}

/// One partition: its disk's first sector and length, and its own number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partition {
    /// First sector on the disk.
    pub start: u64,
    /// Length in sectors.
    pub sectors: u64,
    /// The partition's `dev_t`.
    pub dev: Dev,
}

/// A comparison with one reading of a disk's in-flight count under way:
/// the kernel counted after `before` and before `after`, so each request
/// issued before `before` that leaves the queue after `after` was in that
/// count, in its direction (`Op::direction`), if the kernel counts its
/// kind.
#[derive(Debug, Clone, Default)]
struct Census {
    before: u64,
    after: u64,
    /// Such requests that left the queue so far, reads and writes.
    left: KernelCount,
    /// Where (and in which direction) such a request left by a completion
    /// matched to it as the oldest of several at its sector, and when the
    /// first of them is taken to have been issued (`Tracker::age_of`): if
    /// its own completion was lost, the request left in its place stands
    /// for it (see [`Tracker::trim_in_flight`]).
    stand_ins: HashMap<(Key, usize), u64, FoldHash>,
}

/// A completion matched to the oldest of several requests at its sector.
#[derive(Debug, Clone, Copy)]
struct Link {
    /// The request it was matched to.
    taken: InFlight,
    /// When it completed.
    completed: u64,
}

/// The completions at one sector each matched to the oldest of several
/// requests held there, each match leaving the next request in place.
/// If one of those requests' completion was lost, every completion after
/// it was the next request's. Its latencies wait until the sector holds
/// nothing (no completion was lost: the matches stand), or the request
/// in place is found lost ([`Tracker::resolve_chain`]), or the interval
/// ends (they stand, as matched: a report cannot wait). Its start is
/// kept across reports for as long as a request is in place.
#[derive(Debug, Clone, Default)]
struct Chain {
    /// When its first request was issued: a request held at the sector
    /// when the last match was made stands for it ([`Tracker::age_of`]).
    since: u64,
    /// When the last match was made.
    last: u64,
    /// Its matches not yet in the histograms, oldest first.
    links: Vec<Link>,
}

/// The state of every device seen since tracing began.
#[derive(Debug, Default)]
pub struct Tracker {
    inflight: Requests,
    censuses: HashMap<Dev, Census, FoldHash>,
    chains: HashMap<Key, Chain, FoldHash>,
    devices: HashMap<Dev, DeviceState, FoldHash>,
    partitions: HashMap<Dev, Vec<Partition>>,
    interval_start: u64,
    /// Requests completed after this are the next interval's latencies
    /// ([`Tracker::set_horizon`]).
    horizon: Option<u64>,
    /// Completions without an issue in this interval, or whose request is
    /// not known (a completion at a sector with a lost one, see the module
    /// doc).
    pub unmatched: u64,
    /// The same completions per device, disk and partition, since the
    /// last [`Tracker::take_unmatched`].
    unmatched_by_device: HashMap<Dev, u64, FoldHash>,
    /// Per device, disk or partition, the requests found lost since the
    /// last [`Tracker::take_undelivered`]: their completions never
    /// arrived.
    undelivered: HashMap<Dev, u64, FoldHash>,
    /// Per disk, how many flushes it can have in flight at once, `None`
    /// where not known ([`Tracker::set_flush_slots`]).
    flush_slots: HashMap<Dev, Option<u64>, FoldHash>,
}

impl Tracker {
    /// A tracker whose first interval starts at `now` (ns).
    pub fn new(now: u64) -> Tracker {
        Tracker {
            interval_start: now,
            ..Tracker::default()
        }
    }

    /// Ends this interval's latencies at `horizon`: the latency of a
    /// request completed after it goes to the next interval's histograms
    /// (until [`Tracker::take`], which sets no horizon again). A report
    /// sets it where it read the kernel's counters, so that its histograms
    /// hold the requests those counters count, whatever the events fed in
    /// until it takes them.
    pub fn set_horizon(&mut self, horizon: u64) {
        self.horizon = Some(horizon);
    }

    /// Sets the partitions of each disk (replacing the previous table).
    pub fn set_partitions(&mut self, table: HashMap<Dev, Vec<Partition>>) {
        self.partitions = table;
    }

    /// Sets how many flushes `disk` can have in flight at once: one per
    /// hardware queue (blk-mq issues a queue's next flush only once its
    /// last one completed), `None` if not known (no limit then). A flush
    /// issued while the disk holds as many forgets the oldest of them: its
    /// completion was not delivered (see the module doc).
    pub fn set_flush_slots(&mut self, disk: Dev, slots: Option<u64>) {
        self.flush_slots.insert(disk, slots);
    }

    /// Whether [`Tracker::set_flush_slots`] was told about `disk` since it
    /// last went idle.
    pub fn knows_flush_slots(&self, disk: Dev) -> bool {
        self.flush_slots.contains_key(&disk)
    }

    fn partition_of(&self, dev: Dev, sector: u64) -> Option<Dev> {
        self.partitions
            .get(&dev)?
            .iter()
            .find_map(|p| (sector >= p.start && sector - p.start < p.sectors).then_some(p.dev))
    }

    /// Moves `dev`'s depth clock to `now` and changes its depth by `delta`.
    fn step(&mut self, dev: Dev, now: u64, delta: i64) {
        let start = self.interval_start;
        let d = self.devices.entry(dev).or_insert_with(|| DeviceState {
            line: DepthLine::new(start),
            hist: DeviceHistograms::default(),
            later: Default::default(),
        });
        d.line.step(now, delta);
    }

    /// Adds the depth of `dev` before `horizon` to its histogram.
    fn settle(&mut self, dev: Dev, horizon: u64) {
        if let Some(d) = self.devices.get_mut(&dev) {
            d.line.settle(horizon, &mut d.hist.depth);
        }
    }

    /// The partitions of `disk` known from the table.
    fn partitions_of(&self, disk: Dev) -> impl Iterator<Item = Dev> + '_ {
        self.partitions
            .get(&disk)
            .into_iter()
            .flatten()
            .map(|p| p.dev)
    }

    /// Adds the depth before `horizon` of every device no comparison with
    /// the kernel's count is under way for to its histogram. A request
    /// such a device holds may still be found lost later (a flush, or any
    /// request of a disk without a readable count, once held [`STALE`]):
    /// it then leaves only the depth not yet added.
    pub fn settle_unread(&mut self, horizon: u64) {
        let read: HashSet<Dev, FoldHash> = self
            .censuses
            .keys()
            .flat_map(|&disk| std::iter::once(disk).chain(self.partitions_of(disk)))
            .collect();
        for (dev, d) in self.devices.iter_mut() {
            if !read.contains(dev) {
                d.line.settle(horizon, &mut d.hist.depth);
            }
        }
    }

    fn each_target(dev: Dev, part: Option<Dev>) -> impl Iterator<Item = Dev> {
        std::iter::once(dev).chain(part)
    }

    /// `block_rq_issue` at `now`.
    pub fn issue(&mut self, now: u64, dev: Dev, sector: u64, sectors: u64, op: Op) {
        let key = key_of(dev, sector, op);
        if op == Op::Flush {
            self.forget_flushes_beyond_slots(now, dev, key);
        }
        let part = self.partition_of(dev, sector);
        let req = InFlight {
            issued: now,
            sectors,
            op,
            part,
        };
        self.inflight.hold(key, req);
        for t in Self::each_target(dev, part) {
            self.step(t, now, 1);
        }
    }

    /// Before a flush of `dev`, held at `key`, is issued at `now`: forgets
    /// the oldest flushes held until there is a slot for it (see
    /// [`Tracker::set_flush_slots`]).
    fn forget_flushes_beyond_slots(&mut self, now: u64, dev: Dev, key: Key) {
        let Some(&Some(slots)) = self.flush_slots.get(&dev) else {
            return;
        };
        while self.inflight.count(key) as u64 >= slots.max(1) {
            let Some(req) = self.inflight.take_oldest(key) else {
                break;
            };
            self.forget(now, dev, key, &req);
        }
    }

    /// Forgets `req` of `dev`, already taken from `key`: its completion was
    /// not delivered. As [`Tracker::trim_in_flight`] does, it leaves the
    /// depth not yet in the histograms from its issue on and counts as
    /// undelivered, for the disk and its partition.
    fn forget(&mut self, now: u64, dev: Dev, key: Key, req: &InFlight) {
        let since = self.age_of(key, req.issued);
        for t in Self::each_target(dev, req.part) {
            self.step(t, now, -1);
            *self.undelivered.entry(t).or_default() += 1;
            if let Some(d) = self.devices.get_mut(&t) {
                d.line.unhold(&[since]);
            }
        }
        self.resolve_chain(dev, key, req, now);
    }

    /// `block_rq_complete` at `now` of `sectors` sectors from `sector`.
    pub fn complete(&mut self, now: u64, dev: Dev, sector: u64, sectors: u64) {
        // No data at a position (a flush's is unset): fsync's pre-flush
        // write, which is never issued, so it ends no request.
        if sectors == 0 && sector != u64::MAX {
            return;
        }
        // A data completion is at its request's first sector, a flush's
        // at the unset position, where flushes are held: no other kind.
        let Some(req) = self.inflight.take_oldest((dev, sector)) else {
            // A flush's unset position is in no partition.
            let part = self.partition_of(dev, sector);
            self.count_unmatched(dev, part);
            return;
        };
        if sectors > 0 && sectors < req.sectors {
            let rest = InFlight {
                sectors: req.sectors - sectors,
                ..req
            };
            self.inflight.hold((dev, sector + sectors), rest);
            return;
        }
        let counted = self.note_leaving(now, dev, &req);
        for t in Self::each_target(dev, req.part) {
            self.step(t, now, -1);
        }
        let key = (dev, sector);
        if !self.stands_in(key, req.issued) {
            // It left the place of the chain's last match, if any, with
            // its own completion: none of the chain's was lost.
            self.end_chain(key);
        }
        let since = self.age_of(key, req.issued);
        if self.inflight.holds(key) {
            if counted
                && let Some(c) = self.censuses.get_mut(&dev)
                && let Some(direction) = req.op.direction()
            {
                let first = c.stand_ins.entry((key, direction)).or_insert(since);
                *first = (*first).min(since);
            }
            let chain = self.chains.entry(key).or_insert_with(|| Chain {
                since,
                ..Chain::default()
            });
            chain.last = now;
            chain.links.push(Link {
                taken: req,
                completed: now,
            });
        } else {
            self.end_chain(key);
            self.add_latency(dev, &req, now);
        }
    }

    /// Adds the latency of `req` of `dev`, completed at `completed`, to
    /// the histograms of the device and of its partition: this interval's,
    /// or the next one's after the horizon ([`Tracker::set_horizon`]).
    fn add_latency(&mut self, dev: Dev, req: &InFlight, completed: u64) {
        let latency = completed.saturating_sub(req.issued);
        let later = self.horizon.is_some_and(|horizon| completed > horizon);
        for t in Self::each_target(dev, req.part) {
            if let Some(d) = self.devices.get_mut(&t) {
                let histograms = if later {
                    &mut d.later
                } else {
                    &mut d.hist.latency
                };
                histograms[req.op as usize].add(latency, 1);
            }
        }
    }

    /// Adds the latencies of the chain at `key`, if any, as they were
    /// matched, and ends it: the request left in place completed.
    fn end_chain(&mut self, key: Key) {
        // Usually there is none: no lookup then.
        if self.chains.is_empty() {
            return;
        }
        if let Some(chain) = self.chains.remove(&key) {
            for link in chain.links {
                self.add_latency(key.0, &link.taken, link.completed);
            }
        }
    }

    /// Whether the request `issued` at `key` is in the place of the last
    /// match of a chain there: it was held when that match was made.
    fn stands_in(&self, key: Key, issued: u64) -> bool {
        !self.chains.is_empty() && self.chains.get(&key).is_some_and(|c| c.last >= issued)
    }

    /// When the request `issued` at `key` is taken to have been issued, to
    /// pick the oldest held: in the place of a chain's last match, as old
    /// as the chain's first request (a sector requested anew every few ms
    /// hands a lost request's place on from request to request: its depth
    /// is one too high from the lost one's issue on, not from the last
    /// one's predecessor's), across reports.
    fn age_of(&self, key: Key, issued: u64) -> u64 {
        if self.chains.is_empty() {
            return issued;
        }
        match self.chains.get(&key) {
            Some(c) if c.last >= issued => c.since.min(issued),
            _ => issued,
        }
    }

    /// `req` of `dev`, held at `key`, is found lost, its completion due
    /// before `proven`. If it was in the place of a chain's last match,
    /// one of the chain's requests lost its completion, but the events do
    /// not tell which: each completion before the lost one's was the
    /// request's it was matched to, each after it the next request's, and
    /// any of them fits the order the completions came in and every
    /// issue. A completion after `proven` came after the lost one's, so
    /// it was the next request's (the next match's, or `req`'s for the
    /// last): its latency is added so. One before is counted unmatched, a
    /// completion whose request is not known. The chain ends; its matches
    /// already in a report's histograms stay there.
    fn resolve_chain(&mut self, dev: Dev, key: Key, req: &InFlight, proven: u64) {
        if !self.stands_in(key, req.issued) {
            return;
        }
        let Some(chain) = self.chains.remove(&key) else {
            return;
        };
        let next = chain.links.iter().skip(1).map(|l| l.taken);
        for (link, next) in chain.links.iter().zip(next.chain([*req])) {
            if link.completed > proven {
                self.add_latency(dev, &next, link.completed);
            } else {
                self.count_unmatched(dev, link.taken.part);
            }
        }
    }

    /// Counts a completion of `dev` (and of its partition `part`) whose
    /// request is not known.
    fn count_unmatched(&mut self, dev: Dev, part: Option<Dev>) {
        self.unmatched += 1;
        for t in Self::each_target(dev, part) {
            *self.unmatched_by_device.entry(t).or_default() += 1;
        }
    }

    /// `block_rq_requeue` at `now` of a request of `op`: it leaves the
    /// queue.
    pub fn requeue(&mut self, now: u64, dev: Dev, sector: u64, op: Op) {
        let key = key_of(dev, sector, op);
        if let Some(req) = self.inflight.take_oldest(key) {
            self.end_chain(key);
            self.note_leaving(now, dev, &req);
            for t in Self::each_target(dev, req.part) {
                self.step(t, now, -1);
            }
        }
    }

    /// Counts a request of `dev` leaving the queue at `now` for the
    /// comparison under way, if it was in the kernel's count; whether it
    /// was.
    fn note_leaving(&mut self, now: u64, dev: Dev, req: &InFlight) -> bool {
        if let Some(c) = self.censuses.get_mut(&dev)
            && let Some(direction) = req.op.direction()
            && req.issued < c.before
            && now > c.after
        {
            c.left[direction] += 1;
            return true;
        }
        false
    }

    /// The disks whose kernel count is worth reading at `now`: those
    /// holding a request the kernel counts (not a flush) issued before
    /// `before`, the only ones [`Tracker::trim_in_flight`] can compare,
    /// and those holding a flush older than [`STALE`].
    pub fn in_flight_disks(&self, now: u64, before: u64) -> Vec<Dev> {
        let flush_stale = now.saturating_sub(STALE);
        let mut disks: Vec<Dev> = self
            .inflight
            .iter()
            .filter(|(_, req)| match req.op {
                Op::Flush => req.issued < flush_stale,
                _ => req.issued < before,
            })
            .map(|((dev, _), _)| dev)
            .collect();
        disks.sort_unstable();
        disks.dedup();
        disks
    }

    /// Starts the comparison of `dev` with a reading of its kernel count
    /// taken after `before` and before `after` (see
    /// [`Tracker::trim_in_flight`]).
    pub fn count_from(&mut self, dev: Dev, before: u64, after: u64) {
        let census = Census {
            before,
            after,
            ..Census::default()
        };
        self.censuses.insert(dev, census);
    }

    /// Given `kernel`, the kernel's count of `dev`'s reads and writes in
    /// flight read as [`Tracker::count_from`] said, and every event up to
    /// the end of that read fed in since: each request issued before that
    /// read's `before` was in flight when the kernel counted if it is still
    /// held or left the queue after `after`, unless its completion was not
    /// delivered. In each direction (`Op::direction`: a discard is a
    /// write) forgets the oldest held of them beyond its count, so a lost
    /// read never takes an older write still running with it; oldest by
    /// `age_of` (a request a completion matched to an older one may stand
    /// for is as old as that one). The kernel's count may be larger: it
    /// also counts requests not yet issued on some kernels, kinds the
    /// tracker leaves out (`N` in `rwbs`), and those issued or left close
    /// to the reading. Flushes are in neither count (they carry no I/O
    /// statistics), and without a reading (`count_from` not called: the
    /// disk keeps no I/O statistics, its count is unreadable) no request
    /// is: one of those held since before `now - STALE` is forgotten. A
    /// forgotten request leaves the depth not yet in the histograms from
    /// its issue on (from the first issue of the chain whose last match
    /// left it in place, if any: its completions are sorted out by
    /// `Tracker::resolve_chain`, a lost one due before the reading's
    /// `after`, or `now` without a reading); then the depth of `dev` and
    /// of its partitions before the reading's `before` (`now` without a
    /// reading) is added to them.
    /// Returns how many were forgotten; each also counts as undelivered
    /// for `dev` and for its partition ([`Tracker::take_undelivered`]).
    pub fn trim_in_flight(&mut self, now: u64, dev: Dev, kernel: KernelCount) -> u64 {
        let census = self.censuses.remove(&dev);
        let counts = census.is_some();
        let Census {
            before,
            after,
            left,
            stand_ins,
        } = census.unwrap_or_default();
        // Without a count, nothing found lost later can be told either.
        let horizon = if counts { before } else { now };
        let stale = now.saturating_sub(STALE);
        // Per direction, the requests that may be the lost ones: (key,
        // issue, since when they count as held), and how many were held
        // then.
        let mut candidates: [Vec<(Key, u64, u64)>; 2] = Default::default();
        let mut held_then = [0u64; 2];
        // Found lost: (key, issue, since when held, when its completion
        // was due at the latest).
        let mut gone: Vec<(Key, u64, u64, u64)> = Vec::new();
        for (key, req) in self.inflight.iter().filter(|((d, _), _)| *d == dev) {
            // The kernel's count it is in, if one was read.
            match req.op.direction().filter(|_| counts) {
                Some(direction) if req.issued < before => {
                    held_then[direction] += 1;
                    let since = self.age_of(key, req.issued);
                    candidates[direction].push((key, req.issued, since));
                }
                // Left in the place of a request counted in `left`: if the
                // count finds that one was gone, its completion was lost
                // and this one's was taken for it, or for the one before
                // it in turn (a sector requested anew every few ms).
                Some(direction) => {
                    if let Some(&since) = stand_ins.get(&(key, direction)) {
                        candidates[direction].push((key, req.issued, since));
                    }
                }
                None if req.issued < stale => {
                    gone.push((key, req.issued, self.age_of(key, req.issued), now))
                }
                None => {}
            }
        }
        for (direction, mut held) in candidates.into_iter().enumerate() {
            let in_flight_then = held_then[direction].saturating_add(left[direction]);
            let surplus = in_flight_then.saturating_sub(kernel[direction]) as usize;
            held.sort_unstable_by_key(|&(_, issued, since)| (since, issued));
            let lost = held.into_iter().take(surplus);
            gone.extend(lost.map(|(key, issued, since)| (key, issued, since, after)));
        }
        let mut forgotten = 0;
        let mut lost: HashMap<Dev, Vec<u64>, FoldHash> = HashMap::default();
        // Found lost, each held the depth from its issue on, or, in the
        // place of a chain's last match, the chain's first request did
        // from its own.
        for (key, issued, since, proven) in gone {
            if let Some(req) = self.inflight.take_issued(key, issued) {
                for t in Self::each_target(dev, req.part) {
                    self.step(t, now, -1);
                    lost.entry(t).or_default().push(since);
                }
                self.resolve_chain(dev, key, &req, proven);
                forgotten += 1;
            }
        }
        for (t, mut issued) in lost {
            *self.undelivered.entry(t).or_default() += issued.len() as u64;
            issued.sort_unstable();
            if let Some(d) = self.devices.get_mut(&t) {
                d.line.unhold(&issued);
            }
        }
        let parts: Vec<Dev> = self.partitions_of(dev).collect();
        for t in std::iter::once(dev).chain(parts) {
            self.settle(t, horizon);
        }
        forgotten
    }

    /// Per device (disk or partition), the requests found lost since the
    /// last call, in no order; those without any are left out.
    pub fn take_undelivered(&mut self) -> Vec<(Dev, u64)> {
        self.undelivered.drain().collect()
    }

    /// Per device (disk or partition), the completions counted in
    /// [`Tracker::unmatched`] since the last call, in no order; those
    /// without any are left out.
    pub fn take_unmatched(&mut self) -> Vec<(Dev, u64)> {
        self.unmatched_by_device.drain().collect()
    }

    /// Forgets every request in flight (after the kernel dropped samples:
    /// their completions may be among the lost, and a request kept for
    /// ever would hold the queue depth up). Their completions, if they
    /// come, count as unmatched.
    pub fn forget_in_flight(&mut self, now: u64) {
        let devs: Vec<Dev> = self.devices.keys().copied().collect();
        for dev in devs {
            self.step(dev, now, 0);
        }
        for d in self.devices.values_mut() {
            d.line.inflight = 0;
        }
        self.inflight.clear();
        self.censuses.clear();
        self.settle_links();
        self.chains.clear();
    }

    /// Adds the latencies of every chain's matches not yet in the
    /// histograms as they were matched (a report cannot wait for them);
    /// the chains go on, from their first requests.
    fn settle_links(&mut self) {
        let mut links = Vec::new();
        for (&(dev, _), chain) in self.chains.iter_mut() {
            links.extend(chain.links.drain(..).map(|link| (dev, link)));
        }
        for (dev, link) in links {
            self.add_latency(dev, &link.taken, link.completed);
        }
    }

    /// Ends the interval at `now`: every device's histograms since the
    /// last call (devices idle all along have depth 0 the whole time),
    /// sorted by device. Of events after `now` already fed in, the depth
    /// from `now` on stays for the next interval (their latencies are in
    /// this one unless they completed after the horizon, which ends here).
    /// Devices with nothing in flight and nothing left for the next
    /// interval are forgotten, so a vanished device costs nothing.
    pub fn take(&mut self, now: u64) -> Vec<(Dev, DeviceHistograms)> {
        self.settle_links();
        let inflight = &self.inflight;
        self.chains.retain(|&key, _| inflight.holds(key));
        let devs: Vec<Dev> = self.devices.keys().copied().collect();
        for dev in devs {
            self.step(dev, now, 0);
            self.settle(dev, now);
        }
        let mut out: Vec<(Dev, DeviceHistograms)> = self
            .devices
            .iter_mut()
            .map(|(&dev, d)| {
                let taken = std::mem::take(&mut d.hist);
                d.hist.latency = std::mem::take(&mut d.later);
                (dev, taken)
            })
            .collect();
        self.devices
            .retain(|_, d| !d.line.is_idle() || d.hist.latency.iter().any(|h| h.total > 0));
        self.horizon = None;
        // A disk gone and another at its number may have other queues.
        let devices = &self.devices;
        self.flush_slots.retain(|dev, _| devices.contains_key(dev));
        self.interval_start = now;
        self.unmatched = 0;
        out.sort_by_key(|&(dev, _)| dev);
        out
    }
}

/// Where a request of `op` that an issue or requeue event reports at
/// `sector` is held: a data request at its first sector, a flush (reported
/// at 0, see the module doc) at the unset position its completion reports.
fn key_of(dev: Dev, sector: u64, op: Op) -> Key {
    match op {
        Op::Flush => (dev, u64::MAX),
        _ => (dev, sector),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const SDA: Dev = 8 << 20;

    fn one(t: &mut Tracker, now: u64, dev: Dev) -> DeviceHistograms {
        let all = t.take(now);
        all.into_iter().find(|&(d, _)| d == dev).expect("device").1
    }

    #[test]
    fn requests_the_kernel_no_longer_counts_are_trimmed_oldest_first() {
        let mut t = Tracker::new(0);
        // Three requests issued before the kernel counted two, one after.
        t.issue(MS, SDA, 100, 8, Op::Write);
        t.issue(2 * MS, SDA, 200, 8, Op::Write);
        t.issue(3 * MS, SDA, 300, 8, Op::Write);
        t.issue(12 * MS, SDA, 400, 8, Op::Write);
        assert_eq!(t.in_flight_disks(20 * MS, 10 * MS), vec![SDA]);
        // All three were in flight when the kernel counted two, unless a
        // completion was lost: one was, the oldest is forgotten. The one
        // issued after is not compared.
        t.count_from(SDA, 10 * MS, 11 * MS);
        assert_eq!(t.trim_in_flight(20 * MS, SDA, [0, 2]), 1);
        assert_eq!(
            t.trim_in_flight(20 * MS, SDA, [0, 0]),
            0,
            "no reading, no trim"
        );
        t.complete(21 * MS, SDA, 100, 8);
        assert_eq!(t.unmatched, 1, "the oldest was forgotten");
        t.complete(21 * MS, SDA, 300, 8);
        assert_eq!(t.unmatched, 1, "the third is still held");
        // The kernel counting more than is held (requests not yet issued,
        // or of kinds not tracked) forgets nothing.
        t.count_from(SDA, 22 * MS, 22 * MS);
        assert_eq!(t.trim_in_flight(22 * MS, SDA, [0, 5]), 0);
        t.count_from(SDA, 22 * MS, 22 * MS);
        assert_eq!(t.trim_in_flight(22 * MS, SDA, [0, 0]), 2);
        // A forgotten request leaves the depth from its issue on, back to
        // the last count that did not find it lost: 100 from 1 ms (four
        // were held from 12 to 20 ms, three were in flight), 200 and 400
        // only from 22 ms, as the count of 5 then covered them.
        let h = one(&mut t, 30 * MS, SDA);
        assert_eq!(h.depth.max, 3);
        assert_eq!(h.latency[1].total, 1);
        assert_eq!(h.depth.total, 30 * MS);
        assert_eq!(h.depth.quantile_high(0.6), Some(2));
        assert_eq!(h.depth.quantile_high(1.0), Some(3));
        assert!(t.take(40 * MS).is_empty(), "nothing left in flight");
    }

    #[test]
    fn a_slow_write_is_not_forgotten_for_a_younger_lost_read() {
        // A write in flight for 29 ms; a read issued after it loses its
        // completion. The kernel counts 0 reads and 1 write in flight: the
        // read is the one lost, though the write is the oldest held.
        let mut t = Tracker::new(0);
        t.issue(MS, SDA, 1000, 8, Op::Write);
        t.issue(5 * MS, SDA, 64, 8, Op::Read); // completion lost
        t.count_from(SDA, 10 * MS, 10 * MS);
        assert_eq!(t.trim_in_flight(12 * MS, SDA, [0, 1]), 1);
        t.complete(30 * MS, SDA, 1000, 8);
        assert_eq!(t.unmatched, 0, "the write was still held");
        let h = one(&mut t, 40 * MS, SDA);
        assert_eq!(h.latency[Op::Write as usize].total, 1);
        assert_eq!(h.latency[Op::Write as usize].max, 29 * MS);
        assert_eq!(h.latency[Op::Read as usize].total, 0);
        assert!(t.take(50 * MS).is_empty(), "the read was forgotten");
    }

    #[test]
    fn a_discard_is_compared_with_the_kernels_writes_a_flush_with_neither() {
        // A read, a discard whose completion was lost and a flush held;
        // the kernel counts 1 read and 0 writes in flight.
        let mut t = Tracker::new(0);
        t.issue(MS, SDA, 64, 8, Op::Read);
        t.issue(2 * MS, SDA, 4096, 2048, Op::Discard); // completion lost
        t.issue(3 * MS, SDA, 0, 0, Op::Flush);
        t.count_from(SDA, 10 * MS, 10 * MS);
        assert_eq!(t.trim_in_flight(12 * MS, SDA, [1, 0]), 1);
        t.complete(20 * MS, SDA, 64, 8);
        t.complete(21 * MS, SDA, u64::MAX, 0);
        assert_eq!(t.unmatched, 0, "the read and the flush were held");
        t.complete(22 * MS, SDA, 4096, 2048);
        assert_eq!(t.unmatched, 1, "the discard was forgotten");
    }

    #[test]
    fn a_write_that_left_after_the_reading_was_in_the_kernels_writes() {
        // The kernel counted a read and a write; the write completes after
        // the reading: both counts are met, the read still held is live.
        let mut t = Tracker::new(0);
        t.issue(MS, SDA, 64, 8, Op::Read);
        t.issue(2 * MS, SDA, 128, 8, Op::Write);
        t.count_from(SDA, 10 * MS, 10 * MS);
        t.complete(11 * MS, SDA, 128, 8);
        assert_eq!(t.trim_in_flight(12 * MS, SDA, [1, 1]), 0);
        t.complete(13 * MS, SDA, 64, 8);
        assert_eq!(t.unmatched, 0);
    }

    #[test]
    fn requests_that_left_after_the_reading_were_in_the_kernels_count() {
        const US: u64 = 1_000;
        let mut t = Tracker::new(0);
        // A busy disk: by the time the events up to the reading are in,
        // the requests it counted have completed. Of three issued before
        // it, 300's completion was lost: the kernel counted two.
        t.issue(8 * MS, SDA, 100, 8, Op::Read);
        t.issue(9 * MS, SDA, 200, 8, Op::Read);
        t.issue(9 * MS, SDA, 300, 8, Op::Read);
        t.issue(9 * MS, SDA, 0, 0, Op::Flush);
        t.count_from(SDA, 9_900 * US, 10_100 * US);
        t.issue(10 * MS, SDA, 400, 8, Op::Read);
        t.complete(10_500 * US, SDA, 100, 8);
        t.requeue(10_600 * US, SDA, 200, Op::Read);
        t.complete(10_700 * US, SDA, u64::MAX, 0);
        t.complete(10_800 * US, SDA, 400, 8);
        assert_eq!(t.trim_in_flight(12 * MS, SDA, [2, 0]), 1);
        t.complete(13 * MS, SDA, 300, 8);
        assert_eq!(t.unmatched, 1, "300 was forgotten");
        // A request that left before `after` may have left before the
        // kernel counted: it is not counted in flight then.
        t.issue(20 * MS, SDA, 500, 8, Op::Read);
        t.issue(20 * MS, SDA, 600, 8, Op::Read);
        t.count_from(SDA, 21 * MS, 22 * MS);
        t.complete(21_500 * US, SDA, 500, 8);
        assert_eq!(t.trim_in_flight(23 * MS, SDA, [1, 0]), 0, "600 is the one");
        assert_eq!(t.in_flight_disks(23 * MS, 23 * MS), vec![SDA]);
    }

    #[test]
    fn requests_found_lost_never_raise_the_depth() {
        // A burst of 100 completions lost: found at the next count, they
        // are out of the depth they were held in, and of its maximum.
        let mut t = Tracker::new(0);
        for i in 0..100 {
            t.issue(2 * MS, SDA, 1000 + 8 * i, 8, Op::Read);
        }
        t.issue(9 * MS, SDA, 8, 8, Op::Read);
        t.count_from(SDA, 10 * MS, 10 * MS);
        assert_eq!(t.trim_in_flight(12 * MS, SDA, [1, 0]), 100);
        t.complete(15 * MS, SDA, 8, 8);
        let h = one(&mut t, 20 * MS, SDA);
        assert_eq!(h.depth.max, 1);
        assert_eq!(h.depth.total, 20 * MS);
        assert_eq!(h.latency[0].total, 1);
        assert_eq!(h.latency[0].max, 6 * MS);
    }

    /// Reads of sector 64 issued at 1 and 5 ms, the first one's completion
    /// lost: the second's (6 ms) is matched to the first, and the count
    /// read at 10 ms (none in flight) finds the one left in its place lost.
    fn first_read_of_64_lost_behind_a_second() -> Tracker {
        let mut t = Tracker::new(0);
        t.issue(MS, SDA, 64, 8, Op::Read);
        t.issue(5 * MS, SDA, 64, 8, Op::Read);
        t.complete(6 * MS, SDA, 64, 8);
        t.count_from(SDA, 10 * MS, 10 * MS);
        assert_eq!(t.trim_in_flight(12 * MS, SDA, [0, 0]), 1);
        t
    }

    #[test]
    fn a_completion_that_may_be_either_of_two_requests_is_counted_unmatched() {
        // Reads of 64 issued at 1 and 5 ms, one completion at 6 ms, none
        // in flight at the count read at 10 ms: either the first read's
        // completion was lost and the second took 1 ms, or the first took
        // 5 ms and the second's was lost (completed between 6 and 10 ms,
        // after the first, as the sector's requests end). Nothing tells
        // which: the completion counts as unmatched, not as a latency of
        // 1 ms (it used to be given to the second read), and one
        // completion as undelivered.
        let mut t = first_read_of_64_lost_behind_a_second();
        assert_eq!(t.unmatched, 1);
        assert_eq!(t.take_undelivered(), vec![(SDA, 1)]);
        let h = one(&mut t, 20 * MS, SDA);
        assert_eq!(h.latency[0].total, 0);
        // Without a loss, two reads of one sector keep the oldest-first
        // match once the count has found nothing lost.
        t.issue(21 * MS, SDA, 64, 8, Op::Read);
        t.issue(22 * MS, SDA, 64, 8, Op::Read);
        t.complete(24 * MS, SDA, 64, 8);
        t.count_from(SDA, 25 * MS, 25 * MS);
        assert_eq!(t.trim_in_flight(26 * MS, SDA, [1, 0]), 0);
        t.complete(27 * MS, SDA, 64, 8);
        let h = one(&mut t, 30 * MS, SDA);
        assert_eq!(h.latency[0].total, 2);
        assert_eq!(h.latency[0].max, 5 * MS);
        assert_eq!(h.latency[0].quantile_high(0.5).map(|ns| ns / MS), Some(3));
    }

    #[test]
    fn a_lost_request_whose_completion_a_later_one_took_leaves_the_depth() {
        // 64's first read (1 ms) lost its completion; a second read of 64,
        // issued at 5 ms, completes at 6 ms and is matched to the first;
        // the count finds the one left in its place lost. The depth then
        // is the second read's alone, 5 to 6 ms, as its latency says: the
        // first left it from its issue on, as any request found lost
        // does. (It used to leave it only from the second one's issue:
        // depth 1 from 1 to 5 ms as well. fio reading 1 MiB blocks split
        // in 32 KiB requests over a 200 MiB loop device, re-read every
        // 150 ms: some 20 requests too many in the mean depth.)
        // (Neither read's latency is known: see the test before.)
        let mut t = first_read_of_64_lost_behind_a_second();
        let h = one(&mut t, 20 * MS, SDA);
        assert_eq!(h.latency[0].total, 0);
        let depth: Vec<(usize, u64)> = h.depth.buckets().collect();
        assert_eq!(depth, [(0, 19 * MS), (1, MS)]);
    }

    #[test]
    fn a_lost_request_whose_place_was_handed_on_leaves_the_depth_from_its_issue() {
        // 64's read at 1 ms lost its completion; 64 is read anew at 5, 8
        // and 11 ms, each read done in 1 ms, each completion matched to
        // the read before, all between two counts: the one left in place
        // (11 ms) is found lost by the count at 20 ms (none in flight).
        // The depth is then the three reads' alone: the place was one too
        // high from the first read's issue on. (It used to leave it only
        // from the issue of the read before the one found, 8 ms: depth 1
        // from 1 ms on, 2 while the 5 ms read ran. One reader at a time
        // beside bursts of lost completions, whose places were handed on
        // for 0.5 s between two counts of a drain thread starved of CPU,
        // showed depths of 5 and 6 for 0.36 s of a 0.6 s report.)
        let mut t = Tracker::new(0);
        t.issue(MS, SDA, 64, 8, Op::Read); // completion lost
        for at in [5, 8, 11] {
            t.issue(at * MS, SDA, 64, 8, Op::Read);
            t.complete((at + 1) * MS, SDA, 64, 8);
        }
        t.count_from(SDA, 20 * MS, 20 * MS);
        assert_eq!(t.trim_in_flight(21 * MS, SDA, [0, 0]), 1);
        // Any of the four reads may be the one that lost its completion
        // (the first: each took 1 ms; the last: 5, 4 and 4 ms): all
        // three completions, before the count, are unmatched. (They used
        // to be 5 and 4 ms, then 1 ms for the last: each read timed from
        // the issue of the one before, the last one's alone repaired.)
        assert_eq!(t.unmatched, 3);
        let h = one(&mut t, 21 * MS, SDA);
        assert_eq!(h.latency[0].total, 0);
        let depth: Vec<(usize, u64)> = h.depth.buckets().collect();
        assert_eq!(depth, [(0, 18 * MS), (1, 3 * MS)]);
    }

    #[test]
    fn a_chains_completions_after_the_reading_that_found_its_loss_are_the_next_requests() {
        // 64 read at 1 ms (completion lost) and 5 ms, one completion at
        // 6 ms; the kernel counts no read in flight at 7 ms. 64 is read
        // anew at 8 and 11 ms, done at 9 and 12 ms, each completion
        // matched to the read before. The count finds the 11 ms read,
        // left in the place of the 5 ms one it counted as leaving at
        // 9 ms, lost.
        let mut t = Tracker::new(0);
        t.issue(MS, SDA, 64, 8, Op::Read); // completion lost
        t.issue(5 * MS, SDA, 64, 8, Op::Read);
        t.complete(6 * MS, SDA, 64, 8);
        t.count_from(SDA, 7 * MS, 7 * MS);
        for at in [8, 11] {
            t.issue(at * MS, SDA, 64, 8, Op::Read);
            t.complete((at + 1) * MS, SDA, 64, 8);
        }
        assert_eq!(t.trim_in_flight(13 * MS, SDA, [0, 0]), 1);
        // None in flight at 7 ms: the 1 and 5 ms reads were both done,
        // one completion seen (6 ms), so the lost one was theirs, and the
        // reads issued after, at 8 and 11 ms, had the two after, 9 and
        // 12 ms: 1 ms each. Whether 6 ms ended the 1 or the 5 ms read is
        // not known: unmatched. (The matches gave 5 ms (1 to 6), 4 ms (5
        // to 9), and the last repaired 1 ms (11 to 12).)
        assert_eq!(t.unmatched, 1);
        assert_eq!(t.take_undelivered(), vec![(SDA, 1)]);
        let h = one(&mut t, 20 * MS, SDA);
        assert_eq!((h.latency[0].total, h.latency[0].max), (2, MS));
    }

    #[test]
    fn a_chain_running_at_a_reports_end_keeps_its_start() {
        // 64 read at 1 ms (completion lost) and at 5 ms, one completion
        // at 6 ms, matched to the 1 ms read, the 5 ms one left in its
        // place; a slow read of 200 from 3 to 30 ms. A report at 7 ms.
        let mut t = Tracker::new(0);
        t.issue(MS, SDA, 64, 8, Op::Read); // completion lost
        t.issue(3 * MS, SDA, 200, 8, Op::Read);
        t.issue(5 * MS, SDA, 64, 8, Op::Read);
        t.complete(6 * MS, SDA, 64, 8);
        let h = one(&mut t, 7 * MS, SDA);
        // It cannot wait: the match as made, 1 to 6 ms.
        assert_eq!((h.latency[0].total, h.latency[0].max), (1, 5 * MS));
        // 64 read anew at 8 ms, done at 9 ms: matched to the 5 ms read.
        // The kernel counts one read in flight at 20 ms (200's): the
        // 8 ms read, in the place of the chain begun at 1 ms, older than
        // 200's, is the one forgotten. (The report forgot the chain's
        // start, and dated it from the 5 ms read: 200's read, from 3 ms,
        // was forgotten, its completion unmatched, and the 8 ms read held
        // the depth one higher from then on.)
        t.issue(8 * MS, SDA, 64, 8, Op::Read);
        t.complete(9 * MS, SDA, 64, 8);
        t.count_from(SDA, 20 * MS, 20 * MS);
        assert_eq!(t.trim_in_flight(21 * MS, SDA, [1, 0]), 1);
        t.complete(30 * MS, SDA, 200, 8);
        // The 9 ms completion, the 5 or the 8 ms read's, is unmatched.
        assert_eq!(t.unmatched, 1);
        let h = one(&mut t, 40 * MS, SDA);
        assert_eq!((h.latency[0].total, h.latency[0].max), (1, 27 * MS));
        // From 7 ms: 200's read and the 8 ms read to 9 ms (the chain's
        // place left the depth from 1 ms on), depth 2 for 1 ms; 200's
        // alone from 7 to 8 and 9 to 30 ms, 22 ms; none from 30 to 40.
        let depth: Vec<(usize, u64)> = h.depth.buckets().collect();
        assert_eq!(depth, [(0, 10 * MS), (1, 22 * MS), (2, MS)]);
        assert!(t.take(50 * MS).is_empty(), "nothing held");
    }

    #[test]
    fn a_lost_write_of_a_sector_rewritten_every_few_ms_is_found() {
        // A write of 64 (1 ms) loses its completion; 64 is written anew
        // every 5 ms, each write done in 1 ms. Each completion is matched
        // to the write before, and the write left in its place is always
        // younger than the last count: the comparison finds one write too
        // many, one that left the queue since (`left`), and none old
        // enough to forget. The sector's writes took 6 ms each and the
        // depth stayed one higher as long as the sector was rewritten
        // faster than the counts are compared (fio writing 2 MiB blocks
        // over 200 MiB of a loop device, every 57 ms: depth 19 for 13).
        let mut t = Tracker::new(0);
        t.issue(MS, SDA, 64, 8, Op::Write); // completion lost
        let write = |t: &mut Tracker, at: u64| {
            t.issue(at, SDA, 64, 8, Op::Write);
            t.complete(at + MS, SDA, 64, 8);
        };
        for at in [6, 11, 16] {
            write(&mut t, at * MS);
        }
        t.count_from(SDA, 20 * MS, 20 * MS); // the kernel counted none
        for at in [21, 26, 31] {
            write(&mut t, at * MS);
        }
        assert_eq!(t.trim_in_flight(35 * MS, SDA, [0, 0]), 1);
        assert_eq!(t.take_undelivered(), vec![(SDA, 1)]);
        // None in flight at 20 ms: of the four writes before, one lost
        // its completion, which of them is not known (7, 12 and 17 ms
        // unmatched); the writes at 21, 26 and 31 ms had the completions
        // after, 1 ms each. (The matches gave 6 ms to each of the six
        // but the last, 1 ms.)
        assert_eq!(t.unmatched, 3);
        let h = one(&mut t, 35 * MS, SDA);
        let w = &h.latency[Op::Write as usize];
        assert_eq!((w.total, w.max), (3, MS));
        // Found: the sector's next write is timed alone, the depth right.
        write(&mut t, 36 * MS);
        let h = one(&mut t, 40 * MS, SDA);
        let w = &h.latency[Op::Write as usize];
        assert_eq!((w.total, w.max), (1, MS));
        let depth: Vec<(usize, u64)> = h.depth.buckets().collect();
        assert_eq!(depth, [(0, 4 * MS), (1, MS)]);
    }

    #[test]
    fn flushes_are_not_compared_with_the_kernels_count_but_expire() {
        let mut t = Tracker::new(0);
        t.issue(MS, SDA, 0, 0, Op::Flush);
        t.issue(2 * MS, SDA, 8, 8, Op::Read);
        assert_eq!(t.in_flight_disks(10 * MS, 10 * MS), vec![SDA], "the read");
        t.count_from(SDA, 10 * MS, 10 * MS);
        assert_eq!(t.trim_in_flight(20 * MS, SDA, [0, 0]), 1, "the read");
        assert!(t.in_flight_disks(20 * MS, 20 * MS).is_empty(), "a flush");
        let later = MS + STALE;
        assert!(t.in_flight_disks(later, later).is_empty(), "held 30 s");
        assert_eq!(t.in_flight_disks(later + 1, later + 1), vec![SDA]);
        assert_eq!(t.trim_in_flight(later, SDA, [0, 0]), 0, "held 30 s");
        assert_eq!(t.trim_in_flight(later + 1, SDA, [0, 0]), 1, "then gone");
        t.complete(later + 2, SDA, u64::MAX, 0);
        assert_eq!(t.unmatched, 1);
    }

    #[test]
    fn a_flush_whose_completion_was_lost_gives_way_to_the_next() {
        // A disk of one hardware queue flushing every 10 ms, each flush
        // done in 1 ms; the first one's completion is lost (about 1 in
        // 10,000 of a loop device's under `fio --fsync=1` on Linux 6.18).
        // Matched oldest first, each later flush took the completion of
        // the one after it, timed 11 ms, the depth 1 between flushes, for
        // as long as they kept coming: none held grew old enough to expire.
        let mut t = Tracker::new(0);
        t.set_flush_slots(SDA, Some(1));
        assert!(t.knows_flush_slots(SDA));
        t.issue(0, SDA, 0, 0, Op::Flush); // completion lost
        for i in 1..5 {
            t.issue(i * 10 * MS, SDA, 0, 0, Op::Flush);
            t.complete(i * 10 * MS + MS, SDA, u64::MAX, 0);
        }
        assert_eq!(t.unmatched, 0);
        let h = one(&mut t, 50 * MS, SDA);
        let flush = &h.latency[Op::Flush as usize];
        assert_eq!((flush.total, flush.max), (4, MS), "each flush its own");
        assert_eq!(t.take_undelivered(), vec![(SDA, 1)]);
        // The lost flush leaves the depth from its issue on.
        let depth: Vec<(usize, u64)> = h.depth.buckets().collect();
        assert_eq!(depth, [(0, 46 * MS), (1, 4 * MS)]);
        assert!(t.take(60 * MS).is_empty(), "nothing held");
        assert!(!t.knows_flush_slots(SDA), "asked again once it returns");
    }

    #[test]
    fn a_disk_of_two_hardware_queues_holds_two_flushes() {
        let mut t = Tracker::new(0);
        t.set_flush_slots(SDA, Some(2));
        t.issue(0, SDA, 0, 0, Op::Flush);
        t.issue(MS, SDA, 0, 0, Op::Flush);
        t.complete(2 * MS, SDA, u64::MAX, 0);
        t.complete(3 * MS, SDA, u64::MAX, 0);
        assert!(t.take_undelivered().is_empty());
        // Unknown queues: no limit, as before.
        t.set_flush_slots(SDA, None);
        for i in 4..8 {
            t.issue(i * MS, SDA, 0, 0, Op::Flush);
        }
        assert!(t.take_undelivered().is_empty());
        let h = one(&mut t, 10 * MS, SDA);
        assert_eq!(h.latency[Op::Flush as usize].total, 2);
        assert_eq!(h.depth.max, 4);
    }

    #[test]
    fn requests_at_one_sector_at_once_each_get_their_latency() {
        // Two readers of one block: both in flight, completed in order.
        let mut t = Tracker::new(0);
        t.issue(MS, SDA, 64, 8, Op::Read);
        t.issue(2 * MS, SDA, 64, 8, Op::Read);
        t.complete(4 * MS, SDA, 64, 8);
        t.complete(7 * MS, SDA, 64, 8);
        assert_eq!(t.unmatched, 0);
        let h = one(&mut t, 10 * MS, SDA);
        assert_eq!(h.latency[0].total, 2);
        assert_eq!(h.latency[0].max, 5 * MS, "the second, from its own issue");
        assert_eq!(h.latency[0].quantile_high(0.5).map(|ns| ns / MS), Some(3));
        assert_eq!(h.depth.max, 2);
    }

    #[test]
    fn rwbs_classes() {
        assert_eq!(Op::from_rwbs(b"R"), Some(Op::Read));
        assert_eq!(Op::from_rwbs(b"RA"), Some(Op::Read));
        assert_eq!(Op::from_rwbs(b"WS"), Some(Op::Write));
        assert_eq!(Op::from_rwbs(b"FWS"), Some(Op::Write), "pre-flush write");
        assert_eq!(Op::from_rwbs(b"WFS"), Some(Op::Write), "FUA write");
        assert_eq!(Op::from_rwbs(b"FF"), Some(Op::Flush));
        assert_eq!(Op::from_rwbs(b"FS"), Some(Op::Flush), "a flush alone");
        assert_eq!(Op::from_rwbs(b"F"), Some(Op::Flush));
        assert_eq!(Op::from_rwbs(b"N"), None, "write-zeroes, passthrough");
        assert_eq!(Op::from_rwbs(b"FN"), None, "pre-flush write-zeroes");
        assert_eq!(Op::from_rwbs(b"D"), Some(Op::Discard));
        assert_eq!(Op::from_rwbs(b"DE"), Some(Op::Discard));
        assert_eq!(Op::from_rwbs(b"N"), None);
        assert_eq!(Op::from_rwbs(b""), None);
        assert_eq!(dev_numbers(dev_of(259, 3)), (259, 3));
    }

    #[test]
    fn latency_and_time_weighted_depth() {
        let mut t = Tracker::new(0);
        // 0-10 ms idle, two reads in flight 10-20 ms, one 20-30, idle to 40.
        t.issue(10 * MS, SDA, 100, 8, Op::Read);
        t.issue(10 * MS, SDA, 200, 8, Op::Write);
        t.complete(20 * MS, SDA, 200, 8);
        t.complete(30 * MS, SDA, 100, 8);
        let h = one(&mut t, 40 * MS, SDA);
        assert_eq!(h.latency[0].max, 20 * MS);
        assert_eq!(h.latency[0].total, 1);
        assert_eq!(h.latency[1].max, 10 * MS);
        assert_eq!(h.depth.total, 40 * MS);
        assert_eq!(h.depth.max, 2);
        // 20 ms at 0, 10 at 1, 10 at 2: the time-weighted median is 0 (rank
        // 20 ms of 40 falls in depth 0), 1 at 0.6.
        assert_eq!(h.depth.quantile_high(0.5), Some(0));
        assert_eq!(h.depth.quantile_high(0.6), Some(1));
        assert_eq!(h.depth.quantile_high(1.0), Some(2));
    }

    #[test]
    fn partial_completion_counts_once_at_the_end() {
        let mut t = Tracker::new(0);
        t.issue(0, SDA, 1000, 16, Op::Read);
        t.complete(MS, SDA, 1000, 8);
        t.complete(3 * MS, SDA, 1008, 8);
        let h = one(&mut t, 4 * MS, SDA);
        assert_eq!(h.latency[0].total, 1);
        assert_eq!(h.latency[0].max, 3 * MS);
        assert_eq!(t.unmatched, 0);
    }

    #[test]
    fn requeue_restarts_and_unknown_completions_are_unmatched() {
        let mut t = Tracker::new(0);
        t.issue(0, SDA, 8, 8, Op::Read);
        t.requeue(MS, SDA, 8, Op::Read);
        t.issue(5 * MS, SDA, 8, 8, Op::Read);
        t.complete(7 * MS, SDA, 8, 8);
        t.complete(8 * MS, SDA, 4096, 8);
        assert_eq!(t.unmatched, 1);
        let h = one(&mut t, 10 * MS, SDA);
        assert_eq!(h.latency[0].total, 1);
        assert_eq!(h.latency[0].max, 2 * MS, "from the re-issue");
        // depth 1 during 0-1 ms and 5-7 ms.
        assert_eq!(h.depth.quantile_high(0.8), Some(1));
        assert_eq!(h.depth.quantile_high(0.65), Some(0));
    }

    #[test]
    fn a_completion_of_no_data_without_an_issue_is_not_unmatched() {
        // A loop device under `dd conv=fsync` (ftrace, Linux 6.18): the
        // empty pre-flush write only completes.
        //   block_rq_issue: 7,0 FF 0 () 0 + 0
        //   block_rq_complete: 7,0 FF () 18446744073709551615 + 0
        //   block_rq_complete: 7,0 WS () 0 + 0
        let mut t = Tracker::new(0);
        t.issue(MS, SDA, 0, 0, Op::Flush);
        t.complete(2 * MS, SDA, u64::MAX, 0);
        t.complete(2 * MS, SDA, 0, 0);
        assert_eq!(t.unmatched, 0);
        t.complete(3 * MS, SDA, 64, 8);
        assert_eq!(t.unmatched, 1, "one with data is");
        t.complete(4 * MS, SDA, u64::MAX, 0);
        assert_eq!(t.unmatched, 2, "so is a flush whose issue was not seen");
    }

    #[test]
    fn a_flush_completes_at_the_unset_position_and_is_matched() {
        // vda under `dd conv=fsync` (ftrace, Linux 6.18):
        //   block_rq_issue: 254,0 FF 0 () 0 + 0
        //   block_rq_complete: 254,0 FF () 18446744073709551615 + 0
        let mut t = Tracker::new(0);
        t.issue(MS, SDA, 0, 0, Op::Flush);
        t.complete(3 * MS, SDA, u64::MAX, 0);
        t.issue(4 * MS, SDA, 0, 0, Op::Flush);
        t.requeue(5 * MS, SDA, 0, Op::Flush);
        assert_eq!(t.unmatched, 0);
        assert!(
            t.in_flight_disks(u64::MAX, u64::MAX).is_empty(),
            "nothing held"
        );
        let h = one(&mut t, 10 * MS, SDA);
        assert_eq!(h.latency[Op::Flush as usize].total, 1);
        assert_eq!(h.latency[Op::Flush as usize].max, 2 * MS);
        assert_eq!(h.depth.max, 1);
    }

    #[test]
    fn in_flight_requests_carry_over_and_idle_devices_are_dropped() {
        let mut t = Tracker::new(0);
        t.issue(5 * MS, SDA, 8, 8, Op::Write);
        let first = one(&mut t, 10 * MS, SDA);
        assert_eq!(first.latency[1].total, 0);
        assert_eq!(first.depth.quantile_high(1.0), Some(1));
        t.complete(12 * MS, SDA, 8, 8);
        let second = one(&mut t, 20 * MS, SDA);
        assert_eq!(second.latency[1].max, 7 * MS);
        assert_eq!(second.depth.total, 10 * MS, "from the interval start");
        assert!(t.take(30 * MS).is_empty(), "idle device forgotten");
    }

    #[test]
    fn forgetting_in_flight_requests_drops_the_depth() {
        let mut t = Tracker::new(0);
        t.issue(0, SDA, 8, 8, Op::Read);
        t.issue(0, SDA, 16, 8, Op::Read);
        t.forget_in_flight(4 * MS);
        t.complete(5 * MS, SDA, 8, 8);
        assert_eq!(t.unmatched, 1);
        let h = one(&mut t, 10 * MS, SDA);
        assert_eq!(h.latency[0].total, 0);
        assert_eq!(h.depth.max, 2);
        // 4 ms at depth 2, then 6 ms at 0.
        assert_eq!(h.depth.quantile_high(0.5), Some(0));
        assert!(t.take(20 * MS).is_empty(), "nothing left in flight");
    }

    /// sda's first partition: `sectors` from sector 2048.
    fn with_sda1(t: &mut Tracker, sectors: u64) -> Dev {
        let sda1 = dev_of(8, 1);
        let partition = Partition {
            start: 2048,
            sectors,
            dev: sda1,
        };
        t.set_partitions(HashMap::from([(SDA, vec![partition])]));
        sda1
    }

    #[test]
    fn partitions_by_first_sector() {
        let mut t = Tracker::new(0);
        let sda1 = with_sda1(&mut t, 1000);
        t.issue(0, SDA, 2048, 8, Op::Read);
        t.issue(0, SDA, 10, 8, Op::Read);
        t.complete(MS, SDA, 2048, 8);
        t.complete(2 * MS, SDA, 10, 8);
        let all = t.take(3 * MS);
        let get = |d| &all.iter().find(|&&(x, _)| x == d).unwrap().1;
        assert_eq!(get(SDA).latency[0].total, 2);
        assert_eq!(get(sda1).latency[0].total, 1);
        assert_eq!(get(sda1).latency[0].max, MS);
    }

    #[test]
    fn unmatched_completions_are_counted_for_their_disk_and_partition() {
        let mut t = Tracker::new(0);
        let sda1 = with_sda1(&mut t, 1000);
        // Never issued: one in sda1, one before it, and a flush (at the
        // unset position, in no partition).
        t.complete(MS, SDA, 2100, 8);
        t.complete(MS, SDA, 10, 8);
        t.complete(MS, SDA, u64::MAX, 0);
        // A chain in sda1 whose loss leaves its first completion unknown
        // (as in a_chains_completions_after_the_reading_that_found_its_loss_
        // are_the_next_requests).
        t.issue(MS, SDA, 2112, 8, Op::Read);
        t.issue(5 * MS, SDA, 2112, 8, Op::Read);
        t.complete(6 * MS, SDA, 2112, 8);
        t.count_from(SDA, 7 * MS, 7 * MS);
        t.issue(8 * MS, SDA, 2112, 8, Op::Read);
        t.complete(9 * MS, SDA, 2112, 8);
        assert_eq!(t.trim_in_flight(10 * MS, SDA, [0, 0]), 1);
        assert_eq!(t.unmatched, 4);
        let mut by_device = t.take_unmatched();
        by_device.sort_unstable();
        assert_eq!(by_device, vec![(SDA, 4), (sda1, 2)]);
        assert_eq!(t.take_unmatched(), vec![], "taken");
    }

    #[test]
    fn a_never_issued_empty_write_does_not_end_a_held_flush() {
        // Two fsyncs on two hardware queues (blk-mq keeps a flush queue per
        // hctx): hctx 1's flush is in flight at (dev, 0) when hctx 0's
        // empty pre-flush write completes (`WS 0 + 0`, never issued, see
        // the module doc). That completion must not end the flush.
        let mut t = Tracker::new(0);
        t.issue(MS, SDA, 0, 0, Op::Flush);
        t.complete(2 * MS, SDA, 0, 0); // WS 0 + 0: never issued
        t.complete(5 * MS, SDA, u64::MAX, 0); // the flush
        assert_eq!(t.unmatched, 0, "the flush's own completion is unmatched");
        let h = one(&mut t, 10 * MS, SDA);
        assert_eq!(h.latency[Op::Flush as usize].total, 1);
        assert_eq!(
            h.latency[Op::Flush as usize].max,
            4 * MS,
            "flush issue to its completion"
        );
    }

    #[test]
    fn a_flush_completion_does_not_end_a_write_of_sector_0() {
        // A file system on the whole disk (XFS keeps its superblock at
        // sector 0) writes sector 0 while a flush, also issued at sector 0,
        // is in flight. The flush's completion (at the unset position)
        // carries no data: it cannot be the write's.
        let mut t = Tracker::new(0);
        t.issue(MS, SDA, 0, 8, Op::Write);
        t.issue(2 * MS, SDA, 0, 0, Op::Flush);
        t.complete(3 * MS, SDA, u64::MAX, 0); // the flush
        t.complete(9 * MS, SDA, 0, 8); // the write
        let h = one(&mut t, 10 * MS, SDA);
        assert_eq!(
            h.latency[Op::Write as usize].max,
            8 * MS,
            "the write's latency"
        );
        assert_eq!(h.latency[Op::Flush as usize].max, MS, "the flush's latency");
        // Nor the write's an older flush.
        t.issue(11 * MS, SDA, 0, 0, Op::Flush);
        t.issue(12 * MS, SDA, 0, 8, Op::Write);
        t.complete(13 * MS, SDA, 0, 8); // the write
        t.complete(16 * MS, SDA, u64::MAX, 0); // the flush
        assert_eq!(t.unmatched, 0);
        let h = one(&mut t, 20 * MS, SDA);
        assert_eq!(h.latency[Op::Write as usize].max, MS, "the write's latency");
        assert_eq!(
            h.latency[Op::Flush as usize].max,
            5 * MS,
            "the flush's latency"
        );
    }

    #[test]
    fn lost_completions_on_a_disk_without_iostats_are_forgotten() {
        // `queue/iostats` 0: the collector has no count to compare with and
        // passes u64::MAX every drain (collector.rs, check_in_flight). A
        // disk losing a completion every second for an hour: a lost
        // request is held 30 s at most (STALE), the depth at most one
        // higher per loss in that time.
        let mut t = Tracker::new(0);
        let s = 1_000 * MS;
        for i in 0..3600u64 {
            t.issue(i * s, SDA, 8 * i, 8, Op::Read); // completion lost
            t.issue(i * s + MS, SDA, 1 << 30, 8, Op::Read);
            t.complete(i * s + 2 * MS, SDA, 1 << 30, 8);
            t.trim_in_flight(i * s + 100 * MS, SDA, [u64::MAX; 2]);
            if i % 10 == 9 {
                t.take(i * s + 500 * MS);
            }
        }
        // The last trim (3599.1 s) forgot those issued before 3569.1 s:
        // the 30 lost from 3570 s on are held, and the depth is theirs.
        let h = one(&mut t, 3600 * s, SDA);
        assert_eq!(t.inflight.iter().count(), 30, "requests held after an hour");
        assert_eq!(h.depth.max, 30, "qd_max after an hour");
    }

    #[test]
    fn a_partitions_depth_also_drops_requests_found_lost() {
        // 50 reads of sda1 lose their completion; the count finds them
        // gone: they are undelivered for the disk and for sda1, and the
        // partition's depth drops them from their issue on, as the disk's
        // does.
        let mut t = Tracker::new(0);
        let sda1 = with_sda1(&mut t, 1 << 20);
        for i in 0..50 {
            t.issue(2 * MS, SDA, 4096 + 8 * i, 8, Op::Read);
        }
        t.issue(9 * MS, SDA, 4000, 8, Op::Read);
        t.count_from(SDA, 10 * MS, 10 * MS);
        t.settle_unread(10 * MS);
        assert_eq!(t.trim_in_flight(12 * MS, SDA, [1, 0]), 50);
        let mut undelivered = t.take_undelivered();
        undelivered.sort_unstable();
        assert_eq!(undelivered, [(SDA, 50), (sda1, 50)], "for both");
        assert_eq!(t.take_undelivered(), [], "counted once");
        t.complete(15 * MS, SDA, 4000, 8);
        let all = t.take(20 * MS);
        assert_eq!(all.len(), 2);
        for (d, h) in &all {
            assert_eq!(h.depth.max, 1, "{d}");
            assert_eq!(h.depth.total, 20 * MS, "{d}");
        }
    }

    #[test]
    fn a_report_ending_before_a_loss_is_found_keeps_its_depth() {
        // 10 reads issued at 2 ms lose their completion; the report at
        // 11 ms comes before the count read at 10 ms is compared: it
        // shows them. The next report is rid of them.
        let mut t = Tracker::new(0);
        for i in 0..10 {
            t.issue(2 * MS, SDA, 8 * i, 8, Op::Read);
        }
        t.issue(9 * MS, SDA, 4000, 8, Op::Read);
        t.count_from(SDA, 10 * MS, 10 * MS);
        t.settle_unread(10 * MS);
        let h = one(&mut t, 11 * MS, SDA);
        assert_eq!(h.depth.total, 11 * MS);
        assert_eq!(h.depth.max, 11, "the lost ten and the live read");
        assert_eq!(t.trim_in_flight(13 * MS, SDA, [1, 0]), 10);
        t.complete(15 * MS, SDA, 4000, 8);
        let h = one(&mut t, 20 * MS, SDA);
        assert_eq!(h.depth.total, 9 * MS);
        assert_eq!(h.depth.max, 1);
        assert_eq!(h.latency[0].total, 1);
    }

    #[test]
    fn a_report_ending_before_the_events_fed_leaves_their_depth_to_the_next() {
        // A read from 10 to 30 ms, fed in before the report ending at
        // 20 ms is taken: the report has its depth up to 20 ms and its
        // latency; the next one has the rest of its depth, though
        // nothing is in flight when the first is taken.
        let mut t = Tracker::new(0);
        t.issue(10 * MS, SDA, 100, 8, Op::Read);
        t.complete(30 * MS, SDA, 100, 8);
        let h = one(&mut t, 20 * MS, SDA);
        assert_eq!(
            h.depth.buckets().collect::<Vec<_>>(),
            [(0, 10 * MS), (1, 10 * MS)]
        );
        assert_eq!(h.latency[0].total, 1);
        let h = one(&mut t, 40 * MS, SDA);
        assert_eq!(
            h.depth.buckets().collect::<Vec<_>>(),
            [(0, 10 * MS), (1, 10 * MS)]
        );
        assert_eq!(h.latency[0].total, 0);
        assert!(t.take(50 * MS).is_empty(), "idle, it is forgotten");
    }

    /// A report reads the kernel's counters, then takes the histograms,
    /// on a loaded machine up to a tenth of a second later: the requests
    /// completed meanwhile are the next report's, as they are in the
    /// kernel's next counts.
    #[test]
    fn latencies_after_the_horizon_are_the_next_intervals() {
        let mut t = Tracker::new(0);
        t.issue(10 * MS, SDA, 100, 8, Op::Read);
        t.issue(12 * MS, SDA, 200, 8, Op::Read);
        // The counters are read at 20 ms; the events up to 40 ms are fed
        // in before the histograms are taken.
        t.set_horizon(20 * MS);
        t.complete(20 * MS, SDA, 100, 8);
        t.complete(30 * MS, SDA, 200, 8);
        let h = one(&mut t, 40 * MS, SDA);
        assert_eq!((h.latency[0].total, h.latency[0].max), (1, 10 * MS));
        // Nothing in flight, the device is kept for the latency it owes
        // the next report; that one sets no horizon of its own.
        t.issue(50 * MS, SDA, 300, 8, Op::Read);
        t.complete(90 * MS, SDA, 300, 8);
        let h = one(&mut t, 100 * MS, SDA);
        assert_eq!(h.latency[0].total, 2);
        assert_eq!(h.latency[0].max, 40 * MS);
        assert!(t.take(110 * MS).is_empty(), "idle, it is forgotten");
    }
}
