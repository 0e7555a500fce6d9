"""Times torch's matrix product the way perfc's harness times a kernel: the L2
flushed (a write of twice its size, after about 1.5 ms of other writes that bring
the clocks of an idle GPU back) and queued ahead of the start event, CUDA events
around the product alone, the median of many repetitions.  Prints one JSON line per
shape: torch's time with the output dtype perfc's baseline produces (out_dtype where
torch has it) and with torch's default output dtype.  Used by bench/gpu/baseline.sh to
check that perfc's cuBLAS baseline is the library at its best."""
import json
import math
import sys

import torch

DT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def time_ms(fn, reps=60, wake=True):
    """wake=True: perfc's method, about 1.5 ms of writes to the flush buffer ahead
    of the flush (the GPU idles between repetitions while perfc checks the last
    one); wake=False: back to back, as triton's do_bench times."""
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(2 * l2 // 4, dtype=torch.float32, device="cuda")
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):
        fn()
    e0.record()
    flush.fill_(1.0)
    e1.record()
    e1.synchronize()
    writes = max(1, math.ceil(1.5 / max(e0.elapsed_time(e1), 1e-3))) if wake else 0
    v = []
    for _ in range(reps):
        torch.cuda.synchronize()
        for _ in range(writes):
            flush.fill_(2.0)
        flush.fill_(1.0)
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        v.append(e0.elapsed_time(e1))
    v.sort()
    return v[len(v) // 2]


def main():
    for spec in sys.argv[1:]:   # ab:cd:M:N:K
        ab, cd, m, n, k = spec.split(":")
        m, n, k = int(m), int(n), int(k)
        a = torch.randn(m, k, device="cuda").to(DT[ab])
        b = torch.randn(k, n, device="cuda").to(DT[ab])
        row = {"spec": spec, "torch_default_ms": time_ms(lambda: torch.matmul(a, b)),
               "torch_default_b2b_ms": time_ms(lambda: torch.matmul(a, b), wake=False)}
        if cd != ab:
            try:
                row["torch_out_dtype_ms"] = time_ms(lambda: torch.mm(a, b, out_dtype=DT[cd]))
            except (TypeError, RuntimeError) as e:
                row["torch_out_dtype_ms"] = None
                row["note"] = "torch.mm(out_dtype=) unavailable: %s" % str(e).splitlines()[0][:120]
        else:
            row["torch_out_dtype_ms"] = row["torch_default_ms"]
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    torch.backends.cuda.matmul.allow_tf32 = False
    main()
