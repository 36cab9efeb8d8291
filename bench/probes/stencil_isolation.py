"""The stencil2d kernel alone (a cuda_source snapshot of stencil2d__checked without its 4-line
header), timed like softmax_isolation.py: medians of 7 runs of 50 launches over 4096 x 4096.

    python3 bench/probes/stencil_isolation.py A.cu B.cu ...
"""
import cupy as cp, sys
opts = ("--std=c++17", "--fmad=false", "--ftz=false", "--prec-div=true", "--prec-sqrt=true")
W = H = 4096
x = cp.random.standard_normal((H, W), dtype=cp.float32)
for path in sys.argv[1:]:
    k = cp.RawModule(code=open(path).read(), options=opts).get_function("f_stencil2d")
    out = cp.empty_like(x); st = cp.zeros(1, cp.uint32)
    args = (x, out, cp.uint32(W), cp.uint32(H), x, cp.uint64(x.nbytes), out, cp.uint64(out.nbytes), st)
    g, b = ((W + 15) // 16, (H + 15) // 16), (16, 16)
    for _ in range(5): k(g, b, args)
    s, e = cp.cuda.Event(), cp.cuda.Event(); ts = []
    for _ in range(7):
        s.record()
        for _ in range(50): k(g, b, args)
        e.record(); e.synchronize(); ts.append(cp.cuda.get_elapsed_time(s, e) * 1000 / 50)
    print(f"{path}: median {sorted(ts)[3]:.2f} us status {int(st[0])}")
