/* Affine access and dependence analysis over the loop tree.
 *
 * Every legality check of the transformations reduces to one question: can two
 * statement instances touch the same element of a buffer (at least one writing it)
 * while their loop variables stand in a given relation?  Each instance lives in the
 * polyhedron its enclosing loop bounds and guards describe; subscripts equal gives
 * equations; the relation adds (in)equalities between the two instances' variables.
 * The integer system is decided conservatively: equalities with a unit coefficient
 * are eliminated exactly, a GCD test catches strided misses, and the rest goes
 * through rational Fourier-Motzkin with integer tightening of every row.  "No
 * solution" is a proof; anything we cannot decide (non-affine subscripts, too many
 * rows, arithmetic overflow) answers "may conflict", so a transformation can only
 * be refused wrongly, never allowed wrongly.
 *
 * Parameters bound with -D (or defaults) are constants here: a kernel is scheduled
 * for its sizes, which is also what lets tails vanish when a factor divides. */
#include <stdlib.h>
#include <string.h>

#include "../ir/arith.h"
#include "lang/checked.h"
#include "xform_int.h"

enum { SYS_ROW_LIMIT = 600, XF_MAXDEPTH = 32 };

/* ---------------- affine forms ---------------- */

void space_init(Space *sp, const Kernel *k)
{
    memset(sp, 0, sizeof *sp);
    sp->k = k;
}

int space_col(Space *sp, const Var *v, int side)
{
    for (int i = 0; i < sp->ncol; i++)
        if (sp->var[i] == v && sp->side[i] == side)
            return i;
    if (sp->ncol == XF_MAXC) {
        sp->overflow = true;
        return -1;
    }
    sp->var[sp->ncol] = v;
    sp->side[sp->ncol] = side;
    sp->param[sp->ncol] = -1;
    return sp->ncol++;
}

static int space_param_col(Space *sp, int p)
{
    for (int i = 0; i < sp->ncol; i++)
        if (!sp->var[i] && sp->param[i] == p)
            return i;
    if (sp->ncol == XF_MAXC) {
        sp->overflow = true;
        return -1;
    }
    sp->var[sp->ncol] = NULL;
    sp->side[sp->ncol] = -1;
    sp->param[sp->ncol] = p;
    return sp->ncol++;
}

bool aff_is_const(const Aff *a)
{
    for (int i = 0; i < XF_MAXC; i++)
        if (a->c[i])
            return false;
    return true;
}


/* r = x*a + y*b; false on overflow. */
static bool aff_lin(Aff *r, int64_t x, const Aff *a, int64_t y, const Aff *b)
{
    Aff t;
    for (int i = 0; i <= XF_MAXC; i++) {
        int64_t av = i < XF_MAXC ? a->c[i] : a->k, bv = i < XF_MAXC ? b->c[i] : b->k, p, q, s;
        if (!ck_mul(x, av, &p) || !ck_mul(y, bv, &q) || !ck_add(p, q, &s))
            return false;
        if (i < XF_MAXC)
            t.c[i] = s;
        else
            t.k = s;
    }
    *r = t;
    return true;
}


/* q = floor(num / d) as a column of its own (one per distinct numerator and
 * divisor); out = q, or num - d*q for the remainder.  The rows that tie q to num
 * are added once the domains are in the system (add_div_rows). */
static bool aff_div(Space *sp, const Aff *num, int64_t d, bool mod, Aff *out)
{
    int col = -1;
    for (int i = 0; i < sp->ndiv && col < 0; i++)
        if (sp->div[i].d == d && memcmp(&sp->div[i].num, num, sizeof *num) == 0)
            col = sp->div[i].col;
    if (col < 0) {
        if (sp->ndiv == (int)(sizeof sp->div / sizeof sp->div[0]) || sp->ncol == XF_MAXC) {
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
    Aff q;
    memset(&q, 0, sizeof q);
    q.c[col] = 1;
    if (!mod) {
        *out = q;
        return true;
    }
    return aff_lin(out, 1, num, -d, &q);
}

/* Constant bounds of column c from the single-variable rows of s. */
static void col_bounds(const Sys *s, int c, bool *hl, int64_t *lo, bool *hh, int64_t *hi)
{
    *hl = *hh = false;
    for (int i = 0; i < s->neq; i++) { /* a*x + k == 0 fixes x (when integral) */
        const Aff *a = &s->eq[i];
        bool single = a->c[c] != 0;
        for (int j = 0; j < XF_MAXC && single; j++)
            single = j == c || !a->c[j];
        if (single && a->k % a->c[c] == 0) {
            *lo = *hi = -a->k / a->c[c];
            *hl = *hh = true;
            return;
        }
    }
    for (int i = 0; i < s->nin; i++) {
        const Aff *a = &s->in[i];
        bool single = a->c[c] != 0;
        for (int j = 0; j < XF_MAXC && single; j++)
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
static void add_div_rows(Sys *s, Space *sp)
{
    for (; sp->ndiv_added < sp->ndiv; sp->ndiv_added++) {
        Aff q, r, t;
        const Aff *num = &sp->div[sp->ndiv_added].num;
        int col = sp->div[sp->ndiv_added].col;
        memset(&q, 0, sizeof q);
        q.c[col] = 1;
        int64_t d = sp->div[sp->ndiv_added].d;
        if (!aff_lin(&r, 1, num, -d, &q))
            continue; /* left out: more solutions, still sound */
        sys_add_ge(s, &r);
        if (aff_lin(&t, -1, &r, 0, &r) && !__builtin_add_overflow(t.k, d - 1, &t.k))
            sys_add_ge(s, &t);
        int nz = 0, x = -1;
        for (int j = 0; j < XF_MAXC; j++)
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
        Aff b;
        memset(&b, 0, sizeof b);
        b.c[col] = 1;
        b.k = -ar_floordiv(nlo, d); /* q - floor(nlo/d) >= 0 */
        sys_add_ge(s, &b);
        b.c[col] = -1;
        b.k = ar_floordiv(nhi, d); /* floor(nhi/d) - q >= 0 */
        sys_add_ge(s, &b);
    }
}

bool aff_of(Space *sp, const Expr *e, int side, Aff *out)
{
    Aff a, b;
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
        int c = space_col(sp, e->u.var, side);
        if (c < 0)
            return false;
        out->c[c] = 1;
        return true;
    }
    case IE_CAST:
        if (dtype_is_float(e->dtype) || dtype_is_float(e->args[0]->dtype))
            return false;
        return aff_of(sp, e->args[0], side, out);
    case IE_NEG:
        if (!aff_of(sp, e->args[0], side, &a))
            return false;
        return aff_lin(out, -1, &a, 0, &a);
    case IE_ADD:
    case IE_SUB:
        if (!aff_of(sp, e->args[0], side, &a) || !aff_of(sp, e->args[1], side, &b))
            return false;
        return aff_lin(out, 1, &a, e->kind == IE_ADD ? 1 : -1, &b);
    case IE_MUL:
        if (!aff_of(sp, e->args[0], side, &a) || !aff_of(sp, e->args[1], side, &b))
            return false;
        if (aff_is_const(&a))
            return aff_lin(out, a.k, &b, 0, &b);
        if (aff_is_const(&b))
            return aff_lin(out, b.k, &a, 0, &a);
        return false;
    case IE_DIV:
    case IE_MOD:
    case IE_MIN:
    case IE_MAX:
        if (!aff_of(sp, e->args[0], side, &a) || !aff_of(sp, e->args[1], side, &b))
            return false;
        if ((e->kind == IE_DIV || e->kind == IE_MOD) && sp->divs && side >= 0 && !aff_is_const(&a) &&
            aff_is_const(&b) && b.k > 0)
            return aff_div(sp, &a, b.k, e->kind == IE_MOD, out);
        if (!aff_is_const(&a) || !aff_is_const(&b))
            return false;
        return ar_binop(e->kind, a.k, b.k, &out->k);
    default:
        return false;
    }
}

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
    Space sp;
    Aff x, y;
    space_init(&sp, k);
    if (aff_of(&sp, a, 0, &x) && aff_of(&sp, b, 0, &y))
        return memcmp(&x, &y, sizeof x) == 0;
    return expr_same(a, b);
}

/* ---------------- constraint systems ---------------- */

void sys_init(Sys *s) { memset(s, 0, sizeof *s); }

void sys_free(Sys *s)
{
    free(s->eq);
    free(s->in);
    sys_init(s);
}

static void push_row(Aff **v, int *n, int *cap, const Aff *a)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        *v = xrealloc(*v, (size_t)*cap * sizeof(Aff));
    }
    (*v)[(*n)++] = *a;
}

void sys_add_eq(Sys *s, const Aff *a) { push_row(&s->eq, &s->neq, &s->ceq, a); }
void sys_add_ge(Sys *s, const Aff *a) { push_row(&s->in, &s->nin, &s->cin, a); }

void sys_copy(Sys *dst, const Sys *src)
{
    sys_init(dst);
    dst->split = src->split;
    for (int i = 0; i < src->neq; i++)
        sys_add_eq(dst, &src->eq[i]);
    for (int i = 0; i < src->nin; i++)
        sys_add_ge(dst, &src->in[i]);
}

/* Affine pieces of a bound: MAX of lower bounds and MIN of upper bounds split
 * into several bounds, each of which holds. */
static void bound_pieces(Space *sp, const Expr *e, bool upper, int side, Aff *out, int *n, int cap)
{
    if ((upper && e->kind == IE_MIN) || (!upper && e->kind == IE_MAX)) {
        bound_pieces(sp, e->args[0], upper, side, out, n, cap);
        bound_pieces(sp, e->args[1], upper, side, out, n, cap);
        return;
    }
    if (*n < cap && aff_of(sp, e, side, &out[*n]))
        (*n)++;
}

void sys_add_loop(Sys *s, Space *sp, const Node *l, int side)
{
    Aff p[8], v, r;
    int n = 0, c = space_col(sp, l->u.loop.var, side);
    if (c < 0)
        return;
    memset(&v, 0, sizeof v);
    v.c[c] = 1;
    bound_pieces(sp, l->u.loop.lo, false, side, p, &n, 8);
    for (int i = 0; i < n; i++)             /* v - lo >= 0 */
        if (aff_lin(&r, 1, &v, -1, &p[i]))
            sys_add_ge(s, &r);
    n = 0;
    bound_pieces(sp, l->u.loop.hi, true, side, p, &n, 8);
    for (int i = 0; i < n; i++)             /* hi - 1 - v >= 0 */
        if (aff_lin(&r, 1, &p[i], -1, &v) && !__builtin_sub_overflow(r.k, 1, &r.k))
            sys_add_ge(s, &r);
}

static void add_cond(Sys *s, Space *sp, const Expr *e, int side)
{
    Aff a, b, r;
    if (e->kind == IE_AND) {
        add_cond(s, sp, e->args[0], side);
        add_cond(s, sp, e->args[1], side);
        return;
    }
    if (e->kind < IE_LT || e->kind > IE_EQ)
        return;
    if (!aff_of(sp, e->args[0], side, &a) || !aff_of(sp, e->args[1], side, &b))
        return;
    switch (e->kind) {
    case IE_LT: /* b - a - 1 >= 0 */
        if (aff_lin(&r, 1, &b, -1, &a) && !__builtin_sub_overflow(r.k, 1, &r.k))
            sys_add_ge(s, &r);
        break;
    case IE_LE:
        if (aff_lin(&r, 1, &b, -1, &a))
            sys_add_ge(s, &r);
        break;
    case IE_GT:
        if (aff_lin(&r, 1, &a, -1, &b) && !__builtin_sub_overflow(r.k, 1, &r.k))
            sys_add_ge(s, &r);
        break;
    case IE_GE:
        if (aff_lin(&r, 1, &a, -1, &b))
            sys_add_ge(s, &r);
        break;
    case IE_EQ:
        if (aff_lin(&r, 1, &a, -1, &b))
            sys_add_eq(s, &r);
        break;
    default:
        break;
    }
}

void sys_add_domain(Sys *s, Space *sp, const Node *n, int side, bool self)
{
    if (self && n->kind == N_LOOP)
        sys_add_loop(s, sp, n, side);
    for (const Node *p = n->parent; p; p = p->parent) {
        if (p->kind == N_LOOP)
            sys_add_loop(s, sp, p, side);
        else if (p->kind == N_IF)
            add_cond(s, sp, p->u.guard.cond, side);
    }
    /* Unbound parameters are sizes: at least 1. */
    for (int i = 0; i < sp->ncol; i++)
        if (!sp->var[i] && sp->param[i] >= 0) {
            Aff r;
            memset(&r, 0, sizeof r);
            r.c[i] = 1;
            r.k = -1;
            sys_add_ge(s, &r);
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

static int64_t row_gcd(const Aff *a)
{
    int64_t g = 0;
    for (int i = 0; i < XF_MAXC; i++)
        if (a->c[i])
            g = gcd64(g, a->c[i]);
    return g;
}

/* Normalises the inequalities; false when one is a contradiction. */
static bool norm_ineqs(Aff *v, int *n)
{
    int m = 0;
    for (int i = 0; i < *n; i++) {
        Aff *a = &v[i];
        int64_t g = row_gcd(a);
        if (g == 0) {
            if (a->k < 0)
                return false;
            continue;
        }
        if (g > 1) {
            for (int j = 0; j < XF_MAXC; j++)
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
            for (int c = 0; c < XF_MAXC && opp; c++)
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
static bool delinearize(Sys *s)
{
    int64_t lo[XF_MAXC], hi[XF_MAXC];
    bool hl[XF_MAXC], hh[XF_MAXC], known[XF_MAXC] = {0};
    for (int round = 0, changed = 1; changed && round < 16; round++) {
        changed = 0;
        for (int i = 0; i < s->neq; i++) {
            Aff *a = &s->eq[i];
            for (int gc = 0; gc < XF_MAXC; gc++) {
                int64_t g = a->c[gc] < 0 ? -a->c[gc] : a->c[gc];
                if (g < 2)
                    continue;
                /* S: the terms whose coefficient g does not divide, and the constant. */
                int64_t smin = a->k, smax = a->k;
                bool ok = true, any_small = false;
                for (int j = 0; j < XF_MAXC && ok; j++) {
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
                Aff sm, lg;
                memset(&sm, 0, sizeof sm);
                memset(&lg, 0, sizeof lg);
                for (int j = 0; j < XF_MAXC; j++)
                    if (a->c[j] % g)
                        sm.c[j] = a->c[j];
                    else
                        lg.c[j] = a->c[j];
                sm.k = a->k - tg; /* S - t*g == 0 */
                lg.k = tg;        /* L + t*g == 0 */
                *a = sm;
                sys_add_eq(s, &lg); /* may move s->eq: a is not used again */
                changed = 1;
                memset(known, 0, sizeof known); /* a new row may fix a variable */
                break;
            }
        }
    }
    return true;
}

static bool feasible_impl(Sys *s)
{
    /* Equalities: mixed-radix splitting (before a unit coefficient eliminates a
     * digit and leaves its bounds in multi-variable rows, where they are no longer
     * constant), GCD test, then exact elimination through unit coefficients. */
    for (;;) {
        if (!delinearize(s))
            return false;
        int ue = -1, uc = -1;
        for (int i = 0; i < s->neq; i++) {
            Aff *a = &s->eq[i];
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
                for (int j = 0; j < XF_MAXC; j++)
                    a->c[j] /= g;
                a->k /= g;
            }
            for (int j = 0; j < XF_MAXC && ue < 0; j++)
                if (a->c[j] == 1 || a->c[j] == -1)
                    ue = i, uc = j;
        }
        if (ue < 0)
            break;
        Aff e = s->eq[ue];
        s->eq[ue] = s->eq[--s->neq];
        for (int i = 0; i < s->neq; i++)
            if (s->eq[i].c[uc] && !aff_lin(&s->eq[i], 1, &s->eq[i], -s->eq[i].c[uc] * e.c[uc], &e))
                return true;
        for (int i = 0; i < s->nin; i++)
            if (s->in[i].c[uc] && !aff_lin(&s->in[i], 1, &s->in[i], -s->in[i].c[uc] * e.c[uc], &e))
                return true;
    }
    /* Equalities left without a unit coefficient: keep both halves (sound). */
    for (int i = 0; i < s->neq; i++) {
        Aff neg;
        sys_add_ge(s, &s->eq[i]);
        aff_lin(&neg, -1, &s->eq[i], 0, &s->eq[i]);
        sys_add_ge(s, &neg);
    }
    s->neq = 0;

    for (;;) {
        if (!norm_ineqs(s->in, &s->nin))
            return false;
        int best = -1;
        long bestcost = 0;
        for (int c = 0; c < XF_MAXC; c++) {
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
        Aff *nv = NULL;
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
                Aff r;
                if (!aff_lin(&r, -s->in[j].c[best], &s->in[i], s->in[i].c[best], &s->in[j]) ||
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
static bool feasible_cases(const Sys *src, int depth, int *budget)
{
    Sys s;
    sys_copy(&s, src);
    bool r = feasible_impl(&s);
    sys_free(&s);
    if (!r || depth == 0 || *budget <= 0)
        return r;
    int64_t lo[XF_MAXC], hi[XF_MAXC];
    bool hl[XF_MAXC], hh[XF_MAXC], used[XF_MAXC] = {0};
    for (int i = 0; i < src->nin; i++)
        for (int j = 0; j < XF_MAXC; j++)
            used[j] |= src->in[i].c[j] != 0;
    for (int i = 0; i < src->neq; i++)
        for (int j = 0; j < XF_MAXC; j++)
            used[j] |= src->eq[i].c[j] != 0;
    int best = -1;
    for (int c = 0; c < XF_MAXC; c++) {
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
        Sys t;
        Aff e;
        sys_copy(&t, src);
        memset(&e, 0, sizeof e);
        e.c[best] = 1;
        e.k = -v;
        sys_add_eq(&t, &e);
        bool f = feasible_cases(&t, depth - 1, budget);
        sys_free(&t);
        if (f)
            return true;
    }
    return false;
}

bool sys_feasible(const Sys *src)
{
    if (src->split) {
        int budget = 64;
        return feasible_cases(src, 3, &budget);
    }
    Sys s;
    sys_copy(&s, src);
    bool r = feasible_impl(&s);
    sys_free(&s);
    return r;
}

/* ---------------- accesses ---------------- */

static void acc_push(AccVec *v, const Access *a)
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
static bool pair_build(const Kernel *k, const Access *a, const Access *b, Space *sp, Sys *s)
{
    space_init(sp, k);
    sp->divs = true;
    sys_init(s);
    if (a->buf != b->buf)
        return false;
    for (int d = 0; d < a->buf->rank; d++) {
        Aff x, y, r;
        if (aff_of(sp, a->idx[d], 0, &x) && aff_of(sp, b->idx[d], 1, &y) && aff_lin(&r, 1, &x, -1, &y))
            sys_add_eq(s, &r);
    }
    sys_add_domain(s, sp, a->stmt, 0, false);
    sys_add_domain(s, sp, b->stmt, 1, false);
    add_div_rows(s, sp);
    s->split = sp->ndiv > 0 || deps_cases;
    return true;
}

static void add_rel(Sys *s, Space *sp, const DepRel *r)
{
    int ca = space_col(sp, r->va, 0), cb = space_col(sp, r->vb, 1);
    if (ca < 0 || cb < 0)
        return;
    Aff x;
    memset(&x, 0, sizeof x);
    x.c[cb] = 1;
    x.c[ca] = -1;
    if (r->dir == 0) {
        sys_add_eq(s, &x);
        return;
    }
    if (r->dir < 0) {
        x.c[cb] = -1;
        x.c[ca] = 1;
    }
    x.k = -1; /* strictly */
    sys_add_ge(s, &x);
}

bool dep_may_conflict(const Kernel *k, const Access *a, const Access *b, const DepRel *rel, int nrel)
{
    Space sp;
    Sys s;
    if (!pair_build(k, a, b, &sp, &s))
        return false;
    for (int i = 0; i < nrel; i++)
        add_rel(&s, &sp, &rel[i]);
    bool r = sp.overflow || sys_feasible(&s);
    sys_free(&s);
    return r;
}

typedef struct DirCtx {
    Space *sp;
    const Var *const *va, *const *vb;
    int n, cap, count;
    int8_t cur[XF_MAXDEPTH];
    int8_t *out;
} DirCtx;

static void dirs_rec(DirCtx *c, const Sys *s, int i)
{
    if (c->count >= c->cap)
        return;
    if (i == c->n) {
        memcpy(c->out + (size_t)c->count * c->n, c->cur, (size_t)c->n);
        c->count++;
        return;
    }
    for (int dir = -1; dir <= 1; dir++) {
        Sys t;
        sys_copy(&t, s);
        DepRel r = {c->va[i], c->vb[i], dir};
        add_rel(&t, c->sp, &r);
        if (c->sp->overflow || sys_feasible(&t)) {
            c->cur[i] = (int8_t)dir;
            dirs_rec(c, &t, i + 1);
        }
        sys_free(&t);
    }
}

int dep_directions(const Kernel *k, const Access *a, const Access *b, const DepRel *fixed,
                   int nfixed, const Var *const *va, const Var *const *vb, int n, int8_t *out,
                   int cap)
{
    Space sp;
    Sys s;
    if (n > XF_MAXDEPTH || !pair_build(k, a, b, &sp, &s))
        return 0;
    for (int i = 0; i < nfixed; i++)
        add_rel(&s, &sp, &fixed[i]);
    DirCtx c = {.sp = &sp, .va = va, .vb = vb, .n = n, .cap = cap, .out = out};
    if (sp.overflow || sys_feasible(&s))
        dirs_rec(&c, &s, 0);
    sys_free(&s);
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
static bool extreme(Space *sp, Node *l, Aff *a, bool want_max, int depth)
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
    Aff p[8];
    int n = 0;
    bound_pieces(sp, up ? dl->u.loop.hi : dl->u.loop.lo, up, 0, p, &n, 8);
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
    Aff b = p[pick];
    if (up)
        b.k -= 1;
    int64_t coef = a->c[deepest];
    a->c[deepest] = 0;
    Aff r;
    if (!aff_lin(&r, 1, a, coef, &b))
        return false;
    *a = r;
    return extreme(sp, l, a, want_max, depth + 1);
}

static Expr *aff_to_expr(Kernel *k, const Space *sp, const Aff *a)
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

Expr *xf_simplify_affine(Kernel *k, Expr *e)
{
    Space sp;
    Aff a;
    space_init(&sp, k);
    sp.symbolic = true; /* the printer should still show `N`, not its value */
    if (dtype_is_float(e->dtype) || !aff_of(&sp, e, 0, &a) || sp.overflow)
        return ir_simplify(k, e);
    Expr *r = aff_to_expr(k, &sp, &a);
    r->span = e->span;
    return r;
}

bool xf_region(Kernel *k, Node *l, const AccVec *acc, bool writes_only, Region *r, StrBuf *why)
{
    Space sp;
    Aff lo[8], hi[8];
    bool have = false;
    const Buffer *buf = NULL;
    space_init(&sp, k);
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
            Aff x, mn, mx;
            if (!aff_of(&sp, a->idx[d], 0, &x)) {
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
            Aff dl, dh;
            if (!aff_lin(&dl, 1, &mn, -1, &lo[d]) || !aff_is_const(&dl) ||
                !aff_lin(&dh, 1, &mx, -1, &hi[d]) || !aff_is_const(&dh)) {
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
        Aff w;
        if (!aff_lin(&w, 1, &hi[d], -1, &lo[d]) || !aff_is_const(&w)) {
            sb_printf(why, "the extent of dimension %d of %s in %s is not a constant", d, buf->name,
                      l->u.loop.var->name);
            return false;
        }
        r->width[d] = w.k + 1;
        r->lo[d] = ir_simplify(k, aff_to_expr(k, &sp, &lo[d]));
    }
    return true;
}

/* ---------------- facts at a point ---------------- */

bool xf_prove_le(Kernel *k, const Node *at, const Expr *a, const Expr *b)
{
    Space sp;
    Sys s;
    Aff x, y, r;
    space_init(&sp, k);
    sp.divs = true;
    if (!aff_of(&sp, a, 0, &x) || !aff_of(&sp, b, 0, &y) || !aff_lin(&r, 1, &x, -1, &y))
        return false;
    sys_init(&s);
    if (__builtin_sub_overflow(r.k, 1, &r.k)) /* a - b - 1 >= 0: a counterexample */
        return false;
    sys_add_ge(&s, &r);
    if (at) {
        sys_add_domain(&s, &sp, at, 0, true);
    } else {
        /* the kernel's top level: only the sizes, each at least 1 */
        for (int i = 0; i < sp.ncol; i++)
            if (!sp.var[i]) {
                Aff p;
                memset(&p, 0, sizeof p);
                p.c[i] = 1;
                p.k = -1;
                sys_add_ge(&s, &p);
            }
    }
    add_div_rows(&s, &sp);
    s.split = sp.ndiv > 0;
    bool proved = !sp.overflow && !sys_feasible(&s);
    sys_free(&s);
    return proved;
}
