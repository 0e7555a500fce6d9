/* Transformations of the loop-nest IR, the schedules that apply them, the list of
 * moves that are legal now (the pass pipeline that runs them is in passes/passes.h).
 *
 * Every transformation is atomic: it first proves (with the dependence analysis of
 * passes/deps.c) that the rewrite preserves the kernel's meaning, and only then
 * changes the IR.  A request that cannot be proven legal is refused with an error at
 * the schedule statement's span that names the dependence or bound in the way, and
 * the kernel is left untouched.  The same entry points serve schedule blocks in
 * .pdl files, `-s`, `--actions`, the autotuner and external agents.
 * docs/schedules.md is the user's reference. */
#ifndef PERFC_PASSES_XFORM_H
#define PERFC_PASSES_XFORM_H

#include <stdbool.h>
#include <stdint.h>

#include "../ir/ir.h"
#include "../lang/ast.h"
#include "passes.h"

/* The transformation table: id, name in schedules, argument synopsis (docs, usage
 * errors).  Loops are named as the printer shows them (`io`), or as `T.v`: the loop
 * whose variable is (a renamed copy of) `v` among those enclosing a write to T. */
#define PF_XFORMS(X)                                                              \
    X(SPLIT, "split", "split(loop, factor[, outer, inner][, tail=guard|peel|pad])")   \
    X(TILE, "tile", "tile(i, j, Ti, Tj[, io, jo, ii, ji][, tail=guard|pad])")       \
    X(REORDER, "reorder", "reorder(a, b, ...)  # new order, outermost first")     \
    X(FUSE, "fuse", "fuse(a, b)")                                                 \
    X(DISTRIBUTE, "distribute", "distribute(loop)")                               \
    X(UNROLL, "unroll", "unroll(loop)")                                           \
    X(VECTORIZE, "vectorize", "vectorize(loop)")                                  \
    X(PARALLEL, "parallel", "parallel(loop)")                                     \
    X(INLINE, "inline", "inline(temp)")                                           \
    X(COMPUTE_AT, "compute_at", "compute_at(temp, loop)")                         \
    X(REVERSE_COMPUTE_AT, "reverse_compute_at", "reverse_compute_at(buffer, loop)  # its elementwise nest at the end of loop, over the box one iteration finishes") \
    X(CACHE, "cache", "cache(buffer, loop[, mem=local|shared][, name=N][, squeeze=1])")        \
    X(RFACTOR, "rfactor", "rfactor(loop[, name=N])")                              \
    X(PADDING, "padding", "padding(buffer, amount[, dim=d])")                     \
    X(LAYOUT, "layout", "layout(buffer, d0, d1, ...)")                            \
    X(BIND, "bind", "bind(loop, block.x|block.y|block.z|thread.x|thread.y|thread.z)") \
    X(MMA, "mma", "mma(i, j, k)  # 16x8x16 f16/bf16 tensor-core triple")         \
    X(WGMMA, "wgmma", "wgmma(i, j, k)  # 64xNx16 f16/bf16 warpgroup triple (sm_90a)") \
    X(PIPELINE, "pipeline", "pipeline(loop, stages[, inflight=1])  # rotate shared copies over 2-8 stages") \
    X(COLLAPSE, "collapse", "collapse(outer, inner[, name])  # one loop over both: v / B, v % B") \
    X(PREFETCH, "prefetch", "prefetch(buffer, at, from[, offset][, like=loop])  # fetch what at accesses, offset iterations of from ahead") \
    X(ONLINE_SOFTMAX, "online_softmax", "online_softmax(out, loop, tile[, mask=guard|inf])  # max, exp, sum and contraction over loop in one pass over tiles") \
    X(FACTOR_OUT, "factor_out", "factor_out(loop)  # factors of a sum that the loop does not move, applied once after it") \
    X(STORAGE, "storage", "storage(temp, dtype)  # keep a temporary in another float type (no coarser than the output)") \
    X(SKIP_TILES, "skip_tiles", "skip_tiles(loop)  # bound loop by the skip guard below it, and drop the guard") \
    X(UNMASK_TILES, "unmask_tiles", "unmask_tiles(loop)  # first the iterations where the selects' masks all hold, without them") \
    X(REALIGN, "realign", "realign(input, multiple)  # read the input from a copy whose rows are padded to a multiple of elements") \
    X(GATHER, "gather", "gather(buffer, loop[, mem=local|shared][, name=N])  # stage one read (or write), shaped by the loops that move it (im2col)") \
    X(EXP_SCALE, "exp_scale", "exp_scale(scores)  # a positive scale of the scores moved into the exponentials of their softmax") \
    X(REVERSE, "reverse", "reverse(loop)  # iterations last first (a loop that carries no dependence)") \
    X(FOLD, "fold", "fold(buffer, dim, factor)  # a temporary's dimension stored as two: e -> (e / factor, e % factor)")

typedef enum XformKind {
#define X(k, s, syn) XF_##k,
    PF_XFORMS(X)
#undef X
    XF_COUNT
} XformKind;
const char *xf_name(XformKind x);
const char *xf_synopsis(XformKind x);
XformKind xf_from_name(const char *s);  /* XF_COUNT if unknown */

/* Values of schedule parameters in force while applying one statement: a NAME
 * argument equal to a parameter's name is replaced by its value. */
typedef struct SchedEnv {
    int n;
    const char **names;
    const SchedArg **values;
} SchedEnv;

/* ---- passes/xform.c ---- */
/* Applies one SCHED_CALL item.  On refusal returns false with an error at it->span
 * (plus notes) in d, and k is unchanged.  env may be NULL. */
bool xf_apply(Kernel *k, const SchedItem *it, const SchedEnv *env, Diags *d);
/* The same check without the rewrite: true when xf_apply would succeed. */
bool xf_check(Kernel *k, const SchedItem *it, const SchedEnv *env, Diags *d);
/* Prints an item in schedule syntax (`split(i, 4, io, ii)`), no newline. */
void xf_item_print(const SchedItem *it, StrBuf *out);

/* ---- passes/schedule.c ---- */
/* ParamChoice: passes/passes.h */

/* Applies the items of s in order.  Parameters take the candidate chosen in
 * choices (by name), else their first candidate.  Stops at the first refusal
 * (false, diagnostics in d); the statements before it stay applied. */
bool schedule_apply(Kernel *k, const AstSchedule *s, const ParamChoice *choices, int nchoices,
                    Diags *d);
/* The parameters of a schedule, for the autotuner: number of them; names[i] and
 * ncands[i] filled for the first cap. */
int schedule_params(const AstSchedule *s, const char **names, int *ncands, int cap);
/* Prints s with every parameter fixed to its chosen value, in schedule syntax:
 * `param T = 64` lines first, then the statements (one per line). */
void schedule_print(const AstSchedule *s, const ParamChoice *choices, int nchoices, StrBuf *out);
/* True when a schedule for `target` applies to a kernel compiled for tgt (NULL is
 * host).  A schedule target NULL or "any" matches all; "cpu" the CPU targets;
 * "gpu"/"cuda" the GPU ones; a name itself and its variants (`x86_64` covers
 * `x86_64-avx512`, `sm_90` covers `sm_90a`). */
bool schedule_matches_target(const char *sched_target, const Target *tgt);
/* Whether file block s applies to kernel k on target tgt: its kernel and target
 * match, it is the variant asked for (NULL: an unnamed block), and its `when`
 * guard holds for k's dtype parameters as bound. */
bool schedule_applies(const AstSchedule *s, const AstKernel *k, const Target *tgt, const char *variant);

/* ---- passes/actions.c ---- */
/* Every transformation legal on k now, one per line, in schedule syntax
 * (`split(i, 4)`), in a deterministic order. */
void xf_list_actions(Kernel *k, StrBuf *out);
/* The same moves as SCHED_CALL items allocated in a (the autotuner and the property
 * test apply them with xf_apply).  Returns their number; *out is arena memory. */
int xf_enum_actions(Kernel *k, Arena *a, SchedItem **out);
/* The candidates before the legality check (a superset of the actions): a search
 * that tries moves in random order checks only the ones it draws. */
int xf_enum_candidates(Kernel *k, Arena *a, SchedItem **out);


#endif
