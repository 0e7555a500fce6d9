/* The pieces the harness's judgement rests on: operation and byte counts, GEMM
 * recognition (and its refusals), tolerances, ir_promote_f64, the three golden
 * references agreeing with one another, and the data conversions. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rt_test.h"

static const Span nowhere;

static void bind(Kernel *k, const char *name, int64_t v)
{
    Param *p = ir_add_param(k, name);
    p->bound = true;
    p->value = v;
}

/* acc[i, j] = sum(k) A[i, k] * B[k, j];  C[i, j] = max(acc[i, j] + bias[j], 0) */
static Kernel *gemm_bias_relu(int64_t M, int64_t N, int64_t K)
{
    Kernel *k = ir_kernel_new("gemm_bias_relu", nowhere);
    bind(k, "M", M);
    bind(k, "N", N);
    bind(k, "K", K);
    Buffer *A = ir_add_buffer(k, "A", DT_F32, BUF_IN, 2, nowhere);
    Buffer *B = ir_add_buffer(k, "B", DT_F32, BUF_IN, 2, nowhere);
    Buffer *bias = ir_add_buffer(k, "bias", DT_F32, BUF_IN, 1, nowhere);
    Buffer *C = ir_add_buffer(k, "C", DT_F32, BUF_OUT, 2, nowhere);
    Buffer *acc = ir_add_buffer(k, "acc", DT_F32, BUF_TEMP, 2, nowhere);
    A->shape[0] = ir_param(k, 0), A->shape[1] = ir_param(k, 2);
    B->shape[0] = ir_param(k, 2), B->shape[1] = ir_param(k, 1);
    bias->shape[0] = ir_param(k, 1);
    C->shape[0] = ir_param(k, 0), C->shape[1] = ir_param(k, 1);
    acc->shape[0] = ir_param(k, 0), acc->shape[1] = ir_param(k, 1);
    Var *i = ir_new_var(k, "i"), *j = ir_new_var(k, "j"), *kk = ir_new_var(k, "k");
    Var *i2 = ir_new_var(k, "i2"), *j2 = ir_new_var(k, "j2");
    Node *li = ir_loop(k, i, ir_int(k, 0), ir_param(k, 0), nowhere);
    Node *lj = ir_loop(k, j, ir_int(k, 0), ir_param(k, 1), nowhere);
    Node *lk = ir_loop(k, kk, ir_int(k, 0), ir_param(k, 2), nowhere);
    Expr *z[2] = {ir_var(k, i), ir_var(k, j)};
    ir_list_push(&lj->u.loop.body, ir_stmt(k, acc, z, SOP_ASSIGN, ir_flt(k, 0, DT_F32), nowhere), lj);
    Expr *ai[2] = {ir_var(k, i), ir_var(k, kk)}, *bi[2] = {ir_var(k, kk), ir_var(k, j)};
    Expr *s[2] = {ir_var(k, i), ir_var(k, j)};
    ir_list_push(&lk->u.loop.body,
                 ir_stmt(k, acc, s, SOP_ADD, ir_bin(k, IE_MUL, ir_load(k, A, ai), ir_load(k, B, bi)), nowhere), lk);
    ir_list_push(&lj->u.loop.body, lk, lj);
    ir_list_push(&li->u.loop.body, lj, li);
    ir_list_push(&k->body, li, NULL);
    Node *li2 = ir_loop(k, i2, ir_int(k, 0), ir_param(k, 0), nowhere);
    Node *lj2 = ir_loop(k, j2, ir_int(k, 0), ir_param(k, 1), nowhere);
    Expr *ri[2] = {ir_var(k, i2), ir_var(k, j2)}, *bj[1] = {ir_var(k, j2)}, *ci[2] = {ir_var(k, i2), ir_var(k, j2)};
    Expr *v = ir_bin(k, IE_MAX, ir_bin(k, IE_ADD, ir_load(k, acc, ri), ir_load(k, bias, bj)), ir_flt(k, 0, DT_F32));
    ir_list_push(&lj2->u.loop.body, ir_stmt(k, C, ci, SOP_ASSIGN, v, nowhere), lj2);
    ir_list_push(&li2->u.loop.body, lj2, li2);
    ir_list_push(&k->body, li2, NULL);
    return k;
}

/* Y[i] += X[j] for j <= i: a triangle, by a guard (guard) or by a loop bound. */
static Kernel *triangle(int64_t n, bool guard)
{
    Kernel *k = ir_kernel_new("triangle", nowhere);
    bind(k, "N", n);
    Buffer *X = ir_add_buffer(k, "X", DT_F32, BUF_IN, 1, nowhere);
    Buffer *Y = ir_add_buffer(k, "Y", DT_F32, BUF_OUT, 1, nowhere);
    X->shape[0] = ir_param(k, 0);
    Y->shape[0] = ir_param(k, 0);
    Var *i = ir_new_var(k, "i"), *j = ir_new_var(k, "j");
    Node *li = ir_loop(k, i, ir_int(k, 0), ir_param(k, 0), nowhere);
    Expr *yi0[1] = {ir_var(k, i)};
    ir_list_push(&li->u.loop.body, ir_stmt(k, Y, yi0, SOP_ASSIGN, ir_flt(k, 0, DT_F32), nowhere), li);
    Expr *hi = guard ? ir_param(k, 0) : ir_bin(k, IE_ADD, ir_var(k, i), ir_int(k, 1));
    Node *lj = ir_loop(k, j, ir_int(k, 0), hi, nowhere);
    ir_list_push(&li->u.loop.body, lj, li);
    Expr *xj[1] = {ir_var(k, j)}, *yi[1] = {ir_var(k, i)};
    Node *st = ir_stmt(k, Y, yi, SOP_ADD, ir_load(k, X, xj), nowhere);
    if (guard) {
        Node *g = ir_guard(k, ir_bin(k, IE_LE, ir_var(k, j), ir_var(k, i)), nowhere);
        ir_list_push(&g->u.guard.body, st, g);
        ir_list_push(&lj->u.loop.body, g, lj);
    } else {
        ir_list_push(&lj->u.loop.body, st, lj);
    }
    ir_list_push(&k->body, li, NULL);
    return k;
}

static void test_counts(void)
{
    Diags d;
    diag_init(&d);
    RtWork w;
    Kernel *k = rt_test_gemm(7, 5, 9, DT_F32, DT_F32, false, false, GEMM_OK);
    CHECK(rt_analyse(k, &w, &d));
    CHECK(w.flops == 2 * 7 * 5 * 9 && w.execs == 7 * 5 + 7 * 5 * 9 && w.exact);
    CHECK(w.bytes == 4 * (7 * 9 + 9 * 5 + 7 * 5));
    CHECK(w.reduce_len == 9);
    CHECK(w.is_gemm && w.gemm.m == 7 && w.gemm.n == 5 && w.gemm.k == 9 && w.gemm.batch == 1);
    CHECK(!w.gemm.trans_a && !w.gemm.trans_b && !w.gemm.epilogue && w.gemm.c == 2);
    /* the zero-initialisation and the k loop inside the i, j nest */
    CHECK(w.gemm_nodes[0] && w.gemm_nodes[0]->kind == N_STMT && w.gemm_nodes[1] &&
          w.gemm_nodes[1]->kind == N_LOOP && w.rest_work == 0);
    ir_free(k);

    for (int t = 0; t < 4; t++) {
        bool ta = t & 1, tb = t & 2;
        k = rt_test_gemm(7, 5, 9, DT_F16, DT_F32, ta, tb, GEMM_OK);
        CHECK(rt_analyse(k, &w, &d) && w.is_gemm && w.gemm.trans_a == ta && w.gemm.trans_b == tb);
        CHECK(w.gemm.ta == DT_F16 && w.gemm.tc == DT_F32);
        CHECK(w.bytes == 2 * (7 * 9 + 9 * 5) + 4 * 7 * 5);
        ir_free(k);
    }

    k = rt_test_gemm(7, 5, 9, DT_F32, DT_F32, false, false, GEMM_SEPARATE_INIT);
    CHECK(rt_analyse(k, &w, &d) && w.is_gemm && w.gemm_nodes[0] == k->body.v[0] && w.gemm_nodes[1] == k->body.v[1]);
    ir_free(k);
    /* the wrong nests are not products OpenBLAS could stand in for */
    GemmVariant bad[] = {GEMM_K_FROM_1, GEMM_SKIP_LAST_ROW, GEMM_CONSTANT};
    for (int i = 0; i < 3; i++) {
        k = rt_test_gemm(7, 5, 9, DT_F32, DT_F32, false, false, bad[i]);
        CHECK(rt_analyse(k, &w, &d) && !w.is_gemm);
        ir_free(k);
    }
    /* square but transposed by mistake would read A[k, i]: still a product, flagged transposed */
    k = rt_test_gemm(6, 6, 6, DT_F32, DT_F32, true, false, GEMM_OK);
    CHECK(rt_analyse(k, &w, &d) && w.is_gemm && w.gemm.trans_a);
    ir_free(k);

    k = gemm_bias_relu(7, 5, 9);
    CHECK(rt_analyse(k, &w, &d) && w.is_gemm && w.gemm.epilogue && w.gemm.c == 4);
    CHECK(w.flops == 2 * 7 * 5 * 9 + 2 * 7 * 5 && w.rest_work == 3 * 7 * 5);
    ir_free(k);

    k = rt_test_add(100);
    CHECK(rt_analyse(k, &w, &d) && !w.is_gemm && w.flops == 100 && w.bytes == 1200 && w.reduce_len == 1);
    ir_free(k);

    for (int g = 0; g < 2; g++) {
        k = triangle(1000, g);
        CHECK(rt_analyse(k, &w, &d) && w.exact);
        CHECK(w.flops == 1000.0 * 1001 / 2 && w.execs == 1000 + 1000.0 * 1001 / 2);
        CHECK(w.reduce_len == 1000);
        ir_free(k);
    }
    /* past the enumeration budget: a midpoint estimate, said to be one */
    k = triangle(20000, true);
    CHECK(rt_analyse(k, &w, &d) && !w.exact && fabs(w.flops - 20000.0 * 20001 / 2) < 1e-3 * w.flops);
    ir_free(k);
    diag_flush(&d, stderr);
    diag_free(&d);
}

static void test_tolerance(void)
{
    CHECK(rt_tolerance(DT_F64, 1 << 20) == 1e-10);
    CHECK(rt_tolerance(DT_F32, 1) == 1e-5 && rt_tolerance(DT_F32, 100) == 1e-5);
    CHECK(fabs(rt_tolerance(DT_F32, 1000000) - 1e-3) < 1e-12);
    CHECK(rt_tolerance(DT_F16, 4096) == 1e-2 && rt_tolerance(DT_BF16, 4096) == 1e-2);
    /* capped: 1e-6 * sqrt(2^63) would be 3037 */
    char why[192];
    CHECK(rt_tolerance_why(DT_F32, INT64_MAX, why, sizeof why) == RT_TOL_CAP && strstr(why, "capped"));
    CHECK(rt_tolerance_why(DT_F32, 90000000, why, sizeof why) < RT_TOL_CAP && !why[0]);
    CHECK(rt_tolerance_why(DT_F32, 100000001, why, sizeof why) == RT_TOL_CAP && why[0]);
    CHECK(rt_tolerance_why(DT_F32, 4096, why, sizeof why) < RT_TOL_CAP && !why[0]);
    for (DType t = 0; t < DT_COUNT; t++)
        CHECK(rt_tolerance(t, INT64_MAX) <= RT_TOL_CAP);
    CHECK(rt_tolerance(DT_I32, 10) == 0);
    Kernel *k = rt_test_gemm(4, 4, 4, DT_F16, DT_F32, false, false, GEMM_OK);
    CHECK(rt_tolerance_dtype(k) == DT_F32); /* half inputs are rounded for the reference too */
    ir_free(k);
    k = rt_test_gemm(4, 4, 4, DT_F32, DT_BF16, false, false, GEMM_OK);
    CHECK(rt_tolerance_dtype(k) == DT_BF16);
    ir_free(k);
}

static bool has_cast(const Expr *e)
{
    if (!e)
        return false;
    if (e->kind == IE_CAST)
        return true;
    return has_cast(e->args[0]) || has_cast(e->args[1]) || has_cast(e->args[2]);
}

static void test_promote(void)
{
    Diags d;
    diag_init(&d);
    Kernel *k = rt_test_gemm(5, 6, 7, DT_F16, DT_F32, false, true, GEMM_OK);
    Kernel *p = ir_promote_f64(k);
    CHECK(ir_verify(p, &d));
    CHECK(p->nbufs == 3 && p->nparams == 3 && p->params[2].value == 7);
    for (int i = 0; i < p->nbufs; i++)
        CHECK(p->bufs[i]->dtype == DT_F64 && !strcmp(p->bufs[i]->name, k->bufs[i]->name) &&
              p->bufs[i]->kind == k->bufs[i]->kind);
    const Node *st = p->body.v[0]->u.loop.body.v[0]->u.loop.body.v[1]->u.loop.body.v[0];
    CHECK(st->kind == N_STMT && st->u.stmt.value->dtype == DT_F64 && !has_cast(st->u.stmt.value));
    /* the same numbers as the original on the interpreter: the inputs are exact in f64 */
    double **a = ir_alloc_buffers(k, 3), **b = ir_alloc_buffers(p, 3);
    for (int i = 0; i < 2; i++)
        memcpy(b[i], a[i], sizeof(double) * (size_t)ir_buffer_elems(k, k->bufs[i]));
    CHECK(ir_interp(k, a, &d) && ir_interp(p, b, &d));
    for (int i = 0; i < 30; i++)
        CHECK(a[2][i] == b[2][i]);
    ir_free_buffers(k, a);
    ir_free_buffers(p, b);
    ir_free(p);
    ir_free(k);
    diag_flush(&d, stderr);
    diag_free(&d);
}

/* Runs every reference available for k on the same inputs; they must agree to
 * f64 rounding.  The sampled reference must give the interpreter's value at every
 * element it samples. */
static void test_references_agree(Kernel *k)
{
    Diags d;
    diag_init(&d);
    RtWork w;
    CHECK(rt_analyse(k, &w, &d));
    double *out[4] = {0};
    const char *names[4] = {0};
    int nref = 0;
    int oc = -1;
    for (int i = 0; i < k->nbufs; i++)
        if (k->bufs[i]->kind == BUF_OUT)
            oc = i;
    int64_t nout = ir_buffer_elems(k, k->bufs[oc]);
    int64_t nsampled = 0;
    static const RtGoldenKind kinds[] = {RT_GOLDEN_INTERP, RT_GOLDEN_BLAS, RT_GOLDEN_DEVICE, RT_GOLDEN_SAMPLED_ONLY};
    for (int ki = 0; ki < 4; ki++) {
        RtGoldenKind kind = kinds[ki];
        if (kind == RT_GOLDEN_BLAS && (!w.is_gemm || !rt_blas_available()))
            continue;
#ifndef PERFC_HAVE_LLVM
        if (kind == RT_GOLDEN_DEVICE)
            continue;
#endif
        RtGolden *g = rt_golden_new(k, NULL, &w, NULL, "host", (int)kind, &d);
        CHECK(g && rt_golden_kind(g) == kind);
        if (!g)
            continue;
        double **bufs = calloc((size_t)k->nbufs, sizeof *bufs);
        Rng r;
        rng_seed(&r, 11);
        for (int i = 0; i < k->nbufs; i++) {
            int64_t n = ir_buffer_elems(k, k->bufs[i]);
            bufs[i] = aligned_alloc(64, ((size_t)n * 8 + 63) / 64 * 64);
            for (int64_t j = 0; j < n; j++)
                bufs[i][j] = NAN;
            if (k->bufs[i]->kind == BUF_IN)
                rt_fill_random(k->bufs[i]->dtype, n, &r, bufs[i], NULL);
        }
        CHECK(rt_golden_compute(g, bufs, 5, true, &d));
        if (kind == RT_GOLDEN_SAMPLED_ONLY) {
            const int64_t *at;
            const double *ref;
            CHECK(!rt_golden_full(g));
            nsampled = rt_golden_samples(g, oc, &at, &ref);
            CHECK(nsampled > 0);
            for (int64_t i = 0; i < nsampled; i++)
                if (!(fabs(ref[i] - out[0][at[i]]) <= 1e-13 * fmax(1, fabs(out[0][at[i]])))) {
                    fprintf(stderr, "%s: sample %lld: %.17g, the interpreter %.17g\n", k->name, (long long)at[i],
                            ref[i], out[0][at[i]]);
                    CHECK(false);
                    break;
                }
        } else {
            CHECK(rt_golden_full(g));
            names[nref] = rt_golden_name(g);
            out[nref++] = bufs[oc];
            bufs[oc] = NULL;
        }
        for (int i = 0; i < k->nbufs; i++)
            free(bufs[i]);
        free(bufs);
        rt_golden_free(g);
    }
    for (int r = 1; r < nref; r++) {
        double num = 0, den = 0;
        for (int64_t i = 0; i < nout; i++) {
            num += (out[r][i] - out[0][i]) * (out[r][i] - out[0][i]);
            den += out[0][i] * out[0][i];
        }
        if (!(sqrt(num / den) < 1e-13))
            fprintf(stderr, "%s: %s and %s differ by %g\n", k->name, names[0], names[r], sqrt(num / den));
        CHECK(sqrt(num / den) < 1e-13);
    }
    fprintf(stderr, "ok: %s: %d references agree, %lld sampled elements match\n", k->name, nref,
            (long long)nsampled);
    for (int r = 0; r < nref; r++)
        free(out[r]);
    diag_flush(&d, stderr);
    diag_free(&d);
}

static void test_data(void)
{
    Rng r;
    rng_seed(&r, 5);
    DType ts[] = {DT_F64, DT_F32, DT_F16, DT_BF16, DT_I32};
    for (size_t t = 0; t < sizeof ts / sizeof *ts; t++) {
        double v[257], back[257];
        unsigned char native[257 * 8];
        rt_fill_random(ts[t], 257, &r, v, native);
        bool varied = false, in_range = true;
        for (int i = 0; i < 257; i++) {
            varied |= v[i] != v[0];
            in_range &= dtype_is_float(ts[t]) ? v[i] >= -1 && v[i] < 1 : v[i] >= -16 && v[i] <= 16;
        }
        CHECK(varied && in_range);
        rt_from_native(ts[t], native, back, 257);
        CHECK(!memcmp(v, back, sizeof v)); /* exact: values were rounded first */
        rt_poison(ts[t], native, 257);
        rt_from_native(ts[t], native, back, 257);
        CHECK(dtype_is_float(ts[t]) ? isnan(back[0]) && isnan(back[256]) : back[0] == INT32_MIN);
    }
    /* a one-element input is never zero */
    for (int i = 0; i < 50; i++) {
        double v;
        rt_fill_random(DT_I32, 1, &r, &v, NULL);
        CHECK(v != 0);
    }
}

int main(void)
{
    test_counts();
    test_tolerance();
    test_promote();
    test_data();
    Kernel *k = rt_test_gemm(40, 30, 50, DT_F32, DT_F32, false, false, GEMM_OK);
    test_references_agree(k);
    ir_free(k);
    k = rt_test_gemm(33, 31, 29, DT_BF16, DT_F32, true, true, GEMM_OK);
    test_references_agree(k);
    ir_free(k);
    k = gemm_bias_relu(40, 30, 50);
    test_references_agree(k);
    ir_free(k);
    k = triangle(300, true);
    test_references_agree(k);
    ir_free(k);
    if (rt_test_failures)
        fprintf(stderr, "%d failures\n", rt_test_failures);
    return rt_test_failures != 0;
}
