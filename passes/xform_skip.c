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
