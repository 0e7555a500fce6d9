"""Times a kernel of a perfc-generated library on PyTorch CUDA tensors (bench/gpu/lib_gemm.sh).

    lib_gemm_torch.py LIB.so KERNEL f32|f16 M N K REPS

Calls lib.KERNEL(A, B, C) through python/perfc on the current stream, each timed call
preceded (untimed) by a 256 MiB write that evicts the L2 cache, as perfc --run
does; prints the median and checks C against torch.matmul in float64.
"""
import json
import sys

import torch

import perfc

path, kernel, dt = sys.argv[1], sys.argv[2], sys.argv[3]
M, N, K, reps = (int(x) for x in sys.argv[4:8])
lib = perfc.load(path)
k = getattr(lib, kernel)
dtype = torch.float16 if dt == "f16" else torch.float32
g = torch.Generator(device="cuda").manual_seed(1)
A = (torch.rand((M, K), device="cuda", generator=g) * 2 - 1).to(dtype)
B = (torch.rand((K, N), device="cuda", generator=g) * 2 - 1).to(dtype)
C = torch.empty((M, N), device="cuda", dtype=torch.float32)
flush = torch.empty(256 << 18, device="cuda", dtype=torch.float32)
for _ in range(3):
    k(A, B, C)
torch.cuda.synchronize()
times = []
e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
for r in range(reps):
    flush.fill_(r)
    e0.record()
    k(A, B, C)
    e1.record()
    e1.synchronize()
    times.append(e0.elapsed_time(e1))
times.sort()
ref = A.double() @ B.double()
err = ((C.double() - ref).abs() / (1 + ref.abs())).max().item()
# bad use from PyTorch: a CPU tensor mixed in, a wrong dtype
checks = {}
try:
    k(A.cpu(), B, C)
except ValueError as e:
    checks["mixed_devices"] = str(e)
try:
    k(A.double(), B, C)
except TypeError as e:
    checks["wrong_dtype"] = str(e)
med = times[reps // 2]
print(json.dumps({"kernel": kernel, "M": M, "N": N, "K": K, "median_ms": round(med, 4), "min_ms": round(times[0], 4),
                  "tflops": round(2.0 * M * N * K / med * 1e-9, 2), "worst_rel_error": err, "errors": checks}))
sys.exit(0 if err < (1e-2 if dt == "f16" else 1e-3) and len(checks) == 2 else 2)
