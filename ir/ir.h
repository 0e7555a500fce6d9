/* The loop-nest IR: an ordered tree in the manner of PerfDojo.
 *
 * Inner nodes are loops over one variable (or guards); leaves are statements
 * `T[idx] = expr` or `T[idx] op= expr`.  Buffers carry name, dtype, shape and memory
 * space.  Every node carries the source span it came from, so a transformation that
 * refuses can point at the PDL that produced the loop.
 *
 * Sizes are kept symbolic (IE_PARAM nodes) so the printer shows `for i in 0..M`;
 * a Kernel also carries the values bound with -D (or defaults), which the
 * interpreter and the code generators use.  Index arithmetic is i64; integer
 * division and modulo are floor division and floor modulo.
 *
 * All nodes live in the kernel's arena; ir_free() releases everything at once. */
#ifndef PERFC_IR_IR_H
#define PERFC_IR_IR_H

#include <stdbool.h>
#include <stdint.h>

#include "../lang/diag.h"
#include "../lang/dtype.h"
#include "../lang/util.h"
#include "target.h"

/* Expression kinds:  id, printed spelling, number of operands in args[]. */
#define PF_IR_EXPRS(X)                                                        \
    X(INT, "int", 0)     /* integer constant, i64 or i32 */                   \
    X(FLT, "flt", 0)     /* float constant of its dtype */                    \
    X(PARAM, "param", 0) /* size parameter (u.param) */                       \
    X(VAR, "var", 0)     /* loop variable (u.var) */                          \
    X(LOAD, "load", 0)   /* u.load: buffer element; idx in u.load.idx */      \
    X(CAST, "cast", 1)   /* convert args[0] to dtype */                       \
    X(NEG, "-", 1) X(NOT, "!", 1)                                             \
    X(EXP, "exp", 1) X(LOG, "log", 1) X(SQRT, "sqrt", 1) X(RSQRT, "rsqrt", 1) \
    X(TANH, "tanh", 1) X(ERF, "erf", 1) X(ABS, "abs", 1)                      \
    X(LOG1P, "log1p", 1) X(EXPM1, "expm1", 1)                                 \
    X(FLOOR, "floor", 1) X(CEIL, "ceil", 1) /* float operands only */         \
    X(ROUND, "round", 1) /* to nearest, ties to even (NumPy's round) */       \
    X(ADD, "+", 2) X(SUB, "-", 2) X(MUL, "*", 2) X(DIV, "/", 2)               \
    X(MOD, "%", 2) X(MAX, "max", 2) X(MIN, "min", 2)                          \
    X(POW, "pow", 2) /* float operands only */                                \
    X(LT, "<", 2) X(LE, "<=", 2) X(GT, ">", 2) X(GE, ">=", 2)                 \
    X(EQ, "==", 2) X(NE, "!=", 2) X(AND, "&&", 2) X(OR, "||", 2)              \
    X(SELECT, "select", 3) /* args[0] ? args[1] : args[2] */

typedef enum ExprKind {
#define X(k, s, n) IE_##k,
    PF_IR_EXPRS(X)
#undef X
    IE_COUNT
} ExprKind;
const char *ir_expr_name(ExprKind k);
int ir_expr_arity(ExprKind k);

/* How a loop is executed.  Codegen reads it; transformations set it. */
#define PF_LOOP_KINDS(X)                                       \
    X(SERIAL, "")                                              \
    X(PARALLEL, "parallel")    /* CPU threads */               \
    X(VECTOR, "vector")        /* CPU SIMD; extent = width */  \
    X(UNROLL, "unroll")        /* fully unrolled */            \
    X(BLOCK_X, "block.x") X(BLOCK_Y, "block.y") X(BLOCK_Z, "block.z") \
    /* mma: the i loop of a 16x8x16 tensor-core triple (passes/xform_gpu.c); a    \
     * warp runs the triple at once.  Placed among the GPU kinds so that a check \
     * for BLOCK_X..THREAD_Z (the CPU back end's refusal) covers it. */          \
    X(MMA, "mma")                                                                \
    /* wgmma: the i loop of a 64xNx16 triple run by one warpgroup (4 warps) with \
     * Hopper's asynchronous wgmma, operands read from shared memory. */         \
    X(WGMMA, "wgmma")                                                            \
    /* pipeline: a serial loop whose leading copies into shared memory rotate    \
     * over stages (passes/xform_gpu.c); the CUDA back end overlaps the copies   \
     * of later iterations with this one's work.  Serial everywhere else. */     \
    X(PIPELINE, "pipeline")                                                      \
    X(THREAD_X, "thread.x") X(THREAD_Y, "thread.y") X(THREAD_Z, "thread.z")     \
    /* grid: set by the GPU target lowering (passes/gpu_map.c) on the outer loops  \
     * of an unscheduled launch that it proved parallel: one GPU thread per       \
     * iteration of the whole chain, flattened onto a 1-D grid.  Serial for the   \
     * interpreter; outside the BLOCK_X..THREAD_Z range on purpose (a launch with \
     * only grid loops is no hand-scheduled one). */                              \
    X(GRID, "grid")

typedef enum LoopKind {
#define X(k, s) LOOP_##k,
    PF_LOOP_KINDS(X)
#undef X
    LOOP_COUNT
} LoopKind;
const char *loop_kind_name(LoopKind k);

/* How the CPU back end translates a loop, set by the target lowering passes
 * (passes/cpu_*.c, docs/codegen.md); a hint never changes what the loop computes,
 * and the interpreter ignores it.
 *   memset     a serial nest storing zero over one contiguous range (cpu_fill.c)
 *   memcpy     a serial loop copying a contiguous range (cpu_partition.c)
 *   transpose  a two-loop copy between a register tile and a buffer whose
 *              contiguous dimensions differ: shuffles (cpu_transpose.c)
 *   transpose-blocks  a copy between two buffers in memory, one contiguous along
 *              the head loop (w iterations, a power of two), the other along the
 *              loops inside it taken as one index: w x w blocks loaded as vectors,
 *              transposed with shuffles and stored as vectors, a scalar remainder
 *              (cpu_transpose_blocks.c, the shape ir/cpu_tblocks.c's)
 *   ordered    a vector loop made from a serial one whose reductions into one
 *              element keep the serial order (cpu_vectorize.c)
 *   unroll2    a serial loop run two iterations per trip (cpu_unroll2.c)
 *   dot-product  a loop of two iterations directly in a vector loop, whose one
 *              statement adds the product of two bf16 values to an f32 lane:
 *              the pair is one lane of vdpbf16ps, the A value of both iterations
 *              one 32-bit broadcast, the B values interleaved pairs (cpu_dot.c)
 *   interleave a loop of two iterations directly in a vector loop, whose one
 *              statement copies a 16-bit value contiguous in the lanes to
 *              element 2 * lane + iteration: two vector loads, one shuffle, one
 *              store (the pair packing of cpu_dot.c) */
#define PF_LOOP_HINTS(X) \
    X(NONE, "") X(FILL, "memset") X(COPY, "memcpy") X(TRANSPOSE, "transpose") X(TRANSPOSE_BLOCKS, "transpose-blocks") X(ORDERED, "ordered") X(TWICE, "unroll2") \
    X(DOT, "dot-product") X(INTERLEAVE, "interleave") X(TILES, "amx-tiles") \
    PF_GPU_LOOP_HINTS(X)
/* How the CUDA back end translates a loop, set by the GPU target lowering
 * (passes/gpu_*.c, docs/cuda.md); like the CPU hints, never a change of meaning.
 *   lane-rows, lane-cols  a row (column) loop over a tensor-core accumulator whose
 *              iterations are spread over the lanes that hold the elements in
 *              fragment layout (passes/gpu_mma.c); the two come as a pair, one
 *              directly holding the other
 *   quad-rows  a row loop alone (no column loop) over per-row vectors (mma-rows):
 *              each lane runs the rows it holds, the four lanes of a quad alike
 *   lane-cols2 lane-cols whose one store to global memory writes each lane's two
 *              adjacent columns as one 8-byte access
 *   wide       a vector loop whose one statement copies 8 or 16 contiguous, aligned
 *              bytes as one access (passes/gpu_vector.c)
 *   cp.async   a wide copy from global to shared memory that a software pipeline
 *              issues asynchronously (passes/gpu_pipeline.c) */
#define PF_GPU_LOOP_HINTS(X) \
    X(QUAD_ROWS, "quad-rows") X(LANE_ROWS, "lane-rows") X(LANE_COLS, "lane-cols") X(LANE_COLS2, "lane-cols2") X(WIDE, "wide") X(ASYNC, "cp.async")
typedef enum LoopHint {
#define X(k, s) HINT_##k,
    PF_LOOP_HINTS(X)
#undef X
    HINT_COUNT
} LoopHint;
const char *loop_hint_name(LoopHint h);

/* Statement update operators: `=`, `+=`, `*=`, `max=`, `min=`. */
#define PF_STMT_OPS(X) X(ASSIGN, "=") X(ADD, "+=") X(MUL, "*=") X(MAX, "max=") X(MIN, "min=")
typedef enum StmtOp {
#define X(k, s) SOP_##k,
    PF_STMT_OPS(X)
#undef X
} StmtOp;
const char *stmt_op_name(StmtOp op);

#define PF_MEM_SPACES(X) X(GLOBAL, "global") X(SHARED, "shared") X(LOCAL, "local")
typedef enum MemSpace {
#define X(k, s) MEM_##k,
    PF_MEM_SPACES(X)
#undef X
} MemSpace;
const char *mem_space_name(MemSpace m);

typedef enum BufKind { BUF_IN, BUF_OUT, BUF_TEMP } BufKind;
/* Buffer.layout (below); printed "mma-fragment", "wgmma-fragment", "swizzle128",
 * "mma-rows". */
typedef enum BufLayout { LAYOUT_PLAIN, LAYOUT_MMA_ACC, LAYOUT_WGMMA_ACC, LAYOUT_SWIZZLE128, LAYOUT_MMA_ROWS } BufLayout;

typedef struct Expr Expr;
typedef struct Node Node;

typedef struct Var {
    int id;
    const char *name;       /* unique within the kernel */
} Var;

typedef struct Buffer {
    int id;                 /* position in Kernel.bufs: the ABI order */
    const char *name;
    DType dtype;
    BufKind kind;
    MemSpace mem;
    int rank;
    Expr **shape;           /* size expressions (INT, PARAM and arithmetic on them) */
    bool has_pad;           /* out-of-range reads of a padded input yield pad */
    double pad;
    /* An input's domain, range(lo, hi) or distinct(lo, hi): the harness draws its
     * values from [lo, hi) (ir/domain.c).  FLT constants for a float buffer, size
     * expressions for an integer one; NULL without a domain. */
    Expr *dom_lo, *dom_hi;
    bool dom_distinct;
    Span span;
    /* Set by staging transformations (passes/xform_cache.c, xform_rfactor.c): every
     * read of this buffer gets its value from a write in the same iteration of each
     * loop whose variable is listed, so a parallel loop over one of them may give
     * each thread its own copy (as codegen does for MEM_LOCAL temporaries). */
    struct Var **private_in;
    int nprivate_in;
    /* Set by the GPU target lowering (passes/gpu_privatize.c) on MEM_LOCAL buffers:
     * the buffer exists once per thread along each thread dimension x, y, z whose
     * entry is non-zero (that many copies: the block's extent there), and an access
     * reaches the copy of the thread running it, named by the enclosing loop bound
     * to that dimension (its variable minus its start).  0: one copy for all the
     * threads along that dimension.  The shape is one thread's copy. */
    int64_t thread_copies[3];
    /* Set by the GPU target lowering (passes/gpu_mma.c): how the CUDA back end lays
     * the buffer out.  An mma (wgmma) accumulator is held in the m16n8k16 (m64nNk16)
     * fragment layout, spread over the registers of a warp (warpgroup); a wgmma
     * operand lies in shared memory in the 128-byte swizzled layout wgmma reads;
     * a per-row vector beside an mma accumulator (a running maximum, a row sum)
     * holds row r in the lanes that hold that row of the accumulator (lane / 4 ==
     * r % 8), register r / 8 (mma-rows).
     * The element values and the interpreter are unaffected. */
    BufLayout layout;
} Buffer;

struct Expr {
    ExprKind kind;
    DType dtype;
    Span span;
    Expr *args[3];
    union {
        int64_t i;          /* INT */
        double f;           /* FLT */
        int param;          /* PARAM: index into Kernel.params */
        Var *var;           /* VAR */
        struct {
            Buffer *buf;
            Expr **idx;     /* buf->rank index expressions (i64) */
            /* may be out of range: yields buf->pad there (0 for a buffer without
             * one: a padded split's tail, passes/xform_loop.c) */
            bool guarded;
            /* Set by the GPU target lowering (passes/gpu_vector.c): a load in a
             * vector loop of 2 or 4 lanes whose last index is `base + lane`, read
             * for all lanes at once as one aligned float2/float4 before the loop. */
            bool wide;
        } load;
    } u;
};

typedef struct NodeList {
    Node **v;
    int n, cap;
} NodeList;

/* N_PREFETCH: a hint with no effect on results (schedule `prefetch`, passes/
 * xform_prefetch.c): fetch the box buf[idx[0] .. idx[0]+ext[0]-1, ...] toward the
 * cache.  A leaf; ir_body() gives it an empty body, so a walker that only descends
 * sees a node holding no statements.  The interpreter and the dependence analysis
 * ignore it; code generators may clamp the box into the buffer or drop it. */
typedef enum NodeKind { N_LOOP, N_STMT, N_IF, N_PREFETCH } NodeKind;

struct Node {
    NodeKind kind;
    Span span;
    Node *parent;           /* NULL at the top level; maintained by ir_list_* */
    /* Set by the GPU target lowering (passes/gpu_barrier.c): a block-wide barrier
     * (__syncthreads) runs before this block-level step of a scheduled launch.
     * No meaning for the serial IR, which the interpreter runs. */
    bool barrier;
    union {
        struct {
            Var *var;
            Expr *lo, *hi;  /* for var in lo..hi (hi exclusive) */
            LoopKind kind;
            /* pipeline loops: iterations whose asynchronous tensor-core work may
             * still read their stage when the next one starts (pipeline(.., inflight=)) */
            int inflight;
            NodeList body;
            LoopHint hint;  /* translation hint; HINT_NONE until target lowering */
            /* Pipeline loops the GPU target lowering accepted (passes/gpu_pipeline.c):
             * the first ncopies nodes of the body are the copies of the stage ring
             * of `stages` stages (first index `var % stages`).  0: run serially. */
            int stages, ncopies;
            /* Set by the same pass: the copies that are not asynchronous (rows too
             * narrow for cp.async's 4-byte minimum) load this many elements per
             * thread into registers before the body and store them after it, so
             * their latency hides behind the body's work.  0: copied in place. */
            int reg_staged;
            /* Set by the GPU target lowering (passes/gpu_frag_ahead.c) on the loop
             * over 16-deep slices of a pipeline's stage around one mma group: the
             * back end reads each slice's fragments while the slice before issues
             * its products, and admits the next stage before the last slice's
             * products.  No meaning for the serial IR. */
            bool frag_ahead;
            /* Set by the same pass on the last loop of a pipeline's body when that
             * loop runs slices of one mma.sync group after other work (attention's
             * P.V after its softmax): the back end admits the next stage (wait,
             * barrier, copies) in the last slice, after its fragments are read and
             * before its products, instead of at the top of the next iteration.
             * No meaning for the serial IR. */
            bool admit_last;
            /* The head of a tensor-core group (passes/gpu_mma.c): this loop is an
             * mma/wgmma triple or the outermost of the unrolled loops directly
             * around one, and the group's products are spelled out here. */
            struct TcGroup *tc;
            /* Set by the GPU target lowering (passes/gpu_tma.c) on a copy node of an
             * accepted pipeline: the copy is one box of a global tensor, issued as
             * bulk tensor copies (TMA) by one thread; see TmaCopy. */
            struct TmaCopy *tma;
            /* Set by the GPU target lowering (passes/gpu_barrier.c) on a block-level
             * loop of a scheduled launch: a block-wide barrier closes every iteration
             * (the next one overwrites shared memory this one reads). */
            bool barrier_each;
        } loop;
        struct {
            Buffer *buf;
            Expr **idx;
            StmtOp op;
            Expr *value;
            /* Set by the GPU target lowering (passes/gpu_reduce.c): a `+= *= max=
             * min=` inside a thread.x loop at an index that loop does not move; the
             * threads fold their own iterations into a partial and the partials are
             * combined once across the block (a block-wide reduction).  Serial
             * meaning unchanged: the interpreter runs it as written. */
            bool block_reduce;
            /* Set by the GPU target lowering (passes/gpu_mma.c): an update `op=` of a
             * per-row vector (mma-rows) inside the column loop of an accumulator's
             * lane pair, at an index the column loop does not move; each lane folds
             * its own columns and the four lanes that share the row combine their
             * partials with two shuffles (a quad reduction).  Serial meaning unchanged. */
            bool lane_reduce;
            /* Set by the GPU target lowering (passes/gpu_map.c) on a scatter's `+=`
             * whose terms run on parallel grid loops: the update is one atomic
             * read-modify-write.  Serial meaning unchanged (order of the terms aside,
             * which a sum may reassociate). */
            bool atomic;
            /* Set by the GPU target lowering (passes/gpu_scan.c) on a scan's running
             * update `acc op= v` inside the thread.x loop of a block-wide scan: the
             * threads' chunks are combined by a block scan.  Serial meaning unchanged. */
            bool block_scan;
            /* The store may fall outside the buffer, and is then dropped: the
             * padded iterations of `split(.., tail=pad)` (passes/xform_loop.c),
             * which write only outside the buffer or add zero. */
            bool guarded;
        } stmt;
        struct {
            Expr *cond;     /* BOOL */
            NodeList body;
            /* Added by target lowering only (passes/cpu_version.c): run when cond is
             * false.  Walkers of scheduled IR never see one; ir_else() gives it. */
            NodeList els;
            /* Known to hold wherever it is reached (proven by the pass that set it:
             * a versioned or narrowed loop); back ends may emit the body alone. */
            bool holds;
            /* Only skips work that changes nothing: where cond is false the body
             * would leave every value as it is (set by the transformation that
             * proved it: online_softmax's tile guard).  So a transformation may drop
             * it, or replace it by a weaker condition (skip_tiles). */
            bool skip;
        } guard;
        struct {
            Buffer *buf;
            /* Always empty: what ir_body() returns.  It lies where guard.body lies
             * (ir.c asserts it), so code that takes any non-loop for a guard finds
             * an empty body too. */
            NodeList none;
            Expr **idx;     /* first element of the box, buf->rank indices (i64) */
            int64_t *ext;   /* the box's extent per dimension, each >= 1 */
            bool write;     /* fetched to be written (the box is stored, not read) */
        } pf;
    } u;
};

/* A tensor-core group (passes/gpu_mma.c): the triple and the perfectly nested
 * unrolled loops around it, run as nprod products on fragments that are each
 * loaded once.  Product t (the group's loops at their t-th values, innermost
 * fastest; the triple's variables at 0) reads operand tiles at a[t] and b[t]
 * (full index lists of the operand buffers) and accumulates into the 16 x 8
 * (mma) or 64 x N (wgmma) tile at (row, col) of the accumulator. */
typedef struct TcProduct {
    Expr **a, **b;
    int64_t row, col;
    int fa, fb;         /* mma: the A and B fragment it uses (fragments in order of first use) */
} TcProduct;
typedef struct TcGroup {
    int nloops;         /* unrolled loops of the group above the triple (0: the triple alone) */
    int nprod, nfa, nfb;
    TcProduct *prod;
    Buffer *opbuf[2];   /* the operands' buffers (shared memory), A then B */
    /* Operand a (0) and b (1): read transposed (ldmatrix .trans; wgmma M/N-major),
     * and for mma the element strides of a fragment-row step and of a k step, for
     * wgmma the descriptor's leading byte offset in [0]. */
    bool trans[2];
    int64_t stride[2][2];
    int64_t n;          /* wgmma: the N of m64nNk16 */
    /* mma: operand A is a local buffer in accumulator fragment layout (a warp's
     * own 16-bit results, flash attention's probabilities), packed from registers
     * instead of loaded: the C fragments of two adjacent 8-column tiles are the A
     * fragment of their 16 columns. */
    bool areg;
    /* mma: B fragments 2i and 2i + 1 lie 8 apart along N in the same k slice (every
     * pair, nfb even), so one ldmatrix .x4 reads both. */
    bool bpairs;
} TcGroup;

/* A staging copy that passes/gpu_tma.c proved to be one box of a global tensor:
 * for every r < rows and c < cols, stage `stage` of dst holds at [r, c] the element
 * of src at origin + r along dimension rdim and + c along the last dimension (the
 * other dimensions at their origin); outside src it holds 0.  dst is in the
 * 128-byte swizzled layout, in panels of 64 columns: one bulk copy each. */
typedef struct TmaCopy {
    Buffer *src, *dst;
    Expr *stage;        /* dst's first index */
    Expr **origin;      /* rank expressions */
    int rdim;           /* the view's dimension dst's rows run along */
    int64_t rows, cols; /* the box: dst's last two extents */
    /* The tensor the box is taken from: src itself (rank = src->rank, shape =
     * src's extents), or src with its leading dimensions read as one (rank 2,
     * shape {their product, the last}: a convolution's image read through the
     * output-pixel index, passes/gpu_tma.c) */
    int rank;
    int64_t shape[5];
} TmaCopy;

typedef struct Param {
    const char *name;
    bool bound;
    int64_t value;
} Param;

typedef struct Kernel {
    Arena *arena;
    const char *name;
    Span span;
    Param *params;
    int nparams;
    Buffer **bufs;          /* inputs, then outputs, then temporaries, declaration order */
    int nbufs, capbufs;
    Var **vars;
    int nvars, capvars;
    struct VarNames *names; /* ir.c: name -> Var hash behind ir_new_var/ir_find_var */
    NodeList body;
    /* The CPU target the CPU lowering passes (passes/cpu_*.c) ran for, or NULL:
     * the LLVM back end translates only a kernel they have lowered. */
    const Target *cpu_lowered;
    /* The GPU target the target passes (passes/gpu_*.c) lowered this kernel for,
     * or NULL: codegen/cuda translates only a kernel they have lowered. */
    const Target *gpu_lowered;
    /* Set with gpu_lowered when every float result of the kernel is stored in a
     * 16-bit type (passes/pipeline.c): exp may then be the hardware's approximate
     * exponential (relative error about 1e-5 over the range where exp is a normal
     * f32, against the 2e-3 and 5e-4 to which bf16 and f16 round the results);
     * printed `fast-exp` after the kernel's buffers. */
    bool fast_exp;
    /* The target a schedule is being applied for (set by passes/pipeline.c around
     * the `schedule` pass), or NULL: the transformations refuse, at the schedule
     * statement, what it cannot run (passes/xform.c). */
    const Target *target;
} Kernel;

/* ---- ir/ir.c: construction ---- */
Kernel *ir_kernel_new(const char *name, Span sp);
void ir_free(Kernel *k);
Param *ir_add_param(Kernel *k, const char *name);
Buffer *ir_add_buffer(Kernel *k, const char *name, DType t, BufKind kind, int rank, Span sp);
/* A fresh variable; if the name is taken, a numeric suffix makes it unique. */
Var *ir_new_var(Kernel *k, const char *name);
Var *ir_find_var(const Kernel *k, const char *name);
Buffer *ir_find_buffer(const Kernel *k, const char *name);

Expr *ir_int(Kernel *k, int64_t v);                 /* i64 constant */
Expr *ir_flt(Kernel *k, double v, DType t);
Expr *ir_param(Kernel *k, int p);
Expr *ir_var(Kernel *k, Var *v);
Expr *ir_load(Kernel *k, Buffer *b, Expr **idx);    /* idx copied */
Expr *ir_cast(Kernel *k, Expr *a, DType t);         /* no-op when a->dtype == t */
Expr *ir_un(Kernel *k, ExprKind op, Expr *a);
Expr *ir_bin(Kernel *k, ExprKind op, Expr *a, Expr *b); /* result dtype by kind */
Expr *ir_select(Kernel *k, Expr *c, Expr *a, Expr *b);
Expr *ir_clone_expr(Kernel *k, const Expr *e);
/* True when v occurs anywhere in e, load indices included. */
bool ir_expr_uses_var(const Expr *e, const Var *v);
/* Replaces every use of v by a copy of with; returns the new tree (a fresh copy:
 * e itself is left intact). */
Expr *ir_subst(Kernel *k, Expr *e, const Var *v, const Expr *with);
/* Folds constants and simplifies x+0, x*1, x*0 on integer (index) arithmetic.
 * Rewrites e in place; returns the new root. */
Expr *ir_simplify(Kernel *k, Expr *e);

Node *ir_loop(Kernel *k, Var *v, Expr *lo, Expr *hi, Span sp);
Node *ir_stmt(Kernel *k, Buffer *b, Expr **idx, StmtOp op, Expr *value, Span sp);
Node *ir_guard(Kernel *k, Expr *cond, Span sp);
/* A prefetch of the box of b starting at idx[] with extents ext[] (both copied). */
Node *ir_prefetch(Kernel *k, Buffer *b, Expr **idx, const int64_t *ext, Span sp);
void ir_list_push(NodeList *l, Node *n, Node *parent);
void ir_list_insert(NodeList *l, int at, Node *n, Node *parent);
void ir_list_remove(NodeList *l, int at);
NodeList *ir_body(Node *n);  /* loop or guard body; a prefetch's empty one; else NULL */
NodeList *ir_else(Node *n);  /* a guard's else body (often empty); else NULL */
/* True when l holds nothing but prefetches (no loop, guard or statement). */
bool ir_list_only_prefetch(const NodeList *l);
/* Deep copy of a subtree (variables are shared, not renamed). */
Node *ir_clone_node(Kernel *k, const Node *n);
/* A deep copy of a whole kernel in an arena of its own (buffers and variables too,
 * same ids and names). */
Kernel *ir_clone_kernel(const Kernel *k);
/* Finds the loop whose variable has this name. */
Node *ir_find_loop(Kernel *k, const char *name);

/* ---- ir/print.c: the IR's face ---- */
/* The printed form (docs/schedules.md shows it).  Deterministic; golden tests compare it. */
void ir_print_kernel(const Kernel *k, StrBuf *out);
void ir_print_expr(const Kernel *k, const Expr *e, StrBuf *out);

/* ---- ir/verify.c ---- */
/* Checks structural invariants (parents, arity, dtypes, variables in scope, index
 * ranks).  Returns false and reports with internal-error wording on failure. */
bool ir_verify(const Kernel *k, Diags *d);

/* ---- ir/eval.c: integer evaluation of sizes (shared by everyone) ---- */
/* Evaluates a size expression with the kernel's bound parameter values. */
bool ir_eval_size(const Kernel *k, const Expr *e, int64_t *out);
/* ---- domain.c ---- */
/* Draws the n values of input b from its declared domain into v (doubles, rounded
 * to b's dtype); false with a message in err when the domain cannot be drawn at
 * these sizes (an empty range; more distinct values asked for than it holds).
 * A buffer without a domain is left to the caller (ir_has_domain is false). */
bool ir_has_domain(const Buffer *b);
bool ir_domain_check(const Kernel *k, const Buffer *b, int64_t n, char *err, size_t errn);
bool ir_domain_fill(const Kernel *k, const Buffer *b, int64_t n, Rng *r, double *v, char *err, size_t errn);
/* Whether the n values v of integer input b lie in its declared range (given data:
 * a gather's index tensor must, since lowering bounds reads with it); float
 * buffers and buffers without a domain always pass. */
bool ir_domain_holds(const Kernel *k, const Buffer *b, const double *v, int64_t n, char *err, size_t errn);
/* Number of elements of a buffer, or -1 if a parameter is unbound. */
int64_t ir_buffer_elems(const Kernel *k, const Buffer *b);
/* True when every parameter has a value. */
bool ir_all_bound(const Kernel *k, Diags *d);

/* ---- ir/interp.c: the f64 reference interpreter ---- */
/* Runs the kernel in f64.  bufs[i] holds Kernel.bufs[i]'s elements as doubles,
 * row-major; temporaries may be NULL (the interpreter allocates them).  Inputs are
 * used as given: callers round them to their dtype first (ir_alloc_buffers does).
 * Returns false with a diagnostic on an out-of-range access of an unpadded buffer. */
bool ir_interp(const Kernel *k, double **bufs, Diags *d);
/* The same with the interpreter's own check elimination off: accesses its interval
 * analysis proves in range are checked too (and a padded read tests its range).
 * Slower; tests run it beside ir_interp to catch an unsound proof. */
bool ir_interp_checked(const Kernel *k, double **bufs, Diags *d);
/* Fills every input with seeded uniform values in [-1, 1) rounded to its dtype
 * (i32: integers in [-8, 8]; never all zero); allocates outputs and temporaries
 * poisoned with NaN.  NULL when a size is unbound or over 2^37 elements.  Caller
 * frees with ir_free_buffers. */
double **ir_alloc_buffers(const Kernel *k, uint64_t seed);
void ir_free_buffers(const Kernel *k, double **bufs);

#endif
