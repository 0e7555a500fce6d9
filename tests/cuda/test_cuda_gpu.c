/* GPU tests (CTest label `gpu`): every test kernel is compiled for this GPU's
 * architecture, run on seeded random inputs with outputs poisoned, and compared
 * with the f64 interpreter (a reference that shares no code with the emitter) at
 * odd shapes and at larger ones; the hand-scheduled tiled GEMM is compared with the
 * same interpreter on the unscheduled kernel.  cuBLAS is checked against the
 * interpreter too.  Exits 77 (skipped) when there is no driver or GPU.
 *
 * `test_cuda_gpu --bench` instead times the naive and tiled GEMMs against cuBLAS and
 * the softmax against the device's copy bandwidth in one process and prints a table
 * (validated first: nothing unvalidated gets a time). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cuda/cg_cuda.h"
#include "kernels.h"
#include "runtime/cuda_driver.h"
#include "../lowered.h"

static int failures;
static GpuDevice *gpu;

static double tol_for(DType t, int64_t red)
{
    double base = t == DT_F64 ? 1e-12 : t == DT_F32 ? 1e-6 : t == DT_F16 ? 2e-3 : 1.6e-2;
    return base * sqrt((double)(red > 1 ? red : 1)) + (t == DT_F32 ? 1e-6 : 0);
}

typedef struct Compiled {
    CgCudaModule m;
    GpuProgram *p;
    GpuKernelBufs b;
    CUdeviceptr *args;
} Compiled;

static bool prepare(Kernel *k, Compiled *c, double **host, Diags *d)
{
    memset(c, 0, sizeof *c);
    const char *arch = gpu_info(gpu)->arch;
    if (!tl_cuda_generate(k, arch, &c->m, d) || !cg_cuda_compile(&c->m, arch, d) || !(c->p = gpu_load(gpu, &c->m, d)))
        return false;
    if (!gpu_bufs_alloc(gpu, k, &c->b, d) || !gpu_bufs_upload(gpu, k, &c->b, host, d))
        return false;
    c->args = gpu_bufs_args(&c->b, &c->m);
    return true;
}

static void release(Compiled *c)
{
    gpu_bufs_free(gpu, &c->b);
    gpu_program_free(c->p);
    cg_cuda_module_free(&c->m);
    free(c->args);
}

/* Relative Frobenius error of out vs ref over n elements; NaN anywhere is infinite. */
static double rel_err(const double *out, const double *ref, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(out[i]) && isfinite(ref[i])) return INFINITY;
        double e = out[i] - ref[i];
        num += e * e;
        den += ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* Runs k on the GPU and compares every output with the interpreter running ref
 * (the same kernel unscheduled, or k itself). */
static void validate(Kernel *k, Kernel *ref, int64_t red, uint64_t seed)
{
    Diags d;
    diag_init(&d);
    double **gh = ir_alloc_buffers(k, seed);
    double **rh = ir_alloc_buffers(ref, seed);
    Compiled c;
    bool ok = prepare(k, &c, gh, &d) && gpu_launch(c.p, c.args, &d) && gpu_bufs_download(gpu, k, &c.b, gh, &d);
    if (ok && !ir_interp(ref, rh, &d)) ok = false;
    if (!ok) {
        failures++;
        fprintf(stderr, "FAIL %s: %s\n", k->name, d.text.s ? d.text.s : "");
    }
    for (int i = 0; ok && i < ref->nbufs; i++) {
        const Buffer *b = ref->bufs[i];
        if (b->kind != BUF_OUT) continue;
        int64_t n = ir_buffer_elems(ref, b);
        double e = rel_err(gh[i], rh[i], n), tol = tol_for(b->dtype, red);
        bool pass = e <= tol;
        printf("%-4s %-10s %-6s %s elems %-9lld rel.err %.2e (tol %.1e)\n", pass ? "ok" : "FAIL", k->name, b->name,
               dtype_name(b->dtype), (long long)n, e, tol);
        if (!pass) failures++;
    }
    release(&c);
    ir_free_buffers(k, gh);
    ir_free_buffers(ref, rh);
    diag_free(&d);
}

static void test_cublas(Cublas *cb, DType ab, DType cd, int64_t batch, int64_t M, int64_t N, int64_t K)
{
    Kernel *k = kb_gemm(ab, cd, batch, M, N, K);
    Diags d;
    diag_init(&d);
    double **h = ir_alloc_buffers(k, 7);
    double **r = ir_alloc_buffers(k, 7);
    GpuKernelBufs b;
    bool ok = gpu_bufs_alloc(gpu, k, &b, &d) && gpu_bufs_upload(gpu, k, &b, h, &d) &&
              cublas_gemm(cb, ab, cd, false, false, batch, M, N, K, M * K, K * N, M * N, b.ptr[0], b.ptr[1], b.ptr[2],
                          false, &d) &&
              gpu_bufs_download(gpu, k, &b, h, &d) && ir_interp(k, r, &d);
    double e = ok ? rel_err(h[2], r[2], ir_buffer_elems(k, k->bufs[2])) : INFINITY;
    bool pass = ok && e <= tol_for(cd, K);
    printf("%-4s cublas %s->%s batch %lld %lldx%lldx%lld rel.err %.2e %s\n", pass ? "ok" : "FAIL", dtype_name(ab),
           dtype_name(cd), (long long)batch, (long long)M, (long long)N, (long long)K, e, d.text.s ? d.text.s : "");
    if (!pass) failures++;
    gpu_bufs_free(gpu, &b);
    ir_free_buffers(k, h);
    ir_free_buffers(k, r);
    diag_free(&d);
    ir_free(k);
}

/* ---- benchmark ---- */

typedef struct Work {
    Compiled *c;
    Cublas *cb;
    DType ab, cd;
    int64_t M, N, K;
} Work;

static bool run_kernel(void *ctx, Diags *d)
{
    Work *w = ctx;
    return gpu_launch(w->c->p, w->c->args, d);
}

static bool run_cublas(void *ctx, Diags *d)
{
    Work *w = ctx;
    GpuKernelBufs *b = &w->c->b;
    return cublas_gemm(w->cb, w->ab, w->cd, false, false, 1, w->M, w->N, w->K, 0, 0, 0, b->ptr[0], b->ptr[1],
                       b->ptr[2], false, d);
}

/* Validation at benchmark size: the product against cuBLAS in the same dtypes on the
 * same inputs (the interpreter would take minutes at 4096^3); cuBLAS itself is
 * checked against the interpreter above. */
static bool bench_gemm(Cublas *cb, const char *label, Kernel *k, DType ab, DType cd, int64_t M, int64_t N, int64_t K)
{
    Diags d;
    diag_init(&d);
    double **h = ir_alloc_buffers(k, 99);
    Compiled c;
    Work w = {&c, cb, ab, cd, M, N, K};
    bool ok = prepare(k, &c, h, &d) && run_kernel(&w, &d) && gpu_bufs_download(gpu, k, &c.b, h, &d);
    double *mine = NULL;
    if (ok) {
        int64_t n = M * N;
        mine = xmalloc(sizeof(double) * (size_t)n);
        memcpy(mine, h[2], sizeof(double) * (size_t)n);
        ok = gpu_bufs_upload(gpu, k, &c.b, h, &d) && run_cublas(&w, &d) && gpu_bufs_download(gpu, k, &c.b, h, &d);
        double e = ok ? rel_err(mine, h[2], n) : INFINITY;
        if (!(e <= tol_for(cd, K))) {
            printf("%-28s INVALID rel.err vs cuBLAS %.2e: no time reported\n", label, e);
            ok = false;
            failures++;
        }
    }
    GpuTiming tk = {0}, tb = {0};
    if (ok) ok = gpu_time(gpu, run_kernel, &w, 1.0, 200, &tk, &d) && gpu_time(gpu, run_cublas, &w, 1.0, 200, &tb, &d);
    if (ok) {
        double fl = 2.0 * M * N * K;
        printf("%-28s perfc %8.3f ms (min %.3f max %.3f, %d reps) %7.1f TFLOP/s | cuBLAS %8.3f ms %7.1f TFLOP/s | "
               "ratio %.3f\n", label, tk.median_ms, tk.min_ms, tk.max_ms, tk.reps, fl / tk.median_ms / 1e9,
               tb.median_ms, fl / tb.median_ms / 1e9, tb.median_ms / tk.median_ms);
    } else if (d.text.s) {
        printf("%-28s error: %s\n", label, d.text.s);
        failures++;
    }
    for (int i = 0; i < c.m.nlaunches; i++)
        printf("    %s: %d regs, %d B shared, %d B stack, spills %d/%d\n", c.m.launches[i].name,
               c.m.launches[i].regs, c.m.launches[i].shared_bytes, c.m.launches[i].stack_bytes,
               c.m.launches[i].spill_stores, c.m.launches[i].spill_loads);
    free(mine);
    release(&c);
    ir_free_buffers(k, h);
    diag_free(&d);
    return ok;
}

static void bench_softmax(int64_t R, int64_t C)
{
    Kernel *k = kb_softmax(R, C);
    Diags d;
    diag_init(&d);
    double **h = ir_alloc_buffers(k, 5);
    Compiled c;
    Work w = {&c, NULL, DT_F32, DT_F32, 0, 0, 0};
    GpuTiming t = {0};
    bool ok = prepare(k, &c, h, &d) && run_kernel(&w, &d) && gpu_bufs_download(gpu, k, &c.b, h, &d);
    /* validate rows against a host f64 softmax of the same inputs */
    double worst = 0;
    for (int64_t r = 0; ok && r < R; r += 97) {
        double mx = -INFINITY, s = 0;
        for (int64_t j = 0; j < C; j++) mx = fmax(mx, h[0][r * C + j]);
        for (int64_t j = 0; j < C; j++) s += exp(h[0][r * C + j] - mx);
        for (int64_t j = 0; j < C; j++) {
            double ref = exp(h[0][r * C + j] - mx) / s;
            double e = fabs(h[1][r * C + j] - ref) / ref;
            if (!(e <= worst)) worst = e;
        }
    }
    if (ok && !(worst < 1e-5)) {
        printf("softmax %lldx%lld INVALID (worst rel.err %.2e)\n", (long long)R, (long long)C, worst);
        failures++;
        ok = false;
    }
    if (ok) ok = gpu_time(gpu, run_kernel, &w, 1.0, 100, &t, &d);
    if (ok) {
        double bytes = 2.0 * R * C * 4; /* the floor: X read once, Y written once */
        printf("%-28s perfc %8.3f ms (min %.3f max %.3f) %7.0f GB/s of compulsory traffic (%d launches)\n",
               "softmax f32 8192x8192", t.median_ms, t.min_ms, t.max_ms, bytes / t.median_ms / 1e6, c.m.nlaunches);
    } else if (d.text.s) {
        printf("softmax error: %s\n", d.text.s);
        failures++;
    }
    release(&c);
    ir_free_buffers(k, h);
    diag_free(&d);
    ir_free(k);
}

int main(int argc, char **argv)
{
    bool bench = argc > 1 && strcmp(argv[1], "--bench") == 0;
    /* --only LABEL: one validation case (for compute-sanitizer runs) */
    const char *only = argc > 2 && strcmp(argv[1], "--only") == 0 ? argv[2] : NULL;
    Diags d;
    diag_init(&d);
    gpu = gpu_open(0, &d);
    if (!gpu) {
        printf("skipped: %s", d.text.s ? d.text.s : "no GPU\n");
        diag_free(&d);
        return 77;
    }
    char why[256];
    if (!cg_nvrtc_available(why, sizeof why)) {
        printf("skipped: %s\n", why);
        diag_free(&d);
        return 77;
    }
    StrBuf s = {0};
    gpu_describe(gpu, &s);
    printf("GPU: %s\n", s.s);
    sb_free(&s);
    Cublas *cb = cublas_open(gpu, &d);
    if (cb)
        printf("cuBLAS %d\n", cublas_version(cb));
    else
        printf("no cuBLAS: %s", d.text.s ? d.text.s : "\n");

    if (bench) {
        Kernel *k = kb_gemm(DT_F32, DT_F32, 1, 4096, 4096, 4096);
        if (cb) bench_gemm(cb, "gemm f32 4096^3 naive", k, DT_F32, DT_F32, 4096, 4096, 4096);
        ir_free(k);
        k = kb_tiled_gemm(4096, 4096, 4096);
        if (cb) bench_gemm(cb, "gemm f32 4096^3 tiled 64x64", k, DT_F32, DT_F32, 4096, 4096, 4096);
        ir_free(k);
        k = kb_gemm(DT_F16, DT_F32, 1, 4096, 4096, 4096);
        if (cb) bench_gemm(cb, "gemm f16->f32 4096^3 naive", k, DT_F16, DT_F32, 4096, 4096, 4096);
        ir_free(k);
        k = kb_gemm(DT_BF16, DT_F32, 1, 4096, 4096, 4096);
        if (cb) bench_gemm(cb, "gemm bf16->f32 4096^3 naive", k, DT_BF16, DT_F32, 4096, 4096, 4096);
        ir_free(k);
        bench_softmax(8192, 8192);
    } else {
        struct { const char *label; Kernel *k, *ref; int64_t red; } cases[] = {
            {"gemm_odd", kb_gemm(DT_F32, DT_F32, 1, 67, 45, 33), NULL, 33},
            {"gemm_big", kb_gemm(DT_F32, DT_F32, 1, 256, 512, 384), NULL, 384},
            {"gemm_f16", kb_gemm(DT_F16, DT_F32, 1, 129, 65, 97), NULL, 97},
            {"gemm_bf16", kb_gemm(DT_BF16, DT_F32, 1, 129, 65, 97), NULL, 97},
            {"gemm_f16out", kb_gemm(DT_F16, DT_F16, 1, 31, 29, 64), NULL, 64},
            {"bgemm", kb_gemm(DT_F32, DT_F32, 5, 37, 41, 19), NULL, 19},
            {"softmax_odd", kb_softmax(13, 301), NULL, 301},
            {"softmax_big", kb_softmax(1024, 1000), NULL, 1000},
            {"conv_odd", kb_conv(37, 29), NULL, 9},
            {"conv_big", kb_conv(300, 257), NULL, 9},
            {"eltwise", kb_eltwise(1001), NULL, 1},
            {"tiled_odd", kb_tiled_gemm(130, 70, 45), kb_gemm(DT_F32, DT_F32, 1, 130, 70, 45), 45},
            {"tiled_big", kb_tiled_gemm(512, 384, 256), kb_gemm(DT_F32, DT_F32, 1, 512, 384, 256), 256},
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            if (!only || strcmp(only, cases[i].label) == 0)
                validate(cases[i].k, cases[i].ref ? cases[i].ref : cases[i].k, cases[i].red, 1000 + i);
            if (cases[i].ref) ir_free(cases[i].ref);
            ir_free(cases[i].k);
        }
        if (cb && !only) {
            test_cublas(cb, DT_F32, DT_F32, 1, 67, 45, 33);
            test_cublas(cb, DT_F16, DT_F32, 1, 64, 48, 40);
            test_cublas(cb, DT_BF16, DT_F32, 1, 33, 17, 9);
            test_cublas(cb, DT_F32, DT_F32, 4, 20, 30, 10);
            test_cublas(cb, DT_F64, DT_F64, 1, 31, 29, 27);
        }
    }
    cublas_close(cb);
    gpu_close(gpu);
    diag_free(&d);
    if (failures) {
        printf("%d failure(s)\n", failures);
        return 1;
    }
    printf("cuda gpu tests passed\n");
    return 0;
}
