/* Integer evaluation of size expressions with the kernel's bound parameters.
 * Shared by everyone who needs a number from a symbolic size: the interpreter,
 * the code generators, the harness that allocates buffers, transformations that
 * check a split factor divides an extent.  Integer semantics are the IR's: i64,
 * floor division and floor modulo; overflow and division by zero fail rather than
 * produce a number (ir/arith.c's constant evaluation). */
#include "arith.h"
#include "ir.h"
#include "lang/checked.h"

bool ir_eval_size(const Kernel *k, const Expr *e, int64_t *out)
{
    return ar_const(k, e, out);
}

int64_t ir_buffer_elems(const Kernel *k, const Buffer *b)
{
    int64_t n = 1;
    for (int i = 0; i < b->rank; i++) {
        int64_t d;
        if (!ar_const(k, b->shape[i], &d) || d < 0 || !ck_mul(n, d, &n))
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
