/* The default schedule of a contraction that has none: the first candidate of the
 * tuner's first contraction template (tune/rules.c), whose parameters start at the
 * machine's blocking (tune/blocking.c).  `perfc --run`, `-emit` and `perfc lib` use
 * it for a CPU target when the file gives the kernel no schedule, so an
 * unscheduled GEMM is a blocked, packed, vectorised micro-kernel instead of three
 * scalar loops.  It is offered only when it applies whole: the rules must see a
 * contraction, the template must keep every statement at its defaults, and the
 * scheduled kernel must pass the target's lowering; otherwise the kernel runs as
 * written. */
#include <string.h>

#include "blocking.h"
#include "tune.h"

char *tune_default_schedule(const TuneInput *in, const Kernel *u, const Target *target, char *origin, size_t cap)
{
    if (origin && cap)
        origin[0] = 0;
    if (!target_is_cpu(target) || in->nscheds)
        return NULL;
    Diags q;
    diag_init(&q);
    Arena *a = arena_new();
    TuneSpace sp;
    char *text = NULL;
    if (tune_space(in, u, target, a, &sp, &q) && sp.n > 0 && sp.kclass && !strcmp(sp.kclass, "contraction") &&
        sp.t[0].rule && strstr(sp.t[0].origin, "micro-kernel") && !strstr(sp.t[0].origin, "dropped")) {
        StrBuf sb = {0};
        Kernel *k = tune_apply(in, &sp.t[0], NULL, 0, &sb, &q);
        Kernel *low = k ? tune_lower(k, target, &q) : NULL;
        if (low && q.nerrors == 0 && sb.len) {
            text = sb.s;
            sb.s = NULL;
            if (origin && cap)
                snprintf(origin, cap, "%s", sp.t[0].origin);
        }
        sb_free(&sb);
        if (low)
            ir_free(low);
        if (k)
            ir_free(k);
    }
    arena_free(a);
    diag_free(&q);
    return text;
}
