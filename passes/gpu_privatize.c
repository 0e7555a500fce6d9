/* GPU target legalisation, pass `gpu-privatize`: per-thread copies of local buffers.
 *
 * The IR has one copy of a MEM_LOCAL buffer, and a GPU schedule indexes it by the
 * thread loops' variables, e.g. acc[ty*8 + r, tx*8 + c] under ty (thread.y) and
 * tx (thread.x): each thread uses its own 8 x 8 elements.  On a GPU a local buffer
 * lives in each thread's registers, so this pass states that in the IR: when every
 * access of a dimension in the launch has a term of the same thread dimension with
 * the same coefficient w, and the rest of the index provably stays in 0..w-1, the
 * dimension shrinks to w, the thread terms leave the index (acc[r, c]), and the
 * buffer is marked as having one copy per thread along that dimension
 * (Buffer.thread_copies: the block's extent there), which the interpreter and the
 * CUDA back end both honour.
 *
 * Why it is legal: element (t, e) of the old buffer, with t the thread's term and
 * e in 0..w-1, becomes element e of thread t's copy; the map is one to one, every
 * access reads and writes the element it did before, and the copy is reached only
 * from inside the loops that name the thread (the verifier checks that), so no
 * thread sees another's copy.
 *
 * Accesses whose thread mappings disagree (acc[tx, ..] in one nest, acc[ty, ..]
 * in another) are fine when every write lies outside thread loops: each thread
 * runs those writes itself and fills a whole copy of its own (a `cache` at a block
 * loop), so the buffer stays whole, one copy per thread.  When thread loops write
 * it, a thread would read elements another thread wrote, which registers cannot
 * give: the buffer moves to shared memory, one copy per block (the IR's meaning
 * within the block), provided each thread loop that writes it reads back only
 * what it writes at the same index; the CUDA back end puts barriers between the
 * block-level steps that hand shared memory over.  Anything else is refused here,
 * with the buffer named. */
#include <stdlib.h>
#include <string.h>

#include "gpu_int.h"

typedef struct PrivCtx {
    Kernel *k;
    const Node *top;
    const Buffer *b;
    const Var **tvars;
    int ntvars;
    int tdim[8];            /* -2 unseen, -1 no thread term, -3 not analysable, else x/y/z */
    int64_t coef[8];
    bool ok;
    int nlaunch;            /* accesses seen */
    int tdepth;             /* thread loops around the node being visited */
    bool thread_writes;     /* some write of b lies inside a thread loop */
} PrivCtx;

/* x with every thread variable of the launch replaced by 0, simplified. */
static Expr *drop_thread_terms(Kernel *k, const Var **tv, int nt, Expr *x)
{
    for (int i = 0; i < nt; i++)
        if (ir_expr_uses_var(x, tv[i]))
            x = ir_subst(k, x, tv[i], ir_int(k, 0));
    return ir_simplify(k, x);
}

static void priv_access(PrivCtx *p, Expr *const *idx)
{
    const Buffer *b = p->b;
    p->nlaunch++;
    for (int d = 0; d < b->rank && d < 8 && p->ok; d++) {
        ArAff a;
        bool aok = ar_aff_of(p->k, idx[d], &a);
        int td = -1, nt = 0;
        int64_t w = 0;
        for (int i = 0; aok && i < a.n; i++) {
            if (!a.k[i]) continue;
            for (int t = 0; t < p->ntvars; t++)
                if (p->tvars[t]->id == a.var[i]) {
                    const Node *l = gpu_loop_of_var(p->top, p->tvars[t]);
                    td = l ? gpu_dim(l->u.loop.kind) : -1;
                    w = a.k[i];
                    nt++;
                }
        }
        if (!aok || nt > 1) td = -3;   /* not analysable: never privatized */
        if (td >= 0) {
            int64_t lo, hi;
            Expr *rest = drop_thread_terms(p->k, p->tvars, p->ntvars, ir_clone_expr(p->k, idx[d]));
            if (w <= 0 || !gpu_irange(p->k, p->top, rest, &lo, &hi) || lo < 0 || hi >= w) td = -3;
        }
        if (p->tdim[d] == -2) {
            p->tdim[d] = td;
            p->coef[d] = w;
        } else if (p->tdim[d] != td || (td >= 0 && p->coef[d] != w)) {
            /* mixed: threads would see each other's elements if any access is
             * under a thread loop with a different mapping */
            if ((p->tdim[d] >= 0 || td >= 0) && p->tdim[d] != -3 && td != -3) p->ok = false;
            p->tdim[d] = -3;
        }
    }
}

static void priv_expr(PrivCtx *p, const Expr *x)
{
    if (!x) return;
    if (x->kind == IE_LOAD) {
        if (x->u.load.buf == p->b) priv_access(p, x->u.load.idx);
        for (int i = 0; i < x->u.load.buf->rank; i++) priv_expr(p, x->u.load.idx[i]);
        return;
    }
    for (int i = 0; i < ir_expr_arity(x->kind); i++) priv_expr(p, x->args[i]);
}

static void priv_node(PrivCtx *p, const Node *n)
{
    switch (n->kind) {
    case N_STMT:
        if (n->u.stmt.buf == p->b) {
            priv_access(p, n->u.stmt.idx);
            p->thread_writes |= p->tdepth > 0;
        }
        for (int i = 0; i < n->u.stmt.buf->rank; i++) priv_expr(p, n->u.stmt.idx[i]);
        priv_expr(p, n->u.stmt.value);
        return;
    case N_LOOP: priv_expr(p, n->u.loop.lo); priv_expr(p, n->u.loop.hi); break;
    case N_IF: priv_expr(p, n->u.guard.cond); break;
    case N_PREFETCH: return;
    }
    bool t = n->kind == N_LOOP && gpu_is_thread(n->u.loop.kind);
    p->tdepth += t;
    const NodeList *body = ir_body((Node *)n);
    for (int i = 0; i < body->n; i++) priv_node(p, body->v[i]);
    p->tdepth -= t;
}

/* ---- the rewrite: the chosen dimensions lose their thread terms */

typedef struct Rewrite {
    Kernel *k;
    const Buffer *b;
    const bool *dims;
    const Var **tvars;
    int ntvars;
} Rewrite;

static void rw_index(Rewrite *r, Expr **idx)
{
    for (int d = 0; d < r->b->rank && d < 8; d++)
        if (r->dims[d]) idx[d] = drop_thread_terms(r->k, r->tvars, r->ntvars, idx[d]);
}

static void rw_expr(Rewrite *r, Expr *x)
{
    if (!x) return;
    if (x->kind == IE_LOAD) {
        for (int i = 0; i < x->u.load.buf->rank; i++) rw_expr(r, x->u.load.idx[i]);
        if (x->u.load.buf == r->b) rw_index(r, x->u.load.idx);
        return;
    }
    for (int i = 0; i < ir_expr_arity(x->kind); i++) rw_expr(r, x->args[i]);
}

static void rw_node(Rewrite *r, Node *n)
{
    switch (n->kind) {
    case N_STMT:
        for (int i = 0; i < n->u.stmt.buf->rank; i++) rw_expr(r, n->u.stmt.idx[i]);
        rw_expr(r, n->u.stmt.value);
        if (n->u.stmt.buf == r->b) rw_index(r, n->u.stmt.idx);
        return;
    case N_LOOP: rw_expr(r, n->u.loop.lo); rw_expr(r, n->u.loop.hi); break;
    case N_IF: rw_expr(r, n->u.guard.cond); break;
    case N_PREFETCH: return;
    }
    NodeList *body = ir_body(n);
    for (int i = 0; i < body->n; i++) rw_node(r, body->v[i]);
}

static void collect_tvars(const Node *n, const Var **tv, int *nt)
{
    if (n->kind == N_LOOP && gpu_is_thread(n->u.loop.kind))
        tv[(*nt)++] = n->u.loop.var;
    const NodeList *body = ir_body((Node *)n);
    for (int i = 0; body && i < body->n; i++) collect_tvars(body->v[i], tv, nt);
}

/* ---- demotion to shared memory */


typedef struct Own {
    const Buffer *b;
    const Node *stmts[64];  /* the writes of b in one outermost thread loop */
    int nw;
    bool ok;
} Own;

static void own_writes(Own *o, const Node *n)
{
    if (n->kind == N_STMT && n->u.stmt.buf == o->b) {
        if (o->nw == 64) o->ok = false;
        else o->stmts[o->nw++] = n;
    }
    const NodeList *body = ir_body((Node *)n);
    for (int i = 0; body && i < body->n; i++) own_writes(o, body->v[i]);
}

/* Every read of o->b in x is at the index of one of the writes collected. */
static void own_reads_expr(Own *o, const Expr *x)
{
    if (!x || !o->ok) return;
    if (x->kind == IE_LOAD) {
        if (x->u.load.buf == o->b) {
            bool same = false;
            for (int w = 0; w < o->nw && !same; w++) {
                same = true;
                for (int d = 0; d < o->b->rank && same; d++)
                    same = gpu_same_expr(o->stmts[w]->u.stmt.idx[d], x->u.load.idx[d]);
            }
            o->ok &= same;
        }
        for (int i = 0; i < x->u.load.buf->rank; i++) own_reads_expr(o, x->u.load.idx[i]);
        return;
    }
    for (int i = 0; i < ir_expr_arity(x->kind); i++) own_reads_expr(o, x->args[i]);
}

static void own_reads(Own *o, const Node *n)
{
    switch (n->kind) {
    case N_STMT:
        for (int i = 0; i < n->u.stmt.buf->rank; i++) own_reads_expr(o, n->u.stmt.idx[i]);
        own_reads_expr(o, n->u.stmt.value);
        return;
    case N_LOOP: own_reads_expr(o, n->u.loop.lo); own_reads_expr(o, n->u.loop.hi); break;
    case N_IF: own_reads_expr(o, n->u.guard.cond); break;
    case N_PREFETCH: return;
    }
    const NodeList *body = ir_body((Node *)n);
    for (int i = 0; body && i < body->n; i++) own_reads(o, body->v[i]);
}

/* In every outermost thread loop of the launch that writes b, each read of b is at
 * the index of a write there (a thread reads back what it wrote itself, as in
 * `+=`): then a thread never reads, within one step, what another thread writes in
 * it, and between steps the CUDA back end's barriers order shared memory. */
static bool own_writes_only(const Node *n, const Buffer *b)
{
    if (n->kind == N_LOOP && gpu_is_thread(n->u.loop.kind)) {
        Own o = {.b = b, .ok = true};
        own_writes(&o, n);
        if (o.ok && o.nw) own_reads(&o, n);
        return o.ok;
    }
    const NodeList *body = ir_body((Node *)n);
    for (int i = 0; body && i < body->n; i++)
        if (!own_writes_only(body->v[i], b)) return false;
    return true;
}

/* Does the launch top touch b? */
static bool touches(PrivCtx *p, const Node *top)
{
    PrivCtx q = *p;
    q.ok = true;
    q.nlaunch = 0;
    q.top = top;
    for (int d = 0; d < 8; d++) q.tdim[d] = -2;
    priv_node(&q, top);
    return q.nlaunch > 0;
}

bool gpu_privatize_pass(Kernel *k, Diags *d)
{
    const Var **tv = xcalloc((size_t)k->nvars + 1, sizeof *tv);
    bool ok = true;
    for (int t = 0; t < k->body.n && ok; t++) {
        Node *top = k->body.v[t];
        if (!gpu_scheduled(top))
            continue;
        int nt = 0;
        collect_tvars(top, tv, &nt);
        if (nt == 0)
            continue;
        int64_t blk[3] = {1, 1, 1};
        gpu_thread_extents(k, top, blk);
        for (int bi = 0; bi < k->nbufs && ok; bi++) {
            Buffer *buf = k->bufs[bi];
            if (buf->mem != MEM_LOCAL)
                continue;
            PrivCtx p = {.k = k, .top = top, .b = buf, .tvars = tv, .ntvars = nt, .ok = true};
            for (int q = 0; q < 8; q++) p.tdim[q] = -2;
            priv_node(&p, top);
            if (p.nlaunch == 0)
                continue;
            /* Written in thread loops, with a dimension whose accesses are mixed or
             * not analysable: nothing proves that each thread reads only elements
             * it wrote itself (a copy-out at block level reads every thread's
             * part), so per-thread registers would lose the others' writes. */
            for (int q = 0; q < buf->rank && q < 8 && p.thread_writes; q++)
                if (p.tdim[q] == -3)
                    p.ok = false;
            /* a buffer used by several launches keeps its values in none of them
             * (registers die with the launch), but its one declaration must suit
             * them all: privatise only a buffer of one launch */
            bool other = false;
            for (int u = 0; u < k->body.n && !other; u++)
                other = u != t && touches(&p, k->body.v[u]);
            /* Written only outside thread loops, where every thread runs the code: each
             * thread fills a whole copy of its own and reads only that, so mixed
             * mappings of the reads need no per-thread split (the buffer stays
             * whole, one copy per thread). */
            if (!p.ok && !p.thread_writes)
                continue;
            /* Written inside thread loops and read under other mappings: one copy
             * per block, in shared memory, handed between the steps by barriers. */
            if (!p.ok && !other && own_writes_only(top, buf)) {
                buf->mem = MEM_SHARED;
                continue;
            }
            if (!p.ok) {
                diag_error(d, buf->span, "local buffer %s is indexed by different thread loops in "
                           "different places, and a thread loop reads elements of it other threads "
                           "write there; bind the loops that index it alike", buf->name);
                ok = false;
                break;
            }
            bool dims[8] = {0}, any = false;
            for (int q = 0; q < buf->rank && q < 8; q++)
                if (p.tdim[q] >= 0) dims[q] = any = true;
            if (!any)
                continue;
            if (other) {
                diag_error(d, buf->span, "local buffer %s is used by more than one launch and indexed by "
                           "thread loops: its per-thread copies cannot outlive a launch", buf->name);
                ok = false;
                break;
            }
            Rewrite r = {k, buf, dims, tv, nt};
            rw_node(&r, top);
            for (int q = 0; q < buf->rank && q < 8; q++)
                if (dims[q]) {
                    buf->shape[q] = ir_int(k, p.coef[q]);
                    buf->thread_copies[p.tdim[q]] = blk[p.tdim[q]];
                }
        }
    }
    free(tv);
    return ok;
}
