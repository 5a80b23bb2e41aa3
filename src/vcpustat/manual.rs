//! vcpustat's manual beyond the options and the workflow, safety and column
//! notes of `--help`: exit statuses, files and related pages (shown by
//! `--help` and in the man page).

use crate::common::manual::Section;

/// The sections, in man-page order.
pub const SECTIONS: &[Section] = &[
    Section {
        title: "EXIT STATUS",
        text: "",
        items: &[
            (
                "0",
                "Success, also when the reader of the output went away; what vcpustat \
                 switched on for the run is switched off again",
            ),
            (
                "1",
                "A kernel file that is missing, unreadable or malformed, a write the kernel \
                 refused (EBUSY, EINVAL, EACCES, explained), or output that cannot be \
                 written; the state is restored first",
            ),
            ("2", "A usage error; nothing was read or changed"),
        ],
    },
    Section {
        title: "FILES",
        text: "Read and written under the --sysroot directory when one is given:",
        items: &[
            (
                "/proc/powerpc/vcpudispatch_stats",
                "off, or one line of counters per vCPU; writing 1 or 0 switches the \
                 statistics on (resetting the counters) or off",
            ),
            (
                "/proc/powerpc/vcpudispatch_stats_freq",
                "how many times per second the kernel drains the dispatch trace log into \
                 the counters (1 to HZ)",
            ),
            (
                "/proc/powerpc/lparcfg",
                "whether the LPAR has shared processors, for the explanation when the \
                 statistics files are missing",
            ),
            (
                "/sys/kernel/debug/powerpc/dtl",
                "the Dispatch Trace Log that vcpustat trace records",
            ),
        ],
    },
    Section {
        title: "SEE ALSO",
        text: "vcpustat-trace(1), lparstat(8), iostat-rs(1), cxlstat(1); powerpc-utils' \
               vcpustat(8)",
        items: &[],
    },
];
