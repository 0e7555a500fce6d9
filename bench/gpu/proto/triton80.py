"""What a mature compiler's Ampere-style code reaches on this GPU: a Triton GEMM
compiled as sm_80 code (mma.sync, cp.async; TRITON_OVERRIDE_ARCH=sm80 in the
environment) or as native code (wgmma), beside torch.mm (cuBLAS) in the same
process.  The best of a few tile configurations is reported, each checked against
torch.mm first.  Used as the reference for how far perfc's own sm_80 code can go on
an H100 (docs/benchmarks.md, "The suite as sm_80 code").
    TRITON_OVERRIDE_ARCH=sm80 python3 bench/gpu/proto/triton80.py 4096 4096 4096 [nt]
(nt: B stored [N, K], the nn.Linear layout, read through its strides.)
"""
import os
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def mm(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
       BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
    pid = tl.program_id(0)
    nm = tl.cdiv(M, BM)
    nn = tl.cdiv(N, BN)
    # groups of GROUP row tiles walk the columns together, for L2 reuse
    g = pid // (GROUP * nn)
    first = g * GROUP
    rows = min(nm - first, GROUP)
    pm = first + (pid % (GROUP * nn)) % rows
    pn = (pid % (GROUP * nn)) // rows
    om = pm * BM + tl.arange(0, BM)
    on = pn * BN + tl.arange(0, BN)
    ok = tl.arange(0, BK)
    pa = a + om[:, None] * sam + ok[None, :] * sak
    pb = b + ok[:, None] * sbk + on[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        x = tl.load(pa, mask=ok[None, :] < K - k * BK, other=0.0)
        y = tl.load(pb, mask=ok[:, None] < K - k * BK, other=0.0)
        acc = tl.dot(x, y, acc)
        pa += BK * sak
        pb += BK * sbk
    pc = c + om[:, None] * scm + on[None, :] * scn
    tl.store(pc, acc.to(c.dtype.element_ty), mask=(om[:, None] < M) & (on[None, :] < N))


CONFIGS = [(128, 256, 64, 3, 8), (128, 256, 32, 4, 8), (256, 128, 64, 3, 8),
           (128, 128, 64, 4, 4), (128, 128, 32, 4, 4), (64, 256, 64, 4, 4)]


def main():
    m, n, k = (int(v) for v in sys.argv[1:4])
    nt = len(sys.argv) > 4 and sys.argv[4] == "nt"
    arch = os.environ.get("TRITON_OVERRIDE_ARCH", "native") + (" nt" if nt else "")
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    if nt:
        b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16).t()
    else:
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    ref = torch.mm(a, b)
    t_lib = triton.testing.do_bench(lambda: torch.mm(a, b), warmup=50, rep=300)
    best = None
    for bm, bn, bk, st, wp in CONFIGS:
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
        def run():
            return mm[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0),
                            b.stride(1), c.stride(0), c.stride(1), BM=bm, BN=bn, BK=bk,
                            GROUP=8, num_stages=st, num_warps=wp)
        try:
            h = run()
        except Exception as e:  # too much shared memory for this configuration
            print("%s %dx%dx%d st%d w%d: %s" % (arch, bm, bn, bk, st, wp, str(e)[:80]))
            continue
        ptx = h.asm.get("ptx", "")
        kind = "wgmma" if "wgmma" in ptx else ("mma.sync" if "mma.sync" in ptx else "?")
        err = (c.float() - ref.float()).abs().max().item()
        ok = err <= 0.02 * ref.float().abs().max().item()
        t = triton.testing.do_bench(run, warmup=50, rep=300)
        print("%s %dx%dx%d st%d w%d: %s %.4f ms (torch.mm %.4f) ratio %.3f %s" %
              (arch, bm, bn, bk, st, wp, kind, t, t_lib, t_lib / t, "valid" if ok else "WRONG %g" % err))
        if ok and (best is None or t < best[0]):
            best = (t, "%dx%dx%d st%d w%d %s" % (bm, bn, bk, st, wp, kind))
    if best:
        print("BEST %s %dx%dx%d: %.4f ms, torch.mm %.4f ms, ratio %.3f (%s)" %
              (arch, m, n, k, best[0], t_lib, t_lib / best[0], best[1]))


if __name__ == "__main__":
    main()
