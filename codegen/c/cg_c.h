/* A portable C back end for the general variant of a library kernel (perfc lib).
 *
 * The LLVM back end compiles sizes in as constants, so its code serves one shape.
 * A library must also serve the sizes a program meets at run time; this back end
 * writes a kernel as C11 with every size parameter a run-time value, and the library
 * build compiles it with the system C compiler.  It is meant for the canonical
 * (unscheduled) loop nest: every loop kind is emitted as a plain serial loop, and the
 * index check described below relies on loop bounds that are sizes, not on guards.
 *
 * Emitted function, for a kernel `k` and a chosen C name F:
 *
 *     static int F(void *const *bufs, const int64_t *p);
 *
 * bufs[i] is Kernel.bufs[i] (inputs, outputs, temporaries: the caller allocates
 * every temporary, whatever its memory space), row-major in its storage format (as
 * codegen/llvm: f16/bf16 as 16-bit patterns, bool as one byte); p[i] is the value of
 * Kernel.params[i].  No alignment is assumed.  Before any element is touched, the
 * function computes from p the range of every index of every access to an unpadded
 * buffer (interval arithmetic over the loop ranges) and returns CG_C_ERANGE when one
 * could leave its buffer, so a size that does not fit the kernel is an error and
 * never a wild access; reads of padded inputs are guarded as in the IR.  It returns
 * 0 on success.
 *
 * The helpers the body calls (f16/bf16 conversions, floor division, NaN-propagating
 * max/min, interval arithmetic) are in cg_c_prelude(); emit it once per C file. */
#ifndef PERFC_CODEGEN_C_CG_C_H
#define PERFC_CODEGEN_C_CG_C_H

#include <stdbool.h>

#include "../../ir/ir.h"

enum { CG_C_OK = 0, CG_C_ERANGE = 3 };

/* The static helper functions every emitted kernel uses. */
const char *cg_c_prelude(void);

/* Appends the function F (see above) to out.  False with a diagnostic when the
 * kernel holds something this back end cannot express. */
bool cg_c_emit_general(const Kernel *k, const char *fname, StrBuf *out, Diags *d);

/* A size expression (INT, PARAM and integer arithmetic) as C code over `p[i]`,
 * computed with the prelude's overflow-checked helpers: each helper sets *ovf
 * (a variable named `ovf` in scope) on overflow or division by zero. */
bool cg_c_size_expr(const Kernel *k, const Expr *e, StrBuf *out);

/* A size expression in the spelling tools read: parameter names, + - *, `//` and
 * `%` for the IR's floor division and modulo (Python's operators agree), max(a, b)
 * and min(a, b), with the parentheses precedence needs. */
bool cg_c_size_text(const Kernel *k, const Expr *e, StrBuf *out);

/* C type of a buffer element in storage (uint16_t for f16/bf16, uint8_t for bool). */
const char *cg_c_storage_type(DType t);

#endif
