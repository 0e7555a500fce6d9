/* unroll2: in a kernel with register tiles, the serial loop around a small
 * register-tile update (gemm's k loop around its 6 x 16 tile: six vector FMAs) is
 * marked `unroll2` and runs two iterations per trip, as LLVM's unroller used to
 * make it (the short pipeline that tiled kernels get leaves LLVM's unrollers out):
 * the loop's increment, compare and branch are paid once per twelve FMAs rather
 * than six (1-2% on gemm).
 *
 * The update must be 4 to 16 statements once its unroll loops are unrolled (vector
 * loops count once; a guard counts only when it `holds`, so the guarded copy of a
 * versioned loop, run at the edges only, is left alone), hold a schedule's unroll
 * or vector loop, and call no exp, log, tanh or erf (each is some twenty
 * instructions per vector, so such a loop is never small).  The trip count must
 * be an even constant of at least 4.
 *
 * Legal because the trip count is even: the back end runs iterations i and i + 1
 * in order in each trip, which is the serial loop's order. */
#include "cpu.h"

#define BIG INT64_MAX

/* Statements of a register-tile update once unrolled and vectorised; BIG when a
 * loop in it stays a loop or a guard in it is not known to hold. */
static int64_t tile_size(const Kernel *k, const NodeList *l)
{
    int64_t size = 0;
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        int64_t s = 1, ext;
        if (n->kind == N_IF) {
            if (!n->u.guard.holds || n->u.guard.els.n)
                return BIG;
            s = tile_size(k, &n->u.guard.body);
        } else if (n->kind == N_LOOP) {
            s = tile_size(k, &n->u.loop.body);
            if (s == BIG || !cpu_const_extent(k, n->u.loop.lo, n->u.loop.hi, &ext) || ext > CPU_MAX_UNROLL)
                return BIG;
            if (n->u.loop.kind == LOOP_UNROLL || (n->u.loop.kind == LOOP_SERIAL && cpu_unroll_ok(k, n)))
                s *= ext;
            else if (n->u.loop.kind != LOOP_VECTOR)
                return BIG;
        }
        if (s == BIG || size > BIG - s)
            return BIG;
        size += s;
    }
    return size;
}

static bool expr_transcendental(const Expr *e)
{
    if (!e)
        return false;
    if (e->kind == IE_EXP || e->kind == IE_LOG || e->kind == IE_TANH || e->kind == IE_ERF ||
        e->kind == IE_LOG1P || e->kind == IE_EXPM1 || e->kind == IE_POW)
        return true;
    if (e->kind == IE_LOAD) {
        for (int i = 0; i < e->u.load.buf->rank; i++)
            if (expr_transcendental(e->u.load.idx[i]))
                return true;
        return false;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        if (expr_transcendental(e->args[i]))
            return true;
    return false;
}

static bool list_transcendental(const NodeList *l)
{
    for (int i = 0; i < l->n; i++) {
        Node *n = l->v[i];
        if (n->kind == N_STMT ? expr_transcendental(n->u.stmt.value)
                              : list_transcendental(ir_body(n)) ||
                                    (n->kind == N_IF && list_transcendental(&n->u.guard.els)))
            return true;
    }
    return false;
}

static bool twice(const Kernel *k, const Node *n, bool in_vector)
{
    int64_t ext, s;
    const NodeList *b = &n->u.loop.body;
    if (n->u.loop.kind != LOOP_SERIAL || n->u.loop.hint != HINT_NONE ||
        !cpu_const_extent(k, n->u.loop.lo, n->u.loop.hi, &ext) || ext < 4 || ext % 2 ||
        !cpu_holds_scheduled(b) || list_transcendental(b))
        return false;
    /* a loop whose bounds `narrow` set (its body the one guard that holds) */
    if (b->n == 1 && b->v[0]->kind == N_IF && b->v[0]->u.guard.holds)
        return false;
    /* loops a later pass claims */
    if (cpu_unroll_ok(k, n) || (!in_vector && (cpu_transpose_ok(k, n) || cpu_vectorize_ok(k, n))))
        return false;
    s = tile_size(k, b);
    return s >= 4 && s <= CPU_UNROLL_STMTS;
}

static void twice_list(const Kernel *k, NodeList *l, bool in_vector)
{
    for (int i = 0; i < l->n; i++) {
        Node *n = l->v[i];
        if (n->kind == N_IF) {
            twice_list(k, &n->u.guard.body, in_vector);
            twice_list(k, &n->u.guard.els, in_vector);
            continue;
        }
        if (n->kind != N_LOOP)
            continue;
        if (twice(k, n, in_vector))
            n->u.loop.hint = HINT_TWICE;
        twice_list(k, &n->u.loop.body, in_vector || n->u.loop.kind == LOOP_VECTOR);
    }
}

bool cpu_unroll2(Kernel *k, Diags *d)
{
    (void)d;
    if (cpu_holds_scheduled(&k->body))
        twice_list(k, &k->body, false);
    return true;
}
