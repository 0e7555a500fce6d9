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

/* Appends the static helper functions every emitted kernel uses (once per C file). */
void cg_c_prelude(StrBuf *out);

/* Appends the function F (see above) to out.  False with a diagnostic when the
 * kernel holds something this back end cannot express. */
bool cg_c_emit_general(const Kernel *k, const char *fname, StrBuf *out, Diags *d);

/* Appends `static int F(const int64_t *p)`: the index-range check of F above alone,
 * for code that runs the nest elsewhere (the CUDA flavour below); 0 or CG_C_ERANGE. */
bool cg_c_emit_range_check(const Kernel *k, const char *fname, StrBuf *out, Diags *d);

/* ---- emit_cuda.c: the general variant as CUDA C (perfc lib, GPU targets) ----
 *
 * The same nest with run-time sizes, as one __global__ function per top-level node
 * of k->body, named PREFIX_pI, for NVRTC.  Each is launched after the one before on
 * one stream, so a node sees everything the nodes before it wrote.  nchain[i] of the
 * outermost loops of node i, a perfect chain whose bounds are size expressions and
 * whose iterations may run in any order (the caller proves it), are spread over
 * threads, one thread per iteration of them all; the rest of the node runs in that
 * thread as written.  nchain[i] = 0: the node runs in one thread.  Parameters of
 * every function, in order: one pointer per buffer (Kernel.bufs order, inputs
 * const), one int64 per size parameter, then per chain loop its first value and its
 * number of iterations (int64 each), then their product (int64).  Threads walk the
 * product in a grid-stride loop, so any grid is correct; the index check is the
 * host's (cg_c_emit_range_check), so the device code has none. */
enum { CG_C_GPU_MAX_CHAIN = 8, CG_C_GPU_BLOCK = 256 /* threads per block of every launch */ };
bool cg_c_emit_cuda_general(const Kernel *k, const char *prefix, const int *nchain, StrBuf *out, Diags *d);
/* The chain's loops of a top-level node: a loop, then its body's sole loop, ... */
const Node *cg_c_chain_loop(const Node *top, int depth);

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
