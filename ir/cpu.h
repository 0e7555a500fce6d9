/* The CPU access analysis, read alike by the CPU target passes (passes/cpu_*.c),
 * which decide how each loop is translated, and by the LLVM back end
 * (codegen/llvm), which translates it: constant extents, a buffer element's
 * offset as an affine form (ir/arith.h's ArAff, bound sizes folded in), how an
 * index moves per lane of a vector loop, padded reads, and register tiles. */
#ifndef PERFC_IR_CPU_H
#define PERFC_IR_CPU_H

#include <stdbool.h>
#include <stdint.h>

#include "arith.h"
#include "ir.h"

/* The widest vector loop the LLVM back end translates lane-parallel. */
#define CPU_MAX_VECTOR_WIDTH 256

/* A private buffer of at most this many elements is a register tile. */
#define CPU_TILE_ELEMS 256

/* Affine forms are ir/arith.h's ArAff (ar_aff_of, ar_aff_add, ar_aff_coef, ...). */
/* hi - lo when it does not depend on any variable. */
bool cpu_const_extent(const Kernel *k, const Expr *lo, const Expr *hi, int64_t *ext);
/* Size of dimension d of b with the bound parameters (-1 when unknown). */
int64_t cpu_dim(const Kernel *k, const Buffer *b, int d);
/* The row-major element offset of b[idx] as an affine form. */
bool cpu_offset_aff(const Kernel *k, const Buffer *b, Expr *const *idx, ArAff *tot);

/* How an integer expression moves per lane of vector variable v (*s; 0: uniform);
 * false when unknown. */
bool cpu_stride(const Kernel *k, const Expr *e, const Var *v, int64_t *s);
typedef enum { CPU_ACC_UNIFORM, CPU_ACC_CONTIG, CPU_ACC_OTHER } CpuAccKind;
/* Classifies buffer index idx[0..rank) against the vector variable: the same
 * element for every lane, consecutive elements along the last dimension, or
 * anything else (a gather). */
CpuAccKind cpu_access_kind(const Kernel *k, Expr *const *idx, int rank, const Var *v);
/* Whether a load may leave its buffer, yielding the pad value (a padded input's,
 * 0 for the guarded loads of a padded split) there. */
bool cpu_load_padded(const Expr *e);
/* e when it is a load of a bf16 buffer, possibly under the conversion to f32 that
 * lowering writes, unguarded and never yielding a pad value; else NULL.  The
 * operands dot-pairs and amx-tiles read. */
Expr *cpu_bf16_load(Expr *e);
/* Whether list l reads a padded input that may leave it. */
bool cpu_list_padded(const NodeList *l);
/* Whether list l (else bodies included) holds an unroll or vector loop. */
bool cpu_holds_scheduled(const NodeList *l);
/* A MEM_LOCAL temporary of at most CPU_TILE_ELEMS elements: registers. */
bool cpu_is_tile(const Kernel *k, const Buffer *b);

/* A copy that transposes in square blocks through registers (ir/cpu_tblocks.c):
 * `for a in 0..w { for b[0] { .. for b[m-1] { X = Y } } }`, all from 0, the row
 * side's offset base + sr a + j and the column side's base + a + sc j, j the inner
 * loops as one index (b[m-1] moving by one).  b[0]'s extent may be a variable one
 * (ext[0] = -1), the others' are constants whose product is `inner`.  With unit 2,
 * the elements are pairs of 16-bit values moved as one 32-bit unit: an innermost
 * loop q of two iterations, contiguous on both sides (the bf16 pairs of k that
 * dot-pairs lays out), is not among b[], and offsets and strides count units. */
#define CPU_TBLOCKS_DEPTH 6
#define CPU_TBLOCKS_MAX_W 16
typedef struct CpuTBlocks {
    const Node *st;                    /* the copy */
    const Node *b[CPU_TBLOCKS_DEPTH];  /* the inner loops, outermost first */
    int64_t ext[CPU_TBLOCKS_DEPTH];
    int m, w;
    int64_t inner;
    bool rows_read;                    /* the row side is the buffer read */
    int64_t sr, sc;
    const Expr *ld;                    /* the load the copy stores (under a widening cast) */
    int unit;                          /* elements a unit: 1, or 2 (pairs) */
    const Node *q;                     /* with pairs: the loop over a pair's two elements */
} CpuTBlocks;
/* any_w: the head loop may have any constant extent of at least 2 (the pass then
 * splits it); otherwise a power of two up to CPU_TBLOCKS_MAX_W, what the back end
 * translates. */
bool cpu_tblocks_shape(const Kernel *k, const Node *L, bool any_w, CpuTBlocks *t);

/* An AMX tile product (ir/cpu_amx.c): loop L over pairs of k around R rows
 * (unroll) by W columns (vector) of a dot-product update, its three operands laid
 * out as AMX tiles read them.  Element strides: Acc a row, A a row, P a pair of k. */
#define CPU_AMX_MAX_STEPS 64
typedef struct CpuAmx {
    const Node *s;                     /* Acc[..] += f32(A[..]) * f32(P[..]) */
    const Var *kp, *i, *j, *q;         /* the four loops' variables */
    int64_t rows, cols, steps;         /* R, W and E/16: steps of 16 pairs (32 k) */
    const Expr *a, *p;                 /* the row operand's load and the panel's */
    int64_t ldc, lda, ldp;
} CpuAmx;
bool cpu_amx_shape(const Kernel *k, const Node *L, CpuAmx *t);

#endif
