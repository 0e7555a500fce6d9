/* Shared by the GPU target passes (passes/gpu_*.c): constant evaluation with the
 * bound sizes, the launch's loops, and a small affine form over loop variables.
 * These passes decide how a launch maps onto CUDA's threads; codegen/cuda/emit.c
 * then only translates what they wrote into the IR. */
#ifndef PERFC_PASSES_GPU_INT_H
#define PERFC_PASSES_GPU_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "../ir/arith.h"
#include "../ir/ir.h"

bool gpu_is_block(LoopKind k);
bool gpu_is_thread(LoopKind k);
int gpu_dim(LoopKind k); /* 0 x, 1 y, 2 z for block.* / thread.*, else -1 */
/* True when a loop below n (or n) is bound to block.* or thread.*. */
bool gpu_scheduled(const Node *n);

/* Value of an expression of constants and bound parameters (floor / and %). */
bool gpu_cval(const Kernel *k, const Expr *x, int64_t *out);
/* Structural equality (the same tree over the same variables and buffers). */
bool gpu_same_expr(const Expr *a, const Expr *b);
bool gpu_loop_extent(const Kernel *k, const Node *l, int64_t *lo, int64_t *ext);
/* The loop of variable v in the subtree n, or NULL. */
const Node *gpu_loop_of_var(const Node *n, const Var *v);
/* Range of an index expression over the loops of top; false if unknown. */
bool gpu_irange(const Kernel *k, const Node *top, const Expr *x, int64_t *lo, int64_t *hi);
/* Largest extent of the thread loops below n, per dimension (entries start at 1). */
void gpu_thread_extents(const Kernel *k, const Node *n, int64_t blk[3]);

/* Is the map from a's variables (loops in top) to one index value injective?
 * (a: ar_aff_of of the index) */
bool gpu_aff_injective(const Kernel *k, const Node *top, const ArAff *a);

/* True when x is a multiple of m for every value of its variables. */
bool gpu_mult_of(const Kernel *k, const Expr *x, int64_t m);
/* The coefficient of lane in x when x is lane * c plus terms that do not mention
 * lane (those may be anything: `(f % 4) * 8` from a collapsed loop); false when
 * lane appears otherwise. */
bool gpu_lane_coef(const Kernel *k, const Expr *x, const Var *lane, int64_t *c);
/* Does x depend on v (its affine coefficient when x is affine)? */
bool gpu_has_var(const Kernel *k, const Expr *x, const Var *v, int64_t *coef);
/* x with v replaced by 0, simplified: a fresh tree in k's arena. */
Expr *gpu_at_zero(Kernel *k, const Expr *x, const Var *v);

/* The passes, run by passes/pipeline.c for sm_* targets in this order. */
bool gpu_reduce_pass(Kernel *k, Diags *d);     /* passes/gpu_reduce.c */
bool gpu_privatize_pass(Kernel *k, Diags *d);  /* passes/gpu_privatize.c */
bool gpu_scan_pass(Kernel *k, Diags *d);       /* passes/gpu_scan.c */
bool gpu_map_pass(Kernel *k, Diags *d);        /* passes/gpu_map.c */
bool gpu_dead_fill_pass(Kernel *k, Diags *d);  /* passes/gpu_dead_fill.c */
bool gpu_vector_pass(Kernel *k, Diags *d);     /* passes/gpu_vector.c */
bool gpu_mma_pass(Kernel *k, const Target *target, Diags *d); /* passes/gpu_mma.c */
bool gpu_pipeline_pass(Kernel *k, Diags *d);   /* passes/gpu_pipeline.c */
bool gpu_barrier_pass(Kernel *k, Diags *d);    /* passes/gpu_barrier.c */

#endif
