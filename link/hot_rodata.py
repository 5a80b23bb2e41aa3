#!/usr/bin/env python3
"""Writes link/hot-rodata.txt, the read-only data input sections a usual
run of iostat-rs reads, which build.rs puts at the start of `.rodata`
(link/sections.ld), and link/dependency-rodata.txt, the groups of
anonymous constants of the standard library and the dependencies, which it
puts at the end of the read-only segment. This crate's own anonymous
constants (its strings) then follow the hot sections, and the read parts
of all of them fit in the segment's first 64 kB.

Why: the kernel maps a program 64 kB at a time around each page a run
touches (fault-around). Where the compiler leaves them, the constants a
report reads (this crate's strings, a few tables of the standard library,
the jump tables of the hot functions) are spread through 190 kB of
`.rodata`, and every run kept two to four such windows of it resident
(BENCHMARKS.md, "Read-only data a run reads, first").

Usage (by link/profile.sh):
    hot_rodata.py MAP CRATE_GROUP DEPENDENCY_LIST TRACE... > HOT_LIST
MAP is LLD's link map (-Map) of the dist iostat-rs; CRATE_GROUP the hash
in the names of this crate's anonymous constants (`.Lanon.<hash>.<n>`,
read from its rlib); each TRACE a valgrind lackey log (--trace-mem=yes) of
one run. HOT_LIST (standard output) lists, in the order the runs first
read them, the named sections and the other crates' anonymous constants
they read; DEPENDENCY_LIST gets one pattern per other crate's group. LLVM
names each group by a hash of its crate's exported symbols: this crate's
changes as its functions do, so it is matched by what the dependency list
leaves; the others change with the toolchain or Cargo.lock, as the symbol
names of hot-functions.txt do.
"""

import bisect
import re
import sys

# Where valgrind loads a position-independent program on x86_64.
VALGRIND_LOAD_BASE = 0x108000

# Sections link/sections.ld already places (constant pools, this crate's
# jump tables, itoa's digit pairs, the merged format strings).
PLACED_BY_SCRIPT = re.compile(
    r"^\.rodata\.(cst\d+|\.Lswitch\.table\..*hwstat.*|_ZN4itoa.*|str\d+\.\d+)$"
)

# A map line of one input section: "VMA LMA Size Align file:(section)".
INPUT_SECTION = re.compile(r"^\s*([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+\d+\s+\S*:\((\S+)\)$")

# The name of an anonymous constant: `.rodata..Lanon.<group hash>.<n>`.
ANONYMOUS = re.compile(r"^\.rodata\.\.Lanon\.([0-9a-f]{32})\.\d+$")

# A lackey data access: " L addr,size", " S addr,size" or " M addr,size".
DATA_ACCESS = re.compile(r"^ [LSM] ([0-9a-f]+),")


def read_only_sections(map_path):
    """The `.rodata` input sections of the map: sorted (start, end, name)."""
    sections = []
    with open(map_path, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            match = INPUT_SECTION.match(line)
            if match and match.group(3).startswith(".rodata"):
                start, size = int(match.group(1), 16), int(match.group(2), 16)
                if size:
                    sections.append((start, start + size, match.group(3)))
    sections.sort()
    return sections


def sections_read(sections, trace_path):
    """The names of the sections the traced run read, in first-read order."""
    starts = [start for start, _, _ in sections]
    seen = {}
    with open(trace_path, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            match = DATA_ACCESS.match(line)
            if not match:
                continue
            address = int(match.group(1), 16) - VALGRIND_LOAD_BASE
            i = bisect.bisect_right(starts, address) - 1
            if i >= 0 and address < sections[i][1]:
                seen.setdefault(sections[i][2], len(seen))
    return sorted(seen, key=seen.get)


def main():
    if len(sys.argv) < 5:
        sys.exit("usage: hot_rodata.py MAP CRATE_GROUP DEPENDENCY_LIST TRACE...")
    map_path, group, dependency_list, traces = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    if not re.fullmatch(r"[0-9a-f]{32}", group):
        sys.exit(f"hot_rodata.py: {group!r} is not a 32-digit hash")
    sections = read_only_sections(map_path)
    ours = f".rodata..Lanon.{group}."
    listed, anywhere = [], set()
    for trace in traces:
        for name in sections_read(sections, trace):
            anywhere.add(name)
            if name not in listed and not name.startswith(ours):
                listed.append(name)
    # Every report reads constants of this crate's functions (the jump
    # tables of its column matches): if no run did, the trace is not of
    # this program loaded where valgrind usually loads it.
    if not any("6hwstat" in name for name in anywhere):
        sys.exit("hot_rodata.py: no run read this crate's constants; wrong map or load address")
    groups = sorted(
        {m.group(1) for _, _, name in sections if (m := ANONYMOUS.match(name))} - {group}
    )
    with open(dependency_list, "w", encoding="utf-8") as out:
        out.write("# Groups of anonymous constants of the standard library and the\n")
        out.write("# dependencies, placed at the end of the read-only segment by build.rs\n")
        out.write("# (link/sections.ld). Generated by link/profile.sh; do not edit.\n")
        for other in groups:
            out.write(f".rodata..Lanon.{other}.*\n")
    print("# Read-only data input sections the dist programs' usual runs read,")
    print("# placed first in .rodata by build.rs (link/sections.ld).")
    print("# Generated by link/profile.sh; do not edit.")
    for name in listed:
        if not PLACED_BY_SCRIPT.match(name):
            print(name)


if __name__ == "__main__":
    main()
