/* The sampled exact check: golden values for a sample of output elements, each
 * computed by the f64 interpreter restricted to what that element depends on.
 *
 * A full f64 reference of a large kernel costs as much as the kernel run naively
 * (minutes on a CPU for attention at S = 4096, hours for an 8192^3 contraction).
 * One output element costs far less: the product of the trips of the loops it
 * reduces over, plus the rows of the temporaries it reads (attention's scores and
 * softmax statistics for one query row).  This file finds that backward slice and
 * runs the unchanged interpreter (ir/interp.c) on it, so the values are exactly
 * the interpreter's: no code is shared with the code generators, and the cost is
 * about samples x reduction length, whatever the back end.
 *
 * The slice is computed as boxes.  Every statement of the f64 copy of the
 * unscheduled kernel is visited in reverse order: the box of its left-hand buffer
 * that later statements need (the sample for an output) restricts each loop whose
 * variable is a plain left-hand subscript; interval arithmetic (ir/arith.c) over the loop
 * ranges so restricted gives the box of every buffer the statement reads, which is
 * added to that buffer's needs.  Passes repeat until no box grows (a statement that
 * reads the buffer it writes at another element widens its own box).  Every step
 * over-approximates: a subscript or bound the interval arithmetic cannot follow
 * (a data-dependent index) needs the whole dimension.  The kernel's loops then run
 * clamped to the union of the ranges their statements need: each loop's bounds
 * become max(lo, Plo) .. min(hi, Phi) with Plo, Phi extra size parameters set per
 * sample, so the clamped kernel is built once and the interpreter runs it as it
 * runs any kernel.  An element outside a needed box may be computed from stale
 * values; it is never read for a needed one, and only needed ones are reported.
 *
 * Samples (docs/harness.md, section 3): every corner of each output; points on the
 * tile boundaries the schedule introduced (indices t*f - 1 and t*f for each factor
 * f found in the scheduled kernel's subscripts of that output, and the last index
 * of each dimension), as all combinations when they are few, else at random; then
 * uniformly random elements, until max_samples, the work budget or (past 1024
 * samples) half a second of wall time is reached, whichever comes first: a loaded
 * machine samples less rather than wait.  A
 * sample whose row (along the last dimension) costs little more than the element
 * alone (softmax, attention: the row's statistics dominate) is widened to a window
 * of up to 64 elements of that row. */
#include "runtime.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "golden_sample.h"
#include "../ir/arith.h"

/* MIN_TIMED: the wall-time cap on random samples applies only past this many. */
enum { MAX_RANK = 16, WINDOW = 64, MIN_TIMED = 1024 };

/* Interpreter units a box costs beyond its statements: building and compiling
 * the clamped program once more (about 20 us at 8e7 units a second). */
#define BOX_OVERHEAD 2000.0

typedef struct Range {
    int64_t lo, hi;     /* inclusive; empty when lo > hi */
} Range;

typedef struct Loop {
    Node *n;
    Expr *lo, *hi;      /* the original bounds */
    int plo, phi;       /* parameters of the clamp */
    Range clamp;        /* union of what its statements need */
    bool any;           /* some statement under it is needed */
    bool unbounded;     /* some statement needs an unknown range of it */
} Loop;

typedef struct Stmt {
    Node *n;
    int *loops;         /* indices into Sampler.loops, outer to inner */
    int nloops;
} Stmt;

typedef struct OutEdges {
    int64_t *idx[MAX_RANK];
    int nidx[MAX_RANK];
} OutEdges;

struct RtSampler {
    Kernel *p;          /* the promoted copy, clamped in place */
    Loop *loops;
    int nloops, caploops;
    Stmt *stmts;
    int nstmts, capstmts;
    int nvars;
    int nbufs;
    Range **box;        /* per buffer, per dimension */
    int64_t **dims;     /* per buffer */
    int *rank;
    /* scratch per statement: variable ranges, by var id */
    int64_t *vlo, *vhi;
    bool *vset;
    /* results */
    int64_t max_samples;
    double budget;
    double max_seconds; /* wall time of the random samples per run */
    int64_t *nsamp;     /* per buffer */
    int64_t **at;
    double **ref;
    int64_t *cap;
    OutEdges *edges;    /* per buffer (outputs) */
    double work;        /* of the last run */
};

/* ---- interval arithmetic on index expressions ---- */

/* A loop variable's range as the sampler has set it (ArEnv.ctx: the sampler). */
static bool var_range(ArEnv *env, const Var *v, int64_t *lo, int64_t *hi)
{
    const RtSampler *s = env->ctx;
    int id = v->id;
    if (id < 0 || id >= s->nvars || !s->vset[id])
        return false;
    *lo = s->vlo[id];
    *hi = s->vhi[id];
    return true;
}

static bool ival(const RtSampler *s, const Expr *e, int64_t *lo, int64_t *hi)
{
    ArEnv env = {.k = s->p, .var = var_range, .ctx = (void *)s};
    return ar_interval(&env, e, lo, hi);
}

/* ---- building ---- */

static void collect(RtSampler *s, NodeList *l, int *chain, int depth)
{
    for (int i = 0; i < l->n; i++) {
        Node *n = l->v[i];
        if (n->kind == N_STMT) {
            if (s->nstmts == s->capstmts) {
                s->capstmts = s->capstmts ? 2 * s->capstmts : 32;
                s->stmts = xrealloc(s->stmts, sizeof *s->stmts * (size_t)s->capstmts);
            }
            Stmt *st = &s->stmts[s->nstmts++];
            st->n = n;
            st->nloops = depth;
            st->loops = xmalloc(sizeof(int) * (size_t)(depth ? depth : 1));
            if (depth)
                memcpy(st->loops, chain, sizeof(int) * (size_t)depth);
        } else if (n->kind == N_LOOP) {
            if (s->nloops == s->caploops) {
                s->caploops = s->caploops ? 2 * s->caploops : 32;
                s->loops = xrealloc(s->loops, sizeof *s->loops * (size_t)s->caploops);
            }
            int id = s->nloops++;
            s->loops[id] = (Loop){.n = n, .lo = n->u.loop.lo, .hi = n->u.loop.hi};
            int *c2 = xmalloc(sizeof(int) * (size_t)(depth + 1));
            if (depth)
                memcpy(c2, chain, sizeof(int) * (size_t)depth);
            c2[depth] = id;
            collect(s, &n->u.loop.body, c2, depth + 1);
            free(c2);
        } else if (n->kind == N_IF) {
            collect(s, &n->u.guard.body, chain, depth);
        }
    }
}

static void edges_of_output(RtSampler *s, const Kernel *k, const Buffer *ub);

RtSampler *rt_sampler_new(const Kernel *u, const Kernel *k, Diags *d)
{
    RtSampler *s = xcalloc(1, sizeof *s);
    s->p = ir_promote_f64(u);
    Kernel *p = s->p;
    int nv = 0;
    for (int i = 0; i < p->nvars; i++)
        nv = p->vars[i]->id + 1 > nv ? p->vars[i]->id + 1 : nv;
    s->nvars = nv;
    s->vlo = xcalloc((size_t)(nv ? nv : 1), sizeof(int64_t));
    s->vhi = xcalloc((size_t)(nv ? nv : 1), sizeof(int64_t));
    s->vset = xcalloc((size_t)(nv ? nv : 1), sizeof(bool));
    collect(s, &p->body, NULL, 0);
    s->nbufs = p->nbufs;
    size_t nb = (size_t)(p->nbufs ? p->nbufs : 1);
    s->box = xcalloc(nb, sizeof *s->box);
    s->dims = xcalloc(nb, sizeof *s->dims);
    s->rank = xcalloc(nb, sizeof *s->rank);
    s->nsamp = xcalloc(nb, sizeof *s->nsamp);
    s->at = xcalloc(nb, sizeof *s->at);
    s->ref = xcalloc(nb, sizeof *s->ref);
    s->cap = xcalloc(nb, sizeof *s->cap);
    s->edges = xcalloc(nb, sizeof *s->edges);
    for (int b = 0; b < p->nbufs; b++) {
        const Buffer *buf = p->bufs[b];
        s->rank[b] = buf->rank;
        s->box[b] = xcalloc((size_t)(buf->rank ? buf->rank : 1), sizeof(Range));
        s->dims[b] = xcalloc((size_t)(buf->rank ? buf->rank : 1), sizeof(int64_t));
        for (int q = 0; q < buf->rank; q++)
            if (!ir_eval_size(p, buf->shape[q], &s->dims[b][q]) || s->dims[b][q] < 0) {
                diag_plain(d, DIAG_ERROR, "internal error: the size of %s cannot be computed", buf->name);
                rt_sampler_free(s);
                return NULL;
            }
        if (buf->rank > MAX_RANK) {
            diag_plain(d, DIAG_ERROR, "the sampled golden handles tensors of rank %d at most (%s has %d)",
                       MAX_RANK, buf->name, buf->rank);
            rt_sampler_free(s);
            return NULL;
        }
        if (buf->kind == BUF_OUT)
            edges_of_output(s, k ? k : u, u->bufs[b]);
    }
    /* the clamps: two parameters per loop, bounds rewritten in place */
    for (int i = 0; i < s->nloops; i++) {
        Loop *L = &s->loops[i];
        char name[48];
        snprintf(name, sizeof name, "__lo%d", i);
        L->plo = p->nparams;
        Param *q = ir_add_param(p, name);
        q->bound = true;
        snprintf(name, sizeof name, "__hi%d", i);
        L->phi = p->nparams;
        q = ir_add_param(p, name);
        q->bound = true;
        L->n->u.loop.lo = ir_bin(p, IE_MAX, L->lo, ir_param(p, L->plo));
        L->n->u.loop.hi = ir_bin(p, IE_MIN, L->hi, ir_param(p, L->phi));
    }
    s->max_samples = 4096;
    s->budget = 4e7;
    s->max_seconds = 0.5;
    return s;
}

void rt_sampler_limits(RtSampler *s, int64_t max_samples, double budget)
{
    if (max_samples > 0)
        s->max_samples = max_samples;
    if (budget > 0) {
        s->budget = budget;
        s->max_seconds = budget / 8e7 * 1.25 + 0.5; /* the budget decides, not the clock */
    }
}

void rt_sampler_free(RtSampler *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->nstmts; i++)
        free(s->stmts[i].loops);
    free(s->stmts);
    free(s->loops);
    for (int b = 0; b < s->nbufs; b++) {
        free(s->box[b]);
        free(s->dims[b]);
        free(s->at[b]);
        free(s->ref[b]);
        for (int q = 0; q < MAX_RANK; q++)
            free(s->edges[b].idx[q]);
    }
    free(s->box);
    free(s->dims);
    free(s->rank);
    free(s->nsamp);
    free(s->at);
    free(s->ref);
    free(s->cap);
    free(s->edges);
    free(s->vlo);
    free(s->vhi);
    free(s->vset);
    ir_free(s->p);
    free(s);
}

/* ---- tile edges of the scheduled kernel ---- */

/* Adds |coefficients| > 1 of e's variables and the divisors of its floor
 * divisions and moduli to f (the tile sizes a subscript was built from). */
static void factors(const Kernel *k, const Expr *e, int64_t *f, int *nf, int cap)
{
    if (!e || *nf >= cap)
        return;
    int64_t c;
    if (e->kind == IE_MUL && (ir_eval_size(k, e->args[0], &c) || ir_eval_size(k, e->args[1], &c))) {
        if (c < 0)
            c = -c;
        if (c > 1)
            f[(*nf)++] = c;
    }
    if ((e->kind == IE_DIV || e->kind == IE_MOD) && ir_eval_size(k, e->args[1], &c) && c > 1)
        f[(*nf)++] = c;
    if (e->kind == IE_LOAD)
        return;
    for (int i = 0; i < 3; i++)
        factors(k, e->args[i], f, nf, cap);
}

static void factors_in(const Kernel *k, const NodeList *l, const char *name, int q, int64_t *f, int *nf, int cap)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        if (n->kind == N_STMT) {
            if (!strcmp(n->u.stmt.buf->name, name) && q < n->u.stmt.buf->rank)
                factors(k, n->u.stmt.idx[q], f, nf, cap);
        } else if (n->kind != N_PREFETCH) {
            factors_in(k, ir_body((Node *)n), name, q, f, nf, cap);
        }
    }
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void edges_of_output(RtSampler *s, const Kernel *k, const Buffer *ub)
{
    OutEdges *E = &s->edges[ub->id];
    for (int q = 0; q < ub->rank; q++) {
        int64_t n = s->dims[ub->id][q];
        int64_t f[64];
        int nf = 0;
        factors_in(k, &k->body, ub->name, q, f, &nf, 64);
        /* first and last boundaries of every factor, the tail included; a cap
         * keeps a fine tiling of a long dimension from flooding the samples */
        int cap = 2 + nf * 36;
        int64_t *v = xmalloc(sizeof(int64_t) * (size_t)cap);
        int m = 0;
        v[m++] = 0;
        if (n > 1)
            v[m++] = n - 1;
        for (int j = 0; j < nf; j++) {
            int64_t t_last = (n - 1) / f[j];
            for (int64_t t = 1; t <= t_last; t++) {
                if (t > 8 && t < t_last - 8) {
                    t = t_last - 8; /* skip the middle */
                    continue;
                }
                if (m + 2 > cap)
                    break;
                v[m++] = t * f[j] - 1;
                v[m++] = t * f[j];
            }
        }
        qsort(v, (size_t)m, sizeof *v, cmp_i64);
        int u = 0;
        for (int j = 0; j < m; j++)
            if (v[j] >= 0 && v[j] < n && (u == 0 || v[u - 1] != v[j]))
                v[u++] = v[j];
        E->idx[q] = v;
        E->nidx[q] = u;
    }
}

/* ---- the backward slice ---- */

static void add_box(RtSampler *s, int b, int q, int64_t lo, int64_t hi, bool *grew)
{
    if (lo < 0)
        lo = 0;
    if (hi > s->dims[b][q] - 1)
        hi = s->dims[b][q] - 1;
    if (lo > hi)
        return;
    Range *r = &s->box[b][q];
    if (r->lo > r->hi) {
        *r = (Range){lo, hi};
        *grew = true;
        return;
    }
    if (lo < r->lo) {
        r->lo = lo;
        *grew = true;
    }
    if (hi > r->hi) {
        r->hi = hi;
        *grew = true;
    }
}

static bool box_empty(const RtSampler *s, int b)
{
    for (int q = 0; q < s->rank[b]; q++)
        if (s->box[b][q].lo > s->box[b][q].hi)
            return true;
    return false;
}

/* Every dimension of b needs a box; an empty one makes the whole box empty, so
 * a read of b adds to each dimension only once all are known. */
static void need_load(RtSampler *s, const Expr *ld, bool *grew)
{
    const Buffer *b = ld->u.load.buf;
    int64_t lo[MAX_RANK], hi[MAX_RANK];
    for (int q = 0; q < b->rank; q++)
        if (!ival(s, ld->u.load.idx[q], &lo[q], &hi[q])) {
            lo[q] = 0;
            hi[q] = s->dims[b->id][q] - 1;
        } else if (lo[q] > s->dims[b->id][q] - 1 || hi[q] < 0) {
            return; /* wholly outside: a guarded load that reads the pad */
        }
    for (int q = 0; q < b->rank; q++)
        add_box(s, b->id, q, lo[q], hi[q], grew);
}

static void need_expr(RtSampler *s, const Expr *e, bool *grew)
{
    if (!e)
        return;
    if (e->kind == IE_LOAD) {
        need_load(s, e, grew);
        for (int q = 0; q < e->u.load.buf->rank; q++)
            need_expr(s, e->u.load.idx[q], grew);
        return;
    }
    for (int i = 0; i < 3; i++)
        need_expr(s, e->args[i], grew);
}

/* Variable ranges for the needed iterations of statement st; false when its
 * left-hand box is empty (the statement is not needed). */
static bool stmt_ranges(RtSampler *s, const Stmt *st)
{
    const Node *n = st->n;
    int b = n->u.stmt.buf->id;
    if (box_empty(s, b))
        return false;
    for (int i = 0; i < st->nloops; i++)
        s->vset[s->loops[st->loops[i]].n->u.loop.var->id] = false;
    for (int i = 0; i < st->nloops; i++) {
        const Loop *L = &s->loops[st->loops[i]];
        int id = L->n->u.loop.var->id;
        int64_t a0, a1, b0, b1;
        bool known = ival(s, L->lo, &a0, &a1) && ival(s, L->hi, &b0, &b1);
        int64_t lo = known ? a0 : INT64_MIN, hi = known ? b1 - 1 : INT64_MAX;
        for (int q = 0; q < n->u.stmt.buf->rank; q++) {
            const Expr *x = n->u.stmt.idx[q];
            if (x->kind == IE_VAR && x->u.var->id == id) {
                lo = lo > s->box[b][q].lo ? lo : s->box[b][q].lo;
                hi = hi < s->box[b][q].hi ? hi : s->box[b][q].hi;
                known = true;
            }
        }
        if (known && lo > hi)
            return false; /* no needed iteration */
        s->vset[id] = known;
        s->vlo[id] = lo;
        s->vhi[id] = hi;
    }
    return true;
}

static bool slice(RtSampler *s)
{
    for (int pass = 0; pass < 64; pass++) {
        bool grew = false;
        for (int i = s->nstmts - 1; i >= 0; i--) {
            const Stmt *st = &s->stmts[i];
            if (!stmt_ranges(s, st))
                continue;
            const Node *n = st->n;
            need_expr(s, n->u.stmt.value, &grew);
            for (int q = 0; q < n->u.stmt.buf->rank; q++)
                need_expr(s, n->u.stmt.idx[q], &grew);
            /* guards around the statement read too */
            for (const Node *g = n->parent; g; g = g->parent)
                if (g->kind == N_IF)
                    need_expr(s, g->u.guard.cond, &grew);
            /* a compound update, or a left-hand side that is not plain, reads or
             * writes its own buffer where the box says */
        }
        if (!grew)
            return true;
    }
    return false;
}

/* Sets the clamps from the boxes; returns the work of the clamped run. */
static double set_clamps(RtSampler *s)
{
    for (int i = 0; i < s->nloops; i++) {
        s->loops[i].any = false;
        s->loops[i].unbounded = false;
        s->loops[i].clamp = (Range){1, 0};
    }
    double work = BOX_OVERHEAD;
    for (int i = 0; i < s->nstmts; i++) {
        const Stmt *st = &s->stmts[i];
        if (!stmt_ranges(s, st))
            continue;
        double trips = 1;
        for (int j = 0; j < st->nloops; j++) {
            Loop *L = &s->loops[st->loops[j]];
            int id = L->n->u.loop.var->id;
            L->any = true;
            if (!s->vset[id]) {
                L->unbounded = true;
                trips *= 1e6; /* unknown: assume long */
                continue;
            }
            trips *= (double)(s->vhi[id] - s->vlo[id] + 1);
            if (L->clamp.lo > L->clamp.hi) {
                L->clamp = (Range){s->vlo[id], s->vhi[id]};
            } else {
                L->clamp.lo = s->vlo[id] < L->clamp.lo ? s->vlo[id] : L->clamp.lo;
                L->clamp.hi = s->vhi[id] > L->clamp.hi ? s->vhi[id] : L->clamp.hi;
            }
        }
        work += trips;
    }
    for (int i = 0; i < s->nloops; i++) {
        Loop *L = &s->loops[i];
        Param *plo = &s->p->params[L->plo], *phi = &s->p->params[L->phi];
        if (L->unbounded) {
            plo->value = INT64_MIN / 4;
            phi->value = INT64_MAX / 4;
        } else if (!L->any) {
            plo->value = 0; /* empty: max(lo, 0) .. min(hi, 0) */
            phi->value = 0;
            int64_t a0, a1;
            for (int j = 0; j < s->nvars; j++)
                s->vset[j] = false;
            if (ival(s, L->lo, &a0, &a1) && a0 < 0)
                plo->value = phi->value = INT64_MIN / 4; /* max(lo, -huge) .. -huge */
        } else {
            plo->value = L->clamp.lo;
            phi->value = L->clamp.hi + 1;
        }
    }
    return work;
}

static void clear_boxes(RtSampler *s)
{
    for (int b = 0; b < s->nbufs; b++)
        for (int q = 0; q < s->rank[b]; q++)
            s->box[b][q] = (Range){1, 0};
}

/* The work of computing box lo..hi of output b (inclusive, per dimension). */
static double plan(RtSampler *s, int b, const int64_t *lo, const int64_t *hi)
{
    clear_boxes(s);
    for (int q = 0; q < s->rank[b]; q++)
        s->box[b][q] = (Range){lo[q], hi[q]};
    if (!slice(s)) {
        /* no fixpoint within the passes: everything, to be safe */
        for (int c = 0; c < s->nbufs; c++)
            for (int q = 0; q < s->rank[c]; q++)
                s->box[c][q] = (Range){0, s->dims[c][q] - 1};
    }
    return set_clamps(s);
}

static void push_sample(RtSampler *s, int b, int64_t at, double v)
{
    if (s->nsamp[b] == s->cap[b]) {
        s->cap[b] = s->cap[b] ? 2 * s->cap[b] : 256;
        s->at[b] = xrealloc(s->at[b], sizeof(int64_t) * (size_t)s->cap[b]);
        s->ref[b] = xrealloc(s->ref[b], sizeof(double) * (size_t)s->cap[b]);
    }
    s->at[b][s->nsamp[b]] = at;
    s->ref[b][s->nsamp[b]] = v;
    s->nsamp[b]++;
}

static int64_t flat(const RtSampler *s, int b, const int64_t *x)
{
    int64_t o = 0;
    for (int q = 0; q < s->rank[b]; q++)
        o = o * s->dims[b][q] + x[q];
    return o;
}

/* Computes the box and records its elements as samples (repeats are removed
 * at the end, by dedup).  False with a diagnostic when the interpreter fails. */
static bool eval_box(RtSampler *s, double **bufs, int b, const int64_t *lo, const int64_t *hi, Diags *d)
{
    s->work += plan(s, b, lo, hi);
    if (!ir_interp(s->p, bufs, d))
        return false;
    int r = s->rank[b];
    int64_t x[MAX_RANK];
    memcpy(x, lo, sizeof(int64_t) * (size_t)r);
    for (;;) {
        int64_t at = flat(s, b, x);
        push_sample(s, b, at, bufs[b][at]);
        int q = r - 1;
        while (q >= 0 && ++x[q] > hi[q]) {
            x[q] = lo[q];
            q--;
        }
        if (q < 0)
            break;
    }
    return true;
}

static int cmp_pair(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Sorts the samples of b by element and drops repeats. */
static void dedup(RtSampler *s, int b)
{
    int64_t n = s->nsamp[b];
    if (n < 2)
        return;
    int64_t *pairs = xmalloc(sizeof(int64_t) * 2 * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        pairs[2 * i] = s->at[b][i];
        memcpy(&pairs[2 * i + 1], &s->ref[b][i], sizeof(double));
    }
    qsort(pairs, (size_t)n, 2 * sizeof(int64_t), cmp_pair);
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        if (m && s->at[b][m - 1] == pairs[2 * i])
            continue;
        s->at[b][m] = pairs[2 * i];
        memcpy(&s->ref[b][m], &pairs[2 * i + 1], sizeof(double));
        m++;
    }
    s->nsamp[b] = m;
    free(pairs);
}

static int64_t rnd(Rng *r, int64_t n)
{
    return n > 0 ? (int64_t)(rng_next(r) % (uint64_t)n) : 0;
}

/* One point, widened along the last dimension to a window when that costs at
 * most about twice the point (the row's shared work dominates). */
static bool eval_point(RtSampler *s, double **bufs, int b, const int64_t *x, bool widen, Rng *rng, Diags *d)
{
    int r = s->rank[b];
    int64_t lo[MAX_RANK], hi[MAX_RANK];
    memcpy(lo, x, sizeof(int64_t) * (size_t)r);
    memcpy(hi, x, sizeof(int64_t) * (size_t)r);
    if (widen && r > 0 && s->dims[b][r - 1] > 1) {
        int64_t n = s->dims[b][r - 1];
        int64_t w = n < WINDOW ? n : WINDOW;
        double one = plan(s, b, lo, hi);
        int64_t start = x[r - 1] - rnd(rng, w);
        if (start < 0)
            start = 0;
        if (start + w > n)
            start = n - w;
        lo[r - 1] = start;
        hi[r - 1] = start + w - 1;
        if (plan(s, b, lo, hi) > 2.5 * one) {
            lo[r - 1] = hi[r - 1] = x[r - 1];
        }
    }
    return eval_box(s, bufs, b, lo, hi, d);
}

bool rt_sampler_run(RtSampler *s, double **bufs, uint64_t seed, Diags *d)
{
    Rng rng;
    rng_seed(&rng, seed ^ 0x5bd1e995a3c2f1b7ull);
    s->work = 0;
    for (int b = 0; b < s->nbufs; b++)
        s->nsamp[b] = 0;
    int nout = 0;
    for (int b = 0; b < s->nbufs; b++)
        nout += s->p->bufs[b]->kind == BUF_OUT;
    for (int b = 0; b < s->nbufs; b++) {
        if (s->p->bufs[b]->kind != BUF_OUT)
            continue;
        int r = s->rank[b];
        int64_t total = 1;
        for (int q = 0; q < r; q++)
            total *= s->dims[b][q];
        if (total == 0)
            continue;
        double budget = s->budget / nout;
        double start = s->work;
        int64_t want = s->max_samples < total ? s->max_samples : total;
        int64_t x[MAX_RANK];
        /* corners of the whole output: 2^r of them (r <= 16, at most 64 taken) */
        for (int c = 0; c < (1 << (r < 6 ? r : 6)); c++) {
            for (int q = 0; q < r; q++)
                x[q] = (c >> q & 1) && q < 6 ? s->dims[b][q] - 1 : 0;
            if (!eval_point(s, bufs, b, x, false, &rng, d))
                return false;
        }
        /* tile boundaries: every combination when there are few, else random ones;
         * and each boundary index at least once per dimension */
        const OutEdges *E = &s->edges[b];
        double combos = 1;
        for (int q = 0; q < r; q++)
            combos *= E->nidx[q] ? E->nidx[q] : 1;
        int64_t nedge = want / 2;
        if (combos <= (double)nedge) {
            for (int q = 0; q < r; q++)
                x[q] = E->idx[q][0];
            int pos[MAX_RANK] = {0};
            for (;;) {
                if (s->work - start > budget / 2)
                    break;
                if (!eval_point(s, bufs, b, x, true, &rng, d))
                    return false;
                int q = r - 1;
                while (q >= 0 && ++pos[q] >= E->nidx[q]) {
                    pos[q] = 0;
                    x[q] = E->idx[q][0];
                    q--;
                }
                if (q < 0)
                    break;
                x[q] = E->idx[q][pos[q]];
            }
        } else {
            for (int q = 0; q < r; q++)
                for (int j = 0; j < E->nidx[q] && s->work - start <= budget / 2; j++) {
                    for (int t = 0; t < r; t++)
                        x[t] = E->nidx[t] ? E->idx[t][rnd(&rng, E->nidx[t])] : rnd(&rng, s->dims[b][t]);
                    x[q] = E->idx[q][j];
                    if (!eval_point(s, bufs, b, x, true, &rng, d))
                        return false;
                }
            for (int64_t i = s->nsamp[b]; i < nedge && s->work - start <= budget / 2; i++) {
                for (int t = 0; t < r; t++)
                    x[t] = E->nidx[t] ? E->idx[t][rnd(&rng, E->nidx[t])] : rnd(&rng, s->dims[b][t]);
                if (!eval_point(s, bufs, b, x, true, &rng, d))
                    return false;
            }
        }
        dedup(s, b); /* widened edge windows overlap: count distinct elements */
        if (want == total) {
            /* a small output: every element, row by row */
            for (int64_t i = 0; i < total && s->work - start <= budget; i++) {
                int64_t rest = i;
                for (int q = r - 1; q >= 0; q--) {
                    x[q] = rest % s->dims[b][q];
                    rest /= s->dims[b][q];
                }
                if (!eval_point(s, bufs, b, x, false, &rng, d))
                    return false;
            }
        } else {
            /* uniformly random elements, widened when a row is cheap; repeats are
             * dropped and replaced while the budget lasts */
            double t0 = now_seconds();
            for (int round = 0; round < 8 && s->nsamp[b] < want && s->work - start <= budget; round++) {
                while (s->nsamp[b] < want && s->work - start <= budget &&
                       (now_seconds() - t0 < s->max_seconds / nout || s->nsamp[b] < MIN_TIMED)) {
                    for (int q = 0; q < r; q++)
                        x[q] = rnd(&rng, s->dims[b][q]);
                    if (!eval_point(s, bufs, b, x, true, &rng, d))
                        return false;
                }
                dedup(s, b);
            }
        }
        dedup(s, b);
    }
    return true;
}

int64_t rt_sampler_samples(const RtSampler *s, int buf, const int64_t **at, const double **ref)
{
    if (buf < 0 || buf >= s->nbufs) {
        *at = NULL;
        *ref = NULL;
        return 0;
    }
    *at = s->at[buf];
    *ref = s->ref[buf];
    return s->nsamp[buf];
}

double rt_sampler_work(const RtSampler *s)
{
    return s->work;
}
