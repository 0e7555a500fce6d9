/* transpose-blocks, part of the `transpose` step: a copy between two buffers in
 * memory that changes which loop is contiguous, of ir/cpu_tblocks.c's shape, is
 * marked `transpose-blocks`.  conv2d packs its filters on every call this way,
 * Fp[c, r, s, k] = F[k, c, r, s] (a = k, KV of them; j = (c, r, s)): element by
 * element that is a scalar load and a scalar store per float, 9.4 MB a call at 512
 * channels; the back end instead loads w rows of w consecutive j as vectors,
 * transposes them with shuffles and stores w vectors along a, and copies the
 * j % w left over element by element.
 *
 * Legal because the nest is a plain copy (`X[..] = Y[..]`, one dtype whose storage
 * is its compute type, no padded or guarded access) between two different
 * buffers, so no store changes a value the nest reads and the stores may happen in
 * any order as long as no element is written twice: the written side's offsets
 * are distinct over the nest (a column side's stride sc per j is at least w, a row
 * side's stride sr per a at least the number of j). */
#include "cpu.h"

static bool plain_dtype(DType t)
{
    return t == DT_F32 || t == DT_F64 || t == DT_I32 || t == DT_I64;
}

bool cpu_transpose_blocks_ok(const Kernel *k, const Node *L)
{
    CpuTBlocks t;
    if (!cpu_tblocks_shape(k, L, &t))
        return false;
    const Node *st = t.st;
    const Expr *ld = st->u.stmt.value;
    const Buffer *sb = st->u.stmt.buf, *lb = ld->u.load.buf;
    if (sb == lb || sb->dtype != lb->dtype || !plain_dtype(sb->dtype) || st->u.stmt.guarded || ld->u.load.guarded ||
        cpu_load_padded(ld) || cpu_is_tile(k, sb) || cpu_is_tile(k, lb))
        return false;
    int64_t nj = t.ext[0] < 0 ? -1 : t.ext[0] * t.inner; /* -1: known only at run time */
    if (nj >= 0 && nj < t.w) /* not one whole block: nothing to gain */
        return false;
    if (t.rows_read)
        return t.sc >= t.w;
    return nj >= 0 && t.sr >= nj;
}
