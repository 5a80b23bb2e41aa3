#!/usr/bin/env bash
# Speed and memory of iostat-rs against Debian's sysstat iostat on the same
# fake kernel files, with 10, 1,000 and 10,000 block devices.
#
# Usage: bench/iostat.sh [SIZE...]        (default sizes: 10 1000 10000)
# Environment:
#   IOSTAT_RS   binary under test (default: the dist build of this checkout)
#   SYSSTAT     reference binary (default: /usr/bin/iostat)
#   REPS        repetitions of each one-report run (default: 20)
#   COUNT       reports in each interval run (default: 5)
#   IREPS       repetitions of each interval run (default: 3)
#   RSS_REPS    runs per peak-memory figure (default: 15)
#   PRIVATE_REPS runs per private-memory figure (default: 5)
#
# Needs root: everything runs in a private mount namespace where a tmpfs is
# mounted over /sys/block and the generated /proc/{diskstats,uptime,stat}
# are bind-mounted over the real ones, so both programs read the very same
# files through their normal paths (no -f/--sysroot, which would not be
# comparable). Nothing outside the namespace changes.
#
# Measured per tool, size and mode:
#   CPU per report = task-clock (user+sys) from `perf stat`, sysstat and
#                    iostat-rs run back to back in pairs; the table shows the
#                    medians and the median of the per-pair ratios. One
#                    report: REPS pairs (15 at most at 10,000 devices) of
#                    `iostat -x` (whole process: start-up, discovery, one
#                    read, one report); for an
#                    interval run the total of `iostat -x 1 COUNT` / COUNT
#                    (IREPS pairs).
#   peak memory    = max RSS from /usr/bin/time -f %M, the median of RSS_REPS
#                    runs of each program, alternated. Both vary by up to
#                    +-150 kB from run to run: the C library is mapped at a
#                    random 4 kB offset, so the kernel's 64 kB fault-around
#                    windows map a different share of its code each time;
#                    medians of 5 runs still differed by 100 kB.
#   private memory = Private_Clean + Private_Dirty of /proc/PID/smaps_rollup
#                    during an interval run (`1 3`, sampled after the first
#                    report), the median of PRIVATE_REPS runs. It leaves out
#                    the shared C library but counts the program's own clean
#                    file pages (its code and constants) whenever one copy
#                    runs.
#   anonymous      = Anonymous of the same samples: heap, stack, relocated
#                    and written data, which no other process shares. After
#                    the table, its growth per device from the smallest to
#                    the largest size, the memory that grows with the work.
#   private floor  = after the table, at the smallest size: private memory
#                    of sysstat, of the two programs of bench/floor/ (a
#                    Rust program that only sleeps, and one that does the
#                    job with the standard library alone, built as the
#                    programs are) and of iostat-rs, alternated: how much
#                    of iostat-rs's figure any Rust program pays.
#   work per report = at the smallest size, after the table: user-space
#                    instructions (valgrind's callgrind) and system calls
#                    (strace) that one more report of an interval run costs,
#                    (run `1 COUNT` - run `1 1`) / (COUNT - 1). Both are
#                    exact counts. Task-clock at this size is mostly the
#                    wakeup between reports, which on a virtual machine
#                    swings by milliseconds (BENCHMARKS.md, session 14);
#                    these counts are the work itself. Skipped, with a line
#                    saying so, without valgrind and strace.
#   wake-up        = before and after the table: the task clock one wake-up
#                    costs the machine (`sleep 0.2` minus `true`), which says
#                    how loaded the host was while the rows were measured.
# Modes: `-x` (sysstat reads /sys/block/*/stat, one file per device;
# iostat-rs lists /sys/block and takes the counters from /proc/diskstats)
# and `-x -p ALL` (both read every device from /proc/diskstats).
set -euo pipefail

sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10 1000 10000)
REPS=${REPS:-20}
COUNT=${COUNT:-5}
IREPS=${IREPS:-3}
RSS_REPS=${RSS_REPS:-15}
PRIVATE_REPS=${PRIVATE_REPS:-5}
SYSSTAT=${SYSSTAT:-/usr/bin/iostat}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

if [ "$(id -u)" != 0 ]; then
    echo "bench/iostat.sh: needs root (mount namespace)" >&2
    exit 2
fi
for tool in perf /usr/bin/time unshare; do
    command -v "$tool" >/dev/null || { echo "bench/iostat.sh: $tool is missing" >&2; exit 2; }
done

# Builds the two programs of bench/floor/ (one that only sleeps, one that
# does iostat's job plainly) with the dist profile's optimisation and the
# link choices build.rs makes for every program (libgcc's unwinder linked
# in, packed relative relocations when iostat-rs has them), but not its
# order of the hot code, and prints the directory that holds them; or
# prints nothing, with a line on standard error, without rustc.
build_floor() {
    local dir program flags=(-C opt-level=3 -C codegen-units=1 -C lto=fat -l static:-bundle=gcc_eh)
    dir=$(mktemp -d /tmp/hwstat-floor.XXXXXX)
    if readelf -d "$IOSTAT_RS" 2>/dev/null | grep -q '(RELR)'; then
        flags+=(-C link-arg=-Wl,-z,pack-relative-relocs)
    fi
    for program in idle iostat; do
        if ! rustc --edition 2021 "${flags[@]}" "$here/bench/floor/$program.rs" -o "$dir/$program" >&2; then
            echo "bench/iostat.sh: could not build bench/floor/$program.rs; the floor is left out" >&2
            rm -rf "$dir"
            return
        fi
    done
    echo "$dir"
}

if [ -z "${HWSTAT_BENCH_IN_NAMESPACE:-}" ]; then
    if [ -z "${IOSTAT_RS:-}" ]; then
        # The shipped build (Cargo.toml's `dist` profile).
        (cd "$here" && cargo build --profile dist --quiet --bin iostat-rs)
        IOSTAT_RS=${CARGO_TARGET_DIR:-$here/target}/dist/iostat-rs
    fi
    [ -x "$IOSTAT_RS" ] || { echo "bench/iostat.sh: no binary at $IOSTAT_RS" >&2; exit 2; }
    FLOOR_DIR=$(build_floor)
    export IOSTAT_RS SYSSTAT REPS COUNT IREPS RSS_REPS PRIVATE_REPS FLOOR_DIR HWSTAT_BENCH_IN_NAMESPACE=1
    exec unshare -m --propagation private "$0" "${sizes[@]}"
fi

# ---- inside the namespace ----------------------------------------------
export LC_ALL=C TZ=UTC S_COLORS=never
unset POSIXLY_CORRECT S_TIME_FORMAT S_COLORS_SGR
work=$(mktemp -d /tmp/hwstat-bench.XXXXXX)
trap 'umount "$work" 2>/dev/null; rm -rf "$work"; [ -z "${FLOOR_DIR:-}" ] || rm -rf "$FLOOR_DIR"' EXIT
mount -t tmpfs hwstat-bench-files "$work"
mount -t tmpfs hwstat-bench-block /sys/block
for f in diskstats uptime stat; do
    : >"$work/$f"
    mount --bind "$work/$f" "/proc/$f"
done
# shellcheck source=bench/fake-devices.sh
. "$here/bench/fake-devices.sh"

# CPU milliseconds (task-clock, user+sys) of one run of "$@".
one_ms() {
    perf stat -x, -e task-clock -o "$work/perf" "$@" >/dev/null
    awk -F, '/task-clock/ { print $1; exit }' "$work/perf"
}

median() {
    sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# Runs sysstat and iostat-rs back to back $reps times with the same
# arguments and prints "sysstat-ms iostat-rs-ms ratio": the two medians and
# the median of the per-pair ratios. Pairs and medians keep the load of
# other users on a shared machine (which moves single runs by +-30%) out of
# the ratio as far as possible.
paired_ms() {
    local reps=$1 i s r; shift
    : >"$work/s"; : >"$work/r"; : >"$work/q"
    for ((i = 0; i < reps; i++)); do
        s=$(one_ms "$SYSSTAT" "$@")
        r=$(one_ms "$IOSTAT_RS" "$@")
        echo "$s" >>"$work/s"
        echo "$r" >>"$work/r"
        awk -v a="$r" -v b="$s" 'BEGIN { print a / b }' >>"$work/q"
    done
    echo "$(median <"$work/s") $(median <"$work/r") $(median <"$work/q")"
}

# Peak RSS in kB of sysstat and iostat-rs with the same arguments,
# "sysstat-kB iostat-rs-kB": the medians of RSS_REPS runs each, alternated.
max_rss_kb() {
    local i
    : >"$work/rs"
    : >"$work/rr"
    for ((i = 0; i < RSS_REPS; i++)); do
        /usr/bin/time -f %M -o "$work/rss" "$SYSSTAT" "$@" >/dev/null
        tail -1 "$work/rss" >>"$work/rs"
        /usr/bin/time -f %M -o "$work/rss" "$IOSTAT_RS" "$@" >/dev/null
        tail -1 "$work/rss" >>"$work/rr"
    done
    echo "$(median <"$work/rs") $(median <"$work/rr")"
}

# Private_Clean + Private_Dirty of process $1 in kB.
private_kb() {
    awk '/^Private_(Clean|Dirty):/ { kb += $2 } END { print kb }' "/proc/$1/smaps_rollup"
}

# "private-kB anonymous-kB" of "$@" run as an interval run, sampled 1.5 s
# in (after its first report, while it sleeps): Private_Clean +
# Private_Dirty and Anonymous of smaps_rollup, each the median of
# PRIVATE_REPS runs.
private_anon_kb() {
    local i pid
    : >"$work/private"
    : >"$work/anon"
    for ((i = 0; i < PRIVATE_REPS; i++)); do
        "$@" 1 3 >/dev/null &
        pid=$!
        sleep 1.5
        private_kb "$pid" >>"$work/private"
        awk '/^Anonymous:/ { print $2 }' "/proc/$pid/smaps_rollup" >>"$work/anon"
        wait "$pid"
    done
    echo "$(median <"$work/private") $(median <"$work/anon")"
}

# "sysstat-kB idle-kB floor-kB iostat-rs-kB": private memory of sysstat,
# the two programs of bench/floor/ and iostat-rs, each running (or, idle,
# sleeping through) `-x 1 3`, sampled as private_anon_kb samples,
# alternated, the medians of PRIVATE_REPS runs each.
private_floor_kb() {
    local i j pid programs=("$SYSSTAT" "$FLOOR_DIR/idle" "$FLOOR_DIR/iostat" "$IOSTAT_RS")
    for j in 0 1 2 3; do : >"$work/private-$j"; done
    for ((i = 0; i < PRIVATE_REPS; i++)); do
        for j in 0 1 2 3; do
            "${programs[j]}" -x 1 3 >/dev/null &
            pid=$!
            sleep 1.5
            private_kb "$pid" >>"$work/private-$j"
            wait "$pid"
        done
    done
    for j in 0 1 2 3; do median <"$work/private-$j"; done | paste -sd' '
}

# Task-clock ms that one wake-up costs this machine now: `sleep 0.2` minus
# `true`, medians of 5 runs each. It moves with the host's load, and the
# 10-device interval rows and the 10,000-device rows move with it
# (BENCHMARKS.md, session 15).
wake_charge_ms() {
    local i
    : >"$work/ws"
    : >"$work/wt"
    for ((i = 0; i < 5; i++)); do
        one_ms sleep 0.2 >>"$work/ws"
        one_ms true >>"$work/wt"
    done
    awk -v a="$(median <"$work/ws")" -v b="$(median <"$work/wt")" 'BEGIN { printf "%.3f", a - b }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "n/a" }'; }

# Bytes per device from "$1" kB to "$2" kB over "$3" more devices.
per_device_bytes() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { printf "%.0f", (b - a) * 1024 / n }'; }

# "instructions system-calls" of one run of "$@": callgrind's user-space
# instruction count and the number of system calls strace saw.
work_of_run() {
    local ir
    ir=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null |
        awk '/Collected :/ { print $NF }')
    strace -f -qq -o "$work/strace" "$@" >/dev/null
    echo "$ir $(grep -cv -e ' +++ ' -e ' --- ' -e 'resumed>' "$work/strace")"
}

# "instructions system-calls" that one more report of an interval run of
# "$@" costs: (run `1 COUNT` - run `1 1`) / (COUNT - 1).
work_per_report() {
    local i1 s1 in sn
    read -r i1 s1 < <(work_of_run "$@" 1 1)
    read -r in sn < <(work_of_run "$@" 1 "$COUNT")
    awk -v a="$i1" -v b="$in" -v c="$s1" -v d="$sn" -v n="$COUNT" \
        'BEGIN { printf "%.0f %.1f\n", (b - a) / (n - 1), (d - c) / (n - 1) }'
}

# Sanity: both programs see the generated devices.
check_setup() {
    local n=$1 seen
    seen=$("$SYSSTAT" -d -p ALL | grep -c '^nvme' || true)
    [ "$seen" = "$n" ] || { "$SYSSTAT" -d -p ALL >&2; cat "$work/diskstats" >&2; echo "bench: sysstat sees $seen of $n devices" >&2; exit 1; }
    seen=$("$IOSTAT_RS" -d -p ALL | grep -c '^nvme' || true)
    [ "$seen" = "$n" ] || { echo "bench: iostat-rs sees $seen of $n devices" >&2; exit 1; }
}

echo "iostat-rs: $IOSTAT_RS"
echo "sysstat:   $SYSSTAT ($("$SYSSTAT" -V 2>&1 | head -1))"
echo "machine:   $(nproc) CPUs, $(uname -r); REPS=$REPS COUNT=$COUNT IREPS=$IREPS RSS_REPS=$RSS_REPS PRIVATE_REPS=$PRIVATE_REPS; files on tmpfs"
echo "wake-up:   $(wake_charge_ms) ms of task clock per wake-up at the start (sleep 0.2 minus true: under 0.5 on this VM when its host is quiet, 0.6-2.6 when busy)"
echo
printf '| devices | mode | run | sysstat CPU ms/report | iostat-rs CPU ms/report | CPU ratio rs/sysstat (median of pairs) | sysstat max RSS kB | iostat-rs max RSS kB | RSS ratio | sysstat private kB | iostat-rs private kB | private ratio | sysstat anonymous kB | iostat-rs anonymous kB |\n'
printf '|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
declare -A anon_s anon_r
for n in "${sizes[@]}"; do
    make_devices "$n" "$work" /sys/block
    check_setup "$n"
    reps=$REPS
    [ "$n" -ge 10000 ] && reps=$(( REPS < 15 ? REPS : 15 ))
    for mode in "-x" "-x -p ALL"; do
        # shellcheck disable=SC2086 # $mode is a list of options
        {
            read -r s1 r1 q1 < <(paired_ms "$reps" $mode)
            read -r sm rm_ < <(max_rss_kb $mode)
            printf '| %s | `%s` | one report | %.3f | %.3f | %.3f | %s | %s | %s | | | | | |\n' \
                "$n" "$mode" "$s1" "$r1" "$q1" "$sm" "$rm_" "$(ratio "$rm_" "$sm")"
            read -r si ri qi < <(paired_ms "$IREPS" $mode 1 "$COUNT")
            read -r sm rm_ < <(max_rss_kb $mode 1 2)
            read -r sp sa < <(private_anon_kb "$SYSSTAT" $mode)
            read -r rp ra < <(private_anon_kb "$IOSTAT_RS" $mode)
            anon_s["$n $mode"]=$sa
            anon_r["$n $mode"]=$ra
            printf '| %s | `%s` | `1 %s`, per report | %.3f | %.3f | %.3f | %s | %s | %s | %s | %s | %s | %s | %s |\n' \
                "$n" "$mode" "$COUNT" "$(awk -v t="$si" -v c="$COUNT" 'BEGIN { print t / c }')" \
                "$(awk -v t="$ri" -v c="$COUNT" 'BEGIN { print t / c }')" "$qi" "$sm" "$rm_" "$(ratio "$rm_" "$sm")" \
                "$sp" "$rp" "$(ratio "$rp" "$sp")" "$sa" "$ra"
        }
    done
done
first=${sizes[0]}
last=${sizes[${#sizes[@]} - 1]}
if [ "$last" -gt "$first" ]; then
    echo
    echo "Anonymous memory per device, interval runs, from $first to $last devices (bytes):"
    for mode in "-x" "-x -p ALL"; do
        ps=$(per_device_bytes "${anon_s["$first $mode"]}" "${anon_s["$last $mode"]}" $((last - first)))
        pr=$(per_device_bytes "${anon_r["$first $mode"]}" "${anon_r["$last $mode"]}" $((last - first)))
        echo "  \`$mode\`: sysstat $ps, iostat-rs $pr, ratio $(ratio "$pr" "$ps")"
    done
fi
if [ -n "${FLOOR_DIR:-}" ]; then
    make_devices "$first" "$work" /sys/block
    read -r sp ip fp rp < <(private_floor_kb)
    echo
    echo "Private floor at $first devices: private kB of \`-x 1 3\` beside two Rust programs built as iostat-rs is, without its hot-code order (bench/floor/), alternated, medians of $PRIVATE_REPS runs:"
    echo
    echo '| program | private kB | ratio to sysstat |'
    echo '|---|---:|---:|'
    echo "| sysstat | $sp | 1 |"
    echo "| bench/floor/idle.rs (only sleeps) | $ip | $(ratio "$ip" "$sp") |"
    echo "| bench/floor/iostat.rs (the job, standard library only) | $fp | $(ratio "$fp" "$sp") |"
    echo "| iostat-rs | $rp | $(ratio "$rp" "$sp") |"
fi
if [ "$COUNT" -lt 2 ]; then
    echo
    echo "Work per report: skipped, COUNT=$COUNT leaves no second report to count."
elif ! command -v valgrind >/dev/null || ! command -v strace >/dev/null; then
    echo
    echo "Work per report: skipped, it needs valgrind and strace (apt-get install valgrind strace)."
else
    make_devices "$first" "$work" /sys/block
    echo
    echo "Work per report at $first devices, interval runs (exact counts; user-space instructions from callgrind, system calls from strace):"
    echo
    echo '| mode | sysstat instructions | iostat-rs instructions | ratio | sysstat system calls | iostat-rs system calls | ratio |'
    echo '|---|---:|---:|---:|---:|---:|---:|'
    for mode in "-x" "-x -p ALL"; do
        # shellcheck disable=SC2086 # $mode is a list of options
        read -r si ss < <(work_per_report "$SYSSTAT" $mode)
        # shellcheck disable=SC2086
        read -r ri rs < <(work_per_report "$IOSTAT_RS" $mode)
        printf '| `%s` | %s | %s | %s | %s | %s | %s |\n' \
            "$mode" "$si" "$ri" "$(ratio "$ri" "$si")" "$ss" "$rs" "$(ratio "$rs" "$ss")"
    done
fi
echo
echo "wake-up:   $(wake_charge_ms) ms of task clock per wake-up at the end"
echo
echo "Targets: CPU ratio <= 0.100 at 10000 devices and <= 1 at 10; peak RSS ratio <= 1 at 1000 and 10000 devices; private-memory ratio <= 1 at 10 devices."
echo "Proposed instead of the private-memory target (BENCHMARKS.md, session 12): anonymous memory per device ratio <= 1."
echo "Proposed beside the CPU target at $first devices, whose interval runs time the wakeups (BENCHMARKS.md, session 14): work per report ratios <= 1."
