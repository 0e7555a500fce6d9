/* IR -> CUDA C.  Each top-level node of Kernel.body becomes one __global__ function,
 * launched in order: top-level statements are separated by grid-wide dependences
 * (a reduction must finish before its result is read), and a kernel launch boundary
 * is the one grid-wide barrier CUDA offers without cooperative launches.
 *
 * The kernel arrives lowered by the GPU target passes (passes/gpu_*.c, run by
 * passes/pipeline.c; on a copy here when a caller skipped them), which decided in
 * the IR what this file and emit_tc.c print: block-reduce statements, per-thread
 * copies of local buffers (Buffer.thread_copies), grid loops, dead fills removed,
 * wide accesses (gpu-vector), the tensor-core lowering (gpu-mma: Buffer.layout,
 * TcGroup, lane loops) and software pipelines (gpu-pipeline).
 *
 * Two mappings:
 *   - scheduled nodes (some loop bound to BLOCK_* / THREAD_*): block loops become
 *     blockIdx, thread loops threadIdx (guarded when shorter than the block),
 *     MEM_SHARED buffers carve one dynamic __shared__ area, MEM_LOCAL buffers are
 *     per-thread arrays (one thread's copy; registers when indexed by unrolled
 *     loops), and __syncthreads() goes where pass gpu-barrier marked a barrier
 *     (between block-level steps that hand memory over);
 *   - unscheduled nodes: the grid loops (the outer loops passes/gpu_map.c proved
 *     parallel) are flattened onto a 1-D grid, one thread per iteration, and the
 *     rest runs serially inside the thread.  Correct for any kernel; fast enough to
 *     validate.
 *
 * f16 and bf16 are carried as raw 16-bit storage and converted with PTX cvt
 * instructions, computing in f32: NVRTC 13 does not find cuda_fp16.h by itself, and
 * perfc must compile where no toolkit headers exist. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../ir/gpu.h"
#include "../../ir/walk.h"
#include "emit_int.h"
#include "emit_scan.h"

#define DEFAULT_BLOCK 256

/* ------------------------------------------------------------------ names */

/* The printed names (codegen/cuda/names.c says why they cannot collide).  One table
 * of every name printed so far: a plain name already taken (by a launch, or a name
 * of another kind) is mangled instead.  Two variables of one name (never made by
 * lowering or the transformations) keep printing alike, as they are alike in the IR. */
typedef struct NameSet {
    const char **s;
    char *kind;
    size_t cap, n;
} NameSet;

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

/* The kind that took name, or 0. */
static char names_find(const NameSet *t, const char *name)
{
    if (!t->cap)
        return 0;
    for (uint64_t i = name_hash(name);; i++) {
        const char *x = t->s[i & (t->cap - 1)];
        if (!x)
            return 0;
        if (strcmp(x, name) == 0)
            return t->kind[i & (t->cap - 1)];
    }
}

static void names_add(NameSet *t, const char *name, char kind)
{
    if (2 * (t->n + 1) > t->cap) {
        NameSet g = {0};
        g.cap = t->cap ? t->cap * 2 : 64;
        g.s = xcalloc(g.cap, sizeof *g.s);
        g.kind = xcalloc(g.cap, 1);
        for (size_t i = 0; i < t->cap; i++)
            if (t->s[i])
                names_add(&g, t->s[i], t->kind[i]);
        free(t->s);
        free(t->kind);
        *t = g;
    }
    for (uint64_t i = name_hash(name);; i++) {
        size_t j = i & (t->cap - 1);
        if (!t->s[j]) {
            t->s[j] = name;
            t->kind[j] = kind;
            t->n++;
            return;
        }
        if (strcmp(t->s[j], name) == 0)
            return;
    }
}

static char *user_name(Arena *a, NameSet *t, char kind, const char *name)
{
    char had = cg_cuda_plain(name) ? names_find(t, name) : 0;
    char *r;
    if (cg_cuda_plain(name) && (!had || had == kind)) {
        r = arena_strdup(a, name);
    } else {
        StrBuf b = {0};
        cg_cuda_mangle(kind, name, &b);
        r = arena_strdup(a, b.s);
        sb_free(&b);
    }
    names_add(t, r, kind);
    return r;
}

/* Launch i is "BASE_i": BASE is the kernel's name when plain, else its mangled form,
 * cut to 48 characters (no trailing '_', so no "__"); all launches of one module
 * share BASE, and the numbers keep them apart. */
static void launch_name(const Kernel *k, int i, char *out, size_t n)
{
    StrBuf b = {0};
    if (cg_cuda_plain(k->name))
        sb_puts(&b, k->name);
    else
        cg_cuda_mangle('K', k->name, &b);
    size_t len = b.len > 48 ? 48 : b.len;
    while (len > 0 && b.s[len - 1] == '_')
        len--;
    snprintf(out, n, "%.*s_%d", (int)len, b.s, i);
    sb_free(&b);
}

static void make_names(Em *e)
{
    const Kernel *k = e->k;
    Arena *a = e->names;
    NameSet t = {0};
    char ln[64];
    for (int i = 0; i < k->body.n; i++) {
        launch_name(k, i, ln, sizeof ln);
        names_add(&t, arena_strdup(a, ln), 'K');
    }
    e->pname = arena_alloc(a, sizeof(char *) * (size_t)(k->nparams + 1));
    e->bname = arena_alloc(a, sizeof(char *) * (size_t)(k->nbufs + 1));
    e->vname = arena_alloc(a, sizeof(char *) * (size_t)(k->nvars + 1));
    for (int i = 0; i < k->nparams; i++)
        e->pname[i] = user_name(a, &t, 'P', k->params[i].name);
    for (int i = 0; i < k->nbufs; i++)
        e->bname[i] = user_name(a, &t, 'B', k->bufs[i]->name);
    for (int i = 0; i < k->nvars; i++)
        e->vname[i] = user_name(a, &t, 'V', k->vars[i]->name);
    free(t.s);
    free(t.kind);
}

static int buf_index(const Em *e, const Buffer *b)
{
    if (b->id >= 0 && b->id < e->k->nbufs && e->k->bufs[b->id] == b)
        return b->id;
    for (int i = 0; i < e->k->nbufs; i++)
        if (e->k->bufs[i] == b)
            return i;
    die("buffer %s not in kernel", b->name);
}

const char *em_bn(const Em *e, const Buffer *b) { return e->bname[buf_index(e, b)]; }

const char *em_vn(const Em *e, const Var *v)
{
    if (v->id >= 0 && v->id < e->k->nvars && e->k->vars[v->id] == v)
        return e->vname[v->id];
    for (int i = 0; i < e->k->nvars; i++)
        if (e->k->vars[i] == v)
            return e->vname[i];
    /* a variable the kernel does not list (never made by perfc): mangled all the same */
    StrBuf b = {0};
    cg_cuda_mangle('V', v->name, &b);
    const char *r = arena_strdup(e->names, b.s);
    sb_free(&b);
    return r;
}

/* ------------------------------------------------------------------ analyses
 * Constants with the bound sizes, loop extents and index ranges over a launch:
 * ir/gpu.c, shared with the GPU target passes that decided the mapping. */

bool em_cval(const Em *e, const Expr *x, int64_t *out) { return gpu_cval(e->k, x, out); }
bool em_extent(const Em *e, const Node *l, int64_t *lo, int64_t *ext) { return gpu_loop_extent(e->k, l, lo, ext); }
static bool irange(const Em *e, const Node *top, const Expr *x, int64_t *lo, int64_t *hi) { return gpu_irange(e->k, top, x, lo, hi); }
/* A loop's or guard's body, else NULL (the kernel is only read here). */
static const NodeList *body_of(const Node *n)
{
    return n->kind == N_LOOP ? &n->u.loop.body : n->kind == N_IF ? &n->u.guard.body : NULL;
}
#define is_block gpu_is_block
#define is_thread gpu_is_thread

static int64_t buf_elems(const Em *e, const Buffer *b)
{
    int64_t n = 1, v;
    for (int i = 0; i < b->rank; i++) {
        if (!em_cval(e, b->shape[i], &v))
            return -1;
        n *= v;
    }
    return n;
}

/* ------------------------------------------------------------------ expressions */

static void indent(Em *e)
{
    for (int i = 0; i < e->ind; i++)
        sb_puts(e->o, "    ");
}

void em_line(Em *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void em_line(Em *e, const char *fmt, ...)
{
    if (e->fwd_buf && e->ind < e->fwd_ind)
        e->fwd_buf = NULL;   /* the block of the forwarded value has closed */
    va_list ap;
    indent(e);
    va_start(ap, fmt);
    sb_vprintf(e->o, fmt, ap);
    va_end(ap);
    sb_putc(e->o, '\n');
}

const char *em_storage_type(DType t, bool idx64)
{
    switch (t) {
    case DT_F64: return "double";
    case DT_F32: return "float";
    case DT_F16: return "pf_half";
    case DT_BF16: return "pf_bf16";
    case DT_I32: return "int";
    case DT_I64: return idx64 ? "long long" : "idx_t";
    case DT_BOOL: return "bool";
    default: return "void";
    }
}

/* The C type an expression of dtype t is computed in. */
static const char *compute_type(DType t)
{
    switch (t) {
    case DT_F64: return "double";
    case DT_F32: case DT_F16: case DT_BF16: return "float";
    case DT_I32: return "int";
    case DT_I64: return "idx_t";
    case DT_BOOL: return "bool";
    default: return "void";
    }
}

void em_expr(Em *e, const Expr *x, StrBuf *o);
void em_sub(Em *e, const Expr *x, StrBuf *o);

static void flt_const(StrBuf *o, double v, DType t)
{
    bool dbl = t == DT_F64;
    if (isnan(v)) {
        sb_puts(o, dbl ? "__longlong_as_double(0x7ff8000000000000LL)" : "__int_as_float(0x7fc00000)");
        return;
    }
    if (isinf(v)) {
        sb_puts(o, v < 0 ? "(-" : "(");
        sb_puts(o, dbl ? "__longlong_as_double(0x7ff0000000000000LL))" : "__int_as_float(0x7f800000))");
        return;
    }
    char buf[64];
    snprintf(buf, sizeof buf, dbl ? "%.17g" : "%.9g", v);
    bool has = strpbrk(buf, ".e") != NULL;
    sb_printf(o, "%s%s%s", buf, has ? "" : ".0", dbl ? "" : "f");
}

/* Index i of an access to global buffer b, clamped into its dimension while
 * e->clamp is set. */
static void em_index(Em *e, const Buffer *b, Expr *const *idx, int i, StrBuf *o)
{
    if (!e->clamp) {
        em_sub(e, idx[i], o);
        return;
    }
    sb_puts(o, "pf_clamp(");
    em_expr(e, idx[i], o);
    sb_puts(o, ", ");
    em_expr(e, b->shape[i], o);
    sb_putc(o, ')');
}

/* The element b[idx] as an lvalue (no conversion).  Global buffers are flat: the
 * row-major linear index is written in Horner form with the symbolic sizes, e.g.
 * A[i * K + k]; staged buffers are C arrays, As[ty][kk]. */
void em_elem(Em *e, const Buffer *b, Expr *const *idx, StrBuf *o)
{
    if (e->swz && b->layout == LAYOUT_SWIZZLE128) {
        em_swz_elem(e, b, idx, o);
        return;
    }
    sb_puts(o, em_bn(e, b));
    if (e->frag && em_is_frag(b)) {
        em_frag_elem(e, b, idx, o);
        return;
    }
    if (e->frag && b->layout == LAYOUT_MMA_ROWS) {
        em_rows_elem(e, b, idx, o);
        return;
    }
    if (b->mem != MEM_GLOBAL) {
        if (b->rank == 0)
            sb_puts(o, "[0]");
        for (int i = 0; i < b->rank; i++) {
            sb_putc(o, '[');
            em_expr(e, idx[i], o);
            sb_putc(o, ']');
        }
        return;
    }
    StrBuf cur = {0};
    if (b->rank == 0)
        sb_putc(&cur, '0');
    else
        em_index(e, b, idx, 0, &cur);
    for (int i = 1; i < b->rank; i++) {
        StrBuf nx = {0};
        if (i > 1) sb_printf(&nx, "(%s)", cur.s);
        else sb_puts(&nx, cur.s);
        sb_puts(&nx, " * ");
        em_sub(e, b->shape[i], &nx);
        sb_puts(&nx, " + ");
        em_index(e, b, idx, i, &nx);
        sb_free(&cur);
        cur = nx;
    }
    sb_printf(o, "[%s]", cur.s);
    sb_free(&cur);
}

/* Whether every index of an access to b lies inside its dimension (a guarded
 * load or store), as a C condition. */
void em_in_range(Em *e, const Buffer *b, Expr *const *idx, StrBuf *o)
{
    for (int i = 0; i < b->rank; i++) {
        sb_puts(o, i ? " && pf_in(" : "pf_in(");
        em_expr(e, idx[i], o);
        sb_puts(o, ", ");
        em_expr(e, b->shape[i], o);
        sb_putc(o, ')');
    }
    if (b->rank == 0) sb_puts(o, "true");
}

static void load_value(Em *e, const Buffer *b, Expr *const *idx, StrBuf *o)
{
    if (b == e->fwd_buf) {
        StrBuf el = {0};
        em_elem(e, b, idx, &el);
        bool same = el.s && e->fwd_lv.s && strcmp(el.s, e->fwd_lv.s) == 0;
        sb_free(&el);
        if (same) {
            sb_printf(o, "pf_fw%d", e->fwd_n);
            return;
        }
    }
    const char *cv = b->dtype == DT_F16 ? "pf_h2f(" : b->dtype == DT_BF16 ? "pf_b2f(" : NULL;
    if (cv) sb_puts(o, cv);
    em_elem(e, b, idx, o);
    if (cv) sb_putc(o, ')');
}

static const char *math_name(ExprKind k, DType t)
{
    bool d = t == DT_F64;
    switch (k) {
    case IE_EXP: return d ? "exp" : "expf";
    case IE_LOG: return d ? "log" : "logf";
    case IE_SQRT: return d ? "sqrt" : "sqrtf";
    case IE_RSQRT: return d ? "rsqrt" : "rsqrtf";
    case IE_TANH: return d ? "tanh" : "tanhf";
    case IE_ERF: return d ? "erf" : "erff";
    case IE_ABS: return d ? "fabs" : "fabsf";
    case IE_MAX: return d ? "fmax" : "fmaxf";
    case IE_MIN: return d ? "fmin" : "fminf";
    default: return cuda_mathfn_name(k, d) ? cuda_mathfn_name(k, d) : "?";
    }
}

static bool is_atom(const Expr *x)
{
    return x->kind == IE_INT || x->kind == IE_PARAM || x->kind == IE_VAR || x->kind == IE_LOAD;
}

void em_sub(Em *e, const Expr *x, StrBuf *o)
{
    bool par = !is_atom(x) && (x->kind >= IE_ADD && x->kind <= IE_OR);
    if (par) sb_putc(o, '(');
    em_expr(e, x, o);
    if (par) sb_putc(o, ')');
}

void em_expr(Em *e, const Expr *x, StrBuf *o)
{
    const char *op = NULL;
    DType at = x->args[0] ? x->args[0]->dtype : x->dtype;
    bool fl = dtype_is_float(x->dtype) || dtype_is_float(at);
    switch (x->kind) {
    case IE_INT:
        if (x->u.i > INT32_MAX || x->u.i < INT32_MIN)
            sb_printf(o, "%" PRId64 "LL", x->u.i);
        else
            sb_printf(o, "%" PRId64, x->u.i);
        return;
    case IE_FLT: flt_const(o, x->u.f, x->dtype); return;
    case IE_PARAM: sb_puts(o, e->pname[x->u.param]); return;
    case IE_VAR:
        for (int q = 0; q < 2 && e->fragmode; q++)
            if (e->dvar[q] == x->u.var) {
                sb_puts(o, e->dname[q]);
                return;
            }
        sb_puts(o, em_vn(e, x->u.var));
        return;
    case IE_LOAD: {
        const Buffer *b = x->u.load.buf;
        for (int i = 0; i < e->nvload; i++)
            if (e->vload[i] == x) {
                sb_printf(o, "pf_v%d[%s]", e->vid[i], em_vn(e, e->vlane));
                return;
            }
        if (x->u.load.guarded && b->mem == MEM_GLOBAL && b->layout == LAYOUT_PLAIN && dtype_is_float(b->dtype)) {
            /* out-of-range reads yield the buffer's pad value (0 without one).  The
             * load itself reads a clamped index, so it is valid wherever it runs
             * and is an argument, evaluated whatever the condition: the compiler may
             * issue the loads of an unrolled copy together instead of each behind
             * its own branch. */
            DType ct = b->dtype == DT_F64 ? DT_F64 : DT_F32;
            sb_printf(o, "pf_pick%s(", ct == DT_F64 ? "d" : "f");
            em_in_range(e, b, x->u.load.idx, o);
            sb_puts(o, ", ");
            e->clamp = true;
            load_value(e, b, x->u.load.idx, o);
            e->clamp = false;
            sb_puts(o, ", ");
            flt_const(o, b->has_pad ? b->pad : 0.0, ct);
            sb_puts(o, ")");
        } else if (x->u.load.guarded) {
            /* out-of-range reads yield the buffer's pad value (0 without one)
             * without touching memory */
            sb_puts(o, "(");
            em_in_range(e, b, x->u.load.idx, o);
            sb_puts(o, " ? ");
            load_value(e, b, x->u.load.idx, o);
            sb_puts(o, " : ");
            if (dtype_is_float(b->dtype))
                flt_const(o, b->has_pad ? b->pad : 0.0, b->dtype == DT_F64 ? DT_F64 : DT_F32);
            else
                sb_printf(o, "%lld", (long long)(b->has_pad ? b->pad : 0));
            sb_puts(o, ")");
        } else {
            load_value(e, b, x->u.load.idx, o);
        }
        return;
    }
    case IE_CAST: {
        DType from = x->args[0]->dtype, to = x->dtype;
        if (to == DT_F16 || to == DT_BF16) {
            /* a value of f16 type is carried in f32, rounded as storage would round it */
            sb_puts(o, to == DT_F16 ? "pf_h2f(pf_f2h(" : "pf_b2f(pf_f2b(");
            if (!dtype_is_float(from)) sb_puts(o, "(float)");
            em_sub(e, x->args[0], o);
            sb_puts(o, "))");
        } else if (to == DT_BOOL) {
            sb_puts(o, "(");
            em_sub(e, x->args[0], o);
            sb_puts(o, " != 0)");
        } else if ((from == DT_F16 || from == DT_BF16) && to == DT_F32) {
            em_expr(e, x->args[0], o);
        } else {
            sb_printf(o, "(%s)", compute_type(to));
            em_sub(e, x->args[0], o);
        }
        return;
    }
    case IE_NEG: sb_puts(o, "-"); em_sub(e, x->args[0], o); return;
    case IE_NOT: sb_puts(o, "!"); em_sub(e, x->args[0], o); return;
    case IE_EXP: case IE_LOG: case IE_SQRT: case IE_RSQRT: case IE_TANH: case IE_ERF:
    case IE_LOG1P: case IE_EXPM1: case IE_FLOOR: case IE_CEIL: case IE_ROUND: case IE_POW:
        /* Kernel.fast_exp: the results are 16-bit, the approximate exponential suffices;
         * exp(a - b) as 2^(a log2e - b log2e), one fused multiply-add a value when b
         * stays the same over a loop (a softmax's maximum) */
        if (x->kind == IE_EXP && x->dtype == DT_F32 && e->k->fast_exp && x->args[0]->kind == IE_SUB &&
            x->args[0]->dtype == DT_F32) {
            sb_puts(o, "pf_fexpd(");
            em_expr(e, x->args[0]->args[0], o);
            sb_puts(o, ", ");
            em_expr(e, x->args[0]->args[1], o);
            sb_putc(o, ')');
            return;
        }
        /* exp(c (a - b)), a scale moved into the exponent (exp_scale): the same with
         * c log2e as the multiplier, so the scale costs nothing a value */
        if (x->kind == IE_EXP && x->dtype == DT_F32 && e->k->fast_exp && x->args[0]->kind == IE_MUL &&
            x->args[0]->dtype == DT_F32) {
            const Expr *m = x->args[0];
            int si = m->args[1]->kind == IE_SUB ? 1 : m->args[0]->kind == IE_SUB ? 0 : -1;
            if (si >= 0 && m->args[si]->dtype == DT_F32) {
                sb_puts(o, "pf_fexpds(");
                em_expr(e, m->args[si]->args[0], o);
                sb_puts(o, ", ");
                em_expr(e, m->args[si]->args[1], o);
                sb_puts(o, ", ");
                em_expr(e, m->args[1 - si], o);
                sb_putc(o, ')');
                return;
            }
        }
        sb_printf(o, "%s(", x->kind == IE_EXP && x->dtype == DT_F32 && e->k->fast_exp ? "pf_fexp"
                                                                                      : math_name(x->kind, x->dtype));
        em_expr(e, x->args[0], o);
        if (x->kind == IE_POW) { sb_puts(o, ", "); em_expr(e, x->args[1], o); }
        sb_putc(o, ')');
        return;
    case IE_ABS:
        if (!fl) {
            sb_puts(o, "(");
            em_sub(e, x->args[0], o);
            sb_puts(o, " < 0 ? -");
            em_sub(e, x->args[0], o);
            sb_puts(o, " : ");
            em_sub(e, x->args[0], o);
            sb_puts(o, ")");
            return;
        }
        sb_printf(o, "%s(", math_name(x->kind, x->dtype));
        em_expr(e, x->args[0], o);
        sb_putc(o, ')');
        return;
    case IE_MAX: case IE_MIN:
        if (fl) {
            sb_printf(o, "%s(", math_name(x->kind, x->dtype));
            em_expr(e, x->args[0], o);
            sb_puts(o, ", ");
            em_expr(e, x->args[1], o);
            sb_putc(o, ')');
        } else {
            sb_puts(o, "(");
            em_sub(e, x->args[0], o);
            sb_puts(o, x->kind == IE_MAX ? " > " : " < ");
            em_sub(e, x->args[1], o);
            sb_puts(o, " ? ");
            em_sub(e, x->args[0], o);
            sb_puts(o, " : ");
            em_sub(e, x->args[1], o);
            sb_puts(o, ")");
        }
        return;
    case IE_DIV: case IE_MOD:
        if (!fl && x->kind == IE_MOD && e->pvar && x->args[0]->kind == IE_VAR &&
            x->args[0]->u.var == e->pvar && x->args[1]->kind == IE_INT && x->args[1]->u.i > 0) {
            /* a stage index: the pipelined loop's variable starts at 0 or above */
            sb_printf(o, "(idx_t)((unsigned)%s %% %" PRId64 "u)", em_vn(e, e->pvar), x->args[1]->u.i);
            return;
        }
        int64_t dv, nlo, nhi;
        if (!fl && e->top && em_cval(e, x->args[1], &dv) && dv > 0 && !em_cval(e, x->args[0], &nlo) &&
            irange(e, e->top, x->args[0], &nlo, &nhi) && nlo >= 0) {
            /* a numerator that never goes below 0 (a collapsed loop's index): floor and
             * truncation agree, and a power of two is a shift or a mask */
            int sh = 0;
            while (sh < 62 && ((int64_t)1 << sh) < dv) sh++;
            sb_puts(o, "(");
            em_sub(e, x->args[0], o);
            if (((int64_t)1 << sh) == dv && x->kind == IE_DIV)
                sb_printf(o, " >> %d)", sh);
            else if (((int64_t)1 << sh) == dv)
                sb_printf(o, " & %" PRId64 ")", dv - 1);
            else
                sb_printf(o, " %s %" PRId64 ")", x->kind == IE_DIV ? "/" : "%", dv);
            return;
        }
        if (!fl) {
            /* IR integer division and modulo are floor operations; C's truncate */
            sb_puts(o, x->kind == IE_DIV ? "pf_fdiv(" : "pf_fmod(");
            em_expr(e, x->args[0], o);
            sb_puts(o, ", ");
            em_expr(e, x->args[1], o);
            sb_putc(o, ')');
            return;
        }
        if (x->kind == IE_MOD) {
            sb_puts(o, x->dtype == DT_F64 ? "pf_fmodd(" : "pf_fmodf(");
            em_expr(e, x->args[0], o);
            sb_puts(o, ", ");
            em_expr(e, x->args[1], o);
            sb_putc(o, ')');
            return;
        }
        op = "/";
        break;
    case IE_ADD: op = "+"; break;
    case IE_SUB: op = "-"; break;
    case IE_MUL: op = "*"; break;
    case IE_LT: op = "<"; break;
    case IE_LE: op = "<="; break;
    case IE_GT: op = ">"; break;
    case IE_GE: op = ">="; break;
    case IE_EQ: op = "=="; break;
    case IE_NE: op = "!="; break;
    case IE_AND: op = "&&"; break;
    case IE_OR: op = "||"; break;
    case IE_SELECT:
        sb_puts(o, "(");
        em_sub(e, x->args[0], o);
        sb_puts(o, " ? ");
        em_sub(e, x->args[1], o);
        sb_puts(o, " : ");
        em_sub(e, x->args[2], o);
        sb_puts(o, ")");
        return;
    default:
        die("cuda emitter: expression kind %d", (int)x->kind);
    }
    em_sub(e, x->args[0], o);
    sb_printf(o, " %s ", op);
    em_sub(e, x->args[1], o);
}

/* ------------------------------------------------------------------ statements */

void em_nodes(Em *e, const NodeList *l);
static void emit_node(Em *e, const Node *n);

/* A staged copy statement (Em.rphase): its register, pf_rs[base + the unrolled
 * loops' offsets], loaded in phase 1 and stored in phase 2. */
static void emit_staged(Em *e, const Node *n)
{
    const Buffer *b = n->u.stmt.buf;
    if (b == e->fwd_buf) e->fwd_buf = NULL;
    StrBuf ix = {0}, lv = {0}, v = {0};
    int64_t span = 1;
    sb_printf(&ix, "%" PRId64, e->rnext);
    for (int i = e->rdepth - 1; i >= 0; i--) {
        const Node *l = e->rloop[i];
        int64_t lo, ext;
        em_extent(e, l, &lo, &ext);
        sb_printf(&ix, " + (%s - %" PRId64 ") * %" PRId64, em_vn(e, l->u.loop.var), lo, span);
        span *= ext;
    }
    e->rnext += span;
    if (e->rpack) {
        /* two 16-bit elements to a 32-bit register, the even one in the low half
         * and written first (the index grows with the unrolled iterations) */
        if (e->rphase == 1) {
            em_expr(e, n->u.stmt.value, &v);
            em_line(e, "{ const idx_t pf_q = %s; const unsigned pf_h = (unsigned)%s(%s); pf_rs[pf_q >> 1] = (pf_q & 1) ? "
                    "(pf_rs[pf_q >> 1] | (pf_h << 16)) : pf_h; }",
                    ix.s, b->dtype == DT_F16 ? "pf_f2h" : "pf_f2b", v.s);
        } else {
            em_elem(e, b, n->u.stmt.idx, &lv);
            em_line(e, "{ const idx_t pf_q = %s; %s = (unsigned short)(pf_rs[pf_q >> 1] >> ((pf_q & 1) * 16)); }", ix.s,
                    lv.s);
        }
    } else if (e->rphase == 1) {
        em_expr(e, n->u.stmt.value, &v);
        if (b->dtype == DT_F16 || b->dtype == DT_BF16)
            em_line(e, "pf_rs[%s] = %s(%s);", ix.s, b->dtype == DT_F16 ? "pf_f2h" : "pf_f2b", v.s);
        else
            em_line(e, "pf_rs[%s] = %s;", ix.s, v.s);
    } else {
        em_elem(e, b, n->u.stmt.idx, &lv);
        em_line(e, "%s = pf_rs[%s];", lv.s, ix.s);
    }
    sb_free(&ix);
    sb_free(&lv);
    sb_free(&v);
}

int em_red_op(StmtOp op)
{
    static const int opn[] = {[SOP_ADD] = 0, [SOP_MUL] = 1, [SOP_MAX] = 2, [SOP_MIN] = 3};
    return opn[op];
}

const char *em_red_ident(StmtOp op)
{
    static const char *const ident[] = {[SOP_ADD] = "0.0f", [SOP_MUL] = "1.0f",
                                        [SOP_MAX] = "(-__int_as_float(0x7f800000))",
                                        [SOP_MIN] = "__int_as_float(0x7f800000)"};
    return ident[op];
}

static void emit_stmt(Em *e, const Node *n)
{
    const Buffer *b = n->u.stmt.buf;
    if (e->rphase) {
        emit_staged(e, n);
        return;
    }
    /* a block-wide or quad reduction folds into this thread's partial */
    char part[16] = "";
    if (n == e->red_stmt)
        snprintf(part, sizeof part, "pf_red");
    for (int i = 0; i < e->nlred; i++)
        if (n == e->lred[i])
            snprintf(part, sizeof part, "pf_lq%d", i);
    if (part[0]) {
        StrBuf v = {0};
        em_expr(e, n->u.stmt.value, &v);
        em_line(e, "%s = pf_rop<%d>(%s, %s);", part, em_red_op(n->u.stmt.op), part, v.s);
        sb_free(&v);
        return;
    }
    StrBuf lv = {0}, v = {0}, cur = {0};
    em_elem(e, b, n->u.stmt.idx, &lv);
    em_expr(e, n->u.stmt.value, &v);
    load_value(e, b, n->u.stmt.idx, &cur);
    bool fl = dtype_is_float(b->dtype);
    StrBuf val = {0};
    switch (n->u.stmt.op) {
    case SOP_ASSIGN: sb_puts(&val, v.s); break;
    case SOP_ADD: sb_printf(&val, "%s + (%s)", cur.s, v.s); break;
    case SOP_MUL: sb_printf(&val, "%s * (%s)", cur.s, v.s); break;
    case SOP_MAX:
        if (fl) sb_printf(&val, "%s(%s, %s)", math_name(IE_MAX, b->dtype), cur.s, v.s);
        else sb_printf(&val, "max(%s, %s)", cur.s, v.s);
        break;
    case SOP_MIN:
        if (fl) sb_printf(&val, "%s(%s, %s)", math_name(IE_MIN, b->dtype), cur.s, v.s);
        else sb_printf(&val, "min(%s, %s)", cur.s, v.s);
        break;
    }
    if (n->u.stmt.atomic) {
        /* a scatter's update from parallel threads (pass gpu-map): one atomic add */
        if (n->u.stmt.guarded) {
            StrBuf in = {0};
            em_in_range(e, b, n->u.stmt.idx, &in);
            em_line(e, "if (%s) atomicAdd(&%s, %s);", in.s, lv.s, v.s);
            sb_free(&in);
        } else {
            em_line(e, "atomicAdd(&%s, %s);", lv.s, v.s);
        }
        sb_free(&lv);
        sb_free(&v);
        sb_free(&cur);
        sb_free(&val);
        return;
    }
    /* a block-level store to memory others see is done by one thread; a guarded
     * store (a padded split's iterations past the end) only inside the buffer */
    bool one = e->sched && e->tdepth == 0 && b->mem != MEM_LOCAL;
    StrBuf in = {0};
    if (n->u.stmt.guarded)
        em_in_range(e, b, n->u.stmt.idx, &in);
    if (one)
        em_line(e, "if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0%s%s)", in.s ? " && " : "",
                in.s ? in.s : "");
    else if (in.s)
        em_line(e, "if (%s)", in.s);
    if (one || in.s) e->ind++;
    if (b == e->fwd_buf)
        e->fwd_buf = NULL;   /* this store replaces the forwarded element's value */
    const char *narrow = b->dtype == DT_F16 ? "pf_f2h" : b->dtype == DT_BF16 ? "pf_f2b" : NULL;
    if (narrow && b->mem == MEM_LOCAL && !one && !in.s && n->u.stmt.op == SOP_ASSIGN) {
        /* keep the value before rounding for the loads of this element that follow */
        e->fwd_n++;
        em_line(e, "const float pf_fw%d = %s;", e->fwd_n, val.s);
        em_line(e, "%s = %s(pf_fw%d);", lv.s, narrow, e->fwd_n);
        e->fwd_buf = b;
        e->fwd_ind = e->ind;
        sb_free(&e->fwd_lv);
        sb_puts(&e->fwd_lv, lv.s);
    } else if (narrow)
        em_line(e, "%s = %s(%s);", lv.s, narrow, val.s);
    else if (n->u.stmt.op == SOP_ADD)
        em_line(e, "%s += %s;", lv.s, v.s);
    else if (n->u.stmt.op == SOP_MUL)
        em_line(e, "%s *= %s;", lv.s, v.s);
    else
        em_line(e, "%s = %s;", lv.s, val.s);
    if (one || in.s) e->ind--;
    sb_free(&in);
    sb_free(&lv);
    sb_free(&v);
    sb_free(&cur);
    sb_free(&val);
}

/* The index list idx of a wide access (passes/gpu_vector.c wrote its last index as
 * `base + lane`) at lane 0: the same list with base last. */
static void first_lane(Expr *const *idx, int rank, Expr **out)
{
    for (int d = 0; d < rank && d < 8; d++) out[d] = idx[d];
    if (rank > 0 && rank <= 8 && idx[rank - 1]->kind == IE_ADD) out[rank - 1] = idx[rank - 1]->args[0];
}

static void collect_vloads(Em *e, const Expr *x)
{
    if (!x) return;
    if (x->kind == IE_LOAD) {
        if (x->u.load.wide && e->nvload < 32) {
            e->vload[e->nvload] = x;
            e->vid[e->nvload++] = e->nextv++;
        }
        return;
    }
    for (int i = 0; i < ir_expr_arity(x->kind); i++) collect_vloads(e, x->args[i]);
}

/* A vector loop in a GPU launch: its wide loads are read once, as float4 or
 * float2, into small arrays the unrolled lanes index with constants. */
static void emit_vector_loads(Em *e, const Node *n, int64_t w)
{
    const Var *lane = n->u.loop.var;
    e->nvload = 0;
    const NodeList *b = &n->u.loop.body;
    for (int i = 0; i < b->n; i++)
        if (b->v[i]->kind == N_STMT) collect_vloads(e, b->v[i]->u.stmt.value);
    for (int i = 0; i < e->nvload; i++) {
        const Expr *x = e->vload[i];
        const Buffer *bf = x->u.load.buf;
        Expr *idx[8];
        first_lane(x->u.load.idx, bf->rank, idx);
        StrBuf el = {0};
        em_elem(e, bf, idx, &el);
        const char *vt = w == 4 ? "float4" : "float2";
        int bits = (int)(w * 8 * dtype_bytes(bf->dtype));
        em_line(e, "float pf_v%d[%" PRId64 "];   /* %s, one %d-bit load */", e->vid[i], w, em_bn(e, bf), bits);
        if (bf->dtype != DT_F32) {
            /* 16-bit elements: the words as integers, each half converted to the f32 the
             * load is computed in */
            const char *ut = bits == 128 ? "uint4" : bits == 64 ? "uint2" : "unsigned";
            const char *cv = bf->dtype == DT_F16 ? "pf_h2f" : "pf_b2f";
            em_line(e, "{ const %s t = *reinterpret_cast<const %s *>(&%s); const %s *h = "
                    "reinterpret_cast<const %s *>(&t);", ut, ut, el.s, em_storage_type(bf->dtype, false), em_storage_type(bf->dtype, false));
            em_line(e, "  #pragma unroll");
            em_line(e, "  for (int q = 0; q < %" PRId64 "; ++q) pf_v%d[q] = %s(h[q]); }", w, e->vid[i], cv);
        } else if (w == 4)
            em_line(e, "{ const float4 t = *reinterpret_cast<const float4 *>(&%s); pf_v%d[0] = t.x; "
                    "pf_v%d[1] = t.y; pf_v%d[2] = t.z; pf_v%d[3] = t.w; }", el.s, e->vid[i], e->vid[i],
                    e->vid[i], e->vid[i]);
        else
            em_line(e, "{ const %s t = *reinterpret_cast<const %s *>(&%s); pf_v%d[0] = t.x; pf_v%d[1] = t.y; }",
                    vt, vt, el.s, e->vid[i], e->vid[i]);
        sb_free(&el);
    }
    e->vlane = lane;
}

static void emit_wide_copy_body(Em *e, const Node *n);

/* A vector loop marked wide (or cp.async inside a pipeline's copies): its one copy
 * statement as one 64- or 128-bit access.  A guarded store (the write-back of a
 * padded tile past the product's edge) is made or dropped whole: pass gpu-vector
 * made the vector all inside or all outside the row, so its first lane decides. */
static void emit_wide_copy(Em *e, const Node *n)
{
    const Node *s = n->u.loop.body.v[0];
    if (!s->u.stmt.guarded) {
        emit_wide_copy_body(e, n);
        return;
    }
    const Buffer *d = s->u.stmt.buf;
    Expr *di[8];
    first_lane(s->u.stmt.idx, d->rank, di);
    StrBuf in = {0};
    em_in_range(e, d, di, &in);
    em_line(e, "if (%s) {", in.s);
    sb_free(&in);
    e->ind++;
    emit_wide_copy_body(e, n);
    e->ind--;
    em_line(e, "}");
}

static void emit_wide_copy_body(Em *e, const Node *n)
{
    const Node *s = n->u.loop.body.v[0];
    const Buffer *d = s->u.stmt.buf;
    const Expr *v = s->u.stmt.value;
    if (v->kind == IE_CAST && v->dtype == DT_F32) v = v->args[0];
    const Buffer *sb = v->u.load.buf;
    int64_t lo, w;
    em_extent(e, n, &lo, &w);
    int64_t bytes = w * dtype_bytes(d->dtype);
    Expr *di[8], *si[8];
    first_lane(s->u.stmt.idx, d->rank, di);
    first_lane(v->u.load.idx, sb->rank, si);
    StrBuf dt = {0}, st = {0};
    /* in kernels whose staged buffers mma.sync reads (pf_sb declared), an
     * asynchronous copy names its destination as an offset into the shared window,
     * as ldmatrix does: a generic pointer converted per copy put several dependent
     * instructions before each one, on the path from a stage's barrier to its
     * products (bf16 4096^3 in 128 x 256 tiles as sm_80 code on an H100: 0.427 ->
     * 0.385 ms; in the hand-written loop of bench/gpu/proto/mkmm80.py 0.382 -> 0.333) */
    bool async = n->u.loop.hint == HINT_ASYNC && e->soff[d->id] >= 0;
    bool swz = async && e->swz && d->layout == LAYOUT_SWIZZLE128;
    bool saddr = swz || (async && e->frag && !e->wg && d->layout != LAYOUT_SWIZZLE128);
    if (swz) /* wgmma's operands, the implicit GEMM's gathers among them */
        em_swz_addr(e, d, di, &dt);
    else if (saddr)
        em_smem_addr(e, d, di, "0", &dt);
    else
        em_elem(e, d, di, &dt);
    em_elem(e, sb, si, &st);
    const char *vt = bytes == 16 ? "uint4" : "uint2";
    if (v->u.load.guarded) {
        /* a padded tile's edge (pass gpu-vector made the vector all inside or all
         * outside the row): zeros outside, from a copy of no bytes, or a zero
         * vector */
        StrBuf in = {0};
        em_in_range(e, sb, si, &in);
        if (n->u.loop.hint == HINT_ASYNC) {
            em_line(e, "/* %s: %" PRId64 " %s elements, one %d-bit asynchronous copy, zeros outside %s */",
                    em_vn(e, n->u.loop.var), w, dtype_name(d->dtype), (int)(bytes * 8), em_bn(e, sb));
            em_line(e, "{ const bool pf_ok = %s; pf_cp_async%dz%s(%s%s, pf_ok ? (const void *)&%s : (const void *)%s, pf_ok); }",
                    in.s, (int)bytes, saddr ? "a" : "", saddr ? "" : "&", dt.s, st.s, em_bn(e, sb));
        } else {
            em_line(e, "/* %s: %" PRId64 " %s elements copied as one %d-bit access, zeros outside %s */",
                    em_vn(e, n->u.loop.var), w, dtype_name(d->dtype), (int)(bytes * 8), em_bn(e, sb));
            em_line(e, "*reinterpret_cast<%s *>(&%s) = (%s) ? *reinterpret_cast<const %s *>(&%s) : %s{};", vt, dt.s,
                    in.s, vt, st.s, vt);
        }
        sb_free(&in);
        sb_free(&dt);
        sb_free(&st);
        return;
    }
    if (n->u.loop.hint == HINT_ASYNC) {
        /* global -> shared without registers, completed by the pipeline's group waits
         * (16 bytes bypass L1: .cg) */
        em_line(e, "/* %s: %" PRId64 " %s elements, one %d-bit asynchronous copy */", em_vn(e, n->u.loop.var), w,
                dtype_name(d->dtype), (int)(bytes * 8));
        em_line(e, "pf_cp_async%d%s(%s%s, &%s);", (int)bytes, saddr ? "a" : "", saddr ? "" : "&", dt.s, st.s);
    } else {
        em_line(e, "/* %s: %" PRId64 " %s elements copied as one %d-bit access */", em_vn(e, n->u.loop.var), w,
                dtype_name(d->dtype), (int)(bytes * 8));
        em_line(e, "*reinterpret_cast<%s *>(&%s) = *reinterpret_cast<const %s *>(&%s);", vt, dt.s, vt, st.s);
    }
    sb_free(&dt);
    sb_free(&st);
}

/* The statement of a block-wide reduction that passes/gpu_reduce.c marked below a
 * thread loop, or NULL. */
static const Node *red_stmt(const Node *n)
{
    if (n->kind == N_STMT) return n->u.stmt.block_reduce ? n : NULL;
    const NodeList *b = body_of(n);
    for (int i = 0; b && i < b->n; i++) {
        const Node *r = red_stmt(b->v[i]);
        if (r) return r;
    }
    return NULL;
}

/* A thread.x loop that pass gpu-scan made a block-wide scan: its one statement
 * pair under the chunk loop, printed here and arranged by emit_scan.c. */
static bool emit_block_scan(Em *e, const Node *n)
{
    const NodeList *b = &n->u.loop.body;
    if (b->n != 1 || b->v[0]->kind != N_LOOP) return false;
    const Node *jl = b->v[0];
    const NodeList *jb = &jl->u.loop.body;
    const Node *g = NULL;
    if (jb->n == 1 && jb->v[0]->kind == N_IF) {
        g = jb->v[0];
        jb = &g->u.guard.body;
    }
    int64_t jlo, K, tlo, T;
    if (jb->n != 2 || jb->v[0]->kind != N_STMT || jb->v[1]->kind != N_STMT || !jb->v[0]->u.stmt.block_scan ||
        !em_extent(e, jl, &jlo, &K) || jlo != 0 || !em_extent(e, n, &tlo, &T) || tlo != 0 || T != e->block[0] ||
        e->block[0] % 32 || e->block[1] != 1 || e->block[2] != 1)
        return false;
    const Node *upd = jb->v[0], *st = jb->v[1];
    StrBuf guard = {0}, value = {0}, acc = {0}, store = {0};
    if (g) em_expr(e, g->u.guard.cond, &guard);
    em_expr(e, upd->u.stmt.value, &value);
    em_elem(e, upd->u.stmt.buf, upd->u.stmt.idx, &acc);
    em_elem(e, st->u.stmt.buf, st->u.stmt.idx, &store);
    DType yt = st->u.stmt.buf->dtype;
    CgScanText s = {.tvar = em_vn(e, n->u.loop.var), .jvar = em_vn(e, jl->u.loop.var), .k = K,
                    .guard = g ? guard.s : NULL, .value = value.s, .ct = upd->u.stmt.buf->dtype,
                    .op = upd->u.stmt.op, .acc = acc.s, .store = store.s,
                    .conv = yt == DT_F16 ? "pf_f2h" : yt == DT_BF16 ? "pf_f2b" : NULL};
    if (!e->scan_helpers) {
        cg_cuda_scan_helpers(&e->helpers);
        e->scan_helpers = true;
    }
    cg_cuda_scan_text(&s, e->o, e->ind);
    sb_free(&guard);
    sb_free(&value);
    sb_free(&acc);
    sb_free(&store);
    return true;
}

/* A block-scan statement under n. */
static bool has_block_scan(const Node *n)
{
    if (n->kind == N_STMT) return n->u.stmt.block_scan;
    const NodeList *b = body_of(n);
    for (int i = 0; b && i < b->n; i++)
        if (has_block_scan(b->v[i])) return true;
    return false;
}

static void emit_loop(Em *e, const Node *n)
{
    LoopKind lk = n->u.loop.kind;
    const char *v = em_vn(e, n->u.loop.var);
    StrBuf lo = {0}, hi = {0};
    em_expr(e, n->u.loop.lo, &lo);
    em_expr(e, n->u.loop.hi, &hi);
    LoopHint h = n->u.loop.hint;
    if (n->u.loop.tc && e->sched) {
        em_tc_group(e, n);
    } else if (lk == LOOP_PIPELINE && n->u.loop.stages && e->sched && e->tdepth == 0) {
        em_pipeline(e, n);
    } else if (lk == LOOP_MMA || lk == LOOP_WGMMA) {
        /* passes/gpu_mma.c plans every triple of a scheduled launch; gpu_map.c
         * refuses the others */
        e->ok = false;
        diag_error(e->d, n->span, "internal error: %s loop %s reached the CUDA back end without its group "
                   "(pass gpu-mma)", loop_kind_name(lk), n->u.loop.var->name);
    } else if ((h == HINT_LANE_ROWS || h == HINT_LANE_COLS) && e->sched) {
        em_lane_pair(e, n);
    } else if (h == HINT_QUAD_ROWS && e->sched) {
        em_quad_rows(e, n);
    } else if ((h == HINT_WIDE || h == HINT_ASYNC) && e->sched) {
        if (e->rphase != 2) /* issued once, with the loads of a register-staged pipeline */
            emit_wide_copy(e, n);
    } else if (lk == LOOP_THREAD_X && e->tdepth == 0 && has_block_scan(n)) {
        if (!emit_block_scan(e, n)) {
            e->ok = false;
            diag_error(e->d, n->span, "loop %s holds a block-wide scan in a shape the CUDA back end does not "
                       "emit (pass gpu-scan makes: one chunk loop of the scan's update and store, a 1-D "
                       "block of whole warps)", n->u.loop.var->name);
        }
    } else if (is_thread(lk)) {
        /* passes/gpu_map.c checked: constant bounds, not nested on one dimension, no
         * block loop below the grid */
        int dim = gpu_dim(lk);
        int64_t l0, ext;
        em_extent(e, n, &l0, &ext);
        static const char xyz[] = "xyz";
        const Node *red = red_stmt(n);
        em_line(e, "{   /* %s: %s%s%s */", em_vn(e, n->u.loop.var), loop_kind_name(lk),
             red ? ", a block-wide reduction into " : "", red ? em_bn(e, red->u.stmt.buf) : "");
        e->ind++;
        if (strcmp(lo.s, "0") == 0)
            em_line(e, "const idx_t %s = (idx_t)threadIdx.%c;", v, xyz[dim]);
        else
            em_line(e, "const idx_t %s = %s + (idx_t)threadIdx.%c;", v, lo.s, xyz[dim]);
        bool guard = ext < e->block[dim];
        if (red) em_line(e, "float pf_red = %s;   /* this thread's partial */", em_red_ident(red->u.stmt.op));
        if (guard) em_line(e, "if (%s < %s) {", v, hi.s);
        if (guard) e->ind++;
        e->tdepth++;
        e->red_stmt = red;
        em_nodes(e, &n->u.loop.body);
        e->red_stmt = NULL;
        e->tdepth--;
        if (guard) e->ind--;
        if (guard) em_line(e, "}");
        if (red) {
            StrBuf lv = {0};
            em_elem(e, red->u.stmt.buf, red->u.stmt.idx, &lv);
            int op = em_red_op(red->u.stmt.op);
            em_line(e, "pf_red = pf_block_reduce<%d>(pf_red, %s);", op, em_red_ident(red->u.stmt.op));
            em_line(e, "if (threadIdx.x == 0) %s = pf_rop<%d>(%s, pf_red);", lv.s, op, lv.s);
            sb_free(&lv);
        }
        e->ind--;
        em_line(e, "}");
    } else {
        int64_t l0, vext = 0;
        bool vec = lk == LOOP_VECTOR && e->sched && e->nvload == 0 && em_extent(e, n, &l0, &vext) &&
                   l0 == 0 && (vext == 2 || vext == 4 || vext == 8);
        if (vec)
            emit_vector_loads(e, n, vext);
        if (lk == LOOP_UNROLL || vec)
            em_line(e, "#pragma unroll");
        em_line(e, "for (idx_t %s = %s; %s < %s; ++%s) {", v, lo.s, v, hi.s, v);
        e->ind++;
        bool staged = e->rphase && e->rdepth < 16;
        if (staged)
            e->rloop[e->rdepth++] = n;
        bool late = n->u.loop.admit_last && e->late; /* its mma group admits the next stage (emit_tc.c) */
        if (late)
            e->late_var = v, e->late_hi = hi.s;
        em_nodes(e, &n->u.loop.body);
        if (late)
            e->late_var = e->late_hi = NULL;
        if (staged)
            e->rdepth--;
        if (vec)
            e->nvload = 0;
        if (n->u.loop.barrier_each) { /* pass gpu-barrier */
            if (e->wg) em_line(e, "pf_proxy_fence();");
            em_line(e, "__syncthreads();");
        }
        e->ind--;
        em_line(e, "}");
    }
    sb_free(&lo);
    sb_free(&hi);
}

static void emit_node(Em *e, const Node *n)
{
    /* a value is forwarded only between statements that follow one another: a loop
     * or a guard may hold writes that do not go through emit_stmt (tensor-core
     * groups, staged copies) */
    if (n->kind != N_STMT)
        e->fwd_buf = NULL;
    switch (n->kind) {
    case N_STMT: emit_stmt(e, n); break;
    case N_LOOP: emit_loop(e, n); break;
    case N_IF: {
        StrBuf c = {0};
        em_expr(e, n->u.guard.cond, &c);
        em_line(e, "if (%s) {", c.s);
        e->ind++;
        em_nodes(e, &n->u.guard.body);
        e->ind--;
        em_line(e, "}");
        sb_free(&c);
        break;
    }
    /* a CPU cache hint (schedule `prefetch`): no GPU code */
    case N_PREFETCH: em_line(e, "/* prefetch %s: a CPU hint, no code here */", em_bn(e, n->u.pf.buf)); break;
    }
}

void em_nodes(Em *e, const NodeList *l)
{
    for (int i = 0; i < l->n; i++) {
        if (l->v[i]->barrier) { /* pass gpu-barrier */
            if (e->wg) em_line(e, "pf_proxy_fence();   /* shared stores reach wgmma's proxy */");
            em_line(e, "__syncthreads();");
        }
        emit_node(e, l->v[i]);
    }
}

/* ------------------------------------------------------------------ launches */

/* Thread-loop extents below n: the block shape is their maximum per dimension. */
static void thread_extents(Em *e, const Node *n, int64_t blk[3])
{
    if (n->kind == N_LOOP && is_thread(n->u.loop.kind)) {
        int64_t lo, ext;
        if (em_extent(e, n, &lo, &ext)) {
            int d = gpu_dim(n->u.loop.kind);
            if (ext > blk[d]) blk[d] = ext;
        }
    }
    const NodeList *body = body_of(n);
    for (int i = 0; body && i < body->n; i++)
        thread_extents(e, body->v[i], blk);
}

/* A copy under n that gpu-tma marked (its pipeline's barriers live in shared memory). */
static bool has_tma(const Node *n)
{
    if (n->kind == N_LOOP && n->u.loop.tma) return true;
    const NodeList *b = body_of(n);
    for (int i = 0; b && i < b->n; i++)
        if (has_tma(b->v[i])) return true;
    return false;
}

static void emit_params(Em *e, StrBuf *o)
{
    bool first = true;
    for (int i = 0; i < e->k->nbufs; i++) {
        const Buffer *b = e->k->bufs[i];
        if (b->mem != MEM_GLOBAL) continue;
        sb_printf(o, "%s%s%s *__restrict__ %s", first ? "" : ", ", b->kind == BUF_IN ? "const " : "",
                  em_storage_type(b->dtype, e->idx64), em_bn(e, b));
        first = false;
    }
    for (int i = 0; i < e->ntmaps; i++) /* by value, in the parameter space: what the copies read */
        sb_printf(o, "%sconst __grid_constant__ pf_tmap pf_tm%d", first ? "" : ", ", i), first = false;
}

static void shape_text(Em *e, const Buffer *b, StrBuf *o, bool brackets_from_1)
{
    for (int i = brackets_from_1 ? 1 : 0; i < b->rank; i++) {
        int64_t v = 0;
        em_cval(e, b->shape[i], &v);
        sb_printf(o, "[%" PRId64 "]", v);
    }
}

/* Declarations of the staged (shared, local) buffers a launch touches. */
static bool declare_staged(Em *e, const Node *top, CgLaunch *L)
{
    int nb = e->k->nbufs;
    uint8_t *r = xcalloc((size_t)nb * 2 + 1, 1), *w = r + nb;
    ir_node_access(top, r, w);
    int64_t off = 0;
    bool any_shared = false;
    for (int i = 0; i < nb; i++) {
        const Buffer *b = e->k->bufs[i];
        if (!(r[i] || w[i]) || b->mem == MEM_GLOBAL) continue;
        int64_t n = buf_elems(e, b);
        if (n < 0) {
            diag_error(e->d, b->span, "staged buffer %s needs a constant shape on a GPU", b->name);
            free(r);
            return false;
        }
        StrBuf shp = {0}, tail = {0};
        shape_text(e, b, &shp, false);
        if (!shp.s) sb_puts(&shp, "[1]");
        const char *st = em_storage_type(b->dtype, e->idx64);
        int64_t fr = 0, fc = 0;
        bool frag = e->frag && b->mem == MEM_LOCAL && em_is_frag(b);
        if (frag) {
            em_cval(e, b->shape[0], &fr);
            em_cval(e, b->shape[1], &fc);
        }
        if (frag && e->wg) {
            em_line(e, "/* %s: %s[%" PRId64 "][%" PRId64 "] per warpgroup, as wgmma accumulator fragments: "
                 "[row / 64][column / 8][4] per thread */", em_bn(e, b), dtype_name(b->dtype), fr, fc);
            em_line(e, "%s %s[%" PRId64 "][%" PRId64 "][4];", st, em_bn(e, b), fr / 64, fc / 8);
        } else if (frag) {
            em_line(e, "/* %s: %s[%" PRId64 "][%" PRId64 "] per warp, as mma.m16n8k16 accumulator fragments: "
                 "[row / 16][column / 8][4] per lane */", em_bn(e, b), dtype_name(b->dtype), fr, fc);
            em_line(e, "%s %s[%" PRId64 "][%" PRId64 "][4];", st, em_bn(e, b), fr / 16, fc / 8);
        } else if (e->frag && b->mem == MEM_LOCAL && b->layout == LAYOUT_MMA_ROWS) {
            em_cval(e, b->shape[0], &fr);
            em_line(e, "/* %s: %s[%" PRId64 "] per %s, one value per accumulator row: row r%s in register r / 8 "
                 "of the lanes with lane / 4 == r %% 8 */", em_bn(e, b), dtype_name(b->dtype), fr,
                 e->wg ? "warpgroup" : "warp", e->wg ? " of each 64 in warp (r % 64) / 16," : "");
            em_line(e, "%s %s[%" PRId64 "];", st, em_bn(e, b), fr / 8);
        } else if (b->mem == MEM_LOCAL) {
            em_line(e, "/* %s: %s%s, per-thread (registers when indexed by unrolled loops) */",
                 em_bn(e, b), dtype_name(b->dtype), shp.s);
            em_line(e, "%s %s%s;", st, em_bn(e, b), shp.s);
        } else {
            if (!any_shared && e->swz) {
                /* the swizzle is a function of address bits 7-9: buffers start 1024-aligned */
                em_line(e, "extern __shared__ __align__(1024) unsigned char pf_smem_raw[];");
                em_line(e, "unsigned char *pf_smem = pf_smem_raw + ((1024u - (pf_saddr(pf_smem_raw) & 1023u)) & 1023u);");
                em_line(e, "const unsigned pf_sb = pf_saddr(pf_smem);   /* cp.async's destinations: this plus offsets */");
            } else if (!any_shared) {
                em_line(e, "extern __shared__ __align__(16) unsigned char pf_smem[];");
                if (e->frag && !e->wg) /* ldmatrix addresses: this base plus byte offsets the compiler folds */
                    em_line(e, "const unsigned pf_sb = pf_saddr(pf_smem);");
            }
            any_shared = true;
            off = (off + 15) / 16 * 16;
            if (e->swz && b->layout == LAYOUT_SWIZZLE128) {
                off = (off + 1023) / 1024 * 1024;
                e->soff[i] = off;
                em_line(e, "/* %s: %s%s staged in shared memory, bytes %" PRId64 "..%" PRId64 ", in 64-element "
                     "panels with the 128-byte swizzle wgmma reads (swz_elem) */", em_bn(e, b), dtype_name(b->dtype),
                     shp.s, off, off + n * dtype_bytes(b->dtype));
                em_line(e, "unsigned char *%s = pf_smem + %" PRId64 ";", em_bn(e, b), off);
                off += n * dtype_bytes(b->dtype);
                sb_free(&shp);
                continue;
            }
            e->soff[i] = off;
            shape_text(e, b, &tail, true);
            em_line(e, "/* %s: %s%s staged in shared memory, bytes %" PRId64 "..%" PRId64 " */",
                 em_bn(e, b), dtype_name(b->dtype), shp.s, off, off + n * dtype_bytes(b->dtype));
            if (b->rank <= 1)
                em_line(e, "%s *%s = reinterpret_cast<%s *>(pf_smem + %" PRId64 ");", st, em_bn(e, b), st, off);
            else
                em_line(e, "%s (*%s)%s = reinterpret_cast<%s (*)%s>(pf_smem + %" PRId64 ");", st, em_bn(e, b),
                     tail.s, st, tail.s, off);
            off += n * dtype_bytes(b->dtype);
        }
        sb_free(&shp);
        sb_free(&tail);
    }
    free(r);
    if (e->swz) off += 1024;   /* room to align the start */
    if (has_tma(top)) off += 64;  /* the pipeline's static mbarriers (emit_tma.c), at most 8 stages */
    L->shared_bytes = (int)off;
    if (off > e->arch->max_smem_block) {
        diag_error(e->d, top->span, "launch %s needs %" PRId64 " bytes of shared memory; %s allows "
                   "at most %d per block", L->name, off, e->arch->name, e->arch->max_smem_block);
        return false;
    }
    return true;
}

static void open_function(Em *e, CgLaunch *L, int64_t nthreads)
{
    StrBuf ps = {0};
    emit_params(e, &ps);
    sb_puts(e->o, "extern \"C\" __global__ void ");
    cg_cuda_bounds(e->o, nthreads, 0, L->name);
    sb_printf(e->o, "%s)\n{\n", ps.s ? ps.s : "");
    sb_free(&ps);
    e->ind = 1;
    /* The size parameters are constants of each function rather than globals: a
     * local name may be any plain word, a global one would clash with every function
     * the CUDA headers declare (a parameter named sinf or y0). */
    const Kernel *k = e->k;
    for (int i = 0; i < k->nparams; i++)
        em_line(e, "constexpr idx_t %s = %" PRId64 ";", e->pname[i], k->params[i].value);
}

static bool check_block(Em *e, const Node *top, CgLaunch *L)
{
    int64_t t = (int64_t)L->block[0] * L->block[1] * L->block[2];
    if (t > e->arch->max_threads_block || L->block[0] > 1024 || L->block[1] > 1024 || L->block[2] > 64) {
        diag_error(e->d, top->span, "launch %s has %d x %d x %d = %" PRId64 " threads per block; %s "
                   "allows at most %d (and 1024 x 1024 x 64 per dimension)", L->name, L->block[0],
                   L->block[1], L->block[2], t, e->arch->name, e->arch->max_threads_block);
        return false;
    }
    if (L->grid[1] > 65535 || L->grid[2] > 65535 || L->grid[0] > INT32_MAX) {
        diag_error(e->d, top->span, "launch %s has a grid of %" PRId64 " x %" PRId64 " x %" PRId64
                   " blocks; CUDA allows 2^31-1 x 65535 x 65535", L->name, L->grid[0], L->grid[1], L->grid[2]);
        return false;
    }
    return true;
}

static bool emit_scheduled_fn(Em *e, const Node *top, CgLaunch *L);

/* The layouts passes/gpu_mma.c gave the buffers this launch touches. */
static void launch_layouts(Em *e, const Node *top)
{
    int nb = e->k->nbufs;
    uint8_t *r = xcalloc((size_t)nb * 2 + 1, 1), *w = r + nb;
    ir_node_access(top, r, w);
    e->frag = e->swz = e->wg = false;
    for (int i = 0; i < nb; i++) {
        if (!r[i] && !w[i]) continue;
        BufLayout l = e->k->bufs[i]->layout;
        e->frag |= l == LAYOUT_MMA_ACC || l == LAYOUT_WGMMA_ACC;
        e->wg |= l == LAYOUT_WGMMA_ACC;
        e->swz |= l == LAYOUT_SWIZZLE128;
    }
    e->dvar[0] = e->dvar[1] = NULL;
    free(r);
}

/* A node with GPU loop kinds: its outermost nest of block loops is the grid.  The
 * function is written aside first, so that the helpers it turned out to need
 * (wgmma's, one per shape) can precede it. */
static bool emit_scheduled(Em *e, const Node *top, CgLaunch *L)
{
    StrBuf fn = {0}, *out = e->o;
    e->o = &fn;
    bool ok = emit_scheduled_fn(e, top, L);
    e->o = out;
    if (e->helpers.s) {
        sb_puts(out, e->helpers.s);
        sb_puts(out, "\n");
        sb_free(&e->helpers);
        memset(&e->helpers, 0, sizeof e->helpers);
    }
    if (fn.s) sb_puts(out, fn.s);
    sb_free(&fn);
    return ok;
}

static bool emit_scheduled_fn(Em *e, const Node *top, CgLaunch *L)
{
    const Node *blk[3] = {0};
    const Node *n = top;
    e->sched = true;
    e->top = top;
    for (int i = 0; i < 3; i++) { L->grid[i] = 1; e->block[i] = 1; }
    while (n->kind == N_LOOP && is_block(n->u.loop.kind)) {
        /* the grid: one loop per dimension, constant bounds (passes/gpu_map.c) */
        int dim = gpu_dim(n->u.loop.kind);
        int64_t lo, ext;
        em_extent(e, n, &lo, &ext);
        blk[dim] = n;
        L->grid[dim] = ext;
        if (n->u.loop.body.n != 1 || n->u.loop.body.v[0]->kind != N_LOOP ||
            !is_block(n->u.loop.body.v[0]->u.loop.kind))
            break;
        n = n->u.loop.body.v[0];
    }
    const NodeList *body = n->kind == N_LOOP && is_block(n->u.loop.kind) ? &n->u.loop.body : NULL;
    thread_extents(e, top, e->block);
    /* a block-wide reduction shuffles within whole warps: round the block up (the
     * thread loops shorter than the block are guarded, the extra threads add the
     * identity) */
    if (e->block[0] % 32 && e->block[1] == 1 && e->block[2] == 1 && red_stmt(top))
        e->block[0] = (e->block[0] + 31) / 32 * 32;
    for (int i = 0; i < 3; i++) L->block[i] = (int)e->block[i];
    if (!check_block(e, top, L))
        return false;
    for (int i = 0; i < 3; i++)
        if (L->grid[i] == 0) return true; /* nothing to do */
    launch_layouts(e, top);
    open_function(e, L, e->block[0] * e->block[1] * e->block[2]);
    if (!declare_staged(e, top, L))
        return false;
    if (e->frag && e->wg) {
        em_line(e, "const int pf_lane = (int)threadIdx.x & 31;   /* block.x is one warpgroup: wgmma triples run on it */");
        em_line(e, "const int pf_wrow = ((int)threadIdx.x >> 5) * 16;   /* this warp's 16 rows of every 64 */");
    } else if (e->frag) {
        em_line(e, "const int pf_lane = (int)threadIdx.x;   /* block.x is one warp: mma triples run on its lanes */");
    }
    for (int i = 0; i < 3; i++) {
        if (!blk[i]) continue;
        StrBuf lo = {0};
        em_expr(e, blk[i]->u.loop.lo, &lo);
        em_line(e, "const idx_t %s = %s%s(idx_t)blockIdx.%c;   /* %s */", em_vn(e, blk[i]->u.loop.var),
             strcmp(lo.s, "0") ? lo.s : "", strcmp(lo.s, "0") ? " + " : "", "xyz"[i],
             loop_kind_name(blk[i]->u.loop.kind));
        sb_free(&lo);
    }
    if (body) {
        em_nodes(e, body);
    } else {
        emit_node(e, top);
    }
    sb_puts(e->o, "}\n\n");
    return e->ok;
}

/* An unscheduled node: its grid loops (passes/gpu_map.c) flattened onto a 1-D grid. */
static bool emit_default(Em *e, const Node *top, CgLaunch *L)
{
    const Node *chain[16];
    const Var *F[16];
    int64_t lo[16], ext[16];
    int nf = 0;
    const Node *n = top;
    e->sched = false;
    e->top = top;
    e->frag = e->swz = e->wg = false;
    while (n->kind == N_LOOP && n->u.loop.kind == LOOP_GRID && nf < 16) {
        if (!em_extent(e, n, &lo[nf], &ext[nf]))
            break;
        F[nf] = n->u.loop.var;
        chain[nf++] = n;
        if (n->u.loop.body.n != 1 || n->u.loop.body.v[0]->kind != N_LOOP)
            break;
        n = n->u.loop.body.v[0];
    }
    int64_t total = 1;
    for (int i = 0; i < nf; i++) total *= ext[i];
    int blk = total >= DEFAULT_BLOCK ? DEFAULT_BLOCK : (int)((total + 31) / 32 * 32);
    if (blk == 0) blk = 32;
    L->block[0] = blk;
    L->block[1] = L->block[2] = 1;
    L->grid[0] = (total + blk - 1) / blk;
    L->grid[1] = L->grid[2] = 1;
    if (total == 0) { L->grid[0] = 0; return true; }
    if (!check_block(e, top, L))
        return false;
    open_function(e, L, blk);
    if (!declare_staged(e, top, L))
        return false;
    if (nf == 0) {
        em_line(e, "/* no loop here is provably parallel: one thread runs it all */");
        em_line(e, "if (blockIdx.x != 0 || threadIdx.x != 0) return;");
        emit_node(e, top);
    } else {
        StrBuf names = {0};
        for (int i = 0; i < nf; i++) sb_printf(&names, "%s%s", i ? ", " : "", em_vn(e, F[i]));
        em_line(e, "/* %s: one thread per iteration (%" PRId64 " in all), the innermost fastest */", names.s, total);
        sb_free(&names);
        em_line(e, "const long long pf_t = (long long)blockIdx.x * blockDim.x + threadIdx.x;");
        em_line(e, "if (pf_t >= %" PRId64 "LL) return;", total);
        int64_t stride = 1;
        for (int i = nf - 1; i >= 0; i--) {
            StrBuf l = {0};
            em_expr(e, chain[i]->u.loop.lo, &l);
            if (strcmp(l.s, "0") == 0) {
                /* a zero start reads better left out */
                sb_free(&l);
                sb_puts(&l, "");
            } else {
                sb_puts(&l, " + ");
            }
            const char *v = em_vn(e, F[i]);
            if (i == 0 && stride == 1)
                em_line(e, "const idx_t %s = %s(idx_t)pf_t;", v, l.s);
            else if (i == 0)
                em_line(e, "const idx_t %s = %s(idx_t)(pf_t / %" PRId64 ");", v, l.s, stride);
            else if (stride == 1)
                em_line(e, "const idx_t %s = %s(idx_t)(pf_t %% %" PRId64 ");", v, l.s, ext[i]);
            else
                em_line(e, "const idx_t %s = %s(idx_t)(pf_t / %" PRId64 " %% %" PRId64 ");", v, l.s, stride, ext[i]);
            stride *= ext[i];
            sb_free(&l);
        }
        em_nodes(e, &chain[nf - 1]->u.loop.body);
    }
    sb_puts(e->o, "}\n\n");
    return e->ok;
}

static const char prelude[] =
    "/* f16 and bf16 live in memory as their 16-bit patterns and are computed in f32. */\n"
    "typedef unsigned short pf_half;\n"
    "typedef unsigned short pf_bf16;\n"
    "static __device__ __forceinline__ float pf_h2f(pf_half h) { float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h)); return f; }\n"
    "static __device__ __forceinline__ pf_half pf_f2h(float f) { pf_half h; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f)); return h; }\n"
    "static __device__ __forceinline__ float pf_b2f(pf_bf16 b) { return __uint_as_float((unsigned)b << 16); }\n"
    "static __device__ __forceinline__ pf_bf16 pf_f2b(float f) { pf_bf16 b; asm(\"cvt.rn.bf16.f32 %0, %1;\" : \"=h\"(b) : \"f\"(f)); return b; }\n"
    "/* The IR's integer division and modulo round toward minus infinity. */\n"
    "static __device__ __forceinline__ idx_t pf_fdiv(idx_t a, idx_t b) { idx_t q = a / b; return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q; }\n"
    "static __device__ __forceinline__ idx_t pf_fmod(idx_t a, idx_t b) { idx_t r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }\n"
    "static __device__ __forceinline__ float pf_fmodf(float a, float b) { return a - b * floorf(a / b); }\n"
    "static __device__ __forceinline__ double pf_fmodd(double a, double b) { return a - b * floor(a / b); }\n"
    "static __device__ __forceinline__ bool pf_in(idx_t i, idx_t n) { return i >= 0 && i < n; }\n"
    "static __device__ __forceinline__ idx_t pf_clamp(idx_t i, idx_t n) { return i < 0 ? 0 : i >= n ? n - 1 : i; }\n"
    "static __device__ __forceinline__ float pf_pickf(bool c, float v, float d) { return c ? v : d; }\n"
    "static __device__ __forceinline__ double pf_pickd(bool c, double v, double d) { return c ? v : d; }\n"
    "/* exp where the results are 16-bit (Kernel.fast_exp): one ex2.approx, results below 2^-126 flushed to 0 */\n"
    "static __device__ __forceinline__ float pf_fexp(float x) { float y; asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x * 1.4426950408889634f)); return y; }\n"
    "static __device__ __forceinline__ float pf_fexpd(float a, float b) { float y; asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(y) : \"f\"(fmaf(a, 1.4426950408889634f, -b * 1.4426950408889634f))); return y; }\n"
    "static __device__ __forceinline__ float pf_fexpds(float a, float b, float c) { const float k = c * 1.4426950408889634f; float y; asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(y) : \"f\"(fmaf(a, k, -b * k))); return y; }\n";
/* then em_tc_prelude (emit_tc.c: tensor cores, cp.async), then: */

static const char prelude_reduce[] =
    "/* Block-wide reductions (a thread.x loop whose statement reduces into one element): each thread's partial\n"
    " * through a warp shuffle tree, the warps' results through shared memory, every thread gets the total.\n"
    " * OP: 0 sum, 1 product, 2 max, 3 min.  The block is 1-D with a multiple of 32 threads. */\n"
    "template <int OP> static __device__ __forceinline__ float pf_rop(float a, float b) { return OP == 0 ? a + b : OP == 1 ? a * b : OP == 2 ? fmaxf(a, b) : fminf(a, b); }\n"
    "template <int OP> static __device__ __forceinline__ float pf_block_reduce(float v, float id) {\n"
    "    __shared__ float pf_red_sm[32];\n"
    "    for (int o = 16; o > 0; o >>= 1) v = pf_rop<OP>(v, __shfl_xor_sync(0xffffffffu, v, o));\n"
    "    const int w = (int)threadIdx.x >> 5, l = (int)threadIdx.x & 31, nw = ((int)blockDim.x + 31) >> 5;\n"
    "    __syncthreads();   /* every reader of the previous reduction's partials is done */\n"
    "    if (l == 0) pf_red_sm[w] = v;\n"
    "    __syncthreads();\n"
    "    v = l < nw ? pf_red_sm[l] : id;\n"
    "    for (int o = 16; o > 0; o >>= 1) v = pf_rop<OP>(v, __shfl_xor_sync(0xffffffffu, v, o));\n"
    "    return v;\n"
    "}\n"
    "/* Quad reductions: the four lanes holding one row of an mma accumulator (lane / 4 alike) combine. */\n"
    "template <int OP> static __device__ __forceinline__ float pf_quad(float v) {\n"
    "    v = pf_rop<OP>(v, __shfl_xor_sync(0xffffffffu, v, 1));\n"
    "    return pf_rop<OP>(v, __shfl_xor_sync(0xffffffffu, v, 2));\n"
    "}\n\n";

static bool generate(const Kernel *k, const char *arch, CgCudaModule *m, Diags *d)
{
    memset(m, 0, sizeof *m);
    const Target *a = cg_cuda_arch(arch);
    if (!a) {
        diag_plain(d, DIAG_ERROR, "unknown CUDA target '%s' (supported: %s)", arch ? arch : "", cg_cuda_targets());
        return false;
    }
    for (int i = 0; i < k->nparams; i++)
        if (!k->params[i].bound) {
            diag_plain(d, DIAG_ERROR, "size parameter %s of kernel %s has no value: CUDA code is generated "
                       "for one shape (give it with -D %s=VALUE)", k->params[i].name, k->name, k->params[i].name);
            return false;
        }
    snprintf(m->arch, sizeof m->arch, "%s", arch);
    Em e = {.k = k, .arch = a, .d = d, .o = &m->src, .ok = true, .names = arena_new()};
    make_names(&e);
    e.soff = xcalloc((size_t)k->nbufs + 1, sizeof *e.soff);
    /* 32-bit index arithmetic when every buffer and size fits: much cheaper on a GPU */
    for (int i = 0; i < k->nbufs; i++)
        if (buf_elems(&e, k->bufs[i]) > INT32_MAX) e.idx64 = true;
    for (int i = 0; i < k->nparams; i++)
        if (k->params[i].value > INT32_MAX / 2) e.idx64 = true;

    StrBuf *o = &m->src;
    sb_printf(o, "/* perfc %s: CUDA C for kernel ", PERFC_VERSION);
    cg_cuda_comment_text(k->name, o);
    for (int i = 0; i < k->nparams; i++)
        sb_printf(o, "%s%s=%" PRId64, i ? ", " : " (", e.pname[i], k->params[i].value);
    sb_printf(o, "%s, target %s.\n * Arguments of every launch:", k->nparams ? ")" : "", a->name);
    m->arg_bufs = xcalloc((size_t)k->nbufs + 1, sizeof *m->arg_bufs);
    for (int i = 0; i < k->nbufs; i++)
        if (k->bufs[i]->mem == MEM_GLOBAL) {
            m->arg_bufs[m->nargs++] = i;
            sb_printf(o, " %s", e.bname[i]);
        }
    em_collect_tmaps(k, m);
    e.tmaps = m->tmaps;
    e.ntmaps = m->ntmaps;
    for (int i = 0; i < m->ntmaps; i++)
        sb_printf(o, " tensor-map(%s)", e.bname[m->tmaps[i].buf]);
    sb_puts(o, ". */\n");
    sb_printf(o, "typedef %s idx_t;\n", e.idx64 ? "long long" : "int");
    sb_puts(o, prelude);
    sb_puts(o, em_tc_prelude);
    if (m->ntmaps) sb_puts(o, em_tma_prelude);
    sb_puts(o, prelude_reduce);
    sb_putc(o, '\n');

    m->launches = xcalloc((size_t)k->body.n + 1, sizeof *m->launches);
    bool ok = true;
    for (int i = 0; i < k->body.n && ok; i++) {
        const Node *top = k->body.v[i];
        CgLaunch *L = &m->launches[m->nlaunches];
        launch_name(k, i, L->name, sizeof L->name);
        L->regs = L->stack_bytes = L->spill_stores = L->spill_loads = -1;
        for (int j = 0; j < k->nbufs; j++) e.soff[j] = -1;
        e.tdepth = 0;
        ok = gpu_scheduled(top) ? emit_scheduled(&e, top, L) : emit_default(&e, top, L);
        if (ok && L->grid[0] > 0 && L->grid[1] > 0 && L->grid[2] > 0)
            m->nlaunches++;
    }
    /* The last line of defence against text injection: the source is printable
     * ASCII and newlines only (every user name went through names.c). */
    for (size_t i = 0; ok && i < o->len; i++) {
        unsigned char c = (unsigned char)o->s[i];
        if (c != '\n' && (c < 0x20 || c > 0x7e)) {
            diag_plain(d, DIAG_ERROR, "internal error: the generated CUDA holds the byte 0x%02x", c);
            ok = false;
        }
    }
    if (ok) {
        sb_puts(o, "/* Launches, in order (grid; block; dynamic shared bytes):\n");
        for (int i = 0; i < m->nlaunches; i++) {
            CgLaunch *L = &m->launches[i];
            sb_printf(o, " *   %s  (%" PRId64 ", %" PRId64 ", %" PRId64 ")  (%d, %d, %d)  %d\n", L->name,
                      L->grid[0], L->grid[1], L->grid[2], L->block[0], L->block[1], L->block[2],
                      L->shared_bytes);
        }
        sb_puts(o, " */\n");
    }
    free(e.soff);
    sb_free(&e.helpers);
    sb_free(&e.fwd_lv);
    arena_free(e.names);
    if (!ok) cg_cuda_module_free(m);
    return ok;
}

/* The kernel as the GPU target passes left it (passes/pipeline.c), which every
 * caller runs (pipeline_run with a GPU target, or pipeline_target): a kernel
 * without them is a caller's bug. */
bool cg_cuda_generate(const Kernel *k, const char *arch, CgCudaModule *m, Diags *d)
{
    if (!k->gpu_lowered && cg_cuda_arch(arch)) {
        memset(m, 0, sizeof *m);
        diag_plain(d, DIAG_ERROR, "internal error: kernel %s reached the CUDA back end without the GPU target "
                   "passes (run the pipeline with target %s first)", k->name, arch);
        return false;
    }
    return generate(k, arch, m, d);
}

void cg_cuda_module_free(CgCudaModule *m)
{
    sb_free(&m->src);
    sb_free(&m->log);
    free(m->launches);
    free(m->arg_bufs);
    free(m->tmaps);
    free(m->ptx);
    free(m->cubin);
    memset(m, 0, sizeof *m);
}

void cg_cuda_resources(const CgCudaModule *m, StrBuf *out)
{
    for (int i = 0; i < m->nlaunches; i++) {
        const CgLaunch *L = &m->launches[i];
        sb_printf(out, "%s: grid %" PRId64 "x%" PRId64 "x%" PRId64 ", block %dx%dx%d, %d registers, %d bytes shared, "
                  "%d bytes stack, %d/%d bytes spilled (stores/loads)\n", L->name, L->grid[0], L->grid[1],
                  L->grid[2], L->block[0], L->block[1], L->block[2], L->regs, L->shared_bytes, L->stack_bytes,
                  L->spill_stores, L->spill_loads);
        if (L->min_blocks > 0)
            sb_printf(out, "  (__launch_bounds__ asks for %d blocks per SM, as shared memory admits)\n",
                      L->min_blocks);
    }
}

bool cg_cuda_emit(const Kernel *k, const char *arch, CgCudaKind kind, StrBuf *out, Diags *d)
{
    CgCudaModule m;
    if (!cg_cuda_generate(k, arch, &m, d))
        return false;
    bool ok = true;
    if (kind == CG_CUDA_SRC) {
        sb_puts(out, m.src.s);
    } else if ((ok = cg_cuda_compile(&m, arch, d))) {
        if (kind == CG_CUDA_PTX) {
            sb_puts(out, m.ptx);
        } else {
            /* binary: grow the buffer and copy raw bytes, NULs included */
            for (size_t i = 0; i < m.cubin_len; i++)
                sb_putc(out, ((const char *)m.cubin)[i]);
        }
    }
    cg_cuda_module_free(&m);
    return ok;
}
