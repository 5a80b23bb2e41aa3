//! cxlstat's manual beyond the options: the columns, exit statuses, files,
//! examples and related pages (shown by `--help` and in the man page).

use crate::common::manual::Section;

/// The sections, in man-page order.
pub const SECTIONS: &[Section] = &[
    Section {
        title: "OUTPUT",
        text: "One row per PMU and event (per event with --aggregate), at the end of the run \
               or every interval:",
        items: &[
            (
                "time",
                "with an interval: seconds since counting started, at the end of the interval",
            ),
            ("pmu", "the CXL PMU (cxl_pmu_memX.Y), or the PMUs summed"),
            (
                "event",
                "the event as given, or its name in the PMU's catalogue",
            ),
            (
                "counts",
                "occurrences in the interval (in the whole run without one), scaled by \
                 enabled/running time when the PMU multiplexed the event",
            ),
            ("rate/s", "counts per second of the interval"),
            (
                "running",
                "the share of the time the event was really counted; below 100 % the \
                 count is an estimate",
            ),
        ],
    },
    Section {
        title: "EXIT STATUS",
        text: "",
        items: &[
            (
                "0",
                "Success, also when the reader of the output went away (with -- CMD, \
                 cxlstat then waits for the command and exits with its status)",
            ),
            (
                "1",
                "An event, PMU, file or recording that cannot be used, a perf_event_open failure \
                 (explained, with the privilege it needs), or output that cannot be written",
            ),
            ("2", "A usage error"),
            (
                "4",
                "Out of memory: an allocation failed (under an address-space limit, \
                 ulimit -v, say); the one line names its size and the limit",
            ),
            (
                "other",
                "with -- CMD, the command's own status (128 + N when signal N ended it)",
            ),
        ],
    },
    Section {
        title: "ENVIRONMENT",
        text: "",
        items: &[
            (
                "PATH",
                "where -- CMD is looked for when it has no slash, as execvp(3) does \
                 (/usr/local/bin:/usr/bin:/bin when unset)",
            ),
            (
                "TZ",
                "the time zone of the clock times on the --svg charts' axis (the other \
                 formats give elapsed seconds or UTC)",
            ),
            (
                "LC_ALL, LC_NUMERIC, LANG",
                "not read: numbers have a . in every format, where perf stat prints the \
                 locale's decimal point; messages are in English",
            ),
            crate::common::completion::ENVIRONMENT_ITEM,
        ],
    },
    Section {
        title: "FILES",
        text: "Read under the --sysroot directory when one is given:",
        items: &[
            (
                "/sys/bus/event_source/devices/cxl_pmu_*",
                "the CXL PMUs: type (the perf type), cpumask (the CPU that counts), \
                 format/* (where vid, gid, mask and the filters go in the perf \
                 configuration), events/* (named events)",
            ),
            (
                "/sys/bus/cxl/devices/pmu_memX.Y, /sys/bus/cxl/devices/memX, /sys/devices/pci*",
                "the memory device behind a PMU: pmu_memX.Y resolves to a directory of its \
                 PCI function under /sys/devices, whose name is the PCI address and whose \
                 numa_node is the NUMA node (else memX's); memX beside it gives the serial \
                 number",
            ),
            (
                "/proc/sys/kernel/perf_event_paranoid",
                "read when the kernel refuses a count, to say which privilege is missing",
            ),
            (
                "--record FILE, --svg FILE",
                crate::common::manual::OWNER_ONLY_FILES,
            ),
            crate::common::manual::TEXTFILE_ITEM,
        ],
    },
    Section {
        title: "PRIVILEGE",
        text: "Counting a CXL PMU is system-wide counting: it needs root, CAP_PERFMON \
               (setcap cap_perfmon+ep on the program) or kernel.perf_event_paranoid at 0 \
               or below, as perf stat -a does. Given as file capabilities, CAP_PERFMON \
               serves the opening of the events alone: the process is non-dumpable, and \
               drops every capability before it reports or starts a command after --; \
               --sysroot, --replay, --record, --svg and --textfile are refused then. A \
               set-user-ID or set-group-ID install is refused at the start when it would \
               run as another user or group than the caller's: the files it opens and \
               the command it starts would be that user's or group's.",
        items: &[],
    },
    Section {
        title: "EXAMPLES",
        text: "",
        items: &[
            (
                "cxlstat --list",
                "the CXL PMUs: perf type, CPU, memory device with its PCI address, NUMA node and \
                 serial number, HDM filter, number of events",
            ),
            (
                "cxlstat --list-events cxl_pmu_mem0.0",
                "the events of one PMU, by event group",
            ),
            (
                "cxlstat -e d2h_req_rdshared,clock_ticks -a",
                "two named events on every CXL PMU until Ctrl-C, as perf stat -a",
            ),
            (
                "cxlstat -e cxl_pmu_mem0.0/vid=0x19e5,gid=0,mask=0xff/ -I 1000",
                "a raw vendor event of one PMU, printed every 1,000 ms",
            ),
            (
                "cxlstat -e '{clock_ticks,m2s_req_memrd}' -- ./workload",
                "two events counted as one group while ./workload runs",
            ),
            ("cxlstat -e clock_ticks 1 5", "every second, five times"),
        ],
    },
    Section {
        title: "SEE ALSO",
        text: "perf-stat(1), perf-list(1), perf_event_open(2), iostat-rs(1), vcpustat(1); the \
               kernel's Documentation/admin-guide/perf/cxl.rst",
        items: &[],
    },
];
