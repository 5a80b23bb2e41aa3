#!/usr/bin/env bash
# Size and time of the --svg charts at scale (issue 14.3):
#   * iostat-rs -x replaying a recording of DEVICES devices (default
#     10,000) and FRAMES one-second samples (default 60): the whole replay
#     with --svg (the chart rewritten after each of the FRAMES-1 reports)
#     and without, and the size of the final chart;
#   * vcpustat trace report on ENTRIES DTL records (default 10,000,000,
#     4 partitions x 16 vCPUs on 64 processors, from the trace_bench
#     example) with --svg and without (--table latency), and the size.
#
# Usage: bench/svg.sh [WORKDIR]     (default: a temporary directory, removed)
# Environment: DEVICES, FRAMES, ENTRIES, REPS (runs of each, default 3).
# Builds the release programs first. Prints elapsed, user+system CPU and
# peak RSS per run (/usr/bin/time), and the SVG sizes.
set -euo pipefail
cd "$(dirname "$0")/.."
DEVICES=${DEVICES:-10000}
FRAMES=${FRAMES:-60}
ENTRIES=${ENTRIES:-10000000}
REPS=${REPS:-3}
work=${1:-}
if [[ -z $work ]]; then
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
cargo build --release --quiet --bins --example trace_bench
bin=target/release

timed() { # label, command...
    local label=$1
    shift
    for _ in $(seq "$REPS"); do
        /usr/bin/time -f "$label: %e s elapsed, %U+%S s CPU, %M kB peak RSS" "$@" >/dev/null
    done
}

python3 bench/make_recordings.py iostat "$DEVICES" "$FRAMES" "$work/iostat.rec"
timed "iostat-rs -x, $DEVICES devices, $FRAMES samples, no --svg" \
    "$bin/iostat-rs" --replay "$work/iostat.rec" -x 1
timed "iostat-rs -x, $DEVICES devices, $FRAMES samples, --svg" \
    "$bin/iostat-rs" --replay "$work/iostat.rec" -x --svg "$work/iostat.svg" 1
echo "iostat-rs chart: $(stat -c %s "$work/iostat.svg") bytes"

if ! ls "$work"/p*.dtl >/dev/null 2>&1; then
    "$bin/examples/trace_bench" "$ENTRIES" "$work" >/dev/null
fi
timed "trace report --table latency, $ENTRIES records, no --svg" \
    "$bin/vcpustat" trace report --table latency "$work"/p*.dtl
timed "trace report --table latency, $ENTRIES records, --svg" \
    "$bin/vcpustat" trace report --table latency --svg "$work/trace.svg" "$work"/p*.dtl
echo "trace report chart: $(stat -c %s "$work/trace.svg") bytes"
