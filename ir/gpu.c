/* The GPU launch geometry (ir/gpu.h): block and thread loop kinds, loop extents
 * with the bound sizes, index ranges over one launch's loops, the block shape.
 * Read by the GPU target passes and by the CUDA back end alike. */
#include "gpu.h"

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

