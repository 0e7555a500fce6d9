/* Shared by the files of the CUDA emitter (emit.c: expressions, statements, loops,
 * launches; emit_tc.c: tensor-core groups, fragment accesses and software
 * pipelines).  They translate what the GPU target passes (passes/gpu_*.c) wrote
 * into the IR; the state here is where the printing stands, nothing decided. */
#ifndef PERFC_CODEGEN_CUDA_EMIT_INT_H
#define PERFC_CODEGEN_CUDA_EMIT_INT_H

#include "cg_cuda.h"

typedef struct Em {
    const Kernel *k;
    const Target *arch;
    Diags *d;
    StrBuf *o;
    Arena *names;       /* the printed names (the kernel is only read) */
    int ind;
    bool ok;
    bool idx64;
    char **bname, **vname, **pname;
    /* the launch being emitted */
    bool sched;
    int tdepth;                 /* enclosing thread loops */
    int64_t block[3], grid[3];
    int64_t *soff;              /* per buffer: offset in dynamic shared memory, -1 */
    /* Wide loads (passes/gpu_vector.c) of the vector loop being emitted, read before
     * it: emit_expr prints pf_v<N>[lane] for them. */
    const Expr *vload[32];
    int vid[32];
    int nvload, nextv;
    const Var *vlane;
    /* Tensor cores (passes/gpu_mma.c set the layouts): the launch holds fragment
     * accumulators (frag), of warpgroups (wg), and swizzled wgmma operands (swz). */
    bool frag, wg, swz;
    /* Set while printing the address of a guarded global load: every index is
     * clamped into its dimension (pf_clamp), so the load is valid wherever it runs. */
    bool clamp;
    /* dvar/dname: the accumulator's row (0) and column (1) loops now being spread
     * over the lanes, and how a fragment index names them (fragmode: being printed). */
    const Var *dvar[2];
    char dname[2][192];
    bool fragmode;
    /* The quad reductions of the column loop being emitted (passes/gpu_mma_rows.c):
     * each folds into the register pf_lq<i> until the loop ends. */
    const Node *lred[8];
    int nlred;
    uint8_t wgdone[2][33][6];   /* wgmma helpers written (dtype, N / 8, transposes; 4 + B's with A in registers) */
    bool wgpre;
    StrBuf helpers;     /* helper functions the launch being emitted needs first */
    int wg_inflight;    /* wgmma groups left in flight at the end of a group (pipeline inflight=) */
    int nmma;
    /* The variable of the software pipeline being emitted: its `v % S` stage
     * indices print as unsigned remainders (v never goes below 0 there). */
    const Var *pvar;
    int npipe;
    /* The top node of the launch being emitted: irange() finds the loops of
     * variables there (a collapsed loop's `v / 4` prints as a shift when v >= 0). */
    const Node *top;
    /* The block-reduce statement being emitted (passes/gpu_reduce.c): emit_stmt
     * folds its value into the thread's partial pf_red instead. */
    const Node *red_stmt;
    bool scan_helpers;  /* the block-scan helpers (emit_scan.c) are written */
    /* A pipeline's copies staged through registers (passes/gpu_pipeline.c): phase
     * 1 loads them into pf_rs, phase 2 stores them; each statement's elements start
     * at rnext, indexed by the unrolled loops now open around it (rloop). */
    int rphase;
    bool rpack;         /* 16-bit elements, two to a register */
    int64_t rnext;
    int rdepth;
    const Node *rloop[16];
    /* The module's tensor maps (passes/gpu_tma.c), passed after the buffers. */
    const CgTmap *tmaps;
    int ntmaps;
    /* The last element of a 16-bit register buffer this thread stored (fwd_lv, its C
     * lvalue) and the float pf_fw<fwd_n> that holds the value before rounding: a load
     * of the same element further on in the same block reads that variable, as the
     * interpreter reads stores unrounded (docs/schedules.md `storage`).  Cleared by
     * any other store to the buffer, by any node that is not a statement, and when
     * the block closes (ind below fwd_ind). */
    const Buffer *fwd_buf;
    StrBuf fwd_lv;
    int fwd_ind, fwd_n;
    /* A pipeline whose body's last loop admits the next stage at its last slice
     * (passes/gpu_frag_ahead.c admit_last): late is that pipeline while its body is
     * printed; late_var and late_hi name the marked loop while its body is printed,
     * and its mma group prints the admission between its reads and its products. */
    const struct EmPipe *late;
    const char *late_var, *late_hi;
} Em;

/* emit.c */
void em_line(Em *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void em_expr(Em *e, const Expr *x, StrBuf *o);
void em_sub(Em *e, const Expr *x, StrBuf *o);
/* b[idx] as an lvalue, without conversion. */
void em_elem(Em *e, const Buffer *b, Expr *const *idx, StrBuf *o);
void em_in_range(Em *e, const Buffer *b, Expr *const *idx, StrBuf *o);
void em_nodes(Em *e, const NodeList *l);
const char *em_bn(const Em *e, const Buffer *b);
const char *em_vn(const Em *e, const Var *v);
const char *em_storage_type(DType t, bool idx64);
bool em_cval(const Em *e, const Expr *x, int64_t *out);
/* The 32-bit shared-window address of element idx of staged buffer b plus `lane`
 * elements (an expression): pf_sb + the buffer's offset + the element's
 * (codegen/cuda/emit_tc.c; kernels whose staged buffers mma.sync reads). */
void em_smem_addr(Em *e, const Buffer *b, Expr *const *idx, const char *lane, StrBuf *o);
/* ... and of an element of a buffer in the 128-byte swizzled layout (wgmma operands). */
void em_swz_addr(Em *e, const Buffer *b, Expr *const *idx, StrBuf *o);
bool em_extent(const Em *e, const Node *l, int64_t *lo, int64_t *ext);

/* emit_tc.c */
bool em_is_frag(const Buffer *b);
/* An accumulator element in fragment layout; a swizzled operand element. */
void em_frag_elem(Em *e, const Buffer *b, Expr *const *idx, StrBuf *o);
/* An f32 reduction's operator as pf_rop's OP (0 sum, 1 product, 2 max, 3 min) and its
 * identity as CUDA text: block-wide and quad reductions. */
int em_red_op(StmtOp op);
const char *em_red_ident(StmtOp op);
/* Row r of a per-row vector (mma-rows) inside a lane loop: register r / 8. */
void em_rows_elem(Em *e, const Buffer *b, Expr *const *idx, StrBuf *o);
/* A quad-rows loop: each lane runs the rows it holds. */
void em_quad_rows(Em *e, const Node *n);
void em_swz_elem(Em *e, const Buffer *b, Expr *const *idx, StrBuf *o);
/* The module's tensor maps, collected from the TmaCopy marks before any launch is
 * written (each launch takes them all). */
void em_collect_tmaps(const Kernel *k, CgCudaModule *m);
/* The index of t's map in m. */
int em_tmap_of(const CgTmap *maps, int n, const TmaCopy *t);
extern const char em_tma_prelude[];
/* A row/column loop pair spread over the lanes (lane-rows, lane-cols, lane-cols2). */
void em_lane_pair(Em *e, const Node *n);
/* A tensor-core group headed by n (TcGroup). */
void em_tc_group(Em *e, const Node *n);
/* A pipeline loop with its stages (passes/gpu_pipeline.c). */
void em_pipeline(Em *e, const Node *n);
/* A pipeline whose copies are bulk tensor copies (emit_tma.c). */
void em_pipeline_tma(Em *e, const Node *n);
/* What both pipeline emitters read off a pipeline loop: its variable's name, the
 * stages S, the wgmma groups L kept in flight, its bounds as text, and its body
 * split into the copies and the rest. */
typedef struct EmPipe {
    const char *vs;
    int64_t S, L;
    StrBuf lo, hi;
    NodeList copies, rest;
} EmPipe;
/* Reads p off n, opens the pipeline's block with its comment ("v: S-stage
 * pipeline" + kind + "; " + what + " of iteration v + k are in flight ...") and
 * enters it. */
void em_pipeline_open(Em *e, const Node *n, const char *kind, const char *what, EmPipe *p);
/* After a pipeline's loop: the last wgmma group waited for (L in flight), then the
 * pipeline's block closed and p's text freed. */
void em_pipeline_close(Em *e, EmPipe *p);
/* A fragment accumulator's 32-bit registers per thread (wgmma keeps). */
int64_t em_frag_regs(const Em *e, const Buffer *b);
extern const char em_tc_prelude[];

#endif
