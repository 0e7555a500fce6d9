/* Functions and the module for the LLVM translation: the kernel's entry, the
 * outlined bodies of parallel loops, where private buffers live (allocation and
 * the loop whose iterations start them afresh), alias scopes, and
 * cg_build_module. */
#include "emit_int.h"

/* ---- functions ---- */

static void set_fn_attrs(Cg *g, LLVMValueRef fn)
{
    cg_add_fn_attr(g, fn, "nounwind", 0);
    cg_add_str_attr(g, fn, "target-cpu", g->t->cpu);
    if (g->t->features && *g->t->features)
        cg_add_str_attr(g, fn, "target-features", g->t->features);
    if (g->t->vector_width) {
        char w[16];
        snprintf(w, sizeof w, "%d", g->t->vector_width);
        cg_add_str_attr(g, fn, "prefer-vector-width", w);
        cg_add_str_attr(g, fn, "min-legal-vector-width", w);
    }
    if (g->t->vscale_min)
        cg_add_fn_attr(g, fn, "vscale_range", ((uint64_t)g->t->vscale_min << 32) | (uint64_t)g->t->vscale_max);
}

static LLVMValueRef new_function(Cg *g, const char *name, LLVMTypeRef ret, LLVMTypeRef *params, int n, bool internal)
{
    LLVMTypeRef fty = LLVMFunctionType(ret, params, (unsigned)n, 0);
    LLVMValueRef fn = LLVMAddFunction(g->M, name, fty);
    if (internal)
        LLVMSetLinkage(fn, LLVMInternalLinkage);
    set_fn_attrs(g, fn);
    return fn;
}

/* Starts emitting into fn: an entry block for allocas, then the code block. */
static void fn_begin(Cg *g, Fn *f, LLVMValueRef fn, const Node *owner)
{
    memset(f, 0, sizeof *f);
    f->g = g;
    f->fn = fn;
    f->owner = owner;
    f->bufp = xcalloc((size_t)(g->k->nbufs ? g->k->nbufs : 1), sizeof *f->bufp);
    f->vars = xcalloc((size_t)(g->k->nvars ? g->k->nvars : 1), sizeof *f->vars);
    f->vbb = xcalloc((size_t)(g->k->nvars ? g->k->nvars : 1), sizeof *f->vbb);
    f->vseq = xcalloc((size_t)(g->k->nvars ? g->k->nvars : 1), sizeof *f->vseq);
    f->vmin = xcalloc((size_t)(g->k->nvars ? g->k->nvars : 1), sizeof *f->vmin);
    f->vmax = xcalloc((size_t)(g->k->nvars ? g->k->nvars : 1), sizeof *f->vmax);
    for (int i = 0; i < g->k->nvars; i++)
        f->vmin[i] = 1; /* unknown until bound: vmin > vmax */
    f->entry = LLVMAppendBasicBlockInContext(g->C, fn, "entry");
    LLVMBasicBlockRef code = LLVMAppendBasicBlockInContext(g->C, fn, "code");
    LLVMPositionBuilderAtEnd(g->B, f->entry);
    LLVMBuildBr(g->B, code);
    LLVMPositionBuilderAtEnd(g->B, code);
}

static void fn_end(Fn *f)
{
    cg_region_end(f);
    LLVMBuildRetVoid(f->g->B);
    free(f->bufp);
    free(f->vars);
    free(f->vbb);
    free(f->vseq);
    free(f->vmin);
    free(f->vmax);
    free(f->sums);
    free(f->rg.loads);
    free(f->rg.stores);
    free(f->rg.ptrs);
    free(f->rg.splat_of);
    free(f->rg.splat);
}

/* An alloca in the entry block (so LLVM's SROA can promote small tiles to registers). */
static LLVMValueRef entry_alloca(Fn *f, LLVMTypeRef ty, int64_t count, const char *name)
{
    Cg *g = f->g;
    LLVMBuilderRef ab = LLVMCreateBuilderInContext(g->C);
    LLVMPositionBuilderBefore(ab, LLVMGetBasicBlockTerminator(f->entry));
    /* An alloca of an array type, not an array allocation: SROA leaves the latter alone. */
    LLVMValueRef a = LLVMBuildAlloca(ab, LLVMArrayType2(ty, (uint64_t)(count > 0 ? count : 1)), name);
    LLVMSetAlignment(a, CG_BUF_ALIGN);
    LLVMDisposeBuilder(ab);
    return a;
}

bool cg_owns(const Cg *g, int b, const Node *owner)
{
    if (!g->priv[b])
        return false;
    if (!g->homes[b].n)
        return g->home[b] == owner;
    for (int i = 0; i < g->homes[b].n; i++)
        if (g->homes[b].v[i] == owner)
            return true;
    return false;
}

/* Private buffers owned by the function's loop get their stack copy here. */
static void alloc_private(Fn *f)
{
    Cg *g = f->g;
    for (int i = 0; i < g->k->nbufs; i++)
        if (cg_owns(g, i, f->owner)) {
            const Buffer *b = g->k->bufs[i];
            f->bufp[i] = entry_alloca(f, cg_sty(g, b->dtype), g->elems[i], b->name);
        }
}

/* A buffer pointer loaded from the argument array or a parallel context, with what
 * the calling convention promises about it. */
static LLVMValueRef buffer_pointer(Cg *g, const Buffer *b, LLVMValueRef load)
{
    unsigned al = g->t->any_align ? (unsigned)dtype_bytes(b->dtype) : CG_BUF_ALIGN;
    LLVMMetadataRef align = LLVMValueAsMetadata(LLVMConstInt(g->ti64, al, 0));
    LLVMSetMetadata(load, LLVMGetMDKindIDInContext(g->C, "align", 5),
                    LLVMMetadataAsValue(g->C, LLVMMDNodeInContext2(g->C, &align, 1)));
    int64_t bytes = g->elems[b->id] * dtype_bytes(b->dtype);
    if (bytes > 0) {
        LLVMMetadataRef n = LLVMValueAsMetadata(LLVMConstInt(g->ti64, (unsigned long long)bytes, 0));
        LLVMSetMetadata(load, LLVMGetMDKindIDInContext(g->C, "dereferenceable", 15),
                        LLVMMetadataAsValue(g->C, LLVMMDNodeInContext2(g->C, &n, 1)));
    }
    LLVMValueRef empty = LLVMMetadataAsValue(g->C, LLVMMDNodeInContext2(g->C, NULL, 0));
    LLVMSetMetadata(load, LLVMGetMDKindIDInContext(g->C, "nonnull", 7), empty);
    LLVMSetMetadata(load, LLVMGetMDKindIDInContext(g->C, "noundef", 7), empty);
    return load;
}

/* The context a parallel loop's function receives: every buffer pointer this function
 * has and every loop variable bound here, plus the parallel loop's lower bound. */
void cg_emit_parallel(Fn *f, const Node *n, LLVMValueRef lo, LLVMValueRef hi)
{
    Cg *g = f->g;
    LLVMBuilderRef B = g->B;
    const Kernel *k = g->k;
    int nb = 0, nv = 0;
    for (int i = 0; i < k->nbufs; i++)
        nb += f->bufp[i] != NULL;
    for (int i = 0; i < k->nvars; i++)
        nv += f->vars[i].v != NULL;
    int nslots = nb + nv + 1;
    cg_region_end(f);

    char name[320];
    int id = g->npar++;
    LLVMTypeRef wt[3] = {g->tptr, g->ti64, g->ti64};
    char sym[300];
    snprintf(name, sizeof name, "%s.par%d", cg_llvm_symbol(k->name, sym, sizeof sym), id);
    LLVMValueRef wrap = new_function(g, name, g->tvoid, wt, 3, true);

    /* Caller side: fill the context, hand the loop to the pool. */
    LLVMValueRef ctx = entry_alloca(f, g->ti64, nslots, "ctx");
    int s = 0;
    for (int i = 0; i < k->nbufs; i++)
        if (f->bufp[i]) {
            LLVMValueRef slot = LLVMBuildInBoundsGEP2(B, g->ti64, ctx, (LLVMValueRef[]){cg_ci64(g, s++)}, 1, "");
            LLVMBuildStore(B, f->bufp[i], slot);
        }
    for (int i = 0; i < k->nvars; i++)
        if (f->vars[i].v) {
            LLVMValueRef slot = LLVMBuildInBoundsGEP2(B, g->ti64, ctx, (LLVMValueRef[]){cg_ci64(g, s++)}, 1, "");
            LLVMBuildStore(B, f->vars[i].v, slot);
        }
    LLVMBuildStore(B, lo, LLVMBuildInBoundsGEP2(B, g->ti64, ctx, (LLVMValueRef[]){cg_ci64(g, s)}, 1, ""));
    if (!g->pfor) {
        LLVMTypeRef at[3] = {g->ti64, g->tptr, g->tptr};
        g->pfor_ty = LLVMFunctionType(g->tvoid, at, 3, 0);
        g->pfor = LLVMAddFunction(g->M, "perfc_parallel_for", g->pfor_ty);
        cg_add_fn_attr(g, g->pfor, "nounwind", 0);
    }
    LLVMValueRef count = LLVMBuildNSWSub(B, hi, lo, "");
    LLVMValueRef args[3] = {count, wrap, ctx};
    LLVMBasicBlockRef resume = LLVMGetInsertBlock(B);
    LLVMBuildCall2(B, g->pfor_ty, g->pfor, args, 3, "");

    /* NAME.parN(ctx, clo, chi): unpacks the context and runs iterations lo+[clo, chi). */
    Fn nf;
    fn_begin(g, &nf, wrap, n);
    LLVMValueRef wctx = LLVMGetParam(wrap, 0);
    s = 0;
    for (int i = 0; i < k->nbufs; i++)
        if (f->bufp[i]) {
            LLVMValueRef slot = LLVMBuildInBoundsGEP2(B, g->ti64, wctx, (LLVMValueRef[]){cg_ci64(g, s++)}, 1, "");
            nf.bufp[i] = buffer_pointer(g, k->bufs[i], LLVMBuildLoad2(B, g->tptr, slot, k->bufs[i]->name));
        }
    for (int i = 0; i < k->nvars; i++)
        if (f->vars[i].v) {
            LLVMValueRef slot = LLVMBuildInBoundsGEP2(B, g->ti64, wctx, (LLVMValueRef[]){cg_ci64(g, s++)}, 1, "");
            cg_bind(&nf, k->vars[i], cg_S(LLVMBuildLoad2(B, g->ti64, slot, k->vars[i]->name)));
        }
    LLVMValueRef lo0 = LLVMBuildLoad2(B, g->ti64, LLVMBuildInBoundsGEP2(B, g->ti64, wctx, (LLVMValueRef[]){cg_ci64(g, s)}, 1, ""), "");
    alloc_private(&nf);
    LLVMValueRef clo = LLVMBuildNSWAdd(B, lo0, LLVMGetParam(wrap, 1), "");
    LLVMValueRef chi = LLVMBuildNSWAdd(B, lo0, LLVMGetParam(wrap, 2), "");
    cg_emit_serial(&nf, n, clo, chi);
    fn_end(&nf);

    LLVMPositionBuilderAtEnd(B, resume);
}

/* ---- module ---- */

/* Records, for each private buffer, the parallel loops around all of its uses. */
static void note_use(Cg *g, Home *h, const Buffer *b, PtrVec *stack)
{
    if (!g->priv[b->id])
        return;
    Home *x = &h[b->id];
    if (!x->used) {
        x->used = true;
        for (int i = 0; i < stack->n; i++)
            vec_push(&x->path, stack->v[i]);
        return;
    }
    int m = 0;
    while (m < x->path.n && m < stack->n && x->path.v[m] == stack->v[m])
        m++;
    x->path.n = m;
}

/* Second walk: where each use lies against the common prefix found by the first. */
static void note_below(Cg *g, Home *h, const Buffer *b, PtrVec *stack)
{
    if (!g->priv[b->id])
        return;
    Home *x = &h[b->id];
    if (stack->n <= x->path.n) {
        x->shallow = true;
        return;
    }
    const void *p = stack->v[x->path.n];
    for (int i = 0; i < x->homes.n; i++)
        if (x->homes.v[i] == p)
            return;
    vec_push(&x->homes, (void *)p);
}

static void uses_expr(Cg *g, Home *h, const Expr *e, PtrVec *stack)
{
    if (!e)
        return;
    if (e->kind == IE_LOAD) {
        (g->below ? note_below : note_use)(g, h, e->u.load.buf, stack);
        for (int i = 0; i < e->u.load.buf->rank; i++)
            uses_expr(g, h, e->u.load.idx[i], stack);
        return;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        uses_expr(g, h, e->args[i], stack);
}

static void uses_list(Cg *g, Home *h, const NodeList *l, PtrVec *stack)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        switch (n->kind) {
        case N_LOOP:
            uses_expr(g, h, n->u.loop.lo, stack);
            uses_expr(g, h, n->u.loop.hi, stack);
            if (n->u.loop.kind == LOOP_PARALLEL)
                vec_push(stack, (void *)n);
            uses_list(g, h, &n->u.loop.body, stack);
            if (n->u.loop.kind == LOOP_PARALLEL)
                stack->n--;
            break;
        case N_IF:
            uses_expr(g, h, n->u.guard.cond, stack);
            uses_list(g, h, &n->u.guard.body, stack);
            uses_list(g, h, &n->u.guard.els, stack);
            break;
        case N_PREFETCH: /* a hint: where a buffer is not at hand, it is skipped */
            break;
        case N_STMT:
            (g->below ? note_below : note_use)(g, h, n->u.stmt.buf, stack);
            for (int j = 0; j < n->u.stmt.buf->rank; j++)
                uses_expr(g, h, n->u.stmt.idx[j], stack);
            uses_expr(g, h, n->u.stmt.value, stack);
            break;
        }
    }
}

/* Accesses (loads and stores) of each buffer in list l, added to cnt[]. */
static void count_expr(const Expr *e, int *cnt)
{
    if (!e)
        return;
    if (e->kind == IE_LOAD) {
        cnt[e->u.load.buf->id]++;
        for (int i = 0; i < e->u.load.buf->rank; i++)
            count_expr(e->u.load.idx[i], cnt);
        return;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        count_expr(e->args[i], cnt);
}

static void count_list(const NodeList *l, int *cnt)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        if (n->kind == N_STMT) {
            cnt[n->u.stmt.buf->id]++;
            for (int j = 0; j < n->u.stmt.buf->rank; j++)
                count_expr(n->u.stmt.idx[j], cnt);
            count_expr(n->u.stmt.value, cnt);
        } else if (n->kind == N_LOOP) {
            count_expr(n->u.loop.lo, cnt);
            count_expr(n->u.loop.hi, cnt);
            count_list(&n->u.loop.body, cnt);
        } else if (n->kind == N_IF) {
            count_expr(n->u.guard.cond, cnt);
            count_list(&n->u.guard.body, cnt);
            count_list(&n->u.guard.els, cnt);
        } /* N_PREFETCH: a hint, no access */
    }
}


/* g->fresh: for each private buffer of at most FRESH_MAX_ELEMS elements, the
 * innermost loop listed in its private_in that holds all of its accesses. */
static void find_fresh(Cg *g, const NodeList *l, const int *total, int *depth, int d)
{
    const Kernel *k = g->k;
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        if (n->kind == N_STMT)
            continue;
        if (n->kind == N_LOOP) {
            for (int b = 0; b < k->nbufs; b++) {
                const Buffer *buf = k->bufs[b];
                if (!g->priv[b] || g->elems[b] > FRESH_MAX_ELEMS || d <= depth[b])
                    continue;
                bool listed = false;
                for (int j = 0; j < buf->nprivate_in; j++)
                    listed |= buf->private_in[j] == n->u.loop.var;
                if (!listed)
                    continue;
                int *cnt = xcalloc((size_t)k->nbufs, sizeof *cnt);
                count_list(&n->u.loop.body, cnt);
                if (cnt[b] == total[b]) {
                    g->fresh[b] = n;
                    depth[b] = d;
                }
                free(cnt);
            }
        }
        find_fresh(g, ir_body((Node *)n), total, depth, d + 1);
        if (n->kind == N_IF)
            find_fresh(g, &n->u.guard.els, total, depth, d + 1);
    }
}

static bool setup(Cg *g)
{
    const Kernel *k = g->k;
    int nb = k->nbufs ? k->nbufs : 1;
    g->elems = xcalloc((size_t)nb, sizeof *g->elems);
    g->dims = xcalloc((size_t)nb, sizeof *g->dims);
    g->priv = xcalloc((size_t)nb, sizeof *g->priv);
    g->home = xcalloc((size_t)nb, sizeof *g->home);
    for (int i = 0; i < k->nbufs; i++) {
        const Buffer *b = k->bufs[i];
        if (b->id != i)
            die("buffer %s has id %d at position %d", b->name, b->id, i);
        g->dims[i] = xcalloc((size_t)(b->rank ? b->rank : 1), sizeof **g->dims);
        for (int j = 0; j < b->rank; j++)
            if (!ir_eval_size(k, b->shape[j], &g->dims[i][j]) || g->dims[i][j] < 0) {
                cg_error(g, b->span, "the size of dimension %d of '%s' is not a known non-negative number", j, b->name);
                return false;
            }
        g->elems[i] = ir_buffer_elems(k, b);
        g->priv[i] = b->kind == BUF_TEMP && b->mem == MEM_LOCAL;
    }
    for (int i = 0; i < k->nvars; i++)
        if (k->vars[i]->id != i)
            die("variable %s has id %d at position %d", k->vars[i]->name, k->vars[i]->id, i);
    Home *h = xcalloc((size_t)nb, sizeof *h);
    PtrVec stack = {0};
    uses_list(g, h, &k->body, &stack);
    /* A buffer used in sibling parallel loops (the pieces partition or a peeled or
     * padded split cloned from one loop) has a common prefix above them all: one
     * copy there would be shared by the threads of each.  When every use lies in one
     * of those loops and the buffer is private to their iterations (private_in:
     * every read sees a write of the same iteration), each loop's function
     * allocates its own. */
    g->below = true;
    uses_list(g, h, &k->body, &stack);
    g->below = false;
    g->homes = xcalloc((size_t)nb, sizeof *g->homes);
    for (int i = 0; i < k->nbufs; i++) {
        g->home[i] = h[i].path.n ? h[i].path.v[h[i].path.n - 1] : NULL;
        bool own = h[i].used && !h[i].shallow && h[i].homes.n > 1;
        for (int j = 0; own && j < h[i].homes.n; j++) {
            const Node *p = h[i].homes.v[j];
            bool listed = false;
            for (int q = 0; q < k->bufs[i]->nprivate_in; q++)
                listed |= k->bufs[i]->private_in[q] == p->u.loop.var;
            own = listed;
        }
        if (own)
            g->homes[i] = h[i].homes;
        else
            vec_free(&h[i].homes);
        vec_free(&h[i].path);
    }
    vec_free(&stack);
    free(h);
    g->fresh = xcalloc((size_t)nb, sizeof *g->fresh);
    int *total = xcalloc((size_t)nb, sizeof *total), *depth = xcalloc((size_t)nb, sizeof *depth);
    count_list(&k->body, total);
    find_fresh(g, &k->body, total, depth, 1);
    free(total);
    free(depth);
    return true;
}

static void cleanup(Cg *g)
{
    if (g->dims)
        for (int i = 0; i < g->k->nbufs; i++)
            free(g->dims[i]);
    free(g->dims);
    free(g->elems);
    free(g->priv);
    free(g->home);
    for (int i = 0; g->homes && i < g->k->nbufs; i++)
        vec_free(&g->homes[i]);
    free(g->homes);
    free(g->fresh);
    free(g->scope);
    free(g->others);
    if (g->B)
        LLVMDisposeBuilder(g->B);
}

bool cg_kernel_tiled(const Kernel *k)
{
    return cpu_holds_scheduled(&k->body);
}

bool cg_kernel_padded(const Kernel *k)
{
    return cpu_list_padded(&k->body);
}

LLVMModuleRef cg_build_module(const Kernel *k, const CgTarget *t, LLVMContextRef ctx, LLVMTargetMachineRef tm, Diags *d)
{
    if (!ir_all_bound(k, d))
        return NULL;
    Cg g = {.k = k, .t = t, .d = d, .C = ctx};
    g.tiled = cg_kernel_tiled(k);
    if (!setup(&g)) {
        cleanup(&g);
        return NULL;
    }
    g.M = LLVMModuleCreateWithNameInContext(k->name, ctx);
    LLVMSetTarget(g.M, t->triple);
    LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
    LLVMSetModuleDataLayout(g.M, dl);
    LLVMDisposeTargetData(dl);
    if (t->abi && *t->abi) {
        /* RISC-V reads the float ABI from this flag too; it must match the TM's. */
        LLVMMetadataRef abi = LLVMMDStringInContext2(ctx, t->abi, strlen(t->abi));
        LLVMAddModuleFlag(g.M, LLVMModuleFlagBehaviorError, "target-abi", strlen("target-abi"), abi);
    }
    g.B = LLVMCreateBuilderInContext(ctx);
    g.tvoid = LLVMVoidTypeInContext(ctx);
    g.ti1 = LLVMInt1TypeInContext(ctx);
    g.ti8 = LLVMInt8TypeInContext(ctx);
    g.ti16 = LLVMInt16TypeInContext(ctx);
    g.ti32 = LLVMInt32TypeInContext(ctx);
    g.ti64 = LLVMInt64TypeInContext(ctx);
    g.tf32 = LLVMFloatTypeInContext(ctx);
    g.tf64 = LLVMDoubleTypeInContext(ctx);
    g.thalf = LLVMHalfTypeInContext(ctx);
    g.tptr = LLVMPointerTypeInContext(ctx, 0);

    /* Alias scopes: one per buffer, in one domain. */
    g.md_scope = LLVMGetMDKindIDInContext(ctx, "alias.scope", 11);
    g.md_noalias = LLVMGetMDKindIDInContext(ctx, "noalias", 7);
    int nb = k->nbufs ? k->nbufs : 1;
    LLVMMetadataRef *sc = xcalloc((size_t)nb, sizeof *sc);
    LLVMMetadataRef tmp = LLVMTemporaryMDNode(ctx, NULL, 0);
    LLVMMetadataRef dname = LLVMMDStringInContext2(ctx, k->name, strlen(k->name));
    LLVMMetadataRef dops[2] = {tmp, dname};
    LLVMMetadataRef domain = LLVMMDNodeInContext2(ctx, dops, 2);
    LLVMMetadataReplaceAllUsesWith(tmp, domain);
    for (int i = 0; i < k->nbufs; i++) {
        tmp = LLVMTemporaryMDNode(ctx, NULL, 0);
        LLVMMetadataRef ops[3] = {tmp, domain, LLVMMDStringInContext2(ctx, k->bufs[i]->name, strlen(k->bufs[i]->name))};
        sc[i] = LLVMMDNodeInContext2(ctx, ops, 3);
        LLVMMetadataReplaceAllUsesWith(tmp, sc[i]);
    }
    g.scope = xcalloc((size_t)nb, sizeof *g.scope);
    g.others = xcalloc((size_t)nb, sizeof *g.others);
    LLVMMetadataRef *rest = xcalloc((size_t)nb, sizeof *rest);
    for (int i = 0; i < k->nbufs; i++) {
        g.scope[i] = LLVMMetadataAsValue(ctx, LLVMMDNodeInContext2(ctx, &sc[i], 1));
        int m = 0;
        for (int j = 0; j < k->nbufs; j++)
            if (j != i)
                rest[m++] = sc[j];
        if (m)
            g.others[i] = LLVMMetadataAsValue(ctx, LLVMMDNodeInContext2(ctx, rest, (size_t)m));
    }
    free(rest);
    free(sc);

    /* NAME(ptr bufs): loads the buffer pointers and runs the loop nest. */
    char sym[300];
    LLVMValueRef entry = new_function(&g, cg_llvm_symbol(k->name, sym, sizeof sym), g.tvoid, &g.tptr, 1, false);
    LLVMSetValueName2(LLVMGetParam(entry, 0), "bufs", 4);
    Fn f;
    fn_begin(&g, &f, entry, NULL);
    for (int i = 0; i < k->nbufs; i++)
        if (!g.priv[i]) {
            LLVMValueRef slot = LLVMBuildInBoundsGEP2(g.B, g.tptr, LLVMGetParam(entry, 0), (LLVMValueRef[]){cg_ci64(&g, i)}, 1, "");
            f.bufp[i] = buffer_pointer(&g, k->bufs[i], LLVMBuildLoad2(g.B, g.tptr, slot, k->bufs[i]->name));
        }
    alloc_private(&f);
    cg_emit_list(&f, &k->body);
    if (g.uses_amx) {
        /* before any tile is touched, on the caller's thread: Linux grants AMX to the
         * whole process (perfc_amx_permit, runtime/pool.c, stops the process with a
         * message where it cannot) */
        LLVMBuilderRef eb = LLVMCreateBuilderInContext(g.C);
        LLVMPositionBuilderBefore(eb, LLVMGetBasicBlockTerminator(f.entry));
        LLVMTypeRef pt = LLVMFunctionType(g.tvoid, NULL, 0, 0);
        LLVMBuildCall2(eb, pt, LLVMAddFunction(g.M, "perfc_amx_permit", pt), NULL, 0, "");
        LLVMDisposeBuilder(eb);
    }
    fn_end(&f);

    bool failed = g.failed;
    cleanup(&g);
    if (failed) {
        LLVMDisposeModule(g.M);
        return NULL;
    }
    char *msg = NULL;
    if (LLVMVerifyModule(g.M, LLVMReturnStatusAction, &msg)) {
        diag_plain(d, DIAG_ERROR, "internal error: kernel %s: invalid LLVM IR: %s", k->name, msg ? msg : "");
        LLVMDisposeMessage(msg);
        LLVMDisposeModule(g.M);
        return NULL;
    }
    LLVMDisposeMessage(msg);
    return g.M;
}
