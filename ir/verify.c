/* The IR verifier: structural invariants every pass may rely on and must keep.
 * The pipeline runs it between passes, so a transformation that breaks the tree is
 * caught at the pass that broke it, not three passes later in generated code.
 *
 * Invariants checked:
 *  - parent pointers match the tree; buffers and variables belong to the kernel;
 *  - every expression has one owner (transformations rewrite in place);
 *  - expression arity; float constants have float types, integer ones integer types;
 *  - a loop variable is used only inside its loop, and no loop rebinds a variable
 *    of an enclosing loop (sibling loops may share one: clones share variables);
 *  - index count == rank, indices are integers, shapes are size expressions;
 *  - binary operands have one dtype (lowering inserts the casts, so code
 *    generators never guess a conversion), comparisons and logic give BOOL,
 *    conditions are BOOL, transcendental functions take and give floats;
 *  - a statement's value has the compute type of its buffer (dtype_compute);
 *  - a prefetch has an empty body, extents of at least 1 and integer indices. */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

typedef struct Ver {
    const Kernel *k;
    Diags *d;
    bool ok;
    bool *in_scope;          /* by Var id */
    const void **seen;       /* open-addressing set of Expr pointers */
    size_t seen_cap, seen_n;
    int tdepth[3];           /* enclosing loops bound to thread.x, .y, .z */
} Ver;

static void fail(Ver *v, Span sp, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A buffer with per-thread copies is reached only where the loops that name the
 * copy enclose the access. */
static void check_private(Ver *v, const Buffer *b, Span sp)
{
    for (int t = 0; t < 3; t++) {
        if (b->thread_copies[t] < 0 || (b->thread_copies[t] && b->mem != MEM_LOCAL))
            fail(v, sp, "buffer %s has bad per-thread copies", b->name);
        else if (b->thread_copies[t] && v->tdepth[t] == 0)
            fail(v, sp, "per-thread buffer %s accessed outside a thread.%c loop", b->name, "xyz"[t]);
    }
}

static void fail(Ver *v, Span sp, const char *fmt, ...)
{
    if (!v->ok)
        return; /* the first broken invariant is the one worth reading */
    v->ok = false;
    if (!v->d)
        return;
    StrBuf b = {0};
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&b, fmt, ap);
    va_end(ap);
    diag_error(v->d, sp, "internal error: invalid IR in kernel %s: %s", v->k->name, b.s);
    sb_free(&b);
}

static const char *show(Ver *v, const Expr *e, StrBuf *b)
{
    b->len = 0;
    sb_puts(b, "");
    ir_print_expr(v->k, e, b);
    return b->s;
}

/* True the first time p is seen. */
static bool first_sight(Ver *v, const void *p)
{
    if (2 * (v->seen_n + 1) > v->seen_cap) {
        size_t ncap = v->seen_cap ? v->seen_cap * 2 : 1024;
        const void **ns = xcalloc(ncap, sizeof *ns);
        for (size_t i = 0; i < v->seen_cap; i++) {
            const void *q = v->seen[i];
            if (!q)
                continue;
            size_t h = ((uintptr_t)q >> 4) * 0x9e3779b97f4a7c15ull & (ncap - 1);
            while (ns[h])
                h = (h + 1) & (ncap - 1);
            ns[h] = q;
        }
        free(v->seen);
        v->seen = ns;
        v->seen_cap = ncap;
    }
    size_t m = v->seen_cap - 1;
    size_t h = ((uintptr_t)p >> 4) * 0x9e3779b97f4a7c15ull & m;
    for (; v->seen[h]; h = (h + 1) & m)
        if (v->seen[h] == p)
            return false;
    v->seen[h] = p;
    v->seen_n++;
    return true;
}

static bool is_int(DType t)
{
    return t == DT_I64 || t == DT_I32;
}

static bool own_buffer(Ver *v, const Buffer *b)
{
    return b && b->id >= 0 && b->id < v->k->nbufs && v->k->bufs[b->id] == b;
}

static bool own_var(Ver *v, const Var *x)
{
    return x && x->id >= 0 && x->id < v->k->nvars && v->k->vars[x->id] == x;
}

/* size: true inside a buffer shape, where only constants, parameters and integer
 * arithmetic may appear. */
static void check_expr(Ver *v, const Expr *e, Span where, bool size)
{
    StrBuf b = {0};
    if (!v->ok)
        return;
    if (!e) {
        fail(v, where, "missing expression");
        return;
    }
    Span sp = e->span.src ? e->span : where;
    if ((unsigned)e->kind >= IE_COUNT) {
        fail(v, sp, "expression kind %d out of range", (int)e->kind);
        return;
    }
    if ((unsigned)e->dtype >= DT_COUNT) {
        fail(v, sp, "%s node with dtype %d out of range", ir_expr_name(e->kind), (int)e->dtype);
        return;
    }
    if (!first_sight(v, e)) {
        fail(v, sp, "expression '%s' has two owners (clone it before reusing it)", show(v, e, &b));
        goto done;
    }
    int n = ir_expr_arity(e->kind);
    for (int i = 0; i < 3; i++) {
        if (i < n && !e->args[i]) {
            fail(v, sp, "%s node lacks operand %d", ir_expr_name(e->kind), i + 1);
            goto done;
        }
        if (i >= n && e->args[i]) {
            fail(v, sp, "%s node has a stray operand %d", ir_expr_name(e->kind), i + 1);
            goto done;
        }
    }
    for (int i = 0; i < n; i++)
        check_expr(v, e->args[i], sp, size);
    if (!v->ok)
        goto done;
    const Expr *a = e->args[0], *c = e->args[1];
    if (size) {
        switch (e->kind) {
        case IE_INT: case IE_PARAM: case IE_CAST: case IE_NEG:
        case IE_ADD: case IE_SUB: case IE_MUL: case IE_DIV: case IE_MOD: case IE_MAX: case IE_MIN:
            if (is_int(e->dtype))
                break;
            /* fall through */
        default:
            fail(v, sp, "'%s' in a buffer shape is not a size expression", show(v, e, &b));
            goto done;
        }
    }
    switch (e->kind) {
    case IE_INT:
        if (!is_int(e->dtype))
            fail(v, sp, "integer constant %lld has dtype %s", (long long)e->u.i, dtype_name(e->dtype));
        break;
    case IE_FLT:
        if (!dtype_is_float(e->dtype))
            fail(v, sp, "float constant has dtype %s", dtype_name(e->dtype));
        break;
    case IE_PARAM:
        if (e->u.param < 0 || e->u.param >= v->k->nparams)
            fail(v, sp, "parameter %d does not exist", e->u.param);
        else if (e->dtype != DT_I64)
            fail(v, sp, "parameter %s has dtype %s, not i64", v->k->params[e->u.param].name, dtype_name(e->dtype));
        break;
    case IE_VAR:
        if (!own_var(v, e->u.var))
            fail(v, sp, "variable does not belong to the kernel");
        else if (!v->in_scope[e->u.var->id])
            fail(v, sp, "loop variable %s used outside its loop", e->u.var->name);
        else if (e->dtype != DT_I64)
            fail(v, sp, "loop variable %s has dtype %s, not i64", e->u.var->name, dtype_name(e->dtype));
        break;
    case IE_LOAD: {
        const Buffer *buf = e->u.load.buf;
        if (!own_buffer(v, buf)) {
            fail(v, sp, "load from a buffer that does not belong to the kernel");
            break;
        }
        if (e->dtype != buf->dtype)
            fail(v, sp, "load of %s (%s) has dtype %s", buf->name, dtype_name(buf->dtype), dtype_name(e->dtype));
        check_private(v, buf, sp);
        if (buf->rank && !e->u.load.idx) {
            fail(v, sp, "load of %s lacks its indices", buf->name);
            break;
        }
        for (int i = 0; i < buf->rank && v->ok; i++) {
            check_expr(v, e->u.load.idx[i], sp, false);
            if (v->ok && !is_int(e->u.load.idx[i]->dtype))
                fail(v, sp, "index %d of %s is %s, not an integer", i, buf->name, dtype_name(e->u.load.idx[i]->dtype));
        }
        break;
    }
    case IE_CAST:
        break;
    case IE_NEG: case IE_ABS:
        if (e->dtype != a->dtype || e->dtype == DT_BOOL)
            fail(v, sp, "%s of %s gives %s", ir_expr_name(e->kind), dtype_name(a->dtype), dtype_name(e->dtype));
        break;
    case IE_NOT:
        if (e->dtype != DT_BOOL || a->dtype != DT_BOOL)
            fail(v, sp, "'!' needs and gives bool: '%s'", show(v, e, &b));
        break;
    case IE_EXP: case IE_LOG: case IE_SQRT: case IE_RSQRT: case IE_TANH: case IE_ERF: case IE_LOG1P:
    case IE_EXPM1: case IE_FLOOR: case IE_CEIL: case IE_ROUND:
        if (!dtype_is_float(e->dtype) || e->dtype != a->dtype)
            fail(v, sp, "%s of %s gives %s (floats only, same type)", ir_expr_name(e->kind),
                 dtype_name(a->dtype), dtype_name(e->dtype));
        break;
    case IE_ADD: case IE_SUB: case IE_MUL: case IE_DIV: case IE_MOD: case IE_MAX: case IE_MIN:
        if (a->dtype != c->dtype || e->dtype != a->dtype || e->dtype == DT_BOOL)
            fail(v, sp, "operands of '%s' are %s and %s giving %s: cast them to one type", show(v, e, &b),
                 dtype_name(a->dtype), dtype_name(c->dtype), dtype_name(e->dtype));
        break;
    case IE_POW:
        if (!dtype_is_float(e->dtype) || a->dtype != c->dtype || e->dtype != a->dtype)
            fail(v, sp, "pow of %s and %s gives %s (floats only, one type)", dtype_name(a->dtype),
                 dtype_name(c->dtype), dtype_name(e->dtype));
        break;
    case IE_LT: case IE_LE: case IE_GT: case IE_GE: case IE_EQ: case IE_NE:
        if (a->dtype != c->dtype || e->dtype != DT_BOOL)
            fail(v, sp, "comparison '%s' of %s and %s gives %s", show(v, e, &b), dtype_name(a->dtype),
                 dtype_name(c->dtype), dtype_name(e->dtype));
        break;
    case IE_AND: case IE_OR:
        if (a->dtype != DT_BOOL || c->dtype != DT_BOOL || e->dtype != DT_BOOL)
            fail(v, sp, "'%s' needs bool operands", show(v, e, &b));
        break;
    case IE_SELECT:
        if (a->dtype != DT_BOOL)
            fail(v, sp, "select condition is %s, not bool", dtype_name(a->dtype));
        else if (c->dtype != e->dtype || e->args[2]->dtype != e->dtype)
            fail(v, sp, "select branches are %s and %s giving %s", dtype_name(c->dtype),
                 dtype_name(e->args[2]->dtype), dtype_name(e->dtype));
        break;
    default:
        break;
    }
done:
    sb_free(&b);
}

static void check_index(Ver *v, Expr *const *idx, int rank, const char *what, Span sp)
{
    if (rank && !idx) {
        fail(v, sp, "%s lacks its indices", what);
        return;
    }
    for (int i = 0; i < rank && v->ok; i++) {
        check_expr(v, idx[i], sp, false);
        if (v->ok && !is_int(idx[i]->dtype))
            fail(v, sp, "index %d of %s is %s, not an integer", i, what, dtype_name(idx[i]->dtype));
    }
}

static void check_nodes(Ver *v, const NodeList *l, const Node *parent)
{
    if (l->n < 0 || l->n > l->cap || (l->n && !l->v)) {
        fail(v, parent ? parent->span : v->k->span, "corrupt node list (n=%d cap=%d)", l->n, l->cap);
        return;
    }
    for (int i = 0; i < l->n && v->ok; i++) {
        const Node *n = l->v[i];
        Span sp = n->span.src ? n->span : parent ? parent->span : v->k->span;
        if (n->parent != parent) {
            fail(v, sp, "node %d of %s has a wrong parent pointer", i,
                 parent ? (parent->kind == N_LOOP ? parent->u.loop.var->name : "a guard") : "the kernel body");
            return;
        }
        if (!first_sight(v, n)) {
            fail(v, sp, "a node appears twice in the tree (clone it before reusing it)");
            return;
        }
        switch (n->kind) {
        case N_LOOP: {
            const Var *x = n->u.loop.var;
            if (!own_var(v, x)) {
                fail(v, sp, "loop variable does not belong to the kernel");
                return;
            }
            if ((unsigned)n->u.loop.hint >= HINT_COUNT)
                fail(v, sp, "loop %s has hint %d out of range", x->name, (int)n->u.loop.hint);
            if ((unsigned)n->u.loop.kind >= LOOP_COUNT)
                fail(v, sp, "loop %s has kind %d out of range", x->name, (int)n->u.loop.kind);
            if (v->in_scope[x->id])
                fail(v, sp, "loop %s rebinds the variable of an enclosing loop", x->name);
            if (n->u.loop.kind == LOOP_GRID && parent && (parent->kind != N_LOOP || parent->u.loop.kind != LOOP_GRID))
                fail(v, sp, "grid loop %s is not in the outermost nest of its launch", x->name);
            check_expr(v, n->u.loop.lo, sp, false);
            check_expr(v, n->u.loop.hi, sp, false);
            if (v->ok && (!is_int(n->u.loop.lo->dtype) || !is_int(n->u.loop.hi->dtype)))
                fail(v, sp, "bounds of loop %s are not integers", x->name);
            if (!v->ok)
                return;
            int td = n->u.loop.kind == LOOP_THREAD_X ? 0 : n->u.loop.kind == LOOP_THREAD_Y ? 1
                   : n->u.loop.kind == LOOP_THREAD_Z ? 2 : -1;
            v->in_scope[x->id] = true;
            if (td >= 0) v->tdepth[td]++;
            check_nodes(v, &n->u.loop.body, n);
            if (td >= 0) v->tdepth[td]--;
            v->in_scope[x->id] = false;
            break;
        }
        case N_IF:
            check_expr(v, n->u.guard.cond, sp, false);
            if (v->ok && n->u.guard.cond->dtype != DT_BOOL)
                fail(v, sp, "guard condition is %s, not bool", dtype_name(n->u.guard.cond->dtype));
            if (v->ok)
                check_nodes(v, &n->u.guard.body, n);
            if (v->ok)
                check_nodes(v, &n->u.guard.els, n);
            break;
        case N_STMT: {
            const Buffer *b = n->u.stmt.buf;
            if (!own_buffer(v, b)) {
                fail(v, sp, "statement stores to a buffer that does not belong to the kernel");
                return;
            }
            if ((unsigned)n->u.stmt.op > SOP_MIN)
                fail(v, sp, "statement on %s has operator %d out of range", b->name, (int)n->u.stmt.op);
            check_index(v, n->u.stmt.idx, b->rank, b->name, sp);
            check_expr(v, n->u.stmt.value, sp, false);
            check_private(v, b, sp);
            if (n->u.stmt.block_reduce && (n->u.stmt.op == SOP_ASSIGN || v->tdepth[0] == 0))
                fail(v, sp, "block-wide reduction into %s is %s", b->name,
                     n->u.stmt.op == SOP_ASSIGN ? "an assignment" : "outside a thread.x loop");
            if (n->u.stmt.block_scan && (n->u.stmt.op == SOP_ASSIGN || v->tdepth[0] == 0))
                fail(v, sp, "block-wide scan into %s is %s", b->name,
                     n->u.stmt.op == SOP_ASSIGN ? "an assignment" : "outside a thread.x loop");
            if (n->u.stmt.atomic && (n->u.stmt.op != SOP_ADD || b->mem != MEM_GLOBAL))
                fail(v, sp, "atomic update of %s is not a += of global memory", b->name);
            if (!v->ok)
                return;
            DType want = dtype_compute(b->dtype);
            if (n->u.stmt.value->dtype != want)
                fail(v, sp, "value stored to %s (%s) is %s, not its compute type %s", b->name,
                     dtype_name(b->dtype), dtype_name(n->u.stmt.value->dtype), dtype_name(want));
            if (n->u.stmt.op != SOP_ASSIGN && want == DT_BOOL)
                fail(v, sp, "'%s' on bool buffer %s", stmt_op_name(n->u.stmt.op), b->name);
            break;
        }
        case N_PREFETCH: {
            const Buffer *b = n->u.pf.buf;
            if (!own_buffer(v, b)) {
                fail(v, sp, "prefetch of a buffer that does not belong to the kernel");
                return;
            }
            if (n->u.pf.none.n != 0) {
                fail(v, sp, "prefetch of %s has a body", b->name);
                return;
            }
            if (b->rank && !n->u.pf.ext) {
                fail(v, sp, "prefetch of %s lacks its extents", b->name);
                return;
            }
            for (int d = 0; d < b->rank && v->ok; d++)
                if (n->u.pf.ext[d] < 1)
                    fail(v, sp, "prefetch of %s has extent %lld in dimension %d", b->name,
                         (long long)n->u.pf.ext[d], d);
            check_index(v, n->u.pf.idx, b->rank, b->name, sp);
            break;
        }
        default:
            fail(v, sp, "node kind %d out of range", (int)n->kind);
            return;
        }
    }
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

bool ir_verify(const Kernel *k, Diags *d)
{
    Ver v = {.k = k, .d = d, .ok = true};
    v.in_scope = xcalloc((size_t)(k->nvars ? k->nvars : 1), sizeof(bool));
    for (int i = 0; i < k->nvars && v.ok; i++)
        if (!k->vars[i] || k->vars[i]->id != i)
            fail(&v, k->span, "variable %d has id %d", i, k->vars[i] ? k->vars[i]->id : -1);
    for (int i = 0; i < k->nbufs && v.ok; i++) {
        const Buffer *b = k->bufs[i];
        if (!b || b->id != i) {
            fail(&v, k->span, "buffer %d has id %d", i, b ? b->id : -1);
            break;
        }
        if ((unsigned)b->dtype >= DT_COUNT || (unsigned)b->mem > MEM_LOCAL || b->rank < 0)
            fail(&v, b->span, "buffer %s has a bad dtype, memory space or rank", b->name);
        for (int j = 0; j < b->rank && v.ok; j++)
            check_expr(&v, b->shape[j], b->span, true);
    }
    if (v.ok && k->nbufs > 1) {
        /* sorted, so a 10 000-temporary kernel is not checked in quadratic time */
        const char **names = xmalloc(sizeof(char *) * (size_t)k->nbufs);
        for (int i = 0; i < k->nbufs; i++)
            names[i] = k->bufs[i]->name;
        qsort(names, (size_t)k->nbufs, sizeof *names, cmp_name);
        for (int i = 1; i < k->nbufs && v.ok; i++)
            if (strcmp(names[i - 1], names[i]) == 0)
                fail(&v, k->span, "two buffers are named %s", names[i]);
        free(names);
    }
    if (v.ok)
        check_nodes(&v, &k->body, NULL);
    free(v.in_scope);
    free(v.seen);
    return v.ok;
}
