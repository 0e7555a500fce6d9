/* The GPU template for decoding attention: the softmax-then-product chain with few
 * query rows per head (one, as a language model decodes, or a handful) against a long
 * list of keys.  Flash attention's 128-row tiles would be almost all padding there,
 * and the work is a pass over K and V, memory-bound, so this template keeps the
 * chain's nests apart and spreads each over the keys instead:
 *
 *   scores   a block per (head, 128 keys), the head's rows inside: the key tile and
 *            the rows of Q staged in shared memory by 16-byte copies, a thread per
 *            key runs its dot product from there 8 elements a load;
 *   softmax  the maximum, the exponentials and their sum fused per row, a thread
 *            loop over the keys with block-wide reductions;
 *   product  split over the keys (split-K: rfactor with expand=1): a block per
 *            (head, chunk of keys), a thread per output column, V and the
 *            exponentials streamed through shared memory in a cp.async pipeline; a
 *            last nest adds the chunks' partials and divides by the sum (factor_out
 *            moved the division there).
 *
 * Grouped-query heads (K and V indexed by `h / G`) split the head loop by G so a
 * group's heads share each tile of their K/V head.  K and V are read once per K/V
 * head; the scores and exponentials (rows x keys f32) are small beside them.
 * Measured against SDPA in docs/benchmarks.md.
 *
 * It reads the lowered nests, not the fused one: the five nests in order (scores,
 * maximum, exponentials, sum, product), each a perfect chain of batch loops, the
 * row loop and the key or column loop; anything else (a bias stage of its own, a
 * score nest with another shape) is not offered, and flash attention stays. */
#include <string.h>

#include "../ir/walk.h"
#include "rules_int.h"

enum { DMAXB = 4, DCHAIN = DMAXB + 2 };

typedef struct DecCtx {
    const char *s[DCHAIN], *m[DCHAIN], *p[DCHAIN], *l[DCHAIN], *o[DCHAIN];
    const char *mj, *lj;       /* the key loops of the maximum and the sum */
    int nb;                    /* batch loops (before the row loop) */
    const char *score_sum;     /* the score's sum loop, factor_out applies to it; else NULL */
    const char *osum;          /* the product's sum loop */
    bool ofactor;              /* factor_out applies to the product's sum (the division by the sum) */
    const char *Q, *K, *V, *P; /* the tensors staged: the operands, the exponentials */
    const char *sdot;          /* the score's sum loop (the dot product) */
    int64_t cols;              /* the output column loop's extent: a thread each */
    int sm_threads;            /* threads of the softmax block */
    int group;                 /* grouped-query heads: query heads a K/V head serves (1: none) */
} DecCtx;

/* The perfect chain of loops from n (each but the last holds one loop and nothing
 * else): their names, their number; *last the chain's last loop. */
static int chain(Node *n, const char **names, int cap, Node **last)
{
    int k = 0;
    *last = NULL;
    while (n && n->kind == N_LOOP && k < cap) {
        names[k++] = n->u.loop.var->name;
        *last = n;
        NodeList *b = &n->u.loop.body;
        n = b->n == 1 ? b->v[0] : NULL;
    }
    return k;
}

/* ---------------- the template ---------------- */

/* The batch loops and the row loop of one nest onto at most two grid axes (the
 * innermost ones folded together by collapse into `fold`), from the axes given,
 * innermost first. */
static void bind_rows(Builder *b, const char *const *names, int n, const char *const fold[DMAXB], const char *inner_axis,
                      const char *outer_axis)
{
    SLoop *l[DCHAIN];
    int k = 0;
    for (int i = 0; i < n; i++)
        l[k++] = bld_loop(b, names[i]);
    for (int f = 0; k > 2; f++, k--) {
        SLoop *c;
        bld_collapse(b, l[k - 2], l[k - 1], fold[f], &c);
        l[k - 2] = c;
    }
    if (k == 2)
        bld_bind(b, l[0], outer_axis);
    if (k >= 1)
        bld_bind(b, l[k - 1], inner_axis);
}

/* A staged tile's copy by 16-byte vectors (`lanes` elements) over `threads`
 * threads: rows x chunks collapsed; the new loops named nm: chunk, lane, collapsed,
 * outer, thread. */
static void copy_map(Builder *b, SBuf *S, int lanes, SVal threads, const char *const nm[5])
{
    if (!S || S->nnest < 1 || S->rank[0] < 2)
        return;
    /* the last two dimensions; any before them (a group's heads) stay serial loops */
    int r = S->rank[0];
    SLoop *c, *v, *f, *o, *t;
    bld_split_named(b, S->nest[0][r - 1], sv(lanes), nm[0], nm[1], &c, &v);
    bld_collapse(b, S->nest[0][r - 2], c, nm[2], &f);
    bld_split_named(b, f, threads, nm[3], nm[4], &o, &t);
    bld_bind(b, t, "thread.x");
    bld_vectorize(b, v);
    bld_unroll(b, o);
}

static bool gpu_decode_b(Builder *b, const void *vctx)
{
    const DecCtx *x = vctx;
    const int nr = x->nb + 1; /* batch loops and the row loop */
    /* the tuner's parameters: keys a score block, keys a product block */
    static const int64_t score_tiles[] = {128, 256}, chunks[] = {256, 512, 128};
    SVal kt = bld_param(b, "kt", score_tiles, 2), kc = bld_param(b, "kc", chunks, 3);

    /* scores: a block per row and key tile, a thread per key */
    if (x->score_sum)
        bld_factor_out(b, bld_loop(b, x->score_sum));
    SLoop *sjo, *sjt;
    /* grouped-query heads: the heads of a group read one K/V head, so they share
     * its tiles (the head loop split by the group, the group's heads inside) */
    SLoop *shk = NULL, *shg = NULL;
    int nsb = x->nb;
    if (x->group > 1 && !bld_split_named(b, bld_loop(b, x->s[x->nb - 1]), sv(x->group), "d_shk", "d_shg", &shk, &shg))
        return false;
    bld_split_padded(b, bld_loop(b, x->s[nr]), kt, "d_sjo", "d_sjt", &sjo, &sjt);
    /* the rows of a head share the key tile: inside it */
    if (shg)
        BLD_REORDER(b, sjo, shg, bld_loop(b, x->s[nr - 1]));
    else
        BLD_REORDER(b, sjo, bld_loop(b, x->s[nr - 1]));
    SBuf *Ks = bld_cache_squeezed(b, bld_buf(b, x->K), sjo, "shared", "d_Ks", true);
    copy_map(b, Ks, 8, kt, (const char *const[5]){"d_kc", "d_kv", "d_kf", "d_ko", "d_kt"});
    bld_padding(b, Ks, sv(8));
    /* the head's query rows too: read by every thread, they would otherwise be
     * global loads on the dot product's path (measured: 0.2145 -> 0.2091 ms on the
     * H100's 8 x 16 x 1 x 8192 x 128 decode, and the 5000-key one 0.238 -> 0.149) */
    SBuf *Qs = bld_cache_squeezed(b, bld_buf(b, x->Q), sjo, "shared", "d_Qs", true);
    copy_map(b, Qs, 8, kt, (const char *const[5]){"d_qc", "d_qv", "d_qf", "d_qo", "d_qt"});
    bld_bind(b, sjt, "thread.x");
    /* the dot product eight elements at a time: 16-byte loads of both operands */
    SLoop *sdo, *sdv;
    bld_split_named(b, bld_loop(b, x->sdot), sv(8), "d_sdo", "d_sdv", &sdo, &sdv);
    bld_rfactor(b, sdv);
    bld_vectorize(b, sdv);
    const char *sb[DCHAIN];
    for (int i = 0; i < nsb; i++)
        sb[i] = x->s[i];
    if (shk)
        sb[nsb - 1] = shk->name;
    bind_rows(b, sb, nsb, (const char *const[DMAXB]){"d_srow", "d_srow1", "d_srow2", "d_srow3"}, "block.y",
              "block.z");
    bld_bind(b, sjo, "block.x");

    /* softmax: one block a row, the three nests fused, the sum into the exponentials' loop */
    for (int i = 0; i < nr; i++)
        bld_fuse(b, bld_loop(b, x->m[i]), bld_loop(b, x->p[i]));
    for (int i = 0; i < nr; i++)
        bld_fuse(b, bld_loop(b, x->m[i]), bld_loop(b, x->l[i]));
    bld_fuse(b, bld_loop(b, x->p[nr]), bld_loop(b, x->lj));
    SLoop *mo, *mt, *po, *pt;
    bld_split_named(b, bld_loop(b, x->mj), sv(x->sm_threads), "d_mo", "d_mt", &mo, &mt);
    BLD_REORDER(b, mt, mo);
    bld_split_named(b, bld_loop(b, x->p[nr]), sv(x->sm_threads), "d_po", "d_pt", &po, &pt);
    BLD_REORDER(b, pt, po);
    bld_bind(b, mt, "thread.x");
    bld_bind(b, pt, "thread.x");
    bind_rows(b, x->m, nr, (const char *const[DMAXB]){"d_mrow", "d_mrow1", "d_mrow2", "d_mrow3"}, "block.x", "block.y");

    /* the product, split over the keys into planes of partial sums */
    if (x->ofactor)
        bld_factor_out(b, bld_loop(b, x->osum));
    SLoop *oz, *orr, *zi, *zc;
    bld_split_padded(b, bld_loop(b, x->osum), kc, "d_oz", "d_or", &oz, &orr);
    SBuf *P = bld_rfactor_expanded(b, oz, "d_part", &zi, &zc);
    if (!P)
        return false;
    bld_fuse(b, zi, oz);
    /* every level's body: the initialisation, the planes, the combination, the rest */
    SLoop *cp[DCHAIN][8];
    int ncp[DCHAIN];
    for (int i = nr; i >= 0; i--)
        ncp[i] = bld_distribute_all(b, bld_loop(b, x->o[i]), cp[i], 8);
    for (int i = 0; i <= nr; i++) {
        if (ncp[i] < 2 || ncp[i] != ncp[nr])
            return false;
        for (int e = 1; e < ncp[i]; e++)
            bld_fuse(b, bld_loop(b, x->o[i]), cp[i][e]);
    }
    /* the planes: a block per row and chunk, a thread per column, V through shared memory */
    SLoop *ot, *oi, *pd2, *pr2, *phk = NULL, *phg = NULL, *phg2 = NULL;
    if (x->group > 1 && !bld_split_named(b, cp[x->nb - 1][0], sv(x->group), "d_phk", "d_phg", &phk, &phg))
        return false;
    if (phg)
        BLD_REORDER(b, zi, phg, cp[nr - 1][0], cp[nr][0]);
    else
        BLD_REORDER(b, zi, cp[nr - 1][0], cp[nr][0]);
    bld_split_named(b, orr, sv(64), "d_ot", "d_oi", &ot, &oi);
    bld_distribute(b, cp[nr][0], &pd2);
    bld_distribute(b, cp[nr - 1][0], &pr2);
    if (phg)
        bld_distribute(b, phg, &phg2);
    /* the rows of a head (and the heads of a group) share the V tile: inside it */
    if (phg2)
        BLD_REORDER(b, ot, phg2, pr2, pd2);
    else
        BLD_REORDER(b, ot, pr2, pd2);
    SBuf *Vs = bld_cache_squeezed(b, bld_buf(b, x->V), ot, "shared", "d_Vs", true);
    copy_map(b, Vs, 8, sv(x->cols), (const char *const[5]){"d_vc", "d_vv", "d_vf", "d_vo", "d_vt"});
    /* the exponentials of the tile too, in the same pipeline: read by every
     * thread, from global memory they stalled the block at each new line (the
     * product 130 -> 94 us, 63% -> 87% of the memory's bandwidth, measured) */
    SBuf *Ps = bld_cache_squeezed(b, bld_buf(b, x->P), ot, "shared", "d_ps", true);
    copy_map(b, Ps, 4, sv(x->cols), (const char *const[5]){"d_pc", "d_pv", "d_pf", "d_po2", "d_pt2"});
    bld_bind(b, cp[nr][0], "thread.x");
    bld_bind(b, pd2, "thread.x");
    const char *pr[DCHAIN];
    for (int i = 0; i < nr; i++)
        pr[i] = cp[i][0]->name;
    if (phk)
        pr[x->nb - 1] = phk->name;
    bind_rows(b, pr, x->nb, (const char *const[DMAXB]){"d_prow", "d_prow1", "d_prow2", "d_prow3"}, "block.y",
              "block.z");
    bld_bind(b, zi, "block.x");
    static const int64_t three[] = {3};
    bld_pipeline(b, ot, bld_param(b, "st", three, 1), false);
    /* the combination: a block per row, a thread per column */
    bld_bind(b, bld_loop(b, x->o[nr]), "thread.x");
    bind_rows(b, x->o, nr, (const char *const[DMAXB]){"d_crow", "d_crow1", "d_crow2", "d_crow3"}, "block.x", "block.y");
    return true;
}

/* ---------------- reading the kernel ---------------- */

/* The first load of buffer `name` in the statements under n, or NULL. */
static const Expr *load_of(const Expr *e, const char *name)
{
    if (!e)
        return NULL;
    if (e->kind == IE_LOAD)
        return strcmp(e->u.load.buf->name, name) ? NULL : e;
    for (int i = 0; i < ir_expr_arity(e->kind); i++) {
        const Expr *x = load_of(e->args[i], name);
        if (x)
            return x;
    }
    return NULL;
}

static const Expr *load_in(Node *n, const char *name)
{
    if (n->kind == N_STMT)
        return load_of(n->u.stmt.value, name);
    NodeList *b = ir_body(n);
    for (int i = 0; b && i < b->n; i++) {
        const Expr *x = load_in(b->v[i], name);
        if (x)
            return x;
    }
    return NULL;
}

/* Grouped-query heads: G when the tensor's load in nest n indexes a dimension by
 * `head / E`, head the variable of loop `head` and E a size of value G > 1 that
 * divides the head loop's extent; 1 otherwise. */
static int64_t head_group(const Kernel *u, Node *n, const char *tensor, const char *head)
{
    const Expr *ld = load_in(n, tensor);
    if (!ld)
        return 1;
    for (int d = 0; d < ld->u.load.buf->rank; d++) {
        const Expr *e = ld->u.load.idx[d];
        int64_t g;
        if (e->kind == IE_DIV && e->args[0]->kind == IE_VAR && !strcmp(e->args[0]->u.var->name, head) &&
            ir_eval_size(u, e->args[1], &g) && g > 1)
            return g;
    }
    return 1;
}

/* The loop in a row loop's body after the initialisation: a reduction's key loop. */
static const char *key_loop(Node *row)
{
    NodeList *b = row ? &row->u.loop.body : NULL;
    return b && b->n == 2 && b->v[1]->kind == N_LOOP ? b->v[1]->u.loop.var->name : NULL;
}

static bool read_decode(const Kernel *u, const AttnNames *an, DecCtx *x, Arena *a)
{
    memset(x, 0, sizeof *x);
    const char *want[5] = {an->s, an->m, an->p, an->l, an->out};
    const char **dst[5] = {x->s, x->m, x->p, x->l, x->o};
    Node *nests[5], *last[5];
    int len[5], t0 = -1;
    for (int t = 0; t < u->body.n && t0 < 0; t++) {
        const Buffer *w = ir_last_written(u->body.v[t]);
        if (w && !strcmp(w->name, an->s))
            t0 = t;
    }
    if (t0 < 0 || t0 + 5 != u->body.n)
        return false; /* other nests in the chain or after it: not this template */
    for (int i = 0; i < 5; i++) {
        nests[i] = u->body.v[t0 + i];
        const Buffer *w = ir_last_written(nests[i]);
        if (!w || strcmp(w->name, want[i]))
            return false;
        len[i] = chain(nests[i], dst[i], DCHAIN, &last[i]);
    }
    x->nb = len[1] - 1;
    int nr = x->nb + 1;
    if (x->nb < 0 || x->nb > DMAXB || len[0] != nr + 1 || len[2] != nr + 1 || len[3] != nr || len[4] != nr + 1)
        return false;
    /* the key loop of the scores, the column loop of the product */
    int64_t keys, cols, rows;
    if (!rules_const_extent(u, last[0], &keys) || !rules_const_extent(u, last[4], &cols) || !rules_const_extent(u, last[1], &rows))
        return false;
    /* decoding: a few query rows a head (the row loop is the maximum's last), where
     * flash attention's 128-row tiles would be mostly padding */
    if (rows > 64)
        return false;
    /* a thread a column (a multiple of the warp, at most a block of 1024), 16-byte
     * rows of K and V, keys enough for the softmax's warps */
    if (cols % 32 || cols > 1024 || keys < 32)
        return false;
    Node *ss = rules_find_sum_loop(last[0]), *os = rules_find_sum_loop(last[4]);
    x->mj = key_loop(last[1]);
    x->lj = key_loop(last[3]);
    int64_t dot;
    if (!ss || !os || !x->mj || !x->lj || !rules_const_extent(u, ss, &dot) || dot % 8)
        return false;
    /* the names outlive u: the template runs on fresh copies during the search */
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < len[i]; j++)
            dst[i][j] = arena_strdup(a, dst[i][j]);
    x->mj = arena_strdup(a, x->mj);
    x->lj = arena_strdup(a, x->lj);
    x->score_sum = an->score_sum && !strcmp(an->score_sum, ss->u.loop.var->name) ? an->score_sum : NULL;
    x->osum = arena_strdup(a, os->u.loop.var->name);
    x->ofactor = rules_factor_out_applies(u, x->osum);
    x->Q = an->Q;
    x->K = an->K;
    x->V = an->V;
    x->P = an->p;
    x->sdot = arena_strdup(a, ss->u.loop.var->name);
    x->cols = cols;
    int th = 32;
    while (th * 2 <= 1024 && th * 2 <= keys)
        th *= 2;
    x->sm_threads = th;
    /* grouped-query heads: the same group in K's load and in V's, dividing the heads */
    x->group = 1;
    if (x->nb >= 1) {
        int64_t g = head_group(u, nests[0], an->K, x->s[x->nb - 1]);
        int64_t gv = head_group(u, nests[4], an->V, x->o[x->nb - 1]);
        int64_t heads;
        Node *hl = NULL;
        const char *nm[DCHAIN];
        chain(nests[0], nm, x->nb, &hl);
        if (g > 1 && g == gv && g <= 16 && hl && rules_const_extent(u, hl, &heads) && heads % g == 0)
            x->group = (int)g;
    }
    return true;
}

void rules_decode(const TuneInput *in, const Kernel *u, const AttnNames *an, Arena *a, TuneSpace *sp)
{
    DecCtx *x = arena_alloc(a, sizeof *x);
    if (!read_decode(u, an, x, a))
        return;
    rules_offer(in, gpu_decode_b, x, a, sp, "rules: GPU attention decoding, split over the keys", false);
}
