/* Lower and apply: the one place where the tuner turns the checked kernel and a
 * template with one choice per parameter (a rule's, built through tune/builder.c, or
 * a written schedule) into a scheduled loop nest.  The search's workers, the rules
 * checking their templates, the final run and the database's answer all come
 * through here, so every candidate is built the way `perfc FILE -s ...` builds a
 * kernel: lowered afresh from the AST, the schedule's statements applied through
 * schedule_apply, then the rest of the pipeline (passes/pipeline.c).  Lowering reads
 * the shared AST and its checked annotations, so it is done one at a time; the
 * schedule runs in parallel on each thread's own copy.
 * The candidate stays as scheduled (what the pruning and the cost model read);
 * tune_lower makes the copy the back end translates, with the target's
 * legalisation and lowering passes. */
#include "tune.h"

#include <pthread.h>

#include "../passes/passes.h"
#include "builder.h"

static pthread_mutex_t lower_lock = PTHREAD_MUTEX_INITIALIZER;

Kernel *tune_apply(const TuneInput *in, const TuneTemplate *t, const ParamChoice *ch, int nch, StrBuf *text,
                   Diags *d)
{
    pthread_mutex_lock(&lower_lock);
    Kernel *k = lower_kernel(in->prog, in->ast, in->values, in->bound, d);
    pthread_mutex_unlock(&lower_lock);
    if (!k || !t)
        return k;
    const AstSchedule *list[1] = {t->s};
    PipelineOpts po = {0};
    if (t->rule) {
        /* the rule applies its statements itself; the pipeline runs the rest */
        if (!tune_rule_apply(t->rule, k, ch, nch, text, d)) {
            ir_free(k);
            return NULL;
        }
    } else if (t->s) {
        po.schedules = list;
        po.nschedules = 1;
        po.choices = ch;
        po.nchoices = nch;
    }
    if (!pipeline_run(k, &po, d)) {
        ir_free(k);
        return NULL;
    }
    if (text && !t->rule && t->s)
        schedule_print(t->s, ch, nch, text);
    return k;
}

bool tune_text(const TuneInput *in, const TuneTemplate *t, const ParamChoice *ch, int nch, StrBuf *text)
{
    if (!t->rule) {
        if (t->s)
            schedule_print(t->s, ch, nch, text);
        return true;
    }
    Diags d;
    diag_init(&d);
    Kernel *k = tune_apply(in, t, ch, nch, text, &d);
    diag_free(&d);
    if (k)
        ir_free(k);
    return k != NULL;
}

Kernel *tune_lower(const Kernel *k, const Target *target, Diags *d)
{
    Kernel *low = ir_clone_kernel(k);
    if (!pipeline_target(low, target, d)) {
        ir_free(low);
        return NULL;
    }
    return low;
}
