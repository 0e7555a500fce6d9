/* Hand-built kernels and report checks for the runtime tests (see rt_test.h). */
#include "rt_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int rt_test_failures;

static const Span nowhere;

static void bind(Kernel *k, const char *name, int64_t v)
{
    Param *p = ir_add_param(k, name);
    p->bound = true;
    p->value = v;
}

static Expr *var(Kernel *k, Var *v)
{
    return ir_var(k, v);
}

Kernel *rt_test_gemm(int64_t M, int64_t N, int64_t K, DType tin, DType tout, bool ta, bool tb, GemmVariant v)
{
    Kernel *k = ir_kernel_new("gemm", nowhere);
    bind(k, "M", M);
    bind(k, "N", N);
    bind(k, "K", K);
    Buffer *A = ir_add_buffer(k, "A", tin, BUF_IN, 2, nowhere);
    Buffer *B = ir_add_buffer(k, "B", tin, BUF_IN, 2, nowhere);
    Buffer *C = ir_add_buffer(k, "C", tout, BUF_OUT, 2, nowhere);
    A->shape[0] = ir_param(k, ta ? 2 : 0);
    A->shape[1] = ir_param(k, ta ? 0 : 2);
    B->shape[0] = ir_param(k, tb ? 1 : 2);
    B->shape[1] = ir_param(k, tb ? 2 : 1);
    C->shape[0] = ir_param(k, 0);
    C->shape[1] = ir_param(k, 1);
    Var *i = ir_new_var(k, "i"), *j = ir_new_var(k, "j"), *kk = ir_new_var(k, "k");

    Expr *ihi = v == GEMM_SKIP_LAST_ROW ? ir_bin(k, IE_SUB, ir_param(k, 0), ir_int(k, 1)) : ir_param(k, 0);
    Node *li = ir_loop(k, i, ir_int(k, 0), ihi, nowhere);
    Node *lj = ir_loop(k, j, ir_int(k, 0), ir_param(k, 1), nowhere);
    ir_list_push(&li->u.loop.body, lj, li);
    if (v == GEMM_SEPARATE_INIT) {
        Var *i0 = ir_new_var(k, "i0"), *j0 = ir_new_var(k, "j0");
        Node *zi = ir_loop(k, i0, ir_int(k, 0), ir_param(k, 0), nowhere);
        Node *zj = ir_loop(k, j0, ir_int(k, 0), ir_param(k, 1), nowhere);
        Expr *zidx[2] = {var(k, i0), var(k, j0)};
        ir_list_push(&zj->u.loop.body, ir_stmt(k, C, zidx, SOP_ASSIGN, ir_flt(k, 0, tout), nowhere), zj);
        ir_list_push(&zi->u.loop.body, zj, zi);
        ir_list_push(&k->body, zi, NULL);
    }
    ir_list_push(&k->body, li, NULL);
    Expr *cidx[2] = {var(k, i), var(k, j)};
    if (v == GEMM_CONSTANT) {
        ir_list_push(&lj->u.loop.body, ir_stmt(k, C, cidx, SOP_ASSIGN, ir_flt(k, 1, tout), nowhere), lj);
        return k;
    }
    if (v != GEMM_SEPARATE_INIT)
        ir_list_push(&lj->u.loop.body, ir_stmt(k, C, cidx, SOP_ASSIGN, ir_flt(k, 0, tout), nowhere), lj);
    Node *lk = ir_loop(k, kk, ir_int(k, v == GEMM_K_FROM_1 ? 1 : 0), ir_param(k, 2), nowhere);
    ir_list_push(&lj->u.loop.body, lk, lj);
    Expr *aidx[2] = {var(k, ta ? kk : i), var(k, ta ? i : kk)};
    Expr *bidx[2] = {var(k, tb ? j : kk), var(k, tb ? kk : j)};
    DType ct = dtype_compute(tout);
    Expr *prod = ir_bin(k, IE_MUL, ir_cast(k, ir_load(k, A, aidx), ct), ir_cast(k, ir_load(k, B, bidx), ct));
    Expr *sidx[2] = {var(k, i), var(k, j)};
    ir_list_push(&lk->u.loop.body, ir_stmt(k, C, sidx, SOP_ADD, prod, nowhere), lk);
    return k;
}

Kernel *rt_test_add(int64_t n)
{
    Kernel *k = ir_kernel_new("add", nowhere);
    bind(k, "N", n);
    Buffer *X = ir_add_buffer(k, "X", DT_F32, BUF_IN, 1, nowhere);
    Buffer *Z = ir_add_buffer(k, "Z", DT_F32, BUF_IN, 1, nowhere);
    Buffer *Y = ir_add_buffer(k, "Y", DT_F32, BUF_OUT, 1, nowhere);
    X->shape[0] = ir_param(k, 0);
    Z->shape[0] = ir_param(k, 0);
    Y->shape[0] = ir_param(k, 0);
    Var *i = ir_new_var(k, "i");
    Node *li = ir_loop(k, i, ir_int(k, 0), ir_param(k, 0), nowhere);
    Expr *xi[1] = {var(k, i)}, *zi[1] = {var(k, i)}, *yi[1] = {var(k, i)};
    Expr *sum = ir_bin(k, IE_ADD, ir_load(k, X, xi), ir_load(k, Z, zi));
    ir_list_push(&li->u.loop.body, ir_stmt(k, Y, yi, SOP_ASSIGN, sum, nowhere), li);
    ir_list_push(&k->body, li, NULL);
    return k;
}

static bool is(const JVal *v, JKind k)
{
    return v && v->kind == k;
}

static const char *stats_problem(const JVal *t, bool full)
{
    if (!is(t, JN_OBJ))
        return "time_ms is not an object";
    const JVal *med = json_get(t, "median"), *mn = json_get(t, "min"), *mx = json_get(t, "max"),
               *reps = json_get(t, "reps");
    if (!is(med, JN_NUM) || med->num <= 0)
        return "time_ms.median missing or not positive";
    if (!full)
        return NULL;
    if (!is(mn, JN_NUM) || !is(mx, JN_NUM) || !is(reps, JN_NUM))
        return "time_ms lacks min, max or reps";
    if (!(mn->num <= med->num && med->num <= mx->num))
        return "time_ms: not min <= median <= max";
    if (reps->num < 1)
        return "time_ms.reps < 1";
    return NULL;
}

const char *rt_test_report_problem(const JVal *rep, bool valid, bool baseline)
{
    if (!is(rep, JN_OBJ))
        return "the report is not a JSON object";
    static const char *const strings[] = {"kernel", "target", "device", "dtype", "golden"};
    for (size_t i = 0; i < sizeof strings / sizeof *strings; i++)
        if (!is(json_get(rep, strings[i]), JN_STR))
            return strings[i];
    if (!is(json_get(rep, "shape"), JN_OBJ))
        return "shape";
    static const char *const numbers[] = {"rel_error", "tolerance", "compile_ms", "seed", "checks", "flops",
                                          "bytes"};
    for (size_t i = 0; i < sizeof numbers / sizeof *numbers; i++)
        if (!is(json_get(rep, numbers[i]), JN_NUM))
            return numbers[i];
    const JVal *ok = json_get(rep, "valid");
    if (!is(ok, JN_BOOL) || ok->b != valid)
        return valid ? "valid is not true" : "valid is not false";
    static const char *const speeds[] = {"time_ms", "gflops", "gbps", "baseline", "vs_baseline"};
    if (!valid) {
        if (!is(json_get(rep, "reason"), JN_STR))
            return "reason";
        for (size_t i = 0; i < sizeof speeds / sizeof *speeds; i++)
            if (!is(json_get(rep, speeds[i]), JN_NULL))
                return "a speed field of an invalid kernel is not null";
        return NULL;
    }
    const char *p = stats_problem(json_get(rep, "time_ms"), true);
    if (p)
        return p;
    if (!is(json_get(rep, "gflops"), JN_NUM) || !is(json_get(rep, "gbps"), JN_NUM))
        return "gflops or gbps";
    const JVal *b = json_get(rep, "baseline");
    if (!baseline)
        return b ? NULL : "baseline key missing";
    if (!is(b, JN_OBJ) || !is(json_get(b, "name"), JN_STR))
        return "baseline.name";
    if ((p = stats_problem(json_get(b, "time_ms"), false)))
        return p;
    if (!is(json_get(b, "gflops"), JN_NUM))
        return "baseline.gflops";
    if (!is(json_get(rep, "vs_baseline"), JN_NUM))
        return "vs_baseline";
    return NULL;
}

/* ---- planted kernels ---- */

static const char *const cheat_names[] = {
    "right", "off-by-one", "skipped tail", "constant output", "stale output",
    "right on the first input set only", "lazy once timed", "one Inf", "one wrong element",
    "wrong tail", "one element off by 1e-3",
};

const char *rt_test_cheat_name(Cheat c)
{
    return c < CHEAT_COUNT ? cheat_names[c] : "?";
}

typedef struct Planted {
    Cheat cheat;
    int64_t M, N, K;
    int calls;
    float *memo;
    int64_t at;         /* CHEAT_ONE_ELEMENT: the element; CHEAT_WRONG_TAIL: the first row */
    RtExec *(*honest)(RtDevice *, const Kernel *, const char *, Diags *);
} Planted;

static Planted planted_ctx;

static void product(const Planted *p, void **bufs, int64_t rows, int64_t shift)
{
    const float *A = bufs[0], *B = bufs[1];
    float *C = bufs[2];
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < p->N; j++) {
            float s = 0;
            for (int64_t k = 0; k < p->K; k++)
                s += A[i * p->K + k] * B[k * p->N + (j + shift) % p->N];
            C[i * p->N + j] = s;
        }
}

static void planted_run(void *ctx, void **bufs)
{
    Planted *p = ctx;
    int call = ++p->calls;
    float *C = bufs[2];
    size_t bytes = sizeof(float) * (size_t)(p->M * p->N);
    switch (p->cheat) {
    case CHEAT_NONE: product(p, bufs, p->M, 0); break;
    case CHEAT_OFF_BY_ONE: product(p, bufs, p->M, 1); break;
    case CHEAT_SKIP_TAIL: product(p, bufs, p->M - 1, 0); break;
    case CHEAT_CONSTANT:
        for (int64_t i = 0; i < p->M * p->N; i++)
            C[i] = 1;
        break;
    case CHEAT_STALE:
        if (call == 1)
            product(p, bufs, p->M, 0);
        break;
    case CHEAT_FIRST_INPUTS:
        if (!p->memo) {
            product(p, bufs, p->M, 0);
            p->memo = malloc(bytes);
            memcpy(p->memo, C, bytes);
        } else {
            memcpy(C, p->memo, bytes);
        }
        break;
    case CHEAT_LAZY_TIMED: product(p, bufs, call <= 3 ? p->M : p->M / 2, 0); break;
    case CHEAT_INF:
        product(p, bufs, p->M, 0);
        C[p->M * p->N / 2] = INFINITY;
        break;
    case CHEAT_ONE_ELEMENT:
    case CHEAT_ONE_SLIGHT:
        product(p, bufs, p->M, 0);
        C[p->at] += p->cheat == CHEAT_ONE_ELEMENT ? 1.0f : 1e-3f;
        break;
    case CHEAT_WRONG_TAIL: {
        /* the rows of the last tile reduce over one k too few, as a split whose
         * tail loop stops early would */
        product(p, bufs, p->M, 0);
        const float *A = bufs[0], *B = bufs[1];
        for (int64_t i = p->at; i < p->M; i++)
            for (int64_t j = 0; j < p->N; j++)
                C[i * p->N + j] -= A[i * p->K + p->K - 1] * B[(p->K - 1) * p->N + j];
        break;
    }
    case CHEAT_COUNT: break;
    }
}

/* The planted function stands in for the kernel under test; the f64 copy that a
 * golden reference compiles for the device (its buffers are f64, the planted
 * product's f32) is compiled honestly. */
static RtExec *planted_compile(RtDevice *dev, const Kernel *k, const char *target, Diags *d)
{
    if (k->nbufs && k->bufs[0]->dtype == DT_F64)
        return planted_ctx.honest(dev, k, target, d);
    return rt_host_exec_fn(dev, planted_run, &planted_ctx, "planted kernel");
}

RtDevice *rt_test_planted_device(RtDevice *host, Cheat c, int64_t M, int64_t N, int64_t K)
{
    free(planted_ctx.memo);
    planted_ctx = (Planted){.cheat = c, .M = M, .N = N, .K = K, .honest = host->compile};
    RtDevice *dev = malloc(sizeof *dev);
    if (!dev)
        abort();
    *dev = *host;
    dev->compile = planted_compile;
    return dev;
}

RtDevice *rt_test_planted_device_at(RtDevice *host, Cheat c, int64_t M, int64_t N, int64_t K, int64_t at)
{
    RtDevice *dev = rt_test_planted_device(host, c, M, N, K);
    planted_ctx.at = at;
    return dev;
}
