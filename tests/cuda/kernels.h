/* Hand-built IR kernels shared by the CUDA tests (see kernels.c). */
#ifndef PERFC_TESTS_CUDA_KERNELS_H
#define PERFC_TESTS_CUDA_KERNELS_H

#include "ir/ir.h"

/* batch > 1 makes a batched GEMM C[b, i, j] = sum(k) A[b, i, k] * B[b, k, j]. */
Kernel *kb_gemm(DType ab, DType cd, int64_t batch, int64_t M, int64_t N, int64_t K);
Kernel *kb_softmax(int64_t R, int64_t C);
Kernel *kb_conv(int64_t H, int64_t W);
Kernel *kb_eltwise(int64_t N);
Kernel *kb_tiled_gemm(int64_t M, int64_t N, int64_t K);
Kernel *kb_too_much_shared(void);
Kernel *kb_too_many_threads(void);

#endif
