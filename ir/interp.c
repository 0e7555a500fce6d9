/* The f64 reference interpreter: the golden-output oracle of perfc.
 *
 * Every generated kernel is validated against what this file computes, so it is
 * written to be obviously right rather than clever, and it shares no code with
 * code generation (it reads only ir.h).  Semantics:
 *  - all arithmetic in f64 ("ideal math"); stores keep the f64 value unrounded;
 *  - an explicit CAST to f32/f16/bf16/i32 rounds with dtype_round: casts are part
 *    of the kernel's meaning (f32(A[i, k]) of an f16 input, or an f16 cast that a
 *    user wrote on purpose);
 *  - index arithmetic in i64, floor division and modulo;
 *  - every loop kind runs serially, in order; guards and selects are evaluated
 *    lazily, as C's `if` and `?:`;
 *  - a buffer with per-thread copies (Buffer.thread_copies, set by the GPU target
 *    lowering) has one copy per iteration of the enclosing loops bound to those
 *    thread dimensions: the copy index is each such loop's variable minus its
 *    start, as threadIdx is on the GPU;
 *  - a guarded load outside its buffer yields the buffer's pad value (0 without
 *    one), a guarded store there is dropped; any other access outside its buffer, or an integer division by zero, stops the run with
 *    a diagnostic naming the access and the loop variables: never a crash.
 *
 * Speed matters because the oracle runs on every validation: the tree is compiled
 * once into a flat register bytecode (loops become backward jumps, index
 * expressions become affine forms over loop-variable registers, constants and
 * parameters live in preloaded registers) and a single switch loop runs it. */
#include "ir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The largest buffer the interpreter allocates (temporaries) or ir_alloc_buffers
 * hands out, in elements: 1 TiB of doubles. */
#define MAX_ELEMS ((uint64_t)1 << 37)

#define PF_OPS(X)                                                                   \
    X(HALT) X(JMP) X(JZ) X(LOOP_BEGIN) X(LOOP_END)                                  \
    /* i64 registers */                                                             \
    X(IMOV) X(IADD) X(ISUB) X(IMUL) X(IDIV) X(IMOD) X(IMAX) X(IMIN) X(INEG) X(IABS)  \
    X(FTOI) X(ITOF)                                                                 \
    X(ILT) X(ILE) X(IGT) X(IGE) X(IEQ) X(INE) /* i64 compare -> f64 0/1 */           \
    /* f64 registers */                                                             \
    X(FMOV) X(FADD) X(FSUB) X(FMUL) X(FDIV) X(FMOD) X(FMAX) X(FMIN)                 \
    X(QDIV) X(QMOD) /* floor division of integer values held in f64 (i32) */        \
    X(FNEG) X(FABS) X(FNOT) X(FEXP) X(FLOG) X(FSQRT) X(FRSQRT) X(FTANH) X(FERF)       \
    X(FLOG1P) X(FEXPM1) X(FFLOOR) X(FCEIL) X(FRINT) X(FPOW)                          \
    X(FLT) X(FLE) X(FGT) X(FGE) X(FEQ) X(FNE) X(FAND) X(FOR)                         \
    X(RF32) X(ROUND) X(TOBOOL)                                                      \
    /* memory */                                                                    \
    X(LOAD) X(LOAD_F32) X(LOAD_ROUND)                                               \
    X(ST_SET) X(ST_ADD) X(ST_MUL) X(ST_MAX) X(ST_MIN)                               \
    /* accesses proven in range, offset = base + 4 affine terms, no checks */       \
    X(LOADF) X(LOADF_F32) X(LOADF_ROUND)                                            \
    X(STF_SET) X(STF_ADD) X(STF_MUL) X(STF_MAX) X(STF_MIN)                          \
    X(STF_MADD) /* T[...] += R[a] * R[b]: the inner statement of every contraction */

typedef enum Code {
#define X(c) C_##c,
    PF_OPS(X)
#undef X
} Code;

/* One affine term: coef * I[reg]. */
typedef struct Term {
    int32_t reg;
    int64_t coef;
} Term;

typedef struct Dim {
    int64_t c, size, stride;
    int nt;                 /* terms of this dimension, consecutive in Access.terms */
} Dim;

/* Where the interpreter was, for messages: the loops around an op. */
typedef struct Scope {
    const Var **vars;
    int n;
} Scope;

typedef struct Access {
    double *data;
    /* safe: proven in range for every iteration (interval analysis at compile
     * time), so the offset is base + sum of flat terms with no checks */
    bool safe;
    int nflat;
    int64_t base;
    Term *flat;
    /* fast: safe with at most 4 terms, kept unrolled (unused: coefficient 0) */
    bool fast;
    int32_t fr[4];
    int64_t fc[4];
    const Buffer *buf;
    int rank;
    Dim *dims;
    Term *terms;
    bool guarded;
    double pad;
    DType round;            /* LOAD_ROUND */
    Expr *const *idx;       /* for messages */
    int nx;                 /* leading dimensions that pick a per-thread copy */
} Access;

/* Ops are kept small (the run loop walks them); what only messages need lives
 * in a parallel array of OpInfo. */
typedef struct Op {
    uint8_t code;
    int32_t d, a, b;        /* registers */
    int32_t t;              /* jump target */
    union {
        Access *acc;
        DType t;
    } u;
} Op;

typedef struct OpInfo {
    Span span;
    const Scope *scope;     /* the loops around the op */
    const Expr *e;
} OpInfo;

/* What an enclosing guard guarantees: lo <= e <= hi. */
typedef struct Fact {
    const Expr *e;
    int64_t lo, hi;
} Fact;

typedef struct Comp {
    const Kernel *k;
    double **bufs;
    Diags *d;
    bool ok;
    Arena *arena;           /* accesses, scopes: freed after the run */
    Op *code;
    OpInfo *info;
    int ncode, capcode;
    int64_t *ival;          /* initial i64 register values (constants, params) */
    int ni, capi;
    double *fval;
    int nf, capf;
    bool *in_scope;
    bool *known;            /* by Var id: the variable's range below is known */
    int64_t *vlo, *vhi;     /* inclusive range of each loop variable */
    const Var **stack;
    int depth;
    const Scope *scope;     /* snapshot of stack, shared by the ops of one node */
    int zero_reg;           /* an i64 register that always holds 0 */
    Fact *facts;            /* bounds from the enclosing guards */
    int nfacts, capfacts;
    Span where;             /* the node being compiled */
    const Node *tloop[3];   /* the enclosing loops bound to thread.x, .y, .z */
    bool checked;           /* no access proven in range: every one is checked */
} Comp;

static void cfail(Comp *c, Span sp, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void cfail(Comp *c, Span sp, const char *fmt, ...)
{
    if (!c->ok)
        return;
    c->ok = false;
    StrBuf b = {0};
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&b, fmt, ap);
    va_end(ap);
    diag_error(c->d, sp.src ? sp : c->where, "interpreter: %s", b.s);
    sb_free(&b);
}

static int new_ireg(Comp *c, int64_t init)
{
    if (c->ni == c->capi) {
        c->capi = c->capi ? c->capi * 2 : 64;
        c->ival = xrealloc(c->ival, sizeof(int64_t) * (size_t)c->capi);
    }
    c->ival[c->ni] = init;
    return c->ni++;
}

static int new_freg(Comp *c, double init)
{
    if (c->nf == c->capf) {
        c->capf = c->capf ? c->capf * 2 : 64;
        c->fval = xrealloc(c->fval, sizeof(double) * (size_t)c->capf);
    }
    c->fval[c->nf] = init;
    return c->nf++;
}

static Op *emit(Comp *c, Code code, int d, int a, int b, const Expr *e)
{
    if (c->ncode == c->capcode) {
        c->capcode = c->capcode ? c->capcode * 2 : 256;
        c->code = xrealloc(c->code, sizeof(Op) * (size_t)c->capcode);
        c->info = xrealloc(c->info, sizeof(OpInfo) * (size_t)c->capcode);
    }
    OpInfo *in = &c->info[c->ncode];
    in->e = e;
    in->span = e && e->span.src ? e->span : c->where;
    in->scope = c->scope;
    Op *op = &c->code[c->ncode++];
    memset(op, 0, sizeof *op);
    op->code = (uint8_t)code;
    op->d = d;
    op->a = a;
    op->b = b;
    return op;
}

static bool int_native(const Expr *e)
{
    if (e->kind == IE_PARAM || e->kind == IE_VAR)
        return true;
    if (e->dtype != DT_I64)
        return false;
    switch (e->kind) {
    case IE_INT: case IE_NEG: case IE_ABS: case IE_ADD: case IE_SUB: case IE_MUL: case IE_DIV:
    case IE_MOD: case IE_MAX: case IE_MIN: case IE_CAST: case IE_SELECT:
        return true;
    default:
        return false;
    }
}

static int comp_f(Comp *c, const Expr *e);
static int comp_i(Comp *c, const Expr *e);

static bool check_args(Comp *c, const Expr *e)
{
    if (!e) {
        cfail(c, c->where, "missing expression");
        return false;
    }
    if ((unsigned)e->kind >= IE_COUNT) {
        cfail(c, e->span, "expression kind %d out of range", (int)e->kind);
        return false;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        if (!e->args[i]) {
            cfail(c, e->span, "%s lacks an operand", ir_expr_name(e->kind));
            return false;
        }
    return true;
}

/* ---- integer side ---- */

static int comp_select(Comp *c, const Expr *e, bool in_int);

static int comp_i(Comp *c, const Expr *e)
{
    if (!check_args(c, e))
        return 0;
    if (!int_native(e)) {
        int r = comp_f(c, e);
        int d = new_ireg(c, 0);
        emit(c, C_FTOI, d, r, 0, e);
        return d;
    }
    switch (e->kind) {
    case IE_INT:
        return new_ireg(c, e->u.i);
    case IE_PARAM:
        if (e->u.param < 0 || e->u.param >= c->k->nparams) {
            cfail(c, e->span, "parameter %d does not exist", e->u.param);
            return 0;
        }
        /* ir_interp checked every parameter is bound */
        return new_ireg(c, c->k->params[e->u.param].value);
    case IE_VAR: {
        const Var *v = e->u.var;
        if (!v || v->id < 0 || v->id >= c->k->nvars || c->k->vars[v->id] != v) {
            cfail(c, e->span, "variable does not belong to the kernel");
            return 0;
        }
        if (!c->in_scope[v->id]) {
            cfail(c, e->span, "loop variable %s used outside its loop", v->name);
            return 0;
        }
        return v->id; /* loop variables live in registers 0..nvars-1 */
    }
    case IE_CAST:
        return comp_i(c, e->args[0]);
    case IE_SELECT:
        return comp_select(c, e, true);
    default:
        break;
    }
    static const Code ops[IE_COUNT] = {
        [IE_ADD] = C_IADD, [IE_SUB] = C_ISUB, [IE_MUL] = C_IMUL, [IE_DIV] = C_IDIV,
        [IE_MOD] = C_IMOD, [IE_MAX] = C_IMAX, [IE_MIN] = C_IMIN, [IE_NEG] = C_INEG, [IE_ABS] = C_IABS,
    };
    int a = comp_i(c, e->args[0]);
    int b = ir_expr_arity(e->kind) == 2 ? comp_i(c, e->args[1]) : 0;
    int d = new_ireg(c, 0);
    emit(c, ops[e->kind], d, a, b, e);
    return d;
}

/* ---- affine index forms ---- */

typedef struct Form {
    int64_t c;
    Term t[17];             /* 16 terms, plus one for the spill register */
    int n;
    int spill;              /* register summing terms beyond 16, or -1 */
} Form;

static void add_term(Comp *c, Form *f, int reg, int64_t coef, const Expr *e)
{
    for (int i = 0; i < f->n; i++)
        if (f->t[i].reg == reg) {
            f->t[i].coef = (int64_t)((uint64_t)f->t[i].coef + (uint64_t)coef);
            return;
        }
    if (f->n < 16) {
        f->t[f->n].reg = reg;
        f->t[f->n].coef = coef;
        f->n++;
        return;
    }
    /* an index with more than 16 distinct variables: sum the rest with ops */
    int m = new_ireg(c, 0);
    emit(c, C_IMUL, m, reg, new_ireg(c, coef), e);
    if (f->spill < 0) {
        f->spill = m;
    } else {
        int s = new_ireg(c, 0);
        emit(c, C_IADD, s, f->spill, m, e);
        f->spill = s;
    }
}

/* Adds scale * e to f.  Multiplication by a constant (a literal or a bound
 * parameter) stays affine; anything else is computed into a register. */
static void affine(Comp *c, const Expr *e, int64_t scale, Form *f)
{
    int64_t v;
    if (!check_args(c, e))
        return;
    if (int_native(e)) {
        switch (e->kind) {
        case IE_INT:
        case IE_PARAM:
            if (ir_eval_size(c->k, e, &v)) {
                f->c = (int64_t)((uint64_t)f->c + (uint64_t)scale * (uint64_t)v);
                return;
            }
            break;
        case IE_VAR:
            add_term(c, f, comp_i(c, e), scale, e);
            return;
        case IE_ADD:
            affine(c, e->args[0], scale, f);
            affine(c, e->args[1], scale, f);
            return;
        case IE_SUB:
            affine(c, e->args[0], scale, f);
            affine(c, e->args[1], (int64_t)(0 - (uint64_t)scale), f);
            return;
        case IE_NEG:
            affine(c, e->args[0], (int64_t)(0 - (uint64_t)scale), f);
            return;
        case IE_MUL:
            if (ir_eval_size(c->k, e->args[0], &v)) {
                affine(c, e->args[1], (int64_t)((uint64_t)scale * (uint64_t)v), f);
                return;
            }
            if (ir_eval_size(c->k, e->args[1], &v)) {
                affine(c, e->args[0], (int64_t)((uint64_t)scale * (uint64_t)v), f);
                return;
            }
            break;
        case IE_CAST:
            if (e->args[0]->dtype == DT_I64) {
                affine(c, e->args[0], scale, f);
                return;
            }
            break;
        default:
            break;
        }
    }
    add_term(c, f, comp_i(c, e), scale, e);
}

static int64_t idiv_floor(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0)))
        q--;
    return q;
}

/* Inclusive range of an integer expression over the ranges of the enclosing
 * loop variables; false when unknown. */
static bool range(Comp *c, const Expr *e, int64_t *lo, int64_t *hi);

/* The range from the expression's structure alone. */
static bool range_of(Comp *c, const Expr *e, int64_t *lo, int64_t *hi)
{
    int64_t a0, a1, b0, b1;
    if (!e)
        return false;
    switch (e->kind) {
    case IE_INT:
        *lo = *hi = e->u.i;
        return true;
    case IE_PARAM:
        if (!ir_eval_size(c->k, e, lo))
            return false;
        *hi = *lo;
        return true;
    case IE_VAR: {
        const Var *v = e->u.var;
        if (!v || v->id < 0 || v->id >= c->k->nvars || !c->in_scope[v->id] || !c->known[v->id])
            return false;
        *lo = c->vlo[v->id];
        *hi = c->vhi[v->id];
        return true;
    }
    case IE_CAST:
        return e->dtype == DT_I64 && e->args[0]->dtype == DT_I64 && range(c, e->args[0], lo, hi);
    case IE_NEG:
        if (!range(c, e->args[0], &a0, &a1) || a0 == INT64_MIN)
            return false;
        *lo = -a1;
        *hi = -a0;
        return true;
    case IE_ADD: case IE_SUB: case IE_MUL: case IE_DIV: case IE_MOD: case IE_MAX: case IE_MIN:
        if (e->dtype != DT_I64 || !range(c, e->args[0], &a0, &a1) || !range(c, e->args[1], &b0, &b1))
            return false;
        break;
    default:
        return false;
    }
    switch (e->kind) {
    case IE_ADD:
        return !__builtin_add_overflow(a0, b0, lo) && !__builtin_add_overflow(a1, b1, hi);
    case IE_SUB:
        return !__builtin_sub_overflow(a0, b1, lo) && !__builtin_sub_overflow(a1, b0, hi);
    case IE_MUL: {
        int64_t p[4];
        if (__builtin_mul_overflow(a0, b0, &p[0]) || __builtin_mul_overflow(a0, b1, &p[1]) ||
            __builtin_mul_overflow(a1, b0, &p[2]) || __builtin_mul_overflow(a1, b1, &p[3]))
            return false;
        *lo = *hi = p[0];
        for (int i = 1; i < 4; i++) {
            if (p[i] < *lo) *lo = p[i];
            if (p[i] > *hi) *hi = p[i];
        }
        return true;
    }
    case IE_DIV: /* floor division by a positive constant is monotonic */
        if (b0 != b1 || b0 <= 0)
            return false;
        *lo = idiv_floor(a0, b0);
        *hi = idiv_floor(a1, b0);
        return true;
    case IE_MOD:
        if (b0 != b1 || b0 <= 0)
            return false;
        *lo = 0;
        *hi = b0 - 1;
        return true;
    case IE_MAX:
        *lo = a0 > b0 ? a0 : b0;
        *hi = a1 > b1 ? a1 : b1;
        return true;
    case IE_MIN:
        *lo = a0 < b0 ? a0 : b0;
        *hi = a1 < b1 ? a1 : b1;
        return true;
    default:
        return false;
    }
}

/* Same value whenever evaluated at one point of the program (no loads). */
static bool same_expr(const Expr *a, const Expr *b)
{
    if (a == b)
        return true;
    if (!a || !b || a->kind != b->kind || a->dtype != b->dtype)
        return false;
    switch (a->kind) {
    case IE_INT: return a->u.i == b->u.i;
    case IE_PARAM: return a->u.param == b->u.param;
    case IE_VAR: return a->u.var == b->u.var;
    case IE_FLT:
    case IE_LOAD: return false;
    default:
        for (int i = 0; i < ir_expr_arity(a->kind); i++)
            if (!same_expr(a->args[i], b->args[i]))
                return false;
        return true;
    }
}

/* The range of e, narrowed by what the enclosing guards say about e: inside
 * `if io*4 + ii < M`, the index io*4 + ii is below M, so a split loop's guarded
 * body keeps the unchecked access path. */
static bool range(Comp *c, const Expr *e, int64_t *lo, int64_t *hi)
{
    bool ok = range_of(c, e, lo, hi);
    for (int i = 0; i < c->nfacts; i++) {
        const Fact *f = &c->facts[i];
        if (!same_expr(f->e, e))
            continue;
        if (!ok) {
            *lo = INT64_MIN;
            *hi = INT64_MAX;
            ok = true;
        }
        if (f->lo > *lo)
            *lo = f->lo;
        if (f->hi < *hi)
            *hi = f->hi;
    }
    return ok && *lo <= *hi && *lo != INT64_MIN && *hi != INT64_MAX;
}

static void add_fact(Comp *c, const Expr *e, int64_t lo, int64_t hi)
{
    if (e->dtype != DT_I64)
        return;
    if (c->nfacts == c->capfacts) {
        c->capfacts = c->capfacts ? c->capfacts * 2 : 16;
        c->facts = xrealloc(c->facts, sizeof(Fact) * (size_t)c->capfacts);
    }
    c->facts[c->nfacts++] = (Fact){e, lo, hi};
}

/* Records the bounds a guard's condition puts on its integer operands. */
static void learn(Comp *c, const Expr *cond)
{
    int64_t a0, a1, b0, b1;
    if (!cond)
        return;
    if (cond->kind == IE_AND) {
        learn(c, cond->args[0]);
        learn(c, cond->args[1]);
        return;
    }
    if (cond->kind < IE_LT || cond->kind > IE_EQ)
        return;
    const Expr *a = cond->args[0], *b = cond->args[1];
    if (!a || !b || a->dtype != DT_I64 || b->dtype != DT_I64)
        return;
    bool ka = range(c, a, &a0, &a1), kb = range(c, b, &b0, &b1);
    switch (cond->kind) {
    case IE_LT: /* a < b */
        if (kb && b1 > INT64_MIN) add_fact(c, a, INT64_MIN, b1 - 1);
        if (ka && a0 < INT64_MAX) add_fact(c, b, a0 + 1, INT64_MAX);
        break;
    case IE_LE:
        if (kb) add_fact(c, a, INT64_MIN, b1);
        if (ka) add_fact(c, b, a0, INT64_MAX);
        break;
    case IE_GT: /* a > b */
        if (kb && b0 < INT64_MAX) add_fact(c, a, b0 + 1, INT64_MAX);
        if (ka && a1 > INT64_MIN) add_fact(c, b, INT64_MIN, a1 - 1);
        break;
    case IE_GE:
        if (kb) add_fact(c, a, b0, INT64_MAX);
        if (ka) add_fact(c, b, INT64_MIN, a1);
        break;
    case IE_EQ:
        if (kb) add_fact(c, a, b0, b1);
        if (ka) add_fact(c, b, a0, a1);
        break;
    default:
        break;
    }
}

/* Builds the access of buf at idx; its index registers are computed by ops
 * emitted before the memory op itself. */
static Access *comp_access(Comp *c, const Buffer *buf, Expr *const *idx, Span sp)
{
    const Kernel *k = c->k;
    if (!buf || buf->id < 0 || buf->id >= k->nbufs || k->bufs[buf->id] != buf) {
        cfail(c, sp, "access to a buffer that does not belong to the kernel");
        return NULL;
    }
    if (buf->rank && !idx) {
        cfail(c, sp, "access to %s lacks its indices", buf->name);
        return NULL;
    }
    /* per-thread copies: leading dimensions indexed by the thread loops' variables
     * minus their starts (z, y, x outermost first) */
    const Node *xl[3];
    int64_t xn[3];
    int nx = 0;
    for (int t = 2; t >= 0; t--)
        if (buf->thread_copies[t]) {
            if (!c->tloop[t]) {
                cfail(c, sp, "per-thread buffer %s accessed outside a thread.%c loop", buf->name, "xyz"[t]);
                return NULL;
            }
            xl[nx] = c->tloop[t];
            xn[nx++] = buf->thread_copies[t];
        }
    int R = buf->rank + nx;
    Access *a = arena_alloc(c->arena, sizeof *a);
    a->buf = buf;
    a->data = c->bufs[buf->id];
    a->rank = R;
    a->nx = nx;
    a->pad = buf->has_pad ? buf->pad : 0.0;
    a->idx = idx;
    a->dims = arena_alloc(c->arena, sizeof(Dim) * (size_t)(R ? R : 1));
    Form *forms = xcalloc((size_t)(R ? R : 1), sizeof(Form));
    int nterms = 0;
    for (int i = 0; i < R && c->ok; i++) {
        forms[i].spill = -1;
        if (i < nx) {
            affine(c, xl[i]->u.loop.lo, -1, &forms[i]);
            add_term(c, &forms[i], xl[i]->u.loop.var->id, 1, xl[i]->u.loop.lo);
        } else {
            affine(c, idx[i - nx], 1, &forms[i]);
        }
        if (forms[i].spill >= 0)
            forms[i].t[forms[i].n++] = (Term){forms[i].spill, 1};
        nterms += forms[i].n;
    }
    a->terms = arena_alloc(c->arena, sizeof(Term) * (size_t)(nterms ? nterms : 1));
    int64_t stride = 1;
    for (int i = R - 1; i >= 0 && c->ok; i--) {
        int64_t size = 0;
        if (i < nx)
            size = xn[i];
        else
            ir_eval_size(k, buf->shape[i - nx], &size); /* checked when the buffer was set up */
        a->dims[i].size = size;
        a->dims[i].stride = stride;
        stride *= size > 0 ? size : 1;
    }
    Term *t = a->terms;
    for (int i = 0; i < R && c->ok; i++) {
        a->dims[i].c = forms[i].c;
        int n = 0;
        for (int j = 0; j < forms[i].n; j++)
            if (forms[i].t[j].coef != 0)
                t[n++] = forms[i].t[j];
        a->dims[i].nt = n;
        t += n;
    }
    /* Proven in range?  Then fold the strides into one flat affine form. */
    a->safe = c->ok && !c->checked;
    for (int i = 0; i < nx && a->safe; i++) {
        const Var *v = xl[i]->u.loop.var;
        int64_t l0, l1;
        a->safe = c->known[v->id] && range(c, xl[i]->u.loop.lo, &l0, &l1) && c->vlo[v->id] - l1 >= 0 &&
                  c->vhi[v->id] - l0 < a->dims[i].size;
    }
    for (int i = nx; i < R && a->safe; i++) {
        int64_t lo, hi;
        a->safe = range(c, idx[i - nx], &lo, &hi) && lo >= 0 && hi < a->dims[i].size;
    }
    if (a->safe) {
        a->flat = arena_alloc(c->arena, sizeof(Term) * (size_t)(nterms ? nterms : 1));
        const Term *src = a->terms;
        for (int i = 0; i < R; i++) {
            a->base += a->dims[i].c * a->dims[i].stride;
            for (int j = 0; j < a->dims[i].nt; j++, src++) {
                int64_t coef = src->coef * a->dims[i].stride;
                int f = 0;
                while (f < a->nflat && a->flat[f].reg != src->reg)
                    f++;
                if (f == a->nflat)
                    a->flat[a->nflat++] = (Term){src->reg, coef};
                else
                    a->flat[f].coef += coef;
            }
        }
        a->fast = a->nflat <= 4;
        for (int j = 0; j < 4; j++) {
            a->fr[j] = j < a->nflat ? a->flat[j].reg : c->zero_reg;
            a->fc[j] = j < a->nflat ? a->flat[j].coef : 0;
        }
    }
    free(forms);
    return a;
}

/* ---- f64 side ---- */

static int comp_select(Comp *c, const Expr *e, bool in_int)
{
    int cond = comp_f(c, e->args[0]);
    int d = in_int ? new_ireg(c, 0) : new_freg(c, 0);
    int jz = c->ncode;
    emit(c, C_JZ, 0, cond, 0, e);
    int ra = in_int ? comp_i(c, e->args[1]) : comp_f(c, e->args[1]);
    emit(c, in_int ? C_IMOV : C_FMOV, d, ra, 0, e);
    int jmp = c->ncode;
    emit(c, C_JMP, 0, 0, 0, e);
    c->code[jz].t = c->ncode;
    int rb = in_int ? comp_i(c, e->args[2]) : comp_f(c, e->args[2]);
    emit(c, in_int ? C_IMOV : C_FMOV, d, rb, 0, e);
    c->code[jmp].t = c->ncode;
    return d;
}

static bool is_intlike(DType t)
{
    return t == DT_I32 || t == DT_I64 || t == DT_BOOL;
}

static int comp_f(Comp *c, const Expr *e)
{
    if (!check_args(c, e) || !c->ok)
        return 0;
    if (int_native(e)) {
        int r = comp_i(c, e);
        int d = new_freg(c, 0);
        emit(c, C_ITOF, d, r, 0, e);
        return d;
    }
    switch (e->kind) {
    case IE_INT:
        return new_freg(c, (double)e->u.i);
    case IE_FLT:
        return new_freg(c, e->u.f);
    case IE_LOAD: {
        Access *a = comp_access(c, e->u.load.buf, e->u.load.idx, e->span);
        if (!a)
            return 0;
        a->guarded = e->u.load.guarded;
        int d = new_freg(c, 0);
        emit(c, a->fast ? C_LOADF : C_LOAD, d, 0, 0, e)->u.acc = a;
        return d;
    }
    case IE_CAST: {
        const Expr *x = e->args[0];
        DType t = e->dtype;
        /* f32(A[i, k]): one op instead of two in the hottest loops */
        if (x->kind == IE_LOAD && dtype_is_float(t) && t != DT_F64) {
            int d = comp_f(c, x);
            if (c->ok) {
                Op *op = &c->code[c->ncode - 1];
                if (op->u.acc->fast)
                    op->code = t == DT_F32 ? C_LOADF_F32 : C_LOADF_ROUND;
                else
                    op->code = t == DT_F32 ? C_LOAD_F32 : C_LOAD_ROUND;
                op->u.acc->round = t;
            }
            return d;
        }
        int r = comp_f(c, x);
        int d = new_freg(c, 0);
        switch (t) {
        case DT_F64:
            return r;
        case DT_F32:
            emit(c, C_RF32, d, r, 0, e);
            return d;
        case DT_BOOL:
            emit(c, C_TOBOOL, d, r, 0, e);
            return d;
        case DT_I32:
            if (is_intlike(x->dtype) && x->dtype != DT_I64)
                return r; /* i32 and bool values are already integers in range */
            /* fall through */
        default:
            emit(c, C_ROUND, d, r, 0, e)->u.t = t;
            return d;
        }
    }
    case IE_SELECT:
        return comp_select(c, e, false);
    case IE_LT: case IE_LE: case IE_GT: case IE_GE: case IE_EQ: case IE_NE:
        if (e->args[0]->dtype == DT_I64 && e->args[1]->dtype == DT_I64) {
            static const Code iops[IE_COUNT] = {
                [IE_LT] = C_ILT, [IE_LE] = C_ILE, [IE_GT] = C_IGT,
                [IE_GE] = C_IGE, [IE_EQ] = C_IEQ, [IE_NE] = C_INE,
            };
            int a = comp_i(c, e->args[0]);
            int b = comp_i(c, e->args[1]);
            int d = new_freg(c, 0);
            emit(c, iops[e->kind], d, a, b, e);
            return d;
        }
        break;
    case IE_DIV:
    case IE_MOD:
        if (!dtype_is_float(e->dtype)) {
            int a = comp_f(c, e->args[0]);
            int b = comp_f(c, e->args[1]);
            int d = new_freg(c, 0);
            emit(c, e->kind == IE_DIV ? C_QDIV : C_QMOD, d, a, b, e);
            return d;
        }
        break;
    case IE_PARAM:
    case IE_VAR:
        break; /* int_native */
    default:
        break;
    }
    static const Code fops[IE_COUNT] = {
        [IE_NEG] = C_FNEG, [IE_NOT] = C_FNOT, [IE_EXP] = C_FEXP, [IE_LOG] = C_FLOG,
        [IE_SQRT] = C_FSQRT, [IE_RSQRT] = C_FRSQRT, [IE_TANH] = C_FTANH, [IE_ERF] = C_FERF,
        [IE_ABS] = C_FABS, [IE_ADD] = C_FADD, [IE_SUB] = C_FSUB, [IE_MUL] = C_FMUL,
        [IE_DIV] = C_FDIV, [IE_MOD] = C_FMOD, [IE_MAX] = C_FMAX, [IE_MIN] = C_FMIN,
        [IE_LT] = C_FLT, [IE_LE] = C_FLE, [IE_GT] = C_FGT, [IE_GE] = C_FGE,
        [IE_EQ] = C_FEQ, [IE_NE] = C_FNE, [IE_AND] = C_FAND, [IE_OR] = C_FOR,
        [IE_LOG1P] = C_FLOG1P, [IE_EXPM1] = C_FEXPM1, [IE_FLOOR] = C_FFLOOR, [IE_CEIL] = C_FCEIL,
        [IE_ROUND] = C_FRINT, [IE_POW] = C_FPOW,
    };
    if (!fops[e->kind]) {
        cfail(c, e->span, "cannot evaluate a %s node", ir_expr_name(e->kind));
        return 0;
    }
    int a = comp_f(c, e->args[0]);
    int b = ir_expr_arity(e->kind) == 2 ? comp_f(c, e->args[1]) : 0;
    int d = new_freg(c, 0);
    emit(c, fops[e->kind], d, a, b, e);
    return d;
}

/* ---- nodes ---- */

static void set_scope(Comp *c)
{
    Scope *s = arena_alloc(c->arena, sizeof *s);
    s->n = c->depth;
    s->vars = arena_alloc(c->arena, sizeof(Var *) * (size_t)(c->depth ? c->depth : 1));
    memcpy(s->vars, c->stack, sizeof(Var *) * (size_t)c->depth);
    c->scope = s;
}

static void comp_nodes(Comp *c, const NodeList *l)
{
    for (int i = 0; i < l->n && c->ok; i++) {
        const Node *n = l->v[i];
        if (!n) {
            cfail(c, c->where, "missing node");
            return;
        }
        Span saved = c->where;
        if (n->span.src)
            c->where = n->span;
        set_scope(c);
        switch (n->kind) {
        case N_LOOP: {
            const Var *v = n->u.loop.var;
            if (!v || v->id < 0 || v->id >= c->k->nvars || c->k->vars[v->id] != v) {
                cfail(c, n->span, "loop variable does not belong to the kernel");
                return;
            }
            if (c->in_scope[v->id]) {
                cfail(c, n->span, "loop %s rebinds the variable of an enclosing loop", v->name);
                return;
            }
            int lo = comp_i(c, n->u.loop.lo);
            int hi = comp_i(c, n->u.loop.hi);
            int64_t l0, l1, h0, h1;
            c->known[v->id] = range(c, n->u.loop.lo, &l0, &l1) && range(c, n->u.loop.hi, &h0, &h1) && l0 < h1;
            if (c->known[v->id]) {
                c->vlo[v->id] = l0;
                c->vhi[v->id] = h1 - 1;
            }
            /* LOOP_BEGIN skips past LOOP_END on an empty range; LOOP_END jumps
             * back to the first op of the body */
            int begin = c->ncode;
            emit(c, C_LOOP_BEGIN, v->id, lo, hi, NULL);
            c->in_scope[v->id] = true;
            c->stack[c->depth++] = v;
            LoopKind lk = n->u.loop.kind;
            int td = lk == LOOP_THREAD_X ? 0 : lk == LOOP_THREAD_Y ? 1 : lk == LOOP_THREAD_Z ? 2 : -1;
            const Node *saved_t = td >= 0 ? c->tloop[td] : NULL;
            if (td >= 0)
                c->tloop[td] = n;
            comp_nodes(c, &n->u.loop.body);
            if (td >= 0)
                c->tloop[td] = saved_t;
            c->depth--;
            c->in_scope[v->id] = false;
            emit(c, C_LOOP_END, v->id, 0, hi, NULL)->t = begin + 1;
            c->code[begin].t = c->ncode;
            break;
        }
        case N_IF: {
            int cond = comp_f(c, n->u.guard.cond);
            int jz = c->ncode;
            emit(c, C_JZ, 0, cond, 0, n->u.guard.cond);
            int nfacts = c->nfacts;
            learn(c, n->u.guard.cond);
            comp_nodes(c, &n->u.guard.body);
            c->nfacts = nfacts;
            if (n->u.guard.els.n) {
                /* the else body (a versioned loop's original): nothing learnt */
                int jmp = c->ncode;
                emit(c, C_JMP, 0, 0, 0, n->u.guard.cond);
                c->code[jz].t = c->ncode;
                comp_nodes(c, &n->u.guard.els);
                c->code[jmp].t = c->ncode;
                break;
            }
            c->code[jz].t = c->ncode;
            break;
        }
        case N_STMT: {
            static const Code st[] = {
                [SOP_ASSIGN] = C_ST_SET, [SOP_ADD] = C_ST_ADD, [SOP_MUL] = C_ST_MUL,
                [SOP_MAX] = C_ST_MAX, [SOP_MIN] = C_ST_MIN,
            };
            if ((unsigned)n->u.stmt.op > SOP_MIN) {
                cfail(c, n->span, "statement operator %d out of range", (int)n->u.stmt.op);
                return;
            }
            int val = comp_f(c, n->u.stmt.value);
            int before = c->ncode;
            Access *a = comp_access(c, n->u.stmt.buf, n->u.stmt.idx, n->span);
            if (!a)
                return;
            a->guarded = n->u.stmt.guarded;
            Op *prev = before > 0 && before == c->ncode ? &c->code[before - 1] : NULL;
            if (a->fast && n->u.stmt.op == SOP_ADD && prev && prev->code == C_FMUL && prev->d == val) {
                /* T[...] += x * y in one op; the product's register is dead */
                prev->code = C_STF_MADD;
                prev->u.acc = a;
                break;
            }
            Code code = st[n->u.stmt.op];
            if (a->fast)
                code = (Code)(code - C_ST_SET + C_STF_SET);
            emit(c, code, 0, val, 0, NULL)->u.acc = a;
            break;
        }
        case N_PREFETCH:
            break; /* a hint: no effect on values */
        default:
            cfail(c, n->span, "node kind %d out of range", (int)n->kind);
            return;
        }
        c->where = saved;
    }
}

/* ---- execution ---- */

typedef struct Fault {
    int pc;
    int dim;                /* memory faults: the dimension out of range */
    int64_t index;
} Fault;

static inline double max_nan(double a, double b)
{
    /* NaN propagates: an unwritten (poisoned) element must not vanish in a max */
    if (a != a)
        return a;
    if (b != b)
        return b;
    return a > b ? a : b;
}

static inline double min_nan(double a, double b)
{
    if (a != a)
        return a;
    if (b != b)
        return b;
    return a < b ? a : b;
}

static inline int64_t wrap_add(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a + (uint64_t)b);
}

static inline int64_t wrap_mul(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a * (uint64_t)b);
}

static inline int64_t to_i64(double v)
{
    if (v != v)
        return INT64_MIN; /* a NaN index then reads out of range: reported, not hidden */
    if (v >= 9223372036854775807.0)
        return INT64_MAX;
    if (v <= -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)v;
}

static inline int64_t idiv(int64_t a, int64_t b, bool mod)
{
    if (b == -1)
        return mod ? 0 : (int64_t)(0 - (uint64_t)a);
    int64_t q = a / b, r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) {
        q--;
        r += b;
    }
    return mod ? r : q;
}

/* Floor division of integer values carried in doubles (i32 arithmetic). */
static inline double qdiv(double a, double b, bool mod)
{
    if (a != a || b != b)
        return NAN;
    if (fabs(a) < 9e15 && fabs(b) < 9e15 && a == trunc(a) && b == trunc(b))
        return (double)idiv((int64_t)a, (int64_t)b, mod);
    double q = floor(a / b);
    return mod ? a - b * q : q;
}

static inline bool locate(const Access *a, const int64_t *I, int64_t *off, Fault *f)
{
    if (a->safe) {
        int64_t o = a->base;
        for (int j = 0; j < a->nflat; j++)
            o += a->flat[j].coef * I[a->flat[j].reg];
        *off = o;
        return true;
    }
    uint64_t o = 0;
    const Term *t = a->terms;
    for (int d = 0; d < a->rank; d++) {
        const Dim *dm = &a->dims[d];
        uint64_t x = (uint64_t)dm->c;
        for (int j = 0; j < dm->nt; j++, t++)
            x += (uint64_t)t->coef * (uint64_t)I[t->reg];
        if (x >= (uint64_t)dm->size) {
            f->dim = d;
            f->index = (int64_t)x;
            return false;
        }
        o += x * (uint64_t)dm->stride;
    }
    *off = (int64_t)o;
    return true;
}

/* Runs the program; returns false with f filled on a fault. */
#define FAST(a) \
    ((a)->data[(a)->base + (a)->fc[0] * I[(a)->fr[0]] + (a)->fc[1] * I[(a)->fr[1]] + \
               (a)->fc[2] * I[(a)->fr[2]] + (a)->fc[3] * I[(a)->fr[3]]])

static bool run(const Op *code, double *R, int64_t *I, Fault *f)
{
    int64_t off;
    for (const Op *op = code;; op++) {
        switch ((Code)op->code) {
        case C_HALT: return true;
        case C_JMP: op = code + op->t - 1; break;
        case C_JZ: if (R[op->a] == 0) op = code + op->t - 1; break;
        case C_LOOP_BEGIN:
            I[op->d] = I[op->a];
            if (I[op->d] >= I[op->b])
                op = code + op->t - 1;
            break;
        case C_LOOP_END:
            if (++I[op->d] < I[op->b])
                op = code + op->t - 1;
            break;
        case C_LOADF: R[op->d] = FAST(op->u.acc); break;
        case C_LOADF_F32: R[op->d] = (double)(float)FAST(op->u.acc); break;
        case C_LOADF_ROUND: R[op->d] = dtype_round(FAST(op->u.acc), op->u.acc->round); break;
        case C_STF_SET: FAST(op->u.acc) = R[op->a]; break;
        case C_STF_ADD: FAST(op->u.acc) += R[op->a]; break;
        case C_STF_MUL: FAST(op->u.acc) *= R[op->a]; break;
        case C_STF_MAX: { double *p = &FAST(op->u.acc); *p = max_nan(*p, R[op->a]); break; }
        case C_STF_MIN: { double *p = &FAST(op->u.acc); *p = min_nan(*p, R[op->a]); break; }
        case C_STF_MADD: FAST(op->u.acc) += R[op->a] * R[op->b]; break;
        case C_IMOV: I[op->d] = I[op->a]; break;
        case C_IADD: I[op->d] = wrap_add(I[op->a], I[op->b]); break;
        case C_ISUB: I[op->d] = (int64_t)((uint64_t)I[op->a] - (uint64_t)I[op->b]); break;
        case C_IMUL: I[op->d] = wrap_mul(I[op->a], I[op->b]); break;
        case C_IDIV:
        case C_IMOD:
            if (I[op->b] == 0) {
                f->pc = (int)(op - code);
                return false;
            }
            I[op->d] = idiv(I[op->a], I[op->b], op->code == C_IMOD);
            break;
        case C_IMAX: I[op->d] = I[op->a] > I[op->b] ? I[op->a] : I[op->b]; break;
        case C_IMIN: I[op->d] = I[op->a] < I[op->b] ? I[op->a] : I[op->b]; break;
        case C_INEG: I[op->d] = (int64_t)(0 - (uint64_t)I[op->a]); break;
        case C_IABS: I[op->d] = I[op->a] < 0 ? (int64_t)(0 - (uint64_t)I[op->a]) : I[op->a]; break;
        case C_FTOI: I[op->d] = to_i64(R[op->a]); break;
        case C_ITOF: R[op->d] = (double)I[op->a]; break;
        case C_ILT: R[op->d] = I[op->a] < I[op->b]; break;
        case C_ILE: R[op->d] = I[op->a] <= I[op->b]; break;
        case C_IGT: R[op->d] = I[op->a] > I[op->b]; break;
        case C_IGE: R[op->d] = I[op->a] >= I[op->b]; break;
        case C_IEQ: R[op->d] = I[op->a] == I[op->b]; break;
        case C_INE: R[op->d] = I[op->a] != I[op->b]; break;
        case C_FMOV: R[op->d] = R[op->a]; break;
        case C_FADD: R[op->d] = R[op->a] + R[op->b]; break;
        case C_FSUB: R[op->d] = R[op->a] - R[op->b]; break;
        case C_FMUL: R[op->d] = R[op->a] * R[op->b]; break;
        case C_FDIV: R[op->d] = R[op->a] / R[op->b]; break;
        case C_FMOD: {
            double a = R[op->a], b = R[op->b];
            R[op->d] = a - b * floor(a / b);
            break;
        }
        case C_FMAX: R[op->d] = max_nan(R[op->a], R[op->b]); break;
        case C_FMIN: R[op->d] = min_nan(R[op->a], R[op->b]); break;
        case C_QDIV:
        case C_QMOD:
            if (R[op->b] == 0) {
                f->pc = (int)(op - code);
                return false;
            }
            R[op->d] = qdiv(R[op->a], R[op->b], op->code == C_QMOD);
            break;
        case C_FNEG: R[op->d] = -R[op->a]; break;
        case C_FABS: R[op->d] = fabs(R[op->a]); break;
        case C_FNOT: R[op->d] = R[op->a] == 0; break;
        case C_FEXP: R[op->d] = exp(R[op->a]); break;
        case C_FLOG: R[op->d] = log(R[op->a]); break;
        case C_FSQRT: R[op->d] = sqrt(R[op->a]); break;
        case C_FRSQRT: R[op->d] = 1.0 / sqrt(R[op->a]); break;
        case C_FTANH: R[op->d] = tanh(R[op->a]); break;
        case C_FERF: R[op->d] = erf(R[op->a]); break;
        case C_FLOG1P: R[op->d] = log1p(R[op->a]); break;
        case C_FEXPM1: R[op->d] = expm1(R[op->a]); break;
        case C_FFLOOR: R[op->d] = floor(R[op->a]); break;
        case C_FCEIL: R[op->d] = ceil(R[op->a]); break;
        case C_FRINT: R[op->d] = nearbyint(R[op->a]); break; /* ties to even: the default rounding mode */
        case C_FPOW: R[op->d] = pow(R[op->a], R[op->b]); break;
        case C_FLT: R[op->d] = R[op->a] < R[op->b]; break;
        case C_FLE: R[op->d] = R[op->a] <= R[op->b]; break;
        case C_FGT: R[op->d] = R[op->a] > R[op->b]; break;
        case C_FGE: R[op->d] = R[op->a] >= R[op->b]; break;
        case C_FEQ: R[op->d] = R[op->a] == R[op->b]; break;
        case C_FNE: R[op->d] = R[op->a] != R[op->b]; break;
        case C_FAND: R[op->d] = R[op->a] != 0 && R[op->b] != 0; break;
        case C_FOR: R[op->d] = R[op->a] != 0 || R[op->b] != 0; break;
        case C_RF32: R[op->d] = (double)(float)R[op->a]; break;
        case C_ROUND: R[op->d] = dtype_round(R[op->a], op->u.t); break;
        case C_TOBOOL: R[op->d] = R[op->a] != 0; break;
        case C_LOAD:
        case C_LOAD_F32:
        case C_LOAD_ROUND: {
            const Access *a = op->u.acc;
            double v;
            if (locate(a, I, &off, f)) {
                v = a->data[off];
            } else if (a->guarded) {
                v = a->pad;
            } else {
                f->pc = (int)(op - code);
                return false;
            }
            if (op->code == C_LOAD_F32)
                v = (double)(float)v;
            else if (op->code == C_LOAD_ROUND)
                v = dtype_round(v, a->round);
            R[op->d] = v;
            break;
        }
        case C_ST_SET:
        case C_ST_ADD:
        case C_ST_MUL:
        case C_ST_MAX:
        case C_ST_MIN: {
            const Access *a = op->u.acc;
            if (!locate(a, I, &off, f)) {
                if (a->guarded)
                    break; /* a padded iteration's store: dropped */
                f->pc = (int)(op - code);
                return false;
            }
            double *p = &a->data[off], v = R[op->a];
            switch ((Code)op->code) {
            case C_ST_SET: *p = v; break;
            case C_ST_ADD: *p += v; break;
            case C_ST_MUL: *p *= v; break;
            case C_ST_MAX: *p = max_nan(*p, v); break;
            default: *p = min_nan(*p, v); break;
            }
            break;
        }
        }
    }
}

static void put_where(const OpInfo *in, const int64_t *I, StrBuf *b)
{
    if (!in->scope || !in->scope->n)
        return;
    sb_puts(b, " (at ");
    for (int i = 0; i < in->scope->n; i++)
        sb_printf(b, "%s%s=%lld", i ? ", " : "", in->scope->vars[i]->name, (long long)I[in->scope->vars[i]->id]);
    sb_putc(b, ')');
}

static void report_fault(const Kernel *k, const Op *op, const OpInfo *in, const int64_t *I, const Fault *f,
                         Diags *d)
{
    StrBuf b = {0};
    if (op->code == C_IDIV || op->code == C_IMOD || op->code == C_QDIV || op->code == C_QMOD) {
        sb_puts(&b, "integer division by zero in '");
        ir_print_expr(k, in->e, &b);
        sb_putc(&b, '\'');
    } else {
        const Access *a = op->u.acc;
        bool load = op->code == C_LOAD || op->code == C_LOAD_F32 || op->code == C_LOAD_ROUND;
        sb_printf(&b, "out-of-range %s of %s[", load ? "read" : "write", a->buf->name);
        for (int i = 0; i < a->rank - a->nx; i++) {
            if (i)
                sb_puts(&b, ", ");
            ir_print_expr(k, a->idx[i], &b);
        }
        if (f->dim < a->nx)
            sb_printf(&b, "]: thread copy %lld of %lld", (long long)f->index, (long long)a->dims[f->dim].size);
        else
            sb_printf(&b, "]: index %lld in dimension %d, whose size is %lld", (long long)f->index, f->dim - a->nx,
                      (long long)a->dims[f->dim].size);
    }
    put_where(in, I, &b);
    diag_error(d, in->span, "interpreter: %s", b.s);
    sb_free(&b);
}

/* Elements of storage: one thread's shape times the per-thread copies. */
static int64_t storage_elems(const Kernel *k, const Buffer *b)
{
    int64_t n = ir_buffer_elems(k, b);
    for (int t = 0; t < 3 && n > 0; t++)
        if (b->thread_copies[t])
            n = (uint64_t)b->thread_copies[t] > MAX_ELEMS / (uint64_t)n ? -1 : n * b->thread_copies[t];
    return n;
}

static bool interp(const Kernel *k, double **bufs, Diags *d, bool checked)
{
    if (!ir_all_bound(k, d))
        return false;
    if (!bufs && k->nbufs) {
        diag_error(d, k->span, "interpreter: kernel %s called without buffers", k->name);
        return false;
    }
    bool ok = true;
    double **data = xcalloc((size_t)(k->nbufs ? k->nbufs : 1), sizeof *data);
    bool *owned = xcalloc((size_t)(k->nbufs ? k->nbufs : 1), sizeof *owned);
    for (int i = 0; i < k->nbufs && ok; i++) {
        const Buffer *b = k->bufs[i];
        int64_t n = storage_elems(k, b);
        if (n < 0) {
            diag_error(d, b->span, "interpreter: the size of %s cannot be computed (negative, too large, or a "
                       "division by zero)", b->name);
            ok = false;
        } else if (bufs[i]) {
            data[i] = bufs[i];
        } else if (b->kind == BUF_TEMP) {
            if ((uint64_t)n > MAX_ELEMS) {
                diag_error(d, b->span, "interpreter: temporary %s has %lld elements: too large", b->name, (long long)n);
                ok = false;
                break;
            }
            data[i] = xmalloc(sizeof(double) * (size_t)(n ? n : 1));
            for (int64_t j = 0; j < n; j++)
                data[i][j] = NAN; /* poison: reading before writing shows */
            owned[i] = true;
        } else {
            diag_error(d, b->span, "interpreter: no data given for %s %s", b->kind == BUF_IN ? "input" : "output",
                       b->name);
            ok = false;
        }
    }
    Comp c = {.k = k, .bufs = data, .d = d, .ok = ok, .where = k->span, .checked = checked};
    c.arena = arena_new();
    c.in_scope = xcalloc((size_t)k->nvars + 1, sizeof(bool));
    c.stack = xcalloc((size_t)k->nvars + 1, sizeof(Var *));
    c.known = xcalloc((size_t)k->nvars + 1, sizeof(bool));
    c.vlo = xcalloc((size_t)k->nvars + 1, sizeof(int64_t));
    c.vhi = xcalloc((size_t)k->nvars + 1, sizeof(int64_t));
    for (int i = 0; i < k->nvars; i++)
        new_ireg(&c, 0);
    c.zero_reg = new_ireg(&c, 0);
    new_freg(&c, 0);
    if (c.ok) {
        comp_nodes(&c, &k->body);
        emit(&c, C_HALT, 0, 0, 0, NULL);
    }
    if (c.ok) {
        int64_t *I = xmalloc(sizeof(int64_t) * (size_t)(c.ni ? c.ni : 1));
        double *R = xmalloc(sizeof(double) * (size_t)c.nf);
        memcpy(I, c.ival, sizeof(int64_t) * (size_t)c.ni);
        memcpy(R, c.fval, sizeof(double) * (size_t)c.nf);
        Fault f = {0};
        if (!run(c.code, R, I, &f)) {
            report_fault(k, &c.code[f.pc], &c.info[f.pc], I, &f, d);
            c.ok = false;
        }
        free(I);
        free(R);
    }
    for (int i = 0; i < k->nbufs; i++)
        if (owned[i])
            free(data[i]);
    free(data);
    free(owned);
    free(c.code);
    free(c.ival);
    free(c.fval);
    free(c.in_scope);
    free(c.stack);
    free(c.known);
    free(c.vlo);
    free(c.vhi);
    free(c.info);
    free(c.facts);
    arena_free(c.arena);
    return c.ok;
}

bool ir_interp(const Kernel *k, double **bufs, Diags *d) { return interp(k, bufs, d, false); }

bool ir_interp_checked(const Kernel *k, double **bufs, Diags *d) { return interp(k, bufs, d, true); }

/* ---- buffers for a run ---- */

double **ir_alloc_buffers(const Kernel *k, uint64_t seed)
{
    double **bufs = xcalloc((size_t)(k->nbufs ? k->nbufs : 1), sizeof *bufs);
    for (int i = 0; i < k->nbufs; i++) {
        const Buffer *b = k->bufs[i];
        int64_t n = storage_elems(k, b);
        if (n < 0 || (uint64_t)n > MAX_ELEMS) {
            ir_free_buffers(k, bufs);
            return NULL;
        }
        double *p = xmalloc(sizeof(double) * (size_t)(n ? n : 1));
        bufs[i] = p;
        if (b->kind != BUF_IN) {
            for (int64_t j = 0; j < n; j++)
                p[j] = NAN;
            continue;
        }
        /* one stream per buffer: adding a buffer does not change the others' data */
        Rng r;
        rng_seed(&r, seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(i + 1)));
        char err[256];
        if (ir_has_domain(b)) {
            if (!ir_domain_fill(k, b, n, &r, p, err, sizeof err)) {
                ir_free_buffers(k, bufs);
                return NULL;
            }
            continue;
        }
        bool nonzero = false;
        for (int64_t j = 0; j < n; j++) {
            double v;
            if (b->dtype == DT_BOOL)
                v = (double)(rng_next(&r) & 1);
            else if (!dtype_is_float(b->dtype))
                v = (double)(int64_t)(rng_next(&r) % 17) - 8; /* small: products stay exact */
            else
                v = dtype_round(rng_uniform(&r, -1, 1), b->dtype);
            p[j] = v;
            nonzero |= v != 0;
        }
        if (n && !nonzero)
            p[0] = dtype_is_float(b->dtype) ? 0.5 : 1;
    }
    return bufs;
}

void ir_free_buffers(const Kernel *k, double **bufs)
{
    if (!bufs)
        return;
    for (int i = 0; i < k->nbufs; i++)
        free(bufs[i]);
    free(bufs);
}
