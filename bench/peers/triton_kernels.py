"""The Triton peers of the GPU suite: saxpy, vecadd, block sum, logistic map and the tiny
launch-latency kernel, written the way Triton is meant to be written (one tile of elements
per program, masked loads and stores).

Imported by gpu_peers.py only when Triton is to run; importing this module imports Triton.
"""

import triton
import triton.language as tl

#: Elements per program of the element-wise kernels (saxpy, vecadd).
ELEMENTWISE_BLOCK = 1024
#: Elements per program of the logistic map (4 per thread with 4 warps).
LOGISTIC_BLOCK = 512
#: Sums per program of the block sum (each a row of 256 elements).
BLOCKSUM_ROWS = 16


@triton.jit
def saxpy_kernel(x_ptr, y_ptr, alpha, n, BLOCK: tl.constexpr):
    """y = alpha * x + y over one tile of BLOCK elements."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, alpha * x + y, mask=mask)


@triton.jit
def vecadd_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    """c = a + b over one tile of BLOCK elements."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(c_ptr + offs, a + b, mask=mask)


@triton.jit
def blocksum_kernel(x_ptr, out_ptr, n, ROWS: tl.constexpr, WIDTH: tl.constexpr):
    """One sum per WIDTH consecutive elements, ROWS sums per program."""
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, WIDTH)
    offs = rows[:, None] * WIDTH + cols[None, :]
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + rows, tl.sum(x, axis=1), mask=rows * WIDTH < n)


@triton.jit
def logistic_kernel(v_ptr, n, iters, BLOCK: tl.constexpr):
    """iters steps of v = 3.9 v (1 - v) on one tile of BLOCK elements, in place."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(v_ptr + offs, mask=mask)
    for _ in range(iters):
        x = 3.9 * x * (1.0 - x)
    tl.store(v_ptr + offs, x, mask=mask)


@triton.jit
def tiny_kernel(counter_ptr):
    """Adds one to a counter (one program)."""
    tl.store(counter_ptr, tl.load(counter_ptr) + 1)


def launch_saxpy(kernel, x, y, alpha, n):
    """Launches `kernel` (saxpy_kernel or a fresh copy of it) over n elements."""
    grid = (triton.cdiv(n, ELEMENTWISE_BLOCK),)
    kernel[grid](x, y, alpha, n, BLOCK=ELEMENTWISE_BLOCK, num_warps=4)


def launch_vecadd(kernel, a, b, c, n):
    """Launches `kernel` (vecadd_kernel or a fresh copy) over n elements."""
    grid = (triton.cdiv(n, ELEMENTWISE_BLOCK),)
    kernel[grid](a, b, c, n, BLOCK=ELEMENTWISE_BLOCK, num_warps=4)


def launch_blocksum(kernel, x, out, n, width):
    """Launches `kernel` (blocksum_kernel or a fresh copy): one sum per `width` elements."""
    grid = (triton.cdiv(triton.cdiv(n, width), BLOCKSUM_ROWS),)
    kernel[grid](x, out, n, ROWS=BLOCKSUM_ROWS, WIDTH=width, num_warps=4)


def launch_logistic(kernel, v, n, iters):
    """Launches `kernel` (logistic_kernel or a fresh copy) over n elements."""
    grid = (triton.cdiv(n, LOGISTIC_BLOCK),)
    kernel[grid](v, n, iters, BLOCK=LOGISTIC_BLOCK, num_warps=4)


def launch_tiny(kernel, counter):
    """Launches `kernel` (tiny_kernel or a fresh copy) as one program."""
    kernel[(1,)](counter)


#: Each kernel's jitted function and its launcher, by the suite's kernel name.
KERNELS = {
    "saxpy": (saxpy_kernel, launch_saxpy),
    "vecadd": (vecadd_kernel, launch_vecadd),
    "blocksum": (blocksum_kernel, launch_blocksum),
    "logistic": (logistic_kernel, launch_logistic),
    "tiny": (tiny_kernel, launch_tiny),
}


def fresh(kernel):
    """A new JITFunction of the same Python function: an empty in-memory cache, so that its
    first launch compiles (with a fresh TRITON_CACHE_DIR, from nothing)."""
    return triton.jit(kernel.fn)
