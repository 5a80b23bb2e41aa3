//! The kernel's perf ABI, as much of it as cxlstat and iostat-rs's
//! `--latency` use: `struct
//! perf_event_attr`, the `perf_event_open` system call and the counter
//! ioctls, correct on every architecture Linux runs on.
//!
//! Written from the kernel's `include/uapi/linux/perf_event.h` and the
//! `_IOC` encodings of `include/uapi/asm-generic/ioctl.h` and the
//! architectures that override it (powerpc and mips have 13 size bits, 3
//! direction bits and a non-zero `_IOC_NONE`). The system call number comes
//! from the `libc` crate, which has it for each architecture.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// `struct perf_event_attr` up to `config3`, field for field at the
/// kernel's offsets (the same on every 64-bit architecture; fields cxlstat
/// never sets are kept as anonymous padding). Zeroed by `default()`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PerfEventAttr {
    /// The PMU: a `PERF_TYPE_*` value or a dynamic PMU's sysfs `type`.
    pub type_: u32,
    /// The size of the structure the caller passes: [`PERF_ATTR_SIZE`].
    pub size: u32,
    /// The event-selecting word.
    pub config: u64,
    /// `sample_period`: a sample every this many events (offset 16).
    pub sample_period: u64,
    /// `sample_type`: what a sample record holds, `PERF_SAMPLE_*` bits.
    pub sample_type: u64,
    /// What a `read(2)` returns: `PERF_FORMAT_*` bits.
    pub read_format: u64,
    /// The one-bit fields (`disabled`, `inherit`, ...): see [`attr_flag`].
    pub flags: u64,
    /// `wakeup_events`, or `wakeup_watermark` with [`FLAG_WATERMARK`] (offset 48).
    pub wakeup_events: u32,
    /// `bp_type` (offset 52).
    _bp_type: u32,
    /// The first extension word (`bp_addr`, `kprobe_func`, ...).
    pub config1: u64,
    /// The second extension word (`bp_len`, `kprobe_addr`, ...).
    pub config2: u64,
    /// `branch_sample_type`, `sample_regs_user`, `sample_stack_user`
    /// (offsets 72 to 91).
    _branch_regs_stack: [u32; 5],
    /// `clockid`: the clock of sample times with [`FLAG_USE_CLOCKID`] (offset 92).
    pub clockid: i32,
    /// `sample_regs_intr` through `sig_data` (offsets 96 to 127).
    _intr_to_sig: [u64; 4],
    /// The third extension word (offset 128, the end of size version 8).
    pub config3: u64,
}

/// `PERF_ATTR_SIZE_VER8`: the size of [`PerfEventAttr`], which ends with
/// `config3`. Kernels that know a shorter structure accept it as long as
/// the bytes they do not know are zero.
pub const PERF_ATTR_SIZE: u32 = 136;

const _: () = assert!(std::mem::size_of::<PerfEventAttr>() == PERF_ATTR_SIZE as usize);

/// The mask of one of `perf_event_attr`'s one-bit fields, by its position in
/// the header's declaration order (`disabled` is 0). C allocates bit-fields
/// from the least significant bit on little-endian ABIs and from the most
/// significant one on big-endian ones.
pub const fn attr_flag(position: u32) -> u64 {
    if cfg!(target_endian = "big") {
        1 << (63 - position)
    } else {
        1 << position
    }
}

/// `disabled`: the counter starts off (enabled later by [`ENABLE`]).
pub const FLAG_DISABLED: u64 = attr_flag(0);

/// `watermark`: wake a poller when [`PerfEventAttr::wakeup_events`] bytes
/// (`wakeup_watermark`) are in the ring, rather than after that many events.
pub const FLAG_WATERMARK: u64 = attr_flag(14);

/// `use_clockid`: sample times come from [`PerfEventAttr::clockid`].
pub const FLAG_USE_CLOCKID: u64 = attr_flag(25);

/// `PERF_TYPE_SOFTWARE`.
pub const TYPE_SOFTWARE: u32 = 1;
/// `PERF_COUNT_SW_BPF_OUTPUT`: the software event `bpf_perf_event_output`
/// writes into.
pub const COUNT_SW_BPF_OUTPUT: u64 = 10;
/// `PERF_TYPE_TRACEPOINT`: `config` is a tracepoint's tracefs `id`.
pub const TYPE_TRACEPOINT: u32 = 2;

/// `PERF_SAMPLE_TIME`.
pub const SAMPLE_TIME: u64 = 1 << 2;
/// `PERF_SAMPLE_RAW`: the tracepoint's record as tracefs' `format` describes it.
pub const SAMPLE_RAW: u64 = 1 << 10;

/// `PERF_FORMAT_TOTAL_TIME_ENABLED`.
pub const FORMAT_TOTAL_TIME_ENABLED: u64 = 1 << 0;
/// `PERF_FORMAT_TOTAL_TIME_RUNNING`.
pub const FORMAT_TOTAL_TIME_RUNNING: u64 = 1 << 1;
/// `PERF_FORMAT_ID`: each value is followed by the event's id.
pub const FORMAT_ID: u64 = 1 << 2;
/// `PERF_FORMAT_GROUP`: the leader's read returns the whole group.
pub const FORMAT_GROUP: u64 = 1 << 3;

/// `PERF_FLAG_FD_CLOEXEC`: the new descriptor is close-on-exec.
pub const FLAG_FD_CLOEXEC: u64 = 1 << 3;
/// `PERF_IOC_FLAG_GROUP`: an ioctl applies to the leader's whole group.
pub const IOC_FLAG_GROUP: u64 = 1;

/// One architecture's `_IOC` encoding: direction codes and field widths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IocLayout {
    /// `_IOC_NONE`: no argument.
    pub none: u32,
    /// `_IOC_SIZEBITS` (the direction takes the bits above).
    pub size_bits: u32,
}

/// `include/uapi/asm-generic/ioctl.h`: x86, arm, aarch64, riscv, s390, ...
pub const IOC_GENERIC: IocLayout = IocLayout {
    none: 0,
    size_bits: 14,
};

/// `arch/powerpc/include/uapi/asm/ioctl.h` and mips' equivalent.
pub const IOC_POWERPC_MIPS: IocLayout = IocLayout {
    none: 1,
    size_bits: 13,
};

#[cfg(any(target_arch = "sparc", target_arch = "sparc64"))]
compile_error!("this architecture's _IOC encoding is not implemented in common::perf");

/// The `_IOC` encoding of the architecture this is compiled for.
#[cfg(any(
    target_arch = "powerpc",
    target_arch = "powerpc64",
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "mips32r6",
    target_arch = "mips64r6"
))]
pub const IOC: IocLayout = IOC_POWERPC_MIPS;
/// The `_IOC` encoding of the architecture this is compiled for.
#[cfg(not(any(
    target_arch = "powerpc",
    target_arch = "powerpc64",
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "mips32r6",
    target_arch = "mips64r6"
)))]
pub const IOC: IocLayout = IOC_GENERIC;

impl IocLayout {
    /// `_IOC(dir, type, nr, size)`: `nr` in bits 0-7, `type` in 8-15, the
    /// argument's size from bit 16, the direction above it.
    pub const fn ioc(self, dir: u32, kind: u8, nr: u8, size: usize) -> u32 {
        (dir << (16 + self.size_bits)) | ((size as u32) << 16) | ((kind as u32) << 8) | nr as u32
    }

    /// `_IO(type, nr)`: no argument.
    pub const fn io(self, kind: u8, nr: u8) -> u32 {
        self.ioc(self.none, kind, nr, 0)
    }
}

/// The perf ioctls' `type`, `'$'`.
const PERF_IOC_TYPE: u8 = b'$';

/// A perf ioctl whose argument is an integer, never an address: the only
/// requests [`ioctl`] takes, made here alone (`PERF_EVENT_IOC_ID`, for
/// one, has the kernel write to the address its argument names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntRequest(u32);

impl IntRequest {
    /// The request's number, as `ioctl(2)` takes it.
    pub const fn number(self) -> u32 {
        self.0
    }
}

/// `PERF_EVENT_IOC_ENABLE`, `_IO('$', 0)`; the argument: flags.
pub const ENABLE: IntRequest = IntRequest(IOC.io(PERF_IOC_TYPE, 0));
/// `PERF_EVENT_IOC_SET_OUTPUT`, `_IO('$', 5)`: samples go to another
/// event's ring buffer (same CPU); the argument: that event's descriptor.
pub const SET_OUTPUT: IntRequest = IntRequest(IOC.io(PERF_IOC_TYPE, 5));

/// `perf_event_open(attr, pid, cpu, group_fd, flags)`: a new counter.
pub fn open(
    attr: &PerfEventAttr,
    pid: libc::pid_t,
    cpu: i32,
    group: Option<BorrowedFd<'_>>,
    flags: u64,
) -> io::Result<OwnedFd> {
    // The kernel writes its own size back into the structure on E2BIG.
    let mut attr = *attr;
    let group_fd = group.map_or(-1, |fd| fd.as_raw_fd());
    // SAFETY: attr is a valid perf_event_attr of attr.size bytes that the
    // kernel may write to; the other arguments are plain integers.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &mut attr as *mut PerfEventAttr,
            pid,
            cpu,
            group_fd,
            flags as libc::c_ulong,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// A perf ioctl whose argument is an integer ([`ENABLE`], [`SET_OUTPUT`]).
pub fn ioctl(fd: BorrowedFd<'_>, request: IntRequest, arg: u64) -> io::Result<()> {
    // SAFETY: an IntRequest is one of perf's own requests (type '$') that
    // take an integer argument, made in this module alone; the kernel
    // reads or writes none of this process's memory for it.
    let result = unsafe { libc::ioctl(fd.as_raw_fd(), request.0 as _, arg as libc::c_ulong) };
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;

    #[test]
    fn attr_fields_sit_at_the_kernels_offsets() {
        // include/uapi/linux/perf_event.h, counted by hand.
        assert_eq!(offset_of!(PerfEventAttr, type_), 0);
        assert_eq!(offset_of!(PerfEventAttr, size), 4);
        assert_eq!(offset_of!(PerfEventAttr, config), 8);
        assert_eq!(offset_of!(PerfEventAttr, sample_period), 16);
        assert_eq!(offset_of!(PerfEventAttr, sample_type), 24);
        assert_eq!(offset_of!(PerfEventAttr, read_format), 32);
        assert_eq!(offset_of!(PerfEventAttr, flags), 40);
        assert_eq!(offset_of!(PerfEventAttr, config1), 56);
        assert_eq!(offset_of!(PerfEventAttr, wakeup_events), 48);
        assert_eq!(offset_of!(PerfEventAttr, config2), 64);
        assert_eq!(offset_of!(PerfEventAttr, clockid), 92);
        assert_eq!(offset_of!(PerfEventAttr, config3), 128);
        assert_eq!(std::mem::size_of::<PerfEventAttr>(), 136);
    }

    #[test]
    fn generic_ioctl_numbers() {
        // asm-generic: dir << 30 | size << 16 | '$' << 8 | nr, _IOC_NONE = 0;
        // _IOC_READ = 2 (from a `_IOR('$', 7, u64)`, 0x8008_2407).
        assert_eq!(IOC_GENERIC.io(b'$', 0), 0x0000_2400);
        assert_eq!(IOC_GENERIC.io(b'$', 5), 0x0000_2405);
        assert_eq!(IOC_GENERIC.ioc(2, b'$', 7, 8), 0x8008_2407);
    }

    #[test]
    fn powerpc_ioctl_numbers() {
        // powerpc: dir << 29 | size << 16 | '$' << 8 | nr, _IOC_NONE = 1,
        // _IOC_READ = 2.
        assert_eq!(IOC_POWERPC_MIPS.io(b'$', 0), 0x2000_2400);
        assert_eq!(IOC_POWERPC_MIPS.io(b'$', 5), 0x2000_2405);
        assert_eq!(IOC_POWERPC_MIPS.ioc(2, b'$', 7, 8), 0x4008_2407);
    }

    /// The numbers compiled in for this architecture, written out by hand:
    /// run under qemu-user by `.ci/cross` for ppc64le and aarch64.
    #[test]
    fn compiled_ioctl_numbers_are_this_architectures() {
        let expected: [u32; 2] = if cfg!(target_arch = "powerpc64") {
            [0x2000_2400, 0x2000_2405]
        } else if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
            [0x2400, 0x2405]
        } else {
            return;
        };
        let compiled = [ENABLE.number(), SET_OUTPUT.number()];
        assert_eq!(compiled, expected, "{}", std::env::consts::ARCH);
    }

    #[test]
    fn flags_are_the_low_bits_on_little_endian() {
        if cfg!(target_endian = "little") {
            assert_eq!(FLAG_DISABLED, 1);
            assert_eq!(attr_flag(5), 0x20, "exclude_kernel");
            assert_eq!(FLAG_USE_CLOCKID, 0x200_0000, "use_clockid");
            assert_eq!(FLAG_WATERMARK, 0x4000, "watermark");
        }
    }
}
