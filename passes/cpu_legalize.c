/* Target legalisation for CPU targets: what the LLVM back end cannot translate is
 * refused or made serial here, at the loop, so the back end never has to decide.
 *
 *  - a loop bound to a GPU kind (block.*, thread.*, mma, wgmma) is an error;
 *  - a vector loop becomes serial, with a warning that says why, when it is nested
 *    in a vector loop, its trip count is not a constant or above 256 lanes, or its
 *    body cannot run lane-parallel: a store that is neither unit-stride in the
 *    vector index nor uniform (no scatter), a vector or parallel loop inside, inner
 *    bounds that vary across lanes, a reduction into one element that reads the
 *    element's buffer;
 *  - an unroll loop without a constant trip count of at most 4096 becomes serial,
 *    with a warning;
 *  - a parallel loop inside a vector loop becomes serial.
 * Every rewrite replaces a loop kind by `serial`, which runs the same iterations in
 * order: the kernel's meaning is unchanged. */
#include <stdio.h>

#include "cpu.h"

typedef struct Leg {
    Kernel *k;
    const Target *target;
    Diags *d;
    bool failed;
    const Node *vec;         /* the enclosing loop that stays vector, if any */
} Leg;

/* Whether the body of vector loop v can be translated lane-parallel; if not, why[]
 * says what stands in the way and *where points at it. */
static bool vector_check(const Kernel *k, const NodeList *l, const Var *v, char *why, size_t nwhy, Span *where)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        int64_t s;
        switch (n->kind) {
        case N_LOOP:
            *where = n->span;
            if (n->u.loop.kind == LOOP_VECTOR) {
                snprintf(why, nwhy, "it contains another vector loop ('%s')", n->u.loop.var->name);
                return false;
            }
            if (n->u.loop.kind == LOOP_PARALLEL) {
                snprintf(why, nwhy, "it contains a parallel loop ('%s')", n->u.loop.var->name);
                return false;
            }
            if (!cpu_stride(k, n->u.loop.lo, v, &s) || s != 0 || !cpu_stride(k, n->u.loop.hi, v, &s) || s != 0) {
                snprintf(why, nwhy, "the bounds of inner loop '%s' depend on the vector index", n->u.loop.var->name);
                return false;
            }
            if (!vector_check(k, &n->u.loop.body, v, why, nwhy, where))
                return false;
            break;
        case N_IF:
            if (!vector_check(k, &n->u.guard.body, v, why, nwhy, where) ||
                !vector_check(k, &n->u.guard.els, v, why, nwhy, where))
                return false;
            break;
        case N_PREFETCH: /* fetched once for all lanes */
            break;
        case N_STMT: {
            const Buffer *b = n->u.stmt.buf;
            CpuAccKind ak = cpu_access_kind(k, n->u.stmt.idx, b->rank, v);
            *where = n->span;
            if (ak == CPU_ACC_OTHER) {
                snprintf(why, nwhy, "the store to %s is not unit-stride in the vector index (no scatter)", b->name);
                return false;
            }
            if (ak == CPU_ACC_UNIFORM && n->u.stmt.op != SOP_ASSIGN && ir_expr_reads(n->u.stmt.value, b)) {
                snprintf(why, nwhy, "the reduction into one element of %s reads %s", b->name, b->name);
                return false;
            }
            break;
        }
        }
    }
    return true;
}

bool cpu_vector_body_ok(const Kernel *k, const NodeList *l, const Var *v)
{
    char why[8];
    Span where;
    return vector_check(k, l, v, why, sizeof why, &where);
}

static void legalize_list(Leg *g, NodeList *l)
{
    for (int i = 0; i < l->n; i++) {
        Node *n = l->v[i];
        if (n->kind == N_IF) {
            legalize_list(g, &n->u.guard.body);
            legalize_list(g, &n->u.guard.els);
            continue;
        }
        if (n->kind != N_LOOP)
            continue;
        LoopKind kind = n->u.loop.kind;
        Var *v = n->u.loop.var;
        int64_t ext = 0;
        bool cext = cpu_const_extent(g->k, n->u.loop.lo, n->u.loop.hi, &ext);
        if (kind >= LOOP_BLOCK_X && kind <= LOOP_THREAD_Z) {
            diag_error(g->d, n->span, "loop '%s' is bound to %s: GPU loop kinds cannot run on CPU target %s", v->name,
                       loop_kind_name(kind), g->target->name);
            g->failed = true;
        } else if (kind == LOOP_UNROLL && !(cext && ext <= CPU_MAX_UNROLL)) {
            diag_warning(g->d, n->span, "unroll loop '%s' %s; emitted as a loop", v->name,
                         cext ? "has more than 4096 iterations" : "has no constant trip count");
            n->u.loop.kind = LOOP_SERIAL;
        } else if (kind == LOOP_VECTOR) {
            char why[256] = "";
            Span where = n->span;
            if (g->vec)
                snprintf(why, sizeof why, "it is nested in vector loop '%s'", g->vec->u.loop.var->name);
            else if (!cext)
                snprintf(why, sizeof why, "its trip count is not a constant");
            else if (ext > CPU_MAX_VECTOR_WIDTH)
                snprintf(why, sizeof why, "it is wider than %d lanes", CPU_MAX_VECTOR_WIDTH);
            else
                vector_check(g->k, &n->u.loop.body, v, why, sizeof why, &where);
            if (why[0]) {
                diag_warning(g->d, n->span, "vector loop '%s' emitted as a scalar loop: %s", v->name, why);
                if (where.src && where.off != n->span.off)
                    diag_note(g->d, where, "here");
                n->u.loop.kind = LOOP_SERIAL;
            }
        } else if (kind == LOOP_PARALLEL && g->vec) {
            n->u.loop.kind = LOOP_SERIAL;
        }
        const Node *saved = g->vec;
        if (n->u.loop.kind == LOOP_VECTOR)
            g->vec = n;
        legalize_list(g, &n->u.loop.body);
        g->vec = saved;
    }
}

bool cpu_legalize(Kernel *k, const Target *target, Diags *d)
{
    Leg g = {.k = k, .target = target ? target : target_find("host"), .d = d};
    legalize_list(&g, &k->body);
    return !g.failed;
}
