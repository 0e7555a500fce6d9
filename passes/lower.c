/* Lowering: from a checked PDL kernel (lang/sema.c has filled every sema field) to
 * the loop-nest IR.
 *
 * The shape of the result is fixed and simple on purpose, because every schedule,
 * every golden test and every user reading -emit ir starts from it:
 *  - one loop nest per statement, in sema's dependence order; the left-hand side's
 *    indices outermost, in order; for a reduction `T[idx] = identity` then the
 *    reduction loops around `T[idx] op= value`;
 *  - a loop variable is named after its index when that name is used by only one
 *    statement of the kernel, else `T.i` (T the statement's tensor), so schedules
 *    can name any loop unambiguously;
 *  - values are computed in the compute type of the destination (f16/bf16 compute
 *    in f32): float loads and float constants in that type, integer subtrees in i64
 *    until they meet a float;
 *  - masks: a reduction's terms are guarded (`if`) at the innermost point where the
 *    mask's indices are all in scope, below the unguarded initialisation, so an
 *    empty reduction yields its identity; a plain assignment selects 0.
 * With every size bound, each read's index range is computed by interval
 * arithmetic: a padded input gets a guarded load where it may leave its bounds,
 * any other tensor an error that names the index and its range. */
#include "passes.h"
#include "../ir/arith.h"
#include "../ir/walk.h"
#include "lang/checked.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct Lower {
    const AstKernel *ak;
    Kernel *k;
    Diags *d;
    bool ok;
    bool all_bound;
    Buffer **buf_of;        /* by AstTensor id */
    /* by Var id: the inclusive range of each loop variable, when sizes are bound */
    int64_t *vlo, *vhi;
    bool *vknown, *vempty;
    int cap_vars;
    bool saw_empty;         /* an interval touched a variable whose loop never runs */
    bool saw_overflow;      /* an interval's bound overflowed 64 bits */
    /* the statement being lowered */
    const AstStmt *s;
    Var **var_of;           /* by AstIndex id */
    DType ct;               /* compute type of the destination */
    DType fct;              /* the type float values are computed in */
    int64_t iters;          /* iterations of the statement's nest so far (bound sizes) */
    int rev_id;             /* a reverse scan's index (AstIndex id; -1: none): it is */
    Expr *rev_hi;           /* rev_hi - 1 - its loop variable */
    bool iters_reported;
} Lower;

static const ExprKind binop_of[] = {
    [OP_ADD] = IE_ADD, [OP_SUB] = IE_SUB, [OP_MUL] = IE_MUL, [OP_DIV] = IE_DIV, [OP_MOD] = IE_MOD,
    [OP_LT] = IE_LT, [OP_LE] = IE_LE, [OP_GT] = IE_GT, [OP_GE] = IE_GE, [OP_EQ] = IE_EQ,
    [OP_NE] = IE_NE, [OP_AND] = IE_AND, [OP_OR] = IE_OR,
};

static const ExprKind builtin_of[] = {
    [BI_EXP] = IE_EXP, [BI_LOG] = IE_LOG, [BI_SQRT] = IE_SQRT, [BI_RSQRT] = IE_RSQRT,
    [BI_TANH] = IE_TANH, [BI_ERF] = IE_ERF, [BI_ABS] = IE_ABS, [BI_MAX] = IE_MAX, [BI_MIN] = IE_MIN,
    [BI_LOG1P] = IE_LOG1P, [BI_EXPM1] = IE_EXPM1, [BI_FLOOR] = IE_FLOOR, [BI_CEIL] = IE_CEIL,
    [BI_ROUND] = IE_ROUND, [BI_POW] = IE_POW,
};

static Expr *spanned(Expr *e, Span sp)
{
    if (!e->span.src)
        e->span = sp;
    return e;
}

static void internal(Lower *L, Span sp, const char *what)
{
    diag_error(L->d, sp, "internal error: lowering kernel %s: %s", L->ak->name, what);
    L->ok = false;
}

/* ---- sizes ---- */

static Expr *size_expr(Lower *L, const AstExpr *e)
{
    Kernel *k = L->k;
    Expr *r;
    switch (e->kind) {
    case AST_INT:
        r = ir_int(k, e->ival);
        break;
    case AST_NAME:
        if (e->name.ref != REF_PARAM) {
            internal(L, e->span, "a size expression names something other than a size parameter");
            return ir_int(k, 0);
        }
        r = ir_param(k, e->name.param);
        break;
    case AST_UNARY:
        if (e->unary.op != OP_NEG) {
            internal(L, e->span, "unexpected operator in a size expression");
            return ir_int(k, 0);
        }
        r = ir_un(k, IE_NEG, size_expr(L, e->unary.a));
        break;
    case AST_BINARY:
        if (e->binary.op > OP_MOD) {
            internal(L, e->span, "unexpected operator in a size expression");
            return ir_int(k, 0);
        }
        r = ir_bin(k, binop_of[e->binary.op], size_expr(L, e->binary.a), size_expr(L, e->binary.b));
        break;
    default:
        internal(L, e->span, "unexpected node in a size expression");
        return ir_int(k, 0);
    }
    return spanned(r, e->span);
}

/* ---- intervals (bounds of reads) ---- */

/* A loop variable's range, when the sizes are bound (ArEnv.ctx: the Lower). */
static bool var_range(ArEnv *env, const Var *v, int64_t *lo, int64_t *hi)
{
    Lower *L = env->ctx;
    int id = v->id;
    if (id >= L->cap_vars || !L->vknown[id])
        return false;
    if (L->vempty[id])
        L->saw_empty = true;
    *lo = L->vlo[id];
    *hi = L->vhi[id];
    return true;
}

/* A gather's index: the declared integer domain of the tensor read, which the
 * harness checks of any data it is given (ir_domain_holds). */
static bool load_range(ArEnv *env, const Expr *e, int64_t *lo, int64_t *hi)
{
    const Buffer *b = e->u.load.buf;
    int64_t dlo, dhi;
    if (!ir_has_domain(b) || dtype_is_float(b->dtype) || !ir_eval_size(env->k, b->dom_lo, &dlo) ||
        !ir_eval_size(env->k, b->dom_hi, &dhi) || dhi <= dlo)
        return false;
    *lo = dlo;
    *hi = dhi - 1;
    return true;
}

/* Inclusive range of an integer expression over the loop variables' ranges;
 * sets saw_empty and saw_overflow. */
static bool interval(Lower *L, const Expr *e, int64_t *lo, int64_t *hi)
{
    ArEnv env = {.k = L->k, .var = var_range, .load = load_range, .ctx = L};
    bool ok = ar_interval(&env, e, lo, hi);
    L->saw_overflow |= env.overflow;
    return ok;
}

/* Is the read of t at idx always in range?  Decides guarded loads and reports
 * reads that would leave an unpadded tensor. */
static bool check_read(Lower *L, const AstExpr *acc, const Buffer *b, Expr **idx)
{
    bool guarded = false;
    for (int i = 0; i < b->rank; i++) {
        if (!L->all_bound) {
            guarded = b->has_pad;
            break;
        }
        int64_t lo, hi, size;
        if (!ir_eval_size(L->k, b->shape[i], &size))
            return b->has_pad; /* reported with the shapes */
        L->saw_empty = false;
        L->saw_overflow = false;
        if (!interval(L, idx[i], &lo, &hi) && L->saw_overflow && !L->saw_empty) {
            /* the generated code computes indices in 64 bits: one that can overflow
             * has no meaning to give it */
            diag_error(L->d, acc->access.idx[i]->span, "index %d of %s overflows 64-bit integers over the loop's "
                       "range with these sizes", i, b->name);
            L->ok = false;
            return false;
        }
        if (L->saw_overflow) {
            /* an overflow under a loop that never runs: nothing is computed */
            guarded |= b->has_pad;
            continue;
        }
        if (!interval(L, idx[i], &lo, &hi)) {
            /* not provable either way: guard a padded read; the interpreter
             * reports an unpadded one if it ever leaves the tensor.  A gather
             * whose index tensor has no declared range would leave it unchecked
             * in compiled code: refused. */
            if (!b->has_pad && ir_expr_has_load(idx[i])) {
                const AstExpr *ix = acc->access.idx[i];
                diag_error(L->d, ix->span, "%s is indexed by tensor values whose range is not known: declare the "
                           "index tensor with range(lo, hi) inside 0..%lld (given inputs are checked against it) or "
                           "%s with pad(v) for reads outside it", b->name, (long long)size, b->name);
                L->ok = false;
                return false;
            }
            guarded |= b->has_pad;
            continue;
        }
        if (L->saw_empty || (lo >= 0 && hi < size))
            continue; /* never runs, or always in range */
        if (b->has_pad) {
            guarded = true;
            continue;
        }
        const AstExpr *ix = acc->access.idx[i];
        StrBuf text = {0};
        if (ix->span.src && ix->span.len > 0)
            sb_printf(&text, "%.*s", ix->span.len, ix->span.src->text + ix->span.off);
        else
            ast_print_expr(ix, &text);
        diag_error(L->d, acc->span,
                   "%s[...] reads out of range: index '%s' runs %lld..%lld but dimension %d of %s has size %lld; "
                   "declare %s with pad(0) or narrow the index",
                   b->name, text.s, (long long)lo, (long long)hi + 1, i, b->name, (long long)size, b->name);
        sb_free(&text);
        L->ok = false;
        return false;
    }
    return guarded;
}

/* ---- values ---- */

static Expr *to_float(Lower *L, Expr *x)
{
    return spanned(ir_cast(L->k, x, L->fct), x->span);
}

/* Brings two operands to one type: the float compute type if either is a float,
 * else i64 (an i32 tensor value meeting an index or a literal). */
static void unify(Lower *L, Expr **a, Expr **b)
{
    if (dtype_is_float((*a)->dtype) || dtype_is_float((*b)->dtype)) {
        *a = to_float(L, *a);
        *b = to_float(L, *b);
    } else if ((*a)->dtype != (*b)->dtype) {
        *a = spanned(ir_cast(L->k, *a, DT_I64), (*a)->span);
        *b = spanned(ir_cast(L->k, *b, DT_I64), (*b)->span);
    }
}

static Expr *lower_expr(Lower *L, const AstExpr *e);

/* The value of index id: its loop variable, or for a reverse scan's index the
 * variable counted down from the end. */
static Expr *index_value(Lower *L, int id)
{
    Expr *v = ir_var(L->k, L->var_of[id]);
    if (id != L->rev_id)
        return v;
    return ir_bin(L->k, IE_SUB, ir_bin(L->k, IE_SUB, ir_clone_expr(L->k, L->rev_hi), ir_int(L->k, 1)), v);
}

/* raw: leave a float load in its storage type (the argument of an explicit cast:
 * f32(A[i, k]) is one conversion, not two). */
static Expr *lower_access(Lower *L, const AstExpr *e, bool raw)
{
    const AstTensor *t = e->access.tensor;
    if (!t || t->id < 0 || t->id >= L->ak->ntensors || !L->buf_of[t->id]) {
        internal(L, e->span, "an access names no known tensor");
        return ir_int(L->k, 0);
    }
    Buffer *b = L->buf_of[t->id];
    if (b->rank != e->access.nidx) {
        internal(L, e->span, "an access has the wrong number of indices");
        return ir_int(L->k, 0);
    }
    Expr **idx = xcalloc((size_t)(b->rank ? b->rank : 1), sizeof *idx);
    for (int i = 0; i < b->rank; i++) {
        idx[i] = lower_expr(L, e->access.idx[i]);
        if (idx[i]->dtype != DT_I64)
            idx[i] = spanned(ir_cast(L->k, idx[i], DT_I64), idx[i]->span);
    }
    Expr *r = spanned(ir_load(L->k, b, idx), e->span);
    r->u.load.guarded = check_read(L, e, b, r->u.load.idx);
    /* A gather from an unpadded tensor: check_read has bounded its index by the
     * index tensor's declared range, which the harness checks of the data it is
     * given; a library's caller passes data nobody checked, so the index is also
     * clamped into the tensor: memory stays safe whatever the data. */
    for (int i = 0; i < b->rank && !b->has_pad; i++)
        if (ir_expr_has_load(r->u.load.idx[i])) {
            Expr *x = r->u.load.idx[i], *sp = r->u.load.idx[i];
            Expr *top = ir_bin(L->k, IE_SUB, ir_clone_expr(L->k, b->shape[i]), ir_int(L->k, 1));
            x = spanned(ir_bin(L->k, IE_MAX, x, ir_int(L->k, 0)), sp->span);
            r->u.load.idx[i] = spanned(ir_bin(L->k, IE_MIN, x, top), sp->span);
        }
    free(idx);
    if (!raw && dtype_is_float(r->dtype))
        r = to_float(L, r);
    return r;
}

static Expr *lower_call(Lower *L, const AstExpr *e)
{
    Kernel *k = L->k;
    AstExpr *const *args = e->call.args;
    Builtin bi = e->call.builtin;
    if (bi >= BI_COUNT || (bi != BI_CAST && e->call.nargs != builtin_arity(bi))) {
        internal(L, e->span, "a call to an unknown function or with the wrong number of arguments");
        return ir_int(k, 0);
    }
    switch (bi) {
    case BI_CAST: {
        if (e->call.nargs != 1) {
            internal(L, e->span, "a cast with other than one argument");
            return ir_int(k, 0);
        }
        Expr *x = args[0]->kind == AST_ACCESS ? lower_access(L, args[0], true) : lower_expr(L, args[0]);
        return spanned(ir_cast(k, x, e->call.cast_to), e->span);
    }
    case BI_SELECT: {
        Expr *c = lower_expr(L, args[0]);
        Expr *a = lower_expr(L, args[1]);
        Expr *b = lower_expr(L, args[2]);
        unify(L, &a, &b);
        return spanned(ir_select(k, c, a, b), e->span);
    }
    case BI_MAX:
    case BI_MIN: {
        Expr *a = lower_expr(L, args[0]);
        Expr *b = lower_expr(L, args[1]);
        unify(L, &a, &b);
        return spanned(ir_bin(k, builtin_of[bi], a, b), e->span);
    }
    case BI_ABS: {
        Expr *x = lower_expr(L, args[0]);
        if (dtype_is_float(x->dtype))
            x = to_float(L, x);
        return spanned(ir_un(k, IE_ABS, x), e->span);
    }
    case BI_FLOOR:
    case BI_CEIL:
    case BI_ROUND: {
        /* an integer is already whole */
        Expr *x = lower_expr(L, args[0]);
        if (!dtype_is_float(x->dtype))
            return x;
        return spanned(ir_un(k, builtin_of[bi], to_float(L, x)), e->span);
    }
    case BI_POW:
        return spanned(ir_bin(k, IE_POW, to_float(L, lower_expr(L, args[0])), to_float(L, lower_expr(L, args[1]))),
                       e->span);
    case BI_SIGMOID: {
        /* 1 / (1 + exp(-x)): exact at both tails in IEEE arithmetic (exp overflows to
         * inf and the quotient is 0), so no back end needs a function of its own */
        Expr *x = to_float(L, lower_expr(L, args[0]));
        Expr *ex = spanned(ir_un(k, IE_EXP, spanned(ir_un(k, IE_NEG, x), e->span)), e->span);
        Expr *den = spanned(ir_bin(k, IE_ADD, ir_flt(k, 1.0, L->fct), ex), e->span);
        return spanned(ir_bin(k, IE_DIV, ir_flt(k, 1.0, L->fct), den), e->span);
    }
    case BI_SIGN: {
        /* select(x > 0, 1, select(x < 0, -1, 0)); sign(NaN) is 0 in every back end */
        Expr *x = lower_expr(L, args[0]);
        bool fl = dtype_is_float(x->dtype);
        if (fl)
            x = to_float(L, x);
        DType t = x->dtype;
        Expr *zero = fl ? ir_flt(k, 0.0, t) : ir_cast(k, ir_int(k, 0), t);
        Expr *one = fl ? ir_flt(k, 1.0, t) : ir_cast(k, ir_int(k, 1), t);
        Expr *mone = fl ? ir_flt(k, -1.0, t) : ir_cast(k, ir_int(k, -1), t);
        Expr *neg = ir_select(k, spanned(ir_bin(k, IE_LT, ir_clone_expr(k, x), ir_clone_expr(k, zero)), e->span),
                              mone, ir_clone_expr(k, zero));
        return spanned(ir_select(k, spanned(ir_bin(k, IE_GT, x, zero), e->span), one, neg), e->span);
    }
    case BI_CLAMP: {
        /* min(max(x, lo), hi): with lo > hi the answer is hi, as in NumPy's clip */
        Expr *x = lower_expr(L, args[0]);
        Expr *lo = lower_expr(L, args[1]);
        Expr *hi = lower_expr(L, args[2]);
        unify(L, &x, &lo);
        unify(L, &x, &hi);
        unify(L, &lo, &hi);
        Expr *m = spanned(ir_bin(k, IE_MAX, x, lo), e->span);
        return spanned(ir_bin(k, IE_MIN, m, hi), e->span);
    }
    default:
        return spanned(ir_un(k, builtin_of[bi], to_float(L, lower_expr(L, args[0]))), e->span);
    }
}

static Expr *lower_expr(Lower *L, const AstExpr *e)
{
    Kernel *k = L->k;
    switch (e->kind) {
    case AST_INT:
        return spanned(ir_int(k, e->ival), e->span);
    case AST_FLOAT:
        return spanned(ir_flt(k, e->fval, L->fct), e->span);
    case AST_NAME:
        if (e->name.ref == REF_PARAM && e->name.param >= 0 && e->name.param < k->nparams)
            return spanned(ir_param(k, e->name.param), e->span);
        if (e->name.ref == REF_INDEX && e->name.index && e->name.index->id >= 0 &&
            e->name.index->id < L->s->nindices && L->s->indices[e->name.index->id] == e->name.index)
            return spanned(index_value(L, e->name.index->id), e->span);
        internal(L, e->span, "a name that sema did not resolve");
        return ir_int(k, 0);
    case AST_ACCESS:
        return lower_access(L, e, false);
    case AST_CALL:
        return lower_call(L, e);
    case AST_UNARY: {
        Expr *x = lower_expr(L, e->unary.a);
        if (e->unary.op == OP_NOT)
            return spanned(ir_un(k, IE_NOT, x), e->span);
        if (dtype_is_float(x->dtype))
            x = to_float(L, x);
        return spanned(ir_un(k, IE_NEG, x), e->span);
    }
    case AST_BINARY: {
        Expr *a = lower_expr(L, e->binary.a);
        Expr *b = lower_expr(L, e->binary.b);
        if (e->binary.op != OP_AND && e->binary.op != OP_OR)
            unify(L, &a, &b);
        return spanned(ir_bin(k, binop_of[e->binary.op], a, b), e->span);
    }
    case AST_REDUCE:
        internal(L, e->span, "a reduction inside an expression");
        return ir_int(k, 0);
    }
    internal(L, e->span, "unknown expression kind");
    return ir_int(k, 0);
}

/* ---- statements ---- */

/* 0 or 1 in type t (a float constant, or an integer constant of t). */
static Expr *typed_const(Lower *L, int v, DType t)
{
    if (dtype_is_float(t))
        return ir_flt(L->k, v, t);
    Expr *e = ir_int(L->k, v);
    e->dtype = t;
    return e;
}

static const StmtOp op_of[] = {[RED_SUM] = SOP_ADD, [RED_MAX] = SOP_MAX, [RED_MIN] = SOP_MIN,
                               [RED_PROD] = SOP_MUL};

/* The reduction's identity in the compute type (ir/arith.c; an empty sum is +0). */
static Expr *identity(Lower *L, ReduceOp op)
{
    ArScalar v;
    ar_identity(op_of[op], L->ct, false, &v);
    if (v.is_float)
        return ir_flt(L->k, v.f, L->ct);
    Expr *e = ir_int(L->k, v.i);
    e->dtype = L->ct;
    return e;
}

/* How many loops must be open for all indices of e to be in scope. */
static int depth_needed(const AstExpr *e)
{
    if (!e)
        return 0;
    int m = 0, x;
    switch (e->kind) {
    case AST_NAME:
        return e->name.ref == REF_INDEX && e->name.index ? e->name.index->id + 1 : 0;
    case AST_ACCESS:
        for (int i = 0; i < e->access.nidx; i++)
            if ((x = depth_needed(e->access.idx[i])) > m)
                m = x;
        return m;
    case AST_CALL:
        for (int i = 0; i < e->call.nargs; i++)
            if ((x = depth_needed(e->call.args[i])) > m)
                m = x;
        return m;
    case AST_UNARY:
        return depth_needed(e->unary.a);
    case AST_BINARY:
        m = depth_needed(e->binary.a);
        x = depth_needed(e->binary.b);
        return x > m ? x : m;
    default:
        return 0;
    }
}

static Expr **lhs_index(Lower *L, const AstStmt *s)
{
    Expr **idx = arena_alloc(L->k->arena, sizeof(Expr *) * (size_t)(s->nlhs ? s->nlhs : 1));
    for (int i = 0; i < s->nlhs; i++)
        idx[i] = spanned(index_value(L, s->lhs_idx[i]->name.index->id), s->lhs_idx[i]->span);
    return idx;
}

/* Opens the loop of index i under *parent; returns it. */
static Node *open_loop(Lower *L, const AstStmt *s, int i, NodeList **list, Node **parent)
{
    Kernel *k = L->k;
    const AstIndex *ix = s->indices[i];
    Var *v = L->var_of[i];
    Expr *lo = ix->lo ? size_expr(L, ix->lo) : ir_int(k, 0);
    Expr *hi = NULL;
    if (ix->lo && s->rhs->kind == AST_REDUCE)
        for (int j = 0; j < s->rhs->reduce.nvars; j++)
            if (s->rhs->reduce.vars[j].index == ix && s->rhs->reduce.vars[j].hi)
                hi = size_expr(L, s->rhs->reduce.vars[j].hi);
    if (!hi)
        hi = ix->lo ? ir_bin(k, IE_ADD, size_expr(L, ix->lo), size_expr(L, ix->extent)) : size_expr(L, ix->extent);
    Span at = ix->span.src ? ix->span : s->span;
    lo = spanned(ir_simplify(k, lo), at);
    hi = spanned(ir_simplify(k, hi), at);
    int64_t l, h, ext;
    if (L->all_bound && (!ir_eval_size(k, lo, &l) || !ir_eval_size(k, hi, &h) || !ck_sub(h, l, &ext))) {
        diag_error(L->d, at, "the range of index %s cannot be computed with these sizes (a 64-bit overflow or a "
                   "division by zero)", ix->name);
        L->ok = false;
    } else if (L->all_bound && ext < 1) {
        StrBuf a = {0}, b = {0};
        ir_print_expr(k, lo, &a);
        ir_print_expr(k, hi, &b);
        diag_error(L->d, at, "index %s runs over %s..%s = %lld..%lld with these sizes: a range needs at least "
                   "one element", ix->name, a.s, b.s, (long long)l, (long long)h);
        sb_free(&a);
        sb_free(&b);
        L->ok = false;
    } else if (L->all_bound && !ck_mul(L->iters, ext, &L->iters)) {
        if (!L->iters_reported)
            diag_error(L->d, at, "the loop nest of this statement runs more than 2^63 iterations with these sizes");
        L->iters_reported = true;
        L->ok = false;
    } else if (L->all_bound) {
        L->vknown[v->id] = true;
        L->vempty[v->id] = h <= l;
        L->vlo[v->id] = l;
        L->vhi[v->id] = h <= l ? l : h - 1;
    }
    Node *n = ir_loop(k, v, lo, hi, at);
    ir_list_push(*list, n, *parent);
    *list = &n->u.loop.body;
    *parent = n;
    return n;
}

static void open_guard(Lower *L, const AstStmt *s, NodeList **list, Node **parent)
{
    Node *g = ir_guard(L->k, lower_expr(L, s->where), s->where->span);
    ir_list_push(*list, g, *parent);
    *list = &g->u.guard.body;
    *parent = g;
}

/* The f32 temporary a reduction into a half-precision tensor accumulates in:
 * same shape, named after it (T_acc, made unique if the kernel already has one). */
static Buffer *accumulator(Lower *L, const Buffer *dst)
{
    Kernel *k = L->k;
    const char *name = arena_printf(k->arena, "%s_acc", dst->name);
    for (int n = 2; ir_find_buffer(k, name); n++)
        name = arena_printf(k->arena, "%s_acc%d", dst->name, n);
    Buffer *acc = ir_add_buffer(k, name, L->ct, BUF_TEMP, dst->rank, dst->span);
    for (int r = 0; r < dst->rank; r++)
        acc->shape[r] = ir_clone_expr(k, dst->shape[r]);
    return acc;
}

/* A scan, Y[r, c] = Y[r, c - 1] + X[r, c]: the scanned index's loop innermost,
 * the other left-hand indices around it in order, and a running value per
 * iteration of those:
 *     for r:  Y_scan[r] = identity
 *             for c:  Y_scan[r] += X[r, c];  Y[r, c] = Y_scan[r]
 * A reverse scan (c + 1) runs c from the end: its loop variable counts up and the
 * index is C - 1 - c.  The running value is in the compute type, as a reduction's
 * accumulator is, and the loop over c carries it, so deps.c keeps that loop in
 * order while the loops around it stay free to run in parallel. */
static void lower_scan(Lower *L, const AstStmt *s, Buffer *b)
{
    Kernel *k = L->k;
    int e = s->scan_dim;
    NodeList *list = &k->body;
    Node *parent = NULL;
    for (int i = 0; i < s->nlhs; i++)
        if (i != e)
            open_loop(L, s, i, &list, &parent);
    const char *name = arena_printf(k->arena, "%s_scan", b->name);
    for (int n = 2; ir_find_buffer(k, name); n++)
        name = arena_printf(k->arena, "%s_scan%d", b->name, n);
    Buffer *acc = ir_add_buffer(k, name, L->ct, BUF_TEMP, s->nlhs - 1, s->span);
    Expr **aidx = arena_alloc(k->arena, sizeof(Expr *) * (size_t)(s->nlhs > 1 ? s->nlhs - 1 : 1));
    for (int i = 0, j = 0; i < s->nlhs; i++)
        if (i != e) {
            acc->shape[j] = ir_clone_expr(k, b->shape[i]);
            aidx[j++] = spanned(ir_var(k, L->var_of[s->lhs_idx[i]->name.index->id]), s->lhs_idx[i]->span);
        }
    ir_list_push(list, ir_stmt(k, acc, aidx, SOP_ASSIGN, spanned(identity(L, s->scan_op), s->span), s->span),
                 parent);
    open_loop(L, s, e, &list, &parent);
    if (s->scan_dir < 0) {
        L->rev_id = s->lhs_idx[e]->name.index->id;
        L->rev_hi = b->shape[e];
    }
    Expr *v = spanned(ir_cast(k, lower_expr(L, s->scan_step), L->ct), s->scan_step->span);
    Expr **aidx2 = arena_alloc(k->arena, sizeof(Expr *) * (size_t)(s->nlhs > 1 ? s->nlhs - 1 : 1));
    for (int j = 0; j < s->nlhs - 1; j++)
        aidx2[j] = ir_clone_expr(k, aidx[j]);
    ir_list_push(list, ir_stmt(k, acc, aidx2, op_of[s->scan_op], v, s->span), parent);
    Expr **aidx3 = arena_alloc(k->arena, sizeof(Expr *) * (size_t)(s->nlhs > 1 ? s->nlhs - 1 : 1));
    for (int j = 0; j < s->nlhs - 1; j++)
        aidx3[j] = ir_clone_expr(k, aidx[j]);
    Expr *cur = spanned(ir_load(k, acc, aidx3), s->span);
    ir_list_push(list, ir_stmt(k, b, lhs_index(L, s), SOP_ASSIGN, cur, s->span), parent);
    L->rev_id = -1;
    L->rev_hi = NULL;
}

/* A scatter, Y[T[i], d] += X[i, d] (sema made it Y[s0, d] = sum(i) X[i, d] where
 * T[i] == s0): two nests,
 *     for s0, d:  Y[s0, d] = 0
 *     for d, i:   Y[clamp(T[i]), d] += X[i, d]
 * the second with the plain left-hand indices in order, then the summed ones.  Its
 * store goes through a tensor value, so deps.c sees it as "any element" and keeps
 * the summed loops in order (no parallel loop over i on a CPU); the scattered
 * subscript is bounded like a gather's (the index tensor's range) and clamped. */
static void lower_scatter(Lower *L, const AstStmt *s, Buffer *b, const char *const *names)
{
    Kernel *k = L->k;
    if (b->dtype != L->ct) {
        diag_error(L->d, s->lhs_span, "a scatter adds into %s in its own type, and %s is %s: declare it f32 (or "
                   "f64, i32)", b->name, b->name, dtype_name(b->dtype));
        L->ok = false;
        return;
    }
    NodeList *list = &k->body;
    Node *parent = NULL;
    Var **main = xcalloc((size_t)s->nlhs + 1, sizeof(Var *));
    for (int i = 0; i < s->nlhs; i++) {
        main[i] = L->var_of[i];
        L->var_of[i] = ir_new_var(k, arena_printf(k->arena, "%s_0", names[i]));
        open_loop(L, s, i, &list, &parent);
    }
    ir_list_push(list, ir_stmt(k, b, lhs_index(L, s), SOP_ASSIGN, typed_const(L, 0, L->ct), s->span), parent);
    for (int i = 0; i < s->nlhs; i++)
        L->var_of[i] = main[i];
    free(main);
    list = &k->body;
    parent = NULL;
    for (int i = 0; i < s->nindices; i++)
        if (i >= s->nlhs || !s->scatter_idx[i])
            open_loop(L, s, i, &list, &parent);
    if (s->scatter_where) {
        Node *g = ir_guard(k, lower_expr(L, s->scatter_where), s->scatter_where->span);
        ir_list_push(list, g, parent);
        list = &g->u.guard.body;
        parent = g;
    }
    Expr **idx = arena_alloc(k->arena, sizeof(Expr *) * (size_t)(s->nlhs ? s->nlhs : 1));
    for (int d = 0; d < s->nlhs; d++) {
        if (!s->scatter_idx[d]) {
            idx[d] = spanned(ir_var(k, L->var_of[s->lhs_idx[d]->name.index->id]), s->lhs_idx[d]->span);
            continue;
        }
        const AstExpr *ax = s->scatter_idx[d];
        Expr *x = lower_expr(L, ax);
        if (x->dtype != DT_I64)
            x = spanned(ir_cast(k, x, DT_I64), ax->span);
        int64_t lo, hi, size;
        if (L->all_bound && ir_eval_size(k, b->shape[d], &size)) {
            L->saw_empty = L->saw_overflow = false;
            if (!interval(L, x, &lo, &hi)) {
                diag_error(L->d, ax->span, "%s is scattered into at tensor values whose range is not known: declare "
                           "the index tensor with range(lo, hi) inside 0..%lld", b->name, (long long)size);
                L->ok = false;
            } else if (!L->saw_empty && (lo < 0 || hi >= size)) {
                diag_error(L->d, ax->span, "a scatter into %s may leave it: its subscript runs %lld..%lld but "
                           "dimension %d has size %lld", b->name, (long long)lo, (long long)hi + 1, d, (long long)size);
                L->ok = false;
            }
        }
        Expr *top = ir_bin(k, IE_SUB, ir_clone_expr(k, b->shape[d]), ir_int(k, 1));
        x = spanned(ir_bin(k, IE_MAX, x, ir_int(k, 0)), ax->span);
        idx[d] = spanned(ir_bin(k, IE_MIN, x, top), ax->span);
    }
    const AstExpr *body = s->rhs->reduce.body;
    Expr *v = spanned(ir_cast(k, lower_expr(L, body), L->ct), body->span);
    ir_list_push(list, ir_stmt(k, b, idx, SOP_ADD, v, s->span), parent);
}

static void lower_stmt(Lower *L, const AstStmt *s, const char *const *names)
{
    Kernel *k = L->k;
    const AstTensor *t = s->lhs;
    if (!t || t->id < 0 || t->id >= L->ak->ntensors || !L->buf_of[t->id] || !s->indices) {
        internal(L, s->span, "a statement that sema did not check");
        return;
    }
    Buffer *b = L->buf_of[t->id];
    L->s = s;
    L->ct = dtype_compute(b->dtype);
    L->fct = dtype_is_float(L->ct) ? L->ct : DT_F64;
    L->var_of = xcalloc((size_t)s->nindices + 1, sizeof(Var *));
    for (int i = 0; i < s->nindices; i++) {
        L->var_of[i] = ir_new_var(k, names[i]);
        if (L->var_of[i]->id >= L->cap_vars)
            die("lowering: more variables than indices");
    }

    NodeList *list = &k->body;
    Node *parent = NULL;
    L->iters = 1;
    L->iters_reported = false;
    L->rev_id = -1;
    if (s->scatter && s->scatter_idx) {
        lower_scatter(L, s, b, names);
        free(L->var_of);
        L->var_of = NULL;
        return;
    }
    if (s->scan) {
        lower_scan(L, s, b);
        free(L->var_of);
        L->var_of = NULL;
        return;
    }
    for (int i = 0; i < s->nlhs; i++)
        open_loop(L, s, i, &list, &parent);
    if (s->rhs->kind != AST_REDUCE) {
        Expr *v = spanned(ir_cast(k, lower_expr(L, s->rhs), L->ct), s->rhs->span);
        if (s->where)
            v = spanned(ir_select(k, lower_expr(L, s->where), v, typed_const(L, 0, L->ct)), s->where->span);
        ir_list_push(list, ir_stmt(k, b, lhs_index(L, s), SOP_ASSIGN, v, s->span), parent);
    } else {
        ReduceOp rop = s->rhs->reduce.op;
        /* A reduction into f16/bf16 accumulates in its compute type (f32) and is
         * rounded once at the end: rounding every partial sum to 8 bits of mantissa
         * would lose most of the result's precision. */
        Buffer *dst = b;
        NodeList *lhs_list = list;
        Node *lhs_parent = parent;
        if (b->dtype != L->ct)
            b = accumulator(L, b);
        Expr *init = spanned(identity(L, rop), s->rhs->span);
        ir_list_push(list, ir_stmt(k, b, lhs_index(L, s), SOP_ASSIGN, init, s->span), parent);
        int gpos = -1;
        if (s->where) {
            gpos = depth_needed(s->where);
            if (gpos < s->nlhs)
                gpos = s->nlhs;
        }
        for (int i = s->nlhs; i < s->nindices; i++) {
            if (i == gpos)
                open_guard(L, s, &list, &parent);
            open_loop(L, s, i, &list, &parent);
        }
        if (gpos >= s->nindices)
            open_guard(L, s, &list, &parent);
        const AstExpr *body = s->rhs->reduce.body;
        Expr *v = spanned(ir_cast(k, lower_expr(L, body), L->ct), body->span);
        ir_list_push(list, ir_stmt(k, b, lhs_index(L, s), op_of[rop], v, s->span), parent);
        if (b != dst) {
            Expr *acc = spanned(ir_load(k, b, lhs_index(L, s)), s->span);
            ir_list_push(lhs_list, ir_stmt(k, dst, lhs_index(L, s), SOP_ASSIGN, acc, s->span), lhs_parent);
        }
    }
    free(L->var_of);
    L->var_of = NULL;
}

/* ---- loop names ---- */

typedef struct NameCount {
    const char *name;
    int count, last;
} NameCount;

/* For each statement and index: the index's own name if no other statement uses
 * it, else "T.i".  A hash table keeps a 10 000-statement kernel linear. */
static const char ***loop_names(Lower *L)
{
    const AstKernel *ak = L->ak;
    int total = 0;
    for (int i = 0; i < ak->nstmts; i++)
        total += ak->stmts[i]->nindices;
    size_t cap = 16;
    while (cap < (size_t)total * 2 + 2)
        cap *= 2;
    NameCount *tab = xcalloc(cap, sizeof *tab);
    NameCount **slot_of = xcalloc((size_t)total + 1, sizeof *slot_of);
    int at = 0;
    for (int i = 0; i < ak->nstmts; i++) {
        const AstStmt *s = ak->stmts[i];
        for (int j = 0; j < s->nindices; j++) {
            const char *nm = s->indices[j]->name;
            uint32_t h = 2166136261u;
            for (const char *p = nm; *p; p++)
                h = (h ^ (unsigned char)*p) * 16777619u;
            size_t q = h & (cap - 1);
            while (tab[q].name && strcmp(tab[q].name, nm) != 0)
                q = (q + 1) & (cap - 1);
            if (!tab[q].name) {
                tab[q].name = nm;
                tab[q].last = -1;
            }
            if (tab[q].last != i) {
                tab[q].count++;
                tab[q].last = i;
            }
            slot_of[at++] = &tab[q];
        }
    }
    const char ***names = arena_alloc(L->k->arena, sizeof(char **) * (size_t)(ak->nstmts ? ak->nstmts : 1));
    at = 0;
    for (int i = 0; i < ak->nstmts; i++) {
        const AstStmt *s = ak->stmts[i];
        names[i] = arena_alloc(L->k->arena, sizeof(char *) * (size_t)(s->nindices ? s->nindices : 1));
        for (int j = 0; j < s->nindices; j++, at++)
            names[i][j] = slot_of[at]->count == 1
                              ? s->indices[j]->name
                              : arena_printf(L->k->arena, "%s.%s", s->lhs->name, s->indices[j]->name);
    }
    free(tab);
    free(slot_of);
    return names;
}

/* ---- kernels ---- */

static void add_buffers(Lower *L, BufKind want)
{
    const AstKernel *ak = L->ak;
    for (int i = 0; i < ak->ntensors; i++) {
        const AstTensor *t = ak->tensors[i];
        BufKind bk = t->kind == TENSOR_IN ? BUF_IN : t->kind == TENSOR_OUT ? BUF_OUT : BUF_TEMP;
        if (bk != want)
            continue;
        if (t->id != i || (t->rank && !t->shape)) {
            internal(L, t->span, "a tensor that sema did not check");
            continue;
        }
        Buffer *b = ir_add_buffer(L->k, t->name, t->dtype, bk, t->rank, t->span);
        for (int r = 0; r < t->rank; r++)
            b->shape[r] = ir_simplify(L->k, size_expr(L, t->shape[r]));
        b->has_pad = t->has_pad;
        b->pad = t->pad_value;
        if (t->dom_lo && dtype_is_float(t->dtype)) {
            double lo = t->dom_lo->kind == AST_INT ? (double)t->dom_lo->ival : t->dom_lo->fval;
            double hi = t->dom_hi->kind == AST_INT ? (double)t->dom_hi->ival : t->dom_hi->fval;
            b->dom_lo = ir_flt(L->k, lo, DT_F64);
            b->dom_hi = ir_flt(L->k, hi, DT_F64);
        } else if (t->dom_lo) {
            b->dom_lo = ir_simplify(L->k, size_expr(L, t->dom_lo));
            b->dom_hi = ir_simplify(L->k, size_expr(L, t->dom_hi));
        }
        b->dom_distinct = t->dom_distinct;
        L->buf_of[i] = b;
    }
}

/* With every size bound, each dimension must come out at least 1, and the tensor's
 * element and byte counts must fit in 64 bits: index arithmetic in the generated
 * code is 64-bit, so a larger tensor could not even be addressed. */
static void check_shapes(Lower *L)
{
    for (int i = 0; i < L->k->nbufs; i++) {
        const Buffer *b = L->k->bufs[i];
        int64_t elems = 1, bytes;
        bool counted = true;
        for (int r = 0; r < b->rank; r++) {
            int64_t v;
            if (!ir_eval_size(L->k, b->shape[r], &v) || v < 1 || !ck_mul(elems, v, &elems))
                counted = false;
        }
        if (counted && !ck_mul(elems, dtype_bytes(b->dtype), &bytes)) {
            diag_error(L->d, b->span, "tensor %s has %lld elements of %d bytes at these sizes: more bytes than a "
                       "64-bit count holds", b->name, (long long)elems, dtype_bytes(b->dtype));
            L->ok = false;
        }
        bool dims_ok = true;
        for (int r = 0; r < b->rank && dims_ok; r++) {
            int64_t v;
            dims_ok = ir_eval_size(L->k, b->shape[r], &v) && v >= 1;
        }
        if (dims_ok && !counted) {
            diag_error(L->d, b->span, "tensor %s has more elements than a 64-bit count holds at these sizes",
                       b->name);
            L->ok = false;
        }
        for (int r = 0; r < b->rank; r++) {
            int64_t v;
            StrBuf text = {0};
            ir_print_expr(L->k, b->shape[r], &text);
            if (!ir_eval_size(L->k, b->shape[r], &v)) {
                diag_error(L->d, b->span, "dimension %d of %s, %s, cannot be computed with these sizes "
                           "(a division by zero or an overflow)", r, b->name, text.s);
                L->ok = false;
            } else if (v < 1) {
                diag_error(L->d, b->span, "dimension %d of %s is %s = %lld with these sizes: a size must be at "
                           "least 1", r, b->name, text.s, (long long)v);
                L->ok = false;
            }
            sb_free(&text);
        }
    }
}

/* With the sizes bound, every declared domain must be drawable: the same check the
 * harness makes before it draws (ir_domain_fill), reported at the declaration. */
static void check_domains(Lower *L)
{
    for (int i = 0; i < L->k->nbufs; i++) {
        const Buffer *b = L->k->bufs[i];
        if (!ir_has_domain(b))
            continue;
        int64_t n = ir_buffer_elems(L->k, b);
        char err[256];
        if (n >= 0 && !ir_domain_check(L->k, b, n, err, sizeof err)) {
            diag_error(L->d, b->span, "%s", err);
            L->ok = false;
        }
    }
}

Kernel *lower_kernel(const Program *p, const AstKernel *ak, const int64_t *values, const bool *bound, Diags *d)
{
    (void)p;
    if (!ak->checked) {
        diag_error(d, ak->span, "internal error: kernel %s is lowered before it was checked", ak->name);
        return NULL;
    }
    Lower L = {.ak = ak, .d = d, .ok = true, .all_bound = true};
    Kernel *k = L.k = ir_kernel_new(ak->name, ak->span);
    for (int i = 0; i < ak->nparams; i++) {
        Param *pr = ir_add_param(k, ak->params[i].name);
        if (values && bound && bound[i]) {
            pr->bound = true;
            pr->value = values[i];
        } else if (ak->params[i].has_default) {
            pr->bound = true;
            pr->value = ak->params[i].def;
        }
        L.all_bound &= pr->bound;
    }
    L.buf_of = xcalloc((size_t)ak->ntensors + 1, sizeof(Buffer *));
    add_buffers(&L, BUF_IN);
    add_buffers(&L, BUF_OUT);
    add_buffers(&L, BUF_TEMP);
    if (L.all_bound && L.ok)
        check_shapes(&L);
    if (L.all_bound && L.ok)
        check_domains(&L);

    int total = 0;
    for (int i = 0; i < ak->nstmts; i++)
        total += ak->stmts[i]->nindices;
    for (int i = 0; i < ak->nstmts; i++)
        if (ak->stmts[i]->scatter)
            total += ak->stmts[i]->nlhs; /* the scatter's initialisation nest */
    L.cap_vars = total + 1;
    L.vlo = xcalloc((size_t)L.cap_vars, sizeof(int64_t));
    L.vhi = xcalloc((size_t)L.cap_vars, sizeof(int64_t));
    L.vknown = xcalloc((size_t)L.cap_vars, sizeof(bool));
    L.vempty = xcalloc((size_t)L.cap_vars, sizeof(bool));
    if (L.ok) {
        const char ***names = loop_names(&L);
        for (int i = 0; i < ak->nstmts && !diag_too_many(d); i++)
            lower_stmt(&L, ak->stmts[i], names[i]);
    }
    free(L.vlo);
    free(L.vhi);
    free(L.vknown);
    free(L.vempty);
    free(L.buf_of);
    if (L.ok && !ir_verify(k, d))
        L.ok = false;
    if (!L.ok) {
        ir_free(k);
        return NULL;
    }
    return k;
}
