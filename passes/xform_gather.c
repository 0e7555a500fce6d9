/* gather(buffer, loop[, mem=local|shared][, name=N]): stage what one read of a
 * buffer takes in each iteration of a loop, shaped by the loops that move the read
 * rather than by the box it touches.
 *
 *     for ko { for mi { for ct { .. X?[mi / 196, mi % 196 / 14 + ko / 6 - 1, .., ko % 2 * 32 + ct] .. } } }
 *  => for ko { for g0 in 0..BM { for g1 in 0..32 { Xs[g0, g1] = X?[g0 / 196, .., ko % 2 * 32 + g1] } }
 *              for mi { for ct { .. Xs[mi, ct] .. } } }
 *
 * cache (passes/xform_cache.c) copies the box of elements an iteration touches; when
 * the read's indices fold several loops into one dimension, or one loop into
 * several, with division and remainder, that box is much larger than what is read,
 * and it is not laid out as the loops walk it.  A convolution written as a product
 * over output pixels m = (n, y, x) reads the image at (y + r, x + s): per step of
 * the reduction the rows a tile of m reads are scattered across the image (with
 * zeros where a tap falls in the padding), and the matrix a tensor-core product
 * wants is exactly what gather builds: one row per m, one column per channel (the
 * im2col matrix, a tile at a time, never materialised whole).
 *
 * The staged buffer has one dimension per loop inside `loop` that encloses the read
 * and whose variable its indices use, of that loop's extent, ordered by the last
 * dimension of the buffer each one moves (so that the contiguous one stays last),
 * and by nest order among equals; the
 * copy nest walks those loops' ranges and performs the read itself (a guarded read,
 * of a padded input or a padded tile, stays guarded: its zeros are copied), and the
 * read becomes Xs[v0 - lo0, v1 - lo1, ..].
 *
 * Legal because the buffer is not written inside the loop, so each value copied is
 * the value the read would have taken, and each read takes the copy of its own
 * point: distinct points of those loops have distinct places in Xs, and the loops
 * the read does not use leave its indices, hence its value, unchanged.  Where a
 * guard lies between the loop and the read, some points were never read and their
 * copy may leave the buffer: only a guarded read (which gives its pad there), or one
 * whose indices stay inside the buffer over the loops' whole ranges, may be staged
 * from beneath one.
 *
 * A buffer the loop only writes, by one statement that replaces elements (`=`), is
 * staged the other way: the statement writes the tile (one dimension per loop that
 * moves the write, in nest order), and a copy nest after the body writes the tile
 * back through the statement's own indices (guarded as it was: a padded tile's
 * rows past the end are dropped).  A convolution's result rows are scattered
 * pixels, and a tile of them is written back in whole rows of channels, 16 bytes
 * a thread, instead of two elements at a time from the accumulator fragments.
 * Legal because nothing in the loop reads the buffer, every point of those loops
 * writes its place of the tile (no guard lies between, every loop runs), and the
 * copy back walks the points in the order the statement did, so an element two
 * points write keeps the later one's value, as before.
 *
 * A buffer the loop both reads and writes, every access at the same place (an
 * accumulator, `Y[f] = 0; .. Y[f] += ..`: a convolution with an f32 result), is
 * staged whole: copied in at the start of the iteration, every access redirected,
 * copied back at the end (gpu-dead-fill drops the copy in where the first access
 * overwrites the tile).  Legal when no two points of the loops that move it reach
 * one element (the dependence test, the loops outside equal), so each keeps its
 * own place, and no guard lies between (the copies run over every point).
 *
 * Refused: accesses at different places, or an update that reaches one element
 * from two points, accesses of a read or written buffer in more than one statement, loops
 * between with bounds that are not constants, a guard over a staged write, a shared
 * copy inside a parallel loop, more than 8 dimensions or 2^24 elements. */
#include <string.h>

#include "../ir/arith.h"
#include "xform_int.h"

typedef struct Gather {
    Kernel *k;
    Buffer *from, *to;
    Node *dims[8]; /* the loops the read moves with, outermost first */
    int64_t lo[8];
    int n;
} Gather;

static Expr **staged_idx(Gather *g);

static void redirect_cb(Expr *e, void *p)
{
    Gather *g = p;
    if (e->kind != IE_LOAD || e->u.load.buf != g->from)
        return;
    e->u.load.idx = staged_idx(g);
    e->u.load.buf = g->to;
    e->u.load.guarded = false;
    e->dtype = g->to->dtype;
}

/* Whether every index of a read of b lies inside b over the whole ranges of the
 * loops (guards ignored): then the read may be performed at points a guard skipped. */
static bool in_bounds(const Kernel *k, const Buffer *b, Expr *const *idx)
{
    for (int d = 0; d < b->rank; d++) {
        int64_t lo, hi, n;
        if (!ar_const(k, b->shape[d], &n) || !ar_interval_loops(k, idx[d], &lo, &hi) || lo < 0 || hi >= n)
            return false;
    }
    return true;
}

/* The staged index of the read or store: the moving loops' variables, from 0. */
static Expr **staged_idx(Gather *g)
{
    Expr **idx = arena_alloc(g->k->arena, sizeof(Expr *) * (size_t)(g->n ? g->n : 1));
    for (int d = 0; d < g->n; d++)
        idx[d] = ir_simplify(g->k, ir_bin(g->k, IE_SUB, ir_var(g->k, g->dims[d]->u.loop.var), ir_int(g->k, g->lo[d])));
    if (g->n == 0)
        idx[0] = ir_int(g->k, 0);
    return idx;
}

/* The copy nest through the access's indices idx: for c0 in 0..E0 { .. { to[c0, ..] =
 * from?[idx with v_d := lo_d + c_d] } }, or back (out) from?[idx ..] = to[c0, ..];
 * guarded (the global side's range tested) when the access was. */
static Node *copy_nest(Gather *g, Expr *const *idx, bool guarded, bool out, Node *at)
{
    Kernel *k = g->k;
    Node *top = NULL, *cur = NULL;
    Var *cv[8];
    Expr *with[8];
    const Var *vars[8];
    for (int d = 0; d < g->n; d++) {
        int64_t hi;
        xf_const(k, g->dims[d]->u.loop.hi, &hi);
        cv[d] = ir_new_var(k, xf_fresh_name(k, arena_printf(k->arena, "%s_c%d", g->to->name, d)));
        Node *x = ir_loop(k, cv[d], ir_int(k, 0), ir_int(k, hi - g->lo[d]), at->span);
        if (cur)
            ir_list_push(&cur->u.loop.body, x, cur);
        else
            top = x;
        cur = x;
        vars[d] = g->dims[d]->u.loop.var;
        with[d] = ir_simplify(k, ir_bin(k, IE_ADD, ir_int(k, g->lo[d]), ir_var(k, cv[d])));
    }
    Expr **gidx = arena_alloc(k->arena, sizeof(Expr *) * (size_t)g->from->rank);
    for (int d = 0; d < g->from->rank; d++)
        gidx[d] = xf_simplify_affine(
            k, xf_subst_expr(k, idx[d], vars, with, g->n));
    Expr **lidx = arena_alloc(k->arena, sizeof(Expr *) * (size_t)(g->n ? g->n : 1));
    for (int d = 0; d < g->n; d++)
        lidx[d] = ir_var(k, cv[d]);
    if (g->n == 0)
        lidx[0] = ir_int(k, 0);
    Node *s;
    if (out) {
        Expr *ld = ir_cast(k, ir_load(k, g->to, lidx), dtype_compute(g->from->dtype));
        s = ir_stmt(k, g->from, gidx, SOP_ASSIGN, ld, at->span);
        s->u.stmt.guarded = guarded;
    } else {
        Expr *ld = ir_load(k, g->from, gidx);
        ld->u.load.guarded = guarded;
        s = ir_stmt(k, g->to, lidx, SOP_ASSIGN, ir_cast(k, ld, dtype_compute(g->to->dtype)), at->span);
    }
    if (cur)
        ir_list_push(&cur->u.loop.body, s, cur);
    else
        top = s;
    return top;
}

/* The loops between l and statement s whose variables idx uses (outermost first)
 * into g; false (with the reason) when a guard lies between or a loop has bounds
 * that are not constants or runs no iterations. */
static bool moving_loops(XfCtx *c, Node *l, Node *s, Expr *const *idx, const Buffer *b, Gather *g)
{
    Node *chain[64];
    int nc = 0;
    for (Node *p = s->parent; p && p != l && nc < 64; p = p->parent)
        chain[nc++] = p;
    g->n = 0;
    for (int i = nc - 1; i >= 0; i--) {
        Node *p = chain[i];
        if (p->kind != N_LOOP) {
            xf_err(c, "%s is accessed under a guard inside %s; its staged tile would be copied whole, elements the "
                      "guard skipped included",
                   b->name, l->u.loop.var->name);
            return false;
        }
        int64_t lo, hi;
        if (!xf_const(c->k, p->u.loop.lo, &lo) || !xf_const(c->k, p->u.loop.hi, &hi) || hi <= lo) {
            xf_err(c, "the bounds of %s are not constants (or it runs no iterations); the gathered tile needs a "
                      "fixed extent per loop",
                   p->u.loop.var->name);
            return false;
        }
        bool uses = false;
        for (int d = 0; d < b->rank; d++)
            uses |= ir_expr_uses_var(idx[d], p->u.loop.var);
        if (!uses)
            continue;
        if (g->n == 8) {
            xf_err(c, "the access of %s moves with more than 8 loops inside %s", b->name, l->u.loop.var->name);
            return false;
        }
        g->dims[g->n] = p;
        g->lo[g->n++] = lo;
    }
    return true;
}

static void redirect_store(Gather *g, Node *n)
{
    if (n->kind == N_STMT) {
        if (n->u.stmt.buf == g->from) {
            n->u.stmt.idx = staged_idx(g);
            n->u.stmt.buf = g->to;
            n->u.stmt.guarded = false;
        }
        return;
    }
    NodeList *b = ir_body(n);
    for (int i = 0; b && i < b->n; i++)
        redirect_store(g, b->v[i]);
}

/* A buffer the loop both reads and writes, every access at the same place (an
 * accumulator: `Y[f(m, j)] = 0; .. Y[f(m, j)] += ..`): staged whole, copied in at
 * the start of the iteration and back at its end.  Legal when f is one to one over
 * the loops that move it (the dependence test finds no two points of them, the
 * loops outside equal, at the same element): each point then has its own element,
 * kept in its own place of the tile for the iteration. */
static bool gather_update(XfCtx *c, Buffer *b, Node *l, const AccVec *acc, MemSpace mem, const char *name)
{
    const Access *first = NULL, *w = NULL;
    Gather g = {.k = c->k, .from = b};
    bool guarded = false;
    for (int i = 0; i < acc->n; i++) {
        const Access *a = &acc->v[i];
        if (a->buf != b)
            continue;
        guarded |= a->load ? a->load->u.load.guarded : a->stmt->u.stmt.guarded;
        if (a->write && !w)
            w = a;
        if (!first) {
            first = a;
            if (!moving_loops(c, l, a->stmt, a->idx, b, &g))
                return false;
            continue;
        }
        for (int d = 0; d < b->rank; d++)
            if (!xf_expr_equal(c->k, a->idx[d], first->idx[d])) {
                xf_err(c, "%s is accessed at two different places inside %s; gather stages one", b->name,
                       l->u.loop.var->name);
                return false;
            }
        Gather h = g;
        if (!moving_loops(c, l, a->stmt, a->idx, b, &h))
            return false;
        bool same = h.n == g.n;
        for (int d = 0; same && d < g.n; d++)
            same = h.dims[d] == g.dims[d];
        if (!same) {
            xf_err(c, "the accesses of %s inside %s move with different loops", b->name, l->u.loop.var->name);
            return false;
        }
    }
    /* one to one: no two points of the moving loops (the enclosing loops, l
     * included, the same) reach the same element */
    DepRel rel[40];
    int nr = 0;
    for (Node *p = l; p && nr < 32; p = p->parent)
        if (p->kind == N_LOOP)
            rel[nr++] = (DepRel){p->u.loop.var, p->u.loop.var, 0};
    for (int i = 0; i < g.n; i++) {
        int q = nr;
        for (int j = 0; j < i; j++)
            rel[q++] = (DepRel){g.dims[j]->u.loop.var, g.dims[j]->u.loop.var, 0};
        rel[q++] = (DepRel){g.dims[i]->u.loop.var, g.dims[i]->u.loop.var, 1};
        if (dep_may_conflict(c->k, w, w, rel, q)) {
            xf_err(c, "%s may be reached at one element from two iterations of the loops inside %s (%s): a staged "
                      "tile would keep them apart",
                   b->name, l->u.loop.var->name, g.dims[i]->u.loop.var->name);
            return false;
        }
    }
    int64_t width[8], elems = 1;
    for (int d = 0; d < g.n; d++) {
        int64_t hi;
        xf_const(c->k, g.dims[d]->u.loop.hi, &hi);
        width[d] = hi - g.lo[d];
        elems *= width[d];
    }
    if (elems > (1 << 24)) {
        xf_err(c, "the gathered tile of %s in %s is too large to stage", b->name, l->u.loop.var->name);
        return false;
    }
    if (c->dry)
        return true;
    Kernel *k = c->k;
    if (g.n == 0)
        width[0] = 1;
    g.to = xf_add_temp(k, name, b->dtype, mem, g.n ? g.n : 1, width, l->span);
    xf_set_private(k, g.to, l, true);
    /* the copies through the first access's indices, guarded where any access was */
    Node *in = copy_nest(&g, first->idx, guarded, false, l), *out = copy_nest(&g, first->idx, guarded, true, l);
    for (int i = 0; i < l->u.loop.body.n; i++) {
        xf_visit_exprs(k, l->u.loop.body.v[i], redirect_cb, &g);
        redirect_store(&g, l->u.loop.body.v[i]);
    }
    ir_list_insert(&l->u.loop.body, 0, in, l);
    ir_list_push(&l->u.loop.body, out, l);
    return true;
}

bool xf_gather(XfCtx *c)
{
    Buffer *b = xf_arg_buffer(c, 0);
    Node *l = b ? xf_arg_loop(c, 1) : NULL;
    if (!l)
        return false;
    MemSpace mem;
    if (!xf_mem_kwarg(c, &mem, false))
        return false;
    const SchedArg *nm = xf_kwarg(c, "name");
    if (nm && (nm->kind != SARG_NAME || ir_find_buffer(c->k, nm->name) || ir_find_var(c->k, nm->name))) {
        xf_err(c, "name= needs a new buffer name");
        return false;
    }
    const Node *w;
    if (mem == MEM_SHARED && xf_inside_kind(l, LOOP_PARALLEL, true, &w)) {
        xf_err(c, "a shared copy would be shared by the iterations of parallel loop %s", w->u.loop.var->name);
        return false;
    }
    if (l->u.loop.kind == LOOP_VECTOR) {
        xf_err(c, "%s is a vector loop", l->u.loop.var->name);
        return false;
    }
    AccVec acc = {0};
    acc_collect(c->k, l, &acc);
    const Access *first = NULL;
    bool ok = true, reads = false, writes = false;
    /* (an update `+=` reads the element too: staged writes only replace) */
    for (int i = 0; i < acc.n; i++)
        if (acc.v[i].buf == b) {
            reads |= !acc.v[i].write || acc.v[i].update;
            writes |= acc.v[i].write;
        }
    if (reads && writes) {
        const char *name = nm ? nm->name
                              : xf_fresh_buffer_name(c->k, arena_printf(c->k->arena, "%s_%s", b->name,
                                                                         l->u.loop.var->name));
        bool r = gather_update(c, b, l, &acc, mem, name);
        acc_free(&acc);
        return r;
    }
    for (int i = 0; i < acc.n && ok; i++) {
        const Access *a = &acc.v[i];
        if (a->buf != b)
            continue;
        if (!first) {
            first = a;
        } else if (a->stmt != first->stmt || (!writes && a->load->u.load.guarded != first->load->u.load.guarded)) {
            xf_err(c, "%s is %s by more than one statement in %s; gather stages one access", b->name,
                   writes ? "written" : "read", l->u.loop.var->name);
            xf_note(c, a->stmt->span, "this statement %s it too", writes ? "writes" : "reads");
            ok = false;
        } else {
            for (int d = 0; d < b->rank && ok; d++)
                if (!xf_expr_equal(c->k, a->idx[d], first->idx[d])) {
                    xf_err(c, "%s is read at two different places in one statement; gather stages one read",
                           b->name);
                    ok = false;
                }
        }
    }
    if (ok && !first) {
        xf_err(c, "%s is not accessed in loop %s", b->name, l->u.loop.var->name);
        ok = false;
    }
    Gather g = {.k = c->k, .from = b};
    int64_t elems = 1;
    /* the loops between l and the access that move it, outermost first */
    Node *chain[64];
    int nc = 0;
    for (Node *p = ok ? first->stmt->parent : NULL; p && p != l && nc < 64; p = p->parent)
        chain[nc++] = p;
    for (int i = nc - 1; i >= 0 && ok; i--) {
        Node *p = chain[i];
        if (p->kind == N_IF) {
            if (writes) {
                xf_err(c, "the write of %s lies under a guard inside %s; its staged tile would be copied back "
                          "whole, elements the guard skipped included",
                       b->name, l->u.loop.var->name);
                ok = false;
            } else if (!first->load->u.load.guarded && !in_bounds(c->k, b, first->idx)) {
                xf_err(c, "the read of %s lies under a guard inside %s; staged for every point of the loops "
                          "around it, it could leave the buffer (only a guarded read, of a pad() input or a "
                          "padded tile, or one inside the buffer over the loops' whole ranges, can be gathered "
                          "from there)",
                       b->name, l->u.loop.var->name);
                ok = false;
            }
            continue;
        }
        if (p->kind != N_LOOP)
            continue;
        bool uses = false;
        for (int d = 0; d < b->rank; d++)
            uses |= ir_expr_uses_var(first->idx[d], p->u.loop.var);
        int64_t lo, hi;
        bool cst = xf_const(c->k, p->u.loop.lo, &lo) && xf_const(c->k, p->u.loop.hi, &hi);
        if (writes && (!cst || hi <= lo)) {
            /* every element of the tile is written before the copy back */
            xf_err(c, "loop %s around the write of %s may run no iterations; its staged tile would be copied "
                      "back unwritten",
                   p->u.loop.var->name, b->name);
            ok = false;
            continue;
        }
        if (!uses)
            continue;
        if (!cst) {
            xf_err(c, "the bounds of %s are not constants; the gathered tile needs a fixed extent per loop",
                   p->u.loop.var->name);
            ok = false;
        } else if (g.n == 8) {
            xf_err(c, "the %s of %s moves with more than 8 loops inside %s", writes ? "write" : "read", b->name,
                   l->u.loop.var->name);
            ok = false;
        } else {
            g.dims[g.n] = p;
            g.lo[g.n++] = lo;
            elems *= hi > lo ? hi - lo : 1;
            if (elems > (1 << 24)) {
                xf_err(c, "the gathered tile of %s in %s is too large to stage", b->name, l->u.loop.var->name);
                ok = false;
            }
        }
    }
    /* the staged dimensions in the order of the buffer's dimensions that move with
     * them, innermost last (a weight read F[r, s, c, k] inside loops over k, then c
     * is staged [c, k]: rows of contiguous elements either way), nest order among
     * equals */
    int key[8];
    for (int d = 0; ok && !writes && d < g.n; d++) {
        key[d] = -1;
        for (int q = 0; q < b->rank; q++)
            if (ir_expr_uses_var(first->idx[q], g.dims[d]->u.loop.var))
                key[d] = q;
    }
    for (int i = 1; ok && !writes && i < g.n; i++)
        for (int j = i; j > 0 && key[j - 1] > key[j]; j--) {
            int tk = key[j];
            key[j] = key[j - 1], key[j - 1] = tk;
            Node *tn = g.dims[j];
            g.dims[j] = g.dims[j - 1], g.dims[j - 1] = tn;
            int64_t tl = g.lo[j];
            g.lo[j] = g.lo[j - 1], g.lo[j - 1] = tl;
        }
    Expr *read = ok ? first->load : NULL;
    Node *store = ok && writes ? first->stmt : NULL;
    acc_free(&acc);
    if (!ok)
        return false;
    if (c->dry)
        return true;

    Kernel *k = c->k;
    const char *name = nm ? nm->name
                          : xf_fresh_buffer_name(k, arena_printf(k->arena, "%s_%s", b->name, l->u.loop.var->name));
    int64_t width[8];
    for (int d = 0; d < g.n; d++) {
        int64_t hi;
        xf_const(k, g.dims[d]->u.loop.hi, &hi);
        width[d] = hi - g.lo[d];
    }
    if (g.n == 0)
        width[0] = 1;
    g.to = xf_add_temp(k, name, b->dtype, mem, g.n ? g.n : 1, width, l->span);
    xf_set_private(k, g.to, l, true);
    /* the copy reads the original indices, so it is built before the redirection */
    Node *cp = store ? copy_nest(&g, store->u.stmt.idx, store->u.stmt.guarded, true, l)
                     : copy_nest(&g, read->u.load.idx, read->u.load.guarded, false, l);
    if (store) {
        store->u.stmt.idx = staged_idx(&g);
        store->u.stmt.buf = g.to;
        store->u.stmt.guarded = false;
        ir_list_push(&l->u.loop.body, cp, l);
        return true;
    }
    for (int i = 0; i < l->u.loop.body.n; i++)
        xf_visit_exprs(k, l->u.loop.body.v[i], redirect_cb, &g);
    ir_list_insert(&l->u.loop.body, 0, cp, l);
    return true;
}
