/* Loop transformations: split, tile, reorder, fuse, distribute, and the execution
 * marks unroll, vectorize and parallel.
 *
 * split is always legal (it renumbers iterations without changing their order); its
 * tail, when the factor may not divide the extent, is either guarded inside the
 * inner loop, peeled into a loop of its own, or padded: the loop runs on to a
 * multiple of the factor where that is harmless (xform_pad.c).  reorder and tile are legal when no
 * dependence's direction vector becomes lexicographically negative; fuse when no
 * conflict would run the second loop's instance before the first's; parallel and
 * vectorize when the loop carries no dependence at all (reductions included: two
 * threads adding into one element race); reverse under the same condition as
 * parallel.  Reductions into one element with the
 * same operator may be reordered among themselves (see docs/schedules.md). */
#include <stdlib.h>
#include <string.h>

#include "xform_int.h"

enum { MAXBAND = 8, MAXDIRS = 6561 };

static const char *kind_word(LoopKind k)
{
    return k == LOOP_SERIAL ? "serial" : loop_kind_name(k);
}

static bool need_serial(XfCtx *c, Node *l)
{
    if (l->u.loop.kind == LOOP_SERIAL)
        return true;
    xf_err(c, "loop %s is already marked %s; restructure loops before marking them",
           l->u.loop.var->name, kind_word(l->u.loop.kind));
    return false;
}

static bool name_free(XfCtx *c, const char *name)
{
    if (name && ir_find_var(c->k, name)) {
        xf_err(c, "the name `%s` is already in use", name);
        return false;
    }
    return true;
}

/* ---------------- split ---------------- */

/* ---- a peeled tail's own private buffers ---- */

typedef struct Retarget {
    const Buffer *from;
    Buffer *to;
} Retarget;

static void retarget_load(Expr *e, void *p)
{
    Retarget *r = p;
    if (e->kind == IE_LOAD && e->u.load.buf == r->from)
        e->u.load.buf = r->to;
}

static void retarget_stores(Node *n, const Retarget *r)
{
    if (n->kind == N_STMT) {
        if (n->u.stmt.buf == r->from)
            n->u.stmt.buf = r->to;
        return;
    }
    NodeList *b = ir_body(n);
    for (int i = 0; b && i < b->n; i++)
        retarget_stores(b->v[i], r);
    if (n->kind == N_IF)
        for (int i = 0; i < n->u.guard.els.n; i++)
            retarget_stores(n->u.guard.els.v[i], r);
}

/* The innermost loop under n holding every access of b there (n itself when none). */
static Node *holder_of(Kernel *k, Node *n, const Buffer *b)
{
    AccVec acc = {0};
    acc_collect(k, n, &acc);
    Node *h = NULL;
    for (int i = 0; i < acc.n; i++) {
        if (acc.v[i].buf != b)
            continue;
        Node *s = acc.v[i].stmt;
        if (!h) {
            for (h = s->parent; h && h->kind != N_LOOP; h = h->parent)
                ;
            continue;
        }
        while (h && !xf_contains(h, s))
            for (h = h->parent; h && h->kind != N_LOOP; h = h->parent)
                ;
    }
    acc_free(&acc);
    return h ? h : n;
}

/* A private local temporary (cache, rfactor) whose whole life is inside l gets a
 * copy of its own in the peeled tail: otherwise no one loop holds all its
 * accesses, and the back end, which gives a private buffer a copy per iteration
 * of the loop that does, would share one copy among the threads of a parallel
 * loop in either part. */
static void tail_private_copies(Kernel *k, Node *l, Node *tail)
{
    AccVec all = {0};
    acc_collect(k, NULL, &all);
    int nb = k->nbufs;
    for (int i = 0; i < nb; i++) {
        Buffer *b = k->bufs[i];
        if (b->kind != BUF_TEMP || b->mem != MEM_LOCAL || b->nprivate_in == 0)
            continue;
        bool inside = true, any = false;
        for (int j = 0; j < all.n && inside; j++)
            if (all.v[j].buf == b) {
                any = true;
                inside = xf_contains(l, all.v[j].stmt) || xf_contains(tail, all.v[j].stmt);
            }
        int64_t w[8];
        bool cst = b->rank <= 8;
        for (int d = 0; cst && d < b->rank; d++)
            cst = xf_const(k, b->shape[d], &w[d]);
        if (!any || !inside || !cst)
            continue;
        Buffer *c = xf_add_temp(k, xf_fresh_buffer_name(k, arena_printf(k->arena, "%s_t", b->name)), b->dtype,
                                b->mem, b->rank, w, b->span);
        Retarget r = {b, c};
        xf_visit_exprs(k, tail, retarget_load, &r);
        retarget_stores(tail, &r);
        xf_set_private(k, c, holder_of(k, tail, c), true);
    }
    acc_free(&all);
}

void xf_do_split(Kernel *k, Node *l, int64_t f, const char *outer, const char *inner, SplitTail mode,
                 Node **po, Node **pi)
{
    bool peel = mode == TAIL_PEEL, pad = mode == TAIL_PAD;
    Var *v = l->u.loop.var;
    Expr *lo = l->u.loop.lo;
    Expr *ext = xf_simplify_affine(k, ir_bin(k, IE_SUB, ir_clone_expr(k, l->u.loop.hi), ir_clone_expr(k, lo)));
    /* An empty loop (hi < lo, as compute_at can leave past a guard) has a negative
     * difference, whose floor quotient and modulo would run the outer loop or a
     * peeled tail: count max(hi - lo, 0) iterations unless hi >= lo is provable. */
    if (!xf_prove_le(k, l->parent, lo, l->u.loop.hi))
        ext = ir_bin(k, IE_MAX, ext, ir_int(k, 0));
    /* A factor past a constant extent would only add a guard that fails for the
     * iterations beyond it: take the extent instead, so one schedule (a cache block
     * of 256) stays guard-free on a small size (K = 64).  A padded split keeps its
     * factor: its promise is that every tile has the factor's shape (a 16-row
     * product on a 64-row wgmma tile runs one tile, its last 48 rows padding). */
    int64_t n;
    if (!pad && ir_eval_size(k, ext, &n) && n > 0 && f > n)
        f = n;
    bool exact = xf_divides(k, ext, f);
    Var *vo = ir_new_var(k, outer ? outer : xf_fresh_name(k, arena_printf(k->arena, "%so", v->name)));
    Var *vi = ir_new_var(k, inner ? inner : xf_fresh_name(k, arena_printf(k->arena, "%si", v->name)));
    Expr *full = ir_simplify(k, ir_bin(k, IE_DIV, ir_clone_expr(k, ext), ir_int(k, f)));
    Expr *ceil = ir_simplify(k, ir_bin(k, IE_DIV, ir_bin(k, IE_ADD, ir_clone_expr(k, ext), ir_int(k, f - 1)),
                                       ir_int(k, f)));
    Expr *pos = ir_bin(k, IE_ADD, ir_bin(k, IE_MUL, ir_var(k, vo), ir_int(k, f)), ir_var(k, vi));
    Expr *vexpr = ir_simplify(k, ir_bin(k, IE_ADD, ir_clone_expr(k, lo), pos));

    /* The tail's copy is taken before the body is rewritten. */
    Node *tail = NULL;
    if (peel && !exact) {
        Var *vt = ir_new_var(k, xf_fresh_name(k, arena_printf(k->arena, "%st", v->name)));
        Expr *start = ir_bin(k, IE_ADD, ir_clone_expr(k, lo), ir_bin(k, IE_MUL, ir_clone_expr(k, full), ir_int(k, f)));
        Expr *vtail = ir_simplify(k, ir_bin(k, IE_ADD, start, ir_var(k, vt)));
        Expr *rem = ir_simplify(k, ir_bin(k, IE_MOD, ir_clone_expr(k, ext), ir_int(k, f)));
        tail = ir_loop(k, vt, ir_int(k, 0), rem, l->span);
        for (int i = 0; i < l->u.loop.body.n; i++) {
            Node *b = xf_clone_fresh(k, l->u.loop.body.v[i]);
            xf_subst_tree(k, b, v, vtail);
            ir_list_push(&tail->u.loop.body, b, tail);
        }
    }

    Node *in = ir_loop(k, vi, ir_int(k, 0), ir_int(k, f), l->span);
    NodeList *dst = &in->u.loop.body;
    Node *holder = in;
    if (!exact && !peel && !pad) {
        Expr *cond = ir_bin(k, IE_LT, ir_clone_expr(k, pos), ir_clone_expr(k, ext));
        Node *g = ir_guard(k, ir_simplify(k, cond), l->span);
        ir_list_push(dst, g, in);
        dst = &g->u.guard.body;
        holder = g;
    }
    for (int i = 0; i < l->u.loop.body.n; i++) {
        Node *b = l->u.loop.body.v[i];
        xf_subst_tree(k, b, v, vexpr);
        ir_list_push(dst, b, holder);
    }
    l->u.loop.body.n = 0;
    ir_list_push(&l->u.loop.body, in, l);
    l->u.loop.var = vo;
    l->u.loop.lo = ir_int(k, 0);
    l->u.loop.hi = (exact || peel) ? full : ceil;
    if (tail) {
        ir_list_insert(xf_list_of(k, l), xf_index_in(k, l) + 1, tail, l->parent);
        tail_private_copies(k, l, tail);
    }
    if (pad && !exact)
        xf_pad_mark(k, l, vo, vi);
    if (po)
        *po = l;
    if (pi)
        *pi = in;
}

/* The tail= keyword of split and tile (guard when absent). */
static bool tail_arg(XfCtx *c, SplitTail *mode)
{
    *mode = TAIL_GUARD;
    const SchedArg *t = xf_kwarg(c, "tail");
    if (!t)
        return true;
    if (t->kind == SARG_NAME && strcmp(t->name, "guard") == 0)
        return true;
    if (t->kind == SARG_NAME && strcmp(t->name, "peel") == 0)
        *mode = TAIL_PEEL;
    else if (t->kind == SARG_NAME && strcmp(t->name, "pad") == 0)
        *mode = TAIL_PAD;
    else {
        xf_err(c, "tail= takes guard, peel or pad");
        return false;
    }
    return true;
}

bool xf_split(XfCtx *c)
{
    Node *l = xf_arg_loop(c, 0);
    int64_t f;
    if (!l || !xf_arg_int(c, 1, &f))
        return false;
    if (f < 1) {
        xf_err(c, "the factor must be at least 1, not %lld", (long long)f);
        return false;
    }
    if (xf_npos(c) != 2 && xf_npos(c) != 4) {
        xf_err(c, "usage: %s", xf_synopsis(XF_SPLIT));
        return false;
    }
    const char *outer = NULL, *inner = NULL;
    if (xf_npos(c) == 4 && (!(outer = xf_arg_name(c, 2)) || !(inner = xf_arg_name(c, 3))))
        return false;
    if (outer && inner && strcmp(outer, inner) == 0) {
        xf_err(c, "the outer and inner loops need different names");
        return false;
    }
    SplitTail mode;
    if (!tail_arg(c, &mode) || !need_serial(c, l) || !name_free(c, outer) || !name_free(c, inner))
        return false;
    if (mode == TAIL_PAD && !xf_pad_legal(c, l))
        return false;
    if (!c->dry)
        xf_do_split(c->k, l, f, outer, inner, mode, NULL, NULL);
    return true;
}

/* ---------------- bands: reorder and tile ---------------- */

/* Follows the single-child chain from top through guards to the next loop. */
static Node *next_in_band(Node *l, Node **blocker)
{
    Node *cur = l;
    for (;;) {
        NodeList *b = ir_body(cur);
        if (b->n != 1) {
            *blocker = cur;
            return NULL;
        }
        Node *x = b->v[0];
        if (x->kind == N_LOOP)
            return x;
        if (x->kind == N_STMT || x->kind == N_PREFETCH) {
            *blocker = cur;
            return NULL;
        }
        cur = x;
    }
}

/* Orders the named loops into their band from the outermost; false with a reason. */
static bool find_band(XfCtx *c, Node **named, int n, Node **band)
{
    Node *top = NULL;
    for (int i = 0; i < n; i++) {
        bool outer = true;
        for (int j = 0; j < n; j++)
            if (i != j && !xf_contains(named[i], named[j]))
                outer = false;
        if (outer)
            top = named[i];
    }
    if (!top) {
        xf_err(c, "the loops are not nested in one another");
        return false;
    }
    band[0] = top;
    for (int i = 1; i < n; i++) {
        Node *blk = NULL, *nx = next_in_band(band[i - 1], &blk);
        if (!nx) {
            xf_err(c, "loops are not perfectly nested: %s contains more than the next loop",
                   band[i - 1]->u.loop.var->name);
            xf_note_prefetch(c, blk);
            return false;
        }
        bool isnamed = false;
        for (int j = 0; j < n; j++)
            isnamed |= named[j] == nx;
        if (!isnamed) {
            xf_err(c, "loop %s lies between the named loops; name it too", nx->u.loop.var->name);
            return false;
        }
        band[i] = nx;
    }
    return true;
}

static void dirstr(const int8_t *v, int n, Node **loops, StrBuf *out)
{
    sb_putc(out, '(');
    for (int i = 0; i < n; i++)
        sb_printf(out, "%s%s", i ? ", " : "", v[i] < 0 ? ">" : v[i] > 0 ? "<" : "=");
    sb_puts(out, ") over (");
    for (int i = 0; i < n; i++)
        sb_printf(out, "%s%s", i ? ", " : "", loops[i]->u.loop.var->name);
    sb_putc(out, ')');
}

/* Checks every dependence inside band[n-1] against the new order (order[i]: which
 * band loop goes to position i) or, with full_perm, requires no negative component
 * in any positive vector (tiling). */
static bool band_legal(XfCtx *c, Node **band, int n, const int *order, bool full_perm)
{
    AccVec acc = {0};
    Node *outer[64];
    int no = xf_enclosing_loops(band[0], outer, 64);
    DepRel fixed[64];
    const Var *vs[MAXBAND];
    for (int i = 0; i < no; i++)
        fixed[i] = (DepRel){outer[i]->u.loop.var, outer[i]->u.loop.var, 0};
    for (int i = 0; i < n; i++)
        vs[i] = band[i]->u.loop.var;
    acc_collect(c->k, band[n - 1], &acc);
    int8_t *dirs = xmalloc(MAXDIRS * MAXBAND);
    bool ok = true;
    for (int i = 0; i < acc.n && ok; i++)
        for (int j = 0; j < acc.n && ok; j++) {
            Access *a = &acc.v[i], *b = &acc.v[j];
            if (a->buf != b->buf || (!a->write && !b->write) || acc_reduction_pair(a, b))
                continue;
            int nd = dep_directions(c->k, a, b, fixed, no, vs, vs, n, dirs, MAXDIRS);
            for (int q = 0; q < nd && ok; q++) {
                int8_t *v = dirs + (size_t)q * n;
                int first = 0;
                for (int p = 0; p < n && !first; p++)
                    first = v[p];
                if (first <= 0)
                    continue; /* no dependence from a to b carried here */
                bool bad = false;
                if (full_perm) {
                    for (int p = 0; p < n; p++)
                        bad |= v[p] < 0;
                } else {
                    int nf = 0;
                    for (int p = 0; p < n && !nf; p++)
                        nf = v[order[p]];
                    bad = nf < 0;
                }
                if (bad) {
                    StrBuf s = {0};
                    dirstr(v, n, band, &s);
                    xf_err(c, "a dependence with direction %s would be reversed", s.s);
                    xf_note_dep(c, a, b);
                    sb_free(&s);
                    ok = false;
                }
            }
        }
    free(dirs);
    acc_free(&acc);
    return ok;
}

void xf_do_permute(Kernel *k, Node **loops, int n, const int *order)
{
    struct Hdr {
        Var *var;
        Expr *lo, *hi;
        LoopKind kind;
        Span span;
    } h[MAXBAND];
    Node *guards[64];
    int ng = 0;
    for (int i = 0; i < n; i++)
        h[i] = (struct Hdr){loops[i]->u.loop.var, loops[i]->u.loop.lo, loops[i]->u.loop.hi,
                            loops[i]->u.loop.kind, loops[i]->span};
    for (int i = 0; i + 1 < n; i++)
        for (Node *g = loops[i]->u.loop.body.v[0]; g != loops[i + 1]; g = g->u.guard.body.v[0])
            if (ng < 64)
                guards[ng++] = g;
    NodeList inner = loops[n - 1]->u.loop.body;
    for (int i = 0; i + 1 < n; i++) {
        loops[i]->u.loop.body.n = 0;
        ir_list_push(&loops[i]->u.loop.body, loops[i + 1], loops[i]);
    }
    Node *holder = loops[n - 1];
    NodeList fresh = {0};
    loops[n - 1]->u.loop.body = fresh;
    for (int g = 0; g < ng; g++) {
        NodeList *hb = ir_body(holder);
        guards[g]->u.guard.body.n = 0;
        ir_list_push(hb, guards[g], holder);
        holder = guards[g];
    }
    for (int i = 0; i < inner.n; i++)
        ir_list_push(ir_body(holder), inner.v[i], holder);
    for (int i = 0; i < n; i++) {
        struct Hdr *x = &h[order[i]];
        loops[i]->u.loop.var = x->var;
        loops[i]->u.loop.lo = x->lo;
        loops[i]->u.loop.hi = x->hi;
        loops[i]->u.loop.kind = x->kind;
        loops[i]->span = x->span;
    }
}

/* Bounds of the loop going to position i may only mention loops outside it. */
static bool bounds_ok(XfCtx *c, Node **band, int n, const int *order)
{
    for (int i = 0; i < n; i++) {
        Node *l = band[order[i]];
        for (int j = i + 1; j < n; j++) {
            const Var *v = band[order[j]]->u.loop.var;
            if (ir_expr_uses_var(l->u.loop.lo, v) || ir_expr_uses_var(l->u.loop.hi, v)) {
                xf_err(c, "the bounds of %s depend on %s, which would be inside it",
                       l->u.loop.var->name, v->name);
                return false;
            }
        }
    }
    return true;
}

bool xf_reorder(XfCtx *c)
{
    int n = xf_npos(c);
    Node *named[MAXBAND], *band[MAXBAND];
    int order[MAXBAND];
    if (n < 2 || n > MAXBAND) {
        xf_err(c, "reorder takes 2 to %d loops", MAXBAND);
        return false;
    }
    for (int i = 0; i < n; i++) {
        if (!(named[i] = xf_arg_loop(c, i)))
            return false;
        for (int j = 0; j < i; j++)
            if (named[j] == named[i]) {
                xf_err(c, "loop %s is named twice", named[i]->u.loop.var->name);
                return false;
            }
        if (!need_serial(c, named[i]))
            return false;
    }
    if (!find_band(c, named, n, band))
        return false;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (band[j] == named[i])
                order[i] = j;
    if (!bounds_ok(c, band, n, order) || !band_legal(c, band, n, order, false))
        return false;
    if (!c->dry)
        xf_do_permute(c->k, band, n, order);
    return true;
}

bool xf_tile(XfCtx *c)
{
    Node *li = xf_arg_loop(c, 0), *lj = li ? xf_arg_loop(c, 1) : NULL;
    int64_t ti, tj;
    if (!lj || !xf_arg_int(c, 2, &ti) || !xf_arg_int(c, 3, &tj))
        return false;
    if (xf_npos(c) != 4 && xf_npos(c) != 8) {
        xf_err(c, "usage: %s", xf_synopsis(XF_TILE));
        return false;
    }
    if (ti < 1 || tj < 1) {
        xf_err(c, "tile sizes must be at least 1");
        return false;
    }
    const char *nm[4] = {0};
    if (xf_npos(c) == 8)
        for (int i = 0; i < 4; i++)
            if (!(nm[i] = xf_arg_name(c, 4 + i)) || !name_free(c, nm[i]))
                return false;
    for (int i = 0; i < 4 && nm[0]; i++)
        for (int j = 0; j < i; j++)
            if (strcmp(nm[i], nm[j]) == 0) {
                xf_err(c, "the name `%s` is given twice", nm[i]);
                return false;
            }
    SplitTail mode;
    if (!tail_arg(c, &mode) || !need_serial(c, li) || !need_serial(c, lj))
        return false;
    if (mode == TAIL_PEEL) {
        xf_err(c, "tile takes tail=guard or tail=pad (a peeled tail is split's)");
        return false;
    }
    if (mode == TAIL_PAD && (!xf_pad_legal(c, li) || !xf_pad_legal(c, lj)))
        return false;
    Node *blk = NULL;
    if (next_in_band(li, &blk) != lj) {
        xf_err(c, "%s must be the only content of %s", lj->u.loop.var->name, li->u.loop.var->name);
        if (blk)
            xf_note_prefetch(c, blk);
        return false;
    }
    Node *band[2] = {li, lj};
    int swap[2] = {1, 0};
    if (!bounds_ok(c, band, 2, swap) || !band_legal(c, band, 2, NULL, true))
        return false;
    if (c->dry)
        return true;
    Node *io, *ii, *jo, *ji;
    xf_do_split(c->k, li, ti, nm[0], nm[2], mode, &io, &ii);
    xf_do_split(c->k, lj, tj, nm[1], nm[3], mode, &jo, &ji);
    Node *b4[4] = {io, ii, jo, ji};
    int ord[4] = {0, 2, 1, 3};
    xf_do_permute(c->k, b4, 4, ord);
    return true;
}

/* ---------------- fuse ---------------- */

/* Whether the nodes lst[from..to) may move before loop a: no element is accessed
 * by both a and them with a write on either side (in the same iteration of the
 * loops around a). */
static bool fuse_hoist_ok(XfCtx *c, Node *a, Node *b, NodeList *lst, int from, int to)
{
    AccVec aa = {0};
    acc_collect(c->k, a, &aa);
    Node *outer[64];
    int no = xf_enclosing_loops(a, outer, 63);
    DepRel rel[64];
    for (int i = 0; i < no; i++)
        rel[i] = (DepRel){outer[i]->u.loop.var, outer[i]->u.loop.var, 0};
    bool ok = true;
    for (int m = from; m < to && ok; m++) {
        AccVec mm = {0};
        acc_collect(c->k, lst->v[m], &mm);
        for (int i = 0; i < aa.n && ok; i++)
            for (int j = 0; j < mm.n && ok; j++) {
                Access *x = &aa.v[i], *y = &mm.v[j];
                if (x->buf != y->buf || (!x->write && !y->write))
                    continue;
                if (dep_may_conflict(c->k, x, y, rel, no)) {
                    xf_err(c, "%s must directly follow %s in the same body, and what lies between "
                              "cannot move before %s: it shares `%s` with it",
                           b->u.loop.var->name, a->u.loop.var->name, a->u.loop.var->name, x->buf->name);
                    xf_note_dep(c, x, y);
                    ok = false;
                }
            }
        acc_free(&mm);
    }
    acc_free(&aa);
    return ok;
}

bool xf_fuse(XfCtx *c)
{
    Node *a = xf_arg_loop(c, 0), *b = a ? xf_arg_loop(c, 1) : NULL;
    if (!b)
        return false;
    if (xf_npos(c) != 2) {
        xf_err(c, "usage: %s", xf_synopsis(XF_FUSE));
        return false;
    }
    if (a->parent != b->parent || xf_list_of(c->k, a) != xf_list_of(c->k, b) ||
        xf_index_in(c->k, b) <= xf_index_in(c->k, a)) {
        xf_err(c, "%s must directly follow %s in the same body", b->u.loop.var->name,
               a->u.loop.var->name);
        return false;
    }
    /* Statements between a and b (a reduction's initialisation, say) are moved
     * before a when they share no element with a that either writes: then the two
     * orders compute the same thing. */
    NodeList *lst = xf_list_of(c->k, a);
    int ia = xf_index_in(c->k, a), ib = xf_index_in(c->k, b);
    if (ib > ia + 1 && !fuse_hoist_ok(c, a, b, lst, ia + 1, ib))
        return false;
    if (!need_serial(c, a) || !need_serial(c, b))
        return false;
    if (!xf_expr_equal(c->k, a->u.loop.lo, b->u.loop.lo) ||
        !xf_expr_equal(c->k, a->u.loop.hi, b->u.loop.hi)) {
        StrBuf x = {0};
        sb_puts(&x, "the bounds differ: ");
        ir_print_expr(c->k, a->u.loop.lo, &x);
        sb_puts(&x, "..");
        ir_print_expr(c->k, a->u.loop.hi, &x);
        sb_puts(&x, " and ");
        ir_print_expr(c->k, b->u.loop.lo, &x);
        sb_puts(&x, "..");
        ir_print_expr(c->k, b->u.loop.hi, &x);
        xf_err(c, "%s", x.s);
        sb_free(&x);
        return false;
    }
    AccVec aa = {0}, bb = {0};
    acc_collect(c->k, a, &aa);
    acc_collect(c->k, b, &bb);
    Node *outer[64];
    int no = xf_enclosing_loops(a, outer, 63);
    DepRel rel[64];
    for (int i = 0; i < no; i++)
        rel[i] = (DepRel){outer[i]->u.loop.var, outer[i]->u.loop.var, 0};
    rel[no] = (DepRel){a->u.loop.var, b->u.loop.var, -1};
    bool ok = true;
    for (int i = 0; i < aa.n && ok; i++)
        for (int j = 0; j < bb.n && ok; j++) {
            Access *x = &aa.v[i], *y = &bb.v[j];
            if (x->buf != y->buf || (!x->write && !y->write) || acc_reduction_pair(x, y))
                continue;
            if (dep_may_conflict(c->k, x, y, rel, no + 1)) {
                xf_err(c, "iteration %s of the second loop needs what a later iteration of the "
                          "first produces (or the reverse)",
                       b->u.loop.var->name);
                xf_note_dep(c, x, y);
                ok = false;
            }
        }
    acc_free(&aa);
    acc_free(&bb);
    if (!ok || c->dry)
        return ok;
    for (int i = ia + 1; i < ib; i++) { /* each between-node goes just before a */
        Node *m = lst->v[i];
        ir_list_remove(lst, i);
        ir_list_insert(lst, ia++, m, a->parent);
    }
    Expr *av = ir_var(c->k, a->u.loop.var);
    for (int i = 0; i < b->u.loop.body.n; i++) {
        Node *x = b->u.loop.body.v[i];
        xf_subst_tree(c->k, x, b->u.loop.var, av);
        ir_list_push(&a->u.loop.body, x, a);
    }
    b->u.loop.body.n = 0;
    ir_list_remove(xf_list_of(c->k, b), xf_index_in(c->k, b));
    return true;
}

/* ---------------- marks ---------------- */

bool xf_unroll(XfCtx *c)
{
    Node *l = xf_arg_loop(c, 0);
    if (!l)
        return false;
    int64_t ext, max = 64;
    const SchedArg *m = xf_kwarg(c, "max");
    if (m && m->kind == SARG_INT)
        max = m->ival;
    if (!need_serial(c, l))
        return false;
    if (!xf_const_extent(c->k, l, &ext)) {
        xf_err(c, "the extent of %s is not a constant", l->u.loop.var->name);
        return false;
    }
    if (ext > max || ext < 1) {
        xf_err(c, "the extent of %s is %lld; unroll takes 1 to %lld (max=)", l->u.loop.var->name,
               (long long)ext, (long long)max);
        return false;
    }
    if (!c->dry)
        l->u.loop.kind = LOOP_UNROLL;
    return true;
}

static bool carried_free(XfCtx *c, Node *l, bool allow_private)
{
    Access a, b;
    if (!dep_carried(c->k, l, true, allow_private, &a, &b))
        return true;
    xf_err(c, "loop %s carries a dependence", l->u.loop.var->name);
    xf_note_dep(c, &a, &b);
    return false;
}

/* ---------------- reverse ---------------- */

/* reverse(l): l's iterations run last first.  Legal when l carries no dependence
 * (then any order of its iterations computes the same).  The loop keeps its variable
 * and bounds; the body reads the iteration it stands for as lo + hi - 1 - v.  Its use
 * is where iteration order is a schedule, not a meaning: a block loop whose first
 * blocks start first (the longest rows of a causal mask, docs/cuda.md). */
bool xf_reverse(XfCtx *c)
{
    Node *l = xf_arg_loop(c, 0);
    if (!l || !need_serial(c, l) || !carried_free(c, l, true))
        return false;
    if (c->dry)
        return true;
    Kernel *k = c->k;
    /* lo + hi - 1 as a number where the sizes are bound, so that the indices it enters
     * simplify against those staging made with the numbers */
    Expr *last = ir_bin(k, IE_SUB, ir_bin(k, IE_ADD, ir_clone_expr(k, l->u.loop.lo), ir_clone_expr(k, l->u.loop.hi)),
                        ir_int(k, 1));
    int64_t n;
    if (ir_eval_size(k, last, &n))
        last = ir_int(k, n);
    Expr *mirror = ir_simplify(k, ir_bin(k, IE_SUB, last, ir_var(k, l->u.loop.var)));
    for (int i = 0; i < l->u.loop.body.n; i++)
        xf_subst_tree(k, l->u.loop.body.v[i], l->u.loop.var, mirror);
    return true;
}

bool xf_parallel(XfCtx *c)
{
    Node *l = xf_arg_loop(c, 0);
    const Node *w;
    if (!l || !need_serial(c, l))
        return false;
    if (xf_inside_kind(l, LOOP_PARALLEL, false, &w)) {
        xf_err(c, "%s is inside parallel loop %s; nested parallel loops are not supported",
               l->u.loop.var->name, w->u.loop.var->name);
        return false;
    }
    if (xf_inside_kind(l, LOOP_VECTOR, false, &w)) {
        xf_err(c, "%s is inside vector loop %s", l->u.loop.var->name, w->u.loop.var->name);
        return false;
    }
    AccVec acc = {0};
    bool nested = false;
    /* A parallel loop inside would be nested parallelism. */
    acc_collect(c->k, l, &acc);
    for (int i = 0; i < acc.n && !nested; i++)
        for (Node *p = acc.v[i].stmt->parent; p && p != l; p = p->parent)
            if (p->kind == N_LOOP && p->u.loop.kind == LOOP_PARALLEL) {
                xf_err(c, "%s contains parallel loop %s", l->u.loop.var->name, p->u.loop.var->name);
                nested = true;
                break;
            }
    acc_free(&acc);
    if (nested)
        return false;
    /* a scan's loop: the blocked parallel scan (passes/xform_scan.c) */
    if (xf_is_scan_loop(c->k, l)) {
        if (!c->dry)
            xf_scan_blocks(c->k, l);
        return true;
    }
    if (!carried_free(c, l, true))
        return false;
    if (!c->dry)
        l->u.loop.kind = LOOP_PARALLEL;
    return true;
}

/* Statements of a loop body with guards (lane masks) but no loops. */
static bool innermost(Node *n, Node **out, int *ns)
{
    NodeList *b = ir_body(n);
    for (int i = 0; i < b->n; i++) {
        Node *x = b->v[i];
        if (x->kind == N_LOOP)
            return false;
        if (x->kind == N_IF) {
            if (!innermost(x, out, ns))
                return false;
        } else if (x->kind == N_PREFETCH) {
            continue; /* a hint: the code generator issues it per cache line, not per lane */
        } else if (*ns < 256) {
            out[(*ns)++] = x;
        } else {
            return false;
        }
    }
    return true;
}

bool xf_vectorize(XfCtx *c)
{
    Node *l = xf_arg_loop(c, 0);
    const Node *w;
    int64_t ext;
    if (!l || !need_serial(c, l))
        return false;
    Node *stmts[256];
    int ns = 0;
    if (!innermost(l, stmts, &ns)) {
        xf_err(c, "%s must be innermost: no loop inside, at most 256 statements", l->u.loop.var->name);
        return false;
    }
    if (!xf_const_extent(c->k, l, &ext)) {
        xf_err(c, "the extent of %s is not a constant", l->u.loop.var->name);
        return false;
    }
    /* One lane is the scalar loop itself: accepted and left serial, so a schedule
     * written for 16-wide blocks still applies when a split was clamped to a size
     * of 1 (a matrix with one column). */
    if (ext == 1)
        return true;
    if (ext < 2 || ext > 64) {
        xf_err(c, "the extent of %s is %lld; a vector loop has 2 to 64 lanes", l->u.loop.var->name,
               (long long)ext);
        return false;
    }
    if (xf_inside_kind(l, LOOP_VECTOR, false, &w)) {
        xf_err(c, "%s is inside vector loop %s", l->u.loop.var->name, w->u.loop.var->name);
        return false;
    }
    /* Stores must be unit-stride in the lane variable (one contiguous vector). */
    ArSpace sp;
    ar_space_init(&sp, c->k);
    sp.divs = true; /* `(f % 4) * 8 + v` (a collapsed loop) is unit-stride in v */
    int col = ar_space_col(&sp, l->u.loop.var, 0);
    for (int i = 0; i < ns; i++) {
        Node *s = stmts[i];
        int r = s->u.stmt.buf->rank;
        bool ok = r > 0;
        for (int d = 0; d < r && ok; d++) {
            ArRow a;
            if (!ar_row_of(&sp, s->u.stmt.idx[d], 0, &a))
                ok = false;
            else
                ok = a.c[col] == (d == r - 1 ? 1 : 0);
        }
        for (int q = 0; q < sp.ndiv && ok; q++)
            ok = sp.div[q].num.c[col] == 0; /* the lane hidden in a quotient */
        if (!ok) {
            xf_err(c, "the store to %s is not unit-stride in %s", s->u.stmt.buf->name,
                   l->u.loop.var->name);
            xf_note(c, s->span, "this store");
            return false;
        }
    }
    if (!carried_free(c, l, false))
        return false;
    if (!c->dry)
        l->u.loop.kind = LOOP_VECTOR;
    return true;
}

/* ---------------- distribute ---------------- */

/* Whether n reads buffer b (a load, or an update of its elements). */
static bool reads_buf(Kernel *k, Node *n, const Buffer *b)
{
    AccVec acc = {0};
    acc_collect(k, n, &acc);
    bool r = false;
    for (int i = 0; i < acc.n && !r; i++)
        r = acc.v[i].buf == b && (!acc.v[i].write || acc.v[i].update);
    acc_free(&acc);
    return r;
}

/* The part a prefetch at body position i goes with when the body is distributed:
 * the first node that reads its buffer, else the next node, else the one before. */
static int prefetch_owner(Kernel *k, NodeList *b, int i)
{
    const Buffer *buf = b->v[i]->u.pf.buf;
    for (int q = 0; q < b->n; q++)
        if (b->v[q]->kind != N_PREFETCH && reads_buf(k, b->v[q], buf))
            return q;
    for (int q = i + 1; q < b->n; q++)
        if (b->v[q]->kind != N_PREFETCH)
            return q;
    for (int q = i - 1; q >= 0; q--)
        if (b->v[q]->kind != N_PREFETCH)
            return q;
    return -1;
}

/* distribute(loop): `for i { S1; S2; ... }` becomes `for i { S1 } for i' { S2 } ...`,
 * one loop per node of the body.  Every instance of an earlier part then runs before
 * every instance of a later part, so it is legal when no dependence runs from a
 * later part at iteration x to an earlier part at an iteration after x.  A prefetch
 * is no part of its own: it goes with the part that reads what it fetches. */
bool xf_distribute(XfCtx *c)
{
    Node *l = xf_arg_loop(c, 0);
    if (!l || !need_serial(c, l))
        return false;
    int n = l->u.loop.body.n, nparts = 0;
    for (int i = 0; i < n; i++)
        nparts += l->u.loop.body.v[i]->kind != N_PREFETCH;
    if (nparts < 2) {
        xf_err(c, "%s has a single node in its body; nothing to distribute", l->u.loop.var->name);
        return false;
    }
    Node *outer[64];
    int no = xf_enclosing_loops(l, outer, 63);
    DepRel rel[64];
    for (int i = 0; i < no; i++)
        rel[i] = (DepRel){outer[i]->u.loop.var, outer[i]->u.loop.var, 0};
    rel[no] = (DepRel){l->u.loop.var, l->u.loop.var, 1};
    bool ok = true;
    for (int p = 0; p < n && ok; p++)
        for (int q = p + 1; q < n && ok; q++) {
            AccVec later = {0}, earlier = {0};
            acc_collect(c->k, l->u.loop.body.v[q], &later);
            acc_collect(c->k, l->u.loop.body.v[p], &earlier);
            for (int i = 0; i < later.n && ok; i++)
                for (int j = 0; j < earlier.n && ok; j++) {
                    Access *x = &later.v[i], *y = &earlier.v[j];
                    if (x->buf != y->buf || (!x->write && !y->write) || acc_reduction_pair(x, y))
                        continue;
                    if (dep_may_conflict(c->k, x, y, rel, no + 1)) {
                        xf_err(c, "a later part of %s feeds an earlier part in a later iteration",
                               l->u.loop.var->name);
                        xf_note_dep(c, x, y);
                        ok = false;
                    }
                }
            acc_free(&later);
            acc_free(&earlier);
        }
    if (!ok || c->dry)
        return ok;
    Kernel *k = c->k;
    NodeList *list = xf_list_of(k, l);
    int at = xf_index_in(k, l);
    int *owner = xmalloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++)
        owner[i] = l->u.loop.body.v[i]->kind == N_PREFETCH ? prefetch_owner(k, &l->u.loop.body, i) : i;
    NodeList body = l->u.loop.body;
    l->u.loop.body = (NodeList){0};
    int made = 0;
    for (int p = 0; p < n; p++) {
        if (body.v[p]->kind == N_PREFETCH)
            continue;
        Node *nl = l;
        Var *v = l->u.loop.var;
        if (made++) {
            v = ir_new_var(k, xf_fresh_name(k, l->u.loop.var->name));
            nl = ir_loop(k, v, ir_clone_expr(k, l->u.loop.lo), ir_clone_expr(k, l->u.loop.hi), l->span);
            ir_list_insert(list, at + made - 1, nl, l->parent);
        }
        for (int i = 0; i < n; i++) {
            if (owner[i] != p)
                continue;
            Node *b = body.v[i];
            if (nl != l)
                xf_subst_tree(k, b, l->u.loop.var, ir_var(k, v));
            ir_list_push(&nl->u.loop.body, b, nl);
        }
    }
    free(owner);
    return true;
}
