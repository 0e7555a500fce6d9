/* The search: candidates proposed, pruned, compiled in parallel, measured one at a
 * time, remembered; the winner re-validated and reported (tune.h says what and why).
 *
 * Rounds: the driver proposes a batch of new candidates (the next ones of the
 * enumeration when the space fits the budget; otherwise children of the best
 * measured so far by crossover and mutation, with random ones while there are too
 * few parents).  Worker threads schedule each candidate (IR only), prune it
 * statically and compile the survivors, all cores at once; then, with every worker
 * idle so nothing disturbs the clock, the driver measures the compiled ones one by
 * one with rt_evaluate (through a proxy device that hands the harness the ready
 * compilation) and commits each result to the database before the next.
 * Measurement is serial on purpose: two kernels timed at once share cores, caches
 * and memory bandwidth and both numbers would be wrong. */
#include "blocking.h"
#include "tune.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../passes/passes.h"
#include "../passes/xform.h"
#include "../codegen/cuda/cg_cuda.h"
#include "builder.h"
#include "model.h"

void tune_options_init(TuneOptions *o)
{
    memset(o, 0, sizeof *o);
    o->target = "host";
    o->progress = -1;
    o->seed = 1;
    o->use_model = true;
}

/* ---- candidates ---- */

typedef struct Cand {
    int t;                       /* template */
    int idx[TUNE_MAX_PARAMS];
    /* filled by a worker */
    bool scheduled;              /* the schedule step ran (k or why set) */
    double feat[TM_NFEAT], work; /* the cost model's features (tune/model.h) */
    double pred;                 /* the model's prediction: smaller is faster */
    Kernel *k;
    RtExec *x;
    CgCudaModule *mod;           /* GPU: generated at pruning, compiled by a worker, adopted by the device */
    bool ready;                  /* the worker is done with it (an asynchronous batch) */
    double compile_ms;
    char *why;                   /* pruned or refused: the reason */
    /* filled by the measurement */
    bool measured, valid;
    bool stored;                 /* measured by an interrupted search and read back */
    int status;
    double median, min, max, gflops, rel_error;
    char *params, *sched, *ir;
} Cand;

typedef struct Tuner {
    const TuneInput *in;
    const TuneOptions *o;
    TuneSpace sp;
    Arena *arena;
    const char *target;          /* tgt->name */
    const Target *tgt;           /* TuneOptions.target, parsed once */
    RtDevice *dev;               /* real device, or NULL with a planted measure */
    bool parallel_compile;       /* CPU: a batch compiled on every core, then measured with them idle */
    bool async_compile;          /* GPU: candidates compiled on other cores while earlier ones are measured */
    int threads, jobs, lanes;
    /* every candidate proposed so far, for de-duplication and the report */
    Cand **all;
    int nall, capall;
    uint64_t *seen;              /* open-addressed set of candidate hashes */
    int capseen;
    Rng rng;
    /* enumeration state (exhaustive) */
    int enum_t;
    int enum_idx[TUNE_MAX_PARAMS];
    bool enum_done;
    TuneDb *db;
    TuneKey key;
    TuneResult *res;
    /* the measurements of an interrupted search under this key, to resume it */
    struct Stored {
        char *params, *sched;
        bool valid;
        int status;
        double median, min, max, gflops, rel_error, compile_ms;
    } *stored;
    int nstored, capstored;
    Cand *best;
    double t0;
    Kernel *fk;                  /* the winner's final run, kept for the report */
    struct {
        char why[96];
        int n;
    } reasons[8];                /* why candidates were pruned, for the report */
    int nreasons;
    const Progress *prog;        /* where progress events go (NULL: nowhere) */
    Progress own_prog;           /* the status line when the caller gave none */
    ProgressTerm term;
    int total;                   /* candidates the search expects to measure */
    double lib_ms;               /* the library (--compare): timed alone while the first GPU batch
                                  * compiles, else beside the first candidate */
    bool lib_tried;
    /* the cost model: rows of earlier searches, then this one's as they come */
    TuneModel model;
    bool use_model;
    uint64_t group;              /* this search's group in the model */
    double caches[3];
    const Kernel *u;             /* the kernel before scheduling: the harness's reference and counts */
    bool plain;                  /* the kernel as written is measured after the search */
    bool plain_in_space;         /* ... or is a template of the space already */
    RtRefCache *refs;            /* the two input sets' inputs and references, computed once */
    Cand **reserve;              /* scheduled, ranked, not yet chosen */
    int nreserve;
    /* Templates a ranked search has handed out a candidate of, and how many more
     * hand-outs may go to a template's first candidate ahead of the ranking. */
    bool handed[TUNE_MAX_TEMPLATES];
    int explore_left;
} Tuner;

static char *params_text(const struct Tuner *T, const Cand *c);

static uint64_t cand_hash(const Cand *c, const TuneTemplate *t)
{
    uint64_t h = tunedb_hash(&c->t, sizeof c->t, TUNEDB_HASH0);
    return tunedb_hash(c->idx, sizeof c->idx[0] * (size_t)t->nparams, h) | 1;
}

/* True when new (and records it). */
static bool seen_add(Tuner *T, const Cand *c)
{
    if (T->capseen < 2 * (T->nall + 1)) {
        int cap = T->capseen ? T->capseen * 2 : 1024;
        uint64_t *s = xcalloc((size_t)cap, sizeof *s);
        for (int i = 0; i < T->capseen; i++)
            if (T->seen[i])
                for (int j = (int)(T->seen[i] % (uint64_t)cap);; j = (j + 1) % cap)
                    if (!s[j]) {
                        s[j] = T->seen[i];
                        break;
                    }
        free(T->seen);
        T->seen = s;
        T->capseen = cap;
    }
    uint64_t h = cand_hash(c, &T->sp.t[c->t]);
    for (int j = (int)(h % (uint64_t)T->capseen);; j = (j + 1) % T->capseen) {
        if (T->seen[j] == h)
            return false;
        if (!T->seen[j]) {
            T->seen[j] = h;
            return true;
        }
    }
}

static Cand *cand_push(Tuner *T, const Cand *proto)
{
    if (!seen_add(T, proto))
        return NULL;
    if (T->nall == T->capall) {
        T->capall = T->capall ? T->capall * 2 : 64;
        T->all = xrealloc(T->all, sizeof *T->all * (size_t)T->capall);
    }
    Cand *c = xcalloc(1, sizeof *c);
    c->t = proto->t;
    memcpy(c->idx, proto->idx, sizeof c->idx);
    c->params = params_text(T, c);
    T->all[T->nall++] = c;
    return c;
}

static void choices_of(const Tuner *T, const Cand *c, ParamChoice *ch)
{
    const TuneTemplate *t = &T->sp.t[c->t];
    for (int i = 0; i < t->nparams; i++) {
        ch[i].name = t->names[i];
        ch[i].index = c->idx[i];
    }
}

static void arg_print(const SchedArg *a, StrBuf *b)
{
    switch (a->kind) {
    case SARG_NAME: sb_puts(b, a->name); break;
    case SARG_INT: sb_printf(b, "%lld", (long long)a->ival); break;
    case SARG_FLOAT: sb_printf(b, "%g", a->fval); break;
    case SARG_STRING: sb_printf(b, "\"%s\"", a->name); break;
    case SARG_LIST:
        sb_putc(b, '[');
        for (int i = 0; i < a->list.n; i++) {
            if (i)
                sb_puts(b, ", ");
            arg_print(&a->list.items[i], b);
        }
        sb_putc(b, ']');
        break;
    }
}

/* "tile_i=8 tile_j=64" */
static char *params_text(const struct Tuner *T, const Cand *c)
{
    StrBuf b = {0};
    const TuneTemplate *t = &T->sp.t[c->t];
    if (t->rule)
        for (int i = 0; i < t->rule->nparams; i++)
            sb_printf(&b, "%s%s=%s", b.len ? " " : "", t->rule->names[i], t->rule->values[i][c->idx[i]]);
    static const AstSchedule none = {0};
    const AstSchedule *s = t->rule ? &none : t->s;
    int p = 0;
    for (int i = 0; i < s->nitems; i++)
        if (s->items[i].kind == SCHED_PARAM) {
            if (p < TUNE_MAX_PARAMS && c->idx[p] < s->items[i].nargs) {
                sb_printf(&b, "%s%s=", b.len ? " " : "", s->items[i].name);
                arg_print(&s->items[i].args[c->idx[p]], &b);
            }
            p++;
        }
    if (!b.s)
        sb_puts(&b, !s->nitems && !t->rule ? "(no schedule)" : T->sp.n > 1 ? "" : "(none)");
    if (T->sp.n > 1) {
        StrBuf v = {0};
        sb_printf(&v, "[template %d] %s", c->t + 1, b.s);
        sb_free(&b);
        return v.s;
    }
    return b.s;
}

/* ---- scheduling, pruning, compiling ---- */

static int64_t trips(const Kernel *k, const Node *l)
{
    int64_t lo = 0, hi = -1;
    if (!ir_eval_size(k, l->u.loop.lo, &lo) || !ir_eval_size(k, l->u.loop.hi, &hi))
        return -1; /* bounds depend on outer loops */
    return hi - lo;
}

static DType first_store_dtype(const Node *n)
{
    if (n->kind == N_STMT)
        return n->u.stmt.buf->dtype;
    const NodeList *b = ir_body((Node *)n);
    for (int i = 0; b && i < b->n; i++) {
        DType t = first_store_dtype(b->v[i]);
        if (t != DT_COUNT)
            return t;
    }
    return DT_COUNT;
}

/* The first statement in n that updates (+=, max= ...) a local buffer: the
 * accumulator of a register tile. */
static const Node *local_update(const Node *n)
{
    if (n->kind == N_STMT)
        return n->u.stmt.op != SOP_ASSIGN && n->u.stmt.buf->mem == MEM_LOCAL ? n : NULL;
    const NodeList *b = ir_body((Node *)n);
    for (int i = 0; b && i < b->n; i++) {
        const Node *u = local_update(b->v[i]);
        if (u)
            return u;
    }
    return NULL;
}

/* The vector registers of the accumulator tile that the vector loop v (regs
 * registers wide) updates in st: its width times the unrolled loops directly around
 * it whose variables index the accumulator (guards passed over; an unrolled filter
 * tap that does not index it adds no register).  -1 when a trip count is not known. */
static int64_t tile_registers(const Kernel *k, const Node *v, const Node *st, int64_t regs)
{
    for (const Node *p = v->parent; p; p = p->parent) {
        if (p->kind == N_IF)
            continue;
        if (p->kind != N_LOOP || p->u.loop.kind != LOOP_UNROLL)
            break;
        bool indexes = false;
        for (int d = 0; d < st->u.stmt.buf->rank && !indexes; d++)
            indexes = ir_expr_uses_var(st->u.stmt.idx[d], p->u.loop.var);
        int64_t t = trips(k, p);
        if (t <= 0)
            return -1;
        if (indexes)
            regs *= t;
    }
    return regs;
}

/* Static pruning of a CPU candidate: returns the reason, or NULL to keep it.  The
 * vector and thread rules are about waste, so they hold the rules' templates only:
 * a kernel's own schedule is tuned as written, and it may know better. */
static const char *prune_walk(const Tuner *T, const Kernel *k, const Node *n, bool rules)
{
    if (n->kind == N_LOOP) {
        if (rules && n->u.loop.kind == LOOP_VECTOR) {
            int64_t e = trips(k, n);
            DType t = first_store_dtype(n);
            int lanes = tune_vector_lanes(T->tgt, t == DT_COUNT ? DT_F32 : t);
            if (e > 0 && (e % lanes != 0))
                return "a vector loop that is not a whole number of SIMD registers";
            if (e > 8 * lanes)
                return "a vector loop longer than eight SIMD registers";
            /* a register tile whose accumulators, the operand vectors of one step
             * and a broadcast outnumber the vector registers spills in its inner
             * loop (a direct convolution's tile of 7 pixels by two vectors, 14
             * accumulators and 3 more on AVX2's 16, ran 5.9 ms where 7 by one ran
             * 3.6: 512 channels at 7 x 7, one thread, Zen 3) */
            const Node *st = e > 0 ? local_update(n) : NULL;
            if (st && lanes > 0) {
                int64_t nv = (e + lanes - 1) / lanes, acc = tile_registers(k, n, st, nv);
                if (acc > 0 && acc + nv + 1 > blocking_vector_regs(T->tgt))
                    return "a register tile larger than the vector registers";
            }
        }
        /* a waste, not an error: only the rules' own candidates are held to it
         * (a kernel's schedule is tuned as written) */
        if (rules && n->u.loop.kind == LOOP_PARALLEL && T->threads > 1) {
            int64_t e = trips(k, n);
            if (e >= 0 && e < T->threads)
                return "a parallel loop with fewer iterations than threads";
        }
    }
    const NodeList *b = ir_body((Node *)n);
    for (int i = 0; b && i < b->n; i++) {
        const char *why = prune_walk(T, k, b->v[i], rules);
        if (why)
            return why;
    }
    return NULL;
}

/* k as scheduled; low the copy the back end translates (tune_lower). */
static const char *prune(const Tuner *T, const Kernel *k, const Kernel *low, bool rules, CgCudaModule **keep,
                         Diags *d)
{
    bool gpu = target_is_gpu(T->tgt);
    if (gpu) {
        /* the launch table checks threads per block and shared memory */
        CgCudaModule m;
        memset(&m, 0, sizeof m);
        bool ok = cg_cuda_generate(low, T->target, &m, d);
        const char *why = NULL;
        if (!ok)
            why = "over the target's launch limits";
        for (int i = 0; ok && i < m.nlaunches && !why; i++) {
            int th = m.launches[i].block[0] * m.launches[i].block[1] * m.launches[i].block[2];
            if (th > 32 && th % 32)
                why = "a thread block that is not a whole number of warps";
        }
        if (ok && !why && keep) { /* the CUDA C to compile, generated once */
            *keep = xmalloc(sizeof **keep);
            **keep = m;
        } else {
            cg_cuda_module_free(&m);
        }
        return why;
    }
    int64_t local = 0;
    for (int i = 0; i < k->nbufs; i++)
        if (k->bufs[i]->mem == MEM_LOCAL) {
            int64_t n = ir_buffer_elems(k, k->bufs[i]);
            local += n > 0 ? n * dtype_bytes(k->bufs[i]->dtype) : 0;
        }
    /* local buffers live on each thread's stack */
    if (local > BLOCKING_LOCAL_MAX)
        return "local buffers over 1 MiB (thread stacks)";
    for (int i = 0; i < k->body.n; i++) {
        const char *why = prune_walk(T, k, k->body.v[i], rules);
        if (why)
            return why;
    }
    return NULL;
}

typedef struct Batch {
    Tuner *T;
    Cand **c;
    int n;
    bool schedule_only;          /* rank first: schedule, do not compile */
    int next;
    pthread_mutex_t lock;
    pthread_cond_t done;         /* signalled as each candidate becomes ready */
    pthread_t th[64];
    int started;
} Batch;

/* The schedule step: lower, apply the candidate's schedule, prune, read the cost
 * model's features.  IR only; cheap beside a compilation. */
static void schedule_cand(Tuner *T, Cand *c)
{
    c->scheduled = true;
    Diags d;
    diag_init(&d);
    ParamChoice ch[TUNE_MAX_PARAMS];
    choices_of(T, c, ch);
    Kernel *k = tune_apply(T->in, &T->sp.t[c->t], ch, T->sp.t[c->t].nparams, NULL, &d);
    if (!k) {
        /* the first line of the refusal says which statement and why */
        const char *msg = d.text.s ? d.text.s : "refused";
        const char *nl = strchr(msg, '\n');
        c->why = xmalloc(strlen(msg) + 16);
        snprintf(c->why, strlen(msg) + 16, "refused: %.*s", nl ? (int)(nl - msg) : (int)strlen(msg), msg);
        diag_free(&d);
        return;
    }
    /* pruned, modelled and printed as scheduled; compiled as lowered */
    Kernel *low = tune_lower(k, T->tgt, &d);
    const char *why = !low ? "refused by the target's legalisation"
                           : prune(T, k, low, !strncmp(T->sp.t[c->t].origin, "rules", 5),
                                   T->async_compile ? &c->mod : NULL, &d);
    if (why) {
        c->why = xstrdup(why);
        ir_free(k);
        if (low)
            ir_free(low);
        diag_free(&d);
        return;
    }
    c->k = low;
    c->work = tm_features(k, T->threads, T->lanes, T->caches, c->feat);
    StrBuf ir = {0};
    ir_print_kernel(k, &ir);
    c->ir = ir.s;
    ir_free(k);
    diag_free(&d);
}

/* Frees what a candidate holds before it is measured (pruned, over the budget, dropped
 * from the reserve). */
static void cand_drop(Cand *c)
{
    if (c->k)
        ir_free(c->k);
    c->k = NULL;
    if (c->mod) {
        cg_cuda_module_free(c->mod);
        free(c->mod);
        c->mod = NULL;
    }
}

static void prepare(Tuner *T, Cand *c)
{
    if (!c->scheduled)
        schedule_cand(T, c);
    if (c->k && T->async_compile && c->mod && !c->mod->cubin) {
        /* NVRTC on this worker thread; the device loads the module when it measures */
        Diags d;
        diag_init(&d);
        double t0 = now_seconds();
        bool ok = cg_cuda_compile(c->mod, T->target, &d);
        c->compile_ms = (now_seconds() - t0) * 1e3;
        if (!ok) {
            c->why = xstrdup(d.text.s ? d.text.s : "compile failed");
            cand_drop(c);
        }
        diag_free(&d);
        return;
    }
    if (!c->k || !T->parallel_compile || c->x)
        return;
    Diags d;
    diag_init(&d);
    double t0 = now_seconds();
    c->x = T->dev->compile(T->dev, c->k, T->target, &d);
    c->compile_ms = (now_seconds() - t0) * 1e3;
    if (!c->x) {
        const char *msg = d.text.s ? d.text.s : "compile failed";
        c->why = xstrdup(msg);
        ir_free(c->k);
        c->k = NULL;
    }
    diag_free(&d);
}

static void *worker(void *arg)
{
    Batch *b = arg;
    for (;;) {
        pthread_mutex_lock(&b->lock);
        int i = b->next++;
        pthread_mutex_unlock(&b->lock);
        if (i >= b->n)
            return NULL;
        if (b->schedule_only) {
            if (!b->c[i]->scheduled)
                schedule_cand(b->T, b->c[i]);
        } else {
            prepare(b->T, b->c[i]);
        }
        pthread_mutex_lock(&b->lock);
        b->c[i]->ready = true;
        pthread_cond_broadcast(&b->done);
        pthread_mutex_unlock(&b->lock);
    }
}

/* Starts nt worker threads on b (the caller may work too). */
static void batch_start(Batch *b, int nt)
{
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->done, NULL);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    /* LLVM's optimiser recurses deeply on big unrolled bodies */
    pthread_attr_setstacksize(&attr, (size_t)64 << 20);
    for (int i = 0; i < nt && i < 64; i++)
        if (pthread_create(&b->th[b->started], &attr, worker, b) == 0)
            b->started++;
    pthread_attr_destroy(&attr);
}

static void batch_join(Batch *b)
{
    if (!b->started) /* no thread could start: the caller does the work */
        worker(b);
    for (int i = 0; i < b->started; i++)
        pthread_join(b->th[i], NULL);
    pthread_cond_destroy(&b->done);
    pthread_mutex_destroy(&b->lock);
}

/* Waits until a worker of an asynchronous batch is done with c. */
static void batch_wait(Batch *b, const Cand *c)
{
    pthread_mutex_lock(&b->lock);
    while (!c->ready)
        pthread_cond_wait(&b->done, &b->lock);
    pthread_mutex_unlock(&b->lock);
}

static void run_batch(Tuner *T, Cand **c, int n, bool schedule_only)
{
    Batch b = {.T = T, .c = c, .n = n, .schedule_only = schedule_only};
    int nt = T->jobs < n ? T->jobs : n;
    batch_start(&b, nt - 1);
    worker(&b);
    batch_join(&b);
}

static void prepare_batch(Tuner *T, Cand **c, int n) { run_batch(T, c, n, false); }

/* ---- measuring ---- */

/* One evaluation: the planted measurement of a test, or the harness on the
 * compilation made beforehand (x), or compiled now (x NULL).  x stays the caller's. */
static int measure(Tuner *T, const Kernel *k, const Kernel *u, const RunOptions *ro, RtResult *r, RtExec *x,
                   Diags *d)
{
    if (T->o->measure)
        return T->o->measure(T->o->measure_ctx, T->dev, k, u, ro, r, d);
    if (x)
        return rt_evaluate_exec(T->dev, x, k, u, ro, r, d);
    return rt_evaluate(T->dev, k, u, ro, r, d);
}

static void record(Tuner *T, const Cand *c, const RtResult *fin, double compile_ms, Diags *d)
{
    bool final = fin != NULL;
    if (!T->db)
        return;
    TuneRecord r;
    memset(&r, 0, sizeof r);
    r.key = T->key;
    r.schedule = c->sched;
    r.params = c->params;
    r.median_ms = c->median;
    r.min_ms = c->min;
    r.max_ms = c->max;
    r.gflops = c->gflops;
    r.compile_ms = compile_ms;
    r.valid = c->valid;
    r.rel_error = c->rel_error;
    r.status = c->status;
    r.final = final;
    r.created = (double)time(NULL);
    StrBuf feat = {0};
    if (c->work > 0)
        tm_features_text(c->feat, c->work, &feat);
    r.features = feat.s;
    if (fin) {
        r.reps = fin->time.reps;
        if (fin->has_base) {
            r.base_call = fin->base_call;
            r.base_median_ms = fin->base_time.median;
            r.base_min_ms = fin->base_time.min;
            r.base_max_ms = fin->base_time.max;
            r.base_gflops = fin->base_gflops;
            r.base_reps = fin->base_time.reps;
        }
    }
    Diags q;
    diag_init(&q);
    if (!tunedb_add(T->db, &r, &q) && !T->o->quiet)
        fprintf(stderr, "perfc: warning: %s", q.text.s ? q.text.s : "the tuning database refused a row\n");
    diag_free(&q);
    sb_free(&feat);
    (void)d;
}

static RunOptions cand_options(const Tuner *T, double min_time, uint64_t seed, const char *compare)
{
    RunOptions ro;
    rt_options_init(&ro);
    ro.target = T->target;
    ro.threads = T->o->threads;
    ro.compare = compare;
    ro.seed = seed;
    ro.min_time_s = min_time;
    ro.checks = 2;
    ro.verbose = T->o->verbose;
    return ro;
}

static bool stopped(const Tuner *T)
{
    return T->o->stop && *T->o->stop;
}

/* A candidate that failed to run (not one that ran and was invalid): a note through
 * the progress callback, so the CLI's renderer puts it above its status line; on
 * stderr when the caller gave no callback. */
static void note_failed(Tuner *T, const char *params, const char *why)
{
    StrBuf b = {0};
    sb_printf(&b, "candidate %s failed: %s", params, why);
    if (T->prog)
        progress_emit(T->prog, &(ProgEvent){.phase = PROG_SEARCH, .kind = PROG_NOTE, .what = b.s, .eta_s = -1});
    else
        fprintf(stderr, "perfc: %s", b.s);
    sb_free(&b);
}

/* One more candidate measured: the progress event and the trace. */
static void progress(Tuner *T, const Cand *c)
{
    TuneResult *res = T->res;
    double el = now_seconds() - T->t0;
    res->trace = xrealloc(res->trace, sizeof *res->trace * (size_t)(res->ntrace + 1));
    res->trace[res->ntrace++] =
        (TunePoint){.t_s = el, .ms = c->valid ? c->median : 0, .best_ms = T->best ? T->best->median : 0};
    if (!T->prog)
        return;
    int done = res->measured, total = T->total;
    double eta = done ? el / done * (total - done) : -1;
    double left = (T->o->time_limit > 0 ? T->o->time_limit : 300) - el;
    if (eta > left)
        eta = left > 0 ? left : 0;
    ProgEvent e = {.phase = PROG_SEARCH, .kind = PROG_TICK, .done = done, .total = total, .eta_s = eta,
                   .what = c->params, .value_ms = c->valid ? c->median : 0, .lib = T->o->compare};
    if (T->best) {
        e.best_ms = T->best->median;
        e.ratio = T->lib_ms > 0 ? T->lib_ms / T->best->median : 0;
    }
    progress_emit(T->prog, &e);
}

static void note_reason(Tuner *T, const char *why)
{
    char r[96];
    snprintf(r, sizeof r, "%s", why);
    char *nl = strchr(r, '\n');
    if (nl)
        *nl = 0;
    for (int i = 0; i < T->nreasons; i++)
        if (!strcmp(T->reasons[i].why, r)) {
            T->reasons[i].n++;
            return;
        }
    if (T->nreasons < 8) {
        snprintf(T->reasons[T->nreasons].why, sizeof T->reasons[0].why, "%s", r);
        T->reasons[T->nreasons++].n = 1;
    }
}

/* ---- resuming an interrupted search ---- */

static void keep_stored(void *ctx, const TuneRecord *r)
{
    Tuner *T = ctx;
    if (strcmp(r->key.id, T->key.id) || r->final)
        return;
    if (T->nstored == T->capstored) {
        T->capstored = T->capstored ? 2 * T->capstored : 64;
        T->stored = xrealloc(T->stored, sizeof *T->stored * (size_t)T->capstored);
    }
    struct Stored *x = &T->stored[T->nstored++];
    x->params = xstrdup(r->params);
    x->sched = xstrdup(r->schedule);
    x->valid = r->valid;
    x->status = r->status;
    x->median = r->median_ms;
    x->min = r->min_ms;
    x->max = r->max_ms;
    x->gflops = r->gflops;
    x->rel_error = r->rel_error;
    x->compile_ms = r->compile_ms;
}

/* A candidate that the interrupted search already measured takes its stored
 * result (same key: same kernel, sizes, device, threads and perfc), so resuming
 * costs no measurement twice.  Only the measurements: the winner is re-validated
 * and re-timed by the final run as in any search. */
static bool resume_from_store(Tuner *T, Cand *x, const ParamChoice *ch)
{
    if (!T->nstored)
        return false;
    StrBuf s = {0};
    tune_text(T->in, &T->sp.t[x->t], ch, T->sp.t[x->t].nparams, &s);
    const char *sched = s.s ? s.s : "";
    for (int i = 0; i < T->nstored; i++) {
        const struct Stored *y = &T->stored[i];
        if (strcmp(y->params, x->params) || strcmp(y->sched, sched))
            continue;
        x->measured = true;
        x->stored = true;
        x->valid = y->valid;
        x->status = y->status;
        x->median = y->median;
        x->min = y->min;
        x->max = y->max;
        x->gflops = y->gflops;
        x->rel_error = y->rel_error;
        x->compile_ms = y->compile_ms;
        x->sched = s.s ? s.s : xstrdup("");
        if (y->status == 2)
            T->res->invalid++;
        else if (y->status != 0)
            T->res->failed++;
        return true;
    }
    sb_free(&s);
    return false;
}

/* Measures the prepared candidates of a batch, one at a time. */
/* Stops the workers of an asynchronous batch from taking more candidates; returns how
 * many they took (those are waited for before being dropped). */
static int batch_cancel(Batch *b)
{
    pthread_mutex_lock(&b->lock);
    int taken = b->next < b->n ? b->next : b->n;
    b->next = b->n;
    pthread_mutex_unlock(&b->lock);
    return taken;
}

/* On a GPU, the library is timed while the first batch compiles: the workers run
 * NVRTC on the host and the device would wait for them.  The same evaluation draws
 * the input sets and computes their references into the tuner's cache, so the
 * first candidate reuses them instead of computing them after its compile.  (On a
 * CPU the baseline would share the cores with the compilers, so it stays beside
 * the first candidate.) */
static void lib_alone(Tuner *T)
{
    if (!T->o->compare || T->lib_ms > 0 || !T->dev || T->o->measure || T->lib_tried)
        return;
    RunOptions ro = cand_options(T, T->o->cand_min_time_s > 0 ? T->o->cand_min_time_s : 0.05, T->o->seed,
                                 T->o->compare);
    ro.baseline_only = true;
    ro.refs = T->refs;
    RtResult *r = xcalloc(1, sizeof *r);
    Diags q;
    diag_init(&q);
    int rc = rt_evaluate(T->dev, T->u, T->u, &ro, r, &q);
    /* a library that cannot run is tried no more; the final run says why */
    T->lib_tried = true;
    if (rc == 0 && r->has_base && r->base_time.median > 0)
        T->lib_ms = T->res->lib_ms = r->base_time.median;
    T->res->spent.setup += r->spent.setup;
    T->res->spent.inputs += r->spent.inputs;
    T->res->spent.golden += r->spent.golden;
    T->res->spent.baseline += r->spent.baseline;
    diag_free(&q);
    free(r);
}

/* Measures the prepared candidates of a batch, one at a time.  ab: the batch's
 * workers when they still compile (GPU), each candidate waited for in turn. */
static int measure_batch(Tuner *T, Cand **c, int n, int budget, int total, Batch *ab, Diags *d)
{
    T->total = total;
    const Kernel *u = T->u;
    int taken = n;
    bool cancelled = false;
    if (ab)
        lib_alone(T);
    for (int i = 0; i < n; i++) {
        Cand *x = c[i];
        double limit = T->o->time_limit > 0 ? T->o->time_limit : 300;
        bool over = T->res->measured >= budget || (T->res->measured && now_seconds() - T->t0 >= limit) ||
                    (T->res->measured && stopped(T));
        if (ab && over && !cancelled) {
            taken = batch_cancel(ab);
            cancelled = true;
        }
        if (ab && i < taken) { /* the time waited for a compilation: what overlapping did not hide */
            double tw = now_seconds();
            batch_wait(ab, x);
            T->res->spent.compile += now_seconds() - tw;
        }
        if (!x->k && x->why) {
            T->res->pruned++;
            note_reason(T, x->why);
            continue;
        }
        if (!x->k)
            continue;
        if (over) {
            if (x->x)
                T->dev->release(T->dev, x->x);
            x->x = NULL;
            cand_drop(x);
            continue;
        }
        ParamChoice ch[TUNE_MAX_PARAMS];
        choices_of(T, x, ch);
        if (resume_from_store(T, x, ch)) {
            if (x->x)
                T->dev->release(T->dev, x->x);
            x->x = NULL;
            ir_free(x->k);
            x->k = NULL;
            T->res->measured++;
            T->res->resumed++;
            if (x->valid && (!T->best || x->median < T->best->median))
                T->best = x;
            progress(T, x);
            continue;
        }
        /* The library is timed once, beside the first candidate that validates, so
         * the progress line can say how the best so far compares with it. */
        bool with_lib = T->o->compare && T->lib_ms <= 0 && T->dev && !T->o->measure && !T->lib_tried;
        RunOptions ro = cand_options(T, T->o->cand_min_time_s > 0 ? T->o->cand_min_time_s : 0.05, T->o->seed,
                                     with_lib ? T->o->compare : NULL);
        if (x->mod) { /* compiled by a worker: loaded here, on the device's thread */
            Diags q;
            diag_init(&q);
            x->x = T->dev->adopt(T->dev, x->mod, &q);
            x->mod = NULL;
            if (!x->x) {
                x->measured = true;
                x->status = 1;
                T->res->failed++;
                T->res->measured++;
                if (!T->o->quiet && q.text.s)
                    note_failed(T, x->params, q.text.s);
                diag_free(&q);
                cand_drop(x);
                progress(T, x);
                continue;
            }
            diag_free(&q);
        }
        /* the best so far: a clearly slower candidate's timing stops early (RunOptions) */
        ro.stop_above_ms = T->best ? T->best->median : 0;
        ro.refs = T->refs;
        RtResult *r = xcalloc(1, sizeof *r);
        Diags q;
        diag_init(&q);
        int rc = measure(T, x->k, u, &ro, r, x->x, &q);
        if (with_lib && rc != 0 && rc != 2) {
            /* the library could not be run (none built in, a wrong kind of device): the
             * final run will say so; the candidate is measured alone */
            T->lib_tried = true;
            ro.compare = NULL;
            diag_free(&q);
            diag_init(&q);
            memset(r, 0, sizeof *r);
            rc = measure(T, x->k, u, &ro, r, x->x, &q);
        }
        if (x->x)
            T->dev->release(T->dev, x->x);
        x->x = NULL;
        T->res->stopped_early += r->stopped_early;
        x->measured = true;
        x->status = rc;
        T->res->spent.setup += r->spent.setup;
        T->res->spent.inputs += r->spent.inputs;
        T->res->spent.golden += r->spent.golden;
        T->res->spent.checks += r->spent.checks;
        T->res->spent.timing += r->spent.timing;
        T->res->spent.baseline += r->spent.baseline;
        /* a time that is no number cannot rank a candidate */
        x->valid = rc == 0 && r->valid && isfinite(r->time.median) && r->time.median >= 0;
        x->rel_error = r->rel_error;
        if (with_lib && rc == 0) {
            T->lib_tried = true;
            if (r->has_base && r->base_time.median > 0)
                T->lib_ms = T->res->lib_ms = r->base_time.median;
        }
        if (x->valid) {
            x->median = r->time.median;
            x->min = r->time.min;
            x->max = r->time.max;
            x->gflops = r->gflops;
        }
        if (rc == 2)
            T->res->invalid++;
        else if (rc != 0)
            T->res->failed++;
        if (rc != 0 && rc != 2 && !T->o->quiet && q.text.s)
            note_failed(T, x->params, q.text.s);
        diag_free(&q);
        StrBuf s = {0};
        tune_text(T->in, &T->sp.t[x->t], ch, T->sp.t[x->t].nparams, &s);
        x->sched = s.s ? s.s : xstrdup("");
        double tdb = now_seconds();
        record(T, x, NULL, x->compile_ms, d);
        T->res->spent.db += now_seconds() - tdb;
        if (T->use_model && x->valid && x->work > 0)
            tm_add(&T->model, x->feat, x->work, x->median, T->group);
        T->res->measured++;
        if (x->valid && (!T->best || x->median < T->best->median))
            T->best = x;
        free(r);
        ir_free(x->k);
        x->k = NULL;
        progress(T, x);
    }
    return 0;
}

/* ---- proposing candidates ---- */

static bool enum_next(Tuner *T, Cand *c)
{
    while (!T->enum_done) {
        const TuneTemplate *t = &T->sp.t[T->enum_t];
        c->t = T->enum_t;
        memcpy(c->idx, T->enum_idx, sizeof c->idx);
        /* advance like an odometer, the last parameter fastest */
        int p = t->nparams - 1;
        while (p >= 0 && ++T->enum_idx[p] == t->ncands[p])
            T->enum_idx[p--] = 0;
        if (p < 0) {
            memset(T->enum_idx, 0, sizeof T->enum_idx);
            if (++T->enum_t == T->sp.n)
                T->enum_done = true;
        }
        return true;
    }
    return false;
}

static void random_cand(Tuner *T, Cand *c)
{
    c->t = (int)(rng_next(&T->rng) % (uint64_t)T->sp.n);
    const TuneTemplate *t = &T->sp.t[c->t];
    for (int i = 0; i < t->nparams; i++)
        c->idx[i] = (int)(rng_next(&T->rng) % (uint64_t)t->ncands[i]);
}

/* Whether the kernel as written is measured after the search: unless a template of
 * the space is already the empty schedule, or one run of it would take too long.
 * The estimate divides the kernel's work by a slow rate (a scalar loop that misses
 * the cache: 0.25 GFLOP/s per CPU thread, 200 GFLOP/s on a GPU), so a kernel that
 * could run fast enough to win is measured; a 1024^3 GEMM without a schedule, about
 * 2 s a run on two quiet cores and three runs at least, is not (the report says so). */
static bool plain_policy(Tuner *T, TuneResult *res)
{
    for (int i = 0; i < T->sp.n; i++)
        if (!T->sp.t[i].rule && T->sp.t[i].s->nitems == 0)
            return !(T->plain_in_space = true);
    RtWork w;
    Diags q;
    diag_init(&q);
    bool ok = rt_analyse(T->u, &w, &q);
    diag_free(&q);
    if (!ok)
        return true;
    bool gpu = target_is_gpu(T->tgt);
    double est = (w.flops + w.execs) / (gpu ? 2e11 : 2.5e8 * T->threads);
    if (est <= 1.0)
        return true;
    snprintf(res->plain_note, sizeof res->plain_note,
             "not measured: without a schedule one run could take up to about %.0f s (%.3g operations at the rate "
             "of a scalar loop), three runs at least",
             est, w.flops + w.execs);
    return false;
}

static int cmp_time(const void *a, const void *b)
{
    const Cand *x = *(Cand *const *)a, *y = *(Cand *const *)b;
    return (x->median > y->median) - (x->median < y->median);
}

/* A child of the good candidates measured so far: tournament selection among the
 * best eight, uniform crossover when both parents share a template, then one or
 * more mutations, each a step to a neighbouring candidate (sizes are listed in
 * order, so neighbours are similar) or, sometimes, a jump anywhere. */
static void evolve(Tuner *T, Cand **pool, int np, Cand *c)
{
    int top = np < 8 ? np : 8;
    const Cand *a = pool[rng_next(&T->rng) % (uint64_t)top];
    const Cand *b = pool[rng_next(&T->rng) % (uint64_t)top];
    c->t = a->t;
    memcpy(c->idx, a->idx, sizeof c->idx);
    const TuneTemplate *t = &T->sp.t[c->t];
    if (b->t == a->t)
        for (int i = 0; i < t->nparams; i++)
            if (rng_next(&T->rng) & 1)
                c->idx[i] = b->idx[i];
    if (!t->nparams)
        return;
    int muts = 1 + (int)(rng_next(&T->rng) % 2);
    for (int m = 0; m < muts; m++) {
        int p = (int)(rng_next(&T->rng) % (uint64_t)t->nparams);
        if (t->ncands[p] < 2)
            continue;
        if (rng_uniform(&T->rng, 0, 1) < 0.75) {
            int step = (rng_next(&T->rng) & 1) ? 1 : -1;
            int v = c->idx[p] + step;
            if (v < 0 || v >= t->ncands[p])
                v = c->idx[p] - step;
            c->idx[p] = v;
        } else {
            c->idx[p] = (int)(rng_next(&T->rng) % (uint64_t)t->ncands[p]);
        }
    }
}

/* An unseen candidate one step from c (one parameter moved to a neighbouring
 * candidate), or false when every neighbour was tried.  Sizes are listed in
 * order, so this walks downhill on the smooth part of the cost. */
static bool neighbour(Tuner *T, const Cand *c, Cand *out)
{
    const TuneTemplate *t = &T->sp.t[c->t];
    int n = 2 * t->nparams;
    if (!n)
        return false;
    int start = (int)(rng_next(&T->rng) % (uint64_t)n);
    for (int i = 0; i < n; i++) {
        int m = (start + i) % n, p = m / 2, v = c->idx[p] + (m % 2 ? 1 : -1);
        if (v < 0 || v >= t->ncands[p])
            continue;
        *out = *c;
        out->idx[p] = v;
        uint64_t h = cand_hash(out, t);
        bool seen = false;
        for (int j = (int)(h % (uint64_t)T->capseen); T->seen[j]; j = (j + 1) % T->capseen)
            if (T->seen[j] == h) {
                seen = true;
                break;
            }
        if (!seen)
            return true;
    }
    return false;
}

static int propose(Tuner *T, bool exhaustive, Cand **out, int want)
{
    int n = 0;
    if (exhaustive) {
        Cand c;
        memset(&c, 0, sizeof c);
        while (n < want && enum_next(T, &c)) {
            Cand *x = cand_push(T, &c);
            if (x)
                out[n++] = x;
        }
        return n;
    }
    /* parents: valid measured candidates, fastest first */
    Cand **pool = xmalloc(sizeof *pool * (size_t)(T->nall + 1));
    int np = 0;
    for (int i = 0; i < T->nall; i++)
        if (T->all[i]->valid)
            pool[np++] = T->all[i];
    qsort(pool, (size_t)np, sizeof *pool, cmp_time);
    int tries = 0;
    while (n < want && tries++ < 400 * want) {
        Cand c;
        memset(&c, 0, sizeof c);
        if (T->nall == 0 && n < T->sp.n) {
            c.t = n; /* every template's defaults first */
        } else if (np < 4 || rng_uniform(&T->rng, 0, 1) < 0.15) {
            random_cand(T, &c);
        } else if (rng_uniform(&T->rng, 0, 1) < 0.5 && neighbour(T, pool[0], &c)) {
            /* a step from the best so far (local search) */
        } else {
            evolve(T, pool, np, &c);
        }
        Cand *x = cand_push(T, &c);
        if (x)
            out[n++] = x;
    }
    free(pool);
    return n;
}

/* ---- the cost model: ranking before compiling ---- */

static uint64_t key_group(const char *id) { return tunedb_hash(id, strlen(id), TUNEDB_HASH0); }

/* A database row the model may learn from: a valid candidate of another key on
 * this target, device and thread count, with features. */
static void model_row(void *ctx, const TuneRecord *r)
{
    Tuner *T = ctx;
    if (!r->valid || r->final || r->median_ms <= 0 || !r->features || !*r->features)
        return;
    if (strcmp(r->key.target, T->key.target) || strcmp(r->key.device, T->key.device) ||
        r->key.threads != T->key.threads || !strcmp(r->key.id, T->key.id))
        return;
    double f[TM_NFEAT], w;
    if (tm_features_parse(r->features, f, &w))
        tm_add(&T->model, f, w, r->median_ms, key_group(r->key.id));
}

/* Fits the model on the database's other searches; with too few rows there is no
 * model and the search keeps its usual order. */
static void model_start(Tuner *T)
{
    tm_init(&T->model);
    T->group = key_group(T->key.id);
    if (!T->o->use_model || !T->db)
        return;
    Diags q;
    diag_init(&q);
    tunedb_foreach(T->db, true, NULL, model_row, T, &q);
    diag_free(&q);
    tm_thin(&T->model, 3000);
    int rows = T->model.n;
    if (!tm_fit(&T->model)) {
        if (rows)
            snprintf(T->res->model, sizeof T->res->model,
                     "none: %d usable rows in the database, %d needed (candidates in the usual order)", rows,
                     TM_MIN_ROWS);
        return;
    }
    T->use_model = true;
    StrBuf b = {0};
    tm_describe(&T->model, &b);
    snprintf(T->res->model, sizeof T->res->model, "%s", b.s ? b.s : "");
    sb_free(&b);
}

static int cmp_pred(const void *a, const void *b)
{
    const Cand *x = *(Cand *const *)a, *y = *(Cand *const *)b;
    return (x->pred > y->pred) - (x->pred < y->pred);
}

/* Proposes four times as many candidates as a batch needs by the usual rules and
 * twelve times as many at random (the whole space when it fits the budget),
 * schedules them on every core (IR only), and hands out the
 * `want` the model predicts fastest; the rest wait in a reserve ranked with the
 * next round's proposals.  The model is refitted as this search's own measurements
 * come in (every eight). */
static int propose_ranked(Tuner *T, bool exhaustive, Cand **out, int want, int *fitted_at)
{
    if (T->model.n >= *fitted_at + 8) {
        tm_fit(&T->model);
        *fitted_at = T->model.n;
    }
    int pool = exhaustive ? (int)T->sp.size : 4 * want;
    if (pool < want)
        pool = want;
    /* with a model to filter them, random candidates are cheap: they let it look
     * across the whole space, not only near the parents */
    int extra = exhaustive ? 0 : 12 * want;
    Cand **fresh = xmalloc(sizeof *fresh * (size_t)(pool + extra));
    bool first_round = T->nall == 0;
    int nf = propose(T, exhaustive, fresh, pool);
    /* the first template at its defaults (for a contraction without a schedule, the
     * default schedule: the machine's blocking) is measured first whatever the model
     * says, so a search is never worse than what `--run` gives */
    Cand *dflt = NULL;
    if (first_round && nf > 0 && fresh[0]->t == 0) {
        dflt = fresh[0];
        for (int i = 0; i < T->sp.t[0].nparams; i++)
            if (dflt->idx[i])
                dflt = NULL;
    }
    for (int tries = 0; extra > 0 && tries < 50 * extra; tries++) {
        Cand c;
        memset(&c, 0, sizeof c);
        random_cand(T, &c);
        Cand *x = cand_push(T, &c);
        if (x) {
            fresh[nf++] = x;
            extra--;
        }
    }
    run_batch(T, fresh, nf, true);
    T->reserve = xrealloc(T->reserve, sizeof *T->reserve * (size_t)(T->nreserve + nf + 1));
    for (int i = 0; i < nf; i++) {
        if (!fresh[i]->k) { /* pruned: counted now, never compiled */
            if (fresh[i]->why) {
                T->res->pruned++;
                note_reason(T, fresh[i]->why);
            }
            continue;
        }
        T->reserve[T->nreserve++] = fresh[i];
    }
    free(fresh);
    for (int i = 0; i < T->nreserve; i++)
        T->reserve[i]->pred = tm_predict(&T->model, T->reserve[i]->feat);
    qsort(T->reserve, (size_t)T->nreserve, sizeof *T->reserve, cmp_pred);
    for (int i = 1; dflt && i < T->nreserve; i++)
        if (T->reserve[i] == dflt) {
            memmove(T->reserve + 1, T->reserve, sizeof *T->reserve * (size_t)i);
            T->reserve[0] = dflt;
            break;
        }
    /* Each template's best-ranked candidate goes ahead of the ranking's other picks
     * while explore_left lasts (half the budget): a model fitted on other kernels
     * can rank a whole template too low, and a structural choice (wgmma or mma.sync,
     * split or not) should be measured once before parameters are refined.  Seen on
     * the batched product: a budget of 12 spent on nine SIMT candidates at 16 ms and
     * no mma.sync one. */
    int n = 0;
    for (int i = 0; i < T->nreserve && n < want && T->explore_left > 0; i++) {
        Cand *c = T->reserve[i];
        if (c->t >= TUNE_MAX_TEMPLATES || T->handed[c->t]) continue;
        T->handed[c->t] = true;
        T->explore_left--;
        out[n++] = c;
        T->reserve[i] = NULL;
    }
    int keep = 0;
    for (int i = 0; i < T->nreserve; i++) {
        Cand *c = T->reserve[i];
        if (!c) continue;
        if (n < want) {
            if (c->t < TUNE_MAX_TEMPLATES) T->handed[c->t] = true;
            out[n++] = c;
        } else {
            T->reserve[keep++] = c;
        }
    }
    T->nreserve = keep;
    /* the reserve keeps its best 256: the tail is unlikely ever to be chosen */
    while (T->nreserve > 256) {
        Cand *c = T->reserve[--T->nreserve];
        cand_drop(c);
    }
    return n;
}

/* ---- the key and the report ---- */

void tune_make_key(const AstKernel *ast, const Kernel *k, const char *target, const char *device, int threads,
                   TuneKey *key)
{
    memset(key, 0, sizeof *key);
    snprintf(key->kernel, sizeof key->kernel, "%s", ast->name);
    StrBuf b = {0};
    ast_print_kernel(ast, &b);
    snprintf(key->fingerprint, sizeof key->fingerprint, "%016llx",
             (unsigned long long)tunedb_hash(b.s ? b.s : "", b.len, TUNEDB_HASH0));
    sb_free(&b);
    for (int i = 0; i < k->nparams; i++)
        sb_printf(&b, "%s%s=%lld", i ? " " : "", k->params[i].name, (long long)k->params[i].value);
    snprintf(key->shape, sizeof key->shape, "%s", b.s ? b.s : "");
    sb_free(&b);
    for (int i = 0; i < k->nbufs; i++)
        if (k->bufs[i]->kind != BUF_TEMP)
            sb_printf(&b, "%s%s:%s", b.len ? " " : "", k->bufs[i]->name, dtype_name(k->bufs[i]->dtype));
    snprintf(key->dtypes, sizeof key->dtypes, "%s", b.s ? b.s : "");
    sb_free(&b);
    snprintf(key->target, sizeof key->target, "%s", target ? target : "host");
    snprintf(key->device, sizeof key->device, "%s", device ? device : "");
    snprintf(key->version, sizeof key->version, "%s", PERFC_VERSION);
    key->threads = threads;
    tunekey_finish(key);
}

void tune_block(const char *kernel, const char *target, const char *schedule, StrBuf *out)
{
    bool gpu = target_is_gpu(target_find(target));
    sb_printf(out, "schedule %s for %s {\n", kernel, gpu ? target : "cpu");
    for (const char *p = schedule; p && *p;) {
        const char *nl = strchr(p, '\n');
        int n = nl ? (int)(nl - p) : (int)strlen(p);
        if (n)
            sb_printf(out, "  %.*s\n", n, p);
        p += n + (nl ? 1 : 0);
    }
    sb_puts(out, "}\n");
}

static void entry_from(TuneEntry *e, const Cand *c)
{
    e->params = xstrdup(c->params ? c->params : "");
    e->schedule = xstrdup(c->sched ? c->sched : "");
    e->median_ms = c->median;
    e->min_ms = c->min;
    e->max_ms = c->max;
    e->gflops = c->gflops;
    e->stored = c->stored;
}

void tune_result_free(TuneResult *r)
{
    for (int i = 0; i < r->ntop; i++) {
        free(r->top[i].params);
        free(r->top[i].schedule);
    }
    free(r->best_block);
    free(r->best_ir);
    free(r->trace);
    free(r->retime_was);
    memset(r, 0, sizeof *r);
}

static void report(const Tuner *T, const TuneResult *res, const char *db_path, FILE *f)
{
    const TuneOptions *o = T->o;
    if (o->quiet)
        return;
    FILE *tf = o->json ? stderr : f;
    fprintf(tf, "perfc tune   kernel %s   -target %s   %s   threads %d\n", T->key.kernel, T->target, T->key.shape,
            T->threads);
    if (res->from_db) {
        fprintf(tf, "database   hit: the best of %d measurements under key %s, re-validated (no search)\n",
                T->db ? tunedb_count(T->db, &T->key) : 0, T->key.id);
    } else {
        fprintf(tf, "space      %s, %d template%s, %.0f candidates", T->sp.kclass ? T->sp.kclass : "?", T->sp.n,
                T->sp.n == 1 ? "" : "s", T->sp.size);
        for (int i = 0; i < T->sp.n; i++)
            fprintf(tf, "%s%s", i ? "; " : ": ", T->sp.t[i].origin);
        if (res->resumed)
            fprintf(tf, "\nresumed    an interrupted search under key %s: %d of its measurements reused, not "
                        "re-measured",
                    T->key.id, res->resumed);
        fprintf(tf, "\nsearch     %s: %d measured, %d pruned before compiling, %d invalid, %d failed, %.1f s "
                    "(compiled on %d thread%s)\n",
                T->sp.size <= (o->budget > 0 ? o->budget : 48) ? "exhaustive" : "evolutionary", res->measured,
                res->pruned, res->invalid, res->failed, res->search_s, T->jobs, T->jobs == 1 ? "" : "s");
        if (res->interrupted || res->time_limited)
            fprintf(tf, "stopped    %s after %d of %d candidates: the best so far is the answer%s\n",
                    res->interrupted ? "by an interrupt" : "by the time limit", res->measured, T->total,
                    res->interrupted ? " (the search is not complete)" : "");
        if (res->t_within5 >= 0)
            fprintf(tf, "converged  within 5%% of the search's best after %.1f s (%d of %d measured)\n",
                    res->t_within5, res->n_within5, res->measured);
        if (res->model[0])
            fprintf(tf, "model      %s\n", res->model);
        if (res->plain_note[0])
            fprintf(tf, "as written %s\n", res->plain_note);
        if (res->stopped_early || res->ref_hits)
            fprintf(tf, "measuring  %d input sets' references reused, not recomputed; timing stopped early for %d "
                        "candidates slower than 1.5x the best so far in every run\n",
                    res->ref_hits, res->stopped_early);
        if (res->retimed) {
            fprintf(tf, "re-timed   %d contenders (within 25%% of the best, and the default), %d rounds interleaved, "
                        "%.1f s: ",
                    res->retimed, res->retime_rounds, res->retime_s);
            if (res->retime_was)
                fprintf(tf, "the winner is another than the search's fastest reading (%s)\n", res->retime_was);
            else
                fprintf(tf, "the search's winner held\n");
        }
        fprintf(tf, "profile    space %.2f s, model %.2f, proposing and scheduling %.2f, compiling %.2f; "
                    "measuring: set-up %.2f, inputs %.2f, golden %.2f, checks %.2f, timing %.2f, baseline %.2f; "
                    "database %.2f; winner %.2f\n",
                res->spent.space, res->spent.model, res->spent.schedule, res->spent.compile, res->spent.setup,
                res->spent.inputs, res->spent.golden, res->spent.checks, res->spent.timing, res->spent.baseline,
                res->spent.db, res->spent.final);
        int top = -1;
        for (int i = 0; i < T->nreasons; i++)
            if (top < 0 || T->reasons[i].n > T->reasons[top].n)
                top = i;
        if (top >= 0)
            fprintf(tf, "pruned     most often (%d): %s\n", T->reasons[top].n, T->reasons[top].why);
        if (res->ntop) {
            fprintf(tf, "top %d      %-4s %10s %10s %10s %9s  %s\n", res->ntop, "rank", "median ms", "min", "max",
                    "GFLOP/s", "parameters");
            for (int i = 0; i < res->ntop; i++)
                fprintf(tf, "           %-4d %10.4g %10.4g %10.4g %9.4g  %s%s\n", i + 1, res->top[i].median_ms,
                        res->top[i].min_ms, res->top[i].max_ms, res->top[i].gflops, res->top[i].params,
                        res->top[i].stored ? "   [stored]" : "");
        }
    }
    if (res->has_final) {
        fprintf(tf, "winner     %s\n", res->final.measured_at > 0
                                          ? "compiled and re-validated now on fresh inputs; times as stored:"
                                          : "re-validated on fresh inputs and timed again:");
        if (o->json)
            rt_report_json(&res->final, f);
        else
            rt_report_human(&res->final, tf);
    }
    if (res->best_block)
        fprintf(tf, "schedule   (paste into the .pdl)\n%s", res->best_block);
    if (T->db)
        fprintf(tf, "database   %s (%d rows under key %s)\n", db_path, tunedb_count(T->db, &T->key), T->key.id);
    fprintf(tf, "time       %.2f s in all\n", res->wall_s);
    fflush(tf);
}

/* ---- the contenders re-timed ---- */

enum { RETIME_MAX = 4, RETIME_ROUNDS = 3 };

/* On a CPU one reading of a candidate moves by 10-30% on a shared machine, so the
 * search's fastest reading is often a lucky one, and the tuned kernel came out
 * slower than the default it had beaten by a reading (NumPy suite, Zen 3: gemm_nn
 * 1000^3 and Linear 0.75-0.83 of NumPy tuned against 0.92-0.98 untuned).  The best
 * few valid candidates within a quarter of the best, and the default (the first
 * template at its first choices), are timed again in RETIME_ROUNDS rounds, each
 * round every contender once, validated as in the search (the kept references);
 * the winner is the least median of its rounds' medians.  Not on a GPU, whose
 * readings repeat within a few percent, nor with a planted measurement (tests). */
static void retime_contenders(Tuner *T)
{
    if (!T->dev || T->o->measure || target_is_gpu(T->tgt) || !T->best || stopped(T))
        return;
    Cand *con[RETIME_MAX];
    int nc = 0;
    Cand **v = xmalloc(sizeof *v * (size_t)(T->nall + 1));
    int nv = 0;
    for (int i = 0; i < T->nall; i++)
        if (T->all[i]->valid && T->all[i]->median > 0)
            v[nv++] = T->all[i];
    qsort(v, (size_t)nv, sizeof *v, cmp_time);
    for (int i = 0; i < nv && nc < RETIME_MAX - 1; i++)
        if (v[i]->median <= 1.25 * T->best->median)
            con[nc++] = v[i];
    for (int i = 0; i < nv; i++) {
        bool first = v[i]->t == 0;
        for (int p = 0; first && p < T->sp.t[0].nparams; p++)
            first = v[i]->idx[p] == 0;
        bool in = false;
        for (int j = 0; j < nc; j++)
            in |= con[j] == v[i];
        if (first && !in)
            con[nc++] = v[i];
    }
    free(v);
    if (nc < 2)
        return;
    double t0 = now_seconds();
    RtExec *x[RETIME_MAX] = {0};
    Kernel *k[RETIME_MAX] = {0};
    double ms[RETIME_MAX][RETIME_ROUNDS];
    bool ok[RETIME_MAX];
    for (int i = 0; i < nc; i++) {
        ParamChoice ch[TUNE_MAX_PARAMS];
        choices_of(T, con[i], ch);
        Diags q;
        diag_init(&q);
        Kernel *s = tune_apply(T->in, &T->sp.t[con[i]->t], ch, T->sp.t[con[i]->t].nparams, NULL, &q);
        k[i] = s ? tune_lower(s, T->tgt, &q) : NULL;
        ir_free(s);
        x[i] = k[i] ? T->dev->compile(T->dev, k[i], T->target, &q) : NULL;
        ok[i] = x[i] != NULL;
        diag_free(&q);
    }
    int rounds = 0;
    for (; rounds < RETIME_ROUNDS && !stopped(T); rounds++)
        for (int i = 0; i < nc; i++) {
            if (!ok[i])
                continue;
            RunOptions ro = cand_options(T, T->o->cand_min_time_s > 0 ? T->o->cand_min_time_s : 0.05, T->o->seed,
                                         NULL);
            ro.refs = T->refs;
            RtResult res;
            Diags q;
            diag_init(&q);
            int rc = measure(T, k[i], T->u, &ro, &res, x[i], &q);
            diag_free(&q);
            ok[i] = rc == 0 && res.valid && res.time.median > 0;
            ms[i][rounds] = res.time.median;
        }
    int win = -1;
    double best = 0;
    for (int i = 0; i < nc && rounds > 0; i++) {
        RtStats st;
        if (!ok[i])
            continue;
        rt_stats(ms[i], rounds, &st);
        if (win < 0 || st.median < best)
            win = i, best = st.median;
    }
    T->res->retimed = nc;
    T->res->retime_rounds = rounds;
    T->res->retime_s = now_seconds() - t0;
    if (win >= 0 && con[win] != T->best) {
        T->res->retime_was = xstrdup(T->best->params ? T->best->params : "");
        T->best = con[win];
    }
    for (int i = 0; i < nc; i++) {
        if (x[i])
            T->dev->release(T->dev, x[i]);
        ir_free(k[i]);
    }
}

/* ---- final validation ---- */

/* Runs the concrete schedule `sched` (text) with fresh inputs and the baseline. */
static int final_run(Tuner *T, const TuneTemplate *tmpl, const ParamChoice *ch, int nch, uint64_t seed, double min_time,
                     bool validate_only, Diags *d)
{
    TuneResult *res = T->res;
    Kernel *k = tune_apply(T->in, tmpl, ch, nch, NULL, d);
    if (!k)
        return 1;
    const Kernel *u = T->u;
    StrBuf ir = {0};
    ir_print_kernel(k, &ir);
    free(res->best_ir);
    res->best_ir = ir.s;
    /* the back end's copy: lowered for the target */
    Kernel *low = tune_lower(k, T->tgt, d);
    ir_free(k);
    if (!(k = low))
        return 1;
    RunOptions ro = cand_options(T, min_time, seed, T->o->compare);
    ro.progress = T->prog;
    progress_emit(T->prog, &(ProgEvent){.phase = PROG_FINAL, .kind = PROG_BEGIN, .what = "the winner on fresh inputs",
                                        .eta_s = -1});
    if (validate_only) {
        ro.validate_only = true;
        ro.checks = 1;
    }
    int rc = measure(T, k, u, &ro, &res->final, NULL, d);
    res->has_final = rc == 0 || rc == 2;
    /* the result points at k for printing: it lives until the report is out */
    if (T->fk)
        ir_free(T->fk);
    T->fk = k;
    return rc;
}

/* Puts a final row's times (the winner's and the baseline's, measured together when
 * it won) into a result that was just re-validated without timing. */
static void stored_times(RtResult *r, const TuneRecord *fin, const char *compare)
{
    r->time = (RtStats){.median = fin->median_ms, .min = fin->min_ms, .max = fin->max_ms, .reps = fin->reps};
    r->gflops = r->work.flops / (fin->median_ms * 1e6);
    r->gbps = r->work.bytes / (fin->median_ms * 1e6);
    r->measured_at = fin->created;
    snprintf(r->cache, sizeof r->cache, "caches flushed before each repetition (when measured)");
    if (!compare)
        return;
    r->compare = true;
    snprintf(r->base_name, sizeof r->base_name, "%s", compare);
    snprintf(r->base_call, sizeof r->base_call, "%s", fin->base_call);
    r->has_base = true;
    r->base_time = (RtStats){.median = fin->base_median_ms, .min = fin->base_min_ms, .max = fin->base_max_ms,
                             .reps = fin->base_reps};
    r->base_gflops = fin->base_gflops;
    r->vs_baseline = fin->base_gflops > 0 ? r->gflops / fin->base_gflops : 0;
}

/* A schedule from the database (schedule_print text). */
static AstSchedule *parse_stored(Tuner *T, const char *text, Diags *d)
{
    Source *src = arena_alloc(T->arena, sizeof *src);
    src->path = "<tuning database>";
    src->text = arena_strdup(T->arena, text);
    src->len = strlen(text);
    AstSchedule *s = parse_schedule_text(T->arena, src, d);
    if (s)
        s->kernel = T->in->ast->name;
    return s;
}

/* How long the search took to come within 5% of its own best (the figure the cost
 * model is judged by, docs/autotune.md). */
static void within5(TuneResult *res)
{
    res->t_within5 = -1;
    res->n_within5 = 0;
    double best = 0;
    for (int i = 0; i < res->ntrace; i++)
        if (res->trace[i].ms > 0 && (best <= 0 || res->trace[i].ms < best))
            best = res->trace[i].ms;
    for (int i = 0; best > 0 && i < res->ntrace; i++)
        if (res->trace[i].best_ms > 0 && res->trace[i].best_ms <= 1.05 * best) {
            res->t_within5 = res->trace[i].t_s;
            res->n_within5 = i + 1;
            return;
        }
}

int tune_kernel(const TuneInput *in, const TuneOptions *o, TuneResult *res, Diags *d)
{
    memset(res, 0, sizeof *res);
    Tuner TT, *T = &TT;
    memset(T, 0, sizeof *T);
    T->in = in;
    T->o = o;
    T->res = res;
    T->t0 = now_seconds();
    if (!(T->tgt = target_parse(o->target, d)))
        return 1;
    T->target = T->tgt->name;
    T->arena = arena_new();
    rng_seed(&T->rng, o->seed ^ 0x7475e3ull);
    T->threads = o->threads > 0 ? o->threads : rt_cpu_count();
    T->jobs = o->jobs > 0 ? o->jobs : rt_cpu_count();
    if (T->jobs > 64)
        T->jobs = 64;
    T->lanes = tune_vector_lanes(T->tgt, DT_F32);
    {
        int64_t llc = rt_llc_bytes();
        T->caches[0] = 32 << 10;
        T->caches[1] = 1 << 20;
        T->caches[2] = llc > T->caches[1] ? (double)llc : 32 << 20;
    }
    TuneOptions oo = *o;
    if (oo.progress < 0)
        oo.progress = isatty(2);
    T->o = o = &oo;
    if (o->prog) {
        T->prog = o->prog;
    } else if (o->progress && !o->quiet) {
        progress_term_init(&T->term, stderr, 1);
        T->own_prog = (Progress){progress_term_fn, &T->term};
        T->prog = &T->own_prog;
    }
    FILE *out = o->out ? o->out : stdout;
    int rc = 1;
    char *db_path = NULL;
    bool own_dev = false, searched = false;

    Kernel *u = tune_apply(in, NULL, NULL, 0, NULL, d);
    if (!u)
        goto done;
    if (!ir_all_bound(u, d))
        goto done;
    /* PERFC_TUNE_SPACE=1: print the templates and stop (to read or copy a space) */
    if (getenv("PERFC_TUNE_SPACE") && *getenv("PERFC_TUNE_SPACE") == '1') {
        if (!tune_space(in, u, T->tgt, T->arena, &T->sp, d))
            goto done;
        for (int i = 0; i < T->sp.n; i++) {
            StrBuf b = {0};
            const TuneTemplate *t = &T->sp.t[i];
            if (t->rule) {
                /* as a schedule with parameters, like a kernel's own template: the
                 * parameters with their candidates, then the statements the rule
                 * records at its defaults (which name the parameters) */
                StrBuf x = {0};
                tune_text(in, t, NULL, 0, &x);
                sb_printf(&b, "schedule %s {\n", in->ast->name);
                for (int p = 0; p < t->rule->nparams; p++) {
                    sb_printf(&b, "  param %s in [", t->rule->names[p]);
                    for (int v = 0; v < t->rule->ncands[p]; v++)
                        sb_printf(&b, "%s%s", v ? ", " : "", t->rule->values[p][v]);
                    sb_puts(&b, "]\n");
                }
                for (const char *l = x.s ? x.s : ""; *l;) {
                    const char *nl = strchr(l, '\n');
                    int len = nl ? (int)(nl - l) : (int)strlen(l);
                    if (strncmp(l, "param ", 6))
                        sb_printf(&b, "  %.*s\n", len, l);
                    l += len + (nl ? 1 : 0);
                }
                sb_puts(&b, "}\n");
                sb_free(&x);
            } else {
                ast_print_schedule(t->s, &b);
            }
            fprintf(out, "# template %d of %d: %s, %s\n%s\n", i + 1, T->sp.n, T->sp.kclass, T->sp.t[i].origin,
                    b.s ? b.s : "");
            sb_free(&b);
        }
        rc = 0;
        goto done;
    }

    T->dev = o->device;
    if (!T->dev && !o->measure) {
        int orc = 3;
        T->dev = rt_device_open(T->target, &orc, d);
        if (!T->dev) {
            rc = orc;
            goto done;
        }
        own_dev = true;
    }
    /* LLVM compilations are independent (cg_llvm.h); a GPU context belongs to the
     * thread that made it, so CUDA modules are loaded by the measuring thread. */
    T->parallel_compile = T->dev && !o->measure && !strcmp(T->dev->name, "cpu");
    /* a GPU device that loads modules compiled elsewhere: NVRTC on the other cores
     * while candidates are measured (the measuring thread needs no core of its own
     * beyond the one it runs on); NVRTC is loaded here, before any worker needs it */
    T->async_compile = T->dev && !o->measure && !T->parallel_compile && T->dev->adopt &&
                       target_is_gpu(T->tgt) && cg_nvrtc_available(NULL, 0);

    RtMachine m;
    memset(&m, 0, sizeof m);
    if (o->device_name)
        snprintf(m.device, sizeof m.device, "%s", o->device_name);
    else if (T->dev) {
        rt_machine_host(&m);
        T->dev->describe(T->dev, &m);
    }
    tune_make_key(in->ast, u, T->target, m.device, T->threads, &T->key);
    T->u = u;
    T->refs = rt_refcache_new(u);
    res->key = T->key;

    if (!o->no_db) {
        db_path = o->db_path ? xstrdup(o->db_path) : tunedb_default_path();
        Diags q;
        diag_init(&q);
        T->db = tunedb_open(db_path, &q);
        if (!T->db && !o->quiet)
            fprintf(stderr, "perfc: warning: tuning without a database: %s", q.text.s ? q.text.s : "\n");
        diag_free(&q);
    }

    /* A warm database answers at once: the stored winner is compiled and
     * re-validated on fresh inputs, and its times are the ones measured (with the
     * baseline, in the same run) when it won.  Re-timing would cost more than the
     * second the answer is allowed (at 2048^3 on two cores, three repetitions of
     * the kernel and three of OpenBLAS alone take ~0.7 s); a row without stored
     * times (an older database, or a baseline now asked for that was not then) is
     * re-timed as before. */
    TuneRecord best, fin;
    res->found = T->db ? tunedb_search_status(T->db, &T->key, NULL) : TUNE_NONE;
    if (T->db && !o->retune && res->found == TUNE_FINAL && tunedb_best(T->db, &T->key, &best)) {
        Diags q;
        diag_init(&q);
        AstSchedule *s = parse_stored(T, best.schedule, &q);
        char *sched = xstrdup(best.schedule), *params = xstrdup(best.params);
        bool stored = tunedb_final_of(T->db, &T->key, best.schedule, &fin) && fin.reps > 0 &&
                      (!o->compare || fin.base_call[0]);
        TuneTemplate st = {.s = s, .origin = "the tuning database"};
        int frc = s ? final_run(T, &st, NULL, 0, o->seed * 0x9e3779b97f4a7c15ull + 17, 0.02, stored, &q) : 1;
        if (frc == 0 && res->final.valid && stored)
            stored_times(&res->final, &fin, o->compare);
        if (frc == 0 && res->final.valid) {
            res->from_db = true;
            StrBuf blk = {0};
            tune_block(in->ast->name, T->target, sched, &blk);
            res->best_block = blk.s;
            res->top[0].params = params;
            res->top[0].schedule = sched;
            res->top[0].median_ms = best.median_ms;
            res->top[0].min_ms = best.min_ms;
            res->top[0].max_ms = best.max_ms;
            res->top[0].gflops = best.gflops;
            res->top[0].stored = true;
            res->ntop = 1;
            rc = 0;
            diag_free(&q);
            goto report;
        }
        /* The stored winner no longer holds (a changed transformation, a bug):
         * say so and search again. */
        if (!o->quiet)
            fprintf(stderr, "perfc: warning: the database's best schedule for this key failed again (%s); "
                            "tuning afresh\n",
                    frc == 2 ? "validation" : "it did not apply");
        free(sched);
        free(params);
        memset(&res->final, 0, sizeof res->final);
        res->has_final = false;
        diag_free(&q);
    }

    /* A search under this key that did not finish (interrupted on purpose, or its
     * process killed) is resumed, never served: its measurements are reused and
     * the search goes on from there.  The state is `running` until the end. */
    if (T->db) {
        if (!o->retune && (res->found == TUNE_INTERRUPTED || res->found == TUNE_RUNNING)) {
            Diags q;
            diag_init(&q);
            tunedb_foreach(T->db, true, T->key.kernel, keep_stored, T, &q);
            diag_free(&q);
        }
        Diags q;
        diag_init(&q);
        searched = true;
        if (!tunedb_search_begin(T->db, &T->key, &q) && !o->quiet)
            fprintf(stderr, "perfc: warning: %s", q.text.s ? q.text.s : "cannot record the search state\n");
        diag_free(&q);
    }

    /* The space is built only now: checking its templates runs the dependence tests
     * of every statement (about 1 s for the six tensor-core templates), which a warm
     * answer does not need. */
    progress_emit(T->prog, &(ProgEvent){.phase = PROG_SPACE, .kind = PROG_BEGIN, .what = in->ast->name, .eta_s = -1});
    double tspace = now_seconds();
    if (!tune_space(in, u, T->tgt, T->arena, &T->sp, d)) {
        if (!d->nerrors) /* never a silent failure */
            diag_plain(d, DIAG_ERROR, "autotuning: no search space for kernel %s on %s (no rule of tune/rules.c "
                                      "fits it); write a schedule with `param` items to tune it",
                       in->ast->name, T->target);
        goto done;
    }
    res->space_size = T->sp.size;
    res->spent.space = now_seconds() - tspace;
    double tmodel = now_seconds();
    model_start(T);
    res->spent.model = now_seconds() - tmodel;

    /* The search. */
    {
        int budget = o->budget > 0 ? o->budget : 48;
        /* one measurement of the budget is kept for the kernel as written (below) */
        T->plain = plain_policy(T, res);
        if (T->plain && budget > 1)
            budget--;
        double limit = o->time_limit > 0 ? o->time_limit : 300;
        bool exhaustive = T->sp.size <= budget;
        int total = exhaustive ? (int)T->sp.size : budget; /* for the progress line */
        T->explore_left = exhaustive ? 0 : budget / 2;
        int batch = T->parallel_compile || T->async_compile ? 2 * T->jobs : 4;
        if (batch < 4)
            batch = 4;
        Cand **cs = xmalloc(sizeof *cs * (size_t)batch);
        int stale = 0, fitted_at = T->model.n;
        while (res->measured < budget && now_seconds() - T->t0 < limit && !stopped(T)) {
            int want = batch;
            double tp = now_seconds();
            int n = T->use_model ? propose_ranked(T, exhaustive, cs, want, &fitted_at)
                                 : propose(T, exhaustive, cs, want);
            res->spent.schedule += now_seconds() - tp;
            if (n == 0) {
                if (exhaustive || ++stale > 3)
                    break;
                continue;
            }
            double tc = now_seconds();
            if (T->async_compile) {
                /* compiled on the other cores while the measuring thread takes each in
                 * turn: the first is measured as soon as it is ready */
                Batch b = {.T = T, .c = cs, .n = n};
                for (int i = 0; i < n; i++) /* the ranking's schedule-only pass marked them */
                    cs[i]->ready = false;
                batch_start(&b, T->jobs > 2 ? T->jobs - 1 : 1);
                int mrc = measure_batch(T, cs, n, budget, total, &b, d);
                batch_join(&b);
                if (mrc)
                    break;
            } else {
                prepare_batch(T, cs, n);
                res->spent.compile += now_seconds() - tc;
                if (measure_batch(T, cs, n, budget, total, NULL, d))
                    break;
            }
            for (int i = 0; i < n; i++)
                if (cs[i]->x) {
                    T->dev->release(T->dev, cs[i]->x);
                    cs[i]->x = NULL;
                }
        }
        free(cs);
        res->search_s = now_seconds() - T->t0;
        if (res->measured < total) {
            res->interrupted = stopped(T);
            res->time_limited = !res->interrupted && now_seconds() - T->t0 >= limit;
        }
    }
    /* The kernel as written, unscheduled, is always a candidate, so a tuned kernel is
     * never slower than an untuned one, and a space whose every candidate was pruned
     * still ends with a validated answer.  It is measured after the search (unless
     * the search was interrupted and has an answer): an unscheduled contraction can
     * be a hundred times slower than the best, and measured first it would only delay
     * the search; a clearly slower one costs its two checks and one timed run. */
    if ((T->plain || (!T->best && !T->plain_in_space)) && (!stopped(T) || !T->best) &&
        T->sp.n < TUNE_MAX_TEMPLATES) {
        AstSchedule *e = arena_alloc(T->arena, sizeof *e);
        e->kernel = in->ast->name;
        e->span = in->ast->span;
        TuneTemplate *t = &T->sp.t[T->sp.n++];
        memset(t, 0, sizeof *t);
        t->s = e;
        t->origin = T->best ? "no schedule (the kernel as written)"
                            : "no schedule (the kernel as written; every candidate of the space was pruned)";
        T->sp.size += 1;
        res->space_size = T->sp.size;
        Cand proto;
        memset(&proto, 0, sizeof proto);
        proto.t = T->sp.n - 1;
        Cand *c = cand_push(T, &proto);
        if (c) {
            prepare_batch(T, &c, 1);
            measure_batch(T, &c, 1, res->measured + 1, res->measured + 1, NULL, d);
            if (c->x) {
                T->dev->release(T->dev, c->x);
                c->x = NULL;
            }
        }
    }
    within5(res);
    retime_contenders(T);
    res->ref_hits = rt_refcache_hits(T->refs);

    /* Top five, every one of them validated. */
    {
        Cand **v = xmalloc(sizeof *v * (size_t)(T->nall + 1));
        int nv = 0;
        for (int i = 0; i < T->nall; i++)
            if (T->all[i]->valid)
                v[nv++] = T->all[i];
        qsort(v, (size_t)nv, sizeof *v, cmp_time);
        for (int i = 0; i < nv && i < TUNE_TOP; i++)
            entry_from(&res->top[res->ntop++], v[i]);
        free(v);
    }
    if (!T->best) {
        diag_plain(d, DIAG_ERROR, "autotuning found no valid candidate among %d measured (%d pruned, %d invalid, "
                                  "%d failed)", res->measured, res->pruned, res->invalid, res->failed);
        rc = res->invalid ? 2 : 3;
        goto report;
    }
    /* The winner again: fresh inputs, full timing, the baseline beside it. */
    {
        ParamChoice ch[TUNE_MAX_PARAMS];
        choices_of(T, T->best, ch);
        double tf = now_seconds();
        rc = final_run(T, &T->sp.t[T->best->t], ch, T->sp.t[T->best->t].nparams,
                       o->seed * 0x9e3779b97f4a7c15ull + 1, 0.2, false, d);
        res->spent.final = now_seconds() - tf;
        free(res->best_ir);
        res->best_ir = xstrdup(T->best->ir); /* what was measured in the search */
        if (res->has_final) {
            Cand f = *T->best;
            f.valid = res->final.valid;
            f.status = rc;
            f.median = res->final.time.median;
            f.min = res->final.time.min;
            f.max = res->final.time.max;
            f.gflops = res->final.gflops;
            f.rel_error = res->final.rel_error;
            record(T, &f, &res->final, res->final.compile_ms, d);
        }
        StrBuf blk = {0};
        tune_block(in->ast->name, T->target, T->best->sched, &blk);
        res->best_block = blk.s;
    }

report:
    /* The search completed: final when its winner held on fresh inputs (a search
     * that found nothing valid is complete too); otherwise it is left to be resumed. */
    if (T->db && searched) {
        TuneStatus end = res->interrupted ? TUNE_INTERRUPTED
                         : !T->best || (rc == 0 && res->has_final && res->final.valid) ? TUNE_FINAL
                                                                                      : TUNE_INTERRUPTED;
        Diags q;
        diag_init(&q);
        if (!tunedb_search_end(T->db, &T->key, end, &q) && !o->quiet)
            fprintf(stderr, "perfc: warning: %s", q.text.s ? q.text.s : "cannot record the search state\n");
        diag_free(&q);
    }
    progress_emit(T->prog, &(ProgEvent){.phase = PROG_FINAL, .kind = PROG_DONE, .eta_s = -1});
    res->wall_s = now_seconds() - T->t0;
    res->status = rc;
    if (rc == 0 || rc == 2)
        report(T, res, db_path, out);
done:
    for (int i = 0; i < T->nall; i++) {
        Cand *c = T->all[i];
        cand_drop(c);
        free(c->why);
        free(c->params);
        free(c->sched);
        free(c->ir);
        free(c);
    }
    free(T->all);
    free(T->seen);
    for (int i = 0; i < T->nstored; i++) {
        free(T->stored[i].params);
        free(T->stored[i].sched);
    }
    free(T->stored);
    free(T->reserve);
    tm_free(&T->model);
    rt_refcache_free(T->refs);
    if (T->fk)
        ir_free(T->fk);
    res->final.k = NULL;
    if (T->db)
        tunedb_close(T->db);
    free(db_path);
    if (own_dev)
        T->dev->close(T->dev);
    if (u)
        ir_free(u);
    arena_free(T->arena);
    res->status = rc;
    return rc;
}
