/* Block-wide scans in CUDA C: the translation of a thread.x loop that pass
 * gpu-scan (passes/gpu_scan.c) marked, holding
 *     for j in 0..K unroll:  [if c < C:]  acc op= v  block-scan;  Y[..c..] = acc
 * with c = (tile*T + t)*K + j.  Each thread runs its K consecutive elements: it
 * folds them in a register array (its running values), a block-wide exclusive
 * scan of the threads' totals gives the part of the tile before it (pf_block_scan:
 * an inclusive warp scan with __shfl_up_sync, the warps' totals through 32
 * elements of shared memory, scanned by warp 0, then each warp's prefix added),
 * and each element is stored as acc (the carry of the earlier tiles) op that
 * prefix op its running value.  Every thread then adds the tile's total to its own
 * acc, so the carry never goes through memory.  The block is 1-D with a multiple
 * of 32 threads (the pass makes it so).  emit.c prints the pieces (names,
 * expressions, lvalues); this file only arranges them. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "emit_scan.h"

static void put(StrBuf *o, int ind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void put(StrBuf *o, int ind, const char *fmt, ...)
{
    for (int i = 0; i < ind; i++) sb_puts(o, "    ");
    va_list ap;
    va_start(ap, fmt);
    char buf[4096];
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof buf) {
        /* a long expression: print it again into a buffer of its size */
        char *big = xmalloc((size_t)n + 1);
        va_start(ap, fmt);
        vsnprintf(big, (size_t)n + 1, fmt, ap);
        va_end(ap);
        sb_puts(o, big);
        free(big);
    } else {
        sb_puts(o, buf);
    }
    sb_putc(o, '\n');
}

void cg_cuda_scan_helpers(StrBuf *o)
{
    sb_puts(o,
        "/* Block-wide scans (pass gpu-scan): OP 0 sum, 1 product, 2 max, 3 min, in float, double or int. */\n"
        "static __device__ __forceinline__ float pf_smax(float a, float b) { return fmaxf(a, b); }\n"
        "static __device__ __forceinline__ double pf_smax(double a, double b) { return fmax(a, b); }\n"
        "static __device__ __forceinline__ int pf_smax(int a, int b) { return max(a, b); }\n"
        "static __device__ __forceinline__ float pf_smin(float a, float b) { return fminf(a, b); }\n"
        "static __device__ __forceinline__ double pf_smin(double a, double b) { return fmin(a, b); }\n"
        "static __device__ __forceinline__ int pf_smin(int a, int b) { return min(a, b); }\n"
        "template <int OP, typename T> static __device__ __forceinline__ T pf_sop(T a, T b) {\n"
        "    return OP == 0 ? a + b : OP == 1 ? a * b : OP == 2 ? pf_smax(a, b) : pf_smin(a, b);\n"
        "}\n"
        "/* The exclusive scan of v over the block's threads in order (identity id for thread 0); *total gets\n"
        " * every thread's v combined.  Called by all threads of a 1-D block of whole warps. */\n"
        "template <int OP, typename T> static __device__ T pf_block_scan(T v, T id, T *total) {\n"
        "    __shared__ T pf_scan_sm[32];\n"
        "    const int l = (int)threadIdx.x & 31, w = (int)threadIdx.x >> 5, nw = ((int)blockDim.x + 31) >> 5;\n"
        "    T x = v;   /* inclusive scan within the warp */\n"
        "    for (int d = 1; d < 32; d <<= 1) {\n"
        "        T y = __shfl_up_sync(0xffffffffu, x, d);\n"
        "        if (l >= d) x = pf_sop<OP>(y, x);\n"
        "    }\n"
        "    __syncthreads();   /* the previous scan's readers of pf_scan_sm are done */\n"
        "    if (l == 31) pf_scan_sm[w] = x;\n"
        "    __syncthreads();\n"
        "    if (w == 0) {   /* warp 0 scans the warps' totals */\n"
        "        T s = l < nw ? pf_scan_sm[l] : id;\n"
        "        for (int d = 1; d < 32; d <<= 1) {\n"
        "            T y = __shfl_up_sync(0xffffffffu, s, d);\n"
        "            if (l >= d) s = pf_sop<OP>(y, s);\n"
        "        }\n"
        "        pf_scan_sm[l] = s;\n"
        "    }\n"
        "    __syncthreads();\n"
        "    *total = pf_scan_sm[nw - 1];\n"
        "    T before = __shfl_up_sync(0xffffffffu, x, 1);\n"
        "    if (l == 0) before = id;\n"
        "    return w == 0 ? before : pf_sop<OP>(pf_scan_sm[w - 1], before);\n"
        "}\n\n");
}

static const char *identity(DType t, StmtOp op)
{
    switch (t) {
    case DT_F64:
        return op == SOP_ADD ? "0.0" : op == SOP_MUL ? "1.0"
             : op == SOP_MAX ? "(-__longlong_as_double(0x7ff0000000000000LL))"
                             : "__longlong_as_double(0x7ff0000000000000LL)";
    case DT_I32:
        return op == SOP_ADD ? "0" : op == SOP_MUL ? "1" : op == SOP_MAX ? "(-2147483647 - 1)" : "2147483647";
    default:
        return op == SOP_ADD ? "0.0f" : op == SOP_MUL ? "1.0f"
             : op == SOP_MAX ? "(-__int_as_float(0x7f800000))" : "__int_as_float(0x7f800000)";
    }
}

void cg_cuda_scan_text(const CgScanText *s, StrBuf *o, int ind)
{
    static const int opn[] = {[SOP_ADD] = 0, [SOP_MUL] = 1, [SOP_MAX] = 2, [SOP_MIN] = 3};
    const char *ct = s->ct == DT_F64 ? "double" : s->ct == DT_I32 ? "int" : "float";
    const char *id = identity(s->ct, s->op);
    int op = opn[s->op];
    put(o, ind, "{   /* %s: thread.x, a block-wide scan: %" PRId64 " consecutive elements per thread */", s->tvar,
        s->k);
    ind++;
    put(o, ind, "const idx_t %s = (idx_t)threadIdx.x;", s->tvar);
    put(o, ind, "%s pf_sv[%" PRId64 "];   /* this thread's running values */", ct, s->k);
    put(o, ind, "%s pf_ss = %s;", ct, id);
    put(o, ind, "#pragma unroll");
    put(o, ind, "for (idx_t %s = 0; %s < %" PRId64 "; ++%s) {", s->jvar, s->jvar, s->k, s->jvar);
    put(o, ind + 1, "%s pf_x = %s;", ct, id);
    if (s->guard)
        put(o, ind + 1, "if (%s) pf_x = %s;", s->guard, s->value);
    else
        put(o, ind + 1, "pf_x = %s;", s->value);
    put(o, ind + 1, "pf_ss = pf_sop<%d>(pf_ss, pf_x);", op);
    put(o, ind + 1, "pf_sv[%s] = pf_ss;", s->jvar);
    put(o, ind, "}");
    put(o, ind, "%s pf_stot;   /* the tile's total */", ct);
    put(o, ind, "const %s pf_sbefore = pf_sop<%d>(%s, pf_block_scan<%d>(pf_ss, (%s)%s, &pf_stot));", ct, op, s->acc,
        op, ct, id);
    put(o, ind, "#pragma unroll");
    put(o, ind, "for (idx_t %s = 0; %s < %" PRId64 "; ++%s) {", s->jvar, s->jvar, s->k, s->jvar);
    const char *pre = s->guard ? "if (" : "";
    if (s->guard)
        put(o, ind + 1, "%s%s) %s = %s%spf_sop<%d>(pf_sbefore, pf_sv[%s])%s;", pre, s->guard, s->store,
            s->conv ? s->conv : "", s->conv ? "(" : "", op, s->jvar, s->conv ? ")" : "");
    else
        put(o, ind + 1, "%s = %s%spf_sop<%d>(pf_sbefore, pf_sv[%s])%s;", s->store, s->conv ? s->conv : "",
            s->conv ? "(" : "", op, s->jvar, s->conv ? ")" : "");
    put(o, ind, "}");
    put(o, ind, "%s = pf_sop<%d>(%s, pf_stot);", s->acc, op, s->acc);
    ind--;
    put(o, ind, "}");
}
