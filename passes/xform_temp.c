/* Transformations of temporaries: inline (substitute the defining expression at
 * every use) and compute_at (compute the part of a temporary a loop iteration needs
 * at the start of that iteration).
 *
 * Both move a computation later in time, so both must show that what the
 * producer reads does not change in between; both need a producer that computes
 * each element from scratch (an `=` first), so computing it again or elsewhere
 * gives the same value. */
#include <string.h>

#include "xform_int.h"

enum { MAXW = 64 };

/* The top-level node holding n. */
static int top_index(Kernel *k, Node *n)
{
    while (n->parent)
        n = n->parent;
    return xf_index_in(k, n);
}

/* ---------------- inline ---------------- */

typedef struct InlineCtx {
    Kernel *k;
    Buffer *t;
    Node *prod;
    const Var *vars[8];
} InlineCtx;

static void inline_cb(Expr *e, void *p)
{
    InlineCtx *c = p;
    if (e->kind != IE_LOAD || e->u.load.buf != c->t)
        return;
    Expr *with[8];
    for (int d = 0; d < c->t->rank; d++)
        with[d] = e->u.load.idx[d];
    Expr *v = xf_subst_expr(c->k, c->prod->u.stmt.value, c->vars, with, c->t->rank);
    /* Storing rounded the value to T's type: keep that rounding. */
    Expr *r = ir_cast(c->k, v, c->t->dtype);
    Span sp = e->span;
    *e = *r;
    e->span = sp;
}

bool xf_inline(XfCtx *c)
{
    Buffer *t = xf_arg_buffer(c, 0);
    if (!t)
        return false;
    if (t->kind != BUF_TEMP) {
        xf_err(c, "%s is an %s of the kernel; only temporaries can be inlined", t->name,
               t->kind == BUF_IN ? "input" : "output");
        return false;
    }
    if (t->rank > 8) {
        xf_err(c, "%s has more than 8 dimensions", t->name);
        return false;
    }
    AccVec all = {0};
    acc_collect(c->k, NULL, &all);
    Node *prod = NULL;
    int nw = 0;
    bool ok = true;
    for (int i = 0; i < all.n; i++)
        if (all.v[i].write && all.v[i].buf == t)
            prod = all.v[i].stmt, nw++;
    if (nw != 1) {
        xf_err(c, nw ? "%s is written by %d statements; inline needs exactly one"
                     : "%s is never written%.0d",
               t->name, nw);
        ok = false;
        goto out;
    }
    if (prod->u.stmt.op != SOP_ASSIGN) {
        xf_err(c, "%s is computed by a reduction (%s); only elementwise temporaries can be inlined",
               t->name, stmt_op_name(prod->u.stmt.op));
        xf_note(c, prod->span, "the producer");
        ok = false;
        goto out;
    }
    InlineCtx ic = {.k = c->k, .t = t, .prod = prod};
    for (int d = 0; d < t->rank; d++) {
        Expr *x = prod->u.stmt.idx[d];
        bool plain = x->kind == IE_VAR;
        for (int e = 0; e < d && plain; e++)
            plain = ic.vars[e] != x->u.var;
        if (!plain) {
            xf_err(c, "the producer of %s does not index it by distinct plain loop variables", t->name);
            xf_note(c, prod->span, "the producer");
            ok = false;
            goto out;
        }
        ic.vars[d] = x->u.var;
    }
    for (int i = 0; i < all.n && ok; i++)
        if (all.v[i].buf == t && ((all.v[i].load && all.v[i].load->u.load.guarded) ||
                                  (all.v[i].write && all.v[i].stmt->u.stmt.guarded))) {
            /* past a padded split's end a read of t yields 0, the producer's value
             * would not be */
            xf_err(c, "%s is read or written past the end of a padded loop (tail=pad); inline it before "
                      "padding",
                   t->name);
            ok = false;
            goto out;
        }
    for (Node *p = prod->parent; p; p = p->parent) {
        if (p->kind == N_IF) {
            xf_err(c, "the producer of %s is guarded; inlining would compute it where it was not", t->name);
            xf_note(c, prod->span, "the producer");
            ok = false;
            goto out;
        }
        bool idx = false;
        for (int d = 0; d < t->rank; d++)
            idx |= ic.vars[d] == p->u.loop.var;
        if (!idx && ir_expr_uses_var(prod->u.stmt.value, p->u.loop.var)) {
            xf_err(c, "the value of %s depends on loop %s, which does not index it", t->name,
                   p->u.loop.var->name);
            ok = false;
            goto out;
        }
    }
    /* What the producer reads must be final before it runs: every write to those
     * buffers lies in an earlier top-level nest. */
    int ptop = top_index(c->k, prod);
    for (int i = 0; i < all.n && ok; i++) {
        Access *r = &all.v[i];
        if (r->stmt != prod || r->write)
            continue;
        if (r->buf == t) {
            xf_err(c, "the producer of %s reads %s itself", t->name, t->name);
            ok = false;
            break;
        }
        for (int j = 0; j < all.n && ok; j++) {
            Access *w = &all.v[j];
            if (w->write && w->buf == r->buf && top_index(c->k, w->stmt) >= ptop) {
                xf_err(c, "%s, which the producer of %s reads, is written at or after it; the value "
                          "at the uses could differ",
                       r->buf->name, t->name);
                xf_note(c, w->stmt->span, "written here");
                ok = false;
            }
        }
    }
    for (int i = 0; i < all.n && ok; i++) {
        Access *r = &all.v[i];
        if (!r->write && r->buf == t && top_index(c->k, r->stmt) < ptop) {
            xf_err(c, "%s is read before the nest that computes it", t->name);
            xf_note(c, r->stmt->span, "read here");
            ok = false;
        }
    }
    if (!ok || c->dry)
        goto out;
    xf_visit_exprs(c->k, NULL, inline_cb, &ic);
    Node *parent = prod->parent;
    ir_list_remove(xf_list_of(c->k, prod), xf_index_in(c->k, prod));
    /* Nothing reads t any more: a prefetch of it would fetch a dead buffer. */
    xf_drop_prefetches(c->k, NULL, t);
    if (parent)
        xf_prune_empty(c->k, parent);
out:
    acc_free(&all);
    return ok;
}

/* ---------------- compute_at ---------------- */

/* Whether the subtree n writes nothing but t (prefetches aside). */
static bool only_writes(const Node *n, const Buffer *t)
{
    if (n->kind == N_STMT)
        return n->u.stmt.buf == t;
    if (n->kind == N_PREFETCH)
        return true; /* a hint: it moves with the producer */
    const NodeList *b = ir_body((Node *)n);
    for (int i = 0; i < b->n; i++)
        if (!only_writes(b->v[i], t))
            return false;
    return true;
}

typedef struct FreeCtx {
    Node *root, *at;
    const Var *bad;
} FreeCtx;

/* A variable used in root, bound neither inside root nor around `at`. */
static void free_cb(Expr *e, void *p)
{
    FreeCtx *f = p;
    if (e->kind != IE_VAR || f->bad)
        return;
    bool inside = false;
    const Var *v = e->u.var;
    Node *stack[256];
    int sp = 0;
    stack[sp++] = f->root;
    while (sp && !inside) {
        Node *n = stack[--sp];
        if (n->kind == N_LOOP && n->u.loop.var == v)
            inside = true;
        NodeList *b = ir_body(n);
        for (int i = 0; b && i < b->n && sp < 256; i++)
            stack[sp++] = b->v[i];
    }
    for (Node *p = f->at; p && !inside; p = p->parent)
        inside = p->kind == N_LOOP && p->u.loop.var == v;
    if (!inside)
        f->bad = v;
}

const Var *xf_free_var(Kernel *k, Node *root, Node *at)
{
    FreeCtx fc = {.root = root, .at = at};
    xf_visit_exprs(k, root, free_cb, &fc);
    return fc.bad;
}

bool xf_writer_nest(XfCtx *c, const AccVec *all, Buffer *t, Node **proot, Node **pfirst, Node **sloop)
{
    Node *first = NULL;
    for (int i = 0; i < all->n && !first; i++)
        if (all->v[i].write && all->v[i].buf == t)
            first = all->v[i].stmt;
    if (!first) {
        xf_err(c, "%s is never written", t->name);
        return false;
    }
    Node *root = first;
    while (root->parent && only_writes(root->parent, t))
        root = root->parent;
    for (int i = 0; i < all->n; i++)
        if (all->v[i].write && all->v[i].buf == t && !xf_contains(root, all->v[i].stmt)) {
            xf_err(c, "%s is written in more than one place", t->name);
            xf_note(c, all->v[i].stmt->span, "also written here");
            return false;
        }
    if (first->u.stmt.op != SOP_ASSIGN) {
        xf_err(c, "the first write of %s is an update (%s); computing it elsewhere would accumulate twice",
               t->name, stmt_op_name(first->u.stmt.op));
        return false;
    }
    /* Spatial loops: the first write indexes T by plain variables of loops in root. */
    for (int d = 0; d < t->rank; d++) {
        Expr *x = first->u.stmt.idx[d];
        sloop[d] = NULL;
        if (x->kind == IE_VAR)
            for (Node *p = first->parent; p && xf_contains(root, p); p = p->parent)
                if (p->kind == N_LOOP && p->u.loop.var == x->u.var)
                    sloop[d] = p;
        for (int e = 0; e < d && sloop[d]; e++)
            if (sloop[e] == sloop[d])
                sloop[d] = NULL;
        if (!sloop[d]) {
            xf_err(c, "the nest of %s does not index dimension %d by a loop of its own", t->name, d);
            xf_note(c, first->span, "the nest's first write");
            return false;
        }
    }
    for (Node *p = first->parent; p && xf_contains(root, p); p = p->parent) {
        bool sp = false;
        for (int d = 0; d < t->rank; d++)
            sp |= sloop[d] == p;
        if (p->kind == N_LOOP && !sp) {
            xf_err(c, "the first write of %s sits in loop %s, which does not index it", t->name,
                   p->u.loop.var->name);
            return false;
        }
    }
    for (int i = 0; i < all->n; i++) {
        const Access *a = &all->v[i];
        if (!a->write || a->buf != t)
            continue;
        for (int d = 0; d < t->rank; d++)
            if (a->idx[d]->kind != IE_VAR || a->idx[d]->u.var != sloop[d]->u.loop.var) {
                xf_err(c, "every write of %s must use the same index variables", t->name);
                xf_note(c, a->stmt->span, "this one differs");
                return false;
            }
    }
    *proot = root;
    *pfirst = first;
    return true;
}

/* Loop s narrowed to lo .. lo + width (max/min where its own bounds are not proved
 * wider), dissolved into its body when that is one element and dissolve is set
 * (then true). */
static bool restrict_loop(Kernel *k, Node *s, Expr *lo, int64_t width, bool dissolve)
{
    Expr *hi = ir_simplify(k, ir_bin(k, IE_ADD, ir_clone_expr(k, lo), ir_int(k, width)));
    bool lo_in = xf_prove_le(k, s->parent, s->u.loop.lo, lo);
    bool hi_in = xf_prove_le(k, s->parent, hi, s->u.loop.hi);
    if (dissolve && lo_in && hi_in && width == 1) {
        NodeList *pl = xf_list_of(k, s);
        int at = xf_index_in(k, s);
        Node *par = s->parent;
        ir_list_remove(pl, at);
        for (int i = 0; i < s->u.loop.body.n; i++) {
            Node *b = s->u.loop.body.v[i];
            xf_subst_tree(k, b, s->u.loop.var, lo);
            ir_list_insert(pl, at + i, b, par);
        }
        return true;
    }
    Expr *nlo = lo_in ? lo : ir_bin(k, IE_MAX, ir_clone_expr(k, s->u.loop.lo), lo);
    Expr *nhi = hi_in ? hi : ir_bin(k, IE_MIN, ir_clone_expr(k, s->u.loop.hi), hi);
    s->u.loop.lo = ir_simplify(k, nlo);
    s->u.loop.hi = ir_simplify(k, nhi);
    return false;
}

bool xf_compute_at(XfCtx *c)
{
    Buffer *t = xf_arg_buffer(c, 0);
    Node *l = t ? xf_arg_loop(c, 1) : NULL;
    if (!l)
        return false;
    if (t->kind != BUF_TEMP) {
        xf_err(c, "%s is not a temporary", t->name);
        return false;
    }
    if (t->rank > 8) {
        xf_err(c, "%s has more than 8 dimensions", t->name);
        return false;
    }
    const Node *w;
    if (xf_inside_kind(l, LOOP_PARALLEL, true, &w)) {
        xf_err(c, "%s would be shared by the iterations of parallel loop %s", t->name,
               w->u.loop.var->name);
        return false;
    }
    if (l->u.loop.kind == LOOP_VECTOR) {
        xf_err(c, "%s is a vector loop", l->u.loop.var->name);
        return false;
    }
    AccVec all = {0}, reads = {0};
    acc_collect(c->k, NULL, &all);
    bool ok = false;
    Node *root, *first, *sloop[8];
    if (!xf_writer_nest(c, &all, t, &root, &first, sloop))
        goto out;
    if (xf_contains(root, l) || xf_contains(l, root)) {
        xf_err(c, "the producer of %s and loop %s are nested in one another", t->name,
               l->u.loop.var->name);
        goto out;
    }
    int root_last = xf_preorder_last(c->k, root), l_last = xf_preorder_last(c->k, l);
    if (xf_preorder(c->k, l) < root_last) {
        xf_err(c, "loop %s comes before the producer of %s", l->u.loop.var->name, t->name);
        goto out;
    }
    /* Readers all inside l. */
    for (int i = 0; i < all.n; i++) {
        Access *a = &all.v[i];
        if (a->write || a->buf != t)
            continue;
        if (!xf_contains(l, a->stmt)) {
            xf_err(c, "%s is also read outside loop %s", t->name, l->u.loop.var->name);
            xf_note(c, a->stmt->span, "read here");
            goto out;
        }
    }
    /* Nothing the producer reads may change between its old place and the end of l. */
    for (int i = 0; i < all.n; i++) {
        Access *r = &all.v[i];
        if (r->write || !xf_contains(root, r->stmt))
            continue;
        for (int j = 0; j < all.n; j++) {
            Access *x = &all.v[j];
            if (!x->write || x->buf != r->buf || xf_contains(root, x->stmt))
                continue;
            int pre = xf_preorder(c->k, x->stmt);
            if (pre > root_last && pre <= l_last) {
                xf_err(c, "%s, which the producer of %s reads, is written before the end of loop %s",
                       r->buf->name, t->name, l->u.loop.var->name);
                xf_note(c, x->stmt->span, "written here");
                goto out;
            }
        }
    }
    /* The producer's free variables must be in scope at l. */
    const Var *bad = xf_free_var(c->k, root, l);
    if (bad) {
        xf_err(c, "the producer of %s uses %s, which is not defined at loop %s", t->name, bad->name,
               l->u.loop.var->name);
        goto out;
    }
    for (int i = 0; i < all.n; i++)
        if (!all.v[i].write && all.v[i].buf == t && xf_contains(l, all.v[i].stmt)) {
            Access a = all.v[i];
            AccVec *rv = &reads;
            if (rv->n == rv->cap) {
                rv->cap = rv->cap ? 2 * rv->cap : 8;
                rv->v = xrealloc(rv->v, (size_t)rv->cap * sizeof(Access));
            }
            rv->v[rv->n++] = a;
        }
    Region r;
    StrBuf why = {0};
    if (!xf_region(c->k, l, &reads, false, &r, &why)) {
        xf_err(c, "%s", why.s);
        sb_free(&why);
        goto out;
    }
    sb_free(&why);
    ok = true;
    if (c->dry)
        goto out;
    Kernel *k = c->k;
    ir_list_remove(xf_list_of(k, root), xf_index_in(k, root));
    ir_list_insert(&l->u.loop.body, 0, root, l);
    for (int d = 0; d < t->rank; d++)
        if (restrict_loop(k, sloop[d], r.lo[d], r.width[d], true) && sloop[d] == root)
            root = NULL;
out:
    acc_free(&all);
    acc_free(&reads);
    return ok;
}
