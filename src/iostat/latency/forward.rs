//! The eBPF programs of the [`collector`](super::collector)'s forwarded
//! feed: `bpf/block.bpf.c`, compiled into the `bpf/block.bpf.o` embedded
//! here (so a build needs no BPF compiler), runs on `block_rq_issue`,
//! `block_rq_complete` and `block_rq_requeue` and writes 32 bytes an event
//! into the perf ring of the CPU it runs on. aya loads it: it creates the
//! map, sets the field offsets tracefs gives (the program's read-only
//! globals, which the verifier then knows as constants), loads the
//! programs through the verifier and attaches them.
//!
//! The rings are the collector's own `BPF_OUTPUT` events, not aya's
//! `PerfEventArray` buffers: aya (0.14) opens those to wake the reader at
//! every event, an interrupt-work item per block request, where the
//! collector's wake it when a ring is a quarter full (BENCHMARKS.md, the
//! drain thread's watermark). aya has no call to store a descriptor in a
//! `PERF_EVENT_ARRAY`, so [`Programs::set_ring`] makes that one `bpf(2)`
//! call itself. (A BPF ring buffer, which aya reads with the wake-ups
//! under the program's control, cost fio 0.09 µs more per I/O than these
//! per-CPU rings: BENCHMARKS.md, session 7.)

use std::error::Error;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

use aya::programs::TracePoint;
use aya::{Ebpf, EbpfLoader};

use super::collector::Layout;
use crate::common::alloc;
use crate::common::source::{descriptor_advice, is_out_of_descriptors};

/// The compiled program (`bash src/iostat/latency/bpf/build.sh`).
static OBJECT: &[u8] = aya::include_bytes_aligned!("bpf/block.bpf.o");

/// The bytes of a tracepoint record the program copies to read the fields
/// from (`SPAN` in block.bpf.c).
const SPAN: usize = 48;

/// The programs, in the object, and the tracepoints they go on; the issue
/// first ([`Programs::attach`] takes them in reverse).
const PROGRAMS: [(&str, &str); 3] = [
    ("issue", "block_rq_issue"),
    ("complete", "block_rq_complete"),
    ("requeue", "block_rq_requeue"),
];

/// The loaded programs and their map; detached when dropped.
pub struct Programs {
    ebpf: Ebpf,
}

impl Programs {
    /// Loads the programs for events in `layouts` (through the verifier,
    /// not yet attached), with `slots` rings (CPU numbers) in their map.
    /// The reason, as one line, when that fails.
    pub(super) fn load(layouts: &[Layout], slots: u32) -> Result<Programs, String> {
        let field_at = field_table(layouts)?;
        room_for_btf(KERNEL_BTF)?;
        let ebpf = EbpfLoader::new()
            .override_global("FIELD_AT", &field_at, true)
            .map_max_entries("EVENTS", slots)
            .load(OBJECT)
            .map_err(|e| describe("loading the eBPF object", &e))?;
        let mut programs = Programs { ebpf };
        for (program, tracepoint) in PROGRAMS {
            let (p, what) = programs.tracepoint(program, tracepoint)?;
            p.load().map_err(|e| describe(&what, &e))?;
        }
        Ok(programs)
    }

    /// Sends the events of CPU `cpu` to `event`'s ring (a `BPF_OUTPUT`
    /// perf event on that CPU).
    pub(super) fn set_ring(&mut self, cpu: u32, event: BorrowedFd<'_>) -> Result<(), String> {
        let map = self
            .ebpf
            .map("EVENTS")
            .ok_or("the eBPF object has no map EVENTS")?;
        let aya::maps::Map::PerfEventArray(data) = map else {
            return Err("the eBPF object's EVENTS is not a perf event array".into());
        };
        map_update(data.fd().as_fd(), cpu, event.as_raw_fd() as u32)
            .map_err(|e| describe("BPF_MAP_UPDATE_ELEM", &e))
    }

    /// Empties CPU `cpu`'s slot (its ring retired): the map held its event,
    /// and the event's ring, until then. Failing, the slot keeps a dead
    /// event, which the programs cannot write into.
    pub(super) fn clear_ring(&mut self, cpu: u32) {
        if let Some(aya::maps::Map::PerfEventArray(data)) = self.ebpf.map("EVENTS") {
            let _ = map_delete(data.fd().as_fd(), cpu);
        }
    }

    /// Whether the kernel refuses this thread, as it is, `bpf(2)` commands
    /// on the programs' map ([`Programs::set_ring`], [`Programs::clear_ring`]):
    /// before Linux 6.5, with `kernel.unprivileged_bpf_disabled` set, every
    /// command needed CAP_BPF (or CAP_SYS_ADMIN), where since then the
    /// holder of the map's descriptor needs none (Linux 6.18: slots set and
    /// emptied with no capability effective). Asked of the kernel, with a
    /// delete past the map's last slot, which changes nothing: `EPERM`
    /// when refused.
    pub(super) fn map_needs_privilege(&self) -> bool {
        let Some(aya::maps::Map::PerfEventArray(data)) = self.ebpf.map("EVENTS") else {
            return true;
        };
        map_delete(data.fd().as_fd(), u32::MAX)
            .is_err_and(|e| e.raw_os_error() == Some(libc::EPERM))
    }

    /// Attaches the programs to their tracepoints, the issue last: a
    /// request issued before its completion is forwarded would be held in
    /// flight until the kernel's count shows it gone (at 200,000 requests
    /// a second, tens of them), where a completion without its issue is
    /// only counted as unmatched.
    pub(super) fn attach(&mut self) -> Result<(), String> {
        for (program, tracepoint) in PROGRAMS.into_iter().rev() {
            let (p, what) = self.tracepoint(program, tracepoint)?;
            p.attach("block", tracepoint)
                .map_err(|e| describe(&what, &e))?;
        }
        Ok(())
    }

    /// The object's tracepoint program `program`, and how errors name it
    /// (by its `tracepoint`).
    fn tracepoint(
        &mut self,
        program: &str,
        tracepoint: &str,
    ) -> Result<(&mut TracePoint, String), String> {
        let what = format!("the eBPF program for {tracepoint}");
        let p: &mut TracePoint = self
            .ebpf
            .program_mut(program)
            .ok_or_else(|| format!("{what}: not in the object"))?
            .try_into()
            .map_err(|e| describe(&what, &e))?;
        Ok((p, what))
    }
}

/// The kernel's BTF, which aya reads (and parses) in `EbpfLoader::new`.
const KERNEL_BTF: &str = "/sys/kernel/btf/vmlinux";

/// How many times the BTF's size to ask for before aya parses it: aya
/// holds the file, its types' tables as they grow (a vector doubling from
/// 4.5 to 9 MiB for Linux 6.18's 5.2 MiB BTF) and the rest of the load.
/// Measured under `ulimit -v` (`prlimit --as`): runs under 21 to 24 MB
/// aborted, from 25 MB they ran. Four times (22 MB) passed runs from
/// 27 MB; five (27 MB), from 32 MB, leave room for a kernel whose tables
/// double at a worse point. A run refused goes on with perf sampling.
const BTF_ROOM_FACTOR: u64 = 5;

/// Refuses, in one line, memory limits too tight for aya to read the
/// kernel's BTF at `path`: aya's allocations are not fallible, and one
/// that fails ends the run (in one line, [`crate::common::alloc`]) where
/// perf sampling would have done. So the room is asked for first, all at
/// once, and given back. Without BTF there is nothing to check.
fn room_for_btf(path: &str) -> Result<(), String> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    let need = meta.len().saturating_mul(BTF_ROOM_FACTOR);
    match usize::try_from(need).map(alloc::has_room) {
        Ok(true) => Ok(()),
        _ => Err(format!(
            "aya, the eBPF loader, needs about {} MB of memory to read the kernel's BTF \
             ({path}, {} kB), more than the limits leave (the address space, `ulimit -v`; \
             the data size, `ulimit -d`; or the commit limit of vm.overcommit_memory=2): \
             raise them",
            need.div_ceil(1_000_000),
            meta.len().div_ceil(1000),
        )),
    }
}

/// `bpf(BPF_MAP_UPDATE_ELEM)` of a `u32` key and value.
fn map_update(map: BorrowedFd<'_>, key: u32, value: u32) -> io::Result<()> {
    /// `BPF_MAP_UPDATE_ELEM`.
    const MAP_UPDATE_ELEM: libc::c_long = 2;
    map_element(map, MAP_UPDATE_ELEM, key, Some(value))
}

/// `bpf(BPF_MAP_DELETE_ELEM)` of a `u32` key.
fn map_delete(map: BorrowedFd<'_>, key: u32) -> io::Result<()> {
    /// `BPF_MAP_DELETE_ELEM`.
    const MAP_DELETE_ELEM: libc::c_long = 3;
    map_element(map, MAP_DELETE_ELEM, key, None)
}

/// `bpf(command)` on one element of `map`: `union bpf_attr` as map_fd, 4
/// bytes of padding, the key's and the value's addresses, flags. Without
/// a value (a delete) its address is 0, as the kernel wants every field
/// after those a command reads.
fn map_element(
    map: BorrowedFd<'_>,
    command: libc::c_long,
    key: u32,
    value: Option<u32>,
) -> io::Result<()> {
    #[repr(C)]
    struct Attr {
        map_fd: u32,
        pad: u32,
        key: u64,
        value: u64,
        flags: u64,
    }
    let attr = Attr {
        map_fd: map.as_raw_fd() as u32,
        pad: 0,
        key: &key as *const u32 as u64,
        value: value.as_ref().map_or(0, |v| v as *const u32 as u64),
        flags: 0,
    };
    // SAFETY: attr is a valid bpf_attr prefix of its size; the key and
    // value it points to live until the call returns.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            command,
            &attr as *const Attr,
            std::mem::size_of::<Attr>(),
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `FIELD_AT` of block.bpf.c: per kind, the offsets of dev, sector,
/// nr_sector and rwbs, each checked to be of the size the program reads,
/// aligned to it and within [`SPAN`].
fn field_table(layouts: &[Layout]) -> Result<[[u32; 4]; 3], String> {
    let mut table = [[0u32; 4]; 3];
    for l in layouts {
        let fields = [(l.dev, 4), (l.sector, 8), (l.nr_sector, 4), (l.rwbs, 2)];
        for (slot, (field, size)) in table[l.kind as usize].iter_mut().zip(fields) {
            let fits = field.size >= size
                && (size == 2 || (field.size == size && field.offset % size == 0))
                && field
                    .offset
                    .checked_add(size)
                    .is_some_and(|end| end <= SPAN);
            if !fits {
                return Err(format!(
                    "a block tracepoint field at offset {} ({} bytes) is not one the eBPF \
                     program can read",
                    field.offset, field.size
                ));
            }
            *slot = field.offset as u32;
        }
    }
    Ok(table)
}

/// One line for `err` (its causes after colons) as met doing `what`;
/// a refusal for want of privilege names it, and so does a failure with
/// no descriptor left ([`out_of_descriptors_now`]).
fn describe(what: &str, err: &(dyn Error + 'static)) -> String {
    let mut causes: Vec<String> = Vec::new();
    let mut denied = false;
    let mut starved = None;
    let mut next = Some(err);
    while let Some(cause) = next {
        if let Some(io) = cause.downcast_ref::<io::Error>() {
            denied |= matches!(io.raw_os_error(), Some(libc::EPERM) | Some(libc::EACCES));
            if starved.is_none() && is_out_of_descriptors(io) {
                starved = io.raw_os_error().map(io::Error::from_raw_os_error);
            }
        }
        let text = cause.to_string();
        if !causes.iter().any(|c| c.contains(&text)) {
            causes.push(text);
        }
        next = cause.source();
    }
    if denied {
        return format!("{what}: eBPF needs root, or CAP_BPF with CAP_PERFMON");
    }
    if starved.is_none()
        && let Some(err) = out_of_descriptors_now()
    {
        // aya turns some failures into its own words ("tracefs not
        // found" when it cannot list tracefs), which would then point
        // elsewhere.
        return format!("{what}: {err}: {}", descriptor_advice(&err));
    }
    // The verifier's log, when there is one, ends with why it refused.
    let joined = causes.join(": ");
    let first = joined.lines().next().unwrap_or("");
    let last = joined.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
    let line = if last == first {
        format!("{what}: {first}")
    } else {
        format!("{what}: {first} ({})", last.trim())
    };
    match starved {
        Some(err) => format!("{line}: {}", descriptor_advice(&err)),
        None => line,
    }
}

/// The error of opening one more file when the process has no descriptor
/// left (EMFILE, ENFILE); `None` when it could open one.
fn out_of_descriptors_now() -> Option<io::Error> {
    match std::fs::File::open("/dev/null") {
        Err(err) if is_out_of_descriptors(&err) => Some(err),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A BTF file of no bytes (procfs and sysfs files that give no size)
    /// needs no room: not a message blaming an address-space limit, from
    /// the `mmap` of no bytes that fails.
    #[test]
    fn an_empty_btf_needs_no_room() {
        assert_eq!(room_for_btf("/proc/self/status"), Ok(()));
    }
    use crate::common::tracefs::Field;
    use crate::iostat::latency::collector::Kind;

    fn field(offset: usize, size: usize) -> Field {
        Field { offset, size }
    }

    /// block_rq_requeue's format on Linux 6.18.
    fn requeue() -> Layout {
        Layout {
            id: 2105,
            kind: Kind::Requeue,
            dev: field(8, 4),
            sector: field(16, 8),
            nr_sector: field(24, 4),
            rwbs: field(30, 10),
        }
    }

    #[test]
    fn the_program_reads_fields_of_its_sizes_within_the_span() {
        assert_eq!(field_table(&[requeue()]).unwrap()[2], [8, 16, 24, 30]);
        let refused = |what: &str, change: fn(&mut _)| {
            let mut layout = requeue();
            change(&mut layout);
            assert!(field_table(&[layout]).is_err(), "{what}");
        };
        refused("a 64-bit dev_t", |l| l.dev = field(8, 8));
        refused("a misaligned sector", |l| l.sector = field(12, 8));
        refused("beyond the copied span", |l| l.rwbs = field(47, 10));
        refused("a 1-byte rwbs", |l| l.rwbs = field(30, 1));
        refused("past the address space", |l| {
            l.dev = field(usize::MAX - 3, 4)
        });
    }

    #[test]
    fn a_refusal_names_the_privileges() {
        // As aya reports a refused bpf(2): the call, caused by the errno.
        let refused = aya::sys::SyscallError {
            call: "bpf_map_create",
            io_error: io::Error::from_raw_os_error(libc::EPERM),
        };
        let line = describe("loading", &refused);
        assert!(line.contains("CAP_BPF with CAP_PERFMON"), "{line}");
        assert!(!line.contains('\n'));
        let other = aya::sys::SyscallError {
            call: "bpf_map_create",
            io_error: io::Error::from_raw_os_error(libc::EINVAL),
        };
        assert_eq!(
            describe("loading", &other),
            "loading: `bpf_map_create` failed: Invalid argument (os error 22)"
        );
    }

    #[test]
    fn a_failure_for_want_of_a_descriptor_says_what_helps() {
        let starved = |errno| aya::sys::SyscallError {
            call: "bpf_prog_load",
            io_error: io::Error::from_raw_os_error(errno),
        };
        assert_eq!(
            describe("loading", &starved(libc::EMFILE)),
            "loading: `bpf_prog_load` failed: Too many open files (os error 24): \
             raise the open-file limit (`ulimit -n`)"
        );
        // The process's limit does not help a full system file table.
        assert_eq!(
            describe("loading", &starved(libc::ENFILE)),
            "loading: `bpf_prog_load` failed: Too many open files in system (os error 23): \
             the system's file table is full: close files, or raise fs.file-max"
        );
    }
}
