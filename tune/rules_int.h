/* What tune/rules.c and the tensor-core templates of tune/rules_tc.c share: the
 * nest as the rules read it (NestInfo) and the way a template joins the space.
 * Internal to tune/. */
#ifndef PERFC_TUNE_RULES_INT_H
#define PERFC_TUNE_RULES_INT_H

#include "../ir/target.h"
#include "builder.h"
#include "tune.h"

/* One statement's nest as the templates see it: names read off the lowered kernel,
 * extents, and for a reduction its operands. */
typedef struct NestInfo {
    int nloops, nspatial;
    const char *loop[16];
    int64_t ext[16];
    bool red, mul;           /* a reduction; its value is a product (or a quotient
                                whose divisor factor_out takes out of the sum) */
    bool quot;               /* the value is a quotient (the CPU template factors it) */
    const char *out;         /* the reduction's output */
    DType out_t;
    /* over the last two spatial loops a, b: the operand read along b only (GEMM's
     * B, the panel) and along a only (GEMM's A); NULL when none */
    const char *pb, *pa;
    DType pb_t, pa_t;
    /* their layouts: rank, the dimension the reduction loop indexes and the one the
     * row (A) or column (B) loop indexes (-1: none, or more than one) */
    int pa_rank, pa_kdim, pa_sdim;
    int pb_rank, pb_kdim, pb_sdim;
    bool pa_in, pb_in;       /* the operand is an input of the kernel */
    bool self;               /* A and B are one buffer read in two roles (X·Xᵀ):
                                each role packed through cache(.., using=) */
    /* what the nest's last statement writes (an epilogue's result), its row length
     * (0: not known) and whether it is an output of the kernel */
    const char *wr;
    DType wr_t;
    int64_t wr_row;
    bool wr_out;
    /* factor_out applies to the outermost reduction loop: every term carries a
     * factor the reduction does not move (a product scaled inside the sum) */
    bool scaled;
    int threads;             /* the threads it will run on (rules_threads) */
} NestInfo;

/* An implicit GEMM (tune/rules_igemm.c): a contraction with several row loops or
 * several reduction loops (a convolution) read as the product of M rows (its row
 * loops), N columns and K (its reduction), which the prelude makes its nest. */
enum { IG_MAX = 6, IG_MAX_CONS = 7 };

typedef struct IgPlan {
    int nm;                               /* row loops (the spatial loops before the column) */
    const char *spat[IG_MAX_CONS + 1][IG_MAX + 1]; /* per nest (the product, its consumers): its
                                             spatial loops, the column last */
    int ncons;
    const char *red[IG_MAX];              /* the reduction loops, outermost first */
    int nred, cred;                       /* cred: the one along A's and B's rows */
    int64_t C;                            /* its extent */
    bool sum_is_result;                   /* the product accumulates into the f32 result
                                             (else into the temporary of a 16-bit one) */
    NestInfo gemm;                        /* the product as M x N x K, operands 2-D */
} IgPlan;

/* The loops the prelude leaves: rows, columns, the K steps and the step. */
typedef struct IgLoops {
    SLoop *m, *j, *ko, *kt;
} IgLoops;

/* The plan for nest ns[0] (its chain of loops, outermost first, and its reduction
 * statement s, as tune/rules.c read them) and its consumers ns[1..nn), or NULL when
 * it is no implicit GEMM on 16-bit operands (or a plain GEMM). */
const IgPlan *rules_igemm_read(const Kernel *u, Node *const *loops, const Node *s, const NestInfo *const *ns, int nn,
                               Arena *a);
/* The steps that make the nest the plan's product, K step bk; false when refused. */
bool rules_igemm_prelude(Builder *b, const IgPlan *p, int bk, IgLoops *out);

/* Checks the template fn(ctx) at its defaults and adds it to the space when it
 * applies whole; tc: it uses tensor cores (the space's class says so). */
void rules_offer(const TuneInput *in, TuneBuildFn fn, const void *ctx, Arena *a, TuneSpace *sp, const char *origin,
                 bool tc);

/* The tensor-core templates (wgmma where the target has it, then mma.sync) for a
 * contraction ns[0] whose elementwise consumers ns[1..nn) are fused into its
 * accumulator write-back.  Offers nothing when the nest is no 16-bit product. */
void rules_tensor_cores(const TuneInput *in, const NestInfo *const *ns, int nn, const Target *target, Arena *a,
                        TuneSpace *sp);
enum { RULES_MAX_GROUPS = 4 }; /* products of one kernel the templates take */

/* The same templates for several contractions in one kernel, each followed by its
 * elementwise consumers: ns[start[g]] the product of group g, the nests up to the
 * next group's its consumers (nn nests in all); each group gets its own first
 * template.  Offers nothing for fewer than two groups or more than RULES_MAX_GROUPS. */
void rules_tensor_cores_groups(const TuneInput *in, const NestInfo *const *ns, const int *start, int ng, int nn,
                               const Target *target, Arena *a, TuneSpace *sp);
/* The same templates for an implicit GEMM (no split-K, the result written from the
 * fragments). */
void rules_tensor_cores_igemm(const TuneInput *in, const IgPlan *p, const Target *target, Arena *a, TuneSpace *sp);

/* The flash-attention templates (tune/rules_attn.c: wgmma on sm_90a, mma.sync) and
 * the decoding template for a kernel whose nests form the softmax-then-product chain
 * online_softmax fuses; offers nothing otherwise.  True when it offered one. */
bool rules_attention(const TuneInput *in, const Kernel *u, const Target *target, Arena *a, TuneSpace *sp);

/* The first reducing statement (an op other than `=`) at or under n, or NULL
 * (tune/rules.c: the nests' reading, and the row-wise template's). */
Node *rules_find_reduction(Node *n);

/* The GPU template for row-wise chains (tune/rules_rows.c): every nest over the same
 * rows, reducing, computing one value or mapping a row; a row a block.  True when
 * it offered it. */
bool rules_rows_gpu(const TuneInput *in, const Kernel *u, const NestInfo *const *infos, int nn, Arena *a,
                    TuneSpace *sp);

/* The softmax-then-product chain as the attention templates read it (rules_attn_read):
 * online_softmax's arguments, the loop order it needs, the tensors and loops of the
 * fused nest by name, and what the GPU template decides from them. */
enum { MAXB = 4 }; /* batch loops read (the GPU template binds at most two: GPU_MAXB) */

typedef struct AttnCtx {
    const char *out, *j;         /* online_softmax's arguments */
    const char *order[8];        /* the contraction nest's loops reordered so first (row_order) */
    int norder;                  /* 0: already in the order the chain needs */
    const char *rowloop;         /* the contraction nest's row loop before online_softmax, or NULL */
    bool fuses;                  /* online_softmax applies (set even where the fused nest is
                                    not read: more than MAXB batch loops, another shape) */
    const char *score_sum;       /* the score nest's sum loop, when factor_out applies; else NULL */
    bool exp_scale;              /* the scale then moves into the exponentials (exp_scale) */
    const char *batch[MAXB];
    int nbatch;
    const char *row;
    const char *Q, *K, *V, *s, *p, *m, *l, *ms, *acc;
    const char *dt;              /* the operands' type: the exponentials are stored so */
    DType dtype;
    int nscore;                  /* stages before the maximum's */
    const char *sstage[4];       /* the score stages after the product (a bias, a scale
                                    exp_scale did not take): their tile buffers */
    int nsstage;
    const char *sin[2];          /* inputs those stages read by row and key (a bias
                                    table): staged in shared memory on GPUs */
    int nsin;
    int64_t sin_w[2];            /* their elements in 16 bytes */
    bool masked;                 /* the chain has a mask: its tiles sit in a skip guard */
    bool pad_rows;               /* rows not a multiple of rb: the last block runs past them */
    int64_t rb;                  /* query rows a block: 128, or 64 when 128 would leave SMs idle */
    int64_t dh;                  /* the head size */
    int64_t rows;                /* the query rows (the row loop's extent) */
    int64_t keys;                /* the keys, rounded up to a whole tile */
    bool wg;                     /* wgmma (sm_90a): a warpgroup of 128 threads per 64 rows */
} AttnCtx;

/* Reads the chain off a copy of u on which the template's first moves (row_order's
 * reorder, factor_out, online_softmax, exp_scale) were applied; false when u holds
 * none, or when the fused nest is not read whole (x->fuses tells whether online_softmax
 * applied at all).  Shared by the GPU template (tune/rules_attn.c) and the CPU one
 * (tune/rules_attn_cpu.c). */
bool rules_attn_read(const Kernel *u, AttnCtx *x, Arena *a);

/* The templates' first step: the contraction nest's loops in the order the reading
 * found the chain in (nothing when they already are). */
void rules_attn_order(Builder *b, const AttnCtx *x);

/* The fused nest's shape, shared by the templates once the row loop is split (fii
 * the rows of a block): the block's statements apart, cp[0..3] the running sum's and
 * the accumulator's initialisations, the row loop holding the key tiles and the
 * normalisation (fii keeps the maximum's initialisation); the key tile loop *jo
 * moved outside the rows, and under a mask bounded to the tiles the block needs
 * (skip_tiles).  False when the nest is not the one online_softmax leaves. */
bool rules_attn_tiles(Builder *b, const AttnCtx *x, SLoop *fii, SLoop *cp[4], SLoop **jo);
/* Then the tile's stages apart: stg[0] is cp2 itself; their number, or -1 when it is
 * not the nscore + 7 the reading found. */
int rules_attn_stages(Builder *b, const AttnCtx *x, SLoop *cp2, SLoop *stg[24]);

/* The score stages after the product (x->sstage) staged a key tile at a time at jo,
 * like the product's own tile: without it a bias stage's scores went through a
 * buffer of rows x keys in global memory (10.95 against 0.32 ms at 4x16x2048x64 on
 * an H200, with the bias table staged too). */
void rules_attn_stage_tiles(Builder *b, const AttnCtx *x, SLoop *jo);

/* The GPU template for a chain tensor cores do not take (f32, head sizes not a
 * multiple of 8): fused, one query row a thread (tune/rules_attn_simt.c). */
void rules_attention_simt(const TuneInput *in, const AttnCtx *x, Arena *a, TuneSpace *sp);

/* The GPU templates' grid: the row blocks and the batch loops on the block axes (the
 * row blocks on z under a mask, so the longest start first), batch loops beyond two
 * collapsed into the outermost. */
bool rules_attn_grid(Builder *b, const AttnCtx *x, SLoop *fio);

/* The AMX template for a bf16 product into f32 (tune/rules_amx.c): its context for
 * nest n on the target, or NULL where it does not apply; then its builder. */
const void *rules_amx_read(const NestInfo *n, const Target *target, Arena *a);
bool rules_amx_b(Builder *b, const void *ctx);

/* The CPU template for the same chain (tune/rules_attn_cpu.c): fused, K staged
 * transposed per head, register tiles of a few rows; true when it offered it. */
bool rules_attention_cpu(const TuneInput *in, const Kernel *u, const Target *target, Arena *a, TuneSpace *sp);

/* What the flash template's reading of the chain found, by name: the tensors of the
 * chain (scores, maximum, exponentials, sum, output), the operands Q, K and V, and the
 * score's sum loop when factor_out applies to it (else NULL). */
typedef struct AttnNames {
    const char *out, *s, *m, *p, *l, *Q, *K, *V, *score_sum;
} AttnNames;

/* Helpers the attention templates share (tune/rules_attn.c): a transformation tried
 * quietly (true when it applied), the first sum loop at or under n, and a loop's
 * extent when it runs from 0 to a positive constant. */
bool rules_try_apply(Kernel *k, const char *xf, SchedArg *args, int n);
/* The threads the kernel will run on: the run's --threads, else every core. */
int rules_threads(const TuneInput *in);
/* factor_out applies to `loop` of u (tried on a copy, u untouched). */
bool rules_factor_out_applies(const Kernel *u, const char *loop);
Node *rules_find_sum_loop(Node *n);
bool rules_const_extent(const Kernel *k, const Node *l, int64_t *e);

/* The decoding template (tune/rules_decode.c): the chain's nests kept apart, each
 * spread over the keys, for a few query rows against many keys; offers nothing when
 * the lowered nests are not the plain five of the chain. */
void rules_decode(const TuneInput *in, const Kernel *u, const AttnNames *an, Arena *a, TuneSpace *sp);

#endif
