/* GPU target lowering, pass `gpu-vector`: which accesses of a scheduled launch's
 * vector loops the CUDA back end issues as one 64- or 128-bit access.
 *
 *   - A vector loop inside a thread loop whose one statement copies a 16-bit or
 *     f32 element unchanged (D[.., b + v] = S[.., b' + v], possibly through the f32
 *     a load is computed in, which rounds back exactly) between places that are
 *     contiguous in the lane and aligned to the access is marked `wide`: staging
 *     copies of f16 tiles move eight elements per access.
 *   - In another vector loop of 2, 4 or 8 lanes, each load of its statements from
 *     shared or global memory that is contiguous in the lane and aligned, and
 *     4 to 16 bytes in all (f32 in 2 or 4 lanes, f16 and bf16 in 2, 4 or 8), is
 *     marked `{wide}`: it is read once before the loop as one access, and the
 *     unrolled lanes take its components (a dot product's `split(d, 8)
 *     rfactor(di) vectorize(di)` reads eight 16-bit elements of each operand at a
 *     time).
 *
 * Contiguous and aligned: the load (store) is unguarded (a copy's source may be
 * guarded, a padded tile's edge or an input padded with zeros: the row length
 * being a multiple of the width and lane 0 aligned, the vector lies all inside the
 * row or all past it, its other indices are the same in every lane, and the back
 * end fills it with zeros outside; so may its destination, the write-back of a
 * padded tile, which the back end then makes or drops whole), only its last index
 * mentions the lane, with coefficient 1, the row length is a multiple of the
 * width, and the index at lane 0 is a provable multiple of the width, so the
 * address is aligned to the whole access.  The last index of every access marked
 * here is rewritten as `base + lane`, base being the index at lane 0 (the same
 * value), so the back end prints the first lane's address from the IR.
 *
 * Why it is legal: the lanes of a vector loop carry no dependence (the schedule
 * proved it), so reading all of a load's lanes before the loop, or copying all
 * lanes at once, gives each lane the value it would have read. */
#include "gpu_int.h"

#define MAX_WIDE 32   /* wide loads per loop, as many as the back end names */

static bool is_tc(const Node *n)
{
    return n->kind == N_LOOP && (n->u.loop.kind == LOOP_MMA || n->u.loop.kind == LOOP_WGMMA);
}

static bool contig_ok(Kernel *k, const Buffer *b, Expr *const *idx, bool guarded, const Var *lane, int64_t w)
{
    if (b->mem == MEM_LOCAL || (guarded && b->has_pad && b->pad != 0) || b->rank == 0)
        return false;
    for (int d = 0; d + 1 < b->rank; d++)
        if (ir_expr_uses_var(idx[d], lane)) return false;
    int64_t cl = 0, rowlen;
    if (!gpu_lane_coef(k, idx[b->rank - 1], lane, &cl) || cl != 1) return false;
    if (!gpu_cval(k, b->shape[b->rank - 1], &rowlen) || rowlen % w) return false;
    return gpu_mult_of(k, gpu_at_zero(k, idx[b->rank - 1], lane), w);
}

/* idx[rank - 1] := (its value at lane 0) + lane: the same value, printable by lane. */
static void split_last(Kernel *k, Expr **idx, int rank, Var *lane)
{
    Expr *base = gpu_at_zero(k, idx[rank - 1], lane);
    idx[rank - 1] = ir_bin(k, IE_ADD, base, ir_var(k, lane));
}

/* The copy statement of vector loop n of w lanes, or NULL. */
static Node *wide_copy(Kernel *k, const Node *n, int64_t w)
{
    const NodeList *b = &n->u.loop.body;
    if (b->n != 1 || b->v[0]->kind != N_STMT) return NULL;
    Node *s = b->v[0];
    const Buffer *d = s->u.stmt.buf;
    const Expr *v = s->u.stmt.value;
    if (v->kind == IE_CAST && v->dtype == DT_F32) v = v->args[0];
    if (s->u.stmt.op != SOP_ASSIGN || v->kind != IE_LOAD || d->mem == MEM_LOCAL || d->rank == 0) return NULL;
    const Buffer *sb = v->u.load.buf;
    int64_t bytes = w * dtype_bytes(d->dtype);
    if (sb->dtype != d->dtype || (bytes != 8 && bytes != 16) || !dtype_is_float(d->dtype) ||
        d->dtype == DT_F64 || !contig_ok(k, sb, v->u.load.idx, v->u.load.guarded, n->u.loop.var, w) ||
        !contig_ok(k, d, s->u.stmt.idx, s->u.stmt.guarded, n->u.loop.var, w))
        return NULL;
    return s;
}

/* A load of this type a vector loop of w lanes reads at once: f32 in 2 or 4 lanes
 * (8 or 16 bytes), f16 and bf16 in 2, 4 or 8 (4 to 16 bytes). */
static bool wide_type(DType t, int64_t w)
{
    if (t == DT_F32) return w == 2 || w == 4;
    return (t == DT_F16 || t == DT_BF16) && (w == 2 || w == 4 || w == 8);
}

static int mark_loads(Kernel *k, Expr *x, Var *lane, int64_t w, int count)
{
    if (!x) return count;
    if (x->kind == IE_LOAD) {
        if (count < MAX_WIDE && wide_type(x->u.load.buf->dtype, w) && !x->u.load.guarded &&
            contig_ok(k, x->u.load.buf, x->u.load.idx, x->u.load.guarded, lane, w)) {
            x->u.load.wide = true;
            split_last(k, x->u.load.idx, x->u.load.buf->rank, lane);
            count++;
        }
        return count;
    }
    for (int i = 0; i < ir_expr_arity(x->kind); i++) count = mark_loads(k, x->args[i], lane, w, count);
    return count;
}

/* tdepth: enclosing thread loops; in_wide: inside a vector loop with wide loads
 * (its lanes are unrolled around the loads it read; nothing inside is widened). */
static void walk(Kernel *k, Node *n, int tdepth, bool in_wide)
{
    if (is_tc(n) || n->kind == N_STMT)
        return;
    int64_t lo, w;
    if (n->kind == N_LOOP && n->u.loop.kind == LOOP_VECTOR && !in_wide && gpu_loop_extent(k, n, &lo, &w) &&
        lo == 0) {
        Node *s = tdepth > 0 ? wide_copy(k, n, w) : NULL;
        if (s) {
            n->u.loop.hint = HINT_WIDE;
            Expr *src = s->u.stmt.value->kind == IE_CAST ? s->u.stmt.value->args[0] : s->u.stmt.value;
            split_last(k, s->u.stmt.idx, s->u.stmt.buf->rank, n->u.loop.var);
            split_last(k, src->u.load.idx, src->u.load.buf->rank, n->u.loop.var);
            return;
        }
        if (w == 2 || w == 4 || w == 8) {
            int count = 0;
            for (int i = 0; i < n->u.loop.body.n; i++)
                if (n->u.loop.body.v[i]->kind == N_STMT)
                    count = mark_loads(k, n->u.loop.body.v[i]->u.stmt.value, n->u.loop.var, w, count);
            in_wide = count > 0;
        }
    }
    if (n->kind == N_LOOP && gpu_is_thread(n->u.loop.kind)) tdepth++;
    NodeList *body = ir_body(n);
    for (int i = 0; body && i < body->n; i++) walk(k, body->v[i], tdepth, in_wide);
}

bool gpu_vector_pass(Kernel *k, Diags *d)
{
    (void)d;
    for (int i = 0; i < k->body.n; i++)
        if (gpu_scheduled(k->body.v[i]))
            walk(k, k->body.v[i], 0, false);
    return true;
}
