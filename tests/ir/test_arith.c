/* ir/arith by hand: floor division and modulo at every sign and at the int64
 * edges, constant evaluation failing rather than wrapping, intervals checked
 * against brute-force enumeration over small ranges, affine forms, and the
 * reduction identities. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ir/arith.h"

static int failures;
#define CHECK(c, ...)                                              \
    do {                                                           \
        if (!(c)) {                                                \
            failures++;                                            \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);   \
            fprintf(stderr, __VA_ARGS__);                          \
            fputc('\n', stderr);                                   \
        }                                                          \
    } while (0)

static const Span nowhere;

static void test_divmod(void)
{
    /* floor(a / b) * b + mod == a, mod with b's sign, against a slow definition */
    for (int64_t a = -20; a <= 20; a++)
        for (int64_t b = -7; b <= 7; b++) {
            int64_t q, r;
            if (b == 0) {
                CHECK(!ar_binop(IE_DIV, a, b, &q) && !ar_binop(IE_MOD, a, b, &r), "%lld / 0", (long long)a);
                continue;
            }
            CHECK(ar_binop(IE_DIV, a, b, &q) && ar_binop(IE_MOD, a, b, &r), "%lld / %lld", (long long)a, (long long)b);
            int64_t slow = (int64_t)floor((double)a / (double)b);
            CHECK(q == slow && q * b + r == a && (r == 0 || (r < 0) == (b < 0)) && (r < 0 ? -r : r) < (b < 0 ? -b : b),
                  "%lld / %lld: q %lld r %lld", (long long)a, (long long)b, (long long)q, (long long)r);
        }
    int64_t v;
    CHECK(!ar_binop(IE_DIV, INT64_MIN, -1, &v), "INT64_MIN / -1 must fail");
    CHECK(!ar_binop(IE_MOD, INT64_MIN, -1, &v), "INT64_MIN %% -1 is left to run time");
    CHECK(!ar_binop(IE_ADD, INT64_MAX, 1, &v) && !ar_binop(IE_SUB, INT64_MIN, 1, &v) &&
              !ar_binop(IE_MUL, INT64_MAX / 2 + 1, 2, &v), "overflow must fail");
    CHECK(ar_binop(IE_DIV, INT64_MIN, 2, &v) && v == INT64_MIN / 2, "INT64_MIN / 2");
    CHECK(ar_floordiv(-1, 4) == -1 && ar_floormod(-1, 4) == 3 && ar_floordiv(7, 4) == 1, "floordiv");
}

static bool var_ranges(ArEnv *env, const Var *v, int64_t *lo, int64_t *hi)
{
    const int64_t *r = env->ctx;
    *lo = r[2 * v->id];
    *hi = r[2 * v->id + 1];
    return true;
}

static void test_interval(void)
{
    Kernel *k = ir_kernel_new("t", nowhere);
    Var *i = ir_new_var(k, "i"), *j = ir_new_var(k, "j");
    Expr *I = ir_var(k, i), *J = ir_var(k, j);
    /* (i * 3 - j) / 4, (i - j) % 5, max(i, -j), min(i*j, 2), select(i < j, i, j + 1) */
    Expr *ex[] = {
        ir_bin(k, IE_DIV, ir_bin(k, IE_SUB, ir_bin(k, IE_MUL, I, ir_int(k, 3)), J), ir_int(k, 4)),
        ir_bin(k, IE_MOD, ir_bin(k, IE_SUB, I, J), ir_int(k, 5)),
        ir_bin(k, IE_MAX, I, ir_un(k, IE_NEG, J)),
        ir_bin(k, IE_MIN, ir_bin(k, IE_MUL, I, J), ir_int(k, 2)),
        ir_select(k, ir_bin(k, IE_LT, I, J), I, ir_bin(k, IE_ADD, J, ir_int(k, 1))),
        ir_bin(k, IE_MOD, I, ir_int(k, 8)),
    };
    static const int64_t boxes[][4] = {{0, 3, 0, 2}, {-5, 5, -3, 7}, {9, 11, 1, 1}, {-9, -2, -4, 0}};
    for (size_t b = 0; b < sizeof boxes / sizeof boxes[0]; b++) {
        int64_t r[4] = {boxes[b][0], boxes[b][1], boxes[b][2], boxes[b][3]};
        for (size_t e = 0; e < sizeof ex / sizeof ex[0]; e++) {
            ArEnv env = {.k = k, .var = var_ranges, .ctx = r};
            int64_t lo, hi, mn = INT64_MAX, mx = INT64_MIN;
            bool ok = ar_interval(&env, ex[e], &lo, &hi);
            for (int64_t x = r[0]; x <= r[1]; x++)
                for (int64_t y = r[2]; y <= r[3]; y++) {
                    int64_t p[4] = {x, x, y, y}, v;
                    ArEnv pt = {.k = k, .var = var_ranges, .ctx = p};
                    CHECK(ar_eval(&pt, ex[e], &v), "expression %zu at (%lld, %lld)", e, (long long)x, (long long)y);
                    mn = v < mn ? v : mn;
                    mx = v > mx ? v : mx;
                }
            CHECK(ok && lo <= mn && hi >= mx, "expression %zu box %zu: [%lld, %lld] does not hold [%lld, %lld]", e, b,
                  (long long)lo, (long long)hi, (long long)mn, (long long)mx);
        }
    }
    /* i % 8 over one period is exact */
    int64_t r[4] = {17, 21, 0, 0}, lo, hi;
    ArEnv env = {.k = k, .var = var_ranges, .ctx = r};
    CHECK(ar_interval(&env, ex[5], &lo, &hi) && lo == 1 && hi == 5, "i %% 8 over 17..21: [%lld, %lld]", (long long)lo,
          (long long)hi);
    /* a bound past int64 fails and says so */
    int64_t big[4] = {0, INT64_MAX, 0, 0};
    env = (ArEnv){.k = k, .var = var_ranges, .ctx = big};
    CHECK(!ar_interval(&env, ir_bin(k, IE_ADD, I, ir_int(k, 1)), &lo, &hi) && env.overflow, "overflow not reported");
    /* constants: parameters must be bound */
    Param *n = ir_add_param(k, "N");
    int64_t v;
    CHECK(!ar_const(k, ir_param(k, 0), &v), "an unbound parameter is not a constant");
    n->bound = true;
    n->value = 10;
    CHECK(ar_const(k, ir_bin(k, IE_DIV, ir_bin(k, IE_SUB, ir_param(k, 0), ir_int(k, 13)), ir_int(k, 2)), &v) &&
              v == -2, "(N - 13) / 2 with N = 10: %lld", (long long)v);
    CHECK(!ar_const(k, I, &v), "a loop variable is not a constant");
    ir_free(k);
}

static void test_aff(void)
{
    Kernel *k = ir_kernel_new("t", nowhere);
    Param *n = ir_add_param(k, "N");
    n->bound = true;
    n->value = 6;
    Var *i = ir_new_var(k, "i"), *j = ir_new_var(k, "j");
    /* (i + 2*j) * N - (j - 1) + N / 4  =  6i + 11j + 2 */
    Expr *e = ir_bin(k, IE_ADD,
                     ir_bin(k, IE_SUB,
                            ir_bin(k, IE_MUL, ir_bin(k, IE_ADD, ir_var(k, i), ir_bin(k, IE_MUL, ir_int(k, 2), ir_var(k, j))),
                                   ir_param(k, 0)),
                            ir_bin(k, IE_SUB, ir_var(k, j), ir_int(k, 1))),
                     ir_bin(k, IE_DIV, ir_param(k, 0), ir_int(k, 4)));
    ArAff a;
    CHECK(ar_aff_of(k, e, &a) && a.c == 2 && ar_aff_coef(&a, i->id) == 6 && ar_aff_coef(&a, j->id) == 11,
          "affine form of (i + 2j) * N - (j - 1) + N / 4");
    ArAff x;
    CHECK(!ar_aff_of(k, ir_bin(k, IE_MUL, ir_var(k, i), ir_var(k, j)), &x), "i * j is not affine");
    CHECK(!ar_aff_of(k, ir_bin(k, IE_DIV, ir_var(k, i), ir_int(k, 2)), &x), "i / 2 is not affine");
    /* substitute i := 2j + 1: 6(2j + 1) + 11j + 2 = 23j + 8 */
    ArAff b, w = {.c = 1, .n = 1, .var = {j->id}, .k = {2}};
    CHECK(ar_aff_of(k, e, &b) && ar_aff_subst(&b, i->id, &w) && b.c == 8 && ar_aff_coef(&b, j->id) == 23 &&
              ar_aff_coef(&b, i->id) == 0, "substitution");
    ArAff c = a;
    int64_t d;
    c.c += 5;
    CHECK(ar_aff_diff_const(&c, &a, &d) && d == 5 && !ar_aff_same(&c, &a) && ar_aff_same(&a, &a), "compare");
    int64_t vmin[2] = {0, -1}, vmax[2] = {3, 2}, lo, hi;
    CHECK(ar_aff_range(&a, vmin, vmax, &lo, &hi) && lo == 2 - 11 && hi == 2 + 18 + 22, "range [%lld, %lld]",
          (long long)lo, (long long)hi);
    ArAff big = {.c = 0, .n = 1, .var = {i->id}, .k = {INT64_MAX}};
    CHECK(!ar_aff_add(&big, &big, 2), "an overflowing coefficient fails");
    ir_free(k);
}

static void test_identity(void)
{
    ArScalar v;
    CHECK(ar_identity(SOP_ADD, DT_F32, false, &v) && v.is_float && v.f == 0 && !signbit(v.f), "+0.0");
    CHECK(ar_identity(SOP_ADD, DT_F64, true, &v) && v.f == 0 && signbit(v.f), "-0.0");
    CHECK(ar_identity(SOP_MUL, DT_F16, false, &v) && v.f == 1.0, "1");
    CHECK(ar_identity(SOP_MAX, DT_BF16, false, &v) && isinf(v.f) && v.f < 0, "-inf");
    CHECK(ar_identity(SOP_MIN, DT_F32, false, &v) && isinf(v.f) && v.f > 0, "+inf");
    CHECK(ar_identity(SOP_MAX, DT_I32, false, &v) && !v.is_float && v.i == INT32_MIN, "i32 max");
    CHECK(ar_identity(SOP_MIN, DT_I64, false, &v) && v.i == INT64_MAX, "i64 min");
    CHECK(ar_identity(SOP_MAX, DT_BOOL, false, &v) && v.i == 0 && ar_identity(SOP_MIN, DT_BOOL, false, &v) && v.i == 1,
          "bool");
    CHECK(!ar_identity(SOP_ASSIGN, DT_F32, false, &v), "= has no identity");
}

int main(void)
{
    test_divmod();
    test_interval();
    test_aff();
    test_identity();
    if (failures) {
        fprintf(stderr, "%d failure(s)\n", failures);
        return 1;
    }
    printf("ok\n");
    return 0;
}
