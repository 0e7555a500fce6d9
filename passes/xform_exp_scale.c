/* exp_scale(buffer): a positive scale of a softmax's scores moves into its
 * exponentials.  After factor_out, attention scales every score once (`s *= c`,
 * c = 1/sqrt(D)) and the softmax then only takes maxima of the scores and
 * exponentials of their differences.  Since c > 0, max(c·x) = c·max(x) and
 * exp(c·x − c·y) = exp(c·(x − y)): the scale statement goes, the scores and every
 * maximum taken of them stay unscaled, and each exponential of such a difference
 * becomes exp(c·(x − y)).  A GPU then computes 2^(x·c·log2 e − y·c·log2 e) with one
 * fused multiply-add a score, where before it also multiplied every score by c.
 *
 * The proof is a walk over the kernel in program order that follows which buffers
 * hold "scaled" values (values the rewrite divides by c: the scores after the scale
 * statement, and what is copied or maximised from them) and checks that such a value
 * is only ever
 *   - copied (`m_old = m`) or folded into a maximum or minimum (`m max= s`) of a
 *     temporary, which then holds a scaled value too (its start, ±inf or 0, is the
 *     same scaled or not);
 *   - one side of a difference inside an exponential whose other side is scaled as
 *     well (`exp(s − m)`, or `exp(s − select(m == -inf, 0, m))`: a select of scaled
 *     values or 0, on a condition that compares scaled values with 0 or ±inf);
 *   - compared with 0 or ±inf.
 * A buffer whose state differs between the paths that reach a read (a guard, a
 * loop's first and later iterations) holds neither and may not be read as scaled
 * or unscaled.  Refused: c not a positive constant of the kernel (sizes are at
 * least 1, so sqrt, rsqrt, products and quotients of sizes and positive literals
 * are), more than one scale statement of the buffer, a scaled value reaching an
 * output or anything but the uses above.  The exponentials round differently in the
 * last bits (c·(x − y) against c·x − c·y). */
#include <stdlib.h>
#include <string.h>

#include "xform_int.h"

/* unscaled (or unrelated); scaled; 0 or ±inf, the same either way; depends on the path */
enum { S_NON, S_FAM, S_ZERO, S_UNK };

typedef struct {
    XfCtx *c;
    Buffer *X;
    Node *scale;
    uint8_t *st;            /* per buffer id */
    uint8_t *inv;           /* per buffer id: its state was relied on (uniform() checks it) */
    int nb;
    bool bad, record;
    Expr **exps;            /* the exponentials to rewrite (final pass) */
    int nexp, capexp;
} Es;

static bool positive(const Expr *e)
{
    switch (e->kind) {
    case IE_FLT: return e->u.f > 0;
    case IE_INT: return e->u.i > 0;
    case IE_PARAM: return true;   /* sizes are at least 1 */
    case IE_EXP: return true;
    case IE_CAST: case IE_SQRT: case IE_RSQRT: return positive(e->args[0]);
    case IE_MUL: case IE_DIV: case IE_ADD: return positive(e->args[0]) && positive(e->args[1]);
    default: return false;
    }
}

/* 0 or ±inf: the same value scaled or not. */
static bool invariant_const(const Expr *e)
{
    while (e->kind == IE_CAST) e = e->args[0];
    return e->kind == IE_FLT && (e->u.f == 0 || e->u.f == 1.0 / 0.0 || e->u.f == -1.0 / 0.0);
}

static const Expr *strip(const Expr *e)
{
    while (e->kind == IE_CAST && dtype_is_float(e->dtype)) e = e->args[0];
    return e;
}

static int state_of(Es *s, const Buffer *b) { return s->st[b->id]; }

static void fail(Es *s, Span sp, const char *why, const Buffer *b)
{
    if (s->bad || !s->record)
        return;
    s->bad = true;
    xf_err(s->c, "%s %s", why, b->name);
    xf_note(s->c, sp, "here");
}

/* A term that is scaled wherever it is read: a load of a scaled buffer, 0 or ±inf,
 * or a select between such terms on an invariant condition. */
static bool cond_ok(Es *s, const Expr *e);
static bool indep(Es *s, const Expr *e);
static bool fam_term(Es *s, const Expr *e)
{
    e = strip(e);
    if (e->kind == IE_LOAD) {
        bool f = state_of(s, e->u.load.buf) == S_FAM || state_of(s, e->u.load.buf) == S_ZERO;
        if (f)
            s->inv[e->u.load.buf->id] = 1;
        return f;
    }
    if (invariant_const(e))
        return true;
    if (e->kind == IE_SELECT)
        return (cond_ok(s, e->args[0]) || indep(s, e->args[0])) && fam_term(s, e->args[1]) &&
               fam_term(s, e->args[2]) && !(invariant_const(e->args[1]) && invariant_const(e->args[2]));
    return false;
}

/* Whether e reads some buffer that holds scaled values (or may). */
static bool reads_scaled(Es *s, const Expr *e)
{
    if (!e)
        return false;
    if (e->kind == IE_LOAD) {
        int st = state_of(s, e->u.load.buf);
        if (st == S_FAM || st == S_UNK)
            return true;
        for (int i = 0; i < e->u.load.buf->rank; i++)
            if (reads_scaled(s, e->u.load.idx[i]))
                return true;
        return false;
    }
    for (int i = 0; i < 3; i++)
        if (reads_scaled(s, e->args[i]))
            return true;
    return false;
}

/* A condition on nothing the scale touches (a mask on the indices): the same either way. */
static bool indep(Es *s, const Expr *e) { return !reads_scaled(s, e); }

/* A comparison of a scaled term with 0 or ±inf (its truth is the same scaled or not). */
static bool cond_ok(Es *s, const Expr *e)
{
    if (e->kind == IE_AND || e->kind == IE_OR)
        return cond_ok(s, e->args[0]) && cond_ok(s, e->args[1]);
    if (e->kind < IE_LT || e->kind > IE_NE)
        return false;
    return (fam_term(s, e->args[0]) && invariant_const(e->args[1])) ||
           (fam_term(s, e->args[1]) && invariant_const(e->args[0]));
}

/* Whether e reads a scaled (or undecided) buffer outside the allowed uses, which
 * it reports; collects the exponentials to rewrite on the final pass. */
static void reads(Es *s, Expr *e, Span sp)
{
    if (!e || s->bad)
        return;
    if (e->kind == IE_EXP && e->args[0]->kind == IE_SUB) {
        Expr *d = e->args[0];
        bool a = fam_term(s, d->args[0]), b = fam_term(s, d->args[1]);
        if (a && b && !(invariant_const(d->args[0]) && invariant_const(d->args[1]))) {
            if (s->record) {
                if (s->nexp == s->capexp) {
                    s->capexp = s->capexp ? 2 * s->capexp : 8;
                    s->exps = xrealloc(s->exps, (size_t)s->capexp * sizeof *s->exps);
                }
                s->exps[s->nexp++] = e;
            }
            return;
        }
    }
    if (e->kind >= IE_LT && e->kind <= IE_NE && cond_ok(s, e))
        return;
    if (e->kind == IE_LOAD) {
        int st = state_of(s, e->u.load.buf);
        if (st == S_FAM)
            fail(s, sp, "a scaled value is used outside a maximum, a copy or exp(x - y): the scale would change it, in",
                 e->u.load.buf);
        else if (st == S_UNK)
            fail(s, sp, "scaled on some paths and not on others:", e->u.load.buf);
        for (int i = 0; i < e->u.load.buf->rank; i++)
            reads(s, e->u.load.idx[i], sp);
        return;
    }
    for (int i = 0; i < 3; i++)
        reads(s, e->args[i], sp);
}

static void stmt(Es *s, Node *n)
{
    Buffer *b = n->u.stmt.buf;
    for (int i = 0; i < b->rank; i++)
        reads(s, n->u.stmt.idx[i], n->span);
    if (n == s->scale) {
        s->st[b->id] = S_FAM;
        return;
    }
    const Expr *v = strip(n->u.stmt.value);
    /* a scaled value, or a select of scaled values and 0 or ±inf (a masked score) */
    bool copy = reads_scaled(s, v) && fam_term(s, v);
    int cur = state_of(s, b);
    StmtOp op = n->u.stmt.op;
    if (copy && (op == SOP_MAX || op == SOP_MIN || op == SOP_ASSIGN)) {
        /* a maximum of scaled values is scaled if it started from ±inf (or from
         * scaled values): the running value must hold a scaled value already */
        if (b->kind != BUF_TEMP)
            fail(s, n->span, "a scaled value is stored in", b);
        else if (op != SOP_ASSIGN && cur != S_FAM && cur != S_ZERO)
            fail(s, n->span, "a maximum of scaled values starts from a value that is not, in", b);
        s->st[b->id] = S_FAM;
        s->inv[b->id] = 1;
        return;
    }
    reads(s, n->u.stmt.value, n->span);
    if (op != SOP_ASSIGN && (cur == S_FAM || cur == S_UNK))
        fail(s, n->span, "a scaled value is updated by something other than a maximum in", b);
    /* ±inf or 0 stored: the same scaled or not (a running maximum or a sum may start
     * here); anything else stored or folded in is unscaled */
    s->st[b->id] = op == SOP_ASSIGN && invariant_const(n->u.stmt.value) ? S_ZERO : S_NON;
}

/* Two paths meet: a constant 0 or ±inf on one agrees with either state on the other. */
static void merge(uint8_t *into, const uint8_t *from, int n)
{
    for (int i = 0; i < n; i++)
        if (into[i] == S_ZERO)
            into[i] = from[i];
        else if (from[i] != S_ZERO && into[i] != from[i])
            into[i] = S_UNK;
}

static void list(Es *s, NodeList *l);
static void node(Es *s, Node *n)
{
    switch (n->kind) {
    case N_STMT: stmt(s, n); return;
    case N_IF: {
        reads(s, n->u.guard.cond, n->span);
        uint8_t *pre = xmalloc((size_t)s->nb);
        memcpy(pre, s->st, (size_t)s->nb);
        list(s, &n->u.guard.body);
        uint8_t *then = xmalloc((size_t)s->nb);
        memcpy(then, s->st, (size_t)s->nb);
        memcpy(s->st, pre, (size_t)s->nb);
        list(s, &n->u.guard.els);
        merge(s->st, then, s->nb);
        free(pre);
        free(then);
        return;
    }
    case N_LOOP: {
        reads(s, n->u.loop.lo, n->span);
        reads(s, n->u.loop.hi, n->span);
        /* the body's entry: before the loop, or after an iteration (to a fixed
         * point); the loop may also run no iteration */
        bool rec = s->record;
        uint8_t *entry = xmalloc((size_t)s->nb), *out = xmalloc((size_t)s->nb);
        memcpy(entry, s->st, (size_t)s->nb);
        /* each buffer's entry state changes at most twice (a constant, then one
         * state, then neither), so this reaches the fixed point */
        for (int it = 0; it < 2 * s->nb + 2; it++) {
            memcpy(s->st, entry, (size_t)s->nb);
            s->record = false;
            list(s, &n->u.loop.body);
            memcpy(out, s->st, (size_t)s->nb);
            merge(out, entry, s->nb);
            if (memcmp(out, entry, (size_t)s->nb) == 0)
                break;
            memcpy(entry, out, (size_t)s->nb);
        }
        s->record = rec;
        memcpy(s->st, entry, (size_t)s->nb);
        list(s, &n->u.loop.body);
        int64_t ext;
        if (!xf_const_extent(s->c->k, n, &ext) || ext < 1)
            merge(s->st, entry, s->nb);   /* it may run no iteration */
        free(entry);
        free(out);
        return;
    }
    default: return;
    }
}

static void list(Es *s, NodeList *l)
{
    for (int i = 0; l && i < l->n && !s->bad; i++)
        node(s, l->v[i]);
}

static bool find_scale(Node *n, void *p)
{
    Es *s = p;
    if (n->kind == N_STMT && n->u.stmt.buf == s->X && n->u.stmt.op == SOP_MUL) {
        if (s->scale) {
            xf_err(s->c, "%s is scaled by more than one statement", s->X->name);
            s->bad = true;
        }
        s->scale = n;
    }
    return true;
}

/* ---- every access of a buffer the walk relied on names the same elements ----
 *
 * The walk keeps one state a buffer, so a store must replace what every later read
 * of that buffer sees.  It does when all accesses of the buffer (stores and loads)
 * have the same index up to the loops below their common ancestor: each such loop
 * runs one dimension, bare, over the same bounds in every access (the scores' tile
 * `s[.., i, j]` for j in 0..64 in the zeroing, the sum, the scale, the maximum and
 * the exponentials), and every other index is the same expression of loops above. */

/* The loop below top (and above or at n) whose variable is v, or NULL. */
static Node *loop_below(const Node *top, Node *n, const Var *v)
{
    for (; n && n != top; n = n->parent)
        if (n->kind == N_LOOP && n->u.loop.var == v)
            return n;
    return NULL;
}

static bool uses_loop_below(const Node *top, Node *n, const Expr *e)
{
    for (; n && n != top; n = n->parent)
        if (n->kind == N_LOOP && ir_expr_uses_var(e, n->u.loop.var))
            return true;
    return false;
}

static bool uniform(XfCtx *c, const Buffer *b)
{
    Kernel *k = c->k;
    AccVec a = {0};
    acc_collect(k, NULL, &a);
    int n = 0;
    for (int i = 0; i < a.n; i++)   /* b's accesses only, in program order */
        if (a.v[i].buf == b)
            a.v[n++] = a.v[i];
    a.n = n;
    bool ok = true;
    /* the common ancestor (NULL: the kernel's top level) */
    Node *top = a.n ? a.v[0].stmt->parent : NULL;
    for (int i = 1; i < a.n; i++)
        while (top && !xf_contains(top, a.v[i].stmt))
            top = top->parent;
    for (int i = 1; i < a.n && ok; i++) {
        Node *si = a.v[i].stmt, *s0 = a.v[0].stmt;
        for (int d = 0; d < b->rank && ok; d++) {
            Expr *x = a.v[i].idx[d], *y = a.v[0].idx[d];
            Node *l = x->kind == IE_VAR ? loop_below(top, si, x->u.var) : NULL;
            Node *m = y->kind == IE_VAR ? loop_below(top, s0, y->u.var) : NULL;
            if (l || m)
                ok = l && m && xf_expr_equal(k, l->u.loop.lo, m->u.loop.lo) &&
                     xf_expr_equal(k, l->u.loop.hi, m->u.loop.hi);
            else
                ok = !uses_loop_below(top, si, x) && xf_expr_equal(k, x, y);
            /* a loop runs one dimension only */
            for (int e = 0; ok && l && e < d; e++)
                ok = a.v[i].idx[e]->kind != IE_VAR || a.v[i].idx[e]->u.var != x->u.var;
            if (!ok) {
                xf_err(c, "the accesses of %s do not all name the same elements (index %d), so a store need not "
                          "replace what a later read sees",
                       b->name, d + 1);
                xf_note(c, si->span, "this access");
                xf_note(c, s0->span, "and this one");
            }
        }
    }
    acc_free(&a);
    return ok;
}

bool xf_exp_scale(XfCtx *c)
{
    Buffer *X = xf_arg_buffer(c, 0);
    if (!X)
        return false;
    if (X->kind != BUF_TEMP || !dtype_is_float(X->dtype)) {
        xf_err(c, "%s is not a float temporary", X->name);
        return false;
    }
    Kernel *k = c->k;
    Es s = {.c = c, .X = X, .nb = k->nbufs};
    xf_walk(k, find_scale, &s);
    if (s.bad)
        return false;
    if (!s.scale) {
        xf_err(c, "no statement scales %s (`%s[..] *= c`: factor_out leaves one)", X->name, X->name);
        return false;
    }
    Expr *f = s.scale->u.stmt.value;
    if (s.scale->u.stmt.guarded || !xf_kernel_const(f) || !positive(f)) {
        xf_err(c, "the scale of %s is not a positive constant of the kernel", X->name);
        xf_note(c, s.scale->span, "the scale");
        return false;
    }
    s.st = xcalloc((size_t)s.nb, 1);
    s.inv = xcalloc((size_t)s.nb, 1);
    s.inv[X->id] = 1;
    s.record = true;
    list(&s, &k->body);
    for (int i = 0; i < s.nb && !s.bad; i++)
        if (s.inv[i] && !uniform(c, k->bufs[i]))
            s.bad = true;
    free(s.st);
    free(s.inv);
    if (!s.bad && s.nexp == 0) {
        xf_err(c, "no exponential of a difference of %s's values follows its scale", X->name);
        s.bad = true;
    }
    if (s.bad || c->dry) {
        free(s.exps);
        return !s.bad;
    }
    for (int i = 0; i < s.nexp; i++) {
        Expr *e = s.exps[i];
        DType t = e->args[0]->dtype;
        e->args[0] = ir_bin(k, IE_MUL, ir_cast(k, ir_clone_expr(k, f), t), e->args[0]);
    }
    free(s.exps);
    /* the scale goes, and the loops that held only it */
    Node *parent = s.scale->parent;
    NodeList *l = xf_list_of(k, s.scale);
    ir_list_remove(l, xf_index_in(k, s.scale));
    if (parent)
        xf_prune_empty(k, parent);
    return true;
}
