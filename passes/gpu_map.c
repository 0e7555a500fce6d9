/* GPU target lowering, pass `gpu-map`: the thread mapping of unscheduled launches.
 *
 * Each top-level node of the kernel becomes one CUDA launch.  A node the schedule
 * bound to no block.* / thread.* loop still has to use the GPU's threads: this pass
 * marks its outer perfectly nested loops `grid`, as many as are provably parallel,
 * and codegen/cuda runs one thread per iteration of that chain, flattened onto a
 * 1-D grid with the innermost loop varying fastest (coalesced for row-major
 * outputs).  The rest of the node runs serially inside each thread.
 *
 * Why it is legal: a set F of loops may run one iteration per thread when (1) for
 * every statement below that writes shared or global memory, each variable of F
 * occurs in some index dimension whose map from its variables is injective over
 * their constant loop box (one variable, or mixed-radix coefficients), so no two
 * iterations of F write one element; and (2) every read of a buffer written below
 * uses the same index expressions as a write of it, so an iteration reads only
 * elements it wrote itself.  Local buffers are each thread's own.  A chain that
 * fails the test stays serial: at worst one thread runs the node, correct before
 * fast.  The interpreter runs grid loops serially, which is their meaning.
 *
 * Scatters (`Y[T[i], d] += X[i, d]`, docs/language.md) fail test (1) on their
 * terms' loop i: T[i] may name one element twice.  Their update is a `+=` of
 * global memory of a type CUDA adds atomically (f32, f64, i32), at an index that
 * holds a tensor value, into a buffer the launch neither reads nor writes
 * otherwise; such a statement may run from many threads at once when each update
 * is one atomic read-modify-write, which changes only the order of the terms (a
 * sum may be reassociated: docs/schedules.md; integers are exact).  So where the
 * chain stops at a loop that only such statements keep serial, the loop becomes
 * `grid` too and the statements are marked `atomic` (atomicAdd in codegen/cuda).
 * Those loops are then moved outermost in the chain (all of it is parallel, so
 * any order is legal), leaving the destination's plain indices innermost: a
 * warp's threads read X[i, d..d+31] and add into Y[T[i], d..d+31], coalesced.
 *
 * An mma or wgmma triple in such a launch is refused here: which threads form its
 * warp is what the schedule's thread.y/z loops say, and there are none. */
#include <stdlib.h>
#include <string.h>

#include "gpu_int.h"

typedef struct ParCtx {
    const Kernel *k;
    const Node *top;
    const Var **F;
    int nf;
    bool ok;
    uint8_t *wr;            /* buffers written in top, by id */
    const uint8_t *atom;    /* buffers only scatters update (atomics may), or NULL */
} ParCtx;

static bool idx_has_load(const Expr *x)
{
    if (!x) return false;
    if (x->kind == IE_LOAD) return true;
    for (int i = 0; i < ir_expr_arity(x->kind); i++)
        if (idx_has_load(x->args[i])) return true;
    return false;
}

/* A scatter's update that an atomic add can do: `+=` of global f32/f64/i32 memory
 * at an index with a tensor value in it. */
static bool scatter_update(const Node *n)
{
    const Buffer *b = n->u.stmt.buf;
    if (n->u.stmt.op != SOP_ADD || b->mem != MEM_GLOBAL ||
        !(b->dtype == DT_F32 || b->dtype == DT_F64 || b->dtype == DT_I32))
        return false;
    for (int d = 0; d < b->rank; d++)
        if (idx_has_load(n->u.stmt.idx[d])) return true;
    return false;
}

static void loads_of(const Expr *x, uint8_t *rd)
{
    if (!x) return;
    if (x->kind == IE_LOAD) rd[x->u.load.buf->id] = 1;
    int n = x->kind == IE_LOAD ? x->u.load.buf->rank : ir_expr_arity(x->kind);
    for (int i = 0; i < n; i++)
        loads_of(x->kind == IE_LOAD ? x->u.load.idx[i] : x->args[i], rd);
}

/* atom[b] = 1 for the buffers of top that scatter updates alone write and nothing
 * in top reads; bad[b]: written some other way, or read. */
static void atomic_bufs(const Node *n, uint8_t *atom, uint8_t *bad)
{
    switch (n->kind) {
    case N_STMT:
        if (scatter_update(n)) atom[n->u.stmt.buf->id] = 1;
        else bad[n->u.stmt.buf->id] = 1;
        for (int i = 0; i < n->u.stmt.buf->rank; i++) loads_of(n->u.stmt.idx[i], bad);
        loads_of(n->u.stmt.value, bad);
        return;
    case N_LOOP: loads_of(n->u.loop.lo, bad); loads_of(n->u.loop.hi, bad); break;
    case N_IF: loads_of(n->u.guard.cond, bad); break;
    case N_PREFETCH: return;
    }
    const NodeList *body = ir_body((Node *)n);
    for (int i = 0; body && i < body->n; i++) atomic_bufs(body->v[i], atom, bad);
}

static void mark_atomic(Node *n, const uint8_t *atom)
{
    if (n->kind == N_STMT) {
        if (atom[n->u.stmt.buf->id]) n->u.stmt.atomic = true;
        return;
    }
    NodeList *body = ir_body(n);
    for (int i = 0; body && i < body->n; i++) mark_atomic(body->v[i], atom);
}

static void par_stmts(ParCtx *p, const Node *n)
{
    if (!p->ok) return;
    if (n->kind == N_STMT) {
        const Buffer *b = n->u.stmt.buf;
        if (b->mem == MEM_LOCAL) return;
        if (p->atom && p->atom[b->id]) return; /* updated atomically */
        for (int f = 0; f < p->nf && p->ok; f++) {
            bool found = false;
            for (int dd = 0; dd < b->rank && !found; dd++) {
                GAff a = {.ok = true};
                gpu_aff_of(p->k, n->u.stmt.idx[dd], 1, &a);
                if (!a.ok) continue;
                bool has = false;
                for (int i = 0; i < a.n; i++)
                    has |= a.v[i] == p->F[f] && a.c[i] != 0;
                found = has && gpu_aff_injective(p->k, p->top, &a);
            }
            p->ok = found;
        }
        return;
    }
    const NodeList *body = ir_body((Node *)n);
    for (int i = 0; i < body->n; i++)
        par_stmts(p, body->v[i]);
}


static bool written_same(const Node *n, const Expr *ld)
{
    if (n->kind == N_STMT) {
        if (n->u.stmt.buf != ld->u.load.buf) return false;
        for (int i = 0; i < ld->u.load.buf->rank; i++)
            if (!gpu_same_expr(n->u.stmt.idx[i], ld->u.load.idx[i])) return false;
        return true;
    }
    const NodeList *body = ir_body((Node *)n);
    for (int i = 0; i < body->n; i++)
        if (written_same(body->v[i], ld)) return true;
    return false;
}

static void writes(const Node *n, uint8_t *wr)
{
    if (n->kind == N_STMT) wr[n->u.stmt.buf->id] = 1;
    const NodeList *body = ir_body((Node *)n);
    for (int i = 0; body && i < body->n; i++) writes(body->v[i], wr);
}

static void par_loads_expr(ParCtx *p, const Expr *x)
{
    if (!x || !p->ok) return;
    if (x->kind == IE_LOAD) {
        const Buffer *b = x->u.load.buf;
        if (b->mem != MEM_LOCAL && p->wr[b->id] && !written_same(p->top, x))
            p->ok = false;
        for (int i = 0; i < b->rank; i++)
            par_loads_expr(p, x->u.load.idx[i]);
        return;
    }
    for (int i = 0; i < ir_expr_arity(x->kind); i++)
        par_loads_expr(p, x->args[i]);
}

static void par_loads(ParCtx *p, const Node *n)
{
    switch (n->kind) {
    case N_STMT:
        for (int i = 0; i < n->u.stmt.buf->rank; i++)
            par_loads_expr(p, n->u.stmt.idx[i]);
        par_loads_expr(p, n->u.stmt.value);
        return;
    case N_LOOP:
        par_loads_expr(p, n->u.loop.lo);
        par_loads_expr(p, n->u.loop.hi);
        break;
    case N_IF:
        par_loads_expr(p, n->u.guard.cond);
        break;
    case N_PREFETCH: return;
    }
    const NodeList *body = ir_body((Node *)n);
    for (int i = 0; i < body->n; i++)
        par_loads(p, body->v[i]);
}

static bool par_ok(const Kernel *k, const Node *top, const Var **F, int nf, uint8_t *wr, const uint8_t *atom)
{
    ParCtx p = {k, top, F, nf, true, wr, atom};
    par_stmts(&p, top);
    if (p.ok) par_loads(&p, top);
    return p.ok;
}

/* A tensor-core triple in a launch that binds no warps: its lanes are not known. */
static const Node *tc_loop(const Node *n)
{
    if (n->kind == N_LOOP && (n->u.loop.kind == LOOP_MMA || n->u.loop.kind == LOOP_WGMMA))
        return n;
    const NodeList *body = ir_body((Node *)n);
    for (int i = 0; body && i < body->n; i++) {
        const Node *t = tc_loop(body->v[i]);
        if (t) return t;
    }
    return NULL;
}

bool gpu_map_pass(Kernel *k, Diags *d)
{
    size_t nb = (size_t)k->nbufs + 1;
    uint8_t *wr = xcalloc(nb * 3, 1), *atom = wr + nb, *bad = atom + nb;
    for (int t = 0; t < k->body.n; t++) {
        Node *top = k->body.v[t];
        if (gpu_scheduled(top))
            continue;
        memset(wr, 0, nb * 3);
        writes(top, wr);
        atomic_bufs(top, atom, bad);
        bool any_atom = false;
        for (size_t b = 0; b < nb; b++) {
            atom[b] = atom[b] && !bad[b];
            any_atom |= atom[b];
        }
        Node *chain[16];
        const Var *F[16];
        bool by_atomics[16];
        int nf = 0, natom = 0;
        Node *n = top;
        while (n->kind == N_LOOP && nf < 16) {
            int64_t lo, ext;
            if (!gpu_loop_extent(k, n, &lo, &ext))
                break;
            F[nf] = n->u.loop.var;
            by_atomics[nf] = false;
            if (!par_ok(k, top, F, nf + 1, wr, NULL)) {
                if (!any_atom || !par_ok(k, top, F, nf + 1, wr, atom))
                    break;
                by_atomics[nf] = true;
                natom++;
            }
            chain[nf++] = n;
            if (n->u.loop.body.n != 1 || n->u.loop.body.v[0]->kind != N_LOOP)
                break;
            n = n->u.loop.body.v[0];
        }
        if (natom) {
            /* the loops only atomics make parallel go outermost: swap the headers of
             * the perfectly nested chain (constant bounds, so any order is the same
             * set of iterations) */
            struct Head { Var *var; Expr *lo, *hi; Span span; } h[16];
            int m = 0;
            for (int pass = 0; pass < 2; pass++)
                for (int i = 0; i < nf; i++)
                    if (by_atomics[i] == (pass == 0))
                        h[m++] = (struct Head){chain[i]->u.loop.var, chain[i]->u.loop.lo, chain[i]->u.loop.hi,
                                       chain[i]->span};
            for (int i = 0; i < nf; i++) {
                chain[i]->u.loop.var = h[i].var;
                chain[i]->u.loop.lo = h[i].lo;
                chain[i]->u.loop.hi = h[i].hi;
                chain[i]->span = h[i].span;
            }
            mark_atomic(top, atom);
        }
        for (int i = 0; i < nf; i++)
            chain[i]->u.loop.kind = LOOP_GRID;
        const Node *tc = tc_loop(top);
        if (tc) {
            /* a triple whose warp cannot be known is refused rather than run per thread */
            diag_error(d, tc->span, "loop %s is marked %s but its launch binds no warps (bind the loops "
                       "around it to block.* and thread.y/z; docs/cuda.md)", tc->u.loop.var->name,
                       loop_kind_name(tc->u.loop.kind));
            free(wr);
            return false;
        }
    }
    free(wr);
    return true;
}
