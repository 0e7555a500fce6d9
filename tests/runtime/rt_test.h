/* Support shared by the runtime tests: a failure counter, hand-built IR kernels
 * (so the harness can be tested before and apart from the parser and lowering),
 * and the check that a JSON report carries every field docs/harness.md names. */
#ifndef PERFC_TESTS_RUNTIME_RT_TEST_H
#define PERFC_TESTS_RUNTIME_RT_TEST_H

#include <stdio.h>

#include "json_min.h"
#include "runtime/runtime.h"

extern int rt_test_failures;
#define CHECK(cond)                                                                     \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);    \
            rt_test_failures++;                                                         \
        }                                                                               \
    } while (0)

/* How a hand-built GEMM differs from the right one. */
typedef enum {
    GEMM_OK,
    GEMM_K_FROM_1,      /* off by one: the reduction starts at k = 1 */
    GEMM_SKIP_LAST_ROW, /* the tail: i runs to M - 1 */
    GEMM_CONSTANT,      /* C[i, j] = 1 */
    GEMM_SEPARATE_INIT, /* right, but zero-initialised in its own loop nest */
} GemmVariant;

/* C[i, j] = sum(k) A[i, k] * B[k, j] (or A[k, i] when ta, B[j, k] when tb), as the
 * lowering writes it: C = 0 inside the i, j loops, then the k loop. */
Kernel *rt_test_gemm(int64_t M, int64_t N, int64_t K, DType tin, DType tout, bool ta, bool tb, GemmVariant v);
/* Y[i] = X[i] + Z[i]: a kernel that is not a matrix product. */
Kernel *rt_test_add(int64_t n);

/* Wrong kernels planted behind the host device, as C functions computing
 * C = A·B in f32 on M x K and K x N row-major inputs. */
typedef enum {
    CHEAT_NONE,         /* the right product */
    CHEAT_OFF_BY_ONE,   /* reads B one column to the right (wrapping) */
    CHEAT_SKIP_TAIL,    /* leaves the last row unwritten */
    CHEAT_CONSTANT,     /* writes 1 everywhere */
    CHEAT_STALE,        /* computes on the first call only; later calls write nothing */
    CHEAT_FIRST_INPUTS, /* remembers its first result and replays it */
    CHEAT_LAZY_TIMED,   /* right for 3 calls (what validation watches), then half the rows */
    CHEAT_INF,          /* right, except one Inf */
    CHEAT_ONE_ELEMENT,  /* right, except one element off by 1 (rt_test_planted_device_at) */
    CHEAT_WRONG_TAIL,   /* rows from `at` on miss the last term of the sum */
    CHEAT_ONE_SLIGHT,   /* one element off by 1e-3: under every norm, over the per-element bound */
    CHEAT_COUNT
} Cheat;
const char *rt_test_cheat_name(Cheat c);
/* A device that is the host device except that compile() returns the planted
 * function (whatever the kernel).  Free with free(); the host stays the caller's. */
RtDevice *rt_test_planted_device(RtDevice *host, Cheat c, int64_t M, int64_t N, int64_t K);
/* The same, with the element (flat index) or first row the cheat spoils. */
RtDevice *rt_test_planted_device_at(RtDevice *host, Cheat c, int64_t M, int64_t N, int64_t K, int64_t at);

/* NULL when rep is a complete report (valid with timings; with a baseline object
 * holding a time and a rate when baseline), else what is missing or wrong. */
const char *rt_test_report_problem(const JVal *rep, bool valid, bool baseline);

#endif
