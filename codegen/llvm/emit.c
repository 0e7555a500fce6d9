/* Translation of the loop-nest IR into LLVM IR.
 *
 * Shape of the output, for a kernel `gemm`:
 *   void gemm(ptr bufs)              loads the buffer pointers and calls gemm.body
 *   void gemm.body(ptr noalias align 64 dereferenceable(n) %A, ...)   the loop nest
 *   void gemm.parN(ptr ctx, i64 lo, i64 hi) and gemm.parN.body(...)   one pair per
 *        parallel loop: the pool calls the first with a chunk of iterations, which
 *        unpacks the context (buffer pointers, values of enclosing loop variables)
 *        and calls the second, whose pointer arguments are again noalias.
 * All but gemm are internal, so several kernels can share one object or library.
 *
 * Values are carried in their compute type (f16 and bf16 as float, bool as i1) and
 * converted at loads and stores.  Inside a LOOP_VECTOR loop the translation works on
 * LLVM vectors of the loop's width: the loop variable is a vector, and every value is
 * either uniform (a scalar, widened when it meets a vector) or a vector.  Accesses
 * whose last index moves by one per lane become vector loads and stores, other
 * varying loads become gathers, and guards that depend on the lane become masks.
 * Target legalisation (passes/cpu_legalize.c) has made every vector loop one that
 * can be translated so.  Unroll loops are replicated with the variable a
 * constant; parallel loops are outlined as described above. */
#include "emit_int.h"

/* ---- expressions ---- */

/* The transcendental functions, inline in the operand's shape (codegen/llvm/vmath.c). */
static VmCtx vm_ctx(Cg *g)
{
    return (VmCtx){g->C, g->M, g->B, g->t->fma};
}

/* Operands of one operation in a common shape. */
static void same_shape(Fn *f, Val *v, int n)
{
    bool any = false;
    for (int i = 0; i < n; i++)
        any |= v[i].vec;
    if (!any)
        return;
    for (int i = 0; i < n; i++)
        if (!v[i].vec) {
            v[i].v = cg_splat(f, v[i].v);
            v[i].vec = true;
        }
}

static Val emit_as(Fn *f, const Expr *e, DType t)
{
    Val v = cg_emit_expr(f, e);
    v.v = cg_conv(f->g, v.v, e->dtype, t);
    return v;
}

static bool is_fmul(const Expr *e, DType t)
{
    return e->kind == IE_MUL && dtype_is_float(e->dtype) && cg_conv_exact(e->dtype, t);
}

Val cg_emit_expr(Fn *f, const Expr *e)
{
    Cg *g = f->g;
    LLVMBuilderRef B = g->B;
    DType t = e->dtype;
    Val a[3];
    switch (e->kind) {
    case IE_INT: /* exact: through a double, 2^53 + 1 would change and 2^63 - 1 overflow */
        if (!dtype_is_float(t) && t != DT_BOOL)
            return cg_S(LLVMConstInt(cg_cty(g, t), (unsigned long long)e->u.i, 1));
        return cg_S(cg_kdtype(g, t, (double)e->u.i));
    case IE_FLT: return cg_S(cg_kdtype(g, t, e->u.f));
    case IE_PARAM:
        if (!dtype_is_float(t) && t != DT_BOOL)
            return cg_S(LLVMConstInt(cg_cty(g, t), (unsigned long long)g->k->params[e->u.param].value, 1));
        return cg_S(cg_kdtype(g, t, (double)g->k->params[e->u.param].value));
    case IE_VAR: {
        Val v = f->vars[e->u.var->id];
        if (!v.v) {
            cg_error(g, e->span, "internal error: loop variable '%s' used outside its loop", e->u.var->name);
            return cg_S(cg_kdtype(g, t, 0));
        }
        v.v = cg_conv(g, v.v, DT_I64, t);
        return v;
    }
    case IE_LOAD: return cg_emit_load(f, e);
    case IE_CAST: return emit_as(f, e->args[0], t);
    case IE_NOT:
        a[0] = emit_as(f, e->args[0], DT_BOOL);
        return (Val){LLVMBuildNot(B, a[0].v, ""), a[0].vec};
    case IE_NEG:
        a[0] = emit_as(f, e->args[0], t);
        return (Val){dtype_is_float(t) ? LLVMBuildFNeg(B, a[0].v, "") : LLVMBuildNeg(B, a[0].v, ""), a[0].vec};
    case IE_ABS:
        a[0] = emit_as(f, e->args[0], t);
        if (dtype_is_float(t))
            return (Val){cg_intr1(g, "llvm.fabs", a[0].v), a[0].vec};
        {
            LLVMValueRef args[2] = {a[0].v, LLVMConstInt(g->ti1, 0, 0)};
            return (Val){cg_intr_n(g, "llvm.abs", args, 2), a[0].vec};
        }
    case IE_EXP:
    case IE_LOG:
    case IE_SQRT:
    case IE_RSQRT:
    case IE_TANH:
    case IE_ERF: {
        if (!dtype_is_float(t)) {
            cg_error(g, e->span, "internal error: %s of %s", ir_expr_name(e->kind), dtype_name(t));
            return cg_S(cg_kdtype(g, t, 0));
        }
        a[0] = emit_as(f, e->args[0], t);
        LLVMValueRef x = a[0].v, r;
        VmCtx vc = vm_ctx(g);
        switch (e->kind) {
        case IE_EXP: r = vm_exp(&vc, x); break;
        case IE_LOG: r = vm_log(&vc, x); break;
        case IE_SQRT: r = cg_intr1(g, "llvm.sqrt", x); break;
        case IE_RSQRT: r = LLVMBuildFDiv(B, cg_kflt(LLVMTypeOf(x), 1.0), cg_intr1(g, "llvm.sqrt", x), ""); break;
        case IE_TANH: r = vm_tanh(&vc, x); break;
        default:
            r = vm_erf(&vc, x);
            if (!r)
                r = cg_libm(g, "erf", x);
            break;
        }
        return (Val){r, a[0].vec};
    }
    case IE_LOG1P: case IE_EXPM1: {
        /* inline in the operand's vector shape (vmath.c), as exp and log are */
        a[0] = emit_as(f, e->args[0], t);
        VmCtx vc = vm_ctx(g);
        return (Val){e->kind == IE_LOG1P ? vm_log1p(&vc, a[0].v) : vm_expm1(&vc, a[0].v), a[0].vec};
    }
    case IE_FLOOR: case IE_CEIL: case IE_ROUND: case IE_POW:
        a[0] = emit_as(f, e->args[0], t);
        a[1] = e->kind == IE_POW ? emit_as(f, e->args[1], t) : a[0];
        same_shape(f, a, 2);
        return (Val){cg_llvm_mathfn(g->M, B, e->kind, a[0].v, e->kind == IE_POW ? a[1].v : NULL), a[0].vec};
    case IE_ADD:
    case IE_SUB:
        /* a*b + c and c - a*b in float: one fused multiply-add. */
        if (dtype_is_float(t) && (is_fmul(e->args[0], t) || is_fmul(e->args[1], t))) {
            int m = is_fmul(e->args[0], t) ? 0 : 1;
            const Expr *mul = e->args[m];
            DType mt = mul->dtype;
            a[0] = emit_as(f, mul->args[0], mt);
            a[1] = emit_as(f, mul->args[1], mt);
            a[2] = emit_as(f, e->args[1 - m], t);
            same_shape(f, a, 3);
            LLVMValueRef x = cg_conv(g, a[0].v, mt, t), y = cg_conv(g, a[1].v, mt, t), c = a[2].v;
            if (e->kind == IE_SUB) {
                if (m == 0)
                    c = LLVMBuildFNeg(B, c, "");
                else
                    x = LLVMBuildFNeg(B, x, "");
            }
            return (Val){cg_fmadd(g, x, y, c), a[0].vec};
        }
        /* fall through */
    case IE_MUL:
    case IE_DIV:
    case IE_MOD:
    case IE_MAX:
    case IE_MIN:
        a[0] = emit_as(f, e->args[0], t);
        a[1] = emit_as(f, e->args[1], t);
        same_shape(f, a, 2);
        /* f16 and bf16 arithmetic (and math) is carried out in f32 and rounded
         * where it is stored or cast, as dtype_compute says. */
        return (Val){cg_arith(g, e->kind, t, a[0].v, a[1].v), a[0].vec};
    case IE_LT:
    case IE_LE:
    case IE_GT:
    case IE_GE:
    case IE_EQ:
    case IE_NE: {
        DType ct = dtype_promote(e->args[0]->dtype, e->args[1]->dtype);
        if (e->args[0]->dtype == DT_BOOL && e->args[1]->dtype == DT_BOOL)
            ct = DT_BOOL;
        a[0] = emit_as(f, e->args[0], ct);
        a[1] = emit_as(f, e->args[1], ct);
        same_shape(f, a, 2);
        LLVMValueRef r;
        if (dtype_is_float(ct)) {
            static const LLVMRealPredicate fp[] = {LLVMRealOLT, LLVMRealOLE, LLVMRealOGT, LLVMRealOGE, LLVMRealOEQ, LLVMRealUNE};
            r = LLVMBuildFCmp(B, fp[e->kind - IE_LT], a[0].v, a[1].v, "");
        } else {
            static const LLVMIntPredicate ip[] = {LLVMIntSLT, LLVMIntSLE, LLVMIntSGT, LLVMIntSGE, LLVMIntEQ, LLVMIntNE};
            static const LLVMIntPredicate bp[] = {LLVMIntULT, LLVMIntULE, LLVMIntUGT, LLVMIntUGE, LLVMIntEQ, LLVMIntNE};
            r = LLVMBuildICmp(B, (ct == DT_BOOL ? bp : ip)[e->kind - IE_LT], a[0].v, a[1].v, "");
        }
        return (Val){cg_conv(g, r, DT_BOOL, t), a[0].vec};
    }
    case IE_AND:
    case IE_OR:
        a[0] = emit_as(f, e->args[0], DT_BOOL);
        a[1] = emit_as(f, e->args[1], DT_BOOL);
        same_shape(f, a, 2);
        return (Val){cg_conv(g, e->kind == IE_AND ? LLVMBuildAnd(B, a[0].v, a[1].v, "") : LLVMBuildOr(B, a[0].v, a[1].v, ""), DT_BOOL, t),
                     a[0].vec};
    case IE_SELECT:
        a[0] = emit_as(f, e->args[0], DT_BOOL);
        a[1] = emit_as(f, e->args[1], t);
        a[2] = emit_as(f, e->args[2], t);
        same_shape(f, a, 3);
        return (Val){LLVMBuildSelect(B, a[0].v, a[1].v, a[2].v, ""), a[0].vec};
    case IE_COUNT: break;
    }
    die("emit_expr: kind %d", (int)e->kind);
}

/* ---- statements ---- */

/* old op= v, in the compute type of dtype t. */
static LLVMValueRef update(Fn *f, StmtOp op, DType t, LLVMValueRef old, Val *v)
{
    Cg *g = f->g;
    switch (op) {
    case SOP_ASSIGN: return v->v;
    case SOP_ADD: return dtype_is_float(t) ? LLVMBuildFAdd(g->B, old, v->v, "") : LLVMBuildAdd(g->B, old, v->v, "");
    case SOP_MUL: return dtype_is_float(t) ? LLVMBuildFMul(g->B, old, v->v, "") : LLVMBuildMul(g->B, old, v->v, "");
    case SOP_MAX: return cg_arith(g, IE_MAX, t, old, v->v);
    case SOP_MIN: return cg_arith(g, IE_MIN, t, old, v->v);
    }
    die("update: op %d", (int)op);
}

/* The statement's value in the buffer's compute type.  For `acc += a*b` in float the
 * product's operands come back in *x, *y (and *fused is set) instead. */
static Val stmt_value(Fn *f, const Node *n, Val *x, Val *y, bool *fused)
{
    const Buffer *b = n->u.stmt.buf;
    const Expr *e = n->u.stmt.value;
    DType t = b->dtype;
    *fused = false;
    if (n->u.stmt.op == SOP_ADD && dtype_is_float(t) && is_fmul(e, t)) {
        Val a[2] = {emit_as(f, e->args[0], e->dtype), emit_as(f, e->args[1], e->dtype)};
        same_shape(f, a, 2);
        a[0].v = cg_conv(f->g, a[0].v, e->dtype, dtype_compute(t));
        a[1].v = cg_conv(f->g, a[1].v, e->dtype, dtype_compute(t));
        *x = a[0];
        *y = a[1];
        *fused = true;
        return a[0];
    }
    Val v = cg_emit_expr(f, e);
    v.v = cg_conv(f->g, v.v, e->dtype, t);
    return v;
}

static void emit_stmt_scalar(Fn *f, const Node *n)
{
    Cg *g = f->g;
    const Buffer *b = n->u.stmt.buf;
    LLVMValueRef idx[16];
    bool vec;
    Val x, y, v;
    bool fused;
    v = stmt_value(f, n, &x, &y, &fused);
    Addr a;
    if (cg_affine_addr(f, b, n->u.stmt.idx, false, &a)) {
        LLVMValueRef nv = v.v;
        if (n->u.stmt.op != SOP_ASSIGN) {
            LLVMValueRef old = cg_load_at(f, b, a, 0);
            nv = fused ? cg_fmadd(g, x.v, y.v, old) : update(f, n->u.stmt.op, b->dtype, old, &v);
        }
        cg_store_at(f, b, a, 0, nv);
        return;
    }
    cg_touch_unknown(f, b, true);
    for (int i = 0; i < b->rank; i++)
        idx[i] = cg_emit_i64(f, n->u.stmt.idx[i], &vec);
    LLVMValueRef p = cg_gep(f, b, cg_linearize(f, b, idx), true);
    unsigned align = cg_elem_align(g, b->dtype);
    LLVMValueRef nv;
    if (n->u.stmt.op == SOP_ASSIGN) {
        nv = v.v;
    } else {
        LLVMValueRef old = cg_tag(g, b, LLVMBuildLoad2(g->B, cg_sty(g, b->dtype), p, ""));
        LLVMSetAlignment(old, align);
        old = cg_from_storage(g, old, b->dtype);
        nv = fused ? cg_fmadd(g, x.v, y.v, old) : update(f, n->u.stmt.op, b->dtype, old, &v);
    }
    LLVMValueRef st = cg_tag(g, b, LLVMBuildStore(g->B, cg_to_storage(g, nv, b->dtype), p));
    LLVMSetAlignment(st, align);
}

/* Identity of a reduction, for lanes a guard switched off (ir/arith.c; -0.0 for a
 * float sum, so that a lane adds nothing, not even a sign). */
static LLVMValueRef red_identity(Cg *g, StmtOp op, DType t)
{
    ArScalar v;
    if (!ar_identity(op, t, true, &v))
        die("no identity for op %d", (int)op);
    if (v.is_float)
        return LLVMConstReal(cg_cty(g, t), v.f);
    if (t == DT_BOOL && (op == SOP_MAX || op == SOP_MIN))
        return LLVMConstInt(g->ti1, (unsigned long long)v.i, 0);
    return cg_kint(cg_cty(g, t), v.i);
}

/* Combines the lanes of v with op.  Float sums and products are reassociated (a tree,
 * not a chain): the vectorize schedule already accepts that reordering. */
static LLVMValueRef reduce_lanes(Cg *g, StmtOp op, DType t, LLVMValueRef v)
{
    bool fl = dtype_is_float(t);
    if (fl && (op == SOP_ADD || op == SOP_MUL)) {
        LLVMValueRef args[2] = {red_identity(g, op, t), v};
        LLVMTypeRef ty = LLVMTypeOf(v);
        LLVMValueRef r = cg_intr(g, op == SOP_ADD ? "llvm.vector.reduce.fadd" : "llvm.vector.reduce.fmul", &ty, 1, args, 2);
        LLVMSetFastMathFlags(r, LLVMFastMathAllowReassoc);
        return r;
    }
    const char *name;
    switch (op) {
    case SOP_ADD: name = t == DT_BOOL ? "llvm.vector.reduce.xor" : "llvm.vector.reduce.add"; break;
    case SOP_MUL: name = t == DT_BOOL ? "llvm.vector.reduce.and" : "llvm.vector.reduce.mul"; break;
    case SOP_MAX: name = fl ? "llvm.vector.reduce.fmaximum" : t == DT_BOOL ? "llvm.vector.reduce.or" : "llvm.vector.reduce.smax"; break;
    case SOP_MIN: name = fl ? "llvm.vector.reduce.fminimum" : t == DT_BOOL ? "llvm.vector.reduce.and" : "llvm.vector.reduce.smin"; break;
    default: die("reduce_lanes: op %d", (int)op);
    }
    return cg_intr1(g, name, v);
}

static void emit_stmt_vector(Fn *f, const Node *n)
{
    Cg *g = f->g;
    LLVMBuilderRef B = g->B;
    const Buffer *b = n->u.stmt.buf;
    DType t = b->dtype;
    unsigned align = cg_elem_align(g, t);
    AccKind ak = cg_access_kind(g, n->u.stmt.idx, b->rank, f->vvar);
    Val x, y, v;
    bool fused;
    v = stmt_value(f, n, &x, &y, &fused);
    if (fused) {
        /* x*y is needed lane by lane here; the FMA happens on the update below. */
        if (ak == ACC_UNIFORM) {
            v.v = LLVMBuildFMul(B, x.v, y.v, "");
            v.vec = x.vec;
            fused = false;
        }
    }
    Addr a;
    /* under a mask: the whole vector when that is legal (cg_whole_vector), the
     * disabled lanes keeping their old values */
    if (ak == ACC_CONTIG && (!f->mask || cg_whole_vector(f, b, n->u.stmt.idx, true)) &&
        cg_affine_addr(f, b, n->u.stmt.idx, true, &a)) {
        LLVMValueRef nv, old = NULL;
        if (n->u.stmt.op != SOP_ASSIGN || f->mask)
            old = cg_load_at(f, b, a, f->vw);
        if (n->u.stmt.op == SOP_ASSIGN) {
            nv = cg_wide(f, v);
        } else {
            if (fused) {
                nv = cg_fmadd(g, cg_wide(f, x), cg_wide(f, y), old);
            } else {
                Val w = {cg_wide(f, v), true};
                nv = update(f, n->u.stmt.op, t, old, &w);
            }
        }
        if (f->mask)
            nv = LLVMBuildSelect(B, f->mask, nv, old, "");
        cg_store_at(f, b, a, f->vw, nv);
        return;
    }
    if (ak == ACC_CONTIG) {
        cg_touch_unknown(f, b, true);
        LLVMValueRef idx0[16];
        for (int i = 0; i < b->rank; i++)
            idx0[i] = cg_lane0_i64(f, n->u.stmt.idx[i]);
        LLVMValueRef p = cg_gep(f, b, cg_linearize(f, b, idx0), f->mask == NULL);
        LLVMTypeRef vst = LLVMVectorType(cg_sty(g, t), (unsigned)f->vw);
        LLVMValueRef nv;
        if (n->u.stmt.op == SOP_ASSIGN) {
            nv = cg_wide(f, v);
        } else {
            LLVMValueRef old;
            if (f->mask) {
                old = cg_tag(g, b, cg_masked_load(f, vst, p, align, f->mask));
            } else {
                old = cg_tag(g, b, LLVMBuildLoad2(B, vst, p, ""));
                LLVMSetAlignment(old, align);
            }
            old = cg_from_storage(g, old, t);
            if (fused) {
                nv = cg_fmadd(g, cg_wide(f, x), cg_wide(f, y), old);
            } else {
                Val w = {cg_wide(f, v), true};
                nv = update(f, n->u.stmt.op, t, old, &w);
            }
        }
        nv = cg_to_storage(g, nv, t);
        if (f->mask) {
            cg_tag(g, b, cg_masked_store(f, nv, p, align, f->mask));
        } else {
            LLVMValueRef st = cg_tag(g, b, LLVMBuildStore(B, nv, p));
            LLVMSetAlignment(st, align);
        }
        return;
    }
    /* One element for every lane: a reduction (or, for `=`, the last lane wins). */
    bool aff = cg_affine_addr(f, b, n->u.stmt.idx, false, &a);
    LLVMValueRef p = NULL;
    if (!aff) {
        cg_touch_unknown(f, b, true);
        LLVMValueRef idx[16];
        bool vec;
        for (int i = 0; i < b->rank; i++)
            idx[i] = cg_emit_i64(f, n->u.stmt.idx[i], &vec);
        p = cg_gep(f, b, cg_linearize(f, b, idx), true);
    }
    LLVMValueRef val;
    if (n->u.stmt.op == SOP_ASSIGN) {
        if (!v.vec) {
            val = v.v;
        } else {
            LLVMValueRef lane = cg_ci64(g, f->vw - 1);
            if (f->mask) {
                /* The highest enabled lane is the last to run in the scalar loop. */
                LLVMTypeRef bits = LLVMIntTypeInContext(g->C, (unsigned)f->vw);
                LLVMValueRef m = LLVMBuildBitCast(B, f->mask, bits, "");
                LLVMValueRef args[2] = {m, LLVMConstInt(g->ti1, 0, 0)};
                LLVMValueRef lz = cg_intr_n(g, "llvm.ctlz", args, 2);
                lane = LLVMBuildSub(B, LLVMConstInt(bits, (unsigned long long)(f->vw - 1), 0), lz, "");
                lane = LLVMBuildIntCast2(B, lane, g->ti64, 0, "");
            }
            val = LLVMBuildExtractElement(B, v.v, lane, "");
        }
    } else {
        LLVMValueRef lanes = cg_wide(f, v);
        if (f->mask)
            lanes = LLVMBuildSelect(B, f->mask, lanes, cg_splat(f, red_identity(g, n->u.stmt.op, t)), "");
        LLVMValueRef old;
        if (aff) {
            old = cg_load_at(f, b, a, 0);
        } else {
            old = cg_tag(g, b, LLVMBuildLoad2(B, cg_sty(g, t), p, ""));
            LLVMSetAlignment(old, align);
            old = cg_from_storage(g, old, t);
        }
        if (f->ordered && dtype_is_float(t) && (n->u.stmt.op == SOP_ADD || n->u.stmt.op == SOP_MUL)) {
            /* The scalar loop's order: ((old + v0) + v1) + ... (no reassociation). */
            LLVMValueRef args[2] = {old, lanes};
            LLVMTypeRef ty = LLVMTypeOf(lanes);
            val = cg_intr(g, n->u.stmt.op == SOP_ADD ? "llvm.vector.reduce.fadd" : "llvm.vector.reduce.fmul", &ty, 1, args, 2);
        } else {
            Val r = cg_S(reduce_lanes(g, n->u.stmt.op, t, lanes));
            val = update(f, n->u.stmt.op, t, old, &r);
        }
    }
    if (aff) {
        cg_store_at(f, b, a, 0, val);
        return;
    }
    LLVMValueRef st = cg_tag(g, b, LLVMBuildStore(B, cg_to_storage(g, val, t), p));
    LLVMSetAlignment(st, align);
}

/* ---- control flow ---- */


/* Binds loop variable v to x from here on (its range unknown unless x is a
 * constant); returns the binding to restore. */
Binding cg_bind(Fn *f, const Var *v, Val x)
{
    Binding old = {f->vars[v->id], f->vbb[v->id], f->vseq[v->id], f->vmin[v->id], f->vmax[v->id]};
    f->vars[v->id] = x;
    f->vbb[v->id] = LLVMGetInsertBlock(f->g->B);
    f->vseq[v->id] = ++f->seq;
    f->vmin[v->id] = 1, f->vmax[v->id] = 0;
    if (!x.vec && LLVMIsAConstantInt(x.v))
        f->vmin[v->id] = f->vmax[v->id] = LLVMConstIntGetSExtValue(x.v);
    return old;
}

void cg_unbind(Fn *f, const Var *v, Binding old)
{
    f->vars[v->id] = old.v;
    f->vbb[v->id] = old.bb;
    f->vseq[v->id] = old.seq;
    f->vmin[v->id] = old.min;
    f->vmax[v->id] = old.max;
}


LLVMValueRef cg_loop_open(Fn *f, LLVMValueRef lo, LLVMValueRef hi, const char *name, LoopSt *s)
{
    Cg *g = f->g;
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->B);
    s->body = LLVMAppendBasicBlockInContext(g->C, f->fn, name);
    s->exit = LLVMAppendBasicBlockInContext(g->C, f->fn, "");
    s->hi = hi;
    s->step = 1;
    cg_region_end(f);
    LLVMValueRef enter = LLVMBuildICmp(g->B, LLVMIntSLT, lo, hi, "");
    if (LLVMIsAConstantInt(enter) && LLVMConstIntGetZExtValue(enter))
        LLVMBuildBr(g->B, s->body); /* constant bounds: no guard to fold away later */
    else
        LLVMBuildCondBr(g->B, enter, s->body, s->exit);
    LLVMPositionBuilderAtEnd(g->B, s->body);
    s->iv = LLVMBuildPhi(g->B, g->ti64, name);
    LLVMAddIncoming(s->iv, &lo, &pre, 1);
    return s->iv;
}

void cg_loop_close(Fn *f, LoopSt *s)
{
    Cg *g = f->g;
    cg_region_end(f);
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(g->B);
    LLVMValueRef next = LLVMBuildNSWAdd(g->B, s->iv, cg_ci64(g, s->step), "");
    LLVMBuildCondBr(g->B, LLVMBuildICmp(g->B, LLVMIntSLT, next, s->hi, ""), s->body, s->exit);
    LLVMAddIncoming(s->iv, &next, &latch, 1);
    LLVMMoveBasicBlockAfter(s->exit, latch);
    LLVMPositionBuilderAtEnd(g->B, s->exit);
}

/* A register tile's contents are dead at the top of each iteration of its fresh
 * loop (Buffer.private_in: every read sees a write of the same iteration).  Saying
 * so with a store of poison keeps SSA construction from carrying the tile's old
 * value around every enclosing loop in phis (six 2-register phis per loop level in
 * gemm's 6x16 tile), which cost registers and register-allocation time. */
static void start_fresh(Fn *f, const Node *loop)
{
    Cg *g = f->g;
    for (int i = 0; i < g->k->nbufs; i++)
        if (g->fresh[i] == loop && f->bufp[i]) {
            const Buffer *b = g->k->bufs[i];
            cg_touch_unknown(f, b, true);
            /* A memset of undef: SROA turns it into an undef definition of every
             * slice (a store of an undef aggregate would become element inserts into
             * the old value), and codegen drops it where the tile stays in memory. */
            LLVMValueRef bytes = cg_ci64(g, g->elems[i] * dtype_bytes(b->dtype));
            cg_tag(g, b, LLVMBuildMemSet(g->B, f->bufp[i], LLVMGetUndef(g->ti8), bytes, CG_BUF_ALIGN));
        }
}

/* `for v in lo..hi` around n's body, two iterations a trip for an `unroll2` loop
 * (its trip count is even: passes/cpu_unroll2.c). */
void cg_emit_serial(Fn *f, const Node *n, LLVMValueRef lo, LLVMValueRef hi)
{
    LoopSt s;
    Var *v = n->u.loop.var;
    LLVMValueRef iv = cg_loop_open(f, lo, hi, v->name, &s);
    s.step = n->u.loop.hint == HINT_TWICE ? 2 : 1;
    bool known = LLVMIsAConstantInt(lo) && LLVMIsAConstantInt(hi);
    for (int64_t i = 0; i < s.step; i++) {
        Binding saved = cg_bind(f, v, cg_S(i ? LLVMBuildNSWAdd(f->g->B, iv, cg_ci64(f->g, i), "") : iv));
        if (known) {
            f->vmin[v->id] = LLVMConstIntGetSExtValue(lo) + i;
            f->vmax[v->id] = LLVMConstIntGetSExtValue(hi) - 1;
        }
        start_fresh(f, n);
        cg_emit_list(f, &n->u.loop.body);
        cg_unbind(f, v, saved);
    }
    cg_loop_close(f, &s);
}

/* A guard; one marked `holds` (proven by passes/cpu_narrow.c or cpu_version.c) is
 * its body, and a versioned one has an else body. */
/* A region that runs where c holds: a branch around it, or, in a vector loop, the
 * lanes where c is false masked and the region skipped when none is left (so
 * uniform loads in it run only when the scalar loop would have run them).  With
 * an else region (never in vector loops: versioning happens outside them), the
 * branch goes there. */
typedef struct Cond {
    LLVMBasicBlockRef then, els, join;
    LLVMValueRef saved;
} Cond;

static void cond_open(Fn *f, Val c, bool with_else, Cond *k)
{
    Cg *g = f->g;
    LLVMBuilderRef B = g->B;
    k->then = LLVMAppendBasicBlockInContext(g->C, f->fn, "if");
    k->els = with_else ? LLVMAppendBasicBlockInContext(g->C, f->fn, "else") : NULL;
    k->join = LLVMAppendBasicBlockInContext(g->C, f->fn, "");
    k->saved = f->mask;
    LLVMValueRef go = c.v;
    if (c.vec) {
        if (with_else)
            die("guard with an else body inside a vector loop");
        f->mask = k->saved ? LLVMBuildAnd(B, k->saved, c.v, "") : c.v;
        go = cg_intr1(g, "llvm.vector.reduce.or", f->mask);
    }
    cg_region_end(f);
    LLVMBuildCondBr(B, go, k->then, k->els ? k->els : k->join);
    LLVMPositionBuilderAtEnd(B, k->then);
}

/* Ends the region (or the else region) begun last: on to the join. */
static void cond_branch_end(Fn *f, Cond *k)
{
    cg_region_end(f);
    LLVMBuildBr(f->g->B, k->join);
    f->mask = k->saved;
}

static void cond_else(Fn *f, Cond *k)
{
    LLVMMoveBasicBlockAfter(k->els, LLVMGetInsertBlock(f->g->B));
    LLVMPositionBuilderAtEnd(f->g->B, k->els);
}

static void cond_close(Fn *f, Cond *k)
{
    LLVMMoveBasicBlockAfter(k->join, LLVMGetInsertBlock(f->g->B));
    LLVMPositionBuilderAtEnd(f->g->B, k->join);
}

static void emit_guard(Fn *f, const Node *n)
{
    if (n->u.guard.holds) {
        cg_emit_list(f, &n->u.guard.body);
        return;
    }
    Cond k;
    cond_open(f, emit_as(f, n->u.guard.cond, DT_BOOL), n->u.guard.els.n > 0, &k);
    cg_emit_list(f, &n->u.guard.body);
    cond_branch_end(f, &k);
    if (k.els) {
        cond_else(f, &k);
        cg_emit_list(f, &n->u.guard.els);
        cond_branch_end(f, &k);
    }
    cond_close(f, &k);
}

static void emit_vector(Fn *f, const Node *n, LLVMValueRef lo, int w, bool ordered)
{
    Cg *g = f->g;
    f->ordered = ordered;
    Var *v = n->u.loop.var;
    LLVMValueRef steps[MAX_VECTOR_WIDTH];
    for (int i = 0; i < w; i++)
        steps[i] = cg_ci64(g, i);
    f->vvar = v;
    f->vw = w;
    f->vlo = lo;
    f->mask = NULL;
    LLVMValueRef iv = LLVMBuildNSWAdd(g->B, cg_splat(f, lo), LLVMConstVector(steps, (unsigned)w), v->name);
    Binding saved = cg_bind(f, v, (Val){iv, true});
    cg_emit_list(f, &n->u.loop.body);
    cg_unbind(f, v, saved);
    f->vvar = NULL;
    f->vw = 0;
    f->vlo = NULL;
    f->ordered = false;
}

void cg_emit_parallel(Fn *f, const Node *n, LLVMValueRef lo, LLVMValueRef hi);

/* A private buffer small enough to live in registers. */
bool cg_is_tile(const Cg *g, const Buffer *b)
{
    return g->priv[b->id] && g->elems[b->id] <= CPU_TILE_ELEMS;
}

/* Serial loop n's body for the one value x of its variable, without a loop. */
static void emit_once(Fn *f, const Node *n, LLVMValueRef x)
{
    Binding saved = cg_bind(f, n->u.loop.var, cg_S(x));
    start_fresh(f, n);
    cg_emit_list(f, &n->u.loop.body);
    cg_unbind(f, n->u.loop.var, saved);
}

static LLVMValueRef emit_bound(Fn *f, const Expr *e)
{
    bool vec;
    LLVMValueRef v = cg_emit_i64(f, e, &vec);
    if (vec)
        die("loop bound varies across vector lanes");
    return v;
}

/* One loop, by its kind and hint.  Target legalisation (passes/cpu_legalize.c)
 * has made every vector loop translatable and every unroll loop constant, and the
 * CPU lowering passes set the hints; here they are only translated. */
static void emit_loop(Fn *f, const Node *n)
{
    Cg *g = f->g;
    LoopKind kind = n->u.loop.kind;
    LLVMValueRef lo = emit_bound(f, n->u.loop.lo), hi = emit_bound(f, n->u.loop.hi);
    Var *v = n->u.loop.var;
    int64_t ext = 0;
    bool cext = cg_const_extent(g, n->u.loop.lo, n->u.loop.hi, &ext);
    switch (n->u.loop.hint) {
    case HINT_FILL: cg_emit_fill(f, n); return;
    case HINT_COPY:
        if (!cext || !LLVMIsAConstantInt(lo))
            die("memcpy loop %s: bounds not constant", v->name);
        cg_emit_copy(f, n, LLVMConstIntGetSExtValue(lo), LLVMConstIntGetSExtValue(lo) + ext);
        return;
    case HINT_TRANSPOSE: cg_emit_transpose(f, n); return;
    case HINT_TRANSPOSE_BLOCKS: cg_emit_transpose_blocks(f, n); return;
    case HINT_DOT: cg_emit_dot(f, n, lo); return;
    case HINT_INTERLEAVE: cg_emit_interleave(f, n, lo); return;
    case HINT_TILES: cg_emit_tiles(f, n, lo, hi); return;
    default: break;
    }
    if (kind == LOOP_SERIAL && cext && ext <= 1) {
        /* No loop for one iteration (batch loops at batch 1, say), none for none. */
        if (ext == 1)
            emit_once(f, n, lo);
        return;
    }
    if (kind == LOOP_UNROLL) {
        if (!cext)
            die("unroll loop %s: no constant trip count", v->name);
        for (int64_t i = 0; i < ext; i++) {
            LLVMValueRef iv = i == 0 ? lo : LLVMBuildNSWAdd(g->B, lo, cg_ci64(g, i), "");
            Binding saved = cg_bind(f, v, cg_S(iv));
            cg_emit_list(f, &n->u.loop.body);
            cg_unbind(f, v, saved);
        }
        return;
    }
    if (kind == LOOP_VECTOR) {
        if (!cext || f->vw)
            die("vector loop %s: not legalised", v->name);
        if (ext > 0)
            emit_vector(f, n, lo, (int)ext, n->u.loop.hint == HINT_ORDERED);
        return;
    }
    if (kind == LOOP_PARALLEL && !f->vw) {
        cg_emit_parallel(f, n, lo, hi);
        return;
    }
    cg_emit_serial(f, n, lo, hi);
}

static void emit_stmt(Fn *f, const Node *n)
{
    if (f->vw)
        emit_stmt_vector(f, n);
    else
        emit_stmt_scalar(f, n);
}

/* A guarded store (a padded split's iterations past the end) runs where its
 * element lies inside the buffer: under a branch, or with the lanes outside
 * masked off, as a guard would run it. */
static void emit_guarded_stmt(Fn *f, const Node *n)
{
    int known = cg_range_known(f, n->u.stmt.buf, n->u.stmt.idx);
    if (known != 0) {
        if (known > 0)
            emit_stmt(f, n);
        return;
    }
    Cond k;
    cond_open(f, cg_in_range(f, n->u.stmt.buf, n->u.stmt.idx), false, &k);
    emit_stmt(f, n);
    cond_branch_end(f, &k);
    cond_close(f, &k);
}

static void emit_node(Fn *f, const Node *n)
{
    switch (n->kind) {
    case N_LOOP: emit_loop(f, n); break;
    case N_IF: emit_guard(f, n); break;
    case N_STMT:
        if (n->u.stmt.guarded)
            emit_guarded_stmt(f, n);
        else
            emit_stmt(f, n);
        break;
    case N_PREFETCH: cg_emit_prefetch(f, n); break;
    }
}

void cg_emit_list(Fn *f, const NodeList *l)
{
    for (int i = 0; i < l->n && !f->g->failed; i++)
        emit_node(f, l->v[i]);
}
