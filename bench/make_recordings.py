#!/usr/bin/env python3
"""Writes a synthetic iostat-rs recording (docs/recording.md) for the chart
tests, the README pictures and bench/svg.sh: DEVICES devices (the third
named with markup and control characters), FRAMES one-second samples,
deterministic counters, one read-latency spike on the second device.

usage: make_recordings.py iostat DEVICES FRAMES OUT
"""
import json
import sys

START = 1_767_258_000  # 2026-01-01 09:00:00 UTC


def names(n):
    fixed = ["sda", "nvme0n1", '<b>&"x\x01']
    return fixed[:n] + [f"sd{i}" for i in range(len(fixed), n)]


def diskstats(devs, t):
    lines = []
    for i, name in enumerate(devs):
        k = i + 1
        rd = t * (10 + 7 * k) + (t * t * k) % 13
        wr = t * (5 + 3 * (k % 5)) + (t * k) % 7
        rd_ticks = rd * (1 + k % 3) + (900 if i == 1 and t >= 6 else 0)
        wr_ticks = wr * 2
        busy = min(t * 1000, t * (100 + 40 * (k % 20)))
        lines.append(
            f"8 {i} {name} {rd} 0 {rd * 8} {rd_ticks} {wr} 0 {wr * 16} {wr_ticks} "
            f"0 {busy} {rd_ticks + wr_ticks} 0 0 0 0 0 0"
        )
    return "\n".join(lines) + "\n"


def stat(t):
    u, s, w = 100 * t, 40 * t, 10 * (t % 3) + 5 * t
    idle = 400 * t - u - s - w
    return f"cpu  {u} 0 {s} {idle} {w} 0 0 0 0 0\ncpu0 {u} 0 {s} {idle} {w} 0 0 0 0 0\n"


def iostat(devices, frames, out):
    devs = names(devices)
    header = {
        "format": "hwstat-recording",
        "version": 1,
        "tool": "iostat-rs",
        "args": ["-x", "1"],
        "uname": {"sysname": "Linux", "nodename": "chart-demo", "release": "6.18.0",
                  "version": "#1", "machine": "x86_64"},
        "start_unix_ns": START * 10**9,
    }
    with open(out, "w") as f:
        f.write(json.dumps(header) + "\n")
        for t in range(frames):
            entries = {
                "read /proc/diskstats": {"text": diskstats(devs, t)},
                "read /proc/stat": {"text": stat(t)},
                "read /proc/uptime": {"text": f"{5000 + t}.00 100.00\n"},
            }
            if t == 0:
                entries["list /sys/block"] = {"list": devs}
                entries["list /sys/devices/system/cpu"] = {"list": ["cpu0"]}
            frame = {"index": t, "time_unix_ns": (START + t) * 10**9,
                     "elapsed_ns": t * 10**9, "entries": entries}
            f.write(json.dumps(frame) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 5 or sys.argv[1] != "iostat":
        sys.exit(__doc__)
    iostat(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
