/* The CUDA back end: loop-nest IR -> readable CUDA C -> NVRTC -> PTX and cubin.
 *
 * Three steps, each usable alone:
 *   cg_cuda_generate  IR -> CUDA C source plus one CgLaunch per __global__ function
 *                     (grid, block, shared bytes): what the runtime needs to launch;
 *   cg_cuda_compile   the source -> PTX and cubin for one sm_* target through NVRTC,
 *                     loaded with dlopen (perfc never links the CUDA toolkit), with
 *                     the registers / stack / spills that ptxas reported;
 *   cg_cuda_emit      both, for `-emit cuda|ptx|cubin`.
 * Every step works on a machine without a GPU or driver; only NVRTC is needed for
 * PTX and cubin, and its absence is reported as an error that says so.
 *
 * Launch ABI: every __global__ function of a kernel takes the same parameters, one
 * pointer per buffer whose memory is MEM_GLOBAL (inputs, outputs and global
 * temporaries), in Kernel.bufs order, then one 128-byte tensor map (CUtensorMap,
 * by value) per CgTmap of the module, in order: the launcher encodes them from the
 * buffers' addresses (cuTensorMapEncodeTiled).  Size parameters are baked in as constants
 * (the Kernel carries their bound values), so a module serves one shape. */
#ifndef PERFC_CODEGEN_CUDA_CG_CUDA_H
#define PERFC_CODEGEN_CUDA_CG_CUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../ir/ir.h"

typedef enum CgCudaKind { CG_CUDA_SRC, CG_CUDA_PTX, CG_CUDA_CUBIN } CgCudaKind;

/* One __global__ function: the code of one top-level node of Kernel.body. */
typedef struct CgLaunch {
    char name[64];
    int64_t grid[3];
    int block[3];
    int shared_bytes;       /* dynamic shared memory passed at launch */
    /* Filled by cg_cuda_compile from the ptxas report (-1: not known). */
    int regs, stack_bytes, spill_stores, spill_loads;
    int static_smem;        /* shared bytes the code declares itself (ptxas' "bytes smem") */
    int min_blocks;         /* 0, or the blocks per SM its __launch_bounds__ asks ptxas
                             * to fit (cg_cuda_compile, occupancy.c) */
} CgLaunch;

/* A tensor map the bulk tensor copies of passes/gpu_tma.c read: a box of a global
 * tensor of 16-bit elements, dimensions innermost first, copied into shared memory
 * with the 128-byte swizzle; elements outside the tensor arrive as zeros.  Encode it
 * with cuTensorMapEncodeTiled(map, UINT16, rank, address of buffer `buf`, dims,
 * strides, box, {1, ..}, INTERLEAVE_NONE, SWIZZLE_128B, L2_PROMOTION_L2_256B,
 * FLOAT_OOB_FILL_NONE). */
typedef struct CgTmap {
    int buf;                /* Kernel.bufs id */
    int rank;               /* 2..5 */
    uint64_t dims[5];
    uint64_t strides[4];    /* bytes from one index of dims[1..rank-1] to the next */
    uint32_t box[5];
} CgTmap;

typedef struct CgCudaModule {
    StrBuf src;             /* CUDA C, NUL-terminated in src.s */
    CgLaunch *launches;
    int nlaunches;
    int *arg_bufs;          /* buffer ids (Kernel.bufs) passed as arguments, in order */
    int nargs;
    CgTmap *tmaps;          /* tensor maps passed after them, in order */
    int ntmaps;
    char arch[16];          /* target it was checked against */
    /* After cg_cuda_compile: */
    char *ptx;              /* NUL-terminated */
    size_t ptx_len;
    void *cubin;
    size_t cubin_len;
    StrBuf log;             /* NVRTC's log, ptxas -v included */
} CgCudaModule;

/* ---- targets: the GPU Targets of ir/target.h (limits, instructions) ---- */
/* NULL when the name is no supported CUDA target. */
static inline const Target *cg_cuda_arch(const char *name)
{
    const Target *t = name ? target_find(name) : NULL;
    return target_is_gpu(t) ? t : NULL;
}
/* "sm_80 sm_86 sm_89 sm_90 sm_90a", for messages. */
static inline const char *cg_cuda_targets(void) { return target_names(TARGET_GPU); }

/* ---- codegen/cuda/emit.c: IR -> CUDA C ---- */
/* Generates the source and launch table.  Needs every size parameter bound and k
 * lowered by the GPU target passes (Kernel.gpu_lowered; passes/pipeline.c), else an
 * internal error.  Fails with a diagnostic that gives the numbers when a launch
 * exceeds arch's limits on threads per block or shared memory. */
bool cg_cuda_generate(const Kernel *k, const char *arch, CgCudaModule *m, Diags *d);
void cg_cuda_module_free(CgCudaModule *m);

/* ---- codegen/cuda/names.c: user names in generated CUDA C ---- */
/* A word no user name may be printed as: C/C++ keywords and alternative tokens,
 * predefined macros, CUDA built-ins, what the emitter prints, `pf*`, `_*`. */
bool cg_cuda_reserved(const char *s);
/* The CUDA function for log1p, expm1, floor, ceil, round or pow (mathfn.c); NULL for
 * any other kind. */
const char *cuda_mathfn_name(ExprKind k, bool dbl);
/* A name printed as written: [A-Za-z][A-Za-z0-9_]* without `__`, not reserved. */
bool cg_cuda_plain(const char *s);
/* Appends the mangled form of name: "pf" + kind (an upper-case letter) + escape. */
void cg_cuda_mangle(char kind, const char *name, StrBuf *out);
/* Appends name for a comment, bytes other than [A-Za-z0-9_.] replaced by '?'. */
void cg_cuda_comment_text(const char *name, StrBuf *out);

/* ---- codegen/cuda/nvrtc.c: NVRTC, loaded at run time ---- */
/* True when libnvrtc could be loaded; otherwise why[] says what was tried. */
bool cg_nvrtc_available(char *why, size_t n);
/* Turns the CUDA compute cache off for this process (CUDA_CACHE_DISABLE=1 unless the
 * user set it): perfc needs ptxas' report on every compile.  Call before the driver
 * or NVRTC starts. */
void cg_cuda_no_compile_cache(void);
/* NVRTC's version, e.g. 13 0; false when not loadable. */
bool cg_nvrtc_version(int *major, int *minor);

/* ---- codegen/cuda/occupancy.c: blocks per SM ---- */
/* Blocks of launch L one SM of t holds at `regs` registers per thread (all limits but
 * registers when regs <= 0). */
int cg_cuda_blocks_sm(const CgLaunch *L, const Target *t, int regs);
/* The blocks per SM to ask of ptxas for launch L (compiled, L->regs known) when its
 * registers are what holds it below the blocks its shared memory and threads admit
 * and at most a sixth of them must go; 0 when none. */
int cg_cuda_min_blocks(const CgLaunch *L, const Target *t);
/* Appends "__launch_bounds__(threads[, min_blocks]) name(": how a launch's function
 * opens (emit.c), and what cg_cuda_compile finds to add the minimum of blocks to. */
void cg_cuda_bounds(StrBuf *out, int64_t threads, int min_blocks, const char *name);
/* Compiles m->src for arch: fills ptx, cubin, log and each launch's regs / stack /
 * spills; refuses a launch whose registers x threads exceed the target's register
 * file.  When registers alone hold a launch below the blocks per SM its shared memory
 * and threads admit, adds occupancy.c's minimum of blocks to the launch's
 * __launch_bounds__ in m->src, compiles again and keeps that if ptxas spills next to
 * nothing (so -emit cuda, which compiles nothing, shows the bounds without it).
 * Errors (NVRTC missing, compile errors with the log) go to d. */
bool cg_cuda_compile(CgCudaModule *m, const char *arch, Diags *d);

/* ---- codegen/cuda/emit.c: the -emit entry point ---- */
/* `-emit cuda` appends the CUDA C (with the launch table as a comment);
 * `-emit ptx` the PTX text; `-emit cubin` the cubin's raw bytes (out->len counts
 * them; binary, may hold NULs). */
bool cg_cuda_emit(const Kernel *k, const char *arch, CgCudaKind kind, StrBuf *out, Diags *d);
/* The resource report of a compiled module, one line per launch, for `-emit report`
 * and for the harness' report. */
void cg_cuda_resources(const CgCudaModule *m, StrBuf *out);

#endif
