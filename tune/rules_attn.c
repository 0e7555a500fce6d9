/* The GPU template for attention as a user writes it: where a maximum, an
 * exponential, a sum of the exponentials and a contraction over one index form the
 * softmax-then-product chain (online_softmax's pattern, docs/schedules.md), flash
 * attention on tensor cores (docs/cuda.md "Flash attention on tensor cores").
 *
 * The template is stdlib/attention.pdl's `flash` schedule read off the kernel instead
 * of spelled for stdlib's names: which nest holds the scores, which tensors are the
 * maximum, the sum, the exponentials and the accumulator, which loops are the batch,
 * the rows and the keys are found by applying the scale's factor_out and online_softmax
 * to a copy of the kernel and reading the fused nest (whose shape online_softmax
 * fixes: per row the two initialisations, the accumulator's, the tile loop, the
 * normalisation; per tile the score stages, the maximum, the rescale, the
 * exponentials, their sum and the product).  The steps themselves go through the
 * typed builder, so every later loop is a handle, never a guessed name.
 *
 * A mask (causal, a window) becomes values (online_softmax's mask=inf) and the key
 * tiles no row of a block needs are skipped (skip_tiles); keys past a multiple of 64
 * are masked the same way, rows past a multiple of 128 run in a padded last block.
 * The GPU template fits 16-bit Q, K and V (one type) and head sizes a multiple of 8
 * (the score product's depth padded to a multiple of 16); batch loops beyond the
 * grid's two other axes are collapsed.  Anything else (f32, other head sizes) takes
 * the template of one query row a thread (tune/rules_attn_simt.c).  The reading serves
 * the CPU template too (tune/rules_attn_cpu.c), which takes any type and head size. */
#include <string.h>

#include "../ir/walk.h"
#include "../passes/xform.h"
#include "rules_int.h"

enum { GPU_MAXB = 2 }; /* batch loops the grid takes beside the row blocks (more are collapsed) */


/* ---------------- reading the kernel ---------------- */

static SchedArg nm(const char *s) { return (SchedArg){.kind = SARG_NAME, .name = s}; }
static SchedArg iv(int64_t v) { return (SchedArg){.kind = SARG_INT, .ival = v}; }

bool rules_try_apply(Kernel *k, const char *xf, SchedArg *args, int n)
{
    SchedItem it = {.kind = SCHED_CALL, .name = xf, .args = args, .nargs = n};
    Diags d;
    diag_init(&d);
    bool ok = xf_apply(k, &it, NULL, &d);
    diag_free(&d);
    return ok;
}

bool rules_factor_out_applies(const Kernel *u, const char *loop)
{
    Kernel *c = ir_clone_kernel(u);
    SchedArg fa[1] = {nm(loop)};
    bool ok = rules_try_apply(c, "factor_out", fa, 1);
    ir_free(c);
    return ok;
}

/* The one statement under n through single-node loops and guards, or NULL. */
static Node *only_stmt(Node *n)
{
    while (n && n->kind != N_STMT) {
        NodeList *b = ir_body(n);
        if (!b || b->n != 1)
            return NULL;
        n = b->v[0];
    }
    return n;
}

static const Buffer *load_buf(const Expr *x)
{
    if (x && x->kind == IE_CAST)
        x = x->args[0];
    return x && x->kind == IE_LOAD ? x->u.load.buf : NULL;
}

Node *rules_find_sum_loop(Node *n)
{
    if (n->kind == N_LOOP && ir_sum_loop(n))
        return n;
    NodeList *b = ir_body(n);
    for (int i = 0; b && i < b->n; i++) {
        Node *x = rules_find_sum_loop(b->v[i]);
        if (x)
            return x;
    }
    return NULL;
}

bool rules_const_extent(const Kernel *k, const Node *l, int64_t *e)
{
    int64_t lo, hi;
    return ir_eval_size(k, l->u.loop.lo, &lo) && ir_eval_size(k, l->u.loop.hi, &hi) && lo == 0 && (*e = hi) > 0;
}

/* The inputs a score stage reads at an index naming its key loop kv and the row
 * loop rv (a bias table of rows x keys; not a per-head slope, not a mask of keys
 * alone, whose tile would be one row), at most two, each once. */
static void stage_inputs(const Expr *e, const Var *kv, const Var *rv, AttnCtx *x, Arena *a)
{
    if (!e)
        return;
    if (e->kind == IE_LOAD) {
        const Buffer *b = e->u.load.buf;
        bool key = false, row = false;
        for (int d = 0; d < b->rank; d++) {
            key |= ir_expr_uses_var(e->u.load.idx[d], kv);
            row |= ir_expr_uses_var(e->u.load.idx[d], rv);
        }
        key &= row;
        bool seen = false;
        for (int i = 0; i < x->nsin; i++)
            seen |= strcmp(x->sin[i], b->name) == 0;
        if (b->kind == BUF_IN && key && !seen && x->nsin < 2) {
            x->sin_w[x->nsin] = 16 / dtype_bytes(b->dtype);
            x->sin[x->nsin++] = arena_strdup(a, b->name);
        }
        return;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        stage_inputs(e->args[i], kv, rv, x, a);
}

/* Reads the fused nest of a copy on which factor_out and online_softmax were applied. */
static bool read_fused(Kernel *c, AttnCtx *x, Arena *a)
{
    for (int t = 0; t < c->body.n; t++) {
        Node *n = c->body.v[t];
        const char *batch[8];
        int nb = 0;
        int64_t nbatch = 1, e; /* the batch loops' iterations: blocks of rows each */
        while (n->kind == N_LOOP && n->u.loop.body.n == 1 && n->u.loop.body.v[0]->kind == N_LOOP && nb < 8) {
            batch[nb++] = n->u.loop.var->name;
            nbatch *= rules_const_extent(c, n, &e) ? e : 1;
            n = n->u.loop.body.v[0];
        }
        NodeList *rb = n->kind == N_LOOP ? &n->u.loop.body : NULL;
        if (!rb || rb->n != 5 || rb->v[0]->kind != N_STMT || rb->v[1]->kind != N_STMT || rb->v[2]->kind != N_LOOP ||
            rb->v[3]->kind != N_LOOP || rb->v[4]->kind != N_LOOP)
            continue;
        Node *init = only_stmt(rb->v[2]), *jo = rb->v[3];
        NodeList *st = &jo->u.loop.body;
        /* a masked chain (mask=inf): the tile's stages inside the skip guard */
        bool masked = st->n == 1 && st->v[0]->kind == N_IF && st->v[0]->u.guard.skip;
        if (masked)
            st = &st->v[0]->u.guard.body;
        /* the stages after the scores: m_scale = m, max, m_scale = exp, l *=, p, l +=, product */
        int q = -1;
        for (int i = 0; i < st->n && q < 0; i++)
            if (st->v[i]->kind == N_STMT && st->v[i]->u.stmt.op == SOP_ASSIGN &&
                load_buf(st->v[i]->u.stmt.value) == rb->v[0]->u.stmt.buf)
                q = i;
        if (!init || q < 1 || st->n != q + 7 || nb > MAXB)
            return false;
        Node *ps = only_stmt(st->v[q + 4]), *os = st->v[q + 6];
        Node *prod = NULL;
        for (int i = 0; i < q && !prod; i++) {
            Node *s = only_stmt(st->v[i]);
            if (s && s->u.stmt.op == SOP_ADD && s->u.stmt.value->kind == IE_MUL)
                prod = s;
        }
        /* the product stage: for d { acc *= m_scale; for j { acc += p * V } } */
        if (!ps || !prod || os->kind != N_LOOP || os->u.loop.body.n != 2)
            return false;
        Node *upd = only_stmt(os->u.loop.body.v[1]);
        if (!upd || upd->u.stmt.value->kind != IE_MUL)
            return false;
        const Expr *pv = upd->u.stmt.value;
        const Buffer *V = load_buf(pv->args[1]) == ps->u.stmt.buf ? load_buf(pv->args[0]) : load_buf(pv->args[1]);
        const Buffer *Q = load_buf(prod->u.stmt.value->args[0]), *K = load_buf(prod->u.stmt.value->args[1]);
        if (!V || !Q || !K || Q->dtype != K->dtype || V->dtype != Q->dtype || V->kind != BUF_IN ||
            Q->kind != BUF_IN || K->kind != BUF_IN)
            return false;
        int64_t rows, dh, ntiles, tile;
        if (!rules_const_extent(c, n, &rows) || !rules_const_extent(c, rb->v[2], &dh) ||
            !rules_const_extent(c, jo, &ntiles) || !rules_const_extent(c, os->u.loop.body.v[1], &tile) || tile != 64)
            return false;
        for (int i = 0; i < nb; i++)
            x->batch[i] = arena_strdup(a, batch[i]);
        x->nbatch = nb;
        x->row = arena_strdup(a, n->u.loop.var->name);
        x->m = arena_strdup(a, rb->v[0]->u.stmt.buf->name);
        x->l = arena_strdup(a, rb->v[1]->u.stmt.buf->name);
        x->acc = arena_strdup(a, init->u.stmt.buf->name);
        x->ms = arena_strdup(a, st->v[q]->u.stmt.buf->name);
        x->p = arena_strdup(a, ps->u.stmt.buf->name);
        x->s = arena_strdup(a, prod->u.stmt.buf->name);
        x->Q = arena_strdup(a, Q->name);
        x->K = arena_strdup(a, K->name);
        x->V = arena_strdup(a, V->name);
        x->dt = dtype_name(Q->dtype);
        x->dtype = Q->dtype;
        x->nscore = q;
        x->nsstage = 0;
        for (int i = 0; i < q; i++) {
            Node *ss = only_stmt(st->v[i]);
            if (!ss || ss->u.stmt.buf == prod->u.stmt.buf || ss->u.stmt.buf->kind != BUF_TEMP || x->nsstage == 4)
                continue;
            x->sstage[x->nsstage++] = arena_strdup(a, ss->u.stmt.buf->name);
            const Node *kl = ss->parent;
            if (kl && kl->kind == N_LOOP)
                stage_inputs(ss->u.stmt.value, kl->u.loop.var, n->u.loop.var, x, a);
        }
        x->dh = dh;
        x->masked = masked;
        x->rows = rows;
        x->keys = ntiles * tile;
        /* a grid of fewer blocks than a large GPU has SMs (about 100 to 140: one head
         * of 4096 rows is 32 blocks of 128) gets blocks of 64 rows, twice as many */
        x->rb = nbatch * ((rows + 127) / 128) < 128 ? 64 : 128;
        x->pad_rows = rows % x->rb != 0;
        return true;
    }
    return false;
}

/* The product's loads indexed by the key loop j under the contraction's outer loops:
 * the exponentials and V (an input), or false. */
static bool product_loads(Node *jl, const Expr **p, const Expr **v)
{
    Node *st = only_stmt(jl);
    const Expr *e = st && st->u.stmt.op == SOP_ADD ? st->u.stmt.value : NULL;
    const Expr *ld[2];
    int n = 0;
    /* the product's factors, through multiplications, divisions and casts */
    const Expr *stack[16];
    int sp = 0;
    if (e)
        stack[sp++] = e;
    while (sp > 0) {
        const Expr *x = stack[--sp];
        if (x->kind == IE_MUL || x->kind == IE_DIV) {
            if (sp + 2 > 16)
                return false;
            stack[sp++] = x->args[0];
            stack[sp++] = x->args[1];
        } else if (x->kind == IE_CAST) {
            stack[sp++] = x->args[0];
        } else if (x->kind == IE_LOAD && ir_expr_uses_var(x, jl->u.loop.var)) {
            if (n == 2)
                return false;
            ld[n++] = x;
        }
    }
    if (n != 2 || (ld[0]->u.load.buf->kind == BUF_IN) == (ld[1]->u.load.buf->kind == BUF_IN))
        return false;
    *v = ld[0]->u.load.buf->kind == BUF_IN ? ld[0] : ld[1];
    *p = *v == ld[0] ? ld[1] : ld[0];
    return true;
}

/* online_softmax takes the innermost of the contraction nest's single loops for the
 * rows.  Written batch-first, o[b, t, h, e] = sum(s) w[b, h, t, s] * v[b, s, h, e],
 * the row loop t sits outside the head loop h, which would be read as the rows.
 * The order the chain needs: the loops indexing both factors (the batch, the heads),
 * then those indexing the exponentials alone (the rows), then the rest (the head
 * size).  Fills order with that order and returns its length when the nest's own
 * differs; 0 when it agrees or the nest is not read.  *row: the innermost row loop
 * (left alone when the nest is not read). */
static int row_order(const Node *nest, Node *jl, const char **order, int cap, const char **row, Arena *a)
{
    const Node *chain[8];
    int n = 0;
    for (const Node *x = nest; x && x->kind == N_LOOP && x != jl && n < 8;) {
        chain[n++] = x;
        const NodeList *b = &x->u.loop.body;
        x = b->n == 1 ? b->v[0] : NULL;
    }
    const Expr *p, *v;
    if (n < 2 || n > cap || !product_loads(jl, &p, &v))
        return 0;
    int k = 0;
    bool moved = false;
    for (int cls = 0; cls < 3; cls++)
        for (int i = 0; i < n; i++) {
            bool inp = ir_expr_uses_var(p, chain[i]->u.loop.var), inv = ir_expr_uses_var(v, chain[i]->u.loop.var);
            int c = inp && inv ? 0 : inp ? 1 : 2;
            if (c != cls)
                continue;
            moved |= k != i;
            order[k++] = arena_strdup(a, chain[i]->u.loop.var->name);
            if (cls == 1)
                *row = order[k - 1]; /* the last of them: the innermost row loop */
        }
    return moved ? k : 0;
}

/* ---------------- the template ---------------- */

bool rules_attn_tiles(Builder *b, const AttnCtx *x, SLoop *fii, SLoop *cp[4], SLoop **jo)
{
    SLoop *all[8], *t[2];
    if (bld_distribute_all(b, fii, all, 8) != 4 || bld_children(b, all[2], t, 2) != 1)
        return false; /* not the nest online_softmax leaves: the template does not fit */
    memcpy(cp, all, sizeof *cp * 4);
    *jo = t[0];
    BLD_REORDER(b, *jo, cp[2]);
    /* a masked chain: the block runs the key tiles some of its rows need */
    return !x->masked || bld_skip_tiles(b, *jo);
}

int rules_attn_stages(Builder *b, const AttnCtx *x, SLoop *cp2, SLoop *stg[24])
{
    int ns = bld_distribute_all(b, cp2, stg + 1, 23) + 1;
    stg[0] = cp2;
    return ns == x->nscore + 7 ? ns : -1;
}

void rules_attn_stage_tiles(Builder *b, const AttnCtx *x, SLoop *jo)
{
    for (int i = 0; i < x->nsstage; i++)
        bld_cache_squeezed(b, bld_buf(b, x->sstage[i]), jo, NULL, "f_ss", true);
}

void rules_attn_order(Builder *b, const AttnCtx *x)
{
    if (!x->norder)
        return;
    SLoop *o[8];
    for (int i = 0; i < x->norder; i++)
        o[i] = bld_loop(b, x->order[i]);
    bld_reorder(b, o, x->norder);
}

/* The template re-finds by structure the nest read_fused read (the same moves on the
 * same kernel); where it does not, it returns false: the template does not fit. */

/* The copy of a staged operand tile by 16-byte vectors of w elements: rows x chunks
 * collapsed, the block's nt threads at a time, in rows of 32 (mma: the lanes of a
 * warp) or 128 (wgmma: the threads of a warpgroup). */
static void copy_map(Builder *b, SBuf *S, bool wg, int64_t nt, int64_t w)
{
    if (!S || S->nnest < 1 || S->rank[0] != 2)
        return;
    SLoop *c, *v, *f, *o, *t, *y, *x;
    bld_split(b, S->nest[0][1], sv(w), &c, &v);
    bld_collapse(b, S->nest[0][0], c, NULL, &f);
    bld_split(b, f, sv(nt), &o, &t);
    bld_split(b, t, sv(wg ? 128 : 32), &y, &x);
    bld_bind(b, y, "thread.y");
    bld_bind(b, x, "thread.x");
    bld_vectorize(b, v);
    bld_unroll(b, o);
}

/* One tensor-core triple over rows r (32 a warp: two 16-row tiles), columns c (8 a
 * tile) and depth k (16 a step), the depth outermost.  With wgmma one triple takes
 * the warpgroup's 64 rows by all the columns, and the depth steps are unrolled into
 * one group (issued together, waited for once).  pad_k: the depth already split by
 * 16 with its last step padded (a head size not a multiple of 16), its two loops. */
static void triple(Builder *b, SLoop *r, SLoop *c, SLoop *k, bool unroll_k, bool wg, SLoop *pad_k[2])
{
    SLoop *rt, *ri, *cj, *cn, *kk, *kd;
    if (wg) {
        bld_split(b, k, sv(16), &kk, &kd);
        BLD_REORDER(b, kk, r, c, kd);
        bld_wgmma(b, r, c, kd);
        bld_unroll(b, kk);
        return;
    }
    bld_split(b, c, sv(8), &cj, &cn);
    if (pad_k) /* the depth already split by 16, its last step padded (mma.sync only) */
        kk = pad_k[0], kd = pad_k[1];
    else
        bld_split(b, k, sv(16), &kk, &kd);
    bld_split(b, r, sv(16), &rt, &ri);
    BLD_REORDER(b, kk, rt, cj, ri, cn, kd);
    bld_mma(b, ri, cn, kd);
    bld_unroll(b, cj);
    bld_unroll(b, rt);
    if (unroll_k)
        bld_unroll(b, kk);
}

static bool gpu_flash_b(Builder *b, const void *vctx)
{
    const AttnCtx *x = vctx;
    rules_attn_order(b, x);
    if (x->score_sum)
        bld_factor_out(b, bld_loop(b, x->score_sum));
    /* the tuner's parameters: keys a tile and pipeline stages, stdlib's flash first
     * (measured variants landed within 8% of it: docs/benchmarks.md) */
    static const int64_t key_tiles[] = {64, 32}, wg_tiles[] = {64, 128}, stages[] = {2, 3};
    /* wgmma: 64 keys a tile first at every head size.  At head size 64 tiles of 128
     * keys once led (4x16x2048x64 0.265 ms against 0.284); since the write-back
     * stores lane pairs 64 is ahead: 0.1862 ms against 0.1992 (H100, the tuner's
     * measurements in one run, 2026-11-26).  A causal mask wastes more of a
     * diagonal tile of 128 (0.207 against 0.188 ms). */
    const int64_t *kts = !x->wg ? key_tiles : wg_tiles;
    SVal kt = bld_param(b, "kt", kts, 2), st = bld_param(b, "st", stages, 2);
    bld_online_softmax(b, bld_buf(b, x->out), bld_loop(b, x->j), kt, "inf");
    if (x->exp_scale)
        bld_exp_scale(b, bld_buf(b, x->s));
    SLoop *fio, *fii, *cp[4], *jo;
    if (x->pad_rows)
        bld_split_padded(b, bld_loop(b, x->row), sv(x->rb), "f_io", "f_ii", &fio, &fii);
    else
        bld_split_named(b, bld_loop(b, x->row), sv(x->rb), "f_io", "f_ii", &fio, &fii);
    if (!fio)
        return false;
    if (!rules_attn_tiles(b, x, fii, cp, &jo))
        return false;
    /* the blocks with the most key tiles first (their binding, below) */
    if (x->masked && !bld_reverse(b, fio))
        return false;
    SLoop *stg[24];
    int ns = rules_attn_stages(b, x, cp[2], stg);
    if (ns < 0)
        return false;
    /* A head size that is not a multiple of the mma depth (40: a UNet's first
     * blocks): the score product's depth split by 16 with the last step padded, so
     * the staged Q and K tiles hold zeros past the head size and every step is a
     * whole mma (P.V's columns need only a multiple of 8) */
    SLoop *pad_k[2] = {NULL, NULL}, *pj0[2], *pd0[2];
    if (x->dh % 16 && (bld_children(b, stg[1], pj0, 2) != 1 || bld_children(b, pj0[0], pd0, 2) != 1 ||
                       !bld_split_padded(b, pd0[0], sv(16), NULL, NULL, &pad_k[0], &pad_k[1])))
        return false;
    /* the product stage: rescale and update apart */
    SLoop *od[2], *od1, *ou;
    if (bld_children(b, stg[ns - 1], od, 2) != 1)
        return false;
    bld_distribute(b, od[0], &od1);
    bld_distribute(b, stg[ns - 1], &ou);
    SBuf *Qs = bld_cache_squeezed(b, bld_buf(b, x->Q), fio, "shared", "f_Qs", true);
    SBuf *Ks = bld_cache_squeezed(b, bld_buf(b, x->K), jo, "shared", "f_Ks", true);
    SBuf *Vs = bld_cache_squeezed(b, bld_buf(b, x->V), jo, "shared", "f_Vs", true);
    /* a bias table the score stages read by row and key: a tile of it a key tile,
     * copied with K and V (a lane's fragment reads two elements, scattered across
     * rows in global memory) */
    SBuf *Bs[2] = {NULL, NULL};
    for (int i = 0; i < x->nsin; i++)
        Bs[i] = bld_cache_squeezed(b, bld_buf(b, x->sin[i]), jo, "shared", "f_Bs", true);
    bld_cache_squeezed(b, bld_buf(b, x->s), jo, NULL, "f_sacc", true);
    rules_attn_stage_tiles(b, x, jo);
    SBuf *pr = bld_cache_squeezed(b, bld_buf(b, x->p), jo, NULL, "f_pr", true);
    bld_cache_squeezed(b, bld_buf(b, x->m), fio, NULL, "f_mw", true);
    bld_cache_squeezed(b, bld_buf(b, x->l), fio, NULL, "f_lw", true);
    bld_cache_squeezed(b, bld_buf(b, x->ms), jo, NULL, "f_mc", true);
    bld_cache_squeezed(b, bld_buf(b, x->acc), fio, NULL, "f_oacc", true);
    bld_storage(b, pr, x->dt);
    /* one row loop a tile: the stages fused, the exponentials' sum into their loop */
    int pi = x->nscore + 4;
    SLoop *pj[2], *lj[2];
    if (bld_children(b, stg[pi], pj, 2) != 1 || bld_children(b, stg[pi + 1], lj, 2) != 1)
        return false;
    for (int i = 1; i < ns; i++) {
        bld_fuse(b, stg[0], stg[i]);
        if (i == pi + 1)
            bld_fuse(b, pj[0], lj[0]);
    }
    bld_fuse(b, stg[0], ou);
    int64_t wr = x->wg ? 64 : 32;   /* rows a warp (mma) or a warpgroup (wgmma) */
    SLoop *w, *r, *rs[32];
    bld_split_named(b, stg[0], sv(wr), "f_w", "f_r", &w, &r);
    bld_bind(b, w, "thread.y");
    int nr = bld_distribute_all(b, r, rs, 32);
    if (nr < 3)
        return false;
    /* the scores: the score product's row loop is the stage after the zeroing */
    SLoop *sj[2], *sd[2], *vj[2], *vd[2];
    if (bld_children(b, rs[0], sj, 2) != 1 || bld_children(b, sj[0], sd, 2) != 1 ||
        bld_children(b, rs[nr - 1], vj, 2) != 1 || bld_children(b, vj[0], vd, 2) != 1)
        return false;
    triple(b, rs[0], sj[0], sd[0], false, x->wg, pad_k[0] ? pad_k : NULL);
    triple(b, rs[nr - 1], vj[0], vd[0], true, x->wg, NULL);
    /* the per-row initialisations, the normalisation */
    SLoop *iw, *ir, *nw, *nr2;
    bld_fuse(b, fii, cp[0]);
    bld_fuse(b, fii, cp[1]);
    bld_split_named(b, fii, sv(wr), "f_iw", "f_ir", &iw, &ir);
    bld_bind(b, iw, "thread.y");
    SLoop *irs[4];
    bld_distribute_all(b, ir, irs, 4);
    bld_split_named(b, cp[3], sv(wr), "f_nw", "f_nr", &nw, &nr2);
    bld_bind(b, nw, "thread.y");
    int64_t nt = x->rb / wr * (x->wg ? 128 : 32);   /* threads a block */
    copy_map(b, Qs, x->wg, nt, 8);
    copy_map(b, Ks, x->wg, nt, 8);
    copy_map(b, Vs, x->wg, nt, 8);
    for (int i = 0; i < x->nsin; i++) { /* rows padded by 16 bytes: the fragment's 8 rows in distinct banks */
        copy_map(b, Bs[i], x->wg, nt, x->sin_w[i]);
        bld_padding(b, Bs[i], sv(x->sin_w[i]));
    }
    if (!x->wg) { /* ldmatrix rows in distinct banks; wgmma's operands are swizzled instead */
        bld_padding(b, Qs, sv(8));
        bld_padding(b, Ks, sv(8));
        bld_padding(b, Vs, sv(8));
    }
    bld_pipeline(b, jo, st, false);
    return rules_attn_grid(b, x, fio);
}

bool rules_attn_grid(Builder *b, const AttnCtx *x, SLoop *fio)
{
    /* more batch loops than the grid's two other axes: the outer ones collapsed
     * into one ([A, B, G, H, T, E] runs A*B*G blocks on one axis) */
    SLoop *bl[MAXB];
    int nb = x->nbatch;
    for (int i = 0; i < nb; i++)
        bl[i] = bld_loop(b, x->batch[i]);
    while (nb > GPU_MAXB) {
        SLoop *f;
        if (!bld_collapse(b, bl[0], bl[1], NULL, &f))
            return false;
        bl[0] = f;
        for (int i = 1; i + 1 < nb; i++)
            bl[i] = bl[i + 1];
        nb--;
    }
    /* Blocks start in the order of their linear index, x fastest.  Under a causal
     * mask the last row blocks run the most key tiles: their loop, reversed, goes
     * on z, so they start first and the short ones fill the tail (largest job
     * first; 7% at 4x16x2048x128 on an H100, docs/cuda.md). */
    static const char *const axes[GPU_MAXB] = {"block.z", "block.y"},
                             *const masked_axes[GPU_MAXB] = {"block.y", "block.x"};
    for (int i = 0; i < nb; i++)
        bld_bind(b, bl[i], (x->masked ? masked_axes : axes)[GPU_MAXB - nb + i]);
    return bld_bind(b, fio, x->masked ? "block.z" : "block.x");
}

bool rules_attn_read(const Kernel *u, AttnCtx *x, Arena *a)
{
    /* the contraction is the last nest with a sum */
    for (int t = u->body.n - 1; t >= 0; t--) {
        Node *jl = rules_find_sum_loop(u->body.v[t]);
        const Buffer *out = jl ? ir_last_written(u->body.v[t]) : NULL;
        if (!out)
            continue;
        memset(x, 0, sizeof *x);
        x->out = arena_strdup(a, out->name);
        x->j = arena_strdup(a, jl->u.loop.var->name);
        Kernel *c = ir_clone_kernel(u);
        x->norder = row_order(c->body.v[t], rules_find_sum_loop(c->body.v[t]), x->order, 8, &x->rowloop, a);
        if (x->norder) {
            SchedArg ro[8];
            for (int i = 0; i < x->norder; i++)
                ro[i] = nm(x->order[i]);
            if (!rules_try_apply(c, "reorder", ro, x->norder)) {
                ir_free(c);
                return false;
            }
        }
        /* the score's scale out of its sum, where one nest before the contraction has one */
        for (int s = 0; s < t && !x->score_sum; s++) {
            Node *sl = rules_find_sum_loop(c->body.v[s]);
            SchedArg fa[1] = {nm(sl ? sl->u.loop.var->name : "")};
            if (sl && rules_try_apply(c, "factor_out", fa, 1))
                x->score_sum = arena_strdup(a, fa[0].name);
        }
        SchedArg os[4] = {nm(x->out), nm(x->j), iv(64), {.kind = SARG_NAME, .key = "mask", .name = "inf"}};
        x->fuses = rules_try_apply(c, "online_softmax", os, 4);
        bool ok = x->fuses && read_fused(c, x, a);
        /* the scale of the scores into the exponentials where exp_scale proves it (one
         * multiplication a score fewer: 3-4% at 4x16x2048x128, docs/cuda.md); the
         * nest is read again, with one score stage fewer */
        SchedArg es[1] = {nm(ok && x->score_sum ? x->s : "")};
        if (ok && x->score_sum && rules_try_apply(c, "exp_scale", es, 1)) {
            x->exp_scale = true;
            ok = read_fused(c, x, a);
        }
        ir_free(c);
        return ok;
    }
    return false;
}

bool rules_attention(const TuneInput *in, const Kernel *u, const Target *target, Arena *a, TuneSpace *sp)
{
    if (!target_is_gpu(target))
        return false;
    AttnCtx *x = arena_alloc(a, sizeof *x);
    if (!rules_attn_read(u, x, a))
        return false;
    /* a few query rows a head (decoding): the chain spread over the keys first,
     * where flash attention's 128-row tiles would be mostly padding */
    AttnNames an = {x->out, x->s, x->m, x->p, x->l, x->Q, x->K, x->V, x->score_sum};
    int n0 = sp->n;
    rules_decode(in, u, &an, a, sp);
    /* tensor cores: 16-bit operands, head sizes a multiple of 8 (the score depth
     * padded to 16); anything else one query row a thread (tune/rules_attn_simt.c) */
    if ((x->dtype != DT_BF16 && x->dtype != DT_F16) || x->dh % 8 || !target->mma_sync || !target->cp_async) {
        rules_attention_simt(in, x, a, sp);
        return sp->n > n0;
    }
    if (target->wgmma && x->dh % 64 == 0 && x->dh <= 256) {
        AttnCtx *w = arena_alloc(a, sizeof *w);
        *w = *x;
        w->wg = true;
        rules_offer(in, gpu_flash_b, w, a, sp, "rules: GPU tensor cores, flash attention (wgmma)", true);
    }
    rules_offer(in, gpu_flash_b, x, a, sp, "rules: GPU tensor cores, flash attention (mma.sync)", true);
    return sp->n > n0;
}
