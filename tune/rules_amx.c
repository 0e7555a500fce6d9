/* The CPU template for a bf16 product summed in f32 on a core with AMX tiles
 * (Target.amx_bf16): C[i, j] += A[i, k] · B[k, j] as BLIS blocks around a micro-kernel
 * that the back end runs as tile products.
 *
 *   distribute(j) reorder(k, j1) distribute(i)  the initialisation apart
 *   split i1 by MR (32 or 16), j1 by NR (32 or 16), k by KC, the row tiles by MB
 *   reorder(ko, i1oo, j1o, i1oi, ki, i1i, j1i)
 *   cache(B, ko) padding(.., 32)       B's KC x N block, rows 64 bytes longer
 *   cache(A, i1oo) padding(.., 32)     A's MC x KC block, likewise
 *   unroll(i1i) vectorize(j1i) parallel(i1oo)
 *
 * Then dot-pairs stores the panel in pairs of k ([k/2][j][2], the layout tdpbf16ps
 * reads its second operand in) and amx-tiles marks the KC loop: 16 x 16 tiles of C
 * stay in tile registers over the panel, A's rows and the panel's pairs are read a
 * tile of 32 k at a time (passes/cpu_amx.c, codegen/llvm/emit_amx.c).  MR x NR of 32
 * x 32 uses the eight tile registers (four of C, two of A, two of B).  The packed
 * blocks are padded so that the 16 rows of a tile, a power of two apart otherwise,
 * do not fall in one set of the L1 cache.
 *
 * Sizes that are no whole number of tiles are padded (split tail=pad): the packed
 * copies fill the rows, columns and k past the ends with zeros, and C's tile is then
 * staged in a 32 x 32 buffer whose guarded copies write back only what lies inside
 * C, so that every tile product runs whole.  Operands stored the other way (B[j, k]
 * as nn.Linear's weight, A[k, i]) are packed by transposing copies into the same
 * blocks; batch loops outside the rows run the blocks once a batch (the copies
 * squeezed to 2-D); a 16-bit result is the f32 sum rounded once (lowering's C_acc);
 * elementwise nests after the product (a bias, an activation) stay passes of their
 * own (tune/rules.c amx_kernel_b). */
#include <stdlib.h>

#include "blocking.h"
#include "rules_int.h"

typedef struct AmxCtx {
    const NestInfo *n;
    int64_t mr[2], nr[2], kc[3], mb[4];
    int nmr, nnr, nkc, nmb;
} AmxCtx;

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

/* split(l, f), padded where f does not divide the extent */
static bool split_pad(Builder *b, SLoop *l, SVal f, int64_t ext, SLoop **o, SLoop **i)
{
    return ext % f.i == 0 ? bld_split(b, l, f, o, i) : bld_split_tail(b, l, f, (SVal){0, "pad", -1}, o, i);
}

bool rules_amx_b(Builder *b, const void *vctx)
{
    const AmxCtx *c = vctx;
    const NestInfo *n = c->n;
    int ia = n->nspatial - 2, ib = n->nspatial - 1, ir = n->nloops - 1;
    int64_t M = n->ext[ia], N = n->ext[ib], K = n->ext[ir];
    SLoop *i = bld_loop(b, n->loop[ia]), *j = bld_loop(b, n->loop[ib]), *k = bld_loop(b, n->loop[ir]);
    SLoop *j1, *i1, *io, *ii, *jo, *ji, *ko, *ki, *ioo, *ioi;
    if (!bld_distribute(b, j, &j1) || !BLD_REORDER(b, k, j1) || !bld_distribute(b, i, &i1))
        return false;
    SVal mr = bld_param(b, "amx_mr", c->mr, c->nmr), nr = bld_param(b, "amx_nr", c->nr, c->nnr),
         kc = bld_param(b, "amx_kc", c->kc, c->nkc), mb = bld_param(b, "amx_mb", c->mb, c->nmb);
    if (!split_pad(b, i1, mr, M, &io, &ii) || !split_pad(b, j1, nr, N, &jo, &ji) || !split_pad(b, k, kc, K, &ko, &ki) ||
        !bld_split(b, io, mb, &ioo, &ioi) || !BLD_REORDER(b, ko, ioo, jo, ioi, ki, ii, ji))
        return false;
    /* B's KC x N block once per panel, outside the row blocks and their threads: a
     * caller's temporary past half the private bound (KC 1024, N 2048: 4 MiB) */
    int64_t Np = round_up(N, nr.i), bbytes = kc.i * (Np + 32) * 2;
    SBuf *bp = bld_cache_squeezed(b, bld_buf(b, n->pb), ko, bbytes > BLOCKING_LOCAL_MAX / 2 ? "global" : NULL, NULL,
                                  true);
    bool bt = n->pb_kdim > n->pb_sdim; /* B[j, k] (nn.Linear's weight): the block transposed */
    if (!bp || bp->nnest < 1 || bp->rank[0] != 2 || (bt && !bld_layout(b, bp, (const int[]){1, 0}, 2)) ||
        !bld_padding(b, bp, sv(32)))
        return false;
    /* its copy a row of 64 columns at a time (dot-pairs makes that a vector loop
     * interleaving two rows of k; transposed, pairs of k read along B's rows), the
     * column blocks outermost (on threads): where N is padded, the version pass then
     * cuts the blocks wholly inside B from the last, and only that one stays a
     * guarded scalar copy (with k outermost the cut split every row's columns and no
     * row was paired: 1000^3 copied all of B element by element) */
    SLoop *cj = bp->nest[0][bt ? 0 : 1], *ck = bp->nest[0][bt ? 1 : 0], *cjo, *cji;
    int64_t cw = 64;
    while (cw > 8 && N % cw)
        cw /= 2; /* blocks wholly inside B or wholly past it where a power of two divides N */
    if (!bld_split(b, cj, sv(cw), &cjo, &cji) || (!bt && !BLD_REORDER(b, cjo, ck)))
        return false;
    if (n->threads > 1)
        bld_parallel(b, cjo);
    /* A's block of MC rows once per row block: a vector copy, or (A[k, i]) a
     * transposing one */
    SBuf *ap = bld_cache_squeezed(b, bld_buf(b, n->pa), ioo, NULL, NULL, true);
    bool at = n->pa_kdim < n->pa_sdim;
    SLoop *a1o, *a1i;
    if (!ap || ap->nnest < 1 || ap->rank[0] != 2 || (at && !bld_layout(b, ap, (const int[]){1, 0}, 2)) ||
        !bld_padding(b, ap, sv(32)))
        return false;
    if (!at && (!bld_split(b, ap->nest[0][1], sv(32), &a1o, &a1i) || !bld_vectorize(b, a1i)))
        return false;
    /* C's tile staged where the tiles run past its rows or columns: the tile
     * products then run on the stage whole, its copies guarded and vectorized */
    if (M % mr.i || N % nr.i) {
        SBuf *cs = bld_cache_squeezed(b, bld_buf(b, n->out), ioi, NULL, NULL, true);
        if (!cs || cs->nnest < 2)
            return false;
        for (int x = 0; x < 2; x++)
            bld_vectorize(b, cs->nest[x][1]);
    }
    bld_unroll(b, ii);
    bld_vectorize(b, ji);
    if (n->threads > 1)
        bld_parallel(b, ioo);
    return true;
}

/* MR (NR): 32, or 16 where padding to 32 would add more than an eighth (M = 40:
 * 64 rows against 48) */
static int tile_side(int64_t ext, int64_t *out)
{
    bool small = round_up(ext, 32) - ext > ext / 8 && round_up(ext, 16) < round_up(ext, 32);
    out[0] = small ? 16 : 32;
    out[1] = small ? 32 : 16;
    return 2;
}

const void *rules_amx_read(const NestInfo *n, const Target *target, Arena *a)
{
    /* one reduction loop inside the rows and columns; batch loops outside them run
     * the blocks once a batch, serially */
    if (!target || !target->amx_bf16 || !n->red || !n->mul || n->quot || n->scaled || n->self || n->nspatial < 2 ||
        n->nloops != n->nspatial + 1 || !n->pa || !n->pb || n->pa_t != DT_BF16 || n->pb_t != DT_BF16 ||
        n->out_t != DT_F32 || !n->pa_in || !n->pb_in)
        return NULL;
    /* Operands whose last two dimensions are their row (column) and k in either order
     * (a batch dimension before them, fixed in the block, is squeezed out): a
     * transposed one is packed by a transposing copy, so that pairs of k are rows of
     * B's packed block (the plain 2-D panel dot-pairs takes) and k runs along A's */
    if (n->pa_kdim < 0 || n->pa_sdim < 0 || n->pb_kdim < 0 || n->pb_sdim < 0 ||
        n->pa_kdim + n->pa_sdim != 2 * n->pa_rank - 3 || n->pb_kdim + n->pb_sdim != 2 * n->pb_rank - 3)
        return NULL;
    int ia = n->nspatial - 2;
    int64_t M = n->ext[ia], N = n->ext[ia + 1], K = n->ext[ia + 2];
    /* a tile's 16 rows, columns and 32 k at least: thinner products keep vdpbf16ps */
    if (M < 16 || N < 16 || K < 32)
        return NULL;
    AmxCtx *c = arena_alloc(a, sizeof *c);
    c->n = n;
    c->nmr = tile_side(M, c->mr);
    c->nnr = tile_side(N, c->nr);
    /* KC: the largest multiples of 32 up to 1024 that divide K rounded up to 32 (one
     * step of 32 pads at most 31 k); where none is 128 or more (K = 32 x 37), 1024
     * or 512 padded, whichever pads less.  Longer panels pass over C fewer times:
     * 2048^3, one thread, Intel Xeon with AMX: KC 1024 22.6 ms, 512 25.3 ms. */
    int64_t Kp = round_up(K, 32);
    c->nkc = 0;
    for (int64_t kc = Kp < 1024 ? Kp : 1024; kc >= 128 && c->nkc < 3; kc -= 32)
        if (Kp % kc == 0)
            c->kc[c->nkc++] = kc;
    if (c->nkc == 0) {
        bool half = round_up(K, 512) < round_up(K, 1024);
        c->kc[c->nkc++] = half ? 512 : 1024;
        c->kc[c->nkc++] = half ? 1024 : 512;
    }
    /* MB: row tiles a block, 8 (A's block of 256 rows by KC 1024: 528 KiB), or the
     * divisor of the row tiles nearest it in 4..16, so that no block is partial (a
     * partial one leaves a versioned copy of the micro-kernel that runs nothing) */
    int64_t tiles = (M + c->mr[0] - 1) / c->mr[0], best = 8;
    for (int64_t d = 4; d <= 16; d++)
        if (tiles % d == 0 && (tiles % best || llabs(d - 8) < llabs(best - 8)))
            best = d;
    static const int64_t mbs[3] = {8, 4, 16};
    c->mb[0] = best;
    c->nmb = 1;
    for (int i = 0; i < 3; i++)
        if (mbs[i] != best)
            c->mb[c->nmb++] = mbs[i];
    return c;
}
