/* The GPU launch geometry stated by a scheduled kernel's loops, read alike by the
 * GPU target passes (passes/gpu_*.c), which decide the mapping, and by the CUDA
 * back end (codegen/cuda), which translates it: which loop kinds are block and
 * thread loops and along which dimension, whether a launch is scheduled, loop
 * extents and index ranges with the bound sizes (through ir/arith.h), and the
 * block shape its thread loops give. */
#ifndef PERFC_IR_GPU_H
#define PERFC_IR_GPU_H

#include <stdbool.h>
#include <stdint.h>

#include "arith.h"
#include "ir.h"

bool gpu_is_block(LoopKind k);
bool gpu_is_thread(LoopKind k);
int gpu_dim(LoopKind k); /* 0 x, 1 y, 2 z for block.* / thread.*, else -1 */
/* True when a loop below n (or n) is bound to block.* or thread.*. */
bool gpu_scheduled(const Node *n);

/* Value of an expression of constants and bound parameters (floor / and %). */
bool gpu_cval(const Kernel *k, const Expr *x, int64_t *out);
bool gpu_loop_extent(const Kernel *k, const Node *l, int64_t *lo, int64_t *ext);
/* The loop of variable v in the subtree n, or NULL. */
const Node *gpu_loop_of_var(const Node *n, const Var *v);
/* Range of an index expression over the loops of top; false if unknown. */
bool gpu_irange(const Kernel *k, const Node *top, const Expr *x, int64_t *lo, int64_t *hi);
/* Largest extent of the thread loops below n, per dimension (entries start at 1). */
void gpu_thread_extents(const Kernel *k, const Node *n, int64_t blk[3]);

#endif
