#!/usr/bin/env python3
"""The CPU peers of `nacre bench gpu --backend cpu --peers`: the suite's kernels written in
OpenCL C (``opencl/kernels.cl`` beside this script, the same algorithms as the corpus's
kernels) run by PoCL on the same machine, with the same work-group and global sizes as
Nacre's CPU launches, timed by the host clock around enqueue + finish (medians), every
result checked against NumPy first.

    python3 cpu_peers.py --json OUT [--quick] [--filter a,b] [--device-type cpu]

Needs NumPy, PyOpenCL and an OpenCL platform with a CPU device (PoCL: Debian's
``pocl-opencl-icd``; ``bench/setup-pocl.sh`` installs both). Without them the script writes
a document with no results and a note saying what is missing, and exits 0.

Names: ``peer_pocl_<suffix>`` with the suffixes of the suite's ``gpu_cpu_*`` rows. Output:
``{"unit": "ns", "results": {..}, "stats": {..}, "checks": {..}, "failed_checks": [..],
"notes": [..], "machine": {..}}`` (the format of ``gpu_peers.py``).
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BLOCK = 256
#: Elements per work-item of the grid-stride launches (``launch_blocks`` in the suite).
ITERATIONS = 16


def launch_blocks(n):
    return max(1, -(-n // (BLOCK * ITERATIONS)))


class Run:
    def __init__(self, args):
        self.args = args
        self.results, self.stats, self.checks = {}, {}, {}
        self.failed, self.notes = [], []

    def wants(self, name):
        return selects(self.args.filter, name)

    def time(self, name, launch, finish):
        quick = self.args.quick
        for _ in range(1 if quick else 3):
            launch()
        finish()
        budget, samples = (0.2 if quick else 1.0), []
        start = time.perf_counter()
        while len(samples) < 5 or (time.perf_counter() - start < budget and len(samples) < 200):
            t0 = time.perf_counter_ns()
            launch()
            finish()
            samples.append(time.perf_counter_ns() - t0)
        med = statistics.median(samples)
        mad = statistics.median(abs(s - med) for s in samples)
        self.results[name] = med
        self.stats[name] = {"median": med, "mad": mad, "min": min(samples), "runs": len(samples)}
        print(f"  {name:<40} {med / 1e6:9.3f} ms  ({len(samples)} runs)", file=sys.stderr)

    def check(self, name, ok, detail=""):
        self.checks[name] = {"ok": bool(ok), "detail": detail}
        if not ok:
            self.failed.append(name)
            print(f"  {name}: result check failed, not timed: {detail}", file=sys.stderr)
        return ok


def selects(filters, name):
    """`nacre bench --filter`'s rule: a filter selects the names that contain it, one ending in
    `$` those that end with the rest; no filter selects everything."""
    return not filters or any(name.endswith(f[:-1]) if f.endswith("$") else f in name
                              for f in filters)


def close(np, got, want, tol):
    err = np.max(np.abs(got.astype(np.float64) - want) / (1.0 + np.abs(want))) if want.size else 0.0
    return bool(err <= tol), f"largest relative error {err:.3g} (tolerance {tol:g})"


def benchmarks(np, quick):
    """(suffix, kernel, global size, local size, setup) for each benchmark; setup(rng) gives
    (arguments, output array or None, a reference of the output, tolerance)."""
    f32 = np.float32
    sizes = [1 << 20, 1 << 22, 1 << 24]
    out = []

    def rand(rng, n, lo=-1.0, hi=1.0):
        return rng.uniform(lo, hi, n).astype(f32)

    for n in sizes:
        g = launch_blocks(n) * BLOCK

        def saxpy(rng, n=n):
            x, y = rand(rng, n), rand(rng, n)
            return [f32(0.5), x, y, np.uint32(n)], 2, 0.5 * x.astype(np.float64) + y, 1e-6
        out.append((f"saxpy_{n}", "saxpy", (g,), (BLOCK,), saxpy))
    for n in sizes:
        g = launch_blocks(n) * BLOCK

        def vecadd(rng, n=n):
            a, b = rand(rng, n), rand(rng, n)
            return [a, b, np.zeros(n, f32), np.uint32(n)], 2, a.astype(np.float64) + b, 1e-6
        out.append((f"vecadd_{n}", "vecadd", (g,), (BLOCK,), vecadd))
    n = 1 << 24

    def blocksum(rng, n=n):
        x = rand(rng, n)
        want = x.astype(np.float64).reshape(-1, BLOCK).sum(axis=1)
        return [x, np.zeros(n // BLOCK, f32), np.uint32(n)], 1, want, 1e-4
    out.append((f"blocksum_{n}", "blocksum", (n,), (BLOCK,), blocksum))

    def blocksum_warp(rng, n=n):
        # The timed calls add to the same total, as Nacre's; the first call is checked, within
        # 1e-5 of the sum of magnitudes (the Rust side's tolerance).
        x = rand(rng, n)
        want = x.astype(np.float64).sum()
        tol = 1e-5 * np.abs(x.astype(np.float64)).sum() / (1.0 + abs(want))
        return [x, np.zeros(1, f32), np.uint32(n)], 1, np.array([want]), tol
    out.append((f"blocksum_warp_{n}", "blocksum_atomic", (launch_blocks(n) * BLOCK,), (BLOCK,),
                blocksum_warp))
    for iters in (256, 1024):
        n = 1 << 18

        def logistic(rng, n=n, iters=iters):
            v = rng.uniform(0.1, 0.9, n).astype(f32)
            want = v.copy()
            for _ in range(iters):
                want = f32(3.9) * want * (f32(1.0) - want)
            return [v, np.uint32(n), np.uint32(iters)], 0, want.astype(np.float64), 0.0
        out.append((f"logistic_{n}_{iters}", "logistic", (launch_blocks(n) * BLOCK,), (BLOCK,), logistic))
    rows = cols = 4096

    def softmax(rng):
        x = rand(rng, rows * cols, -3.0, 3.0)
        m = x.reshape(rows, cols).astype(np.float64)
        e = np.exp(m - m.max(axis=1, keepdims=True))
        return [x, np.zeros(rows * cols, f32), np.uint32(cols)], 1, (e / e.sum(axis=1, keepdims=True)).ravel(), 1e-5
    out.append((f"softmax_{rows}x{cols}", "softmax", (rows * BLOCK,), (BLOCK,), softmax))
    n = 1 << 24

    def gelu(rng, n=n):
        x = rand(rng, n, -6.0, 6.0)
        v = x.astype(np.float64)
        want = v * 0.5 * (np.tanh((v + v ** 3 * 0.044715) * 0.7978845608028654) + 1.0)
        return [x, np.zeros(n, f32), np.uint32(n)], 1, want, 1e-5
    out.append((f"gelu_{n}", "gelu", (launch_blocks(n) * BLOCK,), (BLOCK,), gelu))

    def tile_case(kernel, w, h, ref):
        def setup(rng):
            x = rand(rng, w * h)
            return [x, np.zeros(w * h, f32), np.uint32(w), np.uint32(h)], 1, ref(x.reshape(h, w)).ravel(), 1e-5
        return setup

    def stencil_ref(img):
        p = np.pad(img.astype(np.float64), 1, mode="edge")
        c = p[1:-1, 1:-1]
        return c * 0.5 + (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:]) * 0.125

    def blur_ref(img):
        p = np.pad(img.astype(np.float64), 1, mode="edge")
        h, w = img.shape
        return sum(p[dy:dy + h, dx:dx + w] for dy in range(3) for dx in range(3)) / 9.0

    side = 4096
    out.append((f"stencil2d_{side}", "stencil2d", (side, side), (16, 16), tile_case("stencil2d", side, side, stencil_ref)))
    w, h = 2000, 1500
    out.append((f"blur3_{w}x{h}", "blur3", (-(-w // 16) * 16, -(-h // 16) * 16), (16, 16), tile_case("blur3", w, h, blur_ref)))
    n = 1024

    def matmul(rng, n=n):
        x = rand(rng, n * n)
        m = x.reshape(n, n).astype(np.float64)
        return [x, x, np.zeros(n * n, f32), np.uint32(n)], 2, (m @ m).ravel(), 1e-4
    out.append((f"matmul_{n}", "matmul", (n, n), (16, 16), matmul))
    n = 1 << 24

    def saxpy1(rng, n=n):
        x, y = rand(rng, n), rand(rng, n)
        return [f32(1.5), x, y, np.uint32(n)], 2, 1.5 * x.astype(np.float64) + y, 1e-6
    out.append((f"saxpy1_{n}", "saxpy1", (n,), (BLOCK,), saxpy1))

    def saxpy_f16(rng, n=n):
        x = rng.uniform(-8, 8, n).astype(np.float16)
        y = rng.uniform(-8, 8, n).astype(np.float16)
        want = (f32(-1.25) * x.astype(f32) + y.astype(f32)).astype(np.float16)
        return [f32(-1.25), x, y, np.uint32(n)], 2, want.astype(np.float64), 0.0
    out.append((f"saxpy_f16_{n}", "saxpy_f16", (launch_blocks(n) * BLOCK,), (BLOCK,), saxpy_f16))

    def histogram(rng, n=n):
        data = rng.integers(0, 256, n, dtype=np.uint32)
        want = np.bincount(data, minlength=256).astype(np.float64)
        return [data, np.zeros(256, np.uint32), np.uint32(n)], 1, want, 0.0
    out.append((f"histogram256_{n}", "histogram256", (launch_blocks(n) * 128,), (128,), histogram))
    return out


def run_all(run, np, cl):
    platforms = [(p, d) for p in cl.get_platforms() for d in p.get_devices()
                 if d.type & cl.device_type.CPU]
    if not platforms:
        run.notes.append("no OpenCL CPU device (install pocl-opencl-icd): no PoCL figures")
        return {}
    plat, dev = platforms[0]
    ctx = cl.Context([dev])
    queue = cl.CommandQueue(ctx)
    src = open(os.path.join(HERE, "opencl", "kernels.cl")).read()
    started = time.perf_counter()
    prog = cl.Program(ctx, src).build()
    print(f"PoCL: built the kernels in {time.perf_counter() - started:.2f} s on {dev.name}", file=sys.stderr)
    rng = np.random.default_rng(20261205)
    mf = cl.mem_flags
    for suffix, kernel, gsize, lsize, setup in benchmarks(np, run.args.quick):
        name = f"peer_pocl_{suffix}"
        if not run.wants(name):
            continue
        args, out_index, want, tol = setup(rng)
        host = [a for a in args]
        bufs = [cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=a) if isinstance(a, np.ndarray) else a
                for a in host]
        k = cl.Kernel(prog, kernel)
        k.set_args(*bufs)

        def launch(k=k, gsize=gsize, lsize=lsize):
            cl.enqueue_nd_range_kernel(queue, k, gsize, lsize)

        launch()
        queue.finish()
        got = np.empty_like(host[out_index])
        cl.enqueue_copy(queue, got, bufs[out_index])
        queue.finish()
        ok, detail = close(np, got.astype(np.float64) if got.dtype != np.float64 else got, want, tol)
        if run.check(name, ok, detail):
            run.time(name, launch, queue.finish)
    return {"platform": plat.name, "platform_version": plat.version, "device": dev.name,
            "device_version": dev.version, "compute_units": dev.max_compute_units}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", required=True)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--filter", type=lambda s: [f for f in s.split(",") if f], default=[])
    args = p.parse_args(argv)
    run = Run(args)
    machine = {"python": platform.python_version()}
    try:
        import numpy as np
        import pyopencl as cl
    except ImportError as e:
        run.notes.append(f"PoCL peers skipped: {e} (bench/setup-pocl.sh installs PoCL and PyOpenCL)")
    else:
        machine.update(run_all(run, np, cl))
    doc = {"unit": "ns", "results": run.results, "host_results": {}, "stats": run.stats,
           "checks": run.checks, "failed_checks": run.failed, "notes": run.notes,
           "machine": machine}
    with open(args.json, "w") as f:
        json.dump(doc, f, indent=1)
    for note in run.notes:
        print(f"note: {note}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
