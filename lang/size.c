/* Size expressions: integer arithmetic over size parameters and constants, as
 * written in shapes (`f32[N, (H + 2*P - R)/U + 1]`) and explicit index ranges.
 * Sema checks that they contain nothing else; here they are evaluated with bound
 * values and compared structurally (two ranges agree when their folded forms are
 * the same tree, which is what "the same size" means before values are known). */
#include <stdlib.h>

#include "ast.h"
#include "checked.h"

/* Overflow, a zero divisor and INT64_MIN / -1 make the value unknown (false):
 * sema reports such a constant expression where it is written (size_overflows),
 * lowering reports one that needs the bound sizes. */
bool size_eval(const AstExpr *e, const int64_t *params, const bool *bound, int64_t *out)
{
    int64_t a, b;
    switch (e->kind) {
    case AST_INT:
        *out = e->ival;
        return true;
    case AST_NAME:
        if (e->name.ref != REF_PARAM || !bound || !bound[e->name.param])
            return false;
        *out = params[e->name.param];
        return true;
    case AST_UNARY:
        if (e->unary.op != OP_NEG || !size_eval(e->unary.a, params, bound, &a))
            return false;
        return ck_neg(a, out);
    case AST_BINARY:
        if (!size_eval(e->binary.a, params, bound, &a) || !size_eval(e->binary.b, params, bound, &b))
            return false;
        switch (e->binary.op) {
        case OP_ADD: return ck_add(a, b, out);
        case OP_SUB: return ck_sub(a, b, out);
        case OP_MUL: return ck_mul(a, b, out);
        case OP_DIV: return ck_floordiv(a, b, out);
        case OP_MOD: return ck_floormod(a, b, out);
        default: return false;
        }
    default:
        return false;
    }
}

/* The first subexpression whose value cannot be computed whatever the parameters
 * are: constants that overflow, or a division by a constant zero; NULL if none. */
const AstExpr *size_overflows(const AstExpr *e)
{
    int64_t v;
    switch (e->kind) {
    case AST_UNARY: {
        const AstExpr *in = size_overflows(e->unary.a);
        if (in)
            return in;
        break;
    }
    case AST_BINARY: {
        const AstExpr *in = size_overflows(e->binary.a);
        if (!in)
            in = size_overflows(e->binary.b);
        if (in)
            return in;
        /* a constant zero divisor fails whatever the parameters are */
        int64_t z;
        if ((e->binary.op == OP_DIV || e->binary.op == OP_MOD) && size_eval(e->binary.b, NULL, NULL, &z) && z == 0)
            return e;
        break;
    }
    default:
        return NULL;
    }
    /* operands are computable or mention parameters */
    int64_t a;
    if (e->kind == AST_UNARY)
        return size_eval(e->unary.a, NULL, NULL, &a) && !size_eval(e, NULL, NULL, &v) ? e : NULL;
    int64_t b;
    if (size_eval(e->binary.a, NULL, NULL, &a) && size_eval(e->binary.b, NULL, NULL, &b) &&
        !size_eval(e, NULL, NULL, &v))
        return e;
    return NULL;
}

/* Constant value of a size expression without parameters. */
static bool const_value(const AstExpr *e, int64_t *v)
{
    return size_eval(e, NULL, NULL, v);
}

bool size_equal(const AstExpr *a, const AstExpr *b)
{
    int64_t va, vb;
    bool ca = const_value(a, &va), cb = const_value(b, &vb);
    if (ca || cb)
        return ca && cb && va == vb;
    if (a->kind != b->kind)
        return false;
    switch (a->kind) {
    case AST_NAME:
        return a->name.ref == REF_PARAM && b->name.ref == REF_PARAM && a->name.param == b->name.param;
    case AST_UNARY:
        return a->unary.op == b->unary.op && size_equal(a->unary.a, b->unary.a);
    case AST_BINARY:
        if (a->binary.op != b->binary.op)
            return false;
        if (size_equal(a->binary.a, b->binary.a) && size_equal(a->binary.b, b->binary.b))
            return true;
        /* + and * commute */
        return (a->binary.op == OP_ADD || a->binary.op == OP_MUL) &&
               size_equal(a->binary.a, b->binary.b) && size_equal(a->binary.b, b->binary.a);
    default:
        return false;
    }
}
