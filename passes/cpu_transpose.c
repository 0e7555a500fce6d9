/* transpose: in a kernel with register tiles, a nest of two serial loops that
 * copies between a register tile and another buffer whose contiguous dimensions
 * lie on different loops (cache() with layout(): conv2d keeps a 14 x 8 tile of Y
 * with the 8 output channels contiguous) is marked `transpose`.  The back end then
 * loads the rows of one side as vectors, transposes them with shuffles in blocks of
 * the tile's row length, and stores them as rows of the other, every tile access
 * at a constant offset, so the tile stays in registers; as two loops the tile
 * would stay in memory, and unrolled, the 2 x 112 element copies are slow to
 * compile and to run.
 *
 * Legal because the nest is a plain copy (`X[..] = Y[..]`, one dtype whose storage
 * is its compute type, no padded read) between two different buffers, so its
 * stores may happen in any order; the back end writes every element the nest
 * writes, with the value it reads.  The tile's contiguous variable has a power of
 * two trip count from 2 to 16, the tile holds at most 256 elements and is indexed
 * by the nest's two variables alone.
 *
 * The same step marks copies between two buffers in memory that transpose
 * `transpose-blocks` (cpu_transpose_blocks.c): conv2d's filter packing. */
#include "cpu.h"

/* Storage equals compute type (no f16/bf16 conversion, no bool byte). */
static bool plain_dtype(DType t)
{
    return t == DT_F32 || t == DT_F64 || t == DT_I32 || t == DT_I64;
}

bool cpu_transpose_ok(const Kernel *k, const Node *L)
{
    if (L->u.loop.kind != LOOP_SERIAL || L->u.loop.body.n != 1)
        return false;
    const Node *L2 = L->u.loop.body.v[0];
    if (L2->kind != N_LOOP || L2->u.loop.kind != LOOP_SERIAL || L2->u.loop.body.n != 1)
        return false;
    const Node *st = L2->u.loop.body.v[0];
    if (st->kind != N_STMT || st->u.stmt.op != SOP_ASSIGN || st->u.stmt.value->kind != IE_LOAD || st->u.stmt.guarded)
        return false;
    const Expr *ld = st->u.stmt.value;
    const Buffer *sb = st->u.stmt.buf, *lb = ld->u.load.buf;
    if (sb->dtype != lb->dtype || !plain_dtype(sb->dtype) || cpu_load_padded(ld) ||
        cpu_is_tile(k, sb) == cpu_is_tile(k, lb))
        return false;
    bool in = cpu_is_tile(k, sb); /* copy into the tile */
    const Buffer *T = in ? sb : lb, *G = in ? lb : sb;
    Expr *const *ti = in ? st->u.stmt.idx : ld->u.load.idx, *const *gi = in ? ld->u.load.idx : st->u.stmt.idx;
    ArAff ta, ga, lo1, lo2;
    int64_t n1, n2;
    if (!cpu_offset_aff(k, T, ti, &ta) || !cpu_offset_aff(k, G, gi, &ga) ||
        !cpu_const_extent(k, L->u.loop.lo, L->u.loop.hi, &n1) || !cpu_const_extent(k, L2->u.loop.lo, L2->u.loop.hi, &n2) ||
        !ar_aff_of(k, L->u.loop.lo, &lo1) || !ar_aff_of(k, L2->u.loop.lo, &lo2) || lo1.n || lo2.n)
        return false;
    const Var *va = L->u.loop.var, *vb = L2->u.loop.var;
    const Var *gv;
    int64_t nt, ng;
    if (ar_aff_coef(&ta, va->id) == 1 && ar_aff_coef(&ga, vb->id) == 1)
        gv = vb, nt = n1, ng = n2;
    else if (ar_aff_coef(&ta, vb->id) == 1 && ar_aff_coef(&ga, va->id) == 1)
        gv = va, nt = n2, ng = n1;
    else
        return false;
    if (nt < 2 || nt > 16 || (nt & (nt - 1)) || ng < 1 || ng * nt > CPU_TILE_ELEMS || ar_aff_coef(&ta, gv->id) < nt)
        return false;
    for (int i = 0; i < ta.n; i++) /* the tile is indexed by the two variables alone */
        if (ta.k[i] && ta.var[i] != va->id && ta.var[i] != vb->id)
            return false;
    return true;
}

static void transpose_list(Kernel *k, NodeList *l, bool in_vector)
{
    for (int i = 0; i < l->n; i++) {
        Node *n = l->v[i];
        if (n->kind == N_IF) {
            transpose_list(k, &n->u.guard.body, in_vector);
            transpose_list(k, &n->u.guard.els, in_vector);
            continue;
        }
        if (n->kind != N_LOOP || n->u.loop.hint != HINT_NONE)
            continue;
        int64_t ext;
        if (!in_vector && cpu_const_extent(k, n->u.loop.lo, n->u.loop.hi, &ext) && ext > 1 &&
            cpu_transpose_ok(k, n)) {
            n->u.loop.hint = HINT_TRANSPOSE;
            continue;
        }
        if (!in_vector && cpu_transpose_blocks_mark(k, l, i))
            continue;
        transpose_list(k, &n->u.loop.body, in_vector || n->u.loop.kind == LOOP_VECTOR);
    }
}

bool cpu_transpose(Kernel *k, Diags *d)
{
    (void)d;
    if (cpu_holds_scheduled(&k->body))
        transpose_list(k, &k->body, false);
    return true;
}
