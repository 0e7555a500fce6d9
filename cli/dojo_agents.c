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
 * distributions), documented in docs/dojo.md; it is no cost model. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dojo.h"

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
    double best_ms;
    double best_speedup, best_vs_lib;
    char **best_moves;
    int nbest;
} Agent;

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
    int rc = dojo_measure(a->s, m, NULL, NULL, &e);
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
    if (!a->o->quiet)
        fprintf(stderr, "  [%3d] %8.4g ms  x%-7.3g %s%s\n", a->used, m->valid ? m->median_ms : NAN,
                m->valid ? m->speedup : NAN, dojo_depth(a->s) ? dojo_move(a->s, dojo_depth(a->s) - 1) : "(start)",
                m->cached ? "  (cached)" : "");
    return m->valid ? m->median_ms : INFINITY;
}

/* ---- move ordering ---- */

typedef struct LoopInfo {
    char name[64];
    int64_t extent;           /* -1 unknown */
    bool innermost;
    int depth;
    char kind[16];
} LoopInfo;

/* The loop features of the state, read from the same JSON a client gets; *gpu:
 * the target is a GPU. */
static int loop_infos(DojoSession *s, LoopInfo *out, int cap, bool *gpu)
{
    StrBuf b = {0};
    dojo_state_json(s, &b, false);
    char err[160];
    Jv *st = jv_parse(b.s, b.len, err, sizeof err);
    sb_free(&b);
    const Jv *loops = jv_get(st, "loops");
    bool bad = false;
    const char *t = jv_str(st, "target", &bad);
    *gpu = t && !strncmp(t, "sm_", 3);
    int n = 0;
    for (int i = 0; loops && i < loops->n && n < cap; i++) {
        const Jv *l = loops->items[i];
        bool bad = false;
        LoopInfo *x = &out[n++];
        snprintf(x->name, sizeof x->name, "%s", jv_str(l, "name", &bad));
        const Jv *e = jv_get(l, "extent");
        x->extent = e && e->kind == JV_NUM ? e->i : -1;
        x->innermost = jv_get(l, "innermost") && jv_get(l, "innermost")->b;
        x->depth = (int)jv_get(l, "depth")->num;
        snprintf(x->kind, sizeof x->kind, "%s", jv_str(l, "kind", &bad));
    }
    jv_free(st);
    return n;
}

static const LoopInfo *find_loop(const LoopInfo *ls, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(ls[i].name, name))
            return &ls[i];
    return NULL;
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

/* GPU targets: map outer loops to blocks and inner ones to threads, tile first. */
static double gpu_prior(const char *name, const char *move, const LoopInfo *l, long long a1)
{
    if (!strcmp(name, "bind")) {
        bool block = strstr(move, "block.") != NULL;
        if (!l)
            return 1;
        if (block)
            return l->depth <= 1 ? 90 - l->depth : 15;
        return l->depth >= 1 && l->extent >= 8 && l->extent <= 32 ? 85 : 10;
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
static double prior(const char *move, const LoopInfo *ls, int nl, int depth_now, bool gpu)
{
    char name[32], a0[64];
    long long a1;
    move_parts(move, name, sizeof name, a0, sizeof a0, &a1);
    const LoopInfo *l = find_loop(ls, nl, a0);
    if (gpu && strcmp(name, "cache"))
        return gpu_prior(name, move, l, a1);
    bool nested_parallel = false;
    for (int i = 0; i < nl; i++)
        nested_parallel |= !strcmp(ls[i].kind, "parallel");
    if (!strcmp(name, "vectorize"))
        return l && l->innermost && l->extent >= 4 && l->extent <= 32 && l->extent % 4 == 0 ? 100 : 5;
    if (!strcmp(name, "parallel"))
        return nested_parallel ? 0 : l && l->depth == 0 ? 90 : l && l->depth == 1 ? 40 : 10;
    if (!strcmp(name, "unroll"))
        return l && !l->innermost && l->extent >= 2 && l->extent <= 8 ? 80 : 15;
    if (!strcmp(name, "cache")) {
        /* staging a staged copy again (its name has the loop's suffix) gains nothing */
        if (strchr(a0, '_'))
            return 0;
        char buf[64];
        const char *comma = strchr(move, ',');
        snprintf(buf, sizeof buf, "%s", comma ? comma + 2 : "");
        buf[strcspn(buf, ")")] = 0;
        const LoopInfo *at = find_loop(ls, nl, buf);
        return at && !at->innermost && at->depth >= 1 ? 50 : 10;
    }
    if (!strcmp(name, "distribute"))
        return 65;
    if (!strcmp(name, "reorder"))
        return 60;
    if (!strcmp(name, "split")) {
        if (strstr(move, "tail"))
            return 5;
        if (l && l->innermost)
            return a1 == 16 ? 58 : a1 == 8 || a1 == 32 ? 45 : 20;
        return a1 == 4 || a1 == 8 ? 55 : a1 >= 64 ? 35 : 25;
    }
    if (!strcmp(name, "tile"))
        return 30;
    (void)depth_now;
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
static Cand *ranked(Agent *a, int *n)
{
    LoopInfo ls[256];
    bool gpu;
    int nl = loop_infos(a->s, ls, 256, &gpu);
    *n = dojo_nactions(a->s);
    Cand *c = xcalloc((size_t)*n + 1, sizeof *c);
    for (int i = 0; i < *n; i++) {
        c[i].id = i;
        /* a little noise breaks ties differently per seed */
        c[i].score = prior(dojo_action_text(a->s, i), ls, nl, dojo_depth(a->s), gpu) + rng_uniform(&a->rng, 0, 0.5);
    }
    qsort(c, (size_t)*n, sizeof *c, by_score);
    return c;
}

/* ---- the agents ---- */

static void play_random(Agent *a)
{
    DojoMeasure m;
    if (measure(a, &m) < 0)
        return;
    for (int t = 0; t < a->o->steps && a->used < a->o->budget; t++) {
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
    while (a->used < a->o->budget) {
        int n;
        Cand *c = ranked(a, &n);
        Path here = path_here(a->s, cur);
        double best = cur;
        char *best_move = NULL;
        for (int i = 0; i < n && i < per && a->used < a->o->budget; i++) {
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
 * finishing moves that the prior ranks highest (vectorise an innermost loop, after
 * splitting it by 16 when it is longer; parallelise the outermost loop; unroll a
 * short loop; on GPUs bind loops to blocks and threads) are played without being
 * measured, and the finished kernel is measured.  A structural move (split,
 * reorder, distribute, cache) is then judged by what it enables rather than by its
 * own time, which is about unchanged until the finishing moves follow. */
static void rollout(Agent *a)
{
    for (int r = 0; r < 8; r++) {
        LoopInfo ls[256];
        bool gpu;
        int nl = loop_infos(a->s, ls, 256, &gpu);
        int n = dojo_nactions(a->s), best = -1;
        double bestp = 0;
        for (int i = 0; i < n; i++) {
            const char *t = dojo_action_text(a->s, i);
            char name[32], a0[64];
            long long a1;
            move_parts(t, name, sizeof name, a0, sizeof a0, &a1);
            double p = prior(t, ls, nl, dojo_depth(a->s), gpu);
            bool finishing = !strcmp(name, "vectorize") || !strcmp(name, "parallel") || !strcmp(name, "unroll") ||
                             !strcmp(name, "bind");
            if (!gpu && !strcmp(name, "split") && a1 == 16 && !strstr(t, "tail")) {
                /* a long innermost loop: split it so that its inner part can be a vector */
                const LoopInfo *l = find_loop(ls, nl, a0);
                finishing = l && l->innermost && l->extent > 32 && l->extent % 16 == 0 && !strcmp(l->kind, "serial");
                p = finishing ? 81 : 0;
            }
            if (finishing && p >= 80 && p > bestp) {
                bestp = p;
                best = i;
            }
        }
        if (best < 0)
            break;
        bool legal;
        StrBuf e = {0};
        dojo_step(a->s, best, NULL, &legal, &e);
        sb_free(&e);
    }
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

/* Beam search: each level expands every state of the beam by its best-ranked moves,
 * measures the children, and keeps the W fastest states seen at this level (the
 * parents included, so a level that finds nothing better keeps its beam, and a move
 * that only enables later ones survives while it costs little). */
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
    int stale = 0;
    for (int level = 0; level < a->o->depth && a->used < a->o->budget; level++) {
        int left = a->o->budget - a->used;
        int levels_left = a->o->depth - level;
        int per = left / (levels_left < 4 ? levels_left : 4) / nb;
        if (per < 2)
            per = 2;
        if (per > 6)
            per = 6;
        per <<= stale < 4 ? stale : 4; /* a level that found nothing widens the next */
        PtrVec kids = {0};
        for (int b = 0; b < nb && a->used < a->o->budget; b++) {
            go_to(a->s, &beam[b]);
            int n;
            Cand *c = ranked(a, &n);
            /* the fastest state of the beam gets twice the children of the others */
            int mine = b == 0 && nb > 1 ? 2 * per : per;
            for (int i = 0; i < n && i < mine && a->used < a->o->budget; i++) {
                bool legal;
                StrBuf e = {0};
                dojo_step(a->s, c[i].id, NULL, &legal, &e);
                sb_free(&e);
                if (seen_ms(a) >= 0) { /* reached before by other moves: no new information */
                    go_to(a->s, &beam[b]);
                    mine++;
                    continue;
                }
                double t = evaluate(a, &m);
                Path *k = xmalloc(sizeof *k);
                *k = path_here(a->s, t > 0 ? t : INFINITY);
                vec_push(&kids, k);
                go_to(a->s, &beam[b]);
            }
            free(c);
        }
        /* the next beam: the fastest of parents and children, no state twice */
        int total = nb + kids.n;
        Path *all = xcalloc((size_t)total, sizeof *all);
        for (int i = 0; i < nb; i++)
            all[i] = beam[i];
        for (int i = 0; i < kids.n; i++) {
            all[nb + i] = *(Path *)kids.v[i];
            free(kids.v[i]);
        }
        vec_free(&kids);
        /* children first among equals: a child no slower than its parent moves on */
        qsort(all, (size_t)total, sizeof *all, by_ms);
        double old_best = beam[0].ms;
        int nn = 0;
        for (int i = 0; i < total; i++) {
            bool dup = false;
            for (int j = 0; j < nn && !dup; j++) {
                dup = all[j].n == all[i].n;
                for (int q = 0; dup && q < all[i].n; q++)
                    dup = !strcmp(all[j].moves[q], all[i].moves[q]);
            }
            /* a state several times slower than the best is not worth measurements:
             * the budget goes to the ones that can still win */
            if (nn < W && !dup && isfinite(all[i].ms) && all[i].ms <= 4 * all[0].ms)
                all[nn++] = all[i];
            else
                path_free(&all[i]);
        }
        free(beam);
        beam = all;
        nb = nn;
        if (!nb)
            break;
        stale = beam[0].ms < old_best * 0.99 ? 0 : stale + 1;
        if (!a->o->quiet)
            fprintf(stderr, "level %d: best %.4g ms (%d measured)\n", level + 1, beam[0].ms, a->used);
        if (stale >= 8)
            break;
    }
    for (int i = 0; i < nb; i++)
        path_free(&beam[i]);
    free(beam);
}

int dojo_run_agent(DojoSession *s, const DojoAgentOpts *o)
{
    Agent a = {.s = s, .o = o, .best_ms = INFINITY};
    rng_seed(&a.rng, dojo_seed(s) ^ 0x5eed);
    if (!strcmp(o->agent, "random"))
        play_random(&a);
    else if (!strcmp(o->agent, "greedy"))
        play_greedy(&a);
    else if (!strcmp(o->agent, "beam"))
        play_beam(&a);
    else {
        fprintf(stderr, "perfc: error: dojo: unknown agent '%s' (random, greedy, beam)\n", o->agent);
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
    for (int i = 0; i < a.nbest; i++)
        free(a.best_moves[i]);
    free(a.best_moves);
    free(a.seen);
    return rc;
}
