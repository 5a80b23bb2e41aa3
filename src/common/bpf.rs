//! Just enough eBPF to forward tracepoint events: a `PERF_EVENT_ARRAY` map,
//! a tracepoint program assembled here from a handful of instructions, and
//! the three `bpf(2)` commands that create, fill and load them.
//!
//! Why not a loader crate (aya, libbpf-rs): they load compiled ELF objects,
//! with relocations and BTF; that needs a BPF compiler at build time (clang
//! or bpf-linker) or a checked-in binary. The programs here are some 25
//! instructions, assembled at run time with the field offsets tracefs gives
//! (so no CO-RE either), and loading them is one system call.
//! `include/uapi/linux/bpf.h` is the reference for every number below.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// `BPF_MAP_CREATE`.
const MAP_CREATE: libc::c_long = 0;
/// `BPF_MAP_UPDATE_ELEM`.
const MAP_UPDATE_ELEM: libc::c_long = 2;
/// `BPF_PROG_LOAD`.
const PROG_LOAD: libc::c_long = 5;
/// `BPF_MAP_TYPE_PERF_EVENT_ARRAY`.
const MAP_TYPE_PERF_EVENT_ARRAY: u32 = 4;
/// `BPF_PROG_TYPE_TRACEPOINT`.
const PROG_TYPE_TRACEPOINT: u32 = 5;

/// `bpf_ktime_get_ns()`: `CLOCK_MONOTONIC` in ns.
pub const HELPER_KTIME_GET_NS: i32 = 5;
/// `bpf_perf_event_output(ctx, map, flags, data, size)`.
pub const HELPER_PERF_EVENT_OUTPUT: i32 = 25;

/// One instruction, `struct bpf_insn`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Insn {
    code: u8,
    regs: u8,
    off: i16,
    imm: i32,
}

impl Insn {
    /// The stack bytes (offsets from `r10`) this instruction stores to, if
    /// it is a store relative to the frame pointer.
    pub fn stack_bytes_stored(&self) -> Option<std::ops::Range<i16>> {
        let class = self.code & 0x07;
        let dst = if cfg!(target_endian = "little") {
            self.regs & 0xf
        } else {
            self.regs >> 4
        };
        if !(class == CLASS_ST || class == CLASS_STX) || self.code & 0xe0 != MODE_MEM || dst != 10 {
            return None;
        }
        let len = match self.code & 0x18 {
            0x00 => 4,
            0x08 => 2,
            0x10 => 1,
            _ => 8,
        };
        Some(self.off..self.off + len)
    }
}

/// A register, `r0` to `r10` (`r10` the read-only frame pointer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reg(pub u8);

/// The access sizes of loads and stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// 1 byte (`BPF_B`).
    Byte,
    /// 2 bytes (`BPF_H`).
    Half,
    /// 4 bytes (`BPF_W`).
    Word,
    /// 8 bytes (`BPF_DW`).
    Double,
}

impl Size {
    fn code(self) -> u8 {
        match self {
            Size::Word => 0x00,
            Size::Half => 0x08,
            Size::Byte => 0x10,
            Size::Double => 0x18,
        }
    }
}

const CLASS_LDX: u8 = 0x01;
const CLASS_ST: u8 = 0x02;
const CLASS_STX: u8 = 0x03;
const CLASS_ALU: u8 = 0x04;
const CLASS_JMP: u8 = 0x05;
const CLASS_ALU64: u8 = 0x07;
const MODE_MEM: u8 = 0x60;
const OP_ADD: u8 = 0x00;
const OP_MOV: u8 = 0xb0;
const SOURCE_REG: u8 = 0x08;
const JMP_CALL: u8 = 0x80;
const JMP_EXIT: u8 = 0x90;
/// `BPF_LD | BPF_IMM | BPF_DW`: a 64-bit immediate over two instructions.
const LD_IMM64: u8 = 0x18;
/// `BPF_PSEUDO_MAP_FD`: the immediate of a `LD_IMM64` is a map descriptor.
const PSEUDO_MAP_FD: u8 = 1;

fn insn(code: u8, dst: Reg, src: Reg, off: i16, imm: i32) -> Insn {
    // The two 4-bit register fields follow the byte order's bitfield order.
    let regs = if cfg!(target_endian = "little") {
        (src.0 << 4) | (dst.0 & 0xf)
    } else {
        (dst.0 << 4) | (src.0 & 0xf)
    };
    Insn {
        code,
        regs,
        off,
        imm,
    }
}

/// The instructions of one program, appended in order.
#[derive(Debug, Default, Clone)]
pub struct Program {
    insns: Vec<Insn>,
}

const NONE: Reg = Reg(0);

impl Program {
    /// `dst = src` (64 bits).
    pub fn mov_reg(&mut self, dst: Reg, src: Reg) -> &mut Self {
        self.push(insn(CLASS_ALU64 | OP_MOV | SOURCE_REG, dst, src, 0, 0))
    }

    /// `dst = imm`, sign-extended to 64 bits.
    pub fn mov_imm(&mut self, dst: Reg, imm: i32) -> &mut Self {
        self.push(insn(CLASS_ALU64 | OP_MOV, dst, NONE, 0, imm))
    }

    /// `dst = imm as u32` (the upper half zero).
    pub fn mov32_imm(&mut self, dst: Reg, imm: u32) -> &mut Self {
        self.push(insn(CLASS_ALU | OP_MOV, dst, NONE, 0, imm as i32))
    }

    /// `dst += imm` (64 bits).
    pub fn add_imm(&mut self, dst: Reg, imm: i32) -> &mut Self {
        self.push(insn(CLASS_ALU64 | OP_ADD, dst, NONE, 0, imm))
    }

    /// `dst = *(size *)(src + off)`, zero-extended.
    pub fn load(&mut self, size: Size, dst: Reg, src: Reg, off: i16) -> &mut Self {
        self.push(insn(CLASS_LDX | MODE_MEM | size.code(), dst, src, off, 0))
    }

    /// `*(size *)(dst + off) = src`.
    pub fn store(&mut self, size: Size, dst: Reg, off: i16, src: Reg) -> &mut Self {
        self.push(insn(CLASS_STX | MODE_MEM | size.code(), dst, src, off, 0))
    }

    /// `*(size *)(dst + off) = imm`.
    pub fn store_imm(&mut self, size: Size, dst: Reg, off: i16, imm: i32) -> &mut Self {
        self.push(insn(CLASS_ST | MODE_MEM | size.code(), dst, NONE, off, imm))
    }

    /// `dst = map` (the kernel replaces the descriptor with the map).
    pub fn load_map(&mut self, dst: Reg, map: BorrowedFd<'_>) -> &mut Self {
        self.push(insn(LD_IMM64, dst, Reg(PSEUDO_MAP_FD), 0, map.as_raw_fd()));
        self.push(insn(0, NONE, NONE, 0, 0))
    }

    /// `r0 = helper(r1, ..., r5)`.
    pub fn call(&mut self, helper: i32) -> &mut Self {
        self.push(insn(CLASS_JMP | JMP_CALL, NONE, NONE, 0, helper))
    }

    /// `return r0`.
    pub fn exit(&mut self) -> &mut Self {
        self.push(insn(CLASS_JMP | JMP_EXIT, NONE, NONE, 0, 0))
    }

    fn push(&mut self, i: Insn) -> &mut Self {
        self.insns.push(i);
        self
    }

    /// The instructions so far.
    pub fn insns(&self) -> &[Insn] {
        &self.insns
    }
}

/// A `bpf(2)` attribute block, zero beyond the fields a command reads.
#[repr(C, align(8))]
struct Attr([u8; 128]);

impl Attr {
    fn new() -> Attr {
        Attr([0; 128])
    }

    fn u32_at(&mut self, offset: usize, value: u32) -> &mut Self {
        self.0[offset..offset + 4].copy_from_slice(&value.to_ne_bytes());
        self
    }

    fn u64_at(&mut self, offset: usize, value: u64) -> &mut Self {
        self.0[offset..offset + 8].copy_from_slice(&value.to_ne_bytes());
        self
    }

    fn call(&mut self, command: libc::c_long) -> io::Result<libc::c_long> {
        // SAFETY: the block is a valid `union bpf_attr` prefix of its
        // length; the pointers in it point to memory that outlives the call.
        let r = unsafe {
            libc::syscall(
                libc::SYS_bpf,
                command,
                self.0.as_mut_ptr(),
                self.0.len() as libc::c_uint,
            )
        };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r)
        }
    }
}

fn owned(fd: libc::c_long) -> OwnedFd {
    // SAFETY: the kernel returned a new descriptor that nothing else owns.
    unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) }
}

/// A `PERF_EVENT_ARRAY` of `entries` slots (one per CPU number), where
/// `bpf_perf_event_output` finds the perf event of the CPU it runs on.
pub fn perf_event_array(entries: u32) -> io::Result<OwnedFd> {
    let fd = Attr::new()
        .u32_at(0, MAP_TYPE_PERF_EVENT_ARRAY)
        .u32_at(4, 4)
        .u32_at(8, 4)
        .u32_at(12, entries)
        .call(MAP_CREATE)?;
    Ok(owned(fd))
}

/// Puts perf event `event` in slot `cpu` of a [`perf_event_array`].
pub fn set_slot(map: BorrowedFd<'_>, cpu: u32, event: BorrowedFd<'_>) -> io::Result<()> {
    let key = cpu;
    let value = event.as_raw_fd() as u32;
    Attr::new()
        .u32_at(0, map.as_raw_fd() as u32)
        .u64_at(8, &key as *const u32 as u64)
        .u64_at(16, &value as *const u32 as u64)
        .call(MAP_UPDATE_ELEM)?;
    Ok(())
}

/// Loads `program` as a GPL tracepoint program. When the verifier refuses
/// it, the error carries the last line of its log.
pub fn load_tracepoint_program(program: &Program, name: &str) -> io::Result<OwnedFd> {
    const LICENSE: &[u8] = b"GPL\0";
    let insns = program.insns();
    let mut prog_name = [0u8; 16];
    for (slot, b) in prog_name.iter_mut().zip(name.bytes().take(15)) {
        *slot = b;
    }
    let load = |log: &mut [u8]| {
        let mut attr = Attr::new();
        attr.u32_at(0, PROG_TYPE_TRACEPOINT)
            .u32_at(4, insns.len() as u32)
            .u64_at(8, insns.as_ptr() as u64)
            .u64_at(16, LICENSE.as_ptr() as u64);
        if !log.is_empty() {
            attr.u32_at(24, 1)
                .u32_at(28, log.len() as u32)
                .u64_at(32, log.as_mut_ptr() as u64);
        }
        attr.0[48..64].copy_from_slice(&prog_name);
        attr.call(PROG_LOAD)
    };
    match load(&mut []) {
        Ok(fd) => Ok(owned(fd)),
        Err(e)
            if e.raw_os_error() == Some(libc::EACCES) || e.raw_os_error() == Some(libc::EINVAL) =>
        {
            let mut log = vec![0u8; 1 << 16];
            let _ = load(&mut log);
            let text =
                String::from_utf8_lossy(&log[..log.iter().position(|&b| b == 0).unwrap_or(0)])
                    .into_owned();
            let last = text
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            Err(io::Error::new(
                e.kind(),
                format!(
                    "{e}; the verifier says: {}",
                    crate::common::escape::controls(last)
                ),
            ))
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_endian = "little")]
    fn instructions_encode_as_the_kernel_reads_them() {
        let mut p = Program::default();
        p.mov_reg(Reg(6), Reg(1))
            .load(Size::Double, Reg(1), Reg(6), 16)
            .store(Size::Word, Reg(10), -16, Reg(1))
            .store_imm(Size::Word, Reg(10), -4, 2)
            .mov32_imm(Reg(3), u32::MAX)
            .add_imm(Reg(4), -32)
            .call(HELPER_PERF_EVENT_OUTPUT)
            .mov_imm(Reg(0), 0)
            .exit();
        let i = p.insns();
        // Values as `llvm-objdump -d` prints them for the same code
        // (little-endian register nibbles: src high, dst low).
        assert_eq!((i[0].code, i[0].regs), (0xbf, 0x16), "r6 = r1");
        assert_eq!(
            (i[1].code, i[1].regs, i[1].off),
            (0x79, 0x61, 16),
            "r1 = *(u64 *)(r6 + 16)"
        );
        assert_eq!(
            (i[2].code, i[2].regs, i[2].off),
            (0x63, 0x1a, -16),
            "*(u32 *)(r10 - 16) = r1"
        );
        assert_eq!(
            (i[3].code, i[3].regs, i[3].imm),
            (0x62, 0x0a, 2),
            "*(u32 *)(r10 - 4) = 2"
        );
        assert_eq!((i[4].code, i[4].imm), (0xb4, -1), "w3 = -1");
        assert_eq!(
            (i[5].code, i[5].regs, i[5].imm),
            (0x07, 0x04, -32),
            "r4 += -32"
        );
        assert_eq!((i[6].code, i[6].imm), (0x85, 25), "call 25");
        assert_eq!((i[7].code, i[7].regs), (0xb7, 0x00), "r0 = 0");
        assert_eq!(i[8].code, 0x95, "exit");
        assert_eq!(std::mem::size_of::<Insn>(), 8);
    }
}
