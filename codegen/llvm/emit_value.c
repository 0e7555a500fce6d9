/* Values for the LLVM translation: LLVM types of the IR's dtypes, constants,
 * intrinsic calls, splats, the exact f16/bf16 conversions, arithmetic with the
 * IR's integer semantics, fused multiply-add and the inline exp, and the affine
 * forms (ir/cpu.h) that addresses are built from.  codegen/llvm/emit.c has the
 * overview. */
#include "emit_int.h"

/* ---- diagnostics ---- */

void cg_error(Cg *g, Span sp, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void cg_error(Cg *g, Span sp, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_vreport(g->d, DIAG_ERROR, sp, fmt, ap);
    va_end(ap);
    g->failed = true;
}

/* ---- types and constants ---- */

LLVMTypeRef cg_cty(Cg *g, DType t)
{
    switch (t) {
    case DT_F64: return g->tf64;
    case DT_F32:
    case DT_F16:
    case DT_BF16: return g->tf32;
    case DT_I32: return g->ti32;
    case DT_I64: return g->ti64;
    case DT_BOOL: return g->ti1;
    default: die("no compute type for dtype %d", (int)t);
    }
}

/* Storage type: f16 is LLVM half where the target converts in hardware, else its
 * bits in an i16 converted by integer code (libgcc 12 has no __truncsfhf2 for
 * RISC-V, and no bf16 helpers at all); bf16 is always i16 bits. */
LLVMTypeRef cg_sty(Cg *g, DType t)
{
    switch (t) {
    case DT_F16: return g->t->native_half ? g->thalf : g->ti16;
    case DT_BF16: return g->ti16;
    case DT_BOOL: return g->ti8;
    default: return cg_cty(g, t);
    }
}

bool cg_is_vty(LLVMTypeRef t)
{
    return LLVMGetTypeKind(t) == LLVMVectorTypeKind;
}

/* The scalar type s in the shape (scalar or vector) of `like`. */
static LLVMTypeRef shaped(LLVMTypeRef like, LLVMTypeRef s)
{
    return cg_is_vty(like) ? LLVMVectorType(s, LLVMGetVectorSize(like)) : s;
}

static LLVMValueRef splat_const(LLVMValueRef c, unsigned n)
{
    LLVMValueRef v[MAX_VECTOR_WIDTH];
    for (unsigned i = 0; i < n; i++)
        v[i] = c;
    return LLVMConstVector(v, n);
}

/* Integer / float constants shaped like type ty. */
LLVMValueRef cg_kint(LLVMTypeRef ty, int64_t x)
{
    if (cg_is_vty(ty))
        return splat_const(LLVMConstInt(LLVMGetElementType(ty), (unsigned long long)x, 1), LLVMGetVectorSize(ty));
    return LLVMConstInt(ty, (unsigned long long)x, 1);
}

LLVMValueRef cg_kflt(LLVMTypeRef ty, double x)
{
    if (cg_is_vty(ty))
        return splat_const(LLVMConstReal(LLVMGetElementType(ty), x), LLVMGetVectorSize(ty));
    return LLVMConstReal(ty, x);
}

LLVMValueRef cg_ci64(Cg *g, int64_t x)
{
    return LLVMConstInt(g->ti64, (unsigned long long)x, 1);
}

LLVMValueRef cg_ci32(Cg *g, int32_t x)
{
    return LLVMConstInt(g->ti32, (unsigned long long)(int64_t)x, 1);
}

/* A constant of dtype t holding x, in compute type. */
LLVMValueRef cg_kdtype(Cg *g, DType t, double x)
{
    if (dtype_is_float(t))
        return LLVMConstReal(cg_cty(g, t), dtype_round(x, t));
    if (t == DT_BOOL)
        return LLVMConstInt(g->ti1, x != 0, 0);
    /* an integer from a float (a pad value): saturate, as a double outside the
     * int64 range has no defined conversion */
    int64_t v = x != x ? 0 : x >= 0x1p63 ? INT64_MAX : x < -0x1p63 ? INT64_MIN : (int64_t)x;
    return LLVMConstInt(cg_cty(g, t), (unsigned long long)v, 1);
}

/* ---- calls ---- */

LLVMValueRef cg_intr(Cg *g, const char *name, LLVMTypeRef *ov, int nov, LLVMValueRef *args, int nargs)
{
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    if (!id)
        die("LLVM has no intrinsic %s", name);
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(g->M, id, ov, (size_t)nov);
    LLVMTypeRef fty = LLVMIntrinsicGetType(g->C, id, ov, (size_t)nov);
    return LLVMBuildCall2(g->B, fty, fn, args, (unsigned)nargs, "");
}

/* Overloaded on the type of its operands (sqrt, fabs, maxnum, fma, smax, ...). */
LLVMValueRef cg_intr_n(Cg *g, const char *name, LLVMValueRef *args, int n)
{
    LLVMTypeRef ty = LLVMTypeOf(args[0]);
    return cg_intr(g, name, &ty, 1, args, n);
}

LLVMValueRef cg_intr1(Cg *g, const char *name, LLVMValueRef a)
{
    return cg_intr_n(g, name, &a, 1);
}

LLVMValueRef cg_intr2(Cg *g, const char *name, LLVMValueRef a, LLVMValueRef b)
{
    LLVMValueRef args[2] = {a, b};
    return cg_intr_n(g, name, args, 2);
}

void cg_add_fn_attr(Cg *g, LLVMValueRef fn, const char *kind, uint64_t val)
{
    unsigned id = LLVMGetEnumAttributeKindForName(kind, strlen(kind));
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(g->C, id, val));
}

void cg_add_str_attr(Cg *g, LLVMValueRef fn, const char *kind, const char *val)
{
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateStringAttribute(g->C, kind, (unsigned)strlen(kind), val, (unsigned)strlen(val)));
}

/* A libm function of one float argument (tanhf, erf, ...), applied lane by lane to a
 * vector.  These never set errno, so they are marked as touching no memory. */
LLVMValueRef cg_libm(Cg *g, const char *name, LLVMValueRef x)
{
    LLVMTypeRef ty = LLVMTypeOf(x), et = cg_is_vty(ty) ? LLVMGetElementType(ty) : ty;
    LLVMTypeRef fty = LLVMFunctionType(et, &et, 1, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(g->M, name);
    if (!fn) {
        fn = LLVMAddFunction(g->M, name, fty);
        cg_add_fn_attr(g, fn, "nounwind", 0);
        cg_add_fn_attr(g, fn, "willreturn", 0);
        cg_add_fn_attr(g, fn, "memory", 0);
    }
    if (!cg_is_vty(ty))
        return LLVMBuildCall2(g->B, fty, fn, &x, 1, "");
    LLVMValueRef r = LLVMGetPoison(ty);
    for (unsigned i = 0; i < LLVMGetVectorSize(ty); i++) {
        LLVMValueRef e = LLVMBuildExtractElement(g->B, x, cg_ci32(g, (int32_t)i), "");
        LLVMValueRef c = LLVMBuildCall2(g->B, fty, fn, &e, 1, "");
        r = LLVMBuildInsertElement(g->B, r, c, cg_ci32(g, (int32_t)i), "");
    }
    return r;
}

/* ---- vectors ---- */

Region *cg_region(Fn *f);

/* s in every lane; one splat per value and block. */
LLVMValueRef cg_splat(Fn *f, LLVMValueRef s)
{
    Cg *g = f->g;
    if (LLVMIsConstant(s))
        return splat_const(s, (unsigned)f->vw);
    Region *r = cg_region(f);
    for (int i = 0; i < r->nsplats; i++)
        if (r->splat_of[i] == s && LLVMGetVectorSize(LLVMTypeOf(r->splat[i])) == (unsigned)f->vw)
            return r->splat[i];
    LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(s), (unsigned)f->vw);
    LLVMValueRef ins = LLVMBuildInsertElement(g->B, LLVMGetPoison(vt), s, cg_ci32(g, 0), "");
    LLVMValueRef zero = LLVMConstNull(LLVMVectorType(g->ti32, (unsigned)f->vw));
    LLVMValueRef v = LLVMBuildShuffleVector(g->B, ins, LLVMGetPoison(vt), zero, "");
    if (r->nsplats == r->capsplats) {
        r->capsplats = r->capsplats ? 2 * r->capsplats : 16;
        r->splat_of = xrealloc(r->splat_of, sizeof *r->splat_of * (size_t)r->capsplats);
        r->splat = xrealloc(r->splat, sizeof *r->splat * (size_t)r->capsplats);
    }
    r->splat_of[r->nsplats] = s;
    r->splat[r->nsplats++] = v;
    return v;
}

LLVMValueRef cg_wide(Fn *f, Val v)
{
    return v.vec ? v.v : cg_splat(f, v.v);
}

Val cg_S(LLVMValueRef v)
{
    return (Val){v, false};
}

/* ---- f16 / bf16 conversions ---- */

static LLVMValueRef emit_f32_to_f16(Cg *g, LLVMValueRef x)
{
    LLVMBuilderRef B = g->B;
    LLVMTypeRef ti = shaped(LLVMTypeOf(x), g->ti32), tf = LLVMTypeOf(x);
    LLVMValueRef xi = LLVMBuildBitCast(B, x, ti, "");
    LLVMValueRef sign = LLVMBuildAnd(B, LLVMBuildLShr(B, xi, cg_kint(ti, 16), ""), cg_kint(ti, 0x8000), "");
    LLVMValueRef a = LLVMBuildAnd(B, xi, cg_kint(ti, 0x7fffffff), "");
    /* Normal halves: rebias the exponent (127 -> 15) and round the 13 dropped bits
     * to nearest even; a carry into the exponent is the right answer. */
    LLVMValueRef lsb = LLVMBuildAnd(B, LLVMBuildLShr(B, a, cg_kint(ti, 13), ""), cg_kint(ti, 1), "");
    LLVMValueRef nrm = LLVMBuildAdd(B, LLVMBuildSub(B, a, cg_kint(ti, 0x38000000), ""), cg_kint(ti, 0xfff), "");
    nrm = LLVMBuildLShr(B, LLVMBuildAdd(B, nrm, lsb, ""), cg_kint(ti, 13), "");
    /* Subnormal halves: adding 0.5 leaves a float whose last bit is worth 2^-24,
     * the half subnormal step, so the hardware rounds for us. */
    LLVMValueRef af = LLVMBuildBitCast(B, a, tf, "");
    LLVMValueRef sub = LLVMBuildBitCast(B, LLVMBuildFAdd(B, af, cg_kflt(tf, 0.5), ""), ti, "");
    sub = LLVMBuildSub(B, sub, cg_kint(ti, 0x3f000000), "");
    LLVMValueRef r = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntULT, a, cg_kint(ti, 0x38800000), ""), sub, nrm, "");
    r = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntUGE, a, cg_kint(ti, 0x47800000), ""), cg_kint(ti, 0x7c00), r, "");
    r = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntUGT, a, cg_kint(ti, 0x7f800000), ""), cg_kint(ti, 0x7e00), r, "");
    r = LLVMBuildOr(B, r, sign, "");
    return LLVMBuildTrunc(B, r, shaped(ti, g->ti16), "");
}

static LLVMValueRef emit_f16_to_f32(Cg *g, LLVMValueRef h)
{
    LLVMBuilderRef B = g->B;
    LLVMTypeRef ti = shaped(LLVMTypeOf(h), g->ti32), tf = shaped(ti, g->tf32);
    LLVMValueRef hi = LLVMBuildZExt(B, h, ti, "");
    LLVMValueRef sign = LLVMBuildShl(B, LLVMBuildAnd(B, hi, cg_kint(ti, 0x8000), ""), cg_kint(ti, 16), "");
    LLVMValueRef em = LLVMBuildAnd(B, hi, cg_kint(ti, 0x7fff), "");
    /* Exponent and mantissa shifted into float position read as a float 2^112 too
     * small; one exact multiply fixes that for normals and subnormals alike. */
    LLVMValueRef fl = LLVMBuildBitCast(B, LLVMBuildShl(B, em, cg_kint(ti, 13), ""), tf, "");
    fl = LLVMBuildFMul(B, fl, cg_kflt(tf, 0x1p112), "");
    LLVMValueRef bits = LLVMBuildBitCast(B, fl, ti, "");
    LLVMValueRef special = LLVMBuildOr(B, cg_kint(ti, 0x7f800000),
                                       LLVMBuildShl(B, LLVMBuildAnd(B, em, cg_kint(ti, 0x3ff), ""), cg_kint(ti, 13), ""), "");
    bits = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntUGE, em, cg_kint(ti, 0x7c00), ""), special, bits, "");
    return LLVMBuildBitCast(B, LLVMBuildOr(B, bits, sign, ""), tf, "");
}

static LLVMValueRef emit_f32_to_bf16(Cg *g, LLVMValueRef x)
{
    LLVMBuilderRef B = g->B;
    LLVMTypeRef ti = shaped(LLVMTypeOf(x), g->ti32);
    LLVMValueRef xi = LLVMBuildBitCast(B, x, ti, "");
    LLVMValueRef hi = LLVMBuildLShr(B, xi, cg_kint(ti, 16), "");
    LLVMValueRef lsb = LLVMBuildAnd(B, hi, cg_kint(ti, 1), "");
    LLVMValueRef r = LLVMBuildLShr(B, LLVMBuildAdd(B, LLVMBuildAdd(B, xi, cg_kint(ti, 0x7fff), ""), lsb, ""), cg_kint(ti, 16), "");
    LLVMValueRef nan = LLVMBuildICmp(B, LLVMIntUGT, LLVMBuildAnd(B, xi, cg_kint(ti, 0x7fffffff), ""), cg_kint(ti, 0x7f800000), "");
    r = LLVMBuildSelect(B, nan, LLVMBuildOr(B, hi, cg_kint(ti, 0x40), ""), r, "");
    return LLVMBuildTrunc(B, r, shaped(ti, g->ti16), "");
}

static LLVMValueRef emit_bf16_to_f32(Cg *g, LLVMValueRef h)
{
    LLVMTypeRef ti = shaped(LLVMTypeOf(h), g->ti32);
    LLVMValueRef x = LLVMBuildShl(g->B, LLVMBuildZExt(g->B, h, ti, ""), cg_kint(ti, 16), "");
    return LLVMBuildBitCast(g->B, x, shaped(ti, g->tf32), "");
}

/* The bf16 bits v was widened from (emit_bf16_to_f32's bitcast(zext(h) << 16)), or
 * NULL.  Narrowing such a value back rounds nothing: a copy of a bf16 buffer into
 * another (a packed panel, `f32(A[..])` stored to a bf16 copy) stores the bits as
 * they were instead of some 30 instructions of rounding a vector. */
static LLVMValueRef widened_bf16(LLVMValueRef v)
{
    if (!LLVMIsABitCastInst(v))
        return NULL;
    LLVMValueRef s = LLVMGetOperand(v, 0);
    if (!LLVMIsAInstruction(s) || LLVMGetInstructionOpcode(s) != LLVMShl)
        return NULL;
    LLVMValueRef z = LLVMGetOperand(s, 0), c = LLVMGetOperand(s, 1);
    if (!LLVMIsAZExtInst(z))
        return NULL;
    if (LLVMIsAConstantDataVector(c) || LLVMIsAConstantVector(c))
        c = LLVMGetAggregateElement(c, 0);
    if (!c || !LLVMIsAConstantInt(c) || LLVMConstIntGetZExtValue(c) != 16)
        return NULL;
    LLVMValueRef h = LLVMGetOperand(z, 0);
    LLVMTypeRef ht = LLVMTypeOf(h);
    if (LLVMGetTypeKind(ht) == LLVMVectorTypeKind)
        ht = LLVMGetElementType(ht);
    return LLVMGetTypeKind(ht) == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(ht) == 16 ? h : NULL;
}

/* Rounds an f32 value to f16 or bf16 precision, staying in f32. */
static LLVMValueRef round_half(Cg *g, LLVMValueRef x, DType t)
{
    if (t == DT_BF16)
        return widened_bf16(x) ? x : emit_bf16_to_f32(g, emit_f32_to_bf16(g, x));
    if (g->t->native_half) {
        LLVMValueRef h = LLVMBuildFPTrunc(g->B, x, shaped(LLVMTypeOf(x), g->thalf), "");
        return LLVMBuildFPExt(g->B, h, LLVMTypeOf(x), "");
    }
    return emit_f16_to_f32(g, emit_f32_to_f16(g, x));
}

LLVMValueRef cg_from_storage(Cg *g, LLVMValueRef raw, DType t)
{
    switch (t) {
    case DT_F16:
        if (g->t->native_half)
            return LLVMBuildFPExt(g->B, raw, shaped(LLVMTypeOf(raw), g->tf32), "");
        return emit_f16_to_f32(g, raw);
    case DT_BF16: return emit_bf16_to_f32(g, raw);
    case DT_BOOL: return LLVMBuildICmp(g->B, LLVMIntNE, raw, cg_kint(LLVMTypeOf(raw), 0), "");
    default: return raw;
    }
}

LLVMValueRef cg_to_storage(Cg *g, LLVMValueRef v, DType t)
{
    LLVMValueRef h;
    if (t == DT_BF16 && (h = widened_bf16(v)))
        return h;
    switch (t) {
    case DT_F16:
        if (g->t->native_half)
            return LLVMBuildFPTrunc(g->B, v, shaped(LLVMTypeOf(v), g->thalf), "");
        return emit_f32_to_f16(g, v);
    case DT_BF16: return emit_f32_to_bf16(g, v);
    case DT_BOOL: return LLVMBuildZExt(g->B, v, shaped(LLVMTypeOf(v), g->ti8), "");
    default: return v;
    }
}

/* Converts a compute-type value of dtype `from` to dtype `to` (any shape), with the
 * interpreter's semantics: float -> i32 truncates and saturates, narrowing to f16 or
 * bf16 rounds to nearest even. */
LLVMValueRef cg_conv(Cg *g, LLVMValueRef v, DType from, DType to)
{
    if (from == to)
        return v;
    LLVMBuilderRef B = g->B;
    LLVMTypeRef ty = LLVMTypeOf(v), dst = shaped(ty, cg_cty(g, to));
    bool ff = dtype_is_float(from), tf = dtype_is_float(to);
    if (ff && tf) {
        LLVMValueRef r = v;
        if (cg_cty(g, from) != cg_cty(g, to))
            r = cg_cty(g, to) == g->tf64 ? LLVMBuildFPExt(B, v, dst, "") : LLVMBuildFPTrunc(B, v, dst, "");
        if (to == DT_F16 || to == DT_BF16)
            r = round_half(g, r, to);
        return r;
    }
    if (!ff && !tf) {
        if (to == DT_BOOL)
            return LLVMBuildICmp(B, LLVMIntNE, v, cg_kint(ty, 0), "");
        if (from == DT_BOOL)
            return LLVMBuildZExt(B, v, dst, "");
        if (from == DT_I32 && to == DT_I64)
            return LLVMBuildSExt(B, v, dst, "");
        if (from == DT_I64 && to == DT_I32) {
            LLVMValueRef c = cg_intr2(g, "llvm.smin", v, cg_kint(ty, INT32_MAX));
            c = cg_intr2(g, "llvm.smax", c, cg_kint(ty, INT32_MIN));
            return LLVMBuildTrunc(B, c, dst, "");
        }
        return v;
    }
    if (ff) {
        if (to == DT_BOOL)
            return LLVMBuildFCmp(B, LLVMRealUNE, v, cg_kflt(ty, 0), "");
        LLVMTypeRef ov[2] = {dst, ty};
        return cg_intr(g, "llvm.fptosi.sat", ov, 2, &v, 1);
    }
    LLVMValueRef r = from == DT_BOOL ? LLVMBuildUIToFP(B, v, dst, "") : LLVMBuildSIToFP(B, v, dst, "");
    if (to == DT_F16 || to == DT_BF16)
        r = round_half(g, r, to);
    return r;
}

/* Whether cg_conv(from -> to) leaves the value unchanged (then a multiply in `from`
 * may be fused with an add in `to`). */
bool cg_conv_exact(DType from, DType to)
{
    return from == to || (to == DT_F32 && (from == DT_F16 || from == DT_BF16)) ||
           (to == DT_F64 && dtype_is_float(from));
}

/* ---- arithmetic ---- */

/* a*b + c, fused where the target has the instruction.  llvm.fma on a machine without
 * one would become a slow libm call; llvm.fmuladd lets the back end split it there. */
LLVMValueRef cg_fmadd(Cg *g, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c)
{
    LLVMValueRef args[3] = {a, b, c};
    return cg_intr_n(g, g->t->fma ? "llvm.fma" : "llvm.fmuladd", args, 3);
}

/* Integer floor division / modulo (ir.h semantics).  Division by zero yields 0
 * (the interpreter reports it; generated code must not trap), and x / -1 is done
 * as a negation so INT_MIN / -1 cannot trap either. */
static LLVMValueRef int_divmod(Cg *g, LLVMValueRef a, LLVMValueRef b, bool mod)
{
    LLVMBuilderRef B = g->B;
    LLVMTypeRef ty = LLVMTypeOf(a);
    LLVMValueRef zero = cg_kint(ty, 0), one = cg_kint(ty, 1), m1 = cg_kint(ty, -1);
    LLVMValueRef bz = LLVMBuildICmp(B, LLVMIntEQ, b, zero, "");
    LLVMValueRef bm1 = LLVMBuildICmp(B, LLVMIntEQ, b, m1, "");
    LLVMValueRef bs = LLVMBuildSelect(B, LLVMBuildOr(B, bz, bm1, ""), one, b, "");
    LLVMValueRef q = LLVMBuildSDiv(B, a, bs, "");
    LLVMValueRef r = LLVMBuildSRem(B, a, bs, "");
    /* A nonzero remainder whose sign differs from the divisor's: round down. */
    LLVMValueRef adj = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntNE, r, zero, ""),
                                    LLVMBuildICmp(B, LLVMIntSLT, LLVMBuildXor(B, r, bs, ""), zero, ""), "");
    LLVMValueRef res;
    if (mod) {
        res = LLVMBuildSelect(B, adj, LLVMBuildAdd(B, r, bs, ""), r, "");
    } else {
        res = LLVMBuildSub(B, q, LLVMBuildZExt(B, adj, ty, ""), "");
        res = LLVMBuildSelect(B, bm1, LLVMBuildSub(B, zero, a, ""), res, "");
    }
    return LLVMBuildSelect(B, bz, zero, res, "");
}

/* Float modulo as the interpreter defines it: a - b*floor(a/b). */
static LLVMValueRef flt_mod(Cg *g, LLVMValueRef a, LLVMValueRef b)
{
    LLVMValueRef q = cg_intr1(g, "llvm.floor", LLVMBuildFDiv(g->B, a, b, ""));
    return LLVMBuildFSub(g->B, a, LLVMBuildFMul(g->B, b, q, ""), "");
}

/* Binary arithmetic on compute-type values of dtype t (same shape). */
LLVMValueRef cg_arith(Cg *g, ExprKind op, DType t, LLVMValueRef a, LLVMValueRef b)
{
    LLVMBuilderRef B = g->B;
    bool fl = dtype_is_float(t);
    bool idx = t == DT_I64; /* index arithmetic: cannot overflow in a valid kernel */
    switch (op) {
    case IE_ADD: return fl ? LLVMBuildFAdd(B, a, b, "") : idx ? LLVMBuildNSWAdd(B, a, b, "") : LLVMBuildAdd(B, a, b, "");
    case IE_SUB: return fl ? LLVMBuildFSub(B, a, b, "") : idx ? LLVMBuildNSWSub(B, a, b, "") : LLVMBuildSub(B, a, b, "");
    case IE_MUL: return fl ? LLVMBuildFMul(B, a, b, "") : idx ? LLVMBuildNSWMul(B, a, b, "") : LLVMBuildMul(B, a, b, "");
    case IE_DIV: return fl ? LLVMBuildFDiv(B, a, b, "") : int_divmod(g, a, b, false);
    case IE_MOD: return fl ? flt_mod(g, a, b) : int_divmod(g, a, b, true);
    case IE_MAX:
        if (t == DT_BOOL)
            return LLVMBuildOr(B, a, b, "");
        /* NaN propagates, as in the interpreter: a poisoned (unwritten) element
         * must not vanish in a max. */
        return cg_intr2(g, fl ? "llvm.maximum" : "llvm.smax", a, b);
    case IE_MIN:
        if (t == DT_BOOL)
            return LLVMBuildAnd(B, a, b, "");
        return cg_intr2(g, fl ? "llvm.minimum" : "llvm.smin", a, b);
    default: die("arith: %s", ir_expr_name(op));
    }
}

/* ---- index analysis: the affine forms of ir/arith.h and ir/cpu.h ---- */

bool cg_aff_add(ArAff *r, const ArAff *a, int64_t scale)
{
    return ar_aff_add(r, a, scale);
}

bool cg_affine(const Cg *g, const Expr *e, ArAff *out)
{
    return ar_aff_of(g->k, e, out);
}

bool cg_const_extent(const Cg *g, const Expr *lo, const Expr *hi, int64_t *ext)
{
    return cpu_const_extent(g->k, lo, hi, ext);
}

bool cg_stride(const Cg *g, const Expr *e, const Var *v, int64_t *s)
{
    return cpu_stride(g->k, e, v, s);
}


AccKind cg_access_kind(const Cg *g, Expr *const *idx, int rank, const Var *v)
{
    return cpu_access_kind(g->k, idx, rank, v);
}
