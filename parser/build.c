/* AST builders called from the grammar's actions, and the parse driver that feeds
 * the lexer's tokens to the Lemon parser.  Builders only record what was written;
 * meaning (names, types, ranges) is sema's job, so a builder reports an error only
 * when the text itself is malformed in a way the grammar cannot say. */
#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "grammar.h"
#include "lang/pdl_limits.h"

static void *new_node(ParseCtx *c, size_t n)
{
    return arena_alloc(c->a, n);
}

PtrVec *list_new(ParseCtx *c)
{
    PtrVec *l = new_node(c, sizeof *l);
    vec_push(&c->tmp, l); /* so the heap storage is freed with the context */
    return l;
}

PtrVec *list_add(ParseCtx *c, PtrVec *l, void *item)
{
    (void)c;
    vec_push(l, item);
    return l;
}

/* Copies a list's items into the arena (the PtrVec's storage is temporary). */
static void **list_freeze(ParseCtx *c, PtrVec *l, int *n)
{
    *n = l ? l->n : 0;
    if (!*n)
        return NULL;
    void **v = arena_alloc(c->a, sizeof(void *) * (size_t)*n);
    memcpy(v, l->v, sizeof(void *) * (size_t)*n);
    return v;
}

static AstExpr *expr_new(ParseCtx *c, AstExprKind k, Span sp)
{
    AstExpr *e = new_node(c, sizeof *e);
    c->nexprs++;
    e->kind = k;
    e->span = sp;
    e->dtype = DT_COUNT;
    e->depth = 1;
    return e;
}

/* Sema, the printer and lowering walk expressions recursively, so the height of an
 * expression tree is bounded here, where it is built: `a + a + ... + a` with 400 000
 * terms, or as many unary minus signs, once overflowed the C stack.  Brackets are
 * bounded by the lexer; this bounds chains of operators, which need no brackets.
 * The first violation stops the parse (ctx->failed) with one message. */
enum { MAX_EXPR_DEPTH = 1000 };

static void grow(ParseCtx *c, AstExpr *e, const AstExpr *child)
{
    if (child && child->depth + 1 > e->depth)
        e->depth = child->depth + 1;
    if (e->depth > MAX_EXPR_DEPTH && !c->failed) {
        Span sp = e->span;
        sp.len = 1; /* point at where the expression starts, not at a megabyte of it */
        diag_error(c->d, sp, "expression too deep (more than %d nested operations): split it with temporaries",
                   MAX_EXPR_DEPTH);
        c->failed = true;
    }
}

static void grow_list(ParseCtx *c, AstExpr *e, AstExpr **v, int n)
{
    for (int i = 0; i < n; i++)
        grow(c, e, v[i]);
}

AstExpr *mk_int(ParseCtx *c, Token t)
{
    AstExpr *e = expr_new(c, AST_INT, t.span);
    e->ival = t.ival;
    return e;
}

AstExpr *mk_float(ParseCtx *c, Token t)
{
    AstExpr *e = expr_new(c, AST_FLOAT, t.span);
    e->fval = t.fval;
    return e;
}

AstExpr *mk_name(ParseCtx *c, Token t)
{
    AstExpr *e = expr_new(c, AST_NAME, t.span);
    e->name.name = t.text;
    return e;
}

AstExpr *mk_access(ParseCtx *c, Token name, PtrVec *idx, Span end)
{
    AstExpr *e = expr_new(c, AST_ACCESS, span_join(name.span, end));
    e->access.name = name.text;
    e->access.idx = (AstExpr **)list_freeze(c, idx, &e->access.nidx);
    grow_list(c, e, e->access.idx, e->access.nidx);
    return e;
}

AstExpr *mk_call(ParseCtx *c, Token name, PtrVec *args, Span end)
{
    AstExpr *e = expr_new(c, AST_CALL, span_join(name.span, end));
    e->call.fn = name.text;
    e->call.args = (AstExpr **)list_freeze(c, args, &e->call.nargs);
    e->call.builtin = BI_COUNT;
    grow_list(c, e, e->call.args, e->call.nargs);
    return e;
}

AstExpr *mk_unary(ParseCtx *c, AstOp op, Token optok, AstExpr *a)
{
    /* Fold a minus sign into a literal so `-1` and `-inf` are constants. */
    if (op == OP_NEG && (a->kind == AST_INT || a->kind == AST_FLOAT) && a->span.off == optok.span.off + 1) {
        if (a->kind == AST_INT)
            a->ival = -a->ival;
        else
            a->fval = -a->fval;
        a->span = span_join(optok.span, a->span);
        return a;
    }
    AstExpr *e = expr_new(c, AST_UNARY, span_join(optok.span, a->span));
    e->unary.op = op;
    e->unary.a = a;
    grow(c, e, a);
    return e;
}

AstExpr *mk_binary(ParseCtx *c, AstOp op, AstExpr *a, AstExpr *b)
{
    AstExpr *e = expr_new(c, AST_BINARY, span_join(a->span, b->span));
    e->binary.op = op;
    e->binary.a = a;
    e->binary.b = b;
    grow(c, e, a);
    grow(c, e, b);
    return e;
}

/* a ** b is the call pow(a, b): one node kind for both spellings, so the checker
 * and the printer need nothing of their own for the operator. */
AstExpr *mk_pow(ParseCtx *c, AstExpr *a, AstExpr *b)
{
    AstExpr *e = expr_new(c, AST_CALL, span_join(a->span, b->span));
    e->call.fn = "pow";
    e->call.args = (AstExpr **)list_freeze(c, list_add(c, list_add(c, list_new(c), a), b), &e->call.nargs);
    e->call.builtin = BI_COUNT;
    grow(c, e, a);
    grow(c, e, b);
    return e;
}

AstExpr *mk_paren(ParseCtx *c, Token lp, AstExpr *e, Token rp)
{
    (void)c;
    /* Parentheses only group; widen the span so a caret covers them. */
    e->span = span_join(lp.span, rp.span);
    return e;
}

AstRedVar *mk_redvar(ParseCtx *c, Token name, AstExpr *lo, AstExpr *hi)
{
    AstRedVar *v = new_node(c, sizeof *v);
    v->name = name.text;
    v->span = name.span;
    v->lo = lo;
    v->hi = hi;
    return v;
}

AstExpr *mk_reduce(ParseCtx *c, Token red, PtrVec *vars, AstExpr *body)
{
    AstExpr *e = expr_new(c, AST_REDUCE, span_join(red.span, body->span));
    e->reduce.op = (ReduceOp)red.op;
    e->reduce.nvars = vars->n;
    e->reduce.vars = arena_alloc(c->a, sizeof(AstRedVar) * (size_t)vars->n);
    for (int i = 0; i < vars->n; i++)
        e->reduce.vars[i] = *(AstRedVar *)vars->v[i];
    e->reduce.body = body;
    grow(c, e, body);
    for (int i = 0; i < vars->n; i++) {
        grow(c, e, e->reduce.vars[i].lo);
        grow(c, e, e->reduce.vars[i].hi);
    }
    return e;
}

AstParam *mk_param(ParseCtx *c, Token name, bool has_def, Token def, bool neg)
{
    AstParam *p = new_node(c, sizeof *p);
    p->name = name.text;
    p->span = name.span;
    p->has_default = has_def;
    if (has_def) {
        p->def = neg ? -def.ival : def.ival;
        /* 0 is a size too (padding = 0); where it is an extent, lowering says so */
        if (p->def < 0)
            diag_error(c->d, def.span, "size parameter %s cannot be negative (%lld): sizes are 0 or more, as -D "
                       "values are", name.text, (long long)p->def);
    }
    return p;
}

AstParam *mk_dtparam(ParseCtx *c, Token name, Token dtype)
{
    AstParam *p = new_node(c, sizeof *p);
    p->name = name.text;
    p->span = name.span;
    p->is_dtype = true;
    p->has_default = true;
    p->def_span = dtype.span;
    p->dtype = dtype_from_name(dtype.text);
    if (p->dtype == DT_COUNT) {
        diag_error(c->d, dtype.span, "unknown dtype '%s' for the dtype parameter %s: expected one of f64, f32, f16, "
                   "bf16, i32", dtype.text, name.text);
        p->dtype = DT_F32;
    }
    return p;
}

AstTensor *mk_tensor(ParseCtx *c, TensorKind kind, Token name, Token dtype, PtrVec *shape, bool scalar)
{
    AstTensor *t = new_node(c, sizeof *t);
    t->kind = kind;
    t->name = name.text;
    t->span = name.span;
    t->dtype = dtype_from_name(dtype.text);
    t->dtype_known = t->dtype != DT_COUNT;
    t->dtype_param = -1;
    t->dtype_name = dtype.text;
    t->dtype_span = dtype.span;
    /* a name that is no dtype may be a dtype parameter: mk_kernel decides */
    t->shape = scalar ? NULL : (AstExpr **)list_freeze(c, shape, &t->rank);
    t->id = -1;
    if (t->rank > PDL_MAX_RANK && !c->failed) {
        diag_error(c->d, name.span, "tensor %s has %d dimensions; the limit is %d", name.text, t->rank, PDL_MAX_RANK);
        c->failed = true;
    }
    return t;
}

void tensor_set_pad(ParseCtx *c, AstTensor *t, AstExpr *v, Token padtok)
{
    if (!v)
        return;
    if (t->has_pad) {
        diag_error(c->d, v->span, "%s already has a pad value", t->name);
        return;
    }
    t->pad_span = v->span;
    if (v->kind == AST_INT) {
        t->has_pad = true;
        t->pad_value = (double)v->ival;
    } else if (v->kind == AST_FLOAT) {
        t->has_pad = true;
        t->pad_value = v->fval;
    } else {
        diag_error(c->d, v->span, "pad(...) takes a number, such as pad(0) or pad(-inf)");
    }
    if (t->kind != TENSOR_IN)
        diag_error(c->d, v->span, "pad(...) applies to inputs only: it gives the value of reads outside %s", t->name);
    (void)padtok;
}

void tensor_set_domain(ParseCtx *c, AstTensor *t, Token kw, AstExpr *lo, AstExpr *hi, Token rp, bool distinct)
{
    Span sp = span_join(kw.span, rp.span);
    if (t->dom_lo) {
        diag_error(c->d, sp, "%s already has a domain: give one range(...) or distinct(...)", t->name);
        return;
    }
    if (t->kind != TENSOR_IN) {
        diag_error(c->d, sp, "%s(...) applies to inputs only: it says what values %s is drawn from",
                   distinct ? "distinct" : "range", t->name);
        return;
    }
    t->dom_lo = lo;
    t->dom_hi = hi;
    t->dom_distinct = distinct;
    t->dom_span = sp;
}

AstStmt *mk_stmt(ParseCtx *c, Token lhs, PtrVec *idx, AstExpr *rhs, AstExpr *where)
{
    AstStmt *s = new_node(c, sizeof *s);
    s->lhs_name = lhs.text;
    s->lhs_span = lhs.span;
    s->lhs_idx = (AstExpr **)list_freeze(c, idx, &s->nlhs);
    s->rhs = rhs;
    s->where = where;
    s->span = span_join(lhs.span, where ? where->span : rhs->span);
    return s;
}

AstKernel *mk_kernel(ParseCtx *c, Token name, PtrVec *params, PtrVec *items, Token rb)
{
    AstKernel *k = new_node(c, sizeof *k);
    k->name = name.text;
    k->span = name.span;
    /* size parameters and dtype parameters, each in the order written */
    k->params = arena_alloc(c->a, sizeof(AstParam) * (size_t)(params->n ? params->n : 1));
    k->dtparams = arena_alloc(c->a, sizeof(AstParam) * (size_t)(params->n ? params->n : 1));
    for (int i = 0; i < params->n; i++) {
        AstParam *p = params->v[i];
        if (p->is_dtype)
            k->dtparams[k->ndtparams++] = *p;
        else
            k->params[k->nparams++] = *p;
    }
    int nt = 0, ns = 0;
    for (int i = 0; i < items->n; i++)
        ((uintptr_t)items->v[i] & 1) ? ns++ : nt++;
    /* Checked here, before sema, lowering and code generation, whose cost grows
     * with these counts (100 000 statements once took 8 GB and ended in an abort
     * inside LLVM). */
    if (ns > PDL_MAX_STMTS && !c->failed) {
        diag_error(c->d, name.span, "kernel %s has %d statements; the limit is %d: split it into several kernels",
                   name.text, ns, PDL_MAX_STMTS);
        c->failed = true;
    } else if (nt > PDL_MAX_TENSORS && !c->failed) {
        diag_error(c->d, name.span, "kernel %s declares %d tensors; the limit is %d", name.text, nt, PDL_MAX_TENSORS);
        c->failed = true;
    } else if (c->nexprs > PDL_MAX_EXPR_NODES && !c->failed) {
        diag_error(c->d, name.span, "kernel %s holds %d operations and operands; the limit is %d (code generation "
                   "time grows with it): split it into several kernels", name.text, c->nexprs, PDL_MAX_EXPR_NODES);
        c->failed = true;
    } else if (params->n > PDL_MAX_PARAMS && !c->failed) {
        diag_error(c->d, name.span, "kernel %s has %d size parameters; the limit is %d", name.text, params->n,
                   PDL_MAX_PARAMS);
        c->failed = true;
    }
    /* room for temporaries, which sema adds: at most one per statement */
    k->tensors = arena_alloc(c->a, sizeof(AstTensor *) * (size_t)(nt + ns + 1));
    k->stmts = arena_alloc(c->a, sizeof(AstStmt *) * (size_t)(ns + 1));
    for (int i = 0; i < items->n; i++) {
        uintptr_t p = (uintptr_t)items->v[i];
        if (p & 1)
            k->stmts[k->nstmts++] = (AstStmt *)(p & ~(uintptr_t)1);
        else
            k->tensors[k->ntensors++] = (AstTensor *)p;
    }
    for (int i = 0; i < k->ntensors; i++) {
        AstTensor *t = k->tensors[i];
        if (t->dtype_known)
            continue;
        int dp = kernel_find_dtparam(k, t->dtype_name);
        if (dp >= 0) {
            t->dtype_param = dp;
            t->dtype = k->dtparams[dp].dtype;
            t->dtype_known = true;
        } else if (k->ndtparams) {
            diag_error(c->d, t->dtype_span, "unknown dtype '%s': expected one of f64, f32, f16, bf16, i32, or a "
                       "dtype parameter of kernel %s", t->dtype_name, k->name);
        } else {
            diag_error(c->d, t->dtype_span, "unknown dtype '%s': expected one of f64, f32, f16, bf16, i32",
                       t->dtype_name);
        }
    }
    (void)rb;
    c->nexprs = 0;
    return k;
}

const char *mk_target(ParseCtx *c, const char *prefix, Token t)
{
    return prefix ? arena_printf(c->a, "%s-%s", prefix, t.text) : t.text;
}

AstSchedule *mk_schedule(ParseCtx *c, Token kw, Token kernel, const char *target, PtrVec *items, Token rb)
{
    AstSchedule *s = new_node(c, sizeof *s);
    s->span = kernel.text ? span_join(kw.span, kernel.span) : kw.span;
    s->kernel = kernel.text;
    s->target = target;
    s->nitems = items->n;
    if (items->n > PDL_MAX_SCHED_ITEMS && !c->failed) {
        Span at = kw.span.src ? kw.span : ((SchedItem *)items->v[PDL_MAX_SCHED_ITEMS])->span;
        diag_error(c->d, at, "a schedule of %d statements; the limit is %d", items->n, PDL_MAX_SCHED_ITEMS);
        c->failed = true;
    }
    s->items = arena_alloc(c->a, sizeof(SchedItem) * (size_t)(items->n ? items->n : 1));
    for (int i = 0; i < items->n; i++)
        s->items[i] = *(SchedItem *)items->v[i];
    (void)rb;
    return s;
}

Token *mk_token(ParseCtx *c, Token t)
{
    Token *p = new_node(c, sizeof *p);
    *p = t;
    return p;
}

AstSchedule *mk_sched_head(ParseCtx *c)
{
    return new_node(c, sizeof(AstSchedule));
}

AstSchedule *sched_head_as(ParseCtx *c, AstSchedule *h, Token kw, Token name)
{
    if (strcmp(kw.text, "as")) {
        diag_error(c->d, kw.span, "syntax error: unexpected name '%s' after the schedule's kernel and target "
                   "(expected 'as VARIANT', 'when PARAM in [DTYPES]' or '{')", kw.text);
        c->failed = true;
    } else if (h->variant) {
        diag_error(c->d, kw.span, "a schedule block has one variant name; this one is already '%s'", h->variant);
        c->failed = true;
    } else {
        h->variant = name.text;
        h->variant_span = name.span;
    }
    return h;
}

AstSchedule *sched_head_when(ParseCtx *c, AstSchedule *h, Token kw, Token param, PtrVec *dtypes, Token rb)
{
    if (strcmp(kw.text, "when")) {
        diag_error(c->d, kw.span, "syntax error: unexpected name '%s' after the schedule's kernel and target "
                   "(expected 'as VARIANT', 'when PARAM in [DTYPES]' or '{')", kw.text);
        c->failed = true;
        return h;
    }
    if (h->when_param) {
        diag_error(c->d, kw.span, "a schedule block has one 'when' guard; this one already tests %s", h->when_param);
        c->failed = true;
        return h;
    }
    h->when_param = param.text;
    h->when_span = span_join(kw.span, rb.span);
    h->when_dtypes = arena_alloc(c->a, sizeof(DType) * (size_t)dtypes->n);
    for (int i = 0; i < dtypes->n; i++) {
        const SchedArg *a = dtypes->v[i];
        DType dt = a->kind == SARG_NAME && !a->key ? dtype_from_name(a->name) : DT_COUNT;
        if (dt == DT_COUNT) {
            diag_error(c->d, a->span, "'when %s in [...]' lists dtypes: f64, f32, f16, bf16, i32", param.text);
            c->failed = true;
            return h;
        }
        h->when_dtypes[h->nwhen++] = dt;
    }
    return h;
}

PtrVec *mk_schedules(ParseCtx *c, Token kw, PtrVec *kernels, const char *target, AstSchedule *head, PtrVec *items,
                     Token rb)
{
    PtrVec *l = list_new(c);
    AstSchedule *first = NULL;
    for (int i = 0; i < kernels->n; i++) {
        Token *k = kernels->v[i];
        for (int j = 0; j < i; j++)
            if (!strcmp(((Token *)kernels->v[j])->text, k->text)) {
                diag_error(c->d, k->span, "kernel %s is named twice in this schedule's header", k->text);
                c->failed = true;
                return l;
            }
        AstSchedule *s;
        if (!first) {
            s = first = mk_schedule(c, kw, *k, target, items, rb);
        } else {
            /* the same items, another kernel: the items are never written after parsing */
            s = new_node(c, sizeof *s);
            *s = *first;
            s->span = k->span;
            s->kernel = k->text;
        }
        s->variant = head->variant;
        s->variant_span = head->variant_span;
        s->when_param = head->when_param;
        s->when_span = head->when_span;
        s->when_dtypes = head->when_dtypes;
        s->nwhen = head->nwhen;
        list_add(c, l, s);
    }
    return l;
}

static SchedArg *freeze_args(ParseCtx *c, PtrVec *l, int *n)
{
    *n = l ? l->n : 0;
    SchedArg *a = arena_alloc(c->a, sizeof(SchedArg) * (size_t)(*n ? *n : 1));
    for (int i = 0; i < *n; i++)
        a[i] = *(SchedArg *)l->v[i];
    return a;
}

SchedItem *mk_sched_call(ParseCtx *c, Token name, PtrVec *args, Token rp)
{
    SchedItem *it = new_node(c, sizeof *it);
    it->kind = SCHED_CALL;
    it->name = name.text;
    it->span = span_join(name.span, rp.span);
    it->args = freeze_args(c, args, &it->nargs);
    return it;
}

SchedItem *mk_sched_param(ParseCtx *c, Token kw, Token name, PtrVec *cands, SchedArg *single)
{
    SchedItem *it = new_node(c, sizeof *it);
    it->kind = SCHED_PARAM;
    it->name = name.text;
    it->span = span_join(kw.span, name.span);
    if (single) {
        it->nargs = 1;
        it->args = single;
    } else {
        it->args = freeze_args(c, cands, &it->nargs);
    }
    return it;
}

static SchedArg *sarg_new(ParseCtx *c, SchedArgKind k, Span sp)
{
    SchedArg *a = new_node(c, sizeof *a);
    a->kind = k;
    a->span = sp;
    return a;
}

SchedArg *mk_sarg_name(ParseCtx *c, Token t)
{
    SchedArg *a = sarg_new(c, SARG_NAME, t.span);
    a->name = t.text;
    return a;
}

/* The keyword `pad` as a value (split's tail=pad): keywords carry no text. */
SchedArg *mk_sarg_pad(ParseCtx *c, Token t)
{
    SchedArg *a = sarg_new(c, SARG_NAME, t.span);
    a->name = "pad";
    return a;
}

SchedArg *mk_sarg_int(ParseCtx *c, Token t, bool neg)
{
    SchedArg *a = sarg_new(c, SARG_INT, t.span);
    a->ival = neg ? -t.ival : t.ival;
    return a;
}

SchedArg *mk_sarg_float(ParseCtx *c, Token t, bool neg)
{
    SchedArg *a = sarg_new(c, SARG_FLOAT, t.span);
    a->fval = neg ? -t.fval : t.fval;
    return a;
}

/* Strings in schedules only ever name loops and buffers, and those names reach the
 * generated code: a string must be a name (`"io"`, `"Y.r"`), so no other byte of a
 * schedule (from a file, -s or a tuning database) can reach the output. */
static bool name_text(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 255)
        return false;
    bool start = true;
    for (const char *p = s; *p; p++) {
        char ch = *p;
        bool letter = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
        if (letter || (!start && ch >= '0' && ch <= '9'))
            start = false;
        else if (ch == '.' && !start && p[1])
            start = true;
        else
            return false;
    }
    return true;
}

SchedArg *mk_sarg_string(ParseCtx *c, Token t)
{
    SchedArg *a = sarg_new(c, SARG_STRING, t.span);
    a->name = t.text;
    if (!name_text(t.text) && !c->failed) {
        diag_error(c->d, t.span, "a string in a schedule names a loop or a buffer: letters, digits, '_' and "
                   "'.' between names, at most 255 characters");
        c->failed = true;
    }
    return a;
}

SchedArg *mk_sarg_list(ParseCtx *c, Token lb, PtrVec *items, Token rb)
{
    SchedArg *a = sarg_new(c, SARG_LIST, span_join(lb.span, rb.span));
    a->list.items = freeze_args(c, items, &a->list.n);
    return a;
}

SchedArg *sarg_keyword(ParseCtx *c, Token key, SchedArg *v)
{
    (void)c;
    v->key = key.text;
    v->span = span_join(key.span, v->span);
    return v;
}

void add_kernel(ParseCtx *c, AstKernel *k)
{
    Program *p = c->prog;
    if (p->nkernels == PDL_MAX_KERNELS && !c->failed) {
        diag_error(c->d, k->span, "more than %d kernels in one file", PDL_MAX_KERNELS);
        c->failed = true;
        return;
    }
    if (p->nkernels % 8 == 0) {
        AstKernel **v = arena_alloc(c->a, sizeof(AstKernel *) * (size_t)(p->nkernels + 8));
        if (p->nkernels)
            memcpy(v, p->kernels, sizeof(AstKernel *) * (size_t)p->nkernels);
        p->kernels = v;
    }
    p->kernels[p->nkernels++] = k;
}

void add_schedule(ParseCtx *c, AstSchedule *s)
{
    Program *p = c->prog;
    if (p->nschedules % 8 == 0) {
        AstSchedule **v = arena_alloc(c->a, sizeof(AstSchedule *) * (size_t)(p->nschedules + 8));
        if (p->nschedules)
            memcpy(v, p->schedules, sizeof(AstSchedule *) * (size_t)p->nschedules);
        p->schedules = v;
    }
    p->schedules[p->nschedules++] = s;
}

void add_schedules(ParseCtx *c, PtrVec *l)
{
    for (int i = 0; i < l->n; i++)
        add_schedule(c, l->v[i]);
}

/* Feeds tokens until the end or the first error.  first_token, when nonzero, is
 * injected ahead of the text (TK_SCHED_ONLY selects the schedule-only start). */
static void run_parser(ParseCtx *ctx, Source *src, int first_token)
{
    Lexer lx;
    lexer_init(&lx, src, ctx->a, ctx->d);
    void *parser = perfcParseAlloc(malloc, ctx);
    if (!parser)
        die("out of memory");
    int errs = ctx->d->nerrors;
    if (first_token) {
        Token t = {0};
        t.kind = first_token;
        perfcParse(parser, first_token, t);
    }
    for (;;) {
        Token t = lexer_next(&lx);
        if (ctx->d->nerrors > errs && t.kind == 0) {
            /* the lexer failed: do not let the parser add "unexpected end of file" */
            ctx->failed = true;
            break;
        }
        perfcParse(parser, t.kind, t);
        if (t.kind == 0 || ctx->failed)
            break;
    }
    perfcParseFree(parser, free);
    for (int i = 0; i < ctx->tmp.n; i++)
        vec_free((PtrVec *)ctx->tmp.v[i]);
    vec_free(&ctx->tmp);
}

Program *parse_program(Arena *a, Source *src, Diags *d)
{
    Program *p = arena_alloc(a, sizeof *p);
    p->arena = a;
    p->src = src;
    ParseCtx ctx = {0};
    ctx.prog = p;
    ctx.a = a;
    ctx.d = d;
    run_parser(&ctx, src, 0);
    if (!ctx.failed && d->nerrors == 0 && p->nkernels == 0) {
        Span sp = {src, 0, 0, 1, 1};
        diag_error(d, sp, "no kernel in this file: a PDL file holds at least one `kernel name(...) { ... }`");
    }
    return p;
}

AstSchedule *parse_schedule_text(Arena *a, Source *src, Diags *d)
{
    Program *p = arena_alloc(a, sizeof *p);
    p->arena = a;
    p->src = src;
    ParseCtx ctx = {0};
    ctx.prog = p;
    ctx.a = a;
    ctx.d = d;
    run_parser(&ctx, src, TK_SCHED_ONLY);
    if (ctx.failed || !ctx.sched_only)
        return NULL;
    return ctx.sched_only;
}
