/* Staging: cache(buffer, loop) copies the box of a buffer that one iteration of the
 * loop touches into a small local buffer at the start of the iteration, redirects
 * every access inside the loop to it, and copies it back at the end when the loop
 * writes the buffer (read staging, and write/accumulate staging).  padding and layout
 * then change how a staged buffer (or any temporary) is stored: padding the
 * innermost dimension against conflicts, transposing a packed panel.
 *
 * Sequentially the copy is exact: every element the iteration reads was copied in,
 * every element it writes is copied out, and elements copied out unwritten carry
 * the values copied in.  Copies are guarded where the box may leave the buffer
 * (tail tiles); padded inputs copy their pad value instead.  The staged buffer is
 * one per kernel, so staging under a parallel loop is refused. */
#include <string.h>

#include "gpu_int.h"
#include "xform_int.h"

typedef struct Redirect {
    Kernel *k;
    Buffer *from, *to;
    Expr **lo;
    const bool *keep;   /* the dimensions the staged buffer keeps (the box's wider than one) */
    const int64_t *width; /* the box's widths */
    const Var *only;      /* using=: only the loads whose subscripts use it */
} Redirect;

/* Whether some subscript of an access uses v (cache's using=). */
static bool idx_uses(Expr *const *idx, int rank, const Var *v)
{
    for (int d = 0; d < rank; d++)
        if (ir_expr_uses_var(idx[d], v))
            return true;
    return false;
}

/* An index into the box, relative to its corner, in the kept dimensions.  Where
 * the box is one element wide every access the region covers is at its corner, so
 * the index is 0 (written so, not as idx - lo, which need not simplify: a
 * grouped-query head's `(hk*G + hg) / G - hk`). */
static Expr **shifted(Kernel *k, Expr **idx, Expr **lo, int rank, const bool *keep, const int64_t *width)
{
    Expr **r = arena_alloc(k->arena, sizeof(Expr *) * (size_t)rank);
    for (int d = 0, o = 0; d < rank; d++)
        if (keep[d])
            r[o++] = width[d] == 1 ? ir_int(k, 0)
                                   : xf_simplify_affine(k, ir_bin(k, IE_SUB, idx[d], ir_clone_expr(k, lo[d])));
    return r;
}

static void redirect_cb(Expr *e, void *p)
{
    Redirect *r = p;
    if (e->kind != IE_LOAD || e->u.load.buf != r->from ||
        (r->only && !idx_uses(e->u.load.idx, r->from->rank, r->only)))
        return;
    e->u.load.idx = shifted(r->k, e->u.load.idx, r->lo, r->from->rank, r->keep, r->width);
    e->u.load.buf = r->to;
    e->u.load.guarded = false;
    e->dtype = r->to->dtype;
}

static void redirect_stores(Redirect *r, Node *n)
{
    if (n->kind == N_STMT) {
        if (n->u.stmt.buf == r->from) {
            n->u.stmt.idx = shifted(r->k, n->u.stmt.idx, r->lo, r->from->rank, r->keep, r->width);
            n->u.stmt.buf = r->to;
            n->u.stmt.guarded = false; /* the staged box holds every element reached */
        }
        return;
    }
    NodeList *b = ir_body(n);
    for (int i = 0; i < b->n; i++)
        redirect_stores(r, b->v[i]);
}

/* The copy nest: for c0..: [guard] dst[..] = src[..]; with `in` the global side
 * is read, else written.  padded: the accesses staged were guarded (a padded
 * split's tiles, passes/xform_pad.c), so the copy is too: a guarded load gives
 * the zeros those reads gave past the edge, a guarded store drops what the
 * iterations past it wrote. */
static Node *copy_nest(Kernel *k, Buffer *glob, Buffer *loc, const Region *r, const bool *keep, bool in, Node *l,
                       const bool *lo_ok, const bool *hi_ok, bool padded)
{
    Var *cv[8] = {0};
    Node *top = NULL, *cur = NULL;
    for (int d = 0; d < r->rank; d++) {
        if (!keep[d])
            continue;
        /* named by the buffer's dimension: the same names whichever are dropped */
        cv[d] = ir_new_var(k, xf_fresh_name(k, arena_printf(k->arena, "%s_c%d", loc->name, d)));
        Node *x = ir_loop(k, cv[d], ir_int(k, 0), ir_int(k, r->width[d]), l->span);
        if (cur)
            ir_list_push(&cur->u.loop.body, x, cur);
        else
            top = x;
        cur = x;
    }
    Expr *gidx[8], *lidx[8], *cond = NULL;
    int nl = 0;
    for (int d = 0; d < r->rank; d++) {
        gidx[d] = cv[d] ? xf_simplify_affine(k, ir_bin(k, IE_ADD, ir_clone_expr(k, r->lo[d]), ir_var(k, cv[d])))
                        : xf_simplify_affine(k, ir_clone_expr(k, r->lo[d]));
        if (cv[d])
            lidx[nl++] = ir_var(k, cv[d]);
        if (!lo_ok[d]) {
            Expr *c = ir_bin(k, IE_GE, ir_clone_expr(k, gidx[d]), ir_int(k, 0));
            cond = cond ? ir_bin(k, IE_AND, cond, c) : c;
        }
        if (!hi_ok[d]) {
            Expr *c = ir_bin(k, IE_LT, ir_clone_expr(k, gidx[d]), ir_clone_expr(k, glob->shape[d]));
            cond = cond ? ir_bin(k, IE_AND, cond, c) : c;
        }
    }
    Node *s;
    if (in) {
        Expr *ld = ir_load(k, glob, gidx);
        ld->u.load.guarded = glob->has_pad || (padded && cond);
        s = ir_stmt(k, loc, lidx, SOP_ASSIGN, ir_cast(k, ld, dtype_compute(loc->dtype)), l->span);
    } else {
        Expr *ld = ir_cast(k, ir_load(k, loc, lidx), dtype_compute(glob->dtype));
        s = ir_stmt(k, glob, gidx, SOP_ASSIGN, ld, l->span);
        s->u.stmt.guarded = padded && cond;
    }
    Node *holder = cur;
    if (cond && !(in && glob->has_pad) && !padded) {
        Node *g = ir_guard(k, cond, l->span);
        ir_list_push(&cur->u.loop.body, g, cur);
        holder = g;
    }
    ir_list_push(ir_body(holder), s, holder);
    return top;
}

/* A temporary whose box is produced afresh by every iteration of l needs no copies:
 * every access of it lies inside l, and the first one in l's body is an
 * unguarded `=` nest whose loops run exactly over the box (one loop per dimension
 * wider than one element) and which touches it nowhere else.  Then no value flows
 * into an iteration (copy-in) or out of it (copy-back), and the staged buffer is
 * the whole of the temporary's life: softmax's row of exponentials, kept in a
 * local row instead of a buffer of R x C, or a 16-bit GEMM's f32 accumulator
 * tile.  `mine` are the accesses inside l in program order. */
static bool covered_first(Kernel *k, Node *l, Buffer *b, const AccVec *mine, const Region *r);

static bool fresh_each_iteration(Kernel *k, Node *l, Buffer *b, const AccVec *mine, const Region *r)
{
    if (b->kind != BUF_TEMP || mine->n == 0)
        return false;
    AccVec all = {0};
    acc_collect(k, NULL, &all);
    bool inside = true;
    for (int i = 0; i < all.n && inside; i++)
        if (all.v[i].buf == b && !xf_contains(l, all.v[i].stmt))
            inside = false;
    acc_free(&all);
    return inside && covered_first(k, l, b, mine, r);
}

/* Whether guard g holds every access of b in the iteration (mine): where it fails
 * b is not touched at all. */
static bool holds_all(const Node *g, const AccVec *mine)
{
    for (int i = 0; i < mine->n; i++)
        if (!xf_contains(g, mine->v[i].stmt))
            return false;
    return true;
}

/* The first access of b in each iteration of l is an unguarded `=` nest that
 * writes every element of the box (its loops run exactly over it), touching b
 * nowhere else but at the element just written: no read in the iteration sees a
 * value from before it, so a copy-in would be dead (an output tile the iteration
 * computes whole, staged in shared memory for a coalesced write-back). */
static bool covered_first(Kernel *k, Node *l, Buffer *b, const AccVec *mine, const Region *r)
{
    if (mine->n == 0)
        return false;
    const Access *w = &mine->v[0];
    Node *s = w->stmt;
    if (!w->write || s->u.stmt.op != SOP_ASSIGN)
        return false;
    /* The loops between l and the statement, each over one dimension of the box. */
    bool used[8] = {0};
    Node *top = s;
    for (Node *p = s->parent; p != l; p = p->parent) {
        /* A guard that holds every access of b in the iteration leaves it untouched
         * where it fails (the last part of row blocks dealt out to threads, `if
         * f_ioo * 8 + f_ioi < blocks`): nothing flows in or out then either. */
        if (p->kind == N_IF && holds_all(p, mine))
            continue;
        if (p->kind != N_LOOP)
            return false; /* a guard: some elements may be left unwritten */
        int64_t lo, hi;
        if (!xf_const(k, p->u.loop.lo, &lo) || !xf_const(k, p->u.loop.hi, &hi) || lo != 0)
            return false;
        int dim = -1;
        for (int d = 0; d < r->rank; d++) {
            Expr *off = xf_simplify_affine(k, ir_bin(k, IE_SUB, ir_clone_expr(k, s->u.stmt.idx[d]),
                                                     ir_clone_expr(k, r->lo[d])));
            if (off->kind == IE_VAR && off->u.var == p->u.loop.var)
                dim = d;
        }
        if (dim < 0 || used[dim] || hi != r->width[dim])
            return false;
        used[dim] = true;
        top = p;
    }
    for (int d = 0; d < r->rank; d++) {
        if (used[d])
            continue;
        /* a dimension fixed at l by a subscript that is not affine (the batch of
         * collapsed loops, bh / H): the box's one element is that subscript */
        if (r->width[d] == 1 && xf_expr_equal(k, s->u.stmt.idx[d], r->lo[d]))
            continue;
        Expr *off = xf_simplify_affine(k, ir_bin(k, IE_SUB, ir_clone_expr(k, s->u.stmt.idx[d]),
                                                 ir_clone_expr(k, r->lo[d])));
        if (r->width[d] != 1 || off->kind != IE_INT || off->u.i != 0)
            return false;
    }
    /* Inside the producing nest, b is touched only at the element the statement
     * has just written, later in the same innermost body (a per-element
     * accumulator: `acc[i, j] = 0; for k { acc[i, j] += ..}; C[i, j] = f(acc[i,
     * j])`, the f32 sum of a 16-bit product); every other access comes after the
     * whole box has been written. */
    for (int i = 1; i < mine->n; i++) {
        const Access *a = &mine->v[i];
        if (!xf_contains(top, a->stmt))
            continue;
        if (s->parent == l || !xf_contains(s->parent, a->stmt))
            return false;
        for (int d = 0; d < b->rank; d++)
            if (!xf_expr_equal(k, a->idx[d], s->u.stmt.idx[d]))
                return false;
    }
    return true;
}

/* Whether expression x reads a variable of a loop inside n. */
static bool uses_inner_var(const Node *n, const Expr *x)
{
    if (n->kind == N_LOOP && ir_expr_uses_var(x, n->u.loop.var))
        return true;
    const NodeList *b = n->kind == N_STMT || n->kind == N_PREFETCH ? NULL : ir_body((Node *)n);
    for (int i = 0; b && i < b->n; i++)
        if (uses_inner_var(b->v[i], x))
            return true;
    return false;
}

/* Dimension d is fixed in l: no access inside l indexes it by anything that varies
 * there (a batch index of an outer loop), so the box is one element wide there by
 * the loop structure, whatever the sizes. */
static bool fixed_dim(const Node *l, const AccVec *mine, int d)
{
    for (int i = 0; i < mine->n; i++)
        for (int j = 0; j < l->u.loop.body.n; j++)
            if (uses_inner_var(l->u.loop.body.v[j], mine->v[i].idx[d]))
                return false;
    return true;
}

bool xf_cache(XfCtx *c)
{
    Buffer *b = xf_arg_buffer(c, 0);
    Node *l = b ? xf_arg_loop(c, 1) : NULL;
    if (!l)
        return false;
    MemSpace mem;
    if (!xf_mem_kwarg(c, &mem, true))
        return false;
    const SchedArg *nm = xf_kwarg(c, "name");
    if (nm && (nm->kind != SARG_NAME || ir_find_buffer(c->k, nm->name))) {
        xf_err(c, "name= needs a new buffer name");
        return false;
    }
    if (b->rank == 0 || b->rank > 8) {
        xf_err(c, "%s has rank %d; staging handles 1 to 8 dimensions", b->name, b->rank);
        return false;
    }
    const Node *w;
    bool under_par = xf_inside_kind(l, LOOP_PARALLEL, true, &w);
    if (under_par && mem != MEM_LOCAL) {
        xf_err(c, "a %s copy would be shared by the iterations of parallel loop %s",
               mem_space_name(mem), w->u.loop.var->name);
        return false;
    }
    if (l->u.loop.kind == LOOP_VECTOR) {
        xf_err(c, "%s is a vector loop", l->u.loop.var->name);
        return false;
    }
    /* mem=global: a temporary the caller allocates (the harness, perfc lib's entry
     * points) instead of an array on the running thread's stack, for a copy too
     * large for a stack (K and V of an attention head staged as f32).  One copy for
     * everything, so never under a loop whose iterations run at once. */
    if (mem == MEM_GLOBAL)
        for (const Node *p = l; p; p = p->parent)
            if (p->kind == N_LOOP && p->u.loop.kind != LOOP_SERIAL && p->u.loop.kind != LOOP_UNROLL) {
                xf_err(c, "a global copy of %s at %s would be shared by the iterations of %s loop %s; "
                          "stage it outside that loop",
                       b->name, l->u.loop.var->name, loop_kind_name(p->u.loop.kind), p->u.loop.var->name);
                return false;
            }
    /* using=LOOP: only the accesses whose subscripts use the loop's variable are
     * staged, the others read the buffer in place.  For an input read in two roles
     * (a Gram matrix X·Xᵀ: X[i, f] as A, X[j, f] as B), each role its own packed copy. */
    const SchedArg *us = xf_kwarg(c, "using");
    const Var *only = NULL;
    if (us) {
        StrBuf why = {0};
        Node *ul = us->kind == SARG_NAME ? xf_find_loop(c->k, us->name, &why) : NULL;
        sb_free(&why);
        if (!ul || !xf_contains(l, ul)) {
            xf_err(c, "using= names a loop inside %s whose variable picks the accesses to stage",
                   l->u.loop.var->name);
            return false;
        }
        only = ul->u.loop.var;
    }
    AccVec all = {0}, mine = {0};
    acc_collect(c->k, l, &all);
    bool writes = false, padded = false;
    for (int i = 0; i < all.n; i++) {
        if (all.v[i].buf != b)
            continue;
        writes |= all.v[i].write;
        if (only && !idx_uses(all.v[i].idx, b->rank, only))
            continue; /* read in place */
        if (mine.n == mine.cap) {
            mine.cap = mine.cap ? 2 * mine.cap : 8;
            mine.v = xrealloc(mine.v, (size_t)mine.cap * sizeof(Access));
        }
        mine.v[mine.n++] = all.v[i];
        padded |= all.v[i].load ? all.v[i].load->u.load.guarded && !b->has_pad
                                : all.v[i].write && all.v[i].stmt->u.stmt.guarded;
    }
    acc_free(&all);
    if (only && (writes || mine.n == 0)) {
        xf_err(c, writes ? "using= stages some of the reads of %s; it is written in %s, and a copy of "
                           "part of its accesses would go stale"
                         : "no access of %s in %s uses the loop using= names",
               b->name, l->u.loop.var->name);
        acc_free(&mine);
        return false;
    }
    if (writes && under_par) {
        /* Copying the whole box back could overwrite what another thread wrote. */
        xf_err(c, "%s is written in %s, inside parallel loop %s; stage it before marking the "
                  "loop parallel",
               b->name, l->u.loop.var->name, w->u.loop.var->name);
        acc_free(&mine);
        return false;
    }
    if (mine.n == 0) {
        xf_err(c, "%s is not accessed in loop %s", b->name, l->u.loop.var->name);
        acc_free(&mine);
        return false;
    }
    /* One copy per iteration of l: written by the threads of a parallel loop inside
     * l, it would be shared by them (a race the interpreter cannot see). */
    for (int i = 0; i < mine.n; i++) {
        if (!mine.v[i].write)
            continue;
        for (Node *p = mine.v[i].stmt->parent; p && p != l; p = p->parent)
            if (p->kind == N_LOOP && p->u.loop.kind == LOOP_PARALLEL) {
                xf_err(c, "%s is written inside parallel loop %s, within %s: one staged copy would be "
                          "shared by its threads; stage it inside %s",
                       b->name, p->u.loop.var->name, l->u.loop.var->name, p->u.loop.var->name);
                acc_free(&mine);
                return false;
            }
    }
    Region r;
    StrBuf why = {0};
    bool ok = xf_region(c->k, l, &mine, false, &r, &why);
    bool fresh = ok && fresh_each_iteration(c->k, l, b, &mine, &r);
    /* (local staging keeps its copy-in, which gpu-dead-fill drops where the next
     * nest overwrites it: schedules name the copy-back loops after it, `acc_c01`) */
    bool no_in = ok && !fresh && writes && mem == MEM_SHARED && covered_first(c->k, l, b, &mine, &r);
    /* squeeze=1: the staged buffer leaves out the dimensions l fixes */
    const SchedArg *sq = xf_kwarg(c, "squeeze");
    if (sq && (sq->kind != SARG_INT || sq->ival < 0 || sq->ival > 1)) {
        xf_err(c, "squeeze= takes 0 or 1");
        acc_free(&mine);
        sb_free(&why);
        return false;
    }
    bool fixed[8] = {0};
    for (int d = 0; ok && sq && sq->ival && d < r.rank; d++)
        fixed[d] = r.width[d] == 1 && fixed_dim(l, &mine, d);
    acc_free(&mine);
    if (!ok) {
        xf_err(c, "%s", why.s);
        sb_free(&why);
        return false;
    }
    sb_free(&why);
    int64_t elems = 1;
    for (int d = 0; d < r.rank; d++)
        elems *= r.width[d];
    if (elems > (1 << 24)) {
        xf_err(c, "the tile of %s in %s has %lld elements; too large to stage", b->name,
               l->u.loop.var->name, (long long)elems);
        return false;
    }
    /* On a GPU a bound loop around the copy is like a parallel loop: when the box
     * does not move with its variable, every thread (or block) copies the same
     * elements in and writes them back, and the write-backs race.  (bind accepted
     * the loop while its update was one `+=`, which the back end combines across
     * the threads; the copy would split it into a load and a store per thread.) */
    if (writes)
        for (const Node *p = l; p; p = p->parent) {
            if (p->kind != N_LOOP || !(gpu_is_block(p->u.loop.kind) || gpu_is_thread(p->u.loop.kind)))
                continue;
            /* a staged buffer private to the loop's iterations (shared memory per
             * block, a local one per thread too) has one copy per iteration */
            bool own = false;
            for (int i = 0; i < b->nprivate_in && b->kind == BUF_TEMP; i++)
                own |= b->private_in[i] == p->u.loop.var &&
                       (b->mem == MEM_LOCAL || (b->mem == MEM_SHARED && gpu_is_block(p->u.loop.kind)));
            if (own)
                continue;
            bool moves = false;
            for (int d = 0; d < r.rank && !moves; d++)
                moves = ir_expr_uses_var(r.lo[d], p->u.loop.var);
            if (!moves) {
                xf_err(c, "%s is written in %s, inside loop %s (%s), and the staged box does not move with "
                          "%s: every one of its %s would copy the same elements back, a race; stage %s "
                          "before binding %s, or at a loop inside it that the box moves with",
                       b->name, l->u.loop.var->name, p->u.loop.var->name, loop_kind_name(p->u.loop.kind),
                       p->u.loop.var->name, gpu_is_block(p->u.loop.kind) ? "blocks" : "threads", b->name,
                       p->u.loop.var->name);
                return false;
            }
        }
    if (c->dry)
        return true;

    Kernel *k = c->k;
    /* Copies need guards unless the box provably stays inside the buffer. */
    bool lo_ok[8], hi_ok[8];
    for (int d = 0; d < r.rank; d++) {
        Expr *hi = ir_simplify(k, ir_bin(k, IE_ADD, ir_clone_expr(k, r.lo[d]), ir_int(k, r.width[d])));
        lo_ok[d] = xf_prove_le(k, l, ir_int(k, 0), r.lo[d]);
        hi_ok[d] = xf_prove_le(k, l, hi, b->shape[d]);
    }
    const char *name = nm ? nm->name
                          : xf_fresh_buffer_name(k, arena_printf(k->arena, "%s_%s", b->name,
                                                                  l->u.loop.var->name));
    /* The staged buffer has the box's shape, with squeeze=1 less the dimensions l
     * fixes (a batch index of an outer loop: a batched product's tiles are
     * matrices, which is what mma and wgmma take).  A dimension one element wide
     * only because of a size always keeps its place, so the buffer's rank and its
     * copy loops' names do not depend on the sizes, and without squeeze schedules
     * that name the staged buffer's dimensions (layout, padding) see them all. */
    bool keep[8];
    int64_t width[8];
    int nkeep = 0;
    for (int d = 0; d < r.rank; d++)
        if ((keep[d] = !fixed[d]))
            width[nkeep++] = r.width[d];
    if (nkeep == 0)
        keep[r.rank - 1] = true, width[nkeep++] = 1;
    Buffer *loc = xf_add_temp(k, name, b->dtype, mem, nkeep, width, l->span);
    /* a global copy is one for all iterations: not private to any of them, so a
     * later parallel or bind around it sees the dependence */
    if (mem != MEM_GLOBAL)
        xf_set_private(k, loc, l, true);
    Redirect rd = {.k = k, .from = b, .to = loc, .lo = r.lo, .keep = keep, .width = r.width, .only = only};
    for (int i = 0; i < l->u.loop.body.n; i++) {
        xf_visit_exprs(k, l->u.loop.body.v[i], redirect_cb, &rd);
        redirect_stores(&rd, l->u.loop.body.v[i]);
    }
    /* A prefetch of b inside l keeps fetching b (the copy-in reads it); with no
     * copies b is no longer read there at all. */
    if (fresh) {
        xf_drop_prefetches(k, l, b);
        return true;
    }
    if (!no_in)
        ir_list_insert(&l->u.loop.body, 0, copy_nest(k, b, loc, &r, keep, true, l, lo_ok, hi_ok, padded), l);
    if (writes)
        ir_list_push(&l->u.loop.body, copy_nest(k, b, loc, &r, keep, false, l, lo_ok, hi_ok, padded), l);
    return true;
}

/* mem=local|shared|global of a staging step (cache, gather): local when absent.
 * global only where `global` is set (cache). */
bool xf_mem_kwarg(XfCtx *c, MemSpace *mem, bool global)
{
    const SchedArg *m = xf_kwarg(c, "mem");
    *mem = MEM_LOCAL;
    if (!m)
        return true;
    if (m->kind == SARG_NAME && strcmp(m->name, "shared") == 0)
        *mem = MEM_SHARED;
    else if (global && m->kind == SARG_NAME && strcmp(m->name, "global") == 0)
        *mem = MEM_GLOBAL;
    else if (!(m->kind == SARG_NAME && strcmp(m->name, "local") == 0)) {
        xf_err(c, global ? "mem= takes local, shared or global" : "mem= takes local or shared");
        return false;
    }
    return true;
}

/* ---------------- padding and layout ---------------- */

Buffer *xf_temp_arg(XfCtx *c)
{
    Buffer *b = xf_arg_buffer(c, 0);
    if (b && b->kind != BUF_TEMP) {
        xf_err(c, "%s is an %s; its layout is the kernel's interface", b->name,
               b->kind == BUF_IN ? "input" : "output");
        return NULL;
    }
    return b;
}

/* Whether a guarded access (a padded split's `X?[..]`, passes/xform_pad.c) reads or
 * writes the buffer: its guard compares the index with the buffer's shape, so a
 * pad would count as inside it. */
typedef struct Guarded {
    const Buffer *b;
    bool found;
} Guarded;

static void guarded_cb(Expr *e, void *p)
{
    Guarded *g = p;
    if (e->kind == IE_LOAD && e->u.load.buf == g->b && e->u.load.guarded)
        g->found = true;
}

static bool guarded_stmt(Node *n, void *p)
{
    Guarded *g = p;
    if (n->kind == N_STMT && n->u.stmt.buf == g->b && n->u.stmt.guarded)
        g->found = true;
    return true;
}

bool xf_padding(XfCtx *c)
{
    Buffer *b = xf_temp_arg(c);
    int64_t amount, dim;
    if (!b || !xf_arg_int(c, 1, &amount))
        return false;
    dim = b->rank - 1;
    const SchedArg *d = xf_kwarg(c, "dim");
    if (d) {
        if (d->kind != SARG_INT) {
            xf_err(c, "dim= takes an integer");
            return false;
        }
        dim = d->ival;
    }
    if (dim < 0 || dim >= b->rank) {
        xf_err(c, "%s has no dimension %lld", b->name, (long long)dim);
        return false;
    }
    if (amount < 0 || amount > 1024) {
        xf_err(c, "padding must be 0 to 1024 elements");
        return false;
    }
    Guarded g = {b, false};
    xf_visit_exprs(c->k, NULL, guarded_cb, &g);
    xf_walk(c->k, guarded_stmt, &g);
    if (g.found && amount > 0) {
        xf_err(c, "%s is read or written past a padded split's edge (%s?[..]), which is checked against its "
                  "size: its pad would be read as elements",
               b->name, b->name);
        return false;
    }
    if (!c->dry)
        b->shape[dim] = ir_simplify(c->k, ir_bin(c->k, IE_ADD, b->shape[dim], ir_int(c->k, amount)));
    return true;
}

typedef struct Perm {
    Buffer *b;
    int p[8];
    Kernel *k;
} Perm;

static void permute(Perm *pm, Expr **idx)
{
    Expr *t[8];
    for (int i = 0; i < pm->b->rank; i++)
        t[i] = idx[pm->p[i]];
    memcpy(idx, t, sizeof(Expr *) * (size_t)pm->b->rank);
}

static void perm_cb(Expr *e, void *p)
{
    Perm *pm = p;
    if (e->kind == IE_LOAD && e->u.load.buf == pm->b)
        permute(pm, e->u.load.idx);
}

static bool perm_stmt(Node *n, void *p)
{
    Perm *pm = p;
    if (n->kind == N_STMT && n->u.stmt.buf == pm->b)
        permute(pm, n->u.stmt.idx);
    if (n->kind == N_PREFETCH && n->u.pf.buf == pm->b) {
        int64_t t[8];
        permute(pm, n->u.pf.idx);
        for (int i = 0; i < pm->b->rank; i++)
            t[i] = n->u.pf.ext[pm->p[i]];
        memcpy(n->u.pf.ext, t, sizeof(int64_t) * (size_t)pm->b->rank);
    }
    return true;
}

bool xf_layout(XfCtx *c)
{
    Buffer *b = xf_temp_arg(c);
    if (!b)
        return false;
    if (xf_npos(c) != b->rank + 1 || b->rank > 8) {
        xf_err(c, "%s has %d dimensions: give a permutation of 0..%d", b->name, b->rank, b->rank - 1);
        return false;
    }
    Perm pm = {.b = b, .k = c->k};
    bool seen[8] = {0}, ident = true;
    for (int i = 0; i < b->rank; i++) {
        int64_t v;
        if (!xf_arg_int(c, 1 + i, &v))
            return false;
        if (v < 0 || v >= b->rank || seen[v]) {
            xf_err(c, "not a permutation of 0..%d", b->rank - 1);
            return false;
        }
        seen[v] = true;
        pm.p[i] = (int)v;
        ident &= v == i;
    }
    if (c->dry || ident)
        return true;
    xf_visit_exprs(c->k, NULL, perm_cb, &pm);
    xf_walk(c->k, perm_stmt, &pm);
    permute(&pm, b->shape);
    return true;
}
