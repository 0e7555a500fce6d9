/* Construction of the loop-nest IR: kernels, buffers, variables, expressions and
 * nodes, all allocated in the kernel's arena, plus the small algebra everyone needs
 * (cloning, substitution, integer simplification) and the name tables generated
 * from the X-macros in ir.h.
 *
 * Ownership rule the whole IR relies on: every Expr has exactly one owner (one
 * parent expression, node field or buffer shape).  Constructors copy index arrays,
 * ir_clone_* copy deeply and ir_subst builds a fresh tree, so a transformation can
 * rewrite an expression in place without touching another node by accident. */
#include "ir.h"
#include "arith.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---- name tables ---- */

static const char *const expr_names[] = {
#define X(k, s, n) s,
    PF_IR_EXPRS(X)
#undef X
};
static const int expr_arity[] = {
#define X(k, s, n) n,
    PF_IR_EXPRS(X)
#undef X
};
static const char *const loop_names[] = {
#define X(k, s) s,
    PF_LOOP_KINDS(X)
#undef X
};
static const char *const hint_names[] = {
#define X(k, s) s,
    PF_LOOP_HINTS(X)
#undef X
};
static const char *const sop_names[] = {
#define X(k, s) s,
    PF_STMT_OPS(X)
#undef X
};
static const char *const mem_names[] = {
#define X(k, s) s,
    PF_MEM_SPACES(X)
#undef X
};

const char *ir_expr_name(ExprKind k)
{
    return (unsigned)k < IE_COUNT ? expr_names[k] : "?";
}

int ir_expr_arity(ExprKind k)
{
    return (unsigned)k < IE_COUNT ? expr_arity[k] : 0;
}

const char *loop_kind_name(LoopKind k)
{
    return (unsigned)k < LOOP_COUNT ? loop_names[k] : "?";
}

const char *loop_hint_name(LoopHint h)
{
    return (unsigned)h < HINT_COUNT ? hint_names[h] : "?";
}

const char *stmt_op_name(StmtOp op)
{
    return (unsigned)op < sizeof sop_names / sizeof *sop_names ? sop_names[op] : "?";
}

const char *mem_space_name(MemSpace m)
{
    return (unsigned)m < sizeof mem_names / sizeof *mem_names ? mem_names[m] : "?";
}

/* ---- arena-backed growable arrays ---- */

/* Doubles an arena array; the old storage stays in the arena until ir_free (the
 * arrays are small and few, so the waste is bounded by their final size). */
static void *grow(Arena *a, void *old, int n, int *cap, size_t elem)
{
    int ncap = *cap ? *cap * 2 : 8;
    void *p = arena_alloc(a, elem * (size_t)ncap);
    if (n)
        memcpy(p, old, elem * (size_t)n);
    *cap = ncap;
    return p;
}

/* ---- kernels, params, buffers ---- */

Kernel *ir_kernel_new(const char *name, Span sp)
{
    Arena *a = arena_new();
    Kernel *k = arena_alloc(a, sizeof *k);
    k->arena = a;
    k->name = arena_strdup(a, name ? name : "kernel");
    k->span = sp;
    return k;
}

void ir_free(Kernel *k)
{
    if (k)
        arena_free(k->arena); /* the Kernel itself lives in its arena */
}

/* Params are stored by value in one array, so a Param* is valid only until the
 * next ir_add_param; everything in the IR refers to parameters by position. */
Param *ir_add_param(Kernel *k, const char *name)
{
    /* Kernel has no capacity field for params: capacities are 8, 16, 32, ... so
     * the array is full exactly when the count is 0 or one of those. */
    int n = k->nparams;
    if (n == 0 || (n >= 8 && (n & (n - 1)) == 0)) {
        int cap = n;
        k->params = grow(k->arena, k->params, n, &cap, sizeof(Param));
    }
    Param *p = &k->params[k->nparams++];
    p->name = arena_strdup(k->arena, name);
    p->bound = false;
    p->value = 0;
    return p;
}

Buffer *ir_add_buffer(Kernel *k, const char *name, DType t, BufKind kind, int rank, Span sp)
{
    if (k->nbufs == k->capbufs)
        k->bufs = grow(k->arena, k->bufs, k->nbufs, &k->capbufs, sizeof(Buffer *));
    Buffer *b = arena_alloc(k->arena, sizeof *b);
    b->id = k->nbufs;
    b->name = arena_strdup(k->arena, name);
    b->dtype = t;
    b->kind = kind;
    b->mem = MEM_GLOBAL;
    b->rank = rank;
    b->shape = arena_alloc(k->arena, sizeof(Expr *) * (size_t)(rank ? rank : 1));
    b->span = sp;
    k->bufs[k->nbufs++] = b;
    return b;
}

Buffer *ir_find_buffer(const Kernel *k, const char *name)
{
    for (int i = 0; i < k->nbufs; i++)
        if (strcmp(k->bufs[i]->name, name) == 0)
            return k->bufs[i];
    return NULL;
}

/* ---- variables: a hash of names, so lowering a 10 000-statement kernel and
 * transformations that mint many loops stay linear ---- */

struct VarNames {
    const Kernel *owner;
    Var **slot;
    int cap;     /* power of two */
    int count;   /* variables indexed: k->nvars when up to date */
};

static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static void names_put(struct VarNames *t, Var *v)
{
    uint32_t m = (uint32_t)t->cap - 1;
    for (uint32_t i = hash_str(v->name) & m;; i = (i + 1) & m) {
        if (!t->slot[i]) {
            t->slot[i] = v;
            t->count++;
            return;
        }
    }
}

/* Brings the table up to date with k->vars; rebuilds it when someone appended to
 * k->vars directly or copied the Kernel struct, so the table can never lie. */
static struct VarNames *names_of(Kernel *k, int extra)
{
    struct VarNames *t = k->names;
    int need = k->nvars + extra;
    if (!t || t->owner != k || t->count > k->nvars || need * 2 > t->cap) {
        int cap = 64;
        while (cap < need * 2)
            cap *= 2;
        t = arena_alloc(k->arena, sizeof *t);
        t->owner = k;
        t->cap = cap;
        t->slot = arena_alloc(k->arena, sizeof(Var *) * (size_t)cap);
        k->names = t;
    }
    while (t->count < k->nvars)
        names_put(t, k->vars[t->count]);
    return t;
}

static Var *names_get(struct VarNames *t, const char *name)
{
    uint32_t m = (uint32_t)t->cap - 1;
    for (uint32_t i = hash_str(name) & m; t->slot[i]; i = (i + 1) & m)
        if (strcmp(t->slot[i]->name, name) == 0)
            return t->slot[i];
    return NULL;
}

Var *ir_find_var(const Kernel *k, const char *name)
{
    /* The table is a cache; refreshing it does not change the kernel's meaning. */
    return names_get(names_of((Kernel *)k, 0), name);
}

Var *ir_new_var(Kernel *k, const char *name)
{
    struct VarNames *t = names_of(k, 1);
    const char *nm = name;
    /* i, i2, i3, ...: "the second i" reads better than i_1 in printed loops */
    for (int n = 2; names_get(t, nm); n++)
        nm = arena_printf(k->arena, "%s%d", name, n);
    if (nm == name)
        nm = arena_strdup(k->arena, name);
    if (k->nvars == k->capvars)
        k->vars = grow(k->arena, k->vars, k->nvars, &k->capvars, sizeof(Var *));
    Var *v = arena_alloc(k->arena, sizeof *v);
    v->id = k->nvars;
    v->name = nm;
    k->vars[k->nvars++] = v;
    names_put(t, v);
    return v;
}

/* ---- expressions ---- */

static Expr *new_expr(Kernel *k, ExprKind kind, DType t)
{
    Expr *e = arena_alloc(k->arena, sizeof *e);
    e->kind = kind;
    e->dtype = t;
    return e;
}

static Expr **copy_idx(Kernel *k, Expr *const *idx, int n)
{
    Expr **v = arena_alloc(k->arena, sizeof(Expr *) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++)
        v[i] = idx[i];
    return v;
}

Expr *ir_int(Kernel *k, int64_t v)
{
    Expr *e = new_expr(k, IE_INT, DT_I64);
    e->u.i = v;
    return e;
}

/* The value is rounded to its dtype here, so the constant the interpreter uses,
 * the one code generators emit and the one the printer shows are the same. */
Expr *ir_flt(Kernel *k, double v, DType t)
{
    Expr *e = new_expr(k, IE_FLT, t);
    e->u.f = dtype_is_float(t) ? dtype_round(v, t) : v;
    return e;
}

Expr *ir_param(Kernel *k, int p)
{
    Expr *e = new_expr(k, IE_PARAM, DT_I64);
    e->u.param = p;
    return e;
}

Expr *ir_var(Kernel *k, Var *v)
{
    Expr *e = new_expr(k, IE_VAR, DT_I64);
    e->u.var = v;
    return e;
}

Expr *ir_load(Kernel *k, Buffer *b, Expr **idx)
{
    Expr *e = new_expr(k, IE_LOAD, b->dtype);
    e->u.load.buf = b;
    e->u.load.idx = copy_idx(k, idx, b->rank);
    return e;
}

Expr *ir_cast(Kernel *k, Expr *a, DType t)
{
    if (a->dtype == t)
        return a;
    Expr *e = new_expr(k, IE_CAST, t);
    e->args[0] = a;
    e->span = a->span;
    return e;
}

Expr *ir_un(Kernel *k, ExprKind op, Expr *a)
{
    if (ir_expr_arity(op) != 1 || op == IE_CAST)
        die("ir_un: %s is not a unary operator", ir_expr_name(op));
    Expr *e = new_expr(k, op, op == IE_NOT ? DT_BOOL : a->dtype);
    e->args[0] = a;
    return e;
}

static bool is_predicate(ExprKind op)
{
    switch (op) {
    case IE_LT: case IE_LE: case IE_GT: case IE_GE: case IE_EQ: case IE_NE:
    case IE_AND: case IE_OR:
        return true;
    default:
        return false;
    }
}

Expr *ir_bin(Kernel *k, ExprKind op, Expr *a, Expr *b)
{
    if (ir_expr_arity(op) != 2)
        die("ir_bin: %s is not a binary operator", ir_expr_name(op));
    DType t = is_predicate(op) ? DT_BOOL : dtype_promote(a->dtype, b->dtype);
    Expr *e = new_expr(k, op, t);
    e->args[0] = a;
    e->args[1] = b;
    return e;
}

Expr *ir_select(Kernel *k, Expr *c, Expr *a, Expr *b)
{
    Expr *e = new_expr(k, IE_SELECT, a->dtype == b->dtype ? a->dtype : dtype_promote(a->dtype, b->dtype));
    e->args[0] = c;
    e->args[1] = a;
    e->args[2] = b;
    return e;
}

Expr *ir_clone_expr(Kernel *k, const Expr *e)
{
    if (!e)
        return NULL;
    Expr *c = new_expr(k, e->kind, e->dtype);
    *c = *e;
    for (int i = 0; i < 3; i++)
        c->args[i] = ir_clone_expr(k, e->args[i]);
    if (e->kind == IE_LOAD) {
        int n = e->u.load.buf->rank;
        c->u.load.idx = arena_alloc(k->arena, sizeof(Expr *) * (size_t)(n ? n : 1));
        for (int i = 0; i < n; i++)
            c->u.load.idx[i] = ir_clone_expr(k, e->u.load.idx[i]);
    }
    return c;
}

/* A fresh tree, the input left intact: a transformation can keep the old body
 * (a tail loop, a guarded copy) while using the substituted one. */
Expr *ir_subst(Kernel *k, Expr *e, const Var *v, const Expr *with)
{
    if (!e)
        return NULL;
    if (e->kind == IE_VAR && e->u.var == v) {
        Expr *c = ir_clone_expr(k, with);
        if (!c->span.src)
            c->span = e->span;
        return c;
    }
    Expr *c = new_expr(k, e->kind, e->dtype);
    *c = *e;
    for (int i = 0; i < 3; i++)
        c->args[i] = ir_subst(k, e->args[i], v, with);
    if (e->kind == IE_LOAD) {
        int n = e->u.load.buf->rank;
        c->u.load.idx = arena_alloc(k->arena, sizeof(Expr *) * (size_t)(n ? n : 1));
        for (int i = 0; i < n; i++)
            c->u.load.idx[i] = ir_subst(k, e->u.load.idx[i], v, with);
    }
    return c;
}

/* ---- integer simplification ---- */

static bool is_int_type(DType t)
{
    return t == DT_I64 || t == DT_I32;
}

static bool is_const(const Expr *e, int64_t v)
{
    return e->kind == IE_INT && e->u.i == v;
}

/* Folds a op b; false when the result would overflow the type or is undefined
 * (division by zero is left in the tree for the interpreter to report).  The
 * arithmetic is the IR's (ir/arith.c). */
static bool fold(ExprKind op, int64_t a, int64_t b, DType t, int64_t *out)
{
    int64_t r;
    switch (op) {
    case IE_ADD: case IE_SUB: case IE_MUL: case IE_DIV: case IE_MOD: case IE_MAX: case IE_MIN:
        if (!ar_binop(op, a, b, &r))
            return false;
        break;
    default: return false;
    }
    if (t == DT_I32 && (r < INT32_MIN || r > INT32_MAX))
        return false;
    *out = r;
    return true;
}

static Expr *int_const(Kernel *k, int64_t v, DType t, Span sp)
{
    Expr *e = ir_int(k, v);
    e->dtype = t;
    e->span = sp;
    return e;
}

/* Keeps the constant of a sum on the right and merges nested constants, so split
 * and tile arithmetic like (io*4 + ii) + 1 - 1 prints as io*4 + ii. */
static Expr *simplify_add(Kernel *k, Expr *e)
{
    Expr *a = e->args[0], *b = e->args[1];
    int64_t r;
    if (e->kind == IE_ADD && a->kind == IE_INT && b->kind != IE_INT) {
        e->args[0] = b;
        e->args[1] = a;
        a = e->args[0];
        b = e->args[1];
    }
    if (b->kind != IE_INT)
        return e;
    if (b->u.i == 0)
        return a;
    /* (x + c1) +- c2  and  (x - c1) +- c2 */
    if ((a->kind == IE_ADD || a->kind == IE_SUB) && a->args[1]->kind == IE_INT && a->dtype == e->dtype) {
        int64_t c1 = a->kind == IE_ADD ? a->args[1]->u.i : -a->args[1]->u.i;
        if (a->args[1]->u.i != INT64_MIN && fold(e->kind, c1, b->u.i, e->dtype, &r)) {
            e->kind = IE_ADD;
            e->args[0] = a->args[0];
            e->args[1] = int_const(k, r, e->dtype, b->span);
            return simplify_add(k, e);
        }
    }
    /* x + -c reads better as x - c */
    if (b->u.i < 0 && b->u.i != INT64_MIN) {
        e->kind = e->kind == IE_ADD ? IE_SUB : IE_ADD;
        e->args[1] = int_const(k, -b->u.i, e->dtype, b->span);
    }
    return e;
}

Expr *ir_simplify(Kernel *k, Expr *e)
{
    if (!e)
        return NULL;
    for (int i = 0; i < 3; i++)
        if (e->args[i])
            e->args[i] = ir_simplify(k, e->args[i]);
    if (e->kind == IE_LOAD) {
        for (int i = 0; i < e->u.load.buf->rank; i++)
            e->u.load.idx[i] = ir_simplify(k, e->u.load.idx[i]);
        return e;
    }
    if (!is_int_type(e->dtype))
        return e;
    Expr *a = e->args[0], *b = e->args[1];
    int64_t r;
    switch (e->kind) {
    case IE_NEG:
        if (a->kind == IE_INT && a->u.i != INT64_MIN)
            return int_const(k, -a->u.i, e->dtype, e->span);
        if (a->kind == IE_NEG)
            return a->args[0];
        return e;
    case IE_CAST:
        if (a->kind == IE_INT && (e->dtype == DT_I64 || (a->u.i >= INT32_MIN && a->u.i <= INT32_MAX)))
            return int_const(k, a->u.i, e->dtype, e->span);
        return e;
    case IE_ADD:
    case IE_SUB:
        if (a->kind == IE_INT && b->kind == IE_INT && fold(e->kind, a->u.i, b->u.i, e->dtype, &r))
            return int_const(k, r, e->dtype, e->span);
        if (e->kind == IE_SUB && a->kind == IE_VAR && b->kind == IE_VAR && a->u.var == b->u.var)
            return int_const(k, 0, e->dtype, e->span);
        if (e->kind == IE_ADD && is_const(a, 0))
            return b;
        return simplify_add(k, e);
    case IE_MUL:
        if (a->kind == IE_INT && b->kind == IE_INT && fold(e->kind, a->u.i, b->u.i, e->dtype, &r))
            return int_const(k, r, e->dtype, e->span);
        if (is_const(a, 0) || is_const(b, 0))
            return int_const(k, 0, e->dtype, e->span);
        if (is_const(b, 1))
            return a;
        if (is_const(a, 1))
            return b;
        return e;
    case IE_DIV:
    case IE_MOD:
        if (a->kind == IE_INT && b->kind == IE_INT && fold(e->kind, a->u.i, b->u.i, e->dtype, &r))
            return int_const(k, r, e->dtype, e->span);
        if (is_const(b, 1))
            return e->kind == IE_DIV ? a : int_const(k, 0, e->dtype, e->span);
        return e;
    case IE_MAX:
    case IE_MIN:
        if (a->kind == IE_INT && b->kind == IE_INT && fold(e->kind, a->u.i, b->u.i, e->dtype, &r))
            return int_const(k, r, e->dtype, e->span);
        return e;
    default:
        return e;
    }
}

/* ---- nodes ---- */

/* List operations receive no Kernel, yet list storage must live in the kernel's
 * arena so ir_free releases it.  Every node therefore carries a hidden header with
 * its arena just before it; a list grows in the arena of the node inserted.  The
 * magic number catches a node that was not made by these constructors. */
typedef struct NodeHead {
    Arena *arena;
    uint64_t magic;
} NodeHead;

enum { NODE_MAGIC = 0x6e6f6465 };

static Node *new_node(Kernel *k, NodeKind kind, Span sp)
{
    unsigned char *raw = arena_alloc(k->arena, sizeof(NodeHead) + sizeof(Node));
    NodeHead *h = (NodeHead *)raw;
    h->arena = k->arena;
    h->magic = NODE_MAGIC;
    Node *n = (Node *)(raw + sizeof(NodeHead));
    n->kind = kind;
    n->span = sp;
    return n;
}

static Arena *node_arena(const Node *n)
{
    const NodeHead *h = (const NodeHead *)((const unsigned char *)n - sizeof(NodeHead));
    if (h->magic != NODE_MAGIC)
        die("IR node not built with ir_loop/ir_stmt/ir_guard");
    return h->arena;
}

Node *ir_loop(Kernel *k, Var *v, Expr *lo, Expr *hi, Span sp)
{
    Node *n = new_node(k, N_LOOP, sp);
    n->u.loop.var = v;
    n->u.loop.lo = lo;
    n->u.loop.hi = hi;
    n->u.loop.kind = LOOP_SERIAL;
    n->u.loop.inflight = 0;
    return n;
}

Node *ir_stmt(Kernel *k, Buffer *b, Expr **idx, StmtOp op, Expr *value, Span sp)
{
    Node *n = new_node(k, N_STMT, sp);
    n->u.stmt.buf = b;
    n->u.stmt.idx = copy_idx(k, idx, b->rank);
    n->u.stmt.op = op;
    n->u.stmt.value = value;
    return n;
}

Node *ir_guard(Kernel *k, Expr *cond, Span sp)
{
    Node *n = new_node(k, N_IF, sp);
    n->u.guard.cond = cond;
    return n;
}

_Static_assert(offsetof(Node, u.pf.none) == offsetof(Node, u.guard.body),
               "a prefetch's empty body lies where a guard's body does");

Node *ir_prefetch(Kernel *k, Buffer *b, Expr **idx, const int64_t *ext, Span sp)
{
    Node *n = new_node(k, N_PREFETCH, sp);
    int r = b->rank ? b->rank : 1;
    n->u.pf.buf = b;
    n->u.pf.idx = copy_idx(k, idx, b->rank);
    n->u.pf.ext = arena_alloc(k->arena, sizeof(int64_t) * (size_t)r);
    for (int i = 0; i < b->rank; i++)
        n->u.pf.ext[i] = ext[i];
    return n;
}

void ir_list_push(NodeList *l, Node *n, Node *parent)
{
    ir_list_insert(l, l->n, n, parent);
}

void ir_list_insert(NodeList *l, int at, Node *n, Node *parent)
{
    if (at < 0 || at > l->n)
        die("ir_list_insert: position %d outside 0..%d", at, l->n);
    if (l->n == l->cap) {
        int ncap = l->cap ? l->cap * 2 : 4;
        Node **v = arena_alloc(node_arena(n), sizeof(Node *) * (size_t)ncap);
        if (l->n)
            memcpy(v, l->v, sizeof(Node *) * (size_t)l->n);
        l->v = v;
        l->cap = ncap;
    }
    memmove(l->v + at + 1, l->v + at, sizeof(Node *) * (size_t)(l->n - at));
    l->v[at] = n;
    l->n++;
    n->parent = parent;
}

void ir_list_remove(NodeList *l, int at)
{
    if (at < 0 || at >= l->n)
        die("ir_list_remove: position %d outside 0..%d", at, l->n - 1);
    l->v[at]->parent = NULL;
    memmove(l->v + at, l->v + at + 1, sizeof(Node *) * (size_t)(l->n - at - 1));
    l->n--;
}

NodeList *ir_body(Node *n)
{
    if (!n)
        return NULL;
    if (n->kind == N_LOOP)
        return &n->u.loop.body;
    if (n->kind == N_IF)
        return &n->u.guard.body;
    if (n->kind == N_PREFETCH)
        return &n->u.pf.none;
    return NULL;
}

NodeList *ir_else(Node *n)
{
    return n && n->kind == N_IF ? &n->u.guard.els : NULL;
}

bool ir_list_only_prefetch(const NodeList *l)
{
    for (int i = 0; i < l->n; i++)
        if (l->v[i]->kind != N_PREFETCH)
            return false;
    return true;
}

static Expr **clone_idx(Kernel *k, Expr *const *idx, int rank)
{
    Expr **c = arena_alloc(k->arena, sizeof(Expr *) * (size_t)(rank ? rank : 1));
    for (int i = 0; i < rank; i++)
        c[i] = ir_clone_expr(k, idx[i]);
    return c;
}

static TcGroup *clone_tc(Kernel *k, const TcGroup *g)
{
    if (!g)
        return NULL;
    TcGroup *c = arena_alloc(k->arena, sizeof *c);
    *c = *g;
    c->prod = arena_alloc(k->arena, sizeof *c->prod * (size_t)(g->nprod ? g->nprod : 1));
    for (int t = 0; t < g->nprod; t++) {
        c->prod[t] = g->prod[t];
        c->prod[t].a = clone_idx(k, g->prod[t].a, g->opbuf[0]->rank);
        c->prod[t].b = clone_idx(k, g->prod[t].b, g->opbuf[1]->rank);
    }
    return c;
}

static TmaCopy *clone_tma(Kernel *k, const TmaCopy *t)
{
    if (!t)
        return NULL;
    TmaCopy *c = arena_alloc(k->arena, sizeof *c);
    *c = *t;
    c->stage = ir_clone_expr(k, t->stage);
    c->origin = clone_idx(k, t->origin, t->rank);
    return c;
}

static Node *clone_node(Kernel *k, const Node *n, Node *parent)
{
    Node *c = new_node(k, n->kind, n->span);
    c->parent = parent;
    c->barrier = n->barrier;
    const NodeList *from = NULL;
    NodeList *to = NULL;
    switch (n->kind) {
    case N_LOOP:
        c->u.loop.var = n->u.loop.var;
        c->u.loop.kind = n->u.loop.kind;
        c->u.loop.inflight = n->u.loop.inflight;
        c->u.loop.hint = n->u.loop.hint;
        c->u.loop.stages = n->u.loop.stages;
        c->u.loop.ncopies = n->u.loop.ncopies;
        c->u.loop.reg_staged = n->u.loop.reg_staged;
        c->u.loop.frag_ahead = n->u.loop.frag_ahead;
        c->u.loop.admit_last = n->u.loop.admit_last;
        c->u.loop.barrier_each = n->u.loop.barrier_each;
        c->u.loop.tc = clone_tc(k, n->u.loop.tc);
        c->u.loop.tma = clone_tma(k, n->u.loop.tma);
        c->u.loop.lo = ir_clone_expr(k, n->u.loop.lo);
        c->u.loop.hi = ir_clone_expr(k, n->u.loop.hi);
        from = &n->u.loop.body;
        to = &c->u.loop.body;
        break;
    case N_IF:
        c->u.guard.cond = ir_clone_expr(k, n->u.guard.cond);
        c->u.guard.holds = n->u.guard.holds;
        c->u.guard.skip = n->u.guard.skip;
        for (int i = 0; i < n->u.guard.els.n; i++)
            ir_list_push(&c->u.guard.els, clone_node(k, n->u.guard.els.v[i], c), c);
        from = &n->u.guard.body;
        to = &c->u.guard.body;
        break;
    case N_STMT: {
        const Buffer *b = n->u.stmt.buf;
        c->u.stmt.buf = n->u.stmt.buf;
        c->u.stmt.op = n->u.stmt.op;
        c->u.stmt.block_reduce = n->u.stmt.block_reduce;
        c->u.stmt.lane_reduce = n->u.stmt.lane_reduce;
        c->u.stmt.atomic = n->u.stmt.atomic;
        c->u.stmt.block_scan = n->u.stmt.block_scan;
        c->u.stmt.guarded = n->u.stmt.guarded;
        c->u.stmt.idx = arena_alloc(k->arena, sizeof(Expr *) * (size_t)(b->rank ? b->rank : 1));
        for (int i = 0; i < b->rank; i++)
            c->u.stmt.idx[i] = ir_clone_expr(k, n->u.stmt.idx[i]);
        c->u.stmt.value = ir_clone_expr(k, n->u.stmt.value);
        break;
    }
    case N_PREFETCH: {
        const Buffer *b = n->u.pf.buf;
        int r = b->rank ? b->rank : 1;
        c->u.pf.buf = n->u.pf.buf;
        c->u.pf.write = n->u.pf.write;
        c->u.pf.idx = arena_alloc(k->arena, sizeof(Expr *) * (size_t)r);
        c->u.pf.ext = arena_alloc(k->arena, sizeof(int64_t) * (size_t)r);
        for (int i = 0; i < b->rank; i++) {
            c->u.pf.idx[i] = ir_clone_expr(k, n->u.pf.idx[i]);
            c->u.pf.ext[i] = n->u.pf.ext[i];
        }
        break;
    }
    }
    if (from)
        for (int i = 0; i < from->n; i++)
            ir_list_push(to, clone_node(k, from->v[i], c), c);
    return c;
}

Node *ir_clone_node(Kernel *k, const Node *n)
{
    return clone_node(k, n, NULL);
}

static Node *find_loop(NodeList *l, const char *name)
{
    for (int i = 0; i < l->n; i++) {
        Node *n = l->v[i];
        if (n->kind == N_LOOP && strcmp(n->u.loop.var->name, name) == 0)
            return n;
        NodeList *b = ir_body(n);
        if (b) {
            Node *f = find_loop(b, name);
            if (f)
                return f;
        }
    }
    return NULL;
}

Node *ir_find_loop(Kernel *k, const char *name)
{
    return find_loop(&k->body, name);
}

bool ir_expr_uses_var(const Expr *e, const Var *v)
{
    if (!e)
        return false;
    if (e->kind == IE_VAR)
        return e->u.var == v;
    if (e->kind == IE_LOAD) {
        for (int i = 0; i < e->u.load.buf->rank; i++)
            if (ir_expr_uses_var(e->u.load.idx[i], v))
                return true;
        return false;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        if (ir_expr_uses_var(e->args[i], v))
            return true;
    return false;
}

/* ---- a whole kernel: the nodes cloned, then every buffer and variable pointer
 * moved to the copy's own ---- */

typedef struct Remap {
    Buffer **bufs;
    Var **vars;
} Remap;

static void remap_expr(const Remap *r, Expr *e)
{
    if (!e)
        return;
    if (e->kind == IE_VAR)
        e->u.var = r->vars[e->u.var->id];
    if (e->kind == IE_LOAD) {
        for (int i = 0; i < e->u.load.buf->rank; i++)
            remap_expr(r, e->u.load.idx[i]);
        e->u.load.buf = r->bufs[e->u.load.buf->id];
    }
    for (int i = 0; i < 3; i++)
        remap_expr(r, e->args[i]);
}

static void remap_node(const Remap *r, Node *n)
{
    switch (n->kind) {
    case N_LOOP:
        n->u.loop.var = r->vars[n->u.loop.var->id];
        remap_expr(r, n->u.loop.lo);
        remap_expr(r, n->u.loop.hi);
        if (n->u.loop.tc) {
            TcGroup *g = n->u.loop.tc;
            for (int t = 0; t < g->nprod; t++)
                for (int o = 0; o < 2; o++)
                    for (int i = 0; i < g->opbuf[o]->rank; i++)
                        remap_expr(r, o ? g->prod[t].b[i] : g->prod[t].a[i]);
            for (int o = 0; o < 2; o++)
                g->opbuf[o] = r->bufs[g->opbuf[o]->id];
        }
        break;
    case N_IF: remap_expr(r, n->u.guard.cond); break;
    case N_STMT:
        for (int i = 0; i < n->u.stmt.buf->rank; i++)
            remap_expr(r, n->u.stmt.idx[i]);
        remap_expr(r, n->u.stmt.value);
        n->u.stmt.buf = r->bufs[n->u.stmt.buf->id];
        return;
    case N_PREFETCH:
        for (int i = 0; i < n->u.pf.buf->rank; i++)
            remap_expr(r, n->u.pf.idx[i]);
        n->u.pf.buf = r->bufs[n->u.pf.buf->id];
        return;
    }
    NodeList *b = ir_body(n);
    for (int i = 0; b && i < b->n; i++)
        remap_node(r, b->v[i]);
}

Kernel *ir_clone_kernel(const Kernel *k)
{
    Kernel *c = ir_kernel_new(k->name, k->span);
    for (int i = 0; i < k->nparams; i++) {
        Param *p = ir_add_param(c, k->params[i].name);
        p->bound = k->params[i].bound;
        p->value = k->params[i].value;
    }
    Remap r = {xcalloc((size_t)k->nbufs + 1, sizeof(Buffer *)), xcalloc((size_t)k->nvars + 1, sizeof(Var *))};
    for (int i = 0; i < k->nvars; i++)
        r.vars[i] = ir_new_var(c, k->vars[i]->name);
    for (int i = 0; i < k->nbufs; i++) {
        const Buffer *b = k->bufs[i];
        Buffer *nb = ir_add_buffer(c, b->name, b->dtype, b->kind, b->rank, b->span);
        *nb = *b;
        nb->name = arena_strdup(c->arena, b->name);
        nb->shape = arena_alloc(c->arena, sizeof(Expr *) * (size_t)(b->rank ? b->rank : 1));
        for (int d = 0; d < b->rank; d++)
            nb->shape[d] = ir_clone_expr(c, b->shape[d]);
        nb->private_in = arena_alloc(c->arena, sizeof(Var *) * (size_t)(b->nprivate_in + 1));
        for (int j = 0; j < b->nprivate_in; j++)
            nb->private_in[j] = r.vars[b->private_in[j]->id];
        r.bufs[i] = nb;
    }
    for (int i = 0; i < k->nbufs; i++)
        for (int d = 0; d < k->bufs[i]->rank; d++)
            remap_expr(&r, r.bufs[i]->shape[d]);
    for (int i = 0; i < k->body.n; i++) {
        Node *n = ir_clone_node(c, k->body.v[i]);
        remap_node(&r, n);
        ir_list_push(&c->body, n, NULL);
    }
    c->gpu_lowered = k->gpu_lowered;
    c->fast_exp = k->fast_exp;
    c->cpu_lowered = k->cpu_lowered;
    free(r.bufs);
    free(r.vars);
    return c;
}
