/* reverse_compute_at(Y, loop): the nest that computes Y elementwise from a
 * producer's result moves to the end of one of the producer's loops, restricted to
 * the box of the result that one iteration of that loop finishes.  This is how an
 * epilogue (a bias, an activation, a dtype conversion) joins a CPU micro-kernel's
 * write-back: the tile of C is still in L1, or in the staged copy, when Y reads it,
 * instead of C going to memory and coming back in a pass of its own.
 *
 * compute_at moves a producer later, to where its values are read; this moves a
 * consumer earlier, to where its inputs become final, so the proof runs the other
 * way.  The moved instance at iteration x of `loop` reads the producer P's box
 * B(x); it reads what the old nest read when no write of P after the end of
 * iteration x touches B(x).  Every write of P must lie inside `loop` (nothing else
 * between the loop's top-level nest and Y writes anything Y reads), and for every
 * loop E around the write box, inside that top-level nest, either E moves the box
 * along one dimension in steps no narrower than everything inside it spans, so that
 * later iterations of E write elsewhere, or E does not move it at all, and Y then
 * runs only in E's last iteration (a guard `E == hi - 1`: the reduction panels of a
 * blocked GEMM, whose last panel finishes each tile).  The same steps prove that the
 * boxes tile Y's domain with no gap, so every element of Y is still computed, once.
 * Nothing between the loop and Y's old place may read Y. */
#include <stdlib.h>
#include <string.h>

#include "xform_int.h"

enum { MAXE = XF_MAXMOVERS };

bool xf_box_movers(XfCtx *c, Node *l, Node *top, const Region *r, Mover *m, int *nm, int64_t *first, int64_t *end)
{
    Kernel *k = c->k;
    ArSpace sp;
    ArRow row[8];
    ar_space_init(&sp, k);
    for (int d = 0; d < r->rank; d++)
        if (!ar_row_of(&sp, r->lo[d], 0, &row[d])) {
            xf_err(c, "the box loop %s writes is not affine in dimension %d", l->u.loop.var->name, d);
            return false;
        }
    *nm = 0;
    for (Node *p = l;; p = p->parent) {
        if (p->kind == N_IF) {
            xf_err(c, "loop %s runs under a condition; its iterations may not cover the result", l->u.loop.var->name);
            xf_note(c, p->span, "this condition");
            return false;
        }
        if (p->kind == N_LOOP) {
            if (*nm == MAXE) {
                xf_err(c, "more than %d loops around %s", MAXE, l->u.loop.var->name);
                return false;
            }
            Mover *e = &m[(*nm)++];
            e->loop = p;
            e->dim = -1;
            int col = ar_space_col(&sp, p->u.loop.var, 0);
            for (int d = 0; d < r->rank; d++) {
                if (col < 0 || row[d].c[col] == 0)
                    continue;
                if (e->dim >= 0) {
                    xf_err(c, "loop %s moves the box of the result in two dimensions", p->u.loop.var->name);
                    return false;
                }
                e->dim = d;
                e->step = row[d].c[col];
            }
            if (e->dim >= 0 && (e->step <= 0 || !xf_const(k, p->u.loop.lo, &e->lo) ||
                                !xf_const_extent(k, p, &e->n) || e->n <= 0)) {
                xf_err(c, "loop %s moves the box of the result backwards or over a range that is not constant",
                       p->u.loop.var->name);
                return false;
            }
            if (e->dim < 0) {
                if (p->u.loop.kind == LOOP_PARALLEL) {
                    xf_err(c, "parallel loop %s writes the same box of the result in every iteration",
                           p->u.loop.var->name);
                    return false;
                }
                /* the guard picks the last iteration: there must be one */
                Expr *lo1 = ir_bin(k, IE_ADD, ir_clone_expr(k, p->u.loop.lo), ir_int(k, 1));
                if (!xf_prove_le(k, p->parent, lo1, p->u.loop.hi)) {
                    xf_err(c, "loop %s may run no iteration, and the result would not be computed",
                           p->u.loop.var->name);
                    return false;
                }
            }
        }
        if (p == top)
            break;
    }
    /* the columns of the box: only these loops and constants (a loop above top would
     * move the box between top's runs, which the proof does not cover) */
    for (int d = 0; d < r->rank; d++)
        for (int cidx = 0; cidx < sp.ncol; cidx++) {
            if (!row[d].c[cidx])
                continue;
            bool known = false;
            for (int i = 0; i < *nm && !known; i++)
                known = sp.var[cidx] == m[i].loop->u.loop.var;
            if (!known) {
                xf_err(c, "the box loop %s writes depends on %s, outside the producer's nest",
                       l->u.loop.var->name, sp.var[cidx] ? sp.var[cidx]->name : "a size");
                return false;
            }
        }
    /* per dimension: the movers, finest first, must tile it exactly (each step the
     * span of everything finer); the caller checks that the tiled range holds Y's
     * loop range (covered) */
    for (int d = 0; d < r->rank; d++) {
        int64_t span = r->width[d], base = row[d].k;
        bool used[MAXE] = {0};
        for (;;) {
            int best = -1;
            for (int i = 0; i < *nm; i++)
                if (m[i].dim == d && !used[i] && (best < 0 || m[i].step < m[best].step))
                    best = i;
            if (best < 0)
                break;
            used[best] = true;
            if (m[best].step != span) {
                xf_err(c, "loop %s moves the box of the result by %lld where the box and the loops inside it span "
                          "%lld: its iterations would %s",
                       m[best].loop->u.loop.var->name, (long long)m[best].step, (long long)span,
                       m[best].step < span ? "overlap" : "leave gaps");
                return false;
            }
            if (__builtin_mul_overflow(span, m[best].n, &span)) {
                xf_err(c, "the range loop %s covers overflows", m[best].loop->u.loop.var->name);
                return false;
            }
            base += m[best].step * m[best].lo;
        }
        first[d] = base;
        end[d] = base + span;
    }
    return true;
}

/* Loop s over the box's lo .. lo + width, counted from 0 (the body reads lo + s), so
 * that its extent is the constant the unrolling and vectorization that follow need;
 * its own bounds, where they are not proved wider, are kept as a guard inside, a
 * lane mask as the micro-kernel's own edge guards are. */
static void narrow(Kernel *k, Node *s, Expr *lo, int64_t width, Span sp)
{
    Var *v = s->u.loop.var;
    Expr *at = xf_simplify_affine(k, ir_bin(k, IE_ADD, ir_clone_expr(k, lo), ir_var(k, v)));
    Expr *hi = ir_simplify(k, ir_bin(k, IE_ADD, ir_clone_expr(k, lo), ir_int(k, width)));
    Expr *cond = NULL;
    if (!xf_prove_le(k, s->parent, s->u.loop.lo, lo))
        cond = ir_bin(k, IE_GE, ir_clone_expr(k, at), ir_clone_expr(k, s->u.loop.lo));
    if (!xf_prove_le(k, s->parent, hi, s->u.loop.hi)) {
        Expr *c = ir_bin(k, IE_LT, ir_clone_expr(k, at), ir_clone_expr(k, s->u.loop.hi));
        cond = cond ? ir_bin(k, IE_AND, cond, c) : c;
    }
    for (int i = 0; i < s->u.loop.body.n; i++)
        xf_subst_tree(k, s->u.loop.body.v[i], v, at);
    s->u.loop.lo = ir_int(k, 0);
    s->u.loop.hi = ir_int(k, width);
    if (!cond)
        return;
    Node *g = ir_guard(k, cond, sp);
    NodeList *body = ir_body(g);
    while (s->u.loop.body.n) {
        Node *b = s->u.loop.body.v[0];
        ir_list_remove(&s->u.loop.body, 0);
        ir_list_push(body, b, g);
    }
    ir_list_push(&s->u.loop.body, g, s);
}

bool xf_reverse_compute_at(XfCtx *c)
{
    Buffer *y = xf_arg_buffer(c, 0);
    Node *l = y ? xf_arg_loop(c, 1) : NULL;
    if (!l)
        return false;
    Kernel *k = c->k;
    if (y->kind == BUF_IN) {
        xf_err(c, "%s is an input", y->name);
        return false;
    }
    if (y->rank > 8) {
        xf_err(c, "%s has more than 8 dimensions", y->name);
        return false;
    }
    if (l->u.loop.kind == LOOP_VECTOR) {
        xf_err(c, "%s is a vector loop", l->u.loop.var->name);
        return false;
    }
    AccVec all = {0}, pw = {0};
    acc_collect(k, NULL, &all);
    bool ok = false;
    int *pre = NULL;
    Node *root, *first, *sloop[8];
    if (!xf_writer_nest(c, &all, y, &root, &first, sloop))
        goto out;
    if (xf_contains(root, l) || xf_contains(l, root)) {
        xf_err(c, "the nest of %s and loop %s are nested in one another", y->name, l->u.loop.var->name);
        goto out;
    }
    int root_pre = xf_preorder(k, root);
    if (root_pre < xf_preorder_last(k, l)) {
        xf_err(c, "the nest of %s comes before loop %s", y->name, l->u.loop.var->name);
        goto out;
    }
    /* top: l's outermost ancestor that does not hold root; what runs in it runs, in
     * one iteration of the loops around both, before Y's old place */
    Node *top = l;
    while (top->parent && !xf_contains(top->parent, root))
        top = top->parent;
    int top_pre = xf_preorder(k, top);
    /* each access's statement by its place in a pre-order walk of the kernel */
    pre = xmalloc(sizeof *pre * (size_t)(all.n ? all.n : 1));
    for (int i = 0; i < all.n; i++)
        pre[i] = i && all.v[i].stmt == all.v[i - 1].stmt ? pre[i - 1] : xf_preorder(k, all.v[i].stmt);
    /* Y is read nowhere between top and its nest */
    for (int i = 0; i < all.n; i++) {
        const Access *a = &all.v[i];
        if (a->buf == y && !a->write && !xf_contains(root, a->stmt) && pre[i] >= top_pre && pre[i] < root_pre) {
            xf_err(c, "%s is read before its nest, after loop %s starts", y->name, l->u.loop.var->name);
            xf_note(c, a->stmt->span, "read here");
            goto out;
        }
    }
    /* what Y reads: written, between top and Y's nest, only inside l, and then by one
     * producer P that Y reads at its own index variables */
    Buffer *p = NULL;
    int pmap[8];
    for (int i = 0; i < all.n; i++) {
        const Access *r = &all.v[i];
        if (r->write || !xf_contains(root, r->stmt) || r->buf == y)
            continue;
        bool in_l = false;
        for (int j = 0; j < all.n; j++) {
            const Access *w = &all.v[j];
            if (!w->write || w->buf != r->buf || pre[j] < top_pre || pre[j] >= root_pre)
                continue;
            if (!xf_contains(l, w->stmt)) {
                xf_err(c, "%s, which the nest of %s reads, is written outside loop %s before the nest", r->buf->name,
                       y->name, l->u.loop.var->name);
                xf_note(c, w->stmt->span, "written here");
                goto out;
            }
            in_l = true;
        }
        if (!in_l)
            continue;
        if (p && p != r->buf) {
            xf_err(c, "the nest of %s reads two results of loop %s (%s and %s)", y->name, l->u.loop.var->name,
                   p->name, r->buf->name);
            goto out;
        }
        if (r->buf->rank > 8) {
            xf_err(c, "%s has more than 8 dimensions", r->buf->name);
            goto out;
        }
        int map[8];
        for (int e = 0; e < r->buf->rank; e++) {
            map[e] = -1;
            for (int d = 0; d < y->rank; d++)
                if (r->idx[e]->kind == IE_VAR && r->idx[e]->u.var == sloop[d]->u.loop.var)
                    map[e] = d;
            if (map[e] < 0) {
                xf_err(c, "the nest of %s reads %s at subscript %d other than by one of its own loops", y->name,
                       r->buf->name, e);
                xf_note(c, r->stmt->span, "read here");
                goto out;
            }
            if (p && map[e] != pmap[e]) {
                xf_err(c, "the nest of %s reads %s at two different elements", y->name, r->buf->name);
                goto out;
            }
            for (int f = 0; f < e; f++)
                if (map[f] == map[e]) {
                    xf_err(c, "the nest of %s reads %s with one loop in two subscripts", y->name, r->buf->name);
                    goto out;
                }
        }
        p = r->buf;
        memcpy(pmap, map, sizeof map);
    }
    if (!p) {
        xf_err(c, "the nest of %s reads nothing that loop %s writes", y->name, l->u.loop.var->name);
        goto out;
    }
    for (int i = 0; i < all.n; i++)
        if (all.v[i].write && all.v[i].buf == p && xf_contains(l, all.v[i].stmt))
            acc_push(&pw, &all.v[i]);
    Region r;
    StrBuf why = {0};
    if (!xf_region(k, l, &pw, true, &r, &why)) {
        xf_err(c, "%s", why.s);
        sb_free(&why);
        goto out;
    }
    sb_free(&why);
    Mover m[MAXE];
    int nm;
    int64_t cov_lo[8], cov_end[8]; /* Region's rank bound */
    if (!xf_box_movers(c, l, top, &r, m, &nm, cov_lo, cov_end))
        goto out;
    /* the boxes cover Y's loops */
    for (int e = 0; e < p->rank; e++) {
        Node *s = sloop[pmap[e]];
        int64_t slo, shi, first_el = cov_lo[e], end_el = cov_end[e];
        if (!xf_const(k, s->u.loop.lo, &slo) || !xf_const(k, s->u.loop.hi, &shi)) {
            xf_err(c, "loop %s of the nest of %s has bounds that are not constant", s->u.loop.var->name, y->name);
            goto out;
        }
        if (first_el > slo || end_el < shi) {
            xf_err(c, "loop %s's iterations finish elements %lld..%lld of %s's dimension %d, not all of %lld..%lld",
                   l->u.loop.var->name, (long long)first_el, (long long)end_el - 1, p->name, e, (long long)slo,
                   (long long)shi - 1);
            goto out;
        }
    }
    const Var *bad = xf_free_var(k, root, l);
    if (bad) {
        xf_err(c, "the nest of %s uses %s, which is not defined at loop %s", y->name, bad->name, l->u.loop.var->name);
        goto out;
    }
    ok = true;
    if (c->dry)
        goto out;
    Node *old_parent = root->parent;
    ir_list_remove(xf_list_of(k, root), xf_index_in(k, root));
    /* Y's loops narrowed to the box (before the guards: the proofs read the loops
     * around them) */
    Node *node = root;
    ir_list_push(&l->u.loop.body, node, l);
    for (int e = 0; e < p->rank; e++)
        narrow(k, sloop[pmap[e]], r.lo[e], r.width[e], c->it->span);
    /* the loops that do not move the box: only their last iteration */
    for (int i = 0; i < nm; i++) {
        if (m[i].dim >= 0)
            continue;
        Node *E = m[i].loop;
        Expr *last = ir_simplify(k, ir_bin(k, IE_SUB, ir_clone_expr(k, E->u.loop.hi), ir_int(k, 1)));
        Node *g = ir_guard(k, ir_bin(k, IE_EQ, ir_var(k, E->u.loop.var), last), c->it->span);
        NodeList *body = xf_list_of(k, node);
        int at = xf_index_in(k, node);
        Node *par = node->parent;
        ir_list_remove(body, at);
        ir_list_push(ir_body(g), node, g);
        ir_list_insert(body, at, g, par);
        node = g;
    }
    if (old_parent)
        xf_prune_empty(k, old_parent);
out:
    free(pre);
    acc_free(&all);
    acc_free(&pw);
    return ok;
}
