/* The shape an AMX tile product takes in the loop nest, read alike by the pass that
 * marks it (passes/cpu_amx.c) and the back end that translates it
 * (codegen/llvm/emit_amx.c).  After dot-pairs, a bf16 register-tile update is
 *
 *   for kp in lo..lo+E                          serial, E a multiple of 16
 *     for i in 0..R unroll                      R 16 or 32
 *       for j in 0..W vector                    W 16 or 32
 *         for q in 0..2 dot-product      (under guards that hold, if any)
 *           Acc[..] += f32(A[..]) * f32(P[..])
 *
 * and it is a grid of tile products when the three element offsets move as AMX
 * tiles read memory: Acc by 1 along j and by a row stride along i (a 16 x 16 f32
 * tile), A by 1 along q and 2 along kp (32 consecutive bf16 a row: 16 pairs of k)
 * and by a row stride along i, P by 1 along q and 2 along j (16 pairs a row) and by
 * a row stride along kp (the pairs layout, [k/2][j][2], that tdpbf16ps reads its
 * second operand in).  The tiles of C, A and P for one step of 16 pairs must fit
 * the eight tile registers: (R/16)(W/16) + R/16 + W/16 <= 8. */
#include "cpu.h"

#include <string.h>

/* The only node of loop n's body, NULL when it has several; guards that hold (the
 * version pass proved them, passes/cpu_version.c) are looked through. */
static const Node *only(const Node *n)
{
    const Node *c = n->kind == N_LOOP && n->u.loop.body.n == 1 ? n->u.loop.body.v[0] : NULL;
    while (c && c->kind == N_IF && c->u.guard.holds && !c->u.guard.els.n && c->u.guard.body.n == 1)
        c = c->u.guard.body.v[0];
    return c;
}

/* A loop of a constant extent with the given kind, from a constant start. */
static bool const_loop(const Kernel *k, const Node *n, LoopKind kind, int64_t *lo, int64_t *ext)
{
    ArAff a;
    if (!n || n->kind != N_LOOP || n->u.loop.kind != kind || !cpu_const_extent(k, n->u.loop.lo, n->u.loop.hi, ext) ||
        !ar_aff_of(k, n->u.loop.lo, &a) || !ar_aff_is_const(&a))
        return false;
    *lo = a.c;
    return true;
}

/* b[idx]'s offset moves by the given element counts along the four loops (-1: any
 * positive count, returned in *stride); every other variable is free. */
static bool moves(const Kernel *k, const Buffer *b, Expr *const *idx, const Var *v[4], const int64_t want[4],
                  int64_t *stride)
{
    ArAff o;
    if (b->layout != LAYOUT_PLAIN || !cpu_offset_aff(k, b, idx, &o))
        return false;
    for (int d = 0; d < b->rank; d++)
        if (cpu_dim(k, b, d) <= 0)
            return false;
    for (int i = 0; i < 4; i++) {
        int64_t c = ar_aff_coef(&o, v[i]->id);
        if (want[i] < 0) {
            if (c <= 0)
                return false;
            *stride = c;
        } else if (c != want[i])
            return false;
    }
    return true;
}

bool cpu_amx_shape(const Kernel *k, const Node *L, CpuAmx *t)
{
    memset(t, 0, sizeof *t);
    int64_t E, R, W, Q, z;
    const Node *ni = only(L), *nj = ni ? only(ni) : NULL, *nq = nj ? only(nj) : NULL, *s = nq ? only(nq) : NULL;
    if (!const_loop(k, L, LOOP_SERIAL, &z, &E) || !const_loop(k, ni, LOOP_UNROLL, &z, &R) || z != 0 ||
        !const_loop(k, nj, LOOP_VECTOR, &z, &W) || z != 0 || !nq || nq->u.loop.hint != HINT_DOT ||
        !const_loop(k, nq, LOOP_SERIAL, &z, &Q) || z != 0 || Q != 2 || !s || s->kind != N_STMT)
        return false;
    if (E < 16 || E % 16 || E / 16 > CPU_AMX_MAX_STEPS || (R != 16 && R != 32) || (W != 16 && W != 32) ||
        (R / 16) * (W / 16) + R / 16 + W / 16 > 8)
        return false;
    const Buffer *acc = s->u.stmt.buf;
    const Expr *v = s->u.stmt.value;
    if (s->u.stmt.op != SOP_ADD || s->u.stmt.guarded || acc->dtype != DT_F32 || v->kind != IE_MUL ||
        v->dtype != DT_F32)
        return false;
    const Expr *x = cpu_bf16_load(v->args[0]), *y = cpu_bf16_load(v->args[1]);
    if (!x || !y)
        return false;
    const Var *vars[4] = {L->u.loop.var, ni->u.loop.var, nj->u.loop.var, nq->u.loop.var}; /* kp, i, j, q */
    /* Acc: 0 along kp, a row stride along i, 1 along j, 0 along q */
    if (!moves(k, acc, s->u.stmt.idx, vars, (const int64_t[4]){0, -1, 1, 0}, &t->ldc))
        return false;
    /* A: 2 along kp, a row stride along i, 0 along j, 1 along q; P: a row stride
     * along kp, 0 along i, 2 along j, 1 along q (either operand first) */
    const int64_t wa[4] = {2, -1, 0, 1}, wp[4] = {-1, 0, 2, 1};
    for (int swap = 0; swap < 2 && !t->a; swap++) {
        const Expr *a = swap ? y : x, *p = swap ? x : y;
        if (moves(k, a->u.load.buf, a->u.load.idx, vars, wa, &t->lda) &&
            moves(k, p->u.load.buf, p->u.load.idx, vars, wp, &t->ldp))
            t->a = a, t->p = p;
    }
    if (!t->a || t->a->u.load.buf == acc || t->p->u.load.buf == acc || t->ldc < W)
        return false;
    t->s = s;
    t->kp = vars[0], t->i = vars[1], t->j = vars[2], t->q = vars[3];
    t->rows = R, t->cols = W, t->steps = E / 16;
    return true;
}
