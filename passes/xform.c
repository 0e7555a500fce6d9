/* The transformation driver: the name table, argument handling (schedule
 * parameters substituted, loops and buffers resolved by the names the printer
 * shows), diagnostics that point at the schedule statement, and the tree helpers
 * every transformation shares.  The transformations themselves live in
 * xform_loop.c, xform_temp.c, xform_cache.c and xform_rfactor.c; each checks
 * legality completely before touching the IR, so a refusal leaves it unchanged. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "xform_int.h"
#include "../ir/walk.h"

static const char *const xf_names[] = {
#define X(k, s, syn) s,
    PF_XFORMS(X)
#undef X
};
static const char *const xf_syns[] = {
#define X(k, s, syn) syn,
    PF_XFORMS(X)
#undef X
};
static bool (*const xf_fns[])(XfCtx *) = {
    xf_split, xf_tile, xf_reorder, xf_fuse, xf_distribute, xf_unroll, xf_vectorize, xf_parallel,
    xf_inline, xf_compute_at, xf_reverse_compute_at, xf_cache, xf_rfactor, xf_padding, xf_layout,
    xf_bind, xf_mma, xf_wgmma, xf_pipeline, /* xform_gpu.c */
    xf_collapse,                  /* xform_collapse.c */
    xf_prefetch,                  /* xform_prefetch.c */
    xf_online_softmax,            /* xform_online_softmax.c */
    xf_factor_out,                /* xform_factor.c */
    xf_storage,                   /* xform_storage.c */
    xf_skip_tiles,                /* xform_skip.c */
    xf_unmask_tiles,              /* xform_skip.c */
    xf_realign,                   /* xform_realign.c */
    xf_gather,                    /* xform_gather.c */
    xf_exp_scale,                 /* xform_exp_scale.c */
    xf_reverse,                   /* xform_loop.c */
    xf_fold,                      /* xform_fold.c */
};
_Static_assert(sizeof xf_fns / sizeof xf_fns[0] == XF_COUNT, "one function per transformation");

const char *xf_name(XformKind x) { return x < XF_COUNT ? xf_names[x] : "?"; }
const char *xf_synopsis(XformKind x) { return x < XF_COUNT ? xf_syns[x] : "?"; }

XformKind xf_from_name(const char *s)
{
    for (int i = 0; i < XF_COUNT; i++)
        if (strcmp(xf_names[i], s) == 0)
            return (XformKind)i;
    return XF_COUNT;
}

/* ---------------- diagnostics and arguments ---------------- */

void xf_err(XfCtx *c, const char *fmt, ...)
{
    va_list ap;
    StrBuf b = {0};
    va_start(ap, fmt);
    sb_vprintf(&b, fmt, ap);
    va_end(ap);
    diag_error(c->d, c->it->span, "cannot apply %s: %s", c->it->name, b.s);
    sb_free(&b);
}

void xf_note(XfCtx *c, Span sp, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_vreport(c->d, DIAG_NOTE, sp, fmt, ap);
    va_end(ap);
}

void xf_note_prefetch(XfCtx *c, Node *n)
{
    NodeList *b = ir_body(n);
    for (int i = 0; b && i < b->n; i++)
        if (b->v[i]->kind == N_PREFETCH) {
            xf_note(c, b->v[i]->span,
                    "%s holds a prefetch of %s; apply prefetch after the loops are in place",
                    n->kind == N_LOOP ? n->u.loop.var->name : "a guard", b->v[i]->u.pf.buf->name);
            return;
        }
}

void xf_note_dep(XfCtx *c, const Access *a, const Access *b)
{
    StrBuf x = {0}, y = {0};
    acc_print(c->k, a, &x);
    acc_print(c->k, b, &y);
    xf_note(c, a->stmt->span, "dependence: %s here", x.s);
    if (b->stmt != a->stmt || b->load != a->load)
        xf_note(c, b->stmt->span, "and %s here", y.s);
    else
        xf_note(c, b->stmt->span, "in different iterations");
    sb_free(&x);
    sb_free(&y);
}

int xf_npos(XfCtx *c)
{
    int n = 0;
    for (int i = 0; i < c->nargs; i++)
        n += c->args[i].key == NULL;
    return n;
}

const SchedArg *xf_arg(XfCtx *c, int i)
{
    for (int j = 0; j < c->nargs; j++)
        if (!c->args[j].key && i-- == 0)
            return &c->args[j];
    return NULL;
}

const SchedArg *xf_kwarg(XfCtx *c, const char *key)
{
    for (int j = 0; j < c->nargs; j++)
        if (c->args[j].key && strcmp(c->args[j].key, key) == 0)
            return &c->args[j];
    return NULL;
}

const char *xf_arg_name(XfCtx *c, int i)
{
    const SchedArg *a = xf_arg(c, i);
    if (!a) {
        xf_err(c, "argument %d is missing; usage: %s", i + 1, xf_synopsis(xf_from_name(c->it->name)));
        return NULL;
    }
    if (a->kind != SARG_NAME && a->kind != SARG_STRING) {
        xf_err(c, "argument %d must be a name", i + 1);
        return NULL;
    }
    return a->name;
}

bool xf_arg_int(XfCtx *c, int i, int64_t *v)
{
    const SchedArg *a = xf_arg(c, i);
    if (!a) {
        xf_err(c, "argument %d is missing; usage: %s", i + 1, xf_synopsis(xf_from_name(c->it->name)));
        return false;
    }
    if (a->kind != SARG_INT) {
        if (a->kind == SARG_NAME)
            xf_err(c, "argument %d must be an integer, and `%s` is no schedule parameter", i + 1,
                   a->name);
        else
            xf_err(c, "argument %d must be an integer", i + 1);
        return false;
    }
    *v = a->ival;
    return true;
}

typedef struct FindCtx {
    const char *name;  /* exact variable name, or the base after the dot */
    const Buffer *buf; /* T of T.v, or NULL */
    Node *found[16];
    int n;
} FindCtx;

/* v, or v followed by the digits/underscores a renaming appends. */
static bool base_matches(const char *name, const char *base)
{
    size_t n = strlen(base);
    if (strncmp(name, base, n) != 0)
        return false;
    for (const char *p = name + n; *p; p++)
        if (!isdigit((unsigned char)*p) && *p != '_')
            return false;
    return true;
}

static bool find_cb(Node *n, void *p)
{
    FindCtx *f = p;
    if (n->kind != N_LOOP)
        return true;
    const char *vn = n->u.loop.var->name;
    bool ok = f->buf ? base_matches(vn, f->name) && ir_node_writes(n, f->buf) : strcmp(vn, f->name) == 0;
    if (ok && f->n < 16)
        f->found[f->n++] = n;
    return true;
}

Node *xf_find_loop(Kernel *k, const char *name, StrBuf *why)
{
    FindCtx f = {.name = name};
    const char *dot = strchr(name, '.');
    char bname[128];
    /* Lowering names loops `T.v` itself: an exact variable name comes first. */
    xf_walk(k, find_cb, &f);
    if (f.n == 1)
        return f.found[0];
    if (dot && f.n == 0) {
        size_t n = (size_t)(dot - name);
        if (n >= sizeof bname)
            n = sizeof bname - 1;
        memcpy(bname, name, n);
        bname[n] = 0;
        f.buf = ir_find_buffer(k, bname);
        if (!f.buf) {
            sb_printf(why, "no buffer `%s` (in `%s`)", bname, name);
            return NULL;
        }
        f.name = dot + 1;
    }
    xf_walk(k, find_cb, &f);
    if (f.n == 1)
        return f.found[0];
    if (f.n == 0) {
        sb_printf(why, "no loop `%s`", name);
        return NULL;
    }
    /* Exact name wins among renamed copies. */
    for (int i = 0; i < f.n; i++)
        if (strcmp(f.found[i]->u.loop.var->name, f.name) == 0)
            return f.found[i];
    sb_printf(why, "`%s` names %d loops (", name, f.n);
    for (int i = 0; i < f.n; i++)
        sb_printf(why, "%s%s", i ? ", " : "", f.found[i]->u.loop.var->name);
    sb_puts(why, "): name one of them");
    return NULL;
}

Node *xf_arg_loop(XfCtx *c, int i)
{
    const char *name = xf_arg_name(c, i);
    if (!name)
        return NULL;
    StrBuf why = {0};
    Node *l = xf_find_loop(c->k, name, &why);
    if (!l)
        xf_err(c, "%s", why.s);
    sb_free(&why);
    return l;
}

Buffer *xf_arg_buffer(XfCtx *c, int i)
{
    const char *name = xf_arg_name(c, i);
    if (!name)
        return NULL;
    Buffer *b = ir_find_buffer(c->k, name);
    if (!b)
        xf_err(c, "no buffer `%s`", name);
    return b;
}

/* ---------------- tree helpers ---------------- */

NodeList *xf_list_of(Kernel *k, Node *n) { return n->parent ? ir_body(n->parent) : &k->body; }

void xf_factors(Expr *e, bool den, XfFactors *f)
{
    if (e->kind == IE_MUL || e->kind == IE_DIV) {
        xf_factors(e->args[0], den, f);
        xf_factors(e->args[1], e->kind == IE_DIV ? !den : den, f);
        return;
    }
    if (f->n == 32) {
        f->overflow = true;
        return;
    }
    f->leaf[f->n] = e;
    f->den[f->n++] = den;
}

int xf_index_in(Kernel *k, Node *n)
{
    NodeList *l = xf_list_of(k, n);
    for (int i = 0; i < l->n; i++)
        if (l->v[i] == n)
            return i;
    die("node not in its parent's list");
}

bool xf_kernel_const(const Expr *e)
{
    if (!e || e->kind == IE_LOAD || e->kind == IE_VAR)
        return !e;
    for (int i = 0; i < 3; i++)
        if (e->args[i] && !xf_kernel_const(e->args[i]))
            return false;
    return true;
}

bool xf_contains(const Node *anc, const Node *n)
{
    for (; n; n = n->parent)
        if (n == anc)
            return true;
    return false;
}

static bool walk_rec(Node *n, bool (*f)(Node *, void *), void *ctx)
{
    if (!f(n, ctx))
        return false;
    NodeList *b = ir_body(n);
    for (int i = 0; b && i < b->n; i++)
        if (!walk_rec(b->v[i], f, ctx))
            return false;
    return true;
}

void xf_walk(Kernel *k, bool (*f)(Node *n, void *ctx), void *ctx)
{
    for (int i = 0; i < k->body.n; i++)
        if (!walk_rec(k->body.v[i], f, ctx))
            return;
}

typedef struct PreCtx {
    const Node *target;
    int count, at;
    bool last;
} PreCtx;

static bool pre_cb(Node *n, void *p)
{
    PreCtx *c = p;
    if (c->last) {
        if (xf_contains(c->target, n))
            c->at = c->count;
    } else if (n == c->target) {
        c->at = c->count;
        return false;
    }
    c->count++;
    return true;
}

int xf_preorder(const Kernel *k, const Node *n)
{
    PreCtx c = {.target = n, .at = -1};
    xf_walk((Kernel *)k, pre_cb, &c);
    return c.at;
}

int xf_preorder_last(const Kernel *k, const Node *n)
{
    PreCtx c = {.target = n, .at = -1, .last = true};
    xf_walk((Kernel *)k, pre_cb, &c);
    return c.at;
}

Expr *xf_subst_expr(Kernel *k, const Expr *e, const Var *const *vars, Expr *const *withs, int n)
{
    if (e->kind == IE_VAR) {
        for (int i = 0; i < n; i++)
            if (e->u.var == vars[i])
                return ir_clone_expr(k, withs[i]);
        return ir_clone_expr(k, e);
    }
    if (e->kind == IE_LOAD) {
        Expr *idx[16];
        int r = e->u.load.buf->rank;
        if (r > 16)
            die("rank %d", r);
        for (int i = 0; i < r; i++)
            idx[i] = xf_subst_expr(k, e->u.load.idx[i], vars, withs, n);
        Expr *x = ir_load(k, e->u.load.buf, idx);
        x->u.load.guarded = e->u.load.guarded;
        x->span = e->span;
        x->dtype = e->dtype;
        return x;
    }
    int ar = ir_expr_arity(e->kind);
    if (ar == 0)
        return ir_clone_expr(k, e);
    Expr *x = ir_clone_expr(k, e);
    for (int i = 0; i < ar; i++)
        x->args[i] = xf_subst_expr(k, e->args[i], vars, withs, n);
    return x;
}

static Expr *subst1(Kernel *k, Expr *e, const Var *v, const Expr *with)
{
    const Var *vs[1] = {v};
    Expr *ws[1] = {(Expr *)with};
    return ir_simplify(k, xf_subst_expr(k, e, vs, ws, 1));
}

void xf_subst_tree(Kernel *k, Node *n, const Var *v, const Expr *with)
{
    switch (n->kind) {
    case N_LOOP:
        n->u.loop.lo = subst1(k, n->u.loop.lo, v, with);
        n->u.loop.hi = subst1(k, n->u.loop.hi, v, with);
        for (int i = 0; i < n->u.loop.body.n; i++)
            xf_subst_tree(k, n->u.loop.body.v[i], v, with);
        break;
    case N_IF:
        n->u.guard.cond = subst1(k, n->u.guard.cond, v, with);
        for (int i = 0; i < n->u.guard.body.n; i++)
            xf_subst_tree(k, n->u.guard.body.v[i], v, with);
        for (int i = 0; i < n->u.guard.els.n; i++)
            xf_subst_tree(k, n->u.guard.els.v[i], v, with);
        break;
    case N_STMT:
        for (int i = 0; i < n->u.stmt.buf->rank; i++)
            n->u.stmt.idx[i] = subst1(k, n->u.stmt.idx[i], v, with);
        n->u.stmt.value = subst1(k, n->u.stmt.value, v, with);
        break;
    case N_PREFETCH:
        for (int i = 0; i < n->u.pf.buf->rank; i++)
            n->u.pf.idx[i] = subst1(k, n->u.pf.idx[i], v, with);
        break;
    }
}

Node *xf_clone_fresh(Kernel *k, const Node *n)
{
    Node *c = ir_clone_node(k, n);
    /* Rename every loop of the copy, outermost first. */
    Node *stack[256];
    int sp = 0;
    stack[sp++] = c;
    while (sp) {
        Node *x = stack[--sp];
        if (x->kind == N_LOOP) {
            Var *old = x->u.loop.var;
            Var *nv = ir_new_var(k, xf_fresh_name(k, old->name));
            Expr *ve = ir_var(k, nv);
            for (int i = 0; i < x->u.loop.body.n; i++)
                xf_subst_tree(k, x->u.loop.body.v[i], old, ve);
            x->u.loop.var = nv;
        }
        NodeList *b = ir_body(x);
        for (int i = 0; b && i < b->n && sp < 256; i++)
            stack[sp++] = b->v[i];
    }
    return c;
}


bool xf_tree_uses_var(const Node *n, const Var *v)
{
    switch (n->kind) {
    case N_LOOP:
        if (ir_expr_uses_var(n->u.loop.lo, v) || ir_expr_uses_var(n->u.loop.hi, v))
            return true;
        break;
    case N_IF:
        if (ir_expr_uses_var(n->u.guard.cond, v))
            return true;
        break;
    case N_STMT:
        for (int i = 0; i < n->u.stmt.buf->rank; i++)
            if (ir_expr_uses_var(n->u.stmt.idx[i], v))
                return true;
        return ir_expr_uses_var(n->u.stmt.value, v);
    case N_PREFETCH:
        for (int i = 0; i < n->u.pf.buf->rank; i++)
            if (ir_expr_uses_var(n->u.pf.idx[i], v))
                return true;
        return false;
    }
    const NodeList *b = ir_body((Node *)n);
    for (int i = 0; i < b->n; i++)
        if (xf_tree_uses_var(b->v[i], v))
            return true;
    return false;
}

void xf_prune_empty(Kernel *k, Node *n)
{
    /* A body left with prefetches alone is empty too: nothing in it reads what
     * they fetch. */
    while (n && (n->kind == N_LOOP || n->kind == N_IF) && ir_list_only_prefetch(ir_body(n))) {
        Node *p = n->parent;
        ir_list_remove(xf_list_of(k, n), xf_index_in(k, n));
        n = p;
    }
}

static void drop_in(Kernel *k, NodeList *l, const Buffer *b)
{
    for (int i = 0; i < l->n; i++) {
        Node *x = l->v[i];
        if (x->kind == N_PREFETCH && x->u.pf.buf == b) {
            ir_list_remove(l, i--);
            continue;
        }
        if (x->kind == N_LOOP || x->kind == N_IF)
            drop_in(k, ir_body(x), b);
    }
}

static bool names_in(const NodeList *l, const Buffer *b)
{
    for (int i = 0; i < l->n; i++) {
        const Node *x = l->v[i];
        if ((x->kind == N_PREFETCH && x->u.pf.buf == b) ||
            ((x->kind == N_LOOP || x->kind == N_IF) && names_in(ir_body((Node *)x), b)))
            return true;
    }
    return false;
}

bool xf_prefetches(const Kernel *k, const Buffer *b) { return names_in(&k->body, b); }

void xf_drop_prefetches(Kernel *k, Node *root, const Buffer *b)
{
    drop_in(k, root ? ir_body(root) : &k->body, b);
}

bool xf_inside_kind(const Node *n, LoopKind kind, bool self, const Node **which)
{
    for (const Node *p = self ? n : n->parent; p; p = p->parent)
        if (p->kind == N_LOOP && p->u.loop.kind == kind) {
            if (which)
                *which = p;
            return true;
        }
    return false;
}

const char *xf_fresh_name(Kernel *k, const char *base)
{
    if (!ir_find_var(k, base))
        return base;
    for (int i = 1;; i++) {
        const char *s = arena_printf(k->arena, "%s%d", base, i);
        if (!ir_find_var(k, s))
            return s;
    }
}

const char *xf_fresh_buffer_name(Kernel *k, const char *base)
{
    if (!ir_find_buffer(k, base))
        return base;
    for (int i = 1;; i++) {
        const char *s = arena_printf(k->arena, "%s%d", base, i);
        if (!ir_find_buffer(k, s))
            return s;
    }
}

Buffer *xf_add_temp(Kernel *k, const char *name, DType t, MemSpace mem, int rank,
                    const int64_t *shape, Span sp)
{
    Buffer *b = ir_add_buffer(k, name, t, BUF_TEMP, rank, sp);
    b->mem = mem;
    for (int i = 0; i < rank; i++)
        b->shape[i] = ir_int(k, shape[i]);
    return b;
}

/* ---------------- entry points ---------------- */

/* Substitutes schedule parameters into the arguments (NAME -> its value). */
static SchedArg *resolve_args(const SchedItem *it, const SchedEnv *env, SchedArg *tmp, int cap)
{
    int n = it->nargs < cap ? it->nargs : cap;
    for (int i = 0; i < n; i++) {
        tmp[i] = it->args[i];
        if (!env || tmp[i].kind != SARG_NAME)
            continue;
        for (int j = env->n - 1; j >= 0; j--)
            if (strcmp(env->names[j], tmp[i].name) == 0) {
                const char *key = tmp[i].key;
                Span sp = tmp[i].span;
                tmp[i] = *env->values[j];
                tmp[i].key = key;
                tmp[i].span = sp;
                break;
            }
    }
    return tmp;
}

/* What the kernel's target cannot run is refused at the statement that asks for it
 * (Kernel.target, set while the pipeline applies a schedule), not later by target
 * legalisation or an emitter at the kernel. */
static bool target_allows(const Kernel *k, XformKind x, const SchedItem *it, Diags *d)
{
    const Target *t = k->target;
    if (!t || (x != XF_BIND && x != XF_MMA && x != XF_WGMMA && x != XF_PIPELINE))
        return true;
    if (target_is_cpu(t)) {
        diag_error(d, it->span, "`%s` is a GPU transformation and CPU target %s cannot run it (GPU schedules go in "
                   "a `schedule KERNEL for gpu` block)", it->name, t->name);
        return false;
    }
    if (!target_is_gpu(t))
        return true;
    const char *lacks = x == XF_WGMMA && !t->wgmma      ? "wgmma (Hopper's warpgroup products, which only sm_90a has): "
                                                          "compile with -target sm_90a, or use mma"
                        : x == XF_MMA && !t->mma_sync    ? "mma.sync tensor-core products"
                        : x == XF_PIPELINE && !t->cp_async ? "asynchronous copies (cp.async)"
                                                           : NULL;
    if (lacks) {
        diag_error(d, it->span, "target %s lacks %s", t->name, lacks);
        return false;
    }
    return true;
}

static bool run(Kernel *k, const SchedItem *it, const SchedEnv *env, Diags *d, bool dry)
{
    SchedArg tmp[32];
    if (it->kind != SCHED_CALL)
        die("xf_apply on a parameter item");
    XformKind x = xf_from_name(it->name);
    if (x == XF_COUNT) {
        StrBuf b = {0};
        for (int i = 0; i < XF_COUNT; i++)
            sb_printf(&b, "%s%s", i ? ", " : "", xf_names[i]);
        diag_error(d, it->span, "unknown transformation `%s` (known: %s)", it->name, b.s);
        sb_free(&b);
        return false;
    }
    if (it->nargs > 32) {
        diag_error(d, it->span, "too many arguments to %s", it->name);
        return false;
    }
    if (!target_allows(k, x, it, d))
        return false;
    XfCtx c = {.k = k, .it = it, .args = resolve_args(it, env, tmp, 32), .nargs = it->nargs,
               .d = d, .dry = dry};
    return xf_fns[x](&c);
}

bool xf_apply(Kernel *k, const SchedItem *it, const SchedEnv *env, Diags *d)
{
    return run(k, it, env, d, false);
}

bool xf_check(Kernel *k, const SchedItem *it, const SchedEnv *env, Diags *d)
{
    return run(k, it, env, d, true);
}

void xf_arg_print(const SchedArg *a, StrBuf *out)
{
    if (a->key)
        sb_printf(out, "%s=", a->key);
    switch (a->kind) {
    case SARG_NAME:
        sb_puts(out, a->name);
        break;
    case SARG_STRING:
        sb_printf(out, "\"%s\"", a->name);
        break;
    case SARG_INT:
        sb_printf(out, "%lld", (long long)a->ival);
        break;
    case SARG_FLOAT:
        sb_printf(out, "%.17g", a->fval);
        break;
    case SARG_LIST:
        sb_putc(out, '[');
        for (int i = 0; i < a->list.n; i++) {
            if (i)
                sb_puts(out, ", ");
            xf_arg_print(&a->list.items[i], out);
        }
        sb_putc(out, ']');
        break;
    }
}

void xf_item_print(const SchedItem *it, StrBuf *out)
{
    if (it->kind == SCHED_PARAM) {
        sb_printf(out, "param %s in [", it->name);
        for (int i = 0; i < it->nargs; i++) {
            if (i)
                sb_puts(out, ", ");
            xf_arg_print(&it->args[i], out);
        }
        sb_putc(out, ']');
        return;
    }
    sb_printf(out, "%s(", it->name);
    for (int i = 0; i < it->nargs; i++) {
        if (i)
            sb_puts(out, ", ");
        xf_arg_print(&it->args[i], out);
    }
    sb_putc(out, ')');
}

static void visit_expr(Expr *e, void (*f)(Expr *, void *), void *ctx)
{
    if (e->kind == IE_LOAD)
        for (int i = 0; i < e->u.load.buf->rank; i++)
            visit_expr(e->u.load.idx[i], f, ctx);
    else
        for (int i = 0; i < ir_expr_arity(e->kind); i++)
            visit_expr(e->args[i], f, ctx);
    f(e, ctx);
}

static void visit_node(Node *n, void (*f)(Expr *, void *), void *ctx)
{
    switch (n->kind) {
    case N_LOOP:
        visit_expr(n->u.loop.lo, f, ctx);
        visit_expr(n->u.loop.hi, f, ctx);
        break;
    case N_IF:
        visit_expr(n->u.guard.cond, f, ctx);
        break;
    case N_STMT:
        for (int i = 0; i < n->u.stmt.buf->rank; i++)
            visit_expr(n->u.stmt.idx[i], f, ctx);
        visit_expr(n->u.stmt.value, f, ctx);
        return;
    case N_PREFETCH:
        /* its indices (loop variables, sizes); it is no load, so callbacks that
         * rewrite accesses of a buffer leave it alone */
        for (int i = 0; i < n->u.pf.buf->rank; i++)
            visit_expr(n->u.pf.idx[i], f, ctx);
        return;
    }
    NodeList *b = ir_body(n);
    for (int i = 0; i < b->n; i++)
        visit_node(b->v[i], f, ctx);
}

void xf_visit_exprs(Kernel *k, Node *root, void (*f)(Expr *e, void *ctx), void *ctx)
{
    if (root) {
        visit_node(root, f, ctx);
        return;
    }
    for (int i = 0; i < k->body.n; i++)
        visit_node(k->body.v[i], f, ctx);
}
