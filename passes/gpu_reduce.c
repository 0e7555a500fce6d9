/* GPU target legalisation, pass `gpu-reduce`: block-wide reductions.
 *
 * `bind(c, thread.x)` accepts a loop whose only carried dependence is an update
 * with one associative operator (`+= *= max= min=`) of shared or global memory at
 * an index the loop does not move (passes/xform_gpu.c): the threads' contributions
 * may be combined in any order, as docs/schedules.md allows for every reduction.
 * This pass finds such statements and marks them `block-reduce`; codegen/cuda then
 * folds each thread's own iterations into a register partial, combines the
 * partials across the block with warp shuffles and a little shared memory, and has
 * thread 0 apply the update once.  The serial meaning is unchanged, so the
 * interpreter runs the statement as written.
 *
 * Emitted only for the shape the combine supports, refused here at the statement
 * with the reason otherwise: one such f32 statement per thread loop, its index
 * fixed over the loops inside the thread loop too, the loop bound to thread.x in a
 * 1-D block, at block level (inside no other thread loop).  Guards inside the
 * thread loop are fine: they skip some of one thread's contributions, and every
 * thread still reaches the combine after the loop. */
#include "gpu_int.h"

/* Statements below a thread loop (vs[0]) that update shared or global memory at an
 * index the thread variable does not move.  *moving is set when such an index
 * moves with a loop between the thread loop and the statement. */
static void red_walk(Node *n, const Var **vs, int nv, Node **out, int *nout, bool *moving)
{
    if (n->kind == N_STMT) {
        const Buffer *b = n->u.stmt.buf;
        if (n->u.stmt.op == SOP_ASSIGN || b->mem == MEM_LOCAL) return;
        for (int d = 0; d < b->rank; d++)
            if (ir_expr_uses_var(n->u.stmt.idx[d], vs[0])) return;
        for (int d = 0; d < b->rank; d++)
            for (int i = 1; i < nv; i++)
                *moving |= ir_expr_uses_var(n->u.stmt.idx[d], vs[i]);
        if (*nout < 4) out[*nout] = n;
        (*nout)++;
        return;
    }
    NodeList *b = ir_body(n);
    const Var *nvs[32];
    int m = nv;
    for (int i = 0; i < nv && i < 31; i++) nvs[i] = vs[i];
    if (n->kind == N_LOOP && m < 32) nvs[m++] = n->u.loop.var;
    for (int i = 0; b && i < b->n; i++)
        red_walk(b->v[i], nvs, m, out, nout, moving);
}

static bool any_reduces(Node *n)
{
    if (n->kind == N_LOOP && gpu_is_thread(n->u.loop.kind)) {
        Node *found[4];
        int nf = 0;
        bool m = false;
        const Var *vs[1] = {n->u.loop.var};
        for (int i = 0; i < n->u.loop.body.n; i++) red_walk(n->u.loop.body.v[i], vs, 1, found, &nf, &m);
        if (nf) return true;
    }
    NodeList *b = ir_body(n);
    for (int i = 0; b && i < b->n; i++)
        if (any_reduces(b->v[i])) return true;
    return false;
}

typedef struct RedCtx {
    const int64_t *block;
    Diags *d;
    bool ok;
} RedCtx;

static void mark(RedCtx *r, Node *n, int tdepth)
{
    if (!r->ok) return;
    if (n->kind == N_LOOP && gpu_is_thread(n->u.loop.kind)) {
        Node *found[4];
        int nf = 0;
        bool moving = false;
        const Var *vs[1] = {n->u.loop.var};
        for (int i = 0; i < n->u.loop.body.n; i++) red_walk(n->u.loop.body.v[i], vs, 1, found, &nf, &moving);
        if (nf) {
            Node *s = found[0];
            const char *why = nf > 1 ? "more than one statement reduces across its threads"
                            : moving ? "its index moves with a loop inside the thread loop"
                            : s->u.stmt.buf->dtype != DT_F32 ? "block-wide reductions are f32 only"
                            : n->u.loop.kind != LOOP_THREAD_X || r->block[1] != 1 || r->block[2] != 1
                                ? "the block is not 1-D along thread.x"
                            : r->block[0] % 32 ? "the block is not a whole number of warps"
                            : tdepth != 0 ? "the loop is not at block level"
                            : NULL;
            if (why) {
                r->ok = false;
                diag_error(r->d, s->span, "thread loop %s reduces into %s across its threads, which the CUDA "
                           "back end emits only for one f32 reduction statement in a 1-D block of whole "
                           "warps: %s", n->u.loop.var->name, s->u.stmt.buf->name, why);
                return;
            }
            s->u.stmt.block_reduce = true;
        }
        tdepth++;
    }
    NodeList *b = ir_body(n);
    for (int i = 0; b && i < b->n; i++) mark(r, b->v[i], tdepth);
}

bool gpu_reduce_pass(Kernel *k, Diags *d)
{
    for (int t = 0; t < k->body.n; t++) {
        Node *top = k->body.v[t];
        if (!gpu_scheduled(top) || !any_reduces(top))
            continue;
        int64_t blk[3] = {1, 1, 1};
        gpu_thread_extents(k, top, blk);
        /* the combine shuffles within whole warps: the block is rounded up (the
         * CUDA back end does the same, seeing a block-reduce statement) */
        if (blk[1] == 1 && blk[2] == 1) blk[0] = (blk[0] + 31) / 32 * 32;
        RedCtx r = {blk, d, true};
        mark(&r, top, 0);
        if (!r.ok) return false;
    }
    return true;
}
