/* prefetch(buffer, at, from[, offset][, like=loop]): software prefetching, after
 * Halide's Func::prefetch.  At the start of each iteration of loop `at`, fetch
 * toward the cache the box of `buffer` that the body of `at` reads, as it will be
 * read `offset` (default 1) iterations of loop `from` later; `from` is `at` or a
 * loop around it:
 *
 *   prefetch(X, e.co, m.r)         for m.r ..
 *                                  | for e.co ..
 *                                  | | prefetch X[m.r + 1, e.co * 16 .. +16]
 *                                  | | for e.ci in 0..16 vector:  ... X[m.r, e.co * 16 + e.ci] ...
 *
 * so the next row streams in from memory while this row computes.  Two extensions
 * beyond Halide's form, both for loops whose memory traffic would otherwise come
 * in a burst of demand misses:
 *  - a buffer the body only stores to is fetched *for writing* (`for write` in the
 *    IR, prefetchw on x86): its lines arrive owned, and the stores do not wait for
 *    the read-for-ownership;
 *  - like=L takes the box from loop L beside `at` (inside `from`, same bounds) in
 *    its iteration with at's index: `prefetch(Y, e.co, m.r, 0, like=Y.co)` has
 *    softmax's exp loop fetch the rows of Y that the division loop after it will
 *    store, so that traffic overlaps the exponentials instead of stalling the
 *    short division loop.  With like=, offset 0 (this iteration of `from`) is
 *    allowed.
 *
 * A prefetch has no effect on results (the interpreter and the dependence
 * analysis ignore it), so it is legal whenever its arguments make sense; the
 * checks below refuse the ones that cannot help (nothing accessed, a box that does
 * not move with `from`, a box too big to stay in the cache) with a reason.  The
 * code generator clamps the box into the buffer (the last row prefetches itself),
 * so no address outside it is formed.
 *
 * Later transformations carry the node: split, fuse and the rest substitute loop
 * variables in its indices as in any statement; distribute keeps it with the
 * part that reads its buffer; inline and copy-free staging drop a prefetch of the
 * temporary they remove; layout permutes it; reorder and tile see it as content
 * between loops (not perfectly nested) and refuse, with a note. */
#include <string.h>

#include "xform_int.h"

/* More than this per iteration of `at` would evict itself before it is read. */
enum { PF_MAX_BYTES = 64 * 1024 };

static bool same_prefetch(const Kernel *k, const Node *a, const Buffer *b, Expr *const *idx,
                          const int64_t *ext)
{
    if (a->kind != N_PREFETCH || a->u.pf.buf != b)
        return false;
    for (int d = 0; d < b->rank; d++)
        if (a->u.pf.ext[d] != ext[d] || !xf_expr_equal(k, a->u.pf.idx[d], idx[d]))
            return false;
    return true;
}

/* A variable of e bound neither by `at` nor by a loop around it, or NULL. */
static const Var *unbound_at(const Expr *e, const Node *at)
{
    if (!e)
        return NULL;
    if (e->kind == IE_VAR) {
        for (const Node *p = at; p; p = p->parent)
            if (p->kind == N_LOOP && p->u.loop.var == e->u.var)
                return NULL;
        return e->u.var;
    }
    if (e->kind == IE_LOAD) {
        for (int i = 0; i < e->u.load.buf->rank; i++) {
            const Var *v = unbound_at(e->u.load.idx[i], at);
            if (v)
                return v;
        }
        return NULL;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++) {
        const Var *v = unbound_at(e->args[i], at);
        if (v)
            return v;
    }
    return NULL;
}

bool xf_prefetch(XfCtx *c)
{
    int np = xf_npos(c);
    if (np != 3 && np != 4) {
        xf_err(c, "usage: %s", xf_synopsis(XF_PREFETCH));
        return false;
    }
    for (int i = 0; i < c->nargs; i++)
        if (c->args[i].key && strcmp(c->args[i].key, "like") != 0) {
            xf_err(c, "unknown argument %s=; usage: %s", c->args[i].key, xf_synopsis(XF_PREFETCH));
            return false;
        }
    Buffer *b = xf_arg_buffer(c, 0);
    Node *at = b ? xf_arg_loop(c, 1) : NULL;
    Node *from = at ? xf_arg_loop(c, 2) : NULL;
    if (!from)
        return false;
    /* like=L: the box is what loop L reads (or writes) in its iteration that has
     * at's index, e.g. the exp loop fetching the rows the division loop after it
     * will store.  Without it, L is `at` itself. */
    Node *like = at;
    const SchedArg *lk = xf_kwarg(c, "like");
    if (lk) {
        StrBuf why = {0};
        if (lk->kind != SARG_NAME || !(like = xf_find_loop(c->k, lk->name, &why))) {
            xf_err(c, "like= needs a loop: %s", why.len ? why.s : "not a name");
            sb_free(&why);
            return false;
        }
        sb_free(&why);
    }
    int64_t off = 1;
    if (np == 4 && !xf_arg_int(c, 3, &off))
        return false;
    if (off < (lk ? 0 : 1) || off > (1 << 20)) {
        xf_err(c, "the offset is %lld; it counts iterations of %s ahead, %d to 2^20%s", (long long)off,
               from->u.loop.var->name, lk ? 0 : 1,
               lk ? "" : " (0 would fetch what the iteration reads right away)");
        return false;
    }
    if (b->mem != MEM_GLOBAL) {
        xf_err(c, "%s is a %s staging buffer; prefetch fetches buffers in memory (inputs, outputs, "
                  "global temporaries): prefetch the buffer it is staged from",
               b->name, mem_space_name(b->mem));
        return false;
    }
    if (b->rank == 0 || b->rank > 8) {
        xf_err(c, "%s has rank %d; prefetch handles 1 to 8 dimensions", b->name, b->rank);
        return false;
    }
    if (!xf_contains(from, at)) {
        xf_err(c, "loop %s does not enclose loop %s: the iterations to fetch ahead of must be "
                  "those of %s or of a loop around it",
               from->u.loop.var->name, at->u.loop.var->name, at->u.loop.var->name);
        xf_note(c, from->span, "%s is here", from->u.loop.var->name);
        return false;
    }
    if (lk && like == at) {
        xf_err(c, "like= names %s itself; it takes the box from another loop beside it",
               at->u.loop.var->name);
        return false;
    }
    if (like != at) {
        if (!xf_contains(from, like) || xf_contains(like, at) || xf_contains(at, like)) {
            xf_err(c, "like=%s must be a loop inside %s beside %s (neither inside the other)",
                   like->u.loop.var->name, from->u.loop.var->name, at->u.loop.var->name);
            return false;
        }
        if (!xf_expr_equal(c->k, like->u.loop.lo, at->u.loop.lo) ||
            !xf_expr_equal(c->k, like->u.loop.hi, at->u.loop.hi)) {
            xf_err(c, "like=%s runs over other bounds than %s: their iterations do not correspond",
                   like->u.loop.var->name, at->u.loop.var->name);
            return false;
        }
    }
    /* What the body of `like` reads of b: loads, and updates (op=) of its elements;
     * when it only stores to b, what it stores (fetched for writing). */
    AccVec all = {0}, reads = {0};
    acc_collect(c->k, like, &all);
    bool any_read = false;
    for (int i = 0; i < all.n; i++)
        any_read |= all.v[i].buf == b && (!all.v[i].write || all.v[i].update);
    for (int i = 0; i < all.n; i++) {
        Access *a = &all.v[i];
        if (a->buf != b || (any_read && a->write && !a->update))
            continue;
        if (reads.n == reads.cap) {
            reads.cap = reads.cap ? 2 * reads.cap : 8;
            reads.v = xrealloc(reads.v, (size_t)reads.cap * sizeof(Access));
        }
        reads.v[reads.n++] = *a;
    }
    acc_free(&all);
    bool ok = false;
    if (reads.n == 0) {
        xf_err(c, "nothing in loop %s reads or writes %s; prefetch fetches what the loop's body "
                  "will access%s",
               like->u.loop.var->name, b->name, lk ? "" : " (like=LOOP takes it from a loop beside it)");
        goto out;
    }
    Region r;
    StrBuf why = {0};
    if (!xf_region(c->k, like, &reads, false, &r, &why)) {
        xf_err(c, "the accesses to %s in one iteration of %s are no box of constant size: %s", b->name,
               like->u.loop.var->name, why.s);
        sb_free(&why);
        goto out;
    }
    sb_free(&why);
    int64_t bytes = dtype_bytes(b->dtype);
    for (int d = 0; d < r.rank; d++)
        if (__builtin_mul_overflow(bytes, r.width[d], &bytes) || bytes > PF_MAX_BYTES)
            break;
    if (bytes > PF_MAX_BYTES) {
        xf_err(c, "one iteration of %s accesses more than %d KB of %s; a prefetch that large would "
                  "evict itself before it is used: place it at a loop inside %s",
               like->u.loop.var->name, PF_MAX_BYTES / 1024, b->name, at->u.loop.var->name);
        goto out;
    }
    /* The box as `from` will access it `off` iterations later (in like's iteration
     * that corresponds to this one of at). */
    Kernel *k = c->k;
    const Var *fv = from->u.loop.var;
    const Var *vs[2] = {fv, like->u.loop.var};
    Expr *ws[2] = {ir_bin(k, IE_ADD, ir_var(k, (Var *)fv), ir_int(k, off)), ir_var(k, at->u.loop.var)};
    int nsub = like != at ? 2 : 1;
    Expr *idx[8];
    bool moves = false;
    for (int d = 0; d < r.rank; d++) {
        moves |= ir_expr_uses_var(r.lo[d], fv);
        idx[d] = xf_simplify_affine(k, xf_subst_expr(k, r.lo[d], vs, ws, nsub));
        const Var *u = unbound_at(idx[d], at);
        if (u) {
            xf_err(c, "the box of %s in %s moves with loop %s, which does not enclose %s", b->name,
                   like->u.loop.var->name, u->name, at->u.loop.var->name);
            goto out;
        }
    }
    if (!moves && off > 0) {
        xf_err(c, "the box of %s that %s accesses does not move with %s: %lld iteration(s) later it "
                  "is the same elements",
               b->name, like->u.loop.var->name, fv->name, (long long)off);
        goto out;
    }
    /* After the prefetches already at the head of `at`, in the order they came. */
    NodeList *body = &at->u.loop.body;
    int pos = 0;
    for (; pos < body->n && body->v[pos]->kind == N_PREFETCH; pos++)
        if (same_prefetch(k, body->v[pos], b, idx, r.width)) {
            xf_err(c, "loop %s already prefetches this box of %s", at->u.loop.var->name, b->name);
            goto out;
        }
    ok = true;
    if (c->dry)
        goto out;
    Node *pf = ir_prefetch(k, b, idx, r.width, c->it->span);
    pf->u.pf.write = !any_read;
    ir_list_insert(body, pos, pf, at);
out:
    acc_free(&reads);
    return ok;
}
