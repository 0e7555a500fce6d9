/* One game of the dojo: a kernel, the moves played on it so far, and what the
 * harness measured.  The protocol (dojo_proto.c) and the built-in agents
 * (dojo_agents.c) both play through these calls and nothing else.
 *
 * The state is the kernel after the file's schedule (only when asked) and the moves,
 * each applied with xf_apply, which proves a transformation legal before it rewrites
 * anything and leaves the kernel untouched when it refuses: a move cannot make a
 * wrong kernel, and an illegal one changes nothing.  Undo rebuilds from a fresh
 * lowering (moves are cheap; kernels have no copy operation).  Every move is kept as
 * parsed schedule text, so the moves so far are exactly a pasteable schedule block,
 * and what is measured is that block compiled the way `perfc FILE -s` compiles it
 * (the pass pipeline, simplification included).  The reward is the harness's
 * validated time of the unscheduled kernel over the current one's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dojo.h"
#include "codegen/cuda/cg_cuda.h"
#include "passes/passes.h"
#include "passes/xform.h"
#include "tune/model.h"
#include "runtime/tunedb.h"

struct DojoSession {
    char *db_path;
    bool no_db;
    DojoCache *cache;
    bool cache_tried;

    bool active;
    Options o;
    Compilation c;
    Kernel *cur;               /* the state */
    PtrVec moves;              /* SchedItem * (arena of c) */
    PtrVec texts;              /* char *, canonical text of each move */
    char target[64];
    char shape[256];
    uint64_t seed;
    int nmeasure;
    bool auto_measure;
    char compare[16];

    /* the legal moves of the current state, made on demand */
    bool acts_valid;
    Arena *acts_arena;
    SchedItem *acts;
    char **act_text;
    int nacts;
    int dropped;               /* GPU: legal moves left out because the CUDA emitter refuses their state */
    double check_s;            /* GPU: seconds the last emitter check of every move took */
    double deadline;           /* now_seconds() past which a listing stops checking moves; 0: none */

    /* the printed state and its hash, made on demand */
    bool fp_valid;
    StrBuf ir;
    char fp[24];

    /* the device, kept across games with the same target */
    RtDevice *dev;
    char dev_target[64];
    char device[384];

    /* the unscheduled kernel's time and the library's, once per game */
    bool base_done;
    double base_ms, lib_ms;
    char lib_call[32];

    /* rows of the measure request under way, written when it has finished and its
     * client is still there: a request is all or nothing in the database */
    struct {
        char key[24], fp[24];
        DojoMeasure m;
    } pending[2];
    int npending;

    /* the cost model of this game: the tuner's features of every measured kernel
     * and its time, a LASSO refitted when rows were added (dojo_predict) */
    TuneModel model;
    int model_fitted_rows;   /* rows of the last fit; 0: none */
    double model_shift;      /* mean of (log time per work - prediction) over the rows */
    double *model_f;         /* the rows' features, TM_NFEAT each */

    /* the tuner's templates as moves (dojo_hints), made on demand once per game */
    bool hints_done;
    DojoHint *hints;
    int nhints, hints_dropped;

    /* the episode recorder (--record): one JSON line per event */
    FILE *rec;
    int episode;
    bool ended;                /* the episode's end line is written */
};

void dojo_record_to(DojoSession *s, FILE *f) { s->rec = f; }

static void rec_begin(DojoSession *s, StrBuf *b, const char *type, bool *ff)
{
    sb_putc(b, '{');
    jw_key(b, "type", ff);
    sb_json_str(b, type);
    jw_key(b, "session", ff); /* the process: socket clients share one record file */
    sb_printf(b, "%d", (int)getpid());
    jw_key(b, "episode", ff);
    sb_printf(b, "%d", s->episode);
}

static void rec_end(DojoSession *s, StrBuf *b)
{
    sb_puts(b, "}\n");
    /* a line at a time, flushed: a player killed mid-game leaves whole lines */
    fwrite(b->s, 1, b->len, s->rec);
    fflush(s->rec);
    sb_free(b);
}

DojoSession *dojo_new(const char *db_path, bool no_db)
{
    DojoSession *s = xcalloc(1, sizeof *s);
    s->db_path = db_path ? xstrdup(db_path) : tunedb_default_path();
    s->no_db = no_db;
    return s;
}

static void end_game(DojoSession *s)
{
    if (s->cur)
        ir_free(s->cur);
    s->cur = NULL;
    if (s->active || s->c.arena) {
        compilation_free(&s->c);
        memset(&s->c, 0, sizeof s->c);
    }
    vec_free(&s->moves);
    for (int i = 0; i < s->texts.n; i++)
        free(s->texts.v[i]);
    vec_free(&s->texts);
    if (s->acts_arena)
        arena_free(s->acts_arena);
    s->acts_arena = NULL;
    s->acts_valid = false;
    s->fp_valid = false;
    s->base_done = false;
    s->nmeasure = 0;
    s->active = false;
    tm_free(&s->model);
    free(s->model_f);
    s->model_f = NULL;
    s->model_fitted_rows = 0;
    for (int i = 0; i < s->nhints; i++)
        dojo_hints_free_moves(&s->hints[i]);
    free(s->hints);
    s->hints = NULL;
    s->nhints = s->hints_dropped = 0;
    s->hints_done = false;
}

void dojo_free(DojoSession *s)
{
    if (!s)
        return;
    dojo_record_end(s);
    end_game(s);
    sb_free(&s->ir);
    if (s->dev)
        s->dev->close(s->dev);
    dojo_cache_close(s->cache);
    free(s->db_path);
    free(s);
}

bool dojo_active(const DojoSession *s) { return s->active; }
int dojo_depth(const DojoSession *s) { return s->moves.n; }
const char *dojo_move(const DojoSession *s, int i) { return i >= 0 && i < s->texts.n ? s->texts.v[i] : NULL; }
bool dojo_auto_measure(const DojoSession *s) { return s->auto_measure; }
uint64_t dojo_seed(const DojoSession *s) { return s->seed; }
int dojo_measurements(const DojoSession *s) { return s->nmeasure; }

static void ensure_actions(DojoSession *s);

static void state_changed(DojoSession *s)
{
    s->acts_valid = false;
    s->fp_valid = false;
}

static void take_diags(Diags *d, StrBuf *err, const char *fallback)
{
    sb_puts(err, d->text.s && d->text.len ? d->text.s : fallback);
    /* one message: drop the final newline the diagnostics end with */
    while (err->len && err->s[err->len - 1] == '\n')
        err->s[--err->len] = 0;
}

/* The kernel of the start state plus the first n moves, unsimplified (the state). */
static Kernel *build_state(DojoSession *s, int n, Diags *d)
{
    Kernel *k = lower_fresh(&s->c);
    if (!k)
        return NULL;
    for (int i = 0; i < s->c.nscheds; i++)
        if (!schedule_apply(k, s->c.scheds[i], NULL, 0, d)) {
            ir_free(k);
            return NULL;
        }
    for (int i = 0; i < n; i++)
        if (!xf_apply(k, s->moves.v[i], NULL, d)) {
            ir_free(k);
            return NULL;
        }
    return k;
}

/* What is measured: the start schedules and the moves (and `extra`, when not NULL)
 * as one schedule block, through the pass pipeline, as `perfc FILE -s '<moves>'`
 * would compile them. */
static Kernel *build_measured_with(DojoSession *s, const SchedItem *extra, Diags *d)
{
    Kernel *k = lower_fresh(&s->c);
    if (!k)
        return NULL;
    AstSchedule mv = {0};
    mv.kernel = s->c.ast->name;
    mv.nitems = s->moves.n + (extra != NULL);
    mv.items = xmalloc(sizeof(SchedItem) * (size_t)(mv.nitems ? mv.nitems : 1));
    for (int i = 0; i < s->moves.n; i++)
        mv.items[i] = *(SchedItem *)s->moves.v[i];
    if (extra)
        mv.items[s->moves.n] = *extra;
    const AstSchedule *all[MAX_SCHEDS + 17];
    int n = 0;
    for (int i = 0; i < s->c.nscheds; i++)
        all[n++] = s->c.scheds[i];
    all[n++] = &mv;
    PipelineOpts po = {0};
    po.schedules = all;
    po.nschedules = n;
    po.target = target_is_cpu(s->c.target) || target_is_gpu(s->c.target) ? s->c.target : NULL;
    bool ok = pipeline_run(k, &po, d);
    free(mv.items);
    if (!ok) {
        ir_free(k);
        return NULL;
    }
    return k;
}

static Kernel *build_measured(DojoSession *s, Diags *d) { return build_measured_with(s, NULL, d); }

/* GPU targets: whether the state with `extra` played (NULL: the state itself) goes
 * through the pipeline and the CUDA emitter, which refuses some states the
 * transformations allow (a local buffer indexed by different thread loops, a launch
 * over the target's limits).  The emitted source is not compiled (no NVRTC): what
 * NVRTC could still refuse is the emitter's bug, not the move's.  The reason in why. */
static bool gpu_emits(DojoSession *s, const SchedItem *extra, StrBuf *why)
{
    Diags d;
    diag_init(&d);
    Kernel *k = build_measured_with(s, extra, &d);
    bool ok = k != NULL;
    if (ok) {
        CgCudaModule m;
        memset(&m, 0, sizeof m);
        ok = cg_cuda_generate(k, s->target, &m, &d);
        cg_cuda_module_free(&m);
        ir_free(k);
    }
    if (!ok && why)
        take_diags(&d, why, "the CUDA back end refused the state");
    diag_free(&d);
    return ok;
}

void dojo_record_end(DojoSession *s)
{
    if (!s->rec || !s->active || s->ended)
        return;
    s->ended = true;
    StrBuf b = {0};
    bool ff = true;
    rec_begin(s, &b, "end", &ff);
    jw_key(&b, "final", &ff);
    sb_json_str(&b, dojo_fingerprint(s));
    jw_key(&b, "moves", &ff);
    sb_putc(&b, '[');
    for (int i = 0; i < s->texts.n; i++) {
        if (i)
            sb_putc(&b, ',');
        sb_json_str(&b, s->texts.v[i]);
    }
    sb_putc(&b, ']');
    rec_end(s, &b);
}

bool dojo_reset(DojoSession *s, const DojoResetArgs *a, StrBuf *err)
{
    dojo_record_end(s);
    end_game(s);
    memset(&s->o, 0, sizeof s->o);
    s->o.target = a->target ? a->target : "host";
    s->o.kernel = a->kernel;
    s->o.no_schedule = !a->schedule;
    s->o.file = a->file ? a->file : "<source>";
    s->o.threads = a->threads;
    if (a->nsizes > MAX_DEFINES) {
        sb_printf(err, "too many sizes (at most %d)", MAX_DEFINES);
        return false;
    }
    if (strlen(s->o.target) >= sizeof s->target) {
        sb_puts(err, "target name too long");
        return false;
    }
    compilation_init(&s->c, &s->o);
    for (int i = 0; i < a->nsizes; i++) {
        s->o.defines[i].name = arena_strdup(s->c.arena, a->names[i]);
        s->o.defines[i].value = a->values[i];
    }
    s->o.ndefines = a->nsizes;
    s->o.target = arena_strdup(s->c.arena, s->o.target);
    s->o.file = arena_strdup(s->c.arena, s->o.file);
    if (s->o.kernel)
        s->o.kernel = arena_strdup(s->c.arena, s->o.kernel);
    snprintf(s->target, sizeof s->target, "%s", s->o.target);

    /* the front end, from a file or from the text itself */
    int st;
    if (a->file) {
        st = compile_front(&s->c);
    } else if (!a->source) {
        sb_puts(err, "reset needs \"file\" or \"source\"");
        compilation_free(&s->c);
        memset(&s->c, 0, sizeof s->c);
        return false;
    } else {
        size_t len = strlen(a->source);
        s->c.text = xmalloc(len + 1);
        memcpy(s->c.text, a->source, len + 1);
        s->c.src.path = s->o.file;
        s->c.src.text = s->c.text;
        s->c.src.len = len;
        s->c.prog = parse_program(s->c.arena, &s->c.src, &s->c.diags);
        if (!s->c.diags.nerrors)
            sema_program(s->c.prog, &s->c.diags);
        st = s->c.diags.nerrors ? 1 : 0;
    }
    if (!st && s->c.prog && s->c.prog->nkernels == 0) {
        diag_plain(&s->c.diags, DIAG_ERROR, "%s holds no kernel", s->o.file);
        st = 1;
    }
    if (!st)
        st = compile_kernel(&s->c);
    if (!st && !ir_all_bound(s->c.unscheduled, &s->c.diags))
        st = 1;
    if (st) {
        take_diags(&s->c.diags, err, "the kernel did not compile");
        compilation_free(&s->c);
        memset(&s->c, 0, sizeof s->c);
        return false;
    }
    /* the state is rebuilt from the start by build_state: drop the pipeline's copy */
    Diags d;
    diag_init(&d);
    s->cur = build_state(s, 0, &d);
    if (!s->cur) {
        take_diags(&d, err, "the start state could not be built");
        diag_free(&d);
        compilation_free(&s->c);
        memset(&s->c, 0, sizeof s->c);
        return false;
    }
    diag_free(&d);

    StrBuf sh = {0};
    for (int i = 0; i < s->cur->nparams; i++)
        sb_printf(&sh, "%s%s=%lld", i ? " " : "", s->cur->params[i].name, (long long)s->cur->params[i].value);
    snprintf(s->shape, sizeof s->shape, "%s", sh.s ? sh.s : "");
    sb_free(&sh);
    s->seed = a->seed_given ? a->seed
                            : (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid() ^ (uint64_t)(now_seconds() * 1e9);
    s->auto_measure = a->auto_measure;
    snprintf(s->compare, sizeof s->compare, "%s", a->compare ? a->compare : "");
    s->active = true;
    s->ended = false;
    state_changed(s);
    s->episode++;
    if (s->rec) {
        StrBuf b = {0};
        bool ff = true;
        rec_begin(s, &b, "reset", &ff);
        jw_key(&b, "file", &ff);
        sb_json_str(&b, a->file);
        jw_key(&b, "source", &ff);
        sb_json_str(&b, a->file ? NULL : a->source);
        jw_key(&b, "kernel", &ff);
        sb_json_str(&b, s->cur->name);
        jw_key(&b, "target", &ff);
        sb_json_str(&b, s->target);
        jw_key(&b, "sizes", &ff);
        sb_putc(&b, '{');
        bool sf = true;
        for (int i = 0; i < s->cur->nparams; i++) {
            jw_key(&b, s->cur->params[i].name, &sf);
            sb_printf(&b, "%lld", (long long)s->cur->params[i].value);
        }
        sb_putc(&b, '}');
        jw_key(&b, "seed", &ff);
        sb_printf(&b, "%llu", (unsigned long long)s->seed);
        jw_key(&b, "schedule", &ff);
        sb_puts(&b, a->schedule ? "true" : "false");
        jw_key(&b, "threads", &ff);
        sb_printf(&b, "%d", s->o.threads);
        jw_key(&b, "state", &ff);
        dojo_state_json(s, &b, true);
        rec_end(s, &b);
    }
    return true;
}

static void ensure_ir(DojoSession *s)
{
    if (s->fp_valid)
        return;
    s->ir.len = 0;
    if (s->ir.s)
        s->ir.s[0] = 0;
    ir_print_kernel(s->cur, &s->ir);
    uint64_t h = tunedb_hash(s->ir.s ? s->ir.s : "", s->ir.len, TUNEDB_HASH0);
    snprintf(s->fp, sizeof s->fp, "%016llx", (unsigned long long)h);
    s->fp_valid = true;
}

const char *dojo_fingerprint(DojoSession *s)
{
    ensure_ir(s);
    return s->fp;
}

/* ---- features ---- */

typedef struct FeatCtx {
    const Kernel *k;
    StrBuf *out;
    bool first;
} FeatCtx;

static int count_kind(const NodeList *l, NodeKind kind)
{
    int n = 0;
    for (int i = 0; i < l->n; i++)
        n += l->v[i]->kind == kind;
    return n;
}

static bool has_loop_below(const NodeList *l)
{
    for (int i = 0; i < l->n; i++) {
        if (l->v[i]->kind == N_LOOP)
            return true;
        if (l->v[i]->kind == N_IF && has_loop_below(&l->v[i]->u.guard.body))
            return true;
    }
    return false;
}

/* True when an update (`+=`, `max=`, ...) below l stores to an element whose indices
 * do not mention v: v is a reduction loop of that statement. */
static bool reduces_over(const NodeList *l, const Var *v)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        if (n->kind == N_STMT) {
            if (n->u.stmt.op == SOP_ASSIGN)
                continue;
            bool uses = false;
            for (int d = 0; d < n->u.stmt.buf->rank && !uses; d++)
                uses = ir_expr_uses_var(n->u.stmt.idx[d], v);
            if (!uses)
                return true;
        } else if ((n->kind == N_LOOP || n->kind == N_IF) && reduces_over(ir_body((Node *)n), v)) {
            return true;
        }
    }
    return false;
}

/* Adds to used[] (nb entries so far) the buffers an expression loads with an index
 * that mentions v. */
static void loads_using(const Expr *e, const Var *v, const Buffer **used, int *nb)
{
    if (!e)
        return;
    if (e->kind == IE_LOAD) {
        bool uses = false;
        for (int d = 0; d < e->u.load.buf->rank && !uses; d++)
            uses = ir_expr_uses_var(e->u.load.idx[d], v);
        bool have = false;
        for (int i = 0; i < *nb && !have; i++)
            have = used[i] == e->u.load.buf;
        if (uses && !have && *nb < 64)
            used[(*nb)++] = e->u.load.buf;
        for (int d = 0; d < e->u.load.buf->rank; d++)
            loads_using(e->u.load.idx[d], v, used, nb);
        return;
    }
    for (int i = 0; i < 3; i++)
        loads_using(e->args[i], v, used, nb);
}

/* The buffers whose indices mention v in the statements below l (stored or loaded). */
static void buffers_using(const NodeList *l, const Var *v, const Buffer **used, int *nb)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        if (n->kind == N_STMT) {
            bool uses = false;
            for (int d = 0; d < n->u.stmt.buf->rank && !uses; d++)
                uses = ir_expr_uses_var(n->u.stmt.idx[d], v);
            bool have = false;
            for (int j = 0; j < *nb && !have; j++)
                have = used[j] == n->u.stmt.buf;
            if (uses && !have && *nb < 64)
                used[(*nb)++] = n->u.stmt.buf;
            loads_using(n->u.stmt.value, v, used, nb);
        } else if (n->kind == N_LOOP || n->kind == N_IF) {
            buffers_using(ir_body((Node *)n), v, used, nb);
        }
    }
}

static void loops_json(FeatCtx *f, const NodeList *l, const char *parent, int depth)
{
    for (int i = 0; i < l->n; i++) {
        const Node *n = l->v[i];
        if (n->kind == N_IF) {
            loops_json(f, &n->u.guard.body, parent, depth);
            continue;
        }
        if (n->kind != N_LOOP)
            continue;
        StrBuf *b = f->out;
        sb_puts(b, f->first ? "{" : ",{");
        f->first = false;
        bool ff = true;
        jw_key(b, "name", &ff);
        sb_json_str(b, n->u.loop.var->name);
        jw_key(b, "kind", &ff);
        sb_json_str(b, n->u.loop.kind == LOOP_SERIAL ? "serial" : loop_kind_name(n->u.loop.kind));
        int64_t lo, hi;
        jw_key(b, "extent", &ff);
        if (ir_eval_size(f->k, n->u.loop.lo, &lo) && ir_eval_size(f->k, n->u.loop.hi, &hi))
            sb_printf(b, "%lld", (long long)(hi - lo));
        else
            sb_puts(b, "null"); /* bounds that depend on an outer loop */
        StrBuf t = {0};
        ir_print_expr(f->k, n->u.loop.lo, &t);
        jw_key(b, "lo", &ff);
        sb_json_str(b, t.s);
        t.len = 0;
        ir_print_expr(f->k, n->u.loop.hi, &t);
        jw_key(b, "hi", &ff);
        sb_json_str(b, t.s);
        sb_free(&t);
        jw_key(b, "depth", &ff);
        sb_printf(b, "%d", depth);
        jw_key(b, "parent", &ff);
        sb_json_str(b, parent);
        jw_key(b, "innermost", &ff);
        sb_puts(b, has_loop_below(&n->u.loop.body) ? "false" : "true");
        jw_key(b, "statements", &ff);
        sb_printf(b, "%d", count_kind(&n->u.loop.body, N_STMT));
        jw_key(b, "reduction", &ff);
        sb_puts(b, reduces_over(&n->u.loop.body, n->u.loop.var) ? "true" : "false");
        jw_key(b, "uses", &ff);
        const Buffer *used[64];
        int nb = 0;
        buffers_using(&n->u.loop.body, n->u.loop.var, used, &nb);
        sb_putc(b, '[');
        for (int u = 0; u < nb; u++) {
            if (u)
                sb_putc(b, ',');
            sb_json_str(b, used[u]->name);
        }
        sb_puts(b, "]}");
        loops_json(f, &n->u.loop.body, n->u.loop.var->name, depth + 1);
    }
}

static void buffers_json(const Kernel *k, StrBuf *b)
{
    sb_putc(b, '[');
    for (int i = 0; i < k->nbufs; i++) {
        const Buffer *bu = k->bufs[i];
        sb_puts(b, i ? ",{" : "{");
        bool ff = true;
        jw_key(b, "name", &ff);
        sb_json_str(b, bu->name);
        jw_key(b, "kind", &ff);
        sb_json_str(b, bu->kind == BUF_IN ? "in" : bu->kind == BUF_OUT ? "out" : "temp");
        jw_key(b, "dtype", &ff);
        sb_json_str(b, dtype_name(bu->dtype));
        jw_key(b, "mem", &ff);
        sb_json_str(b, mem_space_name(bu->mem));
        jw_key(b, "shape", &ff);
        sb_putc(b, '[');
        for (int d = 0; d < bu->rank; d++) {
            int64_t v;
            if (d)
                sb_putc(b, ',');
            if (ir_eval_size(k, bu->shape[d], &v))
                sb_printf(b, "%lld", (long long)v);
            else
                sb_puts(b, "null");
        }
        sb_puts(b, "]}");
    }
    sb_putc(b, ']');
}

void dojo_state_json(DojoSession *s, StrBuf *b, bool with_ir)
{
    ensure_ir(s);
    bool ff = true;
    sb_putc(b, '{');
    jw_key(b, "kernel", &ff);
    sb_json_str(b, s->cur->name);
    jw_key(b, "target", &ff);
    sb_json_str(b, s->target);
    jw_key(b, "sizes", &ff);
    sb_putc(b, '{');
    bool sf = true;
    for (int i = 0; i < s->cur->nparams; i++) {
        jw_key(b, s->cur->params[i].name, &sf);
        sb_printf(b, "%lld", (long long)s->cur->params[i].value);
    }
    sb_putc(b, '}');
    jw_key(b, "fingerprint", &ff);
    sb_json_str(b, s->fp);
    jw_key(b, "depth", &ff);
    sb_printf(b, "%d", s->moves.n);
    jw_key(b, "moves", &ff);
    sb_putc(b, '[');
    for (int i = 0; i < s->texts.n; i++) {
        if (i)
            sb_putc(b, ',');
        sb_json_str(b, s->texts.v[i]);
    }
    sb_putc(b, ']');
    if (with_ir) {
        jw_key(b, "ir", &ff);
        sb_json_str(b, s->ir.s);
    }
    jw_key(b, "loops", &ff);
    sb_putc(b, '[');
    FeatCtx f = {s->cur, b, true};
    loops_json(&f, &s->cur->body, NULL, 0);
    sb_putc(b, ']');
    jw_key(b, "buffers", &ff);
    buffers_json(s->cur, b);
    if (target_is_gpu(s->c.target)) {
        ensure_actions(s);
        jw_key(b, "dropped_moves", &ff);
        sb_printf(b, "%d", s->dropped);
        jw_key(b, "check_ms", &ff);
        sb_printf(b, "%.1f", s->check_s * 1e3);
    }
    sb_putc(b, '}');
}

/* ---- moves ---- */

static bool is_gpu_only(const char *name)
{
    return !strcmp(name, "bind") || !strcmp(name, "mma") || !strcmp(name, "wgmma") || !strcmp(name, "pipeline");
}

static bool legal_now(DojoSession *s, const SchedItem *it)
{
    Diags d;
    diag_init(&d);
    bool ok = xf_check(s->cur, it, NULL, &d);
    diag_free(&d);
    return ok;
}

/* Moves the dojo offers beyond passes/actions.c's list: splits by the larger powers
 * of two that divide a constant extent (cache and register blocks need more than
 * 32), and on GPU targets the mapping of loops to blocks and threads.  Each is
 * checked like the others. */
static void extra_moves(DojoSession *s, Arena *a, PtrVec *out)
{
    static const int64_t big[] = {64, 128, 256};
    static const char *const gpu_axes[] = {"block.x", "block.y", "thread.x", "thread.y"};
    bool gpu = target_is_gpu(s->c.target);
    for (int vi = 0; vi < s->cur->nvars; vi++) {
        Node *l = ir_find_loop(s->cur, s->cur->vars[vi]->name);
        if (!l)
            continue;
        int64_t lo, hi;
        if (!ir_eval_size(s->cur, l->u.loop.lo, &lo) || !ir_eval_size(s->cur, l->u.loop.hi, &hi))
            continue;
        int64_t ext = hi - lo;
        const char *v = l->u.loop.var->name;
        for (size_t f = 0; f < sizeof big / sizeof big[0]; f++) {
            if (big[f] >= ext || ext % big[f])
                continue;
            SchedItem *it = arena_alloc(a, sizeof *it);
            it->kind = SCHED_CALL;
            it->name = "split";
            it->nargs = 2;
            it->args = arena_alloc(a, 2 * sizeof(SchedArg));
            it->args[0] = (SchedArg){.kind = SARG_NAME, .name = arena_strdup(a, v)};
            it->args[1] = (SchedArg){.kind = SARG_INT, .ival = big[f]};
            if (legal_now(s, it))
                vec_push(out, it);
        }
        for (size_t g = 0; gpu && g < sizeof gpu_axes / sizeof gpu_axes[0]; g++) {
            SchedItem *it = arena_alloc(a, sizeof *it);
            it->kind = SCHED_CALL;
            it->name = "bind";
            it->nargs = 2;
            it->args = arena_alloc(a, 2 * sizeof(SchedArg));
            it->args[0] = (SchedArg){.kind = SARG_NAME, .name = arena_strdup(a, v)};
            it->args[1] = (SchedArg){.kind = SARG_NAME, .name = gpu_axes[g]};
            if (legal_now(s, it))
                vec_push(out, it);
        }
    }
}

static void ensure_actions(DojoSession *s)
{
    if (s->acts_valid)
        return;
    if (s->acts_arena)
        arena_free(s->acts_arena);
    s->acts_arena = arena_new();
    SchedItem *base;
    int n = xf_enum_actions(s->cur, s->acts_arena, &base);
    PtrVec all = {0};
    for (int i = 0; i < n; i++)
        vec_push(&all, &base[i]);
    extra_moves(s, s->acts_arena, &all);
    /* GPU-only marks on a CPU target would only fail in the code generator */
    s->acts = arena_alloc(s->acts_arena, sizeof(SchedItem) * (size_t)(all.n ? all.n : 1));
    s->act_text = arena_alloc(s->acts_arena, sizeof(char *) * (size_t)(all.n ? all.n : 1));
    s->nacts = 0;
    s->dropped = 0;
    double t0 = now_seconds();
    for (int i = 0; i < all.n; i++) {
        SchedItem *it = all.v[i];
        if (!target_is_gpu(s->c.target) && is_gpu_only(it->name))
            continue;
        /* an agent's wall-time budget is spent: the moves checked so far (on a GPU
         * the emitter's check of every move can take tens of seconds a state) */
        if (target_is_gpu(s->c.target) && s->deadline > 0 && now_seconds() > s->deadline)
            break;
        /* a GPU state the back end cannot emit could be neither measured nor
         * compiled: such moves are not offered */
        if (target_is_gpu(s->c.target) && !gpu_emits(s, it, NULL)) {
            s->dropped++;
            continue;
        }
        StrBuf t = {0};
        xf_item_print(it, &t);
        bool dup = false; /* the supplement may repeat a move of the list */
        for (int j = 0; j < s->nacts && !dup; j++)
            dup = !strcmp(s->act_text[j], t.s);
        if (!dup) {
            s->acts[s->nacts] = *it;
            s->act_text[s->nacts++] = arena_strdup(s->acts_arena, t.s);
        }
        sb_free(&t);
    }
    vec_free(&all);
    s->check_s = target_is_gpu(s->c.target) ? now_seconds() - t0 : 0;
    s->acts_valid = true;
}

void dojo_set_deadline(DojoSession *s, double t) { s->deadline = t; }

int dojo_nactions(DojoSession *s)
{
    ensure_actions(s);
    return s->nacts;
}

const char *dojo_action_text(DojoSession *s, int i)
{
    ensure_actions(s);
    return i >= 0 && i < s->nacts ? s->act_text[i] : NULL;
}

static void arg_json(const SchedArg *a, StrBuf *b)
{
    switch (a->kind) {
    case SARG_NAME: sb_json_str(b, a->name); break;
    case SARG_INT: sb_printf(b, "%lld", (long long)a->ival); break;
    case SARG_FLOAT: jw_num(b, a->fval); break;
    case SARG_STRING:
        sb_puts(b, "{\"string\":");
        sb_json_str(b, a->name);
        sb_putc(b, '}');
        break;
    case SARG_LIST:
        sb_putc(b, '[');
        for (int i = 0; i < a->list.n; i++) {
            if (i)
                sb_putc(b, ',');
            arg_json(&a->list.items[i], b);
        }
        sb_putc(b, ']');
        break;
    }
}

void dojo_actions_json(DojoSession *s, StrBuf *b)
{
    ensure_actions(s);
    sb_putc(b, '[');
    for (int i = 0; i < s->nacts; i++) {
        const SchedItem *it = &s->acts[i];
        sb_printf(b, "%s{\"id\":%d,\"move\":", i ? "," : "", i);
        sb_json_str(b, s->act_text[i]);
        sb_puts(b, ",\"name\":");
        sb_json_str(b, it->name);
        sb_puts(b, ",\"args\":[");
        bool first = true;
        for (int a = 0; a < it->nargs; a++)
            if (!it->args[a].key) {
                if (!first)
                    sb_putc(b, ',');
                first = false;
                arg_json(&it->args[a], b);
            }
        sb_puts(b, "],\"kwargs\":{");
        first = true;
        for (int a = 0; a < it->nargs; a++)
            if (it->args[a].key) {
                jw_key(b, it->args[a].key, &first);
                arg_json(&it->args[a], b);
            }
        sb_puts(b, "}}");
    }
    sb_putc(b, ']');
}

static bool step(DojoSession *s, int id, const char *text, bool *legal, StrBuf *err);

bool dojo_step(DojoSession *s, int id, const char *text, bool *legal, StrBuf *err)
{
    if (!s->rec)
        return step(s, id, text, legal, err);
    char before[24];
    snprintf(before, sizeof before, "%s", dojo_fingerprint(s));
    const char *asked = text ? text : dojo_action_text(s, id);
    char *given = asked ? xstrdup(asked) : NULL;
    size_t e0 = err->len;
    bool ok = step(s, id, text, legal, err);
    if (ok) { /* a request that was not a move at all changes nothing and is not recorded */
        StrBuf b = {0};
        bool ff = true;
        rec_begin(s, &b, "step", &ff);
        jw_key(&b, "t", &ff);
        sb_printf(&b, "%d", *legal ? s->moves.n - 1 : s->moves.n);
        jw_key(&b, "state", &ff);
        sb_json_str(&b, before);
        jw_key(&b, "action", &ff);
        sb_json_str(&b, *legal ? (char *)s->texts.v[s->texts.n - 1] : given);
        jw_key(&b, "legal", &ff);
        sb_puts(&b, *legal ? "true" : "false");
        jw_key(&b, "reason", &ff);
        sb_json_str(&b, *legal ? NULL : err->s + e0);
        jw_key(&b, "next_state", &ff);
        dojo_state_json(s, &b, true);
        rec_end(s, &b);
    }
    free(given);
    return ok;
}

static bool step(DojoSession *s, int id, const char *text, bool *legal, StrBuf *err)
{
    *legal = false;
    bool text_given = text != NULL;
    if (!text) {
        ensure_actions(s);
        if (id < 0 || id >= s->nacts) {
            sb_printf(err, "no move %d in this state (ids 0 to %d; ask \"actions\" again after every change)", id,
                      s->nacts - 1);
            return false;
        }
        text = s->act_text[id];
    }
    /* every move goes through the schedule parser, so what is kept is what a
     * schedule block would say */
    Source *src = arena_alloc(s->c.arena, sizeof *src);
    src->path = "<move>";
    src->text = arena_strdup(s->c.arena, text);
    src->len = strlen(text);
    Diags d;
    diag_init(&d);
    AstSchedule *sc = parse_schedule_text(s->c.arena, src, &d);
    if (!sc || d.nerrors) {
        take_diags(&d, err, "not a schedule statement");
        diag_free(&d);
        return false;
    }
    if (sc->nitems != 1 || sc->items[0].kind != SCHED_CALL) {
        sb_puts(err, sc->nitems == 0 ? "no move given"
                     : sc->nitems > 1 ? "one move per step (this text holds several statements)"
                                      : "a param statement is not a move (moves are transformations)");
        diag_free(&d);
        return false;
    }
    SchedItem *it = &sc->items[0];
    if (!target_is_gpu(s->c.target) && is_gpu_only(it->name)) {
        sb_printf(err, "%s is a GPU transformation and target %s is a CPU", it->name, s->target);
        diag_free(&d);
        return true; /* a move, and not a legal one here */
    }
    if (text_given && target_is_gpu(s->c.target)) {
        /* a move not from the list: it must leave a state the CUDA back end emits */
        if (!xf_check(s->cur, it, NULL, &d)) {
            take_diags(&d, err, "refused");
            diag_free(&d);
            return true;
        }
        StrBuf why = {0};
        if (!gpu_emits(s, it, &why)) {
            sb_printf(err, "the CUDA back end cannot emit the state this move leaves: %s", why.s ? why.s : "");
            sb_free(&why);
            diag_free(&d);
            return true;
        }
        sb_free(&why);
    }
    if (!xf_apply(s->cur, it, NULL, &d)) {
        take_diags(&d, err, "refused");
        diag_free(&d);
        return true;
    }
    diag_free(&d);
    *legal = true;
    vec_push(&s->moves, it);
    StrBuf t = {0};
    xf_item_print(it, &t);
    vec_push(&s->texts, t.s);
    state_changed(s);
    return true;
}

bool dojo_undo(DojoSession *s)
{
    if (!s->moves.n)
        return false;
    Diags d;
    diag_init(&d);
    Kernel *k = build_state(s, s->moves.n - 1, &d);
    diag_free(&d);
    if (!k) /* each of these moves applied before, in this order, on the same kernel */
        die("dojo: replaying %d moves failed", s->moves.n - 1);
    ir_free(s->cur);
    s->cur = k;
    s->moves.n--;
    free(s->texts.v[--s->texts.n]);
    state_changed(s);
    if (s->rec) {
        StrBuf b = {0};
        bool ff = true;
        rec_begin(s, &b, "undo", &ff);
        jw_key(&b, "next_state", &ff);
        sb_json_str(&b, dojo_fingerprint(s));
        rec_end(s, &b);
    }
    return true;
}

/* Takes the state back to its first n moves (n below the depth), rebuilding once. */
static void truncate_moves(DojoSession *s, int n)
{
    Diags d;
    diag_init(&d);
    Kernel *k = build_state(s, n, &d);
    diag_free(&d);
    if (!k) /* these moves applied before, in this order, on the same kernel */
        die("dojo: replaying %d moves failed", n);
    ir_free(s->cur);
    s->cur = k;
    s->moves.n = n;
    while (s->texts.n > n)
        free(s->texts.v[--s->texts.n]);
    state_changed(s);
}

/* Whether moves play in order from the start, each as `step` plays a move given as
 * text (on a GPU, with the CUDA emitter's check after each); the game's own moves
 * are put back afterwards, nothing recorded.  The refusal in err. */
static bool plays_from_start(DojoSession *s, char *const *moves, int n, StrBuf *err)
{
    int depth = s->moves.n;
    void **items = xcalloc((size_t)depth + 1, sizeof *items);
    char **texts = xcalloc((size_t)depth + 1, sizeof *texts);
    for (int i = 0; i < depth; i++) {
        items[i] = s->moves.v[i];
        texts[i] = xstrdup(s->texts.v[i]);
    }
    if (depth)
        truncate_moves(s, 0);
    bool plays = true;
    for (int j = 0; j < n && plays; j++) {
        StrBuf e = {0};
        bool legal = false;
        plays = step(s, -1, moves[j], &legal, &e) && legal;
        if (!plays && err)
            sb_printf(err, "move %d of the hint, %s: %s", j + 1, moves[j], e.s ? e.s : "refused");
        sb_free(&e);
    }
    if (s->moves.n)
        truncate_moves(s, 0);
    for (int i = 0; i < depth; i++) {
        vec_push(&s->moves, items[i]);
        vec_push(&s->texts, texts[i]);
    }
    if (depth) {
        Diags d;
        diag_init(&d);
        Kernel *k = build_state(s, depth, &d);
        diag_free(&d);
        if (!k)
            die("dojo: replaying %d moves failed", depth);
        ir_free(s->cur);
        s->cur = k;
        state_changed(s);
    }
    free(items);
    free(texts);
    return plays;
}

int dojo_hints(DojoSession *s, const DojoHint **out, int *dropped)
{
    if (!s->hints_done) {
        s->hints_done = true;
        DojoHint *c;
        int nc = dojo_hint_candidates(&s->c, &c);
        s->hints = xcalloc((size_t)nc + 1, sizeof *s->hints);
        for (int h = 0; h < nc; h++) {
            if (plays_from_start(s, c[h].moves, c[h].n, NULL)) {
                s->hints[s->nhints++] = c[h];
            } else {
                s->hints_dropped++;
                dojo_hints_free_moves(&c[h]);
            }
        }
        free(c);
    }
    *out = s->hints;
    if (dropped)
        *dropped = s->hints_dropped;
    return s->nhints;
}

bool dojo_hint_at(DojoSession *s, int i, const int *choice, DojoHint *out, StrBuf *err)
{
    const DojoHint *h;
    int n = dojo_hints(s, &h, NULL);
    memset(out, 0, sizeof *out);
    if (i < 0 || i >= n) {
        sb_printf(err, "no hint %d (this game has %d)", i, n);
        return false;
    }
    *out = h[i];
    out->moves = NULL;
    out->n = 0;
    for (int p = 0; p < out->nparams; p++)
        if (choice[p] < 0 || choice[p] >= out->params[p].nvalues) {
            sb_printf(err, "parameter %s has %d values; choice %d is out of range", out->params[p].name,
                      out->params[p].nvalues, choice[p]);
            return false;
        }
    if (!dojo_hint_instance(&s->c, out, choice, err))
        return false;
    if (!plays_from_start(s, out->moves, out->n, err)) {
        dojo_hints_free_moves(out);
        return false;
    }
    return true;
}

void dojo_schedule_text(DojoSession *s, StrBuf *out)
{
    const char *t = s->target;
    const char *for_ = target_is_gpu(s->c.target) ? t : !strcmp(t, "host") ? "cpu" : t;
    sb_printf(out, "schedule %s for %s {\n", s->cur->name, for_);
    for (int i = 0; i < s->texts.n; i++)
        sb_printf(out, "  %s\n", (char *)s->texts.v[i]);
    sb_puts(out, "}\n");
}

/* ---- measurement ---- */

static bool open_device(DojoSession *s, StrBuf *err, int *rc)
{
    if (s->dev && !strcmp(s->dev_target, s->target))
        return true;
    if (s->dev)
        s->dev->close(s->dev);
    s->dev = NULL;
    Diags d;
    diag_init(&d);
    *rc = 3;
    s->dev = rt_device_open(s->target, rc, &d);
    if (!s->dev) {
        take_diags(&d, err, "cannot open the device");
        diag_free(&d);
        return false;
    }
    diag_free(&d);
    snprintf(s->dev_target, sizeof s->dev_target, "%s", s->target);
    RtMachine m;
    memset(&m, 0, sizeof m);
    rt_machine_host(&m);
    s->dev->describe(s->dev, &m);
    snprintf(s->device, sizeof s->device, "%s", m.device);
    return true;
}

static void cache_key(DojoSession *s, const char *fp, const char *what, char key[24])
{
    uint64_t h = TUNEDB_HASH0;
    const char *fields[] = {what, fp, s->target, s->shape, s->device, PERFC_VERSION};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        h = tunedb_hash(fields[i], strlen(fields[i]) + 1, h);
    h = tunedb_hash(&s->o.threads, sizeof s->o.threads, h);
    snprintf(key, 24, "%016llx", (unsigned long long)h);
}

static const char *library_for(DojoSession *s)
{
    if (s->compare[0])
        return strcmp(s->compare, "none") ? s->compare : NULL;
    if (target_is_gpu(s->c.target))
        return "cublas";
    return rt_blas_available() ? "openblas" : NULL;
}

/* Validates (and unless cached, times) kernel k; fills m.  Returns the harness's
 * status: 0 valid, 2 invalid, 1/3 errors (err). */
static int measure_kernel(DojoSession *s, const Kernel *k, const char *fp, bool base, DojoMeasure *m,
                          bool (*still_there)(void *), void *ctx, StrBuf *err)
{
    if (!s->cache && !s->cache_tried && !s->no_db) {
        s->cache_tried = true;
        StrBuf e = {0};
        s->cache = dojo_cache_open(s->db_path, &e);
        if (!s->cache)
            fprintf(stderr, "perfc: warning: dojo: measuring without a cache: %s", e.s ? e.s : "\n");
        sb_free(&e);
    }
    char key[24];
    cache_key(s, fp, base ? "base" : "state", key);
    RunOptions ro;
    rt_options_init(&ro);
    ro.target = s->target;
    ro.threads = s->o.threads;
    ro.seed = s->seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(++s->nmeasure));
    ro.min_time_s = 0.05;
    ro.checks = 2;
    RtResult *r = xcalloc(1, sizeof *r);
    Diags d;
    diag_init(&d);
    memset(m, 0, sizeof *m);
    snprintf(m->fingerprint, sizeof m->fingerprint, "%s", fp);
    int rc;
    if (s->cache && dojo_cache_get(s->cache, key, m) && (m->valid || !base)) {
        m->cached = true;
        if (!m->valid) /* an invalid kernel stays invalid: nothing to prove again */
            goto out_rc2;
        /* the times are the stored ones; the kernel is proven again now */
        ro.validate_only = true;
        ro.checks = 1;
        rc = rt_evaluate(s->dev, k, s->c.unscheduled, &ro, r, &d);
        if (rc == 0 && !r->valid)
            rc = 2;
        if (rc == 2) {
            m->valid = false;
            snprintf(m->reason, sizeof m->reason, "the cached kernel no longer validates: %.400s", r->reason);
        }
        goto out;
    }
    ro.compare = base ? library_for(s) : NULL;
    rc = rt_evaluate(s->dev, k, s->c.unscheduled, &ro, r, &d);
    if (rc != 0 && rc != 2)
        goto out;
    m->valid = r->valid;
    snprintf(m->reason, sizeof m->reason, "%s", r->valid ? "" : r->reason);
    m->median_ms = r->time.median;
    m->min_ms = r->time.min;
    m->max_ms = r->time.max;
    m->reps = r->time.reps;
    m->gflops = r->gflops;
    m->rel_error = r->rel_error;
    if (base && r->has_base) {
        m->lib_ms = r->base_time.median;
        snprintf(m->lib_call, sizeof m->lib_call, "%s", r->base_call);
    }
    if (s->cache && s->npending < 2) {
        snprintf(s->pending[s->npending].key, 24, "%s", key);
        snprintf(s->pending[s->npending].fp, 24, "%s", fp);
        s->pending[s->npending++].m = *m;
    }
    goto out;
out_rc2:
    rc = 2;
out:
    if (rc != 0 && rc != 2)
        take_diags(&d, err, "the measurement failed");
    diag_free(&d);
    free(r);
    return rc;
}

/* ---- the cost model ---- */

/* f32 lanes of one SIMD register of the target (GPU threads do not vectorise). */
static int f32_lanes(const Target *t)
{
    return target_is_cpu(t) ? t->vector_bytes / 4 : target_is_gpu(t) ? 1 : 8;
}

/* The tuner's features of kernel k (what would be measured) and its work. */
static double model_features(DojoSession *s, const Kernel *k, double *f)
{
    int64_t llc = rt_llc_bytes();
    double caches[3] = {32 << 10, 1 << 20, llc > (1 << 20) ? (double)llc : 32 << 20};
    int threads = s->o.threads > 0 ? s->o.threads : rt_cpu_count();
    return tm_features(k, threads, f32_lanes(s->c.target), caches, f);
}

_Static_assert((int)TM_NFEAT <= (int)DOJO_MAX_FEAT, "DojoPredict holds every feature");

const char *dojo_feature_name(int i) { return i >= 0 && i < TM_NFEAT ? tm_feature_name(i) : NULL; }

bool dojo_predict(DojoSession *s, DojoPredict *p, StrBuf *err)
{
    memset(p, 0, sizeof *p);
    Diags d;
    diag_init(&d);
    Kernel *k = build_measured(s, &d);
    if (!k) {
        take_diags(&d, err, "the schedule did not apply");
        diag_free(&d);
        return false;
    }
    diag_free(&d);
    p->nfeat = TM_NFEAT;
    p->work = model_features(s, k, p->f);
    ir_free(k);
    p->rows = s->model.n;
    if (s->model.n >= TM_MIN_ROWS && s->model.n != s->model_fitted_rows) {
        s->model_fitted_rows = s->model.n;
        if (tm_fit(&s->model)) {
            /* the fit is centred: shift it so that it predicts the rows' own times */
            double sum = 0;
            for (int i = 0; i < s->model.n; i++)
                sum += s->model.y[i] - tm_predict(&s->model, s->model_f + (size_t)i * TM_NFEAT);
            s->model_shift = sum / s->model.n;
        }
    }
    if (s->model.fitted) {
        p->fitted = true;
        p->cv_r2 = s->model.cv_r2;
        p->predicted_ms = exp(tm_predict(&s->model, p->f) + s->model_shift) * p->work;
    }
    return true;
}

static int measure_request(DojoSession *s, DojoMeasure *m, bool (*still_there)(void *), void *ctx, StrBuf *err);

int dojo_measure(DojoSession *s, DojoMeasure *m, bool (*still_there)(void *), void *ctx, StrBuf *err)
{
    s->npending = 0;
    int rc = measure_request(s, m, still_there, ctx, err);
    /* only finished measurements for a client still listening reach the file */
    if (!still_there || still_there(ctx))
        for (int i = 0; i < s->npending; i++)
            dojo_cache_put(s->cache, s->pending[i].key, s->cur->name, s->pending[i].fp, s->shape, s->target,
                           s->device, s->o.threads, &s->pending[i].m);
    s->npending = 0;
    return rc;
}

static int measure_request(DojoSession *s, DojoMeasure *m, bool (*still_there)(void *), void *ctx, StrBuf *err)
{
    memset(m, 0, sizeof *m);
    int rc = 1;
    if (!open_device(s, err, &rc))
        return rc;
    Diags d;
    diag_init(&d);
    if (!s->base_done) {
        Kernel *u = lower_fresh(&s->c);
        StrBuf t = {0};
        ir_print_kernel(u, &t);
        char fp[24];
        snprintf(fp, sizeof fp, "%016llx", (unsigned long long)tunedb_hash(t.s, t.len, TUNEDB_HASH0));
        sb_free(&t);
        DojoMeasure bm;
        /* fingerprinted as lowered by the front end, measured as the back end needs */
        if (!pipeline_target(u, s->c.target, &d)) {
            take_diags(&d, err, "the target refused the unscheduled kernel");
            ir_free(u);
            diag_free(&d);
            return 1;
        }
        rc = measure_kernel(s, u, fp, true, &bm, still_there, ctx, err);
        ir_free(u);
        if (rc != 0) {
            if (rc == 2)
                sb_printf(err, "the unscheduled kernel did not validate: %s", bm.reason);
            diag_free(&d);
            return rc == 2 ? 3 : rc;
        }
        s->base_done = true;
        s->base_ms = bm.median_ms;
        s->lib_ms = bm.lib_ms;
        snprintf(s->lib_call, sizeof s->lib_call, "%s", bm.lib_call);
    }
    Kernel *k = build_measured(s, &d);
    if (!k) { /* the moves applied one by one, so the block applies too */
        take_diags(&d, err, "the schedule did not apply");
        diag_free(&d);
        return 1;
    }
    diag_free(&d);
    rc = measure_kernel(s, k, dojo_fingerprint(s), false, m, still_there, ctx, err);
    if (rc == 0 && m->valid && m->median_ms > 0) { /* a row for the cost model */
        double f[TM_NFEAT];
        double work = model_features(s, k, f);
        int n0 = s->model.n;
        tm_add(&s->model, f, work, m->median_ms, 1);
        if (s->model.n > n0) {
            s->model_f = xrealloc(s->model_f, sizeof *s->model_f * TM_NFEAT * (size_t)s->model.n);
            memcpy(s->model_f + (size_t)n0 * TM_NFEAT, f, sizeof f);
        }
    }
    ir_free(k);
    m->base_ms = s->base_ms;
    m->lib_ms = s->lib_ms;
    snprintf(m->lib_call, sizeof m->lib_call, "%s", s->lib_call);
    if (rc == 0 && m->valid && m->median_ms > 0) {
        m->speedup = s->base_ms / m->median_ms;
        m->vs_library = s->lib_ms > 0 ? s->lib_ms / m->median_ms : 0;
    }
    if (s->rec && (rc == 0 || rc == 2)) {
        StrBuf b = {0};
        bool ff = true;
        rec_begin(s, &b, "measure", &ff);
        jw_key(&b, "state", &ff);
        sb_json_str(&b, m->fingerprint);
        jw_key(&b, "reward", &ff);
        jw_num(&b, m->valid ? m->speedup : NAN);
        jw_key(&b, "measurement", &ff);
        dojo_measure_json(m, &b);
        rec_end(s, &b);
    }
    return rc;
}

void dojo_measure_json(const DojoMeasure *m, StrBuf *b)
{
    bool ff = true;
    sb_putc(b, '{');
    jw_key(b, "valid", &ff);
    sb_puts(b, m->valid ? "true" : "false");
    jw_key(b, "reason", &ff);
    sb_json_str(b, m->valid ? NULL : m->reason);
    jw_key(b, "cached", &ff);
    sb_puts(b, m->cached ? "true" : "false");
    jw_key(b, "fingerprint", &ff);
    sb_json_str(b, m->fingerprint);
    jw_key(b, "time_ms", &ff);
    if (m->valid)
        sb_printf(b, "{\"median\":%.6g,\"min\":%.6g,\"max\":%.6g,\"reps\":%d}", m->median_ms, m->min_ms, m->max_ms,
                  m->reps);
    else
        sb_puts(b, "null");
    jw_key(b, "gflops", &ff);
    jw_num(b, m->valid ? m->gflops : NAN);
    jw_key(b, "rel_error", &ff);
    jw_num(b, m->valid ? m->rel_error : NAN);
    jw_key(b, "base_ms", &ff);
    jw_num(b, m->base_ms > 0 ? m->base_ms : NAN);
    jw_key(b, "speedup", &ff);
    jw_num(b, m->valid ? m->speedup : NAN);
    jw_key(b, "library", &ff);
    sb_json_str(b, m->lib_call[0] ? m->lib_call : NULL);
    jw_key(b, "library_ms", &ff);
    jw_num(b, m->lib_ms > 0 ? m->lib_ms : NAN);
    jw_key(b, "vs_library", &ff);
    jw_num(b, m->valid && m->vs_library > 0 ? m->vs_library : NAN);
    sb_putc(b, '}');
}
