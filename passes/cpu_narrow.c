/* narrow: a serial loop whose whole body is one guard bounding the loop's own
 * variable (`for j in 0..S: if j <= i: ...`, the mask of causal attention) runs
 * over the range where the guard holds: its bounds become max(lo, ..) and
 * min(hi, ..) and the guard is marked `holds`, so the back end emits its body
 * alone.  Half the iterations disappear and the others have no branch, which LLVM
 * can then vectorise.
 *
 * Legal because the guard is a conjunction of affine comparisons in which the
 * loop's variable has coefficient 1 or -1 and every other variable is fixed
 * during the loop (an enclosing loop's, not a vector lane): each comparison is
 * then `v <= b` or `v >= b` with b constant over the loop, so the iterations the
 * guard lets through are exactly [max(lo, b_lo), min(hi, b_hi + 1)).  Where the
 * ranges of the other variables show that a bound can never cut (or always
 * cuts), the max/min is left out. */
#include "cpu.h"
#include "xform_int.h"

static bool narrow(Kernel *k, const CpuRanges *r, Node *L)
{
    if (L->u.loop.kind != LOOP_SERIAL || L->u.loop.hint != HINT_NONE || L->u.loop.body.n != 1 ||
        L->u.loop.body.v[0]->kind != N_IF)
        return false;
    Node *gd = L->u.loop.body.v[0];
    if (gd->u.guard.els.n || gd->u.guard.holds)
        return false;
    CpuCmp cmp[8];
    int nc = 0;
    if (!cpu_conjuncts(k, gd->u.guard.cond, cmp, &nc, 8))
        return false;
    int lv = L->u.loop.var->id;
    for (int c = 0; c < nc; c++) {
        int64_t kk = 0;
        for (int t = 0; t < cmp[c].d.n; t++)
            if (cmp[c].d.var[t] == lv)
                kk += cmp[c].d.k[t];
        if (kk != 1 && kk != -1)
            return false;
    }
    Expr *lo = L->u.loop.lo, *hi = L->u.loop.hi;
    for (int c = 0; c < nc; c++) {
        /* d = kk*v + rest + c <= lim, rest in [rmin, rmax] when every variable's
         * range is known (then a bound the loop's own cannot exceed needs no min/max) */
        int64_t kk = 0, rmin = cmp[c].d.c, rmax = cmp[c].d.c, h, l;
        bool known = true;
        Expr *rest = ir_int(k, cmp[c].d.c);
        for (int t = 0; t < cmp[c].d.n; t++) {
            int v = cmp[c].d.var[t];
            int64_t kv = cmp[c].d.k[t];
            if (v == lv) {
                kk += kv;
            } else if (kv) {
                rest = ir_bin(k, IE_ADD, rest, ir_bin(k, IE_MUL, ir_var(k, k->vars[v]), ir_int(k, kv)));
                known &= r->vmin[v] <= r->vmax[v];
                rmin += kv > 0 ? kv * r->vmin[v] : kv * r->vmax[v];
                rmax += kv > 0 ? kv * r->vmax[v] : kv * r->vmin[v];
            }
        }
        if (kk == 1) { /* v <= lim - rest */
            Expr *b = ir_bin(k, IE_SUB, ir_int(k, cmp[c].lim + 1), rest);
            bool hc = ar_const(k, hi, &h);
            bool tighter = known && hc && cmp[c].lim + 1 - rmin <= h;
            bool looser = known && hc && cmp[c].lim + 1 - rmax >= h;
            if (!looser)
                hi = tighter ? b : ir_bin(k, IE_MIN, hi, b);
        } else { /* v >= rest - lim */
            Expr *b = ir_bin(k, IE_SUB, rest, ir_int(k, cmp[c].lim));
            bool lc = ar_const(k, lo, &l);
            bool tighter = known && lc && rmin - cmp[c].lim >= l;
            bool looser = known && lc && rmax - cmp[c].lim <= l;
            if (!looser)
                lo = tighter ? b : ir_bin(k, IE_MAX, lo, b);
        }
    }
    L->u.loop.lo = xf_simplify_affine(k, lo);
    L->u.loop.hi = xf_simplify_affine(k, hi);
    gd->u.guard.holds = true;
    return true;
}

static void narrow_list(Kernel *k, CpuRanges *r, NodeList *l, bool in_vector)
{
    for (int i = 0; i < l->n; i++) {
        Node *n = l->v[i];
        if (n->kind == N_IF) {
            narrow_list(k, r, &n->u.guard.body, in_vector);
            narrow_list(k, r, &n->u.guard.els, in_vector);
            continue;
        }
        if (n->kind != N_LOOP || n->u.loop.hint != HINT_NONE)
            continue;
        if (!in_vector)
            narrow(k, r, n);
        CpuRangeSave s = cpu_ranges_enter(r, k, n);
        narrow_list(k, r, &n->u.loop.body, in_vector || n->u.loop.kind == LOOP_VECTOR);
        cpu_ranges_leave(r, n, s);
    }
}

bool cpu_narrow(Kernel *k, Diags *d)
{
    (void)d;
    CpuRanges r;
    cpu_ranges_init(&r, k);
    narrow_list(k, &r, &k->body, false);
    cpu_ranges_free(&r);
    return true;
}
