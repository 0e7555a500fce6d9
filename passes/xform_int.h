/* Internal interface shared by the transformation files of passes/: the affine and
 * dependence analysis of deps.c, the tree helpers of xform.c, and the argument
 * handling every transformation uses.  Nothing outside passes/xform*.c, deps.c,
 * schedule.c, actions.c and pipeline.c includes it. */
#ifndef PERFC_PASSES_XFORM_INT_H
#define PERFC_PASSES_XFORM_INT_H

#include "../ir/arith.h"
#include "xform.h"

/* ---- deps.c: constants and affine facts (the rows and systems are ir/arith.h's) ---- */

/* Evaluates an expression without loop variables, using bound parameters. */
bool xf_const(const Kernel *k, const Expr *e, int64_t *v);
/* hi - lo of a loop when it is a known constant. */
bool xf_const_extent(const Kernel *k, const Node *loop, int64_t *ext);
/* True when f divides the value of e for certain (constant, or a product with a
 * factor that f divides). */
bool xf_divides(const Kernel *k, const Expr *e, int64_t f);
/* Affine equality of two index expressions (bound parameters folded), or
 * structural equality when they are not affine. */
bool xf_expr_equal(const Kernel *k, const Expr *a, const Expr *b);

/* Rewrites an affine index expression in canonical form (terms collected, so
 * `(ko*8 + ki) - ko*8` becomes `ki`); other expressions are only simplified. */
Expr *xf_simplify_affine(Kernel *k, Expr *e);
/* An affine form as an i64 expression, simplified as above. */
Expr *xf_aff_expr(Kernel *k, const ArAff *a);
/* Proves a <= b for every iteration of the loops enclosing `at` (and at itself
 * when it is a loop; at NULL: the top level, sizes only); false when it cannot. */
bool xf_prove_le(Kernel *k, const Node *at, const Expr *a, const Expr *b);

/* ---- deps.c: accesses and dependences ---- */

typedef struct Access {
    Node *stmt;             /* whose instance performs it */
    Buffer *buf;
    Expr **idx;
    Expr *load;             /* the LOAD expression; NULL for the statement's store */
    bool write;             /* the store */
    bool update;            /* a store with op=: it reads the element as well */
    int order;              /* pre-order position of stmt in the kernel */
} Access;

typedef struct AccVec {
    Access *v;
    int n, cap;
} AccVec;

/* Accesses of every statement in the subtree n (or the whole kernel when n is NULL),
 * in program order. */
void acc_collect(const Kernel *k, Node *n, AccVec *out);
void acc_free(AccVec *v);
void acc_push(AccVec *v, const Access *a); /* appends a copy of *a */
void acc_print(const Kernel *k, const Access *a, StrBuf *out);
/* Two accesses whose conflicts never constrain order: both are the stores of
 * reductions with the same operator into the same buffer (reassociation is
 * allowed, see docs/schedules.md). */
bool acc_reduction_pair(const Access *a, const Access *b);

/* A relation between a variable of the first instance and one of the second:
 * dir -1: vb < va, 0: vb == va, +1: vb > va. */
typedef struct DepRel {
    const Var *va, *vb;
    int dir;
} DepRel;

/* True when instances of a and b may touch the same element under the relations. */
bool dep_may_conflict(const Kernel *k, const Access *a, const Access *b, const DepRel *rel, int nrel);
/* The direction vectors over the variable pairs (va[i], vb[i]) for which a and b
 * may conflict, given `fixed` extra relations: written to out (n entries of -1, 0,
 * +1 each, the sign of vb - va); returns their number (at most cap). */
int dep_directions(const Kernel *k, const Access *a, const Access *b, const DepRel *fixed,
                   int nfixed, const Var *const *va, const Var *const *vb, int n, int8_t *out,
                   int cap);

/* Case analysis over small variables in every dependence test while on (see
 * ArSys.split); bind turns it on around its own queries. */
void dep_set_cases(bool on);
/* Loops enclosing node n (not n), outermost first; returns their number. */
int xf_enclosing_loops(const Node *n, Node **out, int cap);
/* The loop-carried dependence that forbids running loop l's iterations in any
 * order, or false when there is none; *a and *b receive the pair. */
bool dep_carried(const Kernel *k, Node *l, bool reductions_too, bool allow_private, Access *a,
                 Access *b);
/* True when each thread running iterations of l may have its own copy of b: a
 * MEM_LOCAL temporary used only inside l whose reads are fed within one iteration
 * of l (Buffer.private_in, set by staging). */
bool xf_privatizable(const Kernel *k, const Buffer *b, const Node *l);
/* Records that b's reads are fed within one iteration of every loop enclosing at
 * (and at itself when self). */
void xf_set_private(Kernel *k, Buffer *b, const Node *at, bool self);

/* Region of a buffer touched inside loop l by one iteration of l: per dimension an
 * affine lower bound over the variables of l and the loops enclosing it, and a
 * constant width.  False (and a reason in why) when it is not such a box. */
typedef struct Region {
    int rank;
    Expr *lo[8];
    int64_t width[8];
} Region;
bool xf_region(Kernel *k, Node *l, const AccVec *acc, bool writes_only, Region *r, StrBuf *why);

/* One loop around a box that loop l touches each iteration: the dimension it moves
 * the box along (-1: none), its step there, and its constant first value and trip
 * count. */
enum { XF_MAXMOVERS = 24 };
typedef struct Mover {
    Node *loop;
    int dim;
    int64_t step, lo, n;
} Mover;
/* The loops from l outward to top (both included), each classified against r, l's
 * box: each loop either moves it along one dimension in steps exactly the span of
 * everything finer (so its iterations tile that dimension, no overlap, no gap) or
 * does not move it at all; and the elements first[d] .. end[d] - 1 the boxes cover.
 * No condition may lie between l and top.  False with the error in c
 * (passes/xform_consumer.c; reverse_compute_at and fold-init prove with it). */
struct XfCtx;
bool xf_box_movers(struct XfCtx *c, Node *l, Node *top, const Region *r, Mover *m, int *nm, int64_t *first, int64_t *end);

/* ---- xform.c: tree helpers ---- */
NodeList *xf_list_of(Kernel *k, Node *n);           /* the list holding n */
int xf_index_in(Kernel *k, Node *n);                /* n's position in that list */
/* No load and no loop variable: the same value wherever the kernel computes it. */
bool xf_kernel_const(const Expr *e);
bool xf_contains(const Node *anc, const Node *n);   /* anc == n or an ancestor */
int xf_preorder(const Kernel *k, const Node *n);    /* position in a pre-order walk */
int xf_preorder_last(const Kernel *k, const Node *n); /* of the last node in n's subtree */
/* Replaces variable v by `with` in every expression of the subtree. */
void xf_subst_tree(Kernel *k, Node *n, const Var *v, const Expr *with);
/* Simultaneous substitution in one expression; returns a new tree. */
Expr *xf_subst_expr(Kernel *k, const Expr *e, const Var *const *vars, Expr *const *withs, int n);
/* Deep copy whose loops get fresh variables (the copy can be named on its own). */
Node *xf_clone_fresh(Kernel *k, const Node *n);
bool xf_tree_uses_var(const Node *n, const Var *v);
/* Calls f on every expression node of the subtree (whole kernel when root is
 * NULL), children before parents.  f may overwrite *e in place. */
void xf_visit_exprs(Kernel *k, Node *root, void (*f)(Expr *e, void *ctx), void *ctx);
/* Removes loops and guards whose bodies became empty, from n upward. */
void xf_prune_empty(Kernel *k, Node *n);
/* Removes the prefetches of b inside root (the whole kernel when NULL): used when
 * b stops being read there (inline, copy-free staging).  A loop left empty stays
 * for the simplify pass. */
void xf_drop_prefetches(Kernel *k, Node *root, const Buffer *b);
/* Whether a prefetch anywhere in the kernel names b. */
bool xf_prefetches(const Kernel *k, const Buffer *b);
/* True when some loop enclosing n (or n itself) has kind `kind`; *which gets it. */
bool xf_inside_kind(const Node *n, LoopKind kind, bool self, const Node **which);
/* Calls f on every node of the kernel in pre-order; f returns false to stop. */
void xf_walk(Kernel *k, bool (*f)(Node *n, void *ctx), void *ctx);
/* A fresh variable name: base if unused, else base with a number. */
const char *xf_fresh_name(Kernel *k, const char *base);
/* A buffer name that is not in use yet. */
const char *xf_fresh_buffer_name(Kernel *k, const char *base);
Buffer *xf_add_temp(Kernel *k, const char *name, DType t, MemSpace mem, int rank,
                    const int64_t *shape, Span sp);

/* The factors of a product: the leaves under * and /, each with the side of a
 * division it is on (online_softmax reads attention's term, factor_out the scale). */
typedef struct XfFactors {
    Expr *leaf[32];
    bool den[32];
    int n;
    bool overflow;      /* more than 32 leaves */
} XfFactors;
void xf_factors(Expr *e, bool den, XfFactors *f);

/* ---- xform.c: arguments ---- */
typedef struct XfCtx {
    Kernel *k;
    const SchedItem *it;
    const SchedArg *args;   /* parameters substituted */
    int nargs;
    Diags *d;
    bool dry;               /* check only */
} XfCtx;

void xf_err(XfCtx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void xf_note(XfCtx *c, Span sp, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Positional argument i (keywords excluded), or NULL. */
const SchedArg *xf_arg(XfCtx *c, int i);
int xf_npos(XfCtx *c);
const SchedArg *xf_kwarg(XfCtx *c, const char *key);
/* Argument i as a loop / buffer / integer / name; report and return NULL/false. */
Node *xf_arg_loop(XfCtx *c, int i);
Buffer *xf_arg_buffer(XfCtx *c, int i);
bool xf_arg_int(XfCtx *c, int i, int64_t *v);
const char *xf_arg_name(XfCtx *c, int i);
/* Resolves a loop name as the printer shows it, or T.v. */
Node *xf_find_loop(Kernel *k, const char *name, StrBuf *why);
void xf_arg_print(const SchedArg *a, StrBuf *out);
/* A note when the body of n holds a prefetch, which keeps loops from being
 * perfectly nested (reorder, tile, rfactor): the cure is to prefetch later. */
void xf_note_prefetch(XfCtx *c, Node *n);
/* Reports a dependence as notes. */
void xf_note_dep(XfCtx *c, const Access *a, const Access *b);

/* ---- the transformations (xform_*.c): check, then rewrite unless c->dry ---- */
bool xf_split(XfCtx *c);
bool xf_tile(XfCtx *c);
bool xf_reorder(XfCtx *c);
bool xf_fuse(XfCtx *c);
bool xf_distribute(XfCtx *c);
bool xf_unroll(XfCtx *c);
bool xf_vectorize(XfCtx *c);
bool xf_parallel(XfCtx *c);
/* passes/xform_scan.c: is loop c a scan's loop as lowering wrote it; rewrite it into
 * the blocked parallel scan (false, nothing changed, when it is not one). */
bool xf_is_scan_loop(Kernel *k, Node *c);
bool xf_scan_blocks(Kernel *k, Node *c);
/* passes/mask_bounds.c: affine and modular `where` masks become loop bounds and
 * strides (the pipeline's `mask-bounds` pass, after the schedule). */
bool mask_bounds_pass(Kernel *k, Diags *d);
/* The same narrowing for one loop L by the affine conjuncts of guard G below it
 * (the variables of loops between them at their extreme values): true when some
 * conjunct bounded L.  dry: only whether one would. */
bool mask_narrow_loop(Kernel *k, Node *L, Node *G, bool dry);
/* L narrowed to the iterations where affine conjunct c holds for every iteration of
 * the loops between L and statement at; false when c cannot bound L from above. */
bool mask_narrow_all(Kernel *k, Node *L, Node *at, const Expr *c);
bool xf_inline(XfCtx *c);
bool xf_compute_at(XfCtx *c);
/* xform_consumer.c: the consumer nest of a result moved to the end of a loop of its
 * producer, restricted to the box one iteration finishes */
bool xf_reverse_compute_at(XfCtx *c);
/* xform_temp.c, shared with reverse_compute_at: the nest that writes t (root: the
 * outermost node whose subtree writes only t; first: its first write, an `=`; per
 * dimension of t the loop of root whose variable indexes it), false with the error;
 * and a variable root uses that is bound neither in it nor around at (NULL: none). */
bool xf_writer_nest(XfCtx *c, const AccVec *all, Buffer *t, Node **root, Node **first, Node **sloop);
const Var *xf_free_var(Kernel *k, Node *root, Node *at);
bool xf_cache(XfCtx *c);
/* mem=local|shared of a staging step (cache, gather): local when absent; false
 * (with the error) for anything else. */
bool xf_mem_kwarg(XfCtx *c, MemSpace *mem, bool global);
bool xf_realign(XfCtx *c);
bool xf_rfactor(XfCtx *c);
bool xf_padding(XfCtx *c);
bool xf_layout(XfCtx *c);
/* Argument 0 as a temporary (padding, layout, fold: an input's or output's layout
 * is the kernel's interface), or NULL with the error. */
Buffer *xf_temp_arg(XfCtx *c);
bool xf_fold(XfCtx *c);                /* xform_fold.c */
/* xform_gpu.c */
bool xf_bind(XfCtx *c);
bool xf_mma(XfCtx *c);
bool xf_wgmma(XfCtx *c);
bool xf_pipeline(XfCtx *c);
/* xform_collapse.c */
bool xf_collapse(XfCtx *c);
/* xform_prefetch.c */
bool xf_prefetch(XfCtx *c);
/* xform_online_softmax.c */
bool xf_online_softmax(XfCtx *c);
/* xform_factor.c */
bool xf_factor_out(XfCtx *c);
bool xf_exp_scale(XfCtx *c);
bool xf_reverse(XfCtx *c);
/* xform_storage.c */
bool xf_storage(XfCtx *c);
/* xform_gather.c */
bool xf_gather(XfCtx *c);
/* xform_skip.c */
bool xf_skip_tiles(XfCtx *c);
bool xf_unmask_tiles(XfCtx *c);

/* How split and tile treat a factor that may not divide the extent: a guard in the
 * inner loop, a peeled tail loop, or the extent padded up to a multiple of the
 * factor (xform_pad.c). */
typedef enum SplitTail { TAIL_GUARD, TAIL_PEEL, TAIL_PAD } SplitTail;
/* Shared by split and tile: the rewrite alone (legality is trivial for split, and
 * xf_pad_legal's for TAIL_PAD). */
void xf_do_split(Kernel *k, Node *l, int64_t f, const char *outer, const char *inner, SplitTail tail,
                 Node **po, Node **pi);
/* xform_pad.c: whether loop l may run past its end (tail=pad); after the split,
 * marks guarded the accesses under outer (variables vo, vi) that may leave their
 * buffers. */
bool xf_pad_legal(XfCtx *c, Node *l);
/* Whether the subtree n holds guarded accesses of a padded split (transformations
 * that build statements of their own refuse those). */
bool xf_padded_within(Node *n);
void xf_pad_mark(Kernel *k, Node *outer, const Var *vo, const Var *vi);
/* Shared by reorder and tile: permutes a perfect band (loops[0] outermost) so that
 * loop order[i] goes to position i; guards between band loops move inside. */
void xf_do_permute(Kernel *k, Node **loops, int n, const int *order);

#endif
