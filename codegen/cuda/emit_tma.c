/* The CUDA emitter's translation of software pipelines whose copies pass gpu-tma
 * marked as bulk tensor copies (passes/gpu_tma.c; docs/cuda.md "Bulk tensor
 * copies"):
 *   - the module's tensor maps: one per global tensor and box, passed by value
 *     after the buffers (__grid_constant__), encoded by the launcher;
 *   - one mbarrier per stage, its phase completing when the stage's bytes have
 *     landed (arrive with the expected byte count, the copies complete it);
 *   - the pipeline: every thread waits on the stage's barrier with the parity of
 *     its fill count, then on __syncthreads(), after which no one reads the stage
 *     iteration v - 1 - L used; one thread issues the boxes of iteration
 *     v + S - 1 - L into it.
 * Nothing here decides: which copies are boxes, and their boxes, are the pass's. */
#include <inttypes.h>
#include <string.h>

#include "../../ir/arith.h"
#include "emit_int.h"

const char em_tma_prelude[] =
    "/* Bulk tensor copies (TMA, sm_90+): one thread copies a box of a global tensor into shared memory with\n"
    " * the 128-byte swizzle, zeros outside the tensor; an mbarrier counts the bytes in.  A stage's barrier\n"
    " * completes one phase per fill: waiting on the parity of the fill number returns once it has landed. */\n"
    "struct __align__(64) pf_tmap { unsigned long long w[16]; };\n"
    "static __device__ __forceinline__ void pf_mbar_init(unsigned long long *b, unsigned n) { asm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\" :: \"r\"(pf_saddr(b)), \"r\"(n) : \"memory\"); }\n"
    "static __device__ __forceinline__ void pf_mbar_init_fence() { asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\"); }\n"
    "static __device__ __forceinline__ void pf_mbar_expect(unsigned long long *b, unsigned bytes) { asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\" :: \"r\"(pf_saddr(b)), \"r\"(bytes) : \"memory\"); }\n"
    "static __device__ __forceinline__ void pf_mbar_wait(unsigned long long *b, unsigned parity) {\n"
    "    unsigned done;\n"
    "    do asm volatile(\"{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }\" : \"=r\"(done) : \"r\"(pf_saddr(b)), \"r\"(parity) : \"memory\");\n"
    "    while (!done);\n"
    "}\n"
    "static __device__ __forceinline__ void pf_tma2(void *d, const pf_tmap *m, int c0, int c1, unsigned long long *b) { asm volatile(\"cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\" :: \"r\"(pf_saddr(d)), \"l\"(m), \"r\"(c0), \"r\"(c1), \"r\"(pf_saddr(b)) : \"memory\"); }\n"
    "static __device__ __forceinline__ void pf_tma3(void *d, const pf_tmap *m, int c0, int c1, int c2, unsigned long long *b) { asm volatile(\"cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\" :: \"r\"(pf_saddr(d)), \"l\"(m), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(pf_saddr(b)) : \"memory\"); }\n"
    "static __device__ __forceinline__ void pf_tma4(void *d, const pf_tmap *m, int c0, int c1, int c2, int c3, unsigned long long *b) { asm volatile(\"cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];\" :: \"r\"(pf_saddr(d)), \"l\"(m), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(c3), \"r\"(pf_saddr(b)) : \"memory\"); }\n"
    "static __device__ __forceinline__ void pf_tma5(void *d, const pf_tmap *m, int c0, int c1, int c2, int c3, int c4, unsigned long long *b) { asm volatile(\"cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, %6}], [%7];\" :: \"r\"(pf_saddr(d)), \"l\"(m), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(c3), \"r\"(c4), \"r\"(pf_saddr(b)) : \"memory\"); }\n";

/* ---------------- the module's tensor maps ---------------- */

static void map_of(const TmaCopy *t, CgTmap *m)
{
    int r = t->rank;
    memset(m, 0, sizeof *m);
    m->buf = t->src->id;
    m->rank = r;
    uint64_t stride = 2; /* 16-bit elements (the pass) */
    for (int j = 0; j < r; j++) {
        int d = r - 1 - j; /* innermost first */
        int64_t ext = t->shape[d];
        m->dims[j] = (uint64_t)ext;
        if (j) m->strides[j - 1] = stride;
        stride *= (uint64_t)ext;
        m->box[j] = j == 0 ? 64u : d == t->rdim ? (uint32_t)t->rows : 1u;
    }
}

int em_tmap_of(const CgTmap *maps, int n, const TmaCopy *t)
{
    for (int i = 0; i < n; i++)
        if (maps[i].buf == t->src->id && maps[i].rank == t->rank &&
            maps[i].dims[t->rank - 1] == (uint64_t)t->shape[0] && maps[i].box[t->rank - 1 - t->rdim] == (uint32_t)t->rows)
            return i;
    return -1;
}

static void collect(const Node *n, CgCudaModule *m)
{
    if (n->kind == N_LOOP && n->u.loop.tma && em_tmap_of(m->tmaps, m->ntmaps, n->u.loop.tma) < 0) {
        m->tmaps = xrealloc(m->tmaps, sizeof *m->tmaps * (size_t)(m->ntmaps + 1));
        map_of(n->u.loop.tma, &m->tmaps[m->ntmaps++]);
    }
    const NodeList *b = ir_body((Node *)n);
    for (int i = 0; b && i < b->n; i++) collect(b->v[i], m);
}

void em_collect_tmaps(const Kernel *k, CgCudaModule *m)
{
    for (int i = 0; i < k->body.n; i++) collect(k->body.v[i], m);
}

/* ---------------- the pipeline ---------------- */

/* The boxes of copy node c at the current value of the loop variable: one bulk copy
 * per 64-column panel of the stage, each a rows x 64 block of the swizzled layout. */
static void issue_boxes(Em *e, const TmaCopy *t, const char *bar)
{
    int r = t->rank;
    StrBuf stage = {0};
    em_expr(e, t->stage, &stage);
    StrBuf org[5] = {{0}};
    for (int d = 0; d < r; d++) em_expr(e, t->origin[d], &org[d]);
    int mi = em_tmap_of(e->tmaps, e->ntmaps, t);
    int64_t panels = t->cols / 64;
    em_line(e, "/* %s[%s] <- %s: %" PRId64 " box%s of %" PRId64 " x 64 */", em_bn(e, t->dst), stage.s,
            em_bn(e, t->src), panels, panels > 1 ? "es" : "", t->rows);
    for (int64_t p = 0; p < panels; p++) {
        StrBuf call = {0};
        sb_printf(&call, "pf_tma%d(%s + ((%s) * %" PRId64 " + %" PRId64 ") * %" PRId64 ", &pf_tm%d", r, em_bn(e, t->dst),
                  stage.s, panels, p, t->rows * 64 * 2, mi);
        for (int j = 0; j < r; j++) {
            int d = r - 1 - j;
            if (j == 0 && p)
                sb_printf(&call, ", (int)(%s) + %" PRId64, org[d].s, p * 64);
            else
                sb_printf(&call, ", (int)(%s)", org[d].s);
        }
        sb_printf(&call, ", %s);", bar);
        em_line(e, "%s", call.s);
        sb_free(&call);
    }
    sb_free(&stage);
    for (int d = 0; d < r; d++) sb_free(&org[d]);
}

/* One iteration's copies, issued by the one thread: the barrier's byte count, then
 * the boxes. */
static void issue_iteration(Em *e, const NodeList *copies, const char *vs, int64_t S, const char *barname)
{
    int64_t bytes = 0;
    for (int i = 0; i < copies->n; i++) {
        const TmaCopy *t = copies->v[i]->u.loop.tma;
        bytes += t->rows * t->cols * 2;
    }
    char bar[96];
    snprintf(bar, sizeof bar, "&%s[(unsigned)%s %% %" PRId64 "u]", barname, vs, S);
    em_line(e, "pf_mbar_expect(%s, %" PRId64 "u);", bar, bytes);
    for (int i = 0; i < copies->n; i++) issue_boxes(e, copies->v[i]->u.loop.tma, bar);
}

void em_pipeline_tma(Em *e, const Node *n)
{
    EmPipe p;
    em_pipeline_open(e, n, " of bulk tensor copies", "those", &p);
    const char *vs = p.vs;
    int64_t S = p.S, L = p.L;
    const char *lo = p.lo.s, *hi = p.hi.s;
    NodeList copies = p.copies, rest = p.rest;
    char bar[80];
    snprintf(bar, sizeof bar, "pf_full_%s", vs);
    em_line(e, "__shared__ __align__(8) unsigned long long %s[%" PRId64 "];   /* stage s has landed */", bar, S);
    em_line(e, "const bool pf_issuer = threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;");
    em_line(e, "if (pf_issuer) {");
    e->ind++;
    em_line(e, "for (int s = 0; s < %" PRId64 "; ++s) pf_mbar_init(&%s[s], 1);", S, bar);
    em_line(e, "pf_mbar_init_fence();");
    e->ind--;
    em_line(e, "}");
    em_line(e, "__syncthreads();   /* the barriers are ready */");
    em_line(e, "if (pf_issuer) {");
    e->ind++;
    em_line(e, "#pragma unroll");
    em_line(e, "for (idx_t pf_pre = 0; pf_pre < %" PRId64 "; ++pf_pre) {", S - 1 - L);
    e->ind++;
    em_line(e, "const idx_t %s = %s + pf_pre;", vs, lo);
    em_line(e, "if (%s < %s) {", vs, hi);
    e->ind++;
    issue_iteration(e, &copies, vs, S, bar);
    e->ind--;
    em_line(e, "}");
    e->ind--;
    em_line(e, "}");
    e->ind--;
    em_line(e, "}");
    em_line(e, "for (idx_t %s = %s; %s < %s; ++%s) {", vs, lo, vs, hi, vs);
    e->ind++;
    em_line(e, "pf_mbar_wait(&%s[(unsigned)%s %% %" PRId64 "u], (unsigned)((%s - %s) / %" PRId64 ") & 1u);   "
            "/* stage %s %% %" PRId64 " has landed */", bar, vs, S, vs, lo, S, vs, S);
    /* a block-wide barrier, not per-stage `empty` mbarriers that each warp arrives
     * on: those measured no faster at 4096^3 and 9% slower at 4095 x 4097 x 1023
     * (docs/cuda.md "Bulk tensor copies") */
    em_line(e, "__syncthreads();   /* and everyone is done with stage (%s - %" PRId64 ") %% %" PRId64 " */", vs, 1 + L,
            S);
    em_line(e, "if (pf_issuer && %s + %" PRId64 " < %s) {", vs, S - 1 - L, hi);
    e->ind++;
    em_line(e, "const idx_t pf_next = %s + %" PRId64 ";", vs, S - 1 - L);
    em_line(e, "{");
    e->ind++;
    em_line(e, "const idx_t %s = pf_next;", vs);
    issue_iteration(e, &copies, vs, S, bar);
    e->ind--;
    em_line(e, "}");
    e->ind--;
    em_line(e, "}");
    e->wg_inflight = (int)L;
    em_nodes(e, &rest);
    e->wg_inflight = 0;
    e->ind--;
    em_line(e, "}");
    em_pipeline_close(e, &p);
}
