/* Native-layout buffers for the harness: seeded random inputs, conversions between
 * a dtype's storage format and doubles, and the NaN poison written into outputs
 * before every run.
 *
 * Inputs are drawn as doubles, rounded to the buffer's dtype, and only then turned
 * into storage bits, so the kernel under test and every golden reference see
 * exactly the same numbers (the half-precision conversions of lang/dtype.h are
 * exact for values already rounded). */
#include "runtime.h"

#include "pool.h"

#include <math.h>
#include <string.h>

void rt_to_native(DType t, const double *src, void *dst, int64_t n)
{
    switch (t) {
    case DT_F64:
        memcpy(dst, src, (size_t)n * sizeof(double));
        break;
    case DT_F32:
        for (int64_t i = 0; i < n; i++)
            ((float *)dst)[i] = (float)src[i];
        break;
    case DT_F16:
        for (int64_t i = 0; i < n; i++)
            ((uint16_t *)dst)[i] = f32_to_f16_bits((float)src[i]);
        break;
    case DT_BF16:
        for (int64_t i = 0; i < n; i++)
            ((uint16_t *)dst)[i] = f32_to_bf16_bits((float)src[i]);
        break;
    case DT_I32:
        for (int64_t i = 0; i < n; i++)
            ((int32_t *)dst)[i] = (int32_t)dtype_round(src[i], DT_I32);
        break;
    case DT_I64:
        for (int64_t i = 0; i < n; i++)
            ((int64_t *)dst)[i] = (int64_t)src[i];
        break;
    case DT_BOOL:
        for (int64_t i = 0; i < n; i++)
            ((uint8_t *)dst)[i] = src[i] != 0;
        break;
    default:
        die("rt_to_native: dtype %d", (int)t);
    }
}

void rt_from_native(DType t, const void *src, double *dst, int64_t n)
{
    switch (t) {
    case DT_F64:
        memcpy(dst, src, (size_t)n * sizeof(double));
        break;
    case DT_F32:
        for (int64_t i = 0; i < n; i++)
            dst[i] = ((const float *)src)[i];
        break;
    case DT_F16:
        for (int64_t i = 0; i < n; i++)
            dst[i] = f16_bits_to_f32(((const uint16_t *)src)[i]);
        break;
    case DT_BF16:
        for (int64_t i = 0; i < n; i++)
            dst[i] = bf16_bits_to_f32(((const uint16_t *)src)[i]);
        break;
    case DT_I32:
        for (int64_t i = 0; i < n; i++)
            dst[i] = ((const int32_t *)src)[i];
        break;
    case DT_I64:
        for (int64_t i = 0; i < n; i++)
            dst[i] = (double)((const int64_t *)src)[i];
        break;
    case DT_BOOL:
        for (int64_t i = 0; i < n; i++)
            dst[i] = ((const uint8_t *)src)[i];
        break;
    default:
        die("rt_from_native: dtype %d", (int)t);
    }
}

void rt_poison(DType t, void *dst, int64_t n)
{
    switch (t) {
    case DT_F64:
        for (int64_t i = 0; i < n; i++)
            ((double *)dst)[i] = NAN;
        break;
    case DT_F32:
        for (int64_t i = 0; i < n; i++)
            ((float *)dst)[i] = NAN;
        break;
    case DT_F16: /* quiet NaNs: exponent all ones, top mantissa bit set */
        for (int64_t i = 0; i < n; i++)
            ((uint16_t *)dst)[i] = 0x7e00;
        break;
    case DT_BF16:
        for (int64_t i = 0; i < n; i++)
            ((uint16_t *)dst)[i] = 0x7fc0;
        break;
    case DT_I32:
        for (int64_t i = 0; i < n; i++)
            ((int32_t *)dst)[i] = INT32_MIN;
        break;
    case DT_I64:
        for (int64_t i = 0; i < n; i++)
            ((int64_t *)dst)[i] = INT64_MIN;
        break;
    case DT_BOOL:
        memset(dst, 0xa5, (size_t)n); /* neither 0 nor 1 */
        break;
    default:
        die("rt_poison: dtype %d", (int)t);
    }
}

/* Inputs are drawn in chunks of FILL_CHUNK elements, each from its own stream seeded
 * by (one draw of r, chunk index), so the values depend on the seed and not on how
 * many threads drew them, and the chunks run on the thread pool: 2 x 16.7 M inputs of
 * a 4096^2 GEMM took half a second on one core, most of a warm tuning answer. */
enum { FILL_CHUNK = 1 << 16 };

typedef struct FillJob {
    DType t;
    int64_t n;
    uint64_t base;
    double *f64;
    unsigned char *native;
} FillJob;

static void fill_chunks(void *ctx, int64_t lo, int64_t hi)
{
    const FillJob *j = ctx;
    for (int64_t c = lo; c < hi; c++) {
        Rng r;
        rng_seed(&r, j->base ^ (0x9e3779b97f4a7c15ull * (uint64_t)(c + 1)));
        int64_t i0 = c * FILL_CHUNK, i1 = i0 + FILL_CHUNK < j->n ? i0 + FILL_CHUNK : j->n;
        double *f = j->f64;
        if (dtype_is_float(j->t))
            for (int64_t i = i0; i < i1; i++)
                f[i] = dtype_round(rng_uniform(&r, -1.0, 1.0), j->t);
        else if (j->t == DT_BOOL)
            for (int64_t i = i0; i < i1; i++)
                f[i] = (double)(rng_next(&r) & 1);
        else
            for (int64_t i = i0; i < i1; i++)
                f[i] = (double)((int64_t)(rng_next(&r) % 33) - 16);
        if (j->native)
            rt_to_native(j->t, f + i0, j->native + (size_t)i0 * (size_t)dtype_bytes(j->t), i1 - i0);
    }
}

void rt_fill_random(DType t, int64_t n, Rng *r, double *f64, void *native)
{
    /* A redraw instead of a bias: a buffer of one or two f16 elements could round to
     * equal values, and a constant input hides indexing bugs. */
    for (int attempt = 0;; attempt++) {
        FillJob j = {.t = t, .n = n, .base = rng_next(r), .f64 = f64, .native = native};
        perfc_parallel_for((n + FILL_CHUNK - 1) / FILL_CHUNK, fill_chunks, &j);
        bool varied = n < 2;
        for (int64_t i = 1; i < n && !varied; i++)
            varied = f64[i] != f64[0];
        if ((varied && (n != 1 || f64[0] != 0)) || attempt == 100)
            break;
    }
}

bool rt_fill_input(const Kernel *k, const Buffer *b, int64_t n, Rng *r, double *f64, void *native, Diags *d)
{
    if (!ir_has_domain(b)) {
        rt_fill_random(b->dtype, n, r, f64, native);
        return true;
    }
    /* a declared domain (ir/domain.c): drawn on one thread from its own stream */
    Rng own;
    rng_seed(&own, rng_next(r));
    char err[256];
    if (!ir_domain_fill(k, b, n, &own, f64, err, sizeof err)) {
        diag_plain(d, DIAG_ERROR, "%s", err);
        return false;
    }
    if (native)
        rt_to_native(b->dtype, f64, native, n);
    return true;
}
