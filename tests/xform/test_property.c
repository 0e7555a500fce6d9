/* The property test of the transformations and the code generators: every legal
 * schedule compiles to a correct kernel.
 *
 * For every kernel of every stdlib file, at small odd sizes, and from two starting
 * points (as lowered, and after the file's own CPU schedule, which is where
 * `perfc FILE --actions` starts), random sequences of moves are drawn from the move
 * set (xf_enum_actions: the legal moves now).  Each sequence is then replayed from
 * its text, as `perfc -s` would apply it,
 * then goes through the rest of perfc's pipeline (`simplify`), and must compute
 * what the unscheduled kernel computes:
 *   - in the f64 interpreter (to 1e-9 relative, reassociation of reductions being
 *     allowed; 1e-6 when f16/bf16 buffers are staged through f32 casts);
 *   - JIT-compiled for the host, by the harness's own measure and tolerance
 *     (relative Frobenius error, runtime/workload.c rt_tolerance), so a kernel this
 *     test passes is one `perfc --run` accepts;
 *   - emitted as an object (`-emit obj`) and linked into a generated runner, run
 *     natively, and for one sequence in two also as an AArch64 or RISC-V object
 *     (with and without SVE/RVV, in turn) under qemu-user.
 * A move that the full list offers must apply, and its printed text must parse back
 * to a move that applies.  A failure is minimised (steps dropped while it persists)
 * and printed as a line for tests/xform/regress.txt, which is replayed first, on the
 * JIT and every object target, on every run.
 *
 *   test_property ROOT [SEQUENCES [SEED]]      (SEQUENCES in all; default 200)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xfobj.h"
#include "xftest.h"

enum { MAXSTEPS = 8, BATCH = 40, MAXSTARTS = 256 };

/* A kernel at a starting point. */
typedef struct Start {
    XtFile *f;
    char file[128]; /* relative to ROOT, as regress.txt names it */
    const char *kname;
    char defs[256];
    bool sched; /* after the file's schedule for the host */
    Kernel *ref;
} Start;

/* A sequence under test. */
typedef struct Seq {
    Start *st;
    char *steps[MAXSTEPS];
    int n;
    uint64_t seed;
    int cross; /* the cross target its object also runs on (0: none; -1: all) */
    XoCase *c;
} Seq;

static const char *g_dir;
static int g_fails;

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

static Kernel *start_kernel(const Start *st)
{
    return st->sched ? xt_lower_scheduled(st->f, st->kname, st->defs, "host") : xt_lower(st->f, st->kname, st->defs, 0);
}

static void print_seq(FILE *out, const Seq *s)
{
    fprintf(out, "%s %s %s%s |", s->st->file, s->st->kname, s->st->defs[0] ? s->st->defs : "-",
            s->st->sched ? " from=file" : "");
    for (int i = 0; i < s->n; i++)
        fprintf(out, " %s", s->steps[i]);
    fprintf(out, "\n");
}

/* What a check found. */
enum { PASS, REFUSED, WRONG };

/* Replays the sequence's text on a fresh start kernel and runs the in-process
 * checks (apply, verify, interpreter, JIT).  PASS leaves in s->c the case for the
 * object runs; otherwise why says what failed: REFUSED when a move does not apply,
 * WRONG for anything else. */
static int check_inproc(Seq *s, int id, char *why, size_t cap)
{
    xo_case_free(s->c);
    s->c = NULL;
    Kernel *k = start_kernel(s->st);
    if (!k) {
        snprintf(why, cap, "the start kernel cannot be built");
        return WRONG;
    }
    Diags d;
    diag_init(&d);
    for (int i = 0; i < s->n; i++)
        if (!xt_schedule(k, s->steps[i], &d)) {
            snprintf(why, cap, "move %d `%s`, offered by the move set, is refused when applied as text: %s", i + 1,
                     s->steps[i], d.text.s ? d.text.s : "");
            diag_free(&d);
            ir_free(k);
            return REFUSED;
        }
    /* the rest of perfc's pipeline (simplify), with the verifier after each pass */
    PipelineOpts po = {0};
    if (!pipeline_run(k, &po, &d)) {
        snprintf(why, cap, "pipeline: %s", d.text.s ? d.text.s : "");
        diag_free(&d);
        ir_free(k);
        return WRONG;
    }
    diag_free(&d);
    StrBuf w = {0};
    double e = xt_interp_diff(s->st->ref, k, s->seed, &w);
    if (!(e <= interp_tolerance(s->st->ref))) {
        snprintf(why, cap, "interpreter: error %g: %s", e, w.s ? w.s : "");
        sb_free(&w);
        ir_free(k);
        return WRONG;
    }
    sb_free(&w);
    s->c = xo_case_new(k, s->st->ref, s->seed, id, why, cap);
    if (!s->c)
        return WRONG;
    if (!xo_jit(s->c)) {
        snprintf(why, cap, "%s", s->c->why);
        return WRONG;
    }
    return PASS;
}

/* The in-process checks, then the object checks on target t (t >= 0). */
static int check_all(Seq *s, int t, char *why, size_t cap)
{
    int r = check_inproc(s, 0, why, cap);
    if (r != PASS || t < 0)
        return r;
    if (xo_run_objects(t, &s->c, 1, g_dir)) {
        snprintf(why, cap, "%s", s->c->why);
        return WRONG;
    }
    return PASS;
}

/* Drops steps while the same kind of failure persists (a drop that makes a later
 * move name a loop that no longer exists shows nothing). */
static void minimise(Seq *s, int t, int kind)
{
    if (kind == REFUSED)
        return; /* the refused move is the last one drawn: nothing to drop */
    for (int i = s->n - 1; i >= 0 && s->n > 1; i--) {
        char *dropped = s->steps[i];
        memmove(s->steps + i, s->steps + i + 1, sizeof(char *) * (size_t)(s->n - i - 1));
        s->n--;
        char why[2048];
        if (check_all(s, t, why, sizeof why) == kind) {
            free(dropped);
        } else {
            memmove(s->steps + i + 1, s->steps + i, sizeof(char *) * (size_t)(s->n - i));
            s->steps[i] = dropped;
            s->n++;
        }
    }
    xo_case_free(s->c);
    s->c = NULL;
}

static void report(Seq *s, int t, int kind, const char *why)
{
    g_fails++;
    printf("FAIL: %s\n", why);
    minimise(s, t, kind);
    char w2[2048] = "";
    bool again = check_all(s, t, w2, sizeof w2) != PASS;
    xo_case_free(s->c);
    s->c = NULL;
    printf("  minimised%s: %s\n  regress.txt: ", again ? "" : " (no longer fails alone)", again ? w2 : "");
    print_seq(stdout, s);
}

static void free_seq(Seq *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->steps[i]);
    xo_case_free(s->c);
    memset(s, 0, sizeof *s);
}

/* The object runs of a batch: every case natively, and each on its cross target(s).
 * Failing sequences are reported and minimised; the batch is freed. */
static void run_batch(Seq *b, int n)
{
    XoCase **cs = calloc((size_t)n + 1, sizeof *cs);
    Seq **who = calloc((size_t)n + 1, sizeof *who);
    for (int t = 0; t < xo_ntargets; t++) {
        if (!xo_available(t))
            continue;
        int m = 0;
        for (int i = 0; i < n; i++)
            if (b[i].c && (t == 0 || b[i].cross == t || b[i].cross < 0)) {
                who[m] = &b[i];
                cs[m++] = b[i].c;
            }
        if (m)
            xo_run_objects(t, cs, m, g_dir);
    }
    for (int i = 0; i < n; i++) {
        if (b[i].c && (b[i].c->failed & 0x7fffffffu)) {
            int t = 0;
            while (!((b[i].c->failed >> t) & 1))
                t++;
            char why[2600];
            int at = snprintf(why, sizeof why, "%s [wrong on:", b[i].c->why);
            for (int u = 0; u < xo_ntargets; u++)
                if ((b[i].c->failed >> u) & 1 && at < (int)sizeof why)
                    at += snprintf(why + at, sizeof why - (size_t)at, " %s;", xo_targets[u].name);
            if (at < (int)sizeof why)
                snprintf(why + at, sizeof why - (size_t)at, "]");
            report(&b[i], t, WRONG, why);
        }
        free_seq(&b[i]);
    }
    free(cs);
    free(who);
}

/* Small sizes, odd ones and 1 (a one-trip loop that simplify removes) among them. */
static const char *const sizes[] = {"5", "7", "6", "9", "3", "1", "13", "4", "8", "2", "17"};
enum { NSIZES = sizeof sizes / sizeof sizes[0], VARIANTS = 3 };

/* Sizes for variant `shift` of a kernel.  Small defaults are kept (conv2d's stride
 * and padding are part of its meaning); large ones (a 4096 GEMM for the GPU) would
 * make the interpreter the whole cost of the test. */
static void make_defs(AstKernel *ak, char *out, size_t cap, int shift)
{
    out[0] = 0;
    for (int i = 0; i < ak->nparams; i++) {
        if (ak->params[i].has_default && ak->params[i].def <= 16)
            continue;
        size_t n = strlen(out);
        snprintf(out + n, cap - n, "%s%s=%s", n ? "," : "", ak->params[i].name, sizes[(i + shift) % NSIZES]);
    }
}

/* Replays tests/xform/regress.txt: FILE KERNEL SIZES [from=file] | statements. */
static int run_regressions(const char *root)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/xform/regress.txt", root);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return 0;
    int count = 0, nb = 0;
    Seq batch[BATCH];
    Start starts[BATCH];
    XtFile files[BATCH];
    char line[4096];
    bool eof = false;
    while (!eof) {
        eof = !fgets(line, sizeof line, fp);
        if (!eof) {
            if (line[0] == '#' || line[0] == '\n')
                continue;
            char *bar = strchr(line, '|');
            char file[128], kname[128], defs[256], from[32] = "";
            if (!bar || sscanf(line, "%127s %127s %255s %31s", file, kname, defs, from) < 3) {
                printf("FAIL: malformed regression line: %s", line);
                g_fails++;
                continue;
            }
            Start *st = &starts[nb];
            memset(st, 0, sizeof *st);
            snprintf(st->file, sizeof st->file, "%s", file);
            snprintf(st->defs, sizeof st->defs, "%s", strcmp(defs, "-") ? defs : "");
            st->sched = !strcmp(from, "from=file");
            char fpath[1024];
            snprintf(fpath, sizeof fpath, "%s/%s", root, file);
            if (!xt_open(&files[nb], fpath)) {
                printf("FAIL: regression: cannot open %s\n", fpath);
                g_fails++;
                continue;
            }
            st->f = &files[nb];
            st->kname = program_find_kernel(st->f->prog, kname) ? program_find_kernel(st->f->prog, kname)->name : NULL;
            st->ref = st->kname ? xt_lower(st->f, st->kname, st->defs, 0) : NULL;
            Seq *s = &batch[nb];
            memset(s, 0, sizeof *s);
            s->st = st;
            s->seed = 99;
            s->cross = -1;
            char *sched = bar + 1;
            sched[strcspn(sched, "\n")] = 0;
            s->steps[s->n++] = xstrdup(sched);
            char why[2048];
            count++;
            if (!st->ref || check_inproc(s, nb, why, sizeof why) != PASS) {
                printf("FAIL: regression %s  %s\n", line, st->ref ? why : "unknown kernel");
                g_fails++;
                xo_case_free(s->c);
                s->c = NULL;
            }
            nb++;
        }
        if (nb == BATCH || (eof && nb)) {
            int before = g_fails;
            run_batch(batch, nb); /* prints and counts object failures */
            (void)before;
            for (int i = 0; i < nb; i++) {
                if (starts[i].ref)
                    ir_free(starts[i].ref);
                if (starts[i].f)
                    xt_close(starts[i].f);
            }
            nb = 0;
        }
    }
    fclose(fp);
    return count;
}

/* Draws a random sequence of legal moves on a fresh start kernel.  Now and then the
 * full list is taken, and then every listed move must apply, and its text must parse
 * back to a move that the check accepts. */
static void draw(Seq *s, Rng *rng, int full_every, long *listed)
{
    Kernel *k = start_kernel(s->st);
    int depth = 1 + (int)(rng_next(rng) % MAXSTEPS);
    for (s->n = 0; s->n < depth && k;) {
        bool full = rng_next(rng) % (uint64_t)full_every == 0;
        Arena *a = arena_new();
        SchedItem *items;
        int na = full ? xf_enum_actions(k, a, &items) : xf_enum_candidates(k, a, &items);
        if (full) {
            *listed += na;
            for (int i = 0; i < na; i++) {
                StrBuf t = {0};
                xf_item_print(&items[i], &t);
                Diags d;
                diag_init(&d);
                Arena *pa = arena_new();
                Source *src = arena_alloc(pa, sizeof *src);
                src->path = "<-s>";
                src->text = arena_strdup(pa, t.s);
                src->len = t.len;
                AstSchedule *sc = parse_schedule_text(pa, src, &d);
                bool ok = sc && sc->nitems == 1 && xf_check(k, &sc->items[0], NULL, &d);
                if (!ok) {
                    printf("FAIL: listed move `%s` on %s %s (%s) is refused as text:\n%s", t.s, s->st->file,
                           s->st->kname, s->st->sched ? "from=file" : "lowered", d.text.s ? d.text.s : "\n");
                    g_fails++;
                }
                arena_free(pa);
                diag_free(&d);
                sb_free(&t);
            }
        }
        SchedItem *it = NULL;
        for (int left = na; left > 0 && !it; left--) {
            int pick = (int)(rng_next(rng) % (uint64_t)left);
            SchedItem tmp = items[pick];
            items[pick] = items[left - 1];
            items[left - 1] = tmp;
            Diags d;
            diag_init(&d);
            bool ok = xf_apply(k, &items[left - 1], NULL, &d);
            if (!ok && full) {
                StrBuf t = {0};
                xf_item_print(&items[left - 1], &t);
                printf("FAIL: listed move refused: %s on %s %s\n%s", t.s, s->st->file, s->st->kname, d.text.s);
                sb_free(&t);
                g_fails++;
            }
            if (ok)
                it = &items[left - 1];
            diag_free(&d);
        }
        if (it) {
            StrBuf txt = {0};
            xf_item_print(it, &txt);
            s->steps[s->n++] = xstrdup(txt.s);
            sb_free(&txt);
        }
        arena_free(a);
        if (!it)
            break;
    }
    ir_free(k);
}

int main(int argc, char **argv)
{
    const char *root = argc > 1 ? argv[1] : ".";
    long total = argc > 2 ? atol(argv[2]) : 200;
    uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 0) : 20261124;
    static const char *const names[] = {
        "gemm", "gemm_nt", "gemm_tn", "gemm_bias_relu", "batched_gemm", "conv2d",
        "depthwise_conv2d", "softmax", "layernorm", "attention", "attention_causal",
    };
    enum { NFILES = sizeof names / sizeof names[0] };
    char dir[] = "/tmp/perfc-property-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    g_dir = dir;
    setvbuf(stdout, NULL, _IOLBF, 0); /* progress shows in a log as it happens */
    double t0 = now_seconds();
    int nreg = run_regressions(root);
    int reg_fails = g_fails;
    double t1 = now_seconds();

    static XtFile files[NFILES];
    static Start starts[MAXSTARTS];
    int nstarts = 0;
    for (int fi = 0; fi < NFILES; fi++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/stdlib/%s.pdl", root, names[fi]);
        if (!xt_open(&files[fi], path)) {
            printf("FAIL: cannot open %s\n", path);
            g_fails++;
            continue;
        }
        for (int ki = 0; ki < files[fi].prog->nkernels; ki++) {
            AstKernel *ak = files[fi].prog->kernels[ki];
            bool has_cpu = false;
            for (int i = 0; i < files[fi].prog->nschedules; i++)
                has_cpu |= schedule_applies(files[fi].prog->schedules[i], ak, target_find("host"), NULL);
            for (int v = 0; v < VARIANTS * (1 + (int)has_cpu) && nstarts < MAXSTARTS; v++) {
                int sched = v % 2 && has_cpu;
                Start *st = &starts[nstarts];
                st->f = &files[fi];
                snprintf(st->file, sizeof st->file, "stdlib/%s.pdl", names[fi]);
                st->kname = ak->name;
                st->sched = sched;
                make_defs(ak, st->defs, sizeof st->defs, 4 * v);
                bool dup = false; /* a kernel without size parameters has one variant */
                for (int j = 0; j < nstarts; j++)
                    dup |= starts[j].f == st->f && starts[j].kname == st->kname && starts[j].sched == sched &&
                           !strcmp(starts[j].defs, st->defs);
                if (dup)
                    continue;
                st->ref = xt_lower(st->f, st->kname, st->defs, 0);
                Kernel *k = st->ref ? start_kernel(st) : NULL;
                if (!k) {
                    printf("FAIL: cannot build %s %s %s\n", st->file, st->kname, sched ? "from=file" : "");
                    g_fails++;
                    if (st->ref)
                        ir_free(st->ref);
                    continue;
                }
                ir_free(k);
                nstarts++;
            }
        }
    }

    Rng rng;
    rng_seed(&rng, seed);
    Seq batch[BATCH];
    int nb = 0, ncross = 0;
    long moves = 0, listed = 0, crossed = 0;
    for (long q = 0; q < total && nstarts; q++) {
        Seq *s = &batch[nb];
        memset(s, 0, sizeof *s);
        s->st = &starts[q % nstarts];
        s->seed = rng_next(&rng);
        draw(s, &rng, 12, &listed);
        moves += s->n;
        /* every other sequence also runs on a cross target, the four in turn */
        s->cross = q % 2 ? 1 + ncross++ % (xo_ntargets - 1) : 0;
        crossed += s->cross && xo_available(s->cross);
        char why[2048];
        if (getenv("PERFC_PROP_TRACE")) { /* each sequence before it runs: finds the one that crashes */
            print_seq(stderr, s);
            fflush(stderr);
        }
        int r = check_inproc(s, nb, why, sizeof why);
        if (r != PASS) {
            report(s, -1, r, why);
            free_seq(s);
            continue;
        }
        if (++nb == BATCH) {
            run_batch(batch, nb);
            nb = 0;
        }
    }
    if (nb)
        run_batch(batch, nb);
    for (int i = 0; i < nstarts; i++)
        ir_free(starts[i].ref);
    for (int fi = 0; fi < NFILES; fi++)
        if (files[fi].prog)
            xt_close(&files[fi]);
    rmdir(dir); /* stays when a failing batch left its files */
    printf("%d regressions (%d failed) in %.1f s; %ld sequences over %d starts (%ld moves, %ld listed moves "
           "re-checked as text), each on the interpreter, the JIT and a host object, %ld also on a cross object: "
           "%d failures in %.1f s\n",
           nreg, reg_fails, t1 - t0, total, nstarts, moves, listed, crossed, g_fails - reg_fails, now_seconds() - t1);
    for (int t = 1; t < xo_ntargets; t++)
        if (!xo_available(t))
            printf("note: %s objects not run (%s or %s missing)\n", xo_targets[t].name, xo_targets[t].cc,
                   xo_targets[t].qemu);
    return g_fails != 0;
}
