/* The CPU thread pool that parallel loops run on.
 *
 * codegen/llvm outlines every LOOP_PARALLEL body into `void body(void *ctx, int64_t lo,
 * int64_t hi)` and calls perfc_parallel_for; JIT-compiled kernels find these symbols
 * in the perfc process, and objects emitted with `-emit obj` are linked with this file
 * (it depends on nothing but libc and pthreads, so the cross tests build it with
 * aarch64/riscv64 gcc as is).
 *
 * The pool is persistent: workers are started on first use and sleep between jobs
 * (after a short spin, so back-to-back kernel calls do not pay a wake-up each).  A
 * job splits 0..n into at most one contiguous chunk per thread; the calling thread
 * runs the first chunk itself.  A call made from inside a job (a parallel loop nested
 * in another) runs serially on the calling thread, and so does a call while the pool
 * is set to one thread.  Jobs from different application threads are serialised. */
#ifndef PERFC_RUNTIME_POOL_H
#define PERFC_RUNTIME_POOL_H

#include <stdint.h>

/* Runs fn(ctx, lo, hi) over disjoint chunks covering 0..n (nothing when n <= 0) and
 * returns when all are done. */
void perfc_parallel_for(int64_t n, void (*fn)(void *ctx, int64_t lo, int64_t hi), void *ctx);

/* Number of threads jobs use from now on, the caller included.  n <= 0 restores the
 * default: $PERFC_NUM_THREADS if set, else every online core. */
void perfc_pool_set_threads(int n);

/* The number of threads the next job will use. */
int perfc_pool_threads(void);

/* Kernels with AMX tile products call this at their entry: on Linux a process must
 * ask for the tile state before its first tile instruction (arch_prctl
 * ARCH_REQ_XCOMP_PERM), which then holds for all its threads.  Asked once.  Where
 * the system refuses, it says so on stderr and stops the process: the kernel would
 * die of SIGILL at its first tile. */
void perfc_amx_permit(void);

#endif
