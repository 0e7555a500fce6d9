/* Schedules: an ordered list of transformation statements with named parameters.
 *
 * `param T in [32, 64]` declares a tunable value; a later statement that names T
 * gets the chosen candidate (the first by default), so one schedule text is both a
 * template for the autotuner and a concrete schedule.  Statements apply in order,
 * each atomically; the first refusal stops the schedule with its diagnostic. */
#include <stdlib.h>
#include <string.h>

#include "xform_int.h"
#include "lang/pdl_limits.h"

static int find_choice(const ParamChoice *ch, int n, const char *name)
{
    for (int i = n - 1; i >= 0; i--)
        if (strcmp(ch[i].name, name) == 0)
            return ch[i].index;
    return 0;
}

/* The size of the loop nest a schedule has built so far: its deepest nest of loops
 * and its number of nodes.  Each transformation is cheap alone, but a long schedule
 * can nest hundreds of loops (200 splits took 1.3 GB, 400 exhausted memory) or
 * double the tree with every peeled split; both are refused after the statement
 * that crosses the limit, before the next one (or code generation) pays for it. */
static void nest_size(Node *n, int depth, int *maxdepth, long *nodes)
{
    if (n->kind == N_LOOP && depth + 1 > *maxdepth)
        *maxdepth = depth + 1;
    (*nodes)++;
    NodeList *b = ir_body(n);
    for (int i = 0; b && i < b->n && *nodes <= PDL_MAX_IR_NODES && *maxdepth <= PDL_MAX_LOOP_DEPTH; i++)
        nest_size(b->v[i], depth + (n->kind == N_LOOP), maxdepth, nodes);
}

static bool nest_within_limits(Kernel *k, const SchedItem *it, Diags *d)
{
    int depth = 0;
    long nodes = 0;
    for (int i = 0; i < k->body.n && nodes <= PDL_MAX_IR_NODES && depth <= PDL_MAX_LOOP_DEPTH; i++)
        nest_size(k->body.v[i], 0, &depth, &nodes);
    if (depth > PDL_MAX_LOOP_DEPTH) {
        diag_error(d, it->span, "after this statement loops nest more than %d deep, the limit", PDL_MAX_LOOP_DEPTH);
        return false;
    }
    if (nodes > PDL_MAX_IR_NODES) {
        diag_error(d, it->span, "after this statement the kernel has more than %d loops, guards and statements, "
                   "the limit", PDL_MAX_IR_NODES);
        return false;
    }
    return true;
}

bool schedule_apply(Kernel *k, const AstSchedule *s, const ParamChoice *choices, int nchoices,
                    Diags *d)
{
    const char **names = xcalloc((size_t)s->nitems + 1, sizeof *names);
    const SchedArg **vals = xcalloc((size_t)s->nitems + 1, sizeof *vals);
    SchedEnv env = {.n = 0, .names = names, .values = vals};
    bool ok = true;
    for (int i = 0; i < s->nitems && ok; i++) {
        const SchedItem *it = &s->items[i];
        if (it->kind == SCHED_PARAM) {
            int idx = find_choice(choices, nchoices, it->name);
            if (it->nargs == 0) {
                diag_error(d, it->span, "parameter %s has no candidates", it->name);
                ok = false;
            } else if (idx < 0 || idx >= it->nargs) {
                diag_error(d, it->span, "parameter %s has %d candidates; choice %d is out of range",
                           it->name, it->nargs, idx);
                ok = false;
            } else {
                names[env.n] = it->name;
                vals[env.n] = &it->args[idx];
                env.n++;
            }
            continue;
        }
        ok = xf_apply(k, it, &env, d) && nest_within_limits(k, it, d);
    }
    free(names);
    free(vals);
    return ok;
}

int schedule_params(const AstSchedule *s, const char **names, int *ncands, int cap)
{
    int n = 0;
    for (int i = 0; i < s->nitems; i++)
        if (s->items[i].kind == SCHED_PARAM) {
            if (n < cap) {
                names[n] = s->items[i].name;
                ncands[n] = s->items[i].nargs;
            }
            n++;
        }
    return n;
}

void schedule_print(const AstSchedule *s, const ParamChoice *choices, int nchoices, StrBuf *out)
{
    for (int i = 0; i < s->nitems; i++) {
        const SchedItem *it = &s->items[i];
        if (it->kind != SCHED_PARAM)
            continue;
        int idx = find_choice(choices, nchoices, it->name);
        if (idx < 0 || idx >= it->nargs)
            idx = 0;
        sb_printf(out, "param %s = ", it->name);
        if (it->nargs)
            xf_arg_print(&it->args[idx], out);
        sb_putc(out, '\n');
    }
    for (int i = 0; i < s->nitems; i++)
        if (s->items[i].kind == SCHED_CALL) {
            xf_item_print(&s->items[i], out);
            sb_putc(out, '\n');
        }
}

bool schedule_matches_target(const char *st, const Target *t)
{
    if (!t)
        t = target_find("host");
    if (!st || strcmp(st, "any") == 0)
        return true;
    if (strcmp(st, "cpu") == 0)
        return target_is_cpu(t);
    if (strcmp(st, "gpu") == 0 || strcmp(st, "cuda") == 0)
        return target_is_gpu(t);
    const char *tgt = t->name;
    size_t n = strlen(st);
    /* `x86_64` covers `x86_64-avx512`; `sm_90` covers `sm_90a`. */
    return strncmp(st, tgt, n) == 0 && (tgt[n] == 0 || tgt[n] == '-' || tgt[n] == 'a');
}

bool schedule_applies(const AstSchedule *s, const AstKernel *k, const Target *tgt, const char *variant)
{
    if (strcmp(s->kernel, k->name) || !schedule_matches_target(s->target, tgt))
        return false;
    if (variant ? !s->variant || strcmp(s->variant, variant) : s->variant != NULL)
        return false;
    return schedule_guard_holds(s, k);
}
