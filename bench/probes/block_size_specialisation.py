#!/usr/bin/env python3
"""What a kernel gains when its block size is a compile-time constant: the suite's block sum
(bench/peers/cuda/blocksum.cu, 16M floats, blocks of 256) timed with CuPy RawKernel in three
variants of the same CUDA C:

- ``dynamic``: as written, ``blockDim.x`` read at run time (the loop bound is unknown);
- ``constant``: ``blockDim.x`` replaced by 256, so the compiler unrolls the tree;
- ``bounds``: ``constant`` plus ``__launch_bounds__(256)``.

Run on the GPU machine: ``python3 bench/probes/block_size_specialisation.py``. Prints the
median of 500 launches timed with CUDA events for each, after checking the sums.
"""

import statistics
from pathlib import Path

import cupy
import numpy as np

N = 1 << 24
BLOCK = 256
SOURCE = (Path(__file__).parent.parent / "peers" / "cuda" / "blocksum.cu").read_text()


def variants():
    constant = SOURCE.replace("blockDim.x", str(BLOCK))
    bounds = constant.replace("__global__ void", f"__global__ void __launch_bounds__({BLOCK})")
    return {"dynamic": SOURCE, "constant": constant, "bounds": bounds}


def main():
    rng = np.random.default_rng(7)
    host = rng.random(N, dtype=np.float32)
    x = cupy.asarray(host)
    blocks = N // BLOCK
    out = cupy.zeros(blocks, dtype=cupy.float32)
    want = host.reshape(-1, BLOCK).astype(np.float64).sum(axis=1)
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    for name, src in variants().items():
        kernel = cupy.RawKernel(src, "blocksum", options=("-std=c++17",))
        args = (x, out, np.uint32(N))
        kernel((blocks,), (BLOCK,), args)
        got = cupy.asnumpy(out).astype(np.float64)
        assert np.allclose(got, want, rtol=1e-4), name
        times = []
        for k in range(550):
            start.record()
            kernel((blocks,), (BLOCK,), args)
            end.record()
            end.synchronize()
            if k >= 50:
                times.append(cupy.cuda.get_elapsed_time(start, end) * 1000.0)
        print(f"blocksum {name:8} median {statistics.median(times):8.2f} us  "
              f"p10 {sorted(times)[len(times) // 10]:8.2f} us")


if __name__ == "__main__":
    main()
