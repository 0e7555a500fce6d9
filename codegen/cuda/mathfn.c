/* The CUDA names of the math functions PDL added after the first back end was
 * written, kept apart from emit.c so that it only dispatches here.  round is rint:
 * ties to even, as NumPy's round and the reference interpreter do (CUDA's round
 * sends ties away from zero). */
#include "cg_cuda.h"

const char *cuda_mathfn_name(ExprKind k, bool dbl)
{
    switch (k) {
    case IE_LOG1P: return dbl ? "log1p" : "log1pf";
    case IE_EXPM1: return dbl ? "expm1" : "expm1f";
    case IE_FLOOR: return dbl ? "floor" : "floorf";
    case IE_CEIL: return dbl ? "ceil" : "ceilf";
    case IE_ROUND: return dbl ? "rint" : "rintf";
    case IE_POW: return dbl ? "pow" : "powf";
    default: return NULL;
    }
}
