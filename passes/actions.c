/* The move set: every transformation that is legal on the kernel now, with its
 * arguments, in schedule syntax.  The autotuner, agents and the property test draw
 * from it.  Candidates are generated from the tree (each loop, each adjacent pair,
 * each buffer and temporary, a small set of factors) and kept when the same check
 * that xf_apply runs accepts them, so the list never offers an illegal move. */
#include <string.h>

#include "xform_int.h"
#include "../ir/walk.h"

static const int64_t split_factors[] = {2, 4, 8, 16, 32};
static const int64_t tile_factors[] = {4, 16};
static const int64_t osm_tiles[] = {4, 64};

typedef struct Gen {
    Kernel *k;
    Arena *a;
    PtrVec items;
    bool unchecked;
} Gen;

static SchedArg nm(const char *s) { return (SchedArg){.kind = SARG_NAME, .name = s}; }
static SchedArg in(int64_t v) { return (SchedArg){.kind = SARG_INT, .ival = v}; }

/* Checks a candidate and keeps it when legal (all of them when g->unchecked). */
static void try_item(Gen *g, const char *name, const SchedArg *args, int n)
{
    SchedItem it = {.kind = SCHED_CALL, .name = name, .nargs = n};
    SchedArg *copy = arena_alloc(g->a, sizeof(SchedArg) * (size_t)(n ? n : 1));
    memcpy(copy, args, sizeof(SchedArg) * (size_t)n);
    for (int i = 0; i < n; i++) {
        if (copy[i].key)
            copy[i].key = arena_strdup(g->a, copy[i].key);
        if (copy[i].kind == SARG_NAME)
            copy[i].name = arena_strdup(g->a, copy[i].name);
    }
    it.args = copy;
    if (!g->unchecked) {
        Diags d;
        diag_init(&d);
        bool ok = xf_check(g->k, &it, NULL, &d);
        diag_free(&d);
        if (!ok)
            return;
    }
    SchedItem *keep = arena_alloc(g->a, sizeof *keep);
    *keep = it;
    keep->name = arena_strdup(g->a, name);
    vec_push(&g->items, keep);
}

typedef struct Loops {
    Node *v[256];
    int n;
} Loops;

static bool loops_cb(Node *n, void *p)
{
    Loops *l = p;
    if (n->kind == N_LOOP && l->n < 256)
        l->v[l->n++] = n;
    return true;
}

static Node *band_child(Node *l)
{
    Node *cur = l;
    for (;;) {
        NodeList *b = ir_body(cur);
        if (b->n != 1 || b->v[0]->kind == N_STMT || b->v[0]->kind == N_PREFETCH)
            return NULL;
        if (b->v[0]->kind == N_LOOP)
            return b->v[0];
        cur = b->v[0];
    }
}

static bool accessed_in(Kernel *k, Node *l, const Buffer *b)
{
    AccVec acc = {0};
    acc_collect(k, l, &acc);
    bool r = false;
    for (int i = 0; i < acc.n && !r; i++)
        r = acc.v[i].buf == b;
    acc_free(&acc);
    return r;
}

/* Whether a loop inside l runs a number of iterations that depends on l's variable
 * (a triangle, a causal mask's key tiles): then the order of l's iterations is
 * worth choosing (reverse). */
static bool uneven_below(const Node *l, const Var *v)
{
    const NodeList *b = ir_body((Node *)l);
    for (int i = 0; b && i < b->n; i++) {
        const Node *n = b->v[i];
        if (n->kind == N_LOOP && (ir_expr_uses_var(n->u.loop.lo, v) || ir_expr_uses_var(n->u.loop.hi, v)))
            return true;
        if ((n->kind == N_LOOP || n->kind == N_IF) && uneven_below(n, v))
            return true;
    }
    return false;
}

static int enumerate(Kernel *k, Arena *a, SchedItem **out, bool unchecked)
{
    Gen g = {.k = k, .a = a, .unchecked = unchecked};
    Loops ls = {0};
    xf_walk(k, loops_cb, &ls);
    for (int i = 0; i < ls.n; i++) {
        Node *l = ls.v[i];
        const char *v = l->u.loop.var->name;
        int64_t ext = -1;
        bool cext = xf_const_extent(k, l, &ext);
        for (size_t f = 0; f < sizeof split_factors / sizeof split_factors[0]; f++) {
            int64_t fac = split_factors[f];
            if (cext && fac >= ext)
                continue;
            SchedArg s[3] = {nm(v), in(fac), nm("peel")};
            s[2].key = "tail";
            try_item(&g, "split", s, 2);
            if (fac <= 8 && (!cext || ext % fac)) {
                try_item(&g, "split", s, 3);
                s[2] = nm("pad");
                s[2].key = "tail";
                try_item(&g, "split", s, 3);
            }
        }
        SchedArg one[1] = {nm(v)};
        if (cext && ext <= 16)
            try_item(&g, "unroll", one, 1);
        try_item(&g, "vectorize", one, 1);
        try_item(&g, "parallel", one, 1);
        try_item(&g, "rfactor", one, 1);
        try_item(&g, "factor_out", one, 1);
        try_item(&g, "skip_tiles", one, 1);
        try_item(&g, "unmask_tiles", one, 1);
        if (uneven_below(l, l->u.loop.var))
            try_item(&g, "reverse", one, 1);
        if (l->u.loop.body.n > 1)
            try_item(&g, "distribute", one, 1);
        Node *ch = band_child(l);
        if (ch) {
            SchedArg r[2] = {nm(ch->u.loop.var->name), nm(v)};
            try_item(&g, "reorder", r, 2);
            if (l->u.loop.body.n == 1 && l->u.loop.body.v[0] == ch) {
                SchedArg cl[2] = {nm(v), nm(ch->u.loop.var->name)};
                try_item(&g, "collapse", cl, 2);
            }
            for (size_t f = 0; f < sizeof tile_factors / sizeof tile_factors[0]; f++) {
                SchedArg t[4] = {nm(v), nm(ch->u.loop.var->name), in(tile_factors[f]), in(tile_factors[f])};
                try_item(&g, "tile", t, 4);
            }
        }
        /* online_softmax: a sum loop, named with the last tensor its nest writes */
        if (ir_sum_loop(l)) {
            Node *top = l;
            while (top->parent)
                top = top->parent;
            const Buffer *last = ir_last_written(top);
            for (size_t f = 0; last && f < sizeof osm_tiles / sizeof osm_tiles[0]; f++) {
                SchedArg os[4] = {nm(last->name), nm(v), in(osm_tiles[f]), nm("inf")};
                os[3].key = "mask";
                try_item(&g, "online_softmax", os, 3);
                /* a masked chain (the sum runs under its guard): the mask as values too */
                if (l->u.loop.body.n == 1 && l->u.loop.body.v[0]->kind == N_IF)
                    try_item(&g, "online_softmax", os, 4);
            }
        }
        NodeList *sib = xf_list_of(k, l);
        int at = xf_index_in(k, l);
        if (at + 1 < sib->n && sib->v[at + 1]->kind == N_LOOP) {
            SchedArg fz[2] = {nm(v), nm(sib->v[at + 1]->u.loop.var->name)};
            try_item(&g, "fuse", fz, 2);
        }
        Node *outer = l->parent;
        while (outer && outer->kind != N_LOOP)
            outer = outer->parent;
        for (int b = 0; b < k->nbufs; b++) {
            Buffer *buf = k->bufs[b];
            SchedArg ca[2] = {nm(buf->name), nm(v)};
            /* an elementwise consumer of what l writes, moved to l's end */
            if (!accessed_in(k, l, buf)) {
                if (buf->kind != BUF_IN)
                    try_item(&g, "reverse_compute_at", ca, 2);
                continue;
            }
            if (buf->kind == BUF_TEMP)
                try_item(&g, "compute_at", ca, 2);
            try_item(&g, "cache", ca, 2);
            if (buf->mem != MEM_GLOBAL)
                continue;
            /* prefetch: the next iteration of l, or of the loop around it */
            SchedArg pf[3] = {nm(buf->name), nm(v), nm(v)};
            try_item(&g, "prefetch", pf, 3);
            if (outer) {
                pf[2] = nm(outer->u.loop.var->name);
                try_item(&g, "prefetch", pf, 3);
            }
        }
        /* prefetch in l what a loop beside it accesses in the same iteration of the
         * loop around them (like=): the exp loop fetching the division's output */
        for (int q = 0; outer && q < sib->n; q++) {
            Node *o = sib->v[q];
            if (o == l || o->kind != N_LOOP)
                continue;
            for (int b = 0; b < k->nbufs; b++) {
                Buffer *buf = k->bufs[b];
                if (buf->mem != MEM_GLOBAL || accessed_in(k, l, buf) || !accessed_in(k, o, buf))
                    continue;
                SchedArg pf[5] = {nm(buf->name), nm(v), nm(outer->u.loop.var->name), in(0),
                                  nm(o->u.loop.var->name)};
                pf[4].key = "like";
                try_item(&g, "prefetch", pf, 5);
            }
        }
    }
    for (int b = 0; b < k->nbufs; b++) {
        Buffer *buf = k->bufs[b];
        if (buf->kind == BUF_IN && dtype_bytes(buf->dtype) == 2) {
            /* 16-bit rows that 16 bytes do not align: what a tensor-core copy needs */
            SchedArg r[2] = {nm(buf->name), in(8)};
            try_item(&g, "realign", r, 2);
        }
        if (buf->kind != BUF_TEMP)
            continue;
        SchedArg one[1] = {nm(buf->name)};
        try_item(&g, "inline", one, 1);
        try_item(&g, "exp_scale", one, 1);
        /* a 16-bit temporary where the results are 16-bit (storage refuses coarser) */
        SchedArg st[2] = {nm(buf->name), nm("bf16")};
        try_item(&g, "storage", st, 2);
        if (buf->mem != MEM_GLOBAL) {
            SchedArg p[2] = {nm(buf->name), in(1)};
            try_item(&g, "padding", p, 2);
            if (buf->rank == 2) {
                SchedArg t[3] = {nm(buf->name), in(1), in(0)};
                try_item(&g, "layout", t, 3);
            }
        }
    }
    int n = g.items.n;
    *out = arena_alloc(a, sizeof(SchedItem) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++)
        (*out)[i] = *(SchedItem *)g.items.v[i];
    vec_free(&g.items);
    return n;
}

int xf_enum_actions(Kernel *k, Arena *a, SchedItem **out) { return enumerate(k, a, out, false); }

int xf_enum_candidates(Kernel *k, Arena *a, SchedItem **out) { return enumerate(k, a, out, true); }

void xf_list_actions(Kernel *k, StrBuf *out)
{
    Arena *a = arena_new();
    SchedItem *items;
    int n = xf_enum_actions(k, a, &items);
    for (int i = 0; i < n; i++) {
        xf_item_print(&items[i], out);
        sb_putc(out, '\n');
    }
    arena_free(a);
}
