/* The CPU access analysis (ir/cpu.h): constant extents, element offsets and
 * strides as affine forms (ir/arith.h), an access classified against a vector
 * loop's variable, padded reads, register tiles.  Read by the CPU target passes
 * and by the LLVM back end alike. */
#include <stdlib.h>
#include <string.h>

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
    return e->kind == IE_LOAD && e->u.load.guarded;
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

Expr *cpu_bf16_load(Expr *e)
{
    if (e->kind == IE_CAST && e->dtype == DT_F32)
        e = e->args[0];
    if (e->kind != IE_LOAD || e->u.load.buf->dtype != DT_BF16 || e->u.load.guarded || e->u.load.buf->has_pad)
        return NULL;
    return e;
}
