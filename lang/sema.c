/* Semantic analysis of PDL kernels.
 *
 * It resolves every name (index, size parameter, tensor), orders the statements so
 * each temporary is computed before it is read (and reports cycles), infers the
 * range of every index from the tensors it indexes and checks that all uses agree,
 * gives temporaries their shape and dtype, types every expression, and checks the
 * rules of docs/language.md: affine integer indices, reductions only as a whole
 * right-hand side and never over a left-hand index, masks that are comparisons,
 * one defining statement per tensor.  It keeps going after an error so one run
 * reports as many independent problems as it can, and it never exits. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ast.h"
#include "checked.h"
#include "pdl_limits.h"

/* Tensor names of one kernel, hashed: every access looks its tensor up, and a
 * linear search made a 10 000-statement kernel (10 000 temporaries) take seconds.
 * Open addressing; the first tensor of a name wins, as the linear search did. */
typedef struct NameMap {
    AstTensor **slots;
    int cap, n;
} NameMap;

typedef struct Sema {
    Program *prog;
    AstKernel *k;
    Diags *d;
    Arena *a;
    AstStmt *stmt;        /* statement being checked */
    NameMap tensors;
} Sema;

/* A candidate range for an index, remembered with where it came from. */
typedef struct RangeSrc {
    AstExpr *extent;
    const char *tensor;
    int dim;
    Span span;
} RangeSrc;

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

/* Adds t unless the name is taken; returns the tensor that holds it, or NULL. */
static AstTensor *map_add(NameMap *m, AstTensor *t)
{
    if (2 * (m->n + 1) > m->cap) {
        NameMap g = {xcalloc((size_t)(m->cap ? 2 * m->cap : 64), sizeof(AstTensor *)), m->cap ? 2 * m->cap : 64, 0};
        for (int i = 0; i < m->cap; i++)
            if (m->slots[i])
                map_add(&g, m->slots[i]);
        free(m->slots);
        *m = g;
    }
    for (uint64_t i = hash_name(t->name);; i++) {
        AstTensor **slot = &m->slots[i & (uint64_t)(m->cap - 1)];
        if (!*slot) {
            *slot = t;
            m->n++;
            return NULL;
        }
        if (!strcmp((*slot)->name, t->name))
            return *slot; /* a duplicate declaration: keep the first */
    }
}

static AstTensor *find_tensor(const Sema *S, const char *name)
{
    const NameMap *m = &S->tensors;
    if (!m->cap)
        return NULL;
    for (uint64_t i = hash_name(name);; i++) {
        AstTensor *t = m->slots[i & (uint64_t)(m->cap - 1)];
        if (!t || !strcmp(t->name, name))
            return t;
    }
}

static int find_param(const AstKernel *k, const char *name)
{
    for (int i = 0; i < k->nparams; i++)
        if (strcmp(k->params[i].name, name) == 0)
            return i;
    return -1;
}

static AstIndex *find_index(AstStmt *s, const char *name)
{
    for (int i = 0; i < s->nindices; i++)
        if (strcmp(s->indices[i]->name, name) == 0)
            return s->indices[i];
    return NULL;
}

static bool dotted(Sema *S, const char *name, Span sp)
{
    if (!strchr(name, '.'))
        return false;
    diag_error(S->d, sp, "'%s': dotted names name loops in schedules; inside a kernel, names have no '.'", name);
    return true;
}

/* ---- size expressions (shapes, explicit ranges) ---- */

static bool check_size(Sema *S, AstExpr *e, const char *what)
{
    switch (e->kind) {
    case AST_INT:
        e->dtype = DT_I64;
        return true;
    case AST_NAME: {
        int p = find_param(S->k, e->name.name);
        if (p < 0 && S->stmt && find_index(S->stmt, e->name.name)) {
            /* the hint to add an index to the parameter list would be wrong: a range
             * that moves with another index is a mask */
            diag_error(S->d, e->span, "%s cannot depend on index %s: ranges are fixed sizes; restrict the terms with "
                       "a mask instead (sum(j) X[j] where j <= %s)", what, e->name.name, e->name.name);
            return false;
        }
        if (p < 0 && find_tensor(S, e->name.name)) {
            diag_error(S->d, e->span, "%s uses tensor %s: sizes are made of size parameters and integers, never of "
                       "tensor values", what, e->name.name);
            return false;
        }
        if (p < 0 && kernel_find_dtparam(S->k, e->name.name) >= 0) {
            diag_error(S->d, e->span, "%s uses '%s', a dtype parameter of kernel %s: it names an element type, "
                       "never a size", what, e->name.name, S->k->name);
            return false;
        }
        if (p < 0) {
            diag_error(S->d, e->span, "%s uses '%s', which is not a size parameter of kernel %s; add it to the parameter list",
                       what, e->name.name, S->k->name);
            return false;
        }
        e->name.ref = REF_PARAM;
        e->name.param = p;
        e->dtype = DT_I64;
        return true;
    }
    case AST_UNARY:
        if (e->unary.op == OP_NEG) {
            e->dtype = DT_I64;
            return check_size(S, e->unary.a, what);
        }
        break;
    case AST_BINARY:
        if (e->binary.op <= OP_MOD) {
            bool ok = check_size(S, e->binary.a, what);
            ok = check_size(S, e->binary.b, what) && ok;
            e->dtype = DT_I64;
            return ok;
        }
        break;
    default:
        break;
    }
    diag_error(S->d, e->span, "%s must be built from size parameters and integers with + - * / %%", what);
    return false;
}

/* A checked size expression whose constant part cannot be computed: an overflow of
 * 64-bit integers or a division by zero, reported where it is written. */
static bool size_computable(Sema *S, const AstExpr *e, const char *what)
{
    const AstExpr *bad = size_overflows(e);
    if (!bad)
        return true;
    int64_t b;
    bool div = bad->kind == AST_BINARY && (bad->binary.op == OP_DIV || bad->binary.op == OP_MOD);
    diag_error(S->d, bad->span, "%s cannot be computed: %s", what,
               div && size_eval(bad->binary.b, NULL, NULL, &b) && b == 0 ? "a division by zero"
                                                                        : "it overflows 64-bit integers");
    return false;
}

/* ---- expressions ---- */

static bool contains_index(const AstExpr *e)
{
    switch (e->kind) {
    case AST_NAME: return e->name.ref == REF_INDEX;
    case AST_UNARY: return contains_index(e->unary.a);
    case AST_BINARY: return contains_index(e->binary.a) || contains_index(e->binary.b);
    case AST_ACCESS:
    case AST_CALL: return true; /* not affine anyway */
    default: return false;
    }
}

/* Index expressions must be affine in the indices (products with a size or a
 * constant, floor division and modulo by index-free amounts). */
static bool check_affine(Sema *S, const AstExpr *e, const AstExpr *whole, const char *tname)
{
    switch (e->kind) {
    case AST_INT:
    case AST_NAME: return true;
    case AST_UNARY:
        if (e->unary.op == OP_NEG)
            return check_affine(S, e->unary.a, whole, tname);
        break;
    case AST_BINARY:
        switch (e->binary.op) {
        case OP_ADD:
        case OP_SUB:
            return check_affine(S, e->binary.a, whole, tname) && check_affine(S, e->binary.b, whole, tname);
        case OP_MUL:
            if (contains_index(e->binary.a) && contains_index(e->binary.b)) {
                diag_error(S->d, e->span, "index of %s is not affine: a product of two indices; "
                           "indices are sums of indices times sizes or constants", tname);
                return false;
            }
            return check_affine(S, e->binary.a, whole, tname) && check_affine(S, e->binary.b, whole, tname);
        case OP_DIV:
        case OP_MOD:
            if (contains_index(e->binary.b)) {
                diag_error(S->d, e->binary.b->span, "index of %s divides by an index: only sizes and constants may divide", tname);
                return false;
            }
            return check_affine(S, e->binary.a, whole, tname);
        default:
            break;
        }
        break;
    case AST_ACCESS:
        /* a gather: an integer tensor value as (a term of) an index; lowering
         * bounds it with the index tensor's declared range or the pad of tname */
        if (e->access.tensor && dtype_is_float(e->access.tensor->dtype)) {
            diag_error(S->d, e->span, "%s holds %s values: only integer tensors index other tensors (in an index "
                       "of %s)", e->access.tensor->name, dtype_name(e->access.tensor->dtype), tname);
            return false;
        }
        return true;
    default:
        break;
    }
    diag_error(S->d, e->span, "an index of %s must be an integer expression of indices, sizes and constants", tname);
    return false;
}

static bool is_bool(DType t) { return t == DT_BOOL; }

static bool expr_check(Sema *S, AstExpr *e, PtrVec *ranges, PtrVec *reads);

static void add_range(Sema *S, PtrVec *ranges, AstIndex *ix, AstExpr *extent, const char *tensor, int dim, Span sp)
{
    RangeSrc *r = arena_alloc(S->a, sizeof *r);
    r->extent = extent;
    r->tensor = tensor;
    r->dim = dim;
    r->span = sp;
    vec_push(&ranges[ix->id], r);
}

static bool check_access(Sema *S, AstExpr *e, PtrVec *ranges, PtrVec *reads)
{
    AstTensor *t = find_tensor(S, e->access.name);
    if (!t) {
        if (find_param(S->k, e->access.name) >= 0)
            diag_error(S->d, e->span, "'%s' is a size parameter, not a tensor: it cannot be indexed", e->access.name);
        else
            diag_error(S->d, e->span, "unknown tensor '%s'", e->access.name);
        return false;
    }
    e->access.tensor = t;
    e->dtype = t->dtype;
    t->used = true;
    vec_push(reads, t);
    if (t->rank != e->access.nidx) {
        diag_error(S->d, e->span, "%s has %d dimension%s but is indexed with %d", t->name, t->rank,
                   t->rank == 1 ? "" : "s", e->access.nidx);
        return false;
    }
    bool ok = true;
    for (int d = 0; d < e->access.nidx; d++) {
        AstExpr *ix = e->access.idx[d];
        if (!expr_check(S, ix, ranges, reads)) {
            ok = false;
            continue;
        }
        if (dtype_is_float(ix->dtype) || is_bool(ix->dtype)) {
            diag_error(S->d, ix->span, "an index of %s must be an integer expression, not %s", t->name,
                       dtype_name(ix->dtype));
            ok = false;
            continue;
        }
        if (!check_affine(S, ix, ix, t->name)) {
            ok = false;
            continue;
        }
        /* A plain index names its range; a shifted one is checked against the
         * bounds when sizes are known (lowering). */
        if (ix->kind == AST_NAME && ix->name.ref == REF_INDEX && t->shape)
            add_range(S, ranges, ix->name.index, t->shape[d], t->name, d, e->span);
    }
    return ok;
}

static DType float_of(DType t)
{
    return dtype_is_float(t) ? t : DT_F32;
}

static bool check_call(Sema *S, AstExpr *e, PtrVec *ranges, PtrVec *reads)
{
    DType cast = dtype_from_name(e->call.fn);
    Builtin b = builtin_from_name(e->call.fn);
    if (cast != DT_COUNT) {
        b = BI_CAST;
        e->call.cast_to = cast;
    }
    e->call.builtin = b;
    if (b == BI_COUNT) {
        if (find_tensor(S, e->call.fn))
            diag_error(S->d, e->span, "%s is a tensor: index it with [ ], not ( )", e->call.fn);
        else if (!strcmp(e->call.fn, "sum") || !strcmp(e->call.fn, "prod"))
            diag_error(S->d, e->span, "%s is a reduction, not a function: write %s(k) expr, with the reduced "
                       "indices in the parentheses and the expression after them", e->call.fn, e->call.fn);
        else
            diag_error(S->d, e->span, "unknown function '%s'; the built-ins are exp log sqrt rsqrt tanh erf abs "
                       "log1p expm1 sigmoid pow floor ceil round sign max min clamp select and the casts "
                       "f64 f32 f16 bf16 i32", e->call.fn);
        return false;
    }
    if (builtin_arity(b) != e->call.nargs) {
        /* `max(j) -x` lexes as the call max(j) minus x: say how to write the reduction. */
        if ((b == BI_MAX || b == BI_MIN) && e->call.nargs == 1)
            diag_error(S->d, e->span, "%s takes 2 arguments, not 1; a reduction is written %s(j) expr, with the "
                       "expression in ( ) if it starts with '-'", e->call.fn, e->call.fn);
        else
            diag_error(S->d, e->span, "%s takes %d argument%s, not %d", e->call.fn, builtin_arity(b),
                       builtin_arity(b) == 1 ? "" : "s", e->call.nargs);
        return false;
    }
    bool ok = true;
    for (int i = 0; i < e->call.nargs; i++)
        ok = expr_check(S, e->call.args[i], ranges, reads) && ok;
    if (!ok)
        return false;
    AstExpr **a = e->call.args;
    switch (b) {
    case BI_CAST:
        if (is_bool(a[0]->dtype)) {
            diag_error(S->d, a[0]->span, "a comparison is not a number; use select(cond, 1, 0)");
            return false;
        }
        e->dtype = cast;
        return true;
    case BI_SELECT:
        if (!is_bool(a[0]->dtype)) {
            diag_error(S->d, a[0]->span, "the first argument of select must be a comparison");
            return false;
        }
        if (is_bool(a[1]->dtype) || is_bool(a[2]->dtype)) {
            diag_error(S->d, e->span, "select chooses between numbers, not comparisons");
            return false;
        }
        e->dtype = dtype_promote(a[1]->dtype, a[2]->dtype);
        return true;
    case BI_MAX:
    case BI_MIN:
        if (is_bool(a[0]->dtype) || is_bool(a[1]->dtype)) {
            diag_error(S->d, e->span, "%s compares numbers, not comparisons", e->call.fn);
            return false;
        }
        e->dtype = dtype_promote(a[0]->dtype, a[1]->dtype);
        return true;
    case BI_CLAMP:
        for (int i = 0; i < 3; i++)
            if (is_bool(a[i]->dtype)) {
                diag_error(S->d, a[i]->span, "clamp bounds numbers, not comparisons");
                return false;
            }
        e->dtype = dtype_promote(dtype_promote(a[0]->dtype, a[1]->dtype), a[2]->dtype);
        return true;
    case BI_POW:
        if (is_bool(a[0]->dtype) || is_bool(a[1]->dtype)) {
            diag_error(S->d, e->span, "pow of a comparison: use select(cond, a, b) to turn a condition into a number");
            return false;
        }
        e->dtype = float_of(dtype_promote(a[0]->dtype, a[1]->dtype));
        return true;
    case BI_ABS:
    case BI_SIGN:
    case BI_FLOOR:
    case BI_CEIL:
    case BI_ROUND:
        /* these keep an integer an integer: floor(i / 2) is the index it reads */
        if (is_bool(a[0]->dtype)) {
            diag_error(S->d, a[0]->span, "%s of a comparison: use select(cond, a, b) to turn a condition into a "
                       "number", e->call.fn);
            return false;
        }
        e->dtype = a[0]->dtype;
        return true;
    default:
        if (is_bool(a[0]->dtype)) {
            diag_error(S->d, a[0]->span, "%s of a comparison: use select(cond, a, b) to turn a condition into a number",
                       e->call.fn);
            return false;
        }
        e->dtype = float_of(a[0]->dtype);
        return true;
    }
}

static bool expr_check(Sema *S, AstExpr *e, PtrVec *ranges, PtrVec *reads)
{
    switch (e->kind) {
    case AST_INT:
        e->dtype = DT_I64;
        return true;
    case AST_FLOAT:
        e->dtype = DT_F32; /* literals are weak: they do not widen a temporary */
        return true;
    case AST_NAME: {
        if (dotted(S, e->name.name, e->span))
            return false;
        AstIndex *ix = find_index(S->stmt, e->name.name);
        if (ix) {
            e->name.ref = REF_INDEX;
            e->name.index = ix;
            e->dtype = DT_I64;
            return true;
        }
        int p = find_param(S->k, e->name.name);
        if (p >= 0) {
            e->name.ref = REF_PARAM;
            e->name.param = p;
            e->dtype = DT_I64;
            return true;
        }
        AstTensor *t = find_tensor(S, e->name.name);
        if (t) {
            if (t->rank != 0) {
                diag_error(S->d, e->span, "%s is a tensor with %d dimension%s: index it, %s[...]", t->name, t->rank,
                           t->rank == 1 ? "" : "s", t->name);
                return false;
            }
            const char *name = e->name.name;
            e->kind = AST_ACCESS; /* a scalar tensor read */
            e->access.name = name;
            e->access.idx = NULL;
            e->access.nidx = 0;
            return check_access(S, e, ranges, reads);
        }
        if (kernel_find_dtparam(S->k, e->name.name) >= 0) {
            diag_error(S->d, e->span, "'%s' is a dtype parameter of kernel %s: it names an element type, not a value",
                       e->name.name, S->k->name);
            return false;
        }
        diag_error(S->d, e->span, "unknown name '%s': not an index of this statement, a size parameter or a tensor",
                   e->name.name);
        return false;
    }
    case AST_ACCESS:
        if (dotted(S, e->access.name, e->span))
            return false;
        return check_access(S, e, ranges, reads);
    case AST_CALL:
        return check_call(S, e, ranges, reads);
    case AST_UNARY:
        if (!expr_check(S, e->unary.a, ranges, reads))
            return false;
        if (e->unary.op == OP_NOT) {
            if (!is_bool(e->unary.a->dtype)) {
                diag_error(S->d, e->span, "'!' applies to comparisons, not to %s values", dtype_name(e->unary.a->dtype));
                return false;
            }
            e->dtype = DT_BOOL;
            return true;
        }
        if (is_bool(e->unary.a->dtype)) {
            diag_error(S->d, e->span, "cannot negate a comparison; use '!'");
            return false;
        }
        e->dtype = e->unary.a->dtype;
        return true;
    case AST_BINARY: {
        bool ok = expr_check(S, e->binary.a, ranges, reads);
        ok = expr_check(S, e->binary.b, ranges, reads) && ok;
        if (!ok)
            return false;
        DType ta = e->binary.a->dtype, tb = e->binary.b->dtype;
        AstOp op = e->binary.op;
        if (op == OP_AND || op == OP_OR) {
            if (!is_bool(ta) || !is_bool(tb)) {
                diag_error(S->d, e->span, "operands of '%s' must be comparisons", ast_op_name(op));
                return false;
            }
            e->dtype = DT_BOOL;
            return true;
        }
        if (is_bool(ta) || is_bool(tb)) {
            diag_error(S->d, is_bool(ta) ? e->binary.a->span : e->binary.b->span,
                       "a comparison is not a number: use select(cond, a, b), or '&&' to combine conditions");
            return false;
        }
        if (op >= OP_LT && op <= OP_NE) {
            e->dtype = DT_BOOL;
            return true;
        }
        if (op == OP_MOD && (dtype_is_float(ta) || dtype_is_float(tb))) {
            diag_error(S->d, e->span, "'%%' needs integer operands, not %s", dtype_name(dtype_is_float(ta) ? ta : tb));
            return false;
        }
        e->dtype = dtype_promote(ta, tb);
        return true;
    }
    case AST_REDUCE:
        diag_error(S->d, e->span, "a reduction must be the whole right-hand side of a statement; "
                   "compute it into a temporary first (t[i] = %s(...) ...)", reduce_name(e->reduce.op));
        return false;
    }
    return false;
}

/* ---- statements ---- */

static AstIndex *new_index(Sema *S, AstStmt *s, const char *name, Span sp, bool red)
{
    AstIndex *ix = arena_alloc(S->a, sizeof *ix);
    ix->name = name;
    ix->span = sp;
    ix->is_reduction = red;
    ix->id = s->nindices;
    s->indices[s->nindices++] = ix;
    return ix;
}

static AstExpr *size_sub(Sema *S, AstExpr *hi, AstExpr *lo)
{
    int64_t v;
    if (size_eval(lo, NULL, NULL, &v) && v == 0)
        return hi;
    AstExpr *e = arena_alloc(S->a, sizeof *e);
    e->kind = AST_BINARY;
    e->span = span_join(lo->span, hi->span);
    e->dtype = DT_I64;
    e->binary.op = OP_SUB;
    e->binary.a = hi;
    e->binary.b = lo;
    return e;
}

static void show_size(const AstExpr *e, StrBuf *b)
{
    ast_print_expr(e, b);
}


/* Whether e names index ix anywhere (a deep expression counts as naming it: the
 * callers warn, and would rather not than guess). */
static bool uses_index(const AstExpr *body, const AstIndex *ix)
{
    const AstExpr *stack[64];
    int sp = 0;
    stack[sp++] = body;
    while (sp) {
        const AstExpr *e = stack[--sp];
        switch (e->kind) {
        case AST_NAME:
            if (e->name.index == ix)
                return true;
            break;
        case AST_ACCESS: for (int j = 0; j < e->access.nidx && sp < 63; j++) stack[sp++] = e->access.idx[j]; break;
        case AST_CALL: for (int j = 0; j < e->call.nargs && sp < 63; j++) stack[sp++] = e->call.args[j]; break;
        case AST_UNARY: stack[sp++] = e->unary.a; break;
        case AST_BINARY: if (sp < 62) { stack[sp++] = e->binary.a; stack[sp++] = e->binary.b; } break;
        default: break;
        }
        if (sp >= 62)
            return true;
    }
    return false;
}

/* The terms of a sum's body added or subtracted at its top level that use none of
 * the summed indices: one warning for the first, pointing at it. */
static void warn_constant_terms(Sema *S, const AstStmt *s, const AstExpr *body)
{
    const AstExpr *stack[32];
    int sp = 0;
    stack[sp++] = body;
    while (sp) {
        const AstExpr *e = stack[--sp];
        if (e->kind == AST_BINARY && (e->binary.op == OP_ADD || e->binary.op == OP_SUB) && sp < 30) {
            stack[sp++] = e->binary.b;
            stack[sp++] = e->binary.a;
            continue;
        }
        if (e == body || e->kind == AST_INT || e->kind == AST_FLOAT)
            continue; /* no top-level sum; a constant term is plainly meant */
        bool uses = false;
        for (int i = s->nlhs; i < s->nindices && !uses; i++)
            uses = uses_index(e, s->indices[i]);
        if (!uses) {
            StrBuf t = {0};
            ast_print_expr(e, &t);
            diag_warning(S->d, e->span, "the term %s uses none of the summed indices: the sum adds it once for "
                         "every term; to add it once, sum into a temporary and add it in a statement after",
                         t.s ? t.s : "");
            sb_free(&t);
            return;
        }
    }
}

static bool check_stmt(Sema *S, AstStmt *s)
{
    S->stmt = s;
    AstTensor *t = s->lhs;
    AstExpr *body = s->rhs;
    int nred = s->rhs->kind == AST_REDUCE ? s->rhs->reduce.nvars : 0;
    s->indices = arena_alloc(S->a, sizeof(AstIndex *) * (size_t)(s->nlhs + nred + 1));
    bool ok = true;
    /* One loop per index: bound the nest's depth before anything walks it. */
    if (s->nlhs + nred > PDL_MAX_INDICES) {
        diag_error(S->d, s->span, "this statement has %d indices (a loop nest %d deep); the limit is %d",
                   s->nlhs + nred, s->nlhs + nred, PDL_MAX_INDICES);
        return false;
    }

    for (int i = 0; i < s->nlhs; i++) {
        AstExpr *n = s->lhs_idx[i];
        if (n->kind != AST_NAME) {
            diag_error(S->d, n->span, "left-hand side indices must be plain index names; "
                       "move shifts and arithmetic to the right-hand side");
            ok = false;
            continue;
        }
        if (dotted(S, n->name.name, n->span)) {
            ok = false;
            continue;
        }
        if (find_index(s, n->name.name)) {
            diag_error(S->d, n->span, "index %s appears twice on the left-hand side; use a different name for each dimension",
                       n->name.name);
            ok = false;
            continue;
        }
        if (find_param(S->k, n->name.name) >= 0) {
            diag_error(S->d, n->span, "'%s' is a size parameter and cannot be used as an index name", n->name.name);
            ok = false;
            continue;
        }
        AstIndex *ix = new_index(S, s, n->name.name, n->span, false);
        n->name.ref = REF_INDEX;
        n->name.index = ix;
        n->dtype = DT_I64;
    }
    if (s->rhs->kind == AST_REDUCE) {
        body = s->rhs->reduce.body;
        for (int i = 0; i < nred; i++) {
            AstRedVar *v = &s->rhs->reduce.vars[i];
            if (dotted(S, v->name, v->span)) {
                ok = false;
                continue;
            }
            AstIndex *prev = find_index(s, v->name);
            if (prev) {
                if (prev->is_reduction)
                    diag_error(S->d, v->span, "reduction index %s is listed twice", v->name);
                else
                    diag_error(S->d, v->span, "reduction index %s also appears on the left-hand side of %s: "
                               "an index is either kept (left) or reduced, not both", v->name, s->lhs_name);
                ok = false;
                continue;
            }
            if (find_param(S->k, v->name) >= 0) {
                diag_error(S->d, v->span, "'%s' is a size parameter and cannot be used as an index name", v->name);
                ok = false;
                continue;
            }
            v->index = new_index(S, s, v->name, v->span, true);
            if (v->lo) {
                bool rok = check_size(S, v->lo, "a reduction range");
                rok = check_size(S, v->hi, "a reduction range") && rok;
                rok = rok && size_computable(S, v->lo, "a reduction range") &&
                      size_computable(S, v->hi, "a reduction range");
                int64_t clo, chi, cext;
                if (rok && size_eval(v->lo, NULL, NULL, &clo) && size_eval(v->hi, NULL, NULL, &chi) &&
                    (!ck_sub(chi, clo, &cext) || cext < 1)) {
                    diag_error(S->d, span_join(v->lo->span, v->hi->span),
                               "the range %lld..%lld of %s is empty: a range lo..hi needs hi > lo",
                               (long long)clo, (long long)chi, v->name);
                    rok = false;
                }
                if (rok) {
                    v->index->lo = v->lo;
                    v->index->extent = size_sub(S, v->hi, v->lo);
                } else {
                    ok = false;
                }
            }
        }
        if (body->kind == AST_REDUCE) {
            diag_error(S->d, body->span, "nested reductions: list all reduced indices in one, %s(a, b) ...",
                       reduce_name(s->rhs->reduce.op));
            return false;
        }
    }
    if (!ok)
        return false;

    PtrVec *ranges = xcalloc((size_t)s->nindices + 1, sizeof(PtrVec));
    PtrVec reads = {0};
    if (t->shape)
        for (int i = 0; i < s->nlhs; i++)
            add_range(S, ranges, s->indices[i], t->shape[i], t->name, i, s->lhs_span);
    ok = expr_check(S, body, ranges, &reads);
    if (s->where) {
        if (s->where->kind == AST_REDUCE) {
            diag_error(S->d, s->where->span, "a mask cannot be a reduction");
            ok = false;
        } else if (expr_check(S, s->where, ranges, &reads)) {
            if (!is_bool(s->where->dtype)) {
                diag_error(S->d, s->where->span, "the mask after 'where' must be a comparison, such as j <= i");
                ok = false;
            }
        } else {
            ok = false;
        }
    }

    /* Ranges: every use that names a range must agree. */
    for (int i = 0; ok && i < s->nindices; i++) {
        AstIndex *ix = s->indices[i];
        PtrVec *r = &ranges[i];
        if (ix->extent) /* explicit range */
            continue;
        if (r->n == 0) {
            if (ix->is_reduction)
                diag_error(S->d, ix->span, "cannot infer the range of index %s: use it alone as an index of some tensor, "
                           "or give it a range, %s(%s in 0..N)", ix->name, reduce_name(s->rhs->reduce.op), ix->name);
            else
                diag_error(S->d, ix->span, "cannot infer the range of index %s: %s is a temporary, so %s must appear "
                           "alone as an index of a tensor on the right-hand side", ix->name, t->name, ix->name);
            ok = false;
            continue;
        }
        RangeSrc *first = r->v[0];
        ix->extent = first->extent;
        for (int j = 1; j < r->n; j++) {
            RangeSrc *o = r->v[j];
            if (!size_equal(first->extent, o->extent)) {
                StrBuf a = {0}, b = {0};
                show_size(first->extent, &a);
                show_size(o->extent, &b);
                diag_error(S->d, o->span, "index %s has inconsistent ranges: 0..%s from %s (dimension %d) but 0..%s "
                           "from %s (dimension %d)", ix->name, a.s, first->tensor, first->dim + 1, b.s, o->tensor, o->dim + 1);
                diag_note(S->d, first->span, "the range 0..%s of %s comes from here", a.s, ix->name);
                sb_free(&a);
                sb_free(&b);
                ok = false;
                break;
            }
        }
    }
    for (int i = 0; i < s->nindices; i++)
        vec_free(&ranges[i]);
    free(ranges);
    vec_free(&reads);
    if (!ok)
        return false;

    /* Unused reduction indices multiply the result; almost always a slip. */
    for (int i = s->nlhs; i < s->nindices; i++)
        if (!uses_index(body, s->indices[i]) && !(s->where && uses_index(s->where, s->indices[i])))
            diag_warning(S->d, s->indices[i]->span, "reduction index %s is not used in the body: the result is "
                         "multiplied (or repeated) over its range", s->indices[i]->name);
    /* A sum's body is the whole right-hand side, so a term added to the product
     * that uses none of the summed indices (`sum(e) q[i, e] * k[j, e] + bias[i, j]`)
     * is added once per term: a slip where the user meant it outside the sum. */
    if (s->rhs->kind == AST_REDUCE && s->rhs->reduce.op == RED_SUM && s->nindices > s->nlhs)
        warn_constant_terms(S, s, body);

    /* The result type, and the temporary's shape and dtype. */
    DType vt = body->dtype;
    if (is_bool(vt)) {
        diag_error(S->d, body->span, "a comparison cannot be stored; use select(cond, 1.0, 0.0)");
        return false;
    }
    if (t->kind == TENSOR_TEMP) {
        DType dt = vt;
        if (dt == DT_I64)
            dt = DT_I32;
        if (dt == DT_F16 || dt == DT_BF16)
            dt = DT_F32; /* intermediate values keep compute precision */
        t->dtype = dt;
        t->dtype_known = true;
        t->rank = s->nlhs;
        t->shape = arena_alloc(S->a, sizeof(AstExpr *) * (size_t)(t->rank ? t->rank : 1));
        for (int i = 0; i < t->rank; i++)
            t->shape[i] = s->indices[i]->extent;
    } else if (!dtype_is_float(t->dtype) && dtype_is_float(vt)) {
        diag_error(S->d, body->span, "%s is %s but the right-hand side is %s: convert explicitly with %s(...)", t->name,
                   dtype_name(t->dtype), dtype_name(vt), dtype_name(t->dtype));
        return false;
    }
    return true;
}

/* ---- ordering: temporaries before their readers ---- */

static void collect_reads(AstExpr *e, PtrVec *out, const Sema *k)
{
    if (!e)
        return;
    switch (e->kind) {
    case AST_ACCESS: {
        AstTensor *t = find_tensor(k, e->access.name);
        if (t)
            vec_push(out, t);
        for (int i = 0; i < e->access.nidx; i++)
            collect_reads(e->access.idx[i], out, k);
        break;
    }
    case AST_NAME: {
        AstTensor *t = find_tensor(k, e->name.name);
        if (t)
            vec_push(out, t);
        break;
    }
    case AST_CALL:
        for (int i = 0; i < e->call.nargs; i++)
            collect_reads(e->call.args[i], out, k);
        break;
    case AST_UNARY: collect_reads(e->unary.a, out, k); break;
    case AST_BINARY:
        collect_reads(e->binary.a, out, k);
        collect_reads(e->binary.b, out, k);
        break;
    case AST_REDUCE: collect_reads(e->reduce.body, out, k); break;
    default: break;
    }
}

/* A binary min-heap of statement positions. */
static void heap_push(int *h, int *n, int v)
{
    int i = (*n)++;
    for (; i > 0 && h[(i - 1) / 2] > v; i = (i - 1) / 2)
        h[i] = h[(i - 1) / 2];
    h[i] = v;
}

static int heap_pop(int *h, int *n)
{
    int top = h[0], v = h[--*n], i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && h[c + 1] < h[c])
            c++;
        if (h[c] >= v)
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = v;
    return top;
}

/* Whether e is the tensor's own previous element in a scan: the left-hand indices
 * as written, except one that is `i - 1` or `i + 1`.  Sets *dim and *dir. */
static bool scan_carry(const AstStmt *s, const AstExpr *e, int *dim, int *dir)
{
    if (e->kind != AST_ACCESS || strcmp(e->access.name, s->lhs_name) != 0 || e->access.nidx != s->nlhs)
        return false;
    *dim = -1;
    for (int d = 0; d < s->nlhs; d++) {
        const AstExpr *x = e->access.idx[d];
        const char *want = s->lhs_idx[d]->kind == AST_NAME ? s->lhs_idx[d]->name.name : NULL;
        if (!want)
            return false;
        if (x->kind == AST_NAME && !strcmp(x->name.name, want))
            continue;
        if (x->kind == AST_BINARY && (x->binary.op == OP_ADD || x->binary.op == OP_SUB) &&
            x->binary.a->kind == AST_NAME && !strcmp(x->binary.a->name.name, want) &&
            x->binary.b->kind == AST_INT && x->binary.b->ival == 1 && *dim < 0) {
            *dim = d;
            *dir = x->binary.op == OP_SUB ? 1 : -1;
            continue;
        }
        return false;
    }
    return *dim >= 0;
}

static bool reads_tensor_any(const AstExpr *e)
{
    if (!e)
        return false;
    switch (e->kind) {
    case AST_ACCESS: return true;
    case AST_CALL:
        for (int i = 0; i < e->call.nargs; i++)
            if (reads_tensor_any(e->call.args[i]))
                return true;
        return false;
    case AST_UNARY: return reads_tensor_any(e->unary.a);
    case AST_BINARY: return reads_tensor_any(e->binary.a) || reads_tensor_any(e->binary.b);
    default: return false;
    }
}

static bool reads_tensor(const AstExpr *e, const char *name)
{
    if (!e)
        return false;
    switch (e->kind) {
    case AST_NAME: return !strcmp(e->name.name, name);
    case AST_ACCESS:
        if (!strcmp(e->access.name, name))
            return true;
        for (int i = 0; i < e->access.nidx; i++)
            if (reads_tensor(e->access.idx[i], name))
                return true;
        return false;
    case AST_CALL:
        for (int i = 0; i < e->call.nargs; i++)
            if (reads_tensor(e->call.args[i], name))
                return true;
        return false;
    case AST_UNARY: return reads_tensor(e->unary.a, name);
    case AST_BINARY: return reads_tensor(e->binary.a, name) || reads_tensor(e->binary.b, name);
    case AST_REDUCE: return reads_tensor(e->reduce.body, name);
    default: return false;
    }
}

/* A statement that reads the tensor it defines is a scan when it has the form
 * `Y[.., i, ..] = Y[.., i - 1, ..] OP step` (or step OP Y[...], max(Y[...], step),
 * min(...)); anything else is reported with the forms that are allowed. */
static bool classify_scan(Sema *S, AstStmt *s, AstTensor *t)
{
    const AstExpr *r = s->rhs;
    const AstExpr *a = NULL, *b = NULL;
    ReduceOp op = RED_SUM;
    if (r->kind == AST_BINARY && (r->binary.op == OP_ADD || r->binary.op == OP_MUL)) {
        a = r->binary.a;
        b = r->binary.b;
        op = r->binary.op == OP_ADD ? RED_SUM : RED_PROD;
    } else if (r->kind == AST_CALL && r->call.nargs == 2 &&
               (!strcmp(r->call.fn, "max") || !strcmp(r->call.fn, "min"))) {
        a = r->call.args[0];
        b = r->call.args[1];
        op = r->call.fn[1] == 'a' ? RED_MAX : RED_MIN;
    }
    int dim = -1, dir = 0;
    if (a && !scan_carry(s, a, &dim, &dir)) {
        const AstExpr *x = a;
        a = b;
        b = x;
    }
    if (!a || !scan_carry(s, a, &dim, &dir)) {
        diag_error(S->d, s->lhs_span, "%s reads itself: a tensor's defining statement reads it only as a scan, "
                   "%s[..., i, ...] = %s[..., i - 1, ...] + step (or i + 1 for a reverse scan; * max min also), "
                   "with every other index as on the left", t->name, t->name, t->name);
        return false;
    }
    if (reads_tensor(b, t->name)) {
        diag_error(S->d, b->span, "the step of the scan of %s reads %s again: a scan combines one previous "
                   "element with a step that does not read %s", t->name, t->name, t->name);
        return false;
    }
    if (s->where) {
        diag_error(S->d, s->where->span, "a scan cannot have a mask: put the condition in the step, "
                   "select(cond, X[i], 0.0)");
        return false;
    }
    if (t->kind == TENSOR_TEMP) {
        diag_error(S->d, s->lhs_span, "the scan's tensor %s must be declared (out or local): its type and shape "
                   "come from the declaration", t->name);
        return false;
    }
    s->scan = true;
    s->scan_dim = dim;
    s->scan_dir = dir;
    s->scan_op = op;
    s->scan_step = (AstExpr *)b;
    return true;
}

static bool order_stmts(Sema *S)
{
    AstKernel *k = S->k;
    int n = k->nstmts;
    PtrVec *deps = xcalloc((size_t)n + 1, sizeof(PtrVec)); /* statements each one reads from */
    for (int i = 0; i < n; i++) {
        AstStmt *s = k->stmts[i];
        s->order = i;
        PtrVec reads = {0};
        collect_reads(s->rhs, &reads, S);
        collect_reads(s->where, &reads, S);
        for (int j = 0; j < reads.n; j++) {
            AstTensor *t = reads.v[j];
            if (t->def == s && (s->scan || classify_scan(S, s, t)))
                continue;
            if (t->def == s) {
                vec_free(&reads);
                for (int q = 0; q < n; q++) vec_free(&deps[q]);
                free(deps);
                return false;
            }
            if (t->def)
                vec_push(&deps[i], t->def);
        }
        vec_free(&reads);
    }
    /* Kahn's algorithm, always taking the earliest ready statement in source order
     * (a min-heap of ready positions), so a file already in order keeps its order.
     * Each dependence is counted once per occurrence and released once per
     * occurrence.  It was a rescan from the start for every pick: quadratic. */
    AstStmt **out = arena_alloc(S->a, sizeof(AstStmt *) * (size_t)(n + 1));
    bool *done = xcalloc((size_t)n + 1, 1);
    int *indeg = xcalloc((size_t)n + 1, sizeof(int));
    int *heap = xcalloc((size_t)n + 1, sizeof(int));
    PtrVec *users = xcalloc((size_t)n + 1, sizeof(PtrVec));
    int nheap = 0, m = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < deps[i].n; j++) {
            indeg[i]++;
            vec_push(&users[((AstStmt *)deps[i].v[j])->order], (void *)(intptr_t)i);
        }
    for (int i = 0; i < n; i++)
        if (!indeg[i])
            heap_push(heap, &nheap, i);
    while (nheap) {
        int i = heap_pop(heap, &nheap);
        done[i] = true;
        out[m++] = k->stmts[i];
        for (int j = 0; j < users[i].n; j++) {
            int u = (int)(intptr_t)users[i].v[j];
            if (--indeg[u] == 0)
                heap_push(heap, &nheap, u);
        }
    }
    for (int i = 0; i < n; i++)
        vec_free(&users[i]);
    free(users);
    free(heap);
    free(indeg);
    bool ok = m == n;
    if (!ok) {
        /* Name the cycle: follow not-done dependences from a not-done statement
         * until one repeats; the cycle is the walk from that statement's first visit
         * (the start itself may only depend on a cycle). */
        int *seen = xcalloc((size_t)n + 1, sizeof(int)); /* position in the walk + 1 */
        int *walk = xcalloc((size_t)n + 1, sizeof(int));
        int len = 0, cur = 0;
        while (done[cur])
            cur++;
        while (!seen[cur]) {
            seen[cur] = ++len;
            walk[len - 1] = cur;
            int next = -1;
            for (int j = 0; j < deps[cur].n && next < 0; j++) {
                int o = ((AstStmt *)deps[cur].v[j])->order;
                if (!done[o])
                    next = o;
            }
            if (next < 0)
                break; /* cannot happen: a not-done statement waits on a not-done one */
            cur = next;
        }
        int first = seen[cur] - 1;
        StrBuf b = {0};
        for (int i = first; i < len; i++)
            sb_printf(&b, "%s%s", i > first ? " reads " : "", k->stmts[walk[i]]->lhs_name);
        sb_printf(&b, " reads %s", k->stmts[walk[first]]->lhs_name);
        diag_error(S->d, k->stmts[walk[first]]->lhs_span, "cycle between tensors: %s; each tensor must be computable "
                   "from earlier ones", b.s);
        free(seen);
        free(walk);
        sb_free(&b);
    } else {
        memcpy(k->stmts, out, sizeof(AstStmt *) * (size_t)n);
        for (int i = 0; i < n; i++)
            k->stmts[i]->order = i;
    }
    for (int i = 0; i < n; i++)
        vec_free(&deps[i]);
    free(deps);
    free(done);
    return ok;
}

/* ---- kernels ---- */


/* A literal number (an integer or a float, a minus sign folded in). */
static bool literal_value(const AstExpr *e, double *v)
{
    if (e->kind == AST_INT)
        *v = (double)e->ival;
    else if (e->kind == AST_FLOAT)
        *v = e->fval;
    else
        return false;
    return true;
}

/* range(lo, hi) and distinct(lo, hi): a float input takes finite number literals
 * that its dtype tells apart; an integer input takes size expressions (so class
 * labels can be range(0, C)), checked again with the bound sizes when lowering. */
static void check_domain(Sema *S, const AstTensor *t)
{
    const char *kw = t->dom_distinct ? "distinct" : "range";
    if (dtype_is_float(t->dtype)) {
        if (t->dom_distinct) {
            diag_error(S->d, t->dom_span, "distinct(...) draws whole numbers, for index tensors: %s is %s; use "
                       "range(lo, hi)", t->name, dtype_name(t->dtype));
            return;
        }
        double lo, hi;
        if (!literal_value(t->dom_lo, &lo) || !literal_value(t->dom_hi, &hi)) {
            diag_error(S->d, t->dom_span, "range(...) of a float tensor takes two numbers, such as range(0.1, 2.0)");
            return;
        }
        if (!isfinite(lo) || !isfinite(hi)) {
            diag_error(S->d, t->dom_span, "range(%g, %g): the bounds must be finite", lo, hi);
            return;
        }
        if (!(dtype_round(lo, t->dtype) < dtype_round(hi, t->dtype)) || !isfinite(dtype_round(hi, t->dtype)) ||
            !isfinite(dtype_round(lo, t->dtype))) {
            diag_error(S->d, t->dom_span, "range(%g, %g) holds no %s value: the low bound must be below the high "
                       "one, both finite in %s", lo, hi, dtype_name(t->dtype), dtype_name(t->dtype));
            return;
        }
        return;
    }
    bool ok = check_size(S, t->dom_lo, "a range bound");
    ok = check_size(S, t->dom_hi, "a range bound") && ok;
    if (!ok || !size_computable(S, t->dom_lo, "a range bound") || !size_computable(S, t->dom_hi, "a range bound"))
        return;
    int64_t lo, hi;
    if (size_eval(t->dom_lo, NULL, NULL, &lo) && size_eval(t->dom_hi, NULL, NULL, &hi)) {
        if (lo >= hi)
            diag_error(S->d, t->dom_span, "%s(%lld, %lld) is empty: values are drawn from lo, lo+1, ..., hi-1", kw,
                       (long long)lo, (long long)hi);
        else if (t->dtype == DT_I32 && (lo < INT32_MIN || hi - 1 > INT32_MAX))
            diag_error(S->d, t->dom_span, "%s(%lld, %lld) leaves i32: %s holds -2147483648 to 2147483647", kw,
                       (long long)lo, (long long)hi, t->name);
    }
}

/* A pad value must be one the tensor's dtype holds: reads outside the tensor yield
 * it, and the interpreter (f64) and the generated code (the storage type) would
 * otherwise disagree about what they read.  Whole numbers within range for i32; for
 * floats, a finite value that does not round to infinity or to zero (inf and -inf
 * are held by every float type). */
static void check_pad(Sema *S, const AstTensor *t)
{
    double v = t->pad_value;
    const char *dt = dtype_name(t->dtype);
    if (!dtype_is_float(t->dtype)) {
        if (isnan(v) || isinf(v) || v != floor(v) || v < (double)INT32_MIN || v > (double)INT32_MAX)
            diag_error(S->d, t->pad_span,
                       "pad(%.15g) cannot be held by %s tensor %s: its pad value must be a whole number from %d "
                       "to %d",
                       v, dt, t->name, INT32_MIN, INT32_MAX);
        return;
    }
    if (isinf(v) || v == 0)
        return;
    double held;
    switch (t->dtype) {
    case DT_F16: held = (double)f16_bits_to_f32(f32_to_f16_bits((float)v)); break;
    case DT_BF16: held = (double)bf16_bits_to_f32(f32_to_bf16_bits((float)v)); break;
    case DT_F32: held = (double)(float)v; break;
    default: held = v; break;
    }
    if (isinf(held))
        diag_error(S->d, t->pad_span,
                   "pad(%.15g) cannot be held by %s tensor %s: it is beyond the largest finite %s (write "
                   "pad(inf) or pad(-inf) for an infinite pad)",
                   v, dt, t->name, dt);
    else if (held == 0)
        diag_error(S->d, t->pad_span, "pad(%.15g) cannot be held by %s tensor %s: it rounds to 0 in %s", v, dt, t->name,
                   dt);
}
/* ---- scatters ---- */

static void free_names(Sema *S, const AstStmt *s, const AstExpr *e, PtrVec *out)
{
    if (!e)
        return;
    switch (e->kind) {
    case AST_NAME: {
        const char *n = e->name.name;
        if (find_param(S->k, n) >= 0 || find_tensor(S, n) || strchr(n, '.'))
            return;
        for (int i = 0; i < s->nlhs; i++)
            if (s->lhs_idx[i]->kind == AST_NAME && !strcmp(s->lhs_idx[i]->name.name, n))
                return;
        for (int i = 0; i < out->n; i++)
            if (!strcmp(((const AstExpr *)out->v[i])->name.name, n))
                return;
        vec_push(out, (void *)e);
        return;
    }
    case AST_ACCESS:
        for (int i = 0; i < e->access.nidx; i++)
            free_names(S, s, e->access.idx[i], out);
        return;
    case AST_CALL:
        for (int i = 0; i < e->call.nargs; i++)
            free_names(S, s, e->call.args[i], out);
        return;
    case AST_UNARY: free_names(S, s, e->unary.a, out); return;
    case AST_BINARY:
        free_names(S, s, e->binary.a, out);
        free_names(S, s, e->binary.b, out);
        return;
    default: return;
    }
}

static AstExpr *new_expr(Sema *S, AstExprKind k, Span sp)
{
    AstExpr *e = arena_alloc(S->a, sizeof *e);
    memset(e, 0, sizeof *e);
    e->kind = k;
    e->span = sp;
    e->dtype = DT_COUNT;
    e->depth = 1;
    return e;
}

/* `Y[T[i], d] += X[i, d] [where m]` becomes `Y[s0, d] = sum(i) X[i, d] where
 * T[i] == s0 [&& m]`: the summed indices are the names the statement uses that
 * are neither left-hand names, sizes nor tensors. */
static bool desugar_scatter(Sema *S, AstStmt *s)
{
    AstExpr **sc = arena_alloc(S->a, sizeof(AstExpr *) * (size_t)(s->nlhs ? s->nlhs : 1));
    AstExpr *mask = NULL;
    bool any = false;
    for (int d = 0; d < s->nlhs; d++) {
        sc[d] = NULL;
        if (s->lhs_idx[d]->kind == AST_NAME)
            continue;
        if (!reads_tensor_any(s->lhs_idx[d])) {
            diag_error(S->d, s->lhs_idx[d]->span, "a subscript on the left of += is an index name or holds a tensor "
                       "value (Y[T[i]] += X[i]), not an expression of indices");
            return false;
        }
        any = true;
        sc[d] = s->lhs_idx[d];
        AstExpr *n = new_expr(S, AST_NAME, sc[d]->span);
        n->name.name = arena_printf(S->a, "__scatter%d", d);
        s->lhs_idx[d] = n;
        AstExpr *n2 = new_expr(S, AST_NAME, sc[d]->span);
        n2->name.name = n->name.name;
        AstExpr *eq = new_expr(S, AST_BINARY, sc[d]->span);
        eq->binary.op = OP_EQ;
        eq->binary.a = sc[d];
        eq->binary.b = n2;
        if (mask) {
            AstExpr *and = new_expr(S, AST_BINARY, sc[d]->span);
            and->binary.op = OP_AND;
            and->binary.a = mask;
            and->binary.b = eq;
            mask = and;
        } else {
            mask = eq;
        }
    }
    if (!any) {
        diag_error(S->d, s->lhs_span, "+= scatters into %s: a subscript on its left must hold a tensor value "
                   "(Y[T[i]] += X[i]); write %s[...] = ... for an assignment", s->lhs_name, s->lhs_name);
        return false;
    }
    if (s->rhs->kind == AST_REDUCE) {
        diag_error(S->d, s->rhs->span, "the value of a scatter is an expression, not a reduction: the scatter "
                   "itself sums");
        return false;
    }
    PtrVec names = {0};
    free_names(S, s, s->rhs, &names);
    for (int d = 0; d < s->nlhs; d++)
        free_names(S, s, sc[d], &names);
    if (names.n == 0) {
        diag_error(S->d, s->span, "this scatter runs over no index: name one on the right (Y[T[i]] += X[i])");
        vec_free(&names);
        return false;
    }
    AstExpr *red = new_expr(S, AST_REDUCE, s->rhs->span);
    red->reduce.op = RED_SUM;
    red->reduce.nvars = names.n;
    red->reduce.vars = arena_alloc(S->a, sizeof(AstRedVar) * (size_t)names.n);
    for (int i = 0; i < names.n; i++) {
        const AstExpr *n = names.v[i];
        memset(&red->reduce.vars[i], 0, sizeof red->reduce.vars[i]);
        red->reduce.vars[i].name = n->name.name;
        red->reduce.vars[i].span = n->span;
    }
    red->reduce.body = s->rhs;
    vec_free(&names);
    s->scatter_where = s->where;
    if (s->where) {
        AstExpr *and = new_expr(S, AST_BINARY, s->where->span);
        and->binary.op = OP_AND;
        and->binary.a = s->where;
        and->binary.b = mask;
        mask = and;
    }
    s->rhs = red;
    s->where = mask;
    s->scatter_idx = sc;
    return true;
}

static bool check_kernel(Sema *S)
{
    Program *p = S->prog;
    AstKernel *k = S->k;
    Diags *d = S->d;
    int errs = d->nerrors;

    for (int i = 0; i < k->nparams; i++) {
        dotted(S, k->params[i].name, k->params[i].span);
        for (int j = 0; j < i; j++)
            if (!strcmp(k->params[i].name, k->params[j].name))
                diag_error(d, k->params[i].span, "size parameter %s is listed twice", k->params[i].name);
    }
    for (int i = 0; i < k->ndtparams; i++) {
        for (int j = 0; j < i; j++)
            if (!strcmp(k->dtparams[i].name, k->dtparams[j].name))
                diag_error(d, k->dtparams[i].span, "dtype parameter %s is listed twice", k->dtparams[i].name);
        if (find_param(k, k->dtparams[i].name) >= 0)
            diag_error(d, k->dtparams[i].span, "%s is both a size parameter and a dtype parameter",
                       k->dtparams[i].name);
        if (dtype_from_name(k->dtparams[i].name) != DT_COUNT)
            diag_error(d, k->dtparams[i].span, "a dtype parameter cannot be called %s, the name of a dtype",
                       k->dtparams[i].name);
    }
    int ndecl = k->ntensors;
    for (int i = 0; i < ndecl; i++) {
        AstTensor *t = k->tensors[i];
        t->id = i;
        dotted(S, t->name, t->span);
        AstTensor *first = map_add(&S->tensors, t);
        if (first) {
            diag_error(d, t->span, "tensor %s is declared twice", t->name);
            diag_note(d, first->span, "first declared here");
        }
        if (find_param(k, t->name) >= 0)
            diag_error(d, t->span, "tensor %s has the name of a size parameter", t->name);
        if (kernel_find_dtparam(k, t->name) >= 0)
            diag_error(d, t->span, "tensor %s has the name of a dtype parameter", t->name);
        for (int r = 0; r < t->rank; r++) {
            int64_t v;
            if (check_size(S, t->shape[r], "a shape") && size_computable(S, t->shape[r], "a shape") &&
                size_eval(t->shape[r], NULL, NULL, &v) && v < 1)
                diag_error(d, t->shape[r]->span, "dimension %d of %s is %lld: a size must be at least 1", r, t->name,
                           (long long)v);
        }
        if (t->has_pad)
            check_pad(S, t);
        if (t->dom_lo)
            check_domain(S, t);
    }

    /* Scatters become masked sums before anything else looks at them. */
    for (int i = 0; i < k->nstmts; i++) {
        AstStmt *s = k->stmts[i];
        if (!s->scatter || s->scatter_idx)
            continue;
        AstTensor *t = find_tensor(S, s->lhs_name);
        if (!t) {
            diag_error(d, s->lhs_span, "%s is not declared: a scatter adds into a declared out or local tensor, "
                       "whose shape says where its subscripts may go", s->lhs_name);
            s->scatter = false;
            continue;
        }
        if (!desugar_scatter(S, s))
            s->scatter = false;
    }

    /* Defining statements; temporaries come into being here. */
    for (int i = 0; i < k->nstmts; i++) {
        AstStmt *s = k->stmts[i];
        if (dotted(S, s->lhs_name, s->lhs_span))
            continue;
        AstTensor *t = find_tensor(S, s->lhs_name);
        if (!t) {
            if (find_param(k, s->lhs_name) >= 0) {
                diag_error(d, s->lhs_span, "cannot assign to size parameter %s", s->lhs_name);
                continue;
            }
            t = arena_alloc(p->arena, sizeof *t);
            t->kind = TENSOR_TEMP;
            t->name = s->lhs_name;
            t->span = s->lhs_span;
            t->rank = s->nlhs;
            t->id = k->ntensors;
            k->tensors[k->ntensors++] = t;
            map_add(&S->tensors, t);
        } else if (t->kind == TENSOR_IN) {
            diag_error(d, s->lhs_span, "cannot assign to input %s; declare it `out` or `local`", t->name);
            continue;
        } else if (t->def) {
            diag_error(d, s->lhs_span, "%s is assigned twice; each tensor has exactly one defining statement", t->name);
            diag_note(d, t->def->lhs_span, "first assigned here");
            continue;
        } else if (t->rank != s->nlhs) {
            diag_error(d, s->lhs_span, "%s has %d dimension%s but is assigned with %d index%s", t->name, t->rank,
                       t->rank == 1 ? "" : "s", s->nlhs, s->nlhs == 1 ? "" : "es");
            t->def = s; /* it is assigned, if badly: do not also report it as never assigned */
            continue;
        }
        t->def = s;
        s->lhs = t;
    }
    for (int i = 0; i < ndecl; i++) {
        AstTensor *t = k->tensors[i];
        if ((t->kind == TENSOR_OUT || t->kind == TENSOR_LOCAL) && !t->def)
            diag_error(d, t->span, "%s %s is never assigned", t->kind == TENSOR_OUT ? "output" : "local", t->name);
    }
    bool any_out = false;
    for (int i = 0; i < ndecl; i++)
        any_out |= k->tensors[i]->kind == TENSOR_OUT;
    if (!any_out)
        diag_error(d, k->span, "kernel %s has no output: declare at least one `out` tensor", k->name);
    if (d->nerrors > errs)
        return false;

    if (!order_stmts(S))
        return false;
    for (int i = 0; i < k->nstmts; i++) {
        check_stmt(S, k->stmts[i]);
        if (diag_too_many(d))
            break;
    }
    if (d->nerrors > errs)
        return false;

    for (int i = 0; i < k->ntensors; i++) {
        AstTensor *t = k->tensors[i];
        if (t->used)
            continue;
        if (t->kind == TENSOR_IN)
            diag_warning(d, t->span, "input %s is never used", t->name);
        else if (t->kind == TENSOR_LOCAL || t->kind == TENSOR_TEMP)
            diag_warning(d, t->span, "%s is computed but never used", t->name);
    }
    k->checked = true;
    return true;
}

bool sema_kernel(Program *p, AstKernel *k, Diags *d)
{
    Sema S = {p, k, d, p->arena, NULL, {NULL, 0, 0}};
    bool ok = check_kernel(&S);
    free(S.tensors.slots);
    return ok;
}

AstKernel *program_find_kernel(Program *p, const char *name)
{
    for (int i = 0; i < p->nkernels; i++)
        if (!strcmp(p->kernels[i]->name, name))
            return p->kernels[i];
    return NULL;
}

bool sema_program(Program *p, Diags *d)
{
    int errs = d->nerrors;
    for (int i = 0; i < p->nkernels; i++) {
        AstKernel *k = p->kernels[i];
        for (int j = 0; j < i; j++)
            if (!strcmp(k->name, p->kernels[j]->name)) {
                diag_error(d, k->span, "kernel %s is defined twice", k->name);
                diag_note(d, p->kernels[j]->span, "first defined here");
            }
        sema_kernel(p, k, d);
        if (diag_too_many(d))
            break;
    }
    for (int i = 0; i < p->nschedules; i++) {
        AstSchedule *s = p->schedules[i];
        AstKernel *k = program_find_kernel(p, s->kernel);
        if (!k) {
            diag_error(d, s->span, "schedule for unknown kernel '%s'", s->kernel);
            continue;
        }
        schedule_check_head(p, i, k, d);
    }
    return d->nerrors == errs;
}
