/* Every stdlib kernel against an independent, straightforward C implementation.
 *
 * For each kernel and each of several small shapes (all ones, odd sizes such as 7
 * and 33, and seeded random ones) the .pdl is parsed, checked and lowered by
 * perfc, run on the f64 reference interpreter, and compared with the plain loops
 * below, which share no code with perfc: they read the same seeded inputs and
 * compute the mathematics directly.  The relative error ||out - ref|| / ||ref||
 * must stay under 1e-12 and every output element must be written.
 *
 * Semantics the references follow (docs: the kernel's meaning): arithmetic in f64,
 * inputs as stored (already rounded to their dtype), float constants in the
 * statement's compute type (layernorm's eps is the f32 value of 1e-5), reads of a
 * padded input outside its bounds give 0.
 *
 *   test_stdlib STDLIB_DIR [KERNEL]     (all kernels when KERNEL is omitted) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "lang/ast.h"
#include "passes/passes.h"

/* ---- access to one run's buffers and sizes, by name ---- */

typedef struct Run {
    const Kernel *k;
    double **bufs;   /* perfc's buffers: inputs, and outputs as the interpreter left them */
    double **ref;    /* reference outputs, by buffer id */
} Run;

static int64_t P(const Run *r, const char *name)
{
    for (int i = 0; i < r->k->nparams; i++)
        if (!strcmp(r->k->params[i].name, name))
            return r->k->params[i].value;
    fprintf(stderr, "no parameter %s\n", name);
    exit(2);
}

static int buf_id(const Run *r, const char *name)
{
    for (int i = 0; i < r->k->nbufs; i++)
        if (!strcmp(r->k->bufs[i]->name, name))
            return i;
    fprintf(stderr, "no buffer %s\n", name);
    exit(2);
}

static const double *IN(const Run *r, const char *name)
{
    return r->bufs[buf_id(r, name)];
}

static double *OUT(const Run *r, const char *name)
{
    return r->ref[buf_id(r, name)];
}

/* ---- references ---- */

static void ref_gemm(const Run *r)
{
    int64_t M = P(r, "M"), N = P(r, "N"), K = P(r, "K");
    const double *A = IN(r, "A"), *B = IN(r, "B");
    double *C = OUT(r, "C");
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++)
                s += A[i * K + k] * B[k * N + j];
            C[i * N + j] = s;
        }
}

static void ref_batched_gemm(const Run *r)
{
    int64_t Bn = P(r, "B"), M = P(r, "M"), N = P(r, "N"), K = P(r, "K");
    const double *A = IN(r, "A"), *W = IN(r, "W");
    double *C = OUT(r, "C");
    for (int64_t b = 0; b < Bn; b++)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double s = 0;
                for (int64_t k = 0; k < K; k++)
                    s += A[(b * M + i) * K + k] * W[(b * K + k) * N + j];
                C[(b * M + i) * N + j] = s;
            }
}

static void ref_gemm_tn(const Run *r)
{
    int64_t M = P(r, "M"), N = P(r, "N"), K = P(r, "K");
    const double *A = IN(r, "A"), *B = IN(r, "B");
    double *C = OUT(r, "C");
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++)
                s += A[k * M + i] * B[k * N + j];
            C[i * N + j] = s;
        }
}

static void ref_gemm_nt(const Run *r)
{
    int64_t M = P(r, "M"), N = P(r, "N"), K = P(r, "K");
    const double *A = IN(r, "A"), *B = IN(r, "B");
    double *C = OUT(r, "C");
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++)
                s += A[i * K + k] * B[j * K + k];
            C[i * N + j] = s;
        }
}

static void ref_gemm_bias_relu(const Run *r)
{
    int64_t M = P(r, "M"), N = P(r, "N"), K = P(r, "K");
    const double *A = IN(r, "A"), *B = IN(r, "B"), *bias = IN(r, "bias");
    double *C = OUT(r, "C");
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++)
                s += A[i * K + k] * B[k * N + j];
            s += bias[j];
            C[i * N + j] = s > 0 ? s : 0;
        }
}

/* X[n][c][h][w] with zeros outside the image */
static double xpad(const double *X, int64_t C, int64_t H, int64_t W, int64_t n, int64_t c, int64_t h, int64_t w)
{
    if (h < 0 || h >= H || w < 0 || w >= W)
        return 0;
    return X[((n * C + c) * H + h) * W + w];
}

static void ref_conv2d(const Run *r)
{
    int64_t N = P(r, "N"), C = P(r, "C"), H = P(r, "H"), W = P(r, "W"), K = P(r, "K");
    int64_t R = P(r, "R"), S = P(r, "S"), U = P(r, "U"), Pd = P(r, "P");
    int64_t OH = (H + 2 * Pd - R) / U + 1, OW = (W + 2 * Pd - S) / U + 1;
    const double *X = IN(r, "X"), *F = IN(r, "F");
    double *Y = OUT(r, "Y");
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t y = 0; y < OH; y++)
                for (int64_t x = 0; x < OW; x++) {
                    double s = 0;
                    for (int64_t c = 0; c < C; c++)
                        for (int64_t u = 0; u < R; u++)
                            for (int64_t v = 0; v < S; v++)
                                s += xpad(X, C, H, W, n, c, y * U + u - Pd, x * U + v - Pd) *
                                     F[((k * C + c) * R + u) * S + v];
                    Y[((n * K + k) * OH + y) * OW + x] = s;
                }
}

static void ref_depthwise_conv2d(const Run *r)
{
    int64_t N = P(r, "N"), C = P(r, "C"), H = P(r, "H"), W = P(r, "W");
    int64_t R = P(r, "R"), S = P(r, "S"), U = P(r, "U"), Pd = P(r, "P");
    int64_t OH = (H + 2 * Pd - R) / U + 1, OW = (W + 2 * Pd - S) / U + 1;
    const double *X = IN(r, "X"), *F = IN(r, "F");
    double *Y = OUT(r, "Y");
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t y = 0; y < OH; y++)
                for (int64_t x = 0; x < OW; x++) {
                    double s = 0;
                    for (int64_t u = 0; u < R; u++)
                        for (int64_t v = 0; v < S; v++)
                            s += xpad(X, C, H, W, n, c, y * U + u - Pd, x * U + v - Pd) * F[(c * R + u) * S + v];
                    Y[((n * C + c) * OH + y) * OW + x] = s;
                }
}

static void ref_softmax(const Run *r)
{
    int64_t R = P(r, "R"), C = P(r, "C");
    const double *X = IN(r, "X");
    double *Y = OUT(r, "Y");
    for (int64_t i = 0; i < R; i++) {
        const double *x = X + i * C;
        double m = -INFINITY, s = 0;
        for (int64_t c = 0; c < C; c++)
            m = x[c] > m ? x[c] : m;
        for (int64_t c = 0; c < C; c++)
            s += exp(x[c] - m);
        for (int64_t c = 0; c < C; c++)
            Y[i * C + c] = exp(x[c] - m) / s;
    }
}

static void ref_layernorm(const Run *r)
{
    int64_t R = P(r, "R"), C = P(r, "C");
    const double *X = IN(r, "X"), *g = IN(r, "gamma"), *b = IN(r, "beta");
    double *Y = OUT(r, "Y");
    const double eps = (double)1e-5f; /* the literal in the kernel's compute type, f32 */
    for (int64_t i = 0; i < R; i++) {
        const double *x = X + i * C;
        double mean = 0, var = 0;
        for (int64_t c = 0; c < C; c++)
            mean += x[c];
        mean /= (double)C;
        for (int64_t c = 0; c < C; c++)
            var += (x[c] - mean) * (x[c] - mean);
        var /= (double)C;
        for (int64_t c = 0; c < C; c++)
            Y[i * C + c] = (x[c] - mean) / sqrt(var + eps) * g[c] + b[c];
    }
}

static void attention(const Run *r, bool causal)
{
    int64_t B = P(r, "B"), H = P(r, "H"), S = P(r, "S"), D = P(r, "D");
    const double *Q = IN(r, "Q"), *K = IN(r, "K"), *V = IN(r, "V");
    double *O = OUT(r, "O");
    double *s = malloc(sizeof(double) * (size_t)S);
    for (int64_t bh = 0; bh < B * H; bh++) {
        const double *q = Q + bh * S * D, *k = K + bh * S * D, *v = V + bh * S * D;
        double *o = O + bh * S * D;
        for (int64_t i = 0; i < S; i++) {
            int64_t n = causal ? i + 1 : S; /* keys this query may see */
            double m = -INFINITY, l = 0;
            for (int64_t j = 0; j < n; j++) {
                double dot = 0;
                for (int64_t d = 0; d < D; d++)
                    dot += q[i * D + d] * k[j * D + d];
                s[j] = dot / sqrt((double)D);
                m = s[j] > m ? s[j] : m;
            }
            for (int64_t j = 0; j < n; j++) {
                s[j] = exp(s[j] - m);
                l += s[j];
            }
            for (int64_t d = 0; d < D; d++) {
                double acc = 0;
                for (int64_t j = 0; j < n; j++)
                    acc += s[j] * v[j * D + d];
                o[i * D + d] = acc / l;
            }
        }
    }
    free(s);
}

static void ref_attention(const Run *r) { attention(r, false); }
static void ref_attention_causal(const Run *r) { attention(r, true); }

/* ---- shapes ---- */

typedef struct Case {
    const char *file;
    const char *kernel;
    const char *params;             /* names, comma-separated, in the order shapes give them */
    void (*ref)(const Run *);
    const int64_t (*fixed)[10];     /* shapes every run tries, zero-terminated by first == 0 */
    void (*random)(Rng *, int64_t *);
    const char *dtype;              /* the kernel's dtype parameter T bound to this, or NULL: its default */
} Case;

static int64_t rnd(Rng *g, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rng_next(g) % (uint64_t)(hi - lo + 1));
}

static const int64_t gemm_shapes[][10] = {{1, 1, 1}, {7, 7, 7}, {33, 1, 7}, {1, 33, 33}, {33, 7, 1}, {0}};
static void gemm_random(Rng *g, int64_t *v)
{
    for (int i = 0; i < 3; i++)
        v[i] = rnd(g, 1, 40);
}

static const int64_t bgemm_shapes[][10] = {{1, 1, 1, 1}, {3, 7, 7, 7}, {2, 33, 1, 7}, {1, 1, 33, 33}, {0}};
static void bgemm_random(Rng *g, int64_t *v)
{
    v[0] = rnd(g, 1, 4);
    for (int i = 1; i < 4; i++)
        v[i] = rnd(g, 1, 24);
}

/* N C H W K R S U P */
static const int64_t conv_shapes[][10] = {
    {1, 1, 1, 1, 1, 1, 1, 1, 0}, {1, 3, 7, 7, 2, 3, 3, 1, 1}, {2, 3, 33, 7, 5, 3, 5, 2, 2},
    {1, 2, 7, 33, 3, 7, 1, 3, 3}, {1, 1, 1, 1, 1, 3, 3, 1, 1}, {0}};
static void conv_random(Rng *g, int64_t *v)
{
    v[0] = rnd(g, 1, 3);
    v[1] = rnd(g, 1, 4);
    v[5] = rnd(g, 1, 5);
    v[6] = rnd(g, 1, 5);
    v[7] = rnd(g, 1, 3);
    v[8] = rnd(g, 0, 2);
    int64_t minh = v[5] - 2 * v[8], minw = v[6] - 2 * v[8]; /* at least one output pixel */
    v[2] = rnd(g, minh > 1 ? minh : 1, 20);
    v[3] = rnd(g, minw > 1 ? minw : 1, 20);
    v[4] = rnd(g, 1, 4);
}

/* N C H W R S U P */
static const int64_t dw_shapes[][10] = {
    {1, 1, 1, 1, 1, 1, 1, 0}, {1, 3, 7, 7, 3, 3, 1, 1}, {2, 5, 33, 7, 3, 5, 2, 2}, {1, 2, 7, 33, 7, 1, 3, 3}, {0}};
static void dw_random(Rng *g, int64_t *v)
{
    int64_t c[9];
    conv_random(g, c);
    int64_t m[8] = {c[0], c[1], c[2], c[3], c[5], c[6], c[7], c[8]};
    memcpy(v, m, sizeof m);
}

static const int64_t rc_shapes[][10] = {{1, 1}, {7, 7}, {33, 1}, {1, 33}, {7, 33}, {0}};
static void rc_random(Rng *g, int64_t *v)
{
    v[0] = rnd(g, 1, 40);
    v[1] = rnd(g, 1, 64);
}

/* B H S D */
static const int64_t att_shapes[][10] = {{1, 1, 1, 1}, {1, 2, 7, 7}, {2, 1, 33, 7}, {1, 1, 7, 33}, {1, 1, 33, 1}, {0}};
static void att_random(Rng *g, int64_t *v)
{
    v[0] = rnd(g, 1, 2);
    v[1] = rnd(g, 1, 3);
    v[2] = rnd(g, 1, 24);
    v[3] = rnd(g, 1, 24);
}

static const Case cases[] = {
    {"gemm.pdl", "gemm", "M,N,K", ref_gemm, gemm_shapes, gemm_random, NULL},
    /* the same kernel with its dtype parameter bound: test names gemm-f16, gemm-bf16 */
    {"gemm.pdl", "gemm", "M,N,K", ref_gemm, gemm_shapes, gemm_random, "f16"},
    {"gemm.pdl", "gemm", "M,N,K", ref_gemm, gemm_shapes, gemm_random, "bf16"},
    {"batched_gemm.pdl", "batched_gemm", "B,M,N,K", ref_batched_gemm, bgemm_shapes, bgemm_random, NULL},
    {"gemm_tn.pdl", "gemm_tn", "M,N,K", ref_gemm_tn, gemm_shapes, gemm_random, NULL},
    {"gemm_nt.pdl", "gemm_nt", "M,N,K", ref_gemm_nt, gemm_shapes, gemm_random, NULL},
    {"gemm_bias_relu.pdl", "gemm_bias_relu", "M,N,K", ref_gemm_bias_relu, gemm_shapes, gemm_random, NULL},
    {"conv2d.pdl", "conv2d", "N,C,H,W,K,R,S,U,P", ref_conv2d, conv_shapes, conv_random, NULL},
    {"depthwise_conv2d.pdl", "depthwise_conv2d", "N,C,H,W,R,S,U,P", ref_depthwise_conv2d, dw_shapes, dw_random, NULL},
    {"softmax.pdl", "softmax", "R,C", ref_softmax, rc_shapes, rc_random, NULL},
    {"layernorm.pdl", "layernorm", "R,C", ref_layernorm, rc_shapes, rc_random, NULL},
    {"attention.pdl", "attention", "B,H,S,D", ref_attention, att_shapes, att_random, NULL},
    {"attention_causal.pdl", "attention_causal", "B,H,S,D", ref_attention_causal, att_shapes, att_random, NULL},
};

enum { RANDOM_SHAPES = 4 };

/* ---- one run ---- */

typedef struct Loaded {
    Arena *arena;
    Source src;
    char *text;
    Program *prog;
    AstKernel *ak;
} Loaded;

static bool load(const char *dir, const Case *c, Loaded *l, Diags *d)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, c->file);
    size_t len;
    l->text = read_file(path, &len);
    if (!l->text) {
        fprintf(stderr, "cannot read %s\n", path);
        return false;
    }
    l->src.path = c->file;
    l->src.text = l->text;
    l->src.len = len;
    l->arena = arena_new();
    l->prog = parse_program(l->arena, &l->src, d);
    if (d->nerrors)
        return false;
    l->ak = program_find_kernel(l->prog, c->kernel);
    if (!l->ak) {
        fprintf(stderr, "%s has no kernel %s\n", c->file, c->kernel);
        return false;
    }
    if (c->dtype) {
        int t = kernel_find_dtparam(l->ak, "T");
        if (t < 0) {
            fprintf(stderr, "kernel %s has no dtype parameter T\n", c->kernel);
            return false;
        }
        kernel_bind_dtparam(l->ak, t, dtype_from_name(c->dtype));
    }
    return sema_program(l->prog, d);
}

static bool run_shape(const Case *c, const Loaded *l, const int64_t *shape, uint64_t seed)
{
    const AstKernel *ak = l->ak;
    int64_t *values = calloc((size_t)ak->nparams + 1, sizeof *values);
    bool *bound = calloc((size_t)ak->nparams + 1, sizeof *bound);
    StrBuf desc = {0};
    char names[128];
    snprintf(names, sizeof names, "%s", c->params);
    int n = 0;
    for (char *tok = strtok(names, ","); tok; tok = strtok(NULL, ","), n++) {
        int p = 0;
        while (p < ak->nparams && strcmp(ak->params[p].name, tok))
            p++;
        if (p == ak->nparams) {
            fprintf(stderr, "%s has no parameter %s\n", c->kernel, tok);
            exit(2);
        }
        values[p] = shape[n];
        bound[p] = true;
        sb_printf(&desc, "%s%s=%lld", n ? " " : "", tok, (long long)shape[n]);
    }
    Diags d;
    diag_init(&d);
    bool ok = false;
    Kernel *k = lower_kernel(l->prog, ak, values, bound, &d);
    double **bufs = NULL;
    Run r = {0};
    if (!k) {
        printf("FAIL %-17s %s: lowering failed\n", c->kernel, desc.s);
        goto out;
    }
    bufs = ir_alloc_buffers(k, seed);
    if (!ir_interp(k, bufs, &d)) {
        printf("FAIL %-17s %s: the interpreter failed\n", c->kernel, desc.s);
        goto out;
    }
    r.k = k;
    r.bufs = bufs;
    r.ref = calloc((size_t)k->nbufs, sizeof *r.ref);
    for (int i = 0; i < k->nbufs; i++)
        if (k->bufs[i]->kind == BUF_OUT) {
            int64_t m = ir_buffer_elems(k, k->bufs[i]);
            r.ref[i] = malloc(sizeof(double) * (size_t)(m ? m : 1));
            for (int64_t j = 0; j < m; j++)
                r.ref[i][j] = NAN;
        }
    c->ref(&r);
    ok = true;
    for (int i = 0; i < k->nbufs; i++) {
        if (k->bufs[i]->kind != BUF_OUT)
            continue;
        int64_t m = ir_buffer_elems(k, k->bufs[i]);
        double num = 0, den = 0;
        int64_t bad = 0;
        for (int64_t j = 0; j < m; j++) {
            double o = bufs[i][j], f = r.ref[i][j];
            if (!isfinite(o) || !isfinite(f))
                bad++;
            num += (o - f) * (o - f);
            den += f * f;
        }
        double rel = den > 0 ? sqrt(num / den) : sqrt(num);
        bool good = bad == 0 && rel < 1e-12;
        printf("%s %-17s %s: %s rel err %.2e%s\n", good ? "ok  " : "FAIL", c->kernel, desc.s, k->bufs[i]->name, rel,
               bad ? " (non-finite elements)" : "");
        ok &= good;
    }
out:
    if (d.text.len)
        fputs(d.text.s, stdout);
    if (r.ref) {
        for (int i = 0; i < k->nbufs; i++)
            free(r.ref[i]);
        free(r.ref);
    }
    if (bufs)
        ir_free_buffers(k, bufs);
    ir_free(k);
    diag_free(&d);
    sb_free(&desc);
    free(values);
    free(bound);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s STDLIB_DIR [KERNEL]\n", argv[0]);
        return 2;
    }
    int failed = 0, ran = 0;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const Case *c = &cases[ci];
        char id[64];
        snprintf(id, sizeof id, "%s%s%s", c->kernel, c->dtype ? "-" : "", c->dtype ? c->dtype : "");
        if (argc > 2 && strcmp(argv[2], id))
            continue;
        Loaded l = {0};
        Diags d;
        diag_init(&d);
        if (!load(argv[1], c, &l, &d)) {
            if (d.text.len)
                fputs(d.text.s, stdout);
            printf("FAIL %s: %s does not parse and check\n", c->kernel, c->file);
            failed++;
        } else {
            Rng g;
            rng_seed(&g, 1234 + ci);
            for (int s = 0; c->fixed[s][0]; s++, ran++)
                failed += !run_shape(c, &l, c->fixed[s], 100 + (uint64_t)s);
            for (int s = 0; s < RANDOM_SHAPES; s++, ran++) {
                int64_t v[10] = {0};
                c->random(&g, v);
                failed += !run_shape(c, &l, v, 200 + (uint64_t)s);
            }
        }
        diag_free(&d);
        free(l.text);
        arena_free(l.arena);
    }
    if (!ran && !failed) {
        fprintf(stderr, "no stdlib kernel named %s\n", argc > 2 ? argv[2] : "?");
        return 2;
    }
    printf("%d of %d runs passed\n", ran - failed, ran);
    return failed ? 1 : 0;
}
