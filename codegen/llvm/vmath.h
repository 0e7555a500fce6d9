/* Vector math for the LLVM back end (vmath.c): transcendental functions built inline
 * as IR in the shape of their operand, f32 or f64, scalar or vector. */
#ifndef PERFC_CODEGEN_LLVM_VMATH_H
#define PERFC_CODEGEN_LLVM_VMATH_H

#include <stdbool.h>

#include <llvm-c/Core.h>

typedef struct VmCtx {
    LLVMContextRef C;
    LLVMModuleRef M;
    LLVMBuilderRef B;
    bool fma;           /* the target has fused multiply-add */
} VmCtx;

LLVMValueRef vm_exp(const VmCtx *c, LLVMValueRef x);
LLVMValueRef vm_expm1(const VmCtx *c, LLVMValueRef x);
LLVMValueRef vm_log(const VmCtx *c, LLVMValueRef x);
LLVMValueRef vm_log1p(const VmCtx *c, LLVMValueRef x);
LLVMValueRef vm_tanh(const VmCtx *c, LLVMValueRef x);
/* NULL for f64: the caller calls libm's erf. */
LLVMValueRef vm_erf(const VmCtx *c, LLVMValueRef x);

#endif
