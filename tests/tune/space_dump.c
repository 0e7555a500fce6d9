/* The tuner's search spaces, printed candidate by candidate, for kernels written
 * here (not stdlib's, whose names and schedules change on their own).
 *
 *   tune_space_dump dump       every template of every case on host, sm_80 and
 *                              sm_90a: its origin and parameters, then for each
 *                              candidate (all of them, or 256 spread evenly over a
 *                              larger space) the schedule text the tuner records and
 *                              a hash of the IR that candidate schedules to.  Two
 *                              perfc builds whose dumps are identical propose the same
 *                              candidates and build the same loop nests from them
 *                              (tests/tune/space_compare.sh runs two and diffs).
 *   tune_space_dump reparse    16 candidates per template spread the same way, each
 *                              one's recorded schedule text parsed by the ordinary
 *                              schedule parser and applied to a freshly lowered
 *                              kernel: the printed IR must equal the
 *                              tuner's own (the text in the database, the report and
 *                              --autotune's block re-applies to the same IR).
 *
 * Scheduling is IR only (no compilation), so the whole run takes seconds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/ast.h"
#include "passes/passes.h"
#include "passes/xform.h"
#include "tune/tune.h"

typedef struct Case {
    const char *name;
    const char *text;
    int64_t sizes[9]; /* per kernel parameter, in order */
} Case;

static const Case cases[] = {
    {"gemm 256", "kernel gemm(M, N, K) {\n in A: f32[M, K]\n in B: f32[K, N]\n out C: f32[M, N]\n"
                 " C[i, j] = sum(k) A[i, k] * B[k, j]\n}\n", {256, 256, 256}},
    {"gemm 127x64x96", "kernel gemm(M, N, K) {\n in A: f32[M, K]\n in B: f32[K, N]\n out C: f32[M, N]\n"
                       " C[i, j] = sum(k) A[i, k] * B[k, j]\n}\n", {127, 64, 96}},
    {"gemm f16 512", "kernel gemm_h(M, N, K) {\n in A: f16[M, K]\n in B: f16[K, N]\n out C: f32[M, N]\n"
                     " C[i, j] = sum(k) A[i, k] * B[k, j]\n}\n", {512, 512, 512}},
    {"gemm bf16 256", "kernel gemm_b(M, N, K) {\n in A: bf16[M, K]\n in B: bf16[K, N]\n out C: f32[M, N]\n"
                      " C[i, j] = sum(k) A[i, k] * B[k, j]\n}\n", {256, 256, 256}},
    {"gemm+bias+relu 256", "kernel gbr(M, N, K) {\n in A: f32[M, K]\n in B: f32[K, N]\n in bias: f32[N]\n"
                           " out C: f32[M, N]\n acc[i, j] = sum(k) A[i, k] * B[k, j]\n"
                           " C[i, j] = max(acc[i, j] + bias[j], 0.0)\n}\n", {256, 256, 256}},
    {"batched gemm 8x128", "kernel bg(B, M, N, K) {\n in A: f32[B, M, K]\n in W: f32[B, K, N]\n"
                           " out C: f32[B, M, N]\n C[b, i, j] = sum(k) A[b, i, k] * W[b, k, j]\n}\n",
     {8, 128, 128, 128}},
    {"conv2d", "kernel conv(N, C, H, W, K, R, S, U, P) {\n in X: f32[N, C, H, W] pad(0)\n in F: f32[K, C, R, S]\n"
               " out Y: f32[N, K, (H + 2*P - R)/U + 1, (W + 2*P - S)/U + 1]\n"
               " Y[n, k, y, x] = sum(c, r, s) X[n, c, y*U + r - P, x*U + s - P] * F[k, c, r, s]\n}\n",
     {4, 32, 16, 16, 64, 3, 3, 1, 1}},
    {"softmax", "kernel sm(R, C) {\n in X: f32[R, C]\n out Y: f32[R, C]\n m[r] = max(c) X[r, c]\n"
                " e[r, c] = exp(X[r, c] - m[r])\n s[r] = sum(c) e[r, c]\n Y[r, c] = e[r, c] / s[r]\n}\n",
     {256, 1024}},
    {"layernorm", "kernel ln(R, C) {\n in X: f32[R, C]\n in gamma: f32[C]\n in beta: f32[C]\n out Y: f32[R, C]\n"
                  " mean[r] = sum(c) X[r, c] / C\n d[r, c] = X[r, c] - mean[r]\n"
                  " var[r] = sum(c) d[r, c] * d[r, c] / C\n"
                  " Y[r, c] = d[r, c] * rsqrt(var[r] + 1e-5) * gamma[c] + beta[c]\n}\n", {256, 512}},
    {"attention", "kernel att(B, H, S, D) {\n in Q: bf16[B, H, S, D]\n in K: bf16[B, H, S, D]\n"
                  " in V: bf16[B, H, S, D]\n out O: bf16[B, H, S, D]\n"
                  " s[b, h, i, j] = sum(d) Q[b, h, i, d] * rsqrt(D) * K[b, h, j, d]\n"
                  " m[b, h, i] = max(j) s[b, h, i, j]\n p[b, h, i, j] = exp(s[b, h, i, j] - m[b, h, i])\n"
                  " l[b, h, i] = sum(j) p[b, h, i, j]\n"
                  " O[b, h, i, d] = sum(j) p[b, h, i, j] * V[b, h, j, d] / l[b, h, i]\n}\n", {2, 4, 128, 64}},
    {"matvec", "kernel mv(M, N) {\n in A: f32[M, N]\n in x: f32[N]\n out y: f32[M]\n"
               " y[i] = sum(j) A[i, j] * x[j]\n}\n", {512, 256}},
    {"matvec 1000", "kernel mv(M, N) {\n in A: f32[M, N]\n in x: f32[N]\n out y: f32[M]\n"
                    " y[i] = sum(j) A[i, j] * x[j]\n}\n", {97, 1000}},
    {"column sum", "kernel cs(R, C) {\n in X: f32[R, C]\n out Y: f32[C]\n Y[c] = sum(r) X[r, c]\n}\n", {300, 100}},
    {"matvec transposed", "kernel mvt(M, K) {\n in A: f32[K, M]\n in x: f32[K]\n out y: f32[M]\n"
                          " y[i] = sum(k) A[k, i] * x[k]\n}\n", {200, 64}},
    {"sum to scalar", "kernel tot(N) {\n in X: f32[N]\n out s: f32\n s = sum(i) X[i]\n}\n", {100003}},
    {"sum 2-D to scalar", "kernel tot2(R, C) {\n in X: f32[R, C]\n out s: f32\n s = sum(r, c) X[r, c]\n}\n", {300, 200}},
    {"transpose", "kernel tr(R, C) {\n in X: f32[R, C]\n out Y: f32[C, R]\n Y[c, r] = X[r, c]\n}\n", {200, 301}},
    {"elementwise", "kernel ew(M, N) {\n in A: f32[M, N]\n out Y: f32[M, N]\n Y[i, j] = exp(A[i, j]) * 2.0\n}\n",
     {64, 512}},
};

static const char *const targets[] = {"host", "sm_80", "sm_90a"};

static uint64_t fnv(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static int failures;

/* One candidate: its recorded text and scheduled IR; with reparse, the text applied
 * again through the parser must give the same IR. */
static void candidate(const TuneInput *in, const TuneTemplate *t, const int *idx, bool reparse, Arena *a)
{
    ParamChoice ch[TUNE_MAX_PARAMS];
    for (int p = 0; p < t->nparams; p++) {
        ch[p].name = t->names[p];
        ch[p].index = idx[p];
        printf("%s%d", p ? "," : "  [", idx[p]);
    }
    printf("%s", t->nparams ? "]" : "  []");
    Diags d;
    diag_init(&d);
    StrBuf text = {0}, ir = {0};
    Kernel *k = tune_apply(in, t, ch, t->nparams, &text, &d);
    if (!k) {
        const char *m = d.text.s ? d.text.s : "refused";
        const char *nl = strchr(m, '\n');
        printf(" refused: %.*s\n", nl ? (int)(nl - m) : (int)strlen(m), m);
        diag_free(&d);
        sb_free(&text);
        return;
    }
    ir_print_kernel(k, &ir);
    printf(" ir %016llx\n%s", (unsigned long long)fnv(ir.s), text.s ? text.s : "");
    if (reparse) {
        Source *src = arena_alloc(a, sizeof *src);
        src->path = "<recorded>";
        src->text = arena_strdup(a, text.s ? text.s : "");
        src->len = strlen(src->text);
        AstSchedule *s = parse_schedule_text(a, src, &d);
        Kernel *k2 = NULL;
        if (s && !d.nerrors) {
            s->kernel = in->ast->name;
            TuneTemplate w = {.s = s, .origin = "recorded"};
            k2 = tune_apply(in, &w, NULL, 0, NULL, &d);
        }
        StrBuf ir2 = {0};
        if (k2)
            ir_print_kernel(k2, &ir2);
        if (!k2 || strcmp(ir.s, ir2.s)) {
            fprintf(stderr, "FAIL: the recorded text does not re-apply to the same IR:\n%s%s\n",
                    text.s ? text.s : "", d.text.s ? d.text.s : "");
            failures++;
        }
        if (k2)
            ir_free(k2);
        sb_free(&ir2);
    }
    ir_free(k);
    diag_free(&d);
    sb_free(&text);
    sb_free(&ir);
}

static bool run_case(const Case *c, const char *target, bool reparse)
{
    Arena *a = arena_new();
    Source src = {.path = c->name, .text = c->text, .len = strlen(c->text)};
    Diags d;
    diag_init(&d);
    Program *prog = parse_program(a, &src, &d);
    if (!d.nerrors)
        sema_program(prog, &d);
    if (d.nerrors) {
        diag_flush(&d, stderr);
        diag_free(&d);
        arena_free(a);
        return false;
    }
    AstKernel *ak = prog->kernels[0];
    int64_t values[9] = {0};
    bool bound[9] = {0};
    for (int i = 0; i < ak->nparams && i < 9; i++)
        values[i] = c->sizes[i], bound[i] = true;
    TuneInput in = {.prog = prog, .ast = ak, .values = values, .bound = bound};
    Kernel *u = tune_apply(&in, NULL, NULL, 0, NULL, &d);
    TuneSpace sp;
    bool ok = u && tune_space(&in, u, target_find(target), a, &sp, &d);
    if (!ok) {
        diag_flush(&d, stderr);
        diag_free(&d);
        if (u)
            ir_free(u);
        arena_free(a);
        return false;
    }
    printf("=== %s on %s: %s, %d templates, %.0f candidates\n", c->name, target, sp.kclass, sp.n, sp.size);
    for (int ti = 0; ti < sp.n; ti++) {
        const TuneTemplate *t = &sp.t[ti];
        double total = 1;
        printf("--- template %d: %s;", ti + 1, t->origin);
        for (int p = 0; p < t->nparams; p++) {
            printf(" %s:%d", t->names[p], t->ncands[p]);
            total *= t->ncands[p];
        }
        printf("\n");
        /* the dump compares two builds: many candidates; the re-parse check runs in
         * the default test label (and under ASan): a spread of 16 per template */
        int cap = reparse ? 16 : 256;
        int n = total > cap ? cap : (int)total;
        for (int x = 0; x < n; x++) {
            /* candidate number x * total / n in mixed radix, last parameter fastest */
            long long r = (long long)((double)x * total / n);
            int idx[TUNE_MAX_PARAMS];
            for (int p = t->nparams - 1; p >= 0; p--) {
                idx[p] = (int)(r % t->ncands[p]);
                r /= t->ncands[p];
            }
            candidate(&in, t, idx, reparse, a);
        }
    }
    ir_free(u);
    diag_free(&d);
    arena_free(a);
    return true;
}

int main(int argc, char **argv)
{
    bool reparse = argc > 1 && !strcmp(argv[1], "reparse");
    if (argc < 2 || (!reparse && strcmp(argv[1], "dump"))) {
        fprintf(stderr, "usage: tune_space_dump dump|reparse\n");
        return 2;
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (size_t j = 0; j < sizeof targets / sizeof targets[0]; j++)
            if (!run_case(&cases[i], targets[j], reparse)) {
                fprintf(stderr, "FAIL: %s on %s: no search space\n", cases[i].name, targets[j]);
                failures++;
            }
    if (failures)
        fprintf(stderr, "%d failure%s\n", failures, failures == 1 ? "" : "s");
    return failures ? 1 : 0;
}
