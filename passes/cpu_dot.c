/* dot-pairs: on a CPU target with the AVX-512 BF16 dot product (Target.dot_bf16),
 * a register-tile update that adds products of two bf16 values into f32 lanes
 *
 *   for k in lo..lo+E                         serial, E constant
 *     for i.. (unroll or serial loops free of k)
 *       for j in 0..W vector                  W a multiple of 8
 *         [if .. holds]
 *           Acc[.., j] += f32(A[.., k + a]) * f32(P[k - lo, j + b])
 *
 * (Acc f32 and contiguous in j, A a bf16 row read along its last dimension and
 * the same for every lane, P a bf16 local panel of constant shape [S0, S1]: the B
 * panel that the contraction templates pack with `cache`) pairs consecutive k:
 *
 *   P stored as [ceil(S0/2), S1, 2]            every access P[x, y] -> P[x/2, y, x%2]
 *   for kp in 0..E/2
 *     for i..
 *       for j in 0..W vector
 *         for kq in 0..2 dot-product
 *           Acc[.., j] += f32(A[.., lo + 2kp + kq + a]) * f32(P[kp, j + b, kq])
 *   (E odd: the nest once more for k = lo + E - 1, as it was)
 *
 * so that the back end (codegen/llvm/emit_dot.c) reads P's pairs of lanes as one
 * register of 2W bf16, A's pair as one 32-bit broadcast, and issues one vdpbf16ps
 * per 16 lanes: 32 products per instruction where convert + FMA gave 16 per two.
 * The copy nests that fill P (`for c0 in 0..E0: for c1..: P[c0, c1] = X`) are paired
 * the same way, their pair loop innermost, so that each copy writes P in order;
 * where c1 has a constant extent it becomes a vector loop around an `interleave`
 * of two rows of X.
 *
 * Legal because P is a temporary: storing it in another order changes no value,
 * and every access goes through the one map.  The pairing keeps each element's
 * terms in the order of k (kq runs inside the lanes' loops, so only terms of
 * different elements swap places, and no two (i, j) iterations write one Acc
 * element: its index is checked to use them); the odd last k is the original nest.
 * vdpbf16ps itself adds a pair's products in f32 with round-to-nearest and flushes
 * denormals: the reassociation a vector sum already has, within the validation's
 * tolerance for bf16 operands.  Without the feature nothing changes: the
 * convert + FMA code stays exactly as it was. */
#include "cpu.h"
#include "xform_int.h"

#include <stdlib.h>
#include <string.h>

enum { MAX_PANELS = 16, MAX_CHAIN = 8 };

/* The node chain below a loop down to its one statement: each loop or guard holds
 * exactly one node.  NULL when it branches or ends elsewhere. */
static Node *only_stmt(Node *n)
{
    for (;;) {
        if (n->kind == N_STMT)
            return n;
        if (n->kind == N_PREFETCH || (n->kind == N_IF && n->u.guard.els.n))
            return NULL;
        NodeList *b = ir_body(n);
        if (!b || b->n != 1)
            return NULL;
        n = b->v[0];
    }
}

/* A panel buffer that may change its layout: a temporary of constant shape (on the
 * stack, or the caller's for a large one: cache mem=global). */
static bool panel_ok(const Kernel *k, const Buffer *p)
{
    return p->kind == BUF_TEMP && (p->mem == MEM_LOCAL || p->mem == MEM_GLOBAL) && p->rank == 2 && !p->has_pad &&
           p->layout == LAYOUT_PLAIN && cpu_dim(k, p, 0) > 0 && cpu_dim(k, p, 1) > 0;
}

/* Whether index e is exactly v - lo (the loop's iterations 0, 1, ...). */
static bool is_offset_of(const Kernel *k, const Expr *e, const Var *v, int64_t lo)
{
    ArAff a;
    if (!ar_aff_of(k, e, &a) || a.c != -lo)
        return false;
    for (int i = 0; i < a.n; i++)
        if (a.k[i] != (a.var[i] == v->id ? 1 : 0))
            return false;
    return ar_aff_coef(&a, v->id) == 1;
}

/* The loops and guards between loop L and statement s, checked free of L's
 * variable (bounds and conditions); false when one is not. */
static bool chain_free_of(Node *L, Node *s, const Var *v)
{
    for (Node *n = s->parent; n && n != L; n = n->parent) {
        if (n->kind == N_LOOP &&
            (ir_expr_uses_var(n->u.loop.lo, v) || ir_expr_uses_var(n->u.loop.hi, v)))
            return false;
        if (n->kind == N_IF && ir_expr_uses_var(n->u.guard.cond, v))
            return false;
    }
    return true;
}

/* The site's operands when loop L is the reduction loop of a bf16 tile update in
 * the shape the file comment shows; *pl gets the panel's load. */
static Node *dot_site(const Kernel *k, Node *L, Expr **pl)
{
    int64_t E, lo;
    if (L->kind != N_LOOP || L->u.loop.kind != LOOP_SERIAL || L->u.loop.hint != HINT_NONE || L->u.loop.body.n != 1 ||
        !cpu_const_extent(k, L->u.loop.lo, L->u.loop.hi, &E) || E < 2)
        return NULL;
    ArAff la;
    if (!ar_aff_of(k, L->u.loop.lo, &la) || !ar_aff_is_const(&la))
        return NULL;
    lo = la.c;
    const Var *kv = L->u.loop.var;
    Node *s = only_stmt(L->u.loop.body.v[0]);
    if (!s || s->u.stmt.op != SOP_ADD || s->u.stmt.guarded || s->u.stmt.buf->dtype != DT_F32 ||
        !chain_free_of(L, s, kv))
        return NULL;
    /* the one vector loop: the statement's nearest enclosing loop, under holds guards */
    Node *vl = s->parent;
    while (vl && vl->kind == N_IF && vl->u.guard.holds)
        vl = vl->parent;
    int64_t W;
    if (!vl || vl->kind != N_LOOP || vl->u.loop.kind != LOOP_VECTOR || vl->u.loop.hint != HINT_NONE ||
        !cpu_const_extent(k, vl->u.loop.lo, vl->u.loop.hi, &W) || W % 8)
        return NULL;
    for (Node *n = vl->parent; n != L; n = n->parent)
        if (n->kind != N_LOOP || (n->u.loop.kind != LOOP_UNROLL && n->u.loop.kind != LOOP_SERIAL))
            return NULL;
    const Var *jv = vl->u.loop.var;
    const Buffer *acc = s->u.stmt.buf;
    if (cpu_access_kind(k, s->u.stmt.idx, acc->rank, jv) != CPU_ACC_CONTIG || ir_stmt_index_uses(s, kv))
        return NULL;
    /* no two iterations of the loops between L and the statement write one element:
     * each loop's variable is in the statement's index */
    for (Node *n = s->parent; n != L; n = n->parent)
        if (n->kind == N_LOOP && !ir_stmt_index_uses(s, n->u.loop.var))
            return NULL;
    Expr *v = s->u.stmt.value;
    if (v->kind != IE_MUL || v->dtype != DT_F32)
        return NULL;
    Expr *x = cpu_bf16_load(v->args[0]), *y = cpu_bf16_load(v->args[1]);
    if (!x || !y)
        return NULL;
    if (cpu_access_kind(k, x->u.load.idx, x->u.load.buf->rank, jv) != CPU_ACC_CONTIG) {
        Expr *t = x;
        x = y;
        y = t;
    }
    const Buffer *p = x->u.load.buf, *a = y->u.load.buf;
    if (p == a || p == acc || a == acc || !panel_ok(k, p) ||
        cpu_access_kind(k, x->u.load.idx, 2, jv) != CPU_ACC_CONTIG ||
        cpu_access_kind(k, y->u.load.idx, a->rank, jv) != CPU_ACC_UNIFORM ||
        !is_offset_of(k, x->u.load.idx[0], kv, lo) || ir_expr_uses_var(x->u.load.idx[1], kv) ||
        cpu_dim(k, p, 0) < E || a->layout != LAYOUT_PLAIN || a->rank < 1)
        return NULL;
    /* A's pair is adjacent: k moves its last index by one and no other */
    ArAff aa;
    for (int d = 0; d < a->rank; d++) {
        bool last = d == a->rank - 1;
        if (last ? !ar_aff_of(k, y->u.load.idx[d], &aa) || ar_aff_coef(&aa, kv->id) != 1
                 : ir_expr_uses_var(y->u.load.idx[d], kv))
            return NULL;
    }
    *pl = x;
    return s;
}

/* A copy nest filling panel p: loop L over c0 whose one statement is
 * p[c0 - lo, y] = value (y free of c0, the value not reading p). */
static Node *copy_site(const Kernel *k, Node *L, const Buffer *p)
{
    int64_t E;
    ArAff la;
    if (L->kind != N_LOOP || L->u.loop.kind != LOOP_SERIAL ||
        (L->u.loop.hint != HINT_NONE && L->u.loop.hint != HINT_COPY) || L->u.loop.body.n != 1 ||
        !cpu_const_extent(k, L->u.loop.lo, L->u.loop.hi, &E) || E < 2 || !ar_aff_of(k, L->u.loop.lo, &la) ||
        !ar_aff_is_const(&la))
        return NULL;
    Node *s = only_stmt(L->u.loop.body.v[0]);
    if (!s || s->u.stmt.buf != p || s->u.stmt.op != SOP_ASSIGN || s->u.stmt.guarded ||
        ir_expr_reads(s->u.stmt.value, p) || !chain_free_of(L, s, L->u.loop.var) ||
        !is_offset_of(k, s->u.stmt.idx[0], L->u.loop.var, la.c) || ir_expr_uses_var(s->u.stmt.idx[1], L->u.loop.var))
        return NULL;
    for (Node *n = s->parent; n != L; n = n->parent)
        if (n->kind != N_LOOP || n->u.loop.kind == LOOP_VECTOR || n->u.loop.kind == LOOP_PARALLEL)
            return NULL;
    return s;
}

typedef struct Ctx {
    Kernel *k;
    Buffer *panel[MAX_PANELS];
    int npanels;
    bool refused[MAX_PANELS];
} Ctx;

static int panel_of(Ctx *c, const Buffer *p)
{
    for (int i = 0; i < c->npanels; i++)
        if (c->panel[i] == p)
            return i;
    return -1;
}

static WalkAct find_panels(void *vctx, Node *n)
{
    Ctx *c = vctx;
    Expr *pl;
    if (n->kind == N_LOOP && dot_site(c->k, n, &pl)) {
        if (panel_of(c, pl->u.load.buf) < 0 && c->npanels < MAX_PANELS)
            c->panel[c->npanels++] = pl->u.load.buf;
    }
    /* a prefetch box is a rectangle in the old layout: such a panel keeps it */
    if (n->kind == N_PREFETCH) {
        int i = panel_of(c, n->u.pf.buf);
        if (i >= 0)
            c->refused[i] = true;
    }
    return WALK_GO;
}

/* P[x, y] -> P[x/2, y, x%2], constants folded. */
static Expr **paired_index(Kernel *k, Expr *const *idx)
{
    Expr **r = arena_alloc(k->arena, sizeof(Expr *) * 3);
    Expr *x = idx[0];
    ArAff a;
    if (ar_aff_of(k, x, &a) && ar_aff_is_const(&a) && a.c >= 0) {
        r[0] = ir_int(k, a.c / 2);
        r[2] = ir_int(k, a.c % 2);
    } else {
        r[0] = ir_bin(k, IE_DIV, ir_clone_expr(k, x), ir_int(k, 2));
        r[2] = ir_bin(k, IE_MOD, ir_clone_expr(k, x), ir_int(k, 2));
    }
    r[1] = idx[1];
    return r;
}

static WalkAct remap_load(void *vctx, Expr *e)
{
    Ctx *c = vctx;
    if (e->kind == IE_LOAD) {
        int i = panel_of(c, e->u.load.buf);
        if (i >= 0 && !c->refused[i])
            e->u.load.idx = paired_index(c->k, e->u.load.idx);
    }
    return WALK_GO;
}

/* Every access of the panels, and the hints of loops the old layout decided
 * (a memcpy or memset range, a transposing copy) dropped where a panel is
 * touched: such a loop is an ordinary loop again. */
static WalkAct remap_node(void *vctx, Node *n)
{
    Ctx *c = vctx;
    if (n->kind == N_STMT) {
        int i = panel_of(c, n->u.stmt.buf);
        if (i >= 0 && !c->refused[i])
            n->u.stmt.idx = paired_index(c->k, n->u.stmt.idx);
    }
    if (n->kind == N_LOOP && (n->u.loop.hint == HINT_COPY || n->u.loop.hint == HINT_FILL ||
                              n->u.loop.hint == HINT_TRANSPOSE))
        for (int i = 0; i < c->npanels; i++)
            if (!c->refused[i] && (ir_node_reads(n, c->panel[i]) || ir_node_writes(n, c->panel[i])))
                n->u.loop.hint = HINT_NONE;
    return WALK_GO;
}

static void simplify_cb(Expr *e, void *vctx)
{
    Kernel *k = vctx;
    if (e->kind == IE_LOAD)
        for (int d = 0; d < e->u.load.buf->rank; d++)
            e->u.load.idx[d] = xf_simplify_affine(k, e->u.load.idx[d]);
}

static void simplify_stmt(Kernel *k, Node *s)
{
    for (int d = 0; d < s->u.stmt.buf->rank; d++)
        s->u.stmt.idx[d] = xf_simplify_affine(k, s->u.stmt.idx[d]);
    xf_visit_exprs(k, s, simplify_cb, k);
}

/* The panel access of statement s (its store, or its one load of p). */
static Expr **panel_idx(Node *s, const Buffer *p)
{
    if (s->u.stmt.buf == p)
        return s->u.stmt.idx;
    Expr *v = s->u.stmt.value;
    Expr *x = v->kind == IE_MUL ? cpu_bf16_load(v->args[0]) : NULL, *y = v->kind == IE_MUL ? cpu_bf16_load(v->args[1]) : NULL;
    return x && x->u.load.buf == p ? x->u.load.idx : y && y->u.load.buf == p ? y->u.load.idx : NULL;
}

/* Puts node n right after node at, in whichever list holds at (a guard's else
 * body included: the versioned copies of passes/cpu_version.c). */
static void insert_after(Kernel *k, Node *at, Node *n)
{
    NodeList *ls[2] = {at->parent ? ir_body(at->parent) : &k->body, at->parent ? ir_else(at->parent) : NULL};
    for (int j = 0; j < 2; j++)
        for (int i = 0; ls[j] && i < ls[j]->n; i++)
            if (ls[j]->v[i] == at) {
                ir_list_insert(ls[j], i + 1, n, at->parent);
                return;
            }
    die("dot-pairs: loop %s not in its parent's lists", at->u.loop.var->name);
}

/* Loop L (over v in lo..lo+E, its one statement's panel index v - lo) as pairs:
 * the pair loop with a loop q over 0..2 directly around the statement (kind and
 * hint as given), then for odd E the nest once more at v = lo + E - 1. */
static Node *pair_loop(Kernel *k, Node *L, const Buffer *p, LoopKind qkind, LoopHint qhint)
{
    int64_t E, lo;
    ArAff la;
    cpu_const_extent(k, L->u.loop.lo, L->u.loop.hi, &E);
    ar_aff_of(k, L->u.loop.lo, &la);
    lo = la.c;
    Var *v = L->u.loop.var;
    Var *vp = ir_new_var(k, xf_fresh_name(k, arena_printf(k->arena, "%sp", v->name)));
    Var *vq = ir_new_var(k, xf_fresh_name(k, arena_printf(k->arena, "%sq", v->name)));
    Node *inner = L->u.loop.body.v[0];
    Node *tail = E % 2 ? ir_clone_node(k, inner) : NULL;

    /* pairs: the statement moves into the q loop, v := lo + 2 vp + vq */
    Node *s = only_stmt(inner), *sp = s->parent;
    NodeList *sl = ir_body(sp);
    Node *q = ir_loop(k, vq, ir_int(k, 0), ir_int(k, 2), s->span);
    q->u.loop.kind = qkind;
    q->u.loop.hint = qhint;
    ir_list_remove(sl, 0);
    ir_list_push(sl, q, sp);
    ir_list_push(&q->u.loop.body, s, q);
    Expr *at = ir_bin(k, IE_ADD, ir_bin(k, IE_MUL, ir_int(k, 2), ir_var(k, vp)), ir_var(k, vq));
    xf_subst_tree(k, s, v, ir_bin(k, IE_ADD, ir_int(k, lo), at));
    Expr **pi = panel_idx(s, p);
    pi[0] = ir_var(k, vp);
    pi[2] = ir_var(k, vq);
    simplify_stmt(k, s);
    L->u.loop.var = vp;
    L->u.loop.lo = ir_int(k, 0);
    L->u.loop.hi = ir_int(k, E / 2);

    if (tail) {
        Node *ts = only_stmt(tail);
        xf_subst_tree(k, ts, v, ir_int(k, lo + E - 1));
        Expr **ti = panel_idx(ts, p);
        ti[0] = ir_int(k, (E - 1) / 2);
        ti[2] = ir_int(k, 0);
        simplify_stmt(k, ts);
        insert_after(k, L, tail);
    }
    return q;
}

/* A paired copy `for c: for q in 0..2: P[.., c, q] = X[.., c ..]` whose loop c
 * has a constant extent and X a bf16 row contiguous in c: c made a vector loop
 * and q an interleave (codegen/llvm/emit_dot.c), one shuffle per two rows of
 * lanes instead of a scalar copy per element (some five cycles each).  Lanes
 * of a copy are independent: each writes its own two elements. */
static void interleave_copy(Kernel *k, Node *q)
{
    Node *c = q->parent, *s = q->u.loop.body.v[0];
    int64_t w;
    Expr *x = cpu_bf16_load(s->u.stmt.value);
    ArAff po, xo;
    if (!c || c->kind != N_LOOP || c->u.loop.kind != LOOP_SERIAL || c->u.loop.hint != HINT_NONE ||
        c->u.loop.body.n != 1 || !cpu_const_extent(k, c->u.loop.lo, c->u.loop.hi, &w) || w < 8 ||
        w > CPU_MAX_VECTOR_WIDTH || !x || s->u.stmt.buf->dtype != DT_BF16 ||
        !cpu_offset_aff(k, s->u.stmt.buf, s->u.stmt.idx, &po) || !cpu_offset_aff(k, x->u.load.buf, x->u.load.idx, &xo))
        return;
    const Var *cv = c->u.loop.var, *qv = q->u.loop.var;
    if (ar_aff_coef(&po, cv->id) != 2 || ar_aff_coef(&po, qv->id) != 1 || ar_aff_coef(&xo, cv->id) != 1)
        return;
    c->u.loop.kind = LOOP_VECTOR;
    q->u.loop.hint = HINT_INTERLEAVE;
}

typedef struct Sites {
    Ctx *c;
    Node *loops[4096];
    const Buffer *bufs[4096];
    bool dot[4096];
    int n;
} Sites;

static WalkAct collect(void *vctx, Node *n)
{
    Sites *s = vctx;
    if (n->kind != N_LOOP || s->n == 4096)
        return WALK_GO;
    Expr *pl;
    if (dot_site(s->c->k, n, &pl)) {
        int i = panel_of(s->c, pl->u.load.buf);
        if (i >= 0 && !s->c->refused[i]) {
            s->loops[s->n] = n, s->bufs[s->n] = pl->u.load.buf, s->dot[s->n++] = true;
            return WALK_GO;
        }
    }
    for (int i = 0; i < s->c->npanels; i++)
        if (!s->c->refused[i] && copy_site(s->c->k, n, s->c->panel[i])) {
            s->loops[s->n] = n, s->bufs[s->n] = s->c->panel[i], s->dot[s->n++] = false;
            break;
        }
    return WALK_GO;
}

bool cpu_dot_pairs(Kernel *k, const Target *target, Diags *d)
{
    (void)d;
    if (!target || !target->dot_bf16)
        return true;
    Ctx c = {.k = k};
    ir_walk_list(&k->body, &(IrVisitor){.pre = find_panels, .ctx = &c});
    if (!c.npanels)
        return true;
    /* the sites first, in the old layout; then the layout; then the loops */
    Sites *s = xcalloc(1, sizeof *s);
    s->c = &c;
    ir_walk_list(&k->body, &(IrVisitor){.pre = collect, .ctx = s});
    ir_walk_list(&k->body, &(IrVisitor){.pre = remap_node, .expr = remap_load, .ctx = &c});
    for (int i = 0; i < c.npanels; i++) {
        if (c.refused[i])
            continue;
        Buffer *p = c.panel[i];
        int64_t s0 = cpu_dim(k, p, 0);
        Expr **shape = arena_alloc(k->arena, sizeof(Expr *) * 3);
        shape[0] = ir_int(k, (s0 + 1) / 2);
        shape[1] = p->shape[1];
        shape[2] = ir_int(k, 2);
        p->shape = shape;
        p->rank = 3;
    }
    for (int i = 0; i < s->n; i++) {
        Node *q = pair_loop(k, s->loops[i], s->bufs[i], s->dot[i] ? LOOP_SERIAL : LOOP_UNROLL,
                            s->dot[i] ? HINT_DOT : HINT_NONE);
        if (!s->dot[i]) {
            q->u.loop.kind = LOOP_SERIAL;
            interleave_copy(k, q);
            if (q->u.loop.hint != HINT_INTERLEAVE)
                q->u.loop.kind = LOOP_UNROLL;
        }
    }
    free(s);
    return true;
}
