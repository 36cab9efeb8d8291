#!/usr/bin/env bash
# Instructions per row of Q1's compiled pipelines (each program the C tier compiled) and of
# the hand-fused loop in C, each built by GCC and by Clang where installed, under valgrind's callgrind, on 3M synthetic rows (built for x86-64-v3:
# valgrind does not run every AVX-512 instruction):
#   bash bench/probes/q1_instructions.sh      (from the project root, after cargo build --release)
set -uo pipefail
work=$(mktemp -d)
NACRE_C_CACHE_DIR="$work/cache" ./target/release/nacre bench query --scale 0.1 --quick \
    --filter query_nacre_q1 > /dev/null 2>&1
python3 - "$work" <<'P'
import os, sys
work = sys.argv[1]
for f in os.listdir(work + "/cache"):
    if not f.endswith(".so"):
        continue
    d = open(f"{work}/cache/{f}", "rb").read()
    src = d[d.find(b"#include"):d.find(b"\x7fELF")].split(b"\x00")[0].decode("latin1")
    end = src.index("\n}\n", src.index("uint64_t nacre_entry_array")) + 3
    open(f"{work}/pipeline_{f[:8]}.c", "w").write(src[:end])
P
cp bench/probes/q1_fused.c "$work/fused.c"
for cc in gcc clang; do
command -v "$cc" > /dev/null || continue
for c in "$work"/pipeline_*.c "$work/fused.c"; do
    "$cc" -O2 -march=x86-64-v3 -shared -fPIC -o "${c%.c}.so" "$c"
    gcc -O2 -DREPS=1 -o "$work/run" bench/probes/q1_pipeline_harness.c "${c%.c}.so" -Wl,-rpath,"$work"
    valgrind --tool=callgrind --callgrind-out-file="$work/cg" "$work/run" > /dev/null 2>&1 || { echo "$(basename "$c"): valgrind failed"; continue; }
    n=$(callgrind_annotate "$work/cg" 2>/dev/null | grep -E "compiled_closure|nacre_entry" | head -1 | awk '{gsub(",", "", $1); print $1 / 3000000}')
    echo "$cc $(basename "$c"): $n instructions per row"
done
done
rm -rf "$work"
