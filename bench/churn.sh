#!/usr/bin/env bash
# Devices that come and go: iostat-rs replaying recordings in which every
# report has NEW devices never seen before (dm-N, N always growing) beside
# two that stay, FRAMES_SMALL and then FRAMES_LARGE reports. iostat-rs
# keeps every device name it has seen, as sysstat does, so memory grows by
# a few hundred bytes a name; anything that grows faster, or CPU per report
# that grows faster than the names seen, shows as the difference between
# the two sizes.
#
# Usage: bench/churn.sh [WORKDIR]   (default: a temporary directory, removed)
# Environment: NEW (new devices a report, default 10), FRAMES_SMALL
# (default 1000), FRAMES_LARGE (default 10000), REPS (runs of each,
# default 2). Builds the release programs first. Prints user+system CPU
# and peak RSS per run (/usr/bin/time) for the text, JSON, Prometheus and
# --svg outputs.
set -euo pipefail
cd "$(dirname "$0")/.."
NEW=${NEW:-10}
FRAMES_SMALL=${FRAMES_SMALL:-1000}
FRAMES_LARGE=${FRAMES_LARGE:-10000}
REPS=${REPS:-2}
work=${1:-}
if [[ -z $work ]]; then
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
cargo build --release --quiet --bins
bin=${CARGO_TARGET_DIR:-target}/release

timed() { # label, command...
    local label=$1
    shift
    for _ in $(seq "$REPS"); do
        /usr/bin/time -f "$label: %U+%S s CPU, %M kB peak RSS" "$@" >/dev/null
    done
}

for frames in "$FRAMES_SMALL" "$FRAMES_LARGE"; do
    rec=$work/churn-$frames.rec
    python3 bench/make_recordings.py churn "$NEW" "$frames" "$rec"
    names=$((NEW * frames + 2))
    for format in text JSON prometheus; do
        timed "$frames reports, $names names, -x -o $format" \
            "$bin/iostat-rs" --replay "$rec" -x -o "$format" 1
    done
    timed "$frames reports, $names names, -x --svg" \
        "$bin/iostat-rs" --replay "$rec" -x --svg "$work/churn.svg" 1
done
