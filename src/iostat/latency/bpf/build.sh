#!/usr/bin/env bash
# Compiles block.bpf.c into block.bpf.o, the object iostat-rs embeds (or,
# with an argument, into that file: .ci/run compiles into a temporary file
# and compares). Needs clang (Debian: clang). Little-endian BPF: the
# targets iostat-rs is built for (x86_64, aarch64, ppc64le) are.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/block.bpf.o}
cd "$here"
clang -O2 -target bpfel -mcpu=v3 -fno-ident -c block.bpf.c -o "$out"
