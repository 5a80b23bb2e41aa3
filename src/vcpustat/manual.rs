//! vcpustat's manual beyond the options and the safety and column notes of
//! `--help`: exit statuses, files, examples and related pages (shown by
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
                "A kernel file or recording that is missing, unreadable or malformed, a \
                 write the kernel refused (EBUSY, EINVAL, EACCES, explained), output or a \
                 file (--record, --svg, --textfile) that cannot be written, or another \
                 vcpustat stopped in the middle of its changes; the state is restored first",
            ),
            ("2", "A usage error; nothing was read or changed"),
            (
                "4",
                "Out of memory: too little left under the limits (ulimit -v, ulimit -d) \
                 to be sure of undoing a change, which vcpustat then does not make (it \
                 makes sure of 8 MB, or 4 kB per possible CPU, before each), or an allocation \
                 failed, whose one line names its size and the limit",
            ),
            (
                "128 + N",
                "Stopped by signal N (130 after Ctrl-C) before anything was reported: while \
                 another vcpustat held the runs' lock, before anything was read or changed, \
                 or while the changes asked for were made (a slow --freq write before \
                 --enable): those made are undone, the rest not made, and a line says so",
            ),
        ],
    },
    Section {
        title: "ENVIRONMENT",
        text: "",
        items: &[
            (
                "S_TIME_FORMAT",
                "ISO prints the time of -t in ISO 8601 format, as iostat -t does",
            ),
            ("TZ", "the time zone of the times printed"),
            (
                "LC_ALL, LC_TIME, LANG",
                "the locale of the time of -t (%x %X, 12/03/2026 10:57:53 AM in \
                 en_US.UTF-8); messages are in English",
            ),
            crate::common::completion::ENVIRONMENT_ITEM,
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
                "/sys/devices/system/cpu/possible",
                "the CPUs the kernel may bring online, for the memory a run must have \
                 before it changes anything",
            ),
            (
                "/sys/kernel/debug/powerpc/dtl",
                "the Dispatch Trace Log that vcpustat trace records",
            ),
            (
                "/run/vcpustat.lock",
                "where vcpustat runs at the same time meet (mode 0600): what they switched \
                 for themselves is undone by the last of them to end",
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
        text: "Switching the dispatch statistics, setting their frequency and reading \
               them (/proc/powerpc files of mode 0600), and the Dispatch Trace Log \
               (debugfs), need root: run it as root (sudo). With raised privileges \
               (file capabilities), --sysroot, --replay, --record, --svg and --textfile are \
               refused. A set-user-ID or set-group-ID install is refused at the start when it \
               would run as another user or group than the caller's: any user could \
               otherwise switch the statistics, and the files it opens (trace report \
               --topology FILE) would be that user's or group's.",
        items: &[],
    },
    Section {
        title: "EXAMPLES",
        text: "",
        items: &[
            (
                "vcpustat --status",
                "show whether the statistics are on, and the frequency",
            ),
            (
                "vcpustat 5",
                "every 5 s, per-vCPU shares of the interval's dispatches",
            ),
            (
                "vcpustat -n --top 10 2 30",
                "the 10 vCPUs with the worst home ratio, as counts",
            ),
            (
                "vcpustat --enable --freq 100 5",
                "switch on (stays on), drain the log 100 times/s, report every 5 s",
            ),
            (
                "vcpustat --freq 100 --temporary 5",
                "the same for this run only: restored at exit",
            ),
            (
                "vcpustat",
                "cumulative counts once (the statistics must be on)",
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
