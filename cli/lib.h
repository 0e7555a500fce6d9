/* Internal interface of `perfc lib` (cli/lib.c drives the build; cli/lib_cuda.c adds
 * the GPU code of a library: cubins and PTX loaded through the driver API). */
#ifndef PERFC_CLI_LIB_H
#define PERFC_CLI_LIB_H

#include "cli.h"
#include "codegen/cuda/cg_cuda.h"

enum { LIB_MAX_FILES = 64, LIB_MAX_SETS = 32, LIB_MAX_KSEL = 64, LIB_MAX_ISAS = 4, LIB_MAX_GPUS = 8 };

/* One size set; it applies to a kernel when every name in it is one of the kernel's
 * parameters (and, with `KERNEL:` in front, only to that kernel). */
typedef struct SizeSet {
    Define d[MAX_DEFINES];
    int n;
    char *kernel;
} SizeSet;

typedef struct LibOpts {
    const char *files[LIB_MAX_FILES];
    int nfiles;
    const char *targets;
    SizeSet sets[LIB_MAX_SETS];
    int nsets;
    const char *ksel[LIB_MAX_KSEL];
    int nksel;
    bool autotune, keep, verbose;
    int budget;
    double time_limit;
    const char *db;
    const char *out;           /* DIR/NAME */
    char *dir, *name;
} LibOpts;

/* One specialised variant: the size values and the object's symbols per ISA. */
typedef struct Variant {
    int64_t *values;           /* per kernel parameter */
    char *sym[LIB_MAX_ISAS];   /* NULL: not built for that ISA */
    bool *priv;                /* per buffer: kept by the generated code (MEM_LOCAL) */
    int64_t *temp_bytes;       /* per buffer: bytes of a caller-provided temporary */
    int nbufs;                 /* buffers of the scheduled kernel (schedules may add some) */
} Variant;

/* One GPU variant: the size values and, per architecture of Lib.gpus, its module. */
typedef struct GpuVariant {
    int64_t *values;           /* per kernel parameter */
    CgCudaModule mod[LIB_MAX_GPUS];
    bool built[LIB_MAX_GPUS];
    int64_t *temp_bytes;       /* per buffer: bytes of a global temporary */
    int nbufs;                 /* buffers of the scheduled kernel (schedules may add some) */
} GpuVariant;

/* The general GPU variant of one kernel (cli/lib_cuda_general.c): the canonical
 * nest with every size unbound, as CUDA C with the sizes as arguments, compiled for
 * every architecture of Lib.gpus. */
typedef struct GpuGeneral {
    Kernel *k;                 /* NULL: none (the reason was printed at build time) */
    int *nchain;               /* per top-level node of k: loops spread over threads */
    CgCudaModule mod[LIB_MAX_GPUS];
    bool built[LIB_MAX_GPUS];
} GpuGeneral;

typedef struct LibKernel {
    const char *file;
    char *name;                /* PDL name */
    Kernel *gen;               /* unscheduled, every size unbound */
    Variant *var;
    int nvar;
    GpuVariant *gvar;
    int ngvar;
    GpuGeneral ggen;
} LibKernel;

typedef struct Lib {
    LibOpts *o;
    Diags *d;
    const char *isas[LIB_MAX_ISAS];
    int nisa;
    LibKernel *k;
    int nk, capk;
    char *tmp;                 /* build folder */
    char *targets;             /* the -target list, split in place: isas[] point into it */
    char **objs;
    int nobjs;
    const char *gpus[LIB_MAX_GPUS];  /* GPU architectures, in -target order */
    Arena *arena;              /* what the general variants' schedules parsed: lives as long as they */
    int ngpu;
} Lib;


/* cli/lib_general.c: the general variant's nest, every size unbound, reordered
 * for memory where the compiler proves it legal.  NULL with diagnostics. */
Kernel *lib_general_kernel(Program *p, AstKernel *ak, Arena *a, Diags *d);
/* The canonical nest with every size unbound (defaults ignored). */
Kernel *lib_lower_unbound(Program *p, AstKernel *ak, Diags *d);
/* True when `parallel(var)` is legal on the canonical nest: no iteration of the loop
 * touches an element another one writes (passes/deps.c decides). */
bool lib_loop_parallel(Program *p, AstKernel *ak, const char *var, Arena *a);

/* cli/lib_cuda_general.c: builds lk->ggen, the general GPU variant (a note on stderr
 * when it cannot be built: the kernel then has GPU code for its size sets only). */
void lib_cuda_general(Lib *L, LibKernel *lk, Program *p, AstKernel *ak);
/* Its host code, for the library's C file: the index check, the embedded code and
 * NAME__cuda_general_KERNEL(bufs, bytes, sizes, stream). */
void lib_cuda_general_source(const Lib *L, const LibKernel *lk, StrBuf *s);
void lib_cuda_general_free(GpuGeneral *gg);
/* cli/lib_cuda.c: the cubin, PTX and launch arrays of one module per architecture
 * and the pf_cu_code table BASE_code[] over them; returns its number of entries. */
int lib_cuda_code_table(const Lib *L, const char *base, const CgCudaModule *mods, const bool *built, StrBuf *s);

/* cli/lib_cuda.c.  Builds the GPU variants of one kernel for a size set (NULL with
 * defaults_only: the kernel's defaults) on every architecture of L->gpus; a kernel
 * the GPU back end refuses gets no GPU code (a note on stderr), not an error. */
void lib_cuda_variants(Lib *L, LibKernel *lk, const SizeSet *set, bool defaults_only);
/* Prototypes of NAME_KERNEL_cuda and NAME_call_cuda, for NAME.h. */
void lib_cuda_header(const Lib *L, StrBuf *h);
/* The loader, the embedded code and the _cuda functions, for the library's C file;
 * `check` names the per-kernel size check generated by lib.c (NAME__check_KERNEL). */
void lib_cuda_source(const Lib *L, StrBuf *s);
void lib_cuda_free(LibKernel *lk);
/* cli/lib.c: --autotune for one compilation (see there). */
int lib_autotune(Lib *L, const char *kname, const char *target, Compilation *c, Options *o, char **sched);
/* Helpers shared with lib.c */
void lib_signature(const Lib *L, const LibKernel *lk, const char *suffix, bool stream, StrBuf *o);
void lib_c_str(StrBuf *o, const char *s);

#endif
