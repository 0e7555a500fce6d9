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
 * CB R S floats of F become, w x w at a time, columns of Fp.  Only the shape is
 * checked here; what makes the rewrite legal is the pass's. */
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

bool cpu_tblocks_shape(const Kernel *k, const Node *L, bool any_w, CpuTBlocks *t)
{
    memset(t, 0, sizeof *t);
    int64_t w;
    if (L->kind != N_LOOP || L->u.loop.kind != LOOP_SERIAL || L->u.loop.body.n != 1 || !zero_lo(k, L) ||
        !cpu_const_extent(k, L->u.loop.lo, L->u.loop.hi, &w) || w < 2 || w > INT32_MAX ||
        (!any_w && (w > CPU_TBLOCKS_MAX_W || (w & (w - 1)))))
        return false;
    t->w = (int)w;
    const Node *n = L->u.loop.body.v[0];
    while (n->kind == N_LOOP) {
        if (t->m == CPU_TBLOCKS_DEPTH || n->u.loop.kind != LOOP_SERIAL || n->u.loop.body.n != 1 || !zero_lo(k, n) ||
            ir_expr_uses_var(n->u.loop.hi, L->u.loop.var))
            return false;
        int64_t e = -1;
        /* only the outermost of the inner loops may run a variable number of times:
         * the strides of j are the extents of the others */
        if (!cpu_const_extent(k, n->u.loop.lo, n->u.loop.hi, &e) && t->m > 0)
            return false;
        if (t->m > 0 && e < 1)
            return false;
        t->ext[t->m] = e;
        t->b[t->m++] = n;
        n = n->u.loop.body.v[0];
    }
    if (t->m == 0 || n->kind != N_STMT || n->u.stmt.op != SOP_ASSIGN || n->u.stmt.value->kind != IE_LOAD)
        return false;
    t->st = n;
    const Expr *ld = n->u.stmt.value;
    ArAff so, lo;
    if (!cpu_offset_aff(k, n->u.stmt.buf, n->u.stmt.idx, &so) || !cpu_offset_aff(k, ld->u.load.buf, ld->u.load.idx, &lo))
        return false;
    const Var *a = L->u.loop.var;
    /* which side is the row side: contiguous along j, the other along a */
    for (int rows_read = 0; rows_read < 2; rows_read++) {
        const ArAff *r = rows_read ? &lo : &so, *c = rows_read ? &so : &lo;
        if (ar_aff_coef(c, a->id) != 1 || !dense(r, t, 1))
            continue;
        int64_t sc = ar_aff_coef(c, t->b[t->m - 1]->u.loop.var->id);
        if (sc < 1 || !dense(c, t, sc))
            continue;
        t->rows_read = rows_read;
        t->sr = ar_aff_coef(r, a->id);
        t->sc = sc;
        t->inner = 1;
        for (int i = 1; i < t->m; i++)
            t->inner *= t->ext[i];
        return true;
    }
    return false;
}
