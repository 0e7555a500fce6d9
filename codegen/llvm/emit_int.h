/* Internal interface of the LLVM translation, shared by codegen/llvm/emit*.c:
 * the translation state (Cg for the module, Fn for one function), values, the
 * address cache, and the helpers one file of the translation calls in another.
 * Nothing outside those files includes it. */
#ifndef PERFC_CODEGEN_LLVM_EMIT_INT_H
#define PERFC_CODEGEN_LLVM_EMIT_INT_H

#include "lang/checked.h"
#include "cg_llvm_int.h"
#include "vmath.h"
#include "ir/cpu.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/DebugInfo.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VECTOR_WIDTH CPU_MAX_VECTOR_WIDTH

typedef struct Val {
    LLVMValueRef v;
    bool vec;                /* a vector of the enclosing vector loop's width */
} Val;

/* Private (MEM_LOCAL) buffers: where they are allocated. */
typedef struct Home {
    bool used;
    PtrVec path;             /* common prefix of the parallel loops around every use */
    bool shallow;            /* some use lies directly under that prefix */
    PtrVec homes;            /* the parallel loops just below it around the other uses */
} Home;

typedef struct Cg {
    const Kernel *k;
    const CgTarget *t;
    Diags *d;
    bool failed;
    bool tiled;              /* loops vector or unroll: optimised by the short pipeline
                              * of jit.c, so addresses take the form ptr_at gives them */
    LLVMContextRef C;
    LLVMModuleRef M;
    LLVMBuilderRef B;
    LLVMTypeRef tvoid, ti1, ti8, ti16, ti32, ti64, tf32, tf64, thalf, tptr;
    int64_t *elems;          /* elements per buffer */
    int64_t **dims;          /* extent per buffer and dimension */
    bool *priv;              /* allocated by the generated code (MEM_LOCAL temporaries) */
    const Node **home;       /* for priv buffers: owning parallel loop, NULL = kernel */
    PtrVec *homes;           /* or, when not empty, each of these sibling parallel loops
                              * allocates its own copy (cg_owns) */
    bool below;              /* the second walk of the buffers' uses (emit_module.c) */
    const Node **fresh;      /* for small priv buffers: loop whose iterations start it afresh */
    LLVMValueRef *scope, *others; /* per buffer: !alias.scope and !noalias lists */
    unsigned md_scope, md_noalias;
    int npar;                /* parallel loops outlined so far */
    LLVMTypeRef pfor_ty;
    LLVMValueRef pfor;       /* perfc_parallel_for, declared on first use */
    bool uses_amx;           /* AMX tiles emitted: the entry asks the OS for them */
} Cg;

/* Element offsets are emitted as r + c: c a constant, r a sum of loop variables times
 * their strides built once per loop and cached (Sum); the accesses of one basic
 * block share addresses, loaded values and splats, and stores to one element are
 * kept back until the block ends (Region).  See "---- addresses ----". */
#define AFF_TERMS AR_AFF_TERMS

typedef struct Term {
    LLVMValueRef v;          /* a variable's value (i64) */
    int64_t k;               /* its coefficient */
    LLVMBasicBlockRef bb;    /* where the variable was bound */
    int seq;                 /* binding order: a later binding is nested in earlier ones */
} Term;

typedef struct Sum {
    int n;
    Term t[AFF_TERMS];
    LLVMValueRef sum;        /* t[0].k*t[0].v + ..., at the end of t[n-1].bb */
} Sum;

typedef struct Slot {
    const Buffer *b;
    LLVMValueRef r;          /* runtime part of the element offset (NULL: none) */
    int64_t c;               /* constant part */
    int w;                   /* vector lanes, 0 for a scalar */
    LLVMValueRef v;          /* loads: value in compute type; stores: in storage type */
    LLVMValueRef p;          /* address (pending stores) */
} Slot;

typedef struct Region {
    LLVMBasicBlockRef bb;    /* the block the entries below belong to */
    Slot *loads, *stores, *ptrs;  /* known values, pending stores (in order), addresses */
    int nloads, nstores, nptrs, caploads, capstores, capptrs;
    LLVMValueRef *splat_of, *splat; /* scalar -> its splat */
    int nsplats, capsplats;
} Region;

typedef struct Fn {
    Cg *g;
    LLVMValueRef fn;
    LLVMBasicBlockRef entry; /* allocas only; ends with a branch to the code */
    LLVMValueRef *bufp;      /* base pointer per buffer (NULL: not available here) */
    Val *vars;               /* binding per Var id (v == NULL: unbound) */
    LLVMBasicBlockRef *vbb;  /* per Var id: the block where it was bound */
    int *vseq;               /* per Var id: binding order */
    int64_t *vmin, *vmax;    /* per Var id: its range when known (vmin <= vmax) */
    int seq;
    Sum *sums;               /* hoisted offset sums */
    int nsums, capsums;
    Region rg;
    const Node *owner;       /* the parallel loop this function runs, NULL = kernel */
    /* Inside a vector loop: */
    const Var *vvar;
    int vw;
    LLVMValueRef vlo;        /* the loop variable's first lane (scalar i64) */
    LLVMValueRef mask;       /* lanes enabled by enclosing guards; NULL = all */
    bool ordered;            /* a serial loop vectorised here: float sums keep their order */
} Fn;

void cg_emit_list(Fn *f, const NodeList *l);
/* Whether the function running parallel loop owner (NULL: the kernel) allocates
 * private buffer b. */
bool cg_owns(const Cg *g, int b, const Node *owner);

typedef CpuAccKind AccKind;

#define ACC_UNIFORM CPU_ACC_UNIFORM
#define ACC_CONTIG CPU_ACC_CONTIG
#define ACC_OTHER CPU_ACC_OTHER
typedef struct Addr {
    LLVMValueRef r;          /* NULL: no runtime part */
    int64_t c;
} Addr;

#define GROW(p, n, cap)                                                                                                \
    do {                                                                                                               \
        if ((n) == (cap)) {                                                                                            \
            (cap) = (cap) ? 2 * (cap) : 16;                                                                            \
            (p) = xrealloc((p), sizeof *(p) * (size_t)(cap));                                                          \
        }                                                                                                              \
    } while (0)
typedef struct Binding {
    Val v;
    LLVMBasicBlockRef bb;
    int seq;
    int64_t min, max;
} Binding;

typedef struct LoopSt {
    LLVMBasicBlockRef body, exit;
    LLVMValueRef iv, hi;
    int64_t step;
} LoopSt;

#define FRESH_MAX_ELEMS 1024

/* ---- emit_value.c ---- */
bool cg_is_vty(LLVMTypeRef t);
LLVMValueRef cg_splat(Fn *f, LLVMValueRef s);
LLVMValueRef cg_kdtype(Cg *g, DType t, double x);
bool cg_aff_add(ArAff *r, const ArAff *a, int64_t scale);
void cg_error(Cg *g, Span sp, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool cg_stride(const Cg *g, const Expr *e, const Var *v, int64_t *s);
LLVMTypeRef cg_sty(Cg *g, DType t);
void cg_add_fn_attr(Cg *g, LLVMValueRef fn, const char *kind, uint64_t val);
LLVMValueRef cg_ci32(Cg *g, int32_t x);
Val cg_S(LLVMValueRef v);
LLVMValueRef cg_ci64(Cg *g, int64_t x);
LLVMValueRef cg_fmadd(Cg *g, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c);
LLVMValueRef cg_conv(Cg *g, LLVMValueRef v, DType from, DType to);
LLVMValueRef cg_to_storage(Cg *g, LLVMValueRef v, DType t);
LLVMValueRef cg_wide(Fn *f, Val v);
LLVMValueRef cg_kint(LLVMTypeRef ty, int64_t x);
LLVMValueRef cg_kflt(LLVMTypeRef ty, double x);
bool cg_conv_exact(DType from, DType to);
bool cg_affine(const Cg *g, const Expr *e, ArAff *out);
LLVMValueRef cg_arith(Cg *g, ExprKind op, DType t, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef cg_intr2(Cg *g, const char *name, LLVMValueRef a, LLVMValueRef b);
AccKind cg_access_kind(const Cg *g, Expr *const *idx, int rank, const Var *v);
LLVMValueRef cg_intr(Cg *g, const char *name, LLVMTypeRef *ov, int nov, LLVMValueRef *args, int nargs);
bool cg_const_extent(const Cg *g, const Expr *lo, const Expr *hi, int64_t *ext);
LLVMTypeRef cg_cty(Cg *g, DType t);
LLVMValueRef cg_from_storage(Cg *g, LLVMValueRef raw, DType t);
void cg_add_str_attr(Cg *g, LLVMValueRef fn, const char *kind, const char *val);
LLVMValueRef cg_intr_n(Cg *g, const char *name, LLVMValueRef *args, int n);
LLVMValueRef cg_intr1(Cg *g, const char *name, LLVMValueRef a);
LLVMValueRef cg_libm(Cg *g, const char *name, LLVMValueRef x);

/* ---- emit_mem.c ---- */
LLVMValueRef cg_lane0_i64(Fn *f, const Expr *e);
Val cg_emit_load(Fn *f, const Expr *e);
int cg_range_known(const Fn *f, const Buffer *b, Expr *const *idx);
bool cg_whole_vector(const Fn *f, const Buffer *b, Expr *const *idx, bool store);
Val cg_in_range(Fn *f, const Buffer *b, Expr *const *idx);
LLVMValueRef cg_masked_store(Fn *f, LLVMValueRef val, LLVMValueRef ptr, unsigned align, LLVMValueRef mask);
unsigned cg_elem_align(Cg *g, DType t);
LLVMValueRef cg_tag(Cg *g, const Buffer *b, LLVMValueRef inst);
Region *cg_region(Fn *f);
void cg_region_end(Fn *f);
void cg_touch_unknown(Fn *f, const Buffer *b, bool write);
void cg_store_at(Fn *f, const Buffer *b, Addr a, int w, LLVMValueRef v);
LLVMValueRef cg_gep(Fn *f, const Buffer *b, LLVMValueRef off, bool inbounds);
LLVMValueRef cg_masked_load(Fn *f, LLVMTypeRef vt, LLVMValueRef ptr, unsigned align, LLVMValueRef mask);
LLVMValueRef cg_load_at(Fn *f, const Buffer *b, Addr a, int w);
bool cg_affine_addr(Fn *f, const Buffer *b, Expr *const *idx, bool lane0, Addr *out);
LLVMValueRef cg_emit_i64(Fn *f, const Expr *e, bool *vec);
LLVMValueRef cg_ptr_at(Fn *f, const Buffer *b, Addr a, bool inbounds);
LLVMValueRef cg_linearize(Fn *f, const Buffer *b, LLVMValueRef *idx);

/* ---- emit.c ---- */
void cg_emit_list(Fn *f, const NodeList *l);
void cg_unbind(Fn *f, const Var *v, Binding old);
void cg_loop_close(Fn *f, LoopSt *s);
Binding cg_bind(Fn *f, const Var *v, Val x);
Val cg_emit_expr(Fn *f, const Expr *e);
LLVMValueRef cg_loop_open(Fn *f, LLVMValueRef lo, LLVMValueRef hi, const char *name, LoopSt *s);
bool cg_is_tile(const Cg *g, const Buffer *b);
void cg_emit_serial(Fn *f, const Node *n, LLVMValueRef lo, LLVMValueRef hi);

/* ---- emit_tile.c ---- */
void cg_emit_copy(Fn *f, const Node *L, int64_t lo, int64_t hi);
void cg_emit_fill(Fn *f, const Node *L);
void cg_emit_transpose(Fn *f, const Node *L);
void cg_emit_transpose_blocks(Fn *f, const Node *L);

/* ---- emit_dot.c ---- */
/* A `dot-product` loop (lo: its first value) inside a vector loop. */
void cg_emit_dot(Fn *f, const Node *L, LLVMValueRef lo);
/* An `interleave` loop (lo: its first value) inside a vector loop. */
void cg_emit_interleave(Fn *f, const Node *L, LLVMValueRef lo);

/* ---- emit_amx.c ---- */
/* An `amx-tiles` loop (lo, hi: its bounds): AMX tile products, or a serial loop. */
void cg_emit_tiles(Fn *f, const Node *L, LLVMValueRef lo, LLVMValueRef hi);

/* ---- emit_prefetch.c ---- */
void cg_emit_prefetch(Fn *f, const Node *n);

/* ---- emit_module.c ---- */
void cg_emit_parallel(Fn *f, const Node *n, LLVMValueRef lo, LLVMValueRef hi);

#endif
