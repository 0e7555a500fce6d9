/* Search spaces: templates built from rules per kernel class, or the kernel's own.
 *
 * The rules read the unscheduled loop nest (one nest per statement, as lowering
 * makes them) into a NestInfo and offer templates: C functions of their parameter
 * values that schedule a freshly lowered kernel through the typed builder
 * (tune/builder.h), holding the loops and buffers each transformation hands back
 * rather than spelling names the transformations make up.  Each candidate is
 * recorded as the schedule statements it applied, so what the tuner searches is
 * exactly what a person could write and paste.  Classes:
 *
 *  - contraction (GEMM, batched GEMM, GEMM with epilogue, convolution as implicit
 *    GEMM over its two innermost output loops): a register-blocked micro-kernel
 *    built from distribute, reorder, split, cache (the C tile, and in one template
 *    the packed B panel), unroll and vectorize, with MR, NR, KC and the parallel
 *    loop as parameters (see contraction_text); a fallback template of
 *    dot-product tiles when the micro-kernel cannot be built;
 *  - row-wise (softmax, layernorm: several nests over the same rows): fuse the row
 *    loops, run rows in parallel, vectorize every inner loop (reductions through
 *    rfactor);
 *  - elementwise: vectorize the innermost loop, parallel outermost.
 *
 * Candidate sets are chosen to make static pruning cheap: tile sizes that divide
 * the bound extents (guarded tails only when nothing divides), vector lengths that
 * are whole numbers of SIMD registers.  A statement refused on the default choice
 * is dropped from the template (and said in the origin), so a template always
 * applies at its defaults; other choices may still be refused and are pruned.  A
 * template issues the same statements whatever its parameter values (only their
 * arguments change), which is what lets a dropped statement be skipped for every
 * candidate. */
#include <stdlib.h>
#include <string.h>

#include "../passes/passes.h"
#include "../passes/xform.h"
#include "blocking.h"
#include "builder.h"
#include "rules_int.h"
#include "tune.h"

int rules_threads(const TuneInput *in)
{
    return in->threads > 0 ? in->threads : rt_cpu_count();
}

int tune_vector_lanes(const Target *target, DType t)
{
    int bytes = target_is_cpu(target) ? target->vector_bytes : 32;
    int e = dtype_bytes(t);
    return e > 0 ? bytes / e : 8;
}

/* ---- reading the nest ---- */

typedef struct Nest {
    Node *top;
    Node *loops[16];   /* the chain of loops from the top, outermost first */
    int64_t ext[16];
    int nloops;
    Node *red;         /* the reduction statement (op != =), or NULL */
    int nspatial;      /* loops before the first reduction loop */
} Nest;


Node *rules_find_reduction(Node *n)
{
    if (n->kind == N_STMT)
        return n->u.stmt.op != SOP_ASSIGN ? n : NULL;
    NodeList *b = ir_body(n);
    for (int i = 0; b && i < b->n; i++) {
        Node *r = rules_find_reduction(b->v[i]);
        if (r)
            return r;
    }
    return NULL;
}

static bool read_nest(const Kernel *k, Node *top, Nest *n)
{
    memset(n, 0, sizeof *n);
    n->top = top;
    n->red = rules_find_reduction(top);
    /* Follow loops down: through a loop's last loop child (the reduction loop sits
     * after the initialisation), stopping at statements and guards. */
    Node *l = top;
    while (l && l->kind == N_LOOP && n->nloops < 16) {
        int64_t lo = 0, hi = 0;
        if (!ir_eval_size(k, l->u.loop.hi, &hi) || !ir_eval_size(k, l->u.loop.lo, &lo))
            return false;
        n->loops[n->nloops] = l;
        n->ext[n->nloops++] = hi - lo;
        Node *next = NULL;
        for (int i = l->u.loop.body.n - 1; i >= 0; i--)
            if (l->u.loop.body.v[i]->kind == N_LOOP) {
                next = l->u.loop.body.v[i];
                break;
            }
        l = next;
    }
    n->nspatial = n->nloops;
    if (n->red)
        for (int i = 0; i < n->nloops; i++) {
            bool in_idx = false;
            for (int d = 0; d < n->red->u.stmt.buf->rank; d++)
                in_idx |= ir_expr_uses_var(n->red->u.stmt.idx[d], n->loops[i]->u.loop.var);
            if (!in_idx) {
                n->nspatial = i;
                break;
            }
        }
    return n->nloops > 0;
}

static const char *lname(const Nest *n, int i)
{
    return n->loops[i]->u.loop.var->name;
}

/* Whether the nest under n holds a guard (a `where` mask lowering left in place). */
static bool has_guard(const Node *n)
{
    if (n->kind == N_IF)
        return true;
    const NodeList *b = n->kind == N_LOOP ? &n->u.loop.body : NULL;
    for (int i = 0; b && i < b->n; i++)
        if (has_guard(b->v[i]))
            return true;
    return false;
}

/* A load in e of rank >= 2 whose last subscript moves with `a` and not with `b`
 * while another subscript moves with `b`: a read across the rows that `b` walks. */
static bool load_across(const Expr *e, const Var *a, const Var *b)
{
    if (!e)
        return false;
    if (e->kind == IE_LOAD && e->u.load.buf->rank >= 2) {
        int r = e->u.load.buf->rank;
        const Expr *last = e->u.load.idx[r - 1];
        bool other = false;
        for (int d = 0; d < r - 1; d++)
            other |= ir_expr_uses_var(e->u.load.idx[d], b);
        if (other && ir_expr_uses_var(last, a) && !ir_expr_uses_var(last, b))
            return true;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        if (load_across(e->args[i], a, b))
            return true;
    return false;
}

/* The highest rank of a load in e. */
static int max_load_rank(const Expr *e)
{
    if (!e)
        return 0;
    int r = e->kind == IE_LOAD ? e->u.load.buf->rank : 0;
    for (int i = 0; i < ir_expr_arity(e->kind); i++) {
        int q = max_load_rank(e->args[i]);
        r = q > r ? q : r;
    }
    return r;
}

/* Some load of rank `rank` in e whose last subscript moves with v and not with w. */
static bool load_along(const Expr *e, int rank, const Var *v, const Var *w)
{
    if (!e)
        return false;
    if (e->kind == IE_LOAD && e->u.load.buf->rank == rank && rank > 0) {
        const Expr *last = e->u.load.idx[e->u.load.buf->rank - 1];
        if (ir_expr_uses_var(last, v) && !ir_expr_uses_var(last, w))
            return true;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        if (load_along(e->args[i], rank, v, w))
            return true;
    return false;
}

/* An elementwise nest that transposes: its one statement reads an input
 * contiguous along the second-innermost loop while it stores along the innermost
 * (Y[c, r] = X[r, c], NCHW -> NHWC). */
static bool transposing(const Nest *n)
{
    if (n->red || n->nloops < 2)
        return false;
    const NodeList *body = &n->loops[n->nloops - 1]->u.loop.body;
    if (body->n != 1 || body->v[0]->kind != N_STMT)
        return false;
    return load_across(body->v[0]->u.stmt.value, n->loops[n->nloops - 2]->u.loop.var,
                       n->loops[n->nloops - 1]->u.loop.var);
}

/* A reduction nest whose innermost loop holds the reduction statement alone (not a
 * scan, whose running value is also stored at every step). */
static bool pure_reduction(const Nest *n)
{
    if (!n->red || n->nspatial == n->nloops)
        return false;
    const NodeList *body = &n->loops[n->nloops - 1]->u.loop.body;
    return body->n == 1 && body->v[0] == n->red;
}

/* A column reduction: the reduction loops come after every output loop, and of the
 * operands of the highest rank (the large ones: A of Aᵀ·x, not x) none is
 * contiguous along the innermost reduction loop while one is along the last output
 * loop (X[r, c] summed over r; A[k, i] * x[k]).  Its contiguous direction is the
 * output's, so that is the one to vectorize. */
static bool column_reduction(const Nest *n)
{
    if (!pure_reduction(n) || n->nspatial < 1)
        return false;
    const Var *vb = n->loops[n->nspatial - 1]->u.loop.var, *vk = n->loops[n->nloops - 1]->u.loop.var;
    const Expr *val = n->red->u.stmt.value;
    int rank = max_load_rank(val);
    return load_along(val, rank, vb, vk) && !load_along(val, rank, vk, vb);
}

/* Tile sizes for an extent: powers of two from lo to hi that divide it (plus the
 * extent itself when it is small); when none divides, the plain powers of two
 * (their tails are guarded). */
static int tile_cands(int64_t ext, int lo, int hi, int64_t *out)
{
    int n = 0;
    for (int t = lo; t <= hi; t *= 2)
        if (t < ext && ext % t == 0)
            out[n++] = t;
    if (ext <= hi && n < 8)
        out[n++] = ext;
    if (n == 0)
        for (int t = lo; t <= hi && t < ext; t *= 2)
            out[n++] = t;
    return n;
}

static int64_t floor_pow2_rules(int64_t x)
{
    int64_t p = 1;
    while (p * 2 <= x)
        p *= 2;
    return p;
}

/* Vector lengths for an extent: 1, 2 and 4 SIMD registers that divide it. */
static int vec_cands(int64_t ext, int lanes, int64_t *out)
{
    int n = 0;
    for (int m = 1; m <= 4; m *= 2)
        if (ext % (lanes * m) == 0)
            out[n++] = lanes * m;
    return n;
}

static int vec_cands_guarded(int64_t ext, int lanes, int first, int64_t *out);

/* v first among the n candidates of c (moved there, or inserted when absent and
 * there is room): the parameter's default, the candidate measured first. */
static void put_first(int64_t *c, int *n, int cap, int64_t v)
{
    int at = -1;
    for (int i = 0; i < *n; i++)
        if (c[i] == v)
            at = i;
    if (at < 0) {
        if (*n == cap)
            (*n)--;
        at = (*n)++;
    }
    memmove(c + 1, c, sizeof *c * (size_t)at);
    c[0] = v;
}

/* ---- templates ---- */

/* The load in the reduction's value that depends on the column loop b but not on
 * the row loop a: the operand whose panel is reused across rows (GEMM's B).  The
 * load, not only its buffer: one input may be read in both roles (X·Xᵀ). */
static const Expr *panel_operand(const Expr *e, const Var *a, const Var *b)
{
    if (!e)
        return NULL;
    if (e->kind == IE_LOAD) {
        bool ua = false, ub = false;
        for (int d = 0; d < e->u.load.buf->rank; d++) {
            ua |= ir_expr_uses_var(e->u.load.idx[d], a);
            ub |= ir_expr_uses_var(e->u.load.idx[d], b);
        }
        return ub && !ua && e->u.load.buf->kind == BUF_IN ? e : NULL;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++) {
        const Expr *r = panel_operand(e->args[i], a, b);
        if (r)
            return r;
    }
    return NULL;
}

/* ---- templates through the builder ----
 *
 * Each template below is a function of its parameter values: it reads the nest as
 * the rules saw it (NestInfo: names read off the lowered kernel, extents, operands)
 * and issues the transformations through the builder (tune/builder.h), holding the
 * loops and buffers each one hands back. */


/* Which dimension of the operand's load x the reduction loop k indexes, and which
 * the spatial loop s (each -1 when none or several do, or one subscript mixes them). */
static void operand_dims(const Expr *x, const Var *k, const Var *s, int *rank, int *kdim, int *sdim)
{
    const Buffer *b = x->u.load.buf;
    *rank = b->rank, *kdim = -1, *sdim = -1;
    for (int d = 0; x && d < b->rank; d++) {
        bool uk = ir_expr_uses_var(x->u.load.idx[d], k), us = ir_expr_uses_var(x->u.load.idx[d], s);
        if (uk && us) {
            *kdim = *sdim = -1;
            return;
        }
        if (uk)
            *kdim = *kdim < 0 ? d : -2;
        if (us)
            *sdim = *sdim < 0 ? d : -2;
    }
    if (*kdim < 0)
        *kdim = -1;
    if (*sdim < 0)
        *sdim = -1;
}

/* The last statement of the subtree n, in program order. */
static const Node *last_stmt(const Node *n)
{
    if (n->kind == N_STMT)
        return n;
    const NodeList *b = ir_body((Node *)n);
    for (int i = b ? b->n - 1 : -1; i >= 0; i--) {
        const Node *s = last_stmt(b->v[i]);
        if (s)
            return s;
    }
    return NULL;
}

static NestInfo *nest_info(const Kernel *k, const Nest *n, int threads, Arena *a)
{
    NestInfo *x = arena_alloc(a, sizeof *x);
    x->threads = threads;
    const Node *ls = last_stmt(n->top);
    if (ls) {
        const Buffer *w = ls->u.stmt.buf;
        int64_t row = 0;
        x->wr = arena_strdup(a, w->name), x->wr_t = w->dtype, x->wr_out = w->kind == BUF_OUT;
        if (w->rank > 0 && ir_eval_size(k, w->shape[w->rank - 1], &row))
            x->wr_row = row;
    }
    x->nloops = n->nloops;
    x->nspatial = n->nspatial;
    for (int i = 0; i < n->nloops; i++) {
        x->loop[i] = arena_strdup(a, lname(n, i));
        x->ext[i] = n->ext[i];
    }
    x->red = n->red != NULL;
    if (!n->red)
        return x;
    x->mul = n->red->u.stmt.value->kind == IE_MUL;
    x->quot = n->red->u.stmt.value->kind == IE_DIV;
    /* the transformation's own legality decides */
    x->scaled = (x->mul || x->quot) && n->nloops > n->nspatial && rules_factor_out_applies(k, x->loop[n->nspatial]);
    /* a product divided by what the sum does not move (X·Xᵀ / F): once factor_out
     * takes the divisor out of the sum (contraction_b), a product like any other;
     * without, no template took it and it ran as three scalar loops (999 x 999 x 257,
     * one thread, Zen 3: 267 ms against 6 for the product alone) */
    if (x->quot && x->scaled)
        x->mul = true;
    x->out = arena_strdup(a, n->red->u.stmt.buf->name);
    x->out_t = n->red->u.stmt.buf->dtype;
    if (n->nspatial >= 2) {
        const Var *va = n->loops[n->nspatial - 2]->u.loop.var, *vb = n->loops[n->nspatial - 1]->u.loop.var;
        const Expr *lb = panel_operand(n->red->u.stmt.value, va, vb), *la = panel_operand(n->red->u.stmt.value, vb, va);
        const Buffer *pb = lb ? lb->u.load.buf : NULL, *pa = la ? la->u.load.buf : NULL;
        if (pb)
            x->pb = arena_strdup(a, pb->name), x->pb_t = pb->dtype, x->pb_in = pb->kind == BUF_IN;
        if (pa)
            x->pa = arena_strdup(a, pa->name), x->pa_t = pa->dtype, x->pa_in = pa->kind == BUF_IN;
        x->self = pa && pa == pb;
        const Var *vk = n->nloops == n->nspatial + 1 ? n->loops[n->nloops - 1]->u.loop.var : NULL;
        x->pa_kdim = x->pa_sdim = x->pb_kdim = x->pb_sdim = -1;
        if (la && vk)
            operand_dims(la, vk, va, &x->pa_rank, &x->pa_kdim, &x->pa_sdim);
        if (lb && vk)
            operand_dims(lb, vk, vb, &x->pb_rank, &x->pb_kdim, &x->pb_sdim);
    }
    return x;
}

/* The loop to run on threads: the outermost with an iteration for every thread
 * (a batch of one is no parallelism), among the first `below` loops of the chain. */
static int par_loop_info(const NestInfo *n, int below)
{
    for (int i = 0; i < below && i < n->nloops; i++)
        if (n->ext[i] >= n->threads)
            return i;
    return 0;
}

/* Elementwise nest: the innermost loop split by a vector length and vectorized, the
 * outermost parallel. */
static void elementwise_b(Builder *b, const NestInfo *n, int lanes)
{
    int in = n->nloops - 1;
    SLoop *l = bld_loop(b, n->loop[in]), *lo, *li;
    int64_t cv[4];
    int nv = vec_cands(n->ext[in], lanes, cv);
    /* no whole register divides the row: guarded ones, the last masked (a GELU
     * epilogue on 333 x 1001 ran its erf a lane at a time: the Linear+GELU took
     * 14.2 ms on a Zen 3, 10.8 vectorised, the product alone 9.4) */
    if (!nv && n->ext[in] >= lanes)
        nv = vec_cands_guarded(n->ext[in], lanes, 1, cv);
    char pn[80];
    snprintf(pn, sizeof pn, "vec_%s", n->loop[in]);
    for (char *p = pn; *p; p++)
        if (*p == '.')
            *p = '_';
    if (nv) {
        bld_split(b, l, bld_param(b, pn, cv, nv), &lo, &li);
        bld_vectorize(b, li);
    }
    if (n->nloops > 1)
        bld_parallel(b, bld_loop(b, n->loop[par_loop_info(n, n->nloops - 1)]));
    else if (nv)
        bld_parallel(b, lo);
}

/* A parameter name from a loop name into buf: `acc.i` -> `tile_acc_i`. */
static const char *pn(char *buf, size_t cap, const char *prefix, const char *loop)
{
    snprintf(buf, cap, "%s%s", prefix, loop);
    for (char *p = buf; *p; p++)
        if (*p == '.')
            *p = '_';
    return buf;
}

/* The contraction's reduction loops after the spatial ones, from `from` up to the
 * last (excluded when !last). */
static int red_loops(Builder *b, const NestInfo *n, bool last, SLoop **out)
{
    int m = 0;
    for (int i = n->nspatial; i < n->nloops - (last ? 0 : 1); i++)
        out[m++] = bld_loop(b, n->loop[i]);
    return m;
}

/* A staged buffer stored with dimension `last` moved innermost (every other
 * dimension keeps its order): the packed operand read along it contiguously. */
static void layout_last(Builder *b, SBuf *s, int rank, int last)
{
    if (last == rank - 1)
        return;
    int perm[8], np = 0;
    for (int d = 0; d < rank; d++)
        if (d != last)
            perm[np++] = d;
    perm[np++] = last;
    bld_layout(b, s, perm, np);
}

/* A's block packed at loop `at` as the micro-kernel reads it: the reduction's
 * dimension `last` innermost (its MR rows then stream in order), rows padded by a
 * cache line (MR rows a row apart then fall in different L1 sets whatever the row
 * length), and run on threads when `par` (the loop it sits in is not parallel
 * itself).  The copy is vectorised where it reads and writes along the same
 * dimension; a transposing one has its outer loop in blocks of 8, which pass
 * transpose moves through registers 8 x 8 at a time (cpu_transpose_blocks.c). */
static void pack_rows(Builder *b, const char *buf, DType t, int rank, int last, int outer, SLoop *at, int vec,
                      bool par, SLoop *use)
{
    SBuf *s = bld_cache_using(b, bld_buf(b, buf), at, use);
    if (!s || rank > 8 || s->nnest < 1 || s->rank[0] != rank)
        return;
    SLoop *cl = s->nest[0][last], *co = s->nest[0][outer], *o, *i;
    layout_last(b, s, rank, last);
    bld_padding(b, s, sv(64 / dtype_bytes(t)));
    if (last == rank - 1) {
        if (bld_split(b, cl, sv(vec), &o, &i))
            bld_vectorize(b, i);
    } else if (bld_split(b, co, sv(8), &o, &i))
        co = o;
    if (par)
        bld_parallel(b, co);
}

/* B's block packed at loop `at` in the micro-kernel's strips (BLIS's packed
 * panel): the column dimension `sdim` folded by NR and the block stored as
 * [.., columns / NR, reduction, NR], so each strip of NR columns the micro-kernel
 * reads for KC steps is one contiguous run (KC x NR).  As a KC x N block with
 * padded rows the strip's rows lay N apart, one page each: 1037x768x511 on a Zen 3
 * EPYC, one thread, 0.84 of OpenBLAS against 1.01 as strips.  The copy runs on
 * threads over its outer loop: vectorised along the columns where B's rows hold
 * them, else (A·Bᵀ) a transposing copy, the strips' NR columns in blocks of 8. */
static void pack_panel(Builder *b, const NestInfo *n, SLoop *at, int nr, bool par, SLoop *use)
{
    int rank = n->pb_rank, kd = n->pb_kdim, sd = n->pb_sdim;
    /* Packed by the threads together (the row blocks on threads), the panel is one
     * buffer they share, made in the caller's frame: where it may pass half the
     * private budget (KC up to 512 rows of every column), it goes to the heap
     * instead.  On the stack, 1037 x 769 x 511's 1.7 MB panel made the tuner prune
     * the default schedule itself, and it searched only slower templates (two
     * threads, Xeon model 207: 7.4 ms tuned against 3.3 by default). */
    int64_t kc = n->ext[n->nloops - 1] < 512 ? n->ext[n->nloops - 1] : 512;
    int64_t cols = (n->ext[n->nspatial - 1] + nr - 1) / nr * nr;
    bool heap = par && kc * cols * dtype_bytes(n->pb_t) > BLOCKING_LOCAL_MAX / 2;
    SBuf *s = bld_cache_using_in(b, bld_buf(b, n->pb), at, use, heap ? "global" : NULL);
    if (!s || rank > 7 || s->nnest < 1 || s->rank[0] != rank)
        return;
    SLoop *cs = s->nest[0][sd], *ck = s->nest[0][kd], *so, *si;
    /* the last strip's columns, when NR does not divide them, copied by a loop of
     * their own: the whole strips' copy keeps constant bounds (a vector copy, or
     * transposing blocks) */
    bool whole = n->ext[n->nspatial - 1] % nr == 0;
    if (!(whole ? bld_split(b, cs, sv(nr), &so, &si)
                : bld_split_tail(b, cs, sv(nr), (SVal){0, "peel", -1}, &so, &si)) ||
        !bld_fold(b, s, sd, nr))
        return;
    /* after the fold: the dimensions in order with sd as (sd, sd + 1); the new
     * order keeps the others as they were, then strip, reduction, column */
    int perm[8], np = 0, kf = kd > sd ? kd + 1 : kd;
    for (int d = 0; d <= rank; d++)
        if (d != sd && d != sd + 1 && d != kf)
            perm[np++] = d;
    perm[np++] = sd;
    perm[np++] = kf;
    perm[np++] = sd + 1;
    bld_layout(b, s, perm, np);
    if (sd == rank - 1)
        bld_vectorize(b, si);
    if (par)
        bld_parallel(b, sd == rank - 1 ? ck : so);
}

/* The operands of a contraction packed in blocks: B (the panel operand) once per
 * reduction panel ko, whole along the columns (of the thread's column block), in
 * strips (pack_panel); A once per row block at `ablk` (ko itself when the rows are
 * few), reduction innermost (pack_rows).  The copies run on threads where they sit
 * outside the parallel loop: not at all when it is outside them (`outer_par`: the
 * column blocks, or a batch loop), B's when the row blocks are (rows_par). */
static void pack_blocks(Builder *b, const NestInfo *n, SLoop *ko, SLoop *ablk, int nr, bool rows_par, bool outer_par,
                        SLoop *arow, SLoop *bcol)
{
    /* one buffer in both roles: each copy takes the reads its role's loop indexes */
    pack_panel(b, n, ko, nr, !outer_par, n->self ? bcol : NULL);
    if (n->pa && n->pa_in && n->pa_kdim >= 0 && n->pa_sdim >= 0) {
        int ao = n->pa_kdim < n->pa_sdim ? n->pa_kdim : n->pa_sdim;
        pack_rows(b, n->pa, n->pa_t, n->pa_rank, n->pa_kdim, ao, ablk, nr, !outer_par && (!rows_par || ablk == ko),
                  n->self ? arow : NULL);
    }
}

/* distribute(l): *first the copy the reduction keeps; with `last`, the copy of a
 * statement after the reduction (factor_out's scaling) in *tail, NULL when there is
 * none.  False when distribute made no copy where one was needed. */
static bool distribute_last(Builder *b, SLoop *l, bool last, SLoop **first, SLoop **tail)
{
    *tail = NULL;
    if (!last) {
        bld_distribute(b, l, first);
        return true;
    }
    SLoop *cp[4];
    int nc = bld_distribute_all(b, l, cp, 4);
    if (nc < 1)
        return false;
    *first = cp[0];
    *tail = nc > 1 ? cp[nc - 1] : NULL;
    return true;
}

/* Rows of a product few enough for one register tile of all of them, which the
 * unpacked micro-kernel then leads with. */
enum { THIN_ROWS = 8 };

static bool few_rows(const NestInfo *n)
{
    return n->nspatial >= 2 && n->ext[n->nspatial - 2] <= THIN_ROWS;
}

/* Contraction nest, register-blocked micro-kernel (variants 0: with the panel
 * operand packed, 1: without, 3: initialised per block of MR rows (short
 * reductions), 4: variant 0 with the MC blocks outermost and parallel):
 *   distribute(b) reorder(R.., b1)   the initialisation leaves; b1 moves inside the
 *   distribute(a)                    reduction loops, then a1 leaves the init's a
 *   split a1 by MR, b1 by NR, the last reduction loop by KC (long ones only)
 *   reorder(ko, b1o, a1o, R.., ki, a1i, b1i)
 *   cache(PANEL, b1o)                a KC x NR panel of B, packed once per b1o
 *   cache(OUT, a1o)                  the MR x NR tile of C: registers after unrolling
 *   unroll(a1i) vectorize(b1i) parallel(one of the outer loops)
 * Variant 2 is the fallback without distribute: tiles of dot products, the
 * reduction vectorized through rfactor.  False when the variant does not fit. */
static bool contraction_b(Builder *b, const NestInfo *n, int variant, int lanes, int threads, const Target *target)
{
    if (n->nspatial < 2 || !n->red || n->nspatial == n->nloops)
        return false;
    int ia = n->nspatial - 2, ib = n->nspatial - 1, ir = n->nloops - 1;
    /* the machine's blocking (tune/blocking.c): each parameter's first candidate */
    Blocking bk;
    /* the register tile holds accumulators of the result's dtype: bf16 operands summed
     * in f32 are blocked as f32 (blocked as 2-byte elements, NR came out 128, which no
     * vector loop takes, and every micro-kernel template of a bf16 GEMM was dropped:
     * 2048^3 ran unscheduled, 41 s) */
    int eb = n->pb ? dtype_bytes(n->pb_t) : dtype_bytes(n->out_t);
    if (dtype_bytes(n->out_t) > eb)
        eb = dtype_bytes(n->out_t);
    /* bf16 operands summed in f32 on a target with the BF16 dot product: the panels
     * hold the 2-byte operands in pairs (passes/cpu_dot.c), so KC and MC are sized by
     * 2 bytes (KC 512 where f32 has 256: 2048^3 one thread 94 -> 86 ms, the panel
     * packed half as often) while the register tile stays f32 */
    bool pairs = target && target->dot_bf16 && n->pb && n->pa && n->pb_t == DT_BF16 && n->pa_t == DT_BF16 &&
                 n->out_t == DT_F32;
    blocking_for_target_mixed(target, eb, pairs ? 2 : eb, n->ext[ia], n->ext[ib], n->ext[ir], &bk);
    if (bk.nr % lanes)
        bk.nr = lanes; /* the rules' lanes rule (an f16 out, a GPU-sized guess): stay whole registers */
    char pm[80], pnr[80], pk[80], pp[80], pt[80], pb[80], pc[80];
    pn(pm, sizeof pm, "mr_", n->loop[ia]);
    pn(pnr, sizeof pnr, "nr_", n->loop[ib]);
    pn(pk, sizeof pk, "kc_", n->loop[ir]);
    pn(pp, sizeof pp, "par_", n->loop[ib]);
    int64_t cm[8], cn[8], ck[8];
    int nm = 0, nn = 0, nk = 0;
    SLoop *a = bld_loop(b, n->loop[ia]), *bn = bld_loop(b, n->loop[ib]), *r = bld_loop(b, n->loop[ir]);
    SLoop *outer = NULL; /* an output loop outside the tile with work for every thread */
    int iouter = -1;
    for (int i = 0; i < ia && iouter < 0; i++)
        if (n->ext[i] >= threads)
            iouter = i;
    if (variant == 2) {
        /* dot-product tiles */
        nm = tile_cands(n->ext[ia], 2, 64, cm);
        nn = tile_cands(n->ext[ib], 4, 256, cn);
        nk = n->ext[ir] >= lanes ? vec_cands(n->ext[ir], lanes, ck) : 0;
        SVal mr = bld_param(b, pm, cm, nm), nr = bld_param(b, pnr, cn, nn);
        SLoop *t[4];
        bld_tile(b, a, bn, mr, nr, NULL, t);
        if (nk) {
            SLoop *ro, *ri;
            bld_split(b, r, bld_param(b, pk, ck, nk), &ro, &ri);
            bld_rfactor(b, ri);
            bld_vectorize(b, ri);
        }
        if (iouter >= 0)
            outer = bld_loop(b, n->loop[iouter]);
        bld_parallel(b, bld_param_loop(b, pp, (SLoop *const[]){outer, t[0]}, 2));
        return true;
    }
    bool rows_outer = variant == 4;
    if ((variant == 0 || rows_outer) && !n->pb)
        return false;
    if (rows_outer && n->ext[ia] < 256)
        return false;
    if (variant == 3 && n->ext[ir] > 256)
        return false;
    /* MR: rows of the register tile; NR: whole SIMD registers of columns.  Rows no
     * more than THIN_ROWS (nor than the model's tile has accumulator registers) are
     * one tile of all of them in the unpacked kernel (a Linear layer on a batch of
     * 7: the model's 6 rows left a tile of one row doing six rows' work); the
     * packed kernels keep the model's tile, whose two registers of columns measured
     * faster on B[k, j] (0.55 against 1.2 ms) */
    int64_t acc = (int64_t)bk.mr * (bk.nr / lanes); /* the model's tile's accumulator registers */
    bool thin = variant == 1 && few_rows(n) && n->ext[ia] <= acc;
    if (thin)
        cm[nm++] = n->ext[ia];
    for (int m = 2; m <= 8; m++)
        if (m != 5 && m != 7 && n->ext[ia] % m == 0 && m < n->ext[ia])
            cm[nm++] = m;
    if (nm == 0)
        for (int m = 2; m <= 8; m *= 2)
            cm[nm++] = m;
    for (int m = 1; m <= 4; m++)
        if (n->ext[ib] % (lanes * m) == 0 && m != 3)
            cn[nn++] = lanes * m;
    if (!nn)
        cn[nn++] = lanes;
    /* the model's tile first, even when it leaves a tail: MR's is peeled or guarded
     * below, NR's guarded (the code generator versions the tile loops, so full
     * tiles run unguarded; at 1037x769x511 NR 64 with a guarded tail measured 0.81x
     * OpenBLAS against 0.39-0.6x for the one register that nothing else divides) */
    if (thin) {
        /* all the rows, and as many registers of columns as the model's tile has
         * accumulators for (AVX2's 6 x 2 registers: 7 rows get one) */
        int64_t regs = acc / n->ext[ia];
        put_first(cn, &nn, 8, lanes * (regs >= 4 ? 4 : regs >= 2 ? 2 : 1));
    } else {
        put_first(cm, &nm, 8, bk.mr);
        if (n->ext[ib] >= bk.nr)
            put_first(cn, &nn, 8, bk.nr);
    }
    /* KC: the reduction panel; only long reductions are split */
    bool split_k = n->ext[ir] >= 128;
    if (split_k) {
        for (int k = 64; k <= 512; k *= 2)
            if (n->ext[ir] % k == 0 && k < n->ext[ir])
                ck[nk++] = k;
        if (n->ext[ir] <= 512)
            ck[nk++] = n->ext[ir];
        /* no power of two divides a long reduction (K = 1000): the divisor in
         * [64, 512] nearest the model's KC (250), rather than one panel of all K,
         * whose packed block would not fit a thread's stack (below) */
        int64_t kdiv = 0;
        for (int64_t k = 64; nk == 0 && k <= 512; k++)
            if (n->ext[ir] % k == 0 && (kdiv == 0 || llabs(k - bk.kc) <= llabs(kdiv - bk.kc)))
                kdiv = k;
        if (kdiv)
            ck[nk++] = kdiv;
        split_k = nk > 0;
        /* the model's KC (where it divides), or the whole reduction as one panel
         * when it is shorter */
        if (split_k && bk.kc < n->ext[ir] && n->ext[ir] % bk.kc == 0)
            put_first(ck, &nk, 8, bk.kc);
        else if (split_k && bk.kc >= n->ext[ir] && n->ext[ir] <= 512)
            put_first(ck, &nk, 8, n->ext[ir]);
    }
    SBuf *out = bld_buf(b, n->out);
    SLoop *R[16], *b1, *a1;
    int nr_ = red_loops(b, n, true, R);
    /* A sum whose terms carry a factor the reduction does not move (attention's
     * scores, Q·Kᵀ·0.125): the factor applied once per element after the sum, so
     * the micro-kernel is the plain product, one fused multiply-add a term instead
     * of two operations (H = 32, S = 256, D = 64, one thread, Zen 3: 7.3 -> 4.4 ms).
     * The scaling leaves as a nest of its own (distribute), vectorized and on
     * threads below.  Not for the per-row-block initialisation (variant 3), whose
     * distribute inside the row blocks would split it off there. */
    SLoop *scale_j = NULL, *scale_i = NULL;
    bool scale = n->scaled && variant != 3 && bld_factor_out(b, R[0]);
    if (!distribute_last(b, bn, scale, &b1, &scale_j))
        return false;
    R[nr_] = b1;
    bld_reorder(b, R, nr_ + 1);
    if (variant == 3) {
        /* Short reductions: the initialisation stays with each block of MR rows,
         * so C is written once from cache, not zeroed in a pass of its own. */
        /* the row blocks are distributed, which a guarded tail (the model's 6 rows
         * on AVX2 against M = 256) would not allow: only MRs that divide the rows */
        int64_t cm3[8];
        int nm3 = 0;
        for (int i = 0; i < nm; i++)
            if (n->ext[ia] % cm[i] == 0)
                cm3[nm3++] = cm[i];
        if (nm3 == 0)
            return false;
        SVal mr = bld_param(b, pm, cm3, nm3), nr = bld_param(b, pnr, cn, nn);
        SLoop *ao, *ai, *ai1, *b1o, *b1i;
        bld_split(b, a, mr, &ao, &ai);
        bld_distribute(b, ai, &ai1);
        bld_split(b, b1, nr, &b1o, &b1i);
        SLoop *ord[20];
        int no = 0;
        ord[no++] = b1o;
        no += red_loops(b, n, true, ord + no);
        ord[no++] = ai1;
        ord[no++] = b1i;
        bld_reorder(b, ord, no);
        bld_cache(b, out, b1o, NULL, NULL);
        bld_unroll(b, ai1);
        bld_vectorize(b, b1i);
        for (int i = n->nspatial; i < n->nloops - 1; i++)
            if (n->ext[i] <= 8)
                bld_unroll(b, bld_loop(b, n->loop[i]));
        if (iouter >= 0)
            outer = bld_loop(b, n->loop[iouter]);
        bld_parallel(b, bld_param_loop(b, pp, (SLoop *const[]){outer, ao}, 2));
        return true;
    }
    /* Both operands packed in blocks where each is a 2-D box of one reduction and
     * one output loop (GotoBLAS/BLIS): B's KC x N block once per reduction panel,
     * A's MC x KC block once per row block (pack_blocks).  Packed per column strip
     * instead, B was copied again for every row block, its KC rows N apart, from as
     * many pages and (N = 1024) the same cache sets, and A was read in place: Zen 3
     * AVX2, seven shapes against OpenBLAS in one process, one thread, A·B 0.815 ->
     * 0.853, Aᵀ·B 0.755 -> 0.889 (docs/autotune.md, "The blocking model").  A short
     * reduction is packed too where rows and columns are many (each packed element
     * then serves hundreds of products: 1024x1024x64 0.80 -> 0.93), in a loop of one
     * iteration to pack at.  bf16 pairs summed by vdpbf16ps keep the strips, which
     * pass dot-pairs lays out. */
    bool blocks = (variant == 0 || rows_outer) && (split_k || (n->ext[ia] >= 256 && n->ext[ib] >= 256)) && !pairs &&
                  n->nloops == n->nspatial + 1 && n->pb_kdim >= 0 && n->pb_sdim >= 0;
    if (!distribute_last(b, a, scale_j != NULL, &a1, &scale_i))
        return false;
    SVal mr = bld_param(b, pm, cm, nm), nr = bld_param(b, pnr, cn, nn);
    /* Rows that no MR divides (M = 127): the tail either guarded inside the
     * micro-kernel or peeled into a loop of its own; the tuner picks. */
    bool tail = false;
    for (int i = 0; i < nm; i++)
        tail |= n->ext[ia] % cm[i] != 0;
    SLoop *a1o, *a1i, *b1o, *b1i, *ko = NULL, *ki = r;
    if (tail)
        bld_split_tail(b, a1, mr, bld_param_names(b, pn(pt, sizeof pt, "tail_", n->loop[ia]),
                                                  (const char *const[]){"guard", "peel"}, 2), &a1o, &a1i);
    else
        bld_split(b, a1, mr, &a1o, &a1i);
    if (blocks && !split_k)
        ck[0] = n->ext[ir], nk = 1;
    /* the panel's steps at the defaults: KC, or the whole reduction unsplit */
    int64_t kc0 = nk > 0 ? ck[0] : n->ext[ir];
    /* MC: blocks of micro-tiles whose A rows stay in L2 while the B panel is
     * reused across them (many rows only).  Micro-tiles per row block: the
     * model's MC / MR first.  With a short panel C's tiles dominate: each
     * micro-kernel loads and stores an MR x NR tile for only KC steps, and a strip
     * walks down MC / MR of them, each row a page apart once rows reach 4 KiB.  At
     * most KC / 16 tiles a block: 1024x1024x64, one thread, Zen 3, 0.81 of OpenBLAS
     * with 64 tiles, 0.90 with 16, 0.93 with 4; at KC 256 the 16 L2 gives (0.93,
     * 144 rows 0.89) */
    bool mc = n->ext[ia] >= 256;
    int64_t cb[6] = {8, 16, 32, 64};
    int nb = 4;
    if (mc) {
        int64_t mb = (blocks ? bk.mc : bk.mc_strip) / (bk.mr > 0 ? bk.mr : 1);
        if (blocks && mb > kc0 / 16)
            mb = kc0 / 16;
        if (mb >= 2)
            put_first(cb, &nb, 6, floor_pow2_rules(mb));
    }
    /* The columns in blocks (jc), B's block packed once per block and panel.  The
     * packed blocks are private buffers, arrays on the stack of the thread that
     * runs them, so B's (KC x NC) and A's (MC x KC, padded) together stay within
     * BLOCKING_LOCAL_MAX, which the tuner also holds its candidates to (the
     * default of 1000^3 had packed 4 MB, and the tuner pruned it).  On several
     * threads the blocks are dealt out first, as many as a multiple of the
     * threads, each thread packing its own B block and its own copy of A's: the
     * threads meet once a call.  With the copies and the column strips on threads
     * inside the row blocks they met three times a row block (Zen 3 EPYC, two
     * threads, a neighbour compiling on the other core: 256³ 16 against 40 GFLOP/s
     * before the blocks). */
    SLoop *jc = NULL;
    int64_t nstrips = (n->ext[ib] + bk.nr - 1) / bk.nr;
    if (blocks && variant == 0 && iouter < 0) {
        /* A's block: MC rows, or every row (rounded to MR) where it is packed per panel */
        int64_t sb = dtype_bytes(n->pb_t), sa = n->pa ? dtype_bytes(n->pa_t) : 4;
        int64_t arows = mc ? cb[0] * bk.mr : (n->ext[ia] + bk.mr - 1) / bk.mr * bk.mr;
        int64_t room = BLOCKING_LOCAL_MAX - arows * (kc0 + 64 / sa) * sa - (int64_t)bk.mr * bk.nr * eb;
        int64_t cap = room / (kc0 * sb * bk.nr);
        if (cap < 1)
            cap = 1;
        int64_t nblk = (nstrips + cap - 1) / cap, step = threads > 1 && nstrips >= 2 * threads ? threads : 1;
        if (nblk < step)
            nblk = step;
        nblk = (nblk + step - 1) / step * step;
        /* a count that divides the strips where one does, so no column block has a
         * tail (nn.Linear 16 x 4096 x 4096, one thread, Zen 3: 0.48-0.54 of OpenBLAS
         * in blocks of 43 strips, 0.98-1.14 in blocks of 32) */
        for (int64_t d = nblk; d <= nstrips && d <= 4 * nblk; d += step)
            if (nstrips % d == 0) {
                nblk = d;
                break;
            }
        /* The blocks are dealt out to the threads in runs of whole blocks (the
         * pool's chunks), so where the strips do not share out one thread's run
         * holds the short block and the others wait (13 strips, blocks of 4, two
         * threads: 8 strips against 5).  Where the row blocks share out better,
         * this template gives way to variant 4's, rows on threads over one packed
         * B (1037x769x511, two threads, Xeon model 207: 4.13-4.25 -> 3.59-3.68 ms,
         * OpenBLAS 3.13-3.29). */
        if (threads > 1 && nblk > 1 && n->ext[ia] >= 256 && mc) {
            int64_t s = (nstrips + nblk - 1) / nblk, runs = (nstrips + s - 1) / s;
            int64_t rb = cb[0] * bk.mr, nrb = (n->ext[ia] + rb - 1) / rb;
            double col = (double)nstrips / (double)(threads * ((runs + threads - 1) / threads * s));
            double row = (double)n->ext[ia] / (double)(threads * ((nrb + threads - 1) / threads * rb));
            if (row > col + 0.05)
                return false;
        }
        if (nblk > 1) {
            int64_t cnc[1] = {(nstrips + nblk - 1) / nblk * bk.nr};
            SLoop *b1r;
            if (bld_split(b, b1, bld_param(b, pn(pc, sizeof pc, "nc_", n->loop[ib]), cnc, 1), &jc, &b1r))
                b1 = b1r;
        }
    }
    bld_split(b, b1, nr, &b1o, &b1i);
    if (split_k || blocks)
        bld_split(b, r, bld_param(b, pk, ck, nk), &ko, &ki);
    SLoop *rows = a1o, *a1oo = NULL;
    if (mc)
        bld_split(b, a1o, bld_param(b, pn(pb, sizeof pb, "mb_", n->loop[ia]), cb, nb), &a1oo, &rows);
    /* B read along its rows (A·Bᵀ, Aᵀ·Bᵀ) is packed by a transposing copy, scalar
     * and several times dearer than A·B's: the panel loop then goes outside the row
     * blocks, so each panel is packed once instead of once per block (1037×769×511,
     * one thread, EPYC AVX-512: A·Bᵀ 0.86 -> 0.96 of OpenBLAS, Aᵀ·Bᵀ 0.75 -> 0.88;
     * A·B, whose copy is a vector copy, keeps the blocks outside: 1.05 -> 1.01 at
     * 1024³ the other way) */
    bool bt = n->pb_sdim >= 0 && n->pb_sdim != n->pb_rank - 1;
    bool panel_first = bt && mc && variant == 0 && !rows_outer && !blocks;
    SLoop *ord[24];
    int no = 0;
    if (rows_outer && !blocks)
        ord[no++] = a1oo;
    if (jc)
        ord[no++] = jc;
    if (ko)
        ord[no++] = ko;
    if (mc && (blocks || (!rows_outer && !panel_first)))
        ord[no++] = a1oo;
    ord[no++] = b1o;
    if (panel_first)
        ord[no++] = a1oo;
    ord[no++] = rows;
    no += red_loops(b, n, false, ord + no);
    ord[no++] = ki;
    ord[no++] = a1i;
    ord[no++] = b1i;
    bld_reorder(b, ord, no);
    if (blocks)
        pack_blocks(b, n, ko, mc ? a1oo : ko, bk.nr, rows_outer, jc != NULL || iouter >= 0, a1i, b1i);
    else if (variant == 0 || rows_outer) {
        SBuf *pk = bld_cache_using(b, bld_buf(b, n->pb), b1o, n->self ? b1i : NULL);
        /* B read along its rows (A·Bᵀ, Aᵀ·Bᵀ): the packed panel is stored with the
         * column dimension last, so the micro-kernel's vector loop reads it
         * contiguously whatever B's layout */
        if (pk && bt && n->pb_rank <= 8)
            layout_last(b, pk, n->pb_rank, n->pb_sdim);
    }
    bld_cache(b, out, rows, NULL, NULL);
    /* Packed in blocks, the micro-kernel's only accesses outside the packed
     * operands are its C tile's MR rows, a page apart and (beyond L3) from memory:
     * the next tile is fetched while this one is computed, where a panel of 128
     * steps or more leaves the fetch time to land.  Zen 3 EPYC, one thread, seven
     * shapes against OpenBLAS, interleaved with the build before: A·B 0.820 ->
     * 0.884, Aᵀ·B 0.848 -> 0.877 (2048^3 0.76 -> 0.87; at K = 64 it measured 0.98
     * -> 0.83 and 0.94 -> 0.91, so short panels go without). */
    if (blocks && kc0 >= 128)
        bld_prefetch(b, out, rows, rows);
    bld_unroll(b, a1i);
    bld_vectorize(b, b1i);
    /* small window loops of a convolution: unrolled */
    for (int i = n->nspatial; i < n->nloops - 1; i++)
        if (n->ext[i] <= 8)
            bld_unroll(b, bld_loop(b, n->loop[i]));
    /* the scaling nest: whole registers along its rows (a guarded tail), its rows
     * on threads when no outer loop is */
    if (scale_j) {
        SLoop *so, *si;
        bool ok = n->ext[ib] % lanes == 0 ? bld_split(b, scale_j, sv(lanes), &so, &si)
                                          : bld_split_tail(b, scale_j, sv(lanes), (SVal){0, "guard", -1}, &so, &si);
        if (ok)
            bld_vectorize(b, si);
        if (scale_i && iouter < 0 && threads > 1)
            bld_parallel(b, scale_i);
    }
    /* The parallel loop: an outer output loop (batch, image, filter) that has work
     * for every thread, the column blocks, or the row blocks. */
    if (iouter >= 0)
        outer = bld_loop(b, n->loop[iouter]);
    if (rows_outer)
        bld_parallel(b, bld_param_loop(b, pp, (SLoop *const[]){outer, a1oo}, 2));
    else if (jc)
        bld_parallel(b, bld_param_loop(b, pp, (SLoop *const[]){jc, b1o, rows}, 3));
    else
        bld_parallel(b, bld_param_loop(b, pp, (SLoop *const[]){outer, b1o, rows}, 3));
    return true;
}

/* A direct NCHW convolution, read off the nest by conv_read:
 *   Y[n, f, y, x] = sum(c, r, s) X[n, c, ..y.., ..x..] * W[f, c, r, s]
 * (loops n, f, y, x, c, r, s in that order, as lowering makes them). */
typedef struct ConvCtx {
    const char *loop[7];   /* n f y x c r s */
    int64_t ext[7];
    const char *out, *w, *x;
    bool xpad;             /* X has pad(v): its box is copied once per image */
    int lanes, vregs, threads;
    int64_t l2;            /* a core's L2 bytes (blocking_caches) */
    int rows;              /* the register tile's output rows: 1 or 2 (conv_direct_b) */
    int64_t nv, xu;        /* the model's tile (conv_tile): NV vectors of channels by XU pixels */
    double cost;           /* its estimated cycles per output pixel and channel vector */
} ConvCtx;

/* Estimated cycles of one filter tap over a register tile of YU x XU pixels by NV
 * vectors of channels: YU * XU * NV FMAs on two pipes; YU * XU broadcasts, which on
 * AMD's Zen take an FP pipe beside the FMAs (so FMAs and broadcasts are charged to
 * three pipes: on Zen 3 a 2 x 6 x 1 tile measured 1.31 times the time of 1 x 6 x 2,
 * the same FMAs with half the broadcasts); and five cycles at least: an
 * accumulator's FMA waits four for the one before, and tiles of eight accumulators,
 * the bound in theory, measured no faster than a cycle more. */
static double conv_tap_cycles(int64_t yu, int64_t xu, int64_t nv)
{
    double fma = (double)(yu * xu * nv), bc = (double)(yu * xu);
    double c = fma / 2;
    if ((fma + bc) / 3 > c)
        c = (fma + bc) / 3;
    return c > 5 ? c : 5;
}

/* The cost of covering the Ho x Wo output with tiles of YU x XU (the edge tiles
 * smaller), per output pixel and channel vector, plus `loop` cycles a tile and tap
 * for the window loops around it.  Calibrated on Zen 3 against single-thread runs
 * (min times, ResNet-50's layers): at 7 x 7 it puts 2 x 7 x 1 first, as measured
 * (3.28 ms; it ties 1 x 7 x 1, 3.45, and 1 x 4 x 2, 3.7); at 56 x 56 it orders
 * 1 x 6 x 2 (2.67), 2 x 3 x 2 (2.74), 1 x 14 x 1 (3.3), 2 x 6 x 1 (3.5) as measured. */
static double conv_cover_cost(int64_t ho, int64_t wo, int64_t yu, int64_t xu, int64_t nv, double loop)
{
    double c = 0;
    for (int64_t y = 0; y < ho; y += yu)
        for (int64_t x = 0; x < wo; x += xu) {
            int64_t ty = ho - y < yu ? ho - y : yu, tx = wo - x < xu ? wo - x : xu;
            c += conv_tap_cycles(ty, tx, nv) + loop;
        }
    return c / (double)(ho * wo * nv);
}

/* The register tile of c->rows output rows the model finds cheapest: NV vectors of
 * channels (dividing the filters) by XU pixels, every accumulator, NV filter vectors
 * and a broadcast in the target's vector registers.  Sets c->nv, c->xu, c->cost;
 * false when no tile fits. */
static bool conv_tile(ConvCtx *c)
{
    int64_t ho = c->ext[2], wo = c->ext[3];
    c->cost = 0;
    for (int64_t nv = 1; nv <= 4; nv *= 2) {
        if (c->ext[1] % (c->lanes * nv) || c->lanes * nv > 64)
            continue;
        for (int64_t xu = 1; xu <= 14 && xu <= wo; xu++) {
            if (c->rows * xu * nv + nv + 1 > c->vregs)
                break;
            /* the one-row tile unrolls the row loop r: a loop test a filter row */
            double k = conv_cover_cost(ho, wo, c->rows, xu, nv, c->rows == 1 ? 2.0 / 3 : 1);
            if (c->cost == 0 || k < c->cost - 1e-9) {
                c->cost = k;
                c->nv = nv;
                c->xu = xu;
            }
        }
    }
    return c->cost > 0;
}

/* The input channels of a block: all of them where their packed filters (CB x R x
 * S taps of the model's FV channels) fit half of L2, else the largest power of two
 * that fits.  Each block adds a pass over the register tiles, whose write-back and
 * reload transpose the tile through memory: on Zen 3 (one thread, min times) one
 * block against blocks of 32 measured 2.95 -> 2.69 ms at 64 x 56^2, 2.79 -> 2.48 at
 * 128 x 28^2, 3.03 -> 2.61 at 256 x 14^2, 3.31 -> 3.09 at 512 x 7^2. */
static int64_t conv_cb(const ConvCtx *c)
{
    int64_t C = c->ext[4], tap = c->ext[5] * c->ext[6] * c->nv * c->lanes * 4;
    if (C * tap <= c->l2 / 2)
        return C;
    for (int64_t cb = floor_pow2_rules(C); cb >= 32; cb /= 2)
        if (C % cb == 0 && cb * tap <= c->l2 / 2)
            return cb;
    return C < 32 ? C : 32;
}

/* A direct convolution as a register-blocked product vectorized over output
 * channels, as stdlib/conv2d.pdl's CPU schedule writes it by hand: a tile of YU rows
 * by XU output pixels by FV channels kept in registers (cache(Y) with the channels
 * made contiguous by layout), input channels blocked by CB with their filters packed
 * tap-major (cache(W), layout) so each tap is one vector load, the padded image
 * copied once per image so the inner loop has no bounds tests, the channel blocks
 * or the tile rows parallel.  The tile's first candidate is conv_tile's; the other
 * pixel counts offered are those with a register tile at one vector of channels.
 *
 * The filter column loop s is never unrolled: unrolled beside the pixels, LLVM's CSE
 * shares the broadcast of X[x + s] between pixel x and tap s and pixel x + 1 and tap
 * s - 1, keeping up to XU + S - 1 broadcasts live: a 6 x 2 tile then spilled about one
 * register an FMA (64 x 56^2 on Zen 3: 2.87 ms at best unrolled, 2.67 not).  The row
 * loop r is unrolled only in the one-row tile, for the same reason.  The implicit-GEMM
 * template vectorizes along the image row instead (56 pixels: 3.5 registers).
 * 4 x 32 x 56 x 56 -> 64 channels, 3 x 3, 1 thread: 19.8 ms implicit GEMM, 4.7 ms
 * direct. */
static bool conv_direct_b(Builder *b, const void *vctx)
{
    const ConvCtx *c = vctx;
    SLoop *x1 = NULL, *y1 = NULL, *f1 = NULL, *n1 = NULL, *fo, *fv, *yo = NULL, *yu = NULL, *xo, *xu, *cb, *ci;
    if (!bld_distribute(b, bld_loop(b, c->loop[3]), &x1) || !bld_distribute(b, bld_loop(b, c->loop[2]), &y1) ||
        !bld_distribute(b, bld_loop(b, c->loop[1]), &f1) || !bld_distribute(b, bld_loop(b, c->loop[0]), &n1))
        return false;
    /* the model's tile and channel block first, then the usual alternatives */
    int64_t fs[3], xs[5], cs[4], xl[4] = {14, 8, 7, 4}, cl[3] = {32, 16, 64};
    int nf = 0, nx = 0, nc = 0;
    for (int m = 1; m <= 4; m *= 2)
        if (c->ext[1] % (c->lanes * m) == 0 && c->lanes * m <= 64)
            fs[nf++] = c->lanes * m;
    for (int i = 0; i < 4; i++)
        if (xl[i] <= c->ext[3] && c->rows * xl[i] + 2 <= c->vregs)
            xs[nx++] = xl[i];
    for (int i = 0; i < 3; i++)
        if (c->ext[4] % cl[i] == 0 || cl[i] >= c->ext[4])
            cs[nc++] = cl[i] < c->ext[4] ? cl[i] : c->ext[4];
    put_first(fs, &nf, 3, c->nv * c->lanes);
    put_first(xs, &nx, 5, c->xu);
    put_first(cs, &nc, 4, conv_cb(c));
    SLoop *r = bld_loop(b, c->loop[5]), *sl = bld_loop(b, c->loop[6]);
    bld_split(b, f1, bld_param(b, "fv", fs, nf), &fo, &fv);
    /* the channel vector innermost before the pixel loops split, so that every
     * reorder below names one band of at most eight loops */
    BLD_REORDER(b, y1, x1, bld_loop(b, c->loop[4]), r, sl, fv);
    if (c->rows > 1)
        bld_split(b, y1, sv(c->rows), &yo, &yu);
    bld_split(b, x1, bld_param(b, "xu", xs, nx), &xo, &xu);
    bld_split(b, bld_loop(b, c->loop[4]), bld_param(b, "cb", cs, nc), &cb, &ci);
    if (c->rows > 1)
        BLD_REORDER(b, cb, yo, xo, ci, r, sl, yu, xu);
    else
        BLD_REORDER(b, cb, y1, xo, ci, r, sl, xu);
    SBuf *yr = bld_cache(b, bld_buf(b, c->out), xo, NULL, NULL);
    bld_layout(b, yr, (const int[]){0, 3, 2, 1}, 4);
    SBuf *fp = bld_cache(b, bld_buf(b, c->w), cb, NULL, NULL);
    bld_layout(b, fp, (const int[]){1, 2, 3, 0}, 4);
    if (c->xpad)
        bld_cache(b, bld_buf(b, c->x), n1, NULL, NULL);
    if (yu)
        bld_unroll(b, yu);
    bld_unroll(b, xu);
    bld_vectorize(b, fv);
    if (c->rows == 1 && c->ext[5] <= 7)
        bld_unroll(b, r);
    /* the threads share the blocks of output channels, or the tile rows where the
     * channels make fewer than two blocks a thread (on a Xeon the 64-filter layer ran
     * no faster on two threads than on one when the channel blocks were the only
     * parallel loop); the other is the tuner's to try */
    SLoop *rl = yo ? yo : y1;
    int64_t blocks = c->ext[1] / (c->nv * c->lanes), rows = (c->ext[2] + c->rows - 1) / c->rows;
    bool by_rows = c->threads > 1 && blocks < 2 * c->threads && rows >= 2 * c->threads;
    SLoop *pc[2] = {by_rows ? rl : fo, by_rows ? fo : rl};
    bld_parallel(b, bld_param_loop(b, "par", pc, 2));
    return true;
}

/* Whether e is a load of a rank-4 buffer whose subscripts are exactly the loop
 * variables v[i0..i3]. */
static bool plain_load(const Expr *e, const Var *const *v, int i0, int i1, int i2, int i3)
{
    if (!e || e->kind != IE_LOAD || e->u.load.buf->rank != 4)
        return false;
    int ix[4] = {i0, i1, i2, i3};
    for (int d = 0; d < 4; d++)
        if (e->u.load.idx[d]->kind != IE_VAR || e->u.load.idx[d]->u.var != v[ix[d]])
            return false;
    return true;
}

/* A nest that is exactly Y[n, f, y, x] += X[n, c, ...] * W[f, c, r, s] (either
 * operand order), f a multiple of the vector lanes: the direct template's shape. */
static ConvCtx *conv_read(const Nest *n, int lanes, int vregs, Arena *a)
{
    if (!pure_reduction(n) || n->nloops != 7 || n->nspatial != 4)
        return NULL;
    const Node *st = n->red;
    const Expr *v = st->u.stmt.value;
    if (v->kind != IE_MUL || st->u.stmt.buf->rank != 4 || st->u.stmt.buf->dtype != DT_F32)
        return NULL;
    const Var *var[7];
    for (int i = 0; i < 7; i++)
        var[i] = n->loops[i]->u.loop.var;
    for (int d = 0; d < 4; d++)
        if (st->u.stmt.idx[d]->kind != IE_VAR || st->u.stmt.idx[d]->u.var != var[d])
            return NULL;
    const Expr *w = v->args[1], *x = v->args[0];
    if (!plain_load(w, var, 1, 4, 5, 6)) {
        w = v->args[0];
        x = v->args[1];
    }
    if (!plain_load(w, var, 1, 4, 5, 6) || x->kind != IE_LOAD || x->u.load.buf->rank != 4 ||
        w->u.load.buf->dtype != DT_F32 || x->u.load.buf->dtype != DT_F32)
        return NULL;
    const Expr *const *xi = (const Expr *const *)x->u.load.idx;
    if (xi[0]->kind != IE_VAR || xi[0]->u.var != var[0] || xi[1]->kind != IE_VAR || xi[1]->u.var != var[4] ||
        ir_expr_uses_var(xi[2], var[3]) || ir_expr_uses_var(xi[3], var[2]) || ir_expr_uses_var(xi[2], var[1]) ||
        ir_expr_uses_var(xi[3], var[1]))
        return NULL;
    if (n->ext[1] % lanes)
        return NULL;
    ConvCtx *c = arena_alloc(a, sizeof *c);
    for (int i = 0; i < 7; i++) {
        c->loop[i] = arena_strdup(a, lname(n, i));
        c->ext[i] = n->ext[i];
    }
    c->out = arena_strdup(a, st->u.stmt.buf->name);
    c->w = arena_strdup(a, w->u.load.buf->name);
    c->x = arena_strdup(a, x->u.load.buf->name);
    c->xpad = x->u.load.buf->has_pad;
    c->lanes = lanes;
    c->vregs = vregs;
    return c;
}

typedef struct ContrCtx {
    const NestInfo *const *ns;
    int nn, variant, lanes, threads;
    const Target *target;
} ContrCtx;

/* A contraction kernel on a CPU: each contraction nest as the variant says, the
 * other nests (an epilogue) elementwise. */
static bool contraction_kernel_b(Builder *b, const void *vctx)
{
    const ContrCtx *c = vctx;
    bool any = false;
    for (int i = 0; i < c->nn; i++) {
        const NestInfo *n = c->ns[i];
        if (n->red && n->mul)
            any |= contraction_b(b, n, c->variant, c->lanes, c->threads, c->target);
        else if (!n->red)
            elementwise_b(b, n, c->lanes);
    }
    return any;
}

/* A bf16 product on AMX tiles (tune/rules_amx.c) and the elementwise nests around
 * it (a bias, an activation: each its own vectorized pass over the result). */
typedef struct AmxKernelCtx {
    const NestInfo *const *ns;
    const void **amx;            /* per nest: the AMX template's context, or NULL */
    int nn, lanes;
} AmxKernelCtx;

static bool amx_kernel_b(Builder *b, const void *vctx)
{
    const AmxKernelCtx *c = vctx;
    bool any = false;
    for (int i = 0; i < c->nn; i++)
        if (c->amx[i])
            any |= rules_amx_b(b, c->amx[i]);
        else if (!c->ns[i]->red)
            elementwise_b(b, c->ns[i], c->lanes);
    return any;
}

/* Contraction on a GPU: a register-tiled SIMT kernel.  The initialisation is
 * distributed away as on the CPU; a block computes TI x TJ outputs, each thread an
 * RI x RJ tile held in registers (the C tile cached per thread with unrolled
 * loops), the reduction runs serially in the thread.  The grid and block shapes are
 * the parameters; the CUDA launch table prunes what the target cannot launch.  An
 * outer output loop (batch) goes to block.z. */
static void gpu_contraction_b(Builder *b, const NestInfo *n)
{
    if (n->nspatial < 2 || !n->red || n->nspatial == n->nloops)
        return;
    int ia = n->nspatial - 2, ib = n->nspatial - 1;
    SLoop *a = bld_loop(b, n->loop[ia]), *bn = bld_loop(b, n->loop[ib]), *a1, *b1, *R[16];
    int nr = red_loops(b, n, true, R);
    bld_distribute(b, bn, &b1);
    R[nr] = b1;
    bld_reorder(b, R, nr + 1);
    bld_distribute(b, a, &a1);
    int64_t ct[4], cr[4], cj[4];
    int nt = 0, ncr = 0, nj = 0;
    for (int t = 32; t <= 128; t *= 2)
        if (n->ext[ia] % t == 0 || n->ext[ib] % t == 0)
            ct[nt++] = t;
    if (!nt)
        ct[nt++] = 32;
    for (int r = 2; r <= 8; r *= 2)
        cr[ncr++] = r;
    for (int r = 1; r <= 4; r *= 2)
        cj[nj++] = r;
    SVal ti = bld_param(b, "ti", ct, nt), tj = bld_param(b, "tj", ct, nt);
    SVal ri = bld_param(b, "ri", cr, ncr), rj = bld_param(b, "rj", cj, nj);
    SLoop *a1o, *a1i, *b1o, *b1i, *a1io, *a1ii, *b1io, *b1ii;
    bld_split(b, a1, ti, &a1o, &a1i);
    bld_split(b, b1, tj, &b1o, &b1i);
    bld_split(b, a1i, ri, &a1io, &a1ii);
    bld_split(b, b1i, rj, &b1io, &b1ii);
    SLoop *ord[24] = {a1o, b1o, a1io, b1io};
    int no = 4 + red_loops(b, n, true, ord + 4);
    ord[no++] = a1ii;
    ord[no++] = b1ii;
    bld_reorder(b, ord, no);
    bld_cache(b, bld_buf(b, n->out), b1io, NULL, NULL);
    bld_unroll(b, a1ii);
    bld_unroll(b, b1ii);
    if (ia == 1)
        bld_bind(b, bld_loop(b, n->loop[0]), "block.z");
    bld_bind(b, a1o, "block.y");
    bld_bind(b, b1o, "block.x");
    bld_bind(b, a1io, "thread.y");
    bld_bind(b, b1io, "thread.x");
}

/* Every contraction nest of a kernel on a GPU as register tiles; the other nests
 * keep the code generator's default mapping. */
static bool gpu_kernel_b(Builder *b, const void *vctx)
{
    const ContrCtx *c = vctx;
    for (int i = 0; i < c->nn; i++)
        if (c->ns[i]->red && c->ns[i]->mul)
            gpu_contraction_b(b, c->ns[i]);
    return true;
}

typedef struct RowsCtx {
    const NestInfo *const *ns;
    int nn, lanes;
    const char *kinds; /* per nest: 'c' a column reduction, 's' one into one element, 0 */
} RowsCtx;

/* Row-wise kernels: every nest's outer loop runs over the same rows. */
static bool rows_b(Builder *b, const void *vctx)
{
    const RowsCtx *c = vctx;
    const NestInfo *const *ns = c->ns;
    SLoop *row = bld_loop(b, ns[0]->loop[0]);
    for (int i = 1; i < c->nn; i++)
        bld_fuse(b, row, bld_loop(b, ns[i]->loop[0]));
    /* rows for every thread, else the rows stay serial (a dot product has one) */
    if (ns[0]->ext[0] >= ns[0]->threads)
        bld_parallel(b, row);
    /* whole registers that divide the row, else guarded ones (a row of 1000 f32
     * is 62 registers and a masked half: unvectorized it ran 4.3 ms for a 4097 x
     * 1000 matrix-vector product against 0.9 ms for NumPy) */
    int64_t cv[4];
    int nv = vec_cands(ns[0]->ext[1], c->lanes, cv);
    if (!nv)
        nv = vec_cands_guarded(ns[0]->ext[1], c->lanes, 4, cv);
    if (!nv)
        return true;
    /* 4 registers first: four add chains per row hide the add latency (a 4097 x
     * 1000 row mean 0.55 ms, against 0.58 with 2 and 0.82 with 1) */
    for (int i = 0; i < nv; i++)
        if (cv[i] == 4 * c->lanes && cv[i] <= 64)
            put_first(cv, &nv, 4, cv[i]);
    SVal vec = bld_param(b, "vec_row", cv, nv);
    for (int i = 0; i < c->nn; i++) {
        SLoop *co, *ci;
        if (ns[i]->nloops < 2)
            continue;
        bld_split(b, bld_loop(b, ns[i]->loop[1]), vec, &co, &ci);
        if (ns[i]->red)
            bld_rfactor(b, ci);
        bld_vectorize(b, ci);
    }
    return true;
}

/* Vector lengths for a loop whose tail may be guarded: 1, 2 and 4 SIMD registers
 * up to the extent (at most 64 lanes, vectorize's limit), `first` registers first. */
static int vec_cands_guarded(int64_t ext, int lanes, int first, int64_t *out)
{
    int n = 0;
    for (int m = 1; m <= 4; m *= 2)
        if (lanes * m <= 64 && (m == 1 || lanes * m <= ext))
            out[n++] = lanes * m;
    if (n && lanes * first <= 64 && lanes * first <= ext)
        put_first(out, &n, 4, lanes * first);
    return n;
}

/* A column reduction (column sums, a sum over a middle axis, Aᵀ·x): the reduction
 * loops move outside the last output loop, which is vectorized, so each step of the
 * reduction adds a contiguous row of the input into a vector of partial results
 *   distribute(b) reorder(R.., b1) split(k, U) split(b1, V) reorder(b1o, ki, b1i)
 *   unroll(ki) vectorize(b1i) [parallel(outer)]
 * instead of walking the input down its columns one element per step (vectorizing
 * the reduction itself would make every lane a strided gather).  U rows of the
 * input are added into each vector of V partial results while it is in registers
 * (the unrolled ki), so the partials are loaded and stored once per U rows.
 * Measured on 4097 x 1000 f32, 1 thread: column sum 0.53 ms against 18.5 ms for
 * the rows template; Aᵀ·x 0.62 ms with U = 8, V = 32, 0.88 ms without the
 * unrolled rows. */
static void column_reduction_b(Builder *b, const NestInfo *n, int lanes)
{
    int ib = n->nspatial - 1, ik = n->nloops - 1;
    SLoop *R[16], *b1 = NULL, *bo, *bi, *ko = NULL, *ki = NULL;
    int nr = red_loops(b, n, true, R);
    if (!bld_distribute(b, bld_loop(b, n->loop[ib]), &b1) || !b1)
        return;
    R[nr] = b1;
    bld_reorder(b, R, nr + 1);
    char pv[80], pu[80];
    int64_t cu[3] = {1, 4, 8}; /* 1 first: a column sum streams best row by row */
    if (n->ext[ik] >= 16)
        bld_split(b, R[nr - 1], bld_param(b, pn(pu, sizeof pu, "rows_", n->loop[ik]), cu, 3), &ko, &ki);
    int64_t cv[4];
    int nv = vec_cands_guarded(n->ext[ib], lanes, 2, cv);
    if (nv && bld_split(b, b1, bld_param(b, pn(pv, sizeof pv, "vec_", n->loop[ib]), cv, nv), &bo, &bi)) {
        if (ki && BLD_REORDER(b, bo, ki, bi))
            bld_unroll(b, ki);
        bld_vectorize(b, bi);
    }
    if (ib > 0)
        bld_parallel(b, bld_loop(b, n->loop[par_loop_info(n, ib)]));
}

/* A reduction into one element (a sum of a whole tensor, a dot product, an MSE):
 * the innermost reduction loop split by V lanes, factored into V partial results
 * (rfactor) and vectorized.  4 registers by default: four independent add chains
 * hide the add latency (8.0M f32 summed: 1.0 ms against 6.3 ms serial).  A long
 * sum is first cut into partial sums so that no lane's chain grows with the size
 * (pass sum-blocks keeps unscheduled sums accurate the same way, and leaves a
 * vectorized one alone): one loop over at least 16384 terms is split into blocks
 * of BLK (1024 first) and factored over the blocks, each block summed in vector
 * lanes, the blocks' partials summed after (and blocked by sum-blocks when there
 * are many); with several reduction loops the outermost is factored instead.
 * 16M f32 squares: relative error 2e-7 in blocks of 1024, 5e-5 with 64 lane
 * chains of 262144 terms each. */
static void scalar_reduction_b(Builder *b, const NestInfo *n, int lanes)
{
    int ir = n->nloops - 1;
    int64_t terms = 1;
    for (int i = 0; i < n->nloops; i++)
        terms *= n->ext[i];
    SLoop *r = bld_loop(b, n->loop[ir]), *ro, *ri;
    char pv[80];
    int64_t ext = n->ext[ir];
    if (terms >= 16384 && n->nloops == 1) {
        int64_t cb[2] = {1024, 4096};
        SVal blk = bld_param(b, pn(pv, sizeof pv, "blk_", n->loop[ir]), cb, ext >= 8192 ? 2 : 1);
        if (!bld_split(b, r, blk, &ro, &ri) || !bld_rfactor(b, ro))
            return;
        r = ri;
        ext = 1024;
    } else if (terms >= 16384 && !bld_rfactor(b, bld_loop(b, n->loop[0])))
        return;
    int64_t cv[4];
    int nv = vec_cands_guarded(ext, lanes, 4, cv);
    if (nv && bld_split(b, r, bld_param(b, pn(pv, sizeof pv, "vec_", n->loop[ir]), cv, nv), &ro, &ri) &&
        bld_rfactor(b, ri))
        bld_vectorize(b, ri);
}

/* A transposing elementwise nest: its two inner loops tiled T x V and the inner
 * tile loop vectorized, so a tile's V-lane stores gather from V input rows that
 * stay in L1 across the T steps, each row read T elements at a time; untiled,
 * every vector gathered its lanes from V rows of the whole matrix (2000 x 3001 f32,
 * 1 thread: 14.8 ms untiled).  The outermost loop is parallel. */
static void transpose_b(Builder *b, const NestInfo *n, int lanes)
{
    int ia = n->nloops - 2, ib = n->nloops - 1;
    /* 8 x 4 registers first: 2000 x 3001 f32 6.0 ms (16 x 16: 6.9), NCHW -> NHWC
     * 8 x 64 x 56 x 56 1.28 ms (16 x 16: 1.90, untiled 1.31) */
    int64_t ct[3] = {8, 16, 32}, cv[4];
    int nv = vec_cands_guarded(n->ext[ib], lanes, 4, cv);
    char pt[80], pv[80];
    SLoop *t[4];
    if (!nv || !bld_tile(b, bld_loop(b, n->loop[ia]), bld_loop(b, n->loop[ib]),
                         bld_param(b, pn(pt, sizeof pt, "tile_", n->loop[ia]), ct, 3),
                         bld_param(b, pn(pv, sizeof pv, "vec_", n->loop[ib]), cv, nv), NULL, t))
        return;
    bld_vectorize(b, t[3]);
    if (ia > 0)
        bld_parallel(b, bld_loop(b, n->loop[par_loop_info(n, ia)]));
    else
        bld_parallel(b, t[0]);
}

/* Elementwise nests vectorized; reductions into one element vectorized through
 * rfactor, column reductions along their output rows, the others parallel over
 * their rows. */
static bool plain_b(Builder *b, const void *vctx)
{
    const RowsCtx *c = vctx;
    for (int i = 0; i < c->nn; i++)
        if (c->kinds[i] == 't')
            transpose_b(b, c->ns[i], c->lanes);
        else if (!c->ns[i]->red)
            elementwise_b(b, c->ns[i], c->lanes);
        else if (c->kinds[i] == 'c')
            column_reduction_b(b, c->ns[i], c->lanes);
        else if (c->kinds[i] == 's')
            scalar_reduction_b(b, c->ns[i], c->lanes);
        else
            bld_parallel(b, bld_loop(b, c->ns[i]->loop[par_loop_info(c->ns[i], c->ns[i]->nspatial)]));
    return true;
}

/* Contraction on a GPU, staged through shared memory: the structure of the
 * hand-written `tiled` GPU variant of stdlib/gemm.pdl made a template.  A block
 * computes a TB x TB tile of C from K slices of 16 staged in shared memory (A
 * padded against bank conflicts), each of its threads a TR x TR register tile;
 * B's shared reads are vectors of VS.  The thread grid is TB/TR square; choices
 * whose copy loops do not match it run guarded.  Needs the rows and columns to be
 * multiples of TB and the reduction of 16 (distribute refuses guarded bodies).
 * kstep 32 (pipelined only) is stdlib gemm's `tiled32`: K slices of 32, the copy
 * mapping of a 128 x 32 A tile and a 32 x 128 B tile, and the k unroll as a
 * parameter; it needs the reduction to be a multiple of 32. */
typedef struct SharedCtx {
    const NestInfo *n;
    bool pipelined;
    int kstep;
} SharedCtx;

static bool gpu_shared_b(Builder *b, const void *vctx)
{
    const SharedCtx *c = vctx;
    const NestInfo *n = c->n;
    bool pipelined = c->pipelined;
    int kstep = c->kstep;
    if (n->nspatial < 2 || !n->red || n->nloops != n->nspatial + 1)
        return false;
    int ia = n->nspatial - 2, ib = n->nspatial - 1, ir = n->nloops - 1;
    if (kstep != 16 && !(pipelined && kstep == 32))
        return false;
    if (!n->pa || !n->pb || n->ext[ir] % kstep)
        return false;
    /* the copy mappings are written for A[.., i, k] and B[.., k, j] */
    if (n->pa_kdim != n->pa_rank - 1 || n->pb_kdim != n->pb_rank - 2)
        return false;
    /* The pipelined variant: 16-byte cp.async copies (a warp's lanes on consecutive
     * chunks of a row: A's 64-byte rows 4 rows x 4 chunks at a time through collapse,
     * B's rows 16 chunks at a time), A padded by 4 floats (rows stay 16-byte aligned),
     * a ring of `st` stages.  Its copy mapping fits the 16 x 16 thread grid of a 128 x
     * 128 tile with 8 x 8 per thread, so those two are fixed; stdlib gemm's `tiled` is
     * this schedule at vs = 4, st = 2.  With a K step of 32 (`tiled32` at vs = 4,
     * st = 2, ku = 16): A's 128-byte rows 2 rows x 8 chunks at a time, B's 32 rows
     * as 16 thread rows of 2, 4 chunks per thread each; stages 2 and 3 (34 816 B of
     * shared memory a stage: 69 632 B or 104 448 B, two blocks per SM on sm_80 and
     * sm_90; the launch table prunes 3 stages where a block may have less, sm_86 and
     * sm_89's 99 KB), and the 32-deep k loop unrolled 16 at a time (128 registers
     * with CUDA 12/13's ptxas for sm_90) or whole (167: one block per SM). */
    if (pipelined && (n->pa_t != DT_F32 || n->pb_t != DT_F32))
        return false;
    bool k32 = kstep == 32;
    SVal tb = sv(128), tr = sv(8), vs, st = sv(0), ku = sv(0);
    if (pipelined && k32) {
        vs = bld_param(b, "vs", (const int64_t[]){4, 2}, 2);
        st = bld_param(b, "st", (const int64_t[]){2, 3}, 2);
        ku = bld_param(b, "ku", (const int64_t[]){16, 32}, 2);
    } else if (pipelined) {
        vs = bld_param(b, "vs", (const int64_t[]){4, 2}, 2);
        st = bld_param(b, "st", (const int64_t[]){2, 3, 4}, 3);
    } else {
        tb = bld_param(b, "tb", (const int64_t[]){128, 64}, 2);
        tr = bld_param(b, "tr", (const int64_t[]){8, 4}, 2);
        vs = bld_param(b, "vs", (const int64_t[]){4, 2}, 2);
    }
    SLoop *t[4];
    bld_tile(b, bld_loop(b, n->loop[ia]), bld_loop(b, n->loop[ib]), tb, tb,
             (const char *const[]){"g_io", "g_jo", "g_ii", "g_ji"}, t);
    SLoop *io = t[0], *jo = t[1], *ii = t[2], *ji = t[3], *ji1, *ii1;
    SBuf *acc = bld_cache(b, bld_buf(b, n->out), jo, NULL, "g_acc");
    bld_distribute(b, ji, &ji1);
    bld_distribute(b, ii, &ii1);
    /* the accumulator's initialisation (nest 0) and copy out (nest 1) */
    SLoop *c0 = acc ? acc->nest[0][0] : NULL, *c1 = acc ? acc->nest[0][1] : NULL;
    SLoop *o0 = acc && acc->nnest > 1 ? acc->nest[1][0] : NULL, *o1 = acc && acc->nnest > 1 ? acc->nest[1][1] : NULL;
    SLoop *cy, *cr, *cx, *cs, *iy, *ir_, *ix, *is, *ty, *r, *tx, *s_, *ko, *ki;
    bld_split_named(b, c0, tr, "g_cy", "g_cr", &cy, &cr);
    bld_split_named(b, c1, tr, "g_cx", "g_cs", &cx, &cs);
    BLD_REORDER(b, cy, cx, cr, cs);
    bld_split_named(b, ii, tr, "g_iy", "g_ir", &iy, &ir_);
    bld_split_named(b, ji, tr, "g_ix", "g_is", &ix, &is);
    BLD_REORDER(b, iy, ix, ir_, is);
    bld_split_named(b, ii1, tr, "g_ty", "g_r", &ty, &r);
    bld_split_named(b, ji1, tr, "g_tx", "g_s", &tx, &s_);
    bld_split_named(b, bld_loop(b, n->loop[ir]), sv(kstep), "g_ko", "g_ki", &ko, &ki);
    BLD_REORDER(b, ko, ty, tx, ki, r, s_);
    SBuf *As = bld_cache(b, bld_buf(b, n->pa), ko, "shared", "g_As");
    SBuf *Bs = bld_cache(b, bld_buf(b, n->pb), ko, "shared", "g_Bs");
    SLoop *a0 = As ? As->nest[0][0] : NULL, *a1 = As ? As->nest[0][1] : NULL;
    SLoop *b0 = Bs ? Bs->nest[0][0] : NULL, *b1 = Bs ? Bs->nest[0][1] : NULL;
    SLoop *ac = NULL, *av = NULL, *ar = NULL, *ax = NULL, *af = NULL, *ay = NULL, *au = NULL;
    SLoop *bc = NULL, *bv = NULL, *bu = NULL, *bx = NULL, *by = NULL, *br = NULL;
    if (pipelined && k32) {
        bld_padding(b, As, sv(4));
        bld_split_named(b, a1, sv(4), "g_ac", "g_av", &ac, &av);
        bld_split_named(b, a0, sv(2), "g_ar", "g_ax", &ar, &ax);
        bld_collapse(b, ax, ac, "g_af", &af);
        bld_split_named(b, ar, sv(4), "g_ay", "g_au", &ay, &au);
        BLD_REORDER(b, ay, af, au);
        bld_split_named(b, b1, sv(4), "g_bc", "g_bv", &bc, &bv);
        bld_split_named(b, bc, sv(16), "g_bu", "g_bx", &bu, &bx);
        bld_split_named(b, b0, sv(2), "g_by", "g_br", &by, &br);
        BLD_REORDER(b, by, bx, br, bu);
    } else if (pipelined) {
        bld_padding(b, As, sv(4));
        bld_split_named(b, a1, sv(4), "g_ac", "g_av", &ac, &av);
        bld_split_named(b, a0, sv(4), "g_ar", "g_ax", &ar, &ax);
        bld_collapse(b, ax, ac, "g_af", &af);
        bld_split_named(b, ar, sv(2), "g_ay", "g_au", &ay, &au);
        BLD_REORDER(b, ay, af, au);
        bld_split_named(b, b1, sv(4), "g_bc", "g_bv", &bc, &bv);
        bld_split_named(b, bc, sv(16), "g_bu", "g_bx", &bu, &bx);
        BLD_REORDER(b, b0, bx, bu);
    } else {
        bld_padding(b, As, sv(1));
        bld_split_named(b, a0, tr, "g_ay", "g_au", &ay, &au);
        BLD_REORDER(b, ay, a1, au);
        bld_split_named(b, b1, sv(16), "g_bu", "g_bx", &bu, &bx);
        BLD_REORDER(b, b0, bx, bu);
    }
    SLoop *s2, *s4, *oy, *or_, *ox, *os;
    bld_split_named(b, s_, vs, "g_s2", "g_s4", &s2, &s4);
    bld_split_named(b, o0, tr, "g_oy", "g_or", &oy, &or_);
    bld_split_named(b, o1, tr, "g_ox", "g_os", &ox, &os);
    BLD_REORDER(b, oy, ox, or_, os);
    if (ia == 1)
        bld_bind(b, bld_loop(b, n->loop[0]), "block.z");
    bld_bind(b, io, "block.y");
    bld_bind(b, jo, "block.x");
    bld_bind(b, cy, "thread.y");
    bld_bind(b, cx, "thread.x");
    bld_bind(b, iy, "thread.y");
    bld_bind(b, ix, "thread.x");
    bld_bind(b, k32 ? by : b0, "thread.y");
    bld_bind(b, bx, "thread.x");
    bld_bind(b, ay, "thread.y");
    bld_bind(b, pipelined ? af : a1, "thread.x");
    bld_bind(b, ty, "thread.y");
    bld_bind(b, tx, "thread.x");
    bld_bind(b, oy, "thread.y");
    bld_bind(b, ox, "thread.x");
    bld_unroll(b, cr);
    bld_unroll(b, cs);
    bld_unroll(b, ir_);
    bld_unroll(b, is);
    bld_unroll(b, bu);
    if (k32)
        bld_unroll(b, br);
    bld_unroll(b, au);
    if (k32) {
        SLoop *kq, *kr;
        bld_split_named(b, ki, ku, "g_kq", "g_kr", &kq, &kr);
        bld_unroll(b, kr);
    } else {
        bld_unroll(b, ki);
    }
    bld_unroll(b, r);
    bld_unroll(b, s2);
    bld_vectorize(b, s4);
    bld_unroll(b, or_);
    bld_unroll(b, os);
    if (pipelined) {
        bld_vectorize(b, av);
        bld_vectorize(b, bv);
        bld_pipeline(b, ko, st, false);
    }
    return true;
}

/* ---- checking templates ---- */

static void add_template(TuneSpace *sp, AstSchedule *s, const char *origin);

/* The template fn(ctx) checked at its defaults on a freshly lowered kernel.  NULL
 * when it does not fit; *dropped: its statements refused there (dropped). */
static TuneRule *check_rule(const TuneInput *in, TuneBuildFn fn, const void *ctx, Arena *a, int *dropped,
                            Diags *d)
{
    Kernel *k = tune_apply(in, NULL, NULL, 0, NULL, d);
    if (!k)
        return NULL;
    TuneRule *r = tune_rule_check(fn, ctx, k, a);
    ir_free(k);
    *dropped = r ? r->dropped : 0;
    return r;
}

/* Adds a rule's template; one that kept no statement is the empty schedule. */
static void add_rule(const TuneInput *in, TuneSpace *sp, TuneRule *r, Arena *a, const char *origin)
{
    if (sp->n == TUNE_MAX_TEMPLATES)
        return;
    if (r->nsteps == r->dropped) {
        AstSchedule *e = arena_alloc(a, sizeof *e);
        e->kernel = in->ast->name;
        add_template(sp, e, origin);
        return;
    }
    TuneTemplate *t = &sp->t[sp->n++];
    memset(t, 0, sizeof *t);
    t->rule = r;
    t->origin = origin;
    t->nparams = r->nparams;
    double size = 1;
    for (int i = 0; i < t->nparams; i++) {
        t->names[i] = r->names[i];
        t->ncands[i] = r->ncands[i];
        size *= t->ncands[i];
    }
    sp->size += size;
}

/* ---- the space ---- */

static void add_template(TuneSpace *sp, AstSchedule *s, const char *origin)
{
    if (sp->n == TUNE_MAX_TEMPLATES)
        return;
    TuneTemplate *t = &sp->t[sp->n++];
    t->s = s;
    t->origin = origin;
    t->nparams = schedule_params(s, t->names, t->ncands, TUNE_MAX_PARAMS);
    if (t->nparams > TUNE_MAX_PARAMS)
        t->nparams = TUNE_MAX_PARAMS;
    double size = 1;
    for (int i = 0; i < t->nparams; i++)
        size *= t->ncands[i];
    sp->size += size;
}

/* The input's schedules merged into one (they apply in order and share parameter
 * names), so the tuned result is a single block. */
static AstSchedule *merged_user(const TuneInput *in, Arena *a, int *nparams)
{
    int n = 0;
    *nparams = 0;
    for (int i = 0; i < in->nscheds; i++)
        n += in->scheds[i]->nitems;
    AstSchedule *s = arena_alloc(a, sizeof *s);
    s->kernel = in->ast->name;
    s->span = in->nscheds ? in->scheds[0]->span : in->ast->span;
    s->items = arena_alloc(a, sizeof *s->items * (size_t)(n + 1));
    for (int i = 0; i < in->nscheds; i++)
        for (int j = 0; j < in->scheds[i]->nitems; j++) {
            s->items[s->nitems++] = in->scheds[i]->items[j];
            *nparams += in->scheds[i]->items[j].kind == SCHED_PARAM;
        }
    return s;
}

/* A GPU template that is only worth having whole: added when it fits and no
 * statement of it had to be dropped (a tile that does not divide, a transformation
 * refused).  tc: it uses tensor cores, which names the kernel class. */
void rules_offer(const TuneInput *in, TuneBuildFn fn, const void *ctx, Arena *a, TuneSpace *sp, const char *origin,
                 bool tc)
{
    Diags q;
    diag_init(&q);
    int dropped = 0;
    TuneRule *r = check_rule(in, fn, ctx, a, &dropped, &q);
    diag_free(&q);
    if (!r || dropped)
        return;
    add_rule(in, sp, r, a, origin);
    if (tc)
        sp->kclass = "contraction (GPU, tensor cores)";
}

bool tune_space(const TuneInput *in, const Kernel *u, const Target *target, Arena *a, TuneSpace *sp, Diags *d)
{
    memset(sp, 0, sizeof *sp);
    if (in->nscheds) {
        int np;
        AstSchedule *s = merged_user(in, a, &np);
        add_template(sp, s, "the kernel's schedule");
        sp->kclass = "as written";
        /* A template of the file's own: on a GPU it is tuned as written, nothing
         * added (the stdlib's hand schedules there hold the best kernels known).  On
         * a CPU the rules' templates compete with it, so the default schedule is a
         * candidate whatever the file says: stdlib conv2d's hand schedule, tuned
         * alone, lost to the rules' direct convolution at 64 x 56^2 (one thread,
         * Zen 3: 3.2 against 2.8 ms). */
        if (np && (in->own_only || !target_is_cpu(target)))
            return true;
    }
    /* Rules. */
    DType t = DT_F32;
    for (int i = 0; i < u->nbufs; i++)
        if (u->bufs[i]->kind == BUF_OUT) {
            t = u->bufs[i]->dtype;
            break;
        }
    int lanes = tune_vector_lanes(target, t);
    int threads = rules_threads(in);
    bool gpu = target_is_gpu(target);
    Nest ns[16];
    int nn = 0;
    for (int i = 0; i < u->body.n && nn < 16; i++)
        if (u->body.v[i]->kind == N_LOOP && read_nest(u, u->body.v[i], &ns[nn]))
            nn++;
    if (!nn) {
        if (!sp->n)
            add_template(sp, merged_user(in, a, &(int){0}), "no schedule (nothing to tune)");
        sp->kclass = "scalar";
        return true;
    }
    /* the templates read the nests during the whole search: arena memory */
    NestInfo **infos = arena_alloc(a, sizeof *infos * 16);
    for (int i = 0; i < nn; i++)
        infos[i] = nest_info(u, &ns[i], threads, a);
    int ncontr = 0, nred = 0;
    for (int i = 0; i < nn; i++) {
        ncontr += ns[i].red && ns[i].nspatial >= 1 && ns[i].nloops - ns[i].nspatial >= 1 && infos[i]->mul;
        nred += ns[i].red != NULL;
    }
    int dropped = 0;
    if (gpu) {
        /* CUDA: contractions get the SIMT template; everything else keeps the code
         * generator's default mapping (one thread per output element), which the
         * empty schedule stands for. */
        sp->kclass = ncontr ? "contraction (GPU)" : "default GPU mapping";
        /* a softmax-then-product chain: flash attention on tensor cores (or the
         * decoding template), and nothing else: the templates below would tile the
         * chain's nests one by one around an S x S buffer of scores, tens of times
         * slower, and a search would spend its budget timing them */
        if (rules_attention(in, u, target, a, sp)) {
            sp->kclass = "attention (GPU)";
            return true;
        }
        /* row-wise chains (RMSNorm, softmax, layernorm as users write them): a row a
         * block, the row reductions block-wide (tune/rules_rows.c) */
        if (rules_rows_gpu(in, u, (const NestInfo *const *)infos, nn, a, sp)) {
            sp->kclass = "rows (GPU)";
            return true;
        }
        /* tensor-core templates first (f16 / bf16 products), each only when it
         * applies whole: a contraction alone, or followed by elementwise nests over
         * its output loops (an epilogue the templates fuse into the write-back) */
        bool one = nn == 1 && ncontr;
        int epi = ns[0].red && ns[0].nspatial == ns[0].nloops - 1 ? 1 : 0;
        for (int e = 1; epi && e < nn; e++) {
            bool same = !ns[e].red && ns[e].nloops == ns[0].nspatial;
            for (int d = 0; same && d < ns[0].nspatial; d++)
                same = ns[e].ext[d] == ns[0].ext[d];
            epi = same ? e + 1 : 0;
        }
        if (epi && ns[0].red->u.stmt.value->kind == IE_MUL)
            rules_tensor_cores(in, (const NestInfo *const *)infos, epi, target, a, sp);
        /* several products, each followed by elementwise nests over its output loops
         * (an MLP's gate and up projections, then their product): a template each */
        int start[RULES_MAX_GROUPS], ng = 0;
        bool groups = !epi && nn >= 2;
        for (int e = 0; groups && e < nn; e++) {
            bool prod = ns[e].red && ns[e].nspatial == ns[e].nloops - 1 && ns[e].red->u.stmt.value->kind == IE_MUL;
            if (prod) {
                if (ng == RULES_MAX_GROUPS) {
                    groups = false;
                    break;
                }
                start[ng++] = e;
                continue;
            }
            const Nest *g = ng ? &ns[start[ng - 1]] : NULL;
            groups = g && !ns[e].red && ns[e].nloops == g->nspatial;
            for (int d = 0; groups && d < g->nspatial; d++)
                groups = ns[e].ext[d] == g->ext[d];
        }
        if (groups && ng >= 2)
            rules_tensor_cores_groups(in, (const NestInfo *const *)infos, start, ng, nn, target, a, sp);
        /* a product over several row or reduction loops (a convolution) as an
         * implicit GEMM, its elementwise consumers as above */
        if (!epi && ns[0].red && ns[0].nspatial >= 2) {
            int ce = 1;
            while (ce < nn && !ns[ce].red && ns[ce].nloops == ns[0].nspatial) {
                bool same = true;
                for (int d = 0; same && d < ns[0].nspatial; d++)
                    same = ns[ce].ext[d] == ns[0].ext[d];
                if (!same)
                    break;
                ce++;
            }
            const IgPlan *ig = ce == nn ? rules_igemm_read(u, ns[0].loops, ns[0].red, (const NestInfo *const *)infos, ce, a) : NULL;
            if (ig)
                rules_tensor_cores_igemm(in, ig, target, a, sp);
        }
        /* the shared-memory templates when they apply whole (single-nest GEMMs):
         * f32 first with 16-byte cp.async copies in a pipeline, K step 16 (stdlib gemm's
         * `tiled`) and 32 (`tiled32`), then the synchronous one with the tile
         * sizes as parameters */
        static const struct { bool pl; int ks; const char *origin; } shared_variants[3] = {
            {true, 16, "rules: GPU shared-memory tiles, cp.async pipeline"},
            {true, 32, "rules: GPU shared-memory tiles, cp.async pipeline, K step 32"},
            {false, 16, "rules: GPU shared-memory tiles"}};
        for (int vi = 0; one && vi < 3; vi++) {
            SharedCtx *sc = arena_alloc(a, sizeof *sc);
            *sc = (SharedCtx){infos[0], shared_variants[vi].pl, shared_variants[vi].ks};
            rules_offer(in, gpu_shared_b, sc, a, sp, shared_variants[vi].origin, false);
        }
        /* then register tiles for every contraction nest (the other nests, and every
         * nest of a kernel without one, keep the default mapping) */
        ContrCtx *cc = arena_alloc(a, sizeof *cc);
        *cc = (ContrCtx){(const NestInfo *const *)infos, nn, 0, lanes, threads, target};
        TuneRule *r = check_rule(in, gpu_kernel_b, cc, a, &dropped, d);
        if (!r)
            return false;
        add_rule(in, sp, r, a, dropped ? arena_printf(a, "rules: GPU (%d statements dropped)", dropped)
                                      : ncontr ? "rules: GPU register tiles" : "rules: default mapping");
        return true;
    }
    /* a softmax-then-product chain: fused and register-tiled, and nothing else (the
     * templates below would tile the chain's nests one by one around an S x S
     * buffer of scores, about 30 times slower) */
    if (rules_attention_cpu(in, u, target, a, sp)) {
        sp->kclass = "attention";
        return true;
    }
    /* a direct NCHW convolution first (its own micro-kernel, the default) */
    ConvCtx *conv = nn == 1 ? conv_read(&ns[0], lanes, blocking_vector_regs(target), a) : NULL;
    if (conv) {
        /* one template a tile height (two rows where the image has them), the
         * model's cheaper first */
        CacheSizes caches;
        blocking_caches(target, &caches);
        conv->threads = threads;
        conv->l2 = caches.l2;
        ConvCtx *tiles[2];
        int nt = 0;
        for (int rows = 1; rows <= 2 && rows <= conv->ext[2]; rows++) {
            ConvCtx *t = arena_alloc(a, sizeof *t);
            *t = *conv;
            t->rows = rows;
            if (conv_tile(t))
                tiles[nt++] = t;
        }
        if (nt == 2 && tiles[1]->cost < tiles[0]->cost - 1e-9) {
            ConvCtx *t = tiles[0];
            tiles[0] = tiles[1];
            tiles[1] = t;
        }
        for (int i = 0; i < nt; i++) {
            TuneRule *r = check_rule(in, conv_direct_b, tiles[i], a, &dropped, d);
            if (r && !dropped)
                add_rule(in, sp, r, a,
                         tiles[i]->rows == 1 ? "rules: contraction, direct convolution micro-kernel, one output row"
                                             : "rules: contraction, direct convolution micro-kernel, two output rows");
        }
    }
    if (ncontr) {
        sp->kclass = "contraction";
        /* a bf16 product on AMX tiles first, where the core has them: one product,
         * the other nests elementwise (an epilogue) */
        if (target->amx_bf16) {
            AmxKernelCtx *ak = arena_alloc(a, sizeof *ak);
            *ak = (AmxKernelCtx){(const NestInfo *const *)infos, arena_alloc(a, sizeof(void *) * (size_t)nn), nn,
                                 lanes};
            int namx = 0;
            bool others = true;
            for (int i = 0; i < nn; i++) {
                ak->amx[i] = rules_amx_read(infos[i], target, a);
                namx += ak->amx[i] != NULL;
                others &= ak->amx[i] || !ns[i].red;
            }
            TuneRule *ar = namx == 1 && others ? check_rule(in, amx_kernel_b, ak, a, &dropped, d) : NULL;
            if (ar && !dropped)
                add_rule(in, sp, ar, a, "rules: contraction, micro-kernel on AMX tiles (tdpbf16ps), panels packed");
        }
        static const char *const origins[5] = {"rules: contraction, micro-kernel, panel packed",
                                               "rules: contraction, micro-kernel",
                                               "rules: contraction, dot-product tiles",
                                               "rules: contraction, micro-kernel, initialised per row block",
                                               "rules: contraction, micro-kernel, panel packed, row blocks in parallel"};
        /* A product of a few rows reads each element of the other operand a few
         * times.  Where that operand lies along the reduction (B[j, k], nn.Linear's
         * weight), packing it first is a second pass over it for nothing and the
         * unpacked micro-kernel leads, its columns read as rows of B (7 x 1000 x 1001
         * A·Bᵀ, one thread, Zen 3: 0.52 -> 1.09 of OpenBLAS).  Laid along the columns
         * (B[k, j]) the panel stays first: unpacked, each k of a column strip is
         * another row of B a page apart (A·B: 1.21 -> 0.66 when tried). */
        bool thin = true;
        for (int i = 0; i < nn; i++)
            if (infos[i]->red && infos[i]->nspatial >= 2)
                thin &= few_rows(infos[i]) && infos[i]->pb_kdim >= 0 && infos[i]->pb_kdim == infos[i]->pb_rank - 1;
        static const int order_wide[5] = {0, 4, 1, 3, 2}, order_thin[5] = {1, 0, 4, 3, 2};
        const int *order = thin && ncontr ? order_thin : order_wide;
        for (int vi = 0; vi < 5; vi++) {
            int variant = order[vi];
            /* the dot-product fallback only when no micro-kernel template held */
            if (variant == 2 && sp->n > (in->nscheds ? 1 : 0))
                break;
            ContrCtx *cc = arena_alloc(a, sizeof *cc);
            *cc = (ContrCtx){(const NestInfo *const *)infos, nn, variant, lanes, threads, target};
            TuneRule *r = check_rule(in, contraction_kernel_b, cc, a, &dropped, d);
            if (!r)
                continue;
            /* a micro-kernel template that lost its distribute is no micro-kernel */
            if (variant != 2 && dropped)
                continue;
            const char *origin = origins[variant];
            if (dropped)
                origin = arena_printf(a, "%s (%d statement%s refused at the defaults and dropped)", origin, dropped,
                                      dropped == 1 ? "" : "s");
            add_rule(in, sp, r, a, origin);
        }
    }
    /* a contraction no micro-kernel or dot-product template fits (one output loop: a
     * matrix-vector product, a dot product) is tuned as the reduction it is */
    if (sp->n > (in->nscheds ? 1 : 0)) {
        /* templates from the contraction rules */
    } else {
        /* row-wise: several nests over the same rows, or one that reduces along its
         * rows (a matrix-vector product) */
        bool rows = nred && (nn >= 2 || (nn == 1 && ns[0].red));
        char *kinds = arena_alloc(a, (size_t)nn);
        for (int i = 0; i < nn; i++)
            kinds[i] = column_reduction(&ns[i])                       ? 'c'
                       : pure_reduction(&ns[i]) && ns[i].nspatial == 0 ? 's'
                       : transposing(&ns[i])                           ? 't'
                                                                         : 0;
        /* nests of one loop over the rows join them (a mean's division, a loss
         * per row): without them a row mean or a cross-entropy stayed unvectorized */
        int full = 0;
        for (int i = 0; rows && i < nn; i++) {
            rows = ns[i].ext[0] == ns[0].ext[0] && (ns[i].nloops == 2 || ns[i].nloops == 1) && kinds[i] != 'c';
            full += rows && ns[i].nloops == 2;
        }
        rows = rows && full > 0 && ns[0].nloops == 2;
        RowsCtx *rc = arena_alloc(a, sizeof *rc);
        rc->ns = (const NestInfo *const *)infos;
        rc->nn = nn;
        rc->lanes = lanes;
        rc->kinds = kinds;
        TuneRule *r = check_rule(in, rows ? rows_b : plain_b, rc, a, &dropped, d);
        if (!r)
            return false;
        if (rows) {
            /* a masked row (a triangular sum) is named so: the default schedule
             * leaves it to mask-bounds, which narrows the loop to the rows' ranges */
            bool masked = false;
            for (int i = 0; i < nn; i++)
                masked |= has_guard(ns[i].top);
            sp->kclass = "row-wise";
            add_rule(in, sp, r, a, dropped ? arena_printf(a, "rules: row-wise (%d statements dropped)", dropped)
                                   : masked ? "rules: row-wise, masked"
                                            : "rules: row-wise");
        } else {
            bool anycol = false, anyscalar = false, anyt = false;
            for (int i = 0; i < nn; i++)
                anycol |= kinds[i] == 'c', anyscalar |= kinds[i] == 's', anyt |= kinds[i] == 't';
            sp->kclass = nred ? "reduction" : "elementwise";
            add_rule(in, sp, r, a,
                     !nred      ? (anyt ? "rules: elementwise, transposed in tiles" : "rules: elementwise")
                     : anycol   ? "rules: column reduction, output rows vectorized"
                     : anyscalar ? "rules: reduction to one element, vector partial sums"
                                 : "rules: parallel rows");
        }
    }
    return sp->n > 0;
}
