"""torch's scaled_dot_product_attention for the rows of bench/gpu/attention.sh, timed
the way perfc's harness times a kernel (bench/gpu/torch_matmul.py's time_ms: L2
flushed, the GPU woken, CUDA events around the call, the median).  SDPA's default
backend picks the kernel (flash or cuDNN on an H100).  One JSON line per row:
  python3 bench/gpu/attention.py B:HQ:HKV:SQ:SKV:D:DT[:causal][:bthd][:bias] ...
bthd: the tensors live batch-first, [B, S, H, D], and SDPA gets them as transposed
views (what model code passes it; its flash and cuDNN kernels take the strides).
bias: a float mask of [1, HQ, SQ, SKV] added to the scores (attn_mask)."""
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
    causal = "causal" in p[7:]
    if "bthd" in p[7:]:
        q = torch.randn(b, sq, hq, d, device="cuda").to(t).transpose(1, 2)
        k = torch.randn(b, skv, hkv, d, device="cuda").to(t).transpose(1, 2)
        v = torch.randn(b, skv, hkv, d, device="cuda").to(t).transpose(1, 2)
    else:
        q = torch.randn(b, hq, sq, d, device="cuda").to(t)
        k = torch.randn(b, hkv, skv, d, device="cuda").to(t)
        v = torch.randn(b, hkv, skv, d, device="cuda").to(t)
    gqa = hq != hkv
    if "bias" in p[7:]:  # a float bias on the scores, one [S, S] a head (broadcast over the batch)
        bias = torch.randn(1, hq, sq, skv, device="cuda").to(t)
        return {"spec": spec, "ms": time_ms(lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=bias))}
    fn = (lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)) if gqa else \
        (lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
    return {"spec": spec, "ms": time_ms(fn)}


if __name__ == "__main__":
    for s in sys.argv[1:]:
        print(json.dumps(row(s)), flush=True)
