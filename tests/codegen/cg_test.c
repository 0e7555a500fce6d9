/* Helpers shared by the LLVM back-end tests (see cg_test.h). */
#include "cg_test.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/ast.h"
#include "passes/passes.h"
#include "passes/xform.h"
#include "../lowered.h"

int cgt_failures;
static PtrVec arenas; /* of cgt_lower_file's programs */
static pthread_mutex_t arenas_lock = PTHREAD_MUTEX_INITIALIZER;

void cgt_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s:%d: FAIL: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    cgt_failures++;
}

void *cgt_alloc(int64_t bytes)
{
    size_t n = (size_t)(bytes + CG_BUF_ALIGN - 1) / CG_BUF_ALIGN * CG_BUF_ALIGN;
    void *p = aligned_alloc(CG_BUF_ALIGN, n ? n : CG_BUF_ALIGN);
    if (!p)
        die("out of memory");
    return p;
}

void cgt_put(void *p, int64_t i, DType t, double v)
{
    switch (t) {
    case DT_F64: ((double *)p)[i] = v; break;
    case DT_F32: ((float *)p)[i] = (float)v; break;
    case DT_F16: ((uint16_t *)p)[i] = f32_to_f16_bits((float)v); break;
    case DT_BF16: ((uint16_t *)p)[i] = f32_to_bf16_bits((float)v); break;
    case DT_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case DT_I64: ((int64_t *)p)[i] = (int64_t)v; break;
    case DT_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default: die("dtype %d", (int)t);
    }
}

double cgt_get(const void *p, int64_t i, DType t)
{
    switch (t) {
    case DT_F64: return ((const double *)p)[i];
    case DT_F32: return ((const float *)p)[i];
    case DT_F16: return f16_bits_to_f32(((const uint16_t *)p)[i]);
    case DT_BF16: return bf16_bits_to_f32(((const uint16_t *)p)[i]);
    case DT_I32: return ((const int32_t *)p)[i];
    case DT_I64: return (double)((const int64_t *)p)[i];
    case DT_BOOL: return ((const uint8_t *)p)[i];
    default: die("dtype %d", (int)t);
    }
}

bool cgt_data_new(CgtData *x, const Kernel *k, uint64_t seed)
{
    memset(x, 0, sizeof *x);
    x->k = k;
    x->ref = ir_alloc_buffers(k, seed);
    if (!x->ref)
        return false;
    x->typed = calloc((size_t)k->nbufs + 1, sizeof *x->typed);
    x->elems = calloc((size_t)k->nbufs + 1, sizeof *x->elems);
    for (int i = 0; i < k->nbufs; i++) {
        const Buffer *b = k->bufs[i];
        int64_t n = ir_buffer_elems(k, b);
        x->elems[i] = n;
        if (b->kind == BUF_TEMP && b->mem == MEM_LOCAL)
            continue;
        x->typed[i] = cgt_alloc(n * dtype_bytes(b->dtype));
        if (b->kind == BUF_IN) {
            for (int64_t j = 0; j < n; j++)
                cgt_put(x->typed[i], j, b->dtype, x->ref[i][j]);
        } else {
            /* all-ones bytes: NaN for every float format, -1 for integers */
            memset(x->typed[i], 0xff, (size_t)(n * dtype_bytes(b->dtype)));
        }
    }
    return true;
}

void cgt_data_free(CgtData *x)
{
    if (x->typed)
        for (int i = 0; i < x->k->nbufs; i++)
            free(x->typed[i]);
    free(x->typed);
    free(x->elems);
    ir_free_buffers(x->k, x->ref);
    memset(x, 0, sizeof *x);
}

double cgt_tolerance(const Kernel *k)
{
    double tol = 1e-12;
    for (int i = 0; i < k->nbufs; i++) {
        double t;
        switch (k->bufs[i]->dtype) {
        case DT_F32: t = 1e-5; break;
        case DT_F16: t = 5e-3; break;
        case DT_BF16: t = 3e-2; break;
        default: t = 1e-12; break;
        }
        if (t > tol)
            tol = t;
    }
    return tol;
}

static bool compare(CgtData *x, double **got, const char *what)
{
    const Kernel *k = x->k;
    Diags d;
    diag_init(&d);
    if (!ir_interp(k, x->ref, &d)) {
        fprintf(stderr, "%s: the interpreter refused the kernel:\n", what);
        diag_flush(&d, stderr);
        diag_free(&d);
        return false;
    }
    diag_free(&d);
    double tol = cgt_tolerance(k);
    bool ok = true;
    for (int i = 0; i < k->nbufs; i++) {
        const Buffer *b = k->bufs[i];
        if (b->kind != BUF_OUT)
            continue;
        double num = 0, den = 0;
        int64_t bad = -1;
        for (int64_t j = 0; j < x->elems[i]; j++) {
            double r = x->ref[i][j], o = got[i][j];
            if (isnan(o) || isinf(o) != isinf(r)) {
                if (!isnan(r) && bad < 0)
                    bad = j;
                continue;
            }
            num += (o - r) * (o - r);
            den += r * r;
        }
        double err = den > 0 ? sqrt(num / den) : sqrt(num);
        if (bad >= 0) {
            fprintf(stderr, "%s: %s[%lld] is %g, expected %g\n", what, b->name, (long long)bad, got[i][bad],
                    x->ref[i][bad]);
            ok = false;
        } else if (!(err <= tol)) {
            int64_t worst = 0;
            for (int64_t j = 0; j < x->elems[i]; j++)
                if (fabs(got[i][j] - x->ref[i][j]) > fabs(got[i][worst] - x->ref[i][worst]))
                    worst = j;
            fprintf(stderr, "%s: %s relative error %.3g > %.3g (worst %s[%lld] = %.9g, expected %.9g)\n", what,
                    b->name, err, tol, b->name, (long long)worst, got[i][worst], x->ref[i][worst]);
            ok = false;
        }
    }
    return ok;
}

bool cgt_compare_values(CgtData *x, double **got, const char *what)
{
    return compare(x, got, what);
}

bool cgt_compare(CgtData *x, const char *what)
{
    const Kernel *k = x->k;
    double **got = calloc((size_t)k->nbufs + 1, sizeof *got);
    for (int i = 0; i < k->nbufs; i++) {
        if (k->bufs[i]->kind != BUF_OUT)
            continue;
        got[i] = malloc(sizeof(double) * (size_t)(x->elems[i] + 1));
        for (int64_t j = 0; j < x->elems[i]; j++)
            got[i][j] = cgt_get(x->typed[i], j, k->bufs[i]->dtype);
    }
    bool ok = compare(x, got, what);
    for (int i = 0; i < k->nbufs; i++)
        free(got[i]);
    free(got);
    return ok;
}

bool cgt_jit_check(const Kernel *k, const char *target, uint64_t seed, const char *what, double *ms)
{
    Diags d;
    diag_init(&d);
    JitKernel *j = tl_jit(k, target, &d);
    diag_flush(&d, stderr);
    diag_free(&d);
    if (!j) {
        fprintf(stderr, "%s: JIT compilation for %s failed\n", what, target);
        return false;
    }
    if (ms)
        *ms = cg_jit_compile_ms(j);
    CgtData x;
    if (!cgt_data_new(&x, k, seed)) {
        cg_jit_free(j);
        fprintf(stderr, "%s: cannot allocate buffers\n", what);
        return false;
    }
    cg_jit_run(j, x.typed);
    bool ok = cgt_compare(&x, what);
    cgt_data_free(&x);
    cg_jit_free(j);
    return ok;
}

Kernel *cgt_lower_file(const char *path, const char *name, const char *const *pnames, const int64_t *pvals, int n,
                       int64_t deflt, const char *sched_target, Diags *d)
{
    return cgt_lower_file_stop(path, name, pnames, pvals, n, deflt, sched_target, NULL, d);
}

Kernel *cgt_lower_file_stop(const char *path, const char *name, const char *const *pnames, const int64_t *pvals,
                            int n, int64_t deflt, const char *sched_target, const char *stop_after, Diags *d)
{
    size_t len;
    char *text = read_file(path, &len);
    if (!text) {
        diag_plain(d, DIAG_ERROR, "cannot read %s", path);
        return NULL;
    }
    Arena *a = arena_new();
    Source *src = arena_alloc(a, sizeof *src);
    src->path = arena_strdup(a, path);
    src->text = arena_strdup(a, text);
    src->len = len;
    free(text);
    Kernel *k = NULL;
    /* "KERNEL:T=f16": the kernel with its dtype parameter T bound */
    char kname[128];
    const char *dt = NULL;
    if (name) {
        snprintf(kname, sizeof kname, "%s", name);
        char *colon = strchr(kname, ':');
        if (colon && !strncmp(colon, ":T=", 3)) {
            *colon = 0;
            dt = colon + 3;
        }
        name = kname;
    }
    Program *p = parse_program(a, src, d);
    if (d->nerrors)
        goto out;
    AstKernel *ak = name ? program_find_kernel(p, name) : p->kernels[0];
    if (!ak) {
        diag_plain(d, DIAG_ERROR, "%s has no kernel %s", path, name);
        goto out;
    }
    if (dt && kernel_find_dtparam(ak, "T") >= 0)
        kernel_bind_dtparam(ak, kernel_find_dtparam(ak, "T"), dtype_from_name(dt));
    if (!sema_program(p, d))
        goto out;
    int64_t *vals = calloc((size_t)ak->nparams + 1, sizeof *vals);
    bool *bound = calloc((size_t)ak->nparams + 1, sizeof *bound);
    for (int i = 0; i < ak->nparams; i++) {
        vals[i] = deflt < 0 && ak->params[i].has_default ? ak->params[i].def : deflt;
        bound[i] = true;
        for (int j = 0; j < n; j++)
            if (!strcmp(pnames[j], ak->params[i].name))
                vals[i] = pvals[j];
    }
    k = lower_kernel(p, ak, vals, bound, d);
    free(vals);
    free(bound);
    if (k && sched_target) {
        const AstSchedule *sched[64];
        int ns = 0;
        for (int i = 0; i < p->nschedules && ns < 64; i++)
            if (schedule_applies(p->schedules[i], ak, target_find(sched_target), NULL))
                sched[ns++] = p->schedules[i];
        PipelineOpts po = {0};
        po.schedules = sched;
        po.nschedules = ns;
        po.stop_after = stop_after;
        if (!pipeline_run(k, &po, d)) {
            ir_free(k);
            k = NULL;
        }
    }
out:
    /* Spans in the IR point into the source, so its arena lives until cgt_cleanup. */
    pthread_mutex_lock(&arenas_lock);
    vec_push(&arenas, a);
    pthread_mutex_unlock(&arenas_lock);
    return k;
}

void cgt_cleanup(void)
{
    for (int i = 0; i < arenas.n; i++)
        arena_free(arenas.v[i]);
    vec_free(&arenas);
}

Expr *cgt_v(Kernel *k, Var *v)
{
    return ir_var(k, v);
}

Expr *cgt_i(Kernel *k, int64_t c)
{
    return ir_int(k, c);
}

Expr *cgt_add(Kernel *k, Expr *a, Expr *b)
{
    return ir_bin(k, IE_ADD, a, b);
}

Expr *cgt_mul(Kernel *k, Expr *a, Expr *b)
{
    return ir_bin(k, IE_MUL, a, b);
}

Expr *cgt_ld(Kernel *k, Buffer *b, Expr *i0, Expr *i1)
{
    Expr *idx[2] = {i0, i1};
    return ir_load(k, b, idx);
}

Node *cgt_st(Kernel *k, Buffer *b, Expr *i0, Expr *i1, StmtOp op, Expr *value)
{
    Expr *idx[2] = {i0, i1};
    return ir_stmt(k, b, idx, op, value, (Span){0});
}

Buffer *cgt_buf(Kernel *k, const char *name, DType t, BufKind kind, int64_t d0, int64_t d1)
{
    Buffer *b = ir_add_buffer(k, name, t, kind, d1 < 0 ? 1 : 2, (Span){0});
    b->shape[0] = ir_int(k, d0);
    if (d1 >= 0)
        b->shape[1] = ir_int(k, d1);
    return b;
}

void cgt_push(Kernel *k, Node *into, Node *n)
{
    if (into)
        ir_list_push(ir_body(into), n, into);
    else
        ir_list_push(&k->body, n, NULL);
}

Node *cgt_loop(Kernel *k, Node *into, Var *v, Expr *lo, Expr *hi, LoopKind kind)
{
    Node *l = ir_loop(k, v, lo, hi, (Span){0});
    l->u.loop.kind = kind;
    cgt_push(k, into, l);
    return l;
}
