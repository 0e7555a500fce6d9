/* GPU target lowering, pass `gpu-dead-fill`: fills of local buffers that the next
 * nest overwrites before any read are removed.
 *
 * `cache(C, jo)` stages an accumulator by copying C in, and a GEMM schedule then
 * zeroes it: the copy-in's values are never read, yet at 4096^2 f32 they cost 64 MB
 * of reads per GEMM.  In a scheduled GPU launch this pass drops a nest that only
 * fills a local buffer when the very next nest of the same list overwrites it
 * element for element: the same chain of loops (extents and kinds), one `=` store
 * into the same buffer at the same index once the loop variables are matched, and
 * a next value that does not read the buffer.  Two bare statements count as nests
 * of no loops: a one-element staging (`zs[0, 0] = C[i, j]` then `zs[0, 0] = 0`, a
 * split-K combination's running sum) loses its copy-in the same way.
 *
 * Why it is legal: every element the first nest writes is written again by the
 * next one before anything runs in between, and the next nest's values do not
 * depend on the old contents, so no read can observe the first nest's values. */
#include "gpu_int.h"
#include "../ir/walk.h"


static bool dead_fill(Kernel *k, const Node *a, const Node *b)
{
    Var *va[16], *vb[16];
    int n = 0;
    while (a->kind == N_LOOP && b->kind == N_LOOP) {
        int64_t la, ea, lb, eb;
        if (n == 16 || a->u.loop.kind != b->u.loop.kind || !gpu_loop_extent(k, a, &la, &ea) ||
            !gpu_loop_extent(k, b, &lb, &eb) || la != lb || ea != eb || a->u.loop.body.n != 1 ||
            b->u.loop.body.n != 1)
            return false;
        va[n] = a->u.loop.var;
        vb[n++] = b->u.loop.var;
        a = a->u.loop.body.v[0];
        b = b->u.loop.body.v[0];
    }
    if (a->kind != N_STMT || b->kind != N_STMT) return false;
    const Buffer *buf = a->u.stmt.buf;
    if (buf != b->u.stmt.buf || buf->mem != MEM_LOCAL || a->u.stmt.op != SOP_ASSIGN ||
        b->u.stmt.op != SOP_ASSIGN || ir_expr_reads(b->u.stmt.value, buf))
        return false;
    for (int d = 0; d < buf->rank; d++) {
        Expr *x = a->u.stmt.idx[d];
        for (int i = 0; i < n; i++) x = ir_subst(k, x, va[i], ir_var(k, vb[i]));
        if (!gpu_same_expr(ir_simplify(k, x), b->u.stmt.idx[d])) return false;
    }
    return true;
}

static void drop_in(Kernel *k, NodeList *l)
{
    for (int i = 0; i < l->n; i++) {
        if (i + 1 < l->n && dead_fill(k, l->v[i], l->v[i + 1])) {
            ir_list_remove(l, i--);
            continue;
        }
        NodeList *body = ir_body(l->v[i]);
        if (body) drop_in(k, body);
    }
}

bool gpu_dead_fill_pass(Kernel *k, Diags *d)
{
    (void)d;
    for (int t = 0; t < k->body.n; t++) {
        Node *top = k->body.v[t];
        if (!gpu_scheduled(top))
            continue;
        NodeList *body = ir_body(top);
        if (body) drop_in(k, body);
    }
    return true;
}
