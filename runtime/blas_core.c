/* OpenBLAS's kernel for this CPU, when its own detection gets it wrong.
 *
 * A DYNAMIC_ARCH OpenBLAS picks its kernels once, when the library loads, from the
 * CPU model it knows.  Debian's 0.3.21 does not know newer Xeons (family 6 model
 * 207 among them) and falls back to its Prescott kernel, SSE3 only: sgemm 1024^3
 * ran at 31 GFLOP/s there against 143 with its SkylakeX kernel, on a CPU with
 * AVX-512 (docs/benchmarks.md).  A baseline four times slower than the library can
 * be makes every ratio of --compare openblas a flattering lie.
 *
 * So before anything else runs, perfc asks OpenBLAS which core it chose.  When that
 * core predates AVX2 on a CPU that has AVX2 and FMA, perfc starts itself again with
 * OPENBLAS_CORETYPE naming the newest kernel family the CPU supports (Cooperlake
 * with AVX-512 BF16, SkylakeX with AVX-512, Haswell with AVX2), the variable
 * OpenBLAS reads at load time for exactly this.  A choice OpenBLAS made itself among
 * those families is left alone, as is any OPENBLAS_CORETYPE the user set.  The
 * report names both cores (rt_blas_core_note). */
#include "runtime.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#ifdef PERFC_HAVE_OPENBLAS
#include <cblas.h>
#endif

/* Set in the restarted process: the core OpenBLAS detected on its own. */
#define FROM_VAR "PERFC_OPENBLAS_DETECTED"

#if defined(PERFC_HAVE_OPENBLAS) && defined(__x86_64__)
/* The kernel family this CPU can run at its widest, or NULL for none of ours. */
static const char *best_core(void)
{
    if (!rt_cpu_has("avx2") || !rt_cpu_has("fma"))
        return NULL;
    if (rt_cpu_has("avx512f") && rt_cpu_has("avx512bw") && rt_cpu_has("avx512vl") && rt_cpu_has("avx512dq"))
        return rt_cpu_has("avx512_bf16") ? "Cooperlake" : "SkylakeX";
    return "Haswell";
}

/* Cores with AVX2 kernels: OpenBLAS's choice among these is its own to make. */
static bool modern(const char *core)
{
    static const char *const names[] = {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcasecmp(core, names[i]))
            return true;
    return false;
}
#endif

void rt_blas_fit_core(char **argv)
{
#if defined(PERFC_HAVE_OPENBLAS) && defined(__x86_64__)
    if (getenv("OPENBLAS_CORETYPE") || getenv(FROM_VAR))
        return; /* the user's choice, or already restarted once */
    /* every perfc run passes here: /proc/cpuinfo is read only when the core is old */
    const char *core = openblas_get_corename();
    if (!core || modern(core))
        return;
    const char *best = best_core();
    if (!best)
        return;
    /* The names must outlive this call: setenv copies them. */
    if (setenv(FROM_VAR, core, 1) || setenv("OPENBLAS_CORETYPE", best, 1))
        return;
    execv("/proc/self/exe", argv);
    /* exec failed (no /proc): carry on with the library as it loaded */
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv(FROM_VAR);
#else
    (void)argv;
#endif
}

const char *rt_blas_core_note(void)
{
    return getenv(FROM_VAR);
}
