/* Affine access and dependence analysis over the loop tree.
 *
 * Every legality check of the transformations reduces to one question: can two
 * statement instances touch the same element of a buffer (at least one writing it)
 * while their loop variables stand in a given relation?  Each instance lives in the
 * polyhedron its enclosing loop bounds and guards describe; subscripts equal gives
 * equations; the relation adds (in)equalities between the two instances' variables.
 * The rows and the decision of the integer system are ir/arith's (ArRow, ArSys,
 * ar_sys_feasible in ir/arith_sys.c), conservative in one direction: "no solution"
 * is a proof; anything undecided (non-affine subscripts, too many rows, arithmetic
 * overflow) answers "may conflict", so a transformation can only be refused
 * wrongly, never allowed wrongly.
 *
 * Parameters bound with -D (or defaults) are constants here: a kernel is scheduled
 * for its sizes, which is also what lets tails vanish when a factor divides. */
#include <stdlib.h>
#include <string.h>

#include "../ir/arith.h"
#include "xform_int.h"

enum { XF_MAXDEPTH = 32 };

/* ---------------- constants and equality ---------------- */

bool xf_const(const Kernel *k, const Expr *e, int64_t *v) { return ar_const(k, e, v); }

bool xf_const_extent(const Kernel *k, const Node *l, int64_t *ext) { return ar_const_extent(k, l, ext); }

bool xf_divides(const Kernel *k, const Expr *e, int64_t f)
{
    int64_t v;
    if (f == 1)
        return true;
    if (xf_const(k, e, &v))
        return v % f == 0;
    if (e->kind == IE_MUL)
        return xf_divides(k, e->args[0], f) || xf_divides(k, e->args[1], f);
    if (e->kind == IE_ADD || e->kind == IE_SUB)
        return xf_divides(k, e->args[0], f) && xf_divides(k, e->args[1], f);
    return false;
}

static bool expr_same(const Expr *a, const Expr *b)
{
    if (a->kind != b->kind || a->dtype != b->dtype)
        return false;
    switch (a->kind) {
    case IE_INT:
        return a->u.i == b->u.i;
    case IE_FLT:
        return a->u.f == b->u.f;
    case IE_PARAM:
        return a->u.param == b->u.param;
    case IE_VAR:
        return a->u.var == b->u.var;
    case IE_LOAD:
        if (a->u.load.buf != b->u.load.buf || a->u.load.guarded != b->u.load.guarded)
            return false;
        for (int i = 0; i < a->u.load.buf->rank; i++)
            if (!expr_same(a->u.load.idx[i], b->u.load.idx[i]))
                return false;
        return true;
    default:
        for (int i = 0; i < ir_expr_arity(a->kind); i++)
            if (!expr_same(a->args[i], b->args[i]))
                return false;
        return true;
    }
}

bool xf_expr_equal(const Kernel *k, const Expr *a, const Expr *b)
{
    ArSpace sp;
    ArRow x, y;
    ar_space_init(&sp, k);
    if (ar_row_of(&sp, a, 0, &x) && ar_row_of(&sp, b, 0, &y))
        return memcmp(&x, &y, sizeof x) == 0;
    return expr_same(a, b);
}

/* ---------------- accesses ---------------- */

void acc_push(AccVec *v, const Access *a)
{
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 32;
        v->v = xrealloc(v->v, (size_t)v->cap * sizeof(Access));
    }
    v->v[v->n++] = *a;
}

static void loads_of(const Expr *e, Node *stmt, int order, AccVec *out)
{
    if (!e)
        return;
    if (e->kind == IE_LOAD) {
        Access a = {.stmt = stmt, .buf = e->u.load.buf, .idx = e->u.load.idx,
                    .load = (Expr *)e, .order = order};
        acc_push(out, &a);
        for (int i = 0; i < e->u.load.buf->rank; i++)
            loads_of(e->u.load.idx[i], stmt, order, out);
        return;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        loads_of(e->args[i], stmt, order, out);
}

typedef struct CollectCtx {
    AccVec *out;
    int order;
    const Expr *conds[XF_MAXDEPTH]; /* guard conditions in scope, read by each statement */
    int nconds;
} CollectCtx;

static void collect(Node *n, CollectCtx *c)
{
    int order = c->order++;
    switch (n->kind) {
    case N_STMT: {
        Access a = {.stmt = n, .buf = n->u.stmt.buf, .idx = n->u.stmt.idx, .write = true,
                    .update = n->u.stmt.op != SOP_ASSIGN, .order = order};
        /* Reads happen before the store: list them first. */
        for (int i = 0; i < c->nconds; i++)
            loads_of(c->conds[i], n, order, c->out);
        for (int i = 0; i < n->u.stmt.buf->rank; i++)
            loads_of(n->u.stmt.idx[i], n, order, c->out);
        loads_of(n->u.stmt.value, n, order, c->out);
        acc_push(c->out, &a);
        break;
    }
    case N_LOOP:
        for (int i = 0; i < n->u.loop.body.n; i++)
            collect(n->u.loop.body.v[i], c);
        break;
    case N_IF:
        if (c->nconds < XF_MAXDEPTH)
            c->conds[c->nconds++] = n->u.guard.cond;
        for (int i = 0; i < n->u.guard.body.n; i++)
            collect(n->u.guard.body.v[i], c);
        c->nconds--;
        break;
    case N_PREFETCH:
        break; /* a hint: it reads nothing the kernel's meaning depends on */
    }
}

void acc_collect(const Kernel *k, Node *n, AccVec *out)
{
    CollectCtx c = {.out = out};
    if (n) {
        c.order = xf_preorder(k, n);
        for (Node *p = n->parent; p; p = p->parent)
            if (p->kind == N_IF && c.nconds < XF_MAXDEPTH)
                c.conds[c.nconds++] = p->u.guard.cond;
        collect(n, &c);
        return;
    }
    for (int i = 0; i < k->body.n; i++)
        collect(k->body.v[i], &c);
}

void acc_free(AccVec *v)
{
    free(v->v);
    memset(v, 0, sizeof *v);
}

void acc_print(const Kernel *k, const Access *a, StrBuf *out)
{
    sb_printf(out, "%s %s[", a->write ? (a->update ? "update of" : "write of") : "read of",
              a->buf->name);
    for (int i = 0; i < a->buf->rank; i++) {
        if (i)
            sb_puts(out, ", ");
        ir_print_expr(k, a->idx[i], out);
    }
    sb_putc(out, ']');
}

bool acc_reduction_pair(const Access *a, const Access *b)
{
    return a->write && b->write && a->update && b->update && a->buf == b->buf &&
           a->stmt->u.stmt.op == b->stmt->u.stmt.op;
}

/* ---------------- dependences ---------------- */

int xf_enclosing_loops(const Node *n, Node **out, int cap)
{
    Node *tmp[XF_MAXDEPTH];
    int m = 0;
    for (Node *p = n->parent; p && m < XF_MAXDEPTH; p = p->parent)
        if (p->kind == N_LOOP)
            tmp[m++] = p;
    int r = 0;
    for (int i = m - 1; i >= 0 && r < cap; i--)
        out[r++] = tmp[i];
    return r;
}

/* Case analysis for every pair system, not only those with quotients: bind turns it
 * on for its own queries (a GPU schedule's few, mixed-radix copy indices such as
 * `(xo*1024 + xt)*4 + xv`), so the CPU transformations keep their cost. */
static _Thread_local bool deps_cases;
void dep_set_cases(bool on) { deps_cases = on; }

/* The pair system: domains of both instances and equal subscripts. */
static bool pair_build(const Kernel *k, const Access *a, const Access *b, ArSpace *sp, ArSys *s)
{
    ar_space_init(sp, k);
    sp->divs = true;
    ar_sys_init(s);
    if (a->buf != b->buf)
        return false;
    for (int d = 0; d < a->buf->rank; d++) {
        ArRow x, y, r;
        if (ar_row_of(sp, a->idx[d], 0, &x) && ar_row_of(sp, b->idx[d], 1, &y) && ar_row_lin(&r, 1, &x, -1, &y))
            ar_sys_add_eq(s, &r);
    }
    ar_sys_add_domain(s, sp, a->stmt, 0, false);
    ar_sys_add_domain(s, sp, b->stmt, 1, false);
    ar_sys_add_divs(s, sp);
    s->split = sp->ndiv > 0 || deps_cases;
    return true;
}

static void add_rel(ArSys *s, ArSpace *sp, const DepRel *r)
{
    int ca = ar_space_col(sp, r->va, 0), cb = ar_space_col(sp, r->vb, 1);
    if (ca < 0 || cb < 0)
        return;
    ArRow x;
    memset(&x, 0, sizeof x);
    x.c[cb] = 1;
    x.c[ca] = -1;
    if (r->dir == 0) {
        ar_sys_add_eq(s, &x);
        return;
    }
    if (r->dir < 0) {
        x.c[cb] = -1;
        x.c[ca] = 1;
    }
    x.k = -1; /* strictly */
    ar_sys_add_ge(s, &x);
}

bool dep_may_conflict(const Kernel *k, const Access *a, const Access *b, const DepRel *rel, int nrel)
{
    ArSpace sp;
    ArSys s;
    if (!pair_build(k, a, b, &sp, &s))
        return false;
    for (int i = 0; i < nrel; i++)
        add_rel(&s, &sp, &rel[i]);
    bool r = sp.overflow || ar_sys_feasible(&s);
    ar_sys_free(&s);
    return r;
}

typedef struct DirCtx {
    ArSpace *sp;
    const Var *const *va, *const *vb;
    int n, cap, count;
    int8_t cur[XF_MAXDEPTH];
    int8_t *out;
} DirCtx;

static void dirs_rec(DirCtx *c, const ArSys *s, int i)
{
    if (c->count >= c->cap)
        return;
    if (i == c->n) {
        memcpy(c->out + (size_t)c->count * c->n, c->cur, (size_t)c->n);
        c->count++;
        return;
    }
    for (int dir = -1; dir <= 1; dir++) {
        ArSys t;
        ar_sys_copy(&t, s);
        DepRel r = {c->va[i], c->vb[i], dir};
        add_rel(&t, c->sp, &r);
        if (c->sp->overflow || ar_sys_feasible(&t)) {
            c->cur[i] = (int8_t)dir;
            dirs_rec(c, &t, i + 1);
        }
        ar_sys_free(&t);
    }
}

int dep_directions(const Kernel *k, const Access *a, const Access *b, const DepRel *fixed,
                   int nfixed, const Var *const *va, const Var *const *vb, int n, int8_t *out,
                   int cap)
{
    ArSpace sp;
    ArSys s;
    if (n > XF_MAXDEPTH || !pair_build(k, a, b, &sp, &s))
        return 0;
    for (int i = 0; i < nfixed; i++)
        add_rel(&s, &sp, &fixed[i]);
    DirCtx c = {.sp = &sp, .va = va, .vb = vb, .n = n, .cap = cap, .out = out};
    if (sp.overflow || ar_sys_feasible(&s))
        dirs_rec(&c, &s, 0);
    ar_sys_free(&s);
    return c.count;
}

bool xf_privatizable(const Kernel *k, const Buffer *b, const Node *l)
{
    if (b->kind != BUF_TEMP || b->mem != MEM_LOCAL)
        return false;
    bool listed = false;
    for (int i = 0; i < b->nprivate_in; i++)
        listed |= b->private_in[i] == l->u.loop.var;
    if (!listed)
        return false;
    AccVec all = {0};
    acc_collect(k, NULL, &all);
    bool inside = true;
    for (int i = 0; i < all.n && inside; i++)
        if (all.v[i].buf == b && !xf_contains(l, all.v[i].stmt))
            inside = false;
    acc_free(&all);
    return inside;
}

void xf_set_private(Kernel *k, Buffer *b, const Node *at, bool self)
{
    int n = 0;
    for (const Node *p = self ? at : at->parent; p; p = p->parent)
        n += p->kind == N_LOOP;
    b->private_in = arena_alloc(k->arena, sizeof(Var *) * (size_t)(n ? n : 1));
    b->nprivate_in = 0;
    for (const Node *p = self ? at : at->parent; p; p = p->parent)
        if (p->kind == N_LOOP)
            b->private_in[b->nprivate_in++] = p->u.loop.var;
}

bool dep_carried(const Kernel *k, Node *l, bool reductions_too, bool allow_private, Access *pa,
                 Access *pb)
{
    AccVec acc = {0};
    Node *outer[XF_MAXDEPTH];
    int no = xf_enclosing_loops(l, outer, XF_MAXDEPTH);
    DepRel rel[XF_MAXDEPTH + 1];
    for (int i = 0; i < no; i++)
        rel[i] = (DepRel){outer[i]->u.loop.var, outer[i]->u.loop.var, 0};
    rel[no] = (DepRel){l->u.loop.var, l->u.loop.var, 1};
    acc_collect(k, l, &acc);
    bool found = false;
    for (int i = 0; i < acc.n && !found; i++)
        for (int j = 0; j < acc.n && !found; j++) {
            Access *a = &acc.v[i], *b = &acc.v[j];
            if (a->buf != b->buf || (!a->write && !b->write))
                continue;
            if (!reductions_too && acc_reduction_pair(a, b))
                continue;
            if (allow_private && xf_privatizable(k, a->buf, l))
                continue;
            if (dep_may_conflict(k, a, b, rel, no + 1)) {
                *pa = *a;
                *pb = *b;
                found = true;
            }
        }
    acc_free(&acc);
    return found;
}

/* ---------------- regions ---------------- */

/* Depth of loop var v among the loops enclosing (and including) the node the
 * region is taken for; -1 when v's loop is not inside l. */
static Node *loop_of_var_inside(Node *l, const Var *v)
{
    if (l->kind == N_LOOP && l->u.loop.var == v)
        return l;
    NodeList *b = ir_body(l);
    if (!b)
        return NULL;
    for (int i = 0; i < b->n; i++) {
        Node *r = loop_of_var_inside(b->v[i], v);
        if (r)
            return r;
    }
    return NULL;
}

/* Extreme (min when want_max is false) of an affine form over the loops strictly
 * inside l: each inner variable is replaced by the bound that pushes the form
 * the wanted way, innermost first (inner bounds mention only outer variables). */
static bool extreme(ArSpace *sp, Node *l, ArRow *a, bool want_max, int depth)
{
    if (depth > 64)
        return false;
    int deepest = -1, dlev = -1;
    Node *dl = NULL;
    for (int c = 0; c < sp->ncol; c++) {
        if (!a->c[c] || !sp->var[c])
            continue;
        Node *il = (l->u.loop.var == sp->var[c]) ? NULL : loop_of_var_inside(l, sp->var[c]);
        if (!il)
            continue;
        int lev = 0;
        for (Node *p = il; p && p != l; p = p->parent)
            lev++;
        if (lev > dlev)
            dlev = lev, deepest = c, dl = il;
    }
    if (deepest < 0)
        return true;
    bool up = (a->c[deepest] > 0) == want_max;
    ArRow p[8];
    int n = 0;
    ar_bound_pieces(sp, up ? dl->u.loop.hi : dl->u.loop.lo, up, 0, p, &n, 8);
    if (n == 0)
        return false;
    /* Prefer a piece that mentions no variable of a loop inside l (a constant tile). */
    int pick = 0;
    for (int i = 0; i < n; i++) {
        bool inner = false;
        for (int c = 0; c < sp->ncol; c++)
            if (p[i].c[c] && sp->var[c] && loop_of_var_inside(l, sp->var[c]) &&
                l->u.loop.var != sp->var[c])
                inner = true;
        if (!inner) {
            pick = i;
            break;
        }
    }
    ArRow b = p[pick];
    if (up)
        b.k -= 1;
    int64_t coef = a->c[deepest];
    a->c[deepest] = 0;
    ArRow r;
    if (!ar_row_lin(&r, 1, a, coef, &b))
        return false;
    *a = r;
    return extreme(sp, l, a, want_max, depth + 1);
}

Expr *xf_simplify_affine(Kernel *k, Expr *e)
{
    ArSpace sp;
    ArRow a;
    ar_space_init(&sp, k);
    sp.symbolic = true; /* the printer should still show `N`, not its value */
    if (dtype_is_float(e->dtype) || !ar_row_of(&sp, e, 0, &a) || sp.overflow)
        return ir_simplify(k, e);
    Expr *r = ar_row_to_expr(k, &sp, &a);
    r->span = e->span;
    return r;
}

Expr *xf_aff_expr(Kernel *k, const ArAff *a)
{
    Expr *s = ir_int(k, a->c);
    for (int t = 0; t < a->n; t++)
        if (a->k[t])
            s = ir_bin(k, IE_ADD, s, ir_bin(k, IE_MUL, ir_var(k, k->vars[a->var[t]]), ir_int(k, a->k[t])));
    return xf_simplify_affine(k, s);
}

/* Whether e reads the variable of l or of a loop inside it. */
static bool moved_in(const Expr *e, const Node *l)
{
    if (l->kind == N_LOOP && ir_expr_uses_var(e, l->u.loop.var))
        return true;
    const NodeList *b = ir_body((Node *)l);
    for (int i = 0; b && i < b->n; i++)
        if (b->v[i]->kind != N_STMT && moved_in(e, b->v[i]))
            return true;
    return false;
}

/* Whether a loop inside l (not l itself: the region is one iteration of l, whose
 * variable is a symbol there, as extreme() takes it) moves e. */
static bool moved_inside(const Expr *e, const Node *l)
{
    const NodeList *b = ir_body((Node *)l);
    for (int i = 0; b && i < b->n; i++)
        if (b->v[i]->kind != N_STMT && moved_in(e, b->v[i]))
            return true;
    return false;
}

/* A subscript floor(E / c), E affine and c a positive constant, whose remainder
 * part (the terms whose coefficients are no multiple of c, and the constant's
 * remainder) stays within [0, c) over the loops inside l: exactly the quotient
 * part, an affine row.  Grouped-query attention's K[b, h / G, ..] once h is split
 * by G into (hk, hg) with hg inside l: (G*hk + hg) / G is hk there. */
static bool exact_div_row(ArSpace *sp, Node *l, const Expr *e, ArRow *out)
{
    ArRow x, d;
    if (e->kind != IE_DIV || !ar_row_of(sp, e->args[1], 0, &d) || !ar_row_is_const(&d) || d.k <= 0 ||
        !ar_row_of(sp, e->args[0], 0, &x))
        return false;
    int64_t c = d.k;
    ArRow q, rem;
    memset(&q, 0, sizeof q);
    memset(&rem, 0, sizeof rem);
    for (int j = 0; j < AR_ROW_COLS; j++) {
        if (x.c[j] % c == 0)
            q.c[j] = x.c[j] / c;
        else
            rem.c[j] = x.c[j];
    }
    q.k = ar_floordiv(x.k, c);
    rem.k = x.k - q.k * c;
    ArRow mn = rem, mx = rem;
    if (!extreme(sp, l, &mn, false, 0) || !extreme(sp, l, &mx, true, 0) || !ar_row_is_const(&mn) ||
        !ar_row_is_const(&mx) || mn.k < 0 || mx.k >= c)
        return false;
    *out = q;
    return true;
}

bool xf_region(Kernel *k, Node *l, const AccVec *acc, bool writes_only, Region *r, StrBuf *why)
{
    ArSpace sp;
    ArRow lo[8], hi[8];
    /* a subscript no loop of the region moves is one value there, affine or not
     * (K[b, h / G, j, d] of grouped-query attention, h fixed outside) */
    const Expr *fixed[8] = {0};
    bool have = false;
    const Buffer *buf = NULL;
    ar_space_init(&sp, k);
    for (int i = 0; i < acc->n; i++) {
        const Access *a = &acc->v[i];
        if (writes_only && !a->write)
            continue;
        if (!buf)
            buf = a->buf;
        if (a->buf != buf)
            continue;
        if (buf->rank > 8) {
            sb_printf(why, "%s has more than 8 dimensions", buf->name);
            return false;
        }
        for (int d = 0; d < buf->rank; d++) {
            ArRow x, mn, mx;
            if ((!have || fixed[d]) && !moved_inside(a->idx[d], l) && !ar_row_of(&sp, a->idx[d], 0, &x)) {
                if (have && !xf_expr_equal(k, fixed[d], a->idx[d])) {
                    sb_printf(why, "the accesses to %s in %s differ in subscript %d, which is not affine", buf->name,
                              l->u.loop.var->name, d);
                    return false;
                }
                fixed[d] = a->idx[d];
                continue;
            }
            if (fixed[d] || (!ar_row_of(&sp, a->idx[d], 0, &x) && !exact_div_row(&sp, l, a->idx[d], &x))) {
                sb_printf(why, "subscript %d of %s is not affine", d, buf->name);
                return false;
            }
            mn = x;
            mx = x;
            if (!extreme(&sp, l, &mn, false, 0) || !extreme(&sp, l, &mx, true, 0)) {
                sb_printf(why, "a loop inside %s has bounds that are not affine", l->u.loop.var->name);
                return false;
            }
            if (!have) {
                lo[d] = mn;
                hi[d] = mx;
                continue;
            }
            ArRow dl, dh;
            if (!ar_row_lin(&dl, 1, &mn, -1, &lo[d]) || !ar_row_is_const(&dl) ||
                !ar_row_lin(&dh, 1, &mx, -1, &hi[d]) || !ar_row_is_const(&dh)) {
                sb_printf(why, "the accesses to %s in %s are not a box of one shape (dimension %d)",
                          buf->name, l->u.loop.var->name, d);
                return false;
            }
            if (dl.k < 0)
                lo[d] = mn;
            if (dh.k > 0)
                hi[d] = mx;
        }
        have = true;
    }
    if (!have) {
        sb_printf(why, "nothing is accessed in %s", l->u.loop.var->name);
        return false;
    }
    r->rank = buf->rank;
    for (int d = 0; d < buf->rank; d++) {
        ArRow w;
        if (fixed[d]) {
            r->width[d] = 1;
            r->lo[d] = ir_clone_expr(k, fixed[d]);
            continue;
        }
        if (!ar_row_lin(&w, 1, &hi[d], -1, &lo[d]) || !ar_row_is_const(&w)) {
            sb_printf(why, "the extent of dimension %d of %s in %s is not a constant", d, buf->name,
                      l->u.loop.var->name);
            return false;
        }
        r->width[d] = w.k + 1;
        r->lo[d] = ir_simplify(k, ar_row_to_expr(k, &sp, &lo[d]));
    }
    return true;
}

/* ---------------- facts at a point ---------------- */

bool xf_prove_le(Kernel *k, const Node *at, const Expr *a, const Expr *b)
{
    ArSpace sp;
    ArSys s;
    ArRow x, y, r;
    ar_space_init(&sp, k);
    sp.divs = true;
    if (!ar_row_of(&sp, a, 0, &x) || !ar_row_of(&sp, b, 0, &y) || !ar_row_lin(&r, 1, &x, -1, &y))
        return false;
    ar_sys_init(&s);
    if (__builtin_sub_overflow(r.k, 1, &r.k)) /* a - b - 1 >= 0: a counterexample */
        return false;
    ar_sys_add_ge(&s, &r);
    if (at) {
        ar_sys_add_domain(&s, &sp, at, 0, true);
    } else {
        /* the kernel's top level: only the sizes, each at least 1 */
        for (int i = 0; i < sp.ncol; i++)
            if (!sp.var[i]) {
                ArRow p;
                memset(&p, 0, sizeof p);
                p.c[i] = 1;
                p.k = -1;
                ar_sys_add_ge(&s, &p);
            }
    }
    ar_sys_add_divs(&s, &sp);
    s.split = sp.ndiv > 0;
    bool proved = !sp.overflow && !ar_sys_feasible(&s);
    ar_sys_free(&s);
    return proved;
}
