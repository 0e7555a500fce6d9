/* GPU target lowering, pass `gpu-mma`: the tensor-core lowering of `mma` and
 * `wgmma` triples, decided here and stated in the IR so that the CUDA back end
 * prints it one to one (docs/cuda.md "Tensor cores", "wgmma").
 *
 * Per scheduled launch holding triples, the pass
 *   1. checks the contract between the triples and the launch that no single
 *      schedule move can check (the moves check what they can, passes/xform_gpu.c):
 *      one kind of triple per launch; each triple outside thread.x loops and
 *      guards; the block's x extent 32 (mma: threadIdx.x is the lane) or 128
 *      (wgmma: the thread of the warpgroup), sm_90a for wgmma; no accumulator
 *      access inside a thread.x loop; accumulator tiles of whole 16 x 8 (64 x 8)
 *      fragments; wgmma operands that can take the swizzled layout;
 *   2. sets the buffers' layouts: accumulators `mma-fragment`/`wgmma-fragment`,
 *      and local 2-D buffers written element for element from them (a stage of
 *      the scores: a bias added) the same; wgmma operands `swizzle128`
 *      (Buffer.layout);
 *   3. spells out each group (the triple and the perfectly nested unrolled loops
 *      directly around it, at most 16) as its products: each product's operand
 *      indices with the group's loops at their values and the triple's at 0, its
 *      accumulator tile, and which distinct A and B fragments it uses (loaded once
 *      each), with the operands' transposition and ldmatrix strides or wgmma
 *      descriptor offsets (TcGroup on the group's head loop), refusing operand
 *      shapes the instructions cannot read;
 *   4. marks every other access of an accumulator's elements: it must sit in a row
 *      loop and a column loop, one directly holding the other, that the back end
 *      spreads over the lanes holding those elements (`lane-rows`, `lane-cols`;
 *      `lane-cols2` when the column loop's one store to global (or plainly laid
 *      out shared) f32, f16 or bf16 memory can write a lane's two adjacent
 *      columns as one 8-byte (4-byte)
 *      access: the row length even and the pair's first column even, so a
 *      guarded store of a padded tile's edge keeps both or drops both); any other
 *      access is refused.
 *
 * Why it is legal: the IR keeps the triples' serial meaning (the interpreter runs
 * them as loops); a group reassociates the sums over k, as marking a triple allows,
 * and spreading a row and column loop over the lanes runs each iteration exactly
 * once, in the lane that holds its element. */
#include <stdlib.h>
#include <string.h>

#include "gpu_int.h"
#include "../ir/walk.h"

#define MMA_MAX 256  /* products per mma group */
#define WG_MAX 64    /* per wgmma group */
#define REG_GROUP 32 /* per mma group whose A is in registers */

typedef struct Mc {
    Kernel *k;
    Diags *d;
    const Target *target;
    bool ok, any, wg;
    int launch;         /* the launch (top-level node) being lowered */
    uint8_t *touched;   /* buffers the launch accesses */
} Mc;

static bool is_tc(const Node *n)
{
    return n->kind == N_LOOP && (n->u.loop.kind == LOOP_MMA || n->u.loop.kind == LOOP_WGMMA);
}

static bool is_frag(const Buffer *b) { return b->layout == LAYOUT_MMA_ACC || b->layout == LAYOUT_WGMMA_ACC; }

static bool frag_access(const Expr *x)
{
    if (!x) return false;
    if (x->kind == IE_LOAD) {
        if (is_frag(x->u.load.buf)) return true;
        for (int i = 0; i < x->u.load.buf->rank; i++)
            if (frag_access(x->u.load.idx[i])) return true;
        return false;
    }
    for (int i = 0; i < ir_expr_arity(x->kind); i++)
        if (frag_access(x->args[i])) return true;
    return false;
}

static bool stmt_frag(const Node *s) { return is_frag(s->u.stmt.buf) || frag_access(s->u.stmt.value); }

/* The load under an optional cast to f32. */
static const Expr *operand(const Expr *x)
{
    if (x->kind == IE_CAST && x->dtype == DT_F32) x = x->args[0];
    return x->kind == IE_LOAD ? x : NULL;
}

/* Operand A of a tensor-core triple held in registers: a local buffer (a warp's
 * or a warpgroup's own results, privatised like the accumulator and in its layout),
 * not staged in shared memory. */
static const Buffer *reg_operand(const Node *tc)
{
    const Node *s = tc;
    for (int q = 0; q < 3 && s->kind == N_LOOP && s->u.loop.body.n == 1; q++)
        s = s->u.loop.body.v[0];
    if (s->kind != N_STMT || s->u.stmt.value->kind != IE_MUL) return NULL;
    const Expr *a = operand(s->u.stmt.value->args[0]);
    return a && a->u.load.buf->mem == MEM_LOCAL ? a->u.load.buf : NULL;
}

/* ---------------- 1, 2: placement, layouts ---------------- */

static void find_triples(Mc *c, Node *n, bool under_tx, bool under_if)
{
    if (is_tc(n)) {
        bool w = n->u.loop.kind == LOOP_WGMMA;
        const char *kn = w ? "wgmma" : "mma";
        const Node *s = n;
        for (int q = 0; q < 3 && s->kind == N_LOOP && s->u.loop.body.n == 1; q++)
            s = s->u.loop.body.v[0];
        if (s->kind != N_STMT) {
            diag_error(c->d, n->span, "%s loop %s does not hold a loop triple with one statement", kn,
                       n->u.loop.var->name);
            c->ok = false;
            return;
        }
        if (under_tx || under_if) {
            if (w)
                diag_error(c->d, n->span, "wgmma loop %s is inside a %s: the 128 threads of a warpgroup "
                           "must reach wgmma together (threadIdx.x is the thread of the warpgroup; bind "
                           "the warpgroups to thread.y/z)", n->u.loop.var->name,
                           under_tx ? "thread.x loop" : "guard");
            else
                diag_error(c->d, n->span, "mma loop %s is inside a %s: the 32 lanes of a warp must reach "
                           "mma.sync together (threadIdx.x is the lane; bind the warps to thread.y/z)",
                           n->u.loop.var->name, under_tx ? "thread.x loop" : "guard");
            c->ok = false;
        }
        if (c->any && c->wg != w) {
            diag_error(c->d, n->span, "%s loop %s shares a launch with %s triples; one launch holds one "
                       "kind of tensor-core accumulator", kn, n->u.loop.var->name, w ? "mma" : "wgmma");
            c->ok = false;
        }
        c->wg = w;
        c->any = true;
        s->u.stmt.buf->layout = w ? LAYOUT_WGMMA_ACC : LAYOUT_MMA_ACC;
        Buffer *ra = (Buffer *)reg_operand(n);
        if (ra) ra->layout = w ? LAYOUT_WGMMA_ACC : LAYOUT_MMA_ACC; /* written in lane pairs, read as A fragments */
        if (w && s->u.stmt.value->kind == IE_MUL)
            for (int a = 0; a < 2; a++) {
                const Expr *x = operand(s->u.stmt.value->args[a]);
                if (x && x->u.load.buf->mem == MEM_SHARED) x->u.load.buf->layout = LAYOUT_SWIZZLE128;
            }
        return;
    }
    if (n->kind == N_LOOP && n->u.loop.kind == LOOP_THREAD_X) under_tx = true;
    if (n->kind == N_IF) under_if = true;
    NodeList *body = ir_body(n);
    for (int i = 0; body && i < body->n; i++) find_triples(c, body->v[i], under_tx, under_if);
}

static bool frag_under_tx(const Node *n, bool under_tx)
{
    if (is_tc(n)) return false;
    if (n->kind == N_LOOP && n->u.loop.kind == LOOP_THREAD_X) under_tx = true;
    if (n->kind == N_STMT) return under_tx && stmt_frag(n);
    const NodeList *body = ir_body((Node *)n);
    for (int i = 0; body && i < body->n; i++)
        if (frag_under_tx(body->v[i], under_tx)) return true;
    return false;
}

static bool has_block_reduce(const Node *n)
{
    if (n->kind == N_STMT) return n->u.stmt.block_reduce;
    const NodeList *b = ir_body((Node *)n);
    for (int i = 0; b && i < b->n; i++)
        if (has_block_reduce(b->v[i])) return true;
    return false;
}

static void buf_touch(const Expr *x, uint8_t *t)
{
    if (!x) return;
    if (x->kind == IE_LOAD) {
        t[x->u.load.buf->id] = 1;
        for (int i = 0; i < x->u.load.buf->rank; i++) buf_touch(x->u.load.idx[i], t);
        return;
    }
    for (int i = 0; i < ir_expr_arity(x->kind); i++) buf_touch(x->args[i], t);
}

static void node_touch(const Node *n, uint8_t *t)
{
    if (n->kind == N_STMT) {
        t[n->u.stmt.buf->id] = 1;
        for (int i = 0; i < n->u.stmt.buf->rank; i++) buf_touch(n->u.stmt.idx[i], t);
        buf_touch(n->u.stmt.value, t);
        return;
    }
    if (n->kind == N_IF) buf_touch(n->u.guard.cond, t);
    const NodeList *b = ir_body((Node *)n);
    for (int i = 0; b && i < b->n; i++) node_touch(b->v[i], t);
}

/* The launch's block, the accumulators' tiles and the operands' shapes. */
static bool check_launch(Mc *c, const Node *top)
{
    Kernel *k = c->k;
    int64_t blk[3] = {1, 1, 1};
    gpu_thread_extents(k, top, blk);
    if (blk[0] % 32 && blk[1] == 1 && blk[2] == 1 && has_block_reduce(top))
        blk[0] = (blk[0] + 31) / 32 * 32;
    const char *kn = c->wg ? "wgmma" : "mma";
    if (c->wg && (!c->target || !c->target->wgmma)) {
        diag_error(c->d, top->span, "launch %d of kernel %s runs wgmma triples, which only sm_90a has (Hopper's "
                   "architecture-specific instructions): compile with -target sm_90a, or use mma", c->launch, c->k->name);
        return false;
    }
    int64_t g = c->wg ? 64 : 16;
    for (int b = 0; b < k->nbufs; b++) {
        const Buffer *buf = k->bufs[b];
        if (!c->touched[b]) continue;
        int64_t R = 0, C = 0;
        if (is_frag(buf)) {
            gpu_cval(k, buf->shape[0], &R);
            gpu_cval(k, buf->shape[1], &C);
            if (R % g || C % 8) {
                diag_error(c->d, buf->span, "the %s accumulator %s is %lld x %lld per %s; %s tiles need a "
                           "multiple of %lld x 8", kn, buf->name, (long long)R, (long long)C,
                           c->wg ? "warpgroup" : "warp", c->wg ? "wgmma" : "tensor-core", (long long)g);
                return false;
            }
        }
        if (buf->layout == LAYOUT_SWIZZLE128) {
            int64_t n = 1, v;
            bool ok = buf->rank >= 2 && dtype_bytes(buf->dtype) == 2 && gpu_cval(k, buf->shape[buf->rank - 2], &R) &&
                      gpu_cval(k, buf->shape[buf->rank - 1], &C) && R % 8 == 0 && C % 64 == 0;
            for (int d = 0; ok && d < buf->rank; d++) ok = gpu_cval(k, buf->shape[d], &v) && (n *= v) > 0;
            if (!ok) {
                diag_error(c->d, buf->span, "wgmma operand %s must be a shared buffer of 16-bit elements "
                           "whose rows hold a multiple of 64 elements (128 bytes), in a multiple of 8 rows, "
                           "with no padding: wgmma reads it in the 128-byte swizzled layout", buf->name);
                return false;
            }
        }
    }
    if (blk[0] != (c->wg ? 128 : 32)) {
        if (c->wg)
            diag_error(c->d, top->span, "launch %d of kernel %s runs wgmma triples, so threadIdx.x must be "
                       "the thread of a warpgroup: its thread.x loops must have extent 128 (the block is %lld "
                       "wide); bind the warpgroups to thread.y and thread.z", c->launch, k->name, (long long)blk[0]);
        else
            diag_error(c->d, top->span, "launch %d of kernel %s runs mma triples, so threadIdx.x must be the "
                       "lane of a warp: its thread.x loops must have extent 32 (the block is %lld wide); bind "
                       "the warps to thread.y and thread.z", c->launch, k->name, (long long)blk[0]);
        return false;
    }
    if (frag_under_tx(top, false)) {
        diag_error(c->d, top->span, "launch %d of kernel %s accesses %s accumulator inside a thread.x "
                   "loop; the %s holds it in fragment layout, so bind only thread.y/z around its accesses",
                   c->launch, k->name, c->wg ? "a wgmma" : "an mma", c->wg ? "warpgroup" : "lanes");
        return false;
    }
    return true;
}

/* ---------------- 3: groups ---------------- */

/* mma operand x of the triple, fragment rows over rv (A: i, B: j), depth over kv:
 * ldmatrix reads it .trans when k is not its contiguous index; strides of a
 * fragment-row step and of a k step in elements. */
static bool mma_operand(Mc *c, const Expr *x, const Var *rv, const Var *kv, bool *trans, int64_t st[2])
{
    const Buffer *b = x->u.load.buf;
    if (b->mem == MEM_LOCAL && b->layout == LAYOUT_MMA_ACC) {
        /* operand A from registers: rows over the triple's i, columns over its k */
        int64_t co;
        if (b->rank != 2 || !gpu_has_var(c->k, x->u.load.idx[0], rv, &co) || co != 1 ||
            !gpu_has_var(c->k, x->u.load.idx[1], kv, &co) || co != 1 || ir_expr_uses_var(x->u.load.idx[0], kv) ||
            ir_expr_uses_var(x->u.load.idx[1], rv)) {
            diag_error(c->d, b->span, "mma operand %s is held in registers (a local buffer): it must be 2-D, "
                       "indexed [row + i, col + k] by the triple's i and k", b->name);
            return false;
        }
        *trans = false;
        st[0] = st[1] = 0;
        return true;
    }
    int64_t sh1, co, dr = -1, dk = -1;
    /* the matrix is in the last two dimensions; a leading one is a pipeline stage */
    int r0 = b->rank - 2;
    if (b->mem != MEM_SHARED || b->rank < 2 || b->rank > 8 || !gpu_cval(c->k, b->shape[b->rank - 1], &sh1)) {
        diag_error(c->d, b->span, "mma operand %s must be a 2-D buffer staged in shared memory "
                   "(cache(%s, loop, mem=shared)) for ldmatrix", b->name, b->name);
        return false;
    }
    bool stage_moves = false;   /* a leading index that moves with the triple */
    for (int d = 0; d < b->rank; d++) {
        bool hr = gpu_has_var(c->k, x->u.load.idx[d], rv, &co), hk = gpu_has_var(c->k, x->u.load.idx[d], kv, &co);
        if (d < r0) stage_moves |= hr || hk;
        if (d >= r0 && hr) dr = d - r0;
        if (d >= r0 && hk) dk = d - r0;
    }
    if (stage_moves || dr < 0 || dk < 0 || dr == dk || sh1 % 8) {
        diag_error(c->d, b->span, "mma operand %s: rows must hold a multiple of 8 elements (16 bytes) "
                   "for ldmatrix (pad it: padding(%s, 8)), and the triple's loops must index "
                   "different dimensions", b->name, b->name);
        return false;
    }
    *trans = dk != 1;
    st[0] = dr == 1 ? 1 : sh1;
    st[1] = dk == 1 ? 1 : sh1;
    return true;
}

/* wgmma operand x: indexed by the triple's loops mv (its M or N) and kv in its last
 * two dimensions, one each; M/N-major (trans) when mv indexes the contiguous one.
 * *lbo: the descriptor's leading byte offset (M/N-major: the 64-column panels lie
 * rows x 128 bytes apart; K-major: unused, 16). */
static bool wg_operand(Mc *c, const Node *mn, const Expr *x, const Var *mv, const Var *kv, bool *trans, int64_t *lbo)
{
    const Buffer *b = x->u.load.buf;
    int r = b->rank;
    int64_t co, R = 0;
    if (b->mem == MEM_LOCAL && b->layout == LAYOUT_WGMMA_ACC) {
        /* operand A from registers: the warpgroup's rows over the triple's i, columns over its k */
        if (r != 2 || !gpu_has_var(c->k, x->u.load.idx[0], mv, &co) || co != 1 ||
            !gpu_has_var(c->k, x->u.load.idx[1], kv, &co) || co != 1 || ir_expr_uses_var(x->u.load.idx[0], kv) ||
            ir_expr_uses_var(x->u.load.idx[1], mv)) {
            diag_error(c->d, b->span, "wgmma operand %s is held in registers (a local buffer): it must be 2-D, "
                       "indexed [row + i, col + k] by the triple's i and k", b->name);
            return false;
        }
        *trans = false;
        *lbo = 0;
        return true;
    }
    if (b->mem != MEM_SHARED || b->layout != LAYOUT_SWIZZLE128) {
        diag_error(c->d, b->span, "wgmma operand %s must be staged in shared memory (cache(%s, loop, "
                   "mem=shared)): wgmma reads both operands from there", b->name, b->name);
        return false;
    }
    gpu_cval(c->k, b->shape[r - 2], &R);
    int dm = -1, dk = -1;
    for (int d = 0; d < r; d++) {
        bool hm = gpu_has_var(c->k, x->u.load.idx[d], mv, &co), hk = gpu_has_var(c->k, x->u.load.idx[d], kv, &co);
        if ((hm || hk) && d < r - 2) dm = dk = -2;
        if (hm && d >= r - 2 && dm != -2) dm = d;
        if (hk && d >= r - 2 && dk != -2) dk = d;
    }
    if (dm < 0 || dk < 0 || dm == dk) {
        diag_error(c->d, mn->span, "wgmma loop %s: operand %s must be indexed by the triple's loops in its "
                   "last two dimensions, one each", mn->u.loop.var->name, b->name);
        return false;
    }
    *trans = dm == r - 1;
    *lbo = *trans ? R * 128 : 16;
    return true;
}

/* The indices of product t of a group (the triple mn under the unrolled loops
 * chain[0..nc) of extents ext, t counting them innermost fastest): of operands A
 * and B and of the accumulator, each with the chain's variables at product t's
 * values and the triple's at 0, simplified. */
static void product_indices(Kernel *k, Node **chain, int nc, const int64_t *ext, int64_t t, const Node *mn,
                            const Expr *A, const Expr *B, Expr **ia, Expr **ib, Expr **ic)
{
    const Node *lj = mn->u.loop.body.v[0], *lk = lj->u.loop.body.v[0], *s = lk->u.loop.body.v[0];
    int rA = A->u.load.buf->rank, rB = B->u.load.buf->rank;
    for (int d = 0; d < rA; d++) ia[d] = A->u.load.idx[d];
    for (int d = 0; d < rB; d++) ib[d] = B->u.load.idx[d];
    for (int d = 0; d < 2; d++) ic[d] = s->u.stmt.idx[d];
    const Var *var[16 + 3];
    Expr *val[16 + 3];
    int64_t rem = t;
    for (int i = nc - 1; i >= 0; i--) {
        var[i] = chain[i]->u.loop.var;
        val[i] = ir_int(k, rem % ext[i]);
        rem /= ext[i];
    }
    var[nc] = mn->u.loop.var, var[nc + 1] = lj->u.loop.var, var[nc + 2] = lk->u.loop.var;
    for (int z = 0; z < 3; z++) val[nc + z] = ir_int(k, 0);
    for (int i = 0; i < nc + 3; i++) {
        for (int d = 0; d < rA; d++) ia[d] = ir_subst(k, ia[d], var[i], val[i]);
        for (int d = 0; d < rB; d++) ib[d] = ir_subst(k, ib[d], var[i], val[i]);
        for (int d = 0; d < 2; d++) ic[d] = ir_subst(k, ic[d], var[i], val[i]);
    }
    for (int d = 0; d < rA; d++) ia[d] = ir_simplify(k, ia[d]);
    for (int d = 0; d < rB; d++) ib[d] = ir_simplify(k, ib[d]);
    for (int d = 0; d < 2; d++) ic[d] = ir_simplify(k, ic[d]);
}

static bool same_idx(Expr *const *a, Expr *const *b, int rank)
{
    for (int d = 0; d < rank; d++)
        if (!gpu_same_expr(a[d], b[d])) return false;
    return true;
}

/* A stage of the accumulator: a local 2-D buffer written element for element from a
 * fragment buffer's element at the same index (`ss[r, c] = acc[r, c] / sqrt(E) +
 * bias[..]`, attention's bias on its scores) takes the fragment layout too, so it
 * lives in the same lanes' registers (step 4 then checks that every access of it
 * sits in a pair of lane loops); held plainly, each thread kept the whole tile. */
static bool frag_load_at(const Expr *x, Expr *const *idx, const Buffer **from)
{
    if (!x) return false;
    if (x->kind == IE_LOAD && is_frag(x->u.load.buf) && x->u.load.buf->rank == 2 && same_idx(x->u.load.idx, idx, 2)) {
        *from = x->u.load.buf;
        return true;
    }
    for (int i = 0; i < ir_expr_arity(x->kind); i++)
        if (frag_load_at(x->args[i], idx, from)) return true;
    return false;
}

static bool spread_stages(Mc *c, Node *n)
{
    bool changed = false;
    if (n->kind == N_STMT) {
        Buffer *b = n->u.stmt.buf;
        const Buffer *from;
        if (b->kind == BUF_TEMP && b->mem == MEM_LOCAL && b->rank == 2 && dtype_is_float(b->dtype) && !is_frag(b) &&
            b->layout == LAYOUT_PLAIN && n->u.stmt.op == SOP_ASSIGN &&
            frag_load_at(n->u.stmt.value, n->u.stmt.idx, &from) && gpu_same_expr(b->shape[0], from->shape[0]) &&
            gpu_same_expr(b->shape[1], from->shape[1])) {
            b->layout = from->layout;
            changed = true;
        }
        return changed;
    }
    NodeList *body = ir_body(n);
    for (int i = 0; body && i < body->n; i++) changed |= spread_stages(c, body->v[i]);
    return changed;
}

/* Whether B fragments 2i + 1 start 8 elements after 2i along N (the dimension the
 * triple's j indexes) and at the same place in every other dimension, for every i:
 * then one ldmatrix .x4 reads both (lanes 16..31 name the second's rows). */
static bool b_pairs(const Kernel *k, const TcGroup *g, const Expr *B, const Var *vj)
{
    const Buffer *b = B->u.load.buf;
    int64_t co;
    int dn = -1;
    for (int d = b->rank - 2; d < b->rank; d++)
        if (gpu_has_var(k, B->u.load.idx[d], vj, &co)) dn = d;
    if (dn < 0 || g->nfb % 2) return false;
    for (int f = 0; f < g->nfb; f += 2) {
        const TcProduct *p0 = NULL, *p1 = NULL;
        for (int t = 0; t < g->nprod; t++) {
            if (!p0 && g->prod[t].fb == f) p0 = &g->prod[t];
            if (!p1 && g->prod[t].fb == f + 1) p1 = &g->prod[t];
        }
        if (!p0 || !p1) return false;
        for (int d = 0; d < b->rank; d++) {
            ArAff a0, a1;
            int64_t diff;
            if (d != dn ? !gpu_same_expr(p0->b[d], p1->b[d])
                        : !ar_aff_of(k, p0->b[d], &a0) || !ar_aff_of(k, p1->b[d], &a1) ||
                              !ar_aff_diff_const(&a1, &a0, &diff) || diff != 8)
                return false;
        }
    }
    return true;
}

/* The group headed by the triple mn under chain[0..nc): its TcGroup on chain[0]
 * (or on mn when nc is 0). */
static void plan_group(Mc *c, Node **chain, int nc, Node *mn)
{
    Kernel *k = c->k;
    bool w = mn->u.loop.kind == LOOP_WGMMA;
    const Node *lj = mn->u.loop.body.v[0], *lk = lj->u.loop.body.v[0], *s = lk->u.loop.body.v[0];
    const Var *vi = mn->u.loop.var, *vj = lj->u.loop.var, *vk = lk->u.loop.var;
    const Buffer *acc = s->u.stmt.buf;
    const Expr *A = operand(s->u.stmt.value->args[0]), *B = operand(s->u.stmt.value->args[1]);
    int64_t ext[16], total = 1, lo, N = 8, R = 0, C = 0;
    gpu_cval(k, acc->shape[0], &R);
    gpu_cval(k, acc->shape[1], &C);
    if (w) gpu_loop_extent(k, lj, &lo, &N);
    for (int i = 0; i < nc; i++) {
        gpu_loop_extent(k, chain[i], &lo, &ext[i]);
        total *= ext[i];
    }
    if (total > (w ? WG_MAX : MMA_MAX)) {
        diag_error(c->d, mn->span, "the unrolled loops around %s loop %s make more than %d products in one "
                   "group", w ? "wgmma" : "mma", vi->name, w ? WG_MAX : MMA_MAX);
        c->ok = false;
        return;
    }
    TcGroup *g = arena_alloc(k->arena, sizeof *g);
    g->nloops = nc;
    g->nprod = (int)total;
    g->n = N;
    g->opbuf[0] = A->u.load.buf;
    g->opbuf[1] = B->u.load.buf;
    g->prod = arena_alloc(k->arena, sizeof *g->prod * (size_t)total);
    g->areg = A->u.load.buf->mem == MEM_LOCAL;
    if (w ? !wg_operand(c, mn, A, vi, vk, &g->trans[0], &g->stride[0][0]) ||
                !wg_operand(c, mn, B, vj, vk, &g->trans[1], &g->stride[1][0])
          : !mma_operand(c, A, vi, vk, &g->trans[0], g->stride[0]) ||
                !mma_operand(c, B, vj, vk, &g->trans[1], g->stride[1])) {
        c->ok = false;
        return;
    }
    int rA = A->u.load.buf->rank, rB = B->u.load.buf->rank;
    for (int64_t t = 0; t < total; t++) {
        TcProduct *p = &g->prod[t];
        p->a = arena_alloc(k->arena, sizeof(Expr *) * (size_t)rA);
        p->b = arena_alloc(k->arena, sizeof(Expr *) * (size_t)rB);
        Expr *ic[2];
        product_indices(k, chain, nc, ext, t, mn, A, B, p->a, p->b, ic);
        int64_t th = w ? 64 : 16, tw = w ? N : 8;
        if (!gpu_cval(k, ic[0], &p->row) || !gpu_cval(k, ic[1], &p->col) || p->row % th || p->col % 8 ||
            p->row < 0 || p->col < 0 || p->row + th > R || p->col + tw > C) {
            if (w)
                diag_error(c->d, mn->span, "wgmma loop %s: each product's accumulator tile must be a constant "
                           "64 x %lld tile of the warpgroup's, starting at a row that is a multiple of 64 "
                           "(unroll the loops around the triple)", vi->name, (long long)N);
            else
                diag_error(c->d, mn->span, "mma loop %s: each product's accumulator tile must be a constant "
                           "16 x 8 tile of the warp's (unroll the loops around the triple)", vi->name);
            c->ok = false;
            return;
        }
        if (g->areg && (!gpu_mult_of(k, p->a[0], th) || !gpu_mult_of(k, p->a[1], 16))) {
            diag_error(c->d, mn->span, "%s loop %s: the tile of %s, read from registers, must start at a row "
                       "that is a multiple of %lld and a column that is a multiple of 16 (whole fragments)",
                       w ? "wgmma" : "mma", vi->name, A->u.load.buf->name, (long long)th);
            c->ok = false;
            return;
        }
        if (!w && (!gpu_mult_of(k, p->a[rA - 1], 8) || !gpu_mult_of(k, p->b[rB - 1], 8))) {
            diag_error(c->d, mn->span, "mma loop %s: the operand tiles must start at a multiple of 8 "
                       "elements in their contiguous dimension (16-byte ldmatrix rows)", vi->name);
            c->ok = false;
            return;
        }
        for (int o = g->areg ? 1 : 0; w && o < 2; o++) {
            Expr *const *ix = o ? p->b : p->a;
            int r = o ? rB : rA;
            const Expr *rowi = ix[r - 2], *coli = ix[r - 1];
            int64_t ext_mn = o ? N : 64;
            bool tr = g->trans[o];
            bool ok = tr ? gpu_mult_of(k, coli, 64) && gpu_mult_of(k, rowi, 8) && ext_mn % 64 == 0
                         : gpu_mult_of(k, rowi, 8) && gpu_mult_of(k, coli, 8);
            if (!ok) {
                diag_error(c->d, mn->span, "wgmma loop %s: the tile of %s must start at a row that is a "
                           "multiple of 8 and, %s", vi->name, g->opbuf[o]->name,
                           tr ? "as the tile is M/N-major, at a column that is a multiple of 64 with N a "
                                "multiple of 64" : "at a column that is a multiple of 8");
                c->ok = false;
                return;
            }
        }
        /* the distinct fragments, in order of first use */
        p->fa = p->fb = -1;
        for (int64_t q = 0; q < t && (p->fa < 0 || p->fb < 0); q++) {
            if (p->fa < 0 && same_idx(g->prod[q].a, p->a, rA)) p->fa = g->prod[q].fa;
            if (p->fb < 0 && same_idx(g->prod[q].b, p->b, rB)) p->fb = g->prod[q].fb;
        }
        if (p->fa < 0) p->fa = g->nfa++;
        if (p->fb < 0) p->fb = g->nfb++;
    }
    g->bpairs = !w && b_pairs(k, g, B, vj);
    (nc ? chain[0] : mn)->u.loop.tc = g;
}

/* Finds the groups below n: a triple, with the unrolled loops perfectly nested
 * directly around it (at most 16, the outermost heading the group). */
static void find_groups(Mc *c, Node *n)
{
    if (!c->ok) return;
    if (is_tc(n)) {
        Node *chain[16];
        int nc = 0;
        /* with A in registers nothing is reused across a k step, so a group stops
         * before it holds more than REG_GROUP products: the B fragments of the
         * whole group are loaded before its products, and outer unrolled loops stay
         * loops (their indices constant once the compiler unrolls them) */
        int64_t prods = 1, cap = reg_operand(n) ? REG_GROUP : INT64_MAX, lo, ext;
        for (Node *p = n->parent; p && p->kind == N_LOOP && p->u.loop.kind == LOOP_UNROLL &&
                                  p->u.loop.body.n == 1 && nc < 16; p = p->parent) {
            if (!gpu_loop_extent(c->k, p, &lo, &ext) || prods * ext > cap) break;
            prods *= ext;
            nc++;
        }
        Node *p = n;
        for (int i = nc - 1; i >= 0; i--) {
            p = p->parent;
            chain[i] = p;
        }
        plan_group(c, chain, nc, n);
        return;
    }
    NodeList *b = ir_body(n);
    for (int i = 0; b && i < b->n; i++) find_groups(c, b->v[i]);
}

/* ---------------- 4: accumulator accesses spread over the lanes ---------------- */

typedef struct FragAcc {
    Expr *const *idx[64];
    int n;
    bool over;
} FragAcc;

static void fa_add(FragAcc *f, Expr *const *idx)
{
    if (f->n < 64) f->idx[f->n++] = idx;
    else f->over = true;
}

static void fa_expr(const Expr *x, FragAcc *f)
{
    if (!x) return;
    if (x->kind == IE_LOAD) {
        if (is_frag(x->u.load.buf)) fa_add(f, x->u.load.idx);
        for (int i = 0; i < x->u.load.buf->rank; i++) fa_expr(x->u.load.idx[i], f);
        return;
    }
    for (int i = 0; i < ir_expr_arity(x->kind); i++) fa_expr(x->args[i], f);
}

/* Accumulator accesses below n, outside triples. */
static void fa_node(const Node *n, FragAcc *f)
{
    if (is_tc(n)) return;
    if (n->kind == N_STMT) {
        if (is_frag(n->u.stmt.buf)) fa_add(f, n->u.stmt.idx);
        fa_expr(n->u.stmt.value, f);
        return;
    }
    const NodeList *body = ir_body((Node *)n);
    for (int i = 0; body && i < body->n; i++) fa_node(body->v[i], f);
}

/* Can loop n be spread over the lanes as the accumulator's rows (q = 0) or
 * columns (q = 1)?  It starts at 0, runs a multiple of 8 times (a warpgroup's
 * rows: of 64), and every accumulator access below indexes dimension q as base +
 * var (base a multiple of that) and the other dimension without it. */
static bool dist_ok(Mc *c, const Node *n, int q, const FragAcc *f)
{
    int64_t lo, ext, co;
    int64_t g = c->wg && q == 0 ? 64 : 8;
    if (f->n == 0 || f->over || !gpu_loop_extent(c->k, n, &lo, &ext) || lo != 0 || ext % g || ext == 0)
        return false;
    const Var *v = n->u.loop.var;
    for (int i = 0; i < f->n; i++) {
        Expr *dq = f->idx[i][q], *dn = f->idx[i][1 - q];
        ArAff a;
        if (!ar_aff_of(c->k, dq, &a) || !gpu_has_var(c->k, dq, v, &co) || co != 1 || ir_expr_uses_var(dn, v)) return false;
        if (!gpu_mult_of(c->k, gpu_at_zero(c->k, dq, v), g)) return false;
    }
    return true;
}

/* Column loop m of a pair whose one statement stores into a global f32 buffer at
 * `base + column` (base even, rows of even length): one 8-byte store per lane. */
static bool store2_ok(Mc *c, const Node *m)
{
    int n = m->u.loop.body.n;
    if (n < 1 || m->u.loop.body.v[n - 1]->kind != N_STMT) return false;
    const Node *s = m->u.loop.body.v[n - 1];
    const Buffer *g = s->u.stmt.buf;
    /* Statements before the store run for both columns before it (the pair is
     * stored once, after them): they may only update fragments, element by element,
     * and must not read what the store writes (an attention's normalisation in
     * place, then its write-back). */
    for (int i = 0; i + 1 < n; i++) {
        const Node *t = m->u.loop.body.v[i];
        if (t->kind != N_STMT || t->u.stmt.lane_reduce || !is_frag(t->u.stmt.buf) || ir_node_reads(t, g))
            return false;
    }
    const Var *cv = m->u.loop.var;
    int64_t rowlen, co;
    if (s->u.stmt.op != SOP_ASSIGN || (g->mem != MEM_GLOBAL && !(g->mem == MEM_SHARED && g->layout == LAYOUT_PLAIN)) ||
        (g->dtype != DT_F32 && g->dtype != DT_F16 && g->dtype != DT_BF16) || g->rank < 1 ||
        !gpu_cval(c->k, g->shape[g->rank - 1], &rowlen) || rowlen % 2)
        return false;
    for (int d = 0; d + 1 < g->rank; d++)
        if (ir_expr_uses_var(s->u.stmt.idx[d], cv)) return false;
    const Expr *last = s->u.stmt.idx[g->rank - 1];
    if (!gpu_lane_coef(c->k, last, cv, &co) || co != 1) return false;
    return gpu_mult_of(c->k, gpu_at_zero(c->k, last, cv), 2);
}

static bool try_pair(Mc *c, Node *n)
{
    if (n->u.loop.body.n != 1 || n->u.loop.body.v[0]->kind != N_LOOP) return false;
    Node *m = n->u.loop.body.v[0];
    if (m->u.loop.kind != LOOP_SERIAL && m->u.loop.kind != LOOP_UNROLL) return false;
    FragAcc f = {0};
    fa_node(n, &f);
    int q = dist_ok(c, n, 0, &f) ? 0 : dist_ok(c, n, 1, &f) ? 1 : -1;
    if (q < 0 || !dist_ok(c, m, 1 - q, &f)) return false;
    n->u.loop.hint = q == 0 ? HINT_LANE_ROWS : HINT_LANE_COLS;
    m->u.loop.hint = q == 1 ? HINT_LANE_ROWS : q == 0 && store2_ok(c, m) ? HINT_LANE_COLS2 : HINT_LANE_COLS;
    return true;
}

/* Every accumulator access outside groups must lie in a pair of lane loops. */
static void mark_pairs(Mc *c, Node *n, bool in_pair)
{
    if (!c->ok || is_tc(n) || (n->kind == N_LOOP && n->u.loop.tc)) return;
    if (n->kind == N_STMT) {
        if (!in_pair && stmt_frag(n)) {
            const Buffer *b = is_frag(n->u.stmt.buf) ? n->u.stmt.buf : NULL;
            for (int i = 0; !b && i < c->k->nbufs; i++)
                if (is_frag(c->k->bufs[i]) && c->touched[i]) b = c->k->bufs[i];
            diag_error(c->d, n->span, "the mma accumulator %s is accessed outside a pair of loops over "
                       "its rows and columns (each from 0, extent a multiple of 8, index base a multiple "
                       "of 8, one directly holding the other) that the back end can spread over the "
                       "lanes of a warp", b ? b->name : "?");
            c->ok = false;
        }
        return;
    }
    if (n->kind == N_LOOP && !in_pair && (n->u.loop.kind == LOOP_SERIAL || n->u.loop.kind == LOOP_UNROLL) &&
        try_pair(c, n))
        in_pair = true;
    NodeList *b = ir_body(n);
    for (int i = 0; b && i < b->n; i++) mark_pairs(c, b->v[i], in_pair);
}

static void find_any_triple(const Node *n, bool *any)
{
    if (is_tc(n)) *any = true;
    const NodeList *b = ir_body((Node *)n);
    for (int i = 0; b && i < b->n && !*any; i++) find_any_triple(b->v[i], any);
}

bool gpu_mma_pass(Kernel *k, const Target *target, Diags *d)
{
    Mc c = {.k = k, .d = d, .target = target, .ok = true};
    c.touched = xcalloc((size_t)k->nbufs + 1, 1);
    for (int b = 0; b < k->nbufs; b++) k->bufs[b]->layout = LAYOUT_PLAIN;
    for (int t = 0; t < k->body.n && c.ok; t++) {
        Node *top = k->body.v[t];
        if (!gpu_scheduled(top)) continue;
        c.any = c.wg = false;
        c.launch = t;
        find_triples(&c, top, false, false);
        if (!c.ok || !c.any) continue;
        while (spread_stages(&c, top)) {}
        memset(c.touched, 0, (size_t)k->nbufs + 1);
        node_touch(top, c.touched);
        if (!check_launch(&c, top)) {
            c.ok = false;
            break;
        }
        find_groups(&c, top);
        mark_pairs(&c, top, false);
        if (c.ok) c.ok = gpu_mma_rows(k, top, c.wg, d);
    }
    /* a layout holds in every launch that touches the buffer: one that does not run
     * the triples cannot address it so */
    for (int t = 0; t < k->body.n && c.ok; t++) {
        Node *top = k->body.v[t];
        c.any = false;
        find_any_triple(top, &c.any);
        if (c.any) continue;
        memset(c.touched, 0, (size_t)k->nbufs + 1);
        node_touch(top, c.touched);
        for (int b = 0; b < k->nbufs && c.ok; b++)
            if (c.touched[b] && k->bufs[b]->layout != LAYOUT_PLAIN) {
                diag_error(d, k->bufs[b]->span, "%s is held in a tensor-core layout for the triples of another "
                           "launch, and launch %d of kernel %s, which runs none, accesses it too", k->bufs[b]->name,
                           t, k->name);
                c.ok = false;
            }
    }
    free(c.touched);
    return c.ok;
}
