/* version: guard versioning.  A split whose factor may not divide the extent
 * leaves a guard such as `if ir*6 + iu < M` inside the unrolled and vector loops of
 * a register tile and inside the reduction loop around them: evaluated for every
 * row and every k, and as lane masks in vector loops, although it fails only in
 * the last tile.  So the body of a serial (or parallel) loop L becomes
 *
 *     if TEST            every hoisted guard holds for all inner iterations
 *       BODY, the hoisted guards marked `holds` (emitted as their bodies)
 *     else
 *       BODY as it was
 *
 * and, when every statement of the body lies under a hoisted guard, that sits in
 * `if ANY`, false when no hoisted guard can hold (a tile wholly past the edge).
 *
 * Where L is serial and TEST holds over a first run of its iterations (L's
 * variable with a positive coefficient in every conjunct: the full tiles before a
 * ragged edge, the reduction steps below a triangular mask's diagonal) or over a
 * last run (negative in every one), L's range is cut where TEST starts or stops
 * holding instead: the fast copy runs in a loop of its own over that run, keeping
 * L's variable, and the rest of the range runs BODY as it was (under `if ANY`) in
 * a loop with a fresh variable.  The iterations run in the same order, and no
 * test is left inside the loop (a 777^3 lower-triangular A·B, one thread, Zen 3:
 * 17.0-20.6 ms with the test at every reduction step, 7.0-7.2 ms cut).
 *
 * A guard is hoisted out of L when its condition is a conjunction of affine
 * comparisons, L is the innermost serial or parallel loop whose variable it uses,
 * the other inner variables it uses belong to unroll or vector loops of constant
 * bounds (TEST takes their worst values, ANY their best), and at least one loop
 * lies between L and the guard (else TEST would be the guard).  Each guard is thus
 * versioned at one loop only, and the code at most doubles per guarded tile level.
 *
 * In the fast copy, a loop bound `min(a, b)` that TEST decides (one side never
 * above the other wherever TEST holds: the tile copies `for c in 0..min(64, N -
 * jo*64)` of cache() at a ragged edge) becomes that side, so full tiles get the
 * constant trip counts that vectorize-tiles and unroll-small need (at 1037x769x511
 * every C tile was copied in and out element by element: the bound is not
 * constant, though it is 64 in all but the last panel).
 *
 * Legal because TEST and ANY read loop variables only (nothing the body writes),
 * TEST implies every hoisted guard wherever it is reached, so the `holds` marks
 * are true and the bounds it decides are equal there, and when ANY is false no
 * statement of the body can run.  Loops that a
 * later pass unrolls, vectorises or transposes are left alone, as are loops of one
 * iteration and loops inside vector loops. */
#include "cpu.h"
#include "xform_int.h"

#define MAX_HOISTED 64
#define MAX_INNER 16
#define MAX_FACTS 64

typedef struct Inner {
    int var;
    LoopKind kind;
    bool cst;
    int64_t lo, hi;          /* constant bounds when cst (hi exclusive) */
} Inner;

typedef struct Ver {
    Kernel *k;
    bool lean;
    Node *hoisted[MAX_HOISTED];
    int nh;
    Expr *test, *any;
    /* TEST's conjuncts, each terms <= bound (terms in variables bound outside L) */
    ArAff fact[MAX_FACTS];
    int64_t bound[MAX_FACTS];
    int nfacts;
} Ver;

static const Inner *inner_of(const Inner *in, int nin, int var)
{
    for (int i = nin - 1; i >= 0; i--)
        if (in[i].var == var)
            return &in[i];
    return NULL;
}

/* Adds to test the condition under which guard n holds for every value of the
 * inner variables, and ORs into any a condition without which it holds for none;
 * false when n is not hoistable out of L. */
static bool hoist_test(Ver *v, const Node *L, const Node *n, const Inner *in, int nin)
{
    Kernel *k = v->k;
    CpuCmp cmp[8];
    int nc = 0;
    if (!cpu_conjuncts(k, n->u.guard.cond, cmp, &nc, 8))
        return false;
    bool uses_l = false;
    for (int c = 0; c < nc; c++)
        for (int t = 0; t < cmp[c].d.n; t++) {
            if (cmp[c].d.k[t] == 0)
                continue;
            int x = cmp[c].d.var[t];
            const Inner *y = inner_of(in, nin, x);
            if (y) {
                if (!y->cst || (y->kind != LOOP_UNROLL && y->kind != LOOP_VECTOR))
                    return false;
            } else if (x == L->u.loop.var->id) {
                uses_l = true;
            }
        }
    if (!uses_l)
        return false;
    Expr *some = NULL;
    for (int c = 0; c < nc; c++) {
        int64_t worst = cmp[c].d.c, best = cmp[c].d.c;
        ArAff outer = {0};
        for (int t = 0; t < cmp[c].d.n; t++) {
            int64_t kk = cmp[c].d.k[t];
            if (kk == 0)
                continue;
            const Inner *y = inner_of(in, nin, cmp[c].d.var[t]);
            if (y) {
                worst += kk * (kk > 0 ? y->hi - 1 : y->lo);
                best += kk * (kk > 0 ? y->lo : y->hi - 1);
                continue;
            }
            outer.var[outer.n] = cmp[c].d.var[t];
            outer.k[outer.n++] = kk;
        }
        Expr *sum = cpu_aff_terms(k, &outer);
        if (!sum)
            sum = ir_int(k, 0);
        Expr *ok = ir_bin(k, IE_LE, sum, ir_int(k, cmp[c].lim - worst));
        if (v->nfacts < MAX_FACTS) {
            v->fact[v->nfacts] = outer;
            v->bound[v->nfacts++] = cmp[c].lim - worst;
        }
        v->test = v->test ? ir_bin(k, IE_AND, v->test, ok) : ok;
        Expr *may = ir_bin(k, IE_LE, ir_clone_expr(k, sum), ir_int(k, cmp[c].lim - best));
        some = some ? ir_bin(k, IE_AND, some, may) : may;
    }
    v->any = v->any ? ir_bin(k, IE_OR, v->any, some) : some;
    return true;
}

/* Collects the guards of list l (inside L, under the loops in[]) that can be
 * hoisted out of L. */
static void hoist_collect(Ver *v, const Node *L, NodeList *l, Inner *in, int nin)
{
    for (int i = 0; i < l->n; i++) {
        Node *n = l->v[i];
        if (n->kind == N_LOOP) {
            /* a nested parallel loop is emitted in a function of its own */
            if (n->u.loop.kind == LOOP_PARALLEL || nin == MAX_INNER)
                continue;
            ArAff lo, hi;
            Inner x = {.var = n->u.loop.var->id, .kind = n->u.loop.kind};
            x.cst = ar_aff_of(v->k, n->u.loop.lo, &lo) && ar_aff_of(v->k, n->u.loop.hi, &hi) && lo.n == 0 &&
                    hi.n == 0 && lo.c < hi.c;
            x.lo = x.cst ? lo.c : 0;
            x.hi = x.cst ? hi.c : 0;
            in[nin] = x;
            hoist_collect(v, L, &n->u.loop.body, in, nin + 1);
        } else if (n->kind == N_IF) {
            if (nin > 0 && v->nh < MAX_HOISTED && !n->u.guard.holds && !n->u.guard.els.n && hoist_test(v, L, n, in, nin))
                v->hoisted[v->nh++] = n;
            hoist_collect(v, L, &n->u.guard.body, in, nin);
        }
    }
}

/* True when every statement of list l lies inside one of the hoisted guards. */
static bool all_covered(const Ver *v, const NodeList *l)
{
    for (int i = 0; i < l->n; i++) {
        Node *n = l->v[i];
        bool in = false;
        for (int j = 0; j < v->nh && !in; j++)
            in = v->hoisted[j] == n;
        if (in)
            continue;
        if (n->kind == N_STMT || !all_covered(v, ir_body(n)))
            return false;
        if (n->kind == N_IF && !all_covered(v, &n->u.guard.els))
            return false;
    }
    return true;
}

/* Whether L is emitted as a loop around its body, where versioning applies. */
static bool versionable(const Ver *v, const Node *L)
{
    int64_t ext;
    LoopKind kind = L->u.loop.kind;
    if ((kind != LOOP_SERIAL && kind != LOOP_PARALLEL) || L->u.loop.hint != HINT_NONE)
        return false;
    if (kind == LOOP_SERIAL && cpu_const_extent(v->k, L->u.loop.lo, L->u.loop.hi, &ext) && ext <= 1)
        return false;
    if (kind == LOOP_SERIAL && v->lean &&
        (cpu_transpose_ok(v->k, L) || cpu_vectorize_ok(v->k, L) || cpu_unroll_ok(v->k, L)))
        return false;
    return true;
}

/* Whether d <= 0 wherever TEST holds: d a constant, or a positive multiple p/q
 * of one conjunct's terms plus a constant (then d <= (p/q) * bound + d.c). */
static bool implied(const Ver *v, const ArAff *d)
{
    if (ar_aff_is_const(d))
        return d->c <= 0;
    for (int f = 0; f < v->nfacts; f++) {
        const ArAff *a = &v->fact[f];
        int64_t p = 0, q = 0;
        bool ok = true;
        for (int t = 0; t < d->n && ok; t++) {
            if (d->k[t] == 0)
                continue;
            int64_t ka = ar_aff_coef(a, d->var[t]);
            if (!p)
                p = d->k[t], q = ka;
            ok = ka != 0 && (__int128)d->k[t] * q == (__int128)ka * p;
        }
        for (int t = 0; t < a->n && ok; t++)
            ok = a->k[t] == 0 || ar_aff_coef(d, a->var[t]) != 0;
        if (!ok || q == 0 || (p > 0) != (q > 0))
            continue;
        if (q < 0)
            p = -p, q = -q;
        /* d = (p/q) * terms + d.c <= (p/q) * (bound - a.c) + d.c */
        if ((__int128)q * d->c + (__int128)p * ((__int128)v->bound[f] - a->c) <= 0)
            return true;
    }
    return false;
}

/* min(x, y) with one side never above the other under TEST, as that side. */
static Expr *decide_min(const Ver *v, Expr *e)
{
    if (!e || e->kind != IE_MIN)
        return e;
    Expr *x = decide_min(v, e->args[0]), *y = decide_min(v, e->args[1]);
    ArAff ax, ay, d = {0};
    if (ar_aff_of(v->k, x, &ax) && ar_aff_of(v->k, y, &ay)) {
        if (ar_aff_add(&d, &ax, 1) && ar_aff_add(&d, &ay, -1) && implied(v, &d))
            return x;
        d = (ArAff){0};
        if (ar_aff_add(&d, &ay, 1) && ar_aff_add(&d, &ax, -1) && implied(v, &d))
            return y;
    }
    e->args[0] = x;
    e->args[1] = y;
    return e;
}

static void decide_bounds(const Ver *v, NodeList *l)
{
    for (int i = 0; i < l->n; i++) {
        Node *n = l->v[i];
        if (n->kind == N_LOOP) {
            n->u.loop.hi = decide_min(v, n->u.loop.hi);
            decide_bounds(v, &n->u.loop.body);
        } else if (n->kind == N_IF) {
            decide_bounds(v, &n->u.guard.body);
            decide_bounds(v, &n->u.guard.els);
        }
    }
}

static void version_list(Ver *v, NodeList *l, bool in_vector);

/* Where every conjunct of TEST holds over a first run of a serial L's iterations
 * (L's variable with a positive coefficient in each: a triangular mask `k <= i`
 * versioned at the reduction loop k) or over a last run (negative in each), the
 * point where TEST starts or stops holding: L's range is cut there instead of TEST
 * being evaluated at every iteration, which left the register tile's accumulators
 * in a loop with two bodies (777^3 lower-triangular A·B, Zen 3: 27 GFLOP/s).
 * *first: the run is a prefix.  NULL when the conjuncts do not say so. */
static Expr *test_edge(const Ver *v, const Node *L, bool *first)
{
    Kernel *k = v->k;
    int id = L->u.loop.var->id, sign = 0;
    Expr *edge = NULL;
    /* a full fact table may have dropped conjuncts of TEST: no edge from it */
    if (L->u.loop.kind != LOOP_SERIAL || v->nfacts == 0 || v->nfacts == MAX_FACTS)
        return NULL;
    for (int f = 0; f < v->nfacts; f++) {
        int64_t kv = ar_aff_coef(&v->fact[f], id);
        if (kv == 0 || (sign && (kv > 0) != (sign > 0)))
            return NULL;
        sign = kv > 0 ? 1 : -1;
        ArAff rest = v->fact[f];
        for (int t = 0; t < rest.n; t++)
            if (rest.var[t] == id)
                rest.k[t] = 0;
        Expr *r = cpu_aff_terms(k, &rest);
        if (!r)
            r = ir_int(k, 0);
        /* kv > 0: kv v + rest <= bound until v = floor((bound - rest) / kv) + 1;
         * kv < 0: from v = ceil((rest - bound) / -kv) on (the IR's `/` floors) */
        Expr *e = kv > 0 ? ir_bin(k, IE_DIV, ir_bin(k, IE_SUB, ir_int(k, v->bound[f] + kv), r), ir_int(k, kv))
                         : ir_bin(k, IE_DIV, ir_bin(k, IE_ADD, r, ir_int(k, -kv - 1 - v->bound[f])), ir_int(k, -kv));
        edge = edge ? ir_bin(k, sign > 0 ? IE_MIN : IE_MAX, edge, e) : e;
    }
    *first = sign > 0;
    return edge;
}

/* The fast copy of L's body pushed into `into` (the body of `holder`): the hoisted
 * guards marked `holds` while cloning, and the bounds TEST decides made constant. */
static void fast_copy(Ver *v, const Node *L, NodeList *into, Node *holder)
{
    for (int i = 0; i < v->nh; i++)
        v->hoisted[i]->u.guard.holds = true;
    for (int i = 0; i < L->u.loop.body.n; i++)
        ir_list_push(into, ir_clone_node(v->k, L->u.loop.body.v[i]), holder);
    for (int i = 0; i < v->nh; i++)
        v->hoisted[i]->u.guard.holds = false;
    decide_bounds(v, into);
}

/* L's body under one guard `if cond` (ANY: skipped where no hoisted guard can hold). */
static void body_under(Kernel *k, Node *L, Expr *cond)
{
    Node *g = ir_guard(k, cond, L->span);
    for (int i = 0; i < L->u.loop.body.n; i++)
        ir_list_push(&g->u.guard.body, L->u.loop.body.v[i], g);
    L->u.loop.body.n = 0;
    ir_list_push(&L->u.loop.body, g, L);
}

/* Versions L, entry at of list l; returns a loop it put beside L in l (the part of
 * L's range where TEST holds, run as the fast copy), or NULL. */
static Node *version_loop(Ver *v, NodeList *l, int at, Node *L)
{
    Kernel *k = v->k;
    Inner in[MAX_INNER];
    v->nh = 0;
    v->nfacts = 0;
    v->test = v->any = NULL;
    hoist_collect(v, L, &L->u.loop.body, in, 0);
    if (v->nh == 0)
        return NULL;
    bool covered = all_covered(v, &L->u.loop.body);
    bool first = false;
    Expr *edge = test_edge(v, L, &first);
    if (edge) {
        /* lo..s and s..hi, s = max(lo, min(hi, edge)): the fast copy in a loop of
         * its own over the run where TEST holds, keeping L's variable; the rest as
         * it was, in L with a fresh one */
        Expr *cut = ir_simplify(k, ir_bin(k, IE_MAX, ir_clone_expr(k, L->u.loop.lo),
                                          ir_bin(k, IE_MIN, ir_clone_expr(k, L->u.loop.hi), edge)));
        Var *lv = L->u.loop.var, *ev = ir_new_var(k, xf_fresh_name(k, lv->name));
        Node *fast = first ? ir_loop(k, lv, ir_clone_expr(k, L->u.loop.lo), ir_clone_expr(k, cut), L->span)
                           : ir_loop(k, lv, ir_clone_expr(k, cut), ir_clone_expr(k, L->u.loop.hi), L->span);
        fast->u.loop.kind = L->u.loop.kind;
        fast_copy(v, L, &fast->u.loop.body, fast);
        if (first)
            L->u.loop.lo = cut;
        else
            L->u.loop.hi = cut;
        if (covered)
            body_under(k, L, v->any);
        Expr *ee = ir_var(k, ev);
        for (int i = 0; i < L->u.loop.body.n; i++)
            xf_subst_tree(k, L->u.loop.body.v[i], lv, ee);
        L->u.loop.var = ev;
        ir_list_insert(l, at + (first ? 0 : 1), fast, L->parent);
        return fast;
    }
    /* if TEST { the fast copy } else { the body as it was } */
    Node *ver = ir_guard(k, v->test, L->span);
    fast_copy(v, L, &ver->u.guard.body, ver);
    for (int i = 0; i < L->u.loop.body.n; i++)
        ir_list_push(&ver->u.guard.els, L->u.loop.body.v[i], ver);
    L->u.loop.body.n = 0;
    ir_list_push(&L->u.loop.body, ver, L);
    if (covered)
        body_under(k, L, v->any);
    return NULL;
}

static void version_list(Ver *v, NodeList *l, bool in_vector)
{
    for (int i = 0; i < l->n; i++) {
        Node *n = l->v[i];
        if (n->kind == N_IF) {
            version_list(v, &n->u.guard.body, in_vector);
            version_list(v, &n->u.guard.els, in_vector);
            continue;
        }
        if (n->kind != N_LOOP)
            continue;
        Node *fast = !in_vector && versionable(v, n) ? version_loop(v, l, i, n) : NULL;
        version_list(v, &n->u.loop.body, in_vector || n->u.loop.kind == LOOP_VECTOR);
        if (fast) {
            /* the loop put beside n: its inner loops versioned too, and stepped over */
            version_list(v, &fast->u.loop.body, in_vector);
            i++;
        }
    }
}

bool cpu_version(Kernel *k, Diags *d)
{
    (void)d;
    Ver v = {.k = k, .lean = cpu_holds_scheduled(&k->body)};
    version_list(&v, &k->body, false);
    return true;
}
