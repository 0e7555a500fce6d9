/* What the CPU target lowering passes and the LLVM back end share (passes/cpu.h):
 * affine forms over loop variables, access strides against a vector variable,
 * loop-variable ranges, and the small tree predicates. */
#include <stdlib.h>
#include <string.h>

#include "../lang/checked.h"
#include "cpu.h"

bool cpu_const_extent(const Kernel *k, const Expr *lo, const Expr *hi, int64_t *ext)
{
    ArAff a, b;
    return ar_aff_of(k, lo, &a) && ar_aff_of(k, hi, &b) && ar_aff_diff_const(&b, &a, ext);
}

int64_t cpu_dim(const Kernel *k, const Buffer *b, int d)
{
    int64_t v;
    return ir_eval_size(k, b->shape[d], &v) ? v : -1;
}

bool cpu_offset_aff(const Kernel *k, const Buffer *b, Expr *const *idx, ArAff *tot)
{
    ArAff a;
    int64_t stride = 1;
    memset(tot, 0, sizeof *tot);
    for (int i = b->rank - 1; i >= 0; i--) {
        if (!ar_aff_of(k, idx[i], &a) || !ar_aff_add(tot, &a, stride))
            return false;
        stride *= cpu_dim(k, b, i);
    }
    return true;
}

bool cpu_stride(const Kernel *k, const Expr *e, const Var *v, int64_t *s)
{
    int64_t a, b;
    ArAff c;
    switch (e->kind) {
    case IE_INT:
    case IE_FLT:
    case IE_PARAM: *s = 0; return true;
    case IE_VAR: *s = e->u.var == v; return true;
    case IE_LOAD:
        for (int i = 0; i < e->u.load.buf->rank; i++)
            if (!cpu_stride(k, e->u.load.idx[i], v, &a) || a != 0)
                return false;
        *s = 0;
        return true;
    case IE_NEG:
        if (!cpu_stride(k, e->args[0], v, &a))
            return false;
        *s = -a;
        return true;
    case IE_CAST:
        if (!cpu_stride(k, e->args[0], v, &a))
            return false;
        if (a != 0 && (dtype_is_float(e->dtype) || e->dtype == DT_BOOL || dtype_is_float(e->args[0]->dtype)))
            return false;
        *s = a;
        return true;
    case IE_ADD:
    case IE_SUB:
        if (!cpu_stride(k, e->args[0], v, &a) || !cpu_stride(k, e->args[1], v, &b))
            return false;
        *s = e->kind == IE_ADD ? a + b : a - b;
        return true;
    case IE_MUL:
        if (!cpu_stride(k, e->args[0], v, &a) || !cpu_stride(k, e->args[1], v, &b))
            return false;
        if (a == 0 && b == 0) {
            *s = 0;
            return true;
        }
        if (a == 0 && ar_aff_of(k, e->args[0], &c) && c.n == 0) {
            *s = c.c * b;
            return true;
        }
        if (b == 0 && ar_aff_of(k, e->args[1], &c) && c.n == 0) {
            *s = c.c * a;
            return true;
        }
        return false;
    default:
        for (int i = 0; i < ir_expr_arity(e->kind); i++)
            if (!cpu_stride(k, e->args[i], v, &a) || a != 0)
                return false;
        *s = 0;
        return true;
    }
}

CpuAccKind cpu_access_kind(const Kernel *k, Expr *const *idx, int rank, const Var *v)
{
    bool uniform = true;
    for (int i = 0; i < rank; i++) {
        int64_t s;
        if (!cpu_stride(k, idx[i], v, &s))
            return CPU_ACC_OTHER;
        if (s != 0) {
            if (i != rank - 1 || s != 1)
                return CPU_ACC_OTHER;
            uniform = false;
        }
    }
    return uniform ? CPU_ACC_UNIFORM : CPU_ACC_CONTIG;
}

bool cpu_load_padded(const Expr *e)
{
    return e->kind == IE_LOAD && e->u.load.guarded && e->u.load.buf->has_pad;
}

static bool expr_padded(const Expr *e)
{
    if (!e)
        return false;
    if (e->kind == IE_LOAD) {
        if (cpu_load_padded(e))
            return true;
        for (int i = 0; i < e->u.load.buf->rank; i++)
            if (expr_padded(e->u.load.idx[i]))
                return true;
        return false;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        if (expr_padded(e->args[i]))
            return true;
    return false;
}

bool cpu_list_padded(const NodeList *l)
{
    for (int i = 0; i < l->n; i++) {
        Node *n = l->v[i];
        if (n->kind == N_STMT) {
            if (expr_padded(n->u.stmt.value))
                return true;
            for (int j = 0; j < n->u.stmt.buf->rank; j++)
                if (expr_padded(n->u.stmt.idx[j]))
                    return true;
        } else if ((n->kind == N_IF && (expr_padded(n->u.guard.cond) || cpu_list_padded(&n->u.guard.els))) ||
                   cpu_list_padded(ir_body(n))) {
            return true;
        }
    }
    return false;
}

bool cpu_holds_scheduled(const NodeList *l)
{
    for (int i = 0; i < l->n; i++) {
        Node *n = l->v[i];
        if (n->kind == N_LOOP && (n->u.loop.kind == LOOP_UNROLL || n->u.loop.kind == LOOP_VECTOR))
            return true;
        if ((n->kind == N_LOOP || n->kind == N_IF) && cpu_holds_scheduled(ir_body(n)))
            return true;
        if (n->kind == N_IF && cpu_holds_scheduled(&n->u.guard.els))
            return true;
    }
    return false;
}

bool cpu_is_tile(const Kernel *k, const Buffer *b)
{
    if (b->kind != BUF_TEMP || b->mem != MEM_LOCAL)
        return false;
    int64_t n = ir_buffer_elems(k, b);
    return n >= 0 && n <= CPU_TILE_ELEMS;
}

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
