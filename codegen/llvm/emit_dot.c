/* The translation of a `dot-product` loop (passes/cpu_dot.c decided it): two
 * iterations q = 0, 1 inside a vector loop over j, one statement
 *
 *   Acc[.., j] += f32(A[.., .. + q]) * f32(P[.., j, q])
 *
 * become, per 16 lanes of j (8 at a ragged end), one
 * llvm.x86.avx512bf16.dpbf16ps: P's pairs of lanes are one load of 32 bf16 (its
 * layout puts q innermost, j next), A's pair one 32-bit load broadcast to every
 * lane, and each f32 lane gets Acc + a0*b0 + a1*b1.  The accumulator goes through
 * the block's load and store caches like any other access, so a register tile
 * stays in registers across the unrolled rows.
 *
 * Where the target cannot select the instruction (no avx512bf16 known to LLVM), a
 * guard masks lanes, or the addresses are not the pair layout the pass promised,
 * the loop is emitted as what it is: its two iterations, unrolled. */
#include "emit_int.h"

/* The statement's two bf16 operands: the one that moves with the vector loop's
 * variable (*p) and the one that is the same for all lanes (*a). */
static bool operands(const Node *s, const Expr **p, const Expr **a)
{
    const Expr *v = s->u.stmt.value, *x[2];
    if (v->kind != IE_MUL)
        return false;
    for (int i = 0; i < 2; i++) {
        x[i] = v->args[i]->kind == IE_CAST ? v->args[i]->args[0] : v->args[i];
        if (x[i]->kind != IE_LOAD || x[i]->u.load.buf->dtype != DT_BF16 || x[i]->u.load.guarded)
            return false;
    }
    *p = x[0], *a = x[1];
    return true;
}

/* The coefficients of the vector variable v and of q in b[idx]'s element offset. */
static bool coefs(const Cg *g, const Buffer *b, Expr *const *idx, const Var *v, const Var *q, int64_t *cv, int64_t *cq)
{
    ArAff o;
    if (!cpu_offset_aff(g->k, b, idx, &o))
        return false;
    *cv = ar_aff_coef(&o, v->id);
    *cq = ar_aff_coef(&o, q->id);
    return true;
}

/* Whether loop L can be one dpbf16ps per 16 lanes here; *p and *a get the
 * operands (P interleaved pairs of the lanes, A one pair for all lanes). */
static bool dot_ok(const Fn *f, const Node *L, const Expr **p, const Expr **a)
{
    const Cg *g = f->g;
    const Node *s = L->u.loop.body.n == 1 ? L->u.loop.body.v[0] : NULL;
    int64_t ext, cv, cq;
    if (!g->t->dot_bf16 || !f->vw || f->vw % 8 || f->mask || !s || s->kind != N_STMT || s->u.stmt.guarded ||
        s->u.stmt.op != SOP_ADD || s->u.stmt.buf->dtype != DT_F32 ||
        !cg_const_extent(g, L->u.loop.lo, L->u.loop.hi, &ext) || ext != 2 || !operands(s, p, a))
        return false;
    const Var *q = L->u.loop.var, *v = f->vvar;
    if (!coefs(g, (*p)->u.load.buf, (*p)->u.load.idx, v, q, &cv, &cq) || cv != 2 || cq != 1) {
        const Expr *t = *p;
        *p = *a, *a = t;
        if (!coefs(g, (*p)->u.load.buf, (*p)->u.load.idx, v, q, &cv, &cq) || cv != 2 || cq != 1)
            return false;
    }
    if (!coefs(g, (*a)->u.load.buf, (*a)->u.load.idx, v, q, &cv, &cq) || cv != 0 || cq != 1)
        return false;
    return coefs(g, s->u.stmt.buf, s->u.stmt.idx, v, q, &cv, &cq) && cv == 1 && cq == 0;
}

/* Lanes [c, c + w) of v. */
static LLVMValueRef lanes(Cg *g, LLVMValueRef v, int c, int w)
{
    LLVMValueRef m[64];
    for (int i = 0; i < w; i++)
        m[i] = cg_ci32(g, c + i);
    return LLVMBuildShuffleVector(g->B, v, LLVMGetPoison(LLVMTypeOf(v)), LLVMConstVector(m, (unsigned)w), "");
}

/* whole with lanes [c, c + w) replaced by part (w lanes). */
static LLVMValueRef put_lanes(Cg *g, LLVMValueRef whole, LLVMValueRef part, int c, int w, int n)
{
    LLVMValueRef m[CPU_MAX_VECTOR_WIDTH];
    for (int i = 0; i < n; i++)
        m[i] = cg_ci32(g, i < w ? i : w); /* part widened to n lanes, the rest unused */
    LLVMValueRef wide = LLVMBuildShuffleVector(g->B, part, LLVMGetPoison(LLVMTypeOf(part)),
                                               LLVMConstVector(m, (unsigned)n), "");
    for (int i = 0; i < n; i++)
        m[i] = cg_ci32(g, i >= c && i < c + w ? n + (i - c) : i);
    return LLVMBuildShuffleVector(g->B, whole, wide, LLVMConstVector(m, (unsigned)n), "");
}

/* The loop's iterations one after the other, unrolled (its extent is constant). */
static void emit_plain(Fn *f, const Node *L, LLVMValueRef lo)
{
    Cg *g = f->g;
    int64_t ext;
    if (!cg_const_extent(g, L->u.loop.lo, L->u.loop.hi, &ext))
        die("dot-product loop %s: no constant trip count", L->u.loop.var->name);
    for (int64_t i = 0; i < ext && !g->failed; i++) {
        LLVMValueRef iv = i == 0 ? lo : LLVMBuildNSWAdd(g->B, lo, cg_ci64(g, i), "");
        Binding saved = cg_bind(f, L->u.loop.var, cg_S(iv));
        cg_emit_list(f, &L->u.loop.body);
        cg_unbind(f, L->u.loop.var, saved);
    }
}

/* w copies of the scalar x. */
static LLVMValueRef splat(Cg *g, LLVMValueRef x, int w)
{
    LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(x), (unsigned)w);
    LLVMValueRef v = LLVMBuildInsertElement(g->B, LLVMGetPoison(vt), x, cg_ci32(g, 0), "");
    LLVMValueRef z[16];
    for (int i = 0; i < w; i++)
        z[i] = cg_ci32(g, 0);
    return LLVMBuildShuffleVector(g->B, v, LLVMGetPoison(vt), LLVMConstVector(z, (unsigned)w), "");
}

void cg_emit_dot(Fn *f, const Node *L, LLVMValueRef lo)
{
    Cg *g = f->g;
    LLVMBuilderRef B = g->B;
    const Expr *p, *a;
    const Var *q = L->u.loop.var;
    if (!dot_ok(f, L, &p, &a)) {
        emit_plain(f, L, lo);
        return;
    }
    const Node *s = L->u.loop.body.v[0];
    const Buffer *acc = s->u.stmt.buf, *P = p->u.load.buf, *A = a->u.load.buf;
    int n = f->vw;
    Binding saved = cg_bind(f, q, cg_S(lo));
    Addr pa, aa, ca;
    bool ok = cg_affine_addr(f, P, p->u.load.idx, true, &pa) && cg_affine_addr(f, A, a->u.load.idx, false, &aa) &&
              cg_affine_addr(f, acc, s->u.stmt.idx, true, &ca);
    if (!ok) {
        cg_unbind(f, q, saved);
        emit_plain(f, L, lo);
        return;
    }
    /* pending stores to the operands first (a panel packed in this block) */
    cg_touch_unknown(f, P, false);
    cg_touch_unknown(f, A, false);
    LLVMValueRef pp = cg_ptr_at(f, P, pa, true), ap = cg_ptr_at(f, A, aa, true);
    LLVMValueRef old = cg_load_at(f, acc, ca, n);
    cg_unbind(f, q, saved);

    /* A's pair as 32 bits, unaligned where A's rows are odd */
    LLVMValueRef a32 = cg_tag(g, A, LLVMBuildLoad2(B, g->ti32, ap, ""));
    LLVMSetAlignment(a32, cg_elem_align(g, DT_BF16));
    LLVMTypeRef tbf = LLVMBFloatTypeInContext(g->C);
    LLVMValueRef res = old;
    for (int c = 0; c < n;) {
        int w = n - c >= 16 ? 16 : 8;
        LLVMTypeRef tp = LLVMVectorType(tbf, (unsigned)(2 * w));
        LLVMValueRef off = cg_ci64(g, 2 * c);
        LLVMValueRef bp = LLVMBuildGEP2(B, g->ti16, pp, &off, 1, "");
        LLVMValueRef bv = cg_tag(g, P, LLVMBuildLoad2(B, LLVMVectorType(g->ti16, (unsigned)(2 * w)), bp, ""));
        LLVMSetAlignment(bv, cg_elem_align(g, DT_BF16));
        bv = LLVMBuildBitCast(B, bv, tp, "");
        LLVMValueRef av = LLVMBuildBitCast(B, splat(g, a32, w), tp, "");
        LLVMValueRef args[3] = {lanes(g, old, c, w), av, bv};
        LLVMValueRef r = cg_intr(g, w == 16 ? "llvm.x86.avx512bf16.dpbf16ps.512" : "llvm.x86.avx512bf16.dpbf16ps.256",
                                 NULL, 0, args, 3);
        res = w == n ? r : put_lanes(g, res, r, c, w, n);
        c += w;
    }
    cg_store_at(f, acc, ca, n, res);
}

/* An `interleave` loop (passes/cpu_dot.c): in a vector loop over c, two
 * iterations q of P[.., c, q] = X[.., c, ..] (16-bit both, X contiguous in c, P's
 * element 2c + q) become two loads of X's rows, one shuffle that interleaves
 * them and one store.  The value is copied as bits: a bf16 read and stored as
 * bf16 is the same value. */
void cg_emit_interleave(Fn *f, const Node *L, LLVMValueRef lo)
{
    Cg *g = f->g;
    LLVMBuilderRef B = g->B;
    const Node *s = L->u.loop.body.n == 1 ? L->u.loop.body.v[0] : NULL;
    const Expr *x = s && s->kind == N_STMT ? s->u.stmt.value : NULL;
    if (x && x->kind == IE_CAST)
        x = x->args[0];
    const Var *q = L->u.loop.var;
    int64_t ext, cv, cq, xv, xq;
    if (!f->vw || f->mask || !x || x->kind != IE_LOAD || s->u.stmt.op != SOP_ASSIGN || s->u.stmt.guarded ||
        x->u.load.guarded || dtype_bytes(s->u.stmt.buf->dtype) != 2 || dtype_bytes(x->u.load.buf->dtype) != 2 ||
        !cg_const_extent(g, L->u.loop.lo, L->u.loop.hi, &ext) || ext != 2 ||
        !coefs(g, s->u.stmt.buf, s->u.stmt.idx, f->vvar, q, &cv, &cq) || cv != 2 || cq != 1 ||
        !coefs(g, x->u.load.buf, x->u.load.idx, f->vvar, q, &xv, &xq) || xv != 1)
        die("interleave loop %s: not a pair copy", q->name);
    const Buffer *P = s->u.stmt.buf, *X = x->u.load.buf;
    int n = f->vw;
    LLVMTypeRef tv = LLVMVectorType(g->ti16, (unsigned)n);
    LLVMValueRef rows[2], sp = NULL;
    cg_touch_unknown(f, X, false);
    for (int i = 0; i < 2; i++) {
        LLVMValueRef iv = i == 0 ? lo : LLVMBuildNSWAdd(B, lo, cg_ci64(g, i), "");
        Binding saved = cg_bind(f, q, cg_S(iv));
        Addr xa, pa;
        if (!cg_affine_addr(f, X, x->u.load.idx, true, &xa) || (i == 0 && !cg_affine_addr(f, P, s->u.stmt.idx, true, &pa)))
            die("interleave loop %s: addresses not affine", q->name);
        if (i == 0)
            sp = cg_ptr_at(f, P, pa, true);
        rows[i] = cg_tag(g, X, LLVMBuildLoad2(B, tv, cg_ptr_at(f, X, xa, true), ""));
        LLVMSetAlignment(rows[i], 2);
        cg_unbind(f, q, saved);
    }
    LLVMValueRef m[2 * CPU_MAX_VECTOR_WIDTH];
    for (int i = 0; i < n; i++) {
        m[2 * i] = cg_ci32(g, i);
        m[2 * i + 1] = cg_ci32(g, n + i);
    }
    LLVMValueRef v = LLVMBuildShuffleVector(B, rows[0], rows[1], LLVMConstVector(m, (unsigned)(2 * n)), "");
    cg_touch_unknown(f, P, true);
    LLVMValueRef st = cg_tag(g, P, LLVMBuildStore(B, v, sp));
    LLVMSetAlignment(st, 2);
}
