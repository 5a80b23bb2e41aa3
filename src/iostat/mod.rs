//! iostat-rs: sysstat's `iostat`, byte for byte, and beyond.
