/* Translation of prefetch nodes (schedule `prefetch`) into llvm.prefetch of each
 * cache line of their box, clamped into the buffer. */
#include "emit_int.h"

/* ---- prefetch ----
 *
 * A prefetch node (schedule `prefetch`, passes/xform_prefetch.c) becomes
 * llvm.prefetch (read, locality 3, data cache) of each 64-byte line of its box.
 * The box is first clamped into the buffer, per dimension
 * lo = min(max(lo, 0), dim - ext), so every address formed lies inside it (the
 * last row's `r + 1` fetches the last row again).  Inside a vector loop the box
 * grows by the index's step per lane times the lanes, and is fetched once: one
 * prefetch per line, not per lane.  A contiguous run of the box (along its last
 * dimension) gets one prefetch every 64 bytes, plus one at its last element when
 * what is known of its start's alignment leaves room to straddle one more line;
 * up to 64 prefetches are unrolled, more become loops over the runs and lines. */

/* The largest power of two, at most a line (64), that divides x (64 for 0). */
static int64_t pf_pow2(int64_t x)
{
    int64_t a = 64;
    while (a > 1 && x % a != 0)
        a /= 2;
    return a;
}

/* How far e * mult (bytes) is certainly aligned, up to a line: the power of two
 * dividing it for every value of e (the vector variable pinned to lane 0). */
static int64_t pf_align(Fn *f, const Expr *e, int64_t shift, int64_t mult)
{
    ArAff a;
    if (!cg_affine(f->g, e, &a))
        return 1;
    int64_t c = a.c + shift, al = 64;
    for (int i = 0; i < a.n; i++) {
        if (f->vw && a.var[i] == f->vvar->id && LLVMIsAConstantInt(f->vlo)) {
            c += a.k[i] * LLVMConstIntGetSExtValue(f->vlo);
            continue;
        }
        int64_t t = pf_pow2(a.k[i] * mult);
        al = t < al ? t : al;
    }
    int64_t t = pf_pow2(c * mult);
    return t < al ? t : al;
}

static void pf_line(Fn *f, const Buffer *b, LLVMValueRef off, bool write)
{
    Cg *g = f->g;
    LLVMTypeRef ov[1] = {g->tptr};
    LLVMValueRef args[4] = {cg_gep(f, b, off, true), cg_ci32(g, write), cg_ci32(g, 3), cg_ci32(g, 1)};
    cg_intr(g, "llvm.prefetch", ov, 1, args, 4);
}

void cg_emit_prefetch(Fn *f, const Node *n)
{
    Cg *g = f->g;
    LLVMBuilderRef B = g->B;
    const Buffer *b = n->u.pf.buf;
    int rank = b->rank;
    if (rank < 1 || rank > 8 || !f->bufp[b->id] || g->elems[b->id] <= 0)
        return; /* a hint: nothing to fetch, or no pointer to fetch through here */
    int64_t esz = dtype_bytes(b->dtype), w[8], pitch[8];
    LLVMValueRef lo[8];
    /* Alignment of the box's runs, up to a line: global buffers start on one
     * (CG_BUF_ALIGN), private ones on an element.  Emitted code keeps the line
     * for global buffers though it no longer assumes it for loads and stores
     * (CgTarget.any_align): a prefetch is a hint, and a buffer off a line then
     * only misses the end of a run. */
    int64_t al = g->priv[b->id] ? esz : CG_BUF_ALIGN < 64 ? CG_BUF_ALIGN : 64;
    pitch[rank - 1] = 1;
    for (int d = rank - 2; d >= 0; d--)
        pitch[d] = pitch[d + 1] * g->dims[b->id][d + 1];
    for (int d = 0; d < rank; d++) {
        const Expr *e = n->u.pf.idx[d];
        int64_t dim = g->dims[b->id][d], step = 0, shift = 0;
        w[d] = n->u.pf.ext[d];
        if (f->vw) {
            if (cg_stride(g, e, f->vvar, &step) && step != 0) {
                int64_t span = step * (f->vw - 1);
                shift = span < 0 ? span : 0;
                w[d] += span < 0 ? -span : span;
            }
            lo[d] = cg_lane0_i64(f, e);
            if (shift)
                lo[d] = LLVMBuildNSWAdd(B, lo[d], cg_ci64(g, shift), "");
        } else {
            bool vec;
            lo[d] = cg_emit_i64(f, e, &vec);
        }
        if (w[d] > dim)
            w[d] = dim;
        lo[d] = cg_intr2(g, "llvm.smax", lo[d], cg_ci64(g, 0));
        lo[d] = cg_intr2(g, "llvm.smin", lo[d], cg_ci64(g, dim - w[d]));
        /* the start, both clamp bounds and, for an outer dimension, each run's step */
        int64_t mult = pitch[d] * esz, a = pf_align(f, e, shift, mult), c = pf_pow2((dim - w[d]) * mult);
        al = a < al ? a : al;
        al = c < al ? c : al;
        if (d < rank - 1 && w[d] > 1)
            al = pf_pow2(mult) < al ? pf_pow2(mult) : al;
    }
    int64_t runs = 1, run_bytes = w[rank - 1] * esz;
    for (int d = 0; d + 1 < rank; d++)
        runs *= w[d];
    /* a run starting at worst 64 - al bytes into a line may touch one line more
     * than its length needs: then its last element is fetched as well */
    int64_t lines = (run_bytes + 63) / 64;
    bool tail = (64 - al + run_bytes + 63) / 64 > lines;
    int64_t per_run = lines + tail;
    LLVMValueRef start = cg_linearize(f, b, lo);
    /* Up to 64 prefetches in all are unrolled; past that the runs (over the outer
     * dimensions' digits) and the lines of a long run are loops. */
    bool unrolled = runs * per_run <= 64, loop_lines = !unrolled && lines > 8;
    LoopSt lr, ll;
    for (int64_t t = 0; t < (unrolled ? runs : 1); t++) {
        LLVMValueRef off = start;
        if (!unrolled && runs > 1) {
            LLVMValueRef rest = cg_loop_open(f, cg_ci64(g, 0), cg_ci64(g, runs), "pf.run", &lr), add = NULL;
            for (int d = rank - 2; d >= 0; d--) {
                if (w[d] == 1)
                    continue;
                LLVMValueRef x = LLVMBuildNSWMul(B, LLVMBuildSRem(B, rest, cg_ci64(g, w[d]), ""), cg_ci64(g, pitch[d]), "");
                rest = LLVMBuildSDiv(B, rest, cg_ci64(g, w[d]), "");
                add = add ? LLVMBuildNSWAdd(B, add, x, "") : x;
            }
            if (add)
                off = LLVMBuildNSWAdd(B, off, add, "");
        } else if (unrolled) {
            int64_t rest = t, add = 0;
            for (int d = rank - 2; d >= 0; d--) {
                add += (rest % w[d]) * pitch[d];
                rest /= w[d];
            }
            if (add)
                off = LLVMBuildNSWAdd(B, off, cg_ci64(g, add), "");
        }
        if (loop_lines) {
            LLVMValueRef j = cg_loop_open(f, cg_ci64(g, 0), cg_ci64(g, lines), "pf.line", &ll);
            pf_line(f, b, LLVMBuildNSWAdd(B, off, LLVMBuildNSWMul(B, j, cg_ci64(g, 64 / esz), ""), ""), n->u.pf.write);
            cg_loop_close(f, &ll);
        } else {
            for (int64_t j = 0; j < lines; j++)
                pf_line(f, b, j ? LLVMBuildNSWAdd(B, off, cg_ci64(g, j * 64 / esz), "") : off, n->u.pf.write);
        }
        if (tail)
            pf_line(f, b, LLVMBuildNSWAdd(B, off, cg_ci64(g, w[rank - 1] - 1), ""), n->u.pf.write);
        if (!unrolled && runs > 1)
            cg_loop_close(f, &lr);
    }
}
