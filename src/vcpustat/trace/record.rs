//! `vcpustat trace record`: poll the chosen vCPUs' rings into one buffer
//! per vCPU and write a recording.

use std::io;
use std::path::PathBuf;
use std::time::{Duration, Instant, UNIX_EPOCH};

use super::entry::ENTRY_BYTES;
use super::error::TraceError;
use super::identity;
use super::recording::{CpuIndex, FORMAT_NAME, FORMAT_VERSION, Header, write_recording};
use super::ring::{DTL_DIR, DtlRing, DtlRings, ring_path};
use super::safety::{self, Verdict};
use crate::common::interval::instant_after;
use crate::common::source::Source;

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
    ring: Box<dyn DtlRing>,
    data: Vec<u8>,
    reads: u64,
    possibly_lost_reads: u64,
}

/// Restores `dtl_event_mask` when dropped: on success, on errors and on
/// unwinding alike.
struct MaskGuard<'a> {
    source: &'a dyn Source,
    original: Vec<u8>,
}

impl Drop for MaskGuard<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.source.write_file(EVENT_MASK_PATH, &self.original) {
            eprintln!(
                "vcpustat: cannot restore {EVENT_MASK_PATH} to {}: {e}",
                String::from_utf8_lossy(&self.original).trim()
            );
        }
    }
}

fn set_event_mask<'a>(source: &'a dyn Source, mask: u8) -> Result<MaskGuard<'a>, TraceError> {
    let original = source
        .read(EVENT_MASK_PATH)
        .map_err(|e| TraceError::open(EVENT_MASK_PATH, e))?;
    source
        .write_file(EVENT_MASK_PATH, format!("0x{mask:02x}\n").as_bytes())
        .map_err(|e| TraceError::open(EVENT_MASK_PATH, e))?;
    Ok(MaskGuard { source, original })
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
fn poll_all(buffers: &mut [CpuBuffer], scratch: &mut [u8], full: usize) -> Result<(), TraceError> {
    for b in buffers.iter_mut() {
        let n = b
            .ring
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
        b.reads += 1;
        if n / ENTRY_BYTES >= full {
            b.possibly_lost_reads += 1;
        }
        b.data.extend_from_slice(&scratch[..n]);
    }
    Ok(())
}

/// Records with the given rings. `pace` is called between polls: it waits
/// until the next poll is due and returns false when recording must end
/// (duration reached or stop signal). The rings are polled once more after
/// that, closed, the event mask is restored and the file is written.
pub fn record_with(
    options: &RecordOptions,
    source: &dyn Source,
    rings: &dyn DtlRings,
    pace: &mut dyn FnMut() -> bool,
) -> Result<RecordSummary, TraceError> {
    check_kernel(source, options.force)?;
    let partition = identity::partition(source).map_err(TraceError::Input)?;
    let timebase_hz = identity::timebase_hz(source).map_err(TraceError::Input)?;
    let host = source
        .uname()
        .map_err(|e| TraceError::io("reading the host identity".into(), e))?;
    let cpus = match &options.cpus {
        Some(cpus) => cpus.clone(),
        None => discover_cpus(source)?,
    };
    let ring_entries = ring_entries(source);
    let mask = options.events.as_deref().map(event_mask);
    let guard = match mask {
        Some(mask) => Some(set_event_mask(source, mask)?),
        None => None,
    };
    let mut buffers = Vec::with_capacity(cpus.len());
    for &cpu in &cpus {
        let ring = rings
            .open(cpu)
            .map_err(|e| TraceError::open(&ring_path(cpu), e))?;
        buffers.push(CpuBuffer {
            cpu,
            ring,
            data: Vec::with_capacity(ring_entries as usize * ENTRY_BYTES * 4),
            reads: 0,
            possibly_lost_reads: 0,
        });
    }
    let start_unix_ns = source
        .now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let started = Instant::now();
    let mut scratch = vec![0u8; ring_entries as usize * ENTRY_BYTES];
    let full = ring_entries as usize - 1;
    loop {
        poll_all(&mut buffers, &mut scratch, full)?;
        if !pace() {
            poll_all(&mut buffers, &mut scratch, full)?;
            break;
        }
    }
    let duration_ns = started.elapsed().as_nanos() as u64;
    let blocks: Vec<(Vec<u8>, u64, u64)> = buffers
        .into_iter()
        .map(|b| (b.data, b.reads, b.possibly_lost_reads))
        .collect();
    drop(guard);
    let header = Header {
        format: FORMAT_NAME.to_string(),
        version: FORMAT_VERSION,
        host,
        partition_id: partition.id,
        partition_name: partition.name,
        system_serial: partition.system_serial,
        timebase_hz,
        start_unix_ns,
        duration_ns,
        event_mask: mask,
        ring_entries,
        cpus: cpus
            .iter()
            .map(|&cpu| CpuIndex {
                cpu,
                offset: 0,
                entries: 0,
                reads: 0,
                possibly_lost_reads: 0,
            })
            .collect(),
    };
    let views: Vec<(&[u8], u64, u64)> = blocks
        .iter()
        .map(|(d, r, l)| (d.as_slice(), *r, *l))
        .collect();
    let header = write_recording(&options.output, header, &views)
        .map_err(|e| TraceError::Input(e.to_string()))?;
    Ok(RecordSummary { header })
}

/// The live pacing: sleep `poll` between polls, stop after `duration` or
/// on a stop signal.
pub fn live_pace<'a>(
    options: &RecordOptions,
    stop: &'a crate::common::signals::StopSignal,
) -> impl FnMut() -> bool + 'a {
    let start = Instant::now();
    let poll = options.poll;
    let end = options.duration.map(|d| instant_after(start, d));
    let mut index: u32 = 0;
    move || {
        index = index.saturating_add(1);
        let mut due = instant_after(start, poll.saturating_mul(index));
        if let Some(end) = end {
            if Instant::now() >= end {
                return false;
            }
            due = due.min(end);
        }
        stop.sleep_until(due) && end.is_none_or(|end| Instant::now() < end)
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
        Some(libc::ENOENT) => format!(
            "{path}: not found: no Dispatch Trace Log here (needs a pseries LPAR with \
             debugfs mounted on /sys/kernel/debug)"
        ),
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
        let busy = explain_open_error("/x/cpu-1", &io::Error::from_raw_os_error(libc::EBUSY));
        assert!(busy.contains("vpa_dtl perf event"), "{busy}");
        let denied = explain_open_error("/x/cpu-1", &io::Error::from_raw_os_error(libc::EACCES));
        assert!(
            denied.starts_with("/x/cpu-1: permission denied"),
            "{denied}"
        );
    }
}
