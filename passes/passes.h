/* passes/: from the checked AST to the loop-nest IR, and the analyses and
 * transformations over that IR.  This header is the public entry: lowering and the
 * pass pipeline (what the CLI, the API, the tuner and the runtime call); the
 * transformations themselves are declared in passes/xform.h. */
#ifndef PERFC_PASSES_PASSES_H
#define PERFC_PASSES_PASSES_H

#include <stdbool.h>
#include <stdint.h>

#include "../ir/ir.h"
#include "../lang/ast.h"

/* ---- passes/lower.c ---- */
/* Lowers one checked kernel (sema_kernel succeeded) to the loop-nest IR.
 *
 * values[i] and bound[i] give AST parameter i its -D value; a parameter without
 * one takes its default (`kernel f(N = 64)`) or stays symbolic.  Either array may
 * be NULL (nothing bound).  Each statement becomes one loop nest, in the order
 * sema put them: the left-hand side's indices outermost, then for a reduction
 * `T[idx] = identity` and the reduction loops with `T[idx] op= value`.  A `where`
 * mask guards the reduction's terms (innermost point where its indices are in
 * scope, below the initialisation) or selects 0 for a plain assignment.
 *
 * When every parameter has a value, each read's index range is checked against
 * its dimension: a padded input gets a guarded load, any other tensor an error
 * at the access.  With symbolic sizes, padded reads are all guarded.
 *
 * Returns a verified kernel the caller frees with ir_free, or NULL with the
 * errors in d. */
Kernel *lower_kernel(const Program *p, const AstKernel *k, const int64_t *values, const bool *bound, Diags *d);

/* ---- passes/pipeline.c ---- */
/* The choice of one schedule parameter: index into its candidate list (0: the
 * default); passes/schedule.c resolves it. */
typedef struct ParamChoice {
    const char *name;
    int index;
} ParamChoice;

typedef struct PipelineOpts {
    const AstSchedule *const *schedules; /* applied in order: the file's, then -s */
    int nschedules;
    const ParamChoice *choices;          /* parameter choices for all of them */
    int nchoices;
    const char *dump_after;              /* a pass name, "all", or NULL */
    StrBuf *dump;                        /* receives `; after PASS` and the IR */
    const Target *target;                /* the target whose legalisation and lowering
                                          * passes run: a GPU the gpu_* passes, a CPU
                                          * the LLVM back end's passes; NULL none
                                          * (-emit ir on a CPU, the C back end).  The
                                          * schedule's transformations refuse what it
                                          * cannot run (Kernel.target). */
    const char *stop_after;              /* a pass name: the passes after it do not run
                                          * (--actions lists moves on the kernel that a
                                          * further -s statement would be applied to,
                                          * which is the kernel before `simplify`) */
} PipelineOpts;
/* Runs the post-lowering passes in their fixed order, verifying the IR after each.
 * Returns false with diagnostics on a refused schedule or a verifier failure. */
bool pipeline_run(Kernel *k, const PipelineOpts *o, Diags *d);
/* Runs only the CPU target passes (legalize .. verify) on k, which has been
 * through `simplify`: what the LLVM back end does for a kernel whose pipeline named
 * no target.  Sets k->cpu_lowered. */
bool pipeline_lower_cpu(Kernel *k, const Target *target, Diags *d);
/* The target passes alone (legalisation and lowering for target, CPU or GPU), on a
 * kernel that went through the pipeline without them; nothing when k was already
 * lowered or target is NULL or interp.  For callers that hand codegen a kernel of
 * their own (hand-built IR, the golden reference): the back ends refuse a kernel
 * that has not been lowered. */
bool pipeline_target(Kernel *k, const Target *target, Diags *d);
/* The pass names, for -dump-after validation: NULL past the last. */
const char *pipeline_pass_name(int i);

#endif
