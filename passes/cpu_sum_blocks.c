/* sum-blocks: a long float sum into one element is accumulated in blocks.  A serial
 * loop whose statements all add into the same element B[idx] (idx fixed during the
 * loop, B not read in it) and that adds at least CPU_SUM_BLOCK_MIN terms becomes
 *
 *     for vo in 0..ceil(E / bs)
 *       t = -0.0
 *       for v in lo + vo*bs .. min(hi, lo + vo*bs + bs)
 *         ... t += term ...
 *       B[idx] += t
 *
 * with bs the iterations that make CPU_SUM_BLOCK terms (one iteration when the
 * loops inside already add that many: then the loop stays and each iteration gets
 * its own partial).  In f32 a running sum of n terms of one sign drifts by about
 * n·ε relative (16M uniform terms: 2–6% off, far outside the harness's tolerance
 * of 4e-3), while blocks of b terms drift by about (b + n/b)·ε: 1024-term blocks
 * keep 16M terms near 1e-4.  The partial is in the compute type (f32 for f16/bf16
 * results), so a half-precision sum is also no longer rounded term by term.
 *
 * Legal because sums may be reassociated (docs/schedules.md "Reductions and float
 * reassociation"): the same terms are added, grouped differently.  -0.0 starts
 * each partial, the exact neutral element, so a block whose terms are all masked
 * leaves B as it was.  f64 sums are left alone (their tolerance is met anyway),
 * and so are loops with anything but serial loops inside (a schedule that
 * vectorised or parallelised the reduction chose its own order). */
#include "cpu.h"
#include "xform_int.h"

typedef struct Red {
    Buffer *b;          /* the element's buffer, or NULL before the first statement */
    Expr **idx;
    bool ok;
    int64_t inner;      /* terms per iteration of the loop (constant extents inside) */
} Red;

static bool expr_reads(const Expr *e, const Buffer *b)
{
    if (!e)
        return false;
    if (e->kind == IE_LOAD) {
        if (e->u.load.buf == b)
            return true;
        for (int i = 0; i < e->u.load.buf->rank; i++)
            if (expr_reads(e->u.load.idx[i], b))
                return true;
        return false;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        if (expr_reads(e->args[i], b))
            return true;
    return false;
}

/* Collects the statements of l (depth: loops between the candidate and here). */
static void scan(const Kernel *k, const NodeList *l, Red *r, Node **loops, int depth)
{
    for (int i = 0; i < l->n && r->ok; i++) {
        Node *n = l->v[i];
        if (n->kind == N_PREFETCH)
            continue;
        if (n->kind == N_IF) {
            if (n->u.guard.els.n) {
                r->ok = false;
                return;
            }
            scan(k, &n->u.guard.body, r, loops, depth);
            continue;
        }
        if (n->kind == N_LOOP) {
            if (n->u.loop.kind != LOOP_SERIAL || n->u.loop.hint != HINT_NONE || depth == 32) {
                r->ok = false;
                return;
            }
            loops[depth] = n;
            scan(k, &n->u.loop.body, r, loops, depth + 1);
            continue;
        }
        /* a statement: B[idx] += v with idx fixed in every loop from the candidate in */
        if (n->u.stmt.op != SOP_ADD || !dtype_is_float(n->u.stmt.buf->dtype) || n->u.stmt.buf->dtype == DT_F64 ||
            n->u.stmt.guarded) {
            r->ok = false;
            return;
        }
        if (!r->b) {
            r->b = n->u.stmt.buf, r->idx = n->u.stmt.idx;
            r->inner = 1;
            for (int d = 0; d < depth; d++) {
                int64_t e;
                if (ar_const_extent(k, loops[d], &e) && e > 0)
                    r->inner = r->inner > INT64_MAX / e ? INT64_MAX : r->inner * e;
            }
        } else if (n->u.stmt.buf != r->b) {
            r->ok = false;
            return;
        } else {
            for (int d = 0; d < r->b->rank; d++)
                if (!xf_expr_equal(k, n->u.stmt.idx[d], r->idx[d])) {
                    r->ok = false;
                    return;
                }
        }
        for (int d = 0; d < r->b->rank; d++)
            for (int j = 0; j < depth; j++)
                if (ir_expr_uses_var(n->u.stmt.idx[d], loops[j]->u.loop.var)) {
                    r->ok = false;
                    return;
                }
    }
}

/* Whether B is read anywhere under l (values, indices, guards, bounds). */
static bool list_reads(const NodeList *l, const Buffer *b)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        switch (n->kind) {
        case N_STMT:
            if (expr_reads(n->u.stmt.value, b))
                return true;
            for (int d = 0; d < n->u.stmt.buf->rank; d++)
                if (expr_reads(n->u.stmt.idx[d], b))
                    return true;
            break;
        case N_IF:
            if (expr_reads(n->u.guard.cond, b) || list_reads(&n->u.guard.body, b))
                return true;
            break;
        case N_LOOP:
            if (expr_reads(n->u.loop.lo, b) || expr_reads(n->u.loop.hi, b) || list_reads(&n->u.loop.body, b))
                return true;
            break;
        case N_PREFETCH:
            break;
        }
    }
    return false;
}

static void retarget(Kernel *k, NodeList *l, Buffer *t)
{
    for (int i = 0; i < l->n; i++) {
        Node *n = l->v[i];
        if (n->kind == N_STMT) {
            n->u.stmt.buf = t;
            n->u.stmt.idx = arena_alloc(k->arena, sizeof(Expr *));
            if (n->u.stmt.value->dtype != t->dtype)
                n->u.stmt.value = ir_cast(k, n->u.stmt.value, t->dtype);
        } else if (n->kind != N_PREFETCH) {
            retarget(k, ir_body(n), t);
        }
    }
}

/* Blocks loop L (at position at of list l) when it qualifies; true when done. */
static bool block(Kernel *k, NodeList *l, int at)
{
    Node *L = l->v[at];
    int64_t ext;
    if (L->u.loop.kind != LOOP_SERIAL || L->u.loop.hint != HINT_NONE || !ar_const_extent(k, L, &ext) || ext < 2)
        return false;
    Node *loops[33];
    loops[0] = L;
    Red r = {.ok = true};
    scan(k, &L->u.loop.body, &r, loops, 1);
    if (!r.ok || !r.b || r.inner < 1 || list_reads(&L->u.loop.body, r.b))
        return false;
    /* r.inner counted L itself: terms per iteration of L */
    int64_t per = r.inner / ext;
    if (per < 1 || (double)per * (double)ext < CPU_SUM_BLOCK_MIN)
        return false;
    int64_t bs = per >= CPU_SUM_BLOCK ? 1 : CPU_SUM_BLOCK / per;
    if (bs >= ext)
        return false;
    Buffer *b = r.b;
    Expr **idx = r.idx;
    DType ct = dtype_compute(b->dtype);
    Buffer *t = xf_add_temp(k, xf_fresh_buffer_name(k, arena_printf(k->arena, "%s_blk", b->name)), ct, MEM_LOCAL, 0,
                            NULL, L->span);
    ArScalar id;
    ar_identity(SOP_ADD, ct, true, &id);
    Expr *none[1] = {NULL};
    Node *init = ir_stmt(k, t, none, SOP_ASSIGN, ir_flt(k, id.f, ct), L->span);
    Expr *cidx[8];
    for (int d = 0; d < b->rank && d < 8; d++)
        cidx[d] = ir_clone_expr(k, idx[d]);
    Node *comb = ir_stmt(k, b, cidx, SOP_ADD, ir_cast(k, ir_load(k, t, none), ct), L->span);
    retarget(k, &L->u.loop.body, t);
    if (bs == 1) {
        /* each iteration of L already adds CPU_SUM_BLOCK terms: its own partial */
        ir_list_insert(&L->u.loop.body, 0, init, L);
        ir_list_push(&L->u.loop.body, comb, L);
        xf_set_private(k, t, L, true);
        return true;
    }
    Var *vo = ir_new_var(k, xf_fresh_name(k, arena_printf(k->arena, "%so", L->u.loop.var->name)));
    Node *outer = ir_loop(k, vo, ir_int(k, 0), ir_int(k, (ext + bs - 1) / bs), L->span);
    Expr *start = ir_bin(k, IE_ADD, ir_clone_expr(k, L->u.loop.lo), ir_bin(k, IE_MUL, ir_var(k, vo), ir_int(k, bs)));
    Expr *end = ir_bin(k, IE_ADD, ir_clone_expr(k, start), ir_int(k, bs));
    if (ext % bs)
        end = ir_bin(k, IE_MIN, L->u.loop.hi, end);
    L->u.loop.lo = xf_simplify_affine(k, start);
    L->u.loop.hi = xf_simplify_affine(k, end);
    Node *parent = L->parent;
    ir_list_remove(l, at);
    ir_list_push(&outer->u.loop.body, init, outer);
    ir_list_push(&outer->u.loop.body, L, outer);
    ir_list_push(&outer->u.loop.body, comb, outer);
    ir_list_insert(l, at, outer, parent);
    xf_set_private(k, t, outer, true);
    return true;
}

static void walk(Kernel *k, NodeList *l)
{
    for (int i = 0; i < l->n; i++) {
        Node *n = l->v[i];
        if (n->kind == N_PREFETCH || n->kind == N_STMT)
            continue;
        if (n->kind == N_LOOP && block(k, l, i))
            continue;
        if (n->kind == N_LOOP && n->u.loop.kind != LOOP_SERIAL && n->u.loop.kind != LOOP_PARALLEL)
            continue;
        walk(k, ir_body(n));
        if (n->kind == N_IF)
            walk(k, &n->u.guard.els);
    }
}

bool cpu_sum_blocks(Kernel *k, Diags *d)
{
    (void)d;
    walk(k, &k->body);
    return true;
}
