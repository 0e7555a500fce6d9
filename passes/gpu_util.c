/* Small analyses shared by the GPU target passes (passes/gpu_int.h): constants
 * with the bound sizes, loop extents and index ranges over one launch, and the
 * affine form of an index in loop variables, through ir/arith.h. */
#include "gpu_int.h"

bool gpu_is_block(LoopKind k) { return k == LOOP_BLOCK_X || k == LOOP_BLOCK_Y || k == LOOP_BLOCK_Z; }
bool gpu_is_thread(LoopKind k) { return k == LOOP_THREAD_X || k == LOOP_THREAD_Y || k == LOOP_THREAD_Z; }

int gpu_dim(LoopKind k)
{
    switch (k) {
    case LOOP_BLOCK_X: case LOOP_THREAD_X: return 0;
    case LOOP_BLOCK_Y: case LOOP_THREAD_Y: return 1;
    case LOOP_BLOCK_Z: case LOOP_THREAD_Z: return 2;
    default: return -1;
    }
}

bool gpu_scheduled(const Node *n)
{
    if (n->kind == N_LOOP && (gpu_is_block(n->u.loop.kind) || gpu_is_thread(n->u.loop.kind)))
        return true;
    const NodeList *body = ir_body((Node *)n);
    for (int i = 0; body && i < body->n; i++)
        if (gpu_scheduled(body->v[i]))
            return true;
    return false;
}

bool gpu_cval(const Kernel *k, const Expr *x, int64_t *out) { return ar_const(k, x, out); }

bool gpu_loop_extent(const Kernel *k, const Node *l, int64_t *lo, int64_t *ext)
{
    int64_t a, b;
    if (!gpu_cval(k, l->u.loop.lo, &a) || !gpu_cval(k, l->u.loop.hi, &b))
        return false;
    *lo = a;
    *ext = b > a ? b - a : 0;
    return true;
}

const Node *gpu_loop_of_var(const Node *n, const Var *v)
{
    if (n->kind == N_LOOP && n->u.loop.var == v)
        return n;
    const NodeList *body = ir_body((Node *)n);
    for (int i = 0; body && i < body->n; i++) {
        const Node *r = gpu_loop_of_var(body->v[i], v);
        if (r) return r;
    }
    return NULL;
}

/* A loop variable ranges over its loop in the launch (ArEnv.ctx), when that loop
 * runs at least once. */
static bool launch_var(ArEnv *env, const Var *v, int64_t *lo, int64_t *hi)
{
    const Node *l = gpu_loop_of_var(env->ctx, v);
    int64_t l0, ext;
    if (!l || !gpu_loop_extent(env->k, l, &l0, &ext) || ext < 1)
        return false;
    *lo = l0;
    *hi = l0 + ext - 1;
    return true;
}

bool gpu_irange(const Kernel *k, const Node *top, const Expr *x, int64_t *lo, int64_t *hi)
{
    ArEnv env = {.k = k, .var = launch_var, .ctx = (void *)top};
    return ar_interval(&env, x, lo, hi);
}

void gpu_thread_extents(const Kernel *k, const Node *n, int64_t blk[3])
{
    if (n->kind == N_LOOP && gpu_is_thread(n->u.loop.kind)) {
        int64_t lo, ext;
        if (gpu_loop_extent(k, n, &lo, &ext)) {
            int d = gpu_dim(n->u.loop.kind);
            if (ext > blk[d]) blk[d] = ext;
        }
    }
    const NodeList *body = ir_body((Node *)n);
    for (int i = 0; body && i < body->n; i++)
        gpu_thread_extents(k, body->v[i], blk);
}

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
