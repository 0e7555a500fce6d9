/* fold-init: a reduction's initialisation folded into the first panel's tiles.
 *
 * distribute leaves a blocked product's initialisation as a nest of its own, a
 * pass that stores zero over all of C; then the first reduction panel of every
 * register tile copies its box of C into the staged tile, only to read the zeros
 * back.  At K = 64 that pass and those reads are a sixth of the product's time,
 * and on several threads the pass runs on one of them.  Where the product's only
 * accesses to C are such staged copies, the first panel's copy in stores the
 * initial value itself and the initialisation goes:
 *
 *     for i, j: C[i, j] = 0
 *     for ko ..                              for ko ..
 *       for tile ..                            for tile ..
 *         T[..] = C[box]          becomes        if ko == 0: T[..] = 0
 *                                                if ko >= 1: T[..] = C[box]
 *         .. T += ..                             .. T += ..
 *         C[box] = T[..]                         C[box] = T[..]
 *
 * Legal when (checked below, else the kernel is left as it is):
 *  - the initialisation stores one constant over every element of C, and the
 *    product's top-level nest follows it directly;
 *  - in that nest C is touched only inside one loop l, by copy-in statements
 *    `T[..] = C[..]` that all come before the copy-out statements `C[..] = T[..]`
 *    in l's body, each a nest of loops with the same bounds as its partner;
 *  - the boxes of l's iterations tile C (xf_box_movers: every loop from l out to
 *    the top either moves the box in exact steps or does not move it), so each
 *    element is read and written only by the iterations of one box, and the loops
 *    that do not move it (the reduction panels) reach it first at their first
 *    iteration, before any write of it: that copy in read the initial value;
 *  - the boxes cover C, each copy loop running its box's width or to C's end, so
 *    every element is still loaded, and stored back by the copy out with it. */
#include <math.h>
#include <string.h>

#include "cpu.h"
#include "xform_int.h"

/* The constant a nest stores over every element of its buffer, or NULL: perfect
 * serial loops of constant bounds 0..dim, one per dimension, around one `=`. */
static const Expr *init_value(const Kernel *k, const Node *n, Buffer **buf)
{
    const Var *vars[8];
    int64_t ext[8];
    int depth = 0;
    while (n->kind == N_LOOP && n->u.loop.body.n == 1 && depth < 8) {
        int64_t lo;
        if (!xf_const(k, n->u.loop.lo, &lo) || lo != 0 || !xf_const(k, n->u.loop.hi, &ext[depth]))
            return NULL;
        vars[depth++] = n->u.loop.var;
        n = n->u.loop.body.v[0];
    }
    if (n->kind != N_STMT || n->u.stmt.op != SOP_ASSIGN || !xf_kernel_const(n->u.stmt.value) ||
        n->u.stmt.buf->rank != depth || n->u.stmt.buf->kind == BUF_IN)
        return NULL;
    const Buffer *b = n->u.stmt.buf;
    bool used[8] = {0};
    for (int d = 0; d < b->rank; d++) {
        const Expr *e = n->u.stmt.idx[d];
        int64_t dim;
        int i = 0;
        while (i < depth && !(e->kind == IE_VAR && e->u.var == vars[i]))
            i++;
        if (i == depth || used[i] || !xf_const(k, b->shape[d], &dim) || dim != ext[i])
            return NULL;
        used[i] = true;
    }
    *buf = n->u.stmt.buf;
    return n->u.stmt.value;
}

static bool exact_everywhere(const Expr *e)
{
    if (e->kind == IE_CAST)
        return exact_everywhere(e->args[0]);
    if (e->kind == IE_INT)
        return e->u.i == 0;
    return e->kind == IE_FLT && (e->u.f == 0 || isinf(e->u.f));
}

/* A copy nest: perfect loops around `T[..] = C[..]` (in) or `C[..] = T[..]` (out),
 * T another buffer; the statement, or NULL. */
static Node *copy_stmt(Node *n, const Buffer *c, bool in, Node **loops, int *nl)
{
    *nl = 0;
    while (n->kind == N_LOOP && n->u.loop.body.n == 1 && *nl < 8) {
        loops[(*nl)++] = n;
        n = n->u.loop.body.v[0];
    }
    if (n->kind != N_STMT || n->u.stmt.op != SOP_ASSIGN || n->u.stmt.guarded)
        return NULL;
    const Expr *v = n->u.stmt.value;
    if (v->kind != IE_LOAD)
        return NULL;
    bool ok = in ? v->u.load.buf == c && n->u.stmt.buf != c : n->u.stmt.buf == c && v->u.load.buf != c;
    return ok ? n : NULL;
}

/* Whether loop bounds and the C subscripts of copy nests `a` (in) and `b` (out)
 * agree, b's variables renamed to a's. */
static bool same_copy(Kernel *k, Node *ain, Node **al, int na, Node *bout, Node **bl, int nb)
{
    if (na != nb)
        return false;
    const Expr *cin = ain->u.stmt.value;
    if (na == 0) { /* single statements: the subscripts as they are */
        for (int d = 0; d < cin->u.load.buf->rank; d++)
            if (!xf_expr_equal(k, cin->u.load.idx[d], bout->u.stmt.idx[d]))
                return false;
        return true;
    }
    Node *bc = ir_clone_node(k, bl[0]);
    for (int i = 0; i < nb; i++)
        xf_subst_tree(k, bc, bl[i]->u.loop.var, ir_var(k, al[i]->u.loop.var));
    Node *p = bc;
    for (int i = 0; i < na; i++, p = p->u.loop.body.v[0])
        if (!xf_expr_equal(k, p->u.loop.lo, al[i]->u.loop.lo) || !xf_expr_equal(k, p->u.loop.hi, al[i]->u.loop.hi))
            return false;
    for (int d = 0; d < cin->u.load.buf->rank; d++)
        if (!xf_expr_equal(k, cin->u.load.idx[d], p->u.stmt.idx[d]))
            return false;
    return true;
}

/* Whether the copy-in loop that moves subscript d runs the box's width or to C's
 * end: subscript lo + v, v's loop 0..w or 0..min(w, dim - lo). */
static bool runs_box(Kernel *k, const Region *r, Node *s, Node **loops, int nl, int d, int64_t dim)
{
    ArSpace sp;
    ar_space_init(&sp, k);
    ArRow idx, lo, rel;
    if (!ar_row_of(&sp, s->u.stmt.value->u.load.idx[d], 0, &idx) || !ar_row_of(&sp, r->lo[d], 0, &lo) ||
        !ar_row_lin(&rel, 1, &idx, -1, &lo))
        return false;
    for (int i = 0; i < nl; i++) {
        int col = ar_space_col(&sp, loops[i]->u.loop.var, 0);
        if (col < 0 || rel.c[col] == 0)
            continue;
        /* rel must be exactly this variable */
        if (rel.c[col] != 1 || rel.k != 0)
            return false;
        for (int j = 0; j < sp.ncol; j++)
            if (j != col && rel.c[j])
                return false;
        int64_t lo0, w;
        const Expr *hi = loops[i]->u.loop.hi;
        if (!xf_const(k, loops[i]->u.loop.lo, &lo0) || lo0 != 0)
            return false;
        if (xf_const(k, hi, &w))
            return w == r->width[d];
        if (hi->kind != IE_MIN)
            return false;
        for (int a = 0; a < 2; a++) {
            ArRow x, sum;
            if (!xf_const(k, hi->args[a], &w) || w != r->width[d] ||
                !ar_row_of(&sp, hi->args[1 - a], 0, &x) || !ar_row_lin(&sum, 1, &x, 1, &lo))
                continue;
            bool only_k = true;
            for (int j = 0; j < sp.ncol; j++)
                only_k &= sum.c[j] == 0;
            if (only_k && sum.k == dim)
                return true;
        }
        return false;
    }
    /* no copy loop moves it: one element a box, at the box's start */
    for (int j = 0; j < sp.ncol; j++)
        if (rel.c[j])
            return false;
    return r->width[d] == 1 && rel.k == 0;
}

/* Folds the initialisation at top-level position z into the nest after it. */
static bool fold_one(Kernel *k, int z)
{
    Buffer *c;
    const Expr *val = init_value(k, k->body.v[z], &c);
    if (!val || z + 1 >= k->body.n)
        return false;
    Node *top = k->body.v[z + 1];
    AccVec all = {0};
    acc_collect(k, top, &all);
    AccVec ca = {0};
    Node *l = NULL;
    bool ok = true;
    for (int i = 0; i < all.n && ok; i++) {
        if (all.v[i].buf != c)
            continue;
        acc_push(&ca, &all.v[i]);
        /* l: the innermost loop around every access */
        Node *p = all.v[i].stmt->parent;
        if (!l)
            l = p;
        while (l && !xf_contains(l, all.v[i].stmt))
            l = l->parent;
        ok = l != NULL;
    }
    while (ok && l && l->kind != N_LOOP)
        l = l->parent;
    ok = ok && l && ca.n >= 2 && l->u.loop.kind != LOOP_VECTOR;
    /* l's body: copy-in nests, then copy-out nests, nothing else touching C */
    Node *ins[16], *outs[16], *inl[16][8], *outl[16][8];
    int nin = 0, nout = 0, ninl[16], noutl[16];
    for (int i = 0; ok && i < l->u.loop.body.n; i++) {
        Node *n = l->u.loop.body.v[i];
        bool touches = false;
        for (int a = 0; a < ca.n && !touches; a++)
            touches = xf_contains(n, ca.v[a].stmt);
        if (!touches)
            continue;
        Node *s;
        if (nout == 0 && nin < 16 && (s = copy_stmt(n, c, true, inl[nin], &ninl[nin])))
            ins[nin++] = s;
        else if (nout < 16 && (s = copy_stmt(n, c, false, outl[nout], &noutl[nout])))
            outs[nout++] = s;
        else
            ok = false;
    }
    ok = ok && nin >= 1 && nin == nout;
    for (int i = 0; ok && i < nin; i++)
        ok = same_copy(k, ins[i], inl[i], ninl[i], outs[i], outl[i], noutl[i]);
    Region r;
    StrBuf why = {0};
    ok = ok && xf_region(k, l, &ca, false, &r, &why);
    sb_free(&why);
    Mover m[XF_MAXMOVERS];
    int nm = 0;
    int64_t first[8], end[8];
    if (ok) {
        /* the proof's refusals are not errors here: the kernel stays as it is */
        Diags q;
        diag_init(&q);
        SchedItem it = {.name = "fold-init"};
        XfCtx x = {.k = k, .it = &it, .d = &q, .dry = true};
        ok = xf_box_movers(&x, l, top, &r, m, &nm, first, end);
        diag_free(&q);
    }
    for (int d = 0; ok && d < c->rank; d++) {
        int64_t dim;
        ok = xf_const(k, c->shape[d], &dim) && first[d] == 0 && end[d] >= dim;
        for (int i = 0; ok && i < nin; i++)
            ok = runs_box(k, &r, ins[i], inl[i], ninl[i], d, dim);
    }
    /* the loops that do not move the box: their first iteration loads the value */
    Expr *firsts = NULL, *fixed_var = NULL;
    int64_t fixed_lo = 0;
    int nfixed = 0;
    for (int i = 0; ok && i < nm; i++) {
        if (m[i].dim >= 0)
            continue;
        ok = xf_const(k, m[i].loop->u.loop.lo, &fixed_lo);
        fixed_var = ir_var(k, m[i].loop->u.loop.var);
        Expr *e = ir_bin(k, IE_EQ, ir_clone_expr(k, fixed_var), ir_int(k, fixed_lo));
        firsts = firsts ? ir_bin(k, IE_AND, firsts, e) : e;
        nfixed++;
    }
    /* the staged tile gets the value C would have held: the same dtype, or a
     * value every float format holds exactly (0, an infinity) */
    for (int i = 0; ok && i < nin; i++)
        ok = ins[i]->u.stmt.buf->dtype == c->dtype || exact_everywhere(val);
    acc_free(&all);
    acc_free(&ca);
    if (!ok)
        return false;
    for (int i = 0; i < nin; i++) {
        Node *nest = ninl[i] ? inl[i][0] : ins[i];
        if (!nfixed) {
            ins[i]->u.stmt.value = ir_clone_expr(k, val);
            continue;
        }
        /* the first panel stores the value; the later ones copy as before */
        NodeList *body = xf_list_of(k, nest);
        int at = xf_index_in(k, nest);
        Node *zero = ir_clone_node(k, nest);
        Node *s = zero;
        while (s->kind == N_LOOP)
            s = s->u.loop.body.v[0];
        s->u.stmt.value = ir_clone_expr(k, val);
        Node *g0 = ir_guard(k, ir_clone_expr(k, firsts), nest->span);
        /* one panel loop (the usual case): the later panels as an affine bound */
        Expr *later = nfixed == 1 ? ir_bin(k, IE_GE, ir_clone_expr(k, fixed_var), ir_int(k, fixed_lo + 1))
                                  : ir_un(k, IE_NOT, ir_clone_expr(k, firsts));
        Node *g1 = ir_guard(k, later, nest->span);
        ir_list_remove(body, at);
        ir_list_push(ir_body(g0), zero, g0);
        ir_list_push(ir_body(g1), nest, g1);
        ir_list_insert(body, at, g1, l);
        ir_list_insert(body, at, g0, l);
    }
    ir_list_remove(&k->body, z);
    return true;
}

bool cpu_fold_init(Kernel *k, Diags *d)
{
    (void)d;
    for (int z = 0; z + 1 < k->body.n; z++)
        if (fold_one(k, z))
            z--; /* the product moved to z */
    return true;
}
