/* What a kernel computes, read from its own IR: operation and byte counts for the
 * GFLOP/s and GB/s of the report, the longest reduction (which sets the f32
 * tolerance), and whether the kernel is a matrix product that OpenBLAS can do,
 * both as a golden reference (dgemm in f64) and as a baseline (--compare).
 *
 * Counting walks the loop nest once, multiplying by trip counts; a loop is
 * enumerated only when something inside depends on its variable (a triangular
 * bound, a guard such as `where j <= i`), so a causal mask is counted exactly
 * instead of as if every guard passed.  A loop whose enumeration would exceed a
 * budget of node visits is sampled at the middles of 64 equal strata instead (exact
 * for bounds linear in the variable, close for guards), and the count says it is
 * an estimate.
 *
 * GEMM detection is deliberately narrow: one reduction statement
 * T[b.., i, j] += A[..] * B[..] (float casts allowed) over plain loop variables,
 * zero-initialised over the whole of T, loops starting at 0 and spanning the
 * buffers exactly.  Anything it does not recognise falls back to the general
 * references, which is always correct, only slower. */
#include "runtime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- integer evaluation with loop variables bound ---- */

typedef struct Env {
    int64_t *val;
    bool *set;
    int n;
} Env;

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0)))
        q--;
    return q;
}

static bool ev(const Kernel *k, const Expr *e, const Env *env, int64_t *out)
{
    int64_t a = 0, b = 0, c = 0;
    if (!e)
        return false;
    switch (e->kind) {
    case IE_INT:
        *out = e->u.i;
        return true;
    case IE_PARAM:
        if (e->u.param < 0 || e->u.param >= k->nparams || !k->params[e->u.param].bound)
            return false;
        *out = k->params[e->u.param].value;
        return true;
    case IE_VAR: {
        int id = e->u.var->id;
        if (id < 0 || id >= env->n || !env->set[id])
            return false;
        *out = env->val[id];
        return true;
    }
    case IE_CAST:
        if (dtype_is_float(e->dtype) || !ev(k, e->args[0], env, &a))
            return false;
        *out = e->dtype == DT_BOOL ? a != 0 : a;
        return true;
    case IE_NEG:
    case IE_NOT:
        if (!ev(k, e->args[0], env, &a) || a == INT64_MIN)
            return false;
        *out = e->kind == IE_NEG ? -a : !a;
        return true;
    case IE_SELECT:
        if (!ev(k, e->args[0], env, &c))
            return false;
        return ev(k, e->args[c ? 1 : 2], env, out);
    default:
        break;
    }
    if (ir_expr_arity(e->kind) != 2 || dtype_is_float(e->dtype))
        return false;
    if (!ev(k, e->args[0], env, &a) || !ev(k, e->args[1], env, &b))
        return false;
    switch (e->kind) {
    case IE_ADD: return !__builtin_add_overflow(a, b, out);
    case IE_SUB: return !__builtin_sub_overflow(a, b, out);
    case IE_MUL: return !__builtin_mul_overflow(a, b, out);
    case IE_DIV:
    case IE_MOD:
        if (b == 0 || (a == INT64_MIN && b == -1))
            return false;
        *out = e->kind == IE_DIV ? floor_div(a, b) : a - floor_div(a, b) * b;
        return true;
    case IE_MAX: *out = a > b ? a : b; return true;
    case IE_MIN: *out = a < b ? a : b; return true;
    case IE_LT: *out = a < b; return true;
    case IE_LE: *out = a <= b; return true;
    case IE_GT: *out = a > b; return true;
    case IE_GE: *out = a >= b; return true;
    case IE_EQ: *out = a == b; return true;
    case IE_NE: *out = a != b; return true;
    case IE_AND: *out = a && b; return true;
    case IE_OR: *out = a || b; return true;
    default: return false;
    }
}


/* Does anything under l that shapes the iteration space (a loop bound, a guard)
 * depend on v?  Statements do not: their cost is the same at every point. */
static bool shapes_depend(const NodeList *l, const Var *v)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        if (n->kind == N_LOOP) {
            if (ir_expr_uses_var(n->u.loop.lo, v) || ir_expr_uses_var(n->u.loop.hi, v) ||
                shapes_depend(&n->u.loop.body, v))
                return true;
        } else if (n->kind == N_IF) {
            if (ir_expr_uses_var(n->u.guard.cond, v) || shapes_depend(&n->u.guard.body, v))
                return true;
        }
    }
    return false;
}

/* ---- counting ---- */

static bool data_type(DType t)
{
    return dtype_is_float(t) || t == DT_I32;
}

/* Arithmetic on data values: one per operator or math function; loads, casts,
 * constants, selects and index arithmetic are free. */
static double value_ops(const Expr *e)
{
    if (!e || e->kind == IE_LOAD)
        return 0;
    double n = 0;
    switch (e->kind) {
    case IE_NEG: case IE_EXP: case IE_LOG: case IE_SQRT: case IE_RSQRT: case IE_TANH:
    case IE_ERF: case IE_ABS: case IE_ADD: case IE_SUB: case IE_MUL: case IE_DIV: case IE_MOD:
    case IE_MAX: case IE_MIN: case IE_LOG1P: case IE_EXPM1: case IE_FLOOR: case IE_CEIL: case IE_ROUND:
    case IE_POW:
        n = data_type(e->dtype);
        break;
    case IE_LT: case IE_LE: case IE_GT: case IE_GE: case IE_EQ: case IE_NE:
        n = data_type(e->args[0]->dtype);
        break;
    default:
        break;
    }
    for (int i = 0; i < 3; i++)
        n += value_ops(e->args[i]);
    return n;
}

typedef struct Tally {
    double flops, execs;
} Tally;

enum { MAX_DEPTH = 128 };

typedef struct Counter {
    const Kernel *k;
    Env env;
    double budget;      /* count_node visits allowed before sampling */
    double spent;       /* visits so far */
    bool exact;
    bool failed;
    int64_t maxred;
    const Node *stack[MAX_DEPTH];
    int64_t trip[MAX_DEPTH];
    int depth;
    Diags *d;
} Counter;

static Tally count_list(Counter *c, const NodeList *l);

/* v occurs in x outside tensor values: a scatter's Y[T[i]] names no element by i */
static bool uses_plain(const Expr *x, const Var *v)
{
    if (!x) return false;
    if (x->kind == IE_VAR) return x->u.var == v;
    if (x->kind == IE_LOAD) return false;
    for (int i = 0; i < ir_expr_arity(x->kind); i++)
        if (uses_plain(x->args[i], v)) return true;
    return false;
}

/* The terms a compound statement combines into one element: the trip counts of the
 * loops its index does not move.  A scatter's terms (Y[T[i]] += ..) count as all
 * landing on one element, its worst case; on a GPU they are added by atomics in any
 * order (docs/cuda.md), which this length's tolerance covers like any reassociated sum. */
static void note_reduction(Counter *c, const Node *s)
{
    if (s->u.stmt.op == SOP_ASSIGN)
        return;
    int64_t len = 1;
    for (int i = 0; i < c->depth; i++) {
        const Var *v = c->stack[i]->u.loop.var;
        bool used = false;
        for (int j = 0; j < s->u.stmt.buf->rank && !used; j++)
            used = uses_plain(s->u.stmt.idx[j], v);
        if (!used && c->trip[i] > 0 && len <= INT64_MAX / c->trip[i])
            len *= c->trip[i];
    }
    if (len > c->maxred)
        c->maxred = len;
}

static Tally count_node(Counter *c, const Node *n)
{
    Tally t = {0, 0};
    if (c->failed)
        return t;
    c->spent++;
    switch (n->kind) {
    case N_STMT:
        t.flops = value_ops(n->u.stmt.value) +
                  (n->u.stmt.op != SOP_ASSIGN && data_type(n->u.stmt.buf->dtype));
        t.execs = 1;
        note_reduction(c, n);
        return t;
    case N_IF: {
        int64_t v;
        if (!ev(c->k, n->u.guard.cond, &c->env, &v)) {
            c->exact = false; /* a data-dependent guard: counted as taken */
            v = 1;
        }
        return v ? count_list(c, &n->u.guard.body) : t;
    }
    case N_PREFETCH:
        return t; /* a hint: no flops, and the bytes it fetches are read by statements */
    case N_LOOP:
        break;
    }
    int64_t lo, hi;
    if (!ev(c->k, n->u.loop.lo, &c->env, &lo) || !ev(c->k, n->u.loop.hi, &c->env, &hi)) {
        diag_plain(c->d, DIAG_ERROR, "internal error: cannot evaluate the bounds of loop %s",
                   n->u.loop.var->name);
        c->failed = true;
        return t;
    }
    int64_t trip = hi > lo ? hi - lo : 0;
    if (trip == 0)
        return t;
    if (c->depth == MAX_DEPTH) {
        diag_plain(c->d, DIAG_ERROR, "internal error: loops nested deeper than %d", MAX_DEPTH);
        c->failed = true;
        return t;
    }
    int id = n->u.loop.var->id;
    c->stack[c->depth] = n;
    c->trip[c->depth] = trip;
    c->depth++;
    c->env.set[id] = true;
    if (!shapes_depend(&n->u.loop.body, n->u.loop.var)) {
        c->env.val[id] = lo;
        Tally b = count_list(c, &n->u.loop.body);
        t.flops = b.flops * (double)trip;
        t.execs = b.execs * (double)trip;
    } else {
        /* Enumerate when the body's cost, probed at the middle, times the trip fits
         * the budget; else take the middles of 64 equal strata and scale (exact for
         * bounds linear in the variable, close for guards). */
        int64_t ns = trip;
        if (trip > 64) {
            double before = c->spent;
            c->env.val[id] = lo + trip / 2;
            (void)count_list(c, &n->u.loop.body);
            double cost = c->spent - before + 1;
            if (cost * (double)trip > c->budget - c->spent) {
                ns = 64;
                c->exact = false;
            }
        }
        for (int64_t i = 0; i < ns && !c->failed; i++) {
            c->env.val[id] = ns == trip ? lo + i : lo + (int64_t)(((double)i + 0.5) * (double)trip / (double)ns);
            Tally b = count_list(c, &n->u.loop.body);
            t.flops += b.flops;
            t.execs += b.execs;
        }
        t.flops *= (double)trip / (double)ns;
        t.execs *= (double)trip / (double)ns;
    }
    c->env.set[id] = false;
    c->depth--;
    return t;
}

static Tally count_list(Counter *c, const NodeList *l)
{
    Tally t = {0, 0};
    for (int i = 0; i < l->n; i++) {
        Tally b = count_node(c, l->v[i]);
        t.flops += b.flops;
        t.execs += b.execs;
    }
    return t;
}

/* ---- GEMM detection ---- */

enum { MAX_RANK = 16 };

static const Expr *strip_fcast(const Expr *e)
{
    while (e->kind == IE_CAST && dtype_is_float(e->dtype) && dtype_is_float(e->args[0]->dtype))
        e = e->args[0];
    return e;
}

static bool is_zero(const Expr *e)
{
    while (e->kind == IE_CAST)
        e = e->args[0];
    return (e->kind == IE_FLT && e->u.f == 0) || (e->kind == IE_INT && e->u.i == 0);
}

/* Every index a plain loop variable, all distinct. */
static bool plain_vars(Expr *const *idx, int n, Var **out)
{
    if (n > MAX_RANK)
        return false;
    for (int i = 0; i < n; i++) {
        if (idx[i]->kind != IE_VAR)
            return false;
        out[i] = idx[i]->u.var;
        for (int j = 0; j < i; j++)
            if (out[j] == out[i])
                return false;
    }
    return true;
}

static bool dim_of(const Kernel *k, const Buffer *b, int p, int64_t *out)
{
    return ir_eval_size(k, b->shape[p], out);
}

/* One operand A (rv = the row variable m) or B (rv = the column variable n). */
static bool match_operand(const Kernel *k, const Expr *ld, Var *const *tv, const int64_t *tdim,
                          int r, Var *rv, int64_t rext, Var *kv, int64_t kext, bool *rv_first,
                          bool *batched)
{
    const Buffer *b = ld->u.load.buf;
    int ra = b->rank;
    Var *v[MAX_RANK];
    if ((ra != 2 && ra != r) || !plain_vars(ld->u.load.idx, ra, v))
        return false;
    int nb = ra - 2;
    for (int p = 0; p < nb; p++) {
        int64_t d;
        if (v[p] != tv[p] || !dim_of(k, b, p, &d) || d != tdim[p])
            return false;
    }
    int64_t d0, d1;
    if (!dim_of(k, b, nb, &d0) || !dim_of(k, b, nb + 1, &d1))
        return false;
    if (v[nb] == rv && v[nb + 1] == kv && d0 == rext && d1 == kext)
        *rv_first = true;
    else if (v[nb] == kv && v[nb + 1] == rv && d0 == kext && d1 == rext)
        *rv_first = false;
    else
        return false;
    *batched = nb > 0;
    return true;
}

static bool expr_loads(const Expr *e, const Buffer *b)
{
    if (!e)
        return false;
    if (e->kind == IE_LOAD) {
        if (e->u.load.buf == b)
            return true;
        for (int p = 0; p < e->u.load.buf->rank; p++)
            if (expr_loads(e->u.load.idx[p], b))
                return true;
        return false;
    }
    return expr_loads(e->args[0], b) || expr_loads(e->args[1], b) || expr_loads(e->args[2], b);
}

static bool writes_buffer(const Node *n, const Buffer *b)
{
    if (n->kind == N_STMT)
        return n->u.stmt.buf == b;
    const NodeList *l = ir_body((Node *)n);
    for (int i = 0; i < l->n; i++)
        if (writes_buffer(l->v[i], b))
            return true;
    return false;
}

/* A perfect nest of loops over T's full extent whose only statement is T[..] = 0. */
static bool is_zero_init_nest(const Kernel *k, const Node *n, const Buffer *T)
{
    Var *lv[MAX_RANK];
    int64_t ext[MAX_RANK];
    int depth = 0;
    while (n->kind == N_LOOP) {
        int64_t lo;
        if (depth == MAX_RANK || n->u.loop.body.n != 1 || !ir_eval_size(k, n->u.loop.lo, &lo) ||
            lo != 0 || !ir_eval_size(k, n->u.loop.hi, &ext[depth]))
            return false;
        lv[depth++] = n->u.loop.var;
        n = n->u.loop.body.v[0];
    }
    if (n->kind != N_STMT || n->u.stmt.buf != T || n->u.stmt.op != SOP_ASSIGN ||
        !is_zero(n->u.stmt.value) || depth != T->rank)
        return false;
    Var *iv[MAX_RANK];
    if (!plain_vars(n->u.stmt.idx, T->rank, iv))
        return false;
    for (int p = 0; p < T->rank; p++) {
        int64_t dim;
        int q = 0;
        while (q < depth && lv[q] != iv[p])
            q++;
        if (q == depth || !dim_of(k, T, p, &dim) || ext[q] != dim)
            return false;
    }
    return true;
}

/* Every load of T in e is T[v0, v1, ..] with exactly the variables tv. */
static bool reads_only_at(const Expr *e, const Buffer *T, Var *const *tv)
{
    if (!e)
        return true;
    if (e->kind == IE_LOAD) {
        if (e->u.load.buf == T) {
            for (int p = 0; p < T->rank; p++)
                if (e->u.load.idx[p]->kind != IE_VAR || e->u.load.idx[p]->u.var != tv[p])
                    return false;
            return true;
        }
        for (int p = 0; p < e->u.load.buf->rank; p++)
            if (!reads_only_at(e->u.load.idx[p], T, tv) || expr_loads(e->u.load.idx[p], T))
                return false;
        return true;
    }
    for (int i = 0; i < 3; i++)
        if (!reads_only_at(e->args[i], T, tv))
            return false;
    return true;
}

/* The statement's own subscripts do not read T (a gather through T). */
static bool idx_reads_not(const Node *s, const Buffer *T)
{
    for (int p = 0; p < s->u.stmt.buf->rank; p++)
        if (expr_loads(s->u.stmt.idx[p], T))
            return false;
    return true;
}

static bool single_child(const Node *n, const Node *child)
{
    return n->u.loop.body.n == 1 && n->u.loop.body.v[0] == child;
}

static bool match_gemm(const Kernel *k, const Node *s, const Node *const *anc, int nanc, int top,
                       RtWork *w)
{
    const Buffer *T = s->u.stmt.buf;
    int r = T->rank;
    Var *tv[MAX_RANK];
    int64_t tdim[MAX_RANK];
    if (r < 2 || r > MAX_RANK || nanc != r + 1 || !plain_vars(s->u.stmt.idx, r, tv))
        return false;
    for (int p = 0; p < r; p++)
        if (!dim_of(k, T, p, &tdim[p]))
            return false;
    /* loops: from 0, constant extents; T's variables span T exactly; one more is k */
    Var *kv = NULL;
    int64_t kext = 0;
    int kpos = -1;
    for (int i = 0; i < nanc; i++) {
        int64_t lo, hi;
        if (anc[i]->kind != N_LOOP || !ir_eval_size(k, anc[i]->u.loop.lo, &lo) || lo != 0 ||
            !ir_eval_size(k, anc[i]->u.loop.hi, &hi))
            return false;
        Var *v = anc[i]->u.loop.var;
        int p = 0;
        while (p < r && tv[p] != v)
            p++;
        if (p < r) {
            if (hi != tdim[p])
                return false;
        } else {
            if (kv)
                return false;
            kv = v;
            kext = hi;
            kpos = i;
        }
    }
    if (!kv)
        return false;
    const Expr *mul = strip_fcast(s->u.stmt.value);
    const Expr *x = strip_fcast(mul->args[0]), *y = strip_fcast(mul->args[1]);
    Var *mv = tv[r - 2], *nv = tv[r - 1];
    if (!ir_expr_uses_var(x, mv)) {
        const Expr *t = x;
        x = y;
        y = t;
    }
    bool a_first, b_first, a_batched, b_batched;
    if (!match_operand(k, x, tv, tdim, r, mv, tdim[r - 2], kv, kext, &a_first, &a_batched) ||
        !match_operand(k, y, tv, tdim, r, nv, tdim[r - 1], kv, kext, &b_first, &b_batched))
        return false;

    /* zero initialisation of all of T before the reduction */
    const Node *nodes[2] = {NULL, NULL};
    int tops[2] = {-1, -1};
    bool nest_rest = false; /* statements after the k loop in the product's nest */
    for (int i = 0; i + 1 < nanc; i++)
        if (i != r - 1 && !single_child(anc[i], anc[i + 1]))
            goto separate_init;
    if (kpos == r && anc[r]->u.loop.body.n == 1 && anc[r]->u.loop.body.v[0] == s) {
        /* T = 0, the k loop, then statements of the same nest that read T only at
         * the element just reduced (an output conversion `C[i, j] = T[i, j]`, a
         * scale): with all of T computed first they see the same values. */
        const NodeList *l = &anc[r - 1]->u.loop.body;
        if (l->n >= 2 && l->v[1] == anc[r] && l->v[0]->kind == N_STMT) {
            const Node *init = l->v[0];
            Var *iv[MAX_RANK];
            bool same = init->u.stmt.buf == T && init->u.stmt.op == SOP_ASSIGN &&
                        is_zero(init->u.stmt.value) && plain_vars(init->u.stmt.idx, r, iv);
            for (int p = 0; same && p < r; p++)
                same = iv[p] == tv[p];
            for (int i = 2; same && i < l->n; i++)
                same = l->v[i]->kind == N_STMT && l->v[i]->u.stmt.buf != T &&
                       reads_only_at(l->v[i]->u.stmt.value, T, tv) && idx_reads_not(l->v[i], T);
            if (same) {
                nodes[0] = init;
                nodes[1] = anc[r];
                tops[0] = top;
                nest_rest = l->n > 2;
                goto found;
            }
        }
    }
separate_init:
    /* a perfect nest for the product, after a separate zero-init nest */
    for (int i = 0; i + 1 < nanc; i++)
        if (!single_child(anc[i], anc[i + 1]))
            return false;
    if (anc[nanc - 1]->u.loop.body.n != 1)
        return false;
    for (int i = top - 1; i >= 0; i--) {
        if (!writes_buffer(k->body.v[i], T))
            continue;
        if (!is_zero_init_nest(k, k->body.v[i], T))
            return false;
        nodes[0] = k->body.v[i];
        nodes[1] = k->body.v[top];
        tops[0] = i;
        tops[1] = top;
        goto found;
    }
    return false;

found:
    /* nothing else may write T */
    for (int i = 0; i < k->body.n; i++)
        if (i != tops[0] && i != tops[1] && writes_buffer(k->body.v[i], T))
            return false;
    RtGemm *g = &w->gemm;
    memset(g, 0, sizeof *g);
    g->a = x->u.load.buf->id;
    g->b = y->u.load.buf->id;
    g->c = T->id;
    g->ta = x->u.load.buf->dtype;
    g->tb = y->u.load.buf->dtype;
    g->tc = T->dtype;
    g->batch = 1;
    for (int p = 0; p < r - 2; p++)
        g->batch *= tdim[p];
    g->m = tdim[r - 2];
    g->n = tdim[r - 1];
    g->k = kext;
    g->trans_a = !a_first;
    g->trans_b = b_first;
    g->stride_a = a_batched ? g->m * g->k : 0;
    g->stride_b = b_batched ? g->k * g->n : 0;
    g->stride_c = g->m * g->n;
    g->epilogue = T->kind == BUF_TEMP || nest_rest || k->body.n > (tops[1] >= 0 ? 2 : 1);
    w->gemm_nodes[0] = nodes[0];
    w->gemm_nodes[1] = nodes[1];
    return true;
}

/* The reduction candidates: T[..] += A[..] * B[..] with A and B inputs. */
static bool is_candidate(const Node *s)
{
    if (s->u.stmt.op != SOP_ADD || s->u.stmt.buf->kind == BUF_IN ||
        s->u.stmt.buf->mem != MEM_GLOBAL || !dtype_is_float(s->u.stmt.buf->dtype))
        return false;
    const Expr *m = strip_fcast(s->u.stmt.value);
    if (m->kind != IE_MUL)
        return false;
    for (int i = 0; i < 2; i++) {
        const Expr *o = strip_fcast(m->args[i]);
        if (o->kind != IE_LOAD || o->u.load.buf->kind != BUF_IN || o->u.load.guarded ||
            !dtype_is_float(o->u.load.buf->dtype))
            return false;
    }
    return true;
}

typedef struct Search {
    const Node *anc[MAX_DEPTH];
    int depth;
    int ncand;
    const Node *cand;
    const Node *cand_anc[MAX_DEPTH];
    int cand_depth, cand_top;
    int top;
} Search;

static void search(Search *s, const NodeList *l)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        if (s->depth == 0)
            s->top = i;
        if (n->kind == N_STMT) {
            if (is_candidate(n) && s->ncand++ == 0) {
                s->cand = n;
                memcpy(s->cand_anc, s->anc, sizeof(Node *) * (size_t)s->depth);
                s->cand_depth = s->depth;
                s->cand_top = s->top;
            }
            continue;
        }
        if (s->depth == MAX_DEPTH) {
            s->ncand += 2; /* too deep to be a plain product */
            return;
        }
        s->anc[s->depth++] = n;
        search(s, ir_body((Node *)n));
        s->depth--;
    }
}

bool rt_analyse(const Kernel *k, RtWork *w, Diags *d)
{
    memset(w, 0, sizeof *w);
    w->gemm_nodes[0] = w->gemm_nodes[1] = NULL;
    if (!ir_all_bound(k, d))
        return false;

    int nv = 0;
    for (int i = 0; i < k->nvars; i++)
        if (k->vars[i]->id + 1 > nv)
            nv = k->vars[i]->id + 1;
    Counter c = {.k = k, .budget = 2e7, .exact = true, .maxred = 1, .d = d};
    c.env.n = nv;
    c.env.val = xcalloc((size_t)(nv ? nv : 1), sizeof(int64_t));
    c.env.set = xcalloc((size_t)(nv ? nv : 1), sizeof(bool));

    Tally *per = xcalloc((size_t)(k->body.n ? k->body.n : 1), sizeof(Tally));
    for (int i = 0; i < k->body.n; i++) {
        per[i] = count_node(&c, k->body.v[i]);
        w->flops += per[i].flops;
        w->execs += per[i].execs;
    }
    w->exact = c.exact;
    w->reduce_len = c.maxred;
    for (int i = 0; i < k->nbufs; i++) {
        const Buffer *b = k->bufs[i];
        if (b->kind == BUF_TEMP)
            continue;
        int64_t n = ir_buffer_elems(k, b);
        w->bytes += (double)(n > 0 ? n : 0) * dtype_bytes(b->dtype);
    }

    Search *s = xcalloc(1, sizeof *s);
    search(s, &k->body);
    if (!c.failed && s->ncand == 1 &&
        match_gemm(k, s->cand, s->cand_anc, s->cand_depth, s->cand_top, w)) {
        w->is_gemm = true;
        /* The recognised nodes cost exactly batch·M·N executions of T = 0 and
         * batch·M·N·K of T += A·B (one multiply, one update): every loop spans
         * its buffer from 0, so the count needs no walk. */
        const RtGemm *g = &w->gemm;
        double mn = (double)g->batch * (double)g->m * (double)g->n;
        w->rest_work = fmax(0, w->flops + w->execs - mn - 3 * mn * (double)g->k);
    }
    free(s);
    free(per);
    free(c.env.val);
    free(c.env.set);
    return !c.failed;
}

/* ---- tolerances ---- */

static int precision_bits(DType t)
{
    switch (t) {
    case DT_F64: return 53;
    case DT_F32: return 24;
    case DT_F16: return 11;
    case DT_BF16: return 8;
    default: return 1000; /* integers: exact */
    }
}

static void cast_targets(const Expr *e, DType *worst)
{
    if (!e || e->kind == IE_LOAD)
        return;
    if (e->kind == IE_CAST && dtype_is_float(e->dtype) &&
        precision_bits(e->dtype) < precision_bits(*worst))
        *worst = e->dtype;
    for (int i = 0; i < 3; i++)
        cast_targets(e->args[i], worst);
}

static void casts_in(const NodeList *l, DType *worst)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        if (n->kind == N_STMT)
            cast_targets(n->u.stmt.value, worst);
        else
            casts_in(ir_body((Node *)n), worst);
    }
}

DType rt_tolerance_dtype(const Kernel *k)
{
    DType worst = DT_I32;
    for (int i = 0; i < k->nbufs; i++) {
        const Buffer *b = k->bufs[i];
        if (b->kind != BUF_IN && dtype_is_float(b->dtype) &&
            precision_bits(b->dtype) < precision_bits(worst))
            worst = b->dtype;
    }
    casts_in(&k->body, &worst);
    return worst;
}

double rt_tolerance_why(DType t, int64_t reduce_len, char *why, size_t cap)
{
    double len = reduce_len > 1 ? (double)reduce_len : 1.0, tol;
    if (why && cap)
        why[0] = 0;
    switch (t) {
    case DT_F64: tol = 1e-10; break;
    case DT_F32: tol = fmax(1e-5, 1e-6 * sqrt(len)); break;
    case DT_F16:
    case DT_BF16: tol = 1e-2; break;
    default: return 0; /* integer results must match exactly */
    }
    /* The scaled tolerance grows without bound (1e-6 * sqrt(2^63) = 3037): past
     * RT_TOL_CAP a kernel that is off by a whole percent would pass. */
    if (tol > RT_TOL_CAP) {
        if (why && cap)
            snprintf(why, cap,
                     "capped at %g: 1e-6*sqrt(L) = %.3g for reduction length L = %lld would accept a kernel that is "
                     "more than 1%% off",
                     RT_TOL_CAP, tol, (long long)reduce_len);
        tol = RT_TOL_CAP;
    }
    return tol;
}

double rt_tolerance(DType t, int64_t reduce_len) { return rt_tolerance_why(t, reduce_len, NULL, 0); }
