/* Math functions PDL added after the first back end was written (floor, ceil,
 * round, pow), emitted as LLVM IR in one place so that emit.c only dispatches to
 * them: LLVM intrinsics (a single instruction for the first three on x86-64 with
 * SSE4.1, AVX-512 or NEON; pow becomes a libm call per lane).  round is
 * llvm.roundeven: ties go to even, as NumPy's round and the reference
 * interpreter's nearbyint do.  log1p and expm1 are built inline by vmath.c; the
 * libm calls here remain for a caller that asks for them outside that path. */
#include <string.h>

#include "cg_llvm_int.h"

static LLVMValueRef call_intrinsic(LLVMModuleRef M, LLVMBuilderRef B, const char *name, LLVMValueRef *args, int n)
{
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMTypeRef ty = LLVMTypeOf(args[0]);
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(M, id, &ty, 1);
    LLVMTypeRef fty = LLVMIntrinsicGetType(LLVMGetModuleContext(M), id, &ty, 1);
    return LLVMBuildCall2(B, fty, fn, args, (unsigned)n, "");
}

/* A libm function of one argument, lane by lane on a vector.  Declared as touching
 * no memory, as emit.c does for tanh and erf: generated code never reads errno, so
 * the calls may be moved and merged like arithmetic. */
static LLVMValueRef call_libm(LLVMModuleRef M, LLVMBuilderRef B, const char *name, LLVMValueRef x)
{
    LLVMContextRef C = LLVMGetModuleContext(M);
    LLVMTypeRef ty = LLVMTypeOf(x);
    bool vec = LLVMGetTypeKind(ty) == LLVMVectorTypeKind;
    LLVMTypeRef et = vec ? LLVMGetElementType(ty) : ty;
    LLVMTypeRef fty = LLVMFunctionType(et, &et, 1, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(M, name);
    if (!fn) {
        fn = LLVMAddFunction(M, name, fty);
        const char *attrs[] = {"nounwind", "willreturn"};
        for (int i = 0; i < 2; i++) {
            unsigned kind = LLVMGetEnumAttributeKindForName(attrs[i], strlen(attrs[i]));
            LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(C, kind, 0));
        }
        unsigned mem = LLVMGetEnumAttributeKindForName("memory", 6);
        LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(C, mem, 0));
    }
    if (!vec)
        return LLVMBuildCall2(B, fty, fn, &x, 1, "");
    LLVMTypeRef i32 = LLVMInt32TypeInContext(C);
    LLVMValueRef r = LLVMGetPoison(ty);
    for (unsigned i = 0; i < LLVMGetVectorSize(ty); i++) {
        LLVMValueRef lane = LLVMConstInt(i32, i, 0);
        LLVMValueRef e = LLVMBuildExtractElement(B, x, lane, "");
        r = LLVMBuildInsertElement(B, r, LLVMBuildCall2(B, fty, fn, &e, 1, ""), lane, "");
    }
    return r;
}

LLVMValueRef cg_llvm_mathfn(LLVMModuleRef M, LLVMBuilderRef B, ExprKind k, LLVMValueRef x, LLVMValueRef y)
{
    LLVMTypeRef ty = LLVMTypeOf(x);
    LLVMTypeRef et = LLVMGetTypeKind(ty) == LLVMVectorTypeKind ? LLVMGetElementType(ty) : ty;
    bool dbl = LLVMGetTypeKind(et) == LLVMDoubleTypeKind;
    LLVMValueRef args[2] = {x, y};
    switch (k) {
    case IE_FLOOR: return call_intrinsic(M, B, "llvm.floor", args, 1);
    case IE_CEIL: return call_intrinsic(M, B, "llvm.ceil", args, 1);
    case IE_ROUND: return call_intrinsic(M, B, "llvm.roundeven", args, 1);
    case IE_POW: return call_intrinsic(M, B, "llvm.pow", args, 2);
    case IE_LOG1P: return call_libm(M, B, dbl ? "log1p" : "log1pf", x);
    case IE_EXPM1: return call_libm(M, B, dbl ? "expm1" : "expm1f", x);
    default: return x; /* not a function of this file: emit.c never asks */
    }
}
