/* The general GPU variant of a `perfc lib` kernel: correct for every size.
 *
 * GPU code from the CUDA back end serves the sizes it was compiled for.  For every
 * other call, each exported kernel also gets its canonical loop nest (sizes unbound,
 * no schedule) written as CUDA C with the sizes as kernel arguments (codegen/c,
 * CUDA flavour) and compiled by NVRTC for every architecture of the library, beside
 * the specialised code.  Each top-level node of the nest is one launch, in order on
 * the caller's stream; the outermost loops of a node that the dependence analysis
 * proves parallel (as it would for `parallel(loop)`, one loop at a time: two loops
 * each free of carried dependences may run all their iterations at once) become one
 * thread per iteration, and the rest of the node runs sequentially in that thread.
 * GEMM's i and j are threads and k a loop in each; softmax's row loops are threads.
 *
 * The generated host code checks the sizes exactly as the CPU's general variant does
 * (every shape, then the range of every index of every access, by interval
 * arithmetic on the host: cg_c_emit_range_check) before anything is launched, so a
 * size that does not fit is PERFC_LIB_ERANGE and never a wild access on the GPU.
 * Temporaries (softmax's row maxima) get their size only at the call: they are
 * allocated stream-ordered (cuMemAllocAsync) and freed the same way after the last
 * launch, so no call waits for the GPU. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/c/cg_c.h"
#include "lib.h"

#define GEN_NAME "pfg" /* function names inside each general module: pfg_p0, pfg_p1, ... */

static void note(const LibKernel *lk, const char *why, Diags *d)
{
    fprintf(stderr, "perfc lib: note: %s has no general GPU variant (%s); its GPU code serves only the sizes it was "
                    "built for:\n", lk->name, why);
    diag_flush(d, stderr);
}

/* How many of the outermost loops of top-level node `top` run as threads. */
static int chain_length(Program *p, AstKernel *ak, Kernel *k, const Node *top, Arena *a)
{
    /* parallel() may count a local staging buffer as private to each thread; here
     * every buffer is one global array, so that would be a race.  The canonical nest
     * has none (lowering makes every buffer global): refuse threads if it ever does. */
    for (int b = 0; b < k->nbufs; b++)
        if (k->bufs[b]->mem != MEM_GLOBAL)
            return 0;
    int n = 0;
    for (int depth = 0; depth < CG_C_GPU_MAX_CHAIN; depth++) {
        const Node *l = cg_c_chain_loop(top, depth);
        if (!l)
            break;
        /* bounds the host can compute from the sizes alone: a rectangular chain */
        StrBuf t = {0};
        bool sized = cg_c_size_expr(k, l->u.loop.lo, &t) && cg_c_size_expr(k, l->u.loop.hi, &t);
        sb_free(&t);
        if (!sized || !lib_loop_parallel(p, ak, l->u.loop.var->name, a))
            break;
        n = depth + 1;
    }
    return n;
}

void lib_cuda_general(Lib *L, LibKernel *lk, Program *p, AstKernel *ak)
{
    GpuGeneral *gg = &lk->ggen;
    Diags d;
    diag_init(&d);
    Kernel *k = lib_lower_unbound(p, ak, &d);
    if (!k || d.nerrors || k->nbufs != lk->gen->nbufs || k->nparams != lk->gen->nparams) {
        note(lk, "its nest could not be lowered", &d);
        if (k)
            ir_free(k);
        diag_free(&d);
        return;
    }
    int *nchain = xcalloc((size_t)k->body.n + 1, sizeof(int));
    for (int t = 0; t < k->body.n; t++)
        nchain[t] = chain_length(p, ak, k, k->body.v[t], L->arena);
    StrBuf src = {0};
    bool any = false;
    if (cg_c_emit_cuda_general(k, GEN_NAME, nchain, &src, &d)) {
        if (L->o->keep) { /* --keep: the CUDA C beside the library's C file */
            char file[300];
            snprintf(file, sizeof file, "%s/%s_general.cu", L->tmp, lk->name);
            FILE *f = fopen(file, "w");
            if (f) {
                fputs(src.s, f);
                fclose(f);
            }
        }
        for (int g = 0; g < L->ngpu; g++) {
            CgCudaModule *m = &gg->mod[g];
            memset(m, 0, sizeof *m);
            sb_puts(&m->src, src.s);
            m->nlaunches = k->body.n;
            m->launches = xcalloc((size_t)k->body.n + 1, sizeof(CgLaunch));
            for (int t = 0; t < k->body.n; t++) {
                CgLaunch *la = &m->launches[t];
                snprintf(la->name, sizeof la->name, GEN_NAME "_p%d", t);
                la->grid[0] = la->grid[1] = la->grid[2] = 1;
                la->block[0] = CG_C_GPU_BLOCK;
                la->block[1] = la->block[2] = 1;
                la->regs = la->stack_bytes = la->spill_stores = la->spill_loads = -1;
            }
            gg->built[g] = cg_cuda_compile(m, L->gpus[g], &d);
            if (!gg->built[g]) {
                fprintf(stderr, "perfc lib: note: no %s code for the general GPU variant of %s (NVRTC failed):\n",
                        L->gpus[g], lk->name);
                diag_flush(&d, stderr);
                cg_cuda_module_free(m);
            }
            any |= gg->built[g];
        }
    } else {
        note(lk, "the CUDA flavour of codegen/c cannot express it", &d);
    }
    sb_free(&src);
    diag_free(&d);
    if (!any) {
        free(nchain);
        ir_free(k);
        return;
    }
    gg->k = k;
    gg->nchain = nchain;
    if (getenv("PERFC_LIB_VERBOSE")) {
        fprintf(stderr, "perfc lib: general GPU variant of %s:", lk->name);
        for (int t = 0; t < k->body.n; t++)
            fprintf(stderr, " node %d: %d loop%s as threads;", t, nchain[t], nchain[t] == 1 ? "" : "s");
        fputc('\n', stderr);
    }
}

void lib_cuda_general_free(GpuGeneral *gg)
{
    for (int g = 0; g < LIB_MAX_GPUS; g++)
        if (gg->built[g])
            cg_cuda_module_free(&gg->mod[g]);
    free(gg->nchain);
    if (gg->k)
        ir_free(gg->k);
    memset(gg, 0, sizeof *gg);
}

/* C code computing, into lo{t}_{j} and n{t}_{j}, the first value and the number of
 * iterations of chain loop j of node t, and into total{t} their product; on
 * overflow `ovf` is set. */
static bool chain_bounds(const Kernel *k, int t, int c, StrBuf *s)
{
    for (int j = 0; j < c; j++) {
        const Node *l = cg_c_chain_loop(k->body.v[t], j);
        sb_printf(s, "        int64_t lo%d = ", j);
        if (!cg_c_size_expr(k, l->u.loop.lo, s))
            return false;
        sb_printf(s, ";\n        int64_t n%d = pf_ssub(", j);
        if (!cg_c_size_expr(k, l->u.loop.hi, s))
            return false;
        sb_printf(s, ", lo%d, &ovf);\n        if (n%d < 0)\n            n%d = 0;\n", j, j, j);
    }
    sb_puts(s, "        int64_t total = 1;\n");
    for (int j = 0; j < c; j++)
        sb_printf(s, "        total = pf_smul(total, n%d, &ovf);\n", j);
    return true;
}

void lib_cuda_general_source(const Lib *L, const LibKernel *lk, StrBuf *s)
{
    const GpuGeneral *gg = &lk->ggen;
    if (!gg->k)
        return;
    const Kernel *k = gg->k;
    const char *N = L->o->name, *K = lk->name;
    char base[300];
    snprintf(base, sizeof base, "%s__%s__gen", N, K);
    sb_printf(s, "/* the general GPU variant of %s: any sizes */\n", K);
    int ncode = lib_cuda_code_table(L, base, gg->mod, gg->built, s);
    sb_printf(s, "static const int %s_arg[] = {0};\nstatic const int64_t %s_temp[] = {0};\n", base, base);
    sb_printf(s, "static pf_cu_variant %s = {%s_code, %d, %s_arg, 0, %s_temp, 0, 0, 0, 0, 0, 0, 0};\n", base, base,
              ncode, base, base);
    char check[340];
    snprintf(check, sizeof check, "%s_check", base);
    if (!cg_c_emit_range_check(k, check, s, L->d))
        return;
    sb_printf(s, "static int %s__cuda_general_%s(void **bufs, const int64_t *bytes, const int64_t *p, void *stream)\n{\n",
              N, K);
    sb_printf(s, "    (void)bytes;\n    if (%s(p))\n        return pf_fail(PERFC_LIB_ERANGE, \"%s: under these sizes an index "
                 "would leave its tensor (", check, K);
    for (int i = 0; i < k->nparams; i++)
        sb_printf(s, "%s%s=%%lld", i ? ", " : "", k->params[i].name);
    sb_puts(s, ")\"");
    for (int i = 0; i < k->nparams; i++)
        sb_printf(s, ", (long long)p[%d]", i);
    sb_printf(s, ");\n    int rc = pf_cu_load(&%s, \"%s\");\n    if (rc)\n        return rc;\n", base, K);
    sb_printf(s, "    pf_CUptr a[%d] = {0};\n    int sync[%d] = {0};\n", k->nbufs + 1, k->nbufs + 1);
    for (int b = 0; b < k->nbufs; b++) {
        if (k->bufs[b]->kind == BUF_TEMP)
            sb_printf(s, "    if (!rc)\n        rc = pf_cu_temp(&a[%d], bytes[%d], stream, &sync[%d], \"%s\");\n", b, b, b,
                      K);
        else
            sb_printf(s, "    a[%d] = (pf_CUptr)(uintptr_t)bufs[%d];\n", b, b);
    }
    sb_printf(s, "    int64_t q[%d] = {", k->nparams + 1);
    for (int i = 0; i < k->nparams; i++)
        sb_printf(s, "p[%d], ", i);
    sb_puts(s, "0};\n    (void)q;\n");
    for (int t = 0; t < k->body.n; t++) {
        int c = gg->nchain[t];
        sb_printf(s, "    if (!rc) { /* node %d: %d loop%s as threads */\n        int ovf = 0;\n", t, c, c == 1 ? "" : "s");
        if (!chain_bounds(k, t, c, s)) {
            diag_plain(L->d, DIAG_ERROR, "perfc lib: kernel %s: a loop bound of its general GPU variant is not a size "
                                         "expression", K);
            return;
        }
        sb_printf(s, "        void *args[] = {");
        for (int b = 0; b < k->nbufs; b++)
            sb_printf(s, "&a[%d], ", b);
        for (int i = 0; i < k->nparams; i++)
            sb_printf(s, "&q[%d], ", i);
        for (int j = 0; j < c; j++)
            sb_printf(s, "&lo%d, &n%d, ", j, j);
        sb_puts(s, "&total};\n");
        sb_printf(s, "        if (ovf)\n            rc = pf_fail(PERFC_LIB_ESIZE, \"%s: a loop of node %d has too many "
                     "iterations for these sizes\");\n"
                     "        else if (total > 0)\n            rc = pf_cu_launch_general(&%s, %d, total, args, stream, \"%s\");\n"
                     "    }\n",
                  K, t, base, t, K);
    }
    for (int b = 0; b < k->nbufs; b++)
        if (k->bufs[b]->kind == BUF_TEMP)
            sb_printf(s, "    pf_cu_temp_free(a[%d], sync[%d], stream);\n", b, b);
    sb_printf(s, "    if (!rc && pf_trace())\n        fprintf(stderr, \"%s: GPU general variant (%%s, %%s)\\n\", %s.used->arch, "
                 "%s.ptx ? \"PTX compiled by the driver\" : \"cubin\");\n    return rc;\n}\n",
              K, base, base);
}
