/* Padded splits: `split(l, f, tail=pad)` and `tile(.., tail=pad)` run a loop whose
 * extent the factor does not divide up to the next multiple of it, with no guard,
 * so that every tile has the same shape (what mma, wgmma and the staging copies of
 * a tensor-core schedule need: a 4095 x 4097 product runs 32 x 33 tiles of 128,
 * the last ones partly past the edge).  The iterations past the end are harmless
 * by construction, and the accesses that may reach past a buffer become guarded:
 * a guarded load yields 0 there (its pad value for a padded input), a guarded
 * store is dropped (ir/ir.h).
 *
 * Legal when every statement under the loop, at an iteration past the end, either
 *   - writes only past the end of a buffer: one index of its store is the loop's
 *     variable plus a constant c, in a dimension of size hi + c (C[i, j] under the
 *     loop over i < M, C being M rows), or that divided by a constant q in a
 *     dimension of at most (hi + c) / q (Y[m / 196, ..] under a loop over the
 *     N*196 output pixels of N images); the store is dropped;
 *   - or adds zero: `X += a * b * ..`, each factor a load that lies past the end
 *     the same way (so it reads 0: a tail of k reads A[i, k] and B[k, j] past K) or
 *     a numeric constant, converted or not.  0 times anything finite is 0, and
 *     every factor is 0 or a constant, so nothing can be infinite.
 * What such an iteration reads is then never seen.  Loads and stores the padded
 * range may carry out of their buffer are marked guarded; back ends test them (the
 * staging copies of cache carry the marks: zero-filled copies in, dropped copies
 * out). */
#include "../ir/arith.h"
#include "../ir/walk.h"
#include "xform_int.h"

/* idx - v + hi - size == 0: the index is v + c in a dimension of size hi + c, so it
 * lies past the end exactly when v does. */
static bool past_end_with(Kernel *k, const Expr *idx, const Var *v, const Expr *hi, const Expr *size)
{
    Expr *d = ir_bin(k, IE_SUB, ir_bin(k, IE_ADD, ir_bin(k, IE_SUB, ir_clone_expr(k, idx), ir_var(k, (Var *)v)),
                                       ir_clone_expr(k, hi)),
                     ir_clone_expr(k, size));
    d = xf_simplify_affine(k, d);
    int64_t z;
    return xf_const(k, d, &z) && z == 0 && !ir_expr_uses_var(size, v);
}

/* idx = (v + c) / q with q > 0 in a dimension of size s, where (hi + c) / q >= s:
 * the outermost index a collapsed loop leaves (`m / 196`, image n of output pixel
 * m, N images of 196 pixels), past the end of the dimension whenever v is past
 * its own (the quotient only grows with v).  With sizes not bound, s*q = hi + c
 * exactly. */
static bool past_end_div(Kernel *k, const Expr *idx, const Var *v, const Expr *hi, const Expr *size)
{
    int64_t q, c, h, sz;
    if (idx->kind != IE_DIV || !xf_const(k, idx->args[1], &q) || q <= 0 || ir_expr_uses_var(size, v))
        return false;
    Expr *d = xf_simplify_affine(k, ir_bin(k, IE_SUB, ir_clone_expr(k, idx->args[0]), ir_var(k, (Var *)v)));
    if (xf_const(k, d, &c) && xf_const(k, hi, &h) && xf_const(k, size, &sz))
        return ar_floordiv(h + c, q) >= sz;
    Expr *sq = ir_bin(k, IE_MUL, ir_clone_expr(k, size), ir_int(k, q));
    return past_end_with(k, idx->args[0], v, hi, sq);
}

static bool access_past_end(Kernel *k, const Buffer *b, Expr *const *idx, const Var *v, const Expr *hi)
{
    for (int d = 0; d < b->rank; d++)
        if (past_end_with(k, idx[d], v, hi, b->shape[d]) || past_end_div(k, idx[d], v, hi, b->shape[d]))
            return true;
    return false;
}

/* The value is 0 at every iteration past the end: see the head of the file. */
static bool zero_past_end(Kernel *k, const Expr *e, const Var *v, const Expr *hi, bool *zero)
{
    switch (e->kind) {
    case IE_CAST:
        return zero_past_end(k, e->args[0], v, hi, zero);
    case IE_MUL:
        return zero_past_end(k, e->args[0], v, hi, zero) && zero_past_end(k, e->args[1], v, hi, zero);
    case IE_INT:
        return true;
    case IE_FLT:
        return e->u.f - e->u.f == 0; /* finite */
    case IE_LOAD: {
        const Buffer *b = e->u.load.buf;
        if ((b->has_pad && b->pad != 0) || !access_past_end(k, b, e->u.load.idx, v, hi))
            return false;
        *zero = true;
        return true;
    }
    default:
        return false;
    }
}

typedef struct PadCheck {
    Kernel *k;
    const Var *v;
    const Expr *hi;
    const Node *bad;
    /* the loops of one iteration around the padded one, whose variables are their
     * first value: the rows of a one-head kernel split off a loop to stage K and V
     * at, `q[f_all * 1000 + f_t]`, lie past the end exactly when f_t does */
    const Var *one[16];
    Expr *first[16];
    int none;
} PadCheck;

static bool check_stmt(PadCheck *p, const Node *s)
{
    const Buffer *b = s->u.stmt.buf;
    Expr *idx[8];
    for (int d = 0; d < b->rank && d < 8; d++)
        idx[d] = xf_subst_expr(p->k, s->u.stmt.idx[d], p->one, p->first, p->none);
    if (b->rank <= 8 && access_past_end(p->k, b, idx, p->v, p->hi))
        return true;
    bool zero = false;
    const Expr *val = xf_subst_expr(p->k, s->u.stmt.value, p->one, p->first, p->none);
    return s->u.stmt.op == SOP_ADD && zero_past_end(p->k, val, p->v, p->hi, &zero) && zero;
}

static void check_nodes(PadCheck *p, const NodeList *l)
{
    for (int i = 0; i < l->n && !p->bad; i++) {
        const Node *n = l->v[i];
        if (n->kind == N_STMT) {
            if (!check_stmt(p, n))
                p->bad = n;
        } else if (n->kind != N_PREFETCH) {
            check_nodes(p, ir_body((Node *)n));
        }
    }
}

bool xf_pad_legal(XfCtx *c, Node *l)
{
    PadCheck p = {c->k, l->u.loop.var, l->u.loop.hi, NULL, {0}, {0}, 0};
    for (const Node *a = l->parent; a && p.none < 16; a = a->parent) {
        int64_t lo, hi;
        if (a->kind == N_LOOP && xf_const(c->k, a->u.loop.lo, &lo) && xf_const(c->k, a->u.loop.hi, &hi) &&
            hi == lo + 1) {
            p.one[p.none] = a->u.loop.var;
            p.first[p.none++] = ir_int(c->k, lo);
        }
    }
    check_nodes(&p, &l->u.loop.body);
    if (!p.bad)
        return true;
    const Node *s = p.bad;
    xf_err(c, "tail=pad: past the end of %s, the statement on %s would write inside it and add something "
              "other than zero; a padded loop may only hold stores indexed by %s (dropped past the end) and "
              "sums of products of loads indexed by it (zero there); use tail=guard or tail=peel",
           l->u.loop.var->name, s->u.stmt.buf->name, l->u.loop.var->name);
    xf_note(c, s->span, "this statement");
    return false;
}

/* ---- whether a subtree holds a padded split's guarded accesses ---- */

static WalkAct guarded_node(void *ctx, Node *n)
{
    (void)ctx;
    return n->kind == N_STMT && n->u.stmt.guarded ? WALK_STOP : WALK_GO;
}

static WalkAct guarded_expr(void *ctx, Expr *e)
{
    (void)ctx;
    return e->kind == IE_LOAD && e->u.load.guarded && !e->u.load.buf->has_pad ? WALK_STOP : WALK_GO;
}

bool xf_padded_within(Node *n)
{
    return !ir_walk_node(n, &(IrVisitor){.pre = guarded_node, .expr = guarded_expr});
}

/* ---- marking the accesses that may leave their buffer ---- */

typedef struct Mark {
    Kernel *k;
    const Node *at;
    const Var *vo, *vi;
    /* under a guard that tests the padded variables: an index that does not use them
     * may still have been in range only through that guard (K[j] under `j <= i`,
     * with i now running past its end), so every index is checked there */
    bool under;
} Mark;

static bool may_leave(Mark *m, const Buffer *b, Expr *const *idx)
{
    for (int d = 0; d < b->rank; d++) {
        if (!m->under && !ir_expr_uses_var(idx[d], m->vo) && !ir_expr_uses_var(idx[d], m->vi))
            continue;
        Expr *end = ir_bin(m->k, IE_ADD, ir_clone_expr(m->k, idx[d]), ir_int(m->k, 1));
        if (!xf_prove_le(m->k, m->at, ir_int(m->k, 0), idx[d]) || !xf_prove_le(m->k, m->at, end, b->shape[d]))
            return true;
    }
    return false;
}

static void mark_load(Expr *e, void *p)
{
    Mark *m = p;
    if (e->kind == IE_LOAD && !e->u.load.guarded && may_leave(m, e->u.load.buf, e->u.load.idx))
        e->u.load.guarded = true;
}

static void mark_nodes(Mark *m, NodeList *l)
{
    for (int i = 0; i < l->n; i++) {
        Node *n = l->v[i];
        if (n->kind == N_STMT) {
            m->at = n;
            Mark x = *m;
            xf_visit_exprs(m->k, n, mark_load, &x);
            if (!n->u.stmt.guarded && may_leave(m, n->u.stmt.buf, n->u.stmt.idx))
                n->u.stmt.guarded = true;
        } else if (n->kind == N_IF) {
            bool was = m->under;
            m->under |= ir_expr_uses_var(n->u.guard.cond, m->vo) || ir_expr_uses_var(n->u.guard.cond, m->vi);
            mark_nodes(m, ir_body(n));
            mark_nodes(m, &n->u.guard.els);
            m->under = was;
        } else if (n->kind != N_PREFETCH) {
            mark_nodes(m, ir_body(n));
        }
    }
}

void xf_pad_mark(Kernel *k, Node *outer, const Var *vo, const Var *vi)
{
    Mark m = {k, outer, vo, vi, false};
    mark_nodes(&m, &outer->u.loop.body);
}
