/* Transformation tests: each case applies schedule statements to a kernel and
 * checks either that they are accepted, print as expected and compute the same
 * outputs as the untransformed kernel in the interpreter, or that they are refused
 * with a message naming the reason.  Run from the build folder with the source
 * root as argument. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "xftest.h"

typedef struct Case {
    const char *file;   /* relative to the source root */
    const char *kernel; /* NULL: the first */
    const char *defs;
    const char *sched;
    const char *error;  /* NULL: must succeed; else a substring of the error */
    const char *ir_has; /* a substring of the printed IR after success, or NULL */
    const char *ir_not; /* must not appear */
} Case;

#define GEMM "stdlib/gemm.pdl"
#define SOFTMAX "stdlib/softmax.pdl"
#define CASES "tests/xform/cases.pdl"
#define OSM "tests/xform/online_softmax.pdl"
#define ATT "stdlib/attention.pdl"
#define ATTC "stdlib/attention_causal.pdl"

static const Case cases[] = {
    /* split */
    {GEMM, 0, "M=7,N=9,K=11", "split(i, 4)", 0, "if io * 4 + ii < M", 0},
    {GEMM, 0, "M=8,N=9,K=11", "split(i, 4, a, b)", 0, "for b in 0..4", "if "},
    {GEMM, 0, "M=7,N=9,K=11", "split(i, 4, tail=peel)", 0, "for it in 0..", "if "},
    {GEMM, 0, "M=7,N=9,K=11", "split(i, 0)", "factor must be at least 1", 0, 0},
    {GEMM, 0, "M=7,N=9,K=11", "split(q, 4)", "no loop `q`", 0, 0},
    {GEMM, 0, "M=7,N=9,K=11", "split(i, 4, j, x)", "already in use", 0, 0},
    {GEMM, 0, "M=7,N=9,K=11", "split(i, 4, tail=sideways)", "tail= takes", 0, 0},
    /* a factor past a constant extent is clamped to it: no guard, one outer trip */
    {GEMM, 0, "M=7,N=9,K=3", "split(k, 256)", 0, "for ki in 0..3", "if "},
    /* a one-lane vector loop (a 16-wide split clamped to N = 1) is accepted, left serial */
    {GEMM, 0, "M=7,N=1,K=3", "distribute(j) split(j, 16) vectorize(ji)", 0, 0, "vector"},
    {GEMM, 0, "M=7,N=9,K=11", "parallel(i) split(i, 2)", "already marked parallel", 0, 0},
    /* tile and reorder */
    {GEMM, 0, "M=7,N=9,K=11", "tile(i, j, 4, 2)", 0, "| | for ii in 0..4", 0},
    {GEMM, 0, "M=8,N=8,K=8", "tile(i, j, 4, 4, I, J, a, b)", 0, "for J in 0..", 0},
    {GEMM, 0, "M=7,N=9,K=11", "reorder(j, i)", 0, "for j in 0..N\n| for i in 0..M", 0},
    {GEMM, 0, "M=7,N=9,K=11", "reorder(k, j)", "not perfectly nested", 0, 0},
    {GEMM, 0, "M=7,N=9,K=11", "tile(i, k, 4, 4)", "must be the only content", 0, 0},
    {GEMM, 0, "M=7,N=9,K=11", "split(i, 4) reorder(j, ii, io)", 0, "for j in", 0},
    /* staging a temporary produced afresh by each iteration needs no copies ... */
    {SOFTMAX, 0, "R=5,C=7", "fuse(m.r, e.r) fuse(m.r, s.r) fuse(m.r, Y.r) cache(e, m.r, name=er)", 0,
     "er[0, e.c] = exp(", "er_c"},
    /* ... but one whose values are read outside the loop is copied back */
    {SOFTMAX, 0, "R=5,C=7", "cache(e, e.r, name=er)", 0, "] = er[er_c01, er_c11]", 0},
    /* fuse */
    {SOFTMAX, 0, "R=5,C=7", "fuse(m.r, e.r)", 0, 0, "for e.r"},
    {SOFTMAX, 0, "R=5,C=7", "fuse(m.r, s.r)", "must directly follow", 0, 0},
    /* what lies between may move before the first loop when it shares nothing with it:
     * the sum's initialisation (s = 0 and the rfactor's s_rf = 0) goes before the exp
     * loop; the exp loop (it reads m) cannot go before the max loop */
    {SOFTMAX, 0, "R=5,C=7",
     "fuse(m.r, e.r) fuse(m.r, s.r) fuse(m.r, Y.r) split(e.c, 4) split(s.c, 4) rfactor(s.ci) fuse(e.co, s.co)", 0,
     "| s[m.r] = 0\n| for s.ci_init in 0..4\n| | s_rf[s.ci_init] = 0\n| for e.co in", "for s.co"},
    {SOFTMAX, 0, "R=5,C=7", "fuse(m.r, s.r)", "cannot move before m.r: it shares `m`", 0, 0},
    {CASES, "mirror", "N=9", "fuse(t.i, Y.i)", "later iteration", 0, 0},
    {CASES, "axpy2", "N=5,M=6", "fuse(a.i, b.i) fuse(a.i, Y.i) fuse(a.j, b.j) fuse(a.j, Y.j)", 0, 0, 0},
    /* distribute */
    {GEMM, 0, "M=7,N=9,K=11", "distribute(j) reorder(k, j1)", 0, "for k in 0..K\n| | for j1 in 0..N", 0},
    {GEMM, 0, "M=7,N=9,K=11", "distribute(j) reorder(k, j1) reorder(k, i)", "not perfectly nested", 0, 0},
    {GEMM, 0, "M=7,N=9,K=11", "distribute(k)", "single node", 0, 0},
    /* marks */
    {GEMM, 0, "M=7,N=9,K=11", "parallel(i)", 0, "parallel", 0},
    {GEMM, 0, "M=7,N=9,K=11", "parallel(k)", "carries a dependence", 0, 0},
    {GEMM, 0, "M=7,N=9,K=11", "parallel(i) parallel(j)", "nested parallel", 0, 0},
    {GEMM, 0, "M=7,N=9,K=11", "vectorize(j)", "must be innermost", 0, 0},
    {GEMM, 0, "M=7,N=8,K=11", "reorder(k, j) ", "not perfectly nested", 0, 0},
    {GEMM, 0, "M=7,N=9,K=11", "split(k, 4) vectorize(ki)", "not unit-stride", 0, 0},
    {GEMM, 0, "M=7,N=9,K=11", "unroll(k)", 0, "unroll", 0},
    {GEMM, 0, "M=7,N=9,K=100", "unroll(k)", "unroll takes", 0, 0},
    {SOFTMAX, 0, "R=5,C=8", "vectorize(e.c)", 0, "vector", 0},
    {SOFTMAX, 0, "R=5,C=8", "reorder(e.c, e.r) vectorize(e.r)", "not unit-stride", 0, 0},
    /* rfactor */
    {GEMM, 0, "M=7,N=9,K=8", "split(k, 4) rfactor(ki) vectorize(ki)", 0, "C_rf[ki] +=", 0},
    {GEMM, 0, "M=7,N=9,K=11", "split(k, 4) rfactor(ki) vectorize(ki)", 0, "vector", 0},
    {GEMM, 0, "M=7,N=9,K=12", "split(k, 3) rfactor(ko) parallel(ko)", 0, "parallel", 0},
    {GEMM, 0, "M=7,N=9,K=11", "rfactor(j)", "single reduction statement", 0, 0},
    {GEMM, 0, "M=7,N=9,K=11", "parallel(i) split(k, 4) rfactor(ki)", 0, 0, 0},
    /* expand=1: partials per result element, so the slices can be distributed out
     * and put outermost (GPU split-K), ragged tiles padded past the edges */
    {GEMM, 0, "M=7,N=9,K=12",
     "split(k, 4, kz, kr) rfactor(kz, expand=1) fuse(kz_init, kz) distribute(j) distribute(i) "
     "reorder(kz_init, i1, j1) fuse(i, i2) fuse(j, j2)",
     0, "for kz_init in 0..3\n| for i1 in 0..M\n| | for j1 in 0..N\n| | | C_rf[kz_init, i1, j1] = 0", 0},
    {GEMM, 0, "M=7,N=9,K=12",
     "split(k, 4, kz, kr) rfactor(kz, expand=1) fuse(kz_init, kz) distribute(j) distribute(i) "
     "reorder(kz_init, i1, j1) fuse(i, i2) fuse(j, j2) tile(i1, j1, 4, 4, tail=pad)",
     0, "C_rf?[kz_init, ", 0},
    {GEMM, 0, "M=7,N=9,K=12", "split(k, 4, kz, kr) rfactor(kz, name=P, expand=1)", 0, "C[i, j] += P[kz_comb, i, j]",
     0},
    {GEMM, 0, "M=7,N=9,K=12", "split(k, 4) rfactor(ko, expand=2)", "expand= takes 0 or 1", 0, 0},
    /* without expand the partials are one element's: the slices cannot leave it */
    {GEMM, 0, "M=7,N=9,K=12", "split(k, 4, kz, kr) rfactor(kz) distribute(j)", "a later part of j feeds an earlier part", 0, 0},
    /* temporaries */
    {SOFTMAX, 0, "R=5,C=7", "inline(e)", 0, "exp(X[", "e["},
    {SOFTMAX, 0, "R=5,C=7", "inline(m)", "written by 2 statements", 0, 0},
    {SOFTMAX, 0, "R=5,C=7", "inline(X)", "only temporaries", 0, 0},
    {SOFTMAX, 0, "R=5,C=7", "compute_at(m, e.r)", 0, "for e.r in 0..R\n| m[e.r] = -inf", 0},
    {SOFTMAX, 0, "R=5,C=7", "compute_at(s, Y.r) compute_at(m, e.r)", 0, 0, 0},
    {SOFTMAX, 0, "R=5,C=7", "compute_at(e, Y.r)", "also read outside loop Y.r", 0, 0},
    {SOFTMAX, 0, "R=5,C=7", "compute_at(m, m.c)", "nested in one another", 0, 0},
    {CASES, "blur", "N=10", "split(Y.i, 4) compute_at(t, Y.io)", 0, "min(N + 2, Y.io * 4 + 6)", 0},
    {CASES, "blur", "N=12", "split(Y.i, 4) compute_at(t, Y.io)", 0, "for t.i in Y.io * 4..Y.io * 4 + 6", 0},
    {CASES, "mirror", "N=9", "inline(t)", 0, 0, "t["},
    /* staging */
    {GEMM, 0, "M=8,N=8,K=8", "tile(i, j, 4, 4) cache(B, jo)", 0, "B_jo[B_jo_c0, B_jo_c1] = B[B_jo_c0, jo * 4 + B_jo_c1]", 0},
    {GEMM, 0, "M=7,N=9,K=11", "tile(i, j, 4, 4) cache(A, jo) cache(C, jo)", 0, "| | | | | C[io * 4 + C_jo_c01, jo * 4 + C_jo_c11] = C_jo[", 0},
    {GEMM, 0, "M=7,N=9,K=11", "tile(i, j, 4, 4) cache(A, jo) padding(A_jo, 3) layout(A_jo, 1, 0)", 0, "A_jo: f32[14, 4] local", 0},
    {GEMM, 0, "M=7,N=9,K=11", "padding(A, 1)", "its layout is the kernel's interface", 0, 0},
    {GEMM, 0, "M=7,N=9,K=11", "tile(i, j, 4, 4) parallel(io) cache(B, jo)", 0, 0, 0},
    {GEMM, 0, "M=7,N=9,K=11", "tile(i, j, 4, 4) parallel(io) cache(C, jo)", "stage it before marking", 0, 0},
    {GEMM, 0, "M=8,N=8,K=8", "tile(i, j, 4, 4) cache(A, io) parallel(io)", 0, "parallel", 0},
    {GEMM, 0, "M=8,N=8,K=8", "cache(A, k)", 0, 0, 0},
    /* a copy staged outside a parallel loop that writes it would be shared by its
     * threads (found by the property test: the JIT raced, the interpreter agreed) */
    {"stdlib/depthwise_conv2d.pdl", 0, 0, "cache(Y, y) parallel(c) cache(Y_y, n)", "shared by its threads", 0, 0},
    {GEMM, 0, "M=8,N=8,K=8", "parallel(j) cache(C, i)", "written inside parallel loop j", 0, 0},
    {"stdlib/conv2d.pdl", 0, 0, "split(Y.x, 2) cache(X, Y.xo)", 0, 0, 0},
    /* prefetch: the box the body of `at` reads, `from` advanced by the offset */
    {SOFTMAX, 0, "R=5,C=7", "prefetch(X, e.c, e.r)", 0, "| for e.c in 0..C\n| | prefetch X[e.r + 1, e.c]\n", 0},
    {SOFTMAX, 0, "R=5,C=7", "split(e.c, 4) prefetch(X, e.co, e.r)", 0, "| | prefetch X[e.r + 1, e.co * 4 .. +4]\n", 0},
    {SOFTMAX, 0, "R=5,C=7", "prefetch(X, e.c, e.c, 2)", 0, "prefetch X[e.r, e.c + 2]", 0},
    {SOFTMAX, 0, "R=5,C=7", "prefetch(m, m.c, m.r)", 0, "prefetch m[m.r + 1]\n", 0},
    /* a box the body only stores to is fetched for writing; like= takes the box from
     * a loop beside `at`, offset 0 being this iteration of `from` */
    {SOFTMAX, 0, "R=5,C=7", "prefetch(Y, Y.c, Y.r)", 0, "prefetch Y[Y.r + 1, Y.c] for write", 0},
    {SOFTMAX, 0, "R=5,C=7", "fuse(m.r, e.r) fuse(m.r, s.r) fuse(m.r, Y.r) prefetch(Y, e.c, m.r, 0, like=Y.c)", 0,
     "| | prefetch Y[m.r, e.c] for write\n| | e[m.r, e.c] = exp(", 0},
    /* the stdlib CPU schedule's form, vector loops and all, at an odd size (tails) */
    {SOFTMAX, 0, "R=5,C=37",
     "fuse(m.r, e.r) fuse(m.r, s.r) fuse(m.r, Y.r) cache(e, m.r, name=er) split(e.c, 8) split(Y.c, 8) "
     "vectorize(e.ci) vectorize(Y.ci) prefetch(X, e.co, m.r) prefetch(Y, e.co, m.r, 0, like=Y.co) parallel(m.r)",
     0, "| | prefetch X[m.r + 1, e.co * 8 .. +8]\n| | prefetch Y[m.r, e.co * 8 .. +8] for write\n", 0},
    /* boxes of many lines (the code generator loops over lines, and over rows) */
    {GEMM, 0, "M=7,N=9,K=1100", "prefetch(A, i, i)", 0, "prefetch A[i + 1, 0 .. +1100]\n", 0},
    {GEMM, 0, "M=9,N=9,K=400", "tile(i, j, 4, 4) prefetch(A, io, io)", 0, "prefetch A[io * 4 + 4 .. +4, 0 .. +400]", 0},
    /* later transformations carry it */
    {SOFTMAX, 0, "R=5,C=7", "prefetch(X, e.c, e.r) split(e.c, 4)", 0,
     "| | | | prefetch X[e.r + 1, e.co * 4 + e.ci]\n", 0},
    {SOFTMAX, 0, "R=5,C=7", "prefetch(X, e.c, e.r) split(e.r, 2, tail=peel)", 0,
     "prefetch X[e.ro * 2 + e.ri + 1, e.c]", 0},
    {SOFTMAX, 0, "R=5,C=7", "prefetch(X, e.c, e.r) fuse(m.r, e.r)", 0, "prefetch X[m.r + 1, e.c]", "e.r"},
    {SOFTMAX, 0, "R=5,C=8", "split(e.c, 4) prefetch(X, e.ci, e.r) vectorize(e.ci) unroll(e.co)", 0,
     "prefetch X[e.r + 1, e.co * 4 + e.ci]", 0},
    {SOFTMAX, 0, "R=5,C=7", "prefetch(X, e.c, e.r) reorder(e.c, e.r)", 0,
     "for e.c in 0..C\n| for e.r in 0..R\n| | prefetch X[e.r + 1, e.c]", 0},
    {SOFTMAX, 0, "R=5,C=7", "prefetch(e, Y.c, Y.r) layout(e, 1, 0)", 0, "prefetch e[Y.c, Y.r + 1]", 0},
    /* distribute keeps it with the part that reads its buffer */
    {GEMM, 0, "M=7,N=9,K=11", "prefetch(A, j, i) distribute(j)", 0,
     "| for j1 in 0..N\n| | prefetch A[i + 1, 0 .. +11]\n| | for k", 0},
    {GEMM, 0, "M=8,N=8,K=8", "tile(i, j, 4, 4) prefetch(B, jo, jo) cache(B, jo)", 0,
     "| | prefetch B[0 .. +8, jo * 4 + 4 .. +4]\n", 0},
    /* ... and removes it with the temporary it fetches */
    {SOFTMAX, 0, "R=5,C=7", "prefetch(e, Y.c, Y.r) inline(e)", 0, 0, "prefetch"},
    {SOFTMAX, 0, "R=5,C=7", "fuse(m.r, e.r) fuse(m.r, s.r) fuse(m.r, Y.r) prefetch(e, Y.c, m.r) cache(e, m.r, name=er)",
     0, "er[0, e.c] = exp(", "prefetch"},
    /* refusals */
    {SOFTMAX, 0, "R=5,C=7", "prefetch(X, e.r, e.r) reorder(e.c, e.r)", "not perfectly nested", 0, 0},
    {SOFTMAX, 0, "R=5,C=7", "prefetch(X, e.r, e.r) reorder(e.c, e.r)", "holds a prefetch of X", 0, 0},
    {SOFTMAX, 0, "R=5,C=7", "prefetch(X, e.c, e.r, 0)", "the offset is 0", 0, 0},
    {SOFTMAX, 0, "R=5,C=7", "prefetch(X, e.c, e.r, 0, like=e.c)", "like= names e.c itself", 0, 0},
    {GEMM, 0, "M=7,N=9,K=8", "split(k, 4) prefetch(A, ki, ki) rfactor(ki)", "single reduction statement", 0, 0},
    {GEMM, 0, "M=7,N=9,K=8", "split(k, 4) prefetch(A, ki, ki) rfactor(ki)", "ki holds a prefetch of A", 0, 0},
    {SOFTMAX, 0, "R=5,C=7", "prefetch(X, e.r, e.c)", "loop e.c does not enclose loop e.r", 0, 0},
    {SOFTMAX, 0, "R=5,C=7", "prefetch(Y, e.c, e.r)", "nothing in loop e.c reads or writes Y", 0, 0},
    {SOFTMAX, 0, "R=5,C=7", "prefetch(m, e.c, e.c)", "does not move with e.c", 0, 0},
    {SOFTMAX, 0, "R=5,C=7", "prefetch(X, e.c, e.r) prefetch(X, e.c, e.r)", "already prefetches", 0, 0},
    {SOFTMAX, 0, "R=5,C=20000", "prefetch(X, e.r, e.r)", "more than 64 KB", 0, 0},
    {SOFTMAX, 0, "R=5,C=7", "prefetch(X, e.c)", "usage: prefetch(", 0, 0},
    {SOFTMAX, 0, "R=5,C=7", "prefetch(X, e.c, e.r, foo=1)", "unknown argument foo=", 0, 0},
    {SOFTMAX, 0, "R=5,C=7", "fuse(m.r, e.r) fuse(m.r, s.r) fuse(m.r, Y.r) cache(e, m.r, name=er) prefetch(er, Y.c, m.r)",
     "er is a local staging buffer", 0, 0},
    {SOFTMAX, 0, "R=5,C=7", "prefetch(X, e.c, e.r, 1, like=m.c)", "must be a loop inside e.r beside e.c", 0, 0},
    {SOFTMAX, 0, "R=5,C=8", "fuse(m.r, e.r) fuse(m.r, s.r) fuse(m.r, Y.r) split(e.c, 2) prefetch(Y, e.co, m.r, 0, like=Y.c)",
     "runs over other bounds", 0, 0},
    /* bind: threads must write distinct elements, proven (passes/deps.c).  The
     * staging copies of the K = 32 gemm (its variant tiled32): B's 32 x 128 floats as rows
     * by*2 + br and 16-byte chunks (bu*16 + bx)*4 + bv, which needs the mixed-radix
     * splitting of equalities (refused before it, with or without by bound first);
     * A's 128 x 32 through collapse, chunk f % 8 of row (iy*4 + iu)*2 + f / 8. */
    {CASES, "copy2", "R=32,C=128",
     "split(j, 4, jc, jv) split(jc, 16, ju, jx) split(i, 2, iy, ir) reorder(iy, jx, ir, ju) bind(iy, thread.y) "
     "bind(jx, thread.x)", 0, "| for jx in 0..16 thread.x\n| | for ir in 0..2\n", 0},
    {CASES, "copy2", "R=32,C=128",
     "split(j, 4, jc, jv) split(jc, 16, ju, jx) split(i, 2, iy, ir) reorder(iy, jx, ir, ju) bind(jx, thread.x)", 0,
     "for jx in 0..16 thread.x", 0},
    {CASES, "copy2", "R=128,C=32",
     "split(j, 4, jc, jv) split(i, 2, ir, ix) collapse(ix, jc, f) split(ir, 4, iy, iu) reorder(iy, f, iu) "
     "bind(iy, thread.y) bind(f, thread.x)", 0, "Y[(iy * 4 + iu) * 2 + f / 8, f % 8 * 4 + jv] = ", 0},
    /* non-power-of-two radices */
    {CASES, "copy2", "R=6,C=60",
     "split(j, 3, jc, jv) split(jc, 5, ju, jx) split(i, 3, iy, ir) reorder(iy, jx, ir, ju) bind(iy, thread.y) "
     "bind(jx, thread.x)", 0, "for jx in 0..5 thread.x", 0},
    /* each iteration of Y.io its own window of t: t[Y.io*4 + t.io*2 + t.ii] with
     * t.io*2 + t.ii in 0..4 */
    {CASES, "chain", "N=64", "split(Y.i, 4) compute_at(t, Y.io) split(t.i, 2) bind(Y.io, thread.x)", 0,
     "for Y.io in 0..N / 4 thread.x", 0},
    /* refused: the blur's windows overlap (t.io*2 + t.ii in 0..6 reaches the next
     * Y.io's), so two threads would write one element of t */
    {CASES, "blur", "N=64", "split(Y.i, 4) compute_at(t, Y.io) split(t.i, 2) bind(Y.io, thread.x)",
     "carries a dependence", 0, 0},
    {CASES, "blur", "N=64", "split(Y.i, 4) compute_at(t, Y.io) bind(Y.io, thread.x)", "carries a dependence", 0, 0},
    /* refused: f / 4 names a column of C, f % 4 a k: four threads add into one
     * element (an index that moves with the loop, not one-to-one) */
    {GEMM, 0, "M=4,N=8,K=4", "distribute(j) split(j1, 4, jo, jv) collapse(jv, k, f) bind(f, thread.x)",
     "carries a dependence", 0, 0},
    /* ... while f / 4 * 4 + f % 4 is one-to-one */
    {GEMM, 0, "M=4,N=8,K=4", "distribute(j) split(j1, 4, jo, jv) collapse(jo, jv, f) bind(f, thread.x)", 0,
     "for f in 0..8 thread.x", 0},
    /* online_softmax: tiles that do not divide S (a guarded tail), one tile, tiles of
     * one, a tile clamped to S; the score s computed per tile (no S x S buffer left) */
    {OSM, "att", "S=13,D=5", "online_softmax(O, O.j, 4)", 0, "p: f64[S, 4] global temp", "[S, S]"},
    {OSM, "att", "S=13,D=5", "online_softmax(O, O.j, 4)", 0,
     "| | for s.ji in 0..4\n| | | if O.jo * 4 + s.ji < S\n| | | | s[O.i, s.ji] = 0", 0},
    {OSM, "att", "S=13,D=5", "online_softmax(O, O.j, 13)", 0, "for O.jo in 0..1", "if "},
    {OSM, "att", "S=13,D=5", "online_softmax(O, O.j, 1)", 0, "for O.jo in 0..13", 0},
    {OSM, "att", "S=6,D=2", "online_softmax(O, O.j, 100)", 0, "s: f64[S, 6]", 0},
    {OSM, "att", "S=13,D=5", "param T in [3, 5]  online_softmax(O, O.j, T)", 0,
     "m_scale[O.i] = exp(m_scale[O.i] - select(m[O.i] == -inf, 0, m[O.i]))", 0},
    /* a strict causal mask: row 0 sums no term (its output stays 0), whole tiles masked */
    {OSM, "att_strict", "S=11,D=3", "online_softmax(O, O.j, 3)", 0, "| | | | if O.jo * 3 + m.ji < O.i", "[S, S]"},
    {OSM, "att_strict", "S=8,D=3", "online_softmax(O, O.j, 4)", 0, 0, "< S\n"},
    /* an additive bias (t = s + Bias: both per tile), the division before the product */
    {OSM, "att_bias", "H=2,S=11,D=3", "online_softmax(O, O.j, 4)", 0, "t: f32[H, S, 4] global temp", "[H, S, S]"},
    /* scores of -inf: early tiles of late rows hold only -inf */
    {OSM, "att_neginf", "S=12,D=3", "online_softmax(O, O.j, 2)", 0, 0, 0},
    /* a softmax of an input, then a product with W */
    {OSM, "softmax_mm", "R=5,C=9,N=4", "online_softmax(Y, Y.c, 4)", 0, "| | | Y[Y.r, n] *= m_scale[Y.r]", "e: f64[R, C]"},
    {OSM, "softmax_y", "R=5,C=9,N=4", "inline(y) online_softmax(Y, Y.c, 4)", 0, 0, "e: f64[R, C]"},
    /* the stdlib attention kernels; further moves on the result */
    {ATT, 0, "B=1,H=2,S=9,D=4", "online_softmax(O, O.j, 4)", 0, "O_acc[O.b, O.h, O.i, O.d] *= m_scale[", 0},
    {ATTC, 0, "B=2,H=1,S=10,D=3", "online_softmax(O, O.j, 4)", 0, 0, 0},
    {ATTC, 0, "B=1,H=1,S=12,D=3",
     "online_softmax(O, O.j, 4) split(O.i, 4) distribute(O.ii) reorder(O.jo, O.ii3) distribute(O.ii3) "
     "cache(p, O.jo) cache(s, O.jo)",
     0, "p_O.jo: f32[1, 1, 4, 4] local temp", "s_O.jo_c"},
    /* refusals */
    {OSM, "softmax_y", "R=5,C=9,N=4", "online_softmax(Y, Y.c, 4)", "apply inline(y) first", 0, 0},
    {OSM, "bad_mask", "S=9,D=3", "online_softmax(O, O.j, 4)",
     "the maximum and the contraction over O.j have different masks", 0, 0},
    {OSM, "bad_range", "S=9,D=3", "online_softmax(O, O.j, 4)",
     "the maximum runs m.j over another range than the contraction's O.j", 0, 0},
    {OSM, "bad_out", "S=9,D=3", "online_softmax(O, O.j, 4)", "l is an output of the kernel", 0, 0},
    {OSM, "bad_reader", "S=9,D=3", "online_softmax(O, O.j, 4)", "p is also read outside the softmax chain", 0, 0},
    {OSM, "bad_exponent", "S=9,D=3", "online_softmax(O, O.j, 4)",
     "the exponent of p subtracts the maximum m from another value than the one maximised", 0, 0},
    {OSM, "bad_nodiv", "S=9,D=3", "online_softmax(O, O.j, 4)", "the sum over O.j is not divided by a sum of p", 0, 0},
    {OSM, "att", "S=9,D=3", "parallel(O.i) online_softmax(O, O.j, 4)",
     "the nest of O has been scheduled; apply online_softmax before other moves on it", 0, 0},
    {OSM, "att", "S=9,D=3", "online_softmax(O, m.j, 4)", "loop m.j must hold one sum", 0, 0},
    {OSM, "att", "S=9,D=3", "online_softmax(O, O.j, 0)", "the tile must be 1 to 2^20", 0, 0},
    {OSM, "att", "S=9,D=3", "online_softmax(m, O.j, 4)", "loop O.j is not in the nest that computes m", 0, 0},
    {SOFTMAX, 0, "R=5,C=7", "online_softmax(Y, Y.c, 4)", "loop Y.c must hold one sum", 0, 0},
    /* parameters */
    {GEMM, 0, "M=8,N=8,K=8", "param T in [4, 2]  split(i, T)", 0, "for ii in 0..4", 0},
    {GEMM, 0, "M=8,N=8,K=8", "param T = 3  split(i, T)", 0, "for ii in 0..3", 0},
    {GEMM, 0, "M=8,N=8,K=8", "split(i, T)", "no schedule parameter", 0, 0},
    {GEMM, 0, "M=8,N=8,K=8", "frobnicate(i)", "unknown transformation", 0, 0},
};

int main(int argc, char **argv)
{
    const char *root = argc > 1 ? argv[1] : ".";
    int fails = 0, n = (int)(sizeof cases / sizeof cases[0]);
    for (int ci = 0; ci < n; ci++) {
        const Case *c = &cases[ci];
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", root, c->file);
        XtFile f;
        if (!xt_open(&f, path)) {
            printf("FAIL %d: cannot load %s\n", ci, path);
            fails++;
            continue;
        }
        Kernel *ref = xt_lower(&f, c->kernel, c->defs, 6), *k = xt_lower(&f, c->kernel, c->defs, 6);
        if (!ref || !k) {
            printf("FAIL %d: cannot lower %s\n", ci, path);
            fails++;
            xt_close(&f);
            continue;
        }
        Diags d;
        diag_init(&d);
        bool ok = xt_schedule(k, c->sched, &d);
        StrBuf ir = {0}, why = {0};
        ir_print_kernel(k, &ir);
        const char *msg = d.text.s ? d.text.s : "";
        bool pass = true;
        if (c->error) {
            if (ok || !strstr(msg, c->error)) {
                printf("FAIL %d `%s`: expected an error with \"%s\", got %s\n%s\n", ci, c->sched, c->error,
                       ok ? "success" : "another error", msg);
                pass = false;
            }
        } else if (!ok) {
            printf("FAIL %d `%s`: refused:\n%s\n", ci, c->sched, msg);
            pass = false;
        } else {
            Diags v;
            diag_init(&v);
            if (!ir_verify(k, &v)) {
                printf("FAIL %d `%s`: verifier:\n%s\n%s\n", ci, c->sched, v.text.s, ir.s);
                pass = false;
            }
            diag_free(&v);
            if (pass && c->ir_has && !strstr(ir.s, c->ir_has)) {
                printf("FAIL %d `%s`: the IR lacks \"%s\":\n%s\n", ci, c->sched, c->ir_has, ir.s);
                pass = false;
            }
            if (pass && c->ir_not && strstr(ir.s, c->ir_not)) {
                printf("FAIL %d `%s`: the IR has \"%s\":\n%s\n", ci, c->sched, c->ir_not, ir.s);
                pass = false;
            }
            double e = pass ? xt_interp_diff(ref, k, 1234 + (uint64_t)ci, &why) : 0;
            if (pass && !(e <= 1e-12)) {
                printf("FAIL %d `%s`: outputs differ (%g): %s\n%s\n", ci, c->sched, e, why.s, ir.s);
                pass = false;
            }
            /* A schedule with a prefetch is JIT-compiled too (f32 storage, against the
             * interpreted reference): the code generator must issue the prefetch, box
             * clamped, without changing a result.  So is every online_softmax case: the
             * fused nest must agree with the interpreter on the host too. */
            bool jit = strstr(c->sched, "prefetch(") != NULL || strstr(c->sched, "online_softmax(") != NULL;
            double j = pass && jit ? xt_jit_diff(ref, k, 4321 + (uint64_t)ci, &why) : 0;
            /* a bf16/f16 output is rounded when stored: half an ulp of bf16 is 2^-9 */
            double jtol = 1e-5;
            for (int b = 0; b < k->nbufs; b++)
                if (k->bufs[b]->kind == BUF_OUT && (k->bufs[b]->dtype == DT_BF16 || k->bufs[b]->dtype == DT_F16))
                    jtol = 8e-3;
            if (pass && !(j <= jtol)) {
                printf("FAIL %d `%s`: JIT outputs differ (%g): %s\n%s\n", ci, c->sched, j, why.s, ir.s);
                pass = false;
            }
        }
        if (pass)
            printf("ok   %d %s\n", ci, c->sched);
        fails += !pass;
        sb_free(&ir);
        sb_free(&why);
        diag_free(&d);
        ir_free(ref);
        ir_free(k);
        xt_close(&f);
    }
    printf("%d of %d failed\n", fails, n);
    return fails != 0;
}
