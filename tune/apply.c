/* Lower and apply: the one place where the tuner turns the checked kernel and a
 * schedule (a template with one choice per parameter, or a concrete schedule) into a
 * scheduled loop nest.  The search's workers, the rules checking their templates, the
 * final run and the database's answer all come through here, so every candidate is
 * built the way `perfc FILE -s ...` builds a kernel: lowered afresh from the AST,
 * then the schedule pipeline (passes/pipeline.c).  Lowering reads the shared AST and
 * its checked annotations, so it is done one at a time; the schedule runs in
 * parallel on each thread's own copy.  The candidate stays as scheduled (what the
 * pruning and the cost model read); tune_lower makes the copy the back end
 * translates, with the target's legalisation and lowering passes. */
#include "tune.h"

#include <pthread.h>

#include "../passes/passes.h"

static pthread_mutex_t lower_lock = PTHREAD_MUTEX_INITIALIZER;

Kernel *tune_apply(const TuneInput *in, const AstSchedule *s, const ParamChoice *ch, int nch, Diags *d)
{
    pthread_mutex_lock(&lower_lock);
    Kernel *k = lower_kernel(in->prog, in->ast, in->values, in->bound, d);
    pthread_mutex_unlock(&lower_lock);
    if (!k || !s)
        return k;
    const AstSchedule *list[1] = {s};
    PipelineOpts po = {0};
    po.schedules = list;
    po.nschedules = 1;
    po.choices = ch;
    po.nchoices = nch;
    if (!pipeline_run(k, &po, d)) {
        ir_free(k);
        return NULL;
    }
    return k;
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
