/* The property test of the transformations: for every kernel of every stdlib file,
 * random sequences of moves drawn from xf_enum_actions (the legal moves now) are
 * applied, and the result must compute what the untransformed kernel computes: in
 * the f64 interpreter for every sequence (to 1e-9 relative, reassociation of
 * reductions being allowed; 1e-6 when f16/bf16 buffers are staged through f32
 * casts), and JIT-compiled against the interpreter for a sample.
 * A mismatch is minimised (steps dropped while it persists) and printed as a
 * line for tests/xform/regress.txt, which is replayed first on every run.
 *
 *   test_property ROOT [sequences-per-kernel [seed]]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xftest.h"

enum { MAXSTEPS = 8 };

typedef struct Ctx {
    XtFile *f;
    const char *kname;
    const char *defs;
    Kernel *ref;
} Ctx;

/* The JIT computes in storage precision: the tolerance follows the narrowest
 * float type of the kernel's buffers. */
static double jit_tolerance(const Kernel *k)
{
    double t = 1e-9;
    for (int i = 0; i < k->nbufs; i++) {
        DType d = k->bufs[i]->dtype;
        double x = d == DT_BF16 ? 3e-2 : d == DT_F16 ? 4e-3 : d == DT_F32 ? 1e-4 : 1e-9;
        if (x > t)
            t = x;
    }
    return t;
}

/* The interpreter keeps stored values in f64 but rounds explicit casts; staging an
 * f16/bf16 buffer goes through a cast to f32, so such kernels agree to f32
 * rounding.  Everything else must agree to reassociation noise. */
static double interp_tolerance(const Kernel *k)
{
    for (int i = 0; i < k->nbufs; i++)
        if (k->bufs[i]->dtype == DT_F16 || k->bufs[i]->dtype == DT_BF16)
            return 1e-6;
    return 1e-9;
}

/* Applies statement texts in order; returns the number applied. */
static int replay(Kernel *k, char **steps, int n, Diags *d)
{
    for (int i = 0; i < n; i++)
        if (!xt_schedule(k, steps[i], d))
            return i;
    return n;
}

static double check(Ctx *c, char **steps, int n, bool jit, uint64_t seed, StrBuf *why, bool *applied)
{
    double tol = interp_tolerance(c->ref);
    Kernel *k = xt_lower(c->f, c->kname, c->defs, 0);
    Diags d;
    diag_init(&d);
    *applied = replay(k, steps, n, &d) == n;
    double e = 0;
    if (*applied) {
        if (!ir_verify(k, &d)) {
            sb_printf(why, "verifier: %s", d.text.s);
            e = INFINITY;
        } else {
            e = xt_interp_diff(c->ref, k, seed, why);
            if (e <= tol && jit) {
                double j = xt_jit_diff(c->ref, k, seed, why);
                if (j > jit_tolerance(k))
                    e = j;
            }
        }
    }
    diag_free(&d);
    ir_free(k);
    return e;
}

static void report(Ctx *c, char **steps, int n, double e, const char *why)
{
    printf("MISMATCH %s %s %s |", c->f->src.path, c->kname, c->defs);
    for (int i = 0; i < n; i++)
        printf(" %s", steps[i]);
    printf("   (error %g: %s)\n", e, why);
}

/* Drops steps while the mismatch persists. */
static int minimise(Ctx *c, char **steps, int n, bool jit, uint64_t seed)
{
    double tol = interp_tolerance(c->ref);
    for (int i = n - 1; i >= 0; i--) {
        char *tmp[MAXSTEPS];
        int m = 0;
        for (int j = 0; j < n; j++)
            if (j != i)
                tmp[m++] = steps[j];
        StrBuf why = {0};
        bool applied;
        double e = check(c, tmp, m, jit, seed, &why, &applied);
        sb_free(&why);
        if (applied && !(e <= tol)) {
            free(steps[i]);
            memcpy(steps, tmp, sizeof(char *) * (size_t)m);
            n = m;
        }
    }
    return n;
}

static const char *const sizes[] = {"5", "7", "6", "9", "3", "4", "8", "2"};

/* Small odd sizes.  Small defaults are kept (conv2d's stride and padding are part
 * of its meaning); large ones (a 4096 GEMM for the GPU) would make the interpreter
 * the whole cost of the test. */
static void make_defs(AstKernel *ak, char *out, size_t cap)
{
    out[0] = 0;
    for (int i = 0; i < ak->nparams; i++) {
        if (ak->params[i].has_default && ak->params[i].def <= 16)
            continue;
        size_t n = strlen(out);
        snprintf(out + n, cap - n, "%s%s=%s", n ? "," : "", ak->params[i].name, sizes[i % 8]);
    }
}

static int run_regressions(const char *root, int *count)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/xform/regress.txt", root);
    FILE *fp = fopen(path, "r");
    int fails = 0;
    if (!fp)
        return 0;
    char line[4096];
    while (fgets(line, sizeof line, fp)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        /* FILE KERNEL DEFS | schedule text */
        char file[512], kname[128], defs[512];
        char *bar = strchr(line, '|');
        if (!bar || sscanf(line, "%511s %127s %511s", file, kname, defs) != 3)
            continue;
        char *sched = bar + 1;
        sched[strcspn(sched, "\n")] = 0;
        char fpath[1024];
        snprintf(fpath, sizeof fpath, "%s/%s", root, file);
        XtFile f;
        if (!xt_open(&f, fpath)) {
            fails++;
            continue;
        }
        Ctx c = {.f = &f, .kname = kname, .defs = strcmp(defs, "-") ? defs : ""};
        c.ref = xt_lower(&f, kname, c.defs, 0);
        char *steps[1] = {sched};
        StrBuf why = {0};
        bool applied;
        double e = c.ref ? check(&c, steps, 1, true, 99, &why, &applied) : INFINITY;
        if (!c.ref || !applied || !(e <= interp_tolerance(c.ref))) {
            printf("REGRESSION FAILED: %s", line);
            fails++;
        }
        (*count)++;
        sb_free(&why);
        if (c.ref)
            ir_free(c.ref);
        xt_close(&f);
    }
    fclose(fp);
    return fails;
}

int main(int argc, char **argv)
{
    const char *root = argc > 1 ? argv[1] : ".";
    int per_kernel = argc > 2 ? atoi(argv[2]) : 100;
    uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 0) : 20261121;
    static const char *const files[] = {
        "gemm", "gemm_nt", "gemm_tn", "gemm_bias_relu", "batched_gemm", "conv2d",
        "depthwise_conv2d", "softmax", "layernorm", "attention", "attention_causal",
    };
    int nreg = 0, fails = run_regressions(root, &nreg);
    long sequences = 0, steps_total = 0, jits = 0;
    Rng rng;
    rng_seed(&rng, seed);
    double t0 = now_seconds();
    for (size_t fi = 0; fi < sizeof files / sizeof files[0]; fi++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/stdlib/%s.pdl", root, files[fi]);
        XtFile f;
        if (!xt_open(&f, path))
            continue; /* not written yet */
        for (int ki = 0; ki < f.prog->nkernels; ki++) {
            AstKernel *ak = f.prog->kernels[ki];
            char defs[512];
            make_defs(ak, defs, sizeof defs);
            Ctx c = {.f = &f, .kname = ak->name, .defs = defs};
            c.ref = xt_lower(&f, ak->name, defs, 0);
            if (!c.ref) {
                printf("FAIL: cannot lower %s %s\n", path, ak->name);
                fails++;
                continue;
            }
            int kfails = 0;
            for (int s = 0; s < per_kernel && kfails < 3; s++) {
                Kernel *k = xt_lower(&f, ak->name, defs, 0);
                char *steps[MAXSTEPS];
                int n = 0, depth = 1 + (int)(rng_next(&rng) % MAXSTEPS);
                for (; n < depth; n++) {
                    /* Mostly: draw candidates in random order and take the first
                     * legal one (uniform over the legal moves, few checks).  Now
                     * and then: the full list, each of whose moves must apply. */
                    bool full = (s + n) % 16 == 0;
                    Arena *a = arena_new();
                    SchedItem *items;
                    int na = full ? xf_enum_actions(k, a, &items) : xf_enum_candidates(k, a, &items);
                    SchedItem *it = NULL;
                    for (int left = na; left > 0 && !it; left--) {
                        int pick = (int)(rng_next(&rng) % (uint64_t)left);
                        SchedItem tmp = items[pick];
                        items[pick] = items[left - 1];
                        items[left - 1] = tmp;
                        Diags d;
                        diag_init(&d);
                        bool ok = xf_apply(k, &items[left - 1], NULL, &d);
                        if (!ok && full) {
                            StrBuf t = {0};
                            xf_item_print(&items[left - 1], &t);
                            printf("FAIL: listed action refused: %s on %s\n%s", t.s, ak->name, d.text.s);
                            sb_free(&t);
                            fails++;
                        }
                        if (ok)
                            it = &items[left - 1];
                        diag_free(&d);
                    }
                    if (!it) {
                        arena_free(a);
                        break;
                    }
                    StrBuf txt = {0};
                    xf_item_print(it, &txt);
                    steps[n] = xstrdup(txt.s);
                    sb_free(&txt);
                    arena_free(a);
                }
                steps_total += n;
                sequences++;
                ir_free(k);
                bool jit = s % 8 == 0;
                jits += jit;
                StrBuf why = {0};
                bool applied;
                uint64_t dseed = rng_next(&rng);
                double e = check(&c, steps, n, jit, dseed, &why, &applied);
                if (!applied || !(e <= interp_tolerance(c.ref))) {
                    sb_free(&why);
                    n = minimise(&c, steps, n, jit, dseed);
                    check(&c, steps, n, jit, dseed, &why, &applied);
                    report(&c, steps, n, e, why.s ? why.s : "statements no longer apply");
                    fails++;
                    kfails++;
                }
                sb_free(&why);
                for (int i = 0; i < n; i++)
                    free(steps[i]);
            }
            ir_free(c.ref);
        }
        xt_close(&f);
    }
    printf("%d regressions, %ld sequences (%ld moves, %ld JIT-checked) in %.1f s: %d failures\n", nreg,
           sequences, steps_total, jits, now_seconds() - t0, fails);
    return fails != 0;
}
