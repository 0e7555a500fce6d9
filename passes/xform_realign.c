/* realign(buffer, multiple): an input read from a copy whose rows are padded.
 *
 * Why: the tensor-core schedules copy operand tiles into shared memory 16 bytes a
 * thread (cp.async), which needs every row of the operand to start 16-byte
 * aligned.  A bf16 matrix with rows of 1023 elements gives no such alignment, so
 * its tiles are copied one element a thread, and the product runs at half the
 * speed or less.  A copy whose rows are padded to a multiple of 8 elements costs
 * one read and one write of the operand; the product then reads aligned rows.
 *
 * The rewrite: a new first nest writes the copy,
 *
 *     for r0 in 0..M
 *     | for r1 in 0..round_up(K, multiple)
 *     | | A_al[r0, r1] = A?[r0, r1]        past K the guarded read gives 0 (A's pad)
 *
 * and every other read of A becomes a read of A_al at the same index (guarded where
 * it was, with A's pad value).  On a GPU the nest is its own launch.
 *
 * Legal for an input: nothing writes it, so the copy, made before every nest,
 * holds what any later read of A would see.  Inside A the copy equals A.  Past A's
 * last dimension but inside the copy it holds what a guarded read of A yields
 * there, and an unguarded read never goes there (it stayed inside A).  Past the
 * copy's end a guarded read yields the same pad.  So every read returns what it
 * did.  A padded split (`split(k, 64, tail=pad)`) proves its tail adds zero from
 * reads past the end of the buffer's own extent, which the copy's padded
 * extent hides: apply realign after the padded splits (the tuner's templates do). */
#include <stdlib.h>

#include "xform_int.h"
#include "../ir/walk.h"

typedef struct Realign {
    Buffer *from, *to;
} Realign;

static void realign_cb(Expr *e, void *p)
{
    Realign *r = p;
    if (e->kind == IE_LOAD && e->u.load.buf == r->from)
        e->u.load.buf = r->to;
}

static bool realign_pf(Node *n, void *p)
{
    Realign *r = p;
    if (n->kind == N_PREFETCH && n->u.pf.buf == r->from)
        n->u.pf.buf = r->to;
    return true;
}

/* ((e + m - 1) / m) * m, folded when e is a constant. */
static Expr *round_up(Kernel *k, Expr *e, int64_t m)
{
    int64_t v;
    if (xf_const(k, e, &v))
        return ir_int(k, (v + m - 1) / m * m);
    Expr *q = ir_bin(k, IE_DIV, ir_bin(k, IE_ADD, ir_clone_expr(k, e), ir_int(k, m - 1)), ir_int(k, m));
    return ir_simplify(k, ir_bin(k, IE_MUL, q, ir_int(k, m)));
}

bool xf_realign(XfCtx *c)
{
    Buffer *b = xf_arg_buffer(c, 0);
    int64_t m;
    if (!b || !xf_arg_int(c, 1, &m))
        return false;
    if (b->kind == BUF_OUT) {
        xf_err(c, "%s is an output, whose layout is the kernel's interface; realign copies inputs", b->name);
        return false;
    }
    if (b->kind != BUF_IN) {
        xf_err(c, "%s is a temporary: pad its rows with padding(%s, n)", b->name, b->name);
        return false;
    }
    if (b->rank < 1 || b->rank > 8) {
        xf_err(c, "%s has rank %d; realign pads the rows of 1 to 8 dimensions", b->name, b->rank);
        return false;
    }
    if (m < 2 || m > 1024) {
        xf_err(c, "the multiple must be 2 to 1024 elements");
        return false;
    }
    Expr *last = b->shape[b->rank - 1];
    if (xf_divides(c->k, last, m)) {
        xf_err(c, "%s's rows already hold a multiple of %lld elements", b->name, (long long)m);
        return false;
    }
    uint8_t *rd = xcalloc((size_t)c->k->nbufs * 2 + 1, 1), *wr = rd + c->k->nbufs;
    for (int i = 0; i < c->k->body.n; i++)
        ir_node_access(c->k->body.v[i], rd, wr);
    bool written = wr[b->id];
    free(rd);
    if (written) {
        /* the front end never lets a kernel write an input; a check, not a rule */
        xf_err(c, "%s is written in the kernel: a copy made first would go stale", b->name);
        return false;
    }
    if (c->dry)
        return true;

    Kernel *k = c->k;
    const char *name = xf_fresh_buffer_name(k, arena_printf(k->arena, "%s_al", b->name));
    Buffer *al = ir_add_buffer(k, name, b->dtype, BUF_TEMP, b->rank, b->span);
    al->mem = MEM_GLOBAL;
    al->has_pad = b->has_pad;
    al->pad = b->pad;
    for (int d = 0; d < b->rank; d++)
        al->shape[d] = d == b->rank - 1 ? round_up(k, last, m) : ir_clone_expr(k, b->shape[d]);
    Realign r = {b, al};
    xf_visit_exprs(k, NULL, realign_cb, &r);
    xf_walk(k, realign_pf, &r);

    /* the copy, built after the redirection so that its own read stays on b */
    Node *top = NULL, *cur = NULL;
    Var *vs[8];
    for (int d = 0; d < b->rank; d++) {
        Var *v = ir_new_var(k, xf_fresh_name(k, arena_printf(k->arena, "%s_r%d", name, d)));
        Node *x = ir_loop(k, v, ir_int(k, 0), ir_clone_expr(k, al->shape[d]), c->it->span);
        if (cur)
            ir_list_push(&cur->u.loop.body, x, cur);
        else
            top = x;
        cur = x;
        vs[d] = v;
    }
    Expr *li[8], *si[8];
    for (int d = 0; d < b->rank; d++)
        li[d] = ir_var(k, vs[d]), si[d] = ir_var(k, vs[d]);
    Expr *ld = ir_load(k, b, li);
    ld->u.load.guarded = true;
    ir_list_push(&cur->u.loop.body, ir_stmt(k, al, si, SOP_ASSIGN, ir_cast(k, ld, dtype_compute(b->dtype)), c->it->span),
                 cur);
    ir_list_insert(&k->body, 0, top, NULL);
    return true;
}
