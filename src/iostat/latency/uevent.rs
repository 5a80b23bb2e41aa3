//! Knowing at once that a partition came or went: the kernel's uevents of
//! block devices, read from a `NETLINK_KOBJECT_UEVENT` socket.
//!
//! The tracker attributes a request to the partition holding its first
//! sector, by a table read from sysfs. Read only at each report, the table
//! missed a partition added since the last one for the rest of that
//! interval (its requests counted for the disk alone), and one deleted
//! and added again under a new minor for as long (they counted for its
//! old numbers, which no row shows). The kernel sends its uevent as it
//! adds or deletes the partition (`BLKPG`, a partition table re-read), and
//! a drain reads the socket before it feeds the tracker the events up to
//! `SETTLE` ago: the partition's requests find it in the table.
//!
//! Listening needs no privilege (the kernel's uevent group allows any
//! receiver). The table is still read at each report: a resize
//! (`BLKPG_RESIZE_PARTITION`: `resizepart`, `growpart`) sends no uevent,
//! and a network namespace owned by another user namespace hears none,
//! though its socket opens and binds.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The multicast group the kernel sends its uevents to (udev listens to
/// it and sends its own to group 2).
const KERNEL_GROUP: u32 = 1;

/// A socket hearing the kernel's uevents.
#[derive(Debug)]
pub struct PartitionWatch {
    socket: OwnedFd,
    /// Room for one message (the kernel's are at most 2 kB of environment
    /// plus the header line).
    buf: Vec<u8>,
}

impl PartitionWatch {
    /// Opens the socket, non-blocking; the error when it cannot be had.
    pub fn open() -> io::Result<PartitionWatch> {
        // SAFETY: a plain socket(2) call; the descriptor is owned below.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                libc::NETLINK_KOBJECT_UEVENT,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd was just returned by socket(2) and is owned by no one else.
        let socket = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: zeroed is a valid sockaddr_nl; the fields are set below.
        let mut address: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        address.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        address.nl_groups = KERNEL_GROUP;
        // SAFETY: address is a sockaddr_nl of the length given.
        let bound = unsafe {
            libc::bind(
                socket.as_raw_fd(),
                (&address as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if bound < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(PartitionWatch {
            socket,
            buf: vec![0; 8192],
        })
    }

    /// Reads every uevent waiting; whether one was of a block device, or
    /// some were lost (`ENOBUFS`: a storm of uevents overflowed the
    /// socket), either of which calls for reading the table again.
    pub fn block_devices_changed(&mut self) -> bool {
        let mut changed = false;
        loop {
            // SAFETY: buf is valid for writes of its length.
            let n = unsafe {
                libc::recv(
                    self.socket.as_raw_fd(),
                    self.buf.as_mut_ptr().cast(),
                    self.buf.len(),
                    0,
                )
            };
            match usize::try_from(n) {
                Ok(len) => changed |= is_of_block_device(&self.buf[..len.min(self.buf.len())]),
                Err(_) => match io::Error::last_os_error().raw_os_error() {
                    Some(libc::EINTR) => {}
                    Some(libc::ENOBUFS) => changed = true,
                    _ => return changed,
                },
            }
        }
    }
}

/// Whether `message`, a kernel uevent (`ACTION@DEVPATH`, then
/// NUL-separated `KEY=value` lines), is of a block device.
fn is_of_block_device(message: &[u8]) -> bool {
    message
        .split(|&b| b == 0)
        .skip(1)
        .any(|line| line == b"SUBSYSTEM=block")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_uevents_are_told_from_others() {
        let partition = b"add@/devices/virtual/block/loop0/loop0p1\0ACTION=add\0\
            DEVPATH=/devices/virtual/block/loop0/loop0p1\0SUBSYSTEM=block\0MAJOR=259\0\
            MINOR=0\0DEVNAME=loop0p1\0DEVTYPE=partition\0PARTN=1\0SEQNUM=2411\0";
        assert!(is_of_block_device(partition));
        let cpu = b"offline@/devices/system/cpu/cpu1\0ACTION=offline\0\
            DEVPATH=/devices/system/cpu/cpu1\0SUBSYSTEM=cpu\0SEQNUM=2412\0";
        assert!(!is_of_block_device(cpu));
        // Only a whole line counts, never the header or a value.
        assert!(!is_of_block_device(
            b"add@/SUBSYSTEM=block\0DEVNAME=SUBSYSTEM=block\0"
        ));
        assert!(!is_of_block_device(b""));
    }
}
