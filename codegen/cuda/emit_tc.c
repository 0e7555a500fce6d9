/* The CUDA emitter's translation of the tensor-core and pipeline lowering that
 * passes/gpu_mma.c and passes/gpu_pipeline.c wrote into the IR (docs/cuda.md
 * "Tensor cores", "wgmma", "Software pipelines"):
 *   - accumulators in fragment layout (Buffer.layout): element (r, c) of an mma
 *     accumulator lives in lane (r % 8) * 4 + (c % 8) / 2, register ((r / 8) % 2) *
 *     2 + c % 2 of the 16 x 8 tile (r / 16, c / 8) (the m16n8k16 C/D layout); a
 *     wgmma accumulator the same, four warps deep, per 64-row tile;
 *   - the row and column loops marked lane-rows / lane-cols, spread over the lanes
 *     so that each lane runs the iterations of the elements it holds;
 *   - groups (TcGroup): the distinct A and B fragments loaded once each (ldmatrix),
 *     then the products (mma.sync), or the products issued through matrix
 *     descriptors between wgmma.fence and one commit (wgmma);
 *   - swizzled wgmma operands (the 128-byte swizzle);
 *   - software pipelines: the stage ring's prologue, waits, barrier and the copies
 *     of a later iteration, cp.async where the pass marked them.
 * Nothing here decides: every choice was made, and checked, by the passes. */
#include <inttypes.h>
#include <string.h>

#include "../../ir/gpu.h"
#include "../../ir/walk.h"
#include "emit_int.h"

const char em_tc_prelude[] =
    "/* Tensor cores (sm_80+): ldmatrix reads 8 x 8 b16 matrices whose rows the lanes name (16 bytes each),\n"
    " * mma.sync multiplies one warp's fragments.  The loads clobber memory so no shared store moves past them. */\n"
    "static __device__ __forceinline__ unsigned pf_saddr(const void *p) { unsigned a; asm(\"{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }\" : \"=r\"(a) : \"l\"(p)); return a; }\n"
    "static __device__ __forceinline__ void pf_ldsm_x4(unsigned *r, unsigned a) { asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\" : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(a) : \"memory\"); }\n"
    "static __device__ __forceinline__ void pf_ldsm_x4_t(unsigned *r, unsigned a) { asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\" : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(a) : \"memory\"); }\n"
    "static __device__ __forceinline__ void pf_ldsm_x2(unsigned *r, unsigned a) { asm volatile(\"ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\" : \"=r\"(r[0]), \"=r\"(r[1]) : \"r\"(a) : \"memory\"); }\n"
    "static __device__ __forceinline__ void pf_ldsm_x2_t(unsigned *r, unsigned a) { asm volatile(\"ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\" : \"=r\"(r[0]), \"=r\"(r[1]) : \"r\"(a) : \"memory\"); }\n"
    "/* Asynchronous copies (sm_80+) for software pipelines: global -> shared without registers, in commit\n"
    " * groups; wait_group N returns when at most N of this thread's groups are pending. */\n"
    "static __device__ __forceinline__ void pf_cp_async16(void *s, const void *g) { asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16;\" :: \"r\"(pf_saddr(s)), \"l\"(g) : \"memory\"); }\n"
    "static __device__ __forceinline__ void pf_cp_async8(void *s, const void *g) { asm volatile(\"cp.async.ca.shared.global [%0], [%1], 8;\" :: \"r\"(pf_saddr(s)), \"l\"(g) : \"memory\"); }\n"
    "static __device__ __forceinline__ void pf_cp_async16z(void *s, const void *g, bool ok) { asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\" :: \"r\"(pf_saddr(s)), \"l\"(g), \"r\"(ok ? 16 : 0) : \"memory\"); }\n"
    "static __device__ __forceinline__ void pf_cp_async8z(void *s, const void *g, bool ok) { asm volatile(\"cp.async.ca.shared.global [%0], [%1], 8, %2;\" :: \"r\"(pf_saddr(s)), \"l\"(g), \"r\"(ok ? 8 : 0) : \"memory\"); }\n"
    "/* ... the same, to a shared address given as the 32-bit offset into the shared window (pf_sb + bytes): no\n"
    " * conversion of a generic pointer per copy, and the stage's address one add from the last */\n"
    "static __device__ __forceinline__ void pf_cp_async16a(unsigned s, const void *g) { asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16;\" :: \"r\"(s), \"l\"(g) : \"memory\"); }\n"
    "static __device__ __forceinline__ void pf_cp_async8a(unsigned s, const void *g) { asm volatile(\"cp.async.ca.shared.global [%0], [%1], 8;\" :: \"r\"(s), \"l\"(g) : \"memory\"); }\n"
    "static __device__ __forceinline__ void pf_cp_async16za(unsigned s, const void *g, bool ok) { asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\" :: \"r\"(s), \"l\"(g), \"r\"(ok ? 16 : 0) : \"memory\"); }\n"
    "static __device__ __forceinline__ void pf_cp_async8za(unsigned s, const void *g, bool ok) { asm volatile(\"cp.async.ca.shared.global [%0], [%1], 8, %2;\" :: \"r\"(s), \"l\"(g), \"r\"(ok ? 8 : 0) : \"memory\"); }\n"
    "static __device__ __forceinline__ void pf_cp_commit() { asm volatile(\"cp.async.commit_group;\" ::: \"memory\"); }\n"
    "template <int N> static __device__ __forceinline__ void pf_cp_wait() { asm volatile(\"cp.async.wait_group %0;\" :: \"n\"(N) : \"memory\"); }\n"
    "static __device__ __forceinline__ unsigned pf_pk16(unsigned short lo, unsigned short hi) { return (unsigned)lo | ((unsigned)hi << 16); }\n"
    "static __device__ __forceinline__ void pf_mma_f16(float *c, const unsigned *a, const unsigned *b) { asm(\"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\" : \"+f\"(c[0]), \"+f\"(c[1]), \"+f\"(c[2]), \"+f\"(c[3]) : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1])); }\n"
    "static __device__ __forceinline__ void pf_mma_bf16(float *c, const unsigned *a, const unsigned *b) { asm(\"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\" : \"+f\"(c[0]), \"+f\"(c[1]), \"+f\"(c[2]), \"+f\"(c[3]) : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1])); }\n";

bool em_is_frag(const Buffer *b) { return b->layout == LAYOUT_MMA_ACC || b->layout == LAYOUT_WGMMA_ACC; }

int64_t em_frag_regs(const Em *e, const Buffer *b)
{
    int64_t R = 0, C = 0;
    em_cval(e, b->shape[0], &R);
    em_cval(e, b->shape[1], &C);
    return R / 64 * C / 2;
}

/* ---------------- accumulator elements ---------------- */

/* Inside a lane pair the index is written with the loops' lane-free parts
 * (fragmode), constants once unrolled, so the array stays in registers. */
void em_frag_elem(Em *e, const Buffer *b, Expr *const *idx, StrBuf *o)
{
    if (!e->dvar[0] || !e->dvar[1]) {
        /* passes/gpu_mma.c refuses such an access */
        if (e->ok)
            diag_error(e->d, b->span, "internal error: accumulator %s accessed outside the lane loops that "
                       "pass gpu-mma sets", b->name);
        e->ok = false;
        return;
    }
    StrBuf r = {0}, c = {0};
    e->fragmode = true;
    em_sub(e, idx[0], &r);
    em_sub(e, idx[1], &c);
    e->fragmode = false;
    sb_printf(o, "[%s >> %d][%s >> 3][((%s >> 3) & 1) * 2 + (%s & 1)]", r.s, e->wg ? 6 : 4, c.s, r.s, c.s);
    sb_free(&r);
    sb_free(&c);
}

void em_rows_elem(Em *e, const Buffer *b, Expr *const *idx, StrBuf *o)
{
    if (!e->dvar[0]) {
        /* passes/gpu_mma_rows.c refuses such an access */
        if (e->ok)
            diag_error(e->d, b->span, "internal error: per-row vector %s accessed outside the lane loops that "
                       "pass gpu-mma sets", b->name);
        e->ok = false;
        return;
    }
    StrBuf r = {0};
    e->fragmode = true;
    em_sub(e, idx[0], &r);
    e->fragmode = false;
    sb_printf(o, "[%s >> 3]", r.s);
    sb_free(&r);
}

/* The byte offset of element idx of a wgmma operand buffer before swizzling: its
 * last dimension is cut into panels of 64 elements (128 bytes), each panel a
 * column of rows 128 bytes apart, panels one after the other, leading dimensions
 * (a pipeline's stage) outermost: the canonical layout wgmma's descriptors describe. */
static void swz_lin(Em *e, const Buffer *b, Expr *const *idx, StrBuf *o)
{
    int64_t R = 0, C = 0;
    em_cval(e, b->shape[b->rank - 2], &R);
    em_cval(e, b->shape[b->rank - 1], &C);
    StrBuf lead = {0};
    sb_putc(&lead, '0');
    for (int i = 0; i + 2 < b->rank; i++) {
        StrBuf nx = {0};
        int64_t ext = 0;
        em_cval(e, b->shape[i], &ext);
        sb_printf(&nx, "(%s) * %" PRId64 " + ", lead.s, ext);
        em_sub(e, idx[i], &nx);
        sb_free(&lead);
        lead = nx;
    }
    StrBuf r = {0}, c = {0};
    em_sub(e, idx[b->rank - 2], &r);
    em_sub(e, idx[b->rank - 1], &c);
    sb_printf(o, "(((((%s) * %" PRId64 " + (%s >> 6)) * %" PRId64 " + %s) << 6) + (%s & 63)) * %d", lead.s, C / 64,
              c.s, R, r.s, c.s, dtype_bytes(b->dtype));
    sb_free(&lead);
    sb_free(&r);
    sb_free(&c);
}

/* The 32-bit shared-window address of element idx of swizzled buffer b: pf_sb +
 * the buffer's offset (1024-aligned) + the swizzled offset in it. */
void em_swz_addr(Em *e, const Buffer *b, Expr *const *idx, StrBuf *o)
{
    StrBuf lin = {0};
    swz_lin(e, b, idx, &lin);
    sb_printf(o, "pf_sb + %" PRId64 "u + pf_swz(%s)", e->soff[b->id], lin.s);
    sb_free(&lin);
}

/* The 16-byte chunks of each 128-byte row permuted by the row's index modulo 8
 * (bits 4-6 of the offset xor bits 7-9), the swizzle wgmma applies to the same
 * addresses; the buffer starts 1024-aligned. */
void em_swz_elem(Em *e, const Buffer *b, Expr *const *idx, StrBuf *o)
{
    StrBuf lin = {0};
    swz_lin(e, b, idx, &lin);
    sb_printf(o, "(*reinterpret_cast<%s *>(%s + pf_swz(%s)))", em_storage_type(b->dtype, e->idx64), em_bn(e, b), lin.s);
    sb_free(&lin);
}

/* ---------------- lane pairs ---------------- */

static void dist_open(Em *e, const Node *n, int q)
{
    const char *v = em_vn(e, n->u.loop.var);
    int64_t lo, ext;
    em_extent(e, n, &lo, &ext);
    em_line(e, "#pragma unroll");
    if (q == 0 && e->wg) {
        em_line(e, "for (idx_t pf_rf_%s = 0; pf_rf_%s < %" PRId64 "; pf_rf_%s += 64) {   /* %s: accumulator rows, "
                "16 of each 64 per warp, lane / 4 and lane / 4 + 8 (wgmma fragment layout) */", v, v, ext, v, v);
        e->ind++;
        em_line(e, "#pragma unroll");
        em_line(e, "for (idx_t pf_rh_%s = 0; pf_rh_%s < 16; pf_rh_%s += 8) {", v, v, v);
        e->ind++;
        em_line(e, "const idx_t %s = pf_rf_%s + pf_rh_%s + pf_wrow + (pf_lane >> 2);", v, v, v);
        snprintf(e->dname[0], sizeof e->dname[0], "(pf_rf_%s + pf_rh_%s)", v, v);
    } else if (q == 0) {
        em_line(e, "for (idx_t pf_rf_%s = 0; pf_rf_%s < %" PRId64 "; pf_rf_%s += 8) {   /* %s: accumulator rows, "
                "lane / 4 each (fragment layout) */", v, v, ext, v, v);
        e->ind++;
        em_line(e, "const idx_t %s = pf_rf_%s + (pf_lane >> 2);", v, v);
        snprintf(e->dname[0], sizeof e->dname[0], "pf_rf_%s", v);
    } else {
        em_line(e, "for (idx_t pf_cf_%s = 0; pf_cf_%s < %" PRId64 "; pf_cf_%s += 8) {   /* %s: accumulator "
                "columns, 2 * (lane %% 4) + 0..1 each (fragment layout) */", v, v, ext, v, v);
        e->ind++;
        em_line(e, "#pragma unroll");
        em_line(e, "for (idx_t pf_ch_%s = 0; pf_ch_%s < 2; ++pf_ch_%s) {", v, v, v);
        e->ind++;
        em_line(e, "const idx_t %s = pf_cf_%s + ((pf_lane & 3) << 1) + pf_ch_%s;", v, v, v);
        snprintf(e->dname[1], sizeof e->dname[1], "(pf_cf_%s + pf_ch_%s)", v, v);
    }
    e->dvar[q] = n->u.loop.var;
}

static void dist_close(Em *e, int q)
{
    for (int i = 0; i < (q == 0 && !e->wg ? 1 : 2); i++) {
        e->ind--;
        em_line(e, "}");
    }
    e->dvar[q] = NULL;
}

/* Column loop m marked lane-cols2: its last statement, a store, writes a lane's two
 * adjacent columns (2 * (lane % 4) + 0, 1) as one access, both values computed
 * first (with the fragment updates before it, pass gpu-mma): 8 bytes of f32, or 4
 * bytes of two f16/bf16 (the lower column in the low half). */
static void frag_store2(Em *e, const Node *m)
{
    const NodeList *body = &m->u.loop.body;
    const Node *s = body->v[body->n - 1];
    const NodeList lead = {.v = body->v, .n = body->n - 1};
    const Var *cv = m->u.loop.var;
    const char *v = em_vn(e, cv);
    int64_t lo, ext;
    em_extent(e, m, &lo, &ext);
    em_line(e, "#pragma unroll");
    em_line(e, "for (idx_t pf_cf_%s = 0; pf_cf_%s < %" PRId64 "; pf_cf_%s += 8) {   /* %s: accumulator columns, "
            "2 * (lane %% 4) + 0..1 each, stored as one %d-byte access */", v, v, ext, v, v,
            2 * dtype_bytes(s->u.stmt.buf->dtype));
    e->ind++;
    em_line(e, "float pf_st[2];");
    em_line(e, "#pragma unroll");
    em_line(e, "for (idx_t pf_ch_%s = 0; pf_ch_%s < 2; ++pf_ch_%s) {", v, v, v);
    e->ind++;
    snprintf(e->dname[1], sizeof e->dname[1], "(pf_cf_%s + pf_ch_%s)", v, v);
    e->dvar[1] = cv;
    em_line(e, "const idx_t %s = pf_cf_%s + ((pf_lane & 3) << 1) + pf_ch_%s;", v, v, v);
    em_nodes(e, &lead);
    StrBuf val = {0}, dst = {0};
    em_expr(e, s->u.stmt.value, &val);
    em_line(e, "pf_st[pf_ch_%s] = %s;", v, val.s);
    e->ind--;
    em_line(e, "}");
    em_line(e, "const idx_t %s = pf_cf_%s + ((pf_lane & 3) << 1);", v, v);
    em_elem(e, s->u.stmt.buf, s->u.stmt.idx, &dst);
    if (s->u.stmt.guarded) {
        /* a padded tile's edge: the row length is even and the pair starts at an
         * even column (pass gpu-mma), so both columns are inside or both past it */
        StrBuf in = {0};
        em_in_range(e, s->u.stmt.buf, s->u.stmt.idx, &in);
        em_line(e, "if (%s)", in.s);
        sb_free(&in);
        e->ind++;
    }
    if (s->u.stmt.buf->dtype == DT_F32) {
        em_line(e, "*reinterpret_cast<float2 *>(&%s) = make_float2(pf_st[0], pf_st[1]);", dst.s);
    } else {
        const char *cv16 = s->u.stmt.buf->dtype == DT_F16 ? "pf_f2h" : "pf_f2b";
        em_line(e, "*reinterpret_cast<unsigned *>(&%s) = (unsigned)%s(pf_st[0]) | ((unsigned)%s(pf_st[1]) << 16);",
                dst.s, cv16, cv16);
    }
    if (s->u.stmt.guarded)
        e->ind--;
    sb_free(&val);
    sb_free(&dst);
    e->dvar[1] = NULL;
    e->ind--;
    em_line(e, "}");
}

/* A pair (rows outside) whose column loop holds quad reductions: each folds the
 * lane's columns into a register, then the four lanes of the row combine theirs
 * and the row's element takes the total once. */
void em_lane_pair(Em *e, const Node *n)
{
    const Node *m = n->u.loop.body.v[0];
    int q = n->u.loop.hint == HINT_LANE_ROWS ? 0 : 1;
    dist_open(e, n, q);
    if (m->u.loop.hint == HINT_LANE_COLS2) {
        frag_store2(e, m);
    } else {
        int nl = 0;
        for (int i = 0; i < m->u.loop.body.n && nl < 8; i++) {
            const Node *s = m->u.loop.body.v[i];
            if (s->kind == N_STMT && s->u.stmt.lane_reduce) {
                e->lred[nl] = s;
                em_line(e, "float pf_lq%d = %s;   /* this lane's columns of %s's row */", nl, em_red_ident(s->u.stmt.op),
                        s->u.stmt.buf->name);
                nl++;
            }
        }
        e->nlred = nl;
        dist_open(e, m, 1 - q);
        em_nodes(e, &m->u.loop.body);
        dist_close(e, 1 - q);
        e->nlred = 0;
        for (int i = 0; i < nl; i++) {
            const Node *s = e->lred[i];
            StrBuf lv = {0};
            em_elem(e, s->u.stmt.buf, s->u.stmt.idx, &lv);
            int op = em_red_op(s->u.stmt.op);
            em_line(e, "%s = pf_rop<%d>(%s, pf_quad<%d>(pf_lq%d));", lv.s, op, lv.s, op, i);
            sb_free(&lv);
        }
    }
    dist_close(e, q);
}

void em_quad_rows(Em *e, const Node *n)
{
    dist_open(e, n, 0);
    em_nodes(e, &n->u.loop.body);
    dist_close(e, 0);
}

/* ---------------- groups ---------------- */

/* The triple of group head n, and the names of the group's loops for a comment. */
static const Node *group_triple(Em *e, const Node *n, StrBuf *names)
{
    for (int i = 0, nl = n->u.loop.tc->nloops; i < nl; i++) {
        sb_printf(names, "%s x ", em_vn(e, n->u.loop.var));
        n = n->u.loop.body.v[0];
    }
    return n;
}

/* The element offset of the row each lane hands ldmatrix for operand o (strides
 * st of a fragment-row step and a k step).  A (.x4): matrices 0..3 are rows
 * 0-7/8-15 by k 0-7/8-15 in the order a0a1, a2a3, a4a5, a6a7; B (.x2): k 0-7, 8-15.
 * Without .trans a lane names a fragment row (k contiguous), with .trans a k row. */
static void lane_offset(const TcGroup *g, int o, StrBuf *off)
{
    bool t = g->trans[o];
    int64_t sr = g->stride[o][0], sk = g->stride[o][1];
    const char *m = o == 0 ? "(pf_lane >> 3)" : "((pf_lane >> 3) & 1)";
    if (o == 0)
        sb_printf(off, "(%s8 * (%s & 1)) * %" PRId64 " + (%s8 * (%s >> 1)) * %" PRId64,
                  t ? "" : "(pf_lane & 7) + ", m, sr, t ? "(pf_lane & 7) + " : "", m, sk);
    else
        sb_printf(off, "(%s%s) * %" PRId64 " + (%s8 * %s) * %" PRId64, t ? "0" : g->bpairs ? "(pf_lane & 7)" : "pf_lane & 7",
                  g->bpairs ? " + 8 * ((pf_lane >> 4) & 1)" : "", sr, t ? "(pf_lane & 7) + " : "", m, sk);
}

/* The shared-window address of element idx of staged buffer b plus lane elements:
 * pf_sb (the dynamic area's address) + the buffer's offset + the element's, as
 * unsigned arithmetic the compiler folds into the ldmatrix's immediate offset
 * (a generic pointer converted per load costs several instructions). */
void em_smem_addr(Em *e, const Buffer *b, Expr *const *idx, const char *lane, StrBuf *o)
{
    StrBuf lin = {0};
    sb_putc(&lin, '0');
    for (int i = 0; i < b->rank; i++) {
        StrBuf nx = {0};
        int64_t ext = 0;
        em_cval(e, b->shape[i], &ext);
        sb_printf(&nx, "(%s) * %" PRId64 "u + (unsigned)(", lin.s, ext);
        em_expr(e, idx[i], &nx);
        sb_putc(&nx, ')');
        sb_free(&lin);
        lin = nx;
    }
    sb_printf(o, "pf_sb + %" PRId64 "u + %du * ((%s) + (unsigned)%s)", e->soff[b->id], dtype_bytes(b->dtype), lin.s, lane);
    sb_free(&lin);
}

/* Operand A fragment na of a group whose A is in registers, packed from buffer A
 * (an accumulator-layout local of 16-bit storage) at tile start a[0], a[1]: the C
 * fragments of 8-column tiles c and c + 1 are the A fragment of their 16 columns
 * (rows lane / 4 and lane / 4 + 8, columns 2 (lane % 4) + 0..1 and 8 more), for
 * mma.sync and per warp of a warpgroup for wgmma alike; register q takes tile q / 2
 * of the two, C registers 2 (q % 2) and + 1.  shift: log2 of a row tile (16: mma,
 * 64: wgmma). */
static void pack_a(Em *e, const Buffer *A, Expr *const *a, int shift, int na)
{
    StrBuf r = {0}, c = {0}, regs = {0};
    em_expr(e, a[0], &r);
    em_expr(e, a[1], &c);
    for (int q = 0; q < 4; q++)
        for (int h = 0; h < 2; h++)
            sb_printf(&regs, "%s%s[(%s) >> %d][((%s) >> 3) + %d][%d]%s", h ? "" : q ? ", pf_pk16(" : "pf_pk16(",
                      em_bn(e, A), r.s, shift, c.s, q / 2, 2 * (q % 2) + h, h ? ")" : ", ");
    em_line(e, "const unsigned pf_a%d[4] = {%s};", na, regs.s);
    sb_free(&r);
    sb_free(&c);
    sb_free(&regs);
}

/* The lanes' ldmatrix row offsets of group g (pf_oa in A, pf_ob in B). */
static void lane_offsets(Em *e, const TcGroup *g)
{
    StrBuf oa = {0}, ob = {0};
    lane_offset(g, 0, &oa);
    lane_offset(g, 1, &ob);
    if (!g->areg)
        em_line(e, "const int pf_oa = %s;   /* this lane's ldmatrix row in %s */", oa.s, em_bn(e, g->opbuf[0]));
    em_line(e, "const int pf_ob = %s;   /* ... and in %s */", ob.s, em_bn(e, g->opbuf[1]));
    sb_free(&oa);
    sb_free(&ob);
}

/* The fragment registers: pf_a3, or of register set `set` (fragments ahead)
 * pf_a3_1. */
static void frag_name(char *o, size_t n, char op, int f, int set)
{
    if (set < 0)
        snprintf(o, n, "pf_%c%d", op, f);
    else
        snprintf(o, n, "pf_%c%d_%d", op, f, set);
}

/* One fragment of operand op ('a': ldmatrix .x4, four registers; 'b': .x2, two)
 * read from staged buffer b at idx (lanes at offset `lane`), into fresh registers
 * (set < 0) or into register set `set`, declared by the pipeline. */
static void ldsm_frag(Em *e, const Buffer *b, Expr *const *idx, const char *lane, char op, int f, int set, bool trans)
{
    StrBuf a = {0};
    char r[32];
    int x = op == 'a' ? 4 : 2;
    em_smem_addr(e, b, idx, lane, &a);
    frag_name(r, sizeof r, op, f, set);
    if (set < 0)
        em_line(e, "unsigned %s[%d];  pf_ldsm_x%d%s(%s, %s);", r, x, x, trans ? "_t" : "", r, a.s);
    else
        em_line(e, "pf_ldsm_x%d%s(%s, %s);", x, trans ? "_t" : "", r, a.s);
    sb_free(&a);
}

/* B fragments f and f + 1 (g->bpairs) read by one ldmatrix .x4: lanes 16..31 name
 * the rows of f + 1, 8 further along N (pf_ob, lane_offset). */
static void ldsm_pair(Em *e, const Buffer *b, Expr *const *idx, int f, int set, bool trans)
{
    StrBuf a = {0};
    char r0[32], r1[32];
    em_smem_addr(e, b, idx, "pf_ob", &a);
    frag_name(r0, sizeof r0, 'b', f, set);
    frag_name(r1, sizeof r1, 'b', f + 1, set);
    char decl[96] = "";
    if (set < 0) /* fresh registers; a set's are declared by the pipeline */
        snprintf(decl, sizeof decl, "unsigned %s[2], %s[2];  ", r0, r1);
    em_line(e, "%s{ unsigned pf_q[4];  pf_ldsm_x4%s(pf_q, %s);  %s[0] = pf_q[0];  %s[1] = pf_q[1];  "
            "%s[0] = pf_q[2];  %s[1] = pf_q[3]; }", decl, trans ? "_t" : "", a.s, r0, r0, r1, r1);
    sb_free(&a);
}

/* Every distinct A and B fragment of group g loaded once, in the order the
 * products first use them (A packed from registers where g->areg; B two at a
 * time where g->bpairs). */
static void mma_loads(Em *e, const TcGroup *g, int set)
{
    int na = 0, nb = 0;
    for (int t = 0; t < g->nprod; t++) {
        const TcProduct *p = &g->prod[t];
        if (p->fa == na && g->areg)
            pack_a(e, g->opbuf[0], p->a, 4, na++);
        else if (p->fa == na)
            ldsm_frag(e, g->opbuf[0], p->a, "pf_oa", 'a', na++, set, g->trans[0]);
        if (p->fb == nb && g->bpairs) {
            ldsm_pair(e, g->opbuf[1], p->b, nb, set, g->trans[1]);
            nb += 2;
        } else if (p->fb == nb) {
            ldsm_frag(e, g->opbuf[1], p->b, "pf_ob", 'b', nb++, set, g->trans[1]);
        }
    }
}

/* The products of group g (the sums over k reassociated, as the mma mark allows),
 * from the fragments of mma_loads with the same set. */
static void mma_products(Em *e, const TcGroup *g, const Node *mn, int set)
{
    const Node *s = mn->u.loop.body.v[0]->u.loop.body.v[0]->u.loop.body.v[0];
    const char *ty = g->opbuf[0]->dtype == DT_BF16 ? "bf16" : "f16";
    char ra[32], rb[32];
    for (int t = 0; t < g->nprod; t++) {
        frag_name(ra, sizeof ra, 'a', g->prod[t].fa, g->areg ? -1 : set);
        frag_name(rb, sizeof rb, 'b', g->prod[t].fb, set);
        em_line(e, "pf_mma_%s(%s[%" PRId64 "][%" PRId64 "], %s, %s);", ty, em_bn(e, s->u.stmt.buf),
                g->prod[t].row / 16, g->prod[t].col / 8, ra, rb);
    }
    e->nmma += g->nprod;
}

static void late_admit(Em *e);

/* An mma group: every distinct A and B fragment loaded once, then the products. */
static void mma_group(Em *e, const TcGroup *g, const Node *mn, const char *names)
{
    em_line(e, "{   /* mma %s%s: %d tensor-core products m16n8k16 (%s in, f32 accumulate) */", names,
            em_vn(e, mn->u.loop.var), g->nprod, g->opbuf[0]->dtype == DT_BF16 ? "bf16" : "f16");
    e->ind++;
    lane_offsets(e, g);
    mma_loads(e, g, -1);
    if (e->late_var)
        late_admit(e);
    mma_products(e, g, mn, -1);
    e->ind--;
    em_line(e, "}");
}

static const char wg_prelude[] =
    "/* Hopper warpgroup products (sm_90a): wgmma.mma_async reads both operands from shared memory through\n"
    " * 64-bit matrix descriptors (start >> 4, leading and stride byte offsets >> 4, 128-byte swizzle in\n"
    " * bits 62-63) and accumulates into registers asynchronously: fence before, commit, wait after.  Shared\n"
    " * memory written by ordinary stores or cp.async reaches it only after a proxy fence. */\n"
    "static __device__ __forceinline__ unsigned long long pf_wg_desc(unsigned a, unsigned lbo, unsigned sbo) { return (unsigned long long)((a & 0x3FFFF) >> 4) | ((unsigned long long)(lbo >> 4) << 16) | ((unsigned long long)(sbo >> 4) << 32) | (1ull << 62); }\n"
    "static __device__ __forceinline__ void pf_wg_fence() { asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\"); }\n"
    "static __device__ __forceinline__ void pf_wg_commit() { asm volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\"); }\n"
    "template <int N> static __device__ __forceinline__ void pf_wg_wait() { asm volatile(\"wgmma.wait_group.sync.aligned %0;\" :: \"n\"(N) : \"memory\"); }\n"
    "static __device__ __forceinline__ void pf_proxy_fence() { asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\"); }\n"
    "/* An empty asm that reads and writes every accumulator register: keeps the compiler from moving their\n"
    " * other uses across the fence or the wait. */\n"
    "template <int N> static __device__ __forceinline__ void pf_wg_keep(float *d) {\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < N; i++) asm volatile(\"\" : \"+f\"(d[i]) :: \"memory\");\n"
    "}\n"
    "/* Byte offset -> its place in the 128-byte swizzle (bits 4-6 xor bits 7-9). */\n"
    "static __device__ __forceinline__ unsigned pf_swz(unsigned o) { return o ^ ((o >> 3) & 0x70u); }\n";

/* Writes (once per module) the wgmma helper for dtype ty (1: bf16), width N and
 * the operands' majorness: one asm with the N / 2 accumulator registers, then A
 * (a matrix descriptor, or with areg four registers holding the m64k16 tile in the
 * accumulator's layout, two 16-bit values each) and B's descriptor. */
static void wg_helper(Em *e, int ty, int64_t N, bool areg, bool ta, bool tb)
{
    StrBuf *h = &e->helpers;
    if (!e->wgpre) sb_puts(h, wg_prelude);
    e->wgpre = true;
    const char *t = ty ? "bf16" : "f16";
    int64_t nr = N / 2;
    if (areg)
        sb_printf(h, "static __device__ __forceinline__ void pf_wgmma_%s_n%" PRId64 "_r%d(float *d, const unsigned *a, ",
                  t, N, tb);
    else
        sb_printf(h, "static __device__ __forceinline__ void pf_wgmma_%s_n%" PRId64 "_%d%d(float *d, unsigned long long a, ",
                  t, N, ta, tb);
    sb_printf(h, "unsigned long long b) {\n    asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, 1, 0;\\n\"\n"
              "        \"wgmma.mma_async.sync.aligned.m64n%" PRId64 "k16.f32.%s.%s {", N, t, t);
    for (int64_t i = 0; i < nr; i++) sb_printf(h, "%s%%%" PRId64, i ? ", " : "", i);
    if (areg) /* the register form has no transpose of A */
        sb_printf(h, "}, {%%%" PRId64 ", %%%" PRId64 ", %%%" PRId64 ", %%%" PRId64 "}, %%%" PRId64 ", p, 1, 1, %d;\\n}\\n\"\n        : ",
                  nr, nr + 1, nr + 2, nr + 3, nr + 4, tb);
    else
        sb_printf(h, "}, %%%" PRId64 ", %%%" PRId64 ", p, 1, 1, %d, %d;\\n}\\n\"\n        : ", nr, nr + 1, ta, tb);
    for (int64_t i = 0; i < nr; i++) sb_printf(h, "%s\"+f\"(d[%" PRId64 "])", i ? ", " : "", i);
    sb_puts(h, areg ? "\n        : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(b) : \"memory\");\n}\n"
                    : "\n        : \"l\"(a), \"l\"(b) : \"memory\");\n}\n");
}

/* The matrix descriptor of operand o at product indices idx: 8 rows of 128 bytes
 * (SBO 1024) per core-matrix group; the leading byte offset from the pass. */
static void wg_desc(Em *e, const TcGroup *g, int o, Expr *const *idx, StrBuf *out)
{
    StrBuf lin = {0};
    swz_lin(e, g->opbuf[o], idx, &lin);
    sb_printf(out, "pf_wg_desc(pf_saddr(%s) + (unsigned)(%s), %" PRId64 ", 1024)", em_bn(e, g->opbuf[o]), lin.s,
              g->stride[o][0]);
    sb_free(&lin);
}

/* A wgmma group: its products issued between a fence and one commit, then waited
 * for (to wg_inflight groups); the keeps order the accumulator's other reads and
 * writes around the asynchronous products. */
static void wgmma_group(Em *e, const TcGroup *g, const Node *mn, const char *names)
{
    const Node *s = mn->u.loop.body.v[0]->u.loop.body.v[0]->u.loop.body.v[0];
    const Buffer *acc = s->u.stmt.buf;
    int ty = g->opbuf[0]->dtype == DT_BF16;
    int64_t N = g->n;
    int ta = g->trans[0], tb = g->trans[1];
    em_line(e, "{   /* wgmma %s%s: %d warpgroup products m64n%" PRId64 "k16 (%s in, f32 accumulate), "
            "%s */", names, em_vn(e, mn->u.loop.var), g->nprod, N, ty ? "bf16" : "f16",
            g->areg ? "A from registers, B from shared memory" : "operands from shared memory");
    e->ind++;
    int hv = g->areg ? 4 + tb : ta * 2 + tb;
    if (!e->wgdone[ty][N / 8][hv]) {
        e->wgdone[ty][N / 8][hv] = 1;
        wg_helper(e, ty, N, g->areg, ta, tb);
    }
    int64_t regs = em_frag_regs(e, acc);
    /* A in registers: each distinct tile packed once, before the fence */
    for (int t = 0, na = 0; g->areg && t < g->nprod; t++)
        if (g->prod[t].fa == na)
            pack_a(e, g->opbuf[0], g->prod[t].a, 6, na++);
    em_line(e, "pf_wg_keep<%" PRId64 ">(&%s[0][0][0]);", regs, em_bn(e, acc));
    em_line(e, "pf_wg_fence();");
    for (int t = 0; t < g->nprod; t++) {
        StrBuf da = {0}, db = {0};
        wg_desc(e, g, 1, g->prod[t].b, &db);
        if (g->areg) {
            em_line(e, "pf_wgmma_%s_n%" PRId64 "_r%d(&%s[%" PRId64 "][%" PRId64 "][0], pf_a%d, %s);", ty ? "bf16" : "f16",
                    N, tb, em_bn(e, acc), g->prod[t].row / 64, g->prod[t].col / 8, g->prod[t].fa, db.s);
        } else {
            wg_desc(e, g, 0, g->prod[t].a, &da);
            em_line(e, "pf_wgmma_%s_n%" PRId64 "_%d%d(&%s[%" PRId64 "][%" PRId64 "][0], %s, %s);", ty ? "bf16" : "f16",
                    N, ta, tb, em_bn(e, acc), g->prod[t].row / 64, g->prod[t].col / 8, da.s, db.s);
        }
        sb_free(&da);
        sb_free(&db);
    }
    em_line(e, "pf_wg_commit();");
    em_line(e, "pf_wg_wait<%d>();%s", e->wg_inflight, e->wg_inflight ? "   /* the previous group is done: "
            "its stage may be refilled */" : "");
    em_line(e, "pf_wg_keep<%" PRId64 ">(&%s[0][0][0]);", regs, em_bn(e, acc));
    e->nmma += g->nprod;
    e->ind--;
    em_line(e, "}");
}

void em_tc_group(Em *e, const Node *n)
{
    StrBuf names = {0};
    const Node *mn = group_triple(e, n, &names);
    if (mn->u.loop.kind == LOOP_WGMMA)
        wgmma_group(e, n->u.loop.tc, mn, names.s ? names.s : "");
    else
        mma_group(e, n->u.loop.tc, mn, names.s ? names.s : "");
    sb_free(&names);
}

/* ---------------- software pipelines ----------------
 *     copies of iterations 0 .. S-2 (cp.async), one commit group each
 *     for v: wait until at most S-2 groups are pending (iteration v has landed in
 *            this thread's copies), __syncthreads (everyone's have, and everyone
 *            has finished iteration v-1, whose stage the next copies overwrite),
 *            copies of iteration v+S-1, commit, then the rest of the body
 * so S-1 tiles are in flight while one is used.  A commit is issued every
 * iteration, empty past the end, so the group count that wait_group relies on
 * stays uniform.  With inflight=L (wgmma launches) a group's products may still
 * read their stage one iteration later: the copies run S-1-L iterations ahead. */
/* The dtype the synchronous copies store (passes/gpu_pipeline.c made it one). */
static DType staged_dtype(const NodeList *l)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        if (n->kind == N_STMT)
            return n->u.stmt.buf->dtype;
        if (n->kind != N_LOOP || n->u.loop.hint == HINT_ASYNC || n->u.loop.hint == HINT_WIDE)
            continue;
        DType t = staged_dtype(&n->u.loop.body);
        if (t != DT_COUNT)
            return t;
    }
    return DT_COUNT;
}

/* The copies of iteration `next` (an expression) when it is in range, then a
 * commit (issued either way, so the group count stays uniform). */
static void stage_copies(Em *e, const EmPipe *p, const char *next)
{
    em_line(e, "const idx_t pf_next = %s;", next);
    em_line(e, "if (pf_next < %s) {", p->hi.s);
    e->ind++;
    em_line(e, "const idx_t %s = pf_next;", p->vs);
    em_nodes(e, &p->copies);
    e->ind--;
    em_line(e, "}");
    em_line(e, "pf_cp_commit();");
}

/* The copies of iteration `base` + ahead, in a block of their own. */
static void stage_copies_ahead(Em *e, const EmPipe *p, const char *base, int64_t ahead)
{
    StrBuf next = {0};
    sb_printf(&next, "%s + %" PRId64, base, ahead);
    em_line(e, "{");
    e->ind++;
    stage_copies(e, p, next.s);
    e->ind--;
    em_line(e, "}");
    sb_free(&next);
}

/* The copies of the pipeline's first n iterations, one commit group each. */
static void pipe_prologue(Em *e, const EmPipe *p, int64_t n)
{
    StrBuf next = {0};
    sb_printf(&next, "%s + pf_pre", p->lo.s);
    em_line(e, "#pragma unroll");
    em_line(e, "for (idx_t pf_pre = 0; pf_pre < %" PRId64 "; ++pf_pre) {", n);
    e->ind++;
    stage_copies(e, p, next.s);
    e->ind--;
    em_line(e, "}");
    sb_free(&next);
}

/* ---------------- fragments ahead ----------------
 * A pipeline whose slice loop pass gpu-frag-ahead marked: with KS slices of
 * fragments in two register sets (slice s in set s % 2),
 *     copies of iterations 0 .. S-2; wait, barrier; slice 0 of iteration 0 read
 *     for v: slice s = 0 .. KS-1:
 *              s < KS-1: read slice s + 1        s = KS-1: wait, barrier (stage
 *              s = 0: copies of v + S-1, commit      v + 1 admitted), read its slice 0
 *              the products of slice s
 * The thread loops above the slice loop (unguarded, passes/gpu_frag_ahead.c) are
 * opened around each piece, so the copies and barriers stand outside them. */

/* The slice loop under pipeline body `rest` and the thread loops above it. */
static const Node *ahead_slices(const NodeList *rest, const Node **chain, int *nc)
{
    *nc = 0;
    if (rest->n != 1) return NULL;
    const Node *x = rest->v[0];
    while (x->kind == N_LOOP && !x->u.loop.frag_ahead && gpu_is_thread(x->u.loop.kind) && *nc < 3 &&
           x->u.loop.body.n == 1) {
        chain[(*nc)++] = x;
        x = x->u.loop.body.v[0];
    }
    return x->kind == N_LOOP && x->u.loop.frag_ahead ? x : NULL;
}

static void open_threads(Em *e, const Node *const *chain, int nc)
{
    static const char xyz[] = "xyz";
    for (int i = 0; i < nc; i++) {
        const char *v = em_vn(e, chain[i]->u.loop.var);
        em_line(e, "{   /* %s: %s */", v, loop_kind_name(chain[i]->u.loop.kind));
        e->ind++;
        em_line(e, "const idx_t %s = (idx_t)threadIdx.%c;", v, xyz[gpu_dim(chain[i]->u.loop.kind)]);
    }
    e->tdepth += nc;
}

static void close_threads(Em *e, int nc)
{
    e->tdepth -= nc;
    for (int i = 0; i < nc; i++) {
        e->ind--;
        em_line(e, "}");
    }
}

/* Slice `s` of the slice loop ks (start lo) read into register set s % 2, in a
 * block that binds ks (and, with pv, the pipeline variable to pv). */
static void ahead_loads(Em *e, const Node *ks, int64_t lo, int64_t s, const char *pv, const char *vs)
{
    const TcGroup *g = ks->u.loop.body.v[0]->u.loop.tc;
    em_line(e, "{");
    e->ind++;
    if (pv) em_line(e, "const idx_t %s = %s;", vs, pv);
    em_line(e, "const idx_t %s = %" PRId64 ";   /* slice %" PRId64 " into set %d */", em_vn(e, ks->u.loop.var),
            lo + s, s, (int)(s % 2));
    mma_loads(e, g, (int)(s % 2));
    e->ind--;
    em_line(e, "}");
}

static void em_pipeline_ahead(Em *e, EmPipe *p, const Node *const *chain, int nc, const Node *ks)
{
    const Node *head = ks->u.loop.body.v[0];
    const TcGroup *g = head->u.loop.tc;
    StrBuf names = {0};
    const Node *mn = group_triple(e, head, &names);
    int64_t lo = 0, KS = 0;
    em_extent(e, ks, &lo, &KS);
    const char *vs = p->vs, *plo = p->lo.s, *hi = p->hi.s;
    int64_t S = p->S;
    em_line(e, "/* mma %s%s: %d products a slice of %s, fragments read a slice ahead into two register sets */",
            names.s ? names.s : "", em_vn(e, mn->u.loop.var), g->nprod, em_vn(e, ks->u.loop.var));
    char r[32];
    for (int set = 0; set < 2; set++) {
        for (int f = 0; f < g->nfa; f++) {
            frag_name(r, sizeof r, 'a', f, set);
            em_line(e, "unsigned %s[4];", r);
        }
        for (int f = 0; f < g->nfb; f++) {
            frag_name(r, sizeof r, 'b', f, set);
            em_line(e, "unsigned %s[2];", r);
        }
    }
    lane_offsets(e, g);
    pipe_prologue(e, p, S - 1);
    em_line(e, "pf_cp_wait<%" PRId64 ">();   /* the first stage has landed in this thread's copies */", S - 2);
    em_line(e, "__syncthreads();   /* ... and in everyone's */");
    open_threads(e, chain, nc);
    ahead_loads(e, ks, lo, 0, plo, vs);
    close_threads(e, nc);
    em_line(e, "for (idx_t %s = %s; %s < %s; ++%s) {", vs, plo, vs, hi, vs);
    e->ind++;
    for (int64_t s = 0; s < KS; s++) {
        if (s + 1 < KS) {
            open_threads(e, chain, nc);
            ahead_loads(e, ks, lo, s + 1, NULL, vs);
            close_threads(e, nc);
        } else {
            em_line(e, "pf_cp_wait<%" PRId64 ">();   /* this thread's copies of %s + 1 have landed */", S - 2, vs);
            em_line(e, "__syncthreads();   /* everyone's have, and everyone has read stage %s %% %" PRId64
                    " but this slice */", vs, S);
            em_line(e, "if (%s + 1 < %s) {", vs, hi);
            e->ind++;
            em_line(e, "const idx_t pf_nv = %s + 1;", vs);
            open_threads(e, chain, nc);
            ahead_loads(e, ks, lo, 0, "pf_nv", vs);
            close_threads(e, nc);
            e->ind--;
            em_line(e, "}");
        }
        if (s == 0) /* stage (v - 1) % S: every read of it preceded the barrier closing iteration v - 1 */
            stage_copies_ahead(e, p, vs, S - 1);
        open_threads(e, chain, nc);
        em_line(e, "{   /* the products of slice %" PRId64 " (set %d) */", s, (int)(s % 2));
        e->ind++;
        mma_products(e, g, mn, (int)(s % 2));
        e->ind--;
        em_line(e, "}");
        close_threads(e, nc);
    }
    e->ind--;
    em_line(e, "}");
    em_line(e, "pf_cp_wait<0>();");
    sb_free(&names);
}

/* ---------------- the next stage admitted at the last slice ----------------
 * A pipeline whose body's last loop (slices of one mma.sync group after other
 * work: attention's P.V after its softmax) pass gpu-frag-ahead marked admit_last:
 *     copies of iterations 0 .. S-2; wait, barrier; copies of iteration S-1
 *     for v: the body, where the marked loop's last slice runs
 *              its fragments read; wait, barrier (stage v + 1 admitted, stage v read
 *              by everyone); copies of iteration v + S; its products
 * so the barrier's wait overlaps the last slice's products instead of standing
 * alone at the top of the iteration. */

/* The loop marked admit_last at the end of the thread-loop chain that is rest. */
static bool late_marked(const NodeList *rest)
{
    if (rest->n != 1)
        return false;
    const Node *x = rest->v[0];
    while (x->kind == N_LOOP && gpu_is_thread(x->u.loop.kind) && x->u.loop.body.n >= 1)
        x = x->u.loop.body.v[x->u.loop.body.n - 1];
    return x->kind == N_LOOP && x->u.loop.admit_last;
}

/* In the marked loop's mma group, after its reads: at the last slice, the next
 * stage admitted and the copies of iteration v + S issued. */
static void late_admit(Em *e)
{
    const EmPipe *p = e->late;
    em_line(e, "if (%s + 1 == %s) {   /* the last slice's fragments are read: admit the next stage */", e->late_var,
            e->late_hi);
    e->ind++;
    em_line(e, "pf_cp_wait<%" PRId64 ">();   /* this thread's copies of %s + 1 have landed */", p->S - 2, p->vs);
    em_line(e, "__syncthreads();   /* everyone's have, and everyone has read stage %s %% %" PRId64 " */", p->vs, p->S);
    int td = e->tdepth;
    const char *lv = e->late_var;
    e->tdepth = 0, e->late_var = NULL; /* the copies as at block level */
    stage_copies_ahead(e, p, p->vs, p->S);
    e->tdepth = td, e->late_var = lv;
    e->ind--;
    em_line(e, "}");
}

static void em_pipeline_late(Em *e, EmPipe *p)
{
    pipe_prologue(e, p, p->S - 1);
    em_line(e, "pf_cp_wait<%" PRId64 ">();   /* the first stage has landed in this thread's copies */", p->S - 2);
    em_line(e, "__syncthreads();   /* ... and in everyone's */");
    stage_copies_ahead(e, p, p->lo.s, p->S - 1);
    em_line(e, "for (idx_t %s = %s; %s < %s; ++%s) {   /* the next stage is admitted in the last slice of the "
            "body's last mma loop */", p->vs, p->lo.s, p->vs, p->hi.s, p->vs);
    e->ind++;
    e->late = p;
    em_nodes(e, &p->rest);
    e->late = NULL;
    e->ind--;
    em_line(e, "}");
    em_line(e, "pf_cp_wait<0>();");
}

void em_pipeline(Em *e, const Node *n)
{
    if (n->u.loop.ncopies && n->u.loop.body.v[0]->kind == N_LOOP && n->u.loop.body.v[0]->u.loop.tma) {
        em_pipeline_tma(e, n); /* passes/gpu_tma.c marked every copy or none */
        return;
    }
    EmPipe p;
    em_pipeline_open(e, n, "", "the copies", &p);
    const Node *chain[3];
    int nc;
    const Node *ks = ahead_slices(&p.rest, chain, &nc);
    if (ks) {
        em_pipeline_ahead(e, &p, chain, nc, ks);
        em_pipeline_close(e, &p);
        return;
    }
    if (late_marked(&p.rest) && !n->u.loop.reg_staged && !p.L) {
        em_pipeline_late(e, &p);
        em_pipeline_close(e, &p);
        return;
    }
    const char *vs = p.vs;
    int64_t S = p.S, L = p.L;
    const char *lo = p.lo.s, *hi = p.hi.s;
    NodeList copies = p.copies, rest = p.rest;
    pipe_prologue(e, &p, S - 1 - L);
    em_line(e, "for (idx_t %s = %s; %s < %s; ++%s) {", vs, lo, vs, hi, vs);
    e->ind++;
    em_line(e, "pf_cp_wait<%" PRId64 ">();   /* this thread's copies of %s have landed */", S - 2 - L, vs);
    if (e->wg) em_line(e, "pf_proxy_fence();   /* ... and are visible to wgmma */");
    em_line(e, "__syncthreads();   /* everyone's have, and stage (%s - %" PRId64 ") %% %" PRId64 " is free */", vs,
            1 + L, S);
    em_line(e, "{");
    e->ind++;
    em_line(e, "const idx_t pf_next = %s + %" PRId64 ";", vs, S - 1 - L);
    int R = n->u.loop.reg_staged;
    DType sdt = R ? staged_dtype(&copies) : DT_COUNT;
    e->rpack = sdt == DT_F16 || sdt == DT_BF16;
    if (R && e->rpack) /* pass gpu-pipeline: the synchronous copies' loads now, their stores after the body */
        em_line(e, "unsigned pf_rs[%d];   /* iteration pf_next's synchronous copies, two 16-bit elements a "
                "register, held while %s computes */", (R + 1) / 2, vs);
    else if (R)
        em_line(e, "%s pf_rs[%d];   /* iteration pf_next's synchronous copies, held while %s computes */",
                em_storage_type(sdt, e->idx64), R, vs);
    em_line(e, "if (pf_next < %s) {", hi);
    e->ind++;
    em_line(e, "const idx_t %s = pf_next;", vs);
    e->rphase = R ? 1 : 0, e->rnext = 0, e->rdepth = 0;
    em_nodes(e, &copies);
    e->rphase = 0;
    e->ind--;
    em_line(e, "}");
    em_line(e, "pf_cp_commit();");
    if (!R) {
        e->ind--;
        em_line(e, "}");
    }
    e->wg_inflight = (int)L;
    em_nodes(e, &rest);
    e->wg_inflight = 0;
    if (R) {
        em_line(e, "if (pf_next < %s) {", hi);
        e->ind++;
        em_line(e, "const idx_t %s = pf_next;", vs);
        e->rphase = 2, e->rnext = 0, e->rdepth = 0;
        em_nodes(e, &copies);
        e->rphase = 0;
        e->ind--;
        em_line(e, "}");
        e->ind--;
        em_line(e, "}");
    }
    e->ind--;
    em_line(e, "}");
    em_line(e, "pf_cp_wait<0>();");
    em_pipeline_close(e, &p);
}

void em_pipeline_open(Em *e, const Node *n, const char *kind, const char *what, EmPipe *p)
{
    const NodeList *body = &n->u.loop.body;
    int nc = n->u.loop.ncopies;
    p->vs = em_vn(e, n->u.loop.var);
    p->S = n->u.loop.stages;
    p->L = e->wg ? n->u.loop.inflight : 0;
    p->lo = (StrBuf){0};
    p->hi = (StrBuf){0};
    em_expr(e, n->u.loop.lo, &p->lo);
    em_expr(e, n->u.loop.hi, &p->hi);
    p->copies = (NodeList){body->v, nc, nc};
    p->rest = (NodeList){body->v + nc, body->n - nc, body->n - nc};
    em_line(e, "{   /* %s: %" PRId64 "-stage pipeline%s; %s of iteration %s + %" PRId64 " are in flight "
            "while %s computes%s */", p->vs, p->S, kind, what, p->vs, p->S - 1 - p->L, p->vs,
            p->L ? ", whose tensor-core products overlap the next iteration's" : "");
    e->ind++;
    e->pvar = n->u.loop.var;
}

static bool list_writes(const NodeList *l, const Buffer *b)
{
    for (int i = 0; i < l->n; i++)
        if (ir_node_writes(l->v[i], b))
            return true;
    return false;
}

void em_pipeline_close(Em *e, EmPipe *p)
{
    int64_t L = p->L;
    sb_free(&p->lo);
    sb_free(&p->hi);
    if (L) {
        em_line(e, "pf_wg_wait<0>();   /* the last group */");
        /* the accumulators this pipeline's products write: a kernel of several
         * launches has one of its own in each */
        for (int b = 0; b < e->k->nbufs; b++)
            if (e->k->bufs[b]->layout == LAYOUT_WGMMA_ACC && list_writes(&p->rest, e->k->bufs[b]))
                em_line(e, "pf_wg_keep<%" PRId64 ">(&%s[0][0][0]);", em_frag_regs(e, e->k->bufs[b]),
                        em_bn(e, e->k->bufs[b]));
    }
    e->pvar = NULL;
    e->ind--;
    em_line(e, "}");
    e->npipe++;
}
