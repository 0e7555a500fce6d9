/* Every stdlib kernel JIT-compiled and validated against the interpreter at random
 * small shapes, odd ones included, through the real front end (parse, sema, lower).
 * Each kernel is also run with the file's CPU schedules applied when it has any; a
 * schedule the transformations refuse at a shape is reported, not failed (that is
 * the schedule's business), but a scheduled kernel that computes wrong is a failure.
 * Small default sizes (convolution windows, strides) are perturbed around them; the
 * others are drawn from small odd numbers, so the f64 interpreter stays quick.  A shape the front end rejects (a convolution window larger than the
 * padded image) is redrawn.
 *
 * Then fixed cases at sizes where the code generator's register-tile paths apply
 * (random odd sizes leave guards in the tiles, and the paths are not taken): the
 * kernels of tests/codegen/pdl at their default sizes, conv2d with whole 14 x 8
 * output tiles (in-register transposes of the tile copies) and gemm with whole
 * 6 x 16 tiles (its k loop two iterations per trip). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_test.h"
#include "lang/ast.h"
#include "passes/passes.h"
#include "passes/xform.h"
#include "runtime/pool.h"
#include "../stdlib_load.h"

static const int64_t odd[] = {1, 3, 5, 7, 9, 11, 13, 2, 4, 8};

/* Lowers ak with sizes drawn from r; NULL if the front end rejects the shape. */
static Kernel *draw(Program *p, AstKernel *ak, Rng *r, bool sched, char *shape, size_t nshape, bool *sched_refused)
{
    int64_t vals[32];
    bool bound[32];
    if (ak->nparams > 32)
        return NULL;
    size_t at = 0;
    shape[0] = 0;
    for (int i = 0; i < ak->nparams; i++) {
        int64_t v;
        if (ak->params[i].has_default && ak->params[i].def <= 32) {
            v = ak->params[i].def + (int64_t)(rng_next(r) % 3) - 1;
            if (v < 1)
                v = 1;
        } else {
            /* many parameters: keep the work small for the f64 interpreter */
            int n = ak->nparams > 3 ? 6 : 10;
            v = odd[rng_next(r) % (uint64_t)n];
        }
        vals[i] = v;
        bound[i] = true;
        at += (size_t)snprintf(shape + at, at < nshape ? nshape - at : 0, "%s%s=%lld", i ? " " : "", ak->params[i].name,
                               (long long)v);
    }
    Diags d;
    diag_init(&d);
    Kernel *k = lower_kernel(p, ak, vals, bound, &d);
    diag_free(&d);
    if (!k || !sched)
        return k;
    const AstSchedule *s[64];
    int ns = 0;
    for (int i = 0; i < p->nschedules && ns < 64; i++)
        if (schedule_applies(p->schedules[i], ak, target_find("host"), NULL))
            s[ns++] = p->schedules[i];
    if (ns == 0) {
        ir_free(k);
        return NULL;
    }
    PipelineOpts po = {0};
    po.schedules = s;
    po.nschedules = ns;
    diag_init(&d);
    if (!pipeline_run(k, &po, &d)) {
        fprintf(stderr, "note: %s's CPU schedule refused at %s:\n", ak->name, shape);
        diag_flush(&d, stderr);
        *sched_refused = true;
        ir_free(k);
        k = NULL;
    }
    diag_free(&d);
    return k;
}

/* Kernel `name` of file `path` with the sizes given (others at their defaults) and
 * its CPU schedule, JIT against the interpreter. */
static void fixed_case(const char *path, const char *name, const char *const *pn, const int64_t *pv, int n)
{
    Diags d;
    diag_init(&d);
    Kernel *k = cgt_lower_file(path, name, pn, pv, n, -1, "host", &d);
    if (!k)
        diag_flush(&d, stderr);
    CHECK(k, "%s in %s does not lower with its schedule", name, path);
    diag_free(&d);
    if (!k)
        return;
    char what[256];
    snprintf(what, sizeof what, "%s (scheduled, fixed sizes)", name);
    double ms;
    CHECK(cgt_jit_check(k, "host", 7, what, &ms), "%s", what);
    ir_free(k);
}

static void fixed_cases(void)
{
    static const char *const tiles[] = {"tconv8", "tconv16", "tconv64"};
    for (size_t i = 0; i < sizeof tiles / sizeof *tiles; i++)
        fixed_case(PERFC_SOURCE_DIR "/tests/codegen/pdl/tiles.pdl", tiles[i], NULL, NULL, 0);
    static const char *const cn[] = {"N", "C", "H", "W", "K", "R", "S", "U", "P"};
    static const int64_t cv[] = {1, 32, 3, 28, 16, 3, 3, 1, 1};
    fixed_case(PERFC_SOURCE_DIR "/stdlib/conv2d.pdl", "conv2d", cn, cv, 9);
    static const char *const gn[] = {"M", "N", "K"};
    static const int64_t gv[] = {96, 32, 64};
    fixed_case(PERFC_SOURCE_DIR "/stdlib/gemm.pdl", "gemm", gn, gv, 3);
    cgt_cleanup();
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : PERFC_SOURCE_DIR "/stdlib";
    int shapes = argc > 2 ? atoi(argv[2]) : 3;
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

    Rng r;
    rng_seed(&r, 20240611);
    int nkernels = 0, nruns = 0;
    double ms_total = 0, ms_max = 0;
    for (int f = 0; f < nfiles; f++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, files[f]);
        size_t len;
        char *text = read_file(path, &len);
        CHECK(text, "cannot read %s", path);
        if (!text)
            continue;
        Arena *a = arena_new();
        Source src = {path, text, len};
        Diags d;
        diag_init(&d);
        Program *p = parse_program(a, &src, &d);
        bool ok = !d.nerrors && sema_program(p, &d);
        if (!ok)
            diag_flush(&d, stderr);
        CHECK(ok, "%s does not pass the front end", path);
        diag_free(&d);
        for (int ki = 0; ok && ki < p->nkernels; ki++) {
            AstKernel *ak = p->kernels[ki];
            nkernels++;
            for (int sched = 0; sched < 2; sched++) {
                for (int s = 0; s < shapes; s++) {
                    char shape[512], what[768];
                    Kernel *k = NULL;
                    bool refused = false;
                    for (int tries = 0; tries < 20 && !k && !refused; tries++)
                        k = draw(p, ak, &r, sched, shape, sizeof shape, &refused);
                    if (!k) {
                        CHECK(sched || refused, "%s: no shape accepted by the front end", ak->name);
                        break;
                    }
                    snprintf(what, sizeof what, "%s%s %s", ak->name, sched ? " (scheduled)" : "", shape);
                    double ms = 0;
                    CHECK(cgt_jit_check(k, "host", rng_next(&r), what, &ms), "%s", what);
                    ms_total += ms;
                    if (ms > ms_max)
                        ms_max = ms;
                    nruns++;
                    ir_free(k);
                }
            }
        }
        arena_free(a);
        free(text);
        free(files[f]);
    }
    fixed_cases();
    if (cgt_failures)
        fprintf(stderr, "%d failure(s)\n", cgt_failures);
    else
        printf("%d stdlib kernels, %d JIT runs matched the interpreter (compile %.1f ms mean, %.1f max)\n", nkernels,
               nruns, nruns ? ms_total / nruns : 0, ms_max);
    return cgt_failures ? 1 : 0;
}
