//! vcpustat trace: the Dispatch Trace Log turned into latency and a
//! physical-processor timeline.
