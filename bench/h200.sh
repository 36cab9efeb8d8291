#!/usr/bin/env bash
# Everything the H200 figures in bench/results come from, in one run on the GPU machine, from
# the project root, with the executables of bench/carry-h200.sh in .carry/:
#
#   bash bench/h200.sh OUT [STEP ...]
#
# with STEP among tests, demo, probes, bench, query (all of them by default, in this order; a device
# call has a time limit, so the steps can run in separate calls),
# writes into OUT:
#   h200_tests.txt   the CUDA test executables (the corpus on the GPU, the disk cache, a kernel
#                    fault, the facade's devices, every operator against nacre_ir::semantics)
#   cuda_math_ulps.md the math functions' largest ulps from libm, accurate and fast math
#                    and compute-sanitizer's memcheck, racecheck, initcheck and synccheck over
#                    the corpus test
#   demo.txt         `nacre` without arguments: the demo, on the best device there (CUDA)
#   launch_floor.txt bench/probes/launch_floor.cu: a launch and wait without Nacre, eight ways
#   block_size.txt   bench/probes/block_size_specialisation.py: the block sum with blockDim
#                    read at run time, as a constant, and with __launch_bounds__ (CuPy)
#   h200.txt, h200.json, h200.err
#                    nacre bench gpu --backend cuda --peers
#   query_h200.txt, query_h200.json
#                    nacre-datafusion's tests (pipelines as CUDA kernels, compute-sanitizer's
#                    memcheck over them), then nacre bench query --partitions 16 --device cuda
#                    (TPC-H SF 1: DataFusion on the 16 cores alone, with CPU pipelines, with
#                    CUDA kernels)
# A step that fails is reported in its file and the next one runs.
set -uo pipefail
out=${1:?usage: bash bench/h200.sh OUT [tests] [demo] [probes] [bench]}
shift
steps=${*:-tests demo probes bench query}
wants() { case " $steps " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
mkdir -p "$out"
# bench/carry-h200.sh packs the executables with xz.
python3 - <<'PY'
import glob, lzma, os, shutil
for f in glob.glob(".carry/*.xz"):
    with lzma.open(f) as src, open(f[:-3], "wb") as dst:
        shutil.copyfileobj(src, dst)
    os.chmod(f[:-3], 0o755)
    os.remove(f)
PY
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
sanitizer=/usr/local/cuda/bin/compute-sanitizer

wants tests && {
    for t in corpus cuda_disk_cache cuda_fault devices device_semantics; do
        echo "== $t"
        case $t in
            corpus) .carry/corpus cuda_kernels:: 2>&1 ;;
            device_semantics)
                NACRE_ACCURACY_OUT="$out/cuda_math_ulps.md" .carry/device_semantics 2>&1 ;;
            *) ".carry/$t" 2>&1 ;;
        esac
    done
    for tool in memcheck racecheck initcheck synccheck; do
        echo "== compute-sanitizer --tool $tool .carry/corpus --test-threads=1 cuda_kernels::corpus_kernels_match"
        if [ -x "$sanitizer" ]; then
            "$sanitizer" --tool "$tool" .carry/corpus --test-threads=1 \
                cuda_kernels::corpus_kernels_match 2>&1 |
                grep -E "SANITIZER|SUMMARY|test result|corpus on"
        else
            echo "no $sanitizer"
        fi
    done
} > "$out/h200_tests.txt" 2>&1

wants demo && {
    echo "== .carry/nacre"
    .carry/nacre
    echo "exit status: $?"
} > "$out/demo.txt" 2>&1

wants probes && {
    echo "== nvcc -O2 bench/probes/launch_floor.cu -lcuda"
    if nvcc -O2 -o "$out/launch_floor" bench/probes/launch_floor.cu \
        -L/usr/local/cuda/lib64/stubs -lcuda; then
        "$out/launch_floor"
        "$out/launch_floor" spin
    fi
    rm -f "$out/launch_floor"
} > "$out/launch_floor.txt" 2>&1

wants probes && {
    echo "== python3 bench/probes/block_size_specialisation.py"
    python3 bench/probes/block_size_specialisation.py
} > "$out/block_size.txt" 2>&1

if wants bench; then
    echo "== .carry/nacre bench gpu --backend cuda --peers --json bench/results/h200.json" \
        > "$out/h200.err"
    .carry/nacre bench gpu --backend cuda --peers --json "$out/h200.json" \
        > "$out/h200.txt" 2>> "$out/h200.err"
    echo "bench exit status: $?" >> "$out/h200.err"
fi
if wants query; then
    {
        echo "== .carry/queries (nacre-datafusion's tests)"
        .carry/queries --test-threads=2 2>&1 | grep -E "^test |test result"
        echo "== compute-sanitizer --tool memcheck .carry/queries cuda_runs_where_usable"
        "$sanitizer" --tool memcheck .carry/queries cuda_runs_where_usable 2>&1 |
            grep -E "SANITIZER|SUMMARY|test result"
        echo "== .carry/nacre bench query --scale 1 --partitions 16 --device cuda"
        .carry/nacre bench query --scale 1 --partitions 16 --device cuda \
            --json "$out/query_h200.json" 2>&1
        echo "query exit status: $?"
    } > "$out/query_h200.txt" 2>&1
fi

wants tests && grep -E "^== |test result|SUMMARY|FAILED|panicked" "$out/h200_tests.txt"
wants demo && cat "$out/demo.txt"
wants probes && cat "$out/launch_floor.txt" "$out/block_size.txt"
wants bench && grep -E "PASS|MISS" "$out/h200.txt"
wants query && grep -E "test result|SUMMARY|faster than|exit status" "$out/query_h200.txt"
exit 0

