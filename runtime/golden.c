/* Golden outputs: what the kernel must compute, from references that share no code
 * with the code generators.
 *
 * Every reference computes the same thing: the unscheduled kernel's mathematics in
 * f64 on the very inputs the kernel saw (already rounded to their dtypes).  That is
 * ir_promote_f64(u): every float buffer, constant, cast and operation widened to
 * f64, so no intermediate rounding of the kernel under test is copied into its
 * reference.  Three engines run it, chosen by the work (docs/harness.md):
 *  - the f64 interpreter (ir/interp.c) when the work is small;
 *  - dgemm for the GEMM family at large shapes, the interpreter finishing any
 *    epilogue (the product's result becomes an input of the remaining kernel): the
 *    device's own f64 GEMM when it has one (cuBLAS on a GPU: milliseconds where the
 *    host's dgemm takes a second at 4096^3), else OpenBLAS on the host;
 *  - otherwise the promoted kernel JIT-compiled for the host.  This shares the LLVM
 *    back end with the kernel under test but none of the schedule: it is the naive
 *    loop nest in f64, which is how DESIGN.md asks the large non-GEMM case be done. */
#include "runtime.h"

#include <stdlib.h>
#include <string.h>

#ifdef PERFC_HAVE_LLVM
#include "../codegen/llvm/cg_llvm.h"
#endif

/* Above this many flops + statement executions the interpreter would dominate a
 * run: it does about 8e7 of them a second (Release build, 256^3 and 512^3 GEMM on
 * the 2-core EPYC of docs/harness.md), so this is about 0.6 s per check. */
#define RT_INTERP_MAX_WORK 5e7

/* ---- cloning with promotion ---- */

typedef struct Clone {
    const Kernel *src;
    Kernel *dst;
    Var **vars;         /* by source variable id */
    Buffer **bufs;      /* by source buffer id */
    bool promote;
} Clone;

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
    for (int i = 0; i < from->n; i++)
        ir_list_push(to, cl_node(c, from->v[i]), r);
    return r;
}

/* A copy of k, promoted or not, without the top-level nodes in skip (n entries,
 * -1 ignored), with buffer make_input turned into an input (-1: none). */
static Kernel *clone_kernel(const Kernel *k, bool promote, const int *skip, int nskip, int make_input)
{
    Clone c = {.src = k, .promote = promote};
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
        bool skipped = false;
        for (int j = 0; j < nskip; j++)
            skipped |= skip[j] == i;
        if (!skipped)
            ir_list_push(&c.dst->body, cl_node(&c, k->body.v[i]), NULL);
    }
    free(c.vars);
    free(c.bufs);
    return c.dst;
}

Kernel *ir_promote_f64(const Kernel *k)
{
    return clone_kernel(k, true, NULL, 0, -1);
}

/* ---- the reference ---- */

struct RtGolden {
    RtGoldenKind kind;
    const Kernel *u;
    Kernel *promoted;   /* INTERP and JIT */
    Kernel *rest;       /* BLAS: what follows the product, NULL when nothing does */
    RtGemm gemm;
    RtDevice *dev;      /* BLAS through dev->gemm_f64; NULL: OpenBLAS */
    char name[96];
#ifdef PERFC_HAVE_LLVM
    JitKernel *jit;
#endif
};

RtGolden *rt_golden_new(const Kernel *u, const RtWork *w, RtDevice *dev, Diags *d)
{
    RtGolden *g = xcalloc(1, sizeof *g);
    g->u = u;
    double work = w->flops + w->execs;
    /* dev->gemm_f64 with no product asks whether the device's library loads */
    bool dev_blas = dev && dev->gemm_f64 && w->is_gemm && w->flops + w->execs > RT_INTERP_MAX_WORK &&
                    dev->gemm_f64(dev, NULL, NULL, NULL, NULL, d);
    if (work <= RT_INTERP_MAX_WORK) {
        g->kind = RT_GOLDEN_INTERP;
    } else if (w->is_gemm && (dev_blas || rt_blas_available()) && w->rest_work <= RT_INTERP_MAX_WORK) {
        g->kind = RT_GOLDEN_BLAS;
        g->dev = dev_blas ? dev : NULL;
    } else {
#ifdef PERFC_HAVE_LLVM
        g->kind = RT_GOLDEN_JIT;
#else
        diag_plain(d, DIAG_WARNING,
                   "this perfc has no LLVM: the f64 interpreter computes the reference for this large "
                   "kernel, which may take a while");
        g->kind = RT_GOLDEN_INTERP;
#endif
    }

    if (g->kind == RT_GOLDEN_BLAS) {
        g->gemm = w->gemm;
        if (w->gemm.epilogue) {
            Kernel *p = ir_promote_f64(u);
            g->rest = clone_kernel(p, false, w->gemm_nodes, 2, w->gemm.c);
            ir_free(p);
            if (g->rest->body.n == 0) {
                ir_free(g->rest);
                g->rest = NULL;
            }
        }
        snprintf(g->name, sizeof g->name, "%s%s", g->dev ? g->dev->gemm_f64_name : "openblas-dgemm",
                 g->rest ? "+interpreter" : "");
    } else {
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
        snprintf(g->name, sizeof g->name, "%s",
                 g->kind == RT_GOLDEN_INTERP ? "interpreter-f64" : "unscheduled-f64-jit");
#ifdef PERFC_HAVE_LLVM
        if (g->kind == RT_GOLDEN_JIT && !(g->jit = cg_llvm_jit(g->promoted, "host", d))) {
            diag_plain(d, DIAG_ERROR, "could not compile the f64 reference of kernel %s", u->name);
            rt_golden_free(g);
            return NULL;
        }
#endif
    }
    return g;
}

RtGoldenKind rt_golden_kind(const RtGolden *g)
{
    return g->kind;
}

const char *rt_golden_name(const RtGolden *g)
{
    return g->name;
}

#ifdef PERFC_HAVE_LLVM
/* The JIT takes native layouts: f64 arrays pass straight through, integer buffers
 * (the only ones not widened) travel through scratch copies. */
static bool run_jit(RtGolden *g, double **bufs, Diags *d)
{
    const Kernel *p = g->promoted;
    void **args = xcalloc((size_t)(p->nbufs ? p->nbufs : 1), sizeof *args);
    bool ok = true;
    for (int i = 0; i < p->nbufs && ok; i++) {
        const Buffer *b = p->bufs[i];
        if (b->dtype == DT_F64) {
            args[i] = bufs[i];
            continue;
        }
        int64_t n = ir_buffer_elems(p, b);
        size_t bytes = (size_t)(n > 0 ? n : 1) * (size_t)dtype_bytes(b->dtype);
        args[i] = aligned_alloc(CG_BUF_ALIGN, (bytes + CG_BUF_ALIGN - 1) / CG_BUF_ALIGN * CG_BUF_ALIGN);
        if (!args[i])
            die("out of memory");
        if (b->kind == BUF_IN)
            rt_to_native(b->dtype, bufs[i], args[i], n);
    }
    cg_jit_run(g->jit, args);
    for (int i = 0; i < p->nbufs; i++) {
        const Buffer *b = p->bufs[i];
        if (b->dtype == DT_F64)
            continue;
        if (b->kind != BUF_IN)
            rt_from_native(b->dtype, args[i], bufs[i], ir_buffer_elems(p, b));
        free(args[i]);
    }
    free(args);
    (void)d;
    return ok;
}
#endif

bool rt_golden_compute(RtGolden *g, double **bufs, Diags *d)
{
    switch (g->kind) {
    case RT_GOLDEN_INTERP:
        return ir_interp(g->promoted, bufs, d);
    case RT_GOLDEN_BLAS:
        if (g->dev ? !g->dev->gemm_f64(g->dev, &g->gemm, bufs[g->gemm.a], bufs[g->gemm.b], bufs[g->gemm.c], d)
                   : !rt_blas_gemm_f64(&g->gemm, bufs[g->gemm.a], bufs[g->gemm.b], bufs[g->gemm.c], d))
            return false;
        return !g->rest || ir_interp(g->rest, bufs, d);
    case RT_GOLDEN_JIT:
#ifdef PERFC_HAVE_LLVM
        return run_jit(g, bufs, d);
#else
        break;
#endif
    }
    die("golden kind %d", (int)g->kind);
}

void rt_golden_free(RtGolden *g)
{
    if (!g)
        return;
#ifdef PERFC_HAVE_LLVM
    if (g->jit)
        cg_jit_free(g->jit);
#endif
    ir_free(g->promoted);
    ir_free(g->rest);
    free(g);
}
