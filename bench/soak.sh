#!/usr/bin/env bash
# Soak: each tool at a 10 ms interval for SAMPLES samples, watching its
# resident memory and open file descriptors. A leak shows as growth after
# the first 100 samples; the table prints RSS and descriptors at sample ~100,
# their maxima afterwards and at the end.
#
# Usage: bench/soak.sh [iostat|vcpustat|cxlstat ...]   (default: all three)
# Environment:
#   SAMPLES   samples per tool (default 20000)
#   BIN_DIR   where the programs are (default: the dist build of this checkout)
#
# Inputs (all under --sysroot trees made here, rewritten while the tool runs,
# so every interval sees new counters):
#   iostat-rs  1,000 devices in /proc/diskstats and /sys/block
#   vcpustat   4,096 vCPUs in /proc/powerpc/vcpudispatch_stats (statistics on)
#   cxlstat    two PMUs whose events are the kernel's software PMU (type 1),
#              counted for real through perf_event_open (needs root or
#              CAP_PERFMON)
# The tools run one after another, so the machine's second core rewrites
# the files while the first runs the tool.
set -euo pipefail

SAMPLES=${SAMPLES:-20000}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tools=("$@")
[ ${#tools[@]} -gt 0 ] || tools=(iostat vcpustat cxlstat)

if [ -z "${BIN_DIR:-}" ]; then
    (cd "$here" && cargo build --profile dist --quiet)
    BIN_DIR=${CARGO_TARGET_DIR:-$here/target}/dist
fi
work=$(mktemp -d /tmp/hwstat-soak.XXXXXX)
writer=
cleanup() {
    [ -n "$writer" ] && kill "$writer" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

# Rewrites a file in place (same inode, as the kernel's files stay) from a
# generator command, every 0.2 s, with a growing step number as $1. The
# generators print fixed-width numbers, so the file never changes length
# and a read racing a rewrite still sees whole lines (no truncation: an
# empty or cut file is an error for the tools, as it would be from a kernel).
rewrite_loop() {
    local file=$1 step=0
    shift
    while :; do
        step=$((step + 1))
        "$@" "$step" >"$file.new"
        dd if="$file.new" of="$file" conv=notrunc status=none
        sleep 0.2
    done
}

diskstats() {
    awk -v s="$1" 'BEGIN { for (i = 0; i < 1000; i++)
        printf "%4d %7d nvme%dn1 %010d 0 %010d %010d %010d 0 %010d %010d 0 %010d %010d 0 0 0 0 0 0\n",
            259, i, i, s * 10 + i, s * 80, s * 3, s * 5, s * 40, s * 2, s, s * 5 }'
}

iostat_tree() {
    root=$work/iostat
    mkdir -p "$root/proc" "$root/sys/block"
    for i in $(seq 0 999); do mkdir -p "$root/sys/block/nvme${i}n1"; done
    echo "cpu  100 0 100 1000 0 0 0 0 0 0" >"$root/proc/stat"
    echo "cpu0 100 0 100 1000 0 0 0 0 0 0" >>"$root/proc/stat"
    echo "1000.00 900.00" >"$root/proc/uptime"
    diskstats 0 >"$root/proc/diskstats"
    rewrite_loop "$root/proc/diskstats" diskstats >/dev/null &
    writer=$!
}

dispatch_stats() {
    awk -v s="$1" 'BEGIN { for (c = 0; c < 4096; c++)
        printf "cpu%d %010d %010d %010d %010d %010d %010d %010d %010d\n", c, s * 100, s * 90, s * 8, s, s, s * 95, s * 4, s }'
}

vcpustat_tree() {
    root=$work/vcpustat
    mkdir -p "$root/proc/powerpc"
    echo 50 >"$root/proc/powerpc/vcpudispatch_stats_freq"
    dispatch_stats 0 >"$root/proc/powerpc/vcpudispatch_stats"
    rewrite_loop "$root/proc/powerpc/vcpudispatch_stats" dispatch_stats >/dev/null &
    writer=$!
}

cxlstat_tree() {
    local name
    root=$work/cxlstat
    for name in cxl_pmu_mem0.0 cxl_pmu_mem1.0; do
        local real=$root/sys/devices/virtual/$name
        mkdir -p "$real/format" "$real/events" "$root/sys/bus/event_source/devices"
        echo 1 >"$real/type"
        echo 0 >"$real/cpumask"
        echo config:0-31 >"$real/format/mask"
        echo config:32-47 >"$real/format/gid"
        echo config:48-63 >"$real/format/vid"
        echo config=0x0 >"$real/events/cpu_clock"
        echo config=0x3 >"$real/events/context_switches"
        ln -s "../../../devices/virtual/$name" "$root/sys/bus/event_source/devices/$name"
    done
}

# Runs "$@" (SAMPLES reports) and samples its VmRSS (kB), descriptor count
# and output size every 0.5 s. The reference point is the first sample taken
# after report 100 (reports counted from the output: its lines over the
# lines per report of the whole run). Prints "rss@100 fds@100
# max-rss-after max-fds-after rss-end fds-end seconds".
watch() {
    local start pid rss fds lines
    start=$(date +%s)
    "$@" >"$work/out" &
    pid=$!
    : >"$work/log"
    while kill -0 "$pid" 2>/dev/null; do
        rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null) || break
        fds=$(find "/proc/$pid/fd" -mindepth 1 2>/dev/null | wc -l)
        lines=$(wc -l <"$work/out")
        [ -n "$rss" ] && echo "$lines $rss $fds" >>"$work/log"
        sleep 0.5
    done
    wait "$pid"
    awk -v total="$(wc -l <"$work/out")" -v samples="$SAMPLES" -v secs="$(($(date +%s) - start))" '
        { lines[NR] = $1; rss[NR] = $2; fds[NR] = $3 }
        END {
            per = total / samples
            for (i = 1; i <= NR && lines[i] < 100 * per; i++) {}
            r0 = rss[i]; f0 = fds[i]; rmax = 0; fmax = 0
            for (j = i; j <= NR; j++) {
                if (rss[j] > rmax) rmax = rss[j]
                if (fds[j] > fmax) fmax = fds[j]
            }
            print r0, f0, rmax, fmax, rss[NR], fds[NR], secs
        }' "$work/log"
}

echo "programs: $BIN_DIR; $SAMPLES samples at 10 ms; $(nproc) CPUs, $(uname -r)"
echo
echo "| tool | input | RSS kB at ~100 | max RSS kB after | RSS kB at end | fds at ~100 | max fds after | fds at end | seconds |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
for tool in "${tools[@]}"; do
    case $tool in
    iostat)
        iostat_tree
        read -r r1 f1 rm fm re fe secs < <(watch "$BIN_DIR/iostat-rs" --sysroot "$root" -x 0.01 "$SAMPLES")
        input="1,000 devices" ;;
    vcpustat)
        vcpustat_tree
        read -r r1 f1 rm fm re fe secs < <(watch "$BIN_DIR/vcpustat" --sysroot "$root" 0.01 "$SAMPLES")
        input="4,096 vCPUs" ;;
    cxlstat)
        cxlstat_tree
        read -r r1 f1 rm fm re fe secs < <(watch "$BIN_DIR/cxlstat" --sysroot "$root" -e cpu_clock,context_switches -a 0.01 "$SAMPLES")
        input="2 software-PMU fixtures, 2 events" ;;
    *) echo "bench/soak.sh: unknown tool $tool" >&2; exit 2 ;;
    esac
    [ -n "$writer" ] && { kill "$writer" 2>/dev/null; wait "$writer" 2>/dev/null || true; writer=; }
    echo "| $tool | $input | $r1 | $rm | $re | $f1 | $fm | $fe | $secs |"
done
