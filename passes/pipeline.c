/* The pass pipeline after lowering, in one fixed order, with the IR verified
 * between passes (a transformation that breaks an invariant is caught at the pass
 * that did it, not in the code generator) and `-dump-after=PASS` printing the IR in
 * the printer's format.
 *
 *   lower     the IR as lowering produced it (nothing runs; a dump point)
 *   schedule  the file's schedule blocks for the target, then -s, in order
 *   mask-bounds  guards on affine `where` masks become the bounds of the serial
 *             loops above them, modular ones strides (passes/mask_bounds.c);
 *             after the schedule, which is written for the rectangular nest
 *   simplify  canonical index arithmetic; empty loops (or loops holding only
 *             prefetches) dropped, one-trip loops replaced by their body,
 *             temporaries nothing touches any more dropped
 *
 * Then, for a GPU target (-target sm_*), target legalisation and lowering: what
 * codegen/cuda needs stated in the IR before it translates (one file each):
 *   gpu-reduce     statements combined across a thread.x loop marked block-reduce
 *                  (passes/gpu_reduce.c); unsupported shapes refused
 *   gpu-privatize  local buffers indexed by thread loops get per-thread copies
 *                  (passes/gpu_privatize.c); conflicting mappings refused
 *   gpu-scan       long scans along a row get a block per row and a block-wide
 *                  scan (passes/gpu_scan.c)
 *   gpu-map        the provably parallel outer loops of unscheduled launches
 *                  marked grid (passes/gpu_map.c)
 *   gpu-dead-fill  fills of local buffers overwritten by the next nest removed
 *                  (passes/gpu_dead_fill.c)
 *   gpu-vector     vector-loop accesses that are one 64/128-bit access marked
 *                  wide (passes/gpu_vector.c)
 *   gpu-mma        the tensor-core contract checked; accumulator and operand
 *                  layouts, each group's products, the accumulator loops spread
 *                  over the lanes (passes/gpu_mma.c)
 *   gpu-pipeline   pipeline loops accepted with their stage count and copies;
 *                  their wide copies marked cp.async (passes/gpu_pipeline.c)
 *   gpu-tma        pipeline copies that are one box of a global tensor issued
 *                  as bulk tensor copies on sm_90+ (passes/gpu_tma.c)
 *   gpu-frag-ahead the slice loop of a pipelined mma.sync group marked to read
 *                  its fragments one slice ahead (passes/gpu_frag_ahead.c)
 *   gpu-barrier    block-wide barriers placed between the block-level steps of
 *                  scheduled launches that hand memory over (passes/gpu_barrier.c)
 * The IR is verified after every pass.
 *
 * Or, for a CPU target, target legalisation and the
 * target lowering passes of passes/cpu_*.c, which decide how the LLVM back end
 * translates each loop and say so in the IR (docs/codegen.md):
 *   scan-blocks     few long scan rows: the blocked parallel scan (cpu_scan.c)
 *   legalize        GPU loop kinds refused; vector and unroll loops the back end
 *                   cannot translate made serial, with a warning
 *   sum-blocks      long float sums into one element accumulated in blocks of
 *                   partial sums (accuracy; passes/cpu_sum_blocks.c)
 *   fold-init       a product's initialisation pass folded into the first
 *                   panel's staged tiles (cpu_fold_init.c)
 *   partition       padded loops split where their reads stay inside (tiled
 *                   kernels); interior copies marked memcpy
 *   fill            zero-fill nests marked memset
 *   narrow          a loop whose body is one guard on its variable runs over the
 *                   range where it holds
 *   version         guards hoisted out of tile loops: a fast and a guarded copy
 *   edge            the loop around a ragged edge's register tile: copies that run
 *                   only the registers with work (cpu_edge.c)
 *   dot-pairs       with AVX-512 BF16: bf16 tile updates into f32 take k in pairs,
 *                   their packed panel stored [k/2][j][2] (cpu_dot.c)
 *   unroll2         the loop around a small tile update runs two iterations a trip
 *   transpose       copies across a register tile's layout change marked transpose;
 *                   transposing copies between buffers marked transpose-blocks
 *   vectorize-tiles small serial loops over register tiles made vector (ordered)
 *   unroll-small    small serial loops around tiles unrolled
 *   verify          the IR the back end receives (a dump point)
 * Their order is the order in which the back end used to try these rewrites on a
 * loop, so each loop gets the first that applies; passes that run later consult
 * the predicates of those that run earlier on the same loop.  The back ends
 * translate only a kernel these passes lowered (Kernel.cpu_lowered, gpu_lowered):
 * a caller whose pipeline named no target runs pipeline_target before codegen. */
#include <stdlib.h>
#include <string.h>

#include "../ir/walk.h"
#include "cpu.h"
#include "gpu_int.h"
#include "xform_int.h"

typedef bool (*PassFn)(Kernel *k, const PipelineOpts *o, Diags *d);

static bool pass_lower(Kernel *k, const PipelineOpts *o, Diags *d)
{
    (void)k, (void)o, (void)d;
    return true;
}

static bool pass_schedule(Kernel *k, const PipelineOpts *o, Diags *d)
{
    bool ok = true;
    k->target = o->target;
    for (int i = 0; i < o->nschedules && ok; i++)
        ok = schedule_apply(k, o->schedules[i], o->choices, o->nchoices, d);
    k->target = NULL;
    return ok;
}

static bool pass_mask_bounds(Kernel *k, const PipelineOpts *o, Diags *d)
{
    (void)o;
    return mask_bounds_pass(k, d);
}

static void canon_cb(Expr *e, void *p)
{
    Kernel *k = p;
    if (e->kind == IE_LOAD)
        for (int i = 0; i < e->u.load.buf->rank; i++)
            e->u.load.idx[i] = xf_simplify_affine(k, e->u.load.idx[i]);
}

static void simplify_list(Kernel *k, NodeList *l, Node *parent)
{
    for (int i = 0; i < l->n; i++) {
        Node *n = l->v[i];
        if (n->kind == N_STMT) {
            for (int d = 0; d < n->u.stmt.buf->rank; d++)
                n->u.stmt.idx[d] = xf_simplify_affine(k, n->u.stmt.idx[d]);
            continue;
        }
        if (n->kind == N_PREFETCH) {
            for (int d = 0; d < n->u.pf.buf->rank; d++)
                n->u.pf.idx[d] = xf_simplify_affine(k, n->u.pf.idx[d]);
            continue;
        }
        if (n->kind == N_LOOP) {
            n->u.loop.lo = xf_simplify_affine(k, n->u.loop.lo);
            n->u.loop.hi = xf_simplify_affine(k, n->u.loop.hi);
            int64_t ext;
            if (xf_const_extent(k, n, &ext) && ext <= 0) {
                ir_list_remove(l, i--);
                continue;
            }
            /* A top-level one-trip loop around several nodes stays: they are one nest
             * (one launch on a GPU, whose local temporaries do not outlive it). */
            if (xf_const_extent(k, n, &ext) && ext == 1 &&
                (n->u.loop.kind == LOOP_SERIAL || n->u.loop.kind == LOOP_UNROLL) &&
                (parent || n->u.loop.body.n == 1)) {
                /* One trip: the body with the variable fixed. */
                ir_list_remove(l, i);
                for (int j = 0; j < n->u.loop.body.n; j++) {
                    Node *b = n->u.loop.body.v[j];
                    xf_subst_tree(k, b, n->u.loop.var, n->u.loop.lo);
                    ir_list_insert(l, i + j, b, parent);
                }
                i--;
                continue;
            }
        }
        simplify_list(k, ir_body(n), n);
        /* empty, or holding prefetches of what nothing here reads */
        if (ir_list_only_prefetch(ir_body(n)))
            ir_list_remove(l, i--);
    }
}

static WalkAct used_node(void *ctx, Node *n)
{
    uint8_t *used = ctx;
    if (n->kind == N_STMT)
        used[n->u.stmt.buf->id] = 1;
    else if (n->kind == N_PREFETCH)
        used[n->u.pf.buf->id] = 1;
    return WALK_GO;
}

static WalkAct used_expr(void *ctx, Expr *e)
{
    uint8_t *used = ctx;
    if (e->kind == IE_LOAD)
        used[e->u.load.buf->id] = 1;
    return WALK_GO;
}

/* Temporaries nothing reads or writes any more (a GEMM's f32 sum of a 16-bit
 * output once its tile is staged per block) are dropped, so no launch takes them
 * and no run allocates them; the others keep their order (ids renumbered). */
static void drop_dead_temps(Kernel *k)
{
    uint8_t *used = xcalloc((size_t)k->nbufs + 1, 1);
    IrVisitor v = {.pre = used_node, .expr = used_expr, .ctx = used};
    ir_walk_list(&k->body, &v);
    int n = 0;
    for (int i = 0; i < k->nbufs; i++) {
        Buffer *b = k->bufs[i];
        if (b->kind == BUF_TEMP && !used[i])
            continue;
        b->id = n;
        k->bufs[n++] = b;
    }
    k->nbufs = n;
    free(used);
}

static bool pass_simplify(Kernel *k, const PipelineOpts *o, Diags *d)
{
    (void)o, (void)d;
    xf_visit_exprs(k, NULL, canon_cb, k);
    simplify_list(k, &k->body, NULL);
    drop_dead_temps(k);
    return true;
}

static bool is_gpu(const PipelineOpts *o) { return target_is_gpu(o->target); }

/* Callers set a CPU target only when the LLVM back end will translate the kernel
 * (cli/compile.c, pipeline_lower_cpu). */
static bool cpu_target(const PipelineOpts *o) { return target_is_cpu(o->target); }

static bool pass_legalize(Kernel *k, const PipelineOpts *o, Diags *d)
{
    return !cpu_target(o) || cpu_legalize(k, o->target, d);
}

#define CPU_PASS(name, fn)                                               \
    static bool name(Kernel *k, const PipelineOpts *o, Diags *d)         \
    {                                                                    \
        return !cpu_target(o) || fn(k, d);                               \
    }
CPU_PASS(pass_scan_blocks, cpu_scan_blocks)
CPU_PASS(pass_sum_blocks, cpu_sum_blocks)
CPU_PASS(pass_fold_init, cpu_fold_init)
CPU_PASS(pass_partition, cpu_partition)
CPU_PASS(pass_fill, cpu_fill)
CPU_PASS(pass_narrow, cpu_narrow)
CPU_PASS(pass_version, cpu_version)
CPU_PASS(pass_unroll2, cpu_unroll2)

static bool pass_edge(Kernel *k, const PipelineOpts *o, Diags *d)
{
    return !cpu_target(o) || cpu_edge(k, o->target, d);
}
static bool pass_dot_pairs(Kernel *k, const PipelineOpts *o, Diags *d)
{
    return !cpu_target(o) || cpu_dot_pairs(k, o->target, d);
}
static bool pass_amx_tiles(Kernel *k, const PipelineOpts *o, Diags *d)
{
    return !cpu_target(o) || cpu_amx_tiles(k, o->target, d);
}
CPU_PASS(pass_transpose, cpu_transpose)
CPU_PASS(pass_vectorize, cpu_vectorize)
CPU_PASS(pass_unroll, cpu_unroll)

static bool pass_gpu_reduce(Kernel *k, const PipelineOpts *o, Diags *d)
{
    return !is_gpu(o) || gpu_reduce_pass(k, d);
}

static bool pass_gpu_privatize(Kernel *k, const PipelineOpts *o, Diags *d)
{
    return !is_gpu(o) || gpu_privatize_pass(k, d);
}

static bool pass_gpu_scan(Kernel *k, const PipelineOpts *o, Diags *d)
{
    return !is_gpu(o) || gpu_scan_pass(k, d);
}

static bool pass_gpu_map(Kernel *k, const PipelineOpts *o, Diags *d)
{
    return !is_gpu(o) || gpu_map_pass(k, d);
}

static bool pass_gpu_dead_fill(Kernel *k, const PipelineOpts *o, Diags *d)
{
    return !is_gpu(o) || gpu_dead_fill_pass(k, d);
}

static bool pass_gpu_vector(Kernel *k, const PipelineOpts *o, Diags *d)
{
    return !is_gpu(o) || gpu_vector_pass(k, d);
}

static bool pass_gpu_mma(Kernel *k, const PipelineOpts *o, Diags *d)
{
    return !is_gpu(o) || gpu_mma_pass(k, o->target, d);
}

static bool pass_gpu_pipeline(Kernel *k, const PipelineOpts *o, Diags *d)
{
    return !is_gpu(o) || gpu_pipeline_pass(k, d);
}

static bool pass_gpu_tma(Kernel *k, const PipelineOpts *o, Diags *d)
{
    return !is_gpu(o) || gpu_tma_pass(k, o->target, d);
}

static bool pass_gpu_frag_ahead(Kernel *k, const PipelineOpts *o, Diags *d)
{
    return !is_gpu(o) || gpu_frag_ahead_pass(k, d);
}

/* The last GPU pass: the kernel is what codegen/cuda translates. */
static bool pass_gpu_barrier(Kernel *k, const PipelineOpts *o, Diags *d)
{
    if (!is_gpu(o))
        return true;
    if (!gpu_barrier_pass(k, d))
        return false;
    k->gpu_lowered = o->target;
    bool any = false, narrow = true;
    for (int i = 0; i < k->nbufs; i++) {
        const Buffer *b = k->bufs[i];
        if (b->kind != BUF_OUT || !dtype_is_float(b->dtype)) continue;
        any = true;
        narrow &= b->dtype == DT_F16 || b->dtype == DT_BF16;
    }
    k->fast_exp = any && narrow;
    return true;
}

static bool pass_verify(Kernel *k, const PipelineOpts *o, Diags *d)
{
    (void)d;
    if (cpu_target(o))
        k->cpu_lowered = o->target;
    return true;
}

static const struct {
    const char *name;
    PassFn fn;
    bool target;        /* legalisation or lowering for PipelineOpts.target; runs once */
} passes[] = {
    {"lower", pass_lower, false},
    {"schedule", pass_schedule, false},
    {"mask-bounds", pass_mask_bounds, false},
    {"simplify", pass_simplify, false},
    /* GPU targets: legalisation, then lowering */
    {"gpu-reduce", pass_gpu_reduce, true},
    {"gpu-privatize", pass_gpu_privatize, true},
    {"gpu-scan", pass_gpu_scan, true},
    {"gpu-map", pass_gpu_map, true},
    {"gpu-dead-fill", pass_gpu_dead_fill, true},
    {"gpu-vector", pass_gpu_vector, true},
    {"gpu-mma", pass_gpu_mma, true},
    {"gpu-pipeline", pass_gpu_pipeline, true},
    {"gpu-tma", pass_gpu_tma, true},
    {"gpu-frag-ahead", pass_gpu_frag_ahead, true},
    {"gpu-barrier", pass_gpu_barrier, true},
    /* CPU targets: legalisation, then lowering */
    {"scan-blocks", pass_scan_blocks, true},
    {"legalize", pass_legalize, true},
    {"sum-blocks", pass_sum_blocks, true},
    {"fold-init", pass_fold_init, true},
    {"partition", pass_partition, true},
    {"fill", pass_fill, true},
    {"narrow", pass_narrow, true},
    {"version", pass_version, true},
    {"edge", pass_edge, true},
    {"dot-pairs", pass_dot_pairs, true},
    {"amx-tiles", pass_amx_tiles, true},
    {"unroll2", pass_unroll2, true},
    {"transpose", pass_transpose, true},
    {"vectorize-tiles", pass_vectorize, true},
    {"unroll-small", pass_unroll, true},
    {"verify", pass_verify, true},
};
enum { FIRST_TARGET_PASS = 4 };
enum { NPASSES = sizeof passes / sizeof passes[0] };

const char *pipeline_pass_name(int i) { return i >= 0 && i < NPASSES ? passes[i].name : NULL; }

bool pipeline_run(Kernel *k, const PipelineOpts *o, Diags *d)
{
    if (o->dump_after && strcmp(o->dump_after, "all") != 0) {
        bool known = false;
        for (int i = 0; i < NPASSES; i++)
            known |= strcmp(passes[i].name, o->dump_after) == 0;
        if (!known) {
            StrBuf b = {0};
            for (int i = 0; i < NPASSES; i++)
                sb_printf(&b, "%s%s", i ? ", " : "", passes[i].name);
            diag_plain(d, DIAG_ERROR, "-dump-after: unknown pass `%s` (passes: %s, all)", o->dump_after, b.s);
            sb_free(&b);
            return false;
        }
    }
    for (int i = 0; i < NPASSES; i++) {
        if (passes[i].target && k->gpu_lowered)
            continue;
        if (!passes[i].fn(k, o, d))
            return false;
        if (!ir_verify(k, d)) {
            diag_plain(d, DIAG_ERROR, "internal error: the IR is invalid after pass `%s`", passes[i].name);
            return false;
        }
        if (o->dump && o->dump_after &&
            (strcmp(o->dump_after, "all") == 0 || strcmp(o->dump_after, passes[i].name) == 0)) {
            sb_printf(o->dump, "; after %s\n", passes[i].name);
            ir_print_kernel(k, o->dump);
        }
        if (o->stop_after && strcmp(o->stop_after, passes[i].name) == 0)
            break;
    }
    return true;
}

bool pipeline_lower_cpu(Kernel *k, const Target *target, Diags *d)
{
    PipelineOpts o = {.target = target ? target : target_find("host")};
    if (!target_is_cpu(o.target))
        return true;
    /* Kernels built by hand (tests of the back end) need not meet every invariant
     * of the verifier; the passes are checked on those that do. */
    Diags quiet;
    diag_init(&quiet);
    bool valid = ir_verify(k, &quiet);
    diag_free(&quiet);
    /* a kernel that did not come through pipeline_run: its masks too (the pass
     * leaves what it already bounded as it is) */
    if (!mask_bounds_pass(k, d))
        return false;
    for (int i = FIRST_TARGET_PASS; i < NPASSES; i++) {
        if (!passes[i].fn(k, &o, d))
            return false;
        if (valid && !ir_verify(k, d)) {
            diag_plain(d, DIAG_ERROR, "internal error: the IR is invalid after pass `%s`", passes[i].name);
            return false;
        }
    }
    return true;
}

bool pipeline_target(Kernel *k, const Target *target, Diags *d)
{
    if (target_is_cpu(target))
        return k->cpu_lowered || pipeline_lower_cpu(k, target, d);
    if (k->gpu_lowered || !target_is_gpu(target))
        return true;
    PipelineOpts o = {.target = target};
    if (!mask_bounds_pass(k, d))
        return false;
    for (int i = 0; i < NPASSES && !k->gpu_lowered; i++) {
        if (!passes[i].target)
            continue;
        if (!passes[i].fn(k, &o, d))
            return false;
        if (!ir_verify(k, d)) {
            diag_plain(d, DIAG_ERROR, "internal error: the IR is invalid after pass `%s`", passes[i].name);
            return false;
        }
    }
    return true;
}
