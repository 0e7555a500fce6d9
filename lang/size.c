/* Size expressions: integer arithmetic over size parameters and constants, as
 * written in shapes (`f32[N, (H + 2*P - R)/U + 1]`) and explicit index ranges.
 * Sema checks that they contain nothing else; here they are evaluated with bound
 * values and compared structurally (two ranges agree when their folded forms are
 * the same tree, which is what "the same size" means before values are known). */
#include <stdlib.h>

#include "ast.h"

static int64_t floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0)))
        q--;
    return q;
}

static int64_t floormod(int64_t a, int64_t b)
{
    return a - floordiv(a, b) * b;
}

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
        *out = -a;
        return true;
    case AST_BINARY:
        if (!size_eval(e->binary.a, params, bound, &a) || !size_eval(e->binary.b, params, bound, &b))
            return false;
        switch (e->binary.op) {
        case OP_ADD: *out = a + b; return true;
        case OP_SUB: *out = a - b; return true;
        case OP_MUL: *out = a * b; return true;
        case OP_DIV:
            if (b == 0)
                return false;
            *out = floordiv(a, b);
            return true;
        case OP_MOD:
            if (b == 0)
                return false;
            *out = floormod(a, b);
            return true;
        default: return false;
        }
    default:
        return false;
    }
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
