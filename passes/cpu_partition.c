/* partition: in a kernel with register tiles, a serial loop of constant bounds
 * over reads of a padded input (the copy of conv2d's image with its zero border)
 * is split into up to three loops: the iterations where some read may leave its
 * buffer, and between them those where none can, which need no clamp and no
 * select (and, when nothing else is tested, no branch).  A piece of one iteration
 * is its body with the variable fixed; an interior piece that copies one
 * contiguous range into another is marked `memcpy`.  Nested loops are split in
 * turn, so the interior of the image becomes plain row copies and its border rows
 * zero fills (`fill`, which runs next).
 *
 * Legal because the pieces run the same iterations in the same order, each with
 * the same body.  The cut points come from the affine indices of the padded reads
 * that move with the loop's variable (coefficient 1 or -1) and the ranges of the
 * enclosing variables; a memcpy piece stores element after element what the loop
 * stores (both offsets move by one with the variable, the reads are known inside
 * the input, source and destination are different buffers). */
#include <stdint.h>

#include "cpu.h"
#include "xform_int.h"

/* Narrows [*a, *b) to the values of v for which every index of the padded reads in
 * e that moves with v is inside its dimension. */
static void pad_range_expr(const Kernel *k, const CpuRanges *r, const Expr *e, const Var *v, int64_t *a, int64_t *b)
{
    if (!e)
        return;
    if (e->kind == IE_LOAD) {
        const Buffer *buf = e->u.load.buf;
        for (int i = 0; i < buf->rank; i++) {
            pad_range_expr(k, r, e->u.load.idx[i], v, a, b);
            ArAff x;
            if (!cpu_load_padded(e) || !ar_aff_of(k, e->u.load.idx[i], &x))
                continue;
            int64_t c = ar_aff_coef(&x, v->id), lo, hi, d = cpu_dim(k, buf, i);
            if (c != 1 && c != -1)
                continue;
            ArAff rest = x; /* the index without v */
            for (int t = 0; t < rest.n; t++)
                if (rest.var[t] == v->id)
                    rest.k[t] = 0;
            if (!cpu_aff_range(r, &rest, &lo, &hi))
                continue;
            /* c = 1: 0 <= v + rest < d for all rest;  c = -1: 0 <= rest - v < d */
            int64_t na = c == 1 ? -lo : hi - d + 1, nb = c == 1 ? d - hi : lo + 1;
            if (na > *a)
                *a = na;
            if (nb < *b)
                *b = nb;
        }
        return;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        pad_range_expr(k, r, e->args[i], v, a, b);
}

static void pad_range_list(const Kernel *k, const CpuRanges *r, const NodeList *l, const Var *v, int64_t *a,
                           int64_t *b)
{
    for (int i = 0; i < l->n; i++) {
        Node *n = l->v[i];
        if (n->kind == N_STMT) {
            pad_range_expr(k, r, n->u.stmt.value, v, a, b);
            for (int j = 0; j < n->u.stmt.buf->rank; j++)
                pad_range_expr(k, r, n->u.stmt.idx[j], v, a, b);
        } else {
            if (n->kind == N_IF) {
                pad_range_expr(k, r, n->u.guard.cond, v, a, b);
                pad_range_list(k, r, &n->u.guard.els, v, a, b);
            }
            pad_range_list(k, r, ir_body(n), v, a, b);
        }
    }
}

bool cpu_copy_ok(const Kernel *k, const CpuRanges *r, const Node *L, int64_t lo, int64_t hi)
{
    const Node *n = L->u.loop.body.n == 1 ? L->u.loop.body.v[0] : NULL;
    if (!n || n->kind != N_STMT || n->u.stmt.op != SOP_ASSIGN || n->u.stmt.value->kind != IE_LOAD || hi - lo < 2 ||
        n->u.stmt.guarded)
        return false;
    const Expr *e = n->u.stmt.value;
    const Buffer *d = n->u.stmt.buf, *src = e->u.load.buf;
    const Var *v = L->u.loop.var;
    ArAff od, os;
    if (d == src || d->dtype != src->dtype || e->dtype != src->dtype || !cpu_offset_aff(k, d, n->u.stmt.idx, &od) ||
        !cpu_offset_aff(k, src, e->u.load.idx, &os) || ar_aff_coef(&od, v->id) != 1 || ar_aff_coef(&os, v->id) != 1)
        return false;
    if (!cpu_load_padded(e))
        return true;
    CpuRanges in = *r;
    int64_t smin = in.vmin[v->id], smax = in.vmax[v->id];
    in.vmin[v->id] = lo, in.vmax[v->id] = hi - 1;
    bool ok = cpu_pad_known(k, &in, e) > 0;
    in.vmin[v->id] = smin, in.vmax[v->id] = smax;
    return ok;
}

typedef struct Part {
    Kernel *k;
    CpuRanges r;
} Part;

static void part_list(Part *p, NodeList *l, Node *parent, bool in_vector);

/* Splits loop L (at l->v[*i]) when its padded reads allow; *i is left on the last
 * node that replaced it. */
static bool split(Part *p, NodeList *l, int *i, Node *parent)
{
    Kernel *k = p->k;
    Node *L = l->v[*i];
    ArAff lo0;
    int64_t ext;
    if (L->u.loop.kind != LOOP_SERIAL || L->u.loop.hint != HINT_NONE ||
        !cpu_const_extent(k, L->u.loop.lo, L->u.loop.hi, &ext) || !ar_aff_of(k, L->u.loop.lo, &lo0) || lo0.n ||
        !cpu_list_padded(&L->u.loop.body) || cpu_fill_ok(k, &p->r, L, NULL))
        return false;
    int64_t lo = lo0.c, hi = lo0.c + ext, a = INT64_MIN, b = INT64_MAX;
    /* the loop's own variable unknown: only the other variables bound the cuts */
    CpuRangeSave s = {p->r.vmin[L->u.loop.var->id], p->r.vmax[L->u.loop.var->id]};
    p->r.vmin[L->u.loop.var->id] = 1, p->r.vmax[L->u.loop.var->id] = 0;
    pad_range_list(k, &p->r, &L->u.loop.body, L->u.loop.var, &a, &b);
    cpu_ranges_leave(&p->r, L, s);
    if (a < lo)
        a = lo;
    if (b > hi)
        b = hi;
    if (a >= b || (a == lo && b == hi))
        return false;
    int64_t cut[4] = {lo, a, b, hi};
    ir_list_remove(l, *i);
    int at = *i;
    for (int c = 0; c < 3; c++) {
        if (cut[c] >= cut[c + 1])
            continue;
        if (cut[c] + 1 == cut[c + 1]) {
            /* one iteration (the border row of a 1-pixel pad): the body, v fixed */
            for (int j = 0; j < L->u.loop.body.n; j++) {
                Node *b1 = ir_clone_node(k, L->u.loop.body.v[j]);
                xf_subst_tree(k, b1, L->u.loop.var, ir_int(k, cut[c]));
                ir_list_insert(l, at++, b1, parent);
            }
            continue;
        }
        Node *piece = ir_clone_node(k, L);
        piece->u.loop.lo = ir_int(k, cut[c]);
        piece->u.loop.hi = ir_int(k, cut[c + 1]);
        ir_list_insert(l, at++, piece, parent);
        CpuRangeSave rs = cpu_ranges_enter(&p->r, k, piece);
        if (cpu_copy_ok(k, &p->r, piece, cut[c], cut[c + 1]))
            piece->u.loop.hint = HINT_COPY;
        cpu_ranges_leave(&p->r, piece, rs);
    }
    /* The caller goes on at the first node that replaced L: what a one-iteration
     * piece holds is split in turn, and the pieces (which cannot be split again:
     * their bounds are the cuts) are walked into. */
    *i -= 1;
    return true;
}

static void part_list(Part *p, NodeList *l, Node *parent, bool in_vector)
{
    for (int i = 0; i < l->n; i++) {
        Node *n = l->v[i];
        if (n->kind == N_IF) {
            part_list(p, &n->u.guard.body, n, in_vector);
            part_list(p, &n->u.guard.els, n, in_vector);
            continue;
        }
        if (n->kind != N_LOOP)
            continue;
        if (!in_vector && split(p, l, &i, parent))
            continue;
        CpuRangeSave s = cpu_ranges_enter(&p->r, p->k, n);
        part_list(p, &n->u.loop.body, n, in_vector || n->u.loop.kind == LOOP_VECTOR);
        cpu_ranges_leave(&p->r, n, s);
    }
}

bool cpu_partition(Kernel *k, Diags *d)
{
    (void)d;
    if (!cpu_holds_scheduled(&k->body))
        return true;
    Part p = {.k = k};
    cpu_ranges_init(&p.r, k);
    part_list(&p, &k->body, NULL, false);
    cpu_ranges_free(&p.r);
    return true;
}
