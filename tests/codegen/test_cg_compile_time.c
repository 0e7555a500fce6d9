/* A benchmark, not a timed test: how long the JIT takes for each stdlib kernel at a
 * realistic shape, from IR to a callable function (LLVM IR build, O3, machine code,
 * JIT link).  Each kernel is measured unscheduled (what --no-schedule compiles) and,
 * where its file has a CPU schedule, scheduled with the schedule's default
 * parameters (what `perfc FILE --run` compiles).  The shapes are those of real
 * networks (table `shapes` below: attention with 8 heads of 64 over 256 tokens,
 * a ResNet 3x3 layer, 1024x1024 normalisations, 1024^3 products); a kernel not in
 * the table gets 1024 per size (256 when it has four or more) or its defaults.
 * The first compilation in a process pays LLVM's one-time costs (pass
 * registration, code paged in), so it is shown apart from the median of the
 * following ones.  CPU time of the compiling thread is shown beside wall time: on a
 * loaded machine the wall time says more about the neighbours than about the
 * compiler.  The target is under 20 ms (issue 3); this program only reports.
 *
 * Usage: test_cg_compile_time [reps] [stdlib dir] [kernel [plain|sched]]
 * (a kernel name, and plain or sched, measure only that kernel, or that variant). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cg_test.h"
#include "lang/ast.h"
#include "passes/passes.h"
#include "passes/xform.h"
#include "runtime/pool.h"
#include "../stdlib_load.h"
#include "../lowered.h"

static const struct {
    const char *kernel, *shape;
} shapes[] = {
    {"attention", "B=1 H=8 S=256 D=64"},
    {"attention_causal", "B=1 H=8 S=256 D=64"},
    {"batched_gemm", "B=8 M=256 N=256 K=256"},
    {"conv2d", "N=1 C=128 H=28 W=28 K=128 R=3 S=3 U=1 P=1"},
    {"depthwise_conv2d", "N=1 C=128 H=56 W=56 R=3 S=3 U=1 P=1"},
    {"layernorm", "R=1024 C=1024"},
    {"softmax", "R=1024 C=1024"},
};

/* The value of `name` in the table's shape for kernel, or -1. */
static int64_t table_size(const char *kernel, const char *name)
{
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        if (strcmp(shapes[i].kernel, kernel))
            continue;
        const char *p = shapes[i].shape;
        size_t n = strlen(name);
        while (*p) {
            if (!strncmp(p, name, n) && p[n] == '=')
                return atoll(p + n + 1);
            p = strchr(p, ' ');
            if (!p)
                break;
            p++;
        }
    }
    return -1;
}

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 7;
    const char *dir = argc > 2 ? argv[2] : PERFC_SOURCE_DIR "/stdlib";
    const char *only = argc > 3 ? argv[3] : NULL, *variant = argc > 4 ? argv[4] : NULL;
    if (reps < 2)
        reps = 2;
    void (*pf)(int64_t, void (*)(void *, int64_t, int64_t), void *) = perfc_parallel_for;
    void *addr;
    memcpy(&addr, &pf, sizeof addr);
    cg_llvm_add_symbol("perfc_parallel_for", addr);
    char *files[256];
    int nfiles = tl_list_pdl(dir, files, 256);
    if (nfiles < 0) {
        fprintf(stderr, "cannot open %s\n", dir);
        return 1;
    }
    printf("%-22s %-5s %-42s %10s %12s %12s %10s\n", "kernel", "sched", "shape", "first ms", "median ms", "min ms", "cpu ms");
    double *wall = malloc(sizeof(double) * (size_t)reps), *cpu = malloc(sizeof(double) * (size_t)reps);
    for (int f = 0; f < nfiles; f++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, files[f]);
        size_t len;
        char *text = read_file(path, &len);
        if (!text)
            continue;
        Arena *a = arena_new();
        Source src = {path, text, len};
        Diags d;
        diag_init(&d);
        Program *p = parse_program(a, &src, &d);
        if (d.nerrors || !sema_program(p, &d)) {
            diag_flush(&d, stderr);
            diag_free(&d);
            arena_free(a);
            free(text);
            continue;
        }
        for (int ki = 0; ki < p->nkernels; ki++) {
            AstKernel *ak = p->kernels[ki];
            if (only && strcmp(only, ak->name))
                continue;
            int64_t vals[32];
            bool bound[32];
            char shape[256] = "";
            size_t at = 0;
            for (int i = 0; i < ak->nparams && i < 32; i++) {
                int64_t tv = table_size(ak->name, ak->params[i].name);
                vals[i] = tv > 0 ? tv : ak->params[i].has_default ? ak->params[i].def : ak->nparams >= 4 ? 256 : 1024;
                bound[i] = true;
                at += (size_t)snprintf(shape + at, sizeof shape - at, "%s%s=%lld", i ? " " : "", ak->params[i].name,
                                       (long long)vals[i]);
            }
            const AstSchedule *sch[16];
            int nsch = 0;
            for (int i = 0; i < p->nschedules && nsch < 16; i++)
                if (schedule_applies(p->schedules[i], ak, target_find("host"), NULL))
                    sch[nsch++] = p->schedules[i];
            for (int scheduled = 0; scheduled <= (nsch > 0); scheduled++) {
                if (variant && strcmp(variant, scheduled ? "sched" : "plain"))
                    continue;
                Kernel *k = lower_kernel(p, ak, vals, bound, &d);
                if (!k) {
                    diag_flush(&d, stderr);
                    break;
                }
                if (scheduled) {
                    PipelineOpts po = {0};
                    po.schedules = sch;
                    po.nschedules = nsch;
                    if (!pipeline_run(k, &po, &d)) {
                        diag_flush(&d, stderr);
                        ir_free(k);
                        break;
                    }
                }
                for (int r = 0; r < reps; r++) {
                    double c0 = cpu_ms();
                    JitKernel *j = tl_jit(k, "host", &d);
                    cpu[r] = cpu_ms() - c0;
                    wall[r] = j ? cg_jit_compile_ms(j) : -1;
                    cg_jit_free(j);
                }
                double first = wall[0];
                qsort(wall + 1, (size_t)reps - 1, sizeof *wall, cmp_d);
                qsort(cpu + 1, (size_t)reps - 1, sizeof *cpu, cmp_d);
                printf("%-22s %-5s %-42s %10.2f %12.2f %12.2f %10.2f\n", ak->name, scheduled ? "sched" : "plain", shape,
                       first, wall[1 + (reps - 1) / 2], wall[1], cpu[1 + (reps - 1) / 2]);
                fflush(stdout);
                ir_free(k);
            }
        }
        diag_flush(&d, stderr);
        diag_free(&d);
        arena_free(a);
        free(text);
        free(files[f]);
    }
    free(wall);
    free(cpu);
    return 0;
}
