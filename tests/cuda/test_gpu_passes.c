/* The GPU target passes (passes/gpu_*.c) keep a kernel's meaning: every stdlib
 * kernel with a GPU schedule, at small shapes its schedule fits, is lowered and
 * scheduled, then copied and put through the target passes (block reductions,
 * per-thread copies of local buffers, grid loops, dead fills), and the f64
 * interpreter must give both the same outputs bit for bit (the passes change where
 * values live, never the arithmetic).  The lowered copy must also be one the CUDA
 * back end translates, and a kernel already lowered is left alone by a second run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cuda/cg_cuda.h"
#include "lang/ast.h"
#include "passes/passes.h"
#include "passes/xform.h"
#include "../stdlib_load.h"

static int failures;
#define CHECK(c, ...)                                              \
    do {                                                           \
        if (!(c)) {                                                \
            failures++;                                            \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);   \
            fprintf(stderr, __VA_ARGS__);                          \
            fputc('\n', stderr);                                   \
        }                                                          \
    } while (0)

/* Kernel `spec` of `path` with sizes `sizes` ("M=128 N=128 K=32"), its GPU schedule
 * applied (sched: it must have one).  spec is KERNEL or KERNEL/VARIANT (the file's
 * `schedule KERNEL for gpu as VARIANT`); sizes may bind the dtype parameter T (`T=f16`). */
static Kernel *load(Arena *a, const char *path, const char *spec, const char *sizes, bool sched, Diags *d)
{
    char name[64];
    snprintf(name, sizeof name, "%s", spec);
    char *slash = strchr(name, '/');
    const char *variant = slash ? slash + 1 : NULL;
    if (slash)
        *slash = 0;
    Program *p = tl_read_program(a, path, d);
    if (!p) return NULL;
    AstKernel *ak = program_find_kernel(p, name);
    if (!ak) return NULL;
    const char *dt = strstr(sizes, "T=");
    if (dt && kernel_find_dtparam(ak, "T") >= 0) {
        char v[8] = {0};
        sscanf(dt + 2, "%7[a-z0-9]", v);
        kernel_bind_dtparam(ak, kernel_find_dtparam(ak, "T"), dtype_from_name(v));
    }
    if (!sema_program(p, d)) return NULL;
    Kernel *k = tl_lower_sized(p, ak, sizes, d);
    if (!k) return NULL;
    const AstSchedule *s[8];
    int ns = 0;
    for (int i = 0; i < p->nschedules && ns < 8; i++)
        if (schedule_applies(p->schedules[i], ak, target_find("sm_90a"), variant))
            s[ns++] = p->schedules[i];
    PipelineOpts po = {0};
    po.schedules = s;
    po.nschedules = ns;
    if ((sched && ns == 0) || !pipeline_run(k, &po, d)) {
        ir_free(k);
        return NULL;
    }
    return k;
}

static void one_of(const char *dir, const char *file, const char *name, const char *sizes, const char *arch,
                   bool sched)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    Arena *a = arena_new();
    Diags d;
    diag_init(&d);
    Kernel *k = load(a, path, name, sizes, sched, &d);
    CHECK(k, "%s %s: does not lower with its GPU schedule", name, sizes);
    if (!k) {
        diag_flush(&d, stderr);
        diag_free(&d);
        arena_free(a);
        return;
    }
    Kernel *g = ir_clone_kernel(k);
    bool ok = pipeline_target(g, target_find(arch), &d);
    CHECK(ok && g->gpu_lowered, "%s: the target passes refused it", name);
    if (!ok) diag_flush(&d, stderr);
    /* a second run changes nothing */
    StrBuf p1 = {0}, p2 = {0};
    ir_print_kernel(g, &p1);
    CHECK(pipeline_target(g, target_find(arch), &d), "%s: second run", name);
    ir_print_kernel(g, &p2);
    CHECK(p1.s && p2.s && !strcmp(p1.s, p2.s), "%s: a lowered kernel changed again", name);
    sb_free(&p1);
    sb_free(&p2);
    double **bk = ir_alloc_buffers(k, 11), **bg = ir_alloc_buffers(g, 11);
    CHECK(bk && bg, "%s: buffers", name);
    if (ok && bk && bg) {
        bool r1 = ir_interp(k, bk, &d), r2 = ir_interp(g, bg, &d);
        CHECK(r1 && r2, "%s: interpreter failed", name);
        if (!r1 || !r2) diag_flush(&d, stderr);
        for (int b = 0; r1 && r2 && b < k->nbufs; b++) {
            if (k->bufs[b]->kind != BUF_OUT) continue;
            int64_t n = ir_buffer_elems(k, k->bufs[b]), bad = 0;
            for (int64_t i = 0; i < n; i++)
                bad += memcmp(&bk[b][i], &bg[b][i], sizeof(double)) != 0;
            CHECK(bad == 0, "%s: %lld of %lld elements of %s differ after the target passes", name, (long long)bad,
                  (long long)n, k->bufs[b]->name);
        }
        CgCudaModule m;
        CHECK(cg_cuda_generate(g, arch, &m, &d), "%s: the CUDA back end refuses the lowered kernel", name);
        if (d.nerrors) diag_flush(&d, stderr);
        cg_cuda_module_free(&m);
    }
    if (bk) ir_free_buffers(k, bk);
    if (bg) ir_free_buffers(g, bg);
    ir_free(g);
    ir_free(k);
    diag_free(&d);
    arena_free(a);
}

static void one(const char *dir, const char *file, const char *name, const char *sizes, const char *arch)
{
    one_of(dir, file, name, sizes, arch, true);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "stdlib";
    /* tests/lang: scans (block-wide on the GPU: single tiles, several tiles, a
     * partial last tile, 1-D, three row loops, every operator and type) and
     * scatters (atomic), unscheduled */
    const char *lang = argc > 2 ? argv[2] : NULL;
    if (lang) {
        one_of(lang, "ops.pdl", "cumsum", "R=3 C=1000", "sm_80", false);
        one_of(lang, "ops.pdl", "cumsum", "R=2 C=4096", "sm_90", false);
        one_of(lang, "ops.pdl", "reverse_cumsum", "R=2 C=10000", "sm_80", false);
        one_of(lang, "ops.pdl", "cumprod", "R=5 C=300", "sm_80", false);
        one_of(lang, "ops.pdl", "cummax_rows", "R=40 C=64", "sm_80", false);
        one_of(lang, "ops.pdl", "scatter_add", "N=500 V=7 D=3", "sm_80", false);
        one_of(lang, "scans.pdl", "cumsum1d", "N=20000", "sm_80", false);
        one_of(lang, "scans.pdl", "cumsum1d", "N=31", "sm_80", false);
        one_of(lang, "scans.pdl", "cummax", "R=3 C=77", "sm_80", false);
        one_of(lang, "scans.pdl", "reverse_cummin", "R=3 C=1025", "sm_80", false);
        one_of(lang, "scans.pdl", "cumsum_i32", "R=3 C=200", "sm_80", false);
        one_of(lang, "scans.pdl", "cummax_i32", "R=3 C=200", "sm_80", false);
        one_of(lang, "scans.pdl", "cumsum_f64", "R=3 C=9000", "sm_80", false);
        one_of(lang, "scans.pdl", "cumsum_f16", "R=3 C=300", "sm_80", false);
        one_of(lang, "scans.pdl", "cumsum3d", "A=2 B=3 C=40", "sm_80", false);
        one_of(lang, "scans.pdl", "scatter1d", "N=3000 V=5", "sm_80", false);
        one_of(lang, "scans.pdl", "scatter_i32", "N=300 V=4 D=33", "sm_80", false);
        one_of(lang, "scans.pdl", "scatter_f64", "N=300 V=4", "sm_80", false);
    }
    one(dir, "gemm.pdl", "gemm/tiled", "M=128 N=256 K=32", "sm_80");
    one(dir, "gemm.pdl", "gemm/tiled32", "M=128 N=128 K=64", "sm_80");
    one(dir, "gemm.pdl", "gemm/tc", "M=128 N=256 K=64 T=f16", "sm_80");
    one(dir, "gemm.pdl", "gemm/tc", "M=256 N=128 K=96 T=bf16", "sm_90");
    one(dir, "gemm.pdl", "gemm/wg", "M=128 N=256 K=128 T=f16", "sm_90a");
    one(dir, "softmax.pdl", "softmax", "R=3 C=1000", "sm_80");
    one(dir, "layernorm.pdl", "layernorm", "R=3 C=777", "sm_80");
    one(dir, "batched_gemm.pdl", "batched_gemm/tiled", "B=2 M=128 N=128 K=32", "sm_80");
    one(dir, "conv2d.pdl", "conv2d/tiled", "N=1 C=8 H=8 W=8 K=128 U=1", "sm_80");
    if (failures) fprintf(stderr, "%d failure(s)\n", failures);
    else printf("gpu passes: every scheduled stdlib kernel keeps its results through the target passes\n");
    return failures != 0;
}
