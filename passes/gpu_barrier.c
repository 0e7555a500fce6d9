/* gpu-barrier: where a block's threads wait for each other (__syncthreads).
 *
 * Inside a scheduled launch the steps at block level (the nodes outside every
 * thread loop) run one after another on all the threads of the block, each thread
 * doing its share of each step.  A step hands data to the next through memory the
 * block's threads share: shared memory, and global memory too, since the next
 * step may map the same elements onto different threads (thread ja zeroes four
 * columns, thread ji1 then accumulates one).  CUDA gives no order between two
 * threads' accesses without a barrier, so the meaning of the serial IR (which the
 * interpreter runs) holds only if a barrier separates every two steps where the
 * later one touches what an earlier one wrote, or writes what an earlier one read,
 * since the last barrier.  Two marks state that in the IR:
 *   - Node.barrier: a barrier runs before this node (printed `barrier` on the
 *     line above it), for a block-level step that conflicts with the steps since
 *     the previous barrier in its list;
 *   - loop barrier_each: a barrier closes every iteration of this block-level
 *     loop (printed `barrier` as the last line of its body), when the loop both
 *     reads and writes a shared buffer, so the next iteration's writes wait for
 *     this one's reads.
 * Local buffers are per thread and never need one.  The back end (codegen/cuda)
 * prints a barrier for each mark and decides none itself.
 *
 * The walk follows the lists the back end emits with barriers possible: the
 * body of the innermost block loop of the grid (or the launch's node itself),
 * guards and serial loops at block level, the inner loop of a lane pair, and a
 * pipeline's copies and the rest of its body as two lists (its stage barrier is
 * part of the pipeline's own translation).  Thread loops and tensor-core groups,
 * scans and wide copies are single steps: nothing inside them is marked.  The
 * conflict test is by buffer (any element of it), which can only add barriers. */
#include <stdlib.h>
#include <string.h>

#include "../ir/walk.h"
#include "gpu_int.h"

typedef struct BarCtx {
    const Kernel *k;
    uint8_t *rd, *wr;   /* per buffer: read, written by the steps since the last barrier */
} BarCtx;

/* Does step n touch a shared or global buffer the steps since the last barrier
 * wrote, or write one they read? */
static bool conflicts(const BarCtx *c, const Node *n)
{
    int nb = c->k->nbufs;
    uint8_t *rb = xcalloc((size_t)nb * 2 + 1, 1), *wb = rb + nb;
    ir_node_access(n, rb, wb);
    bool r = false;
    for (int i = 0; i < nb && !r; i++)
        if (c->k->bufs[i]->mem != MEM_LOCAL)
            r = (c->wr[i] && (rb[i] || wb[i])) || (c->rd[i] && wb[i]);
    free(rb);
    return r;
}

static bool reads_and_writes_shared(const Kernel *k, const Node *n)
{
    int nb = k->nbufs;
    uint8_t *rd = xcalloc((size_t)nb * 2 + 1, 1), *wr = rd + nb;
    ir_node_access(n, rd, wr);
    bool r = false;
    for (int i = 0; i < nb && !r; i++)
        r = k->bufs[i]->mem == MEM_SHARED && rd[i] && wr[i];
    free(rd);
    return r;
}

static void mark_list(const Kernel *k, Node **v, int n);

/* The lists inside block-level step n that hold block-level steps of their own. */
static void mark_node(const Kernel *k, Node *n)
{
    if (n->kind == N_IF) {
        mark_list(k, n->u.guard.body.v, n->u.guard.body.n);
        return;
    }
    if (n->kind != N_LOOP)
        return;
    LoopKind lk = n->u.loop.kind;
    LoopHint h = n->u.loop.hint;
    NodeList *b = &n->u.loop.body;
    /* in the order the back end tells the loops apart */
    if (n->u.loop.tc)
        return; /* a tensor-core group: one step */
    if (lk == LOOP_PIPELINE && n->u.loop.stages) {
        mark_list(k, b->v, n->u.loop.ncopies);
        mark_list(k, b->v + n->u.loop.ncopies, b->n - n->u.loop.ncopies);
        return;
    }
    if (lk == LOOP_MMA || lk == LOOP_WGMMA)
        return; /* refused by the back end: gpu-mma plans every triple */
    if (h == HINT_LANE_ROWS || h == HINT_LANE_COLS) {
        Node *m = b->v[0];
        if (m->u.loop.hint != HINT_LANE_COLS2)
            mark_list(k, m->u.loop.body.v, m->u.loop.body.n);
        return;
    }
    if (h == HINT_QUAD_ROWS) {
        mark_list(k, b->v, b->n);
        return;
    }
    if (h == HINT_WIDE || h == HINT_ASYNC || gpu_is_thread(lk))
        return; /* one step: a wide copy, a block scan, a thread loop */
    mark_list(k, b->v, b->n);
    /* the next iteration overwrites shared memory this one reads */
    n->u.loop.barrier_each = reads_and_writes_shared(k, n);
}

static void mark_list(const Kernel *k, Node **v, int n)
{
    int nb = k->nbufs;
    BarCtx c = {.k = k, .rd = xcalloc((size_t)nb * 2 + 1, 1)};
    c.wr = c.rd + nb;
    for (int i = 0; i < n; i++) {
        if (i > 0 && conflicts(&c, v[i])) {
            v[i]->barrier = true;
            memset(c.rd, 0, (size_t)nb * 2);
        }
        ir_node_access(v[i], c.rd, c.wr);
        mark_node(k, v[i]);
    }
    free(c.rd);
}

static void clear_marks(Node *n)
{
    n->barrier = false;
    if (n->kind == N_LOOP)
        n->u.loop.barrier_each = false;
    NodeList *b = ir_body(n);
    for (int i = 0; b && i < b->n; i++)
        clear_marks(b->v[i]);
}

bool gpu_barrier_pass(Kernel *k, Diags *d)
{
    (void)d;
    for (int i = 0; i < k->body.n; i++) {
        Node *top = k->body.v[i];
        clear_marks(top);
        /* an unscheduled launch runs each iteration on a thread of its own and
         * shares nothing within a block */
        if (!gpu_scheduled(top))
            continue;
        /* the grid: the outermost nest of block loops, one per dimension */
        Node *n = top;
        while (n->kind == N_LOOP && gpu_is_block(n->u.loop.kind) && n->u.loop.body.n == 1 &&
               n->u.loop.body.v[0]->kind == N_LOOP && gpu_is_block(n->u.loop.body.v[0]->u.loop.kind))
            n = n->u.loop.body.v[0];
        if (n->kind == N_LOOP && gpu_is_block(n->u.loop.kind))
            mark_list(k, n->u.loop.body.v, n->u.loop.body.n);
        else
            mark_node(k, top);
    }
    return true;
}
