/* The CPU target lowering passes (passes/cpu_*.c) and what they share: the ranges
 * of loop variables, affine comparisons, the predicates other passes consult.  The
 * access analysis the LLVM back end reads too is ir/cpu.h's.
 *
 * The passes run after `simplify` for a CPU target (passes/pipeline.c) and state
 * how the back end translates each loop in the IR itself (loop kinds, LoopHint,
 * versioned and `holds` guards), so `-dump-after` shows every decision and the
 * interpreter executes what the back end executes.  Each pass keeps the kernel's
 * meaning; the paragraph atop its file says why. */
#ifndef PERFC_PASSES_CPU_H
#define PERFC_PASSES_CPU_H

#include <stdbool.h>
#include <stdint.h>

#include "../ir/arith.h"
#include "../ir/cpu.h"
#include "../ir/ir.h"
#include "../ir/walk.h"

#define CPU_MAX_UNROLL 4096
/* Statements at most in a loop that unroll-small unrolls (and in the update that
 * unroll2 doubles). */
#define CPU_UNROLL_STMTS 16


/* Known ranges of loop variables while a pass walks the tree, as the back end
 * knows them: a serial or unroll loop of constant bounds gives its variable
 * [lo, hi - 1]; any other loop leaves it unknown (vmin > vmax). */
typedef struct CpuRanges {
    int64_t *vmin, *vmax;    /* by Var id */
} CpuRanges;
void cpu_ranges_init(CpuRanges *r, const Kernel *k);
void cpu_ranges_free(CpuRanges *r);
/* Sets the range of loop n's variable; returns the previous one to restore. */
typedef struct CpuRangeSave {
    int64_t min, max;
} CpuRangeSave;
CpuRangeSave cpu_ranges_enter(CpuRanges *r, const Kernel *k, const Node *n);
void cpu_ranges_leave(CpuRanges *r, const Node *n, CpuRangeSave s);
/* The range [*lo, *hi] of a; false when a variable's range is unknown. */
bool cpu_aff_range(const CpuRanges *r, const ArAff *a, int64_t *lo, int64_t *hi);
/* For a padded read: 1 when every index is known inside its dimension, -1 when one
 * is known outside (the read is the pad value), 0 when it has to be tested. */
int cpu_pad_known(const Kernel *k, const CpuRanges *r, const Expr *load);

/* The comparisons of a conjunction of affine comparisons, each as d <= lim;
 * false when e is not one (or has more than cap). */
typedef struct CpuCmp {
    ArAff d;
    int64_t lim;
} CpuCmp;
bool cpu_conjuncts(const Kernel *k, const Expr *e, CpuCmp *out, int *n, int cap);
/* sum of k * var over the terms of a (without its constant), as an i64 IR
 * expression built in the order of the terms; NULL when a has no term. */
Expr *cpu_aff_terms(Kernel *k, const ArAff *a);

/* ---- the passes' predicates that other passes consult, so that each loop gets
 * the rewrite the back end used to give it first (see pipeline.c for the order) */
/* cpu_fill.c: loop n heads a serial nest that stores zero over one contiguous
 * range (total elements in *total when not NULL). */
bool cpu_fill_ok(const Kernel *k, const CpuRanges *r, const Node *n, int64_t *total);
/* cpu_partition.c: loop n copies one contiguous range into another over [lo, hi)
 * (reads known inside their buffer). */
bool cpu_copy_ok(const Kernel *k, const CpuRanges *r, const Node *n, int64_t lo, int64_t hi);
/* cpu_transpose.c: loop nest n is a copy across a register tile's layout change. */
bool cpu_transpose_ok(const Kernel *k, const Node *n);
/* cpu_transpose_blocks.c: loop nest n is a copy between buffers in memory that
 * transposes in w x w blocks (ir/cpu_tblocks.c's shape). */
bool cpu_transpose_blocks_ok(const Kernel *k, const Node *n);
/* Marks the nest at l->v[at] `transpose-blocks` when it is one, first splitting a
 * head loop wider than a block (l->v[at] is then the new outer loop). */
bool cpu_transpose_blocks_mark(Kernel *k, NodeList *l, int at);
/* cpu_vectorize.c: serial loop n over a register tile may run lane-parallel. */
bool cpu_vectorize_ok(const Kernel *k, const Node *n);
/* cpu_unroll.c: serial loop n is small enough to unroll. */
bool cpu_unroll_ok(const Kernel *k, const Node *n);

/* cpu_legalize.c: the body of vector loop v can be translated lane-parallel. */
bool cpu_vector_body_ok(const Kernel *k, const NodeList *l, const Var *v);

/* ---- the passes (each returns false only with an error in d) ---- */
bool cpu_scan_blocks(Kernel *k, Diags *d);   /* passes/cpu_scan.c */
bool cpu_legalize(Kernel *k, const Target *target, Diags *d);
bool cpu_partition(Kernel *k, Diags *d);
bool cpu_fill(Kernel *k, Diags *d);
bool cpu_narrow(Kernel *k, Diags *d);
/* sum-blocks (passes/cpu_sum_blocks.c): a float sum into one element over at least
 * CPU_SUM_BLOCK_MIN terms is accumulated in partials of CPU_SUM_BLOCK terms. */
#define CPU_SUM_BLOCK 1024
#define CPU_SUM_BLOCK_MIN 16384
bool cpu_sum_blocks(Kernel *k, Diags *d);
/* fold-init (passes/cpu_fold_init.c): a product's initialisation pass over C
 * becomes the first reduction panel's staged tiles starting at the value. */
bool cpu_fold_init(Kernel *k, Diags *d);
bool cpu_version(Kernel *k, Diags *d);
/* edge (passes/cpu_edge.c): the loop around a vector loop of several registers
 * whose lanes are bounded by a guard gets copies narrowed to 1, 2, .. registers. */
bool cpu_edge(Kernel *k, const Target *target, Diags *d);
/* dot-pairs (passes/cpu_dot.c): on a target with Target.dot_bf16, bf16 tile
 * updates into f32 take consecutive k in pairs, their panel stored [k/2][j][2]. */
bool cpu_dot_pairs(Kernel *k, const Target *target, Diags *d);
/* amx-tiles (passes/cpu_amx.c): on a target with Target.amx_bf16, those paired
 * updates of 16 or 32 rows and columns are marked to run as AMX tile products. */
bool cpu_amx_tiles(Kernel *k, const Target *target, Diags *d);
bool cpu_unroll2(Kernel *k, Diags *d);
bool cpu_transpose(Kernel *k, Diags *d);
bool cpu_vectorize(Kernel *k, Diags *d);
bool cpu_unroll(Kernel *k, Diags *d);

#endif
