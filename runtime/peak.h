/* The machine's roofs for --plot: peak arithmetic rate and memory bandwidth.
 *
 * On the CPU both are measured (runtime/peak.c): an FMA loop on every thread with
 * as many independent accumulators as the FMA units need, in the widest SIMD the
 * CPU has, and a copy of two buffers far larger than the last-level cache.  The
 * result is kept in the tuning database (table machine_peak, one row per device and
 * thread count), so it is measured once per machine, not on every run.  On a GPU
 * nothing is measured: the numbers come from the vendor's data sheet for the part
 * the device names, and `how` says so. */
#ifndef PERFC_RUNTIME_PEAK_H
#define PERFC_RUNTIME_PEAK_H

#include <stdbool.h>

#include "runtime.h"

typedef struct RtPeak {
    double gflops;      /* f32 (CPU: FMA, 2 flops each; GPU: CUDA cores) */
    double gflops_tc;   /* GPU: dense f16/bf16 tensor cores; 0 elsewhere */
    double gbps;        /* memory bandwidth, read + write bytes */
    char how[256];      /* how the numbers were obtained, for the plot's caption */
} RtPeak;

/* The roofs of the machine m runs on (target: "host"... or "sm_*").  db_path: the
 * tuning database that caches CPU measurements (NULL: measure, keep nothing).
 * False with a diagnostic when there is nothing to go on (an unknown GPU). */
bool rt_peak(const char *target, const RtMachine *m, int threads, const char *db_path, RtPeak *p, Diags *d);
/* Measures the CPU now (no cache). */
void rt_peak_measure_cpu(int threads, RtPeak *p);

#endif
