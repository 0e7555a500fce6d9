/* edge: register tiles at a ragged edge narrowed to the registers that have work.
 *
 * A micro-kernel whose vector loop spans several SIMD registers (NR = 64 f32
 * columns: four zmm) runs its last column panel under a lane guard
 * (`if jo*64 + ji < N`, the split's tail, which `version` leaves in the guarded
 * copy).  When N leaves one column in that panel, the masked tile still does all
 * four registers' work for every k: at 1037x769x511 the one-column panel cost as
 * much as a full one, a thirteenth of the kernel.  So the serial loop S around the
 * vector loop V (the reduction loop around the unrolled rows) becomes
 *
 *     if TEST(g)        no lane at or past g can pass V's bounding guards
 *       S with V's trip count g          (one register)
 *     else if TEST(2g)
 *       S with V's trip count 2g         (two registers)
 *     ...
 *     else
 *       S as it was
 *
 * for g the lanes of one SIMD register of V's element type and a power of two
 * of them (1, 2, 4 registers), each copy keeping its guards (the mask of its last
 * register).
 *
 * S qualifies when V is the only vector loop under it, only unroll loops of
 * constant bounds and guards lie between S and V, V's bounds are constant, and
 * every statement in V's body lies under a guard one of whose conjuncts bounds V
 * from above (`d <= lim` with V's coefficient positive) and reads otherwise only
 * variables bound outside S or by those unroll loops.  TEST(w) says that
 * conjunct fails at V = lo + w for the unroll variables' values that make it
 * easiest to hold, so it fails for every lane the copy drops, for every
 * iteration of S: those lanes ran no statement, and the copy runs the same
 * statements on the same lanes in the same order.  When TEST is a constant (V's
 * bound depends on nothing outside), V is narrowed in place or left alone.
 * TEST reads loop variables only, nothing the body writes. */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#define EDGE_MAX_COPIES 7
#define EDGE_MAX_PATH 16
#define EDGE_MAX_GUARDS 16

typedef struct Edge {
    Kernel *k;
    int vector_bytes;
} Edge;

/* The site: S, the vector loop V below it, the unroll loops between. */
typedef struct Site {
    Node *v;
    const Node *path[EDGE_MAX_PATH];
    int npath;
    int nvec;                /* vector loops found under S */
    bool bad;                /* something other than unroll loops and guards on the way */
    CpuCmp cmp[EDGE_MAX_GUARDS]; /* one bounding conjunct per covering guard */
    int nbound;
    int esize;               /* widest element stored in V */
} Site;

static void find_vector(Site *s, NodeList *l, const Node **path, int np)
{
    for (int i = 0; i < l->n; i++) {
        Node *n = l->v[i];
        if (n->kind == N_IF) {
            find_vector(s, &n->u.guard.body, path, np);
            find_vector(s, &n->u.guard.els, path, np);
            continue;
        }
        if (n->kind != N_LOOP)
            continue;
        if (n->u.loop.kind == LOOP_VECTOR) {
            if (s->nvec++ == 0) {
                s->v = n;
                memcpy(s->path, path, sizeof *path * (size_t)np);
                s->npath = np;
            }
            continue;
        }
        if (np == EDGE_MAX_PATH) {
            s->bad = true;
            return;
        }
        /* what lies on the way to a vector loop must be unroll loops */
        int before = s->nvec;
        path[np] = n;
        find_vector(s, &n->u.loop.body, path, np + 1);
        if (s->nvec > before && n->u.loop.kind != LOOP_UNROLL)
            s->bad = true;
    }
}

static bool const_bounds(const Kernel *k, const Node *n, int64_t *lo, int64_t *hi)
{
    return ar_const(k, n->u.loop.lo, lo) && ar_const(k, n->u.loop.hi, hi) && *lo < *hi;
}

/* The loop of var id among S's path (unroll loops between S and V), or NULL. */
static const Node *on_path(const Site *s, int id)
{
    for (int i = 0; i < s->npath; i++)
        if (s->path[i]->u.loop.var->id == id)
            return s->path[i];
    return NULL;
}

/* Whether var id is bound inside S (by S itself, a loop under it, V or inside V):
 * ids bound there are collected in inner[]. */
static void collect_bound(const NodeList *l, bool *inner)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        if (n->kind == N_LOOP)
            inner[n->u.loop.var->id] = true;
        if (n->kind == N_LOOP || n->kind == N_IF) {
            collect_bound(ir_body((Node *)n), inner);
            const NodeList *e = ir_else((Node *)n);
            if (e)
                collect_bound(e, inner);
        }
    }
}

/* A conjunct of guard g that bounds V from above with every other variable
 * outside S or on the path; false when none. */
static bool bounding(const Edge *e, Site *s, const bool *inner, const Node *g, CpuCmp *out)
{
    CpuCmp cmp[8];
    int nc = 0;
    if (!cpu_conjuncts(e->k, g->u.guard.cond, cmp, &nc, 8))
        return false;
    int vid = s->v->u.loop.var->id;
    for (int c = 0; c < nc; c++) {
        int64_t kv = 0;
        bool ok = true;
        for (int t = 0; t < cmp[c].d.n && ok; t++) {
            int x = cmp[c].d.var[t];
            if (cmp[c].d.k[t] == 0)
                continue;
            if (x == vid)
                kv += cmp[c].d.k[t];
            else if (inner[x] && !on_path(s, x))
                ok = false;
        }
        if (ok && kv > 0) {
            *out = cmp[c];
            return true;
        }
    }
    return false;
}

/* Every statement of l under a bounding guard (collected in s->bound). */
static bool covered(const Edge *e, Site *s, const bool *inner, const NodeList *l)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        switch (n->kind) {
        case N_PREFETCH:
            break; /* a hint: dropping lanes from it changes no result */
        case N_STMT:
            return false;
        case N_LOOP:
            if (!covered(e, s, inner, &n->u.loop.body))
                return false;
            break;
        case N_IF: {
            CpuCmp c;
            if (!n->u.guard.holds && !n->u.guard.els.n && bounding(e, s, inner, n, &c)) {
                if (s->nbound == EDGE_MAX_GUARDS)
                    return false;
                s->cmp[s->nbound++] = c;
                break;
            }
            if (!covered(e, s, inner, &n->u.guard.body) || !covered(e, s, inner, &n->u.guard.els))
                return false;
            break;
        }
        }
    }
    return true;
}

static void widest_store(const NodeList *l, int *esize)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        if (n->kind == N_STMT) {
            int b = dtype_bytes(n->u.stmt.buf->dtype);
            if (b > *esize)
                *esize = b;
        } else if (n->kind == N_LOOP || n->kind == N_IF) {
            widest_store(ir_body((Node *)n), esize);
            const NodeList *el = ir_else((Node *)n);
            if (el)
                widest_store(el, esize);
        }
    }
}

/* TEST(w): every recorded conjunct fails at V = lo + w (for all lanes past it),
 * as an expression; NULL with *never when a conjunct can never fail there, NULL
 * with *always when each always fails (V's bound depends on no variable). */
static Expr *test_for(Edge *e, const Site *s, int64_t vlo, int64_t w, bool *always, bool *never)
{
    Kernel *k = e->k;
    Expr *test = NULL;
    int vid = s->v->u.loop.var->id;
    *always = true;
    *never = false;
    for (int b = 0; b < s->nbound; b++) {
        const CpuCmp *c = &s->cmp[b];
        /* d = outer + path + kv*V + c0 <= lim fails for all path values when
         * outer > lim - (c0 + kv*(vlo+w) + the path's smallest contribution) */
        int64_t best = c->d.c;
        ArAff outer = {0};
        for (int t = 0; t < c->d.n; t++) {
            int64_t kk = c->d.k[t], lo, hi;
            int x = c->d.var[t];
            const Node *p = on_path(s, x);
            if (kk == 0)
                continue;
            if (x == vid) {
                best += kk * (vlo + w);
            } else if (p) {
                if (!const_bounds(k, p, &lo, &hi)) {
                    *always = false, *never = true;
                    return NULL;
                }
                best += kk > 0 ? kk * lo : kk * (hi - 1);
            } else {
                outer.var[outer.n] = x;
                outer.k[outer.n++] = kk;
            }
        }
        int64_t need = c->lim - best + 1; /* the conjunct fails when outer >= need */
        if (outer.n == 0) {
            if (0 < need) {
                *always = false, *never = true;
                return NULL;
            }
            continue;
        }
        *always = false;
        Expr *t = ir_bin(k, IE_GE, cpu_aff_terms(k, &outer), ir_int(k, need));
        test = test ? ir_bin(k, IE_AND, test, t) : t;
    }
    return *always ? NULL : test;
}

/* The one vector loop under n (a clone of S). */
static Node *first_vector(NodeList *l)
{
    for (int i = 0; l && i < l->n; i++) {
        Node *n = l->v[i], *v;
        if (n->kind == N_LOOP && n->u.loop.kind == LOOP_VECTOR)
            return n;
        if ((v = first_vector(ir_body(n))) || (v = first_vector(ir_else(n))))
            return v;
    }
    return NULL;
}

static bool edge_site(Edge *e, NodeList *l, int at)
{
    Kernel *k = e->k;
    Node *S = l->v[at], *parent = S->parent;
    Site s = {0};
    const Node *path[EDGE_MAX_PATH];
    find_vector(&s, &S->u.loop.body, path, 0);
    if (s.nvec != 1 || s.bad)
        return false;
    int64_t vlo, vhi;
    if (!const_bounds(k, s.v, &vlo, &vhi))
        return false;
    widest_store(&s.v->u.loop.body, &s.esize);
    if (s.esize <= 0 || e->vector_bytes < s.esize)
        return false;
    int64_t g = e->vector_bytes / s.esize, W = vhi - vlo;
    if (W < 2 * g || (W + g - 1) / g - 1 > EDGE_MAX_COPIES)
        return false;
    bool *inner = xcalloc((size_t)(k->nvars ? k->nvars : 1), sizeof *inner);
    inner[S->u.loop.var->id] = true;
    collect_bound(&S->u.loop.body, inner);
    bool ok = covered(e, &s, inner, &s.v->u.loop.body) && s.nbound > 0;
    free(inner);
    if (!ok)
        return false;
    /* from the widest copy in, so that the narrowest test comes first */
    Node *cur = S;
    bool changed = false;
    for (int64_t w = (W - 1) / g * g; w >= g; w -= g) {
        /* whole powers of two of registers only: a vector of three registers
         * (<48 x float>) is no type the x86 back end keeps in registers, and the
         * tile went through memory: N = 1000 and 1008 (40 and 48 columns left) ran
         * sgemm 1000^3 at 52 ms against 15 at N = 1016 (AVX-512, one thread) */
        if ((w / g) & (w / g - 1))
            continue;
        bool always, never;
        Expr *t = test_for(e, &s, vlo, w, &always, &never);
        if (always) { /* lanes from w on never run: V narrowed in place */
            s.v->u.loop.hi = ir_int(k, vlo + w);
            changed = true;
            continue;
        }
        if (never || !t)
            continue;
        Node *gd = ir_guard(k, t, S->span), *c = ir_clone_node(k, S), *cv = first_vector(ir_body(c));
        cv->u.loop.hi = ir_int(k, vlo + w);
        ir_list_push(&gd->u.guard.body, c, gd);
        ir_list_push(&gd->u.guard.els, cur, gd);
        cur = gd;
        changed = true;
    }
    if (cur != S) { /* in S's place (S itself now hangs in the last else) */
        l->v[at] = cur;
        cur->parent = parent;
    }
    return changed;
}

static void edge_list(Edge *e, NodeList *l, bool in_vector)
{
    for (int i = 0; i < l->n; i++) {
        Node *n = l->v[i];
        if (n->kind == N_IF) {
            edge_list(e, &n->u.guard.body, in_vector);
            edge_list(e, &n->u.guard.els, in_vector);
            continue;
        }
        if (n->kind != N_LOOP)
            continue;
        if (!in_vector && n->u.loop.kind == LOOP_SERIAL && n->u.loop.hint == HINT_NONE && edge_site(e, l, i))
            continue; /* the copies need nothing more */
        edge_list(e, &n->u.loop.body, in_vector || n->u.loop.kind == LOOP_VECTOR);
    }
}

bool cpu_edge(Kernel *k, const Target *target, Diags *d)
{
    (void)d;
    Edge e = {.k = k, .vector_bytes = target && target->vector_bytes > 0 ? target->vector_bytes : 0};
    if (e.vector_bytes)
        edge_list(&e, &k->body, false);
    return true;
}
