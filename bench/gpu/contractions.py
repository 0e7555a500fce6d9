"""The library's time for each kernel of the contraction suite (bench/gpu/contractions.sh),
timed the way perfc's harness times a kernel (bench/gpu/torch_matmul.py's time_ms: L2
flushed, the GPU woken, CUDA events around the call, the median): torch's call for the
same product with the same layouts and dtypes, which is cuBLASLt (matmul, linear,
bmm), and for an epilogue the faster of cuBLASLt's fused bias+GELU
(torch._addmm_activation) and linear followed by torch's GELU.  One JSON line per row:
  python3 bench/gpu/contractions.py KIND:M:N:K[:B] ...
KIND: mm-T-U (A[M,K]·B[K,N], operands T, result U), tn-T (Aᵀ stored [K,M]), linear-T
(X·Wᵀ, W stored [N,K]), lingelu-T (linear + bias + GELU), bmm-T (batch B)."""
import json
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from torch_matmul import DT, time_ms  # noqa: E402


def best(fns):
    times = {}
    for name, fn in fns.items():
        try:
            times[name] = time_ms(fn)
        except (RuntimeError, TypeError) as e:
            times[name] = None
            print("# %s: %s" % (name, str(e).splitlines()[0][:160]), file=sys.stderr)
    ok = {k: v for k, v in times.items() if v}
    name = min(ok, key=ok.get) if ok else None
    return name, (ok[name] if name else None), times


def row(spec):
    p = spec.split(":")
    kind, m, n, k = p[0], int(p[1]), int(p[2]), int(p[3])
    bsz = int(p[4]) if len(p) > 4 else 1
    parts = kind.split("-")
    t = DT[parts[1]]
    u = DT[parts[2]] if len(parts) > 2 else t
    dev = "cuda"
    if parts[0] == "mm":
        a, b = torch.randn(m, k, device=dev).to(t), torch.randn(k, n, device=dev).to(t)
        fns = {"torch.mm": lambda: torch.mm(a, b)} if u == t else {
            "torch.mm(out_dtype)": lambda: torch.mm(a, b, out_dtype=u)}
    elif parts[0] == "tn":
        a, b = torch.randn(k, m, device=dev).to(t), torch.randn(k, n, device=dev).to(t)
        fns = {"torch.mm(A.t(), B)": lambda: torch.mm(a.t(), b)}
    elif parts[0] == "linear":
        x, w = torch.randn(m, k, device=dev).to(t), torch.randn(n, k, device=dev).to(t)
        fns = {"F.linear": lambda: F.linear(x, w)}
    elif parts[0] == "lingelu":
        x, w = torch.randn(m, k, device=dev).to(t), torch.randn(n, k, device=dev).to(t)
        bias = torch.randn(n, device=dev).to(t)
        fns = {"torch._addmm_activation(gelu)": lambda: torch._addmm_activation(bias, x, w.t(), use_gelu=True),
               "F.gelu(F.linear)": lambda: F.gelu(F.linear(x, w, bias))}
    elif parts[0] == "swiglu":
        x = torch.randn(m, k, device=dev).to(t)
        w1, w3 = torch.randn(n, k, device=dev).to(t), torch.randn(n, k, device=dev).to(t)
        fns = {"F.silu(F.linear(x, w1)) * F.linear(x, w3)": lambda: F.silu(F.linear(x, w1)) * F.linear(x, w3)}
    elif parts[0] == "scores":
        # q @ k^T per (batch, head): M = N = the length, K the head size, p[4] batches, p[5] heads
        heads = int(p[5]) if len(p) > 5 else 1
        q = torch.randn(bsz, heads, m, k, device=dev).to(t)
        kk = torch.randn(bsz, heads, n, k, device=dev).to(t)
        fns = {"torch.matmul(q, k.transpose(-1, -2))": lambda: torch.matmul(q, kk.transpose(-1, -2))}
    elif parts[0] == "bmm":
        a, b = torch.randn(bsz, m, k, device=dev).to(t), torch.randn(bsz, k, n, device=dev).to(t)
        fns = {"torch.bmm": lambda: torch.bmm(a, b)}
    else:
        raise SystemExit("unknown kind " + kind)
    name, ms, times = best(fns)
    print(json.dumps({"spec": spec, "call": name, "ms": ms, "all": times}), flush=True)


if __name__ == "__main__":
    torch.backends.cuda.matmul.allow_tf32 = False
    for s in sys.argv[1:]:
        row(s)
