/* Reduction factoring: rfactor(loop) turns `B[idx] op= v` inside a reduction loop
 * into partial results R[l] op= v, one per iteration of that loop, initialised to
 * the operator's identity before the reduction and combined into B[idx] after it.
 * The loop then carries no dependence through B, so it can be vectorized (the
 * partials are the lanes) or run in parallel (split-K: split the reduction, rfactor
 * the outer part).  This reassociates the reduction, which perfc allows for sum,
 * prod, max and min (docs/schedules.md).
 *
 * With expand=1 the partials keep the result's element too: R[l, idx] (the result's
 * dimensions after the loop's), a global temporary rather than one private to the
 * element.  The initialisation, the partial sums and the combination then share no
 * element across the loops around them, so those loops can be distributed and the
 * partial nest reordered with l outermost: split-K on a GPU, where each slice of the
 * reduction runs on its own blocks into its own [M, N] plane and a second nest sums
 * the planes. */
#include <math.h>
#include <string.h>

#include "../ir/arith.h"
#include "../ir/walk.h"
#include "xform_int.h"

static Expr *identity(Kernel *k, StmtOp op, DType t)
{
    ArScalar v;
    ar_identity(op, t, false, &v);
    if (v.is_float)
        return ir_flt(k, v.f, dtype_compute(t));
    return ir_cast(k, ir_int(k, v.i), t);
}

bool xf_rfactor(XfCtx *c)
{
    Node *l = xf_arg_loop(c, 0);
    if (!l)
        return false;
    const SchedArg *nm = xf_kwarg(c, "name");
    if (nm && (nm->kind != SARG_NAME || ir_find_buffer(c->k, nm->name))) {
        xf_err(c, "name= needs a new buffer name");
        return false;
    }
    const SchedArg *ex = xf_kwarg(c, "expand");
    if (ex && (ex->kind != SARG_INT || ex->ival < 0 || ex->ival > 1)) {
        xf_err(c, "expand= takes 0 or 1");
        return false;
    }
    bool expand = ex && ex->ival == 1;
    /* l must hold a single chain down to one reduction statement. */
    Node *s = l;
    while (s->kind != N_STMT) {
        NodeList *b = ir_body(s);
        if (b->n != 1) {
            xf_err(c, "loop %s must contain a single reduction statement (perfectly nested)",
                   l->u.loop.var->name);
            xf_note_prefetch(c, s);
            return false;
        }
        s = b->v[0];
        if (s->kind == N_LOOP && s->u.loop.kind != LOOP_SERIAL && s->u.loop.kind != LOOP_UNROLL) {
            xf_err(c, "loop %s inside %s is marked %s", s->u.loop.var->name, l->u.loop.var->name,
                   loop_kind_name(s->u.loop.kind));
            return false;
        }
    }
    StmtOp op = s->u.stmt.op;
    if (s->u.stmt.buf->rank > (expand ? 7 : 8)) {
        xf_err(c, "%s has more than %d dimensions", s->u.stmt.buf->name, expand ? 7 : 8);
        return false;
    }
    if (op == SOP_ASSIGN) {
        xf_err(c, "the statement in %s is not a reduction (`=`)", l->u.loop.var->name);
        return false;
    }
    if (ir_stmt_index_uses(s, l->u.loop.var)) {
        xf_err(c, "%s indexes %s: it is not a reduction loop of this statement", l->u.loop.var->name,
               s->u.stmt.buf->name);
        return false;
    }
    for (Node *p = s->parent; p != l; p = p->parent)
        if (p->kind == N_LOOP && ir_stmt_index_uses(s, p->u.loop.var)) {
            xf_err(c, "loop %s between %s and the statement indexes %s; the partials would mix "
                      "elements",
                   p->u.loop.var->name, l->u.loop.var->name, s->u.stmt.buf->name);
            return false;
        }
    if (ir_expr_reads(s->u.stmt.value, s->u.stmt.buf)) {
        xf_err(c, "the reduction reads %s itself", s->u.stmt.buf->name);
        return false;
    }
    if (l->u.loop.kind != LOOP_SERIAL && l->u.loop.kind != LOOP_UNROLL) {
        xf_err(c, "loop %s is already marked %s", l->u.loop.var->name, loop_kind_name(l->u.loop.kind));
        return false;
    }
    int64_t ext;
    if (!xf_const_extent(c->k, l, &ext) || ext < 1 || ext > (1 << 20)) {
        xf_err(c, "the extent of %s must be a constant between 1 and 2^20", l->u.loop.var->name);
        return false;
    }
    /* Partials live across the enclosing reduction loops: climb while the parent
     * is a perfectly nested loop that does not index the result. */
    Node *top = l;
    while (top->parent && top->parent->kind == N_LOOP && top->parent->u.loop.body.n == 1 &&
           top->parent->u.loop.kind == LOOP_SERIAL && !ir_stmt_index_uses(s, top->parent->u.loop.var))
        top = top->parent;
    /* Guards between top and the statement.  One that tests no loop inside top (a
     * tile's tail: `j1o * 4 + j1i < N`) decides whether this element is written at
     * all, so the combination must sit under it too (without it the combination
     * wrote C[i, 7] of a C with 7 columns).  One that tests the reduction's loops
     * only filters contributions and stays with the partials: a reduction's own
     * tail (`ko * 4 + ki < K`) or a mask (`j <= i` in causal attention), whose result
     * index is in range by the loops' bounds; where no contribution passes, the
     * combination adds the identity. */
    Node *outer_guards[8];
    int nog = 0;
    for (Node *p = s->parent; p && p != top->parent; p = p->parent) {
        if (p->kind != N_IF)
            continue;
        bool inner = false;
        for (Node *q = s->parent; q && q != top->parent; q = q->parent)
            if (q->kind == N_LOOP && ir_expr_uses_var(p->u.guard.cond, q->u.loop.var))
                inner = true;
        if (!inner) {
            if (nog == 8) {
                xf_err(c, "more than 8 guards around the reduction statement");
                return false;
            }
            outer_guards[nog++] = p;
        }
    }
    if (c->dry)
        return true;

    Kernel *k = c->k;
    Buffer *b = s->u.stmt.buf;
    const char *name = nm ? nm->name : xf_fresh_buffer_name(k, arena_printf(k->arena, "%s_rf", b->name));
    /* Partials in the compute type: f16/bf16 results accumulate in f32 anyway. */
    Buffer *r;
    if (expand) {
        r = ir_add_buffer(k, name, dtype_compute(b->dtype), BUF_TEMP, 1 + b->rank, s->span);
        r->mem = MEM_GLOBAL;
        r->shape[0] = ir_int(k, ext);
        for (int d = 0; d < b->rank; d++)
            r->shape[1 + d] = ir_clone_expr(k, b->shape[d]);
    } else {
        r = xf_add_temp(k, name, dtype_compute(b->dtype), MEM_LOCAL, 1, &ext, s->span);
        xf_set_private(k, r, top, false);
    }
    /* R's index at loop variable v: [v] or, expanded, [v, idx...] */
    int rr = r->rank;
    NodeList *list = xf_list_of(k, top);
    int at = xf_index_in(k, top);

    Var *vi = ir_new_var(k, xf_fresh_name(k, arena_printf(k->arena, "%s_init", l->u.loop.var->name)));
    Node *init = ir_loop(k, vi, ir_int(k, 0), ir_int(k, ext), l->span);
    Expr *ii[8] = {ir_var(k, vi)};
    for (int d = 1; d < rr; d++)
        ii[d] = ir_clone_expr(k, s->u.stmt.idx[d - 1]);
    Node *is = ir_stmt(k, r, ii, SOP_ASSIGN, identity(k, op, r->dtype), s->span);
    if (expand)
        is->u.stmt.guarded = s->u.stmt.guarded; /* R has the result's extents: its edges too */
    ir_list_push(&init->u.loop.body, is, init);

    Var *vc = ir_new_var(k, xf_fresh_name(k, arena_printf(k->arena, "%s_comb", l->u.loop.var->name)));
    Node *comb = ir_loop(k, vc, ir_int(k, 0), ir_int(k, ext), l->span);
    Expr *ci[8] = {ir_var(k, vc)};
    for (int d = 1; d < rr; d++)
        ci[d] = ir_clone_expr(k, s->u.stmt.idx[d - 1]);
    Expr *oidx[8];
    for (int d = 0; d < b->rank && d < 8; d++)
        oidx[d] = ir_clone_expr(k, s->u.stmt.idx[d]);
    Node *cs = ir_stmt(k, b, oidx, op, ir_cast(k, ir_load(k, r, ci), dtype_compute(b->dtype)), s->span);
    cs->u.stmt.guarded = s->u.stmt.guarded; /* a padded split's store past the edge stays dropped */
    ir_list_push(&comb->u.loop.body, cs, comb);

    Expr *ri = xf_simplify_affine(k, ir_bin(k, IE_SUB, ir_var(k, l->u.loop.var), ir_clone_expr(k, l->u.loop.lo)));
    Expr **si = arena_alloc(k->arena, sizeof(Expr *) * (size_t)rr);
    si[0] = ri;
    for (int d = 1; d < rr; d++)
        si[d] = s->u.stmt.idx[d - 1];
    if (!expand)
        s->u.stmt.guarded = false; /* the partials' buffer spans the loop */
    s->u.stmt.buf = r;
    s->u.stmt.idx = si;
    /* the combination under the guards that decide whether the element exists */
    Node *comb_top = comb;
    for (int g = 0; g < nog; g++) {
        Node *w = ir_guard(k, ir_clone_expr(k, outer_guards[g]->u.guard.cond), outer_guards[g]->span);
        ir_list_push(&w->u.guard.body, comb_top, w);
        comb_top = w;
    }
    ir_list_insert(list, at + 1, comb_top, top->parent);
    ir_list_insert(list, at, init, top->parent);
    return true;
}
