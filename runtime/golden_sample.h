/* The sampled exact check (runtime/golden_sample.c): golden values of sampled
 * output elements, each from the f64 interpreter run on the backward slice of
 * that element only.  Used by runtime/golden.c; tests call it directly. */
#ifndef PERFC_RUNTIME_GOLDEN_SAMPLE_H
#define PERFC_RUNTIME_GOLDEN_SAMPLE_H

#include "runtime.h"

typedef struct RtSampler RtSampler;

/* For the unscheduled kernel u; k (may be NULL) is the scheduled kernel whose
 * output subscripts give the tile boundaries to sample.  NULL with a diagnostic
 * when a size cannot be computed. */
RtSampler *rt_sampler_new(const Kernel *u, const Kernel *k, Diags *d);
/* At most max_samples elements per output, and about budget interpreter units
 * (flops + statement executions, ~8e7 a second) per run; <= 0 keeps the default
 * (4096 and 4e7, with the random samples also stopped after 0.5 s of wall time once 1024 are taken). */
void rt_sampler_limits(RtSampler *s, int64_t max_samples, double budget);
/* Draws the samples (seeded) and computes them.  bufs: u's buffers as doubles,
 * inputs filled, outputs and temporaries allocated at full size (only the slices
 * are written).  False with a diagnostic when the interpreter fails. */
bool rt_sampler_run(RtSampler *s, double **bufs, uint64_t seed, Diags *d);
/* The samples of output buffer buf of the last run, sorted by flat element index. */
int64_t rt_sampler_samples(const RtSampler *s, int buf, const int64_t **at, const double **ref);
/* Interpreter units the last run cost (the plan's estimate). */
double rt_sampler_work(const RtSampler *s);
void rt_sampler_free(RtSampler *s);

#endif
