/* oneDNN's matmul as the library baseline for a bf16 GEMM on the CPU (issue 15's
 * bar: bf16 GEMM 2048^3 against oneDNN on a machine with AVX-512 BF16 or AMX).
 * C[M, N] (f32) = A[M, K] (bf16) . B[K, N] (bf16), row-major, as perfc's
 * bench/gpu/contractions/mm.pdl with T = bf16, U = f32.  oneDNN picks its own
 * layout for B (`any`), reordered once outside the timing (weights, as a
 * framework prepacks them); A and C stay row-major.  Timed as perfc's harness
 * times kernels (clflush before each repetition, median); the result is checked
 * against a double-precision product of the same bf16 inputs.  Threads:
 * OMP_NUM_THREADS.
 *
 *   matmul_onednn M N K   ->   ms=T gflops=G rel_error=E impl=NAME
 */
#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "onednn_check.h"

static uint16_t to_bf16(float f) /* round to nearest even */
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static double from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s M N K\n", argv[0]);
        return 1;
    }
    long M = atol(argv[1]), N = atol(argv[2]), K = atol(argv[3]);
    uint16_t *A = aligned_alloc(64, 2 * (size_t)(M * K + 32)), *B = aligned_alloc(64, 2 * (size_t)(K * N + 32));
    float *C = aligned_alloc(64, 4 * (size_t)(M * N + 16));
    srand(12345);
    for (long i = 0; i < M * K; i++)
        A[i] = to_bf16(2.0f * (float)rand() / (float)RAND_MAX - 1.0f);
    for (long i = 0; i < K * N; i++)
        B[i] = to_bf16(2.0f * (float)rand() / (float)RAND_MAX - 1.0f);

    dnnl_engine_t eng;
    dnnl_stream_t st;
    CHECK(dnnl_engine_create(&eng, dnnl_cpu, 0));
    CHECK(dnnl_stream_create(&st, eng, dnnl_stream_default_flags));
    dnnl_dims_t ad = {M, K}, bd = {K, N}, cd = {M, N};
    dnnl_memory_desc_t a_md, b_user, b_any, c_md;
    CHECK(dnnl_memory_desc_init_by_tag(&a_md, 2, ad, dnnl_bf16, dnnl_ab));
    CHECK(dnnl_memory_desc_init_by_tag(&b_user, 2, bd, dnnl_bf16, dnnl_ab));
    CHECK(dnnl_memory_desc_init_by_tag(&b_any, 2, bd, dnnl_bf16, dnnl_format_tag_any));
    CHECK(dnnl_memory_desc_init_by_tag(&c_md, 2, cd, dnnl_f32, dnnl_ab));
    dnnl_matmul_desc_t md;
    CHECK(dnnl_matmul_desc_init(&md, &a_md, &b_any, NULL, &c_md));
    dnnl_primitive_desc_t pd;
    CHECK(dnnl_primitive_desc_create(&pd, &md, NULL, eng, NULL));
    const char *impl = "?";
    CHECK(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl));
    const dnnl_memory_desc_t *b_md = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_memory_t am, bu, bm, cm;
    CHECK(dnnl_memory_create(&am, &a_md, eng, A));
    CHECK(dnnl_memory_create(&bu, &b_user, eng, B));
    CHECK(dnnl_memory_create(&bm, b_md, eng, DNNL_MEMORY_ALLOCATE));
    CHECK(dnnl_memory_create(&cm, &c_md, eng, C));
    dnnl_primitive_desc_t rpd;
    dnnl_primitive_t r, mm;
    CHECK(dnnl_reorder_primitive_desc_create(&rpd, &b_user, eng, b_md, eng, NULL));
    CHECK(dnnl_primitive_create(&r, rpd));
    dnnl_exec_arg_t ra[2] = {{DNNL_ARG_FROM, bu}, {DNNL_ARG_TO, bm}};
    CHECK(dnnl_primitive_execute(r, st, 2, ra));
    CHECK(dnnl_primitive_create(&mm, pd));
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}};
    void *bp;
    CHECK(dnnl_memory_get_data_handle(bm, &bp));
    size_t bbytes = dnnl_memory_desc_get_size(b_md);

    double times[200], spent = 0;
    int reps = 0;
    for (int it = -1; it < 200 && (spent < 0.5 || reps < 5); it++) {
        bu_flush(A, 2 * (size_t)(M * K));
        bu_flush(bp, bbytes);
        bu_flush(C, 4 * (size_t)(M * N));
        double t0 = bu_now();
        CHECK(dnnl_primitive_execute(mm, st, 3, args));
        CHECK(dnnl_stream_wait(st));
        double t = bu_now() - t0;
        if (it >= 0) {
            times[reps++] = t;
            spent += t;
        }
    }
    double med = bu_median(times, reps);

    /* 64 rows checked in double (every row would cost as much as the product) */
    double num = 0, den = 0;
    for (long i = 0; i < M; i += (M + 63) / 64)
        for (long j = 0; j < N; j++) {
            double acc = 0;
            for (long k = 0; k < K; k++)
                acc += from_bf16(A[i * K + k]) * from_bf16(B[k * N + j]);
            double d = acc - (double)C[i * N + j];
            num += d * d;
            den += acc * acc;
        }
    double rel = sqrt(num / (den > 0 ? den : 1));
    printf("ms=%.4f gflops=%.2f rel_error=%.3g impl=%s\n", med * 1e3, 2.0 * (double)M * N * K / med * 1e-9, rel,
           impl);
    return rel < 1e-4 ? 0 : 2;
}
