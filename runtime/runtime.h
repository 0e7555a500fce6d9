/* The runtime: devices, the validation and timing harness, golden references,
 * library baselines and the report.
 *
 * The harness turns "a kernel compiled" into "a kernel proven correct on fresh
 * inputs and measured honestly" (docs/harness.md): seeded
 * random inputs, outputs poisoned with NaN before every run, golden outputs from a
 * reference that shares no code with the code generators, a per-dtype tolerance on
 * the relative Frobenius error, warm-up, caches flushed between repetitions,
 * repetitions adapted to the kernel's length, and the library baseline timed the
 * same way in the same process.  docs/harness.md states every rule as implemented.
 *
 * A device is a small table of function pointers (RtDevice).  The harness never
 * touches device memory itself: it stages native-layout data on the host and moves
 * it with upload/download, so a device is one RtDevice plus one line in
 * rt_device_open (runtime/devices.c): the host CPU is runtime/device_host.c, an
 * NVIDIA GPU runtime/cuda_device.c.
 *
 * Prototypes are grouped by source file. */
#ifndef PERFC_RUNTIME_RUNTIME_H
#define PERFC_RUNTIME_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../ir/ir.h"

/* ---------------------------------------------------------------------------
 * runtime/workload.c: what a kernel computes, read from its IR
 * ------------------------------------------------------------------------- */

/* A (batched, possibly transposed) matrix product found in the IR:
 *   C[b.., i, j] = sum(k) A[b.., i, k] * B[b.., k, j]
 * with A stored [.., M, K] (or [.., K, M] when trans_a) and B stored [.., K, N]
 * (or [.., N, K] when trans_b), all row-major and contiguous.  Buffer ids are those
 * of the kernel that was analysed. */
typedef struct RtGemm {
    int a, b, c;
    DType ta, tb, tc;
    int64_t batch, m, n, k;
    bool trans_a, trans_b;
    int64_t stride_a, stride_b, stride_c; /* elements between batch entries; 0: broadcast */
    bool epilogue;      /* the kernel does more than this product (C a temporary, other statements) */
} RtGemm;

typedef struct RtWork {
    double flops;       /* arithmetic on data values, counted from the IR (docs/harness.md) */
    double execs;       /* statement executions */
    bool exact;         /* false when a guard or loop bound was too costly to enumerate */
    double bytes;       /* every input read once + every output written once */
    int64_t reduce_len; /* longest reduction: product of the trips of the reduced loops, >= 1 */
    bool is_gemm;
    RtGemm gemm;
    /* The nodes that compute the product, in the analysed kernel: the zero
     * initialisation of T (a statement or a top-level nest) and the reduction (the
     * k loop, or a top-level nest).  What remains without them is the epilogue. */
    const Node *gemm_nodes[2];
    double rest_work;   /* flops + statement executions outside gemm_nodes */
} RtWork;

/* Counts and classifies a kernel whose parameters are all bound. */
bool rt_analyse(const Kernel *k, RtWork *w, Diags *d);
/* The float type whose precision bounds the error: the least precise of the
 * outputs, the temporaries and the float casts in statement values.  DT_I32 when
 * the kernel holds no float at all (then results must match exactly). */
DType rt_tolerance_dtype(const Kernel *k);
/* The tolerance on the relative Frobenius error (docs/harness.md): per dtype,
 * scaled with the reduction length for f32, never above RT_TOL_CAP. */
#define RT_TOL_CAP 1e-2
double rt_tolerance(DType t, int64_t reduce_len);
/* The same; why (cap bytes) receives the reason when the cap applied, else "". */
double rt_tolerance_why(DType t, int64_t reduce_len, char *why, size_t cap);

/* ---------------------------------------------------------------------------
 * runtime/machine.c: the machine a report names
 * ------------------------------------------------------------------------- */

typedef struct RtFact {
    char key[32];
    char value[160];
} RtFact;

typedef struct RtMachine {
    char device[384];   /* one line: what ran the kernel */
    char cpu[128];      /* host CPU model */
    int cores;          /* online logical CPUs */
    char isa[192];      /* vector/ISA extensions present, space-separated */
    double cpu_mhz;     /* 0 when unreadable */
    int64_t llc_bytes;  /* last-level cache, 0 when unknown */
    char blas[192];     /* OpenBLAS version and configuration, or "none" */
    char llvm[32];      /* LLVM version the code generator was built with, or "none" */
    RtFact facts[16];   /* device-specific facts (GPU name, clocks, driver, library versions) */
    int nfacts;
} RtMachine;

void rt_machine_host(RtMachine *m);
void rt_machine_fact(RtMachine *m, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int rt_cpu_count(void);
/* True when /proc/cpuinfo lists the feature (x86 "flags", Arm "Features"). */
bool rt_cpu_has(const char *feature);
int64_t rt_llc_bytes(void);

/* runtime/limits.c: this machine's memory in bytes (MemTotal, or the cgroup's
 * memory.max when lower; PERFC_MEMORY_BYTES overrides), and the check run before
 * anything is allocated for k: every tensor, and the working set of the harness
 * (host and device copies plus golden_bytes_per_elem per element: 8 for f64 golden
 * values), must fit, else an error at the tensor or kernel that gives both numbers. */
int64_t rt_memory_bytes(void);
bool rt_check_sizes(const Kernel *k, int64_t golden_bytes_per_elem, Diags *d);

/* ---------------------------------------------------------------------------
 * Devices.  The harness calls only these pointers; every call that can fail
 * reports through Diags and returns false/NULL.  Pointers into device memory are
 * opaque (void *) to the harness.
 * ------------------------------------------------------------------------- */

/* Something a device can run: a compiled kernel or a library call. */
typedef struct RtExec {
    const char *what;   /* for messages: "perfc kernel", "cblas_sgemm" */
    void *impl;         /* the device's own data */
} RtExec;

typedef struct RtDevice RtDevice;
struct RtDevice {
    const char *name;   /* kind: "cpu" or "cuda"; --compare checks it */
    void *impl;         /* the implementation's state */
    /* Names the device: fills m->device and adds facts (called after rt_machine_host). */
    void (*describe)(RtDevice *dev, RtMachine *m);
    void *(*alloc)(RtDevice *dev, size_t bytes, Diags *d);
    void (*free)(RtDevice *dev, void *p);
    bool (*upload)(RtDevice *dev, void *dst, const void *src, size_t bytes, Diags *d);
    bool (*download)(RtDevice *dev, void *dst, const void *src, size_t bytes, Diags *d);
    /* Optional (NULL: the harness uploads rt_poison's pattern): fills n elements of
     * dtype t at dst with a poison the kernel never produces, on the device itself.
     * A GPU fills half a gigabyte of attention scores in a fraction of a millisecond
     * where an upload over PCIe takes a fifth of a second per run. */
    bool (*poison)(RtDevice *dev, void *dst, DType t, int64_t n, Diags *d);
    /* Compiles the kernel for target.  The harness times this call (compile_ms). */
    RtExec *(*compile)(RtDevice *dev, const Kernel *k, const char *target, Diags *d);
    /* Optional (NULL: none): makes something runnable of a compilation done on another
     * thread, on the calling thread (a GPU context belongs to the thread that made it).
     * CUDA: `module` is a CgCudaModule after cg_cuda_generate and cg_cuda_compile
     * (codegen/cuda/cg_cuda.h), allocated with malloc; the device takes it, even on
     * failure.  The tuner compiles candidates on every core while it measures others. */
    RtExec *(*adopt)(RtDevice *dev, void *module, Diags *d);
    /* Optional (NULL: none): the part of compile that needs no device context (CUDA:
     * code generation and NVRTC), safe to call on another thread; its result, or NULL
     * with diagnostics, goes to adopt on the device's thread. */
    void *(*build)(RtDevice *dev, const Kernel *k, const char *target, Diags *d);
    /* The library `lib` ("openblas", "cublas") doing g.  Its buffers at run time are
     * {A, B, C}.  NULL with a one-line reason in why (and no diagnostic) when the
     * library has no equivalent; NULL with a diagnostic when it failed. */
    RtExec *(*library)(RtDevice *dev, const char *lib, const RtGemm *g, char *why, size_t whylen,
                       Diags *d);
    /* Runs x to completion on bufs (Kernel.bufs order for kernels; {A, B, C} for
     * library calls).  When ms is not NULL it receives the run's time measured the
     * device's way (host: monotonic clock around the call; GPU: events after a full
     * synchronisation). */
    bool (*run)(RtDevice *dev, RtExec *x, void **bufs, double *ms, Diags *d);
    /* Evicts every cached copy of the data the next run touches; untimed. */
    void (*flush)(RtDevice *dev);
    void (*release)(RtDevice *dev, RtExec *x);
    void (*close)(RtDevice *dev);
    /* Optional (NULL: none): the product g in f64 by the device's own library, from
     * host arrays to a host array (A, B, C laid out as g says).  A golden reference
     * for the GEMM family that shares no code with perfc and is far faster on a GPU
     * than dgemm on the host CPU. */
    bool (*gemm_f64)(RtDevice *dev, const RtGemm *g, const double *a, const double *b, double *c, Diags *d);
    const char *gemm_f64_name; /* "cublas-dgemm" */
};

/* ---- runtime/device_host.c: the host CPU ---- */
RtDevice *rt_host_open(Diags *d);
/* Wraps a C function as something the host device runs: used by tests that plant
 * wrong kernels behind the device interface, and by callers with a ready function. */
RtExec *rt_host_exec_fn(RtDevice *host, void (*fn)(void *ctx, void **bufs), void *ctx,
                        const char *what);

/* ---- runtime/cuda_device.c: one NVIDIA GPU, its driver loaded at run time ---- */
/* NULL with a diagnostic when there is no usable GPU or it cannot run target. */
RtDevice *rt_cuda_open(const char *target, Diags *d);

/* ---- runtime/devices.c: target -> device ---- */
/* Opens the device that runs code for target ("host", "x86_64-avx2", "sm_90", ...).
 * NULL with a diagnostic and *rc = 1 when the target cannot run on this machine,
 * *rc = 3 when the device failed to start. */
RtDevice *rt_device_open(const char *target, int *rc, Diags *d);

/* ---------------------------------------------------------------------------
 * runtime/baseline_blas.c: OpenBLAS, optional (PERFC_HAVE_OPENBLAS)
 * ------------------------------------------------------------------------- */

bool rt_blas_available(void);
void rt_blas_set_threads(int n);
/* runtime/blas_core.c: called first in main.  Where OpenBLAS's own detection chose
 * a kernel older than AVX2 on a CPU with AVX2 or AVX-512, restarts perfc with
 * OPENBLAS_CORETYPE set to the CPU's kernel family (returns only otherwise). */
void rt_blas_fit_core(char **argv);
/* The core OpenBLAS detected before that restart, or NULL when none happened. */
const char *rt_blas_core_note(void);
/* "OpenBLAS 0.3.21 DYNAMIC_ARCH ... (core Haswell)" or "none". */
void rt_blas_describe(char *buf, size_t n);
/* Golden product in f64 on f64 arrays laid out as g says: c = a·b per batch entry. */
bool rt_blas_gemm_f64(const RtGemm *g, const double *a, const double *b, double *c, Diags *d);
/* Stops OpenBLAS's idle worker threads from spinning on the cores a kernel is timed
 * on next (they restart with the next call); a no-op without OpenBLAS. */
void rt_blas_quiesce(void);
/* The library call that does g in g's own dtypes, or NULL with the reason. */
typedef struct RtBlasCall RtBlasCall;
RtBlasCall *rt_blas_plan(const RtGemm *g, char *why, size_t whylen);
const char *rt_blas_call_name(const RtBlasCall *c);
void rt_blas_call(void *call, void **abc); /* call: an RtBlasCall */
void rt_blas_free(void *call);

/* ---------------------------------------------------------------------------
 * runtime/golden.c: reference outputs that share no code with the generators
 * ------------------------------------------------------------------------- */

/* A copy of k with every float buffer, constant, cast and operation in f64 (integer
 * buffers and index arithmetic untouched, loops serial except `parallel`, every
 * buffer in global memory).  Buffer ids and order are k's.  Free with ir_free. */
Kernel *ir_promote_f64(const Kernel *k);

typedef enum RtGoldenKind {
    RT_GOLDEN_INTERP,   /* the f64 interpreter on ir_promote_f64(u), every element */
    RT_GOLDEN_BLAS,     /* dgemm in f64 (the device's library, else OpenBLAS), then the interpreter
                         * for any epilogue */
    RT_GOLDEN_DEVICE,   /* ir_promote_f64(u) compiled for the device (host: one loop per nest on
                         * threads), every element */
    RT_GOLDEN_SAMPLED,  /* the interpreter on sampled elements' slices (runtime/golden_sample.c)
                         * every check, plus DEVICE on the last check */
    RT_GOLDEN_SAMPLED_ONLY, /* the samples alone: where DEVICE would take too long */
} RtGoldenKind;

typedef struct RtGolden RtGolden;
/* Chooses the reference for u from its workload (docs/harness.md, section 3); force
 * >= 0 imposes a kind (tests).  k (may be NULL) is the scheduled kernel, whose
 * output subscripts give the tile boundaries the sampled check visits.  dev (may be
 * NULL: a host device is opened when one is needed) is the device the kernel runs
 * on, target its -target: its gemm_f64 serves large GEMMs and it compiles the f64
 * copy for the full-tensor check. */
RtGolden *rt_golden_new(const Kernel *u, const Kernel *k, const RtWork *w, RtDevice *dev, const char *target,
                        int force, Diags *d);
RtGoldenKind rt_golden_kind(const RtGolden *g);
/* "interpreter-f64", "cublas-dgemm+interpreter", "sampled-interpreter+device-f64", ... */
const char *rt_golden_name(const RtGolden *g);
/* bufs[i]: u's buffer i as doubles; inputs filled (rounded to their dtype), every
 * other buffer allocated at full size.  seed draws the samples; last says this is
 * the last input set (the one the timed runs reuse), where SAMPLED adds its
 * full-tensor check.  On return the outputs hold the reference everywhere when
 * rt_golden_full(g), and rt_golden_samples lists sampled elements and values. */
bool rt_golden_compute(RtGolden *g, double **bufs, uint64_t seed, bool last, Diags *d);
bool rt_golden_full(const RtGolden *g);
/* Sampled elements of output buf (u's id) of the last compute, sorted, with their
 * values; 0 when this reference samples nothing. */
int64_t rt_golden_samples(const RtGolden *g, int buf, const int64_t **at, const double **ref);
/* For a tuner that keeps each input set's reference across candidates (RtRefCache):
 * SAMPLED then adds its full-tensor check on every input set, not only the last,
 * so that each set's outputs are known everywhere, cross-checked against the
 * interpreter's samples.  True when every compute of g now fills the outputs
 * entirely (also INTERP, BLAS and DEVICE); false for SAMPLED_ONLY. */
bool rt_golden_full_every(RtGolden *g);
/* The caller filled the outputs from a kept full reference of the same kernel and
 * input set: rt_golden_full is true, and the samples of the last compute (another
 * input set's) are not offered until the next compute. */
void rt_golden_reused(RtGolden *g);
/* Caps of the sampled check (<= 0: default 4096 elements, 4e7 work units). */
void rt_golden_set_samples(RtGolden *g, int64_t max_samples, double budget);
/* The node of p (an ir_promote_f64 copy of k) at n's place in k. */
const Node *rt_golden_twin(const Kernel *k, const Kernel *p, const Node *n);
void rt_golden_free(RtGolden *g);

/* ---------------------------------------------------------------------------
 * runtime/data.c: native-layout buffers
 * ------------------------------------------------------------------------- */

/* Seeded values for an input: floats uniform in [-1, 1) rounded to t, integers
 * uniform in [-16, 16]; never all equal.  Writes the f64 values and, when native is
 * not NULL, the same values in t's storage format. */
void rt_fill_random(DType t, int64_t n, Rng *r, double *f64, void *native);
/* An input of kernel k: from its declared domain (range/distinct) when it has one,
 * else as rt_fill_random; false with an error when the domain cannot be drawn. */
bool rt_fill_input(const Kernel *k, const Buffer *b, int64_t n, Rng *r, double *f64, void *native, Diags *d);
void rt_to_native(DType t, const double *src, void *dst, int64_t n);
void rt_from_native(DType t, const void *src, double *dst, int64_t n);
/* NaN in t's format (INT32_MIN for integers, which cannot hold NaN). */
void rt_poison(DType t, void *dst, int64_t n);

/* ---------------------------------------------------------------------------
 * runtime/harness.c: validate, time, compare
 * ------------------------------------------------------------------------- */

/* Inputs and golden outputs kept across evaluations of one kernel (runtime/harness.c).
 * Every evaluation with the same seed validates on the same input sets, so a tuner
 * measuring many schedules of one kernel u computes the reference of each set once
 * and every candidate is checked against the same values; nothing checked changes.
 * Only references that give every element are kept: the interpreter, dgemm, the
 * device's f64 copy, and the sampled reference with its full-tensor check made on
 * every set (rt_golden_full_every), whose samples visited the first candidate's tile
 * edges and agreed with the full copy; later candidates are compared with it on
 * every element, which covers their own tile edges. */
typedef struct RtRefCache RtRefCache;
/* u: the unscheduled kernel every evaluation will pass (the same object). */
RtRefCache *rt_refcache_new(const Kernel *u);
void rt_refcache_free(RtRefCache *c);
/* Input sets whose reference was computed once and reused (0 when none). */
int rt_refcache_hits(const RtRefCache *c);

typedef struct RunOptions {
    const char *target;   /* NULL: "host" */
    int threads;          /* <= 0: every online CPU; kernel and CPU baseline alike */
    const char *compare;  /* "openblas", "cublas" or NULL */
    bool json;            /* one JSON object instead of the table */
    uint64_t seed;        /* inputs of check c come from a stream seeded by (seed, c) */
    double min_time_s;    /* <= 0: 0.2 */
    int max_reps;         /* <= 0: 10000 */
    int checks;           /* validation input sets; clamped to >= 2 */
    bool verbose;         /* a line per check and per repetition on stderr */
    /* 0: the harness chooses the golden reference; else RtGoldenKind + 1 (tests). */
    int golden_kind;
    /* Validate only (checks may then be 1, on inputs no earlier run saw): no timing,
     * no baseline.  For re-proving a kernel whose times are already known, e.g. the
     * tuning database's winner; a freshly compiled kernel holds no earlier output,
     * so one fresh input set proves it as the first of the usual checks does. */
    bool validate_only;
    /* The library alone (o.compare): inputs drawn and references computed for every
     * input set as a kernel's validation would (kept in `refs`), then the baseline
     * timed and checked on the last set; k is not compiled or run (pass the
     * unscheduled kernel).  A tuner does this while its first candidates compile. */
    bool baseline_only;
    FILE *out;            /* where the report goes; NULL: stdout */
    const struct Progress *progress; /* phase events (runtime/progress.h); NULL: none */
    struct RtResult *keep;  /* rt_run copies its result here (the caller draws it); NULL: not */
    /* NumPy files (runtime/npy.h): every check runs on the inputs read from `inputs`
     * (an .npz, or a folder of NAME.npy) instead of random ones; save_inputs gets
     * the first check's inputs, save_outputs the kernel's outputs of the last
     * validation run.  NULL: none. */
    const char *inputs, *save_inputs, *save_outputs;
    RtRefCache *refs;     /* reuse inputs and references across evaluations of u (the tuner); NULL: none */
    /* > 0: the best median so far among other schedules of this kernel (the tuner).
     * Timing stops early when the kernel is clearly slower: every run of it so far
     * (the validation runs and at least one timed repetition, three or more in all)
     * took over 1.5 times this; then the warm-up is skipped too (docs/harness.md). */
    double stop_above_ms;
} RunOptions;

/* Zero everything, then the defaults above (target "host", seed 1). */
void rt_options_init(RunOptions *o);

typedef struct RtStats {
    double median, min, max; /* ms */
    int reps;
} RtStats;
/* The median, min and max of v[0..n) (n >= 1; v is sorted in place). */
void rt_stats(double *v, int n, RtStats *st);

typedef struct RtResult {
    const Kernel *k;      /* the kernel run; must outlive the result for printing */
    const char *target;
    int threads;
    uint64_t seed;        /* reproduces the inputs (RunOptions.seed) */
    RtMachine machine;
    RtWork work;
    bool valid;
    char reason[512];     /* why validation failed */
    double rel_error;     /* worst over every check, timed runs included */
    double tolerance;
    DType tol_dtype;
    char tol_note[192];   /* why the tolerance is capped (rt_tolerance_why), or "" */
    char golden[64];      /* name of the reference */
    int checks;           /* fresh input sets validated */
    double compile_ms;
    RtStats time;
    double gflops, gbps;
    char cache[96];       /* how caches were flushed */
    /* baseline (--compare) */
    bool compare;         /* a baseline was asked for */
    char base_name[32];   /* "openblas" */
    char base_call[32];   /* "cblas_sgemm" */
    bool has_base;        /* ran and timed */
    char base_note[1024]; /* why there is none, or a remark on what it covers */
    RtStats base_time;
    double base_gflops, base_rel_error;
    double vs_baseline;   /* perfc GFLOP/s / baseline GFLOP/s */
    /* 0: timed in this run.  Otherwise the Unix time at which the times above were
     * measured (a tuning database answer; the kernel was re-validated now). */
    double measured_at;
    /* Where this evaluation's wall time went, seconds: set-up (workload analysis,
     * choosing the reference, buffers), drawing and uploading inputs, the golden
     * reference, the checked validation runs, the timed loop (warm-up, poison,
     * flush, runs and their checks), the baseline.  Read by the tuner's profile. */
    struct {
        double setup, inputs, golden, checks, timing, baseline;
    } spent;
    bool stopped_early;   /* timing stopped by stop_above_ms: a clearly slower kernel, fewer repetitions */
} RtResult;

/* Validates and times k on dev.  u is the same kernel before scheduling (NULL: k
 * itself); the golden reference and the operation counts come from it.  Fills r
 * and returns the exit status of `perfc --help`: 0 valid (timed), 2 validation failed
 * (r->valid false, nothing timed), 1 usage or compile error, 3 runtime or device
 * error (diagnostics in d).  Prints nothing on stdout. */
int rt_evaluate(RtDevice *dev, const Kernel *k, const Kernel *u, const RunOptions *o, RtResult *r,
                Diags *d);
/* The same for a kernel the caller compiled (dev->compile of k); x stays the
 * caller's to release.  The tuner compiles its candidates in parallel beforehand. */
int rt_evaluate_exec(RtDevice *dev, RtExec *x, const Kernel *k, const Kernel *u, const RunOptions *o,
                     RtResult *r, Diags *d);
/* What `perfc --run` calls: opens the device for o->target, evaluates, prints the
 * report (table, or JSON with o->json) when the status is 0 or 2, and returns it. */
int rt_run(const Kernel *k, const Kernel *u, const RunOptions *o, Diags *d);

/* ---------------------------------------------------------------------------
 * runtime/report.c
 * ------------------------------------------------------------------------- */

void rt_report_human(const RtResult *r, FILE *f);
void rt_report_json(const RtResult *r, FILE *f);

#endif
