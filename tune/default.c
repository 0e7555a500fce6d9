/* The default schedule of a kernel that has none: the first candidate of the
 * tuner's first contraction template (tune/rules.c), whose parameters start at the
 * machine's blocking (tune/blocking.c).  `perfc --run`, `-emit` and `perfc lib` use
 * it when the file gives the kernel no schedule, so an unscheduled GEMM is a
 * blocked, packed, vectorised micro-kernel on a CPU instead of three scalar loops,
 * and on a GPU the tuner's first tensor-core template (wgmma on sm_90a, mma.sync
 * from sm_80) for a 16-bit product, its pipelined shared-memory tiles for f32,
 * instead of one thread per element.  On a CPU, a direct NCHW convolution gets
 * its own micro-kernel, and column reductions (column sums, Aᵀ·x), reductions into
 * one element, row-wise kernels and elementwise transposes get their templates
 * likewise (fits).  It is offered only when it applies whole: the rules must see such a kernel, the
 * template must keep every statement at its defaults, and the
 * scheduled kernel must pass the target's lowering; otherwise the kernel runs as
 * written. */
#include <string.h>

#include "blocking.h"
#include "tune.h"

/* The first template is one the default may take: on a CPU the register-blocked
 * micro-kernel (GEMM-like or direct convolution) or one of the templates below; on a GPU a tensor-core template (wgmma, mma.sync) for a 16-bit
 * product, for f32 the pipelined shared-memory tiles, attention's templates
 * (flash attention, decoding: tune/rules_attn.c) or row-wise chains' (a row a block:
 * tune/rules_rows.c), each kept whole. */
static bool fits(const Target *target, const TuneSpace *sp)
{
    const char *o = sp->t[0].origin;
    if (!sp->t[0].rule || strstr(o, "dropped"))
        return false;
    /* on a CPU also the reductions whose unscheduled loop is many times slower than
     * their template: column reductions (walking the input down its columns one
     * element at a time: 20 ms for a 4097 x 1000 f32 column sum, 0.5 ms scheduled)
     * and reductions into one element (a serial add chain: 6.6 ms for 8M f32 sums,
     * 1.0 ms with vector partial sums); and row-wise kernels (row sums, softmax,
     * layernorm, a matrix-vector product: each row's loops fused and vectorized,
     * the reductions through rfactor) unless a mask is left in them, which pass
     * mask-bounds narrows instead; and elementwise transposes, tiled (a 2000 x 3001
     * f32 transpose 14.8 ms as written, 6.0 ms in 8 x 64 tiles) */
    if (target_is_cpu(target))
        return (!strcmp(sp->kclass, "contraction") && strstr(o, "micro-kernel")) || !strcmp(sp->kclass, "attention") ||
               (!strcmp(sp->kclass, "reduction") && (strstr(o, "column reduction") || strstr(o, "one element"))) ||
               (!strcmp(sp->kclass, "row-wise") && !strstr(o, "dropped") && !strstr(o, "masked")) ||
               (!strcmp(sp->kclass, "elementwise") && strstr(o, "transposed in tiles"));
    return (!strncmp(sp->kclass, "contraction (GPU", 16) &&
            (strstr(o, "GPU wgmma") || strstr(o, "GPU tensor cores") || strstr(o, "cp.async pipeline"))) ||
           !strcmp(sp->kclass, "attention (GPU)") || !strcmp(sp->kclass, "rows (GPU)");
}

char *tune_default_schedule(const TuneInput *in, const Kernel *u, const Target *target, char *origin, size_t cap)
{
    if (origin && cap)
        origin[0] = 0;
    if (in->nscheds || (!target_is_cpu(target) && !target_is_gpu(target)))
        return NULL;
    Diags q;
    diag_init(&q);
    Arena *a = arena_new();
    TuneSpace sp;
    char *text = NULL;
    if (tune_space(in, u, target, a, &sp, &q) && sp.n > 0 && sp.kclass && fits(target, &sp)) {
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
