/* perfc.h: the embedding API of perfc, for programs that compile, run and tune
 * tensor kernels themselves instead of calling the `perfc` command.
 *
 *     char *err = NULL;
 *     perfc_program *p = perfc_parse(pdl_text, "mine.pdl", &err);
 *     perfc_size sz[] = {{"M", 512}, {"N", 512}, {"K", 512}};
 *     perfc_kernel *k = perfc_compile(p, "gemm", "host", sz, 3, NULL, &err);
 *     char *report = NULL;
 *     int rc = perfc_run(k, NULL, &report, &err);   // validate + time; JSON report
 *     ...
 *     perfc_free(report); perfc_kernel_free(k); perfc_program_free(p);
 *
 * Link with libperfc (CMake: find_package(perfc) then target_link_libraries(x
 * perfc::perfc)).  Every function reports failure through its return value and,
 * when `errors` is not NULL, a malloc'd text with the located diagnostics (free
 * it with perfc_free).  Objects are independent: different kernels may be used
 * from different threads at once; one object must not be used by two threads at
 * the same time.  Exit statuses are the command's (0 ok, 1 usage or compile error,
 * 2 validation failed, 3 runtime or device error).
 *
 * To build a library other programs link, see `perfc lib` (docs/library.md). */
#ifndef PERFC_H
#define PERFC_H

#include <stddef.h>
#include <stdint.h>

#define PERFC_VERSION_MAJOR 0
#define PERFC_VERSION_MINOR 1
#define PERFC_VERSION_PATCH 0
#define PERFC_VERSION_STRING "0.1.0"
/* One number that grows with every release: 10000 * major + 100 * minor + patch.
 * CMake refuses to configure when these differ from project(perfc VERSION ...). */
#define PERFC_VERSION_NUMBER (PERFC_VERSION_MAJOR * 10000 + PERFC_VERSION_MINOR * 100 + PERFC_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

enum {
    PERFC_OK = 0,
    PERFC_ECOMPILE = 1,  /* usage or compile error */
    PERFC_EINVALID = 2,  /* the kernel computed wrong results */
    PERFC_ERUNTIME = 3   /* runtime or device error */
};

typedef struct perfc_program perfc_program; /* a checked PDL file */
typedef struct perfc_kernel perfc_kernel;   /* one kernel, lowered and scheduled for a target */

typedef struct perfc_size {
    const char *name;
    int64_t value;
} perfc_size;

typedef struct perfc_run_options {
    int threads;          /* <= 0: every core */
    const char *compare;  /* "openblas", "cublas" or NULL */
    uint64_t seed;        /* 0: fresh inputs each run */
    int budget;           /* perfc_tune: candidates to measure (<= 0: 48) */
    double time_limit;    /* perfc_tune: seconds of search (<= 0: 300) */
    const char *db;       /* perfc_tune: tuning database (NULL: the default one) */
} perfc_run_options;

/* The library's version, as PERFC_VERSION_STRING was when it was built. */
const char *perfc_version(void);

/* Parses and checks PDL source text; `name` is used in messages.  NULL on error. */
perfc_program *perfc_parse(const char *source, const char *name, char **errors);
void perfc_program_free(perfc_program *p);
int perfc_program_nkernels(const perfc_program *p);
const char *perfc_program_kernel(const perfc_program *p, int i);

/* Lowers `kernel` (NULL: the first) with the given sizes (defaults for the rest)
 * and applies the file's schedule for `target` ("host", "x86_64-avx2", "sm_90",
 * ...; NULL: "host") and then `schedule` (schedule statements, as -s; may be NULL).
 * NULL on error. */
perfc_kernel *perfc_compile(perfc_program *p, const char *kernel, const char *target, const perfc_size *sizes,
                            int nsizes, const char *schedule, char **errors);
void perfc_kernel_free(perfc_kernel *k);

/* The kernel as text or bytes: what is "ir", "llvm", "asm", "obj", "cuda", "ptx" or
 * "cubin" (as -emit).  *out is malloc'd (NUL-terminated; *len counts the bytes
 * without the NUL, which matters for objects).  Returns an exit status. */
int perfc_emit(perfc_kernel *k, const char *what, char **out, size_t *len, char **errors);

/* Compiles, validates against golden outputs and times the kernel on its target
 * (perfc --run).  *report (may be NULL) receives the report as one JSON object,
 * also when validation failed.  Returns an exit status. */
int perfc_run(perfc_kernel *k, const perfc_run_options *o, char **report, char **errors);

/* Searches schedules for the kernel (perfc --autotune), remembering results in the
 * tuning database; *report receives the winner's report as JSON and *schedule
 * (may be NULL) its schedule statements, ready for perfc_compile.  Returns an exit
 * status. */
int perfc_tune(perfc_kernel *k, const perfc_run_options *o, char **report, char **schedule, char **errors);

/* Frees what the functions above returned in char ** arguments. */
void perfc_free(void *p);

#ifdef __cplusplus
}
#endif
#endif /* PERFC_H */
