/* GPU target lowering, the per-row part of pass `gpu-mma` (run by passes/gpu_mma.c
 * once an mma launch's lane pairs are marked): vectors with one value per row of
 * an accumulator, kept in the lanes that hold the row.
 *
 * Flash attention keeps a running maximum and a running sum per query row beside
 * the warp's scores and output in fragment layout.  A lane holds rows lane / 4 and
 * lane / 4 + 8 of every 16, so a 1-D local buffer indexed by the accumulator's row
 * can live in the same lanes: row r in register r / 8 of each lane with lane / 4 ==
 * r % 8 (layout `mma-rows`, two registers per 16 rows).  The pass gives a buffer
 * that layout when every access of it names the row of a lane loop:
 *   - inside a lane pair, by the pair's row variable (base a multiple of 8); an
 *     update `v[r] op= f(acc[r, c])` in the column loop (an index without the
 *     column) is a quad reduction (`quad-reduce`): each lane folds the columns it
 *     holds, the four lanes of the row combine theirs with two shuffles;
 *   - in a row loop of its own over such vectors (`quad-rows`): each lane runs the
 *     rows it holds, the four lanes of a quad alike.
 * A vector accessed both that way and elsewhere would hold stale rows in some lanes,
 * so that is refused, as are an `=` of a row vector inside a column loop (the lanes
 * would disagree on which column wrote last), a reduction over the rows (a row loop
 * inside the column loop), and a row loop over vectors that stores anything else.
 *
 * A warpgroup's accumulator (wgmma) spreads the same way per 64 rows, warp w of
 * the four holding rows 16 w to 16 w + 15 of each: there the vectors' row bases and
 * row loops come in multiples of 64, so that every access names a row in the warp
 * and register that hold it.
 *
 * Legal because the spreading runs every iteration once in the lane that holds the
 * element, plus identical copies in the other lanes of the quad; a quad reduction
 * reassociates the update's operator, as every reduction may. */
#include <stdlib.h>
#include <string.h>

#include "gpu_int.h"
#include "../ir/walk.h"

typedef struct Rows {
    Kernel *k;
    int64_t g;                 /* rows a lane loop steps over: 8 (mma), 64 (wgmma) */
    Diags *d;
    bool ok;
    uint8_t *spread, *plain;   /* per buffer: accesses by a lane loop's row, and others */
    uint8_t *wrote;            /* ... stores by a lane loop's row */
    uint8_t *seed;             /* buffers a pair stores by its row: the vectors to place */
    Span *where;               /* a plain access, for the message */
} Rows;

static bool candidate(const Buffer *b)
{
    return b->kind == BUF_TEMP && b->mem == MEM_LOCAL && b->rank == 1 && dtype_is_float(b->dtype) &&
           b->layout == LAYOUT_PLAIN;
}

/* idx is base + v, v's coefficient 1, base a multiple of r->g not naming the column. */
static bool row_index(const Rows *r, const Expr *x, const Var *v, const Var *col)
{
    int64_t co;
    return v && gpu_has_var(r->k, x, v, &co) && co == 1 && !(col && ir_expr_uses_var(x, col)) &&
           gpu_mult_of(r->k, gpu_at_zero(r->k, x, v), r->g);
}

static bool is_pair(const Node *n)
{
    return n->kind == N_LOOP && (n->u.loop.hint == HINT_LANE_ROWS || n->u.loop.hint == HINT_LANE_COLS);
}

static bool touches_candidate(Rows *r, const Expr *x, const Var *v)
{
    if (!x) return false;
    if (x->kind == IE_LOAD) {
        if (r->seed[x->u.load.buf->id] && row_index(r, x->u.load.idx[0], v, NULL)) return true;
        for (int i = 0; i < x->u.load.buf->rank; i++)
            if (touches_candidate(r, x->u.load.idx[i], v)) return true;
        return false;
    }
    for (int i = 0; i < ir_expr_arity(x->kind); i++)
        if (touches_candidate(r, x->args[i], v)) return true;
    return false;
}

/* Row loops of their own: statements only, from 0 by a multiple of 8, reaching a
 * vector a pair updates (a seed) by the loop's variable; outside pairs, groups and
 * thread.x loops. */
static void mark_quads(Rows *r, Node *n, bool under_tx)
{
    if (n->kind != N_LOOP && n->kind != N_IF) return;
    if (n->kind == N_LOOP) {
        LoopKind lk = n->u.loop.kind;
        if (is_pair(n) || n->u.loop.tc || lk == LOOP_MMA || lk == LOOP_WGMMA) return;
        if (lk == LOOP_THREAD_X) under_tx = true;
        int64_t lo, ext;
        bool stmts = n->u.loop.body.n > 0, hit = false;
        for (int i = 0; i < n->u.loop.body.n && stmts; i++) {
            const Node *s = n->u.loop.body.v[i];
            stmts = s->kind == N_STMT;
            if (stmts)
                hit |= (r->seed[s->u.stmt.buf->id] && row_index(r, s->u.stmt.idx[0], n->u.loop.var, NULL)) ||
                       touches_candidate(r, s->u.stmt.value, n->u.loop.var);
        }
        if (!under_tx && stmts && hit && (lk == LOOP_SERIAL || lk == LOOP_UNROLL) && n->u.loop.hint == HINT_NONE &&
            gpu_loop_extent(r->k, n, &lo, &ext) && lo == 0 && ext % r->g == 0 && ext > 0) {
            n->u.loop.hint = HINT_QUAD_ROWS;
            return;
        }
    }
    NodeList *b = ir_body(n);
    for (int i = 0; b && i < b->n; i++) mark_quads(r, b->v[i], under_tx);
}

static void note(Rows *r, const Buffer *b, Expr *const *idx, const Var *row, const Var *col, Span sp, bool w)
{
    if (!candidate(b)) return;
    if (row_index(r, idx[0], row, col)) {
        r->spread[b->id] = 1;
        r->wrote[b->id] |= w;
    } else if (!r->plain[b->id]) {
        r->plain[b->id] = 1;
        r->where[b->id] = sp;
    }
}

static void note_expr(Rows *r, const Expr *x, const Var *row, const Var *col, Span sp)
{
    if (!x) return;
    if (x->kind == IE_LOAD) {
        note(r, x->u.load.buf, x->u.load.idx, row, col, sp, false);
        for (int i = 0; i < x->u.load.buf->rank; i++) note_expr(r, x->u.load.idx[i], row, col, sp);
        return;
    }
    for (int i = 0; i < ir_expr_arity(x->kind); i++) note_expr(r, x->args[i], row, col, sp);
}

/* The row and column variables in force at n (a pair's, a quad loop's). */
static void classify(Rows *r, const Node *n, const Var *row, const Var *col)
{
    if (n->kind == N_STMT) {
        note(r, n->u.stmt.buf, n->u.stmt.idx, row, col, n->span, true);
        note_expr(r, n->u.stmt.value, row, col, n->span);
        for (int i = 0; i < n->u.stmt.buf->rank; i++) note_expr(r, n->u.stmt.idx[i], row, col, n->span);
        return;
    }
    if (n->kind == N_LOOP) {
        if (n->u.loop.tc || n->u.loop.kind == LOOP_MMA || n->u.loop.kind == LOOP_WGMMA) return;
        if (is_pair(n)) {
            const Node *m = n->u.loop.body.v[0];
            bool q0 = n->u.loop.hint == HINT_LANE_ROWS;
            row = q0 ? n->u.loop.var : m->u.loop.var;
            col = q0 ? m->u.loop.var : n->u.loop.var;
            for (int i = 0; i < m->u.loop.body.n; i++) classify(r, m->u.loop.body.v[i], row, col);
            return;
        }
        if (n->u.loop.hint == HINT_QUAD_ROWS) row = n->u.loop.var, col = NULL;
    }
    const NodeList *b = ir_body((Node *)n);
    for (int i = 0; b && i < b->n; i++) classify(r, b->v[i], row, col);
}

/* Updates of row vectors inside pairs become quad reductions; row loops of their
 * own store nothing but row vectors. */
static void check_updates(Rows *r, Node *n)
{
    if (!r->ok || n->kind == N_STMT) return;
    if (n->kind == N_LOOP && (n->u.loop.tc || n->u.loop.kind == LOOP_MMA || n->u.loop.kind == LOOP_WGMMA)) return;
    if (n->kind == N_LOOP && n->u.loop.hint == HINT_QUAD_ROWS) {
        for (int i = 0; i < n->u.loop.body.n; i++) {
            const Node *s = n->u.loop.body.v[i];
            if (s->u.stmt.buf->layout != LAYOUT_MMA_ROWS) {
                diag_error(r->d, s->span, "row loop %s runs in the lanes that hold each row of the mma accumulator "
                           "(its per-row vectors are there), so it may store only per-row vectors, not %s",
                           n->u.loop.var->name, s->u.stmt.buf->name);
                r->ok = false;
                return;
            }
        }
        return;
    }
    if (n->kind == N_LOOP && is_pair(n)) {
        Node *m = n->u.loop.body.v[0];
        bool q0 = n->u.loop.hint == HINT_LANE_ROWS;
        for (int i = 0; i < m->u.loop.body.n && r->ok; i++) {
            Node *s = m->u.loop.body.v[i];
            if (s->kind != N_STMT || s->u.stmt.buf->layout != LAYOUT_MMA_ROWS) continue;
            const Buffer *b = s->u.stmt.buf;
            StmtOp op = s->u.stmt.op;
            bool alone = !ir_expr_reads(s->u.stmt.value, b);
            for (int j = 0; j < m->u.loop.body.n && alone; j++) {
                const Node *o = m->u.loop.body.v[j];
                if (j != i && o->kind == N_STMT)
                    alone = o->u.stmt.buf != b && !ir_expr_reads(o->u.stmt.value, b);
            }
            if (!q0 || op == SOP_ASSIGN || !alone || !dtype_is_float(b->dtype)) {
                diag_error(r->d, s->span, "%s, one value per row of the mma accumulator, is updated inside the "
                           "column loop %s: only a reduction (`+= *= max= min=`) with the row loop outside the "
                           "column loop, and no other statement of the loop touching %s, can be combined across "
                           "the four lanes that hold a row", b->name, m->u.loop.var->name, b->name);
                r->ok = false;
                return;
            }
            s->u.stmt.lane_reduce = true;
        }
        return;
    }
    NodeList *b = ir_body(n);
    for (int i = 0; b && i < b->n; i++) check_updates(r, b->v[i]);
}

bool gpu_mma_rows(Kernel *k, Node *top, bool wg, Diags *d)
{
    Rows r = {.k = k, .g = wg ? 64 : 8, .d = d, .ok = true};
    int nb = k->nbufs;
    r.spread = xcalloc((size_t)nb * 4 + 1, 1);
    r.plain = r.spread + nb;
    r.wrote = r.plain + nb;
    r.seed = r.wrote + nb;
    r.where = xcalloc((size_t)nb + 1, sizeof *r.where);
    /* the vectors pairs update by their rows; none: the launch has no row vectors
     * (a buffer lanes only read, each holding all of it, stays as it is) */
    classify(&r, top, NULL, NULL);
    bool any = false;
    for (int i = 0; i < nb; i++) any |= r.seed[i] = r.wrote[i];
    if (any) {
        memset(r.spread, 0, (size_t)nb * 3);
        mark_quads(&r, top, false);
        classify(&r, top, NULL, NULL);
    }
    for (int i = 0; i < nb && r.ok && any; i++) {
        Buffer *b = k->bufs[i];
        if (!r.wrote[i]) continue;
        int64_t R = 0;
        if (r.plain[i]) {
            diag_error(d, r.where[i], "%s is indexed by the rows of an mma accumulator in the loops the lanes run "
                       "(one value per row, kept in the lanes that hold the row), and accessed here otherwise, "
                       "where a lane would see rows it does not keep", b->name);
            r.ok = false;
        } else if (!gpu_cval(k, b->shape[0], &R) || R % r.g) {
            diag_error(d, b->span, "%s, one value per row of a tensor-core accumulator, must have a multiple of "
                       "%lld rows per %s", b->name, (long long)r.g, wg ? "warpgroup" : "warp");
            r.ok = false;
        } else {
            b->layout = LAYOUT_MMA_ROWS;
        }
    }
    if (r.ok && any) check_updates(&r, top);
    free(r.spread);
    free(r.where);
    return r.ok;
}
