/* skip_tiles(loop): a loop whose every iteration ends in a guard marked `skip`
 * runs only over the iterations where that guard can hold, and the guard goes.
 *
 * A `skip` guard only skips work that changes nothing (online_softmax's tile guard
 * with mask=inf: a tile whose every key the mask excludes leaves the running
 * maximum, sum and product as they are).  Two facts make the move legal:
 *   - an iteration of the loop in which the guard is false for every iteration of
 *     the loops between them does nothing at all (the loop holds nothing but those
 *     loops and the guard), so the loop's range may drop it.  The bound is the
 *     mask-bounds pass's (passes/mask_bounds.c): each affine conjunct with the inner
 *     variables at the values that make it easiest to pass, so it is necessary, not
 *     exact;
 *   - the guard may then go: where it is false its body changes nothing.
 *
 * Why a move and not the pass: on the GPU the tile loop of flash attention is moved
 * outside the rows of a block (reorder) and then gets the shared-memory copies, the
 * pipeline and the tensor-core products, none of which takes a guard inside the
 * rows; bounded here, the block runs the tiles some of its rows need, and every
 * statement runs on whole tiles (the mask selects -inf and 0 inside). */
#include "xform_int.h"

bool xf_skip_tiles(XfCtx *c)
{
    Node *L = xf_arg_loop(c, 0);
    if (!L)
        return false;
    const char *ln = L->u.loop.var->name;
    if (L->u.loop.kind != LOOP_SERIAL || L->u.loop.hint != HINT_NONE) {
        xf_err(c, "loop %s is marked %s: only a serial loop may run over fewer iterations",
               ln, loop_kind_name(L->u.loop.kind));
        return false;
    }
    /* down through loops that hold one node each, to the guard */
    Node *n = L;
    for (;;) {
        NodeList *b = ir_body(n);
        if (!b || b->n != 1) {
            xf_err(c, "loop %s must hold one guard marked skip, through loops that hold nothing else", ln);
            return false;
        }
        n = b->v[0];
        if (n->kind != N_LOOP)
            break;
    }
    if (n->kind != N_IF || !n->u.guard.skip || n->u.guard.els.n) {
        xf_err(c, "the node at the bottom of %s is not a guard marked skip (online_softmax with mask=inf puts "
                  "one around each tile of a masked chain)", ln);
        return false;
    }
    if (!mask_narrow_loop(c->k, L, n, true)) {
        xf_err(c, "the skip guard gives no affine bound on %s", ln);
        xf_note(c, n->span, "the guard");
        return false;
    }
    if (c->dry)
        return true;
    mask_narrow_loop(c->k, L, n, false);
    /* the guard's body takes its place */
    Node *holder = n->parent;
    NodeList *hl = ir_body(holder);
    hl->n = 0;
    for (int i = 0; i < n->u.guard.body.n; i++)
        ir_list_push(hl, n->u.guard.body.v[i], holder);
    return true;
}

/* ---- unmask_tiles ---- */

/* unmask_tiles(loop): the loop's iterations split in two runs, one after the other:
 * first those where the condition of every select(c, a, b) below it that the loop's
 * variable enters holds for all iterations of the loops inside (there the selects
 * are just a), then the rest as they were.  Splitting a loop's range into two
 * consecutive ranges keeps every iteration and its order, so it is always legal;
 * each select dropped in the first run is proven to take its first branch there
 * (xf_prove_le at the statement, with the first run's bounds).
 *
 * The first run's end comes from the conditions' affine conjuncts that the loop's
 * variable enters with a positive coefficient (bounds from above, as `j <= i` is for
 * the tile loop of causal attention), each with the inner variables where it is
 * hardest to hold: block io of a causal flash kernel runs tiles 0 .. 2 io - 1 with
 * no mask at all, and only the two tiles on its diagonal with the selects. */

#define UT_MAX 64

typedef struct Sels {
    Node *stmt[UT_MAX];
    Expr *sel[UT_MAX];
    int n;
    const Var *v;
} Sels;

static void sel_expr(Sels *s, Node *st, Expr *e)
{
    if (!e)
        return;
    if (e->kind == IE_SELECT && ir_expr_uses_var(e->args[0], s->v) && s->n < UT_MAX) {
        s->stmt[s->n] = st;
        s->sel[s->n++] = e;
    }
    for (int i = 0; i < 3; i++)
        sel_expr(s, st, e->args[i]);
}

static void sel_nodes(Sels *s, Node *n)
{
    if (n->kind == N_STMT) {
        sel_expr(s, n, n->u.stmt.value);
        return;
    }
    NodeList *b = ir_body(n);
    for (int i = 0; b && i < b->n; i++)
        sel_nodes(s, b->v[i]);
}

/* Every conjunct of c proven to hold at statement at. */
static bool holds(Kernel *k, Node *at, const Expr *c)
{
    if (c->kind == IE_AND)
        return holds(k, at, c->args[0]) && holds(k, at, c->args[1]);
    const Expr *a = c->args[0], *b = c->args[1];
    switch (c->kind) {
    case IE_LE: return xf_prove_le(k, at, a, b);
    case IE_GE: return xf_prove_le(k, at, b, a);
    case IE_LT: return xf_prove_le(k, at, ir_bin(k, IE_ADD, ir_clone_expr(k, a), ir_int(k, 1)), b);
    case IE_GT: return xf_prove_le(k, at, ir_bin(k, IE_ADD, ir_clone_expr(k, b), ir_int(k, 1)), a);
    default: return false;
    }
}

static void narrow_conj(Kernel *k, Node *L, Node *at, const Expr *c, bool *any)
{
    if (c->kind == IE_AND) {
        narrow_conj(k, L, at, c->args[0], any);
        narrow_conj(k, L, at, c->args[1], any);
        return;
    }
    if (ir_expr_uses_var(c, L->u.loop.var) && mask_narrow_all(k, L, at, c))
        *any = true;
}

bool xf_unmask_tiles(XfCtx *c)
{
    Node *L = xf_arg_loop(c, 0);
    if (!L)
        return false;
    Kernel *k = c->k;
    const char *ln = L->u.loop.var->name;
    if (L->u.loop.kind != LOOP_SERIAL && L->u.loop.kind != LOOP_PIPELINE) {
        xf_err(c, "loop %s is marked %s: only a serial or pipelined loop may be cut in two", ln,
               loop_kind_name(L->u.loop.kind));
        return false;
    }
    Sels s = {.v = L->u.loop.var};
    sel_nodes(&s, L);
    /* the first run: L's range narrowed by every select's conjuncts (restored below) */
    Expr *hi0 = L->u.loop.hi;
    bool any = false;
    for (int i = 0; i < s.n; i++)
        narrow_conj(k, L, s.stmt[i], s.sel[i]->args[0], &any);
    int proven = 0;
    for (int i = 0; any && i < s.n; i++)
        proven += holds(k, s.stmt[i], s.sel[i]->args[0]);
    Expr *hi1 = L->u.loop.hi;
    L->u.loop.hi = hi0;
    if (!proven) {
        xf_err(c, "no select below %s has a mask that holds over a first run of its iterations", ln);
        return false;
    }
    if (c->dry)
        return true;
    /* the copy runs first, on [lo, hi1), with the proven selects replaced by their
     * first branch; the loop itself goes on from there */
    L->u.loop.hi = hi1;
    Node *first = xf_clone_fresh(k, L);
    L->u.loop.hi = hi0;
    ir_list_insert(xf_list_of(k, L), xf_index_in(k, L), first, L->parent);
    Sels f = {.v = first->u.loop.var};
    sel_nodes(&f, first);
    for (int i = 0; i < f.n; i++)
        if (holds(k, f.stmt[i], f.sel[i]->args[0]))
            *f.sel[i] = *f.sel[i]->args[1];
    L->u.loop.lo = xf_simplify_affine(k, ir_bin(k, IE_MAX, L->u.loop.lo, ir_clone_expr(k, hi1)));
    return true;
}
