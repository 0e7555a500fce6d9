/* The compilation target as one value.
 *
 * `-target NAME` is parsed once, by target_parse, into a Target from a fixed table:
 * the class (CPU or GPU), and for a CPU the architecture, the vector width and what
 * LLVM is told (triple, CPU, features, ABI); for a GPU the SM version, the
 * architecture-specific `a` suffix, the per-block limits and which tensor-core and
 * copy instructions exist.  Every stage (the pipeline, the transformations, the
 * emitters, the devices, the tuner, the CLI) asks the Target instead of re-reading
 * the name.  Targets are static and immutable: a `const Target *` can be kept
 * anywhere for the life of the process.
 *
 * "host" is the running CPU.  Its architecture is known when perfc is compiled;
 * its LLVM CPU name and feature string are only known to LLVM at run time, so
 * codegen/llvm/target.c fills them in for `host` (the table's are empty). */
#ifndef PERFC_IR_TARGET_H
#define PERFC_IR_TARGET_H

#include <stdbool.h>

#include "../lang/diag.h"

/* TARGET_INTERP: `-target interp`, the reference interpreter (ir/interp.c) runs the
 * kernel; no code is generated and no target passes run. */
typedef enum TargetClass { TARGET_CPU, TARGET_GPU, TARGET_INTERP } TargetClass;
typedef enum TargetArch { ARCH_NONE, ARCH_X86_64, ARCH_AARCH64, ARCH_RISCV64 } TargetArch;

typedef struct Target {
    const char *name;       /* as -target spells it: "host", "x86_64-avx512", "sm_90a" */
    TargetClass cls;

    /* ---- CPU targets ---- */
    TargetArch arch;
    bool host;              /* the running CPU (cpu and features come from LLVM) */
    const char *triple, *cpu, *features, *abi; /* what LLVM is told; "" = default */
    const char *needs;      /* a CPU feature (as /proc/cpuinfo spells it) the code
                             * needs beyond the architecture's baseline, or NULL */
    bool fma, native_half;  /* fused multiply-add; f16 conversions in hardware */
    int vscale_min, vscale_max; /* scalable vectors (SVE, RVV); 0 when none */
    int vector_width;       /* bits LLVM's vectorisers are pinned to; 0: LLVM's choice */
    int vector_bytes;       /* widest fixed-width vector register (16, 32, 64) */
    bool dot_bf16;          /* AVX-512 BF16: vdpbf16ps sums the products of pairs of
                             * bf16 into f32 lanes (the CPU pass dot-pairs uses it) */
    bool amx_bf16;          /* AMX tiles with the bf16 tile product tdpbf16ps (the CPU
                             * pass amx-tiles uses it), usable: the OS saves the tiles */

    /* ---- GPU targets ---- */
    int sm;                 /* compute capability x 10: 80, 86, 89, 90 */
    bool arch_specific;     /* the `a` suffix (sm_90a): Hopper-only instructions */
    int max_threads_block;  /* 1024 */
    int max_smem_block;     /* opt-in limit of dynamic shared memory, bytes */
    int regs_per_block;     /* 65536 */
    int max_regs_thread;    /* 255 */
    int smem_sm;            /* shared memory of one SM, bytes (blocks share it, 1 KB
                             * of it reserved per block) */
    int threads_sm;         /* resident threads per SM (2048; 1536 on sm_86/89) */
    int blocks_sm;          /* resident blocks per SM (32; 16 on sm_86/89) */
    bool mma_sync;          /* warp-level mma.sync tensor-core products */
    bool cp_async;          /* asynchronous global -> shared copies */
    bool wgmma;             /* warpgroup wgmma.mma_async (sm_90a only) */
    bool tma;               /* tensor memory accelerator bulk copies */
    int sms;                /* streaming multiprocessors of the architecture's usual
                             * data-centre part (A100 108, H100 132): what the tuner
                             * sizes grids by (split-K); the GPU that runs may differ */
} Target;

/* The target named `name` (NULL means "host"), or NULL when perfc has none. */
const Target *target_find(const char *name);
/* target_find with one error when the name is unknown, listing the known names of
 * the class the name looks like (sm_* a GPU, else a CPU). */
const Target *target_parse(const char *name, Diags *d);
/* Whether a name, known or not, is spelled as a GPU target (sm_*): which list an
 * error about an unknown name shows. */
bool target_name_gpu(const char *name);
/* The known names of one class, for messages: "host, x86_64, ..." or "sm_80 sm_86 ...". */
const char *target_names(TargetClass cls);
/* The i-th known target, NULL past the last (host first, then CPUs, GPUs, interp). */
const Target *target_at(int i);

static inline bool target_is_gpu(const Target *t) { return t && t->cls == TARGET_GPU; }
static inline bool target_is_cpu(const Target *t) { return t && t->cls == TARGET_CPU; }

#endif
