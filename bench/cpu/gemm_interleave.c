/* Interleaved timing of sgemm builds against OpenBLAS in one process: each round
 * runs every library built by `perfc lib` and then cblas_sgemm, on the same inputs
 * with the caches flushed before each call, so that a change in the machine's load
 * (a shared 2-vCPU VM swings by 30% from one minute to the next) hits all of them
 * alike.  Prints, per library, the minimum and median GFLOP/s and the ratios to
 * OpenBLAS's minimum and median.  Every library's result is checked against
 * OpenBLAS's before timing.
 *
 *   gemm_interleave KERNEL M N K THREADS ROUNDS libA.so [libB.so ...]
 *
 * KERNEL names the function `k_KERNEL(A, B, C, M, N, K)` each library exports
 * (`perfc lib FILE -k KERNEL -o DIR/k`) and its layout, as in
 * bench/cpu/gemm_layouts.pdl: mm (A·B), mm_nt (A·Bᵀ), mm_tn (Aᵀ·B), mm_tt (Aᵀ·Bᵀ).
 * mm_strips takes B as N/16 strips of K x 16 (a kernel over a pre-packed B:
 * `B[jo, k, ji]`, C[i, jo, ji]) and calls it with N / 16 for N.  Set
 * PERFC_NUM_THREADS to THREADS for perfc's pool.  Build: see gemm_interleave.sh. */
#include <cblas.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"

typedef int (*KernelFn)(const float *, const float *, float *, int64_t, int64_t, int64_t);

enum { MAX_LIBS = 8, MAX_ROUNDS = 1000 };

static float *fresh(size_t n)
{
    float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(3);
    }
    for (size_t i = 0; i < n; i++)
        p[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    return p;
}

int main(int argc, char **argv)
{
    if (argc < 8) {
        fprintf(stderr, "usage: %s KERNEL M N K THREADS ROUNDS lib.so...\n", argv[0]);
        return 1;
    }
    const char *kn = argv[1];
    long M = atol(argv[2]), N = atol(argv[3]), K = atol(argv[4]);
    int threads = atoi(argv[5]), rounds = atoi(argv[6]), nl = argc - 7;
    bool strips = strcmp(kn, "mm_strips") == 0;
    bool ta = !strcmp(kn, "mm_tn") || !strcmp(kn, "mm_tt"), tb = !strcmp(kn, "mm_nt") || !strcmp(kn, "mm_tt");
    if (M <= 0 || N <= 0 || K <= 0 || rounds < 1 || rounds > MAX_ROUNDS || nl > MAX_LIBS || (strips && N % 16)) {
        fprintf(stderr, "bad sizes, rounds (1..%d), library count (..%d) or strips (N a multiple of 16)\n",
                MAX_ROUNDS, MAX_LIBS);
        return 1;
    }
    KernelFn fn[MAX_LIBS];
    for (int i = 0; i < nl; i++) {
        void *h = dlopen(argv[7 + i], RTLD_NOW | RTLD_LOCAL);
        char sym[96];
        snprintf(sym, sizeof sym, "k_%s", kn);
        fn[i] = h ? (KernelFn)dlsym(h, sym) : NULL;
        if (!fn[i]) {
            fprintf(stderr, "%s: %s\n", argv[7 + i], h ? "no k_KERNEL function" : dlerror());
            return 1;
        }
    }
    openblas_set_num_threads(threads);
    srand(1);
    float *A = fresh((size_t)M * K), *B = fresh((size_t)K * N), *C = fresh((size_t)M * N);
    float *G = fresh((size_t)M * N), *Bs = strips ? fresh((size_t)K * N) : B;
    if (strips)
        for (long k = 0; k < K; k++)
            for (long j = 0; j < N; j++)
                Bs[(j / 16) * K * 16 + k * 16 + j % 16] = B[k * N + j];
    long nn = strips ? N / 16 : N;
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K,
                1.f, A, ta ? (int)M : (int)K, B, tb ? (int)K : (int)N, 0.f, G, (int)N);
    for (int v = 0; v < nl; v++) {
        memset(C, 0, (size_t)M * N * sizeof(float));
        int rc = fn[v](A, Bs, C, M, nn, K);
        double err = 0, ref = 0;
        for (long i = 0; i < M * N; i++) {
            err = fmax(err, fabs((double)C[i] - G[i]));
            ref = fmax(ref, fabs((double)G[i]));
        }
        if (rc || err > 1e-4 * (ref + 1) * sqrt((double)K)) {
            fprintf(stderr, "%s: wrong result (status %d, max error %g)\n", argv[7 + v], rc, err);
            return 2;
        }
    }
    static double t[MAX_LIBS + 1][MAX_ROUNDS];
    for (int r = 0; r < rounds; r++)
        for (int v = 0; v <= nl; v++) {
            bu_flush(A, (size_t)M * K * sizeof(float));
            bu_flush(Bs, (size_t)K * N * sizeof(float));
            bu_flush(C, (size_t)M * N * sizeof(float));
            /* OpenBLAS's idle threads spin for about 0.1 s after a call: a perfc call
             * right after one would share its second core with them (1024^3 at two
             * threads measured at one thread's speed).  Every call starts with the
             * other libraries' threads asleep. */
            if (threads > 1)
                nanosleep(&(struct timespec){.tv_nsec = 250000000}, NULL);
            double t0 = bu_now();
            if (v == nl)
                cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)M,
                            (int)N, (int)K, 1.f, A, ta ? (int)M : (int)K, B, tb ? (int)K : (int)N, 0.f, C, (int)N);
            else
                fn[v](A, Bs, C, M, nn, K);
            t[v][r] = bu_now() - t0;
        }
    double fl = 2.0 * M * N * K * 1e-9;
    qsort(t[nl], (size_t)rounds, sizeof(double), bu_cmp);
    double bmin = t[nl][0], bmed = t[nl][rounds / 2];
    printf("%s %ldx%ldx%ld, %d thread(s), %d rounds: OpenBLAS min %.1f, median %.1f GFLOP/s\n", kn, M, N, K, threads,
           rounds, fl / bmin, fl / bmed);
    for (int v = 0; v < nl; v++) {
        qsort(t[v], (size_t)rounds, sizeof(double), bu_cmp);
        printf("  %-40s min %6.1f  median %6.1f GFLOP/s   ratio min %.3f  median %.3f\n", argv[7 + v], fl / t[v][0],
               fl / t[v][rounds / 2], bmin / t[v][0], bmed / t[v][rounds / 2]);
    }
    return 0;
}
