/* The tuner's starting points as dojo moves (the `hints` verb, docs/dojo.md).  The
 * autotuner searches the parameters of a few schedule templates that its rules build
 * for the kernel's class (tune/rules.c); each template with one choice per parameter
 * (by default its first candidates: on a CPU the machine's cache and register
 * blocking, tune/blocking.c) is a schedule a player can start from.  Here a template
 * becomes what a client can play: its statements with the `param X = v` values written
 * into them, one move each, in the canonical text `step` keeps, together with the
 * parameters and their candidate values, so that a player can ask for other choices.
 * dojo_game.c checks that a hint plays move by move from the start of the game
 * before offering it. */
#include <stdlib.h>
#include <string.h>

#include "dojo.h"
#include "passes/xform.h"
#include "tune/tune.h"

/* The moves of one concrete schedule text (`param X = v` lines, then statements):
 * each statement with every argument that names a parameter replaced by its value
 * (the last definition before it, as schedule_apply resolves them), printed.  The
 * value printed for parameter `want` (may be NULL) goes to val. */
static bool concrete_moves(Arena *a, const char *text, PtrVec *out, const char *want, char *val, size_t nval)
{
    Source *src = arena_alloc(a, sizeof *src);
    src->path = "<hint>";
    src->text = arena_strdup(a, text);
    src->len = strlen(text);
    Diags d;
    diag_init(&d);
    AstSchedule *s = parse_schedule_text(a, src, &d);
    bool ok = s && !d.nerrors;
    diag_free(&d);
    for (int i = 0; ok && i < s->nitems; i++) {
        const SchedItem *it = &s->items[i];
        if (it->kind != SCHED_CALL) {
            if (want && !strcmp(it->name, want) && it->nargs == 1) {
                /* the value as a one-argument statement prints it: `x(VALUE)` */
                SchedItem show = {.kind = SCHED_CALL, .name = "x", .args = it->args, .nargs = 1};
                StrBuf t = {0};
                xf_item_print(&show, &t);
                snprintf(val, nval, "%.*s", t.len > 3 ? (int)t.len - 3 : 0, t.s ? t.s + 2 : "");
                sb_free(&t);
            }
            continue;
        }
        SchedItem c = *it;
        c.args = arena_alloc(a, sizeof *c.args * (size_t)(it->nargs ? it->nargs : 1));
        for (int j = 0; j < it->nargs; j++) {
            c.args[j] = it->args[j];
            if (c.args[j].kind != SARG_NAME)
                continue;
            for (int p = i - 1; p >= 0; p--) {
                const SchedItem *q = &s->items[p];
                if (q->kind == SCHED_PARAM && !strcmp(q->name, c.args[j].name)) {
                    if (q->nargs != 1) /* a concrete text fixes every parameter */
                        ok = false;
                    else {
                        const char *key = c.args[j].key;
                        c.args[j] = q->args[0];
                        c.args[j].key = key;
                    }
                    break;
                }
            }
        }
        StrBuf t = {0};
        xf_item_print(&c, &t);
        vec_push(out, t.s);
    }
    return ok;
}

static void free_moves(PtrVec *m)
{
    for (int j = 0; j < m->n; j++)
        free(m->v[j]);
    vec_free(m);
}

/* The template's moves at the choices ch (NULL: the defaults) into h->moves; the
 * value of parameter `want` at its choice into val. */
static bool instance(const TuneInput *in, const TuneTemplate *t, const ParamChoice *ch, int nch, DojoHint *h,
                     Arena *a, const char *want, char *val, size_t nval)
{
    StrBuf text = {0};
    PtrVec moves = {0};
    bool ok = tune_text(in, t, ch, nch, &text) && text.s &&
              concrete_moves(a, text.s, &moves, want, val, nval) && moves.n > 0;
    sb_free(&text);
    if (!ok) {
        free_moves(&moves);
        return false;
    }
    h->moves = (char **)moves.v;
    h->n = moves.n;
    return true;
}

/* The tuner's space of the game's kernel (templates in a). */
static bool space(Compilation *c, TuneInput *in, Arena *a, TuneSpace *sp)
{
    *in = (TuneInput){.prog = c->prog, .ast = c->ast, .values = c->values, .bound = c->bound};
    if (!target_is_cpu(c->target) && !target_is_gpu(c->target))
        return false;
    Diags d;
    diag_init(&d);
    bool ok = tune_space(in, c->unscheduled, c->target, a, sp, &d);
    diag_free(&d);
    return ok;
}

int dojo_hint_candidates(Compilation *c, DojoHint **out)
{
    *out = NULL;
    Arena *a = arena_new();
    TuneInput in;
    TuneSpace sp;
    int n = 0;
    if (space(c, &in, a, &sp)) {
        *out = xcalloc((size_t)sp.n + 1, sizeof **out);
        for (int i = 0; i < sp.n; i++) {
            const TuneTemplate *t = &sp.t[i];
            DojoHint *h = &(*out)[n];
            memset(h, 0, sizeof *h);
            if ((!t->rule && !t->s) || !instance(&in, t, NULL, 0, h, a, NULL, NULL, 0)) /* "no schedule": the start */
                continue;
            h->tindex = i;
            snprintf(h->origin, sizeof h->origin, "%s", t->origin ? t->origin : "");
            /* each parameter's candidates, as values: the text of each choice alone */
            for (int p = 0; p < t->nparams && h->nparams < DOJO_HINT_PARAMS; p++) {
                DojoHintParam *hp = &h->params[h->nparams];
                snprintf(hp->name, sizeof hp->name, "%s", t->names[p]);
                hp->nvalues = 0;
                for (int j = 0; j < t->ncands[p] && hp->nvalues < DOJO_HINT_VALUES; j++) {
                    ParamChoice ch = {t->names[p], j};
                    DojoHint tmp = {0};
                    char val[sizeof hp->values[0]] = "";
                    if (instance(&in, t, &ch, 1, &tmp, a, t->names[p], val, sizeof val) && val[0])
                        snprintf(hp->values[hp->nvalues++], sizeof hp->values[0], "%s", val);
                    dojo_hints_free_moves(&tmp);
                }
                if (hp->nvalues == t->ncands[p]) /* a parameter whose values cannot all be shown is left fixed */
                    h->nparams++;
            }
            n++;
        }
    }
    arena_free(a);
    return n;
}

bool dojo_hint_instance(Compilation *c, DojoHint *h, const int *choice, StrBuf *err)
{
    Arena *a = arena_new();
    TuneInput in;
    TuneSpace sp;
    bool ok = false;
    if (!space(c, &in, a, &sp) || h->tindex >= sp.n) {
        sb_puts(err, "the tuner's templates could not be built again");
    } else {
        ParamChoice ch[DOJO_HINT_PARAMS];
        for (int p = 0; p < h->nparams; p++)
            ch[p] = (ParamChoice){h->params[p].name, choice[p]};
        DojoHint x = {0};
        ok = instance(&in, &sp.t[h->tindex], ch, h->nparams, &x, a, NULL, NULL, 0);
        if (ok) {
            dojo_hints_free_moves(h);
            h->moves = x.moves;
            h->n = x.n;
            for (int p = 0; p < h->nparams; p++)
                h->params[p].chosen = choice[p];
        } else {
            sb_puts(err, "the template does not apply with these choices");
        }
    }
    arena_free(a);
    return ok;
}

void dojo_hints_free_moves(DojoHint *h)
{
    for (int j = 0; j < h->n; j++)
        free(h->moves[j]);
    free(h->moves);
    h->moves = NULL;
    h->n = 0;
}
