"""Times a kernel of a perfc-generated library on PyTorch CUDA tensors (bench/gpu/lib_gemm.sh).

    lib_gemm_torch.py LIB.so KERNEL f32|f16 M N K REPS

Calls lib.KERNEL(A, B, C) through python/perfc on PyTorch's current stream and times it
exactly as `perfc --run` times a kernel (runtime/cuda_device.c, time_once): wait for
the GPU, queue about 1.5 ms of writes of twice the L2 (cuMemsetD32Async on the same
stream: the L2 is flushed and the GPU is at full clocks when the kernel starts), record
the start event, call, record the end event, wait; 3 such runs first as warm-up.
Because the writes are queued and not waited for, the host-side cost of the call
(Python, ctypes, the library's checks) overlaps them and is not timed.

For comparison it also times the way this script did before ("gap" timing): one
256 MiB fill, then start event, call, end event.  There the GPU drains the fill and
waits, idle and clocking down, while Python prepares the call, and the wait is
counted.  host_us is the host-side time of one call.  Prints one JSON line; checks C
against torch.matmul in float64 and checks two bad calls raise clear errors.
"""
import ctypes
import json
import math
import sys
import time

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

# the flush of perfc's harness: 2 x L2, written ceil(1.5 ms x peak bandwidth / size) times
cu = ctypes.CDLL("libcuda.so.1")
dev = torch.cuda.current_device()


def attr(a):
    v = ctypes.c_int(0)
    return v.value if cu.cuDeviceGetAttribute(ctypes.byref(v), a, dev) == 0 else 0


l2, mem_khz, bus_bits = attr(38), attr(36), attr(37)  # L2_CACHE_SIZE, MEMORY_CLOCK_RATE, GLOBAL_MEMORY_BUS_WIDTH
flush_bytes = 2 * (l2 if l2 > 0 else 64 << 20)
bw = 2.0 * mem_khz * 1e3 * (bus_bits / 8.0)
wake = min(512, max(1, math.ceil(1.5e-3 * bw / flush_bytes))) if bw > 0 else 64
flush = torch.empty(flush_bytes // 4, device="cuda", dtype=torch.int32)
memset = cu.cuMemsetD32Async
memset.argtypes = [ctypes.c_uint64, ctypes.c_uint, ctypes.c_size_t, ctypes.c_void_p]
memset.restype = ctypes.c_int
stream = torch.cuda.current_stream().cuda_stream  # the stream the library launches on


def queue_flush():
    for i in range(wake):
        if memset(flush.data_ptr(), 0x3F800000 + i, flush_bytes // 4, stream) != 0:
            raise RuntimeError("cuMemsetD32Async failed")


e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)


def time_once():
    torch.cuda.synchronize()
    queue_flush()
    e0.record()
    k(A, B, C)
    e1.record()
    e1.synchronize()
    return e0.elapsed_time(e1)


def time_gap(r):
    flush[: (256 << 18)].fill_(r)
    e0.record()
    k(A, B, C)
    e1.record()
    e1.synchronize()
    return e0.elapsed_time(e1)


for _ in range(3):
    time_once()
times = sorted(time_once() for _ in range(reps))
gap = sorted(time_gap(r) for r in range(reps))
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(20):
    k(A, B, C)
host_us = (time.perf_counter() - t0) / 20 * 1e6
torch.cuda.synchronize()
ref = A.double() @ B.double()
err = ((C.double() - ref).abs() / (1 + ref.abs())).max().item()
# bad use from PyTorch: a CPU tensor mixed in, a wrong dtype, a wrong shape
checks = {}
try:
    k(A.cpu(), B, C)
except ValueError as e:
    checks["mixed_devices"] = str(e)
try:
    k(A.double(), B, C)
except TypeError as e:
    checks["wrong_dtype"] = str(e)
try:
    k(A, B, C[:-1])
except ValueError as e:
    checks["wrong_shape"] = str(e)
med = times[reps // 2]
print(json.dumps({"kernel": kernel, "M": M, "N": N, "K": K, "median_ms": round(med, 4), "min_ms": round(times[0], 4),
                  "gap_timing_median_ms": round(gap[reps // 2], 4), "host_us_per_call": round(host_us, 1),
                  "flush_writes": wake, "flush_bytes": flush_bytes,
                  "tflops": round(2.0 * M * N * K / med * 1e-9, 2), "worst_rel_error": err, "errors": checks}))
sys.exit(0 if err < (1e-2 if dt == "f16" else 1e-3) and len(checks) == 3 else 2)
