/* Integer evaluation of size expressions with the kernel's bound parameters.
 * Shared by everyone who needs a number from a symbolic size: the interpreter,
 * the code generators, the harness that allocates buffers, transformations that
 * check a split factor divides an extent.  Integer semantics are the IR's: i64,
 * floor division and floor modulo; overflow and division by zero fail rather than
 * produce a number. */
#include "ir.h"
#include "lang/checked.h"

static bool eval(const Kernel *k, const Expr *e, int64_t *out)
{
    int64_t a, b;
    if (!e)
        return false;
    switch (e->kind) {
    case IE_INT:
        *out = e->u.i;
        return true;
    case IE_PARAM:
        if (e->u.param < 0 || e->u.param >= k->nparams || !k->params[e->u.param].bound)
            return false;
        *out = k->params[e->u.param].value;
        return true;
    case IE_CAST:
        if (e->dtype != DT_I64 && e->dtype != DT_I32)
            return false;
        return eval(k, e->args[0], out);
    case IE_NEG:
        return eval(k, e->args[0], &a) && ck_neg(a, out);
    case IE_ADD: case IE_SUB: case IE_MUL: case IE_DIV: case IE_MOD: case IE_MAX: case IE_MIN:
        if (!eval(k, e->args[0], &a) || !eval(k, e->args[1], &b))
            return false;
        break;
    default:
        return false; /* loop variables, loads, floats: not a size */
    }
    switch (e->kind) {
    case IE_ADD: return ck_add(a, b, out);
    case IE_SUB: return ck_sub(a, b, out);
    case IE_MUL: return ck_mul(a, b, out);
    case IE_DIV: return ck_floordiv(a, b, out);
    case IE_MOD: return ck_floormod(a, b, out);
    case IE_MAX: *out = a > b ? a : b; return true;
    case IE_MIN: *out = a < b ? a : b; return true;
    default: return false;
    }
}

bool ir_eval_size(const Kernel *k, const Expr *e, int64_t *out)
{
    return eval(k, e, out);
}

int64_t ir_buffer_elems(const Kernel *k, const Buffer *b)
{
    int64_t n = 1;
    for (int i = 0; i < b->rank; i++) {
        int64_t d;
        if (!eval(k, b->shape[i], &d) || d < 0 || !ck_mul(n, d, &n))
            return -1;
    }
    return n;
}

bool ir_all_bound(const Kernel *k, Diags *d)
{
    bool ok = true;
    for (int i = 0; i < k->nparams; i++) {
        if (k->params[i].bound)
            continue;
        ok = false;
        if (d)
            diag_plain(d, DIAG_ERROR, "parameter %s has no value: bind it with -D %s=<value>",
                       k->params[i].name, k->params[i].name);
    }
    return ok;
}
