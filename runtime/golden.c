/* Golden outputs: what the kernel must compute, from references that share no code
 * with the code generators.
 *
 * Every reference computes the same thing: the unscheduled kernel's mathematics in
 * f64 on the very inputs the kernel saw (already rounded to their dtypes).  That is
 * ir_promote_f64(u): every float buffer, constant, cast and operation widened to
 * f64, so no intermediate rounding of the kernel under test is copied into its
 * reference.  The engines, chosen by the work (docs/harness.md, section 3):
 *  - the f64 interpreter (ir/interp.c) on the whole kernel when the work is small;
 *  - dgemm for the GEMM family at large shapes, the interpreter finishing any
 *    epilogue (the product's result becomes an input of the remaining kernel): the
 *    device's own f64 GEMM when it has one (cuBLAS on a GPU: milliseconds where the
 *    host's dgemm takes a second at 4096^3), else OpenBLAS on the host;
 *  - otherwise two references at once: the interpreter on sampled elements only
 *    (runtime/golden_sample.c: exact, cost ~ samples x reduction length) on every
 *    input set, and on the last input set the promoted kernel compiled for the
 *    device the kernel runs on (the host JIT with one loop per nest on threads, or
 *    the GPU back end's default mapping), which checks every element.  The device
 *    copy shares a code generator with the kernel under test but none of its
 *    schedule, and its values are cross-checked against the sampled ones. */
#include "runtime.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "golden_sample.h"
#include "../passes/passes.h"

/* ---- cloning with promotion ---- */

typedef struct Clone {
    const Kernel *src;
    Kernel *dst;
    Var **vars;         /* by source variable id */
    Buffer **bufs;      /* by source buffer id */
    bool promote;
    const Node *const *skip; /* nodes left out of the copy, at any depth */
    int nskip;
} Clone;

static bool skipped(const Clone *c, const Node *n)
{
    for (int i = 0; i < c->nskip; i++)
        if (c->skip[i] == n)
            return true;
    return false;
}

static DType ptype(const Clone *c, DType t)
{
    return c->promote && dtype_is_float(t) ? DT_F64 : t;
}

static Expr *cl_expr(Clone *c, const Expr *e)
{
    if (!e)
        return NULL;
    Kernel *k = c->dst;
    Expr *r;
    switch (e->kind) {
    case IE_INT:
        r = ir_int(k, e->u.i);
        break;
    case IE_FLT:
        r = ir_flt(k, e->u.f, ptype(c, e->dtype));
        break;
    case IE_PARAM:
        r = ir_param(k, e->u.param);
        break;
    case IE_VAR:
        r = ir_var(k, c->vars[e->u.var->id]);
        break;
    case IE_LOAD: {
        const Buffer *b = e->u.load.buf;
        Expr **idx = xcalloc((size_t)(b->rank ? b->rank : 1), sizeof *idx);
        for (int i = 0; i < b->rank; i++)
            idx[i] = cl_expr(c, e->u.load.idx[i]);
        r = ir_load(k, c->bufs[b->id], idx);
        r->u.load.guarded = e->u.load.guarded;
        free(idx);
        break;
    }
    case IE_CAST: {
        /* a widening cast of an already-f64 value disappears */
        Expr *a = cl_expr(c, e->args[0]);
        DType t = ptype(c, e->dtype);
        if (a->dtype == t)
            return a;
        r = ir_cast(k, a, t);
        break;
    }
    default: {
        Expr *a = cl_expr(c, e->args[0]);
        int n = ir_expr_arity(e->kind);
        if (n == 1)
            r = ir_un(k, e->kind, a);
        else if (n == 2)
            r = ir_bin(k, e->kind, a, cl_expr(c, e->args[1]));
        else
            r = ir_select(k, a, cl_expr(c, e->args[1]), cl_expr(c, e->args[2]));
        break;
    }
    }
    /* The source's types, widened: the builders' inference is not asked to agree
     * with whatever produced the source tree. */
    r->dtype = ptype(c, e->dtype);
    r->span = e->span;
    return r;
}

static Node *cl_node(Clone *c, const Node *n)
{
    Kernel *k = c->dst;
    Node *r = NULL;
    const NodeList *from = NULL;
    switch (n->kind) {
    case N_LOOP:
        r = ir_loop(k, c->vars[n->u.loop.var->id], cl_expr(c, n->u.loop.lo), cl_expr(c, n->u.loop.hi),
                    n->span);
        /* the reference keeps only what cannot change results: threads */
        r->u.loop.kind = !c->promote || n->u.loop.kind == LOOP_PARALLEL ? n->u.loop.kind : LOOP_SERIAL;
        from = &n->u.loop.body;
        break;
    case N_IF:
        r = ir_guard(k, cl_expr(c, n->u.guard.cond), n->span);
        from = &n->u.guard.body;
        break;
    case N_STMT: {
        const Buffer *b = n->u.stmt.buf;
        Expr **idx = xcalloc((size_t)(b->rank ? b->rank : 1), sizeof *idx);
        for (int i = 0; i < b->rank; i++)
            idx[i] = cl_expr(c, n->u.stmt.idx[i]);
        r = ir_stmt(k, c->bufs[b->id], idx, n->u.stmt.op, cl_expr(c, n->u.stmt.value), n->span);
        free(idx);
        return r;
    }
    case N_PREFETCH: {
        /* a hint; kept so the copy has the same shape (the promoted types only
         * change how many bytes the box is) */
        const Buffer *b = n->u.pf.buf;
        Expr **idx = xcalloc((size_t)(b->rank ? b->rank : 1), sizeof *idx);
        for (int i = 0; i < b->rank; i++)
            idx[i] = cl_expr(c, n->u.pf.idx[i]);
        r = ir_prefetch(k, c->bufs[b->id], idx, n->u.pf.ext, n->span);
        r->u.pf.write = n->u.pf.write;
        free(idx);
        return r;
    }
    }
    NodeList *to = ir_body(r);
    for (int i = 0; i < from->n; i++) {
        if (skipped(c, from->v[i]))
            continue;
        Node *x = cl_node(c, from->v[i]);
        if (x)
            ir_list_push(to, x, r);
    }
    /* a loop or guard left empty by the nodes skipped goes too */
    return to->n == 0 && from->n > 0 ? NULL : r;
}

/* A copy of k, promoted or not, without the nodes in skip (at any depth; loops
 * and guards they leave empty go too), with buffer make_input turned into an
 * input (-1: none). */
static Kernel *clone_kernel(const Kernel *k, bool promote, const Node *const *skip, int nskip, int make_input)
{
    Clone c = {.src = k, .promote = promote, .skip = skip, .nskip = nskip};
    c.dst = ir_kernel_new(k->name, k->span);
    for (int i = 0; i < k->nparams; i++) {
        Param *p = ir_add_param(c.dst, k->params[i].name);
        p->bound = k->params[i].bound;
        p->value = k->params[i].value;
    }
    int nv = 0;
    for (int i = 0; i < k->nvars; i++)
        if (k->vars[i]->id + 1 > nv)
            nv = k->vars[i]->id + 1;
    c.vars = xcalloc((size_t)(nv ? nv : 1), sizeof *c.vars);
    for (int i = 0; i < k->nvars; i++)
        c.vars[k->vars[i]->id] = ir_new_var(c.dst, k->vars[i]->name);
    c.bufs = xcalloc((size_t)(k->nbufs ? k->nbufs : 1), sizeof *c.bufs);
    for (int i = 0; i < k->nbufs; i++) {
        const Buffer *b = k->bufs[i];
        Buffer *nb = ir_add_buffer(c.dst, b->name, ptype(&c, b->dtype), i == make_input ? BUF_IN : b->kind,
                                   b->rank, b->span);
        nb->mem = promote ? MEM_GLOBAL : b->mem;
        nb->has_pad = b->has_pad;
        nb->pad = b->pad;
        c.bufs[b->id] = nb;
    }
    for (int i = 0; i < k->nbufs; i++)
        for (int j = 0; j < k->bufs[i]->rank; j++)
            c.bufs[k->bufs[i]->id]->shape[j] = cl_expr(&c, k->bufs[i]->shape[j]);
    for (int i = 0; i < k->body.n; i++) {
        if (skipped(&c, k->body.v[i]))
            continue;
        Node *x = cl_node(&c, k->body.v[i]);
        if (x)
            ir_list_push(&c.dst->body, x, NULL);
    }
    free(c.vars);
    free(c.bufs);
    return c.dst;
}

Kernel *ir_promote_f64(const Kernel *k)
{
    return clone_kernel(k, true, NULL, 0, -1);
}

/* ---- threads for the host's f64 copy ---- */

static bool loads_with(const Expr *e, const Buffer *b, const Var *v, int dim, bool *ok)
{
    if (!e)
        return false;
    if (e->kind == IE_LOAD) {
        if (e->u.load.buf == b) {
            const Expr *x = e->u.load.idx[dim];
            if (x->kind != IE_VAR || x->u.var != v)
                *ok = false;
        }
        for (int q = 0; q < e->u.load.buf->rank; q++)
            loads_with(e->u.load.idx[q], b, v, dim, ok);
        return *ok;
    }
    for (int i = 0; i < 3; i++)
        loads_with(e->args[i], b, v, dim, ok);
    return *ok;
}

typedef struct Written {
    const Buffer *b[64];
    int dim[64];
    int n;
    bool ok;
} Written;

/* Every statement under l writes its buffer with v as a plain subscript, at one
 * dimension per buffer. */
static void writes_by(const NodeList *l, const Var *v, Written *w)
{
    for (int i = 0; i < l->n && w->ok; i++) {
        const Node *n = l->v[i];
        if (n->kind != N_STMT) {
            if (n->kind != N_PREFETCH)
                writes_by(ir_body((Node *)n), v, w);
            continue;
        }
        const Buffer *b = n->u.stmt.buf;
        int dim = -1;
        for (int q = 0; q < b->rank && dim < 0; q++)
            if (n->u.stmt.idx[q]->kind == IE_VAR && n->u.stmt.idx[q]->u.var == v)
                dim = q;
        int j = 0;
        while (j < w->n && w->b[j] != b)
            j++;
        if (dim < 0 || (j < w->n && w->dim[j] != dim) || (j == w->n && w->n == 64)) {
            w->ok = false;
            return;
        }
        if (j == w->n) {
            w->b[w->n] = b;
            w->dim[w->n++] = dim;
        }
    }
}

/* ... and every read of a buffer written under l is at the same v. */
static void reads_by(const NodeList *l, const Var *v, Written *w)
{
    for (int i = 0; i < l->n && w->ok; i++) {
        const Node *n = l->v[i];
        for (int j = 0; j < w->n; j++) {
            if (n->kind == N_STMT) {
                loads_with(n->u.stmt.value, w->b[j], v, w->dim[j], &w->ok);
                for (int q = 0; q < n->u.stmt.buf->rank; q++)
                    loads_with(n->u.stmt.idx[q], w->b[j], v, w->dim[j], &w->ok);
            } else if (n->kind == N_LOOP) {
                loads_with(n->u.loop.lo, w->b[j], v, w->dim[j], &w->ok);
                loads_with(n->u.loop.hi, w->b[j], v, w->dim[j], &w->ok);
            } else if (n->kind == N_IF) {
                loads_with(n->u.guard.cond, w->b[j], v, w->dim[j], &w->ok);
            }
        }
        if (n->kind != N_STMT && n->kind != N_PREFETCH)
            reads_by(ir_body((Node *)n), v, w);
    }
}

/* Marks one loop per top-level nest of the f64 copy parallel, where its
 * iterations are plainly independent: every statement inside writes with the
 * loop's variable as a subscript, and every read of what the nest writes is at
 * that same subscript.  A sufficient test, simpler than passes/deps.c and kept
 * here so the reference depends on nothing the schedules use.  The first such loop
 * down the nest with at least `threads` iterations is chosen (attention's batch of
 * 1 passes to its heads), else the one with the most. */
static void mark_parallel(Kernel *p, int threads)
{
    for (int i = 0; i < p->body.n; i++) {
        Node *best = NULL;
        int64_t best_trip = 1;
        for (Node *n = p->body.v[i]; n && n->kind == N_LOOP;
             n = n->u.loop.body.n == 1 ? n->u.loop.body.v[0] : NULL) {
            int64_t lo, hi;
            if (!ir_eval_size(p, n->u.loop.lo, &lo) || !ir_eval_size(p, n->u.loop.hi, &hi))
                break; /* a bound that moves with an outer loop: stop here */
            Written w = {.ok = true};
            writes_by(&n->u.loop.body, n->u.loop.var, &w);
            if (w.ok)
                reads_by(&n->u.loop.body, n->u.loop.var, &w);
            if (!w.ok || hi - lo <= best_trip)
                continue;
            best = n;
            best_trip = hi - lo;
            if (best_trip >= threads)
                break;
        }
        if (best)
            best->u.loop.kind = LOOP_PARALLEL;
    }
}

/* ---- the reference ---- */

/* Above this many flops + statement executions the interpreter would dominate a
 * check; the full copy then comes from dgemm or from the device. */
#define RT_INTERP_MAX_WORK 5e7
/* What the interpreter may do after dgemm: an output conversion C = T is M·N
 * statement executions, 6.7e7 at 8192^2 (under a second). */
#define RT_REST_MAX_WORK 2e8
/* Rates of the f64 copy compiled for a device, in work units a second, for the
 * choice of the full-tensor check: the unscheduled loop nest in f64 runs at about
 * 1e9 a second on one core of the EPYC of docs/harness.md (attention, S = 1024);
 * a GPU is taken as 1e11 (naive one-thread-per-element f64). */
#define RT_HOST_RATE 1e9
#define RT_GPU_RATE 1e11
/* The full-tensor check is skipped (the samples alone judge) past this estimate. */
#define RT_FULL_MAX_S 30.0

struct RtGolden {
    RtGoldenKind kind;
    const Kernel *u;
    Kernel *promoted;   /* INTERP */
    Kernel *rest;       /* BLAS: what follows the product, NULL when nothing does */
    RtGemm gemm;
    RtDevice *blas_dev; /* BLAS through dev->gemm_f64; NULL: OpenBLAS */
    RtSampler *sampler; /* SAMPLED */
    /* DEVICE, and SAMPLED's full-tensor check: the f64 copy on the device */
    bool full;          /* SAMPLED: a full-tensor check on the last input set */
    RtDevice *dev;
    RtDevice *own_dev;  /* opened here (no device given) */
    Kernel *fk;
    RtExec *fx;
    void **fbuf;
    bool last_full;     /* the last compute filled the outputs entirely */
    bool full_every;    /* SAMPLED: the full-tensor check on every input set (rt_golden_full_every) */
    bool hide_samples;  /* the outputs came from a kept full reference (rt_golden_reused) */
    double full_est_s;
    char name[64];
};

static bool device_setup(RtGolden *g, const char *target, Diags *d)
{
    if (!g->dev) {
        if (!(g->own_dev = rt_host_open(d)))
            return false;
        g->dev = g->own_dev;
        target = "host";
    }
    g->fk = ir_promote_f64(g->u);
    bool cpu = strcmp(g->dev->name, "cpu") == 0;
    if (cpu)
        mark_parallel(g->fk, rt_cpu_count());
    /* the back ends translate only a kernel lowered for its target */
    if (!pipeline_target(g->fk, target_find(cpu ? "host" : target), d) ||
        !(g->fx = g->dev->compile(g->dev, g->fk, cpu ? "host" : target, d))) {
        diag_plain(d, DIAG_ERROR, "could not compile the f64 reference of kernel %s for the device", g->u->name);
        return false;
    }
    g->fbuf = xcalloc((size_t)(g->fk->nbufs ? g->fk->nbufs : 1), sizeof *g->fbuf);
    for (int i = 0; i < g->fk->nbufs; i++) {
        int64_t n = ir_buffer_elems(g->fk, g->fk->bufs[i]);
        size_t bytes = (size_t)(n > 0 ? n : 1) * (size_t)dtype_bytes(g->fk->bufs[i]->dtype);
        if (!(g->fbuf[i] = g->dev->alloc(g->dev, bytes, d)))
            return false;
    }
    return true;
}

/* The f64 copy on the device: inputs up, one run, outputs down.  Integer
 * buffers (the only ones not widened) travel through native scratch copies. */
static bool device_run(RtGolden *g, double **bufs, Diags *d)
{
    const Kernel *p = g->fk;
    for (int i = 0; i < p->nbufs; i++) {
        const Buffer *b = p->bufs[i];
        if (b->kind != BUF_IN)
            continue;
        int64_t n = ir_buffer_elems(p, b);
        size_t bytes = (size_t)n * (size_t)dtype_bytes(b->dtype);
        void *src = bufs[i], *tmp = NULL;
        if (b->dtype != DT_F64) {
            src = tmp = xmalloc(bytes ? bytes : 1);
            rt_to_native(b->dtype, bufs[i], tmp, n);
        }
        bool ok = g->dev->upload(g->dev, g->fbuf[i], src, bytes, d);
        free(tmp);
        if (!ok)
            return false;
    }
    if (!g->dev->run(g->dev, g->fx, g->fbuf, NULL, d))
        return false;
    for (int i = 0; i < p->nbufs; i++) {
        const Buffer *b = p->bufs[i];
        if (b->kind != BUF_OUT)
            continue;
        int64_t n = ir_buffer_elems(p, b);
        size_t bytes = (size_t)n * (size_t)dtype_bytes(b->dtype);
        void *dst = bufs[i], *tmp = NULL;
        if (b->dtype != DT_F64)
            dst = tmp = xmalloc(bytes ? bytes : 1);
        bool ok = g->dev->download(g->dev, dst, g->fbuf[i], bytes, d);
        if (ok && tmp)
            rt_from_native(b->dtype, tmp, bufs[i], n);
        free(tmp);
        if (!ok)
            return false;
    }
    return true;
}

RtGolden *rt_golden_new(const Kernel *u, const Kernel *k, const RtWork *w, RtDevice *dev, const char *target,
                        int force, Diags *d)
{
    RtGolden *g = xcalloc(1, sizeof *g);
    g->u = u;
    g->dev = dev;
    double work = w->flops + w->execs;
    bool gpu = dev && strcmp(dev->name, "cpu") != 0;
    g->full_est_s = work / (gpu ? RT_GPU_RATE : RT_HOST_RATE * rt_cpu_count());
    if (force >= 0) {
        g->kind = (RtGoldenKind)force;
    } else if (work <= RT_INTERP_MAX_WORK) {
        g->kind = RT_GOLDEN_INTERP;
    } else if (w->is_gemm && w->rest_work <= RT_REST_MAX_WORK &&
               ((dev && dev->gemm_f64 && dev->gemm_f64(dev, NULL, NULL, NULL, NULL, d)) || rt_blas_available())) {
        /* dev->gemm_f64 with no product asks whether the device's library loads */
        g->kind = RT_GOLDEN_BLAS;
    } else {
        g->kind = g->full_est_s <= RT_FULL_MAX_S ? RT_GOLDEN_SAMPLED : RT_GOLDEN_SAMPLED_ONLY;
        if (g->kind == RT_GOLDEN_SAMPLED_ONLY)
            diag_plain(d, DIAG_WARNING,
                       "the f64 copy of kernel %s would take about %.0f s on this device: only sampled elements "
                       "are checked (an error in few elements may go unseen)",
                       u->name, g->full_est_s);
    }

    switch (g->kind) {
    case RT_GOLDEN_BLAS:
        if (!w->is_gemm || !(g->blas_dev || rt_blas_available() || (dev && dev->gemm_f64))) {
            diag_plain(d, DIAG_ERROR, "internal error: no dgemm reference for kernel %s", u->name);
            rt_golden_free(g);
            return NULL;
        }
        g->blas_dev = dev && dev->gemm_f64 && dev->gemm_f64(dev, NULL, NULL, NULL, NULL, d) ? dev : NULL;
        g->gemm = w->gemm;
        if (w->gemm.epilogue) {
            Kernel *p = ir_promote_f64(u);
            /* the same nodes in the copy: found by position */
            const Node *skip[2] = {NULL, NULL};
            for (int j = 0; j < 2; j++)
                skip[j] = w->gemm_nodes[j] ? rt_golden_twin(u, p, w->gemm_nodes[j]) : NULL;
            g->rest = clone_kernel(p, false, skip, 2, w->gemm.c);
            ir_free(p);
            if (g->rest->body.n == 0) {
                ir_free(g->rest);
                g->rest = NULL;
            }
        }
        snprintf(g->name, sizeof g->name, "%s%s", g->blas_dev ? g->blas_dev->gemm_f64_name : "openblas-dgemm",
                 g->rest ? "+interpreter" : "");
        break;
    case RT_GOLDEN_INTERP: {
        g->promoted = ir_promote_f64(u);
        Diags vd;
        diag_init(&vd);
        if (!ir_verify(g->promoted, &vd)) {
            diag_plain(d, DIAG_ERROR, "internal error: the f64 copy of kernel %s does not verify:\n%s", u->name,
                       vd.text.s ? vd.text.s : "");
            diag_free(&vd);
            rt_golden_free(g);
            return NULL;
        }
        diag_free(&vd);
        snprintf(g->name, sizeof g->name, "interpreter-f64");
        break;
    }
    case RT_GOLDEN_DEVICE:
        if (!device_setup(g, target, d)) {
            rt_golden_free(g);
            return NULL;
        }
        snprintf(g->name, sizeof g->name, "device-f64");
        break;
    case RT_GOLDEN_SAMPLED:
    case RT_GOLDEN_SAMPLED_ONLY:
        if (!(g->sampler = rt_sampler_new(u, k, d))) {
            rt_golden_free(g);
            return NULL;
        }
        g->full = g->kind == RT_GOLDEN_SAMPLED;
        if (g->full && !device_setup(g, target, d)) {
            rt_golden_free(g);
            return NULL;
        }
        snprintf(g->name, sizeof g->name, "sampled-interpreter%s", g->full ? "+device-f64" : "");
        break;
    }
    return g;
}

/* The node of copy p that sits where n sits in k (same positions in the same
 * bodies: ir_promote_f64 keeps the tree's shape). */
const Node *rt_golden_twin(const Kernel *k, const Kernel *p, const Node *n)
{
    int path[256], depth = 0;
    for (const Node *x = n; x && depth < 256; x = x->parent) {
        const NodeList *l = x->parent ? ir_body(x->parent) : &k->body;
        int i = 0;
        while (i < l->n && l->v[i] != x)
            i++;
        if (i == l->n)
            return NULL;
        path[depth++] = i;
    }
    const NodeList *l = &p->body;
    const Node *y = NULL;
    for (int j = depth - 1; j >= 0; j--) {
        if (!l || path[j] >= l->n)
            return NULL;
        y = l->v[path[j]];
        l = ir_body((Node *)y);
    }
    return y;
}

RtGoldenKind rt_golden_kind(const RtGolden *g)
{
    return g->kind;
}

const char *rt_golden_name(const RtGolden *g)
{
    return g->name;
}

bool rt_golden_full(const RtGolden *g)
{
    return g->last_full;
}

int64_t rt_golden_samples(const RtGolden *g, int buf, const int64_t **at, const double **ref)
{
    if (!g->sampler || g->hide_samples) {
        *at = NULL;
        *ref = NULL;
        return 0;
    }
    return rt_sampler_samples(g->sampler, buf, at, ref);
}

void rt_golden_set_samples(RtGolden *g, int64_t max_samples, double budget)
{
    if (g->sampler)
        rt_sampler_limits(g->sampler, max_samples, budget);
}

/* The sampled values and the full copy must agree: two references that share
 * nothing but the promoted kernel. */
static bool cross_check(RtGolden *g, double **bufs, Diags *d)
{
    for (int b = 0; b < g->u->nbufs; b++) {
        const int64_t *at;
        const double *ref;
        int64_t n = rt_golden_samples(g, b, &at, &ref);
        for (int64_t i = 0; i < n; i++) {
            double x = bufs[b][at[i]], y = ref[i];
            if (!(fabs(x - y) <= 1e-9 * fmax(1.0, fmax(fabs(x), fabs(y)))) && !(isnan(x) && isnan(y))) {
                diag_plain(d, DIAG_ERROR,
                           "internal error: the sampled reference and the device's f64 copy of %s disagree at "
                           "element %lld of %s (%.17g against %.17g)",
                           g->u->name, (long long)at[i], g->u->bufs[b]->name, y, x);
                return false;
            }
        }
    }
    return true;
}

bool rt_golden_full_every(RtGolden *g)
{
    if (g->kind == RT_GOLDEN_SAMPLED && g->full)
        g->full_every = true;
    return g->kind <= RT_GOLDEN_DEVICE || g->full_every;
}

void rt_golden_reused(RtGolden *g)
{
    g->last_full = true;
    g->hide_samples = true;
}

bool rt_golden_compute(RtGolden *g, double **bufs, uint64_t seed, bool last, Diags *d)
{
    g->last_full = true;
    g->hide_samples = false;
    switch (g->kind) {
    case RT_GOLDEN_INTERP:
        return ir_interp(g->promoted, bufs, d);
    case RT_GOLDEN_BLAS:
        if (g->blas_dev ? !g->blas_dev->gemm_f64(g->blas_dev, &g->gemm, bufs[g->gemm.a], bufs[g->gemm.b],
                                                 bufs[g->gemm.c], d)
                        : !rt_blas_gemm_f64(&g->gemm, bufs[g->gemm.a], bufs[g->gemm.b], bufs[g->gemm.c], d))
            return false;
        return !g->rest || ir_interp(g->rest, bufs, d);
    case RT_GOLDEN_DEVICE:
        return device_run(g, bufs, d);
    case RT_GOLDEN_SAMPLED:
    case RT_GOLDEN_SAMPLED_ONLY:
        g->last_full = false;
        if (!rt_sampler_run(g->sampler, bufs, seed, d))
            return false;
        if (g->full && (last || g->full_every)) {
            if (!device_run(g, bufs, d) || !cross_check(g, bufs, d))
                return false;
            g->last_full = true;
        }
        return true;
    }
    die("golden kind %d", (int)g->kind);
}

void rt_golden_free(RtGolden *g)
{
    if (!g)
        return;
    if (g->fbuf)
        for (int i = 0; i < g->fk->nbufs; i++)
            if (g->fbuf[i])
                g->dev->free(g->dev, g->fbuf[i]);
    free(g->fbuf);
    if (g->fx)
        g->dev->release(g->dev, g->fx);
    if (g->own_dev)
        g->own_dev->close(g->own_dev);
    rt_sampler_free(g->sampler);
    ir_free(g->fk);
    ir_free(g->promoted);
    ir_free(g->rest);
    free(g);
}
