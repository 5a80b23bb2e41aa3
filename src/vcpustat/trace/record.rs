//! `vcpustat trace record`: poll the chosen vCPUs' rings into one buffer
//! per vCPU and write them to the recording as blocks, at least once a
//! second, so that a killed run leaves a readable file.

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant, UNIX_EPOCH};

use super::entry::ENTRY_BYTES;
use super::error::TraceError;
use super::identity;
use super::progress::Progress;
use super::recording::{CpuIndex, FORMAT_NAME, FORMAT_VERSION, Header, RecordingWriter};
use super::ring::{DTL_DIR, DtlRing, DtlRings, ring_path};
use super::safety::{self, Verdict};
use crate::common::interval::{Grid, instant_after};
use crate::common::source::Source;
use crate::vcpustat::session::EventMaskLock;

/// How often the recorder hands what it read to the file, at the latest.
pub const FLUSH_EVERY: Duration = Duration::from_secs(1);
/// Where debugfs is mounted.
pub const DEBUGFS: &str = "/sys/kernel/debug";

/// The kernel path of the event mask, sampled when a ring is opened.
pub const EVENT_MASK_PATH: &str = "/sys/kernel/debug/powerpc/dtl/dtl_event_mask";
/// The kernel path of the ring size.
pub const BUF_ENTRIES_PATH: &str = "/sys/kernel/debug/powerpc/dtl/dtl_buf_entries";
/// Ring size when `dtl_buf_entries` cannot be read (4096 / 48).
pub const DEFAULT_RING_ENTRIES: u32 = 85;

/// A kind of DTL event the hypervisor can log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Event {
    /// Voluntary (OS-initiated) virtual processor waits: H_CEDE.
    Cede,
    /// Time-slice preempts.
    Preempt,
    /// Virtual partition memory page faults.
    Fault,
}

impl Event {
    /// The `dtl_event_mask` bit of this event (DTL_LOG_CEDE/PREEMPT/FAULT).
    pub fn mask_bit(self) -> u8 {
        match self {
            Event::Cede => 0x1,
            Event::Preempt => 0x2,
            Event::Fault => 0x4,
        }
    }
}

/// The event mask value for a set of events.
pub fn event_mask(events: &[Event]) -> u8 {
    events.iter().fold(0, |mask, e| mask | e.mask_bit())
}

/// Everything `trace record` needs, checked before anything is opened.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordOptions {
    /// vCPUs to record; `None` records every `cpu-N` of the DTL directory.
    pub cpus: Option<Vec<u32>>,
    /// How long to record; `None` records until a stop signal.
    pub duration: Option<Duration>,
    /// Time between two polls of every ring.
    pub poll: Duration,
    /// Events to log; `None` leaves `dtl_event_mask` as it is.
    pub events: Option<Vec<Event>>,
    /// Where the recording goes.
    pub output: PathBuf,
    /// Read the DTL even on kernels known to crash.
    pub force: bool,
}

/// What a finished recording holds.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordSummary {
    /// The header written (with the per-vCPU index).
    pub header: Header,
}

/// One vCPU's own buffer and read statistics (one allocation per vCPU,
/// grown on its own: a busy vCPU never shrinks another's space).
struct CpuBuffer {
    cpu: u32,
    /// Records read since the last block was written.
    data: Vec<u8>,
    /// Reads (and full-ring reads) since the last block.
    reads: u32,
    possibly_lost_reads: u32,
    /// Totals of the whole recording.
    total: CpuIndex,
}

/// Restores `dtl_event_mask` when dropped: once every ring is open (the
/// kernel reads the mask only then), or on an error or unwinding before;
/// unless someone else set another since vcpustat set `ours`, which is
/// theirs, as a frequency is in an interval run.
struct MaskGuard<'a> {
    source: &'a dyn Source,
    original: Vec<u8>,
    ours: u8,
    /// Released after the mask is put back (fields drop after `drop`).
    _lock: Option<EventMaskLock>,
}

impl Drop for MaskGuard<'_> {
    fn drop(&mut self) {
        let original = String::from_utf8_lossy(&self.original);
        let original = original.trim();
        match current_event_mask(self.source) {
            Some(now) if now != self.ours => crate::common::cli::tell(
                "vcpustat",
                format_args!(
                    "note: someone else set {EVENT_MASK_PATH} to 0x{now:02x} while vcpustat \
                     opened its rings: left as it is (vcpustat had set 0x{:02x}, it was \
                     {original})",
                    self.ours
                ),
            ),
            _ => {
                if let Err(e) = self.source.write_file(EVENT_MASK_PATH, &self.original) {
                    crate::common::cli::tell(
                        "vcpustat",
                        format_args!("cannot restore {EVENT_MASK_PATH} to {original}: {e}"),
                    );
                }
            }
        }
    }
}

/// Sets `dtl_event_mask` to `mask` until the guard is dropped, once sure
/// of the room to open the rings and put it back
/// ([`room_for_a_run`](crate::vcpustat::restore::room_for_a_run)), and
/// holding `lock` (other runs wait to read the mask until it is back).
fn set_event_mask<'a>(
    source: &'a dyn Source,
    mask: u8,
    lock: Option<EventMaskLock>,
) -> Result<MaskGuard<'a>, TraceError> {
    let original = source
        .read(EVENT_MASK_PATH)
        .map_err(|e| TraceError::open(EVENT_MASK_PATH, e))?;
    let bytes = crate::vcpustat::restore::room_for_a_run(source);
    if !crate::common::alloc::has_room(bytes) {
        return Err(TraceError::NoRoom { bytes });
    }
    source
        .write_file(EVENT_MASK_PATH, format!("0x{mask:02x}\n").as_bytes())
        .map_err(|e| TraceError::open(EVENT_MASK_PATH, e))?;
    Ok(MaskGuard {
        source,
        original,
        ours: mask,
        _lock: lock,
    })
}

/// The `dtl_event_mask` in effect, as debugfs prints it (`0x07`); `None`
/// when it cannot be read or is not a mask, which a recording can do
/// without.
fn current_event_mask(source: &dyn Source) -> Option<u8> {
    let text = source.read(EVENT_MASK_PATH).ok()?;
    parse_event_mask(std::str::from_utf8(&text).ok()?.trim())
}

/// A mask in hexadecimal with `0x` (debugfs's `x8` files) or decimal.
fn parse_event_mask(text: &str) -> Option<u8> {
    match text.strip_prefix("0x") {
        Some(hex) => u8::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

fn discover_cpus(source: &dyn Source) -> Result<Vec<u32>, TraceError> {
    let names = source
        .list_dir(DTL_DIR)
        .map_err(|e| TraceError::open(DTL_DIR, e))?;
    let mut cpus: Vec<u32> = names
        .iter()
        .filter_map(|n| n.strip_prefix("cpu-")?.parse().ok())
        .collect();
    cpus.sort_unstable();
    if cpus.is_empty() {
        return Err(TraceError::Input(format!("{DTL_DIR}: no cpu-N files")));
    }
    Ok(cpus)
}

/// The ring size from `dtl_buf_entries`; the kernel default when it is
/// unreadable or implausible.
fn ring_entries(source: &dyn Source) -> u32 {
    source
        .read_string(BUF_ENTRIES_PATH)
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .filter(|&n| (2..=65_536).contains(&n))
        .unwrap_or(DEFAULT_RING_ENTRIES)
}

/// Tells a kernel without `CONFIG_DTL` from a system without debugfs when
/// the DTL directory is missing.
pub fn check_dtl_present(source: &dyn Source) -> Result<(), TraceError> {
    if source.is_dir(DTL_DIR) {
        return Ok(());
    }
    // An unmounted debugfs leaves its mount point empty.
    let mounted = source
        .list_dir(DEBUGFS)
        .is_ok_and(|names| !names.is_empty());
    Err(TraceError::Open(if mounted {
        format!(
            "{DTL_DIR}: not found, though debugfs is mounted on {DEBUGFS}: \
             this kernel has no DTL support (CONFIG_DTL), or this is not a pseries LPAR"
        )
    } else {
        format!(
            "{DEBUGFS}: debugfs is not mounted (mount -t debugfs none {DEBUGFS}); \
             the DTL is {DTL_DIR}"
        )
    }))
}

/// Refuses kernels that crash when the DTL is read, unless forced.
pub fn check_kernel(source: &dyn Source, force: bool) -> Result<(), TraceError> {
    let release = source
        .uname()
        .map_err(|e| TraceError::Input(format!("cannot read the kernel release: {e}")))?
        .release;
    let hardened = safety::hardened_usercopy(source, &release);
    match safety::judge(&release, hardened) {
        Verdict::Safe => Ok(()),
        Verdict::MayCrash(_) if force => Ok(()),
        Verdict::MayCrash(reason) => Err(TraceError::UnsafeKernel(reason)),
    }
}

/// Polls every ring once, appending what each returns to its buffer.
fn poll_all(
    rings: &mut [Box<dyn DtlRing>],
    buffers: &mut [CpuBuffer],
    scratch: &mut [u8],
    full: usize,
) -> Result<(), TraceError> {
    for (ring, b) in rings.iter_mut().zip(buffers.iter_mut()) {
        let n = ring
            .read_records(scratch)
            .map_err(|e| TraceError::io(format!("reading {}", ring_path(b.cpu)), e))?;
        if n == 0 {
            continue;
        }
        if !n.is_multiple_of(ENTRY_BYTES) {
            return Err(TraceError::Input(format!(
                "{}: read returned {n} bytes, not whole 48-byte records",
                ring_path(b.cpu)
            )));
        }
        b.reads = b.reads.saturating_add(1);
        if n / ENTRY_BYTES >= full {
            b.possibly_lost_reads = b.possibly_lost_reads.saturating_add(1);
        }
        b.data.extend_from_slice(&scratch[..n]);
    }
    Ok(())
}

/// Writes one block per vCPU with new records and flushes.
fn write_blocks<W: Write>(
    buffers: &mut [CpuBuffer],
    out: &mut RecordingWriter<W>,
) -> io::Result<()> {
    for (index, b) in buffers.iter_mut().enumerate() {
        if b.data.is_empty() {
            continue;
        }
        out.block(index, &b.data, b.reads, b.possibly_lost_reads)?;
        b.total.entries += (b.data.len() / ENTRY_BYTES) as u64;
        b.total.reads += u64::from(b.reads);
        b.total.possibly_lost_reads += u64::from(b.possibly_lost_reads);
        b.data.clear();
        (b.reads, b.possibly_lost_reads) = (0, 0);
    }
    out.flush()
}

/// Records with the given rings into `options.output`, which is created
/// before anything else (an unwritable path fails at once) and removed
/// again if recording cannot start, unless it was there before (even
/// empty: only a file this run made goes). A recording already there is emptied
/// only when the new one is first written: a run that cannot start (a
/// busy ring) leaves it as it was. See [`record_to`].
pub fn record_with(
    options: &RecordOptions,
    source: &dyn Source,
    rings: &dyn DtlRings,
    pace: &mut dyn FnMut() -> bool,
    progress: &mut Progress,
) -> Result<RecordSummary, TraceError> {
    let path = crate::common::escape::path(&options.output);
    // A file there before is left, even empty: only one this run made goes.
    let existed = std::fs::symlink_metadata(&options.output).is_ok();
    let file = crate::common::user_file::create_unemptied(&options.output)
        .map_err(|e| TraceError::io(format!("cannot write the recording {path}"), e))?;
    let created = file.metadata().ok();
    let out = EmptiedAtFirstWrite {
        empty_first: created.as_ref().is_some_and(|m| m.is_file())
            && !crate::common::user_file::names_standard_output(&options.output),
        file,
    };
    let result = record_to(
        options,
        source,
        rings,
        pace,
        progress,
        BufWriter::with_capacity(64 * 1024, out),
    );
    if result.is_err()
        && !existed
        && created.is_some_and(|c| still_empty_under(&options.output, &c))
    {
        // Nothing was recorded: leave nothing behind.
        let _ = std::fs::remove_file(&options.output);
    }
    result
}

/// The output file of [`record_with`], emptied (a regular file that
/// exists) just before its first write.
struct EmptiedAtFirstWrite {
    file: std::fs::File,
    /// Whether the file is still to be emptied.
    empty_first: bool,
}

impl Write for EmptiedAtFirstWrite {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.empty_first {
            self.file.set_len(0)?;
            self.empty_first = false;
        }
        self.file.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// Whether `path` itself, not a link followed, is the empty regular file
/// `created`: `-w /dev/stdout >empty` must not remove `/dev/stdout`, the
/// link, nor `-w -` a file named `-`.
fn still_empty_under(path: &std::path::Path, created: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path).is_ok_and(|m| {
        m.is_file() && m.len() == 0 && (m.dev(), m.ino()) == (created.dev(), created.ino())
    })
}

/// Records with the given rings into `out`. `pace` is called between
/// polls: it waits until the next poll is due and returns false when
/// recording must end (duration reached or stop signal). The rings are
/// polled once more after that and closed, and the end marker is written.
/// The event mask is restored as soon as every ring is open, the header is
/// written then, and the records at least every [`FLUSH_EVERY`]; what was
/// written before a write error stays readable.
pub fn record_to<W: Write>(
    options: &RecordOptions,
    source: &dyn Source,
    rings: &dyn DtlRings,
    pace: &mut dyn FnMut() -> bool,
    progress: &mut Progress,
    out: W,
) -> Result<RecordSummary, TraceError> {
    if rings.reads_running_kernel() {
        check_kernel(source, options.force)?;
    }
    let partition = identity::partition(source).map_err(TraceError::Input)?;
    let timebase_hz = identity::timebase_hz(source).map_err(TraceError::Input)?;
    let host = source
        .uname()
        .map_err(|e| TraceError::io("reading the host identity".into(), e))?;
    check_dtl_present(source)?;
    let cpus = match &options.cpus {
        Some(cpus) => cpus.clone(),
        None => discover_cpus(source)?,
    };
    let ring_entries = ring_entries(source);
    // The mask the rings log with: the one set here, else the one the
    // kernel has. The kernel reads it only when a ring is opened (dtl_start
    // in arch/powerpc/platforms/pseries/dtl.c), below.
    // The buffers (a ring's worth per CPU: 8 MB at 2,048 CPUs) are taken
    // before the mask is set: out of memory while it is set, the run would
    // end without putting it back, and the room asked for first does not
    // count them.
    let mut buffers: Vec<CpuBuffer> = cpus
        .iter()
        .map(|&cpu| CpuBuffer {
            cpu,
            data: Vec::with_capacity(ring_entries as usize * ENTRY_BYTES),
            reads: 0,
            possibly_lost_reads: 0,
            total: CpuIndex {
                cpu,
                offset: 0,
                entries: 0,
                reads: 0,
                possibly_lost_reads: 0,
            },
        })
        .collect();
    let mut open = Vec::with_capacity(cpus.len());
    let (guard, mask) = match options.events.as_deref().map(event_mask) {
        Some(mask) => {
            let lock = rings.lock_event_mask()?;
            (Some(set_event_mask(source, mask, lock)?), Some(mask))
        }
        None => (None, current_event_mask(source)),
    };
    for &cpu in &cpus {
        open.push(
            rings
                .open(cpu)
                .map_err(|e| TraceError::open(&ring_path(cpu), e))?,
        );
    }
    // Every ring took the mask when it was opened: the one found goes back
    // now rather than at the end, so that a recording killed later, or
    // another DTL reader started meanwhile (a recording of other --cpus),
    // finds the mask as it was.
    drop(guard);
    let start_unix_ns = source
        .now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut header = Header {
        format: FORMAT_NAME.to_string(),
        version: FORMAT_VERSION,
        host,
        partition_id: partition.id,
        partition_name: partition.name,
        system_serial: partition.system_serial,
        timebase_hz,
        start_unix_ns,
        duration_ns: 0,
        event_mask: mask,
        ring_entries,
        cpus: buffers.iter().map(|b| b.total.clone()).collect(),
    };
    let path = crate::common::escape::path(&options.output);
    let write_err = |e| {
        TraceError::io(
            format!("writing {path} (what was written before is readable by `trace report`)"),
            e,
        )
    };
    let mut writer = RecordingWriter::new(out, header.clone()).map_err(write_err)?;
    let started = Instant::now();
    let mut last_flush = started;
    let mut scratch = vec![0u8; ring_entries as usize * ENTRY_BYTES];
    let full = ring_entries as usize - 1;
    loop {
        poll_all(&mut open, &mut buffers, &mut scratch, full)?;
        if last_flush.elapsed() + options.poll >= FLUSH_EVERY {
            write_blocks(&mut buffers, &mut writer).map_err(write_err)?;
            last_flush = Instant::now();
        }
        progress.show(|| {
            let entries: u64 = buffers
                .iter()
                .map(|b| b.total.entries + (b.data.len() / ENTRY_BYTES) as u64)
                .sum();
            format!(
                "recording {} vCPU(s): {:.1} s, {entries} entries",
                buffers.len(),
                started.elapsed().as_secs_f64()
            )
        });
        if !pace() {
            poll_all(&mut open, &mut buffers, &mut scratch, full)?;
            break;
        }
    }
    progress.clear();
    let duration_ns = started.elapsed().as_nanos() as u64;
    drop(open);
    write_blocks(&mut buffers, &mut writer).map_err(write_err)?;
    writer.finish(duration_ns).map_err(write_err)?;
    header.duration_ns = duration_ns;
    header.cpus = buffers.into_iter().map(|b| b.total).collect();
    Ok(RecordSummary { header })
}

/// The live pacing: sleep `poll` between polls, stop after `duration` or
/// on a stop signal.
pub fn live_pace<'a>(
    options: &RecordOptions,
    stop: &'a crate::common::signals::StopSignal,
) -> impl FnMut() -> bool + 'a {
    let start = Instant::now();
    let mut polls = Grid::new(start, options.poll);
    let end = options.duration.map(|d| instant_after(start, d));
    move || {
        let mut due = polls.due();
        if let Some(end) = end {
            if Instant::now() >= end {
                return false;
            }
            due = due.min(end);
        }
        let slept = stop.sleep_until(due);
        let now = Instant::now();
        polls.start_sample(now);
        slept && end.is_none_or(|end| now < end)
    }
}

/// Explains an `io::Error` from opening a DTL file.
pub fn explain_open_error(path: &str, err: &io::Error) -> String {
    match err.raw_os_error() {
        Some(libc::EBUSY) => format!(
            "{path}: busy: the DTL has another reader, or /proc/powerpc/vcpudispatch_stats \
             is enabled, or a vpa_dtl perf event is active (only one DTL user at a time)"
        ),
        Some(libc::EACCES) | Some(libc::EPERM) => {
            format!("{path}: permission denied: the DTL files are root-only (0400) under debugfs")
        }
        Some(libc::ENOENT) => format!("{path}: not found"),
        _ => format!("{path}: {err}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::record::{Entry, FORMAT_NAME, FORMAT_VERSION, Frame, Header, Replay};
    use crate::common::source::Uname;

    fn kernel(release: &str, config: Option<&str>) -> Replay {
        let header = Header {
            format: FORMAT_NAME.into(),
            version: FORMAT_VERSION,
            tool: "vcpustat".into(),
            args: Vec::new(),
            uname: Uname {
                sysname: "Linux".into(),
                nodename: "lpar".into(),
                release: release.into(),
                version: String::new(),
                machine: "ppc64le".into(),
            },
            start_unix_ns: 0,
            whole_tree: false,
        };
        let mut frame = Frame::default();
        if let Some(config) = config {
            frame.entries.insert(
                format!("read /boot/config-{release}"),
                Entry::Text(config.into()),
            );
        }
        Replay::from_parts(header, vec![frame])
    }

    #[test]
    fn crashing_kernels_are_refused_unless_forced_or_not_hardened() {
        let err = check_kernel(&kernel("6.6.41-ppc64le", None), false).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("refusing to read the DTL: kernel 6.6.41-ppc64le"),
            "{err}"
        );
        assert!(
            err.to_string().ends_with("use --force to read it anyway"),
            "{err}"
        );
        assert!(check_kernel(&kernel("6.6.41-ppc64le", None), true).is_ok());
        let plain = "CONFIG_PPC_SPLPAR=y\n# CONFIG_HARDENED_USERCOPY is not set\n";
        assert!(check_kernel(&kernel("6.6.41-ppc64le", Some(plain)), false).is_ok());
        let hardened = "CONFIG_HARDENED_USERCOPY=y\n";
        assert!(check_kernel(&kernel("6.6.41-ppc64le", Some(hardened)), false).is_err());
        assert!(check_kernel(&kernel("6.12.0", Some(hardened)), false).is_ok());
    }

    #[test]
    fn event_masks_and_open_errors_are_explained() {
        assert_eq!(event_mask(&[Event::Cede, Event::Fault]), 0x05);
        assert_eq!(event_mask(&[Event::Preempt, Event::Preempt]), 0x02);
        assert_eq!(parse_event_mask("0x07"), Some(7));
        assert_eq!(parse_event_mask("0x2"), Some(2));
        assert_eq!(parse_event_mask("5"), Some(5));
        assert_eq!(parse_event_mask("0x100"), None);
        assert_eq!(parse_event_mask("on"), None);
        let busy = explain_open_error("/x/cpu-1", &io::Error::from_raw_os_error(libc::EBUSY));
        assert!(busy.contains("vpa_dtl perf event"), "{busy}");
        let denied = explain_open_error("/x/cpu-1", &io::Error::from_raw_os_error(libc::EACCES));
        assert!(
            denied.starts_with("/x/cpu-1: permission denied"),
            "{denied}"
        );
    }
}
