/* The IR visitor and its common predicates (ir/walk.h).  Recursion depth is the
 * tree's depth: lowering keeps expression trees under 1000 levels (parser/build.c)
 * and loop nests are as deep as the kernel's statements. */
#include "walk.h"

bool ir_walk_expr(Expr *e, const IrVisitor *v)
{
    if (!e || !v->expr)
        return true;
    WalkAct a = v->expr(v->ctx, e);
    if (a == WALK_STOP)
        return false;
    if (a == WALK_SKIP)
        return true;
    if (e->kind == IE_LOAD) {
        for (int i = 0; i < e->u.load.buf->rank; i++)
            if (!ir_walk_expr(e->u.load.idx[i], v))
                return false;
        return true;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        if (!ir_walk_expr(e->args[i], v))
            return false;
    return true;
}

static bool node_exprs(Node *n, const IrVisitor *v)
{
    switch (n->kind) {
    case N_LOOP: return ir_walk_expr(n->u.loop.lo, v) && ir_walk_expr(n->u.loop.hi, v);
    case N_IF: return ir_walk_expr(n->u.guard.cond, v);
    case N_STMT:
        for (int i = 0; i < n->u.stmt.buf->rank; i++)
            if (!ir_walk_expr(n->u.stmt.idx[i], v))
                return false;
        return ir_walk_expr(n->u.stmt.value, v);
    case N_PREFETCH:
        for (int i = 0; i < n->u.pf.buf->rank; i++)
            if (!ir_walk_expr(n->u.pf.idx[i], v))
                return false;
        return true;
    }
    return true;
}

bool ir_walk_node(Node *n, const IrVisitor *v)
{
    WalkAct a = v->pre ? v->pre(v->ctx, n) : WALK_GO;
    if (a == WALK_STOP)
        return false;
    if (a == WALK_GO) {
        if (v->expr && !node_exprs(n, v))
            return false;
        if (!ir_walk_list(ir_body(n), v))
            return false;
        if (n->kind == N_IF && !ir_walk_list(ir_else(n), v))
            return false;
    }
    if (v->post)
        v->post(v->ctx, n);
    return true;
}

bool ir_walk_list(const NodeList *l, const IrVisitor *v)
{
    for (int i = 0; l && i < l->n; i++)
        if (!ir_walk_node(l->v[i], v))
            return false;
    return true;
}

/* ---- predicates ---- */

typedef struct Find {
    const Buffer *buf;      /* NULL: any load */
    bool found;
} Find;

static WalkAct find_load(void *ctx, Expr *e)
{
    Find *f = ctx;
    if (e->kind == IE_LOAD && (!f->buf || e->u.load.buf == f->buf)) {
        f->found = true;
        return WALK_STOP;
    }
    return WALK_GO;
}

bool ir_expr_reads(const Expr *e, const Buffer *b)
{
    Find f = {b, false};
    ir_walk_expr((Expr *)e, &(IrVisitor){.expr = find_load, .ctx = &f});
    return f.found;
}

bool ir_expr_has_load(const Expr *e)
{
    Find f = {NULL, false};
    ir_walk_expr((Expr *)e, &(IrVisitor){.expr = find_load, .ctx = &f});
    return f.found;
}

bool ir_node_reads(const Node *n, const Buffer *b)
{
    Find f = {b, false};
    ir_walk_node((Node *)n, &(IrVisitor){.expr = find_load, .ctx = &f});
    return f.found;
}

static WalkAct find_store(void *ctx, Node *n)
{
    Find *f = ctx;
    if (n->kind == N_STMT && n->u.stmt.buf == f->buf) {
        f->found = true;
        return WALK_STOP;
    }
    return WALK_GO;
}

bool ir_node_writes(const Node *n, const Buffer *b)
{
    Find f = {b, false};
    ir_walk_node((Node *)n, &(IrVisitor){.pre = find_store, .ctx = &f});
    return f.found;
}

bool ir_sum_loop(const Node *l)
{
    const Node *cur = l;
    for (;;) {
        const NodeList *b = ir_body((Node *)cur);
        if (!b || b->n != 1)
            return false;
        cur = b->v[0];
        if (cur->kind == N_STMT)
            return cur->u.stmt.op == SOP_ADD;
        if (cur->kind != N_IF)
            return false;
    }
}

const Buffer *ir_last_written(const Node *n)
{
    if (n->kind == N_STMT)
        return n->u.stmt.buf;
    const NodeList *b = ir_body((Node *)n);
    const Buffer *r = NULL;
    for (int i = 0; b && i < b->n; i++) {
        const Buffer *x = ir_last_written(b->v[i]);
        if (x)
            r = x;
    }
    return r;
}

bool ir_stmt_index_uses(const Node *s, const Var *v)
{
    for (int d = 0; d < s->u.stmt.buf->rank; d++)
        if (ir_expr_uses_var(s->u.stmt.idx[d], v))
            return true;
    return false;
}

static void expr_access(const Expr *x, uint8_t *rd)
{
    if (!x)
        return;
    if (x->kind == IE_LOAD) {
        rd[x->u.load.buf->id] = 1;
        for (int i = 0; i < x->u.load.buf->rank; i++)
            expr_access(x->u.load.idx[i], rd);
        return;
    }
    for (int i = 0; i < ir_expr_arity(x->kind); i++)
        expr_access(x->args[i], rd);
}

void ir_node_access(const Node *n, uint8_t *rd, uint8_t *wr)
{
    const NodeList *body = NULL;
    switch (n->kind) {
    case N_STMT:
        wr[n->u.stmt.buf->id] = 1;
        if (n->u.stmt.op != SOP_ASSIGN)
            rd[n->u.stmt.buf->id] = 1;
        for (int i = 0; i < n->u.stmt.buf->rank; i++)
            expr_access(n->u.stmt.idx[i], rd);
        expr_access(n->u.stmt.value, rd);
        return;
    case N_LOOP:
        expr_access(n->u.loop.lo, rd);
        expr_access(n->u.loop.hi, rd);
        body = &n->u.loop.body;
        break;
    case N_IF:
        expr_access(n->u.guard.cond, rd);
        body = &n->u.guard.body;
        break;
    case N_PREFETCH:
        return;
    }
    for (int i = 0; i < body->n; i++)
        ir_node_access(body->v[i], rd, wr);
}
