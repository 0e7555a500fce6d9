/* Accuracy of the inline vector math (codegen/llvm/vmath.c), through the real
 * pipeline: `Y[i] = f(X[i])` for f32 and f64 is compiled for every x86 target this
 * machine runs (with and without FMA, 128 to 512-bit vectors) and run over millions
 * of arguments: a sweep of the f32 bit patterns (every sign, exponent, subnormals,
 * infinities, NaNs), random arguments in each function's interesting range, and
 * the special values.  The reference is libm one precision up (double for f32, long
 * double for f64).  A result must be within the function's bound in units in the
 * last place, and NaN/inf exactly where the reference has them.  The measured
 * maxima are printed, for the table atop vmath.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_test.h"
#include "codegen/llvm/cg_llvm_int.h"
#include "../lowered.h"

typedef struct Fn {
    const char *name;
    long double (*ref)(long double);
    double bound32, bound64; /* max ulp; < 0: not checked for that type */
    double lo, hi;           /* the interesting range for random arguments */
} Fn;

static long double ref_log(long double x) { return logl(x); }
static long double ref_exp(long double x) { return expl(x); }
static long double ref_tanh(long double x) { return tanhl(x); }
static long double ref_erf(long double x) { return erfl(x); }
static long double ref_expm1(long double x) { return expm1l(x); }
static long double ref_log1p(long double x) { return log1pl(x); }

static const Fn fns[] = {
    {"exp", ref_exp, 1.5, 1.5, -110, 90},
    {"log", ref_log, 1, 1, 0, 1e6},
    {"tanh", ref_tanh, 3.5, 3.5, -12, 12},
    {"erf", ref_erf, 3, 1.5, -5, 5}, /* f64: glibc's erf, not ours */
    {"expm1", ref_expm1, 3, 3, -20, 90},
    {"log1p", ref_log1p, 3, 3, -1, 1e6},
};

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}
static double unit(void) { return (double)(next() >> 11) * 0x1p-53; }

/* Error of got in units in the last place of a type with p mantissa bits and
 * minimum normal exponent emin, against the exact ref; -1 for a mismatch of
 * special values (NaN or infinity where the other has none, or a wrong sign). */
static double ulp_err(long double ref, long double got, int p, int emin)
{
    if (isnan(ref) || isnan(got))
        return isnan(ref) && isnan(got) ? 0 : -1;
    if (isinf(ref) || isinf(got)) {
        if (ref == got)
            return 0;
        /* a finite result just below the largest finite value counts by its ulp */
        if (isinf(got))
            return -1;
    }
    int e = ref == 0 ? emin : ilogbl(ref);
    if (e < emin)
        e = emin;
    long double ulp = ldexpl(1.0L, e - p);
    return (double)(fabsl(got - ref) / ulp);
}

static void fill(DType t, void *x, int64_t n, const Fn *f)
{
    static const double special[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1.0, -1.0, 0x1p-149, 0x1p-126,
                                     0x1p-1074, 0x1p-1022, 88.72, 88.73, -87.3, -103.9, 709.78, -745.1,
                                     1e-30, 3.9, 4.0, 4.1, 0.999, 1.001, 0.3466, -0.3466, 9.0, 20.0};
    int64_t ns = (int64_t)(sizeof special / sizeof special[0]);
    for (int64_t i = 0; i < n; i++) {
        double v;
        if (i < ns)
            v = special[i];
        else if (i % 2) /* the interesting range, uniform */
            v = f->lo + (f->hi - f->lo) * unit();
        else if (i % 4 == 0) /* magnitudes log-uniform over the range, both signs */
            v = (next() & 1 ? -1 : 1) * exp(log(1e-12) + (log(fmax(fabs(f->lo), fabs(f->hi))) - log(1e-12)) * unit());
        else if (t == DT_F32) { /* a sweep of the bit patterns */
            uint32_t b = (uint32_t)((uint64_t)i * 0x9E3779B1u);
            float fl;
            memcpy(&fl, &b, 4);
            v = fl;
        } else {
            uint64_t b = next();
            memcpy(&v, &b, 8);
        }
        if (t == DT_F32)
            ((float *)x)[i] = (float)v;
        else
            ((double *)x)[i] = v;
    }
}

static void check_fn(const Fn *f, DType t, const char *target, int64_t n)
{
    char kname[32];
    snprintf(kname, sizeof kname, "%s%d", f->name, t == DT_F32 ? 32 : 64);
    Diags d;
    diag_init(&d);
    const char *pn[] = {"N"};
    int64_t pv[] = {n};
    Kernel *k = cgt_lower_file(PERFC_SOURCE_DIR "/tests/codegen/pdl/vmath.pdl", kname, pn, pv, 1, n, NULL, &d);
    CHECK(k != NULL, "%s: lowering failed", kname);
    if (!k)
        return;
    JitKernel *j = tl_jit(k, target, &d);
    CHECK(j != NULL, "%s on %s: compile failed", kname, target);
    if (!j) {
        ir_free(k);
        return;
    }
    size_t es = t == DT_F32 ? 4 : 8;
    void *x = cgt_alloc((int64_t)es * n), *y = cgt_alloc((int64_t)es * n);
    fill(t, x, n, f);
    void *bufs[2] = {x, y};
    cg_jit_run(j, bufs);
    double bound = t == DT_F32 ? f->bound32 : f->bound64, worst = 0;
    int64_t at = 0, bad = 0;
    for (int64_t i = 0; i < n; i++) {
        long double a = t == DT_F32 ? ((float *)x)[i] : ((double *)x)[i];
        long double got = t == DT_F32 ? ((float *)y)[i] : ((double *)y)[i];
        long double ref = f->ref(a);
        if (t == DT_F32)
            ref = (double)ref; /* the double reference is ample for f32 */
        /* beyond the largest finite value plus half an ulp the type rounds to inf */
        long double top = t == DT_F32 ? 0x1.ffffffp127L : 0x1.fffffffffffff8p1023L;
        if (fabsl(ref) >= top)
            ref = copysignl(INFINITY, ref);
        double e = t == DT_F32 ? ulp_err(ref, got, 23, -126) : ulp_err(ref, got, 52, -1022);
        if (e < 0 || e > bound) {
            if (bad++ < 3)
                fprintf(stderr, "  %s on %s: f(%.17Lg) = %.17Lg, expected %.17Lg (%s)\n", kname, target, a, got, ref,
                        e < 0 ? "special value" : "beyond the bound");
        }
        if (e > worst)
            worst = e, at = i;
    }
    long double wa = t == DT_F32 ? ((float *)x)[at] : ((double *)x)[at];
    printf("%-7s %-14s max %.2f ulp (at %.9Lg) over %lld arguments\n", kname, target, worst, wa, (long long)n);
    CHECK(bad == 0, "%s on %s: %lld results beyond %.1f ulp or wrong special values", kname, target, (long long)bad,
          bound);
    free(x);
    free(y);
    cg_jit_free(j);
    ir_free(k);
    diag_free(&d);
}

int main(void)
{
    const char *all[] = {"host", "x86_64", "x86_64-avx2", "x86_64-avx512"};
    for (int i = 0; i < 4; i++) {
        CgTarget t;
        if (!cg_target_lookup(all[i], &t) || !cg_target_runs_on_host(&t))
            continue;
        for (size_t f = 0; f < sizeof fns / sizeof fns[0]; f++) {
            check_fn(&fns[f], DT_F32, all[i], 1 << 21);
            check_fn(&fns[f], DT_F64, all[i], 1 << 19);
        }
    }
    cgt_cleanup();
    if (cgt_failures)
        fprintf(stderr, "test_cg_vmath: %d failure(s)\n", cgt_failures);
    return cgt_failures != 0;
}
