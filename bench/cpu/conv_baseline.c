/* The library baseline for conv2d in bench/cpu/run.sh: im2col followed by one
 * OpenBLAS sgemm (Y[K, OH*OW] = F[K, C*R*S] x cols[C*R*S, OH*OW]), the way Caffe and
 * many frameworks run a convolution when no dedicated library is at hand.  It is
 * timed the way the perfc harness times kernels (caches flushed with clflush before
 * every repetition, im2col included in the time, median reported) and its result is
 * checked against a direct convolution accumulated in double, so a wrong baseline is
 * never reported as fast.  Batch 1, NCHW, stride U, zero padding P.
 *
 *   conv_baseline C H W K R S U P THREADS   ->   one line: gflops=G median_ms=T rel_error=E
 */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"

void openblas_set_num_threads(int n);

int main(int argc, char **argv)
{
    if (argc != 10) {
        fprintf(stderr, "usage: %s C H W K R S U P THREADS\n", argv[0]);
        return 1;
    }
    long C = atol(argv[1]), H = atol(argv[2]), W = atol(argv[3]), K = atol(argv[4]), R = atol(argv[5]),
         S = atol(argv[6]), U = atol(argv[7]), P = atol(argv[8]);
    openblas_set_num_threads(atoi(argv[9]));
    long OH = (H + 2 * P - R) / U + 1, OW = (W + 2 * P - S) / U + 1, KK = C * R * S, NN = OH * OW;
    float *X = aligned_alloc(64, sizeof(float) * (size_t)(C * H * W + 16));
    float *F = aligned_alloc(64, sizeof(float) * (size_t)(K * KK + 16));
    float *Y = aligned_alloc(64, sizeof(float) * (size_t)(K * NN + 16));
    float *cols = aligned_alloc(64, sizeof(float) * (size_t)(KK * NN + 16));
    srand(12345);
    for (long i = 0; i < C * H * W; i++)
        X[i] = 2.0f * (float)rand() / (float)RAND_MAX - 1.0f;
    for (long i = 0; i < K * KK; i++)
        F[i] = 2.0f * (float)rand() / (float)RAND_MAX - 1.0f;

    double times[200];
    int reps = 0;
    double spent = 0;
    for (int it = -1; it < 200 && (spent < 0.3 || reps < 5); it++) {
        bu_flush(X, sizeof(float) * (size_t)(C * H * W));
        bu_flush(F, sizeof(float) * (size_t)(K * KK));
        bu_flush(Y, sizeof(float) * (size_t)(K * NN));
        bu_flush(cols, sizeof(float) * (size_t)(KK * NN));
        double t0 = bu_now();
        for (long c = 0; c < C; c++)
            for (long r = 0; r < R; r++)
                for (long s = 0; s < S; s++) {
                    float *row = cols + ((c * R + r) * S + s) * NN;
                    for (long y = 0; y < OH; y++) {
                        long iy = y * U + r - P;
                        for (long x = 0; x < OW; x++) {
                            long ix = x * U + s - P;
                            row[y * OW + x] =
                                (iy >= 0 && iy < H && ix >= 0 && ix < W) ? X[(c * H + iy) * W + ix] : 0.0f;
                        }
                    }
                }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)K, (int)NN, (int)KK, 1.0f, F, (int)KK, cols,
                    (int)NN, 0.0f, Y, (int)NN);
        double t = bu_now() - t0;
        if (it >= 0) {
            times[reps++] = t;
            spent += t;
        }
    }
    double med = bu_median(times, reps);

    /* Direct convolution in double, the reference. */
    double rel = bu_conv_error(X, F, Y, C, H, W, K, R, S, U, P);
    double flops = 2.0 * (double)K * (double)NN * (double)KK;
    printf("gflops=%.3f median_ms=%.4f reps=%d rel_error=%.3g\n", flops / med * 1e-9, med * 1e3, reps, rel);
    return rel < 1e-4 ? 0 : 2;
}
