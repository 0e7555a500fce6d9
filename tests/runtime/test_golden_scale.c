/* The golden references that scale (docs/harness.md, section 3), tested through the
 * real front end:
 *  - the sampled reference gives the full interpreter's value, to 1e-13, at every
 *    element it samples, for every stdlib kernel at small sizes (all elements, then
 *    the default sample on two input sets in a row, so a slice that read a stale
 *    temporary of the first set would show);
 *  - GEMMs written as a user writes them (a bf16 output, so an f32 accumulator and
 *    a conversion statement; a transposed weight) are recognised as the GEMM family
 *    and their dgemm reference agrees with the interpreter;
 *  - through the harness, with the reference forced: the sampled check alone
 *    rejects every planted cheat, one wrong element at a tile corner of the
 *    schedule, and a wrong tail; the full-tensor check alone rejects one wrong
 *    element anywhere; both together reject them all and accept the right kernel. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lang/ast.h"
#include "passes/passes.h"
#include "passes/xform.h"
#include "rt_test.h"
#include "runtime/golden_sample.h"

/* ---- the front end on a string or a file ---- */

typedef struct Front {
    Arena *a;
    Program *p;
    char *text;
} Front;

static bool front(Front *f, const char *path, char *text)
{
    f->a = arena_new();
    f->text = text;
    Source src = {path, text, strlen(text)};
    Diags d;
    diag_init(&d);
    f->p = parse_program(f->a, &src, &d);
    bool ok = f->p && !d.nerrors && sema_program(f->p, &d);
    diag_flush(&d, stderr);
    diag_free(&d);
    return ok;
}

static void front_free(Front *f)
{
    arena_free(f->a);
    free(f->text);
}

/* Lowers ak with vals; with sched, the file's CPU schedules applied too (NULL
 * when they are refused at this shape). */
static Kernel *lower(const Front *f, const AstKernel *ak, const int64_t *vals, bool sched)
{
    bool bound[32];
    for (int i = 0; i < 32; i++)
        bound[i] = true;
    Diags d;
    diag_init(&d);
    Kernel *k = lower_kernel(f->p, ak, vals, bound, &d);
    if (k && sched) {
        const AstSchedule *s[16];
        int ns = 0;
        for (int i = 0; i < f->p->nschedules && ns < 16; i++)
            if (schedule_applies(f->p->schedules[i], ak, target_find("host"), NULL))
                s[ns++] = f->p->schedules[i];
        PipelineOpts po = {0};
        po.schedules = s;
        po.nschedules = ns;
        if (!ns || !pipeline_run(k, &po, &d)) {
            ir_free(k);
            k = NULL;
        }
    }
    diag_free(&d);
    return k;
}

/* ---- sampled == interpreter on every stdlib kernel ---- */

static double **fresh_buffers(const Kernel *k, uint64_t seed)
{
    double **b = calloc((size_t)k->nbufs, sizeof *b);
    Rng r;
    rng_seed(&r, seed);
    for (int i = 0; i < k->nbufs; i++) {
        int64_t n = ir_buffer_elems(k, k->bufs[i]);
        b[i] = malloc(sizeof(double) * (size_t)(n ? n : 1));
        for (int64_t j = 0; j < n; j++)
            b[i][j] = NAN;
        if (k->bufs[i]->kind == BUF_IN)
            rt_fill_random(k->bufs[i]->dtype, n, &r, b[i], NULL);
    }
    return b;
}

static void free_buffers(const Kernel *k, double **b)
{
    for (int i = 0; i < k->nbufs; i++)
        free(b[i]);
    free(b);
}

/* Samples of u (k: the scheduled kernel or NULL) against the interpreter on
 * the same inputs; returns how many were compared. */
static int64_t compare_samples(const Kernel *u, const Kernel *k, int64_t max, uint64_t seed, RtSampler *s,
                               double **sb, const char *what)
{
    Diags d;
    diag_init(&d);
    Kernel *p = ir_promote_f64(u);
    double **fb = fresh_buffers(u, seed);
    for (int i = 0; i < u->nbufs; i++)
        if (u->bufs[i]->kind == BUF_IN)
            memcpy(sb[i], fb[i], sizeof(double) * (size_t)ir_buffer_elems(u, u->bufs[i]));
    CHECK(ir_interp(p, fb, &d));
    rt_sampler_limits(s, max, 1e12);
    CHECK(rt_sampler_run(s, sb, seed, &d));
    int64_t total = 0;
    for (int b = 0; b < u->nbufs; b++) {
        if (u->bufs[b]->kind != BUF_OUT)
            continue;
        const int64_t *at;
        const double *ref;
        int64_t n = rt_sampler_samples(s, b, &at, &ref);
        int64_t elems = ir_buffer_elems(u, u->bufs[b]);
        CHECK(n > 0 && n <= elems);
        if (max >= elems && n != elems) {
            fprintf(stderr, "%s: %lld of %lld elements sampled, wanted all\n", what, (long long)n, (long long)elems);
            CHECK(false);
        }
        for (int64_t i = 0; i < n; i++) {
            double want = fb[b][at[i]];
            if (!(fabs(ref[i] - want) <= 1e-13 * fmax(1, fabs(want)))) {
                fprintf(stderr, "%s: %s element %lld: sampled %.17g, interpreter %.17g\n", what, u->bufs[b]->name,
                        (long long)at[i], ref[i], want);
                CHECK(false);
                break;
            }
        }
        total += n;
    }
    (void)k;
    diag_flush(&d, stderr);
    diag_free(&d);
    free_buffers(u, fb);
    ir_free(p);
    return total;
}

static void test_stdlib(void)
{
    const char *dir = PERFC_SOURCE_DIR "/stdlib";
    DIR *dd = opendir(dir);
    CHECK(dd);
    if (!dd)
        return;
    struct dirent *de;
    int nk = 0;
    while ((de = readdir(dd))) {
        size_t len = strlen(de->d_name);
        if (len < 5 || strcmp(de->d_name + len - 4, ".pdl"))
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        size_t n;
        char *text = read_file(path, &n);
        CHECK(text);
        if (!text)
            continue;
        Front f;
        CHECK(front(&f, path, text));
        for (int ki = 0; ki < f.p->nkernels; ki++) {
            AstKernel *ak = f.p->kernels[ki];
            /* small sizes: defaults up to 16 kept (convolution windows, strides),
             * the rest odd and small */
            static const int64_t small[] = {7, 5, 9, 6, 3};
            int64_t vals[32];
            for (int i = 0; i < ak->nparams && i < 32; i++)
                vals[i] = ak->params[i].has_default && ak->params[i].def <= 16 ? ak->params[i].def : small[i % 5];
            Kernel *u = lower(&f, ak, vals, false);
            CHECK(u);
            if (!u)
                continue;
            Kernel *k = lower(&f, ak, vals, true);
            Diags d;
            diag_init(&d);
            RtSampler *s = rt_sampler_new(u, k, &d);
            CHECK(s);
            diag_flush(&d, stderr);
            diag_free(&d);
            if (s) {
                double **sb = fresh_buffers(u, 1);
                int64_t all = compare_samples(u, k, 1 << 30, 21, s, sb, ak->name);
                /* the default sample, twice: the slices reuse the temporaries */
                int64_t a = compare_samples(u, k, 300, 22, s, sb, ak->name);
                int64_t b = compare_samples(u, k, 300, 23, s, sb, ak->name);
                fprintf(stderr, "ok: %-20s all %lld elements, then %lld and %lld sampled, match%s\n", ak->name,
                        (long long)all, (long long)a, (long long)b, k ? " (tile edges of the CPU schedule)" : "");
                free_buffers(u, sb);
                rt_sampler_free(s);
            }
            ir_free(k);
            ir_free(u);
            nk++;
        }
        front_free(&f);
    }
    closedir(dd);
    CHECK(nk >= 10);
}

/* ---- user-written GEMMs ---- */

static void test_user_gemms(void)
{
    static const char *const src[] = {
        "kernel mm(M, N, K) {\n  in A: bf16[M, K]\n  in B: bf16[K, N]\n  out C: bf16[M, N]\n"
        "  C[i, j] = sum(k) A[i, k] * B[k, j]\n}\n",
        "kernel lin(M, N, K) {\n  in X: bf16[M, K]\n  in W: bf16[N, K]\n  out Y: bf16[M, N]\n"
        "  Y[i, j] = sum(k) X[i, k] * W[j, k]\n}\n",
        "kernel scaled(M, N, K) {\n  in A: f16[M, K]\n  in B: f16[K, N]\n  out C: f16[M, N]\n"
        "  C[i, j] = sum(k) f32(A[i, k]) * f32(B[k, j]) * 0.5\n}\n",
    };
    /* and a hand-built nest: an f32 product C with a second output D = 2 C after
     * the k loop in the same nest; the dgemm reference must still compute D */
    {
        Kernel *k = rt_test_gemm(37, 29, 53, DT_F32, DT_F32, false, false, GEMM_OK);
        Buffer *C = k->bufs[2];
        Buffer *D = ir_add_buffer(k, "D", DT_F32, BUF_OUT, 2, C->span);
        D->shape[0] = ir_param(k, 0);
        D->shape[1] = ir_param(k, 1);
        Node *lj = k->body.v[0]->u.loop.body.v[0];
        Expr *ci[2] = {ir_var(k, lj->parent->u.loop.var), ir_var(k, lj->u.loop.var)};
        Expr *di[2] = {ir_var(k, lj->parent->u.loop.var), ir_var(k, lj->u.loop.var)};
        ir_list_push(&lj->u.loop.body,
                     ir_stmt(k, D, di, SOP_ASSIGN, ir_bin(k, IE_MUL, ir_load(k, C, ci), ir_flt(k, 2, DT_F32)), C->span),
                     lj);
        Diags d;
        diag_init(&d);
        RtWork w;
        CHECK(ir_verify(k, &d));
        CHECK(rt_analyse(k, &w, &d) && w.is_gemm && w.gemm.epilogue);
        if (w.is_gemm && rt_blas_available()) {
            RtGolden *g = rt_golden_new(k, NULL, &w, NULL, "host", RT_GOLDEN_BLAS, &d);
            double **b = fresh_buffers(k, 4), **r = fresh_buffers(k, 4);
            Kernel *p = ir_promote_f64(k);
            CHECK(g && rt_golden_compute(g, b, 1, true, &d) && ir_interp(p, r, &d));
            for (int64_t i = 0; i < 37 * 29; i++)
                CHECK(fabs(b[3][i] - r[3][i]) <= 1e-13 * fmax(1, fabs(r[3][i])));
            fprintf(stderr, "ok: a second output in the product's nest is computed after dgemm\n");
            ir_free(p);
            free_buffers(k, b);
            free_buffers(k, r);
            rt_golden_free(g);
        }
        diag_flush(&d, stderr);
        diag_free(&d);
        ir_free(k);
    }
    for (size_t t = 0; t < sizeof src / sizeof *src; t++) {
        Front f;
        CHECK(front(&f, "user.pdl", xstrdup(src[t])));
        int64_t vals[3] = {37, 29, 53};
        Kernel *u = lower(&f, f.p->kernels[0], vals, false);
        CHECK(u);
        if (!u) {
            front_free(&f);
            continue;
        }
        Diags d;
        diag_init(&d);
        RtWork w;
        CHECK(rt_analyse(u, &w, &d));
        bool want = t < 2; /* the scale inside the sum is not a plain product */
        if (w.is_gemm != want)
            fprintf(stderr, "%s: is_gemm %d, wanted %d\n", u->name, w.is_gemm, want);
        CHECK(w.is_gemm == want);
        if (w.is_gemm) {
            CHECK(w.gemm.m == 37 && w.gemm.n == 29 && w.gemm.k == 53 && w.gemm.trans_b == (t == 1));
            CHECK(w.gemm.epilogue && w.rest_work == 37 * 29); /* the conversion C = C_acc */
            /* dgemm then the conversion against the interpreter */
            double *out[2];
            int oc = -1;
            for (int i = 0; i < u->nbufs; i++)
                if (u->bufs[i]->kind == BUF_OUT)
                    oc = i;
            int nr = rt_blas_available() ? 2 : 1;
            out[1] = NULL;
            for (int r = 0; r < nr; r++) {
                RtGolden *g = rt_golden_new(u, NULL, &w, NULL, "host", r ? RT_GOLDEN_BLAS : RT_GOLDEN_INTERP, &d);
                CHECK(g);
                double **b = fresh_buffers(u, 9);
                CHECK(g && rt_golden_compute(g, b, 1, true, &d));
                CHECK(!g || !strcmp(rt_golden_name(g), r ? "openblas-dgemm+interpreter" : "interpreter-f64"));
                out[r] = b[oc];
                b[oc] = NULL;
                free_buffers(u, b);
                rt_golden_free(g);
            }
            for (int64_t i = 0; out[1] && i < 37 * 29; i++)
                CHECK(fabs(out[0][i] - out[1][i]) <= 1e-13 * fmax(1, fabs(out[0][i])));
            free(out[0]);
            free(out[1]);
            fprintf(stderr, "ok: user GEMM %s recognised, dgemm agrees\n", u->name);
        }
        diag_flush(&d, stderr);
        diag_free(&d);
        ir_free(u);
        front_free(&f);
    }
}

/* ---- the harness with the references forced ---- */

enum { TM = 250, TN = 256, TK = 64, TILE = 16 };

static const char *const tiled_gemm =
    "kernel gemm(M, N, K) {\n  in A: f32[M, K]\n  in B: f32[K, N]\n  out C: f32[M, N]\n"
    "  C[i, j] = sum(k) A[i, k] * B[k, j]\n}\n"
    "schedule gemm for cpu {\n  split(i, 16, io, ii)\n  split(j, 16, jo, ji)\n  reorder(io, jo, ii, ji)\n}\n";

static void expect_as(RtDevice *host, const Kernel *k, const Kernel *u, Cheat c, int64_t at, RtGoldenKind kind,
                      const char *word, bool accepted)
{
    RtDevice *dev = rt_test_planted_device_at(host, c, TM, TN, TK, at);
    RunOptions o;
    rt_options_init(&o);
    o.min_time_s = 0.005;
    o.max_reps = 5;
    o.seed = 7;
    o.golden_kind = (int)kind + 1;
    RtResult r;
    Diags d;
    diag_init(&d);
    int rc = rt_evaluate(dev, k, u, &o, &r, &d);
    bool ok = accepted ? rc == 0 && r.valid : rc == 2 && !r.valid && r.time.reps == 0;
    if (ok && word)
        ok = strstr(r.reason, word) != NULL;
    fprintf(stderr, "%s: %-34s golden %-34s %s\n", ok ? "ok" : "FAILED", rt_test_cheat_name(c), r.golden,
            r.valid ? "accepted" : r.reason);
    if (!ok) {
        diag_flush(&d, stderr);
        rt_test_failures++;
    }
    diag_free(&d);
    free(dev);
}

static void expect(RtDevice *host, const Kernel *k, const Kernel *u, Cheat c, int64_t at, RtGoldenKind kind,
                   const char *word)
{
    expect_as(host, k, u, c, at, kind, word, c == CHEAT_NONE);
}

static void test_harness(void)
{
    Front f;
    CHECK(front(&f, "tiled.pdl", xstrdup(tiled_gemm)));
    int64_t vals[3] = {TM, TN, TK};
    Kernel *u = lower(&f, f.p->kernels[0], vals, false);
    Kernel *k = lower(&f, f.p->kernels[0], vals, true);
    CHECK(u && k);
    Diags d;
    diag_init(&d);
    RtDevice *host = rt_host_open(&d);
    CHECK(host);
    if (!u || !k || !host) {
        diag_flush(&d, stderr);
        return;
    }
    /* a corner of four tiles (row 15 | 16, column 31 | 32), the first row of the
     * partial last tile of rows, and an element inside a tile */
    const int64_t corner = 15 * TN + 32, inside = 100 * TN + 77;
    const int64_t tail_row = (TM / TILE) * TILE;
    static const Cheat dense[] = {CHEAT_OFF_BY_ONE, CHEAT_SKIP_TAIL, CHEAT_CONSTANT, CHEAT_STALE,
                                  CHEAT_FIRST_INPUTS, CHEAT_LAZY_TIMED, CHEAT_INF};
    RtGoldenKind both[] = {RT_GOLDEN_SAMPLED_ONLY, RT_GOLDEN_SAMPLED};
    for (int b = 0; b < 2; b++) {
        expect(host, k, u, CHEAT_NONE, 0, both[b], NULL);
        for (size_t i = 0; i < sizeof dense / sizeof *dense; i++)
            expect(host, k, u, dense[i], 0, both[b], NULL);
        /* on the first input set, by the sampled check alone */
        expect(host, k, u, CHEAT_ONE_ELEMENT, corner, both[b], "sampled elements exceeds the tolerance");
        expect(host, k, u, CHEAT_ONE_ELEMENT, corner, both[b], "C[15, 32]");
        expect(host, k, u, CHEAT_WRONG_TAIL, tail_row, both[b], "C[24");
        /* 1e-3 where the values are about 3: the relative error over the samples
         * (4e-6) and over all of C (1.5e-6) stay under 1e-5; the bound per element
         * (8 x 1e-5 x rms) does not */
        expect(host, k, u, CHEAT_ONE_SLIGHT, corner, both[b], "sampled element C[15, 32]");
    }
    /* the same element under the full-tensor check alone passes: a norm over 64000
     * elements does not see it (why the samples carry a bound per element) */
    expect_as(host, k, u, CHEAT_ONE_SLIGHT, corner, RT_GOLDEN_DEVICE, NULL, true);
    /* one wrong element inside a tile: the full-tensor check alone sees it */
    expect(host, k, u, CHEAT_ONE_ELEMENT, inside, RT_GOLDEN_DEVICE, "relative error");
    expect(host, k, u, CHEAT_ONE_ELEMENT, inside, RT_GOLDEN_SAMPLED, NULL);
    host->close(host);
    diag_free(&d);
    ir_free(u);
    ir_free(k);
    front_free(&f);
}

int main(void)
{
    test_stdlib();
    test_user_gemms();
#ifdef PERFC_HAVE_LLVM
    test_harness();
#endif
    if (rt_test_failures)
        fprintf(stderr, "%d failures\n", rt_test_failures);
    return rt_test_failures != 0;
}
