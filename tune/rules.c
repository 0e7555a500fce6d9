/* Search spaces: templates built from rules per kernel class, or the kernel's own.
 *
 * The rules read the unscheduled loop nest (one nest per statement, as lowering
 * makes them) and write a schedule template in PDL text, then parse it, so what the
 * tuner searches is exactly what a person could write: a schedule whose `param`
 * items are the dimensions of the space.  Classes:
 *
 *  - contraction (GEMM, batched GEMM, GEMM with epilogue, convolution as implicit
 *    GEMM over its two innermost output loops): a register-blocked micro-kernel
 *    built from distribute, reorder, split, cache (the C tile, and in one template
 *    the packed B panel), unroll and vectorize, with MR, NR, KC and the parallel
 *    loop as parameters (see contraction_text); a fallback template of
 *    dot-product tiles when the micro-kernel cannot be built;
 *  - row-wise (softmax, layernorm: several nests over the same rows): fuse the row
 *    loops, run rows in parallel, vectorize every inner loop (reductions through
 *    rfactor);
 *  - elementwise: vectorize the innermost loop, parallel outermost.
 *
 * Candidate sets are chosen to make static pruning cheap: tile sizes that divide
 * the bound extents (guarded tails only when nothing divides), vector lengths that
 * are whole numbers of SIMD registers.  A statement refused on the default choice
 * is dropped from the template (and said in the origin), so a template always
 * applies at its defaults; other choices may still be refused and are pruned. */
#include <stdlib.h>
#include <string.h>

#include "../passes/passes.h"
#include "../passes/xform.h"
#include "tune.h"

int tune_vector_lanes(const char *target, DType t)
{
    int bytes = 32; /* AVX2 and the default */
    if (target && strstr(target, "avx512"))
        bytes = 64;
    else if (!target || !strcmp(target, "host") || !strcmp(target, "x86_64"))
        bytes = rt_cpu_has("avx512f") ? 64 : rt_cpu_has("avx") ? 32 : 16;
    else if (!strncmp(target, "aarch64", 7) || !strncmp(target, "riscv64", 7))
        bytes = 16;
    int e = dtype_bytes(t);
    return e > 0 ? bytes / e : 8;
}

/* ---- reading the nest ---- */

typedef struct Nest {
    Node *top;
    Node *loops[16];   /* the chain of loops from the top, outermost first */
    int64_t ext[16];
    int nloops;
    Node *red;         /* the reduction statement (op != =), or NULL */
    int nspatial;      /* loops before the first reduction loop */
} Nest;


static Node *find_reduction(Node *n)
{
    if (n->kind == N_STMT)
        return n->u.stmt.op != SOP_ASSIGN ? n : NULL;
    NodeList *b = ir_body(n);
    for (int i = 0; b && i < b->n; i++) {
        Node *r = find_reduction(b->v[i]);
        if (r)
            return r;
    }
    return NULL;
}

static bool read_nest(const Kernel *k, Node *top, Nest *n)
{
    memset(n, 0, sizeof *n);
    n->top = top;
    n->red = find_reduction(top);
    /* Follow loops down: through a loop's last loop child (the reduction loop sits
     * after the initialisation), stopping at statements and guards. */
    Node *l = top;
    while (l && l->kind == N_LOOP && n->nloops < 16) {
        int64_t lo = 0, hi = 0;
        if (!ir_eval_size(k, l->u.loop.hi, &hi) || !ir_eval_size(k, l->u.loop.lo, &lo))
            return false;
        n->loops[n->nloops] = l;
        n->ext[n->nloops++] = hi - lo;
        Node *next = NULL;
        for (int i = l->u.loop.body.n - 1; i >= 0; i--)
            if (l->u.loop.body.v[i]->kind == N_LOOP) {
                next = l->u.loop.body.v[i];
                break;
            }
        l = next;
    }
    n->nspatial = n->nloops;
    if (n->red)
        for (int i = 0; i < n->nloops; i++) {
            bool in_idx = false;
            for (int d = 0; d < n->red->u.stmt.buf->rank; d++)
                in_idx |= ir_expr_uses_var(n->red->u.stmt.idx[d], n->loops[i]->u.loop.var);
            if (!in_idx) {
                n->nspatial = i;
                break;
            }
        }
    return n->nloops > 0;
}

static const char *lname(const Nest *n, int i)
{
    return n->loops[i]->u.loop.var->name;
}

/* A parameter name from a loop name: `acc.i` -> `tile_acc_i`. */
static void pname(StrBuf *b, const char *prefix, const char *loop)
{
    sb_puts(b, prefix);
    for (const char *p = loop; *p; p++)
        sb_putc(b, *p == '.' ? '_' : *p);
}

/* Tile sizes for an extent: powers of two from lo to hi that divide it (plus the
 * extent itself when it is small); when none divides, the plain powers of two
 * (their tails are guarded). */
static int tile_cands(int64_t ext, int lo, int hi, int64_t *out)
{
    int n = 0;
    for (int t = lo; t <= hi; t *= 2)
        if (t < ext && ext % t == 0)
            out[n++] = t;
    if (ext <= hi && n < 8)
        out[n++] = ext;
    if (n == 0)
        for (int t = lo; t <= hi && t < ext; t *= 2)
            out[n++] = t;
    return n;
}

static void put_param(StrBuf *b, const char *name, const int64_t *v, int n)
{
    sb_printf(b, "param %s in [", name);
    for (int i = 0; i < n; i++)
        sb_printf(b, "%s%lld", i ? ", " : "", (long long)v[i]);
    sb_puts(b, "]\n");
}

/* Vector lengths for an extent: 1, 2 and 4 SIMD registers that divide it. */
static int vec_cands(int64_t ext, int lanes, int64_t *out)
{
    int n = 0;
    for (int m = 1; m <= 4; m *= 2)
        if (ext % (lanes * m) == 0)
            out[n++] = lanes * m;
    return n;
}

/* ---- templates ---- */

/* The load in the reduction's value that depends on the column loop b but not on
 * the row loop a: the operand whose panel is reused across rows (GEMM's B). */
static const Buffer *panel_operand(const Expr *e, const Var *a, const Var *b)
{
    if (!e)
        return NULL;
    if (e->kind == IE_LOAD) {
        bool ua = false, ub = false;
        for (int d = 0; d < e->u.load.buf->rank; d++) {
            ua |= ir_expr_uses_var(e->u.load.idx[d], a);
            ub |= ir_expr_uses_var(e->u.load.idx[d], b);
        }
        return ub && !ua && e->u.load.buf->kind == BUF_IN ? e->u.load.buf : NULL;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++) {
        const Buffer *r = panel_operand(e->args[i], a, b);
        if (r)
            return r;
    }
    return NULL;
}

static void sb_reset(StrBuf *b)
{
    b->len = 0;
    if (b->s)
        b->s[0] = 0;
}

/* Contraction nest, register-blocked micro-kernel (variants 0: with the panel
 * operand packed, 1: without):
 *   distribute(b) reorder(R.., b1)   the initialisation leaves; b1 moves inside the
 *   distribute(a)                    reduction loops, then a1 leaves the init's a
 *   split a1 by MR, b1 by NR, the last reduction loop by KC (long ones only)
 *   reorder(ko, b1o, a1o, R.., ki, a1i, b1i)
 *   cache(PANEL, b1o)                a KC x NR panel of B, packed once per b1o
 *   cache(OUT, a1o)                  the MR x NR tile of C: registers after unrolling
 *   unroll(a1i) vectorize(b1i) parallel(one of the outer loops)
 * Variant 2 is the fallback without distribute: tiles of dot products, the
 * reduction vectorized through rfactor. */
static bool contraction_text(const Nest *n, int variant, int lanes, int threads, StrBuf *b)
{
    if (n->nspatial < 2 || !n->red || n->nspatial == n->nloops)
        return false;
    int ia = n->nspatial - 2, ib = n->nspatial - 1, ir = n->nloops - 1;
    const char *a = lname(n, ia), *bn = lname(n, ib), *r = lname(n, ir);
    const Var *va = n->loops[ia]->u.loop.var, *vb = n->loops[ib]->u.loop.var;
    int64_t cm[8], cn[8], ck[8];
    int nm = 0, nn = 0, nk = 0;
    StrBuf pm = {0}, pn = {0}, pk = {0}, pp = {0}, pc = {0};
    pname(&pm, "mr_", a);
    pname(&pn, "nr_", bn);
    pname(&pk, "kc_", r);
    pname(&pp, "par_", bn);
    if (variant == 2) {
        /* dot-product tiles */
        nm = tile_cands(n->ext[ia], 2, 64, cm);
        nn = tile_cands(n->ext[ib], 4, 256, cn);
        nk = n->ext[ir] >= lanes ? vec_cands(n->ext[ir], lanes, ck) : 0;
        put_param(b, pm.s, cm, nm);
        put_param(b, pn.s, cn, nn);
        sb_printf(b, "tile(%s, %s, %s, %s)\n", a, bn, pm.s, pn.s);
        if (nk) {
            put_param(b, pk.s, ck, nk);
            sb_printf(b, "split(%s, %s)\nrfactor(%si)\nvectorize(%si)\n", r, pk.s, r, r);
        }
        for (int i = 0; i < ia; i++)
            if (n->ext[i] >= threads) {
                sb_printf(&pc, "%s, ", lname(n, i));
                break;
            }
        sb_printf(&pc, "%so", a);
        sb_printf(b, "param %s in [%s]\nparallel(%s)\n", pp.s, pc.s, pp.s);
        goto out;
    }
    const Buffer *panel = panel_operand(n->red->u.stmt.value, va, vb);
    /* variant 4: variant 0 with the MC blocks outermost and parallel (one fork per
     * run, each thread packing its own B panels), as BLIS parallelises its ic loop */
    bool rows_outer = variant == 4;
    if ((variant == 0 || rows_outer) && !panel)
        goto none;
    if (rows_outer && n->ext[ia] < 256)
        goto none;
    /* MR: rows of the register tile; NR: whole SIMD registers of columns */
    for (int m = 2; m <= 8; m++)
        if (m != 5 && m != 7 && n->ext[ia] % m == 0 && m < n->ext[ia])
            cm[nm++] = m;
    if (nm == 0) {
        nm = 0;
        for (int m = 2; m <= 8; m *= 2)
            cm[nm++] = m;
    }
    for (int m = 1; m <= 4; m++)
        if (n->ext[ib] % (lanes * m) == 0 && m != 3)
            cn[nn++] = lanes * m;
    if (!nn)
        cn[nn++] = lanes;
    /* KC: the reduction panel; only long reductions are split */
    bool split_k = n->ext[ir] >= 128;
    if (split_k) {
        for (int k = 64; k <= 512; k *= 2)
            if (n->ext[ir] % k == 0 && k < n->ext[ir])
                ck[nk++] = k;
        if (n->ext[ir] <= 512)
            ck[nk++] = n->ext[ir];
        split_k = nk > 0;
    }
    const char *out = n->red->u.stmt.buf->name;
    const char *outer = NULL; /* an output loop outside the tile with work for every thread */
    for (int i = 0; i < ia && !outer; i++)
        if (n->ext[i] >= threads)
            outer = lname(n, i);
    if (variant == 3) {
        /* Short reductions: the initialisation stays with each block of MR rows,
         * so C is written once from cache, not zeroed in a pass of its own. */
        if (n->ext[ir] > 256)
            goto none;
        sb_printf(b, "distribute(%s)\nreorder(", bn);
        for (int i = n->nspatial; i < n->nloops; i++)
            sb_printf(b, "%s, ", lname(n, i));
        sb_printf(b, "%s1)\n", bn);
        put_param(b, pm.s, cm, nm);
        put_param(b, pn.s, cn, nn);
        sb_printf(b, "split(%s, %s)\ndistribute(%si)\nsplit(%s1, %s)\nreorder(%s1o, ", a, pm.s, a, bn, pn.s, bn);
        for (int i = n->nspatial; i < n->nloops; i++)
            sb_printf(b, "%s, ", lname(n, i));
        sb_printf(b, "%si1, %s1i)\n", a, bn);
        sb_printf(b, "cache(%s, %s1o)\nunroll(%si1)\nvectorize(%s1i)\n", out, bn, a, bn);
        for (int i = n->nspatial; i < n->nloops - 1; i++)
            if (n->ext[i] <= 8)
                sb_printf(b, "unroll(%s)\n", lname(n, i));
        if (outer)
            sb_printf(&pc, "%s, ", outer);
        sb_printf(&pc, "%so", a);
        sb_printf(b, "param %s in [%s]\nparallel(%s)\n", pp.s, pc.s, pp.s);
        goto out;
    }
    sb_printf(b, "distribute(%s)\nreorder(", bn);
    for (int i = n->nspatial; i < n->nloops; i++)
        sb_printf(b, "%s, ", lname(n, i));
    sb_printf(b, "%s1)\ndistribute(%s)\n", bn, a);
    put_param(b, pm.s, cm, nm);
    put_param(b, pn.s, cn, nn);
    /* Rows that no MR divides (M = 127): the tail either guarded inside the
     * micro-kernel or peeled into a loop of its own; the tuner picks. */
    bool tail = false;
    for (int i = 0; i < nm; i++)
        tail |= n->ext[ia] % cm[i] != 0;
    if (tail) {
        StrBuf pt = {0};
        pname(&pt, "tail_", a);
        sb_printf(b, "param %s in [guard, peel]\nsplit(%s1, %s, tail=%s)\n", pt.s, a, pm.s, pt.s);
        sb_free(&pt);
    } else {
        sb_printf(b, "split(%s1, %s)\n", a, pm.s);
    }
    sb_printf(b, "split(%s1, %s)\n", bn, pn.s);
    if (split_k) {
        put_param(b, pk.s, ck, nk);
        sb_printf(b, "split(%s, %s)\n", r, pk.s);
    }
    /* MC: blocks of micro-tiles whose A rows stay in L2 while the B panel is
     * reused across them (many rows only). */
    bool mc = n->ext[ia] >= 256;
    StrBuf rows = {0};
    if (mc) {
        StrBuf pb = {0};
        pname(&pb, "mb_", a);
        int64_t cb[4] = {8, 16, 32, 64};
        put_param(b, pb.s, cb, 4);
        sb_printf(b, "split(%s1o, %s)\n", a, pb.s);
        sb_free(&pb);
        sb_printf(&rows, "%s1oi", a);
    } else {
        sb_printf(&rows, "%s1o", a);
    }
    sb_puts(b, "reorder(");
    if (rows_outer)
        sb_printf(b, "%s1oo, ", a);
    if (split_k)
        sb_printf(b, "%so, ", r);
    if (mc && !rows_outer)
        sb_printf(b, "%s1oo, ", a);
    sb_printf(b, "%s1o, %s, ", bn, rows.s);
    for (int i = n->nspatial; i < n->nloops - 1; i++)
        sb_printf(b, "%s, ", lname(n, i));
    sb_printf(b, "%s%s, %s1i, %s1i)\n", r, split_k ? "i" : "", a, bn);
    if (variant == 0 || rows_outer)
        sb_printf(b, "cache(%s, %s1o)\n", panel->name, bn);
    sb_printf(b, "cache(%s, %s)\nunroll(%s1i)\nvectorize(%s1i)\n", out, rows.s, a, bn);
    /* small window loops of a convolution: unrolled */
    for (int i = n->nspatial; i < n->nloops - 1; i++)
        if (n->ext[i] <= 8)
            sb_printf(b, "unroll(%s)\n", lname(n, i));
    /* The parallel loop: an outer output loop (batch, image, filter) that has work
     * for every thread, the column blocks, or the row blocks. */
    if (outer)
        sb_printf(&pc, "%s, ", outer);
    if (rows_outer)
        sb_printf(&pc, "%s1oo", a);
    else
        sb_printf(&pc, "%s1o, %s", bn, rows.s);
    sb_printf(b, "param %s in [%s]\nparallel(%s)\n", pp.s, pc.s, pp.s);
    sb_free(&rows);
out:
    sb_free(&pm), sb_free(&pn), sb_free(&pk), sb_free(&pp), sb_free(&pc);
    return true;
none:
    sb_free(&pm), sb_free(&pn), sb_free(&pk), sb_free(&pp), sb_free(&pc);
    return false;
}

/* Contraction on a GPU: a register-tiled SIMT kernel.  The initialisation is
 * distributed away as on the CPU; a block computes TI x TJ outputs, each thread an
 * RI x RJ tile held in registers (cache(C, j1io) with unrolled loops), the
 * reduction runs serially in the thread.  The grid and block shapes are the
 * parameters; the CUDA launch table prunes what the target cannot launch.  An outer
 * output loop (batch) goes to block.z. */
static bool gpu_contraction_text(const Nest *n, StrBuf *b)
{
    if (n->nspatial < 2 || !n->red || n->nspatial == n->nloops)
        return false;
    int ia = n->nspatial - 2, ib = n->nspatial - 1;
    const char *a = lname(n, ia), *bn = lname(n, ib);
    sb_printf(b, "distribute(%s)\nreorder(", bn);
    for (int i = n->nspatial; i < n->nloops; i++)
        sb_printf(b, "%s, ", lname(n, i));
    sb_printf(b, "%s1)\ndistribute(%s)\n", bn, a);
    int64_t ct[4], cr[4], cj[4];
    int nt = 0, nr = 0, nj = 0;
    for (int t = 32; t <= 128; t *= 2)
        if (n->ext[ia] % t == 0 || n->ext[ib] % t == 0)
            ct[nt++] = t;
    if (!nt)
        ct[nt++] = 32;
    for (int r = 2; r <= 8; r *= 2)
        cr[nr++] = r;
    for (int r = 1; r <= 4; r *= 2)
        cj[nj++] = r;
    put_param(b, "ti", ct, nt);
    put_param(b, "tj", ct, nt);
    put_param(b, "ri", cr, nr);
    put_param(b, "rj", cj, nj);
    sb_printf(b, "split(%s1, ti)\nsplit(%s1, tj)\nsplit(%s1i, ri)\nsplit(%s1i, rj)\n", a, bn, a, bn);
    sb_printf(b, "reorder(%s1o, %s1o, %s1io, %s1io, ", a, bn, a, bn);
    for (int i = n->nspatial; i < n->nloops; i++)
        sb_printf(b, "%s, ", lname(n, i));
    sb_printf(b, "%s1ii, %s1ii)\n", a, bn);
    sb_printf(b, "cache(%s, %s1io)\nunroll(%s1ii)\nunroll(%s1ii)\n", n->red->u.stmt.buf->name, bn, a, bn);
    if (ia == 1)
        sb_printf(b, "bind(%s, block.z)\n", lname(n, 0));
    sb_printf(b, "bind(%s1o, block.y)\nbind(%s1o, block.x)\nbind(%s1io, thread.y)\nbind(%s1io, thread.x)\n", a, bn,
              a, bn);
    return true;
}

/* Contraction on a GPU, staged through shared memory: the structure of the
 * hand-written `tiled` GPU variant of stdlib/gemm.pdl made a template.  A block
 * computes a TB x TB tile of C from K slices of 16 staged in shared memory (A
 * padded against bank conflicts), each of its threads a TR x TR register tile;
 * B's shared reads are vectors of VS.  The thread grid is TB/TR square; choices
 * whose copy loops do not match it run guarded.  Needs the rows and columns to be
 * multiples of TB and the reduction of 16 (distribute refuses guarded bodies).
 * kstep 32 (pipelined only) is stdlib gemm's `tiled32`: K slices of 32, the copy
 * mapping of a 128 x 32 A tile and a 32 x 128 B tile, and the k unroll as a
 * parameter; it needs the reduction to be a multiple of 32. */
static bool gpu_shared_text(const Nest *n, bool pipelined, int kstep, StrBuf *b)
{
    if (n->nspatial < 2 || !n->red || n->nloops != n->nspatial + 1)
        return false;
    int ia = n->nspatial - 2, ib = n->nspatial - 1, ir = n->nloops - 1;
    const char *a = lname(n, ia), *bn = lname(n, ib), *r = lname(n, ir);
    const Var *va = n->loops[ia]->u.loop.var, *vb = n->loops[ib]->u.loop.var;
    const Buffer *pa = panel_operand(n->red->u.stmt.value, vb, va), *pb = panel_operand(n->red->u.stmt.value, va, vb);
    if (kstep != 16 && !(pipelined && kstep == 32))
        return false;
    if (!pa || !pb || n->ext[ir] % kstep)
        return false;
    /* The pipelined variant: 16-byte cp.async copies (a warp's lanes on consecutive
     * chunks of a row: A's 64-byte rows 4 rows x 4 chunks at a time through collapse,
     * B's rows 16 chunks at a time), A padded by 4 floats (rows stay 16-byte aligned),
     * a ring of `st` stages.  Its copy mapping fits the 16 x 16 thread grid of a 128 x
     * 128 tile with 8 x 8 per thread, so those two are fixed; stdlib gemm's `tiled` is
     * this schedule at vs = 4, st = 2.  With a K step of 32 (`tiled32` at vs = 4,
     * st = 2, ku = 16): A's 128-byte rows 2 rows x 8 chunks at a time, B's 32 rows
     * as 16 thread rows of 2, 4 chunks per thread each; stages 2 and 3 (34 816 B of
     * shared memory a stage: 69 632 B or 104 448 B, two blocks per SM on sm_80 and
     * sm_90; the launch table prunes 3 stages where a block may have less, sm_86 and
     * sm_89's 99 KB), and the 32-deep k loop unrolled 16 at a time (128 registers
     * with CUDA 12/13's ptxas for sm_90) or whole (167: one block per SM). */
    if (pipelined && (pa->dtype != DT_F32 || pb->dtype != DT_F32))
        return false;
    const char *out = n->red->u.stmt.buf->name;
    const char *tb = pipelined ? "128" : "tb", *tr = pipelined ? "8" : "tr";
    bool k32 = kstep == 32;
    if (pipelined && k32)
        sb_puts(b, "param vs in [4, 2]\nparam st in [2, 3]\nparam ku in [16, 32]\n");
    else if (pipelined)
        sb_puts(b, "param vs in [4, 2]\nparam st in [2, 3, 4]\n");
    else
        sb_puts(b, "param tb in [128, 64]\nparam tr in [8, 4]\nparam vs in [4, 2]\n");
    sb_printf(b, "tile(%s, %s, %s, %s, g_io, g_jo, g_ii, g_ji)\ncache(%s, g_jo, name=g_acc)\n", a, bn, tb, tb, out);
    sb_printf(b, "distribute(g_ji)\ndistribute(g_ii)\n"
                 "split(g_acc_c0, %s, g_cy, g_cr)\nsplit(g_acc_c1, %s, g_cx, g_cs)\nreorder(g_cy, g_cx, g_cr, g_cs)\n"
                 "split(g_ii, %s, g_iy, g_ir)\nsplit(g_ji, %s, g_ix, g_is)\nreorder(g_iy, g_ix, g_ir, g_is)\n"
                 "split(g_ii1, %s, g_ty, g_r)\nsplit(g_ji1, %s, g_tx, g_s)\n",
              tr, tr, tr, tr, tr, tr);
    sb_printf(b, "split(%s, %d, g_ko, g_ki)\nreorder(g_ko, g_ty, g_tx, g_ki, g_r, g_s)\n", r, kstep);
    sb_printf(b, "cache(%s, g_ko, mem=shared, name=g_As)\ncache(%s, g_ko, mem=shared, name=g_Bs)\n", pa->name,
              pb->name);
    if (pipelined && k32)
        sb_puts(b, "padding(g_As, 4)\nsplit(g_As_c1, 4, g_ac, g_av)\nsplit(g_As_c0, 2, g_ar, g_ax)\n"
                   "collapse(g_ax, g_ac, g_af)\nsplit(g_ar, 4, g_ay, g_au)\nreorder(g_ay, g_af, g_au)\n"
                   "split(g_Bs_c1, 4, g_bc, g_bv)\nsplit(g_bc, 16, g_bu, g_bx)\nsplit(g_Bs_c0, 2, g_by, g_br)\n"
                   "reorder(g_by, g_bx, g_br, g_bu)\n");
    else if (pipelined)
        sb_puts(b, "padding(g_As, 4)\nsplit(g_As_c1, 4, g_ac, g_av)\nsplit(g_As_c0, 4, g_ar, g_ax)\n"
                   "collapse(g_ax, g_ac, g_af)\nsplit(g_ar, 2, g_ay, g_au)\nreorder(g_ay, g_af, g_au)\n"
                   "split(g_Bs_c1, 4, g_bc, g_bv)\nsplit(g_bc, 16, g_bu, g_bx)\nreorder(g_Bs_c0, g_bx, g_bu)\n");
    else
        sb_printf(b, "padding(g_As, 1)\nsplit(g_As_c0, %s, g_ay, g_au)\nreorder(g_ay, g_As_c1, g_au)\n"
                     "split(g_Bs_c1, 16, g_bu, g_bx)\nreorder(g_Bs_c0, g_bx, g_bu)\n",
                  tr);
    sb_printf(b, "split(g_s, vs, g_s2, g_s4)\n"
                 "split(g_acc_c01, %s, g_oy, g_or)\nsplit(g_acc_c11, %s, g_ox, g_os)\nreorder(g_oy, g_ox, g_or, g_os)\n",
              tr, tr);
    if (ia == 1)
        sb_printf(b, "bind(%s, block.z)\n", lname(n, 0));
    sb_printf(b, "bind(g_io, block.y)\nbind(g_jo, block.x)\nbind(g_cy, thread.y)\nbind(g_cx, thread.x)\n"
                 "bind(g_iy, thread.y)\nbind(g_ix, thread.x)\nbind(%s, thread.y)\nbind(g_bx, thread.x)\n"
                 "bind(g_ay, thread.y)\nbind(%s, thread.x)\nbind(g_ty, thread.y)\nbind(g_tx, thread.x)\n"
                 "bind(g_oy, thread.y)\nbind(g_ox, thread.x)\n"
                 "unroll(g_cr)\nunroll(g_cs)\nunroll(g_ir)\nunroll(g_is)\nunroll(g_bu)\n%sunroll(g_au)\n%s"
                 "unroll(g_r)\nunroll(g_s2)\nvectorize(g_s4)\nunroll(g_or)\nunroll(g_os)\n",
              k32 ? "g_by" : "g_Bs_c0", pipelined ? "g_af" : "g_As_c1", k32 ? "unroll(g_br)\n" : "",
              k32 ? "split(g_ki, ku, g_kq, g_kr)\nunroll(g_kr)\n" : "unroll(g_ki)\n");
    if (pipelined)
        sb_puts(b, "vectorize(g_av)\nvectorize(g_bv)\npipeline(g_ko, st)\n");
    return true;
}

/* Tensor cores on a GPU (sm_80+): the structure of the hand-written `tc` variant of
 * gemm in stdlib/gemm.pdl (scripts/gen_tc_schedule.py writes the same text) made a
 * family of templates, one per block tile BM x BN x BK and warp tile WM x WN, with
 * the pipeline depth as the parameter.  mma.sync m16n8k16 products in the
 * accumulator fragment layout, K staged through shared memory (rows padded by 8
 * elements against ldmatrix bank conflicts) with 128-bit cp.async; the staging
 * copies collapse (row, 16-byte chunk) into one thread.x loop so a warp reads whole
 * rows.  For 2-D products of f16 or bf16 operands (A[i, k], B[k, j]) whose sizes
 * the tiles divide; `mma` refuses anything else (a transposed operand, f32), and a
 * template that loses a statement is dropped. */
typedef struct TcShape {
    int bm, bn, bk, wm, wn;
    const char *stages; /* the candidate set of the pipeline depth */
} TcShape;

static const TcShape tc_shapes[] = {
    {128, 128, 32, 64, 64, "4, 3, 5"}, /* stdlib gemm's `tc`: 4 warps, 2 blocks per SM */
    {128, 128, 32, 64, 32, "3, 4"},    /* 8 warps */
    {128, 256, 32, 64, 64, "4, 3"},    /* 8 warps, wider */
    {128, 128, 64, 64, 64, "2, 3"},    /* K step 64 */
    {64, 128, 32, 64, 64, "4, 3"},     /* smaller grids: 2 warps */
    {64, 64, 32, 32, 32, "3, 4"},      /* small problems: 4 warps of 32 x 32 */
};

static bool gpu_tc_text(const Nest *n, const TcShape *t, StrBuf *b)
{
    if (n->nspatial != 2 || !n->red || n->nloops != 3)
        return false;
    const char *I = lname(n, 0), *J = lname(n, 1), *Kk = lname(n, 2);
    const Var *vi = n->loops[0]->u.loop.var, *vj = n->loops[1]->u.loop.var;
    const Buffer *pa = panel_operand(n->red->u.stmt.value, vj, vi), *pb = panel_operand(n->red->u.stmt.value, vi, vj);
    const Buffer *out = n->red->u.stmt.buf;
    if (!pa || !pb || out->dtype != DT_F32 || pa->dtype != pb->dtype || (pa->dtype != DT_F16 && pa->dtype != DT_BF16))
        return false;
    if (n->ext[0] % t->bm || n->ext[1] % t->bn || n->ext[2] % t->bk)
        return false;
    int wz = t->bm / t->wm, wy = t->bn / t->wn, nw = wz * wy;
    int ca = t->bk / 8, ra = 32 / ca, gra = t->bm / ra, cb = t->bn / 8;
    if (t->wm % 16 || t->wn % 8 || t->bk % 16 || 32 % ca || gra % nw)
        return false;
    sb_printf(b, "param st in [%s]\n", t->stages);
    sb_printf(b, "tile(%s, %s, %d, %d, io, jo, ii, ji)\ncache(%s, jo, name=acc)\ndistribute(ji)\ndistribute(ii)\n", I,
              J, t->bm, t->bn, out->name);
    sb_printf(b, "split(acc_c0, %d, cz, cr)\nsplit(acc_c1, %d, cy, cc)\nreorder(cz, cy, cr, cc)\n", t->wm, t->wn);
    sb_printf(b, "split(ii, %d, iz, ir)\nsplit(ji, %d, iy, ic)\nreorder(iz, iy, ir, ic)\n", t->wm, t->wn);
    sb_printf(b, "split(ii1, %d, wz, wm)\nsplit(wm, 16, mi, mm)\nsplit(ji1, %d, wy, wn)\nsplit(wn, 8, nj, nn)\n", t->wm,
              t->wn);
    sb_printf(b, "split(%s, %d, ko, kt)\nsplit(kt, 16, ks, kk)\nreorder(ko, wz, wy, ks, mi, nj, mm, nn)\n", Kk, t->bk);
    sb_printf(b, "cache(%s, ko, mem=shared, name=As)\ncache(%s, ko, mem=shared, name=Bs)\n", pa->name, pb->name);
    sb_puts(b, "padding(As, 8)\npadding(Bs, 8)\n");
    /* A tile BM x BK: a warp's 32 lanes take RA rows x (BK / 8) 16-byte chunks; the
     * thread loops are the most significant terms of the row, which is what lets
     * the dependence test prove the warps' rows disjoint. */
    sb_printf(b, "split(As_c1, 8, ac, av)\nsplit(As_c0, %d, ar, ax)\ncollapse(ax, ac, af)\n", ra);
    sb_printf(b, "split(ar, %d, az, ara)\nsplit(ara, %d, ay, au)\nreorder(az, ay, af, au, av)\n", gra / wz, gra / nw);
    /* B tile BK x BN: RB rows x (BN / 8) chunks per warp instruction */
    sb_puts(b, "split(Bs_c1, 8, bc, bv)\n");
    const char *bunroll;
    if (cb >= 32) {
        if (cb % 32 || t->bk % nw)
            return false;
        sb_printf(b, "split(bc, 32, bcu, bf)\nsplit(Bs_c0, %d, bz, bra)\nsplit(bra, %d, by, bu)\n"
                     "reorder(bz, by, bf, bu, bcu, bv)\n",
                  t->bk / wz, t->bk / nw);
        bunroll = "unroll(bu)\nunroll(bcu)\n";
    } else {
        int rb = 32 / cb, grb = t->bk / rb;
        if (32 % cb || grb % nw)
            return false;
        sb_printf(b, "split(Bs_c0, %d, br, bx)\ncollapse(bx, bc, bf)\nsplit(br, %d, bz, bra)\nsplit(bra, %d, by, bu)\n"
                     "reorder(bz, by, bf, bu, bv)\n",
                  rb, grb / wz, grb / nw);
        bunroll = "unroll(bu)\n";
    }
    sb_printf(b, "split(acc_c01, %d, oz, or)\nsplit(acc_c11, %d, oy, oc)\nreorder(oz, oy, or, oc)\n", t->wm, t->wn);
    sb_puts(b, "mma(mm, nn, kk)\n"
               "bind(io, block.y)\nbind(jo, block.x)\nbind(cz, thread.z)\nbind(cy, thread.y)\n"
               "bind(iz, thread.z)\nbind(iy, thread.y)\nbind(wz, thread.z)\nbind(wy, thread.y)\n"
               "bind(az, thread.z)\nbind(ay, thread.y)\nbind(af, thread.x)\n"
               "bind(bz, thread.z)\nbind(by, thread.y)\nbind(bf, thread.x)\n"
               "bind(oz, thread.z)\nbind(oy, thread.y)\n"
               "unroll(mi)\nunroll(nj)\nunroll(au)\n");
    sb_puts(b, bunroll);
    sb_puts(b, "vectorize(av)\nvectorize(bv)\npipeline(ko, st)\n");
    return true;
}

/* Hopper warpgroup products (sm_90a only): the structure of stdlib gemm's `wg`
 * variant made templates.  Two warpgroups (thread.x 128, thread.y 2) share a
 * 128 x BN block tile, each a 64 x BN accumulator fed by one wgmma m64nBNk16 per 16
 * of the 64-deep K step, both operands read from 128-byte swizzled shared memory
 * filled by 16-byte cp.async in a ring of `st` stages; inflight=1 lets one group of
 * products run on while the next stage's are issued. */
typedef struct WgShape {
    int bn;
    const char *stages; /* the candidate set of the pipeline depth */
    int inflight;
} WgShape;

static const WgShape wg_shapes[] = {
    {256, "4, 3", 1}, /* stdlib gemm's `wg`: 0.89-0.91x cuBLAS on an H200 */
    {128, "3, 4", 0}, /* two blocks per SM at 3 stages */
    {128, "5, 4", 1},
};

static bool gpu_wg_text(const Nest *n, const WgShape *t, StrBuf *b)
{
    if (n->nspatial != 2 || !n->red || n->nloops != 3)
        return false;
    const char *I = lname(n, 0), *J = lname(n, 1), *Kk = lname(n, 2);
    const Var *vi = n->loops[0]->u.loop.var, *vj = n->loops[1]->u.loop.var;
    const Buffer *pa = panel_operand(n->red->u.stmt.value, vj, vi), *pb = panel_operand(n->red->u.stmt.value, vi, vj);
    const Buffer *out = n->red->u.stmt.buf;
    if (!pa || !pb || out->dtype != DT_F32 || pa->dtype != pb->dtype || (pa->dtype != DT_F16 && pa->dtype != DT_BF16))
        return false;
    if (n->ext[0] % 128 || n->ext[1] % t->bn || n->ext[2] % 64)
        return false;
    /* B's 64 x BN tile: 128 threads cover RPP rows of BN / 8 chunks at a time */
    int rpp = 1024 / t->bn, passes = 64 / rpp;
    sb_printf(b, "param st in [%s]\n", t->stages);
    sb_printf(b, "tile(%s, %s, 128, %d, io, jo, ii, ji)\ncache(%s, jo, name=acc)\ndistribute(ji)\ndistribute(ii)\n", I,
              J, t->bn, out->name);
    sb_printf(b, "split(acc_c0, 64, cy, cr)\nsplit(ii, 64, iy, ir)\nsplit(ii1, 64, wy, wm)\n"
                 "split(%s, 64, ko, kt)\nsplit(kt, 16, ks, kk)\nreorder(ko, wy, ks, wm, ji1, kk)\n", Kk);
    sb_printf(b, "cache(%s, ko, mem=shared, name=As)\ncache(%s, ko, mem=shared, name=Bs)\n", pa->name, pb->name);
    sb_puts(b, "split(As_c1, 8, ac, av)\nsplit(As_c0, 16, ar, ax)\ncollapse(ax, ac, af)\nsplit(ar, 4, ay, au)\n"
               "reorder(ay, af, au, av)\n");
    sb_printf(b, "split(Bs_c1, 8, bc, bv)\nsplit(Bs_c0, %d, br, bx)\ncollapse(bx, bc, bf)\nsplit(br, %d, by, bu)\n"
                 "reorder(by, bf, bu, bv)\n", rpp, passes / 2);
    sb_puts(b, "split(acc_c01, 64, oy, or)\nwgmma(wm, ji1, kk)\n"
               "bind(io, block.y)\nbind(jo, block.x)\nbind(cy, thread.y)\nbind(iy, thread.y)\nbind(wy, thread.y)\n"
               "bind(ay, thread.y)\nbind(af, thread.x)\nbind(by, thread.y)\nbind(bf, thread.x)\nbind(oy, thread.y)\n"
               "unroll(ks)\nunroll(au)\nunroll(bu)\nvectorize(av)\nvectorize(bv)\n");
    sb_printf(b, "pipeline(ko, st%s)\n", t->inflight ? ", inflight=1" : "");
    return true;
}

/* The loop to run on threads: the outermost with an iteration for every thread
 * (a batch of one is no parallelism), among the first `below` loops of the chain. */
static int par_loop(const Nest *n, int below)
{
    int threads = rt_cpu_count();
    for (int i = 0; i < below && i < n->nloops; i++)
        if (n->ext[i] >= threads)
            return i;
    return 0;
}

/* Elementwise nest: vectorize the innermost loop, parallel outermost. */
static void elementwise_text(const Nest *n, int lanes, StrBuf *b)
{
    int in = n->nloops - 1;
    const char *l = lname(n, in);
    int64_t cv[4];
    int nv = vec_cands(n->ext[in], lanes, cv);
    StrBuf tv = {0};
    pname(&tv, "vec_", l);
    if (nv) {
        put_param(b, tv.s, cv, nv);
        sb_printf(b, "split(%s, %s)\nvectorize(%si)\n", l, tv.s, l);
    }
    if (n->nloops > 1)
        sb_printf(b, "parallel(%s)\n", lname(n, par_loop(n, n->nloops - 1)));
    else if (nv)
        sb_printf(b, "parallel(%so)\n", l);
    sb_free(&tv);
}

/* Row-wise kernels: every nest's outer loop runs over the same rows. */
static bool rows_text(const Kernel *k, Nest *ns, int nn, int lanes, StrBuf *b)
{
    /* one nest qualifies when it reduces along its rows (a matrix-vector product) */
    if (nn < 2 && !(nn == 1 && ns[0].red))
        return false;
    for (int i = 0; i < nn; i++)
        if (ns[i].ext[0] != ns[0].ext[0] || ns[i].nloops != 2)
            return false;
    const char *row = lname(&ns[0], 0);
    for (int i = 1; i < nn; i++)
        sb_printf(b, "fuse(%s, %s)\n", row, lname(&ns[i], 0));
    /* rows for every thread, else the rows stay serial (a dot product has one) */
    if (ns[0].ext[0] >= rt_cpu_count())
        sb_printf(b, "parallel(%s)\n", row);
    int64_t cv[4];
    int nv = vec_cands(ns[0].ext[1], lanes, cv);
    if (!nv)
        return true;
    put_param(b, "vec_row", cv, nv);
    for (int i = 0; i < nn; i++) {
        const char *c = lname(&ns[i], 1);
        sb_printf(b, "split(%s, vec_row)\n", c);
        if (ns[i].red)
            sb_printf(b, "rfactor(%si)\n", c);
        sb_printf(b, "vectorize(%si)\n", c);
    }
    (void)k;
    return true;
}

/* ---- parsing and checking templates ---- */

static bool apply_fresh(const TuneInput *in, const AstSchedule *s, Diags *d)
{
    Kernel *k = tune_apply(in, s, NULL, 0, d);
    if (k)
        ir_free(k);
    return k != NULL;
}

/* Parses text into a schedule and keeps only the statements that apply at the
 * default choices (each checked after the ones kept before it). */
static AstSchedule *parse_checked(const TuneInput *in, const char *text, Arena *a, int *dropped, Diags *d)
{
    Source *src = arena_alloc(a, sizeof *src);
    src->path = "<autotune template>";
    src->text = arena_strdup(a, text);
    src->len = strlen(text);
    Diags pd;
    diag_init(&pd);
    AstSchedule *s = parse_schedule_text(a, src, &pd);
    if (!s || pd.nerrors) {
        diag_plain(d, DIAG_ERROR, "internal: the autotuner wrote a template it cannot parse:\n%s%s", text,
                   pd.text.s ? pd.text.s : "");
        diag_free(&pd);
        return NULL;
    }
    diag_free(&pd);
    s->kernel = in->ast->name;
    AstSchedule *out = arena_alloc(a, sizeof *out);
    *out = *s;
    out->items = arena_alloc(a, sizeof *out->items * (size_t)(s->nitems + 1));
    out->nitems = 0;
    *dropped = 0;
    for (int i = 0; i < s->nitems; i++) {
        out->items[out->nitems++] = s->items[i];
        if (s->items[i].kind == SCHED_PARAM)
            continue;
        Diags q;
        diag_init(&q);
        if (!apply_fresh(in, out, &q)) {
            out->nitems--;
            (*dropped)++;
        }
        diag_free(&q);
    }
    /* Parameters no statement uses any more would only multiply the space. */
    int w = 0;
    for (int i = 0; i < out->nitems; i++) {
        const SchedItem *it = &out->items[i];
        bool used = it->kind != SCHED_PARAM;
        for (int j = i + 1; j < out->nitems && !used; j++)
            for (int x = 0; x < out->items[j].nargs; x++)
                if (out->items[j].args[x].kind == SARG_NAME && !strcmp(out->items[j].args[x].name, it->name))
                    used = true;
        if (used)
            out->items[w++] = *it;
    }
    out->nitems = w;
    return out;
}

static void add_template(TuneSpace *sp, AstSchedule *s, const char *origin)
{
    if (sp->n == TUNE_MAX_TEMPLATES)
        return;
    TuneTemplate *t = &sp->t[sp->n++];
    t->s = s;
    t->origin = origin;
    t->nparams = schedule_params(s, t->names, t->ncands, TUNE_MAX_PARAMS);
    if (t->nparams > TUNE_MAX_PARAMS)
        t->nparams = TUNE_MAX_PARAMS;
    double size = 1;
    for (int i = 0; i < t->nparams; i++)
        size *= t->ncands[i];
    sp->size += size;
}

/* The input's schedules merged into one (they apply in order and share parameter
 * names), so the tuned result is a single block. */
static AstSchedule *merged_user(const TuneInput *in, Arena *a, int *nparams)
{
    int n = 0;
    *nparams = 0;
    for (int i = 0; i < in->nscheds; i++)
        n += in->scheds[i]->nitems;
    AstSchedule *s = arena_alloc(a, sizeof *s);
    s->kernel = in->ast->name;
    s->span = in->nscheds ? in->scheds[0]->span : in->ast->span;
    s->items = arena_alloc(a, sizeof *s->items * (size_t)(n + 1));
    for (int i = 0; i < in->nscheds; i++)
        for (int j = 0; j < in->scheds[i]->nitems; j++) {
            s->items[s->nitems++] = in->scheds[i]->items[j];
            *nparams += in->scheds[i]->items[j].kind == SCHED_PARAM;
        }
    return s;
}

/* A GPU template that is only worth having whole: the text in b is parsed and added
 * when no statement of it had to be dropped (a tile that does not divide, a
 * transformation refused).  tc: it uses tensor cores, which names the kernel class.
 * False only when parsing itself failed (an error in d). */
static bool offer_whole(const TuneInput *in, StrBuf *b, Arena *a, TuneSpace *sp, const char *origin, bool tc,
                        Diags *d)
{
    int dropped = 0;
    AstSchedule *s = parse_checked(in, b->s, a, &dropped, d);
    if (!s) {
        sb_free(b);
        return false;
    }
    if (!dropped) {
        add_template(sp, s, origin);
        if (tc)
            sp->kclass = "contraction (GPU, tensor cores)";
    }
    return true;
}

bool tune_space(const TuneInput *in, const Kernel *u, const char *target, Arena *a, TuneSpace *sp, Diags *d)
{
    memset(sp, 0, sizeof *sp);
    if (in->nscheds) {
        int np;
        AstSchedule *s = merged_user(in, a, &np);
        add_template(sp, s, "the kernel's schedule");
        sp->kclass = "as written";
        if (np)
            return true; /* a template: tuned as written, nothing added */
    }
    /* Rules. */
    DType t = DT_F32;
    for (int i = 0; i < u->nbufs; i++)
        if (u->bufs[i]->kind == BUF_OUT) {
            t = u->bufs[i]->dtype;
            break;
        }
    int lanes = tune_vector_lanes(target, t);
    int threads = rt_cpu_count();
    bool gpu = target && !strncmp(target, "sm_", 3);
    Nest ns[16];
    int nn = 0;
    for (int i = 0; i < u->body.n && nn < 16; i++)
        if (u->body.v[i]->kind == N_LOOP && read_nest(u, u->body.v[i], &ns[nn]))
            nn++;
    if (!nn) {
        if (!sp->n)
            add_template(sp, merged_user(in, a, &(int){0}), "no schedule (nothing to tune)");
        sp->kclass = "scalar";
        return true;
    }
    int ncontr = 0, nred = 0;
    for (int i = 0; i < nn; i++) {
        ncontr += ns[i].red && ns[i].nspatial >= 1 && ns[i].nloops - ns[i].nspatial >= 1 &&
                  ns[i].red->u.stmt.value->kind == IE_MUL;
        nred += ns[i].red != NULL;
    }
    StrBuf b = {0};
    int dropped = 0;
    if (gpu) {
        /* CUDA: contractions get the SIMT template; everything else keeps the code
         * generator's default mapping (one thread per output element), which the
         * empty schedule stands for. */
        sp->kclass = ncontr ? "contraction (GPU)" : "default GPU mapping";
        /* tensor-core templates first (f16 / bf16 products), each only when it
         * applies whole: Hopper's wgmma where the target has it, then mma.sync */
        bool one = nn == 1 && ncontr;
        for (size_t t = 0; one && !strcmp(target, "sm_90a") && t < sizeof wg_shapes / sizeof wg_shapes[0]; t++) {
            const WgShape *c = &wg_shapes[t];
            if (gpu_wg_text(&ns[0], c, &b) &&
                !offer_whole(in, &b, a, sp, arena_printf(a, "rules: GPU wgmma 128x%dx64%s", c->bn,
                                                         c->inflight ? ", one group in flight" : ""), true, d))
                return false;
            sb_reset(&b);
        }
        for (size_t t = 0; one && t < sizeof tc_shapes / sizeof tc_shapes[0]; t++) {
            const TcShape *c = &tc_shapes[t];
            if (gpu_tc_text(&ns[0], c, &b) &&
                !offer_whole(in, &b, a, sp, arena_printf(a, "rules: GPU tensor cores %dx%dx%d, warps %dx%d", c->bm,
                                                         c->bn, c->bk, c->wm, c->wn), true, d))
                return false;
            sb_reset(&b);
        }
        /* the shared-memory templates when they apply whole (single-nest GEMMs):
         * f32 first with 16-byte cp.async copies in a pipeline, K step 16 (stdlib gemm's
         * `tiled`) and 32 (`tiled32`), then the synchronous one with the tile
         * sizes as parameters */
        static const struct { bool pl; int ks; const char *origin; } shared_variants[3] = {
            {true, 16, "rules: GPU shared-memory tiles, cp.async pipeline"},
            {true, 32, "rules: GPU shared-memory tiles, cp.async pipeline, K step 32"},
            {false, 16, "rules: GPU shared-memory tiles"}};
        for (int vi = 0; vi < 3; vi++) {
            if (one && gpu_shared_text(&ns[0], shared_variants[vi].pl, shared_variants[vi].ks, &b) &&
                !offer_whole(in, &b, a, sp, shared_variants[vi].origin, false, d))
                return false;
            sb_reset(&b);
        }
        for (int i = 0; i < nn; i++)
            if (ns[i].red && ns[i].red->u.stmt.value->kind == IE_MUL)
                gpu_contraction_text(&ns[i], &b);
        AstSchedule *s = parse_checked(in, b.s ? b.s : "", a, &dropped, d);
        sb_free(&b);
        if (!s)
            return false;
        add_template(sp, s, dropped ? arena_printf(a, "rules: GPU (%d statements dropped)", dropped)
                                    : ncontr ? "rules: GPU register tiles" : "rules: default mapping");
        return true;
    }
    if (ncontr) {
        sp->kclass = "contraction";
        static const char *const origins[5] = {"rules: contraction, micro-kernel, panel packed",
                                               "rules: contraction, micro-kernel",
                                               "rules: contraction, dot-product tiles",
                                               "rules: contraction, micro-kernel, initialised per row block",
                                               "rules: contraction, micro-kernel, panel packed, row blocks in parallel"};
        static const int order[5] = {0, 4, 1, 3, 2};
        for (int vi = 0; vi < 5; vi++) {
            int variant = order[vi];
            /* the dot-product fallback only when no micro-kernel template held */
            if (variant == 2 && sp->n > (in->nscheds ? 1 : 0))
                break;
            sb_reset(&b);
            bool any = false;
            for (int i = 0; i < nn; i++) {
                bool contr = ns[i].red && ns[i].red->u.stmt.value->kind == IE_MUL;
                if (contr)
                    any |= contraction_text(&ns[i], variant, lanes, threads, &b);
                else if (!ns[i].red)
                    elementwise_text(&ns[i], lanes, &b);
            }
            if (!any)
                continue;
            AstSchedule *s = parse_checked(in, b.s, a, &dropped, d);
            if (!s) {
                sb_free(&b);
                return false;
            }
            /* a micro-kernel template that lost its distribute is no micro-kernel */
            if (variant != 2 && dropped)
                continue;
            const char *origin = origins[variant];
            if (dropped)
                origin = arena_printf(a, "%s (%d statement%s refused at the defaults and dropped)", origin, dropped,
                                      dropped == 1 ? "" : "s");
            add_template(sp, s, origin);
        }
    }
    /* a contraction no micro-kernel or dot-product template fits (one output loop: a
     * matrix-vector product, a dot product) is tuned as the reduction it is */
    if (sp->n > (in->nscheds ? 1 : 0)) {
        /* templates from the contraction rules */
    } else if (nred && (sb_reset(&b), rows_text(u, ns, nn, lanes, &b))) {
        sp->kclass = "row-wise";
        AstSchedule *s = parse_checked(in, b.s, a, &dropped, d);
        if (!s) {
            sb_free(&b);
            return false;
        }
        add_template(sp, s, dropped ? arena_printf(a, "rules: row-wise (%d statements dropped)", dropped) : "rules: row-wise");
    } else {
        sp->kclass = nred ? "reduction" : "elementwise";
        sb_reset(&b);
        for (int i = 0; i < nn; i++)
            if (!ns[i].red)
                elementwise_text(&ns[i], lanes, &b);
            else
                sb_printf(&b, "parallel(%s)\n", lname(&ns[i], par_loop(&ns[i], ns[i].nspatial)));
        AstSchedule *s = parse_checked(in, b.s ? b.s : "", a, &dropped, d);
        if (!s) {
            sb_free(&b);
            return false;
        }
        add_template(sp, s, nred ? "rules: parallel rows" : "rules: elementwise");
    }
    sb_free(&b);
    return sp->n > 0;
}
