/* GPU target lowering, pass `gpu-tma`: which staging copies of a software pipeline
 * the Hopper tensor memory accelerator (TMA) issues instead of the threads.
 *
 * A copy the threads run (cp.async) costs every thread address arithmetic and one
 * instruction per 16 bytes: for a 128 x 256 wgmma tile and a K step of 64 that is
 * 3072 copies a block per step, issued by the same warps that issue the products.
 * A bulk tensor copy is one instruction per box, issued by one thread, completed on
 * an mbarrier with a byte count, and fills what lies outside the tensor with zeros.
 *
 * This pass marks copy node n of a pipeline loop (accepted by gpu-pipeline, so its
 * copies are the first nodes of the body and write stage `v % S`) with a TmaCopy
 * when it proves that n writes, for every r < R and c < C,
 *     dst[stage, r, c] = src[o_0, .., o_rdim + r, .., o_last + c]      (0 outside src)
 * with origins o that do not depend on n's loops (or, for a source whose leading
 * dimensions the copy reads through one index, the same of the 2-D view
 * [their product, the last]: see `flatten`).  The proof:
 *   - n is a chain of loops with constant bounds (thread, unrolled, vector, serial)
 *     around one statement `dst[s, a, b] = src[g_0, .., g_m]` (no guard but the
 *     load's own range test, which yields 0: an input with a non-zero pad is
 *     refused); s mentions none of n's loops, a and b nothing else;
 *   - each g_d splits, through + and -, into a part without n's loops (the origin
 *     o_d) and a part of n's loops and constants alone (h_d);
 *   - every iteration of n, enumerated (at most 2^16), gives h_last = b, h_rdim = a
 *     for one dimension rdim and h_d = 0 for the others, and the (a, b) pairs cover
 *     [0, R) x [0, C) exactly once.
 * So the box copy writes the same values to the same places, and nothing else.  It
 * is used only where the hardware takes it: sm_90 and later, 16-bit elements, dst in
 * the 128-byte swizzled layout (what wgmma reads and TMA writes for a box 64
 * elements wide), C a multiple of 64 (one copy per 64-column panel), R a multiple of
 * 8 up to 256, src rows a multiple of 16 bytes, every size below 2^31.  A pipeline
 * takes TMA only when all of its copies qualify (one completion mechanism per
 * loop); the others keep cp.async.  Nothing here changes what the loop computes:
 * the interpreter ignores the mark, and the back end (codegen/cuda/emit_tc.c)
 * issues the boxes in place of the copy's statements. */
#include <stdlib.h>
#include <string.h>

#include "../ir/arith.h"
#include "../ir/walk.h"
#include "gpu_int.h"

enum { TMA_MAX_ITERS = 1 << 16, TMA_MAX_LOOPS = 8 };

/* Does x mention a variable of vs[0..n) (in), or one outside it (out)? */
static void vars_of(const Expr *x, const Var *const *vs, int n, bool *in, bool *out)
{
    if (!x) return;
    if (x->kind == IE_VAR) {
        bool mine = false;
        for (int i = 0; i < n; i++) mine |= vs[i] == x->u.var;
        *(mine ? in : out) = true;
        return;
    }
    if (x->kind == IE_LOAD) { /* a gather in an index: never a box */
        *in = *out = true;
        return;
    }
    for (int i = 0; i < ir_expr_arity(x->kind); i++) vars_of(x->args[i], vs, n, in, out);
}

/* x = outer + inner, outer free of vs, inner of vs and constants alone, split
 * through + and -; false when a term mixes both. */
static bool split(Kernel *k, Expr *x, const Var *const *vs, int n, Expr **outer, Expr **inner)
{
    if (x->kind == IE_ADD || x->kind == IE_SUB) {
        Expr *o0, *i0, *o1, *i1;
        if (!split(k, x->args[0], vs, n, &o0, &i0) || !split(k, x->args[1], vs, n, &o1, &i1)) return false;
        ExprKind op = x->kind;
        *outer = ir_simplify(k, ir_bin(k, op, o0, o1));
        *inner = ir_simplify(k, ir_bin(k, op, i0, i1));
        return true;
    }
    bool in = false, out = false;
    vars_of(x, vs, n, &in, &out);
    if (in && out) return false;
    /* copies: ir_simplify rewrites in place, and the statement keeps its tree */
    *outer = in ? ir_int(k, 0) : ir_clone_expr(k, x);
    *inner = in ? ir_clone_expr(k, x) : ir_int(k, 0);
    return true;
}

typedef struct Iter {
    ArEnv env;
    const Var *vs[TMA_MAX_LOOPS];
    int64_t val[TMA_MAX_LOOPS];
    int n;
} Iter;

static bool iter_var(ArEnv *env, const Var *v, int64_t *lo, int64_t *hi)
{
    Iter *it = env->ctx;
    for (int i = 0; i < it->n; i++)
        if (it->vs[i] == v) {
            *lo = *hi = it->val[i];
            return true;
        }
    return false;
}

/* ---- the leading dimensions read as one ----
 *
 * A convolution's image read through the output-pixel index m of an implicit GEMM
 * (tune/rules_igemm.c) is X?[m / (H*W), m % (H*W) / W + o1, m % W + o2, c]: no
 * dimension splits into an origin and the copy's part, yet with the middle
 * indices provably inside their extents (a 1x1 convolution without padding, o1 =
 * o2 = 0 over the whole loop ranges) the element is row L = sum idx_d * stride_d
 * of the 2-D view [N*H*W, C], and L is affine: the quotients and remainders
 * cancel (m / (H*W) * (H*W) + m % (H*W) = m).  The rows of the view past its end
 * are exactly the pixels past the last image (dimension 0 out of range, the
 * others in range), which the box fills with zeros as the guarded read did. */

/* Which side of the copy column c of sp is: 1 the copy's loops (and quotients of
 * them), 2 outside them, 3 both (a quotient of a sum of both). */
static int col_side(const ArSpace *sp, int c, const Var *const *vs, int n)
{
    if (sp->var[c]) {
        for (int i = 0; i < n; i++)
            if (vs[i] == sp->var[c]) return 1;
        return 2;
    }
    if (sp->param[c] != -2) return 2; /* an unbound size: outside */
    for (int i = 0; i < sp->ndiv; i++)
        if (sp->div[i].col == c) {
            int side = 0;
            for (int j = 0; j < sp->ncol; j++)
                if (sp->div[i].num.c[j]) side |= col_side(sp, j, vs, n);
            return side;
        }
    return 3;
}

/* Row r as an expression (floor quotients spelled out); NULL for a column that is no
 * variable or quotient. */
static Expr *row_expr(Kernel *k, const ArSpace *sp, const ArRow *r)
{
    Expr *e = ir_int(k, r->k);
    for (int c = 0; c < sp->ncol; c++) {
        if (!r->c[c]) continue;
        Expr *x = NULL;
        if (sp->var[c])
            x = ir_var(k, (Var *)sp->var[c]);
        else
            for (int i = 0; i < sp->ndiv && !x; i++)
                if (sp->div[i].col == c) {
                    Expr *num = row_expr(k, sp, &sp->div[i].num);
                    x = num ? ir_bin(k, IE_DIV, num, ir_int(k, sp->div[i].d)) : NULL;
                }
        if (!x) return NULL;
        e = ir_bin(k, IE_ADD, e, ir_bin(k, IE_MUL, ir_int(k, r->c[c]), x));
    }
    return ir_simplify(k, e);
}

/* The row index of idx[0..rank-1) in the view whose rows are src's leading
 * dimensions, as origin + copy part; false when a middle index may leave its
 * dimension or the row index is not that sum. */
static bool flatten(Kernel *k, Expr *const *idx, int rank, const int64_t *shape, const Var *const *vs, int nv,
                    Expr **outer, Expr **inner)
{
    for (int d = 1; d + 1 < rank; d++) {
        int64_t lo, hi;
        if (!ar_interval_loops(k, idx[d], &lo, &hi) || lo < 0 || hi >= shape[d]) return false;
    }
    ArSpace sp;
    ar_space_init(&sp, k);
    sp.divs = true;
    ArRow L, x;
    memset(&L, 0, sizeof L);
    int64_t stride = 1;
    for (int d = rank - 2; d >= 0; d--) {
        if (!ar_row_of(&sp, idx[d], 0, &x) || !ar_row_lin(&L, 1, &L, stride, &x) ||
            __builtin_mul_overflow(stride, shape[d], &stride))
            return false;
    }
    if (stride > INT32_MAX) return false;
    ArRow o, in;
    memset(&o, 0, sizeof o);
    memset(&in, 0, sizeof in);
    o.k = L.k;
    for (int c = 0; c < sp.ncol; c++) {
        if (!L.c[c]) continue;
        int side = col_side(&sp, c, vs, nv);
        if (side == 3) return false;
        (side == 1 ? &in : &o)->c[c] = L.c[c];
    }
    *outer = row_expr(k, &sp, &o);
    *inner = row_expr(k, &sp, &in);
    return *outer && *inner;
}

/* The TmaCopy of copy node n, or NULL (the copy stays with the threads). */
static TmaCopy *box_of(Kernel *k, Node *n)
{
    Iter it = {0};
    int64_t lo[TMA_MAX_LOOPS], ext[TMA_MAX_LOOPS], total = 1;
    Node *s = n;
    while (s->kind == N_LOOP) {
        LoopKind lk = s->u.loop.kind;
        if (it.n == TMA_MAX_LOOPS || s->u.loop.body.n != 1 || s->u.loop.tc ||
            !(gpu_is_thread(lk) || lk == LOOP_UNROLL || lk == LOOP_VECTOR || lk == LOOP_SERIAL) ||
            !gpu_loop_extent(k, s, &lo[it.n], &ext[it.n]) || ext[it.n] < 1)
            return NULL;
        total *= ext[it.n];
        if (total > TMA_MAX_ITERS) return NULL;
        it.vs[it.n++] = s->u.loop.var;
        s = s->u.loop.body.v[0];
    }
    if (s->kind != N_STMT || s->u.stmt.op != SOP_ASSIGN || s->u.stmt.guarded) return NULL;
    Buffer *dst = s->u.stmt.buf;
    Expr *v = s->u.stmt.value;
    if (v->kind == IE_CAST && v->dtype == DT_F32) v = v->args[0]; /* widened and narrowed back: exact */
    if (v->kind != IE_LOAD) return NULL;
    Buffer *src = v->u.load.buf;
    if (dst->mem != MEM_SHARED || dst->layout != LAYOUT_SWIZZLE128 || dst->rank != 3 || src->mem != MEM_GLOBAL ||
        src->rank < 2 || src->rank > 5 || src->dtype != dst->dtype || dtype_bytes(src->dtype) != 2)
        return NULL;
    if (v->u.load.guarded && src->has_pad && (src->pad != 0.0 || __builtin_signbit(src->pad))) return NULL;
    int64_t R, C, shape[5];
    if (!ar_const(k, dst->shape[1], &R) || !ar_const(k, dst->shape[2], &C) || R * C != total || R % 8 || R > 256 ||
        C % 64)
        return NULL;
    for (int d = 0; d < src->rank; d++)
        if (!ar_const(k, src->shape[d], &shape[d]) || shape[d] < 1 || shape[d] > INT32_MAX) return NULL;
    if (shape[src->rank - 1] * 2 % 16) return NULL;
    /* the stage index outside the copy's loops, the row and column inside alone */
    Expr *const *di = s->u.stmt.idx;
    bool in = false, out = false;
    vars_of(di[0], it.vs, it.n, &in, &out);
    if (in) return NULL;
    for (int j = 1; j < 3; j++) {
        in = out = false;
        vars_of(di[j], it.vs, it.n, &in, &out);
        if (out) return NULL;
    }
    Expr *outer[5], *inner[5];
    int rank = src->rank;
    bool splits = true;
    for (int d = 0; d < rank && splits; d++) splits = split(k, v->u.load.idx[d], it.vs, it.n, &outer[d], &inner[d]);
    if (!splits) {
        /* the leading dimensions as one: the view [product, last] */
        Expr *o0, *i0;
        if (rank < 3 || !flatten(k, v->u.load.idx, rank, shape, it.vs, it.n, &o0, &i0) ||
            !split(k, v->u.load.idx[rank - 1], it.vs, it.n, &outer[1], &inner[1]))
            return NULL;
        int64_t rows = 1;
        for (int d = 0; d + 1 < rank; d++) rows *= shape[d];
        outer[0] = o0, inner[0] = i0;
        shape[1] = shape[rank - 1], shape[0] = rows;
        rank = 2;
    }

    /* every iteration: h_last = b, h_d = a or 0, the (a, b) pairs a permutation */
    bool eqa[5], eq0[5];
    for (int d = 0; d < rank; d++) eqa[d] = eq0[d] = true;
    uint8_t *seen = xcalloc((size_t)total, 1);
    it.env = (ArEnv){.k = k, .var = iter_var, .ctx = &it};
    for (int i = 0; i < it.n; i++) it.val[i] = lo[i];
    bool ok = true;
    for (int64_t t = 0; t < total && ok; t++) {
        int64_t a, b, h;
        ok = ar_eval(&it.env, di[1], &a) && ar_eval(&it.env, di[2], &b) && a >= 0 && a < R && b >= 0 && b < C &&
             !seen[a * C + b];
        if (ok) seen[a * C + b] = 1;
        for (int d = 0; d < rank && ok; d++) {
            ok = ar_eval(&it.env, inner[d], &h);
            if (d == rank - 1) ok = ok && h == b;
            eqa[d] &= h == a;
            eq0[d] &= h == 0;
        }
        for (int i = it.n - 1; i >= 0; i--) { /* the next iteration, innermost loop fastest */
            if (++it.val[i] < lo[i] + ext[i]) break;
            it.val[i] = lo[i];
        }
    }
    free(seen);
    if (!ok) return NULL;
    int rdim = -1;
    for (int d = 0; d + 1 < rank; d++) {
        if (eqa[d] && !eq0[d] && rdim < 0)
            rdim = d;
        else if (!eq0[d])
            return NULL;
    }
    if (rdim < 0) return NULL;
    TmaCopy *tc = arena_alloc(k->arena, sizeof *tc);
    *tc = (TmaCopy){.src = src, .dst = dst, .stage = ir_clone_expr(k, di[0]), .rdim = rdim, .rows = R, .cols = C,
                    .rank = rank};
    for (int d = 0; d < rank; d++) tc->shape[d] = shape[d];
    tc->origin = arena_alloc(k->arena, sizeof *tc->origin * (size_t)rank);
    for (int d = 0; d < rank; d++) tc->origin[d] = outer[d];
    return tc;
}

/* Marks the copies of pipeline loop n when every one of them is a box. */
static void mark(Kernel *k, Node *n)
{
    TmaCopy *t[64];
    int nc = n->u.loop.ncopies;
    if (nc > 64 || n->u.loop.reg_staged) return;
    for (int i = 0; i < nc; i++) {
        Node *c = n->u.loop.body.v[i];
        if (c->kind != N_LOOP || !(t[i] = box_of(k, c))) return;
    }
    for (int i = 0; i < nc; i++) n->u.loop.body.v[i]->u.loop.tma = t[i];
}

static void walk(Kernel *k, Node *n, bool clear)
{
    if (n->kind == N_LOOP && clear) n->u.loop.tma = NULL;
    if (n->kind == N_LOOP && !clear && n->u.loop.stages) mark(k, n);
    NodeList *b = ir_body(n);
    for (int i = 0; b && i < b->n; i++) walk(k, b->v[i], clear);
}

bool gpu_tma_pass(Kernel *k, const Target *target, Diags *d)
{
    (void)d;
    for (int i = 0; i < k->body.n; i++) walk(k, k->body.v[i], true);
    if (!target->tma) return true;
    for (int i = 0; i < k->body.n; i++)
        if (gpu_scheduled(k->body.v[i])) walk(k, k->body.v[i], false);
    return true;
}
