/* Runs one kernel object emitted by `perfc -emit obj` (symbol KERNEL_FN, defined when
 * compiling) outside perfc, so that the process holds nothing but the kernel's own
 * buffers: its peak resident set is the kernel's memory (perfc --run also holds the
 * golden reference's buffers).  Arguments: repetitions, then one word per buffer of
 * the kernel in its ABI order: `in:BYTES` (filled with bf16 values in [-1, 1)),
 * `buf:BYTES` (an output or global temporary, zeroed) or `local` (kept on the
 * kernel's stack, not passed).  The kernel runs on one thread (the pool is set to
 * one, parallel loops run inline).  Prints the median and minimum wall time of a
 * call, the minimum CPU time of the calling thread per call (on a shared machine
 * the time the kernel actually ran, less sensitive to the load than wall time), and
 * the peak resident set size. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "runtime/pool.h"

void KERNEL_FN(void **bufs);

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s REPS in:BYTES|buf:BYTES|local ...\n", argv[0]);
        return 1;
    }
    int reps = atoi(argv[1]), n = argc - 2;
    if (reps < 1 || reps > 1000)
        return 1;
    void **bufs = calloc((size_t)n, sizeof *bufs);
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < n; i++) {
        const char *a = argv[2 + i];
        if (!strcmp(a, "local"))
            continue;
        size_t bytes = (size_t)strtoull(strchr(a, ':') + 1, NULL, 10);
        size_t alloc = (bytes + 63) / 64 * 64;
        bufs[i] = aligned_alloc(64, alloc ? alloc : 64);
        if (!bufs[i])
            return 1;
        memset(bufs[i], 0, alloc);
        if (!strncmp(a, "in:", 3))
            for (size_t e = 0; e < bytes / 2; e++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                float f = (float)((double)(x >> 11) / 9007199254740992.0 * 2.0 - 1.0);
                uint32_t u;
                memcpy(&u, &f, 4);
                ((uint16_t *)bufs[i])[e] = (uint16_t)(u >> 16);
            }
    }
    perfc_pool_set_threads(1);
    KERNEL_FN(bufs); /* warm-up */
    double *t = calloc((size_t)reps, sizeof *t), cpu = 1e300;
    for (int r = 0; r < reps; r++) {
        struct timespec a, b, ca, cb;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ca);
        clock_gettime(CLOCK_MONOTONIC, &a);
        KERNEL_FN(bufs);
        clock_gettime(CLOCK_MONOTONIC, &b);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cb);
        t[r] = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) * 1e-6;
        double c = (double)(cb.tv_sec - ca.tv_sec) * 1e3 + (double)(cb.tv_nsec - ca.tv_nsec) * 1e-6;
        cpu = c < cpu ? c : cpu;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("median_ms %.3f min_ms %.3f cpu_min_ms %.3f reps %d peak_rss_kb %ld\n", t[reps / 2], t[0], cpu, reps,
           ru.ru_maxrss);
    return 0;
}
