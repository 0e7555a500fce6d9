/* Kernels built by hand in the loop-nest IR for the CUDA tests: the shapes of the
 * stdlib (GEMM in f32/f16/bf16, batched GEMM, softmax, a padded convolution, an
 * elementwise kernel with every math function) as lowering produces them, plus a
 * hand-scheduled tiled GEMM that uses every GPU feature the emitter supports
 * (block and thread loops, shared and register staging, unrolled loops, guards).
 * Built directly so these tests do not depend on the parser; tests that go through
 * `perfc FILE.pdl` cover the front end. */
#include <math.h>
#include <stdlib.h>

#include "kernels.h"

static const Span NS = {0};

static Expr *V(Kernel *k, Var *v) { return ir_var(k, v); }
static Expr *I(Kernel *k, int64_t c) { return ir_int(k, c); }
static Expr *add(Kernel *k, Expr *a, Expr *b) { return ir_bin(k, IE_ADD, a, b); }
static Expr *mul(Kernel *k, Expr *a, Expr *b) { return ir_bin(k, IE_MUL, a, b); }
static Expr *f32(Kernel *k, Expr *a) { return ir_cast(k, a, DT_F32); }

static Buffer *buf(Kernel *k, const char *name, DType t, BufKind kind, int rank, const int64_t *dims)
{
    Buffer *b = ir_add_buffer(k, name, t, kind, rank, NS);
    for (int i = 0; i < rank; i++)
        b->shape[i] = ir_int(k, dims[i]);
    return b;
}

static Param *param(Kernel *k, const char *name, int64_t v)
{
    Param *p = ir_add_param(k, name);
    p->bound = true;
    p->value = v;
    return p;
}

static Node *loop(Kernel *k, Var *v, Expr *lo, Expr *hi, LoopKind kind, NodeList *parent_list, Node *parent)
{
    Node *n = ir_loop(k, v, lo, hi, NS);
    n->u.loop.kind = kind;
    ir_list_push(parent_list, n, parent);
    return n;
}
#define BODY(n) (&(n)->u.loop.body), (n)

static Expr *ld(Kernel *k, Buffer *b, Expr *i0, Expr *i1, Expr *i2)
{
    Expr *idx[3] = {i0, i1, i2};
    return ir_load(k, b, idx);
}

static void st(Kernel *k, NodeList *l, Node *parent, Buffer *b, StmtOp op, Expr *v, Expr *i0, Expr *i1, Expr *i2)
{
    Expr *idx[3] = {i0, i1, i2};
    ir_list_push(l, ir_stmt(k, b, idx, op, v, NS), parent);
}

Kernel *kb_gemm(DType ab, DType cd, int64_t batch, int64_t M, int64_t N, int64_t K)
{
    Kernel *k = ir_kernel_new(batch > 1 ? "bgemm" : "gemm", NS);
    param(k, "M", M);
    param(k, "N", N);
    param(k, "K", K);
    int r = batch > 1 ? 3 : 2;
    int64_t da[3] = {batch, M, K}, db[3] = {batch, K, N}, dc[3] = {batch, M, N};
    Buffer *A = buf(k, "A", ab, BUF_IN, r, batch > 1 ? da : da + 1);
    Buffer *B = buf(k, "B", ab, BUF_IN, r, batch > 1 ? db : db + 1);
    Buffer *C = buf(k, "C", cd, BUF_OUT, r, batch > 1 ? dc : dc + 1);
    for (int i = 0; i < r; i++) {
        A->shape[i] = i == r - 1 ? ir_param(k, 2) : i == r - 2 ? ir_param(k, 0) : A->shape[i];
        B->shape[i] = i == r - 1 ? ir_param(k, 1) : i == r - 2 ? ir_param(k, 2) : B->shape[i];
        C->shape[i] = i == r - 1 ? ir_param(k, 1) : i == r - 2 ? ir_param(k, 0) : C->shape[i];
    }
    Var *b = batch > 1 ? ir_new_var(k, "b") : NULL;
    Var *i = ir_new_var(k, "i"), *j = ir_new_var(k, "j"), *kk = ir_new_var(k, "k");
    NodeList *top = &k->body;
    Node *par = NULL;
    if (b) {
        Node *lb = loop(k, b, I(k, 0), I(k, batch), LOOP_SERIAL, top, NULL);
        top = &lb->u.loop.body;
        par = lb;
    }
    Node *li = loop(k, i, I(k, 0), ir_param(k, 0), LOOP_SERIAL, top, par);
    Node *lj = loop(k, j, I(k, 0), ir_param(k, 1), LOOP_SERIAL, BODY(li));
    Expr *ci = b ? V(k, b) : V(k, i), *cj = b ? V(k, i) : V(k, j), *ck = b ? V(k, j) : NULL;
    st(k, BODY(lj), C, SOP_ASSIGN, ir_flt(k, 0, cd == DT_F64 ? DT_F64 : DT_F32), ci, cj, ck);
    Node *lk = loop(k, kk, I(k, 0), ir_param(k, 2), LOOP_SERIAL, BODY(lj));
    DType acc = cd == DT_F64 ? DT_F64 : DT_F32;
    Expr *a = b ? ld(k, A, V(k, b), V(k, i), V(k, kk)) : ld(k, A, V(k, i), V(k, kk), NULL);
    Expr *bb = b ? ld(k, B, V(k, b), V(k, kk), V(k, j)) : ld(k, B, V(k, kk), V(k, j), NULL);
    Expr *prod = mul(k, ir_cast(k, a, acc), ir_cast(k, bb, acc));
    st(k, BODY(lk), C, SOP_ADD, ir_cast(k, prod, cd == DT_F64 ? DT_F64 : DT_F32),
       b ? V(k, b) : V(k, i), b ? V(k, i) : V(k, j), b ? V(k, j) : NULL);
    return k;
}

Kernel *kb_softmax(int64_t R, int64_t C)
{
    Kernel *k = ir_kernel_new("softmax", NS);
    param(k, "R", R);
    param(k, "C", C);
    int64_t d2[2] = {R, C}, d1[1] = {R};
    Buffer *X = buf(k, "X", DT_F32, BUF_IN, 2, d2);
    Buffer *Y = buf(k, "Y", DT_F32, BUF_OUT, 2, d2);
    Buffer *m = buf(k, "m", DT_F32, BUF_TEMP, 1, d1);
    Buffer *e = buf(k, "e", DT_F32, BUF_TEMP, 2, d2);
    Buffer *s = buf(k, "s", DT_F32, BUF_TEMP, 1, d1);
    X->shape[0] = ir_param(k, 0); X->shape[1] = ir_param(k, 1);
    Var *r = ir_new_var(k, "r"), *c = ir_new_var(k, "c");
    /* m[r] = max(c) X[r, c] */
    Node *l = loop(k, r, I(k, 0), ir_param(k, 0), LOOP_SERIAL, &k->body, NULL);
    st(k, BODY(l), m, SOP_ASSIGN, ir_flt(k, -INFINITY, DT_F32), V(k, r), NULL, NULL);
    Node *lc = loop(k, c, I(k, 0), ir_param(k, 1), LOOP_SERIAL, BODY(l));
    st(k, BODY(lc), m, SOP_MAX, ld(k, X, V(k, r), V(k, c), NULL), V(k, r), NULL, NULL);
    /* e[r, c] = exp(X[r, c] - m[r]) */
    l = loop(k, r, I(k, 0), ir_param(k, 0), LOOP_SERIAL, &k->body, NULL);
    lc = loop(k, c, I(k, 0), ir_param(k, 1), LOOP_SERIAL, BODY(l));
    st(k, BODY(lc), e, SOP_ASSIGN,
       ir_un(k, IE_EXP, ir_bin(k, IE_SUB, ld(k, X, V(k, r), V(k, c), NULL), ld(k, m, V(k, r), NULL, NULL))),
       V(k, r), V(k, c), NULL);
    /* s[r] = sum(c) e[r, c] */
    l = loop(k, r, I(k, 0), ir_param(k, 0), LOOP_SERIAL, &k->body, NULL);
    st(k, BODY(l), s, SOP_ASSIGN, ir_flt(k, 0, DT_F32), V(k, r), NULL, NULL);
    lc = loop(k, c, I(k, 0), ir_param(k, 1), LOOP_SERIAL, BODY(l));
    st(k, BODY(lc), s, SOP_ADD, ld(k, e, V(k, r), V(k, c), NULL), V(k, r), NULL, NULL);
    /* Y[r, c] = e[r, c] / s[r] */
    l = loop(k, r, I(k, 0), ir_param(k, 0), LOOP_SERIAL, &k->body, NULL);
    lc = loop(k, c, I(k, 0), ir_param(k, 1), LOOP_SERIAL, BODY(l));
    st(k, BODY(lc), Y, SOP_ASSIGN,
       ir_bin(k, IE_DIV, ld(k, e, V(k, r), V(k, c), NULL), ld(k, s, V(k, r), NULL, NULL)), V(k, r), V(k, c), NULL);
    return k;
}

Kernel *kb_conv(int64_t H, int64_t W)
{
    /* out[y, x] = sum(r, s) In[y + r - 1, x + s - 1] * Wt[r, s], zero padding */
    Kernel *k = ir_kernel_new("conv3x3", NS);
    param(k, "H", H);
    param(k, "W", W);
    int64_t d2[2] = {H, W}, w2[2] = {3, 3};
    Buffer *In = buf(k, "In", DT_F32, BUF_IN, 2, d2);
    Buffer *Wt = buf(k, "Wt", DT_F32, BUF_IN, 2, w2);
    Buffer *Out = buf(k, "Out", DT_F32, BUF_OUT, 2, d2);
    In->has_pad = true;
    In->pad = 0;
    Var *y = ir_new_var(k, "y"), *x = ir_new_var(k, "x"), *r = ir_new_var(k, "r"), *s = ir_new_var(k, "s");
    Node *ly = loop(k, y, I(k, 0), ir_param(k, 0), LOOP_SERIAL, &k->body, NULL);
    Node *lx = loop(k, x, I(k, 0), ir_param(k, 1), LOOP_SERIAL, BODY(ly));
    st(k, BODY(lx), Out, SOP_ASSIGN, ir_flt(k, 0, DT_F32), V(k, y), V(k, x), NULL);
    Node *lr = loop(k, r, I(k, 0), I(k, 3), LOOP_SERIAL, BODY(lx));
    Node *ls = loop(k, s, I(k, 0), I(k, 3), LOOP_SERIAL, BODY(lr));
    Expr *in = ld(k, In, ir_bin(k, IE_SUB, add(k, V(k, y), V(k, r)), I(k, 1)),
                  ir_bin(k, IE_SUB, add(k, V(k, x), V(k, s)), I(k, 1)), NULL);
    in->u.load.guarded = true;
    st(k, BODY(ls), Out, SOP_ADD, mul(k, in, ld(k, Wt, V(k, r), V(k, s), NULL)), V(k, y), V(k, x), NULL);
    return k;
}

Kernel *kb_eltwise(int64_t N)
{
    /* every unary function, select, comparisons, integer floor division and modulo,
     * and f16 / bf16 stores */
    Kernel *k = ir_kernel_new("eltwise", NS);
    param(k, "N", N);
    int64_t d1[1] = {N};
    Buffer *X = buf(k, "X", DT_F32, BUF_IN, 1, d1);
    Buffer *H = buf(k, "H", DT_F16, BUF_IN, 1, d1);
    Buffer *Y = buf(k, "Y", DT_F32, BUF_OUT, 1, d1);
    Buffer *Z = buf(k, "Z", DT_F16, BUF_OUT, 1, d1);
    Buffer *Wb = buf(k, "Wb", DT_BF16, BUF_OUT, 1, d1);
    Var *i = ir_new_var(k, "i");
    Node *l = loop(k, i, I(k, 0), ir_param(k, 0), LOOP_SERIAL, &k->body, NULL);
    Expr *x = ld(k, X, V(k, i), NULL, NULL);
    Expr *ax = ir_un(k, IE_ABS, ld(k, X, V(k, i), NULL, NULL));
    Expr *v = add(k, ir_un(k, IE_TANH, ld(k, X, V(k, i), NULL, NULL)), ir_un(k, IE_ERF, x));
    v = add(k, v, ir_un(k, IE_SQRT, ir_clone_expr(k, ax)));
    v = add(k, v, ir_un(k, IE_RSQRT, add(k, ir_clone_expr(k, ax), ir_flt(k, 0.5, DT_F32))));
    v = add(k, v, ir_un(k, IE_LOG, add(k, ax, ir_flt(k, 1, DT_F32))));
    v = add(k, v, ir_un(k, IE_EXP, ld(k, X, V(k, i), NULL, NULL)));
    /* (i - 7) floordiv 5 and floormod 5 exercise negative operands */
    Expr *im7 = ir_bin(k, IE_SUB, V(k, i), I(k, 7));
    Expr *q = ir_bin(k, IE_DIV, im7, I(k, 5));
    Expr *rm = ir_bin(k, IE_MOD, ir_clone_expr(k, im7), I(k, 5));
    v = add(k, v, f32(k, add(k, q, rm)));
    Expr *cond = ir_bin(k, IE_GT, ld(k, X, V(k, i), NULL, NULL), ir_flt(k, 0, DT_F32));
    v = add(k, v, ir_select(k, cond, ir_flt(k, 1, DT_F32), ir_flt(k, -2, DT_F32)));
    v = add(k, v, ir_bin(k, IE_MAX, f32(k, ld(k, H, V(k, i), NULL, NULL)), ir_flt(k, 0.25, DT_F32)));
    st(k, BODY(l), Y, SOP_ASSIGN, v, V(k, i), NULL, NULL);
    st(k, BODY(l), Z, SOP_ASSIGN,
       f32(k, ir_cast(k, mul(k, f32(k, ld(k, H, V(k, i), NULL, NULL)), ld(k, X, V(k, i), NULL, NULL)), DT_F16)), V(k, i),
       NULL, NULL);
    st(k, BODY(l), Wb, SOP_ASSIGN, f32(k, ir_cast(k, add(k, ld(k, X, V(k, i), NULL, NULL), ir_flt(k, 1, DT_F32)), DT_BF16)),
       V(k, i), NULL, NULL);
    return k;
}

/* C = A·B (f32) scheduled by hand as a transformation sequence would: 64x64 tiles per
 * block, 16x16 threads each computing a 4x4 register tile, K staged through shared
 * memory 16 at a time, guards for shapes that are no multiple of the tiles. */
Kernel *kb_tiled_gemm(int64_t M, int64_t N, int64_t K)
{
    Kernel *k = kb_gemm(DT_F32, DT_F32, 1, M, N, K);
    Buffer *A = k->bufs[0], *B = k->bufs[1], *C = k->bufs[2];
    /* the edge tiles read A and B through guarded loads: out of range is 0 */
    A->has_pad = B->has_pad = true;
    A->pad = B->pad = 0;
    k->body.n = 0; /* replace the nest, keep buffers and parameters */
    int64_t sa[2] = {64, 17}, sb[2] = {16, 68}, sc[2] = {4, 4};
    Buffer *As = buf(k, "As", DT_F32, BUF_TEMP, 2, sa);
    Buffer *Bs = buf(k, "Bs", DT_F32, BUF_TEMP, 2, sb);
    Buffer *acc = buf(k, "acc", DT_F32, BUF_TEMP, 2, sc);
    As->mem = Bs->mem = MEM_SHARED;
    acc->mem = MEM_LOCAL;
    Var *bi = ir_new_var(k, "i_o"), *bj = ir_new_var(k, "j_o"), *ty = ir_new_var(k, "ty"), *tx = ir_new_var(k, "tx");
    Var *a = ir_new_var(k, "ii"), *b = ir_new_var(k, "jj"), *ko = ir_new_var(k, "k_o"), *kk = ir_new_var(k, "k_i");
    Var *l = ir_new_var(k, "l");
    Node *lbi = loop(k, bi, I(k, 0), I(k, (M + 63) / 64), LOOP_BLOCK_Y, &k->body, NULL);
    Node *lbj = loop(k, bj, I(k, 0), I(k, (N + 63) / 64), LOOP_BLOCK_X, BODY(lbi));
    /* acc = 0 */
    Node *t1 = loop(k, ty, I(k, 0), I(k, 16), LOOP_THREAD_Y, BODY(lbj));
    Node *t2 = loop(k, tx, I(k, 0), I(k, 16), LOOP_THREAD_X, BODY(t1));
    Node *u1 = loop(k, a, I(k, 0), I(k, 4), LOOP_UNROLL, BODY(t2));
    Node *u2 = loop(k, b, I(k, 0), I(k, 4), LOOP_UNROLL, BODY(u1));
    st(k, BODY(u2), acc, SOP_ASSIGN, ir_flt(k, 0, DT_F32), V(k, a), V(k, b), NULL);
    Node *lko = loop(k, ko, I(k, 0), I(k, (K + 15) / 16), LOOP_SERIAL, BODY(lbj));
    /* As[ty*4 + l, tx] = A[i_o*64 + ty*4 + l, k_o*16 + tx] (zero outside) */
    t1 = loop(k, ty, I(k, 0), I(k, 16), LOOP_THREAD_Y, BODY(lko));
    t2 = loop(k, tx, I(k, 0), I(k, 16), LOOP_THREAD_X, BODY(t1));
    Node *ll = loop(k, l, I(k, 0), I(k, 4), LOOP_UNROLL, BODY(t2));
    Expr *row = add(k, mul(k, V(k, ty), I(k, 4)), V(k, l));
    Expr *ga = ld(k, A, add(k, mul(k, V(k, bi), I(k, 64)), ir_clone_expr(k, row)),
                  add(k, mul(k, V(k, ko), I(k, 16)), V(k, tx)), NULL);
    ga->u.load.guarded = true;
    st(k, BODY(ll), As, SOP_ASSIGN, ga, row, V(k, tx), NULL);
    /* Bs[ty, tx*4 + l] = B[k_o*16 + ty, j_o*64 + tx*4 + l] */
    t1 = loop(k, ty, I(k, 0), I(k, 16), LOOP_THREAD_Y, BODY(lko));
    t2 = loop(k, tx, I(k, 0), I(k, 16), LOOP_THREAD_X, BODY(t1));
    ll = loop(k, l, I(k, 0), I(k, 4), LOOP_UNROLL, BODY(t2));
    Expr *col = add(k, mul(k, V(k, tx), I(k, 4)), V(k, l));
    Expr *gb = ld(k, B, add(k, mul(k, V(k, ko), I(k, 16)), V(k, ty)),
                  add(k, mul(k, V(k, bj), I(k, 64)), ir_clone_expr(k, col)), NULL);
    gb->u.load.guarded = true;
    st(k, BODY(ll), Bs, SOP_ASSIGN, gb, V(k, ty), col, NULL);
    /* acc[ii, jj] += As[ty*4 + ii, k_i] * Bs[k_i, tx*4 + jj] */
    t1 = loop(k, ty, I(k, 0), I(k, 16), LOOP_THREAD_Y, BODY(lko));
    t2 = loop(k, tx, I(k, 0), I(k, 16), LOOP_THREAD_X, BODY(t1));
    Node *lk = loop(k, kk, I(k, 0), I(k, 16), LOOP_UNROLL, BODY(t2));
    u1 = loop(k, a, I(k, 0), I(k, 4), LOOP_UNROLL, BODY(lk));
    u2 = loop(k, b, I(k, 0), I(k, 4), LOOP_UNROLL, BODY(u1));
    Expr *pa = ld(k, As, add(k, mul(k, V(k, ty), I(k, 4)), V(k, a)), V(k, kk), NULL);
    Expr *pb = ld(k, Bs, V(k, kk), add(k, mul(k, V(k, tx), I(k, 4)), V(k, b)), NULL);
    st(k, BODY(u2), acc, SOP_ADD, mul(k, pa, pb), V(k, a), V(k, b), NULL);
    /* C[...] = acc[ii, jj] where inside */
    t1 = loop(k, ty, I(k, 0), I(k, 16), LOOP_THREAD_Y, BODY(lbj));
    t2 = loop(k, tx, I(k, 0), I(k, 16), LOOP_THREAD_X, BODY(t1));
    u1 = loop(k, a, I(k, 0), I(k, 4), LOOP_UNROLL, BODY(t2));
    u2 = loop(k, b, I(k, 0), I(k, 4), LOOP_UNROLL, BODY(u1));
    Expr *ci = add(k, mul(k, V(k, bi), I(k, 64)), add(k, mul(k, V(k, ty), I(k, 4)), V(k, a)));
    Expr *cj = add(k, mul(k, V(k, bj), I(k, 64)), add(k, mul(k, V(k, tx), I(k, 4)), V(k, b)));
    Expr *in = ir_bin(k, IE_AND, ir_bin(k, IE_LT, ci, ir_param(k, 0)), ir_bin(k, IE_LT, cj, ir_param(k, 1)));
    Node *g = ir_guard(k, in, NS);
    ir_list_push(&u2->u.loop.body, g, u2);
    st(k, &g->u.guard.body, g, C, SOP_ASSIGN, ld(k, acc, V(k, a), V(k, b), NULL), ir_clone_expr(k, ci),
       ir_clone_expr(k, cj), NULL);
    return k;
}

/* A kernel whose one launch needs more shared memory than any target allows. */
Kernel *kb_too_much_shared(void)
{
    Kernel *k = ir_kernel_new("toobig", NS);
    int64_t d[1] = {300 * 1024 / 4}, o[1] = {256};
    Buffer *S = buf(k, "S", DT_F32, BUF_TEMP, 1, d);
    Buffer *Y = buf(k, "Y", DT_F32, BUF_OUT, 1, o);
    S->mem = MEM_SHARED;
    Var *t = ir_new_var(k, "t");
    Node *lt = loop(k, t, I(k, 0), I(k, 256), LOOP_THREAD_X, &k->body, NULL);
    st(k, BODY(lt), S, SOP_ASSIGN, ir_flt(k, 1, DT_F32), V(k, t), NULL, NULL);
    st(k, BODY(lt), Y, SOP_ASSIGN, ld(k, S, V(k, t), NULL, NULL), V(k, t), NULL, NULL);
    return k;
}

/* A kernel whose thread loops ask for 2048 threads per block. */
Kernel *kb_too_many_threads(void)
{
    Kernel *k = ir_kernel_new("toowide", NS);
    int64_t o[1] = {2048};
    Buffer *Y = buf(k, "Y", DT_F32, BUF_OUT, 1, o);
    Var *t = ir_new_var(k, "t");
    Node *lt = loop(k, t, I(k, 0), I(k, 2048), LOOP_THREAD_X, &k->body, NULL);
    st(k, BODY(lt), Y, SOP_ASSIGN, ir_flt(k, 1, DT_F32), V(k, t), NULL, NULL);
    return k;
}
