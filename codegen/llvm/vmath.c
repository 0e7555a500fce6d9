/* Vector math: exp, expm1, log, log1p, tanh and erf for f32 and f64, built
 * inline as LLVM IR from the operand's own shape (scalar or vector), so a vector
 * loop keeps them in vector registers.  A libm call is scalar: the vectoriser must
 * split every vector into lanes around it, which made `tanh` 26-42x slower than
 * NumPy's vectorised version.
 *
 * Each function reduces its argument to a small interval where a polynomial is
 * accurate, evaluates it with fused multiply-adds where the target has them, and
 * rebuilds the result; special values (NaN, ±inf, ±0, subnormals) are handled by
 * the reduction itself or by a final select.  The error bounds, in units in the
 * last place of the result's type, are those measured over millions of arguments
 * by tests/codegen/test_cg_vmath.c against glibc's libm in higher precision:
 *
 *   function   bound (ulp)   measured max, f32 / f64 (2 M / 0.5 M arguments, x86-64
 *                            with and without FMA, SSE2 to AVX-512)
 *   exp        1.5           1.19 / 1.15
 *   log        1             0.76 / 0.80
 *   tanh       3.5           3.17 / 3.21
 *   erf        3 (f32)       2.77 / glibc's erf
 *   expm1      3             2.03 / 2.21
 *   log1p      3             2.38 / 2.39
 *
 * Coefficients: the exp and log polynomials are truncated Taylor series (their
 * terms are exact reciprocals of integers, rounded once; the truncation error is
 * below the type's half-ulp on the reduced interval); erf's two f32 polynomials are
 * relative least-squares fits on Chebyshev nodes, reproduced by
 * scripts/vmath_fit.py.  An erf for f64 needs several more intervals and is left to
 * libm (the caller falls back when vm_erf returns NULL). */
#include <math.h>
#include <string.h>

#include "vmath.h"

static bool is_vec(LLVMTypeRef t)
{
    return LLVMGetTypeKind(t) == LLVMVectorTypeKind;
}

static LLVMTypeRef elem(LLVMTypeRef t)
{
    return is_vec(t) ? LLVMGetElementType(t) : t;
}

static bool is_f64(LLVMValueRef x)
{
    return LLVMGetTypeKind(elem(LLVMTypeOf(x))) == LLVMDoubleTypeKind;
}

/* The integer type of x's lane width, in x's shape. */
static LLVMTypeRef int_like(const VmCtx *c, LLVMValueRef x)
{
    LLVMTypeRef t = LLVMTypeOf(x);
    LLVMTypeRef i = is_f64(x) ? LLVMInt64TypeInContext(c->C) : LLVMInt32TypeInContext(c->C);
    return is_vec(t) ? LLVMVectorType(i, LLVMGetVectorSize(t)) : i;
}

static LLVMValueRef splat(LLVMTypeRef t, LLVMValueRef s)
{
    if (!is_vec(t))
        return s;
    unsigned n = LLVMGetVectorSize(t);
    LLVMValueRef v[64];
    for (unsigned i = 0; i < n && i < 64; i++)
        v[i] = s;
    return LLVMConstVector(v, n);
}

static LLVMValueRef kf(LLVMValueRef like, double v)
{
    LLVMTypeRef t = LLVMTypeOf(like);
    return splat(t, LLVMConstReal(elem(t), v));
}

static LLVMValueRef ki(LLVMTypeRef t, int64_t v)
{
    return splat(t, LLVMConstInt(elem(t), (unsigned long long)v, 1));
}

/* v * 2^p as the bits of a lane: a shift of the unsigned value, since shifting a
 * negative int64_t left is undefined in C. */
static int64_t shl(int64_t v, int p)
{
    return (int64_t)((uint64_t)v << p);
}

static LLVMValueRef call(const VmCtx *c, const char *name, LLVMValueRef *args, int n)
{
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMTypeRef ty = LLVMTypeOf(args[0]);
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(c->M, id, &ty, 1);
    LLVMTypeRef fty = LLVMIntrinsicGetType(c->C, id, &ty, 1);
    return LLVMBuildCall2(c->B, fty, fn, args, (unsigned)n, "");
}

static LLVMValueRef call1(const VmCtx *c, const char *name, LLVMValueRef a)
{
    return call(c, name, &a, 1);
}

static LLVMValueRef call2(const VmCtx *c, const char *name, LLVMValueRef a, LLVMValueRef b)
{
    LLVMValueRef args[2] = {a, b};
    return call(c, name, args, 2);
}

/* a*b + c, fused where the target has the instruction (llvm.fma without one would be
 * a libm call; llvm.fmuladd lets the back end split it). */
static LLVMValueRef fma3(const VmCtx *c, LLVMValueRef a, LLVMValueRef b, LLVMValueRef d)
{
    LLVMValueRef args[3] = {a, b, d};
    return call(c, c->fma ? "llvm.fma" : "llvm.fmuladd", args, 3);
}

/* Horner's rule: k[0] + x*(k[1] + x*(... + x*k[n-1])). */
static LLVMValueRef horner(const VmCtx *c, LLVMValueRef x, const double *k, int n)
{
    LLVMValueRef p = kf(x, k[n - 1]);
    for (int i = n - 2; i >= 0; i--)
        p = fma3(c, p, x, kf(x, k[i]));
    return p;
}

/* x clamped to [lo, hi] by selects on ordered compares, so a NaN passes through. */
static LLVMValueRef clamp(const VmCtx *c, LLVMValueRef x, double lo, double hi)
{
    LLVMBuilderRef B = c->B;
    LLVMValueRef l = kf(x, lo), h = kf(x, hi);
    x = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOLT, x, l, ""), l, x, "");
    return LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOGT, x, h, ""), h, x, "");
}

/* ---- exp and expm1 ---- */

/* (e^r - 1) / r on |r| <= ln2/2: degree 5 interpolating at the Chebyshev nodes of
 * [-0.3466, 0.3466] for f32 (relative error 1.1e-8 with the coefficients rounded to
 * f32), the Taylor series to r^12/13! for f64 (truncation below 1.2e-17). */
static const double q32[] = {1.0, 0.5, 0x1.55547cp-3, 0x1.5554eap-5, 0x1.123d8ep-7, 0x1.6d4320p-10};
static const double q64[] = {
    1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040, 1.0 / 40320, 1.0 / 362880,
    1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800.0,
};

static LLVMValueRef expm1_poly(const VmCtx *c, LLVMValueRef r)
{
    bool d = is_f64(r);
    LLVMValueRef q = d ? horner(c, r, q64, 13) : horner(c, r, q32, 6);
    return LLVMBuildFMul(c->B, q, r, "");
}

/* x = n ln2 + r with |r| <= ln2/2 (Cody-Waite: ln2 in a part whose product with n is
 * exact and a correction).  n is read from the low mantissa bits of t = x/ln2 +
 * 1.5*2^p (p the mantissa width), so *k = n << p is bits(t) << p.  Returns r. */
static LLVMValueRef exp_reduce(const VmCtx *c, LLVMValueRef xc, LLVMValueRef *k)
{
    LLVMBuilderRef B = c->B;
    bool d = is_f64(xc);
    double magic = d ? 0x1.8p52 : 0x1.8p23;
    LLVMValueRef t = fma3(c, xc, kf(xc, d ? 0x1.71547652b82fep+0 : 0x1.715476p+0), kf(xc, magic));
    LLVMValueRef n = LLVMBuildFSub(B, t, kf(xc, magic), "");
    LLVMValueRef r = fma3(c, n, kf(xc, d ? -0x1.62e42fefa3800p-1 : -0x1.62e4p-1), xc);
    r = fma3(c, n, kf(xc, d ? -0x1.ef35793c76730p-45 : -0x1.7f7d1cp-20), r);
    LLVMTypeRef ti = int_like(c, xc);
    *k = LLVMBuildShl(B, LLVMBuildBitCast(B, t, ti, ""), ki(ti, d ? 52 : 23), "");
    return r;
}

/* 2^n (1 + y) from k = n << p, as 2^a 2^b with a = max(n, nmin) - 1 and b = n - a:
 * (1 + y) 2^a is exact and normal, and the multiply by 2^b (2 for normal results,
 * down to 2^-55) rounds once, so a subnormal result rounds once and an argument
 * just above ln(MAX) overflows to inf by itself. */
static LLVMValueRef exp_scale(const VmCtx *c, LLVMValueRef y, LLVMValueRef k)
{
    LLVMBuilderRef B = c->B;
    bool d = is_f64(y);
    LLVMTypeRef ti = LLVMTypeOf(k), tf = LLVMTypeOf(y);
    int p = d ? 52 : 23, nmin = d ? -1020 : -124, bias = d ? 1023 : 127;
    LLVMValueRef ka = call2(c, "llvm.smax", k, ki(ti, shl(nmin, p)));
    LLVMValueRef sa = LLVMBuildBitCast(B, LLVMBuildAdd(B, ka, ki(ti, shl(bias - 1, p)), ""), tf, "");
    LLVMValueRef sb =
        LLVMBuildBitCast(B, LLVMBuildAdd(B, LLVMBuildSub(B, k, ka, ""), ki(ti, shl(bias + 1, p)), ""), tf, "");
    return LLVMBuildFMul(B, fma3(c, y, sa, sa), sb, "");
}

/* e^x = 2^n (1 + y), y = e^r - 1.  The clamps are selects on ordered compares, so a
 * NaN goes through the arithmetic and comes out NaN. */
LLVMValueRef vm_exp(const VmCtx *c, LLVMValueRef x)
{
    bool d = is_f64(x);
    LLVMValueRef xc = d ? clamp(c, x, -746.0, 0x1.62e42fefa39f0p+9) : clamp(c, x, -104.0, 0x1.62e430p+6);
    LLVMValueRef k, r = exp_reduce(c, xc, &k);
    return exp_scale(c, expm1_poly(c, r), k);
}

/* e^x - 1 = 2^n y + (2^n - 1): both 2^n - 1 and the product 2^n y are exact for the n
 * that matter, so the fused multiply-add rounds once, and n = 0 (|x| < ln2/2) leaves
 * the polynomial alone, accurate relative to the small result.  2^n is clamped below
 * at the smallest normal power (the result is -1 there anyway); above n = 100 the
 * -1 is far below an ulp and e^x itself is returned, scaled as in vm_exp so that it
 * overflows where e^x does. */
LLVMValueRef vm_expm1(const VmCtx *c, LLVMValueRef x)
{
    LLVMBuilderRef B = c->B;
    bool d = is_f64(x);
    int p = d ? 52 : 23, bias = d ? 1023 : 127;
    LLVMValueRef xc = d ? clamp(c, x, -746.0, 0x1.62e42fefa39f0p+9) : clamp(c, x, -104.0, 0x1.62e430p+6);
    LLVMValueRef k, r = exp_reduce(c, xc, &k);
    LLVMValueRef y = expm1_poly(c, r);
    LLVMTypeRef ti = LLVMTypeOf(k);
    LLVMValueRef kc = call2(c, "llvm.smax", k, ki(ti, shl(1 - bias, p)));
    kc = call2(c, "llvm.smin", kc, ki(ti, shl(100, p)));
    LLVMValueRef two = LLVMBuildBitCast(B, LLVMBuildAdd(B, kc, ki(ti, shl(bias, p)), ""), LLVMTypeOf(x), "");
    LLVMValueRef mid = fma3(c, two, y, LLVMBuildFSub(B, two, kf(x, 1.0), ""));
    LLVMValueRef big = LLVMBuildICmp(B, LLVMIntSGT, k, ki(ti, shl(100, p)), "");
    return LLVMBuildSelect(B, big, exp_scale(c, y, k), mid, "");
}

/* ---- log and log1p ---- */

/* x = 2^e m with m in [sqrt(1/2), sqrt(2)): subtracting the bits of sqrt(1/2) puts
 * e in the exponent field and m's offset in the mantissa.  With f = m - 1 (exact)
 * and s = f / (2 + f), log m = 2 atanh s = 2s (1 + s^2/3 + s^4/5 + ...), |s| <=
 * 0.1716: four terms after the first for f32 and ten for f64 leave a truncation
 * error below 2e-9 and 1e-18; the sum is arranged so that the exact f carries it.  log x = e ln2 + log m, with e ln2 in two parts (the
 * first exact).  Subnormal x is scaled by 2^p first; 0 gives -inf, a negative x or
 * NaN gives NaN, +inf gives +inf. */
LLVMValueRef vm_log(const VmCtx *c, LLVMValueRef x)
{
    LLVMBuilderRef B = c->B;
    bool d = is_f64(x);
    LLVMTypeRef ti = int_like(c, x), tf = LLVMTypeOf(x);
    int p = d ? 52 : 23;
    double tiny = d ? 0x1p-1022 : 0x1p-126;
    LLVMValueRef sub = LLVMBuildFCmp(B, LLVMRealOLT, x, kf(x, tiny), "");
    LLVMValueRef xs = LLVMBuildSelect(B, sub, LLVMBuildFMul(B, x, kf(x, d ? 0x1p54 : 0x1p25), ""), x, "");
    LLVMValueRef eadj = LLVMBuildSelect(B, sub, kf(x, d ? -54.0 : -25.0), kf(x, 0.0), "");
    int64_t half = d ? 0x3fe6a09e667f3bcdLL : 0x3f3504f3LL;
    LLVMValueRef ix = LLVMBuildSub(B, LLVMBuildBitCast(B, xs, ti, ""), ki(ti, half), "");
    LLVMValueRef e = LLVMBuildAShr(B, ix, ki(ti, p), "");
    LLVMValueRef mb = LLVMBuildAdd(B, LLVMBuildAnd(B, ix, ki(ti, ((int64_t)1 << p) - 1), ""), ki(ti, half), "");
    LLVMValueRef m = LLVMBuildBitCast(B, mb, tf, "");
    LLVMValueRef ef = LLVMBuildFAdd(B, LLVMBuildSIToFP(B, e, tf, ""), eadj, "");
    LLVMValueRef f = LLVMBuildFSub(B, m, kf(x, 1.0), "");
    LLVMValueRef s = LLVMBuildFDiv(B, f, LLVMBuildFAdd(B, f, kf(x, 2.0), ""), "");
    LLVMValueRef s2 = LLVMBuildFMul(B, s, s, "");
    /* log(1 + f) = 2s + s R(s^2) = f - (f^2/2 - s (f^2/2 + R)), R = 2s^2/3 + 2s^4/5 + ...:
     * f is exact and carries the result; only the small correction rounds. */
    static const double a32[] = {2.0 / 3, 2.0 / 5, 2.0 / 7, 2.0 / 9};
    static const double a64[] = {2.0 / 3,  2.0 / 5,  2.0 / 7,  2.0 / 9,  2.0 / 11,
                                 2.0 / 13, 2.0 / 15, 2.0 / 17, 2.0 / 19, 2.0 / 21};
    LLVMValueRef R = LLVMBuildFMul(B, s2, d ? horner(c, s2, a64, 10) : horner(c, s2, a32, 4), "");
    LLVMValueRef hfsq = LLVMBuildFMul(B, kf(x, 0.5), LLVMBuildFMul(B, f, f, ""), "");
    LLVMValueRef corr = fma3(c, s, LLVMBuildFAdd(B, hfsq, R, ""), LLVMBuildFMul(B, ef, kf(x, d ? 0x1.ef35793c76730p-45 : 0x1.7f7d1cp-20), ""));
    LLVMValueRef r = LLVMBuildFSub(B, LLVMBuildFSub(B, hfsq, corr, ""), f, "");
    r = fma3(c, ef, kf(x, d ? 0x1.62e42fefa3800p-1 : 0x1.62e4p-1), LLVMBuildFNeg(B, r, ""));
    /* specials: the reduction gives garbage for them */
    LLVMValueRef inf = kf(x, INFINITY);
    r = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOEQ, x, inf, ""), inf, r, "");
    r = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOEQ, x, kf(x, 0.0), ""), kf(x, -INFINITY), r, "");
    /* an ordered compare: NaN and negative x (not -0) give NaN */
    return LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOGE, x, kf(x, 0.0), ""), r, kf(x, NAN), "");
}

/* u = 1 + x rounds; log1p x = log(u) * x / (u - 1) corrects for the rounding (the
 * quotient is the exact ratio of the intended and the represented argument), and
 * u == 1 means x is below half an ulp of 1, where log1p x = x.  u = +inf gives
 * +inf; x = -1 gives -inf and x < -1 NaN through log. */
LLVMValueRef vm_log1p(const VmCtx *c, LLVMValueRef x)
{
    LLVMBuilderRef B = c->B;
    LLVMValueRef u = LLVMBuildFAdd(B, x, kf(x, 1.0), "");
    LLVMValueRef dm = LLVMBuildFSub(B, u, kf(x, 1.0), "");
    LLVMValueRef r = LLVMBuildFMul(B, vm_log(c, u), LLVMBuildFDiv(B, x, dm, ""), "");
    r = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOEQ, dm, kf(x, 0.0), ""), x, r, "");
    LLVMValueRef inf = kf(x, INFINITY);
    return LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOEQ, x, inf, ""), inf, r, "");
}

/* ---- tanh and erf ---- */

/* tanh |x| = t / (t + 2) with t = expm1(2|x|): no cancellation anywhere (t's relative
 * error passes through a map whose condition number is 2/(t+2) <= 1), the sign is
 * copied back, and 2|x| is clamped at 40 where tanh is 1 to within 1e-17 (so t / (t +
 * 2) never sees inf / inf). */
LLVMValueRef vm_tanh(const VmCtx *c, LLVMValueRef x)
{
    LLVMBuilderRef B = c->B;
    LLVMValueRef ax = call1(c, "llvm.fabs", x);
    LLVMValueRef a2 = LLVMBuildFAdd(B, ax, ax, "");
    a2 = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOGT, a2, kf(x, 40.0), ""), kf(x, 40.0), a2, "");
    LLVMValueRef t = vm_expm1(c, a2);
    LLVMValueRef r = LLVMBuildFDiv(B, t, LLVMBuildFAdd(B, t, kf(x, 2.0), ""), "");
    return call2(c, "llvm.copysign", r, x);
}

/* f32 erf of |x|, sign copied back.  |x| < 1: x P(x^2), P of degree 5 (relative
 * error 5e-8 after rounding the coefficients).  1 <= |x| <= 4: 1 - e^{-x^2} R(1/x),
 * where R approximates erfc(x) e^{x^2} (a slowly varying function, about
 * 1/(x sqrt(pi))) with degree 8 in 1/x to 2.5e-7 relative; erfc <= 0.16 there, so
 * that error is below half an ulp of the result.  |x| > 4: erfc < 1.6e-8, erf
 * rounds to 1.  f64: NULL (the caller calls libm). */
LLVMValueRef vm_erf(const VmCtx *c, LLVMValueRef x)
{
    if (is_f64(x))
        return NULL;
    LLVMBuilderRef B = c->B;
    static const double ps[] = {0x1.20dd74p+0, -0x1.8126a0p-2, 0x1.ce0d72p-4,
                                -0x1.b5cb8ep-6, 0x1.42ec64p-8, -0x1.292a8cp-11};
    static const double pl[] = {0x1.02fc2ap-12, 0x1.1e6bb4p-1, 0x1.435d3ep-5, -0x1.d9265cp-2, 0x1.e65d44p-2,
                                -0x1.af4b80p-3, -0x1.aadc12p-9, 0x1.53bf0cp-5, -0x1.8bd56ap-7};
    LLVMValueRef ax = call1(c, "llvm.fabs", x);
    LLVMValueRef t = LLVMBuildFMul(B, ax, ax, "");
    LLVMValueRef small = LLVMBuildFMul(B, ax, horner(c, t, ps, 6), "");
    LLVMValueRef w = LLVMBuildFDiv(B, kf(x, 1.0), ax, "");
    LLVMValueRef ec = LLVMBuildFMul(B, vm_exp(c, LLVMBuildFNeg(B, t, "")), horner(c, w, pl, 9), "");
    LLVMValueRef big = LLVMBuildFSub(B, kf(x, 1.0), ec, "");
    LLVMValueRef r = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOLT, ax, kf(x, 1.0), ""), small, big, "");
    r = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOGT, ax, kf(x, 4.0), ""), kf(x, 1.0), r, "");
    return call2(c, "llvm.copysign", r, x);
}
