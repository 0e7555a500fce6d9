/* The harness: a kernel is reported fast only after it was proven right in the same
 * run (every rule is in docs/harness.md).
 *
 *  1. Validation: `checks` times (at least 2), fresh seeded inputs are drawn,
 *     outputs and temporaries are poisoned with NaN, the kernel runs once, and its
 *     outputs are compared with a golden reference computed from the same inputs
 *     (runtime/golden.c): any NaN or Inf fails (so does an element left unwritten),
 *     as does a relative Frobenius error above the tolerance of runtime/workload.c.
 *  2. Timing, on the last check's inputs (the validation runs were the warm-up):
 *     repetitions until their kernel time reaches min_time (with at least 3, at
 *     most max_reps, and a wall-clock budget).  Before each repetition, untimed: outputs re-poisoned and
 *     caches flushed; after each, untimed: outputs checked again against the golden
 *     values, so a kernel that is right only when watched, or that stops writing
 *     after a few calls, fails just the same.  Median, min and max are reported.
 *  3. The baseline (--compare) is timed by the same loop on the same device buffers
 *     and checked against the same golden values.
 *
 * Nothing is printed here except --verbose progress on stderr; rt_run prints the
 * report.  A failed validation leaves every speed field empty: there is no way to
 * get a number for a wrong kernel. */
#include "runtime.h"
#include "npy.h"
#include "lang/checked.h"
#include "passes/passes.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "pool.h"
#include "progress.h"

/* A progress event of this run (runtime/progress.h): phases and repetitions. */
static void phase(const RunOptions *o, ProgPhase ph, ProgKind kind, int done, int total, const char *what,
                  double value_ms, double eta_s)
{
    if (!o->progress)
        return;
    ProgEvent e = {.phase = ph, .kind = kind, .done = done, .total = total, .what = what, .value_ms = value_ms,
                   .eta_s = eta_s};
    progress_emit(o->progress, &e);
}

void rt_options_init(RunOptions *o)
{
    memset(o, 0, sizeof *o);
    o->target = "host";
    o->seed = 1;
    o->min_time_s = 0.2;
    o->max_reps = 10000;
    o->checks = 2;
}

/* One buffer of the kernel under test. */
typedef struct Slot {
    const Buffer *b;    /* in k */
    const Buffer *ub;   /* the same buffer in u; NULL for temporaries */
    int64_t n;
    size_t bytes;
    void *host;         /* native staging */
    void *dev;          /* device memory */
    void *poison;       /* outputs and temporaries: the NaN image written before each run */
} Slot;

/* A device buffer to poison before a run, and what must be in it afterwards. */
typedef struct Watch {
    const char *name;
    DType t;
    int64_t n;
    void *dev, *host;
    const void *poison;
    const double *ref;  /* golden values of every element; NULL: samples only */
    const Buffer *shape; /* for naming elements (u's buffer) */
    double tol;
    /* sampled golden values (runtime/golden_sample.c): elements at[], values sref[] */
    int64_t nsamp;
    const int64_t *at;
    const double *sref;
} Watch;

typedef struct H {
    RtDevice *dev;
    const Kernel *k, *u;
    RunOptions o;
    RtResult *r;
    Diags *d;
    Slot *s;
    int ns;
    int *u2k;           /* u buffer id -> slot, -1 */
    void **devbufs;     /* k's buffer order */
    double **gb;        /* u's buffers as doubles: golden inputs, outputs, temporaries */
    double *got;        /* scratch */
    RtGolden *golden;
    Watch *w;           /* the kernel's outputs */
    int nw;
    double check_ms;    /* the last validation run's time */
    double golden_s;    /* time spent computing references */
    bool golden_kept;   /* h->golden belongs to o.refs: not freed here */
    double obs_min_ms;  /* the fastest run of the kernel so far (validation and timed), for stop_above_ms */
    int64_t nsamples;   /* sampled elements per check (all outputs) */
    bool device_error;
    struct Build *build; /* the kernel's compilation still under way (start_build) */
    RtExec *built;      /* what it gave, once joined */
} H;

enum { EXIT_OK = 0, EXIT_USAGE = 1, EXIT_INVALID = 2, EXIT_RUNTIME = 3 };

static void *alloc64(size_t bytes)
{
    size_t n = (bytes + 63) / 64 * 64;
    void *p = aligned_alloc(64, n ? n : 64);
    if (!p)
        die("out of memory (%zu bytes)", bytes);
    return p;
}

/* "C[3, 17]" for flat element i of buffer b (row-major). */
static void element_name(const Kernel *k, const Buffer *b, int64_t i, char *out, size_t n)
{
    int64_t dims[32], idx[32];
    int r = b->rank < 32 ? b->rank : 32;
    for (int p = 0; p < r; p++)
        if (!ir_eval_size(k, b->shape[p], &dims[p]) || dims[p] <= 0)
            dims[p] = 1;
    for (int p = r - 1; p >= 0; p--) {
        idx[p] = i % dims[p];
        i /= dims[p];
    }
    int len = snprintf(out, n, "%s[", b->name);
    for (int p = 0; p < r && len > 0 && (size_t)len < n; p++)
        len += snprintf(out + len, n - (size_t)len, "%s%lld", p ? ", " : "", (long long)idx[p]);
    if (len > 0 && (size_t)len < n)
        snprintf(out + len, n - (size_t)len, "]");
}

/* ---- checking one run ---- */

static bool fail(H *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(H *h, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->r->reason, sizeof h->r->reason, fmt, ap);
    va_end(ap);
    h->r->valid = false;
    return false;
}

static bool not_finite_ref(H *h, const Watch *x, int64_t j, double e)
{
    char at[160];
    element_name(h->u, x->shape, j, at, sizeof at);
    return fail(h,
                "the golden reference itself is not finite at %s (%g): the kernel is not defined on random "
                "inputs in [-1, 1), so it cannot be validated",
                at, e);
}

/* Judges the values in h->got: no NaN or Inf anywhere; the relative Frobenius
 * error over every element when the full reference is at hand; over the sampled
 * elements, the same relative error and a bound per element (docs/harness.md,
 * section 4): |got - ref| <= 8 tol max(|ref|, rms), rms the root mean square of the
 * sampled reference values, so that one wrong element among thousands of samples
 * fails on its own instead of vanishing in the norm. */
/* The whole-buffer part of a check, in CHECK_CHUNKS fixed pieces that the thread
 * pool runs at once: a 16M-element output takes ~90 ms on one core, paid after
 * every validation and timed run.  Each piece converts the native values and sums
 * its own partials; the partials are combined in piece order, so the verdict and
 * the error do not depend on the number of threads. */
enum { CHECK_CHUNKS = 64 };

typedef struct CheckPart {
    int64_t bad, first_bad, first_nonfinite_ref, worst_at;
    double num, den, worst;
} CheckPart;

typedef struct CheckJob {
    const Watch *x;
    const void *src;
    double *got;
    CheckPart part[CHECK_CHUNKS];
} CheckJob;

static void check_chunks(void *ctx, int64_t lo, int64_t hi)
{
    CheckJob *c = ctx;
    const Watch *x = c->x;
    size_t esz = (size_t)dtype_bytes(x->t);
    for (int64_t p = lo; p < hi; p++) {
        int64_t a = x->n * p / CHECK_CHUNKS, b = x->n * (p + 1) / CHECK_CHUNKS;
        CheckPart *q = &c->part[p];
        *q = (CheckPart){.first_bad = -1, .first_nonfinite_ref = -1, .worst = -1};
        rt_from_native(x->t, (const char *)c->src + (size_t)a * esz, c->got + a, b - a);
        for (int64_t j = a; j < b; j++)
            if (!isfinite(c->got[j])) {
                if (q->first_bad < 0)
                    q->first_bad = j;
                q->bad++;
            }
        if (!x->ref)
            continue;
        for (int64_t j = a; j < b; j++) {
            double g = c->got[j], e = x->ref[j];
            if (!isfinite(e)) {
                q->first_nonfinite_ref = j;
                break;
            }
            double diff = g - e;
            q->num += diff * diff;
            q->den += e * e;
            if (fabs(diff) > q->worst) {
                q->worst = fabs(diff);
                q->worst_at = j;
            }
        }
    }
}

static bool check_values(H *h, const Watch *x, const char *when, double *rel)
{
    CheckJob *c = xcalloc(1, sizeof *c);
    c->x = x;
    c->src = x->host;
    c->got = h->got;
    /* small buffers are not worth waking the pool */
    if (x->n >= (1 << 16))
        perfc_parallel_for(CHECK_CHUNKS, check_chunks, c);
    else
        check_chunks(c, 0, CHECK_CHUNKS);
    int64_t bad = 0, first_bad = -1, nonfinite_ref = -1, worst_at = 0;
    double num = 0, den = 0, worst = -1;
    for (int p = 0; p < CHECK_CHUNKS; p++) {
        const CheckPart *q = &c->part[p];
        bad += q->bad;
        if (first_bad < 0)
            first_bad = q->first_bad;
        if (nonfinite_ref >= 0)
            continue;
        nonfinite_ref = q->first_nonfinite_ref;
        num += q->num;
        den += q->den;
        if (q->worst > worst) {
            worst = q->worst;
            worst_at = q->worst_at;
        }
    }
    free(c);
    if (bad) {
        char at[160];
        element_name(h->u, x->shape, first_bad, at, sizeof at);
        return fail(h,
                    "%s: %lld of %lld elements are NaN or Inf after the %s, first at %s (an element "
                    "the kernel does not write keeps its NaN poison)",
                    x->name, (long long)bad, (long long)x->n, when, at);
    }
    if (x->ref) {
        const double *ref = x->ref;
        if (nonfinite_ref >= 0)
            return not_finite_ref(h, x, nonfinite_ref, ref[nonfinite_ref]);
        double e = den > 0 ? sqrt(num / den) : sqrt(num);
        if (e > *rel)
            *rel = e;
        if (!(e <= x->tol)) {
            char at[160];
            element_name(h->u, x->shape, worst_at, at, sizeof at);
            return fail(h,
                        "%s: relative error %.3g exceeds the tolerance %.3g after the %s (worst at %s: "
                        "%.9g, expected %.9g)",
                        x->name, e, x->tol, when, at, h->got[worst_at], ref[worst_at]);
        }
    }
    if (x->nsamp) {
        double num = 0, den = 0;
        for (int64_t i = 0; i < x->nsamp; i++) {
            double e = x->sref[i], diff = h->got[x->at[i]] - e;
            if (!isfinite(e))
                return not_finite_ref(h, x, x->at[i], e);
            num += diff * diff;
            den += e * e;
        }
        double rms = sqrt(den / (double)x->nsamp);
        double e = den > 0 ? sqrt(num / den) : sqrt(num);
        if (e > *rel)
            *rel = e;
        double worst = -1;
        int64_t worst_i = 0;
        for (int64_t i = 0; i < x->nsamp; i++) {
            double r = x->sref[i], over = fabs(h->got[x->at[i]] - r) / (8 * x->tol * fmax(fabs(r), rms));
            if (x->tol == 0)
                over = h->got[x->at[i]] != r ? INFINITY : 0;
            if (over > worst) {
                worst = over;
                worst_i = i;
            }
        }
        char at[160];
        element_name(h->u, x->shape, x->at[worst_i], at, sizeof at);
        if (!(e <= x->tol))
            return fail(h,
                        "%s: relative error %.3g over %lld sampled elements exceeds the tolerance %.3g after the "
                        "%s (worst at %s: %.9g, expected %.9g)",
                        x->name, e, (long long)x->nsamp, x->tol, when, at, h->got[x->at[worst_i]],
                        x->sref[worst_i]);
        if (!(worst <= 1))
            return fail(h,
                        "%s: sampled element %s is %.9g, expected %.9g: off by more than 8 x tolerance %.3g x "
                        "max(|expected|, rms %.3g of the samples) after the %s",
                        x->name, at, h->got[x->at[worst_i]], x->sref[worst_i], x->tol, rms, when);
    }
    return true;
}

/* Downloads each watched buffer and judges it against its golden values.  rel
 * receives the worst relative error seen.  False with r->reason (or with
 * device_error set) on the first failure. */
static bool check_watch(H *h, const Watch *w, int nw, const char *when, double *rel)
{
    for (int i = 0; i < nw; i++) {
        const Watch *x = &w[i];
        if (!h->dev->download(h->dev, x->host, x->dev, (size_t)x->n * (size_t)dtype_bytes(x->t), h->d)) {
            h->device_error = true;
            return false;
        }
        if (!check_values(h, x, when, rel))
            return false;
    }
    return true;
}

/* Poisons the watched buffers (and k's temporaries when kernel_run). */
/* Poisons every watched output, and for a kernel run every temporary: on the
 * device itself where it can (a GPU's memset), else by uploading the pattern. */
static bool poison(H *h, const Watch *w, int nw, bool kernel_run)
{
    RtDevice *dev = h->dev;
    for (int i = 0; i < nw; i++)
        if (!(dev->poison ? dev->poison(dev, w[i].dev, w[i].t, w[i].n, h->d)
                          : dev->upload(dev, w[i].dev, w[i].poison, (size_t)w[i].n * (size_t)dtype_bytes(w[i].t),
                                        h->d)))
            return !(h->device_error = true);
    if (kernel_run)
        for (int i = 0; i < h->ns; i++) {
            const Buffer *b = h->s[i].b;
            if (b->kind != BUF_TEMP)
                continue;
            if (!(dev->poison ? dev->poison(dev, h->s[i].dev, b->dtype, h->s[i].n, h->d)
                              : dev->upload(dev, h->s[i].dev, h->s[i].poison, h->s[i].bytes, h->d)))
                return !(h->device_error = true);
        }
    return true;
}

/* ---- timing ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void rt_stats(double *v, int n, RtStats *st)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    st->reps = n;
    st->min = v[0];
    st->max = v[n - 1];
    st->median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Whether the median of the n times in v is known to 1%: the distribution-free 95%
 * interval of a median (the order statistics n/2 -+ 0.98 sqrt(n)) spans at most 1%
 * of it.  A steady GPU kernel gets there in a few tens of repetitions; a CPU kernel
 * on a busy machine may never, and keeps the whole wall budget. */
static bool median_pinned(const double *v, int n)
{
    if (n < 16)
        return false;
    double *s = xmalloc(sizeof *s * (size_t)n);
    memcpy(s, v, sizeof *s * (size_t)n);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    double h = 0.98 * sqrt((double)n);
    int lo = (int)floor(n / 2.0 - h), hi = (int)ceil(n / 2.0 + h) - 1;
    if (lo < 0)
        lo = 0;
    if (hi > n - 1)
        hi = n - 1;
    double med = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    bool pinned = med > 0 && s[hi] - s[lo] <= 0.01 * med;
    free(s);
    return pinned;
}

/* Warm-up, then timed repetitions of x, each poisoned, flushed, run and checked.
 * warm: the validation runs just before were long enough to count as the warm-up
 * (a kernel of seconds gains nothing from one more untimed run). */
static int time_loop(H *h, RtExec *x, void **bufs, const Watch *w, int nw, bool kernel_run, bool warm,
                     const char *who, double *rel, RtStats *st)
{
    char when[96];
    /* stop_above_ms (RunOptions): the best median of other schedules of this kernel.
     * A kernel whose every run so far took over 1.5 times that is clearly slower:
     * if its median were within 1.5 times the best, each run would exceed it with
     * probability at most 1/2, so three such runs in a row happen with probability
     * at most 1/8 (and with the spread of repeated runs, far less).  Its warm-up is
     * skipped and its timing ends after one repetition; it is validated as fully
     * as any other (both input sets, and the timed run checked). */
    double thr = kernel_run && h->o.stop_above_ms > 0 ? 1.5 * h->o.stop_above_ms : 0;
    if (thr > 0 && h->r->checks >= 2 && h->obs_min_ms > thr)
        warm = true;
    if (!warm) {
        if (!poison(h, w, nw, kernel_run) || !h->dev->run(h->dev, x, bufs, NULL, h->d))
            return EXIT_RUNTIME;
        snprintf(when, sizeof when, "%s warm-up run", who);
        if (!check_watch(h, w, nw, when, rel))
            return h->device_error ? EXIT_RUNTIME : EXIT_INVALID;
    }

    /* wall time for the loop: the checks between runs can cost far more than a
     * fast kernel (a 16M-element output), so the loop may end on this before it
     * reaches min_time of kernel time: 2 s for --run's 0.2 s, 0.5 s for the tuner's
     * 0.05 s per candidate (a few tens of repetitions).  Past 0.5 s the loop also
     * ends once the median is pinned (median_pinned): a 4096^3 GPU GEMM, its 16M
     * outputs downloaded and checked after each run, otherwise spent 2 s on
     * repetitions within 1% of one another, 40% of a 5 s answer. */
    double budget_s = fmax(0.5, 10 * h->o.min_time_s);
    double start = now_seconds(), sum_ms = 0;
    ProgPhase ph = kernel_run ? PROG_TIME : PROG_BASELINE;
    phase(&h->o, ph, PROG_BEGIN, 0, 0, who, 0, h->o.min_time_s);
    int n = 0, cap = 64;
    double *v = xmalloc(sizeof *v * (size_t)cap);
    int rc = EXIT_OK;
    for (;;) {
        double ms = 0;
        if (!poison(h, w, nw, kernel_run)) {
            rc = EXIT_RUNTIME;
            break;
        }
        h->dev->flush(h->dev);
        if (!h->dev->run(h->dev, x, bufs, &ms, h->d)) {
            rc = EXIT_RUNTIME;
            break;
        }
        if (n == cap) {
            cap *= 2;
            v = xrealloc(v, sizeof *v * (size_t)cap);
        }
        v[n++] = ms;
        sum_ms += ms;
        snprintf(when, sizeof when, "%s timed repetition %d", who, n);
        if (!check_watch(h, w, nw, when, rel)) {
            rc = h->device_error ? EXIT_RUNTIME : EXIT_INVALID;
            break;
        }
        if (h->o.verbose)
            fprintf(stderr, "perfc: %s repetition %d: %.4f ms\n", who, n, ms);
        phase(&h->o, ph, PROG_TICK, n, 0, who, ms, fmax(0, fmin(h->o.min_time_s - sum_ms * 1e-3,
                                                                budget_s - (now_seconds() - start))));
        if (n >= h->o.max_reps)
            break;
        if (thr > 0 && ms < h->obs_min_ms)
            h->obs_min_ms = ms;
        if (thr > 0 && h->obs_min_ms > thr && h->r->checks + n >= 3) {
            h->r->stopped_early = true;
            break;
        }
        if (sum_ms >= h->o.min_time_s * 1e3 && n >= 3)
            break;
        double spent = now_seconds() - start;
        if (spent >= budget_s || (spent >= 0.5 && n % 8 == 0 && median_pinned(v, n)))
            break;
    }
    if (rc == EXIT_OK)
        rt_stats(v, n, st);
    free(v);
    return rc;
}

/* ---- setup ---- */

static bool map_buffers(H *h)
{
    const Kernel *k = h->k, *u = h->u;
    h->ns = k->nbufs;
    h->s = xcalloc((size_t)(k->nbufs ? k->nbufs : 1), sizeof *h->s);
    h->u2k = xmalloc(sizeof(int) * (size_t)(u->nbufs ? u->nbufs : 1));
    for (int i = 0; i < u->nbufs; i++)
        h->u2k[i] = -1;
    for (int i = 0; i < k->nbufs; i++) {
        Slot *s = &h->s[i];
        s->b = k->bufs[i];
        s->n = ir_buffer_elems(k, s->b);
        if (s->n < 0) {
            diag_plain(h->d, DIAG_ERROR, "the size of buffer %s cannot be computed", s->b->name);
            return false;
        }
        if (!ck_bytes(s->n, (size_t)dtype_bytes(s->b->dtype), &s->bytes)) {
            diag_plain(h->d, DIAG_ERROR, "buffer %s: %lld elements do not fit in a byte count", s->b->name,
                       (long long)s->n);
            return false;
        }
        if (s->b->kind == BUF_TEMP)
            continue; /* the schedule may add, drop or reshape temporaries: nobody compares them */
        const Buffer *ub = ir_find_buffer(u, s->b->name);
        if (!ub || ub->kind != s->b->kind || ub->dtype != s->b->dtype || ir_buffer_elems(u, ub) != s->n) {
            diag_plain(h->d, DIAG_ERROR,
                       "internal error: buffer %s of the scheduled kernel does not match the kernel "
                       "before scheduling",
                       s->b->name);
            return false;
        }
        s->ub = ub;
        h->u2k[ub->id] = i;
    }
    for (int i = 0; i < u->nbufs; i++)
        if (u->bufs[i]->kind != BUF_TEMP && h->u2k[i] < 0) {
            diag_plain(h->d, DIAG_ERROR, "internal error: the scheduled kernel lost buffer %s", u->bufs[i]->name);
            return false;
        }
    return true;
}

static bool allocate(H *h)
{
    const Kernel *u = h->u;
    h->devbufs = xcalloc((size_t)(h->ns ? h->ns : 1), sizeof *h->devbufs);
    int64_t maxn = 1;
    for (int i = 0; i < h->ns; i++) {
        Slot *s = &h->s[i];
        s->host = alloc64(s->bytes);
        if (!(s->dev = h->dev->alloc(h->dev, s->bytes ? s->bytes : 1, h->d)))
            return !(h->device_error = true);
        h->devbufs[i] = s->dev;
        if (s->b->kind != BUF_IN) {
            s->poison = alloc64(s->bytes);
            rt_poison(s->b->dtype, s->poison, s->n);
        }
        if (s->n > maxn)
            maxn = s->n;
    }
    h->gb = xcalloc((size_t)(u->nbufs ? u->nbufs : 1), sizeof *h->gb);
    for (int i = 0; i < u->nbufs; i++) {
        int64_t n = ir_buffer_elems(u, u->bufs[i]);
        /* temporaries zeroed by the system page by page as they are first touched:
         * the sampled reference writes only the rows it needs of a [S, S] score
         * matrix, so the rest costs no time and no memory */
        h->gb[i] = u->bufs[i]->kind == BUF_TEMP ? calloc((size_t)(n > 0 ? n : 1), sizeof(double))
                                                 : alloc64(sizeof(double) * (size_t)(n > 0 ? n : 1));
        if (!h->gb[i])
            die("out of memory (%lld doubles)", (long long)n);
        if (n > maxn)
            maxn = n;
    }
    h->got = alloc64(sizeof(double) * (size_t)maxn);
    h->w = xcalloc((size_t)(h->ns ? h->ns : 1), sizeof *h->w);
    for (int i = 0; i < h->ns; i++) {
        Slot *s = &h->s[i];
        if (s->b->kind != BUF_OUT)
            continue;
        h->w[h->nw++] = (Watch){.name = s->b->name, .t = s->b->dtype, .n = s->n, .dev = s->dev,
                                .host = s->host, .poison = s->poison, .ref = h->gb[s->ub->id],
                                .shape = s->ub, .tol = h->r->tolerance};
    }
    return true;
}

/* ---- references kept across evaluations (RtRefCache, runtime.h) ---- */

enum { REF_SETS = 8 };

struct RtRefCache {
    const Kernel *u;
    RtDevice *dev;          /* the device the reference was made for (dgemm, f64 copy) */
    int force;              /* RunOptions.golden_kind it was made under */
    RtGolden *golden;       /* made by the first evaluation; NULL until then */
    struct RefSet {
        uint64_t seed;
        void **native;      /* per u buffer: the input's native image (inputs only) */
        double **ref;       /* per u buffer: the reference values (outputs and temporaries) */
    } set[REF_SETS];
    int nsets, hits;
    size_t bytes, cap;
};

RtRefCache *rt_refcache_new(const Kernel *u)
{
    RtRefCache *c = xcalloc(1, sizeof *c);
    c->u = u;
    /* the cache may hold a quarter of the machine's memory, at most 16 GiB */
    int64_t mem = rt_memory_bytes();
    c->cap = mem > 0 ? (size_t)(mem / 4) : (size_t)1 << 30;
    if (c->cap > (size_t)16 << 30)
        c->cap = (size_t)16 << 30;
    return c;
}

void rt_refcache_free(RtRefCache *c)
{
    if (!c)
        return;
    for (int s = 0; s < c->nsets; s++) {
        for (int i = 0; i < c->u->nbufs; i++) {
            free(c->set[s].native[i]);
            free(c->set[s].ref[i]);
        }
        free(c->set[s].native);
        free(c->set[s].ref);
    }
    rt_golden_free(c->golden);
    free(c);
}

int rt_refcache_hits(const RtRefCache *c) { return c ? c->hits : 0; }

/* The cache this evaluation may use: made for the same u on the same device. */
static RtRefCache *refs_of(const H *h)
{
    RtRefCache *c = h->o.refs;
    if (!c || c->u != h->u || (c->golden && (c->dev != h->dev || c->force != h->o.golden_kind)))
        return NULL;
    return c;
}

static const struct RefSet *ref_find(const H *h, uint64_t seed)
{
    RtRefCache *c = refs_of(h);
    if (!c || c->golden != h->golden)
        return NULL;
    for (int s = 0; s < c->nsets; s++)
        if (c->set[s].seed == seed)
            return &c->set[s];
    return NULL;
}

/* Keeps input set `seed` (native inputs, reference values) after its compute. */
static void ref_keep(H *h, uint64_t seed)
{
    RtRefCache *c = refs_of(h);
    if (!c || c->golden != h->golden || c->nsets == REF_SETS || !rt_golden_full(h->golden))
        return;
    const Kernel *u = h->u;
    /* A sampled reference's temporaries hold only what its samples needed (and may be
     * an [S, S] score matrix never touched): the outputs alone are kept, which is all
     * the checks compare.  The others keep their temporaries, which the baseline's
     * check of a temporary product reads. */
    bool temps = rt_golden_kind(h->golden) <= RT_GOLDEN_DEVICE;
    size_t need = 0;
    for (int i = 0; i < u->nbufs; i++) {
        int64_t n = ir_buffer_elems(u, u->bufs[i]);
        if (u->bufs[i]->kind == BUF_IN)
            need += h->s[h->u2k[i]].bytes;
        else if (temps || u->bufs[i]->kind == BUF_OUT)
            need += sizeof(double) * (size_t)(n > 0 ? n : 0);
    }
    if (c->bytes + need > c->cap)
        return;
    struct RefSet *r = &c->set[c->nsets++];
    r->seed = seed;
    r->native = xcalloc((size_t)u->nbufs + 1, sizeof *r->native);
    r->ref = xcalloc((size_t)u->nbufs + 1, sizeof *r->ref);
    for (int i = 0; i < u->nbufs; i++) {
        if (u->bufs[i]->kind == BUF_IN) {
            const Slot *s = &h->s[h->u2k[i]];
            r->native[i] = alloc64(s->bytes);
            memcpy(r->native[i], s->host, s->bytes);
        } else if (temps || u->bufs[i]->kind == BUF_OUT) {
            int64_t n = ir_buffer_elems(u, u->bufs[i]);
            r->ref[i] = alloc64(sizeof(double) * (size_t)(n > 0 ? n : 1));
            memcpy(r->ref[i], h->gb[i], sizeof(double) * (size_t)(n > 0 ? n : 0));
        }
    }
    c->bytes += need;
}

/* ---- validation ---- */

/* Points each watch at the golden values of the last compute. */
static void aim_watches(H *h)
{
    bool full = rt_golden_full(h->golden);
    for (int i = 0; i < h->nw; i++) {
        Watch *w = &h->w[i];
        w->ref = full ? h->gb[w->shape->id] : NULL;
        w->nsamp = rt_golden_samples(h->golden, w->shape->id, &w->at, &w->sref);
    }
}

/* --save-outputs: what the kernel wrote in its last run, every output downloaded
 * again (a failed check stops before the later ones). */
static bool save_outputs(H *h)
{
    double **vals = xcalloc((size_t)h->u->nbufs + 1, sizeof *vals);
    bool ok = true;
    for (int i = 0; i < h->nw && ok; i++) {
        const Watch *w = &h->w[i];
        ok = h->dev->download(h->dev, w->host, w->dev, (size_t)w->n * (size_t)dtype_bytes(w->t), h->d);
        if (ok) {
            vals[w->shape->id] = xmalloc(sizeof(double) * (size_t)(w->n ? w->n : 1));
            rt_from_native(w->t, w->host, vals[w->shape->id], w->n);
        }
    }
    ok = ok && rt_npz_save(h->u, h->o.save_outputs, BUF_OUT, vals, h->d);
    for (int i = 0; i < h->u->nbufs; i++)
        free(vals[i]);
    free(vals);
    return ok;
}

static int validate_runs(H *h, RtExec *x);
static RtExec *kernel_ready(H *h);

static int validate(H *h, RtExec *x)
{
    int rc = validate_runs(h, x);
    if (h->o.save_outputs && (rc == EXIT_OK || rc == EXIT_INVALID) && !save_outputs(h))
        return EXIT_USAGE;
    return rc;
}

static int validate_runs(H *h, RtExec *x)
{
    const Kernel *u = h->u;
    for (int c = 0; c < h->o.checks; c++) {
        Rng rng;
        uint64_t seed = h->o.seed ^ (0xd1b54a32d192ed03ull * (uint64_t)(c + 1));
        rng_seed(&rng, seed);
        double ti = now_seconds();
        /* the same input set for another schedule of u: its inputs and reference as
         * they were drawn and computed then */
        const struct RefSet *kept = ref_find(h, seed);
        for (int i = 0; i < u->nbufs; i++) {
            const Buffer *b = u->bufs[i];
            if (b->kind != BUF_IN)
                continue;
            Slot *s = &h->s[h->u2k[i]];
            if (kept) {
                memcpy(s->host, kept->native[i], s->bytes);
            } else if (h->o.inputs) {
                if (!rt_npy_load_input(u, b, h->o.inputs, h->gb[i], s->n, h->d))
                    return EXIT_USAGE;
                rt_to_native(b->dtype, h->gb[i], s->host, s->n);
            } else if (!rt_fill_input(u, b, s->n, &rng, h->gb[i], s->host, h->d)) {
                return EXIT_USAGE;
            }
            if (!h->dev->upload(h->dev, s->dev, s->host, s->bytes, h->d))
                return EXIT_RUNTIME;
        }
        if (c == 0 && h->o.save_inputs && !rt_npz_save(u, h->o.save_inputs, BUF_IN, h->gb, h->d))
            return EXIT_USAGE;
        double t0 = now_seconds();
        h->r->spent.inputs += t0 - ti;
        phase(&h->o, PROG_GOLDEN, PROG_BEGIN, c + 1, h->o.checks, rt_golden_name(h->golden), 0, -1);
        if (kept) {
            for (int i = 0; i < u->nbufs; i++)
                if (u->bufs[i]->kind != BUF_IN && kept->ref[i]) {
                    int64_t n = ir_buffer_elems(u, u->bufs[i]);
                    memcpy(h->gb[i], kept->ref[i], sizeof(double) * (size_t)(n > 0 ? n : 0));
                }
            rt_golden_reused(h->golden);
            refs_of(h)->hits++;
        } else {
            if (!rt_golden_compute(h->golden, h->gb, seed, c == h->o.checks - 1, h->d)) {
                diag_plain(h->d, DIAG_ERROR, "the golden reference (%s) failed", rt_golden_name(h->golden));
                return EXIT_RUNTIME;
            }
            ref_keep(h, seed);
        }
        aim_watches(h);
        double t1 = now_seconds();
        h->golden_s += t1 - t0;
        if (h->o.baseline_only)
            continue;
        if (!x && !(x = kernel_ready(h)))
            return h->d->nerrors ? EXIT_USAGE : EXIT_RUNTIME;
        phase(&h->o, PROG_VALIDATE, PROG_BEGIN, c + 1, h->o.checks, NULL, 0, -1);
        if (!poison(h, h->w, h->nw, true) || !h->dev->run(h->dev, x, h->devbufs, &h->check_ms, h->d))
            return EXIT_RUNTIME;
        if (c == 0 || h->check_ms < h->obs_min_ms)
            h->obs_min_ms = h->check_ms;
        double t2 = now_seconds();
        char when[64];
        snprintf(when, sizeof when, "run on input set %d of %d", c + 1, h->o.checks);
        double this_check = 0;
        bool ok = check_watch(h, h->w, h->nw, when, &this_check);
        h->r->spent.checks += now_seconds() - t1;
        h->r->rel_error = fmax(h->r->rel_error, this_check);
        int64_t ns = 0;
        for (int i = 0; i < h->nw; i++)
            ns += h->w[i].nsamp;
        if (ns > h->nsamples)
            h->nsamples = ns;
        /* "%.0lld" prints nothing for 0: "(every element)", "(4096 sampled)", or both */
        if (h->o.verbose)
            fprintf(stderr,
                    "perfc: check %d/%d: inputs %.1f ms, golden %s (%s%s%.0lld%s) in %.1f ms, run %.1f "
                    "ms, compare %.1f ms: relative error %.3g (tolerance %.3g)%s\n",
                    c + 1, h->o.checks, (t0 - ti) * 1e3, rt_golden_name(h->golden),
                    rt_golden_full(h->golden) ? "every element" : "", rt_golden_full(h->golden) && ns ? " and " : "",
                    (long long)ns, ns ? " sampled" : "", (t1 - t0) * 1e3,
                    (t2 - t1) * 1e3, (now_seconds() - t2) * 1e3, this_check, h->r->tolerance,
                    ok ? "" : ": FAILED");
        if (!ok)
            return h->device_error ? EXIT_RUNTIME : EXIT_INVALID;
        h->r->checks++;
    }
    return EXIT_OK;
}

/* ---- the baseline ---- */

static int baseline(H *h)
{
    RtResult *r = h->r;
    if (!r->work.is_gemm) {
        snprintf(r->base_note, sizeof r->base_note, "no %s equivalent for this kernel (it is not a matrix product)",
                 strcmp(r->base_name, "openblas") == 0 ? "OpenBLAS" : "cuBLAS");
        return EXIT_OK;
    }
    const RtGemm *g = &r->work.gemm;
    if (!rt_golden_full(h->golden) || (h->u->bufs[g->c]->kind == BUF_TEMP && rt_golden_kind(h->golden) >= RT_GOLDEN_SAMPLED)) {
        snprintf(r->base_note, sizeof r->base_note,
                 "no full f64 reference of the product at this size, so the baseline is not run");
        return EXIT_OK;
    }
    char why[256] = "";
    int nerr = h->d->nerrors;
    RtExec *x = h->dev->library(h->dev, r->base_name, g, why, sizeof why, h->d);
    if (!x) {
        if (h->d->nerrors > nerr)
            return EXIT_RUNTIME;
        snprintf(r->base_note, sizeof r->base_note, "%s", why);
        return EXIT_OK;
    }
    snprintf(r->base_call, sizeof r->base_call, "%s", x->what);
    int64_t n = g->batch * g->m * g->n;
    size_t bytes = (size_t)n * (size_t)dtype_bytes(g->tc);
    void *cdev = h->dev->alloc(h->dev, bytes ? bytes : 1, h->d);
    void *chost = alloc64(bytes), *cpoison = alloc64(bytes);
    rt_poison(g->tc, cpoison, n);
    int rc = EXIT_RUNTIME;
    if (cdev) {
        void *abc[3] = {h->s[h->u2k[g->a]].dev, h->s[h->u2k[g->b]].dev, cdev};
        char name[64];
        snprintf(name, sizeof name, "%s result", r->base_name);
        Watch w = {.name = name, .t = g->tc, .n = n, .dev = cdev, .host = chost, .poison = cpoison,
                   .ref = h->gb[g->c], .shape = h->u->bufs[g->c], .tol = rt_tolerance(g->tc, g->k)};
        /* A wrong baseline is noted beside a valid kernel, never turned into the kernel's
         * failure: fail() writes r->reason and r->valid, which are restored here. */
        char kept[sizeof r->reason];
        memcpy(kept, r->reason, sizeof kept);
        double rel = 0;
        rc = time_loop(h, x, abc, &w, 1, false, false, r->base_name, &rel, &r->base_time);
        rt_blas_quiesce(); /* a library's threads must not spin through the next kernel's runs */
        /* a library may choose its algorithm on the (untimed) warm-up run and say so */
        snprintf(r->base_call, sizeof r->base_call, "%s", x->what);
        if (rc == EXIT_INVALID) {
            char reason[sizeof r->reason];
            memcpy(reason, r->reason, sizeof reason);
            memcpy(r->reason, kept, sizeof kept);
            r->valid = true;
            memset(&r->base_time, 0, sizeof r->base_time);
            snprintf(r->base_note, sizeof r->base_note, "%s did not match the golden reference, so it is not timed: %s",
                     x->what, reason);
            rc = EXIT_OK;
        } else if (rc == EXIT_OK) {
            r->has_base = true;
            r->base_rel_error = rel;
            double gemm_flops = 2.0 * (double)g->batch * (double)g->m * (double)g->n * (double)g->k;
            r->base_gflops = r->base_time.median > 0 ? gemm_flops / (r->base_time.median * 1e6) : 0;
            /* Throughput on the same count of operations: the product's.  For a kernel with
             * an epilogue that credits perfc nothing for the extra work. */
            r->vs_baseline = r->time.median > 0 ? r->base_time.median / r->time.median : 0;
            if (g->epilogue)
                snprintf(r->base_note, sizeof r->base_note,
                         "the baseline computes the matrix product only; the kernel's epilogue is extra work");
        }
        h->dev->free(h->dev, cdev);
    }
    free(chost);
    free(cpoison);
    h->dev->release(h->dev, x);
    return rc;
}

/* ---- the whole evaluation ---- */

/* The report's golden field: the reference's name, with the number of sampled
 * elements per input set when it samples ("sampled-interpreter(4096)+device-f64"). */
static void name_golden(H *h)
{
    const char *name = rt_golden_name(h->golden);
    const char *p = strchr(name, '+');
    if (h->nsamples)
        snprintf(h->r->golden, sizeof h->r->golden, "%.*s(%lld)%s", (int)(p ? p - name : (long)strlen(name)), name,
                 (long long)h->nsamples, p ? p : "");
}

static int check_compare(H *h)
{
    const char *lib = h->o.compare;
    if (!lib)
        return EXIT_OK;
    h->r->compare = true;
    snprintf(h->r->base_name, sizeof h->r->base_name, "%s", lib);
    if (strcmp(lib, "openblas") == 0) {
        if (!rt_blas_available()) {
            diag_plain(h->d, DIAG_ERROR,
                       "--compare openblas: this perfc was built without OpenBLAS (install libopenblas-dev "
                       "and rebuild)");
            return EXIT_USAGE;
        }
        if (strcmp(h->dev->name, "cpu") != 0) {
            diag_plain(h->d, DIAG_ERROR, "--compare openblas needs a CPU target; on a GPU use --compare cublas");
            return EXIT_USAGE;
        }
        return EXIT_OK;
    }
    if (strcmp(lib, "cublas") == 0) {
        if (strcmp(h->dev->name, "cuda") != 0) {
            diag_plain(h->d, DIAG_ERROR,
                       "--compare cublas needs a GPU target (-target sm_XX); on the CPU use --compare openblas");
            return EXIT_USAGE;
        }
        return EXIT_OK;
    }
    diag_plain(h->d, DIAG_ERROR, "--compare %s: unknown library (openblas, cublas)", lib);
    return EXIT_USAGE;
}

static void describe_cache(H *h)
{
    if (strcmp(h->dev->name, "cpu") == 0) {
#if defined(__x86_64__)
        snprintf(h->r->cache, sizeof h->r->cache, "every buffer evicted with clflush before each repetition");
#else
        snprintf(h->r->cache, sizeof h->r->cache, "2 x last-level cache written before each repetition");
#endif
    } else {
        snprintf(h->r->cache, sizeof h->r->cache, "%s", strcmp(h->dev->name, "cuda") == 0
                 ? "GPU L2 flushed before each repetition" : "device caches flushed before each repetition");
    }
}

/* A GPU kernel's code generation and NVRTC compile run on another thread while the
 * first input set's reference is computed: neither needs the other, and one after
 * the other they were 1.3 s and 1.2 s of a 5 s `--run` at attention S = 4096 on an
 * H100.  The module is loaded on this thread, which holds the GPU context, just
 * before the first run (kernel_ready). */
typedef struct Build {
    pthread_t th;
    RtDevice *dev;
    const Kernel *k;
    const char *target;
    void *module;
    Diags d;            /* the thread's own; merged into the run's when joined */
    double t0, t1;
} Build;

static void *build_main(void *arg)
{
    Build *b = arg;
    const Target *t = target_find(b->target);
    if (t && !b->k->gpu_lowered) {
        Kernel *low = ir_clone_kernel(b->k);
        if (pipeline_target(low, t, &b->d))
            b->module = b->dev->build(b->dev, low, b->target, &b->d);
        ir_free(low);
    } else {
        b->module = b->dev->build(b->dev, b->k, b->target, &b->d);
    }
    b->t1 = now_seconds();
    return NULL;
}

static bool start_build(H *h, const char *target)
{
    const Target *t = target_find(target);
    if (!h->dev->build || !h->dev->adopt || !t || !target_is_gpu(t))
        return false;
    Build *b = xcalloc(1, sizeof *b);
    *b = (Build){.dev = h->dev, .k = h->k, .target = target, .t0 = now_seconds()};
    diag_init(&b->d);
    if (pthread_create(&b->th, NULL, build_main, b) != 0) {
        diag_free(&b->d);
        free(b);
        return false;
    }
    h->build = b;
    return true;
}

/* The kernel, ready to run: the build joined, its diagnostics passed on, its module
 * loaded here.  NULL when it failed (the diagnostics say why). */
static RtExec *kernel_ready(H *h)
{
    Build *b = h->build;
    if (!b)
        return h->built;
    h->build = NULL;
    pthread_join(b->th, NULL);
    if (b->d.text.s)
        sb_puts(&h->d->text, b->d.text.s);
    h->d->nerrors += b->d.nerrors;
    h->d->nwarnings += b->d.nwarnings;
    /* compile_ms: the build's own time and the load's, not the wait for the golden */
    double ta = now_seconds();
    h->built = b->module ? h->dev->adopt(h->dev, b->module, h->d) : NULL;
    h->r->compile_ms = (b->t1 - b->t0 + now_seconds() - ta) * 1e3;
    if (h->o.verbose)
        fprintf(stderr, "perfc: compiled in %.1f ms, beside the golden reference\n", h->r->compile_ms);
    diag_free(&b->d);
    free(b);
    return h->built;
}

/* The back ends translate only a kernel lowered for its target (passes/pipeline.c).
 * The CLI, the API, the dojo and the tuner hand the harness lowered kernels; a
 * kernel built or scheduled by hand (the harness' own tests, embedders of
 * runtime.h) is lowered here, on a copy, for the target it runs on. */
static RtExec *compile_lowered(RtDevice *dev, const Kernel *k, const char *target, Diags *d)
{
    const Target *t = target_find(target);
    bool lowered = target_is_gpu(t) ? k->gpu_lowered != NULL : k->cpu_lowered != NULL;
    if (lowered || !t)
        return dev->compile(dev, k, target, d);
    Kernel *low = ir_clone_kernel(k);
    RtExec *x = pipeline_target(low, t, d) ? dev->compile(dev, low, target, d) : NULL;
    ir_free(low);
    return x;
}

/* given: a compilation of k made by the caller (kept by it), or NULL to compile here. */
static int evaluate(RtDevice *dev, RtExec *given, const Kernel *k, const Kernel *u, const RunOptions *opt,
                    RtResult *r, Diags *d)
{
    H hh = {.dev = dev, .k = k, .u = u ? u : k, .r = r, .d = d};
    H *h = &hh;
    RtExec *x = NULL;
    if (opt)
        h->o = *opt;
    else
        rt_options_init(&h->o);
    if (!h->o.target)
        h->o.target = "host";
    if (h->o.min_time_s <= 0)
        h->o.min_time_s = 0.2;
    if (h->o.max_reps <= 0)
        h->o.max_reps = 10000;
    if (h->o.checks < (h->o.validate_only ? 1 : 2))
        h->o.checks = h->o.validate_only ? 1 : 2;
    if (h->o.validate_only)
        h->o.compare = NULL;
    if (h->o.baseline_only && (!h->o.compare || given || h->o.validate_only)) {
        diag_plain(d, DIAG_ERROR, "internal error: a baseline alone needs --compare and no kernel");
        return EXIT_USAGE;
    }

    memset(r, 0, sizeof *r);
    double tstart = now_seconds();
    r->k = k;
    r->target = h->o.target;
    r->seed = h->o.seed;
    rt_machine_host(&r->machine);
    dev->describe(dev, &r->machine);
    describe_cache(h);
    r->threads = h->o.threads > 0 ? h->o.threads : rt_cpu_count();
    perfc_pool_set_threads(r->threads);
    rt_blas_set_threads(r->threads);

    int rc = check_compare(h);
    if (rc)
        return rc;
    if (!ir_all_bound(k, d) || (h->u != k && !ir_all_bound(h->u, d)))
        return EXIT_USAGE;
    if (!rt_analyse(h->u, &r->work, d))
        return EXIT_RUNTIME;
    r->tol_dtype = rt_tolerance_dtype(h->u);
    r->tolerance = rt_tolerance_why(r->tol_dtype, r->work.reduce_len, r->tol_note, sizeof r->tol_note);
    if (h->o.verbose && r->tol_note[0])
        fprintf(stderr, "perfc: tolerance %g (%s): %s\n", r->tolerance, dtype_name(r->tol_dtype), r->tol_note);
    if (!rt_check_sizes(k, 8, d) || !map_buffers(h)) { /* sizes before any allocation */
        rc = EXIT_USAGE;
        goto out;
    }
    int nout = 0;
    for (int i = 0; i < k->nbufs; i++)
        nout += k->bufs[i]->kind == BUF_OUT;
    if (!nout) {
        diag_plain(d, DIAG_ERROR, "kernel %s has no output to validate", k->name);
        rc = EXIT_USAGE;
        goto out;
    }

    if (h->o.baseline_only && !r->work.is_gemm) {
        snprintf(r->base_note, sizeof r->base_note, "no library equivalent (the kernel is not a matrix product)");
        goto out;
    }
    double t0 = now_seconds();
    phase(&h->o, PROG_COMPILE, PROG_BEGIN, 0, 0, k->name, 0, -1);
    bool building = !given && !h->o.baseline_only && h->o.checks > 0 && start_build(h, h->o.target);
    x = given || h->o.baseline_only || building ? given : compile_lowered(dev, k, h->o.target, d);
    r->compile_ms = x && !given ? (now_seconds() - t0) * 1e3 : 0;
    r->spent.setup = t0 - tstart;
    if (h->o.verbose && !building)
        fprintf(stderr, "perfc: compiled in %.1f ms\n", r->compile_ms);
    if (!x && !h->o.baseline_only && !building) {
        rc = EXIT_USAGE;
        goto out;
    }
    double tg = now_seconds();
    RtRefCache *refs = refs_of(h);
    if (refs && refs->golden) {
        h->golden = refs->golden;
        h->golden_kept = true;
    } else if (!(h->golden = rt_golden_new(h->u, k, &r->work, dev, h->o.target, h->o.golden_kind - 1, d))) {
        rc = EXIT_RUNTIME;
        goto release;
    } else if (refs && rt_golden_full_every(h->golden)) {
        /* a reference of every element, independent of the schedule: kept.  A
         * sampled one now checks every set in full too (a second f64 run for the
         * first candidate), so that no later candidate pays for its samples (conv2d
         * 256 x 14^2, one thread: 0.36 s each set) or its full check again */
        refs->golden = h->golden;
        refs->dev = dev;
        refs->force = h->o.golden_kind;
        h->golden_kept = true;
    }
    h->golden_s = now_seconds() - tg;
    snprintf(r->golden, sizeof r->golden, "%s", rt_golden_name(h->golden));
    if (!allocate(h)) {
        rc = EXIT_RUNTIME;
        goto release;
    }
    double tv = now_seconds();
    r->spent.setup += tv - tg - h->golden_s;
    rc = validate(h, x);
    if (!x)
        x = kernel_ready(h); /* joined by the first run, or now where no run came */
    r->spent.golden = h->golden_s;
    name_golden(h);
    if (h->o.verbose)
        fprintf(stderr, "perfc: golden %s: %.0f ms in all (set-up and %d check%s)\n", r->golden, h->golden_s * 1e3,
                h->o.checks, h->o.checks == 1 ? "" : "s");
    if (rc != EXIT_OK)
        goto release;
    if (h->o.validate_only) {
        r->valid = true;
        goto release;
    }
    if (h->o.baseline_only) {
        double tb = now_seconds();
        rc = baseline(h);
        r->spent.baseline = now_seconds() - tb;
        if (h->o.verbose)
            fprintf(stderr, "perfc: baseline alone %.0f ms\n", (now_seconds() - tb) * 1e3);
        goto release;
    }
    double tt = now_seconds();
    /* the validation runs just made, the last on these very buffers, were the
     * warm-up: one more untimed run was a third of a fast candidate's timing */
    bool warm = r->checks > 0 || h->check_ms >= 500;
    if ((rc = time_loop(h, x, h->devbufs, h->w, h->nw, true, warm, "kernel", &r->rel_error, &r->time)) != EXIT_OK)
        goto release;
    r->spent.timing = now_seconds() - tt;
    if (h->o.verbose)
        fprintf(stderr, "perfc: validation %.0f ms, timing %.0f ms (%d repetitions)\n", (tt - tv) * 1e3,
                (now_seconds() - tt) * 1e3, r->time.reps);
    r->valid = true;
    if (r->time.median > 0) {
        r->gflops = r->work.flops / (r->time.median * 1e6);
        r->gbps = r->work.bytes / (r->time.median * 1e6);
    }
    if (r->compare) {
        double tb = now_seconds();
        rc = baseline(h);
        r->spent.baseline = now_seconds() - tb;
        if (h->o.verbose)
            fprintf(stderr, "perfc: baseline %.0f ms\n", (now_seconds() - tb) * 1e3);
    }

release:
    if (!x && h->build)
        x = kernel_ready(h); /* an early exit while the build ran: join it, drop it */
    if (x && x != given)
        dev->release(dev, x);
out:
    if (rc == EXIT_INVALID) {
        /* no speed for a wrong kernel, not even a partial one */
        r->valid = false;
        memset(&r->time, 0, sizeof r->time);
        r->gflops = r->gbps = 0;
        r->has_base = false;
        memset(&r->base_time, 0, sizeof r->base_time);
        r->base_gflops = r->vs_baseline = 0;
    }
    if (h->device_error && rc == EXIT_OK)
        rc = EXIT_RUNTIME;
    for (int i = 0; i < h->ns; i++) {
        if (h->s[i].dev)
            dev->free(dev, h->s[i].dev);
        free(h->s[i].host);
        free(h->s[i].poison);
    }
    if (h->gb)
        for (int i = 0; i < h->u->nbufs; i++)
            free(h->gb[i]);
    free(h->gb);
    free(h->got);
    free(h->w);
    free(h->s);
    free(h->u2k);
    free(h->devbufs);
    if (!h->golden_kept)
        rt_golden_free(h->golden);
    return rc;
}

int rt_evaluate(RtDevice *dev, const Kernel *k, const Kernel *u, const RunOptions *o, RtResult *r, Diags *d)
{
    return evaluate(dev, NULL, k, u, o, r, d);
}

int rt_evaluate_exec(RtDevice *dev, RtExec *x, const Kernel *k, const Kernel *u, const RunOptions *o, RtResult *r,
                     Diags *d)
{
    return evaluate(dev, x, k, u, o, r, d);
}

int rt_run(const Kernel *k, const Kernel *u, const RunOptions *o, Diags *d)
{
    RunOptions def;
    if (!o) {
        rt_options_init(&def);
        o = &def;
    }
    int rc = EXIT_RUNTIME;
    RtDevice *dev = rt_device_open(o->target, &rc, d);
    if (!dev)
        return rc;
    RtResult *r = xcalloc(1, sizeof *r);
    rc = rt_evaluate(dev, k, u, o, r, d);
    if (o->keep)
        *o->keep = *r;
    if (o->progress && o->progress->fn)
        progress_emit(o->progress, &(ProgEvent){.phase = PROG_TIME, .kind = PROG_DONE, .eta_s = -1});
    if (rc == EXIT_OK || rc == EXIT_INVALID) {
        FILE *f = o->out ? o->out : stdout;
        if (o->json)
            rt_report_json(r, f);
        else
            rt_report_human(r, f);
        fflush(f);
    }
    dev->close(dev);
    free(r);
    return rc;
}
