//! The live measurement of `block_rq_issue`, `block_rq_complete` and
//! `block_rq_requeue` on every online CPU (CPUs coming online are traced
//! from when the thread sees them: see below), in one of two ways:
//!
//! * **Forwarded** (root, or CAP_BPF with CAP_PERFMON): an eBPF program on
//!   each tracepoint (`latency::forward`, loaded by aya) copies the fields
//!   the tracker needs (time, device, sector, length, operation) into a
//!   per-CPU perf ring with `bpf_perf_event_output`. It runs for events
//!   fired in an interrupt while the CPU is idle, which perf's own
//!   tracepoint sampling does not deliver on recent kernels (BENCHMARKS.md:
//!   a virtio disk lost 80 % of its completions that way). Still, some
//!   completions reach no program on the tracepoint: one that fires while
//!   another tracing program runs on its CPU (the kernel counts those as
//!   the program's `recursion_misses`), and, in bursts of up to some 500,
//!   completions run in a softirq inside another task, which ftrace and
//!   `/proc/diskstats` count but no eBPF program on the tracepoint sees,
//!   attached through perf or as a raw tracepoint, with no miss counted
//!   (BENCHMARKS.md, "Lost completions on a busy disk"). These are the
//!   requests [`Tracker::trim_in_flight`]
//!   forgets at a later drain (`State::check_in_flight`), counted per
//!   device (for the disk and for the partition holding the request) in
//!   [`Interval::undelivered`].
//! * **Sampled** (CAP_PERFMON alone): perf samples each tracepoint
//!   (`PERF_SAMPLE_TIME|RAW`, times on `CLOCK_MONOTONIC`), the three events
//!   of a CPU sharing one ring buffer; iostat-rs says so on stderr.
//!
//! Either way a thread empties the rings when one is a quarter full (the
//! kernel wakes its `poll`) and at least every [`DRAIN_EVERY`]; events are
//! put in time order across CPUs before the [`Tracker`] sees them (an issue
//! and its completion often run on different CPUs), and only up to
//! [`SETTLE`] ago, so an event still being written on another CPU is never
//! overtaken. When the kernel reports lost samples, the requests in flight
//! are forgotten where the loss ends: at the first event the ring gave
//! after it (see [`Tracker::forget_in_flight`]).
//!
//! **CPUs coming and going.** The kernel detaches a per-CPU perf event
//! when its CPU goes offline and never attaches it again. Measured on
//! Linux 6.18 (2-CPU VM, CPU 1 taken offline for 0.2 s, then online and
//! busy): a tracepoint event, a `BPF_OUTPUT` event and a counting event
//! on CPU 1 stopped counting at the offline, their time enabled and time
//! running both stopped there, and neither moved again once the CPU was
//! back, nor after `PERF_EVENT_IOC_ENABLE`, nor after a `DISABLE` then
//! `ENABLE` (both return 0); their rings got no more records, and `poll`
//! reported nothing on them, no `POLLHUP` or `POLLERR`, offline or back
//! (a counting event without a ring reports `POLLHUP` all along). An event
//! opened on the CPU once back counted; one opened while it was offline
//! was refused with `ENODEV`. So the thread follows the CPUs itself, at
//! most every [`DRAIN_EVERY`]: it reads `/sys/devices/system/cpu/online`,
//! retires the ring of a CPU gone, or whose owner's time enabled did not
//! move since it was last read (the CPU went offline and came back in
//! between: `echo 0`, `echo 1` take some 0.1 s together), empties it,
//! closes it, and opens a ring for a CPU online without one. The
//! forwarding programs' map has a slot for every possible CPU. Between a
//! CPU coming online and its ring (up to some 0.1 s) its events are not
//! seen: the interval counts such CPUs ([`Interval::cpus_late`]; a report
//! looks too as it ends its interval, as the thread's look may come in
//! the next), and the note on histograms short of the kernel's counts
//! names them rather than guessing at a bio-based device. A CPU whose
//! ring the kernel refuses is tried again at each look, counted late,
//! and named once a run with the reason ([`Collector::refusal`]). On that VM
//! reading the list took 1.6 µs, and an owner's time enabled 10 µs
//! (0.2 µs on the reading thread's own CPU: the kernel reads it on the
//! event's CPU), so a look reads at most 16 of them
//! (`CHECKED_PER_LOOK`), in turn.
//!
//! **Partitions coming and going.** With `-p`, a request counts for the
//! partition holding its first sector too, by the table of partitions
//! (`partition_table`), which each report reads again. A drain reads it
//! first when a uevent told of a block device since the last one
//! (`uevent`), so a partition added mid-interval, or added again under a
//! new minor, has its requests from the first. Where no uevent comes (a
//! resize sends none; a network namespace of another user namespace hears
//! none), the next report's reading catches up.

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::common::cpulist::{CpuList, ONLINE, POSSIBLE, read_list};
use crate::common::fdlimit;
use crate::common::perf::{self, PerfEventAttr};
use crate::common::perf_ring::{self, RECORD_LOST, RECORD_SAMPLE, Ring};
use crate::common::privilege::{
    self, CAP_BPF, CAP_IPC_LOCK, CAP_PERFMON, CAP_SYS_ADMIN, Kept, bit,
};
use crate::common::tracefs::{Event, Field, Tracefs, TracefsError};

use super::codec::Interval;
use super::forward::Programs;
use super::tracker::{Dev, KernelCount, Op, Partition, Tracker, dev_numbers, dev_of};
use super::uevent::PartitionWatch;

/// How often the rings are emptied at least.
pub const DRAIN_EVERY: Duration = Duration::from_millis(100);
/// Events younger than this wait for the next drain (see the module doc).
pub const SETTLE: u64 = 2_000_000;
/// A request issued this long before the kernel's in-flight count is
/// read is surely in that count if it is still in flight: the kernel
/// marks a request in flight just after its issue event. Short, because
/// requests issued within it are left out of the comparison: at 130,000
/// requests a second, 1 ms left out the whole queue.
const ISSUED_BEFORE: u64 = 50_000;
/// A request whose completion event comes this long after the kernel's
/// count was read was in that count: blk-mq stops counting a request when
/// its completion begins, just before the event, unless the event waits
/// for a softirq that much later.
const LEFT_AFTER: u64 = 50_000;
/// Data pages per CPU ring: 4 MiB with 4 KiB pages (some 50,000 events),
/// else, where the locked-memory limit refuses that (a CAP_PERFMON user
/// without CAP_IPC_LOCK: `perf_event_mlock_kb`, 516 KiB a CPU by
/// default), [`RING_PAGES_SMALL`].
const RING_PAGES: usize = 1024;
/// The fallback ring: 512 KiB.
const RING_PAGES_SMALL: usize = 128;
/// The most rings whose owner's time enabled one look at the CPUs reads
/// (see [`State::follow_cpus`]): each read of a CPU's but the thread's
/// own is a call on that CPU, 10 µs on a 2-CPU VM, so a look costs at
/// most some 0.2 ms; with more CPUs each is read in turn, and a CPU
/// offline and back between two looks is found within `CPUs / 16` looks.
const CHECKED_PER_LOOK: usize = 16;
/// Descriptors the perf fallback takes per CPU: the completion event that
/// owns the ring, the requeue and the issue events (the eBPF path takes
/// one).
const DESCRIPTORS_PER_CPU: u64 = 3;

/// What a tracepoint means to the tracker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Issue,
    Complete,
    Requeue,
}

/// Where one event's fields are in its raw record.
#[derive(Debug, Clone, Copy)]
pub(super) struct Layout {
    pub id: u64,
    pub kind: Kind,
    pub dev: Field,
    pub sector: Field,
    pub nr_sector: Field,
    pub rwbs: Field,
}

impl Layout {
    fn of(event: &Event, kind: Kind) -> Result<Layout, TracefsError> {
        Ok(Layout {
            id: event.id,
            kind,
            dev: event.field("dev")?,
            sector: event.field("sector")?,
            nr_sector: event.field("nr_sector")?,
            rwbs: event.field("rwbs")?,
        })
    }
}

/// One decoded event.
#[derive(Debug, Clone, Copy)]
struct Sample {
    time: u64,
    kind: Kind,
    dev: Dev,
    sector: u64,
    sectors: u64,
    op: Option<Op>,
}

/// Gives `tracker` one event of a request of a class it follows. Requests
/// of no class it follows (write-zeroes, passthrough: `N` in `rwbs`) are
/// left out whole: their issue is not held, so their completion must not
/// end a request held at the same sector, nor count as unmatched.
fn follow(tracker: &mut Tracker, s: &Sample) {
    let Some(op) = s.op else {
        return;
    };
    match s.kind {
        Kind::Issue => tracker.issue(s.time, s.dev, s.sector, s.sectors, op),
        Kind::Complete => tracker.complete(s.time, s.dev, s.sector, s.sectors),
        Kind::Requeue => tracker.requeue(s.time, s.dev, s.sector, op),
    }
}

fn read_uint(raw: &[u8], f: Field) -> Option<u64> {
    let bytes = f.bytes(raw)?;
    Some(match f.size {
        2 => u64::from(u16::from_ne_bytes(bytes.try_into().ok()?)),
        4 => u64::from(u32::from_ne_bytes(bytes.try_into().ok()?)),
        8 => u64::from_ne_bytes(bytes.try_into().ok()?),
        _ => return None,
    })
}

/// Decodes a `PERF_RECORD_SAMPLE` body (time, raw).
fn decode(body: &[u8], layouts: &[Layout]) -> Option<Sample> {
    let time = u64::from_ne_bytes(body.get(0..8)?.try_into().ok()?);
    let size = u32::from_ne_bytes(body.get(8..12)?.try_into().ok()?) as usize;
    let raw = body.get(12..12 + size)?;
    let common_type = u64::from(u16::from_ne_bytes(raw.get(0..2)?.try_into().ok()?));
    let l = layouts.iter().find(|l| l.id == common_type)?;
    // `Op::from_rwbs` reads at most two letters; a NUL is not one.
    let rwbs = l.rwbs.bytes(raw)?;
    Some(Sample {
        time,
        kind: l.kind,
        dev: read_uint(raw, l.dev)? as Dev,
        sector: read_uint(raw, l.sector)?,
        sectors: read_uint(raw, l.nr_sector)?,
        op: Op::from_rwbs(rwbs),
    })
}

/// The record the forwarding program writes (`struct record` of
/// block.bpf.c): time (u64), sector (u64), dev (u32), nr_sector (u32), the
/// first two bytes of `rwbs`, two zero bytes, and the [`Kind`] (u32).
const FORWARDED_LEN: usize = 32;

/// The kinds by number, as the forwarding program numbers them (`ISSUE`,
/// `COMPLETE`, `REQUEUE` in block.bpf.c; `Kind as usize` is the same).
const KINDS: [Kind; 3] = [Kind::Issue, Kind::Complete, Kind::Requeue];

/// Decodes a `PERF_RECORD_SAMPLE` body (raw) of a forwarded event.
fn decode_forwarded(body: &[u8]) -> Option<Sample> {
    let size = u32::from_ne_bytes(body.get(0..4)?.try_into().ok()?) as usize;
    let raw = body.get(4..4 + size)?.get(..FORWARDED_LEN)?;
    let u64_at = |at: usize| raw[at..at + 8].try_into().ok().map(u64::from_ne_bytes);
    let u32_at = |at: usize| raw[at..at + 4].try_into().ok().map(u32::from_ne_bytes);
    let kind = *KINDS.get(u32_at(28)? as usize)?;
    let rwbs = &raw[24..26];
    Some(Sample {
        time: u64_at(0)?,
        kind,
        dev: u32_at(16)?,
        sector: u64_at(8)?,
        sectors: u64::from(u32_at(20)?),
        op: Op::from_rwbs(rwbs),
    })
}

/// `CLOCK_MONOTONIC` in nanoseconds, the clock the samples carry.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// How the rings' records are to be read, and a CPU's ring opened.
enum Feed {
    /// Written by the forwarding programs, which a CPU's ring is slotted in.
    Forwarded(Programs),
    /// Perf's samples of the tracepoints, in these layouts.
    Sampled(Vec<Layout>),
}

/// One CPU's ring and the events writing into it; unmapped, then closed,
/// when dropped.
struct Traced {
    cpu: u32,
    ring: Ring,
    /// The event owning the ring, which the thread polls.
    owner: OwnedFd,
    /// The perf fallback's other events of the CPU, writing into the ring.
    followers: Vec<OwnedFd>,
    /// The owner's time enabled when last read (see [`Traced::runs`]).
    enabled: u64,
    /// The ring lost events after the last one it gave: the next one it
    /// gives ends the gap ([`State::losses`]).
    after_loss: bool,
}

impl Traced {
    fn new(cpu: u32, owner: OwnedFd, ring: Ring) -> Traced {
        Traced {
            cpu,
            enabled: time_enabled(owner.as_fd()).unwrap_or(0),
            ring,
            owner,
            followers: Vec::new(),
            after_loss: false,
        }
    }

    /// Whether the kernel still runs the CPU's events: its hotplug code
    /// detaches the events of a CPU going offline, for good (see the
    /// module doc), and their time enabled stops, while an event it runs
    /// has its time enabled go on with the clock.
    fn runs(&mut self) -> bool {
        match time_enabled(self.owner.as_fd()) {
            Some(enabled) if enabled != self.enabled => {
                self.enabled = enabled;
                true
            }
            _ => false,
        }
    }

    /// Whether the CPU's events stopped since [`Traced::runs`] last found
    /// them running (unreadable counts as stopped, as there), telling
    /// nothing to it: the next look still retires the ring.
    fn stopped(&self) -> bool {
        time_enabled(self.owner.as_fd()).is_none_or(|enabled| enabled == self.enabled)
    }
}

struct State {
    /// Declared first, so the forwarding programs are detached before
    /// the rings' descriptors close.
    feed: Feed,
    /// By CPU number.
    traced: Vec<Traced>,
    /// The rings of CPUs no longer traced, emptied, then closed, by the
    /// drain that follows ([`State::follow_cpus`]).
    retired: Vec<Traced>,
    /// When the online CPUs were last compared with those traced.
    looked: u64,
    /// Where in `traced` the next look reads the times enabled.
    checked: usize,
    /// The CPUs online but not traced at some point of the interval: come
    /// online (or back) before their ring was opened, or failing to open.
    late: BTreeSet<u32>,
    /// Why a CPU come online could not be traced, the first time one was
    /// refused, until a report says so: once a run ([`Refusal`]).
    refusal: Refusal,
    tracker: Tracker,
    waiting: Vec<Sample>,
    lost: u64,
    /// Where rings' losses end, not yet passed: the time of the first
    /// event a ring gave after losing some, for the requests in flight to
    /// be forgotten there ([`State::drain`]).
    losses: Vec<u64>,
    /// The kernel's counts read last, waiting for the events up to the
    /// end of the read.
    counts: Option<KernelCounts>,
    /// When the report under way read the kernel's counters (just
    /// before: [`Collector::counters_read_next`]), [`NOT_ASKED`] between
    /// reports: set without the lock, so that a drain meanwhile puts what
    /// completed since in the next report ([`Tracker::set_horizon`]).
    asked: Arc<AtomicU64>,
    /// What the drain thread kept of raised privileges to trace CPUs that
    /// come online ([`keep_for_cpus`]), effective only around that;
    /// `None` in a run without them (as root), which has nothing to raise.
    kept: Option<Kept>,
    /// With partitions, where the kernel tells of block devices coming and
    /// going: a drain reads the partition table again after it told of one
    /// (see [`super::uevent`]).
    partition_watch: Option<PartitionWatch>,
}

/// [`State::asked`] while no report is under way.
const NOT_ASKED: u64 = u64::MAX;

/// The first refusal to trace a CPU come online, told once a run: a CPU
/// refused is tried again at every look, 0.1 s apart, and a line each time
/// would bury the reports.
enum Refusal {
    /// No CPU was refused.
    None,
    /// This line (naming the CPU and why) waits for a report to tell it.
    Untold(String),
    /// A report told one; later refusals show only as late CPUs.
    Told,
}

impl Refusal {
    /// Keeps the refusal of `cpu` because of `why`, if it is the first.
    fn keep(&mut self, cpu: u32, why: String) {
        if matches!(self, Refusal::None) {
            *self = Refusal::Untold(format!("CPU {cpu} came online but cannot be traced: {why}"));
        }
    }

    /// The line to tell, once.
    fn tell(&mut self) -> Option<String> {
        match std::mem::replace(self, Refusal::Told) {
            Refusal::Untold(line) => Some(line),
            Refusal::None => {
                *self = Refusal::None;
                None
            }
            Refusal::Told => None,
        }
    }
}

/// The kernel's in-flight counts of the disks that may hold requests whose
/// completion was not delivered (the tracker knows when each was read:
/// [`Tracker::count_from`]).
struct KernelCounts {
    /// When the counts are compared, once the events up to then are in:
    /// [`LEFT_AFTER`] after the last count was read, so that a request
    /// leaving meanwhile is seen to leave (it may have left the kernel's
    /// count already; held still, it would be taken for a lost one).
    due: u64,
    /// The drain's cutoff when the counts were read: the disks read are
    /// those holding an old enough request as the events up to then tell,
    /// so a request issued after it was not judged.
    judged_to: u64,
    /// Per disk, the kernel's count.
    counts: Vec<(Dev, KernelCount)>,
}

impl State {
    /// Empties every ring and feeds the tracker the events up to `cutoff`,
    /// after reading the partition table again if a block device came or
    /// went since the last drain.
    fn drain(&mut self, cutoff: u64) {
        if self
            .partition_watch
            .as_mut()
            .is_some_and(PartitionWatch::block_devices_changed)
        {
            self.tracker.set_partitions(partition_table());
        }
        let State {
            traced,
            retired,
            feed,
            waiting,
            lost,
            losses,
            ..
        } = self;
        let mut lost_now = 0;
        let retiring = traced.len()..;
        for (i, t) in traced.iter_mut().chain(retired.iter_mut()).enumerate() {
            let after_loss = &mut t.after_loss;
            t.ring.drain(&mut |kind, body| match kind {
                RECORD_SAMPLE => {
                    let sample = match feed {
                        Feed::Forwarded(_) => decode_forwarded(body),
                        Feed::Sampled(layouts) => decode(body, layouts),
                    };
                    if let Some(s) = &sample
                        && std::mem::take(after_loss)
                    {
                        losses.push(s.time);
                    }
                    waiting.extend(sample);
                }
                RECORD_LOST => {
                    *after_loss = true;
                    lost_now += body
                        .get(8..16)
                        .and_then(|b| b.try_into().ok())
                        .map_or(0, u64::from_ne_bytes)
                }
                _ => {}
            });
            // A ring closed now gives no event to end its loss: by the
            // cutoff, then.
            if retiring.contains(&i) && t.after_loss {
                losses.push(cutoff);
            }
        }
        *lost += lost_now;
        retired.clear();
        let asked = self.asked.load(Ordering::SeqCst);
        if asked != NOT_ASKED {
            self.tracker.set_horizon(asked);
        }
        self.waiting.sort_by_key(|s| s.time);
        let ready = self.waiting.partition_point(|s| s.time <= cutoff);
        // The requests in flight are forgotten where a ring's loss ends,
        // before the events from then on: a request whose completion was
        // lost (issued on any CPU until then) stayed held, and the next
        // request at its sector (random I/O over a few hundred MB reuses
        // sectors within seconds) ended in its place, timed from its
        // issue. Forgotten at the drain's end only, a ring that overflowed
        // for 2.5 s gave reads a p99 of 2.4 s where fio measured 12 ms at
        // most. Completions after it of requests issued before it are
        // unmatched instead.
        self.losses.sort_unstable();
        let mut passed = 0;
        for s in self.waiting.drain(..ready) {
            let mut forget = None;
            while let Some(&at) = self.losses.get(passed).filter(|&&at| at <= s.time) {
                forget = Some(at);
                passed += 1;
            }
            if let Some(at) = forget {
                self.tracker.forget_in_flight(at);
                self.counts = None;
            }
            if s.kind == Kind::Issue
                && s.op == Some(Op::Flush)
                && !self.tracker.knows_flush_slots(s.dev)
            {
                self.tracker.set_flush_slots(s.dev, hardware_queues(s.dev));
            }
            follow(&mut self.tracker, &s);
        }
        // A closed ring's loss ends by the cutoff; one whose end is still
        // to come (no event after it yet), or later than the cutoff, is
        // passed in a later drain.
        if let Some(&at) = self.losses[passed..].iter().rfind(|&&at| at <= cutoff) {
            self.tracker.forget_in_flight(at);
            self.counts = None;
        }
        self.losses.retain(|&at| at > cutoff);
        self.check_in_flight(cutoff);
    }

    /// Follows the CPUs, at most every [`DRAIN_EVERY`]: the rings of CPUs
    /// gone are retired ([`State::retire_gone`]) and emptied, then a CPU
    /// online without a ring gets one. Whether the rings changed.
    fn follow_cpus(&mut self) -> bool {
        let now = monotonic_ns();
        if now.saturating_sub(self.looked) < DRAIN_EVERY.as_nanos() as u64 {
            return false;
        }
        self.looked = now;
        // Unreadable (a sysfs error): the rings stay as they are.
        let Ok(online) = read_list(ONLINE) else {
            return false;
        };
        let retired = self.retire_gone(&online);
        if retired {
            // Closed before their CPUs' new rings are mapped, which the
            // locked-memory allowance may not hold beside them.
            self.drain(monotonic_ns().saturating_sub(SETTLE));
        }
        self.open_online(&online) || retired
    }

    /// Retires the ring of each CPU not `online`, or whose events the
    /// kernel no longer runs (offline and back since the last look: see
    /// [`Traced::runs`], read for [`CHECKED_PER_LOOK`] CPUs in turn), and
    /// empties its slot in the forwarding programs' map. Whether any was.
    fn retire_gone(&mut self, online: &CpuList) -> bool {
        let State {
            traced,
            retired,
            feed,
            checked,
            kept,
            ..
        } = self;
        let n = traced.len();
        let turns = n.min(CHECKED_PER_LOOK);
        let from = checked.checked_rem(n).unwrap_or(0);
        *checked = from + turns;
        let mut at = 0;
        let gone = traced.extract_if(.., |t| {
            let turn = (at + n - from) % n < turns;
            at += 1;
            !online.contains(t.cpu) || (turn && !t.runs())
        });
        let before = retired.len();
        for t in gone {
            if let Feed::Forwarded(programs) = feed {
                // Not raised, the slot keeps a dead event, as when the
                // kernel refuses the delete.
                let _ = raised(kept, || {
                    programs.clear_ring(t.cpu);
                    Ok(())
                });
            }
            retired.push(t);
        }
        retired.len() > before
    }

    /// Opens a ring for each `online` CPU without one, counting it late
    /// (its events since it came online were missed). A CPU refused (gone
    /// offline again, no descriptor left) is tried again at the next look;
    /// the first refusal of the run is kept for a report to tell
    /// ([`Collector::refusal`]). Whether any was opened.
    fn open_online(&mut self, online: &CpuList) -> bool {
        let mut opened = Vec::new();
        for &cpu in online.cpus() {
            if self.traced.binary_search_by_key(&cpu, |t| t.cpu).is_ok() {
                continue;
            }
            self.late.insert(cpu);
            match raised(&self.kept, || open_cpu(&mut self.feed, cpu)) {
                Ok(traced) => opened.extend(traced),
                Err(why) => self.refusal.keep(cpu, why),
            }
        }
        let any = !opened.is_empty();
        self.traced.extend(opened);
        self.traced.sort_unstable_by_key(|t| t.cpu);
        any
    }

    /// Counts as late in this interval the CPUs the next look will find
    /// untraced: online without a ring, or whose events stopped (of the
    /// [`CHECKED_PER_LOOK`] that look reads). A report calls it as it ends
    /// its interval: a CPU that came online shortly before has its
    /// requests in this interval's counters, though the look that opens
    /// its ring comes in the next.
    fn note_late(&mut self) {
        let Ok(online) = read_list(ONLINE) else {
            return;
        };
        for &cpu in online.cpus() {
            if self.traced.binary_search_by_key(&cpu, |t| t.cpu).is_err() {
                self.late.insert(cpu);
            }
        }
        let n = self.traced.len();
        let from = self.checked.checked_rem(n).unwrap_or(0);
        let next = self.traced.iter().cycle().skip(from);
        for t in next.take(n.min(CHECKED_PER_LOOK)) {
            if online.contains(t.cpu) && t.stopped() {
                self.late.insert(t.cpu);
            }
        }
    }

    /// What the thread polls: each ring's owner, woken at its watermark.
    /// Not the partition watch: a drain reads it before it feeds the
    /// tracker, which is soon enough (a uevent comes before any request of
    /// its partition), and every uevent of any device would wake the thread.
    fn polled(&self) -> Vec<libc::pollfd> {
        self.traced
            .iter()
            .map(|t| libc::pollfd {
                fd: t.owner.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect()
    }

    /// Where the interval a report takes ends, just after a drain, and
    /// up to when its events must be in first (the drain's cutoff): where
    /// the counts read last judged the requests (`KernelCounts::judged_to`,
    /// [`SETTLE`] before the reading, more if the drain was held up), and,
    /// if a disk's counts are being read, when they are due
    /// (`KernelCounts::due`); else [`SETTLE`] ago, twice. The latencies
    /// go on to the report's counters ([`State::end_interval`] drains that
    /// far at least). Drained up to then (once its events are in, [`SETTLE`]
    /// later; drained only to the read's end, a request completing just
    /// after it was still held, and taken for lost: in 2 of 21 runs of 400
    /// reads of 2 ms, none in 10 since), the comparison ends the interval:
    /// requests found lost leave the report's depth from their issue on,
    /// and those issued later are in the next report.
    /// Taken between two comparisons (some 100 ms apart), a report held
    /// such requests in its depth up to its end: a burst of hundreds
    /// raised a mean depth of 1 to 30. Ended at the reading, it still did
    /// after a drain held up 0.2 to 0.7 s between its cutoff and its
    /// reading (iostat-rs starved by threads at nice -20): no disk was read
    /// for the requests issued meanwhile, and one request at a time showed
    /// `qd_max` 4 to 7.
    fn end_of_interval(&self) -> (u64, u64) {
        match &self.counts {
            Some(read) if !read.counts.is_empty() => (read.judged_to, read.due),
            Some(read) => (read.judged_to, read.judged_to),
            None => {
                let now = monotonic_ns().saturating_sub(SETTLE);
                (now, now)
            }
        }
    }

    /// The interval a report asked for, the kernel's counters read from
    /// `asked` on ([`Collector::take`]): its depth up to where
    /// [`State::end_of_interval`] ends it, and the latencies of every
    /// request completed up to `asked`, which those counters count. The
    /// events up to `asked` are in once [`SETTLE`] has passed since: the
    /// last drain waits for that, as far as the end of the interval does
    /// not make it wait longer. Drained only to the end of the interval
    /// ([`SETTLE`] before the report when no count was due), the requests
    /// completed in the last 2 ms before the counters went to the next
    /// report: bursts of 150 reads of a loop device (3 µs each), started
    /// 0 to 10 ms before a report, left 11 intervals of 60 with under half
    /// of the reads their counters counted, most with none, and the note
    /// blamed a bio-based device (the test of partitions appearing mid-run
    /// failed so once in a CI run); none since. Waiting costs a sleep of
    /// up to [`SETTLE`] in a report where no count was due.
    fn end_interval(&mut self, asked: u64) -> Interval {
        self.note_late();
        self.drain(monotonic_ns().saturating_sub(SETTLE));
        let (end, judged) = self.end_of_interval();
        let cutoff = judged.max(asked);
        // Held meanwhile: the thread would feed the events after `cutoff`.
        let wait = cutoff.saturating_add(SETTLE).saturating_sub(monotonic_ns());
        std::thread::sleep(Duration::from_nanos(wait));
        self.drain(cutoff);
        let by_devnum = |counts: Vec<(Dev, u64)>| {
            let mut counts: Vec<((u32, u32), u64)> = counts
                .into_iter()
                .map(|(dev, count)| (dev_numbers(dev), count))
                .collect();
            counts.sort_unstable();
            counts
        };
        let undelivered = by_devnum(self.tracker.take_undelivered());
        let unmatched_by_device = Some(by_devnum(self.tracker.take_unmatched()));
        let unmatched = self.tracker.unmatched;
        let devices = self
            .tracker
            .take(end)
            .into_iter()
            .map(|(dev, h)| (dev_numbers(dev), h))
            .collect();
        Interval {
            lost: std::mem::take(&mut self.lost),
            unmatched,
            unmatched_by_device,
            undelivered,
            devices,
            cpus_late: std::mem::take(&mut self.late).len() as u64,
        }
    }

    /// Compares the requests held with the kernel's counts read at an
    /// earlier drain, once the events up to the end of that read are in
    /// (`cutoff`): requests the kernel no longer counts are forgotten
    /// ([`Tracker::trim_in_flight`]) and leave the queue depth from their
    /// issue on, except what a report took meanwhile (a report's end
    /// comes just after a comparison: [`State::end_of_interval`]);
    /// on a disk without a count, requests held 30 s are forgotten
    /// ([`super::tracker::STALE`]), having raised the depth until then.
    /// Then reads the counts anew for the next drain, of the disks holding
    /// a request issued before the reading.
    fn check_in_flight(&mut self, cutoff: u64) {
        if let Some(read) = self.counts.take_if(|c| c.due <= cutoff) {
            for (dev, kernel) in read.counts {
                self.tracker.trim_in_flight(cutoff, dev, kernel);
            }
        }
        if self.counts.is_some() {
            return;
        }
        let now = monotonic_ns();
        let before = now.saturating_sub(ISSUED_BEFORE);
        let mut counts = Vec::new();
        for dev in self.tracker.in_flight_disks(now, before) {
            let kernel = counts_requests(dev).then(|| kernel_in_flight(dev));
            let Some(kernel) = kernel.flatten() else {
                // No count to compare with (no I/O statistics, or the
                // device is gone): only stale requests expire.
                counts.push((dev, [u64::MAX; 2]));
                continue;
            };
            let after = monotonic_ns().saturating_add(LEFT_AFTER);
            self.tracker.count_from(dev, before, after);
            counts.push((dev, kernel));
        }
        self.tracker.settle_unread(before);
        self.counts = Some(KernelCounts {
            due: monotonic_ns().saturating_add(LEFT_AFTER),
            judged_to: cutoff.min(before),
            counts,
        });
    }
}

/// The running measurement; stopped and unmapped on drop.
pub struct Collector {
    state: Arc<Mutex<State>>,
    /// [`State::asked`], set without the lock.
    asked: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    partitions: bool,
    notice: Option<String>,
}

/// What `--latency` needs, for the messages of a permission denied.
const LATENCY_NEEDS: &str = "--latency needs root, or CAP_BPF with CAP_PERFMON (CAP_PERFMON \
                             alone: sampled by perf; CAP_SYS_ADMIN before Linux 5.8)";

/// Why the measurement cannot start, as one line.
pub fn open_error(what: &str, err: &io::Error) -> String {
    match err.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => {
            format!("{what}: permission denied: {LATENCY_NEEDS}, or kernel.perf_event_paranoid=-1")
        }
        Some(libc::ENOENT) | Some(libc::ENODEV) | Some(libc::EOPNOTSUPP) => format!(
            "{what}: this kernel cannot sample tracepoints through perf_event_open \
             (CONFIG_PERF_EVENTS and CONFIG_EVENT_TRACING needed)"
        ),
        _ => format!("{what}: {err}"),
    }
}

/// Why the block tracepoints cannot be read, as one line. Denied, it names
/// all that `--latency` needs, not only tracefs: granted read access to
/// tracefs alone, the run would next stop at the eBPF program.
fn tracefs_error(err: TracefsError) -> String {
    match err {
        TracefsError::Denied { path } => {
            format!("{path}: permission denied: {LATENCY_NEEDS}, and read access to tracefs")
        }
        other => other.to_string(),
    }
}

impl Collector {
    /// Starts measuring (per-partition too when `partitions`).
    pub fn start(partitions: bool) -> Result<Collector, String> {
        let tracefs = Tracefs::find().map_err(tracefs_error)?;
        let event = |name: &str, kind| {
            tracefs
                .event("block", name)
                .and_then(|e| Layout::of(&e, kind))
                .map_err(tracefs_error)
        };
        let layouts = vec![
            event("block_rq_issue", Kind::Issue)?,
            event("block_rq_complete", Kind::Complete)?,
            event("block_rq_requeue", Kind::Requeue)?,
        ];
        let online = read_list(ONLINE)?;
        let possible = read_list(POSSIBLE)?;
        // A ring per CPU, three events per CPU for the perf fallback, and
        // the programs, the kept kernel files and the output: under the
        // usual soft limit of 1,024 the fallback would run out from some 330
        // CPUs on. Every possible CPU, as each may come online. perf stat
        // raises the soft limit to the hard one when it runs out; iostat-rs
        // starts no command to give the old one back to.
        fdlimit::raise_to_hard_below(DESCRIPTORS_PER_CPU * possible.cpus().len() as u64 + 256);
        let (feed, traced, notice) = match forward(&layouts, online.cpus(), &possible) {
            Ok((programs, traced)) => (Feed::Forwarded(programs), traced, None),
            Err(why) => {
                let mut feed = Feed::Sampled(layouts);
                let traced = open_cpus(&mut feed, online.cpus())?;
                (feed, traced, Some(why))
            }
        };
        let mut tracker = Tracker::new(monotonic_ns());
        // Opened before the table is read, so that no change is missed.
        let partition_watch = partitions.then(PartitionWatch::open).and_then(Result::ok);
        if partitions {
            tracker.set_partitions(partition_table());
        }
        let asked = Arc::new(AtomicU64::new(NOT_ASKED));
        let state = Arc::new(Mutex::new(State {
            feed,
            traced,
            retired: Vec::new(),
            looked: monotonic_ns(),
            checked: 0,
            late: BTreeSet::new(),
            refusal: Refusal::None,
            tracker,
            waiting: Vec::new(),
            lost: 0,
            losses: Vec::new(),
            counts: None,
            asked: Arc::clone(&asked),
            kept: None,
            partition_watch,
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = spawn_drains(
            Arc::clone(&state),
            Arc::clone(&stop),
            privilege::is_secure(),
        )?;
        Ok(Collector {
            state,
            asked,
            stop,
            thread: Some(thread),
            partitions,
            notice,
        })
    }

    /// Why the events are sampled by perf rather than forwarded by eBPF,
    /// when they are (see the module doc).
    pub fn notice(&self) -> Option<&str> {
        self.notice.as_deref()
    }

    /// Why a CPU that came online could not be traced, the first time one
    /// could not, once a run (see the module doc).
    pub fn refusal(&self) -> Option<String> {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.refusal.tell()
    }

    /// Marks the moment the report is about to read the kernel's counters,
    /// which its histograms are to match: the requests completed from now
    /// on are the next report's ([`Tracker::set_horizon`]), whenever they
    /// are drained. Call it just before the counters are read, then
    /// [`Collector::take`]. One moment cannot be both before and after the
    /// read: a request completed while the counters are read (between this
    /// mark and the read of its device's file, a few microseconds for
    /// `/proc/diskstats`, the named devices' `stat` files before its own
    /// otherwise) is in those counters and in the next report's
    /// histograms. Marked after the read, the window was the lock, the
    /// partition table and the drains (up to 0.1 s on a loaded machine).
    pub fn counters_read_next(&self) {
        self.asked.store(monotonic_ns(), Ordering::SeqCst);
    }

    /// Ends the interval: everything measured since the last call, up to
    /// the last reading of the kernel's in-flight counts, compared with
    /// them first (see `State::end_of_interval`); the latencies of the
    /// requests completed up to the moment [`Collector::counters_read_next`]
    /// marked, just before the report read the kernel's counters, which
    /// the coverage compares them with (now, if it was not called). Marked
    /// here, after the counters, the histograms held what completed
    /// between the two, which the next counters count: the lock and the
    /// drains take up to 0.1 s more on a loaded machine (77 ms beside 8
    /// busy loops on 2 CPUs), and after a stop whose reads overflowed the
    /// perf rings, a report held 20,426 of the 34,346 reads it counted, over
    /// half, and showed its percentiles (`coverage::shortfall`), though by
    /// the rings' size some 12,000 of them came after its counters. A
    /// report held up between its counters and this call (a debugger's
    /// breakpoint, 150 reads meanwhile) measured the reads its counters did
    /// not count, and its successor withheld its figures for want of them.
    pub fn take(&self) -> Interval {
        let marked = self.asked.load(Ordering::SeqCst);
        let asked = if marked == NOT_ASKED {
            monotonic_ns()
        } else {
            marked
        };
        self.asked.store(asked, Ordering::SeqCst);
        let table = self.partitions.then(partition_table);
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let interval = s.end_interval(asked);
        self.asked.store(NOT_ASKED, Ordering::SeqCst);
        if let Some(table) = table {
            s.tracker.set_partitions(table);
        }
        interval
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The thread that empties the rings and follows the CPUs until `stop`.
/// The rings, and the descriptors it polls, live in `state`, joined in
/// [`Collector`]'s drop before they close; the thread closes a retired
/// ring itself, between two polls, and polls the new list from then on.
///
/// With raised privileges (`secure`: file capabilities, `setcap
/// cap_bpf,cap_perfmon+ep`), the thread first lets go of all but what
/// tracing a CPU that comes online needs ([`keep_for_cpus`]), and the
/// start waits for that: capabilities belong to threads, and this one was
/// made with all of the program's, which the main thread then drops.
fn spawn_drains(
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    secure: bool,
) -> Result<JoinHandle<()>, String> {
    let mut polled = state
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .polled();
    let (kept_tx, kept_rx) = std::sync::mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("latency".into())
        .spawn(move || {
            if secure {
                let mut s = state.lock().unwrap_or_else(PoisonError::into_inner);
                match keep_for_cpus(&s.feed) {
                    Ok(kept) => s.kept = Some(kept),
                    Err(e) => {
                        let _ = kept_tx.send(Err(e));
                        return;
                    }
                }
            }
            let _ = kept_tx.send(Ok(()));
            while !stop.load(Ordering::Relaxed) {
                wait_for_data(&mut polled);
                let mut s = state.lock().unwrap_or_else(PoisonError::into_inner);
                if s.follow_cpus() {
                    polled = s.polled();
                }
                s.drain(monotonic_ns().saturating_sub(SETTLE));
            }
        })
        .map_err(|e| format!("cannot start the latency thread: {e}"))?;
    match kept_rx.recv() {
        Ok(Ok(())) => Ok(thread),
        Ok(Err(e)) => Err(format!(
            "cannot give up the capabilities the latency thread does not need: {e}"
        )),
        Err(_) => Err("the latency thread ended as it started".into()),
    }
}

/// Lets the calling thread keep of its capabilities only what tracing a
/// CPU that comes online needs, with `feed`, none of them effective
/// ([`Kept`]; raised around that by [`raised`]): opening its perf events
/// system-wide, CAP_PERFMON (CAP_SYS_ADMIN where the thread does not
/// hold it: a kernel before Linux 5.8, or a program given CAP_SYS_ADMIN
/// alone, whose latency thread then keeps that);
/// mapping its ring beyond the locked-memory limit, CAP_IPC_LOCK, if the
/// program has it; and, forwarded, setting its slot in the programs' map,
/// which needs CAP_BPF (or CAP_SYS_ADMIN) only where the kernel asks it of
/// every `bpf(2)` command ([`Programs::map_needs_privilege`]). Loading and
/// attaching the programs, and reading tracefs (CAP_DAC_READ_SEARCH, if
/// granted for that), are done by then.
fn keep_for_cpus(feed: &Feed) -> io::Result<Kept> {
    let mut kept =
        Kept::only(bit(CAP_PERFMON) | bit(CAP_SYS_ADMIN) | bit(CAP_IPC_LOCK) | bit(CAP_BPF))?;
    let either = |cap: u32| if kept.holds(cap) { cap } else { CAP_SYS_ADMIN };
    let mut wanted = bit(either(CAP_PERFMON)) | bit(CAP_IPC_LOCK);
    if let Feed::Forwarded(programs) = feed
        && programs.map_needs_privilege()
    {
        wanted |= bit(either(CAP_BPF));
    }
    kept.narrow(wanted)?;
    Ok(kept)
}

/// Runs `f` with the drain thread's `kept` capabilities effective, or as
/// it is in a run that kept none; the reason when they cannot be raised.
fn raised<T>(kept: &Option<Kept>, f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    match kept {
        None => f(),
        Some(kept) => kept
            .raised(f)
            .map_err(|e| format!("cannot raise its capabilities: {e}"))?,
    }
}

/// Forwards the events through eBPF: the programs loaded, with a slot in
/// their `PERF_EVENT_ARRAY` for every `possible` CPU, a ring for each of
/// `cpus` ([`open_cpus`]), then the programs attached. The reason when that
/// is not possible.
fn forward(
    layouts: &[Layout],
    cpus: &[u32],
    possible: &CpuList,
) -> Result<(Programs, Vec<Traced>), String> {
    let slots = possible
        .cpus()
        .iter()
        .chain(cpus)
        .max()
        .map_or(1, |&c| c.saturating_add(1));
    let mut feed = Feed::Forwarded(Programs::load(layouts, slots)?);
    let traced = open_cpus(&mut feed, cpus)?;
    let Feed::Forwarded(mut programs) = feed else {
        unreachable!("the feed opened is the forwarded one");
    };
    programs.attach()?;
    Ok((programs, traced))
}

/// Opens the rings of `cpus` for `feed`, leaving out a CPU that is
/// offline by then (all of them: refused, as a kernel refusing every CPU's
/// event with `ENODEV` may have no perf tracepoints at all). Forwarded: per CPU a `BPF_OUTPUT` event owning a
/// ring, slotted in the programs' `PERF_EVENT_ARRAY` by CPU number.
/// Sampled by perf: per CPU the completion event owns the ring and the
/// others write into it; every CPU's completions are sampled before any
/// issue is (the same order as [`Programs::attach`]): a request issued
/// first would otherwise be held in flight until the kernel's count shows
/// it gone, if its completion came before its CPU's completion event was
/// open.
fn open_cpus(feed: &mut Feed, cpus: &[u32]) -> Result<Vec<Traced>, String> {
    let mut traced = Vec::new();
    for &cpu in cpus {
        traced.extend(open_owner(feed, cpu)?);
    }
    if traced.is_empty() && !cpus.is_empty() {
        let offline = io::Error::from_raw_os_error(libc::ENODEV);
        return Err(open_error("perf_event_open(block tracepoints)", &offline));
    }
    for t in &mut traced {
        open_followers(feed, t)?;
    }
    Ok(traced)
}

/// CPU `cpu`'s ring and the events writing into it, as [`open_cpus`]
/// opens them for one CPU; `None` when the CPU is offline.
fn open_cpu(feed: &mut Feed, cpu: u32) -> Result<Option<Traced>, String> {
    let Some(mut traced) = open_owner(feed, cpu)? else {
        return Ok(None);
    };
    match open_followers(feed, &mut traced) {
        Ok(()) => Ok(Some(traced)),
        // Gone offline again since its ring was opened: no refusal, the
        // next look finds it offline (or back, and opens it).
        Err(_) if read_list(ONLINE).is_ok_and(|online| !online.contains(cpu)) => Ok(None),
        Err(why) => Err(why),
    }
}

/// CPU `cpu`'s ring and the event owning it; `None` when the CPU is
/// offline.
fn open_owner(feed: &mut Feed, cpu: u32) -> Result<Option<Traced>, String> {
    match feed {
        Feed::Forwarded(programs) => open_forwarded(programs, cpu),
        Feed::Sampled(layouts) => open_sampled(layouts, cpu),
    }
}

/// The events of `t`'s CPU writing into its owner's ring, besides the
/// owner: the perf fallback's requeue and issue events.
fn open_followers(feed: &Feed, t: &mut Traced) -> Result<(), String> {
    match feed {
        Feed::Forwarded(_) => Ok(()),
        Feed::Sampled(layouts) => follow_sampled(layouts, t),
    }
}

/// CPU `cpu`'s `BPF_OUTPUT` event and ring, in the programs' slot of the
/// CPU; `None` when the CPU is offline.
fn open_forwarded(programs: &mut Programs, cpu: u32) -> Result<Option<Traced>, String> {
    let Some((owner, ring)) = open_ring_owner(|watermark| open_bpf_output(cpu as i32, watermark))?
    else {
        return Ok(None);
    };
    programs.set_ring(cpu, owner.as_fd())?;
    Ok(Some(Traced::new(cpu, owner, ring)))
}

/// CPU `cpu`'s completion event and ring; `None` when the CPU is offline.
fn open_sampled(layouts: &[Layout], cpu: u32) -> Result<Option<Traced>, String> {
    let complete = layout_of(layouts, Kind::Complete)?;
    let opened = open_ring_owner(|watermark| open_tracepoint(complete.id, cpu as i32, watermark))?;
    Ok(opened.map(|(owner, ring)| Traced::new(cpu, owner, ring)))
}

/// Adds `t`'s requeue and issue events, writing into its ring.
fn follow_sampled(layouts: &[Layout], t: &mut Traced) -> Result<(), String> {
    for kind in [Kind::Requeue, Kind::Issue] {
        let follower = layout_of(layouts, kind)?;
        // A follower's own watermark is unused: it writes into the
        // owner's ring.
        let fd = open_tracepoint(follower.id, t.cpu as i32, 0)
            .map_err(|e| open_error("perf_event_open(block tracepoints)", &e))?;
        perf::ioctl(fd.as_fd(), perf::SET_OUTPUT, t.owner.as_raw_fd() as u64)
            .map_err(|e| format!("PERF_EVENT_IOC_SET_OUTPUT: {e}"))?;
        t.followers.push(fd);
    }
    Ok(())
}

/// The layout of the tracepoint of `kind`.
fn layout_of(layouts: &[Layout], kind: Kind) -> Result<&Layout, String> {
    layouts
        .iter()
        .find(|l| l.kind == kind)
        .ok_or_else(|| "the block tracepoints' layouts are incomplete".to_string())
}

/// The time the event `fd` has been enabled, in ns (its owners are opened
/// with `PERF_FORMAT_TOTAL_TIME_ENABLED`); `None` when unreadable.
fn time_enabled(fd: BorrowedFd<'_>) -> Option<u64> {
    let mut values = [0u64; 2];
    // SAFETY: reads at most the 16 bytes of `values` into it.
    let n = unsafe { libc::read(fd.as_raw_fd(), values.as_mut_ptr().cast(), 16) };
    (n == 16).then_some(values[1])
}

/// Opens (with `open`, given the watermark in bytes) the event that owns a
/// CPU's ring and maps the ring: [`RING_PAGES`], or [`RING_PAGES_SMALL`]
/// when the locked-memory limit refuses the large one. The kernel wakes the
/// drain thread when the ring is a quarter full, so the watermark is set
/// from the size actually mapped (the event is opened again for the small
/// ring): at 200,000 I/O a second a quarter of the large ring is some 60 ms
/// of events per CPU, where a fixed 128 KiB woke the thread every 7 ms
/// (BENCHMARKS.md, issue 15.5). `None` when the CPU is offline (the
/// kernel's `ENODEV`). `open` opens a perf event (`perf_event_open`).
fn open_ring_owner(
    open: impl Fn(u32) -> io::Result<OwnedFd>,
) -> Result<Option<(OwnedFd, Ring)>, String> {
    let open = |pages: usize| match open(quarter_of(pages)) {
        Ok(owner) => Ok(Some(owner)),
        Err(e) if e.raw_os_error() == Some(libc::ENODEV) => Ok(None),
        Err(e) => Err(open_error("perf_event_open(block tracepoints)", &e)),
    };
    let Some(owner) = open(RING_PAGES)? else {
        return Ok(None);
    };
    // SAFETY: `owner` is the perf event `open` just opened.
    match unsafe { Ring::map(owner.as_fd(), RING_PAGES) } {
        Ok(ring) => return Ok(Some((owner, ring))),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM) | Some(libc::ENOMEM)) => {}
        Err(e) => return Err(format!("mmap of a perf ring buffer: {e}")),
    }
    drop(owner);
    let Some(owner) = open(RING_PAGES_SMALL)? else {
        return Ok(None);
    };
    // SAFETY: as above.
    let ring = unsafe { Ring::map(owner.as_fd(), RING_PAGES_SMALL) }
        .map_err(|e| format!("mmap of a perf ring buffer: {e}"))?;
    Ok(Some((owner, ring)))
}

/// A quarter of `pages` data pages, in bytes (the watermark).
fn quarter_of(pages: usize) -> u32 {
    let page = perf_ring::page_size().unwrap_or(4096);
    u32::try_from(pages.saturating_mul(page) / 4).unwrap_or(u32::MAX)
}

/// Sleeps until a ring reaches its watermark or [`DRAIN_EVERY`] passed.
fn wait_for_data(polled: &mut [libc::pollfd]) {
    // SAFETY: polled is a valid array of pollfd of its length.
    unsafe {
        libc::poll(
            polled.as_mut_ptr(),
            polled.len() as libc::nfds_t,
            DRAIN_EVERY.as_millis() as libc::c_int,
        )
    };
}

/// A sampling event for every occurrence of tracepoint `id` on `cpu`,
/// waking a poller when its ring holds `watermark` bytes.
fn open_tracepoint(id: u64, cpu: i32, watermark: u32) -> io::Result<OwnedFd> {
    let mut attr = PerfEventAttr::default();
    attr.type_ = perf::TYPE_TRACEPOINT;
    attr.size = perf::PERF_ATTR_SIZE;
    attr.config = id;
    attr.sample_period = 1;
    attr.sample_type = perf::SAMPLE_TIME | perf::SAMPLE_RAW;
    attr.flags = perf::FLAG_USE_CLOCKID | perf::FLAG_WATERMARK;
    attr.wakeup_events = watermark;
    attr.clockid = libc::CLOCK_MONOTONIC;
    attr.read_format = perf::FORMAT_TOTAL_TIME_ENABLED;
    perf::open(&attr, -1, cpu, None, perf::FLAG_FD_CLOEXEC)
}

/// The kernel's count of `dev`'s requests in flight (the reads and writes
/// of `/sys/dev/block/MAJ:MIN/inflight`); `None` when unreadable (the
/// device is gone).
fn kernel_in_flight(dev: Dev) -> Option<KernelCount> {
    let (major, minor) = dev_numbers(dev);
    let text = fs::read_to_string(format!("/sys/dev/block/{major}:{minor}/inflight")).ok()?;
    let mut counts = text.split_whitespace().map(str::parse::<u64>);
    match (counts.next(), counts.next()) {
        (Some(Ok(reads)), Some(Ok(writes))) => Some([reads, writes]),
        _ => None,
    }
}

/// How many hardware queues blk-mq gives `dev` (the entries of
/// `/sys/dev/block/MAJ:MIN/mq`), each with at most one flush in flight;
/// `None` when unreadable (not a blk-mq disk, or gone).
fn hardware_queues(dev: Dev) -> Option<u64> {
    let (major, minor) = dev_numbers(dev);
    let queues = fs::read_dir(format!("/sys/dev/block/{major}:{minor}/mq")).ok()?;
    let count = queues
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.parse::<u32>().is_ok())
        })
        .count() as u64;
    (count > 0).then_some(count)
}

/// Whether the kernel keeps I/O statistics of `dev`'s requests (its
/// `queue/iostats`): without them its in-flight count stays 0.
fn counts_requests(dev: Dev) -> bool {
    let (major, minor) = dev_numbers(dev);
    let path = format!("/sys/dev/block/{major}:{minor}/queue/iostats");
    fs::read_to_string(path).is_ok_and(|text| text.trim() != "0")
}

/// The event `bpf_perf_event_output` writes into on `cpu`, waking a
/// poller when its ring holds `watermark` bytes.
fn open_bpf_output(cpu: i32, watermark: u32) -> io::Result<OwnedFd> {
    let mut attr = PerfEventAttr::default();
    attr.type_ = perf::TYPE_SOFTWARE;
    attr.size = perf::PERF_ATTR_SIZE;
    attr.config = perf::COUNT_SW_BPF_OUTPUT;
    attr.sample_period = 1;
    attr.sample_type = perf::SAMPLE_RAW;
    attr.flags = perf::FLAG_WATERMARK;
    attr.wakeup_events = watermark;
    attr.read_format = perf::FORMAT_TOTAL_TIME_ENABLED;
    perf::open(&attr, -1, cpu, None, perf::FLAG_FD_CLOEXEC)
}

/// Every partition under `/sys/class/block`, by its disk: `start` and
/// `size` of each entry with a `partition` file, the disk from the parent
/// directory's `dev`. Unreadable entries (a device going away) are skipped.
fn partition_table() -> HashMap<Dev, Vec<Partition>> {
    let mut table: HashMap<Dev, Vec<Partition>> = HashMap::new();
    let Ok(entries) = fs::read_dir("/sys/class/block") else {
        return table;
    };
    let number = |path: std::path::PathBuf| -> Option<u64> {
        fs::read_to_string(path).ok()?.trim().parse().ok()
    };
    let devnum = |path: std::path::PathBuf| -> Option<Dev> {
        let (major, minor) = crate::iostat::parse::parse_dev_numbers(&fs::read(path).ok()?)?;
        Some(dev_of(major, minor))
    };
    for entry in entries.flatten() {
        let Ok(dir) = fs::canonicalize(entry.path()) else {
            continue;
        };
        if !dir.join("partition").exists() {
            continue;
        }
        let (Some(start), Some(sectors), Some(dev), Some(disk)) = (
            number(dir.join("start")),
            number(dir.join("size")),
            devnum(dir.join("dev")),
            dir.parent().and_then(|p| devnum(p.join("dev"))),
        ) else {
            continue;
        };
        table.entry(disk).or_default().push(Partition {
            start,
            sectors,
            dev,
        });
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_refusal_of_a_cpu_is_told_once() {
        let mut refusal = Refusal::None;
        assert_eq!(refusal.tell(), None, "nothing refused yet");
        refusal.keep(
            3,
            "mmap of a perf ring buffer: Operation not permitted".into(),
        );
        refusal.keep(5, "a later reason".into());
        assert_eq!(
            refusal.tell().as_deref(),
            Some(
                "CPU 3 came online but cannot be traced: mmap of a perf ring buffer: Operation not permitted"
            )
        );
        assert_eq!(refusal.tell(), None, "told once");
        refusal.keep(7, "refused again".into());
        assert_eq!(refusal.tell(), None, "once a run");
    }

    #[test]
    fn a_request_of_no_class_followed_leaves_the_others_alone() {
        let sda = dev_of(8, 0);
        let event = |time: u64, kind: Kind, sector: u64, op: Option<Op>| Sample {
            time,
            kind,
            dev: sda,
            sector,
            sectors: 8,
            op,
        };
        let mut tracker = Tracker::new(0);
        // A write of sector 64, and a write-zeroes (`N`) of the same sector
        // that completes first.
        follow(
            &mut tracker,
            &event(1_000, Kind::Issue, 64, Some(Op::Write)),
        );
        follow(&mut tracker, &event(2_000, Kind::Issue, 64, None));
        follow(&mut tracker, &event(3_000, Kind::Complete, 64, None));
        follow(
            &mut tracker,
            &event(9_000, Kind::Complete, 64, Some(Op::Write)),
        );
        let report = tracker.take(10_000);
        let (_, histograms) = report.iter().find(|(dev, _)| *dev == sda).expect("sda");
        let write = &histograms.latency[Op::Write as usize];
        assert_eq!((write.total, write.max), (1, 8_000));
        assert_eq!(tracker.unmatched, 0);
    }

    /// A state tracing no CPU, its first interval from `start`: the events
    /// a test puts in `waiting` are all it drains.
    fn untraced(start: u64) -> State {
        State {
            feed: Feed::Sampled(Vec::new()),
            traced: Vec::new(),
            retired: Vec::new(),
            looked: 0,
            checked: 0,
            late: BTreeSet::new(),
            refusal: Refusal::None,
            tracker: Tracker::new(start),
            waiting: Vec::new(),
            lost: 0,
            losses: Vec::new(),
            counts: None,
            asked: Arc::new(AtomicU64::new(NOT_ASKED)),
            kept: None,
            partition_watch: None,
        }
    }

    /// Where a ring's loss ends, the requests held are forgotten before
    /// any later event: a read whose completion was lost no longer takes
    /// the completion of the next read at its sector, timed from its own
    /// issue (291 ms here, for a read of 1 ms). A loss ending after the
    /// cutoff waits for its drain.
    #[test]
    fn requests_held_are_forgotten_where_a_loss_ends() {
        const MS: u64 = 1_000_000;
        let disk = dev_of(4000, 7);
        let now = monotonic_ns();
        let t0 = now - 1_000 * MS;
        let read = |at: u64, kind| Sample {
            time: t0 + at * MS,
            kind,
            dev: disk,
            sector: 8,
            sectors: 8,
            op: Some(Op::Read),
        };
        let max_read = |s: &mut State, end: u64| {
            let report = s.tracker.take(end);
            let (_, h) = report
                .iter()
                .find(|(dev, _)| *dev == disk)
                .expect("the disk");
            let read = &h.latency[Op::Read as usize];
            (read.total, read.max)
        };
        for (losses, expected) in [(vec![], 291 * MS), (vec![t0 + 250 * MS], MS)] {
            let mut s = untraced(t0);
            s.losses = losses;
            s.waiting.extend([
                read(10, Kind::Issue), // its completion lost
                read(300, Kind::Issue),
                read(301, Kind::Complete),
            ]);
            s.drain(t0 + 400 * MS);
            assert!(s.losses.is_empty());
            assert_eq!(max_read(&mut s, t0 + 400 * MS), (1, expected));
        }
        // Ending after the cutoff: the read is still held, and forgotten
        // at the next drain, before the events from then on.
        let mut s = untraced(t0);
        s.losses = vec![t0 + 250 * MS];
        s.waiting.extend([
            read(10, Kind::Issue),
            read(300, Kind::Issue),
            read(301, Kind::Complete),
        ]);
        s.drain(t0 + 200 * MS);
        assert_eq!(s.losses, [t0 + 250 * MS]);
        s.drain(t0 + 400 * MS);
        assert!(s.losses.is_empty());
        assert_eq!(max_read(&mut s, t0 + 400 * MS), (1, MS));
        // A loss with no event after it by the cutoff (its ring closed,
        // the CPU gone) ends there.
        let mut s = untraced(t0);
        s.losses = vec![t0 + 350 * MS];
        s.waiting.push(read(10, Kind::Issue));
        s.drain(t0 + 400 * MS);
        assert!(s.losses.is_empty());
        s.waiting
            .extend([read(500, Kind::Issue), read(501, Kind::Complete)]);
        s.drain(t0 + 600 * MS);
        assert_eq!(max_read(&mut s, t0 + 600 * MS), (1, MS));
    }

    /// A read completed just before a report read the kernel's counters
    /// is in its histograms, though its events were younger than
    /// [`SETTLE`] when the report asked for them and no in-flight count
    /// was due (nothing held then); one completed just after is in the
    /// next report's. Drained only to [`SETTLE`] before the report, a
    /// burst of reads there went to the next report, and the one that
    /// counted them had none.
    #[test]
    fn a_report_holds_the_reads_completed_up_to_its_counters() {
        const MS: u64 = 1_000_000;
        // A disk with no sysfs entry: no count is read for it.
        let disk = dev_of(4000, 7);
        let asked = monotonic_ns();
        let mut s = untraced(asked - 1_000 * MS);
        let read = |time, kind, sector| Sample {
            time,
            kind,
            dev: disk,
            sector,
            sectors: 8,
            op: Some(Op::Read),
        };
        s.waiting.extend([
            read(asked - MS, Kind::Issue, 8),
            read(asked - MS / 2, Kind::Complete, 8),
            read(asked - MS / 4, Kind::Issue, 16),
            read(asked + MS / 4, Kind::Complete, 16),
        ]);
        // As `Collector::take` goes on: the reads in the interval taken.
        let reads_taken = |s: &mut State, asked: u64| {
            s.asked.store(asked, Ordering::SeqCst);
            let interval = s.end_interval(asked);
            s.asked.store(NOT_ASKED, Ordering::SeqCst);
            let h = interval.device(dev_numbers(disk));
            h.map_or(0, |h| h.latency[Op::Read as usize].total)
        };
        assert_eq!(reads_taken(&mut s, asked), 1);
        std::thread::sleep(Duration::from_millis(1));
        assert_eq!(reads_taken(&mut s, monotonic_ns()), 1);
    }

    /// A drain held up between its cutoff and its reading of the kernel's
    /// counts (preempted on a loaded machine) chose the disks to read by
    /// the events up to that cutoff: a request issued after it, still held
    /// (its completion may be lost), was judged by no comparison, and adds
    /// no depth to the report taken next.
    #[test]
    fn a_report_ends_where_a_held_up_drain_judged_the_requests() {
        const MS: u64 = 1_000_000;
        // A disk with no sysfs entry: no count is read for it.
        let disk = dev_of(4000, 7);
        let now = monotonic_ns();
        let mut s = untraced(now - 1_000 * MS);
        s.waiting.push(Sample {
            time: now - 300 * MS,
            kind: Kind::Issue,
            dev: disk,
            sector: 8,
            sectors: 8,
            op: Some(Op::Read),
        });
        s.drain(now - 400 * MS);
        // As `Collector::take` goes on.
        let (end, cutoff) = s.end_of_interval();
        s.drain(cutoff);
        let report = s.tracker.take(end);
        assert!(
            report
                .iter()
                .all(|(_, h)| h.depth.buckets().all(|(depth, _)| depth == 0)),
            "{report:?}"
        );
    }

    #[test]
    fn raw_records_decode_at_the_format_offsets() {
        let layout = layout(Kind::Issue);
        let mut raw = vec![0u8; 64];
        raw[0..2].copy_from_slice(&2104u16.to_ne_bytes());
        raw[8..12].copy_from_slice(&dev_of(7, 3).to_ne_bytes());
        raw[16..24].copy_from_slice(&4096u64.to_ne_bytes());
        raw[24..28].copy_from_slice(&8u32.to_ne_bytes());
        raw[34..36].copy_from_slice(b"WS");
        let mut body = Vec::new();
        body.extend(123_456u64.to_ne_bytes());
        body.extend((raw.len() as u32).to_ne_bytes());
        body.extend(&raw);
        let s = decode(&body, &[layout]).expect("decodes");
        assert_eq!(s.time, 123_456);
        assert_eq!(dev_numbers(s.dev), (7, 3));
        assert_eq!((s.sector, s.sectors, s.op), (4096, 8, Some(Op::Write)));
        let far = Layout {
            rwbs: Field {
                offset: usize::MAX,
                size: 10,
            },
            ..layout
        };
        assert!(decode(&body, &[far]).is_none(), "past the address space");
        raw[0..2].copy_from_slice(&9u16.to_ne_bytes());
        body.truncate(12);
        body.extend(&raw);
        assert!(decode(&body, &[layout]).is_none(), "another event's id");
        assert!(decode(&body[..30], &[layout]).is_none(), "cut short");
    }

    /// The offsets of block_rq_issue's format on Linux 6.18.
    fn layout(kind: Kind) -> Layout {
        Layout {
            id: 2104,
            kind,
            dev: Field { offset: 8, size: 4 },
            sector: Field {
                offset: 16,
                size: 8,
            },
            nr_sector: Field {
                offset: 24,
                size: 4,
            },
            rwbs: Field {
                offset: 34,
                size: 10,
            },
        }
    }

    #[test]
    fn forwarded_records_decode() {
        // As bpf_perf_event_output hands them over: the raw size (padded
        // so the record stays 8-byte aligned), then the program's record.
        let mut record = Vec::new();
        record.extend(987_654_321u64.to_ne_bytes());
        record.extend(2048u64.to_ne_bytes());
        record.extend(dev_of(254, 0).to_ne_bytes());
        record.extend(16u32.to_ne_bytes());
        record.extend(*b"FW\0\0");
        record.extend(1u32.to_ne_bytes());
        let mut body = Vec::new();
        body.extend(36u32.to_ne_bytes());
        body.extend(&record);
        body.extend([0u8; 4]);
        let s = decode_forwarded(&body).expect("decodes");
        assert_eq!(s.time, 987_654_321);
        assert_eq!(s.kind, Kind::Complete);
        assert_eq!(dev_numbers(s.dev), (254, 0));
        assert_eq!((s.sector, s.sectors, s.op), (2048, 16, Some(Op::Write)));
        // One-letter rwbs ("R" then a NUL).
        body[4 + 24..4 + 26].copy_from_slice(b"R\0");
        assert_eq!(decode_forwarded(&body).unwrap().op, Some(Op::Read));
        body[4 + 28..4 + 32].copy_from_slice(&7u32.to_ne_bytes());
        assert!(decode_forwarded(&body).is_none(), "no such kind");
        assert!(decode_forwarded(&body[..20]).is_none(), "cut short");
    }

    #[test]
    fn privilege_errors_name_cap_perfmon() {
        let e = open_error(
            "perf_event_open",
            &io::Error::from_raw_os_error(libc::EACCES),
        );
        assert!(e.contains("CAP_PERFMON"), "{e}");
        assert!(e.contains("CAP_BPF"), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn a_tracefs_denial_names_all_that_latency_needs() {
        let path = "/sys/kernel/tracing/events/block/block_rq_issue/id".to_string();
        let e = tracefs_error(TracefsError::Denied { path: path.clone() });
        assert!(e.starts_with(&format!("{path}: permission denied")), "{e}");
        for needed in ["CAP_BPF", "CAP_PERFMON", "read access to tracefs"] {
            assert!(e.contains(needed), "{e}");
        }
        // Other errors keep their own words.
        assert_eq!(
            tracefs_error(TracefsError::NotMounted),
            TracefsError::NotMounted.to_string()
        );
    }
}
