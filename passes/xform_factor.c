/* factor_out(loop): a sum whose every term carries the same factor is the factor
 * times the sum of the rest.  `B[I] = 0; for d: B[I] += c * x(d)` becomes
 * `B[I] = 0; for d: B[I] += x(d); B[I] *= c` when no factor c varies with the loop.
 *
 * Why: a contraction whose terms are scaled (attention's `Q · rsqrt(D) · K`) is not
 * the plain product of two loads that tensor-core products (`mma`, `wgmma`) and
 * register-tiled CPU kernels accumulate; with the scale applied once per element after
 * the sum, the sum is.  It also does D multiplications fewer per element.
 *
 * Legal when the loop holds, through loops and guards, one `+=` into an element
 * its index fixes over the loop, the node just before the loop (or before the
 * guards around it that hold nothing else) sets that element to 0 (so the sum
 * starts from nothing the factor must not scale), and the factors
 * taken out read neither the loop's variables (its own and those inside it) nor
 * the buffer summed into.  Factors in a denominator (`x / c`) come out as a
 * division, or as a multiplication by 1 / c when c is a constant of the kernel.
 * Distributing the product over the sum changes results in the last bits,
 * as the reassociation of reductions does (docs/schedules.md). */
#include "xform_int.h"
#include "../ir/walk.h"

/* A leaf the sum's loops do not move and that does not read the sum. */
static bool invariant(const Expr *e, Node *const *loops, int nl, const Buffer *sum)
{
    for (int i = 0; i < nl; i++)
        if (ir_expr_uses_var(e, loops[i]->u.loop.var))
            return false;
    return !ir_expr_reads(e, sum);
}

/* The product of the numerator leaves over the product of the denominator ones
 * (keep says which leaves), or NULL when keep selects none; base starts the
 * numerator when given. */
static Expr *product(Kernel *k, const XfFactors *f, bool keep_inv, const bool *inv, Expr *base)
{
    Expr *num = base, *den = NULL;
    for (int i = 0; i < f->n; i++) {
        if (inv[i] != keep_inv)
            continue;
        Expr *x = ir_clone_expr(k, f->leaf[i]);
        if (f->den[i])
            den = den ? ir_bin(k, IE_MUL, den, x) : x;
        else
            num = num ? ir_bin(k, IE_MUL, num, x) : x;
    }
    if (!den)
        return num;
    if (!num)
        num = ir_flt(k, 1.0, den->dtype);
    return ir_bin(k, IE_DIV, num, den);
}

static bool zero(const Expr *e) { return (e->kind == IE_FLT && e->u.f == 0) || (e->kind == IE_INT && e->u.i == 0); }

bool xf_factor_out(XfCtx *c)
{
    Node *l = xf_arg_loop(c, 0);
    if (!l)
        return false;
    const char *ln = l->u.loop.var->name;
    if (l->u.loop.kind != LOOP_SERIAL && l->u.loop.kind != LOOP_UNROLL) {
        xf_err(c, "loop %s is marked %s", ln, loop_kind_name(l->u.loop.kind));
        return false;
    }
    /* the loop and the loops inside it, down to the one statement */
    Node *loops[16];
    int nl = 0;
    Node *s = l;
    while (s->kind != N_STMT) {
        if (s->kind == N_LOOP) {
            if (nl == 16) {
                xf_err(c, "more than 16 loops inside %s", ln);
                return false;
            }
            loops[nl++] = s;
        }
        NodeList *b = ir_body(s);
        if (!b || b->n != 1 || (b->v[0]->kind != N_LOOP && b->v[0]->kind != N_IF && b->v[0]->kind != N_STMT)) {
            xf_err(c, "loop %s must hold one sum statement (through loops and guards)", ln);
            xf_note_prefetch(c, s);
            return false;
        }
        s = b->v[0];
    }
    Buffer *B = s->u.stmt.buf;
    if (s->u.stmt.op != SOP_ADD || s->u.stmt.guarded || !dtype_is_float(B->dtype)) {
        xf_err(c, "the statement in %s is not a float sum (`+=`)", ln);
        return false;
    }
    for (int i = 0; i < nl; i++)
        if (ir_stmt_index_uses(s, loops[i]->u.loop.var)) {
            xf_err(c, "%s indexes %s: the loop does not sum into one element", loops[i]->u.loop.var->name, B->name);
            return false;
        }
    /* the sum starts from 0 just before the loop, or just before guards that hold
     * only the loop (a masked score: `s = 0; if j <= i { for d: s += .. }`); the
     * scale then goes after the loop inside those guards, so an element the mask
     * leaves at 0 is not scaled, which is 0 either way */
    NodeList *sib = xf_list_of(c->k, l);
    int at = xf_index_in(c->k, l);
    Node *outer = l;
    while (at == 0 && outer->parent && outer->parent->kind == N_IF && outer->parent->u.guard.body.n == 1 &&
           !outer->parent->u.guard.els.n) {
        outer = outer->parent;
        at = xf_index_in(c->k, outer);
    }
    NodeList *isib = xf_list_of(c->k, outer);
    Node *init = at > 0 ? isib->v[at - 1] : NULL;
    bool started = init && init->kind == N_STMT && init->u.stmt.buf == B && init->u.stmt.op == SOP_ASSIGN &&
                   !init->u.stmt.guarded && zero(init->u.stmt.value);
    for (int d = 0; started && d < B->rank; d++)
        started = xf_expr_equal(c->k, init->u.stmt.idx[d], s->u.stmt.idx[d]);
    if (!started) {
        xf_err(c, "the node before %s does not set %s at the summed element to 0: a factor taken out of "
                  "the sum would scale what it started from",
               ln, B->name);
        return false;
    }
    XfFactors f = {0};
    xf_factors(s->u.stmt.value, false, &f);
    bool inv[32];
    int ninv = 0;
    for (int i = 0; i < f.n; i++)
        ninv += inv[i] = invariant(f.leaf[i], loops, nl, B);
    if (f.overflow || ninv == 0) {
        xf_err(c, "no factor of the sum in %s stays the same over the loop", ln);
        xf_note(c, s->span, "the sum");
        return false;
    }
    if (ninv == f.n) {
        xf_err(c, "every factor of the sum in %s stays the same over the loop: nothing would be left to sum", ln);
        return false;
    }
    if (c->dry)
        return true;
    Kernel *k = c->k;
    DType t = s->u.stmt.value->dtype;
    /* some factor stays (checked above), so the rest is never empty */
    s->u.stmt.value = ir_cast(k, product(k, &f, false, inv, NULL), t);
    /* a divisor that is a constant of the kernel (`/ sqrt(D)`) becomes one
     * multiplication by its reciprocal, which the code generators fold: a division
     * per element costs a GPU about ten instructions (the reciprocal rounds once
     * more, within what reassociating the sum already allows) */
    bool any_den = false;
    for (int i = 0; i < f.n; i++)
        any_den |= inv[i] && f.den[i] && !xf_kernel_const(f.leaf[i]);
    Expr *idx[8];
    for (int d = 0; d < B->rank; d++)
        idx[d] = ir_clone_expr(k, s->u.stmt.idx[d]);
    /* B *= c, or B = B * c / e when a factor divides (ir_load copies idx's array, not
     * its trees: the load gets clones of its own) */
    Node *scale;
    if (any_den) {
        Expr *lidx[8];
        for (int d = 0; d < B->rank; d++)
            lidx[d] = ir_clone_expr(k, s->u.stmt.idx[d]);
        Expr *cur = ir_cast(k, ir_load(k, B, lidx), t);
        scale = ir_stmt(k, B, idx, SOP_ASSIGN, ir_cast(k, product(k, &f, true, inv, cur), t), s->span);
    } else {
        scale = ir_stmt(k, B, idx, SOP_MUL, ir_cast(k, product(k, &f, true, inv, NULL), t), s->span);
    }
    ir_list_insert(sib, xf_index_in(k, l) + 1, scale, l->parent);
    return true;
}
