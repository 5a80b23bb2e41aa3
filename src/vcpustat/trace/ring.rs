//! Access to the per-vCPU DTL rings (`/sys/kernel/debug/powerpc/dtl/cpu-N`).
//!
//! The core's [`Source`](crate::common::source::Source) reads whole files,
//! which is right for `lparcfg` or `dtl_event_mask` but wrong for `cpu-N`:
//! opening it starts logging, only one opener is allowed, every read
//! *consumes* entries, and closing it stops logging. A recording of such
//! reads could not be replayed faithfully, so the rings have this narrow
//! trait of their own instead: open a ring, read 48-byte records from it.
//! [`DebugfsRings`] is the live implementation; the test suite has a
//! simulated hypervisor that implements the same trait with the kernel's
//! ring semantics.

use std::fs::File;
use std::io::{self, Read};
use std::path::PathBuf;

use crate::common::root::{Access, Root};
use crate::common::signals::StopSignal;
use crate::vcpustat::session::{EventMaskLock, MUTEX_WAIT};

use super::error::TraceError;
use super::record::EVENT_MASK_PATH;

/// The kernel path of the DTL directory.
pub const DTL_DIR: &str = "/sys/kernel/debug/powerpc/dtl";

/// The kernel path of one vCPU's ring.
pub fn ring_path(cpu: u32) -> String {
    format!("{DTL_DIR}/cpu-{cpu}")
}

/// One open ring. Reads never block: they return the number of bytes of
/// whole new records (a multiple of 48), or 0 when nothing is new.
pub trait DtlRing {
    /// Reads new records into `buf`, whose length must be a multiple of 48.
    fn read_records(&mut self, buf: &mut [u8]) -> io::Result<usize>;
}

/// Opens rings by vCPU number.
pub trait DtlRings {
    /// Opens the ring of `cpu`. A second opener gets `EBUSY`.
    fn open(&self, cpu: u32) -> io::Result<Box<dyn DtlRing>>;
    /// Whether these are the running kernel's own rings, whose reading may
    /// crash it (see [`super::safety`]); false for files under a
    /// `--sysroot` directory and for simulations.
    fn reads_running_kernel(&self) -> bool;
    /// Keeps other vcpustat runs on these rings from setting
    /// `dtl_event_mask` until the lock is dropped; `None` where runs do not
    /// meet, or cannot (after a note, unless for want of permission). An
    /// error when another run has held it for long, or a stop signal came
    /// meanwhile.
    fn lock_event_mask(&self) -> Result<Option<EventMaskLock>, TraceError>;
}

/// The live rings under a root directory (`/` or `--sysroot`), opened as
/// every kernel file is (see [`Root`]): never blocking, regular files only.
pub struct DebugfsRings {
    root: Root,
    /// What ends a wait for another run's lock, if anything.
    stop: Option<StopSignal>,
}

impl DebugfsRings {
    /// Rings under `root` (the kernel's `/` is `root`).
    pub fn new(root: impl Into<PathBuf>) -> DebugfsRings {
        DebugfsRings {
            root: Root::new(root),
            stop: None,
        }
    }

    /// The same rings, whose wait for another run's lock ends at a stop
    /// signal caught by `stop`.
    pub fn stopped_by(self, stop: &StopSignal) -> DebugfsRings {
        DebugfsRings {
            stop: Some(stop.clone()),
            ..self
        }
    }
}

struct DebugfsRing {
    file: File,
}

impl DtlRing for DebugfsRing {
    fn read_records(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.file.read(buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => return other,
            }
        }
    }
}

impl DtlRings for DebugfsRings {
    fn open(&self, cpu: u32) -> io::Result<Box<dyn DtlRing>> {
        let file = self.root.open_file(&ring_path(cpu), Access::Read)?;
        Ok(Box::new(DebugfsRing { file }))
    }

    fn reads_running_kernel(&self) -> bool {
        std::fs::canonicalize(self.root.path()).is_ok_and(|root| root == std::path::Path::new("/"))
    }

    /// The lock of the runs that meet under the same root
    /// ([`EventMaskLock`]), as an interval run meets the others: without
    /// it where it cannot be taken (another user's `run` directory).
    fn lock_event_mask(&self) -> Result<Option<EventMaskLock>, TraceError> {
        let caught = || self.stop.as_ref().and_then(StopSignal::caught);
        let unset = |e| Err(TraceError::io(format!("cannot set {EVENT_MASK_PATH}"), e));
        match EventMaskLock::take(self.root.path(), MUTEX_WAIT, &|| caught().is_some()) {
            Ok(lock) => Ok(lock),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => match caught() {
                Some(signal) => Err(TraceError::Stopped(signal)),
                None => unset(e),
            },
            Err(e) if e.kind() == io::ErrorKind::TimedOut => unset(e),
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => Ok(None),
            Err(e) => {
                crate::common::cli::tell(
                    "vcpustat",
                    format_args!(
                        "note: cannot meet other vcpustat runs ({e}): a recording of other \
                         --cpus started at the same time may find this run's mask for the one \
                         to put back"
                    ),
                );
                Ok(None)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_rings_open_under_the_root_and_read_whole_files() {
        let dir = crate::common::scratch::scratch("ring");
        let dtl = dir.join("sys/kernel/debug/powerpc/dtl");
        std::fs::create_dir_all(&dtl).unwrap();
        std::fs::write(dtl.join("cpu-3"), [1u8; 96]).unwrap();
        let rings = DebugfsRings::new(&dir);
        let mut ring = rings.open(3).unwrap();
        let mut buf = [0u8; 4080];
        assert_eq!(ring.read_records(&mut buf).unwrap(), 96);
        assert_eq!(ring.read_records(&mut buf).unwrap(), 0);
        let err = rings.open(4).err().unwrap();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(!rings.reads_running_kernel());
        assert!(DebugfsRings::new("/").reads_running_kernel());
        assert!(
            DebugfsRings::new(
                dir.join("..")
                    .join("..")
                    .join("..")
                    .join("..")
                    .join("..")
                    .join("..")
                    .join("..")
            )
            .reads_running_kernel()
        );
        let fifo = std::ffi::CString::new(dtl.join("cpu-5").to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let err = rings.open(5).err().unwrap();
        assert!(err.to_string().contains("FIFO"), "{err}");
    }
}
