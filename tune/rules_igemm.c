/* Implicit GEMM: a contraction whose output rows are several loops and whose
 * reduction is several loops (a convolution in NHWC: rows (n, y, x), columns k,
 * reduction (r, s, c)) read as the product M x N x K the tensor-core templates of
 * tune/rules_tc.c tile, and the steps that make its nest that product.
 *
 *     Y[n, y, x, k] = sum(r, s, c) X[n, y*U + r - P, x*U + s - P, c] * F[k, r, s, c]
 *
 * The weights F are the panel operand B: read along the column loop k and the
 * reduction, never along a row loop.  The image X is A: read along the rows and the
 * reduction, with the innermost reduction loop c alone in its last (contiguous)
 * dimension, so that a K step of BK channels at one tap (r, s) is a row of BK
 * contiguous elements for every output pixel.  The steps (prelude below):
 *
 *   fuse the consumers (the dtype conversion, a bias, an activation) loop by loop;
 *   split(c, BK, cb, kt)                 a K step is BK channels at one tap
 *   collapse(r, s) collapse(rs, cb, ko)  ko walks the taps and channel blocks
 *   collapse(y, x) collapse(n, yx, m)    m walks the output pixels; the f32
 *                                        accumulator follows (xform_collapse.c)
 *
 * after which the nest is m x k x (ko, kt), and the templates tile it as a GEMM,
 * stage F per K step with cache (its box at one tap is a BN x BK tile) and X with
 * gather (passes/xform_gather.c: per K step, one row of BK channels per pixel of
 * the tile, zeros where the tap falls in the padding: the im2col tile, never
 * materialised whole).  Pixels past the last (a tile of m padded past N*P*Q) write
 * nothing: the padded split proves it from the image index m / (P*Q).  The f32 sum
 * is the temporary of a 16-bit result, which follows the collapse and is a matrix
 * over (m, k), or an f32 result itself, whose tile of scattered pixel rows the
 * templates stage with gather too (it proves the rows distinct). */
#include <string.h>

#include "rules_int.h"

static const Expr *strip_cast(const Expr *e)
{
    return e->kind == IE_CAST ? e->args[0] : e;
}

static bool load_uses(const Expr *ld, const Var *v)
{
    for (int d = 0; d < ld->u.load.buf->rank; d++)
        if (ir_expr_uses_var(ld->u.load.idx[d], v))
            return true;
    return false;
}

/* The dimension of ld indexed by v: exactly one, whose index is v itself; -1 else. */
static int plain_dim(const Expr *ld, const Var *v)
{
    int at = -1;
    for (int d = 0; d < ld->u.load.buf->rank; d++)
        if (ir_expr_uses_var(ld->u.load.idx[d], v)) {
            const Expr *x = ld->u.load.idx[d];
            if (at >= 0 || x->kind != IE_VAR || x->u.var != v)
                return -1;
            at = d;
        }
    return at;
}

const IgPlan *rules_igemm_read(const Kernel *u, Node *const *loops, const Node *s, const NestInfo *const *ns, int nn,
                               Arena *a)
{
    const NestInfo *n = ns[0];
    int nm = n->nspatial - 1, nred = n->nloops - n->nspatial;
    if (!n->red || !n->mul || n->quot || nm < 1 || nred < 1 || (nm == 1 && nred == 1) || nm > IG_MAX || nred > IG_MAX ||
        n->out_t != DT_F32)
        return NULL;
    const Buffer *out = ir_find_buffer(u, n->out);
    /* the f32 sum: the temporary of a 16-bit result, or an f32 result itself */
    if (!out || (out->kind != BUF_TEMP && out->kind != BUF_OUT) || !s || s->u.stmt.op != SOP_ADD ||
        s->u.stmt.value->kind != IE_MUL)
        return NULL;
    const Expr *l0 = strip_cast(s->u.stmt.value->args[0]), *l1 = strip_cast(s->u.stmt.value->args[1]);
    if (l0->kind != IE_LOAD || l1->kind != IE_LOAD)
        return NULL;
    const Var *v[16];
    for (int i = 0; i < n->nloops; i++)
        v[i] = loops[i]->u.loop.var;
    const Var *vj = v[nm];
    const Expr *A = load_uses(l0, vj) ? l1 : l0, *B = A == l0 ? l1 : l0;
    if (load_uses(A, vj) || !load_uses(B, vj))
        return NULL;
    bool rows = false;
    for (int i = 0; i < nm; i++) {
        if (load_uses(B, v[i]))
            return NULL;
        rows |= load_uses(A, v[i]);
    }
    const Buffer *ba = A->u.load.buf, *bb = B->u.load.buf;
    if (!rows || ba->dtype != bb->dtype || (ba->dtype != DT_F16 && ba->dtype != DT_BF16) || ba->rank < 2 ||
        bb->rank < 2 || (ba->has_pad && ba->pad != 0) || bb->has_pad)
        return NULL;
    /* the contiguous reduction loop: alone in A's last dimension and plain in one of B's */
    int cred = -1;
    for (int r = 0; r < nred && cred < 0; r++) {
        const Var *c = v[nm + 1 + r];
        if (plain_dim(A, c) == ba->rank - 1)
            cred = r;
    }
    if (cred < 0)
        return NULL;
    const Var *vc = v[nm + 1 + cred];
    int bc = plain_dim(B, vc), bj = plain_dim(B, vj);
    if (bc < 0 || bj < 0 || (bc != bb->rank - 1 && bj != bb->rank - 1))
        return NULL;
    int64_t C = n->ext[nm + 1 + cred], rowa, rowb;
    if (C % 8 || !ir_eval_size(u, ba->shape[ba->rank - 1], &rowa) || rowa % 8 ||
        !ir_eval_size(u, bb->shape[bb->rank - 1], &rowb) || rowb % 8)
        return NULL;
    IgPlan *p = arena_alloc(a, sizeof *p);
    memset(p, 0, sizeof *p);
    p->nm = nm;
    p->nred = nred;
    p->cred = cred;
    p->C = C;
    p->sum_is_result = out->kind == BUF_OUT;
    p->ncons = nn - 1 < IG_MAX_CONS ? nn - 1 : IG_MAX_CONS;
    for (int e = 0; e < 1 + p->ncons; e++)
        for (int d = 0; d <= nm; d++)
            p->spat[e][d] = ns[e]->loop[d];
    for (int r = 0; r < nred; r++)
        p->red[r] = n->loop[nm + 1 + r];
    int64_t M = 1, K = 1;
    for (int i = 0; i < nm; i++)
        M *= n->ext[i];
    for (int r = 0; r < nred; r++)
        K *= n->ext[nm + 1 + r];
    /* the product as the templates read it: A[m, kt] gathered, B[j, kt] or B[kt, j] */
    NestInfo *g = &p->gemm;
    *g = *n;
    g->nloops = 3;
    g->nspatial = 2;
    g->ext[0] = M, g->ext[1] = n->ext[nm], g->ext[2] = K;
    g->pa = arena_strdup(a, ba->name), g->pa_t = ba->dtype, g->pa_in = ba->kind == BUF_IN;
    g->pb = arena_strdup(a, bb->name), g->pb_t = bb->dtype, g->pb_in = bb->kind == BUF_IN;
    g->pa_rank = 2, g->pa_kdim = 1, g->pa_sdim = 0;
    g->pb_rank = 2, g->pb_kdim = bc == bb->rank - 1 ? 1 : 0, g->pb_sdim = bc == bb->rank - 1 ? 0 : 1;
    const NestInfo *w = ns[nn - 1];
    g->wr = w->wr, g->wr_t = w->wr_t, g->wr_row = w->wr_row, g->wr_out = w->wr_out;
    return p;
}

/* The first of a name's spellings that nothing in the kernel is called yet (the
 * same answer when the rule is checked and when it is applied). */
static const char *fresh(Builder *b, const char *const cands[4])
{
    for (int i = 0; i < 4; i++)
        if (bld_name_free(b, cands[i]))
            return cands[i];
    return NULL;
}

static const char *const n_ko[4] = {"ko", "ko1", "ko2", "ko3"}, *const n_kt[4] = {"kt", "kt1", "kt2", "kt3"},
                         *const n_cb[4] = {"cb", "cb1", "cb2", "cb3"}, *const n_m[4] = {"m", "m1", "m2", "m3"};

bool rules_igemm_prelude(Builder *b, const IgPlan *p, int bk, IgLoops *out)
{
    memset(out, 0, sizeof *out);
    /* the consumers into the product's nest, loop by loop */
    for (int e = 1; e <= p->ncons; e++)
        for (int d = 0; d <= p->nm; d++)
            if (!bld_fuse(b, bld_loop(b, p->spat[0][d]), bld_loop(b, p->spat[e][d])))
                return false;
    /* the reduction: the contiguous loop innermost, split by the K step, the rest
     * and its blocks one loop */
    SLoop *red[IG_MAX];
    int nr = 0;
    for (int r = 0; r < p->nred; r++)
        if (r != p->cred)
            red[nr++] = bld_loop(b, p->red[r]);
    red[nr++] = bld_loop(b, p->red[p->cred]);
    if (p->cred != p->nred - 1 && !bld_reorder(b, red, nr))
        return false;
    const char *nko = fresh(b, n_ko), *nkt = fresh(b, n_kt);
    SLoop *cb, *kt;
    if (!nko || !nkt ||
        !(p->C % bk ? bld_split_padded : bld_split_named)(b, red[nr - 1], sv(bk), nr > 1 ? fresh(b, n_cb) : nko,
                                                          nkt, &cb, &kt))
        return false;
    SLoop *ko = cb;
    if (nr > 1) {
        SLoop *x = red[0];
        for (int r = 1; r < nr - 1; r++)
            if (!bld_collapse(b, x, red[r], NULL, &x))
                return false;
        if (!bld_collapse(b, x, cb, nko, &ko))
            return false;
    }
    /* the rows: one loop over the output pixels, innermost pair first */
    SLoop *m = bld_loop(b, p->spat[0][p->nm - 1]);
    const char *nmn = fresh(b, n_m);
    for (int d = p->nm - 2; d >= 0; d--)
        if (!bld_collapse(b, bld_loop(b, p->spat[0][d]), m, d == 0 ? nmn : NULL, &m))
            return false;
    out->m = m;
    out->j = bld_loop(b, p->spat[0][p->nm]);
    out->ko = ko;
    out->kt = kt;
    return out->m && out->j && out->ko && out->kt;
}
