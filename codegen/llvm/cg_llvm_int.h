/* Internal interface of codegen/llvm: the target table (target.c), the IR -> LLVM IR
 * translation (emit.c) and the drivers that optimise, JIT or emit (jit.c).  Nothing
 * outside codegen/llvm includes this file. */
#ifndef PERFC_CODEGEN_LLVM_CG_LLVM_INT_H
#define PERFC_CODEGEN_LLVM_CG_LLVM_INT_H

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "cg_llvm.h"

/* Everything the translation needs to know about the machine it generates for. */
typedef struct CgTarget {
    const Target *target;    /* what it was made from (ir/target.h) */
    char name[32];           /* as the user spelled it ("host" stays "host") */
    char triple[64];
    char cpu[64];
    const char *features;    /* LLVM feature string; static or the cached host one */
    const char *abi;         /* "" or an ABI name (lp64d) */
    bool is_host;
    bool fma;                /* a fused multiply-add instruction exists: use llvm.fma */
    bool native_half;        /* f16 <-> f32 conversion instructions exist */
    int vscale_min, vscale_max; /* vscale_range attribute (0: none) */
    int vector_width;        /* "prefer-vector-width"/"min-legal-vector-width" (0: none) */
    bool dot_bf16;           /* LLVM may select vdpbf16ps (avx512bf16 with avx512vl): a
                              * `dot-product` loop becomes one (codegen/llvm/emit_dot.c) */
    bool amx;                /* LLVM may select AMX tiles and tdpbf16ps: an `amx-tiles`
                              * loop becomes them (codegen/llvm/emit_amx.c) */
    bool any_align;          /* code for callers outside perfc (cg_llvm_emit: objects,
                              * `perfc lib`): buffers promised their element's alignment
                              * only, not CG_BUF_ALIGN */
} CgTarget;

/* ---- target.c ---- */
/* Initialises the LLVM targets once, from any thread. */
void cg_llvm_init(void);
/* Fills *t for a known target name (NULL means host); false if unknown. */
bool cg_target_lookup(const char *name, CgTarget *t);
/* Fills *t for a CPU Target (host resolved through LLVM); false for a GPU or NULL. */
bool cg_target_fill(const Target *target, CgTarget *t);
/* A target machine for t at O3, position-independent; NULL with a diagnostic. */
LLVMTargetMachineRef cg_target_machine(const CgTarget *t, Diags *d);
/* The calling thread's target machine for t, made on first use and kept for the
 * thread's life (the caller must not dispose of it). */
LLVMTargetMachineRef cg_thread_target_machine(const CgTarget *t, Diags *d);
/* True when the host CPU can run code for t (JIT of a non-host x86 variant). */
bool cg_target_runs_on_host(const CgTarget *t);

/* ---- emit.c ---- */
/* Translates the kernel into a new module of ctx; NULL with diagnostics on failure
 * (unbound parameters, GPU loop kinds, internal errors).  Warnings (a vector loop
 * emitted as a scalar loop) are reported and the module is still made. */
LLVMModuleRef cg_build_module(const Kernel *k, const CgTarget *t, LLVMContextRef ctx,
                              LLVMTargetMachineRef tm, Diags *d);
/* Whether the schedule made some loop vector or unroll (register tiles): such a
 * kernel is emitted for, and optimised by, the short pipeline of jit.c. */
bool cg_kernel_tiled(const Kernel *k);
/* Whether the kernel reads a padded input outside its range (clamped loads). */
bool cg_kernel_padded(const Kernel *k);

/* ---- mathfn.c ---- */
/* log1p, expm1, floor, ceil, round (ties to even) and pow (y: the exponent, else
 * NULL) of a float scalar or vector x. */
LLVMValueRef cg_llvm_mathfn(LLVMModuleRef M, LLVMBuilderRef B, ExprKind k, LLVMValueRef x, LLVMValueRef y);

#endif
