/* The CPU contraction blocking from the machine: register tile (MR x NR), reduction
 * panel (KC), row block (MC) and column block (NC) computed from the target's vector
 * registers and the caches, after the analytical model of BLIS (Low et al.,
 * "Analytical modeling is enough for high-performance BLIS"), with the departures
 * this project measured (docs/autotune.md, "The blocking model").  The tuner's
 * contraction templates start from this point and search around it. */
#ifndef PERFC_TUNE_BLOCKING_H
#define PERFC_TUNE_BLOCKING_H

#include <stdint.h>

#include "../ir/target.h"

/* The bytes of private buffers (packed panels, register tiles) one kernel may keep:
 * the code generator makes them arrays on the stack of the thread that runs them,
 * which may be a caller's thread with little more than a few MiB.  The contraction
 * templates size their blocks within it and the tuner prunes candidates over it. */
#define BLOCKING_LOCAL_MAX ((int64_t)1 << 20)

typedef struct CacheSizes {
    int64_t l1, l2, l3;   /* data cache bytes per level (L1, L2 per core; L3 as the machine has it) */
    int l1_ways;
    const char *source;   /* "/sys", "sysconf" or the typical values assumed for a cross target */
} CacheSizes;

typedef struct Blocking {
    int lanes;            /* elements per SIMD register */
    int vregs;            /* SIMD registers of the architecture */
    int mr, nr;           /* register tile: MR rows, NR columns (NR = a whole number of registers) */
    int kc;               /* reduction panel */
    int mc, nc;           /* row block (MC x KC of A in L2), column block (KC x NC of B in L3) */
    int mc_strip;         /* the row block where B is packed a KC x NR strip at a time */
} Blocking;

/* SIMD registers of a CPU target: 32 on AVX-512, AArch64 and RISC-V, 16 on AVX2/SSE. */
int blocking_vector_regs(const Target *t);

/* The caches the code will run with: the running CPU's for `host` (sysfs, then
 * sysconf), else typical values for the target's architecture (stated in source). */
void blocking_caches(const Target *t, CacheSizes *c);

/* The model: from the vector width in bytes, the register count, the element size,
 * the caches, and the extents of the rows (m), columns (n) and reduction (k) when
 * known (> 0; the blocks are clamped to them).  Pure: the unit test checks it. */
void blocking_model(int vector_bytes, int vregs, int elem_bytes, const CacheSizes *c, int64_t m, int64_t n, int64_t k,
                    Blocking *b);

/* The model for a target and dtype on its caches (blocking_caches). */
void blocking_for_target(const Target *t, int elem_bytes, int64_t m, int64_t n, int64_t k, Blocking *b);

/* The model when the packed operands are narrower than the accumulators (bf16
 * pairs summed into f32 by vdpbf16ps, passes/cpu_dot.c): the register tile of
 * acc_bytes elements, the panel and blocks (KC, MC, NC) of op_bytes elements:
 * the same bytes of cache hold twice the k of a 2-byte panel. */
void blocking_model_mixed(int vector_bytes, int vregs, int acc_bytes, int op_bytes, const CacheSizes *c, int64_t m,
                          int64_t n, int64_t k, Blocking *b);
void blocking_for_target_mixed(const Target *t, int acc_bytes, int op_bytes, int64_t m, int64_t n, int64_t k,
                               Blocking *b);

#endif
