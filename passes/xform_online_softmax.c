/* Online softmax: online_softmax(out, loop, tile) rewrites the softmax-then-contraction
 * chain that PDL states in four statements,
 *
 *     m[I]    = max(j) E(I, j)                     where mask(I, j)
 *     p[I, j] = exp(E(I, j) - m[I])
 *     l[I]    = sum(j) p[I, j]                     where mask(I, j)
 *     A[I, n] = sum(j) p[I, j] * F(I, j, n) / l[I] where mask(I, j)
 *
 * (`loop` is the contraction's j loop, `out` a tensor its nest writes), into one pass
 * over tiles of j that keeps a running maximum, a running sum and a partial product
 * rescaled whenever the maximum grows:
 *
 *     m = -inf; l = 0; A[n] = 0
 *     for each tile:   a = m;  m = max(m, max over the tile of E)
 *                      a = exp(a - m')          (m' = m, or 0 while m is -inf)
 *                      l *= a;  A[n] *= a
 *                      p = exp(E - m') over the tile; l += p; A[n] += p * F
 *     A[n] = A[n] / l  (left as it is where l is 0: a row whose every term is masked)
 *
 * Why it is legal: after any prefix of tiles, m is the maximum of E over that prefix,
 * and l and A equal the sum of exp(E - m) and of exp(E - m) * F over it (induction:
 * the factor exp(m_old - m_new) moves the earlier terms from the old maximum to the
 * new one).  After the last tile m is the original m, so l and A are the original
 * sums, and A / l equals the original sum of p * F / l, since l does not depend on j
 * (the division factors out).  This reassociates the sums (docs/schedules.md allows
 * it for reductions).  `m'` keeps a tile whose every term is masked or -inf (an
 * additive -inf mask) from computing exp(-inf - -inf): such terms give exp(-inf) = 0.
 * Where the original chain computes NaN (a row whose every score is -inf) the result
 * is 0 instead.
 *
 * The rewrite needs exactly that chain, and proves each part from the IR: the four
 * nests are the lowered ones (one per statement, nothing scheduled yet), the maximum,
 * the sum and the contraction run over the same range of j with the same masks, the
 * exponent subtracts the maximum from the same expression that was maximised, the
 * contraction's term has p as a factor and is divided by l, which is indexed by the
 * row alone, and m, p and l are temporaries read nowhere else.  Anything else is
 * refused with the reason at the statement in the way.
 *
 * Temporaries that the score reads at [row, j] and that nothing else reads (the
 * score s = Q·Kᵀ of attention, a biased score) are computed inside each tile too
 * (one tile loop per statement of their nest: each element depends on no other),
 * so no buffer of rows x j remains: p and those temporaries keep their names with
 * the j dimension cut to the tile.  m, l and the new rescaling factor `m_scale` keep
 * one element per row.  The fused nest takes the place of the contraction's nest;
 * its loops are named after the originals (docs/schedules.md). */
#include <math.h>
#include <string.h>

#include "xform_int.h"
#include "../ir/arith.h"
#include "../ir/walk.h"

#define OS_MAXR 8 /* row indices of the softmax */
#define OS_MAXX 8 /* score temporaries computed per tile */
#define OS_MAXG 8 /* mask guards per statement */

/* A substitution: the variables of one nest to the canonical row variables (the
 * contraction's) and to the contraction's j variable. */
typedef struct VMap {
    const Var *from[24];
    Expr *to[24];
    int n;
} VMap;

static void vmap_add(VMap *m, const Var *v, Expr *e)
{
    if (m->n < 24) {
        m->from[m->n] = v;
        m->to[m->n] = e;
        m->n++;
    }
}

static Expr *vmap_expr(Kernel *k, const VMap *m, const Expr *e)
{
    return xf_subst_expr(k, e, m->from, m->to, m->n);
}

static Node *vmap_node(Kernel *k, const VMap *m, const Node *n)
{
    Node *c = ir_clone_node(k, n);
    for (int i = 0; i < m->n; i++)
        xf_subst_tree(k, c, m->from[i], m->to[i]);
    return c;
}

/* A lowered nest: the loops nested one inside the other from the top, and the body
 * of the innermost one. */
typedef struct Nest {
    Node *top;
    Node *loop[16];
    int n;
    NodeList *body;
} Nest;

static void nest_parse(Node *top, Nest *ns)
{
    memset(ns, 0, sizeof *ns);
    ns->top = top;
    Node *cur = top;
    while (cur->kind == N_LOOP && ns->n < 16) {
        ns->loop[ns->n++] = cur;
        ns->body = &cur->u.loop.body;
        if (cur->u.loop.body.n != 1 || cur->u.loop.body.v[0]->kind != N_LOOP)
            break;
        cur = cur->u.loop.body.v[0];
    }
}

static Node *top_of(Node *n)
{
    while (n->parent)
        n = n->parent;
    return n;
}

/* The loop of var v among the nest's outer loops, or NULL. */
static Node *nest_loop(const Nest *ns, const Var *v)
{
    for (int i = 0; i < ns->n; i++)
        if (ns->loop[i]->u.loop.var == v)
            return ns->loop[i];
    return NULL;
}

/* The body of a j loop: guards, each holding one node, down to one statement. */
static Node *guarded_stmt(Node *l, Node **guards, int *ng)
{
    *ng = 0;
    Node *cur = l;
    for (;;) {
        NodeList *b = ir_body(cur);
        if (!b || b->n != 1)
            return NULL;
        cur = b->v[0];
        if (cur->kind == N_STMT)
            return cur;
        if (cur->kind != N_IF || *ng == OS_MAXG)
            return NULL;
        guards[(*ng)++] = cur;
    }
}

/* Every loop of the subtree is serial and nothing is a prefetch: the nest is as
 * lowering made it, or changed only in ways this rewrite rebuilds anyway. */
static const Node *scheduled_in(const Node *n)
{
    if (n->kind == N_PREFETCH)
        return n;
    if (n->kind == N_LOOP && n->u.loop.kind != LOOP_SERIAL)
        return n;
    const NodeList *b = ir_body((Node *)n);
    for (int i = 0; b && i < b->n; i++) {
        const Node *x = scheduled_in(b->v[i]);
        if (x)
            return x;
    }
    return NULL;
}

static bool is_const(const Expr *e, double v)
{
    while (e->kind == IE_CAST)
        e = e->args[0];
    if (e->kind == IE_FLT)
        return e->u.f == v;
    if (e->kind == IE_INT)
        return (double)e->u.i == v;
    return false;
}

static bool is_load_of(const Expr *e, const Buffer *b) { return e->kind == IE_LOAD && e->u.load.buf == b; }

/* Index i of an access as a plain variable, or NULL. */
static const Var *pure(Expr *const *idx, int i) { return idx[i]->kind == IE_VAR ? idx[i]->u.var : NULL; }

/* e with the factor `leaf` taken out of its product (leaf is one of its leaves). */
static Expr *drop_factor(Kernel *k, Expr *e, const Expr *leaf)
{
    if (e->kind != IE_MUL && e->kind != IE_DIV)
        return e;
    if (e->args[1] == leaf)
        return e->args[0];
    if (e->args[0] == leaf) {
        if (e->kind == IE_MUL)
            return e->args[1];
        e->args[0] = ir_flt(k, 1.0, e->dtype);
        return e;
    }
    e->args[0] = drop_factor(k, e->args[0], leaf);
    e->args[1] = drop_factor(k, e->args[1], leaf);
    return e;
}

/* ---------------- the analysis ---------------- */

typedef struct Chain {
    XfCtx *c;
    Kernel *k;
    AccVec all;
    Var *J;                     /* the contraction's j variable: the canonical j */
    Node *oj;                   /* its loop */
    int R;                      /* row rank (= rank of l) */
    const Var *row[OS_MAXR];    /* canonical row variables: O's, by l's dimension */
    Nest on, mn, pn, ln;
    Node *ored, *oinit, *minit, *mred, *pstmt, *linit, *lred;
    Node *og[OS_MAXG], *mg[OS_MAXG], *lg[OS_MAXG];
    int nog, nmg, nlg;
    Buffer *A, *m, *p, *l;
    Expr *pleaf, *lleaf;        /* the factors p and l of the contraction's term */
    int pj;                     /* p's j dimension */
    VMap mv, pv, lv;
    /* score temporaries computed per tile, in kernel order */
    Buffer *xb[OS_MAXX];
    Nest xn[OS_MAXX];
    VMap xv[OS_MAXX];
    int xj[OS_MAXX];
    int nx;
} Chain;

static int writers(Chain *ch, const Buffer *b, Node **out, int cap)
{
    int n = 0;
    for (int i = 0; i < ch->all.n; i++)
        if (ch->all.v[i].write && ch->all.v[i].buf == b) {
            if (n < cap)
                out[n] = ch->all.v[i].stmt;
            n++;
        }
    return n;
}

/* The first read of b by a statement not in ok[] (NULL when there is none).  The
 * writers' own reads (updates `op=`) were checked with the writers. */
static Node *stray_reader(Chain *ch, const Buffer *b, Node *const *ok, int nok)
{
    for (int i = 0; i < ch->all.n; i++) {
        const Access *a = &ch->all.v[i];
        if (a->buf != b || a->write)
            continue;
        bool mine = false;
        for (int j = 0; j < nok; j++)
            mine |= a->stmt == ok[j];
        if (!mine)
            return a->stmt;
    }
    return NULL;
}

/* Checks that the loop of each mapped variable has the bounds of the canonical one. */
static bool same_bounds(Chain *ch, const Nest *ns, Node *jl, const VMap *v, const char *what)
{
    for (int i = 0; i < v->n; i++) {
        Node *l = nest_loop(ns, v->from[i]);
        if (!l && jl && jl->u.loop.var == v->from[i])
            l = jl;
        if (!l)
            continue;
        const Var *to = v->to[i]->u.var;
        Node *cl = to == ch->J ? ch->oj : nest_loop(&ch->on, to);
        if (!cl)
            continue;
        if (!xf_expr_equal(ch->k, l->u.loop.lo, cl->u.loop.lo) || !xf_expr_equal(ch->k, l->u.loop.hi, cl->u.loop.hi)) {
            xf_err(ch->c, "the %s runs %s over another range than the contraction's %s", what, l->u.loop.var->name,
                   cl->u.loop.var->name);
            xf_note(ch->c, l->span, "loop %s", l->u.loop.var->name);
            xf_note(ch->c, cl->span, "loop %s", cl->u.loop.var->name);
            return false;
        }
    }
    return true;
}

/* The masks of a statement, as canonical conditions, equal those of the contraction. */
static bool same_masks(Chain *ch, Node *const *g, int ng, const VMap *v, const char *what)
{
    bool ok = ng == ch->nog;
    for (int i = 0; ok && i < ng; i++)
        ok = xf_expr_equal(ch->k, vmap_expr(ch->k, v, g[i]->u.guard.cond), ch->og[i]->u.guard.cond);
    if (ok)
        return true;
    xf_err(ch->c, "the %s and the contraction over %s have different masks", what, ch->J->name);
    for (int i = 0; i < ng; i++)
        xf_note(ch->c, g[i]->span, "the %s's mask", what);
    if (ng == 0)
        xf_note(ch->c, what[0] == 'm' ? ch->mred->span : ch->lred->span, "the %s has no mask", what);
    for (int i = 0; i < ch->nog; i++)
        xf_note(ch->c, ch->og[i]->span, "the contraction's mask");
    if (ch->nog == 0)
        xf_note(ch->c, ch->ored->span, "the contraction has no mask");
    return false;
}

/* A reduction nest over the rows: R loops, body [T[I] = identity; for j: guards ->
 * T[I] op= value].  Fills the map of its row variables from the canonical indices
 * `canon` of T (by T's dimension), and its j variable to J. */
static bool reduction_nest(Chain *ch, Buffer *t, StmtOp op, double ident, const char *what, Nest *ns,
                           Node **init, Node **red, Node **g, int *ng, const Var *const *canon, VMap *v)
{
    Node *w[4];
    int nw = writers(ch, t, w, 4);
    XfCtx *c = ch->c;
    if (nw != 2 || w[0]->u.stmt.op != SOP_ASSIGN || w[1]->u.stmt.op != op || top_of(w[0]) != top_of(w[1])) {
        xf_err(c, "%s is not computed by one %s reduction over the rows", t->name, what);
        if (nw > 0)
            xf_note(c, w[0]->span, "%s is written here", t->name);
        return false;
    }
    *init = w[0];
    *red = w[1];
    nest_parse(top_of(w[0]), ns);
    const Node *sch = scheduled_in(ns->top);
    if (sch) {
        xf_err(c, "the nest of %s has been scheduled; apply online_softmax before other moves on it", t->name);
        xf_note(c, sch->span, "here");
        return false;
    }
    if (t->rank != ch->R || ns->n != ch->R || ns->body->n != 2 || ns->body->v[0] != w[0] ||
        ns->body->v[1]->kind != N_LOOP || !is_const(w[0]->u.stmt.value, ident)) {
        xf_err(c, "the nest of %s is not one %s reduction over j inside its row loops", t->name, what);
        xf_note(c, w[1]->span, "the %s", what);
        return false;
    }
    Node *jl = ns->body->v[1];
    if (guarded_stmt(jl, g, ng) != w[1]) {
        xf_err(c, "the %s of %s reduces over more than one loop", what, t->name);
        xf_note(c, w[1]->span, "the %s", what);
        return false;
    }
    for (int d = 0; d < t->rank; d++) {
        const Var *a = pure(w[0]->u.stmt.idx, d), *b = pure(w[1]->u.stmt.idx, d);
        if (!a || a != b || !nest_loop(ns, a)) {
            xf_err(c, "%s is not indexed by its row loops", t->name);
            xf_note(c, w[1]->span, "the %s", what);
            return false;
        }
        for (int e = 0; e < d; e++)
            if (pure(w[0]->u.stmt.idx, e) == a) {
                xf_err(c, "%s is indexed twice by %s", t->name, a->name);
                return false;
            }
        vmap_add(v, a, ir_var(ch->k, (Var *)canon[d]));
    }
    vmap_add(v, jl->u.loop.var, ir_var(ch->k, ch->J));
    return same_bounds(ch, ns, jl, v, what);
}

/* Loads of temporaries in e that the per-tile rewrite could compute inside a tile:
 * candidates are pushed to out (no duplicates). */
static void temp_loads(const Expr *e, Buffer **out, int *n, int cap)
{
    if (e->kind == IE_LOAD) {
        Buffer *b = e->u.load.buf;
        bool seen = false;
        for (int i = 0; i < *n; i++)
            seen |= out[i] == b;
        if (!seen && b->kind == BUF_TEMP && *n < cap)
            out[(*n)++] = b;
        return;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        temp_loads(e->args[i], out, n, cap);
}

static void temp_loads_node(const Node *n, Buffer **out, int *cnt, int cap)
{
    if (n->kind == N_STMT) {
        temp_loads(n->u.stmt.value, out, cnt, cap);
        return;
    }
    if (n->kind == N_IF)
        temp_loads(n->u.guard.cond, out, cnt, cap);
    const NodeList *b = ir_body((Node *)n);
    for (int i = 0; b && i < b->n; i++)
        temp_loads_node(b->v[i], out, cnt, cap);
}

/* Every load of b in the canonical expression e indexes it the same way, each index a
 * canonical row variable or J; *jd receives the J dimension (-1 when none).  `first`
 * holds the index list seen so far. */
static bool canon_index(const Chain *ch, const Expr *e, const Buffer *b, const Var **first, bool *seen, int *jd)
{
    if (e->kind == IE_LOAD) {
        if (e->u.load.buf == b) {
            for (int d = 0; d < b->rank; d++) {
                const Var *v = pure(e->u.load.idx, d);
                bool okv = v == ch->J;
                for (int r = 0; r < ch->R && !okv; r++)
                    okv = v == ch->row[r];
                if (!okv)
                    return false;
                if (*seen && first[d] != v)
                    return false;
                first[d] = v;
                if (v == ch->J)
                    *jd = d;
            }
            *seen = true;
        }
        for (int i = 0; i < e->u.load.buf->rank; i++)
            if (!canon_index(ch, e->u.load.idx[i], b, first, seen, jd))
                return false;
        return true;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        if (!canon_index(ch, e->args[i], b, first, seen, jd))
            return false;
    return true;
}

static bool canon_index_node(const Chain *ch, const Node *n, const Buffer *b, const Var **first, bool *seen, int *jd)
{
    if (n->kind == N_STMT)
        return canon_index(ch, n->u.stmt.value, b, first, seen, jd);
    if (n->kind == N_IF && !canon_index(ch, n->u.guard.cond, b, first, seen, jd))
        return false;
    const NodeList *l = ir_body((Node *)n);
    for (int i = 0; l && i < l->n; i++)
        if (!canon_index_node(ch, l->v[i], b, first, seen, jd))
            return false;
    return true;
}

static int top_index(Kernel *k, Node *top)
{
    for (int i = 0; i < k->body.n; i++)
        if (k->body.v[i] == top)
            return i;
    return -1;
}

/* True when the statement lies in one of the nests that the rewrite moves or keeps. */
static bool in_chain(const Chain *ch, const Node *top)
{
    if (top == ch->on.top || top == ch->mn.top || top == ch->pn.top || top == ch->ln.top)
        return true;
    for (int i = 0; i < ch->nx; i++)
        if (top == ch->xn[i].top)
            return true;
    return false;
}

/* Whether temporary t, read at [row, j] by the score, can be computed inside each
 * tile: one nest writes it and nothing else, one loop per dimension around an
 * element body that touches t only at its own element, and only the chain reads it.
 * The canonical reads are in `canon` (E and the element bodies taken so far). */
static bool absorbable(Chain *ch, Buffer *t, Node *const *readers, int nreaders, const Var **idx, int jd)
{
    if (jd < 0 || t->rank > 16 || t == ch->m || t == ch->p || t == ch->l || t == ch->A)
        return false;
    Node *w[16];
    int nw = writers(ch, t, w, 16);
    if (nw < 1 || nw > 16)
        return false;
    Nest ns;
    nest_parse(top_of(w[0]), &ns);
    if (ns.n != t->rank || scheduled_in(ns.top) || top_index(ch->k, ns.top) < 0 ||
        top_index(ch->k, ns.top) >= top_index(ch->k, ch->mn.top))
        return false;
    for (int i = 0; i < nw; i++)
        for (int d = 0; d < t->rank; d++)
            if (top_of(w[i]) != ns.top || pure(w[i]->u.stmt.idx, d) != ns.loop[d]->u.loop.var)
                return false;
    /* the nest writes only t, and reads t only at the element an update writes */
    AccVec acc = {0};
    acc_collect(ch->k, ns.top, &acc);
    bool ok = true;
    for (int i = 0; i < acc.n && ok; i++) {
        const Access *a = &acc.v[i];
        if (a->write)
            ok = a->buf == t;
        else if (a->buf == t)
            for (int d = 0; d < t->rank && ok; d++)
                ok = pure(a->idx, d) == ns.loop[d]->u.loop.var;
    }
    acc_free(&acc);
    if (!ok)
        return false;
    /* only the statements of the chain (and taken element bodies) read t */
    for (int i = 0; i < ch->all.n; i++) {
        const Access *a = &ch->all.v[i];
        if (a->buf != t || a->write)
            continue;
        bool mine = top_of(a->stmt) == ns.top;
        for (int j = 0; j < nreaders && !mine; j++)
            mine = a->stmt == readers[j] || xf_contains(readers[j], a->stmt);
        if (!mine)
            return false;
    }
    int xi = ch->nx;
    ch->xb[xi] = t;
    ch->xn[xi] = ns;
    ch->xj[xi] = jd;
    memset(&ch->xv[xi], 0, sizeof ch->xv[xi]);
    for (int d = 0; d < t->rank; d++)
        vmap_add(&ch->xv[xi], ns.loop[d]->u.loop.var, ir_var(ch->k, (Var *)idx[d]));
    for (int i = 0; i < ch->xv[xi].n; i++) {
        Node *l = ns.loop[i];
        const Var *to = idx[i];
        Node *cl = to == ch->J ? ch->oj : nest_loop(&ch->on, to);
        if (!cl || !xf_expr_equal(ch->k, l->u.loop.lo, cl->u.loop.lo) ||
            !xf_expr_equal(ch->k, l->u.loop.hi, cl->u.loop.hi))
            return false;
    }
    ch->nx++;
    return true;
}

/* Nothing between a moved nest and the contraction's nest writes what the moved nest
 * reads or touches what it writes. */
static bool movable(Chain *ch, Node *top, const char *what)
{
    int from = top_index(ch->k, top), to = top_index(ch->k, ch->on.top);
    AccVec mine = {0};
    acc_collect(ch->k, top, &mine);
    bool ok = true;
    for (int i = from + 1; i < to && ok; i++) {
        Node *y = ch->k->body.v[i];
        if (in_chain(ch, y))
            continue;
        AccVec acc = {0};
        acc_collect(ch->k, y, &acc);
        for (int a = 0; a < acc.n && ok; a++)
            for (int b = 0; b < mine.n && ok; b++)
                if (acc.v[a].buf == mine.v[b].buf && (acc.v[a].write || mine.v[b].write)) {
                    xf_err(ch->c, "the %s cannot move to the contraction: %s is %s in between", what,
                           acc.v[a].buf->name, acc.v[a].write ? "written" : "read");
                    xf_note(ch->c, acc.v[a].stmt->span, "here");
                    ok = false;
                }
        acc_free(&acc);
    }
    acc_free(&mine);
    return ok;
}

static bool analyse(Chain *ch)
{
    XfCtx *c = ch->c;
    Kernel *k = ch->k;
    Buffer *out = xf_arg_buffer(c, 0);
    Node *oj = out ? xf_arg_loop(c, 1) : NULL;
    if (!oj)
        return false;
    ch->oj = oj;
    ch->J = oj->u.loop.var;
    ch->ored = guarded_stmt(oj, ch->og, &ch->nog);
    if (!ch->ored || ch->ored->u.stmt.op != SOP_ADD) {
        xf_err(c, "loop %s must hold one sum (`+=`), under its masks only", ch->J->name);
        return false;
    }
    ch->A = ch->ored->u.stmt.buf;
    nest_parse(top_of(oj), &ch->on);
    bool writes_out = false;
    acc_collect(k, NULL, &ch->all);
    for (int i = 0; i < ch->all.n; i++)
        if (ch->all.v[i].write && ch->all.v[i].buf == out && top_of(ch->all.v[i].stmt) == ch->on.top)
            writes_out = true;
    if (!writes_out) {
        xf_err(c, "loop %s is not in the nest that computes %s", ch->J->name, out->name);
        return false;
    }
    const Node *sch = scheduled_in(ch->on.top);
    if (sch) {
        xf_err(c, "the nest of %s has been scheduled; apply online_softmax before other moves on it", out->name);
        xf_note(c, sch->span, "here");
        return false;
    }
    if (ch->on.n == 0 || oj->parent != ch->on.loop[ch->on.n - 1]) {
        xf_err(c, "the contraction over %s is not a lowered nest (loops, then the sum's initialisation "
                  "and its loop)", ch->J->name);
        return false;
    }
    /* the factors p (numerator) and l (denominator) of the term */
    XfFactors f = {0};
    xf_factors(ch->ored->u.stmt.value, false, &f);
    if (f.overflow) {
        xf_err(c, "the term of the sum over %s has more than 32 factors", ch->J->name);
        return false;
    }
    Buffer *normalised = NULL;
    for (int i = 0; i < f.n; i++) {
        Expr *x = f.leaf[i];
        if (x->kind != IE_LOAD || x->u.load.buf->kind == BUF_IN || f.den[i])
            continue;
        Node *w[2];
        if (writers(ch, x->u.load.buf, w, 2) != 1 || w[0]->u.stmt.op != SOP_ASSIGN)
            continue;
        Expr *v = w[0]->u.stmt.value;
        if (v->kind == IE_EXP && v->args[0]->kind == IE_SUB && v->args[0]->args[1]->kind == IE_LOAD &&
            v->args[0]->args[1]->u.load.buf->kind != BUF_IN) {
            if (ch->p) {
                xf_err(c, "the term of the sum over %s has two factors computed as exp(x - max): %s and %s",
                       ch->J->name, ch->p->name, x->u.load.buf->name);
                return false;
            }
            ch->p = x->u.load.buf;
            ch->pleaf = x;
            ch->pstmt = w[0];
        } else if (!normalised)
            normalised = x->u.load.buf;
    }
    if (!ch->p) {
        xf_err(c, "no factor of the term of the sum over %s is computed as exp(x - max)", ch->J->name);
        xf_note(c, ch->ored->span, "the sum");
        if (normalised)
            xf_note(c, ch->ored->span, "if %s holds the normalised exponentials, apply inline(%s) first", normalised->name,
                    normalised->name);
        return false;
    }
    ch->m = ch->pstmt->u.stmt.value->args[0]->args[1]->u.load.buf;
    for (int i = 0; i < f.n; i++) {
        Expr *x = f.leaf[i];
        if (!f.den[i] || x->kind != IE_LOAD || x->u.load.buf->kind == BUF_IN)
            continue;
        Node *w[3];
        if (writers(ch, x->u.load.buf, w, 3) == 2 && w[1]->u.stmt.op == SOP_ADD &&
            is_load_of(w[1]->u.stmt.value, ch->p)) {
            ch->l = x->u.load.buf;
            ch->lleaf = x;
        }
    }
    if (!ch->l) {
        xf_err(c, "the sum over %s is not divided by a sum of %s", ch->J->name, ch->p->name);
        xf_note(c, ch->ored->span, "the sum");
        return false;
    }
    /* rows: the contraction reads l[row...] */
    ch->R = ch->l->rank;
    if (ch->R < 1 || ch->R > OS_MAXR) {
        xf_err(c, "the softmax needs 1 to %d row indices; %s has %d", OS_MAXR, ch->l->name, ch->R);
        return false;
    }
    for (int d = 0; d < ch->R; d++) {
        const Var *v = pure(ch->lleaf->u.load.idx, d);
        int at = -1;
        for (int i = 0; i < ch->on.n; i++)
            if (ch->on.loop[i]->u.loop.var == v)
                at = i;
        if (!v || at < 0 || at >= ch->R) {
            xf_err(c, "the loops of the contraction do not run over the rows of %s outermost", ch->l->name);
            xf_note(c, ch->ored->span, "the contraction reads %s here", ch->l->name);
            return false;
        }
        for (int e = 0; e < d; e++)
            if (ch->row[e] == v) {
                xf_err(c, "%s is indexed twice by %s", ch->l->name, v->name);
                return false;
            }
        ch->row[d] = v;
    }
    /* p's layout: each dimension a row (by l's dimension) or j */
    int pmap[OS_MAXR + 1];
    ch->pj = -1;
    if (ch->p->rank != ch->R + 1) {
        xf_err(c, "%s must have the rows of %s and one dimension over %s", ch->p->name, ch->l->name, ch->J->name);
        return false;
    }
    for (int d = 0; d < ch->p->rank; d++) {
        const Var *v = pure(ch->pleaf->u.load.idx, d);
        pmap[d] = -2;
        if (v && v == ch->J && ch->pj < 0) {
            pmap[d] = -1;
            ch->pj = d;
        }
        for (int r = 0; r < ch->R; r++)
            if (v == ch->row[r]) {
                pmap[d] = r;
                for (int e = 0; e < d; e++)
                    if (pmap[e] == r)
                        pmap[d] = -2;
            }
        if (pmap[d] == -2) {
            xf_err(c, "the contraction reads %s at other indices than the rows of %s and %s", ch->p->name,
                   ch->l->name, ch->J->name);
            xf_note(c, ch->ored->span, "the contraction");
            return false;
        }
    }
    if (ch->pj < 0) {
        xf_err(c, "the contraction does not read %s along %s", ch->p->name, ch->J->name);
        return false;
    }
    /* the accumulator, its initialisation and what follows the sum */
    int nfree = ch->on.n - ch->R;
    for (int d = 0; d < ch->A->rank; d++) {
        const Var *v = pure(ch->ored->u.stmt.idx, d);
        if (!v || !nest_loop(&ch->on, v)) {
            xf_err(c, "%s is not indexed by the plain loops around the sum over %s", ch->A->name, ch->J->name);
            return false;
        }
    }
    for (int i = 0; i < ch->on.n; i++) {
        bool used = false;
        for (int d = 0; d < ch->A->rank; d++)
            used |= pure(ch->ored->u.stmt.idx, d) == ch->on.loop[i]->u.loop.var;
        if (!used) {
            xf_err(c, "loop %s around the sum over %s does not index %s", ch->on.loop[i]->u.loop.var->name,
                   ch->J->name, ch->A->name);
            return false;
        }
    }
    NodeList *ob = ch->on.body;
    Node *oi = ob->n >= 2 ? ob->v[0] : NULL;
    if (!oi || ob->v[1] != oj || oi->kind != N_STMT || oi->u.stmt.buf != ch->A || oi->u.stmt.op != SOP_ASSIGN ||
        !is_const(oi->u.stmt.value, 0.0)) {
        xf_err(c, "the sum over %s is not initialised to 0 just before its loop", ch->J->name);
        return false;
    }
    for (int d = 0; d < ch->A->rank; d++)
        if (!xf_expr_equal(k, oi->u.stmt.idx[d], ch->ored->u.stmt.idx[d])) {
            xf_err(c, "the sum over %s is initialised at another element", ch->J->name);
            return false;
        }
    ch->oinit = oi;
    for (int i = 2; i < ob->n; i++)
        if (ob->v[i]->kind != N_STMT || ob->v[i]->u.stmt.op != SOP_ASSIGN) {
            xf_err(c, "only plain statements may follow the sum over %s in its nest", ch->J->name);
            xf_note(c, ob->v[i]->span, "this");
            return false;
        }
    (void)nfree;
    /* the sum l */
    if (!reduction_nest(ch, ch->l, SOP_ADD, 0.0, "sum", &ch->ln, &ch->linit, &ch->lred, ch->lg, &ch->nlg, ch->row,
                        &ch->lv))
        return false;
    {
        Expr *pl = ch->lred->u.stmt.value;
        for (int d = 0; d < ch->p->rank; d++) {
            Expr *want = vmap_expr(k, &ch->lv, pl->u.load.idx[d]);
            const Var *wv = want->kind == IE_VAR ? want->u.var : NULL;
            if (wv != (pmap[d] < 0 ? ch->J : ch->row[pmap[d]])) {
                xf_err(c, "the sum %s and the contraction read %s at different elements", ch->l->name, ch->p->name);
                xf_note(c, ch->lred->span, "the sum");
                xf_note(c, ch->ored->span, "the contraction");
                return false;
            }
        }
    }
    /* the exponentials p */
    nest_parse(top_of(ch->pstmt), &ch->pn);
    sch = scheduled_in(ch->pn.top);
    if (sch) {
        xf_err(c, "the nest of %s has been scheduled; apply online_softmax before other moves on it", ch->p->name);
        xf_note(c, sch->span, "here");
        return false;
    }
    if (ch->pn.n != ch->R + 1 || ch->pn.body->n != 1 || ch->pn.body->v[0] != ch->pstmt) {
        xf_err(c, "the nest of %s is not one plain statement inside its loops", ch->p->name);
        xf_note(c, ch->pstmt->span, "%s", ch->p->name);
        return false;
    }
    for (int d = 0; d < ch->p->rank; d++) {
        const Var *v = pure(ch->pstmt->u.stmt.idx, d);
        if (!v || !nest_loop(&ch->pn, v)) {
            xf_err(c, "%s is not indexed by its loops", ch->p->name);
            return false;
        }
        vmap_add(&ch->pv, v, ir_var(k, (Var *)(pmap[d] < 0 ? ch->J : ch->row[pmap[d]])));
    }
    if (!same_bounds(ch, &ch->pn, NULL, &ch->pv, "exponential"))
        return false;
    /* the maximum m, as indexed by the exponent */
    const Var *mrow[OS_MAXR];
    Expr *mload = ch->pstmt->u.stmt.value->args[0]->args[1];
    if (ch->m->rank != ch->R) {
        xf_err(c, "%s and %s have different ranks", ch->m->name, ch->l->name);
        return false;
    }
    for (int d = 0; d < ch->R; d++) {
        Expr *x = vmap_expr(k, &ch->pv, mload->u.load.idx[d]);
        mrow[d] = x->kind == IE_VAR && x->u.var != ch->J ? x->u.var : NULL;
        if (!mrow[d]) {
            xf_err(c, "the exponent reads %s at other indices than the rows", ch->m->name);
            xf_note(c, ch->pstmt->span, "the exponent");
            return false;
        }
    }
    if (!reduction_nest(ch, ch->m, SOP_MAX, -INFINITY, "maximum", &ch->mn, &ch->minit, &ch->mred, ch->mg, &ch->nmg,
                        mrow, &ch->mv))
        return false;
    /* the exponent subtracts the maximum from what was maximised */
    Expr *em = vmap_expr(k, &ch->mv, ch->mred->u.stmt.value);
    Expr *ep = vmap_expr(k, &ch->pv, ch->pstmt->u.stmt.value->args[0]->args[0]);
    if (!xf_expr_equal(k, em, ep)) {
        xf_err(c, "the exponent of %s subtracts the maximum %s from another value than the one maximised",
               ch->p->name, ch->m->name);
        xf_note(c, ch->mred->span, "the maximum");
        xf_note(c, ch->pstmt->span, "the exponent");
        return false;
    }
    /* one set of terms: the same masks */
    if (!same_masks(ch, ch->mg, ch->nmg, &ch->mv, "maximum") || !same_masks(ch, ch->lg, ch->nlg, &ch->lv, "sum"))
        return false;
    /* order and readers */
    int im = top_index(k, ch->mn.top), ip = top_index(k, ch->pn.top), il = top_index(k, ch->ln.top),
        io = top_index(k, ch->on.top);
    if (im < 0 || ip < 0 || il < 0 || io < 0 || !(im < ip && ip < il && il < io)) {
        xf_err(c, "the nests of %s, %s, %s and the contraction are not in that order at the top level", ch->m->name,
               ch->p->name, ch->l->name);
        return false;
    }
    Buffer *inter[3] = {ch->m, ch->p, ch->l};
    Node *okr[3][2] = {{ch->pstmt, NULL}, {ch->lred, ch->ored}, {ch->ored, NULL}};
    for (int i = 0; i < 3; i++) {
        if (inter[i]->kind != BUF_TEMP) {
            xf_err(c, "%s is an output of the kernel; its values would change", inter[i]->name);
            return false;
        }
        Node *s = stray_reader(ch, inter[i], okr[i], okr[i][1] ? 2 : 1);
        if (s) {
            xf_err(c, "%s is also read outside the softmax chain", inter[i]->name);
            xf_note(c, s->span, "read here");
            return false;
        }
    }
    if (ch->A == ch->m || ch->A == ch->p || ch->A == ch->l)
        return false;
    Node *aw[2];
    for (int i = 0; i < ch->all.n; i++) {
        const Access *a = &ch->all.v[i];
        if (a->buf == ch->A && top_of(a->stmt) != ch->on.top) {
            xf_err(c, "%s is also %s outside the contraction's nest", ch->A->name, a->write ? "written" : "read");
            xf_note(c, a->stmt->span, "here");
            return false;
        }
    }
    (void)aw;
    /* what the new nest evaluates must not read the chain's intermediates */
    Buffer *chainb[4] = {ch->m, ch->p, ch->l, ch->A};
    for (int b = 0; b < 4; b++) {
        if (ir_expr_reads(em, chainb[b])) {
            xf_err(c, "the value maximised reads %s", chainb[b]->name);
            return false;
        }
        for (int g = 0; g < ch->nog; g++)
            if (ir_expr_reads(ch->og[g]->u.guard.cond, chainb[b])) {
                xf_err(c, "the mask reads %s", chainb[b]->name);
                return false;
            }
        for (int i = 0; i < f.n; i++)
            if (f.leaf[i] != ch->pleaf && f.leaf[i] != ch->lleaf && ir_expr_reads(f.leaf[i], chainb[b])) {
                xf_err(c, "the term of the sum over %s reads %s besides the factors %s and 1/%s", ch->J->name,
                       chainb[b]->name, ch->p->name, ch->l->name);
                xf_note(c, ch->ored->span, "the sum");
                return false;
            }
        for (int i = 2; i < ob->n && b < 3; i++)
            if (ir_expr_reads(ob->v[i]->u.stmt.value, chainb[b])) {
                xf_err(c, "the statement after the sum over %s reads %s", ch->J->name, chainb[b]->name);
                return false;
            }
    }
    /* score temporaries computed per tile: those read at [row, j] by the score and
     * by nothing outside the chain, taken transitively */
    Node *readers[2 + OS_MAXX];
    int nreaders = 2;
    readers[0] = ch->mred;
    readers[1] = ch->pstmt;
    Buffer *cand[32];
    int ncand = 0;
    temp_loads(em, cand, &ncand, 32);
    for (int ci = 0; ci < ncand && ch->nx < OS_MAXX; ci++) {
        Buffer *t = cand[ci];
        const Var *idx[16] = {0};
        bool seen = false;
        int jd = -1;
        bool ok = t->rank <= 16 && canon_index(ch, em, t, idx, &seen, &jd) &&
                  canon_index(ch, ep, t, idx, &seen, &jd);
        for (int x = 0; x < ch->nx && ok; x++) {
            Node *body = ch->xn[x].loop[ch->xn[x].n - 1];
            for (int b = 0; b < body->u.loop.body.n && ok; b++)
                ok = canon_index_node(ch, vmap_node(k, &ch->xv[x], body->u.loop.body.v[b]), t, idx, &seen, &jd);
        }
        if (!ok || !seen || !absorbable(ch, t, readers, nreaders, idx, jd))
            continue;
        Nest *xn = &ch->xn[ch->nx - 1];
        readers[nreaders++] = xn->loop[xn->n - 1];
        temp_loads_node(xn->loop[xn->n - 1], cand, &ncand, 32);
    }
    /* producers run in kernel order within a tile (t = s + bias after s) */
    for (int a = 1; a < ch->nx; a++)
        for (int b = a; b > 0 && top_index(k, ch->xn[b].top) < top_index(k, ch->xn[b - 1].top); b--) {
            Buffer *tb = ch->xb[b];
            Nest tn = ch->xn[b];
            VMap tv = ch->xv[b];
            int tj = ch->xj[b];
            ch->xb[b] = ch->xb[b - 1], ch->xn[b] = ch->xn[b - 1], ch->xv[b] = ch->xv[b - 1], ch->xj[b] = ch->xj[b - 1];
            ch->xb[b - 1] = tb, ch->xn[b - 1] = tn, ch->xv[b - 1] = tv, ch->xj[b - 1] = tj;
        }
    if (!movable(ch, ch->mn.top, "maximum") || !movable(ch, ch->pn.top, "exponential") ||
        !movable(ch, ch->ln.top, "sum"))
        return false;
    for (int x = 0; x < ch->nx; x++)
        if (!movable(ch, ch->xn[x].top, "score"))
            return false;
    return true;
}

/* ---------------- the rewrite ---------------- */

typedef struct Retile {
    Kernel *k;
    Buffer *b[OS_MAXX + 1];
    int jd[OS_MAXX + 1];
    int n;
    Var *ji;
} Retile;

static void retile_idx(Retile *r, Buffer *b, Expr **idx)
{
    for (int i = 0; i < r->n; i++)
        if (b == r->b[i])
            idx[r->jd[i]] = ir_var(r->k, r->ji);
}

static void retile_cb(Expr *e, void *p)
{
    if (e->kind == IE_LOAD)
        retile_idx(p, e->u.load.buf, e->u.load.idx);
}

static bool retile_stmt(Node *n, void *p)
{
    if (n->kind == N_STMT)
        retile_idx(p, n->u.stmt.buf, n->u.stmt.idx);
    return true;
}

static void retile_tree(Retile *r, Node *n)
{
    xf_visit_exprs(r->k, n, retile_cb, r);
    /* stores: walk the subtree */
    if (n->kind == N_STMT) {
        retile_stmt(n, r);
        return;
    }
    NodeList *b = ir_body(n);
    for (int i = 0; b && i < b->n; i++)
        retile_tree(r, b->v[i]);
}

typedef struct Emit {
    Chain *ch;
    Kernel *k;
    Var *jo;
    int64_t T, lo, hi;
    bool tail;
    /* mask=inf: the mask (canonical variables, NULL when the chain has none) selects
     * -inf into the maximum and 0 into the exponentials instead of guarding them */
    bool inf;
    Expr *mask;
    Expr *umask;    /* the user's part of it (without the tail's j < end) */
    Retile rt;
} Emit;

/* A loop over one tile: `for ji in 0..T { [if j < hi] [masks] nodes }`, with the
 * tiled buffers indexed by ji and the canonical j replaced by lo + jo*T + ji. */
static Node *stage(Emit *em, const char *base, Node *const *nodes, int n, Node *const *conds, int nconds, Span sp)
{
    Kernel *k = em->k;
    Var *ji = ir_new_var(k, xf_fresh_name(k, arena_printf(k->arena, "%si", base)));
    Node *loop = ir_loop(k, ji, ir_int(k, 0), ir_int(k, em->T), sp);
    Node *holder = loop;
    Expr *j = xf_simplify_affine(
        k, ir_bin(k, IE_ADD, ir_bin(k, IE_MUL, ir_var(k, em->jo), ir_int(k, em->T)), ir_var(k, ji)));
    if (em->lo)
        j = xf_simplify_affine(k, ir_bin(k, IE_ADD, j, ir_int(k, em->lo)));
    if (em->tail) {
        Node *g = ir_guard(k, ir_bin(k, IE_LT, ir_clone_expr(k, j), ir_clone_expr(k, em->ch->oj->u.loop.hi)), sp);
        ir_list_push(ir_body(holder), g, holder);
        holder = g;
    }
    for (int i = 0; i < nconds; i++) {
        Node *g = ir_guard(k, ir_clone_expr(k, conds[i]->u.guard.cond), conds[i]->span);
        ir_list_push(ir_body(holder), g, holder);
        holder = g;
    }
    for (int i = 0; i < n; i++)
        ir_list_push(ir_body(holder), nodes[i], holder);
    em->rt.ji = ji;
    retile_tree(&em->rt, loop);
    xf_subst_tree(k, loop, em->ch->J, j);
    return loop;
}

/* A fresh copy of an index list: statements never share index nodes. */
static Expr **cidx(Kernel *k, Expr *const *idx, int rank)
{
    Expr **c = arena_alloc(k->arena, sizeof(Expr *) * (size_t)(rank ? rank : 1));
    for (int i = 0; i < rank; i++)
        c[i] = ir_clone_expr(k, idx[i]);
    return c;
}

static Expr *load_at(Kernel *k, Buffer *b, Expr *const *idx)
{
    Expr *c[16];
    for (int i = 0; i < b->rank; i++)
        c[i] = ir_clone_expr(k, idx[i]);
    return ir_load(k, b, c);
}

/* m where it is finite, 0 where it is still -inf (no term seen yet). */
static Expr *safe_max(Kernel *k, Buffer *m, Expr *const *idx)
{
    DType t = m->dtype;
    return ir_select(k, ir_bin(k, IE_EQ, load_at(k, m, idx), ir_flt(k, -INFINITY, t)), ir_flt(k, 0.0, t),
                     load_at(k, m, idx));
}

/* A copy of the free loops of the contraction (those inside the rows) with fresh
 * variables named base + suffix, around `nodes`; vars/withs receive the renaming. */
static Node *free_copy(Emit *em, const char *suffix, VMap *ren)
{
    Chain *ch = em->ch;
    Kernel *k = em->k;
    Node *top = NULL, *cur = NULL;
    for (int i = ch->R; i < ch->on.n; i++) {
        Node *o = ch->on.loop[i];
        Var *v = ir_new_var(k, xf_fresh_name(k, arena_printf(k->arena, "%s%s", o->u.loop.var->name, suffix)));
        vmap_add(ren, o->u.loop.var, ir_var(k, v));
        Node *l = ir_loop(k, v, ir_clone_expr(k, o->u.loop.lo), ir_clone_expr(k, o->u.loop.hi), o->span);
        if (cur)
            ir_list_push(&cur->u.loop.body, l, cur);
        else
            top = l;
        cur = l;
    }
    return top;
}

static void push_under(Node *holder, NodeList *list, Node *n) { ir_list_push(list, n, holder); }

/* Whether guard g tests the chain's mask or one of its conjuncts (canonical
 * variables). */
static bool mask_guard(Emit *em, const Node *g)
{
    if (g->kind != N_IF || g->u.guard.els.n || !em->mask)
        return false;
    for (const Expr *m = em->mask;; m = m->args[0]) {
        if (xf_expr_equal(em->k, g->u.guard.cond, m) ||
            (m->kind == IE_AND && xf_expr_equal(em->k, g->u.guard.cond, m->args[1])))
            return true;
        if (m->kind != IE_AND)
            return false;
    }
}

/* mask=inf: the nodes of a score element with the guards that test the mask taken
 * away (their children in their place), so every score of the tile is computed;
 * the ones the mask excludes are never read, since the maximum and the exponentials
 * select past them. */
static void unmask(Emit *em, Node *n, Node **out, int *nout, int cap)
{
    if (em->inf && mask_guard(em, n)) {
        for (int i = 0; i < n->u.guard.body.n; i++)
            unmask(em, n->u.guard.body.v[i], out, nout, cap);
        return;
    }
    if (*nout < cap)
        out[(*nout)++] = n;
}

/* The tile guard of mask=inf: a condition that holds for tile jo and row I when some
 * j of the tile passes the mask.  Each conjunct affine in j is tested at the j of the
 * tile that makes it easiest to pass (the first j where it bounds j from above, the
 * last where from below); a conjunct without j is kept as it is; others (an
 * equality, a modulus, anything not affine) are left out, which only makes the guard
 * weaker.  NULL when nothing is left. */
static Expr *tile_cond(Emit *em, const Expr *m)
{
    Kernel *k = em->k;
    if (m->kind == IE_AND) {
        Expr *a = tile_cond(em, m->args[0]), *b = tile_cond(em, m->args[1]);
        return a && b ? ir_bin(k, IE_AND, a, b) : a ? a : b;
    }
    if (m->kind != IE_LT && m->kind != IE_LE && m->kind != IE_GT && m->kind != IE_GE)
        return NULL;
    ArAff l, r;
    if (!ar_aff_of(k, m->args[0], &l) || !ar_aff_of(k, m->args[1], &r))
        return NULL;
    int64_t kj = ar_aff_coef(&l, em->ch->J->id) - ar_aff_coef(&r, em->ch->J->id);
    if (kj == 0)
        return ir_clone_expr(k, m);
    /* lhs - rhs grows with j: `<` and `<=` pass most easily at the first j */
    bool first = (kj > 0) == (m->kind == IE_LT || m->kind == IE_LE);
    Expr *j = ir_bin(k, IE_ADD, ir_bin(k, IE_MUL, ir_var(k, em->jo), ir_int(k, em->T)),
                     ir_int(k, em->lo + (first ? 0 : em->T - 1)));
    const Var *J = em->ch->J;
    Expr *with = xf_simplify_affine(k, j);
    return xf_subst_expr(k, m, &J, &with, 1);
}

static void rewrite(Emit *em)
{
    Chain *ch = em->ch;
    Kernel *k = em->k;
    /* canonical indices of m and l (and of the rescaling factor, which mirrors m) */
    Expr *mi[OS_MAXR], *li[OS_MAXR];
    for (int d = 0; d < ch->R; d++) {
        mi[d] = vmap_expr(k, &ch->mv, ch->minit->u.stmt.idx[d]);
        li[d] = ir_var(k, (Var *)ch->row[d]);
    }
    Buffer *a = ir_add_buffer(k, xf_fresh_buffer_name(k, arena_printf(k->arena, "%s_scale", ch->m->name)), ch->m->dtype,
                              BUF_TEMP, ch->m->rank, ch->m->span);
    a->mem = ch->m->mem;
    for (int d = 0; d < ch->m->rank; d++)
        a->shape[d] = ir_clone_expr(k, ch->m->shape[d]);
    DType ad = dtype_compute(ch->A->dtype);

    /* tiled buffers: p and the score temporaries lose their j extent */
    em->rt.k = k;
    em->rt.b[0] = ch->p;
    em->rt.jd[0] = ch->pj;
    em->rt.n = 1;
    for (int x = 0; x < ch->nx; x++) {
        em->rt.b[em->rt.n] = ch->xb[x];
        em->rt.jd[em->rt.n++] = ch->xj[x];
    }
    for (int i = 0; i < em->rt.n; i++)
        em->rt.b[i]->shape[em->rt.jd[i]] = ir_int(k, em->T);

    Node *row = ch->on.loop[ch->R - 1];
    NodeList *rb = &row->u.loop.body;
    Node *firstfree = ch->R < ch->on.n ? ch->on.loop[ch->R] : NULL;
    Node *lastfree = ch->on.loop[ch->on.n - 1];
    Node *oinit = ch->oinit, *ored = ch->ored;
    Node *posts[64];
    int npost = 0;
    for (int i = 2; i < ch->on.body->n && npost < 64; i++)
        posts[npost++] = ch->on.body->v[i];
    Node *og[OS_MAXG];
    for (int i = 0; i < ch->nog; i++)
        og[i] = ch->og[i];
    rb->n = 0;

    /* row start: m = -inf, l = 0, A = 0 */
    push_under(row, rb, vmap_node(k, &ch->mv, ch->minit));
    push_under(row, rb, vmap_node(k, &ch->lv, ch->linit));
    VMap ren = {0};
    Node *init = free_copy(em, "_init", &ren);
    Node *oi = vmap_node(k, &ren, oinit);
    if (init) {
        Node *in = init;
        while (in->u.loop.body.n)
            in = in->u.loop.body.v[0];
        push_under(in, &in->u.loop.body, oi);
        push_under(row, rb, init);
    } else
        push_under(row, rb, oi);

    /* the tile loop */
    int64_t ntiles = (em->hi - em->lo + em->T - 1) / em->T;
    Node *jol = ir_loop(k, em->jo, ir_int(k, 0), ir_int(k, ntiles), ch->oj->span);
    NodeList *jb = &jol->u.loop.body;
    for (int x = 0; x < ch->nx; x++) {
        Node *inner = ch->xn[x].loop[ch->xn[x].n - 1];
        Node *body[64];
        int nb = 0;
        for (int i = 0; i < inner->u.loop.body.n && nb < 64; i++)
            unmask(em, vmap_node(k, &ch->xv[x], inner->u.loop.body.v[i]), body, &nb, 64);
        /* one stage loop per statement of the producer's element (its `= 0` and
         * its reduction loop): each element is independent of the others, so they
         * may run statement by statement, and a schedule can treat each alone */
        const char *base = ch->xn[x].loop[ch->xj[x]]->u.loop.var->name;
        for (int i = 0; i < nb; i++)
            push_under(jol, jb, stage(em, base, &body[i], 1, NULL, 0, inner->span));
    }
    Span msp = ch->mred->span;
    push_under(jol, jb, ir_stmt(k, a, cidx(k, mi, a->rank), SOP_ASSIGN, load_at(k, ch->m, mi), msp));
    Node *mred = vmap_node(k, &ch->mv, ch->mred);
    Node *mg[OS_MAXG];
    for (int i = 0; i < ch->nmg; i++)
        mg[i] = vmap_node(k, &ch->mv, ch->mg[i]);
    Node *mj = ch->mn.body->v[1];
    if (em->inf && em->mask)
        mred->u.stmt.value = ir_select(k, ir_clone_expr(k, em->mask), mred->u.stmt.value,
                                       ir_flt(k, -INFINITY, mred->u.stmt.value->dtype));
    push_under(jol, jb, stage(em, mj->u.loop.var->name, &mred, 1, mg, em->inf ? 0 : ch->nmg, mj->span));
    Expr *fac = ir_un(k, IE_EXP, ir_bin(k, IE_SUB, load_at(k, a, mi), safe_max(k, ch->m, mi)));
    push_under(jol, jb, ir_stmt(k, a, cidx(k, mi, a->rank), SOP_ASSIGN, fac, msp));
    push_under(jol, jb, ir_stmt(k, ch->l, cidx(k, li, ch->l->rank), SOP_MUL, ir_cast(k, load_at(k, a, mi), dtype_compute(ch->l->dtype)),
                                ch->lred->span));
    Node *ps = vmap_node(k, &ch->pv, ch->pstmt);
    Expr *sub = ps->u.stmt.value->args[0];
    sub->args[1] = safe_max(k, ch->m, mi);
    if (em->inf && em->mask)
        ps->u.stmt.value = ir_select(k, ir_clone_expr(k, em->mask), ps->u.stmt.value,
                                     ir_flt(k, 0.0, ps->u.stmt.value->dtype));
    Node *pl = ch->pn.loop[ch->pn.n - 1];
    Node *pjl = NULL;
    for (int i = 0; i < ch->pn.n; i++)
        if (ch->pv.to[i]->u.var == ch->J)
            pjl = nest_loop(&ch->pn, ch->pv.from[i]);
    push_under(jol, jb, stage(em, (pjl ? pjl : pl)->u.loop.var->name, &ps, 1, NULL, 0, ch->pstmt->span));
    Node *lred = vmap_node(k, &ch->lv, ch->lred);
    Node *lg[OS_MAXG];
    for (int i = 0; i < ch->nlg; i++)
        lg[i] = vmap_node(k, &ch->lv, ch->lg[i]);
    Node *lj = ch->ln.body->v[1];
    push_under(jol, jb, stage(em, lj->u.loop.var->name, &lred, 1, lg, em->inf ? 0 : ch->nlg, lj->span));

    /* the contraction: rescale the partial product, then add the tile's terms */
    Node *scale = ir_stmt(k, ch->A, cidx(k, ored->u.stmt.idx, ch->A->rank), SOP_MUL, ir_cast(k, load_at(k, a, mi), ad), ored->span);
    Expr *val = ir_clone_expr(k, ored->u.stmt.value);
    /* the clone has fresh nodes: find the leaves again by position */
    XfFactors f0 = {0}, f1 = {0};
    xf_factors(ored->u.stmt.value, false, &f0);
    xf_factors(val, false, &f1);
    Expr *pleaf = NULL, *lleaf = NULL;
    for (int i = 0; i < f0.n; i++) {
        if (f0.leaf[i] == ch->pleaf)
            pleaf = f1.leaf[i];
        if (f0.leaf[i] == ch->lleaf)
            lleaf = f1.leaf[i];
    }
    val = drop_factor(k, val, lleaf);
    (void)pleaf;
    Node *upd = ir_stmt(k, ch->A, cidx(k, ored->u.stmt.idx, ch->A->rank), SOP_ADD, val, ored->span);
    Node *ost = stage(em, ch->J->name, &upd, 1, og, em->inf ? 0 : ch->nog, ch->oj->span);
    if (firstfree) {
        NodeList *lb = &lastfree->u.loop.body;
        lb->n = 0;
        push_under(lastfree, lb, scale);
        push_under(lastfree, lb, ost);
        push_under(jol, jb, firstfree);
    } else {
        push_under(jol, jb, scale);
        push_under(jol, jb, ost);
    }
    Expr *tc = em->inf && em->umask ? tile_cond(em, em->umask) : NULL;
    if (tc) {
        Node *g = ir_guard(k, tc, ch->oj->span);
        g->u.guard.skip = true;
        for (int i = 0; i < jb->n; i++)
            ir_list_push(&g->u.guard.body, jb->v[i], g);
        jb->n = 0;
        push_under(jol, jb, g);
    }
    push_under(row, rb, jol);
    if (em->inf && em->mask != em->umask)
        xf_pad_mark(k, jol, em->jo, em->jo);

    /* normalise: A / l where some term was summed (l > 0), then what followed the sum */
    VMap nren = {0};
    Node *norm = free_copy(em, "_norm", &nren);
    Expr *aload = vmap_expr(k, &nren, ir_load(k, ch->A, cidx(k, ored->u.stmt.idx, ch->A->rank)));
    Expr *lload = ir_cast(k, load_at(k, ch->l, li), ad);
    Expr *nv = ir_select(k, ir_bin(k, IE_EQ, ir_clone_expr(k, lload), ir_flt(k, 0.0, ad)), ir_clone_expr(k, aload),
                         ir_bin(k, IE_DIV, aload, lload));
    Expr *nidx[16];
    for (int d = 0; d < ch->A->rank; d++)
        nidx[d] = vmap_expr(k, &nren, ored->u.stmt.idx[d]);
    Node *ns = ir_stmt(k, ch->A, nidx, SOP_ASSIGN, nv, ored->span);
    Node *nh = norm;
    NodeList *nl = rb;
    if (norm) {
        while (nh->u.loop.body.n)
            nh = nh->u.loop.body.v[0];
        nl = &nh->u.loop.body;
    } else
        nh = row;
    push_under(nh, nl, ns);
    for (int i = 0; i < npost; i++)
        push_under(nh, nl, vmap_node(k, &nren, posts[i]));
    if (norm)
        push_under(row, rb, norm);

    /* the moved nests go */
    Node *gone[3 + OS_MAXX];
    int ngone = 0;
    gone[ngone++] = ch->mn.top;
    gone[ngone++] = ch->pn.top;
    gone[ngone++] = ch->ln.top;
    for (int x = 0; x < ch->nx; x++)
        gone[ngone++] = ch->xn[x].top;
    for (int g = 0; g < ngone; g++) {
        int at = top_index(k, gone[g]);
        if (at >= 0)
            ir_list_remove(&k->body, at);
    }
}

bool xf_online_softmax(XfCtx *c)
{
    const SchedArg *mk = xf_kwarg(c, "mask");
    if (xf_npos(c) != 3 || c->nargs != 3 + (mk != NULL)) {
        xf_err(c, "usage: %s", xf_synopsis(xf_from_name(c->it->name)));
        return false;
    }
    bool inf = false;
    if (mk) {
        /* `inf` may read as the float infinity */
        const char *v = mk->kind == SARG_NAME ? mk->name : mk->kind == SARG_FLOAT && isinf(mk->fval) ? "inf" : "";
        if (strcmp(v, "inf") && strcmp(v, "guard")) {
            xf_err(c, "mask= takes `guard` (the mask stays a guard on each statement) or `inf` (masked scores "
                      "become -inf, so every statement runs on the whole tile)");
            return false;
        }
        inf = strcmp(v, "inf") == 0;
    }
    int64_t T;
    if (!xf_arg_int(c, 2, &T))
        return false;
    if (T < 1 || T > (1 << 20)) {
        xf_err(c, "the tile must be 1 to 2^20 iterations of j");
        return false;
    }
    Chain ch = {.c = c, .k = c->k};
    bool ok = analyse(&ch);
    for (int i = 0; ok && i < c->k->body.n; i++)
        if (xf_padded_within(c->k->body.v[i])) {
            xf_err(c, "the kernel has loops padded with tail=pad; apply online_softmax first");
            ok = false;
        }
    int64_t lo = 0, hi = 0;
    if (ok && (!xf_const(c->k, ch.oj->u.loop.lo, &lo) || !xf_const(c->k, ch.oj->u.loop.hi, &hi) || hi <= lo)) {
        xf_err(c, "the range of %s must be known (bind its sizes with -D)", ch.J->name);
        ok = false;
    }
    if (ok && !c->dry) {
        Emit em = {.ch = &ch, .k = c->k, .T = T < hi - lo ? T : hi - lo, .lo = lo, .hi = hi, .inf = inf};
        em.tail = (hi - lo) % em.T != 0;
        for (int i = 0; inf && i < ch.nmg; i++) {
            Expr *g = vmap_expr(c->k, &ch.mv, ch.mg[i]->u.guard.cond);
            em.mask = em.mask ? ir_bin(c->k, IE_AND, em.mask, g) : g;
        }
        em.umask = em.mask;
        /* mask=inf and a last tile past the end: the keys past it are masked like the
         * user's (j < end joins the mask), so no stage needs a guard; what they load
         * past the end of a buffer is marked guarded and reads 0, and the selects keep
         * it out of the maximum, the exponentials and so of the sum and the product */
        if (inf && em.tail) {
            Expr *in = ir_bin(c->k, IE_LT, ir_var(c->k, ch.J), ir_clone_expr(c->k, ch.oj->u.loop.hi));
            em.mask = em.mask ? ir_bin(c->k, IE_AND, em.mask, in) : in;
            em.tail = false;
        }
        em.jo = ir_new_var(c->k, xf_fresh_name(c->k, arena_printf(c->k->arena, "%so", ch.J->name)));
        rewrite(&em);
    }
    acc_free(&ch.all);
    return ok;
}
