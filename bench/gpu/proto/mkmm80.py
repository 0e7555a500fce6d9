#!/usr/bin/env python3
"""Hand-written variants of the sm_80 (mma.sync) GEMM main loop, for measuring what
the template's code lacks before the emitter or the passes are changed.

Reads the CUDA perfc generates for bench/gpu/contractions/mm.pdl (bf16 -> f32,
4096^3) at -target sm_80 with the default schedule (128 x 128 x 32 tiles, four warps
of 64 x 64, ST stages) and writes a copy whose kernel body is replaced by one of:
  plain  the same loop with addresses computed once (a shared-memory base per
         operand, one add per stage) and B's fragments read two at a time
         (ldmatrix .x4 .trans)
  dbuf   plain, and the fragments of the next 16-deep slice read while the current
         slice's products issue (two register buffers; the first slice of the next
         stage read right after the barrier)
Options after a +: x2 (B's fragments one at a time, .x2 .trans), gencopy (the copies
written as the generated code writes them), gencopyg (only their global addresses so), noserp (products in row order).
The launch shape and shared-memory size are the generated code's, so perfc --run with
PERFC_CUDA_SOURCE validates and times the variant in place of the generated kernel.
    mkmm80.py IN.cu OUT.cu VARIANT [ST]
"""
import re
import sys

BODY = r'''extern "C" __global__ void __launch_bounds__(@THREADS@) mm_0(const pf_bf16 *__restrict__ A, const pf_bf16 *__restrict__ B, float *__restrict__ C)
{
    constexpr int N = 4096, K = 4096, ST = @ST@, BK = @BK@, BN = @BN@, WY = @WY@, T = 64 * WY, KT = K / BK;
    constexpr int SA = BK + 8, SBN = BN + 8;   /* padded row lengths in shared memory */
    constexpr unsigned A_ST = 128 * SA * 2, B_ST = BK * SBN * 2, B_OFF = ST * A_ST;
    constexpr int AU = 128 * BK / 8 / T, BU = BK * BN / 8 / T;   /* 16-byte copies a thread a stage */
    extern __shared__ __align__(16) unsigned char pf_smem[];
    const unsigned sb = pf_saddr(pf_smem);
    const int lane = threadIdx.x, wy = threadIdx.y, wz = threadIdx.z;
    const int jo = blockIdx.x, io = blockIdx.y;
    float acc[4][8][4];
    #pragma unroll
    for (int i = 0; i < 4; ++i)
        #pragma unroll
        for (int j = 0; j < 8; ++j)
            #pragma unroll
            for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.0f;
    /* this thread's 16-byte copies of A and of B a stage: consecutive threads along a row */
    const int tid = lane + 32 * (wy + WY * wz);
    const int ar = tid / (BK / 8), ac = (tid % (BK / 8)) * 8;
    const pf_bf16 *ga = A + (size_t)(io * 128 + ar) * K + ac;
    const unsigned sa = sb + (unsigned)(ar * SA + ac) * 2u;
    const int br = tid / (BN / 8), bc = (tid % (BN / 8)) * 8;
    const pf_bf16 *gb = B + (size_t)br * N + jo * BN + bc;
    const unsigned sbb = sb + B_OFF + (unsigned)(br * SBN + bc) * 2u;
    /* this lane's ldmatrix rows: A 16 x 16 (x4), B two 16 x 8 (x4 .trans) */
    const unsigned fa = sb + 2u * (unsigned)((wz * 64 + (lane & 15)) * SA + 8 * (lane >> 4));
    const unsigned fb = sb + B_OFF + 2u * (unsigned)((lane & 15) * SBN + wy * 64 + 8 * (lane >> 4));
    const unsigned fb2 = sb + B_OFF + 2u * (unsigned)((lane & 15) * SBN + wy * 64);   /* .x2: lanes 0-15 */
    auto load = [&](int ko) {
        const unsigned s = (unsigned)(ko % ST);
#if PF_GENCOPYG   /* shared side as here, global side as the generated code writes it */
        #pragma unroll
        for (int u = 0; u < AU; ++u)
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(sa + s * A_ST + u * (T / (BK / 8)) * SA * 2u), "l"(&A[(io * 128 + ar + u * (T / (BK / 8))) * K + ko * BK + ac]) : "memory");
        #pragma unroll
        for (int u = 0; u < BU; ++u)
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(sbb + s * B_ST + u * (T / (BN / 8)) * SBN * 2u), "l"(&B[(ko * BK + br + u * (T / (BN / 8))) * N + jo * BN + bc]) : "memory");
        return;
#endif
#if PF_GENCOPY   /* the generated code's copies: typed shared arrays, int index arithmetic */
        pf_bf16 (*As)[128][SA] = reinterpret_cast<pf_bf16 (*)[128][SA]>(pf_smem);
        pf_bf16 (*Bs)[BK][SBN] = reinterpret_cast<pf_bf16 (*)[BK][SBN]>(pf_smem + B_OFF);
        #pragma unroll
        for (int u = 0; u < AU; ++u)
            pf_cp_async16(&As[(int)s][ar + u * (T / (BK / 8))][ac], &A[(io * 128 + ar + u * (T / (BK / 8))) * K + ko * BK + ac]);
        #pragma unroll
        for (int u = 0; u < BU; ++u)
            pf_cp_async16(&Bs[(int)s][br + u * (T / (BN / 8))][bc], &B[(ko * BK + br + u * (T / (BN / 8))) * N + jo * BN + bc]);
        return;
#endif
        #pragma unroll
        for (int u = 0; u < AU; ++u)
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(sa + s * A_ST + u * (T / (BK / 8)) * SA * 2u), "l"(ga + ko * BK + (size_t)u * (T / (BK / 8)) * K) : "memory");
        #pragma unroll
        for (int u = 0; u < BU; ++u)
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(sbb + s * B_ST + u * (T / (BN / 8)) * SBN * 2u), "l"(gb + (size_t)(ko * BK + u * (T / (BN / 8))) * N) : "memory");
    };
    auto frags = [&](unsigned (&a)[4][4], unsigned (&b)[8][2], int ko, int ks) {
        const unsigned s = (unsigned)(ko % ST);
        #pragma unroll
        for (int mi = 0; mi < 4; ++mi) pf_ldsm_x4(a[mi], fa + s * A_ST + 2u * (unsigned)(mi * 16 * SA + ks * 16));
#if PF_X2
        #pragma unroll
        for (int nj = 0; nj < 8; ++nj)
            pf_ldsm_x2_t(b[nj], fb2 + s * B_ST + 2u * (unsigned)(ks * 16 * SBN + nj * 8));
        return;
#endif
        #pragma unroll
        for (int p = 0; p < 4; ++p) {
            unsigned q[4];
            pf_ldsm_x4_t(q, fb + s * B_ST + 2u * (unsigned)(ks * 16 * SBN + p * 16));
            b[2 * p][0] = q[0]; b[2 * p][1] = q[1]; b[2 * p + 1][0] = q[2]; b[2 * p + 1][1] = q[3];
        }
    };
    auto mma = [&](unsigned (&a)[4][4], unsigned (&b)[8][2]) {
        #pragma unroll
        for (int mi = 0; mi < 4; ++mi)
            #pragma unroll
            for (int nj = 0; nj < 8; ++nj) {
#if PF_NOSERP
                pf_mma_bf16(acc[mi][nj], a[mi], b[nj]);
#else
                pf_mma_bf16(acc[mi][(mi & 1) ? 7 - nj : nj], a[mi], b[(mi & 1) ? 7 - nj : nj]);
#endif
            }
    };
    #pragma unroll
    for (int p = 0; p < ST - 1; ++p) { if (p < KT) load(p); pf_cp_commit(); }
@LOOP@
    pf_cp_wait<0>();
    #pragma unroll
    for (int mi = 0; mi < 4; ++mi)
        #pragma unroll
        for (int nj = 0; nj < 8; ++nj) {
            const int r = io * 128 + wz * 64 + mi * 16 + (lane >> 2), c = jo * BN + wy * 64 + nj * 8 + 2 * (lane & 3);
            *reinterpret_cast<float2 *>(&C[(size_t)r * N + c]) = make_float2(acc[mi][nj][0], acc[mi][nj][1]);
            *reinterpret_cast<float2 *>(&C[(size_t)(r + 8) * N + c]) = make_float2(acc[mi][nj][2], acc[mi][nj][3]);
        }
}
'''

PLAIN = r'''    unsigned a[4][4], b[8][2];
    for (int ko = 0; ko < KT; ++ko) {
        pf_cp_wait<ST - 2>();
        __syncthreads();
        if (ko + ST - 1 < KT) load(ko + ST - 1);
        pf_cp_commit();
        #pragma unroll
        for (int ks = 0; ks < BK / 16; ++ks) { frags(a, b, ko, ks); mma(a, b); }
    }'''

DBUF = r'''    unsigned a0[4][4], b0[8][2], a1[4][4], b1[8][2];
    pf_cp_wait<ST - 2>();
    __syncthreads();
    frags(a0, b0, 0, 0);
    for (int ko = 0; ko < KT; ++ko) {
        #pragma unroll
        for (int ks = 0; ks + 2 < BK / 16; ks += 2) {   /* K steps of 64: the slices before the last two */
            frags(a1, b1, ko, ks + 1);
            if (ks == 0) { if (ko + ST - 1 < KT) load(ko + ST - 1); pf_cp_commit(); }
            mma(a0, b0);
            frags(a0, b0, ko, ks + 2);
            mma(a1, b1);
        }
        frags(a1, b1, ko, BK / 16 - 1);
        if (BK == 32) { if (ko + ST - 1 < KT) load(ko + ST - 1); pf_cp_commit(); }   /* the stage read in ko - 1: every warp passed the barrier after its reads */
        mma(a0, b0);
        pf_cp_wait<ST - 2>();
        __syncthreads();   /* stage ko + 1 has landed for every thread */
        if (ko + 1 < KT) frags(a0, b0, ko + 1, 0);
        mma(a1, b1);
    }'''


def main():
    src, dst, variant = sys.argv[1], sys.argv[2], sys.argv[3]
    bk = int(sys.argv[4]) if len(sys.argv) > 4 else 32
    text = open(src).read()
    start = text.index('extern "C" __global__')
    end = text.index("/* Launches")
    m = re.search(r"mm_0 +\((\d+), (\d+), 1\) +\((\d+), (\d+), (\d+)\) +(\d+)", text[end:])
    gx, gy, bx, wy, wz, smem = map(int, m.groups())
    assert gy == 32 and bx == 32 and wz == 2 and gx * 4096 // 4096 in (16, 32), "not a 128-row template"
    bn = 4096 // gx
    stage = (128 * (bk + 8) + bk * (bn + 8)) * 2
    st = smem // stage   # as many stages as the generated kernel's shared memory holds
    assert st >= 2, "too little shared memory for K steps of %d" % bk
    base, *opts = variant.split("+")
    defs = "".join("#define PF_%s 1\n" % o.upper() for o in opts)
    body = defs + (BODY.replace("@ST@", str(st)).replace("@BK@", str(bk)).replace("@BN@", str(bn))
            .replace("@WY@", str(wy)).replace("@THREADS@", str(64 * wy)).replace("@LOOP@", {"plain": PLAIN, "dbuf": DBUF}[base]))
    open(dst, "w").write(text[:start] + body + "\n" + text[end:])
    print("%s: 128 x %d x %d tiles, %d warps, %d stages" % (dst, bn, bk, 2 * wy, st))


if __name__ == "__main__":
    main()
