#!/usr/bin/env python3
"""Writes a synthetic iostat-rs recording (docs/recording.md) for the chart
tests, the README pictures and bench/svg.sh: DEVICES devices (the third
named with markup and control characters), FRAMES one-second samples,
deterministic counters, one read-latency spike on the second device.

A vcpustat recording has VCPUS vCPUs and FRAMES one-second samples of
/proc/powerpc/vcpudispatch_stats; vCPU 5 runs off its home node more and
more, vCPU 2 is dispatched further and further away.

An iostat-rs churn recording has, in each of FRAMES samples, two devices
present throughout and DEVICES devices never seen before (bench/churn.sh).

usage: make_recordings.py iostat DEVICES FRAMES OUT
       make_recordings.py vcpustat VCPUS FRAMES OUT
       make_recordings.py churn DEVICES FRAMES OUT
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


def iostat_header(nodename):
    """The header of an iostat-rs recording of `-x 1` on host `nodename`."""
    return {
        "format": "hwstat-recording",
        "version": 1,
        "tool": "iostat-rs",
        "args": ["-x", "1"],
        "uname": {"sysname": "Linux", "nodename": nodename, "release": "6.18.0",
                  "version": "#1", "machine": "x86_64"},
        "start_unix_ns": START * 10**9,
    }


def iostat(devices, frames, out):
    devs = names(devices)
    header = iostat_header("chart-demo")
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


def churn(devices, frames, out):
    header = iostat_header("churn")
    with open(out, "w") as f:
        f.write(json.dumps(header) + "\n")
        for t in range(frames):
            devs = ["sda", "sdb"] + [f"dm-{t * devices + j}" for j in range(devices)]
            entries = {
                "read /proc/diskstats": {"text": diskstats(devs, t + 1)},
                "list /sys/block": {"list": devs},
                "read /proc/stat": {"text": stat(t)},
                "read /proc/uptime": {"text": f"{5000 + t}.00 100.00\n"},
            }
            if t == 0:
                entries["list /sys/devices/system/cpu"] = {"list": ["cpu0"]}
            frame = {"index": t, "time_unix_ns": (START + t) * 10**9,
                     "elapsed_ns": t * 10**9, "entries": entries}
            f.write(json.dumps(frame) + "\n")


def vcpu_counts(cpu, t):
    """Cumulative counters of one vCPU after t seconds: total, core, chip,
    socket, cec, home, adj, far."""
    total, core, chip, socket, cec, home, adj, far = [0] * 8
    for s in range(t):
        n = 100 + 10 * (cpu % 4)
        off = min(n, (s * 6) if cpu == 5 else (s + cpu) % 5)
        wide = min(n // 2, s * 3) if cpu == 2 else cpu % 3
        total += n
        core += n - wide - 10
        chip += 10
        socket += wide - wide // 3
        cec += wide // 3
        home += n - off
        adj += off - off // 4
        far += off // 4
    return [total, core, chip, socket, cec, home, adj, far]


def vcpustat(vcpus, frames, out):
    header = {
        "format": "hwstat-recording",
        "version": 1,
        "tool": "vcpustat",
        "args": ["1"],
        "uname": {"sysname": "Linux", "nodename": "lpar-demo", "release": "6.18.0",
                  "version": "#1", "machine": "ppc64le"},
        "start_unix_ns": START * 10**9,
    }
    with open(out, "w") as f:
        f.write(json.dumps(header) + "\n")
        for t in range(frames):
            text = "".join(
                f"cpu{c} " + " ".join(map(str, vcpu_counts(c, t))) + "\n" for c in range(vcpus)
            )
            entries = {"read /proc/powerpc/vcpudispatch_stats": {"text": text}}
            if t == 0:
                entries["read /proc/powerpc/vcpudispatch_stats_freq"] = {"text": "50\n"}
            frame = {"index": t, "time_unix_ns": (START + t) * 10**9,
                     "elapsed_ns": t * 10**9, "entries": entries}
            f.write(json.dumps(frame) + "\n")


if __name__ == "__main__":
    tools = {"iostat": iostat, "vcpustat": vcpustat, "churn": churn}
    if len(sys.argv) != 5 or sys.argv[1] not in tools:
        sys.exit(__doc__)
    tools[sys.argv[1]](int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
