/* Shared helpers of the LLVM back-end tests: buffers in storage format beside the
 * interpreter's f64 copies of the same seeded inputs, the comparison of generated
 * results with ir_interp, loading .pdl kernels through the real front end, and a
 * small builder vocabulary for hand-made IR kernels. */
#ifndef PERFC_TESTS_CODEGEN_CG_TEST_H
#define PERFC_TESTS_CODEGEN_CG_TEST_H

#include <stdbool.h>
#include <stdint.h>

#include "codegen/llvm/cg_llvm.h"
#include "ir/ir.h"

extern int cgt_failures;
void cgt_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define CHECK(cond, ...)                                  \
    do {                                                  \
        if (!(cond))                                      \
            cgt_fail(__FILE__, __LINE__, __VA_ARGS__);    \
    } while (0)

/* One run's data: ref[i] for the interpreter, typed[i] for generated code (inputs
 * identical after rounding; outputs and temporaries poisoned with NaN; MEM_LOCAL
 * temporaries NULL, since generated code must not read them). */
typedef struct CgtData {
    const Kernel *k;
    double **ref;
    void **typed;
    int64_t *elems;
} CgtData;

void *cgt_alloc(int64_t bytes); /* CG_BUF_ALIGN-aligned, free() */
void cgt_put(void *p, int64_t i, DType t, double v);
double cgt_get(const void *p, int64_t i, DType t);
bool cgt_data_new(CgtData *x, const Kernel *k, uint64_t seed);
void cgt_data_free(CgtData *x);
/* Tolerance on the relative Frobenius error for the kernel's least precise buffer. */
double cgt_tolerance(const Kernel *k);
/* Runs the interpreter on x->ref and compares every output with x->typed.  Prints
 * what is wrong (prefixed with `what`) and returns false on a mismatch. */
bool cgt_compare(CgtData *x, const char *what);
/* Compares the outputs of x with values read back from elsewhere (cross targets):
 * got[i] holds buffer i's elements as doubles (NULL for non-outputs). */
bool cgt_compare_values(CgtData *x, double **got, const char *what);
/* JIT-compiles k for target, runs it on seeded data, compares with the interpreter.
 * Diagnostics (warnings included) go to stderr.  *ms receives the compile time. */
bool cgt_jit_check(const Kernel *k, const char *target, uint64_t seed, const char *what, double *ms);

/* Lowers kernel `name` (NULL: the first) of a .pdl file with sizes bound by name;
 * sizes not named get `deflt` (when deflt < 0, their default in the file).  Applies the file's schedules for `sched_target` when
 * that is not NULL.  NULL with diagnostics on failure. */
Kernel *cgt_lower_file(const char *path, const char *name, const char *const *pnames, const int64_t *pvals, int n,
                       int64_t deflt, const char *sched_target, Diags *d);
/* The same, the pipeline stopped after pass stop_after (NULL: all of it). */
Kernel *cgt_lower_file_stop(const char *path, const char *name, const char *const *pnames, const int64_t *pvals,
                            int n, int64_t deflt, const char *sched_target, const char *stop_after, Diags *d);
/* Frees what cgt_lower_file keeps alive for the kernels' spans (after ir_free). */
void cgt_cleanup(void);

/* Builder shorthand for hand-made kernels. */
Expr *cgt_v(Kernel *k, Var *v);
Expr *cgt_i(Kernel *k, int64_t c);
Expr *cgt_add(Kernel *k, Expr *a, Expr *b);
Expr *cgt_mul(Kernel *k, Expr *a, Expr *b);
Expr *cgt_ld(Kernel *k, Buffer *b, Expr *i0, Expr *i1);  /* i1 NULL for rank 1 */
Node *cgt_st(Kernel *k, Buffer *b, Expr *i0, Expr *i1, StmtOp op, Expr *value);
Buffer *cgt_buf(Kernel *k, const char *name, DType t, BufKind kind, int64_t d0, int64_t d1); /* d1 < 0: rank 1 */
/* A loop over v in lo..hi of the given kind, pushed into `into` (NULL: the kernel). */
Node *cgt_loop(Kernel *k, Node *into, Var *v, Expr *lo, Expr *hi, LoopKind kind);
void cgt_push(Kernel *k, Node *into, Node *n);

/* ---- cg_kernels.c: the hand-built kernels ---- */
typedef struct CgtKernel {
    const char *name;
    Kernel *(*build)(void);
} CgtKernel;
extern const CgtKernel cgt_kernels[];
extern const int cgt_nkernels;
/* C[i, j] = sum(k) A[i, k] * B[k, j], A and B of dtype t, C f32; serial loops. */
Kernel *cgt_gemm(const char *name, DType t, int64_t M, int64_t N, int64_t K);
/* The same with C of dtype t and j split by W, the inner part a vector loop with a
 * tail guard; the i loop parallel if par. */
Kernel *cgt_vec_gemm(const char *name, DType t, int64_t M, int64_t N, int64_t K, int W, bool par);
/* A vector loop with a stride-2 store: must fall back to a scalar loop. */
Kernel *cgt_vec_fallback(void);

#endif
