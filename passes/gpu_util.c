/* Small analyses shared by the GPU target passes (passes/gpu_int.h): injectivity
 * of an index over a launch's loops, multiples, lane coefficients, substitution.
 * The launch geometry the back end reads too is ir/gpu.c's. */
#include "gpu_int.h"

bool gpu_aff_injective(const Kernel *k, const Node *top, const ArAff *a)
{
    int64_t c[AR_AFF_TERMS], ext[AR_AFF_TERMS];
    int n = 0;
    for (int i = 0; i < a->n; i++) {
        if (!a->k[i]) continue;
        const Node *l = gpu_loop_of_var(top, k->vars[a->var[i]]);
        int64_t lo;
        if (!l || !gpu_loop_extent(k, l, &lo, &ext[n]))
            return a->n == 1;
        c[n++] = a->k[i] < 0 ? -a->k[i] : a->k[i];
    }
    /* sort by coefficient, then each must exceed the span of all smaller ones */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && c[j] < c[j - 1]; j--) {
            int64_t t = c[j]; c[j] = c[j - 1]; c[j - 1] = t;
            t = ext[j]; ext[j] = ext[j - 1]; ext[j - 1] = t;
        }
    int64_t span = 0;
    for (int i = 0; i < n; i++) {
        if (c[i] <= span) return false;
        span += c[i] * (ext[i] > 0 ? ext[i] - 1 : 0);
    }
    return true;
}

/* Structural equality of two expressions (same tree, same variables and buffers). */
bool gpu_same_expr(const Expr *a, const Expr *b)
{
    if (a->kind != b->kind) return false;
    switch (a->kind) {
    case IE_INT: return a->u.i == b->u.i;
    case IE_FLT: return a->u.f == b->u.f;
    case IE_PARAM: return a->u.param == b->u.param;
    case IE_VAR: return a->u.var == b->u.var;
    case IE_LOAD:
        if (a->u.load.buf != b->u.load.buf) return false;
        for (int i = 0; i < a->u.load.buf->rank; i++)
            if (!gpu_same_expr(a->u.load.idx[i], b->u.load.idx[i])) return false;
        return true;
    default:
        for (int i = 0; i < ir_expr_arity(a->kind); i++)
            if (!gpu_same_expr(a->args[i], b->args[i])) return false;
        return a->dtype == b->dtype;
    }
}

/* True when x is a multiple of m for every value of its variables. */
bool gpu_mult_of(const Kernel *k, const Expr *x, int64_t m)
{
    int64_t c;
    if (gpu_cval(k, x, &c)) return c % m == 0;
    switch (x->kind) {
    case IE_ADD: case IE_SUB: return gpu_mult_of(k, x->args[0], m) && gpu_mult_of(k, x->args[1], m);
    case IE_MUL: return gpu_mult_of(k, x->args[0], m) || gpu_mult_of(k, x->args[1], m);
    case IE_NEG: return gpu_mult_of(k, x->args[0], m);
    case IE_CAST: return !dtype_is_float(x->dtype) && gpu_mult_of(k, x->args[0], m);
    default: return false;
    }
}

bool gpu_lane_coef(const Kernel *k, const Expr *x, const Var *lane, int64_t *c)
{
    int64_t a, b;
    if (!x || !ir_expr_uses_var(x, lane)) { *c = 0; return true; }
    switch (x->kind) {
    case IE_VAR: *c = 1; return true;
    case IE_ADD: case IE_SUB:
        if (!gpu_lane_coef(k, x->args[0], lane, &a) || !gpu_lane_coef(k, x->args[1], lane, &b)) return false;
        *c = x->kind == IE_ADD ? a + b : a - b;
        return true;
    case IE_NEG:
        if (!gpu_lane_coef(k, x->args[0], lane, &a)) return false;
        *c = -a;
        return true;
    case IE_MUL:
        if (gpu_cval(k, x->args[0], &b) && gpu_lane_coef(k, x->args[1], lane, &a)) { *c = a * b; return true; }
        if (gpu_cval(k, x->args[1], &b) && gpu_lane_coef(k, x->args[0], lane, &a)) { *c = a * b; return true; }
        return false;
    case IE_CAST:
        return !dtype_is_float(x->dtype) && gpu_lane_coef(k, x->args[0], lane, c);
    default: return false;
    }
}

bool gpu_has_var(const Kernel *k, const Expr *x, const Var *v, int64_t *coef)
{
    ArAff a;
    bool ok = ar_aff_of(k, x, &a);
    *coef = ok ? ar_aff_coef(&a, v->id) : 0;
    return ok ? *coef != 0 : ir_expr_uses_var(x, v);
}

Expr *gpu_at_zero(Kernel *k, const Expr *x, const Var *v)
{
    return ir_simplify(k, ir_subst(k, (Expr *)x, v, ir_int(k, 0)));
}
