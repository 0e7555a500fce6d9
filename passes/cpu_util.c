/* What the CPU target lowering passes share (passes/cpu.h): loop-variable ranges,
 * padded reads known inside or outside, affine comparisons.  The access analysis
 * the LLVM back end reads too is ir/cpu.c's. */
#include <stdlib.h>
#include <string.h>

#include "../lang/checked.h"
#include "cpu.h"


void cpu_ranges_init(CpuRanges *r, const Kernel *k)
{
    size_t n = (size_t)(k->nvars ? k->nvars : 1);
    r->vmin = xcalloc(n, sizeof *r->vmin);
    r->vmax = xcalloc(n, sizeof *r->vmax);
    for (int i = 0; i < k->nvars; i++)
        r->vmin[i] = 1, r->vmax[i] = 0;
}

void cpu_ranges_free(CpuRanges *r)
{
    free(r->vmin);
    free(r->vmax);
}

CpuRangeSave cpu_ranges_enter(CpuRanges *r, const Kernel *k, const Node *n)
{
    int id = n->u.loop.var->id;
    CpuRangeSave s = {r->vmin[id], r->vmax[id]};
    ArAff lo, hi;
    r->vmin[id] = 1, r->vmax[id] = 0;
    if ((n->u.loop.kind == LOOP_SERIAL || n->u.loop.kind == LOOP_UNROLL) && ar_aff_of(k, n->u.loop.lo, &lo) &&
        ar_aff_of(k, n->u.loop.hi, &hi) && lo.n == 0 && hi.n == 0 && lo.c < hi.c)
        r->vmin[id] = lo.c, r->vmax[id] = hi.c - 1;
    return s;
}

void cpu_ranges_leave(CpuRanges *r, const Node *n, CpuRangeSave s)
{
    r->vmin[n->u.loop.var->id] = s.min;
    r->vmax[n->u.loop.var->id] = s.max;
}

bool cpu_aff_range(const CpuRanges *r, const ArAff *a, int64_t *lo, int64_t *hi)
{
    return ar_aff_range(a, r->vmin, r->vmax, lo, hi);
}

int cpu_pad_known(const Kernel *k, const CpuRanges *r, const Expr *e)
{
    const Buffer *b = e->u.load.buf;
    bool all_in = true;
    for (int i = 0; i < b->rank; i++) {
        ArAff a;
        int64_t lo, hi, d = cpu_dim(k, b, i);
        if (!ar_aff_of(k, e->u.load.idx[i], &a) || !cpu_aff_range(r, &a, &lo, &hi)) {
            all_in = false;
            continue;
        }
        if (hi < 0 || lo >= d)
            return -1;
        all_in &= lo >= 0 && hi < d;
    }
    return all_in ? 1 : 0;
}

bool cpu_conjuncts(const Kernel *k, const Expr *e, CpuCmp *out, int *n, int cap)
{
    if (e->kind == IE_AND)
        return cpu_conjuncts(k, e->args[0], out, n, cap) && cpu_conjuncts(k, e->args[1], out, n, cap);
    if (*n == cap || (e->kind != IE_LT && e->kind != IE_LE && e->kind != IE_GT && e->kind != IE_GE))
        return false;
    ArAff a, b;
    if (!ar_aff_of(k, e->args[0], &a) || !ar_aff_of(k, e->args[1], &b))
        return false;
    CpuCmp *c = &out[(*n)++];
    memset(&c->d, 0, sizeof c->d);
    /* a < b: a - b <= -1;  a <= b: a - b <= 0;  a > b: b - a <= -1;  a >= b: b - a <= 0 */
    bool less = e->kind == IE_LT || e->kind == IE_LE;
    if (!ar_aff_add(&c->d, &a, less ? 1 : -1) || !ar_aff_add(&c->d, &b, less ? -1 : 1))
        return false;
    c->lim = (e->kind == IE_LT || e->kind == IE_GT) ? -1 : 0;
    return true;
}

Expr *cpu_aff_terms(Kernel *k, const ArAff *a)
{
    Expr *sum = NULL;
    for (int t = 0; t < a->n; t++) {
        if (a->k[t] == 0)
            continue;
        Expr *term = ir_bin(k, IE_MUL, ir_var(k, k->vars[a->var[t]]), ir_int(k, a->k[t]));
        sum = sum ? ir_bin(k, IE_ADD, sum, term) : term;
    }
    return sum;
}
