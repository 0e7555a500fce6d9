/* Front-end speed benchmark (issue 2's Bar): parse + check + lower of
 *   1. each stdlib kernel, one at a time (bar: under 2 ms each), and
 *   2. generated files of 1 000, 10 000 and 100 000 statements (bar: 10 000 in
 *      under 1 s, with memory linear in the size of the file).
 * Times are the process's CPU time (the front end is single-threaded, so on an idle
 * machine this is the wall time; on a shared one it leaves out the time the process
 * waited for a core), the median of several runs; memory
 * is the arena's byte count (exact, deterministic) and the process's peak RSS.
 * Not a test: it prints numbers for docs/benchmarks.md and exits 0 unless the front
 * end rejects a file it should accept.
 *
 * usage: bench_front [STDLIB_DIR]   (default: the source tree's stdlib/) */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "lang/ast.h"
#include "passes/passes.h"

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One parse + check (+ lower of kernel `only`, or of every kernel when only < 0).
 * Returns seconds, or a negative value if the text has errors; *front_s gets the
 * parse + check part alone. */
static double compile_once(const char *path, const char *text, size_t len, int only, size_t *arena_out,
                           int *nkernels, double *front_s)
{
    Source src = {path, text, len};
    Diags d;
    diag_init(&d);
    Arena *a = arena_new();
    double t0 = cpu_seconds();
    Program *p = parse_program(a, &src, &d);
    bool ok = d.nerrors == 0 && sema_program(p, &d);
    if (front_s)
        *front_s = cpu_seconds() - t0;
    for (int i = 0; ok && i < p->nkernels; i++) {
        if (only >= 0 && i != only)
            continue;
        /* Bind every parameter that has no default, as -D would, so lowering also
         * runs its bounds checks on concrete sizes. */
        const AstKernel *k = p->kernels[i];
        int64_t vals[64];
        bool bound[64];
        for (int j = 0; j < k->nparams && j < 64; j++) {
            vals[j] = k->params[j].has_default ? k->params[j].def : 64;
            bound[j] = true;
        }
        Kernel *ir = lower_kernel(p, k, vals, bound, &d);
        ok = ir != NULL;
        if (ir)
            ir_free(ir);
    }
    double dt = cpu_seconds() - t0;
    if (nkernels)
        *nkernels = p->nkernels;
    if (arena_out)
        *arena_out = arena_bytes(a);
    if (!ok)
        diag_flush(&d, stderr);
    arena_free(a);
    diag_free(&d);
    return ok ? dt : -1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

static long peak_rss_kib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int bench_stdlib(const char *dir)
{
    DIR *dp = opendir(dir);
    if (!dp) {
        fprintf(stderr, "bench_front: cannot open %s\n", dir);
        return 1;
    }
    char *names[256];
    int n = 0;
    struct dirent *de;
    while ((de = readdir(dp)) && n < 256) {
        size_t l = strlen(de->d_name);
        if (l > 4 && !strcmp(de->d_name + l - 4, ".pdl"))
            names[n++] = xstrdup(de->d_name);
    }
    closedir(dp);
    qsort(names, (size_t)n, sizeof *names, cmp_str);

    enum { REPS = 51 };
    int status = 0;
    double worst = 0;
    printf("stdlib kernels: parse + check + lower, CPU time, median of %d runs\n", REPS);
    printf("  %-28s %-22s %10s %12s\n", "file", "kernel", "ms", "arena bytes");
    for (int f = 0; f < n; f++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[f]);
        size_t len;
        char *text = read_file(path, &len);
        if (!text)
            continue;
        int nk = 0;
        compile_once(path, text, len, -1, NULL, &nk, NULL); /* warm caches, count kernels */
        for (int k = 0; k < nk; k++) {
            double t[REPS];
            size_t bytes = 0;
            bool bad = false;
            for (int r = 0; r < REPS; r++) {
                t[r] = compile_once(path, text, len, k, &bytes, NULL, NULL);
                bad |= t[r] < 0;
            }
            if (bad) {
                printf("  %-28s kernel %d: rejected\n", names[f], k);
                status = 1;
                continue;
            }
            /* The kernel's name, from a fresh parse (cheap). */
            Source src = {path, text, len};
            Diags d;
            diag_init(&d);
            Arena *a = arena_new();
            Program *p = parse_program(a, &src, &d);
            double ms = median(t, REPS) * 1e3;
            if (ms > worst)
                worst = ms;
            printf("  %-28s %-22s %10.3f %12zu\n", names[f], k < p->nkernels ? p->kernels[k]->name : "?", ms, bytes);
            arena_free(a);
            diag_free(&d);
        }
        free(text);
    }
    printf("  slowest kernel: %.3f ms (bar: 2 ms)\n\n", worst);
    for (int f = 0; f < n; f++)
        free(names[f]);
    return status;
}

/* A kernel of n statements shaped like real ones: a chain of 2-D temporaries, each
 * reading the previous one and the inputs, with a row reduction every tenth
 * statement and a masked statement every seventh, ending in the output. */
static char *gen_file(int n, size_t *len)
{
    StrBuf b = {0};
    sb_puts(&b, "# generated by bench_front\nkernel big(M, N) {\n  in  A: f32[M, N]\n  in  v: f32[N]\n"
                "  out C: f32[M, N]\n");
    sb_puts(&b, "  t0[i, j] = A[i, j] * v[j]\n");
    int last2 = 0; /* last 2-D temporary */
    for (int s = 1; s < n - 1; s++) {
        if (s % 10 == 0)
            sb_printf(&b, "  t%d[i] = sum(j) t%d[i, j] * A[i, j]\n", s, last2);
        else if (s % 10 == 1 && s > 10)
            sb_printf(&b, "  t%d[i, j] = exp(t%d[i, j] - t%d[i]) + 0.5\n", s, last2, s - 1), last2 = s;
        else if (s % 7 == 0)
            sb_printf(&b, "  t%d[i, j] = t%d[i, j] + A[i, j] where j <= i\n", s, last2), last2 = s;
        else
            sb_printf(&b, "  t%d[i, j] = select(t%d[i, j] > 0.0, t%d[i, j], 0.01 * A[i, j]) * v[j]\n", s, last2,
                      last2), last2 = s;
    }
    sb_printf(&b, "  C[i, j] = t%d[i, j]\n}\n", last2);
    *len = b.len;
    return b.s;
}

static int bench_generated(void)
{
    static const int sizes[] = {1000, 10000, 100000};
    int status = 0;
    printf("generated files: one kernel; parse + check, and the whole with lowering; CPU time, median of 5 runs\n");
    printf("  %10s %10s %12s %10s %14s %12s %14s\n", "statements", "bytes", "parse+check", "+lower",
           "AST arena B", "arena B/stmt", "peak RSS KiB");
    for (int i = 0; i < 3; i++) {
        size_t len;
        char *text = gen_file(sizes[i], &len);
        double t[5], tf[5];
        size_t bytes = 0;
        for (int r = 0; r < 5; r++) {
            t[r] = compile_once("generated.pdl", text, len, -1, &bytes, NULL, &tf[r]);
            if (t[r] < 0) {
                status = 1;
                break;
            }
        }
        if (status) {
            printf("  %10d: rejected\n", sizes[i]);
            free(text);
            break;
        }
        printf("  %10d %10zu %9.1f ms %7.1f ms %14zu %12.0f %14ld\n", sizes[i], len, median(tf, 5) * 1e3,
               median(t, 5) * 1e3, bytes, (double)bytes / sizes[i], peak_rss_kib());
        free(text);
    }
    return status;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : PERFC_SOURCE_DIR "/stdlib";
    setvbuf(stdout, NULL, _IOLBF, 0); /* progress shows even when piped */
    int status = bench_stdlib(dir);
    status |= bench_generated();
    return status;
}
