/* storage(buffer, dtype): keep a temporary in another float type.  Stores round
 * to it and loads widen from it into the type arithmetic was carried out in, so
 * the statements compute as before.
 *
 * Why: flash attention's second product multiplies the exponentials by V on
 * tensor cores, which take two f16 or two bf16 operands; the exponentials are
 * computed in f32.  Stored as bf16 (as every fused attention kernel does) they are
 * an operand `mma` accepts, and half the bytes in shared memory.
 *
 * It changes values (a narrower type rounds), so it is allowed only where the
 * rounding is no coarser than the kernel's own results: the new type keeps at least
 * as many significant bits as the least precise float output (bf16 8, f16 11, f32
 * 24, f64 53).  The harness sets its tolerance from the unscheduled kernel, so the
 * move cannot widen it.  The interpreter keeps stores unrounded (docs/harness.md),
 * so on it the move changes nothing. */
#include <string.h>

#include "xform_int.h"

static int mantissa(DType t)
{
    switch (t) {
    case DT_F64: return 53;
    case DT_F32: return 24;
    case DT_F16: return 11;
    case DT_BF16: return 8;
    default: return 0;
    }
}

typedef struct Retype {
    Kernel *k;
    Buffer *b;
    DType from, to;
} Retype;

/* A load of b becomes the load in the new type, widened to the type its old value
 * was computed in. */
static void retype_cb(Expr *e, void *p)
{
    Retype *r = p;
    if (e->kind != IE_LOAD || e->u.load.buf != r->b || e->dtype != r->from)
        return;
    DType want = dtype_compute(r->from);
    Expr *ld = arena_alloc(r->k->arena, sizeof *ld);
    *ld = *e;
    ld->dtype = r->to;
    if (want == r->to) {
        *e = *ld;
        return;
    }
    memset(e->args, 0, sizeof e->args);
    e->kind = IE_CAST;
    e->dtype = want;
    e->args[0] = ld;
}

static bool retype_stmt(Node *n, void *p)
{
    Retype *r = p;
    if (n->kind == N_STMT && n->u.stmt.buf == r->b)
        n->u.stmt.value = ir_cast(r->k, n->u.stmt.value, dtype_compute(r->to));
    return true;
}

bool xf_storage(XfCtx *c)
{
    Buffer *b = xf_arg_buffer(c, 0);
    const char *tn = b ? xf_arg_name(c, 1) : NULL;
    if (!b || !tn)
        return false;
    DType t = dtype_from_name(tn);
    if (t == DT_COUNT || !dtype_is_float(t)) {
        xf_err(c, "`%s` is not a float type (f64, f32, f16, bf16)", tn);
        return false;
    }
    if (b->kind != BUF_TEMP) {
        xf_err(c, "%s is an %s; its type is the kernel's interface", b->name, b->kind == BUF_IN ? "input" : "output");
        return false;
    }
    if (!dtype_is_float(b->dtype)) {
        xf_err(c, "%s holds %s, not floats", b->name, dtype_name(b->dtype));
        return false;
    }
    if (b->dtype == t) {
        xf_err(c, "%s is already %s", b->name, dtype_name(t));
        return false;
    }
    if (b->layout != LAYOUT_PLAIN) {
        xf_err(c, "%s is held in a tensor-core layout", b->name);
        return false;
    }
    const Buffer *coarsest = NULL;
    for (int i = 0; i < c->k->nbufs; i++) {
        const Buffer *o = c->k->bufs[i];
        if (o->kind == BUF_OUT && dtype_is_float(o->dtype) && (!coarsest || mantissa(o->dtype) < mantissa(coarsest->dtype)))
            coarsest = o;
    }
    if (!coarsest || mantissa(t) < mantissa(coarsest->dtype)) {
        if (coarsest)
            xf_err(c, "%s rounds to %d significant bits, coarser than the output %s (%s, %d): the kernel would "
                      "lose precision its result keeps",
                   dtype_name(t), mantissa(t), coarsest->name, dtype_name(coarsest->dtype), mantissa(coarsest->dtype));
        else
            xf_err(c, "kernel %s has no float output whose precision would bound the rounding", c->k->name);
        return false;
    }
    if (c->dry)
        return true;
    Retype r = {.k = c->k, .b = b, .from = b->dtype, .to = t};
    b->dtype = t;
    xf_visit_exprs(c->k, NULL, retype_cb, &r);
    xf_walk(c->k, retype_stmt, &r);
    return true;
}
