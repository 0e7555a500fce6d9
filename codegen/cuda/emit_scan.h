/* The CUDA C text of a block-wide scan (codegen/cuda/emit_scan.c), from pieces
 * codegen/cuda/emit.c has already printed: the thread.x loop that pass gpu-scan
 * (passes/gpu_scan.c) left holding a `block-scan` statement. */
#ifndef PERFC_CG_CUDA_EMIT_SCAN_H
#define PERFC_CG_CUDA_EMIT_SCAN_H

#include <stdint.h>

#include "../../ir/ir.h"

typedef struct CgScanText {
    const char *tvar;       /* the thread loop's variable (its start is 0) */
    const char *jvar;       /* the chunk loop's variable, 0..k */
    int64_t k;              /* elements per thread */
    const char *guard;      /* the element exists; NULL: always */
    const char *value;      /* the step v, in the compute type */
    DType ct;               /* the running value's type: f32, f64 or i32 */
    StmtOp op;              /* += *= max= min= */
    const char *acc;        /* the running value (a local of every thread): the carry in */
    const char *store;      /* Y's element, an lvalue */
    const char *conv;       /* pf_f2h / pf_f2b for a 16-bit Y, else NULL */
} CgScanText;

/* The device helpers the text calls (pf_sop, pf_block_scan): once per module. */
void cg_cuda_scan_helpers(StrBuf *o);
/* The thread loop as a block scan, each line indented by ind levels. */
void cg_cuda_scan_text(const CgScanText *s, StrBuf *o, int ind);

#endif
