/* Translation of the loop-nest IR into LLVM IR.
 *
 * Shape of the output, for a kernel `gemm`:
 *   void gemm(ptr bufs)              loads the buffer pointers and calls gemm.body
 *   void gemm.body(ptr noalias align 64 dereferenceable(n) %A, ...)   the loop nest
 *   void gemm.parN(ptr ctx, i64 lo, i64 hi) and gemm.parN.body(...)   one pair per
 *        parallel loop: the pool calls the first with a chunk of iterations, which
 *        unpacks the context (buffer pointers, values of enclosing loop variables)
 *        and calls the second, whose pointer arguments are again noalias.
 * All but gemm are internal, so several kernels can share one object or library.
 *
 * Values are carried in their compute type (f16 and bf16 as float, bool as i1) and
 * converted at loads and stores.  Inside a LOOP_VECTOR loop the translation works on
 * LLVM vectors of the loop's width: the loop variable is a vector, and every value is
 * either uniform (a scalar, widened when it meets a vector) or a vector.  Accesses
 * whose last index moves by one per lane become vector loads and stores, other
 * varying loads become gathers, and guards that depend on the lane become masks.
 * A vector loop whose body cannot be translated so (see vector_check) is emitted as
 * a scalar loop with a warning.  Unroll loops are replicated with the variable a
 * constant; parallel loops are outlined as described above. */
#include "lang/checked.h"
#include "cg_llvm_int.h"
#include "vmath.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/DebugInfo.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VECTOR_WIDTH 256
#define MAX_UNROLL 4096
#define MAX_HOISTED 64

typedef struct Val {
    LLVMValueRef v;
    bool vec;                /* a vector of the enclosing vector loop's width */
} Val;

/* Private (MEM_LOCAL) buffers: where they are allocated. */
typedef struct Home {
    bool used;
    PtrVec path;             /* common prefix of the parallel loops around every use */
} Home;

typedef struct Cg {
    const Kernel *k;
    const CgTarget *t;
    Diags *d;
    bool failed;
    bool lean;               /* the schedule made loops vector or unroll: see emit_loop */
    LLVMContextRef C;
    LLVMModuleRef M;
    LLVMBuilderRef B;
    LLVMTypeRef tvoid, ti1, ti8, ti16, ti32, ti64, tf32, tf64, thalf, tptr;
    int64_t *elems;          /* elements per buffer */
    int64_t **dims;          /* extent per buffer and dimension */
    bool *priv;              /* allocated by the generated code (MEM_LOCAL temporaries) */
    const Node **home;       /* for priv buffers: owning parallel loop, NULL = kernel */
    const Node **fresh;      /* for small priv buffers: loop whose iterations start it afresh */
    LLVMValueRef *scope, *others; /* per buffer: !alias.scope and !noalias lists */
    unsigned md_scope, md_noalias;
    int npar;                /* parallel loops outlined so far */
    LLVMTypeRef pfor_ty;
    LLVMValueRef pfor;       /* perfc_parallel_for, declared on first use */
} Cg;

/* Element offsets are emitted as r + c: c a constant, r a sum of loop variables times
 * their strides built once per loop and cached (Sum); the accesses of one basic
 * block share addresses, loaded values and splats, and stores to one element are
 * kept back until the block ends (Region).  See "---- addresses ----". */
#define AFF_TERMS 12

typedef struct Term {
    LLVMValueRef v;          /* a variable's value (i64) */
    int64_t k;               /* its coefficient */
    LLVMBasicBlockRef bb;    /* where the variable was bound */
    int seq;                 /* binding order: a later binding is nested in earlier ones */
} Term;

typedef struct Sum {
    int n;
    Term t[AFF_TERMS];
    LLVMValueRef sum;        /* t[0].k*t[0].v + ..., at the end of t[n-1].bb */
} Sum;

typedef struct Slot {
    const Buffer *b;
    LLVMValueRef r;          /* runtime part of the element offset (NULL: none) */
    int64_t c;               /* constant part */
    int w;                   /* vector lanes, 0 for a scalar */
    LLVMValueRef v;          /* loads: value in compute type; stores: in storage type */
    LLVMValueRef p;          /* address (pending stores) */
} Slot;

typedef struct Region {
    LLVMBasicBlockRef bb;    /* the block the entries below belong to */
    Slot *loads, *stores, *ptrs;  /* known values, pending stores (in order), addresses */
    int nloads, nstores, nptrs, caploads, capstores, capptrs;
    LLVMValueRef *splat_of, *splat; /* scalar -> its splat */
    int nsplats, capsplats;
} Region;

typedef struct Fn {
    Cg *g;
    LLVMValueRef fn;
    LLVMBasicBlockRef entry; /* allocas only; ends with a branch to the code */
    LLVMValueRef *bufp;      /* base pointer per buffer (NULL: not available here) */
    Val *vars;               /* binding per Var id (v == NULL: unbound) */
    LLVMBasicBlockRef *vbb;  /* per Var id: the block where it was bound */
    int *vseq;               /* per Var id: binding order */
    int64_t *vmin, *vmax;    /* per Var id: its range when known (vmin <= vmax) */
    int seq;
    Sum *sums;               /* hoisted offset sums */
    int nsums, capsums;
    Region rg;
    const Node *owner;       /* the parallel loop this function runs, NULL = kernel */
    /* Inside a vector loop: */
    const Var *vvar;
    int vw;
    LLVMValueRef vlo;        /* the loop variable's first lane (scalar i64) */
    LLVMValueRef mask;       /* lanes enabled by enclosing guards; NULL = all */
    bool ordered;            /* a serial loop vectorised here: float sums keep their order */
    /* Guards proven to hold where they are being emitted (the fast version of a
     * loop body, see emit_versioned): emitted as their bodies. */
    const Node *assume[MAX_HOISTED];
    int nassume;
} Fn;

static void emit_list(Fn *f, const NodeList *l);
static bool cg_list_padded(const NodeList *l);

/* ---- diagnostics ---- */

static void cg_error(Cg *g, Span sp, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void cg_error(Cg *g, Span sp, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_vreport(g->d, DIAG_ERROR, sp, fmt, ap);
    va_end(ap);
    g->failed = true;
}

/* ---- types and constants ---- */

static LLVMTypeRef cty(Cg *g, DType t)
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
static LLVMTypeRef sty(Cg *g, DType t)
{
    switch (t) {
    case DT_F16: return g->t->native_half ? g->thalf : g->ti16;
    case DT_BF16: return g->ti16;
    case DT_BOOL: return g->ti8;
    default: return cty(g, t);
    }
}

static bool is_vty(LLVMTypeRef t)
{
    return LLVMGetTypeKind(t) == LLVMVectorTypeKind;
}

/* The scalar type s in the shape (scalar or vector) of `like`. */
static LLVMTypeRef shaped(LLVMTypeRef like, LLVMTypeRef s)
{
    return is_vty(like) ? LLVMVectorType(s, LLVMGetVectorSize(like)) : s;
}

static LLVMValueRef splat_const(LLVMValueRef c, unsigned n)
{
    LLVMValueRef v[MAX_VECTOR_WIDTH];
    for (unsigned i = 0; i < n; i++)
        v[i] = c;
    return LLVMConstVector(v, n);
}

/* Integer / float constants shaped like type ty. */
static LLVMValueRef kint(LLVMTypeRef ty, int64_t x)
{
    if (is_vty(ty))
        return splat_const(LLVMConstInt(LLVMGetElementType(ty), (unsigned long long)x, 1), LLVMGetVectorSize(ty));
    return LLVMConstInt(ty, (unsigned long long)x, 1);
}

static LLVMValueRef kflt(LLVMTypeRef ty, double x)
{
    if (is_vty(ty))
        return splat_const(LLVMConstReal(LLVMGetElementType(ty), x), LLVMGetVectorSize(ty));
    return LLVMConstReal(ty, x);
}

static LLVMValueRef ci64(Cg *g, int64_t x)
{
    return LLVMConstInt(g->ti64, (unsigned long long)x, 1);
}

static LLVMValueRef ci32(Cg *g, int32_t x)
{
    return LLVMConstInt(g->ti32, (unsigned long long)(int64_t)x, 1);
}

/* A constant of dtype t holding x, in compute type. */
static LLVMValueRef kdtype(Cg *g, DType t, double x)
{
    if (dtype_is_float(t))
        return LLVMConstReal(cty(g, t), dtype_round(x, t));
    if (t == DT_BOOL)
        return LLVMConstInt(g->ti1, x != 0, 0);
    /* an integer from a float (a pad value): saturate, as a double outside the
     * int64 range has no defined conversion */
    int64_t v = x != x ? 0 : x >= 0x1p63 ? INT64_MAX : x < -0x1p63 ? INT64_MIN : (int64_t)x;
    return LLVMConstInt(cty(g, t), (unsigned long long)v, 1);
}

/* ---- calls ---- */

static LLVMValueRef intr(Cg *g, const char *name, LLVMTypeRef *ov, int nov, LLVMValueRef *args, int nargs)
{
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    if (!id)
        die("LLVM has no intrinsic %s", name);
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(g->M, id, ov, (size_t)nov);
    LLVMTypeRef fty = LLVMIntrinsicGetType(g->C, id, ov, (size_t)nov);
    return LLVMBuildCall2(g->B, fty, fn, args, (unsigned)nargs, "");
}

/* Overloaded on the type of its operands (sqrt, fabs, maxnum, fma, smax, ...). */
static LLVMValueRef intr_n(Cg *g, const char *name, LLVMValueRef *args, int n)
{
    LLVMTypeRef ty = LLVMTypeOf(args[0]);
    return intr(g, name, &ty, 1, args, n);
}

static LLVMValueRef intr1(Cg *g, const char *name, LLVMValueRef a)
{
    return intr_n(g, name, &a, 1);
}

static LLVMValueRef intr2(Cg *g, const char *name, LLVMValueRef a, LLVMValueRef b)
{
    LLVMValueRef args[2] = {a, b};
    return intr_n(g, name, args, 2);
}

static void add_fn_attr(Cg *g, LLVMValueRef fn, const char *kind, uint64_t val)
{
    unsigned id = LLVMGetEnumAttributeKindForName(kind, strlen(kind));
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(g->C, id, val));
}

static void add_str_attr(Cg *g, LLVMValueRef fn, const char *kind, const char *val)
{
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateStringAttribute(g->C, kind, (unsigned)strlen(kind), val, (unsigned)strlen(val)));
}

/* A libm function of one float argument (tanhf, erf, ...), applied lane by lane to a
 * vector.  These never set errno, so they are marked as touching no memory. */
static LLVMValueRef libm(Cg *g, const char *name, LLVMValueRef x)
{
    LLVMTypeRef ty = LLVMTypeOf(x), et = is_vty(ty) ? LLVMGetElementType(ty) : ty;
    LLVMTypeRef fty = LLVMFunctionType(et, &et, 1, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(g->M, name);
    if (!fn) {
        fn = LLVMAddFunction(g->M, name, fty);
        add_fn_attr(g, fn, "nounwind", 0);
        add_fn_attr(g, fn, "willreturn", 0);
        add_fn_attr(g, fn, "memory", 0);
    }
    if (!is_vty(ty))
        return LLVMBuildCall2(g->B, fty, fn, &x, 1, "");
    LLVMValueRef r = LLVMGetPoison(ty);
    for (unsigned i = 0; i < LLVMGetVectorSize(ty); i++) {
        LLVMValueRef e = LLVMBuildExtractElement(g->B, x, ci32(g, (int32_t)i), "");
        LLVMValueRef c = LLVMBuildCall2(g->B, fty, fn, &e, 1, "");
        r = LLVMBuildInsertElement(g->B, r, c, ci32(g, (int32_t)i), "");
    }
    return r;
}

/* ---- vectors ---- */

static Region *region(Fn *f);

/* s in every lane; one splat per value and block. */
static LLVMValueRef splat(Fn *f, LLVMValueRef s)
{
    Cg *g = f->g;
    if (LLVMIsConstant(s))
        return splat_const(s, (unsigned)f->vw);
    Region *r = region(f);
    for (int i = 0; i < r->nsplats; i++)
        if (r->splat_of[i] == s && LLVMGetVectorSize(LLVMTypeOf(r->splat[i])) == (unsigned)f->vw)
            return r->splat[i];
    LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(s), (unsigned)f->vw);
    LLVMValueRef ins = LLVMBuildInsertElement(g->B, LLVMGetPoison(vt), s, ci32(g, 0), "");
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

static LLVMValueRef wide(Fn *f, Val v)
{
    return v.vec ? v.v : splat(f, v.v);
}

static Val S(LLVMValueRef v)
{
    return (Val){v, false};
}

/* ---- f16 / bf16 conversions ---- */

static LLVMValueRef emit_f32_to_f16(Cg *g, LLVMValueRef x)
{
    LLVMBuilderRef B = g->B;
    LLVMTypeRef ti = shaped(LLVMTypeOf(x), g->ti32), tf = LLVMTypeOf(x);
    LLVMValueRef xi = LLVMBuildBitCast(B, x, ti, "");
    LLVMValueRef sign = LLVMBuildAnd(B, LLVMBuildLShr(B, xi, kint(ti, 16), ""), kint(ti, 0x8000), "");
    LLVMValueRef a = LLVMBuildAnd(B, xi, kint(ti, 0x7fffffff), "");
    /* Normal halves: rebias the exponent (127 -> 15) and round the 13 dropped bits
     * to nearest even; a carry into the exponent is the right answer. */
    LLVMValueRef lsb = LLVMBuildAnd(B, LLVMBuildLShr(B, a, kint(ti, 13), ""), kint(ti, 1), "");
    LLVMValueRef nrm = LLVMBuildAdd(B, LLVMBuildSub(B, a, kint(ti, 0x38000000), ""), kint(ti, 0xfff), "");
    nrm = LLVMBuildLShr(B, LLVMBuildAdd(B, nrm, lsb, ""), kint(ti, 13), "");
    /* Subnormal halves: adding 0.5 leaves a float whose last bit is worth 2^-24,
     * the half subnormal step, so the hardware rounds for us. */
    LLVMValueRef af = LLVMBuildBitCast(B, a, tf, "");
    LLVMValueRef sub = LLVMBuildBitCast(B, LLVMBuildFAdd(B, af, kflt(tf, 0.5), ""), ti, "");
    sub = LLVMBuildSub(B, sub, kint(ti, 0x3f000000), "");
    LLVMValueRef r = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntULT, a, kint(ti, 0x38800000), ""), sub, nrm, "");
    r = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntUGE, a, kint(ti, 0x47800000), ""), kint(ti, 0x7c00), r, "");
    r = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntUGT, a, kint(ti, 0x7f800000), ""), kint(ti, 0x7e00), r, "");
    r = LLVMBuildOr(B, r, sign, "");
    return LLVMBuildTrunc(B, r, shaped(ti, g->ti16), "");
}

static LLVMValueRef emit_f16_to_f32(Cg *g, LLVMValueRef h)
{
    LLVMBuilderRef B = g->B;
    LLVMTypeRef ti = shaped(LLVMTypeOf(h), g->ti32), tf = shaped(ti, g->tf32);
    LLVMValueRef hi = LLVMBuildZExt(B, h, ti, "");
    LLVMValueRef sign = LLVMBuildShl(B, LLVMBuildAnd(B, hi, kint(ti, 0x8000), ""), kint(ti, 16), "");
    LLVMValueRef em = LLVMBuildAnd(B, hi, kint(ti, 0x7fff), "");
    /* Exponent and mantissa shifted into float position read as a float 2^112 too
     * small; one exact multiply fixes that for normals and subnormals alike. */
    LLVMValueRef fl = LLVMBuildBitCast(B, LLVMBuildShl(B, em, kint(ti, 13), ""), tf, "");
    fl = LLVMBuildFMul(B, fl, kflt(tf, 0x1p112), "");
    LLVMValueRef bits = LLVMBuildBitCast(B, fl, ti, "");
    LLVMValueRef special = LLVMBuildOr(B, kint(ti, 0x7f800000),
                                       LLVMBuildShl(B, LLVMBuildAnd(B, em, kint(ti, 0x3ff), ""), kint(ti, 13), ""), "");
    bits = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntUGE, em, kint(ti, 0x7c00), ""), special, bits, "");
    return LLVMBuildBitCast(B, LLVMBuildOr(B, bits, sign, ""), tf, "");
}

static LLVMValueRef emit_f32_to_bf16(Cg *g, LLVMValueRef x)
{
    LLVMBuilderRef B = g->B;
    LLVMTypeRef ti = shaped(LLVMTypeOf(x), g->ti32);
    LLVMValueRef xi = LLVMBuildBitCast(B, x, ti, "");
    LLVMValueRef hi = LLVMBuildLShr(B, xi, kint(ti, 16), "");
    LLVMValueRef lsb = LLVMBuildAnd(B, hi, kint(ti, 1), "");
    LLVMValueRef r = LLVMBuildLShr(B, LLVMBuildAdd(B, LLVMBuildAdd(B, xi, kint(ti, 0x7fff), ""), lsb, ""), kint(ti, 16), "");
    LLVMValueRef nan = LLVMBuildICmp(B, LLVMIntUGT, LLVMBuildAnd(B, xi, kint(ti, 0x7fffffff), ""), kint(ti, 0x7f800000), "");
    r = LLVMBuildSelect(B, nan, LLVMBuildOr(B, hi, kint(ti, 0x40), ""), r, "");
    return LLVMBuildTrunc(B, r, shaped(ti, g->ti16), "");
}

static LLVMValueRef emit_bf16_to_f32(Cg *g, LLVMValueRef h)
{
    LLVMTypeRef ti = shaped(LLVMTypeOf(h), g->ti32);
    LLVMValueRef x = LLVMBuildShl(g->B, LLVMBuildZExt(g->B, h, ti, ""), kint(ti, 16), "");
    return LLVMBuildBitCast(g->B, x, shaped(ti, g->tf32), "");
}

/* Rounds an f32 value to f16 or bf16 precision, staying in f32. */
static LLVMValueRef round_half(Cg *g, LLVMValueRef x, DType t)
{
    if (t == DT_BF16)
        return emit_bf16_to_f32(g, emit_f32_to_bf16(g, x));
    if (g->t->native_half) {
        LLVMValueRef h = LLVMBuildFPTrunc(g->B, x, shaped(LLVMTypeOf(x), g->thalf), "");
        return LLVMBuildFPExt(g->B, h, LLVMTypeOf(x), "");
    }
    return emit_f16_to_f32(g, emit_f32_to_f16(g, x));
}

static LLVMValueRef from_storage(Cg *g, LLVMValueRef raw, DType t)
{
    switch (t) {
    case DT_F16:
        if (g->t->native_half)
            return LLVMBuildFPExt(g->B, raw, shaped(LLVMTypeOf(raw), g->tf32), "");
        return emit_f16_to_f32(g, raw);
    case DT_BF16: return emit_bf16_to_f32(g, raw);
    case DT_BOOL: return LLVMBuildICmp(g->B, LLVMIntNE, raw, kint(LLVMTypeOf(raw), 0), "");
    default: return raw;
    }
}

static LLVMValueRef to_storage(Cg *g, LLVMValueRef v, DType t)
{
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
static LLVMValueRef conv(Cg *g, LLVMValueRef v, DType from, DType to)
{
    if (from == to)
        return v;
    LLVMBuilderRef B = g->B;
    LLVMTypeRef ty = LLVMTypeOf(v), dst = shaped(ty, cty(g, to));
    bool ff = dtype_is_float(from), tf = dtype_is_float(to);
    if (ff && tf) {
        LLVMValueRef r = v;
        if (cty(g, from) != cty(g, to))
            r = cty(g, to) == g->tf64 ? LLVMBuildFPExt(B, v, dst, "") : LLVMBuildFPTrunc(B, v, dst, "");
        if (to == DT_F16 || to == DT_BF16)
            r = round_half(g, r, to);
        return r;
    }
    if (!ff && !tf) {
        if (to == DT_BOOL)
            return LLVMBuildICmp(B, LLVMIntNE, v, kint(ty, 0), "");
        if (from == DT_BOOL)
            return LLVMBuildZExt(B, v, dst, "");
        if (from == DT_I32 && to == DT_I64)
            return LLVMBuildSExt(B, v, dst, "");
        if (from == DT_I64 && to == DT_I32) {
            LLVMValueRef c = intr2(g, "llvm.smin", v, kint(ty, INT32_MAX));
            c = intr2(g, "llvm.smax", c, kint(ty, INT32_MIN));
            return LLVMBuildTrunc(B, c, dst, "");
        }
        return v;
    }
    if (ff) {
        if (to == DT_BOOL)
            return LLVMBuildFCmp(B, LLVMRealUNE, v, kflt(ty, 0), "");
        LLVMTypeRef ov[2] = {dst, ty};
        return intr(g, "llvm.fptosi.sat", ov, 2, &v, 1);
    }
    LLVMValueRef r = from == DT_BOOL ? LLVMBuildUIToFP(B, v, dst, "") : LLVMBuildSIToFP(B, v, dst, "");
    if (to == DT_F16 || to == DT_BF16)
        r = round_half(g, r, to);
    return r;
}

/* Whether conv(from -> to) leaves the value unchanged (then a multiply in `from`
 * may be fused with an add in `to`). */
static bool conv_exact(DType from, DType to)
{
    return from == to || (to == DT_F32 && (from == DT_F16 || from == DT_BF16)) ||
           (to == DT_F64 && dtype_is_float(from));
}

/* ---- arithmetic ---- */

/* a*b + c, fused where the target has the instruction.  llvm.fma on a machine without
 * one would become a slow libm call; llvm.fmuladd lets the back end split it there. */
static LLVMValueRef fmadd(Cg *g, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c)
{
    LLVMValueRef args[3] = {a, b, c};
    return intr_n(g, g->t->fma ? "llvm.fma" : "llvm.fmuladd", args, 3);
}

/* The transcendental functions, inline in the operand's shape (codegen/llvm/vmath.c). */
static VmCtx vm_ctx(Cg *g)
{
    return (VmCtx){g->C, g->M, g->B, g->t->fma};
}

/* Integer floor division / modulo (ir.h semantics).  Division by zero yields 0
 * (the interpreter reports it; generated code must not trap), and x / -1 is done
 * as a negation so INT_MIN / -1 cannot trap either. */
static LLVMValueRef int_divmod(Cg *g, LLVMValueRef a, LLVMValueRef b, bool mod)
{
    LLVMBuilderRef B = g->B;
    LLVMTypeRef ty = LLVMTypeOf(a);
    LLVMValueRef zero = kint(ty, 0), one = kint(ty, 1), m1 = kint(ty, -1);
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
    LLVMValueRef q = intr1(g, "llvm.floor", LLVMBuildFDiv(g->B, a, b, ""));
    return LLVMBuildFSub(g->B, a, LLVMBuildFMul(g->B, b, q, ""), "");
}

/* Binary arithmetic on compute-type values of dtype t (same shape). */
static LLVMValueRef arith(Cg *g, ExprKind op, DType t, LLVMValueRef a, LLVMValueRef b)
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
        return intr2(g, fl ? "llvm.maximum" : "llvm.smax", a, b);
    case IE_MIN:
        if (t == DT_BOOL)
            return LLVMBuildAnd(B, a, b, "");
        return intr2(g, fl ? "llvm.minimum" : "llvm.smin", a, b);
    default: die("arith: %s", ir_expr_name(op));
    }
}

/* ---- index analysis ---- */

/* Affine form of an integer expression over loop variables, for constant extents. */
typedef struct Aff {
    int64_t c;
    int n;
    int var[AFF_TERMS];
    int64_t k[AFF_TERMS];
} Aff;

/* r += a * scale; false (r unusable) when a coefficient overflows 64 bits: the
 * expression is then treated as not affine, and emitted the general way. */
static bool aff_add(Aff *r, const Aff *a, int64_t scale)
{
    int64_t t;
    if (!ck_mul(a->c, scale, &t) || !ck_add(r->c, t, &r->c))
        return false;
    for (int i = 0; i < a->n; i++) {
        int j;
        for (j = 0; j < r->n && r->var[j] != a->var[i]; j++)
            ;
        if (j == r->n) {
            if (r->n == AFF_TERMS)
                return false;
            r->var[r->n] = a->var[i];
            r->k[r->n++] = 0;
        }
        if (!ck_mul(a->k[i], scale, &t) || !ck_add(r->k[j], t, &r->k[j]))
            return false;
    }
    return true;
}

static bool affine(const Cg *g, const Expr *e, Aff *out)
{
    memset(out, 0, sizeof *out);
    Aff a, b;
    switch (e->kind) {
    case IE_INT: out->c = e->u.i; return true;
    case IE_PARAM: out->c = g->k->params[e->u.param].value; return true;
    case IE_VAR:
        out->n = 1;
        out->var[0] = e->u.var->id;
        out->k[0] = 1;
        return true;
    case IE_CAST:
        return !dtype_is_float(e->dtype) && e->dtype != DT_BOOL && !dtype_is_float(e->args[0]->dtype) &&
               affine(g, e->args[0], out);
    case IE_NEG: return affine(g, e->args[0], &a) && aff_add(out, &a, -1);
    case IE_ADD:
    case IE_SUB:
        return affine(g, e->args[0], &a) && affine(g, e->args[1], &b) && aff_add(out, &a, 1) &&
               aff_add(out, &b, e->kind == IE_ADD ? 1 : -1);
    case IE_MUL:
        if (!affine(g, e->args[0], &a) || !affine(g, e->args[1], &b))
            return false;
        if (a.n == 0)
            return aff_add(out, &b, a.c);
        if (b.n == 0)
            return aff_add(out, &a, b.c);
        return false;
    case IE_DIV:
    case IE_MOD:
        /* Constant operands only (sizes such as (H + 2*P - R)/U + 1): floor division
         * and modulo, as the IR defines them. */
        if (dtype_is_float(e->dtype) || !affine(g, e->args[0], &a) || !affine(g, e->args[1], &b) || a.n || b.n)
            return false;
        return e->kind == IE_DIV ? ck_floordiv(a.c, b.c, &out->c) : ck_floormod(a.c, b.c, &out->c);
    default: return false;
    }
}

/* hi - lo when it does not depend on any variable. */
static bool const_extent(const Cg *g, const Expr *lo, const Expr *hi, int64_t *ext)
{
    Aff a, b, d = {0};
    if (!affine(g, lo, &a) || !affine(g, hi, &b) || !aff_add(&d, &b, 1) || !aff_add(&d, &a, -1))
        return false;
    for (int i = 0; i < d.n; i++)
        if (d.k[i] != 0)
            return false;
    *ext = d.c;
    return true;
}

/* How an integer expression moves per lane of the vector variable v: *s = the step
 * when it is affine in v with a constant step (0: uniform); false when unknown. */
static bool stride(const Cg *g, const Expr *e, const Var *v, int64_t *s)
{
    int64_t a, b;
    Aff c;
    switch (e->kind) {
    case IE_INT:
    case IE_FLT:
    case IE_PARAM: *s = 0; return true;
    case IE_VAR: *s = e->u.var == v; return true;
    case IE_LOAD:
        for (int i = 0; i < e->u.load.buf->rank; i++)
            if (!stride(g, e->u.load.idx[i], v, &a) || a != 0)
                return false;
        *s = 0;
        return true;
    case IE_NEG:
        if (!stride(g, e->args[0], v, &a))
            return false;
        *s = -a;
        return true;
    case IE_CAST:
        if (!stride(g, e->args[0], v, &a))
            return false;
        if (a != 0 && (dtype_is_float(e->dtype) || e->dtype == DT_BOOL || dtype_is_float(e->args[0]->dtype)))
            return false;
        *s = a;
        return true;
    case IE_ADD:
    case IE_SUB:
        if (!stride(g, e->args[0], v, &a) || !stride(g, e->args[1], v, &b))
            return false;
        *s = e->kind == IE_ADD ? a + b : a - b;
        return true;
    case IE_MUL:
        if (!stride(g, e->args[0], v, &a) || !stride(g, e->args[1], v, &b))
            return false;
        if (a == 0 && b == 0) {
            *s = 0;
            return true;
        }
        if (a == 0 && affine(g, e->args[0], &c) && c.n == 0) {
            *s = c.c * b;
            return true;
        }
        if (b == 0 && affine(g, e->args[1], &c) && c.n == 0) {
            *s = c.c * a;
            return true;
        }
        return false;
    default:
        for (int i = 0; i < ir_expr_arity(e->kind); i++)
            if (!stride(g, e->args[i], v, &a) || a != 0)
                return false;
        *s = 0;
        return true;
    }
}

typedef enum { ACC_UNIFORM, ACC_CONTIG, ACC_OTHER } AccKind;

/* Classifies buffer index idx[0..rank) against the vector variable. */
static AccKind access_kind(const Cg *g, Expr *const *idx, int rank, const Var *v)
{
    bool uniform = true;
    for (int i = 0; i < rank; i++) {
        int64_t s;
        if (!stride(g, idx[i], v, &s))
            return ACC_OTHER;
        if (s != 0) {
            if (i != rank - 1 || s != 1)
                return ACC_OTHER;
            uniform = false;
        }
    }
    return uniform ? ACC_UNIFORM : ACC_CONTIG;
}

static bool reads_buffer(const Expr *e, const Buffer *b)
{
    if (!e)
        return false;
    if (e->kind == IE_LOAD) {
        if (e->u.load.buf == b)
            return true;
        for (int i = 0; i < e->u.load.buf->rank; i++)
            if (reads_buffer(e->u.load.idx[i], b))
                return true;
        return false;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        if (reads_buffer(e->args[i], b))
            return true;
    return false;
}

/* Whether the body of vector loop v can be translated lane-parallel; if not, why[]
 * says what stands in the way and *where points at it. */
static bool vector_check(const Cg *g, const NodeList *l, const Var *v, char *why, size_t nwhy, Span *where)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        int64_t s;
        switch (n->kind) {
        case N_LOOP:
            *where = n->span;
            if (n->u.loop.kind == LOOP_VECTOR) {
                snprintf(why, nwhy, "it contains another vector loop ('%s')", n->u.loop.var->name);
                return false;
            }
            if (n->u.loop.kind == LOOP_PARALLEL) {
                snprintf(why, nwhy, "it contains a parallel loop ('%s')", n->u.loop.var->name);
                return false;
            }
            if (!stride(g, n->u.loop.lo, v, &s) || s != 0 || !stride(g, n->u.loop.hi, v, &s) || s != 0) {
                snprintf(why, nwhy, "the bounds of inner loop '%s' depend on the vector index", n->u.loop.var->name);
                return false;
            }
            if (!vector_check(g, &n->u.loop.body, v, why, nwhy, where))
                return false;
            break;
        case N_IF:
            if (!vector_check(g, &n->u.guard.body, v, why, nwhy, where))
                return false;
            break;
        case N_PREFETCH: /* fetched once for all lanes (emit_prefetch) */
            break;
        case N_STMT: {
            const Buffer *b = n->u.stmt.buf;
            AccKind ak = access_kind(g, n->u.stmt.idx, b->rank, v);
            *where = n->span;
            if (ak == ACC_OTHER) {
                snprintf(why, nwhy, "the store to %s is not unit-stride in the vector index (no scatter)", b->name);
                return false;
            }
            if (ak == ACC_UNIFORM && n->u.stmt.op != SOP_ASSIGN && reads_buffer(n->u.stmt.value, b)) {
                snprintf(why, nwhy, "the reduction into one element of %s reads %s", b->name, b->name);
                return false;
            }
            break;
        }
        }
    }
    return true;
}

/* ---- memory ---- */

/* Row-major element offset of idx[] in buffer b (scalar or vector i64). */
static LLVMValueRef linearize(Fn *f, const Buffer *b, LLVMValueRef *idx)
{
    Cg *g = f->g;
    LLVMValueRef off = NULL;
    for (int i = 0; i < b->rank; i++) {
        LLVMValueRef x = idx[i];
        if (off) {
            LLVMTypeRef ty = LLVMTypeOf(off);
            if (is_vty(LLVMTypeOf(x)) && !is_vty(ty))
                off = splat(f, off);
            else if (!is_vty(LLVMTypeOf(x)) && is_vty(ty))
                x = splat(f, x);
            off = LLVMBuildNSWAdd(g->B, LLVMBuildNSWMul(g->B, off, kint(LLVMTypeOf(off), g->dims[b->id][i]), ""), x, "");
        } else {
            off = x;
        }
    }
    return off ? off : ci64(g, 0);
}

static LLVMValueRef gep(Fn *f, const Buffer *b, LLVMValueRef off, bool inbounds)
{
    Cg *g = f->g;
    LLVMValueRef base = f->bufp[b->id];
    if (!base)
        die("buffer %s has no pointer in this function", b->name);
    if (inbounds)
        return LLVMBuildInBoundsGEP2(g->B, sty(g, b->dtype), base, &off, 1, "");
    return LLVMBuildGEP2(g->B, sty(g, b->dtype), base, &off, 1, "");
}

static unsigned elem_align(Cg *g, DType t)
{
    (void)g;
    return (unsigned)dtype_bytes(t);
}

/* Every access to buffer b carries b's alias scope and, as noalias, the scopes of all
 * other buffers: the buffers never overlap (the calling convention), and this says so
 * to LLVM without a function whose pointer arguments are noalias. */
static LLVMValueRef tag(Cg *g, const Buffer *b, LLVMValueRef inst)
{
    LLVMSetMetadata(inst, g->md_scope, g->scope[b->id]);
    if (g->others[b->id])
        LLVMSetMetadata(inst, g->md_noalias, g->others[b->id]);
    return inst;
}

static LLVMValueRef masked_load(Fn *f, LLVMTypeRef vt, LLVMValueRef ptr, unsigned align, LLVMValueRef mask)
{
    Cg *g = f->g;
    LLVMTypeRef ov[2] = {vt, g->tptr};
    LLVMValueRef args[4] = {ptr, ci32(g, (int32_t)align), mask, LLVMConstNull(vt)};
    return intr(g, "llvm.masked.load", ov, 2, args, 4);
}

static LLVMValueRef masked_store(Fn *f, LLVMValueRef val, LLVMValueRef ptr, unsigned align, LLVMValueRef mask)
{
    Cg *g = f->g;
    LLVMTypeRef ov[2] = {LLVMTypeOf(val), g->tptr};
    LLVMValueRef args[4] = {val, ptr, ci32(g, (int32_t)align), mask};
    return intr(g, "llvm.masked.store", ov, 2, args, 4);
}

/* ---- addresses ----
 *
 * Index arithmetic used to be most of a scheduled kernel's LLVM IR: every access of
 * an unrolled register tile linearised its indices again (a multiply and an add per
 * dimension), so the 126 unrolled FMAs of conv2d came with some 3000 instructions
 * that InstCombine, GVN and IndVarSimplify then spent most of the compile time
 * folding back.  Now the element offset of an access whose indices are affine in the
 * loop variables is split into a constant c (unrolled variables are constants) and
 * r, the sum of the other variables times their strides.  r is built one term at a
 * time, each partial sum at the end of the block where its last variable was bound
 * (so it is computed once per iteration of that variable's loop, as LICM would)
 * and shared by every access with the same terms.
 *
 * Within one basic block (a Region) addresses, loaded values and splats are reused,
 * and a store is kept back until the block ends or an access that may overlap it
 * comes: an accumulator updated by nine unrolled taps is loaded once and stored
 * once.  Buffers never overlap (the noalias contract), so only accesses to the same
 * buffer interact.  region_end() is called before every terminator and every call
 * that may touch buffers; region() dies if a cache outlives its block. */

typedef struct Addr {
    LLVMValueRef r;          /* NULL: no runtime part */
    int64_t c;
} Addr;

#define GROW(p, n, cap)                                                                                                \
    do {                                                                                                               \
        if ((n) == (cap)) {                                                                                            \
            (cap) = (cap) ? 2 * (cap) : 16;                                                                            \
            (p) = xrealloc((p), sizeof *(p) * (size_t)(cap));                                                          \
        }                                                                                                              \
    } while (0)

static Region *region(Fn *f)
{
    Region *r = &f->rg;
    LLVMBasicBlockRef bb = LLVMGetInsertBlock(f->g->B);
    if (r->bb != bb) {
        if (r->nloads || r->nstores || r->nptrs || r->nsplats)
            die("codegen: block caches outlived their block (missing region_end)");
        r->bb = bb;
    }
    return r;
}

static void store_raw(Fn *f, const Buffer *b, LLVMValueRef p, LLVMValueRef raw)
{
    LLVMValueRef st = tag(f->g, b, LLVMBuildStore(f->g->B, raw, p));
    LLVMSetAlignment(st, elem_align(f->g, b->dtype));
}

/* Emits the pending stores of b (every buffer when b is NULL) that may overlap
 * elements [c, c + max(w, 1)) at runtime offset r (all of them when all), in order. */
static void flush_stores(Fn *f, const Buffer *b, bool all, LLVMValueRef r, int64_t c, int w)
{
    Region *rg = region(f);
    int m = 0;
    for (int i = 0; i < rg->nstores; i++) {
        Slot *s = &rg->stores[i];
        bool hit = (!b || s->b == b) &&
                   (all || s->r != r || (s->c < c + (w ? w : 1) && c < s->c + (s->w ? s->w : 1)));
        if (hit)
            store_raw(f, s->b, s->p, s->v);
        else
            rg->stores[m++] = *s;
    }
    rg->nstores = m;
}

/* Ends the block's caches: pending stores are emitted here. */
static void region_end(Fn *f)
{
    Region *r = region(f);
    flush_stores(f, NULL, true, NULL, 0, 0);
    r->nloads = r->nptrs = r->nsplats = 0;
}

/* Before an access to b the caches cannot follow (a gather, a masked or guarded
 * load, a non-affine index): pending stores of b are emitted and, for a write,
 * what is known of b is forgotten. */
static void touch_unknown(Fn *f, const Buffer *b, bool write)
{
    Region *rg = region(f);
    flush_stores(f, b, true, NULL, 0, 0);
    if (!write)
        return;
    int m = 0;
    for (int i = 0; i < rg->nloads; i++)
        if (rg->loads[i].b != b)
            rg->loads[m++] = rg->loads[i];
    rg->nloads = m;
}

/* r + c for the current insertion point's loop variables (bindings in f->vars). */
static LLVMValueRef prefix_sum(Fn *f, const Term *t, int n)
{
    Cg *g = f->g;
    for (int i = 0; i < f->nsums; i++) {
        const Sum *s = &f->sums[i];
        if (s->n != n)
            continue;
        int j;
        for (j = 0; j < n && s->t[j].v == t[j].v && s->t[j].k == t[j].k && s->t[j].bb == t[j].bb; j++)
            ;
        if (j == n)
            return s->sum;
    }
    LLVMValueRef prev = n > 1 ? prefix_sum(f, t, n - 1) : NULL;
    LLVMBasicBlockRef cur = LLVMGetInsertBlock(g->B), bb = t[n - 1].bb;
    if (bb != cur) {
        LLVMValueRef term = LLVMGetBasicBlockTerminator(bb);
        if (!term)
            die("codegen: loop variable bound in an open block that is not the current one");
        LLVMPositionBuilderBefore(g->B, term);
    }
    LLVMValueRef x = t[n - 1].k == 1 ? t[n - 1].v : LLVMBuildNSWMul(g->B, t[n - 1].v, ci64(g, t[n - 1].k), "");
    if (prev)
        x = LLVMBuildNSWAdd(g->B, prev, x, "");
    if (bb != cur)
        LLVMPositionBuilderAtEnd(g->B, cur);
    GROW(f->sums, f->nsums, f->capsums);
    Sum *s = &f->sums[f->nsums++];
    s->n = n;
    memcpy(s->t, t, sizeof *t * (size_t)n);
    s->sum = x;
    return x;
}

/* The element offset of b[idx] as r + c, with the vector variable at its first lane
 * when lane0; false when an index is not affine, or depends on the vector variable
 * and !lane0 (then the caller uses linearize). */
static bool affine_addr(Fn *f, const Buffer *b, Expr *const *idx, bool lane0, Addr *out)
{
    Cg *g = f->g;
    Aff tot = {0}, a;
    int64_t stride = 1;
    for (int i = b->rank - 1; i >= 0; i--) {
        if (!affine(g, idx[i], &a) || !aff_add(&tot, &a, stride) || !ck_mul(stride, g->dims[b->id][i], &stride))
            return false;
    }
    Term t[AFF_TERMS];
    int nt = 0;
    int64_t c = tot.c;
    for (int i = 0; i < tot.n; i++) {
        if (tot.k[i] == 0)
            continue;
        int id = tot.var[i];
        Val x = f->vars[id];
        if (f->vw && f->vvar->id == id) {
            if (!lane0)
                return false;
            x = S(f->vlo);
        }
        if (!x.v || x.vec)
            return false;
        if (LLVMIsAConstantInt(x.v)) {
            c += tot.k[i] * LLVMConstIntGetSExtValue(x.v);
            continue;
        }
        Term n = {x.v, tot.k[i], f->vbb[id], f->vseq[id]};
        int j = nt++;
        for (; j > 0 && t[j - 1].seq > n.seq; j--)
            t[j] = t[j - 1];
        t[j] = n;
    }
    out->r = nt ? prefix_sum(f, t, nt) : NULL;
    out->c = c;
    return true;
}

/* The address of row r of b, the base of r + c for every c: one per block.  Not
 * inbounds, as r alone may lie outside b (A[i - 2, j] at the last i). */
static LLVMValueRef row_at(Fn *f, const Buffer *b, LLVMValueRef r)
{
    Region *rg = region(f);
    for (int i = 0; i < rg->nptrs; i++)
        if (rg->ptrs[i].b == b && rg->ptrs[i].r == r && rg->ptrs[i].w == -1)
            return rg->ptrs[i].p;
    LLVMValueRef p = gep(f, b, r, false);
    GROW(rg->ptrs, rg->nptrs, rg->capptrs);
    rg->ptrs[rg->nptrs++] = (Slot){.b = b, .r = r, .w = -1, .p = p};
    return p;
}

/* The address of element r + c of b (inbounds: the access is known in range).
 * In kernels with register tiles, r + c is row r's address plus the constant c:
 * the accesses of an unrolled tile then share one base register, as the code
 * generator would have them.  As `b + (r + c)` instead, InstCombine splits each
 * address into `(b + r) + c` and LICM re-associates that into `(b + c) + r`,
 * hoisting b + c: a loop-invariant base per element of the tile (126 in conv2d's
 * inner loop), which Loop Strength Reduction then recombined; the shared row takes
 * 7% off conv2d's compilation (instructions counted by callgrind) and 4% off its
 * run time.  The short pipeline has no pass that would undo it. */
static LLVMValueRef ptr_at(Fn *f, const Buffer *b, Addr a, bool inbounds)
{
    Cg *g = f->g;
    Region *rg = region(f);
    if (inbounds)
        for (int i = 0; i < rg->nptrs; i++)
            if (rg->ptrs[i].b == b && rg->ptrs[i].r == a.r && rg->ptrs[i].c == a.c && rg->ptrs[i].w == 0)
                return rg->ptrs[i].p;
    LLVMValueRef p;
    if (g->lean && a.r && a.c) {
        LLVMValueRef c = ci64(g, a.c);
        p = LLVMBuildGEP2(g->B, sty(g, b->dtype), row_at(f, b, a.r), &c, 1, "");
    } else {
        LLVMValueRef off = !a.r ? ci64(g, a.c) : a.c ? LLVMBuildNSWAdd(g->B, a.r, ci64(g, a.c), "") : a.r;
        p = gep(f, b, off, inbounds);
    }
    if (inbounds) {
        GROW(rg->ptrs, rg->nptrs, rg->capptrs);
        rg->ptrs[rg->nptrs++] = (Slot){.b = b, .r = a.r, .c = a.c, .p = p};
    }
    return p;
}

/* The value of b at a (w lanes from there, or a scalar when w == 0), in compute type. */
static LLVMValueRef load_at(Fn *f, const Buffer *b, Addr a, int w)
{
    Cg *g = f->g;
    Region *rg = region(f);
    for (int i = 0; i < rg->nloads; i++) {
        const Slot *s = &rg->loads[i];
        if (s->b == b && s->r == a.r && s->c == a.c && s->w == w)
            return s->v;
    }
    flush_stores(f, b, false, a.r, a.c, w);
    LLVMValueRef p = ptr_at(f, b, a, true);
    LLVMTypeRef ty = w ? LLVMVectorType(sty(g, b->dtype), (unsigned)w) : sty(g, b->dtype);
    LLVMValueRef raw = tag(g, b, LLVMBuildLoad2(g->B, ty, p, ""));
    LLVMSetAlignment(raw, elem_align(g, b->dtype));
    LLVMValueRef v = from_storage(g, raw, b->dtype);
    GROW(rg->loads, rg->nloads, rg->caploads);
    rg->loads[rg->nloads++] = (Slot){.b = b, .r = a.r, .c = a.c, .w = w, .v = v};
    return v;
}

/* Stores v (compute type; w lanes or a scalar) to b at a: kept back until the block
 * ends or an access that may overlap it, and dropped if the same element is stored
 * again before anything reads it. */
static void store_at(Fn *f, const Buffer *b, Addr a, int w, LLVMValueRef v)
{
    Cg *g = f->g;
    Region *rg = region(f);
    int m = 0;
    for (int i = 0; i < rg->nstores; i++) {
        Slot *s = &rg->stores[i];
        if (s->b == b && s->r == a.r && s->c == a.c && s->w == w)
            continue; /* overwritten unread */
        rg->stores[m++] = *s;
    }
    rg->nstores = m;
    flush_stores(f, b, false, a.r, a.c, w);
    m = 0;
    for (int i = 0; i < rg->nloads; i++) {
        const Slot *s = &rg->loads[i];
        bool overlap = s->b == b && (s->r != a.r || (s->c < a.c + (w ? w : 1) && a.c < s->c + (s->w ? s->w : 1)));
        if (!overlap)
            rg->loads[m++] = *s;
    }
    rg->nloads = m;
    if (sty(g, b->dtype) == cty(g, b->dtype)) {
        GROW(rg->loads, rg->nloads, rg->caploads);
        rg->loads[rg->nloads++] = (Slot){.b = b, .r = a.r, .c = a.c, .w = w, .v = v};
    }
    LLVMValueRef p = ptr_at(f, b, a, true);
    LLVMValueRef raw = to_storage(g, v, b->dtype);
    GROW(rg->stores, rg->nstores, rg->capstores);
    rg->stores[rg->nstores++] = (Slot){.b = b, .r = a.r, .c = a.c, .w = w, .v = raw, .p = p};
}

static Val emit_expr(Fn *f, const Expr *e);

/* The value of e as a scalar i64 with the vector variable pinned to its first lane
 * (the address of lane 0 of a contiguous access). */
static LLVMValueRef lane0_i64(Fn *f, const Expr *e)
{
    Val saved = f->vars[f->vvar->id];
    int vw = f->vw;
    f->vars[f->vvar->id] = S(f->vlo);
    f->vw = 0; /* nothing in here may be a vector */
    Val v = emit_expr(f, e);
    f->vw = vw;
    f->vars[f->vvar->id] = saved;
    return conv(f->g, v.v, e->dtype, DT_I64);
}

static LLVMValueRef emit_i64(Fn *f, const Expr *e, bool *vec)
{
    Val v = emit_expr(f, e);
    *vec = v.vec;
    return conv(f->g, v.v, e->dtype, DT_I64);
}

/* A scalar load, or a guarded one: the index is clamped into the buffer and the pad
 * value selected when it was out of range, so no branch is needed and only memory
 * inside the buffer is ever read. */
static LLVMValueRef load_scalar(Fn *f, const Buffer *b, LLVMValueRef *idx, bool guarded)
{
    Cg *g = f->g;
    LLVMBuilderRef B = g->B;
    LLVMValueRef ok = NULL;
    if (guarded) {
        if (g->elems[b->id] == 0)
            return kdtype(g, b->dtype, b->pad);
        for (int i = 0; i < b->rank; i++) {
            LLVMValueRef c = intr2(g, "llvm.smax", idx[i], ci64(g, 0));
            c = intr2(g, "llvm.smin", c, ci64(g, g->dims[b->id][i] - 1));
            LLVMValueRef in = LLVMBuildICmp(B, LLVMIntEQ, c, idx[i], "");
            ok = ok ? LLVMBuildAnd(B, ok, in, "") : in;
            idx[i] = c;
        }
    }
    LLVMValueRef p = gep(f, b, linearize(f, b, idx), true);
    LLVMValueRef raw = tag(g, b, LLVMBuildLoad2(B, sty(g, b->dtype), p, ""));
    LLVMSetAlignment(raw, elem_align(g, b->dtype));
    LLVMValueRef v = from_storage(g, raw, b->dtype);
    if (ok)
        v = LLVMBuildSelect(B, ok, v, kdtype(g, b->dtype, b->pad), "");
    return v;
}

/* The range [*lo, *hi] of affine e over the known ranges of the variables bound
 * now; false when a variable's range is unknown. */
static bool aff_range(const Fn *f, const Aff *a, int64_t *lo, int64_t *hi)
{
    *lo = *hi = a->c;
    for (int i = 0; i < a->n; i++) {
        int64_t k = a->k[i];
        if (!k)
            continue;
        int v = a->var[i];
        if (f->vw && f->vvar->id == v)
            return false;
        if (f->vmin[v] > f->vmax[v])
            return false;
        int64_t a, b;
        if (!ck_mul(k, k > 0 ? f->vmin[v] : f->vmax[v], &a) || !ck_add(*lo, a, lo) ||
            !ck_mul(k, k > 0 ? f->vmax[v] : f->vmin[v], &b) || !ck_add(*hi, b, hi))
            return false; /* unknown: tested at run time */
    }
    return true;
}

/* For a padded read: 1 when every index is known inside its dimension, -1 when one
 * is known outside (the read is the pad value), 0 when it has to be tested. */
static int pad_known(const Fn *f, const Expr *e)
{
    const Buffer *b = e->u.load.buf;
    bool all_in = true;
    for (int i = 0; i < b->rank; i++) {
        Aff a;
        int64_t lo, hi;
        if (!affine(f->g, e->u.load.idx[i], &a) || !aff_range(f, &a, &lo, &hi)) {
            all_in = false;
            continue;
        }
        if (hi < 0 || lo >= f->g->dims[b->id][i])
            return -1;
        all_in &= lo >= 0 && hi < f->g->dims[b->id][i];
    }
    return all_in ? 1 : 0;
}

static Val emit_load(Fn *f, const Expr *e)
{
    Cg *g = f->g;
    LLVMBuilderRef B = g->B;
    const Buffer *b = e->u.load.buf;
    bool guarded = e->u.load.guarded && b->has_pad;
    if (guarded) {
        int known = pad_known(f, e);
        if (known < 0)
            return S(kdtype(g, b->dtype, b->pad));
        guarded = known == 0;
    }
    LLVMValueRef idx[16];
    bool vec[16], anyvec = false;
    if (b->rank > 16)
        die("buffer %s has rank %d", b->name, b->rank);
    AccKind ak = f->vw ? access_kind(g, e->u.load.idx, b->rank, f->vvar) : ACC_UNIFORM;
    Addr a;
    if (!guarded && (ak == ACC_UNIFORM || (ak == ACC_CONTIG && !f->mask)) &&
        affine_addr(f, b, e->u.load.idx, ak == ACC_CONTIG, &a))
        return (Val){load_at(f, b, a, ak == ACC_CONTIG ? f->vw : 0), ak == ACC_CONTIG};
    touch_unknown(f, b, false);
    for (int i = 0; i < b->rank; i++) {
        idx[i] = emit_i64(f, e->u.load.idx[i], &vec[i]);
        anyvec |= vec[i];
    }
    if (!anyvec)
        return S(load_scalar(f, b, idx, guarded));

    /* Varying across lanes.  Lanes to read: enabled by guards and, for a padded
     * buffer, in range; the others get pad (or nothing) without touching memory. */
    unsigned W = (unsigned)f->vw;
    LLVMTypeRef vst = LLVMVectorType(sty(g, b->dtype), W);
    LLVMValueRef inr = NULL;
    if (guarded) {
        for (int i = 0; i < b->rank; i++) {
            LLVMValueRef x = vec[i] ? idx[i] : splat(f, idx[i]);
            LLVMTypeRef vt = LLVMTypeOf(x);
            LLVMValueRef in = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntSGE, x, kint(vt, 0), ""),
                                           LLVMBuildICmp(B, LLVMIntSLT, x, kint(vt, g->dims[b->id][i]), ""), "");
            inr = inr ? LLVMBuildAnd(B, inr, in, "") : in;
        }
    }
    LLVMValueRef mask = f->mask;
    if (inr)
        mask = mask ? LLVMBuildAnd(B, mask, inr, "") : inr;
    unsigned align = elem_align(g, b->dtype);
    LLVMValueRef raw;
    if (ak == ACC_CONTIG) {
        LLVMValueRef idx0[16];
        for (int i = 0; i < b->rank; i++)
            idx0[i] = vec[i] ? lane0_i64(f, e->u.load.idx[i]) : idx[i];
        LLVMValueRef off0 = linearize(f, b, idx0);
        LLVMValueRef p = gep(f, b, off0, mask == NULL);
        if (mask) {
            raw = tag(g, b, masked_load(f, vst, p, align, mask));
        } else {
            raw = tag(g, b, LLVMBuildLoad2(B, vst, p, ""));
            LLVMSetAlignment(raw, align);
        }
    } else {
        LLVMValueRef ptrs = gep(f, b, linearize(f, b, idx), mask == NULL);
        if (!is_vty(LLVMTypeOf(ptrs)))
            die("gather without a vector address");
        LLVMTypeRef ov[2] = {vst, LLVMTypeOf(ptrs)};
        LLVMValueRef m = mask ? mask : kint(LLVMVectorType(g->ti1, W), -1);
        LLVMValueRef args[4] = {ptrs, ci32(g, (int32_t)align), m, LLVMConstNull(vst)};
        raw = tag(g, b, intr(g, "llvm.masked.gather", ov, 2, args, 4));
    }
    LLVMValueRef v = from_storage(g, raw, b->dtype);
    if (inr)
        v = LLVMBuildSelect(B, inr, v, splat(f, kdtype(g, b->dtype, b->pad)), "");
    return (Val){v, true};
}

/* ---- expressions ---- */

/* Operands of one operation in a common shape. */
static void same_shape(Fn *f, Val *v, int n)
{
    bool any = false;
    for (int i = 0; i < n; i++)
        any |= v[i].vec;
    if (!any)
        return;
    for (int i = 0; i < n; i++)
        if (!v[i].vec) {
            v[i].v = splat(f, v[i].v);
            v[i].vec = true;
        }
}

static Val emit_as(Fn *f, const Expr *e, DType t)
{
    Val v = emit_expr(f, e);
    v.v = conv(f->g, v.v, e->dtype, t);
    return v;
}

static bool is_fmul(const Expr *e, DType t)
{
    return e->kind == IE_MUL && dtype_is_float(e->dtype) && conv_exact(e->dtype, t);
}

static Val emit_expr(Fn *f, const Expr *e)
{
    Cg *g = f->g;
    LLVMBuilderRef B = g->B;
    DType t = e->dtype;
    Val a[3];
    switch (e->kind) {
    case IE_INT: /* exact: through a double, 2^53 + 1 would change and 2^63 - 1 overflow */
        if (!dtype_is_float(t) && t != DT_BOOL)
            return S(LLVMConstInt(cty(g, t), (unsigned long long)e->u.i, 1));
        return S(kdtype(g, t, (double)e->u.i));
    case IE_FLT: return S(kdtype(g, t, e->u.f));
    case IE_PARAM:
        if (!dtype_is_float(t) && t != DT_BOOL)
            return S(LLVMConstInt(cty(g, t), (unsigned long long)g->k->params[e->u.param].value, 1));
        return S(kdtype(g, t, (double)g->k->params[e->u.param].value));
    case IE_VAR: {
        Val v = f->vars[e->u.var->id];
        if (!v.v) {
            cg_error(g, e->span, "internal error: loop variable '%s' used outside its loop", e->u.var->name);
            return S(kdtype(g, t, 0));
        }
        v.v = conv(g, v.v, DT_I64, t);
        return v;
    }
    case IE_LOAD: return emit_load(f, e);
    case IE_CAST: return emit_as(f, e->args[0], t);
    case IE_NOT:
        a[0] = emit_as(f, e->args[0], DT_BOOL);
        return (Val){LLVMBuildNot(B, a[0].v, ""), a[0].vec};
    case IE_NEG:
        a[0] = emit_as(f, e->args[0], t);
        return (Val){dtype_is_float(t) ? LLVMBuildFNeg(B, a[0].v, "") : LLVMBuildNeg(B, a[0].v, ""), a[0].vec};
    case IE_ABS:
        a[0] = emit_as(f, e->args[0], t);
        if (dtype_is_float(t))
            return (Val){intr1(g, "llvm.fabs", a[0].v), a[0].vec};
        {
            LLVMValueRef args[2] = {a[0].v, LLVMConstInt(g->ti1, 0, 0)};
            return (Val){intr_n(g, "llvm.abs", args, 2), a[0].vec};
        }
    case IE_EXP:
    case IE_LOG:
    case IE_SQRT:
    case IE_RSQRT:
    case IE_TANH:
    case IE_ERF: {
        if (!dtype_is_float(t)) {
            cg_error(g, e->span, "internal error: %s of %s", ir_expr_name(e->kind), dtype_name(t));
            return S(kdtype(g, t, 0));
        }
        a[0] = emit_as(f, e->args[0], t);
        LLVMValueRef x = a[0].v, r;
        VmCtx vc = vm_ctx(g);
        switch (e->kind) {
        case IE_EXP: r = vm_exp(&vc, x); break;
        case IE_LOG: r = vm_log(&vc, x); break;
        case IE_SQRT: r = intr1(g, "llvm.sqrt", x); break;
        case IE_RSQRT: r = LLVMBuildFDiv(B, kflt(LLVMTypeOf(x), 1.0), intr1(g, "llvm.sqrt", x), ""); break;
        case IE_TANH: r = vm_tanh(&vc, x); break;
        default:
            r = vm_erf(&vc, x);
            if (!r)
                r = libm(g, "erf", x);
            break;
        }
        return (Val){r, a[0].vec};
    }
    case IE_LOG1P: case IE_EXPM1: {
        /* inline in the operand's vector shape (vmath.c), as exp and log are */
        a[0] = emit_as(f, e->args[0], t);
        VmCtx vc = vm_ctx(g);
        return (Val){e->kind == IE_LOG1P ? vm_log1p(&vc, a[0].v) : vm_expm1(&vc, a[0].v), a[0].vec};
    }
    case IE_FLOOR: case IE_CEIL: case IE_ROUND: case IE_POW:
        a[0] = emit_as(f, e->args[0], t);
        a[1] = e->kind == IE_POW ? emit_as(f, e->args[1], t) : a[0];
        same_shape(f, a, 2);
        return (Val){cg_llvm_mathfn(g->M, B, e->kind, a[0].v, e->kind == IE_POW ? a[1].v : NULL), a[0].vec};
    case IE_ADD:
    case IE_SUB:
        /* a*b + c and c - a*b in float: one fused multiply-add. */
        if (dtype_is_float(t) && (is_fmul(e->args[0], t) || is_fmul(e->args[1], t))) {
            int m = is_fmul(e->args[0], t) ? 0 : 1;
            const Expr *mul = e->args[m];
            DType mt = mul->dtype;
            a[0] = emit_as(f, mul->args[0], mt);
            a[1] = emit_as(f, mul->args[1], mt);
            a[2] = emit_as(f, e->args[1 - m], t);
            same_shape(f, a, 3);
            LLVMValueRef x = conv(g, a[0].v, mt, t), y = conv(g, a[1].v, mt, t), c = a[2].v;
            if (e->kind == IE_SUB) {
                if (m == 0)
                    c = LLVMBuildFNeg(B, c, "");
                else
                    x = LLVMBuildFNeg(B, x, "");
            }
            return (Val){fmadd(g, x, y, c), a[0].vec};
        }
        /* fall through */
    case IE_MUL:
    case IE_DIV:
    case IE_MOD:
    case IE_MAX:
    case IE_MIN:
        a[0] = emit_as(f, e->args[0], t);
        a[1] = emit_as(f, e->args[1], t);
        same_shape(f, a, 2);
        /* f16 and bf16 arithmetic (and math) is carried out in f32 and rounded
         * where it is stored or cast, as dtype_compute says. */
        return (Val){arith(g, e->kind, t, a[0].v, a[1].v), a[0].vec};
    case IE_LT:
    case IE_LE:
    case IE_GT:
    case IE_GE:
    case IE_EQ:
    case IE_NE: {
        DType ct = dtype_promote(e->args[0]->dtype, e->args[1]->dtype);
        if (e->args[0]->dtype == DT_BOOL && e->args[1]->dtype == DT_BOOL)
            ct = DT_BOOL;
        a[0] = emit_as(f, e->args[0], ct);
        a[1] = emit_as(f, e->args[1], ct);
        same_shape(f, a, 2);
        LLVMValueRef r;
        if (dtype_is_float(ct)) {
            static const LLVMRealPredicate fp[] = {LLVMRealOLT, LLVMRealOLE, LLVMRealOGT, LLVMRealOGE, LLVMRealOEQ, LLVMRealUNE};
            r = LLVMBuildFCmp(B, fp[e->kind - IE_LT], a[0].v, a[1].v, "");
        } else {
            static const LLVMIntPredicate ip[] = {LLVMIntSLT, LLVMIntSLE, LLVMIntSGT, LLVMIntSGE, LLVMIntEQ, LLVMIntNE};
            static const LLVMIntPredicate bp[] = {LLVMIntULT, LLVMIntULE, LLVMIntUGT, LLVMIntUGE, LLVMIntEQ, LLVMIntNE};
            r = LLVMBuildICmp(B, (ct == DT_BOOL ? bp : ip)[e->kind - IE_LT], a[0].v, a[1].v, "");
        }
        return (Val){conv(g, r, DT_BOOL, t), a[0].vec};
    }
    case IE_AND:
    case IE_OR:
        a[0] = emit_as(f, e->args[0], DT_BOOL);
        a[1] = emit_as(f, e->args[1], DT_BOOL);
        same_shape(f, a, 2);
        return (Val){conv(g, e->kind == IE_AND ? LLVMBuildAnd(B, a[0].v, a[1].v, "") : LLVMBuildOr(B, a[0].v, a[1].v, ""), DT_BOOL, t),
                     a[0].vec};
    case IE_SELECT:
        a[0] = emit_as(f, e->args[0], DT_BOOL);
        a[1] = emit_as(f, e->args[1], t);
        a[2] = emit_as(f, e->args[2], t);
        same_shape(f, a, 3);
        return (Val){LLVMBuildSelect(B, a[0].v, a[1].v, a[2].v, ""), a[0].vec};
    case IE_COUNT: break;
    }
    die("emit_expr: kind %d", (int)e->kind);
}

/* ---- statements ---- */

/* old op= v, in the compute type of dtype t. */
static LLVMValueRef update(Fn *f, StmtOp op, DType t, LLVMValueRef old, Val *v)
{
    Cg *g = f->g;
    switch (op) {
    case SOP_ASSIGN: return v->v;
    case SOP_ADD: return dtype_is_float(t) ? LLVMBuildFAdd(g->B, old, v->v, "") : LLVMBuildAdd(g->B, old, v->v, "");
    case SOP_MUL: return dtype_is_float(t) ? LLVMBuildFMul(g->B, old, v->v, "") : LLVMBuildMul(g->B, old, v->v, "");
    case SOP_MAX: return arith(g, IE_MAX, t, old, v->v);
    case SOP_MIN: return arith(g, IE_MIN, t, old, v->v);
    }
    die("update: op %d", (int)op);
}

/* The statement's value in the buffer's compute type.  For `acc += a*b` in float the
 * product's operands come back in *x, *y (and *fused is set) instead. */
static Val stmt_value(Fn *f, const Node *n, Val *x, Val *y, bool *fused)
{
    const Buffer *b = n->u.stmt.buf;
    const Expr *e = n->u.stmt.value;
    DType t = b->dtype;
    *fused = false;
    if (n->u.stmt.op == SOP_ADD && dtype_is_float(t) && is_fmul(e, t)) {
        Val a[2] = {emit_as(f, e->args[0], e->dtype), emit_as(f, e->args[1], e->dtype)};
        same_shape(f, a, 2);
        a[0].v = conv(f->g, a[0].v, e->dtype, dtype_compute(t));
        a[1].v = conv(f->g, a[1].v, e->dtype, dtype_compute(t));
        *x = a[0];
        *y = a[1];
        *fused = true;
        return a[0];
    }
    Val v = emit_expr(f, e);
    v.v = conv(f->g, v.v, e->dtype, t);
    return v;
}

static void emit_stmt_scalar(Fn *f, const Node *n)
{
    Cg *g = f->g;
    const Buffer *b = n->u.stmt.buf;
    LLVMValueRef idx[16];
    bool vec;
    Val x, y, v;
    bool fused;
    v = stmt_value(f, n, &x, &y, &fused);
    Addr a;
    if (affine_addr(f, b, n->u.stmt.idx, false, &a)) {
        LLVMValueRef nv = v.v;
        if (n->u.stmt.op != SOP_ASSIGN) {
            LLVMValueRef old = load_at(f, b, a, 0);
            nv = fused ? fmadd(g, x.v, y.v, old) : update(f, n->u.stmt.op, b->dtype, old, &v);
        }
        store_at(f, b, a, 0, nv);
        return;
    }
    touch_unknown(f, b, true);
    for (int i = 0; i < b->rank; i++)
        idx[i] = emit_i64(f, n->u.stmt.idx[i], &vec);
    LLVMValueRef p = gep(f, b, linearize(f, b, idx), true);
    unsigned align = elem_align(g, b->dtype);
    LLVMValueRef nv;
    if (n->u.stmt.op == SOP_ASSIGN) {
        nv = v.v;
    } else {
        LLVMValueRef old = tag(g, b, LLVMBuildLoad2(g->B, sty(g, b->dtype), p, ""));
        LLVMSetAlignment(old, align);
        old = from_storage(g, old, b->dtype);
        nv = fused ? fmadd(g, x.v, y.v, old) : update(f, n->u.stmt.op, b->dtype, old, &v);
    }
    LLVMValueRef st = tag(g, b, LLVMBuildStore(g->B, to_storage(g, nv, b->dtype), p));
    LLVMSetAlignment(st, align);
}

/* Identity of a reduction, for lanes a guard switched off. */
static LLVMValueRef red_identity(Cg *g, StmtOp op, DType t)
{
    bool fl = dtype_is_float(t);
    switch (op) {
    case SOP_ADD: return fl ? LLVMConstReal(cty(g, t), -0.0) : LLVMConstInt(cty(g, t), 0, 0);
    case SOP_MUL: return fl ? LLVMConstReal(cty(g, t), 1.0) : LLVMConstInt(cty(g, t), 1, 0);
    case SOP_MAX:
        if (fl)
            return LLVMConstReal(cty(g, t), -INFINITY);
        return t == DT_BOOL ? LLVMConstInt(g->ti1, 0, 0) : kint(cty(g, t), t == DT_I32 ? INT32_MIN : INT64_MIN);
    case SOP_MIN:
        if (fl)
            return LLVMConstReal(cty(g, t), INFINITY);
        return t == DT_BOOL ? LLVMConstInt(g->ti1, 1, 0) : kint(cty(g, t), t == DT_I32 ? INT32_MAX : INT64_MAX);
    default: die("no identity for op %d", (int)op);
    }
}

/* Combines the lanes of v with op.  Float sums and products are reassociated (a tree,
 * not a chain): the vectorize schedule already accepts that reordering. */
static LLVMValueRef reduce_lanes(Cg *g, StmtOp op, DType t, LLVMValueRef v)
{
    bool fl = dtype_is_float(t);
    if (fl && (op == SOP_ADD || op == SOP_MUL)) {
        LLVMValueRef args[2] = {red_identity(g, op, t), v};
        LLVMTypeRef ty = LLVMTypeOf(v);
        LLVMValueRef r = intr(g, op == SOP_ADD ? "llvm.vector.reduce.fadd" : "llvm.vector.reduce.fmul", &ty, 1, args, 2);
        LLVMSetFastMathFlags(r, LLVMFastMathAllowReassoc);
        return r;
    }
    const char *name;
    switch (op) {
    case SOP_ADD: name = t == DT_BOOL ? "llvm.vector.reduce.xor" : "llvm.vector.reduce.add"; break;
    case SOP_MUL: name = t == DT_BOOL ? "llvm.vector.reduce.and" : "llvm.vector.reduce.mul"; break;
    case SOP_MAX: name = fl ? "llvm.vector.reduce.fmaximum" : t == DT_BOOL ? "llvm.vector.reduce.or" : "llvm.vector.reduce.smax"; break;
    case SOP_MIN: name = fl ? "llvm.vector.reduce.fminimum" : t == DT_BOOL ? "llvm.vector.reduce.and" : "llvm.vector.reduce.smin"; break;
    default: die("reduce_lanes: op %d", (int)op);
    }
    return intr1(g, name, v);
}

static void emit_stmt_vector(Fn *f, const Node *n)
{
    Cg *g = f->g;
    LLVMBuilderRef B = g->B;
    const Buffer *b = n->u.stmt.buf;
    DType t = b->dtype;
    unsigned align = elem_align(g, t);
    AccKind ak = access_kind(g, n->u.stmt.idx, b->rank, f->vvar);
    Val x, y, v;
    bool fused;
    v = stmt_value(f, n, &x, &y, &fused);
    if (fused) {
        /* x*y is needed lane by lane here; the FMA happens on the update below. */
        if (ak == ACC_UNIFORM) {
            v.v = LLVMBuildFMul(B, x.v, y.v, "");
            v.vec = x.vec;
            fused = false;
        }
    }
    Addr a;
    if (ak == ACC_CONTIG && !f->mask && affine_addr(f, b, n->u.stmt.idx, true, &a)) {
        LLVMValueRef nv;
        if (n->u.stmt.op == SOP_ASSIGN) {
            nv = wide(f, v);
        } else {
            LLVMValueRef old = load_at(f, b, a, f->vw);
            if (fused) {
                nv = fmadd(g, wide(f, x), wide(f, y), old);
            } else {
                Val w = {wide(f, v), true};
                nv = update(f, n->u.stmt.op, t, old, &w);
            }
        }
        store_at(f, b, a, f->vw, nv);
        return;
    }
    if (ak == ACC_CONTIG) {
        touch_unknown(f, b, true);
        LLVMValueRef idx0[16];
        for (int i = 0; i < b->rank; i++)
            idx0[i] = lane0_i64(f, n->u.stmt.idx[i]);
        LLVMValueRef p = gep(f, b, linearize(f, b, idx0), f->mask == NULL);
        LLVMTypeRef vst = LLVMVectorType(sty(g, t), (unsigned)f->vw);
        LLVMValueRef nv;
        if (n->u.stmt.op == SOP_ASSIGN) {
            nv = wide(f, v);
        } else {
            LLVMValueRef old;
            if (f->mask) {
                old = tag(g, b, masked_load(f, vst, p, align, f->mask));
            } else {
                old = tag(g, b, LLVMBuildLoad2(B, vst, p, ""));
                LLVMSetAlignment(old, align);
            }
            old = from_storage(g, old, t);
            if (fused) {
                nv = fmadd(g, wide(f, x), wide(f, y), old);
            } else {
                Val w = {wide(f, v), true};
                nv = update(f, n->u.stmt.op, t, old, &w);
            }
        }
        nv = to_storage(g, nv, t);
        if (f->mask) {
            tag(g, b, masked_store(f, nv, p, align, f->mask));
        } else {
            LLVMValueRef st = tag(g, b, LLVMBuildStore(B, nv, p));
            LLVMSetAlignment(st, align);
        }
        return;
    }
    /* One element for every lane: a reduction (or, for `=`, the last lane wins). */
    bool aff = affine_addr(f, b, n->u.stmt.idx, false, &a);
    LLVMValueRef p = NULL;
    if (!aff) {
        touch_unknown(f, b, true);
        LLVMValueRef idx[16];
        bool vec;
        for (int i = 0; i < b->rank; i++)
            idx[i] = emit_i64(f, n->u.stmt.idx[i], &vec);
        p = gep(f, b, linearize(f, b, idx), true);
    }
    LLVMValueRef val;
    if (n->u.stmt.op == SOP_ASSIGN) {
        if (!v.vec) {
            val = v.v;
        } else {
            LLVMValueRef lane = ci64(g, f->vw - 1);
            if (f->mask) {
                /* The highest enabled lane is the last to run in the scalar loop. */
                LLVMTypeRef bits = LLVMIntTypeInContext(g->C, (unsigned)f->vw);
                LLVMValueRef m = LLVMBuildBitCast(B, f->mask, bits, "");
                LLVMValueRef args[2] = {m, LLVMConstInt(g->ti1, 0, 0)};
                LLVMValueRef lz = intr_n(g, "llvm.ctlz", args, 2);
                lane = LLVMBuildSub(B, LLVMConstInt(bits, (unsigned long long)(f->vw - 1), 0), lz, "");
                lane = LLVMBuildIntCast2(B, lane, g->ti64, 0, "");
            }
            val = LLVMBuildExtractElement(B, v.v, lane, "");
        }
    } else {
        LLVMValueRef lanes = wide(f, v);
        if (f->mask)
            lanes = LLVMBuildSelect(B, f->mask, lanes, splat(f, red_identity(g, n->u.stmt.op, t)), "");
        LLVMValueRef old;
        if (aff) {
            old = load_at(f, b, a, 0);
        } else {
            old = tag(g, b, LLVMBuildLoad2(B, sty(g, t), p, ""));
            LLVMSetAlignment(old, align);
            old = from_storage(g, old, t);
        }
        if (f->ordered && dtype_is_float(t) && (n->u.stmt.op == SOP_ADD || n->u.stmt.op == SOP_MUL)) {
            /* The scalar loop's order: ((old + v0) + v1) + ... (no reassociation). */
            LLVMValueRef args[2] = {old, lanes};
            LLVMTypeRef ty = LLVMTypeOf(lanes);
            val = intr(g, n->u.stmt.op == SOP_ADD ? "llvm.vector.reduce.fadd" : "llvm.vector.reduce.fmul", &ty, 1, args, 2);
        } else {
            Val r = S(reduce_lanes(g, n->u.stmt.op, t, lanes));
            val = update(f, n->u.stmt.op, t, old, &r);
        }
    }
    if (aff) {
        store_at(f, b, a, 0, val);
        return;
    }
    LLVMValueRef st = tag(g, b, LLVMBuildStore(B, to_storage(g, val, t), p));
    LLVMSetAlignment(st, align);
}

/* ---- control flow ---- */

typedef struct Binding {
    Val v;
    LLVMBasicBlockRef bb;
    int seq;
    int64_t min, max;
} Binding;

/* Binds loop variable v to x from here on (its range unknown unless x is a
 * constant); returns the binding to restore. */
static Binding bind(Fn *f, const Var *v, Val x)
{
    Binding old = {f->vars[v->id], f->vbb[v->id], f->vseq[v->id], f->vmin[v->id], f->vmax[v->id]};
    f->vars[v->id] = x;
    f->vbb[v->id] = LLVMGetInsertBlock(f->g->B);
    f->vseq[v->id] = ++f->seq;
    f->vmin[v->id] = 1, f->vmax[v->id] = 0;
    if (!x.vec && LLVMIsAConstantInt(x.v))
        f->vmin[v->id] = f->vmax[v->id] = LLVMConstIntGetSExtValue(x.v);
    return old;
}

static void unbind(Fn *f, const Var *v, Binding old)
{
    f->vars[v->id] = old.v;
    f->vbb[v->id] = old.bb;
    f->vseq[v->id] = old.seq;
    f->vmin[v->id] = old.min;
    f->vmax[v->id] = old.max;
}

typedef struct LoopSt {
    LLVMBasicBlockRef body, exit;
    LLVMValueRef iv, hi;
    int64_t step;
} LoopSt;

/* Whether list l holds an unroll or vector loop. */
static bool holds_scheduled(const NodeList *l)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        if (n->kind == N_LOOP && (n->u.loop.kind == LOOP_UNROLL || n->u.loop.kind == LOOP_VECTOR))
            return true;
        if ((n->kind == N_LOOP || n->kind == N_IF) && holds_scheduled(ir_body((Node *)n)))
            return true;
    }
    return false;
}

static LLVMValueRef loop_open(Fn *f, LLVMValueRef lo, LLVMValueRef hi, const char *name, LoopSt *s)
{
    Cg *g = f->g;
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->B);
    s->body = LLVMAppendBasicBlockInContext(g->C, f->fn, name);
    s->exit = LLVMAppendBasicBlockInContext(g->C, f->fn, "");
    s->hi = hi;
    s->step = 1;
    region_end(f);
    LLVMValueRef enter = LLVMBuildICmp(g->B, LLVMIntSLT, lo, hi, "");
    if (LLVMIsAConstantInt(enter) && LLVMConstIntGetZExtValue(enter))
        LLVMBuildBr(g->B, s->body); /* constant bounds: no guard to fold away later */
    else
        LLVMBuildCondBr(g->B, enter, s->body, s->exit);
    LLVMPositionBuilderAtEnd(g->B, s->body);
    s->iv = LLVMBuildPhi(g->B, g->ti64, name);
    LLVMAddIncoming(s->iv, &lo, &pre, 1);
    return s->iv;
}

static void loop_close(Fn *f, LoopSt *s)
{
    Cg *g = f->g;
    region_end(f);
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(g->B);
    LLVMValueRef next = LLVMBuildNSWAdd(g->B, s->iv, ci64(g, s->step), "");
    LLVMBuildCondBr(g->B, LLVMBuildICmp(g->B, LLVMIntSLT, next, s->hi, ""), s->body, s->exit);
    LLVMAddIncoming(s->iv, &next, &latch, 1);
    LLVMMoveBasicBlockAfter(s->exit, latch);
    LLVMPositionBuilderAtEnd(g->B, s->exit);
}

/* ---- guard versioning ----
 *
 * A split whose factor may not divide the extent leaves a guard such as
 * `if ir*6 + iu < M` inside the unrolled and vector loops of a register tile and
 * inside the reduction loop around them: evaluated for every row and every k, and
 * as lane masks (masked loads and stores) in vector loops, although it fails only
 * in the last tile.  So the body of a serial loop L is emitted twice, behind one
 * test per iteration of L: a fast version in which every hoistable guard is known
 * to hold, and the original.  A guard is hoistable out of L when its condition is a
 * conjunction of affine comparisons, L is the innermost serial loop whose variable
 * it uses, the other inner variables it uses belong to unroll or vector loops with
 * constant bounds (the test takes their worst values), and at least one loop lies
 * between L and the guard (else the test would be the guard itself).  Each guard
 * is thus versioned at one loop only, so the code grows by at most a factor of two
 * per guarded tile level.  The test implies every hoisted guard, so the fast
 * version computes exactly what the original would. */

typedef struct Inner {
    int var;
    LoopKind kind;
    bool cst;
    int64_t lo, hi;          /* constant bounds when cst (hi exclusive) */
} Inner;

/* The comparisons of a conjunction, each as d <= lim with d affine. */
typedef struct Cmp {
    Aff d;
    int64_t lim;
} Cmp;

static bool conjuncts(const Cg *g, const Expr *e, Cmp *out, int *n, int cap)
{
    if (e->kind == IE_AND)
        return conjuncts(g, e->args[0], out, n, cap) && conjuncts(g, e->args[1], out, n, cap);
    if (*n == cap || (e->kind != IE_LT && e->kind != IE_LE && e->kind != IE_GT && e->kind != IE_GE))
        return false;
    Aff a, b;
    if (!affine(g, e->args[0], &a) || !affine(g, e->args[1], &b))
        return false;
    Cmp *c = &out[(*n)++];
    memset(&c->d, 0, sizeof c->d);
    /* a < b: a - b <= -1;  a <= b: a - b <= 0;  a > b: b - a <= -1;  a >= b: b - a <= 0 */
    bool less = e->kind == IE_LT || e->kind == IE_LE;
    if (!aff_add(&c->d, &a, less ? 1 : -1) || !aff_add(&c->d, &b, less ? -1 : 1))
        return false;
    c->lim = (e->kind == IE_LT || e->kind == IE_GT) ? -1 : 0;
    return true;
}

static const Inner *inner_of(const Inner *in, int nin, int var)
{
    for (int i = nin - 1; i >= 0; i--)
        if (in[i].var == var)
            return &in[i];
    return NULL;
}

static bool assumed(const Fn *f, const Node *n)
{
    for (int i = 0; i < f->nassume; i++)
        if (f->assume[i] == n)
            return true;
    return false;
}

/* Adds to *test the condition under which guard n holds for every value of the
 * inner loop variables, and ORs into *any a condition without which it holds for
 * none of them; false when n is not hoistable out of L. */
static bool hoist_test(Fn *f, const Node *L, const Node *n, const Inner *in, int nin, LLVMValueRef *test,
                       LLVMValueRef *any)
{
    Cg *g = f->g;
    Cmp cmp[8];
    int nc = 0;
    if (!conjuncts(g, n->u.guard.cond, cmp, &nc, 8))
        return false;
    bool uses_l = false;
    for (int c = 0; c < nc; c++)
        for (int t = 0; t < cmp[c].d.n; t++) {
            if (cmp[c].d.k[t] == 0)
                continue;
            int v = cmp[c].d.var[t];
            const Inner *x = inner_of(in, nin, v);
            if (x) {
                if (!x->cst || (x->kind != LOOP_UNROLL && x->kind != LOOP_VECTOR))
                    return false;
            } else if (v == L->u.loop.var->id) {
                uses_l = true;
            } else if (!f->vars[v].v || f->vars[v].vec) {
                return false;
            }
        }
    if (!uses_l)
        return false;
    LLVMBuilderRef B = g->B;
    LLVMValueRef some = NULL;
    for (int c = 0; c < nc; c++) {
        int64_t worst = cmp[c].d.c, best = cmp[c].d.c;
        LLVMValueRef sum = NULL;
        for (int t = 0; t < cmp[c].d.n; t++) {
            int64_t k = cmp[c].d.k[t];
            if (k == 0)
                continue;
            const Inner *x = inner_of(in, nin, cmp[c].d.var[t]);
            if (x) {
                worst += k * (k > 0 ? x->hi - 1 : x->lo);
                best += k * (k > 0 ? x->lo : x->hi - 1);
                continue;
            }
            LLVMValueRef term = LLVMBuildNSWMul(B, f->vars[cmp[c].d.var[t]].v, ci64(g, k), "");
            sum = sum ? LLVMBuildNSWAdd(B, sum, term, "") : term;
        }
        if (!sum)
            sum = ci64(g, 0);
        LLVMValueRef ok = LLVMBuildICmp(B, LLVMIntSLE, sum, ci64(g, cmp[c].lim - worst), "");
        *test = *test ? LLVMBuildAnd(B, *test, ok, "") : ok;
        LLVMValueRef may = LLVMBuildICmp(B, LLVMIntSLE, sum, ci64(g, cmp[c].lim - best), "");
        some = some ? LLVMBuildAnd(B, some, may, "") : may;
    }
    *any = *any ? LLVMBuildOr(B, *any, some, "") : some;
    return true;
}

/* True when every statement of list l lies inside one of the guards h[]. */
static bool all_covered(const NodeList *l, const Node *const *h, int nh)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        bool in = false;
        for (int j = 0; j < nh && !in; j++)
            in = h[j] == n;
        if (in)
            continue;
        if (n->kind == N_STMT || !all_covered(ir_body((Node *)n), h, nh))
            return false;
    }
    return true;
}

/* Collects the guards of list l (inside loop L, under the loops in[]) that can be
 * hoisted out of L, and builds the test that implies them all. */
static void hoist_collect(Fn *f, const Node *L, const NodeList *l, Inner *in, int nin, const Node **out,
                          int *nout, LLVMValueRef *test, LLVMValueRef *any)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        if (n->kind == N_LOOP) {
            /* A nested parallel loop is emitted in a function of its own. */
            if (n->u.loop.kind == LOOP_PARALLEL || nin == 16)
                continue;
            Aff lo, hi;
            Inner x = {.var = n->u.loop.var->id, .kind = n->u.loop.kind};
            x.cst = affine(f->g, n->u.loop.lo, &lo) && affine(f->g, n->u.loop.hi, &hi) && lo.n == 0 &&
                    hi.n == 0 && lo.c < hi.c;
            x.lo = x.cst ? lo.c : 0;
            x.hi = x.cst ? hi.c : 0;
            in[nin] = x;
            hoist_collect(f, L, &n->u.loop.body, in, nin + 1, out, nout, test, any);
        } else if (n->kind == N_IF) {
            if (nin > 0 && *nout < MAX_HOISTED - f->nassume && !assumed(f, n) &&
                hoist_test(f, L, n, in, nin, test, any))
                out[(*nout)++] = n;
            hoist_collect(f, L, &n->u.guard.body, in, nin, out, nout, test, any);
        }
    }
}

/* Emits the body of serial loop L (its variable bound): versioned when it holds
 * hoistable guards.  When every statement of the body is under one of them, an
 * iteration in which none can hold (a tile wholly past the edge, as when a block
 * of 96 rows is split into tiles of 6 and only 31 rows are left) is skipped. */
static void emit_versioned(Fn *f, const Node *L)
{
    Cg *g = f->g;
    const Node *hoisted[MAX_HOISTED];
    int nh = 0;
    Inner in[16];
    LLVMValueRef test = NULL, any = NULL;
    if (!f->vw)
        hoist_collect(f, L, &L->u.loop.body, in, 0, hoisted, &nh, &test, &any);
    if (nh == 0) {
        emit_list(f, &L->u.loop.body);
        return;
    }
    region_end(f);
    LLVMBasicBlockRef fast = LLVMAppendBasicBlockInContext(g->C, f->fn, "fast");
    LLVMBasicBlockRef slow = LLVMAppendBasicBlockInContext(g->C, f->fn, "guarded");
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(g->C, f->fn, "");
    if (all_covered(&L->u.loop.body, hoisted, nh)) {
        LLVMBasicBlockRef some = LLVMAppendBasicBlockInContext(g->C, f->fn, "some");
        LLVMBuildCondBr(g->B, any, some, join);
        LLVMPositionBuilderAtEnd(g->B, some);
    }
    LLVMBuildCondBr(g->B, test, fast, slow);
    LLVMPositionBuilderAtEnd(g->B, fast);
    int saved = f->nassume;
    for (int i = 0; i < nh; i++)
        f->assume[f->nassume++] = hoisted[i];
    emit_list(f, &L->u.loop.body);
    f->nassume = saved;
    region_end(f);
    LLVMBuildBr(g->B, join);
    LLVMMoveBasicBlockAfter(slow, LLVMGetInsertBlock(g->B));
    LLVMPositionBuilderAtEnd(g->B, slow);
    emit_list(f, &L->u.loop.body);
    region_end(f);
    LLVMBuildBr(g->B, join);
    LLVMMoveBasicBlockAfter(join, LLVMGetInsertBlock(g->B));
    LLVMPositionBuilderAtEnd(g->B, join);
}

/* A register tile's contents are dead at the top of each iteration of its fresh
 * loop (Buffer.private_in: every read sees a write of the same iteration).  Saying
 * so with a store of poison keeps SSA construction from carrying the tile's old
 * value around every enclosing loop in phis (six 2-register phis per loop level in
 * gemm's 6x16 tile), which cost registers and register-allocation time. */
static void start_fresh(Fn *f, const Node *loop)
{
    Cg *g = f->g;
    for (int i = 0; i < g->k->nbufs; i++)
        if (g->fresh[i] == loop && f->bufp[i]) {
            const Buffer *b = g->k->bufs[i];
            touch_unknown(f, b, true);
            /* A memset of undef: SROA turns it into an undef definition of every
             * slice (a store of an undef aggregate would become element inserts into
             * the old value), and codegen drops it where the tile stays in memory. */
            LLVMValueRef bytes = ci64(g, g->elems[i] * dtype_bytes(b->dtype));
            tag(g, b, LLVMBuildMemSet(g->B, f->bufp[i], LLVMGetUndef(g->ti8), bytes, CG_BUF_ALIGN));
        }
}

static bool unroll_twice(const Fn *f, const Node *n);

/* `for v in lo..hi` around n's body; own: lo and hi are n's bounds (not narrowed). */
static void emit_serial_ex(Fn *f, const Node *n, LLVMValueRef lo, LLVMValueRef hi, bool own)
{
    LoopSt s;
    Var *v = n->u.loop.var;
    LLVMValueRef iv = loop_open(f, lo, hi, v->name, &s);
    s.step = own && unroll_twice(f, n) ? 2 : 1;
    bool known = LLVMIsAConstantInt(lo) && LLVMIsAConstantInt(hi);
    for (int64_t i = 0; i < s.step; i++) {
        Binding saved = bind(f, v, S(i ? LLVMBuildNSWAdd(f->g->B, iv, ci64(f->g, i), "") : iv));
        if (known) {
            f->vmin[v->id] = LLVMConstIntGetSExtValue(lo) + i;
            f->vmax[v->id] = LLVMConstIntGetSExtValue(hi) - 1;
        }
        start_fresh(f, n);
        emit_versioned(f, n);
        unbind(f, v, saved);
    }
    loop_close(f, &s);
}

static void emit_serial(Fn *f, const Node *n, LLVMValueRef lo, LLVMValueRef hi)
{
    emit_serial_ex(f, n, lo, hi, true);
}

static void emit_guard(Fn *f, const Node *n)
{
    Cg *g = f->g;
    LLVMBuilderRef B = g->B;
    for (int i = 0; i < f->nassume; i++)
        if (f->assume[i] == n) {
            emit_list(f, &n->u.guard.body);
            return;
        }
    Val c = emit_as(f, n->u.guard.cond, DT_BOOL);
    LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(g->C, f->fn, "if");
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(g->C, f->fn, "");
    LLVMValueRef saved = f->mask;
    if (c.vec) {
        /* Lanes for which the condition is false are masked; the body is skipped
         * when no lane is left, so uniform loads in it run only when the scalar
         * loop would have run them. */
        f->mask = saved ? LLVMBuildAnd(B, saved, c.v, "") : c.v;
        LLVMValueRef any = intr1(g, "llvm.vector.reduce.or", f->mask);
        region_end(f);
        LLVMBuildCondBr(B, any, then, join);
    } else {
        region_end(f);
        LLVMBuildCondBr(B, c.v, then, join);
    }
    LLVMPositionBuilderAtEnd(B, then);
    emit_list(f, &n->u.guard.body);
    region_end(f);
    LLVMBuildBr(B, join);
    LLVMMoveBasicBlockAfter(join, LLVMGetInsertBlock(B));
    LLVMPositionBuilderAtEnd(B, join);
    f->mask = saved;
}

static void emit_vector(Fn *f, const Node *n, LLVMValueRef lo, int w, bool ordered)
{
    Cg *g = f->g;
    f->ordered = ordered;
    Var *v = n->u.loop.var;
    LLVMValueRef steps[MAX_VECTOR_WIDTH];
    for (int i = 0; i < w; i++)
        steps[i] = ci64(g, i);
    f->vvar = v;
    f->vw = w;
    f->vlo = lo;
    f->mask = NULL;
    LLVMValueRef iv = LLVMBuildNSWAdd(g->B, splat(f, lo), LLVMConstVector(steps, (unsigned)w), v->name);
    Binding saved = bind(f, v, (Val){iv, true});
    emit_list(f, &n->u.loop.body);
    unbind(f, v, saved);
    f->vvar = NULL;
    f->vw = 0;
    f->vlo = NULL;
    f->ordered = false;
}

static void emit_parallel(Fn *f, const Node *n, LLVMValueRef lo, LLVMValueRef hi);

/* ---- small serial loops ----
 *
 * A kernel whose schedule made loops vector or unroll is optimised without LLVM's
 * loop unrollers and vectorisers (jit.c, optimize()), which cost far more than they
 * bring on big unrolled tiles.  The small loops around such tiles that the schedule
 * left serial are treated here, where it costs nothing to decide:
 *  - a loop of at most UNROLL_STMTS statements in all once unrolled (the 3x3 taps of
 *    conv2d's filter packing) is unrolled;
 *  - a loop over a register tile with the tile's layout is vectorised (below), and
 *    one that changes the layout becomes a transpose (emit_transpose);
 *  - the loop around a small register-tile update is unrolled twice (unroll_twice). */
#define UNROLL_STMTS 16
#define TILE_ELEMS 256
#define BIG INT64_MAX

static bool unroll_serial(const Cg *g, const Node *n);

/* A private buffer small enough to live in registers. */
static bool is_tile(const Cg *g, const Buffer *b)
{
    return g->priv[b->id] && g->elems[b->id] <= TILE_ELEMS;
}

/* Statements of l once its serial loops are unrolled by these rules; BIG when a
 * loop in it stays a loop or is not serial. */
static int64_t unrolled_size(const Cg *g, const NodeList *l)
{
    int64_t size = 0;
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        int64_t s, ext;
        switch (n->kind) {
        case N_STMT: s = 1; break;
        case N_IF:
            s = unrolled_size(g, &n->u.guard.body);
            s = s == BIG ? BIG : s + 1;
            break;
        case N_LOOP:
            s = unrolled_size(g, &n->u.loop.body);
            /* Only serial loops unrolled by these rules: what the schedule made vector
             * or unroll is its own business (and a vector loop may fall back). */
            if (s == BIG || !const_extent(g, n->u.loop.lo, n->u.loop.hi, &ext) || ext > MAX_UNROLL ||
                !unroll_serial(g, n))
                return BIG;
            s *= ext;
            break;
        default: s = 0;
        }
        if (s == BIG || size > BIG - s)
            return BIG;
        size += s;
    }
    return size;
}

/* Whether e reads a register tile at an index that uses v. */
static bool expr_tile_at(const Cg *g, const Expr *e, const Var *v)
{
    if (!e)
        return false;
    if (e->kind == IE_LOAD) {
        const Buffer *b = e->u.load.buf;
        for (int i = 0; i < b->rank; i++)
            if ((is_tile(g, b) && ir_expr_uses_var(e->u.load.idx[i], v)) || expr_tile_at(g, e->u.load.idx[i], v))
                return true;
        return false;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        if (expr_tile_at(g, e->args[i], v))
            return true;
    return false;
}

static bool list_tile_at(const Cg *g, const NodeList *l, const Var *v)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        if (n->kind == N_STMT) {
            const Buffer *b = n->u.stmt.buf;
            for (int j = 0; j < b->rank; j++)
                if (is_tile(g, b) && ir_expr_uses_var(n->u.stmt.idx[j], v))
                    return true;
            if (expr_tile_at(g, n->u.stmt.value, v))
                return true;
        } else if (list_tile_at(g, ir_body((Node *)n), v)) {
            return true;
        }
    }
    return false;
}

static bool unroll_serial(const Cg *g, const Node *n)
{
    int64_t ext, s;
    if (!g->lean || n->u.loop.kind != LOOP_SERIAL || !const_extent(g, n->u.loop.lo, n->u.loop.hi, &ext) || ext < 1 ||
        ext > MAX_UNROLL || (s = unrolled_size(g, &n->u.loop.body)) == BIG)
        return false;
    return s * ext <= UNROLL_STMTS;
}

/* Whether every load in e is uniform or contiguous in v (no gather). */
static bool loads_plain(const Cg *g, const Expr *e, const Var *v)
{
    if (!e)
        return true;
    if (e->kind == IE_LOAD) {
        if (access_kind(g, e->u.load.idx, e->u.load.buf->rank, v) == ACC_OTHER || (e->u.load.guarded && e->u.load.buf->has_pad))
            return false;
        for (int i = 0; i < e->u.load.buf->rank; i++)
            if (!loads_plain(g, e->u.load.idx[i], v))
                return false;
        return true;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        if (!loads_plain(g, e->args[i], v))
            return false;
    return true;
}

static bool offset_aff(const Cg *g, const Buffer *b, Expr *const *idx, Aff *tot);

/* Whether two affine forms are the same function of the loop variables. */
static bool aff_same(const Aff *a, const Aff *b)
{
    Aff d = {0};
    if (!aff_add(&d, a, 1) || !aff_add(&d, b, -1) || d.c != 0)
        return false;
    for (int i = 0; i < d.n; i++)
        if (d.k[i] != 0)
            return false;
    return true;
}

/* Whether every load of b in e is of the element at offset *at (per lane: the same
 * affine form of the loop variables). */
static bool loads_at(const Cg *g, const Expr *e, const Buffer *b, const Aff *at)
{
    if (!e)
        return true;
    if (e->kind == IE_LOAD) {
        Aff o;
        if (e->u.load.buf == b && (!offset_aff(g, b, e->u.load.idx, &o) || !aff_same(&o, at)))
            return false;
        for (int i = 0; i < e->u.load.buf->rank; i++)
            if (!loads_at(g, e->u.load.idx[i], b, at))
                return false;
        return true;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        if (!loads_at(g, e->args[i], b, at))
            return false;
    return true;
}

/* Whether the statements of l (a serial loop over v) give the serial loop's result
 * when run lane-parallel, each statement for all iterations before the next: every
 * buffer written is written and read by every iteration at its own element (one
 * affine offset, moving with v), or is a reduction into one element that no other
 * statement of the loop touches (emitted as an ordered reduction).  A loop that a
 * schedule marks `vector` was proven free of carried dependences by passes/deps.c;
 * loops that the code generator vectorises on its own (vectorise_serial) were not,
 * so this is checked here: a staged copy of one element, `t[0] = rf[c]` followed by
 * `s += t[0]` (what `cache` of a partial result at its combination loop leaves once
 * simplify has removed the one-trip copy loops), must stay serial. */
static bool lanes_independent(const Cg *g, const NodeList *l, const Var *v)
{
    for (int i = 0; i < l->n; i++) {
        const Node *s = l->v[i];
        if (s->kind != N_STMT)
            return false;
        const Buffer *b = s->u.stmt.buf;
        AccKind ak = access_kind(g, s->u.stmt.idx, b->rank, v);
        if (ak == ACC_UNIFORM) {
            if (s->u.stmt.op == SOP_ASSIGN)
                return false;
            for (int j = 0; j < l->n; j++) {
                const Node *t = l->v[j];
                if (j == i)
                    continue;
                if (t->u.stmt.buf == b || reads_buffer(t->u.stmt.value, b))
                    return false;
                for (int d = 0; d < t->u.stmt.buf->rank; d++)
                    if (reads_buffer(t->u.stmt.idx[d], b))
                        return false;
            }
            continue;
        }
        Aff at;
        if (ak != ACC_CONTIG || !offset_aff(g, b, s->u.stmt.idx, &at))
            return false;
        for (int j = 0; j < l->n; j++) {
            const Node *t = l->v[j];
            Aff o;
            if (t->u.stmt.buf == b && (!offset_aff(g, b, t->u.stmt.idx, &o) || !aff_same(&o, &at)))
                return false;
            if (!loads_at(g, t->u.stmt.value, b, &at))
                return false;
            for (int d = 0; d < t->u.stmt.buf->rank; d++)
                if (!loads_at(g, t->u.stmt.idx[d], b, &at))
                    return false;
        }
    }
    return true;
}

/* A small serial loop whose statements touch a register tile (the initialisation
 * and the combination loops around an rfactor's partial results, a tile copied
 * with its layout unchanged) is emitted as a vector loop, so that every access to
 * the tile is at a constant offset and the tile becomes registers.  Only loops of
 * statements whose loads are uniform or contiguous (no gathers, no padded reads);
 * float sums and products into one element become ordered reductions, which add in
 * the scalar loop's order, so the result is the same to the bit. */
static bool vectorise_serial(const Cg *g, const Node *n, int64_t ext)
{
    const NodeList *l = &n->u.loop.body;
    const Var *v = n->u.loop.var;
    if (!g->lean || n->u.loop.kind != LOOP_SERIAL || ext < 2 || ext > 64 || !list_tile_at(g, l, v))
        return false;
    for (int i = 0; i < l->n; i++) {
        const Node *s = l->v[i];
        if (s->kind != N_STMT || !loads_plain(g, s->u.stmt.value, v))
            return false;
        for (int j = 0; j < s->u.stmt.buf->rank; j++)
            if (!loads_plain(g, s->u.stmt.idx[j], v))
                return false;
    }
    char why[8];
    Span where;
    return vector_check(g, l, v, why, sizeof why, &where) && lanes_independent(g, l, v);
}

/* ---- register tiles copied across a layout change ----
 *
 * cache() with layout() gives a register tile whose contiguous dimension is not
 * the buffer's: conv2d keeps a 14 x 8 tile of Y with the 8 output channels
 * contiguous, so it is copied in and out by two loops with a strided side each.  As
 * loops the tile stays in memory; unrolled, the 2 x 112 element copies are slow to
 * compile and to run.  Such a nest is emitted as a transpose instead: the rows of
 * the buffer are loaded as vectors, transposed with shuffles in blocks of the tile's
 * row length (log2(n) stages of n shuffles, the classic in-register transpose), and
 * stored as tile rows (and the other way round), every tile access at a constant
 * offset, so that the tile becomes registers. */

/* The linearised element offset of b[idx] as an affine form over loop variables. */
static bool offset_aff(const Cg *g, const Buffer *b, Expr *const *idx, Aff *tot)
{
    Aff a;
    int64_t stride = 1;
    memset(tot, 0, sizeof *tot);
    for (int i = b->rank - 1; i >= 0; i--) {
        if (!affine(g, idx[i], &a) || !aff_add(tot, &a, stride))
            return false;
        stride *= g->dims[b->id][i];
    }
    return true;
}

static int64_t coef(const Aff *a, const Var *v)
{
    int64_t k = 0;
    for (int i = 0; i < a->n; i++)
        if (a->var[i] == v->id)
            k += a->k[i];
    return k;
}

/* Transposes the w vectors r[0..w) of w lanes (w a power of two) in place. */
static void transpose(Cg *g, LLVMValueRef *r, int w)
{
    if (w == 8) {
        /* The masks of unpcklps/unpckhps, shufps and vperm2f128: one AVX instruction
         * each (the generic network below needs two for its last stage). */
        static const int ul[8] = {0, 8, 1, 9, 4, 12, 5, 13}, uh[8] = {2, 10, 3, 11, 6, 14, 7, 15};
        static const int sl[8] = {0, 1, 8, 9, 4, 5, 12, 13}, sh[8] = {2, 3, 10, 11, 6, 7, 14, 15};
        static const int pl[8] = {0, 1, 2, 3, 8, 9, 10, 11}, ph[8] = {4, 5, 6, 7, 12, 13, 14, 15};
        LLVMValueRef m[6][8];
        for (int k = 0; k < 8; k++) {
            m[0][k] = ci32(g, ul[k]); m[1][k] = ci32(g, uh[k]); m[2][k] = ci32(g, sl[k]);
            m[3][k] = ci32(g, sh[k]); m[4][k] = ci32(g, pl[k]); m[5][k] = ci32(g, ph[k]);
        }
        LLVMValueRef M[6];
        for (int i = 0; i < 6; i++) M[i] = LLVMConstVector(m[i], 8);
        LLVMValueRef t[8], u[8];
        for (int i = 0; i < 8; i += 2) {
            t[i] = LLVMBuildShuffleVector(g->B, r[i], r[i + 1], M[0], "");
            t[i + 1] = LLVMBuildShuffleVector(g->B, r[i], r[i + 1], M[1], "");
        }
        /* t0=lo(0,1) t1=hi(0,1) t2=lo(2,3) t3=hi(2,3) ... */
        for (int h = 0; h < 8; h += 4) {
            u[h + 0] = LLVMBuildShuffleVector(g->B, t[h + 0], t[h + 2], M[2], "");
            u[h + 1] = LLVMBuildShuffleVector(g->B, t[h + 0], t[h + 2], M[3], "");
            u[h + 2] = LLVMBuildShuffleVector(g->B, t[h + 1], t[h + 3], M[2], "");
            u[h + 3] = LLVMBuildShuffleVector(g->B, t[h + 1], t[h + 3], M[3], "");
        }
        for (int i = 0; i < 4; i++) {
            r[i] = LLVMBuildShuffleVector(g->B, u[i], u[i + 4], M[4], "");
            r[i + 4] = LLVMBuildShuffleVector(g->B, u[i], u[i + 4], M[5], "");
        }
        return;
    }
    LLVMValueRef lo[MAX_VECTOR_WIDTH], hi[MAX_VECTOR_WIDTH];
    for (int b = w / 2; b >= 1; b /= 2) {
        for (int k = 0; k < w; k++) {
            int c = k / (2 * b) * (2 * b), t = k % (2 * b);
            lo[k] = ci32(g, t < b ? c + t : w + c + t - b);
            hi[k] = ci32(g, t < b ? c + b + t : w + c + t);
        }
        LLVMValueRef ml = LLVMConstVector(lo, (unsigned)w), mh = LLVMConstVector(hi, (unsigned)w);
        for (int i = 0; i < w; i++)
            if (!(i & b)) {
                LLVMValueRef x = r[i], y = r[i + b];
                r[i] = LLVMBuildShuffleVector(g->B, x, y, ml, "");
                r[i + b] = LLVMBuildShuffleVector(g->B, x, y, mh, "");
            }
    }
}

/* The columns r[0..8) of the 8 x 8 block of G whose rows start at rows[0..8), for
 * 8 lanes: transpose() with its last stage (the exchange of 128-bit halves) done
 * by the loads, each vector the concatenation of two 4-lane loads (row i and row
 * i + 4, vinsertf128 from memory on x86), and the two in-lane stages after it.
 * Same instructions as loading whole rows and transposing them, but SelectionDAG
 * no longer sees a three-level tree of two-input shuffles above every load, in
 * which its demanded-elements analysis spent about 6 million instructions per
 * transpose: this form takes a third of that off. */
static void transpose8_loads(Fn *f, const Buffer *G, const Addr *rows, LLVMValueRef *r)
{
    Cg *g = f->g;
    static const int ul[8] = {0, 8, 1, 9, 4, 12, 5, 13}, uh[8] = {2, 10, 3, 11, 6, 14, 7, 15};
    static const int sl[8] = {0, 1, 8, 9, 4, 5, 12, 13}, sh[8] = {2, 3, 10, 11, 6, 7, 14, 15};
    LLVMValueRef m[5][8];
    for (int k = 0; k < 8; k++) {
        m[0][k] = ci32(g, ul[k]); m[1][k] = ci32(g, uh[k]); m[2][k] = ci32(g, sl[k]);
        m[3][k] = ci32(g, sh[k]); m[4][k] = ci32(g, k);
    }
    LLVMValueRef M[5];
    for (int i = 0; i < 5; i++) M[i] = LLVMConstVector(m[i], 8);
    LLVMValueRef v[8];
    for (int i = 0; i < 4; i++)
        for (int half = 0; half < 2; half++) {
            Addr lo = rows[i], hi = rows[i + 4];
            lo.c += 4 * half, hi.c += 4 * half;
            v[i + 4 * half] = LLVMBuildShuffleVector(g->B, load_at(f, G, lo, 4), load_at(f, G, hi, 4), M[4], "");
        }
    /* v[h..h+4): rows 0-3 of columns 4h'..4h'+3 in the low halves, rows 4-7 in the high */
    for (int h = 0; h < 8; h += 4) {
        LLVMValueRef t0 = LLVMBuildShuffleVector(g->B, v[h], v[h + 1], M[0], "");
        LLVMValueRef t1 = LLVMBuildShuffleVector(g->B, v[h], v[h + 1], M[1], "");
        LLVMValueRef t2 = LLVMBuildShuffleVector(g->B, v[h + 2], v[h + 3], M[0], "");
        LLVMValueRef t3 = LLVMBuildShuffleVector(g->B, v[h + 2], v[h + 3], M[1], "");
        r[h + 0] = LLVMBuildShuffleVector(g->B, t0, t2, M[2], "");
        r[h + 1] = LLVMBuildShuffleVector(g->B, t0, t2, M[3], "");
        r[h + 2] = LLVMBuildShuffleVector(g->B, t1, t3, M[2], "");
        r[h + 3] = LLVMBuildShuffleVector(g->B, t1, t3, M[3], "");
    }
}

/* The first n of w lanes. */
static LLVMValueRef tail_mask(Cg *g, int n, int w)
{
    LLVMValueRef m[MAX_VECTOR_WIDTH];
    for (int k = 0; k < w; k++)
        m[k] = LLVMConstInt(g->ti1, k < n, 0);
    return LLVMConstVector(m, (unsigned)w);
}

/* Emits loop nest L (`for a { for b { X[..] = Y[..] } }`) as a transpose when it
 * copies between a register tile and another buffer with their contiguous
 * dimensions on different loops; false (nothing emitted) otherwise. */
static bool emit_transpose(Fn *f, const Node *L)
{
    Cg *g = f->g;
    if (!g->lean || f->vw || L->u.loop.kind != LOOP_SERIAL || L->u.loop.body.n != 1)
        return false;
    const Node *L2 = L->u.loop.body.v[0];
    if (L2->kind != N_LOOP || L2->u.loop.kind != LOOP_SERIAL || L2->u.loop.body.n != 1)
        return false;
    const Node *st = L2->u.loop.body.v[0];
    if (st->kind != N_STMT || st->u.stmt.op != SOP_ASSIGN || st->u.stmt.value->kind != IE_LOAD)
        return false;
    const Expr *ld = st->u.stmt.value;
    const Buffer *sb = st->u.stmt.buf, *lb = ld->u.load.buf;
    if (sb->dtype != lb->dtype || sty(g, sb->dtype) != cty(g, sb->dtype) || (ld->u.load.guarded && lb->has_pad) ||
        is_tile(g, sb) == is_tile(g, lb))
        return false;
    bool in = is_tile(g, sb); /* copy into the tile */
    const Buffer *T = in ? sb : lb, *G = in ? lb : sb;
    Expr *const *ti = in ? st->u.stmt.idx : ld->u.load.idx, *const *gi = in ? ld->u.load.idx : st->u.stmt.idx;
    Aff ta, ga;
    Aff lo1, lo2;
    int64_t n1, n2;
    if (!offset_aff(g, T, ti, &ta) || !offset_aff(g, G, gi, &ga) || !const_extent(g, L->u.loop.lo, L->u.loop.hi, &n1) ||
        !const_extent(g, L2->u.loop.lo, L2->u.loop.hi, &n2) || !affine(g, L->u.loop.lo, &lo1) ||
        !affine(g, L2->u.loop.lo, &lo2) || lo1.n || lo2.n)
        return false;
    const Var *va = L->u.loop.var, *vb = L2->u.loop.var;
    /* tv: the tile's contiguous variable, gv: the buffer's. */
    const Var *tv, *gv;
    int64_t nt, ng, lot, log;
    if (coef(&ta, va) == 1 && coef(&ga, vb) == 1) {
        tv = va, gv = vb, nt = n1, ng = n2, lot = lo1.c, log = lo2.c;
    } else if (coef(&ta, vb) == 1 && coef(&ga, va) == 1) {
        tv = vb, gv = va, nt = n2, ng = n1, lot = lo2.c, log = lo1.c;
    } else {
        return false;
    }
    if (nt < 2 || nt > 16 || (nt & (nt - 1)) || ng < 1 || ng * nt > TILE_ELEMS || coef(&ta, gv) < nt)
        return false;
    for (int i = 0; i < ta.n; i++) /* the tile is indexed by a and b alone */
        if (ta.k[i] && ta.var[i] != va->id && ta.var[i] != vb->id)
            return false;

    LLVMValueRef r[16];
    Binding sa = bind(f, tv, S(ci64(g, lot))), sbb = bind(f, gv, S(ci64(g, log)));
    int w = (int)nt;
    for (int64_t q0 = 0; q0 < ng; q0 += w) {
        /* A last block of fewer than w columns is shifted back over the one before
         * (columns 6..13 of 14): whole vectors, columns copied twice with the same
         * values, no masked store (slow on AMD).  Masks only when ng < w. */
        int64_t q = q0 + w > ng && ng >= w ? ng - w : q0;
        int len = (int)(ng - q < w ? ng - q : w);
        Addr a;
        if (in) {
            Addr rows[16];
            for (int i = 0; i < w; i++) {
                f->vars[tv->id] = S(ci64(g, lot + i));
                f->vars[gv->id] = S(ci64(g, log + q));
                if (!affine_addr(f, G, gi, false, &a))
                    die("transpose: buffer address");
                rows[i] = a;
                if (len < w) { /* a masked load: no odd-sized vector for codegen to widen */
                    touch_unknown(f, G, false);
                    r[i] = tag(g, G, masked_load(f, LLVMVectorType(sty(g, G->dtype), (unsigned)w), ptr_at(f, G, a, false),
                                                 elem_align(g, G->dtype), tail_mask(g, len, w)));
                } else if (w != 8) {
                    r[i] = load_at(f, G, a, w);
                }
            }
            if (len == w && w == 8)
                transpose8_loads(f, G, rows, r);
            else
                transpose(g, r, w);
            for (int k = 0; k < len; k++) {
                f->vars[tv->id] = S(ci64(g, lot));
                f->vars[gv->id] = S(ci64(g, log + q + k));
                if (!affine_addr(f, T, ti, false, &a))
                    die("transpose: tile address");
                store_at(f, T, a, w, r[k]);
            }
        } else {
            for (int k = 0; k < w; k++) {
                if (k >= len) {
                    r[k] = LLVMGetPoison(LLVMVectorType(cty(g, T->dtype), (unsigned)w));
                    continue;
                }
                f->vars[tv->id] = S(ci64(g, lot));
                f->vars[gv->id] = S(ci64(g, log + q + k));
                if (!affine_addr(f, T, ti, false, &a))
                    die("transpose: tile address");
                r[k] = load_at(f, T, a, w);
            }
            transpose(g, r, w);
            for (int i = 0; i < w; i++) {
                f->vars[tv->id] = S(ci64(g, lot + i));
                f->vars[gv->id] = S(ci64(g, log + q));
                if (!affine_addr(f, G, gi, false, &a))
                    die("transpose: buffer address");
                if (len < w) {
                    touch_unknown(f, G, true);
                    tag(g, G, masked_store(f, r[i], ptr_at(f, G, a, false), elem_align(g, G->dtype), tail_mask(g, len, w)));
                } else {
                    store_at(f, G, a, w, r[i]);
                }
            }
        }
    }
    unbind(f, gv, sbb);
    unbind(f, tv, sa);
    return true;
}

/* Statements of a register-tile update once unrolled and vectorised; BIG when a
 * loop in it stays a loop or a guard in it is not known to hold. */
static int64_t tile_size(const Fn *f, const NodeList *l)
{
    const Cg *g = f->g;
    int64_t size = 0;
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        int64_t s = 1, ext;
        if (n->kind == N_IF) {
            if (!assumed(f, n))
                return BIG;
            s = tile_size(f, &n->u.guard.body);
        } else if (n->kind == N_LOOP) {
            s = tile_size(f, &n->u.loop.body);
            if (s == BIG || !const_extent(g, n->u.loop.lo, n->u.loop.hi, &ext) || ext > MAX_UNROLL)
                return BIG;
            if (n->u.loop.kind == LOOP_UNROLL || (n->u.loop.kind == LOOP_SERIAL && unroll_serial(g, n)))
                s *= ext;
            else if (n->u.loop.kind != LOOP_VECTOR)
                return BIG;
        }
        if (s == BIG || size > BIG - s)
            return BIG;
        size += s;
    }
    return size;
}

/* Whether e calls a function perfc expands inline into a long polynomial. */
static bool expr_transcendental(const Expr *e)
{
    if (!e)
        return false;
    if (e->kind == IE_EXP || e->kind == IE_LOG || e->kind == IE_TANH || e->kind == IE_ERF || e->kind == IE_LOG1P ||
        e->kind == IE_EXPM1 || e->kind == IE_POW)
        return true;
    if (e->kind == IE_LOAD) {
        for (int i = 0; i < e->u.load.buf->rank; i++)
            if (expr_transcendental(e->u.load.idx[i]))
                return true;
        return false;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        if (expr_transcendental(e->args[i]))
            return true;
    return false;
}

static bool list_transcendental(const NodeList *l)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        if (n->kind == N_STMT ? expr_transcendental(n->u.stmt.value)
                              : list_transcendental(ir_body((Node *)n)))
            return true;
    }
    return false;
}

/* The serial loop around a small register-tile update (gemm's k loop around its
 * 6 x 16 tile: six vector FMAs) runs two iterations per trip, as LLVM's unroller
 * used to make it: the loop's increment, compare and branch are then paid once per
 * twelve FMAs rather than six (1-2% on gemm).  Not in the guarded version of a
 * versioned loop (edge tiles, rarely run), nor for a bigger update (conv2d's 126
 * FMAs), which has no loop overhead worth the code, nor around an exp, log, tanh
 * or erf: each is some twenty instructions per vector (softmax's exp loop over 64
 * lanes is 200), so the loop is never small, and twice the code cost softmax 6 ms
 * of compile time once its trip count became constant. */
static bool unroll_twice(const Fn *f, const Node *n)
{
    const Cg *g = f->g;
    int64_t ext, s;
    if (!g->lean || n->u.loop.kind != LOOP_SERIAL || !const_extent(g, n->u.loop.lo, n->u.loop.hi, &ext) || ext < 4 ||
        ext % 2 || !holds_scheduled(&n->u.loop.body) || list_transcendental(&n->u.loop.body))
        return false;
    s = tile_size(f, &n->u.loop.body);
    return s >= 4 && s <= UNROLL_STMTS;
}

/* A serial loop whose whole body is one guard bounding the loop's own variable
 * (`for j in 0..S: if j <= i: ...`, the mask of causal attention) runs over the
 * range where the guard holds, without the guard: half the iterations and no
 * branch in the others, which LLVM can then vectorise.  The guard must be a
 * conjunction of affine comparisons in which the variable has coefficient 1 or -1
 * and every other variable is bound to a scalar; *lo and *hi are narrowed. */
static bool narrow_bounds(Fn *f, const Node *L, LLVMValueRef *lo, LLVMValueRef *hi)
{
    Cg *g = f->g;
    if (f->vw || L->u.loop.body.n != 1 || L->u.loop.body.v[0]->kind != N_IF)
        return false;
    const Node *gd = L->u.loop.body.v[0];
    Cmp cmp[8];
    int nc = 0;
    if (!conjuncts(g, gd->u.guard.cond, cmp, &nc, 8))
        return false;
    int lv = L->u.loop.var->id;
    for (int c = 0; c < nc; c++) {
        int64_t k = 0;
        for (int t = 0; t < cmp[c].d.n; t++) {
            int v = cmp[c].d.var[t];
            if (v == lv)
                k += cmp[c].d.k[t];
            else if (cmp[c].d.k[t] && (!f->vars[v].v || f->vars[v].vec))
                return false;
        }
        if (k != 1 && k != -1)
            return false;
    }
    LLVMBuilderRef B = g->B;
    for (int c = 0; c < nc; c++) {
        /* d = k*v + rest + c <= lim, rest in [rmin, rmax] when every variable's range
         * is known (then a bound the loop's own cannot exceed needs no min/max) */
        int64_t k = 0, rmin = cmp[c].d.c, rmax = cmp[c].d.c;
        bool known = true;
        LLVMValueRef rest = ci64(g, cmp[c].d.c);
        for (int t = 0; t < cmp[c].d.n; t++) {
            int v = cmp[c].d.var[t];
            int64_t kv = cmp[c].d.k[t];
            if (v == lv) {
                k += kv;
            } else if (kv) {
                rest = LLVMBuildNSWAdd(B, rest, LLVMBuildNSWMul(B, f->vars[v].v, ci64(g, kv), ""), "");
                known &= f->vmin[v] <= f->vmax[v];
                rmin += kv > 0 ? kv * f->vmin[v] : kv * f->vmax[v];
                rmax += kv > 0 ? kv * f->vmax[v] : kv * f->vmin[v];
            }
        }
        if (k == 1) { /* v <= lim - rest */
            LLVMValueRef b = LLVMBuildNSWSub(B, ci64(g, cmp[c].lim + 1), rest, "");
            bool tighter = known && LLVMIsAConstantInt(*hi) && cmp[c].lim + 1 - rmin <= LLVMConstIntGetSExtValue(*hi);
            bool looser = known && LLVMIsAConstantInt(*hi) && cmp[c].lim + 1 - rmax >= LLVMConstIntGetSExtValue(*hi);
            if (!looser)
                *hi = tighter ? b : intr2(g, "llvm.smin", *hi, b);
        } else { /* v >= rest - lim */
            LLVMValueRef b = LLVMBuildNSWSub(B, rest, ci64(g, cmp[c].lim), "");
            bool tighter = known && LLVMIsAConstantInt(*lo) && rmin - cmp[c].lim >= LLVMConstIntGetSExtValue(*lo);
            bool looser = known && LLVMIsAConstantInt(*lo) && rmax - cmp[c].lim <= LLVMConstIntGetSExtValue(*lo);
            if (!looser)
                *lo = tighter ? b : intr2(g, "llvm.smax", *lo, b);
        }
    }
    return true;
}

/* Serial loop n's body for the one value x of its variable, without a loop. */
static void emit_once(Fn *f, const Node *n, LLVMValueRef x)
{
    Binding saved = bind(f, n->u.loop.var, S(x));
    start_fresh(f, n);
    emit_list(f, &n->u.loop.body);
    unbind(f, n->u.loop.var, saved);
}

/* Whether e is a constant whose storage is all zero bytes (0, +0.0, false). */
static bool zero_const(const Expr *e)
{
    if (e->kind == IE_CAST)
        return zero_const(e->args[0]);
    if (e->kind == IE_INT)
        return e->u.i == 0;
    if (e->kind == IE_FLT)
        return e->u.f == 0 && !signbit(e->u.f);
    return false;
}

/* Whether e is zero wherever it is evaluated from here: a zero constant, or a read
 * of an input padded with zero that is known to fall outside it (the border rows of
 * a padded image copy, once split_padded has fixed the row). */
static bool zero_value(const Fn *f, const Expr *e)
{
    if (zero_const(e))
        return true;
    const Buffer *b = e->kind == IE_LOAD ? e->u.load.buf : NULL;
    return b && e->u.load.guarded && b->has_pad && b->pad == 0 && !signbit(b->pad) && pad_known(f, e) < 0;
}

/* A serial loop over [lo, hi) whose body copies one buffer into another, element
 * after element on both sides (`Xs[c, y, x] = X?[c, y - 1, x - 1]` for the x where
 * the read stays inside X), is one memcpy; LLVM expands a short one inline.  With
 * the short pipeline there is no loop idiom recognition to do it, and the scalar
 * loop it replaces was what the code generator spent most on in a padded copy. */
static bool emit_copy_range(Fn *f, const Node *L, int64_t lo, int64_t hi)
{
    Cg *g = f->g;
    const Node *n = L->u.loop.body.n == 1 ? L->u.loop.body.v[0] : NULL;
    if (!n || n->kind != N_STMT || n->u.stmt.op != SOP_ASSIGN || n->u.stmt.value->kind != IE_LOAD || hi - lo < 2)
        return false;
    const Expr *e = n->u.stmt.value;
    const Buffer *d = n->u.stmt.buf, *src = e->u.load.buf;
    const Var *v = L->u.loop.var;
    Aff od, os;
    if (d == src || d->dtype != src->dtype || e->dtype != src->dtype || !offset_aff(g, d, n->u.stmt.idx, &od) ||
        !offset_aff(g, src, e->u.load.idx, &os) || coef(&od, v) != 1 || coef(&os, v) != 1)
        return false;
    Binding sv = bind(f, v, S(ci64(g, lo)));
    bool ok = !(e->u.load.guarded && src->has_pad) || (f->vmin[v->id] = lo, f->vmax[v->id] = hi - 1, pad_known(f, e) > 0);
    f->vmin[v->id] = f->vmax[v->id] = lo;
    Addr ad, as;
    ok = ok && affine_addr(f, d, n->u.stmt.idx, false, &ad) && affine_addr(f, src, e->u.load.idx, false, &as);
    unbind(f, v, sv);
    if (!ok)
        return false;
    touch_unknown(f, src, false);
    touch_unknown(f, d, true);
    unsigned al = elem_align(g, d->dtype);
    /* No alias tags: the copy accesses two buffers, and a tag names one scope. */
    LLVMBuildMemCpy(g->B, ptr_at(f, d, ad, true), al, ptr_at(f, src, as, true), al,
                    ci64(g, (hi - lo) * dtype_bytes(d->dtype)));
    return true;
}

/* A nest of serial loops that stores zero into a contiguous range of a buffer (the
 * zero initialisation a reduction's distribute leaves, conv2d's 100 000 elements of
 * Y) is one memset.  Each loop must have constant bounds and the nest's variables
 * must lay the elements out without gaps (strides 1, n1, n1*n2, ...). */
static bool emit_zero_fill(Fn *f, const Node *L)
{
    Cg *g = f->g;
    const Node *n = L;
    const Node *loops[8];
    int nl = 0;
    while (n->kind == N_LOOP) {
        if (n->u.loop.kind != LOOP_SERIAL || nl == 8 || n->u.loop.body.n != 1)
            return false;
        loops[nl++] = n;
        n = n->u.loop.body.v[0];
    }
    if (n->kind != N_STMT || n->u.stmt.op != SOP_ASSIGN || !zero_value(f, n->u.stmt.value))
        return false;
    const Buffer *b = n->u.stmt.buf;
    Aff off;
    if (!offset_aff(g, b, n->u.stmt.idx, &off))
        return false;
    int64_t ext[8], lo[8], k[8], total = 1;
    for (int i = 0; i < nl; i++) {
        Aff l;
        if (!const_extent(g, loops[i]->u.loop.lo, loops[i]->u.loop.hi, &ext[i]) || ext[i] < 1 ||
            !affine(g, loops[i]->u.loop.lo, &l) || l.n)
            return false;
        lo[i] = l.c;
        k[i] = coef(&off, loops[i]->u.loop.var);
    }
    /* The strides, smallest first, must be 1, ext, ext*ext', ... */
    bool used[8] = {false};
    int64_t want = 1;
    for (int j = 0; j < nl; j++) {
        int i;
        for (i = 0; i < nl && (used[i] || k[i] != want); i++)
            ;
        if (i == nl)
            return false;
        used[i] = true;
        want *= ext[i];
        total *= ext[i];
    }
    /* The loops' variables at their lower bounds give the first element. */
    Binding sv[8];
    for (int i = 0; i < nl; i++)
        sv[i] = bind(f, loops[i]->u.loop.var, S(ci64(g, lo[i])));
    Addr a;
    bool ok = affine_addr(f, b, n->u.stmt.idx, false, &a);
    for (int i = nl - 1; i >= 0; i--)
        unbind(f, loops[i]->u.loop.var, sv[i]);
    if (!ok)
        return false;
    touch_unknown(f, b, true);
    LLVMValueRef p = ptr_at(f, b, a, true);
    tag(g, b, LLVMBuildMemSet(g->B, p, LLVMConstInt(g->ti8, 0, 0), ci64(g, total * dtype_bytes(b->dtype)),
                              elem_align(g, b->dtype)));
    return true;
}

/* Narrows [*a, *b) to the values of loop variable v for which every index of the
 * padded reads in e that moves with v (coefficient 1 or -1, the other variables
 * of known range) is inside its dimension. */
static void pad_range_expr(const Fn *f, const Expr *e, const Var *v, int64_t *a, int64_t *b)
{
    if (!e)
        return;
    if (e->kind == IE_LOAD) {
        const Buffer *buf = e->u.load.buf;
        for (int i = 0; i < buf->rank; i++) {
            pad_range_expr(f, e->u.load.idx[i], v, a, b);
            Aff x;
            if (!(e->u.load.guarded && buf->has_pad) || !affine(f->g, e->u.load.idx[i], &x))
                continue;
            int64_t k = coef(&x, v), lo, hi, d = f->g->dims[buf->id][i];
            if (k != 1 && k != -1)
                continue;
            Aff rest = x; /* the index without v */
            for (int t = 0; t < rest.n; t++)
                if (rest.var[t] == v->id)
                    rest.k[t] = 0;
            if (!aff_range(f, &rest, &lo, &hi))
                continue;
            /* k = 1: 0 <= v + rest < d for all rest;  k = -1: 0 <= rest - v < d */
            int64_t na = k == 1 ? -lo : hi - d + 1, nb = k == 1 ? d - hi : lo + 1;
            if (na > *a)
                *a = na;
            if (nb < *b)
                *b = nb;
        }
        return;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        pad_range_expr(f, e->args[i], v, a, b);
}

static void pad_range_list(const Fn *f, const NodeList *l, const Var *v, int64_t *a, int64_t *b)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        if (n->kind == N_STMT) {
            pad_range_expr(f, n->u.stmt.value, v, a, b);
            for (int j = 0; j < n->u.stmt.buf->rank; j++)
                pad_range_expr(f, n->u.stmt.idx[j], v, a, b);
        } else {
            if (n->kind == N_IF)
                pad_range_expr(f, n->u.guard.cond, v, a, b);
            pad_range_list(f, ir_body((Node *)n), v, a, b);
        }
    }
}

/* In a kernel with register tiles, a serial loop of constant bounds over padded
 * reads (the copy of conv2d's image with its zero border) runs in up to three
 * pieces: where the reads may leave their buffer, and between, where they cannot
 * and need no clamp or select (nor, when nothing else is tested, any branch).
 * Nested loops split in turn, so the interior of the image is a plain copy. */
static bool split_padded(Fn *f, const Node *L, int64_t lo, int64_t hi)
{
    if (!f->g->lean || f->vw || !cg_list_padded(&L->u.loop.body))
        return false;
    int64_t a = INT64_MIN, b = INT64_MAX;
    /* v is bound only so that affine() accepts indices that use it; an empty range
     * (min > max) keeps aff_range from reading anything into the value bound */
    Binding sv = bind(f, L->u.loop.var, S(ci64(f->g, lo)));
    f->vmin[L->u.loop.var->id] = 1, f->vmax[L->u.loop.var->id] = 0;
    pad_range_list(f, &L->u.loop.body, L->u.loop.var, &a, &b);
    unbind(f, L->u.loop.var, sv);
    if (a < lo)
        a = lo;
    if (b > hi)
        b = hi;
    if (a >= b || (a == lo && b == hi))
        return false;
    int64_t cut[4] = {lo, a, b, hi};
    for (int i = 0; i < 3; i++)
        if (cut[i] + 1 == cut[i + 1])
            emit_once(f, L, ci64(f->g, cut[i])); /* the border rows and columns of a 1-pixel pad */
        else if (cut[i] < cut[i + 1] && !emit_copy_range(f, L, cut[i], cut[i + 1]))
            emit_serial_ex(f, L, ci64(f->g, cut[i]), ci64(f->g, cut[i + 1]), false);
    return true;
}

static LLVMValueRef emit_bound(Fn *f, const Expr *e)
{
    bool vec;
    LLVMValueRef v = emit_i64(f, e, &vec);
    if (vec)
        die("loop bound varies across vector lanes");
    return v;
}

static void emit_loop(Fn *f, const Node *n)
{
    Cg *g = f->g;
    LoopKind kind = n->u.loop.kind;
    LLVMValueRef lo = emit_bound(f, n->u.loop.lo), hi = emit_bound(f, n->u.loop.hi);
    Var *v = n->u.loop.var;
    int64_t ext = 0;
    bool cext = const_extent(g, n->u.loop.lo, n->u.loop.hi, &ext);
    if (kind == LOOP_SERIAL && !f->vw && emit_zero_fill(f, n))
        return;
    if (kind == LOOP_SERIAL && cext && LLVMIsAConstantInt(lo) &&
        split_padded(f, n, LLVMConstIntGetSExtValue(lo), LLVMConstIntGetSExtValue(lo) + ext))
        return;
    if (kind == LOOP_SERIAL && f->nassume < MAX_HOISTED && narrow_bounds(f, n, &lo, &hi)) {
        f->assume[f->nassume++] = n->u.loop.body.v[0];
        emit_serial_ex(f, n, lo, hi, false);
        f->nassume--;
        return;
    }
    if (kind == LOOP_SERIAL && cext && ext <= 1) {
        /* No loop for one iteration (batch loops at batch 1, say), none for none. */
        if (ext == 1)
            emit_once(f, n, lo);
        return;
    }
    if (kind == LOOP_SERIAL && cext && emit_transpose(f, n))
        return;
    if (kind == LOOP_SERIAL && cext && !f->vw && vectorise_serial(g, n, ext)) {
        emit_vector(f, n, lo, (int)ext, true);
        return;
    }
    if (kind == LOOP_SERIAL && cext && unroll_serial(g, n)) {
        for (int64_t i = 0; i < ext; i++) {
            LLVMValueRef iv = i == 0 ? lo : LLVMBuildNSWAdd(g->B, lo, ci64(g, i), "");
            Binding saved = bind(f, v, S(iv));
            emit_list(f, &n->u.loop.body);
            unbind(f, v, saved);
        }
        return;
    }
    if (kind == LOOP_UNROLL) {
        if (cext && ext <= MAX_UNROLL) {
            for (int64_t i = 0; i < ext; i++) {
                LLVMValueRef iv = i == 0 ? lo : LLVMBuildNSWAdd(g->B, lo, ci64(g, i), "");
                Binding saved = bind(f, v, S(iv));
                emit_list(f, &n->u.loop.body);
                unbind(f, v, saved);
            }
            return;
        }
        diag_warning(g->d, n->span, "unroll loop '%s' %s; emitted as a loop", v->name,
                     cext ? "has more than 4096 iterations" : "has no constant trip count");
    } else if (kind == LOOP_VECTOR) {
        char why[256] = "";
        Span where = n->span;
        if (f->vw)
            snprintf(why, sizeof why, "it is nested in vector loop '%s'", f->vvar->name);
        else if (!cext)
            snprintf(why, sizeof why, "its trip count is not a constant");
        else if (ext > MAX_VECTOR_WIDTH)
            snprintf(why, sizeof why, "it is wider than %d lanes", MAX_VECTOR_WIDTH);
        else
            vector_check(g, &n->u.loop.body, v, why, sizeof why, &where);
        if (!why[0]) {
            if (ext > 0)
                emit_vector(f, n, lo, (int)ext, false);
            return;
        }
        diag_warning(g->d, n->span, "vector loop '%s' emitted as a scalar loop: %s", v->name, why);
        if (where.src && where.off != n->span.off)
            diag_note(g->d, where, "here");
    } else if (kind == LOOP_PARALLEL) {
        if (!f->vw) {
            emit_parallel(f, n, lo, hi);
            return;
        }
    }
    emit_serial(f, n, lo, hi);
}

/* ---- prefetch ----
 *
 * A prefetch node (schedule `prefetch`, passes/xform_prefetch.c) becomes
 * llvm.prefetch (read, locality 3, data cache) of each 64-byte line of its box.
 * The box is first clamped into the buffer, per dimension
 * lo = min(max(lo, 0), dim - ext), so every address formed lies inside it (the
 * last row's `r + 1` fetches the last row again).  Inside a vector loop the box
 * grows by the index's step per lane times the lanes, and is fetched once: one
 * prefetch per line, not per lane.  A contiguous run of the box (along its last
 * dimension) gets one prefetch every 64 bytes, plus one at its last element when
 * what is known of its start's alignment leaves room to straddle one more line;
 * up to 64 prefetches are unrolled, more become loops over the runs and lines. */

/* The largest power of two, at most a line (64), that divides x (64 for 0). */
static int64_t pf_pow2(int64_t x)
{
    int64_t a = 64;
    while (a > 1 && x % a != 0)
        a /= 2;
    return a;
}

/* How far e * mult (bytes) is certainly aligned, up to a line: the power of two
 * dividing it for every value of e (the vector variable pinned to lane 0). */
static int64_t pf_align(Fn *f, const Expr *e, int64_t shift, int64_t mult)
{
    Aff a;
    if (!affine(f->g, e, &a))
        return 1;
    int64_t c = a.c + shift, al = 64;
    for (int i = 0; i < a.n; i++) {
        if (f->vw && a.var[i] == f->vvar->id && LLVMIsAConstantInt(f->vlo)) {
            c += a.k[i] * LLVMConstIntGetSExtValue(f->vlo);
            continue;
        }
        int64_t t = pf_pow2(a.k[i] * mult);
        al = t < al ? t : al;
    }
    int64_t t = pf_pow2(c * mult);
    return t < al ? t : al;
}

static void pf_line(Fn *f, const Buffer *b, LLVMValueRef off, bool write)
{
    Cg *g = f->g;
    LLVMTypeRef ov[1] = {g->tptr};
    LLVMValueRef args[4] = {gep(f, b, off, true), ci32(g, write), ci32(g, 3), ci32(g, 1)};
    intr(g, "llvm.prefetch", ov, 1, args, 4);
}

static void emit_prefetch(Fn *f, const Node *n)
{
    Cg *g = f->g;
    LLVMBuilderRef B = g->B;
    const Buffer *b = n->u.pf.buf;
    int rank = b->rank;
    if (rank < 1 || rank > 8 || !f->bufp[b->id] || g->elems[b->id] <= 0)
        return; /* a hint: nothing to fetch, or no pointer to fetch through here */
    int64_t esz = dtype_bytes(b->dtype), w[8], pitch[8];
    LLVMValueRef lo[8];
    /* Alignment of the box's runs, up to a line: global buffers start on one
     * (CG_BUF_ALIGN), private ones on an element. */
    int64_t al = g->priv[b->id] ? esz : CG_BUF_ALIGN < 64 ? CG_BUF_ALIGN : 64;
    pitch[rank - 1] = 1;
    for (int d = rank - 2; d >= 0; d--)
        pitch[d] = pitch[d + 1] * g->dims[b->id][d + 1];
    for (int d = 0; d < rank; d++) {
        const Expr *e = n->u.pf.idx[d];
        int64_t dim = g->dims[b->id][d], step = 0, shift = 0;
        w[d] = n->u.pf.ext[d];
        if (f->vw) {
            if (stride(g, e, f->vvar, &step) && step != 0) {
                int64_t span = step * (f->vw - 1);
                shift = span < 0 ? span : 0;
                w[d] += span < 0 ? -span : span;
            }
            lo[d] = lane0_i64(f, e);
            if (shift)
                lo[d] = LLVMBuildNSWAdd(B, lo[d], ci64(g, shift), "");
        } else {
            bool vec;
            lo[d] = emit_i64(f, e, &vec);
        }
        if (w[d] > dim)
            w[d] = dim;
        lo[d] = intr2(g, "llvm.smax", lo[d], ci64(g, 0));
        lo[d] = intr2(g, "llvm.smin", lo[d], ci64(g, dim - w[d]));
        /* the start, both clamp bounds and, for an outer dimension, each run's step */
        int64_t mult = pitch[d] * esz, a = pf_align(f, e, shift, mult), c = pf_pow2((dim - w[d]) * mult);
        al = a < al ? a : al;
        al = c < al ? c : al;
        if (d < rank - 1 && w[d] > 1)
            al = pf_pow2(mult) < al ? pf_pow2(mult) : al;
    }
    int64_t runs = 1, run_bytes = w[rank - 1] * esz;
    for (int d = 0; d + 1 < rank; d++)
        runs *= w[d];
    /* a run starting at worst 64 - al bytes into a line may touch one line more
     * than its length needs: then its last element is fetched as well */
    int64_t lines = (run_bytes + 63) / 64;
    bool tail = (64 - al + run_bytes + 63) / 64 > lines;
    int64_t per_run = lines + tail;
    LLVMValueRef start = linearize(f, b, lo);
    /* Up to 64 prefetches in all are unrolled; past that the runs (over the outer
     * dimensions' digits) and the lines of a long run are loops. */
    bool unrolled = runs * per_run <= 64, loop_lines = !unrolled && lines > 8;
    LoopSt lr, ll;
    for (int64_t t = 0; t < (unrolled ? runs : 1); t++) {
        LLVMValueRef off = start;
        if (!unrolled && runs > 1) {
            LLVMValueRef rest = loop_open(f, ci64(g, 0), ci64(g, runs), "pf.run", &lr), add = NULL;
            for (int d = rank - 2; d >= 0; d--) {
                if (w[d] == 1)
                    continue;
                LLVMValueRef x = LLVMBuildNSWMul(B, LLVMBuildSRem(B, rest, ci64(g, w[d]), ""), ci64(g, pitch[d]), "");
                rest = LLVMBuildSDiv(B, rest, ci64(g, w[d]), "");
                add = add ? LLVMBuildNSWAdd(B, add, x, "") : x;
            }
            if (add)
                off = LLVMBuildNSWAdd(B, off, add, "");
        } else if (unrolled) {
            int64_t rest = t, add = 0;
            for (int d = rank - 2; d >= 0; d--) {
                add += (rest % w[d]) * pitch[d];
                rest /= w[d];
            }
            if (add)
                off = LLVMBuildNSWAdd(B, off, ci64(g, add), "");
        }
        if (loop_lines) {
            LLVMValueRef j = loop_open(f, ci64(g, 0), ci64(g, lines), "pf.line", &ll);
            pf_line(f, b, LLVMBuildNSWAdd(B, off, LLVMBuildNSWMul(B, j, ci64(g, 64 / esz), ""), ""), n->u.pf.write);
            loop_close(f, &ll);
        } else {
            for (int64_t j = 0; j < lines; j++)
                pf_line(f, b, j ? LLVMBuildNSWAdd(B, off, ci64(g, j * 64 / esz), "") : off, n->u.pf.write);
        }
        if (tail)
            pf_line(f, b, LLVMBuildNSWAdd(B, off, ci64(g, w[rank - 1] - 1), ""), n->u.pf.write);
        if (!unrolled && runs > 1)
            loop_close(f, &lr);
    }
}

static void emit_node(Fn *f, const Node *n)
{
    switch (n->kind) {
    case N_LOOP: emit_loop(f, n); break;
    case N_IF: emit_guard(f, n); break;
    case N_STMT:
        if (f->vw)
            emit_stmt_vector(f, n);
        else
            emit_stmt_scalar(f, n);
        break;
    case N_PREFETCH: emit_prefetch(f, n); break;
    }
}

static void emit_list(Fn *f, const NodeList *l)
{
    for (int i = 0; i < l->n && !f->g->failed; i++)
        emit_node(f, l->v[i]);
}

/* ---- functions ---- */

static void set_fn_attrs(Cg *g, LLVMValueRef fn)
{
    add_fn_attr(g, fn, "nounwind", 0);
    add_str_attr(g, fn, "target-cpu", g->t->cpu);
    if (g->t->features && *g->t->features)
        add_str_attr(g, fn, "target-features", g->t->features);
    if (g->t->vector_width) {
        char w[16];
        snprintf(w, sizeof w, "%d", g->t->vector_width);
        add_str_attr(g, fn, "prefer-vector-width", w);
        add_str_attr(g, fn, "min-legal-vector-width", w);
    }
    if (g->t->vscale_min)
        add_fn_attr(g, fn, "vscale_range", ((uint64_t)g->t->vscale_min << 32) | (uint64_t)g->t->vscale_max);
}

static LLVMValueRef new_function(Cg *g, const char *name, LLVMTypeRef ret, LLVMTypeRef *params, int n, bool internal)
{
    LLVMTypeRef fty = LLVMFunctionType(ret, params, (unsigned)n, 0);
    LLVMValueRef fn = LLVMAddFunction(g->M, name, fty);
    if (internal)
        LLVMSetLinkage(fn, LLVMInternalLinkage);
    set_fn_attrs(g, fn);
    return fn;
}

/* Starts emitting into fn: an entry block for allocas, then the code block. */
static void fn_begin(Cg *g, Fn *f, LLVMValueRef fn, const Node *owner)
{
    memset(f, 0, sizeof *f);
    f->g = g;
    f->fn = fn;
    f->owner = owner;
    f->bufp = xcalloc((size_t)(g->k->nbufs ? g->k->nbufs : 1), sizeof *f->bufp);
    f->vars = xcalloc((size_t)(g->k->nvars ? g->k->nvars : 1), sizeof *f->vars);
    f->vbb = xcalloc((size_t)(g->k->nvars ? g->k->nvars : 1), sizeof *f->vbb);
    f->vseq = xcalloc((size_t)(g->k->nvars ? g->k->nvars : 1), sizeof *f->vseq);
    f->vmin = xcalloc((size_t)(g->k->nvars ? g->k->nvars : 1), sizeof *f->vmin);
    f->vmax = xcalloc((size_t)(g->k->nvars ? g->k->nvars : 1), sizeof *f->vmax);
    for (int i = 0; i < g->k->nvars; i++)
        f->vmin[i] = 1; /* unknown until bound: vmin > vmax */
    f->entry = LLVMAppendBasicBlockInContext(g->C, fn, "entry");
    LLVMBasicBlockRef code = LLVMAppendBasicBlockInContext(g->C, fn, "code");
    LLVMPositionBuilderAtEnd(g->B, f->entry);
    LLVMBuildBr(g->B, code);
    LLVMPositionBuilderAtEnd(g->B, code);
}

static void fn_end(Fn *f)
{
    region_end(f);
    LLVMBuildRetVoid(f->g->B);
    free(f->bufp);
    free(f->vars);
    free(f->vbb);
    free(f->vseq);
    free(f->vmin);
    free(f->vmax);
    free(f->sums);
    free(f->rg.loads);
    free(f->rg.stores);
    free(f->rg.ptrs);
    free(f->rg.splat_of);
    free(f->rg.splat);
}

/* An alloca in the entry block (so LLVM's SROA can promote small tiles to registers). */
static LLVMValueRef entry_alloca(Fn *f, LLVMTypeRef ty, int64_t count, const char *name)
{
    Cg *g = f->g;
    LLVMBuilderRef ab = LLVMCreateBuilderInContext(g->C);
    LLVMPositionBuilderBefore(ab, LLVMGetBasicBlockTerminator(f->entry));
    /* An alloca of an array type, not an array allocation: SROA leaves the latter alone. */
    LLVMValueRef a = LLVMBuildAlloca(ab, LLVMArrayType2(ty, (uint64_t)(count > 0 ? count : 1)), name);
    LLVMSetAlignment(a, CG_BUF_ALIGN);
    LLVMDisposeBuilder(ab);
    return a;
}

/* Private buffers owned by the function's loop get their stack copy here. */
static void alloc_private(Fn *f)
{
    Cg *g = f->g;
    for (int i = 0; i < g->k->nbufs; i++)
        if (g->priv[i] && g->home[i] == f->owner) {
            const Buffer *b = g->k->bufs[i];
            f->bufp[i] = entry_alloca(f, sty(g, b->dtype), g->elems[i], b->name);
        }
}

/* A buffer pointer loaded from the argument array or a parallel context, with what
 * the calling convention promises about it. */
static LLVMValueRef buffer_pointer(Cg *g, const Buffer *b, LLVMValueRef load)
{
    LLVMMetadataRef align = LLVMValueAsMetadata(LLVMConstInt(g->ti64, CG_BUF_ALIGN, 0));
    LLVMSetMetadata(load, LLVMGetMDKindIDInContext(g->C, "align", 5),
                    LLVMMetadataAsValue(g->C, LLVMMDNodeInContext2(g->C, &align, 1)));
    int64_t bytes = g->elems[b->id] * dtype_bytes(b->dtype);
    if (bytes > 0) {
        LLVMMetadataRef n = LLVMValueAsMetadata(LLVMConstInt(g->ti64, (unsigned long long)bytes, 0));
        LLVMSetMetadata(load, LLVMGetMDKindIDInContext(g->C, "dereferenceable", 15),
                        LLVMMetadataAsValue(g->C, LLVMMDNodeInContext2(g->C, &n, 1)));
    }
    LLVMValueRef empty = LLVMMetadataAsValue(g->C, LLVMMDNodeInContext2(g->C, NULL, 0));
    LLVMSetMetadata(load, LLVMGetMDKindIDInContext(g->C, "nonnull", 7), empty);
    LLVMSetMetadata(load, LLVMGetMDKindIDInContext(g->C, "noundef", 7), empty);
    return load;
}

/* The context a parallel loop's function receives: every buffer pointer this function
 * has and every loop variable bound here, plus the parallel loop's lower bound. */
static void emit_parallel(Fn *f, const Node *n, LLVMValueRef lo, LLVMValueRef hi)
{
    Cg *g = f->g;
    LLVMBuilderRef B = g->B;
    const Kernel *k = g->k;
    int nb = 0, nv = 0;
    for (int i = 0; i < k->nbufs; i++)
        nb += f->bufp[i] != NULL;
    for (int i = 0; i < k->nvars; i++)
        nv += f->vars[i].v != NULL;
    int nslots = nb + nv + 1;
    region_end(f);

    char name[320];
    int id = g->npar++;
    LLVMTypeRef wt[3] = {g->tptr, g->ti64, g->ti64};
    char sym[300];
    snprintf(name, sizeof name, "%s.par%d", cg_llvm_symbol(k->name, sym, sizeof sym), id);
    LLVMValueRef wrap = new_function(g, name, g->tvoid, wt, 3, true);

    /* Caller side: fill the context, hand the loop to the pool. */
    LLVMValueRef ctx = entry_alloca(f, g->ti64, nslots, "ctx");
    int s = 0;
    for (int i = 0; i < k->nbufs; i++)
        if (f->bufp[i]) {
            LLVMValueRef slot = LLVMBuildInBoundsGEP2(B, g->ti64, ctx, (LLVMValueRef[]){ci64(g, s++)}, 1, "");
            LLVMBuildStore(B, f->bufp[i], slot);
        }
    for (int i = 0; i < k->nvars; i++)
        if (f->vars[i].v) {
            LLVMValueRef slot = LLVMBuildInBoundsGEP2(B, g->ti64, ctx, (LLVMValueRef[]){ci64(g, s++)}, 1, "");
            LLVMBuildStore(B, f->vars[i].v, slot);
        }
    LLVMBuildStore(B, lo, LLVMBuildInBoundsGEP2(B, g->ti64, ctx, (LLVMValueRef[]){ci64(g, s)}, 1, ""));
    if (!g->pfor) {
        LLVMTypeRef at[3] = {g->ti64, g->tptr, g->tptr};
        g->pfor_ty = LLVMFunctionType(g->tvoid, at, 3, 0);
        g->pfor = LLVMAddFunction(g->M, "perfc_parallel_for", g->pfor_ty);
        add_fn_attr(g, g->pfor, "nounwind", 0);
    }
    LLVMValueRef count = LLVMBuildNSWSub(B, hi, lo, "");
    LLVMValueRef args[3] = {count, wrap, ctx};
    LLVMBasicBlockRef resume = LLVMGetInsertBlock(B);
    LLVMBuildCall2(B, g->pfor_ty, g->pfor, args, 3, "");

    /* NAME.parN(ctx, clo, chi): unpacks the context and runs iterations lo+[clo, chi). */
    Fn nf;
    fn_begin(g, &nf, wrap, n);
    LLVMValueRef wctx = LLVMGetParam(wrap, 0);
    s = 0;
    for (int i = 0; i < k->nbufs; i++)
        if (f->bufp[i]) {
            LLVMValueRef slot = LLVMBuildInBoundsGEP2(B, g->ti64, wctx, (LLVMValueRef[]){ci64(g, s++)}, 1, "");
            nf.bufp[i] = buffer_pointer(g, k->bufs[i], LLVMBuildLoad2(B, g->tptr, slot, k->bufs[i]->name));
        }
    for (int i = 0; i < k->nvars; i++)
        if (f->vars[i].v) {
            LLVMValueRef slot = LLVMBuildInBoundsGEP2(B, g->ti64, wctx, (LLVMValueRef[]){ci64(g, s++)}, 1, "");
            bind(&nf, k->vars[i], S(LLVMBuildLoad2(B, g->ti64, slot, k->vars[i]->name)));
        }
    LLVMValueRef lo0 = LLVMBuildLoad2(B, g->ti64, LLVMBuildInBoundsGEP2(B, g->ti64, wctx, (LLVMValueRef[]){ci64(g, s)}, 1, ""), "");
    alloc_private(&nf);
    LLVMValueRef clo = LLVMBuildNSWAdd(B, lo0, LLVMGetParam(wrap, 1), "");
    LLVMValueRef chi = LLVMBuildNSWAdd(B, lo0, LLVMGetParam(wrap, 2), "");
    emit_serial(&nf, n, clo, chi);
    fn_end(&nf);

    LLVMPositionBuilderAtEnd(B, resume);
}

/* ---- module ---- */

/* Records, for each private buffer, the parallel loops around all of its uses. */
static void note_use(Cg *g, Home *h, const Buffer *b, PtrVec *stack)
{
    if (!g->priv[b->id])
        return;
    Home *x = &h[b->id];
    if (!x->used) {
        x->used = true;
        for (int i = 0; i < stack->n; i++)
            vec_push(&x->path, stack->v[i]);
        return;
    }
    int m = 0;
    while (m < x->path.n && m < stack->n && x->path.v[m] == stack->v[m])
        m++;
    x->path.n = m;
}

static void uses_expr(Cg *g, Home *h, const Expr *e, PtrVec *stack)
{
    if (!e)
        return;
    if (e->kind == IE_LOAD) {
        note_use(g, h, e->u.load.buf, stack);
        for (int i = 0; i < e->u.load.buf->rank; i++)
            uses_expr(g, h, e->u.load.idx[i], stack);
        return;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        uses_expr(g, h, e->args[i], stack);
}

static void uses_list(Cg *g, Home *h, const NodeList *l, PtrVec *stack)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        switch (n->kind) {
        case N_LOOP:
            uses_expr(g, h, n->u.loop.lo, stack);
            uses_expr(g, h, n->u.loop.hi, stack);
            if (n->u.loop.kind == LOOP_PARALLEL)
                vec_push(stack, (void *)n);
            uses_list(g, h, &n->u.loop.body, stack);
            if (n->u.loop.kind == LOOP_PARALLEL)
                stack->n--;
            break;
        case N_IF:
            uses_expr(g, h, n->u.guard.cond, stack);
            uses_list(g, h, &n->u.guard.body, stack);
            break;
        case N_PREFETCH: /* a hint: where a buffer is not at hand, it is skipped */
            break;
        case N_STMT:
            note_use(g, h, n->u.stmt.buf, stack);
            for (int j = 0; j < n->u.stmt.buf->rank; j++)
                uses_expr(g, h, n->u.stmt.idx[j], stack);
            uses_expr(g, h, n->u.stmt.value, stack);
            break;
        }
    }
}

/* Accesses (loads and stores) of each buffer in list l, added to cnt[]. */
static void count_expr(const Expr *e, int *cnt)
{
    if (!e)
        return;
    if (e->kind == IE_LOAD) {
        cnt[e->u.load.buf->id]++;
        for (int i = 0; i < e->u.load.buf->rank; i++)
            count_expr(e->u.load.idx[i], cnt);
        return;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        count_expr(e->args[i], cnt);
}

static void count_list(const NodeList *l, int *cnt)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        if (n->kind == N_STMT) {
            cnt[n->u.stmt.buf->id]++;
            for (int j = 0; j < n->u.stmt.buf->rank; j++)
                count_expr(n->u.stmt.idx[j], cnt);
            count_expr(n->u.stmt.value, cnt);
        } else if (n->kind == N_LOOP) {
            count_expr(n->u.loop.lo, cnt);
            count_expr(n->u.loop.hi, cnt);
            count_list(&n->u.loop.body, cnt);
        } else if (n->kind == N_IF) {
            count_expr(n->u.guard.cond, cnt);
            count_list(&n->u.guard.body, cnt);
        } /* N_PREFETCH: a hint, no access */
    }
}

#define FRESH_MAX_ELEMS 1024

/* g->fresh: for each private buffer of at most FRESH_MAX_ELEMS elements, the
 * innermost loop listed in its private_in that holds all of its accesses. */
static void find_fresh(Cg *g, const NodeList *l, const int *total, int *depth, int d)
{
    const Kernel *k = g->k;
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        if (n->kind == N_STMT)
            continue;
        if (n->kind == N_LOOP) {
            for (int b = 0; b < k->nbufs; b++) {
                const Buffer *buf = k->bufs[b];
                if (!g->priv[b] || g->elems[b] > FRESH_MAX_ELEMS || d <= depth[b])
                    continue;
                bool listed = false;
                for (int j = 0; j < buf->nprivate_in; j++)
                    listed |= buf->private_in[j] == n->u.loop.var;
                if (!listed)
                    continue;
                int *cnt = xcalloc((size_t)k->nbufs, sizeof *cnt);
                count_list(&n->u.loop.body, cnt);
                if (cnt[b] == total[b]) {
                    g->fresh[b] = n;
                    depth[b] = d;
                }
                free(cnt);
            }
        }
        find_fresh(g, ir_body((Node *)n), total, depth, d + 1);
    }
}

/* GPU loop kinds have no meaning on a CPU. */
static void check_kinds(Cg *g, const NodeList *l)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        if (n->kind == N_LOOP) {
            LoopKind kind = n->u.loop.kind;
            if (kind >= LOOP_BLOCK_X && kind <= LOOP_THREAD_Z)
                cg_error(g, n->span, "loop '%s' is bound to %s: GPU loop kinds cannot run on CPU target %s",
                         n->u.loop.var->name, loop_kind_name(kind), g->t->name);
            check_kinds(g, &n->u.loop.body);
        } else if (n->kind == N_IF) {
            check_kinds(g, &n->u.guard.body);
        }
    }
}

static bool setup(Cg *g)
{
    const Kernel *k = g->k;
    int nb = k->nbufs ? k->nbufs : 1;
    g->elems = xcalloc((size_t)nb, sizeof *g->elems);
    g->dims = xcalloc((size_t)nb, sizeof *g->dims);
    g->priv = xcalloc((size_t)nb, sizeof *g->priv);
    g->home = xcalloc((size_t)nb, sizeof *g->home);
    for (int i = 0; i < k->nbufs; i++) {
        const Buffer *b = k->bufs[i];
        if (b->id != i)
            die("buffer %s has id %d at position %d", b->name, b->id, i);
        g->dims[i] = xcalloc((size_t)(b->rank ? b->rank : 1), sizeof **g->dims);
        for (int j = 0; j < b->rank; j++)
            if (!ir_eval_size(k, b->shape[j], &g->dims[i][j]) || g->dims[i][j] < 0) {
                cg_error(g, b->span, "the size of dimension %d of '%s' is not a known non-negative number", j, b->name);
                return false;
            }
        g->elems[i] = ir_buffer_elems(k, b);
        g->priv[i] = b->kind == BUF_TEMP && b->mem == MEM_LOCAL;
    }
    for (int i = 0; i < k->nvars; i++)
        if (k->vars[i]->id != i)
            die("variable %s has id %d at position %d", k->vars[i]->name, k->vars[i]->id, i);
    Home *h = xcalloc((size_t)nb, sizeof *h);
    PtrVec stack = {0};
    uses_list(g, h, &k->body, &stack);
    for (int i = 0; i < k->nbufs; i++) {
        g->home[i] = h[i].path.n ? h[i].path.v[h[i].path.n - 1] : NULL;
        vec_free(&h[i].path);
    }
    vec_free(&stack);
    free(h);
    g->fresh = xcalloc((size_t)nb, sizeof *g->fresh);
    int *total = xcalloc((size_t)nb, sizeof *total), *depth = xcalloc((size_t)nb, sizeof *depth);
    count_list(&k->body, total);
    find_fresh(g, &k->body, total, depth, 1);
    free(total);
    free(depth);
    return true;
}

static void cleanup(Cg *g)
{
    if (g->dims)
        for (int i = 0; i < g->k->nbufs; i++)
            free(g->dims[i]);
    free(g->dims);
    free(g->elems);
    free(g->priv);
    free(g->home);
    free(g->fresh);
    free(g->scope);
    free(g->others);
    if (g->B)
        LLVMDisposeBuilder(g->B);
}

bool cg_kernel_tiled(const Kernel *k)
{
    return holds_scheduled(&k->body);
}

static bool expr_padded(const Expr *e)
{
    if (!e)
        return false;
    if (e->kind == IE_LOAD) {
        if (e->u.load.guarded && e->u.load.buf->has_pad)
            return true;
        for (int i = 0; i < e->u.load.buf->rank; i++)
            if (expr_padded(e->u.load.idx[i]))
                return true;
        return false;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        if (expr_padded(e->args[i]))
            return true;
    return false;
}

static bool cg_list_padded(const NodeList *l)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        if (n->kind == N_STMT) {
            if (expr_padded(n->u.stmt.value))
                return true;
            for (int j = 0; j < n->u.stmt.buf->rank; j++)
                if (expr_padded(n->u.stmt.idx[j]))
                    return true;
        } else if ((n->kind == N_IF && expr_padded(n->u.guard.cond)) || cg_list_padded(ir_body((Node *)n))) {
            return true;
        }
    }
    return false;
}

bool cg_kernel_padded(const Kernel *k)
{
    return cg_list_padded(&k->body);
}

LLVMModuleRef cg_build_module(const Kernel *k, const CgTarget *t, LLVMContextRef ctx, LLVMTargetMachineRef tm, Diags *d)
{
    if (!ir_all_bound(k, d))
        return NULL;
    Cg g = {.k = k, .t = t, .d = d, .C = ctx};
    g.lean = cg_kernel_tiled(k);
    check_kinds(&g, &k->body);
    if (g.failed || !setup(&g)) {
        cleanup(&g);
        return NULL;
    }
    g.M = LLVMModuleCreateWithNameInContext(k->name, ctx);
    LLVMSetTarget(g.M, t->triple);
    LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
    LLVMSetModuleDataLayout(g.M, dl);
    LLVMDisposeTargetData(dl);
    if (t->abi && *t->abi) {
        /* RISC-V reads the float ABI from this flag too; it must match the TM's. */
        LLVMMetadataRef abi = LLVMMDStringInContext2(ctx, t->abi, strlen(t->abi));
        LLVMAddModuleFlag(g.M, LLVMModuleFlagBehaviorError, "target-abi", strlen("target-abi"), abi);
    }
    g.B = LLVMCreateBuilderInContext(ctx);
    g.tvoid = LLVMVoidTypeInContext(ctx);
    g.ti1 = LLVMInt1TypeInContext(ctx);
    g.ti8 = LLVMInt8TypeInContext(ctx);
    g.ti16 = LLVMInt16TypeInContext(ctx);
    g.ti32 = LLVMInt32TypeInContext(ctx);
    g.ti64 = LLVMInt64TypeInContext(ctx);
    g.tf32 = LLVMFloatTypeInContext(ctx);
    g.tf64 = LLVMDoubleTypeInContext(ctx);
    g.thalf = LLVMHalfTypeInContext(ctx);
    g.tptr = LLVMPointerTypeInContext(ctx, 0);

    /* Alias scopes: one per buffer, in one domain. */
    g.md_scope = LLVMGetMDKindIDInContext(ctx, "alias.scope", 11);
    g.md_noalias = LLVMGetMDKindIDInContext(ctx, "noalias", 7);
    int nb = k->nbufs ? k->nbufs : 1;
    LLVMMetadataRef *sc = xcalloc((size_t)nb, sizeof *sc);
    LLVMMetadataRef tmp = LLVMTemporaryMDNode(ctx, NULL, 0);
    LLVMMetadataRef dname = LLVMMDStringInContext2(ctx, k->name, strlen(k->name));
    LLVMMetadataRef dops[2] = {tmp, dname};
    LLVMMetadataRef domain = LLVMMDNodeInContext2(ctx, dops, 2);
    LLVMMetadataReplaceAllUsesWith(tmp, domain);
    for (int i = 0; i < k->nbufs; i++) {
        tmp = LLVMTemporaryMDNode(ctx, NULL, 0);
        LLVMMetadataRef ops[3] = {tmp, domain, LLVMMDStringInContext2(ctx, k->bufs[i]->name, strlen(k->bufs[i]->name))};
        sc[i] = LLVMMDNodeInContext2(ctx, ops, 3);
        LLVMMetadataReplaceAllUsesWith(tmp, sc[i]);
    }
    g.scope = xcalloc((size_t)nb, sizeof *g.scope);
    g.others = xcalloc((size_t)nb, sizeof *g.others);
    LLVMMetadataRef *rest = xcalloc((size_t)nb, sizeof *rest);
    for (int i = 0; i < k->nbufs; i++) {
        g.scope[i] = LLVMMetadataAsValue(ctx, LLVMMDNodeInContext2(ctx, &sc[i], 1));
        int m = 0;
        for (int j = 0; j < k->nbufs; j++)
            if (j != i)
                rest[m++] = sc[j];
        if (m)
            g.others[i] = LLVMMetadataAsValue(ctx, LLVMMDNodeInContext2(ctx, rest, (size_t)m));
    }
    free(rest);
    free(sc);

    /* NAME(ptr bufs): loads the buffer pointers and runs the loop nest. */
    char sym[300];
    LLVMValueRef entry = new_function(&g, cg_llvm_symbol(k->name, sym, sizeof sym), g.tvoid, &g.tptr, 1, false);
    LLVMSetValueName2(LLVMGetParam(entry, 0), "bufs", 4);
    Fn f;
    fn_begin(&g, &f, entry, NULL);
    for (int i = 0; i < k->nbufs; i++)
        if (!g.priv[i]) {
            LLVMValueRef slot = LLVMBuildInBoundsGEP2(g.B, g.tptr, LLVMGetParam(entry, 0), (LLVMValueRef[]){ci64(&g, i)}, 1, "");
            f.bufp[i] = buffer_pointer(&g, k->bufs[i], LLVMBuildLoad2(g.B, g.tptr, slot, k->bufs[i]->name));
        }
    alloc_private(&f);
    emit_list(&f, &k->body);
    fn_end(&f);

    bool failed = g.failed;
    cleanup(&g);
    if (failed) {
        LLVMDisposeModule(g.M);
        return NULL;
    }
    char *msg = NULL;
    if (LLVMVerifyModule(g.M, LLVMReturnStatusAction, &msg)) {
        diag_plain(d, DIAG_ERROR, "internal error: kernel %s: invalid LLVM IR: %s", k->name, msg ? msg : "");
        LLVMDisposeMessage(msg);
        LLVMDisposeModule(g.M);
        return NULL;
    }
    LLVMDisposeMessage(msg);
    return g.M;
}
