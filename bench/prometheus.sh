#!/usr/bin/env bash
# One scrape of `iostat-rs --listen` against node_exporter's diskstats
# collector on the same generated kernel files, at N block devices, and the
# resident memory of both idle servers (BENCHMARKS.md, "Prometheus").
#
# Usage: bench/prometheus.sh [DEVICES]      (default: 10000)
# Environment:
#   IOSTAT_RS      binary under test (default: the dist build of this checkout)
#   NODE_EXPORTER  reference (default: Debian's prometheus-node-exporter)
#   SCRAPES        scrapes per measurement (default: 50)
#   REPS           measurements per server, the median is kept (default: 5)
#
# Both read the same tree: iostat-rs with --sysroot, node_exporter with
# --path.procfs/--path.sysfs/--path.udev.data (no udev database on either
# side) and only its diskstats collector, without its own Go and process
# metrics (--web.disable-exporter-metrics); iostat-rs with -d (disks only).
# CPU per scrape = (utime + stime of the server process, from
# /proc/PID/stat) over SCRAPES scrapes / SCRAPES: the server's own work,
# not the client's. Idle RSS = VmRSS of the server after the scrapes and
# one second without any; start RSS = VmRSS 2 s after start, before any
# scrape.
set -euo pipefail

devices=${1:-10000}
SCRAPES=${SCRAPES:-50}
REPS=${REPS:-5}
NODE_EXPORTER=${NODE_EXPORTER:-prometheus-node-exporter}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
for tool in curl python3 "$NODE_EXPORTER"; do
    command -v "$tool" >/dev/null || { echo "bench/prometheus.sh: $tool is missing" >&2; exit 2; }
done
if [ -z "${IOSTAT_RS:-}" ]; then
    (cd "$here" && cargo build --profile dist --quiet --bin iostat-rs)
    IOSTAT_RS=${CARGO_TARGET_DIR:-$here/target}/dist/iostat-rs
fi

root=$(mktemp -d /tmp/hwstat-prom-bench.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$root"
}
trap cleanup EXIT

# The tree: N whole disks sd<letters> with 17 statistics each.
python3 - "$root" "$devices" <<'EOF'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
os.makedirs(f"{root}/proc", exist_ok=True)
os.makedirs(f"{root}/sys/block", exist_ok=True)
def name(i):
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = chr(97 + r) + s
    return "sd" + s
lines = []
for i in range(n):
    d = name(i)
    os.makedirs(f"{root}/sys/block/{d}", exist_ok=True)
    v = [1000 + i, 10, 8000 + i, 500, 2000 + i, 20, 16000 + i, 900, 0, 1200, 1400, 0, 0, 0, 0, 30, 7]
    lines.append(f"{8 + i // 256:4d} {i % 256:7d} {d} " + " ".join(map(str, v)))
open(f"{root}/proc/diskstats", "w").write("\n".join(lines) + "\n")
open(f"{root}/proc/stat", "w").write("cpu  1 0 1 8 0 0 0 0 0 0\ncpu0 1 0 1 8 0 0 0 0 0 0\n")
open(f"{root}/proc/uptime", "w").write("100.00 90.00\n")
EOF

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# cpu_ticks PID: utime + stime in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

# measure NAME URL PID: prints "NAME ms_per_scrape idle_rss_kb bytes start_rss_kb"
measure() {
    local name=$1 url=$2 pid=$3 results=() start_rss
    sleep 2
    start_rss=$(rss_kb "$pid")
    for _ in $(seq 30); do curl -sf -o /dev/null "$url" && break; sleep 0.2; done
    local bytes
    bytes=$(curl -sf "$url" | wc -c)
    for _ in $(seq "$REPS"); do
        local before after
        before=$(cpu_ticks "$pid")
        for _ in $(seq "$SCRAPES"); do curl -sf -o /dev/null "$url"; done
        after=$(cpu_ticks "$pid")
        results+=("$(python3 -c "print(($after - $before) * 1000 / $(getconf CLK_TCK) / $SCRAPES)")")
    done
    sleep 1
    local median
    median=$(printf '%s\n' "${results[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    echo "$name $median $(rss_kb "$pid") $bytes $start_rss"
}

ip=$(port)
"$IOSTAT_RS" --sysroot "$root" -d --listen "127.0.0.1:$ip" &
pids+=($!)
iostat_line=$(measure iostat-rs "http://127.0.0.1:$ip/metrics" "${pids[-1]}")

np=$(port)
"$NODE_EXPORTER" --web.listen-address="127.0.0.1:$np" \
    --path.procfs="$root/proc" --path.sysfs="$root/sys" --path.udev.data="$root/udev" \
    --collector.disable-defaults --collector.diskstats \
    --collector.diskstats.device-exclude='^$' --web.disable-exporter-metrics \
    >/dev/null 2>&1 &
pids+=($!)
node_line=$(measure node_exporter "http://127.0.0.1:$np/metrics" "${pids[-1]}")

echo "devices: $devices, $SCRAPES scrapes x $REPS (median)"
printf '%-14s %14s %14s %12s %14s\n' server "CPU ms/scrape" "idle RSS kB" "body bytes" "start RSS kB"
for line in "$iostat_line" "$node_line"; do
    # shellcheck disable=SC2086
    printf '%-14s %14s %14s %12s %14s\n' $line
done
read -r _ ims irss _ _ <<<"$iostat_line"
read -r _ nms nrss _ _ <<<"$node_line"
python3 -c "print(f'CPU ratio iostat-rs/node_exporter: {$ims / $nms:.3f}; RSS ratio: {$irss / $nrss:.3f}')"
