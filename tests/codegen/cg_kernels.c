/* Hand-built IR kernels shared by the back-end tests (see cg_test.h).
 *
 * Each aims at one part of the translation: serial nests, f16/bf16 storage, vector
 * loops (contiguous and gathered loads, masks from guards, loops inside the vector
 * body, reductions into one element), parallel loops with private local buffers and
 * nesting, unrolling, integer floor division and every statement operator, math
 * functions, and a vector loop that must fall back to scalar code. */
#include <math.h>

#include "cg_test.h"

static Kernel *new_kernel(const char *name)
{
    return ir_kernel_new(name, (Span){0});
}

/* C[i, j] = sum(k) A[i, k] * B[k, j] with A, B of dtype t. */
Kernel *cgt_gemm(const char *name, DType t, int64_t M, int64_t N, int64_t K)
{
    Kernel *k = new_kernel(name);
    Buffer *A = cgt_buf(k, "A", t, BUF_IN, M, K), *B = cgt_buf(k, "B", t, BUF_IN, K, N);
    Buffer *C = cgt_buf(k, "C", DT_F32, BUF_OUT, M, N);
    Var *i = ir_new_var(k, "i"), *j = ir_new_var(k, "j"), *kk = ir_new_var(k, "k");
    Node *li = cgt_loop(k, NULL, i, cgt_i(k, 0), cgt_i(k, M), LOOP_SERIAL);
    Node *lj = cgt_loop(k, li, j, cgt_i(k, 0), cgt_i(k, N), LOOP_SERIAL);
    cgt_push(k, lj, cgt_st(k, C, cgt_v(k, i), cgt_v(k, j), SOP_ASSIGN, ir_flt(k, 0, DT_F32)));
    Node *lk = cgt_loop(k, lj, kk, cgt_i(k, 0), cgt_i(k, K), LOOP_SERIAL);
    Expr *a = ir_cast(k, cgt_ld(k, A, cgt_v(k, i), cgt_v(k, kk)), DT_F32);
    Expr *b = ir_cast(k, cgt_ld(k, B, cgt_v(k, kk), cgt_v(k, j)), DT_F32);
    cgt_push(k, lk, cgt_st(k, C, cgt_v(k, i), cgt_v(k, j), SOP_ADD, ir_bin(k, IE_MUL, a, b)));
    return k;
}

static Kernel *k_gemm(void) { return cgt_gemm("gemm", DT_F32, 37, 29, 13); }
static Kernel *k_gemm_f16(void) { return cgt_gemm("gemm_f16", DT_F16, 19, 23, 11); }
static Kernel *k_gemm_bf16(void) { return cgt_gemm("gemm_bf16", DT_BF16, 9, 31, 7); }

/* The GEMM with j split by 8 and the inner part a vector loop: a guard on the tail
 * (a mask), a serial loop inside the vector body, a uniform load A[i, k], a
 * contiguous load B[k, j] and a fused update C += A*B. */
Kernel *cgt_vec_gemm(const char *name, DType t, int64_t M, int64_t N, int64_t K, int W, bool par)
{
    Kernel *k = new_kernel(name);
    Buffer *A = cgt_buf(k, "A", t, BUF_IN, M, K), *B = cgt_buf(k, "B", t, BUF_IN, K, N);
    Buffer *C = cgt_buf(k, "C", t, BUF_OUT, M, N);
    Var *i = ir_new_var(k, "i"), *jo = ir_new_var(k, "jo"), *ji = ir_new_var(k, "ji"), *kk = ir_new_var(k, "k");
    Node *li = cgt_loop(k, NULL, i, cgt_i(k, 0), cgt_i(k, M), par ? LOOP_PARALLEL : LOOP_SERIAL);
    Node *ljo = cgt_loop(k, li, jo, cgt_i(k, 0), cgt_i(k, (N + W - 1) / W), LOOP_SERIAL);
    Node *lji = cgt_loop(k, ljo, ji, cgt_i(k, 0), cgt_i(k, W), LOOP_VECTOR);
    Expr *j = cgt_add(k, cgt_mul(k, cgt_v(k, jo), cgt_i(k, W)), cgt_v(k, ji));
    Node *g = ir_guard(k, ir_bin(k, IE_LT, j, cgt_i(k, N)), (Span){0});
    cgt_push(k, lji, g);
    cgt_push(k, g, cgt_st(k, C, cgt_v(k, i), j, SOP_ASSIGN, ir_flt(k, 0, t)));
    Node *lk = cgt_loop(k, g, kk, cgt_i(k, 0), cgt_i(k, K), LOOP_SERIAL);
    Expr *prod = ir_bin(k, IE_MUL, cgt_ld(k, A, cgt_v(k, i), cgt_v(k, kk)), cgt_ld(k, B, cgt_v(k, kk), j));
    cgt_push(k, lk, cgt_st(k, C, cgt_v(k, i), j, SOP_ADD, prod));
    return k;
}

static Kernel *k_vec_gemm(void) { return cgt_vec_gemm("vec_gemm", DT_F32, 7, 29, 9, 8, false); }
static Kernel *k_vec_gemm16(void) { return cgt_vec_gemm("vec_gemm16", DT_F32, 5, 45, 6, 16, true); }
static Kernel *k_vec_gemm_f64(void) { return cgt_vec_gemm("vec_gemm_f64", DT_F64, 5, 13, 6, 4, false); }
static Kernel *k_vec_gemm_f16(void) { return cgt_vec_gemm("vec_gemm_f16", DT_F16, 5, 21, 5, 8, false); }
static Kernel *k_vec_gemm_bf16(void) { return cgt_vec_gemm("vec_gemm_bf16", DT_BF16, 4, 19, 3, 8, true); }

/* Reductions over the vector index into one element: sum, max, min, product, and
 * a masked sum whose masked-off lanes would read past the row. */
static Kernel *k_vec_reduce(void)
{
    Kernel *k = new_kernel("vec_reduce");
    const int64_t R = 5, C = 16, C2 = 13;
    Buffer *X = cgt_buf(k, "X", DT_F32, BUF_IN, R, C), *X2 = cgt_buf(k, "X2", DT_F32, BUF_IN, R, C2);
    Buffer *I = cgt_buf(k, "I", DT_I32, BUF_IN, R, C);
    Buffer *S = cgt_buf(k, "S", DT_F32, BUF_OUT, R, -1), *M = cgt_buf(k, "M", DT_F32, BUF_OUT, R, -1);
    Buffer *N = cgt_buf(k, "N", DT_F32, BUF_OUT, R, -1), *P = cgt_buf(k, "P", DT_F32, BUF_OUT, R, -1);
    Buffer *T = cgt_buf(k, "T", DT_F32, BUF_OUT, R, -1), *IS = cgt_buf(k, "IS", DT_I32, BUF_OUT, R, -1);
    Buffer *IM = cgt_buf(k, "IM", DT_I32, BUF_OUT, R, -1), *L = cgt_buf(k, "L", DT_F32, BUF_OUT, R, -1);
    Var *r = ir_new_var(k, "r");
    Node *lr = cgt_loop(k, NULL, r, cgt_i(k, 0), cgt_i(k, R), LOOP_SERIAL);
    Expr *rr = cgt_v(k, r);
    cgt_push(k, lr, cgt_st(k, S, rr, NULL, SOP_ASSIGN, ir_flt(k, 0, DT_F32)));
    cgt_push(k, lr, cgt_st(k, M, rr, NULL, SOP_ASSIGN, ir_flt(k, -INFINITY, DT_F32)));
    cgt_push(k, lr, cgt_st(k, N, rr, NULL, SOP_ASSIGN, ir_flt(k, INFINITY, DT_F32)));
    cgt_push(k, lr, cgt_st(k, P, rr, NULL, SOP_ASSIGN, ir_flt(k, 1, DT_F32)));
    cgt_push(k, lr, cgt_st(k, T, rr, NULL, SOP_ASSIGN, ir_flt(k, 0, DT_F32)));
    cgt_push(k, lr, cgt_st(k, IS, rr, NULL, SOP_ASSIGN, ir_cast(k, cgt_i(k, 0), DT_I32)));
    cgt_push(k, lr, cgt_st(k, IM, rr, NULL, SOP_ASSIGN, ir_cast(k, cgt_i(k, -100), DT_I32)));
    Var *c = ir_new_var(k, "c");
    Node *lc = cgt_loop(k, lr, c, cgt_i(k, 0), cgt_i(k, C), LOOP_VECTOR);
    Expr *x = cgt_ld(k, X, cgt_v(k, r), cgt_v(k, c));
    cgt_push(k, lc, cgt_st(k, S, cgt_v(k, r), NULL, SOP_ADD, ir_bin(k, IE_MUL, x, x)));
    cgt_push(k, lc, cgt_st(k, M, cgt_v(k, r), NULL, SOP_MAX, cgt_ld(k, X, cgt_v(k, r), cgt_v(k, c))));
    cgt_push(k, lc, cgt_st(k, N, cgt_v(k, r), NULL, SOP_MIN, cgt_ld(k, X, cgt_v(k, r), cgt_v(k, c))));
    cgt_push(k, lc, cgt_st(k, P, cgt_v(k, r), NULL, SOP_MUL,
                           ir_bin(k, IE_ADD, ir_flt(k, 1, DT_F32), cgt_ld(k, X, cgt_v(k, r), cgt_v(k, c)))));
    cgt_push(k, lc, cgt_st(k, IS, cgt_v(k, r), NULL, SOP_ADD, cgt_ld(k, I, cgt_v(k, r), cgt_v(k, c))));
    cgt_push(k, lc, cgt_st(k, IM, cgt_v(k, r), NULL, SOP_MAX, cgt_ld(k, I, cgt_v(k, r), cgt_v(k, c))));
    /* `=` into one element: the last enabled lane's value stays. */
    Node *g = ir_guard(k, ir_bin(k, IE_LT, cgt_v(k, c), cgt_i(k, C2)), (Span){0});
    cgt_push(k, lc, g);
    cgt_push(k, g, cgt_st(k, T, cgt_v(k, r), NULL, SOP_ADD, cgt_ld(k, X2, cgt_v(k, r), cgt_v(k, c))));
    cgt_push(k, g, cgt_st(k, L, cgt_v(k, r), NULL, SOP_ASSIGN, cgt_ld(k, X2, cgt_v(k, r), cgt_v(k, c))));
    return k;
}

/* Padded 1-D convolution vectorised over i (masked loads that yield the pad where
 * the index leaves the input), and a transposed copy (a gather). */
static Kernel *k_vec_gather(void)
{
    Kernel *k = new_kernel("vec_gather");
    const int64_t N = 21, W = 8, R = 6, C = 11;
    Buffer *X = cgt_buf(k, "X", DT_F32, BUF_IN, N, -1);
    X->has_pad = true;
    X->pad = 0.25;
    Buffer *B = cgt_buf(k, "B", DT_F32, BUF_IN, C, R);
    Buffer *Y = cgt_buf(k, "Y", DT_F32, BUF_OUT, N, -1), *Z = cgt_buf(k, "Z", DT_F32, BUF_OUT, R, C);
    Var *io = ir_new_var(k, "io"), *ii = ir_new_var(k, "ii"), *t = ir_new_var(k, "t");
    Node *lo = cgt_loop(k, NULL, io, cgt_i(k, 0), cgt_i(k, (N + W - 1) / W), LOOP_SERIAL);
    Node *li = cgt_loop(k, lo, ii, cgt_i(k, 0), cgt_i(k, W), LOOP_VECTOR);
    Expr *i = cgt_add(k, cgt_mul(k, cgt_v(k, io), cgt_i(k, W)), cgt_v(k, ii));
    Node *g = ir_guard(k, ir_bin(k, IE_LT, i, cgt_i(k, N)), (Span){0});
    cgt_push(k, li, g);
    cgt_push(k, g, cgt_st(k, Y, i, NULL, SOP_ASSIGN, ir_flt(k, 0, DT_F32)));
    Node *lt = cgt_loop(k, g, t, cgt_i(k, 0), cgt_i(k, 3), LOOP_UNROLL);
    Expr *at = cgt_add(k, cgt_add(k, i, cgt_v(k, t)), cgt_i(k, -1));
    Expr *ld = cgt_ld(k, X, at, NULL);
    ld->u.load.guarded = true;
    cgt_push(k, lt, cgt_st(k, Y, i, NULL, SOP_ADD, ir_bin(k, IE_MUL, ld, ir_flt(k, 0.5, DT_F32))));
    Var *r = ir_new_var(k, "r"), *c = ir_new_var(k, "c");
    Node *lr = cgt_loop(k, NULL, r, cgt_i(k, 0), cgt_i(k, R), LOOP_SERIAL);
    Node *lc = cgt_loop(k, lr, c, cgt_i(k, 0), cgt_i(k, C), LOOP_VECTOR);
    cgt_push(k, lc, cgt_st(k, Z, cgt_v(k, r), cgt_v(k, c), SOP_ASSIGN, cgt_ld(k, B, cgt_v(k, c), cgt_v(k, r))));
    return k;
}

/* Parallel loops: a private local scratch row per thread, a parallel loop nested in
 * another (serial on the pool), a vector loop inside, and a scalar guarded load. */
static Kernel *k_parallel(void)
{
    Kernel *k = new_kernel("parallel");
    const int64_t M = 23, N = 17;
    Buffer *X = cgt_buf(k, "X", DT_F32, BUF_IN, M, N);
    X->has_pad = true;
    X->pad = -2;
    Buffer *Y = cgt_buf(k, "Y", DT_F32, BUF_OUT, M, N), *Z = cgt_buf(k, "Z", DT_F32, BUF_OUT, M, N);
    Buffer *T = cgt_buf(k, "T", DT_F32, BUF_TEMP, N, -1);
    T->mem = MEM_LOCAL;
    Var *i = ir_new_var(k, "i"), *j = ir_new_var(k, "j"), *j2 = ir_new_var(k, "j2");
    Node *li = cgt_loop(k, NULL, i, cgt_i(k, 0), cgt_i(k, M), LOOP_PARALLEL);
    Node *lj = cgt_loop(k, li, j, cgt_i(k, 0), cgt_i(k, N), LOOP_SERIAL);
    Expr *shift = cgt_ld(k, X, cgt_add(k, cgt_v(k, i), cgt_i(k, 1)), cgt_v(k, j));
    shift->u.load.guarded = true;
    cgt_push(k, lj, cgt_st(k, T, cgt_v(k, j), NULL, SOP_ASSIGN,
                           ir_bin(k, IE_ADD, ir_bin(k, IE_MUL, cgt_ld(k, X, cgt_v(k, i), cgt_v(k, j)), ir_flt(k, 2, DT_F32)), shift)));
    Node *lj2 = cgt_loop(k, li, j2, cgt_i(k, 0), cgt_i(k, N), LOOP_SERIAL);
    Expr *rev = cgt_add(k, cgt_i(k, N - 1), ir_un(k, IE_NEG, cgt_v(k, j2)));
    cgt_push(k, lj2, cgt_st(k, Y, cgt_v(k, i), cgt_v(k, j2), SOP_ASSIGN,
                            ir_bin(k, IE_SUB, cgt_ld(k, T, cgt_v(k, j2), NULL), cgt_ld(k, T, rev, NULL))));
    /* Z[a, b] = X[a, b] + a, with the b loop parallel inside the parallel a loop and
     * split into a vector part. */
    Var *a = ir_new_var(k, "a"), *bo = ir_new_var(k, "bo"), *bi = ir_new_var(k, "bi");
    Node *la = cgt_loop(k, NULL, a, cgt_i(k, 0), cgt_i(k, M), LOOP_PARALLEL);
    Node *lbo = cgt_loop(k, la, bo, cgt_i(k, 0), cgt_i(k, (N + 3) / 4), LOOP_PARALLEL);
    Node *lbi = cgt_loop(k, lbo, bi, cgt_i(k, 0), cgt_i(k, 4), LOOP_VECTOR);
    Expr *b = cgt_add(k, cgt_mul(k, cgt_v(k, bo), cgt_i(k, 4)), cgt_v(k, bi));
    Node *g = ir_guard(k, ir_bin(k, IE_LT, b, cgt_i(k, N)), (Span){0});
    cgt_push(k, lbi, g);
    cgt_push(k, g, cgt_st(k, Z, cgt_v(k, a), b, SOP_ASSIGN,
                          ir_bin(k, IE_ADD, cgt_ld(k, X, cgt_v(k, a), b), ir_cast(k, cgt_v(k, a), DT_F32))));
    return k;
}

/* Unrolled loops (constant and variable trip counts) and a loop that never runs. */
static Kernel *k_unroll(void)
{
    Kernel *k = new_kernel("unroll");
    const int64_t M = 6;
    Buffer *X = cgt_buf(k, "X", DT_F32, BUF_IN, M, 4);
    Buffer *Y = cgt_buf(k, "Y", DT_F32, BUF_OUT, M, 4), *S = cgt_buf(k, "S", DT_F32, BUF_OUT, M, -1);
    Var *i = ir_new_var(k, "i"), *u = ir_new_var(k, "u"), *w = ir_new_var(k, "w"), *z = ir_new_var(k, "z");
    Node *li = cgt_loop(k, NULL, i, cgt_i(k, 0), cgt_i(k, M), LOOP_SERIAL);
    Node *lu = cgt_loop(k, li, u, cgt_i(k, 0), cgt_i(k, 4), LOOP_UNROLL);
    cgt_push(k, lu, cgt_st(k, Y, cgt_v(k, i), cgt_v(k, u), SOP_ASSIGN,
                           ir_bin(k, IE_MUL, cgt_ld(k, X, cgt_v(k, i), cgt_v(k, u)),
                                  ir_cast(k, cgt_add(k, cgt_v(k, u), cgt_i(k, 1)), DT_F32))));
    cgt_push(k, li, cgt_st(k, S, cgt_v(k, i), NULL, SOP_ASSIGN, ir_flt(k, 0, DT_F32)));
    Node *lw = cgt_loop(k, li, w, cgt_i(k, 0), ir_bin(k, IE_MIN, cgt_v(k, i), cgt_i(k, 4)), LOOP_UNROLL);
    cgt_push(k, lw, cgt_st(k, S, cgt_v(k, i), NULL, SOP_ADD, cgt_ld(k, X, cgt_v(k, i), cgt_v(k, w))));
    Node *lz = cgt_loop(k, li, z, cgt_i(k, 3), cgt_i(k, 1), LOOP_SERIAL);
    cgt_push(k, lz, cgt_st(k, S, cgt_v(k, i), NULL, SOP_ASSIGN, ir_flt(k, 99, DT_F32)));
    return k;
}

/* Integer semantics: floor division and modulo (negative operands, by variables),
 * max/abs/select/comparisons, saturating float -> i32, bool output, and the
 * statement operators on i32. */
static Kernel *k_int(void)
{
    Kernel *k = new_kernel("ints");
    const int64_t N = 29;
    Buffer *A = cgt_buf(k, "A", DT_I32, BUF_IN, N, -1), *X = cgt_buf(k, "X", DT_F32, BUF_IN, N, -1);
    Buffer *Q = cgt_buf(k, "Q", DT_I32, BUF_OUT, 6, N), *F = cgt_buf(k, "F", DT_I32, BUF_OUT, 3, N);
    Buffer *Bo = cgt_buf(k, "Bo", DT_BOOL, BUF_OUT, N, -1), *Fm = cgt_buf(k, "Fm", DT_F32, BUF_OUT, 2, N);
    for (int vec = 0; vec < 2; vec++) {
        Var *i = ir_new_var(k, "i");
        Node *l = cgt_loop(k, NULL, i, cgt_i(k, 0), cgt_i(k, N), LOOP_SERIAL);
        Node *into = l;
        Expr *ie;
        if (vec) {
            /* the same statements again, vectorised over a split of i */
            Var *ii = ir_new_var(k, "ii");
            l->u.loop.hi = cgt_i(k, (N + 7) / 8);
            Node *lv = cgt_loop(k, l, ii, cgt_i(k, 0), cgt_i(k, 8), LOOP_VECTOR);
            ie = cgt_add(k, cgt_mul(k, cgt_v(k, i), cgt_i(k, 8)), cgt_v(k, ii));
            Node *g = ir_guard(k, ir_bin(k, IE_LT, ie, cgt_i(k, N)), (Span){0});
            cgt_push(k, lv, g);
            into = g;
        } else {
            ie = cgt_v(k, i);
        }
        Expr *a = cgt_ld(k, A, ie, NULL);
        Expr *three = ir_cast(k, cgt_i(k, 3), DT_I32), *mthree = ir_cast(k, cgt_i(k, -3), DT_I32);
        Expr *c7 = cgt_add(k, ie, cgt_i(k, -7));
        Expr *q[6] = {
            ir_bin(k, IE_DIV, a, three),
            ir_bin(k, IE_MOD, a, mthree),
            ir_cast(k, ir_bin(k, IE_ADD, ir_bin(k, IE_MUL, ir_bin(k, IE_DIV, c7, cgt_i(k, 4)), cgt_i(k, 10)),
                              ir_bin(k, IE_MOD, c7, cgt_i(k, 4))), DT_I32),
            ir_bin(k, IE_MAX, ir_un(k, IE_ABS, a), ir_bin(k, IE_DIV, a, ir_bin(k, IE_ADD, ir_un(k, IE_ABS, a), three))),
            ir_select(k, ir_bin(k, IE_LT, a, ir_cast(k, cgt_i(k, 0), DT_I32)), ir_un(k, IE_NEG, a),
                      ir_bin(k, IE_MUL, a, ir_cast(k, cgt_i(k, 2), DT_I32))),
            ir_bin(k, IE_MOD, ir_bin(k, IE_MUL, a, a), ir_bin(k, IE_ADD, ir_un(k, IE_ABS, a), ir_cast(k, cgt_i(k, 2), DT_I32))),
        };
        for (int c = 0; c < 6; c++)
            cgt_push(k, into, cgt_st(k, Q, cgt_i(k, c), ie, SOP_ASSIGN, q[c]));
        Expr *x = cgt_ld(k, X, ie, NULL);
        cgt_push(k, into, cgt_st(k, F, cgt_i(k, 0), ie, SOP_ASSIGN, ir_cast(k, ir_bin(k, IE_MUL, x, ir_flt(k, 100.7, DT_F32)), DT_I32)));
        cgt_push(k, into, cgt_st(k, F, cgt_i(k, 1), ie, SOP_ASSIGN, ir_cast(k, ir_bin(k, IE_MUL, x, ir_flt(k, 1e10, DT_F32)), DT_I32)));
        cgt_push(k, into, cgt_st(k, F, cgt_i(k, 2), ie, SOP_ASSIGN, ir_cast(k, a, DT_I32)));
        cgt_push(k, into, cgt_st(k, F, cgt_i(k, 2), ie, SOP_MUL, ir_cast(k, cgt_i(k, 3), DT_I32)));
        cgt_push(k, into, cgt_st(k, F, cgt_i(k, 2), ie, SOP_MIN, ir_cast(k, cgt_i(k, 9), DT_I32)));
        cgt_push(k, into, cgt_st(k, F, cgt_i(k, 2), ie, SOP_MAX, ir_cast(k, cgt_i(k, -12), DT_I32)));
        Expr *lt = ir_bin(k, IE_LT, x, ir_flt(k, 0.25, DT_F32));
        Expr *ge = ir_un(k, IE_NOT, ir_bin(k, IE_LT, cgt_ld(k, X, ie, NULL), ir_flt(k, -0.5, DT_F32)));
        cgt_push(k, into, cgt_st(k, Bo, ie, NULL, SOP_ASSIGN, ir_bin(k, IE_AND, lt, ge)));
        /* float floor modulo and comparisons to float */
        Expr *xm = ir_bin(k, IE_MOD, ir_bin(k, IE_MUL, cgt_ld(k, X, ie, NULL), ir_flt(k, 7, DT_F32)), ir_flt(k, -1.5, DT_F32));
        cgt_push(k, into, cgt_st(k, Fm, cgt_i(k, 0), ie, SOP_ASSIGN, xm));
        Expr *sel = ir_select(k, ir_bin(k, IE_GE, cgt_ld(k, X, ie, NULL), ir_flt(k, 0, DT_F32)),
                              ir_cast(k, a, DT_F32), ir_bin(k, IE_MIN, cgt_ld(k, X, ie, NULL), ir_flt(k, -0.75, DT_F32)));
        cgt_push(k, into, cgt_st(k, Fm, cgt_i(k, 1), ie, SOP_ASSIGN, sel));
    }
    return k;
}

/* Math functions in every float format, scalar and vector. */
static Kernel *math_of(const char *name, DType t, bool vec)
{
    Kernel *k = new_kernel(name);
    const int64_t N = 37;
    Buffer *X = cgt_buf(k, "X", t, BUF_IN, N, -1), *Y = cgt_buf(k, "Y", t, BUF_OUT, 8, N);
    Var *i = ir_new_var(k, "i");
    Node *l = cgt_loop(k, NULL, i, cgt_i(k, 0), cgt_i(k, vec ? (N + 7) / 8 : N), LOOP_SERIAL);
    Node *into = l;
    Expr *ie = cgt_v(k, i);
    if (vec) {
        Var *ii = ir_new_var(k, "ii");
        Node *lv = cgt_loop(k, l, ii, cgt_i(k, 0), cgt_i(k, 8), LOOP_VECTOR);
        ie = cgt_add(k, cgt_mul(k, cgt_v(k, i), cgt_i(k, 8)), cgt_v(k, ii));
        into = ir_guard(k, ir_bin(k, IE_LT, ie, cgt_i(k, N)), (Span){0});
        cgt_push(k, lv, into);
    }
    static const ExprKind ops[] = {IE_EXP, IE_LOG, IE_SQRT, IE_RSQRT, IE_TANH, IE_ERF, IE_ABS, IE_NEG};
    for (int c = 0; c < 8; c++) {
        Expr *x = cgt_ld(k, X, ie, NULL);
        if (ops[c] == IE_LOG || ops[c] == IE_SQRT || ops[c] == IE_RSQRT)
            x = ir_bin(k, IE_ADD, ir_un(k, IE_ABS, x), ir_flt(k, 0.125, t));
        if (ops[c] == IE_EXP || ops[c] == IE_TANH || ops[c] == IE_ERF)
            x = ir_bin(k, IE_MUL, x, ir_flt(k, 3, t));
        cgt_push(k, into, cgt_st(k, Y, cgt_i(k, c), ie, SOP_ASSIGN, ir_un(k, ops[c], x)));
    }
    return k;
}

static Kernel *k_math_f32(void) { return math_of("math_f32", DT_F32, false); }
static Kernel *k_math_f32v(void) { return math_of("math_f32v", DT_F32, true); }
static Kernel *k_math_f64v(void) { return math_of("math_f64v", DT_F64, true); }
static Kernel *k_math_f16v(void) { return math_of("math_f16v", DT_F16, true); }
static Kernel *k_math_bf16(void) { return math_of("math_bf16", DT_BF16, false); }

/* A vector loop whose store is not unit-stride: emitted as a scalar loop with a
 * warning, and still right. */
Kernel *cgt_vec_fallback(void)
{
    Kernel *k = new_kernel("vec_fallback");
    Buffer *X = cgt_buf(k, "X", DT_F32, BUF_IN, 8, -1), *Y = cgt_buf(k, "Y", DT_F32, BUF_OUT, 16, -1);
    Var *i = ir_new_var(k, "i"), *h = ir_new_var(k, "h");
    Node *lh = cgt_loop(k, NULL, h, cgt_i(k, 0), cgt_i(k, 2), LOOP_SERIAL);
    Node *l = cgt_loop(k, lh, i, cgt_i(k, 0), cgt_i(k, 8), LOOP_VECTOR);
    cgt_push(k, l, cgt_st(k, Y, cgt_add(k, cgt_mul(k, cgt_v(k, i), cgt_i(k, 2)), cgt_v(k, h)), NULL, SOP_ASSIGN,
                          cgt_ld(k, X, cgt_v(k, i), NULL)));
    return k;
}

const CgtKernel cgt_kernels[] = {
    {"gemm", k_gemm},           {"gemm_f16", k_gemm_f16},       {"gemm_bf16", k_gemm_bf16},
    {"vec_gemm", k_vec_gemm},   {"vec_gemm16", k_vec_gemm16},   {"vec_gemm_f64", k_vec_gemm_f64},
    {"vec_gemm_f16", k_vec_gemm_f16}, {"vec_gemm_bf16", k_vec_gemm_bf16}, {"vec_reduce", k_vec_reduce},
    {"vec_gather", k_vec_gather}, {"parallel", k_parallel},     {"unroll", k_unroll},
    {"ints", k_int},            {"math_f32", k_math_f32},       {"math_f32v", k_math_f32v},
    {"math_f64v", k_math_f64v}, {"math_f16v", k_math_f16v},     {"math_bf16", k_math_bf16},
    {"vec_fallback", cgt_vec_fallback},
};
const int cgt_nkernels = (int)(sizeof cgt_kernels / sizeof cgt_kernels[0]);

