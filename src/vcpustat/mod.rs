//! vcpustat: POWER shared-processor dispatch statistics.

pub mod trace;
