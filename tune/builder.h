/* The typed schedule builder: how the tuner's rules (tune/rules.c) write a template.
 *
 * A template is a C function of its parameter values.  It runs against a freshly
 * lowered kernel and calls one builder operation per transformation; each operation
 * applies its transformation at once, through the same legality-checked entry point
 * a schedule block goes through (schedule_apply: xf_apply and the nest limits), and
 * hands back the loops and buffers the transformation created, read off the kernel
 * (the loops whose variables did not exist before, in program order).  So a template
 * never spells a name a transformation made up (`acc_c0`, `ii1`, `i1o`): it holds the
 * handles.  Every applied step is also recorded as a schedule statement, with
 * parameters by name, so the candidate prints as `param X = v` lines and statements:
 * the text the report, the tuning database and --autotune's block show, which the
 * ordinary schedule parser re-applies to the same IR (tests/tune/space_dump.c).
 *
 * Parameters are declared where the template needs them (bld_param*); the value is
 * the candidate the search chose, by name, else the first.  A template function
 * returns false when it does not fit the kernel at all (decided from the loop nest,
 * never from parameter values), so the same steps are issued for every candidate.
 *
 * Two modes.  Building the space (`tune_rule_check`), the template runs at its
 * defaults and a step the kernel refuses is dropped and remembered, with everything
 * that needed its handles; the parameters no kept step uses leave the space.  For a
 * candidate (`tune_rule_apply`), the dropped steps are skipped, and the first refusal
 * of a kept step ends the build with its diagnostic: the candidate is pruned. */
#ifndef PERFC_TUNE_BUILDER_H
#define PERFC_TUNE_BUILDER_H

#include <stdbool.h>
#include <stdint.h>

#include "../ir/ir.h"
#include "../passes/xform.h"

typedef struct Builder Builder;

/* A loop: its name as the kernel prints it, taken from the kernel (never composed).
 * param >= 0 when the loop is a parameter's choice (bld_param_loop): the recorded
 * statement then names the parameter. */
typedef struct SLoop {
    const char *name;
    int param;
} SLoop;

enum { BLD_MAX_NESTS = 4, BLD_MAX_RANK = 8 };

/* A buffer; for one made by bld_cache, the loops of the copy nests that cache
 * created, in program order (nest[0] the copy in or initialisation, nest[1] the copy
 * out when there is one), outermost first. */
typedef struct SBuf {
    const char *name;
    int nnest;
    int rank[BLD_MAX_NESTS];
    SLoop *nest[BLD_MAX_NESTS][BLD_MAX_RANK];
} SBuf;

/* A value argument: an integer or a name (`guard`), a constant or a parameter's
 * choice (param >= 0). */
typedef struct SVal {
    int64_t i;
    const char *name;
    int param;
} SVal;

static inline SVal sv(int64_t i) { return (SVal){i, NULL, -1}; }

/* ---- the kernel's own loops and buffers ---- */
/* The loop named `name` now (a name read off the lowered nest), NULL when none. */
SLoop *bld_loop(Builder *b, const char *name);
SBuf *bld_buf(Builder *b, const char *name);
/* Whether no loop variable (live or fused away) and no buffer is called name yet:
 * a name a template chooses for a new loop or buffer must be. */
bool bld_name_free(Builder *b, const char *name);

/* Every name the template chooses from now on (new loops and buffers, parameters)
 * starts with prefix (NULL or "": none): one template applied to several nests of a
 * kernel, each with its own prefix, names nothing twice. */
void bld_set_prefix(Builder *b, const char *prefix);

/* ---- parameters ---- */
SVal bld_param(Builder *b, const char *name, const int64_t *cands, int n);
SVal bld_param_names(Builder *b, const char *name, const char *const *cands, int n);
/* One of the loops cands (NULL entries are left out) chosen by the parameter. */
SLoop *bld_param_loop(Builder *b, const char *name, SLoop *const *cands, int n);

/* ---- transformations (docs/schedules.md), in the order of their table ----
 * Each returns true when applied.  Out-handles are set to NULL when it was not.
 * Names passed as `const char *` are names chosen for the new loops or buffer (NULL:
 * the transformation's own); they are the template's, never guesses of another's. */
bool bld_split(Builder *b, SLoop *l, SVal factor, SLoop **outer, SLoop **inner);
bool bld_split_named(Builder *b, SLoop *l, SVal factor, const char *oname, const char *iname, SLoop **outer,
                     SLoop **inner);
bool bld_split_tail(Builder *b, SLoop *l, SVal factor, SVal tail, SLoop **outer, SLoop **inner);
/* split(.., tail=pad): the loop runs on to a multiple of the factor */
bool bld_split_padded(Builder *b, SLoop *l, SVal factor, const char *oname, const char *iname, SLoop **outer,
                      SLoop **inner);
/* out: io, jo, ii, ji */
bool bld_tile(Builder *b, SLoop *i, SLoop *j, SVal ti, SVal tj, const char *const names[4], SLoop *out[4]);
bool bld_tile_padded(Builder *b, SLoop *i, SLoop *j, SVal ti, SVal tj, const char *const names[4], SLoop *out[4]);
bool bld_reorder(Builder *b, SLoop *const *order, int n);
#define BLD_REORDER(b, ...) \
    bld_reorder((b), (SLoop *const[]){__VA_ARGS__}, (int)(sizeof((SLoop *const[]){__VA_ARGS__}) / sizeof(SLoop *)))
bool bld_fuse(Builder *b, SLoop *a, SLoop *c);
/* copy: the loop distribute made for the statements after the first group */
bool bld_distribute(Builder *b, SLoop *l, SLoop **copy);
/* every loop distribute made, in program order (one per statement group after the
 * first); the count, or -1 when it was not applied */
int bld_distribute_all(Builder *b, SLoop *l, SLoop **copies, int cap);
bool bld_unroll(Builder *b, SLoop *l);
/* unroll with a larger bound than unroll's 64 (max=): a per-thread row of a head size */
bool bld_unroll_max(Builder *b, SLoop *l, int64_t max);
bool bld_vectorize(Builder *b, SLoop *l);
bool bld_parallel(Builder *b, SLoop *l);
/* mem: "local", "shared" or NULL (the default); name: NULL for cache's own */
SBuf *bld_cache(Builder *b, SBuf *buf, SLoop *at, const char *mem, const char *name);
/* squeeze: cache(.., squeeze=1), the dimensions `at` fixes left out */
SBuf *bld_cache_squeezed(Builder *b, SBuf *buf, SLoop *at, const char *mem, const char *name, bool squeeze);
/* using: cache(.., using=use), only the reads whose subscripts use that loop (NULL: all) */
SBuf *bld_cache_using(Builder *b, SBuf *buf, SLoop *at, SLoop *use);
/* The same in memory space mem ("global": a heap buffer shared by the threads). */
SBuf *bld_cache_using_in(Builder *b, SBuf *buf, SLoop *at, SLoop *use, const char *mem);
/* gather(buf, at, mem=, name=): one read of buf staged as the loops inside `at`
 * that move it walk it (nest[0]: the copy's loops) */
SBuf *bld_gather(Builder *b, SBuf *buf, SLoop *at, const char *mem, const char *name);
bool bld_rfactor(Builder *b, SLoop *l);
/* rfactor(l, name=name, expand=1): partials name[l, idx] in global memory (name NULL:
 * rfactor's own, read off the kernel); init and comb the loops it made (the
 * initialisation, the combination).  NULL when refused. */
SBuf *bld_rfactor_expanded(Builder *b, SLoop *l, const char *name, SLoop **init, SLoop **comb);
bool bld_padding(Builder *b, SBuf *buf, SVal amount);
/* realign(buf, multiple): the input read from a copy with padded rows; the copy's
 * handle (nest[0]: the copy's loops, outermost first), or NULL when the step was
 * refused or dropped. */
SBuf *bld_realign(Builder *b, SBuf *buf, int64_t multiple);
/* layout(buf, perm[0], ..., perm[n-1]): a staged buffer stored with its dimensions permuted. */
bool bld_layout(Builder *b, SBuf *buf, const int *perm, int n);
/* prefetch(buf, at, from): what `at` accesses of buf, fetched an iteration of `from` ahead */
bool bld_prefetch(Builder *b, SBuf *buf, SLoop *at, SLoop *from);
/* fold(buf, dim, factor): dimension dim stored as (e / factor, e % factor) */
bool bld_fold(Builder *b, SBuf *buf, int dim, int64_t factor);
bool bld_bind(Builder *b, SLoop *l, const char *axis);
bool bld_mma(Builder *b, SLoop *i, SLoop *j, SLoop *k);
bool bld_wgmma(Builder *b, SLoop *i, SLoop *j, SLoop *k);
bool bld_pipeline(Builder *b, SLoop *l, SVal stages, bool inflight);
bool bld_collapse(Builder *b, SLoop *outer, SLoop *inner, const char *name, SLoop **out);
/* mask: NULL (the default, guards), "guard" or "inf" */
bool bld_online_softmax(Builder *b, SBuf *out, SLoop *j, SVal tile, const char *mask);
bool bld_skip_tiles(Builder *b, SLoop *l);
bool bld_reverse(Builder *b, SLoop *l);
bool bld_factor_out(Builder *b, SLoop *l);
bool bld_exp_scale(Builder *b, SBuf *scores);
bool bld_storage(Builder *b, SBuf *buf, const char *dtype);

/* ---- reading the nest ---- */
/* The loops directly in l's body (through guards), in order; their number. */
int bld_children(Builder *b, SLoop *l, SLoop **out, int cap);
/* The only loop directly under l, or NULL (none, several, or l NULL) */
SLoop *bld_child(Builder *b, SLoop *l);

/* ---- templates ---- */
/* A template: false when it does not fit the kernel (nothing to offer). */
typedef bool (*TuneBuildFn)(Builder *b, const void *ctx);

/* A template of the rules, as the search space holds it (TuneTemplate.rule). */
typedef struct TuneRule {
    TuneBuildFn fn;
    const void *ctx;          /* the template's reading of the loop nest */
    unsigned char *skip;      /* per step: dropped at the defaults */
    int nsteps;
    int dropped;              /* steps dropped */
    /* the kept parameters, in order (TuneTemplate.names/ncands), each candidate's
     * text for the report's `name=value` */
    int nparams;
    const char *names[16];
    int ncands[16];
    const char **values[16];
} TuneRule;

/* Runs fn at its defaults on k (a freshly lowered kernel) to make the rule: steps
 * refused are dropped.  NULL when the template does not fit or keeps no step; the
 * rule lives in arena a. */
TuneRule *tune_rule_check(TuneBuildFn fn, const void *ctx, Kernel *k, Arena *a);
/* Applies the rule with the chosen parameters to k; text (may be NULL) receives the
 * schedule as statements.  False with the refusal in d. */
bool tune_rule_apply(const TuneRule *r, Kernel *k, const ParamChoice *ch, int nch, StrBuf *text, Diags *d);

#endif
