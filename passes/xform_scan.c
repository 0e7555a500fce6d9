/* The blocked parallel scan on CPUs: `parallel(c)` on a scan's loop (docs/
 * schedules.md), and pass `scan-blocks` (passes/cpu_scan.c) for a few long rows.
 *
 * Lowering writes a scan as a running value carried along c (docs/language.md):
 *     acc[r] = identity
 *     for c in 0..C:  acc[r] op= v(r, c);  Y[r, c] = acc[r]
 * which no loop over c can run in parallel as written.  Split the row into P
 * blocks of B elements (B a multiple of the vector width W):
 *     for p in 0..P parallel:            block totals, vectorised: W lanes each
 *       part = identity                    fold every W-th step, then combine
 *       for c_v in 0..W vector:  lanes[c_v] = identity
 *       for c_o in 0..B/W:  for c_v in 0..W vector:  [if c < C]  lanes[c_v] op= v(c)
 *       for c_v in 0..W vector:  part op= lanes[c_v]
 *       tot[r, p] = part
 *     for p in 0..P:                     the blocks' starting values, in order
 *       pre[r, p] = acc[r];  acc[r] op= tot[r, p]
 *     for p in 0..P parallel:            each block scanned again from its start
 *       run = pre[r, p]
 *       for c_i in 0..B:  [if c < C]  run op= v(c);  Y[r, c] = run
 * with c = p*B + c_o*W + c_v (= p*B + c_i).  Each element of Y is the operator
 * folded over the same terms in the same order of c, grouped differently: the
 * reassociation docs/schedules.md allows for every reduction (+ and * to rounding,
 * max, min and integers exactly).  The loops over p are parallel by construction:
 * iteration p writes tot[r, p] and Y[r, p*B .. p*B + B - 1] alone, reads only X
 * and its own elements, and part and run are scalar locals of each thread (their
 * uses lie inside one parallel loop, where the CPU back end gives each thread its
 * own copy, and LLVM keeps them in registers).  v is computed twice per element (the price
 * of not writing Y twice); the first pass is a vector reduction.  tot and pre
 * are new temporaries, local to the kernel's frame when small (block_buf). */
#include <string.h>

#include "cpu.h"
#include "xform_int.h"

typedef struct ScanNest {
    Node *init, *upd, *st;   /* acc = identity; acc op= v; Y[..] = acc */
    Buffer *acc;
    NodeList *list;          /* the list holding init and the loop */
    Node *parent;
    int at;                  /* the loop's position in list */
    int64_t C;
} ScanNest;

static int count_loads(const Expr *x, const Buffer *b)
{
    if (!x) return 0;
    int n = 0;
    if (x->kind == IE_LOAD) {
        n += x->u.load.buf == b;
        for (int i = 0; i < x->u.load.buf->rank; i++) n += count_loads(x->u.load.idx[i], b);
        return n;
    }
    for (int i = 0; i < ir_expr_arity(x->kind); i++) n += count_loads(x->args[i], b);
    return n;
}

static void count_uses(const Node *n, const Buffer *b, int *wr, int *rd)
{
    switch (n->kind) {
    case N_STMT:
        *wr += n->u.stmt.buf == b;
        for (int i = 0; i < n->u.stmt.buf->rank; i++) *rd += count_loads(n->u.stmt.idx[i], b);
        *rd += count_loads(n->u.stmt.value, b);
        return;
    case N_LOOP: *rd += count_loads(n->u.loop.lo, b) + count_loads(n->u.loop.hi, b); break;
    case N_IF: *rd += count_loads(n->u.guard.cond, b); break;
    case N_PREFETCH: return;
    }
    const NodeList *body = ir_body((Node *)n);
    for (int i = 0; body && i < body->n; i++) count_uses(body->v[i], b, wr, rd);
    const NodeList *els = ir_else((Node *)n);
    for (int i = 0; els && i < els->n; i++) count_uses(els->v[i], b, wr, rd);
}

static bool same_idx(const Kernel *k, const Buffer *b, Expr *const *x, Expr *const *y)
{
    for (int i = 0; i < b->rank; i++) {
        ArAff a, c;
        if (!ar_aff_of(k, x[i], &a) || !ar_aff_of(k, y[i], &c) || !ar_aff_same(&a, &c)) return false;
    }
    return true;
}

/* Is loop c a scan's loop as lowering wrote it (above)?  Fills s. */
static bool scan_nest(Kernel *k, Node *c, ScanNest *s)
{
    if (c->kind != N_LOOP || c->u.loop.kind != LOOP_SERIAL || c->u.loop.body.n != 2 || xf_padded_within(c)) return false;
    Node *upd = c->u.loop.body.v[0], *st = c->u.loop.body.v[1];
    if (upd->kind != N_STMT || st->kind != N_STMT || upd->u.stmt.op == SOP_ASSIGN || st->u.stmt.op != SOP_ASSIGN)
        return false;
    Buffer *acc = upd->u.stmt.buf;
    const Expr *ld = st->u.stmt.value;
    if (acc == st->u.stmt.buf || acc->kind != BUF_TEMP || acc->mem != MEM_GLOBAL ||
        !(acc->dtype == DT_F32 || acc->dtype == DT_F64 || acc->dtype == DT_I32) || ld->kind != IE_LOAD ||
        ld->u.load.buf != acc || !same_idx(k, acc, upd->u.stmt.idx, ld->u.load.idx))
        return false;
    for (int i = 0; i < acc->rank; i++)
        if (ir_expr_uses_var(upd->u.stmt.idx[i], c->u.loop.var)) return false;
    if (count_loads(upd->u.stmt.value, acc) || count_loads(upd->u.stmt.value, st->u.stmt.buf)) return false;
    if (c->u.loop.lo->kind != IE_INT || c->u.loop.lo->u.i != 0 ||
        !cpu_const_extent(k, c->u.loop.lo, c->u.loop.hi, &s->C) || s->C < 2)
        return false;
    /* the initialisation just before the loop, in the same list */
    NodeList *list = c->parent ? ir_body(c->parent) : &k->body;
    int at = -1;
    for (int i = 0; i < list->n; i++)
        if (list->v[i] == c) at = i;
    if (at < 1) return false;
    Node *init = list->v[at - 1];
    if (init->kind != N_STMT || init->u.stmt.buf != acc || init->u.stmt.op != SOP_ASSIGN ||
        (init->u.stmt.value->kind != IE_INT && init->u.stmt.value->kind != IE_FLT) ||
        !same_idx(k, acc, init->u.stmt.idx, upd->u.stmt.idx))
        return false;
    /* acc belongs to this nest alone */
    int wr = 0, rd = 0;
    for (int i = 0; i < k->body.n; i++) count_uses(k->body.v[i], acc, &wr, &rd);
    if (wr != 2 || rd != 1) return false;
    s->init = init;
    s->upd = upd;
    s->st = st;
    s->acc = acc;
    s->list = list;
    s->parent = c->parent;
    s->at = at;
    return true;
}

bool xf_is_scan_loop(Kernel *k, Node *c)
{
    ScanNest s;
    return scan_nest(k, c, &s);
}

static Expr **idx_plus(Kernel *k, const Buffer *acc, Expr *const *aidx, Var *p)
{
    Expr **x = arena_alloc(k->arena, sizeof(Expr *) * (size_t)(acc->rank + 1));
    for (int i = 0; i < acc->rank; i++) x[i] = ir_clone_expr(k, aidx[i]);
    x[acc->rank] = ir_var(k, p);
    return x;
}

static Buffer *block_buf(Kernel *k, const Buffer *acc, const char *what, int64_t P, Span sp)
{
    const char *name = arena_printf(k->arena, "%s_%s", acc->name, what);
    for (int n = 2; ir_find_buffer(k, name); n++) name = arena_printf(k->arena, "%s_%s%d", acc->name, what, n);
    Buffer *b = ir_add_buffer(k, name, acc->dtype, BUF_TEMP, acc->rank + 1, sp);
    for (int i = 0; i < acc->rank; i++) b->shape[i] = ir_clone_expr(k, acc->shape[i]);
    b->shape[acc->rank] = ir_int(k, P);
    /* A small one is a local of the kernel's frame (the CPU back end homes a local
     * used inside and outside parallel loops there, shared by the threads): it
     * needs no memory from the caller, so the target pass may add it after the
     * harness has allocated the kernel's buffers. */
    int64_t n = ir_buffer_elems(k, b);
    if (n > 0 && n <= 4096) b->mem = MEM_LOCAL;
    return b;
}

/* A running value of one block: a scalar local, its uses all inside one parallel
 * loop, so each thread has its own (a register once LLVM promotes it). */
static Buffer *scalar_local(Kernel *k, const Buffer *acc, const char *what, Span sp)
{
    const char *name = arena_printf(k->arena, "%s_%s", acc->name, what);
    for (int n = 2; ir_find_buffer(k, name); n++) name = arena_printf(k->arena, "%s_%s%d", acc->name, what, n);
    Buffer *b = ir_add_buffer(k, name, acc->dtype, BUF_TEMP, 0, sp);
    b->mem = MEM_LOCAL;
    return b;
}

/* Wraps stmts in `if c < C` when the blocks overhang the row. */
static void put_guarded(Kernel *k, Node *loop, Expr *c, int64_t C, bool need, Node **stmts, int n, Span sp)
{
    NodeList *into = &loop->u.loop.body;
    Node *par = loop;
    if (need) {
        Node *g = ir_guard(k, ir_bin(k, IE_LT, c, ir_int(k, C)), sp);
        ir_list_push(into, g, loop);
        into = &g->u.guard.body;
        par = g;
    }
    for (int i = 0; i < n; i++) ir_list_push(into, stmts[i], par);
}

bool xf_scan_blocks(Kernel *k, Node *c)
{
    ScanNest s;
    if (!scan_nest(k, c, &s)) return false;
    const int64_t C = s.C;
    int64_t W = s.acc->dtype == DT_F64 ? 8 : 16;
    int64_t P = C / 2048;
    if (P < 2) P = 2;
    if (P > 64) P = 64;
    int64_t B = (C + P - 1) / P;
    B = (B + W - 1) / W * W;
    P = (C + B - 1) / B;
    bool partial = P * B != C;
    Span sp = c->span;
    const Var *cv = c->u.loop.var;
    const char *cn = cv->name;
    Buffer *tot = block_buf(k, s.acc, "tot", P, sp), *pre = block_buf(k, s.acc, "pre", P, sp);
    Expr *const *aidx = s.upd->u.stmt.idx;
    StmtOp op = s.upd->u.stmt.op;

    /* block totals */
    Var *p1 = ir_new_var(k, arena_printf(k->arena, "%s_blk", cn));
    Var *co = ir_new_var(k, arena_printf(k->arena, "%s_o", cn));
    Var *cw = ir_new_var(k, arena_printf(k->arena, "%s_v", cn));
    Node *l1 = ir_loop(k, p1, ir_int(k, 0), ir_int(k, P), sp);
    l1->u.loop.kind = LOOP_PARALLEL;
    Buffer *part = scalar_local(k, s.acc, "part", sp), *run = scalar_local(k, s.acc, "run", sp);
    ir_list_push(&l1->u.loop.body, ir_stmt(k, part, NULL, SOP_ASSIGN, ir_clone_expr(k, s.init->u.stmt.value), sp), l1);
    Node *lo = ir_loop(k, co, ir_int(k, 0), ir_int(k, B / W), sp);
    Node *lv = ir_loop(k, cw, ir_int(k, 0), ir_int(k, W), sp);
    lv->u.loop.kind = LOOP_VECTOR;
    ir_list_push(&l1->u.loop.body, lo, l1);
    ir_list_push(&lo->u.loop.body, lv, lo);
    /* (p*B + c_o*W) + c_v: the sum's terms left to right, the form simplify leaves */
    Expr *c1 = ir_simplify(k, ir_bin(k, IE_ADD, ir_bin(k, IE_ADD, ir_bin(k, IE_MUL, ir_var(k, p1), ir_int(k, B)),
                                                        ir_bin(k, IE_MUL, ir_var(k, co), ir_int(k, W))),
                                     ir_var(k, cw)));
    /* one partial per lane, combined once after the block */
    Buffer *lanes = ir_add_buffer(k, arena_printf(k->arena, "%s_lanes", part->name), s.acc->dtype, BUF_TEMP, 1, sp);
    lanes->shape[0] = ir_int(k, W);
    lanes->mem = MEM_LOCAL;
    Var *z = ir_new_var(k, arena_printf(k->arena, "%s_v", cn)), *y = ir_new_var(k, arena_printf(k->arena, "%s_v", cn));
    Node *lz = ir_loop(k, z, ir_int(k, 0), ir_int(k, W), sp), *ly = ir_loop(k, y, ir_int(k, 0), ir_int(k, W), sp);
    lz->u.loop.kind = ly->u.loop.kind = LOOP_VECTOR;
    Expr *zi = ir_var(k, z), *yi = ir_var(k, y), *wi = ir_var(k, cw);
    ir_list_push(&lz->u.loop.body, ir_stmt(k, lanes, &zi, SOP_ASSIGN, ir_clone_expr(k, s.init->u.stmt.value), sp), lz);
    ir_list_insert(&l1->u.loop.body, 1, lz, l1);
    Node *t1 = ir_stmt(k, lanes, &wi, op, ir_simplify(k, ir_subst(k, s.upd->u.stmt.value, cv, c1)), sp);
    put_guarded(k, lv, ir_clone_expr(k, c1), C, partial, &t1, 1, sp);
    ir_list_push(&ly->u.loop.body, ir_stmt(k, part, NULL, op, ir_load(k, lanes, &yi), sp), ly);
    ir_list_push(&l1->u.loop.body, ly, l1);
    ir_list_push(&l1->u.loop.body,
                 ir_stmt(k, tot, idx_plus(k, s.acc, aidx, p1), SOP_ASSIGN, ir_load(k, part, NULL), sp), l1);

    /* the blocks' starting values */
    Var *p2 = ir_new_var(k, arena_printf(k->arena, "%s_blk", cn));
    Node *l2 = ir_loop(k, p2, ir_int(k, 0), ir_int(k, P), sp);
    Expr *accld = ir_load(k, s.acc, (Expr **)aidx);
    ir_list_push(&l2->u.loop.body, ir_stmt(k, pre, idx_plus(k, s.acc, aidx, p2), SOP_ASSIGN, accld, sp), l2);
    Expr **aidx2 = arena_alloc(k->arena, sizeof(Expr *) * (size_t)(s.acc->rank ? s.acc->rank : 1));
    for (int i = 0; i < s.acc->rank; i++) aidx2[i] = ir_clone_expr(k, aidx[i]);
    ir_list_push(&l2->u.loop.body,
                 ir_stmt(k, s.acc, aidx2, op, ir_load(k, tot, idx_plus(k, s.acc, aidx, p2)), sp), l2);

    /* each block again from its start */
    Var *p3 = ir_new_var(k, arena_printf(k->arena, "%s_blk", cn));
    Var *ci = ir_new_var(k, arena_printf(k->arena, "%s_i", cn));
    Node *l3 = ir_loop(k, p3, ir_int(k, 0), ir_int(k, P), sp);
    l3->u.loop.kind = LOOP_PARALLEL;
    Node *li = ir_loop(k, ci, ir_int(k, 0), ir_int(k, B), sp);
    ir_list_push(&l3->u.loop.body,
                 ir_stmt(k, run, NULL, SOP_ASSIGN, ir_load(k, pre, idx_plus(k, s.acc, aidx, p3)), sp), l3);
    ir_list_push(&l3->u.loop.body, li, l3);
    Expr *c3 = ir_simplify(k, ir_bin(k, IE_ADD, ir_bin(k, IE_MUL, ir_var(k, p3), ir_int(k, B)), ir_var(k, ci)));
    Node *u3 = ir_stmt(k, run, NULL, op, ir_simplify(k, ir_subst(k, s.upd->u.stmt.value, cv, c3)), sp);
    Expr **yidx = arena_alloc(k->arena, sizeof(Expr *) * (size_t)s.st->u.stmt.buf->rank);
    for (int i = 0; i < s.st->u.stmt.buf->rank; i++)
        yidx[i] = ir_simplify(k, ir_subst(k, s.st->u.stmt.idx[i], cv, c3));
    Expr *cur = ir_load(k, run, NULL);
    if (cur->dtype != s.st->u.stmt.value->dtype) cur = ir_cast(k, cur, s.st->u.stmt.value->dtype);
    Node *s3[2] = {u3, ir_stmt(k, s.st->u.stmt.buf, yidx, SOP_ASSIGN, cur, sp)};
    put_guarded(k, li, ir_clone_expr(k, c3), C, partial, s3, 2, sp);

    ir_list_remove(s.list, s.at);
    ir_list_insert(s.list, s.at, l3, s.parent);
    ir_list_insert(s.list, s.at, l2, s.parent);
    ir_list_insert(s.list, s.at, l1, s.parent);
    return true;
}
