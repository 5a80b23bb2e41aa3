//! Counter deltas that know each field's width.
//!
//! Kernel counters are unsigned integers of a fixed width that wrap around:
//! the block layer's tick fields are 32-bit (`unsigned int`), its I/O and
//! sector counts 64-bit (`unsigned long`), the POWER dispatch counters C
//! `int`s (32 bits). A delta is the difference modulo 2^width, which is right
//! across one wrap. Whether a counter that went *backwards* is a wrap or a
//! reset is a tool's decision; [`went_backwards`] lets it ask.

/// The width of a kernel counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    /// A 32-bit counter (`unsigned int`, or a C `int` read as unsigned).
    Bits32,
    /// A 64-bit counter.
    Bits64,
}

impl Width {
    /// The largest value a counter of this width holds.
    pub fn max(self) -> u64 {
        match self {
            Width::Bits32 => u32::MAX as u64,
            Width::Bits64 => u64::MAX,
        }
    }
}

/// `current - previous` modulo 2^width. Inputs wider than the width are
/// truncated first, as the kernel's own arithmetic would.
pub fn delta(previous: u64, current: u64, width: Width) -> u64 {
    current.wrapping_sub(previous) & width.max()
}

/// True when `current < previous` in the counter's width.
pub fn went_backwards(previous: u64, current: u64, width: Width) -> bool {
    (current & width.max()) < (previous & width.max())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_wrap_in_the_counter_width() {
        assert_eq!(delta(10, 15, Width::Bits64), 5);
        assert_eq!(delta(0xffff_fff0, 0x10, Width::Bits32), 0x20);
        assert_eq!(delta(u64::MAX - 1, 3, Width::Bits64), 5);
        // A 32-bit counter read as a huge value (a C int printed unsigned).
        assert_eq!(delta(0xffff_ffff_ffff_fffe, 1, Width::Bits32), 3);
        assert!(went_backwards(5, 4, Width::Bits64));
        assert!(!went_backwards(4, 4, Width::Bits32));
        assert!(went_backwards(0x1_0000_0005, 4, Width::Bits32));
    }
}
