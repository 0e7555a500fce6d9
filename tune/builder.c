/* The typed schedule builder (tune/builder.h): each operation is one schedule
 * statement, applied at once through schedule_apply (the entry point of every
 * schedule block) and recorded; the loops and buffers it created are read off the
 * kernel and handed back.
 *
 * What is "created" is what did not exist before the statement: the kernel's
 * variables and buffers only ever grow (transformations allocate fresh, uniquely
 * named ones and never rename), so the new loops are those whose variable's index is
 * past the count before, and the new buffer is the one past the old buffer count.
 * Walking the kernel in program order gives them outermost first. */
#include "builder.h"

#include <stdlib.h>
#include <string.h>


enum { MAX_ARGS = 12, MAX_PARAMS = 32 };

typedef struct BParam {
    const char *name;
    SchedArg *cands;
    int n, idx;
    bool used;
} BParam;

struct Builder {
    Kernel *k;
    Arena *a;                  /* handles and recorded statements of this run */
    const ParamChoice *ch;
    int nch;
    bool checking;             /* building the rule: a refused step is dropped */
    const unsigned char *skip; /* applying: the steps dropped at the defaults */
    int nskip;
    unsigned char *dropped;    /* checking: per step */
    int capdrop;
    int step;
    bool failed;
    Diags *d;
    SchedItem *rec;            /* the applied steps as recorded (parameters by name) */
    unsigned *rec_params;      /* per recorded step: the parameters it uses (bits) */
    int nrec, caprec;
    BParam par[MAX_PARAMS];
    int npar;
    const char *prefix;        /* put before every name a template chooses (bld_set_prefix) */
};

/* A name the template chose, with the builder's prefix. */
static const char *chosen(Builder *b, const char *name)
{
    return name && b->prefix ? arena_printf(b->a, "%s%s", b->prefix, name) : name;
}

void bld_set_prefix(Builder *b, const char *prefix)
{
    b->prefix = prefix && *prefix ? arena_strdup(b->a, prefix) : NULL;
}

/* ---- one statement ---- */

typedef struct Call {
    const char *xf;
    SchedArg rec[MAX_ARGS], app[MAX_ARGS];
    int n;
    bool ok;                   /* every handle it needs exists */
    unsigned params;
} Call;

static SchedArg *push(Call *c, const char *key)
{
    if (c->n == MAX_ARGS)
        die("builder: too many arguments to %s", c->xf);
    SchedArg *r = &c->rec[c->n];
    memset(r, 0, sizeof *r);
    r->key = key;
    c->app[c->n] = *r;
    c->n++;
    return r;
}

static void put_name(Call *c, const char *key, const char *name)
{
    SchedArg *r = push(c, key);
    r->kind = SARG_NAME;
    r->name = name;
    c->app[c->n - 1] = *r;
}

static void put_int(Call *c, const char *key, int64_t v)
{
    SchedArg *r = push(c, key);
    r->kind = SARG_INT;
    r->ival = v;
    c->app[c->n - 1] = *r;
}

/* A loop argument: the parameter's name when a parameter chose it. */
/* A buffer argument; a missing handle (its step was dropped) drops this one. */
static void put_buf(Call *c, const SBuf *buf)
{
    put_name(c, NULL, buf ? buf->name : "?");
    if (!buf)
        c->ok = false;
}

static void put_loop(Builder *b, Call *c, const char *key, const SLoop *l)
{
    if (!l) {
        c->ok = false;
        put_name(c, key, "?");
        return;
    }
    put_name(c, key, l->name);
    if (l->param >= 0) {
        c->rec[c->n - 1].name = b->par[l->param].name;
        c->params |= 1u << l->param;
    }
}

static void put_val(Builder *b, Call *c, const char *key, SVal v)
{
    if (v.name)
        put_name(c, key, v.name);
    else
        put_int(c, key, v.i);
    if (v.param >= 0) {
        SchedArg *r = &c->rec[c->n - 1];
        r->kind = SARG_NAME;
        r->name = b->par[v.param].name;
        c->params |= 1u << v.param;
    }
}

static void call_init(Call *c, const char *xf)
{
    memset(c, 0, sizeof *c);
    c->xf = xf;
    c->ok = true;
}

static void mark_dropped(Builder *b, int i)
{
    if (i >= b->capdrop) {
        int cap = b->capdrop ? b->capdrop * 2 : 64;
        while (cap <= i)
            cap *= 2;
        unsigned char *nd = arena_alloc(b->a, (size_t)cap);
        if (b->dropped)
            memcpy(nd, b->dropped, (size_t)b->capdrop);
        b->dropped = nd;
        b->capdrop = cap;
    }
    b->dropped[i] = 1;
}

static void record(Builder *b, const Call *c)
{
    if (b->nrec == b->caprec) {
        int cap = b->caprec ? b->caprec * 2 : 32;
        SchedItem *n = arena_alloc(b->a, sizeof *n * (size_t)cap);
        unsigned *p = arena_alloc(b->a, sizeof *p * (size_t)cap);
        if (b->nrec) {
            memcpy(n, b->rec, sizeof *n * (size_t)b->nrec);
            memcpy(p, b->rec_params, sizeof *p * (size_t)b->nrec);
        }
        b->rec = n;
        b->rec_params = p;
        b->caprec = cap;
    }
    SchedItem *it = &b->rec[b->nrec];
    it->kind = SCHED_CALL;
    it->name = c->xf;
    it->nargs = c->n;
    it->args = arena_alloc(b->a, sizeof *it->args * (size_t)(c->n + 1));
    memcpy(it->args, c->rec, sizeof *it->args * (size_t)c->n);
    b->rec_params[b->nrec++] = c->params;
    for (int p = 0; p < b->npar; p++)
        if (c->params & (1u << p))
            b->par[p].used = true;
}

/* Applies one statement.  Returns true when applied; the caller then reads what it
 * created past *nvars / *nbufs (the counts before). */
static bool run(Builder *b, Call *c, int *nvars, int *nbufs)
{
    int i = b->step++;
    if (b->failed)
        return false;
    if (!b->checking && i < b->nskip && b->skip[i])
        return false;
    SchedItem it = {.kind = SCHED_CALL, .name = c->xf, .args = c->app, .nargs = c->n};
    if (!c->ok) {
        /* a handle it needs was not made: at the defaults the step that should have
         * made it was dropped, and so is this one */
        if (b->checking) {
            mark_dropped(b, i);
        } else {
            StrBuf s = {0};
            xf_item_print(&it, &s);
            diag_plain(b->d, DIAG_ERROR, "internal: the template's statement `%s` lost a loop it needs", s.s);
            sb_free(&s);
            b->failed = true;
        }
        return false;
    }
    if (!b->checking) {
        /* the statement as its own source, so a refusal shows it with a caret */
        StrBuf s = {0};
        xf_item_print(&it, &s);
        Source *src = arena_alloc(b->a, sizeof *src);
        src->path = "<autotune template>";
        src->text = arena_strdup(b->a, s.s);
        src->len = (int)s.len;
        it.span = span_at(src, 0, (int)s.len);
        sb_free(&s);
    }
    *nvars = b->k->nvars;
    *nbufs = b->k->nbufs;
    AstSchedule one = {.span = it.span, .kernel = b->k->name, .items = &it, .nitems = 1};
    Diags q;
    diag_init(&q);
    bool ok = schedule_apply(b->k, &one, NULL, 0, &q);
    if (!ok) {
        if (b->checking) {
            mark_dropped(b, i);
            /* PERFC_TUNE_SPACE=2: why (writing a template) */
            const char *dbg = getenv("PERFC_TUNE_SPACE");
            if (dbg && !strcmp(dbg, "2") && q.text.s)
                fprintf(stderr, "perfc: a template's step was refused: %s", q.text.s);
        } else {
            /* the refusal as schedule_apply reported it, into the caller's diagnostics */
            b->failed = true;
            sb_puts(&b->d->text, q.text.s ? q.text.s : "refused\n");
            b->d->nerrors += q.nerrors ? q.nerrors : 1;
        }
        diag_free(&q);
        return false;
    }
    diag_free(&q);
    record(b, c);
    return true;
}

/* ---- what a statement created ---- */

/* Every node below l in program order (loops before their bodies). */
static void walk(NodeList *l, bool (*f)(Node *, void *), void *ctx)
{
    for (int i = 0; l && i < l->n; i++) {
        f(l->v[i], ctx);
        walk(ir_body(l->v[i]), f, ctx);
    }
}

static bool inside(const Node *anc, const Node *n)
{
    for (const Node *p = n ? n->parent : NULL; p; p = p->parent)
        if (p == anc)
            return true;
    return false;
}

typedef struct NewLoops {
    int from;                  /* variables at or past this index are new */
    Node *v[64];
    int n;
} NewLoops;

static int var_index(const Kernel *k, const Var *v, int from)
{
    for (int i = k->nvars - 1; i >= from; i--)
        if (k->vars[i] == v)
            return i;
    return -1;
}

static bool new_loop_cb(Node *n, void *p)
{
    struct {
        NewLoops *f;
        const Kernel *k;
    } *c = p;
    if (n->kind == N_LOOP && c->f->n < 64 && var_index(c->k, n->u.loop.var, c->f->from) >= 0)
        c->f->v[c->f->n++] = n;
    return true;
}

static void new_loops(Builder *b, int from, NewLoops *f)
{
    memset(f, 0, sizeof *f);
    f->from = from;
    struct {
        NewLoops *f;
        const Kernel *k;
    } c = {f, b->k};
    walk(&b->k->body, new_loop_cb, &c);
}

static SLoop *handle(Builder *b, const Node *l)
{
    SLoop *h = arena_alloc(b->a, sizeof *h);
    h->name = arena_strdup(b->a, l->u.loop.var->name);
    h->param = -1;
    return h;
}

/* The first new loop that nests inside `in` (NULL: any), in program order. */
static Node *first_new(NewLoops *f, const Node *in)
{
    for (int i = 0; i < f->n; i++)
        if (f->v[i] != in && (!in || inside(in, f->v[i])))
            return f->v[i];
    return NULL;
}

/* ---- the kernel's own loops and buffers ---- */

static bool named_cb(Node *n, void *p)
{
    struct {
        const char *name;
        Node *found;
    } *c = p;
    if (n->kind == N_LOOP && !c->found && !strcmp(n->u.loop.var->name, c->name))
        c->found = n;
    return true;
}

static Node *find_loop(Builder *b, const char *name)
{
    struct {
        const char *name;
        Node *found;
    } c = {name, NULL};
    walk(&b->k->body, named_cb, &c);
    return c.found;
}

SLoop *bld_loop(Builder *b, const char *name)
{
    Node *n = find_loop(b, name);
    return n ? handle(b, n) : NULL;
}

bool bld_name_free(Builder *b, const char *name)
{
    return !ir_find_var(b->k, name) && !ir_find_buffer(b->k, name);
}


SBuf *bld_buf(Builder *b, const char *name)
{
    Buffer *x = ir_find_buffer(b->k, name);
    if (!x)
        return NULL;
    SBuf *h = arena_alloc(b->a, sizeof *h);
    h->name = arena_strdup(b->a, x->name);
    return h;
}

/* ---- parameters ---- */

static int find_choice(const Builder *b, const char *name)
{
    for (int i = b->nch - 1; i >= 0; i--)
        if (strcmp(b->ch[i].name, name) == 0)
            return b->ch[i].index;
    return 0;
}

static int add_param(Builder *b, const char *name, int n)
{
    if (b->npar == MAX_PARAMS)
        die("builder: more than %d parameters", MAX_PARAMS);
    BParam *p = &b->par[b->npar];
    name = chosen(b, name);
    p->name = arena_strdup(b->a, name);
    p->n = n;
    p->cands = arena_alloc(b->a, sizeof *p->cands * (size_t)(n + 1));
    p->idx = b->checking ? 0 : find_choice(b, name);
    if (n == 0 || p->idx < 0 || p->idx >= n) {
        if (!b->failed)
            diag_plain(b->d, DIAG_ERROR, "parameter %s has %d candidates; choice %d is out of range", name, n,
                       p->idx);
        b->failed = true;
        p->idx = 0;
    }
    return b->npar++;
}

SVal bld_param(Builder *b, const char *name, const int64_t *cands, int n)
{
    int p = add_param(b, name, n);
    for (int i = 0; i < n; i++) {
        b->par[p].cands[i].kind = SARG_INT;
        b->par[p].cands[i].ival = cands[i];
    }
    return (SVal){n ? cands[b->par[p].idx] : 0, NULL, p};
}

SVal bld_param_names(Builder *b, const char *name, const char *const *cands, int n)
{
    int p = add_param(b, name, n);
    for (int i = 0; i < n; i++) {
        b->par[p].cands[i].kind = SARG_NAME;
        b->par[p].cands[i].name = arena_strdup(b->a, cands[i]);
    }
    return (SVal){0, n ? b->par[p].cands[b->par[p].idx].name : "?", p};
}

SLoop *bld_param_loop(Builder *b, const char *name, SLoop *const *cands, int n)
{
    SLoop *live[16];
    int m = 0;
    for (int i = 0; i < n && m < 16; i++)
        if (cands[i])
            live[m++] = cands[i];
    int p = add_param(b, name, m);
    for (int i = 0; i < m; i++) {
        b->par[p].cands[i].kind = SARG_NAME;
        b->par[p].cands[i].name = live[i]->name;
    }
    if (!m)
        return NULL;
    SLoop *h = arena_alloc(b->a, sizeof *h);
    h->name = live[b->par[p].idx]->name;
    h->param = p;
    return h;
}

/* ---- transformations ---- */

static bool split_common(Builder *b, Call *c, SLoop **outer, SLoop **inner)
{
    int nv, nb;
    *outer = *inner = NULL;
    if (!run(b, c, &nv, &nb))
        return false;
    NewLoops f;
    new_loops(b, nv, &f);
    Node *o = first_new(&f, NULL), *i = o ? first_new(&f, o) : NULL;
    /* (a statement that applied but made no loop leaves the handles NULL: the
     * statements that need them are dropped or refused, never guessed) */
    *outer = o && i ? handle(b, o) : NULL;
    *inner = o && i ? handle(b, i) : NULL;
    return true;
}

bool bld_split(Builder *b, SLoop *l, SVal factor, SLoop **outer, SLoop **inner)
{
    return bld_split_named(b, l, factor, NULL, NULL, outer, inner);
}

static bool split_named(Builder *b, SLoop *l, SVal factor, const char *oname, const char *iname, bool pad,
                        SLoop **outer, SLoop **inner)
{
    Call c;
    call_init(&c, "split");
    put_loop(b, &c, NULL, l);
    put_val(b, &c, NULL, factor);
    if (oname) {
        put_name(&c, NULL, chosen(b, oname));
        put_name(&c, NULL, chosen(b, iname));
    }
    if (pad)
        put_val(b, &c, "tail", (SVal){0, "pad", -1});
    return split_common(b, &c, outer, inner);
}

bool bld_split_named(Builder *b, SLoop *l, SVal factor, const char *oname, const char *iname, SLoop **outer,
                     SLoop **inner)
{
    return split_named(b, l, factor, oname, iname, false, outer, inner);
}

bool bld_split_padded(Builder *b, SLoop *l, SVal factor, const char *oname, const char *iname, SLoop **outer,
                      SLoop **inner)
{
    return split_named(b, l, factor, oname, iname, true, outer, inner);
}

bool bld_split_tail(Builder *b, SLoop *l, SVal factor, SVal tail, SLoop **outer, SLoop **inner)
{
    Call c;
    call_init(&c, "split");
    put_loop(b, &c, NULL, l);
    put_val(b, &c, NULL, factor);
    put_val(b, &c, "tail", tail);
    return split_common(b, &c, outer, inner);
}

static bool tile(Builder *b, SLoop *i, SLoop *j, SVal ti, SVal tj, const char *const names[4], bool pad,
                 SLoop *out[4])
{
    Call c;
    call_init(&c, "tile");
    put_loop(b, &c, NULL, i);
    put_loop(b, &c, NULL, j);
    put_val(b, &c, NULL, ti);
    put_val(b, &c, NULL, tj);
    for (int x = 0; names && x < 4; x++)
        put_name(&c, NULL, chosen(b, names[x]));
    if (pad)
        put_val(b, &c, "tail", (SVal){0, "pad", -1});
    int nv, nb;
    for (int x = 0; x < 4; x++)
        out[x] = NULL;
    if (!run(b, &c, &nv, &nb))
        return false;
    NewLoops f;
    new_loops(b, nv, &f);
    /* io contains jo contains ii contains ji */
    Node *prev = NULL;
    for (int x = 0; x < 4; x++) {
        Node *n = first_new(&f, prev);
        if (!n)
            break;
        out[x] = handle(b, n);
        prev = n;
    }
    return true;
}

bool bld_tile(Builder *b, SLoop *i, SLoop *j, SVal ti, SVal tj, const char *const names[4], SLoop *out[4])
{
    return tile(b, i, j, ti, tj, names, false, out);
}

bool bld_tile_padded(Builder *b, SLoop *i, SLoop *j, SVal ti, SVal tj, const char *const names[4], SLoop *out[4])
{
    return tile(b, i, j, ti, tj, names, true, out);
}

bool bld_reorder(Builder *b, SLoop *const *order, int n)
{
    Call c;
    call_init(&c, "reorder");
    for (int i = 0; i < n; i++)
        put_loop(b, &c, NULL, order[i]);
    int nv, nb;
    return run(b, &c, &nv, &nb);
}

static bool one_loop(Builder *b, const char *xf, SLoop *l)
{
    Call c;
    call_init(&c, xf);
    put_loop(b, &c, NULL, l);
    int nv, nb;
    return run(b, &c, &nv, &nb);
}

bool bld_fuse(Builder *b, SLoop *a, SLoop *x)
{
    Call c;
    call_init(&c, "fuse");
    put_loop(b, &c, NULL, a);
    put_loop(b, &c, NULL, x);
    int nv, nb;
    return run(b, &c, &nv, &nb);
}

bool bld_distribute(Builder *b, SLoop *l, SLoop **copy)
{
    Call c;
    call_init(&c, "distribute");
    put_loop(b, &c, NULL, l);
    int nv, nb;
    *copy = NULL;
    if (!run(b, &c, &nv, &nb))
        return false;
    NewLoops f;
    new_loops(b, nv, &f);
    Node *n = first_new(&f, NULL);
    *copy = n ? handle(b, n) : NULL;
    return true;
}

int bld_distribute_all(Builder *b, SLoop *l, SLoop **copies, int cap)
{
    Call c;
    call_init(&c, "distribute");
    put_loop(b, &c, NULL, l);
    int nv, nb;
    if (!run(b, &c, &nv, &nb))
        return -1;
    NewLoops f;
    new_loops(b, nv, &f);
    /* the copies are the new loops beside l (what they hold keeps its loops) */
    const Node *orig = find_loop(b, l->name);
    int n = 0;
    for (int i = 0; i < f.n && n < cap; i++)
        if (orig && f.v[i]->parent == orig->parent)
            copies[n++] = handle(b, f.v[i]);
    return n;
}

bool bld_unroll(Builder *b, SLoop *l) { return one_loop(b, "unroll", l); }

bool bld_unroll_max(Builder *b, SLoop *l, int64_t max)
{
    Call c;
    call_init(&c, "unroll");
    put_loop(b, &c, NULL, l);
    put_int(&c, "max", max);
    int nv, nb;
    return run(b, &c, &nv, &nb);
}
bool bld_factor_out(Builder *b, SLoop *l) { return one_loop(b, "factor_out", l); }

bool bld_skip_tiles(Builder *b, SLoop *l) { return one_loop(b, "skip_tiles", l); }
bool bld_reverse(Builder *b, SLoop *l) { return one_loop(b, "reverse", l); }

bool bld_online_softmax(Builder *b, SBuf *out, SLoop *j, SVal tile, const char *mask)
{
    Call c;
    call_init(&c, "online_softmax");
    put_buf(&c, out);
    put_loop(b, &c, NULL, j);
    put_val(b, &c, NULL, tile);
    if (mask)
        put_name(&c, "mask", mask);
    int nv, nb;
    return run(b, &c, &nv, &nb);
}

bool bld_exp_scale(Builder *b, SBuf *scores)
{
    Call c;
    call_init(&c, "exp_scale");
    put_buf(&c, scores);
    int nv, nb;
    return run(b, &c, &nv, &nb);
}

bool bld_storage(Builder *b, SBuf *buf, const char *dtype)
{
    Call c;
    call_init(&c, "storage");
    put_buf(&c, buf);
    put_name(&c, NULL, dtype);
    int nv, nb;
    return run(b, &c, &nv, &nb);
}

static void children(Builder *b, NodeList *l, SLoop **out, int cap, int *n)
{
    for (int i = 0; l && i < l->n; i++) {
        Node *x = l->v[i];
        if (x->kind == N_LOOP && *n < cap)
            out[(*n)++] = handle(b, x);
        else if (x->kind == N_IF)
            children(b, &x->u.guard.body, out, cap, n);
    }
}

int bld_children(Builder *b, SLoop *l, SLoop **out, int cap)
{
    Node *n = l ? find_loop(b, l->name) : NULL;
    int k = 0;
    if (n)
        children(b, &n->u.loop.body, out, cap, &k);
    return k;
}

SLoop *bld_child(Builder *b, SLoop *l)
{
    SLoop *c[2];
    return l && bld_children(b, l, c, 2) == 1 ? c[0] : NULL;
}
bool bld_vectorize(Builder *b, SLoop *l) { return one_loop(b, "vectorize", l); }
bool bld_parallel(Builder *b, SLoop *l) { return one_loop(b, "parallel", l); }
bool bld_rfactor(Builder *b, SLoop *l) { return one_loop(b, "rfactor", l); }

SBuf *bld_rfactor_expanded(Builder *b, SLoop *l, const char *name, SLoop **init, SLoop **comb)
{
    Call c;
    call_init(&c, "rfactor");
    put_loop(b, &c, NULL, l);
    if (name)
        put_name(&c, "name", chosen(b, name));
    put_int(&c, "expand", 1);
    *init = *comb = NULL;
    int nv, nb;
    if (!run(b, &c, &nv, &nb) || b->k->nbufs <= nb)
        return NULL;
    /* the new loops in program order: the initialisation, then the combination */
    NewLoops f;
    new_loops(b, nv, &f);
    if (f.n == 2)
        *init = handle(b, f.v[0]), *comb = handle(b, f.v[1]);
    return bld_buf(b, b->k->bufs[nb]->name);
}

SBuf *bld_cache(Builder *b, SBuf *buf, SLoop *at, const char *mem, const char *name)
{
    return bld_cache_squeezed(b, buf, at, mem, name, false);
}

/* cache and gather: the staged buffer's handle, with the copy nests they made */
static SBuf *staged(Builder *b, const char *op, SBuf *buf, SLoop *at, const char *mem, const char *name, bool squeeze,
                    SLoop *use)
{
    Call c;
    call_init(&c, op);
    put_buf(&c, buf);
    put_loop(b, &c, NULL, at);
    if (mem)
        put_name(&c, "mem", mem);
    if (name)
        put_name(&c, "name", chosen(b, name));
    if (squeeze)
        put_int(&c, "squeeze", 1);
    if (use)
        put_loop(b, &c, "using", use);
    int nv, nb;
    if (!run(b, &c, &nv, &nb))
        return NULL;
    if (b->k->nbufs <= nb)
        return NULL;
    SBuf *h = arena_alloc(b->a, sizeof *h);
    h->name = arena_strdup(b->a, b->k->bufs[nb]->name);
    /* the copy nests: a new loop whose parent is not new starts one */
    NewLoops f;
    new_loops(b, nv, &f);
    for (int i = 0; i < f.n; i++) {
        const Node *p = f.v[i]->parent;
        bool top = true;
        for (int j = 0; j < i && top; j++)
            top = f.v[j] != p;
        if (top) {
            if (h->nnest == BLD_MAX_NESTS)
                break;
            h->nnest++;
        }
        int g = h->nnest - 1;
        if (h->rank[g] < BLD_MAX_RANK)
            h->nest[g][h->rank[g]++] = handle(b, f.v[i]);
    }
    return h;
}

SBuf *bld_cache_squeezed(Builder *b, SBuf *buf, SLoop *at, const char *mem, const char *name, bool squeeze)
{
    return staged(b, "cache", buf, at, mem, name, squeeze, NULL);
}

SBuf *bld_cache_using(Builder *b, SBuf *buf, SLoop *at, SLoop *use)
{
    return staged(b, "cache", buf, at, NULL, NULL, false, use);
}

SBuf *bld_cache_using_in(Builder *b, SBuf *buf, SLoop *at, SLoop *use, const char *mem)
{
    return staged(b, "cache", buf, at, mem, NULL, false, use);
}

SBuf *bld_gather(Builder *b, SBuf *buf, SLoop *at, const char *mem, const char *name)
{
    return staged(b, "gather", buf, at, mem, name, false, NULL);
}

bool bld_padding(Builder *b, SBuf *buf, SVal amount)
{
    Call c;
    call_init(&c, "padding");
    put_buf(&c, buf);
    put_val(b, &c, NULL, amount);
    int nv, nb;
    return run(b, &c, &nv, &nb);
}

SBuf *bld_realign(Builder *b, SBuf *buf, int64_t multiple)
{
    Call c;
    call_init(&c, "realign");
    put_buf(&c, buf);
    put_int(&c, NULL, multiple);
    int nv, nb;
    if (!run(b, &c, &nv, &nb) || b->k->nbufs <= nb)
        return NULL;
    SBuf *h = arena_alloc(b->a, sizeof *h);
    h->name = arena_strdup(b->a, b->k->bufs[nb]->name);
    /* the copy's loops, outermost first: one nest */
    NewLoops f;
    new_loops(b, nv, &f);
    h->nnest = 1;
    for (int i = 0; i < f.n && h->rank[0] < BLD_MAX_RANK; i++)
        h->nest[0][h->rank[0]++] = handle(b, f.v[i]);
    return h;
}

bool bld_layout(Builder *b, SBuf *buf, const int *perm, int n)
{
    Call c;
    call_init(&c, "layout");
    put_buf(&c, buf);
    for (int i = 0; i < n; i++)
        put_int(&c, NULL, perm[i]);
    int nv, nb;
    return run(b, &c, &nv, &nb);
}

bool bld_prefetch(Builder *b, SBuf *buf, SLoop *at, SLoop *from)
{
    Call c;
    call_init(&c, "prefetch");
    put_buf(&c, buf);
    put_loop(b, &c, NULL, at);
    put_loop(b, &c, NULL, from);
    int nv, nb;
    return run(b, &c, &nv, &nb);
}

bool bld_fold(Builder *b, SBuf *buf, int dim, int64_t factor)
{
    Call c;
    call_init(&c, "fold");
    put_buf(&c, buf);
    put_int(&c, NULL, dim);
    put_int(&c, NULL, factor);
    int nv, nb;
    return run(b, &c, &nv, &nb);
}

bool bld_bind(Builder *b, SLoop *l, const char *axis)
{
    Call c;
    call_init(&c, "bind");
    put_loop(b, &c, NULL, l);
    put_name(&c, NULL, axis);
    int nv, nb;
    return run(b, &c, &nv, &nb);
}

static bool triple(Builder *b, const char *xf, SLoop *i, SLoop *j, SLoop *k)
{
    Call c;
    call_init(&c, xf);
    put_loop(b, &c, NULL, i);
    put_loop(b, &c, NULL, j);
    put_loop(b, &c, NULL, k);
    int nv, nb;
    return run(b, &c, &nv, &nb);
}

bool bld_mma(Builder *b, SLoop *i, SLoop *j, SLoop *k) { return triple(b, "mma", i, j, k); }
bool bld_wgmma(Builder *b, SLoop *i, SLoop *j, SLoop *k) { return triple(b, "wgmma", i, j, k); }

bool bld_pipeline(Builder *b, SLoop *l, SVal stages, bool inflight)
{
    Call c;
    call_init(&c, "pipeline");
    put_loop(b, &c, NULL, l);
    put_val(b, &c, NULL, stages);
    if (inflight)
        put_int(&c, "inflight", 1);
    int nv, nb;
    return run(b, &c, &nv, &nb);
}

bool bld_collapse(Builder *b, SLoop *outer, SLoop *inner, const char *name, SLoop **out)
{
    Call c;
    call_init(&c, "collapse");
    put_loop(b, &c, NULL, outer);
    put_loop(b, &c, NULL, inner);
    if (name)
        put_name(&c, NULL, chosen(b, name));
    int nv, nb;
    *out = NULL;
    if (!run(b, &c, &nv, &nb))
        return false;
    NewLoops f;
    new_loops(b, nv, &f);
    Node *n = first_new(&f, NULL);
    *out = n ? handle(b, n) : NULL;
    return true;
}

/* ---- rules ---- */

/* A parameter's value as a statement argument prints it (integers and names only). */
static void value_print(const SchedArg *v, StrBuf *out)
{
    if (v->kind == SARG_INT)
        sb_printf(out, "%lld", (long long)v->ival);
    else
        sb_puts(out, v->name);
}

/* The recorded schedule: the parameters kept steps use, `param X = v`, then the
 * statements (schedule_print's form, so the text parses back). */
static void print_recorded(const Builder *b, StrBuf *out)
{
    for (int p = 0; p < b->npar; p++)
        if (b->par[p].used) {
            sb_printf(out, "param %s = ", b->par[p].name);
            value_print(&b->par[p].cands[b->par[p].idx], out);
            sb_putc(out, '\n');
        }
    for (int i = 0; i < b->nrec; i++) {
        xf_item_print(&b->rec[i], out);
        sb_putc(out, '\n');
    }
}

TuneRule *tune_rule_check(TuneBuildFn fn, const void *ctx, Kernel *k, Arena *a)
{
    Builder b = {.k = k, .a = arena_new(), .checking = true};
    Diags d;
    diag_init(&d);
    b.d = &d;
    TuneRule *r = NULL;
    bool fits = fn(&b, ctx);
    if (fits && !b.failed) {
        r = arena_alloc(a, sizeof *r);
        r->fn = fn;
        r->ctx = ctx;
        r->nsteps = b.step;
        r->skip = arena_alloc(a, (size_t)b.step + 1);
        for (int i = 0; i < b.step && i < b.capdrop; i++)
            if (b.dropped[i]) {
                r->skip[i] = 1;
                r->dropped++;
            }
        for (int p = 0; p < b.npar && r->nparams < 16; p++) {
            if (!b.par[p].used)
                continue;
            int q = r->nparams++;
            r->names[q] = arena_strdup(a, b.par[p].name);
            r->ncands[q] = b.par[p].n;
            r->values[q] = arena_alloc(a, sizeof *r->values[q] * (size_t)b.par[p].n);
            for (int v = 0; v < b.par[p].n; v++) {
                StrBuf s = {0};
                value_print(&b.par[p].cands[v], &s);
                r->values[q][v] = arena_strdup(a, s.s);
                sb_free(&s);
            }
        }
    }
    /* PERFC_TUNE_SPACE=2: why a template's steps were refused (writing a template) */
    const char *dbg = getenv("PERFC_TUNE_SPACE");
    if (dbg && !strcmp(dbg, "2") && d.text.len)
        fprintf(stderr, "perfc: a template's refused steps (%s):\n%s", fits ? "it fits" : "it does not fit", d.text.s);
    diag_free(&d);
    arena_free(b.a);
    return r;
}

bool tune_rule_apply(const TuneRule *r, Kernel *k, const ParamChoice *ch, int nch, StrBuf *text, Diags *d)
{
    Builder b = {.k = k, .a = arena_new(), .ch = ch, .nch = nch, .skip = r->skip, .nskip = r->nsteps, .d = d};
    bool fits = r->fn(&b, r->ctx);
    bool ok = !b.failed;
    if (ok && !fits) {
        diag_plain(d, DIAG_ERROR, "internal: a template of the rules no longer fits the kernel");
        ok = false;
    }
    if (ok && text)
        print_recorded(&b, text);
    arena_free(b.a);
    return ok;
}
