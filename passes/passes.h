/* passes/: from the checked AST to the loop-nest IR, and the analyses and
 * transformations over that IR.  This header holds lowering; transformations and
 * the pass pipeline are declared in passes/xform.h. */
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

#endif
