/* Spelling tables of the AST's X-macros: operators, built-in functions, reductions. */
#include <string.h>

#include "ast.h"

static const char *const op_names[] = {
#define X(k, s) s,
    PF_AST_OPS(X)
#undef X
};

const char *ast_op_name(AstOp op)
{
    return op_names[op];
}

static const struct {
    const char *name;
    int arity;
} builtins[] = {
#define X(k, s, n) {s, n},
    PF_BUILTINS(X)
#undef X
};

const char *builtin_name(Builtin b)
{
    return b < BI_CAST ? builtins[b].name : "cast";
}

int builtin_arity(Builtin b)
{
    return b < BI_CAST ? builtins[b].arity : 1;
}

Builtin builtin_from_name(const char *s)
{
    for (int i = 0; i < BI_CAST; i++)
        if (strcmp(builtins[i].name, s) == 0)
            return (Builtin)i;
    return BI_COUNT;
}

static const char *const reduce_names[] = {
#define X(k, s) s,
    PF_REDUCES(X)
#undef X
};

const char *reduce_name(ReduceOp r)
{
    return r < RED_COUNT ? reduce_names[r] : "?";
}
