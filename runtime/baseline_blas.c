/* OpenBLAS, in two roles that must not be confused.
 *
 * As a golden reference (rt_blas_gemm_f64): dgemm in f64 on the same rounded inputs
 * the kernel saw, for the GEMM family at shapes too large for the interpreter.
 * OpenBLAS shares no code with perfc's generators, which is the point.
 *
 * As the baseline of --compare openblas (rt_blas_plan/rt_blas_call): the library
 * call that does the kernel's own product in the kernel's own dtypes (sgemm for
 * f32, dgemm for f64, sbgemm for bf16 inputs into f32), batched as a loop of calls,
 * transposes mapped to CblasTrans.  There is no half-precision GEMM in OpenBLAS, so
 * f16 kernels get no baseline rather than an invented one.
 *
 * Between the two roles, and after each, OpenBLAS's worker threads are sent away
 * (rt_blas_quiesce): they otherwise spin for about 2^28 cycles after every call, on
 * the cores perfc's kernel is about to be timed on.
 *
 * OpenBLAS is optional: without PERFC_HAVE_OPENBLAS everything here reports that
 * it is absent and never links a symbol. */
#include "runtime.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#ifdef PERFC_HAVE_OPENBLAS
#include <cblas.h>
#include <dlfcn.h>

/* sbgemm (bf16 inputs, f32 output) is declared by every cblas.h since 0.3.10 but
 * only built when OpenBLAS was configured with BUILD_BFLOAT16 (Debian's is not):
 * looked up at run time, absent means "no equivalent", not a link error. */
/* Ends OpenBLAS's worker threads; its next multi-threaded call starts them again.
 * Not in cblas.h, and absent from OpenBLAS builds without a thread server: weak. */
extern int blas_thread_shutdown_(void) __attribute__((weak));

typedef void (*SbgemmFn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, blasint, blasint, blasint,
                         float, const bfloat16 *, blasint, const bfloat16 *, blasint, float, float *, blasint);

static SbgemmFn sbgemm_fn(void)
{
    static SbgemmFn fn;
    static bool looked;
    if (!looked) {
        void *p = dlsym(RTLD_DEFAULT, "cblas_sbgemm");
        memcpy(&fn, &p, sizeof fn);
        looked = true;
    }
    return fn;
}
#endif

bool rt_blas_available(void)
{
#ifdef PERFC_HAVE_OPENBLAS
    return true;
#else
    return false;
#endif
}

void rt_blas_set_threads(int n)
{
#ifdef PERFC_HAVE_OPENBLAS
    openblas_set_num_threads(n);
    /* which starts any workers it lacks (at load, all of them), and they spin as
     * after a call: 110 ms of one of two cores, taken from the compile and the
     * golden of a conv2d `--run` that never calls OpenBLAS (perf, Zen 3) */
    rt_blas_quiesce();
#else
    (void)n;
#endif
}

void rt_blas_describe(char *buf, size_t n)
{
#ifdef PERFC_HAVE_OPENBLAS
    /* The run-time library, not the header we compiled against: a different
     * libopenblas.so may be installed behind the alternatives link. */
    const char *cfg = openblas_get_config();
    const char *core = openblas_get_corename();
    const char *was = rt_blas_core_note();
    snprintf(buf, n, "%s (core %s%s%s%s)", cfg ? cfg : "OpenBLAS", core ? core : "?",
             was ? ", set by perfc: OpenBLAS detected " : "", was ? was : "", was ? " on this CPU" : "");
#else
    snprintf(buf, n, "none");
#endif
}

#ifdef PERFC_HAVE_OPENBLAS
/* OpenBLAS's blasint is 32-bit in the usual (LP64) builds. */
static bool fits_blasint(const RtGemm *g)
{
    return g->m <= INT_MAX && g->n <= INT_MAX && g->k <= INT_MAX && g->m >= 0 && g->n >= 0 &&
           g->k >= 0;
}

static void leads(const RtGemm *g, int *lda, int *ldb, int *ldc)
{
    *lda = (int)(g->trans_a ? g->m : g->k);
    *ldb = (int)(g->trans_b ? g->k : g->n);
    *ldc = (int)g->n;
    /* cblas rejects a leading dimension of 0 even for empty matrices */
    if (*lda < 1) *lda = 1;
    if (*ldb < 1) *ldb = 1;
    if (*ldc < 1) *ldc = 1;
}
#endif

void rt_blas_quiesce(void)
{
#ifdef PERFC_HAVE_OPENBLAS
    /* Measured on a 2-core Zen 3, sgemm 1024^3 on 2 threads: the first run after the
     * golden's dgemm took 42 ms against 18 ms, its worker spinning on the second core
     * through the check and the first timed repetitions. */
    if (blas_thread_shutdown_)
        blas_thread_shutdown_();
#endif
}

bool rt_blas_gemm_f64(const RtGemm *g, const double *a, const double *b, double *c, Diags *d)
{
#ifdef PERFC_HAVE_OPENBLAS
    if (!fits_blasint(g)) {
        diag_plain(d, DIAG_ERROR, "GEMM %lldx%lldx%lld is too large for OpenBLAS's 32-bit sizes",
                   (long long)g->m, (long long)g->n, (long long)g->k);
        return false;
    }
    int lda, ldb, ldc;
    leads(g, &lda, &ldb, &ldc);
    for (int64_t i = 0; i < g->batch; i++) {
        if (g->m == 0 || g->n == 0)
            continue;
        if (g->k == 0) { /* dgemm with K = 0 is beta*C; say it plainly */
            memset(c + i * g->stride_c, 0, sizeof(double) * (size_t)(g->m * g->n));
            continue;
        }
        cblas_dgemm(CblasRowMajor, g->trans_a ? CblasTrans : CblasNoTrans,
                    g->trans_b ? CblasTrans : CblasNoTrans, (int)g->m, (int)g->n, (int)g->k, 1.0,
                    a + i * g->stride_a, lda, b + i * g->stride_b, ldb, 0.0, c + i * g->stride_c, ldc);
    }
    rt_blas_quiesce(); /* the kernel runs next */
    return true;
#else
    (void)g, (void)a, (void)b, (void)c;
    diag_plain(d, DIAG_ERROR, "this perfc was built without OpenBLAS");
    return false;
#endif
}

typedef enum { CALL_S, CALL_D, CALL_SB } CallKind;

struct RtBlasCall {
    RtGemm g;
    CallKind kind;
};

RtBlasCall *rt_blas_plan(const RtGemm *g, char *why, size_t whylen)
{
#ifdef PERFC_HAVE_OPENBLAS
    CallKind kind;
    if (g->ta == DT_F32 && g->tb == DT_F32 && g->tc == DT_F32)
        kind = CALL_S;
    else if (g->ta == DT_F64 && g->tb == DT_F64 && g->tc == DT_F64)
        kind = CALL_D;
    else if (g->ta == DT_BF16 && g->tb == DT_BF16 && g->tc == DT_F32 && sbgemm_fn())
        kind = CALL_SB;
    else if (g->ta == DT_BF16 && g->tb == DT_BF16 && g->tc == DT_F32) {
        snprintf(why, whylen, "no OpenBLAS equivalent: this OpenBLAS was built without bf16 (no cblas_sbgemm)");
        return NULL;
    } else {
        snprintf(why, whylen,
                 "no OpenBLAS equivalent for a %s x %s -> %s product (OpenBLAS has sgemm, dgemm, "
                 "and sbgemm for bf16 -> f32)",
                 dtype_name(g->ta), dtype_name(g->tb), dtype_name(g->tc));
        return NULL;
    }
    if (!fits_blasint(g)) {
        snprintf(why, whylen, "the product is too large for OpenBLAS's 32-bit sizes");
        return NULL;
    }
    RtBlasCall *c = xcalloc(1, sizeof *c);
    c->g = *g;
    c->kind = kind;
    return c;
#else
    (void)g;
    snprintf(why, whylen, "this perfc was built without OpenBLAS");
    return NULL;
#endif
}

const char *rt_blas_call_name(const RtBlasCall *c)
{
    switch (c->kind) {
    case CALL_S: return "cblas_sgemm";
    case CALL_D: return "cblas_dgemm";
    case CALL_SB: return "cblas_sbgemm";
    }
    return "?";
}

void rt_blas_call(void *call, void **abc)
{
#ifdef PERFC_HAVE_OPENBLAS
    const RtBlasCall *c = call;
    const RtGemm *g = &c->g;
    int lda, ldb, ldc;
    leads(g, &lda, &ldb, &ldc);
    enum CBLAS_TRANSPOSE ta = g->trans_a ? CblasTrans : CblasNoTrans;
    enum CBLAS_TRANSPOSE tb = g->trans_b ? CblasTrans : CblasNoTrans;
    int m = (int)g->m, n = (int)g->n, k = (int)g->k;
    for (int64_t i = 0; i < g->batch; i++) {
        switch (c->kind) {
        case CALL_S:
            cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, (const float *)abc[0] + i * g->stride_a,
                        lda, (const float *)abc[1] + i * g->stride_b, ldb, 0.0f,
                        (float *)abc[2] + i * g->stride_c, ldc);
            break;
        case CALL_D:
            cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, 1.0, (const double *)abc[0] + i * g->stride_a,
                        lda, (const double *)abc[1] + i * g->stride_b, ldb, 0.0,
                        (double *)abc[2] + i * g->stride_c, ldc);
            break;
        case CALL_SB:
            sbgemm_fn()(CblasRowMajor, ta, tb, m, n, k, 1.0f,
                         (const bfloat16 *)abc[0] + i * g->stride_a, lda,
                         (const bfloat16 *)abc[1] + i * g->stride_b, ldb, 0.0f,
                         (float *)abc[2] + i * g->stride_c, ldc);
            break;
        }
    }
#else
    (void)call, (void)abc;
    die("rt_blas_call without OpenBLAS");
#endif
}

void rt_blas_free(void *call)
{
    free(call);
}
