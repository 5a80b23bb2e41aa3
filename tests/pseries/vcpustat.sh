# vcpustat against a pseries kernel's files, as a transcript.
#
# The same script runs in two places, and the two transcripts are compared:
# * in a QEMU pseries guest with the real kernel (.ci/pseries, busybox sh,
#   ROOT empty);
# * on the host against the FUSE simulation of those files
#   (tests/suite/pseries_sim.rs, sh, ROOT = the simulation's mount point).
# Only POSIX sh and tools busybox and coreutils share (cat, dd, tr, wc,
# sleep, kill); their messages are dropped and their failures printed as
# `failed`, so that the transcript says what the kernel did, not which tool
# or shell said it.
# TMP is a scratch directory, the working directory from here on.
set -u
cd "$TMP" || exit 1
P=$ROOT/proc/powerpc
D=$ROOT/sys/kernel/debug/powerpc/dtl

# vcpustat's option for the sysroot when there is one (ROOT has no spaces).
# Not a function: a function run in the background is a subshell, and a
# signal sent to $! would reach the shell, not vcpustat.
# `trace record` takes it after the subcommand: use `vcpustat $SR ARGS` for
# the statistics and `vcpustat trace record $SR ARGS` for the DTL.
if [ -n "$ROOT" ]; then SR="--sysroot $ROOT"; else SR=; fi

# Prints `$ LABEL`, then runs the rest, printing its output and exit
# status. The output goes through a file: the guest's console is a
# terminal, where vcpustat would add progress lines.
run() {
    echo "\$ $1"
    shift
    "$@" >out.run 2>&1
    rc=$?
    cat out.run
    echo "[exit $rc]"
}

# vcpustat ARGS, on the sysroot.
v() { run "vcpustat $*" vcpustat $SR "$@"; }
# vcpustat trace record ARGS, on the sysroot.
tr_rec() { run "vcpustat trace record $*" vcpustat trace record $SR "$@"; }
# vcpustat trace report ARGS (recordings only).
tr_rep() { run "vcpustat trace report $*" vcpustat trace report "$@"; }

# Prints a kernel file as `name: contents` (or that the read failed).
show() {
    printf '%s: ' "$1"
    cat "$2" 2>/dev/null || echo "[cat failed]"
}

# Prints `ok` or `failed` for the status $?, the shells' codes differ.
outcome() { if [ "$1" = 0 ]; then echo ok; else echo failed; fi; }

# Writes $2 to file $1 with one write(2), printing whether it was accepted.
put() {
    printf '%s' "$2" >"$1" 2>/dev/null
    echo "write '$2' > ${1#"$ROOT"}: $(outcome $?)"
}

# Opens file $1 for reading, printing whether that worked, as $2.
try_open() {
    (exec 4<"$1") 2>/dev/null
    echo "$2: $(outcome $?)"
}

# Reads file $1 with dd bs=$2 count=$3; prints the exit status and the bytes.
readsize() {
    rm -f "dd.out"
    dd if="$1" of="dd.out" bs="$2" count="$3" 2>/dev/null
    rc=$?
    echo "read ${1#"$ROOT"} bs=$2 count=$3: $(outcome $rc), $(wc -c <"dd.out") bytes: $(tr '\n' '|' <"dd.out")"
}

# Waits (up to 10 s) until file $1 reads something other than $2.
until_not() {
    n=0
    while [ "$(cat "$1" 2>/dev/null)" = "$2" ] && [ $n -lt 100 ]; do
        sleep 0.1
        n=$((n + 1))
    done
}

# The record vcpustat runs share (ROOT/run/vcpustat.lock): its lines
# without the newlines that pad it, each ended by `|`, the number of a
# `switched-on` claim left out.
record() {
    grep -v '^$' "$ROOT/run/vcpustat.lock" 2>/dev/null |
        sed 's/^switched-on [0-9]*$/switched-on/' | tr '\n' '|'
}

# Waits (up to 10 s) until the record is $1, then prints it.
until_record() {
    n=0
    while [ "$(record)" != "$1" ] && [ $n -lt 100 ]; do
        sleep 0.1
        n=$((n + 1))
    done
    echo "record: $(record)"
}

# Waits (up to 10 s) until process $1 holds the DTL ring cpu-$2 open.
until_ring_open() {
    n=0
    until ls -l "/proc/$1/fd" 2>/dev/null | grep -q "/dtl/cpu-$2\$" || [ $n -ge 100 ]; do
        sleep 0.1
        n=$((n + 1))
    done
}

# Prints the command line of vcpustat ARGS ($SR left out) and starts it
# in the background, its standard error into `err`; $pid is the run.
start() {
    sig=$1
    shift
    cmd="$*"
    if [ -n "$SR" ]; then cmd=$(echo "$cmd" | sed "s#$SR ##"); fi
    echo "\$ vcpustat $cmd & kill -$sig"
    vcpustat "$@" >/dev/null 2>"err" &
    pid=$!
}

# Sends signal $1 to run $pid, and prints its exit status and standard error.
stop() {
    kill -"$1" $pid
    wait $pid
    echo "[exit $?]"
    cat "err"
}

# Runs vcpustat ARGS in the background until it has changed file $1 from
# $2, sends signal $3, and prints its exit status and standard error.
signalled() {
    file=$1 before=$2 sig=$3
    shift 3
    start $sig "$@"
    until_not "$file" "$before"
    stop $sig
}

# Runs `vcpustat trace record ARGS` on two vCPUs in the background until
# both its rings are open, sends signal $1, and prints its exit status and
# standard error.
recording_signalled() {
    sig=$1
    shift
    start $sig trace record "$@"
    until_ring_open $pid 1
    stop $sig
}

echo "## the files at boot"
show vcpudispatch_stats "$P/vcpudispatch_stats"
show vcpudispatch_stats_freq "$P/vcpudispatch_stats_freq"
show dtl_event_mask "$D/dtl_event_mask"
show dtl_buf_entries "$D/dtl_buf_entries"
v --status

echo "## writes the kernel refuses and accepts"
for w in 2 abc -1 0x 1234567890123456 0; do put "$P/vcpudispatch_stats" "$w"; done
show vcpudispatch_stats "$P/vcpudispatch_stats"
for w in 0 -5 251 100000 abc 250 1 0x32; do put "$P/vcpudispatch_stats_freq" "$w"; done
show vcpudispatch_stats_freq "$P/vcpudispatch_stats_freq"

echo "## --freq against the kernel's range"
v --freq 0
v --freq 251
v --freq 1001
v --freq 250 --status
v --freq 1 --status
v --freq 50 --status

echo "## on and off"
v --enable
v --status
show vcpudispatch_stats "$P/vcpudispatch_stats"
v -n
v --disable
v --status
show vcpudispatch_stats "$P/vcpudispatch_stats"
v

echo "## interval reports in every format (switched on for the run only)"
v 0.2 2
v -n 0.2 1
for f in json ndjson csv prometheus; do
    v -o $f 0.2 2
done
show vcpudispatch_stats "$P/vcpudispatch_stats"

echo "## restoration after signals and a closed pipe"
for sig in TERM INT HUP; do
    signalled "$P/vcpudispatch_stats" off $sig $SR 0.1
    show vcpudispatch_stats "$P/vcpudispatch_stats"
done
signalled "$P/vcpudispatch_stats_freq" 50 TERM $SR --freq 100 --temporary 0.1
show vcpudispatch_stats_freq "$P/vcpudispatch_stats_freq"
echo "\$ vcpustat 0.1 | head -n 1"
{
    vcpustat $SR 0.1 2>"err"
    echo $? >"rc"
} | head -n 1 >/dev/null
echo "[exit $(cat "rc")]"
cat "err"
show vcpudispatch_stats "$P/vcpudispatch_stats"

echo "## two runs share the statistics: the last to end undoes"
echo "\$ vcpustat -n --freq 20 --temporary 0.05 &"
vcpustat $SR -n --freq 20 --temporary 0.05 >/dev/null 2>"err1" &
first=$!
until_record "switched-on|freq 50 20|"
echo "\$ vcpustat -n --freq 40 --temporary 0.05 &"
vcpustat $SR -n --freq 40 --temporary 0.05 >/dev/null 2>"err2" &
second=$!
until_record "switched-on|freq 50 40|"
kill -INT $first
wait $first
echo "[first run: exit $?]"
cat "err1"
v --status
kill -INT $second
wait $second
echo "[second run: exit $?]"
cat "err2"
v --status
until_record ""
echo "\$ vcpustat 0.05 & kill -KILL"
vcpustat $SR 0.05 >/dev/null 2>/dev/null &
killed=$!
until_record "switched-on|"
kill -KILL $killed
wait $killed 2>/dev/null
echo "\$ vcpustat -n 0.05 1 >/dev/null"
vcpustat $SR -n 0.05 1 >/dev/null 2>"err"
echo "[exit $?]"
cat "err"
v --status
v --disable

echo "## the DTL rings"
readsize "$D/cpu-0" 47 1
readsize "$D/cpu-0" 48 1
readsize "$D/cpu-0" 4800 1
readsize "$D/dtl_event_mask" 1 3
readsize "$D/dtl_event_mask" 4096 1
readsize "$D/dtl_buf_entries" 2 1
put "$D/dtl_buf_entries" 100
put "$D/dtl_event_mask" zz
show dtl_event_mask "$D/dtl_event_mask"

echo "## one DTL user at a time"
exec 3<"$D/cpu-0"
echo "cpu-0 held open"
try_open "$D/cpu-0" "second open of cpu-0"
try_open "$D/cpu-1" "open of cpu-1"
v --enable
put "$P/vcpudispatch_stats" 1
show vcpudispatch_stats "$P/vcpudispatch_stats"
exec 3<&-
echo "cpu-0 closed"
v --enable
try_open "$D/cpu-1" "open of cpu-1 with the statistics on"
tr_rec --duration 0.2 -w busy.dtl
[ -e busy.dtl ] && echo "busy.dtl written" || echo "no busy.dtl"
v --disable
try_open "$D/cpu-1" "open of cpu-1 with the statistics off"

echo "## trace record sets dtl_event_mask while it opens the rings"
echo "\$ vcpustat trace record --events cede,preempt --duration 4 -w t.dtl"
vcpustat trace record $SR --events cede,preempt --duration 4 -w t.dtl >"out" 2>&1 &
pid=$!
# The kernel took the mask when each ring was opened: it is back just
# after the last ring opens, while the recording goes on. 4 s, so that
# the ring is still open when this looks (on the simulation beside a busy
# suite, the looks took over a second once).
until_ring_open $pid 1
until_not "$D/dtl_event_mask" 0x03
show "dtl_event_mask while recording" "$D/dtl_event_mask"
if ls -l "/proc/$pid/fd" 2>/dev/null | grep -q "/dtl/cpu-1\$"; then
    echo "cpu-1 still open: yes"
else
    echo "cpu-1 still open: no"
fi
wait $pid
echo "[exit $?]"
cat "out"
show dtl_event_mask "$D/dtl_event_mask"
for sig in INT TERM HUP; do
    recording_signalled $sig $SR --events preempt -w s.dtl
    show dtl_event_mask "$D/dtl_event_mask"
done
v --enable
tr_rec --events fault --duration 0.2 -w busy.dtl
show dtl_event_mask "$D/dtl_event_mask"
v --disable

echo "## trace report on what was recorded"
tr_rep t.dtl
tr_rep -o json t.dtl
tr_rep --table timeline -o csv t.dtl
