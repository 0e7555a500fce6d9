/* The translation of an `amx-tiles` loop (passes/cpu_amx.c marked it; ir/cpu_amx.c
 * states its shape): R x W accumulators over E pairs of k become AMX tile products.
 *
 *   C[r][c] = tileloadd(Acc at rows 16r, columns 16c)      (R/16)(W/16) tiles
 *   for each step t of 16 pairs (32 k), unrolled:
 *     A[r] = tileloadd(A at rows 16r, k 32t)                 R/16 tiles
 *     P[c] = tileloadd(P at pairs 16t, columns 16c)          W/16 tiles
 *     C[r][c] = tdpbf16ps(C[r][c], A[r], P[c])
 *   tilestored(C[r][c]) back into Acc
 *
 * Each tile is 16 rows of 64 bytes (16 f32, or 32 bf16 = 16 pairs) at the operand's
 * row stride.  The steps are unrolled so that no tile value crosses a branch: LLVM's
 * AMX lowering then configures the tiles once (ldtilecfg) from the constant shapes
 * and keeps the eight in registers.  The C tiles stay in registers over the whole
 * loop: one load and one store of the accumulators per R x W x 2E block.
 *
 * The kernel's entry asks the operating system for the tiles first
 * (perfc_amx_permit, runtime/pool.c): Linux refuses them to a process that has not.
 * Where the target has no AMX or the shape is not there, the loop is emitted as
 * what it is, a serial loop. */
#include "emit_int.h"

/* The element address of load or store index idx with the loop variables at
 * their first values (bound by the caller), as an i8 pointer. */
static LLVMValueRef base_ptr(Fn *f, const Buffer *b, Expr *const *idx)
{
    Addr a;
    if (!cg_affine_addr(f, b, idx, true, &a))
        return NULL;
    return cg_ptr_at(f, b, a, false);
}

/* p advanced by `bytes`. */
static LLVMValueRef byte_off(Cg *g, LLVMValueRef p, int64_t bytes)
{
    if (!bytes)
        return p;
    LLVMValueRef o = cg_ci64(g, bytes);
    return LLVMBuildGEP2(g->B, g->ti8, p, &o, 1, "");
}

static LLVMValueRef i16c(Cg *g, int v) { return LLVMConstInt(g->ti16, (unsigned long long)v, 0); }

/* A 16-row tile of 64-byte rows at p, rows `stride` bytes apart. */
static LLVMValueRef tile_load(Cg *g, LLVMValueRef p, int64_t stride)
{
    LLVMValueRef args[4] = {i16c(g, 16), i16c(g, 64), p, cg_ci64(g, stride)};
    return cg_intr(g, "llvm.x86.tileloadd64.internal", NULL, 0, args, 4);
}

void cg_emit_tiles(Fn *f, const Node *L, LLVMValueRef lo, LLVMValueRef hi)
{
    Cg *g = f->g;
    CpuAmx t;
    if (!g->t->amx || f->vw || !cpu_amx_shape(g->k, L, &t)) {
        cg_emit_serial(f, L, lo, hi);
        return;
    }
    const Node *s = t.s;
    const Buffer *acc = s->u.stmt.buf, *A = t.a->u.load.buf, *P = t.p->u.load.buf;
    /* the operands as memory: pending stores out (a panel packed in this block, the
     * accumulators' last values), and what is known of Acc forgotten (written below) */
    cg_touch_unknown(f, A, false);
    cg_touch_unknown(f, P, false);
    cg_touch_unknown(f, acc, true);
    Binding bk = cg_bind(f, t.kp, cg_S(lo)), bi = cg_bind(f, t.i, cg_S(cg_ci64(g, 0))),
            bj = cg_bind(f, t.j, cg_S(cg_ci64(g, 0))), bq = cg_bind(f, t.q, cg_S(cg_ci64(g, 0)));
    LLVMValueRef cp = base_ptr(f, acc, s->u.stmt.idx), ap = base_ptr(f, A, t.a->u.load.idx),
                 pp = base_ptr(f, P, t.p->u.load.idx);
    cg_unbind(f, t.q, bq);
    cg_unbind(f, t.j, bj);
    cg_unbind(f, t.i, bi);
    cg_unbind(f, t.kp, bk);
    if (!cp || !ap || !pp) {
        cg_emit_serial(f, L, lo, hi);
        return;
    }
    int nr = (int)(t.rows / 16), nc = (int)(t.cols / 16);
    /* byte strides: a row of C (f32), a row of A (bf16), a pair row of P (bf16) */
    int64_t sc = t.ldc * 4, sa = t.lda * 2, sp = t.ldp * 2;
    LLVMValueRef C[2][2], Ta[2], Tp[2];
    for (int r = 0; r < nr; r++)
        for (int c = 0; c < nc; c++)
            C[r][c] = tile_load(g, byte_off(g, cp, 16 * r * sc + 16 * c * 4), sc);
    for (int64_t st = 0; st < t.steps; st++) {
        for (int r = 0; r < nr; r++)
            Ta[r] = tile_load(g, byte_off(g, ap, 16 * r * sa + st * 64), sa);
        for (int c = 0; c < nc; c++)
            Tp[c] = tile_load(g, byte_off(g, pp, st * 16 * sp + c * 64), sp);
        for (int r = 0; r < nr; r++)
            for (int c = 0; c < nc; c++) {
                LLVMValueRef args[6] = {i16c(g, 16), i16c(g, 64), i16c(g, 64), C[r][c], Ta[r], Tp[c]};
                C[r][c] = cg_intr(g, "llvm.x86.tdpbf16ps.internal", NULL, 0, args, 6);
            }
    }
    for (int r = 0; r < nr; r++)
        for (int c = 0; c < nc; c++) {
            LLVMValueRef args[5] = {i16c(g, 16), i16c(g, 64), byte_off(g, cp, 16 * r * sc + 16 * c * 4),
                                    cg_ci64(g, sc), C[r][c]};
            cg_intr(g, "llvm.x86.tilestored64.internal", NULL, 0, args, 5);
        }
    g->uses_amx = true;
}
