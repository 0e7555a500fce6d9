"""torch's scaled_dot_product_attention for the rows of bench/gpu/attention.sh, timed
the way perfc's harness times a kernel (bench/gpu/torch_matmul.py's time_ms: L2
flushed, the GPU woken, CUDA events around the call, the median).  SDPA's default
backend picks the kernel (flash or cuDNN on an H100).  One JSON line per row:
  python3 bench/gpu/attention.py B:HQ:HKV:SQ:SKV:D:DT[:causal] ..."""
import json
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from torch_matmul import DT, time_ms  # noqa: E402


def row(spec):
    p = spec.split(":")
    b, hq, hkv, sq, skv, d = (int(x) for x in p[:6])
    t = DT[p[6]]
    causal = len(p) > 7 and p[7] == "causal"
    q = torch.randn(b, hq, sq, d, device="cuda").to(t)
    k = torch.randn(b, hkv, skv, d, device="cuda").to(t)
    v = torch.randn(b, hkv, skv, d, device="cuda").to(t)
    gqa = hq != hkv
    fn = (lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)) if gqa else \
        (lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
    return {"spec": spec, "ms": time_ms(fn)}


if __name__ == "__main__":
    for s in sys.argv[1:]:
        print(json.dumps(row(s)), flush=True)
