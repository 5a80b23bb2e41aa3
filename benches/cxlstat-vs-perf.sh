#!/bin/sh
# CPU time per interval: cxlstat counting 8 events on 4 PMUs against
# `perf stat -I` counting the same number of software counters, plus the
# number of read(2) calls per interval (strace). The "CXL" PMUs are sysfs
# trees whose type is the software PMU (1), so this runs on any machine.
#
#   benches/cxlstat-vs-perf.sh                      # intervals of MS=20 ms
#   SHORT=20 LONG=520 MS=20 PERF=/usr/bin/perf benches/cxlstat-vs-perf.sh
#
# CPU per interval is the slope between a SHORT and a LONG run of each
# command: (cpu(LONG) - cpu(SHORT)) / (LONG - SHORT), so start-up costs
# (exec, discovery, opening) cancel out. CPU time is perf's task-clock of the
# whole run (exact scheduler runtime; getrusage and /usr/bin/time only have
# tick resolution). Each pair is measured ROUNDS times, and the median is
# printed.
#
# Two layouts:
#  * driver: the 4 PMUs on CPU 0, as cxl_pmu places them (the first online
#    CPU), against `perf stat -C 0` with 8 software events;
#  * spread: the PMUs on CPUs 0,1,0,1, against `perf stat -a` with 8/ncpu
#    events on every CPU.
#
# Needs root or CAP_PERFMON, perf (linux-perf), and strace for the reads.
set -eu

SHORT=${SHORT:-20}
LONG=${LONG:-520}
MS=${MS:-20}
ROUNDS=${ROUNDS:-3}
PERF=${PERF:-perf}
target=${CARGO_TARGET_DIR:-target}

# The shipped build (Cargo.toml's `dist` profile).
cargo build --profile dist --quiet --bin cxlstat
bin="$target/dist/cxlstat"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cpus=$(nproc)

make_tree() { # dir cpu-of-each-of-the-4-pmus...
    tree=$1
    shift
    n=0
    for cpu in "$@"; do
        pmu=cxl_pmu_mem$n.0
        dir="$tree/sys/devices/virtual/$pmu"
        mkdir -p "$dir/format" "$dir/events" "$tree/sys/bus/event_source/devices"
        echo 1 >"$dir/type"
        echo $((cpu % cpus)) >"$dir/cpumask"
        echo config:0-31 >"$dir/format/mask"
        echo config:32-47 >"$dir/format/gid"
        echo config:48-63 >"$dir/format/vid"
        echo config=0x0 >"$dir/events/cpu_clock"
        echo config=0x3 >"$dir/events/context_switches"
        ln -s "../../../devices/virtual/$pmu" "$tree/sys/bus/event_source/devices/$pmu"
        n=$((n + 1))
    done
}
make_tree "$work/driver" 0 0 0 0
make_tree "$work/spread" 0 1 0 1

eight=cpu-clock,context-switches,cpu-migrations,page-faults,minor-faults,major-faults,alignment-faults,emulation-faults
case $cpus in
1) spread_events=$eight ;;
2) spread_events=cpu-clock,context-switches,cpu-migrations,page-faults ;;
*) spread_events=cpu-clock,context-switches ;;
esac

cpu_ms() { # command... -> task-clock milliseconds of the whole run
    "$PERF" stat -x, -e task-clock -o "$work/clock" -- "$@" >/dev/null 2>&1
    awk -F, '$3 ~ /^task-clock/ { print $1 }' "$work/clock"
}

# per_interval NAME command-with-COUNT-placeholder...: median slope in us.
per_interval() {
    name=$1
    shift
    : >"$work/slopes"
    r=0
    while [ $r -lt "$ROUNDS" ]; do
        short=$(cpu_ms "$@" "$SHORT")
        long=$(cpu_ms "$@" "$LONG")
        echo "$short $long" | awk -v s="$SHORT" -v l="$LONG" '{ print ($2 - $1) / (l - s) * 1000 }' >>"$work/slopes"
        r=$((r + 1))
    done
    median=$(sort -n "$work/slopes" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
    printf '%-58s %8.1f us CPU per interval\n' "$name" "$median"
    echo "$median" >"$work/last"
}

echo "machine: $cpus CPUs, $(uname -r); slope between $SHORT and $LONG intervals of $MS ms, median of $ROUNDS"
"$PERF" --version
for layout in driver spread; do
    tree="$work/$layout"
    echo "layout: $layout"
    per_interval "  cxlstat, 8 independent events on 4 PMUs" \
        "$bin" --sysroot "$tree" -e cpu_clock,context_switches -I "$MS" --interval-count
    c=$(cat "$work/last")
    per_interval "  cxlstat, 4 groups {cpu_clock,context_switches}" \
        "$bin" --sysroot "$tree" -e '{cpu_clock,context_switches}' -I "$MS" --interval-count
    g=$(cat "$work/last")
    if [ "$layout" = driver ]; then
        per_interval "  perf stat -C 0 -I, 8 software events" \
            "$PERF" stat -C 0 -e "$eight" -I "$MS" --interval-count
    else
        per_interval "  perf stat -a -I, $spread_events" \
            "$PERF" stat -a -e "$spread_events" -I "$MS" --interval-count
    fi
    p=$(cat "$work/last")
    awk -v c="$c" -v g="$g" -v p="$p" 'BEGIN {
        if (p > 0) printf "  ratio cxlstat/perf: %.2f (independent), %.2f (groups)\n", c / p, g / p
    }'
done

reads() { # spec count -> "successful failed" read(2) calls of a whole run
    strace -f -c -e trace=read -o "$work/strace" \
        "$bin" --sysroot "$work/spread" -e "$1" -I 20 --interval-count "$2" >/dev/null
    # Failed reads are the interval loop draining its wake-up socket (EAGAIN).
    awk '$NF == "read" { errors = (NF == 6) ? $5 : 0; print $4 - errors, errors }' "$work/strace"
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
