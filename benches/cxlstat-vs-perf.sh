#!/bin/sh
# CPU time per interval: cxlstat counting 8 events on 4 PMUs against
# `perf stat -I` counting the same number of software counters, plus the
# number of read(2) calls per interval (strace). The "CXL" PMUs are a sysfs
# tree whose type is the software PMU (1), so this runs on any machine.
#
#   benches/cxlstat-vs-perf.sh            # N=300 intervals of MS=50 ms
#   N=600 MS=100 PERF=/usr/bin/perf benches/cxlstat-vs-perf.sh
#
# Needs root or CAP_PERFMON, perf (linux-perf), and strace for the read count.
set -eu

N=${N:-300}
MS=${MS:-50}
PERF=${PERF:-perf}
target=${CARGO_TARGET_DIR:-target}

cargo build --release --quiet --bin cxlstat
bin="$target/release/cxlstat"

tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
cpus=$(nproc)
i=0
for pmu in cxl_pmu_mem0.0 cxl_pmu_mem1.0 cxl_pmu_mem2.0 cxl_pmu_mem3.0; do
    dir="$tree/sys/devices/virtual/$pmu"
    mkdir -p "$dir/format" "$dir/events" "$tree/sys/bus/event_source/devices"
    echo 1 >"$dir/type"
    echo $((i % cpus)) >"$dir/cpumask"
    echo config:0-31 >"$dir/format/mask"
    echo config:32-47 >"$dir/format/gid"
    echo config:48-63 >"$dir/format/vid"
    echo config=0x0 >"$dir/events/cpu_clock"
    echo config=0x3 >"$dir/events/context_switches"
    ln -s "../../../devices/virtual/$pmu" "$tree/sys/bus/event_source/devices/$pmu"
    i=$((i + 1))
done

# perf: 8 counters in all, spread over every CPU as -a does.
case $cpus in
1) perf_events=cpu-clock,context-switches,cpu-migrations,page-faults,minor-faults,major-faults,alignment-faults,emulation-faults ;;
2) perf_events=cpu-clock,context-switches,cpu-migrations,page-faults ;;
*) perf_events=cpu-clock,context-switches ;;
esac
perf_counters=$(( $(echo "$perf_events" | tr ',' '\n' | wc -l) * cpus ))

# CPU seconds of a command and its children: perf's task-clock (the
# scheduler's exact runtime; getrusage and /usr/bin/time only have tick
# resolution, too coarse for a few microseconds per interval).
cpu_seconds() {
    "$PERF" stat -x, -e task-clock -o "$tree/clock" -- "$@" >/dev/null 2>&1
    awk -F, '$3 == "task-clock" || $3 ~ /^task-clock/ { print $1 / 1000 }' "$tree/clock"
}

echo "machine: $(nproc) CPUs, $(uname -r); $N intervals of $MS ms"
"$PERF" --version
c=$(cpu_seconds "$bin" --sysroot "$tree" -e cpu_clock,context_switches -I "$MS" --interval-count "$N")
g=$(cpu_seconds "$bin" --sysroot "$tree" -e '{cpu_clock,context_switches}' -I "$MS" --interval-count "$N")
p=$(cpu_seconds "$PERF" stat -a -I "$MS" --interval-count "$N" -e "$perf_events")
awk -v c="$c" -v g="$g" -v p="$p" -v n="$N" -v pc="$perf_counters" 'BEGIN {
    printf "cxlstat, 8 independent events on 4 PMUs: %8.1f us CPU per interval\n", c / n * 1e6
    printf "cxlstat, 4 groups of 2 on 4 PMUs:         %8.1f us CPU per interval\n", g / n * 1e6
    printf "perf stat -a -I, %d software counters:     %8.1f us CPU per interval\n", pc, p / n * 1e6
    if (p > 0) printf "ratio cxlstat/perf: %.2f (independent), %.2f (groups)\n", c / p, g / p
}'

reads() { # spec count -> "successful failed" read(2) calls of a whole run
    strace -f -c -e trace=read -o "$tree/strace" \
        "$bin" --sysroot "$tree" -e "$1" -I 20 --interval-count "$2" >/dev/null
    # Failed reads are the interval loop draining its wake-up socket (EAGAIN).
    awk '$NF == "read" { errors = (NF == 6) ? $5 : 0; print $4 - errors, errors }' "$tree/strace"
}
if command -v strace >/dev/null; then
    for spec in cpu_clock,context_switches '{cpu_clock,context_switches}'; do
        # The difference between 60 and 10 reports leaves out start-up reads.
        r10=$(reads "$spec" 10)
        r60=$(reads "$spec" 60)
        echo "$r10 $r60" | awk -v s="$spec" '{
            printf "read(2) per interval for -e %s on 4 PMUs: %.2f of counters, %.2f EAGAIN on the wake-up socket\n",
                s, ($3 - $1) / 50, ($4 - $2) / 50
        }'
    done
fi
