/* Unit tests of the integer systems behind every dependence test (passes/deps.c,
 * ar_sys_feasible), above all the mixed-radix splitting of equalities
 * (delinearization) that lets bind prove copy mappings such as the K = 32 gemm's
 * `Bs[by*2 + br, (bu*16 + bx)*4 + bv]`:
 *
 *  - hand-written systems whose answer is known: the mixed-radix subscripts of a
 *    staging copy against a copy with another thread index (no solution: distinct
 *    threads write distinct elements), and the same subscripts with an overlapping
 *    digit (a solution: two threads write one element; it must stay "feasible");
 *  - a randomized soundness check: small bounded systems of mixed-radix shape are
 *    enumerated exhaustively, and whenever an integer solution exists ar_sys_feasible
 *    must answer true (perfc may refuse wrongly, never allow wrongly).  It also
 *    counts how many of the systems without solutions are proven so, as a measure
 *    of precision (printed; not a pass/fail criterion beyond the cases above).
 *
 * Run from the build folder; no arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/xform_int.h"

static int fails;

typedef struct Row {
    int64_t c[8];
    int64_t k;
} Row;

/* lo <= x_c <= hi */
static void bound(ArSys *s, int c, int64_t lo, int64_t hi)
{
    ArRow a;
    memset(&a, 0, sizeof a);
    a.c[c] = 1;
    a.k = -lo;
    ar_sys_add_ge(s, &a);
    memset(&a, 0, sizeof a);
    a.c[c] = -1;
    a.k = hi;
    ar_sys_add_ge(s, &a);
}

static void row(ArSys *s, bool eq, const int64_t *c, int n, int64_t k)
{
    ArRow a;
    memset(&a, 0, sizeof a);
    for (int i = 0; i < n; i++)
        a.c[i] = c[i];
    a.k = k;
    if (eq)
        ar_sys_add_eq(s, &a);
    else
        ar_sys_add_ge(s, &a);
}

static void expect(const char *what, ArSys *s, bool want)
{
    bool got = ar_sys_feasible(s);
    if (got != want) {
        printf("FAIL %s: ar_sys_feasible says %s, expected %s\n", what, got ? "feasible" : "infeasible",
               want ? "feasible" : "infeasible");
        fails++;
    } else
        printf("ok   %s: %s\n", what, got ? "feasible (may conflict)" : "infeasible (proven)");
    ar_sys_free(s);
}

/* Columns 0..2: bu, bx, bv of one thread; 3..5: bu', bx', bv' of the other.
 * Subscript (bu*R1 + bx)*R0 + bv on both sides, equal; bx < bx' (distinct
 * threads); bu in 0..nu-1, bx in 0..nx-1, bv in 0..nv-1. */
static void radix_case(const char *what, int64_t r1, int64_t r0, int64_t nu, int64_t nx, int64_t nv, bool want)
{
    ArSys s;
    ar_sys_init(&s);
    int64_t e[6] = {r1 * r0, r0, 1, -r1 * r0, -r0, -1};
    row(&s, true, e, 6, 0);
    for (int side = 0; side < 2; side++) {
        bound(&s, 3 * side + 0, 0, nu - 1);
        bound(&s, 3 * side + 1, 0, nx - 1);
        bound(&s, 3 * side + 2, 0, nv - 1);
    }
    int64_t lt[6] = {0, -1, 0, 0, 1, 0}; /* bx' - bx - 1 >= 0 */
    row(&s, false, lt, 6, -1);
    expect(what, &s, want);
}

/* Brute force over the box; true when some point satisfies every row. */
static bool brute(const Row *eq, int neq, const Row *in, int nin, int n, const int64_t *lo, const int64_t *hi)
{
    int64_t x[8];
    for (int i = 0; i < n; i++)
        x[i] = lo[i];
    for (;;) {
        bool ok = true;
        for (int r = 0; r < neq && ok; r++) {
            int64_t v = eq[r].k;
            for (int i = 0; i < n; i++)
                v += eq[r].c[i] * x[i];
            ok = v == 0;
        }
        for (int r = 0; r < nin && ok; r++) {
            int64_t v = in[r].k;
            for (int i = 0; i < n; i++)
                v += in[r].c[i] * x[i];
            ok = v >= 0;
        }
        if (ok)
            return true;
        int i = 0;
        while (i < n && x[i] == hi[i])
            x[i] = lo[i], i++;
        if (i == n)
            return false;
        x[i]++;
    }
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static int64_t rnd(int64_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (int64_t)(rng % (uint64_t)n);
}

/* Random systems shaped like pair systems of split/collapsed subscripts: two
 * copies (x, x') of up to 3 digits with radices and ranges near each other (some
 * ranges overlap the next digit, some do not), an equality of the two mixed-radix
 * numbers plus a random offset, sometimes a second equality, and a strict order on
 * one digit pair.  Soundness: a brute-force solution forces "feasible". */
static void random_check(int trials)
{
    int sound_fail = 0, infeasible = 0, proven = 0;
    for (int t = 0; t < trials; t++) {
        int nd = 2 + (int)rnd(2), n = 2 * nd;
        int64_t lo[8], hi[8], coef[4];
        Row eq[2], in[2];
        int neq = 1, nin = 1;
        memset(eq, 0, sizeof eq);
        memset(in, 0, sizeof in);
        int64_t radix = 1;
        for (int d = nd - 1; d >= 0; d--) { /* digit d has weight coef[d] */
            coef[d] = radix;
            int64_t ext = 1 + rnd(6);   /* values 0..ext-1, sometimes more than the radix step */
            lo[d] = lo[nd + d] = rnd(3) == 0 ? -rnd(2) : 0;
            hi[d] = hi[nd + d] = lo[d] + ext - 1;
            radix *= 1 + rnd(6);
        }
        for (int d = 0; d < nd; d++) {
            eq[0].c[d] = coef[d] * (rnd(5) == 0 ? -1 : 1);
            eq[0].c[nd + d] = -coef[d];
        }
        eq[0].k = rnd(3) == 0 ? rnd(7) - 3 : 0;
        if (rnd(4) == 0) { /* a second equality: one digit pair equal */
            int d = (int)rnd(nd);
            eq[1].c[d] = 1;
            eq[1].c[nd + d] = -1;
            neq = 2;
        }
        int d = (int)rnd(nd); /* x'_d - x_d - 1 >= 0 */
        in[0].c[d] = -1;
        in[0].c[nd + d] = 1;
        in[0].k = -1;
        if (rnd(3) == 0) { /* and sometimes a bound between two digits */
            int a = (int)rnd(n), b = (int)rnd(n);
            in[1].c[a] += 1;
            in[1].c[b] -= 1;
            in[1].k = rnd(4);
            nin = 2;
        }
        bool truth = brute(eq, neq, in, nin, n, lo, hi);
        ArSys s;
        ar_sys_init(&s);
        s.split = rnd(2) == 0; /* with and without case analysis */
        for (int r = 0; r < neq; r++)
            row(&s, true, eq[r].c, n, eq[r].k);
        for (int r = 0; r < nin; r++)
            row(&s, false, in[r].c, n, in[r].k);
        for (int i = 0; i < n; i++)
            bound(&s, i, lo[i], hi[i]);
        bool got = ar_sys_feasible(&s);
        ar_sys_free(&s);
        if (truth && !got) {
            if (sound_fail < 5) {
                printf("FAIL random system %d: has an integer solution but was proven infeasible:\n", t);
                for (int r = 0; r < neq; r++) {
                    printf("  eq:");
                    for (int i = 0; i < n; i++)
                        printf(" %lld", (long long)eq[r].c[i]);
                    printf(" | %lld\n", (long long)eq[r].k);
                }
            }
            sound_fail++;
        }
        if (!truth) {
            infeasible++;
            proven += !got;
        }
    }
    printf("%s random systems: %d, %d without solutions, %d of those proven (%d unsound answers)\n",
           sound_fail ? "FAIL" : "ok  ", trials, infeasible, proven, sound_fail);
    fails += sound_fail != 0;
}

int main(void)
{
    /* B of the K = 32 gemm: 128 floats a row = 2 x 16 chunks of 4; distinct
     * thread.x (bx) never meet. */
    radix_case("Bs (bu*16 + bx)*4 + bv, bx in 0..16", 16, 4, 2, 16, 4, false);
    /* the same with a digit wider than its radix: bx in 0..17 reaches the next bu,
     * (bu=0, bx=16) and (bu=1, bx=0) are one chunk: must stay feasible */
    radix_case("overlap (bu*16 + bx)*4 + bv, bx in 0..17", 16, 4, 2, 17, 4, true);
    /* bv over 5 values overlaps the next chunk */
    radix_case("overlap (bu*16 + bx)*4 + bv, bv in 0..5", 16, 4, 2, 16, 5, true);
    /* radices that are not powers of two */
    radix_case("(bu*5 + bx)*3 + bv", 5, 3, 4, 5, 3, false);
    radix_case("overlap (bu*5 + bx)*3 + bv, bx in 0..6", 5, 3, 4, 6, 3, true);

    /* A of the K = 32 gemm through collapse: row (ay*4 + au)*2 + q, column
     * (af - 8q)*4 + av with q = af / 8 (0 <= af - 8q <= 7); distinct af.
     * Columns: ay au af q av | ay' au' af' q' av'. */
    for (int overlap = 0; overlap < 2; overlap++) {
        ArSys s;
        ar_sys_init(&s);
        int64_t r[10] = {8, 2, 0, 1, 0, -8, -2, 0, -1, 0};
        row(&s, true, r, 10, 0);
        int64_t c[10] = {0, 0, 4, -32, 1, 0, 0, -4, 32, -1};
        row(&s, true, c, 10, 0);
        for (int side = 0; side < 2; side++) {
            int o = 5 * side;
            bound(&s, o + 0, 0, 15);
            bound(&s, o + 1, 0, overlap ? 4 : 3); /* au over 5 values reaches the next ay */
            bound(&s, o + 2, 0, 15);
            bound(&s, o + 3, 0, 1);
            bound(&s, o + 4, 0, 3);
            int64_t q1[10] = {0}, q2[10] = {0}; /* 0 <= af - 8q <= 7 */
            q1[o + 2] = 1, q1[o + 3] = -8;
            q2[o + 2] = -1, q2[o + 3] = 8;
            row(&s, false, q1, 10, 0);
            row(&s, false, q2, 10, 7);
        }
        int64_t lt[10] = {-1, 0, 0, 0, 0, 1, 0, 0, 0, 0}; /* ay < ay' */
        row(&s, false, lt, 10, -1);
        expect(overlap ? "overlap As row (ay*4 + au)*2 + af/8, au in 0..5, distinct ay"
                       : "As row (ay*4 + au)*2 + af/8, distinct ay",
               &s, overlap != 0);
    }

    /* The split rule itself: 4x + y == 5, y in 0..3 forces y = 1, x = 1 ... */
    {
        ArSys s;
        ar_sys_init(&s);
        int64_t e[2] = {4, 1};
        row(&s, true, e, 2, -5);
        bound(&s, 0, 0, 10);
        bound(&s, 1, 0, 3);
        expect("4x + y == 5, y in 0..3 (x = 1, y = 1)", &s, true);
        ar_sys_init(&s);
        row(&s, true, e, 2, -5);
        bound(&s, 0, 2, 10);
        bound(&s, 1, 0, 3);
        expect("4x + y == 5, y in 0..3, x >= 2", &s, false);
        /* ... and no multiple of 4 in range: 4x + y == 0 with y in 1..3 */
        ar_sys_init(&s);
        row(&s, true, e, 2, 0);
        bound(&s, 0, -10, 10);
        bound(&s, 1, 1, 3);
        expect("4x + y == 0, y in 1..3", &s, false);
        /* a negative coefficient on the small digit: 4x - y == 3, y in 0..3 (x=1,y=1) */
        int64_t f[2] = {4, -1};
        ar_sys_init(&s);
        row(&s, true, f, 2, -3);
        bound(&s, 0, 0, 10);
        bound(&s, 1, 0, 3);
        expect("4x - y == 3, y in 0..3 (x = 1, y = 1)", &s, true);
        /* y unbounded: nothing to split, and the system has solutions */
        ar_sys_init(&s);
        row(&s, true, e, 2, 0);
        bound(&s, 0, 1, 10);
        expect("4x + y == 0, y unbounded", &s, true);
    }

    random_check(20000);
    printf("%d failed\n", fails);
    return fails != 0;
}
