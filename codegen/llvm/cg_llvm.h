/* The CPU back end: loop-nest IR -> LLVM IR (LLVM 19 C API) -> host code through ORC
 * LLJIT, or assembly / object files / LLVM IR text for x86-64, AArch64 and RISC-V.
 *
 * Calling convention of generated code: one external function per kernel, named after
 * it,
 *
 *     void NAME(void **bufs);
 *
 * where bufs[i] is the data of Kernel.bufs[i] (inputs, outputs, then temporaries),
 * row-major, in the buffer's storage format (f16 and bf16 as 16-bit values, bool as one
 * byte).  The caller provides every buffer except MEM_LOCAL temporaries, which the
 * generated code keeps on its own stack (one private copy per thread when they live
 * inside a parallel loop); bufs[i] for those is not read and may be NULL.  Buffers must
 * not overlap (they are `noalias`).  JIT code (cg_llvm_jit) assumes them aligned to
 * CG_BUF_ALIGN bytes; emitted code (cg_llvm_emit: objects, `perfc lib`) only to their
 * element's size.
 *
 * Size parameters must all be bound: their values are compiled in as constants, so a
 * compiled kernel serves one shape.  Parallel loops call perfc_parallel_for
 * (runtime/pool.h): the JIT resolves it in the running process (the perfc executable
 * exports it, or a caller registers it with cg_llvm_add_symbol); programs that link an
 * emitted object link runtime/pool.c with it.  docs/codegen.md has the details.
 *
 * All functions are safe to call from several threads at once: each compilation has
 * its own LLVMContext, target machine and JIT. */
#ifndef PERFC_CODEGEN_LLVM_CG_LLVM_H
#define PERFC_CODEGEN_LLVM_CG_LLVM_H

#include <stdbool.h>

#include "../../ir/ir.h"

/* Alignment JIT code assumes for every buffer passed in bufs[]. */
#define CG_BUF_ALIGN 64

typedef void (*KernelEntry)(void **bufs);
typedef struct JitKernel JitKernel;
typedef enum { CG_EMIT_LLVM, CG_EMIT_ASM, CG_EMIT_OBJ } CgEmitKind;

/* True for the CPU targets this back end knows: host, x86_64, x86_64-avx2,
 * x86_64-avx512, aarch64, aarch64-sve, riscv64, riscv64-v. */
bool cg_llvm_target_known(const char *target);

/* Compiles the kernel for this machine and loads it.  target is "host" (or NULL), or
 * an x86_64 variant the host CPU can run.  k must have been lowered by the CPU
 * target passes (Kernel.cpu_lowered; passes/pipeline.c), else an internal error.
 * NULL with diagnostics on failure. */
JitKernel *cg_llvm_jit(const Kernel *k, const char *target, Diags *d);
KernelEntry cg_jit_entry(JitKernel *j);
/* Calls the kernel: cg_jit_entry(j)(bufs), but safe under clang's
 * -fsanitize=function (the Asan build), whose check before an indirect call reads
 * the 8 bytes in front of the callee: JIT code may start on a page whose predecessor
 * is unmapped.  Prefer it to calling the entry pointer directly. */
void cg_jit_run(JitKernel *j, void **bufs);
/* Wall time of the compilation: IR build, O3 pipeline, machine code, JIT link. */
double cg_jit_compile_ms(const JitKernel *j);
void cg_jit_free(JitKernel *j);

/* Writes the optimised kernel for `target` to out: LLVM IR or assembly as text,
 * an ELF relocatable object as bytes (out->len counts them; there may be NULs). */
bool cg_llvm_emit(const Kernel *k, const char *target, CgEmitKind kind, StrBuf *out, Diags *d);

/* Makes `name` resolve to addr in every kernel JIT-compiled from now on, ahead of
 * the symbols of the running process.  The runtime registers the thread pool here
 * so JIT code finds it even when the executable does not export it. */
void cg_llvm_add_symbol(const char *name, void *addr);

/* The symbol of a kernel's entry function: the kernel's name, unless that name is
 * one generated code or the JIT already uses (a C math or memory function such as
 * expf or memcpy, main, perfc_*, llvm.*, or a name starting with '_'), which would
 * make the kernel call itself or clash at link time: then "pfk_" + the name.
 * Writes into buf (at least 300 bytes) and returns it. */
const char *cg_llvm_symbol(const char *kernel, char *buf, size_t n);

#endif
