/* A benchmark, not a timed test: how long the JIT takes for each stdlib kernel at a
 * realistic shape (sizes 1024, or 256 for kernels with four or more), from IR to a
 * callable function (LLVM IR build, O3, machine code, JIT link).  The first
 * compilation in a process pays LLVM's one-time costs (pass registration, code
 * paged in), so it is shown apart from the median of the following ones.  CPU time
 * of the compiling thread is shown beside wall time: on a loaded machine the wall
 * time says more about the neighbours than about the compiler.  The target is
 * under 20 ms (issue 3); this program only reports.
 *
 * Usage: test_cg_compile_time [reps] [stdlib dir] */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cg_test.h"
#include "lang/ast.h"
#include "passes/passes.h"

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

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 7;
    const char *dir = argc > 2 ? argv[2] : PERFC_SOURCE_DIR "/stdlib";
    if (reps < 2)
        reps = 2;
    DIR *dd = opendir(dir);
    if (!dd) {
        fprintf(stderr, "cannot open %s\n", dir);
        return 1;
    }
    char *files[256];
    int nfiles = 0;
    struct dirent *de;
    while ((de = readdir(dd)) && nfiles < 256) {
        size_t n = strlen(de->d_name);
        if (n > 4 && !strcmp(de->d_name + n - 4, ".pdl"))
            files[nfiles++] = xstrdup(de->d_name);
    }
    closedir(dd);
    qsort(files, (size_t)nfiles, sizeof *files, cmp_str);
    printf("%-22s %-34s %10s %12s %12s %10s\n", "kernel", "shape", "first ms", "median ms", "min ms", "cpu ms");
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
            int64_t vals[32];
            bool bound[32];
            char shape[256] = "";
            size_t at = 0;
            for (int i = 0; i < ak->nparams && i < 32; i++) {
                vals[i] = ak->params[i].has_default ? ak->params[i].def : ak->nparams >= 4 ? 256 : 1024;
                if (ak->params[i].has_default && vals[i] > 4 && vals[i] <= 32)
                    vals[i] = vals[i] * 16; /* convolutions: a realistic image, same filter */
                bound[i] = true;
                at += (size_t)snprintf(shape + at, sizeof shape - at, "%s%s=%lld", i ? " " : "", ak->params[i].name,
                                       (long long)vals[i]);
            }
            Kernel *k = lower_kernel(p, ak, vals, bound, &d);
            if (!k) {
                /* a default-derived shape the front end rejects: try the defaults */
                for (int i = 0; i < ak->nparams; i++)
                    if (ak->params[i].has_default)
                        vals[i] = ak->params[i].def;
                diag_free(&d);
                diag_init(&d);
                k = lower_kernel(p, ak, vals, bound, &d);
                snprintf(shape, sizeof shape, "defaults");
            }
            if (!k) {
                diag_flush(&d, stderr);
                continue;
            }
            for (int r = 0; r < reps; r++) {
                double c0 = cpu_ms();
                JitKernel *j = cg_llvm_jit(k, "host", &d);
                cpu[r] = cpu_ms() - c0;
                wall[r] = j ? cg_jit_compile_ms(j) : -1;
                cg_jit_free(j);
            }
            double first = wall[0];
            qsort(wall + 1, (size_t)reps - 1, sizeof *wall, cmp_d);
            qsort(cpu + 1, (size_t)reps - 1, sizeof *cpu, cmp_d);
            printf("%-22s %-34s %10.2f %12.2f %12.2f %10.2f\n", ak->name, shape, first, wall[1 + (reps - 1) / 2],
                   wall[1], cpu[1 + (reps - 1) / 2]);
            ir_free(k);
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
