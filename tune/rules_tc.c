/* Tensor-core templates: the tuner's schedules for 16-bit products on sm_80+
 * (mma.sync) and sm_90a (wgmma), derived from the contraction's loop nest rather
 * than from one written form of GEMM.
 *
 * One family of steps serves every such contraction C[i, j] (+)= A·B over k:
 *   - the elementwise statements that consume the product over the same (i, j)
 *     (a dtype conversion of a 16-bit output, a bias, an activation, a residual)
 *     are fused into the product's nest first, so that after tiling they read the
 *     accumulator tile where it lies: the epilogue runs on the fragments, with no
 *     round trip through memory (fuse proves it legal);
 *   - i and j are tiled by the block tile, the accumulator is staged per block
 *     (a per-element accumulator such as the f32 sum of a bf16 output needs no copy
 *     in or out: cache sees every read follows the write of the same element), and
 *     every nest that touches the accumulator (initialisation, copy out, epilogue)
 *     is split over the warps the way the products are;
 *   - each operand is staged per K step into shared memory in its own layout: a
 *     tile of R rows by C contiguous elements, whichever of its two dimensions is
 *     k (A[i, k] or A[k, i], B[k, j] or B[j, k], the nn.Linear weight), copied 16
 *     bytes a thread with a mapping computed from R and C (whole rows per warp
 *     instruction where a row is narrower than the warp, else a warp across one
 *     row); gpu-mma then reads each operand with or without transposition.
 *
 * Sizes the tile does not divide are padded (`tile(.., tail=pad)`, `split(k, ..,
 * tail=pad)`, passes/xform_pad.c): every tile keeps its shape, the staging copies
 * fill zeros past the edges and the stores past them are dropped.  Rows whose
 * length is not a multiple of 8 elements cannot be copied 16 bytes at a time
 * (the address would be misaligned): an input operand of a product large enough
 * to pay for one more pass over it is read from a copy with padded rows
 * (`realign`, passes/xform_realign.c); otherwise such rows are copied 8 bytes, or
 * one element, a thread.
 *
 * A template returns false when the nest does not fit it (decided from the nest and
 * the template's constants, never from parameter values). */
#include <string.h>

#include "rules_int.h"

/* ---- reading the contraction ---- */

/* The shared tile of an operand per K step: R rows of C contiguous elements (a
 * batch dimension is fixed in the block, and cache drops it); false when k and the
 * row (column) loop do not each index one dimension of it, or its last dimension is
 * neither. */
static bool operand_tile(int rank, int kdim, int sdim, int s_ext, int k_ext, int *R, int *C)
{
    if (rank < 2 || rank > 6 || kdim < 0 || sdim < 0 || kdim == sdim || (kdim != rank - 1 && sdim != rank - 1))
        return false;
    *R = kdim > sdim ? s_ext : k_ext;
    *C = kdim > sdim ? k_ext : s_ext;
    return true;
}

/* Elements a thread copies at once from rows of rowlen 16-bit elements: 16 bytes
 * where every row starts 16-byte aligned, else 8, else one element. */
static int copy_width(int64_t rowlen)
{
    return rowlen % 8 == 0 ? 8 : rowlen % 4 == 0 ? 4 : 1;
}

/* Whether a tile of R x C 16-bit elements can be copied vw elements a thread by tx
 * threads in x and nw warps (or warpgroups) over its rows. */
static bool stage_fits(int R, int C, int vw, int tx, int nw)
{
    if (C % vw)
        return false;
    int nch = C / vw;
    if (nch >= tx)
        return nch % tx == 0 && R % nw == 0;
    return tx % nch == 0 && R % (tx / nch) == 0 && (R / (tx / nch)) % nw == 0;
}

typedef struct StageNames {
    const char *c, *v, *r, *x, *f, *z, *zr, *y, *u, *cu;
} StageNames;

static const StageNames a_names = {"ac", "av", "ar", "ax", "af", "az", "ara", "ay", "au", "acu"};
static const StageNames b_names = {"bc", "bv", "br", "bx", "bf", "bz", "bra", "by", "bu", "bcu"};
static const StageNames c_names = {"sc", "sv", "sr", "sx", "sf", "sz", "sra", "sy", "su", "scu"};

/* The copy of a staged operand S (R x C, its copy nest S->nest[0]) on a block of
 * tx x wy x wz threads (wz = 0: no thread.z): vw elements (16 bytes at 8) per thread and copy.  Rows narrower
 * than the warp: consecutive lanes take consecutive chunks of tx / (C / 8) rows at
 * a time (collapse makes them one thread.x loop, so a warp reads whole rows);
 * wider: the lanes walk along one row.  The row groups are spread over the warps,
 * the most significant part of the row on thread.z, the next on thread.y (which
 * lets the dependence test prove the warps' rows disjoint), the rest unrolled. */
static void stage_map(Builder *b, SBuf *S, int R, int C, int vw, int tx, int wy, int wz, const StageNames *nm)
{
    SLoop *c0 = S ? S->nest[0][0] : NULL, *c1 = S ? S->nest[0][1] : NULL;
    int nch = C / vw, nw = wy * (wz ? wz : 1), groups;
    SLoop *cc = c1, *cv = NULL, *rows, *tl, *cu = NULL;
    if (vw > 1)
        bld_split_named(b, c1, sv(vw), nm->c, nm->v, &cc, &cv);
    if (nch >= tx) {
        bld_split_named(b, cc, sv(tx), nm->cu, nm->f, &cu, &tl);
        rows = c0;
        groups = R;
    } else {
        int rp = tx / nch;
        SLoop *cr, *cx;
        bld_split_named(b, c0, sv(rp), nm->r, nm->x, &cr, &cx);
        bld_collapse(b, cx, cc, nm->f, &tl);
        rows = cr;
        groups = R / rp;
    }
    SLoop *z = NULL, *zr = rows, *y, *u;
    if (wz)
        bld_split_named(b, rows, sv(groups / wz), nm->z, nm->zr, &z, &zr);
    bld_split_named(b, zr, sv(groups / nw), nm->y, nm->u, &y, &u);
    SLoop *ord[6];
    int no = 0;
    if (z)
        ord[no++] = z;
    ord[no++] = y, ord[no++] = tl, ord[no++] = u;
    if (cu)
        ord[no++] = cu;
    if (cv)
        ord[no++] = cv;
    bld_reorder(b, ord, no);
    if (z)
        bld_bind(b, z, "thread.z");
    bld_bind(b, y, "thread.y");
    bld_bind(b, tl, "thread.x");
    bld_unroll(b, u);
    if (cu)
        bld_unroll(b, cu);
    if (cv)
        bld_vectorize(b, cv);
}

/* The write-back of a staged result tile (R x C; cache made it no copy in, the
 * epilogue writes every element) mapped as the operand copies are, vw elements a
 * thread (one for odd rows): a warp's lanes along rows. */
static void out_map(Builder *b, SBuf *cs, int R, int C, int vw, int tx, int wy, int wz)
{
    SBuf back = *cs;
    back.nnest = 1;
    back.rank[0] = cs->rank[cs->nnest - 1];
    memcpy(back.nest[0], cs->nest[cs->nnest - 1], sizeof back.nest[0]);
    stage_map(b, &back, R, C, vw, tx, wy, wz, &c_names);
}

/* ---- the common part: fuse, tile, stage the accumulator ---- */

typedef struct TcCtx {
    const NestInfo *const *ns; /* the contraction, then its fused consumers */
    int nn;
    const void *shape;         /* TcShape or WgShape */
    int64_t slices[3];         /* split-K: the candidate slice lengths kc (K / S) */
    int nslices;               /* 0: no split-K */
    const IgPlan *ig;          /* an implicit GEMM (ns[0] is then its product as M x N x K) */
    /* several batch loops (attention's scores, b and h): ns are the nests as the
     * template sees them once the first ncol + 1 loops of each nest of orig are
     * collapsed into one (0: none) */
    const NestInfo *const *orig;
    int ncol;
} TcCtx;

enum { MAX_EL = 8 };

typedef struct TcNest {
    SLoop *io, *jo, *ii1, *ji1; /* block tile loops; the contraction's row, column */
    SBuf *cs;                   /* the result tile staged in shared memory, or NULL */
    SLoop *batch, *k;           /* the batch loop (NULL: none), the reduction loop */
    SLoop *ko, *kt;             /* an implicit GEMM's K steps and step (k is then NULL) */
    int nel;                    /* the nests that touch the accumulator elementwise */
    SLoop *er[MAX_EL], *ec[MAX_EL];
} TcNest;

/* How a template of block tile bm x bn x bk meets the nest: the operands' shared
 * tiles (R x C each), the elements a thread copies at once from each, and the
 * loops padded to a multiple of the tile. */
typedef struct TcFit {
    int ra, ca, rb, cb;
    int va, vb;
    bool pad_ij, pad_k;
    bool al_a, al_b; /* the operand is realigned first */
    int64_t la, lb;  /* the operands' row lengths */
} TcFit;

/* Products of at least this many multiply-adds realign an input operand whose rows
 * are not 16-byte aligned.  The copy reads and writes the operand once (8 MB each
 * way for 4096 x 1023 bf16, about 10 us on an H100); one-element copies of its tiles
 * cost the product about half its speed, 0.2 ms at 4095 x 4097 x 1023.  At 2^24
 * (256^3) the product itself takes a few microseconds, about one launch. */
enum { REALIGN_MACS = 1 << 24 };

/* The nest fits a tensor-core template of block tile bm x bn x bk: a product of two
 * 16-bit operands of one dtype over one reduction loop, any layout, with at most one
 * batch loop outside the rows and columns (on the grid's z); extents the tile does
 * not divide are padded. */
static bool tc_fits(const NestInfo *n, int bm, int bn, int bk, TcFit *f)
{
    if (n->nspatial < 2 || n->nspatial > 3 || !n->red || !n->mul || n->quot || n->nloops != n->nspatial + 1 ||
        n->out_t != DT_F32)
        return false;
    if (!n->pa || !n->pb || n->pa_t != n->pb_t || (n->pa_t != DT_F16 && n->pa_t != DT_BF16))
        return false;
    int ia = n->nspatial - 2;
    int64_t M = n->ext[ia], N = n->ext[ia + 1], K = n->ext[ia + 2];
    f->pad_ij = M % bm || N % bn;
    f->pad_k = K % bk;
    /* the row length of each operand: its last dimension, k's or the spatial one's */
    f->la = n->pa_kdim == n->pa_rank - 1 ? K : M;
    f->lb = n->pb_kdim == n->pb_rank - 1 ? K : N;
    f->va = copy_width(f->la);
    f->vb = copy_width(f->lb);
    double macs = 1;
    for (int d = 0; d < n->nloops; d++)
        macs *= (double)n->ext[d];
    f->al_a = f->va < 8 && n->pa_in && macs >= REALIGN_MACS;
    f->al_b = f->vb < 8 && n->pb_in && macs >= REALIGN_MACS;
    if (f->al_a)
        f->va = 8;
    if (f->al_b)
        f->vb = 8;
    return operand_tile(n->pa_rank, n->pa_kdim, n->pa_sdim, bm, bk, &f->ra, &f->ca) &&
           operand_tile(n->pb_rank, n->pb_kdim, n->pb_sdim, bn, bk, &f->rb, &f->cb);
}

/* The realigned copy of an operand with rows of len elements (padded to a multiple
 * of 8), mapped as a copy kernel should be: a block per row (the rows of a batch
 * collapsed into one loop), its threads across the row, each thread taking every
 * tx-th element, unrolled so that its loads (guarded ones read a clamped index:
 * codegen/cuda) are in flight together; a warp reads and writes 64 contiguous
 * bytes an instruction.  (One thread per element, the mapping gpu-map gives an
 * unscheduled nest, keeps one 2-byte load in flight per thread: latency-bound.) */
static SBuf *realign_mapped(Builder *b, SBuf *op, int64_t len)
{
    SBuf *al = bld_realign(b, op, 8);
    if (!al || al->nnest != 1 || al->rank[0] < 2)
        return NULL;
    int r = al->rank[0];
    SLoop *row = al->nest[0][0], *rt, *ru;
    for (int d = 1; d + 1 < r; d++)
        if (!bld_collapse(b, row, al->nest[0][d], NULL, &row))
            return NULL;
    /* threads a row: whole warps (the tuner prunes other blocks; a row shorter
     * than the split runs as many threads as it has elements), a divisor of the
     * row's length where one is, so that no element sits behind the split's tail
     * guard (1024: 256 threads of 4; 4104 has no such divisor: 256 and a guard;
     * 136: 128 and a guard) */
    int64_t len8 = (len + 7) / 8 * 8, tx = len8 < 256 ? (len8 > 32 ? len8 / 32 * 32 : 32) : 256;
    for (int64_t d = tx; d >= 64; d -= 32)
        if (len8 % d == 0) {
            tx = d;
            break;
        }
    bld_split(b, al->nest[0][r - 1], sv(tx), &ru, &rt);
    BLD_REORDER(b, rt, ru);
    bld_bind(b, row, "block.x");
    bld_bind(b, rt, "thread.x");
    bld_unroll(b, ru);
    return al;
}

/* The operands as the staging copies read them: realigned where the fit says so.
 * Called after the padded splits, whose proof reads the operands' own extents. */
static bool tc_operands(Builder *b, const NestInfo *n, const TcFit *f, SBuf **pa, SBuf **pb)
{
    *pa = bld_buf(b, n->pa);
    *pb = bld_buf(b, n->pb);
    if (f->al_a && !(*pa = realign_mapped(b, *pa, f->la)))
        return false;
    if (f->al_b && !(*pb = realign_mapped(b, *pb, f->lb)))
        return false;
    return true;
}

/* Whether the result is staged per block tile (tc_tile), and the elements a thread
 * writes back (0: not staged).  The last fused consumer writes a 16-bit output of
 * the kernel, and
 *   - its rows have an odd length, which the fragments would store one 2-byte
 *     element at a time, 8 rows apart in a warp's instruction.  Written back from
 *     shared memory, a warp stores whole rows: on an H100, 4095 x 4097 x 1023 on
 *     wgmma 128 x 128 took 0.171 ms stored from the fragments and 0.119 through
 *     shared memory;
 *   - or the reduction is short (K <= 256: a batch of 512 x 512 x 128 products),
 *     so that writing the result is a large share of each tile's time, and 16
 *     bytes a thread in whole rows beat 4-byte pairs 8 rows apart.
 * (Even rows after a long reduction store pairs, 4 bytes a lane; staging them
 * measured no faster at 4096^3, and costs 128 x 256 tiles a pipeline stage.)  Not
 * with split-K, whose tiles write f32 partial planes. */
enum { SHORT_K = 256 };

static int out_staged(const TcCtx *c)
{
    const NestInfo *w = c->ns[c->nn - 1], *n = c->ns[0];
    if (c->nslices || !w->wr || !w->wr_out || (w->wr_t != DT_BF16 && w->wr_t != DT_F16) || w->wr_row <= 0)
        return 0;
    if (w->wr_row % 2)
        return 1;
    return n->ext[n->nloops - 1] <= SHORT_K ? copy_width(w->wr_row) : 0;
}

/* Split-K fits a product with no batch loop (the slices take block.z) whose
 * reduction every candidate slice length cuts into whole K steps of bk, rows few
 * enough for the combination's block.y. */
static bool sk_fits(const TcCtx *c, int bk)
{
    const NestInfo *n = c->ns[0];
    if (!c->nslices)
        return true;
    if (n->nspatial != 2 || n->ext[0] > 65535 || (c->ig && c->ig->C % bk))
        return false;
    for (int i = 0; i < c->nslices; i++)
        if (c->slices[i] % bk || n->ext[2] % c->slices[i])
            return false;
    return true;
}

static const char *const el_names[MAX_EL][4] = {
    {"cz", "cr", "cy", "cc"},     {"iz", "ir", "iy", "ic"},     {"oz", "or", "oy", "oc"},
    {"e1z", "e1r", "e1y", "e1c"}, {"e2z", "e2r", "e2y", "e2c"}, {"e3z", "e3r", "e3y", "e3c"},
    {"e4z", "e4r", "e4y", "e4c"}, {"e5z", "e5r", "e5y", "e5c"}};

/* Fuses the consumers ns[1..nn) into the product's nest, loop by loop. */
static void tc_fuse_consumers(Builder *b, const TcCtx *c)
{
    const NestInfo *n = c->ns[0];
    for (int e = 1; e < c->nn; e++)
        for (int d = 0; d < n->nspatial; d++)
            bld_fuse(b, bld_loop(b, n->loop[d]), bld_loop(b, c->ns[e]->loop[d]));
}

/* Stages an f32 sum per iteration of `at` in registers: with cache, or with gather
 * for an implicit GEMM whose product accumulates into its f32 result (scattered:
 * that result, split-K's partial planes of it; the temporary of a 16-bit result
 * follows the collapse instead, a matrix over pixels and filters). */
static SBuf *stage_sum(Builder *b, SBuf *sum, SLoop *at, const char *name, bool squeeze, bool scattered)
{
    if (scattered)
        return bld_gather(b, sum, at, NULL, name);
    return bld_cache_squeezed(b, sum, at, NULL, name, squeeze);
}

/* Tiles the product's rows i and columns j by bm x bn, stages its accumulator out
 * per block (squeeze: the dimensions a batch loop fixes left out; scattered: an
 * implicit GEMM's f32 result, gathered, stage_sum) and the result res through shared
 * memory (gather: an implicit GEMM's, whose rows are scattered pixels), and
 * distributes the tile loops: one nest for the initialisation, one for the
 * products, one per consumer statement. */
static void tc_tile(Builder *b, SLoop *i, SLoop *j, SBuf *out, SBuf *res, bool squeeze, bool gather, bool scattered,
                    int bm, int bn, bool pad, TcNest *t)
{
    SLoop *tl[4];
    (pad ? bld_tile_padded : bld_tile)(b, i, j, sv(bm), sv(bn), (const char *const[]){"io", "jo", "ii", "ji"}, tl);
    t->io = tl[0], t->jo = tl[1];
    SBuf *acc = stage_sum(b, out, t->jo, "acc", squeeze, scattered);
    /* the result tile through shared memory (out_staged): the epilogue writes it from
     * the fragments, a copy nest the template maps writes it back in rows */
    if (res) {
        /* (an implicit GEMM's rows are scattered pixels: the tile of their writes is
         * gathered, not a box) */
        t->cs = gather ? bld_gather(b, res, t->jo, "shared", "Cs") : bld_cache_squeezed(b, res, t->jo, "shared", "Cs", squeeze);
        bld_padding(b, t->cs, sv(8));
    }
    SLoop *jd[MAX_EL], *id[MAX_EL];
    int nj = bld_distribute_all(b, tl[3], jd, MAX_EL);
    int ni = bld_distribute_all(b, tl[2], id, MAX_EL);
    t->ii1 = ni > 0 ? id[0] : NULL;
    t->ji1 = nj > 0 ? jd[0] : NULL;
    /* the copy in (an output the kernel also reads: gpu-dead-fill drops it when the
     * initialisation overwrites it), the initialisation, the copy out */
    if (acc && acc->nnest == 2)
        t->er[t->nel] = acc->nest[0][0], t->ec[t->nel++] = acc->nest[0][1];
    t->er[t->nel] = tl[2], t->ec[t->nel++] = tl[3];
    if (acc && acc->nnest == 2)
        t->er[t->nel] = acc->nest[1][0], t->ec[t->nel++] = acc->nest[1][1];
    for (int e = 1; e < ni && e < nj && t->nel < MAX_EL; e++)
        t->er[t->nel] = id[e], t->ec[t->nel++] = jd[e];
}

static bool sk_begin(Builder *b, const TcCtx *c, int bm, int bn, int bk, bool pad, TcNest *t);

/* Fuses the consumers into the product's nest and tiles it (tc_tile); with split-K
 * (c->nslices) the reduction is first cut into slices whose partial products get
 * the tiles (sk_begin); an implicit GEMM is first made a product of K steps of bk
 * (rules_igemm_prelude). */
static bool tc_begin(Builder *b, const TcCtx *c, int bm, int bn, int bk, bool pad, bool stage_out, TcNest *t)
{
    const NestInfo *n = c->ns[0];
    memset(t, 0, sizeof *t);
    if (c->nslices)
        return sk_begin(b, c, bm, bn, bk, pad, t);
    if (c->ig) {
        IgLoops g;
        if (!rules_igemm_prelude(b, c->ig, bk, &g))
            return false;
        t->ko = g.ko, t->kt = g.kt;
        tc_tile(b, g.m, g.j, bld_buf(b, n->out), stage_out ? bld_buf(b, n->wr) : NULL, false, true,
                c->ig->sum_is_result, bm, bn, pad, t);
        return true;
    }
    for (int e = 0; e < c->nn && c->ncol; e++) {
        SLoop *l = bld_loop(b, c->orig[e]->loop[0]);
        for (int d = 1; d <= c->ncol && l; d++)
            if (!bld_collapse(b, l, bld_loop(b, c->orig[e]->loop[d]), NULL, &l))
                l = NULL;
        if (!l || strcmp(l->name, c->ns[e]->loop[0]))
            return false; /* the name the view expected */
    }
    int ia = n->nspatial - 2;
    tc_fuse_consumers(b, c);
    t->batch = ia ? bld_loop(b, n->loop[0]) : NULL;
    t->k = bld_loop(b, n->loop[n->nloops - 1]);
    SBuf *res = stage_out ? bld_buf(b, c->ns[c->nn - 1]->wr) : NULL;
    tc_tile(b, bld_loop(b, n->loop[ia]), bld_loop(b, n->loop[ia + 1]), bld_buf(b, n->out), res, ia > 0, false, false,
            bm, bn, pad, t);
    return true;
}

/* ---- split-K ----
 *
 * A product with too few output tiles to fill the GPU and a long reduction (1024 x
 * 1024 x 16384: 64 tiles of 128 x 128 on 132 SMs) cuts the reduction loop into S
 * slices of kc = K / S and runs each slice on its own blocks (block.z):
 *
 *   split(k, kc, kz, kr)                      k = kz * kc + kr
 *   rfactor(kz, expand=1)                     P[kz, i, j] += A·B over kr; after it
 *                                             C[i, j] += P[kz, i, j] over the slices
 *   fuse(kz_init, kz)                         each slice starts its own plane at 0
 *   distribute(j) distribute(i)               the partial products one nest
 *   reorder(kz_init, i1, j1)                  the slice outermost: a batch loop
 *   fuse(i, i2) fuse(j, j2) ...               the initialisation, the combination
 *                                             and the consumers one nest again
 *
 * The partial nest is then a batched product over the slices with an f32 output,
 * which the tensor-core steps tile as any batched product (the slice on block.z,
 * the plane staged squeezed); the combination nest, C = sum of S planes followed by
 * the consumers (the dtype conversion, a bias, an activation), runs one thread per
 * element, 128 a block along the columns, its sum in a register.  Every step is
 * an ordinary transformation with its legality check: rfactor's reassociation of
 * the sum is the one the language allows for every reduction. */

/* The first of a name's spellings (name, name1, name2, name3) that no loop
 * variable or buffer of the kernel has yet: a kernel whose own loops are called kz
 * or zx keeps split-K.  The same kernel gives the same answer when the rule is
 * checked and when it is applied. */
static const char *sk_fresh(Builder *b, const char *const cands[4])
{
    for (int i = 0; i < 4; i++)
        if (bld_name_free(b, cands[i]))
            return cands[i];
    return cands[3];
}

static bool sk_begin(Builder *b, const TcCtx *c, int bm, int bn, int bk, bool pad, TcNest *t)
{
    static const char *const nkz[4] = {"kz", "kz1", "kz2", "kz3"}, *const nkr[4] = {"kr", "kr1", "kr2", "kr3"},
                             *const nzx[4] = {"zx", "zx1", "zx2", "zx3"}, *const nzt[4] = {"zt", "zt1", "zt2", "zt3"},
                             *const nzs[4] = {"zs", "zs1", "zs2", "zs3"};
    const NestInfo *n = c->ns[0];
    SLoop *i, *j, *k, *kz, *kr, *zi, *zc;
    SVal kc;
    if (c->ig) {
        /* an implicit GEMM's slices are whole K steps of its prelude's loop ko */
        IgLoops g;
        int64_t steps[3];
        for (int q = 0; q < c->nslices; q++)
            steps[q] = c->slices[q] / bk;
        kc = bld_param(b, "kc", steps, c->nslices);
        if (!rules_igemm_prelude(b, c->ig, bk, &g))
            return false;
        i = g.m, j = g.j, k = g.ko, t->kt = g.kt;
    } else {
        kc = bld_param(b, "kc", c->slices, c->nslices);
        tc_fuse_consumers(b, c);
        i = bld_loop(b, n->loop[0]), j = bld_loop(b, n->loop[1]), k = bld_loop(b, n->loop[2]);
    }
    bld_split_named(b, k, kc, sk_fresh(b, nkz), sk_fresh(b, nkr), &kz, &kr);
    SBuf *P = bld_rfactor_expanded(b, kz, NULL, &zi, &zc);
    bld_fuse(b, zi, kz);
    /* j's body: the initialisation, the slices, the combination, the consumers */
    SLoop *jd[MAX_EL + 2], *id[MAX_EL + 2];
    int nj = bld_distribute_all(b, j, jd, MAX_EL + 2);
    int ni = bld_distribute_all(b, i, id, MAX_EL + 2);
    SLoop *pi = ni > 0 ? id[0] : NULL, *pj = nj > 0 ? jd[0] : NULL;
    BLD_REORDER(b, zi, pi, pj);
    for (int e = 1; e < ni && e < nj; e++) {
        bld_fuse(b, i, id[e]);
        bld_fuse(b, j, jd[e]);
    }
    /* the combination: one thread per element, the running sum in a register */
    SLoop *zx, *zt;
    bld_split_named(b, j, sv(128), sk_fresh(b, nzx), sk_fresh(b, nzt), &zx, &zt);
    bld_bind(b, i, "block.y");
    bld_bind(b, zx, "block.x");
    bld_bind(b, zt, "thread.x");
    stage_sum(b, bld_buf(b, n->out), zt, sk_fresh(b, nzs), false, c->ig && c->ig->sum_is_result);
    t->batch = zi;
    if (c->ig)
        t->ko = kr;
    else
        t->k = kr;
    tc_tile(b, pi, pj, P, NULL, true, false, c->ig && c->ig->sum_is_result, bm, bn, pad, t);
    return true;
}

/* The pipeline depths of a template on a reduction of K: a ring deeper than the
 * reduction has K steps only takes shared memory (a batch of 512 x 512 x 128
 * products has two K steps, and five stages of 128 x 128 left room for one block
 * an SM); such candidates become the number of steps, but at least 2, and 3 with
 * a group of products in flight (whose stage the next refill must not reach). */
static int stage_set(const int64_t *cand, int n, int64_t K, int bk, int inflight, int64_t out[4])
{
    int64_t steps = (K + bk - 1) / bk, least = inflight ? 3 : 2, m = 0;
    if (steps < least)
        steps = least;
    for (int i = 0; i < n; i++) {
        int64_t v = cand[i] < steps ? cand[i] : steps;
        bool dup = false;
        for (int j = 0; j < m; j++)
            dup |= out[j] == v;
        if (!dup)
            out[m++] = v;
    }
    return (int)m;
}

/* The K steps of bk and the step: the reduction split (padded where bk does not
 * divide it), or what an implicit GEMM's prelude made. */
static void tc_ksteps(Builder *b, const TcNest *t, const TcFit *f, int bk, SLoop **ko, SLoop **kt)
{
    if (t->ko) {
        *ko = t->ko, *kt = t->kt;
        return;
    }
    (f->pad_k ? bld_split_padded : bld_split_named)(b, t->k, sv(bk), "ko", "kt", ko, kt);
}

/* The operands staged per K step in shared memory: As and Bs.  An implicit GEMM's
 * are gathered (A's rows are scattered pixels, B's tile lies at one tap whose
 * indices the K step gives by division), which is done while the block tile's
 * rows and columns and the K step are still one loop each, so that the staged
 * tiles are matrices (implicit_stage). */
static bool tc_stage(Builder *b, const TcCtx *c, const TcFit *f, const TcNest *t, SLoop *ko, SBuf **As, SBuf **Bs)
{
    const NestInfo *n = c->ns[0];
    if (c->ig) {
        *As = bld_gather(b, bld_buf(b, n->pa), ko, "shared", "As");
        *Bs = bld_gather(b, bld_buf(b, n->pb), ko, "shared", "Bs");
        return *As && *Bs;
    }
    SBuf *pa, *pb;
    if (!tc_operands(b, n, f, &pa, &pb))
        return false;
    *As = bld_cache_squeezed(b, pa, ko, "shared", "As", t->batch != NULL);
    *Bs = bld_cache_squeezed(b, pb, ko, "shared", "Bs", t->batch != NULL);
    return *As && *Bs;
}

/* An implicit GEMM's operands, staged with the K steps outermost in the tile. */
static bool implicit_stage(Builder *b, const TcCtx *c, const TcFit *f, const TcNest *t, int bk, SLoop **ko,
                           SLoop **kt, SBuf **As, SBuf **Bs)
{
    tc_ksteps(b, t, f, bk, ko, kt);
    return BLD_REORDER(b, *ko, t->ii1, t->ji1) && tc_stage(b, c, f, t, *ko, As, Bs);
}

/* ---- mma.sync (sm_80+) ---- */

/* One template per block tile BM x BN x BK and warp tile WM x WN, the pipeline
 * depth its parameter: mma.sync m16n8k16 products in the accumulator fragment
 * layout, operands staged through shared memory (rows padded by 8 elements
 * against ldmatrix bank conflicts) by 128-bit cp.async. */
typedef struct TcShape {
    int bm, bn, bk, wm, wn;
    int64_t stages[4]; /* the candidate set of the pipeline depth */
    int nstages;
} TcShape;

static const TcShape tc_shapes[] = {
    {128, 128, 32, 64, 64, {4, 3, 5}, 3}, /* stdlib gemm's `tc`: 4 warps, 2 blocks per SM */
    {128, 128, 32, 64, 32, {3, 4}, 2},    /* 8 warps */
    {128, 256, 32, 64, 64, {4, 3}, 2},    /* 8 warps, wider */
    {128, 128, 64, 64, 64, {2, 3}, 2},    /* K step 64 */
    {64, 128, 32, 64, 64, {4, 3}, 2},     /* smaller grids: 2 warps */
    {64, 64, 32, 32, 32, {3, 4}, 2},      /* small problems: 4 warps of 32 x 32 */
    {32, 64, 64, 16, 32, {4, 6}, 2},      /* thin products (M or N of 32..64): more blocks */
    {16, 64, 64, 16, 16, {4, 6}, 2},      /* M = 16: 4 warps of 16 x 16, B streamed */
};

static bool gpu_tc_b(Builder *b, const void *vctx)
{
    const TcCtx *c = vctx;
    const NestInfo *n = c->ns[0];
    const TcShape *s = c->shape;
    TcFit f;
    if (!tc_fits(n, s->bm, s->bn, s->bk, &f) || !sk_fits(c, s->bk))
        return false;
    int wz = s->bm / s->wm, wy = s->bn / s->wn, nw = wz * wy;
    if (s->wm % 16 || s->wn % 8 || s->bk % 16 || !stage_fits(f.ra, f.ca, f.va, 32, nw) ||
        !stage_fits(f.rb, f.cb, f.vb, 32, nw))
        return false;
    int vo = out_staged(c);
    bool so = vo && stage_fits(s->bm, s->bn, vo, 32, nw);
    int64_t stv[4];
    int nst = stage_set(s->stages, s->nstages, n->ext[n->nloops - 1], s->bk, 0, stv);
    SVal st = bld_param(b, "st", stv, nst);
    TcNest t;
    if (!tc_begin(b, c, s->bm, s->bn, s->bk, f.pad_ij, so, &t))
        return false;
    for (int e = 0; e < t.nel; e++) {
        const char *const *nm = el_names[e];
        SLoop *z, *r, *y, *cc;
        bld_split_named(b, t.er[e], sv(s->wm), nm[0], nm[1], &z, &r);
        bld_split_named(b, t.ec[e], sv(s->wn), nm[2], nm[3], &y, &cc);
        BLD_REORDER(b, z, y, r, cc);
        bld_bind(b, z, "thread.z");
        bld_bind(b, y, "thread.y");
    }
    SLoop *wzl, *wml, *mi, *mm, *wyl, *wnl, *nj, *nn, *ko = NULL, *kt = NULL, *ks, *kk;
    SBuf *As = NULL, *Bs = NULL;
    if (c->ig && !implicit_stage(b, c, &f, &t, s->bk, &ko, &kt, &As, &Bs))
        return false;
    bld_split_named(b, t.ii1, sv(s->wm), "wz", "wm", &wzl, &wml);
    bld_split_named(b, wml, sv(16), "mi", "mm", &mi, &mm);
    bld_split_named(b, t.ji1, sv(s->wn), "wy", "wn", &wyl, &wnl);
    bld_split_named(b, wnl, sv(8), "nj", "nn", &nj, &nn);
    if (!c->ig)
        tc_ksteps(b, &t, &f, s->bk, &ko, &kt);
    bld_split_named(b, kt, sv(16), "ks", "kk", &ks, &kk);
    /* (an implicit GEMM's K steps are already outermost, its copies ahead) */
    if (c->ig)
        BLD_REORDER(b, wzl, wyl, ks, mi, nj, mm, nn);
    else
        BLD_REORDER(b, ko, wzl, wyl, ks, mi, nj, mm, nn);
    if (!c->ig && !tc_stage(b, c, &f, &t, ko, &As, &Bs))
        return false;
    bld_padding(b, As, sv(8));
    bld_padding(b, Bs, sv(8));
    stage_map(b, As, f.ra, f.ca, f.va, 32, wy, wz, &a_names);
    stage_map(b, Bs, f.rb, f.cb, f.vb, 32, wy, wz, &b_names);
    if (t.cs)
        out_map(b, t.cs, s->bm, s->bn, vo, 32, wy, wz);
    bld_mma(b, mm, nn, kk);
    if (t.batch)
        bld_bind(b, t.batch, "block.z");
    bld_bind(b, t.io, "block.y");
    bld_bind(b, t.jo, "block.x");
    bld_bind(b, wzl, "thread.z");
    bld_bind(b, wyl, "thread.y");
    bld_unroll(b, mi);
    bld_unroll(b, nj);
    bld_pipeline(b, ko, st, false);
    return true;
}

/* ---- wgmma (sm_90a) ---- */

/* BM / 64 warpgroups (thread.x 128, thread.y BM / 64) share a BM x BN block tile,
 * each a 64 x BN accumulator fed by one wgmma m64nBNk16 per 16 of the 64-deep K
 * step, both operands in 128-byte swizzled shared memory filled by bulk tensor
 * copies (or 16-byte cp.async) in a ring of `st` stages; inflight=1 lets one group
 * of products run on while the next stage's are issued.  One warpgroup (BM 64)
 * serves products of 64 rows or fewer (16 x 4096 x 4096: the box's rows past the
 * product are zero-filled, and the block streams B) and short reductions, whose
 * small tiles and shallow rings leave room for several blocks an SM.  (A 128 x 64
 * tile, split-K in 2 with B read once on a 128-row product, measured slower on an
 * H200: 128 x 4096 x 4096 0.0303 ms untuned against 0.0254 for 128 x 128 in 4
 * slices, and never the tuner's winner; not offered.) */
typedef struct WgShape {
    int bm, bn;
    int64_t stages[2]; /* the candidate set of the pipeline depth */
    int inflight;
    bool narrow;       /* offered only for products of at most bn columns, and implicit GEMMs */
} WgShape;

static const WgShape wg_shapes[] = {
    {128, 256, {4, 3}, 1, false}, /* stdlib gemm's `wg` */
    {128, 128, {3, 4}, 0, false}, /* two blocks per SM at 3 stages */
    {128, 128, {5, 4}, 1, false},
    {64, 128, {4, 6}, 1, false},  /* thin products, short reductions */
    /* 64 columns (a convolution of 64 filters, ResNet's first stage: a 128-wide
     * tile would compute as many columns past the product as in it); offered to
     * every implicit GEMM, whose grids of 128 x 128 tiles often end in a part-empty
     * wave (28 x 28 x 128 at batch 32: 196 tiles on 132 SMs) */
    {128, 64, {4, 6}, 1, true},
};

static bool gpu_wg_b(Builder *b, const void *vctx)
{
    const TcCtx *c = vctx;
    const NestInfo *n = c->ns[0];
    const WgShape *s = c->shape;
    int wgs = s->bm / 64;
    TcFit f;
    if (!tc_fits(n, s->bm, s->bn, 64, &f) || !sk_fits(c, 64) || !stage_fits(f.ra, f.ca, f.va, 128, wgs) ||
        !stage_fits(f.rb, f.cb, f.vb, 128, wgs))
        return false;
    /* a result staged in shared memory (out_staged), for which 128 x 256 tiles and
     * their four stages leave no room (the 128 x 128 templates take it) */
    int vo = out_staged(c);
    bool so = vo && stage_fits(s->bm, s->bn, vo, 128, wgs);
    if (vo && (s->bn > 128 || !so))
        return false;
    int64_t stv[4];
    int nst = stage_set(s->stages, 2, n->ext[n->nloops - 1], 64, s->inflight, stv);
    SVal st = bld_param(b, "st", stv, nst);
    TcNest t;
    if (!tc_begin(b, c, s->bm, s->bn, 64, f.pad_ij, so, &t))
        return false;
    for (int e = 0; e < t.nel; e++) {
        const char *const *nm = el_names[e];
        SLoop *y, *r;
        bld_split_named(b, t.er[e], sv(64), nm[2], nm[1], &y, &r);
        bld_bind(b, y, "thread.y");
    }
    SLoop *wy, *wm, *ko = NULL, *kt = NULL, *ks, *kk;
    SBuf *As = NULL, *Bs = NULL;
    if (c->ig && !implicit_stage(b, c, &f, &t, 64, &ko, &kt, &As, &Bs))
        return false;
    bld_split_named(b, t.ii1, sv(64), "wy", "wm", &wy, &wm);
    if (!c->ig)
        tc_ksteps(b, &t, &f, 64, &ko, &kt);
    bld_split_named(b, kt, sv(16), "ks", "kk", &ks, &kk);
    if (c->ig)
        BLD_REORDER(b, wy, ks, wm, t.ji1, kk);
    else
        BLD_REORDER(b, ko, wy, ks, wm, t.ji1, kk);
    if (!c->ig && !tc_stage(b, c, &f, &t, ko, &As, &Bs))
        return false;
    stage_map(b, As, f.ra, f.ca, f.va, 128, wgs, 0, &a_names);
    stage_map(b, Bs, f.rb, f.cb, f.vb, 128, wgs, 0, &b_names);
    if (t.cs)
        out_map(b, t.cs, s->bm, s->bn, vo, 128, wgs, 0);
    bld_wgmma(b, wm, t.ji1, kk);
    if (t.batch)
        bld_bind(b, t.batch, "block.z");
    bld_bind(b, t.io, "block.y");
    bld_bind(b, t.jo, "block.x");
    bld_bind(b, wy, "thread.y");
    bld_unroll(b, ks);
    bld_pipeline(b, ko, st, s->inflight);
    return true;
}

/* ---- offering them ---- */

/* Blocks a block tile of bm x bn makes on the nest (the batch included), tiles
 * past the edge included; *useful the share of their elements inside it. */
static int64_t grid_blocks(const NestInfo *n, int bm, int bn, double *useful)
{
    int ia = n->nspatial - 2;
    *useful = 0;
    if (ia < 0 || ia > 1 || n->nloops < n->nspatial)
        return 0; /* no template fits (tc_fits): no grid */
    int64_t gm = (n->ext[ia] + bm - 1) / bm, gn = (n->ext[ia + 1] + bn - 1) / bn;
    *useful = (double)n->ext[ia] * (double)n->ext[ia + 1] / ((double)gm * bm * (double)gn * bn);
    return ia ? gm * gn * n->ext[0] : gm * gn;
}

/* A grid this small leaves SMs idle (an H100 has 132, an A100 108); tiles this
 * much of which lies past the edges waste the work of that share. */
enum { FEW_BLOCKS = 128 };
#define MIN_USEFUL 0.75

/* Tensor-core flops one SM sustains per byte the whole GPU moves to and from
 * memory: H100 SXM about 5.3 TFLOP/s an SM (700 of bf16 over 132) against 3 TB/s,
 * A100 about 2.3 against 1.6.  Prices split-K's partial planes in the time of
 * products. */
#define SK_FLOP_PER_BYTE 1.6

/* The time split-K in S slices takes, in flops of one SM: the SM with the most
 * blocks (S x tiles spread over the SMs) does that many tiles of bm x bn x K / S
 * products, and the S partial f32 planes of M x N are written once and read once. */
static double sk_cost(const NestInfo *n, int64_t tiles, int bm, int bn, int S, int sms)
{
    int64_t per_sm = (tiles * S + sms - 1) / sms;
    return (double)per_sm * bm * bn * 2.0 * (double)(n->ext[2] / S) +
           8.0 * S * (double)n->ext[0] * (double)n->ext[1] * SK_FLOP_PER_BYTE;
}

/* Split-K for a product of `tiles` output tiles of bm x bn (K step bk): none (0)
 * unless the tiles are fewer than the SMs and the product has no batch loop.  Else
 * up to three slice counts S (2 to 64, each slice a whole number of at least 4 K
 * steps), cheapest first by sk_cost and each at least 10% cheaper than no split,
 * as slice lengths K / S in out; *cost the first one's.  (1024 x 1024 x 16384 on
 * 128 x 128 tiles, 132 SMs: S = 2, 128 blocks, then 4 and 8.) */
static int sk_slices(const NestInfo *n, int64_t tiles, int bm, int bn, int bk, const Target *tg, int64_t out[3],
                     double *cost)
{
    int sms = tg->sms > 0 ? tg->sms : FEW_BLOCKS;
    if (n->nspatial != 2 || n->nloops != 3 || tiles <= 0 || tiles >= sms)
        return 0;
    int64_t K = n->ext[2];
    double none = sk_cost(n, tiles, bm, bn, 1, sms) - 8.0 * (double)n->ext[0] * (double)n->ext[1] * SK_FLOP_PER_BYTE;
    int best[3] = {0, 0, 0};
    double bc[3] = {0, 0, 0};
    for (int S = 2; S <= 64; S++) {
        if (K % ((int64_t)S * bk) || K / S < 4 * bk)
            continue;
        double c = sk_cost(n, tiles, bm, bn, S, sms);
        if (c > 0.9 * none)
            continue;
        for (int i = 0; i < 3; i++)
            if (!best[i] || c < bc[i]) {
                for (int j = 2; j > i; j--)
                    best[j] = best[j - 1], bc[j] = bc[j - 1];
                best[i] = S, bc[i] = c;
                break;
            }
    }
    int m = 0;
    for (int i = 0; i < 3 && best[i]; i++)
        out[m++] = K / best[i];
    *cost = bc[0];
    return m;
}

typedef struct TcOffer {
    bool wg;
    const void *shape;
    int64_t blocks;
    double useful;
    int64_t slices[3]; /* split-K's slice lengths, the first the default */
    int nslices;
    double cost;       /* split-K: sk_cost of the first */
} TcOffer;

/* Whether the template fills the GPU with tiles mostly inside the product. */
static bool fills(const TcOffer *o)
{
    return o->blocks >= FEW_BLOCKS && o->useful >= MIN_USEFUL;
}

/* Stable: the full grids keep their table order, the small ones follow, largest
 * useful grid first (and of two as large, the one with less past the edges). */
static void sort_family(TcOffer *o, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0; j--) {
            bool fa = fills(&o[j - 1]), fb = fills(&o[j]);
            double ga = o[j - 1].blocks * o[j - 1].useful, gb = o[j].blocks * o[j].useful;
            bool swap = !fa && (fb || gb > ga || (gb == ga && o[j].useful > o[j - 1].useful));
            if (!swap)
                break;
            TcOffer t = o[j - 1];
            o[j - 1] = o[j];
            o[j] = t;
        }
}

/* A block tile of at least 128 x 128 (large), and one that spans a thin side of
 * a product with no batch loop (every row or every column in one tile: it reads
 * nothing twice). */
static bool tile_large(int bm, int bn)
{
    return bm * bn >= 128 * 128;
}

static bool tile_spans(const NestInfo *n, int bm, int bn)
{
    return n->nspatial == 2 && (bm >= n->ext[0] || bn >= n->ext[1]);
}

/* Adds a family's offers to o, sorted (sort_family), and with them, for the
 * shapes of 128 x 128 or larger tiles whose grid has fewer tiles than the SMs
 * (sk_slices), the shape with split-K (splitk), cheapest first: ahead of the family's
 * shapes when none of its large tiles fills the GPU, else right after those that
 * fill it (the tuner still measures split-K).  Smaller tiles that fill the GPU
 * (mma.sync 64 x 128 on 1024 x 1024) do not count: on a long reduction they read
 * each operand twice as often as a 128 x 128 tile does.  A smaller tile that spans
 * a thin side of the product (16 x 64 on 16 x 4096 x 4096: one tile of rows, 64
 * blocks) reads nothing twice, and gets split-K too; with thin_only, only those
 * smaller ones. */
static int add_family(TcOffer *o, int n, bool wg, bool splitk, bool thin_only, bool narrow, const Target *tg,
                      const NestInfo *ns0)
{
    enum { NWG = sizeof wg_shapes / sizeof wg_shapes[0], NTC = sizeof tc_shapes / sizeof tc_shapes[0] };
    int nsh = wg ? NWG : NTC, first = n;
    bool any_fills = false;
    for (int i = 0; i < nsh; i++) {
        int bm = wg ? wg_shapes[i].bm : tc_shapes[i].bm, bn = wg ? wg_shapes[i].bn : tc_shapes[i].bn;
        if (wg && wg_shapes[i].narrow && !narrow && ns0->ext[ns0->nspatial - 1] > bn)
            continue;
        o[n] = (TcOffer){wg, wg ? (const void *)&wg_shapes[i] : (const void *)&tc_shapes[i], 0, 0, {0}, 0, 0};
        o[n].blocks = grid_blocks(ns0, bm, bn, &o[n].useful);
        any_fills |= tile_large(bm, bn) && fills(&o[n]);
        n++;
    }
    TcOffer sk[NWG + NTC];
    int nsk = 0;
    for (int i = first; splitk && i < n; i++) {
        int bm = wg ? ((const WgShape *)o[i].shape)->bm : ((const TcShape *)o[i].shape)->bm;
        int bn = wg ? ((const WgShape *)o[i].shape)->bn : ((const TcShape *)o[i].shape)->bn;
        int bk = wg ? 64 : ((const TcShape *)o[i].shape)->bk;
        bool spans = tile_spans(ns0, bm, bn), large = tile_large(bm, bn);
        if (thin_only ? large || !spans : !large && !spans)
            continue;
        /* a tile past a thin side wastes products, not memory traffic (the rows
         * past the edge are zero-filled, not read): split-K still pays there */
        if (o[i].useful < MIN_USEFUL && !spans)
            continue;
        TcOffer x = o[i];
        x.nslices = sk_slices(ns0, o[i].blocks, bm, bn, bk, tg, x.slices, &x.cost);
        if (!x.nslices)
            continue;
        x.blocks = o[i].blocks * (ns0->ext[2] / x.slices[0]);
        /* cheapest first (stable: the table's order among equals) */
        int at = nsk;
        while (at > 0 && sk[at - 1].cost > x.cost) {
            sk[at] = sk[at - 1];
            at--;
        }
        sk[at] = x;
        nsk++;
    }
    /* Where the large tiles take split-K (a long reduction on few tiles), the
     * one-warpgroup wgmma tiles that span no thin side are left out: they fill the
     * GPU only by being small, and read each operand twice as often as 128 x 128
     * (on an H100, 1024 x 1024 x 16384 tuned to 64 x 128 at 0.078 ms, against
     * 0.064 with split-K in 4 slices in an earlier tune). */
    if (wg && nsk) {
        int m = first;
        for (int i = first; i < n; i++) {
            const WgShape *w = o[i].shape;
            if (tile_large(w->bm, w->bn) || tile_spans(ns0, w->bm, w->bn))
                o[m++] = o[i];
        }
        n = m;
    }
    sort_family(o + first, n - first);
    if (!nsk)
        return n;
    int at = first;
    while (any_fills && at < n && fills(&o[at]))
        at++;
    memmove(o + at + nsk, o + at, sizeof o[0] * (size_t)(n - at));
    memcpy(o + at, sk, sizeof sk[0] * (size_t)nsk);
    return n + nsk;
}

/* Offered in their table order, wgmma first where the target has it, except that
 * within each family tiles whose grid would leave SMs idle (thin, batched and
 * K-large products), or that would lie more than a quarter past the edges of the
 * product, go after those that fill the GPU, largest useful grid first: the
 * first template is the default schedule and the tuner's first measurement.  (A
 * small wgmma grid still beats a full mma.sync one: putting mma 64x64 ahead of
 * wgmma 128x256 took 128x4096x4096 from 0.39 to 0.32 of cuBLASLt on an H100.)
 * Products whose large tiles leave SMs idle and whose reduction is long get
 * those tiles with split-K first (add_family). */
static void offer_all(const TuneInput *in, const NestInfo *const *ns, int nn, const IgPlan *ig,
                      const NestInfo *const *orig, int ncol, const Target *target, Arena *a, TuneSpace *sp)
{
    enum { NWG = sizeof wg_shapes / sizeof wg_shapes[0], NTC = sizeof tc_shapes / sizeof tc_shapes[0] };
    TcOffer o[2 * (NWG + NTC)];
    int n = 0;
    if (target->wgmma)
        n = add_family(o, n, true, true, false, ig != NULL, target, ns[0]);
    /* split-K of large tiles in one family only (the space holds 12 templates);
     * mma.sync's thin tiles, which wgmma's 64-row steps do not have, in both */
    n = add_family(o, n, false, true, target->wgmma, false, target, ns[0]);
    const char *kind = ig ? ", implicit GEMM" : "";
    for (int i = 0; i < n; i++) {
        TcCtx *x = arena_alloc(a, sizeof *x);
        *x = (TcCtx){ns, nn, o[i].shape, {0}, o[i].nslices, ig, orig, ncol};
        memcpy(x->slices, o[i].slices, sizeof x->slices);
        const char *sk = o[i].nslices ? arena_printf(a, ", split-K in %lld slices",
                                                     (long long)(ns[0]->ext[2] / o[i].slices[0]))
                                      : "";
        if (o[i].wg) {
            const WgShape *s = o[i].shape;
            rules_offer(in, gpu_wg_b, x, a, sp,
                        arena_printf(a, "rules: GPU wgmma %dx%dx64%s%s%s", s->bm, s->bn,
                                     s->inflight ? ", one group in flight" : "", sk, kind),
                        true);
        } else {
            const TcShape *s = o[i].shape;
            rules_offer(in, gpu_tc_b, x, a, sp,
                        arena_printf(a, "rules: GPU tensor cores %dx%dx%d, warps %dx%d%s%s", s->bm, s->bn, s->bk,
                                     s->wm, s->wn, sk, kind),
                        true);
        }
    }
}

/* Several batch loops outside the rows and columns (b and h of attention's scores,
 * `bhqd,bhkd->bhqk`): the templates take one, so each nest's batch loops are
 * collapsed into one first (collapse names it by joining theirs) and the templates
 * see that view: the nests with the collapsed loop first, *ncol the loops joined to
 * the first (0: ns itself).  NULL when the nests' shapes differ. */
static const NestInfo *const *batch_view(const NestInfo *const *ns, int nn, Arena *a, int *ncol)
{
    *ncol = ns[0]->nspatial - 3;
    if (*ncol <= 0) {
        *ncol = 0;
        return ns;
    }
    const NestInfo **v = arena_alloc(a, sizeof *v * (size_t)nn);
    for (int e = 0; e < nn; e++) {
        const NestInfo *o = ns[e];
        if (o->nspatial != ns[0]->nspatial)
            return NULL;
        NestInfo *c = arena_alloc(a, sizeof *c);
        *c = *o;
        char *name = arena_strdup(a, o->loop[0]);
        for (int d = 1; d <= *ncol; d++) {
            name = arena_printf(a, "%s%s", name, o->loop[d]);
            c->ext[0] *= o->ext[d];
        }
        c->loop[0] = name;
        for (int d = 1; d + *ncol < o->nloops; d++) {
            c->loop[d] = o->loop[d + *ncol];
            c->ext[d] = o->ext[d + *ncol];
        }
        c->nloops -= *ncol;
        c->nspatial -= *ncol;
        v[e] = c;
    }
    return v;
}

void rules_tensor_cores(const TuneInput *in, const NestInfo *const *ns, int nn, const Target *target, Arena *a,
                        TuneSpace *sp)
{
    int ncol;
    const NestInfo *const *v = batch_view(ns, nn, a, &ncol);
    if (v)
        offer_all(in, v, nn, NULL, ncol ? ns : NULL, ncol, target, a, sp);
}

/* Several contractions, each followed by the elementwise nests that read it (an
 * MLP's gate and up projections, then their product): each group gets the
 * tensor-core template its own offers put first, one group after another, each
 * under a name prefix of its own (bld_set_prefix: the templates choose the same
 * names for every nest).  A consumer reading two products sits with the later. */
typedef struct TcMulti {
    TcCtx g[RULES_MAX_GROUPS];
    bool wg[RULES_MAX_GROUPS];
    int ng;
} TcMulti;

static bool gpu_multi_b(Builder *b, const void *vctx)
{
    static const char *const prefix[RULES_MAX_GROUPS] = {NULL, "c1_", "c2_", "c3_"};
    const TcMulti *m = vctx;
    for (int i = 0; i < m->ng; i++) {
        bld_set_prefix(b, prefix[i]);
        if (!(m->wg[i] ? gpu_wg_b : gpu_tc_b)(b, &m->g[i]))
            return false;
    }
    bld_set_prefix(b, NULL);
    return true;
}

void rules_tensor_cores_groups(const TuneInput *in, const NestInfo *const *ns, const int *start, int ng, int nn,
                               const Target *target, Arena *a, TuneSpace *sp)
{
    if (ng < 2 || ng > RULES_MAX_GROUPS)
        return;
    TcMulti *m = arena_alloc(a, sizeof *m);
    m->ng = ng;
    bool all_wg = true;
    for (int i = 0; i < ng; i++) {
        int n0 = start[i], cnt = (i + 1 < ng ? start[i + 1] : nn) - n0, ncol;
        const NestInfo *const *v = batch_view(ns + n0, cnt, a, &ncol);
        if (!v)
            return;
        enum { NWG = sizeof wg_shapes / sizeof wg_shapes[0], NTC = sizeof tc_shapes / sizeof tc_shapes[0] };
        TcOffer o[2 * (NWG + NTC)];
        int n = 0;
        if (target->wgmma)
            n = add_family(o, n, true, true, false, false, target, v[0]);
        n = add_family(o, n, false, true, target->wgmma, false, target, v[0]);
        if (!n)
            return;
        m->g[i] = (TcCtx){v, cnt, o[0].shape, {0}, o[0].nslices, NULL, ncol ? ns + n0 : NULL, ncol};
        memcpy(m->g[i].slices, o[0].slices, sizeof m->g[i].slices);
        m->wg[i] = o[0].wg;
        all_wg &= o[0].wg;
    }
    rules_offer(in, gpu_multi_b, m, a, sp,
                arena_printf(a, "rules: GPU %s, one per product (%d products)", all_wg ? "wgmma" : "tensor cores", ng),
                true);
}

/* An implicit GEMM: its product as the templates' nest; the consumers are fused by
 * the prelude. */
void rules_tensor_cores_igemm(const TuneInput *in, const IgPlan *p, const Target *target, Arena *a, TuneSpace *sp)
{
    const NestInfo **ns = arena_alloc(a, sizeof *ns);
    ns[0] = &p->gemm;
    offer_all(in, ns, 1, p, NULL, 0, target, a, sp);
}
