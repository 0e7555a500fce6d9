/* Shared by the GPU target passes (passes/gpu_*.c): index analyses over a launch's
 * loops, beside the launch geometry of ir/gpu.h (which the back end reads too).
 * These passes decide how a launch maps onto CUDA's threads; codegen/cuda/emit.c
 * then only translates what they wrote into the IR. */
#ifndef PERFC_PASSES_GPU_INT_H
#define PERFC_PASSES_GPU_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "../ir/arith.h"
#include "../ir/gpu.h"
#include "../ir/ir.h"

/* Structural equality (the same tree over the same variables and buffers). */
bool gpu_same_expr(const Expr *a, const Expr *b);

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
/* Part of gpu-mma (passes/gpu_mma_rows.c): per-row vectors of an mma launch whose
 * lane pairs are marked, quad-rows loops and quad reductions. */
bool gpu_mma_rows(Kernel *k, Node *top, bool wg, Diags *d);
bool gpu_pipeline_pass(Kernel *k, Diags *d);   /* passes/gpu_pipeline.c */
bool gpu_tma_pass(Kernel *k, const Target *target, Diags *d); /* passes/gpu_tma.c */
bool gpu_frag_ahead_pass(Kernel *k, Diags *d); /* passes/gpu_frag_ahead.c */
bool gpu_barrier_pass(Kernel *k, Diags *d);    /* passes/gpu_barrier.c */

#endif
