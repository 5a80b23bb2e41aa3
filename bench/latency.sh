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
# Per run: fio's read IOPS; fio's own CPU time per I/O (usr + sys from its
# rusage: the submission side, where block_rq_issue fires, so it includes
# that tracepoint's cost: perf writing a sample, or bpftrace's program
# updating its map); the watcher's own CPU (utime + stime of /proc/PID/stat
# over the fio run) as a share of one core and per I/O; and the whole
# machine's busy CPU time per I/O (/proc/stat, all CPUs), which also counts
# the loop driver's worker, where block_rq_complete fires and where fio's
# own figure cannot see either watcher's completion handler. The table shows
# each run kind's median over the rounds and the IOPS drop against the
# median of the runs without a watcher. IOPS are wall-clock figures and
# swing with whatever else runs on the machine; so does CPU time per I/O,
# somewhat less. On a shared machine the best run of each kind (highest
# IOPS, least fio CPU per I/O: interference only ever lowers the one and
# raises the other) is the steadier comparison, and the table has it too.
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

# Busy ticks of the whole machine (all CPUs, everything but idle and iowait):
# what every party to an I/O costs, wherever it runs. The completion side of
# a loop device runs in the loop driver's worker, not in fio, so fio's own
# CPU misses where both watchers' block_rq_complete handlers run.
busy_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat; }

# prints "IOPS IOS FIO_CPU_US_PER_IO"
fio_run() {
    fio --name=bench --filename="$loopdev" --rw=randread --bs=4k --direct=1 \
        --ioengine=io_uring --iodepth=32 --numjobs=1 --time_based \
        --runtime="$runtime" --output-format=json |
        python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"][0]
ios = j["read"]["total_ios"]
cpu_s = (j["usr_cpu"] + j["sys_cpu"]) / 100 * j["job_runtime"] / 1000
print(round(j["read"]["iops"]), ios, f"{1e6 * cpu_s / ios:.2f}")'
}

# run KIND: prints "KIND IOPS FIO_US_PER_IO CPU% WATCHER_US_PER_IO SYSTEM_US_PER_IO"
run() {
    local kind=$1 pid="" before after iops
    case $kind in
    none) ;;
    iostat-rs)
        "$iostat_rs" -x --latency 1 > /dev/null &
        pid=$! ;;
    bpftrace)
        bpftrace "$work/biolatency.bt" > "$work/bpftrace.out" 2>&1 &
        pid=$!
        # Compiling and attaching takes seconds on a busy machine; a SIGINT
        # before that is lost.
        for _ in $(seq 600); do
            grep -q '^Attaching' "$work/bpftrace.out" && break
            sleep 0.1
        done ;;
    esac
    sleep 1
    [ -n "$pid" ] && before=$(cpu_ticks "$pid")
    local start=$(date +%s.%N) busy_before=$(busy_ticks)
    read -r iops ios fio_us < <(fio_run)
    local end=$(date +%s.%N) busy_after=$(busy_ticks)
    local system_us=$(python3 -c "print(f'{1e6 * ($busy_after - $busy_before) / $hz / $ios:.3f}')")
    if [ -n "$pid" ]; then
        after=$(cpu_ticks "$pid")
        for _ in $(seq 30); do
            kill -INT "$pid" 2>/dev/null || break
            sleep 1
        done
        wait "$pid" 2>/dev/null || true
        cpu=$(python3 -c "print(f'{100 * ($after - $before) / $hz / ($end - $start):.1f}')")
        per_io=$(python3 -c "print(f'{1e6 * ($after - $before) / $hz / $ios:.3f}')")
    else
        cpu=-
        per_io=-
    fi
    echo "$kind $iops $fio_us $cpu $per_io $system_us"
}

results=$(mktemp)
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for _ in $(seq "$rounds"); do
    for kind in none iostat-rs bpftrace; do
        run "$kind" | tee -a "$results" >&2
    done
done

echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
python3 - "$results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
by = {}
for kind, iops, fio_us, cpu, per_io, system_us in rows:
    by.setdefault(kind, []).append((int(iops), float(fio_us), cpu, per_io, float(system_us)))
med = lambda kind, i: statistics.median(r[i] for r in by[kind])
base = med("none", 0)
best = {k: (max(r[0] for r in v), min(r[1] for r in v)) for k, v in by.items()}
print("| watcher | fio read IOPS (median) | IOPS drop | best IOPS | best IOPS drop | fio CPU µs per I/O (median) | least fio CPU µs per I/O | watcher CPU, % of one core | watcher CPU µs per I/O | machine CPU µs per I/O (median) | added |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
base_system = med("none", 4)
for kind in ["none", "iostat-rs", "bpftrace"]:
    iops = med(kind, 0)
    drop = "-" if kind == "none" else f"{100 * (base - iops) / base:.1f} %"
    extra = ["-", "-"]
    if kind != "none":
        extra = [f"{statistics.median(float(r[j]) for r in by[kind]):.{p}f}" for j, p in ((2, 1), (3, 3))]
    name = {"none": "none", "iostat-rs": "`iostat-rs -x --latency 1`", "bpftrace": "bpftrace biolatency"}[kind]
    added = "-" if kind == "none" else f"{med(kind, 4) - base_system:.2f}"
    bdrop = "-" if kind == "none" else f"{100 * (best['none'][0] - best[kind][0]) / best['none'][0]:.1f} %"
    print(f"| {name} | {iops:,.0f} | {drop} | {best[kind][0]:,} | {bdrop} | {med(kind, 1):.2f} | {best[kind][1]:.2f} | {extra[0]} | {extra[1]} | {med(kind, 4):.2f} | {added} |")
PY
rm -f "$results"
