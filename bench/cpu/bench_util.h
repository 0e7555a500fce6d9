/* Shared by the CPU library-baseline programs (conv_baseline.c, conv_onednn.c,
 * matmul_onednn.c): a monotonic clock, the cache flush perfc's harness does before
 * every repetition, the median, and the double-precision reference a convolution's
 * result is checked against, so that every baseline is timed and checked alike. */
#ifndef PERFC_BENCH_CPU_UTIL_H
#define PERFC_BENCH_CPU_UTIL_H

#include <math.h>
#include <stdlib.h>
#include <time.h>

static inline double bu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static inline void bu_flush(const void *p, size_t bytes)
{
    for (size_t i = 0; i < bytes; i += 64)
        __builtin_ia32_clflush((const char *)p + i);
    __builtin_ia32_mfence();
}

static inline int bu_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts t[0..n) and returns its median (the upper one of an even count). */
static inline double bu_median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof t[0], bu_cmp);
    return t[n / 2];
}

/* The relative error (2-norm) of Y[K, OH, OW] against the direct convolution of
 * X[C, H, W] and F[K, C, R, S] (batch 1, stride U, zero padding P) in double. */
static inline double bu_conv_error(const float *X, const float *F, const float *Y, long C, long H, long W, long K,
                                   long R, long S, long U, long P)
{
    long OH = (H + 2 * P - R) / U + 1, OW = (W + 2 * P - S) / U + 1;
    double num = 0, den = 0;
    for (long k = 0; k < K; k++)
        for (long y = 0; y < OH; y++)
            for (long x = 0; x < OW; x++) {
                double acc = 0;
                for (long c = 0; c < C; c++)
                    for (long r = 0; r < R; r++)
                        for (long s = 0; s < S; s++) {
                            long iy = y * U + r - P, ix = x * U + s - P;
                            if (iy >= 0 && iy < H && ix >= 0 && ix < W)
                                acc += (double)X[(c * H + iy) * W + ix] * (double)F[((k * C + c) * R + r) * S + s];
                        }
                double d = acc - (double)Y[(k * OH + y) * OW + x];
                num += d * d;
                den += acc * acc;
            }
    return sqrt(num / (den > 0 ? den : 1));
}

#endif
