//! The manual sections of `vcpustat trace record` and `vcpustat trace
//! report` beyond their options: exit statuses, files and examples (shown
//! by `--help` and in their man pages).

use crate::common::manual::Section;

/// `vcpustat trace record`'s sections, in man-page order.
pub const RECORD: &[Section] = &[
    Section {
        title: "EXIT STATUS",
        text: "",
        items: &[
            (
                "0",
                "The recording is complete: --duration ended, or a stop signal (Ctrl-C, \
                 SIGTERM) did; dtl_event_mask is as it was",
            ),
            (
                "1",
                "The DTL or a kernel file is missing or unreadable (no shared processors, \
                 debugfs not mounted, a kernel known to crash when the DTL is read, without \
                 --force), dtl_event_mask cannot be written, or the recording cannot be; \
                 dtl_event_mask is put back first",
            ),
            ("2", "A usage error; nothing was read or changed"),
            (
                "4",
                "Out of memory: too little left under the limits (ulimit -v, ulimit -d) to \
                 be sure of putting dtl_event_mask back, which is then not changed, or an \
                 allocation failed, whose one line names its size and the limit",
            ),
            (
                "128+N",
                "Stopped by signal N (130 after Ctrl-C) while another vcpustat run held \
                 dtl_event_mask (--events): no DTL entry was recorded, and dtl_event_mask was \
                 not changed (a --record file ends as any stopped run's)",
            ),
        ],
    },
    Section {
        title: "FILES",
        text: "Read and written under the --sysroot directory when one is given:",
        items: &[
            (
                "/sys/kernel/debug/powerpc/dtl/cpu-N",
                "vCPU N's ring of dispatch trace log entries (debugfs, root only)",
            ),
            (
                "/sys/kernel/debug/powerpc/dtl/dtl_event_mask",
                "the events the hypervisor logs, read by the kernel as a ring is opened",
            ),
            (
                "/sys/kernel/debug/powerpc/dtl/dtl_buf_entries",
                "the entries each ring holds: the size of each read, and how a ring that \
                 filled up (entries may be lost) is told",
            ),
            (
                "/run/vcpustat.lock",
                "held while --events has the mask set, so that a recording started \
                 meanwhile reads the mask as it was (mode 0600)",
            ),
            (
                "/proc/powerpc/lparcfg (or /proc/ppc64/lparcfg), /proc/cpuinfo",
                "the partition's identity and the time base the entries count in",
            ),
            (
                "/proc/device-tree/ibm,partition-name",
                "the partition's name, kept in the recording's header",
            ),
            (
                "/boot/config-RELEASE",
                "whether the kernel has CONFIG_HARDENED_USERCOPY, with which reading the DTL \
                 crashes kernels without the fix (see --force)",
            ),
            (
                "-w FILE, --record FILE",
                crate::common::manual::OWNER_ONLY_RECORDINGS,
            ),
        ],
    },
    Section {
        title: "EXAMPLES",
        text: "",
        items: &[
            (
                "vcpustat trace record --duration 10 -w lpar.dtl",
                "every vCPU for 10 s",
            ),
            (
                "vcpustat trace record --cpus 0-3 --events preempt -w lpar.dtl",
                "vCPUs 0 to 3, time-slice preempts only, until Ctrl-C",
            ),
        ],
    },
];

/// `vcpustat trace report`'s sections, in man-page order.
pub const REPORT: &[Section] = &[
    Section {
        title: "EXIT STATUS",
        text: "",
        items: &[
            (
                "0",
                "Success, also for a recording cut short (reported up to the cut, with a \
                 note) and when the reader of the output went away",
            ),
            (
                "1",
                "A recording or --topology file that is missing, unreadable or malformed, \
                 or output or --svg that cannot be written",
            ),
            ("2", "A usage error, -o csv without --table among them"),
            (
                "4",
                "Out of memory: an allocation failed; the one line names its size and the \
                 limit",
            ),
        ],
    },
    Section {
        title: "FILES",
        text: "",
        items: &[("--svg FILE", crate::common::manual::OWNER_ONLY_CHARTS)],
    },
    Section {
        title: "EXAMPLES",
        text: "",
        items: &[
            (
                "vcpustat trace report lpar.dtl",
                "dispatch latency, reasons and the physical processors' summary",
            ),
            (
                "vcpustat trace report --topology chips.txt lpar1.dtl lpar2.dtl",
                "two partitions of one machine, processors by chip and node",
            ),
            (
                "vcpustat trace report -o csv --table timeline lpar.dtl",
                "every physical record, in start order, as CSV",
            ),
        ],
    },
];
