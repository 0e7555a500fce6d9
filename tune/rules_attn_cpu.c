/* The CPU template for attention as a user writes it: the softmax-then-product chain
 * tune/rules_attn.c reads (rules_attn_read), fused by online_softmax into one pass
 * over tiles of keys with no S x S buffer, and register-tiled.  Without it the default
 * tiled the chain's five nests one by one around two S x S temporaries: 0.02 of the
 * FMA peak (docs/benchmarks.md "CPU attention").
 *
 * The form is bench/cpu/attention.sched's, read off the kernel and sized from the
 * target rather than spelled for stdlib's names and an AVX-512 core:
 *   - K is staged once per head transposed ([dim, key]) and V once per head, so the
 *     score product reads a vector of keys and P·V a vector of the head dimension,
 *     whatever the user's layout ([B, H, S, D], batch-first [B, S, H, D], grouped
 *     heads);
 *   - a block of R query rows runs each key tile's stages; the scores and the
 *     exponentials of the block live in tile buffers (R x kt);
 *   - both products are register tiles of R rows by A/R vectors, A being half the
 *     SIMD registers (16 on AVX-512, AArch64 and RISC-V, 8 on AVX2): the score product
 *     with the head dimension outermost, P·V with the key outermost, each over blocks
 *     of that many vectors so a head size of 128 or an AVX2 core does not spill;
 *   - the maximum and the sum are vectorised through rfactor, the exponentials
 *     and the rescaling vectorised;
 *   - the row blocks run on threads (their running state is indexed by row).
 * A mask (causal, a window) becomes values (mask=inf) and the key tiles no row of a
 * block needs are skipped (skip_tiles); keys past a multiple of the tile are masked
 * the same way, rows past a multiple of R run in a padded last block. */
#include <string.h>

#include "../runtime/runtime.h"
#include "blocking.h"
#include "rules_int.h"

typedef struct CpuAttnCtx {
    AttnCtx x;
    int64_t lanes;  /* f32 lanes a vector */
    int64_t regs;   /* the target's vector registers */
    int64_t parts;  /* masked chains: the row blocks dealt out in this many strided parts */
    bool q16;       /* Q, K and V are 16-bit (bf16, f16) */
} CpuAttnCtx;

/* Vectors a row of a register tile of R rows may take, the most (a power of two, so
 * that it divides a key tile) whose R x n accumulators leave registers for the n
 * vectors of the other operand and one broadcast: R n + n + 1 <= regs. */
static int64_t tile_vectors(int64_t regs, int64_t R)
{
    int64_t n = 1;
    while ((R + 1) * n * 2 + 1 <= regs)
        n *= 2;
    return n;
}

/* The rows a block, from the registers (BLIS's reasoning for a micro-kernel): the
 * R in 2..8 whose tile holds the most accumulators, fewer loads a FMA breaking ties,
 * weighed by the padded rows a last block would run (rows not a multiple of R).
 * 16 registers (AVX2): 6 rows by 2 vectors, 12 accumulators (1 x 1 x 2048 x 64 bf16,
 * one thread, Zen 3: 4 rows by 2 vectors, 8 accumulators, measured 0.45 of the FMA
 * peak; docs/benchmarks.md "CPU attention"); 32 registers: 6 rows by 4 vectors. */
static int64_t model_rows(int64_t regs, int64_t rows)
{
    int64_t best = 4;
    double best_s = -1;
    for (int64_t R = 2; R <= 8; R++) {
        int64_t n = tile_vectors(regs, R), blocks = (rows + R - 1) / R;
        double use = rows > 0 ? (double)rows / (double)(blocks * R) : 1;
        /* equal accumulators in use: the fewer padded rows, then the fewer loads */
        double s = (double)(R * n) * use - 1e-2 * (1 - use) - 1e-3 * (double)(R + n) / (double)(R * n);
        if (s > best_s + 1e-9) {
            best_s = s;
            best = R;
        }
    }
    return best;
}

/* split(l, L) and vectorize the lanes: a loop over keys or the head dimension */
static void vec(Builder *b, SLoop *l, int64_t L)
{
    SLoop *o, *v;
    if (l && bld_split(b, l, sv(L), &o, &v))
        bld_vectorize(b, v);
}

/* The same for a reduction into one value a row: partial results a lane (rfactor) */
static void vec_reduce(Builder *b, SLoop *l, int64_t L)
{
    SLoop *o, *v;
    if (l && bld_split(b, l, sv(L), &o, &v) && bld_rfactor(b, v))
        bld_vectorize(b, v);
}

/* A register tile: rows r (unrolled) by blocks of w columns of `cols` (w a whole
 * number of vectors).  r holds cols, cols holds `outer`, the loop the tile
 * accumulates over; they become: the column blocks, outer, the rows, the vectors
 * of a block (unrolled), the lanes. */
static bool reg_tile(Builder *b, SLoop *r, SLoop *cols, SLoop *outer, int64_t w, int64_t L)
{
    SLoop *cb, *cr, *co, *cv;
    if (!bld_split(b, cols, sv(w), &cb, &cr) || !bld_split(b, cr, sv(L), &co, &cv))
        return false;
    if (!BLD_REORDER(b, cb, outer, r, co, cv))
        return false;
    bld_unroll(b, r);
    bld_unroll(b, co);
    bld_vectorize(b, cv);
    return true;
}

static bool cpu_flash_b(Builder *b, const void *vctx)
{
    const CpuAttnCtx *c = vctx;
    const AttnCtx *x = &c->x;
    const int64_t L = c->lanes;
    rules_attn_order(b, x);
    if (x->score_sum)
        bld_factor_out(b, bld_loop(b, x->score_sum));
    /* the tuner's parameters: rows a block (the registers' choice first, then 4, 2
     * and 8) and keys a tile */
    static const int64_t more_rows[] = {4, 2, 8}, key_c[] = {64, 128};
    int64_t row_c[4] = {model_rows(c->regs, x->rows)}, nr = 1;
    for (int i = 0; i < 3; i++)
        if (more_rows[i] != row_c[0])
            row_c[nr++] = more_rows[i];
    SVal R = bld_param(b, "rb", row_c, (int)nr), kt = bld_param(b, "kt", key_c, 2);
    /* the tile's columns a register tile takes, at most the key tile */
    int64_t nv = tile_vectors(c->regs, R.i), w = nv * L < kt.i ? nv * L : kt.i;
    if (!bld_online_softmax(b, bld_buf(b, x->out), bld_loop(b, x->j), kt, "inf"))
        return false;
    if (x->exp_scale)
        bld_exp_scale(b, bld_buf(b, x->s));
    /* K transposed and V, once a head (the innermost batch loop); a kernel of one
     * head stages them once, at a loop of one iteration split off the rows */
    SLoop *row = bld_loop(b, x->row), *head, *fio, *fii;
    if (x->nbatch)
        head = bld_loop(b, x->batch[x->nbatch - 1]);
    else if (!bld_split_named(b, row, sv(x->rows), "f_all", "f_t", &head, &row))
        return false;
    /* 16-bit K and V converted to f32 once a head (the tuner's kv32 parameter), not
     * in every register tile: there each vector of K or V is widened (a zero
     * extension and a shift) once a row block, and on a core whose two 512-bit ports
     * are also its FMA ports those uops take the FMAs' slots (1 x 1 x 2048 x 64 bf16,
     * one thread, Intel Xeon AVX-512: 0.44 of the FMA peak in place, 0.59 with f32
     * copies; docs/benchmarks.md "CPU attention"). */
    static const int64_t kv_c[] = {1, 0};
    bool kv32 = c->q16 && bld_param(b, "kv32", kv_c, 2).i;
    int64_t eb = kv32 ? 4 : dtype_bytes(x->dtype), pad = 64 / eb;
    /* The copies are O(S D), two of them: past half the private bound they are
     * temporaries the caller allocates (the harness, perfc lib's entry points), not
     * arrays on the stack of the thread that calls the kernel (S = 8192, D = 128:
     * 4 MiB of bf16, 8 MiB of f32). */
    const char *mem = (x->dh * (x->keys + pad) + x->keys * x->dh) * eb > BLOCKING_LOCAL_MAX / 2 ? "global" : NULL;
    SBuf *Kt = bld_cache_squeezed(b, bld_buf(b, x->K), head, mem, "f_Kt", true);
    if (!Kt || Kt->rank[0] != 2 || !bld_layout(b, Kt, (const int[]){1, 0}, 2))
        return false;
    /* a cache line more a row: the score tile reads a few keys from each of the head
     * dimension's rows, which at 2048 bf16 keys a row are 4 KiB apart and would all
     * fall in one set of the L1 cache */
    bld_padding(b, Kt, sv(pad));
    SBuf *Vf = bld_cache_squeezed(b, bld_buf(b, x->V), head, mem, "f_Vf", true);
    if (!Vf || (kv32 && (!bld_storage(b, Kt, "f32") || !bld_storage(b, Vf, "f32"))))
        return false;
    bool padded = x->rows % R.i || x->rows < R.i; /* the last block runs past the rows */
    if (padded)
        bld_split_padded(b, row, R, "f_io", "f_ii", &fio, &fii);
    else
        bld_split_named(b, row, R, "f_io", "f_ii", &fio, &fii);
    /* Under a causal mask the last row blocks run the most key tiles, and the pool
     * hands each thread a contiguous range of iterations: dealt out instead in
     * `parts` strided sets (blocks p, p + parts, ...), each part gets the same mix
     * (at 1 x 4 x 2048 x 64 on two threads the contiguous split ran 1.27 times as
     * fast as one thread).  Done while the chain's temporaries are still indexed by
     * row: once the tile buffers are staged a block at a time, their reuse orders
     * the blocks. */
    SLoop *par = fio, *po, *pi;
    if (fio && x->masked && c->parts > 1 && bld_split(b, fio, sv(c->parts), &po, &pi) && BLD_REORDER(b, pi, po))
        par = pi;
    SLoop *cp[4], *jo, *stg[24];
    int ns;
    if (!fio || !rules_attn_tiles(b, x, fii, cp, &jo) || (ns = rules_attn_stages(b, x, cp[2], stg)) < 0)
        return false;
    bld_cache_squeezed(b, bld_buf(b, x->s), jo, NULL, "f_st", true);
    rules_attn_stage_tiles(b, x, jo);
    bld_cache_squeezed(b, bld_buf(b, x->p), jo, NULL, "f_pt", true);
    /* the scores: zeroed, then R x w tiles with the head dimension outermost */
    vec(b, bld_child(b, stg[0]), L);
    SLoop *sj = bld_child(b, stg[1]), *sd = bld_child(b, sj);
    if (!sd || !reg_tile(b, stg[1], sj, sd, w, L))
        return false;
    for (int i = 2; i < x->nscore; i++) /* a scale stage exp_scale did not take */
        vec(b, bld_child(b, stg[i]), L);
    int q = x->nscore;
    vec_reduce(b, bld_child(b, stg[q + 1]), L); /* the running maximum */
    vec(b, bld_child(b, stg[q + 4]), L);        /* the exponentials */
    vec_reduce(b, bld_child(b, stg[q + 5]), L); /* their sum */
    /* the product stage: the rescaling apart, then P·V as R x w tiles, key outermost */
    SLoop *od = bld_child(b, stg[ns - 1]), *ou, *od1, *oj;
    if (!od || !bld_distribute(b, od, &od1) || !bld_distribute(b, stg[ns - 1], &ou))
        return false;
    vec(b, od, L);
    if (!(od1 = bld_child(b, ou)) || !(oj = bld_child(b, od1)))
        return false;
    int64_t wd = nv * L < x->dh ? nv * L : x->dh;
    if (!reg_tile(b, ou, od1, oj, wd, L))
        return false;
    /* The running state in buffers of the row block (and the rescaling factors in
     * one of the key tile): the block's rows then need no bound check where the last
     * block runs past the rows, and they stay in the L1 cache.  Staged before the
     * accumulator's initialisation is split, so that the cache sees it cover the
     * block and copies nothing in or out. */
    SLoop *blk = par == fio ? fio : po; /* the row block: f_io, or its inner part where
                                            the blocks were dealt out */
    bld_cache_squeezed(b, bld_buf(b, x->acc), blk, NULL, "f_oacc", true);
    bld_cache_squeezed(b, bld_buf(b, x->m), blk, NULL, "f_m", true);
    bld_cache_squeezed(b, bld_buf(b, x->l), blk, NULL, "f_l", true);
    bld_cache_squeezed(b, bld_buf(b, x->ms), jo, NULL, "f_ms", true);
    /* the accumulator's initialisation and the normalisation, vectorised */
    vec(b, bld_child(b, cp[1]), L);
    vec(b, bld_child(b, cp[3]), L);
    /* 16-bit queries staged once a row block as f32: the score tile's inner loop
     * broadcasts R of them each head-dimension step, and a bf16 one is a scalar
     * load, shift and broadcast where an f32 one is one broadcast load (1 x 1 x
     * 2048 x 64 bf16, one thread, Zen 3 AVX2: `--run` 25.1 -> 22.9 ms in one pair;
     * bench/cpu/attention.sh's kernel-alone CPU time 23.8 -> 23.1 ms).  f32
     * queries too where the last block is padded: read in place each broadcast is
     * a bound-checked load (2048 x 2048 x 64 f32, 6-row blocks: 28.4 ms in place,
     * staged 18.1 ms; 4-row blocks, unpadded, 19.6) */
    if (c->q16 || padded) {
        SBuf *qs = bld_cache(b, bld_buf(b, x->Q), blk, NULL, "f_q");
        if (!qs || (c->q16 && !bld_storage(b, qs, "f32")))
            return false;
    }
    bld_parallel(b, par);
    return true;
}

/* Where online_softmax fuses the chain but the fused nest is not one the template
 * reads (more than four batch loops, stages of another shape): the chain fused
 * alone, its rows on threads (no S x S buffer, the loops left to the code
 * generator). */
static bool cpu_fused_b(Builder *b, const void *vctx)
{
    const AttnCtx *x = vctx;
    rules_attn_order(b, x);
    if (!bld_online_softmax(b, bld_buf(b, x->out), bld_loop(b, x->j), sv(64), "inf"))
        return false;
    /* the rows on threads (online_softmax keeps the row loop's name) */
    SLoop *row = x->rowloop ? bld_loop(b, x->rowloop) : NULL;
    return row ? bld_parallel(b, row) : true;
}

bool rules_attention_cpu(const TuneInput *in, const Kernel *u, const Target *target, Arena *a, TuneSpace *sp)
{
    if (!target_is_cpu(target))
        return false;
    CpuAttnCtx *c = arena_alloc(a, sizeof *c);
    if (!rules_attn_read(u, &c->x, a)) {
        if (!c->x.fuses)
            return false;
        int n0 = sp->n;
        rules_offer(in, cpu_fused_b, &c->x, a, sp, "rules: attention, fused (online_softmax)", false);
        return sp->n > n0;
    }
    const Buffer *q = ir_find_buffer(u, c->x.Q);
    c->q16 = q && dtype_bytes(q->dtype) == 2 && dtype_is_float(q->dtype);
    c->lanes = tune_vector_lanes(target, DT_F32);
    c->regs = blocking_vector_regs(target);
    /* a few parts a thread, and no more than the row blocks of the smallest tile */
    int64_t blocks = (c->x.rows + 7) / 8;
    int threads = rules_threads(in);
    c->parts = 4 * threads < blocks ? 4 * threads : blocks;
    int n0 = sp->n;
    rules_offer(in, cpu_flash_b, c, a, sp, "rules: attention, fused (online_softmax), register tiles", false);
    return sp->n > n0;
}
