/* The IR printer: the IR's face.  Users read it (-emit ir), golden tests compare
 * it byte for byte, error messages quote it and the autotuner logs it, so it is
 * deterministic and exact: every float constant prints as the shortest decimal
 * that reads back to the same value of its dtype, and parentheses appear exactly
 * where precedence needs them (a + (b + c) keeps its parentheses: float addition
 * is not associative).
 *
 *   kernel gemm(M, N, K)  A: f16[M, K] global  B: f16[K, N] global  C: f32[M, N] global
 *   for i in 0..M
 *   | for j in 0..N
 *   | | C[i, j] = 0
 *   | | for k in 0..K
 *   | | | C[i, j] += f32(A[i, k]) * f32(B[k, j])
 *
 * A prefetch (a hint, schedule `prefetch`) prints its box: first element, and
 * `.. +n` after each index whose extent n is not 1: `prefetch X[r + 1, co * 16 .. +16]`.
 * What the GPU target lowering adds shows too: `grid` loops, a buffer's
 * `per-thread(y=16, x=16)` copies, a statement's trailing `block-reduce`, and a
 * `barrier` line above a step that waits for the block (or, as the last line of a
 * loop's body, closing each iteration).
 */
#include "ir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Binding strength; higher binds tighter. */
enum { P_OR = 1, P_AND, P_CMP, P_ADD, P_MUL, P_UNARY, P_ATOM };

static int prec(const Expr *e)
{
    switch (e->kind) {
    case IE_OR: return P_OR;
    case IE_AND: return P_AND;
    case IE_LT: case IE_LE: case IE_GT: case IE_GE: case IE_EQ: case IE_NE: return P_CMP;
    case IE_ADD: case IE_SUB: return P_ADD;
    case IE_MUL: case IE_DIV: case IE_MOD: return P_MUL;
    case IE_NEG: case IE_NOT: return P_UNARY;
    /* a negative literal reads like a negation: x - -1, -(-1) */
    case IE_INT: return e->u.i < 0 ? P_UNARY : P_ATOM;
    case IE_FLT: return signbit(e->u.f) && !isnan(e->u.f) ? P_UNARY : P_ATOM;
    default: return P_ATOM;
    }
}

/* Shortest decimal that rounds back to v in dtype t ("%.17g" at most for f64,
 * "%.9g" for f32 and the half types, whose values are all f32 values). */
static void put_float(StrBuf *out, double v, DType t)
{
    if (isnan(v)) {
        sb_puts(out, "nan");
        return;
    }
    if (isinf(v)) {
        sb_puts(out, v < 0 ? "-inf" : "inf");
        return;
    }
    bool f64 = !dtype_is_float(t) || t == DT_F64;
    int maxp = f64 ? 17 : 9;
    char buf[40];
    for (int p = 1; p <= maxp; p++) {
        snprintf(buf, sizeof buf, "%.*g", p, v);
        double back = strtod(buf, NULL);
        if ((f64 ? back : dtype_round(back, t)) == v)
            break;
    }
    sb_puts(out, buf);
}

static void put_expr(const Kernel *k, const Expr *e, StrBuf *out);

static void put_sub(const Kernel *k, const Expr *e, bool parens, StrBuf *out)
{
    if (parens)
        sb_putc(out, '(');
    put_expr(k, e, out);
    if (parens)
        sb_putc(out, ')');
}

static void put_list(const Kernel *k, Expr *const *v, int n, StrBuf *out)
{
    for (int i = 0; i < n; i++) {
        if (i)
            sb_puts(out, ", ");
        if (v[i])
            put_expr(k, v[i], out);
        else
            sb_puts(out, "<null>");
    }
}

/* [i, j]; nothing for a scalar, as PDL writes it (`out s: f32`, `s = ...`). */
static void put_index(const Kernel *k, Expr *const *v, int n, StrBuf *out)
{
    if (n == 0)
        return;
    sb_putc(out, '[');
    put_list(k, v, n, out);
    sb_putc(out, ']');
}

static void put_expr(const Kernel *k, const Expr *e, StrBuf *out)
{
    if (!e) {
        sb_puts(out, "<null>");
        return;
    }
    int p = prec(e);
    switch (e->kind) {
    case IE_INT:
        sb_printf(out, "%lld", (long long)e->u.i);
        return;
    case IE_FLT:
        put_float(out, e->u.f, e->dtype);
        return;
    case IE_PARAM:
        if (e->u.param >= 0 && e->u.param < k->nparams)
            sb_puts(out, k->params[e->u.param].name);
        else
            sb_printf(out, "<param %d>", e->u.param);
        return;
    case IE_VAR:
        sb_puts(out, e->u.var ? e->u.var->name : "<var>");
        return;
    case IE_LOAD:
        sb_puts(out, e->u.load.buf->name);
        if (e->u.load.guarded)
            sb_putc(out, '?');
        put_index(k, e->u.load.idx, e->u.load.buf->rank, out);
        if (e->u.load.wide)
            sb_puts(out, "{wide}");
        return;
    case IE_CAST:
        sb_printf(out, "%s(", dtype_name(e->dtype));
        put_expr(k, e->args[0], out);
        sb_putc(out, ')');
        return;
    case IE_NEG:
    case IE_NOT:
        sb_puts(out, ir_expr_name(e->kind));
        put_sub(k, e->args[0], prec(e->args[0]) <= P_UNARY, out);
        return;
    case IE_EXP: case IE_LOG: case IE_SQRT: case IE_RSQRT: case IE_TANH: case IE_ERF: case IE_ABS:
    case IE_MAX: case IE_MIN: case IE_SELECT: case IE_LOG1P: case IE_EXPM1: case IE_FLOOR: case IE_CEIL:
    case IE_ROUND: case IE_POW:
        sb_printf(out, "%s(", ir_expr_name(e->kind));
        put_list(k, e->args, ir_expr_arity(e->kind), out);
        sb_putc(out, ')');
        return;
    default: {
        /* binary operators: left-associative; comparisons do not chain */
        const Expr *a = e->args[0], *b = e->args[1];
        put_sub(k, a, a && (p == P_CMP ? prec(a) <= p : prec(a) < p), out);
        sb_printf(out, " %s ", ir_expr_name(e->kind));
        put_sub(k, b, b && prec(b) <= p, out);
        return;
    }
    }
}

void ir_print_expr(const Kernel *k, const Expr *e, StrBuf *out)
{
    put_expr(k, e, out);
}

static void indent(int depth, StrBuf *out)
{
    for (int i = 0; i < depth; i++)
        sb_puts(out, "| ");
}

/* A tensor-core group (passes/gpu_mma.c): the summary on the head loop's line,
 * then one line per product: `* acc tile (row, col) += A[..] B[..]`. */
static void put_tc(const Kernel *k, const TcGroup *g, int depth, StrBuf *out)
{
    sb_printf(out, " group(%d products; A %d fragments%s, B %d fragments%s%s)", g->nprod, g->nfa,
              g->areg ? " from registers" : g->trans[0] ? " trans" : "", g->nfb, g->trans[1] ? " trans" : "",
              g->bpairs ? " in pairs" : "");
    for (int t = 0; t < g->nprod; t++) {
        sb_putc(out, '\n');
        indent(depth, out);
        sb_printf(out, "* tile (%lld, %lld) += a%d = %s", (long long)g->prod[t].row, (long long)g->prod[t].col,
                  g->prod[t].fa, g->opbuf[0]->name);
        put_index(k, g->prod[t].a, g->opbuf[0]->rank, out);
        sb_printf(out, " * b%d = %s", g->prod[t].fb, g->opbuf[1]->name);
        put_index(k, g->prod[t].b, g->opbuf[1]->rank, out);
    }
}

/* " tma Bs[ko % 4] <- B[ko * 64 + 0..64, jo * 256 + 0..256]" */
static void put_tma(const Kernel *k, const TmaCopy *t, StrBuf *out)
{
    sb_printf(out, " tma %s[", t->dst->name);
    put_expr(k, t->stage, out);
    sb_printf(out, "] <- %s", t->src->name);
    if (t->rank != t->src->rank) /* the leading dimensions read as one */
        sb_printf(out, " as [%lld, %lld]", (long long)t->shape[0], (long long)t->shape[1]);
    sb_putc(out, '[');
    for (int d = 0; d < t->rank; d++) {
        if (d) sb_puts(out, ", ");
        put_expr(k, t->origin[d], out);
        int64_t ext = d == t->rdim ? t->rows : d == t->rank - 1 ? t->cols : 0;
        if (ext) sb_printf(out, " + 0..%lld", (long long)ext);
    }
    sb_putc(out, ']');
}

static void put_nodes(const Kernel *k, const NodeList *l, int depth, StrBuf *out)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        if (n->barrier) { /* passes/gpu_barrier.c */
            indent(depth, out);
            sb_puts(out, "barrier\n");
        }
        indent(depth, out);
        switch (n->kind) {
        case N_LOOP:
            sb_printf(out, "for %s in ", n->u.loop.var->name);
            put_expr(k, n->u.loop.lo, out);
            sb_puts(out, "..");
            put_expr(k, n->u.loop.hi, out);
            if (n->u.loop.kind != LOOP_SERIAL)
                sb_printf(out, " %s", loop_kind_name(n->u.loop.kind));
            if (n->u.loop.inflight)
                sb_printf(out, " inflight %d", n->u.loop.inflight);
            if (n->u.loop.hint != HINT_NONE)
                sb_printf(out, " %s", loop_hint_name(n->u.loop.hint));
            if (n->u.loop.stages)
                sb_printf(out, " stages %d copies %d", n->u.loop.stages, n->u.loop.ncopies);
            if (n->u.loop.reg_staged)
                sb_printf(out, " through %d registers", n->u.loop.reg_staged);
            if (n->u.loop.frag_ahead)
                sb_puts(out, " fragments ahead");
            if (n->u.loop.admit_last)
                sb_puts(out, " admits the next stage at its last slice");
            if (n->u.loop.tc)
                put_tc(k, n->u.loop.tc, depth + 1, out);
            if (n->u.loop.tma)
                put_tma(k, n->u.loop.tma, out);
            sb_putc(out, '\n');
            put_nodes(k, &n->u.loop.body, depth + 1, out);
            if (n->u.loop.barrier_each) { /* at the end of every iteration */
                indent(depth + 1, out);
                sb_puts(out, "barrier\n");
            }
            break;
        case N_IF:
            sb_puts(out, "if ");
            put_expr(k, n->u.guard.cond, out);
            if (n->u.guard.holds)
                sb_puts(out, " holds");
            if (n->u.guard.skip)
                sb_puts(out, " skip");
            sb_putc(out, '\n');
            put_nodes(k, &n->u.guard.body, depth + 1, out);
            if (n->u.guard.els.n) {
                indent(depth, out);
                sb_puts(out, "else\n");
                put_nodes(k, &n->u.guard.els, depth + 1, out);
            }
            break;
        case N_STMT:
            sb_puts(out, n->u.stmt.buf->name);
            if (n->u.stmt.guarded)
                sb_putc(out, '?');
            put_index(k, n->u.stmt.idx, n->u.stmt.buf->rank, out);
            sb_printf(out, " %s ", stmt_op_name(n->u.stmt.op));
            put_expr(k, n->u.stmt.value, out);
            if (n->u.stmt.block_reduce)
                sb_puts(out, "  block-reduce");
            if (n->u.stmt.lane_reduce)
                sb_puts(out, "  quad-reduce");
            if (n->u.stmt.atomic)
                sb_puts(out, "  atomic");
            if (n->u.stmt.block_scan)
                sb_puts(out, "  block-scan");
            sb_putc(out, '\n');
            break;
        case N_PREFETCH:
            /* prefetch X[r + 1, co * 16 .. +16]: from that element, 16 along the row */
            sb_printf(out, "prefetch %s", n->u.pf.buf->name);
            if (n->u.pf.buf->rank) {
                sb_putc(out, '[');
                for (int d = 0; d < n->u.pf.buf->rank; d++) {
                    if (d)
                        sb_puts(out, ", ");
                    put_expr(k, n->u.pf.idx[d], out);
                    if (n->u.pf.ext[d] != 1)
                        sb_printf(out, " .. +%lld", (long long)n->u.pf.ext[d]);
                }
                sb_putc(out, ']');
            }
            if (n->u.pf.write)
                sb_puts(out, " for write");
            sb_putc(out, '\n');
            break;
        }
    }
}

void ir_print_kernel(const Kernel *k, StrBuf *out)
{
    sb_printf(out, "kernel %s(", k->name);
    for (int i = 0; i < k->nparams; i++) {
        if (i)
            sb_puts(out, ", ");
        sb_puts(out, k->params[i].name);
        if (k->params[i].bound)
            sb_printf(out, "=%lld", (long long)k->params[i].value);
    }
    sb_putc(out, ')');
    for (int i = 0; i < k->nbufs; i++) {
        const Buffer *b = k->bufs[i];
        sb_printf(out, "  %s: %s", b->name, dtype_name(b->dtype));
        put_index(k, b->shape, b->rank, out);
        if (b->has_pad) {
            sb_puts(out, " pad(");
            put_float(out, b->pad, DT_F64);
            sb_putc(out, ')');
        }
        if (b->dom_lo && b->dom_hi) {
            sb_puts(out, b->dom_distinct ? " distinct(" : " range(");
            put_expr(k, b->dom_lo, out);
            sb_puts(out, ", ");
            put_expr(k, b->dom_hi, out);
            sb_putc(out, ')');
        }
        sb_printf(out, " %s", mem_space_name(b->mem));
        if (b->kind == BUF_TEMP)
            sb_puts(out, " temp");
        /* per-thread copies (GPU target lowering): `per-thread(y=2, z=2)` */
        bool any = false;
        for (int t = 0; t < 3; t++)
            if (b->thread_copies[t]) {
                sb_printf(out, "%s%c=%lld", any ? ", " : " per-thread(", "xyz"[t], (long long)b->thread_copies[t]);
                any = true;
            }
        if (any)
            sb_putc(out, ')');
        static const char *const layouts[] = {"", " mma-fragment", " wgmma-fragment", " swizzle128", " mma-rows"};
        sb_puts(out, layouts[b->layout]);
    }
    if (k->fast_exp)
        sb_puts(out, "  fast-exp");
    sb_putc(out, '\n');
    put_nodes(k, &k->body, 0, out);
}
