"""Forms of one stencil2d kernel timed alone under CuPy (as stencil_isolation.py): medians of
7 runs of 50 launches over 4096 x 4096, 16 x 16 blocks. Each file's f_stencil2d takes the
arguments its parameter count says: 4 (a hand-written kernel: input, out, w, h), 5 (Nacre's
unchecked form: + status), 9 (the checked form: + each pointer's base and size) or 10 (the
checked form with both bodies: + the host's choice of body, 1 for the check-free one).
Every output is compared with the first file's.

    python3 bench/probes/stencil_variants.py A.cu B.cu ...
"""
import re, sys
import cupy as cp

opts = ("--std=c++17", "--fmad=false", "--ftz=false", "--prec-div=true", "--prec-sqrt=true")
W = H = 4096
x = cp.random.standard_normal((H, W), dtype=cp.float32)
first = None
for path in sys.argv[1:]:
    src = open(path).read()
    params = re.search(r"f_stencil2d\(([^)]*)\)", src).group(1).count(",") + 1
    k = cp.RawModule(code=src, options=opts).get_function("f_stencil2d")
    out = cp.empty_like(x); st = cp.zeros(1, cp.uint32)
    args = {4: (x, out, cp.uint32(W), cp.uint32(H)),
            5: (x, out, cp.uint32(W), cp.uint32(H), st),
            9: (x, out, cp.uint32(W), cp.uint32(H), x, cp.uint64(x.nbytes), out,
                cp.uint64(out.nbytes), st),
            10: (x, out, cp.uint32(W), cp.uint32(H), x, cp.uint64(x.nbytes), out,
                 cp.uint64(out.nbytes), cp.uint8(1), st)}[params]
    g, b = ((W + 15) // 16, (H + 15) // 16), (16, 16)
    for _ in range(5): k(g, b, args)
    s, e = cp.cuda.Event(), cp.cuda.Event(); ts = []
    for _ in range(7):
        s.record()
        for _ in range(50): k(g, b, args)
        e.record(); e.synchronize(); ts.append(cp.cuda.get_elapsed_time(s, e) * 1000 / 50)
    first = out.copy() if first is None else first
    same = bool(cp.array_equal(out, first))
    print(f"{path}: median {sorted(ts)[3]:.2f} us  min {min(ts):.2f}  status {int(st[0])}  same {same}")
