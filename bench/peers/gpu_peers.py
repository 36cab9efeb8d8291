#!/usr/bin/env python3
"""The peers of `nacre bench gpu --backend cuda`: the suite's kernels timed with PyTorch
eager, CuPy RawKernel and Triton on the same machine, as JSON for `--peers` to merge.

Frameworks (each is skipped with a note when it cannot be imported or has no GPU):

- ``cupy``: CuPy RawKernel running the CUDA C that Nacre generated (``--source-dir``: one
  ``<kernel>.cu`` per kernel, written by ``nacre bench gpu --backend cuda --peers``), with the
  same grid and block as Nacre's launches: the same kernel code, another runtime;
- ``cudac``: CuPy RawKernel running the hand-written CUDA C of ``cuda/<kernel>.cu`` beside this
  script (the same algorithms written by hand, same grids);
- ``torch``: PyTorch eager: ``y.add_(x, alpha=a)``, ``torch.add(a, b, out=c)``,
  ``torch.sum(x.view(-1, 256), 1, out=s)``, the logistic map as a loop of three eager ops per
  step, ``c.add_(1)`` for the launch latency; ``torch.softmax``, ``gelu`` and, on float16
  tensors, ``y.add_(x, alpha=a)`` for the kernel-language suite; ``torch.bincount(x,
  minlength=256)`` for the atomics suite; ``torch.sum(x)`` and ``x[x > 0]`` for the warp
  suite;
- ``triton``: the Triton kernels of ``triton_kernels.py``.

Names: ``peer_<fw>_<kernel>_<N>[_<ITERS>]`` (kernel one of saxpy, vecadd, blocksum, logistic),
``peer_<fw>_launch_latency``, ``peer_<fw>_launch100_latency`` (100 dependent launches of the
tiny kernel, then one synchronize), ``peer_torch_graph_launch100_latency`` (the same 100
``add_`` launches captured once as a CUDA graph with ``torch.cuda.graph`` and replayed),
``peer_<fw>_compile_<kernel>`` (cupy, cudac, triton).

Timing: kernels with CUDA events around each launch (median of ``--runs`` >= 50 runs after
``--warmup`` launches), and also with the host clock around launch + synchronize (the
``host_results`` object, comparable with Nacre's host-timed calls); the launch latency with the
host clock around launch + synchronize of a one-thread kernel; cold compiles with the host
clock around compile + module load (CuPy: a fresh CUPY_CACHE_DIR and a source made unique per
sample; Triton: a fresh TRITON_CACHE_DIR and JIT function per sample, compile + load + first
launch). Inputs are random; every output is checked against NumPy (float64 for saxpy, vecadd
and block sums, float32 in the kernel's operation order for the chaotic logistic map) before
timing, and a failed check is printed and reported under ``checks``, never timed.

Output JSON: ``{"unit": "ns", "results": {...}, "host_results": {...}, "stats": {...},
"checks": {...}, "notes": [...], "machine": {...}, "config": {...}}``.
"""

import argparse
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
import traceback
from pathlib import Path

try:
    import numpy as np
except ImportError:  # --dry-run works without NumPy; a real run says it is needed.
    np = None

#: The kernels of the suite, by the name used in file names and results.
KERNELS = ("saxpy", "vecadd", "blocksum", "logistic", "tiny")
#: Every framework the script can time.
FRAMEWORKS = ("torch", "cupy", "cudac", "triton")
#: Sizes (floats) of saxpy and vecadd.
DEFAULT_SIZES = (1 << 20, 1 << 22, 1 << 24)
#: Sizes (floats) of the block sum.
DEFAULT_BLOCKSUM_SIZES = (1 << 24,)
#: (floats, steps) of the logistic map.
DEFAULT_LOGISTIC = ((1 << 18, 256), (1 << 18, 1024), (1 << 24, 1024))
#: Threads per block of every launch (and elements per block sum).
BLOCK = 256
#: alpha of saxpy.
ALPHA = 0.5
#: Runs timed per benchmark, and warm-up launches before them.
FULL_RUNS, FULL_WARMUP = 200, 20
QUICK_RUNS, QUICK_WARMUP = 50, 5
#: The fewest timed runs a benchmark may have.
MIN_RUNS = 50
#: Launches timed for the launch latency.
FULL_LATENCY_RUNS, QUICK_LATENCY_RUNS = 2000, 200
#: Dependent launches of the tiny kernel per sample of the launch-chain latency
#: (``peer_<fw>_launch100_latency``, ``peer_torch_graph_launch100_latency``).
LAUNCH_CHAIN = 100
#: Cold-compile samples (CuPy, Triton).
FULL_COMPILE_SAMPLES = {"cupy": 5, "cudac": 5, "triton": 3}
QUICK_COMPILE_SAMPLES = {"cupy": 2, "cudac": 2, "triton": 1}
#: Check tolerances: relative to the magnitudes that enter the result.
ELEMENTWISE_TOLERANCE = 1e-6
BLOCKSUM_TOLERANCE = 1e-5
LOGISTIC_TOLERANCE = 1e-6
#: Elements of the logistic map checked (spread over the array) against the float32 reference.
LOGISTIC_CHECKED = 4096
#: Grid-stride launches use this many elements per thread by default (see default_blocks).
DEFAULT_ELEMENTS_PER_THREAD = 4
#: Blocks tried by --grid-sweep.
SWEEP_BLOCKS = (132, 264, 528, 1056, 2112, 4224, 8448, 16384, 32768, 65536)

HERE = Path(__file__).resolve().parent


class PeerError(Exception):
    """A problem with the arguments or the kernel sources, said plainly."""


# ---- arguments ---------------------------------------------------------------------------


def default_blocks(n):
    """Blocks of 256 for a grid-stride launch over n elements when --blocks does not say:
    DEFAULT_ELEMENTS_PER_THREAD elements per thread (the grid `nacre bench gpu --backend
    cuda` uses, which passes its grids explicitly anyway)."""
    per_block = BLOCK * DEFAULT_ELEMENTS_PER_THREAD
    return max(1, min(-(-n // per_block), 2**31 - 1))


def parse_int_list(text, what):
    """'1048576,4194304' -> [1048576, 4194304]; sizes must be positive."""
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise PeerError(f"{what}: expected comma-separated integers, got {text!r}") from None
    if not values or any(v <= 0 for v in values):
        raise PeerError(f"{what}: expected positive integers, got {text!r}")
    if any(v >= 2**32 for v in values):
        raise PeerError(f"{what}: sizes must fit in 32 bits (the kernels index with u32)")
    return values


def parse_logistic(text):
    """'262144x256,16777216x1024' -> [(262144, 256), (16777216, 1024)]."""
    out = []
    for item in (i.strip() for i in text.split(",") if i.strip()):
        m = re.fullmatch(r"(\d+)x(\d+)", item)
        if not m or int(m.group(1)) == 0 or int(m.group(2)) == 0:
            raise PeerError(f"--logistic: expected FLOATSxSTEPS items like 262144x256, got {item!r}")
        n, iters = int(m.group(1)), int(m.group(2))
        if n >= 2**32 or iters >= 2**32:
            raise PeerError(f"--logistic: {item!r} does not fit in 32 bits")
        out.append((n, iters))
    if not out:
        raise PeerError("--logistic: no FLOATSxSTEPS item given")
    return out


def parse_blocks(text):
    """'1048576=1024,16777216=16384' -> {1048576: 1024, 16777216: 16384}."""
    out = {}
    for item in (i.strip() for i in text.split(",") if i.strip()):
        m = re.fullmatch(r"(\d+)=(\d+)", item)
        if not m or int(m.group(2)) == 0 or int(m.group(2)) >= 2**31:
            raise PeerError(f"--blocks: expected FLOATS=BLOCKS items like 1048576=1024, got {item!r}")
        out[int(m.group(1))] = int(m.group(2))
    return out


def parse_frameworks(text):
    """'torch,cupy' -> ['torch', 'cupy'], each known."""
    names = [f.strip() for f in text.split(",") if f.strip()]
    unknown = [f for f in names if f not in FRAMEWORKS]
    if unknown or not names:
        raise PeerError(f"--frameworks: expected some of {', '.join(FRAMEWORKS)}, got {text!r}")
    return names


def build_parser():
    p = argparse.ArgumentParser(
        description="Times the GPU suite's kernels with PyTorch eager, CuPy RawKernel (Nacre's "
        "generated CUDA and hand-written CUDA) and Triton, and writes the figures as JSON.",
    )
    p.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)),
                   help="floats of saxpy and vecadd, comma-separated (default: 1M,4M,16M)")
    p.add_argument("--blocksum-sizes", default=",".join(map(str, DEFAULT_BLOCKSUM_SIZES)),
                   help="floats of the block sum (default: 16M)")
    p.add_argument("--logistic", default=",".join(f"{n}x{i}" for n, i in DEFAULT_LOGISTIC),
                   help="FLOATSxSTEPS of the logistic map (default: 262144x256,262144x1024,16777216x1024)")
    p.add_argument("--blocks", default="",
                   help="blocks of 256 of the grid-stride launches (saxpy, vecadd, logistic) per size, "
                   "FLOATS=BLOCKS,... as Nacre launches them (default: FLOATS / 1024)")
    p.add_argument("--source-dir", type=Path,
                   help="folder of Nacre's generated CUDA, one <kernel>.cu per kernel (and "
                   "kernels.json: symbols and NVRTC options); without it the cupy entries are skipped")
    p.add_argument("--frameworks", default=",".join(FRAMEWORKS),
                   help="which peers to run (default: torch,cupy,cudac,triton)")
    p.add_argument("--filter", default="",
                   help="run only benchmarks whose name contains one of these comma-separated strings")
    p.add_argument("--runs", type=int, help=f"timed runs per benchmark (default {FULL_RUNS}; "
                   f"--quick {QUICK_RUNS}; at least {MIN_RUNS})")
    p.add_argument("--warmup", type=int, help=f"launches before timing (default {FULL_WARMUP})")
    p.add_argument("--quick", action="store_true",
                   help="fewer runs and compile samples: a rough run")
    p.add_argument("--grid-sweep", action="store_true",
                   help="also time the hand-written grid-stride kernels (cudac) over a range of grids "
                   "(the 'sweep' object of the JSON)")
    p.add_argument("--json", type=Path, help="write the results to this file")
    p.add_argument("--dry-run", action="store_true",
                   help="check the arguments and load the sources, print the plan, import no GPU framework")
    p.add_argument("--seed", type=int, default=1234, help="seed of the random inputs")
    return p


class Config:
    """The parsed, checked arguments."""

    def __init__(self, args):
        self.sizes = parse_int_list(args.sizes, "--sizes")
        self.blocksum_sizes = parse_int_list(args.blocksum_sizes, "--blocksum-sizes")
        self.logistic = parse_logistic(args.logistic)
        self.blocks = parse_blocks(args.blocks)
        self.frameworks = parse_frameworks(args.frameworks)
        self.filter = [f.strip() for f in args.filter.split(",") if f.strip()]
        self.quick = args.quick
        self.runs = args.runs if args.runs is not None else (QUICK_RUNS if args.quick else FULL_RUNS)
        if self.runs < MIN_RUNS:
            raise PeerError(f"--runs: at least {MIN_RUNS} runs are timed (the median of fewer is noise)")
        self.warmup = args.warmup if args.warmup is not None else (QUICK_WARMUP if args.quick else FULL_WARMUP)
        if self.warmup < 1:
            raise PeerError("--warmup: at least one launch runs before timing")
        self.latency_runs = QUICK_LATENCY_RUNS if args.quick else FULL_LATENCY_RUNS
        self.compile_samples = QUICK_COMPILE_SAMPLES if args.quick else FULL_COMPILE_SAMPLES
        self.source_dir = args.source_dir
        self.grid_sweep = args.grid_sweep
        self.seed = args.seed
        self.json = args.json
        self.dry_run = args.dry_run

    def blocks_for(self, n):
        return self.blocks.get(n, default_blocks(n))

    def wants(self, name):
        return not self.filter or any(name.endswith(f[:-1]) if f.endswith("$") else f in name
                                      for f in self.filter)

    def as_json(self):
        return {
            "sizes": self.sizes,
            "blocksum_sizes": self.blocksum_sizes,
            "logistic": [[n, i] for n, i in self.logistic],
            "grid_stride_blocks": {str(n): self.blocks_for(n)
                                   for n in sorted(set(self.sizes) | {n for n, _ in self.logistic})},
            "block_threads": BLOCK,
            "frameworks": self.frameworks,
            "runs": self.runs,
            "warmup": self.warmup,
            "latency_runs": self.latency_runs,
            "compile_samples": self.compile_samples,
            "quick": self.quick,
            "seed": self.seed,
            "source_dir": str(self.source_dir) if self.source_dir else None,
        }


# ---- kernel sources ------------------------------------------------------------------------

GLOBAL_RE = re.compile(
    r'extern\s+"C"\s+__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s+)?void\s+'
    r"(?:__launch_bounds__\s*\([^)]*\)\s+)?([A-Za-z_]\w*)\s*\(([^)]*)\)"
)

#: The parameters of each kernel, in order, as the corpus's kernels declare them.
KERNEL_PARAMS = {
    "saxpy": ("alpha", "x", "y", "n"),
    "vecadd": ("a", "b", "c", "n"),
    "blocksum": ("input", "out", "n"),
    "logistic": ("v", "n", "iters"),
    "tiny": ("counter",),
    "stencil2d": ("input", "out", "w", "h"),
}

STATUS_TYPE_RE = re.compile(r"^(?:const\s+)?(?:uint32_t|unsigned\s+int|unsigned)\s*\*")


class Source:
    """One kernel's CUDA C: the text, its extern "C" symbol, where it came from, and the NVRTC
    options to compile it with (the architecture is left to CuPy)."""

    def __init__(self, kernel, text, symbol, path, options=(), status=False):
        self.kernel = kernel
        self.text = text
        self.symbol = symbol
        self.path = path
        self.options = tuple(options)
        #: Whether the kernel takes a trailing `uint32_t *status` (Nacre's calling convention:
        #: the word is zeroed before a launch and nonzero after it on a trap).
        self.status = status

    def unique(self, nonce):
        """The source with a comment that makes it unique (defeats every compile cache)."""
        return f"{self.text}\n// nacre-peers cold compile {nonce}\n"


def find_kernel(text, path, wanted=None):
    """The extern "C" __global__ function of a source, as (symbol, parameter list): `wanted`
    if given (it must be there), else the only one."""
    found = GLOBAL_RE.findall(text)
    symbols = [name for name, _ in found]
    if wanted is not None:
        if wanted not in symbols:
            raise PeerError(f"{path}: no extern \"C\" __global__ function named {wanted!r} "
                            f"(found: {', '.join(symbols) or 'none'})")
        return found[symbols.index(wanted)]
    if len(found) != 1:
        raise PeerError(f"{path}: expected exactly one extern \"C\" __global__ function, found "
                        f"{len(found)} ({', '.join(symbols) or 'none'}); name it in kernels.json")
    return found[0]


def takes_status(kernel, params, path):
    """Whether a kernel's parameter list (C text) ends with Nacre's status word: it must have
    the kernel's parameters, plus at most a trailing `uint32_t *`."""
    params = [p.strip() for p in params.split(",") if p.strip()]
    want = len(KERNEL_PARAMS[kernel])
    if len(params) == want:
        return False
    if len(params) == want + 1 and STATUS_TYPE_RE.match(params[-1]):
        return True
    raise PeerError(f"{path}: the {kernel} kernel should take {want} parameters "
                    f"({', '.join(KERNEL_PARAMS[kernel])}) and optionally a trailing uint32_t *status; "
                    f"it takes {len(params)}: {', '.join(params)}")


ARCH_OPTION_RE = re.compile(r"^(-arch|--gpu-architecture|-arch=.*|--gpu-architecture=.*)$")


def nvrtc_options(options):
    """NVRTC options for CuPy: those of the manifest without the target architecture, which
    CuPy adds itself for the current device (and an option given twice is an error)."""
    out, skip_next = [], False
    for opt in options:
        if skip_next:
            skip_next = False
            continue
        if ARCH_OPTION_RE.match(opt):
            skip_next = "=" not in opt
            continue
        out.append(opt)
    return tuple(out)


def load_sources(folder, kernels=KERNELS, required=True):
    """Reads `<kernel>.cu` for each kernel from `folder`, with the symbol and the NVRTC options
    from `kernels.json` when present (`{"nvrtc_options": [..], "kernels": {"saxpy":
    {"file": "saxpy.cu", "symbol": "..."}}}`), else the one extern "C" __global__ of each file.
    Missing files are an error when `required`, else left out."""
    folder = Path(folder)
    if not folder.is_dir():
        raise PeerError(f"{folder}: not a folder of kernel sources")
    manifest = {}
    manifest_path = folder / "kernels.json"
    if manifest_path.exists():
        try:
            manifest = json.loads(manifest_path.read_text())
        except (OSError, ValueError) as e:
            raise PeerError(f"{manifest_path}: cannot read it as JSON: {e}") from None
        if not isinstance(manifest, dict):
            raise PeerError(f"{manifest_path}: expected a JSON object")
    options = nvrtc_options(manifest.get("nvrtc_options", []))
    entries = manifest.get("kernels", {})
    sources = {}
    for kernel in kernels:
        entry = entries.get(kernel, {})
        path = folder / entry.get("file", f"{kernel}.cu")
        if not path.exists():
            if required:
                raise PeerError(f"{path}: missing (the source of the {kernel} kernel)")
            continue
        try:
            text = path.read_text()
        except OSError as e:
            raise PeerError(f"{path}: cannot read it: {e}") from None
        symbol, params = find_kernel(text, path, entry.get("symbol"))
        status = takes_status(kernel, params, path)
        sources[kernel] = Source(kernel, text, symbol, path, options, status)
    return sources


# ---- benchmarks ----------------------------------------------------------------------------


class Bench:
    """One kernel benchmark: its kernel, size, steps and result-name suffix."""

    def __init__(self, kernel, n, iters=None):
        self.kernel = kernel
        self.n = n
        self.iters = iters
        self.suffix = f"{kernel}_{n}" + (f"_{iters}" if iters is not None else "")

    def name(self, fw):
        return f"peer_{fw}_{self.suffix}"


def plan(cfg):
    """The kernel benchmarks, in the order of Nacre's suite."""
    benches = [Bench("saxpy", n) for n in cfg.sizes]
    benches += [Bench("vecadd", n) for n in cfg.sizes]
    benches += [Bench("blocksum", n) for n in cfg.blocksum_sizes]
    benches += [Bench("logistic", n, i) for n, i in cfg.logistic]
    return benches


def planned_names(cfg):
    """Every result name the run would produce (before skips)."""
    names = []
    for fw in cfg.frameworks:
        names += [b.name(fw) for b in plan(cfg)]
        names.append(f"peer_{fw}_launch_latency")
        names.append(f"peer_{fw}_launch{LAUNCH_CHAIN}_latency")
        if fw == "torch":
            names.append(f"peer_torch_graph_launch{LAUNCH_CHAIN}_latency")
        if fw != "torch":
            names += [f"peer_{fw}_compile_{k}" for k in KERNELS if k != "tiny"]
        else:
            rows, cols = SOFTMAX_SHAPE
            names += [f"peer_torch_softmax_{rows}x{cols}", f"peer_torch_gelu_{GELU_SIZE}"]
        if fw == "cudac":
            names.append(f"peer_cudac_stencil2d_{STENCIL_SIZE}")
    return [n for n in names if cfg.wants(n)]


# ---- inputs, references and checks ------------------------------------------------------------


def random_floats(rng, n, low=-1.0, high=1.0):
    """n float32 uniform in [low, high)."""
    return (rng.random(n, dtype=np.float32) * np.float32(high - low) + np.float32(low)).astype(np.float32)


def make_inputs(bench, rng):
    """The host inputs of a benchmark (float32 arrays; the logistic map starts in (0.05, 0.95))."""
    n = bench.n
    if bench.kernel == "saxpy":
        return {"x": random_floats(rng, n), "y": random_floats(rng, n)}
    if bench.kernel == "vecadd":
        return {"a": random_floats(rng, n), "b": random_floats(rng, n)}
    if bench.kernel == "blocksum":
        return {"x": random_floats(rng, n)}
    if bench.kernel == "logistic":
        return {"v": random_floats(rng, n, 0.05, 0.95)}
    raise PeerError(f"no inputs for kernel {bench.kernel!r}")


def block_count(n):
    return -(-n // BLOCK)


def logistic_sample(n):
    """The indices of the logistic map that are checked: LOGISTIC_CHECKED spread evenly over
    the array, the last one included."""
    if n <= LOGISTIC_CHECKED:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, LOGISTIC_CHECKED).astype(np.int64))


def logistic_reference(v0, iters):
    """iters steps of v = (3.9 v)(1 - v) in float32, in the kernel's operation order (the map
    is chaotic: a float64 reference, or another rounding order, parts after ~30 steps)."""
    x = np.array(v0, dtype=np.float32)
    r, one = np.float32(3.9), np.float32(1.0)
    for _ in range(iters):
        x = (r * x) * (one - x)
    return x


def relative_error(got, want, scale):
    """The largest |got - want| / scale (scale > 0 elementwise), as a float; NaN anywhere is inf."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return float("inf")
    err = np.abs(got - want) / scale
    if not np.all(np.isfinite(err)):
        return float("inf")
    return float(err.max()) if err.size else 0.0


def tol_of(bench):
    """The check tolerance of a benchmark's kernel."""
    return {"blocksum": BLOCKSUM_TOLERANCE, "logistic": LOGISTIC_TOLERANCE}.get(
        bench.kernel, ELEMENTWISE_TOLERANCE)


def check(bench, inputs, output):
    """Compares a benchmark's first output with the NumPy reference. Returns (ok, max relative
    error, tolerance). `output` is y (saxpy), c (vecadd), the sums (blocksum) or the values
    of the logistic map at logistic_sample(n)."""
    if bench.kernel == "saxpy":
        x, y = inputs["x"].astype(np.float64), inputs["y"].astype(np.float64)
        want = np.float64(np.float32(ALPHA)) * x + y
        scale = np.abs(ALPHA * x) + np.abs(y) + 1e-30
        tol = ELEMENTWISE_TOLERANCE
    elif bench.kernel == "vecadd":
        a, b = inputs["a"].astype(np.float64), inputs["b"].astype(np.float64)
        want = a + b
        scale = np.abs(a) + np.abs(b) + 1e-30
        tol = ELEMENTWISE_TOLERANCE
    elif bench.kernel == "blocksum":
        x = inputs["x"].astype(np.float64)
        padded = np.zeros(block_count(bench.n) * BLOCK)
        padded[: x.size] = x
        rows = padded.reshape(-1, BLOCK)
        want = rows.sum(axis=1)
        scale = np.abs(rows).sum(axis=1) + 1e-30
        tol = BLOCKSUM_TOLERANCE
    elif bench.kernel == "logistic":
        idx = logistic_sample(bench.n)
        want = logistic_reference(inputs["v"][idx], bench.iters)
        scale = np.abs(want.astype(np.float64)) + 1e-30
        tol = LOGISTIC_TOLERANCE
    else:
        raise PeerError(f"no check for kernel {bench.kernel!r}")
    err = relative_error(output, want, scale)
    return err <= tol, err, tol


# ---- timing ---------------------------------------------------------------------------------


def summarize(samples_ns):
    """Median, median absolute deviation, minimum and count of samples in ns."""
    med = statistics.median(samples_ns)
    mad = statistics.median(abs(s - med) for s in samples_ns)
    return {"median": med, "mad": mad, "min": min(samples_ns), "runs": len(samples_ns)}


class TorchClock:
    """CUDA events and synchronisation through PyTorch (for torch and triton)."""

    def __init__(self, torch):
        self.torch = torch
        self.start = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)

    def sync(self):
        self.torch.cuda.synchronize()

    def event_ns(self, launch):
        self.start.record()
        launch()
        self.end.record()
        self.end.synchronize()
        return self.start.elapsed_time(self.end) * 1e6


class CupyClock:
    """CUDA events and synchronisation through CuPy (for cupy and cudac)."""

    def __init__(self, cupy):
        self.cupy = cupy
        self.start = cupy.cuda.Event()
        self.end = cupy.cuda.Event()

    def sync(self):
        self.cupy.cuda.get_current_stream().synchronize()

    def event_ns(self, launch):
        self.start.record()
        launch()
        self.end.record()
        self.end.synchronize()
        return self.cupy.cuda.get_elapsed_time(self.start, self.end) * 1e6


def time_events(clock, launch, runs, warmup):
    """CUDA-event time of each of `runs` launches after `warmup` launches."""
    for _ in range(warmup):
        launch()
    clock.sync()
    return [clock.event_ns(launch) for _ in range(runs)]


def time_host(clock, launch, runs, warmup):
    """Host time of launch + synchronize, `runs` times after `warmup`."""
    for _ in range(warmup):
        launch()
    clock.sync()
    out = []
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        launch()
        clock.sync()
        out.append(time.perf_counter_ns() - t0)
    return out


# ---- the frameworks ----------------------------------------------------------------------------


class Case:
    """A benchmark set up on a framework: `launch()` runs it once (asynchronously), `output()`
    returns what the check compares (a NumPy array), after synchronising; `trap()` the status
    word of a kernel that has one (0: no trap), else 0."""

    def __init__(self, launch, output, trap=lambda: 0):
        self.launch = launch
        self.output = output
        self.trap = trap


class TorchPeer:
    """PyTorch eager."""

    name = "torch"

    def __init__(self, torch):
        self.torch = torch
        self.clock = TorchClock(torch)
        self.dev = torch.device("cuda")

    def to_device(self, a):
        return self.torch.from_numpy(a).to(self.dev)

    def case(self, bench, inputs, blocks):
        t = self.torch
        if bench.kernel == "saxpy":
            x, y = self.to_device(inputs["x"]), self.to_device(inputs["y"])
            return Case(lambda: y.add_(x, alpha=ALPHA), lambda: y.cpu().numpy())
        if bench.kernel == "vecadd":
            a, b = self.to_device(inputs["a"]), self.to_device(inputs["b"])
            c = t.empty_like(a)
            return Case(lambda: t.add(a, b, out=c), lambda: c.cpu().numpy())
        if bench.kernel == "blocksum":
            n = bench.n
            padded = t.zeros(block_count(n) * BLOCK, dtype=t.float32, device=self.dev)
            padded[:n] = self.to_device(inputs["x"])
            rows = padded.view(-1, BLOCK)
            out = t.empty(block_count(n), dtype=t.float32, device=self.dev)
            return Case(lambda: t.sum(rows, 1, out=out), lambda: out.cpu().numpy())
        if bench.kernel == "logistic":
            v = self.to_device(inputs["v"])
            tmp = t.empty_like(v)
            one = t.ones((), dtype=t.float32, device=self.dev)
            iters = bench.iters
            idx = t.from_numpy(logistic_sample(bench.n)).to(self.dev)

            def launch():
                for _ in range(iters):
                    t.mul(v, 3.9, out=tmp)  # 3.9 v
                    t.sub(one, v, out=v)  # 1 - v
                    v.mul_(tmp)  # (3.9 v)(1 - v)

            return Case(launch, lambda: v[idx].cpu().numpy())
        raise PeerError(f"torch: no case for {bench.kernel!r}")

    def latency_case(self):
        c = self.torch.zeros(1, dtype=self.torch.int32, device=self.dev)
        return Case(lambda: c.add_(1), lambda: int(c.item()))

    def chain_case(self):
        c = self.torch.zeros(1, dtype=self.torch.int32, device=self.dev)

        def launch():
            for _ in range(LAUNCH_CHAIN):
                c.add_(1)

        return Case(launch, lambda: int(c.item()))

    def graph_chain_case(self):
        """The chain's launches captured once as a CUDA graph (warmed up on a side stream
        first, as ``torch.cuda.graph`` asks), replayed per sample."""
        t = self.torch
        c = t.zeros(1, dtype=t.int32, device=self.dev)
        side = t.cuda.Stream()
        side.wait_stream(t.cuda.current_stream())
        with t.cuda.stream(side):
            for _ in range(3):
                c.add_(1)
        t.cuda.current_stream().wait_stream(side)
        graph = t.cuda.CUDAGraph()
        with t.cuda.graph(graph):
            for _ in range(LAUNCH_CHAIN):
                c.add_(1)
        t.cuda.synchronize()
        c.zero_()
        return Case(graph.replay, lambda: int(c.item()))


class CupyPeer:
    """CuPy RawKernel over CUDA C sources: Nacre's generated ones (`cupy`) or the hand-written
    ones beside this script (`cudac`)."""

    def __init__(self, name, cupy, sources):
        self.name = name
        self.cupy = cupy
        self.sources = sources
        self.clock = CupyClock(cupy)
        self.kernels = {}

    def kernel(self, kernel):
        if kernel not in self.kernels:
            src = self.sources.get(kernel)
            if src is None:
                raise PeerError(f"{self.name}: no source for the {kernel} kernel")
            k = self.cupy.RawKernel(src.text, src.symbol, options=src.options)
            k.compile()
            self.kernels[kernel] = k
        return self.kernels[kernel]

    def launcher(self, kernel, grid, args, output):
        """A Case launching `kernel` on `grid` blocks of BLOCK threads (1 for tiny) with
        `args`, plus the status word when the kernel takes one."""
        k = self.kernel(kernel)
        block = 1 if kernel == "tiny" else BLOCK
        if self.sources[kernel].status:
            status = self.cupy.zeros(1, dtype=self.cupy.uint32)
            args = args + (status,)
            trap = lambda: int(status.get()[0])  # noqa: E731
        else:
            trap = lambda: 0  # noqa: E731
        return Case(lambda: k((grid,), (block,), args), output, trap)

    def case(self, bench, inputs, blocks):
        cp = self.cupy
        n32 = np.uint32(bench.n)
        if bench.kernel == "saxpy":
            x, y = cp.asarray(inputs["x"]), cp.asarray(inputs["y"])
            return self.launcher("saxpy", blocks, (np.float32(ALPHA), x, y, n32), lambda: cp.asnumpy(y))
        if bench.kernel == "vecadd":
            a, b = cp.asarray(inputs["a"]), cp.asarray(inputs["b"])
            c = cp.empty_like(a)
            return self.launcher("vecadd", blocks, (a, b, c, n32), lambda: cp.asnumpy(c))
        if bench.kernel == "blocksum":
            x = cp.asarray(inputs["x"])
            nb = block_count(bench.n)
            out = cp.empty(nb, dtype=cp.float32)
            return self.launcher("blocksum", nb, (x, out, n32), lambda: cp.asnumpy(out))
        if bench.kernel == "logistic":
            v = cp.asarray(inputs["v"])
            idx = cp.asarray(logistic_sample(bench.n))
            return self.launcher("logistic", blocks, (v, n32, np.uint32(bench.iters)),
                                 lambda: cp.asnumpy(v[idx]))
        raise PeerError(f"{self.name}: no case for {bench.kernel!r}")

    def latency_case(self):
        c = self.cupy.zeros(1, dtype=self.cupy.uint32)
        return self.launcher("tiny", 1, (c,), lambda: int(c.get()[0]))

    def chain_case(self):
        one = self.latency_case()

        def launch():
            for _ in range(LAUNCH_CHAIN):
                one.launch()

        return Case(launch, one.output, one.trap)

    def compile_ns(self, kernel, samples):
        """Cold compile + module load of a kernel, `samples` times: each sample compiles a source
        made unique (no in-memory or disk cache can answer) into a fresh CUPY_CACHE_DIR."""
        src = self.sources.get(kernel)
        if src is None:
            raise PeerError(f"{self.name}: no source for the {kernel} kernel")
        out = []
        for i in range(samples):
            with tempfile.TemporaryDirectory(prefix="nacre-cupy-cache-") as cache:
                os.environ["CUPY_CACHE_DIR"] = cache
                text = src.unique(f"{self.name}-{kernel}-{i}-{time.perf_counter_ns()}")
                t0 = time.perf_counter_ns()
                k = self.cupy.RawKernel(text, src.symbol, options=src.options)
                k.compile()
                out.append(time.perf_counter_ns() - t0)
        return out


class TritonPeer:
    """Triton, through PyTorch tensors and events."""

    name = "triton"

    def __init__(self, torch, kernels_module):
        self.torch = torch
        self.tk = kernels_module
        self.clock = TorchClock(torch)
        self.dev = torch.device("cuda")

    def to_device(self, a):
        return self.torch.from_numpy(a).to(self.dev)

    def case(self, bench, inputs, blocks):
        t, tk = self.torch, self.tk
        n = bench.n
        if bench.kernel == "saxpy":
            x, y = self.to_device(inputs["x"]), self.to_device(inputs["y"])
            return Case(lambda: tk.launch_saxpy(tk.saxpy_kernel, x, y, ALPHA, n),
                        lambda: y.cpu().numpy())
        if bench.kernel == "vecadd":
            a, b = self.to_device(inputs["a"]), self.to_device(inputs["b"])
            c = t.empty_like(a)
            return Case(lambda: tk.launch_vecadd(tk.vecadd_kernel, a, b, c, n),
                        lambda: c.cpu().numpy())
        if bench.kernel == "blocksum":
            x = self.to_device(inputs["x"])
            out = t.empty(block_count(n), dtype=t.float32, device=self.dev)
            return Case(lambda: tk.launch_blocksum(tk.blocksum_kernel, x, out, n, BLOCK),
                        lambda: out.cpu().numpy())
        if bench.kernel == "logistic":
            v = self.to_device(inputs["v"])
            idx = t.from_numpy(logistic_sample(n)).to(self.dev)
            iters = bench.iters
            return Case(lambda: tk.launch_logistic(tk.logistic_kernel, v, n, iters),
                        lambda: v[idx].cpu().numpy())
        raise PeerError(f"triton: no case for {bench.kernel!r}")

    def latency_case(self):
        c = self.torch.zeros(1, dtype=self.torch.int32, device=self.dev)
        return Case(lambda: self.tk.launch_tiny(self.tk.tiny_kernel, c), lambda: int(c.item()))

    def chain_case(self):
        one = self.latency_case()

        def launch():
            for _ in range(LAUNCH_CHAIN):
                one.launch()

        return Case(launch, one.output)

    def compile_args(self, kernel):
        """A launcher of `kernel` on small arrays, for the compile samples (the same argument
        types, hence the same specialisation, as the timed launches: sizes that are multiples
        of 16 and pointers aligned to 16 bytes)."""
        t, tk = self.torch, self.tk
        n = 1 << 16
        f = t.rand(n, device=self.dev, dtype=t.float32)
        g = t.rand(n, device=self.dev, dtype=t.float32)
        h = t.empty_like(f)
        if kernel == "saxpy":
            return lambda k: tk.launch_saxpy(k, f, g, ALPHA, n)
        if kernel == "vecadd":
            return lambda k: tk.launch_vecadd(k, f, g, h, n)
        if kernel == "blocksum":
            return lambda k: tk.launch_blocksum(k, f, h, n, BLOCK)
        if kernel == "logistic":
            return lambda k: tk.launch_logistic(k, f, n, 8)
        raise PeerError(f"triton: no compile case for {kernel!r}")

    def compile_ns(self, kernel, samples):
        """Cold compile + load + first launch (synchronised), `samples` times, each with a fresh
        JIT function and an empty TRITON_CACHE_DIR."""
        launch = self.compile_args(kernel)
        jitted = self.tk.KERNELS[kernel][0]
        out = []
        for _ in range(samples):
            with tempfile.TemporaryDirectory(prefix="nacre-triton-cache-") as cache:
                set_triton_cache_dir(cache)
                k = self.tk.fresh(jitted)
                self.clock.sync()
                t0 = time.perf_counter_ns()
                launch(k)
                self.clock.sync()
                out.append(time.perf_counter_ns() - t0)
        return out


def set_triton_cache_dir(path):
    """Points Triton's on-disk cache at `path` (the environment variable, and the knob of
    Triton versions that read it once)."""
    os.environ["TRITON_CACHE_DIR"] = path
    try:
        import triton

        knobs = getattr(triton, "knobs", None)
        if knobs is not None and hasattr(knobs, "cache"):
            knobs.cache.dir = path
    except Exception:  # the environment variable alone is what older versions read
        pass


# ---- the run ------------------------------------------------------------------------------------


class Run:
    """Collects results, host results, statistics, checks and notes."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.results = {}
        self.host_results = {}
        self.stats = {}
        self.checks = {}
        self.notes = []
        self.sweep = {}

    def note(self, text):
        print(f"note: {text}", file=sys.stderr)
        self.notes.append(text)

    def record(self, name, samples, host=None, timing="cuda_events"):
        s = summarize(samples)
        self.results[name] = round(s["median"], 3)
        self.stats[name] = dict(s, timing=timing)
        line = f"{name:<44} {fmt_ns(s['median']):>11}  ±{100 * s['mad'] / s['median']:5.1f}%"
        if host is not None:
            h = summarize(host)
            self.host_results[name] = round(h["median"], 3)
            self.stats[name]["host"] = h
            line += f"   host launch+sync {fmt_ns(h['median']):>11}"
        print(line, file=sys.stderr, flush=True)

    def record_check(self, name, ok, err, tol, detail=""):
        self.checks[name] = {"ok": bool(ok), "max_rel_err": err, "tolerance": tol}
        if detail:
            self.checks[name]["detail"] = detail
        if not ok:
            msg = f"CHECK FAILED {name}: max relative error {err:.3g} > {tol:g}{(': ' + detail) if detail else ''}; not timed"
            print(msg, file=sys.stderr, flush=True)
            self.notes.append(msg)


def fmt_ns(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3f} {unit}"
    return f"{ns:.1f} ns"


# ---- kernel-language benchmarks (PyTorch only) ------------------------------------------------

#: Rows and columns of the softmax benchmark.
SOFTMAX_SHAPE = (4096, 4096)
#: Elements of the GELU benchmark.
GELU_SIZE = 1 << 24
#: Check tolerance of softmax (relative to the row's largest probability) and GELU.
SOFTMAX_TOLERANCE = 1e-5
GELU_TOLERANCE = 1e-5
#: Elements of the half-precision saxpy, its alpha and its tolerance
#: (relative to |y|, plus an absolute part for results near zero: a few float16 roundings).
SAXPY_F16_SIZE = 1 << 24
SAXPY_F16_ALPHA = -1.25
SAXPY_F16_TOLERANCE = 2.0 ** -9


def softmax_reference(x):
    """Row softmax in float64."""
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def gelu_reference(x):
    """GELU's tanh form in float64."""
    x = x.astype(np.float64)
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def run_language(run, peer, rng):
    """`peer_torch_softmax_4096x4096` (`torch.softmax(x, dim=1)`) and
    `peer_torch_gelu_16777216` (`torch.nn.functional.gelu(x, approximate="tanh")`), each
    checked against float64 NumPy and timed with CUDA events."""
    torch, cfg = peer.torch, run.cfg
    rows, cols = SOFTMAX_SHAPE
    cases = [
        (f"peer_torch_softmax_{rows}x{cols}",
         lambda: (rng.standard_normal((rows, cols), dtype=np.float32) * np.float32(3.0)),
         lambda t: torch.softmax(t, dim=1),
         lambda x, got: (np.abs(got - softmax_reference(x)).max(axis=1)
                         / softmax_reference(x).max(axis=1)).max(),
         SOFTMAX_TOLERANCE),
        (f"peer_torch_gelu_{GELU_SIZE}",
         lambda: random_floats(rng, GELU_SIZE, -6.0, 6.0),
         lambda t: torch.nn.functional.gelu(t, approximate="tanh"),
         lambda x, got: (np.abs(got - gelu_reference(x)) / (1.0 + np.abs(gelu_reference(x)))).max(),
         GELU_TOLERANCE),
    ]
    for name, make, op, error, tol in cases:
        if not cfg.wants(name):
            continue

        def bench():
            x = make()
            t = torch.from_numpy(x).cuda()
            got = op(t).cpu().numpy()
            err = float(error(x, got))
            run.record_check(name, err <= tol, err, tol)
            if err <= tol:
                run.record(name, time_events(peer.clock, lambda: op(t), cfg.runs, cfg.warmup))

        guarded(run, name, bench)
        free_memory(peer)
    run_saxpy_f16(run, peer, rng)
    run_bincount(run, peer, rng)
    run_sum_compact(run, peer, rng)


#: Values of the histogram benchmark (int32 in [0, 256), Nacre's u32 input).
HISTOGRAM_SIZE = 1 << 24


def run_bincount(run, peer, rng):
    """`peer_torch_bincount_16777216`: `torch.bincount(x, minlength=256)` over int32 values in
    [0, 256), checked exactly against NumPy's counts, timed with CUDA events (each call
    allocates and zeroes its 256 bins, as PyTorch's operator does)."""
    torch, cfg = peer.torch, run.cfg
    name = f"peer_torch_bincount_{HISTOGRAM_SIZE}"
    if not cfg.wants(name):
        return

    def bench():
        x = rng.integers(0, 256, HISTOGRAM_SIZE, dtype=np.int32)
        t = torch.from_numpy(x).cuda()
        got = torch.bincount(t, minlength=256).cpu().numpy()
        want = np.bincount(x, minlength=256)
        wrong = int((got != want).sum())
        run.record_check(name, wrong == 0, wrong, 0)
        if wrong == 0:
            run.record(name, time_events(peer.clock, lambda: torch.bincount(t, minlength=256),
                                         cfg.runs, cfg.warmup))

    guarded(run, name, bench)
    free_memory(peer)


#: Elements of the warp benchmarks (float32 in [-1, 1)) and the compaction's threshold.
WARP_BENCH_SIZE = 1 << 24
COMPACT_THRESHOLD = 0.0
SUM_TOLERANCE = 1e-5


def run_sum_compact(run, peer, rng):
    """`peer_torch_sum_16777216` (`torch.sum(x)`, checked within 1e-5 of the sum of magnitudes
    against a float64 sum) and `peer_torch_compact_16777216` (`x[x > 0]`, checked exactly,
    order included; the operator learns the output's size on the host, as PyTorch's boolean
    indexing does), both over float32 values in [-1, 1), timed with CUDA events."""
    torch, cfg = peer.torch, run.cfg
    n = WARP_BENCH_SIZE
    sum_name, compact_name = f"peer_torch_sum_{n}", f"peer_torch_compact_{n}"
    if not (cfg.wants(sum_name) or cfg.wants(compact_name)):
        return

    def bench():
        x = random_floats(rng, n, -1.0, 1.0)
        t = torch.from_numpy(x).cuda()
        if cfg.wants(sum_name):
            got = float(torch.sum(t).item())
            err = abs(got - float(x.astype(np.float64).sum())) / max(float(np.abs(x).sum()), 1.0)
            run.record_check(sum_name, err <= SUM_TOLERANCE, err, SUM_TOLERANCE)
            if err <= SUM_TOLERANCE:
                run.record(sum_name, time_events(peer.clock, lambda: torch.sum(t),
                                                 cfg.runs, cfg.warmup))
        if cfg.wants(compact_name):
            got = t[t > COMPACT_THRESHOLD].cpu().numpy()
            want = x[x > COMPACT_THRESHOLD]
            wrong = int(got.shape != want.shape) or int((got != want).sum())
            run.record_check(compact_name, wrong == 0, wrong, 0)
            if wrong == 0:
                run.record(compact_name, time_events(peer.clock, lambda: t[t > COMPACT_THRESHOLD],
                                                     cfg.runs, cfg.warmup))

    guarded(run, sum_name, bench)
    free_memory(peer)


def run_saxpy_f16(run, peer, rng):
    """`peer_torch_saxpy_f16_16777216`: `y.add_(x, alpha=a)` on float16 tensors (one kernel,
    float arithmetic, one rounding), checked against float64 NumPy, timed with CUDA events."""
    torch, cfg = peer.torch, run.cfg
    name = f"peer_torch_saxpy_f16_{SAXPY_F16_SIZE}"
    if not cfg.wants(name):
        return

    def bench():
        x = random_floats(rng, SAXPY_F16_SIZE, -8.0, 8.0).astype(np.float16)
        y = random_floats(rng, SAXPY_F16_SIZE, -8.0, 8.0).astype(np.float16)
        tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
        ty.add_(tx, alpha=SAXPY_F16_ALPHA)
        got = ty.cpu().numpy().astype(np.float64)
        want = np.float64(SAXPY_F16_ALPHA) * x.astype(np.float64) + y.astype(np.float64)
        err = float((np.abs(got - want) / (np.abs(want) + 2.0 ** -4)).max())
        run.record_check(name, err <= SAXPY_F16_TOLERANCE, err, SAXPY_F16_TOLERANCE)
        if err <= SAXPY_F16_TOLERANCE:
            run.record(name, time_events(peer.clock, lambda: ty.add_(tx, alpha=SAXPY_F16_ALPHA),
                                         cfg.runs, cfg.warmup))

    guarded(run, name, bench)
    free_memory(peer)


#: Rows and columns of the 2D stencil benchmark (hand-written CUDA C under CuPy).
STENCIL_SIZE = 4096
#: Check tolerance of the stencil (absolute, on values in [-1, 1]).
STENCIL_TOLERANCE = 1e-6


def stencil_reference(x):
    """The 5-point stencil of cuda/stencil2d.cu in float32, edges clamped, in its order."""
    p = np.pad(x, 1, mode="edge")
    c, up, down = p[1:-1, 1:-1], p[:-2, 1:-1], p[2:, 1:-1]
    left, right = p[1:-1, :-2], p[1:-1, 2:]
    return c * np.float32(0.5) + (((up + down) + left) + right) * np.float32(0.125)


def run_stencil(run, peer, rng):
    """`peer_cudac_stencil2d_4096`: cuda/stencil2d.cu (a 16 x 16 block per output tile, an
    18 x 18 shared tile with halo) under CuPy, checked against NumPy and timed with events."""
    cfg, cp = run.cfg, peer.cupy
    name = f"peer_cudac_stencil2d_{STENCIL_SIZE}"
    if not cfg.wants(name):
        return

    def bench():
        src = load_sources(HERE / "cuda", kernels=("stencil2d",))["stencil2d"]
        k = cp.RawKernel(src.text, src.symbol, options=src.options)
        k.compile()
        n = STENCIL_SIZE
        x = random_floats(rng, n * n).reshape(n, n)
        xd = cp.asarray(x)
        od = cp.empty_like(xd)
        grid = ((n + 15) // 16, (n + 15) // 16)
        launch = lambda: k(grid, (16, 16), (xd, od, np.uint32(n), np.uint32(n)))  # noqa: E731
        launch()
        peer.clock.sync()
        err = float(np.abs(cp.asnumpy(od) - stencil_reference(x)).max())
        run.record_check(name, err <= STENCIL_TOLERANCE, err, STENCIL_TOLERANCE)
        if err <= STENCIL_TOLERANCE:
            run.record(name, time_events(peer.clock, launch, cfg.runs, cfg.warmup))

    guarded(run, name, bench)
    free_memory(peer)


def free_memory(peer):
    """Returns cached device memory between benchmarks."""
    try:
        if peer.name in ("cupy", "cudac"):
            peer.cupy.get_default_memory_pool().free_all_blocks()
        else:
            peer.torch.cuda.empty_cache()
    except Exception:
        pass


def run_bench(run, peer, bench, inputs):
    cfg = run.cfg
    name = bench.name(peer.name)
    blocks = cfg.blocks_for(bench.n)
    case = peer.case(bench, inputs, blocks)
    case.launch()
    peer.clock.sync()
    trap = case.trap()
    if trap:
        run.record_check(name, False, float("inf"), tol_of(bench), f"the kernel reported trap code {trap}")
        return
    ok, err, tol = check(bench, inputs, case.output())
    run.record_check(name, ok, err, tol)
    if not ok:
        return
    events = time_events(peer.clock, case.launch, cfg.runs, cfg.warmup)
    host = time_host(peer.clock, case.launch, cfg.runs, 0)
    run.record(name, events, host)


def run_latency(run, peer, name=None, case=None, per_sample=1, runs=None):
    """Host time of launch + synchronize of a case whose launches each add one to a counter
    (`per_sample` launches a sample); the counter must count them all."""
    cfg = run.cfg
    name = name or f"peer_{peer.name}_launch_latency"
    case = case or peer.latency_case()
    runs = runs or cfg.latency_runs
    warmup = cfg.warmup
    samples = time_host(peer.clock, case.launch, runs, warmup)
    got, want = case.output(), (warmup + runs) * per_sample
    ok = got == want and case.trap() == 0
    run.record_check(name, ok, 0.0 if ok else float("inf"), 0.0,
                     "" if ok else f"counter {got}, expected {want}")
    if ok:
        run.record(name, samples, timing="host")


def run_chains(run, peer):
    """``peer_<fw>_launch100_latency`` and, on torch, its captured graph."""
    cases = [(f"peer_{peer.name}_launch{LAUNCH_CHAIN}_latency", peer.chain_case)]
    if peer.name == "torch":
        cases.append((f"peer_torch_graph_launch{LAUNCH_CHAIN}_latency", peer.graph_chain_case))
    runs = max(run.cfg.latency_runs // 10, 20)
    for name, make in cases:
        if run.cfg.wants(name):
            guarded(run, name, lambda: run_latency(run, peer, name, make(), LAUNCH_CHAIN, runs))


def run_compiles(run, peer):
    for kernel in ("saxpy", "vecadd", "blocksum", "logistic"):
        name = f"peer_{peer.name}_compile_{kernel}"
        if not run.cfg.wants(name):
            continue
        guarded(run, name, lambda: run.record(
            name, peer.compile_ns(kernel, run.cfg.compile_samples[peer.name]), timing="host"))


def run_sweep(run, peer, rng):
    """cudac's grid-stride kernels over SWEEP_BLOCKS grids (event medians), per size."""
    for bench in [Bench("saxpy", n) for n in run.cfg.sizes] + [Bench("vecadd", n) for n in run.cfg.sizes] + \
            [Bench("logistic", n, i) for n, i in run.cfg.logistic]:
        inputs = make_inputs(bench, rng)
        row = {}
        for blocks in SWEEP_BLOCKS:
            case = peer.case(bench, inputs, blocks)
            samples = time_events(peer.clock, case.launch, MIN_RUNS, run.cfg.warmup)
            row[str(blocks)] = round(statistics.median(samples), 3)
            del case
        run.sweep[bench.suffix] = row
        best = min(row, key=row.get)
        print(f"sweep {bench.suffix:<28} best {best:>6} blocks: {fmt_ns(row[best])}   "
              + "  ".join(f"{b}:{fmt_ns(v)}" for b, v in row.items()), file=sys.stderr, flush=True)
        free_memory(peer)


def guarded(run, what, action):
    """Runs `action`; an exception becomes a note (with the error) and the run goes on."""
    try:
        action()
        return True
    except Exception as e:  # a peer's failure must not stop the others
        run.note(f"{what}: failed: {type(e).__name__}: {e}")
        if os.environ.get("NACRE_PEERS_TRACEBACK"):
            traceback.print_exc()
        return False


def load_peers(run):
    """Imports the frameworks asked for; each that cannot run becomes a note."""
    cfg = run.cfg
    peers = []
    torch = cupy = None
    if any(f in cfg.frameworks for f in ("torch", "triton")):
        try:
            import torch as torch_module

            if not torch_module.cuda.is_available():
                raise RuntimeError("torch.cuda.is_available() is False")
            torch = torch_module
        except Exception as e:
            run.note(f"torch unavailable ({type(e).__name__}: {e}): peer_torch_* and peer_triton_* skipped")
    if any(f in cfg.frameworks for f in ("cupy", "cudac")):
        try:
            import cupy as cupy_module

            cupy_module.cuda.runtime.getDeviceCount()
            cupy = cupy_module
        except Exception as e:
            run.note(f"cupy unavailable ({type(e).__name__}: {e}): peer_cupy_* and peer_cudac_* skipped")
    for fw in cfg.frameworks:
        if fw == "torch" and torch is not None:
            peers.append(TorchPeer(torch))
        elif fw == "triton" and torch is not None:
            try:
                sys.path.insert(0, str(HERE))
                import triton_kernels

                peers.append(TritonPeer(torch, triton_kernels))
            except Exception as e:
                run.note(f"triton unavailable ({type(e).__name__}: {e}): peer_triton_* skipped")
        elif fw == "cudac" and cupy is not None:
            peers.append(CupyPeer("cudac", cupy, load_sources(HERE / "cuda")))
        elif fw == "cupy" and cupy is not None:
            if cfg.source_dir is None:
                run.note("no --source-dir: peer_cupy_* (CuPy running Nacre's generated CUDA) skipped")
            else:
                peers.append(CupyPeer("cupy", cupy, load_sources(cfg.source_dir, required=False)))
    return peers


def machine(run, peers):
    info = {"python": platform.python_version(), "platform": platform.platform()}
    if np is not None:
        info["numpy"] = np.__version__
    for peer in peers:
        try:
            if peer.name == "torch":
                t = peer.torch
                props = t.cuda.get_device_properties(0)
                info.update(gpu=t.cuda.get_device_name(0), sms=props.multi_processor_count,
                            gpu_memory_bytes=props.total_memory, torch=t.__version__,
                            torch_cuda=t.version.cuda)
            elif peer.name in ("cupy", "cudac"):
                cp = peer.cupy
                info.update(cupy=cp.__version__,
                            cuda_runtime=cp.cuda.runtime.runtimeGetVersion(),
                            cuda_driver=cp.cuda.runtime.driverGetVersion())
                props = cp.cuda.runtime.getDeviceProperties(0)
                info.setdefault("gpu", props["name"].decode() if isinstance(props["name"], bytes) else props["name"])
                info.setdefault("sms", props["multiProcessorCount"])
            elif peer.name == "triton":
                import triton

                info["triton"] = triton.__version__
        except Exception as e:
            run.note(f"machine facts from {peer.name}: {type(e).__name__}: {e}")
    return info


def document(run, machine_info):
    return {
        "unit": "ns",
        "results": run.results,
        "host_results": run.host_results,
        "stats": run.stats,
        "checks": run.checks,
        "failed_checks": sorted(n for n, c in run.checks.items() if not c["ok"]),
        "notes": run.notes,
        "machine": machine_info,
        "config": run.cfg.as_json(),
        "sweep": run.sweep,
        "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
    }


def write_json(path, doc):
    path = Path(path)
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True)
    path.write_text(json.dumps(doc, indent=2, sort_keys=False) + "\n")


def dry_run(cfg):
    """Prints the plan and the sources that would run; touches no GPU."""
    print("plan (dry run: nothing is timed):")
    for b in plan(cfg):
        extra = f", {cfg.blocks_for(b.n)} blocks of {BLOCK}" if b.kernel in ("saxpy", "vecadd", "logistic") else ""
        print(f"  {b.suffix}{extra}")
    hand = load_sources(HERE / "cuda")
    print("hand-written CUDA (cudac): " + ", ".join(f"{k} -> {s.symbol}" for k, s in hand.items()))
    nacre = {}
    if cfg.source_dir is not None:
        nacre = load_sources(cfg.source_dir, required=False)
        print(f"Nacre's CUDA (cupy) from {cfg.source_dir}: "
              + (", ".join(f"{k} -> {s.symbol}" for k, s in nacre.items()) or "none")
              + (f"; NVRTC options {' '.join(next(iter(nacre.values())).options)}" if nacre else ""))
    names = planned_names(cfg)
    print(f"{len(names)} result names, e.g. {', '.join(names[:3])}")
    doc = {
        "unit": "ns", "results": {}, "host_results": {}, "stats": {}, "checks": {}, "failed_checks": [],
        "notes": ["dry run: nothing was timed"], "machine": {"python": platform.python_version()},
        "config": cfg.as_json(), "sweep": {},
        "plan": {"names": names,
                 "cudac_symbols": {k: s.symbol for k, s in hand.items()},
                 "cupy_symbols": {k: s.symbol for k, s in nacre.items()},
                 "cupy_status_word": {k: s.status for k, s in nacre.items()},
                 "cupy_nvrtc_options": list(next(iter(nacre.values())).options) if nacre else []},
    }
    if cfg.json:
        write_json(cfg.json, doc)
    return 0


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        cfg = Config(args)
        if cfg.dry_run:
            return dry_run(cfg)
    except PeerError as e:
        print(f"gpu_peers.py: error: {e}", file=sys.stderr)
        return 2
    if np is None:
        print("gpu_peers.py: error: NumPy is needed (inputs and reference checks): pip install numpy",
              file=sys.stderr)
        return 1
    run = Run(cfg)
    try:
        peers = load_peers(run)
    except PeerError as e:
        print(f"gpu_peers.py: error: {e}", file=sys.stderr)
        return 2
    rng = np.random.default_rng(cfg.seed)
    started = time.perf_counter()
    print(f"gpu_peers.py: {', '.join(p.name for p in peers) or 'no framework'}; "
          f"{cfg.runs} runs per kernel (CUDA events), {cfg.warmup} warm-up", file=sys.stderr, flush=True)
    for bench in plan(cfg):
        wanted = [p for p in peers if cfg.wants(bench.name(p.name))]
        if not wanted:
            continue
        inputs = make_inputs(bench, rng)
        for peer in wanted:
            if peer.name == "cupy" and bench.kernel not in peer.sources:
                run.note(f"{bench.name('cupy')}: no {bench.kernel}.cu in {cfg.source_dir}; skipped")
                continue
            guarded(run, bench.name(peer.name), lambda: run_bench(run, peer, bench, inputs))
            free_memory(peer)
    for peer in peers:
        if peer.name == "torch":
            run_language(run, peer, rng)
        elif peer.name == "cudac":
            run_stencil(run, peer, rng)
    for peer in peers:
        name = f"peer_{peer.name}_launch_latency"
        if cfg.wants(name):
            if peer.name == "cupy" and "tiny" not in peer.sources:
                run.note(f"{name}: no tiny.cu in {cfg.source_dir}; skipped")
            else:
                guarded(run, name, lambda: run_latency(run, peer))
        if peer.name != "cupy" or "tiny" in peer.sources:
            run_chains(run, peer)
    for peer in peers:
        if peer.name != "torch":
            run_compiles(run, peer)
    if cfg.grid_sweep:
        for peer in peers:
            if peer.name == "cudac":
                guarded(run, "grid sweep", lambda: run_sweep(run, peer, rng))
    doc = document(run, machine(run, peers))
    print(f"\n{len(run.results)} results in {time.perf_counter() - started:.1f} s"
          + (f"; {len(doc['failed_checks'])} failed checks: {', '.join(doc['failed_checks'])}"
             if doc["failed_checks"] else ""), file=sys.stderr)
    if cfg.json:
        write_json(cfg.json, doc)
        print(f"written to {cfg.json}", file=sys.stderr)
    else:
        print(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
