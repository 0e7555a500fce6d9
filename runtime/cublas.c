/* cuBLAS, loaded with dlopen, as perfc's GPU baseline (`--compare cublas`) and as a
 * reference for the GEMM family at shapes too large for the interpreter.
 *
 * The library is asked for exactly the work the kernel does: the same dtypes, the
 * compute type that matches (f32 accumulation for f32, f16 and bf16; f64 for f64),
 * and no TF32 for f32 unless the caller says the kernel asked for it.  Row-major
 * operands are handed to column-major cuBLAS as their transposes (C^T = B^T A^T), so
 * no data is moved. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_driver.h"

typedef struct cublasContext *cublasHandle_t;
typedef int cublasStatus_t;

/* cublasOperation_t, cudaDataType, cublasComputeType_t, cublasGemmAlgo_t values. */
enum {
    OP_N = 0,
    OP_T = 1,
    R_32F = 0,
    R_64F = 1,
    R_16F = 2,
    R_16BF = 14,
    COMPUTE_32F = 68,
    COMPUTE_64F = 70,
    COMPUTE_32F_FAST_TF32 = 77,
    GEMM_DEFAULT = -1,
};

struct Cublas {
    void *lib;
    cublasHandle_t h;
    int version;
    cublasStatus_t (*Create)(cublasHandle_t *);
    cublasStatus_t (*Destroy)(cublasHandle_t);
    cublasStatus_t (*GetVersion)(cublasHandle_t, int *);
    cublasStatus_t (*GemmEx)(cublasHandle_t, int, int, int, int, int, const void *, const void *, int, int,
                             const void *, int, int, const void *, void *, int, int, int, int);
    cublasStatus_t (*GemmStridedBatchedEx)(cublasHandle_t, int, int, int, int, int, const void *, const void *,
                                           int, int, long long, const void *, int, int, long long, const void *,
                                           void *, int, int, long long, int, int, int);
};

Cublas *cublas_open(GpuDevice *g, Diags *d)
{
    (void)g; /* cuBLAS works in the current context: gpu_open made the primary one current */
    const char *names[] = {getenv("PERFC_CUBLAS"), "libcublas.so.13", "libcublas.so.12", "libcublas.so",
                           "/usr/local/cuda/lib64/libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so.12"};
    void *lib = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++)
        if (names[i] && *names[i])
            lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        diag_plain(d, DIAG_ERROR, "--compare cublas needs cuBLAS: libcublas.so.13 (or .12) was not found; "
                   "set PERFC_CUBLAS to its path");
        return NULL;
    }
    Cublas *c = xcalloc(1, sizeof *c);
    c->lib = lib;
    *(void **)&c->Create = dlsym(lib, "cublasCreate_v2");
    *(void **)&c->Destroy = dlsym(lib, "cublasDestroy_v2");
    *(void **)&c->GetVersion = dlsym(lib, "cublasGetVersion_v2");
    *(void **)&c->GemmEx = dlsym(lib, "cublasGemmEx");
    *(void **)&c->GemmStridedBatchedEx = dlsym(lib, "cublasGemmStridedBatchedEx");
    if (!c->Create || !c->Destroy || !c->GetVersion || !c->GemmEx || !c->GemmStridedBatchedEx) {
        diag_plain(d, DIAG_ERROR, "the cuBLAS found lacks cublasGemmEx / cublasGemmStridedBatchedEx");
        dlclose(lib);
        free(c);
        return NULL;
    }
    cublasStatus_t s = c->Create(&c->h);
    if (s != 0) {
        diag_plain(d, DIAG_ERROR, "cublasCreate failed (status %d)", s);
        dlclose(lib);
        free(c);
        return NULL;
    }
    c->GetVersion(c->h, &c->version);
    return c;
}

void cublas_close(Cublas *c)
{
    if (!c) return;
    c->Destroy(c->h);
    /* the library stays loaded: unloading cuBLAS while the context lives is unsafe */
    free(c);
}

int cublas_version(const Cublas *c) { return c->version; }

static int cuda_type(DType t)
{
    switch (t) {
    case DT_F64: return R_64F;
    case DT_F32: return R_32F;
    case DT_F16: return R_16F;
    case DT_BF16: return R_16BF;
    default: return -1;
    }
}

bool cublas_gemm(Cublas *c, DType ab, DType cd, bool ta, bool tb, int64_t batch, int64_t M, int64_t N, int64_t K,
                 int64_t sa, int64_t sb, int64_t sc, CUdeviceptr A, CUdeviceptr B, CUdeviceptr C, bool allow_tf32,
                 Diags *d)
{
    int at = cuda_type(ab), ct = cuda_type(cd);
    if (at < 0 || ct < 0 || (ab == DT_F64) != (cd == DT_F64)) {
        diag_plain(d, DIAG_ERROR, "cuBLAS has no GEMM for %s inputs with %s output", dtype_name(ab), dtype_name(cd));
        return false;
    }
    if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX || batch > INT32_MAX) {
        diag_plain(d, DIAG_ERROR, "GEMM too large for cuBLAS' 32-bit sizes");
        return false;
    }
    int comp = ab == DT_F64 ? COMPUTE_64F : (ab == DT_F32 && allow_tf32) ? COMPUTE_32F_FAST_TF32 : COMPUTE_32F;
    double one64 = 1, zero64 = 0;
    float one32 = 1, zero32 = 0;
    const void *alpha = ab == DT_F64 ? (const void *)&one64 : (const void *)&one32;
    const void *beta = ab == DT_F64 ? (const void *)&zero64 : (const void *)&zero32;
    /* column-major C^T (N x M) = op(B)^T (N x K) . op(A)^T (K x M) */
    int opb = tb ? OP_T : OP_N, opa = ta ? OP_T : OP_N;
    int ldb = tb ? (int)K : (int)N, lda = ta ? (int)M : (int)K;
    cublasStatus_t s;
    if (batch <= 1)
        s = c->GemmEx(c->h, opb, opa, (int)N, (int)M, (int)K, alpha, (const void *)(uintptr_t)B, at, ldb,
                      (const void *)(uintptr_t)A, at, lda, beta, (void *)(uintptr_t)C, ct, (int)N, comp, GEMM_DEFAULT);
    else
        s = c->GemmStridedBatchedEx(c->h, opb, opa, (int)N, (int)M, (int)K, alpha, (const void *)(uintptr_t)B, at,
                                    ldb, (long long)sb, (const void *)(uintptr_t)A, at, lda, (long long)sa,
                                    beta, (void *)(uintptr_t)C, ct, (int)N, (long long)sc, (int)batch, comp,
                                    GEMM_DEFAULT);
    if (s != 0) {
        diag_plain(d, DIAG_ERROR, "cublasGemm%sEx failed (status %d) for %s x %s -> %s, %lldx%lldx%lld",
                   batch > 1 ? "StridedBatched" : "", s, dtype_name(ab), dtype_name(ab), dtype_name(cd),
                   (long long)M, (long long)N, (long long)K);
        return false;
    }
    return true;
}
