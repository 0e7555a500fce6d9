/* GPU target lowering, pass `gpu-scan`: block-wide scans of unscheduled scans.
 *
 * Lowering writes a scan (docs/language.md "Scans") as one running value per row:
 *     for r:  acc[r] = identity
 *             for c:  acc[r] op= v(r, c);  Y[r, c] = acc[r]
 * (a 1-D scan has no r, and its `acc = identity` is the launch before).  gpu-map
 * would run one thread per row, serially along c: for a row-major Y that leaves a
 * warp's threads reading 32 different rows at once, and a single row runs on one
 * thread.  When c moves Y's last (contiguous) dimension and the row holds at least
 * 32 elements, this pass gives each row a block instead:
 *     for r block.x:                      (the rows: block.x, .y, .z; a 1-D scan a
 *       acc = identity                     one-block loop)
 *       for o in 0..NT:                   (tiles of T*K elements, in order)
 *         for t in 0..T thread.x:         (T threads, a multiple of 32)
 *           for j in 0..K unroll:         (K consecutive elements per thread)
 *             if c < C:                   (c = (o*T + t)*K + j; only when T*K*NT != C)
 *               acc op= v(r, c)   block-scan
 *               Y[r, c] = acc
 * acc becomes one local value (a register of every thread of the block).  The
 * serial meaning is the scan itself: (o, t, j) runs c upwards, so the interpreter
 * gives the same bits before and after.  codegen/cuda translates the thread.x loop
 * holding a `block-scan` statement as: each thread folds its K values, a block-wide
 * exclusive scan of the threads' totals (warp shuffles, then the warps' totals
 * through shared memory), then each thread stores acc (the carry from earlier
 * tiles) op its exclusive prefix op its own running values, and every thread adds
 * the block's total to its acc.  That reassociates the scan's operator, which
 * docs/schedules.md allows for every reduction (+ and * to rounding; max and min,
 * and integers, exactly).
 *
 * Scans along a non-contiguous dimension (a running maximum down the rows) keep
 * gpu-map's mapping: one thread per column reads a row's columns together. */
#include <string.h>

#include "gpu_int.h"

#define SCAN_MIN_ROW 32

typedef struct ScanUse {
    int writes, reads;
} ScanUse;

static void use_expr(const Expr *x, const Buffer *b, ScanUse *u)
{
    if (!x) return;
    if (x->kind == IE_LOAD) {
        if (x->u.load.buf == b) u->reads++;
        for (int i = 0; i < x->u.load.buf->rank; i++) use_expr(x->u.load.idx[i], b, u);
        return;
    }
    for (int i = 0; i < ir_expr_arity(x->kind); i++) use_expr(x->args[i], b, u);
}

/* How often the kernel writes and reads buffer b. */
static void use_node(const Node *n, const Buffer *b, ScanUse *u)
{
    switch (n->kind) {
    case N_STMT:
        if (n->u.stmt.buf == b) u->writes++;
        for (int i = 0; i < n->u.stmt.buf->rank; i++) use_expr(n->u.stmt.idx[i], b, u);
        use_expr(n->u.stmt.value, b, u);
        return;
    case N_LOOP: use_expr(n->u.loop.lo, b, u); use_expr(n->u.loop.hi, b, u); break;
    case N_IF: use_expr(n->u.guard.cond, b, u); break;
    case N_PREFETCH: return;
    }
    const NodeList *body = ir_body((Node *)n);
    for (int i = 0; body && i < body->n; i++) use_node(body->v[i], b, u);
    const NodeList *els = ir_else((Node *)n);
    for (int i = 0; els && i < els->n; i++) use_node(els->v[i], b, u);
}

static bool same_index(const Buffer *b, Expr *const *x, Expr *const *y)
{
    for (int i = 0; i < b->rank; i++)
        if (!gpu_same_expr(x[i], y[i])) return false;
    return true;
}

/* The scan loop's body is [acc op= v, Y[..] = acc] as lowering wrote it. */
static bool scan_body(const Kernel *k, const Node *c, const Buffer **acc, const Node **upd, const Node **st)
{
    if (c->kind != N_LOOP || c->u.loop.kind != LOOP_SERIAL || c->u.loop.body.n != 2) return false;
    const Node *s1 = c->u.loop.body.v[0], *s2 = c->u.loop.body.v[1];
    if (s1->kind != N_STMT || s2->kind != N_STMT || s1->u.stmt.op == SOP_ASSIGN || s2->u.stmt.op != SOP_ASSIGN)
        return false;
    const Buffer *a = s1->u.stmt.buf, *y = s2->u.stmt.buf;
    const Expr *ld = s2->u.stmt.value;
    if (a == y || a->kind != BUF_TEMP || a->mem != MEM_GLOBAL || y->mem != MEM_GLOBAL || y->rank < 1 ||
        !(a->dtype == DT_F32 || a->dtype == DT_F64 || a->dtype == DT_I32) || ld->kind != IE_LOAD ||
        ld->u.load.buf != a || !same_index(a, s1->u.stmt.idx, ld->u.load.idx))
        return false;
    const Var *cv = c->u.loop.var;
    for (int i = 0; i < a->rank; i++)
        if (ir_expr_uses_var(s1->u.stmt.idx[i], cv)) return false;
    /* c moves Y's last dimension by one, and no other */
    GAff f = {.ok = true};
    gpu_aff_of(k, s2->u.stmt.idx[y->rank - 1], 1, &f);
    bool unit = false;
    for (int i = 0; f.ok && i < f.n; i++)
        if (f.v[i] == cv) unit = f.c[i] == 1 || f.c[i] == -1;
    if (!f.ok || !unit) return false;
    for (int i = 0; i < y->rank - 1; i++)
        if (ir_expr_uses_var(s2->u.stmt.idx[i], cv)) return false;
    ScanUse u = {0};
    use_expr(s1->u.stmt.value, a, &u);
    use_expr(s1->u.stmt.value, y, &u);
    if (u.reads) return false;
    *acc = a;
    *upd = s1;
    *st = s2;
    return true;
}

static Expr *cint(Kernel *k, int64_t v) { return ir_int(k, v); }

/* Rewrites the scan loop c (in list l at position at) into tiles, threads and
 * chunks, as the header says. */
static void rewrite(Kernel *k, NodeList *l, int at, Node *parent, Node *c, Node *upd, Node *st, int64_t C)
{
    int64_t K = C < 128 ? 1 : C < 8192 ? 4 : 8;
    int64_t T = (C + K - 1) / K;
    T = (T + 31) / 32 * 32;
    if (T > 1024) T = 1024;
    int64_t NT = (C + T * K - 1) / (T * K);
    const char *cn = c->u.loop.var->name;
    Var *ov = NT > 1 ? ir_new_var(k, arena_printf(k->arena, "%s_tile", cn)) : NULL;
    Var *tv = ir_new_var(k, arena_printf(k->arena, "%s_thr", cn));
    Var *jv = ir_new_var(k, arena_printf(k->arena, "%s_el", cn));
    Span sp = c->span;
    /* c = (o*T + t)*K + j */
    Expr *base = ir_var(k, tv);
    if (ov) base = ir_bin(k, IE_ADD, ir_bin(k, IE_MUL, ir_var(k, ov), cint(k, T)), base);
    Expr *cx = ir_bin(k, IE_ADD, ir_bin(k, IE_MUL, base, cint(k, K)), ir_var(k, jv));
    cx = ir_simplify(k, cx);
    const Var *cv = c->u.loop.var;
    upd->u.stmt.value = ir_simplify(k, ir_subst(k, upd->u.stmt.value, cv, cx));
    for (int i = 0; i < st->u.stmt.buf->rank; i++)
        st->u.stmt.idx[i] = ir_simplify(k, ir_subst(k, st->u.stmt.idx[i], cv, cx));
    upd->u.stmt.block_scan = true;

    Node *outer = NULL, *tl, *jl;
    if (ov) {
        outer = ir_loop(k, ov, cint(k, 0), cint(k, NT), sp);
    }
    tl = ir_loop(k, tv, cint(k, 0), cint(k, T), sp);
    tl->u.loop.kind = LOOP_THREAD_X;
    jl = ir_loop(k, jv, cint(k, 0), cint(k, K), sp);
    jl->u.loop.kind = LOOP_UNROLL;
    NodeList *into = &jl->u.loop.body;
    Node *into_parent = jl;
    if (NT * T * K != C) {
        Node *g = ir_guard(k, ir_bin(k, IE_LT, ir_clone_expr(k, cx), cint(k, C)), sp);
        ir_list_push(into, g, jl);
        into = &g->u.guard.body;
        into_parent = g;
    }
    ir_list_push(into, upd, into_parent);
    ir_list_push(into, st, into_parent);
    ir_list_push(&tl->u.loop.body, jl, tl);
    if (outer) ir_list_push(&outer->u.loop.body, tl, outer);
    Node *top = outer ? outer : tl;
    ir_list_remove(l, at);
    ir_list_insert(l, at, top, parent);
}

/* acc becomes one value per thread: rank 0, local. */
static void make_scalar_local(Buffer *a)
{
    a->rank = 0;
    a->mem = MEM_LOCAL;
}

bool gpu_scan_pass(Kernel *k, Diags *d)
{
    (void)d;
    for (int t = 0; t < k->body.n; t++) {
        Node *top = k->body.v[t];
        if (gpu_scheduled(top)) continue;
        /* the rows: a perfect nest of constant serial loops down to [acc = id, for c];
         * or, for a 1-D scan, top is the loop over c itself */
        Node *rows[3];
        int nr = 0;
        Node *n = top, *c = NULL, *init = NULL;
        bool ok = true;
        if (top->kind != N_LOOP) continue;
        if (top->u.loop.body.n == 2 && top->u.loop.body.v[0]->kind == N_STMT &&
            top->u.loop.body.v[1]->kind == N_STMT) {
            c = top;
        } else {
            while (ok && n->kind == N_LOOP && n->u.loop.body.n == 1 && n->u.loop.body.v[0]->kind == N_LOOP) {
                ok = nr < 2;
                rows[nr++] = n;
                n = n->u.loop.body.v[0];
            }
            if (!ok || n->kind != N_LOOP || n->u.loop.body.n != 2 || n->u.loop.body.v[0]->kind != N_STMT ||
                n->u.loop.body.v[1]->kind != N_LOOP)
                continue;
            rows[nr++] = n;
            init = n->u.loop.body.v[0];
            c = n->u.loop.body.v[1];
            for (int i = 0; i < nr && ok; i++) {
                int64_t lo, ext;
                ok = rows[i]->u.loop.kind == LOOP_SERIAL && gpu_loop_extent(k, rows[i], &lo, &ext);
            }
            if (!ok) continue;
        }
        if (c == top) {
            if (t == 0 || nr) continue;
            init = k->body.v[t - 1];
        }
        const Buffer *acc;
        const Node *upd, *st;
        if (init->kind != N_STMT || !scan_body(k, c, &acc, &upd, &st) || init->u.stmt.buf != acc ||
            init->u.stmt.op != SOP_ASSIGN || !same_index(acc, init->u.stmt.idx, upd->u.stmt.idx))
            continue;
        int64_t clo, C;
        if (!gpu_loop_extent(k, c, &clo, &C) || clo != 0 || C < SCAN_MIN_ROW) continue;
        /* the row index of acc is the row loops' variables, each once */
        if (acc->rank != nr) continue;
        for (int i = 0; i < nr && ok; i++) {
            const Expr *x = init->u.stmt.idx[i];
            ok = x->kind == IE_VAR && x->u.var == rows[i]->u.loop.var;
        }
        /* acc is this nest's alone: written by init and upd, read by st */
        ScanUse u = {0};
        for (int i = 0; i < k->body.n; i++) use_node(k->body.v[i], acc, &u);
        if (!ok || u.writes != 2 || u.reads != 1) continue;
        /* rows on block.x (innermost), .y, .z within CUDA's grid limits */
        static const LoopKind bk[3] = {LOOP_BLOCK_X, LOOP_BLOCK_Y, LOOP_BLOCK_Z};
        for (int i = 0; i < nr && ok; i++) {
            int64_t lo, ext;
            gpu_loop_extent(k, rows[nr - 1 - i], &lo, &ext);
            ok = ext <= (i == 0 ? INT32_MAX : 65535);
        }
        if (!ok) continue;
        for (int i = 0; i < nr; i++)
            rows[nr - 1 - i]->u.loop.kind = bk[i];
        if (nr == 0) {
            /* a 1-D scan: one block, its initialisation moved in from the launch before */
            Node *blk = ir_loop(k, ir_new_var(k, arena_printf(k->arena, "%s_blk", c->u.loop.var->name)),
                                ir_int(k, 0), ir_int(k, 1), c->span);
            blk->u.loop.kind = LOOP_BLOCK_X;
            ir_list_remove(&k->body, t);
            ir_list_remove(&k->body, t - 1);
            ir_list_push(&blk->u.loop.body, init, blk);
            ir_list_push(&blk->u.loop.body, c, blk);
            ir_list_insert(&k->body, t - 1, blk, NULL);
            t--;
            rewrite(k, &blk->u.loop.body, 1, blk, c, (Node *)upd, (Node *)st, C);
        } else {
            Node *inner = rows[nr - 1];
            rewrite(k, &inner->u.loop.body, 1, inner, c, (Node *)upd, (Node *)st, C);
        }
        make_scalar_local((Buffer *)acc);
    }
    return true;
}
