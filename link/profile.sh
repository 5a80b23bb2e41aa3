#!/usr/bin/env bash
# Writes link/hot-functions.txt: the functions of the `dist` programs that
# usual runs execute, for build.rs to hand to the linker
# (--symbol-ordering-file), which then places them together at the start of
# the text.
#
# Why: the kernel maps a program's text 64 kB at a time around each page
# it faults in ("fault-around"), so code a run never executes is resident
# all the same when it shares a 64 kB window with code it does execute. In
# the unordered build a plain `iostat-rs -x 1 3` executes about 180 kB of
# the 2 MB text but keeps 1.8 MB of it resident (BENCHMARKS.md, "Hot code
# first"), every page of it private to the process.
#
# It also writes link/hot-rodata.txt, the read-only data the main job
# reads, and link/dependency-rodata.txt, the other crates' constants
# (link/hot_rodata.py explains both), from valgrind lackey traces of the
# main job and LLD's map of iostat-rs.
#
# Usage: link/profile.sh        (needs root, valgrind, python3 and strings)
#
# The runs, in priority order: one report of iostat-rs's main job once
# it runs (at 10 and 1,000 devices); iostat-rs's main job (`-x` at an interval)
# on fake kernels of 10, 1,000 and 10,000 devices and on this machine's own
# /proc and /sys; then its other usual modes; then a recording replayed as
# text and JSON; then vcpustat and cxlstat from the test recordings.
# callgrind lists the functions each run executed. The file lists first
# every function of the first run, then those of the second run that are
# not listed yet, and so on: the main job's code is one block at the very
# start, and each mode after it adds only what it needs beyond the modes
# before it.
#
# The names are the symbols of this toolchain's build of this Cargo.toml
# and Cargo.lock: a new toolchain, or a change to the dependencies or the
# version, changes the hash in every name of this crate, and names the
# list has and a program lacks are skipped (build.rs). So run this again
# after such a change, or when new code joins a usual run: the layout test
# (tests/suite/layout.rs, run by .ci/run) fails until then.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
bin=${CARGO_TARGET_DIR:-$here/target}/dist
# callgrind runs a build with the linker's own layout (build.rs,
# HWSTAT_PLAIN_LAYOUT): valgrind attributes only `.text` to the program,
# so the dist build's `.text.hot` would show as `???`. Same function names.
plain=${CARGO_TARGET_DIR:-$here/target}/plain-layout/dist
export LC_ALL=C TZ=UTC S_COLORS=never
unset POSIXLY_CORRECT S_TIME_FORMAT S_COLORS_SGR

# profile PRIORITY PROGRAM ARGS...: one callgrind run, kept as
# $work/run.PRIORITY.N (PRIORITY a two-digit rank, N a count).
profile() {
    local priority=$1 program=$2
    shift 2
    valgrind --tool=callgrind --demangle=no \
        --callgrind-out-file="$work/run.$priority.$(find "$work" -name 'run.*' | wc -l)" \
        "$plain/$program" "$@" >/dev/null 2>"$work/log" ||
        { cat "$work/log" >&2; echo "link/profile.sh: $program $* failed" >&2; exit 1; }
}

# steady PRIORITY ARGS...: the functions the third report of
# `iostat-rs ARGS 0.01 4` executes (callgrind's part between the second
# and third waits), kept as $work/run.PRIORITY.N. Listed first, the code an
# interval run executes again and again takes the fewest pages, apart from
# its start-up code.
steady() {
    local priority=$1
    shift
    valgrind --tool=callgrind --demangle=no --dump-before='*StopSignal*sleep_until*' \
        --callgrind-out-file="$work/steady" "$plain/iostat-rs" "$@" 0.01 4 >/dev/null 2>"$work/log" ||
        { cat "$work/log" >&2; echo "link/profile.sh: iostat-rs $* 0.01 4 failed" >&2; exit 1; }
    mv "$work/steady.3" "$work/run.$priority.$(find "$work" -name 'run.*' | wc -l)"
    rm -f "$work"/steady*
}

# trace LABEL ARGS...: a valgrind lackey trace of iostat-rs ARGS, kept as
# $work/trace.LABEL.N.
trace() {
    local label=$1
    shift
    valgrind --tool=lackey --trace-mem=yes \
        --log-file="$work/trace.$label.$(find "$work" -name 'trace.*' | wc -l)" \
        "$bin/iostat-rs" "$@" >/dev/null
}

# The fake devices are read through the live paths (--sysroot opens files
# with openat2, which valgrind does not know), in a private mount namespace
# as bench/iostat.sh does; nothing outside it changes.
if [ -n "${HWSTAT_PROFILE_WORK:-}" ]; then
    work=$HWSTAT_PROFILE_WORK
    # shellcheck source=bench/fake-devices.sh
    . "$here/bench/fake-devices.sh"
    mkdir "$work/proc"
    mount -t tmpfs hwstat-profile-block /sys/block
    for f in diskstats uptime stat; do
        : >"$work/proc/$f"
        mount --bind "$work/proc/$f" "/proc/$f"
    done
    for n in 10 1000 10000; do
        make_devices "$n" "$work/proc" /sys/block
        # Every data access of the main job, for link/hot_rodata.py: at
        # 1,000 devices some value needs the standard float formatter (a
        # near tie), whose tables a report then reads. The traces of one
        # 1,000-device report take 250 MB each, so none at 10,000.
        if [ "$n" = 10 ]; then
            trace "$n" -x 0.01 3
            trace "$n" -x -p ALL 0.01 3
        elif [ "$n" = 1000 ]; then
            trace "$n" -x
            trace "$n" -x -p ALL
        fi
        if [ "$n" != 10000 ]; then
            steady 05 -x
            steady 05 -x -p ALL
        fi
        rank=10
        # The main job as users run it, at a whole second: a wait that
        # long may take code a 10 ms one does not (a u128 division once).
        if [ "$n" = 10 ]; then
            profile $rank iostat-rs -x 1 2
        fi
        for mode in "-x" "-x -p ALL" "" "-d" "-dx -k" "-xz" "-c"; do
            # shellcheck disable=SC2086 # $mode is a list of options
            profile $rank iostat-rs $mode 0.01 3
            # shellcheck disable=SC2086
            profile $((rank + 1)) iostat-rs $mode
            rank=$((rank + 2))
        done
    done
    exit 0
fi

[ "$(id -u)" = 0 ] || { echo "link/profile.sh: needs root (mount namespace)" >&2; exit 2; }
for tool in valgrind unshare; do
    command -v "$tool" >/dev/null || { echo "link/profile.sh: $tool is missing" >&2; exit 2; }
done
for tool in python3 strings; do
    command -v "$tool" >/dev/null || { echo "link/profile.sh: $tool is missing" >&2; exit 2; }
done
work=$(mktemp -d /tmp/hwstat-profile.XXXXXX)
trap 'rm -rf "$work"' EXIT
# The crate's rlib (its LLVM bitcode in the dist profile) names its
# anonymous constants `anon.<hash>.<n>`: the hash marks this crate's group.
rlib=$(cargo build --profile dist --quiet --bins --message-format=json |
    python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "hwstat" and "lib" in m["target"]["kind"]:
        print(next(f for f in m["filenames"] if f.endswith(".rlib")))')
group=$(strings -a "$rlib" | grep -o 'anon\.[0-9a-f]\{32\}\.' | sort | uniq -c | sort -rn |
    awk 'NR == 1 { print substr($2, 6, 32) }')
HWSTAT_PLAIN_LAYOUT=1 CARGO_TARGET_DIR="$(dirname "$plain")" cargo build --profile dist --quiet --bins
# The same iostat-rs linked again with LLD's map of its input sections.
cargo rustc --profile dist --quiet --bin iostat-rs -- -C "link-arg=-Wl,-Map=$work/iostat-rs.map"
HWSTAT_PROFILE_WORK=$work unshare -m --propagation private "$0"
trace live -x 0.01 3
python3 link/hot_rodata.py "$work/iostat-rs.map" "$group" link/dependency-rodata.txt \
    "$work"/trace.* >link/hot-rodata.txt
rm "$work"/trace.*
echo "link/profile.sh: $(grep -vc '^#' link/hot-rodata.txt) read-only data sections in link/hot-rodata.txt," \
    "$(grep -vc '^#' link/dependency-rodata.txt) groups in link/dependency-rodata.txt"
profile 10 iostat-rs -x 0.01 3
profile 30 iostat-rs --replay tests/fixtures/charts/iostat.rec -x 1
profile 31 iostat-rs --replay tests/fixtures/charts/iostat.rec -x -o JSON 1
profile 40 vcpustat --replay tests/fixtures/charts/vcpustat.rec 1
profile 50 cxlstat --replay tests/fixtures/charts/cxlstat.rec -e cpu_clock,context_switches 0.1
runs=$(find "$work" -name 'run.*' | wc -l)

# Each callgrind file names the functions with a cost in it: `fn=(id) name`
# the first time, `fn=(id)` after. Only those of our own programs count
# (`ob=` names the object the following functions belong to); valgrind
# names code outside any symbol by its address or "(below main)".
out=link/hot-functions.txt
{
    echo "# Functions of the dist programs in the order the linker places them"
    echo "# first (build.rs). Generated by link/profile.sh over $runs runs; do not edit."
    # The C start-up and exit code every run executes (Scrt1.o, crtbeginS.o),
    # which valgrind knows only by address: unlisted, it would land after
    # the listed block and keep one more 64 kB window resident.
    printf '%s\n' _start deregister_tm_clones register_tm_clones __do_global_dtors_aux frame_dummy
    find "$work" -name 'run.*' -printf '%f\n' | sort -t. -k2,2n -k3,3n | while read -r f; do
        # After the runs of the main job (-x and -x -p ALL, ranks up to
        # 13), the line build.rs ends its block at (HOT_TEXT_MAIN).
        rank=${f#run.}
        rank=${rank%%.*}
        if [ "$((10#$rank))" -gt 13 ] && [ -z "${main_job_listed:-}" ]; then
            echo "#main-job-end"
            main_job_listed=1
        fi
        awk -v bin="$plain/" '
            # "key=(id) name" defines an id, "key=(id)" refers to one;
            # cob/cfn (the callee of a call) share the ids of ob/fn.
            function parse(line) {
                id = substr(line, index(line, "("), index(line, ")") - index(line, "(") + 1)
                name = substr(line, index(line, ")") + 2)
            }
            /^c?ob=\(/ {
                parse($0)
                if (name != "") object[id] = name
                if (/^ob=/) ours = index(object[id], bin) == 1
            }
            /^c?fn=\(/ {
                parse($0)
                if (name != "") fname[id] = name
                if (/^fn=/ && ours) seen[fname[id]] = 1
            }
            END { for (f in seen) print f }
        ' "$work/$f" | grep -v -e ' ' -e '^0x' | sort
    done | awk '!listed[$0]++'
} >"$out"
echo "link/profile.sh: $(grep -vc '^#' "$out") functions over $runs runs in $out"
