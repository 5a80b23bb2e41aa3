#!/usr/bin/env bash
# What `iostat-rs -x --latency 1` costs, against bpftrace's biolatency-style
# histogram of the same tracepoints: fio 4 KiB random reads (direct I/O,
# io_uring, queue depth 32, one job) on a loop device over a file on tmpfs,
# the fastest block device every machine has.
#
# Usage: bench/latency.sh
# Environment:
#   IOSTAT_RS  binary under test (default: the dist build of this checkout)
#   SECONDS_PER_RUN  fio runtime of each run (default: 10)
#   ROUNDS     rounds of the three runs, interleaved (default: 3)
#
# Needs root, fio, bpftrace, losetup. Everything runs in a private mount
# namespace (tmpfs and tracefs mounted there); the loop device is detached
# at the end.
#
# Per run: fio's read IOPS; the watcher's own CPU (utime + stime of
# /proc/PID/stat over the fio run) as a share of one core. The table shows
# each run kind's median over the rounds, and the IOPS drop against the
# median of the runs without a watcher. The kernel-side cost of the
# tracepoints (perf writing every sample into a ring; bpftrace's programs
# updating a map) lands in the I/O path, so it shows as the IOPS drop, not
# in the watcher's CPU.
set -euo pipefail

if [ "${HWSTAT_LATENCY_BENCH_NS:-}" != 1 ]; then
    exec unshare -m --propagation private env HWSTAT_LATENCY_BENCH_NS=1 "$0" "$@"
fi

cd "$(dirname "$0")/.."
iostat_rs=${IOSTAT_RS:-}
if [ -z "$iostat_rs" ]; then
    cargo build --profile dist --bin iostat-rs --quiet
    iostat_rs=target/dist/iostat-rs
fi
runtime=${SECONDS_PER_RUN:-10}
rounds=${ROUNDS:-3}
hz=$(getconf CLK_TCK)

mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
work=$(mktemp -d)
mount -t tmpfs -o size=1200m none "$work"
truncate -s 1G "$work/disk"
dd if=/dev/urandom of="$work/disk" bs=1M count=1024 conv=notrunc status=none
loopdev=$(losetup -f --show "$work/disk")
cleanup() {
    losetup -d "$loopdev" 2>/dev/null || true
    umount "$work" 2>/dev/null || true
    rmdir "$work" 2>/dev/null || true
}
trap cleanup EXIT

cat > "$work/biolatency.bt" <<'BT'
tracepoint:block:block_rq_issue { @start[args->dev, args->sector] = nsecs; }
tracepoint:block:block_rq_complete /@start[args->dev, args->sector]/ {
    @usecs[args->dev] = hist((nsecs - @start[args->dev, args->sector]) / 1000);
    delete(@start[args->dev, args->sector]);
}
END { clear(@start); }
BT

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

fio_iops() {
    fio --name=bench --filename="$loopdev" --rw=randread --bs=4k --direct=1 \
        --ioengine=io_uring --iodepth=32 --numjobs=1 --time_based \
        --runtime="$runtime" --ramp_time=1 --output-format=json |
        python3 -c 'import json,sys; print(round(json.load(sys.stdin)["jobs"][0]["read"]["iops"]))'
}

# run KIND: prints "KIND IOPS CPU%"
run() {
    local kind=$1 pid="" before after iops
    case $kind in
    none) ;;
    iostat-rs)
        "$iostat_rs" -x --latency 1 > /dev/null &
        pid=$! ;;
    bpftrace)
        bpftrace "$work/biolatency.bt" > /dev/null 2>&1 &
        pid=$! ;;
    esac
    sleep 3 # bpftrace compiles and attaches; iostat-rs opens its rings
    [ -n "$pid" ] && before=$(cpu_ticks "$pid")
    local start=$(date +%s.%N)
    iops=$(fio_iops)
    local end=$(date +%s.%N)
    if [ -n "$pid" ]; then
        after=$(cpu_ticks "$pid")
        kill -INT "$pid"
        wait "$pid" 2>/dev/null || true
        cpu=$(python3 -c "print(f'{100 * ($after - $before) / $hz / ($end - $start):.1f}')")
    else
        cpu=-
    fi
    echo "$kind $iops $cpu"
}

results=$(mktemp)
for _ in $(seq "$rounds"); do
    for kind in none iostat-rs bpftrace; do
        run "$kind" | tee -a "$results" >&2
    done
done

python3 - "$results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
by = {}
for kind, iops, cpu in rows:
    by.setdefault(kind, []).append((int(iops), None if cpu == "-" else float(cpu)))
base = statistics.median(i for i, _ in by["none"])
print("| watcher | fio read IOPS (median) | IOPS drop | watcher CPU, % of one core |")
print("|---|---:|---:|---:|")
for kind in ["none", "iostat-rs", "bpftrace"]:
    iops = statistics.median(i for i, _ in by[kind])
    cpus = [c for _, c in by[kind] if c is not None]
    cpu = f"{statistics.median(cpus):.1f}" if cpus else "-"
    drop = "-" if kind == "none" else f"{100 * (base - iops) / base:.1f} %"
    name = {"none": "none", "iostat-rs": "`iostat-rs -x --latency 1`", "bpftrace": "bpftrace biolatency"}[kind]
    print(f"| {name} | {iops:,.0f} | {drop} | {cpu} |")
PY
rm -f "$results"
