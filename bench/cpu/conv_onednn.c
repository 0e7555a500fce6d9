/* oneDNN's convolution as the library baseline for conv2d on the CPU (issue 15's
 * bar: ResNet-50 layers against oneDNN in the same run).  Batch 1, NCHW input and
 * output as perfc's stdlib conv2d takes them, OIHW filters, stride U, zero padding
 * P, f32, direct algorithm (Winograd would change the rounding).  Two times, each
 * the median of repetitions timed as perfc's harness times kernels (caches flushed
 * with clflush before each):
 *   conv  the primitive alone, on the layouts it chose (blocked), its weights
 *         reordered once beforehand: the library at its best, as an inference
 *         framework runs it;
 *   nchw  the same plus the reorders of the input from NCHW and of the output back
 *         to NCHW: the same contract as the perfc kernel.
 * The output is checked against a direct convolution accumulated in double, so a
 * wrong baseline is never reported as fast.  Threads: OMP_NUM_THREADS (Debian's
 * oneDNN runs on OpenMP).
 *
 *   conv_onednn C H W K R S U P   ->   conv_ms=T nchw_ms=T gflops=G rel_error=E impl=NAME
 */
#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "onednn_check.h"

static dnnl_primitive_t reorder(dnnl_engine_t eng, const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to)
{
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t p;
    CHECK(dnnl_reorder_primitive_desc_create(&pd, from, eng, to, eng, NULL));
    CHECK(dnnl_primitive_create(&p, pd));
    dnnl_primitive_desc_destroy(pd);
    return p;
}

static void run2(dnnl_primitive_t p, dnnl_stream_t st, dnnl_memory_t from, dnnl_memory_t to)
{
    dnnl_exec_arg_t a[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    CHECK(dnnl_primitive_execute(p, st, 2, a));
}

static size_t md_bytes(const dnnl_memory_desc_t *md) { return dnnl_memory_desc_get_size(md); }

static void *mem_ptr(dnnl_memory_t m)
{
    void *p;
    CHECK(dnnl_memory_get_data_handle(m, &p));
    return p;
}

int main(int argc, char **argv)
{
    if (argc != 9) {
        fprintf(stderr, "usage: %s C H W K R S U P\n", argv[0]);
        return 1;
    }
    long C = atol(argv[1]), H = atol(argv[2]), W = atol(argv[3]), K = atol(argv[4]), R = atol(argv[5]),
         S = atol(argv[6]), U = atol(argv[7]), P = atol(argv[8]);
    long OH = (H + 2 * P - R) / U + 1, OW = (W + 2 * P - S) / U + 1;
    float *X = aligned_alloc(64, sizeof(float) * (size_t)(C * H * W + 16));
    float *F = aligned_alloc(64, sizeof(float) * (size_t)(K * C * R * S + 16));
    float *Y = aligned_alloc(64, sizeof(float) * (size_t)(K * OH * OW + 16));
    srand(12345);
    for (long i = 0; i < C * H * W; i++)
        X[i] = 2.0f * (float)rand() / (float)RAND_MAX - 1.0f;
    for (long i = 0; i < K * C * R * S; i++)
        F[i] = 2.0f * (float)rand() / (float)RAND_MAX - 1.0f;

    dnnl_engine_t eng;
    dnnl_stream_t st;
    CHECK(dnnl_engine_create(&eng, dnnl_cpu, 0));
    CHECK(dnnl_stream_create(&st, eng, dnnl_stream_default_flags));
    dnnl_dims_t xd = {1, C, H, W}, fd = {K, C, R, S}, yd = {1, K, OH, OW}, strides = {U, U}, pad = {P, P};
    dnnl_memory_desc_t x_user, f_user, y_user, x_any, f_any, y_any;
    CHECK(dnnl_memory_desc_init_by_tag(&x_user, 4, xd, dnnl_f32, dnnl_nchw));
    CHECK(dnnl_memory_desc_init_by_tag(&f_user, 4, fd, dnnl_f32, dnnl_oihw));
    CHECK(dnnl_memory_desc_init_by_tag(&y_user, 4, yd, dnnl_f32, dnnl_nchw));
    CHECK(dnnl_memory_desc_init_by_tag(&x_any, 4, xd, dnnl_f32, dnnl_format_tag_any));
    CHECK(dnnl_memory_desc_init_by_tag(&f_any, 4, fd, dnnl_f32, dnnl_format_tag_any));
    CHECK(dnnl_memory_desc_init_by_tag(&y_any, 4, yd, dnnl_f32, dnnl_format_tag_any));
    dnnl_convolution_desc_t cd;
    CHECK(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &x_any, &f_any,
                                             NULL, &y_any, strides, pad, pad));
    dnnl_primitive_desc_t pd;
    CHECK(dnnl_primitive_desc_create(&pd, &cd, NULL, eng, NULL));
    const char *impl = "?";
    CHECK(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl));
    const dnnl_memory_desc_t *x_md = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t *f_md = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *y_md = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    dnnl_memory_t xu, fu, yu, xm, fm, ym;
    CHECK(dnnl_memory_create(&xu, &x_user, eng, X));
    CHECK(dnnl_memory_create(&fu, &f_user, eng, F));
    CHECK(dnnl_memory_create(&yu, &y_user, eng, Y));
    CHECK(dnnl_memory_create(&xm, x_md, eng, DNNL_MEMORY_ALLOCATE));
    CHECK(dnnl_memory_create(&fm, f_md, eng, DNNL_MEMORY_ALLOCATE));
    CHECK(dnnl_memory_create(&ym, y_md, eng, DNNL_MEMORY_ALLOCATE));
    dnnl_primitive_t conv, rx = reorder(eng, &x_user, x_md), rf = reorder(eng, &f_user, f_md),
                           ry = reorder(eng, y_md, &y_user);
    CHECK(dnnl_primitive_create(&conv, pd));
    run2(rf, st, fu, fm); /* the weights once, as a framework prepacks them */
    CHECK(dnnl_stream_wait(st));
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, fm}, {DNNL_ARG_DST, ym}};

    double med[2];
    for (int mode = 0; mode < 2; mode++) { /* 0: conv alone, 1: with the NCHW reorders */
        double times[200], spent = 0;
        int reps = 0;
        for (int it = -1; it < 200 && (spent < 0.3 || reps < 5); it++) {
            bu_flush(X, sizeof(float) * (size_t)(C * H * W));
            bu_flush(Y, sizeof(float) * (size_t)(K * OH * OW));
            bu_flush(mem_ptr(xm), md_bytes(x_md));
            bu_flush(mem_ptr(fm), md_bytes(f_md));
            bu_flush(mem_ptr(ym), md_bytes(y_md));
            double t0 = bu_now();
            if (mode) run2(rx, st, xu, xm);
            CHECK(dnnl_primitive_execute(conv, st, 3, args));
            if (mode) run2(ry, st, ym, yu);
            CHECK(dnnl_stream_wait(st));
            double t = bu_now() - t0;
            if (it >= 0) {
                times[reps++] = t;
                spent += t;
            }
        }
        med[mode] = bu_median(times, reps);
    }

    /* Y holds the NCHW result of the last timed run: checked in double. */
    double rel = bu_conv_error(X, F, Y, C, H, W, K, R, S, U, P);
    double flops = 2.0 * (double)K * (double)(OH * OW) * (double)(C * R * S);
    printf("conv_ms=%.4f nchw_ms=%.4f gflops=%.3f rel_error=%.3g impl=%s\n", med[0] * 1e3, med[1] * 1e3,
           flops / med[0] * 1e-9, rel, impl);
    return rel < 1e-4 ? 0 : 2;
}
