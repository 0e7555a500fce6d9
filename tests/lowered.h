/* Test support: the code generators translate only a kernel the target passes have
 * lowered (Kernel.cpu_lowered, Kernel.gpu_lowered; passes/pipeline.c).  Tests that
 * build or schedule IR themselves go through these wrappers, which lower a copy for
 * the target first, as perfc's pipeline does, and then call the back end. */
#ifndef PERFC_TESTS_LOWERED_H
#define PERFC_TESTS_LOWERED_H

#include "passes/xform.h"
#ifdef PERFC_HAVE_LLVM
#include "codegen/llvm/cg_llvm.h"
#endif
#include "codegen/cuda/cg_cuda.h"

/* A copy of k with target's legalisation and lowering passes run (an unknown
 * target: an unlowered copy, which the back end then refuses by name). */
static inline Kernel *tl_lowered(const Kernel *k, const char *target, Diags *d)
{
    Kernel *c = ir_clone_kernel(k);
    if (!pipeline_target(c, target_find(target), d)) {
        ir_free(c);
        return NULL;
    }
    return c;
}

#ifdef PERFC_HAVE_LLVM
static inline JitKernel *tl_jit(const Kernel *k, const char *target, Diags *d)
{
    Kernel *c = tl_lowered(k, target, d);
    JitKernel *j = c ? cg_llvm_jit(c, target, d) : NULL;
    if (c)
        ir_free(c);
    return j;
}

static inline bool tl_llvm_emit(const Kernel *k, const char *target, CgEmitKind kind, StrBuf *out, Diags *d)
{
    Kernel *c = tl_lowered(k, target, d);
    bool ok = c && cg_llvm_emit(c, target, kind, out, d);
    if (c)
        ir_free(c);
    return ok;
}
#endif

static inline bool tl_cuda_generate(const Kernel *k, const char *arch, CgCudaModule *m, Diags *d)
{
    Kernel *c = tl_lowered(k, arch, d);
    bool ok = c && cg_cuda_generate(c, arch, m, d);
    if (c)
        ir_free(c);
    if (!c)
        memset(m, 0, sizeof *m);
    return ok;
}

#endif
