/* The IR's integer semantics (ir/arith.h): floor division and modulo, constant
 * evaluation, intervals over loop ranges, affine forms and reduction identities.
 * Every operation that can overflow goes through lang/checked.h. */
#include "arith.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lang/checked.h"

/* ---- exact integer operations ---- */

/* The arithmetic itself is lang/checked.h's, which the front end's size
 * evaluation shares; with b > 0 it cannot fail. */
int64_t ar_floordiv(int64_t a, int64_t b)
{
    int64_t q = 0;
    ck_floordiv(a, b, &q);
    return q;
}

int64_t ar_floormod(int64_t a, int64_t b)
{
    int64_t r = 0;
    ck_floormod(a, b, &r);
    return r;
}

bool ar_binop(ExprKind op, int64_t a, int64_t b, int64_t *out)
{
    switch (op) {
    case IE_ADD: return ck_add(a, b, out);
    case IE_SUB: return ck_sub(a, b, out);
    case IE_MUL: return ck_mul(a, b, out);
    case IE_DIV:
    case IE_MOD:
        /* INT64_MIN % -1 is 0 in exact arithmetic, but the division that computes it
         * traps on x86: both are left to run time, as a zero divisor is */
        if (b == 0 || (a == INT64_MIN && b == -1))
            return false;
        *out = op == IE_DIV ? ar_floordiv(a, b) : ar_floormod(a, b);
        return true;
    case IE_MAX: *out = a > b ? a : b; return true;
    case IE_MIN: *out = a < b ? a : b; return true;
    case IE_LT: *out = a < b; return true;
    case IE_LE: *out = a <= b; return true;
    case IE_GT: *out = a > b; return true;
    case IE_GE: *out = a >= b; return true;
    case IE_EQ: *out = a == b; return true;
    case IE_NE: *out = a != b; return true;
    case IE_AND: *out = a && b; return true;
    case IE_OR: *out = a || b; return true;
    default: return false;
    }
}

static bool param_value(const Kernel *k, int p, int64_t *out)
{
    if (!k || p < 0 || p >= k->nparams || !k->params[p].bound)
        return false;
    *out = k->params[p].value;
    return true;
}

/* ---- constant evaluation ---- */

bool ar_eval(ArEnv *env, const Expr *e, int64_t *out)
{
    int64_t a, b;
    if (!e)
        return false;
    switch (e->kind) {
    case IE_INT:
        *out = e->u.i;
        return true;
    case IE_PARAM:
        return param_value(env->k, e->u.param, out);
    case IE_VAR:
        if (!env->var || !env->var(env, e->u.var, &a, &b) || a != b)
            return false;
        *out = a;
        return true;
    case IE_CAST:
        if (dtype_is_float(e->dtype) || dtype_is_float(e->args[0]->dtype) || !ar_eval(env, e->args[0], &a))
            return false;
        *out = e->dtype == DT_BOOL ? a != 0 : a;
        return true;
    case IE_NEG:
        return ar_eval(env, e->args[0], &a) && ck_neg(a, out);
    case IE_NOT:
        if (!ar_eval(env, e->args[0], &a))
            return false;
        *out = !a;
        return true;
    case IE_SELECT:
        if (!ar_eval(env, e->args[0], &a))
            return false;
        return ar_eval(env, e->args[a ? 1 : 2], out);
    default:
        break;
    }
    if (ir_expr_arity(e->kind) != 2 || dtype_is_float(e->dtype))
        return false;
    return ar_eval(env, e->args[0], &a) && ar_eval(env, e->args[1], &b) && ar_binop(e->kind, a, b, out);
}

bool ar_const(const Kernel *k, const Expr *e, int64_t *out)
{
    ArEnv env = {.k = k};
    return ar_eval(&env, e, out);
}

bool ar_const_extent(const Kernel *k, const Node *loop, int64_t *ext)
{
    int64_t lo, hi;
    return ar_const(k, loop->u.loop.lo, &lo) && ar_const(k, loop->u.loop.hi, &hi) && ck_sub(hi, lo, ext);
}

/* ---- intervals ---- */

static bool ival_fail(ArEnv *env)
{
    env->overflow = true;
    return false;
}

bool ar_interval(ArEnv *env, const Expr *e, int64_t *lo, int64_t *hi)
{
    int64_t a0, a1, b0, b1;
    if (!e)
        return false;
    switch (e->kind) {
    case IE_INT:
        *lo = *hi = e->u.i;
        return true;
    case IE_PARAM:
        if (!param_value(env->k, e->u.param, lo))
            return false;
        *hi = *lo;
        return true;
    case IE_VAR:
        return env->var && env->var(env, e->u.var, lo, hi);
    case IE_LOAD:
        return env->load && env->load(env, e, lo, hi);
    case IE_CAST:
        if (dtype_is_float(e->dtype) || dtype_is_float(e->args[0]->dtype) || !ar_interval(env, e->args[0], lo, hi))
            return false;
        if (e->dtype == DT_BOOL) {
            bool never0 = *lo > 0 || *hi < 0, always0 = *lo == 0 && *hi == 0;
            *lo = never0;
            *hi = !always0;
        }
        return true;
    case IE_NEG:
        if (!ar_interval(env, e->args[0], &a0, &a1))
            return false;
        if (a0 == INT64_MIN)
            return ival_fail(env);
        *lo = -a1;
        *hi = -a0;
        return true;
    case IE_SELECT:
        if (!ar_interval(env, e->args[1], &a0, &a1) || !ar_interval(env, e->args[2], &b0, &b1))
            return false;
        *lo = a0 < b0 ? a0 : b0;
        *hi = a1 > b1 ? a1 : b1;
        return true;
    case IE_ADD: case IE_SUB: case IE_MUL: case IE_DIV: case IE_MOD: case IE_MAX: case IE_MIN:
        if (dtype_is_float(e->dtype) || !ar_interval(env, e->args[0], &a0, &a1) ||
            !ar_interval(env, e->args[1], &b0, &b1))
            return false;
        break;
    default:
        return false;
    }
    switch (e->kind) {
    case IE_ADD:
        return (ck_add(a0, b0, lo) && ck_add(a1, b1, hi)) || ival_fail(env);
    case IE_SUB:
        return (ck_sub(a0, b1, lo) && ck_sub(a1, b0, hi)) || ival_fail(env);
    case IE_MUL: {
        int64_t p[4];
        if (!ck_mul(a0, b0, &p[0]) || !ck_mul(a0, b1, &p[1]) || !ck_mul(a1, b0, &p[2]) || !ck_mul(a1, b1, &p[3]))
            return ival_fail(env);
        *lo = *hi = p[0];
        for (int i = 1; i < 4; i++) {
            *lo = p[i] < *lo ? p[i] : *lo;
            *hi = p[i] > *hi ? p[i] : *hi;
        }
        return true;
    }
    case IE_DIV: /* floor division by a positive constant is monotonic */
        if (b0 != b1 || b0 <= 0)
            return false;
        *lo = ar_floordiv(a0, b0);
        *hi = ar_floordiv(a1, b0);
        return true;
    case IE_MOD: /* one period: the remainders in order; more: all of them */
        if (b0 != b1 || b0 <= 0)
            return false;
        if (ar_floordiv(a0, b0) == ar_floordiv(a1, b0)) {
            *lo = ar_floormod(a0, b0);
            *hi = ar_floormod(a1, b0);
        } else {
            *lo = 0;
            *hi = b0 - 1;
        }
        return true;
    case IE_MAX:
        *lo = a0 > b0 ? a0 : b0;
        *hi = a1 > b1 ? a1 : b1;
        return true;
    case IE_MIN:
        *lo = a0 < b0 ? a0 : b0;
        *hi = a1 < b1 ? a1 : b1;
        return true;
    default:
        return false;
    }
}

/* ---- affine forms ---- */

bool ar_aff_add(ArAff *r, const ArAff *a, int64_t scale)
{
    int64_t t;
    if (!ck_mul(a->c, scale, &t) || !ck_add(r->c, t, &r->c))
        return false;
    for (int i = 0; i < a->n; i++) {
        int j;
        for (j = 0; j < r->n && r->var[j] != a->var[i]; j++)
            ;
        if (j == r->n) {
            if (r->n == AR_AFF_TERMS)
                return false;
            r->var[r->n] = a->var[i];
            r->k[r->n++] = 0;
        }
        if (!ck_mul(a->k[i], scale, &t) || !ck_add(r->k[j], t, &r->k[j]))
            return false;
    }
    return true;
}

bool ar_aff_of(const Kernel *k, const Expr *e, ArAff *out)
{
    memset(out, 0, sizeof *out);
    ArAff a, b;
    switch (e->kind) {
    case IE_INT: out->c = e->u.i; return true;
    case IE_PARAM: return param_value(k, e->u.param, &out->c);
    case IE_VAR:
        out->n = 1;
        out->var[0] = e->u.var->id;
        out->k[0] = 1;
        return true;
    case IE_CAST: /* integer to integer; a cast to bool is a comparison, not affine */
        return !dtype_is_float(e->dtype) && e->dtype != DT_BOOL && !dtype_is_float(e->args[0]->dtype) &&
               ar_aff_of(k, e->args[0], out);
    case IE_NEG: return ar_aff_of(k, e->args[0], &a) && ar_aff_add(out, &a, -1);
    case IE_ADD:
    case IE_SUB:
        return ar_aff_of(k, e->args[0], &a) && ar_aff_of(k, e->args[1], &b) && ar_aff_add(out, &a, 1) &&
               ar_aff_add(out, &b, e->kind == IE_ADD ? 1 : -1);
    case IE_MUL:
        if (!ar_aff_of(k, e->args[0], &a) || !ar_aff_of(k, e->args[1], &b))
            return false;
        if (ar_aff_is_const(&a))
            return ar_aff_add(out, &b, a.c);
        if (ar_aff_is_const(&b))
            return ar_aff_add(out, &a, b.c);
        return false;
    case IE_DIV: case IE_MOD: case IE_MAX: case IE_MIN:
        /* constant operands only (sizes such as (H + 2*P - R)/U + 1) */
        if (dtype_is_float(e->dtype) || !ar_aff_of(k, e->args[0], &a) || !ar_aff_of(k, e->args[1], &b) ||
            !ar_aff_is_const(&a) || !ar_aff_is_const(&b))
            return false;
        return ar_binop(e->kind, a.c, b.c, &out->c);
    default: return false;
    }
}

int64_t ar_aff_coef(const ArAff *a, int var)
{
    int64_t k = 0;
    for (int i = 0; i < a->n; i++)
        if (a->var[i] == var)
            k += a->k[i];
    return k;
}

bool ar_aff_is_const(const ArAff *a)
{
    for (int i = 0; i < a->n; i++)
        if (a->k[i] != 0)
            return false;
    return true;
}

bool ar_aff_diff_const(const ArAff *a, const ArAff *b, int64_t *d)
{
    ArAff t = {0};
    if (!ar_aff_add(&t, a, 1) || !ar_aff_add(&t, b, -1) || !ar_aff_is_const(&t))
        return false;
    *d = t.c;
    return true;
}

bool ar_aff_same(const ArAff *a, const ArAff *b)
{
    int64_t d;
    return ar_aff_diff_const(a, b, &d) && d == 0;
}

bool ar_aff_range(const ArAff *a, const int64_t *vmin, const int64_t *vmax, int64_t *lo, int64_t *hi)
{
    *lo = *hi = a->c;
    for (int i = 0; i < a->n; i++) {
        int64_t k = a->k[i], x, y;
        if (!k)
            continue;
        int v = a->var[i];
        if (vmin[v] > vmax[v])
            return false;
        if (!ck_mul(k, k > 0 ? vmin[v] : vmax[v], &x) || !ck_add(*lo, x, lo) ||
            !ck_mul(k, k > 0 ? vmax[v] : vmin[v], &y) || !ck_add(*hi, y, hi))
            return false;
    }
    return true;
}

bool ar_aff_subst(ArAff *a, int var, const ArAff *with)
{
    int64_t k = ar_aff_coef(a, var);
    ArAff r = {.c = a->c};
    for (int i = 0; i < a->n; i++)
        if (a->var[i] != var) {
            r.var[r.n] = a->var[i];
            r.k[r.n++] = a->k[i];
        }
    if (!ar_aff_add(&r, with, k))
        return false;
    *a = r;
    return true;
}

/* ---- reduction identities ---- */

bool ar_identity(StmtOp op, DType t, bool neg_zero, ArScalar *out)
{
    memset(out, 0, sizeof *out);
    out->is_float = dtype_is_float(t);
    bool i32 = t == DT_I32, b = t == DT_BOOL;
    switch (op) {
    case SOP_ADD:
        out->f = neg_zero ? -0.0 : 0.0;
        out->i = 0;
        return true;
    case SOP_MUL:
        out->f = 1.0;
        out->i = 1;
        return true;
    case SOP_MAX:
        out->f = -INFINITY;
        out->i = b ? 0 : i32 ? INT32_MIN : INT64_MIN;
        return true;
    case SOP_MIN:
        out->f = INFINITY;
        out->i = b ? 1 : i32 ? INT32_MAX : INT64_MAX;
        return true;
    default:
        return false;
    }
}

/* ---- intervals over the loops' ranges ---- */

typedef struct LoopRanges {
    const Var *v[64];
    int64_t lo[64], hi[64];
    int n;
} LoopRanges;

static void ranges_of(const Kernel *k, const Node *n, LoopRanges *r)
{
    if (n->kind == N_LOOP && r->n < 64) {
        int64_t lo, hi;
        if (ar_const(k, n->u.loop.lo, &lo) && ar_const(k, n->u.loop.hi, &hi) && hi > lo)
            r->v[r->n] = n->u.loop.var, r->lo[r->n] = lo, r->hi[r->n++] = hi - 1;
    }
    const NodeList *b = n->kind == N_STMT || n->kind == N_PREFETCH ? NULL : ir_body((Node *)n);
    for (int i = 0; b && i < b->n; i++)
        ranges_of(k, b->v[i], r);
}

static bool range_var(ArEnv *env, const Var *v, int64_t *lo, int64_t *hi)
{
    const LoopRanges *r = env->ctx;
    for (int i = 0; i < r->n; i++)
        if (r->v[i] == v) {
            *lo = r->lo[i], *hi = r->hi[i];
            return true;
        }
    return false;
}

bool ar_interval_loops(const Kernel *k, const Expr *e, int64_t *lo, int64_t *hi)
{
    LoopRanges *r = calloc(1, sizeof *r);
    if (!r)
        return false;
    for (int i = 0; i < k->body.n; i++)
        ranges_of(k, k->body.v[i], r);
    ArEnv env = {.k = k, .var = range_var, .ctx = r};
    bool ok = ar_interval(&env, e, lo, hi) && !env.overflow;
    free(r);
    return ok;
}
