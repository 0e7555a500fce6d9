/* Memory for the LLVM translation: element offsets as a hoisted row plus a
 * constant, alias scopes, masked and guarded loads, and the per-block cache of
 * loaded values and pending stores (Region).  codegen/llvm/emit.c has the
 * overview. */
#include "emit_int.h"

/* ---- memory ---- */

/* Row-major element offset of idx[] in buffer b (scalar or vector i64). */
LLVMValueRef cg_linearize(Fn *f, const Buffer *b, LLVMValueRef *idx)
{
    Cg *g = f->g;
    LLVMValueRef off = NULL;
    for (int i = 0; i < b->rank; i++) {
        LLVMValueRef x = idx[i];
        if (off) {
            LLVMTypeRef ty = LLVMTypeOf(off);
            if (cg_is_vty(LLVMTypeOf(x)) && !cg_is_vty(ty))
                off = cg_splat(f, off);
            else if (!cg_is_vty(LLVMTypeOf(x)) && cg_is_vty(ty))
                x = cg_splat(f, x);
            off = LLVMBuildNSWAdd(g->B, LLVMBuildNSWMul(g->B, off, cg_kint(LLVMTypeOf(off), g->dims[b->id][i]), ""), x, "");
        } else {
            off = x;
        }
    }
    return off ? off : cg_ci64(g, 0);
}

LLVMValueRef cg_gep(Fn *f, const Buffer *b, LLVMValueRef off, bool inbounds)
{
    Cg *g = f->g;
    LLVMValueRef base = f->bufp[b->id];
    if (!base)
        die("buffer %s has no pointer in this function", b->name);
    if (inbounds)
        return LLVMBuildInBoundsGEP2(g->B, cg_sty(g, b->dtype), base, &off, 1, "");
    return LLVMBuildGEP2(g->B, cg_sty(g, b->dtype), base, &off, 1, "");
}

unsigned cg_elem_align(Cg *g, DType t)
{
    (void)g;
    return (unsigned)dtype_bytes(t);
}

/* Every access to buffer b carries b's alias scope and, as noalias, the scopes of all
 * other buffers: the buffers never overlap (the calling convention), and this says so
 * to LLVM without a function whose pointer arguments are noalias. */
LLVMValueRef cg_tag(Cg *g, const Buffer *b, LLVMValueRef inst)
{
    LLVMSetMetadata(inst, g->md_scope, g->scope[b->id]);
    if (g->others[b->id])
        LLVMSetMetadata(inst, g->md_noalias, g->others[b->id]);
    return inst;
}

LLVMValueRef cg_masked_load(Fn *f, LLVMTypeRef vt, LLVMValueRef ptr, unsigned align, LLVMValueRef mask)
{
    Cg *g = f->g;
    LLVMTypeRef ov[2] = {vt, g->tptr};
    LLVMValueRef args[4] = {ptr, cg_ci32(g, (int32_t)align), mask, LLVMConstNull(vt)};
    return cg_intr(g, "llvm.masked.load", ov, 2, args, 4);
}

LLVMValueRef cg_masked_store(Fn *f, LLVMValueRef val, LLVMValueRef ptr, unsigned align, LLVMValueRef mask)
{
    Cg *g = f->g;
    LLVMTypeRef ov[2] = {LLVMTypeOf(val), g->tptr};
    LLVMValueRef args[4] = {val, ptr, cg_ci32(g, (int32_t)align), mask};
    return cg_intr(g, "llvm.masked.store", ov, 2, args, 4);
}

/* ---- addresses ----
 *
 * Index arithmetic used to be most of a scheduled kernel's LLVM IR: every access of
 * an unrolled register tile linearised its indices again (a multiply and an add per
 * dimension), so the 126 unrolled FMAs of conv2d came with some 3000 instructions
 * that InstCombine, GVN and IndVarSimplify then spent most of the compile time
 * folding back.  Now the element offset of an access whose indices are affine in the
 * loop variables is split into a constant c (unrolled variables are constants) and
 * r, the sum of the other variables times their strides.  r is built one term at a
 * time, each partial sum at the end of the block where its last variable was bound
 * (so it is computed once per iteration of that variable's loop, as LICM would)
 * and shared by every access with the same terms.
 *
 * Within one basic block (a Region) addresses, loaded values and splats are reused,
 * and a store is kept back until the block ends or an access that may overlap it
 * comes: an accumulator updated by nine unrolled taps is loaded once and stored
 * once.  Buffers never overlap (the noalias contract), so only accesses to the same
 * buffer interact.  cg_region_end() is called before every terminator and every call
 * that may touch buffers; cg_region() dies if a cache outlives its block. */



Region *cg_region(Fn *f)
{
    Region *r = &f->rg;
    LLVMBasicBlockRef bb = LLVMGetInsertBlock(f->g->B);
    if (r->bb != bb) {
        if (r->nloads || r->nstores || r->nptrs || r->nsplats)
            die("codegen: block caches outlived their block (missing region_end)");
        r->bb = bb;
    }
    return r;
}

static void store_raw(Fn *f, const Buffer *b, LLVMValueRef p, LLVMValueRef raw)
{
    LLVMValueRef st = cg_tag(f->g, b, LLVMBuildStore(f->g->B, raw, p));
    LLVMSetAlignment(st, cg_elem_align(f->g, b->dtype));
}

/* Emits the pending stores of b (every buffer when b is NULL) that may overlap
 * elements [c, c + max(w, 1)) at runtime offset r (all of them when all), in order. */
static void flush_stores(Fn *f, const Buffer *b, bool all, LLVMValueRef r, int64_t c, int w)
{
    Region *rg = cg_region(f);
    int m = 0;
    for (int i = 0; i < rg->nstores; i++) {
        Slot *s = &rg->stores[i];
        bool hit = (!b || s->b == b) &&
                   (all || s->r != r || (s->c < c + (w ? w : 1) && c < s->c + (s->w ? s->w : 1)));
        if (hit)
            store_raw(f, s->b, s->p, s->v);
        else
            rg->stores[m++] = *s;
    }
    rg->nstores = m;
}

/* Ends the block's caches: pending stores are emitted here. */
void cg_region_end(Fn *f)
{
    Region *r = cg_region(f);
    flush_stores(f, NULL, true, NULL, 0, 0);
    r->nloads = r->nptrs = r->nsplats = 0;
}

/* Before an access to b the caches cannot follow (a gather, a masked or guarded
 * load, a non-affine index): pending stores of b are emitted and, for a write,
 * what is known of b is forgotten. */
void cg_touch_unknown(Fn *f, const Buffer *b, bool write)
{
    Region *rg = cg_region(f);
    flush_stores(f, b, true, NULL, 0, 0);
    if (!write)
        return;
    int m = 0;
    for (int i = 0; i < rg->nloads; i++)
        if (rg->loads[i].b != b)
            rg->loads[m++] = rg->loads[i];
    rg->nloads = m;
}

/* r + c for the current insertion point's loop variables (bindings in f->vars). */
static LLVMValueRef prefix_sum(Fn *f, const Term *t, int n)
{
    Cg *g = f->g;
    for (int i = 0; i < f->nsums; i++) {
        const Sum *s = &f->sums[i];
        if (s->n != n)
            continue;
        int j;
        for (j = 0; j < n && s->t[j].v == t[j].v && s->t[j].k == t[j].k && s->t[j].bb == t[j].bb; j++)
            ;
        if (j == n)
            return s->sum;
    }
    LLVMValueRef prev = n > 1 ? prefix_sum(f, t, n - 1) : NULL;
    LLVMBasicBlockRef cur = LLVMGetInsertBlock(g->B), bb = t[n - 1].bb;
    if (bb != cur) {
        LLVMValueRef term = LLVMGetBasicBlockTerminator(bb);
        if (!term)
            die("codegen: loop variable bound in an open block that is not the current one");
        LLVMPositionBuilderBefore(g->B, term);
    }
    LLVMValueRef x = t[n - 1].k == 1 ? t[n - 1].v : LLVMBuildNSWMul(g->B, t[n - 1].v, cg_ci64(g, t[n - 1].k), "");
    if (prev)
        x = LLVMBuildNSWAdd(g->B, prev, x, "");
    if (bb != cur)
        LLVMPositionBuilderAtEnd(g->B, cur);
    GROW(f->sums, f->nsums, f->capsums);
    Sum *s = &f->sums[f->nsums++];
    s->n = n;
    memcpy(s->t, t, sizeof *t * (size_t)n);
    s->sum = x;
    return x;
}

/* The element offset of b[idx] as r + c, with the vector variable at its first lane
 * when lane0; false when an index is not affine, or depends on the vector variable
 * and !lane0 (then the caller uses linearize). */
bool cg_affine_addr(Fn *f, const Buffer *b, Expr *const *idx, bool lane0, Addr *out)
{
    Cg *g = f->g;
    ArAff tot = {0}, a;
    int64_t stride = 1;
    for (int i = b->rank - 1; i >= 0; i--) {
        if (!cg_affine(g, idx[i], &a) || !cg_aff_add(&tot, &a, stride) || !ck_mul(stride, g->dims[b->id][i], &stride))
            return false;
    }
    Term t[AFF_TERMS];
    int nt = 0;
    int64_t c = tot.c;
    for (int i = 0; i < tot.n; i++) {
        if (tot.k[i] == 0)
            continue;
        int id = tot.var[i];
        Val x = f->vars[id];
        if (f->vw && f->vvar->id == id) {
            if (!lane0)
                return false;
            x = cg_S(f->vlo);
        }
        if (!x.v || x.vec)
            return false;
        if (LLVMIsAConstantInt(x.v)) {
            c += tot.k[i] * LLVMConstIntGetSExtValue(x.v);
            continue;
        }
        Term n = {x.v, tot.k[i], f->vbb[id], f->vseq[id]};
        int j = nt++;
        for (; j > 0 && t[j - 1].seq > n.seq; j--)
            t[j] = t[j - 1];
        t[j] = n;
    }
    out->r = nt ? prefix_sum(f, t, nt) : NULL;
    out->c = c;
    return true;
}

/* The address of row r of b, the base of r + c for every c: one per block.  Not
 * inbounds, as r alone may lie outside b (A[i - 2, j] at the last i). */
static LLVMValueRef row_at(Fn *f, const Buffer *b, LLVMValueRef r)
{
    Region *rg = cg_region(f);
    for (int i = 0; i < rg->nptrs; i++)
        if (rg->ptrs[i].b == b && rg->ptrs[i].r == r && rg->ptrs[i].w == -1)
            return rg->ptrs[i].p;
    LLVMValueRef p = cg_gep(f, b, r, false);
    GROW(rg->ptrs, rg->nptrs, rg->capptrs);
    rg->ptrs[rg->nptrs++] = (Slot){.b = b, .r = r, .w = -1, .p = p};
    return p;
}

/* The address of element r + c of b (inbounds: the access is known in range).
 * In kernels with register tiles, r + c is row r's address plus the constant c:
 * the accesses of an unrolled tile then share one base register, as the code
 * generator would have them.  As `b + (r + c)` instead, InstCombine splits each
 * address into `(b + r) + c` and LICM re-associates that into `(b + c) + r`,
 * hoisting b + c: a loop-invariant base per element of the tile (126 in conv2d's
 * inner loop), which Loop Strength Reduction then recombined; the shared row takes
 * 7% off conv2d's compilation (instructions counted by callgrind) and 4% off its
 * run time.  The short pipeline has no pass that would undo it. */
LLVMValueRef cg_ptr_at(Fn *f, const Buffer *b, Addr a, bool inbounds)
{
    Cg *g = f->g;
    Region *rg = cg_region(f);
    if (inbounds)
        for (int i = 0; i < rg->nptrs; i++)
            if (rg->ptrs[i].b == b && rg->ptrs[i].r == a.r && rg->ptrs[i].c == a.c && rg->ptrs[i].w == 0)
                return rg->ptrs[i].p;
    LLVMValueRef p;
    if (g->tiled && a.r && a.c) {
        LLVMValueRef c = cg_ci64(g, a.c);
        p = LLVMBuildGEP2(g->B, cg_sty(g, b->dtype), row_at(f, b, a.r), &c, 1, "");
    } else {
        LLVMValueRef off = !a.r ? cg_ci64(g, a.c) : a.c ? LLVMBuildNSWAdd(g->B, a.r, cg_ci64(g, a.c), "") : a.r;
        p = cg_gep(f, b, off, inbounds);
    }
    if (inbounds) {
        GROW(rg->ptrs, rg->nptrs, rg->capptrs);
        rg->ptrs[rg->nptrs++] = (Slot){.b = b, .r = a.r, .c = a.c, .p = p};
    }
    return p;
}

/* The value of b at a (w lanes from there, or a scalar when w == 0), in compute type. */
LLVMValueRef cg_load_at(Fn *f, const Buffer *b, Addr a, int w)
{
    Cg *g = f->g;
    Region *rg = cg_region(f);
    for (int i = 0; i < rg->nloads; i++) {
        const Slot *s = &rg->loads[i];
        if (s->b == b && s->r == a.r && s->c == a.c && s->w == w)
            return s->v;
    }
    flush_stores(f, b, false, a.r, a.c, w);
    LLVMValueRef p = cg_ptr_at(f, b, a, true);
    LLVMTypeRef ty = w ? LLVMVectorType(cg_sty(g, b->dtype), (unsigned)w) : cg_sty(g, b->dtype);
    LLVMValueRef raw = cg_tag(g, b, LLVMBuildLoad2(g->B, ty, p, ""));
    LLVMSetAlignment(raw, cg_elem_align(g, b->dtype));
    LLVMValueRef v = cg_from_storage(g, raw, b->dtype);
    GROW(rg->loads, rg->nloads, rg->caploads);
    rg->loads[rg->nloads++] = (Slot){.b = b, .r = a.r, .c = a.c, .w = w, .v = v};
    return v;
}

/* Stores v (compute type; w lanes or a scalar) to b at a: kept back until the block
 * ends or an access that may overlap it, and dropped if the same element is stored
 * again before anything reads it. */
void cg_store_at(Fn *f, const Buffer *b, Addr a, int w, LLVMValueRef v)
{
    Cg *g = f->g;
    Region *rg = cg_region(f);
    int m = 0;
    for (int i = 0; i < rg->nstores; i++) {
        Slot *s = &rg->stores[i];
        if (s->b == b && s->r == a.r && s->c == a.c && s->w == w)
            continue; /* overwritten unread */
        rg->stores[m++] = *s;
    }
    rg->nstores = m;
    flush_stores(f, b, false, a.r, a.c, w);
    m = 0;
    for (int i = 0; i < rg->nloads; i++) {
        const Slot *s = &rg->loads[i];
        bool overlap = s->b == b && (s->r != a.r || (s->c < a.c + (w ? w : 1) && a.c < s->c + (s->w ? s->w : 1)));
        if (!overlap)
            rg->loads[m++] = *s;
    }
    rg->nloads = m;
    if (cg_sty(g, b->dtype) == cg_cty(g, b->dtype)) {
        GROW(rg->loads, rg->nloads, rg->caploads);
        rg->loads[rg->nloads++] = (Slot){.b = b, .r = a.r, .c = a.c, .w = w, .v = v};
    }
    LLVMValueRef p = cg_ptr_at(f, b, a, true);
    LLVMValueRef raw = cg_to_storage(g, v, b->dtype);
    GROW(rg->stores, rg->nstores, rg->capstores);
    rg->stores[rg->nstores++] = (Slot){.b = b, .r = a.r, .c = a.c, .w = w, .v = raw, .p = p};
}

Val cg_emit_expr(Fn *f, const Expr *e);

/* The value of e as a scalar i64 with the vector variable pinned to its first lane
 * (the address of lane 0 of a contiguous access). */
LLVMValueRef cg_lane0_i64(Fn *f, const Expr *e)
{
    Val saved = f->vars[f->vvar->id];
    int vw = f->vw;
    f->vars[f->vvar->id] = cg_S(f->vlo);
    f->vw = 0; /* nothing in here may be a vector */
    Val v = cg_emit_expr(f, e);
    f->vw = vw;
    f->vars[f->vvar->id] = saved;
    return cg_conv(f->g, v.v, e->dtype, DT_I64);
}

LLVMValueRef cg_emit_i64(Fn *f, const Expr *e, bool *vec)
{
    Val v = cg_emit_expr(f, e);
    *vec = v.vec;
    return cg_conv(f->g, v.v, e->dtype, DT_I64);
}

/* The value a guarded read yields outside its buffer. */
static double pad_value(const Buffer *b)
{
    return b->has_pad ? b->pad : 0.0;
}

/* A scalar load, or a guarded one: the index is clamped into the buffer and the pad
 * value selected when it was out of range, so no branch is needed and only memory
 * inside the buffer is ever read. */
static LLVMValueRef load_scalar(Fn *f, const Buffer *b, LLVMValueRef *idx, bool guarded)
{
    Cg *g = f->g;
    LLVMBuilderRef B = g->B;
    LLVMValueRef ok = NULL;
    if (guarded) {
        if (g->elems[b->id] == 0)
            return cg_kdtype(g, b->dtype, pad_value(b));
        for (int i = 0; i < b->rank; i++) {
            LLVMValueRef c = cg_intr2(g, "llvm.smax", idx[i], cg_ci64(g, 0));
            c = cg_intr2(g, "llvm.smin", c, cg_ci64(g, g->dims[b->id][i] - 1));
            LLVMValueRef in = LLVMBuildICmp(B, LLVMIntEQ, c, idx[i], "");
            ok = ok ? LLVMBuildAnd(B, ok, in, "") : in;
            idx[i] = c;
        }
    }
    LLVMValueRef p = cg_gep(f, b, cg_linearize(f, b, idx), true);
    LLVMValueRef raw = cg_tag(g, b, LLVMBuildLoad2(B, cg_sty(g, b->dtype), p, ""));
    LLVMSetAlignment(raw, cg_elem_align(g, b->dtype));
    LLVMValueRef v = cg_from_storage(g, raw, b->dtype);
    if (ok)
        v = LLVMBuildSelect(B, ok, v, cg_kdtype(g, b->dtype, pad_value(b)), "");
    return v;
}

/* The range [*lo, *hi] of affine e over the known ranges of the variables bound
 * now; false when a variable's range is unknown. */
static bool aff_range(const Fn *f, const ArAff *a, int64_t *lo, int64_t *hi)
{
    *lo = *hi = a->c;
    for (int i = 0; i < a->n; i++) {
        int64_t k = a->k[i];
        if (!k)
            continue;
        int v = a->var[i];
        if (f->vw && f->vvar->id == v)
            return false;
        if (f->vmin[v] > f->vmax[v])
            return false;
        int64_t a, b;
        if (!ck_mul(k, k > 0 ? f->vmin[v] : f->vmax[v], &a) || !ck_add(*lo, a, lo) ||
            !ck_mul(k, k > 0 ? f->vmax[v] : f->vmin[v], &b) || !ck_add(*hi, b, hi))
            return false; /* unknown: tested at run time */
    }
    return true;
}

/* Whether a contiguous access to b under a lane mask may touch all W lanes: a
 * whole-vector load (the disabled lanes' values are never used: stores select
 * the old value there, reductions the identity) and, for a store, a whole-vector
 * store of select(mask, new, old).  Then a register tile updated in a masked edge
 * tile (the last column panel of a GEMM whose N no NR divides) stays plain loads
 * and stores at constant offsets, which LLVM keeps in registers across the
 * reduction loop, and the select folds into a masked FMA; with llvm.masked.load
 * and .store it was reloaded and stored for every k (3-4x the cost of a full
 * tile).  Legal when every lane's element lies inside b's allocation (the last
 * index over the vector loop's whole range inside its dimension; the other
 * indices are uniform and some lane runs, so they are in range), b is a float
 * buffer (no integer division by a disabled lane's value), and for a store b is
 * private to this function's invocation (allocated here: no other thread can own
 * a disabled lane's element). */
bool cg_whole_vector(const Fn *f, const Buffer *b, Expr *const *idx, bool store)
{
    const Cg *g = f->g;
    if (!f->mask || !f->vw || !g->priv[b->id] || !dtype_is_float(b->dtype) || b->rank < 1 || !f->vlo ||
        !LLVMIsAConstantInt(f->vlo))
        return false;
    if (store && !cg_owns(g, b->id, f->owner))
        return false;
    ArAff a;
    if (!cg_affine(g, idx[b->rank - 1], &a))
        return false;
    int64_t kv = 0;
    ArAff rest = {.c = a.c};
    for (int i = 0; i < a.n; i++) {
        if (a.var[i] == f->vvar->id) {
            kv += a.k[i];
            continue;
        }
        rest.var[rest.n] = a.var[i];
        rest.k[rest.n++] = a.k[i];
    }
    int64_t lo, hi, v0 = LLVMConstIntGetSExtValue(f->vlo), vl, vh;
    if (kv != 1 || !aff_range(f, &rest, &lo, &hi) || !ck_add(lo, v0, &vl) || !ck_add(hi, v0 + f->vw - 1, &vh))
        return false;
    return vl >= 0 && vh < g->dims[b->id][b->rank - 1];
}

/* For a guarded access (a padded read, a padded split's load or store): 1 when
 * every index is known inside its dimension, -1 when one is known outside (a read
 * is the pad value, a store is dropped), 0 when it has to be tested. */
int cg_range_known(const Fn *f, const Buffer *b, Expr *const *idx)
{
    bool all_in = true;
    for (int i = 0; i < b->rank; i++) {
        ArAff a;
        int64_t lo, hi;
        if (!cg_affine(f->g, idx[i], &a) || !aff_range(f, &a, &lo, &hi)) {
            all_in = false;
            continue;
        }
        if (hi < 0 || lo >= f->g->dims[b->id][i])
            return -1;
        all_in &= lo >= 0 && hi < f->g->dims[b->id][i];
    }
    return all_in ? 1 : 0;
}

/* Whether every index of an access to b lies inside its dimension: an i1, or a
 * vector of them when an index varies across the lanes. */
Val cg_in_range(Fn *f, const Buffer *b, Expr *const *idx)
{
    Cg *g = f->g;
    LLVMBuilderRef B = g->B;
    LLVMValueRef x[16], ok = NULL;
    bool vec[16], anyvec = false;
    for (int i = 0; i < b->rank; i++) {
        x[i] = cg_emit_i64(f, idx[i], &vec[i]);
        anyvec |= vec[i];
    }
    for (int i = 0; i < b->rank; i++) {
        LLVMValueRef v = anyvec && !vec[i] ? cg_splat(f, x[i]) : x[i];
        LLVMTypeRef vt = LLVMTypeOf(v);
        LLVMValueRef in = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntSGE, v, cg_kint(vt, 0), ""),
                                       LLVMBuildICmp(B, LLVMIntSLT, v, cg_kint(vt, g->dims[b->id][i]), ""), "");
        ok = ok ? LLVMBuildAnd(B, ok, in, "") : in;
    }
    if (!ok)
        ok = LLVMConstInt(g->ti1, 1, 0);
    return (Val){ok, anyvec};
}

Val cg_emit_load(Fn *f, const Expr *e)
{
    Cg *g = f->g;
    LLVMBuilderRef B = g->B;
    const Buffer *b = e->u.load.buf;
    bool guarded = e->u.load.guarded;
    if (guarded) {
        int known = cg_range_known(f, b, e->u.load.idx);
        if (known < 0)
            return cg_S(cg_kdtype(g, b->dtype, pad_value(b)));
        guarded = known == 0;
    }
    LLVMValueRef idx[16];
    bool vec[16], anyvec = false;
    if (b->rank > 16)
        die("buffer %s has rank %d", b->name, b->rank);
    AccKind ak = f->vw ? cg_access_kind(g, e->u.load.idx, b->rank, f->vvar) : ACC_UNIFORM;
    Addr a;
    if (!guarded &&
        (ak == ACC_UNIFORM || (ak == ACC_CONTIG && (!f->mask || cg_whole_vector(f, b, e->u.load.idx, false)))) &&
        cg_affine_addr(f, b, e->u.load.idx, ak == ACC_CONTIG, &a))
        return (Val){cg_load_at(f, b, a, ak == ACC_CONTIG ? f->vw : 0), ak == ACC_CONTIG};
    cg_touch_unknown(f, b, false);
    for (int i = 0; i < b->rank; i++) {
        idx[i] = cg_emit_i64(f, e->u.load.idx[i], &vec[i]);
        anyvec |= vec[i];
    }
    if (!anyvec)
        return cg_S(load_scalar(f, b, idx, guarded));

    /* Varying across lanes.  Lanes to read: enabled by guards and, for a padded
     * buffer, in range; the others get pad (or nothing) without touching memory. */
    unsigned W = (unsigned)f->vw;
    LLVMTypeRef vst = LLVMVectorType(cg_sty(g, b->dtype), W);
    LLVMValueRef inr = NULL;
    if (guarded) {
        for (int i = 0; i < b->rank; i++) {
            LLVMValueRef x = vec[i] ? idx[i] : cg_splat(f, idx[i]);
            LLVMTypeRef vt = LLVMTypeOf(x);
            LLVMValueRef in = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntSGE, x, cg_kint(vt, 0), ""),
                                           LLVMBuildICmp(B, LLVMIntSLT, x, cg_kint(vt, g->dims[b->id][i]), ""), "");
            inr = inr ? LLVMBuildAnd(B, inr, in, "") : in;
        }
    }
    LLVMValueRef mask = f->mask;
    if (inr)
        mask = mask ? LLVMBuildAnd(B, mask, inr, "") : inr;
    unsigned align = cg_elem_align(g, b->dtype);
    LLVMValueRef raw;
    if (ak == ACC_CONTIG) {
        LLVMValueRef idx0[16];
        for (int i = 0; i < b->rank; i++)
            idx0[i] = vec[i] ? cg_lane0_i64(f, e->u.load.idx[i]) : idx[i];
        LLVMValueRef off0 = cg_linearize(f, b, idx0);
        LLVMValueRef p = cg_gep(f, b, off0, mask == NULL);
        if (mask) {
            raw = cg_tag(g, b, cg_masked_load(f, vst, p, align, mask));
        } else {
            raw = cg_tag(g, b, LLVMBuildLoad2(B, vst, p, ""));
            LLVMSetAlignment(raw, align);
        }
    } else {
        LLVMValueRef ptrs = cg_gep(f, b, cg_linearize(f, b, idx), mask == NULL);
        if (!cg_is_vty(LLVMTypeOf(ptrs)))
            die("gather without a vector address");
        LLVMTypeRef ov[2] = {vst, LLVMTypeOf(ptrs)};
        LLVMValueRef m = mask ? mask : cg_kint(LLVMVectorType(g->ti1, W), -1);
        LLVMValueRef args[4] = {ptrs, cg_ci32(g, (int32_t)align), m, LLVMConstNull(vst)};
        raw = cg_tag(g, b, cg_intr(g, "llvm.masked.gather", ov, 2, args, 4));
    }
    LLVMValueRef v = cg_from_storage(g, raw, b->dtype);
    if (inr)
        v = LLVMBuildSelect(B, inr, v, cg_splat(f, cg_kdtype(g, b->dtype, pad_value(b))), "");
    return (Val){v, true};
}
