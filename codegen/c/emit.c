/* IR -> C11 with run-time sizes: the general variant of a library kernel (cg_c.h).
 *
 * Values are carried in their compute type, as codegen/llvm does: f64 as double,
 * f32, f16 and bf16 as float (f16/bf16 rounded where they are cast or stored), i32
 * and i64 as integers, bool as int 0/1.  Integer division and modulo are floor
 * division and modulo with a zero divisor giving 0; float -> i32 truncates and
 * saturates; max/min propagate NaN.  The library build compiles the output with
 * -fwrapv, so integer arithmetic wraps as LLVM's does.
 *
 * Every expression is emitted as one C expression; helpers that need an operand
 * twice are functions of the prelude, so no operand is evaluated twice. */
#include "cg_c_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const char PRELUDE[] =
    "#include <math.h>\n"
    "#include <stdint.h>\n"
    "#include <string.h>\n"
    "\n"
    "/* ---- helpers of the general variants (perfc codegen/c) ---- */\n"
    "/* x86-64 with GCC or Clang on glibc: each general variant is compiled for AVX-512,\n"
    " * AVX2 and the baseline, and the loader picks one by the CPU's features (ifunc) */\n"
    "#if defined(__x86_64__) && defined(__gnu_linux__) && (defined(__clang__) ? __clang_major__ >= 14 : __GNUC__ >= 8)\n"
    "#define PF_CLONES __attribute__((target_clones(\"arch=x86-64-v4\", \"arch=x86-64-v3\", \"default\")))\n"
    "#else\n"
    "#define PF_CLONES\n"
    "#endif\n"
    "#define PF_INL static inline\n"
    "PF_INL float pf_u2f(uint32_t x) { float f; memcpy(&f, &x, 4); return f; }\n"
    "PF_INL uint32_t pf_f2u(float f) { uint32_t x; memcpy(&x, &f, 4); return x; }\n";

/* The helpers of values, shared by the C and the CUDA flavour: every function is
 * PF_INL, bit casts go through pf_u2f/pf_f2u, which each flavour defines. */
static const char VALUES[] =
    "PF_INL float pf_h2f(uint16_t h)\n"
    "{\n"
    "    uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, x;\n"
    "    if (e == 0x1f) x = s | 0x7f800000u | (m << 13);\n"
    "    else if (e) x = s | ((e + 112u) << 23) | (m << 13);\n"
    "    else if (!m) x = s;\n"
    "    else { /* subnormal: m * 2^-24, exact in float */\n"
    "        float f = (float)m * 5.9604644775390625e-8f;\n"
    "        return s ? -f : f;\n"
    "    }\n"
    "    return pf_u2f(x);\n"
    "}\n"
    "PF_INL uint16_t pf_f2h(float f)\n"
    "{\n"
    "    uint32_t x = pf_f2u(f);\n"
    "    uint32_t s = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;\n"
    "    if (a > 0x7f800000u) return (uint16_t)(s | 0x7e00u);\n"
    "    if (a >= 0x477ff000u) return (uint16_t)(s | 0x7c00u); /* rounds to >= 65520: inf */\n"
    "    if (a < 0x38800000u) { /* below the smallest normal f16: a multiple of 2^-24 */\n"
    "        float v = pf_u2f(a);\n"
    "        v *= 16777216.0f; /* exact; now round to an integer, ties to even */\n"
    "        uint32_t n = (uint32_t)v;\n"
    "        float r = v - (float)n;\n"
    "        if (r > 0.5f || (r == 0.5f && (n & 1u))) n++;\n"
    "        return (uint16_t)(s | n);\n"
    "    }\n"
    "    uint32_t h = ((a >> 13) - (112u << 10)), rem = a & 0x1fffu;\n"
    "    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;\n"
    "    return (uint16_t)(s | h);\n"
    "}\n"
    "PF_INL float pf_bf2f(uint16_t h)\n"
    "{\n"
    "    return pf_u2f((uint32_t)h << 16);\n"
    "}\n"
    "PF_INL uint16_t pf_f2bf(float f)\n"
    "{\n"
    "    uint32_t x = pf_f2u(f);\n"
    "    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);\n"
    "    x += 0x7fffu + ((x >> 16) & 1u);\n"
    "    return (uint16_t)(x >> 16);\n"
    "}\n"
    "PF_INL float pf_rh(float f) { return pf_h2f(pf_f2h(f)); }\n"
    "PF_INL float pf_rbf(float f) { return pf_bf2f(pf_f2bf(f)); }\n"
    "PF_INL int64_t pf_div(int64_t a, int64_t b)\n"
    "{\n"
    "    if (b == 0) return 0;\n"
    "    if (b == -1) return (int64_t)(0 - (uint64_t)a);\n"
    "    int64_t q = a / b;\n"
    "    if (a % b != 0 && ((a < 0) != (b < 0))) q--;\n"
    "    return q;\n"
    "}\n"
    "PF_INL int64_t pf_mod(int64_t a, int64_t b)\n"
    "{\n"
    "    if (b == 0 || b == -1) return 0;\n"
    "    int64_t r = a % b;\n"
    "    if (r != 0 && ((r < 0) != (b < 0))) r += b;\n"
    "    return r;\n"
    "}\n"
    "PF_INL int32_t pf_div32(int32_t a, int32_t b) { return (int32_t)pf_div(a, b); }\n"
    "PF_INL int32_t pf_mod32(int32_t a, int32_t b) { return (int32_t)pf_mod(a, b); }\n"
    "PF_INL float pf_fmodf(float a, float b) { return a - b * floorf(a / b); }\n"
    "PF_INL double pf_fmodd(double a, double b) { return a - b * floor(a / b); }\n"
    "PF_INL float pf_maxf(float a, float b) { return a != a ? a : b != b ? b : a > b ? a : b; }\n"
    "PF_INL float pf_minf(float a, float b) { return a != a ? a : b != b ? b : a < b ? a : b; }\n"
    "PF_INL double pf_maxd(double a, double b) { return a != a ? a : b != b ? b : a > b ? a : b; }\n"
    "PF_INL double pf_mind(double a, double b) { return a != a ? a : b != b ? b : a < b ? a : b; }\n"
    "PF_INL int64_t pf_max64(int64_t a, int64_t b) { return a > b ? a : b; }\n"
    "PF_INL int64_t pf_min64(int64_t a, int64_t b) { return a < b ? a : b; }\n"
    "PF_INL int32_t pf_max32(int32_t a, int32_t b) { return a > b ? a : b; }\n"
    "PF_INL int32_t pf_min32(int32_t a, int32_t b) { return a < b ? a : b; }\n"
    "PF_INL int64_t pf_abs64(int64_t a) { return a < 0 ? (int64_t)(0 - (uint64_t)a) : a; }\n"
    "PF_INL int32_t pf_abs32(int32_t a) { return a < 0 ? (int32_t)(0 - (uint32_t)a) : a; }\n"
    "PF_INL int32_t pf_f2i32(double v)\n"
    "{\n"
    "    if (v != v) return 0;\n"
    "    if (v >= 2147483647.0) return INT32_MAX;\n"
    "    if (v <= -2147483648.0) return INT32_MIN;\n"
    "    return (int32_t)v;\n"
    "}\n"
    "PF_INL int64_t pf_f2i64(double v)\n"
    "{\n"
    "    if (v != v) return 0;\n"
    "    if (v >= 9223372036854775807.0) return INT64_MAX;\n"
    "    if (v <= -9223372036854775808.0) return INT64_MIN;\n"
    "    return (int64_t)v;\n"
    "}\n"
    "PF_INL int32_t pf_i2i32(int64_t v) { return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v; }\n"
    "/* guarded reads: offset of an element, or -1 when an index leaves its dimension */\n"
    "PF_INL int64_t pf_gx(int64_t off, int64_t i, int64_t d)\n"
    "{\n"
    "    return off < 0 || i < 0 || i >= d ? -1 : off * d + i;\n"
    "}\n";

/* Size arithmetic with overflow checks and interval arithmetic: host code only (the
 * range check of a general variant runs before any element is touched). */
static const char HOST[] =
    "typedef struct pf_iv { int64_t lo, hi; } pf_iv;\n"
    "/* size arithmetic with overflow and division by zero reported in *ovf */\n"
    "PF_INL int64_t pf_sadd(int64_t a, int64_t b, int *ovf) { int64_t r; if (__builtin_add_overflow(a, b, &r)) { *ovf = 1; return 0; } return r; }\n"
    "PF_INL int64_t pf_ssub(int64_t a, int64_t b, int *ovf) { int64_t r; if (__builtin_sub_overflow(a, b, &r)) { *ovf = 1; return 0; } return r; }\n"
    "PF_INL int64_t pf_smul(int64_t a, int64_t b, int *ovf) { int64_t r; if (__builtin_mul_overflow(a, b, &r)) { *ovf = 1; return 0; } return r; }\n"
    "PF_INL int64_t pf_sdiv(int64_t a, int64_t b, int *ovf) { if (b == 0 || (b == -1 && a == INT64_MIN)) { *ovf = 1; return 0; } return pf_div(a, b); }\n"
    "PF_INL int64_t pf_smod(int64_t a, int64_t b, int *ovf) { if (b == 0) { *ovf = 1; return 0; } return pf_mod(a, b); }\n"
    "PF_INL int64_t pf_sneg(int64_t a, int *ovf) { return pf_ssub(0, a, ovf); }\n"
    "/* interval arithmetic for the index-range check of a general variant */\n"
    "PF_INL pf_iv pf_iv_k(int64_t c) { pf_iv r = {c, c}; return r; }\n"
    "PF_INL pf_iv pf_iv_all(void) { pf_iv r = {INT64_MIN, INT64_MAX}; return r; }\n"
    "PF_INL pf_iv pf_iv_add(pf_iv a, pf_iv b, int *o) { pf_iv r = {pf_sadd(a.lo, b.lo, o), pf_sadd(a.hi, b.hi, o)}; return r; }\n"
    "PF_INL pf_iv pf_iv_sub(pf_iv a, pf_iv b, int *o) { pf_iv r = {pf_ssub(a.lo, b.hi, o), pf_ssub(a.hi, b.lo, o)}; return r; }\n"
    "PF_INL pf_iv pf_iv_neg(pf_iv a, int *o) { pf_iv r = {pf_sneg(a.hi, o), pf_sneg(a.lo, o)}; return r; }\n"
    "PF_INL pf_iv pf_iv_hull4(int64_t a, int64_t b, int64_t c, int64_t d)\n"
    "{\n"
    "    pf_iv r = {pf_min64(pf_min64(a, b), pf_min64(c, d)), pf_max64(pf_max64(a, b), pf_max64(c, d))};\n"
    "    return r;\n"
    "}\n"
    "PF_INL pf_iv pf_iv_mul(pf_iv a, pf_iv b, int *o)\n"
    "{\n"
    "    return pf_iv_hull4(pf_smul(a.lo, b.lo, o), pf_smul(a.lo, b.hi, o), pf_smul(a.hi, b.lo, o), pf_smul(a.hi, b.hi, o));\n"
    "}\n"
    "/* floor division is monotone in each operand while the divisor keeps one sign */\n"
    "PF_INL pf_iv pf_iv_div(pf_iv a, pf_iv b, int *o)\n"
    "{\n"
    "    if (b.lo <= 0 && b.hi >= 0) { *o = 1; return pf_iv_all(); }\n"
    "    return pf_iv_hull4(pf_sdiv(a.lo, b.lo, o), pf_sdiv(a.lo, b.hi, o), pf_sdiv(a.hi, b.lo, o), pf_sdiv(a.hi, b.hi, o));\n"
    "}\n"
    "PF_INL pf_iv pf_iv_mod(pf_iv a, pf_iv b, int *o)\n"
    "{\n"
    "    if (b.lo <= 0) { *o = 1; return pf_iv_all(); }\n"
    "    if (a.lo >= 0 && a.hi < b.lo) return a;\n"
    "    pf_iv r = {0, b.hi - 1};\n"
    "    return r;\n"
    "}\n"
    "PF_INL pf_iv pf_iv_max(pf_iv a, pf_iv b) { pf_iv r = {pf_max64(a.lo, b.lo), pf_max64(a.hi, b.hi)}; return r; }\n"
    "PF_INL pf_iv pf_iv_min(pf_iv a, pf_iv b) { pf_iv r = {pf_min64(a.lo, b.lo), pf_min64(a.hi, b.hi)}; return r; }\n"
    "\n";

void cg_c_prelude(StrBuf *out)
{
    sb_puts(out, PRELUDE);
    sb_puts(out, VALUES);
    sb_puts(out, HOST);
}

const char *cg_c_values_prelude(void)
{
    return VALUES;
}


static void fail(CgC *g, Span sp, const char *what)
{
    if (g->ok)
        diag_error(g->d, sp, "perfc lib: the general (run-time size) variant cannot express %s", what);
    g->ok = false;
}

static const char *ctype(DType t)
{
    switch (t) {
    case DT_F64: return "double";
    case DT_F32:
    case DT_F16:
    case DT_BF16: return "float";
    case DT_I32: return "int32_t";
    case DT_I64: return "int64_t";
    default: return "int";
    }
}

const char *cg_c_storage_type(DType t)
{
    switch (t) {
    case DT_F64: return "double";
    case DT_F32: return "float";
    case DT_F16:
    case DT_BF16: return "uint16_t";
    case DT_I32: return "int32_t";
    case DT_I64: return "int64_t";
    default: return "uint8_t";
    }
}

static bool is_int(DType t)
{
    return t == DT_I32 || t == DT_I64;
}

/* ---- size expressions ---- */

static bool size_expr(const Kernel *k, const Expr *e, const char *pfmt, StrBuf *o)
{
    static const char *const fn[IE_COUNT] = {
        [IE_ADD] = "pf_sadd", [IE_SUB] = "pf_ssub", [IE_MUL] = "pf_smul", [IE_DIV] = "pf_sdiv",
        [IE_MOD] = "pf_smod", [IE_MAX] = "pf_max64", [IE_MIN] = "pf_min64",
    };
    if (!e)
        return false;
    switch (e->kind) {
    case IE_INT:
        if (e->u.i == INT64_MIN)
            sb_puts(o, "INT64_MIN");
        else
            sb_printf(o, "INT64_C(%" PRId64 ")", e->u.i);
        return true;
    case IE_PARAM:
        if (e->u.param < 0 || e->u.param >= k->nparams)
            return false;
        sb_printf(o, pfmt, e->u.param);
        return true;
    case IE_CAST:
        if (!is_int(e->dtype) || !is_int(e->args[0]->dtype))
            return false;
        return size_expr(k, e->args[0], pfmt, o);
    case IE_NEG:
        sb_puts(o, "pf_sneg(");
        if (!size_expr(k, e->args[0], pfmt, o))
            return false;
        sb_puts(o, ", &ovf)");
        return true;
    case IE_ADD: case IE_SUB: case IE_MUL: case IE_DIV: case IE_MOD: case IE_MAX: case IE_MIN:
        sb_printf(o, "%s(", fn[e->kind]);
        if (!size_expr(k, e->args[0], pfmt, o))
            return false;
        sb_puts(o, ", ");
        if (!size_expr(k, e->args[1], pfmt, o))
            return false;
        sb_puts(o, e->kind == IE_MAX || e->kind == IE_MIN ? ")" : ", &ovf)");
        return true;
    default:
        return false;
    }
}

bool cg_c_size_expr(const Kernel *k, const Expr *e, StrBuf *out)
{
    return size_expr(k, e, "p[%d]", out);
}

static int prec(const Expr *e)
{
    switch (e->kind) {
    case IE_ADD: case IE_SUB: return 1;
    case IE_MUL: case IE_DIV: case IE_MOD: return 2;
    case IE_NEG: return 3;
    case IE_CAST: return prec(e->args[0]);
    default: return 4;
    }
}

/* Prints e, parenthesised when its precedence is below `need`. */
static bool size_text(const Kernel *k, const Expr *e, int need, StrBuf *o)
{
    static const char *const op[IE_COUNT] = {
        [IE_ADD] = " + ", [IE_SUB] = " - ", [IE_MUL] = " * ", [IE_DIV] = " // ", [IE_MOD] = " % ",
    };
    if (!e)
        return false;
    int p = prec(e);
    bool paren = p < need, ok = true;
    if (paren)
        sb_puts(o, "(");
    switch (e->kind) {
    case IE_INT: sb_printf(o, "%" PRId64, e->u.i); break;
    case IE_PARAM:
        if (e->u.param < 0 || e->u.param >= k->nparams)
            return false;
        sb_puts(o, k->params[e->u.param].name);
        break;
    case IE_CAST: ok = is_int(e->args[0]->dtype) && size_text(k, e->args[0], need, o); break;
    case IE_NEG:
        sb_puts(o, "-");
        ok = size_text(k, e->args[0], 4, o);
        break;
    case IE_MAX:
    case IE_MIN:
        sb_puts(o, e->kind == IE_MAX ? "max(" : "min(");
        ok = size_text(k, e->args[0], 0, o);
        sb_puts(o, ", ");
        ok = ok && size_text(k, e->args[1], 0, o);
        sb_puts(o, ")");
        break;
    case IE_ADD: case IE_SUB: case IE_MUL: case IE_DIV: case IE_MOD:
        /* left-associative: the right operand of the same level needs parentheses */
        ok = size_text(k, e->args[0], p, o);
        sb_puts(o, op[e->kind]);
        ok = ok && size_text(k, e->args[1], p + 1, o);
        break;
    default: return false;
    }
    if (paren)
        sb_puts(o, ")");
    return ok;
}

bool cg_c_size_text(const Kernel *k, const Expr *e, StrBuf *o)
{
    return size_text(k, e, 0, o);
}

/* ---- interval of an index expression (range check) ---- */

static void iv(CgC *g, const Expr *e, StrBuf *o)
{
    switch (e->kind) {
    case IE_INT: sb_printf(o, "pf_iv_k(INT64_C(%" PRId64 "))", e->u.i); return;
    case IE_PARAM: sb_printf(o, "pf_iv_k(pf_p%d)", e->u.param); return;
    case IE_VAR: sb_printf(o, "iv%d", e->u.var->id); return;
    case IE_CAST:
        if (is_int(e->dtype) && is_int(e->args[0]->dtype)) {
            iv(g, e->args[0], o);
            return;
        }
        break;
    case IE_NEG:
        sb_puts(o, "pf_iv_neg(");
        iv(g, e->args[0], o);
        sb_puts(o, ", &ovf)");
        return;
    case IE_ADD: case IE_SUB: case IE_MUL: case IE_DIV: case IE_MOD: case IE_MAX: case IE_MIN: {
        if (!is_int(e->dtype))
            break;
        static const char *const fn[IE_COUNT] = {
            [IE_ADD] = "add", [IE_SUB] = "sub", [IE_MUL] = "mul", [IE_DIV] = "div",
            [IE_MOD] = "mod", [IE_MAX] = "max", [IE_MIN] = "min",
        };
        sb_printf(o, "pf_iv_%s(", fn[e->kind]);
        iv(g, e->args[0], o);
        sb_puts(o, ", ");
        iv(g, e->args[1], o);
        sb_puts(o, e->kind == IE_MAX || e->kind == IE_MIN ? ")" : ", &ovf)");
        return;
    }
    default:
        break;
    }
    /* not an affine size-and-variable expression: its range is unknown, so the
     * check refuses (PDL subscripts are affine; this is a safety net) */
    sb_puts(o, "pf_iv_all()");
}

static void check_access(CgC *g, const Buffer *b, Expr *const *idx, int ind)
{
    for (int i = 0; i < b->rank; i++) {
        sb_printf(g->out, "%*s{ pf_iv x = ", ind, "");
        iv(g, idx[i], g->out);
        sb_printf(g->out, "; if (ovf || x.lo < 0 || x.hi >= b%d_d%d) return %d; }\n", b->id, i, CG_C_ERANGE);
    }
}

static void check_expr(CgC *g, const Expr *e, int ind)
{
    if (!e)
        return;
    if (e->kind == IE_LOAD) {
        if (!e->u.load.guarded)
            check_access(g, e->u.load.buf, e->u.load.idx, ind);
        for (int i = 0; i < e->u.load.buf->rank; i++)
            check_expr(g, e->u.load.idx[i], ind);
        return;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        check_expr(g, e->args[i], ind);
}

static void check_list(CgC *g, const NodeList *l, int ind)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        switch (n->kind) {
        case N_LOOP: {
            const Var *v = n->u.loop.var;
            sb_printf(g->out, "%*s{ pf_iv l = ", ind, "");
            iv(g, n->u.loop.lo, g->out);
            sb_puts(g->out, ", h = ");
            iv(g, n->u.loop.hi, g->out);
            sb_printf(g->out, ";\n%*s  if (ovf) return %d;\n", ind, "", CG_C_ERANGE);
            /* a loop that may run: its variable lies in [min lo, max hi - 1] */
            sb_printf(g->out, "%*s  if (l.lo < h.hi) {\n%*s    pf_iv iv%d = {l.lo, h.hi - 1};\n", ind, "", ind, "",
                      v->id);
            check_list(g, &n->u.loop.body, ind + 4);
            sb_printf(g->out, "%*s    (void)iv%d;\n%*s  }\n%*s}\n", ind, "", v->id, ind, "", ind, "");
            break;
        }
        case N_IF:
            check_expr(g, n->u.guard.cond, ind);
            check_list(g, &n->u.guard.body, ind);
            break;
        case N_STMT:
            check_access(g, n->u.stmt.buf, n->u.stmt.idx, ind);
            for (int j = 0; j < n->u.stmt.buf->rank; j++)
                check_expr(g, n->u.stmt.idx[j], ind);
            check_expr(g, n->u.stmt.value, ind);
            break;
        default:
            break;
        }
    }
}

/* ---- values ---- */

static void ex(CgC *g, const Expr *e, StrBuf *o);

static void flt_const(double v, DType t, StrBuf *o)
{
    const char *ty = t == DT_F64 ? "double" : "float";
    if (isnan(v))
        sb_printf(o, "((%s)NAN)", ty);
    else if (isinf(v))
        sb_printf(o, "((%s)%sINFINITY)", ty, v < 0 ? "-" : "");
    else
        sb_printf(o, "((%s)%a)", ty, v);
}

/* The C expression s, of C compute type for `from`, converted to `to`. */
static void conv(const char *s, DType from, DType to, StrBuf *o)
{
    bool ff = dtype_is_float(from), ft = dtype_is_float(to);
    if (from == to || (ff && ft && to == DT_F32 && from != DT_F64)) {
        sb_puts(o, s);
        return;
    }
    if (to == DT_BOOL) {
        sb_printf(o, "((%s) != 0)", s);
        return;
    }
    if (ft) {
        const char *src = from == DT_F64 ? "(float)" : "";
        if (to == DT_F64)
            sb_printf(o, "((double)(%s))", s);
        else if (to == DT_F16)
            sb_printf(o, "pf_rh(%s(%s))", ff ? src : "(float)", s);
        else if (to == DT_BF16)
            sb_printf(o, "pf_rbf(%s(%s))", ff ? src : "(float)", s);
        else
            sb_printf(o, "((float)(%s))", s);
        return;
    }
    /* to an integer */
    if (ff)
        sb_printf(o, "%s((double)(%s))", to == DT_I32 ? "pf_f2i32" : "pf_f2i64", s);
    else if (to == DT_I32 && from == DT_I64)
        sb_printf(o, "pf_i2i32(%s)", s);
    else
        sb_printf(o, "((%s)(%s))", ctype(to), s);
}

static void as(CgC *g, const Expr *e, DType t, StrBuf *o)
{
    StrBuf s = {0};
    ex(g, e, &s);
    conv(s.s ? s.s : "0", e->dtype, t, o);
    sb_free(&s);
}

/* Row-major element offset of buffer b at idx (unchecked). */
static void offset(CgC *g, const Buffer *b, Expr *const *idx, StrBuf *o)
{
    if (b->rank == 0) {
        sb_puts(o, "0");
        return;
    }
    for (int i = 1; i < b->rank; i++)
        sb_puts(o, "(");
    for (int i = 0; i < b->rank; i++) {
        if (i)
            sb_printf(o, ") * b%d_d%d + ", b->id, i);
        as(g, idx[i], DT_I64, o);
    }
}

static void load_elem(const Buffer *b, const char *at, StrBuf *o)
{
    switch (b->dtype) {
    case DT_F16: sb_printf(o, "pf_h2f(b%d[%s])", b->id, at); break;
    case DT_BF16: sb_printf(o, "pf_bf2f(b%d[%s])", b->id, at); break;
    case DT_BOOL: sb_printf(o, "(b%d[%s] != 0)", b->id, at); break;
    default: sb_printf(o, "b%d[%s]", b->id, at); break;
    }
}

static void emit_load(CgC *g, const Expr *e, StrBuf *o)
{
    const Buffer *b = e->u.load.buf;
    StrBuf v = {0}, at = {0};
    if (!e->u.load.guarded) {
        offset(g, b, e->u.load.idx, &at);
        load_elem(b, at.s, &v);
        conv(v.s, b->dtype, e->dtype, o);
    } else {
        /* pf_gx folds the indices into an offset, -1 as soon as one leaves its
         * dimension; the element is read only at a valid offset */
        for (int i = 0; i < b->rank; i++)
            sb_puts(&at, "pf_gx(");
        sb_puts(&at, "0");
        for (int i = 0; i < b->rank; i++) {
            sb_puts(&at, ", ");
            as(g, e->u.load.idx[i], DT_I64, &at);
            sb_printf(&at, ", b%d_d%d)", b->id, i);
        }
        StrBuf pad = {0}, padc = {0};
        flt_const(b->pad, DT_F64, &pad);
        /* the pad value in the buffer's compute type, converted as a stored value */
        conv(pad.s, DT_F64, dtype_compute(b->dtype), &padc);
        sb_printf(&v, "pf_gl%d(b%d, %s, %s)", b->id, b->id, at.s, padc.s);
        conv(v.s, dtype_compute(b->dtype), e->dtype, o);
        sb_free(&pad);
        sb_free(&padc);
    }
    sb_free(&v);
    sb_free(&at);
}

static void bin(CgC *g, const Expr *e, DType t, const char *fmt, StrBuf *o)
{
    StrBuf a = {0}, b = {0};
    as(g, e->args[0], t, &a);
    as(g, e->args[1], t, &b);
    sb_printf(o, fmt, a.s, b.s);
    sb_free(&a);
    sb_free(&b);
}

static void ex(CgC *g, const Expr *e, StrBuf *o)
{
    DType t = e->dtype;
    bool f = dtype_is_float(t), dbl = t == DT_F64;
    switch (e->kind) {
    case IE_INT:
        if (f)
            flt_const((double)e->u.i, t, o);
        else if (t == DT_BOOL)
            sb_puts(o, e->u.i ? "1" : "0");
        else if (e->u.i == INT64_MIN)
            sb_printf(o, "((%s)INT64_MIN)", ctype(t));
        else
            sb_printf(o, "((%s)INT64_C(%" PRId64 "))", ctype(t), e->u.i);
        return;
    case IE_FLT:
        if (f)
            flt_const(e->u.f, t, o);
        else {
            StrBuf s = {0};
            flt_const(e->u.f, DT_F64, &s);
            conv(s.s, DT_F64, t, o);
            sb_free(&s);
        }
        return;
    case IE_PARAM: {
        char s[32];
        snprintf(s, sizeof s, "pf_p%d", e->u.param);
        conv(s, DT_I64, t, o);
        return;
    }
    case IE_VAR: {
        char s[32];
        snprintf(s, sizeof s, "v%d", e->u.var->id);
        conv(s, DT_I64, t, o);
        return;
    }
    case IE_LOAD: emit_load(g, e, o); return;
    case IE_CAST: as(g, e->args[0], t, o); return;
    case IE_NOT:
        sb_puts(o, "(!");
        as(g, e->args[0], DT_BOOL, o);
        sb_puts(o, ")");
        return;
    case IE_NEG:
        if (t == DT_I64) { /* wrapping negation: no UB on INT64_MIN */
            sb_puts(o, "((int64_t)(0 - (uint64_t)");
            as(g, e->args[0], t, o);
            sb_puts(o, "))");
            return;
        }
        sb_puts(o, "(-");
        as(g, e->args[0], t, o);
        sb_puts(o, ")");
        return;
    case IE_ABS:
        sb_puts(o, f ? (dbl ? "fabs(" : "fabsf(") : t == DT_I64 ? "pf_abs64(" : "pf_abs32(");
        as(g, e->args[0], t, o);
        sb_puts(o, ")");
        return;
    case IE_EXP: case IE_LOG: case IE_SQRT: case IE_RSQRT: case IE_TANH: case IE_ERF: case IE_LOG1P:
    case IE_EXPM1: case IE_FLOOR: case IE_CEIL: case IE_ROUND: {
        if (!f) {
            fail(g, e->span, "math on integers");
            sb_puts(o, "0");
            return;
        }
        static const char *const fn[IE_COUNT] = {
            [IE_EXP] = "exp", [IE_LOG] = "log", [IE_SQRT] = "sqrt", [IE_RSQRT] = "sqrt", [IE_TANH] = "tanh",
            [IE_ERF] = "erf", [IE_LOG1P] = "log1p", [IE_EXPM1] = "expm1", [IE_FLOOR] = "floor",
            [IE_CEIL] = "ceil", [IE_ROUND] = "rint", /* rint: ties to even in the default rounding mode */
        };
        sb_printf(o, "%s%s%s(", e->kind == IE_RSQRT ? (dbl ? "(1.0 / " : "(1.0f / ") : "", fn[e->kind],
                  dbl ? "" : "f");
        as(g, e->args[0], t, o);
        sb_puts(o, e->kind == IE_RSQRT ? "))" : ")"); /* f16/bf16 math is carried in f32 */
        return;
    }
    case IE_POW:
        if (!f) {
            fail(g, e->span, "math on integers");
            sb_puts(o, "0");
            return;
        }
        bin(g, e, t, dbl ? "pow(%s, %s)" : "powf(%s, %s)", o);
        return;
    case IE_ADD: bin(g, e, t, "(%s + %s)", o); return;
    case IE_SUB: bin(g, e, t, "(%s - %s)", o); return;
    case IE_MUL: bin(g, e, t, "(%s * %s)", o); return;
    case IE_DIV:
        bin(g, e, t, f ? "(%s / %s)" : t == DT_I64 ? "pf_div(%s, %s)" : "pf_div32(%s, %s)", o);
        return;
    case IE_MOD:
        bin(g, e, t, f ? (dbl ? "pf_fmodd(%s, %s)" : "pf_fmodf(%s, %s)") : t == DT_I64 ? "pf_mod(%s, %s)" : "pf_mod32(%s, %s)",
            o);
        return;
    case IE_MAX:
        bin(g, e, t, f ? (dbl ? "pf_maxd(%s, %s)" : "pf_maxf(%s, %s)") : t == DT_I64 ? "pf_max64(%s, %s)" : "pf_max32(%s, %s)",
            o);
        return;
    case IE_MIN:
        bin(g, e, t, f ? (dbl ? "pf_mind(%s, %s)" : "pf_minf(%s, %s)") : t == DT_I64 ? "pf_min64(%s, %s)" : "pf_min32(%s, %s)",
            o);
        return;
    case IE_LT: case IE_LE: case IE_GT: case IE_GE: case IE_EQ: case IE_NE: {
        static const char *const op[IE_COUNT] = {
            [IE_LT] = "<", [IE_LE] = "<=", [IE_GT] = ">", [IE_GE] = ">=", [IE_EQ] = "==", [IE_NE] = "!=",
        };
        DType ct = dtype_promote(e->args[0]->dtype, e->args[1]->dtype);
        if (e->args[0]->dtype == DT_BOOL && e->args[1]->dtype == DT_BOOL)
            ct = DT_BOOL;
        char fmt[32];
        snprintf(fmt, sizeof fmt, "(%%s %s %%s)", op[e->kind]);
        StrBuf s = {0};
        bin(g, e, ct, fmt, &s);
        conv(s.s, DT_BOOL, t, o);
        sb_free(&s);
        return;
    }
    case IE_AND:
    case IE_OR: {
        StrBuf s = {0};
        bin(g, e, DT_BOOL, e->kind == IE_AND ? "(%s && %s)" : "(%s || %s)", &s);
        conv(s.s, DT_BOOL, t, o);
        sb_free(&s);
        return;
    }
    case IE_SELECT:
        sb_puts(o, "(");
        as(g, e->args[0], DT_BOOL, o);
        sb_puts(o, " ? ");
        as(g, e->args[1], t, o);
        sb_puts(o, " : ");
        as(g, e->args[2], t, o);
        sb_puts(o, ")");
        return;
    default:
        fail(g, e->span, "this expression kind");
        sb_puts(o, "0");
        return;
    }
}

/* ---- statements ---- */

static void store(CgC *g, const Node *n, int ind)
{
    const Buffer *b = n->u.stmt.buf;
    DType ct = dtype_compute(b->dtype);
    if (b->dtype == DT_BOOL || b->dtype == DT_I64)
        ct = b->dtype;
    StrBuf at = {0}, v = {0}, old = {0}, nv = {0};
    offset(g, b, n->u.stmt.idx, &at);
    as(g, n->u.stmt.value, ct, &v);
    sb_printf(g->out, "%*s{ const int64_t o = %s;\n", ind, "", at.s);
    sb_printf(g->out, "%*s  const %s x = %s;\n", ind, "", ctype(ct), v.s);
    load_elem(b, "o", &old);
    bool fl = dtype_is_float(ct), dbl = ct == DT_F64;
    switch (n->u.stmt.op) {
    case SOP_ASSIGN: sb_puts(&nv, "x"); break;
    case SOP_ADD: sb_printf(&nv, ct == DT_BOOL ? "(%s || x)" : "(%s + x)", old.s); break;
    case SOP_MUL: sb_printf(&nv, ct == DT_BOOL ? "(%s && x)" : "(%s * x)", old.s); break;
    case SOP_MAX:
        sb_printf(&nv, "%s(%s, x)", fl ? (dbl ? "pf_maxd" : "pf_maxf") : ct == DT_I32 ? "pf_max32" : "pf_max64", old.s);
        break;
    case SOP_MIN:
        sb_printf(&nv, "%s(%s, x)", fl ? (dbl ? "pf_mind" : "pf_minf") : ct == DT_I32 ? "pf_min32" : "pf_min64", old.s);
        break;
    }
    switch (b->dtype) {
    case DT_F16: sb_printf(g->out, "%*s  b%d[o] = pf_f2h(%s); }\n", ind, "", b->id, nv.s); break;
    case DT_BF16: sb_printf(g->out, "%*s  b%d[o] = pf_f2bf(%s); }\n", ind, "", b->id, nv.s); break;
    case DT_BOOL: sb_printf(g->out, "%*s  b%d[o] = (uint8_t)((%s) != 0); }\n", ind, "", b->id, nv.s); break;
    default: sb_printf(g->out, "%*s  b%d[o] = %s; }\n", ind, "", b->id, nv.s); break;
    }
    sb_free(&at);
    sb_free(&v);
    sb_free(&old);
    sb_free(&nv);
}

static void body_list(CgC *g, const NodeList *l, int ind)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        switch (n->kind) {
        case N_LOOP: {
            int id = n->u.loop.var->id;
            StrBuf lo = {0}, hi = {0};
            as(g, n->u.loop.lo, DT_I64, &lo);
            as(g, n->u.loop.hi, DT_I64, &hi);
            sb_printf(g->out, "%*sfor (int64_t v%d = %s, h%d = %s; v%d < h%d; v%d++) {\n", ind, "", id, lo.s, id, hi.s,
                      id, id, id);
            body_list(g, &n->u.loop.body, ind + 4);
            sb_printf(g->out, "%*s}\n", ind, "");
            sb_free(&lo);
            sb_free(&hi);
            break;
        }
        case N_IF: {
            StrBuf c = {0};
            as(g, n->u.guard.cond, DT_BOOL, &c);
            sb_printf(g->out, "%*sif (%s) {\n", ind, "", c.s);
            body_list(g, &n->u.guard.body, ind + 4);
            sb_printf(g->out, "%*s}\n", ind, "");
            sb_free(&c);
            break;
        }
        case N_STMT: store(g, n, ind); break;
        default: break; /* prefetch hints: nothing to do in portable C */
        }
    }
}

static bool uses_guarded(const Expr *e, const Buffer *b)
{
    if (!e)
        return false;
    if (e->kind == IE_LOAD) {
        if (e->u.load.buf == b && e->u.load.guarded)
            return true;
        for (int i = 0; i < e->u.load.buf->rank; i++)
            if (uses_guarded(e->u.load.idx[i], b))
                return true;
        return false;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        if (uses_guarded(e->args[i], b))
            return true;
    return false;
}

static bool list_guarded(const NodeList *l, const Buffer *b)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        if (n->kind == N_LOOP) {
            if (uses_guarded(n->u.loop.lo, b) || uses_guarded(n->u.loop.hi, b) || list_guarded(&n->u.loop.body, b))
                return true;
        } else if (n->kind == N_IF) {
            if (uses_guarded(n->u.guard.cond, b) || list_guarded(&n->u.guard.body, b))
                return true;
        } else if (n->kind == N_STMT) {
            if (uses_guarded(n->u.stmt.value, b))
                return true;
            for (int j = 0; j < n->u.stmt.buf->rank; j++)
                if (uses_guarded(n->u.stmt.idx[j], b))
                    return true;
        }
    }
    return false;
}

void cgc_guard_helpers(CgC *g, const char *fname)
{
    const Kernel *k = g->k;
    for (int i = 0; i < k->nbufs; i++) {
        const Buffer *b = k->bufs[i];
        if (!list_guarded(&k->body, b))
            continue;
        DType ct = dtype_compute(b->dtype);
        StrBuf el = {0};
        load_elem(b, "o", &el);
        sb_printf(g->out, "%s %s %s_gl_%d(const %s *b%d, int64_t o, %s pad) { return o < 0 ? pad : %s; }\n",
                  g->cuda ? "static __device__ __forceinline__" : "static inline", ctype(ct), fname, i,
                  cg_c_storage_type(b->dtype), i, ctype(ct), el.s);
        sb_printf(g->out, "#define pf_gl%d %s_gl_%d\n", i, fname, i);
        sb_free(&el);
    }
}

void cgc_guard_undefs(CgC *g)
{
    for (int i = 0; i < g->k->nbufs; i++)
        if (list_guarded(&g->k->body, g->k->bufs[i]))
            sb_printf(g->out, "#undef pf_gl%d\n", i);
}

bool cgc_dims(CgC *g, int ind)
{
    const Kernel *k = g->k;
    for (int i = 0; i < k->nbufs; i++) {
        const Buffer *b = k->bufs[i];
        for (int j = 0; j < b->rank; j++) {
            sb_printf(g->out, "%*sconst int64_t b%d_d%d = ", ind, "", i, j);
            if (!size_expr(k, b->shape[j], "pf_p%d", g->out)) {
                fail(g, b->span, "this shape");
                return false;
            }
            sb_printf(g->out, ";\n%*s(void)b%d_d%d;\n", ind, "", i, j);
        }
    }
    return true;
}

void cgc_check_list(CgC *g, const NodeList *l, int ind)
{
    check_list(g, l, ind);
}

void cgc_body_list(CgC *g, const NodeList *l, int ind)
{
    body_list(g, l, ind);
}

bool cgc_size_expr(const Kernel *k, const Expr *e, const char *pfmt, StrBuf *o)
{
    return size_expr(k, e, pfmt, o);
}

const char *cgc_ctype(DType t)
{
    return ctype(t);
}

bool cg_c_emit_general(const Kernel *k, const char *fname, StrBuf *out, Diags *d)
{
    CgC g = {.k = k, .d = d, .ok = true, .out = out};
    /* guarded-read helpers, one per buffer that needs one (typed pointer) */
    cgc_guard_helpers(&g, fname);
    sb_printf(out, "PF_CLONES static int %s(void *const *bufs, const int64_t *p)\n{\n    int ovf = 0;\n", fname);
    for (int i = 0; i < k->nparams; i++)
        sb_printf(out, "    const int64_t pf_p%d = p[%d]; /* %s */\n", i, i, k->params[i].name);
    for (int i = 0; i < k->nbufs; i++) {
        const Buffer *b = k->bufs[i];
        sb_printf(out, "    %s%s *restrict b%d = (%s%s *)bufs[%d]; /* %s */\n", b->kind == BUF_IN ? "const " : "",
                  cg_c_storage_type(b->dtype), i, b->kind == BUF_IN ? "const " : "", cg_c_storage_type(b->dtype), i,
                  b->name);
        sb_printf(out, "    (void)b%d;\n", i);
    }
    if (!cgc_dims(&g, 4))
        return false;
    for (int i = 0; i < k->nparams; i++)
        sb_printf(out, "    (void)pf_p%d;\n", i);
    sb_printf(out, "    if (ovf)\n        return %d;\n", CG_C_ERANGE);
    sb_puts(out, "    /* every index of every unpadded access stays inside its buffer */\n");
    check_list(&g, &k->body, 4);
    sb_puts(out, "    /* the loop nest */\n");
    body_list(&g, &k->body, 4);
    sb_puts(out, "    return 0;\n}\n");
    cgc_guard_undefs(&g);
    return g.ok;
}

bool cg_c_emit_range_check(const Kernel *k, const char *fname, StrBuf *out, Diags *d)
{
    CgC g = {.k = k, .d = d, .ok = true, .out = out};
    sb_printf(out, "static int %s(const int64_t *p)\n{\n    int ovf = 0;\n", fname);
    for (int i = 0; i < k->nparams; i++)
        sb_printf(out, "    const int64_t pf_p%d = p[%d]; /* %s */\n    (void)pf_p%d;\n", i, i, k->params[i].name, i);
    if (!cgc_dims(&g, 4))
        return false;
    sb_printf(out, "    if (ovf)\n        return %d;\n", CG_C_ERANGE);
    check_list(&g, &k->body, 4);
    sb_puts(out, "    return 0;\n}\n");
    return g.ok;
}
