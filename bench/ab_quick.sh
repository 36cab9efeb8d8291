#!/usr/bin/env bash
# Runs `nacre bench cpu --quick` and `nacre bench gpu --backend cpu --quick` of two builds back
# to back, three rounds alternating, into bench/results/architecture (the "before" build in
# /tmp/nacre-before, the "after" one in .carry/nacre), for bench/compare.py.
set -u
cd "$(dirname "$0")/.."
out=bench/results/architecture
mkdir -p $out
for r in 1 2 3; do
  for side in before after; do
    bin=/tmp/nacre-before; [ $side = after ] && bin=.carry/nacre
    $bin bench cpu --quick --json $out/cpu_quick_${side}_$r.json > $out/cpu_quick_${side}_$r.txt 2>&1
    $bin bench gpu --backend cpu --quick --json $out/gpu_cpu_quick_${side}_$r.json > $out/gpu_cpu_quick_${side}_$r.txt 2>&1
  done
done
echo bench-done
