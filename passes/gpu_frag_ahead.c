/* GPU target lowering, pass `gpu-frag-ahead`: the tensor-core fragments of a
 * pipelined mma.sync loop read one 16-deep slice ahead of their products.
 *
 * A pipeline (passes/gpu_pipeline.c) whose body after its copies is one warp's mma
 * group, under its thread loops and a loop over the slices of the stage,
 *
 *     for ko .. pipeline stages S          copies of ko + S - 1
 *     | for wz thread.z | for wy thread.y
 *     | | for ks in 0..KS                  ldmatrix the slice's fragments, then
 *     | | | for mi .. (mma group)          its products
 *
 * runs each slice as reads, then products: the tensor cores wait on the reads'
 * latency at every slice, and at every stage on the barrier that admits it, with
 * nothing of their own in flight.  This pass marks such a slice loop `fragments
 * ahead`, and the back end keeps two register sets of fragments: slice s + 1's are
 * read before slice s's products issue, and the wait and barrier that admit stage
 * ko + 1 move to before the last slice's products, so that its first slice's reads
 * overlap them (codegen/cuda/emit_tc.c, docs/cuda.md "Fragments ahead").  No value
 * changes: every accumulator takes its products in the same order, a slice reads
 * only a stage its barrier admitted, and the copies that overwrite a stage still
 * follow the barrier after the last read of it.
 *
 * Marked when: the pipeline is accepted (stages >= 2; copies not TMA and not
 * staged through registers, no products in flight: wgmma has its own asynchrony;
 * synchronous copies are fine, they too write the stage freed a barrier earlier);
 * after the copies comes exactly one node, a chain of thread loops each covering
 * its whole block dimension (every thread reaches the moved barrier) around the
 * slice loop; the slice loop has a constant start and an even constant extent
 * (the next stage's first slice lands in the first register set) and its body is
 * one mma.sync group reading both operands from shared memory; and the two sets
 * fit beside the accumulators (FRAG_REGS).  Measured on an H100, bf16 4096^3 as
 * sm_80 code (bench/gpu/proto/mm80.sh): 128 x 256 tiles of eight warps, one block
 * an SM, whose barrier the slices left exposed, 0.478 -> 0.427 ms (0.385 with the
 * copies' 32-bit shared addresses, codegen/cuda/emit.c; the same loop written by
 * hand, bench/gpu/proto/mkmm80.py, 0.333); 128 x 128 tiles, two blocks an SM and
 * bound by the L2's bandwidth (ncu: 90% of it), 0.464 -> 0.449.
 *
 * A pipeline whose body holds other work before its last mma loop (the mma.sync
 * flash template: the scores, the softmax, then P.V's slices) cannot read the next
 * stage's first slice ahead, but its last slice's fragments are the iteration's
 * last reads of the stage: that loop is marked `admits the next stage at its last
 * slice` (admit_last), and the back end puts the wait, the barrier and the copies
 * of iteration ko + S between that slice's reads and its products (which read
 * registers only), so the barrier's wait overlaps them (docs/cuda.md "Flash
 * attention on tensor cores").  Same conditions on the pipeline and the thread
 * chain; the marked loop is the innermost thread loop's last node, around one
 * mma.sync group (A may come from registers). */
#include "gpu_int.h"

/* accumulators (4 a product) + two sets of fragments (4 registers an A, 2 a B):
 * 64 x 64 warp tiles take 128 + 2 x 32 */
enum { FRAG_REGS = 192 };

/* The slice loop when n's body after its copies is one chain of unguarded thread
 * loops around it, as above; NULL otherwise. */
static Node *slice_loop(const Kernel *k, const Node *n, const int64_t blk[3])
{
    if (n->u.loop.body.n != n->u.loop.ncopies + 1)
        return NULL;
    Node *x = n->u.loop.body.v[n->u.loop.ncopies];
    int64_t lo, ext;
    while (x->kind == N_LOOP && gpu_is_thread(x->u.loop.kind)) {
        if (!gpu_loop_extent(k, x, &lo, &ext) || lo != 0 || ext != blk[gpu_dim(x->u.loop.kind)] ||
            x->u.loop.body.n != 1)
            return NULL;
        x = x->u.loop.body.v[0];
    }
    if (x->kind != N_LOOP || x->u.loop.tc || gpu_is_thread(x->u.loop.kind) || x->u.loop.body.n != 1 ||
        !gpu_loop_extent(k, x, &lo, &ext) || ext < 2 || ext % 2)
        return NULL;
    const Node *g = x->u.loop.body.v[0];
    if (g->kind != N_LOOP || !g->u.loop.tc || g->u.loop.tc->areg)
        return NULL;
    /* the group's triple is mma.sync (wgmma groups have their own asynchrony) */
    const Node *t = g;
    for (int i = 0; i < g->u.loop.tc->nloops; i++)
        t = t->u.loop.body.v[0];
    if (t->u.loop.kind != LOOP_MMA)
        return NULL;
    const TcGroup *tc = g->u.loop.tc;
    if (4 * tc->nprod + 2 * (4 * tc->nfa + 2 * tc->nfb) > FRAG_REGS)
        return NULL;
    return x;
}

/* The last loop of the pipeline's body when that body after its copies is one
 * chain of unguarded thread loops (each covering its block dimension, so every
 * thread reaches the barrier moved into it) whose innermost holds other work and
 * then, last, a loop around one mma.sync group (attention's P.V slices after the
 * softmax; A may come from registers); NULL otherwise.  Its last slice's reads
 * are the iteration's last of the stage: the next stage is admitted between them
 * and that slice's products, which read registers only. */
static Node *last_slice_loop(const Kernel *k, const Node *n, const int64_t blk[3])
{
    if (n->u.loop.body.n != n->u.loop.ncopies + 1)
        return NULL;
    Node *x = n->u.loop.body.v[n->u.loop.ncopies];
    int64_t lo, ext;
    for (;;) {
        if (x->kind != N_LOOP || !gpu_is_thread(x->u.loop.kind) || !gpu_loop_extent(k, x, &lo, &ext) || lo != 0 ||
            ext != blk[gpu_dim(x->u.loop.kind)] || x->u.loop.body.n < 1)
            return NULL;
        Node *c = x->u.loop.body.v[x->u.loop.body.n - 1];
        if (x->u.loop.body.n == 1 && c->kind == N_LOOP && gpu_is_thread(c->u.loop.kind)) {
            x = c;
            continue;
        }
        if (x->u.loop.body.n < 2)
            return NULL;
        x = c;
        break;
    }
    if (x->kind != N_LOOP || x->u.loop.tc || gpu_is_thread(x->u.loop.kind) || x->u.loop.body.n != 1 ||
        !gpu_loop_extent(k, x, &lo, &ext) || ext < 1)
        return NULL;
    const Node *g = x->u.loop.body.v[0];
    if (g->kind != N_LOOP || !g->u.loop.tc)
        return NULL;
    const Node *t = g;
    for (int i = 0; i < g->u.loop.tc->nloops; i++) t = t->u.loop.body.v[0];
    return t->u.loop.kind == LOOP_MMA ? x : NULL;
}

static void walk(const Kernel *k, Node *n, const int64_t blk[3])
{
    if (n->kind != N_LOOP)
        return;
    if (n->u.loop.stages >= 2 && n->u.loop.ncopies && !n->u.loop.reg_staged && !n->u.loop.inflight &&
        !(n->u.loop.body.v[0]->kind == N_LOOP && n->u.loop.body.v[0]->u.loop.tma)) {
        Node *s = slice_loop(k, n, blk);
        if (s)
            s->u.loop.frag_ahead = true;
        else if ((s = last_slice_loop(k, n, blk)))
            s->u.loop.admit_last = true;
        return;
    }
    for (int i = 0; i < n->u.loop.body.n; i++)
        walk(k, n->u.loop.body.v[i], blk);
}

bool gpu_frag_ahead_pass(Kernel *k, Diags *d)
{
    (void)d;
    for (int i = 0; i < k->body.n; i++) {
        Node *n = k->body.v[i];
        if (!gpu_scheduled(n))
            continue;
        int64_t blk[3] = {1, 1, 1};
        gpu_thread_extents(k, n, blk);
        walk(k, n, blk);
    }
    return true;
}
