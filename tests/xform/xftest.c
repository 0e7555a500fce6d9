/* Implementation of xftest.h. */
#include "xftest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef PERFC_HAVE_LLVM
#include "codegen/llvm/cg_llvm.h"
#include "runtime/pool.h"
#include "../lowered.h"
#endif

bool xt_open(XtFile *f, const char *path_dt)
{
    memset(f, 0, sizeof *f);
    /* "FILE:T=f16": the file with the dtype parameter T of its kernels bound */
    char path[1024];
    snprintf(path, sizeof path, "%s", path_dt);
    char *colon = strrchr(path, ':');
    const char *dts = NULL;
    if (colon && !strchr(colon, '/')) {
        *colon = 0;
        dts = colon + 1;
    }
    size_t len;
    f->text = read_file(path, &len);
    if (!f->text) {
        fprintf(stderr, "cannot read %s\n", path);
        return false;
    }
    f->arena = arena_new();
    f->src.path = arena_strdup(f->arena, path); /* diagnostics print it long after */
    f->src.text = f->text;
    f->src.len = len;
    Diags d;
    diag_init(&d);
    f->prog = parse_program(f->arena, &f->src, &d);
    for (const char *p = dts; p && *p && !d.nerrors;) {
        char name[64] = {0}, dt[16] = {0};
        if (sscanf(p, "%63[A-Za-z0-9_]=%15[a-z0-9]", name, dt) != 2 || dtype_from_name(dt) == DT_COUNT) {
            fprintf(stderr, "%s: bad dtype binding '%s'\n", path_dt, p);
            diag_free(&d);
            return false;
        }
        for (int k = 0; k < f->prog->nkernels; k++) {
            int i = kernel_find_dtparam(f->prog->kernels[k], name);
            if (i >= 0)
                kernel_bind_dtparam(f->prog->kernels[k], i, dtype_from_name(dt));
        }
        p = strchr(p, ',');
        p = p ? p + 1 : NULL;
    }
    if (!d.nerrors)
        sema_program(f->prog, &d);
    bool ok = d.nerrors == 0;
    if (!ok)
        diag_flush(&d, stderr);
    diag_free(&d);
    return ok;
}

void xt_close(XtFile *f)
{
    arena_free(f->arena);
    free(f->text);
    memset(f, 0, sizeof *f);
}

Kernel *xt_lower(XtFile *f, const char *kname, const char *defs, int64_t dflt)
{
    AstKernel *ak = kname ? program_find_kernel(f->prog, kname) : f->prog->kernels[0];
    if (!ak)
        return NULL;
    int64_t vals[32];
    bool bound[32];
    for (int i = 0; i < ak->nparams && i < 32; i++) {
        vals[i] = ak->params[i].has_default ? ak->params[i].def : dflt;
        bound[i] = true;
        if (dflt <= 0 && !ak->params[i].has_default)
            bound[i] = false;
        const char *p = defs ? strstr(defs, ak->params[i].name) : NULL;
        size_t n = strlen(ak->params[i].name);
        /* "NAME=" at the start or after a comma */
        while (p && !((p == defs || p[-1] == ',') && p[n] == '='))
            p = strstr(p + 1, ak->params[i].name);
        if (p) {
            vals[i] = atoll(p + n + 1);
            bound[i] = true;
        }
    }
    Diags d;
    diag_init(&d);
    Kernel *k = lower_kernel(f->prog, ak, vals, bound, &d);
    if (!k)
        diag_flush(&d, stderr);
    diag_free(&d);
    return k;
}

Kernel *xt_lower_scheduled(XtFile *f, const char *kname, const char *defs, const char *target)
{
    Kernel *k = xt_lower(f, kname, defs, 0);
    if (!k)
        return NULL;
    Diags d;
    diag_init(&d);
    for (int i = 0; i < f->prog->nschedules; i++) {
        const AstSchedule *s = f->prog->schedules[i];
        if (strcmp(s->kernel, k->name) || !schedule_matches_target(s->target, target_find(target)))
            continue;
        if (!schedule_apply(k, s, NULL, 0, &d)) {
            diag_flush(&d, stderr);
            ir_free(k);
            k = NULL;
            break;
        }
    }
    diag_free(&d);
    return k;
}

bool xt_schedule(Kernel *k, const char *text, Diags *d)
{
    Arena *a = arena_new();
    Source *src = arena_alloc(a, sizeof *src);
    src->path = "<-s>";
    src->text = arena_strdup(a, text);
    src->len = strlen(text);
    AstSchedule *s = parse_schedule_text(a, src, d);
    bool ok = s && !d->nerrors && schedule_apply(k, s, NULL, 0, d);
    /* Diagnostics were formatted already; the kernel keeps no pointer into a. */
    arena_free(a);
    return ok;
}

static double compare(const Kernel *ref, double **rb, const Kernel *k, double **kb, StrBuf *why)
{
    double maxerr = 0, maxmag = 0;
    for (int i = 0; i < ref->nbufs; i++) {
        const Buffer *b = ref->bufs[i];
        if (b->kind != BUF_OUT)
            continue;
        int64_t n = ir_buffer_elems(ref, b);
        for (int64_t e = 0; e < n; e++) {
            double x = rb[i][e], y = kb[i][e];
            if (isnan(x) != isnan(y)) {
                sb_printf(why, "%s[%lld]: %g vs %g (an element one of them never writes)", b->name,
                          (long long)e, x, y);
                return INFINITY;
            }
            if (isnan(x))
                continue;
            if (isinf(x) || isinf(y)) {
                if (x != y) {
                    sb_printf(why, "%s[%lld]: %g vs %g", b->name, (long long)e, x, y);
                    return INFINITY;
                }
                continue;
            }
            double err = fabs(x - y);
            if (fabs(x) > maxmag)
                maxmag = fabs(x);
            if (err > maxerr) {
                maxerr = err;
                why->len = 0;
                sb_printf(why, "%s[%lld]: %.17g vs %.17g", b->name, (long long)e, x, y);
            }
        }
    }
    (void)k;
    return maxmag > 0 ? maxerr / maxmag : maxerr;
}

double xt_interp_diff(const Kernel *ref, const Kernel *k, uint64_t seed, StrBuf *why)
{
    double **rb = ir_alloc_buffers(ref, seed), **kb = ir_alloc_buffers(k, seed);
    /* Inputs identical by construction; copy anyway so a different buffer order in
     * the transformed kernel could not hide behind the same seed. */
    for (int i = 0; i < ref->nbufs; i++)
        if (ref->bufs[i]->kind == BUF_IN)
            memcpy(kb[i], rb[i], sizeof(double) * (size_t)ir_buffer_elems(ref, ref->bufs[i]));
    Diags d;
    diag_init(&d);
    double r;
    if (!ir_interp(ref, rb, &d)) {
        sb_printf(why, "the reference run failed: %s", d.text.s ? d.text.s : "");
        r = INFINITY;
    } else if (!ir_interp(k, kb, &d)) {
        sb_printf(why, "the transformed run failed: %s", d.text.s ? d.text.s : "");
        r = INFINITY;
    } else {
        r = compare(ref, rb, k, kb, why);
    }
    diag_free(&d);
    ir_free_buffers(ref, rb);
    ir_free_buffers(k, kb);
    return r;
}

#ifdef PERFC_HAVE_LLVM
static void to_storage(DType t, const double *src, void *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        switch (t) {
        case DT_F64: ((double *)dst)[i] = src[i]; break;
        case DT_F32: ((float *)dst)[i] = (float)src[i]; break;
        case DT_F16: ((uint16_t *)dst)[i] = f32_to_f16_bits((float)src[i]); break;
        case DT_BF16: ((uint16_t *)dst)[i] = f32_to_bf16_bits((float)src[i]); break;
        case DT_I32: ((int32_t *)dst)[i] = (int32_t)src[i]; break;
        case DT_I64: ((int64_t *)dst)[i] = (int64_t)src[i]; break;
        case DT_BOOL: ((uint8_t *)dst)[i] = src[i] != 0; break;
        default: break;
        }
}

static void from_storage(DType t, const void *src, double *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        switch (t) {
        case DT_F64: dst[i] = ((const double *)src)[i]; break;
        case DT_F32: dst[i] = ((const float *)src)[i]; break;
        case DT_F16: dst[i] = f16_bits_to_f32(((const uint16_t *)src)[i]); break;
        case DT_BF16: dst[i] = bf16_bits_to_f32(((const uint16_t *)src)[i]); break;
        case DT_I32: dst[i] = ((const int32_t *)src)[i]; break;
        case DT_I64: dst[i] = (double)((const int64_t *)src)[i]; break;
        case DT_BOOL: dst[i] = ((const uint8_t *)src)[i]; break;
        default: break;
        }
}

double xt_jit_diff(const Kernel *ref, const Kernel *k, uint64_t seed, StrBuf *why)
{
    static bool registered;
    if (!registered) {
        cg_llvm_add_symbol("perfc_parallel_for", (void *)perfc_parallel_for);
        registered = true;
    }
    Diags d;
    diag_init(&d);
    JitKernel *j = tl_jit(k, "host", &d);
    if (!j) {
        sb_printf(why, "JIT failed: %s", d.text.s ? d.text.s : "");
        diag_free(&d);
        return INFINITY;
    }
    double **rb = ir_alloc_buffers(ref, seed), **kb = ir_alloc_buffers(k, seed);
    void **mem = xcalloc((size_t)k->nbufs, sizeof(void *));
    for (int i = 0; i < k->nbufs; i++) {
        const Buffer *b = k->bufs[i];
        if (b->kind == BUF_TEMP && b->mem == MEM_LOCAL)
            continue;
        int64_t n = ir_buffer_elems(k, b);
        size_t bytes = (size_t)(n ? n : 1) * (size_t)dtype_bytes(b->dtype);
        mem[i] = aligned_alloc(CG_BUF_ALIGN, (bytes + CG_BUF_ALIGN - 1) / CG_BUF_ALIGN * CG_BUF_ALIGN);
        if (i < ref->nbufs && b->kind == BUF_IN)
            to_storage(b->dtype, rb[i], mem[i], n);
        else
            to_storage(b->dtype, kb[i], mem[i], n); /* NaN poison for outputs */
    }
    double r = INFINITY;
    if (!ir_interp(ref, rb, &d)) {
        sb_printf(why, "the reference run failed");
    } else {
        cg_jit_run(j, mem);
        for (int i = 0; i < ref->nbufs; i++)
            if (ref->bufs[i]->kind == BUF_OUT)
                from_storage(k->bufs[i]->dtype, mem[i], kb[i], ir_buffer_elems(k, k->bufs[i]));
        r = compare(ref, rb, k, kb, why);
    }
    for (int i = 0; i < k->nbufs; i++)
        free(mem[i]);
    free(mem);
    cg_jit_free(j);
    ir_free_buffers(ref, rb);
    ir_free_buffers(k, kb);
    diag_free(&d);
    return r;
}
#else
double xt_jit_diff(const Kernel *ref, const Kernel *k, uint64_t seed, StrBuf *why)
{
    (void)ref, (void)k, (void)seed, (void)why;
    return -1;
}
#endif
