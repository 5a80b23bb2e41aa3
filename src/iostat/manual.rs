//! iostat-rs's manual beyond the options: the meaning of every column, exit
//! statuses, environment, files and examples (shown by `--help` and in the
//! man page).

use crate::common::manual::Section;

/// The sections, in man-page order.
pub const SECTIONS: &[Section] = &[
    Section {
        title: "CPU REPORT",
        text: "Shares of the time of all CPUs during the interval (since boot for the first \
               report), from /proc/stat:",
        items: &[
            (
                "%user",
                "running at user level (applications), nice time excluded",
            ),
            ("%nice", "running at user level with a positive nice value"),
            ("%system", "running in the kernel, interrupts included"),
            (
                "%iowait",
                "idle while at least one I/O request of the system was outstanding",
            ),
            (
                "%steal",
                "waiting involuntarily while the hypervisor ran another virtual processor",
            ),
            ("%idle", "idle with no outstanding I/O request"),
        ],
    },
    Section {
        title: "DEVICE REPORT",
        text: "Per device (and per group with -g), from /proc/diskstats or /sys/block/*/stat. \
               Rates are per second over the interval. Sizes are in kilobytes, megabytes \
               with -m, gigabytes with -G, 512-byte blocks (Blk_) when POSIXLY_CORRECT is \
               set without -k/-m/-G. The default report:",
        items: &[
            ("tps", "transfers (completed I/O requests) per second"),
            (
                "kB_read/s kB_wrtn/s kB_dscd/s",
                "kilobytes read, written and discarded per second",
            ),
            (
                "kB_read kB_wrtn kB_dscd",
                "kilobytes read, written and discarded in the interval",
            ),
        ],
    },
    Section {
        title: "EXTENDED REPORT",
        text: "With -x, for reads (r), writes (w), discards (d) and flushes (f); -s gives \
               one narrower line per device with the same measures summed over the \
               directions (tps, kB/s, rqm/s, await, areq-sz):",
        items: &[
            ("r/s w/s d/s f/s", "completed requests per second"),
            ("rkB/s wkB/s dkB/s", "kilobytes transferred per second"),
            (
                "rrqm/s wrqm/s drqm/s",
                "requests merged per second into another request before reaching the device",
            ),
            (
                "%rrqm %wrqm %drqm",
                "share of the requests that were merged before reaching the device",
            ),
            (
                "r_await w_await d_await f_await",
                "mean time in milliseconds from the issue of a request to its completion, \
                 time in the queue included; a mean, not a percentile",
            ),
            (
                "rareq-sz wareq-sz dareq-sz",
                "mean size in kilobytes of the requests completed",
            ),
            (
                "aqu-sz",
                "mean number of requests in flight (the kernel's weighted time in queue over \
                 the interval)",
            ),
            (
                "%util",
                "share of the interval during which at least one request was in flight. \
                 Devices that serve requests in parallel (SSD, NVMe, RAID) can show 100 % \
                 long before they are saturated",
            ),
        ],
    },
    Section {
        title: "EXIT STATUS",
        text: "",
        items: &[
            (
                "0",
                "Success, also when the reader of the output went away (iostat-rs -x 1 | head)",
            ),
            (
                "1",
                "A usage error, a kernel file or recording that cannot be read, or output \
                 that cannot be written",
            ),
            (
                "2",
                "/proc/stat cannot be opened or /proc/uptime cannot be read (as sysstat); \
                 an option iostat-rs adds conflicts with another (--replay with --record, \
                 --latency without -x, --listen with an interval), or lacks its value or \
                 has one it cannot take (--record -d, --svg-top 0, a --listen that is not \
                 an IP address and port), as vcpustat and cxlstat refuse theirs; sysstat's \
                 own options keep its usage text and status 1",
            ),
            (
                "4",
                "Out of memory: an allocation failed (under an address-space limit, \
                 ulimit -v, say); the one line names its size and the limit. sysstat \
                 exits with 4 when its realloc fails",
            ),
        ],
    },
    Section {
        title: "ENVIRONMENT",
        text: "",
        items: &[
            (
                "S_COLORS",
                "never, always, or auto (the default): colour the output only when it is a \
                 terminal",
            ),
            (
                "S_COLORS_SGR",
                "the colours as KEY=SGR entries separated by colons: I device names, N \
                 non-zero values, Z zero values, W (or M) percentages in the warning range, \
                 X (or H) in the extreme range, e.g. I=32;22:N=34;1:Z=34;22:W=35;1:X=31;1",
            ),
            (
                "S_TIME_FORMAT",
                "ISO prints the dates of the report header and -t in ISO 8601 format",
            ),
            (
                "POSIXLY_CORRECT",
                "when set, sizes are in 512-byte blocks unless -k, -m or -G is given",
            ),
            ("TZ", "the time zone of the dates printed"),
            (
                "LC_ALL, LC_TIME, LC_NUMERIC, LANG",
                "the locale, as sysstat takes it: the dates of the report header and -t \
                 (%x and %X, 12/03/2026 10:57:53 AM in en_US.UTF-8), and the decimal point \
                 of the text report (27,44 in de_DE.UTF-8); -o JSON keeps a point, csv, \
                 ndjson and prometheus are locale-independent, and messages are in English",
            ),
            crate::common::completion::ENVIRONMENT_ITEM,
        ],
    },
    Section {
        title: "FILES",
        text: "Read under the --sysroot directory when one is given:",
        items: &[
            ("/proc/stat", "CPU times"),
            ("/proc/uptime", "the time base of the first report"),
            (
                "/sys/devices/system/cpu",
                "the CPUs, counted for the first line (its cpuN entries, online and \
                 offline, as sysstat counts them); with --latency, online and possible: \
                 the CPUs whose block events are traced",
            ),
            (
                "/proc/diskstats",
                "the counters of every block device, read once per interval",
            ),
            (
                "/sys/block/*",
                "which devices are whole disks, and their statistics without /proc/diskstats",
            ),
            (
                "/sys/dev/block/MAJOR:MINOR",
                "device numbers to names (-N, -j, partitions); with --latency, its mq \
                 directory tells a device that queues requests from one that does not",
            ),
            (
                "/sys/class/block",
                "--latency with -p: where each partition starts and ends, for the requests \
                 of its disk; read again at each report, and at once when the kernel tells \
                 of a block device coming or going (a uevent); with --latency, the number \
                 of a device without a node in /dev (a container), in NAME/dev",
            ),
            (
                "/sys/kernel/tracing (or /sys/kernel/debug/tracing)",
                "--latency: the ids and formats of the block_rq_issue, block_rq_complete \
                 and block_rq_requeue tracepoints",
            ),
            (
                "/sys/kernel/btf/vmlinux",
                "--latency: the kernel's types, with which its eBPF programs are loaded",
            ),
            (
                "/dev/disk/by-id /dev/disk/by-label /dev/disk/by-path /dev/disk/by-uuid \
                 /dev/disk/by-partuuid",
                "persistent names (-j)",
            ),
            (
                "/dev/DEVICE",
                "a device named on the command line, whose device number finds it in \
                 /sys/dev/block",
            ),
            (
                "/proc/devices",
                "the major number of device-mapper devices (-N)",
            ),
            ("/dev/mapper", "device-mapper names (-N)"),
            (
                "--record FILE, --svg FILE",
                crate::common::manual::OWNER_ONLY_FILES,
            ),
            crate::common::manual::TEXTFILE_ITEM,
        ],
    },
    Section {
        title: "PRIVILEGE",
        text: "Only --latency needs privilege: root, or CAP_BPF with CAP_PERFMON and read \
               access to tracefs (CAP_PERFMON alone: sampled by perf). Given as file \
               capabilities (setcap cap_bpf,cap_perfmon+ep on the program), they serve the \
               setup alone: the process is non-dumpable from the start, so the caller can \
               neither trace it nor take its descriptors (pidfd_getfd); once measuring, the \
               main thread holds no capability, and the latency thread only CAP_PERFMON \
               (CAP_IPC_LOCK too if given, CAP_BPF where the kernel asks it of every bpf \
               command: before Linux 6.5 with kernel.unprivileged_bpf_disabled set), \
               effective only while it opens the events of a CPU that comes online. \
               --sysroot, --replay, --record, --svg and --textfile are refused then. A \
               set-user-ID or set-group-ID install is refused at the start when it would \
               run as another user or group than the caller's: the files it opens would \
               be that user's or group's.",
        items: &[],
    },
    Section {
        title: "EXAMPLES",
        text: "",
        items: &[
            (
                "iostat-rs -x 1",
                "extended statistics of every device, every second",
            ),
            (
                "iostat-rs -dx -p ALL 0.5 10",
                "devices and partitions, every half second, ten reports",
            ),
            (
                "iostat-rs -o JSON -x 2 3",
                "sysstat's JSON, closed even when interrupted",
            ),
            (
                "iostat-rs -x -o csv 1 60 > run.csv",
                "one CSV row per device and interval",
            ),
            (
                "iostat-rs --record run.rec -x 1 60; iostat-rs --replay run.rec -x -p ALL 1",
                "keep the kernel's inputs, then report them again with other options",
            ),
        ],
    },
    Section {
        title: "SEE ALSO",
        text: "iostat(1), sar(1), vcpustat(1), cxlstat(1), proc(5); the kernel's \
               Documentation/admin-guide/iostats.rst",
        items: &[],
    },
];
