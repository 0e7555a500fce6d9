/* GPU transformations: bind and mma (distribute, which GPU schedules lean on to
 * pull a reduction loop away from its initialisation, lives in xform_loop.c).
 *
 * bind(loop, block.x|block.y|block.z|thread.x|thread.y|thread.z) runs a loop's
 * iterations on the grid or on the threads of a block.  It is legal when the loop
 * carries no dependence at all (a reduction into one element from two threads
 * races), its extent is a constant within CUDA's launch limits, block loops form
 * the outermost nest and thread loops sit inside it without two on one dimension.
 *
 * wgmma(i, j, k) is the same for a 64 x N x 16 triple run by one warpgroup with
 * Hopper's wgmma (sm_90a): same legality, N any multiple of 8 up to 256.
 *
 * mma(i, j, k) marks a 16 x 8 x 16 loop triple whose single statement is
 * `acc[.. i .., .. j ..] += f32(A[.. i .. k ..]) * f32(B[.. k .. j ..])` with A and B
 * both f16 or both bf16 and acc a local f32 buffer: the CUDA back end runs it as one
 * warp-wide mma.sync.m16n8k16 with acc held in the tensor-core fragment layout.
 * Legality: the shape, the dtypes, the accumulation pattern (reassociating a sum,
 * as reductions may), and affine indices in which i, j and k appear only where the
 * fragment layout puts them.  The loops keep their serial meaning, so the
 * interpreter still runs the kernel.
 *
 * pipeline(loop, stages) turns the shared-memory staging at the head of a serial
 * loop into a ring of `stages` buffers: every buffer the leading copy nests write
 * gets a first dimension of that many stages, indexed by `loop % stages`, so the
 * copies of iteration t + stages - 1 land where nobody reads until then.  Run
 * serially (interpreter, CPU) the meaning is unchanged; the CUDA back end issues
 * those copies asynchronously (cp.async) while iteration t computes.  Legal when
 * the copies write only shared buffers staged at this loop (read by nothing
 * outside it and written by nothing else in it) and read nothing the loop writes,
 * so moving a copy earlier cannot change what it reads. */
#include <stdlib.h>
#include <string.h>

#include "xform_int.h"
#include "../ir/walk.h"

static const struct {
    const char *name;
    LoopKind kind;
} gpu_kinds[] = {
    {"block.x", LOOP_BLOCK_X},   {"block.y", LOOP_BLOCK_Y},   {"block.z", LOOP_BLOCK_Z},
    {"thread.x", LOOP_THREAD_X}, {"thread.y", LOOP_THREAD_Y}, {"thread.z", LOOP_THREAD_Z},
};

static bool is_block_kind(LoopKind k)
{
    return k == LOOP_BLOCK_X || k == LOOP_BLOCK_Y || k == LOOP_BLOCK_Z;
}

static bool is_tc_kind(LoopKind k) { return k == LOOP_MMA || k == LOOP_WGMMA; }

static bool is_thread_kind(LoopKind k)
{
    return k == LOOP_THREAD_X || k == LOOP_THREAD_Y || k == LOOP_THREAD_Z;
}

/* Any loop below n (not n) of a kind accepted by pred; *which gets it. */
static bool below(const Node *n, bool (*pred)(LoopKind), const Node **which)
{
    const NodeList *b = ir_body((Node *)n);
    for (int i = 0; b && i < b->n; i++) {
        const Node *x = b->v[i];
        if (x->kind == N_LOOP && pred(x->u.loop.kind)) {
            *which = x;
            return true;
        }
        if (below(x, pred, which))
            return true;
    }
    return false;
}

/* ---------------- bind ---------------- */

/* Staging marks a buffer private to the iterations of the loops enclosing its copy
 * (Buffer.private_in): each reads only what the same iteration wrote.  On a GPU
 * every block has its own shared memory and every thread its own registers, so
 * such a buffer is no dependence between blocks (shared or local) or between
 * threads (local). */
static bool private_to(const Buffer *b, const Node *l, bool block)
{
    if (b->mem == MEM_GLOBAL || (!block && b->mem != MEM_LOCAL))
        return false;
    for (int i = 0; i < b->nprivate_in; i++)
        if (b->private_in[i] == l->u.loop.var)
            return true;
    return false;
}

static bool idx_uses(const Access *a, const Var *v)
{
    for (int d = 0; d < a->buf->rank; d++)
        if (ir_expr_uses_var(a->idx[d], v))
            return true;
    return false;
}

/* dep_carried with the GPU's notion of private copies.  Reductions count between
 * blocks; between the threads of a block they are combined by a block-wide
 * reduction (codegen/cuda/emit.c red_find). */
static bool carried_gpu(Kernel *k, Node *l, bool block, Access *pa, Access *pb)
{
    AccVec acc = {0};
    Node *outer[64];
    int no = xf_enclosing_loops(l, outer, 63);
    DepRel rel[64];
    for (int i = 0; i < no; i++)
        rel[i] = (DepRel){outer[i]->u.loop.var, outer[i]->u.loop.var, 0};
    rel[no] = (DepRel){l->u.loop.var, l->u.loop.var, 1};
    acc_collect(k, l, &acc);
    bool found = false;
    dep_set_cases(true);
    for (int i = 0; i < acc.n && !found; i++)
        for (int j = 0; j < acc.n && !found; j++) {
            Access *a = &acc.v[i], *b = &acc.v[j];
            if (a->buf != b->buf || (!a->write && !b->write) || private_to(a->buf, l, block))
                continue;
            if (!block && xf_privatizable(k, a->buf, l))
                continue;
            /* Updates with one associative operator (+ * max min) into shared or
             * global memory at an index the loop does not move: every thread adds
             * to the same element, and the contributions may be combined in any
             * order (docs/schedules.md, reassociation), which the CUDA back end
             * does as a block-wide reduction (or refuses the shape).  An index that
             * moves with the loop but not one-to-one (`f / 12`) stays a race. */
            if (!block && a->buf->mem != MEM_LOCAL && acc_reduction_pair(a, b) &&
                !idx_uses(a, l->u.loop.var) && !idx_uses(b, l->u.loop.var))
                continue;
            if (dep_may_conflict(k, a, b, rel, no + 1)) {
                *pa = *a;
                *pb = *b;
                found = true;
            }
        }
    dep_set_cases(false);
    acc_free(&acc);
    return found;
}

/* A bit per thread dimension: x 1, y 2, z 4. */
static unsigned thread_bit(LoopKind k)
{
    return k == LOOP_THREAD_X ? 1u : k == LOOP_THREAD_Y ? 2u : k == LOOP_THREAD_Z ? 4u : 0u;
}

/* The thread dimensions of more than one thread that the loops under n use: the
 * block's shape, since the launch's block is the largest extent per dimension. */
static unsigned block_dims(const Kernel *k, const Node *n)
{
    unsigned d = 0;
    int64_t ext;
    if (n->kind == N_LOOP && thread_bit(n->u.loop.kind) && (!xf_const_extent(k, n, &ext) || ext > 1))
        d |= thread_bit(n->u.loop.kind);
    const NodeList *b = ir_body((Node *)n);
    for (int i = 0; b && i < b->n; i++)
        d |= block_dims(k, b->v[i]);
    return d;
}

/* A statement under thread loops runs once on every thread of the block whose
 * coordinates its loops do not fix: the CUDA back end gives a launch one block
 * shape, so a nest bound to thread.x alone still runs on each thread.y.  That is
 * harmless for a store of a value that does not depend on what it overwrites (each
 * copy writes the same), but an update (`+=`, `max=` ...) or a store reading its own
 * buffer would be applied once per copy.  (Statements under no thread loop are run
 * by thread 0 alone.)  Returns such a statement under n, with the dimensions it
 * lacks in *lack, or NULL. */
static const Node *replicated(const Node *n, unsigned dims, unsigned have, unsigned *lack)
{
    if (n->kind == N_LOOP)
        have |= thread_bit(n->u.loop.kind);
    if (n->kind == N_STMT) {
        const Buffer *b = n->u.stmt.buf;
        bool update = n->u.stmt.op != SOP_ASSIGN || ir_expr_reads(n->u.stmt.value, b);
        if (have && (dims & ~have) && b->mem != MEM_LOCAL && update) {
            *lack = dims & ~have;
            return n;
        }
        return NULL;
    }
    const NodeList *b = ir_body((Node *)n);
    for (int i = 0; b && i < b->n; i++) {
        const Node *s = replicated(b->v[i], dims, have, lack);
        if (s)
            return s;
    }
    return NULL;
}

static const char *dim_names(unsigned d)
{
    static const char *nm[8] = {"", "thread.x", "thread.y", "thread.x and thread.y", "thread.z",
                                "thread.x and thread.z", "thread.y and thread.z", "thread.x, y and z"};
    return nm[d & 7];
}

bool xf_bind(XfCtx *c)
{
    Node *l = xf_arg_loop(c, 0);
    const char *kn = l ? xf_arg_name(c, 1) : NULL;
    if (!kn)
        return false;
    LoopKind kind = LOOP_COUNT;
    for (size_t i = 0; i < sizeof gpu_kinds / sizeof gpu_kinds[0]; i++)
        if (strcmp(gpu_kinds[i].name, kn) == 0)
            kind = gpu_kinds[i].kind;
    if (kind == LOOP_COUNT) {
        xf_err(c, "`%s` is no GPU index; bind takes block.x, block.y, block.z, thread.x, "
                  "thread.y or thread.z",
               kn);
        return false;
    }
    const char *v = l->u.loop.var->name;
    if (l->u.loop.kind != LOOP_SERIAL) {
        xf_err(c, "loop %s is already marked %s", v, loop_kind_name(l->u.loop.kind));
        return false;
    }
    int64_t ext;
    if (!xf_const_extent(c->k, l, &ext)) {
        xf_err(c, "the extent of %s is not a constant (bind the sizes with -D)", v);
        return false;
    }
    /* CUDA's limits per grid and block dimension. */
    int64_t lim = kind == LOOP_BLOCK_X ? INT32_MAX
                  : is_block_kind(kind) ? 65535
                  : kind == LOOP_THREAD_Z ? 64
                                          : 1024;
    if (ext < 1 || ext > lim) {
        xf_err(c, "the extent of %s is %lld; %s takes 1 to %lld", v, (long long)ext, kn,
               (long long)lim);
        return false;
    }
    const Node *w;
    if (xf_inside_kind(l, LOOP_PARALLEL, false, &w) || xf_inside_kind(l, LOOP_VECTOR, false, &w) ||
        xf_inside_kind(l, LOOP_MMA, false, &w) || xf_inside_kind(l, LOOP_WGMMA, false, &w)) {
        xf_err(c, "%s is inside %s loop %s", v, loop_kind_name(w->u.loop.kind), w->u.loop.var->name);
        return false;
    }
    if (xf_inside_kind(l, kind, false, &w)) {
        xf_err(c, "%s is inside %s, which is already bound to %s", v, w->u.loop.var->name, kn);
        return false;
    }
    if (below(l, is_block_kind, &w)) {
        xf_err(c, "%s contains block loop %s; block loops are the outermost", v, w->u.loop.var->name);
        return false;
    }
    if (is_block_kind(kind)) {
        /* The grid is the outermost nest: every enclosing loop is a block loop with
         * nothing beside the next one, so each block runs exactly one iteration. */
        for (const Node *p = l->parent; p; p = p->parent) {
            if (p->kind != N_LOOP || !is_block_kind(p->u.loop.kind)) {
                xf_err(c, "%s is inside %s, which is not a block loop; block loops form the "
                          "outermost nest",
                       v, p->kind == N_LOOP ? p->u.loop.var->name : "a guard");
                return false;
            }
            if (p->u.loop.body.n != 1) {
                xf_err(c, "block loop %s holds more than %s", p->u.loop.var->name, v);
                return false;
            }
        }
    } else if (below(l, is_thread_kind, &w) && w->u.loop.kind == kind) {
        xf_err(c, "%s contains %s, already bound to %s", v, w->u.loop.var->name, kn);
        return false;
    } else if (kind == LOOP_THREAD_X && below(l, is_tc_kind, &w)) {
        /* the tensor-core contract (docs/cuda.md): threadIdx.x is the lane */
        xf_err(c, "%s contains %s loop %s, whose %s reach it together: threadIdx.x is the %s; bind "
                  "the loops around it to thread.y/z",
               v, loop_kind_name(w->u.loop.kind), w->u.loop.var->name,
               w->u.loop.kind == LOOP_MMA ? "32 lanes of a warp" : "128 threads of a warpgroup",
               w->u.loop.kind == LOOP_MMA ? "lane" : "thread of the warpgroup");
        return false;
    }
    Access a, b;
    /* Reductions count for blocks (two blocks adding into one element race); the
     * threads of one block combine theirs (see carried_gpu). */
    if (carried_gpu(c->k, l, is_block_kind(kind), &a, &b)) {
        xf_err(c, "loop %s carries a dependence; its iterations cannot run at once", v);
        xf_note_dep(c, &a, &b);
        return false;
    }
    if (!is_block_kind(kind)) {
        /* one launch is everything under the outermost loop around l; with l bound,
         * every update in it must still run on exactly one thread */
        const Node *root = l;
        while (root->parent)
            root = root->parent;
        LoopKind was = l->u.loop.kind;
        l->u.loop.kind = kind;
        unsigned lack = 0;
        const Node *s = replicated(root, block_dims(c->k, root), 0, &lack);
        l->u.loop.kind = was;
        if (s) {
            StrBuf what = {0};
            Access sa = {.stmt = (Node *)s, .buf = s->u.stmt.buf, .idx = s->u.stmt.idx, .write = true};
            acc_print(c->k, &sa, &what);
            xf_err(c, "with %s bound to %s, the update (%s, line %d) would run once on every %s of the "
                      "block, since no loop around it is bound to %s; bind a loop around it to %s too, or "
                      "bind the loops of this nest to the same thread dimensions as the others",
                   v, kn, what.s, s->span.line, dim_names(lack), dim_names(lack), dim_names(lack));
            sb_free(&what);
            return false;
        }
    }
    if (!c->dry)
        l->u.loop.kind = kind;
    return true;
}

/* ---------------- mma ---------------- */

/* The load under an optional cast to f32, or NULL. */
static Expr *operand(Expr *e)
{
    if (e->kind == IE_CAST && e->dtype == DT_F32)
        e = e->args[0];
    return e->kind == IE_LOAD ? e : NULL;
}

/* Coefficients of i, j, k in one index expression; false when not affine. */
static bool coefs(ArSpace *sp, const Expr *e, const int *col, int64_t *out)
{
    ArRow a;
    if (!ar_row_of(sp, e, 0, &a))
        return false;
    for (int q = 0; q < 3; q++)
        out[q] = a.c[col[q]];
    return true;
}

/* The checks mma and wgmma share: a perfectly nested serial triple i, j, k of the
 * given extents (want[1] == 0: j may run any multiple of 8 up to 256, as wgmma's N)
 * whose one statement accumulates a product of two f16 or bf16 loads into a 2-D
 * local f32 buffer, each loop variable only where the hardware layout puts it. */
/* The parts of the tensor-core contract (docs/cuda.md) that no later move can
 * mend, checked when the triple is marked: its threads reach it together (not
 * inside a thread.x loop or a guard), and a launch holds one kind of triple. */
static bool tc_placement(XfCtx *c, Node *i, LoopKind kind)
{
    const char *kn = loop_kind_name(kind), *v = i->u.loop.var->name;
    const Node *top = i;
    for (const Node *p = i->parent; p; p = p->parent) {
        top = p;
        if (p->kind == N_IF || (p->kind == N_LOOP && p->u.loop.kind == LOOP_THREAD_X)) {
            xf_err(c, "%s loop %s would be inside %s: the %s must reach %s together (threadIdx.x is "
                      "the %s; bind the loops around it to thread.y/z)",
                   kn, v, p->kind == N_IF ? "a guard" : "a thread.x loop",
                   kind == LOOP_MMA ? "32 lanes of a warp" : "128 threads of a warpgroup",
                   kind == LOOP_MMA ? "mma.sync" : "wgmma", kind == LOOP_MMA ? "lane" : "thread of the warpgroup");
            return false;
        }
    }
    const Node *w;
    LoopKind other = kind == LOOP_MMA ? LOOP_WGMMA : LOOP_MMA;
    if (below(top, is_tc_kind, &w) && w->u.loop.kind == other) {
        xf_err(c, "%s loop %s would share a launch with %s loop %s; one launch holds one kind of "
                  "tensor-core accumulator",
               kn, v, loop_kind_name(other), w->u.loop.var->name);
        return false;
    }
    return true;
}

static bool tc_triple(XfCtx *c, Node **L, const int64_t want[3], const char *shape)
{
    static const char *const role[3] = {"i (rows)", "j (columns)", "k (reduction)"};
    for (int q = 0; q < 3; q++) {
        int64_t ext;
        if (L[q]->u.loop.kind != LOOP_SERIAL) {
            xf_err(c, "loop %s is marked %s", L[q]->u.loop.var->name, loop_kind_name(L[q]->u.loop.kind));
            return false;
        }
        bool ok = xf_const_extent(c->k, L[q], &ext);
        if (ok && want[q])
            ok = ext == want[q];
        else if (ok)
            ok = ext >= 8 && ext <= 256 && ext % 8 == 0;
        if (!ok) {
            if (want[q])
                xf_err(c, "the %s loop %s must run exactly %lld times (%s); split it first", role[q],
                       L[q]->u.loop.var->name, (long long)want[q], shape);
            else
                xf_err(c, "the %s loop %s must run a constant multiple of 8 times, 8 to 256 (%s); split "
                          "it first",
                       role[q], L[q]->u.loop.var->name, shape);
            return false;
        }
    }
    for (int q = 0; q < 2; q++)
        if (L[q]->u.loop.body.n != 1 || L[q]->u.loop.body.v[0] != L[q + 1]) {
            xf_err(c, "%s must hold exactly loop %s and nothing else", L[q]->u.loop.var->name,
                   L[q + 1]->u.loop.var->name);
            return false;
        }
    if (L[2]->u.loop.body.n != 1 || L[2]->u.loop.body.v[0]->kind != N_STMT) {
        xf_err(c, "%s must hold exactly one statement", L[2]->u.loop.var->name);
        return false;
    }
    Node *s = L[2]->u.loop.body.v[0];
    Buffer *acc = s->u.stmt.buf;
    Expr *v = s->u.stmt.value;
    if (s->u.stmt.op != SOP_ADD || v->kind != IE_MUL) {
        xf_err(c, "the statement must be `acc[..] += x * y` (an accumulated product)");
        xf_note(c, s->span, "this statement");
        return false;
    }
    Expr *A = operand(v->args[0]), *B = operand(v->args[1]);
    if (!A || !B) {
        xf_err(c, "both factors must be loads of f16 or bf16 buffers");
        xf_note(c, s->span, "this statement");
        return false;
    }
    DType ta = A->u.load.buf->dtype, tb = B->u.load.buf->dtype;
    if (ta != tb || (ta != DT_F16 && ta != DT_BF16)) {
        xf_err(c, "tensor cores take f16 x f16 or bf16 x bf16 here, not %s x %s (tf32 only when the "
                  "kernel asks for it, and not yet)",
               dtype_name(ta), dtype_name(tb));
        return false;
    }
    if (acc->dtype != DT_F32) {
        xf_err(c, "the accumulator %s must be f32, not %s", acc->name, dtype_name(acc->dtype));
        return false;
    }
    if (acc->mem != MEM_LOCAL || acc->rank != 2) {
        xf_err(c, "the accumulator %s must be a 2-D local buffer (the fragment lives in "
                  "registers): stage it with cache(%s, loop, mem=local)",
               acc->name, acc->name);
        return false;
    }
    if (A->u.load.guarded || B->u.load.guarded) {
        xf_err(c, "the operands must be read without bounds guards; stage them in shared memory");
        return false;
    }
    ArSpace sp;
    ar_space_init(&sp, c->k);
    int col[3];
    for (int q = 0; q < 3; q++)
        col[q] = ar_space_col(&sp, L[q]->u.loop.var, 0);
    int64_t cf[3];
    /* acc[i-dim, j-dim]: i only in dimension 0, j only in dimension 1, both with
     * coefficient 1 (the fragment layout), k nowhere. */
    for (int d = 0; d < 2; d++) {
        if (!coefs(&sp, s->u.stmt.idx[d], col, cf) || cf[2] != 0 || cf[d] != 1 || cf[1 - d] != 0) {
            xf_err(c, "%s must be indexed [.. + %s, .. + %s] with %s in neither", acc->name,
                   L[0]->u.loop.var->name, L[1]->u.loop.var->name, L[2]->u.loop.var->name);
            return false;
        }
    }
    /* A reads rows i and columns k, B rows k and columns j, each variable in one
     * dimension with coefficient 1. */
    struct {
        Expr *ld;
        int u, w; /* the two variables it may use */
    } ops[2] = {{A, 0, 2}, {B, 2, 1}};
    for (int o = 0; o < 2; o++) {
        Buffer *b = ops[o].ld->u.load.buf;
        int seen[3] = {0, 0, 0};
        for (int d = 0; d < b->rank; d++) {
            if (!coefs(&sp, ops[o].ld->u.load.idx[d], col, cf)) {
                xf_err(c, "an index of %s is not affine", b->name);
                return false;
            }
            int nz = 0;
            for (int q = 0; q < 3; q++)
                if (cf[q]) {
                    nz++;
                    if ((q != ops[o].u && q != ops[o].w) || cf[q] != 1) {
                        xf_err(c, "%s must be indexed by %s and %s alone, each with coefficient 1",
                               b->name, L[ops[o].u]->u.loop.var->name, L[ops[o].w]->u.loop.var->name);
                        return false;
                    }
                    seen[q]++;
                }
            if (nz > 1) {
                xf_err(c, "%s mixes two of the triple's loops in one index", b->name);
                return false;
            }
        }
        if (seen[ops[o].u] != 1 || seen[ops[o].w] != 1) {
            xf_err(c, "%s must use each of %s and %s in exactly one index", b->name,
                   L[ops[o].u]->u.loop.var->name, L[ops[o].w]->u.loop.var->name);
            return false;
        }
        if (b == acc) {
            xf_err(c, "the accumulator is also a factor");
            return false;
        }
    }
    return true;
}

bool xf_mma(XfCtx *c)
{
    Node *L[3];
    for (int q = 0; q < 3; q++)
        if (!(L[q] = xf_arg_loop(c, q)))
            return false;
    static const int64_t want[3] = {16, 8, 16};
    if (!tc_triple(c, L, want, "m16n8k16") || !tc_placement(c, L[0], LOOP_MMA))
        return false;
    if (!c->dry)
        L[0]->u.loop.kind = LOOP_MMA;
    return true;
}

/* wgmma(i, j, k): the triple is 64 x N x 16 and one warpgroup (128 threads, four
 * warps) runs it as wgmma.mma_async with both operands in shared memory.  The
 * legality is mma's; where the operands live, their layout in shared memory and the
 * warpgroup are the CUDA back end's contract (docs/cuda.md "wgmma"), checked when
 * it emits the launch, since they depend on transformations applied later. */
bool xf_wgmma(XfCtx *c)
{
    Node *L[3];
    for (int q = 0; q < 3; q++)
        if (!(L[q] = xf_arg_loop(c, q)))
            return false;
    static const int64_t want[3] = {64, 0, 16};
    if (!tc_triple(c, L, want, "wgmma m64nNk16") || !tc_placement(c, L[0], LOOP_WGMMA))
        return false;
    if (!c->dry)
        L[0]->u.loop.kind = LOOP_WGMMA;
    return true;
}

/* ---------------- pipeline ---------------- */

typedef struct PipeCtx {
    Buffer **st;   /* the staged buffers */
    int nst;
} PipeCtx;

static bool pipe_staged(const PipeCtx *p, const Buffer *b)
{
    for (int i = 0; i < p->nst; i++)
        if (p->st[i] == b)
            return true;
    return false;
}

/* The statements of a leading copy nest: shared buffers written, with `=`. */
static bool pipe_copy_nest(XfCtx *c, const Node *n, PipeCtx *p, Buffer **room, int cap)
{
    if (n->kind == N_STMT) {
        Buffer *b = n->u.stmt.buf;
        if (b->mem != MEM_SHARED || n->u.stmt.op != SOP_ASSIGN)
            return false;
        if (!pipe_staged(p, b)) {
            if (p->nst == cap)
                return false;
            room[p->nst] = b;
            p->st = room;
            p->nst++;
        }
        return true;
    }
    NodeList *b = ir_body((Node *)n);
    if (!b || b->n == 0)
        return false;
    for (int i = 0; i < b->n; i++)
        if (!pipe_copy_nest(c, b->v[i], p, room, cap))
            return false;
    return true;
}

bool xf_pipeline(XfCtx *c)
{
    Node *l = xf_arg_loop(c, 0);
    int64_t S;
    if (!l || !xf_arg_int(c, 1, &S))
        return false;
    if (xf_npos(c) != 2) {
        xf_err(c, "usage: %s", xf_synopsis(XF_PIPELINE));
        return false;
    }
    const char *v = l->u.loop.var->name;
    if (S < 2 || S > 8) {
        xf_err(c, "a pipeline takes 2 to 8 stages, not %lld", (long long)S);
        return false;
    }
    if (l->u.loop.kind != LOOP_SERIAL) {
        xf_err(c, "loop %s is already marked %s", v, loop_kind_name(l->u.loop.kind));
        return false;
    }
    /* inflight=1: the wgmma products of an iteration may still be reading its stage
     * while the next iteration's are issued; the copies then run one stage less far
     * ahead.  Only the CUDA back end's timing changes; the meaning is the same. */
    int64_t inflight = 0;
    const SchedArg *fa = xf_kwarg(c, "inflight");
    if (fa && (fa->kind != SARG_INT || fa->ival < 0 || fa->ival > 1)) {
        xf_err(c, "inflight= takes 0 or 1");
        return false;
    }
    if (fa)
        inflight = fa->ival;
    if (S < inflight + 2) {
        xf_err(c, "a pipeline with inflight=%lld needs at least %lld stages", (long long)inflight,
               (long long)inflight + 2);
        return false;
    }
    /* The stages rotate at block level: every thread of the block walks the loop. */
    for (const Node *q = l->parent; q; q = q->parent)
        if (q->kind == N_LOOP && q->u.loop.kind != LOOP_SERIAL && !is_block_kind(q->u.loop.kind)) {
            xf_err(c, "%s is inside %s loop %s; a pipeline runs at block level, outside thread, "
                      "vector, unrolled and mma loops",
                   v, loop_kind_name(q->u.loop.kind), q->u.loop.var->name);
            return false;
        }
    NodeList *body = &l->u.loop.body;
    Buffer *room[16];
    PipeCtx p = {room, 0};
    int ncopy = 0;
    while (ncopy < body->n) {
        int before = p.nst;
        if (!pipe_copy_nest(c, body->v[ncopy], &p, room, 16)) {
            p.nst = before;
            break;
        }
        ncopy++;
    }
    if (ncopy == 0 || ncopy == body->n) {
        xf_err(c, "the body of %s must start with copies into shared memory (cache(X, %s, mem=shared)) "
                  "and go on with the work that reads them",
               v, v);
        return false;
    }
    for (int i = 0; i < p.nst; i++) {
        Buffer *b = p.st[i];
        bool listed = false;
        for (int q = 0; q < b->nprivate_in; q++)
            listed |= b->private_in[q] == l->u.loop.var;
        if (!listed) {
            xf_err(c, "%s is not staged at %s: stage it with cache(.., %s, mem=shared) so each "
                      "iteration reads only what its own copy wrote",
                   b->name, v, v);
            return false;
        }
        if (b->rank + 1 > 8) {
            xf_err(c, "%s has %d dimensions; a stage dimension would make more than 8", b->name, b->rank);
            return false;
        }
    }
    AccVec all = {0};
    acc_collect(c->k, NULL, &all);
    bool ok = true;
    for (int i = 0; i < all.n && ok; i++) {
        Access *a = &all.v[i];
        bool in_copy = false;
        for (int q = 0; q < ncopy; q++)
            in_copy |= xf_contains(body->v[q], a->stmt);
        if (pipe_staged(&p, a->buf)) {
            if (!xf_contains(l, a->stmt)) {
                xf_err(c, "%s is used outside %s", a->buf->name, v);
                ok = false;
            } else if (a->write && !in_copy) {
                xf_err(c, "%s is written after the copies of %s too", a->buf->name, v);
                ok = false;
            }
            if (!ok)
                xf_note(c, a->stmt->span, "this statement");
            continue;
        }
        /* A copy moved to an earlier iteration must read the same values: nothing
         * it reads may be written anywhere in the loop. */
        if (!in_copy || a->write)
            continue;
        for (int j = 0; j < all.n && ok; j++)
            if (all.v[j].write && all.v[j].buf == a->buf && xf_contains(l, all.v[j].stmt)) {
                xf_err(c, "the copies of %s read %s, which %s writes: a copy issued early would "
                          "read it before that write",
                       v, a->buf->name, v);
                xf_note(c, all.v[j].stmt->span, "the write");
                ok = false;
            }
    }
    if (!ok || c->dry) {
        acc_free(&all);
        return ok;
    }
    /* The rewrite: stage index `l % S` in front of every index of a staged buffer. */
    Kernel *k = c->k;
    for (int i = 0; i < all.n; i++) {
        Access *a = &all.v[i];
        if (!pipe_staged(&p, a->buf))
            continue;
        int r = a->buf->rank;
        Expr **ni = arena_alloc(k->arena, sizeof(Expr *) * (size_t)(r + 1));
        ni[0] = ir_bin(k, IE_MOD, ir_var(k, l->u.loop.var), ir_int(k, S));
        for (int d = 0; d < r; d++)
            ni[d + 1] = a->idx[d];
        /* a load in a guard condition is listed once per statement below it */
        if (a->write)
            a->stmt->u.stmt.idx = ni;
        else if (a->load->u.load.idx == a->idx)
            a->load->u.load.idx = ni;
    }
    acc_free(&all);
    for (int i = 0; i < p.nst; i++) {
        Buffer *b = p.st[i];
        Expr **sh = arena_alloc(k->arena, sizeof(Expr *) * (size_t)(b->rank + 1));
        sh[0] = ir_int(k, S);
        for (int d = 0; d < b->rank; d++)
            sh[d + 1] = b->shape[d];
        b->shape = sh;
        b->rank++;
    }
    l->u.loop.kind = LOOP_PIPELINE;
    l->u.loop.inflight = (int)inflight;
    return true;
}
