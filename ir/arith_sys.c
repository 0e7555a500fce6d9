/* ir/arith.h's integer constraint systems: dense affine rows over the columns of an
 * ArSpace (two statement instances' loop variables, unbound sizes, floor-division
 * quotients), the domain of an instance as rows, and the decision whether a system
 * has an integer solution.
 *
 * The decision is conservative in one direction only: equalities with a unit
 * coefficient are eliminated exactly, mixed-radix equalities are split digit by
 * digit, a GCD test catches strided misses, and the rest goes through rational
 * Fourier-Motzkin with integer tightening of every row, then case analysis over
 * small variables.  "No solution" is a proof; anything undecided (too many rows,
 * arithmetic overflow) answers "may have one".  passes/deps.c builds its
 * dependence and bound proofs on it. */
#include <stdlib.h>
#include <string.h>

#include "arith.h"
#include "lang/checked.h"
#include "lang/util.h"

enum { SYS_ROW_LIMIT = 600 };

/* ---------------- affine forms ---------------- */

void ar_space_init(ArSpace *sp, const Kernel *k)
{
    memset(sp, 0, sizeof *sp);
    sp->k = k;
}

int ar_space_col(ArSpace *sp, const Var *v, int side)
{
    for (int i = 0; i < sp->ncol; i++)
        if (sp->var[i] == v && sp->side[i] == side)
            return i;
    if (sp->ncol == AR_ROW_COLS) {
        sp->overflow = true;
        return -1;
    }
    sp->var[sp->ncol] = v;
    sp->side[sp->ncol] = side;
    sp->param[sp->ncol] = -1;
    return sp->ncol++;
}

static int space_param_col(ArSpace *sp, int p)
{
    for (int i = 0; i < sp->ncol; i++)
        if (!sp->var[i] && sp->param[i] == p)
            return i;
    if (sp->ncol == AR_ROW_COLS) {
        sp->overflow = true;
        return -1;
    }
    sp->var[sp->ncol] = NULL;
    sp->side[sp->ncol] = -1;
    sp->param[sp->ncol] = p;
    return sp->ncol++;
}

bool ar_row_is_const(const ArRow *a)
{
    for (int i = 0; i < AR_ROW_COLS; i++)
        if (a->c[i])
            return false;
    return true;
}


/* r = x*a + y*b; false on overflow. */
bool ar_row_lin(ArRow *r, int64_t x, const ArRow *a, int64_t y, const ArRow *b)
{
    ArRow t;
    for (int i = 0; i <= AR_ROW_COLS; i++) {
        int64_t av = i < AR_ROW_COLS ? a->c[i] : a->k, bv = i < AR_ROW_COLS ? b->c[i] : b->k, p, q, s;
        if (!ck_mul(x, av, &p) || !ck_mul(y, bv, &q) || !ck_add(p, q, &s))
            return false;
        if (i < AR_ROW_COLS)
            t.c[i] = s;
        else
            t.k = s;
    }
    *r = t;
    return true;
}


/* q = floor(num / d) as a column of its own (one per distinct numerator and
 * divisor); out = q, or num - d*q for the remainder.  The rows that tie q to num
 * are added once the domains are in the system (ar_sys_add_divs). */
static bool aff_div(ArSpace *sp, const ArRow *num, int64_t d, bool mod, ArRow *out)
{
    int col = -1;
    for (int i = 0; i < sp->ndiv && col < 0; i++)
        if (sp->div[i].d == d && memcmp(&sp->div[i].num, num, sizeof *num) == 0)
            col = sp->div[i].col;
    if (col < 0) {
        if (sp->ndiv == (int)(sizeof sp->div / sizeof sp->div[0]) || sp->ncol == AR_ROW_COLS) {
            sp->overflow = true;
            return false;
        }
        col = sp->ncol++;
        sp->var[col] = NULL;
        sp->side[col] = -1;
        sp->param[col] = -2;
        sp->div[sp->ndiv].num = *num;
        sp->div[sp->ndiv].d = d;
        sp->div[sp->ndiv].col = col;
        sp->ndiv++;
    }
    ArRow q;
    memset(&q, 0, sizeof q);
    q.c[col] = 1;
    if (!mod) {
        *out = q;
        return true;
    }
    return ar_row_lin(out, 1, num, -d, &q);
}

/* Constant bounds of column c from the single-variable rows of s. */
static void col_bounds(const ArSys *s, int c, bool *hl, int64_t *lo, bool *hh, int64_t *hi)
{
    *hl = *hh = false;
    for (int i = 0; i < s->neq; i++) { /* a*x + k == 0 fixes x (when integral) */
        const ArRow *a = &s->eq[i];
        bool single = a->c[c] != 0;
        for (int j = 0; j < AR_ROW_COLS && single; j++)
            single = j == c || !a->c[j];
        if (single && a->k % a->c[c] == 0) {
            *lo = *hi = -a->k / a->c[c];
            *hl = *hh = true;
            return;
        }
    }
    for (int i = 0; i < s->nin; i++) {
        const ArRow *a = &s->in[i];
        bool single = a->c[c] != 0;
        for (int j = 0; j < AR_ROW_COLS && single; j++)
            single = j == c || !a->c[j];
        if (!single)
            continue;
        if (a->c[c] > 0) { /* c*x + k >= 0: x >= ceil(-k / c) */
            int64_t v = -ar_floordiv(a->k, a->c[c]);
            if (!*hl || v > *lo)
                *lo = v, *hl = true;
        } else { /* x <= floor(k / -c) */
            int64_t v = ar_floordiv(a->k, -a->c[c]);
            if (!*hh || v < *hi)
                *hi = v, *hh = true;
        }
    }
}

/* 0 <= num - d*q <= d - 1 for every division column not yet added to s, and, when
 * the numerator is a*x + k with x between constant bounds, the bounds of q itself
 * (explicit, so integer reasoning and case analysis can use them).  Called once the
 * domains are in s. */
void ar_sys_add_divs(ArSys *s, ArSpace *sp)
{
    for (; sp->ndiv_added < sp->ndiv; sp->ndiv_added++) {
        ArRow q, r, t;
        const ArRow *num = &sp->div[sp->ndiv_added].num;
        int col = sp->div[sp->ndiv_added].col;
        memset(&q, 0, sizeof q);
        q.c[col] = 1;
        int64_t d = sp->div[sp->ndiv_added].d;
        if (!ar_row_lin(&r, 1, num, -d, &q))
            continue; /* left out: more solutions, still sound */
        ar_sys_add_ge(s, &r);
        if (ar_row_lin(&t, -1, &r, 0, &r) && !__builtin_add_overflow(t.k, d - 1, &t.k))
            ar_sys_add_ge(s, &t);
        int nz = 0, x = -1;
        for (int j = 0; j < AR_ROW_COLS; j++)
            if (num->c[j])
                nz++, x = j;
        bool hl, hh;
        int64_t lo = 0, hi = 0, a = nz == 1 ? num->c[x] : 0, nlo, nhi;
        if (nz != 1 || a <= 0)
            continue;
        col_bounds(s, x, &hl, &lo, &hh, &hi);
        if (!hl || !hh || __builtin_mul_overflow(a, lo, &nlo) || __builtin_mul_overflow(a, hi, &nhi) ||
            __builtin_add_overflow(nlo, num->k, &nlo) || __builtin_add_overflow(nhi, num->k, &nhi))
            continue;
        ArRow b;
        memset(&b, 0, sizeof b);
        b.c[col] = 1;
        b.k = -ar_floordiv(nlo, d); /* q - floor(nlo/d) >= 0 */
        ar_sys_add_ge(s, &b);
        b.c[col] = -1;
        b.k = ar_floordiv(nhi, d); /* floor(nhi/d) - q >= 0 */
        ar_sys_add_ge(s, &b);
    }
}

bool ar_row_of(ArSpace *sp, const Expr *e, int side, ArRow *out)
{
    ArRow a, b;
    memset(out, 0, sizeof *out);
    switch (e->kind) {
    case IE_INT:
        out->k = e->u.i;
        return true;
    case IE_PARAM: {
        const Param *p = &sp->k->params[e->u.param];
        if (p->bound && !sp->symbolic) {
            out->k = p->value;
            return true;
        }
        int c = space_param_col(sp, e->u.param);
        if (c < 0)
            return false;
        out->c[c] = 1;
        return true;
    }
    case IE_VAR: {
        if (side < 0)
            return false;
        int c = ar_space_col(sp, e->u.var, side);
        if (c < 0)
            return false;
        out->c[c] = 1;
        return true;
    }
    case IE_CAST:
        if (dtype_is_float(e->dtype) || dtype_is_float(e->args[0]->dtype))
            return false;
        return ar_row_of(sp, e->args[0], side, out);
    case IE_NEG:
        if (!ar_row_of(sp, e->args[0], side, &a))
            return false;
        return ar_row_lin(out, -1, &a, 0, &a);
    case IE_ADD:
    case IE_SUB:
        if (!ar_row_of(sp, e->args[0], side, &a) || !ar_row_of(sp, e->args[1], side, &b))
            return false;
        return ar_row_lin(out, 1, &a, e->kind == IE_ADD ? 1 : -1, &b);
    case IE_MUL:
        if (!ar_row_of(sp, e->args[0], side, &a) || !ar_row_of(sp, e->args[1], side, &b))
            return false;
        if (ar_row_is_const(&a))
            return ar_row_lin(out, a.k, &b, 0, &b);
        if (ar_row_is_const(&b))
            return ar_row_lin(out, b.k, &a, 0, &a);
        return false;
    case IE_DIV:
    case IE_MOD:
    case IE_MIN:
    case IE_MAX:
        if (!ar_row_of(sp, e->args[0], side, &a) || !ar_row_of(sp, e->args[1], side, &b))
            return false;
        if ((e->kind == IE_DIV || e->kind == IE_MOD) && sp->divs && side >= 0 && !ar_row_is_const(&a) &&
            ar_row_is_const(&b) && b.k > 0)
            return aff_div(sp, &a, b.k, e->kind == IE_MOD, out);
        if (!ar_row_is_const(&a) || !ar_row_is_const(&b))
            return false;
        return ar_binop(e->kind, a.k, b.k, &out->k);
    default:
        return false;
    }
}


/* ---------------- constraint systems ---------------- */

void ar_sys_init(ArSys *s) { memset(s, 0, sizeof *s); }

void ar_sys_free(ArSys *s)
{
    free(s->eq);
    free(s->in);
    ar_sys_init(s);
}

static void push_row(ArRow **v, int *n, int *cap, const ArRow *a)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        *v = xrealloc(*v, (size_t)*cap * sizeof(ArRow));
    }
    (*v)[(*n)++] = *a;
}

void ar_sys_add_eq(ArSys *s, const ArRow *a) { push_row(&s->eq, &s->neq, &s->ceq, a); }
void ar_sys_add_ge(ArSys *s, const ArRow *a) { push_row(&s->in, &s->nin, &s->cin, a); }

void ar_sys_copy(ArSys *dst, const ArSys *src)
{
    ar_sys_init(dst);
    dst->split = src->split;
    for (int i = 0; i < src->neq; i++)
        ar_sys_add_eq(dst, &src->eq[i]);
    for (int i = 0; i < src->nin; i++)
        ar_sys_add_ge(dst, &src->in[i]);
}

/* Affine pieces of a bound: MAX of lower bounds and MIN of upper bounds split
 * into several bounds, each of which holds. */
void ar_bound_pieces(ArSpace *sp, const Expr *e, bool upper, int side, ArRow *out, int *n, int cap)
{
    if ((upper && e->kind == IE_MIN) || (!upper && e->kind == IE_MAX)) {
        ar_bound_pieces(sp, e->args[0], upper, side, out, n, cap);
        ar_bound_pieces(sp, e->args[1], upper, side, out, n, cap);
        return;
    }
    if (*n < cap && ar_row_of(sp, e, side, &out[*n]))
        (*n)++;
}

void ar_sys_add_loop(ArSys *s, ArSpace *sp, const Node *l, int side)
{
    ArRow p[8], v, r;
    int n = 0, c = ar_space_col(sp, l->u.loop.var, side);
    if (c < 0)
        return;
    memset(&v, 0, sizeof v);
    v.c[c] = 1;
    ar_bound_pieces(sp, l->u.loop.lo, false, side, p, &n, 8);
    for (int i = 0; i < n; i++)             /* v - lo >= 0 */
        if (ar_row_lin(&r, 1, &v, -1, &p[i]))
            ar_sys_add_ge(s, &r);
    n = 0;
    ar_bound_pieces(sp, l->u.loop.hi, true, side, p, &n, 8);
    for (int i = 0; i < n; i++)             /* hi - 1 - v >= 0 */
        if (ar_row_lin(&r, 1, &p[i], -1, &v) && !__builtin_sub_overflow(r.k, 1, &r.k))
            ar_sys_add_ge(s, &r);
}

static void add_cond(ArSys *s, ArSpace *sp, const Expr *e, int side)
{
    ArRow a, b, r;
    if (e->kind == IE_AND) {
        add_cond(s, sp, e->args[0], side);
        add_cond(s, sp, e->args[1], side);
        return;
    }
    if (e->kind < IE_LT || e->kind > IE_EQ)
        return;
    if (!ar_row_of(sp, e->args[0], side, &a) || !ar_row_of(sp, e->args[1], side, &b))
        return;
    switch (e->kind) {
    case IE_LT: /* b - a - 1 >= 0 */
        if (ar_row_lin(&r, 1, &b, -1, &a) && !__builtin_sub_overflow(r.k, 1, &r.k))
            ar_sys_add_ge(s, &r);
        break;
    case IE_LE:
        if (ar_row_lin(&r, 1, &b, -1, &a))
            ar_sys_add_ge(s, &r);
        break;
    case IE_GT:
        if (ar_row_lin(&r, 1, &a, -1, &b) && !__builtin_sub_overflow(r.k, 1, &r.k))
            ar_sys_add_ge(s, &r);
        break;
    case IE_GE:
        if (ar_row_lin(&r, 1, &a, -1, &b))
            ar_sys_add_ge(s, &r);
        break;
    case IE_EQ:
        if (ar_row_lin(&r, 1, &a, -1, &b))
            ar_sys_add_eq(s, &r);
        break;
    default:
        break;
    }
}

void ar_sys_add_domain(ArSys *s, ArSpace *sp, const Node *n, int side, bool self)
{
    if (self && n->kind == N_LOOP)
        ar_sys_add_loop(s, sp, n, side);
    for (const Node *p = n->parent; p; p = p->parent) {
        if (p->kind == N_LOOP)
            ar_sys_add_loop(s, sp, p, side);
        else if (p->kind == N_IF)
            add_cond(s, sp, p->u.guard.cond, side);
    }
    /* Unbound parameters are sizes: at least 1. */
    for (int i = 0; i < sp->ncol; i++)
        if (!sp->var[i] && sp->param[i] >= 0) {
            ArRow r;
            memset(&r, 0, sizeof r);
            r.c[i] = 1;
            r.k = -1;
            ar_sys_add_ge(s, &r);
        }
}

static int64_t gcd64(int64_t a, int64_t b)
{
    if (a < 0)
        a = -a;
    if (b < 0)
        b = -b;
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static int64_t row_gcd(const ArRow *a)
{
    int64_t g = 0;
    for (int i = 0; i < AR_ROW_COLS; i++)
        if (a->c[i])
            g = gcd64(g, a->c[i]);
    return g;
}

/* Normalises the inequalities; false when one is a contradiction. */
static bool norm_ineqs(ArRow *v, int *n)
{
    int m = 0;
    for (int i = 0; i < *n; i++) {
        ArRow *a = &v[i];
        int64_t g = row_gcd(a);
        if (g == 0) {
            if (a->k < 0)
                return false;
            continue;
        }
        if (g > 1) {
            for (int j = 0; j < AR_ROW_COLS; j++)
                a->c[j] /= g;
            a->k = ar_floordiv(a->k, g);
        }
        /* A duplicate with a weaker or equal constant adds nothing. */
        bool dup = false;
        for (int j = 0; j < m && !dup; j++)
            if (memcmp(v[j].c, a->c, sizeof a->c) == 0) {
                if (a->k < v[j].k)
                    v[j].k = a->k;
                dup = true;
            }
        if (!dup)
            v[m++] = *a;
    }
    *n = m;
    /* Opposite rows a >= 0 and -a + k' >= 0 contradict when the sum is negative. */
    for (int i = 0; i < m; i++)
        for (int j = i + 1; j < m; j++) {
            bool opp = true;
            for (int c = 0; c < AR_ROW_COLS && opp; c++)
                opp = v[i].c[c] == -v[j].c[c];
            if (opp && v[i].k + v[j].k < 0)
                return false;
        }
    return true;
}

/* Mixed-radix splitting of equalities (delinearization).  Take an equality
 * L + S == 0 where every coefficient of L is a multiple of some g > 1 and S (the
 * other terms and the constant) lies in [Smin, Smax] by the constant bounds of its
 * variables.  In every integer solution L is a multiple of g, hence so is S; when
 * [Smin, Smax] holds exactly one multiple t*g, every solution has S == t*g and
 * L == -t*g, and the row is replaced by those two (implied, so no solution is
 * lost); when it holds none, there is no solution.  This decides the subscripts
 * a split or collapse leaves, such as `(bu*16 + bx)*4 + bv` against a copy with
 * bx' != bx: bv - bv' in [-3, 3] is the multiple 0 of 4, then bx - bx' in
 * [-15, 15] the multiple 0 of 16, so bx == bx'.  Rational Fourier-Motzkin cannot
 * see this (the relaxation has solutions), and case analysis only sometimes can,
 * within its budget.  Returns false when a row has no solution. */
static bool delinearize(ArSys *s)
{
    int64_t lo[AR_ROW_COLS], hi[AR_ROW_COLS];
    bool hl[AR_ROW_COLS], hh[AR_ROW_COLS], known[AR_ROW_COLS] = {0};
    for (int round = 0, changed = 1; changed && round < 16; round++) {
        changed = 0;
        for (int i = 0; i < s->neq; i++) {
            ArRow *a = &s->eq[i];
            for (int gc = 0; gc < AR_ROW_COLS; gc++) {
                int64_t g = a->c[gc] < 0 ? -a->c[gc] : a->c[gc];
                if (g < 2)
                    continue;
                /* S: the terms whose coefficient g does not divide, and the constant. */
                int64_t smin = a->k, smax = a->k;
                bool ok = true, any_small = false;
                for (int j = 0; j < AR_ROW_COLS && ok; j++) {
                    if (!a->c[j] || a->c[j] % g == 0)
                        continue;
                    if (!known[j]) {
                        col_bounds(s, j, &hl[j], &lo[j], &hh[j], &hi[j]);
                        known[j] = true;
                    }
                    int64_t p, q;
                    ok = hl[j] && hh[j] && ck_mul(a->c[j], lo[j], &p) && ck_mul(a->c[j], hi[j], &q);
                    if (ok && p > q) {
                        int64_t t = p;
                        p = q, q = t;
                    }
                    ok = ok && ck_add(smin, p, &smin) && ck_add(smax, q, &smax);
                    any_small = true;
                }
                if (!ok || !any_small)
                    continue;
                int64_t tlo = -ar_floordiv(-smin, g), thi = ar_floordiv(smax, g);
                if (tlo > thi)
                    return false; /* S can be no multiple of g */
                if (tlo != thi)
                    continue;
                int64_t tg;
                if (!ck_mul(tlo, g, &tg))
                    continue;
                ArRow sm, lg;
                memset(&sm, 0, sizeof sm);
                memset(&lg, 0, sizeof lg);
                for (int j = 0; j < AR_ROW_COLS; j++)
                    if (a->c[j] % g)
                        sm.c[j] = a->c[j];
                    else
                        lg.c[j] = a->c[j];
                sm.k = a->k - tg; /* S - t*g == 0 */
                lg.k = tg;        /* L + t*g == 0 */
                *a = sm;
                ar_sys_add_eq(s, &lg); /* may move s->eq: a is not used again */
                changed = 1;
                memset(known, 0, sizeof known); /* a new row may fix a variable */
                break;
            }
        }
    }
    return true;
}

static bool feasible_impl(ArSys *s)
{
    /* Equalities: mixed-radix splitting (before a unit coefficient eliminates a
     * digit and leaves its bounds in multi-variable rows, where they are no longer
     * constant), GCD test, then exact elimination through unit coefficients. */
    for (;;) {
        if (!delinearize(s))
            return false;
        int ue = -1, uc = -1;
        for (int i = 0; i < s->neq; i++) {
            ArRow *a = &s->eq[i];
            int64_t g = row_gcd(a);
            if (g == 0) {
                if (a->k != 0)
                    return false;
                s->eq[i--] = s->eq[--s->neq];
                continue;
            }
            if (a->k % g != 0)
                return false;
            if (g > 1) {
                for (int j = 0; j < AR_ROW_COLS; j++)
                    a->c[j] /= g;
                a->k /= g;
            }
            for (int j = 0; j < AR_ROW_COLS && ue < 0; j++)
                if (a->c[j] == 1 || a->c[j] == -1)
                    ue = i, uc = j;
        }
        if (ue < 0)
            break;
        ArRow e = s->eq[ue];
        s->eq[ue] = s->eq[--s->neq];
        for (int i = 0; i < s->neq; i++)
            if (s->eq[i].c[uc] && !ar_row_lin(&s->eq[i], 1, &s->eq[i], -s->eq[i].c[uc] * e.c[uc], &e))
                return true;
        for (int i = 0; i < s->nin; i++)
            if (s->in[i].c[uc] && !ar_row_lin(&s->in[i], 1, &s->in[i], -s->in[i].c[uc] * e.c[uc], &e))
                return true;
    }
    /* Equalities left without a unit coefficient: keep both halves (sound). */
    for (int i = 0; i < s->neq; i++) {
        ArRow neg;
        ar_sys_add_ge(s, &s->eq[i]);
        ar_row_lin(&neg, -1, &s->eq[i], 0, &s->eq[i]);
        ar_sys_add_ge(s, &neg);
    }
    s->neq = 0;

    for (;;) {
        if (!norm_ineqs(s->in, &s->nin))
            return false;
        int best = -1;
        long bestcost = 0;
        for (int c = 0; c < AR_ROW_COLS; c++) {
            long pos = 0, neg = 0;
            for (int i = 0; i < s->nin; i++)
                pos += s->in[i].c[c] > 0, neg += s->in[i].c[c] < 0;
            if (pos + neg == 0)
                continue;
            long cost = pos * neg - pos - neg;
            if (best < 0 || cost < bestcost)
                best = c, bestcost = cost;
        }
        if (best < 0)
            return true; /* only constants left, all satisfied */
        ArRow *nv = NULL;
        int nn = 0, nc = 0;
        for (int i = 0; i < s->nin; i++)
            if (s->in[i].c[best] == 0)
                push_row(&nv, &nn, &nc, &s->in[i]);
        for (int i = 0; i < s->nin; i++) {
            if (s->in[i].c[best] <= 0)
                continue;
            for (int j = 0; j < s->nin; j++) {
                if (s->in[j].c[best] >= 0)
                    continue;
                ArRow r;
                if (!ar_row_lin(&r, -s->in[j].c[best], &s->in[i], s->in[i].c[best], &s->in[j]) ||
                    nn > SYS_ROW_LIMIT) {
                    free(nv);
                    return true; /* undecided: assume a solution */
                }
                r.c[best] = 0;
                push_row(&nv, &nn, &nc, &r);
            }
        }
        free(s->in);
        s->in = nv;
        s->nin = nn;
        s->cin = nc;
    }
}

/* Case analysis over small variables: when Fourier-Motzkin cannot refute s, take the
 * variable with the fewest values (2 to 8, read off its single-variable rows) and
 * refute each value in turn.  Every integer solution has one of those values, so
 * "no solution in any case" is still a proof; the depth and the number of cases
 * are bounded, and running out answers "may have a solution". */
static bool feasible_cases(const ArSys *src, int depth, int *budget)
{
    ArSys s;
    ar_sys_copy(&s, src);
    bool r = feasible_impl(&s);
    ar_sys_free(&s);
    if (!r || depth == 0 || *budget <= 0)
        return r;
    int64_t lo[AR_ROW_COLS], hi[AR_ROW_COLS];
    bool hl[AR_ROW_COLS], hh[AR_ROW_COLS], used[AR_ROW_COLS] = {0};
    for (int i = 0; i < src->nin; i++)
        for (int j = 0; j < AR_ROW_COLS; j++)
            used[j] |= src->in[i].c[j] != 0;
    for (int i = 0; i < src->neq; i++)
        for (int j = 0; j < AR_ROW_COLS; j++)
            used[j] |= src->eq[i].c[j] != 0;
    int best = -1;
    for (int c = 0; c < AR_ROW_COLS; c++) {
        if (!used[c])
            continue;
        col_bounds(src, c, &hl[c], &lo[c], &hh[c], &hi[c]);
        if (hl[c] && hh[c] && hi[c] > lo[c] && hi[c] - lo[c] < 8 &&
            (best < 0 || hi[c] - lo[c] < hi[best] - lo[best]))
            best = c;
    }
    if (best < 0)
        return true;
    for (int64_t v = lo[best]; v <= hi[best]; v++) {
        if (--*budget < 0)
            return true;
        ArSys t;
        ArRow e;
        ar_sys_copy(&t, src);
        memset(&e, 0, sizeof e);
        e.c[best] = 1;
        e.k = -v;
        ar_sys_add_eq(&t, &e);
        bool f = feasible_cases(&t, depth - 1, budget);
        ar_sys_free(&t);
        if (f)
            return true;
    }
    return false;
}

bool ar_sys_feasible(const ArSys *src)
{
    if (src->split) {
        int budget = 64;
        return feasible_cases(src, 3, &budget);
    }
    ArSys s;
    ar_sys_copy(&s, src);
    bool r = feasible_impl(&s);
    ar_sys_free(&s);
    return r;
}

Expr *ar_row_to_expr(Kernel *k, const ArSpace *sp, const ArRow *a)
{
    Expr *e = NULL;
    for (int c = 0; c < sp->ncol; c++) {
        if (!a->c[c])
            continue;
        int64_t m = a->c[c] < 0 ? -a->c[c] : a->c[c];
        Expr *t = sp->var[c] ? ir_var(k, (Var *)sp->var[c]) : ir_param(k, sp->param[c]);
        if (m != 1)
            t = ir_bin(k, IE_MUL, t, ir_int(k, m));
        if (!e)
            e = a->c[c] < 0 ? ir_bin(k, IE_SUB, ir_int(k, 0), t) : t;
        else
            e = ir_bin(k, a->c[c] < 0 ? IE_SUB : IE_ADD, e, t);
    }
    if (!e)
        return ir_int(k, a->k);
    if (a->k)
        e = ir_bin(k, a->k < 0 ? IE_SUB : IE_ADD, e, ir_int(k, a->k < 0 ? -a->k : a->k));
    return e;
}

