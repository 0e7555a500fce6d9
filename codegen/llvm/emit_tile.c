/* Translation of the loops that target lowering marked as whole-nest idioms:
 * `transpose` (a register tile copied across a layout change: rows loaded as
 * vectors and transposed with shuffles), `memcpy` and `memset`.  The passes that
 * mark them (passes/cpu_transpose.c, cpu_partition.c, cpu_fill.c) proved them
 * legal; here they are only emitted. */
#include "emit_int.h"

/* ---- register tiles copied across a layout change ----
 *
 * cache() with layout() gives a register tile whose contiguous dimension is not
 * the buffer's: conv2d keeps a 14 x 8 tile of Y with the 8 output channels
 * contiguous, so it is copied in and out by two loops with a strided side each.  As
 * loops the tile stays in memory; unrolled, the 2 x 112 element copies are slow to
 * compile and to run.  Such a nest is emitted as a transpose instead: the rows of
 * the buffer are loaded as vectors, transposed with shuffles in blocks of the tile's
 * row length (log2(n) stages of n shuffles, the classic in-register transpose), and
 * stored as tile rows (and the other way round), every tile access at a constant
 * offset, so that the tile becomes registers. */

static bool offset_aff(const Cg *g, const Buffer *b, Expr *const *idx, ArAff *tot)
{
    return cpu_offset_aff(g->k, b, idx, tot);
}

static int64_t coef(const ArAff *a, const Var *v)
{
    return ar_aff_coef(a, v->id);
}

/* Transposes the w vectors r[0..w) of w lanes (w a power of two) in place. */
static void transpose(Cg *g, LLVMValueRef *r, int w)
{
    if (w == 8) {
        /* The masks of unpcklps/unpckhps, shufps and vperm2f128: one AVX instruction
         * each (the generic network below needs two for its last stage). */
        static const int ul[8] = {0, 8, 1, 9, 4, 12, 5, 13}, uh[8] = {2, 10, 3, 11, 6, 14, 7, 15};
        static const int sl[8] = {0, 1, 8, 9, 4, 5, 12, 13}, sh[8] = {2, 3, 10, 11, 6, 7, 14, 15};
        static const int pl[8] = {0, 1, 2, 3, 8, 9, 10, 11}, ph[8] = {4, 5, 6, 7, 12, 13, 14, 15};
        LLVMValueRef m[6][8];
        for (int k = 0; k < 8; k++) {
            m[0][k] = cg_ci32(g, ul[k]); m[1][k] = cg_ci32(g, uh[k]); m[2][k] = cg_ci32(g, sl[k]);
            m[3][k] = cg_ci32(g, sh[k]); m[4][k] = cg_ci32(g, pl[k]); m[5][k] = cg_ci32(g, ph[k]);
        }
        LLVMValueRef M[6];
        for (int i = 0; i < 6; i++) M[i] = LLVMConstVector(m[i], 8);
        LLVMValueRef t[8], u[8];
        for (int i = 0; i < 8; i += 2) {
            t[i] = LLVMBuildShuffleVector(g->B, r[i], r[i + 1], M[0], "");
            t[i + 1] = LLVMBuildShuffleVector(g->B, r[i], r[i + 1], M[1], "");
        }
        /* t0=lo(0,1) t1=hi(0,1) t2=lo(2,3) t3=hi(2,3) ... */
        for (int h = 0; h < 8; h += 4) {
            u[h + 0] = LLVMBuildShuffleVector(g->B, t[h + 0], t[h + 2], M[2], "");
            u[h + 1] = LLVMBuildShuffleVector(g->B, t[h + 0], t[h + 2], M[3], "");
            u[h + 2] = LLVMBuildShuffleVector(g->B, t[h + 1], t[h + 3], M[2], "");
            u[h + 3] = LLVMBuildShuffleVector(g->B, t[h + 1], t[h + 3], M[3], "");
        }
        for (int i = 0; i < 4; i++) {
            r[i] = LLVMBuildShuffleVector(g->B, u[i], u[i + 4], M[4], "");
            r[i + 4] = LLVMBuildShuffleVector(g->B, u[i], u[i + 4], M[5], "");
        }
        return;
    }
    LLVMValueRef lo[MAX_VECTOR_WIDTH], hi[MAX_VECTOR_WIDTH];
    for (int b = w / 2; b >= 1; b /= 2) {
        for (int k = 0; k < w; k++) {
            int c = k / (2 * b) * (2 * b), t = k % (2 * b);
            lo[k] = cg_ci32(g, t < b ? c + t : w + c + t - b);
            hi[k] = cg_ci32(g, t < b ? c + b + t : w + c + t);
        }
        LLVMValueRef ml = LLVMConstVector(lo, (unsigned)w), mh = LLVMConstVector(hi, (unsigned)w);
        for (int i = 0; i < w; i++)
            if (!(i & b)) {
                LLVMValueRef x = r[i], y = r[i + b];
                r[i] = LLVMBuildShuffleVector(g->B, x, y, ml, "");
                r[i + b] = LLVMBuildShuffleVector(g->B, x, y, mh, "");
            }
    }
}

/* The columns r[0..8) of the 8 x 8 block of G whose rows start at rows[0..8), for
 * 8 lanes: transpose() with its last stage (the exchange of 128-bit halves) done
 * by the loads, each vector the concatenation of two 4-lane loads (row i and row
 * i + 4, vinsertf128 from memory on x86), and the two in-lane stages after it.
 * Same instructions as loading whole rows and transposing them, but SelectionDAG
 * no longer sees a three-level tree of two-input shuffles above every load, in
 * which its demanded-elements analysis spent about 6 million instructions per
 * transpose: this form takes a third of that off. */
static void transpose8_loads(Fn *f, const Buffer *G, const Addr *rows, LLVMValueRef *r)
{
    Cg *g = f->g;
    static const int ul[8] = {0, 8, 1, 9, 4, 12, 5, 13}, uh[8] = {2, 10, 3, 11, 6, 14, 7, 15};
    static const int sl[8] = {0, 1, 8, 9, 4, 5, 12, 13}, sh[8] = {2, 3, 10, 11, 6, 7, 14, 15};
    LLVMValueRef m[5][8];
    for (int k = 0; k < 8; k++) {
        m[0][k] = cg_ci32(g, ul[k]); m[1][k] = cg_ci32(g, uh[k]); m[2][k] = cg_ci32(g, sl[k]);
        m[3][k] = cg_ci32(g, sh[k]); m[4][k] = cg_ci32(g, k);
    }
    LLVMValueRef M[5];
    for (int i = 0; i < 5; i++) M[i] = LLVMConstVector(m[i], 8);
    LLVMValueRef v[8];
    for (int i = 0; i < 4; i++)
        for (int half = 0; half < 2; half++) {
            Addr lo = rows[i], hi = rows[i + 4];
            lo.c += 4 * half, hi.c += 4 * half;
            v[i + 4 * half] = LLVMBuildShuffleVector(g->B, cg_load_at(f, G, lo, 4), cg_load_at(f, G, hi, 4), M[4], "");
        }
    /* v[h..h+4): rows 0-3 of columns 4h'..4h'+3 in the low halves, rows 4-7 in the high */
    for (int h = 0; h < 8; h += 4) {
        LLVMValueRef t0 = LLVMBuildShuffleVector(g->B, v[h], v[h + 1], M[0], "");
        LLVMValueRef t1 = LLVMBuildShuffleVector(g->B, v[h], v[h + 1], M[1], "");
        LLVMValueRef t2 = LLVMBuildShuffleVector(g->B, v[h + 2], v[h + 3], M[0], "");
        LLVMValueRef t3 = LLVMBuildShuffleVector(g->B, v[h + 2], v[h + 3], M[1], "");
        r[h + 0] = LLVMBuildShuffleVector(g->B, t0, t2, M[2], "");
        r[h + 1] = LLVMBuildShuffleVector(g->B, t0, t2, M[3], "");
        r[h + 2] = LLVMBuildShuffleVector(g->B, t1, t3, M[2], "");
        r[h + 3] = LLVMBuildShuffleVector(g->B, t1, t3, M[3], "");
    }
}

/* The first n of w lanes. */
static LLVMValueRef tail_mask(Cg *g, int n, int w)
{
    LLVMValueRef m[MAX_VECTOR_WIDTH];
    for (int k = 0; k < w; k++)
        m[k] = LLVMConstInt(g->ti1, k < n, 0);
    return LLVMConstVector(m, (unsigned)w);
}

/* Emits the nest L marked `transpose` (`for a { for b { X[..] = Y[..] } }`,
 * passes/cpu_transpose.c proved it a copy between a register tile and another
 * buffer with their contiguous dimensions on different loops). */
void cg_emit_transpose(Fn *f, const Node *L)
{
    Cg *g = f->g;
    const Node *L2 = L->u.loop.body.v[0];
    const Node *st = L2->u.loop.body.v[0];
    const Expr *ld = st->u.stmt.value;
    const Buffer *sb = st->u.stmt.buf, *lb = ld->u.load.buf;
    bool in = cg_is_tile(g, sb); /* copy into the tile */
    const Buffer *T = in ? sb : lb, *G = in ? lb : sb;
    Expr *const *ti = in ? st->u.stmt.idx : ld->u.load.idx, *const *gi = in ? ld->u.load.idx : st->u.stmt.idx;
    ArAff ta, ga, lo1, lo2;
    int64_t n1, n2;
    if (!offset_aff(g, T, ti, &ta) || !offset_aff(g, G, gi, &ga) || !cg_const_extent(g, L->u.loop.lo, L->u.loop.hi, &n1) ||
        !cg_const_extent(g, L2->u.loop.lo, L2->u.loop.hi, &n2) || !cg_affine(g, L->u.loop.lo, &lo1) ||
        !cg_affine(g, L2->u.loop.lo, &lo2))
        die("transpose: loop %s is not a tile copy", L->u.loop.var->name);
    const Var *va = L->u.loop.var, *vb = L2->u.loop.var;
    /* tv: the tile's contiguous variable, gv: the buffer's. */
    const Var *tv, *gv;
    int64_t nt, ng, lot, log;
    if (coef(&ta, va) == 1 && coef(&ga, vb) == 1)
        tv = va, gv = vb, nt = n1, ng = n2, lot = lo1.c, log = lo2.c;
    else
        tv = vb, gv = va, nt = n2, ng = n1, lot = lo2.c, log = lo1.c;

    LLVMValueRef r[16];
    Binding sa = cg_bind(f, tv, cg_S(cg_ci64(g, lot))), sbb = cg_bind(f, gv, cg_S(cg_ci64(g, log)));
    int w = (int)nt;
    for (int64_t q0 = 0; q0 < ng; q0 += w) {
        /* A last block of fewer than w columns is shifted back over the one before
         * (columns 6..13 of 14): whole vectors, columns copied twice with the same
         * values, no masked store (slow on AMD).  Masks only when ng < w. */
        int64_t q = q0 + w > ng && ng >= w ? ng - w : q0;
        int len = (int)(ng - q < w ? ng - q : w);
        Addr a;
        if (in) {
            Addr rows[16];
            for (int i = 0; i < w; i++) {
                f->vars[tv->id] = cg_S(cg_ci64(g, lot + i));
                f->vars[gv->id] = cg_S(cg_ci64(g, log + q));
                if (!cg_affine_addr(f, G, gi, false, &a))
                    die("transpose: buffer address");
                rows[i] = a;
                if (len < w) { /* a masked load: no odd-sized vector for codegen to widen */
                    cg_touch_unknown(f, G, false);
                    r[i] = cg_tag(g, G, cg_masked_load(f, LLVMVectorType(cg_sty(g, G->dtype), (unsigned)w), cg_ptr_at(f, G, a, false),
                                                 cg_elem_align(g, G->dtype), tail_mask(g, len, w)));
                } else if (w != 8) {
                    r[i] = cg_load_at(f, G, a, w);
                }
            }
            if (len == w && w == 8)
                transpose8_loads(f, G, rows, r);
            else
                transpose(g, r, w);
            for (int k = 0; k < len; k++) {
                f->vars[tv->id] = cg_S(cg_ci64(g, lot));
                f->vars[gv->id] = cg_S(cg_ci64(g, log + q + k));
                if (!cg_affine_addr(f, T, ti, false, &a))
                    die("transpose: tile address");
                cg_store_at(f, T, a, w, r[k]);
            }
        } else {
            for (int k = 0; k < w; k++) {
                if (k >= len) {
                    r[k] = LLVMGetPoison(LLVMVectorType(cg_cty(g, T->dtype), (unsigned)w));
                    continue;
                }
                f->vars[tv->id] = cg_S(cg_ci64(g, lot));
                f->vars[gv->id] = cg_S(cg_ci64(g, log + q + k));
                if (!cg_affine_addr(f, T, ti, false, &a))
                    die("transpose: tile address");
                r[k] = cg_load_at(f, T, a, w);
            }
            transpose(g, r, w);
            for (int i = 0; i < w; i++) {
                f->vars[tv->id] = cg_S(cg_ci64(g, lot + i));
                f->vars[gv->id] = cg_S(cg_ci64(g, log + q));
                if (!cg_affine_addr(f, G, gi, false, &a))
                    die("transpose: buffer address");
                if (len < w) {
                    cg_touch_unknown(f, G, true);
                    cg_tag(g, G, cg_masked_store(f, r[i], cg_ptr_at(f, G, a, false), cg_elem_align(g, G->dtype), tail_mask(g, len, w)));
                } else {
                    cg_store_at(f, G, a, w, r[i]);
                }
            }
        }
    }
    cg_unbind(f, gv, sbb);
    cg_unbind(f, tv, sa);
}

/* ---- copies between buffers that transpose in blocks ----
 *
 * A nest marked `transpose-blocks` (passes/cpu_transpose_blocks.c, the shape of
 * ir/cpu_tblocks.c: the row side contiguous along the inner loops taken as one
 * index j, the column side along the head loop a of w iterations): a loop over j
 * in steps of w that loads the w x w block as w vectors of one side, transposes
 * them in registers and stores w vectors of the other, then a loop over the last
 * j % w with a scalar copy per a.  Addresses are the nest's at a = j = 0 plus
 * sr a + j on the row side and a + sc j on the column side, counted in units: one
 * element, or a pair of 16-bit elements (CpuTBlocks.unit). */

static Addr addr_plus(Fn *f, Addr base, LLVMValueRef r, int64_t c)
{
    Addr a = base;
    if (r)
        a.r = base.r ? LLVMBuildNSWAdd(f->g->B, base.r, r, "") : r;
    a.c += c;
    return a;
}

/* One unit of the blocked copy at a: an element of the buffer's dtype (u = 1), or
 * a 32-bit pair of 16-bit elements moved as its bits through the buffer's alias
 * scope (u = 2: the values are never computed on); w of them, or one for w = 0. */
static LLVMValueRef tb_load(Fn *f, const Buffer *b, Addr a, int w, int u)
{
    if (u == 1)
        return cg_load_at(f, b, a, w);
    Cg *g = f->g;
    LLVMTypeRef ty = w ? LLVMVectorType(g->ti32, (unsigned)w) : g->ti32;
    LLVMValueRef v = cg_tag(g, b, LLVMBuildLoad2(g->B, ty, cg_ptr_at(f, b, a, true), ""));
    LLVMSetAlignment(v, cg_elem_align(g, b->dtype));
    return v;
}

static void tb_store(Fn *f, const Buffer *b, Addr a, int w, int u, LLVMValueRef v)
{
    if (u == 1) {
        cg_store_at(f, b, a, w, v);
        return;
    }
    Cg *g = f->g;
    LLVMValueRef s = cg_tag(g, b, LLVMBuildStore(g->B, v, cg_ptr_at(f, b, a, true)));
    LLVMSetAlignment(s, cg_elem_align(g, b->dtype));
}

void cg_emit_transpose_blocks(Fn *f, const Node *L)
{
    Cg *g = f->g;
    CpuTBlocks t;
    if (!cpu_tblocks_shape(g->k, L, false, &t))
        die("transpose-blocks: loop %s is not a blocked copy", L->u.loop.var->name);
    const Node *st = t.st;
    const Expr *ld = t.ld;
    const Buffer *RB = t.rows_read ? ld->u.load.buf : st->u.stmt.buf, *CB = t.rows_read ? st->u.stmt.buf : ld->u.load.buf;
    Expr *const *ri = t.rows_read ? ld->u.load.idx : st->u.stmt.idx, *const *ci = t.rows_read ? st->u.stmt.idx : ld->u.load.idx;
    const Var *av = L->u.loop.var;
    Binding sav[CPU_TBLOCKS_DEPTH + 2];
    sav[0] = cg_bind(f, av, cg_S(cg_ci64(g, 0)));
    for (int i = 0; i < t.m; i++)
        sav[i + 1] = cg_bind(f, t.b[i]->u.loop.var, cg_S(cg_ci64(g, 0)));
    if (t.q)
        sav[t.m + 1] = cg_bind(f, t.q->u.loop.var, cg_S(cg_ci64(g, 0)));
    Addr r0, c0;
    if (!cg_affine_addr(f, RB, ri, false, &r0) || !cg_affine_addr(f, CB, ci, false, &c0))
        die("transpose-blocks: address");
    if (t.q)
        cg_unbind(f, t.q->u.loop.var, sav[t.m + 1]);
    for (int i = t.m - 1; i >= 0; i--)
        cg_unbind(f, t.b[i]->u.loop.var, sav[i + 1]);
    cg_unbind(f, av, sav[0]);
    /* Offsets and strides of t count units; pairs bypass the loads and stores the
     * back end remembers, so the region's are given up first, as for memcpy. */
    int w = t.w, u = t.unit;
    if (u == 2) {
        cg_touch_unknown(f, t.rows_read ? RB : CB, false);
        cg_touch_unknown(f, t.rows_read ? CB : RB, true);
    }
    bool vec;
    LLVMValueRef n0 = t.ext[0] >= 0 ? cg_ci64(g, t.ext[0]) : cg_emit_i64(f, t.b[0]->u.loop.hi, &vec);
    LLVMValueRef nj = LLVMBuildNSWMul(g->B, n0, cg_ci64(g, t.inner), "");
    LLVMValueRef full = LLVMBuildNSWMul(g->B, LLVMBuildSDiv(g->B, nj, cg_ci64(g, w), ""), cg_ci64(g, w), "");

    LoopSt s;
    LLVMValueRef j = cg_loop_open(f, cg_ci64(g, 0), full, "tblk", &s);
    s.step = w;
    LLVMValueRef rj = u == 1 ? j : LLVMBuildNSWMul(g->B, j, cg_ci64(g, u), ""); /* j in elements */
    LLVMValueRef cj = LLVMBuildNSWMul(g->B, j, cg_ci64(g, u * t.sc), "");     /* j's column offset */
    LLVMValueRef r[CPU_TBLOCKS_MAX_W];
    if (t.rows_read) {
        Addr rows[CPU_TBLOCKS_MAX_W];
        for (int i = 0; i < w; i++)
            rows[i] = addr_plus(f, r0, rj, u * i * t.sr);
        if (w == 8 && u == 1) {
            transpose8_loads(f, RB, rows, r);
        } else {
            for (int i = 0; i < w; i++)
                r[i] = tb_load(f, RB, rows[i], w, u);
            transpose(g, r, w);
        }
        for (int q = 0; q < w; q++)
            tb_store(f, CB, addr_plus(f, c0, cj, u * q * t.sc), w, u, r[q]);
    } else {
        for (int q = 0; q < w; q++)
            r[q] = tb_load(f, CB, addr_plus(f, c0, cj, u * q * t.sc), w, u);
        transpose(g, r, w);
        for (int i = 0; i < w; i++)
            tb_store(f, RB, addr_plus(f, r0, rj, u * i * t.sr), w, u, r[i]);
    }
    cg_loop_close(f, &s);

    /* the last nj % w units of j, one per a */
    LoopSt s2;
    j = cg_loop_open(f, full, nj, "tblk_rest", &s2);
    rj = u == 1 ? j : LLVMBuildNSWMul(g->B, j, cg_ci64(g, u), "");
    cj = LLVMBuildNSWMul(g->B, j, cg_ci64(g, u * t.sc), "");
    for (int i = 0; i < w; i++) {
        Addr ra = addr_plus(f, r0, rj, u * i * t.sr), ca = addr_plus(f, c0, cj, u * i);
        if (t.rows_read)
            tb_store(f, CB, ca, 0, u, tb_load(f, RB, ra, 0, u));
        else
            tb_store(f, RB, ra, 0, u, tb_load(f, CB, ca, 0, u));
    }
    cg_loop_close(f, &s2);
}

/* A loop marked `memcpy` (passes/cpu_partition.c: it copies one contiguous range
 * into another, its reads inside their buffer) is one memcpy; LLVM expands a short
 * one inline. */
void cg_emit_copy(Fn *f, const Node *L, int64_t lo, int64_t hi)
{
    Cg *g = f->g;
    const Node *n = L->u.loop.body.v[0];
    const Expr *e = n->u.stmt.value;
    const Buffer *d = n->u.stmt.buf, *src = e->u.load.buf;
    const Var *v = L->u.loop.var;
    Binding sv = cg_bind(f, v, cg_S(cg_ci64(g, lo)));
    Addr ad, as;
    if (!cg_affine_addr(f, d, n->u.stmt.idx, false, &ad) || !cg_affine_addr(f, src, e->u.load.idx, false, &as))
        die("memcpy loop %s: address not affine", v->name);
    cg_unbind(f, v, sv);
    cg_touch_unknown(f, src, false);
    cg_touch_unknown(f, d, true);
    unsigned al = cg_elem_align(g, d->dtype);
    /* No alias tags: the copy accesses two buffers, and a tag names one scope. */
    LLVMBuildMemCpy(g->B, cg_ptr_at(f, d, ad, true), al, cg_ptr_at(f, src, as, true), al,
                    cg_ci64(g, (hi - lo) * dtype_bytes(d->dtype)));
}

/* A nest marked `memset` (passes/cpu_fill.c: serial loops of constant bounds that
 * store zero over one contiguous range) is one memset from its first element. */
void cg_emit_fill(Fn *f, const Node *L)
{
    Cg *g = f->g;
    const Node *n = L;
    const Node *loops[8];
    int nl = 0;
    int64_t total = 1, ext;
    while (n->kind == N_LOOP && nl < 8) {
        loops[nl++] = n;
        if (!cg_const_extent(g, n->u.loop.lo, n->u.loop.hi, &ext))
            die("memset loop %s: no constant extent", n->u.loop.var->name);
        total *= ext;
        n = n->u.loop.body.v[0];
    }
    const Buffer *b = n->u.stmt.buf;
    /* The loops' variables at their lower bounds give the first element. */
    Binding sv[8];
    for (int i = 0; i < nl; i++)
    {
        ArAff lo;
        if (!cg_affine(g, loops[i]->u.loop.lo, &lo) || lo.n)
            die("memset loop %s: no constant bound", loops[i]->u.loop.var->name);
        sv[i] = cg_bind(f, loops[i]->u.loop.var, cg_S(cg_ci64(g, lo.c)));
    }
    Addr a;
    bool ok = cg_affine_addr(f, b, n->u.stmt.idx, false, &a);
    for (int i = nl - 1; i >= 0; i--)
        cg_unbind(f, loops[i]->u.loop.var, sv[i]);
    if (!ok)
        die("memset loop %s: address not affine", L->u.loop.var->name);
    cg_touch_unknown(f, b, true);
    LLVMValueRef p = cg_ptr_at(f, b, a, true);
    cg_tag(g, b, LLVMBuildMemSet(g->B, p, LLVMConstInt(g->ti8, 0, 0), cg_ci64(g, total * dtype_bytes(b->dtype)),
                              cg_elem_align(g, b->dtype)));
}
