//! Opening and reading the counters through [`crate::common::perf`].
//!
//! Every event is opened system-wide (`pid = -1`) on its PMU's `cpumask` CPU,
//! with no exclude bits (cxl_pmu has `PERF_PMU_CAP_NO_EXCLUDE`) and no
//! sampling, reading `TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING`. A group has a
//! real event as leader, opened disabled, and members opened *enabled*, then
//! the whole group is enabled: members opened disabled would read 0.
//!
//! Reads go through [`Source::values_into`] under a stable key per unit, so
//! recordings keep them and replays serve them; the live path reads with one
//! `read(2)` per single event or group into a buffer sized at open time.
//! A replay checks each reading against the unit's previous one: counts and
//! times that go back are a damaged recording, not a counter (see
//! [`check_step`]).
//!
//! A unit the kernel refuses to open for a reason of the device or the PMU
//! (EINVAL: no counter for that vid/gid/mask; EOPNOTSUPP, ENOENT, ENODEV,
//! ENXIO) is left out, as perf stat leaves it out with `<not supported>`
//! (the other members of a refused group with `<not counted>`), while the
//! others count; only a run where every unit is refused fails.
//! Its reads give two words, `errno, member` (the errno of the open that
//! failed and the group member it opened), which no counter's `read(2)`
//! gives (3 words, or 5 and more): a recording keeps them, so a replay
//! shows the same events as not supported, for the same reason.

use std::collections::{HashMap, HashSet};
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};

use crate::common::cpulist;
use crate::common::fdlimit::{self, Raised};
use crate::common::source::Source;

use super::error::{CxlError, explain_open_errno};
use super::format::{ConfigWord, EventAttr};
use super::resolve::{Plan, ResolvedEvent, Unit};
use super::stats::{Reading, SINGLE_WORDS, check_step, group_words, parse_group, parse_single};
use super::sysfs::Pmu;
use crate::common::perf::{self, PerfEventAttr};

/// The `perf_event_attr` of every cxlstat event: its PMU type and config
/// words, nothing excluded (cxl_pmu refuses exclude bits), no sampling, and
/// reads giving the enabled and running times (plus ids for a group leader,
/// whose read returns the whole group).
pub fn event_attr(attr: EventAttr, enabled: bool, group_leader: bool) -> PerfEventAttr {
    let mut read_format = perf::FORMAT_TOTAL_TIME_ENABLED | perf::FORMAT_TOTAL_TIME_RUNNING;
    if group_leader {
        read_format |= perf::FORMAT_GROUP | perf::FORMAT_ID;
    }
    let mut out = PerfEventAttr::default();
    out.type_ = attr.perf_type;
    out.size = perf::PERF_ATTR_SIZE;
    out.config = attr.word(ConfigWord::Config);
    out.config1 = attr.word(ConfigWord::Config1);
    out.config2 = attr.word(ConfigWord::Config2);
    out.config3 = attr.word(ConfigWord::Config3);
    out.read_format = read_format;
    out.flags = if enabled { 0 } else { perf::FLAG_DISABLED };
    out
}

/// Opens one event system-wide (`pid = -1`) on `cpu`, close-on-exec.
pub fn open_event(attr: &PerfEventAttr, cpu: u32, leader: Option<&OwnedFd>) -> io::Result<OwnedFd> {
    let cpu = i32::try_from(cpu).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    perf::open(
        attr,
        -1,
        cpu,
        leader.map(|fd| fd.as_fd()),
        perf::FLAG_FD_CLOEXEC,
    )
}

/// The values a recorded refusal to open a unit holds: the errno and the
/// member refused.
const REFUSAL_WORDS: usize = 2;

/// The keys a replay reads its units' values under. A recorded run keys
/// each unit by its position and what it counts: its PMU, labels and each
/// event's config words (`perf:1:PMU/label/@0x1e98100`), as a `name=`
/// label hides the event it names. A replay takes, for each unit, the
/// recorded key at its own position when that one counts the same events
/// in the unit's shape (as it does whenever the `-e` is the recording's);
/// else the first recorded key of the same events and shape not taken yet,
/// so that a replay may count any of the recorded events, in any order.
/// The shape is the number of values: a group and a single raw event may
/// count the same (`{P/mask=0/,P/gid=0/}` and `P/mask=0,gid=0/`), and one
/// must not be read as the other. A unit left without a recorded key gets
/// a key the recording does not hold, which the replay then names as
/// missing.
///
/// Recordings made before the config words were keyed hold
/// `perf:1:PMU/label/`; theirs are matched by that, as they were made.
struct ReplayKeys<'a> {
    /// Per `PMU/label/`, its recorded keys in position order, with their
    /// number of values.
    by_counted: HashMap<&'a str, Vec<(usize, &'a str, usize)>>,
    /// Every recorded key.
    recorded: HashSet<&'a str>,
    /// The recorded keys units took.
    taken: HashSet<&'a str>,
    /// Whether the recording keys config words (see above).
    tagged: bool,
}

impl<'a> ReplayKeys<'a> {
    /// Sorts the recording's value keys (`perf:INDEX:COUNTED`, with their
    /// number of values) by what they count; other keys are not counters'
    /// and are left out.
    fn new(keys: &'a [(String, usize)]) -> ReplayKeys<'a> {
        let mut by_counted: HashMap<&str, Vec<(usize, &str, usize)>> = HashMap::new();
        for (key, words) in keys {
            let Some((index, counted)) = key
                .strip_prefix("perf:")
                .and_then(|rest| rest.split_once(':'))
            else {
                continue;
            };
            if let Ok(index) = index.parse::<usize>() {
                by_counted
                    .entry(counted)
                    .or_default()
                    .push((index, key, *words));
            }
        }
        for positions in by_counted.values_mut() {
            positions.sort_unstable();
        }
        ReplayKeys {
            tagged: by_counted.keys().any(|counted| is_tagged(counted)),
            by_counted,
            recorded: keys.iter().map(|(key, _)| key.as_str()).collect(),
            taken: HashSet::new(),
        }
    }

    /// The key of the unit at `index` counting `counted`
    /// (`PMU/label/@CONFIGS`, `untagged` without the configs, as older
    /// recordings keyed it), whose values are `words` long (or
    /// [`REFUSAL_WORDS`], a recorded refusal).
    fn key(&mut self, index: usize, counted: &str, untagged: &str, words: usize) -> String {
        let counted = if self.tagged { counted } else { untagged };
        let fits = |&&(_, key, n): &&(usize, &str, usize)| {
            (n == words || n == REFUSAL_WORDS) && !self.taken.contains(key)
        };
        let recorded = self.by_counted.get(counted).map_or(&[][..], Vec::as_slice);
        let found = recorded
            .iter()
            .filter(fits)
            .find(|&&(at, _, _)| at == index)
            .or_else(|| recorded.iter().find(fits));
        if let Some(&(_, key, _)) = found {
            self.taken.insert(key);
            return key.to_string();
        }
        // Its own position, or the next the recording does not hold (there
        // is one: it holds finitely many).
        let mut position = index;
        loop {
            let key = format!("perf:{position}:{counted}");
            if !self.recorded.contains(key.as_str()) {
                return key;
            }
            position = position.wrapping_add(1);
        }
    }
}

/// Whether a recorded `PMU/label/...` carries config words (`@...` after
/// the last `/`).
fn is_tagged(counted: &str) -> bool {
    counted
        .rsplit_once('/')
        .is_some_and(|(_, tail)| tail.starts_with('@'))
}

/// The config words of `events`, as a recorded key ends (`@0x1e98100` for
/// one event, `@0x1,0x2` for a group): each event's words in hex, `:`
/// between them, the zero words at the end left out.
fn config_tag<'e>(events: impl Iterator<Item = &'e ResolvedEvent>) -> String {
    let mut tag = String::from("@");
    for (n, event) in events.enumerate() {
        if n > 0 {
            tag.push(',');
        }
        let words = &event.attr.words;
        let used = words
            .iter()
            .rposition(|&w| w != 0)
            .map_or(1, |last| last + 1);
        for (w, word) in words[..used].iter().enumerate() {
            if w > 0 {
                tag.push(':');
            }
            tag.push_str(&format!("{word:#x}"));
        }
    }
    tag
}

/// One opened unit: a single event or one group on one PMU.
struct OpenUnit {
    /// The key its reads are recorded under.
    key: String,
    /// The counters (leader first); empty when replaying.
    counters: Vec<OwnedFd>,
    grouped: bool,
    /// Its events' positions in the reading arrays.
    first: usize,
    len: usize,
    /// The PMU name and CPU, and the events' labels (joined, and each), for messages.
    pmu: String,
    cpu: u32,
    label: String,
    labels: Vec<String>,
    /// The PMU's sysfs directory, checked when its events stop running.
    pmu_dir: String,
    /// Running time of the first event at the last read.
    last_running: Option<u64>,
    /// Set when a read failed or the PMU left sysfs: the PMU went away.
    gone: bool,
    /// The group member whose open the kernel refused, and its errno
    /// (live runs; a replay learns it from the unit's first reading).
    refused: Option<(usize, i32)>,
    /// What each event selects (`vid=..,gid=..,mask=..`), for messages.
    selections: Vec<String>,
    /// Set once the unit is known to be refused: it is never read again.
    unsupported: bool,
}

/// Whether a reading is left out because the kernel refused to open its
/// unit (known after the first read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Not refused: the reading counts.
    Not,
    /// The kernel refused this event: perf stat's `<not supported>`.
    Event,
    /// The kernel refused another member of its group, so this one was
    /// never counted: perf stat's `<not counted>`.
    Group,
}

/// What a refused open leaves: the error, and its errno and group member
/// when the kernel refused the event itself rather than the whole run.
struct OpenFailure {
    error: CxlError,
    refusal: Option<(usize, i32)>,
}

/// Whether an open failing with `errno` refuses only that event, as perf
/// stat's `<not supported>` does: the device has no counter for it
/// (EINVAL), or its PMU or CPU is gone (ENOENT, ENODEV, ENXIO), or the PMU
/// does not do what was asked (EOPNOTSUPP). Permissions, open-file limits
/// and the rest stop the run.
pub(super) fn refuses_only_the_event(errno: i32) -> bool {
    matches!(
        errno,
        libc::EINVAL | libc::EOPNOTSUPP | libc::ENOENT | libc::ENODEV | libc::ENXIO
    )
}

/// Every counter of a run and its latest readings.
pub struct Counters {
    units: Vec<OpenUnit>,
    readings: Vec<Reading>,
    buf: Vec<u64>,
    /// Unit indexes by the CPU their counters live on, CPUs ascending.
    by_cpu: Vec<(u32, Vec<usize>)>,
    /// Whether reads move the thread to each CPU first (see [`Counters::read_locally`]).
    local_reads: bool,
    /// The open-file limit before it was raised to open them all, if it was.
    raised_nofile: Option<Raised>,
    /// Per reading: whether its unit was refused (see the module's doc).
    refused: Vec<Refused>,
    /// Per reading: whether its unit is gone (see [`Counters::read`]).
    gone: Vec<bool>,
    /// `kernel.perf_event_paranoid`, for the reasons of refused opens.
    paranoid: Option<i64>,
}

impl Counters {
    /// Opens every unit of `plan` (nothing when `live` is false: a replay
    /// supplies the values, under the recording's keys `recorded`: see
    /// `ReplayKeys`). Nothing is enabled yet. A unit the kernel
    /// refuses is left out (see the module's doc) unless every unit is.
    pub fn open(
        plan: &Plan,
        pmus: &[Pmu],
        live: bool,
        recorded: &[(String, usize)],
        paranoid: Option<i64>,
    ) -> Result<Counters, CxlError> {
        let mut replayed = ReplayKeys::new(recorded);
        let mut units = Vec::with_capacity(plan.units.len());
        let mut first = 0;
        let mut widest = SINGLE_WORDS;
        let mut raised_nofile = None;
        let mut first_refusal = None;
        for (index, unit) in plan.units.iter().enumerate() {
            let pmu = &pmus[unit.pmu];
            let labels: Vec<String> = unit.events.iter().map(|e| e.label.clone()).collect();
            let label = labels.join(",");
            let untagged = format!("{}/{label}/", pmu.name);
            let counted = format!("{untagged}{}", config_tag(unit.events.iter()));
            let key = if live {
                format!("perf:{index}:{counted}")
            } else {
                let words = if unit.grouped {
                    group_words(unit.events.len())
                } else {
                    SINGLE_WORDS
                };
                replayed.key(index, &counted, &untagged, words)
            };
            let (counters, refused) = if live {
                match open_unit(unit, pmu, paranoid, &mut raised_nofile) {
                    Ok(counters) => (counters, None),
                    Err(OpenFailure {
                        error,
                        refusal: Some(refusal),
                    }) => {
                        first_refusal.get_or_insert(error);
                        (Vec::new(), Some(refusal))
                    }
                    Err(OpenFailure { error, .. }) => return Err(error),
                }
            } else {
                (Vec::new(), None)
            };
            if unit.grouped {
                widest = widest.max(group_words(unit.events.len()));
            }
            units.push(OpenUnit {
                key,
                counters,
                grouped: unit.grouped,
                first,
                len: unit.events.len(),
                pmu: pmu.name.clone(),
                cpu: pmu.cpu,
                label,
                labels,
                pmu_dir: format!("{}/{}", super::sysfs::EVENT_SOURCE_DIR, pmu.name),
                last_running: None,
                gone: false,
                refused,
                selections: unit
                    .events
                    .iter()
                    .map(|e| describe_attr(pmu, &e.attr))
                    .collect(),
                unsupported: false,
            });
            first += unit.events.len();
        }
        if let Some(error) = first_refusal
            && units.iter().all(|u| u.refused.is_some())
        {
            return Err(error);
        }
        let mut by_cpu: Vec<(u32, Vec<usize>)> = Vec::new();
        for (index, unit) in units.iter().enumerate() {
            match by_cpu.iter_mut().find(|(cpu, _)| *cpu == unit.cpu) {
                Some((_, list)) => list.push(index),
                None => by_cpu.push((unit.cpu, vec![index])),
            }
        }
        by_cpu.sort_by_key(|(cpu, _)| *cpu);
        Ok(Counters {
            units,
            readings: vec![Reading::default(); first],
            buf: Vec::with_capacity(widest),
            by_cpu,
            local_reads: false,
            raised_nofile,
            refused: vec![Refused::Not; first],
            gone: vec![false; first],
            paranoid,
        })
    }

    /// Per reading, whether its event is left out because the kernel
    /// refused to open it or its group: known after the first
    /// [`Counters::read`].
    pub fn refused(&self) -> &[Refused] {
        &self.refused
    }

    /// Per reading, whether its PMU went away during the run: its reading
    /// is frozen at the last one that worked.
    pub fn gone(&self) -> &[bool] {
        &self.gone
    }

    /// The open-file limit from before the counters were opened, when
    /// opening them needed it raised: what a command started beside them
    /// gets back.
    pub fn raised_nofile(&self) -> Option<Raised> {
        self.raised_nofile
    }

    /// Starts counting: single events one by one, groups through their leader.
    pub fn enable(&mut self) -> Result<(), CxlError> {
        for unit in &mut self.units {
            let flag = if unit.grouped {
                perf::IOC_FLAG_GROUP
            } else {
                0
            };
            let result = unit
                .counters
                .first()
                .map(|c| perf::ioctl(c.as_fd(), perf::ENABLE, flag));
            if let Some(Err(e)) = result {
                return Err(CxlError::Open {
                    pmu: unit.pmu.clone(),
                    label: unit.label.clone(),
                    cpu: unit.cpu,
                    explanation: format!("cannot enable: {e}"),
                    errno: e.raw_os_error(),
                });
            }
        }
        Ok(())
    }

    /// Reads every unit once. A unit whose read fails, or whose events stop
    /// running while its PMU has left sysfs, is marked gone (its readings
    /// stay frozen, so it shows as not counted) and one note per PMU is
    /// added; the others go on. Allocates nothing unless something is wrong.
    /// A replayed reading that no open counter gives (a count or time that
    /// goes back, a counter running longer than enabled) is an error naming
    /// the recording's line: live reads never fail this way. A refused unit
    /// gives one note, at its first read, and is not read again.
    pub fn read(&mut self, source: &dyn Source, notes: &mut Vec<String>) -> Result<(), CxlError> {
        for group in 0..self.by_cpu.len() {
            if self.local_reads {
                // Only an optimisation: if the move fails, reads still work.
                let _ = pin_current_thread(self.by_cpu[group].0);
            }
            for i in 0..self.by_cpu[group].1.len() {
                let index = self.by_cpu[group].1[i];
                if self.units[index].gone || self.units[index].unsupported {
                    continue;
                }
                if let Some(problem) = self.read_unit(index, source, notes)? {
                    let unit = &self.units[index];
                    let first_for_pmu = !self.units.iter().any(|u| u.gone && u.pmu == unit.pmu);
                    if first_for_pmu {
                        notes.push(format!(
                            "{}: {problem}; the PMU may have been removed, its events are no \
                             longer counted, the others go on",
                            unit.pmu
                        ));
                    }
                    self.units[index].gone = true;
                    let unit = &self.units[index];
                    self.gone[unit.first..unit.first + unit.len].fill(true);
                }
            }
        }
        Ok(())
    }

    /// From now on, reads run on the CPU each counter lives on: the thread
    /// moves to each CPU in turn (when the counters span several) or stays
    /// on the one CPU. Reading a counter of another CPU costs an
    /// inter-processor interrupt that the reader spins on; perf stat moves
    /// between CPUs the same way. The thread's CPU affinity changes, so start
    /// any command before calling this. Does nothing when replaying.
    pub fn read_locally(&mut self) {
        let live = self.units.iter().any(|u| !u.counters.is_empty());
        match self.by_cpu.as_slice() {
            [(cpu, _)] if live => {
                let _ = pin_current_thread(*cpu);
            }
            [_, _, ..] if live => self.local_reads = true,
            _ => {}
        }
    }

    /// Reads one unit; says what went wrong with its PMU, if anything, or
    /// fails on a replayed reading that no open counter gives. A refused
    /// unit is marked unsupported, with a note.
    fn read_unit(
        &mut self,
        index: usize,
        source: &dyn Source,
        notes: &mut Vec<String>,
    ) -> Result<Option<String>, CxlError> {
        let unit = &mut self.units[index];
        let fd = unit.counters.first().map(|c| c.as_raw_fd());
        let words = if unit.grouped {
            group_words(unit.len)
        } else {
            SINGLE_WORDS
        };
        let refused = unit.refused;
        let result =
            source.values_into(
                &unit.key,
                &mut self.buf,
                &mut |buf: &mut Vec<u64>| match refused {
                    Some((member, errno)) => {
                        buf.clear();
                        buf.extend([errno as u64, member as u64]);
                        Ok(())
                    }
                    None => read_words(fd, words, buf),
                },
            );
        if let Err(e) = result {
            return Ok(Some(format!("counter read failed ({e})")));
        }
        if let [errno, member] = self.buf[..] {
            // A live run reads a refused unit first and then never again.
            let note = if unit.last_running.is_some() {
                Err(format!(
                    "{} was read before, and is then recorded as refused to open",
                    unit.label
                ))
            } else {
                refusal_note(unit, errno, member, self.paranoid, source.is_live())
            }
            .map_err(|problem| damaged(unit, source, problem))?;
            notes.push(note);
            unit.unsupported = true;
            let readings = &mut self.refused[unit.first..unit.first + unit.len];
            readings.fill(Refused::Group);
            // `member` was checked by `refusal_note`.
            readings[member as usize] = Refused::Event;
            return Ok(None);
        }
        let out = &mut self.readings[unit.first..unit.first + unit.len];
        // A replay's previous readings of the unit, to check the new ones.
        let earlier = (!source.is_live()).then(|| out.to_vec());
        let ok = if unit.grouped {
            parse_group(&self.buf, out)
        } else {
            parse_single(&self.buf).map(|r| out[0] = r).is_some()
        };
        if !ok {
            let problem = format!(
                "counter read gave {} values, expected {words}",
                self.buf.len()
            );
            if source.is_live() {
                return Ok(Some(problem));
            }
            // The kernel returns the whole read_format or an error, never
            // part of it: a replayed entry of another length was forged.
            return Err(damaged(unit, source, unreadable(unit, &self.buf, words)));
        }
        if let Some(earlier) = earlier {
            check_replayed(unit, &earlier, out, source)?;
        }
        let running = out[0].running;
        let stalled = unit.last_running == Some(running);
        unit.last_running = Some(running);
        // Multiplexed events may not run for a while; a PMU that left sysfs never will.
        if stalled && !source.is_dir(&unit.pmu_dir) {
            return Ok(Some(format!("{} is gone from sysfs", unit.pmu_dir)));
        }
        Ok(None)
    }

    /// The latest reading of every event, in plan order.
    pub fn readings(&self) -> &[Reading] {
        &self.readings
    }
}

/// Checks a replayed unit's new readings `now` against those of its previous
/// read, `earlier` (ignored before its first read), with [`check_step`]; the
/// error names the recording's file, line and entry.
fn check_replayed(
    unit: &OpenUnit,
    earlier: &[Reading],
    now: &[Reading],
    source: &dyn Source,
) -> Result<(), CxlError> {
    let read_before = unit.last_running.is_some();
    for ((current, previous), event) in now.iter().zip(earlier).zip(&unit.labels) {
        let previous = read_before.then_some(*previous);
        check_step(previous, *current, event).map_err(|problem| damaged(unit, source, problem))?;
    }
    Ok(())
}

/// What is wrong with replayed read words `got` of `unit`, which parse as
/// no reading: a read gives exactly `words` words (a group's starting with
/// its number of members), and a refused open two.
fn unreadable(unit: &OpenUnit, got: &[u64], words: usize) -> String {
    match got.first() {
        Some(&nr) if unit.grouped && got.len() == words => format!(
            "the read of the group {} starts with {nr} members, expected {}",
            unit.label, unit.len
        ),
        _ => format!(
            "{} values for {}, expected {words} (what its read gives) or 2 (a refused open: \
             errno, member)",
            got.len(),
            unit.label
        ),
    }
}

/// The error of a replayed reading of `unit` that no kernel gives,
/// naming the recording's file, line and entry.
fn damaged(unit: &OpenUnit, source: &dyn Source, problem: String) -> CxlError {
    let origin = source
        .values_origin(&unit.key)
        .unwrap_or_else(|| format!("the recording: entry \"values {}\"", unit.key));
    CxlError::Damaged { origin, problem }
}

/// The note for a unit whose open the kernel refused with `errno` on its
/// member `member`; what was wrong when a replayed reading cannot be one.
/// `live`: the running kernel refused it, whose CPUs can tell a refusal of
/// the CPU from one of the event ([`not_a_cpu_of_this_kernel`]); a replay's
/// came from the recorded machine's.
fn refusal_note(
    unit: &OpenUnit,
    errno: u64,
    member: u64,
    paranoid: Option<i64>,
    live: bool,
) -> Result<String, String> {
    let valid_errno = i32::try_from(errno)
        .ok()
        .filter(|&e| refuses_only_the_event(e));
    let valid_member = usize::try_from(member).ok().filter(|&m| m < unit.len);
    let (Some(errno), Some(member)) = (valid_errno, valid_member) else {
        return Err(format!(
            "a refused open of {} is recorded as [errno, member] = [{errno}, {member}], \
             expected an errno perf stat shows as <not supported> (EINVAL, EOPNOTSUPP, ENOENT, \
             ENODEV or ENXIO) and a member below {}",
            unit.label, unit.len
        ));
    };
    let err = io::Error::from_raw_os_error(errno);
    let (explanation, errno) = explained(&err, unit.cpu, live, || {
        explain_open_errno(&err, &unit.selections[member], &unit.pmu, paranoid)
    });
    let error = CxlError::Open {
        pmu: unit.pmu.clone(),
        label: unit.labels[member].clone(),
        cpu: unit.cpu,
        explanation,
        errno,
    };
    let group = if unit.len > 1 {
        ", the rest of its group as <not counted>;"
    } else {
        ","
    };
    Ok(format!(
        "{error}; shown as <not supported>{group} the other events are counted"
    ))
}

/// One `read(2)` of `words` u64 values into `buf` (whose capacity is reserved).
fn read_words(fd: Option<RawFd>, words: usize, buf: &mut Vec<u64>) -> io::Result<()> {
    let fd = fd.ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "counter not open"))?;
    buf.clear();
    buf.resize(words, 0);
    // SAFETY: buf holds `words` initialised u64s, so the kernel may write that many bytes.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), words * 8) };
    if n < 0 {
        buf.clear();
        return Err(io::Error::last_os_error());
    }
    if n == 0 {
        buf.clear();
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the kernel could not schedule the counter",
        ));
    }
    buf.truncate(n as usize / 8);
    Ok(())
}

/// What the kernel's refusal `err` of an open on `cpu` means, and its
/// errno where the event itself was refused: a CPU the running kernel
/// lacks, when `live` (the refusal is this kernel's), else as `explain`
/// says.
fn explained(
    err: &io::Error,
    cpu: u32,
    live: bool,
    explain: impl FnOnce() -> String,
) -> (String, Option<i32>) {
    match live.then(|| not_a_cpu_of_this_kernel(err, cpu)).flatten() {
        Some(missing_cpu) => (missing_cpu, None),
        None => (explain(), err.raw_os_error()),
    }
}

/// The explanation of `err` when the kernel refused an open on `cpu`
/// because it has no such CPU: perf_event_open gives EINVAL for a CPU at
/// or above `nr_cpu_ids` before it looks at the event, so a stale cpumask
/// (or a `--sysroot` tree from a larger machine) would otherwise be
/// blamed on the event's encoding.
fn not_a_cpu_of_this_kernel(err: &io::Error, cpu: u32) -> Option<String> {
    if err.raw_os_error() != Some(libc::EINVAL) {
        return None;
    }
    let possible = cpulist::read_list(cpulist::POSSIBLE).ok()?;
    (!possible.contains(cpu)).then(|| {
        format!(
            "this kernel has no CPU {cpu} (EINVAL; {} lists {}): the PMU's cpumask names a CPU \
             of another machine, or is stale",
            cpulist::POSSIBLE,
            cpulist::format_list(possible.cpus())
        )
    })
}

/// Opens `unit`'s counters. The first open that finds no descriptor left
/// (EMFILE) raises the soft open-file limit to the hard one and is tried
/// again, as perf stat does; `raised` keeps the limit from before.
fn open_unit(
    unit: &Unit,
    pmu: &Pmu,
    paranoid: Option<i64>,
    raised: &mut Option<Raised>,
) -> Result<Vec<OwnedFd>, OpenFailure> {
    let fail = |member: usize, label: &str, attr: &EventAttr, e: io::Error| {
        let (explanation, errno) = explained(&e, pmu.cpu, true, || {
            explain_open_errno(&e, &describe_attr(pmu, attr), &pmu.name, paranoid)
        });
        OpenFailure {
            refusal: e
                .raw_os_error()
                .filter(|&errno| refuses_only_the_event(errno))
                .map(|errno| (member, errno)),
            error: CxlError::Open {
                pmu: pmu.name.clone(),
                label: label.to_string(),
                cpu: pmu.cpu,
                explanation,
                errno,
            },
        }
    };
    let mut counters = Vec::with_capacity(unit.events.len());
    for (i, event) in unit.events.iter().enumerate() {
        let open = |counters: &[OwnedFd]| {
            if unit.grouped && i > 0 {
                open_event(
                    &event_attr(event.attr, true, false),
                    pmu.cpu,
                    counters.first(),
                )
            } else {
                open_event(&event_attr(event.attr, false, unit.grouped), pmu.cpu, None)
            }
        };
        let counter = match open(&counters) {
            Err(e) if e.raw_os_error() == Some(libc::EMFILE) && raised.is_none() => {
                match fdlimit::raise_to_hard() {
                    Some(before) => {
                        *raised = Some(before);
                        open(&counters)
                    }
                    None => Err(e),
                }
            }
            other => other,
        };
        counters.push(counter.map_err(|e| fail(i, &event.label, &event.attr, e))?);
    }
    Ok(counters)
}

/// `vid=0x..,gid=0x..,mask=0x..` (the PMU's `config` fields) for messages.
pub fn describe_attr(pmu: &Pmu, attr: &EventAttr) -> String {
    let fields: Vec<String> = ["vid", "gid", "mask"]
        .iter()
        .filter_map(|name| pmu.format.field(name))
        .map(|f| format!("{}={:#x}", f.name, f.extract(attr)))
        .collect();
    if fields.is_empty() {
        format!("config={:#x}", attr.word(ConfigWord::Config))
    } else {
        fields.join(",")
    }
}

/// Runs the calling thread on `cpu` only (processes started later inherit it).
fn pin_current_thread(cpu: u32) -> io::Result<()> {
    let cpu = cpu as usize;
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: a zeroed cpu_set_t with one valid bit set, applied to this thread.
    let result = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinning_refuses_impossible_cpus() {
        assert!(pin_current_thread(libc::CPU_SETSIZE as u32).is_err());
    }

    fn recorded(keys: &[(&str, usize)]) -> Vec<(String, usize)> {
        keys.iter().map(|&(k, n)| (k.to_string(), n)).collect()
    }

    #[test]
    fn a_replayed_unit_takes_its_own_position_else_the_first_of_its_event() {
        let keys = recorded(&[
            ("perf:0:p/a/@0x1", 3),
            ("perf:1:p/b/@0x2", 3),
            ("perf:2:p/a/@0x1", 3),
            ("perf:3:p/c/@0x3", REFUSAL_WORDS),
        ]);
        // The recording's own -e: each at its position.
        let mut same = ReplayKeys::new(&keys);
        let got: Vec<String> = [
            (0, "p/a/@0x1"),
            (1, "p/b/@0x2"),
            (2, "p/a/@0x1"),
            (3, "p/c/@0x3"),
        ]
        .iter()
        .map(|&(i, c)| same.key(i, c, UNUSED, SINGLE_WORDS))
        .collect();
        let want: Vec<String> = keys.iter().map(|(k, _)| k.clone()).collect();
        assert_eq!(got, want);
        // Another order: the first of its event not taken; a third `a` is
        // missing, under its own position.
        let mut other = ReplayKeys::new(&keys);
        let mut key = |i, c| other.key(i, c, UNUSED, SINGLE_WORDS);
        assert_eq!(key(0, "p/b/@0x2"), "perf:1:p/b/@0x2");
        assert_eq!(key(1, "p/a/@0x1"), "perf:0:p/a/@0x1");
        assert_eq!(key(2, "p/a/@0x1"), "perf:2:p/a/@0x1");
        assert_eq!(key(3, "p/a/@0x1"), "perf:3:p/a/@0x1");
        assert_eq!(key(9, "p/a/@0x1"), "perf:9:p/a/@0x1");
    }

    /// The untagged form a test passes where the recording is tagged and it
    /// must not be used.
    const UNUSED: &str = "unused/";

    /// A `name=` label hides the event: the same name over other config
    /// words is another event, which the recording lacks.
    #[test]
    fn a_name_over_other_config_words_is_not_the_recorded_event() {
        let keys = recorded(&[("perf:0:p/x/@0x1:0x0:0x5", 3)]);
        let mut keys = ReplayKeys::new(&keys);
        assert_eq!(
            keys.key(0, "p/x/@0x2", "p/x/", SINGLE_WORDS),
            "perf:0:p/x/@0x2"
        );
        assert_eq!(
            keys.key(0, "p/x/@0x1:0x0:0x5", "p/x/", SINGLE_WORDS),
            "perf:0:p/x/@0x1:0x0:0x5"
        );
    }

    /// A recording made before the config words were keyed is read by its
    /// labels, as it was made.
    #[test]
    fn an_untagged_recording_is_matched_by_labels() {
        let keys = recorded(&[("perf:0:p/a/", 3), ("perf:1:p/x/", 3)]);
        let mut keys = ReplayKeys::new(&keys);
        assert_eq!(keys.key(0, "p/x/@0x9", "p/x/", SINGLE_WORDS), "perf:1:p/x/");
        assert_eq!(keys.key(1, "p/a/@0x1", "p/a/", SINGLE_WORDS), "perf:0:p/a/");
        assert_eq!(keys.key(2, "p/b/@0x2", "p/b/", SINGLE_WORDS), "perf:2:p/b/");
    }

    #[test]
    fn config_tags_leave_out_the_zero_words_at_the_end() {
        let event = |words: [u64; 4]| ResolvedEvent {
            pmu: 0,
            label: "x".into(),
            named: true,
            qualified: true,
            spec: 0,
            attr: EventAttr {
                perf_type: 9,
                words,
            },
        };
        assert_eq!(config_tag([event([0; 4])].iter()), "@0x0");
        assert_eq!(config_tag([event([0x1e98, 0, 0, 0])].iter()), "@0x1e98");
        assert_eq!(
            config_tag([event([1, 0, 2, 0]), event([0, 0, 0, 3])].iter()),
            "@0x1:0x0:0x2,0x0:0x0:0x0:0x3"
        );
        assert!(is_tagged("p/a,b/@0x1,0x2"));
        assert!(!is_tagged("p/a,b/"));
    }

    /// A group and a single raw event can have the same label; each reads
    /// only values of its own shape.
    #[test]
    fn a_group_and_a_single_event_of_one_label_are_told_apart() {
        let group = group_words(2);
        let keys = recorded(&[
            ("perf:0:p/m=0,g=0/@0x0,0x0", group),
            ("perf:1:p/m=0,g=0/@0x0", 3),
        ]);
        let mut keys = ReplayKeys::new(&keys);
        assert_eq!(
            keys.key(0, "p/m=0,g=0/@0x0", UNUSED, SINGLE_WORDS),
            "perf:1:p/m=0,g=0/@0x0"
        );
        assert_eq!(
            keys.key(1, "p/m=0,g=0/@0x0,0x0", UNUSED, group),
            "perf:0:p/m=0,g=0/@0x0,0x0"
        );
    }

    /// A forged recording's key at the highest index: a unit it lacks
    /// still gets a key the recording does not hold, not an overflow (a
    /// panic, or, wrapped, another unit's key, whose values it would then
    /// show as its own).
    #[test]
    fn a_missing_unit_never_gets_a_recorded_key() {
        let top = format!("perf:{}:p/a/@0x1", usize::MAX);
        let keys = vec![(top.clone(), 3), ("perf:0:p/a/@0x1".to_string(), 3)];
        let mut replay = ReplayKeys::new(&keys);
        let mut key = |i| replay.key(i, "p/a/@0x1", UNUSED, SINGLE_WORDS);
        assert_eq!(key(usize::MAX), top);
        assert_eq!(key(0), "perf:0:p/a/@0x1");
        assert_eq!(key(usize::MAX), "perf:1:p/a/@0x1");
    }
}
