"""The softmax_rows kernel alone, without Nacre's runtime: each argument is a CUDA source
Nacre generated (a cuda_source snapshot with its 4-line header removed), compiled by CuPy's
NVRTC with Nacre's options and timed with CUDA events (medians of 7 runs of 50 launches,
4096 x 4096 f32), beside torch.softmax. Sources whose name holds "__checked" are the
bounds-checked kernels and take the companion base/size arguments.

    python3 bench/probes/softmax_isolation.py OLD.cu NEW.cu ...
"""
import cupy as cp, numpy as np, sys
opts = ("--std=c++17", "--fmad=false", "--ftz=false", "--prec-div=true", "--prec-sqrt=true")
R = C = 4096
x = cp.random.standard_normal((R, C), dtype=cp.float32)
ref = None
for path in sys.argv[1:]:
    name = path.rsplit("/", 1)[-1]
    src = open(path).read()
    k = cp.RawModule(code=src, options=opts).get_function("f_softmax_rows")
    out = cp.empty_like(x); st = cp.zeros(1, cp.uint32)
    if "__checked" in name:
        args = (x, out, cp.uint32(C), x, cp.uint64(x.nbytes), out, cp.uint64(out.nbytes), st)
    else:
        args = (x, out, cp.uint32(C), st)
    for _ in range(5): k((R,), (256,), args)
    cp.cuda.Device().synchronize()
    s, e = cp.cuda.Event(), cp.cuda.Event()
    ts = []
    for _ in range(7):
        s.record()
        for _ in range(50): k((R,), (256,), args)
        e.record(); e.synchronize()
        ts.append(cp.cuda.get_elapsed_time(s, e) * 1000 / 50)
    if ref is None: ref = out.copy()
    same = bool(cp.all(out == ref))
    print(f"{name}: median {sorted(ts)[3]:.2f} us  min {min(ts):.2f}  status {int(st[0])} same {same}")
import torch
t = torch.as_tensor(x, device='cuda')
for _ in range(5): torch.softmax(t, 1)
torch.cuda.synchronize()
s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
ts=[]
for _ in range(7):
    s.record()
    for _ in range(50): torch.softmax(t, 1)
    e.record(); e.synchronize(); ts.append(s.elapsed_time(e)*1000/50)
print(f"torch: median {sorted(ts)[3]:.2f} us")
