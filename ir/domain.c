/* Input domains: the values the harness draws an input from when its declaration
 * says range(lo, hi) or distinct(lo, hi) (docs/language.md "Input domains").
 * Without one an input is uniform in [-1, 1) (runtime/data.c); with one, a float
 * input is uniform in [lo, hi) rounded to its dtype, an integer input uniform over
 * lo, lo+1, ..., hi-1, and a distinct input takes n different values of that set
 * (a permutation when n = hi - lo), so index tensors (class labels, gather and
 * scatter indices, permutations) stay in range by construction.
 *
 * It lives in ir/ because the reference interpreter's own buffers
 * (ir_alloc_buffers) and the harness (runtime/harness.c) draw through it: both
 * must give every back end and the reference the same kind of data. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ir.h"

/* The largest value set a distinct input is drawn from: its members are shuffled in
 * an array of this many int64s at most (512 MiB). */
#define DISTINCT_MAX ((int64_t)1 << 26)

bool ir_has_domain(const Buffer *b)
{
    return b->kind == BUF_IN && b->dom_lo && b->dom_hi;
}

static bool bounds(const Kernel *k, const Buffer *b, double *flo, double *fhi, int64_t *ilo, int64_t *ihi)
{
    if (dtype_is_float(b->dtype)) {
        *flo = b->dom_lo->kind == IE_FLT ? b->dom_lo->u.f : NAN;
        *fhi = b->dom_hi->kind == IE_FLT ? b->dom_hi->u.f : NAN;
        return isfinite(*flo) && isfinite(*fhi);
    }
    return ir_eval_size(k, b->dom_lo, ilo) && ir_eval_size(k, b->dom_hi, ihi);
}

bool ir_domain_check(const Kernel *k, const Buffer *b, int64_t n, char *err, size_t errn)
{
    const char *kw = b->dom_distinct ? "distinct" : "range";
    double flo = 0, fhi = 0;
    int64_t lo = 0, hi = 0;
    if (!bounds(k, b, &flo, &fhi, &lo, &hi)) {
        snprintf(err, errn, "the %s(...) bounds of %s cannot be computed with these sizes", kw, b->name);
        return false;
    }
    if (dtype_is_float(b->dtype)) {
        if (!(dtype_round(flo, b->dtype) < dtype_round(fhi, b->dtype))) {
            snprintf(err, errn, "range(%g, %g) of %s holds no %s value", flo, fhi, b->name, dtype_name(b->dtype));
            return false;
        }
        return true;
    }
    if (lo >= hi) {
        snprintf(err, errn, "%s(%lld, %lld) of %s is empty with these sizes: values are drawn from lo, lo+1, ..., "
                 "hi-1", kw, (long long)lo, (long long)hi, b->name);
        return false;
    }
    if (b->dtype == DT_I32 && (lo < INT32_MIN || hi - 1 > INT32_MAX)) {
        snprintf(err, errn, "%s(%lld, %lld) of %s leaves i32 with these sizes", kw, (long long)lo, (long long)hi,
                 b->name);
        return false;
    }
    if (b->dom_distinct) {
        int64_t span;
        if (__builtin_sub_overflow(hi, lo, &span) || span > DISTINCT_MAX) {
            snprintf(err, errn, "distinct(%lld, %lld) of %s draws from more than %lld values; perfc shuffles at most "
                     "that many", (long long)lo, (long long)hi, b->name, (long long)DISTINCT_MAX);
            return false;
        }
        if (n > span) {
            snprintf(err, errn, "%s has %lld elements but distinct(%lld, %lld) holds only %lld different values",
                     b->name, (long long)n, (long long)lo, (long long)hi, (long long)span);
            return false;
        }
    }
    return true;
}

/* A uniform integer in [0, m), m >= 1, without the bias of a plain modulo. */
static uint64_t below(Rng *r, uint64_t m)
{
    uint64_t lim = UINT64_MAX - UINT64_MAX % m;
    for (;;) {
        uint64_t x = rng_next(r);
        if (x < lim)
            return x % m;
    }
}

bool ir_domain_fill(const Kernel *k, const Buffer *b, int64_t n, Rng *r, double *v, char *err, size_t errn)
{
    if (!ir_domain_check(k, b, n, err, errn))
        return false;
    double flo = 0, fhi = 0;
    int64_t lo = 0, hi = 0;
    bounds(k, b, &flo, &fhi, &lo, &hi);
    if (dtype_is_float(b->dtype)) {
        for (int64_t i = 0; i < n; i++) {
            /* rounding to the dtype may land on hi or below lo: draw again (a range
             * narrower than a few units in the last place may give up and take lo) */
            double x = dtype_round(flo, b->dtype);
            for (int t = 0; t < 64; t++) {
                double y = dtype_round(rng_uniform(r, flo, fhi), b->dtype);
                if (y >= flo && y < fhi) {
                    x = y;
                    break;
                }
            }
            v[i] = x;
        }
        return true;
    }
    uint64_t span = (uint64_t)hi - (uint64_t)lo;
    if (!b->dom_distinct) {
        for (int64_t i = 0; i < n; i++)
            v[i] = (double)(lo + (int64_t)below(r, span));
        return true;
    }
    /* the first n places of a Fisher-Yates shuffle of lo..hi-1 */
    int64_t *pool = xmalloc(sizeof *pool * (size_t)(span ? span : 1));
    for (uint64_t i = 0; i < span; i++)
        pool[i] = lo + (int64_t)i;
    for (int64_t i = 0; i < n; i++) {
        uint64_t j = (uint64_t)i + below(r, span - (uint64_t)i);
        int64_t t = pool[i];
        pool[i] = pool[j];
        pool[j] = t;
        v[i] = (double)pool[i];
    }
    free(pool);
    return true;
}

bool ir_domain_holds(const Kernel *k, const Buffer *b, const double *v, int64_t n, char *err, size_t errn)
{
    double flo = 0, fhi = 0;
    int64_t lo = 0, hi = 0;
    if (!ir_has_domain(b) || dtype_is_float(b->dtype))
        return true; /* a float range describes data; only index ranges guard memory */
    if (!bounds(k, b, &flo, &fhi, &lo, &hi)) {
        snprintf(err, errn, "the range(...) bounds of %s cannot be computed with these sizes", b->name);
        return false;
    }
    for (int64_t i = 0; i < n; i++)
        if (!(v[i] >= (double)lo && v[i] < (double)hi)) {
            snprintf(err, errn, "input %s, element %lld, is %.17g: outside its declared %s(%lld, %lld)", b->name,
                     (long long)i, v[i], b->dom_distinct ? "distinct" : "range", (long long)lo, (long long)hi);
            return false;
        }
    return true;
}
