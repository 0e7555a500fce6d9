/* mask-bounds: `where` masks that are affine in the loop variables become loop
 * bounds, and modular masks become strided loops, so the iterations a mask would
 * throw away are never run (a lower-triangular product does half the work of the
 * square one, causal attention half the key loop).  The guard keeps only what no
 * bound can say.
 *
 * It runs after the schedule (passes/pipeline.c): a user's schedule and the
 * tuner's templates are written for the rectangular nest the file describes, with
 * constant extents that split/tile/unroll/vectorize check, and reordering a loop
 * whose bounds depend on another variable would need a rewrite of its bounds that
 * the transformations do not do.  After scheduling the guard sits wherever the
 * schedule moved it, and every loop above it is narrowed: tile loops too.
 *
 * For a guard G whose condition is a conjunction, each conjunct that is an affine
 * comparison (`<= < >= > ==`, or `abs(e) <= w`, which is two of them) is written
 *     a*v + R <= 0
 * for each serial loop L over v that holds G through a chain of nodes each of which
 * holds nothing else (so an iteration of L in which G cannot hold does nothing).
 * Variables of loops between L and G are replaced by their extreme values (a
 * necessary condition: some value in their range must satisfy the conjunct); the
 * rest of R is fixed during L.  Then
 *     a > 0:  v <= floor(-R / a),   hi = min(hi, floor((a - R) / a))
 *     a < 0:  v >= ceil(R / -a),    lo = max(lo, floor((R - a - 1) / -a))
 * with floor division (the IR's `/`).  Where the ranges of the variables prove a
 * derived bound never cuts it is left out, and where it always cuts it replaces
 * the old one.  A conjunct whose only variables are L's and those outside L is
 * then exact for every iteration of L, so it leaves the guard; a guard left with
 * no conjunct is replaced by its body.
 *
 * A conjunct `e % m == r` (m > 0 constant, e affine, v's coefficient 1 or -1 and
 * e's other variables fixed during L) makes L run over the values of v congruent
 * to the right residue: v = s + m*t, t from 0, with s the first such value not
 * below lo; the conjunct leaves the guard (a stride-2 transposed convolution
 * evaluates only the taps that land).
 *
 * Only serial loops are changed: a vector or unroll loop has a constant extent, a
 * parallel loop's threads split its range at entry, and GPU block and thread loops
 * fix the launch and meet at barriers.  Inside GPU block or thread loops a guard
 * around stores to shared memory is left alone: bounding a loop around it per
 * thread could make the threads run different numbers of barriers.  A reduction whose every term is masked
 * keeps its identity: the initialisation sits outside the narrowed loop (lowering
 * puts it there), so an empty range leaves it as the language says. */
#include <stdlib.h>
#include <string.h>

#include "../ir/arith.h"
#include "passes.h"
#include "xform_int.h"

enum { MB_MAX_CONJ = 16, MB_MAX_DEPTH = 64 };

typedef enum { CJ_OPAQUE, CJ_LINEAR, CJ_MOD } CjKind;

typedef struct Conj {
    CjKind kind;
    Expr *src;          /* the conjunct as written (kept in the guard if needed) */
    ArAff d[2];         /* CJ_LINEAR: d[i] <= 0 for i < nd (abs gives two) */
    int nd;
    ArAff e;            /* CJ_MOD: e % m == r */
    int64_t m, r;
    bool kept;
} Conj;

typedef struct Mb {
    Kernel *k;
    int64_t *vmin, *vmax;       /* by Var id; vmin > vmax: unknown */
    int cap;                    /* their length */
    Node *path[MB_MAX_DEPTH];   /* the loops and guards enclosing the node visited */
    int depth;
} Mb;

static bool range_cb(ArEnv *env, const Var *v, int64_t *lo, int64_t *hi)
{
    Mb *mb = env->ctx;
    if (mb->vmin[v->id] > mb->vmax[v->id])
        return false;
    *lo = mb->vmin[v->id], *hi = mb->vmax[v->id];
    return true;
}

static bool interval(Mb *mb, const Expr *e, int64_t *lo, int64_t *hi)
{
    ArEnv env = {.k = mb->k, .var = range_cb, .ctx = mb};
    return ar_interval(&env, e, lo, hi) && !env.overflow;
}

/* The variable ranges start unknown (vmin > vmax), with room for `extra` new
 * variables beyond the kernel's. */
static void mb_init(Mb *mb, Kernel *k, int extra)
{
    memset(mb, 0, sizeof *mb);
    mb->k = k;
    mb->cap = k->nvars + extra;
    mb->vmin = xcalloc((size_t)mb->cap, sizeof *mb->vmin);
    mb->vmax = xcalloc((size_t)mb->cap, sizeof *mb->vmax);
    for (int i = 0; i < mb->cap; i++)
        mb->vmin[i] = 1;
}

static void mb_free(Mb *mb)
{
    free(mb->vmin);
    free(mb->vmax);
}

/* Loop l's variable ranges over [lo, hi - 1] as far as the ranges around it tell. */
static void mb_range(Mb *mb, const Node *l)
{
    int id = l->u.loop.var->id;
    int64_t a, b, c, d;
    if (interval(mb, l->u.loop.lo, &a, &b) && interval(mb, l->u.loop.hi, &c, &d) && a <= d - 1)
        mb->vmin[id] = a, mb->vmax[id] = d - 1;
    else
        mb->vmin[id] = 1, mb->vmax[id] = 0;
}

/* The path the pass would hold at node n: n's ancestors, outermost first, with the
 * ranges of their loops.  Returns the position of L on it, -1 when L is not there. */
static int mb_path_to(Mb *mb, const Node *n, const Node *L)
{
    Node *chain[MB_MAX_DEPTH];
    int len = 0, at = -1;
    for (Node *p = n->parent; p && len < MB_MAX_DEPTH; p = p->parent)
        chain[len++] = p;
    if (len == MB_MAX_DEPTH)
        return -1;
    for (int i = len - 1; i >= 0; i--) {
        if (chain[i] == L)
            at = mb->depth;
        mb->path[mb->depth++] = chain[i];
        if (chain[i]->kind == N_LOOP)
            mb_range(mb, chain[i]);
    }
    return at;
}

/* a - b as an affine form (*out), false when either side is not affine. */
static bool aff_diff(const Kernel *k, const Expr *a, const Expr *b, int64_t bias, ArAff *out)
{
    ArAff x, y;
    memset(out, 0, sizeof *out);
    if (!ar_aff_of(k, a, &x) || !ar_aff_of(k, b, &y))
        return false;
    out->c = bias;
    return ar_aff_add(out, &x, 1) && ar_aff_add(out, &y, -1);
}

/* lhs OP rhs as d <= 0 forms. */
static bool linear_of(const Kernel *k, ExprKind op, const Expr *l, const Expr *r, Conj *c)
{
    switch (op) {
    case IE_LE: c->nd = 1; return aff_diff(k, l, r, 0, &c->d[0]);
    case IE_LT: c->nd = 1; return aff_diff(k, l, r, 1, &c->d[0]);
    case IE_GE: c->nd = 1; return aff_diff(k, r, l, 0, &c->d[0]);
    case IE_GT: c->nd = 1; return aff_diff(k, r, l, 1, &c->d[0]);
    case IE_EQ: c->nd = 2; return aff_diff(k, l, r, 0, &c->d[0]) && aff_diff(k, r, l, 0, &c->d[1]);
    default: return false;
    }
}

static bool is_int(const Expr *e) { return e->dtype == DT_I64 || e->dtype == DT_I32; }

static void classify(const Kernel *k, Expr *e, Conj *c)
{
    memset(c, 0, sizeof *c);
    c->src = e, c->kind = CJ_OPAQUE, c->kept = true;
    if (e->kind < IE_LT || e->kind > IE_EQ || !is_int(e->args[0]) || !is_int(e->args[1]))
        return;
    Expr *l = e->args[0], *r = e->args[1];
    ExprKind op = e->kind;
    /* abs(x) <= w (or w >= abs(x)): -w <= x <= w */
    if (r->kind == IE_ABS && (op == IE_GE || op == IE_GT)) {
        Expr *t = l;
        l = r, r = t, op = op == IE_GE ? IE_LE : IE_LT;
    }
    if (l->kind == IE_ABS && (op == IE_LE || op == IE_LT)) {
        int64_t bias = op == IE_LT ? 1 : 0;
        ArAff x, w;
        if (!ar_aff_of(k, l->args[0], &x) || !ar_aff_of(k, r, &w))
            return;
        memset(c->d, 0, sizeof c->d);
        c->d[0].c = c->d[1].c = bias;
        if (ar_aff_add(&c->d[0], &x, 1) && ar_aff_add(&c->d[0], &w, -1) && ar_aff_add(&c->d[1], &x, -1) &&
            ar_aff_add(&c->d[1], &w, -1))
            c->kind = CJ_LINEAR, c->nd = 2;
        return;
    }
    if (op == IE_EQ) {
        Expr *mod = l->kind == IE_MOD ? l : r->kind == IE_MOD ? r : NULL;
        Expr *res = mod == l ? r : l;
        int64_t m, rv;
        if (mod && ar_const(k, mod->args[1], &m) && m > 0 && ar_const(k, res, &rv) && rv >= 0 && rv < m &&
            ar_aff_of(k, mod->args[0], &c->e)) {
            c->kind = CJ_MOD, c->m = m, c->r = rv;
            return;
        }
    }
    if (linear_of(k, op, l, r, c))
        c->kind = CJ_LINEAR;
}

static void split_and(const Kernel *k, Expr *e, Conj *out, int *n)
{
    if (e->kind == IE_AND) {
        split_and(k, e->args[0], out, n);
        split_and(k, e->args[1], out, n);
        return;
    }
    if (*n < MB_MAX_CONJ)
        classify(k, e, &out[*n]);
    (*n)++;
}

/* The position in mb->path of the loop over variable id, or -1. */
static int path_loop(const Mb *mb, int id)
{
    for (int p = 0; p < mb->depth; p++)
        if (mb->path[p]->kind == N_LOOP && mb->path[p]->u.loop.var->id == id)
            return p;
    return -1;
}

/* Replaces, in d, each variable of a loop at path position > at by its extreme
 * value making d smallest (the loop's lo for a positive coefficient, hi - 1 for a
 * negative one), when those bounds only use variables of loops outside path[at].
 * *exact: no variable was replaced. */
static bool project(Mb *mb, int at, ArAff *d, bool *exact)
{
    *exact = true;
    int self = mb->path[at]->u.loop.var->id;
    for (int t = 0; t < d->n; t++) {
        int id = d->var[t];
        int64_t kv = d->k[t];
        if (id == self || kv == 0)
            continue;
        int p = path_loop(mb, id);
        if (p < 0)
            return false;
        if (p < at)
            continue;
        Node *w = mb->path[p];
        ArAff b;
        if (!ar_aff_of(mb->k, kv > 0 ? w->u.loop.lo : w->u.loop.hi, &b))
            return false;
        for (int u = 0; u < b.n; u++)
            if (b.k[u] && path_loop(mb, b.var[u]) >= at)
                return false;
        if (kv < 0)
            b.c -= 1;
        ArAff one = {0};
        one.n = 1, one.var[0] = id, one.k[0] = 1;
        /* d := d - kv*w + kv*b */
        if (!ar_aff_add(d, &one, -kv) || !ar_aff_add(d, &b, kv))
            return false;
        *exact = false;
        t = -1; /* the form changed: scan again */
    }
    return true;
}

/* Whether bound e is b or a min (max) with b among its operands: the pass ran
 * here before (pipeline_target runs it on kernels pipeline_run may have seen). */
static bool has_bound(const Kernel *k, const Expr *e, ExprKind op, const Expr *b)
{
    if (xf_expr_equal(k, e, b))
        return true;
    return e->kind == op && (has_bound(k, e->args[0], op, b) || has_bound(k, e->args[1], op, b));
}

/* Narrows loop path[at] by d <= 0; true when d is then implied for every iteration. */
static bool narrow_by(Mb *mb, int at, const ArAff *d0)
{
    Kernel *k = mb->k;
    Node *L = mb->path[at];
    ArAff d = *d0;
    bool exact;
    int self = L->u.loop.var->id;
    if (!ar_aff_coef(&d, self) || !project(mb, at, &d, &exact))
        return false;
    int64_t a = ar_aff_coef(&d, self);
    if (!a)
        return false;
    ArAff rest = d;
    for (int t = 0; t < rest.n; t++)
        if (rest.var[t] == self)
            rest.k[t] = 0;
    int64_t blo, bhi, o1, o2;
    if (a > 0) {
        /* hi' = floor((a - R) / a) */
        ArAff num = {0};
        num.c = a;
        if (!ar_aff_add(&num, &rest, -1))
            return false;
        Expr *b = a == 1 ? xf_aff_expr(k, &num) : ir_bin(k, IE_DIV, xf_aff_expr(k, &num), ir_int(k, a));
        if (has_bound(k, L->u.loop.hi, IE_MIN, b))
            return exact;
        bool bk = interval(mb, b, &blo, &bhi) && interval(mb, L->u.loop.hi, &o1, &o2);
        if (bk && blo >= o2)
            return exact; /* never cuts */
        L->u.loop.hi = xf_simplify_affine(k, bk && bhi <= o1 ? b : ir_bin(k, IE_MIN, L->u.loop.hi, b));
    } else {
        int64_t m = -a;
        /* lo' = ceil(R / m) = floor((R + m - 1) / m) */
        ArAff num = rest;
        num.c += m - 1;
        Expr *b = m == 1 ? xf_aff_expr(k, &rest) : ir_bin(k, IE_DIV, xf_aff_expr(k, &num), ir_int(k, m));
        if (has_bound(k, L->u.loop.lo, IE_MAX, b))
            return exact;
        bool bk = interval(mb, b, &blo, &bhi) && interval(mb, L->u.loop.lo, &o1, &o2);
        if (bk && bhi <= o1)
            return exact; /* never cuts */
        L->u.loop.lo = xf_simplify_affine(k, bk && blo >= o2 ? b : ir_bin(k, IE_MAX, L->u.loop.lo, b));
    }
    return exact;
}

/* e % m == r on loop path[at]: v runs over s + m*t.  True when done; then
 * the conjuncts' expressions (cj[0..n)) are rewritten in t too. */
static bool stride_by(Mb *mb, int at, const Conj *c, Conj *cj, int n)
{
    Kernel *k = mb->k;
    Node *L = mb->path[at];
    int self = L->u.loop.var->id;
    int64_t a = ar_aff_coef(&c->e, self);
    if ((a != 1 && a != -1) || k->nvars >= mb->cap)
        return false;
    ArAff rest = c->e;
    for (int t = 0; t < rest.n; t++) {
        if (rest.var[t] == self) {
            rest.k[t] = 0;
            continue;
        }
        if (rest.k[t] && path_loop(mb, rest.var[t]) >= at)
            return false;
    }
    /* a*v + rest == r (mod m):  v == a*(r - rest) (mod m) */
    ArAff want = {0};
    want.c = a * c->r;
    if (!ar_aff_add(&want, &rest, -a))
        return false;
    Expr *lo = L->u.loop.lo, *hi = L->u.loop.hi;
    Expr *mm = ir_int(k, c->m);
    /* s = lo + (want - lo) mod m */
    Expr *s = ir_bin(k, IE_ADD, ir_clone_expr(k, lo),
                     ir_bin(k, IE_MOD, ir_bin(k, IE_SUB, xf_aff_expr(k, &want), ir_clone_expr(k, lo)), mm));
    Var *t = ir_new_var(k, xf_fresh_name(k, L->u.loop.var->name));
    s = xf_simplify_affine(k, ir_simplify(k, s));
    Expr *with = ir_bin(k, IE_ADD, s, ir_bin(k, IE_MUL, ir_var(k, t), ir_int(k, c->m)));
    /* t in 0..max(0, ceil((hi - s) / m)) */
    Expr *trips = ir_bin(k, IE_DIV, ir_bin(k, IE_ADD, ir_bin(k, IE_SUB, hi, ir_clone_expr(k, s)), ir_int(k, c->m - 1)),
                         ir_int(k, c->m));
    trips = ir_bin(k, IE_MAX, ir_int(k, 0), trips);
    Var *old = L->u.loop.var;
    for (int i = 0; i < L->u.loop.body.n; i++)
        xf_subst_tree(k, L->u.loop.body.v[i], old, with);
    for (int i = 0; i < n; i++)
        cj[i].src = ir_subst(k, cj[i].src, old, with);
    L->u.loop.var = t;
    L->u.loop.lo = ir_int(k, 0);
    L->u.loop.hi = xf_simplify_affine(k, ir_simplify(k, trips));
    mb->vmin[t->id] = 1, mb->vmax[t->id] = 0;
    return true;
}

static bool narrowable(const Node *n)
{
    return n->kind == N_LOOP && n->u.loop.kind == LOOP_SERIAL && n->u.loop.hint == HINT_NONE &&
           n->u.loop.stages == 0 && !n->u.loop.tc;
}

/* Whether l stores into shared memory (a GPU block's threads meet at barriers
 * around such stores). */
static bool writes_shared(const NodeList *l)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        if (n->kind == N_STMT && n->u.stmt.buf->mem == MEM_SHARED)
            return true;
        if (n->kind != N_STMT && n->kind != N_PREFETCH && (writes_shared(ir_body((Node *)n)) ||
                                                           (n->kind == N_IF && writes_shared(&n->u.guard.els))))
            return true;
    }
    return false;
}

/* The guard at the end of mb->path (path[depth - 1]). */
static void do_guard(Mb *mb, NodeList *holder, int idx)
{
    Kernel *k = mb->k;
    Node *G = holder->v[idx];
    if (G->u.guard.els.n || G->u.guard.holds)
        return;
    /* Inside GPU threads, a guard around stores to shared memory is left alone: a
     * loop bounded per thread would run a different number of barriers in each. */
    for (int p = 0; p < mb->depth; p++)
        if (mb->path[p]->kind == N_LOOP && mb->path[p]->u.loop.kind >= LOOP_BLOCK_X &&
            mb->path[p]->u.loop.kind <= LOOP_THREAD_Z && writes_shared(&G->u.guard.body))
            return;
    Conj cj[MB_MAX_CONJ];
    int n = 0;
    split_and(k, G->u.guard.cond, cj, &n);
    if (n > MB_MAX_CONJ)
        return;
    /* The outermost enclosing node from which each node down to G holds one child. */
    int top = mb->depth - 1;
    while (top > 0 && ir_body(mb->path[top - 1])->n == 1 &&
           !(mb->path[top - 1]->kind == N_IF && mb->path[top - 1]->u.guard.els.n))
        top--;
    bool changed = false;
    for (int c = 0; c < n; c++) {
        for (int at = top; at < mb->depth - 1; at++) {
            if (!narrowable(mb->path[at]))
                continue;
            if (cj[c].kind == CJ_LINEAR) {
                bool all = true;
                int touched = 0;
                for (int i = 0; i < cj[c].nd; i++) {
                    if (!ar_aff_coef(&cj[c].d[i], mb->path[at]->u.loop.var->id))
                        continue;
                    touched++;
                    all &= narrow_by(mb, at, &cj[c].d[i]);
                }
                /* exact only when every part bounding this loop was, and every
                 * part not touching it has no variable of its own left (then
                 * another loop must have made it exact: not tracked, keep it) */
                for (int i = 0; i < cj[c].nd && all; i++) {
                    const ArAff *d = &cj[c].d[i];
                    if (ar_aff_coef(d, mb->path[at]->u.loop.var->id))
                        continue;
                    all = false;
                }
                if (touched)
                    changed = true;
                if (touched && all)
                    cj[c].kept = false;
            } else if (cj[c].kind == CJ_MOD && cj[c].kept && ar_aff_coef(&cj[c].e, mb->path[at]->u.loop.var->id)) {
                /* the linear conjuncts first: they bound lo and hi */
                bool later = false;
                for (int o = c + 1; o < n; o++)
                    later |= cj[o].kind == CJ_LINEAR;
                if (later)
                    continue;
                if (stride_by(mb, at, &cj[c], cj, n))
                    cj[c].kept = false, changed = true;
            }
        }
    }
    /* modular conjuncts written before linear ones: a second round */
    for (int c = 0; c < n; c++)
        for (int at = top; at < mb->depth - 1 && cj[c].kind == CJ_MOD && cj[c].kept; at++)
            if (narrowable(mb->path[at]) && ar_aff_coef(&cj[c].e, mb->path[at]->u.loop.var->id) &&
                stride_by(mb, at, &cj[c], cj, n))
                cj[c].kept = false, changed = true;
    if (!changed)
        return;
    Expr *cond = NULL;
    for (int c = 0; c < n; c++)
        if (cj[c].kept)
            cond = cond ? ir_bin(k, IE_AND, cond, cj[c].src) : cj[c].src;
    if (cond) {
        G->u.guard.cond = cond;
        return;
    }
    /* every conjunct is a bound now: the body replaces the guard */
    Node *parent = G->parent;
    ir_list_remove(holder, idx);
    for (int j = 0; j < G->u.guard.body.n; j++)
        ir_list_insert(holder, idx + j, G->u.guard.body.v[j], parent);
}

static void visit(Mb *mb, NodeList *l)
{
    for (int i = 0; i < l->n; i++) {
        Node *n = l->v[i];
        if (n->kind != N_LOOP && n->kind != N_IF)
            continue;
        if (mb->depth == MB_MAX_DEPTH)
            return;
        mb->path[mb->depth++] = n;
        int64_t smin = 0, smax = 0;
        int id = -1;
        if (n->kind == N_LOOP) {
            id = n->u.loop.var->id;
            smin = mb->vmin[id], smax = mb->vmax[id];
            mb_range(mb, n);
        }
        if (n->kind == N_IF) {
            int before = l->n;
            do_guard(mb, l, i);
            if (l->n != before || l->v[i] != n) {
                /* the guard was replaced by its body: visit that in its place */
                mb->depth--;
                i--;
                continue;
            }
        }
        visit(mb, ir_body(n));
        if (n->kind == N_IF)
            visit(mb, &n->u.guard.els);
        /* under the variable the loop had on entry (a strided loop has a new one) */
        if (id >= 0)
            mb->vmin[id] = smin, mb->vmax[id] = smax;
        mb->depth--;
    }
}

bool mask_bounds_pass(Kernel *k, Diags *d)
{
    (void)d;
    Mb mb;
    /* strided loops add variables: room for one per loop of the kernel */
    mb_init(&mb, k, 4096);
    visit(&mb, &k->body);
    mb_free(&mb);
    return true;
}

/* skip_tiles (passes/xform_skip.c): L narrowed by G's linear conjuncts, with the
 * ranges of the loops around and between them as the pass would see them. */
bool mask_narrow_loop(Kernel *k, Node *L, Node *G, bool dry)
{
    Mb mb;
    mb_init(&mb, k, 16);
    int at = mb_path_to(&mb, G, L);
    Conj cj[MB_MAX_CONJ];
    int nc = 0;
    split_and(k, G->u.guard.cond, cj, &nc);
    bool any = false;
    for (int c = 0; at >= 0 && c < nc && c < MB_MAX_CONJ; c++) {
        if (cj[c].kind != CJ_LINEAR)
            continue;
        for (int i = 0; i < cj[c].nd; i++) {
            if (!ar_aff_coef(&cj[c].d[i], L->u.loop.var->id))
                continue;
            ArAff d = cj[c].d[i];
            bool exact;
            if (!project(&mb, at, &d, &exact) || !ar_aff_coef(&d, L->u.loop.var->id))
                continue;
            any = true;
            if (!dry)
                narrow_by(&mb, at, &cj[c].d[i]);
        }
    }
    mb_free(&mb);
    return any;
}

/* unmask_tiles (passes/xform_skip.c): L narrowed to the iterations where the affine
 * conjunct c holds for every iteration of the loops between L and the statement at
 * (their variables at the values that make it hardest to hold).  Only a conjunct that
 * L's variable enters with a positive coefficient bounds L from above; false for any
 * other, and when the conjunct is not affine. */
bool mask_narrow_all(Kernel *k, Node *L, Node *at, const Expr *c)
{
    Conj cj;
    classify(k, (Expr *)c, &cj);
    if (cj.kind != CJ_LINEAR || cj.nd != 1 || ar_aff_coef(&cj.d[0], L->u.loop.var->id) <= 0)
        return false;
    Mb mb;
    mb_init(&mb, k, 16);
    int pos = mb_path_to(&mb, at, L);
    bool ok = false;
    if (pos >= 0) {
        /* hardest: the inner variables where d is largest, that is where -d is
         * smallest (project), and then d <= 0 for all of them */
        ArAff neg = {0}, d;
        bool exact;
        if (ar_aff_add(&neg, &cj.d[0], -1) && project(&mb, pos, &neg, &exact)) {
            memset(&d, 0, sizeof d);
            if (ar_aff_add(&d, &neg, -1) && ar_aff_coef(&d, L->u.loop.var->id) > 0) {
                narrow_by(&mb, pos, &d);
                ok = true;
            }
        }
    }
    mb_free(&mb);
    return ok;
}
