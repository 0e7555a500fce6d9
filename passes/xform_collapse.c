/* collapse(outer, inner[, name]): two perfectly nested loops with constant bounds
 * become one loop over their pairs.
 *
 *     for a in la..la+A { for b in lb..lb+B { S(a, b) } }
 *  => for v in 0..A*B { S(la + v / B, lb + v % B) }
 *
 * The new loop visits the pairs in the same (row-major) order, so the rewrite is
 * always legal: nothing runs in another order, and no dependence can change.  What
 * it buys is one index that walks two dimensions, inner fastest: bound to thread.x,
 * consecutive lanes take consecutive inner iterations and then the next outer one,
 * so a warp's staging copy reads whole rows (each lane a 16-byte chunk, a few rows
 * per warp) instead of one chunk from each of 32 rows.  The dependence tests
 * (passes/deps.c) see through the floor division and remainder by a constant, so
 * `bind` and the other transformations still prove what they need afterwards.
 *
 * A temporary that every access indexes by the two loop variables themselves, in
 * two adjacent dimensions that the loops run over exactly (from 0 to the
 * dimension), follows the loops: those dimensions become one, indexed by the new
 * variable.  The element a pair (a, b) reaches is the one it reached before (row
 * major, a*B + b is the same offset), so nothing changes but the names; what it
 * buys is an index without the division and remainder, which staging
 * (passes/xform_cache.c) needs to find the box of one tile of the new loop: a
 * convolution's f32 accumulator over (n, y, x) becomes a matrix over output
 * pixels, tiled like a GEMM's.
 *
 * Refused: loops not perfectly nested (the outer loop must hold the inner loop and
 * nothing else), bounds that are not constants, loops already marked (parallel,
 * vector, unroll, bound, mma, pipeline), a name already in use. */
#include <string.h>

#include "xform_int.h"

/* The dimension d where every access of temporary b reads (a, b) = (ov, iv) as
 * plain variables, over exactly those extents; -1 when there is none or some
 * access does not. */
static int following_dim(Kernel *k, Buffer *b, const AccVec *all, const Var *ov, const Var *iv,
                         const int64_t *ext)
{
    if (b->kind != BUF_TEMP || b->layout != LAYOUT_PLAIN || b->rank < 2)
        return -1;
    int dim = -1;
    for (int i = 0; i < all->n; i++) {
        const Access *a = &all->v[i];
        if (a->buf != b)
            continue;
        int here = -1;
        for (int d = 0; d + 1 < b->rank && here < 0; d++)
            if (a->idx[d]->kind == IE_VAR && a->idx[d]->u.var == ov && a->idx[d + 1]->kind == IE_VAR &&
                a->idx[d + 1]->u.var == iv)
                here = d;
        if (here < 0 || (dim >= 0 && here != dim))
            return -1;
        dim = here;
    }
    int64_t s0, s1;
    if (dim < 0 || !xf_const(k, b->shape[dim], &s0) || !xf_const(k, b->shape[dim + 1], &s1) || s0 != ext[0] ||
        s1 != ext[1])
        return -1;
    return dim;
}

/* Merges dimensions d and d+1 of temporary b, every access indexed by v there. */
static void follow(Kernel *k, Buffer *b, const AccVec *all, int d, Var *v, int64_t total)
{
    for (int i = 0; i < all->n; i++) {
        const Access *a = &all->v[i];
        if (a->buf != b)
            continue;
        Expr **idx = arena_alloc(k->arena, sizeof(Expr *) * (size_t)(b->rank - 1));
        for (int q = 0, o = 0; q < b->rank; q++)
            if (q == d)
                idx[o++] = ir_var(k, v);
            else if (q != d + 1)
                idx[o++] = a->idx[q];
        if (a->load)
            a->load->u.load.idx = idx;
        else
            a->stmt->u.stmt.idx = idx;
    }
    b->shape[d] = ir_int(k, total);
    for (int q = d + 1; q + 1 < b->rank; q++)
        b->shape[q] = b->shape[q + 1];
    b->rank--;
}

bool xf_collapse(XfCtx *c)
{
    Node *o = xf_arg_loop(c, 0);
    Node *in = o ? xf_arg_loop(c, 1) : NULL;
    if (!in)
        return false;
    if (xf_npos(c) != 2 && xf_npos(c) != 3) {
        xf_err(c, "usage: %s", xf_synopsis(XF_COLLAPSE));
        return false;
    }
    const char *name = NULL;
    if (xf_npos(c) == 3 && !(name = xf_arg_name(c, 2)))
        return false;
    const char *on = o->u.loop.var->name, *inn = in->u.loop.var->name;
    if (o == in) {
        xf_err(c, "collapse takes two different loops");
        return false;
    }
    if (in->parent != o) {
        xf_err(c, "loop %s is not directly inside %s; collapse takes an outer loop and the loop "
                  "it holds",
               inn, on);
        return false;
    }
    if (o->u.loop.body.n != 1) {
        xf_err(c, "loops are not perfectly nested: %s must hold loop %s and nothing else", on, inn);
        xf_note(c, o->u.loop.body.v[o->u.loop.body.v[0] == in ? 1 : 0]->span, "%s also holds this", on);
        return false;
    }
    Node *ls[2] = {o, in};
    int64_t lo[2], ext[2];
    for (int q = 0; q < 2; q++) {
        const char *n = ls[q]->u.loop.var->name;
        if (ls[q]->u.loop.kind != LOOP_SERIAL) {
            xf_err(c, "loop %s is already marked %s; collapse loops before marking them", n,
                   loop_kind_name(ls[q]->u.loop.kind));
            return false;
        }
        int64_t hi;
        if (!xf_const(c->k, ls[q]->u.loop.lo, &lo[q]) || !xf_const(c->k, ls[q]->u.loop.hi, &hi)) {
            xf_err(c, "the bounds of %s are not constants (bind the sizes with -D); the collapsed "
                      "loop needs a fixed inner extent to divide by",
                   n);
            return false;
        }
        ext[q] = hi - lo[q];
        if (ext[q] < 1) {
            xf_err(c, "loop %s runs no iterations", n);
            return false;
        }
    }
    int64_t total;
    if (__builtin_mul_overflow(ext[0], ext[1], &total) || total > INT32_MAX) {
        xf_err(c, "%s x %s has too many iterations for one loop", on, inn);
        return false;
    }
    if (name && (ir_find_var(c->k, name) || ir_find_buffer(c->k, name))) {
        xf_err(c, "the name `%s` is already in use", name);
        return false;
    }
    if (c->dry)
        return true;

    Kernel *k = c->k;
    Var *ov = o->u.loop.var, *iv = in->u.loop.var;
    Var *v = ir_new_var(k, name ? name : xf_fresh_name(k, arena_printf(k->arena, "%s%s", on, inn)));
    /* temporaries that follow the loops, merged before the substitution below
     * (their indices then no longer mention ov and iv); a temporary a prefetch
     * names keeps its shape */
    if (lo[0] == 0 && lo[1] == 0) {
        AccVec all = {0};
        acc_collect(k, NULL, &all);
        for (int b = 0; b < k->nbufs; b++) {
            int d = xf_prefetches(k, k->bufs[b]) ? -1 : following_dim(k, k->bufs[b], &all, ov, iv, ext);
            if (d >= 0)
                follow(k, k->bufs[b], &all, d, v, total);
        }
        acc_free(&all);
    }
    Expr *ve = ir_var(k, v);
    Expr *oe = ir_simplify(k, ir_bin(k, IE_ADD, ir_int(k, lo[0]),
                                     ir_bin(k, IE_DIV, ir_clone_expr(k, ve), ir_int(k, ext[1]))));
    Expr *ie = ir_simplify(k, ir_bin(k, IE_ADD, ir_int(k, lo[1]),
                                     ir_bin(k, IE_MOD, ir_clone_expr(k, ve), ir_int(k, ext[1]))));
    if (ext[1] == 1) {
        oe = ir_simplify(k, ir_bin(k, IE_ADD, ir_int(k, lo[0]), ir_clone_expr(k, ve)));
        ie = ir_int(k, lo[1]);
    }
    o->u.loop.body.n = 0;
    for (int i = 0; i < in->u.loop.body.n; i++) {
        Node *b = in->u.loop.body.v[i];
        xf_subst_tree(k, b, iv, ie);
        xf_subst_tree(k, b, ov, oe);
        ir_list_push(&o->u.loop.body, b, o);
    }
    o->u.loop.var = v;
    o->u.loop.lo = ir_int(k, 0);
    o->u.loop.hi = ir_int(k, total);
    /* A buffer private to the iterations of both loops is private to the pairs. */
    for (int b = 0; b < k->nbufs; b++) {
        Buffer *bf = k->bufs[b];
        int io = -1, ii = -1;
        for (int q = 0; q < bf->nprivate_in; q++) {
            if (bf->private_in[q] == ov)
                io = q;
            if (bf->private_in[q] == iv)
                ii = q;
        }
        if (io >= 0 && ii >= 0)
            bf->private_in[io] = v;
    }
    return true;
}
