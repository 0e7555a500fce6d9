/* The loop nest of a library kernel's general variant (perfc lib).
 *
 * The general variant serves every size, so its nest is lowered with every size
 * unbound (a kernel's defaults are ignored) and may only be changed by
 * transformations that leave each loop running over sizes: no splits, whose tails
 * would need guards that the index-range check of codegen/c cannot see through.
 * Within that, the canonical nest is often in a poor order for memory (GEMM's
 * reduction innermost walks B by columns), so this file applies two moves the
 * compiler proves legal (passes/deps.c), each kept only when the pipeline accepts it:
 *   - distribute(L) where L holds a loop beside other nodes (GEMM's initialisation
 *     beside its reduction), so each nest can be reordered on its own;
 *   - reorder(...) of a perfect chain of loops so that the loop that moves most
 *     accesses by one element (their last index) is innermost, where the C
 *     compiler can vectorise it.
 * Every move is re-applied from a fresh lowering, so a refused one leaves nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib.h"
#include "passes/passes.h"
#include "passes/xform.h"

enum { MAX_STEPS = 24, MAX_CHAIN = 16 };

typedef struct Steps {
    char *text[MAX_STEPS];
    int n;
} Steps;

Kernel *lib_lower_unbound(Program *p, AstKernel *ak, Diags *d)
{
    bool *had = xcalloc((size_t)ak->nparams + 1, sizeof(bool));
    for (int j = 0; j < ak->nparams; j++) {
        had[j] = ak->params[j].has_default;
        ak->params[j].has_default = false;
    }
    Kernel *k = lower_kernel(p, ak, NULL, NULL, d);
    for (int j = 0; j < ak->nparams; j++)
        ak->params[j].has_default = had[j];
    free(had);
    return k;
}

/* Lowers and applies the steps; NULL when one is refused (d gets why). */
static Kernel *apply(Program *p, AstKernel *ak, const Steps *st, Arena *a, Diags *d)
{
    Kernel *k = lib_lower_unbound(p, ak, d);
    if (!k || d->nerrors) {
        if (k)
            ir_free(k);
        return NULL;
    }
    if (!st->n)
        return k;
    const AstSchedule *sc[MAX_STEPS];
    for (int i = 0; i < st->n; i++) {
        Source *src = arena_alloc(a, sizeof *src);
        src->path = "<general>";
        src->text = st->text[i];
        src->len = strlen(st->text[i]);
        AstSchedule *s = parse_schedule_text(a, src, d);
        if (!s) {
            ir_free(k);
            return NULL;
        }
        s->kernel = ak->name;
        sc[i] = s;
    }
    PipelineOpts po = {0};
    po.schedules = sc;
    po.nschedules = st->n;
    if (!pipeline_run(k, &po, d) || d->nerrors) {
        ir_free(k);
        return NULL;
    }
    return k;
}

bool lib_loop_parallel(Program *p, AstKernel *ak, const char *var, Arena *a)
{
    Steps st = {0};
    size_t n = strlen(var) + 16;
    st.text[st.n++] = xmalloc(n);
    snprintf(st.text[0], n, "parallel(%s)", var);
    Diags scratch;
    diag_init(&scratch);
    Kernel *k = apply(p, ak, &st, a, &scratch);
    diag_free(&scratch);
    free(st.text[0]);
    if (k)
        ir_free(k);
    return k != NULL;
}

/* Unit-stride score of variable v in the accesses under node list l: +2 for each
 * access whose last index is v (plus constants), -1 for each other index using v. */
static void score_expr(const Expr *e, const Var *v, int *s);

static void score_access(const Buffer *b, Expr *const *idx, const Var *v, int *s)
{
    for (int i = 0; i < b->rank; i++) {
        const Expr *x = idx[i];
        while (x->kind == IE_CAST || ((x->kind == IE_ADD || x->kind == IE_SUB) && x->args[1]->kind == IE_INT))
            x = x->args[0];
        if (i == b->rank - 1 && x->kind == IE_VAR && x->u.var == v)
            *s += 2;
        else if (ir_expr_uses_var(idx[i], v))
            *s -= 1;
        score_expr(idx[i], v, s);
    }
}

static void score_expr(const Expr *e, const Var *v, int *s)
{
    if (!e)
        return;
    if (e->kind == IE_LOAD) {
        score_access(e->u.load.buf, e->u.load.idx, v, s);
        return;
    }
    for (int i = 0; i < ir_expr_arity(e->kind); i++)
        score_expr(e->args[i], v, s);
}

static void score_list(const NodeList *l, const Var *v, int *s)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        if (n->kind == N_STMT) {
            score_access(n->u.stmt.buf, n->u.stmt.idx, v, s);
            score_expr(n->u.stmt.value, v, s);
        } else if (n->kind != N_PREFETCH) {
            score_list(ir_body((Node *)n), v, s);
        }
    }
}

static bool has_loop(const NodeList *l)
{
    for (int i = 0; i < l->n; i++)
        if (l->v[i]->kind == N_LOOP)
            return true;
    return false;
}

/* The next move to try, written into out; false when there is none.  `tried`
 * holds moves refused before. */
static bool next_move(const NodeList *l, const Steps *tried, char *out, size_t n)
{
    for (int i = 0; i < l->n; i++) {
        Node *nd = l->v[i];
        if (nd->kind != N_LOOP)
            continue;
        NodeList *body = &nd->u.loop.body;
        if (body->n > 1 && has_loop(body)) {
            snprintf(out, n, "distribute(%s)", nd->u.loop.var->name);
            bool seen = false;
            for (int t = 0; t < tried->n; t++)
                seen |= !strcmp(tried->text[t], out);
            if (!seen)
                return true;
        }
        /* the perfect chain starting here */
        Node *chain[MAX_CHAIN];
        int c = 0;
        for (Node *x = nd; x && c < MAX_CHAIN;) {
            chain[c++] = x;
            NodeList *b = &x->u.loop.body;
            x = b->n == 1 && b->v[0]->kind == N_LOOP ? b->v[0] : NULL;
        }
        if (c >= 2) {
            NodeList *bottom = &chain[c - 1]->u.loop.body;
            int best = c - 1, bests = -1000000;
            for (int j = 0; j < c; j++) {
                int s = 0;
                score_list(bottom, chain[j]->u.loop.var, &s);
                if (s > bests || (s == bests && j == c - 1)) {
                    bests = s;
                    best = j;
                }
            }
            if (best != c - 1) {
                size_t len = (size_t)snprintf(out, n, "reorder(");
                for (int j = 0; j < c; j++)
                    if (j != best && len < n)
                        len += (size_t)snprintf(out + len, n - len, "%s, ", chain[j]->u.loop.var->name);
                if (len < n)
                    snprintf(out + len, n - len, "%s)", chain[best]->u.loop.var->name);
                bool seen = false;
                for (int t = 0; t < tried->n; t++)
                    seen |= !strcmp(tried->text[t], out);
                if (!seen)
                    return true;
            }
        }
        if (next_move(body, tried, out, n))
            return true;
    }
    return false;
}

Kernel *lib_general_kernel(Program *p, AstKernel *ak, Arena *a, Diags *d)
{
    Steps st = {0}, tried = {0};
    Kernel *k = apply(p, ak, &st, a, d);
    char move[512];
    while (k && st.n < MAX_STEPS && tried.n < MAX_STEPS && next_move(&k->body, &tried, move, sizeof move)) {
        tried.text[tried.n++] = xstrdup(move);
        st.text[st.n++] = xstrdup(move);
        Diags scratch;
        diag_init(&scratch);
        Kernel *k2 = apply(p, ak, &st, a, &scratch);
        diag_free(&scratch);
        if (k2 && ir_verify(k2, d)) {
            ir_free(k);
            k = k2;
        } else {
            if (k2)
                ir_free(k2);
            free(st.text[--st.n]); /* refused: drop it */
        }
    }
    if (k && getenv("PERFC_LIB_VERBOSE")) {
        fprintf(stderr, "perfc lib: general variant of %s:", ak->name);
        for (int i = 0; i < st.n; i++)
            fprintf(stderr, " %s", st.text[i]);
        fprintf(stderr, "%s\n", st.n ? "" : " the canonical nest");
    }
    for (int i = 0; i < st.n; i++)
        free(st.text[i]);
    for (int i = 0; i < tried.n; i++)
        free(tried.text[i]);
    return k;
}
