//! cxlstat: CXL PMU discovery and counting.
