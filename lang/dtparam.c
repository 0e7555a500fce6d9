/* Dtype parameters of kernels (`kernel gemm(M, N, K, T = f32)`, docs/language.md
 * "Dtype parameters"): one kernel text for every element type of an operation.
 * The parser resolves `in A: T[M, K]` to the parameter; binding a value (the
 * default, or -D T=bf16) rewrites the dtype of every tensor declared with it
 * before sema types the kernel, so everything after the front end sees plain
 * dtypes.  Schedule blocks may be guarded by a parameter's value
 * (`when T in [f16, bf16]`). */
#include <string.h>

#include "ast.h"

int kernel_find_dtparam(const AstKernel *k, const char *name)
{
    for (int i = 0; i < k->ndtparams; i++)
        if (!strcmp(k->dtparams[i].name, name))
            return i;
    return -1;
}

void kernel_bind_dtparam(AstKernel *k, int i, DType dt)
{
    k->dtparams[i].dtype = dt;
    for (int t = 0; t < k->ntensors; t++)
        if (k->tensors[t]->kind != TENSOR_TEMP && k->tensors[t]->dtype_param == i)
            k->tensors[t]->dtype = dt;
}

bool schedule_guard_holds(const AstSchedule *s, const AstKernel *k)
{
    if (!s->when_param)
        return true;
    int i = kernel_find_dtparam(k, s->when_param);
    if (i < 0)
        return true;
    for (int j = 0; j < s->nwhen; j++)
        if (s->when_dtypes[j] == k->dtparams[i].dtype)
            return true;
    return false;
}

static bool same_target(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

void schedule_check_head(const Program *p, int i, const AstKernel *k, Diags *d)
{
    const AstSchedule *s = p->schedules[i];
    if (s->when_param && kernel_find_dtparam(k, s->when_param) < 0)
        diag_error(d, s->when_span, "this schedule's guard tests %s, but kernel %s has no dtype parameter %s",
                   s->when_param, k->name, s->when_param);
    if (!s->variant)
        return;
    for (int j = 0; j < i; j++) {
        const AstSchedule *o = p->schedules[j];
        if (o->variant && !strcmp(o->variant, s->variant) && !strcmp(o->kernel, s->kernel) &&
            same_target(o->target, s->target)) {
            diag_error(d, s->variant_span, "schedule variant %s of kernel %s%s%s is defined twice", s->variant,
                       s->kernel, s->target ? " for " : "", s->target ? s->target : "");
            diag_note(d, o->variant_span, "first defined here");
            return;
        }
    }
}
