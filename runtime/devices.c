/* Which device runs code for a -target: the host CPU for host and the x86-64 /
 * AArch64 / RISC-V variants this machine can execute, one NVIDIA GPU for sm_*.
 *
 * A cross target (aarch64 code on an x86-64 machine) cannot be run here; saying so
 * is a usage error (status 1), with the way out (-emit asm/obj), rather than a
 * crash on the first illegal instruction. */
#include "runtime.h"

#include <string.h>
#include <sys/utsname.h>

static bool prefix(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

/* The host architecture as the target names spell it. */
static const char *host_arch(void)
{
#if defined(__x86_64__)
    return "x86_64";
#elif defined(__aarch64__)
    return "aarch64";
#elif defined(__riscv) && __riscv_xlen == 64
    return "riscv64";
#else
    static struct utsname u;
    return uname(&u) == 0 ? u.machine : "unknown";
#endif
}

/* The CPU features a target variant needs, as /proc/cpuinfo spells them. */
static const char *needed_feature(const char *target)
{
    if (strcmp(target, "x86_64-avx512") == 0)
        return "avx512f";
    if (strcmp(target, "x86_64-avx2") == 0)
        return "avx2";
    if (strcmp(target, "aarch64-sve") == 0)
        return "sve";
    return NULL;
}

RtDevice *rt_device_open(const char *target, int *rc, Diags *d)
{
    if (!target)
        target = "host";
    if (prefix(target, "sm_")) {
        RtDevice *dev = rt_cuda_open(target, d);
        if (!dev)
            *rc = 3;
        return dev;
    }
    if (strcmp(target, "host") != 0) {
        const char *arch = host_arch();
        bool known = prefix(target, "x86_64") || prefix(target, "aarch64") || prefix(target, "riscv64");
        if (!known) {
            diag_plain(d, DIAG_ERROR, "unknown target '%s'", target);
            *rc = 1;
            return NULL;
        }
        if (!prefix(target, arch)) {
            diag_plain(d, DIAG_ERROR,
                       "-target %s code cannot run on this %s machine: use -emit asm or -emit obj to "
                       "cross-compile, or -target host to run",
                       target, arch);
            *rc = 1;
            return NULL;
        }
        const char *need = needed_feature(target);
        if (need && !rt_cpu_has(need)) {
            diag_plain(d, DIAG_ERROR,
                       "-target %s needs %s, which this CPU lacks: use -emit asm or -emit obj, or -target host",
                       target, need);
            *rc = 1;
            return NULL;
        }
    }
    RtDevice *dev = rt_host_open(d);
    if (!dev)
        *rc = 3;
    return dev;
}
