/* GPU target lowering, pass `gpu-pipeline`: which loops marked `pipeline` the CUDA
 * back end runs as a multi-stage software pipeline, and how.
 *
 * `pipeline(loop, S)` (passes/xform_gpu.c) rotated the shared buffers filled by the
 * copies at the head of a serial loop over S stages: their first index is
 * `loop % S`.  The back end issues the copies of iteration v + S - 1 while
 * iteration v computes (docs/cuda.md "Software pipelines").  This pass accepts a
 * pipeline loop of a scheduled launch when
 *   - it runs at block level (no enclosing thread loop) and inside no other
 *     accepted pipeline, from a start that is a constant >= 0 or proven >= 0 (the
 *     stage index then prints as an unsigned remainder);
 *   - its body starts with one or more copy nodes, each of whose statements writes
 *     a shared buffer with `=` at first index `loop % S` (one S for all), and holds
 *     something after them;
 *   - the copies read nothing the loop writes, and nothing after them writes what
 *     they read or fill: moving them to earlier iterations changes no value.
 * It records the stage count and the number of leading copy nodes on the loop
 * (`stages S copies N` in the printed IR), and marks the `wide` copies among them
 * from global to shared memory `cp.async`: issued asynchronously, completed by the
 * pipeline's group waits.  A pipeline loop it does not accept keeps stages 0 and is
 * emitted as a plain serial loop, which means the same.
 *
 * Copies that stay synchronous (rows whose length gives no 4-byte alignment:
 * one element a thread) would stall the thread on their loads before the body
 * runs.  When they sit under thread and unrolled loops only, and need at most
 * 64 registers a thread (two 16-bit elements to a register), the loop is marked
 * `through N registers` (N elements), unless the body's products are wgmma: the
 * back end loads them into registers before the body and stores them to their
 * stage after it (the same values to the same places within the same iteration,
 * and no one reads that stage before the next iteration's barrier).  Measured on
 * an H100 (bf16 4095 x 4097 x 1023): mma.sync code staged one element to a
 * register 1.04 ms, two to a register 0.53; wgmma code unstaged 0.46, staged 0.59,
 * because its asynchronous products already run while the loads wait and the
 * staging costs registers beside 128 accumulators. */
#include <stdlib.h>

#include "../ir/walk.h"
#include "gpu_int.h"
#include "xform_int.h" /* xf_prove_le */

/* The stage count of copy node n of pipelined loop v: every statement below writes
 * a shared buffer with `=` at first index `v % S`; 0 when n is not such a node. */
static int64_t stage_copy(const Node *n, const Var *v)
{
    if (n->kind == N_STMT) {
        const Buffer *b = n->u.stmt.buf;
        const Expr *i0 = b->rank ? n->u.stmt.idx[0] : NULL;
        if (b->mem != MEM_SHARED || n->u.stmt.op != SOP_ASSIGN || !i0 || i0->kind != IE_MOD ||
            i0->args[0]->kind != IE_VAR || i0->args[0]->u.var != v || i0->args[1]->kind != IE_INT)
            return 0;
        return i0->args[1]->u.i >= 2 ? i0->args[1]->u.i : 0;
    }
    const NodeList *b = ir_body((Node *)n);
    int64_t S = 0;
    for (int i = 0; b && i < b->n; i++) {
        int64_t t = stage_copy(b->v[i], v);
        if (!t || (S && t != S)) return 0;
        S = t;
    }
    return S;
}

static void mark_async(Node *n)
{
    if (n->kind == N_LOOP && n->u.loop.hint == HINT_WIDE) {
        const Node *s = n->u.loop.body.v[0];
        const Expr *v = s->u.stmt.value->kind == IE_CAST ? s->u.stmt.value->args[0] : s->u.stmt.value;
        if (v->u.load.buf->mem == MEM_GLOBAL && s->u.stmt.buf->mem == MEM_SHARED)
            n->u.loop.hint = HINT_ASYNC;
        return;
    }
    NodeList *b = ir_body(n);
    for (int i = 0; b && i < b->n; i++) mark_async(b->v[i]);
}

/* Elements the synchronous copies under n load per thread, each counted once per
 * iteration of the unrolled loops around it (mult); false when a serial loop or a
 * guard lies between, an extent is not constant, or the copies store more than
 * one dtype (*dt: the first one's, -1 before it). */
static bool sync_elems(Kernel *k, const Node *n, int64_t mult, int64_t *elems, int *dt)
{
    if (n->kind == N_PREFETCH)
        return true;
    if (n->kind == N_STMT) {
        if (*dt >= 0 && *dt != (int)n->u.stmt.buf->dtype)
            return false;
        *dt = (int)n->u.stmt.buf->dtype;
        *elems += mult;
        return true;
    }
    if (n->kind != N_LOOP)
        return false;
    if (n->u.loop.hint == HINT_ASYNC || n->u.loop.hint == HINT_WIDE)
        return true; /* issued where it stands */
    int64_t lo, ext;
    if (gpu_is_thread(n->u.loop.kind)) {
        ext = 1;
    } else if (n->u.loop.kind == LOOP_UNROLL || n->u.loop.kind == LOOP_VECTOR) {
        if (!gpu_loop_extent(k, n, &lo, &ext) || ext < 1)
            return false;
    } else {
        return false;
    }
    for (int i = 0; i < n->u.loop.body.n; i++)
        if (!sync_elems(k, n->u.loop.body.v[i], mult * ext, elems, dt))
            return false;
    return true;
}

enum { REG_STAGE_REGS = 64 }; /* beside up to 128 accumulator registers */

static bool has_wgmma(const Node *n)
{
    if (n->kind == N_LOOP && n->u.loop.kind == LOOP_WGMMA)
        return true;
    const NodeList *b = ir_body((Node *)n);
    for (int i = 0; b && i < b->n; i++)
        if (has_wgmma(b->v[i]))
            return true;
    return false;
}

/* e >= 0 wherever loop n starts: a constant, a max with such an operand, or proven. */
static bool nonneg(Kernel *k, const Node *n, const Expr *e)
{
    int64_t v;
    if (gpu_cval(k, e, &v))
        return v >= 0;
    if (e->kind == IE_MAX)
        return nonneg(k, n, e->args[0]) || nonneg(k, n, e->args[1]);
    return xf_prove_le(k, n, ir_int(k, 0), e);
}

static bool accept(Kernel *k, Node *n)
{
    const NodeList *body = &n->u.loop.body;
    const Var *v = n->u.loop.var;
    int64_t S = 0, lo;
    int nc = 0;
    while (nc < body->n) {
        int64_t t = stage_copy(body->v[nc], v);
        if (!t || (S && t != S)) break;
        S = t;
        nc++;
    }
    if (nc == 0 || nc == body->n) return false;
    /* a start that is no constant (the second run of unmask_tiles) must be proven >= 0 */
    if (gpu_cval(k, n->u.loop.lo, &lo) ? lo < 0 : !nonneg(k, n, n->u.loop.lo)) return false;
    int nb = k->nbufs;
    uint8_t *rc = xcalloc((size_t)nb * 4 + 1, 1), *wc = rc + nb, *rr = wc + nb, *wr = rr + nb;
    for (int i = 0; i < body->n; i++) ir_node_access(body->v[i], i < nc ? rc : rr, i < nc ? wc : wr);
    bool ok = true;
    for (int i = 0; i < nb && ok; i++) ok = !(rc[i] && (wc[i] || wr[i])) && !(wc[i] && wr[i]);
    free(rc);
    if (!ok) return false;
    n->u.loop.stages = (int)S;
    n->u.loop.ncopies = nc;
    for (int i = 0; i < nc; i++) mark_async(body->v[i]);
    int64_t elems = 0;
    int dt = -1;
    bool ok2 = !has_wgmma(n);
    for (int i = 0; i < nc && ok2; i++) ok2 = sync_elems(k, body->v[i], 1, &elems, &dt);
    bool fits = ok2 && elems > 0 && (elems * dtype_bytes((DType)dt) + 3) / 4 <= REG_STAGE_REGS;
    n->u.loop.reg_staged = fits ? (int)elems : 0;
    return true;
}

static void walk(Kernel *k, Node *n, bool in_thread, bool in_pipe)
{
    if (n->kind == N_LOOP) {
        n->u.loop.stages = n->u.loop.ncopies = n->u.loop.reg_staged = 0;
        if (n->u.loop.kind == LOOP_PIPELINE && !in_thread && !in_pipe && accept(k, n))
            in_pipe = true;
        if (gpu_is_thread(n->u.loop.kind)) in_thread = true;
    }
    NodeList *b = ir_body(n);
    for (int i = 0; b && i < b->n; i++) walk(k, b->v[i], in_thread, in_pipe);
}

bool gpu_pipeline_pass(Kernel *k, Diags *d)
{
    (void)d;
    for (int i = 0; i < k->body.n; i++)
        if (gpu_scheduled(k->body.v[i]))
            walk(k, k->body.v[i], false, false);
    return true;
}
