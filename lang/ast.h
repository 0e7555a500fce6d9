/* The PDL abstract syntax tree, and the facts semantic analysis adds to it.
 *
 * The parser (parser/) builds these nodes in the Program's arena; sema (lang/sema.c)
 * resolves names, infers dtypes, index ranges and temporary shapes, and fills the
 * fields marked "sema".  Lowering (passes/lower.c) reads only checked kernels.
 * docs/language.md is the user's reference for what each node means. */
#ifndef PERFC_LANG_AST_H
#define PERFC_LANG_AST_H

#include <stdbool.h>
#include <stdint.h>

#include "diag.h"
#include "dtype.h"
#include "util.h"

/* Expression node kinds. */
#define PF_AST_EXPRS(X) \
    X(INT)     /* 42 */                          \
    X(FLOAT)   /* 1.5, 1e-5, inf */               \
    X(NAME)    /* i, M: an index or a size parameter */ \
    X(ACCESS)  /* A[i, k + 1] */                 \
    X(CALL)    /* exp(x), max(a, b), f32(x), select(c, a, b) */ \
    X(UNARY)   /* -x, !c */                      \
    X(BINARY)  /* a + b, a < b, a && b */        \
    X(REDUCE)  /* sum(k) body, max(j in 0..N) body */

typedef enum AstExprKind {
#define X(k) AST_##k,
    PF_AST_EXPRS(X)
#undef X
} AstExprKind;

/* Operators of UNARY and BINARY nodes; spelling as printed. */
#define PF_AST_OPS(X)                                                    \
    X(ADD, "+") X(SUB, "-") X(MUL, "*") X(DIV, "/") X(MOD, "%")          \
    X(LT, "<") X(LE, "<=") X(GT, ">") X(GE, ">=") X(EQ, "==") X(NE, "!=") \
    X(AND, "&&") X(OR, "||") X(NEG, "-") X(NOT, "!")

typedef enum AstOp {
#define X(k, s) OP_##k,
    PF_AST_OPS(X)
#undef X
} AstOp;
const char *ast_op_name(AstOp op);

/* Built-in functions callable in expressions.  arity -1: takes a dtype name (casts). */
#define PF_BUILTINS(X)                                           \
    X(EXP, "exp", 1) X(LOG, "log", 1) X(SQRT, "sqrt", 1)          \
    X(RSQRT, "rsqrt", 1) X(TANH, "tanh", 1) X(ERF, "erf", 1)      \
    X(ABS, "abs", 1) X(MAX, "max", 2) X(MIN, "min", 2)            \
    X(SELECT, "select", 3) X(POW, "pow", 2) X(SIGMOID, "sigmoid", 1) \
    X(LOG1P, "log1p", 1) X(EXPM1, "expm1", 1) X(FLOOR, "floor", 1)  \
    X(CEIL, "ceil", 1) X(ROUND, "round", 1) X(SIGN, "sign", 1)      \
    X(CLAMP, "clamp", 3)

typedef enum Builtin {
#define X(k, s, n) BI_##k,
    PF_BUILTINS(X)
#undef X
    BI_CAST,  /* f32(x), f16(x), ...: the target dtype is in call.cast_to */
    BI_COUNT
} Builtin;
const char *builtin_name(Builtin b);
int builtin_arity(Builtin b);
Builtin builtin_from_name(const char *s); /* BI_COUNT if unknown */

/* Reductions. */
#define PF_REDUCES(X) X(SUM, "sum") X(MAX, "max") X(MIN, "min") X(PROD, "prod")
typedef enum ReduceOp {
#define X(k, s) RED_##k,
    PF_REDUCES(X)
#undef X
    RED_COUNT
} ReduceOp;
const char *reduce_name(ReduceOp r);

typedef struct AstExpr AstExpr;
typedef struct AstTensor AstTensor;
typedef struct AstIndex AstIndex;

/* What a NAME refers to (sema). */
typedef enum NameRef { REF_UNRESOLVED, REF_INDEX, REF_PARAM } NameRef;

/* An index bound by a reduction: `k` or `k in lo..hi`. */
typedef struct AstRedVar {
    const char *name;
    Span span;
    AstExpr *lo, *hi;      /* explicit range, or NULL (inferred) */
    AstIndex *index;       /* sema */
} AstRedVar;

struct AstExpr {
    AstExprKind kind;
    Span span;
    DType dtype;           /* sema: the value's type before any conversion */
    int depth;             /* parser: height of this subtree (bounded, see build.c) */
    union {
        int64_t ival;                                   /* INT */
        double fval;                                    /* FLOAT */
        struct {
            const char *name;
            NameRef ref;                                /* sema */
            AstIndex *index;                            /* sema, REF_INDEX */
            int param;                                  /* sema, REF_PARAM: position */
        } name;
        struct {
            const char *name;
            AstExpr **idx;
            int nidx;
            AstTensor *tensor;                          /* sema */
        } access;
        struct {
            const char *fn;
            AstExpr **args;
            int nargs;
            Builtin builtin;                            /* sema */
            DType cast_to;                              /* sema, BI_CAST */
        } call;
        struct {
            AstOp op;
            AstExpr *a;
        } unary;
        struct {
            AstOp op;
            AstExpr *a, *b;
        } binary;
        struct {
            ReduceOp op;
            AstRedVar *vars;
            int nvars;
            AstExpr *body;
        } reduce;
    };
};

typedef enum TensorKind { TENSOR_IN, TENSOR_OUT, TENSOR_LOCAL, TENSOR_TEMP } TensorKind;
/* TENSOR_LOCAL: declared with `local`; TENSOR_TEMP: introduced by assignment, shape
 * and dtype inferred. */

struct AstTensor {
    TensorKind kind;
    const char *name;
    Span span;
    DType dtype;             /* declared, or sema for TEMP */
    bool dtype_known;
    /* `in A: T[M, K]` with `T` a dtype parameter of the kernel: its index in
     * AstKernel.dtparams (the parser resolves it, and binding a value rewrites
     * dtype), else -1.  dtype_name/dtype_span: what was written. */
    int dtype_param;
    const char *dtype_name;
    Span dtype_span;
    AstExpr **shape;         /* size expressions over parameters and constants */
    int rank;
    bool has_pad;            /* `pad(v)`: reads out of range yield pad_value */
    double pad_value;
    Span pad_span;
    /* range(lo, hi) / distinct(lo, hi) on an input: the harness draws its values
     * from [lo, hi) (floats: number literals; integers: size expressions), all
     * different for distinct.  dom_lo is NULL without one. */
    AstExpr *dom_lo, *dom_hi;
    bool dom_distinct;
    Span dom_span;
    /* sema */
    int id;                  /* position among the kernel's tensors */
    struct AstStmt *def;     /* the statement that assigns it (OUT, LOCAL, TEMP) */
    bool used;               /* read somewhere */
};

/* An index of one statement: the left-hand side's indices first, then each
 * reduction's variables.  Indices are scoped to their statement. */
struct AstIndex {
    const char *name;
    Span span;               /* first occurrence */
    bool is_reduction;
    AstExpr *extent;         /* sema: a size expression; the index runs 0..extent */
    AstExpr *lo;             /* sema: NULL (0) unless given `k in lo..hi` */
    int id;                  /* position in the statement's index list */
};

typedef struct AstStmt {
    Span span;
    AstTensor *lhs;          /* sema */
    const char *lhs_name;
    Span lhs_span;
    AstExpr **lhs_idx;       /* NAME nodes */
    int nlhs;
    AstExpr *rhs;
    AstExpr *where;          /* mask, or NULL */
    /* sema: a scan (docs/language.md "Scans"), `Y[i] = Y[i - 1] + X[i]`: the
     * right-hand side combines the previous element of the tensor it defines along
     * left-hand dimension scan_dim (scan_dir +1: i - 1, forward; -1: i + 1,
     * backward) with scan_step by scan_op (RED_SUM for +, RED_PROD for *, RED_MAX,
     * RED_MIN); the element before the first is the operator's identity. */
    /* a scatter, `Y[T[i], d] += X[i, d]`: sema rewrites it as Y[s0, d] = sum(i)
     * X[i, d] where T[i] == s0 (checked like any masked sum) and keeps the
     * scattered subscripts here (NULL for a plain one) and the user's own mask;
     * lowering adds each term at its place instead of testing every s0. */
    bool scatter;
    AstExpr **scatter_idx;
    AstExpr *scatter_where;
    bool scan;
    int scan_dim, scan_dir;
    ReduceOp scan_op;
    AstExpr *scan_step;
    AstIndex **indices;
    int nindices;
    int order;               /* position after dependence ordering */
} AstStmt;

typedef struct AstParam {
    const char *name;
    Span span;
    bool has_default;
    int64_t def;             /* `kernel f(N = 128)` */
    /* a dtype parameter, `kernel f(M, T = f32)`: its value (the default, or what
     * -D T=bf16 bound) and where the default is written */
    bool is_dtype;
    DType dtype;
    Span def_span;
} AstParam;

typedef struct AstKernel {
    const char *name;
    Span span;
    AstParam *params;        /* size parameters */
    int nparams;
    AstParam *dtparams;      /* dtype parameters (docs/language.md "Dtype parameters") */
    int ndtparams;
    AstTensor **tensors;     /* declared ones in order, then temporaries (sema) */
    int ntensors;
    AstStmt **stmts;         /* in source order */
    int nstmts;
    bool checked;            /* sema succeeded */
} AstKernel;

/* ---- schedules ---- */

typedef enum SchedArgKind { SARG_NAME, SARG_INT, SARG_FLOAT, SARG_STRING, SARG_LIST } SchedArgKind;

typedef struct SchedArg {
    SchedArgKind kind;
    Span span;
    const char *key;         /* keyword argument `key = value`, or NULL */
    union {
        const char *name;    /* NAME (may be dotted: Y.r) and STRING */
        int64_t ival;
        double fval;
        struct {
            struct SchedArg *items;
            int n;
        } list;
    };
} SchedArg;

typedef enum SchedItemKind { SCHED_PARAM, SCHED_CALL } SchedItemKind;

/* `param T in [16, 32, 64]`, `param T = 32`, or `split(i, T, io, ii)`. */
typedef struct SchedItem {
    SchedItemKind kind;
    Span span;
    const char *name;        /* parameter or transformation name */
    SchedArg *args;          /* CALL: arguments; PARAM: candidates */
    int nargs;
} SchedItem;

typedef struct AstSchedule {
    Span span;
    const char *kernel;      /* `schedule gemm ...` (`schedule gemm, gemm_nt` makes one block per kernel) */
    const char *target;      /* `... for cpu`, `for sm_80`, or NULL: any target */
    const char *variant;     /* `... as tc`: applied only when --schedule tc asks; NULL: by default */
    Span variant_span;
    /* `... when T in [f16, bf16]`: applied only when the kernel's dtype parameter
     * when_param is one of when_dtypes; when_param NULL: always */
    const char *when_param;
    Span when_span;
    DType *when_dtypes;
    int nwhen;
    SchedItem *items;
    int nitems;
} AstSchedule;

typedef struct Program {
    Arena *arena;
    Source *src;
    AstKernel **kernels;
    int nkernels;
    AstSchedule **schedules;
    int nschedules;
} Program;

/* ---- parser/parse.c ---- */
/* Parses a whole file.  Always returns a Program (possibly partial); errors are in d. */
Program *parse_program(Arena *a, Source *src, Diags *d);
/* Parses schedule statements alone (the -s option) into one AstSchedule. */
AstSchedule *parse_schedule_text(Arena *a, Source *src, Diags *d);

/* ---- lang/sema.c ---- */
/* Checks one kernel; fills the sema fields.  Returns true when no error was found. */
bool sema_kernel(Program *p, AstKernel *k, Diags *d);
/* Checks every kernel of the program, and that schedules name existing kernels. */
bool sema_program(Program *p, Diags *d);
AstKernel *program_find_kernel(Program *p, const char *name);

/* ---- lang/dtparam.c: dtype parameters ---- */
/* The index of k's dtype parameter called name, or -1. */
int kernel_find_dtparam(const AstKernel *k, const char *name);
/* Binds dtype parameter i of k to dt: the parameter and every tensor declared
 * with it.  Done before sema, which types the kernel with the bound dtypes. */
void kernel_bind_dtparam(AstKernel *k, int i, DType dt);
/* Whether schedule block s's `when` guard holds for k's dtype parameters as bound
 * (true without a guard, or when k has no such parameter: sema reports that). */
bool schedule_guard_holds(const AstSchedule *s, const AstKernel *k);
/* Checks the header of p's schedule block i, which names kernel k: its guard tests
 * a dtype parameter of k; no earlier block has the same kernel, target and variant. */
void schedule_check_head(const Program *p, int i, const AstKernel *k, Diags *d);

/* ---- lang/size.c: size expressions (over parameters and integer constants) ---- */
/* Evaluates a checked size expression with the parameter values given; returns
 * false on an unbound parameter, a division by zero or a 64-bit overflow (checked
 * arithmetic, lang/checked.h; nothing is reported here). */
bool size_eval(const AstExpr *e, const int64_t *params, const bool *bound, int64_t *out);
/* The first subexpression of e that cannot be computed whatever the parameters
 * are (constants that overflow, a division by a constant zero), or NULL: sema
 * reports it where it is written. */
const AstExpr *size_overflows(const AstExpr *e);
/* Structural equality after folding constants (used to check index ranges agree). */
bool size_equal(const AstExpr *a, const AstExpr *b);

/* ---- lang/astprint.c ---- */
void ast_print_program(const Program *p, StrBuf *out);
void ast_print_kernel(const AstKernel *k, StrBuf *out);
void ast_print_schedule(const AstSchedule *s, StrBuf *out);
void ast_print_expr(const AstExpr *e, StrBuf *out);

#endif
