/* Calls the kernels of libkernels (built by perfc_add_library in CMakeLists.txt) on
 * a size it was specialised for and on sizes it never saw, and checks each result
 * against a plain triple loop.  Exit status 0 when all agree. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels.h"

static float *matrix(int64_t rows, int64_t cols, unsigned seed)
{
    /* 64-byte aligned, so the specialised code can run on the sizes it was built for */
    size_t bytes = (size_t)(rows * cols > 0 ? rows * cols : 1) * sizeof(float);
    float *m = aligned_alloc(64, (bytes + 63) / 64 * 64);
    for (int64_t i = 0; i < rows * cols; i++) {
        seed = seed * 1103515245u + 12345u;
        m[i] = (float)((seed >> 8) % 2001) / 1000.0f - 1.0f;
    }
    return m;
}

static int check_gemm(int64_t M, int64_t N, int64_t K)
{
    float *A = matrix(M, K, 1), *B = matrix(K, N, 2), *C = matrix(M, N, 3);
    int rc = kernels_gemm(A, B, C, M, N, K);
    if (rc != PERFC_LIB_OK) {
        printf("gemm %lldx%lldx%lld: error %d: %s\n", (long long)M, (long long)N, (long long)K, rc,
               kernels_last_error());
        return 1;
    }
    double worst = 0;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++)
                s += (double)A[i * K + k] * B[k * N + j];
            double e = fabs(C[i * N + j] - s) / (1 + fabs(s));
            worst = e > worst ? e : worst;
        }
    printf("gemm %4lldx%4lldx%4lld: worst relative error %.2e\n", (long long)M, (long long)N, (long long)K, worst);
    free(A);
    free(B);
    free(C);
    return worst < 1e-4 ? 0 : 1;
}

static int check_softmax(int64_t R, int64_t C)
{
    float *X = matrix(R, C, 4), *Y = matrix(R, C, 5);
    int rc = kernels_softmax(X, Y, R, C);
    if (rc != PERFC_LIB_OK) {
        printf("softmax: error %d: %s\n", rc, kernels_last_error());
        return 1;
    }
    double worst = 0;
    for (int64_t r = 0; r < R; r++) {
        double m = -INFINITY, s = 0;
        for (int64_t c = 0; c < C; c++)
            m = X[r * C + c] > m ? X[r * C + c] : m;
        for (int64_t c = 0; c < C; c++)
            s += exp(X[r * C + c] - m);
        for (int64_t c = 0; c < C; c++) {
            double want = exp(X[r * C + c] - m) / s, e = fabs(Y[r * C + c] - want) / (1 + want);
            worst = e > worst ? e : worst;
        }
    }
    printf("softmax %4lldx%4lld: worst relative error %.2e\n", (long long)R, (long long)C, worst);
    free(X);
    free(Y);
    return worst < 1e-5 ? 0 : 1;
}

int main(void)
{
    int fails = 0;
    fails += check_gemm(256, 256, 256); /* specialised at build time */
    fails += check_gemm(100, 37, 64);   /* three sizes the library never saw */
    fails += check_gemm(1, 300, 5);
    fails += check_gemm(129, 257, 33);
    fails += check_softmax(64, 1000);
    fails += check_softmax(3, 77);
    /* bad use is an error code and a message, not a crash */
    float one = 1;
    if (kernels_gemm(NULL, &one, &one, 1, 1, 1) != PERFC_LIB_ENULL)
        fails++;
    printf("NULL pointer: %s\n", kernels_last_error());
    if (kernels_gemm(&one, &one, &one, -1, 1, 1) != PERFC_LIB_ESIZE)
        fails++;
    printf("negative size: %s\n", kernels_last_error());
    for (int i = 0; i < kernels_nkernels; i++)
        printf("kernel %s: %d tensors, %d sizes, %d specialised size set(s)\n", kernels_kernels[i].name,
               kernels_kernels[i].ntensors, kernels_kernels[i].nsizes, kernels_kernels[i].nvariants);
    printf("%s\n", fails ? "FAILED" : "ok");
    return fails != 0;
}
