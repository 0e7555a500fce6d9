/* IR -> CUDA C.  Each top-level node of Kernel.body becomes one __global__ function,
 * launched in order: top-level statements are separated by grid-wide dependences
 * (a reduction must finish before its result is read), and a kernel launch boundary
 * is the one grid-wide barrier CUDA offers without cooperative launches.
 *
 * The kernel arrives lowered by the GPU target passes (passes/gpu_*.c, run by
 * passes/pipeline.c; on a copy here when a caller skipped them), which decided in
 * the IR what this file prints: block-reduce statements, per-thread copies of local
 * buffers (Buffer.thread_copies), grid loops, dead fills removed.
 *
 * Two mappings:
 *   - scheduled nodes (some loop bound to BLOCK_* / THREAD_*): block loops become
 *     blockIdx, thread loops threadIdx (guarded when shorter than the block),
 *     MEM_SHARED buffers carve one dynamic __shared__ area, MEM_LOCAL buffers are
 *     per-thread arrays (one thread's copy; registers when indexed by unrolled loops), and
 *     __syncthreads() goes between block-level steps that hand shared memory over;
 *     mma loop triples run on one warp's tensor cores (mma.sync.m16n8k16, operands
 *     by ldmatrix from shared memory, the accumulator held per warp in fragment
 *     layout; the contract with the schedule is at "mma" below and in docs/cuda.md);
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

#include "../../passes/gpu_int.h"
#include "../../passes/xform.h"
#include "cg_cuda.h"
#include "emit_scan.h"

#define DEFAULT_BLOCK 256

typedef struct Em {
    const Kernel *k;
    const CgArch *arch;
    Diags *d;
    StrBuf *o;
    int ind;
    bool ok;
    bool idx64;
    char **bname, **vname, **pname;
    /* the launch being emitted */
    bool sched;
    int tdepth;                 /* enclosing thread loops */
    bool tdim_used[3];          /* thread dims bound by enclosing loops */
    int64_t block[3], grid[3];
    int64_t *soff;              /* per buffer: offset in dynamic shared memory, -1 */
    int64_t smem;
    /* Loads of the vector loop being emitted that were read as one 128-bit (or
     * 64-bit) access before it: emit_expr prints pf_v<N>[lane] for them. */
    const Expr *vload[32];
    int vid[32];
    int nvload, nextv;
    const Var *vlane;
    /* Tensor cores (see "mma" below).  frag[b]: buffer b is the f32 accumulator of
     * an mma triple, held per warp in the m16n8k16 fragment layout (fext: its rows
     * and columns per warp).  dvar/dname: the accumulator's row (0) and column (1)
     * loops now being spread over the lanes, and how a fragment index names them. */
    uint8_t *frag;
    bool any_frag;
    /* wgmma (see "wgmma" below): the launch's accumulators are warpgroup fragments
     * (64-row tiles over four warps) rather than mma's per-warp ones; swz[b]: shared
     * buffer b is a wgmma operand, laid out in the 128-byte swizzle wgmma reads;
     * wgdone: the wgmma helper functions already written (dtype, N / 8, transposes). */
    bool wg;
    uint8_t *swz;
    bool any_swz;
    uint8_t wgdone[2][33][4];
    bool wgpre;
    StrBuf helpers;     /* helper functions the launch being emitted needs first */
    int wg_inflight;    /* wgmma groups left in flight at the end of a group (pipeline inflight=) */
    int64_t (*fext)[2];
    const Var *dvar[2];
    char dname[2][192];
    bool fragmode;
    int nmma;
    /* Software pipelines (see "pipeline" below): the variable of the pipelined loop
     * being emitted (its `v % S` stage indices print as unsigned remainders: v never
     * goes below 0 there), and whether the copies being emitted are its
     * asynchronous ones (cp.async instead of load and store). */
    const Var *pvar;
    bool pcopy;
    int npipe;
    /* The top node of the launch being emitted: irange() finds the loops of
     * variables there (a collapsed loop's `v / 4` prints as a shift when v >= 0). */
    const Node *top;
    /* The statement of a block-wide reduction being emitted (block-reduce, marked by
     * passes/gpu_reduce.c):
     * emit_stmt folds its value into the thread's partial pf_red instead. */
    const Node *red_stmt;
    bool scan_helpers;  /* the block-scan helpers (emit_scan.c) are written */
} Em;

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

static char *user_name(Kernel *k, NameSet *t, char kind, const char *name)
{
    char had = cg_cuda_plain(name) ? names_find(t, name) : 0;
    char *r;
    if (cg_cuda_plain(name) && (!had || had == kind)) {
        r = arena_strdup(k->arena, name);
    } else {
        StrBuf b = {0};
        cg_cuda_mangle(kind, name, &b);
        r = arena_strdup(k->arena, b.s);
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
    Kernel *k = (Kernel *)e->k;
    NameSet t = {0};
    char ln[64];
    for (int i = 0; i < k->body.n; i++) {
        launch_name(k, i, ln, sizeof ln);
        names_add(&t, arena_strdup(k->arena, ln), 'K');
    }
    e->pname = arena_alloc(k->arena, sizeof(char *) * (size_t)(k->nparams + 1));
    e->bname = arena_alloc(k->arena, sizeof(char *) * (size_t)(k->nbufs + 1));
    e->vname = arena_alloc(k->arena, sizeof(char *) * (size_t)(k->nvars + 1));
    for (int i = 0; i < k->nparams; i++)
        e->pname[i] = user_name(k, &t, 'P', k->params[i].name);
    for (int i = 0; i < k->nbufs; i++)
        e->bname[i] = user_name(k, &t, 'B', k->bufs[i]->name);
    for (int i = 0; i < k->nvars; i++)
        e->vname[i] = user_name(k, &t, 'V', k->vars[i]->name);
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

static const char *bn(const Em *e, const Buffer *b) { return e->bname[buf_index(e, b)]; }

static const char *vn(const Em *e, const Var *v)
{
    if (v->id >= 0 && v->id < e->k->nvars && e->k->vars[v->id] == v)
        return e->vname[v->id];
    for (int i = 0; i < e->k->nvars; i++)
        if (e->k->vars[i] == v)
            return e->vname[i];
    /* a variable the kernel does not list (never made by perfc): mangled all the same */
    StrBuf b = {0};
    cg_cuda_mangle('V', v->name, &b);
    const char *r = arena_strdup(e->k->arena, b.s);
    sb_free(&b);
    return r;
}

/* ------------------------------------------------------------------ analyses
 * Constants with the bound sizes, loop extents and index ranges over a launch:
 * passes/gpu_util.c, shared with the GPU target passes that decided the mapping. */

static bool cval(const Em *e, const Expr *x, int64_t *out) { return gpu_cval(e->k, x, out); }
static bool loop_extent(const Em *e, const Node *l, int64_t *lo, int64_t *ext) { return gpu_loop_extent(e->k, l, lo, ext); }
static bool irange(const Em *e, const Node *top, const Expr *x, int64_t *lo, int64_t *hi) { return gpu_irange(e->k, top, x, lo, hi); }
static bool xvar_used(const Expr *x, const Var *v) { return x && ir_expr_uses_var(x, v); }
static void aff_of(const Em *e, const Expr *x, int64_t mul, GAff *a) { gpu_aff_of(e->k, x, mul, a); }
#define is_block gpu_is_block
#define is_thread gpu_is_thread

static int64_t buf_elems(const Em *e, const Buffer *b)
{
    int64_t n = 1, v;
    for (int i = 0; i < b->rank; i++) {
        if (!cval(e, b->shape[i], &v))
            return -1;
        n *= v;
    }
    return n;
}

static void expr_access(const Em *e, const Expr *x, uint8_t *rd)
{
    if (!x) return;
    if (x->kind == IE_LOAD) {
        rd[buf_index(e, x->u.load.buf)] = 1;
        for (int i = 0; i < x->u.load.buf->rank; i++)
            expr_access(e, x->u.load.idx[i], rd);
        return;
    }
    for (int i = 0; i < ir_expr_arity(x->kind); i++)
        expr_access(e, x->args[i], rd);
}

/* Buffers read and written in a subtree (bytes set to 1). */
static void node_access(const Em *e, const Node *n, uint8_t *rd, uint8_t *wr)
{
    switch (n->kind) {
    case N_STMT:
        wr[buf_index(e, n->u.stmt.buf)] = 1;
        if (n->u.stmt.op != SOP_ASSIGN)
            rd[buf_index(e, n->u.stmt.buf)] = 1;
        for (int i = 0; i < n->u.stmt.buf->rank; i++)
            expr_access(e, n->u.stmt.idx[i], rd);
        expr_access(e, n->u.stmt.value, rd);
        return;
    case N_LOOP:
        expr_access(e, n->u.loop.lo, rd);
        expr_access(e, n->u.loop.hi, rd);
        break;
    case N_IF:
        expr_access(e, n->u.guard.cond, rd);
        break;
    case N_PREFETCH: return;
    }
    const NodeList *body = ir_body((Node *)n);
    for (int i = 0; i < body->n; i++)
        node_access(e, body->v[i], rd, wr);
}

/* ------------------------------------------------------------------ expressions */

static void indent(Em *e)
{
    for (int i = 0; i < e->ind; i++)
        sb_puts(e->o, "    ");
}

static void line(Em *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(Em *e, const char *fmt, ...)
{
    va_list ap;
    indent(e);
    va_start(ap, fmt);
    sb_vprintf(e->o, fmt, ap);
    va_end(ap);
    sb_putc(e->o, '\n');
}

static const char *storage_type(DType t, bool idx64)
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

static void emit_expr(Em *e, const Expr *x, StrBuf *o);
static void emit_sub(Em *e, const Expr *x, StrBuf *o);

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

/* An element of an mma accumulator outside the triple.  In the m16n8k16 fragment
 * layout element (r, c) of a warp's tile lives in lane (r % 8) * 4 + (c % 8) / 2, in
 * register ((r / 8) % 2) * 2 + c % 2 of the 16 x 8 tile (r / 16, c / 8).  The
 * enclosing row and column loops are spread over the lanes (emit_dist_pair) so that
 * the lane always owns the element; the index is written with the loops' lane-free
 * parts (fragmode), constants once unrolled, so the array stays in registers. */
static void frag_elem(Em *e, const Buffer *b, Expr *const *idx, StrBuf *o)
{
    if (!e->dvar[0] || !e->dvar[1]) {
        if (e->ok)
            diag_error(e->d, b->span, "the mma accumulator %s is accessed outside a pair of loops over "
                       "its rows and columns (each from 0, extent a multiple of 8, index base a multiple "
                       "of 8, one directly holding the other) that the back end can spread over the "
                       "lanes of a warp", b->name);
        e->ok = false;
        return;
    }
    StrBuf r = {0}, c = {0};
    e->fragmode = true;
    emit_sub(e, idx[0], &r);
    emit_sub(e, idx[1], &c);
    e->fragmode = false;
    sb_printf(o, "[%s >> %d][%s >> 3][((%s >> 3) & 1) * 2 + (%s & 1)]", r.s, e->wg ? 6 : 4, c.s, r.s, c.s);
    sb_free(&r);
    sb_free(&c);
}

/* The byte offset of element idx of a wgmma operand buffer before swizzling: its
 * last dimension is cut into panels of 64 elements (128 bytes), each panel a
 * column of rows 128 bytes apart, panels one after the other, leading dimensions
 * (a pipeline's stage) outermost.  This is the canonical layout wgmma's
 * descriptors describe (docs/cuda.md "wgmma"). */
static void swz_lin(Em *e, const Buffer *b, Expr *const *idx, StrBuf *o)
{
    int64_t R = 0, C = 0;
    cval(e, b->shape[b->rank - 2], &R);
    cval(e, b->shape[b->rank - 1], &C);
    StrBuf lead = {0};
    sb_putc(&lead, '0');
    for (int i = 0; i + 2 < b->rank; i++) {
        StrBuf nx = {0};
        int64_t ext = 0;
        cval(e, b->shape[i], &ext);
        sb_printf(&nx, "(%s) * %" PRId64 " + ", lead.s, ext);
        emit_sub(e, idx[i], &nx);
        sb_free(&lead);
        lead = nx;
    }
    StrBuf r = {0}, c = {0};
    emit_sub(e, idx[b->rank - 2], &r);
    emit_sub(e, idx[b->rank - 1], &c);
    sb_printf(o, "(((((%s) * %" PRId64 " + (%s >> 6)) * %" PRId64 " + %s) << 6) + (%s & 63)) * %d", lead.s, C / 64,
              c.s, R, r.s, c.s, dtype_bytes(b->dtype));
    sb_free(&lead);
    sb_free(&r);
    sb_free(&c);
}

/* An element of a wgmma operand buffer: the 16-byte chunks of each 128-byte row
 * are permuted by the row's index modulo 8 (bits 4-6 of the offset xor bits 7-9),
 * the swizzle wgmma applies to the same addresses, so that the eight rows a
 * core matrix spans fall in distinct banks.  The buffer starts 1024-aligned. */
static void swz_elem(Em *e, const Buffer *b, Expr *const *idx, StrBuf *o)
{
    StrBuf lin = {0};
    swz_lin(e, b, idx, &lin);
    sb_printf(o, "(*reinterpret_cast<%s *>(%s + pf_swz(%s)))", storage_type(b->dtype, e->idx64), bn(e, b), lin.s);
    sb_free(&lin);
}

/* The element b[idx] as an lvalue (no conversion).  Global buffers are flat: the
 * row-major linear index is written in Horner form with the symbolic sizes, e.g.
 * A[i * K + k]; staged buffers are C arrays, As[ty][kk]. */
static void emit_elem_paren(Em *e, const Buffer *b, Expr *const *idx, StrBuf *o)
{
    if (e->swz && e->swz[buf_index(e, b)]) {
        swz_elem(e, b, idx, o);
        return;
    }
    sb_puts(o, bn(e, b));
    if (e->frag && e->frag[buf_index(e, b)]) {
        frag_elem(e, b, idx, o);
        return;
    }
    if (b->mem != MEM_GLOBAL) {
        if (b->rank == 0)
            sb_puts(o, "[0]");
        for (int i = 0; i < b->rank; i++) {
            sb_putc(o, '[');
            emit_expr(e, idx[i], o);
            sb_putc(o, ']');
        }
        return;
    }
    StrBuf cur = {0};
    if (b->rank == 0)
        sb_putc(&cur, '0');
    else
        emit_sub(e, idx[0], &cur);
    for (int i = 1; i < b->rank; i++) {
        StrBuf nx = {0};
        if (i > 1) sb_printf(&nx, "(%s)", cur.s);
        else sb_puts(&nx, cur.s);
        sb_puts(&nx, " * ");
        emit_sub(e, b->shape[i], &nx);
        sb_puts(&nx, " + ");
        emit_sub(e, idx[i], &nx);
        sb_free(&cur);
        cur = nx;
    }
    sb_printf(o, "[%s]", cur.s);
    sb_free(&cur);
}

static void load_value(Em *e, const Buffer *b, Expr *const *idx, StrBuf *o)
{
    const char *cv = b->dtype == DT_F16 ? "pf_h2f(" : b->dtype == DT_BF16 ? "pf_b2f(" : NULL;
    if (cv) sb_puts(o, cv);
    emit_elem_paren(e, b, idx, o);
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

static void emit_sub(Em *e, const Expr *x, StrBuf *o)
{
    bool par = !is_atom(x) && (x->kind >= IE_ADD && x->kind <= IE_OR);
    if (par) sb_putc(o, '(');
    emit_expr(e, x, o);
    if (par) sb_putc(o, ')');
}

static void emit_expr(Em *e, const Expr *x, StrBuf *o)
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
        sb_puts(o, vn(e, x->u.var));
        return;
    case IE_LOAD: {
        const Buffer *b = x->u.load.buf;
        for (int i = 0; i < e->nvload; i++)
            if (e->vload[i] == x) {
                sb_printf(o, "pf_v%d[%s]", e->vid[i], vn(e, e->vlane));
                return;
            }
        if (x->u.load.guarded) {
            /* out-of-range reads yield the buffer's pad value without touching memory */
            sb_puts(o, "(");
            for (int i = 0; i < b->rank; i++) {
                sb_puts(o, i ? " && pf_in(" : "pf_in(");
                emit_expr(e, x->u.load.idx[i], o);
                sb_puts(o, ", ");
                emit_expr(e, b->shape[i], o);
                sb_putc(o, ')');
            }
            if (b->rank == 0) sb_puts(o, "true");
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
            emit_sub(e, x->args[0], o);
            sb_puts(o, "))");
        } else if (to == DT_BOOL) {
            sb_puts(o, "(");
            emit_sub(e, x->args[0], o);
            sb_puts(o, " != 0)");
        } else if ((from == DT_F16 || from == DT_BF16) && to == DT_F32) {
            emit_expr(e, x->args[0], o);
        } else {
            sb_printf(o, "(%s)", compute_type(to));
            emit_sub(e, x->args[0], o);
        }
        return;
    }
    case IE_NEG: sb_puts(o, "-"); emit_sub(e, x->args[0], o); return;
    case IE_NOT: sb_puts(o, "!"); emit_sub(e, x->args[0], o); return;
    case IE_EXP: case IE_LOG: case IE_SQRT: case IE_RSQRT: case IE_TANH: case IE_ERF:
    case IE_LOG1P: case IE_EXPM1: case IE_FLOOR: case IE_CEIL: case IE_ROUND: case IE_POW:
        sb_printf(o, "%s(", math_name(x->kind, x->dtype));
        emit_expr(e, x->args[0], o);
        if (x->kind == IE_POW) { sb_puts(o, ", "); emit_expr(e, x->args[1], o); }
        sb_putc(o, ')');
        return;
    case IE_ABS:
        if (!fl) {
            sb_puts(o, "(");
            emit_sub(e, x->args[0], o);
            sb_puts(o, " < 0 ? -");
            emit_sub(e, x->args[0], o);
            sb_puts(o, " : ");
            emit_sub(e, x->args[0], o);
            sb_puts(o, ")");
            return;
        }
        sb_printf(o, "%s(", math_name(x->kind, x->dtype));
        emit_expr(e, x->args[0], o);
        sb_putc(o, ')');
        return;
    case IE_MAX: case IE_MIN:
        if (fl) {
            sb_printf(o, "%s(", math_name(x->kind, x->dtype));
            emit_expr(e, x->args[0], o);
            sb_puts(o, ", ");
            emit_expr(e, x->args[1], o);
            sb_putc(o, ')');
        } else {
            sb_puts(o, "(");
            emit_sub(e, x->args[0], o);
            sb_puts(o, x->kind == IE_MAX ? " > " : " < ");
            emit_sub(e, x->args[1], o);
            sb_puts(o, " ? ");
            emit_sub(e, x->args[0], o);
            sb_puts(o, " : ");
            emit_sub(e, x->args[1], o);
            sb_puts(o, ")");
        }
        return;
    case IE_DIV: case IE_MOD:
        if (!fl && x->kind == IE_MOD && e->pvar && x->args[0]->kind == IE_VAR &&
            x->args[0]->u.var == e->pvar && x->args[1]->kind == IE_INT && x->args[1]->u.i > 0) {
            /* a stage index: the pipelined loop's variable starts at 0 or above */
            sb_printf(o, "(idx_t)((unsigned)%s %% %" PRId64 "u)", vn(e, e->pvar), x->args[1]->u.i);
            return;
        }
        int64_t dv, nlo, nhi;
        if (!fl && e->top && cval(e, x->args[1], &dv) && dv > 0 && !cval(e, x->args[0], &nlo) &&
            irange(e, e->top, x->args[0], &nlo, &nhi) && nlo >= 0) {
            /* a numerator that never goes below 0 (a collapsed loop's index): floor and
             * truncation agree, and a power of two is a shift or a mask */
            int sh = 0;
            while (sh < 62 && ((int64_t)1 << sh) < dv) sh++;
            sb_puts(o, "(");
            emit_sub(e, x->args[0], o);
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
            emit_expr(e, x->args[0], o);
            sb_puts(o, ", ");
            emit_expr(e, x->args[1], o);
            sb_putc(o, ')');
            return;
        }
        if (x->kind == IE_MOD) {
            sb_puts(o, x->dtype == DT_F64 ? "pf_fmodd(" : "pf_fmodf(");
            emit_expr(e, x->args[0], o);
            sb_puts(o, ", ");
            emit_expr(e, x->args[1], o);
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
        emit_sub(e, x->args[0], o);
        sb_puts(o, " ? ");
        emit_sub(e, x->args[1], o);
        sb_puts(o, " : ");
        emit_sub(e, x->args[2], o);
        sb_puts(o, ")");
        return;
    default:
        die("cuda emitter: expression kind %d", (int)x->kind);
    }
    emit_sub(e, x->args[0], o);
    sb_printf(o, " %s ", op);
    emit_sub(e, x->args[1], o);
}

/* ------------------------------------------------------------------ statements */

static void emit_nodes(Em *e, const NodeList *l);

static void emit_stmt(Em *e, const Node *n)
{
    const Buffer *b = n->u.stmt.buf;
    if (n == e->red_stmt) {
        static const int opn[] = {[SOP_ADD] = 0, [SOP_MUL] = 1, [SOP_MAX] = 2, [SOP_MIN] = 3};
        StrBuf v = {0};
        emit_expr(e, n->u.stmt.value, &v);
        line(e, "pf_red = pf_rop<%d>(pf_red, %s);", opn[n->u.stmt.op], v.s);
        sb_free(&v);
        return;
    }
    StrBuf lv = {0}, v = {0}, cur = {0};
    emit_elem_paren(e, b, n->u.stmt.idx, &lv);
    emit_expr(e, n->u.stmt.value, &v);
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
        line(e, "atomicAdd(&%s, %s);", lv.s, v.s);
        sb_free(&lv);
        sb_free(&v);
        sb_free(&cur);
        sb_free(&val);
        return;
    }
    /* a block-level store to memory others see is done by one thread */
    bool one = e->sched && e->tdepth == 0 && b->mem != MEM_LOCAL;
    if (one)
        line(e, "if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0)");
    if (one) e->ind++;
    if (b->dtype == DT_F16 || b->dtype == DT_BF16)
        line(e, "%s = %s(%s);", lv.s, b->dtype == DT_F16 ? "pf_f2h" : "pf_f2b", val.s);
    else if (n->u.stmt.op == SOP_ADD)
        line(e, "%s += %s;", lv.s, v.s);
    else if (n->u.stmt.op == SOP_MUL)
        line(e, "%s *= %s;", lv.s, v.s);
    else
        line(e, "%s = %s;", lv.s, val.s);
    if (one) e->ind--;
    sb_free(&lv);
    sb_free(&v);
    sb_free(&cur);
    sb_free(&val);
}

/* Does step b touch memory the block's threads share (shared, or global: another
 * thread of the block may have a different mapping of the same elements) that the
 * steps since the last barrier (their reads ra, writes wa) wrote, or write what
 * they read?  __syncthreads orders global memory within the block as well. */
static bool shared_conflict(Em *e, const uint8_t *ra, const uint8_t *wa, const Node *b)
{
    int nb = e->k->nbufs;
    uint8_t *rb = xcalloc((size_t)nb * 2 + 1, 1), *wb = rb + nb;
    node_access(e, b, rb, wb);
    bool c = false;
    for (int i = 0; i < nb && !c; i++)
        if (e->k->bufs[i]->mem != MEM_LOCAL)
            c = (wa[i] && (rb[i] || wb[i])) || (ra[i] && wb[i]);
    free(rb);
    return c;
}

static bool reads_and_writes_shared(Em *e, const Node *n)
{
    int nb = e->k->nbufs;
    uint8_t *r = xcalloc((size_t)nb * 2 + 1, 1), *w = r + nb;
    node_access(e, n, r, w);
    bool c = false;
    for (int i = 0; i < nb && !c; i++)
        c = e->k->bufs[i]->mem == MEM_SHARED && r[i] && w[i];
    free(r);
    return c;
}

/* True when x is a multiple of m for every value of its variables. */
static bool mult_of(const Em *e, const Expr *x, int64_t m)
{
    int64_t c;
    if (cval(e, x, &c)) return c % m == 0;
    switch (x->kind) {
    case IE_ADD: case IE_SUB: return mult_of(e, x->args[0], m) && mult_of(e, x->args[1], m);
    case IE_MUL: return mult_of(e, x->args[0], m) || mult_of(e, x->args[1], m);
    case IE_NEG: return mult_of(e, x->args[0], m);
    case IE_CAST: return !dtype_is_float(x->dtype) && mult_of(e, x->args[0], m);
    default: return false;
    }
}

/* The coefficient of lane in x when x is lane * c plus terms that do not mention
 * lane (those may be anything: `(f % 4) * 8` from a collapsed loop); false when lane
 * appears otherwise. */
static bool lane_coef(const Em *e, const Expr *x, const Var *lane, int64_t *c)
{
    int64_t a, b;
    if (!xvar_used(x, lane)) { *c = 0; return true; }
    switch (x->kind) {
    case IE_VAR: *c = 1; return true;
    case IE_ADD: case IE_SUB:
        if (!lane_coef(e, x->args[0], lane, &a) || !lane_coef(e, x->args[1], lane, &b)) return false;
        *c = x->kind == IE_ADD ? a + b : a - b;
        return true;
    case IE_NEG:
        if (!lane_coef(e, x->args[0], lane, &a)) return false;
        *c = -a;
        return true;
    case IE_MUL:
        if (cval(e, x->args[0], &b) && lane_coef(e, x->args[1], lane, &a)) { *c = a * b; return true; }
        if (cval(e, x->args[1], &b) && lane_coef(e, x->args[0], lane, &a)) { *c = a * b; return true; }
        return false;
    case IE_CAST:
        return !dtype_is_float(x->dtype) && lane_coef(e, x->args[0], lane, c);
    default: return false;
    }
}

/* A load of a vector loop that can be one aligned vector access: an unguarded f32
 * load from shared or global memory whose last index moves by 1 with the lane and
 * whose other indices do not move, starting at a multiple of the width in a row
 * whose length is a multiple of the width (so the address is width*4-aligned). */
static bool contig_ok(Em *e, const Buffer *b, Expr *const *idx, bool guarded, const Var *lane, int64_t w)
{
    if (b->mem == MEM_LOCAL || guarded || b->rank == 0)
        return false;
    for (int d = 0; d + 1 < b->rank; d++)
        if (xvar_used(idx[d], lane)) return false;
    const Expr *last = idx[b->rank - 1];
    int64_t cl = 0;
    if (!lane_coef(e, last, lane, &cl) || cl != 1) return false;
    int64_t rowlen;
    if (!cval(e, b->shape[b->rank - 1], &rowlen) || rowlen % w) return false;
    Kernel *k = (Kernel *)e->k;
    Expr *base = ir_simplify(k, ir_subst(k, (Expr *)last, lane, ir_int(k, 0)));
    return mult_of(e, base, w);
}

static bool vector_load(Em *e, const Expr *x, const Var *lane, int64_t w)
{
    return x->u.load.buf->dtype == DT_F32 && contig_ok(e, x->u.load.buf, x->u.load.idx, x->u.load.guarded, lane, w);
}

static void collect_vloads(Em *e, const Expr *x, const Var *lane, int64_t w)
{
    if (!x) return;
    if (x->kind == IE_LOAD) {
        if (e->nvload < 32 && vector_load(e, x, lane, w)) {
            e->vload[e->nvload] = x;
            e->vid[e->nvload++] = e->nextv++;
        }
        return;
    }
    for (int i = 0; i < ir_expr_arity(x->kind); i++) collect_vloads(e, x->args[i], lane, w);
}

/* A vector loop in a GPU launch: its vectorisable loads are read once, as float4 or
 * float2, into small arrays the unrolled lanes index with constants. */
static void emit_vector_loads(Em *e, const Node *n, int64_t w)
{
    const Var *lane = n->u.loop.var;
    e->nvload = 0;
    const NodeList *b = &n->u.loop.body;
    for (int i = 0; i < b->n; i++)
        if (b->v[i]->kind == N_STMT) collect_vloads(e, b->v[i]->u.stmt.value, lane, w);
    Kernel *k = (Kernel *)e->k;
    for (int i = 0; i < e->nvload; i++) {
        const Expr *x = e->vload[i];
        const Buffer *bf = x->u.load.buf;
        Expr *idx[8];
        for (int d = 0; d < bf->rank && d < 8; d++)
            idx[d] = ir_simplify(k, ir_subst(k, x->u.load.idx[d], lane, ir_int(k, 0)));
        StrBuf el = {0};
        emit_elem_paren(e, bf, idx, &el);
        const char *vt = w == 4 ? "float4" : "float2";
        line(e, "float pf_v%d[%" PRId64 "];   /* %s, one %d-bit load */", e->vid[i], w, bn(e, bf),
             (int)(w * 32));
        if (w == 4)
            line(e, "{ const float4 t = *reinterpret_cast<const float4 *>(&%s); pf_v%d[0] = t.x; "
                 "pf_v%d[1] = t.y; pf_v%d[2] = t.z; pf_v%d[3] = t.w; }", el.s, e->vid[i], e->vid[i],
                 e->vid[i], e->vid[i]);
        else
            line(e, "{ const %s t = *reinterpret_cast<const %s *>(&%s); pf_v%d[0] = t.x; pf_v%d[1] = t.y; }",
                 vt, vt, el.s, e->vid[i], e->vid[i]);
        sb_free(&el);
    }
    e->vlane = lane;
}

/* A vector loop whose one statement copies a 16-bit or 32-bit element unchanged
 * (D[.., b + v] = S[.., b' + v], possibly through the f32 a load is computed in,
 * which rounds back exactly): when both sides are contiguous in the lane and
 * aligned, the whole loop is one 64- or 128-bit load and store (staging copies of
 * f16 tiles, eight elements per access). */
static bool vector_copy(Em *e, const Node *n, int64_t w)
{
    const NodeList *b = &n->u.loop.body;
    if (b->n != 1 || b->v[0]->kind != N_STMT) return false;
    const Node *s = b->v[0];
    const Buffer *d = s->u.stmt.buf;
    const Expr *v = s->u.stmt.value;
    if (v->kind == IE_CAST && v->dtype == DT_F32) v = v->args[0];
    if (s->u.stmt.op != SOP_ASSIGN || v->kind != IE_LOAD || d->mem == MEM_LOCAL || d->rank == 0) return false;
    const Buffer *sb = v->u.load.buf;
    int64_t bytes = w * dtype_bytes(d->dtype);
    if (sb->dtype != d->dtype || (bytes != 8 && bytes != 16) || !dtype_is_float(d->dtype) ||
        d->dtype == DT_F64 || !contig_ok(e, sb, v->u.load.idx, v->u.load.guarded, n->u.loop.var, w) ||
        !contig_ok(e, d, s->u.stmt.idx, false, n->u.loop.var, w))
        return false;
    Kernel *k = (Kernel *)e->k;
    Expr *di[8], *si[8];
    for (int q = 0; q < d->rank && q < 8; q++)
        di[q] = ir_simplify(k, ir_subst(k, s->u.stmt.idx[q], n->u.loop.var, ir_int(k, 0)));
    for (int q = 0; q < sb->rank && q < 8; q++)
        si[q] = ir_simplify(k, ir_subst(k, v->u.load.idx[q], n->u.loop.var, ir_int(k, 0)));
    StrBuf dt = {0}, st = {0};
    emit_elem_paren(e, d, di, &dt);
    emit_elem_paren(e, sb, si, &st);
    const char *vt = bytes == 16 ? "uint4" : "uint2";
    if (e->pcopy && sb->mem == MEM_GLOBAL && d->mem == MEM_SHARED) {
        /* a pipeline's copy: global -> shared without registers, completed by the
         * cp.async group waits of the loop (16 bytes bypass L1: .cg) */
        line(e, "/* %s: %" PRId64 " %s elements, one %d-bit asynchronous copy */", vn(e, n->u.loop.var), w,
             dtype_name(d->dtype), (int)(bytes * 8));
        line(e, "pf_cp_async%d(&%s, &%s);", (int)bytes, dt.s, st.s);
    } else {
        line(e, "/* %s: %" PRId64 " %s elements copied as one %d-bit access */", vn(e, n->u.loop.var), w,
             dtype_name(d->dtype), (int)(bytes * 8));
        line(e, "*reinterpret_cast<%s *>(&%s) = *reinterpret_cast<const %s *>(&%s);", vt, dt.s, vt, st.s);
    }
    sb_free(&dt);
    sb_free(&st);
    return true;
}

/* ------------------------------------------------------------------ mma
 * Contract with passes/xform_gpu.c (docs/cuda.md "Tensor cores"): a loop triple
 * marked mma is run by one warp as mma.sync.m16n8k16.  Its launch has thread.x
 * extent 32, so threadIdx.x is the lane and (threadIdx.y, threadIdx.z) names the
 * warp; the triple and every access of its accumulator sit outside thread.x loops
 * (and the triple outside guards), so the 32 lanes reach it together.  The
 * accumulator, privatised per warp like any local buffer, is held in the fragment
 * layout; its other accesses (zeroing, copy-out) must sit in a row loop and a column
 * loop, one directly holding the other, which the back end spreads over the lanes.
 * A and B must be 2-D shared buffers with rows of a multiple of 8 elements (16
 * bytes) so ldmatrix can read them: .trans when k is not the contiguous index. */

static bool frag_access(const Em *e, const Expr *x)
{
    if (!x) return false;
    if (x->kind == IE_LOAD) {
        if (e->frag[buf_index(e, x->u.load.buf)]) return true;
        for (int i = 0; i < x->u.load.buf->rank; i++)
            if (frag_access(e, x->u.load.idx[i])) return true;
        return false;
    }
    for (int i = 0; i < ir_expr_arity(x->kind); i++)
        if (frag_access(e, x->args[i])) return true;
    return false;
}

static bool stmt_frag(const Em *e, const Node *s)
{
    return e->frag[buf_index(e, s->u.stmt.buf)] || frag_access(e, s->u.stmt.value);
}

/* Marks the accumulators and checks the contract's placement rules. */
static bool is_tc(LoopKind k) { return k == LOOP_MMA || k == LOOP_WGMMA; }

static void frag_walk(Em *e, const Node *n, bool under_tx, bool under_if)
{
    if (n->kind == N_LOOP && is_tc(n->u.loop.kind)) {
        bool w = n->u.loop.kind == LOOP_WGMMA;
        const char *kn = w ? "wgmma" : "mma";
        const Node *s = n;
        for (int q = 0; q < 3 && s->kind == N_LOOP && s->u.loop.body.n == 1; q++)
            s = s->u.loop.body.v[0];
        if (s->kind != N_STMT) {
            diag_error(e->d, n->span, "%s loop %s does not hold a loop triple with one statement", kn,
                       n->u.loop.var->name);
            e->ok = false;
            return;
        }
        if (under_tx || under_if) {
            if (w)
                diag_error(e->d, n->span, "wgmma loop %s is inside a %s: the 128 threads of a warpgroup "
                           "must reach wgmma together (threadIdx.x is the thread of the warpgroup; bind "
                           "the warpgroups to thread.y/z)", n->u.loop.var->name,
                           under_tx ? "thread.x loop" : "guard");
            else
                diag_error(e->d, n->span, "mma loop %s is inside a %s: the 32 lanes of a warp must reach "
                           "mma.sync together (threadIdx.x is the lane; bind the warps to thread.y/z)",
                           n->u.loop.var->name, under_tx ? "thread.x loop" : "guard");
            e->ok = false;
        }
        if (e->any_frag && e->wg != w) {
            diag_error(e->d, n->span, "%s loop %s shares a launch with %s triples; one launch holds one "
                       "kind of tensor-core accumulator", kn, n->u.loop.var->name, w ? "mma" : "wgmma");
            e->ok = false;
        }
        e->wg = w;
        e->frag[buf_index(e, s->u.stmt.buf)] = 1;
        e->any_frag = true;
        if (w && s->u.stmt.value->kind == IE_MUL)
            for (int a = 0; a < 2; a++) {
                const Expr *x = s->u.stmt.value->args[a];
                if (x->kind == IE_CAST) x = x->args[0];
                if (x->kind == IE_LOAD && x->u.load.buf->mem == MEM_SHARED) {
                    e->swz[buf_index(e, x->u.load.buf)] = 1;
                    e->any_swz = true;
                }
            }
        return;
    }
    if (n->kind == N_LOOP && n->u.loop.kind == LOOP_THREAD_X) under_tx = true;
    if (n->kind == N_IF) under_if = true;
    NodeList *body = ir_body((Node *)n);
    for (int i = 0; body && i < body->n; i++) frag_walk(e, body->v[i], under_tx, under_if);
}

static bool frag_under_tx(const Em *e, const Node *n, bool under_tx)
{
    if (n->kind == N_LOOP && is_tc(n->u.loop.kind)) return false;
    if (n->kind == N_LOOP && n->u.loop.kind == LOOP_THREAD_X) under_tx = true;
    if (n->kind == N_STMT) return under_tx && stmt_frag(e, n);
    NodeList *body = ir_body((Node *)n);
    for (int i = 0; body && i < body->n; i++)
        if (frag_under_tx(e, body->v[i], under_tx)) return true;
    return false;
}

/* frag_setup for a launch with wgmma triples: the block's x dimension is one
 * warpgroup, the target has wgmma, the accumulators are whole 64-row tiles, and the
 * operand buffers can take the swizzled layout. */
static bool wg_setup(Em *e, const Node *top, const CgLaunch *L)
{
    if (strcmp(e->arch->name, "sm_90a") != 0) {
        diag_error(e->d, top->span, "launch %s runs wgmma triples, which only sm_90a has (Hopper's "
                   "architecture-specific instructions): compile with -target sm_90a, or use mma", L->name);
        return false;
    }
    for (int b = 0; b < e->k->nbufs; b++) {
        const Buffer *buf = e->k->bufs[b];
        if (e->frag[b]) {
            for (int d = 0; d < 2; d++)
                cval(e, buf->shape[d], &e->fext[b][d]);
            if (e->fext[b][0] % 64 || e->fext[b][1] % 8) {
                diag_error(e->d, buf->span, "the wgmma accumulator %s is %" PRId64 " x %" PRId64 " per "
                           "warpgroup; wgmma tiles need a multiple of 64 x 8", buf->name, e->fext[b][0],
                           e->fext[b][1]);
                return false;
            }
        }
        if (e->swz[b]) {
            int64_t R = 0, C = 0;
            bool ok = buf->rank >= 2 && dtype_bytes(buf->dtype) == 2 && cval(e, buf->shape[buf->rank - 2], &R) &&
                      cval(e, buf->shape[buf->rank - 1], &C) && R % 8 == 0 && C % 64 == 0 && buf_elems(e, buf) > 0;
            if (!ok) {
                diag_error(e->d, buf->span, "wgmma operand %s must be a shared buffer of 16-bit elements "
                           "whose rows hold a multiple of 64 elements (128 bytes), in a multiple of 8 rows, "
                           "with no padding: wgmma reads it in the 128-byte swizzled layout", buf->name);
                return false;
            }
        }
    }
    if (e->block[0] != 128) {
        diag_error(e->d, top->span, "launch %s runs wgmma triples, so threadIdx.x must be the thread of a "
                   "warpgroup: its thread.x loops must have extent 128 (the block is %d wide); bind the "
                   "warpgroups to thread.y and thread.z", L->name, L->block[0]);
        return false;
    }
    if (frag_under_tx(e, top, false)) {
        diag_error(e->d, top->span, "launch %s accesses a wgmma accumulator inside a thread.x loop; the "
                   "warpgroup holds it in fragment layout, so bind only thread.y/z around its accesses",
                   L->name);
        return false;
    }
    return true;
}

static bool frag_setup(Em *e, const Node *top, const CgLaunch *L)
{
    memset(e->frag, 0, (size_t)e->k->nbufs + 1);
    memset(e->swz, 0, (size_t)e->k->nbufs + 1);
    e->any_frag = e->any_swz = e->wg = false;
    e->dvar[0] = e->dvar[1] = NULL;
    frag_walk(e, top, false, false);
    if (!e->ok) return false;
    if (!e->any_frag) return true;
    if (e->wg) return wg_setup(e, top, L);
    if (e->block[0] != 32) {
        diag_error(e->d, top->span, "launch %s runs mma triples, so threadIdx.x must be the lane of a "
                   "warp: its thread.x loops must have extent 32 (the block is %d wide); bind the warps "
                   "to thread.y and thread.z", L->name, L->block[0]);
        return false;
    }
    if (frag_under_tx(e, top, false)) {
        diag_error(e->d, top->span, "launch %s accesses an mma accumulator inside a thread.x loop; the "
                   "lanes hold it in fragment layout, so bind only thread.y/z around its accesses", L->name);
        return false;
    }
    for (int b = 0; b < e->k->nbufs; b++) {
        if (!e->frag[b]) continue;
        const Buffer *buf = e->k->bufs[b];
        for (int d = 0; d < 2; d++)
            cval(e, buf->shape[d], &e->fext[b][d]);
        if (e->fext[b][0] % 16 || e->fext[b][1] % 8) {
            diag_error(e->d, buf->span, "the mma accumulator %s is %" PRId64 " x %" PRId64 " per warp; "
                       "tensor-core tiles need a multiple of 16 x 8", buf->name, e->fext[b][0], e->fext[b][1]);
            return false;
        }
    }
    return true;
}

typedef struct FragAcc {
    Expr *const *idx[64];
    int n;
    bool over;
} FragAcc;

static void fa_expr(const Em *e, const Expr *x, FragAcc *f)
{
    if (!x) return;
    if (x->kind == IE_LOAD) {
        if (e->frag[buf_index(e, x->u.load.buf)]) {
            if (f->n < 64) f->idx[f->n++] = x->u.load.idx;
            else f->over = true;
        }
        for (int i = 0; i < x->u.load.buf->rank; i++) fa_expr(e, x->u.load.idx[i], f);
        return;
    }
    for (int i = 0; i < ir_expr_arity(x->kind); i++) fa_expr(e, x->args[i], f);
}

/* Accumulator accesses below n, outside mma triples. */
static void fa_node(const Em *e, const Node *n, FragAcc *f)
{
    if (n->kind == N_LOOP && is_tc(n->u.loop.kind)) return;
    if (n->kind == N_STMT) {
        if (e->frag[buf_index(e, n->u.stmt.buf)]) {
            if (f->n < 64) f->idx[f->n++] = n->u.stmt.idx;
            else f->over = true;
        }
        fa_expr(e, n->u.stmt.value, f);
        return;
    }
    NodeList *body = ir_body((Node *)n);
    for (int i = 0; body && i < body->n; i++) fa_node(e, body->v[i], f);
}

static bool has_var(const Em *e, const Expr *x, const Var *v, int64_t *coef)
{
    GAff a = {.ok = true};
    aff_of(e, x, 1, &a);
    *coef = 0;
    for (int i = 0; i < a.n; i++)
        if (a.v[i] == v) *coef = a.c[i];
    return a.ok ? *coef != 0 : xvar_used(x, v);
}

/* Can loop n be spread over the lanes as the accumulator's rows (q = 0) or
 * columns (q = 1)?  It starts at 0, runs a multiple of 8 times, and every
 * accumulator access below indexes dimension q as base + var (base a multiple of 8)
 * and the other dimension without it. */
static bool dist_ok(Em *e, const Node *n, int q, const FragAcc *f)
{
    int64_t lo, ext, c;
    /* a warpgroup's rows: each warp holds 16 of every 64 */
    int64_t g = e->wg && q == 0 ? 64 : 8;
    if (f->n == 0 || f->over || !loop_extent(e, n, &lo, &ext) || lo != 0 || ext % g || ext == 0) return false;
    Kernel *k = (Kernel *)e->k;
    const Var *v = n->u.loop.var;
    for (int i = 0; i < f->n; i++) {
        Expr *dq = f->idx[i][q], *dn = f->idx[i][1 - q];
        GAff a = {.ok = true};
        aff_of(e, dq, 1, &a);
        if (!a.ok || !has_var(e, dq, v, &c) || c != 1 || xvar_used(dn, v)) return false;
        if (!mult_of(e, ir_simplify(k, ir_subst(k, dq, v, ir_int(k, 0))), g)) return false;
    }
    return true;
}

static void dist_open(Em *e, const Node *n, int q)
{
    const char *v = vn(e, n->u.loop.var);
    int64_t lo, ext;
    loop_extent(e, n, &lo, &ext);
    line(e, "#pragma unroll");
    if (q == 0 && e->wg) {
        line(e, "for (idx_t pf_rf_%s = 0; pf_rf_%s < %" PRId64 "; pf_rf_%s += 64) {   /* %s: accumulator rows, "
             "16 of each 64 per warp, lane / 4 and lane / 4 + 8 (wgmma fragment layout) */", v, v, ext, v,
             vn(e, n->u.loop.var));
        e->ind++;
        line(e, "#pragma unroll");
        line(e, "for (idx_t pf_rh_%s = 0; pf_rh_%s < 16; pf_rh_%s += 8) {", v, v, v);
        e->ind++;
        line(e, "const idx_t %s = pf_rf_%s + pf_rh_%s + pf_wrow + (pf_lane >> 2);", v, v, v);
        snprintf(e->dname[0], sizeof e->dname[0], "(pf_rf_%s + pf_rh_%s)", v, v);
    } else if (q == 0) {
        line(e, "for (idx_t pf_rf_%s = 0; pf_rf_%s < %" PRId64 "; pf_rf_%s += 8) {   /* %s: accumulator rows, "
             "lane / 4 each (fragment layout) */", v, v, ext, v, vn(e, n->u.loop.var));
        e->ind++;
        line(e, "const idx_t %s = pf_rf_%s + (pf_lane >> 2);", v, v);
        snprintf(e->dname[0], sizeof e->dname[0], "pf_rf_%s", v);
    } else {
        line(e, "for (idx_t pf_cf_%s = 0; pf_cf_%s < %" PRId64 "; pf_cf_%s += 8) {   /* %s: accumulator "
             "columns, 2 * (lane %% 4) + 0..1 each (fragment layout) */", v, v, ext, v, vn(e, n->u.loop.var));
        e->ind++;
        line(e, "#pragma unroll");
        line(e, "for (idx_t pf_ch_%s = 0; pf_ch_%s < 2; ++pf_ch_%s) {", v, v, v);
        e->ind++;
        line(e, "const idx_t %s = pf_cf_%s + ((pf_lane & 3) << 1) + pf_ch_%s;", v, v, v);
        snprintf(e->dname[1], sizeof e->dname[1], "(pf_cf_%s + pf_ch_%s)", v, v);
    }
    e->dvar[q] = n->u.loop.var;
}

static void dist_close(Em *e, int q)
{
    for (int i = 0; i < (q == 0 && !e->wg ? 1 : 2); i++) {
        e->ind--;
        line(e, "}");
    }
    e->dvar[q] = NULL;
}

/* A loop over accumulator elements outside the triple: if it and its only child
 * are a row and a column loop, both are spread over the lanes; true when done. */
/* The column loop m of a fragment pair whose one statement stores into a global
 * f32 buffer at `base + column` (base even, rows of even length): a lane's two
 * adjacent columns (2 * (lane % 4) + 0, 1) are one 8-byte store instead of two
 * 4-byte ones.  Both values are computed first, as the two-iteration loop would. */
static bool emit_frag_store2(Em *e, const Node *m)
{
    if (m->u.loop.body.n != 1 || m->u.loop.body.v[0]->kind != N_STMT) return false;
    const Node *s = m->u.loop.body.v[0];
    const Buffer *g = s->u.stmt.buf;
    const Var *cv = m->u.loop.var;
    int64_t rowlen, c;
    if (s->u.stmt.op != SOP_ASSIGN || g->mem != MEM_GLOBAL || g->dtype != DT_F32 || g->rank < 1 ||
        !cval(e, g->shape[g->rank - 1], &rowlen) || rowlen % 2)
        return false;
    for (int d = 0; d + 1 < g->rank; d++)
        if (xvar_used(s->u.stmt.idx[d], cv)) return false;
    const Expr *last = s->u.stmt.idx[g->rank - 1];
    if (!lane_coef(e, last, cv, &c) || c != 1) return false;
    Kernel *k = (Kernel *)e->k;
    if (!mult_of(e, ir_simplify(k, ir_subst(k, (Expr *)last, cv, ir_int(k, 0))), 2)) return false;
    const char *v = vn(e, cv);
    int64_t lo, ext;
    loop_extent(e, m, &lo, &ext);
    line(e, "#pragma unroll");
    line(e, "for (idx_t pf_cf_%s = 0; pf_cf_%s < %" PRId64 "; pf_cf_%s += 8) {   /* %s: accumulator columns, "
         "2 * (lane %% 4) + 0..1 each, stored as one 8-byte access */", v, v, ext, v, vn(e, cv));
    e->ind++;
    line(e, "float pf_st[2];");
    line(e, "#pragma unroll");
    line(e, "for (idx_t pf_ch_%s = 0; pf_ch_%s < 2; ++pf_ch_%s) {", v, v, v);
    e->ind++;
    snprintf(e->dname[1], sizeof e->dname[1], "(pf_cf_%s + pf_ch_%s)", v, v);
    e->dvar[1] = cv;
    line(e, "const idx_t %s = pf_cf_%s + ((pf_lane & 3) << 1) + pf_ch_%s;", v, v, v);
    StrBuf val = {0}, dst = {0};
    emit_expr(e, s->u.stmt.value, &val);
    line(e, "pf_st[pf_ch_%s] = %s;", v, val.s);
    e->ind--;
    line(e, "}");
    line(e, "const idx_t %s = pf_cf_%s + ((pf_lane & 3) << 1);", v, v);
    emit_elem_paren(e, g, s->u.stmt.idx, &dst);
    line(e, "*reinterpret_cast<float2 *>(&%s) = make_float2(pf_st[0], pf_st[1]);", dst.s);
    sb_free(&val);
    sb_free(&dst);
    e->dvar[1] = NULL;
    e->ind--;
    line(e, "}");
    return true;
}

static bool emit_dist_pair(Em *e, const Node *n)
{
    if (!e->any_frag || e->dvar[0] || e->dvar[1] || n->u.loop.body.n != 1 ||
        n->u.loop.body.v[0]->kind != N_LOOP)
        return false;
    const Node *m = n->u.loop.body.v[0];
    LoopKind mk = m->u.loop.kind;
    if (mk != LOOP_SERIAL && mk != LOOP_UNROLL) return false;
    FragAcc f = {0};
    fa_node(e, n, &f);
    int q = dist_ok(e, n, 0, &f) ? 0 : dist_ok(e, n, 1, &f) ? 1 : -1;
    if (q < 0 || !dist_ok(e, m, 1 - q, &f)) return false;
    dist_open(e, n, q);
    if (q == 0 && emit_frag_store2(e, m)) {
        dist_close(e, q);
        return true;
    }
    dist_open(e, m, 1 - q);
    emit_nodes(e, &m->u.loop.body);
    dist_close(e, 1 - q);
    dist_close(e, q);
    return true;
}

/* The load under an optional cast to f32. */
static const Expr *mma_operand(const Expr *x)
{
    if (x->kind == IE_CAST && x->dtype == DT_F32) x = x->args[0];
    return x->kind == IE_LOAD ? x : NULL;
}

/* Lane offset (in elements) of the row each lane hands ldmatrix for operand x of
 * the triple, whose fragment rows run over variable rv (A: i, B: j) and whose
 * depth over kv.  A (.x4): matrices 0..3 are rows 0-7/8-15 by k 0-7/8-15 in the
 * order a0a1, a2a3, a4a5, a6a7; B (.x2): k 0-7, 8-15.  Without .trans a lane names
 * a fragment row (k contiguous), with .trans a k row. */
static bool mma_lanes(Em *e, const Expr *x, const Var *rv, const Var *kv, bool isA, bool *trans, StrBuf *off)
{
    const Buffer *b = x->u.load.buf;
    int64_t sh1, c, dr = -1, dk = -1;
    /* the matrix is in the last two dimensions; a leading one is a pipeline stage */
    int r0 = b->rank - 2;
    if (b->mem != MEM_SHARED || b->rank < 2 || b->rank > 8 || !cval(e, b->shape[b->rank - 1], &sh1)) {
        diag_error(e->d, b->span, "mma operand %s must be a 2-D buffer staged in shared memory "
                   "(cache(%s, loop, mem=shared)) for ldmatrix", b->name, b->name);
        return false;
    }
    bool stage_moves = false;   /* a leading index that moves with the triple */
    for (int d = 0; d < b->rank; d++) {
        bool hr = has_var(e, x->u.load.idx[d], rv, &c), hk = has_var(e, x->u.load.idx[d], kv, &c);
        if (d < r0)
            stage_moves |= hr || hk;
        if (d >= r0 && hr) dr = d - r0;
        if (d >= r0 && hk) dk = d - r0;
    }
    if (stage_moves || dr < 0 || dk < 0 || dr == dk || sh1 % 8) {
        diag_error(e->d, b->span, "mma operand %s: rows must hold a multiple of 8 elements (16 bytes) "
                   "for ldmatrix (pad it: padding(%s, 8)), and the triple's loops must index "
                   "different dimensions", b->name, b->name);
        return false;
    }
    *trans = dk != 1;
    int64_t sr = dr == 1 ? 1 : sh1, sk = dk == 1 ? 1 : sh1;
    const char *m = isA ? "(pf_lane >> 3)" : "((pf_lane >> 3) & 1)";
    if (isA)
        sb_printf(off, "(%s8 * (%s & 1)) * %" PRId64 " + (%s8 * (%s >> 1)) * %" PRId64,
                  *trans ? "" : "(pf_lane & 7) + ", m, sr, *trans ? "(pf_lane & 7) + " : "", m, sk);
    else
        sb_printf(off, "(%s) * %" PRId64 " + (%s8 * %s) * %" PRId64, *trans ? "0" : "pf_lane & 7", sr,
                  *trans ? "(pf_lane & 7) + " : "", m, sk);
    return true;
}

/* The indices of product t of a tensor-core group (the triple mn with the unrolled
 * loops chain[0..nc) of extents ext around it, t counting them innermost fastest):
 * of operands A and B (ia, ib) and of the accumulator without its thread terms
 * (ic), each with the chain's variables at product t's values and the triple's at
 * 0, simplified.  Shared by mma and wgmma. */
static void product_indices(Em *e, const Node **chain, int nc, const int64_t *ext, int64_t t, const Node *mn,
                            const Expr *A, const Expr *B, Expr **ia, Expr **ib, Expr **ic)
{
    Kernel *k = (Kernel *)e->k;
    const Node *lj = mn->u.loop.body.v[0], *lk = lj->u.loop.body.v[0], *s = lk->u.loop.body.v[0];
    int rA = A->u.load.buf->rank, rB = B->u.load.buf->rank;
    for (int d = 0; d < rA; d++) ia[d] = A->u.load.idx[d];
    for (int d = 0; d < rB; d++) ib[d] = B->u.load.idx[d];
    for (int d = 0; d < 2; d++) ic[d] = s->u.stmt.idx[d];
    const Var *var[16 + 3];
    Expr *val[16 + 3];
    int64_t rem = t;
    for (int i = nc - 1; i >= 0; i--) {
        var[i] = chain[i]->u.loop.var;
        val[i] = ir_int(k, rem % ext[i]);
        rem /= ext[i];
    }
    var[nc] = mn->u.loop.var, var[nc + 1] = lj->u.loop.var, var[nc + 2] = lk->u.loop.var;
    for (int z = 0; z < 3; z++) val[nc + z] = ir_int(k, 0);
    for (int i = 0; i < nc + 3; i++) {
        for (int d = 0; d < rA; d++) ia[d] = ir_subst(k, ia[d], var[i], val[i]);
        for (int d = 0; d < rB; d++) ib[d] = ir_subst(k, ib[d], var[i], val[i]);
        for (int d = 0; d < 2; d++) ic[d] = ir_subst(k, ic[d], var[i], val[i]);
    }
    for (int d = 0; d < rA; d++) ia[d] = ir_simplify(k, ia[d]);
    for (int d = 0; d < rB; d++) ib[d] = ir_simplify(k, ib[d]);
    for (int d = 0; d < 2; d++) ic[d] = ir_simplify(k, ic[d]);
}

#define MMA_MAX 256

/* An mma triple with the perfectly nested unrolled loops directly around it: all
 * A and B fragments of the group are loaded first (ldmatrix, each once), then the
 * products run on them, so a warp reads each operand tile from shared memory once
 * per group.  The sums over k are reassociated, as the mma mark allows. */
static void emit_mma_group(Em *e, const Node **chain, int nc, const Node *mn)
{
    const Node *lj = mn->u.loop.body.v[0], *lk = lj->u.loop.body.v[0], *s = lk->u.loop.body.v[0];
    const Var *vi = mn->u.loop.var, *vj = lj->u.loop.var, *vk = lk->u.loop.var;
    const Buffer *acc = s->u.stmt.buf;
    int ab = buf_index(e, acc);
    const Expr *A = mma_operand(s->u.stmt.value->args[0]), *B = mma_operand(s->u.stmt.value->args[1]);
    const char *ty = A->u.load.buf->dtype == DT_BF16 ? "bf16" : "f16";
    int64_t ext[16], total = 1, lo;
    for (int i = 0; i < nc; i++) {
        loop_extent(e, chain[i], &lo, &ext[i]);
        total *= ext[i];
    }
    if (!e->frag[ab] || total > MMA_MAX) {
        diag_error(e->d, mn->span, total > MMA_MAX ? "the unrolled loops around mma loop %s make more "
                   "than 256 products in one group" : "mma loop %s: its accumulator is not held in "
                   "fragment layout", mn->u.loop.var->name);
        e->ok = false;
        return;
    }
    bool ta, tb;
    StrBuf oa = {0}, ob = {0};
    if (!mma_lanes(e, A, vi, vk, true, &ta, &oa) || !mma_lanes(e, B, vj, vk, false, &tb, &ob)) {
        e->ok = false;
        sb_free(&oa);
        sb_free(&ob);
        return;
    }
    StrBuf names = {0};
    for (int i = 0; i < nc; i++) sb_printf(&names, "%s x ", vn(e, chain[i]->u.loop.var));
    line(e, "{   /* mma %s%s: %" PRId64 " tensor-core products m16n8k16 (%s in, f32 accumulate) */",
         names.s ? names.s : "", vn(e, vi), total, ty);
    sb_free(&names);
    e->ind++;
    line(e, "const int pf_oa = %s;   /* this lane's ldmatrix row in %s */", oa.s, bn(e, A->u.load.buf));
    line(e, "const int pf_ob = %s;   /* ... and in %s */", ob.s, bn(e, B->u.load.buf));
    sb_free(&oa);
    sb_free(&ob);
    char **at = xcalloc((size_t)total * 2, sizeof *at), **bt = at + total;
    int na = 0, nb = 0, *ai = xcalloc((size_t)total * 5, sizeof *ai), *bi = ai + total;
    int64_t *r0 = (int64_t *)xcalloc((size_t)total * 2, sizeof *r0), *c0 = r0 + total;
    /* operands may carry a leading stage dimension (rank 3; mma_lanes checked) */
    int rA = A->u.load.buf->rank, rB = B->u.load.buf->rank;
    for (int64_t t = 0; t < total && e->ok; t++) {
        Expr *ia[8], *ib[8], *ic[2];
        product_indices(e, chain, nc, ext, t, mn, A, B, ia, ib, ic);
        if (!mult_of(e, ia[rA - 1], 8) || !mult_of(e, ib[rB - 1], 8)) {
            diag_error(e->d, mn->span, "mma loop %s: the operand tiles must start at a multiple of 8 "
                       "elements in their contiguous dimension (16-byte ldmatrix rows)", vi->name);
            e->ok = false;
            break;
        }
        if (!cval(e, ic[0], &r0[t]) || !cval(e, ic[1], &c0[t]) || r0[t] % 16 || c0[t] % 8 || r0[t] < 0 ||
            c0[t] < 0 || r0[t] + 16 > e->fext[ab][0] || c0[t] + 8 > e->fext[ab][1]) {
            diag_error(e->d, mn->span, "mma loop %s: each product's accumulator tile must be a constant "
                       "16 x 8 tile of the warp's (unroll the loops around the triple)", vi->name);
            e->ok = false;
            break;
        }
        StrBuf sa = {0}, sbb = {0};
        emit_elem_paren(e, A->u.load.buf, ia, &sa);
        emit_elem_paren(e, B->u.load.buf, ib, &sbb);
        ai[t] = -1;
        for (int q = 0; q < na && ai[t] < 0; q++)
            if (strcmp(at[q], sa.s) == 0) ai[t] = q;
        if (ai[t] < 0) {
            at[na] = xstrdup(sa.s);
            ai[t] = na++;
            line(e, "unsigned pf_a%d[4];  pf_ldsm_x4%s(pf_a%d, &%s + pf_oa);", ai[t], ta ? "_t" : "", ai[t], sa.s);
        }
        bi[t] = -1;
        for (int q = 0; q < nb && bi[t] < 0; q++)
            if (strcmp(bt[q], sbb.s) == 0) bi[t] = q;
        if (bi[t] < 0) {
            bt[nb] = xstrdup(sbb.s);
            bi[t] = nb++;
            line(e, "unsigned pf_b%d[2];  pf_ldsm_x2%s(pf_b%d, &%s + pf_ob);", bi[t], tb ? "_t" : "", bi[t], sbb.s);
        }
        sb_free(&sa);
        sb_free(&sbb);
    }
    for (int64_t t = 0; t < total && e->ok; t++)
        line(e, "pf_mma_%s(%s[%" PRId64 "][%" PRId64 "], pf_a%d, pf_b%d);", ty, bn(e, acc), r0[t] / 16,
             c0[t] / 8, ai[t], bi[t]);
    e->nmma += (int)total;
    for (int q = 0; q < na; q++) free(at[q]);
    for (int q = 0; q < nb; q++) free(bt[q]);
    free(at);
    free(ai);
    free(r0);
    e->ind--;
    line(e, "}");
}

/* The unrolled loops directly around an mma or wgmma triple, heading at n; false
 * when n heads none. */
static bool mma_chain(const Node *n, const Node **chain, int *nc, const Node **mn)
{
    *nc = 0;
    while (n->kind == N_LOOP && n->u.loop.kind == LOOP_UNROLL && *nc < 16) {
        chain[(*nc)++] = n;
        if (n->u.loop.body.n != 1) return false;
        n = n->u.loop.body.v[0];
    }
    if (n->kind != N_LOOP || !is_tc(n->u.loop.kind)) return false;
    *mn = n;
    return true;
}

/* ------------------------------------------------------------------ wgmma
 * Contract with passes/xform_gpu.c (docs/cuda.md "wgmma"): a loop triple marked
 * wgmma (64 x N x 16) is run by one warpgroup as wgmma.mma_async on sm_90a.  The
 * launch's thread.x extent is 128, so threadIdx.x is the thread of the warpgroup
 * and (threadIdx.y, threadIdx.z) names the warpgroup.  The accumulator, privatised
 * per warpgroup, is held in wgmma's fragment layout (warp w of the group holds rows
 * 16w .. 16w + 15 of every 64, as mma.sync would); its other accesses are spread
 * over the threads as for mma.  Both operands are read from shared memory through
 * matrix descriptors: their buffers take the 128-byte swizzled layout (swz_elem), a
 * K-major operand (k the contiguous index) needs its 64 or N rows to start at a
 * multiple of 8, an M- or N-major one (transposed) needs its contiguous start at a
 * multiple of 64 and N a multiple of 64.  A group (the triple and the unrolled loops
 * directly around it) is issued between a wgmma.fence and one commit, then waited
 * for; shared memory written through ordinary stores or cp.async is published to
 * wgmma's asynchronous proxy by a fence before every barrier of the launch. */

static const char wg_prelude[] =
    "/* Hopper warpgroup products (sm_90a): wgmma.mma_async reads both operands from shared memory through\n"
    " * 64-bit matrix descriptors (start >> 4, leading and stride byte offsets >> 4, 128-byte swizzle in\n"
    " * bits 62-63) and accumulates into registers asynchronously: fence before, commit, wait after.  Shared\n"
    " * memory written by ordinary stores or cp.async reaches it only after a proxy fence. */\n"
    "static __device__ __forceinline__ unsigned long long pf_wg_desc(unsigned a, unsigned lbo, unsigned sbo) { return (unsigned long long)((a & 0x3FFFF) >> 4) | ((unsigned long long)(lbo >> 4) << 16) | ((unsigned long long)(sbo >> 4) << 32) | (1ull << 62); }\n"
    "static __device__ __forceinline__ void pf_wg_fence() { asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\"); }\n"
    "static __device__ __forceinline__ void pf_wg_commit() { asm volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\"); }\n"
    "template <int N> static __device__ __forceinline__ void pf_wg_wait() { asm volatile(\"wgmma.wait_group.sync.aligned %0;\" :: \"n\"(N) : \"memory\"); }\n"
    "static __device__ __forceinline__ void pf_proxy_fence() { asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\"); }\n"
    "/* An empty asm that reads and writes every accumulator register: keeps the compiler from moving their\n"
    " * other uses across the fence or the wait. */\n"
    "template <int N> static __device__ __forceinline__ void pf_wg_keep(float *d) {\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < N; i++) asm volatile(\"\" : \"+f\"(d[i]) :: \"memory\");\n"
    "}\n"
    "/* Byte offset -> its place in the 128-byte swizzle (bits 4-6 xor bits 7-9). */\n"
    "static __device__ __forceinline__ unsigned pf_swz(unsigned o) { return o ^ ((o >> 3) & 0x70u); }\n";

/* Writes (once per module) the wgmma helper for dtype ty (1: bf16), width N and
 * the operands' majorness: one asm with the N / 2 accumulator registers. */
static void wg_helper(Em *e, int ty, int64_t N, bool ta, bool tb)
{
    StrBuf *h = &e->helpers;
    if (!e->wgpre) sb_puts(h, wg_prelude);
    e->wgpre = true;
    const char *t = ty ? "bf16" : "f16";
    int64_t nr = N / 2;
    sb_printf(h, "static __device__ __forceinline__ void pf_wgmma_%s_n%" PRId64 "_%d%d(float *d, unsigned long long a, "
              "unsigned long long b) {\n    asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, 1, 0;\\n\"\n"
              "        \"wgmma.mma_async.sync.aligned.m64n%" PRId64 "k16.f32.%s.%s {", t, N, ta, tb, N, t, t);
    for (int64_t i = 0; i < nr; i++) sb_printf(h, "%s%%%" PRId64, i ? ", " : "", i);
    sb_printf(h, "}, %%%" PRId64 ", %%%" PRId64 ", p, 1, 1, %d, %d;\\n}\\n\"\n        : ", nr, nr + 1, ta, tb);
    for (int64_t i = 0; i < nr; i++) sb_printf(h, "%s\"+f\"(d[%" PRId64 "])", i ? ", " : "", i);
    sb_puts(h, "\n        : \"l\"(a), \"l\"(b) : \"memory\");\n}\n");
}

/* Descriptor of operand x (a load of a swizzled buffer) for the product whose
 * indices, with the triple's variables at 0, are idx; mn is the triple variable of
 * its M or N dimension, ext that dimension's extent.  *trans: the operand is M/N-major. */
static bool wg_desc(Em *e, const Node *mn, const Expr *x, Expr *const *idx, const Var *mv, const Var *kv,
                    int64_t ext, bool *trans, StrBuf *o)
{
    const Buffer *b = x->u.load.buf;
    int bi = buf_index(e, b);
    int r = b->rank;
    int64_t c, R = 0;
    if (b->mem != MEM_SHARED || !e->swz[bi]) {
        diag_error(e->d, b->span, "wgmma operand %s must be staged in shared memory (cache(%s, loop, "
                   "mem=shared)): wgmma reads both operands from there", b->name, b->name);
        return false;
    }
    cval(e, b->shape[r - 2], &R);
    int dm = -1, dk = -1;
    for (int d = 0; d < r; d++) {
        bool hm = has_var(e, x->u.load.idx[d], mv, &c), hk = has_var(e, x->u.load.idx[d], kv, &c);
        if ((hm || hk) && d < r - 2) dm = dk = -2;
        if (hm && d >= r - 2 && dm != -2) dm = d;
        if (hk && d >= r - 2 && dk != -2) dk = d;
    }
    if (dm < 0 || dk < 0 || dm == dk) {
        diag_error(e->d, mn->span, "wgmma loop %s: operand %s must be indexed by the triple's loops in its "
                   "last two dimensions, one each", mn->u.loop.var->name, b->name);
        return false;
    }
    *trans = dm == r - 1;
    const Expr *rowi = idx[r - 2], *coli = idx[r - 1];
    bool ok = *trans ? mult_of(e, coli, 64) && mult_of(e, rowi, 8) && ext % 64 == 0
                     : mult_of(e, rowi, 8) && mult_of(e, coli, 8);
    if (!ok) {
        diag_error(e->d, mn->span, "wgmma loop %s: the tile of %s must start at a row that is a multiple "
                   "of 8 and, %s", mn->u.loop.var->name, b->name,
                   *trans ? "as the tile is M/N-major, at a column that is a multiple of 64 with N a "
                            "multiple of 64" : "at a column that is a multiple of 8");
        return false;
    }
    StrBuf lin = {0};
    swz_lin(e, b, idx, &lin);
    /* 128B swizzle: 8 rows of 128 bytes (SBO 1024) per core-matrix group; an M/N-major
     * operand's 64-element panels are R rows apart (LBO); a K-major one's LBO is unused */
    sb_printf(o, "pf_wg_desc(pf_saddr(%s) + (unsigned)(%s), %" PRId64 ", 1024)", bn(e, b), lin.s,
              *trans ? R * 128 : 16);
    sb_free(&lin);
    return true;
}

#define WG_MAX 64

/* A wgmma triple with the unrolled loops directly around it (see above). */
static void emit_wgmma_group(Em *e, const Node **chain, int nc, const Node *mn)
{
    const Node *lj = mn->u.loop.body.v[0], *lk = lj->u.loop.body.v[0], *s = lk->u.loop.body.v[0];
    const Var *vi = mn->u.loop.var, *vj = lj->u.loop.var, *vk = lk->u.loop.var;
    const Buffer *acc = s->u.stmt.buf;
    int ab = buf_index(e, acc);
    const Expr *A = mma_operand(s->u.stmt.value->args[0]), *B = mma_operand(s->u.stmt.value->args[1]);
    int ty = A->u.load.buf->dtype == DT_BF16;
    int64_t ext[16], total = 1, lo, N;
    loop_extent(e, lj, &lo, &N);
    for (int i = 0; i < nc; i++) {
        loop_extent(e, chain[i], &lo, &ext[i]);
        total *= ext[i];
    }
    if (!e->frag[ab] || total > WG_MAX) {
        diag_error(e->d, mn->span, total > WG_MAX ? "the unrolled loops around wgmma loop %s make more "
                   "than 64 products in one group" : "wgmma loop %s: its accumulator is not held in "
                   "fragment layout", mn->u.loop.var->name);
        e->ok = false;
        return;
    }
    StrBuf names = {0};
    for (int i = 0; i < nc; i++) sb_printf(&names, "%s x ", vn(e, chain[i]->u.loop.var));
    line(e, "{   /* wgmma %s%s: %" PRId64 " warpgroup products m64n%" PRId64 "k16 (%s in, f32 accumulate), "
         "operands from shared memory */", names.s ? names.s : "", vn(e, vi), total, N, ty ? "bf16" : "f16");
    sb_free(&names);
    e->ind++;
    StrBuf body = {0};
    for (int64_t t = 0; t < total && e->ok; t++) {
        Expr *ia[8], *ib[8], *ic[2];
        int64_t r0, c0;
        product_indices(e, chain, nc, ext, t, mn, A, B, ia, ib, ic);
        if (!cval(e, ic[0], &r0) || !cval(e, ic[1], &c0) || r0 % 64 || c0 % 8 || r0 < 0 || c0 < 0 ||
            r0 + 64 > e->fext[ab][0] || c0 + N > e->fext[ab][1]) {
            diag_error(e->d, mn->span, "wgmma loop %s: each product's accumulator tile must be a constant "
                       "64 x %" PRId64 " tile of the warpgroup's, starting at a row that is a multiple of 64 "
                       "(unroll the loops around the triple)", vi->name, N);
            e->ok = false;
            break;
        }
        bool ta, tb;
        StrBuf da = {0}, db = {0};
        if (!wg_desc(e, mn, A, ia, vi, vk, 64, &ta, &da) || !wg_desc(e, mn, B, ib, vj, vk, N, &tb, &db)) {
            e->ok = false;
            sb_free(&da);
            sb_free(&db);
            break;
        }
        if (!e->wgdone[ty][N / 8][ta * 2 + tb]) {
            e->wgdone[ty][N / 8][ta * 2 + tb] = 1;
            wg_helper(e, ty, N, ta, tb);
        }
        sb_printf(&body, "pf_wgmma_%s_n%" PRId64 "_%d%d(&%s[%" PRId64 "][%" PRId64 "][0], %s, %s);\n",
                  ty ? "bf16" : "f16", N, ta, tb, bn(e, acc), r0 / 64, c0 / 8, da.s, db.s);
        sb_free(&da);
        sb_free(&db);
    }
    if (e->ok) {
        /* the keeps order the accumulator's other reads and writes around the
         * asynchronous products: before the fence, and after the wait */
        line(e, "pf_wg_keep<%" PRId64 ">(&%s[0][0][0]);", e->fext[ab][0] / 64 * e->fext[ab][1] / 2, bn(e, acc));
        line(e, "pf_wg_fence();");
        for (char *p = body.s, *q; p && *p; p = q + 1) {
            q = strchr(p, '\n');
            *q = 0;
            line(e, "%s", p);
        }
        line(e, "pf_wg_commit();");
        line(e, "pf_wg_wait<%d>();%s", e->wg_inflight, e->wg_inflight ? "   /* the previous group is done: "
             "its stage may be refilled */" : "");
        line(e, "pf_wg_keep<%" PRId64 ">(&%s[0][0][0]);", e->fext[ab][0] / 64 * e->fext[ab][1] / 2, bn(e, acc));
    }
    e->nmma += (int)total;
    sb_free(&body);
    e->ind--;
    line(e, "}");
}

/* ------------------------------------------------------------------ pipeline
 * A loop marked pipeline (passes/xform_gpu.c) starts with copy nests into shared
 * buffers whose first index is the stage `v % S`.  At block level it becomes the
 * multi-stage software pipeline of sm_80+:
 *
 *     copies of iterations 0 .. S-2 (cp.async), one commit group each
 *     for v: wait until at most S-2 groups are pending (iteration v has landed in
 *            this thread's copies), __syncthreads (everyone's have, and everyone
 *            has finished iteration v-1, whose stage the next copies overwrite),
 *            copies of iteration v+S-1, commit, then the rest of the body
 *
 * so S-1 tiles are in flight while one is used.  Copies that are 8- or 16-byte
 * vector copies from global memory are cp.async; others are ordinary stores, which
 * the same barrier publishes.  A commit is issued every iteration, empty past the
 * end, so the group count that wait_group relies on stays uniform. */

/* The stage count of copy node n of pipelined loop v: every statement below writes
 * a shared buffer with `=` at first index `v % S`; 0 when n is not such a node. */
static int64_t stage_copy(const Node *n, const Var *v)
{
    if (n->kind == N_STMT) {
        const Buffer *b = n->u.stmt.buf;
        const Expr *i0 = b->rank ? n->u.stmt.idx[0] : NULL;
        if (b->mem != MEM_SHARED || n->u.stmt.op != SOP_ASSIGN || !i0 || i0->kind != IE_MOD ||
            i0->args[0]->kind != IE_VAR || i0->args[0]->u.var != v || i0->args[1]->kind != IE_INT)
            return 0;
        return i0->args[1]->u.i >= 2 ? i0->args[1]->u.i : 0;
    }
    const NodeList *b = ir_body((Node *)n);
    int64_t S = 0;
    for (int i = 0; b && i < b->n; i++) {
        int64_t t = stage_copy(b->v[i], v);
        if (!t || (S && t != S)) return 0;
        S = t;
    }
    return S;
}

/* Emits pipelined loop n; false (nothing written) when its shape does not allow
 * it, and the caller runs it as a plain serial loop, which means the same. */
static bool emit_pipeline(Em *e, const Node *n)
{
    const NodeList *body = &n->u.loop.body;
    const Var *v = n->u.loop.var;
    int64_t S = 0, lo;
    int nc = 0;
    while (nc < body->n) {
        int64_t t = stage_copy(body->v[nc], v);
        if (!t || (S && t != S)) break;
        S = t;
        nc++;
    }
    if (nc == 0 || nc == body->n || e->pvar || !cval(e, n->u.loop.lo, &lo) || lo < 0) return false;
    /* inflight=1 (wgmma launches only): a group's products may still read their
     * stage after the iteration, so copies run S - 2 iterations ahead, not S - 1 */
    int64_t L = e->wg ? n->u.loop.inflight : 0;
    /* The copies move to earlier iterations: they must read nothing the loop writes,
     * and nothing after them may write what they fill. */
    int nb = e->k->nbufs;
    uint8_t *rc = xcalloc((size_t)nb * 4 + 1, 1), *wc = rc + nb, *rr = wc + nb, *wr = rr + nb;
    for (int i = 0; i < body->n; i++) node_access(e, body->v[i], i < nc ? rc : rr, i < nc ? wc : wr);
    bool ok = true;
    for (int i = 0; i < nb && ok; i++) ok = !(rc[i] && (wc[i] || wr[i])) && !(wc[i] && wr[i]);
    free(rc);
    if (!ok) return false;
    const char *vs = vn(e, v);
    StrBuf los = {0}, his = {0};
    emit_expr(e, n->u.loop.lo, &los);
    emit_expr(e, n->u.loop.hi, &his);
    NodeList copies = {body->v, nc, nc}, rest = {body->v + nc, body->n - nc, body->n - nc};
    line(e, "{   /* %s: %" PRId64 "-stage pipeline; the copies of iteration %s + %" PRId64 " are in flight "
         "while %s computes%s */", vn(e, n->u.loop.var), S, vs, S - 1 - L, vs,
         L ? ", whose tensor-core products overlap the next iteration's" : "");
    e->ind++;
    e->pvar = v;
    line(e, "#pragma unroll");
    line(e, "for (idx_t pf_pre = 0; pf_pre < %" PRId64 "; ++pf_pre) {", S - 1 - L);
    e->ind++;
    line(e, "const idx_t %s = %s + pf_pre;", vs, los.s);
    line(e, "if (%s < %s) {", vs, his.s);
    e->ind++;
    e->pcopy = true;
    emit_nodes(e, &copies);
    e->pcopy = false;
    e->ind--;
    line(e, "}");
    line(e, "pf_cp_commit();");
    e->ind--;
    line(e, "}");
    line(e, "for (idx_t %s = %s; %s < %s; ++%s) {", vs, los.s, vs, his.s, vs);
    e->ind++;
    line(e, "pf_cp_wait<%" PRId64 ">();   /* this thread's copies of %s have landed */", S - 2 - L, vs);
    if (e->wg) line(e, "pf_proxy_fence();   /* ... and are visible to wgmma */");
    line(e, "__syncthreads();   /* everyone's have, and stage (%s - %" PRId64 ") %% %" PRId64 " is free */", vs,
         1 + L, S);
    line(e, "{");
    e->ind++;
    line(e, "const idx_t pf_next = %s + %" PRId64 ";", vs, S - 1 - L);
    line(e, "if (pf_next < %s) {", his.s);
    e->ind++;
    line(e, "const idx_t %s = pf_next;", vs);
    e->pcopy = true;
    emit_nodes(e, &copies);
    e->pcopy = false;
    e->ind--;
    line(e, "}");
    line(e, "pf_cp_commit();");
    e->ind--;
    line(e, "}");
    e->wg_inflight = (int)L;
    emit_nodes(e, &rest);
    e->wg_inflight = 0;
    e->ind--;
    line(e, "}");
    line(e, "pf_cp_wait<0>();");
    if (L) {
        line(e, "pf_wg_wait<0>();   /* the last group */");
        for (int b = 0; b < e->k->nbufs; b++)
            if (e->frag[b])
                line(e, "pf_wg_keep<%" PRId64 ">(&%s[0][0][0]);", e->fext[b][0] / 64 * e->fext[b][1] / 2,
                     bn(e, e->k->bufs[b]));
    }
    e->pvar = NULL;
    e->ind--;
    line(e, "}");
    e->npipe++;
    sb_free(&los);
    sb_free(&his);
    return true;
}

/* The statement of a block-wide reduction that passes/gpu_reduce.c marked below a
 * thread loop, or NULL. */
static const Node *red_stmt(const Node *n)
{
    if (n->kind == N_STMT) return n->u.stmt.block_reduce ? n : NULL;
    const NodeList *b = ir_body((Node *)n);
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
        !loop_extent(e, jl, &jlo, &K) || jlo != 0 || !loop_extent(e, n, &tlo, &T) || tlo != 0 || T != e->block[0] ||
        e->block[0] % 32 || e->block[1] != 1 || e->block[2] != 1)
        return false;
    const Node *upd = jb->v[0], *st = jb->v[1];
    StrBuf guard = {0}, value = {0}, acc = {0}, store = {0};
    if (g) emit_expr(e, g->u.guard.cond, &guard);
    emit_expr(e, upd->u.stmt.value, &value);
    emit_elem_paren(e, upd->u.stmt.buf, upd->u.stmt.idx, &acc);
    emit_elem_paren(e, st->u.stmt.buf, st->u.stmt.idx, &store);
    DType yt = st->u.stmt.buf->dtype;
    CgScanText s = {.tvar = vn(e, n->u.loop.var), .jvar = vn(e, jl->u.loop.var), .k = K,
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
    const NodeList *b = ir_body((Node *)n);
    for (int i = 0; b && i < b->n; i++)
        if (has_block_scan(b->v[i])) return true;
    return false;
}

static void emit_loop(Em *e, const Node *n)
{
    LoopKind lk = n->u.loop.kind;
    const char *v = vn(e, n->u.loop.var);
    StrBuf lo = {0}, hi = {0};
    emit_expr(e, n->u.loop.lo, &lo);
    emit_expr(e, n->u.loop.hi, &hi);
    const Node *chain[16], *mn;
    int nc;
    int64_t vlo, vw;
    if ((is_tc(lk) || lk == LOOP_UNROLL) && e->sched && mma_chain(n, chain, &nc, &mn)) {
        if (mn->u.loop.kind == LOOP_WGMMA)
            emit_wgmma_group(e, chain, nc, mn);
        else
            emit_mma_group(e, chain, nc, mn);
    } else if (lk == LOOP_PIPELINE && e->sched && e->tdepth == 0 && emit_pipeline(e, n)) {
        /* copies overlapped with work */
    } else if (is_tc(lk)) {
        /* a triple the group emitter cannot take (passes/gpu_map.c refuses those of
         * launches that bind no warps) is refused rather than run per thread */
        e->ok = false;
        diag_error(e->d, n->span, "loop %s is marked %s but its launch binds no warps (bind the "
                   "loops around it to block.* and thread.y/z; docs/cuda.md)", n->u.loop.var->name,
                   loop_kind_name(lk));
    } else if ((lk == LOOP_SERIAL || lk == LOOP_UNROLL) && e->sched && emit_dist_pair(e, n)) {
        /* spread over the lanes */
    } else if (lk == LOOP_VECTOR && e->sched && e->tdepth > 0 && e->nvload == 0 &&
               loop_extent(e, n, &vlo, &vw) && vlo == 0 && vector_copy(e, n, vw)) {
        /* one wide copy */
    } else if (is_block(lk)) {
        e->ok = false;
        diag_error(e->d, n->span, "loop %s is bound to %s but is not part of the outermost "
                   "nest of block loops of its statement", n->u.loop.var->name, loop_kind_name(lk));
    } else if (is_thread(lk)) {
        int dim = gpu_dim(lk);
        int64_t l0, ext;
        if (e->tdim_used[dim]) {
            e->ok = false;
            diag_error(e->d, n->span, "loop %s is bound to %s inside another loop bound to it",
                       n->u.loop.var->name, loop_kind_name(lk));
        } else if (!loop_extent(e, n, &l0, &ext)) {
            e->ok = false;
            diag_error(e->d, n->span, "loop %s is bound to %s but its bounds are not constant",
                       n->u.loop.var->name, loop_kind_name(lk));
        } else if (lk == LOOP_THREAD_X && e->tdepth == 0 && has_block_scan(n)) {
            if (!emit_block_scan(e, n)) {
                e->ok = false;
                diag_error(e->d, n->span, "loop %s holds a block-wide scan in a shape the CUDA back end does not "
                           "emit (pass gpu-scan makes: one chunk loop of the scan's update and store, a 1-D "
                           "block of whole warps)", n->u.loop.var->name);
            }
        } else {
            static const char xyz[] = "xyz";
            const Node *red = red_stmt(n);
            line(e, "{   /* %s: %s%s%s */", vn(e, n->u.loop.var), loop_kind_name(lk),
                 red ? ", a block-wide reduction into " : "", red ? bn(e, red->u.stmt.buf) : "");
            e->ind++;
            if (strcmp(lo.s, "0") == 0)
                line(e, "const idx_t %s = (idx_t)threadIdx.%c;", v, xyz[dim]);
            else
                line(e, "const idx_t %s = %s + (idx_t)threadIdx.%c;", v, lo.s, xyz[dim]);
            bool guard = ext < e->block[dim];
            static const char *const ident[] = {[SOP_ADD] = "0.0f", [SOP_MUL] = "1.0f",
                                                [SOP_MAX] = "(-__int_as_float(0x7f800000))", [SOP_MIN] = "__int_as_float(0x7f800000)"};
            if (red) line(e, "float pf_red = %s;   /* this thread's partial */", ident[red->u.stmt.op]);
            if (guard) line(e, "if (%s < %s) {", v, hi.s);
            if (guard) e->ind++;
            e->tdim_used[dim] = true;
            e->tdepth++;
            e->red_stmt = red;
            emit_nodes(e, &n->u.loop.body);
            e->red_stmt = NULL;
            e->tdepth--;
            e->tdim_used[dim] = false;
            if (guard) e->ind--;
            if (guard) line(e, "}");
            if (red) {
                static const int opn[] = {[SOP_ADD] = 0, [SOP_MUL] = 1, [SOP_MAX] = 2, [SOP_MIN] = 3};
                StrBuf lv = {0};
                emit_elem_paren(e, red->u.stmt.buf, red->u.stmt.idx, &lv);
                line(e, "pf_red = pf_block_reduce<%d>(pf_red, %s);", opn[red->u.stmt.op], ident[red->u.stmt.op]);
                line(e, "if (threadIdx.x == 0) %s = pf_rop<%d>(%s, pf_red);", lv.s, opn[red->u.stmt.op], lv.s);
                sb_free(&lv);
            }
            e->ind--;
            line(e, "}");
        }
    } else {
        int64_t l0, vext = 0;
        bool vec = lk == LOOP_VECTOR && e->sched && e->nvload == 0 && loop_extent(e, n, &l0, &vext) &&
                   l0 == 0 && (vext == 2 || vext == 4);
        if (vec)
            emit_vector_loads(e, n, vext);
        if (lk == LOOP_UNROLL || vec)
            line(e, "#pragma unroll");
        line(e, "for (idx_t %s = %s; %s < %s; ++%s) {", v, lo.s, v, hi.s, v);
        e->ind++;
        emit_nodes(e, &n->u.loop.body);
        if (vec)
            e->nvload = 0;
        /* the next iteration overwrites shared memory this one reads */
        if (e->sched && e->tdepth == 0 && reads_and_writes_shared(e, n)) {
            if (e->wg) line(e, "pf_proxy_fence();");
            line(e, "__syncthreads();");
        }
        e->ind--;
        line(e, "}");
    }
    sb_free(&lo);
    sb_free(&hi);
}

static void emit_node(Em *e, const Node *n)
{
    switch (n->kind) {
    case N_STMT: emit_stmt(e, n); break;
    case N_LOOP: emit_loop(e, n); break;
    case N_IF: {
        StrBuf c = {0};
        emit_expr(e, n->u.guard.cond, &c);
        line(e, "if (%s) {", c.s);
        e->ind++;
        emit_nodes(e, &n->u.guard.body);
        e->ind--;
        line(e, "}");
        sb_free(&c);
        break;
    }
    /* a CPU cache hint (schedule `prefetch`): no GPU code */
    case N_PREFETCH: line(e, "/* prefetch %s: a CPU hint, no code here */", bn(e, n->u.pf.buf)); break;
    }
}

static void emit_nodes(Em *e, const NodeList *l)
{
    /* threads hand shared data to each other only across a barrier: one goes
     * before a block-level step that conflicts with any step since the last one */
    int nb = e->k->nbufs;
    uint8_t *ra = xcalloc((size_t)nb * 2 + 1, 1), *wa = ra + nb;
    for (int i = 0; i < l->n; i++) {
        if (i > 0 && e->sched && e->tdepth == 0 && shared_conflict(e, ra, wa, l->v[i])) {
            if (e->wg) line(e, "pf_proxy_fence();   /* shared stores reach wgmma's proxy */");
            line(e, "__syncthreads();");
            memset(ra, 0, (size_t)nb * 2);
        }
        node_access(e, l->v[i], ra, wa);
        emit_node(e, l->v[i]);
    }
    free(ra);
}

/* ------------------------------------------------------------------ launches */

/* Thread-loop extents below n: the block shape is their maximum per dimension. */
static void thread_extents(Em *e, const Node *n, int64_t blk[3])
{
    if (n->kind == N_LOOP && is_thread(n->u.loop.kind)) {
        int64_t lo, ext;
        if (loop_extent(e, n, &lo, &ext)) {
            int d = gpu_dim(n->u.loop.kind);
            if (ext > blk[d]) blk[d] = ext;
        }
    }
    NodeList *body = ir_body((Node *)n);
    for (int i = 0; body && i < body->n; i++)
        thread_extents(e, body->v[i], blk);
}

static void emit_params(Em *e, StrBuf *o)
{
    bool first = true;
    for (int i = 0; i < e->k->nbufs; i++) {
        const Buffer *b = e->k->bufs[i];
        if (b->mem != MEM_GLOBAL) continue;
        sb_printf(o, "%s%s%s *__restrict__ %s", first ? "" : ", ", b->kind == BUF_IN ? "const " : "",
                  storage_type(b->dtype, e->idx64), bn(e, b));
        first = false;
    }
}

static void shape_text(Em *e, const Buffer *b, StrBuf *o, bool brackets_from_1)
{
    for (int i = brackets_from_1 ? 1 : 0; i < b->rank; i++) {
        int64_t v = 0;
        cval(e, b->shape[i], &v);
        sb_printf(o, "[%" PRId64 "]", v);
    }
}

/* Declarations of the staged (shared, local) buffers a launch touches. */
static bool declare_staged(Em *e, const Node *top, CgLaunch *L)
{
    int nb = e->k->nbufs;
    uint8_t *r = xcalloc((size_t)nb * 2 + 1, 1), *w = r + nb;
    node_access(e, top, r, w);
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
        const char *st = storage_type(b->dtype, e->idx64);
        if (b->mem == MEM_LOCAL && e->frag[i] && e->wg) {
            line(e, "/* %s: f32[%" PRId64 "][%" PRId64 "] per warpgroup, as wgmma accumulator fragments: "
                 "[row / 64][column / 8][4] per thread */", bn(e, b), e->fext[i][0], e->fext[i][1]);
            line(e, "float %s[%" PRId64 "][%" PRId64 "][4];", bn(e, b), e->fext[i][0] / 64, e->fext[i][1] / 8);
        } else if (b->mem == MEM_LOCAL && e->frag[i]) {
            line(e, "/* %s: f32[%" PRId64 "][%" PRId64 "] per warp, as mma.m16n8k16 accumulator fragments: "
                 "[row / 16][column / 8][4] per lane */", bn(e, b), e->fext[i][0], e->fext[i][1]);
            line(e, "float %s[%" PRId64 "][%" PRId64 "][4];", bn(e, b), e->fext[i][0] / 16, e->fext[i][1] / 8);
        } else if (b->mem == MEM_LOCAL) {
            line(e, "/* %s: %s%s, per-thread (registers when indexed by unrolled loops) */",
                 bn(e, b), dtype_name(b->dtype), shp.s);
            line(e, "%s %s%s;", st, bn(e, b), shp.s);
        } else {
            if (!any_shared && e->any_swz) {
                /* the swizzle is a function of address bits 7-9: buffers start 1024-aligned */
                line(e, "extern __shared__ __align__(1024) unsigned char pf_smem_raw[];");
                line(e, "unsigned char *pf_smem = pf_smem_raw + ((1024u - (pf_saddr(pf_smem_raw) & 1023u)) & 1023u);");
            } else if (!any_shared) {
                line(e, "extern __shared__ __align__(16) unsigned char pf_smem[];");
            }
            any_shared = true;
            off = (off + 15) / 16 * 16;
            if (e->swz[i]) {
                off = (off + 1023) / 1024 * 1024;
                e->soff[i] = off;
                line(e, "/* %s: %s%s staged in shared memory, bytes %" PRId64 "..%" PRId64 ", in 64-element "
                     "panels with the 128-byte swizzle wgmma reads (swz_elem) */", bn(e, b), dtype_name(b->dtype),
                     shp.s, off, off + n * dtype_bytes(b->dtype));
                line(e, "unsigned char *%s = pf_smem + %" PRId64 ";", bn(e, b), off);
                off += n * dtype_bytes(b->dtype);
                sb_free(&shp);
                continue;
            }
            e->soff[i] = off;
            shape_text(e, b, &tail, true);
            line(e, "/* %s: %s%s staged in shared memory, bytes %" PRId64 "..%" PRId64 " */",
                 bn(e, b), dtype_name(b->dtype), shp.s, off, off + n * dtype_bytes(b->dtype));
            if (b->rank <= 1)
                line(e, "%s *%s = reinterpret_cast<%s *>(pf_smem + %" PRId64 ");", st, bn(e, b), st, off);
            else
                line(e, "%s (*%s)%s = reinterpret_cast<%s (*)%s>(pf_smem + %" PRId64 ");", st, bn(e, b),
                     tail.s, st, tail.s, off);
            off += n * dtype_bytes(b->dtype);
        }
        sb_free(&shp);
        sb_free(&tail);
    }
    free(r);
    if (e->any_swz) off += 1024;   /* room to align the start */
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
    sb_printf(e->o, "extern \"C\" __global__ void __launch_bounds__(%" PRId64 ") %s(%s)\n{\n",
              nthreads, L->name, ps.s ? ps.s : "");
    sb_free(&ps);
    e->ind = 1;
    /* The size parameters are constants of each function rather than globals: a
     * local name may be any plain word, a global one would clash with every function
     * the CUDA headers declare (a parameter named sinf or y0). */
    const Kernel *k = e->k;
    for (int i = 0; i < k->nparams; i++)
        line(e, "constexpr idx_t %s = %" PRId64 ";", e->pname[i], k->params[i].value);
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
        int dim = gpu_dim(n->u.loop.kind);
        int64_t lo, ext;
        if (blk[dim]) {
            diag_error(e->d, n->span, "two loops (%s, %s) are bound to %s", blk[dim]->u.loop.var->name,
                       n->u.loop.var->name, loop_kind_name(n->u.loop.kind));
            return false;
        }
        if (!loop_extent(e, n, &lo, &ext)) {
            diag_error(e->d, n->span, "loop %s is bound to %s but its bounds are not constant",
                       n->u.loop.var->name, loop_kind_name(n->u.loop.kind));
            return false;
        }
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
    if (!frag_setup(e, top, L))
        return false;
    open_function(e, L, e->block[0] * e->block[1] * e->block[2]);
    if (!declare_staged(e, top, L))
        return false;
    if (e->any_frag && e->wg) {
        line(e, "const int pf_lane = (int)threadIdx.x & 31;   /* block.x is one warpgroup: wgmma triples run on it */");
        line(e, "const int pf_wrow = ((int)threadIdx.x >> 5) * 16;   /* this warp's 16 rows of every 64 */");
    } else if (e->any_frag) {
        line(e, "const int pf_lane = (int)threadIdx.x;   /* block.x is one warp: mma triples run on its lanes */");
    }
    for (int i = 0; i < 3; i++) {
        if (!blk[i]) continue;
        StrBuf lo = {0};
        emit_expr(e, blk[i]->u.loop.lo, &lo);
        line(e, "const idx_t %s = %s%s(idx_t)blockIdx.%c;   /* %s */", vn(e, blk[i]->u.loop.var),
             strcmp(lo.s, "0") ? lo.s : "", strcmp(lo.s, "0") ? " + " : "", "xyz"[i],
             loop_kind_name(blk[i]->u.loop.kind));
        sb_free(&lo);
    }
    if (body) {
        emit_nodes(e, body);
    } else {
        NodeList one = {(Node **)&top, 1, 1};
        emit_nodes(e, &one);
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
    memset(e->frag, 0, (size_t)e->k->nbufs + 1);
    memset(e->swz, 0, (size_t)e->k->nbufs + 1);
    e->any_frag = e->any_swz = e->wg = false;
    while (n->kind == N_LOOP && n->u.loop.kind == LOOP_GRID && nf < 16) {
        if (!loop_extent(e, n, &lo[nf], &ext[nf]))
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
        line(e, "/* no loop here is provably parallel: one thread runs it all */");
        line(e, "if (blockIdx.x != 0 || threadIdx.x != 0) return;");
        NodeList one = {(Node **)&top, 1, 1};
        emit_nodes(e, &one);
    } else {
        StrBuf names = {0};
        for (int i = 0; i < nf; i++) sb_printf(&names, "%s%s", i ? ", " : "", vn(e, F[i]));
        line(e, "/* %s: one thread per iteration (%" PRId64 " in all), the innermost fastest */", names.s, total);
        sb_free(&names);
        line(e, "const long long pf_t = (long long)blockIdx.x * blockDim.x + threadIdx.x;");
        line(e, "if (pf_t >= %" PRId64 "LL) return;", total);
        int64_t stride = 1;
        for (int i = nf - 1; i >= 0; i--) {
            StrBuf l = {0};
            emit_expr(e, chain[i]->u.loop.lo, &l);
            if (strcmp(l.s, "0") == 0) {
                /* a zero start reads better left out */
                sb_free(&l);
                sb_puts(&l, "");
            } else {
                sb_puts(&l, " + ");
            }
            const char *v = vn(e, F[i]);
            if (i == 0 && stride == 1)
                line(e, "const idx_t %s = %s(idx_t)pf_t;", v, l.s);
            else if (i == 0)
                line(e, "const idx_t %s = %s(idx_t)(pf_t / %" PRId64 ");", v, l.s, stride);
            else if (stride == 1)
                line(e, "const idx_t %s = %s(idx_t)(pf_t %% %" PRId64 ");", v, l.s, ext[i]);
            else
                line(e, "const idx_t %s = %s(idx_t)(pf_t / %" PRId64 " %% %" PRId64 ");", v, l.s, stride, ext[i]);
            stride *= ext[i];
            sb_free(&l);
        }
        emit_nodes(e, &chain[nf - 1]->u.loop.body);
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
    "/* Tensor cores (sm_80+): ldmatrix reads 8 x 8 b16 matrices whose rows the lanes name (16 bytes each),\n"
    " * mma.sync multiplies one warp's fragments.  The loads clobber memory so no shared store moves past them. */\n"
    "static __device__ __forceinline__ unsigned pf_saddr(const void *p) { unsigned a; asm(\"{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }\" : \"=r\"(a) : \"l\"(p)); return a; }\n"
    "static __device__ __forceinline__ void pf_ldsm_x4(unsigned *r, const void *p) { asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\" : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(pf_saddr(p)) : \"memory\"); }\n"
    "static __device__ __forceinline__ void pf_ldsm_x4_t(unsigned *r, const void *p) { asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\" : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(pf_saddr(p)) : \"memory\"); }\n"
    "static __device__ __forceinline__ void pf_ldsm_x2(unsigned *r, const void *p) { asm volatile(\"ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\" : \"=r\"(r[0]), \"=r\"(r[1]) : \"r\"(pf_saddr(p)) : \"memory\"); }\n"
    "static __device__ __forceinline__ void pf_ldsm_x2_t(unsigned *r, const void *p) { asm volatile(\"ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\" : \"=r\"(r[0]), \"=r\"(r[1]) : \"r\"(pf_saddr(p)) : \"memory\"); }\n"
    "/* Asynchronous copies (sm_80+) for software pipelines: global -> shared without registers, in commit\n"
    " * groups; wait_group N returns when at most N of this thread's groups are pending. */\n"
    "static __device__ __forceinline__ void pf_cp_async16(void *s, const void *g) { asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16;\" :: \"r\"(pf_saddr(s)), \"l\"(g) : \"memory\"); }\n"
    "static __device__ __forceinline__ void pf_cp_async8(void *s, const void *g) { asm volatile(\"cp.async.ca.shared.global [%0], [%1], 8;\" :: \"r\"(pf_saddr(s)), \"l\"(g) : \"memory\"); }\n"
    "static __device__ __forceinline__ void pf_cp_commit() { asm volatile(\"cp.async.commit_group;\" ::: \"memory\"); }\n"
    "template <int N> static __device__ __forceinline__ void pf_cp_wait() { asm volatile(\"cp.async.wait_group %0;\" :: \"n\"(N) : \"memory\"); }\n"
    "static __device__ __forceinline__ void pf_mma_f16(float *c, const unsigned *a, const unsigned *b) { asm(\"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\" : \"+f\"(c[0]), \"+f\"(c[1]), \"+f\"(c[2]), \"+f\"(c[3]) : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1])); }\n"
    "static __device__ __forceinline__ void pf_mma_bf16(float *c, const unsigned *a, const unsigned *b) { asm(\"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\" : \"+f\"(c[0]), \"+f\"(c[1]), \"+f\"(c[2]), \"+f\"(c[3]) : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1])); }\n"
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
    "}\n\n";

static bool generate(const Kernel *k, const char *arch, CgCudaModule *m, Diags *d)
{
    memset(m, 0, sizeof *m);
    const CgArch *a = cg_cuda_arch(arch);
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
    Em e = {.k = k, .arch = a, .d = d, .o = &m->src, .ok = true};
    make_names(&e);
    e.soff = xcalloc((size_t)k->nbufs + 1, sizeof *e.soff);
    e.frag = xcalloc((size_t)k->nbufs + 1, 1);
    e.swz = xcalloc((size_t)k->nbufs + 1, 1);
    e.fext = xcalloc((size_t)k->nbufs + 1, sizeof *e.fext);
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
    sb_puts(o, ". */\n");
    sb_printf(o, "typedef %s idx_t;\n", e.idx64 ? "long long" : "int");
    sb_puts(o, prelude);
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
        memset(e.tdim_used, 0, sizeof e.tdim_used);
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
    free(e.frag);
    free(e.swz);
    sb_free(&e.helpers);
    free(e.fext);
    if (!ok) cg_cuda_module_free(m);
    return ok;
}

/* The kernel as the GPU target passes left it (passes/pipeline.c): a caller that
 * did not run them (hand-built IR, a tuner candidate) gets them on a copy. */
bool cg_cuda_generate(const Kernel *k, const char *arch, CgCudaModule *m, Diags *d)
{
    if (k->gpu_lowered || !cg_cuda_arch(arch))
        return generate(k, arch, m, d);
    Kernel *c = ir_clone_kernel(k);
    bool ok = pipeline_target(c, arch, d) && generate(c, arch, m, d);
    if (!ok)
        memset(m, 0, sizeof *m);
    ir_free(c);
    return ok;
}

void cg_cuda_module_free(CgCudaModule *m)
{
    sb_free(&m->src);
    sb_free(&m->log);
    free(m->launches);
    free(m->arg_bufs);
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
