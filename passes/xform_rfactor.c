/* Reduction factoring: rfactor(loop) turns `B[idx] op= v` inside a reduction loop
 * into partial results R[l] op= v, one per iteration of that loop, initialised to
 * the operator's identity before the reduction and combined into B[idx] after it.
 * The loop then carries no dependence through B, so it can be vectorized (the
 * partials are the lanes) or run in parallel (split-K: split the reduction, rfactor
 * the outer part).  This reassociates the reduction, which perfc allows for sum,
 * prod, max and min (docs/schedules.md). */
#include <math.h>
#include <string.h>

#include "xform_int.h"

static Expr *identity(Kernel *k, StmtOp op, DType t)
{
    double v = op == SOP_ADD ? 0.0 : op == SOP_MUL ? 1.0 : op == SOP_MAX ? -INFINITY : INFINITY;
    if (dtype_is_float(t))
        return ir_flt(k, v, dtype_compute(t));
    int64_t iv = op == SOP_ADD ? 0 : op == SOP_MUL ? 1 : op == SOP_MAX ? INT32_MIN : INT32_MAX;
    if (t == DT_I64)
        iv = op == SOP_ADD ? 0 : op == SOP_MUL ? 1 : op == SOP_MAX ? INT64_MIN : INT64_MAX;
    return ir_cast(k, ir_int(k, iv), t);
}

static bool idx_uses(const Node *s, const Var *v)
{
    for (int d = 0; d < s->u.stmt.buf->rank; d++)
        if (ir_expr_uses_var(s->u.stmt.idx[d], v))
            return true;
    return false;
}

static bool loads_buf(const Expr *e, const Buffer *b)
{
    if (e->kind == IE_LOAD) {
        if (e->u.load.buf == b)
            return true;
        for (int i = 0; i < e->u.load.buf->rank; i++)
            if (loads_buf(e->u.load.idx[i], b))
                return true;
        return false;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        if (loads_buf(e->args[i], b))
            return true;
    return false;
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
    if (s->u.stmt.buf->rank > 8) {
        xf_err(c, "%s has more than 8 dimensions", s->u.stmt.buf->name);
        return false;
    }
    if (op == SOP_ASSIGN) {
        xf_err(c, "the statement in %s is not a reduction (`=`)", l->u.loop.var->name);
        return false;
    }
    if (idx_uses(s, l->u.loop.var)) {
        xf_err(c, "%s indexes %s: it is not a reduction loop of this statement", l->u.loop.var->name,
               s->u.stmt.buf->name);
        return false;
    }
    for (Node *p = s->parent; p != l; p = p->parent)
        if (p->kind == N_LOOP && idx_uses(s, p->u.loop.var)) {
            xf_err(c, "loop %s between %s and the statement indexes %s; the partials would mix "
                      "elements",
                   p->u.loop.var->name, l->u.loop.var->name, s->u.stmt.buf->name);
            return false;
        }
    if (loads_buf(s->u.stmt.value, s->u.stmt.buf)) {
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
           top->parent->u.loop.kind == LOOP_SERIAL && !idx_uses(s, top->parent->u.loop.var))
        top = top->parent;
    if (c->dry)
        return true;

    Kernel *k = c->k;
    Buffer *b = s->u.stmt.buf;
    const char *name = nm ? nm->name : xf_fresh_buffer_name(k, arena_printf(k->arena, "%s_rf", b->name));
    /* Partials in the compute type: f16/bf16 results accumulate in f32 anyway. */
    Buffer *r = xf_add_temp(k, name, dtype_compute(b->dtype), MEM_LOCAL, 1, &ext, s->span);
    xf_set_private(k, r, top, false);
    NodeList *list = xf_list_of(k, top);
    int at = xf_index_in(k, top);

    Var *vi = ir_new_var(k, xf_fresh_name(k, arena_printf(k->arena, "%s_init", l->u.loop.var->name)));
    Node *init = ir_loop(k, vi, ir_int(k, 0), ir_int(k, ext), l->span);
    Expr *ii[1] = {ir_var(k, vi)};
    ir_list_push(&init->u.loop.body, ir_stmt(k, r, ii, SOP_ASSIGN, identity(k, op, r->dtype), s->span), init);

    Var *vc = ir_new_var(k, xf_fresh_name(k, arena_printf(k->arena, "%s_comb", l->u.loop.var->name)));
    Node *comb = ir_loop(k, vc, ir_int(k, 0), ir_int(k, ext), l->span);
    Expr *ci[1] = {ir_var(k, vc)};
    Expr *oidx[8];
    for (int d = 0; d < b->rank && d < 8; d++)
        oidx[d] = ir_clone_expr(k, s->u.stmt.idx[d]);
    ir_list_push(&comb->u.loop.body, ir_stmt(k, b, oidx, op, ir_cast(k, ir_load(k, r, ci), dtype_compute(b->dtype)), s->span), comb);

    Expr *ri = xf_simplify_affine(k, ir_bin(k, IE_SUB, ir_var(k, l->u.loop.var), ir_clone_expr(k, l->u.loop.lo)));
    s->u.stmt.buf = r;
    s->u.stmt.idx = arena_alloc(k->arena, sizeof(Expr *));
    s->u.stmt.idx[0] = ri;
    ir_list_insert(list, at + 1, comb, top->parent);
    ir_list_insert(list, at, init, top->parent);
    return true;
}
