/* The GPU template for attention that tensor cores do not take: f32 operands (a
 * user's first attention is often written in f32, and torch's f32 attention does not
 * round to tf32 either), head sizes that are not a multiple of 16 (40 in Stable
 * Diffusion's first blocks), any GPU without mma.sync.  Without it such a chain ran
 * as its five nests one thread per element around two S x S temporaries.
 *
 * The chain is read as the tensor-core template reads it (rules_attn_read) and fused
 * the same way (online_softmax, the scale into the exponentials); then one thread
 * takes one query row, the form that needs no exchange between threads:
 *   - a block of rb rows (128, or 64 when 128 would leave SMs idle) runs each key
 *     tile's stages, one row a thread (thread.x), so the running maximum, the sum,
 *     the rescale and the exponentials are the thread's own registers;
 *   - the row's Q (its head dimension) and its accumulator are staged per thread
 *     (registers: the loops over the head dimension are unrolled), the tile's scores
 *     and exponentials too;
 *   - K and V tiles are staged in shared memory by all the block's threads, four
 *     elements a copy where the head size allows, and read by every thread at the
 *     same address (a broadcast): the score is a dot product of the thread's Q with
 *     a row of K, P.V adds a row of V scaled by the thread's exponential.
 * A mask (causal, a window) becomes values (mask=inf) and the key tiles no row of a
 * block needs are skipped (skip_tiles); keys past a multiple of the tile are masked
 * the same way, rows past a multiple of rb run in a padded last block.  What should
 * bound it (not profiled): a shared-memory read of four elements for every four
 * multiply-adds, docs/cuda.md "Attention without tensor cores". */
#include "rules_int.h"

/* Every loop at and under l unrolled: the loops over a tile's keys and the head
 * dimension, whose indices must be constants for the per-thread buffers to be
 * registers */
static void unroll_all(Builder *b, SLoop *l)
{
    SLoop *c[8];
    int n = l ? bld_children(b, l, c, 8) : 0;
    for (int i = 0; i < n; i++)
        unroll_all(b, c[i]);
    if (l)
        bld_unroll_max(b, l, 256);
}

/* The copy of a staged tile: rows x columns collapsed, nt threads at a time, w
 * elements (16 bytes) a copy where the row holds a multiple of w */
static void copy_map(Builder *b, SBuf *S, int64_t nt, int64_t dh, int64_t w)
{
    if (!S || S->nnest < 1 || S->rank[0] != 2)
        return;
    SLoop *c = S->nest[0][1], *v = NULL, *f, *o, *t;
    if (dh % w == 0)
        bld_split(b, S->nest[0][1], sv(w), &c, &v);
    bld_collapse(b, S->nest[0][0], c, NULL, &f);
    bld_split(b, f, sv(nt), &o, &t);
    bld_bind(b, t, "thread.x");
    if (v)
        bld_vectorize(b, v);
}

/* The loops under l unrolled and l, a loop over a block's rows, on thread.x */
static void rows_on_threads(Builder *b, SLoop *l)
{
    SLoop *in[32];
    int n = bld_children(b, l, in, 32);
    for (int i = 0; i < n; i++)
        unroll_all(b, in[i]);
    bld_bind(b, l, "thread.x");
}

/* A per-thread copy nest (the rows on thread.x, the rest unrolled) */
static void thread_nest(Builder *b, SBuf *S)
{
    for (int n = 0; S && n < S->nnest; n++) {
        bld_bind(b, S->nest[n][0], "thread.x");
        for (int d = 1; d < S->rank[n]; d++)
            unroll_all(b, S->nest[n][d]);
    }
}

static bool gpu_simt_flash_b(Builder *b, const void *vctx)
{
    const AttnCtx *x = vctx;
    rules_attn_order(b, x);
    if (x->score_sum)
        bld_factor_out(b, bld_loop(b, x->score_sum));
    /* the tuner's parameter: keys a tile (the registers a row's scores take: fewer
     * beside a long accumulator, which at 128 and 32 keys spills) */
    static const int64_t key_tiles[] = {32, 16, 64}, long_rows[] = {16, 32};
    SVal kt = x->dh <= 64 ? bld_param(b, "kt", key_tiles, 3) : bld_param(b, "kt", long_rows, 2);
    if (!bld_online_softmax(b, bld_buf(b, x->out), bld_loop(b, x->j), kt, "inf"))
        return false;
    if (x->exp_scale)
        bld_exp_scale(b, bld_buf(b, x->s));
    SLoop *fio, *fii, *cp[4], *jo, *stg[24];
    if (x->pad_rows)
        bld_split_padded(b, bld_loop(b, x->row), sv(x->rb), "f_io", "f_ii", &fio, &fii);
    else
        bld_split_named(b, bld_loop(b, x->row), sv(x->rb), "f_io", "f_ii", &fio, &fii);
    int ns;
    if (!fio || !rules_attn_tiles(b, x, fii, cp, &jo) || (ns = rules_attn_stages(b, x, cp[2], stg)) < 0)
        return false;
    /* the blocks with the most key tiles first (their binding, below) */
    if (x->masked && !bld_reverse(b, fio))
        return false;
    /* the product stage: the rescale apart, then P.V with the key outermost (a row
     * of V a step, added to the whole accumulator) */
    SLoop *od = bld_child(b, stg[ns - 1]), *ou, *od1, *oj;
    if (!od || !bld_distribute(b, od, &od1) || !bld_distribute(b, stg[ns - 1], &ou))
        return false;
    if (!(od1 = bld_child(b, ou)) || !(oj = bld_child(b, od1)) || !BLD_REORDER(b, oj, od1))
        return false;
    /* (an f32 output is its own accumulator: staged, it keeps a copy-in that the
     * initialisation overwrites, one read of the output, under 1% at 4x16x2048) */
    SBuf *acc = bld_cache_squeezed(b, bld_buf(b, x->acc), fio, NULL, "f_acc", true);
    SBuf *Ks = bld_cache_squeezed(b, bld_buf(b, x->K), jo, "shared", "f_Ks", true);
    SBuf *Vs = bld_cache_squeezed(b, bld_buf(b, x->V), jo, "shared", "f_Vs", true);
    /* Q in registers up to 64 elements a row; a longer row would leave the
     * accumulator too few, and is read from shared memory, its rows padded so the
     * block's threads read distinct banks */
    bool qreg = x->dh <= 64;
    SBuf *Qr = bld_cache_squeezed(b, bld_buf(b, x->Q), fio, qreg ? NULL : "shared", "f_qr", true);
    bld_cache_squeezed(b, bld_buf(b, x->s), jo, NULL, "f_st", true);
    rules_attn_stage_tiles(b, x, jo);
    bld_cache_squeezed(b, bld_buf(b, x->p), jo, NULL, "f_pt", true);
    bld_cache_squeezed(b, bld_buf(b, x->m), fio, NULL, "f_mr", true);
    bld_cache_squeezed(b, bld_buf(b, x->l), fio, NULL, "f_lr", true);
    bld_cache_squeezed(b, bld_buf(b, x->ms), jo, NULL, "f_mc", true);
    if (!Ks || !Vs || !Qr || !acc)
        return false;
    /* one row loop a tile: the stages fused, each stage's inner loops unrolled */
    for (int i = 1; i < ns; i++)
        bld_fuse(b, stg[0], stg[i]);
    bld_fuse(b, stg[0], ou);
    rows_on_threads(b, stg[0]);
    /* the per-row initialisations and the normalisation */
    bld_fuse(b, fii, cp[0]);
    bld_fuse(b, fii, cp[1]);
    rows_on_threads(b, fii);
    rows_on_threads(b, cp[3]);
    /* 16-byte copies where a row holds whole ones (w elements).  Not a pipeline:
     * copies a tile ahead by cp.async ran 6-13% slower at 4x16x2048 f32 on an H200
     * (7% faster on a causal T = 1000): the loads are not what holds the loop back
     * (the shared-memory reads of the products should be; not profiled) */
    int64_t w = 16 / dtype_bytes(x->dtype);
    if (qreg) {
        thread_nest(b, Qr);
    } else { /* rows padded by 16 bytes: aligned for 16-byte reads, in distinct banks */
        copy_map(b, Qr, x->rb, x->dh, w);
        bld_padding(b, Qr, sv(w));
    }
    thread_nest(b, acc);
    copy_map(b, Ks, x->rb, x->dh, w);
    copy_map(b, Vs, x->rb, x->dh, w);
    return rules_attn_grid(b, x, fio);
}

void rules_attention_simt(const TuneInput *in, const AttnCtx *x, Arena *a, TuneSpace *sp)
{
    rules_offer(in, gpu_simt_flash_b, x, a, sp, "rules: GPU attention, one row a thread (online_softmax)", true);
}
