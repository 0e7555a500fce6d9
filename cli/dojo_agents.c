/* Built-in players of the dojo: random, greedy and beam search.  They use only the
 * session calls the protocol makes (reset happened already; actions, step, undo,
 * measure), and see of a move only what a client sees: its text, name and
 * arguments, and of a state its loop features.  They exist to show that the protocol
 * is enough to play well, and as baselines for learned agents.
 *
 * A measured step is one dojo_measure: the budget counts those, as the bar does.
 * Moves are free (IR rewrites); the search spends measurements on the states it
 * ranks highest.  The move ordering is a fixed prior over move kinds and loop
 * positions (vectorise an innermost loop, unroll a short loop, parallelise an outer
 * one, keep an accumulator in a local buffer, then the enabling splits, reorders and
 * distributions), documented in docs/dojo.md; it is no cost model.  The beam also
 * learns a cost model from its own measurements (`predict`), and starts from the
 * tuner's templates (`hints`) unless told not to. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dojo.h"
#include "tune/model.h"

typedef struct Seen {
    char fp[24];
    double ms;
} Seen;

typedef struct Agent {
    DojoSession *s;
    Seen *seen;               /* states measured, by fingerprint */
    int nseen, capseen;
    const DojoAgentOpts *o;
    Rng rng;
    int used;                 /* measurements made */
    double deadline;          /* now_seconds() past which no measurement starts; 0: none */
    double best_ms;
    double best_speedup, best_vs_lib;
    char **best_moves;
    int nbest;
    /* the beam's cost model: the features `predict` gives of each measured kernel
     * and its time, a LASSO refitted as rows come in (tune/model.h) */
    TuneModel model;
    int fitted_rows;
} Agent;

/* Set by SIGINT or SIGTERM while an agent plays: it stops at its next check, as if
 * its budget were spent, and still reports its best state and closes the record
 * (a measurement under way finishes first). */
static volatile sig_atomic_t agent_stop;

static void on_agent_stop(int sig)
{
    (void)sig;
    agent_stop = 1;
}

/* True when the budget of measurements or of wall time is used up, or a signal
 * asked the agent to stop. */
static bool spent(const Agent *a)
{
    return agent_stop || a->used >= a->o->budget || (a->deadline > 0 && now_seconds() > a->deadline);
}

/* ---- paths: a state is the list of moves from the start ---- */

typedef struct Path {
    char **moves;
    int n;
    double ms;                /* measured median; INFINITY when invalid or unmeasured */
} Path;

static Path path_here(DojoSession *s, double ms)
{
    Path p = {xcalloc((size_t)dojo_depth(s) + 1, sizeof(char *)), dojo_depth(s), ms};
    for (int i = 0; i < p.n; i++)
        p.moves[i] = xstrdup(dojo_move(s, i));
    return p;
}

static void path_free(Path *p)
{
    for (int i = 0; i < p->n; i++)
        free(p->moves[i]);
    free(p->moves);
    p->moves = NULL;
}

/* Brings the session to path p by taking back moves down to the common prefix. */
static void go_to(DojoSession *s, const Path *p)
{
    int common = 0;
    while (common < p->n && common < dojo_depth(s) && !strcmp(dojo_move(s, common), p->moves[common]))
        common++;
    while (dojo_depth(s) > common)
        dojo_undo(s);
    for (int i = common; i < p->n; i++) {
        bool legal;
        StrBuf e = {0};
        if (!dojo_step(s, -1, p->moves[i], &legal, &e) || !legal)
            die("dojo agent: a move played before is refused now: %s", e.s ? e.s : p->moves[i]);
        sb_free(&e);
    }
}

static void keep_best(Agent *a, const DojoMeasure *m)
{
    if (!m->valid || m->median_ms >= a->best_ms)
        return;
    a->best_ms = m->median_ms;
    a->best_speedup = m->speedup;
    a->best_vs_lib = m->vs_library;
    for (int i = 0; i < a->nbest; i++)
        free(a->best_moves[i]);
    free(a->best_moves);
    a->nbest = dojo_depth(a->s);
    a->best_moves = xcalloc((size_t)a->nbest + 1, sizeof(char *));
    for (int i = 0; i < a->nbest; i++)
        a->best_moves[i] = xstrdup(dojo_move(a->s, i));
}

static double seen_ms(Agent *a)
{
    const char *fp = dojo_fingerprint(a->s);
    for (int i = 0; i < a->nseen; i++)
        if (!strcmp(a->seen[i].fp, fp))
            return a->seen[i].ms;
    return -1;
}

/* Measures the current state; INFINITY when invalid or failed. */
static double measure(Agent *a, DojoMeasure *m)
{
    if (a->nseen == a->capseen) {
        a->capseen = a->capseen ? 2 * a->capseen : 64;
        a->seen = xrealloc(a->seen, sizeof *a->seen * (size_t)a->capseen);
    }
    Seen *sn = &a->seen[a->nseen++];
    snprintf(sn->fp, sizeof sn->fp, "%s", dojo_fingerprint(a->s));
    sn->ms = INFINITY;
    StrBuf e = {0};
    DojoPredict p;
    bool have_f = dojo_predict(a->s, &p, &e);
    e.len = 0;
    int rc = dojo_measure(a->s, m, NULL, NULL, &e);
    if (have_f && rc == 0 && m->valid)
        tm_add(&a->model, p.f, p.work, m->median_ms, 1);
    a->used++;
    if (rc != 0 && rc != 2) {
        fprintf(stderr, "perfc: dojo agent: measurement failed: %s\n", e.s ? e.s : "");
        sb_free(&e);
        return -1;
    }
    sb_free(&e);
    if (rc == 2 || !m->valid) /* cannot happen by construction; the harness says so if it does */
        fprintf(stderr, "perfc: dojo agent: INVALID kernel after %s: %s\n",
                dojo_depth(a->s) ? dojo_move(a->s, dojo_depth(a->s) - 1) : "(start)", m->reason);
    keep_best(a, m);
    sn = &a->seen[a->nseen - 1];
    sn->ms = m->valid ? m->median_ms : INFINITY;
    if (!a->o->quiet) {
        fprintf(stderr, "  [%3d] %8.4g ms  x%-7.3g%s", a->used, m->valid ? m->median_ms : NAN,
                m->valid ? m->speedup : NAN, m->cached ? " (cached)" : "");
        for (int i = 0; i < dojo_depth(a->s); i++)
            fprintf(stderr, " %s", dojo_move(a->s, i));
        fputs(dojo_depth(a->s) ? "\n" : " (start)\n", stderr);
    }
    return m->valid ? m->median_ms : INFINITY;
}

/* ---- move ordering ---- */

typedef struct LoopInfo {
    char name[64];
    char parent[64];          /* "" at the top */
    int64_t extent;           /* -1 unknown */
    bool innermost, reduction;
    int depth;
    char kind[16];
    double work;              /* product of the known extents of the loop and the loops below it */
    int top;                  /* index of its outermost ancestor */
    int kids;                 /* loops directly inside */
    int stmts;                /* statements directly inside */
    unsigned uses;            /* bit b: buffer b of the state is indexed by the loop's variable */
} LoopInfo;

typedef struct View {
    LoopInfo l[256];
    int nl;
    bool gpu;
    char outs[8][64];         /* output buffers */
    int nouts;
} View;

static const LoopInfo *find_loop_in(const LoopInfo *l, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(l[i].name, name))
            return &l[i];
    return NULL;
}

/* The features of the state, read from the same JSON a client gets. */
static void read_view(DojoSession *s, View *v)
{
    StrBuf b = {0};
    dojo_state_json(s, &b, false);
    char err[160];
    Jv *st = jv_parse(b.s, b.len, err, sizeof err);
    sb_free(&b);
    const Jv *loops = jv_get(st, "loops"), *bufs = jv_get(st, "buffers");
    bool bad = false;
    const char *t = jv_str(st, "target", &bad);
    v->gpu = t && target_is_gpu(target_find(t));
    v->nl = v->nouts = 0;
    for (int i = 0; loops && i < loops->n && v->nl < 256; i++) {
        const Jv *l = loops->items[i];
        LoopInfo *x = &v->l[v->nl++];
        const char *par = jv_str(l, "parent", &bad);
        snprintf(x->name, sizeof x->name, "%s", jv_str(l, "name", &bad));
        snprintf(x->parent, sizeof x->parent, "%s", par ? par : "");
        const Jv *e = jv_get(l, "extent");
        x->extent = e && e->kind == JV_NUM ? e->i : -1;
        x->innermost = jv_get(l, "innermost") && jv_get(l, "innermost")->b;
        x->reduction = jv_get(l, "reduction") && jv_get(l, "reduction")->b;
        x->depth = (int)jv_get(l, "depth")->num;
        snprintf(x->kind, sizeof x->kind, "%s", jv_str(l, "kind", &bad));
        x->stmts = (int)jv_get(l, "statements")->num;
        x->kids = 0;
        x->uses = 0;
        const Jv *u = jv_get(l, "uses");
        for (int j = 0; u && u->kind == JV_ARR && j < u->n; j++)
            for (int q = 0; bufs && q < bufs->n && q < 32; q++)
                if (u->items[j]->kind == JV_STR && !strcmp(u->items[j]->str, jv_str(bufs->items[q], "name", &bad)))
                    x->uses |= 1u << q;
    }
    for (int i = 0; i < v->nl; i++) {
        const LoopInfo *p = v->l[i].parent[0] ? find_loop_in(v->l, v->nl, v->l[i].parent) : NULL;
        if (p)
            v->l[p - v->l].kids++;
    }
    for (int i = 0; bufs && i < bufs->n && v->nouts < 8; i++) {
        const char *k = jv_str(bufs->items[i], "kind", &bad);
        if (k && !strcmp(k, "out"))
            snprintf(v->outs[v->nouts++], 64, "%s", jv_str(bufs->items[i], "name", &bad));
    }
    jv_free(st);
    /* pre-order: a loop's subtree follows it; work and nest from that */
    for (int i = v->nl - 1; i >= 0; i--) {
        double w = v->l[i].extent > 0 ? (double)v->l[i].extent : 1, below = 0;
        for (int j = i + 1; j < v->nl && v->l[j].depth > v->l[i].depth; j++)
            if (v->l[j].depth == v->l[i].depth + 1)
                below += v->l[j].work;
        v->l[i].work = w * (below > 0 ? below : 1);
    }
    for (int i = 0, top = 0; i < v->nl; i++) {
        if (v->l[i].depth == 0)
            top = i;
        v->l[i].top = top;
    }
}

static const LoopInfo *find_loop(const View *v, const char *name)
{
    return find_loop_in(v->l, v->nl, name);
}

static const LoopInfo *parent_of(const View *v, const LoopInfo *l)
{
    return l && l->parent[0] ? find_loop(v, l->parent) : NULL;
}

/* The only loop directly inside l, NULL when there are several or statements beside. */
static const LoopInfo *only_child(const View *v, const LoopInfo *l)
{
    if (l->kids != 1 || l->stmts)
        return NULL;
    for (int i = (int)(l - v->l) + 1; i < v->nl; i++)
        if (!strcmp(v->l[i].parent, l->name))
            return &v->l[i];
    return NULL;
}

/* Register blocking, the unroll-and-jam a register tile needs, as one structural
 * move at a time (the rollout plays them; text in mv): for an innermost loop V
 * directly inside a reduction loop R,
 *   - hoist: a loop P between R and V that indexes the same buffers as V (the outer
 *     part of V's split) goes outside R: reorder(P, R);
 *   - jam: the nearest loop O outside R that indexes other buffers than V (so that
 *     V's loads are reused across it), perfectly nested down to R, goes inside R,
 *     split by 8 first when longer: split(O, 8), then reorder(child, O) down to R.
 * False when the state has no such step. */
static bool blocking_move(const View *v, char *mv, size_t n)
{
    /* an innermost reduction loop (a dot product) goes outside its parent, which is
     * split from the statements beside it first */
    for (int i = 0; i < v->nl; i++) {
        const LoopInfo *R = &v->l[i], *P = parent_of(v, R);
        if (!R->innermost || !R->reduction || strcmp(R->kind, "serial") || !P || P->reduction ||
            strcmp(P->kind, "serial"))
            continue;
        if (P->kids > 1 || P->stmts)
            snprintf(mv, n, "distribute(%s)", P->name);
        else
            snprintf(mv, n, "reorder(%s, %s)", R->name, P->name);
        return true;
    }
    for (int i = 0; i < v->nl; i++) {
        const LoopInfo *V = &v->l[i];
        if (!V->innermost || V->reduction || V->stmts != 1 || V->extent <= 0)
            continue;
        const LoopInfo *P = parent_of(v, V), *R = P;
        while (R && !R->reduction && R->uses == V->uses && !strcmp(R->kind, "serial"))
            R = parent_of(v, R);
        if (!R || !R->reduction || !strcmp(R->kind, "parallel"))
            continue;
        if (P != R) { /* hoist the loop just inside R */
            const LoopInfo *c = only_child(v, R);
            if (!c)
                continue;
            snprintf(mv, n, "reorder(%s, %s)", c->name, R->name);
            return true;
        }
        /* jam: O above R, every loop between perfectly nested */
        const LoopInfo *O = parent_of(v, R);
        while (O && O->uses == V->uses && !O->reduction && only_child(v, O))
            O = parent_of(v, O);
        if (!O || O->reduction || strcmp(O->kind, "serial") || O->extent < 2)
            continue;
        if (!only_child(v, O)) { /* other loops or statements beside: split them off */
            snprintf(mv, n, "distribute(%s)", O->name);
            return true;
        }
        if (O->extent > 8) {
            if (O->extent % 8)
                continue;
            snprintf(mv, n, "split(%s, 8)", O->name);
            return true;
        }
        snprintf(mv, n, "reorder(%s, %s)", only_child(v, O)->name, O->name);
        return true;
    }
    return false;
}

/* First argument of a move's text ("split(i, 4)" -> "i"), and the integer second. */
static void move_parts(const char *t, char *name, size_t nn, char *a0, size_t na, long long *a1)
{
    const char *p = strchr(t, '(');
    size_t k = p ? (size_t)(p - t) : strlen(t);
    snprintf(name, nn, "%.*s", (int)(k < nn ? k : nn - 1), t);
    *a0 = 0;
    *a1 = -1;
    if (!p)
        return;
    p++;
    size_t j = strcspn(p, ",)");
    snprintf(a0, na, "%.*s", (int)(j < na ? j : na - 1), p);
    if (p[j] == ',') {
        char *end;
        long long v = strtoll(p + j + 1, &end, 10);
        if (end != p + j + 1)
            *a1 = v;
    }
}

/* The second argument when it is a name ("cache(C, j1o)" -> "j1o"). */
static void second_name(const char *t, char *out, size_t n)
{
    const char *c = strchr(t, ',');
    snprintf(out, n, "%s", c ? c + 1 + strspn(c + 1, " ") : "");
    out[strcspn(out, ",)")] = 0;
}

/* A register tile of an output: staging output buffer X at loop L (cache(X, L)) when
 * L is no reduction loop, a reduction loop is directly inside it, and the loops below
 * L that are not reductions span 16 to 512 elements: the accumulators of one
 * iteration of L then fit in registers, and the reduction runs over them.  Returns
 * that span, 0 when the move is no such tile. */
static double register_tile(const View *v, const char *move)
{
    char name[32], a0[64], at[64];
    long long a1;
    move_parts(move, name, sizeof name, a0, sizeof a0, &a1);
    if (strcmp(name, "cache"))
        return 0;
    bool out = false;
    for (int i = 0; i < v->nouts; i++)
        out |= !strcmp(v->outs[i], a0);
    second_name(move, at, sizeof at);
    const LoopInfo *l = find_loop(v, at);
    if (!out || !l || l->reduction)
        return 0;
    int i = (int)(l - v->l);
    bool red_child = false;
    double span = 1;
    for (int j = i + 1; j < v->nl && v->l[j].depth > l->depth; j++) {
        const LoopInfo *c = &v->l[j];
        red_child |= c->depth == l->depth + 1 && c->reduction;
        if (!c->reduction) {
            if (c->extent <= 0)
                return 0;
            span *= (double)c->extent;
        }
    }
    return red_child && span >= 16 && span <= 512 ? span : 0;
}

/* The deepest loop that is no reduction (a GPU thread.x candidate: its index is
 * the contiguous one of the output in the usual nest). */
static const LoopInfo *deepest_plain(const View *v)
{
    const LoopInfo *best = NULL;
    for (int i = 0; i < v->nl; i++)
        if (!v->l[i].reduction && (!best || v->l[i].depth > best->depth))
            best = &v->l[i];
    return best;
}

/* GPU targets: map outer loops to blocks and inner ones to threads, tile first;
 * thread.x to the deepest plain loop (coalesced accesses), block.y to the outermost. */
static double gpu_prior(const char *name, const char *move, const LoopInfo *l, long long a1, const View *v)
{
    if (!strcmp(name, "bind")) {
        bool block = strstr(move, "block.") != NULL;
        if (!l)
            return 1;
        if (block)
            return l->depth <= 1 ? 90 - l->depth - (strstr(move, "block.x") ? l->depth == 0 : l->depth == 1) * 0.5
                                 : 15;
        if (l->depth >= 1 && l->extent >= 8 && l->extent <= 32 && !l->reduction)
            return 85 + (strstr(move, "thread.x") ? l == deepest_plain(v) : l != deepest_plain(v)) * 0.5;
        return 10;
    }
    if (!strcmp(name, "vectorize") || !strcmp(name, "parallel"))
        return 0; /* CPU marks */
    if (!strcmp(name, "split"))
        return strstr(move, "tail") ? 5 : l && l->depth <= 1 && (a1 == 16 || a1 == 32 || a1 == 64) ? 60 : 35;
    if (!strcmp(name, "unroll"))
        return l && !l->innermost && l->extent <= 8 ? 55 : 10;
    if (!strcmp(name, "distribute"))
        return 65;
    if (!strcmp(name, "reorder"))
        return 50;
    if (!strcmp(name, "cache"))
        return 40;
    return 1;
}

/* Higher is tried first. */
static double prior(const char *move, const View *v)
{
    char name[32], a0[64];
    long long a1;
    move_parts(move, name, sizeof name, a0, sizeof a0, &a1);
    const LoopInfo *l = find_loop(v, a0);
    if (v->gpu && strcmp(name, "cache"))
        return gpu_prior(name, move, l, a1, v);
    if (!strcmp(name, "vectorize"))
        return l && l->innermost && l->extent >= 4 && l->extent <= 64 && l->extent % 4 == 0 ? 100 : 5;
    if (!strcmp(name, "parallel")) {
        /* one parallel loop per nest, the outermost, the heaviest nest first */
        if (!l)
            return 0;
        for (int i = 0; i < v->nl; i++)
            if (v->l[i].top == l->top && !strcmp(v->l[i].kind, "parallel"))
                return 0;
        return l->depth == 0 ? 88 + fmin(log2(l->work + 1), 40) / 20 : l->depth == 1 ? 40 : 10;
    }
    if (!strcmp(name, "unroll"))
        return l && !l->innermost && l->extent >= 2 && l->extent <= 8 ? 80 : 15;
    if (!strcmp(name, "cache")) {
        if (register_tile(v, move) > 0)
            return 70;
        /* staging a staged copy again (its name has the loop's suffix) gains nothing */
        if (strchr(a0, '_'))
            return 0;
        char at[64];
        second_name(move, at, sizeof at);
        const LoopInfo *w = find_loop(v, at);
        return w && !w->innermost && w->depth >= 1 ? 50 : 10;
    }
    if (!strcmp(name, "distribute"))
        return 65;
    if (!strcmp(name, "reorder"))
        return 60;
    if (!strcmp(name, "split")) {
        if (strstr(move, "tail"))
            return 5;
        if (l && l->innermost)
            return a1 == 16 ? 58 : a1 == 8 || a1 == 32 || a1 == 64 ? 45 : 20;
        return a1 == 4 || a1 == 8 ? 55 : a1 >= 64 ? 35 : 25;
    }
    if (!strcmp(name, "tile"))
        return 30;
    return 1; /* prefetch, padding, layout, collapse, fuse, rfactor, ... */
}

typedef struct Cand {
    int id;
    double score;
} Cand;

static int by_score(const void *x, const void *y)
{
    const Cand *a = x, *b = y;
    return a->score < b->score ? 1 : a->score > b->score ? -1 : a->id - b->id;
}

/* The moves of the current state, best prior first; the caller frees. */
static Cand *ranked(Agent *a, int *n, bool structure_first)
{
    View *v = xmalloc(sizeof *v);
    read_view(a->s, v);
    *n = dojo_nactions(a->s);
    Cand *c = xcalloc((size_t)*n + 1, sizeof *c);
    for (int i = 0; i < *n; i++) {
        c[i].id = i;
        /* a little noise breaks ties differently per seed */
        const char *t = dojo_action_text(a->s, i);
        double p = prior(t, v);
        /* on CPUs the rollout plays the finishing marks: the search spends its
         * expansions on the structure, and on other marks only late */
        if (structure_first && !v->gpu && (!strncmp(t, "parallel(", 9) || !strncmp(t, "vectorize(", 10) || !strncmp(t, "unroll(", 7)))
            p = fmin(p, 20);
        c[i].score = p + rng_uniform(&a->rng, 0, 0.5);
    }
    free(v);
    qsort(c, (size_t)*n, sizeof *c, by_score);
    return c;
}

/* ---- the agents ---- */

static void play_random(Agent *a)
{
    DojoMeasure m;
    if (measure(a, &m) < 0)
        return;
    for (int t = 0; t < a->o->steps && !spent(a); t++) {
        int n = dojo_nactions(a->s);
        if (!n)
            break;
        bool legal;
        StrBuf e = {0};
        dojo_step(a->s, (int)(rng_next(&a->rng) % (uint64_t)n), NULL, &legal, &e);
        sb_free(&e);
        if (measure(a, &m) < 0)
            break;
    }
}

static void play_greedy(Agent *a)
{
    DojoMeasure m;
    double cur = measure(a, &m);
    if (cur < 0)
        return;
    int per = 8; /* children measured per step */
    while (!spent(a)) {
        int n;
        Cand *c = ranked(a, &n, false);
        Path here = path_here(a->s, cur);
        double best = cur;
        char *best_move = NULL;
        for (int i = 0; i < n && i < per && !spent(a); i++) {
            bool legal;
            StrBuf e = {0};
            dojo_step(a->s, c[i].id, NULL, &legal, &e);
            sb_free(&e);
            double t = measure(a, &m);
            if (t > 0 && t < best) {
                best = t;
                free(best_move);
                best_move = xstrdup(dojo_move(a->s, dojo_depth(a->s) - 1));
            }
            go_to(a->s, &here);
        }
        free(c);
        path_free(&here);
        if (!best_move)
            break; /* no child is faster: a local optimum */
        bool legal;
        StrBuf e = {0};
        dojo_step(a->s, -1, best_move, &legal, &e);
        sb_free(&e);
        free(best_move);
        cur = best;
    }
}

/* The rollout of a state (as in Monte-Carlo tree search, with a fixed policy): the
 * finishing moves that the prior ranks highest are played without being measured —
 * a register tile of the output where the loops below a loop hold a reduction over a
 * small block of it (the tile is staged first, so that its copies are finished too);
 * vectorise an innermost loop, after splitting it by 16 when it is longer;
 * parallelise the outermost loop of each nest; unroll a short loop; on GPUs bind
 * loops to blocks and threads — and the finished kernel is what is judged.  A
 * structural move (split, reorder, distribute) is then judged by what it enables
 * rather than by its own time, which is about unchanged until the finishing moves
 * follow. */
static void rollout(Agent *a)
{
    View *v = xmalloc(sizeof *v);
    bool blocking = true;
    /* the 16 x 16 thread block is tiled once: its outer loops are plain outer loops
     * again, and tiling those too nested the launch deeper at every step (a 4096^3
     * GEMM rolled out to nine tiles, each step's moves slower to list than the last) */
    bool gpu_tiled = false;
    for (int r = 0; r < 24; r++) {
        read_view(a->s, v);
        int n = dojo_nactions(a->s), best = -1;
        double bestp = 0;
        for (int i = 0; i < n; i++) {
            const char *t = dojo_action_text(a->s, i);
            char name[32], a0[64];
            long long a1;
            move_parts(t, name, sizeof name, a0, sizeof a0, &a1);
            double p = prior(t, v);
            bool finishing = !strcmp(name, "vectorize") || !strcmp(name, "parallel") || !strcmp(name, "unroll") ||
                             !strcmp(name, "bind");
            if (!v->gpu && !strcmp(name, "cache")) {
                /* the largest register tile first, before the loops in it are marked */
                double span = register_tile(v, t);
                finishing = span > 0;
                p = finishing ? 110 + log2(span) : 0;
            }
            if (v->gpu && !strcmp(name, "tile") && strstr(t, ", 16, 16)")) {
                /* a thread block of 16 x 16 over the two outer plain loops, before binding */
                bool bound = false;
                for (int q = 0; q < v->nl; q++)
                    bound |= strcmp(v->l[q].kind, "serial") != 0;
                char b2[64];
                second_name(t, b2, sizeof b2);
                const LoopInfo *l = find_loop(v, a0), *l2 = find_loop(v, b2);
                finishing = !gpu_tiled && !bound && l && l2 && l->depth == 0 && !l->reduction && !l2->reduction;
                p = finishing ? 120 : 0;
            }
            if (!v->gpu && !strcmp(name, "split") && a1 == 16 && !strstr(t, "tail")) {
                /* a long innermost loop: split it so that its inner part can be a vector */
                const LoopInfo *l = find_loop(v, a0);
                finishing = l && l->innermost && !l->reduction && l->extent > 64 && l->extent % 16 == 0 &&
                            !strcmp(l->kind, "serial");
                p = finishing ? 130 : 0;
            }
            if (finishing && p >= 80 && p > bestp) {
                bestp = p;
                best = i;
            }
        }
        bool legal;
        StrBuf e = {0};
        char mv[160];
        if (bestp < 130 && blocking && !v->gpu && blocking_move(v, mv, sizeof mv)) {
            /* a register tile in the making: block before marking loops */
            if (!dojo_step(a->s, -1, mv, &legal, &e) || !legal)
                blocking = false;
            sb_free(&e);
            continue;
        }
        if (best < 0)
            break;
        if (v->gpu && !strncmp(dojo_action_text(a->s, best), "tile(", 5))
            gpu_tiled = true;
        dojo_step(a->s, best, NULL, &legal, &e);
        sb_free(&e);
    }
    free(v);
}

/* The time of the state's rollout (measured once per rolled-out kernel); the
 * session is left on the state itself. */
static double evaluate(Agent *a, DojoMeasure *m)
{
    int d0 = dojo_depth(a->s);
    rollout(a);
    double t = seen_ms(a);
    if (t < 0)
        t = measure(a, m);
    while (dojo_depth(a->s) > d0)
        dojo_undo(a->s);
    return t;
}

static int by_ms(const void *x, const void *y)
{
    const Path *a = x, *b = y;
    return a->ms < b->ms ? -1 : a->ms > b->ms ? 1 : b->n - a->n; /* deeper first among equals */
}

/* A state the beam may measure: its path, its rolled-out kernel, and how it ranks. */
typedef struct Option {
    Path path;
    char rolled[24];          /* fingerprint of its rollout */
    double prior;             /* of the moves from its beam parent */
    double pred;              /* the cost model's time of its rollout; INFINITY without a model */
    double known;             /* the rollout's measured time, -1 when not measured */
    double f[DOJO_MAX_FEAT];  /* the cost-model features of its rollout (`predict`) */
    double work;
    bool has_f;
} Option;

typedef struct Pool {
    Option *v;
    int n, cap;
    char (*visited)[24];      /* states already considered, by fingerprint */
    int nvisited, capvisited;
} Pool;

static bool visited(Pool *o, const char *fp)
{
    for (int i = 0; i < o->nvisited; i++)
        if (!strcmp(o->visited[i], fp))
            return true;
    if (o->nvisited == o->capvisited) {
        o->capvisited = o->capvisited ? 2 * o->capvisited : 256;
        o->visited = xrealloc(o->visited, sizeof *o->visited * (size_t)o->capvisited);
    }
    snprintf(o->visited[o->nvisited++], 24, "%s", fp);
    return false;
}

/* Considers the current state (unmeasured): rolls it out, asks the cost model about
 * the rolled-out kernel, and keeps it unless another option rolls out to the same
 * kernel with a better prior. */
static void consider(Agent *a, Pool *o, double pri)
{
    if (visited(o, dojo_fingerprint(a->s)))
        return;
    int d0 = dojo_depth(a->s);
    Option x = {.prior = pri, .pred = INFINITY, .known = -1};
    x.path = path_here(a->s, INFINITY);
    rollout(a);
    snprintf(x.rolled, sizeof x.rolled, "%s", dojo_fingerprint(a->s));
    for (int i = 0; i < o->n; i++)
        if (!strcmp(o->v[i].rolled, x.rolled)) {
            if (pri > o->v[i].prior) { /* the same kernel: keep the likelier path */
                path_free(&o->v[i].path);
                o->v[i].path = x.path;
                o->v[i].prior = pri;
            } else {
                path_free(&x.path);
            }
            while (dojo_depth(a->s) > d0)
                dojo_undo(a->s);
            return;
        }
    x.known = seen_ms(a);
    DojoPredict p;
    StrBuf e = {0};
    if (x.known < 0 && dojo_predict(a->s, &p, &e)) {
        memcpy(x.f, p.f, sizeof x.f);
        x.work = p.work;
        x.has_f = true;
    }
    sb_free(&e);
    while (dojo_depth(a->s) > d0)
        dojo_undo(a->s);
    if (o->n == o->cap) {
        o->cap = o->cap ? 2 * o->cap : 64;
        o->v = xrealloc(o->v, sizeof *o->v * (size_t)o->cap);
    }
    o->v[o->n++] = x;
}

static int by_prior(const void *x, const void *y)
{
    const Option *a = x, *b = y;
    return a->prior < b->prior ? 1 : a->prior > b->prior ? -1 : 0;
}

static int by_pred(const void *x, const void *y)
{
    const Option *a = x, *b = y;
    return a->pred < b->pred ? -1 : a->pred > b->pred ? 1 : by_prior(x, y);
}

/* ---- starting points: the tuner's templates (`hints`) ---- */

static Path path_of(char *const *moves, int n, double ms)
{
    Path p = {xcalloc((size_t)n + 1, sizeof(char *)), n, ms};
    for (int i = 0; i < n; i++)
        p.moves[i] = xstrdup(moves[i]);
    return p;
}

/* Plays moves from the start and measures the state they reach (a measurement
 * counted like any other, unless that kernel was measured before); its path and
 * time are added to got. */
static double measure_moves(Agent *a, char *const *moves, int n, Path **got, int *ngot)
{
    Path p = path_of(moves, n, INFINITY);
    go_to(a->s, &p);
    DojoMeasure m;
    double t = seen_ms(a);
    if (t < 0)
        t = measure(a, &m);
    p.ms = t > 0 ? t : INFINITY;
    *got = xrealloc(*got, sizeof **got * (size_t)(*ngot + 1));
    (*got)[(*ngot)++] = p;
    return p.ms;
}

/* The beam's other starting points: each of the tuner's templates for the kernel
 * (`hints`) at its defaults is measured, then the two fastest are improved one
 * parameter at a time (every value of a parameter measured with the others fixed,
 * the fastest kept, two passes over the parameters at most), on at most half the
 * budget.  The templates encode what the tuner knows (a packed micro-kernel on a
 * CPU, shared-memory tiles on a GPU) and that the moves one at a time reach only
 * through long sequences; the beam then searches on from the best of them. */
static void start_from_hints(Agent *a, Path **got, int *ngot)
{
    const DojoHint *hs;
    int nh = dojo_hints(a->s, &hs, NULL);
    int stop = a->used + a->o->budget / 2;
    if (!nh)
        return;
    double *t = xcalloc((size_t)nh, sizeof *t);
    int *order = xcalloc((size_t)nh, sizeof *order);
    for (int i = 0; i < nh; i++) {
        order[i] = i;
        t[i] = spent(a) || a->used >= stop ? INFINITY : measure_moves(a, hs[i].moves, hs[i].n, got, ngot);
    }
    for (int i = 1; i < nh; i++) /* fastest first */
        for (int j = i; j > 0 && t[order[j]] < t[order[j - 1]]; j--) {
            int x = order[j];
            order[j] = order[j - 1];
            order[j - 1] = x;
        }
    for (int r = 0; r < nh && r < 2; r++) {
        int i = order[r];
        if (!isfinite(t[i]))
            break;
        int cur[DOJO_HINT_PARAMS];
        for (int p = 0; p < hs[i].nparams; p++)
            cur[p] = hs[i].params[p].chosen;
        double cur_t = t[i];
        for (int pass = 0; pass < 2; pass++) {
            bool moved = false;
            for (int p = 0; p < hs[i].nparams; p++) {
                int best = cur[p];
                for (int v = 0; v < hs[i].params[p].nvalues && !spent(a) && a->used < stop; v++) {
                    if (v == cur[p])
                        continue;
                    int ch[DOJO_HINT_PARAMS];
                    memcpy(ch, cur, sizeof ch);
                    ch[p] = v;
                    DojoHint x;
                    StrBuf e = {0};
                    if (dojo_hint_at(a->s, i, ch, &x, &e)) {
                        double tv = measure_moves(a, x.moves, x.n, got, ngot);
                        if (tv < cur_t) {
                            cur_t = tv;
                            best = v;
                        }
                        dojo_hints_free_moves(&x);
                    }
                    sb_free(&e);
                }
                moved |= best != cur[p];
                cur[p] = best;
            }
            if (!moved)
                break;
        }
        if (!a->o->quiet) {
            fprintf(stderr, "hint %d (%s): %.4g ms at", i, hs[i].origin, cur_t);
            for (int p = 0; p < hs[i].nparams; p++)
                fprintf(stderr, " %s=%s", hs[i].params[p].name, hs[i].params[p].values[cur[p]]);
            fputc('\n', stderr);
        }
    }
    free(t);
    free(order);
}

/* Beam search with lookahead.  Each level expands every beam state by its
 * best-ranked moves and, through the best few of those, by a second move, without
 * measuring: every such state is rolled out, states that roll out to one kernel are
 * counted once, and a kernel measured before costs nothing.  The options are ranked
 * by the cost model's prediction for their rolled-out kernels (a LASSO over the
 * tuner's features, fitted on this game's measurements, `predict` in the protocol)
 * once it has enough rows, by the move prior before that and for a quarter of each
 * level after; the best are measured.  The next beam is the W fastest of parents and
 * options (a level that finds nothing better keeps its beam). */
static void play_beam(Agent *a)
{
    int W = a->o->width > 0 ? a->o->width : 4;
    DojoMeasure m;
    Path root = path_here(a->s, 0);
    /* the start itself too: on a small kernel every finishing move may cost more
     * than it gains (threads), and the answer must never be worse than the start */
    if (measure(a, &m) < 0) {
        path_free(&root);
        return;
    }
    root.ms = evaluate(a, &m);
    if (root.ms < 0) { /* no device, or the start does not compile: nothing to search */
        path_free(&root);
        return;
    }
    Path *beam = xcalloc((size_t)W, sizeof *beam);
    int nb = 1;
    beam[0] = root;
    if (!a->o->no_hints) {
        /* the first beam: the fastest of the start and the measured templates */
        Path *got = NULL;
        int ngot = 0;
        start_from_hints(a, &got, &ngot);
        got = xrealloc(got, sizeof *got * (size_t)(ngot + 1));
        got[ngot++] = root;
        qsort(got, (size_t)ngot, sizeof *got, by_ms);
        nb = 0;
        for (int i = 0; i < ngot; i++) {
            if (nb < W && isfinite(got[i].ms))
                beam[nb++] = got[i];
            else
                path_free(&got[i]);
        }
        free(got);
        if (!nb) {
            free(beam);
            return;
        }
    }
    int stale = 0;
    Pool o = {0};
    enum { KIDS = 10, DEEP = 3, GRANDKIDS = 5, POOL = 1500 };
    for (int level = 0; level < a->o->depth && !spent(a); level++) {
        /* the options of this level */
        for (int b = 0; b < nb && !spent(a); b++) {
            go_to(a->s, &beam[b]);
            int n;
            Cand *c = ranked(a, &n, true);
            /* the wall-time budget is checked between options too: on a large
             * kernel rolling them out is slow, not only measuring */
            for (int i = 0; i < n && i < KIDS && !spent(a); i++) {
                bool legal;
                StrBuf e = {0};
                dojo_step(a->s, c[i].id, NULL, &legal, &e);
                sb_free(&e);
                consider(a, &o, c[i].score);
                if (i < DEEP) {
                    int n2;
                    Cand *c2 = ranked(a, &n2, true);
                    Path kid = path_here(a->s, 0);
                    for (int j = 0; j < n2 && j < GRANDKIDS && !spent(a); j++) {
                        StrBuf e2 = {0};
                        dojo_step(a->s, c2[j].id, NULL, &legal, &e2);
                        sb_free(&e2);
                        consider(a, &o, c[i].score + 0.5 * c2[j].score);
                        go_to(a->s, &kid);
                    }
                    path_free(&kid);
                    free(c2);
                }
                go_to(a->s, &beam[b]);
            }
            free(c);
        }
        /* measure the most promising: by the model, one in four by the prior */
        if (a->model.n >= TM_MIN_ROWS && a->model.n != a->fitted_rows) {
            a->fitted_rows = a->model.n;
            tm_fit(&a->model);
        }
        bool model = a->model.fitted;
        for (int i = 0; i < o.n; i++)
            o.v[i].pred = model && o.v[i].has_f ? tm_predict(&a->model, o.v[i].f) + log(o.v[i].work) : INFINITY;
        int per = 6 + 2 * (stale < 4 ? stale : 4);
        if (per > a->o->budget - a->used)
            per = a->o->budget - a->used;
        int done = 0;
        for (int round = 0; done < per && round < 2 * per + 4 && !spent(a); round++) {
            bool by_model = model && round % 4 != 3;
            qsort(o.v, (size_t)o.n, sizeof *o.v, by_model ? by_pred : by_prior);
            int pick = -1;
            for (int i = 0; i < o.n && pick < 0; i++)
                if (o.v[i].known < 0)
                    pick = i;
            if (pick < 0)
                break;
            go_to(a->s, &o.v[pick].path);
            double t = evaluate(a, &m);
            o.v[pick].known = t > 0 ? t : INFINITY;
            done++;
        }
        /* the next beam: the fastest of parents and options, no kernel twice */
        int total = nb + o.n;
        Path *all = xcalloc((size_t)total, sizeof *all);
        char (*rolled)[24] = xcalloc((size_t)total, sizeof *rolled);
        int na = 0;
        for (int i = 0; i < nb; i++)
            all[na++] = beam[i];
        /* measured options leave the pool; the others wait for a later level, the
         * pool kept to the POOL likeliest by the prior */
        int keep = 0;
        for (int i = 0; i < o.n; i++) {
            if (o.v[i].known > 0 || (o.v[i].known == INFINITY)) {
                all[na] = o.v[i].path;
                all[na++].ms = o.v[i].known;
            } else {
                o.v[keep++] = o.v[i];
            }
        }
        o.n = keep;
        if (o.n > POOL) {
            qsort(o.v, (size_t)o.n, sizeof *o.v, by_prior);
            for (int i = POOL; i < o.n; i++)
                path_free(&o.v[i].path);
            o.n = POOL;
        }
        qsort(all, (size_t)na, sizeof *all, by_ms);
        double old_best = beam[0].ms;
        int nn = 0;
        for (int i = 0; i < na; i++) {
            go_to(a->s, &all[i]);
            int d0 = dojo_depth(a->s);
            rollout(a);
            char fp[24];
            snprintf(fp, sizeof fp, "%s", dojo_fingerprint(a->s));
            while (dojo_depth(a->s) > d0)
                dojo_undo(a->s);
            bool dup = false;
            for (int j = 0; j < nn && !dup; j++)
                dup = !strcmp(rolled[j], fp);
            /* a state several times slower than the best is not worth measurements:
             * the budget goes to the ones that can still win */
            if (nn < W && !dup && isfinite(all[i].ms) && all[i].ms <= 4 * all[0].ms) {
                snprintf(rolled[nn], 24, "%s", fp);
                all[nn++] = all[i];
            } else {
                path_free(&all[i]);
            }
        }
        free(rolled);
        free(beam);
        beam = all;
        nb = nn;
        if (!nb)
            break;
        stale = beam[0].ms < old_best * 0.99 ? 0 : stale + 1;
        if (!a->o->quiet)
            fprintf(stderr, "level %d: best %.4g ms (%d measured%s)\n", level + 1, beam[0].ms, a->used,
                    model ? ", ranked by the cost model" : "");
        if (stale >= 8)
            break;
    }
    for (int i = 0; i < o.n; i++)
        path_free(&o.v[i].path);
    free(o.v);
    free(o.visited);
    for (int i = 0; i < nb; i++)
        path_free(&beam[i]);
    free(beam);
}

int dojo_run_agent(DojoSession *s, const DojoAgentOpts *o)
{
    Agent a = {.s = s, .o = o, .best_ms = INFINITY};
    if (o->time_s > 0)
        a.deadline = now_seconds() + o->time_s;
    dojo_set_deadline(s, a.deadline);
    struct sigaction sa = {0}, old_int, old_term;
    sa.sa_handler = on_agent_stop;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    rng_seed(&a.rng, dojo_seed(s) ^ 0x5eed);
    if (!strcmp(o->agent, "random"))
        play_random(&a);
    else if (!strcmp(o->agent, "greedy"))
        play_greedy(&a);
    else if (!strcmp(o->agent, "beam"))
        play_beam(&a);
    else {
        fprintf(stderr, "perfc: error: dojo: unknown agent '%s' (random, greedy, beam)\n", o->agent);
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
        return 1;
    }
    int rc = 0;
    if (!isfinite(a.best_ms)) {
        fprintf(stderr, "perfc: error: dojo: no valid measurement\n");
        rc = 3;
    } else {
        /* leave the session on the best state, so --record's last line is it */
        Path p = {a.best_moves, a.nbest, a.best_ms};
        go_to(s, &p);
        printf("agent      %s\nmeasured   %d states\nbest       %.4g ms  speedup x%.4g", o->agent, a.used, a.best_ms,
               a.best_speedup);
        if (a.best_vs_lib > 0)
            printf("  %.3fx the library", a.best_vs_lib);
        printf("\nfingerprint %s\n", dojo_fingerprint(s));
        StrBuf t = {0};
        dojo_schedule_text(s, &t);
        fputs(t.s, stdout);
        sb_free(&t);
    }
    dojo_set_deadline(s, 0);
    if (agent_stop)
        fprintf(stderr, "perfc: dojo: the agent was asked to stop; the best state so far is reported\n");
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    for (int i = 0; i < a.nbest; i++)
        free(a.best_moves[i]);
    free(a.best_moves);
    free(a.seen);
    tm_free(&a.model);
    return rc;
}
