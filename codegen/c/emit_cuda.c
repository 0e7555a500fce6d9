/* The general variant of a library kernel as CUDA C (cg_c.h, "emit_cuda.c").
 *
 * A GPU library must serve the sizes a program meets at run time, but the CUDA back
 * end (codegen/cuda) compiles sizes in.  This file writes the same canonical nest as
 * the C flavour (emit.c: the same expressions, the same f16/bf16 rounding, the same
 * floor division), with the sizes as kernel arguments, for NVRTC.  The mapping is
 * deliberately simple: each top-level node of the nest is one __global__ function;
 * the outermost loops the caller proved parallel become one thread per iteration
 * (a grid-stride loop over their product), and everything below runs in that thread
 * as written, reductions included.  It is a correct fallback, not a tuned kernel.
 *
 * NVRTC has no C headers, so the prelude defines the fixed-width types and the few
 * macros the shared value helpers use; size arithmetic on the device does not check
 * for overflow, because the library checks every shape and every index range on the
 * host (cg_c_emit_range_check) before it launches anything. */
#include "cg_c_int.h"

#include <stdio.h>
#include <string.h>

static const char CUDA_HEAD[] =
    "/* ---- general variant (perfc codegen/c, CUDA flavour) ---- */\n"
    "typedef long long int64_t;\n"
    "typedef unsigned long long uint64_t;\n"
    "typedef int int32_t;\n"
    "typedef unsigned int uint32_t;\n"
    "typedef unsigned short uint16_t;\n"
    "typedef unsigned char uint8_t;\n"
    "#define INT64_C(c) c##LL\n"
    "#define INT64_MAX 9223372036854775807LL\n"
    "#define INT64_MIN (-INT64_MAX - 1)\n"
    "#define INT32_MAX 2147483647\n"
    "#define INT32_MIN (-INT32_MAX - 1)\n"
    "#define INFINITY __int_as_float(0x7f800000)\n"
    "#define NAN __int_as_float(0x7fffffff)\n"
    "#define PF_INL static __device__ __forceinline__\n"
    "PF_INL float pf_u2f(uint32_t x) { return __uint_as_float(x); }\n"
    "PF_INL uint32_t pf_f2u(float f) { return __float_as_uint(f); }\n";

/* Size arithmetic on the device: the host has checked it does not overflow. */
static const char CUDA_SIZES[] =
    "PF_INL int64_t pf_sadd(int64_t a, int64_t b, int *o) { (void)o; return (int64_t)((uint64_t)a + (uint64_t)b); }\n"
    "PF_INL int64_t pf_ssub(int64_t a, int64_t b, int *o) { (void)o; return (int64_t)((uint64_t)a - (uint64_t)b); }\n"
    "PF_INL int64_t pf_smul(int64_t a, int64_t b, int *o) { (void)o; return (int64_t)((uint64_t)a * (uint64_t)b); }\n"
    "PF_INL int64_t pf_sdiv(int64_t a, int64_t b, int *o) { (void)o; return pf_div(a, b); }\n"
    "PF_INL int64_t pf_smod(int64_t a, int64_t b, int *o) { (void)o; return pf_mod(a, b); }\n"
    "PF_INL int64_t pf_sneg(int64_t a, int *o) { (void)o; return (int64_t)(0 - (uint64_t)a); }\n\n";

const Node *cg_c_chain_loop(const Node *top, int depth)
{
    const Node *n = top;
    for (int i = 0; n && i < depth; i++) {
        if (n->kind != N_LOOP || n->u.loop.body.n != 1 || n->u.loop.body.v[0]->kind != N_LOOP)
            return NULL;
        n = n->u.loop.body.v[0];
    }
    return n && n->kind == N_LOOP ? n : NULL;
}

static void params(const Kernel *k, int nchain, StrBuf *o)
{
    for (int i = 0; i < k->nbufs; i++) {
        const Buffer *b = k->bufs[i];
        sb_printf(o, "%s%s%s *__restrict__ b%d", i ? ", " : "", b->kind == BUF_IN ? "const " : "",
                  cg_c_storage_type(b->dtype), i);
    }
    for (int i = 0; i < k->nparams; i++)
        sb_printf(o, "%sconst int64_t pf_p%d", k->nbufs + i ? ", " : "", i);
    for (int j = 0; j < nchain; j++)
        sb_printf(o, ", const int64_t pf_lo%d, const int64_t pf_n%d", j, j);
    sb_puts(o, k->nbufs + k->nparams ? ", const int64_t pf_total" : "const int64_t pf_total");
}

bool cg_c_emit_cuda_general(const Kernel *k, const char *prefix, const int *nchain, StrBuf *out, Diags *d)
{
    CgC g = {.k = k, .d = d, .ok = true, .out = out, .cuda = true};
    sb_puts(out, CUDA_HEAD);
    sb_puts(out, cg_c_values_prelude());
    sb_puts(out, CUDA_SIZES);
    cgc_guard_helpers(&g, prefix);
    for (int t = 0; t < k->body.n && g.ok; t++) {
        const Node *top = k->body.v[t];
        int c = nchain[t];
        const Node *inner = c > 0 ? cg_c_chain_loop(top, c - 1) : NULL;
        if (c < 0 || c > CG_C_GPU_MAX_CHAIN || (c > 0 && !inner)) {
            diag_plain(d, DIAG_ERROR, "perfc lib: node %d of %s has no chain of %d loops to spread over threads", t,
                       k->name, c);
            return false;
        }
        sb_printf(out, "\nextern \"C\" __global__ void __launch_bounds__(%d) %s_p%d(", CG_C_GPU_BLOCK, prefix, t);
        params(k, c, out);
        sb_puts(out, ")\n{\n    int ovf = 0;\n    (void)ovf;\n");
        for (int i = 0; i < k->nparams; i++)
            sb_printf(out, "    (void)pf_p%d;\n", i);
        for (int i = 0; i < k->nbufs; i++)
            sb_printf(out, "    (void)b%d;\n", i);
        if (!cgc_dims(&g, 4))
            return false;
        sb_puts(out, "    for (int64_t pf_t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; pf_t < pf_total;\n"
                     "         pf_t += (int64_t)gridDim.x * blockDim.x) {\n");
        if (c == 0) {
            /* the node in one thread */
            NodeList one = {.v = (Node **)&k->body.v[t], .n = 1, .cap = 1};
            cgc_body_list(&g, &one, 8);
        } else {
            /* the chain's variables from the thread's number, innermost fastest, so
             * neighbouring threads take neighbouring elements of the last index */
            sb_puts(out, "        int64_t pf_r = pf_t;\n");
            for (int j = c - 1; j >= 0; j--) {
                const Node *l = cg_c_chain_loop(top, j);
                if (j)
                    sb_printf(out, "        const int64_t v%d = pf_lo%d + pf_r %% pf_n%d;\n        pf_r /= pf_n%d;\n",
                              l->u.loop.var->id, j, j, j);
                else
                    sb_printf(out, "        const int64_t v%d = pf_lo0 + pf_r;\n", l->u.loop.var->id);
            }
            cgc_body_list(&g, &inner->u.loop.body, 8);
        }
        sb_puts(out, "    }\n}\n");
    }
    cgc_guard_undefs(&g);
    return g.ok;
}
