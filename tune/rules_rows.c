/* The GPU template for row-wise chains as users write them: RMSNorm, softmax over the
 * last dimension, layernorm, a row's sum then a scaling; every nest runs over the
 * same rows, and each either reduces a row (a sum, a maximum), computes one value a
 * row, or maps a row element for element.  Without it such a kernel got the default
 * mapping, one thread per row for the reductions: 8192 threads each walking a row of
 * 4096 elements, neighbouring threads 8 KB apart.
 *
 * The form is stdlib/softmax.pdl's and layernorm.pdl's hand-written GPU schedules,
 * read off the kernel instead of spelled for stdlib's names:
 *   - the nests' row loops (several collapsed into one) fused, a row a block
 *     (block.x);
 *   - every loop over a row's elements split by T threads (thread.x), the thread loop
 *     outside, so consecutive threads read consecutive elements and a reduction
 *     becomes a block-wide one (pass gpu-reduce);
 *   - the per-row values and the row temporaries staged in shared memory, and an
 *     input read by two or more nests staged once, by 16-byte copies, so the row is
 *     read from memory once.
 * T is the tuner's parameter (256, 512, 1024; at most the row's length).  Offered for
 * kernels of two or more nests with at least one row reduction and rows of 256
 * elements or more. */
#include <string.h>

#include "../ir/walk.h"
#include "rules_int.h"

enum { ROWS_MAX = 16, ROW_STAGE_BYTES = 96 * 1024 };

typedef struct RowsCtx {
    const NestInfo *n[ROWS_MAX];
    int nn;
    int k;                         /* row loops a nest opens with */
    int64_t C;                     /* the elements of a row */
    const char *stage[ROWS_MAX];   /* buffers staged at the row loop, in shared memory */
    const char *sname[ROWS_MAX];   /* ... their staged copies' names */
    bool vec[ROWS_MAX];            /* ... copied in by 16-byte vectors (an input) */
    int64_t w[ROWS_MAX];           /* ... of this many elements */
    int nstage;
} RowsCtx;

static bool rows_b(Builder *b, const void *vctx)
{
    const RowsCtx *c = vctx;
    static const int64_t threads[] = {256, 512, 1024};
    int nt = c->C >= 1024 ? 3 : c->C >= 512 ? 2 : 1;
    SVal T = bld_param(b, "T", threads, nt);
    /* one row loop a nest, then one for all */
    SLoop *row[ROWS_MAX];
    for (int t = 0; t < c->nn; t++) {
        row[t] = bld_loop(b, c->n[t]->loop[0]);
        for (int i = 1; i < c->k; i++)
            if (!bld_collapse(b, row[t], bld_loop(b, c->n[t]->loop[i]), t == 0 && i == c->k - 1 ? "f_row" : NULL,
                              &row[t]))
                return false;
    }
    for (int t = 1; t < c->nn; t++)
        if (!bld_fuse(b, row[0], row[t]))
            return false;
    for (int i = 0; i < c->nstage; i++) {
        SBuf *s = bld_cache_squeezed(b, bld_buf(b, c->stage[i]), row[0], "shared", c->sname[i], true);
        if (!s)
            return false;
        if (c->vec[i] && s->nnest >= 1 && s->rank[0] == 1) { /* the copy: 16 bytes a thread a step */
            SLoop *q, *v, *o, *th;
            bld_split(b, s->nest[0][0], sv(c->w[i]), &q, &v);
            bld_split(b, q, T, &o, &th);
            BLD_REORDER(b, th, o);
            bld_bind(b, th, "thread.x");
            bld_vectorize(b, v);
        }
    }
    /* each nest's loop over the row: T threads, the thread loop outside */
    for (int t = 0; t < c->nn; t++) {
        if (c->n[t]->nloops == c->k)
            continue;
        SLoop *o, *th;
        if (!bld_split(b, bld_loop(b, c->n[t]->loop[c->k]), T, &o, &th) || !BLD_REORDER(b, th, o) ||
            !bld_bind(b, th, "thread.x"))
            return false;
    }
    return bld_bind(b, row[0], "block.x");
}

/* Whether every load in e names every row variable: a row's own reduction (x * x,
 * a row's maximum), not a product with an operand shared by the rows (a
 * matrix-vector or matrix product, which the contraction templates take) */
static bool row_local(const Expr *e, const Var *const *rv, int k)
{
    if (e->kind == IE_LOAD) {
        for (int i = 0; i < k; i++) {
            bool uses = false;
            for (int d = 0; d < e->u.load.buf->rank; d++)
                uses |= ir_expr_uses_var(e->u.load.idx[d], rv[i]);
            if (!uses)
                return false;
        }
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        if (!row_local(e->args[i], rv, k))
            return false;
    return true;
}

/* How many nests read b */
static int readers(const Kernel *u, const Buffer *b)
{
    int n = 0;
    for (int i = 0; i < u->body.n; i++)
        n += ir_node_reads(u->body.v[i], b);
    return n;
}

bool rules_rows_gpu(const TuneInput *in, const Kernel *u, const NestInfo *const *infos, int nn, Arena *a,
                    TuneSpace *sp)
{
    if (nn < 2 || nn > ROWS_MAX || nn != u->body.n)
        return false;
    RowsCtx *c = arena_alloc(a, sizeof *c);
    memset(c, 0, sizeof *c);
    c->nn = nn;
    c->k = 16;
    for (int t = 0; t < nn; t++) {
        c->n[t] = infos[t];
        c->k = infos[t]->nspatial < c->k ? infos[t]->nspatial : c->k;
    }
    if (c->k < 1)
        return false;
    bool any_red = false;
    for (int t = 0; t < nn; t++) {
        const NestInfo *n = infos[t];
        for (int i = 0; i < c->k; i++)
            if (n->ext[i] != infos[0]->ext[i])
                return false;
        if (n->nloops == c->k)
            continue; /* one value a row */
        /* a row's elements: reduced into one value a row, or mapped */
        if (n->nloops != c->k + 1 || (n->red ? n->nspatial != c->k : n->nspatial != n->nloops) ||
            (c->C && n->ext[c->k] != c->C))
            return false;
        c->C = n->ext[c->k];
        any_red |= n->red;
        if (n->red) { /* the row loops' variables, outermost first */
            const Var *rv[16];
            const Node *l = u->body.v[t];
            for (int i = 0; i < c->k; i++, l = l->u.loop.body.v[0]) {
                if (l->kind != N_LOOP || l->u.loop.body.n < 1)
                    return false;
                rv[i] = l->u.loop.var;
            }
            const Node *r = rules_find_reduction(u->body.v[t]);
            if (!r || !row_local(r->u.stmt.value, rv, c->k))
                return false;
        }
    }
    if (!any_red || c->C < 256)
        return false;
    /* what the row loop stages: temporaries (a value a row, or a row), and inputs of a
     * row's length read by two nests or more, within the budget of shared memory */
    int64_t bytes = 0;
    for (int i = 0; i < u->nbufs && c->nstage < ROWS_MAX; i++) {
        const Buffer *b = u->bufs[i];
        bool temp = b->kind == BUF_TEMP && (b->rank == c->k || b->rank == c->k + 1);
        bool input = b->kind == BUF_IN && b->rank == c->k + 1 && !b->has_pad && readers(u, b) >= 2;
        int64_t sz = b->rank == c->k ? dtype_bytes(b->dtype) : c->C * dtype_bytes(b->dtype);
        if (!(temp || input) || bytes + sz > ROW_STAGE_BYTES)
            continue;
        bytes += sz;
        c->vec[c->nstage] = input && (c->C * dtype_bytes(b->dtype)) % 16 == 0;
        c->w[c->nstage] = 16 / dtype_bytes(b->dtype);
        c->sname[c->nstage] = arena_printf(a, "f_%s", b->name);
        c->stage[c->nstage++] = b->name;
    }
    int n0 = sp->n;
    rules_offer(in, rows_b, c, a, sp, "rules: GPU rows, a row a block (row reductions block-wide)", false);
    return sp->n > n0;
}
