/* Hand-built IR kernels (cg_kernels.c) through the LLVM JIT, checked against the
 * interpreter on every x86 target this machine can execute, so both the native and
 * the integer f16 conversions are exercised; exact tests pin the f16/bf16
 * conversions and exp against the reference implementations; diagnostics for GPU
 * loop kinds, vector fallback, unbound sizes and unknown or foreign targets. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_test.h"
#include "codegen/llvm/cg_llvm_int.h"
#include "runtime/pool.h"
#include "../lowered.h"

/* ---- exact tests ---- */

static const float specials[] = {
    0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.99f, 65520.0f, 1e6f, -1e6f, INFINITY, -INFINITY, NAN,
    6.1035156e-05f /* 2^-14 */, 6.0e-05f, 5.9604645e-08f /* 2^-24 */, 2.9802322e-08f /* 2^-25: tie */,
    2.9802326e-08f, 8.940697e-08f /* 1.5 * 2^-24: tie */, 1.0009765625f /* f16 tie */, 1.00146484375f,
    3.0517578e-05f, 0.33333334f, -2.7182817f, 1e-40f, 3.3895314e38f, 1.0039062f /* bf16 tie */, 1.0117188f,
};
#define NSPECIAL ((int)(sizeof specials / sizeof specials[0]))

/* Y16 = f16(X), YB = bf16(X), Z = f32(Y16 loaded back): bit for bit as dtype.c. */
static Kernel *conv_kernel(bool vec)
{
    Kernel *k = ir_kernel_new(vec ? "convv" : "convs", (Span){0});
    Buffer *X = cgt_buf(k, "X", DT_F32, BUF_IN, NSPECIAL, -1);
    Buffer *H = cgt_buf(k, "H", DT_F16, BUF_IN, 64, -1), *Bb = cgt_buf(k, "Bb", DT_BF16, BUF_IN, 64, -1);
    Buffer *Y16 = cgt_buf(k, "Y16", DT_F16, BUF_OUT, NSPECIAL, -1), *YB = cgt_buf(k, "YB", DT_BF16, BUF_OUT, NSPECIAL, -1);
    Buffer *Z = cgt_buf(k, "Z", DT_F32, BUF_OUT, 2, 64);
    Var *i = ir_new_var(k, "i"), *j = ir_new_var(k, "j");
    Node *l = cgt_loop(k, NULL, i, cgt_i(k, 0), cgt_i(k, NSPECIAL), vec ? LOOP_SERIAL : LOOP_SERIAL);
    if (vec) {
        /* one vector of NSPECIAL lanes */
        l->u.loop.kind = LOOP_VECTOR;
    }
    cgt_push(k, l, cgt_st(k, Y16, cgt_v(k, i), NULL, SOP_ASSIGN, ir_cast(k, cgt_ld(k, X, cgt_v(k, i), NULL), DT_F16)));
    cgt_push(k, l, cgt_st(k, YB, cgt_v(k, i), NULL, SOP_ASSIGN, ir_cast(k, cgt_ld(k, X, cgt_v(k, i), NULL), DT_BF16)));
    Node *lj = cgt_loop(k, NULL, j, cgt_i(k, 0), cgt_i(k, 64), vec ? LOOP_VECTOR : LOOP_SERIAL);
    cgt_push(k, lj, cgt_st(k, Z, cgt_i(k, 0), cgt_v(k, j), SOP_ASSIGN, ir_cast(k, cgt_ld(k, H, cgt_v(k, j), NULL), DT_F32)));
    cgt_push(k, lj, cgt_st(k, Z, cgt_i(k, 1), cgt_v(k, j), SOP_ASSIGN, ir_cast(k, cgt_ld(k, Bb, cgt_v(k, j), NULL), DT_F32)));
    return k;
}

static void test_conversions(const char *target)
{
    for (int vec = 0; vec < 2; vec++) {
        Kernel *k = conv_kernel(vec);
        Diags d;
        diag_init(&d);
        JitKernel *j = tl_jit(k, target, &d);
        diag_flush(&d, stderr);
        diag_free(&d);
        CHECK(j, "conversions: JIT for %s", target);
        if (!j) {
            ir_free(k);
            continue;
        }
        float x[NSPECIAL];
        uint16_t h[64], bb[64], y16[NSPECIAL], yb[NSPECIAL];
        float z[128];
        memcpy(x, specials, sizeof x);
        /* every exponent, with mantissas that probe the ends; NaN and inf included */
        for (int t = 0; t < 64; t++) {
            h[t] = (uint16_t)((t & 1 ? 0x8000 : 0) | ((t / 2) << 10) | (t % 3 == 0 ? 0x3ff : t % 3 == 1 ? 0x001 : 0x200));
            bb[t] = (uint16_t)(t * 1031 + 0x3f00);
        }
        h[0] = 0x0001; /* smallest subnormal */
        h[2] = 0x03ff; /* largest subnormal */
        void *bufs[] = {x, h, bb, y16, yb, z};
        void *al[6];
        size_t sz[6] = {sizeof x, sizeof h, sizeof bb, sizeof y16, sizeof yb, sizeof z};
        for (int b = 0; b < 6; b++) {
            al[b] = cgt_alloc((int64_t)sz[b]);
            memcpy(al[b], bufs[b], sz[b]);
        }
        cg_jit_run(j, al);
        memcpy(y16, al[3], sizeof y16);
        memcpy(yb, al[4], sizeof yb);
        memcpy(z, al[5], sizeof z);
        for (int t = 0; t < NSPECIAL; t++) {
            uint16_t e16 = f32_to_f16_bits(x[t]), eb = f32_to_bf16_bits(x[t]);
            bool nan = isnan(x[t]);
            CHECK(nan ? (y16[t] & 0x7c00) == 0x7c00 && (y16[t] & 0x3ff) : y16[t] == e16,
                  "%s %s: f16(%a) = %#x, expected %#x", target, vec ? "vector" : "scalar", (double)x[t], y16[t], e16);
            CHECK(nan ? (yb[t] & 0x7f80) == 0x7f80 && (yb[t] & 0x7f) : yb[t] == eb, "%s %s: bf16(%a) = %#x, expected %#x",
                  target, vec ? "vector" : "scalar", (double)x[t], yb[t], eb);
        }
        for (int t = 0; t < 64; t++) {
            float e = f16_bits_to_f32(h[t]), eb2 = bf16_bits_to_f32(bb[t]);
            CHECK((isnan(e) && isnan(z[t])) || memcmp(&e, &z[t], 4) == 0, "%s %s: f32(f16 %#x) = %a, expected %a",
                  target, vec ? "vector" : "scalar", h[t], (double)z[t], (double)e);
            CHECK((isnan(eb2) && isnan(z[64 + t])) || memcmp(&eb2, &z[64 + t], 4) == 0,
                  "%s %s: f32(bf16 %#x) = %a, expected %a", target, vec ? "vector" : "scalar", bb[t],
                  (double)z[64 + t], (double)eb2);
        }
        for (int b = 0; b < 6; b++)
            free(al[b]);
        cg_jit_free(j);
        ir_free(k);
    }
}

/* exp in f32 (the inline polynomial) against libm in double: within 2 ulp, with
 * overflow to inf, underflow to subnormals and zero, and NaN kept. */
static void test_exp(const char *target)
{
    enum { N = 4096 };
    Kernel *k = ir_kernel_new("expt", (Span){0});
    Buffer *X = cgt_buf(k, "X", DT_F32, BUF_IN, N, -1), *Y = cgt_buf(k, "Y", DT_F32, BUF_OUT, N, -1);
    Var *i = ir_new_var(k, "i"), *ii = ir_new_var(k, "ii");
    Node *l = cgt_loop(k, NULL, i, cgt_i(k, 0), cgt_i(k, N / 16), LOOP_SERIAL);
    Node *lv = cgt_loop(k, l, ii, cgt_i(k, 0), cgt_i(k, 16), LOOP_VECTOR);
    Expr *ie = cgt_add(k, cgt_mul(k, cgt_v(k, i), cgt_i(k, 16)), cgt_v(k, ii));
    cgt_push(k, lv, cgt_st(k, Y, ie, NULL, SOP_ASSIGN, ir_un(k, IE_EXP, cgt_ld(k, X, ie, NULL))));
    Diags d;
    diag_init(&d);
    JitKernel *j = tl_jit(k, target, &d);
    diag_flush(&d, stderr);
    diag_free(&d);
    CHECK(j, "exp: JIT for %s", target);
    if (j) {
        float *x = cgt_alloc(N * 4), *y = cgt_alloc(N * 4);
        for (int t = 0; t < N; t++)
            x[t] = -110.0f + 210.0f * (float)t / (N - 8);
        x[N - 8] = NAN;
        x[N - 7] = INFINITY;
        x[N - 6] = -INFINITY;
        x[N - 5] = 0;
        x[N - 4] = 88.72f;
        x[N - 3] = 88.73f;
        x[N - 2] = -87.5f;
        x[N - 1] = -103.5f;
        void *bufs[2] = {x, y};
        cg_jit_run(j, bufs);
        int bad = 0;
        for (int t = 0; t < N; t++) {
            double e = exp((double)x[t]);
            float ef = (float)e;
            if (isnan(x[t])) {
                bad += !isnan(y[t]);
                continue;
            }
            if (isinf(ef) || ef == 0) {
                bad += y[t] != ef;
                if (y[t] != ef && bad < 4)
                    fprintf(stderr, "exp(%a) = %a, expected %a\n", (double)x[t], (double)y[t], (double)ef);
                continue;
            }
            double ulp = ef < 1.1754944e-38f ? 0x1p-149 : fabs((double)nextafterf(ef, INFINITY) - ef);
            if (fabs(y[t] - e) > 2 * ulp) {
                if (bad < 4)
                    fprintf(stderr, "exp(%a) = %a, expected %a\n", (double)x[t], (double)y[t], e);
                bad++;
            }
        }
        CHECK(bad == 0, "%s: exp off by more than 2 ulp at %d points", target, bad);
        free(x);
        free(y);
        cg_jit_free(j);
    }
    ir_free(k);
}

/* exp in f32 densely: every 61st f32 bit pattern with the sign both ways (every
 * float when PERFC_EXP_EXHAUSTIVE is set; about a minute per target), against libm
 * in double.  Within 2 ulp of the exact value (a subnormal's ulp is 2^-149), exactly
 * inf / 0 where the rounded result is, NaN for NaN.  Prints the worst error seen. */
static void test_exp_dense(const char *target)
{
    enum { N = 1 << 16 };
    Kernel *k = ir_kernel_new("expd", (Span){0});
    Buffer *X = cgt_buf(k, "X", DT_F32, BUF_IN, N, -1), *Y = cgt_buf(k, "Y", DT_F32, BUF_OUT, N, -1);
    Var *i = ir_new_var(k, "i"), *ii = ir_new_var(k, "ii");
    Node *l = cgt_loop(k, NULL, i, cgt_i(k, 0), cgt_i(k, N / 8), LOOP_SERIAL);
    Node *lv = cgt_loop(k, l, ii, cgt_i(k, 0), cgt_i(k, 8), LOOP_VECTOR);
    Expr *ie = cgt_add(k, cgt_mul(k, cgt_v(k, i), cgt_i(k, 8)), cgt_v(k, ii));
    cgt_push(k, lv, cgt_st(k, Y, ie, NULL, SOP_ASSIGN, ir_un(k, IE_EXP, cgt_ld(k, X, ie, NULL))));
    Diags d;
    diag_init(&d);
    JitKernel *j = tl_jit(k, target, &d);
    diag_flush(&d, stderr);
    diag_free(&d);
    CHECK(j, "exp dense: JIT for %s", target);
    if (j) {
        float *x = cgt_alloc(N * 4), *y = cgt_alloc(N * 4);
        uint64_t stride = getenv("PERFC_EXP_EXHAUSTIVE") ? 1 : 61;
        uint64_t bad = 0, count = 0;
        double worst = 0, worst_x = 0;
        for (uint64_t b = 0; b < (1ull << 32);) {
            int n = 0;
            for (; n < N && b < (1ull << 32); n++, b += stride) {
                uint32_t u = (uint32_t)b;
                memcpy(&x[n], &u, 4);
            }
            for (int t = n; t < N; t++)
                x[t] = 0;
            void *bufs[2] = {x, y};
            cg_jit_run(j, bufs);
            for (int t = 0; t < n; t++) {
                count++;
                if (isnan(x[t])) {
                    bad += !isnan(y[t]);
                    continue;
                }
                double e = exp((double)x[t]);
                float ef = (float)e;
                if (isinf(ef) || ef == 0) {
                    bad += y[t] != ef;
                    continue;
                }
                double ulp = ef < 1.1754944e-38f ? 0x1p-149 : fabs((double)nextafterf(ef, INFINITY) - ef);
                double err = fabs(y[t] - e) / ulp;
                if (err > worst)
                    worst = err, worst_x = x[t];
                bad += err > 2;
            }
        }
        printf("exp on %s: %llu points, worst error %.3f ulp at x = %a\n", target, (unsigned long long)count, worst,
               worst_x);
        CHECK(bad == 0, "%s: exp wrong at %llu of %llu points", target, (unsigned long long)bad,
              (unsigned long long)count);
        free(x);
        free(y);
        cg_jit_free(j);
    }
    ir_free(k);
}

/* ---- diagnostics ---- */

static void test_diagnostics(void)
{
    Kernel *k = cgt_gemm("gpu_kinds", DT_F32, 4, 4, 4);
    k->body.v[0]->u.loop.kind = LOOP_BLOCK_X;
    Diags d;
    diag_init(&d);
    JitKernel *j = tl_jit(k, "host", &d);
    CHECK(!j && d.nerrors == 1 && strstr(d.text.s, "block.x") && strstr(d.text.s, "GPU"),
          "a GPU loop kind must be refused on a CPU target: %s", d.text.s ? d.text.s : "(nothing reported)");
    cg_jit_free(j);
    diag_free(&d);
    ir_free(k);

    k = cgt_vec_fallback();
    diag_init(&d);
    j = tl_jit(k, "host", &d);
    CHECK(j && d.nerrors == 0 && d.nwarnings == 1 && strstr(d.text.s, "store to Y is not unit-stride"),
          "a non-unit-stride vector store must fall back with one warning: %s", d.text.s ? d.text.s : "(nothing)");
    cg_jit_free(j);
    diag_free(&d);
    ir_free(k);

    k = cgt_gemm("unbound", DT_F32, 4, 4, 4);
    ir_add_param(k, "M");
    k->bufs[0]->shape[0] = ir_param(k, 0);
    diag_init(&d);
    j = tl_jit(k, "host", &d);
    CHECK(!j && d.nerrors >= 1, "an unbound parameter must be refused");
    cg_jit_free(j);
    diag_free(&d);
    ir_free(k);

    diag_init(&d);
    k = cgt_gemm("gemm", DT_F32, 37, 29, 13);
    j = tl_jit(k, "sparc", &d);
    CHECK(!j && d.nerrors == 1 && strstr(d.text.s, "unknown CPU target"), "unknown target");
    diag_free(&d);
    diag_init(&d);
    j = tl_jit(k, "aarch64", &d);
    CHECK(!j && d.nerrors == 1 && strstr(d.text.s, "cannot run on this machine"), "aarch64 JIT on x86");
    diag_free(&d);
    ir_free(k);
    CHECK(cg_llvm_target_known("riscv64-v") && cg_llvm_target_known("host") && !cg_llvm_target_known("sm_90"),
          "cg_llvm_target_known");
}

int main(void)
{
    /* Every x86 target this machine runs, so both f16 paths are covered. */
    const char *all[] = {"host", "x86_64", "x86_64-avx2", "x86_64-avx512"};
    const char *targets[4];
    int nt = 0;
    for (int i = 0; i < 4; i++) {
        CgTarget t;
        if (cg_target_lookup(all[i], &t) && cg_target_runs_on_host(&t))
            targets[nt++] = all[i];
    }
    for (int i = 0; i < cgt_nkernels; i++) {
        for (int t = 0; t < nt; t++) {
            Kernel *k = cgt_kernels[i].build();
            char what[128];
            snprintf(what, sizeof what, "%s on %s", cgt_kernels[i].name, targets[t]);
            bool ok = true;
            for (uint64_t seed = 1; seed <= 2 && ok; seed++)
                ok = cgt_jit_check(k, targets[t], seed * 7919, what, NULL);
            CHECK(ok, "%s", what);
            ir_free(k);
        }
    }
    for (int t = 0; t < nt; t++) {
        test_conversions(targets[t]);
        test_exp(targets[t]);
        test_exp_dense(targets[t]);
    }
    test_diagnostics();
    if (cgt_failures)
        fprintf(stderr, "%d failure(s)\n", cgt_failures);
    else
        printf("all codegen kernel tests passed on %d target(s), %d pool thread(s)\n", nt, perfc_pool_threads());
    return cgt_failures ? 1 : 0;
}
