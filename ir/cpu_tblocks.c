/* The shape of a copy that transposes through registers in square blocks
 * (`transpose-blocks`, passes/cpu_transpose_blocks.c decides, codegen/llvm's
 * emit_tile.c translates; both read it from here so that they agree):
 *
 *   for a in 0..w { for b1 in 0..n1 { .. for bm in 0..nm { X[..] = Y[..] } } }
 *
 * where one buffer (the row side) is contiguous along the inner loops taken as one
 * index j = b1 n2..nm + .. + bm (its offset is base + sr a + j) and the other (the
 * column side) is contiguous along a (base + a + sc j).  conv2d's filter packing,
 * Fp[c, r, s, k] = F[k, c, r, s], is one with a = k, j = (c, r, s): w rows of
 * CB R S floats of F become, w x w at a time, columns of Fp.  AMX's packed
 * nn.Linear weight, Wp[p, j, q] = W[j, 2p + q] in bf16, is one in pairs: the two
 * elements of a pair of k move as one 32-bit unit.  Only the shape is checked
 * here; what makes the rewrite legal is the pass's. */
#include <stdint.h>
#include <string.h>

#include "cpu.h"

static bool zero_lo(const Kernel *k, const Node *L)
{
    ArAff lo;
    return ar_aff_of(k, L->u.loop.lo, &lo) && lo.n == 0 && lo.c == 0;
}

/* off's coefficients of the loops b[0..m) are those of one index j of stride `unit`
 * (b[m-1] moves by unit, b[i] by unit times the extents of the loops inside it). */
static bool dense(const ArAff *off, const CpuTBlocks *t, int64_t unit)
{
    int64_t s = unit;
    for (int i = t->m - 1; i >= 0; i--) {
        if (ar_aff_coef(off, t->b[i]->u.loop.var->id) != s)
            return false;
        if (i > 0)
            s *= t->ext[i];
    }
    return true;
}

/* The load a copy stores: its value, or a 16-bit load widened to the compute type
 * and stored back as the same 16-bit type (an exact round trip). */
static const Expr *copied_load(const Node *st)
{
    const Expr *v = st->u.stmt.value;
    if (v->kind == IE_CAST && v->args[0]->kind == IE_LOAD && v->args[0]->u.load.buf->dtype == st->u.stmt.buf->dtype &&
        dtype_bytes(st->u.stmt.buf->dtype) == 2)
        return v->args[0];
    return v->kind == IE_LOAD ? v : NULL;
}

bool cpu_tblocks_shape(const Kernel *k, const Node *L, bool any_w, CpuTBlocks *t)
{
    memset(t, 0, sizeof *t);
    int64_t w;
    if (L->kind != N_LOOP || L->u.loop.kind != LOOP_SERIAL || L->u.loop.body.n != 1 || !zero_lo(k, L) ||
        !cpu_const_extent(k, L->u.loop.lo, L->u.loop.hi, &w) || w < 2 || w > INT32_MAX ||
        (!any_w && (w > CPU_TBLOCKS_MAX_W || (w & (w - 1)))))
        return false;
    t->w = (int)w;
    t->unit = 1;
    const Node *n = L->u.loop.body.v[0];
    while (n->kind == N_LOOP) {
        /* an unrolled loop only as the innermost of two iterations (a pair) */
        bool pairloop = n->u.loop.kind == LOOP_UNROLL && n->u.loop.body.n == 1 && n->u.loop.body.v[0]->kind == N_STMT;
        if (t->m == CPU_TBLOCKS_DEPTH || (n->u.loop.kind != LOOP_SERIAL && !pairloop) || n->u.loop.body.n != 1 ||
            !zero_lo(k, n) || ir_expr_uses_var(n->u.loop.hi, L->u.loop.var))
            return false;
        int64_t e = -1;
        /* only the outermost of the inner loops may run a variable number of times:
         * the strides of j are the extents of the others */
        if (!cpu_const_extent(k, n->u.loop.lo, n->u.loop.hi, &e) && t->m > 0)
            return false;
        if ((t->m > 0 && e < 1) || (pairloop && e != 2))
            return false;
        t->ext[t->m] = e;
        t->b[t->m++] = n;
        n = n->u.loop.body.v[0];
    }
    if (t->m == 0 || n->kind != N_STMT || n->u.stmt.op != SOP_ASSIGN || !(t->ld = copied_load(n)))
        return false;
    t->st = n;
    const Expr *ld = t->ld;
    ArAff so, lo;
    if (!cpu_offset_aff(k, n->u.stmt.buf, n->u.stmt.idx, &so) || !cpu_offset_aff(k, ld->u.load.buf, ld->u.load.idx, &lo))
        return false;
    /* pairs: an innermost loop of two that moves both sides by one element, over
     * 16-bit elements; the unit is then the pair */
    const Node *last = t->b[t->m - 1];
    if (t->m >= 2 && t->ext[t->m - 1] == 2 && dtype_bytes(n->u.stmt.buf->dtype) == 2 &&
        dtype_bytes(ld->u.load.buf->dtype) == 2 && ar_aff_coef(&so, last->u.loop.var->id) == 1 &&
        ar_aff_coef(&lo, last->u.loop.var->id) == 1) {
        t->unit = 2;
        t->q = last;
        t->m--;
    } else if (last->u.loop.kind != LOOP_SERIAL) {
        return false;
    }
    const int64_t u = t->unit;
    const Var *a = L->u.loop.var;
    /* which side is the row side: contiguous along j, the other along a */
    for (int rows_read = 0; rows_read < 2; rows_read++) {
        const ArAff *r = rows_read ? &lo : &so, *c = rows_read ? &so : &lo;
        if (ar_aff_coef(c, a->id) != u || !dense(r, t, u))
            continue;
        int64_t sc = ar_aff_coef(c, t->b[t->m - 1]->u.loop.var->id), sr = ar_aff_coef(r, a->id);
        if (sc < u || sc % u || sr % u || !dense(c, t, sc))
            continue;
        t->rows_read = rows_read;
        t->sr = sr / u;
        t->sc = sc / u;
        t->inner = 1;
        for (int i = 1; i < t->m; i++)
            t->inner *= t->ext[i];
        return true;
    }
    return false;
}
