/* Small analyses shared by the GPU target passes (passes/gpu_int.h): constants
 * with the bound sizes, loop extents and index ranges over one launch, and the
 * affine form of an index in loop variables.  Floor division and modulo, as the
 * IR defines them. */
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

static int64_t floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}

bool gpu_cval(const Kernel *k, const Expr *x, int64_t *out)
{
    int64_t a, b;
    switch (x->kind) {
    case IE_INT: *out = x->u.i; return true;
    case IE_PARAM:
        if (x->u.param < 0 || x->u.param >= k->nparams || !k->params[x->u.param].bound)
            return false;
        *out = k->params[x->u.param].value;
        return true;
    case IE_CAST:
        if (dtype_is_float(x->dtype))
            return false;
        return gpu_cval(k, x->args[0], out);
    case IE_NEG:
        if (!gpu_cval(k, x->args[0], &a)) return false;
        *out = -a;
        return true;
    case IE_ADD: case IE_SUB: case IE_MUL: case IE_DIV: case IE_MOD: case IE_MIN: case IE_MAX:
        if (dtype_is_float(x->dtype) || !gpu_cval(k, x->args[0], &a) || !gpu_cval(k, x->args[1], &b))
            return false;
        switch (x->kind) {
        case IE_ADD: *out = a + b; break;
        case IE_SUB: *out = a - b; break;
        case IE_MUL: *out = a * b; break;
        case IE_DIV: if (!b) return false; *out = floordiv(a, b); break;
        case IE_MOD: if (!b) return false; *out = a - floordiv(a, b) * b; break;
        case IE_MIN: *out = a < b ? a : b; break;
        default: *out = a > b ? a : b; break;
        }
        return true;
    default: return false;
    }
}

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

bool gpu_irange(const Kernel *k, const Node *top, const Expr *x, int64_t *lo, int64_t *hi)
{
    int64_t a0, a1, b0, b1, c;
    if (gpu_cval(k, x, &c)) { *lo = *hi = c; return true; }
    switch (x->kind) {
    case IE_VAR: {
        const Node *l = gpu_loop_of_var(top, x->u.var);
        int64_t l0, ext;
        if (!l || !gpu_loop_extent(k, l, &l0, &ext) || ext < 1) return false;
        *lo = l0;
        *hi = l0 + ext - 1;
        return true;
    }
    case IE_ADD: case IE_SUB:
        if (!gpu_irange(k, top, x->args[0], &a0, &a1) || !gpu_irange(k, top, x->args[1], &b0, &b1)) return false;
        if (x->kind == IE_ADD) { *lo = a0 + b0; *hi = a1 + b1; }
        else { *lo = a0 - b1; *hi = a1 - b0; }
        return true;
    case IE_MUL:
        if (gpu_cval(k, x->args[0], &c)) { if (!gpu_irange(k, top, x->args[1], &a0, &a1)) return false; }
        else if (gpu_cval(k, x->args[1], &c)) { if (!gpu_irange(k, top, x->args[0], &a0, &a1)) return false; }
        else return false;
        *lo = c >= 0 ? a0 * c : a1 * c;
        *hi = c >= 0 ? a1 * c : a0 * c;
        return true;
    case IE_CAST:
        if (dtype_is_float(x->dtype)) return false;
        return gpu_irange(k, top, x->args[0], lo, hi);
    case IE_DIV: case IE_MOD:
        /* floor division and modulo by a positive constant */
        if (dtype_is_float(x->dtype) || !gpu_cval(k, x->args[1], &c) || c <= 0 ||
            !gpu_irange(k, top, x->args[0], &a0, &a1))
            return false;
        if (x->kind == IE_DIV) { *lo = floordiv(a0, c); *hi = floordiv(a1, c); }
        else if (floordiv(a0, c) == floordiv(a1, c)) { *lo = a0 - floordiv(a0, c) * c; *hi = a1 - floordiv(a1, c) * c; }
        else { *lo = 0; *hi = c - 1; }
        return true;
    default:
        return false;
    }
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

static void aff_add(GAff *a, const Var *v, int64_t c)
{
    for (int i = 0; i < a->n; i++)
        if (a->v[i] == v) {
            a->c[i] += c;
            return;
        }
    if (a->n == 16) {
        a->ok = false;
        return;
    }
    a->v[a->n] = v;
    a->c[a->n++] = c;
}

void gpu_aff_of(const Kernel *k, const Expr *x, int64_t mul, GAff *a)
{
    int64_t c;
    if (!a->ok) return;
    if (gpu_cval(k, x, &c)) return;
    switch (x->kind) {
    case IE_VAR: aff_add(a, x->u.var, mul); return;
    case IE_ADD: gpu_aff_of(k, x->args[0], mul, a); gpu_aff_of(k, x->args[1], mul, a); return;
    case IE_SUB: gpu_aff_of(k, x->args[0], mul, a); gpu_aff_of(k, x->args[1], -mul, a); return;
    case IE_NEG: gpu_aff_of(k, x->args[0], -mul, a); return;
    case IE_CAST:
        if (!dtype_is_float(x->dtype)) { gpu_aff_of(k, x->args[0], mul, a); return; }
        break;
    case IE_MUL:
        if (gpu_cval(k, x->args[0], &c)) { gpu_aff_of(k, x->args[1], mul * c, a); return; }
        if (gpu_cval(k, x->args[1], &c)) { gpu_aff_of(k, x->args[0], mul * c, a); return; }
        break;
    default: break;
    }
    a->ok = false;
}

bool gpu_aff_injective(const Kernel *k, const Node *top, const GAff *a)
{
    int64_t c[16], ext[16];
    int n = 0;
    for (int i = 0; i < a->n; i++) {
        if (!a->c[i]) continue;
        const Node *l = gpu_loop_of_var(top, a->v[i]);
        int64_t lo;
        if (!l || !gpu_loop_extent(k, l, &lo, &ext[n]))
            return a->n == 1;
        c[n++] = a->c[i] < 0 ? -a->c[i] : a->c[i];
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
    GAff a = {.ok = true};
    gpu_aff_of(k, x, 1, &a);
    *coef = 0;
    for (int i = 0; i < a.n; i++)
        if (a.v[i] == v) *coef = a.c[i];
    return a.ok ? *coef != 0 : ir_expr_uses_var(x, v);
}

Expr *gpu_at_zero(Kernel *k, const Expr *x, const Var *v)
{
    return ir_simplify(k, ir_subst(k, (Expr *)x, v, ir_int(k, 0)));
}
