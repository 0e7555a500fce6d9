/* Unit tests of the IR library on hand-built kernels: the builder and its list
 * operations, the printer (precedence, exact floats, loop kinds, guards, guarded
 * loads), the integer simplifier, substitution and cloning, the verifier's
 * invariants, size evaluation, and the reference interpreter's semantics (casts
 * round, stores do not, guards and selects are lazy, padded reads, faults reported
 * rather than crashing).  Each check prints what it expected on failure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "lang/checked.h"

static int failures;

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                      \
        }                                                                    \
    } while (0)

static void check_str(const char *got, const char *want, int line)
{
    if (strcmp(got ? got : "", want) != 0) {
        fprintf(stderr, "%s:%d: got\n%s\n--- want\n%s\n", __FILE__, line, got ? got : "(null)", want);
        failures++;
    }
}
#define CHECK_STR(got, want) check_str((got), (want), __LINE__)

static void check_has(const char *text, const char *part, int line)
{
    if (!text || !strstr(text, part)) {
        fprintf(stderr, "%s:%d: expected to find \"%s\" in:\n%s\n", __FILE__, line, part, text ? text : "(null)");
        failures++;
    }
}
#define CHECK_HAS(text, part) check_has((text), (part), __LINE__)

static Span nospan;

static const char *expr_text(const Kernel *k, const Expr *e)
{
    static StrBuf b;
    b.len = 0;
    sb_puts(&b, "");
    ir_print_expr(k, e, &b);
    return b.s;
}

static const char *kernel_text(const Kernel *k)
{
    static StrBuf b;
    b.len = 0;
    sb_puts(&b, "");
    ir_print_kernel(k, &b);
    return b.s;
}

static Kernel *new_kernel(const char *name, int nparams, const char *const *names, const int64_t *values)
{
    Kernel *k = ir_kernel_new(name, nospan);
    for (int i = 0; i < nparams; i++) {
        Param *p = ir_add_param(k, names[i]);
        if (values) {
            p->bound = true;
            p->value = values[i];
        }
    }
    return k;
}

static Buffer *buf1(Kernel *k, const char *name, DType t, BufKind kind, Expr *n)
{
    Buffer *b = ir_add_buffer(k, name, t, kind, 1, nospan);
    b->shape[0] = n;
    return b;
}

static Expr *ld1(Kernel *k, Buffer *b, Expr *i)
{
    return ir_load(k, b, &i);
}

static Node *st1(Kernel *k, Buffer *b, Expr *i, StmtOp op, Expr *v)
{
    return ir_stmt(k, b, &i, op, v, nospan);
}

static Node *loop(Kernel *k, NodeList *into, Node *parent, Var *v, Expr *lo, Expr *hi)
{
    Node *n = ir_loop(k, v, lo, hi, nospan);
    ir_list_push(into, n, parent);
    return n;
}

/* ---- printer ---- */

static void test_printer(void)
{
    const char *pn[] = {"M", "N"};
    Kernel *k = new_kernel("p", 2, pn, NULL);
    Var *i = ir_new_var(k, "i"), *j = ir_new_var(k, "j");
    Expr *a = ir_var(k, i), *b = ir_var(k, j);
    /* minimal parentheses, left-associative, right operand keeps its parentheses */
    CHECK_STR(expr_text(k, ir_bin(k, IE_SUB, ir_bin(k, IE_SUB, ir_var(k, i), ir_var(k, j)), ir_int(k, 1))), "i - j - 1");
    CHECK_STR(expr_text(k, ir_bin(k, IE_SUB, ir_var(k, i), ir_bin(k, IE_SUB, ir_var(k, j), ir_int(k, 1)))), "i - (j - 1)");
    CHECK_STR(expr_text(k, ir_bin(k, IE_ADD, ir_var(k, i), ir_bin(k, IE_ADD, ir_var(k, j), ir_int(k, 1)))), "i + (j + 1)");
    CHECK_STR(expr_text(k, ir_bin(k, IE_MUL, ir_bin(k, IE_ADD, a, b), ir_param(k, 1))), "(i + j) * N");
    CHECK_STR(expr_text(k, ir_bin(k, IE_ADD, ir_bin(k, IE_MUL, ir_var(k, i), ir_int(k, 2)), ir_var(k, j))), "i * 2 + j");
    CHECK_STR(expr_text(k, ir_un(k, IE_NEG, ir_bin(k, IE_ADD, ir_var(k, i), ir_var(k, j)))), "-(i + j)");
    CHECK_STR(expr_text(k, ir_un(k, IE_NEG, ir_int(k, -1))), "-(-1)");
    CHECK_STR(expr_text(k, ir_bin(k, IE_SUB, ir_var(k, i), ir_int(k, -1))), "i - -1");
    Expr *lt1 = ir_bin(k, IE_LT, ir_var(k, i), ir_var(k, j));
    Expr *lt2 = ir_bin(k, IE_LT, ir_var(k, j), ir_param(k, 0));
    CHECK_STR(expr_text(k, ir_bin(k, IE_EQ, lt1, lt2)), "(i < j) == (j < M)");
    Expr *c1 = ir_bin(k, IE_LE, ir_var(k, j), ir_var(k, i));
    Expr *c2 = ir_bin(k, IE_OR, ir_bin(k, IE_GT, ir_var(k, i), ir_int(k, 0)), ir_bin(k, IE_EQ, ir_var(k, j), ir_int(k, 3)));
    CHECK_STR(expr_text(k, ir_bin(k, IE_AND, c1, c2)), "j <= i && (i > 0 || j == 3)");
    CHECK_STR(expr_text(k, ir_un(k, IE_NOT, ir_bin(k, IE_LT, ir_var(k, i), ir_var(k, j)))), "!(i < j)");
    /* floats: shortest decimal that is exact in the constant's dtype */
    CHECK_STR(expr_text(k, ir_flt(k, 0.1, DT_F32)), "0.1");
    CHECK_STR(expr_text(k, ir_flt(k, 0.1, DT_F64)), "0.1");
    CHECK_STR(expr_text(k, ir_flt(k, 1.0 / 3, DT_F64)), "0.3333333333333333");
    CHECK_STR(expr_text(k, ir_flt(k, 1.0 / 3, DT_F32)), "0.33333334");
    CHECK_STR(expr_text(k, ir_flt(k, 1e-5, DT_F32)), "1e-05");
    CHECK_STR(expr_text(k, ir_flt(k, 0, DT_F32)), "0");
    CHECK_STR(expr_text(k, ir_flt(k, 1024, DT_F64)), "1024");
    CHECK_STR(expr_text(k, ir_flt(k, -INFINITY, DT_F32)), "-inf");
    CHECK_STR(expr_text(k, ir_flt(k, INFINITY, DT_F64)), "inf");
    CHECK_STR(expr_text(k, ir_flt(k, NAN, DT_F64)), "nan");
    CHECK_STR(expr_text(k, ir_flt(k, 0.1, DT_F16)), "0.1");
    /* an f32 constant holds an f32 value: what the interpreter and codegen see */
    CHECK(ir_flt(k, 0.1, DT_F32)->u.f == (double)0.1f);
    /* calls and casts */
    Expr *x = ir_flt(k, 2, DT_F32);
    CHECK_STR(expr_text(k, ir_cast(k, ir_un(k, IE_EXP, x), DT_F16)), "f16(exp(2))");
    CHECK_STR(expr_text(k, ir_bin(k, IE_MAX, ir_var(k, i), ir_int(k, 0))), "max(i, 0)");
    CHECK_STR(expr_text(k, ir_select(k, ir_bin(k, IE_LT, ir_var(k, i), ir_int(k, 4)), ir_flt(k, 1, DT_F32),
                                     ir_flt(k, -1.5, DT_F32))),
              "select(i < 4, 1, -1.5)");
    CHECK_STR(expr_text(k, ir_cast(k, ir_var(k, i), DT_F32)), "f32(i)");
    ir_free(k);
}

static void test_print_kernel(void)
{
    const char *pn[] = {"M", "N", "K"};
    const int64_t pv[] = {1024, 0, 0};
    Kernel *k = new_kernel("gemm", 3, pn, NULL);
    k->params[0].bound = true;
    k->params[0].value = pv[0];
    Buffer *A = ir_add_buffer(k, "A", DT_F16, BUF_IN, 2, nospan);
    A->shape[0] = ir_param(k, 0);
    A->shape[1] = ir_param(k, 2);
    Buffer *X = ir_add_buffer(k, "X", DT_F32, BUF_IN, 1, nospan);
    X->shape[0] = ir_bin(k, IE_ADD, ir_param(k, 1), ir_int(k, 2));
    X->has_pad = true;
    Buffer *C = ir_add_buffer(k, "C", DT_F32, BUF_OUT, 2, nospan);
    C->shape[0] = ir_param(k, 0);
    C->shape[1] = ir_param(k, 1);
    Buffer *m = buf1(k, "m", DT_F32, BUF_TEMP, ir_param(k, 0));
    Buffer *s = ir_add_buffer(k, "s", DT_F64, BUF_OUT, 0, nospan);
    Var *i = ir_new_var(k, "i"), *j = ir_new_var(k, "j"), *kk = ir_new_var(k, "k");
    Node *li = loop(k, &k->body, NULL, i, ir_int(k, 0), ir_param(k, 0));
    li->u.loop.kind = LOOP_PARALLEL;
    Node *lj = loop(k, &li->u.loop.body, li, j, ir_int(k, 0), ir_param(k, 1));
    lj->u.loop.kind = LOOP_VECTOR;
    Expr *ci[] = {ir_var(k, i), ir_var(k, j)};
    ir_list_push(&lj->u.loop.body, ir_stmt(k, C, ci, SOP_ASSIGN, ir_flt(k, 0, DT_F32), nospan), lj);
    Node *g = ir_guard(k, ir_bin(k, IE_LE, ir_var(k, j), ir_var(k, i)), nospan);
    ir_list_push(&lj->u.loop.body, g, lj);
    Node *lk = loop(k, &g->u.guard.body, g, kk, ir_int(k, 1), ir_param(k, 2));
    lk->u.loop.kind = LOOP_BLOCK_X;
    Expr *ai[] = {ir_var(k, i), ir_var(k, kk)};
    Expr *xl = ld1(k, X, ir_bin(k, IE_SUB, ir_var(k, kk), ir_int(k, 1)));
    xl->u.load.guarded = true;
    Expr *v = ir_bin(k, IE_MUL, ir_cast(k, ir_load(k, A, ai), DT_F32), xl);
    Expr *ci2[] = {ir_var(k, i), ir_var(k, j)};
    ir_list_push(&lk->u.loop.body, ir_stmt(k, C, ci2, SOP_ADD, v, nospan), lk);
    ir_list_push(&li->u.loop.body, st1(k, m, ir_var(k, i), SOP_MAX, ir_flt(k, 1.5, DT_F32)), li);
    ir_list_push(&k->body, ir_stmt(k, s, NULL, SOP_ASSIGN, ir_flt(k, 2, DT_F64), nospan), NULL);
    CHECK_STR(kernel_text(k),
              "kernel gemm(M=1024, N, K)  A: f16[M, K] global  X: f32[N + 2] pad(0) global  C: f32[M, N] global"
              "  m: f32[M] global temp  s: f64 global\n"
              "for i in 0..M parallel\n"
              "| for j in 0..N vector\n"
              "| | C[i, j] = 0\n"
              "| | if j <= i\n"
              "| | | for k in 1..K block.x\n"
              "| | | | C[i, j] += f32(A[i, k]) * X?[k - 1]\n"
              "| m[i] max= 1.5\n"
              "s = 2\n");
    Diags d;
    diag_init(&d);
    CHECK(ir_verify(k, &d));
    if (d.text.len)
        fprintf(stderr, "%s", d.text.s);
    CHECK(ir_find_loop(k, "k") == lk);
    CHECK(ir_find_loop(k, "nope") == NULL);
    CHECK(ir_find_buffer(k, "m") == m);
    diag_free(&d);
    ir_free(k);
}

/* ---- builder, lists, names ---- */

static void test_builder(void)
{
    Kernel *k = new_kernel("b", 0, NULL, NULL);
    Var *a = ir_new_var(k, "i");
    Var *b = ir_new_var(k, "i");
    Var *c = ir_new_var(k, "i");
    CHECK_STR(a->name, "i");
    CHECK_STR(b->name, "i2");
    CHECK_STR(c->name, "i3");
    CHECK(ir_find_var(k, "i2") == b);
    CHECK(ir_find_var(k, "x") == NULL);
    /* many variables: the name table grows and stays right */
    for (int n = 0; n < 5000; n++) {
        char nm[16];
        snprintf(nm, sizeof nm, "v%d", n);
        Var *v = ir_new_var(k, nm);
        CHECK(v->id == k->nvars - 1);
    }
    CHECK(ir_find_var(k, "v4999") == k->vars[k->nvars - 1]);
    CHECK(ir_find_var(k, "i3") == c);
    /* dtypes chosen by the builder */
    CHECK(ir_bin(k, IE_LT, ir_int(k, 1), ir_int(k, 2))->dtype == DT_BOOL);
    CHECK(ir_bin(k, IE_ADD, ir_flt(k, 1, DT_F16), ir_flt(k, 1, DT_BF16))->dtype == DT_F32);
    CHECK(ir_bin(k, IE_MUL, ir_flt(k, 1, DT_F32), ir_flt(k, 1, DT_F64))->dtype == DT_F64);
    CHECK(ir_un(k, IE_NOT, ir_bin(k, IE_EQ, ir_int(k, 1), ir_int(k, 2)))->dtype == DT_BOOL);
    Expr *f = ir_flt(k, 1, DT_F32);
    CHECK(ir_cast(k, f, DT_F32) == f);
    CHECK(ir_expr_arity(IE_SELECT) == 3 && ir_expr_arity(IE_LOAD) == 0);
    CHECK_STR(ir_expr_name(IE_LE), "<=");
    CHECK_STR(loop_kind_name(LOOP_THREAD_Y), "thread.y");
    CHECK_STR(stmt_op_name(SOP_MIN), "min=");
    CHECK_STR(mem_space_name(MEM_SHARED), "shared");
    /* list operations keep parent pointers */
    Var *x = ir_new_var(k, "x");
    Node *l = ir_loop(k, x, ir_int(k, 0), ir_int(k, 4), nospan);
    ir_list_push(&k->body, l, NULL);
    Buffer *B = buf1(k, "B", DT_F32, BUF_OUT, ir_int(k, 4));
    Node *s1 = st1(k, B, ir_var(k, x), SOP_ASSIGN, ir_flt(k, 1, DT_F32));
    Node *s2 = st1(k, B, ir_var(k, x), SOP_ADD, ir_flt(k, 2, DT_F32));
    Node *s3 = st1(k, B, ir_var(k, x), SOP_MUL, ir_flt(k, 3, DT_F32));
    ir_list_push(&l->u.loop.body, s1, l);
    ir_list_push(&l->u.loop.body, s3, l);
    ir_list_insert(&l->u.loop.body, 1, s2, l);
    CHECK(l->u.loop.body.n == 3 && l->u.loop.body.v[1] == s2 && s2->parent == l);
    for (int n = 0; n < 100; n++) /* growth */
        ir_list_push(&l->u.loop.body, st1(k, B, ir_var(k, x), SOP_ADD, ir_flt(k, 1, DT_F32)), l);
    CHECK(l->u.loop.body.n == 103);
    while (l->u.loop.body.n > 3)
        ir_list_remove(&l->u.loop.body, 3);
    ir_list_remove(&l->u.loop.body, 0);
    CHECK(s1->parent == NULL && l->u.loop.body.v[0] == s2);
    CHECK(ir_body(l) == &l->u.loop.body && ir_body(s2) == NULL);
    /* deep copy: new nodes and expressions, shared variables, right parents */
    Node *cl = ir_clone_node(k, l);
    CHECK(cl != l && cl->parent == NULL && cl->u.loop.var == x && cl->u.loop.body.n == 2);
    CHECK(cl->u.loop.body.v[0] != s2 && cl->u.loop.body.v[0]->parent == cl);
    CHECK(cl->u.loop.body.v[0]->u.stmt.value != s2->u.stmt.value);
    ir_list_push(&k->body, cl, NULL); /* sibling loops may share a variable */
    Diags d;
    diag_init(&d);
    CHECK(ir_verify(k, &d));
    if (d.text.len)
        fprintf(stderr, "%s", d.text.s);
    diag_free(&d);
    ir_free(k);
}

/* ---- simplifier, substitution ---- */

static void test_simplify(void)
{
    const char *pn[] = {"N"};
    Kernel *k = new_kernel("s", 1, pn, NULL);
    Var *i = ir_new_var(k, "i"), *io = ir_new_var(k, "io"), *ii = ir_new_var(k, "ii");
#define I ir_var(k, i)
#define C(v) ir_int(k, v)
#define S(e) expr_text(k, ir_simplify(k, (e)))
    CHECK_STR(S(ir_bin(k, IE_ADD, C(3), C(4))), "7");
    CHECK_STR(S(ir_bin(k, IE_ADD, I, C(0))), "i");
    CHECK_STR(S(ir_bin(k, IE_ADD, C(0), I)), "i");
    CHECK_STR(S(ir_bin(k, IE_MUL, I, C(1))), "i");
    CHECK_STR(S(ir_bin(k, IE_MUL, C(1), I)), "i");
    CHECK_STR(S(ir_bin(k, IE_MUL, I, C(0))), "0");
    CHECK_STR(S(ir_bin(k, IE_MUL, C(0), ir_param(k, 0))), "0");
    CHECK_STR(S(ir_bin(k, IE_ADD, ir_bin(k, IE_ADD, I, C(1)), C(2))), "i + 3");
    CHECK_STR(S(ir_bin(k, IE_ADD, ir_bin(k, IE_SUB, I, C(1)), C(1))), "i");
    CHECK_STR(S(ir_bin(k, IE_SUB, ir_bin(k, IE_ADD, I, C(1)), C(3))), "i - 2");
    CHECK_STR(S(ir_bin(k, IE_ADD, I, C(-2))), "i - 2");
    CHECK_STR(S(ir_bin(k, IE_ADD, C(5), I)), "i + 5");
    CHECK_STR(S(ir_bin(k, IE_SUB, I, I)), "0");
    CHECK_STR(S(ir_bin(k, IE_DIV, C(7), C(2))), "3");
    CHECK_STR(S(ir_bin(k, IE_DIV, C(-7), C(2))), "-4");   /* floor division */
    CHECK_STR(S(ir_bin(k, IE_MOD, C(-7), C(2))), "1");    /* floor modulo */
    CHECK_STR(S(ir_bin(k, IE_MOD, C(7), C(-2))), "-1");
    CHECK_STR(S(ir_bin(k, IE_DIV, I, C(1))), "i");
    CHECK_STR(S(ir_bin(k, IE_DIV, C(1), C(0))), "1 / 0"); /* left for the interpreter to report */
    CHECK_STR(S(ir_bin(k, IE_MAX, C(3), C(-3))), "3");
    CHECK_STR(S(ir_un(k, IE_NEG, C(5))), "-5");
    CHECK_STR(S(ir_bin(k, IE_ADD, ir_bin(k, IE_MUL, ir_param(k, 0), C(0)), ir_bin(k, IE_MUL, I, C(2)))), "i * 2");
    CHECK_STR(S(ir_bin(k, IE_ADD, C(INT64_MAX), C(1))), "9223372036854775807 + 1"); /* overflow: not folded */
    /* floats are left alone: x + 0.0 is not x for x = -0.0 */
    CHECK_STR(S(ir_bin(k, IE_ADD, ir_flt(k, 1, DT_F32), ir_flt(k, 0, DT_F32))), "1 + 0");
    /* substitution: a fresh tree, the original intact */
    Expr *e = ir_bin(k, IE_ADD, ir_bin(k, IE_MUL, I, C(2)), I);
    Expr *with = ir_bin(k, IE_ADD, ir_bin(k, IE_MUL, ir_var(k, io), C(4)), ir_var(k, ii));
    Expr *r = ir_subst(k, e, i, with);
    CHECK_STR(expr_text(k, r), "(io * 4 + ii) * 2 + (io * 4 + ii)");
    CHECK_STR(expr_text(k, e), "i * 2 + i");
    CHECK(r->args[0]->args[0] != r->args[1]); /* two copies, not one shared tree */
    Expr *cl = ir_clone_expr(k, e);
    CHECK(cl != e && cl->args[0] != e->args[0]);
    CHECK_STR(expr_text(k, cl), "i * 2 + i");
#undef I
#undef C
#undef S
    ir_free(k);
}

/* ---- verifier ---- */

static bool verify_msg(Kernel *k, const char *want)
{
    Diags d;
    diag_init(&d);
    bool ok = ir_verify(k, &d);
    CHECK(!ok);
    CHECK_HAS(d.text.s, want);
    diag_free(&d);
    return !ok;
}

static Kernel *tiny(Buffer **Y, Var **i, Node **l, Node **s)
{
    Kernel *k = new_kernel("t", 0, NULL, NULL);
    *Y = buf1(k, "Y", DT_F32, BUF_OUT, ir_int(k, 4));
    *i = ir_new_var(k, "i");
    *l = loop(k, &k->body, NULL, *i, ir_int(k, 0), ir_int(k, 4));
    *s = st1(k, *Y, ir_var(k, *i), SOP_ASSIGN, ir_flt(k, 1, DT_F32));
    ir_list_push(&(*l)->u.loop.body, *s, *l);
    return k;
}

static void test_verify(void)
{
    Buffer *Y;
    Var *i;
    Node *l, *s;
    Kernel *k;

    k = tiny(&Y, &i, &l, &s);
    Diags d;
    diag_init(&d);
    CHECK(ir_verify(k, &d));
    diag_free(&d);
    ir_list_push(&k->body, st1(k, Y, ir_var(k, i), SOP_ASSIGN, ir_flt(k, 1, DT_F32)), NULL);
    verify_msg(k, "loop variable i used outside its loop");
    ir_free(k);

    k = tiny(&Y, &i, &l, &s);
    s->parent = NULL;
    verify_msg(k, "wrong parent pointer");
    ir_free(k);

    k = tiny(&Y, &i, &l, &s);
    Expr *shared = ir_var(k, i);
    s->u.stmt.idx[0] = shared;
    s->u.stmt.value = ir_cast(k, ir_cast(k, shared, DT_F64), DT_F32);
    verify_msg(k, "has two owners");
    ir_free(k);

    k = tiny(&Y, &i, &l, &s);
    s->u.stmt.value = ir_flt(k, 1, DT_F64);
    verify_msg(k, "not its compute type f32");
    ir_free(k);

    k = tiny(&Y, &i, &l, &s);
    s->u.stmt.value = ir_bin(k, IE_ADD, ir_flt(k, 1, DT_F32), ir_cast(k, ir_var(k, i), DT_F64));
    s->u.stmt.value->dtype = DT_F32;
    verify_msg(k, "cast them to one type");
    ir_free(k);

    k = tiny(&Y, &i, &l, &s);
    Node *g = ir_guard(k, ir_var(k, i), nospan);
    ir_list_push(&l->u.loop.body, g, l);
    verify_msg(k, "guard condition is i64, not bool");
    ir_free(k);

    k = tiny(&Y, &i, &l, &s);
    Node *inner = ir_loop(k, i, ir_int(k, 0), ir_int(k, 2), nospan);
    ir_list_push(&l->u.loop.body, inner, l);
    verify_msg(k, "rebinds the variable of an enclosing loop");
    ir_free(k);

    k = tiny(&Y, &i, &l, &s);
    s->u.stmt.idx[0] = ir_flt(k, 0, DT_F32);
    verify_msg(k, "index 0 of Y is f32, not an integer");
    ir_free(k);

    {
        /* guarded loads and stores are valid on any buffer (a padded split's,
         * passes/xform_pad.c): out of range they read 0 and write nothing */
        k = tiny(&Y, &i, &l, &s);
        s->u.stmt.value = ld1(k, Y, ir_var(k, i));
        s->u.stmt.value->u.load.guarded = true;
        s->u.stmt.guarded = true;
        Diags d;
        diag_init(&d);
        CHECK(ir_verify(k, &d));
        diag_free(&d);
        ir_free(k);
    }

    k = tiny(&Y, &i, &l, &s);
    Y->shape[0] = ir_var(k, i);
    verify_msg(k, "is not a size expression");
    ir_free(k);

    k = tiny(&Y, &i, &l, &s);
    s->u.stmt.value = ir_un(k, IE_EXP, ir_int(k, 1));
    s->u.stmt.value->dtype = DT_F32;
    verify_msg(k, "floats only");
    ir_free(k);

    k = tiny(&Y, &i, &l, &s);
    l->u.loop.hi = ir_bin(k, IE_ADD, ir_var(k, i), ir_int(k, 1));
    verify_msg(k, "loop variable i used outside its loop");
    ir_free(k);

    /* prefetch: a leaf with an empty body, extents of at least 1, scoped indices;
     * the interpreter runs past it */
    k = tiny(&Y, &i, &l, &s);
    Expr *pi[1] = {ir_bin(k, IE_ADD, ir_var(k, i), ir_int(k, 1))};
    int64_t two[1] = {2};
    Node *pf = ir_prefetch(k, Y, pi, two, nospan);
    ir_list_insert(&l->u.loop.body, 0, pf, l);
    diag_init(&d);
    CHECK(ir_verify(k, &d));
    CHECK(ir_body(pf) && ir_body(pf)->n == 0 && ir_list_only_prefetch(ir_body(pf)));
    StrBuf pr = {0};
    ir_print_kernel(k, &pr);
    CHECK_HAS(pr.s, "| prefetch Y[i + 1 .. +2]\n| Y[i] = 1\n");
    double **bufs = ir_alloc_buffers(k, 5);
    CHECK(bufs && ir_interp(k, bufs, &d) && bufs[0][3] == 1);
    ir_free_buffers(k, bufs);
    Node *copy = ir_clone_node(k, l);
    CHECK(copy->u.loop.body.v[0]->kind == N_PREFETCH && copy->u.loop.body.v[0]->u.pf.ext[0] == 2);
    sb_free(&pr);
    diag_free(&d);
    pf->u.pf.ext[0] = 0;
    verify_msg(k, "prefetch of Y has extent 0 in dimension 0");
    pf->u.pf.ext[0] = 2;
    ir_list_push(&k->body, ir_prefetch(k, Y, (Expr *[]){ir_var(k, i)}, two, nospan), NULL);
    verify_msg(k, "loop variable i used outside its loop");
    ir_free(k);
}

/* ---- sizes ---- */

static void test_eval(void)
{
    const char *pn[] = {"H", "P", "R", "U"};
    const int64_t pv[] = {64, 1, 3, 2};
    Kernel *k = new_kernel("e", 4, pn, pv);
    /* (H + 2*P - R)/U + 1 */
    Expr *oh = ir_bin(k, IE_ADD,
                      ir_bin(k, IE_DIV,
                             ir_bin(k, IE_SUB, ir_bin(k, IE_ADD, ir_param(k, 0), ir_bin(k, IE_MUL, ir_int(k, 2), ir_param(k, 1))),
                                    ir_param(k, 2)),
                             ir_param(k, 3)),
                      ir_int(k, 1));
    int64_t v = 0;
    CHECK(ir_eval_size(k, oh, &v) && v == 32);
    CHECK(ir_eval_size(k, ir_bin(k, IE_MOD, ir_int(k, -7), ir_int(k, 3)), &v) && v == 2);
    CHECK(!ir_eval_size(k, ir_bin(k, IE_DIV, ir_int(k, 1), ir_int(k, 0)), &v));
    CHECK(!ir_eval_size(k, ir_bin(k, IE_MUL, ir_int(k, INT64_MAX), ir_int(k, 2)), &v));
    Buffer *b = ir_add_buffer(k, "Y", DT_F32, BUF_OUT, 2, nospan);
    b->shape[0] = oh;
    b->shape[1] = ir_param(k, 0);
    CHECK(ir_buffer_elems(k, b) == 32 * 64);
    Buffer *z = ir_add_buffer(k, "Z", DT_F32, BUF_OUT, 0, nospan);
    CHECK(ir_buffer_elems(k, z) == 1);
    CHECK(ir_all_bound(k, NULL));
    k->params[2].bound = false;
    CHECK(ir_buffer_elems(k, b) == -1);
    Diags d;
    diag_init(&d);
    CHECK(!ir_all_bound(k, &d));
    CHECK_HAS(d.text.s, "parameter R has no value: bind it with -D R=<value>");
    diag_free(&d);
    ir_free(k);
}

/* lang/checked.h: every edge where plain int64_t arithmetic is undefined. */
static void test_checked(void)
{
    int64_t v = 7;
    size_t z = 0;
    CHECK(!ck_floordiv(INT64_MIN, -1, &v) && v == 7); /* the SIGFPE of -emit ast */
    CHECK(ck_floormod(INT64_MIN, -1, &v) && v == 0);
    CHECK(!ck_floordiv(5, 0, &v) && !ck_floormod(5, 0, &v));
    CHECK(ck_floordiv(-7, 2, &v) && v == -4);
    CHECK(ck_floormod(-7, 2, &v) && v == 1);
    CHECK(ck_floormod(7, -2, &v) && v == -1);
    CHECK(!ck_neg(INT64_MIN, &v) && ck_neg(INT64_MAX, &v) && v == -INT64_MAX);
    CHECK(!ck_mul(INT64_C(3037000500), INT64_C(3037000500), &v));
    CHECK(ck_mul(INT64_C(3037000499), INT64_C(3037000499), &v) && v == INT64_C(9223372030926249001));
    CHECK(!ck_add(INT64_MAX, 1, &v) && !ck_sub(INT64_MIN, 1, &v));
    CHECK(ck_bytes(1000, 4, &z) && z == 4000);
    CHECK(!ck_bytes(INT64_MAX / 2, 4, &z) && !ck_bytes(-1, 4, &z));
    CHECK(!ck_size_mul(SIZE_MAX / 2, 3, &z));
    Kernel *k = ir_kernel_new("c", nospan);
    CHECK(!ir_eval_size(k, ir_bin(k, IE_DIV, ir_int(k, INT64_MIN), ir_int(k, -1)), &v));
    CHECK(!ir_eval_size(k, ir_un(k, IE_NEG, ir_int(k, INT64_MIN)), &v));
    ir_free(k);
}

/* ---- interpreter ---- */

static double **bufs_of(const Kernel *k, double **given)
{
    double **b = calloc((size_t)k->nbufs, sizeof *b);
    for (int i = 0; i < k->nbufs; i++)
        b[i] = given[i];
    return b;
}

static void test_interp_semantics(void)
{
    const char *pn[] = {"N"};
    const int64_t pv[] = {5};
    Kernel *k = new_kernel("sem", 1, pn, pv);
    Buffer *X = buf1(k, "X", DT_F32, BUF_IN, ir_param(k, 0));
    X->has_pad = true;
    X->pad = 0.25;
    Buffer *Y = buf1(k, "Y", DT_F64, BUF_OUT, ir_param(k, 0));  /* X?[i-1] + X?[i+1] */
    Buffer *Z = buf1(k, "Z", DT_F32, BUF_OUT, ir_param(k, 0));  /* stores keep f64 */
    Buffer *H = buf1(k, "H", DT_F32, BUF_OUT, ir_param(k, 0));  /* f16 cast rounds */
    Buffer *T = buf1(k, "T", DT_F64, BUF_OUT, ir_param(k, 0));  /* triangular, lazy select */
    Buffer *Q = buf1(k, "Q", DT_I32, BUF_OUT, ir_param(k, 0));  /* integer floor division */
    Buffer *t = buf1(k, "t", DT_F64, BUF_TEMP, ir_param(k, 0)); /* allocated by interp */
    Buffer *S = ir_add_buffer(k, "S", DT_F64, BUF_OUT, 0, nospan);
    Var *i = ir_new_var(k, "i"), *j = ir_new_var(k, "j");

    Node *l = loop(k, &k->body, NULL, i, ir_int(k, 0), ir_param(k, 0));
    l->u.loop.kind = LOOP_PARALLEL; /* every kind runs serially */
    Expr *a = ld1(k, X, ir_bin(k, IE_SUB, ir_var(k, i), ir_int(k, 1)));
    Expr *b = ld1(k, X, ir_bin(k, IE_ADD, ir_var(k, i), ir_int(k, 1)));
    a->u.load.guarded = b->u.load.guarded = true;
    ir_list_push(&l->u.loop.body,
                 st1(k, Y, ir_var(k, i), SOP_ASSIGN, ir_bin(k, IE_ADD, ir_cast(k, a, DT_F64), ir_cast(k, b, DT_F64))), l);
    ir_list_push(&l->u.loop.body,
                 st1(k, Z, ir_var(k, i), SOP_ASSIGN, ir_bin(k, IE_DIV, ir_flt(k, 1, DT_F32), ir_flt(k, 3, DT_F32))), l);
    ir_list_push(&l->u.loop.body,
                 st1(k, H, ir_var(k, i), SOP_ASSIGN,
                     ir_cast(k, ir_cast(k, ir_bin(k, IE_DIV, ir_flt(k, 1, DT_F32), ir_flt(k, 3, DT_F32)), DT_F16), DT_F32)),
                 l);
    /* T[i] = sum over j in i..N of select(j + 1 < N, X[j + 1], 100) */
    ir_list_push(&l->u.loop.body, st1(k, T, ir_var(k, i), SOP_ASSIGN, ir_flt(k, 0, DT_F64)), l);
    Node *lj = loop(k, &l->u.loop.body, l, j, ir_var(k, i), ir_param(k, 0));
    lj->u.loop.kind = LOOP_VECTOR;
    Expr *x1 = ld1(k, X, ir_bin(k, IE_ADD, ir_var(k, j), ir_int(k, 1))); /* out of range at j = N-1 */
    Expr *sel = ir_select(k, ir_bin(k, IE_LT, ir_bin(k, IE_ADD, ir_var(k, j), ir_int(k, 1)), ir_param(k, 0)),
                          ir_cast(k, x1, DT_F64), ir_flt(k, 100, DT_F64));
    ir_list_push(&lj->u.loop.body, st1(k, T, ir_var(k, i), SOP_ADD, sel), lj);
    /* Q[i] = i32((i - 3) / 2) with floor division; t[i] = i; S = max over i of t[i] */
    ir_list_push(&l->u.loop.body,
                 st1(k, Q, ir_var(k, i), SOP_ASSIGN,
                     ir_cast(k, ir_bin(k, IE_DIV, ir_bin(k, IE_SUB, ir_var(k, i), ir_int(k, 3)), ir_int(k, 2)), DT_I32)),
                 l);
    ir_list_push(&l->u.loop.body, st1(k, t, ir_var(k, i), SOP_ASSIGN, ir_cast(k, ir_var(k, i), DT_F64)), l);
    Var *i2 = ir_new_var(k, "i");
    ir_list_push(&k->body, ir_stmt(k, S, NULL, SOP_ASSIGN, ir_flt(k, -INFINITY, DT_F64), nospan), NULL);
    Node *l2 = loop(k, &k->body, NULL, i2, ir_int(k, 0), ir_param(k, 0));
    ir_list_push(&l2->u.loop.body, ir_stmt(k, S, NULL, SOP_MAX, ld1(k, t, ir_var(k, i2)), nospan), l2);
    /* an empty loop never runs its body */
    Var *e = ir_new_var(k, "e");
    Node *le = loop(k, &k->body, NULL, e, ir_int(k, 3), ir_int(k, 1));
    ir_list_push(&le->u.loop.body, ir_stmt(k, S, NULL, SOP_ASSIGN, ir_flt(k, 99, DT_F64), nospan), le);

    Diags d;
    diag_init(&d);
    CHECK(ir_verify(k, &d));
    double xs[5] = {1, 2, 3, 4, 5};
    double ys[5], zs[5], hs[5], ts[5], qs[5], ss[1];
    double *given[] = {xs, ys, zs, hs, ts, qs, NULL, ss};
    double **bufs = bufs_of(k, given);
    CHECK(ir_interp(k, bufs, &d));
    if (d.text.len)
        fprintf(stderr, "%s", d.text.s);
    const double wy[5] = {0.25 + 2, 1 + 3, 2 + 4, 3 + 5, 4 + 0.25};
    for (int n = 0; n < 5; n++) {
        CHECK(ys[n] == wy[n]);
        CHECK(zs[n] == 1.0 / 3);               /* not rounded to f32 by the store */
        CHECK(hs[n] == dtype_round(1.0 / 3, DT_F16));
        double want = 0;
        for (int m = n; m < 5; m++)
            want += m + 1 < 5 ? xs[m + 1] : 100;
        CHECK(ts[n] == want);
    }
    CHECK(qs[0] == -2 && qs[1] == -1 && qs[2] == -1 && qs[3] == 0 && qs[4] == 0);
    CHECK(ss[0] == 4);
    free(bufs);
    diag_free(&d);
    ir_free(k);
}

static void test_interp_faults(void)
{
    const char *pn[] = {"N"};
    const int64_t pv[] = {5};
    /* unguarded read past the end: a diagnostic, not a crash */
    Kernel *k = new_kernel("f", 1, pn, pv);
    Buffer *X = buf1(k, "X", DT_F32, BUF_IN, ir_param(k, 0));
    Buffer *Y = buf1(k, "Y", DT_F32, BUF_OUT, ir_param(k, 0));
    Var *i = ir_new_var(k, "i");
    Node *l = loop(k, &k->body, NULL, i, ir_int(k, 0), ir_param(k, 0));
    ir_list_push(&l->u.loop.body, st1(k, Y, ir_var(k, i), SOP_ASSIGN, ld1(k, X, ir_bin(k, IE_ADD, ir_var(k, i), ir_int(k, 1)))), l);
    double **bufs = ir_alloc_buffers(k, 3);
    Diags d;
    diag_init(&d);
    CHECK(!ir_interp(k, bufs, &d));
    CHECK_HAS(d.text.s, "out-of-range read of X[i + 1]: index 5 in dimension 0, whose size is 5 (at i=4)");
    ir_free_buffers(k, bufs);
    diag_free(&d);
    ir_free(k);

    /* a write out of range, computed through a non-affine index */
    k = new_kernel("w", 1, pn, pv);
    Y = buf1(k, "Y", DT_F32, BUF_OUT, ir_param(k, 0));
    i = ir_new_var(k, "i");
    l = loop(k, &k->body, NULL, i, ir_int(k, 0), ir_param(k, 0));
    ir_list_push(&l->u.loop.body,
                 st1(k, Y, ir_bin(k, IE_MUL, ir_var(k, i), ir_var(k, i)), SOP_ASSIGN, ir_flt(k, 1, DT_F32)), l);
    bufs = ir_alloc_buffers(k, 3);
    diag_init(&d);
    CHECK(!ir_interp(k, bufs, &d));
    CHECK_HAS(d.text.s, "out-of-range write of Y[i * i]: index 9 in dimension 0, whose size is 5 (at i=3)");
    ir_free_buffers(k, bufs);
    diag_free(&d);
    ir_free(k);

    /* a guard that keeps a shifted read in range: no fault, and the read is
     * still checked when the guard does not cover it */
    for (int covered = 1; covered >= 0; covered--) {
        k = new_kernel("g", 1, pn, pv);
        X = buf1(k, "X", DT_F32, BUF_IN, ir_param(k, 0));
        Y = buf1(k, "Y", DT_F32, BUF_OUT, ir_param(k, 0));
        i = ir_new_var(k, "i");
        l = loop(k, &k->body, NULL, i, ir_int(k, 0), ir_param(k, 0));
        ir_list_push(&l->u.loop.body, st1(k, Y, ir_var(k, i), SOP_ASSIGN, ir_flt(k, -1, DT_F32)), l);
        Expr *lhs = ir_bin(k, IE_ADD, ir_var(k, i), ir_int(k, 1));
        Expr *cond = covered ? ir_bin(k, IE_LT, lhs, ir_param(k, 0))
                             : ir_bin(k, IE_LE, lhs, ir_param(k, 0));
        Node *g = ir_guard(k, ir_bin(k, IE_AND, ir_bin(k, IE_GE, ir_var(k, i), ir_int(k, 0)), cond), nospan);
        ir_list_push(&l->u.loop.body, g, l);
        ir_list_push(&g->u.guard.body,
                     st1(k, Y, ir_var(k, i), SOP_ASSIGN, ld1(k, X, ir_bin(k, IE_ADD, ir_var(k, i), ir_int(k, 1)))), g);
        bufs = ir_alloc_buffers(k, 3);
        diag_init(&d);
        CHECK(ir_interp(k, bufs, &d) == (covered == 1));
        if (covered) {
            for (int n = 0; n < 4; n++)
                CHECK(bufs[1][n] == bufs[0][n + 1]);
            CHECK(bufs[1][4] == -1);
        } else {
            CHECK_HAS(d.text.s, "out-of-range read of X[i + 1]: index 5 in dimension 0, whose size is 5 (at i=4)");
        }
        ir_free_buffers(k, bufs);
        diag_free(&d);
        ir_free(k);
    }

    /* integer division by zero */
    k = new_kernel("z", 1, pn, pv);
    Y = buf1(k, "Y", DT_F32, BUF_OUT, ir_param(k, 0));
    i = ir_new_var(k, "i");
    l = loop(k, &k->body, NULL, i, ir_int(k, 0), ir_param(k, 0));
    Expr *q = ir_bin(k, IE_DIV, ir_int(k, 10), ir_bin(k, IE_SUB, ir_var(k, i), ir_int(k, 2)));
    ir_list_push(&l->u.loop.body, st1(k, Y, ir_var(k, i), SOP_ASSIGN, ir_cast(k, q, DT_F32)), l);
    bufs = ir_alloc_buffers(k, 3);
    diag_init(&d);
    CHECK(!ir_interp(k, bufs, &d));
    CHECK_HAS(d.text.s, "integer division by zero in '10 / (i - 2)' (at i=2)");
    ir_free_buffers(k, bufs);
    diag_free(&d);
    ir_free(k);

    /* unbound parameter, missing data, variable out of scope */
    k = new_kernel("u", 1, pn, NULL);
    Y = buf1(k, "Y", DT_F32, BUF_OUT, ir_param(k, 0));
    diag_init(&d);
    double *none[1] = {NULL};
    CHECK(!ir_interp(k, none, &d));
    CHECK_HAS(d.text.s, "parameter N has no value");
    CHECK(ir_alloc_buffers(k, 1) == NULL);
    k->params[0].bound = true;
    k->params[0].value = 3;
    CHECK(!ir_interp(k, none, &d));
    CHECK_HAS(d.text.s, "no data given for output Y");
    i = ir_new_var(k, "i");
    ir_list_push(&k->body, st1(k, Y, ir_var(k, i), SOP_ASSIGN, ir_flt(k, 1, DT_F32)), NULL);
    bufs = ir_alloc_buffers(k, 1);
    CHECK(!ir_interp(k, bufs, &d));
    CHECK_HAS(d.text.s, "loop variable i used outside its loop");
    ir_free_buffers(k, bufs);
    diag_free(&d);
    ir_free(k);
}

static void test_alloc_buffers(void)
{
    const char *pn[] = {"N"};
    const int64_t pv[] = {1000};
    Kernel *k = new_kernel("a", 1, pn, pv);
    buf1(k, "H", DT_F16, BUF_IN, ir_param(k, 0));
    buf1(k, "B", DT_BF16, BUF_IN, ir_param(k, 0));
    buf1(k, "I", DT_I32, BUF_IN, ir_param(k, 0));
    buf1(k, "O", DT_F32, BUF_OUT, ir_param(k, 0));
    buf1(k, "T", DT_F32, BUF_TEMP, ir_param(k, 0));
    double **b = ir_alloc_buffers(k, 42), **c = ir_alloc_buffers(k, 42), **e = ir_alloc_buffers(k, 43);
    bool same = true, differ = false, ints = true, rounded = true, range = true, poisoned = true;
    for (int n = 0; n < 1000; n++) {
        for (int q = 0; q < 3; q++) {
            same &= b[q][n] == c[q][n];
            differ |= b[q][n] != e[q][n];
        }
        rounded &= b[0][n] == dtype_round(b[0][n], DT_F16) && b[1][n] == dtype_round(b[1][n], DT_BF16);
        range &= b[0][n] >= -1 && b[0][n] <= 1 && b[1][n] >= -1 && b[1][n] <= 1;
        ints &= b[2][n] == trunc(b[2][n]) && b[2][n] >= -8 && b[2][n] <= 8;
        poisoned &= isnan(b[3][n]) && isnan(b[4][n]);
    }
    CHECK(same && differ && rounded && range && ints && poisoned);
    ir_free_buffers(k, b);
    ir_free_buffers(k, c);
    ir_free_buffers(k, e);
    ir_free(k);
}

/* The oracle's speed on a gemm, reported (not asserted: sanitizer and debug
 * builds are slower). */
static void test_interp_speed(void)
{
    const char *pn[] = {"M", "N", "K"};
    const int64_t pv[] = {128, 128, 128};
    Kernel *k = new_kernel("gemm", 3, pn, pv);
    Buffer *A = ir_add_buffer(k, "A", DT_F16, BUF_IN, 2, nospan);
    A->shape[0] = ir_param(k, 0);
    A->shape[1] = ir_param(k, 2);
    Buffer *B = ir_add_buffer(k, "B", DT_F16, BUF_IN, 2, nospan);
    B->shape[0] = ir_param(k, 2);
    B->shape[1] = ir_param(k, 1);
    Buffer *C = ir_add_buffer(k, "C", DT_F32, BUF_OUT, 2, nospan);
    C->shape[0] = ir_param(k, 0);
    C->shape[1] = ir_param(k, 1);
    Var *i = ir_new_var(k, "i"), *j = ir_new_var(k, "j"), *kk = ir_new_var(k, "k");
    Node *li = loop(k, &k->body, NULL, i, ir_int(k, 0), ir_param(k, 0));
    Node *lj = loop(k, &li->u.loop.body, li, j, ir_int(k, 0), ir_param(k, 1));
    Expr *c0[] = {ir_var(k, i), ir_var(k, j)};
    ir_list_push(&lj->u.loop.body, ir_stmt(k, C, c0, SOP_ASSIGN, ir_flt(k, 0, DT_F32), nospan), lj);
    Node *lk = loop(k, &lj->u.loop.body, lj, kk, ir_int(k, 0), ir_param(k, 2));
    Expr *ai[] = {ir_var(k, i), ir_var(k, kk)}, *bi[] = {ir_var(k, kk), ir_var(k, j)}, *ci[] = {ir_var(k, i), ir_var(k, j)};
    Expr *v = ir_bin(k, IE_MUL, ir_cast(k, ir_load(k, A, ai), DT_F32), ir_cast(k, ir_load(k, B, bi), DT_F32));
    ir_list_push(&lk->u.loop.body, ir_stmt(k, C, ci, SOP_ADD, v, nospan), lk);
    double **b = ir_alloc_buffers(k, 5);
    Diags d;
    diag_init(&d);
    double t0 = now_seconds();
    CHECK(ir_interp(k, b, &d));
    double dt = now_seconds() - t0;
    double maxerr = 0;
    for (int x = 0; x < 128; x += 7)
        for (int y = 0; y < 128; y += 5) {
            double s = 0;
            for (int z = 0; z < 128; z++)
                s += b[0][x * 128 + z] * b[1][z * 128 + y];
            maxerr = fmax(maxerr, fabs(s - b[2][x * 128 + y]));
        }
    CHECK(maxerr == 0);
    printf("interpreter: 128^3 f16 gemm in %.1f ms, %.0f M statements/s\n", dt * 1e3,
           128.0 * 128 * 129 / dt / 1e6);
    ir_free_buffers(k, b);
    diag_free(&d);
    ir_free(k);
}

int main(void)
{
    test_printer();
    test_print_kernel();
    test_builder();
    test_simplify();
    test_verify();
    test_eval();
    test_checked();
    test_interp_semantics();
    test_interp_faults();
    test_alloc_buffers();
    test_interp_speed();
    if (failures) {
        fprintf(stderr, "ir_unit: %d check%s failed\n", failures, failures == 1 ? "" : "s");
        return 1;
    }
    printf("ir_unit: all checks passed\n");
    return 0;
}
