/* vectorize-tiles: in a kernel with register tiles, a small serial loop (2 to 64
 * trips) whose statements touch a register tile at an index that moves with it
 * (the initialisation and combination loops around an rfactor's partial results, a
 * tile copied with its layout unchanged) becomes a vector loop marked `ordered`,
 * so every access to the tile is at a constant offset and the tile becomes
 * registers.  So does such a loop that copies a row into a private buffer, both
 * sides contiguous (a micro-panel row packed by cache(): B_j1o[c0, c1] =
 * B[.., jo*64 + c1], copied one float at a time before, about 1 cycle per element
 * against 16 per k step of the tile that reads the panel: 6% of 1037x769x511).
 *
 * Such a loop was never checked by the schedule's `vectorize`, so legality is
 * proven here: its body is statements whose loads are uniform or contiguous in the
 * variable (no gather, no padded read) and that the back end can run
 * lane-parallel (cpu_legalize.c's test), and running each statement for all lanes
 * before the next gives the serial loop's result: every buffer written is written
 * and read by each iteration at its own element only (one affine offset per
 * buffer, moving with the loop), or is a `+=`-style reduction into one element that
 * no other statement of the loop touches, which `ordered` makes the back end add
 * in the serial order, so the result is the same to the bit.  A loop that stages
 * one element, `t[0] = rf[c]; s += t[0]`, fails that test and stays serial. */
#include "cpu.h"

/* Whether e reads a register tile at an index that uses v. */
static bool expr_tile_at(const Kernel *k, const Expr *e, const Var *v)
{
    if (!e)
        return false;
    if (e->kind == IE_LOAD) {
        const Buffer *b = e->u.load.buf;
        for (int i = 0; i < b->rank; i++)
            if ((cpu_is_tile(k, b) && ir_expr_uses_var(e->u.load.idx[i], v)) || expr_tile_at(k, e->u.load.idx[i], v))
                return true;
        return false;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        if (expr_tile_at(k, e->args[i], v))
            return true;
    return false;
}

static bool list_tile_at(const Kernel *k, const NodeList *l, const Var *v)
{
    for (int i = 0; i < l->n; i++) {
        Node *n = l->v[i];
        if (n->kind == N_STMT) {
            const Buffer *b = n->u.stmt.buf;
            for (int j = 0; j < b->rank; j++)
                if (cpu_is_tile(k, b) && ir_expr_uses_var(n->u.stmt.idx[j], v))
                    return true;
            if (expr_tile_at(k, n->u.stmt.value, v))
                return true;
        } else if (list_tile_at(k, ir_body(n), v)) {
            return true;
        }
    }
    return false;
}

/* Whether every load in e is uniform or contiguous in v (no gather). */
static bool loads_plain(const Kernel *k, const Expr *e, const Var *v)
{
    if (!e)
        return true;
    if (e->kind == IE_LOAD) {
        if (cpu_access_kind(k, e->u.load.idx, e->u.load.buf->rank, v) == CPU_ACC_OTHER || cpu_load_padded(e))
            return false;
        for (int i = 0; i < e->u.load.buf->rank; i++)
            if (!loads_plain(k, e->u.load.idx[i], v))
                return false;
        return true;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        if (!loads_plain(k, e->args[i], v))
            return false;
    return true;
}

/* Whether every load of b in e is of the element at offset *at. */
static bool loads_at(const Kernel *k, const Expr *e, const Buffer *b, const ArAff *at)
{
    if (!e)
        return true;
    if (e->kind == IE_LOAD) {
        ArAff o;
        if (e->u.load.buf == b && (!cpu_offset_aff(k, b, e->u.load.idx, &o) || !ar_aff_same(&o, at)))
            return false;
        for (int i = 0; i < e->u.load.buf->rank; i++)
            if (!loads_at(k, e->u.load.idx[i], b, at))
                return false;
        return true;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        if (!loads_at(k, e->args[i], b, at))
            return false;
    return true;
}

static bool lanes_independent(const Kernel *k, const NodeList *l, const Var *v)
{
    for (int i = 0; i < l->n; i++) {
        const Node *s = l->v[i];
        if (s->kind != N_STMT)
            return false;
        const Buffer *b = s->u.stmt.buf;
        CpuAccKind ak = cpu_access_kind(k, s->u.stmt.idx, b->rank, v);
        if (ak == CPU_ACC_UNIFORM) {
            if (s->u.stmt.op == SOP_ASSIGN)
                return false;
            for (int j = 0; j < l->n; j++) {
                const Node *t = l->v[j];
                if (j == i)
                    continue;
                if (t->u.stmt.buf == b || ir_expr_reads(t->u.stmt.value, b))
                    return false;
                for (int d = 0; d < t->u.stmt.buf->rank; d++)
                    if (ir_expr_reads(t->u.stmt.idx[d], b))
                        return false;
            }
            continue;
        }
        ArAff at;
        if (ak != CPU_ACC_CONTIG || !cpu_offset_aff(k, b, s->u.stmt.idx, &at))
            return false;
        for (int j = 0; j < l->n; j++) {
            const Node *t = l->v[j];
            ArAff o;
            if (t->u.stmt.buf == b && (!cpu_offset_aff(k, b, t->u.stmt.idx, &o) || !ar_aff_same(&o, &at)))
                return false;
            if (!loads_at(k, t->u.stmt.value, b, &at))
                return false;
            for (int d = 0; d < t->u.stmt.buf->rank; d++)
                if (!loads_at(k, t->u.stmt.idx[d], b, &at))
                    return false;
        }
    }
    return true;
}

/* Whether l is one plain copy, contiguous in v on both sides, into a private
 * buffer (MEM_LOCAL temporary) that is not a register tile: a packed panel's row. */
static bool packs_row(const Kernel *k, const NodeList *l, const Var *v)
{
    if (l->n != 1 || l->v[0]->kind != N_STMT)
        return false;
    const Node *s = l->v[0];
    const Buffer *b = s->u.stmt.buf;
    const Expr *e = s->u.stmt.value;
    return s->u.stmt.op == SOP_ASSIGN && !s->u.stmt.guarded && b->kind == BUF_TEMP && b->mem == MEM_LOCAL &&
           !cpu_is_tile(k, b) && e->kind == IE_LOAD && e->u.load.buf != b && !cpu_load_padded(e) &&
           cpu_access_kind(k, s->u.stmt.idx, b->rank, v) == CPU_ACC_CONTIG &&
           cpu_access_kind(k, e->u.load.idx, e->u.load.buf->rank, v) == CPU_ACC_CONTIG;
}

bool cpu_vectorize_ok(const Kernel *k, const Node *n)
{
    const NodeList *l = &n->u.loop.body;
    const Var *v = n->u.loop.var;
    int64_t ext;
    if (n->u.loop.kind != LOOP_SERIAL || !cpu_const_extent(k, n->u.loop.lo, n->u.loop.hi, &ext) || ext < 2 ||
        ext > 64 || (!list_tile_at(k, l, v) && !packs_row(k, l, v)))
        return false;
    for (int i = 0; i < l->n; i++) {
        const Node *s = l->v[i];
        if (s->kind != N_STMT || !loads_plain(k, s->u.stmt.value, v))
            return false;
        for (int j = 0; j < s->u.stmt.buf->rank; j++)
            if (!loads_plain(k, s->u.stmt.idx[j], v))
                return false;
    }
    return cpu_vector_body_ok(k, l, v) && lanes_independent(k, l, v);
}

static void vectorize_list(const Kernel *k, NodeList *l, bool in_vector)
{
    for (int i = 0; i < l->n; i++) {
        Node *n = l->v[i];
        if (n->kind == N_IF) {
            vectorize_list(k, &n->u.guard.body, in_vector);
            vectorize_list(k, &n->u.guard.els, in_vector);
            continue;
        }
        if (n->kind != N_LOOP || n->u.loop.hint != HINT_NONE)
            continue;
        if (!in_vector && cpu_vectorize_ok(k, n)) {
            n->u.loop.kind = LOOP_VECTOR;
            n->u.loop.hint = HINT_ORDERED;
            continue;
        }
        vectorize_list(k, &n->u.loop.body, in_vector || n->u.loop.kind == LOOP_VECTOR);
    }
}

bool cpu_vectorize(Kernel *k, Diags *d)
{
    (void)d;
    if (cpu_holds_scheduled(&k->body))
        vectorize_list(k, &k->body, false);
    return true;
}
