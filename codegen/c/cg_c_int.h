/* Internal interface of codegen/c, shared by emit.c (the C flavour of a general
 * variant and the host-side index check) and emit_cuda.c (its CUDA flavour).
 * Nothing outside codegen/c includes it. */
#ifndef PERFC_CODEGEN_C_CG_C_INT_H
#define PERFC_CODEGEN_C_CG_C_INT_H

#include "cg_c.h"

typedef struct CgC {
    const Kernel *k;
    Diags *d;
    bool ok;
    StrBuf *out;
    bool cuda;              /* helpers are __device__ functions */
} CgC;

/* The guarded-read helpers pf_glN of the buffers read with guards (named after
 * fname), and their #undef after the function. */
void cgc_guard_helpers(CgC *g, const char *fname);
void cgc_guard_undefs(CgC *g);
/* `const int64_t bI_dJ = ...;` for every dimension of every buffer, from pf_pN and
 * the overflow flag `ovf`; false (with a diagnostic) on a shape it cannot write. */
bool cgc_dims(CgC *g, int ind);
/* The index-range check of the accesses under l (returns CG_C_ERANGE) and the loop
 * nest itself, indented by ind. */
void cgc_check_list(CgC *g, const NodeList *l, int ind);
void cgc_body_list(CgC *g, const NodeList *l, int ind);
/* A size expression with parameters printed by pfmt (one %d). */
bool cgc_size_expr(const Kernel *k, const Expr *e, const char *pfmt, StrBuf *o);
/* C type a value of dtype t is computed in. */
const char *cgc_ctype(DType t);
/* The helpers of values (f16/bf16 conversions, floor division, max/min, guarded
 * offsets) as PF_INL functions using pf_u2f/pf_f2u, which the flavour defines. */
const char *cg_c_values_prelude(void);

#endif
