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
 * side's stride sr per a at least the number of j).
 *
 * A head loop wider than a block whose extent is a multiple of 8 (the A·Bᵀ GEMM's
 * panel packing, B_j1o[k, j] = B[j, k] over 64 j) is first split into loops of 8
 * iterations, a change of loop structure only, and the inner one is marked.
 *
 * Pairs of bf16 (the AMX template's packed nn.Linear weight, Wp[p, j, q] =
 * W[j, 2p + q], passes/cpu_dot.c's layout) are transposed as 32-bit units: the same
 * bits land in the same places as the element copy's, two at a time. */
#include <stdio.h>

#include "../ir/arith.h"
#include "cpu.h"

/* The block width a wider head loop is split into: 8 floats, one AVX register, the
 * width the back end's 8 x 8 transpose loads by halves. */
#define TB_SPLIT 8

static bool plain_dtype(DType t)
{
    return t == DT_F32 || t == DT_F64 || t == DT_I32 || t == DT_I64;
}

/* Whether the nest at L is a legal blocked transposing copy, its head loop of any
 * extent (t filled in). */
static bool legal(const Kernel *k, const Node *L, CpuTBlocks *t)
{
    if (!cpu_tblocks_shape(k, L, true, t))
        return false;
    const Node *st = t->st;
    const Expr *ld = t->ld;
    const Buffer *sb = st->u.stmt.buf, *lb = ld->u.load.buf;
    /* pairs of 16-bit values move as their bits: any 2-byte type; single 16-bit
     * floats go through f32 and back, which is exact for a value read from the
     * same type (AMX's Aᵀ block) */
    bool dtype_ok = t->unit == 2 ? dtype_bytes(sb->dtype) == 2
                                 : plain_dtype(sb->dtype) || sb->dtype == DT_BF16 || sb->dtype == DT_F16;
    if (sb == lb || sb->dtype != lb->dtype || !dtype_ok || st->u.stmt.guarded || ld->u.load.guarded ||
        cpu_load_padded(ld) || cpu_is_tile(k, sb) || cpu_is_tile(k, lb))
        return false;
    int64_t nj = t->ext[0] < 0 ? -1 : t->ext[0] * t->inner; /* -1: known only at run time */
    if (nj >= 0 && nj < (t->w < TB_SPLIT ? t->w : TB_SPLIT)) /* not one whole block: nothing to gain */
        return false;
    if (t->rows_read)
        return t->sc >= t->w;
    return nj >= 0 && t->sr >= nj;
}

bool cpu_transpose_blocks_ok(const Kernel *k, const Node *L)
{
    CpuTBlocks t;
    return legal(k, L, &t) && t.w <= CPU_TBLOCKS_MAX_W && !(t.w & (t.w - 1));
}

/* for a in 0..E (E a multiple of TB_SPLIT, wider than a block) becomes
 * for ao in 0..E/TB_SPLIT { for a in 0..TB_SPLIT { .. a' .. } } with a' = ao TB_SPLIT + a
 * in the copy: the same elements in the same order, each block of TB_SPLIT values of
 * a a nest of the blocked shape.  Returns the inner loop. */
static Node *split_head(Kernel *k, NodeList *l, int at, Node *L, const CpuTBlocks *t)
{
    Var *a = L->u.loop.var;
    char name[256];
    snprintf(name, sizeof name, "%so", a->name);
    Var *ao = ir_new_var(k, name);
    Node *outer = ir_loop(k, ao, ir_int(k, 0), ir_int(k, t->w / TB_SPLIT), L->span);
    Expr *with = ir_bin(k, IE_ADD, ir_bin(k, IE_MUL, ir_var(k, ao), ir_int(k, TB_SPLIT)), ir_var(k, a));
    Node *st = (Node *)t->st;
    Expr *ld = (Expr *)t->ld;
    for (int i = 0; i < st->u.stmt.buf->rank; i++)
        st->u.stmt.idx[i] = ir_simplify(k, ir_subst(k, st->u.stmt.idx[i], a, with));
    for (int i = 0; i < ld->u.load.buf->rank; i++)
        ld->u.load.idx[i] = ir_simplify(k, ir_subst(k, ld->u.load.idx[i], a, with));
    L->u.loop.hi = ir_int(k, TB_SPLIT);
    Node *parent = L->parent;
    ir_list_remove(l, at);
    ir_list_insert(l, at, outer, parent);
    ir_list_push(&outer->u.loop.body, L, outer);
    return L;
}

static bool mark(Kernel *k, NodeList *l, int at);

/* A head loop over the last, ragged block of a panel, for a in 0..min(w, X) (a
 * packed operand whose rows or columns the block size does not divide: Aᵀ·Bᵀ at
 * 1037 x 769 x 511 copied both operands element by element) is versioned:
 * `if X >= w` the nest with extent w, marked, `else` the nest as it was.  Every
 * block but the last takes the first branch. */
static bool ragged_head(Kernel *k, NodeList *l, int at)
{
    Node *L = l->v[at];
    const Expr *hi = L->kind == N_LOOP ? L->u.loop.hi : NULL;
    int64_t lo, w;
    if (!hi || hi->kind != IE_MIN || L->u.loop.kind != LOOP_SERIAL || !ar_const(k, L->u.loop.lo, &lo) || lo != 0)
        return false;
    int c = ar_const(k, hi->args[0], &w) ? 0 : ar_const(k, hi->args[1], &w) ? 1 : -1;
    if (c < 0 || w < TB_SPLIT)
        return false;
    Node *fast = ir_clone_node(k, L);
    fast->u.loop.hi = ir_int(k, w);
    CpuTBlocks t;
    if (!legal(k, fast, &t) || ((t.w > CPU_TBLOCKS_MAX_W || (t.w & (t.w - 1))) && t.w % TB_SPLIT))
        return false;
    Node *parent = L->parent;
    Node *g = ir_guard(k, ir_bin(k, IE_GE, ir_clone_expr(k, hi->args[1 - c]), ir_int(k, w)), L->span);
    ir_list_remove(l, at);
    ir_list_insert(l, at, g, parent);
    ir_list_push(ir_body(g), fast, g);
    ir_list_push(ir_else(g), L, g);
    return mark(k, ir_body(g), 0);
}

bool cpu_transpose_blocks_mark(Kernel *k, NodeList *l, int at)
{
    return mark(k, l, at) || ragged_head(k, l, at);
}

static bool mark(Kernel *k, NodeList *l, int at)
{
    Node *L = l->v[at];
    CpuTBlocks t;
    if (!legal(k, L, &t))
        return false;
    if (t.w > CPU_TBLOCKS_MAX_W || (t.w & (t.w - 1))) {
        if (t.w % TB_SPLIT)
            return false;
        L = split_head(k, l, at, L, &t);
    }
    L->u.loop.hint = HINT_TRANSPOSE_BLOCKS;
    return true;
}
