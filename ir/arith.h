/* The IR's integer semantics, written once: exact floor division and modulo on
 * i64, constant evaluation of index expressions, the interval of an index
 * expression over loop ranges, the affine form of an index in loop variables, and
 * the identity of each reduction operator per dtype.
 *
 * Every pass, code generator and harness module that needs one of these calls it
 * here, so that "what does i / 4 mean at -3" and "which value does an empty max
 * start from" have one answer.  The f64 reference interpreter (ir/interp.c) is the
 * exception on purpose: it is the oracle the rest is validated against, so it
 * keeps its own copy of the arithmetic.
 *
 * Overflow is never undefined behaviour: every operation that can leave int64 goes
 * through lang/checked.h and fails (returns false) instead of wrapping. */
#ifndef PERFC_IR_ARITH_H
#define PERFC_IR_ARITH_H

#include <stdbool.h>
#include <stdint.h>

#include "ir.h"

/* ---- exact integer operations ---- */

/* a op b for the integer binary operators of the IR (ADD SUB MUL DIV MOD MAX MIN,
 * the comparisons, AND, OR).  DIV and MOD are floor division and floor modulo (the
 * remainder has the divisor's sign).  False when the result does not fit int64,
 * for a zero divisor and for INT64_MIN / -1 and INT64_MIN % -1 (left to run time,
 * where the interpreter reports them), or for any other operator. */
bool ar_binop(ExprKind op, int64_t a, int64_t b, int64_t *out);
/* floor(a / b) and a - b * floor(a / b) for b > 0, where no overflow is possible. */
int64_t ar_floordiv(int64_t a, int64_t b);
int64_t ar_floormod(int64_t a, int64_t b);

/* ---- where the variables' values come from ---- */

typedef struct ArEnv ArEnv;
struct ArEnv {
    const Kernel *k;    /* bound parameters are constants (unbound: unknown) */
    /* The inclusive range [*lo, *hi] of loop variable v; false (or a NULL
     * callback): unknown.  ar_eval needs *lo == *hi. */
    bool (*var)(ArEnv *env, const Var *v, int64_t *lo, int64_t *hi);
    /* The range of a load used in an index (a gather); NULL: unknown. */
    bool (*load)(ArEnv *env, const Expr *e, int64_t *lo, int64_t *hi);
    void *ctx;          /* the callbacks' own data */
    bool overflow;      /* set by ar_interval when a bound did not fit int64 */
};

/* ---- constant evaluation ---- */

/* The value of an integer expression (index arithmetic, comparisons, && || !,
 * select, integer casts) with the loop variables env gives as single values.
 * False when anything is unknown, not integer, or not exact (ar_binop). */
bool ar_eval(ArEnv *env, const Expr *e, int64_t *out);
/* The value of an expression of constants and bound parameters alone. */
bool ar_const(const Kernel *k, const Expr *e, int64_t *out);
/* hi - lo of a loop when both bounds are constants. */
bool ar_const_extent(const Kernel *k, const Node *loop, int64_t *ext);

/* ---- intervals ---- */

/* The inclusive range of an integer expression over the ranges env gives its
 * variables (and gathers); false when unknown.  Sets env->overflow when a bound
 * would leave int64 (the caller may report that as an error of its own). */
bool ar_interval(ArEnv *env, const Expr *e, int64_t *lo, int64_t *hi);

/* The range of an integer expression with every loop variable over its loop's
 * constant range (the first 64 loops of the kernel with constant bounds; guards
 * ignored, so the range holds wherever the expression is evaluated); false when
 * unknown. */
bool ar_interval_loops(const Kernel *k, const Expr *e, int64_t *lo, int64_t *hi);

/* ---- affine forms ---- */

#define AR_AFF_TERMS 16

/* c + sum k[i] * x[var[i]], x the loop variables by Var id; bound parameters are
 * constants.  A variable appears at most once (its coefficient may be 0). */
typedef struct ArAff {
    int64_t c;
    int n;
    int var[AR_AFF_TERMS];
    int64_t k[AR_AFF_TERMS];
} ArAff;

/* r += a * scale; false (r unusable) on overflow or more than AR_AFF_TERMS terms. */
bool ar_aff_add(ArAff *r, const ArAff *a, int64_t scale);
/* The affine form of an integer expression; false when it is not affine in the loop
 * variables (a product of variables, a division of one, a load, an unbound
 * parameter, ...).  Division, modulo, min and max of constants are folded. */
bool ar_aff_of(const Kernel *k, const Expr *e, ArAff *out);
/* The coefficient of variable id var (0 when absent). */
int64_t ar_aff_coef(const ArAff *a, int var);
/* Whether a has no variable with a non-zero coefficient. */
bool ar_aff_is_const(const ArAff *a);
/* *d = a - b when that is a constant (the same function of the variables up to d). */
bool ar_aff_diff_const(const ArAff *a, const ArAff *b, int64_t *d);
/* Whether a and b are the same function of the variables. */
bool ar_aff_same(const ArAff *a, const ArAff *b);
/* The range of a with each variable x in [vmin[x], vmax[x]] (arrays by Var id);
 * false when a range is empty or a bound overflows. */
bool ar_aff_range(const ArAff *a, const int64_t *vmin, const int64_t *vmax, int64_t *lo, int64_t *hi);
/* Replaces variable var in a by the form with; false on overflow. */
bool ar_aff_subst(ArAff *a, int var, const ArAff *with);

/* ---- dense rows and integer constraint systems (ir/arith_sys.c) ---- */


/* A dense affine row, `sum c[i] * x[i] + k`, over the columns of an ArSpace: the
 * loop variables of up to two statement instances (side 0 and side 1), the unbound
 * size parameters and floor-division quotients.  Where ArAff names the variables
 * of one index by Var id, a row is one constraint of a system about two instances
 * at once (the dependence analysis of passes/deps.c, the transformations' proofs),
 * and every row of a system shares the columns.  Bound parameters are constants. */
#define AR_ROW_COLS 40

typedef struct ArRow {
    int64_t c[AR_ROW_COLS];
    int64_t k;              /* sum c[i] * x[i] + k */
} ArRow;

typedef struct ArSpace {
    const Kernel *k;
    int ncol;
    const Var *var[AR_ROW_COLS]; /* NULL for a parameter column */
    int side[AR_ROW_COLS];
    int param[AR_ROW_COLS];
    bool overflow;           /* more columns were needed than AR_ROW_COLS */
    bool symbolic;           /* bound parameters stay columns too (for rewriting) */
    /* Floor division by a positive constant (`v / 4`, `v % 4`, left by collapse and
     * by a pipeline's stage index): with divs set, ar_row_of gives `n / d` a column q of
     * its own (param -2) and records n and d; the dependence tests (pair systems,
     * xf_prove_le) then add 0 <= n - d*q <= d-1 and q's bounds.  Off by default;
     * a system missing those rows only has more solutions (still sound), and
     * vectorize uses the columns for coefficients alone. */
    bool divs;
    int ndiv, ndiv_added;
    struct { ArRow num; int64_t d; int col; } div[8];
} ArSpace;

/* Constraints: every eq row == 0, every ineq row >= 0. */
typedef struct ArSys {
    ArRow *eq, *in;
    int neq, nin, ceq, cin;
    /* Set for systems with floor-division columns (ArSpace.divs): when Fourier-Motzkin
     * finds no contradiction, ar_sys_feasible also tries each value of the variables with
     * at most 8 values (unrolled loops, remainders), which decides the mixed-radix
     * subscripts a collapsed loop leaves (`8*au + af/4`) that the rational relaxation
     * cannot. */
    bool split;
} ArSys;

void ar_space_init(ArSpace *sp, const Kernel *k);
/* The column of (v, side), added when new; -1 when the space is full. */
int ar_space_col(ArSpace *sp, const Var *v, int side);
/* Converts an index expression (side: whose instance its variables belong to; -1
 * for none allowed); false when it is not affine in loop variables and
 * parameters (products of variables, division of a variable, loads, ...). */
bool ar_row_of(ArSpace *sp, const Expr *e, int side, ArRow *out);
bool ar_row_is_const(const ArRow *a);

void ar_sys_init(ArSys *s);
void ar_sys_free(ArSys *s);
void ar_sys_copy(ArSys *dst, const ArSys *src);
/* r = x*a + y*b; false (r untouched) on overflow. */
bool ar_row_lin(ArRow *r, int64_t x, const ArRow *a, int64_t y, const ArRow *b);
/* The affine pieces of a loop bound e (a MAX of lower bounds or a MIN of upper
 * bounds gives each of its operands, each a bound that holds), at most cap. */
void ar_bound_pieces(ArSpace *sp, const Expr *e, bool upper, int side, ArRow *out, int *n, int cap);
/* A row as an index expression in k's arena (variables and parameters by column). */
Expr *ar_row_to_expr(Kernel *k, const ArSpace *sp, const ArRow *a);

void ar_sys_add_eq(ArSys *s, const ArRow *a);
void ar_sys_add_ge(ArSys *s, const ArRow *a);   /* a >= 0 */
/* Adds the bounds of every loop and the conditions of every guard enclosing n
 * (not n itself), its variables on `side`; self adds n's own bounds too when n is
 * a loop.  Parts that are not affine are left out: the domain only grows. */
void ar_sys_add_domain(ArSys *s, ArSpace *sp, const Node *n, int side, bool self);
/* Adds lo <= v < hi for loop l on side. */
void ar_sys_add_loop(ArSys *s, ArSpace *sp, const Node *l, int side);
/* The rows tying each quotient column of sp not yet added to its numerator
 * (0 <= num - d*q <= d-1, and q's bounds when num has one variable with constant
 * bounds in s); call once the domains are in s. */
void ar_sys_add_divs(ArSys *s, ArSpace *sp);
/* Rational Fourier-Motzkin with integer tightening and a GCD test: false only when
 * the system certainly has no integer solution. */
bool ar_sys_feasible(const ArSys *s);

/* ---- reduction identities ---- */

/* A value of dtype t: f when t is a float type, i otherwise. */
typedef struct ArScalar {
    bool is_float;
    double f;
    int64_t i;
} ArScalar;

/* The identity of reduction operator op (ADD MUL MAX MIN) in dtype t: 0, 1, the
 * lowest and the highest value (-inf and +inf for floats; the type's extremes for
 * integers, false and true for bool).  For a float sum, neg_zero picks -0.0, the
 * exact neutral element (x + -0.0 == x for every x, -0.0 included), over +0.0,
 * the value the language gives an empty sum.  False for SOP_ASSIGN. */
bool ar_identity(StmtOp op, DType t, bool neg_zero, ArScalar *out);

#endif
